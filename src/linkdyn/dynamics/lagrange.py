"""Lagrange's form of the equations of motion: D(q) q'' + C(q, q') q' + G(q) = tau (Spong, Hutchinson and Vidyasagar 2006
eq. 5.60), with the Coriolis matrix C of the Christoffel symbols (eqs. 5.64-5.65) computed by
a recursion over the tree, never by differentiating D.

* :func:`coriolis_matrix` C(q, v) (nv, nv), such that (Spong, Hutchinson and Vidyasagar 2006, ch. 7)

      C(q, v) v = b(q, v) - g(q)                       (the velocity terms of eq. 5.59)
      D'(q) - 2 C(q, v) is skew-symmetric               (eqs. 5.66-5.71, property 5 / eq. 5.77)

* :func:`mass_matrix_derivative` D' = dD/dt along v, which by the skew property is
  D' = C + C^T (eq. 5.77 with K = D' - 2C: K + K^T = 0);
* :func:`lagrangian_terms` (D, C, G, F) with D q'' + C q' + G + F = rnea(q, q', q''), F the joint
  friction d q' + f sign(q') (viscous friction of eq. 5.94, plus Coulomb), zero for a model
  without friction.

The recursion (the body-Jacobian form of Pinocchio's ``computeCoriolisMatrix``; Echeandia &
Wensing, "Numerical methods to compute the Coriolis matrix and Christoffel symbols for
rigid-body systems", 2021).  In world coordinates, with J_i the Jacobian of body i (columns
S_e: the motion of every dof e that supports i), I_i its inertia and v_i = J_i v its velocity,

    D = sum_i J_i^T I_i J_i                                            (Spong, Hutchinson and Vidyasagar 2006, ch. 7
    C = sum_i J_i^T (I_i J'_i + B_i J_i),   B_i = 1/2 (v_i x* I_i - I_i v_i x + (I_i v_i) x̄*)

where (f x̄*) u = u x* f.  B_i + B_i^T = v_i x* I_i - I_i v_i x = I'_i, so C + C^T = D', and
B_i v_i = v_i x* I_i v_i, so C v = sum_i J_i^T (I_i J'_i v + v_i x* I_i v_i) = b - g.  The
column e of J'_i is the true time derivative of S_e: v_k x S_e + X_k S'_e (k the body of e),
where the last term, from motion subspaces that depend on q (universal, spherical ZYX), is
what Pinocchio 4.1 leaves out (its C then breaks C v = b - g for those joints).  Entries need
the subtree sums only: for e in joint j and d in joint i in the subtree of j,

    C[d, e] = S_d^T (Ic_i S'_e + Bc_i S_e),   C[e, d] = S_e^T (Ic_i S'_d + Bc_i S_d)

with Ic_i = sum of I_k, Bc_i = 1/2 (dIc_i + (hc_i) x̄*) over the subtree of i (dI_k = I'_k, a
rigid-body inertia's derivative, 9 numbers; hc_i the subtree's momentum): one backward pass,
then three 6-vector dot products per (dof, ancestor dof) pair, like CRBA's walk to the root.

Why this is the Christoffel form (5.64)-(5.65) where v = q' (revolute, prismatic, cylindrical,
universal, spherical ZYX joints).  (a) Uniqueness: a C linear in q' with C(q, x) y = C(q, y) x
(property 4, eq. 5.75) and C + C^T = D' (property 5) is unique.  For the difference Δ_kji of
two (row k, column j, velocity i), symmetry gives Δ_kji = Δ_kij and skewness Δ_kji = -Δ_jki;
alternating them, Δ_kji = -Δ_jki = -Δ_jik = Δ_ijk = Δ_ikj = -Δ_kij = -Δ_kji, so Δ = 0.
The Christoffel C has both properties (eqs. 5.64-5.71), hence equals any other C that has them.
(b) This C has property 4.  With w_i = J_i x, u_i = J_i y:
B_i(w_i) u_i - B_i(u_i) w_i = I_i (u_i x w_i), and on a chain of 1-dof joints
J'_i(x) y - J'_i(y) x = sum_{e' before e} (x_e' y_e - y_e' x_e) S_e' x S_e = w_i x u_i, so the two
terms cancel in C(x) y - C(y) x.  Within a multi-dof joint the pairs add S'-terms that cancel
the brackets exactly when its coordinates are holonomic (v = q').  For spherical (quaternion),
planar and free joints v is a body-frame quasi-velocity, not q': C still satisfies
C v = b - g and the skew property, but C(x) y != C(y) x (the bracket terms of the
Boltzmann-Hamel equations), and the Christoffel symbols of eq. 5.64 are not defined.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .._api import as_states, run, vectors
from ..model.gears import reduced
from .._kernels.batch import chunk as _chunk, pick as _pick
from .._kernels.layout import model_sizes as _model_sizes, unpack_data as _unpack_data, unpack_model as _unpack_model
from .._kernels.passes import OK, VEL, check_inputs as _check_inputs, kinematics_pass as _kinematics_pass
from .._kernels.spatial_nb import (dot6 as _dot6, force_cross_add as _force_cross_add, motion_act as _motion_act,
    motion_cross_add as _motion_cross_add, rigid_inertia_to_parent_add as _rigid_inertia_to_parent_add)
from ..model.joints import SPHERICAL_ZYX, UNIVERSAL
from .crba import crba
from .rnea import generalized_gravity

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model

_EMPTY = np.zeros(0)
CORIOLIS, MASS_MATRIX_DERIVATIVE = 0, 1

# Fields of unpack_model / unpack_data by position (the leading entries of both tuples,
# which new fields are appended after): model
_PARENT, _JTYPE, _QADR, _VADR, _JNQ, _JNV, _AXIS, _AXIS2, _INERTIA = 0, 1, 2, 3, 4, 5, 6, 7, 10
# data
_OR, _OP, _VEL, _S, _I6, _U, _DINV, _TMP, _W6 = 0, 1, 4, 7, 10, 12, 13, 15, 16


@njit(inline="always", cache=True)
def _joint_sdot(kind, a2, S, q, qa, v, va, d, out):
    """out = d/dt S_d (body frame) of dof ``va + d`` of a joint whose motion subspace depends on
    q; zero for every other kind.  ``S`` holds the body-frame columns of ``jcalc``.

    universal:     S_0 = [0; R2^T a1]  ->  S'_0 = [0; (R2^T a1) x a2] q2'     (S'_1 = 0)
    spherical ZYX: S = [[-sy, 0, 1], [cy sx, cx, 0], [cy cx, -sx, 0]] (angular rows, Featherstone 2008
                   sec. 2.5.3), differentiated in (y, x); column d of S' with S' q' = cJ.
    """
    for k in range(6):
        out[k] = 0.0
    if kind == UNIVERSAL:
        if d == 0:
            w = v[va + 1]
            b0, b1, b2 = S[va, 3], S[va, 4], S[va, 5]
            out[3] = (b1 * a2[2] - b2 * a2[1]) * w
            out[4] = (b2 * a2[0] - b0 * a2[2]) * w
            out[5] = (b0 * a2[1] - b1 * a2[0]) * w
    elif kind == SPHERICAL_ZYX:
        cy, sy = math.cos(q[qa + 1]), math.sin(q[qa + 1])
        cx, sx = math.cos(q[qa + 2]), math.sin(q[qa + 2])
        dy, dx = v[va + 1], v[va + 2]
        if d == 0:
            out[3] = -cy * dy
            out[4] = -sy * sx * dy + cy * cx * dx
            out[5] = -sy * cx * dy - cy * sx * dx
        elif d == 1:
            out[4] = -sx * dx
            out[5] = -cx * dx


@njit(inline="always", cache=True)
def _rigid_mul(mh, Ib, x, out):
    """out = I x for I = [[m 1, -[h]x], [[h]x, Ib]] given as mh = [m, hx, hy, hz] and
    Ib = [xx, xy, yy, xz, yz, zz] (Pinocchio's order): [m x_lin - h x x_ang; h x x_lin + Ib x_ang]."""
    m, h0, h1, h2 = mh[0], mh[1], mh[2], mh[3]
    out[0] = m * x[0] - (h1 * x[5] - h2 * x[4])
    out[1] = m * x[1] - (h2 * x[3] - h0 * x[5])
    out[2] = m * x[2] - (h0 * x[4] - h1 * x[3])
    out[3] = h1 * x[2] - h2 * x[1] + Ib[0] * x[3] + Ib[1] * x[4] + Ib[3] * x[5]
    out[4] = h2 * x[0] - h0 * x[2] + Ib[1] * x[3] + Ib[2] * x[4] + Ib[4] * x[5]
    out[5] = h0 * x[1] - h1 * x[0] + Ib[3] * x[3] + Ib[4] * x[4] + Ib[5] * x[5]


@njit(inline="always", cache=True)
def _rigid_rate(mh, Ib, ov, dmh, dIb):
    """I' = v x* I - I v x of a rigid-body inertia moving with spatial velocity v = [v_O; w]
    (both in the same frame), again a rigid-body inertia, of zero mass:

        h'  = m v_O + w x h
        Ib' = [w]x Ib - Ib [w]x + 2 (h . v_O) 1 - v_O h^T - h v_O^T
    """
    m, h0, h1, h2 = mh[0], mh[1], mh[2], mh[3]
    v0, v1, v2, w0, w1, w2 = ov[0], ov[1], ov[2], ov[3], ov[4], ov[5]
    dmh[0] = 0.0
    dmh[1] = m * v0 + w1 * h2 - w2 * h1
    dmh[2] = m * v1 + w2 * h0 - w0 * h2
    dmh[3] = m * v2 + w0 * h1 - w1 * h0
    xx, xy, yy, xz, yz, zz = Ib[0], Ib[1], Ib[2], Ib[3], Ib[4], Ib[5]
    # A = [w]x Ib; Ib' = A + A^T + ...
    a00 = w1 * xz - w2 * xy
    a01 = w1 * yz - w2 * yy
    a02 = w1 * zz - w2 * yz
    a10 = w2 * xx - w0 * xz
    a11 = w2 * xy - w0 * yz
    a12 = w2 * xz - w0 * zz
    a20 = w0 * xy - w1 * xx
    a21 = w0 * yy - w1 * xy
    a22 = w0 * yz - w1 * xz
    hv = 2.0 * (h0 * v0 + h1 * v1 + h2 * v2)
    dIb[0] = 2.0 * a00 + hv - 2.0 * v0 * h0
    dIb[1] = a01 + a10 - v0 * h1 - h0 * v1
    dIb[2] = 2.0 * a11 + hv - 2.0 * v1 * h1
    dIb[3] = a02 + a20 - v0 * h2 - h0 * v2
    dIb[4] = a12 + a21 - v1 * h2 - h1 * v2
    dIb[5] = 2.0 * a22 + hv - 2.0 * v2 * h2


@njit(cache=True)
def _coriolis_kernel(mi, mf, ws, q, v, mode, out):
    """C(q, v) into ``out`` (nv, nv); with ``mode`` MASS_MATRIX_DERIVATIVE, D' = C + C^T."""
    st = _check_inputs(mi, q, v, v, False)
    if st != OK:
        return st
    mdl = _unpack_model(mi, mf)
    parent, jtype, qadr, vadr, jnv, axis2, inertia = (mdl[_PARENT], mdl[_JTYPE], mdl[_QADR], mdl[_VADR],
                                                      mdl[_JNV], mdl[_AXIS2], mdl[_INERTIA])
    nb, nq, nv = _model_sizes(mi)
    dat = _unpack_data(ws, nb, nv)
    # world frame throughout: S <- the dofs' motions S_e, dS <- S'_e, Ag <- Ic_i S_d;
    # per body (rows of B6[i]): 0 velocity, 1-2 composite inertia (mh, Ib), 3-4 its rate, 5 momentum
    oR, op, vel, S, B6, dS, Ag, tmp, W6 = (dat[_OR], dat[_OP], dat[_VEL], dat[_S], dat[_I6], dat[_U], dat[_DINV],
                                          dat[_TMP], dat[_W6])
    _kinematics_pass(mi, mf, ws, q, v, q[:0], np.int64(VEL), np.bool_(True), np.bool_(False))
    W = W6[0]
    for i in range(1, nb):
        Bi = B6[i]
        ov = Bi[0]
        _motion_act(oR[i], op[i], vel[i], ov)                         # v_i in the world
        va = vadr[i]
        for d in range(va, va + jnv[i]):
            # S'_e = v_i x S_e + X_i (dS/dt)_body  (joint_sdot reads S[va] still in the body frame:
            # only a universal joint's first column depends on S, and it comes first)
            _joint_sdot(jtype[i], axis2[i], S, q, qadr[i], v, va, d - va, tmp[0])
            _motion_act(oR[i], op[i], tmp[0], dS[d])
            _motion_act(oR[i], op[i], S[d], tmp[0])
            for k in range(6):
                S[d, k] = tmp[0, k]
            _motion_cross_add(ov, S[d], dS[d])
        # I_i in the world (m, h, Ib), its rate I'_i and momentum h_i = I_i v_i
        W[:, :] = 0.0
        _rigid_inertia_to_parent_add(oR[i], op[i], inertia[i], W)
        mh, Ib = Bi[1], Bi[2]
        mh[0], mh[1], mh[2], mh[3], mh[4], mh[5] = W[0, 0], W[5, 1], W[3, 2], W[4, 0], 0.0, 0.0
        Ib[0], Ib[1], Ib[2], Ib[3], Ib[4], Ib[5] = W[3, 3], W[3, 4], W[4, 4], W[3, 5], W[4, 5], W[5, 5]
        Bi[3, 4] = 0.0
        Bi[3, 5] = 0.0
        _rigid_rate(mh, Ib, ov, Bi[3], Bi[4])
        _rigid_mul(mh, Ib, ov, Bi[5])
    out[:, :] = 0.0
    Bt, H, P = W6[0], W6[1], tmp[0]
    for i in range(nb - 1, 0, -1):
        Bi = B6[i]                       # subtree sums complete: children were added below
        mh, Ib, dmh, dIb, hc = Bi[1], Bi[2], Bi[3], Bi[4], Bi[5]
        va, ni = vadr[i], jnv[i]
        for d in range(ni):
            e = va + d
            # Ag = Ic S,  P = dIc S,  Q = S x* hc:  Bc S = (P + Q)/2,  Bc^T S = (P - Q)/2
            _rigid_mul(mh, Ib, S[e], Ag[e])
            _rigid_mul(mh, Ib, dS[e], H[d])
            _rigid_mul(dmh, dIb, S[e], P)
            for k in range(6):
                tmp[1, k] = 0.0
            _force_cross_add(S[e], hc, tmp[1])
            for k in range(6):
                H[d, k] += 0.5 * (P[k] + tmp[1, k])                  # H = Ic S' + Bc S
                Bt[d, k] = 0.5 * (P[k] - tmp[1, k])                  # Bt = Bc^T S
        # C[d, e] = S_d^T (Ic S'_e + Bc S_e) within the joint
        for d in range(ni):
            for e in range(ni):
                out[va + d, va + e] = _dot6(S[va + d], H[e])
        j = parent[i]
        while j > 0:
            for e in range(vadr[j], vadr[j] + jnv[j]):
                for d in range(ni):
                    # row d below e: S_d^T (Ic S'_e + Bc S_e);  row e above d: S_e^T (Ic S'_d + Bc S_d)
                    out[va + d, e] = _dot6(Ag[va + d], dS[e]) + _dot6(Bt[d], S[e])
                    out[e, va + d] = _dot6(S[e], H[d])
            j = parent[j]
        p = parent[i]
        if p > 0:
            for r in range(1, 6):
                for k in range(6):
                    B6[p, r, k] += Bi[r, k]
    if mode == MASS_MATRIX_DERIVATIVE:
        # D' = C + C^T (eq. 5.77)
        for r in range(nv):
            out[r, r] *= 2.0
            for c in range(r + 1, nv):
                s = out[r, c] + out[c, r]
                out[r, c] = s
                out[c, r] = s
    return OK


@njit(parallel=True, cache=True)
def _coriolis_batch(mi, mf, WS, Q, V, mode, OUT, status):
    nt, n = WS.shape[0], OUT.shape[0]
    for t in prange(nt):
        lo, hi = _chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = _coriolis_kernel(mi, mf, _pick(WS, t), _pick(Q, k), _pick(V, k), mode, _pick(OUT, k))


def _coriolis(model, q, v, mode):
    if vectors(q, v):
        out = np.empty((model.nv, model.nv))
        if _coriolis_kernel(model._mi, model._mf, model._ws, q, v, mode, out) == OK:
            return out
    args = as_states(model, q=q, v=v)
    return run(model, (_coriolis_kernel, _coriolis_batch), (model.nv, model.nv), args, ("q", "v"), (mode,))


@reduced("matrix")
def coriolis_matrix(model: Model, q: ArrayLike, v: ArrayLike) -> NDArray[np.float64]:
    """Coriolis and centrifugal matrix C(q, v) (nv, nv) of Spong, Hutchinson and Vidyasagar 2006, ch. 7; (N, nv, nv) for a stack.

    C v = nonlinear_effects(q, v) - generalized_gravity(q) (without joint friction) and
    D' - 2C is skew-symmetric (eqs. 5.66-5.71).  Where v = q' (revolute, prismatic, cylindrical,
    universal, spherical ZYX joints) C is the Christoffel form C_kj = sum_i C_ijk q'_i of eqs.
    5.64-5.65; with quaternion, planar or free joints (body-frame velocities) it is the matrix
    of Pinocchio's ``computeCoriolisMatrix``.  O(n d) for n bodies of depth d, by the recursion
    of the module docstring.  q (nq,) or (N, nq); v (nv,) or (N, nv).
    """
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return coriolis_matrix.on_full_tree(model, q, v)
    return _coriolis(model, q, v, CORIOLIS)


@reduced("matrix")
def mass_matrix_derivative(model: Model, q: ArrayLike, v: ArrayLike) -> NDArray[np.float64]:
    """D'(q, v) = d/dt D(q(t)) along q(t) = integrate(model, q, v t) at t = 0 (nv, nv); (N, nv, nv)
    for a stack.

    Computed analytically as D' = C + C^T, which is the skew-symmetry of D' - 2C (Spong, Hutchinson and Vidyasagar 2006
    eq. 5.77: K + K^T = 0 with K = D' - 2C), not by differentiating D.  The armature is
    constant and does not appear.
    """
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return mass_matrix_derivative.on_full_tree(model, q, v)
    return _coriolis(model, q, v, MASS_MATRIX_DERIVATIVE)


class LagrangianTerms(NamedTuple):
    """The terms of D(q) q'' + C(q, q') q' + G(q) + F(q') = tau (Spong, Hutchinson and Vidyasagar 2006, ch. 7, 5.94)."""
    D: np.ndarray   #: joint-space inertia (nv, nv), armature included (eq. 5.50)
    C: np.ndarray   #: Coriolis matrix (nv, nv), Christoffel form where v = q' (eqs. 5.64-5.65)
    G: np.ndarray   #: gravity and joint-spring torques (nv,) (dU/dq of eq. 5.59, U with the springs' energy)
    F: np.ndarray   #: joint friction torques damping q' + friction sign(q') (nv,) (eq. 5.94)


def joint_friction(model: Model, v: NDArray[np.float64]) -> NDArray[np.float64]:
    """Joint friction torques ``damping * v + friction * sign(v)`` (zero for a model without
    ``damping`` / ``friction``); v (nv,) or (N, nv), already validated."""
    if getattr(model, "_full", None) is not None:
        # a coupled model: the joints' own torques at v_full = G v, projected (G^T; with a joint
        # that depends on several dofs the damping has cross terms, G^T diag(d) G)
        c = model._coupling
        return joint_friction(model._full, c.v(np.asarray(v, dtype=float))) @ c.G
    nv = model.nv
    d = getattr(model, "damping", None)
    f = getattr(model, "friction", None)
    out = np.zeros(np.shape(v))
    if d is not None:
        out += np.asarray(d, dtype=float).reshape(nv) * v
    if f is not None:
        out += np.asarray(f, dtype=float).reshape(nv) * np.sign(v)
    return out


def lagrangian_terms(model: Model, q: ArrayLike, v: ArrayLike) -> LagrangianTerms:
    """D, C, G (and the joint friction F) of Lagrange's equations, so that
    ``D @ a + C @ v + G + F == rnea(model, q, v, a)`` for every a (Spong, Hutchinson and Vidyasagar 2006, ch. 7; F is the
    viscous friction of eq. 5.94 plus Coulomb friction, zero unless the model has them).

    q (nq,) or (N, nq); v (nv,) or (N, nv); stacked outputs have a leading N.
    """
    args = as_states(model, q=q, v=v)
    C = (run(model, (_coriolis_kernel, _coriolis_batch), (model.nv, model.nv), args, ("q", "v"), (CORIOLIS,))
         if model._full is None else coriolis_matrix(model, args.q, args.v))
    D = crba(model, args.q)
    G = generalized_gravity(model, args.q)
    F = joint_friction(model, args.v)
    if args.batch is not None:       # a configuration or velocity shared by the whole stack
        n = args.batch
        D, G, F = (np.broadcast_to(x, (n,) + x.shape[1:]).copy() if x.shape[0] != n else x for x in (D, G, F))
    return LagrangianTerms(D, C, G, F)
