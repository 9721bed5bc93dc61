"""MJCF (MuJoCo XML) import: ``load_mjcf(path)`` / ``parse_mjcf(text)`` -> :class:`linkdyn.Model`.

    model = linkdyn.load_mjcf("four_bar.xml")                         # loop closures included
    model, info = linkdyn.load_mjcf("robot.xml", return_info=True)   # + MuJoCo's qpos0 and keyframes

The XML is read with :mod:`defusedxml` (DTDs, entity declarations and external references are
refused), so untrusted files are safe to open.  ``<include file>`` is resolved relative to the
folder of the main file, mesh files under ``<compiler meshdir>`` there; every file named must
lie, symbolic links resolved, inside that folder or a folder given as ``asset_dirs=``
(``linkdyn.model.io._files.confine``): an include or a mesh the inertia needs outside them
raises :class:`MJCFError`, a mesh only drawn is refused with an :class:`MJCFWarning`.
Absolute include paths, paths that leave the folders (``..``, symbolic links), include loops, more than ``MAX_INCLUDE_DEPTH`` nested or ``MAX_INCLUDES`` included
files are refused.  Malformed input raises :class:`MJCFError` (a ``ValueError``) whose message
names the file, the element and what is wrong; MJCF features outside the supported subset
raise ``NotImplementedError``; things that are read but cannot be represented are reported by
an :class:`MJCFWarning`.

Coordinates
-----------
linkdyn's q is MuJoCo's ``qpos`` joint by joint, in the same order, except that quaternions are
stored [x, y, z, w] (MuJoCo: [w, x, y, z]) and that the cut joints of ``<connect>`` loop
closures add coordinates (see below).  :func:`qpos_to_q` / :func:`q_to_qpos` convert.  A hinge
or slide joint with ``ref`` is built so that q = qpos (the joint frame is turned or shifted by
``-ref``): the pose written in the file is at q = ref, ranges and keyframes carry over unchanged,
and ``linkdyn.neutral`` (q = 0) is *not* MuJoCo's ``qpos0``; ``return_info=True`` gives it
(``info.q0``).  A free joint's q is the body's world pose, as MuJoCo's qpos.  Velocities are MuJoCo's ``qvel``
except for a free joint's linear part: linkdyn (and Pinocchio) use the body-frame velocity, MuJoCo
the world-frame velocity of the body origin (:func:`qvel_to_v` / :func:`v_to_qvel`).  MuJoCo's
world body is linkdyn's ``"world"``.

Mapping (the supported subset)
------------------------------
* ``<compiler angle eulerseq autolimits inertiafromgeom inertiagrouprange boundmass
  boundinertia balanceinertia settotalmass>``; ``angle`` defaults to ``"degree"`` as in MuJoCo
  (it applies to ``euler``, the angle of ``axisangle``, hinge ``range``/``ref``, ball ``range``).  Asset and
  rendering options are ignored; ``coordinate="global"`` (removed from MuJoCo) is refused.
* ``<option gravity>`` and ``<flag gravity="disable">`` give the gravity unless ``gravity=`` is
  passed.
* ``<default>`` classes, nested, used by ``class`` and ``childclass`` (of bodies and
  ``<frame>``), for ``<joint>``, ``<geom>``, ``<site>`` and ``<equality>`` attributes.
* ``<worldbody>``, nested ``<body name pos quat|axisangle|euler|xyaxes|zaxis childclass>``,
  ``<frame>`` (a pose and childclass applied to its children).  Unnamed bodies are called
  ``"body<k>"`` (k: MuJoCo's body id).  ``mocap`` bodies are welded where they are.
* Joints (``<joint>``, ``<freejoint>``), in the order they appear in the body:

  - ``hinge`` -> ``Revolute(axis)`` about the axis through the joint's ``pos``;
  - ``slide`` -> ``Prismatic(axis)``; ``ball`` -> ``Spherical`` about ``pos``;
  - ``free`` -> ``FreeFlyer`` from the world (only alone in a top-level body, as in MuJoCo).

  A body whose only (or last) joint is at its origin carries that joint itself.  Every other
  joint gets a massless carrier body ``"<body>::<joint>"`` whose frame is at the joint's anchor,
  each carrier hanging from the previous one, and the MJCF body hangs from the last carrier by a
  fixed joint at ``-pos`` (it is merged into the carrier: its name becomes a frame where MuJoCo
  has the body frame).  The joints compose as in MuJoCo's ``mj_kinematics``.  Joints, sites and
  ``<inertial>`` inside ``<frame>`` elements are moved by the frame.
  Unnamed joints are called ``"<body>_joint"``, ``"<body>_joint_1"``, ...
* Joint attributes: ``range`` with ``limited`` / ``autolimits`` -> ``lower``/``upper`` (hinge,
  slide); a ball joint's ``range="0 X"`` (X in the compiler's angle unit) -> ``Spherical(swing=X,
  twist=(-X, X))``: MuJoCo bounds the total rotation angle, ``cos(swing/2) cos(twist/2) >=
  cos(X/2)``, linkdyn the swing and the twist separately, which agrees for a pure swing and a
  pure twist and is looser for a combination of both (X = 60 deg admits 60 deg of swing with
  60 deg of twist, a rotation of 82.8 deg); X >= 180 deg limits nothing (in MuJoCo either);
  ``armature`` -> ``armature``; ``damping`` -> ``damping`` (viscous, as MuJoCo's passive
  force); ``frictionloss`` -> linkdyn's Coulomb ``friction`` (``tau += friction * sign(v)``; MuJoCo
  treats it as a soft constraint that can also hold the joint at rest: the two agree while the
  joint slides, and linkdyn's time stepping takes it implicitly, so that it holds a tree's joint at rest
  too: ``linkdyn.dynamics._friction``); ``joint_friction=False`` leaves damping and friction out; ``ref`` (see above);
  ``actuatorfrcrange`` -> ``effort_limit`` (the larger magnitude).  ``stiffness`` -> ``stiffness``
  and ``springref`` -> ``spring_ref`` (joint springs, as MuJoCo's passive force: the reference is
  ``springref`` for a hinge or slide, in the compiler's angle unit for a hinge, and the joint's
  ``qpos0`` for a ball or free joint; read whatever ``joint_friction`` says).  ``springdamper``
  (a spring from a time constant) is not modelled (warning).
* ``<inertial pos quat.. mass diaginertia|fullinertia>``; without it (``inertiafromgeom="auto"``)
  or always (``"true"``) the body's mass properties are computed from its geoms as MuJoCo does:
  ``sphere``, ``capsule``, ``cylinder``, ``box``, ``ellipsoid`` (``size`` or ``fromto``), solid,
  ``density`` (default 1000) or ``mass``, geoms whose ``group`` is inside ``inertiagrouprange``.
  ``mesh`` geoms as MuJoCo's compiler does (the mesh's ``inertia="legacy|convex|exact|shell"``,
  ``scale``, ``refpos``, ``refquat``; STL, OBJ and MuJoCo's binary ``.msh`` files read by
  linkdyn itself, other formats through trimesh, ``pip install 'linkdyn[meshes]'`` (without it
  such a geom is left out with a warning naming the missing package), or ``vertex``/``face``
  given inline; a corrupt mesh file is an error naming the file); ``plane``, ``hfield`` and ``sdf`` geoms carry no mass;
  ``shellinertia`` on a primitive geom is refused.
* ``<site>`` -> a frame named after the site on its body (unnamed sites are skipped; a site
  whose name is taken by a body gets ``"<name>_site"``, with a warning).
* ``<equality>``:

  - ``<connect body1 body2 anchor>`` -> ``add_loop`` with a ``Spherical`` cut joint: a virtual
    link named after the constraint hangs from body1 at ``anchor`` and must coincide with the
    point of body2 that is there in the reference pose (``qpos0``); its joint frame is oriented
    so that the cut joint's quaternion is the identity in that pose.  ``site1``/``site2``: the
    two sites' origins coincide.  ``body2`` defaults to the world;
  - ``<weld body1 body2 anchor relpose>`` -> a weld loop: the frame ``relpose`` on body1 (or the
    relative pose in ``qpos0`` when ``relpose`` has a zero quaternion, MuJoCo's default) and
    the frame at ``anchor`` on body2 coincide; ``site1``/``site2``: the site frames coincide;
  - ``<joint joint1 joint2 polycoef>`` with a linear polynomial -> a gear (``add_gear``:
    q1 = c1 q2 + offset, the model in reduced coordinates, see :mod:`linkdyn.model.gears`; MuJoCo
    holds it with a soft constraint, linkdyn exactly), also listed in ``model.mimic``; a nonlinear
    polynomial or a joint locked alone is refused;
  - ``<tendon tendon1 tendon2 polycoef>`` on fixed tendons (``<tendon><fixed>``, lengths
    L = sum coef_i q_i) -> a gear when the equality, L1 - L1_0 = c0 + c1 (L2 - L2_0) with
    L_0 the lengths at ``qpos0``, involves exactly two hinge or slide joints (a two-joint tendon
    alone, or two one-joint tendons): the first joint follows the other; with more joints
    (dm_control's quadruped: pitch, knee and ankle at 0.333 each) -> a linear coupling
    (``add_coupling``: sum_i k_i (q_i - ref_i) = c0, the last joint of the tendons dependent on
    the others, its limits kept as limit rows); a spatial tendon, a joint locked alone or a
    nonlinear polynomial is refused, with the reason;
  - ``flex``, ``distance`` equalities are refused; ``active="false"`` constraints are
    skipped with a warning.  ``solref``, ``solimp``, ``torquescale`` are solver parameters and
    ignored.
* Collision geometry (always; :meth:`ModelBuilder.add_geom`, :mod:`linkdyn.model.geometry`):
  every geom MuJoCo would collide (``contype`` or ``conaffinity`` non-zero, or named in a
  ``<pair>``) of type ``plane``, ``sphere``, ``capsule``, ``ellipsoid``, ``cylinder`` or ``box``,
  sizes as MuJoCo's (``fromto`` for capsules, cylinders, boxes and ellipsoids), its frame as for
  the inertia, ``friction`` (the first value: MuJoCo's torsional and rolling coefficients are
  dropped), ``contype``, ``conaffinity``, ``condim`` (a pair of condim 1, the higher priority's or
  else the larger of the two geoms' as in MuJoCo, is frictionless), ``group``, ``priority``, default
  classes included; restitution 0.  ``<contact><exclude>`` -> ``ModelBuilder.exclude``, ``<contact><pair>``
  -> ``ModelBuilder.add_pair`` (the pair's friction, 0 when its condim is 1); the model's
  candidate pairs are MuJoCo's (linkdyn filters the merged bodies, MuJoCo the file's: a body
  hanging from carrier bodies, an exclude naming a welded body and ``filterparent="disable"`` are
  mended with excludes and explicit pairs).  ``mesh``, ``hfield`` and ``sdf`` geoms are not
  collision geometry yet: skipped, one warning per file.  ``solref``, ``solimp``, ``margin``,
  ``gap`` other than MuJoCo's defaults: one warning (linkdyn's contact is hard).  Geoms MuJoCo
  would refuse are skipped with a warning.  ``<flag contact="disable">`` (or ``constraint``): none.
* Point contacts (``contacts=True``, the default; spheres and points against planes,
  ``linkdyn.contact``), besides the collision geometry below; the time step takes each
  sphere-plane pair once, by its point contact, and every other candidate geom pair as
  collision geometry (``linkdyn.contact.geom_rows.point_pairs``):

  - ``<geom type="plane">`` -> ``add_plane`` on its body (the world, or a static body: MuJoCo
    allows planes nowhere else): the plane is the xy-plane of the geom frame, its z axis the
    outward normal, unbounded (MuJoCo's planes are infinite for collision; ``size`` only draws
    them); ``friction`` -> the plane's ``friction`` (the first of the geom's ``friction``
    values, default 1 as in MuJoCo; 0 when ``condim="1"``);
  - ``<geom type="sphere">`` on a moving body -> ``add_contact(body, pos, radius=size[0],
    friction=...)`` (friction as for planes; restitution 0: MuJoCo's soft contacts have no
    coefficient of restitution);
  - a geom is used only if MuJoCo would let it collide with a geom of the other kind: its
    ``contype``/``conaffinity`` bit masks (``contype="0" conaffinity="0"`` means no collision),
    ``<contact><exclude body1 body2>`` and ``<contact><pair geom1 geom2>`` are applied as MuJoCo
    does, default classes included; ``<option><flag contact="disable">`` (or
    ``constraint="disable"``) imports no contact geometry.  Spheres on static bodies (welded to
    the world, mocap bodies included) are skipped: they never meet a plane, which is static too;
  - linkdyn makes every contact touch every plane, with the friction sqrt(mu_sphere mu_plane);
    MuJoCo takes the larger of the two (the higher ``priority``'s, or the ``<pair>``'s own),
    so an :class:`MJCFWarning` names the pairs whose friction differs (equal frictions, the
    common case, agree exactly) and the pairs that MuJoCo's filters keep apart but linkdyn
    does not; torsional and rolling friction (``condim`` 4, 6) are not modelled (warning);
  - every other geom (``capsule``, ``box``, ``cylinder``, ``ellipsoid``, ``mesh``) is collision
    geometry only (below), which the time-stepping scheme detects; ``contacts=False`` makes the
    spheres and planes collision geometry only too;
  - ``margin``, ``gap``, ``solref``, ``solimp``, ``solmix`` (MuJoCo's soft-contact parameters)
    have no counterpart: linkdyn's contacts are hard.
* ``<keyframe><key qpos>`` -> ``info.keyframes`` (q in linkdyn's layout; cut joints at the
  identity, close them with ``linkdyn.loops.close_loops``).
* Drawing only (the dynamics never read it): every geom's shape, pose and ``rgba`` and the
  ``<asset><mesh file scale>`` files under ``<compiler meshdir>`` are kept in ``model.visuals``
  (:class:`linkdyn.model.io.urdf.Visual` on the geom's body frame; ``group`` 3 and above as
  collision geometry), which :func:`linkdyn.viz.view` draws.
* Ignored: ``<asset>`` (but for meshes, above), ``<visual>``, ``<statistic>``, ``<size>``, ``<tendon>``,
  ``<actuator>``, ``<sensor>``, ``<custom>``, ``<extension>``, ``<deformable>``, cameras,
  lights, and ``<contact>`` apart from the pairs and exclusions above.  Refused (``NotImplementedError``): ``<composite>``, ``<flexcomp>``, ``<replicate>``,
  ``<attach>``, body plugins.
"""
from __future__ import annotations

from .build import load_mjcf, parse_mjcf
from .common import MAX_FILE_BYTES, MAX_INCLUDE_DEPTH, MAX_INCLUDES, MJCFError, MJCFInfo, MJCFWarning
from .convert import q_to_qpos, qpos_to_q, qvel_to_v, v_to_qvel

__all__ = ["MJCFError", "MJCFWarning", "MJCFInfo", "load_mjcf", "parse_mjcf", "qpos_to_q", "q_to_qpos",
           "qvel_to_v", "v_to_qvel"]
