"""Model file formats: reading a model file into a :class:`~linkdyn.Model`.

* :mod:`linkdyn.model.io.urdf`: URDF (``load_urdf`` / ``parse_urdf``), and ``Visual``, the
  drawing geometry every format attaches to ``model.visuals``;
* :mod:`linkdyn.model.io.mjcf`: MJCF, MuJoCo's XML (``load_mjcf`` / ``parse_mjcf``, the
  qpos / qvel conversions), a package with one module per concern;
* BVH (motion capture skeletons) will come here too;
* shared by the formats: ``safexml`` (untrusted XML parsed with defusedxml), ``_files``
  (bounded reads of regular files only) and ``_mesh_inertia`` (the STL, OBJ and MSH readers and
  mesh mass properties as MuJoCo's compiler computes them).

Layering: this package builds models, so it may import :mod:`linkdyn.spatial`,
``linkdyn._kernels`` and the rest of :mod:`linkdyn.model` (``builder``, ``joints``, ``model``),
nothing above the model layer (dynamics, kinematics, loops, contact, sim, viz, models).  It is
imported by the loaders that ``linkdyn`` exports (``linkdyn.load_urdf``, ``linkdyn.load_mjcf``),
by :mod:`linkdyn.interop` (MuJoCo's qpos / qvel layout), by :mod:`linkdyn.viz` (``Visual`` and
its mesh geometry) and by :mod:`linkdyn.models` (the example robots' URDF files).

The old paths ``linkdyn.model.urdf`` and ``linkdyn.model.mjcf`` still import (they re-export
these modules' names) for code outside linkdyn.
"""
