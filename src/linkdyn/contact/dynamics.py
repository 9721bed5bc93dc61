"""Dynamics with unilateral constraints: contact and limit forces, impacts, corrections.

With the unilateral units of a state (``linkdyn.contact.rows``: contacts and limits) and the
bilateral loop closures of the model, the motion obeys

    M q'' + b = tau + J_b^T lambda_b + N^T lambda_n + T^T lambda_t        (Lagrange multipliers)
    J_b q'' + J_b' v = 0                                                  (loops, bilateral)
    0 <= lambda_n  _|_  phi'' = N q'' + N' v >= 0                         (for units at phi = 0, phi' = 0)
    |lambda_t| <= mu lambda_n, sticking T q'' + T' v = 0 inside the cone  (Coulomb)

(Lagrange multipliers: the constrained equations of motion of Spong and Vidyasagar's form,
the Lagrange-multiplier form of the constrained equations of motion; the unilateral part: Loetstedt 1982, Baraff 1994, Pfeiffer and Glocker
1996).  The bilateral rows are eliminated first: ``Z = M^-1 - M^-1 J_b^T (J_b M^-1 J_b^T)^+
J_b M^-1`` maps a generalized force to the acceleration it adds to the closed chain, and the
loop-closed acceleration a_L under tau alone is the compiled multiplier-form solver of
``linkdyn.loops`` (ABA for a tree).  The unilateral rows then form the small mixed
complementarity problem of ``linkdyn.contact.lcp`` on A = G Z F, where G measures (the rows)
and F applies (the rows' transposes; a sliding contact's friction is -mu lambda_n along its
slip, so its normal column carries it).

An impact (a unit reaching phi = 0 with phi' < 0) is the same problem on the velocity level:
impulses P with v+ = v- + Z F P, phi'+ >= -e phi'- (Newton's restitution e) complementary to
P_n >= 0, friction impulses inside the cone, loops kept closed; with every unit bilateral
and e = 0 it is the impulse of structure changes (Nakamura and Yamane 2000, eqs. 20-33).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Hashable, Mapping, Sequence

import numpy as np
import scipy.linalg

from ..dynamics.aba import aba
from ..dynamics.crba import crba
from . import lcp
from .rows import CONTACT, inert

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model
    from .rows import Units

#: a contact slides (its friction force is -mu lambda_n along its slip) above this speed (m/s);
#: below it, friction is a variable of the problem (sticking, or slipping from rest on the rim
#: of the cone), and a slow slip left over is brought to zero in about TAU_STICK
V_SLIDE = 1e-2
#: time constant (s) of the sticking rows' velocity stabilization: T q'' + T' v = -T v / TAU_STICK
TAU_STICK = 5e-3


class Response:
    """The closed chain's response to generalized forces at q: ``apply(F)`` = Z F, the
    acceleration (or velocity change) that the forces F (nv, k) add with the loops held.

    A tree: Z = M^-1 (Cholesky of the CRBA matrix).  A closed chain: the KKT matrix
    [M J^T; J 0] on a maximal set of independent loop rows J (the virtual links' cut joints
    have no inertia, so M alone is singular there, but M is positive definite on the motions
    the loops allow), LU-factored once per state."""

    def __init__(self, model: Model, q: ArrayLike) -> None:
        self.model, self.q = model, q
        M = crba(model, q)
        self._nv = model.nv
        if model.nloops:
            from ..loops.kinematics import independent_rows, loop_jacobian
            Jb = loop_jacobian(model, q)
            rows = model.__dict__.get("_contact_loop_rows")
            for attempt in (0, 1):
                if rows is None or attempt:
                    rows = independent_rows(Jb)          # a rank-revealing QR: done again only when
                    model.__dict__["_contact_loop_rows"] = rows   # the rows the model had go dependent
                Jr = Jb[rows]
                self._loop_rows = rows
                k = Jr.shape[0]
                K = np.zeros((self._nv + k, self._nv + k))
                K[:self._nv, :self._nv] = M
                K[:self._nv, self._nv:] = Jr.T
                K[self._nv:, :self._nv] = Jr
                self._lu = scipy.linalg.lu_factor(K, check_finite=False)
                d = np.abs(np.diag(self._lu[0]))
                if d.min() > 1e-10 * d.max():
                    break
            self._cho = None
        else:
            self._cho = scipy.linalg.cho_factor(M, lower=True, check_finite=False)

    def apply(self, F: ArrayLike, loops: bool = False) -> NDArray[np.float64] | tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Z F; with ``loops`` also the loops' impulses (6 nloops, k) that hold them closed
        against F (zero for a tree, and on the rows the KKT system left out as dependent)."""
        F = np.asarray(F, dtype=float)
        if F.ndim == 1:
            out = self.apply(F[:, None], loops)
            return (out[0][:, 0], out[1][:, 0]) if loops else out[:, 0]
        nl6 = 6 * self.model.nloops
        if F.shape[1] == 0 or self._cho is not None:
            x = np.zeros((self._nv, F.shape[1])) if F.shape[1] == 0 else \
                scipy.linalg.cho_solve(self._cho, F, check_finite=False)
            return (x, np.zeros((nl6, F.shape[1]))) if loops else x
        rhs = np.zeros((self._lu[0].shape[0], F.shape[1]))
        rhs[:self._nv] = F
        sol = scipy.linalg.lu_solve(self._lu, rhs, check_finite=False)
        if not loops:
            return sol[:self._nv]
        mu = np.zeros((nl6, F.shape[1]))
        mu[self._loop_rows] = -sol[self._nv:]          # M x + J^T mu = F: the loops push with -mu
        return sol[:self._nv], mu


@dataclass
class Solution:
    """What the unilateral problem gave: ``qdd`` (or ``dv`` for an impulse), the units it
    covered and per unit ``force`` (k, 3): [normal, tangent 1, tangent 2] (forces, or
    impulses), ``sliding`` (k,) bool, the complementarity ``residual``, and for an impulse
    ``loop_impulse`` (nloops, 6): what each loop took to stay closed."""
    value: np.ndarray
    units: object
    force: np.ndarray
    sliding: np.ndarray
    residual: float
    loop_impulse: np.ndarray = None


def _problem(units, v, sliding_ok, slide=None):
    """The variables of the MCP: kinds, mu, normal index, and the G (rows) / F (columns) maps.
    ``slide``: None (a contact slides when its slip exceeds V_SLIDE) or, per unit, None (decide
    so), False (sticks: friction a variable) or a unit 2-vector (slides, along the present slip,
    or along this direction when the slip is too small to have one)."""
    kinds, mus, normals, G, F = [], [], [], [], []
    owner = []                        # (unit, slot) of each variable: slot 0 normal, 1/2 tangents
    sliding = np.zeros(len(units), dtype=bool)
    for u in range(len(units)):
        n_row = units.N[u]
        col = n_row.copy()
        iu = len(kinds)
        mu = units.mu[u] if units.kind[u] == CONTACT else 0.0
        slip = units.T[u] @ v if mu > 0 else None
        mode = None if slide is None else slide[u]
        if mu > 0 and sliding_ok and (mode is None and np.hypot(*slip) > V_SLIDE
                                      or mode is not None and mode is not False):
            sliding[u] = True
            d = slip / np.hypot(*slip) if mode is None else np.asarray(mode)
            col = col - mu * (units.T[u].T @ d)
        kinds.append(lcp.NORMAL)
        mus.append(0.0)
        normals.append(iu)
        G.append(n_row)
        F.append(col)
        owner.append((u, 0))
        if mu > 0 and not sliding[u]:
            for s in (0, 1):
                kinds.append(lcp.FRICTION if s == 0 else lcp.FRICTION2)
                mus.append(mu)
                normals.append(iu)
                G.append(units.T[u, s])
                F.append(units.T[u, s])
                owner.append((u, s + 1))
    nv = units.N.shape[1]
    G = np.array(G).reshape(-1, nv)
    F = np.array(F).reshape(-1, nv).T
    return np.array(kinds, dtype=np.int64), np.array(mus), np.array(normals, dtype=np.int64), G, F, owner, sliding


def _unpack(units, lam, owner, sliding, v, slide=None):
    force = np.zeros((len(units), 3))
    for x, (u, s) in zip(lam, owner):
        force[u, s] = x
    for u in np.flatnonzero(sliding):
        if slide is None or slide[u] is None:
            slip = units.T[u] @ v
            d = slip / np.hypot(*slip)
        else:
            d = np.asarray(slide[u])
        force[u, 1:] = -units.mu[u] * force[u, 0] * d
    return force


def _warm(owner, units, warm):
    if not warm:
        return None
    lam = np.zeros(len(owner))
    for k, (u, s) in enumerate(owner):
        lam[k] = warm.get(units.key[u], (0.0, 0.0, 0.0))[s]
    return lam


def acceleration(model: Model, q: ArrayLike, v: NDArray[np.float64], tau: ArrayLike, units: Units, response: Response | None = None,
                 a_free: NDArray[np.float64] | None = None, warm: Mapping[Hashable, Sequence[float]] | None = None,
                 slide: Sequence[ArrayLike | None] | None = None) -> Solution:
    """q'' under ``tau`` with the loops closed and the ``units`` (the ones in contact: phi = 0,
    phi' = 0) pushing, never pulling, and their friction inside the cone.  ``slide``: each
    contact's mode, kept through an integration step (see ``_problem``); by default a contact
    slides when its slip is faster than V_SLIDE."""
    if a_free is None:
        if model.nloops:
            from ..loops.dynamics import constrained_dynamics
            a_free = constrained_dynamics(model, q, v, tau)
        else:
            a_free = aba(model, q, v, tau)
    if len(units) == 0:
        return Solution(a_free, units, np.zeros((0, 3)), np.zeros(0, dtype=bool), 0.0)
    response = response or Response(model, q)
    kinds, mus, normals, G, F, owner, sliding = _problem(units, v, True, slide)
    ZF = response.apply(F)
    A = G @ ZF
    drift = np.array([units.drift_n[u] if s == 0 else units.drift_t[u, s - 1] for u, s in owner])
    r = G @ a_free + drift
    for k, (u, s) in enumerate(owner):          # a sticking contact's leftover slip decays
        if s:
            r[k] += (units.T[u, s - 1] @ v) / TAU_STICK
    lam, res = lcp.solve(A, r, kinds, mus, normals, _warm(owner, units, warm))
    return Solution(a_free + ZF @ lam, units, _unpack(units, lam, owner, sliding, v, slide), sliding, res)


def impulse(model: Model, q: ArrayLike, v: NDArray[np.float64], units: Units, restitution: bool = True,
            response: Response | None = None) -> Solution:
    """The velocity change dv of an impact on ``units`` at (q, v): impulses that push, with
    phi'+ >= -e phi'- (e of each unit where it approaches, ``restitution``) and friction
    impulses inside the cone; the loops stay closed."""
    if len(units) == 0:
        return Solution(np.zeros(model.nv), units, np.zeros((0, 3)), np.zeros(0, dtype=bool), 0.0)
    response = response or Response(model, q)
    kinds, mus, normals, G, F, owner, sliding = _problem(units, v, False)
    ZF, MU = response.apply(F, loops=True)
    A = G @ ZF
    w0 = G @ v
    r = w0.copy()
    if restitution:
        for k, (u, s) in enumerate(owner):
            if s == 0 and w0[k] < 0:
                r[k] = (1.0 + units.e[u]) * w0[k]
    lam, res = lcp.solve(A, r, kinds, mus, normals)
    sol = Solution(ZF @ lam, units, _unpack(units, lam, owner, sliding, v), sliding, res)
    sol.loop_impulse = (MU @ lam).reshape(-1, 6)
    return sol


def position_correction(model: Model, q: ArrayLike, units: Units, response: Response | None = None) -> NDArray[np.float64]:
    """dq (a velocity-space step, apply with ``linkdyn.integrate``) that brings every unit with
    phi < 0 back to phi >= 0 to first order, in the kinetic-energy metric and with the loops
    held to first order, pushing only: the LCP  0 <= lambda _|_ phi + N Z N^T lambda >= 0,
    dq = Z N^T lambda, so units at phi >= 0 move only as far as the others need.  Inert units
    (``linkdyn.contact.rows.inert``: no motion changes their gap) are left out: their
    penetration is no one's to project."""
    return _position_correction(model, q, units, response)[0]


def _position_correction(model, q, units, response=None):
    """(dq, the LCP's residual) of ``position_correction``: a residual above round-off means the
    first-order problem has no answer (units that cannot all be pushed out at once, e.g. two geoms
    of neighbouring bodies overlapping where a joint limit holds them), and dq is then only the
    solver's best try: a caller checks what it does (``linkdyn.sim.timestepping``'s projection
    takes a part of it only where the total overlap falls).  Inert units are left out."""
    units = units.subset(np.flatnonzero(~inert(units.N)))
    if not np.any(units.gap < 0):
        return np.zeros(model.nv), 0.0
    response = response or Response(model, q)
    ZN = response.apply(units.N.T)
    A = units.N @ ZN
    k = len(units)
    lam, res = lcp.solve(A, units.gap, np.full(k, lcp.NORMAL, dtype=np.int64), np.zeros(k), np.arange(k))
    return ZN @ lam, float(res)
