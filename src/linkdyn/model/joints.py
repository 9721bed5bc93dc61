"""Joint kinds.

A joint connects a body to its parent.  Each kind is described by its configuration size
``nq``, its velocity size ``nv`` and up to two axes given in the joint frame.  The compiled
``jcalc`` (``linkdyn._kernels.jcalc``) turns a kind code and its coordinates into the joint
transform, the motion subspace ``S`` and the bias ``c = S' q'`` (Baerlocher and Boulic 2001, Walker and Orin 1982
table of joint types), so no algorithm needs a variant per joint kind.

Coordinates follow Pinocchio where both have the joint:

| kind | nq | nv | q / v |
|---|---|---|---|
| ``Fixed`` | 0 | 0 | (merged into the parent body when the model is built) |
| ``Revolute(axis)`` | 1 | 1 | angle / rate |
| ``Prismatic(axis)`` | 1 | 1 | displacement / rate |
| ``Cylindrical(axis)`` | 2 | 2 | [displacement, angle] / rates |
| ``Universal(a1, a2)`` | 2 | 2 | [angle about a1, angle about a2 (rotated)] / rates |
| ``Spherical()`` | 4 | 3 | quaternion [x, y, z, w] / angular velocity (child frame) |
| ``SphericalZYX()`` | 3 | 3 | [z, y, x] angles, R = Rz Ry Rx / angle rates |
| ``Planar()`` | 3 | 3 | [x, y, theta] in the joint's xy-plane / [vx, vy, wz] (child frame) |
| ``FreeFlyer()`` | 7 | 6 | [x, y, z, qx, qy, qz, qw] / [v; w] in the child frame |

The two ball joints may carry a swing cone and a twist range (``Spherical(swing=..., twist=...,
axis=..., plug_axis=...)``, the swing-twist decomposition of Baerlocher and Boulic 2001); the
constraint rows they give are in :mod:`linkdyn.contact.swing_twist`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

# Kind codes used by the compiled kernels (stored in ``model.jnt_type``), defined with them.
from .._kernels.kinds import (CYLINDRICAL, FIXED, FREE, PLANAR, PRISMATIC, REVOLUTE, SPHERICAL,  # noqa: E402
                              SPHERICAL_ZYX, UNIVERSAL)

KIND_NAMES = {
    FIXED: "fixed", REVOLUTE: "revolute", PRISMATIC: "prismatic", CYLINDRICAL: "cylindrical",
    UNIVERSAL: "universal", SPHERICAL: "spherical", SPHERICAL_ZYX: "spherical_zyx",
    PLANAR: "planar", FREE: "free",
}
#: (nq, nv) of each kind
SIZES = {
    FIXED: (0, 0), REVOLUTE: (1, 1), PRISMATIC: (1, 1), CYLINDRICAL: (2, 2), UNIVERSAL: (2, 2),
    SPHERICAL: (4, 3), SPHERICAL_ZYX: (3, 3), PLANAR: (3, 3), FREE: (7, 6),
}
#: offset of the unit quaternion inside q for the kinds that have one
QUAT_OFFSET = {SPHERICAL: 0, FREE: 3}

_NAMED_AXES = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}


def as_axis(axis: str | ArrayLike, what: str = "axis") -> NDArray[np.float64]:
    """A unit 3-vector from ``"x"``, ``"-y"``, ... or any non-zero 3-vector."""
    if isinstance(axis, str):
        key = axis.strip().lower()
        sign = -1.0 if key.startswith("-") else 1.0
        key = key.lstrip("+-")
        if key not in _NAMED_AXES:
            raise ValueError(f"{what}: expected 'x', 'y', 'z' (optionally signed) or a 3-vector, got {axis!r}")
        return sign * np.array(_NAMED_AXES[key])
    a = np.asarray(axis, dtype=float)
    if a.shape != (3,):
        raise ValueError(f"{what}: expected a 3-vector, got shape {a.shape}")
    n = np.linalg.norm(a)
    if not np.isfinite(n) or n < 1e-12:
        raise ValueError(f"{what}: must be a finite non-zero vector, got {a.tolist()}")
    return a / n


class Joint:
    """Base of all joint kinds; use the subclasses.  Instances are immutable."""
    __slots__ = ("kind", "axis", "axis2")

    def _set(self, kind, axis=None, axis2=None):
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "axis", np.zeros(3) if axis is None else axis)
        object.__setattr__(self, "axis2", np.zeros(3) if axis2 is None else axis2)
        self.axis.flags.writeable = False
        self.axis2.flags.writeable = False

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    @property
    def nq(self) -> int:
        return SIZES[self.kind][0]

    @property
    def nv(self) -> int:
        return SIZES[self.kind][1]

    @property
    def kind_name(self) -> str:
        return KIND_NAMES[self.kind]

    def __repr__(self):
        if self.kind == UNIVERSAL:
            return f"Universal(axis1={self.axis.tolist()}, axis2={self.axis2.tolist()})"
        if self.kind in (REVOLUTE, PRISMATIC, CYLINDRICAL):
            return f"{type(self).__name__}(axis={self.axis.tolist()})"
        return f"{type(self).__name__}()"


class Fixed(Joint):
    """Welds the body to its parent (merged into the parent when the model is built)."""

    def __init__(self) -> None:
        self._set(FIXED)


class Revolute(Joint):
    """Rotation about ``axis`` (joint frame)."""

    def __init__(self, axis: str | ArrayLike = "z") -> None:
        self._set(REVOLUTE, as_axis(axis))


class Prismatic(Joint):
    """Translation along ``axis`` (joint frame)."""

    def __init__(self, axis: str | ArrayLike = "z") -> None:
        self._set(PRISMATIC, as_axis(axis))


class Cylindrical(Joint):
    """Translation along and rotation about the same ``axis``; q = [displacement, angle]."""

    def __init__(self, axis: str | ArrayLike = "z") -> None:
        self._set(CYLINDRICAL, as_axis(axis))


class Universal(Joint):
    """Hooke joint: rotation about ``axis1``, then about ``axis2`` of the rotated frame."""

    def __init__(self, axis1: str | ArrayLike = "x", axis2: str | ArrayLike = "y") -> None:
        a1, a2 = as_axis(axis1, "axis1"), as_axis(axis2, "axis2")
        if abs(a1 @ a2) > 1.0 - 1e-9:
            raise ValueError("Universal: axis1 and axis2 must not be parallel")
        self._set(UNIVERSAL, a1, a2)


def _angle(x, what):
    """A finite float from a real number (not a bool)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ValueError(f"{what}: expected a number (radians), got {x!r}")
    x = float(x)
    if not np.isfinite(x):
        raise ValueError(f"{what}: expected a finite number (radians), got {x!r}")
    return x


#: the narrowest swing cone (half-angle, rad) a ball joint may have: the swing-twist rows
#: linearize the swing angle, whose direction turns a full circle about the cone's apex, and a
#: cone narrower than a few steps' rotation pumps energy (issue 28, measured under time stepping
#: with a pendulum turning at 1-6 rad/s: a 1e-9 rad cone went from 7.3 J to 2e6 J; 1e-5 rad blew
#: up at dt = 1 ms, 1e-3 rad held at 1 ms and blew up at 10 ms; a cone holds while the rotation of
#: a step stays below about a fifth of its half-angle).  A narrower cone locks the swing: a
#: Revolute joint about the cone's axis is that joint.
MIN_SWING = 1e-3


def _swing_limit(swing):
    """None, a half-angle in (0, pi) or a pair of half-angles (a, b) in (0, pi)."""
    if swing is None:
        return None
    msg = ("swing: expected None, a cone half-angle in (0, pi) rad or a pair (a, b) of half-angles in "
           f"(0, pi) rad for an elliptical cone, got {swing!r}")
    if isinstance(swing, np.ndarray) and swing.ndim == 0:
        swing = swing.item()
    if isinstance(swing, (tuple, list, np.ndarray)):
        vals = np.asarray(swing, dtype=object).reshape(-1)
        if len(vals) != 2 or np.ndim(swing) != 1:
            raise ValueError(msg)
        out = tuple(_angle(v, "swing") for v in vals)
    elif isinstance(swing, (int, float, np.integer, np.floating)) and not isinstance(swing, (bool, np.bool_)):
        out = (_angle(swing, "swing"),)
    else:
        raise ValueError(msg)
    for v in out:
        if not 0.0 < v < np.pi:
            raise ValueError(f"swing: every half-angle must be in (0, pi) rad (a cone of half-angle pi "
                             f"or more limits nothing and puts the twist's singularity inside), got {swing!r}")
        if v < MIN_SWING:
            raise ValueError(f"swing: a half-angle of {v:g} rad is below the narrowest cone the limit rows hold "
                             f"({MIN_SWING:g} rad: linkdyn.model.joints.MIN_SWING); a cone that narrow locks the "
                             "swing: use a Revolute joint about the cone's axis (its twist) instead")
    return out[0] if len(out) == 1 else out


def _twist_limit(twist):
    """None or (lo, hi) with -pi < lo < hi < pi."""
    if twist is None:
        return None
    msg = f"twist: expected None or a pair (lo, hi) of angles with -pi < lo < hi < pi rad, got {twist!r}"
    if not isinstance(twist, (tuple, list, np.ndarray)) or np.ndim(twist) != 1 or len(twist) != 2:
        raise ValueError(msg)
    lo, hi = (_angle(v, "twist") for v in twist)
    if not -np.pi < lo < hi < np.pi:
        raise ValueError(msg)
    return lo, hi


def _cone_frame(axis) -> np.ndarray:
    """The cone frame C (columns: the a direction, the b direction, the cone axis) of ``axis``."""
    if not isinstance(axis, str) and np.ndim(axis) == 2:
        C = np.asarray(axis, dtype=float)
        if C.shape != (3, 3) or not np.isfinite(C).all():
            raise ValueError(f"axis: expected a named axis, a 3-vector or a 3x3 rotation matrix, got shape {C.shape}")
        if np.abs(C.T @ C - np.eye(3)).max() > 1e-6 or np.linalg.det(C) < 0:
            raise ValueError("axis: a 3x3 axis must be a rotation matrix (columns: the direction of the "
                             "half-angle a, that of b, the cone axis)")
        U, _, Vt = np.linalg.svd(C)          # the nearest exact rotation
        return U @ Vt
    c = as_axis(axis, "axis")
    ref = np.array([1.0, 0.0, 0.0])
    x = ref - (ref @ c) * c
    if np.linalg.norm(x) < 1e-6:             # a cone axis along +-x: the reference is the socket's y
        ref = np.array([0.0, 1.0, 0.0])
        x = ref - (ref @ c) * c
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(c, x), c])


def _plug_frame(C, plug_axis) -> np.ndarray:
    """C M with M the smallest rotation taking z to the plug axis in the cone frame (twist 0 at q = 0)."""
    if plug_axis is None:
        return C.copy()
    u = C.T @ as_axis(plug_axis, "plug_axis")
    if u[2] < -1.0 + 1e-9:
        raise ValueError("plug_axis: must not point against the cone axis (the joint would start at "
                         "swing = pi, where the twist is undefined)")
    k = np.array([-u[1], u[0], 0.0])       # z x u
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    M = np.eye(3) + K + K @ K / (1.0 + u[2])
    return C @ M


def _fmt_angles(x):
    if isinstance(x, tuple):
        return "(" + ", ".join(f"{v:.6g}" for v in x) + ")"
    return f"{x:.6g}"


class _Ball(Joint):
    """Common part of the two ball joints: the optional swing cone and twist range.

    See :class:`Spherical` for the meaning of ``swing``, ``twist``, ``axis`` and ``plug_axis``.
    """
    __slots__ = ("swing", "twist", "cone_axis", "plug_axis", "cone_frame", "plug_frame")

    def _set_ball(self, kind, swing, twist, axis, plug_axis):
        self._set(kind)
        C = _cone_frame(axis)
        Cp = _plug_frame(C, plug_axis)
        object.__setattr__(self, "swing", _swing_limit(swing))
        object.__setattr__(self, "twist", _twist_limit(twist))
        for name, val in (("cone_frame", C), ("plug_frame", Cp), ("cone_axis", C[:, 2].copy()),
                          ("plug_axis", Cp[:, 2].copy())):
            val.flags.writeable = False
            object.__setattr__(self, name, val)

    @property
    def limited(self) -> bool:
        """True when the joint has a swing cone or a twist range."""
        return self.swing is not None or self.twist is not None

    @property
    def swing_ab(self) -> tuple[float, float] | None:
        """The cone's half-angles ``(a, b)`` (equal for a circular cone), or None."""
        if self.swing is None:
            return None
        return self.swing if isinstance(self.swing, tuple) else (self.swing, self.swing)

    def __repr__(self):
        args = []
        if self.swing is not None:
            args.append(f"swing={_fmt_angles(self.swing)}")
        if self.twist is not None:
            args.append(f"twist={_fmt_angles(self.twist)}")
        if not np.allclose(self.cone_frame, np.eye(3), atol=1e-12):
            args.append(f"axis={(np.round(self.cone_axis, 6) + 0.0).tolist()}")
            if isinstance(self.swing, tuple) and not np.allclose(self.cone_frame, _cone_frame(self.cone_axis)):
                args.append(f"a_direction={(np.round(self.cone_frame[:, 0], 6) + 0.0).tolist()}")
        if not np.allclose(self.plug_axis, self.cone_axis, atol=1e-12):
            args.append(f"plug_axis={(np.round(self.plug_axis, 6) + 0.0).tolist()}")
        return f"{type(self).__name__}({', '.join(args)})"


class Spherical(_Ball):
    """Ball joint with a unit-quaternion configuration [x, y, z, w] (no singularity), optionally
    limited by a swing cone and a twist range.

    ``Spherical()`` is unlimited.  The limits use the swing-twist decomposition of the joint
    rotation R (child frame in the joint frame): R = R_swing R_twist, R_twist a rotation about
    the cone axis and R_swing a rotation about an axis perpendicular to it (Baerlocher and Boulic
    2001, "Parametrization and range of motion of the ball-and-socket joint"; Dobrowolski 2015,
    "Swing-twist decomposition in Clifford algebra"), as in tazz's notes
    "Formulation of Featherstone's algorithm" (2005-2013), eqs. 27-29 (eq. 29 corrected: see :mod:`linkdyn.contact.swing_twist`).  The swing
    angle is the angle between the socket's cone axis and the plug's axis (eq. 27), the twist
    the rotation about the plug's axis left once they are aligned by the smallest rotation.

    * ``swing``: None (no cone); a half-angle in (0, pi) (circular cone: swing angle <= swing);
      or a pair ``(a, b)`` of half-angles in (0, pi) for an elliptical cone: the plug's axis may
      tilt at most ``a`` towards +-x of the cone frame and at most ``b`` towards +-y, and in a
      direction at the angle phi from x at most ``a b / sqrt(b^2 cos^2 phi + a^2 sin^2 phi)``
      (an ellipse in the polar coordinates (tilt angle, tilt direction) of the plug's axis).
    * ``twist``: None or ``(lo, hi)``, -pi < lo < hi < pi: the range of the twist angle, the
      right-handed rotation about the plug's axis, zero at q = 0.
    * ``axis``: the cone axis in the joint (socket) frame: ``"x"``, ``"-z"``, ... or a 3-vector
      (default ``"z"``, the notes' convention), or a 3x3 rotation whose columns are the cone
      frame's x (the direction of ``a``), y (that of ``b``) and z (the cone axis).  For a vector,
      the cone frame's x is the socket's x made perpendicular to the axis (its y for an axis
      along +-x).  Internally a fixed rotation C taking z to the axis (``cone_frame``).
    * ``plug_axis``: the plug's axis in the child frame (= its direction in the joint frame at
      q = 0); default: the cone axis, so that swing and twist are those of C^T R C and q = 0 is
      the cone's centre.  A different plug axis puts q = 0 off the cone's centre (a cone tilted
      towards flexion for a limb hanging along ``plug_axis``): swing and twist are then those of
      C^T R C_p with C_p = C S0, S0 the smallest rotation from the cone axis to the plug axis, so
      that q = 0 is a pure swing (twist 0) of the angle between the two axes.

    Attributes (read-only): ``swing``, ``twist`` (as validated), ``cone_axis``, ``plug_axis``,
    ``cone_frame`` (C), ``plug_frame`` (C_p), ``swing_ab`` ((a, b) or None), ``limited``.
    ``linkdyn.contact.swing_twist`` turns them into gaps, constraint rows and their drift.
    """
    __slots__ = ()

    def __init__(self, swing: float | Sequence[float] | None = None, twist: Sequence[float] | None = None,
                 axis: str | ArrayLike = "z", plug_axis: str | ArrayLike | None = None) -> None:
        self._set_ball(SPHERICAL, swing, twist, axis, plug_axis)


class SphericalZYX(_Ball):
    """Ball joint in ZYX angles [z, y, x], R = Rz(z) Ry(y) Rx(x) (Baerlocher and Boulic 2001), with the
    same optional swing cone and twist range as :class:`Spherical` (``swing``, ``twist``,
    ``axis``, ``plug_axis``: see there).  The angles' own ``lower``/``upper`` (ModelBuilder) are
    separate coordinate limits."""
    __slots__ = ()

    def __init__(self, swing: float | Sequence[float] | None = None, twist: Sequence[float] | None = None,
                 axis: str | ArrayLike = "z", plug_axis: str | ArrayLike | None = None) -> None:
        self._set_ball(SPHERICAL_ZYX, swing, twist, axis, plug_axis)


class Planar(Joint):
    """Motion in the joint frame's xy-plane: q = [x, y, theta], v = [vx, vy, wz] in the child frame."""

    def __init__(self) -> None:
        self._set(PLANAR)


class FreeFlyer(Joint):
    """Free-floating 6-DoF joint (Nakamura and Yamane 2000 sec. 2.5): q = [x, y, z, qx, qy, qz, qw],
    v = [v; w] (child frame)."""

    def __init__(self) -> None:
        self._set(FREE)
