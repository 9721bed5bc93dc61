"""Closed-chain mechanisms: the four-bar linkage, the slider-crank, the five-bar parallel arm
and spatial one-loop linkages with spherical and universal cut joints (Nakamura and Yamane 2000 sec. 2).

Each is a tree plus one loop closure (``ModelBuilder.add_loop``).  Links are slender rods
(uniform, of the given mass per metre) along their local x axis; planar mechanisms move in
the vertical xz-plane (joint axes y, gravity -z), so that gravity does work.  The
configuration at q = 0 is generally not closed: ``linkdyn.loops.close_loops`` assembles it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..loops.kinematics import close_loops
from ..model import builder as _b
from ..model.configuration import neutral
from ..model import joints as J

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model


def rod(mass: float, length: float, radius: float = 0.01) -> _b.Inertia:
    """A uniform solid rod of ``mass`` from the origin along +x to ``length``."""
    ix = 0.5 * mass * radius * radius
    it = mass * (3 * radius * radius + length * length) / 12.0
    return _b.Inertia(mass, (0.5 * length, 0.0, 0.0), np.diag([ix, it, it]))


def _lengths(lengths, n, what):
    x = np.asarray(lengths, dtype=float)
    if x.shape != (n,) or not np.all(x > 0) or not np.isfinite(x).all():
        raise ValueError(f"{what}: expected {n} positive lengths, got {lengths!r}")
    return x


def four_bar(lengths: Sequence[float] = (0.3, 1.0, 0.8, 1.0), density: float = 2.0, cut: str = "coupler-rocker",
             gravity: ArrayLike = (0.0, 0.0, -9.81)) -> Model:
    """A planar four-bar linkage in the xz-plane: ``lengths`` = (crank, coupler, rocker,
    ground).  The crank turns about the world origin, the rocker about (ground, 0, 0); the
    loop is cut at the coupler-rocker joint (a revolute cut joint; ``cut="crank-coupler"``
    cuts the crank-coupler joint instead).  Joints "crank", "coupler", "rocker" and the cut
    joint "<loop>_joint"; frames "coupler_end" and "rocker_tip".  With the default lengths (Grashof: 0.3 + 1.0
    < 1.0 + 0.8) the crank turns fully.  Mass ``density`` kg per metre."""
    l1, l2, l3, l0 = _lengths(lengths, 4, "lengths")
    b = _b.ModelBuilder("four_bar", gravity=gravity)
    b.add_body("crank", "world", J.Revolute("y"), inertia=rod(density * l1, l1), joint_name="crank")
    b.add_body("rocker", "world", J.Revolute("y"), placement=[l0, 0, 0], inertia=rod(density * l3, l3),
               joint_name="rocker")
    b.add_frame("rocker_tip", "rocker", placement=[l3, 0, 0])
    if cut == "coupler-rocker":
        b.add_body("coupler", "crank", J.Revolute("y"), placement=[l1, 0, 0], inertia=rod(density * l2, l2),
                   joint_name="coupler")
        b.add_loop("loop", "coupler", "rocker", J.Revolute("y"), placement=[l2, 0, 0], real_placement=[l3, 0, 0])
        b.add_frame("coupler_end", "coupler", placement=[l2, 0, 0])
    elif cut == "crank-coupler":
        # the coupler hangs from the rocker's tip and reaches back to the crank
        b.add_body("coupler", "rocker", J.Revolute("y"), placement=[l3, 0, 0], inertia=rod(density * l2, l2),
                   joint_name="coupler")
        b.add_loop("loop", "coupler", "crank", J.Revolute("y"), placement=[l2, 0, 0], real_placement=[l1, 0, 0])
        b.add_frame("coupler_end", "coupler", placement=[0, 0, 0])
    else:
        raise ValueError(f"cut: expected 'coupler-rocker' or 'crank-coupler', got {cut!r}")
    return b.build()


def four_bar_with_stop(margin: float = 0.3) -> tuple[Model, NDArray[np.float64]]:
    """(model, q0): the :func:`four_bar` closed at its neutral pose + 0.3 rad with the crank held, and
    an upper stop on the crank ``margin`` rad ahead of it: the smallest closed chain with a joint
    limit (a unilateral row together with a loop), which falls onto its stop under gravity."""
    fb = four_bar()
    q0 = close_loops(fb, neutral(fb) + 0.3, hold=["crank"])
    b = _b.ModelBuilder.from_model(fb)
    b.set_limits("crank", upper=float(q0[fb.q_index("crank")]) + margin)
    return b.build(), q0


def slider_crank(crank: float = 0.2, rod_length: float = 0.6, density: float = 2.0, slider_mass: float = 1.0,
                 gravity: ArrayLike = (0.0, 0.0, -9.81)) -> Model:
    """A slider-crank in the xz-plane: the crank turns about the origin (joint "crank"), the
    connecting rod hangs from its tip ("rod"), the slider moves along x on a prismatic joint
    ("slider"); the loop is cut where the rod meets the slider (revolute cut joint)."""
    l1, l2 = _lengths((crank, rod_length), 2, "lengths")
    if l2 <= l1:
        raise ValueError("slider_crank: the rod must be longer than the crank for the crank to turn fully")
    b = _b.ModelBuilder("slider_crank", gravity=gravity)
    b.add_body("crank", "world", J.Revolute("y"), inertia=rod(density * l1, l1), joint_name="crank")
    b.add_body("rod", "crank", J.Revolute("y"), placement=[l1, 0, 0], inertia=rod(density * l2, l2), joint_name="rod")
    b.add_body("slider", "world", J.Prismatic("x"), inertia=_b.Inertia(slider_mass, (0, 0, 0), 1e-3 * np.eye(3)),
               joint_name="slider")
    b.add_loop("loop", "rod", "slider", J.Revolute("y"), placement=[l2, 0, 0])
    return b.build()


def five_bar(lengths: Sequence[float] = (0.4, 0.5, 0.4, 0.5), base: float = 0.3, density: float = 2.0,
             gravity: ArrayLike = (0.0, 0.0, -9.81)) -> Model:
    """The five-bar parallel arm in the xz-plane: two proximal links turn about base joints at
    (0, 0, 0) ("left_base") and (base, 0, 0) ("right_base"), distal links ("left_elbow",
    "right_elbow") meet at the end effector, where the loop is cut (revolute cut joint on the
    left distal link's tip; frame "tool").  ``lengths`` = (left proximal, left distal, right
    proximal, right distal).  Two degrees of freedom: actuate the base joints, or three joints
    for redundant actuation."""
    a1, a2, b1, b2 = _lengths(lengths, 4, "lengths")
    b = _b.ModelBuilder("five_bar", gravity=gravity)
    b.add_body("left_proximal", "world", J.Revolute("y"), inertia=rod(density * a1, a1), joint_name="left_base")
    b.add_body("left_distal", "left_proximal", J.Revolute("y"), placement=[a1, 0, 0], inertia=rod(density * a2, a2),
               joint_name="left_elbow")
    b.add_body("right_proximal", "world", J.Revolute("y"), placement=[base, 0, 0], inertia=rod(density * b1, b1),
               joint_name="right_base")
    b.add_body("right_distal", "right_proximal", J.Revolute("y"), placement=[b1, 0, 0],
               inertia=rod(density * b2, b2), joint_name="right_elbow")
    b.add_loop("tool_joint", "left_distal", "right_distal", J.Revolute("y"), placement=[a2, 0, 0],
               real_placement=[b2, 0, 0])
    b.add_frame("tool", "left_distal", placement=[a2, 0, 0])
    return b.build()


def spatial_loop(cut: str = "universal", density: float = 2.0, gravity: ArrayLike = (0.0, 0.0, -9.81)) -> Model:
    """A spatial one-loop linkage of one degree of freedom: a crank turning about z at the
    origin ("crank", length 0.2), a rocker turning about x at (0.3, 0.5, 0.4) ("rocker",
    length 0.35, along -z), and a coupler between their tips (length about 0.6).

    ``cut="universal"`` (R-S-U-R): the coupler hangs from the crank tip on a spherical joint
    ("coupler") and the loop is cut at a universal joint on the rocker tip;
    ``cut="spherical"`` (R-U-S-R): the coupler hangs on a universal joint and the loop is cut
    at a spherical joint.  Either way 6 x 3 - (5 + 3 + 4 + 5) = 1 degree of freedom (Grubler).
    """
    b = _b.ModelBuilder(f"spatial_loop_{cut}", gravity=gravity)
    lc, lr = 0.2, 0.35
    rocker_at = np.array([0.3, 0.5, 0.4])
    b.add_body("crank", "world", J.Revolute("z"), inertia=rod(density * lc, lc), joint_name="crank")
    # the rocker's rod points along -z in its joint frame: a rotation taking x to -z
    Rr = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
    b.add_body("rocker", "world", J.Revolute(Rr.T @ np.array([1.0, 0.0, 0.0])), placement=(Rr, rocker_at),
               inertia=rod(density * lr, lr), joint_name="rocker")
    crank_tip = np.array([lc, 0.0, 0.0])
    rocker_tip = rocker_at + Rr @ np.array([lr, 0.0, 0.0])
    d = rocker_tip - crank_tip
    lcp = float(np.linalg.norm(d))
    # the coupler's frame: x along the coupler at q = 0
    x = d / lcp
    y = np.cross([0.0, 0.0, 1.0], x)
    y /= np.linalg.norm(y)
    Rc = np.column_stack([x, y, np.cross(x, y)])
    if cut == "universal":
        b.add_body("coupler", "crank", J.Spherical(), placement=(Rc, crank_tip), inertia=rod(density * lcp, lcp),
                   joint_name="coupler")
        cut_joint = J.Universal("y", "z")
    elif cut == "spherical":
        b.add_body("coupler", "crank", J.Universal("z", "y"), placement=(Rc, crank_tip),
                   inertia=rod(density * lcp, lcp), joint_name="coupler")
        cut_joint = J.Spherical()
    else:
        raise ValueError(f"cut: expected 'universal' or 'spherical', got {cut!r}")
    # the cut joint's frame on the coupler tip; on the rocker the same point, same axes at q = 0
    b.add_loop("loop", "coupler", "rocker", cut_joint, placement=[lcp, 0, 0],
               real_placement=(Rr.T @ Rc, np.array([lr, 0.0, 0.0])))
    return b.build()
