"""Serial arms from Denavit-Hartenberg tables: the table (:class:`DHLink`) and the model built from it
(:func:`linkdyn.from_dh`, in :mod:`linkdyn.models.dh` with the built-in arms, as it builds a model
with the builder).  The built-in arms (PUMA 560, Stanford arm, SCARA, ...) are in :mod:`linkdyn.models.dh`.

Two conventions are supported (Spong, Hutchinson and Vidyasagar 2006, chs. 3-4):

``"standard"`` (Denavit-Hartenberg, Denavit and Hartenberg 1955; Spong, Hutchinson and Vidyasagar 2006, ch. 3)
    ``A_i = Rot_z(theta_i) Trans_z(d_i) Trans_x(a_i) Rot_x(alpha_i)``; DH frame ``i`` sits at
    the *end* of link ``i`` and joint ``i`` moves about / along ``z_{i-1}``.
``"modified"`` (Craig)
    ``A_i = Rot_x(alpha_{i-1}) Trans_x(a_{i-1}) Rot_z(theta_i) Trans_z(d_i)``; joint ``i``
    moves about / along ``z_i``.  As in Corke's toolbox, row ``i`` of a modified table holds
    ``a_{i-1}`` and ``alpha_{i-1}`` in its ``a`` and ``alpha`` fields.

Joint variables: ``q = 0`` is the table's value.  For a revolute joint ``theta_i = theta + q_i``
(``DHLink.theta`` is the offset), for a prismatic joint ``d_i = d + q_i`` (``DHLink.d`` is the
offset).  The same convention as Corke's Robotics Toolbox (``q + offset``).

Frames of the built model: ``"link{i}"`` (i = 1..n) is DH frame ``i``, ``"link0"`` the base
frame (``base``), ``"tool"`` is DH frame ``n`` times ``tool``.  Bodies are named ``"body{i}"``
and joints ``"joint{i}"``.

How the standard convention maps onto the builder: Rot_z and Trans_z commute, so
``A_i = J_i(q_i) S_i`` with ``J_i`` the joint motion about/along z and ``S_i = A_i(q = 0)``.
Body ``i`` is therefore placed at DH frame ``i-1`` (where joint ``i``'s axis is: its placement in
body ``i-1`` is ``S_{i-1}``, the base for ``i = 1``) and DH frame ``i`` is a frame fixed to it at
``S_i``.  The link's mass properties, given in DH frame ``i``, are carried into the body frame
by ``S_i`` (centre of mass ``R c + p``, inertia ``R I R^T``).  For the modified convention the
body frame *is* DH frame ``i`` and nothing needs transforming.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

import numpy as np


if TYPE_CHECKING:
    from numpy.typing import NDArray


__all__ = ["DHLink", "dh_transform", "dh_table"]


_KINDS = ("revolute", "prismatic")


@dataclass
class DHLink:
    """One row of a DH table plus the link's mass properties.

    ``a``, ``alpha``, ``d``, ``theta``: DH parameters (for ``"modified"``, ``a`` and ``alpha``
    are ``a_{i-1}``, ``alpha_{i-1}``).  ``theta`` is the joint offset of a revolute joint, ``d``
    that of a prismatic joint (``q = 0`` gives the table's values).  ``mass``, ``com`` and
    ``inertia`` (3x3, about the centre of mass) are expressed in DH frame ``i``.  ``armature``
    is the reflected rotor inertia (added to the mass matrix diagonal); ``viscous`` and
    ``coulomb`` are the joint's friction, ``tau_f = viscous q' + coulomb sign(q')`` (Spong, Hutchinson and Vidyasagar 2006
    sec. 5, viscous friction); ``lower``/``upper`` bound ``q_i``.  Armature and friction
    enter RNEA, CRBA and ABA alike.
    """
    a: float = 0.0
    alpha: float = 0.0
    d: float = 0.0
    theta: float = 0.0
    kind: str = "revolute"
    mass: float = 0.0
    com: tuple = (0.0, 0.0, 0.0)
    inertia: tuple = field(default_factory=lambda: np.zeros((3, 3)))
    armature: float = 0.0
    viscous: float = 0.0
    coulomb: float = 0.0
    lower: float = -np.inf
    upper: float = np.inf

    def __repr__(self):
        return (f"DHLink(a={self.a:.6g}, alpha={self.alpha:.6g}, d={self.d:.6g}, theta={self.theta:.6g}, "
                f"kind={self.kind!r}, mass={self.mass:.6g})")

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ValueError(f"DHLink.kind: expected 'revolute' or 'prismatic', got {self.kind!r}")
        for name in ("a", "alpha", "d", "theta", "armature", "viscous", "coulomb"):
            v = getattr(self, name)
            if not np.isfinite(float(v)):
                raise ValueError(f"DHLink.{name}: expected a finite number, got {v!r}")
        for name in ("armature", "viscous", "coulomb"):
            if getattr(self, name) < 0:
                raise ValueError(f"DHLink.{name}: expected >= 0, got {getattr(self, name)}")
        I = np.asarray(self.inertia, dtype=float)
        if I.shape == (3,):
            I = np.diag(I)
        if I.shape != (3, 3):
            raise ValueError(f"DHLink.inertia: expected a 3x3 matrix or 3 principal moments, got shape {I.shape}")
        self.inertia = I
        c = np.asarray(self.com, dtype=float)
        if c.shape != (3,):
            raise ValueError(f"DHLink.com: expected a 3-vector, got shape {c.shape}")
        self.com = c


def dh_table(links: Iterable[DHLink], convention: str = "standard", degrees: bool = True) -> str:
    """The DH table of ``links`` (a list of :class:`DHLink`) as text, one row per joint: a,
    alpha, d, theta, the joint kind (the variable is theta for a revolute joint, d for a
    prismatic one, marked ``*``), the mass and the limits; angles in degrees unless
    ``degrees=False``.  ``print(dh_table(puma560_links()))``."""
    if convention not in ("standard", "modified"):
        raise ValueError(f"convention: expected 'standard' or 'modified', got {convention!r}")
    k = 180.0 / np.pi if degrees else 1.0
    unit = "deg" if degrees else "rad"
    a_name, al_name = ("a", "alpha") if convention == "standard" else ("a_{i-1}", "alpha_{i-1}")
    head = (f"{'i':>2} {a_name + ' [m]':>12} {al_name + ' [' + unit + ']':>16} {'d [m]':>10} "
            f"{'theta [' + unit + ']':>13} {'joint':>10} {'mass [kg]':>10} {'limits [' + unit + ' or m]':>24}")
    rows = [head, "-" * len(head)]
    for i, L in enumerate(links, 1):
        rev = L.kind == "revolute"
        d = f"{L.d:.5g}" + ("" if rev else "*")
        th = f"{L.theta * k:.5g}" + ("*" if rev else "")
        s = k if rev else 1.0
        lim = f"{L.lower * s:.5g} .. {L.upper * s:.5g}" if np.isfinite(L.lower) or np.isfinite(L.upper) else "none"
        rows.append(f"{i:>2} {L.a:>12.5g} {L.alpha * k:>16.5g} {d:>10} {th:>13} {L.kind:>10} {L.mass:>10.4g} {lim:>24}")
    rows.append("(* the joint variable, added to the table's value)")
    return "\n".join(rows)


def _rx(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[1.0, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1]])


def _rz(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1]])


def _tx(a):
    T = np.eye(4)
    T[0, 3] = a
    return T


def _tz(d):
    T = np.eye(4)
    T[2, 3] = d
    return T


def dh_transform(a: float, alpha: float, d: float, theta: float, convention: str = "standard") -> NDArray[np.float64]:
    """4x4 link transform: standard ``Rot_z(theta) Trans_z(d) Trans_x(a) Rot_x(alpha)`` (Spong, Hutchinson and Vidyasagar 2006
    eq. (4.9)) or modified ``Rot_x(alpha) Trans_x(a) Rot_z(theta) Trans_z(d)`` (Craig)."""
    if convention == "standard":
        return _rz(theta) @ _tz(d) @ _tx(a) @ _rx(alpha)
    if convention == "modified":
        return _rx(alpha) @ _tx(a) @ _rz(theta) @ _tz(d)
    raise ValueError(f"convention: expected 'standard' or 'modified', got {convention!r}")
