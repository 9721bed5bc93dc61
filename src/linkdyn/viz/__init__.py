"""Pictures and animations of recorded runs (matplotlib, an optional dependency:
``pip install 'linkdyn[plot]'``).

* :func:`skeleton` / :class:`Skeleton`: the stick figure of a model as 3D line segments;
  :func:`closure_points`: where its loops close;
* :func:`static_geometry`, :func:`bar`, :func:`ropes`, :func:`ground`, :func:`tether`: scene props;
* :func:`animate`: a run (Recording, or Trajectory with its model) as .html / .gif / .mp4;
* :func:`plot_run`: joint angles, energies, loop errors, loop forces and event impulses in one PNG;
* :func:`as_recording`: a Trajectory from :func:`linkdyn.sim.simulate` as a one-segment Recording.
"""
from .animate import VIEWS, AnimationInfo, animate, frame_times, pick_samples
from .plots import plot_run
from .props import Prop, Tether, bar, ground, ropes, static_geometry, tether
from .runs import as_recording
from .skeleton import Skeleton, closure_points, skeleton

__all__ = ["VIEWS", "AnimationInfo", "Prop", "Skeleton", "Tether", "animate", "as_recording", "bar",
           "closure_points", "frame_times", "ground", "pick_samples", "plot_run", "ropes", "skeleton",
           "static_geometry", "tether"]
