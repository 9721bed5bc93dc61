"""Human figures in structure-varying scenes (seed 004 sec. 5): a figure hanging from a high
bar by both hands, the configuration the high-bar and benchmark scenes start from.
"""
from __future__ import annotations

import numpy as np

from .. import structure
from ..model import joints as J
from .human import human_figure, human_figure_16, standing_configuration

_GRIPS = {"revolute": lambda: J.Revolute("y"), "spherical": J.Spherical, "weld": J.Fixed}


def hanging_configuration(model, arms_forward: float = 0.0, elbows: float = 0.15) -> np.ndarray:
    """The figure standing with both arms raised overhead (each shoulder turned half a turn about
    the body's y axis, less ``arms_forward`` rad), the elbows bent by ``elbows`` rad: straight
    arms are a singular configuration of a hanging figure (the hands cannot move along them)."""
    q = standing_configuration(model)
    a = 0.5 * (np.pi - arms_forward)
    for side in ("l", "r"):
        q[model.q_slice(f"{side}_shoulder")] = [0.0, np.sin(a), 0.0, np.cos(a)]
        q[model.q_slice(f"{side}_elbow")] = elbows
    return q


def on_bar(figure=None, grip: str = "revolute", bar_height: float | None = None):
    """(model, q): ``figure`` (default the 16-DoF figure of seed 004 sec. 5.1) hanging from a
    bar along the world y axis by both hands, each on a cut joint of kind ``grip``:
    "revolute" (about the bar, the seed's high bar), "spherical" or "weld".  The bar is part of
    the world; the two loops are named "l_grip__world" and "r_grip__world" and are closed in
    the returned configuration, the arms raised overhead, the feet ``bar_height`` below the bar
    (default: where the standing figure's raised hands are)."""
    if grip not in _GRIPS:
        raise ValueError(f"grip: expected one of {sorted(_GRIPS)}, got {grip!r}")
    model = human_figure_16() if figure is None else figure
    q = hanging_configuration(model)
    if bar_height is not None:
        from ..kinematics import frame_pose
        q[2] += bar_height - frame_pose(model, q, "l_grip")[2, 3]
    for side in ("l", "r"):
        model, q = structure.connect(model, q, f"{side}_grip", "world", _GRIPS[grip]())
    return model, q


def high_bar(mass: float = 70.0, height: float = 1.75):
    """The high bar of seed 004 sec. 5.1: the 16-DoF figure (4 DoF per limb) hanging by both
    hands on 1-DoF revolute joints about the bar.  Returns (model, q)."""
    return on_bar(human_figure_16(mass=mass, height=height), "revolute")


def figure_on_bar_40(grip: str = "revolute"):
    """The 40-DoF figure of seed 004 Fig. 13 (46 velocities with its floating base) hanging from
    a bar by both hands (two loops).  Returns (model, q)."""
    return on_bar(human_figure(), grip)
