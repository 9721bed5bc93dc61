"""Analytical derivatives of constrained forward dynamics, by the implicit-function theorem.

Both forms of constrained forward dynamics in linkdyn solve the Lagrange-multiplier form of the
equations of motion (Featherstone 2008, ch. 8)

    M(q) q'' + b(q, v) - tau - J(q)^T lambda = 0                      (F)
    J(q) q'' + J'(q, v) v + 2 alpha J(q) v + s beta^2 c(q) = 0       (G)

(Baumgarte 1972; s = -1 for the loops' error e = log6(aMb), which decreases along J v, s = +1
for the errors of the constraints with a target).
With x any of q (tangent space), v, tau, differentiating (F) and (G) at the solution gives the
KKT system of the derivatives (Carpentier and Mansard 2018, sec. IV for the unconstrained case;
Carpentier 2018 and Sathya and Carpentier 2024 for the constrained one):

    [ M  -J^T ] [ dq''/dx     ]     [ d(M q'' + b - J^T lambda - tau)/dx ]
    [ J   0   ] [ dlambda/dx  ] = - [ d(J q'' + J' v + Baumgarte)/dx     ]

where every partial derivative on the right is taken at fixed q'' and lambda:

* d(M q'' + b)/dq, d/dv at a = q'' are :func:`linkdyn.rnea_derivatives` (Carpentier and Mansard
  2018, Algorithm 1); d(J^T lambda)/dq comes with them, as the derivative of RNEA's external
  forces: each constraint force is a world wrench f on a body i, passed to RNEA in the body's
  frame; RNEA holds it fixed in that frame, and what the force really does as q moves (a world
  direction that stays put while the point moves, a loop force that turns with the other body)
  is added as J_i^T (df/dq_k - J_k x* f) (J_k the world twist of dof k, zero off the support
  of body i);
* the rows' accelerations J q'' + J' v and velocities J v are differentiated through the world
  velocity and spatial acceleration of the bodies and their q-, v-derivatives (the forward pass
  of Carpentier and Mansard 2018, Algorithm 1; :mod:`linkdyn.kinematics.derivatives`): a point
  r of body i at x moves with x' = v_o + w x x and x'' = a_o + w' x x + w x x'; a loop's
  relative velocity in its virtual link's frame A is AX_o (v_a - v_b), its acceleration
  AX_o (a_a - a_b - v_a x (v_a - v_b));
* the errors: d log6(aMb)/dq = Jr^-1(e) BX_o (J_b - J_a) and d log3(R R_t^T)/dq =
  Jl^-1(e) J_ang with the inverse right and left Jacobians of SE(3) and SO(3) (Barfoot 2017,
  ch. 7: the closed forms of Jl and of its block Q).

**Redundant constraints.**  q'' is unique whenever M is positive definite on the null space of
J, however many rows are dependent, and so is its derivative: the KKT above is solved on the
r = rank(J) orthonormal rows U_r^T J (J = U S V^T, rank at the relative tolerance
:data:`linkdyn.loops.kinematics.RANK_TOL`).  lambda is not unique there; what is differentiated is
the least-norm lambda = (J^T)^+ (M q'' + b - tau), the one ``linkdyn.constrained_dynamics`` (its
``lstsq`` and its compiled pseudo-inverse) and :func:`linkdyn.loops.constraint_forces` return,
by the derivative of the pseudo-inverse (Golub and Pereyra 1973, Theorem 4.3):

    dlambda = U_r dmu + (1 - U_r U_r^T) dJ (J^+ lambda)

(dmu the multipliers of the rank-r KKT; the second term, for x = q only, differentiates the
rows at the velocity w = J^+ lambda).  This needs the dependent rows to agree with the others (J q'' = rhs
solvable), as the loops' and the consistent constraints' do; where they contradict each other
(two constraints holding one point, with a velocity that moves it) the forward dynamics returns a
least-squares compromise, and a ValueError says so.  Without dependent rows the second term vanishes and
lambda is the one every forward dynamics returns; with them, ``ld.loops.constrained_dynamics(...,
forces=True)`` returns another split (its pivoted Cholesky's), whose derivative is not this one.

**Compiled path.**  Geometric constraints on a model without loops, and the loops alone, run in
one compiled kernel per state (:mod:`linkdyn.constraints._derivative_kernels`): the forward
solve of ``constrained_dynamics`` itself, RNEA's derivatives at a = q'' with the constraint
forces as external forces, the rows' derivatives from that same pass's world velocities,
accelerations and dof columns, and the KKT above through the tree-sparse factor of M and the
Schur complement J M^-1 J^T (Featherstone 2008, sec. 6.5); a stack runs as one parallel compiled
loop.  The kernel declines dependent rows (the least-norm lambda above), a singular M (the
massless cut joints of ``ld.loops``) and bad input; those states, and constraints together with
a model's loops, take the NumPy implementation below (``_one_state``), which
is kept as the reference the kernel is tested against.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple, Sequence

import numba
import numpy as np

from .._api import SERIAL_BELOW, as_states, raise_for_status
from ..dynamics.derivatives import rnea_derivatives
from ..dynamics.rnea import rnea
from ..kinematics.derivatives import _fk_derivatives_kernel

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .dynamics import Constraint
    from ..model.model import Model

__all__ = ["ConstrainedDynamicsDerivatives", "constrained_dynamics_derivatives"]




class ConstrainedDynamicsDerivatives(NamedTuple):
    """Partial derivatives of constrained forward dynamics (q'', lambda)(q, v, tau): ``ddq_dq``,
    ``ddq_dv``, ``ddq_dtau`` (nv, nv) and ``dlambda_dq``, ``dlambda_dv``, ``dlambda_dtau``
    (m, nv), m the rows of lambda; q-derivatives in the tangent space (column k along
    ``integrate(q, e e_k)``).  A stack of N states gives (N, ...) each.  It unpacks as the
    tuple Pinocchio's ``computeConstraintDynamicsDerivatives`` returns."""
    ddq_dq: np.ndarray
    ddq_dv: np.ndarray
    ddq_dtau: np.ndarray
    dlambda_dq: np.ndarray
    dlambda_dv: np.ndarray
    dlambda_dtau: np.ndarray


# ---------------------------------------------------------------------------------------
# small spatial algebra on columns (6, n) / vectors, [linear; angular]
def _skew(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _c3(a, b):
    """a x b for 3-vectors or columns (3, n) of one of them (np.cross is slow on small arrays)."""
    if a.ndim == 1 and b.ndim == 1:
        return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])
    return _skew(a) @ b if a.ndim == 1 else -(_skew(b) @ a)


def _crm(x):
    """The 6x6 matrix of x x (motion cross product), x = [v; w]."""
    out = np.zeros((6, 6))
    out[:3, :3] = out[3:, 3:] = _skew(x[3:])
    out[:3, 3:] = _skew(x[:3])
    return out


def _mc(x, y):
    """x x y (motion cross product) for 6-vectors or columns (6, n) of one of them."""
    if x.ndim == 1 and y.ndim == 1:
        return _crm(x) @ y
    return _crm(x) @ y if x.ndim == 1 else -(_crm(y) @ x)


def _fc(X, f):
    """X[:, k] x* f (force cross product) for motion columns X (6, n) and a wrench f = [f; n]:
    x x* f = [w x f; w x n + v x f] = [[0, -[f]], [-[f], -[n]]] x."""
    B = np.zeros((6, 6))
    B[:3, 3:] = B[3:, :3] = -_skew(f[:3])
    B[3:, 3:] = -_skew(f[3:])
    return B @ X


def _inv_act(R, p, Y):
    """oX_f^-1 Y for motion columns Y (6, n) and the pose (R, p): [R^T (y_lin - p x y_ang); R^T y_ang]."""
    out = np.empty(Y.shape)
    out[:3] = R.T @ (Y[:3] - _c3(p, Y[3:]))
    out[3:] = R.T @ Y[3:]
    return out


def _coeffs(th):
    """(1 - cos t) / t^2, (t - sin t) / t^3, (t^2 + 2 cos t - 2) / (2 t^4),
    (2 t - 3 sin t + t cos t) / (2 t^5) and 1/t^2 - (1 + cos t) / (2 t sin t), by series near 0."""
    if th < 1e-2:
        t2 = th * th
        return (0.5 - t2 / 24.0, 1.0 / 6.0 - t2 / 120.0, 1.0 / 24.0 - t2 / 720.0, 1.0 / 120.0 - t2 / 2520.0,
                1.0 / 12.0 + t2 / 720.0)
    s, c = math.sin(th), math.cos(th)
    return ((1.0 - c) / th ** 2, (th - s) / th ** 3, (th * th + 2.0 * c - 2.0) / (2.0 * th ** 4),
            (2.0 * th - 3.0 * s + th * c) / (2.0 * th ** 5), 1.0 / th ** 2 - (1.0 + c) / (2.0 * th * s))


def _jlog3_left(w):
    """Jl^-1(w): log3(exp(d) exp(w)) = w + Jl^-1(w) d + O(d^2) (Barfoot 2017, ch. 7)."""
    W = _skew(w)
    return np.eye(3) - 0.5 * W + _coeffs(float(np.linalg.norm(w)))[4] * (W @ W)


def _jlog6_right(e):
    """Jr^-1(e) of SE(3), e = [rho; phi]: log6(exp(e) exp(d)) = e + Jr^-1(e) d + O(d^2); Jr(e) =
    Jl(-e) = [[Jl3(-phi), Q(-rho, -phi)], [0, Jl3(-phi)]] (Barfoot 2017, ch. 7)."""
    rho, phi = -np.asarray(e[:3]), -np.asarray(e[3:])
    th = float(np.linalg.norm(phi))
    a, b, c, d, k = _coeffs(th)
    P, Rh = _skew(phi), _skew(rho)
    PR, RP, PP = P @ Rh, Rh @ P, P @ P
    Q = (0.5 * Rh + b * (PR + RP + P @ Rh @ P) + c * (PP @ Rh + Rh @ PP - 3.0 * P @ Rh @ P)
         + d * (P @ Rh @ PP + PP @ Rh @ P))
    Jl3inv = np.eye(3) - 0.5 * P + k * PP             # Jl3(phi)^-1 with phi = -e_phi: Jr3(e_phi)^-1
    out = np.zeros((6, 6))
    out[:3, :3] = out[3:, 3:] = Jl3inv
    out[:3, 3:] = -Jl3inv @ Q @ Jl3inv
    return out


# ---------------------------------------------------------------------------------------
# per-state body kinematics and their derivatives (world frame)
class _Body(NamedTuple):
    R: np.ndarray        # (3, 3) world rotation
    p: np.ndarray        # (3,) world position
    v: np.ndarray        # (6,) world spatial velocity (at the world origin)
    a: np.ndarray        # (6,) world spatial acceleration, no gravity
    J: np.ndarray        # (6, nv) world twists of the dofs supporting the body (zero elsewhere)
    v_q: np.ndarray      # (6, nv) d v / dq
    a_q: np.ndarray      # (6, nv) d a / dq
    a_v: np.ndarray      # (6, nv) d a / dv  (d v/dv = d a/da = J)


class _Kin:
    """Body kinematics at one state (q, v, a), computed on demand per body."""

    def __init__(self, model, q, v, a):
        self.model, self.q, self.v, self.a = model, q, v, a
        self._cache, self._points = {}, {}

    def __call__(self, i):
        hit = self._cache.get(i)
        if hit is not None:
            return hit
        model = self.model
        nv = model.nv
        if i == 0:
            z6, z = np.zeros(6), np.zeros((6, nv))
            out = _Body(np.eye(3), np.zeros(3), z6, z6, z, z, z, z)
        else:
            nb = model.nbody
            ov, oa = np.zeros((nb, 6)), np.zeros((nb, 6))
            cols = np.zeros((4, nv, 6))
            fpose = np.empty((4, 3))
            st = _fk_derivatives_kernel(model._mi, model._mf, model._ws, self.q, self.v, self.a, np.int64(i),
                                        _EYE3, _ZERO3, ov, oa, cols, fpose, np.zeros(132))
            raise_for_status(model, st, q=self.q, v=self.v, a=self.a)
            J, dV, dA, dAv = np.ascontiguousarray(cols.transpose(0, 2, 1))
            vb, ab = ov[i], oa[i]
            out = _Body(fpose[:3].copy(), fpose[3].copy(), vb.copy(), ab.copy(), J,
                        dV + _mc(J, vb), dA + _mc(J, ab) + _mc(dV, vb),
                        dAv + _mc(J, vb))
        self._cache[i] = out
        return out

    def point(self, i, r):
        """:func:`_point` of the point r of body i, kept for the rows and the forces."""
        key = (i, r.tobytes())
        hit = self._points.get(key)
        if hit is None:
            hit = self._points[key] = _point(self(i), r)
        return hit


_EYE3 = np.eye(3)
_ZERO3 = np.zeros(3)


class _Point(NamedTuple):
    x: np.ndarray        # world position
    xd: np.ndarray       # velocity
    xdd: np.ndarray      # classical acceleration
    Jp: np.ndarray       # (3, nv) dx/dq = dx'/dv = dx''/da
    xd_q: np.ndarray     # (3, nv)
    xdd_q: np.ndarray    # (3, nv)
    xdd_v: np.ndarray    # (3, nv)


def _point(B, r):
    """The point r (body coordinates) of the body B and the derivatives of its motion."""
    x = B.p + B.R @ r
    w, wd = B.v[3:], B.a[3:]
    xd = B.v[:3] + _c3(w, x)
    xdd = B.a[:3] + _c3(wd, x) + _c3(w, xd)
    Jp = B.J[:3] + _c3(B.J[3:], x)
    xd_q = B.v_q[:3] + _c3(B.v_q[3:], x) + _c3(w, Jp)
    xdd_q = (B.a_q[:3] + _c3(B.a_q[3:], x) + _c3(wd, Jp) + _c3(B.v_q[3:], xd)
             + _c3(w, xd_q))
    xdd_v = B.a_v[:3] + _c3(B.a_v[3:], x) + _c3(B.J[3:], xd) + _c3(w, Jp)
    return _Point(x, xd, xdd, Jp, xd_q, xdd_q, xdd_v)


def _point_wrench(x, Jp, f, df):
    """World wrench of the force f (3,) at x and its q-derivative, from df = df/dq (3, nv)."""
    return np.concatenate([f, _c3(x, f)]), np.concatenate([df, _c3(Jp, f) + _c3(x, df)])


# ---------------------------------------------------------------------------------------
# the rows: each gives, at a state, its terms for (F) and (G)
class _Rows(NamedTuple):
    J: np.ndarray        # (m, nv)
    G_q: np.ndarray      # (m, nv) d(J q'' + J' v)/dq
    G_v: np.ndarray      # (m, nv) d(J q'' + J' v)/dv
    V_q: np.ndarray      # (m, nv) d(J v)/dq
    E_q: np.ndarray | None    # (m, nv) s dc/dq (None: no error term)


def _rows_point(kin, body, r, target):
    P = kin.point(body, r)
    return _Rows(P.Jp, P.xdd_q, P.xdd_v, P.xd_q, None if target is None else P.Jp), P


def _forces_point(kin, body, r, lam):
    P = kin.point(body, r)
    f, df = _point_wrench(P.x, P.Jp, lam, np.zeros((3, kin.model.nv)))
    return [(body, f, df)]


def _rows_plane(kin, body, r, n):
    P = kin.point(body, r)
    return _Rows(*(n[None, :] @ X for X in (P.Jp, P.xdd_q, P.xdd_v, P.xd_q, P.Jp)))


def _forces_plane(kin, body, r, n, lam):
    return _forces_point(kin, body, r, n * lam[0])


def _rows_frame(kin, body, R_f, p_f, target):
    B = kin(body)
    P = kin.point(body, p_f)
    J = np.concatenate([P.Jp, B.J[3:]])
    G_q = np.concatenate([P.xdd_q, B.a_q[3:]])
    G_v = np.concatenate([P.xdd_v, B.a_v[3:]])
    V_q = np.concatenate([P.xd_q, B.v_q[3:]])
    E_q = None
    if target is not None:
        from ..spatial import log3
        e = log3(B.R @ R_f @ target[:3, :3].T)
        E_q = np.concatenate([P.Jp, _jlog3_left(e) @ B.J[3:]])
    return _Rows(J, G_q, G_v, V_q, E_q)


def _forces_frame(kin, body, p_f, lam):
    P = kin.point(body, p_f)
    f, df = _point_wrench(P.x, P.Jp, lam[:3], np.zeros((3, kin.model.nv)))
    f[3:] += lam[3:]
    return [(body, f, df)]


def _distance_terms(kin, ba, ra, bb, rb):
    Pa, Pb = kin.point(ba, ra), kin.point(bb, rb)
    d = Pa.x - Pb.x
    L = float(np.linalg.norm(d))
    if not L > 0:
        raise ValueError("Distance: the two points coincide; the direction of the rod is undefined")
    u = d / L
    D = Pa.Jp - Pb.Jp
    Du = (D - np.outer(u, u @ D)) / L
    return Pa, Pb, L, u, D, Du


def _rows_distance(kin, ba, ra, bb, rb):
    Pa, Pb, L, u, D, Du = _distance_terms(kin, ba, ra, bb, rb)
    dd, ddd = Pa.xd - Pb.xd, Pa.xdd - Pb.xdd
    dd_q, ddd_q, ddd_v = Pa.xd_q - Pb.xd_q, Pa.xdd_q - Pb.xdd_q, Pa.xdd_v - Pb.xdd_v
    ud = u @ dd
    rest = dd @ dd - ud * ud
    ud_q = dd @ Du + u @ dd_q
    # C = u . d'' + (|d'|^2 - (u . d')^2) / L
    G_q = ddd @ Du + u @ ddd_q + (2.0 * dd @ dd_q - 2.0 * ud * ud_q) / L - rest / L ** 2 * (u @ D)
    G_v = u @ ddd_v + (2.0 * dd @ D - 2.0 * ud * (u @ D)) / L
    row = u @ D
    return _Rows(row[None], G_q[None], G_v[None], ud_q[None], row[None])


def _forces_distance(kin, ba, ra, bb, rb, lam):
    Pa, Pb, L, u, D, Du = _distance_terms(kin, ba, ra, bb, rb)
    fa, dfa = _point_wrench(Pa.x, Pa.Jp, lam[0] * u, lam[0] * Du)
    fb, dfb = _point_wrench(Pb.x, Pb.Jp, -lam[0] * u, -lam[0] * Du)
    return [(ba, fa, dfa), (bb, fb, dfb)]


def _loop_frames(kin, k):
    """(body a, body b, R_A, p_A, R_B, p_B) of loop k (virtual link's frame A, real link's B)."""
    li, lf = kin.model._loop_i, kin.model._loop_f
    a, b = int(li[k, 0]), int(li[k, 1])
    Ba, Bb = kin(a), kin(b)
    RA = Ba.R @ lf[k, :9].reshape(3, 3)
    pA = Ba.p + Ba.R @ lf[k, 9:12]
    RB = Bb.R @ lf[k, 12:21].reshape(3, 3)
    pB = Bb.p + Bb.R @ lf[k, 21:24]
    return a, b, RA, pA, RB, pB


def _rows_loop(kin, k, sign):
    a, b, RA, pA, RB, pB = _loop_frames(kin, k)
    Ba, Bb = kin(a), kin(b)
    nu = Ba.v - Bb.v
    alpha = Ba.a - Bb.a
    J = _inv_act(RA, pA, Ba.J - Bb.J)
    V_q = _inv_act(RA, pA, Ba.v_q - Bb.v_q - _mc(Ba.J, nu))
    acc = alpha - _mc(Ba.v, nu)
    G_q = _inv_act(RA, pA, Ba.a_q - Bb.a_q - _mc(Ba.v_q, nu) - _mc(Ba.v, Ba.v_q - Bb.v_q)
                   - _mc(Ba.J, acc))
    G_v = _inv_act(RA, pA, Ba.a_v - Bb.a_v - _mc(Ba.J, nu) - _mc(Ba.v, Ba.J - Bb.J))
    E_q = None
    if sign != 0.0:
        from ..spatial import log6
        Rab, pab = RA.T @ RB, RA.T @ (pB - pA)
        e = log6(Rab, pab)
        E_q = sign * (_jlog6_right(e) @ _inv_act(RB, pB, Bb.J - Ba.J))
    return _Rows(J, G_q, G_v, V_q, E_q)


def _forces_loop(kin, k, lam):
    a, b, RA, pA, RB, pB = _loop_frames(kin, k)
    fl, fn = RA @ lam[:3], RA @ lam[3:]
    f = np.concatenate([fl, fn + _c3(pA, fl)])         # oX_A^* lambda
    df = _fc(kin(a).J, f)                     # it turns with the virtual link
    return [(a, f, df), (b, -f, -df)]


# ---------------------------------------------------------------------------------------
# the blocks of a problem: (size, rows(kin, with_error) -> _Rows, forces(kin, lam) -> [(body, f, df)])
class _Block(NamedTuple):
    size: int
    rows: object
    forces: object


def _geometric_blocks(model, constraints, loop_sign):
    from . import dynamics as C
    from .dynamics import _frame_point
    blocks = []
    for k, c in enumerate(constraints):
        t = type(c)
        if t is C.PointFixed:
            body, r, _, _ = _frame_point(model, c.frame, c.point)
            tgt = c.target
            blocks.append(_Block(3, lambda kin, err, body=body, r=r, tgt=tgt: _rows_point(kin, body, r, tgt if err else None)[0],
                                 lambda kin, lam, body=body, r=r: _forces_point(kin, body, r, lam)))
        elif t is C.PointOnPlane:
            body, r, _, _ = _frame_point(model, c.frame, c.point)
            n = np.asarray(c.normal, dtype=float)
            n = n / np.linalg.norm(n)
            blocks.append(_Block(1, lambda kin, err, body=body, r=r, n=n: _rows_plane(kin, body, r, n),
                                 lambda kin, lam, body=body, r=r, n=n: _forces_plane(kin, body, r, n, lam)))
        elif t is C.FrameFixed:
            body, _, R_f, p_f = _frame_point(model, c.frame, (0.0, 0.0, 0.0))
            tgt = None if c.target is None else np.asarray(c.target, dtype=float)
            blocks.append(_Block(6, lambda kin, err, body=body, R_f=R_f, p_f=p_f, tgt=tgt:
                                 _rows_frame(kin, body, R_f, p_f, tgt if err else None),
                                 lambda kin, lam, body=body, p_f=p_f: _forces_frame(kin, body, p_f, lam)))
        elif t is C.Distance:
            ba, ra, _, _ = _frame_point(model, c.frame_a, c.point_a)
            bb, rb, _, _ = _frame_point(model, c.frame_b, c.point_b)
            blocks.append(_Block(1, lambda kin, err, ba=ba, ra=ra, bb=bb, rb=rb: _rows_distance(kin, ba, ra, bb, rb),
                                 lambda kin, lam, ba=ba, ra=ra, bb=bb, rb=rb: _forces_distance(kin, ba, ra, bb, rb, lam)))
        elif isinstance(c, C.Constraint):
            raise TypeError(f"constraints[{k}]: {t.__name__} cannot be differentiated (only PointFixed, PointOnPlane, "
                            "FrameFixed and Distance have analytical derivatives here)")
        else:
            raise TypeError(f"constraints[{k}]: expected a linkdyn.constraints.Constraint "
                            f"(PointFixed, PointOnPlane, FrameFixed, Distance), got {t.__name__}")
    blocks.extend(_loop_blocks(model, loop_sign))
    return blocks


def _loop_blocks(model, sign):
    return [_Block(6, lambda kin, err, k=k: _rows_loop(kin, k, sign if err else 0.0),
                   lambda kin, lam, k=k: _forces_loop(kin, k, lam)) for k in range(model.nloops)]


def _assemble(blocks, kin, nv, with_error):
    parts = [blk.rows(kin, with_error) for blk in blocks]
    J = np.concatenate([p.J for p in parts])
    G_q = np.concatenate([p.G_q for p in parts])
    G_v = np.concatenate([p.G_v for p in parts])
    V_q = np.concatenate([p.V_q for p in parts])
    E_q = np.concatenate([p.E_q if p.E_q is not None else np.zeros_like(p.J) for p in parts])
    return J, G_q, G_v, V_q, E_q


def _one_state(model, blocks, q, v, tau, solved, baumgarte):
    """The six derivatives at one state; ``solved`` = (q'' of the forward dynamics, a function
    giving its largest row residual |J q'' + J' v + Baumgarte|)."""
    qdd, residual = solved
    nv = model.nv
    alpha, beta = (float(x) for x in baumgarte)
    kin = _Kin(model, q, v, qdd)
    J, G_q, G_v, V_q, E_q = _assemble(blocks, kin, nv, beta != 0.0)
    m = J.shape[0]
    # the least-norm lambda: (J^T)^+ (M q'' + b - tau)
    U, S, Vt = np.linalg.svd(J, full_matrices=False) if m else (np.zeros((0, 0)), np.zeros(0), np.zeros((0, nv)))
    r = int(np.sum(S > _rank_tol() * S[0])) if m and S[0] > 0 else 0
    Ur, Sr, Vr = U[:, :r], S[:r], Vt[:r]
    gen = rnea(model, q, v, qdd) - tau
    lam = Ur @ ((Vr @ gen) / Sr)
    # (F): d(M q'' + b - J^T lambda)/dq, dv at fixed q'', lambda; RNEA takes the constraint forces
    # as external forces fixed in the bodies' frames, the rest is added: J_i^T (df/dq - J_i x* f)
    fext = np.zeros((model.nbody, 6))
    corr = np.zeros((nv, nv))
    o = 0
    for blk in blocks:
        for body, f, df in blk.forces(kin, lam[o:o + blk.size]):
            if body == 0:
                continue
            B = kin(body)
            fext[body, :3] += B.R.T @ f[:3]
            fext[body, 3:] += B.R.T @ (f[3:] - _c3(B.p, f[:3]))
            corr += B.J.T @ (df - _fc(B.J, f))
        o += blk.size
    dtau_dq, dtau_dv, M = rnea_derivatives(model, q, v, qdd, fext)
    F_q = dtau_dq - corr
    # (G), with Baumgarte's terms
    Gq = G_q + 2.0 * alpha * V_q + beta * beta * E_q
    Gv = G_v + 2.0 * alpha * J
    # the KKT of the derivatives on the r independent combinations U_r^T J of the rows
    Jr = Ur.T @ J
    K = np.zeros((nv + r, nv + r))
    K[:nv, :nv] = M
    K[:nv, nv:] = -Jr.T
    K[nv:, :nv] = Jr
    rhs = np.zeros((nv + r, 3 * nv))
    rhs[:nv, :nv] = -F_q
    rhs[:nv, nv:2 * nv] = -dtau_dv
    rhs[:nv, 2 * nv:] = np.eye(nv)
    rhs[nv:, :nv] = -(Ur.T @ Gq)
    rhs[nv:, nv:2 * nv] = -(Ur.T @ Gv)
    try:
        sol = np.linalg.solve(K, rhs)
    except np.linalg.LinAlgError:
        raise ValueError("the constrained dynamics is singular here: M is not positive definite on the motions "
                         "the constraints allow") from None
    dqdd = sol[:nv]
    dlam = Ur @ sol[nv:]
    if r < m:
        res = residual()
        if res > 1e-8 * (1.0 + np.abs(J).max() * np.abs(qdd).max()):
            raise ValueError(f"the {m - r} dependent constraint rows contradict the others here (residual {res:.3g}; "
                             "e.g. a redundant constraint with a velocity that violates the constraints): the forward "
                             "dynamics returns a least-squares compromise, which is not differentiated here")
        # the least-norm lambda's extra term (1 - U_r U_r^T) dJ/dq w, w = J^+ lambda
        w = Vr.T @ ((Ur.T @ lam) / Sr)
        kin_w = _Kin(model, q, w, np.zeros(nv))
        Vw_q = np.concatenate([blk.rows(kin_w, False).V_q for blk in blocks])
        dlam[:, :nv] += Vw_q - Ur @ (Ur.T @ Vw_q)
    return dqdd[:, :nv], dqdd[:, nv:2 * nv], dqdd[:, 2 * nv:], dlam[:, :nv], dlam[:, nv:2 * nv], dlam[:, 2 * nv:]


def _rank_tol():
    from ..loops.kinematics import RANK_TOL
    return RANK_TOL


def _check_baumgarte(baumgarte):
    if type(baumgarte) is tuple and len(baumgarte) == 2 and type(baumgarte[0]) is float and type(baumgarte[1]) is float:
        alpha, beta = baumgarte
        if math.isfinite(alpha) and math.isfinite(beta):
            return baumgarte
    try:
        alpha, beta = (float(x) for x in baumgarte)
    except (TypeError, ValueError):
        raise ValueError(f"baumgarte: expected two numbers (alpha, beta), got {baumgarte!r}") from None
    if not (math.isfinite(alpha) and math.isfinite(beta)):
        raise ValueError(f"baumgarte: expected finite numbers, got {baumgarte!r}")
    return alpha, beta


def _run(model, blocks, q, v, tau, baumgarte, forward):
    """The derivatives on one state or state by state on a stack."""
    args = as_states(model, q=q, v=v, tau=tau)
    if args.batch is None:
        qk, vk, tk = (np.ascontiguousarray(x) for x in (args.q, args.v, args.tau))
        return ConstrainedDynamicsDerivatives(*_one_state(model, blocks, qk, vk, tk, forward(qk, vk, tk), baumgarte))
    rows = []
    for k in range(args.batch):
        qk, vk, tk = (np.ascontiguousarray(x[k] if x.shape[0] > 1 else x[0]) for x in (args.q, args.v, args.tau))
        try:
            rows.append(_one_state(model, blocks, qk, vk, tk, forward(qk, vk, tk), baumgarte))
        except ValueError as exc:
            raise ValueError(f"state {k} of the stack: {exc}") from None
    return ConstrainedDynamicsDerivatives(*(np.stack(x) for x in zip(*rows)))


# ---------------------------------------------------------------------------------------
# the compiled path (linkdyn._kernels.constraint_derivatives): one kernel per state, a parallel
# loop on a stack; the NumPy implementation above answers the states the kernel declines
_ENTRIES = []


def _entries():
    """The single-state entry of the kernel, made on first use."""
    if not _ENTRIES:
        from numba import types as nt

        from .._api import OUT2, PACKED, VEC, WS, Entry
        from . import _derivative_kernels as K
        from ..dynamics.cholesky import LAM
        LI = nt.Array(nt.int64, 2, "C", readonly=True)
        LF = nt.Array(nt.float64, 2, "C", readonly=True)
        _ENTRIES.append(Entry(K.derivatives_kernel, nt.int64, PACKED, LAM, WS, LI, LF, WS, WS, WS, VEC, VEC, VEC,
                              nt.float64, nt.float64, OUT2))
    return _ENTRIES[0]


def _scratch(model, m):
    """(the RNEA-derivative workspace, the kernel's per-state scratch) of single-state calls with
    m rows, kept on the model."""
    cache = getattr(model, "_cdd_scratch", None)
    if cache is None:
        cache = model._cdd_scratch = {}
    hit = cache.get(m)
    if hit is None:
        from ._derivative_kernels import sw_size
        from ..dynamics.derivatives import _own_workspace
        hit = cache[m] = (_own_workspace(model), np.zeros(sw_size(model.nbody, model.nq, model.nv, m)))
    return hit


def _split(out, nv):
    """The six derivatives as views of the kernel's out (..., nv + m, 3 nv)."""
    if out.ndim == 2:
        return ConstrainedDynamicsDerivatives(out[:nv, :nv], out[:nv, nv:2 * nv], out[:nv, 2 * nv:],
                                              out[nv:, :nv], out[nv:, nv:2 * nv], out[nv:, 2 * nv:])
    X, Y = out[:, :nv], out[:, nv:]
    return ConstrainedDynamicsDerivatives(X[..., :nv], X[..., nv:2 * nv], X[..., 2 * nv:],
                                          Y[..., :nv], Y[..., nv:2 * nv], Y[..., 2 * nv:])


_ND, _F64 = np.ndarray, np.dtype(np.float64)
_NO_LW = np.zeros(1)           # the loop workspace of a model without loops (unused)
_NO_CW = np.zeros(2)           # the constraint buffer of the loops' form (unused)


def _compiled(model, form, m, cw, lw, q, v, tau, baumgarte, reference):
    """The kernel on one state or a stack: ``form`` 0 (the constraints packed in ``cw``) or 1 (the
    loops, ``lw`` their workspace); ``reference(q, v, tau)``: the NumPy implementation on one
    state, for the states the kernel declines (dependent rows, M singular, bad input: it names
    the error)."""
    nv = model.nv
    alpha, beta = baumgarte
    entry = _ENTRIES[0] if _ENTRIES else _entries()
    before = (form, model._packed, model.dof_parent, cw, model._loop_i, model._loop_f, lw)
    if (type(q) is _ND and type(v) is _ND and type(tau) is _ND and q.dtype is _F64 and v.dtype is _F64
            and tau.dtype is _F64 and q.ndim == 1 and v.ndim == 1 and tau.ndim == 1):
        out = np.empty((nv + m, 3 * nv))
        dws, sw = _scratch(model, m)
        if entry.fn(*before, dws, sw, q, v, tau, alpha, beta, out) == 0:
            return _split(out, nv)
    args = as_states(model, q=q, v=v, tau=tau)
    if args.batch is None:
        out = np.empty((nv + m, 3 * nv))
        dws, sw = _scratch(model, m)
        if entry(*before, dws, sw, args.q, args.v, args.tau, alpha, beta, out) == 0:
            return _split(out, nv)
        return ConstrainedDynamicsDerivatives(*reference(*(np.ascontiguousarray(x) for x in (args.q, args.v, args.tau))))
    n = args.batch
    out = np.empty((n, nv + m, 3 * nv))
    status = np.empty(n, dtype=np.int64)
    if n < SERIAL_BELOW:
        dws, sw = _scratch(model, m)
        for k in range(n):
            qk, vk, tk = (x[k] if x.shape[0] > 1 else x[0] for x in (args.q, args.v, args.tau))
            status[k] = entry(*before, dws, sw, qk, vk, tk, alpha, beta, out[k])
    else:
        from . import _derivative_kernels as K
        from ..dynamics.derivatives import _dws_size
        T = numba.get_num_threads()
        DW = np.empty((T, _dws_size(model.nbody, nv)))
        SW = np.zeros((T, K.sw_size(model.nbody, model.nq, nv, m)))
        K.derivatives_batch(form, np.tile(model._packed, (T, 1)), model.dof_parent, np.tile(cw, (T, 1)), model._loop_i,
                            model._loop_f, np.zeros((T, lw.size)), DW, SW, args.q, args.v, args.tau, alpha, beta, out,
                            status)
    for k in np.flatnonzero(status):
        qk, vk, tk = (np.ascontiguousarray(x[k] if x.shape[0] > 1 else x[0]) for x in (args.q, args.v, args.tau))
        try:
            D = reference(qk, vk, tk)
        except ValueError as exc:
            raise ValueError(f"state {k} of the stack: {exc}") from None
        out[k, :nv, :nv], out[k, :nv, nv:2 * nv], out[k, :nv, 2 * nv:] = D[0], D[1], D[2]
        out[k, nv:, :nv], out[k, nv:, nv:2 * nv], out[k, nv:, 2 * nv:] = D[3], D[4], D[5]
    return _split(out, nv)


def _geometric_reference(model, constraints, baumgarte):
    """The NumPy implementation of one state, for :func:`_compiled`."""
    from .dynamics import constrained_dynamics
    blocks = []

    def one(q, v, tau):
        if not blocks:
            blocks.extend(_geometric_blocks(model, constraints, -1.0))
        res = constrained_dynamics(model, q, v, tau, constraints, baumgarte)
        return _one_state(model, blocks, q, v, tau, (res.qdd, lambda: res.residual), baumgarte)
    return one


# ---------------------------------------------------------------------------------------
# public functions
def constrained_dynamics_derivatives(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike,
                                     constraints: Sequence[Constraint] = (),
                                     baumgarte: tuple[float, float] = (0.0, 0.0)) -> ConstrainedDynamicsDerivatives:
    """Partial derivatives of :func:`linkdyn.constrained_dynamics` ``(model, q, v, tau, constraints,
    baumgarte)``: of q'' and of the multipliers lambda (every constraint's rows in the order given,
    then the model's loops, 6 rows each) with respect to q (tangent space), v and tau, as a
    :class:`ConstrainedDynamicsDerivatives` (``ddq_dq, ddq_dv, ddq_dtau, dlambda_dq, dlambda_dv,
    dlambda_dtau``), by the implicit-function theorem on the Lagrange-multiplier form (module
    docstring; Carpentier and Mansard 2018; Sathya and Carpentier 2024).

    ``constraints``: PointFixed, PointOnPlane, FrameFixed and Distance (a Custom constraint has
    no analytical derivative: TypeError).  Where rows are dependent, lambda is the least-norm
    split, which is what :func:`linkdyn.constrained_dynamics` returns.  q (nq,) or (N, nq), v and
    tau (nv,) or (N, nv) (a single state next to a stack is shared); a stack gives (N, nv, nv) and
    (N, m, nv).
    """
    from . import dynamics as C
    if model._full is not None:
        raise NotImplementedError(f"model {model.name!r} has gear couplings: the derivatives of its constrained "
                                  "dynamics are not implemented yet (linkdyn.constrained_dynamics itself works; "
                                  "differentiate it numerically, or use the model built with mimic=False and the "
                                  "couplings as linkdyn.constraints.Custom rows)")
    constraints = tuple(constraints)
    baumgarte = _check_baumgarte(baumgarte)
    if constraints and not model.loops:
        pk = C._cached_packing(model, constraints)
        if pk is not None:
            if pk.edits != C._EDITS[0]:          # a constraint's field was assigned: pack anew
                if tuple(c._version for c in pk.constraints) != pk.versions:
                    fresh = C._pack(model, pk.constraints)
                    pk.cw, pk.versions, pk.slices, pk.nout = fresh.cw, fresh.versions, fresh.slices, fresh.nout
                pk.edits = C._EDITS[0]
            return _compiled(model, 0, int(pk.cw[1]), pk.cw, _NO_LW, q, v, tau, baumgarte,
                             _geometric_reference(model, constraints, baumgarte))
    return _reference(model, q, v, tau, constraints, baumgarte)


def _reference(model, q, v, tau, constraints, baumgarte):
    """The NumPy implementation (every case: loops with constraints, dependent rows, M singular)."""
    from .dynamics import constrained_dynamics
    blocks = _geometric_blocks(model, constraints, -1.0)
    if not blocks:
        raise ValueError(f"constrained_dynamics_derivatives: no constraints, and model {model.name!r} has no loops "
                         "(use linkdyn.aba_derivatives)")

    def forward(q, v, tau):
        res = constrained_dynamics(model, q, v, tau, constraints, baumgarte)
        return res.qdd, lambda: res.residual
    return _run(model, blocks, q, v, tau, baumgarte, forward)
