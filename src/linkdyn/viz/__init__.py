"""Pictures and animations of recorded runs: an interactive 3D viewer (a self-contained page)
and matplotlib plots and animations (an optional dependency: ``pip install 'linkdyn[plot]'``).

* :func:`skeleton` / :class:`Skeleton`: the stick figure of a model as 3D line segments;
  :func:`closure_points`: where its loops close;
* :func:`static_geometry`, :func:`bar`, :func:`ropes`, :func:`ground`, :func:`tether`: scene props;
* :func:`view`: a run as an interactive 3D page (three.js; orbit, zoom, time slider, events,
  meshes, contact forces), self-contained, shown inline in Jupyter (:class:`Viewer`);
* :func:`animate`: a run (Recording, or Trajectory with its model) as .gif / .mp4 / .html
  (matplotlib frames);
* :func:`plot_run`: joint angles, energies, loop errors, loop forces and event impulses in one PNG;
* :func:`as_recording`: a Trajectory from :func:`linkdyn.sim.simulate` as a one-segment Recording.

Layer (docs/architecture.md): beside ``structure``, ``control`` and ``analysis``, above the constraint
layer and below ``sim`` (whose ``Simulation.view`` / ``animate`` / ``plot`` call it).  It draws
models and the runs of :mod:`linkdyn.recording`, so it needs nothing of ``sim``.  May import: the
layers below.  Imported by: sim, cli.
"""
from .animate import VIEWS, AnimationInfo, animate, frame_times, pick_samples
from .plots import plot_run
from .props import Prop, Tether, bar, ground, ropes, static_geometry, tether
from .runs import as_recording
from .skeleton import Skeleton, closure_points, skeleton
from .viewer import Viewer, view

__all__ = ["VIEWS", "AnimationInfo", "Prop", "Skeleton", "Tether", "animate", "as_recording", "bar",
           "closure_points", "frame_times", "ground", "pick_samples", "plot_run", "ropes", "skeleton",
           "static_geometry", "tether", "Viewer", "view"]
