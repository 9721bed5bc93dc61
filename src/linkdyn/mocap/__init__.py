"""Motion capture: BVH captures onto a figure, their contact phases, and inverse dynamics with
unknown ground reactions (issue 26; docs/mocap.md).

``load_bvh(path, mass=, height=) -> Capture`` (``.model .t .q .v .a``),
``inverse_dynamics(capture) -> InverseDynamics`` (``.tau .grf .cop .residual``),
``dynamics_filter(capture) -> Capture`` (Yamane and Nakamura 2003; ``.filter`` its report),
``contact_phases(capture)`` (its default heights adapted to the capture: ``contact_heights(capture)``),
``write_bvh(path, capture, q)`` and :class:`MocapError`;
``retarget(capture_or_path) -> Retargeted`` (the capture on ``models.human_figure()``, its
limits' clipping per joint) and ``write_figure_bvh``; ``plot_capture`` (ground reactions, centres
of pressure, torques, powers, residuals: the ``plot`` extra) and ``view_capture`` (the 3-D page,
the capture as a ghost); ``walking_capture()`` (a real public clip, downloaded into the cache); ``read_c3d`` (C3D
marker files, the ``c3d`` extra: ezc3d).

Layer: beside ``linkdyn.distributed`` (it may import ``models`` and everything below; nothing in
linkdyn but the CLI imports it).  Reading BVH needs the ``mocap`` extra (``pybvh``); the QP needs
``proxsuite`` (or ``clarabel``/``osqp``), in the same extra.
"""
from .bvh import MocapError, Skeleton, read_skeleton
from .capture import (DEFAULT_CUTOFF, Capture, InverseDynamics, contact_heights, contact_phases,
                      inverse_dynamics, kinematics, load_bvh, write_bvh)
from .filter import FILTER_SOLES, FilterReport, dynamics_filter
from .figure import Y_UP_TO_Z_UP, Feet, build_figure, classify, side_of
from . import limits  # noqa: F401  (ld.mocap.limits.anatomical_limits)

__all__ = ["MocapError", "Skeleton", "read_skeleton", "DEFAULT_CUTOFF", "Capture", "InverseDynamics",
           "contact_heights", "contact_phases", "inverse_dynamics", "kinematics", "load_bvh", "write_bvh",
           "Y_UP_TO_Z_UP", "Feet", "build_figure", "classify", "side_of", "FILTER_SOLES", "FilterReport", "dynamics_filter"]

from .c3d import Markers, read_c3d  # noqa: E402
from .plots import plot_capture  # noqa: E402
from .page import view_capture  # noqa: E402
from .retargeting import Retargeted, figure_skeleton, match_joints, retarget, write_figure_bvh  # noqa: E402
from .samples import walking_capture  # noqa: E402

__all__ += ["plot_capture", "view_capture", "Retargeted", "figure_skeleton", "match_joints", "retarget",
            "write_figure_bvh", "walking_capture", "Markers", "read_c3d"]
