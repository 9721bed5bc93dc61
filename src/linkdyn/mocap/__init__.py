"""Motion capture: BVH captures onto a figure, their contact phases, and inverse dynamics with
unknown ground reactions (issue 26; docs/mocap.md).

``load_bvh(path, mass=, height=) -> Capture`` (``.model .t .q .v .a``),
``inverse_dynamics(capture) -> InverseDynamics`` (``.tau .grf .cop .residual``),
``dynamics_filter(capture) -> Capture`` (Yamane and Nakamura 2003; ``.filter`` its report),
``contact_phases(capture)``, ``write_bvh(path, capture, q)`` and :class:`MocapError`.

Layer: beside ``linkdyn.distributed`` (it may import ``models`` and everything below; nothing in
linkdyn but the CLI imports it).  Reading BVH needs the ``mocap`` extra (``pybvh``); the QP needs
``proxsuite`` (or ``clarabel``/``osqp``), in the same extra.
"""
from .bvh import MocapError, Skeleton, read_skeleton
from .capture import (DEFAULT_CUTOFF, Capture, InverseDynamics, contact_phases, inverse_dynamics, kinematics,
                      load_bvh, write_bvh)
from .filter import FilterReport, dynamics_filter
from .figure import Y_UP_TO_Z_UP, Feet, build_figure, classify, side_of

__all__ = ["MocapError", "Skeleton", "read_skeleton", "DEFAULT_CUTOFF", "Capture", "InverseDynamics",
           "contact_phases", "inverse_dynamics", "kinematics", "load_bvh", "write_bvh", "Y_UP_TO_Z_UP", "Feet",
           "build_figure", "classify", "side_of", "FilterReport", "dynamics_filter"]
