"""Joint kinds.

A joint connects a body to its parent.  Each kind is described by its configuration size
``nq``, its velocity size ``nv`` and up to two axes given in the joint frame.  The compiled
``jcalc`` (``linkdyn._kernels.jcalc``) turns a kind code and its coordinates into the joint
transform, the motion subspace ``S`` and the bias ``c = S' q'`` (seed 000 sec. 2.5, seed 003
table of joint types), so no algorithm needs a variant per joint kind.

Coordinates follow Pinocchio where both have the joint:

========================  ====  ====  =====================================================
kind                       nq    nv   q / v
========================  ====  ====  =====================================================
``Fixed``                   0     0   (merged into the parent body when the model is built)
``Revolute(axis)``          1     1   angle / rate
``Prismatic(axis)``         1     1   displacement / rate
``Cylindrical(axis)``       2     2   [displacement, angle] / rates
``Universal(a1, a2)``       2     2   [angle about a1, angle about a2 (rotated)] / rates
``Spherical()``             4     3   quaternion [x, y, z, w] / angular velocity (child frame)
``SphericalZYX()``          3     3   [z, y, x] angles, R = Rz Ry Rx / angle rates
``Planar()``                3     3   [x, y, theta] in the joint's xy-plane / [vx, vy, wz] (child frame)
``FreeFlyer()``             7     6   [x, y, z, qx, qy, qz, qw] / [v; w] in the child frame
========================  ====  ====  =====================================================
"""
from __future__ import annotations

import numpy as np

# Kind codes used by the compiled kernels (stored in ``model.jnt_type``).
FIXED, REVOLUTE, PRISMATIC, CYLINDRICAL, UNIVERSAL, SPHERICAL, SPHERICAL_ZYX, PLANAR, FREE = range(9)

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


def as_axis(axis, what: str = "axis") -> np.ndarray:
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

    def __init__(self):
        self._set(FIXED)


class Revolute(Joint):
    """Rotation about ``axis`` (joint frame)."""

    def __init__(self, axis="z"):
        self._set(REVOLUTE, as_axis(axis))


class Prismatic(Joint):
    """Translation along ``axis`` (joint frame)."""

    def __init__(self, axis="z"):
        self._set(PRISMATIC, as_axis(axis))


class Cylindrical(Joint):
    """Translation along and rotation about the same ``axis``; q = [displacement, angle]."""

    def __init__(self, axis="z"):
        self._set(CYLINDRICAL, as_axis(axis))


class Universal(Joint):
    """Hooke joint: rotation about ``axis1``, then about ``axis2`` of the rotated frame."""

    def __init__(self, axis1="x", axis2="y"):
        a1, a2 = as_axis(axis1, "axis1"), as_axis(axis2, "axis2")
        if abs(a1 @ a2) > 1.0 - 1e-9:
            raise ValueError("Universal: axis1 and axis2 must not be parallel")
        self._set(UNIVERSAL, a1, a2)


class Spherical(Joint):
    """Ball joint with a unit-quaternion configuration [x, y, z, w] (no singularity)."""

    def __init__(self):
        self._set(SPHERICAL)


class SphericalZYX(Joint):
    """Ball joint in ZYX angles [z, y, x], R = Rz(z) Ry(y) Rx(x) (seed 000 sec. 2.5.3)."""

    def __init__(self):
        self._set(SPHERICAL_ZYX)


class Planar(Joint):
    """Motion in the joint frame's xy-plane: q = [x, y, theta], v = [vx, vy, wz] in the child frame."""

    def __init__(self):
        self._set(PLANAR)


class FreeFlyer(Joint):
    """Free-floating 6-DoF joint (seed 004 sec. 2.5): q = [x, y, z, qx, qy, qz, qw], v = [v; w] (child frame)."""

    def __init__(self):
        self._set(FREE)
