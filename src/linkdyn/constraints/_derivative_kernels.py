"""Compiled derivatives of constrained forward dynamics (:mod:`linkdyn.constraints.derivatives`).

One state runs in one kernel, with the steps of the NumPy implementation kept as its reference
(:func:`linkdyn.constraints.derivatives._one_state`, whose docstring has the derivation):

1. the forward dynamics by the compiled solvers themselves (:func:`_constraint_solve` for the
   geometric constraints, :func:`linkdyn.loops._kernels.constrained_solve` for the loops): q''
   and lambda;
2. the kinematics pass at (q, v, q'') with gravity, the constraint forces as world wrenches
   turned into the bodies' frames (RNEA's external forces), and the derivatives of RNEA at
   a = q'' with them (Carpentier and Mansard 2018, Algorithm 1:
   :func:`linkdyn.dynamics.derivatives._derivatives_from_kinematics`), which also leaves the
   world velocity and acceleration of every body and the columns J, dV, dA, dAv of every dof;
3. from those, each constraint's rows J, d(J q'' + J' v)/dq, dv with Baumgarte's terms and the
   correction of the constraint forces J_i^T (df/dq_k - J_k x* f) (the world direction of a
   point force stays put while RNEA holds it fixed in the body; a loop's force turns with the
   virtual link);
4. the KKT system of the derivatives by the tree-sparse LTDL factor of M (Featherstone 2008,
   sec. 6.5) and the Schur complement Lambda = J M^-1 J^T (Cholesky):
   X0 = M^-1 [-dF/dq, -dF/dv, 1],  Y = Lambda^-1 (B - J X0),  X = X0 + M^-1 J^T Y
   with B = -[dG/dq, dG/dv, 0]: X = [dq''/dq, dq''/dv, dq''/dtau], Y = the same of lambda.

The kernel answers only where this is the whole story: M positive definite (no massless cut
joint) and independent rows (Lambda positive definite at the relative pivot tolerance
:data:`linkdyn.loops._kernels.PIVOT_TOL`).  Elsewhere it returns :data:`SINGULAR` or
:data:`DEPENDENT` (and bad input, a degenerate Distance, an overflow their codes), and the
public layer runs the NumPy implementation for that state, which handles those cases (the
least-norm lambda of dependent rows, M singular on the cut joints) or names the error.

World quantities: the pass runs with a_0 = [-g; 0], so every body's world spatial acceleration
carries -g in its linear part; in the q-derivatives that offset cancels (dA_k + J_k x oa and
oa_p x J_k both hold it, with opposite signs), and it is removed from the accelerations used
as values (a point's classical acceleration).
"""
import math

import numpy as np
from numba import njit, prange
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from ..dynamics.cholesky import _dinv_li_rows, _lit_rows, _ltdl_factor, _ltdl_inverse_congruence
from ..dynamics.derivatives import _derivatives_from_kinematics, _unpack_dws
from ..loops._kernels import FD, PIVOT_TOL, constrained_solve, frame_in_world, log6
from .._kernels import dense
from .._kernels.batch import chunk, pick
from ._kernels import DEGENERATE, FRAME, NF, PLANE, POINT, _constraint_solve
from .._kernels.layout import _view, model_sizes, unpack_data, unpack_model, unpack_packed
from .._kernels.passes import ACC, BAD_SHAPE, OK, OVERFLOW, SINGULAR, all_finite, kinematics_pass

#: status codes beyond passes' and constraints' (the public layer then runs the NumPy path)
DEPENDENT = 102          # dependent constraint rows: lambda is the least-norm split


@intrinsic
def _any(typingctx, arr):
    """The same array typed with layout "A" (only the type changes), so that the forward
    solvers called here are the very compiled versions their entry points use."""
    sig = arr.copy(layout="A")(arr)

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, signature.return_type, args[0])
    return sig, codegen


def sw_size(nb: int, nq: int, nv: int, m: int) -> int:
    """Floats of the scratch of one state (:func:`_carve`)."""
    return nq + 2 * nv + (nv + m + 1) + 6 * nb + 2 * nv * nv + 3 * m * nv + nv * m + m * m + 48 * nv + 24 * nv + 9 * nv + 256


@njit(cache=True)
def _carve(sw, nb, nq, nv, m):
    o = 0
    q = _view(sw, o, (nq,)); o += nq
    v = _view(sw, o, (nv,)); o += nv
    tau = _view(sw, o, (nv,)); o += nv
    fwd = _view(sw, o, (nv + m + 1,))
    qdd = _view(sw, o, (nv,))
    lm = _view(sw, o + nv, (m,)); o += nv + m + 1
    fext = _view(sw, o, (nb, 6)); o += 6 * nb
    dtq = _view(sw, o, (nv, nv)); o += nv * nv
    dtv = _view(sw, o, (nv, nv)); o += nv * nv
    JJ = _view(sw, o, (m, nv)); o += m * nv
    GQ = _view(sw, o, (m, nv)); o += m * nv
    GV = _view(sw, o, (m, nv)); o += m * nv
    Y0 = _view(sw, o, (nv, m)); o += nv * m
    Lam = _view(sw, o, (m, m)); o += m * m
    BC = _view(sw, o, (2, 4, 6, nv)); o += 48 * nv
    PC = _view(sw, o, (2, 4, 3, nv)); o += 24 * nv
    DF = _view(sw, o, (6, nv)); o += 6 * nv
    DU = _view(sw, o, (3, nv)); o += 3 * nv
    sc = _view(sw, o, (256,))
    return q, v, tau, fwd, qdd, lm, fext, dtq, dtv, JJ, GQ, GV, Y0, Lam, BC, PC, DF, DU, sc


# ---------------------------------------------------------------------------------------
# small helpers
@njit(cache=True)
def _coeff_k(th):
    """1/t^2 - (1 + cos t) / (2 t sin t) (series near 0): Jl^-1(w) = 1 - [w]/2 + k [w]^2."""
    if th < 1e-2:
        return 1.0 / 12.0 + th * th / 720.0
    return 1.0 / th ** 2 - (1.0 + math.cos(th)) / (2.0 * th * math.sin(th))


@njit(cache=True)
def _body_cols(i, parent, vadr, jnv, ov, oa, J, dV, dA, dAv, out):
    """out (4, 6, nv) = J_i, d ov_i/dq, d oa_i/dq, d oa_i/dv of body i in world coordinates
    (zero off its support): J_k, dV_k + J_k x ov_i, dA_k + J_k x oa_i + dV_k x ov_i,
    dAv_k + J_k x ov_i (the module docstring of linkdyn.kinematics.derivatives)."""
    nv = out.shape[2]
    for a in range(4):
        for r in range(6):
            for k in range(nv):
                out[a, r, k] = 0.0
    if i == 0:
        return
    v0, v1, v2, w0, w1, w2 = ov[i, 0], ov[i, 1], ov[i, 2], ov[i, 3], ov[i, 4], ov[i, 5]
    a0, a1, a2, b0, b1, b2 = oa[i, 0], oa[i, 1], oa[i, 2], oa[i, 3], oa[i, 4], oa[i, 5]
    j = i
    while j > 0:
        for k in range(vadr[j], vadr[j] + jnv[j]):
            l0, l1, l2, m0, m1, m2 = J[k, 0], J[k, 1], J[k, 2], J[k, 3], J[k, 4], J[k, 5]
            d0, d1, d2, e0, e1, e2 = dV[k, 0], dV[k, 1], dV[k, 2], dV[k, 3], dV[k, 4], dV[k, 5]
            # J_k x ov_i = [m x v + l x w; m x w]
            jv0 = m1 * v2 - m2 * v1 + l1 * w2 - l2 * w1
            jv1 = m2 * v0 - m0 * v2 + l2 * w0 - l0 * w2
            jv2 = m0 * v1 - m1 * v0 + l0 * w1 - l1 * w0
            jv3 = m1 * w2 - m2 * w1
            jv4 = m2 * w0 - m0 * w2
            jv5 = m0 * w1 - m1 * w0
            out[0, 0, k], out[0, 1, k], out[0, 2, k] = l0, l1, l2
            out[0, 3, k], out[0, 4, k], out[0, 5, k] = m0, m1, m2
            out[1, 0, k], out[1, 1, k], out[1, 2, k] = d0 + jv0, d1 + jv1, d2 + jv2
            out[1, 3, k], out[1, 4, k], out[1, 5, k] = e0 + jv3, e1 + jv4, e2 + jv5
            out[3, 0, k], out[3, 1, k], out[3, 2, k] = dAv[k, 0] + jv0, dAv[k, 1] + jv1, dAv[k, 2] + jv2
            out[3, 3, k], out[3, 4, k], out[3, 5, k] = dAv[k, 3] + jv3, dAv[k, 4] + jv4, dAv[k, 5] + jv5
            # J_k x oa_i + dV_k x ov_i
            out[2, 0, k] = (dA[k, 0] + m1 * a2 - m2 * a1 + l1 * b2 - l2 * b1
                            + e1 * v2 - e2 * v1 + d1 * w2 - d2 * w1)
            out[2, 1, k] = (dA[k, 1] + m2 * a0 - m0 * a2 + l2 * b0 - l0 * b2
                            + e2 * v0 - e0 * v2 + d2 * w0 - d0 * w2)
            out[2, 2, k] = (dA[k, 2] + m0 * a1 - m1 * a0 + l0 * b1 - l1 * b0
                            + e0 * v1 - e1 * v0 + d0 * w1 - d1 * w0)
            out[2, 3, k] = dA[k, 3] + m1 * b2 - m2 * b1 + e1 * w2 - e2 * w1
            out[2, 4, k] = dA[k, 4] + m2 * b0 - m0 * b2 + e2 * w0 - e0 * w2
            out[2, 5, k] = dA[k, 5] + m0 * b1 - m1 * b0 + e0 * w1 - e1 * w0
        j = parent[j]


@njit(cache=True)
def _point(oR, op, i, r, ov, oa, g, bc, pt, P):
    """The point r (body coordinates) of body i: pt (3, 3) = its world position x, velocity
    x' = v_o + w x x and classical acceleration x'' = a_o + w' x x + w x x' (a_o without
    gravity); P (4, 3, nv) = dx/dq (= dx'/dv), dx'/dq, dx''/dq, dx''/dv from the body's
    columns bc (:func:`_body_cols`)."""
    nv = P.shape[2]
    if i == 0:
        for a in range(3):
            pt[0, a], pt[1, a], pt[2, a] = r[a], 0.0, 0.0
        for a in range(4):
            for c in range(3):
                for k in range(nv):
                    P[a, c, k] = 0.0
        return
    R = oR[i]
    x0 = op[i, 0] + R[0, 0] * r[0] + R[0, 1] * r[1] + R[0, 2] * r[2]
    x1 = op[i, 1] + R[1, 0] * r[0] + R[1, 1] * r[1] + R[1, 2] * r[2]
    x2 = op[i, 2] + R[2, 0] * r[0] + R[2, 1] * r[1] + R[2, 2] * r[2]
    w0, w1, w2 = ov[i, 3], ov[i, 4], ov[i, 5]
    b0, b1, b2 = oa[i, 3], oa[i, 4], oa[i, 5]
    y0 = ov[i, 0] + w1 * x2 - w2 * x1
    y1 = ov[i, 1] + w2 * x0 - w0 * x2
    y2 = ov[i, 2] + w0 * x1 - w1 * x0
    pt[0, 0], pt[0, 1], pt[0, 2] = x0, x1, x2
    pt[1, 0], pt[1, 1], pt[1, 2] = y0, y1, y2
    pt[2, 0] = oa[i, 0] + g[0] + b1 * x2 - b2 * x1 + w1 * y2 - w2 * y1
    pt[2, 1] = oa[i, 1] + g[1] + b2 * x0 - b0 * x2 + w2 * y0 - w0 * y2
    pt[2, 2] = oa[i, 2] + g[2] + b0 * x1 - b1 * x0 + w0 * y1 - w1 * y0
    for k in range(nv):
        m0, m1, m2 = bc[0, 3, k], bc[0, 4, k], bc[0, 5, k]
        # Jp = J_lin + J_ang x x
        p0 = bc[0, 0, k] + m1 * x2 - m2 * x1
        p1 = bc[0, 1, k] + m2 * x0 - m0 * x2
        p2 = bc[0, 2, k] + m0 * x1 - m1 * x0
        # xd_q = vq_lin + vq_ang x x + w x Jp
        e0, e1, e2 = bc[1, 3, k], bc[1, 4, k], bc[1, 5, k]
        s0 = bc[1, 0, k] + e1 * x2 - e2 * x1 + w1 * p2 - w2 * p1
        s1 = bc[1, 1, k] + e2 * x0 - e0 * x2 + w2 * p0 - w0 * p2
        s2 = bc[1, 2, k] + e0 * x1 - e1 * x0 + w0 * p1 - w1 * p0
        # xdd_q = aq_lin + aq_ang x x + w' x Jp + vq_ang x x' + w x xd_q
        c0, c1, c2 = bc[2, 3, k], bc[2, 4, k], bc[2, 5, k]
        P[2, 0, k] = (bc[2, 0, k] + c1 * x2 - c2 * x1 + b1 * p2 - b2 * p1 + e1 * y2 - e2 * y1
                      + w1 * s2 - w2 * s1)
        P[2, 1, k] = (bc[2, 1, k] + c2 * x0 - c0 * x2 + b2 * p0 - b0 * p2 + e2 * y0 - e0 * y2
                      + w2 * s0 - w0 * s2)
        P[2, 2, k] = (bc[2, 2, k] + c0 * x1 - c1 * x0 + b0 * p1 - b1 * p0 + e0 * y1 - e1 * y0
                      + w0 * s1 - w1 * s0)
        # xdd_v = av_lin + av_ang x x + J_ang x x' + w x Jp
        h0, h1, h2 = bc[3, 3, k], bc[3, 4, k], bc[3, 5, k]
        P[3, 0, k] = bc[3, 0, k] + h1 * x2 - h2 * x1 + m1 * y2 - m2 * y1 + w1 * p2 - w2 * p1
        P[3, 1, k] = bc[3, 1, k] + h2 * x0 - h0 * x2 + m2 * y0 - m0 * y2 + w2 * p0 - w0 * p2
        P[3, 2, k] = bc[3, 2, k] + h0 * x1 - h1 * x0 + m0 * y1 - m1 * y0 + w0 * p1 - w1 * p0
        P[0, 0, k], P[0, 1, k], P[0, 2, k] = p0, p1, p2
        P[1, 0, k], P[1, 1, k], P[1, 2, k] = s0, s1, s2


@njit(cache=True)
def _to_body(oR, op, i, f, fext):
    """fext[i] += the world wrench f = [f; n] (moment about the world origin) in body i's frame."""
    if i == 0:
        return
    R, p = oR[i], op[i]
    n0 = f[3] - (p[1] * f[2] - p[2] * f[1])
    n1 = f[4] - (p[2] * f[0] - p[0] * f[2])
    n2 = f[5] - (p[0] * f[1] - p[1] * f[0])
    for a in range(3):
        fext[i, a] += R[0, a] * f[0] + R[1, a] * f[1] + R[2, a] * f[2]
        fext[i, 3 + a] += R[0, a] * n0 + R[1, a] * n1 + R[2, a] * n2


@njit(cache=True)
def _correct(i, parent, vadr, jnv, bc, f, DF, dtq):
    """dtq -= J_i^T (DF - J_i x* f): the derivative of the constraint force f (a world wrench on
    body i, DF its q-derivative, 6 x nv) beyond what RNEA holds fixed in the body's frame.
    Rows: the support of body i (J_i = bc[0])."""
    if i == 0:
        return
    nv = DF.shape[1]
    f0, f1, f2, n0, n1, n2 = f[0], f[1], f[2], f[3], f[4], f[5]
    for k in range(nv):
        v0, v1, v2, w0, w1, w2 = bc[0, 0, k], bc[0, 1, k], bc[0, 2, k], bc[0, 3, k], bc[0, 4, k], bc[0, 5, k]
        # J_k x* f = [w x f; w x n + v x f]
        DF[0, k] -= w1 * f2 - w2 * f1
        DF[1, k] -= w2 * f0 - w0 * f2
        DF[2, k] -= w0 * f1 - w1 * f0
        DF[3, k] -= w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1
        DF[4, k] -= w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2
        DF[5, k] -= w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0
    j = i
    while j > 0:
        for d in range(vadr[j], vadr[j] + jnv[j]):
            j0, j1, j2, j3, j4, j5 = bc[0, 0, d], bc[0, 1, d], bc[0, 2, d], bc[0, 3, d], bc[0, 4, d], bc[0, 5, d]
            for k in range(nv):
                dtq[d, k] -= (j0 * DF[0, k] + j1 * DF[1, k] + j2 * DF[2, k] + j3 * DF[3, k] + j4 * DF[4, k]
                              + j5 * DF[5, k])
        j = parent[j]


@njit(cache=True)
def _point_force_df(P, x, f, DF):
    """DF = d[f; x x f]/dq for a force f held fixed in the world at the moving point x
    (dx/dq = P[0]): [0; Jp x f]."""
    nv = DF.shape[1]
    for k in range(nv):
        p0, p1, p2 = P[0, 0, k], P[0, 1, k], P[0, 2, k]
        DF[0, k], DF[1, k], DF[2, k] = 0.0, 0.0, 0.0
        DF[3, k] = p1 * f[2] - p2 * f[1]
        DF[4, k] = p2 * f[0] - p0 * f[2]
        DF[5, k] = p0 * f[1] - p1 * f[0]


@njit(cache=True)
def _wrench_at(x, f, n, w):
    """w = [f; x x f + n]."""
    w[0], w[1], w[2] = f[0], f[1], f[2]
    w[3] = x[1] * f[2] - x[2] * f[1] + n[0]
    w[4] = x[2] * f[0] - x[0] * f[2] + n[1]
    w[5] = x[0] * f[1] - x[1] * f[0] + n[2]


@njit(cache=True)
def _jr_inv(e, T, out):
    """out (6, 6) = Jr^-1(e) of SE(3), e = [rho; phi]: Jr(e) = Jl(-e) = [[A, Q], [0, A]],
    A = Jl3(-phi), so Jr^-1 = [[A^-1, -A^-1 Q A^-1], [0, A^-1]] (Barfoot 2017, ch. 7: the
    closed forms of Jl of SO(3) and of its block Q).  T (8, 3, 3) scratch."""
    rho0, rho1, rho2, ph0, ph1, ph2 = -e[0], -e[1], -e[2], -e[3], -e[4], -e[5]
    th = math.sqrt(ph0 * ph0 + ph1 * ph1 + ph2 * ph2)
    if th < 1e-2:
        t2 = th * th
        b, c, d = 1.0 / 6.0 - t2 / 120.0, 1.0 / 24.0 - t2 / 720.0, 1.0 / 120.0 - t2 / 2520.0
    else:
        s, co = math.sin(th), math.cos(th)
        b = (th - s) / th ** 3
        c = (th * th + 2.0 * co - 2.0) / (2.0 * th ** 4)
        d = (2.0 * th - 3.0 * s + th * co) / (2.0 * th ** 5)
    k = _coeff_k(th)
    P, Rh, PR, RP, PP, PRP, Q, Ai = T[0], T[1], T[2], T[3], T[4], T[5], T[6], T[7]
    _skew(ph0, ph1, ph2, P)
    _skew(rho0, rho1, rho2, Rh)
    _mm3(P, Rh, PR)
    _mm3(Rh, P, RP)
    _mm3(P, P, PP)
    _mm3(PR, P, PRP)
    for a in range(3):
        for bb in range(3):
            s1 = 0.0     # (P^2 Rh)
            s2 = 0.0     # (Rh P^2)
            s3 = 0.0     # (P Rh P^2)
            s4 = 0.0     # (P^2 Rh P)
            for kk in range(3):
                s1 += PP[a, kk] * Rh[kk, bb]
                s2 += Rh[a, kk] * PP[kk, bb]
                s3 += PR[a, kk] * PP[kk, bb]
                s4 += PP[a, kk] * RP[kk, bb]
            Q[a, bb] = (0.5 * Rh[a, bb] + b * (PR[a, bb] + RP[a, bb] + PRP[a, bb])
                        + c * (s1 + s2 - 3.0 * PRP[a, bb]) + d * (s3 + s4))
            Ai[a, bb] = (1.0 if a == bb else 0.0) - 0.5 * P[a, bb] + k * PP[a, bb]
    _mm3(Ai, Q, PR)
    _mm3(PR, Ai, RP)
    for a in range(3):
        for bb in range(3):
            out[a, bb] = Ai[a, bb]
            out[3 + a, 3 + bb] = Ai[a, bb]
            out[a, 3 + bb] = -RP[a, bb]
            out[3 + a, bb] = 0.0


@njit(cache=True)
def _skew(a, b, c, S):
    S[0, 0], S[0, 1], S[0, 2] = 0.0, -c, b
    S[1, 0], S[1, 1], S[1, 2] = c, 0.0, -a
    S[2, 0], S[2, 1], S[2, 2] = -b, a, 0.0


@njit(cache=True)
def _mm3(A, B, out):
    for a in range(3):
        for b in range(3):
            out[a, b] = A[a, 0] * B[0, b] + A[a, 1] * B[1, b] + A[a, 2] * B[2, b]


# ---------------------------------------------------------------------------------------
# the rows of each kind, and their forces
@njit(cache=True)
def _world_point(oR, op, i, r, x):
    for a in range(3):
        x[a] = op[i, a] + oR[i, a, 0] * r[0] + oR[i, a, 1] * r[1] + oR[i, a, 2] * r[2]


# ---------------------------------------------------------------------------------------
# the constraint forces as RNEA's external forces (body frames)
@njit(cache=True)
def _geometric_fext(oR, op, ci, cf, lm, fext, sc):
    """fext += the forces lm of the constraints packed in (ci, cf), each in its body's frame.
    Returns OK or DEGENERATE (a Distance whose points coincide)."""
    xa, xb, f6, fl, z3 = sc[0:3], sc[3:6], sc[6:12], sc[12:15], sc[15:18]
    for a in range(3):
        z3[a] = 0.0
    for c in range(ci.shape[0]):
        kind, ia, ib, r0 = int(ci[c, 0]), int(ci[c, 1]), int(ci[c, 2]), int(ci[c, 3])
        f = cf[c]
        if kind == POINT:
            _world_point(oR, op, ia, f[0:3], xa)
            _wrench_at(xa, lm[r0:r0 + 3], z3, f6)
        elif kind == PLANE:
            _world_point(oR, op, ia, f[0:3], xa)
            for a in range(3):
                fl[a] = f[3 + a] * lm[r0]
            _wrench_at(xa, fl, z3, f6)
        elif kind == FRAME:
            _world_point(oR, op, ia, f[9:12], xa)
            _wrench_at(xa, lm[r0:r0 + 3], lm[r0 + 3:r0 + 6], f6)
        else:
            _world_point(oR, op, ia, f[0:3], xa)
            _world_point(oR, op, ib, f[3:6], xb)
            L = math.sqrt((xa[0] - xb[0]) ** 2 + (xa[1] - xb[1]) ** 2 + (xa[2] - xb[2]) ** 2)
            if not L > 0.0:
                return DEGENERATE
            for a in range(3):
                fl[a] = lm[r0] * (xa[a] - xb[a]) / L
            _wrench_at(xa, fl, z3, f6)
            _to_body(oR, op, ia, f6, fext)
            for a in range(3):
                fl[a] = -fl[a]
            _wrench_at(xb, fl, z3, f6)
            ia = ib
        _to_body(oR, op, ia, f6, fext)
    return OK


@njit(cache=True)
def _loop_fext(oR, op, li, lf, lm, fext, sc):
    """fext += each loop's force: lm[6k:6k+6] = [f; n] on the virtual link a, in its frame A;
    in the world oX_A^* lm, the opposite on the real link b."""
    RA, pA, f6 = sc[0:9].reshape((3, 3)), sc[9:12], sc[12:18]
    for k in range(li.shape[0]):
        a, b = li[k, 0], li[k, 1]
        frame_in_world(oR, op, a, lf[k], 0, RA, pA)
        _loop_wrench(RA, pA, lm[6 * k:6 * k + 6], f6)
        _to_body(oR, op, a, f6, fext)
        for x in range(6):
            f6[x] = -f6[x]
        _to_body(oR, op, b, f6, fext)


@njit(cache=True)
def _loop_wrench(RA, pA, lm, f6):
    """f6 = oX_A^* lm: [RA f; RA n + pA x RA f]."""
    for a in range(3):
        f6[a] = RA[a, 0] * lm[0] + RA[a, 1] * lm[1] + RA[a, 2] * lm[2]
        f6[3 + a] = RA[a, 0] * lm[3] + RA[a, 1] * lm[4] + RA[a, 2] * lm[5]
    f6[3] += pA[1] * f6[2] - pA[2] * f6[1]
    f6[4] += pA[2] * f6[0] - pA[0] * f6[2]
    f6[5] += pA[0] * f6[1] - pA[1] * f6[0]


# ---------------------------------------------------------------------------------------
# the rows of each kind with Baumgarte's terms, and the correction of their forces
@njit(cache=True)
def _geometric_rows(mi, mf, ws, dws, ci, cf, lm, alpha, beta, JJ, GQ, GV, BC, PC, DF, DU, sc, dtq):
    """Rows J of the constraints packed in (ci, cf) (:mod:`linkdyn.constraints._kernels`),
    GQ = d(J q'' + J' v)/dq + 2 alpha d(J v)/dq + beta^2 dc/dq and GV = d(J q'' + J' v)/dv +
    2 alpha J (the reference: ``_rows_point``, ``_rows_plane``, ``_rows_frame``,
    ``_rows_distance``), and dtq -= the correction of their forces lm (``_forces_*``)."""
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, _, _, g = unpack_model(mi, mf)
    nb, nq, nv = model_sizes(mi)
    oR, op = unpack_data(ws, nb, nv)[:2]
    ov, oa, F, Yc, Bc, J, dV, dA, dAv = _unpack_dws(dws, nb, nv)[:9]
    a2, b2 = 2.0 * alpha, beta * beta
    pa, pb = sc[0:9].reshape((3, 3)), sc[9:18].reshape((3, 3))
    f6, z3, e6, fl = sc[18:24], sc[24:27], sc[27:33], sc[33:36]
    W, Ai = sc[36:45].reshape((3, 3)), sc[45:54].reshape((3, 3))
    for x in range(3):
        z3[x] = 0.0
    bca, bcb, Pa, Pb = BC[0], BC[1], PC[0], PC[1]
    for c in range(ci.shape[0]):
        kind, ia, ib, r0 = int(ci[c, 0]), int(ci[c, 1]), int(ci[c, 2]), int(ci[c, 3])
        f = cf[c]
        _body_cols(ia, parent, vadr, jnv, ov, oa, J, dV, dA, dAv, bca)
        if kind == PLANE:
            _point(oR, op, ia, f[0:3], ov, oa, g, bca, pa, Pa)
            n0, n1, n2 = f[3], f[4], f[5]
            for k in range(nv):
                JJ[r0, k] = n0 * Pa[0, 0, k] + n1 * Pa[0, 1, k] + n2 * Pa[0, 2, k]
                GQ[r0, k] = (n0 * (Pa[2, 0, k] + a2 * Pa[1, 0, k] + b2 * Pa[0, 0, k])
                             + n1 * (Pa[2, 1, k] + a2 * Pa[1, 1, k] + b2 * Pa[0, 1, k])
                             + n2 * (Pa[2, 2, k] + a2 * Pa[1, 2, k] + b2 * Pa[0, 2, k]))
                GV[r0, k] = (n0 * (Pa[3, 0, k] + a2 * Pa[0, 0, k]) + n1 * (Pa[3, 1, k] + a2 * Pa[0, 1, k])
                             + n2 * (Pa[3, 2, k] + a2 * Pa[0, 2, k]))
            for x in range(3):
                fl[x] = f[3 + x] * lm[r0]
            _wrench_at(pa[0], fl, z3, f6)
            _point_force_df(Pa, pa[0], fl, DF)
            _correct(ia, parent, vadr, jnv, bca, f6, DF, dtq)
        elif kind == POINT or kind == FRAME:
            _point(oR, op, ia, f[9:12] if kind == FRAME else f[0:3], ov, oa, g, bca, pa, Pa)
            has_target = f[24] != 0.0 if kind == FRAME else f[6] != 0.0
            et = b2 if has_target else 0.0
            for x in range(3):
                for k in range(nv):
                    JJ[r0 + x, k] = Pa[0, x, k]
                    GQ[r0 + x, k] = Pa[2, x, k] + a2 * Pa[1, x, k] + et * Pa[0, x, k]
                    GV[r0 + x, k] = Pa[3, x, k] + a2 * Pa[0, x, k]
            if kind == FRAME:
                for x in range(3):
                    for k in range(nv):
                        JJ[r0 + 3 + x, k] = bca[0, 3 + x, k]
                        GQ[r0 + 3 + x, k] = bca[2, 3 + x, k] + a2 * bca[1, 3 + x, k]
                        GV[r0 + 3 + x, k] = bca[3, 3 + x, k] + a2 * bca[0, 3 + x, k]
                if et != 0.0:
                    # + beta^2 Jl^-1(e) J_ang, e = log3(R_i R_f R_t^T) (Barfoot 2017, ch. 7)
                    for x in range(3):
                        for y in range(3):
                            W[x, y] = oR[ia, x, 0] * f[y] + oR[ia, x, 1] * f[3 + y] + oR[ia, x, 2] * f[6 + y]
                    for x in range(3):
                        for y in range(3):
                            pb[x, y] = W[x, 0] * f[12 + 3 * y] + W[x, 1] * f[13 + 3 * y] + W[x, 2] * f[14 + 3 * y]
                    log6(pb, z3, e6)
                    w0, w1, w2 = e6[3], e6[4], e6[5]
                    kk = _coeff_k(math.sqrt(w0 * w0 + w1 * w1 + w2 * w2))
                    _skew(w0, w1, w2, W)
                    _mm3(W, W, Ai)
                    for x in range(3):
                        for y in range(3):
                            Ai[x, y] = (1.0 if x == y else 0.0) - 0.5 * W[x, y] + kk * Ai[x, y]
                    for x in range(3):
                        for k in range(nv):
                            GQ[r0 + 3 + x, k] += b2 * (Ai[x, 0] * bca[0, 3, k] + Ai[x, 1] * bca[0, 4, k]
                                                       + Ai[x, 2] * bca[0, 5, k])
                _wrench_at(pa[0], lm[r0:r0 + 3], lm[r0 + 3:r0 + 6], f6)
            else:
                _wrench_at(pa[0], lm[r0:r0 + 3], z3, f6)
            _point_force_df(Pa, pa[0], lm[r0:r0 + 3], DF)
            _correct(ia, parent, vadr, jnv, bca, f6, DF, dtq)
        else:       # DIST: C = u . d'' + (|d'|^2 - (u . d')^2) / L, d = x_a - x_b, u = d / L
            _body_cols(ib, parent, vadr, jnv, ov, oa, J, dV, dA, dAv, bcb)
            _point(oR, op, ia, f[0:3], ov, oa, g, bca, pa, Pa)
            _point(oR, op, ib, f[3:6], ov, oa, g, bcb, pb, Pb)
            d0, d1, d2 = pa[0, 0] - pb[0, 0], pa[0, 1] - pb[0, 1], pa[0, 2] - pb[0, 2]
            L = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            if not L > 0.0:
                return DEGENERATE
            u0, u1, u2 = d0 / L, d1 / L, d2 / L
            q0, q1, q2 = pa[1, 0] - pb[1, 0], pa[1, 1] - pb[1, 1], pa[1, 2] - pb[1, 2]        # d'
            s0, s1, s2 = pa[2, 0] - pb[2, 0], pa[2, 1] - pb[2, 1], pa[2, 2] - pb[2, 2]        # d''
            ud = u0 * q0 + u1 * q1 + u2 * q2
            rest = q0 * q0 + q1 * q1 + q2 * q2 - ud * ud
            lmb = lm[r0]
            for k in range(nv):
                D0, D1, D2 = Pa[0, 0, k] - Pb[0, 0, k], Pa[0, 1, k] - Pb[0, 1, k], Pa[0, 2, k] - Pb[0, 2, k]
                uD = u0 * D0 + u1 * D1 + u2 * D2
                Du0, Du1, Du2 = (D0 - u0 * uD) / L, (D1 - u1 * uD) / L, (D2 - u2 * uD) / L
                e0, e1, e2 = Pa[1, 0, k] - Pb[1, 0, k], Pa[1, 1, k] - Pb[1, 1, k], Pa[1, 2, k] - Pb[1, 2, k]
                h0, h1, h2 = Pa[2, 0, k] - Pb[2, 0, k], Pa[2, 1, k] - Pb[2, 1, k], Pa[2, 2, k] - Pb[2, 2, k]
                c0, c1, c2 = Pa[3, 0, k] - Pb[3, 0, k], Pa[3, 1, k] - Pb[3, 1, k], Pa[3, 2, k] - Pb[3, 2, k]
                ud_q = q0 * Du0 + q1 * Du1 + q2 * Du2 + u0 * e0 + u1 * e1 + u2 * e2
                gq = (s0 * Du0 + s1 * Du1 + s2 * Du2 + u0 * h0 + u1 * h1 + u2 * h2
                      + (2.0 * (q0 * e0 + q1 * e1 + q2 * e2) - 2.0 * ud * ud_q) / L - rest / (L * L) * uD)
                gv = u0 * c0 + u1 * c1 + u2 * c2 + (2.0 * (q0 * D0 + q1 * D1 + q2 * D2) - 2.0 * ud * uD) / L
                JJ[r0, k] = uD
                GQ[r0, k] = gq + a2 * ud_q + b2 * uD
                GV[r0, k] = gv + a2 * uD
                DU[0, k], DU[1, k], DU[2, k] = lmb * Du0, lmb * Du1, lmb * Du2     # d(lambda u)/dq
            # the rod's force +-lambda u at each end turns with the rod
            for side in range(2):
                sg = 1.0 if side == 0 else -1.0
                Pp = Pa if side == 0 else Pb
                xp = pa[0] if side == 0 else pb[0]
                fl[0], fl[1], fl[2] = sg * lmb * u0, sg * lmb * u1, sg * lmb * u2
                _wrench_at(xp, fl, z3, f6)
                x0, x1, x2 = xp[0], xp[1], xp[2]
                for k in range(nv):
                    g0, g1, g2 = sg * DU[0, k], sg * DU[1, k], sg * DU[2, k]
                    p0, p1, p2 = Pp[0, 0, k], Pp[0, 1, k], Pp[0, 2, k]
                    DF[0, k], DF[1, k], DF[2, k] = g0, g1, g2
                    DF[3, k] = p1 * fl[2] - p2 * fl[1] + x1 * g2 - x2 * g1
                    DF[4, k] = p2 * fl[0] - p0 * fl[2] + x2 * g0 - x0 * g2
                    DF[5, k] = p0 * fl[1] - p1 * fl[0] + x0 * g1 - x1 * g0
                if side == 0:
                    _correct(ia, parent, vadr, jnv, bca, f6, DF, dtq)
                else:
                    _correct(ib, parent, vadr, jnv, bcb, f6, DF, dtq)
    return OK


@njit(cache=True)
def _loop_rows(mi, mf, ws, dws, li, lf, lm, alpha, beta, r0, JJ, GQ, GV, BC, DF, sc, dtq):
    """Rows r0.. of the loops (6 each, the reference's ``_rows_loop``) in the virtual link's
    frame A: J = AX_o (J_a - J_b), the q- and v-derivatives of AX_o (a_a - a_b - v_a x (v_a - v_b))
    and of AX_o (v_a - v_b), and the error term -beta^2 Jr^-1(e) BX_o (J_b - J_a), e = log6(aMb)
    (Barfoot 2017, ch. 7); dtq -= the correction of the loop forces lm (``_forces_loop``: the
    force turns with the virtual link, so only the real link's side is corrected)."""
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, _, _, g = unpack_model(mi, mf)
    nb, nq, nv = model_sizes(mi)
    oR, op = unpack_data(ws, nb, nv)[:2]
    ov, oa, F, Yc, Bc, J, dV, dA, dAv = _unpack_dws(dws, nb, nv)[:9]
    a2, b2 = 2.0 * alpha, beta * beta
    RA, RB, Rab = sc[0:9].reshape((3, 3)), sc[9:18].reshape((3, 3)), sc[18:27].reshape((3, 3))
    pA, pB, pab, nu, acc, f6 = sc[27:30], sc[30:33], sc[33:36], sc[36:42], sc[42:48], sc[48:54]
    e6 = sc[54:60]
    T, Jr = sc[64:136].reshape((8, 3, 3)), sc[136:172].reshape((6, 6))
    bca, bcb = BC[0], BC[1]
    for lk in range(li.shape[0]):
        a, b = li[lk, 0], li[lk, 1]
        ro = r0 + 6 * lk
        frame_in_world(oR, op, a, lf[lk], 0, RA, pA)
        frame_in_world(oR, op, b, lf[lk], 12, RB, pB)
        _body_cols(a, parent, vadr, jnv, ov, oa, J, dV, dA, dAv, bca)
        _body_cols(b, parent, vadr, jnv, ov, oa, J, dV, dA, dAv, bcb)
        va0, va1, va2, wa0, wa1, wa2 = ov[a, 0], ov[a, 1], ov[a, 2], ov[a, 3], ov[a, 4], ov[a, 5]
        for x in range(6):
            nu[x] = ov[a, x] - ov[b, x]
        # acc = (a_a - a_b) - v_a x nu  (the gravity offsets cancel in the difference)
        n0, n1, n2, m0, m1, m2 = nu[0], nu[1], nu[2], nu[3], nu[4], nu[5]
        acc[0] = oa[a, 0] - oa[b, 0] - (wa1 * n2 - wa2 * n1 + va1 * m2 - va2 * m1)
        acc[1] = oa[a, 1] - oa[b, 1] - (wa2 * n0 - wa0 * n2 + va2 * m0 - va0 * m2)
        acc[2] = oa[a, 2] - oa[b, 2] - (wa0 * n1 - wa1 * n0 + va0 * m1 - va1 * m0)
        acc[3] = oa[a, 3] - oa[b, 3] - (wa1 * m2 - wa2 * m1)
        acc[4] = oa[a, 4] - oa[b, 4] - (wa2 * m0 - wa0 * m2)
        acc[5] = oa[a, 5] - oa[b, 5] - (wa0 * m1 - wa1 * m0)
        c0, c1, c2, c3, c4, c5 = acc[0], acc[1], acc[2], acc[3], acc[4], acc[5]
        for k in range(nv):
            # world columns, then into frame A: jd = J_a - J_b, gq, gv
            jl0, jl1, jl2, jw0, jw1, jw2 = bca[0, 0, k], bca[0, 1, k], bca[0, 2, k], bca[0, 3, k], bca[0, 4, k], bca[0, 5, k]
            dv0 = bca[1, 0, k] - bcb[1, 0, k]
            dv1 = bca[1, 1, k] - bcb[1, 1, k]
            dv2 = bca[1, 2, k] - bcb[1, 2, k]
            dv3 = bca[1, 3, k] - bcb[1, 3, k]
            dv4 = bca[1, 4, k] - bcb[1, 4, k]
            dv5 = bca[1, 5, k] - bcb[1, 5, k]
            jd0 = jl0 - bcb[0, 0, k]
            jd1 = jl1 - bcb[0, 1, k]
            jd2 = jl2 - bcb[0, 2, k]
            jd3 = jw0 - bcb[0, 3, k]
            jd4 = jw1 - bcb[0, 4, k]
            jd5 = jw2 - bcb[0, 5, k]
            # Ja x nu
            xn0 = jw1 * n2 - jw2 * n1 + jl1 * m2 - jl2 * m1
            xn1 = jw2 * n0 - jw0 * n2 + jl2 * m0 - jl0 * m2
            xn2 = jw0 * n1 - jw1 * n0 + jl0 * m1 - jl1 * m0
            xn3 = jw1 * m2 - jw2 * m1
            xn4 = jw2 * m0 - jw0 * m2
            xn5 = jw0 * m1 - jw1 * m0
            # V_q = vq_a - vq_b - Ja x nu
            V0, V1, V2, V3, V4, V5 = dv0 - xn0, dv1 - xn1, dv2 - xn2, dv3 - xn3, dv4 - xn4, dv5 - xn5
            # G_q = aq_a - aq_b - vq_a x nu - v_a x (vq_a - vq_b) - Ja x acc
            u0, u1, u2, u3, u4, u5 = bca[1, 0, k], bca[1, 1, k], bca[1, 2, k], bca[1, 3, k], bca[1, 4, k], bca[1, 5, k]
            G0 = (bca[2, 0, k] - bcb[2, 0, k] - (u4 * n2 - u5 * n1 + u1 * m2 - u2 * m1)
                  - (wa1 * dv2 - wa2 * dv1 + va1 * dv5 - va2 * dv4) - (jw1 * c2 - jw2 * c1 + jl1 * c5 - jl2 * c4))
            G1 = (bca[2, 1, k] - bcb[2, 1, k] - (u5 * n0 - u3 * n2 + u2 * m0 - u0 * m2)
                  - (wa2 * dv0 - wa0 * dv2 + va2 * dv3 - va0 * dv5) - (jw2 * c0 - jw0 * c2 + jl2 * c3 - jl0 * c5))
            G2 = (bca[2, 2, k] - bcb[2, 2, k] - (u3 * n1 - u4 * n0 + u0 * m1 - u1 * m0)
                  - (wa0 * dv1 - wa1 * dv0 + va0 * dv4 - va1 * dv3) - (jw0 * c1 - jw1 * c0 + jl0 * c4 - jl1 * c3))
            G3 = (bca[2, 3, k] - bcb[2, 3, k] - (u4 * m2 - u5 * m1) - (wa1 * dv5 - wa2 * dv4) - (jw1 * c5 - jw2 * c4))
            G4 = (bca[2, 4, k] - bcb[2, 4, k] - (u5 * m0 - u3 * m2) - (wa2 * dv3 - wa0 * dv5) - (jw2 * c3 - jw0 * c5))
            G5 = (bca[2, 5, k] - bcb[2, 5, k] - (u3 * m1 - u4 * m0) - (wa0 * dv4 - wa1 * dv3) - (jw0 * c4 - jw1 * c3))
            # G_v = av_a - av_b - Ja x nu - v_a x (Ja - Jb)
            H0 = bca[3, 0, k] - bcb[3, 0, k] - xn0 - (wa1 * jd2 - wa2 * jd1 + va1 * jd5 - va2 * jd4)
            H1 = bca[3, 1, k] - bcb[3, 1, k] - xn1 - (wa2 * jd0 - wa0 * jd2 + va2 * jd3 - va0 * jd5)
            H2 = bca[3, 2, k] - bcb[3, 2, k] - xn2 - (wa0 * jd1 - wa1 * jd0 + va0 * jd4 - va1 * jd3)
            H3 = bca[3, 3, k] - bcb[3, 3, k] - xn3 - (wa1 * jd5 - wa2 * jd4)
            H4 = bca[3, 4, k] - bcb[3, 4, k] - xn4 - (wa2 * jd3 - wa0 * jd5)
            H5 = bca[3, 5, k] - bcb[3, 5, k] - xn5 - (wa0 * jd4 - wa1 * jd3)
            # into frame A (linear: AX_o^-1 of the sums), with Baumgarte's velocity terms
            _inv_act_col(RA, pA, jd0, jd1, jd2, jd3, jd4, jd5, JJ, ro, k)
            _inv_act_col(RA, pA, G0 + a2 * V0, G1 + a2 * V1, G2 + a2 * V2, G3 + a2 * V3, G4 + a2 * V4,
                         G5 + a2 * V5, GQ, ro, k)
            _inv_act_col(RA, pA, H0 + a2 * jd0, H1 + a2 * jd1, H2 + a2 * jd2, H3 + a2 * jd3, H4 + a2 * jd4,
                         H5 + a2 * jd5, GV, ro, k)
        if b2 != 0.0:
            # the error term: s beta^2 Jr^-1(e) BX_o^-1 (J_b - J_a), s = -1 (e decreases along J v)
            for x in range(3):
                for y in range(3):
                    Rab[x, y] = RA[0, x] * RB[0, y] + RA[1, x] * RB[1, y] + RA[2, x] * RB[2, y]
                pab[x] = RA[0, x] * (pB[0] - pA[0]) + RA[1, x] * (pB[1] - pA[1]) + RA[2, x] * (pB[2] - pA[2])
            log6(Rab, pab, e6)
            _jr_inv(e6, T, Jr)
            r00, r01, r02, r10, r11, r12, r20, r21, r22 = (RB[0, 0], RB[0, 1], RB[0, 2], RB[1, 0], RB[1, 1], RB[1, 2],
                                                           RB[2, 0], RB[2, 1], RB[2, 2])
            for k in range(nv):
                # y = BX_o^-1 (J_b - J_a): [RB^T (l - pB x w); RB^T w]
                w0, w1, w2 = bcb[0, 3, k] - bca[0, 3, k], bcb[0, 4, k] - bca[0, 4, k], bcb[0, 5, k] - bca[0, 5, k]
                l0 = bcb[0, 0, k] - bca[0, 0, k] - (pB[1] * w2 - pB[2] * w1)
                l1 = bcb[0, 1, k] - bca[0, 1, k] - (pB[2] * w0 - pB[0] * w2)
                l2 = bcb[0, 2, k] - bca[0, 2, k] - (pB[0] * w1 - pB[1] * w0)
                y0 = r00 * l0 + r10 * l1 + r20 * l2
                y1 = r01 * l0 + r11 * l1 + r21 * l2
                y2 = r02 * l0 + r12 * l1 + r22 * l2
                y3 = r00 * w0 + r10 * w1 + r20 * w2
                y4 = r01 * w0 + r11 * w1 + r21 * w2
                y5 = r02 * w0 + r12 * w1 + r22 * w2
                for x in range(6):
                    GQ[ro + x, k] -= b2 * (Jr[x, 0] * y0 + Jr[x, 1] * y1 + Jr[x, 2] * y2 + Jr[x, 3] * y3
                                           + Jr[x, 4] * y4 + Jr[x, 5] * y5)
        # the force: oX_A^* lm on a (fixed in A: no correction), its opposite on b:
        # dtq -= J_b^T ((J_b - J_a) x* f)
        _loop_wrench(RA, pA, lm[ro:ro + 6], f6)
        if b > 0:
            f0, f1, f2, h0, h1, h2 = f6[0], f6[1], f6[2], f6[3], f6[4], f6[5]
            for k in range(nv):
                v0, v1, v2 = bcb[0, 0, k] - bca[0, 0, k], bcb[0, 1, k] - bca[0, 1, k], bcb[0, 2, k] - bca[0, 2, k]
                w0, w1, w2 = bcb[0, 3, k] - bca[0, 3, k], bcb[0, 4, k] - bca[0, 4, k], bcb[0, 5, k] - bca[0, 5, k]
                DF[0, k] = w1 * f2 - w2 * f1
                DF[1, k] = w2 * f0 - w0 * f2
                DF[2, k] = w0 * f1 - w1 * f0
                DF[3, k] = w1 * h2 - w2 * h1 + v1 * f2 - v2 * f1
                DF[4, k] = w2 * h0 - w0 * h2 + v2 * f0 - v0 * f2
                DF[5, k] = w0 * h1 - w1 * h0 + v0 * f1 - v1 * f0
            for x in range(6):             # DF is already the whole bracket
                f6[x] = 0.0
            _correct(b, parent, vadr, jnv, bcb, f6, DF, dtq)


@njit(cache=True)
def _inv_act_col(R, p, y0, y1, y2, y3, y4, y5, out, r0, k):
    """out[r0:r0 + 6, k] = oX_f^-1 y for the frame (R, p): [R^T (y_lin - p x y_ang); R^T y_ang]."""
    l0 = y0 - (p[1] * y5 - p[2] * y4)
    l1 = y1 - (p[2] * y3 - p[0] * y5)
    l2 = y2 - (p[0] * y4 - p[1] * y3)
    for a in range(3):
        out[r0 + a, k] = R[0, a] * l0 + R[1, a] * l1 + R[2, a] * l2
        out[r0 + 3 + a, k] = R[0, a] * y3 + R[1, a] * y4 + R[2, a] * y5


# ---------------------------------------------------------------------------------------
# the kernel
@njit(cache=True)
def _core(mi, mf, ws, lam, ci, cf, li, lf, dws, sw, alpha, beta, out):
    """Steps 2-4 of the module docstring at the q'', lambda the forward solve left in ``sw``
    (:func:`_carve`); out (nv + m, 3 nv) = [[dq''/dq, dq''/dv, dq''/dtau], [dlambda/dq, ...]]."""
    nb, nq, nv = model_sizes(mi)
    m = out.shape[0] - nv
    ng = m - 6 * li.shape[0]
    q, v, tau, fwd, qdd, lm, fext, dtq, dtv, JJ, GQ, GV, Y0, Lam, BC, PC, DF, DU, sc = _carve(sw, nb, nq, nv, m)
    kinematics_pass(mi, mf, ws, q, v, qdd, np.int64(ACC), np.bool_(True), np.bool_(True))
    oR, op = unpack_data(ws, nb, nv)[:2]
    for i in range(nb):
        for x in range(6):
            fext[i, x] = 0.0
    st = _geometric_fext(oR, op, ci, cf, lm, fext, sc)
    if st != OK:
        return st
    _loop_fext(oR, op, li, lf, lm[ng:], fext, sc)
    LD = _unpack_dws(dws, nb, nv)[14]
    # (F): d(M q'' + b - J^T lambda)/dq, dv at fixed q'', lambda, and M
    _derivatives_from_kinematics(mi, mf, ws, dws, _any(q), _any(v), _any(qdd), fext, False, dtq, dtv, LD)
    # (G) with Baumgarte's terms, and the forces' correction of dtq
    st = _geometric_rows(mi, mf, ws, dws, ci, cf, lm, alpha, beta, JJ, GQ, GV, BC, PC, DF, DU, sc, dtq)
    if st != OK:
        return st
    _loop_rows(mi, mf, ws, dws, li, lf, lm, alpha, beta, ng, JJ, GQ, GV, BC, DF, sc, dtq)
    # the KKT of the derivatives: X0 = M^-1 [-dF/dq, -dF/dv, 1]
    if _ltdl_factor(LD, lam) != OK:
        return SINGULAR
    X = out[:nv]
    R = out[nv:]
    n3 = 3 * nv
    for r in range(nv):
        for c in range(nv):
            X[r, c] = -dtq[r, c]
            X[r, nv + c] = -dtv[r, c]
            X[r, 2 * nv + c] = 1.0 if r == c else 0.0
    _lit_rows(LD, lam, X)
    _dinv_li_rows(LD, lam, X)
    # Y0 = M^-1 J^T, Lambda = J M^-1 J^T; R = B - J X0
    _ltdl_inverse_congruence(LD, lam, JJ, Y0, Lam)
    for r in range(m):
        for c in range(nv):
            R[r, c] = -GQ[r, c]
            R[r, nv + c] = -GV[r, c]
            R[r, 2 * nv + c] = 0.0
        for d in range(nv):
            jd = JJ[r, d]
            if jd != 0.0:
                for c in range(n3):
                    R[r, c] -= jd * X[d, c]
    # Lambda = L L^T (independent rows: every pivot above PIVOT_TOL of the largest diagonal)
    if not dense.cholesky(Lam, m, PIVOT_TOL):
        return DEPENDENT
    # Y = Lambda^-1 R, rows at a time
    for i in range(m):
        for j in range(i):
            l = Lam[i, j]
            for c in range(n3):
                R[i, c] -= l * R[j, c]
        w = 1.0 / Lam[i, i]
        for c in range(n3):
            R[i, c] *= w
    for i in range(m - 1, -1, -1):
        for j in range(i + 1, m):
            l = Lam[j, i]
            for c in range(n3):
                R[i, c] -= l * R[j, c]
        w = 1.0 / Lam[i, i]
        for c in range(n3):
            R[i, c] *= w
    # X = X0 + M^-1 J^T Y
    for d in range(nv):
        for r in range(m):
            y = Y0[d, r]
            if y != 0.0:
                for c in range(n3):
                    X[d, c] += y * R[r, c]
    return OK if all_finite(out) else OVERFLOW


@njit(cache=True)
def _copy_inputs(q, v, tau, qc, vc, tc):
    for k in range(qc.shape[0]):
        qc[k] = q[k]
    for k in range(vc.shape[0]):
        vc[k] = v[k]
        tc[k] = tau[k]


GEOMETRIC, LOOPS = 0, 1


@njit(cache=True)
def derivatives_kernel(form, buf, lam, cw, li, lf, lw, dws, sw, q, v, tau, alpha, beta, out):
    """The derivatives of one state into out (nv + m, 3 nv), m the rows: of ``_constraint_solve``
    for the constraints packed in ``cw`` (``form`` GEOMETRIC, a model without loops: li, lf
    empty), or of ``constrained_solve`` (FD) for the model's loops (``form`` LOOPS; ``lw`` the
    loop workspace).  ``buf``: the packed model and its workspace (``Model._packed``), ``lam``
    the dof parents, ``dws`` the RNEA-derivative workspace, ``sw`` :func:`sw_size` floats.
    Returns OK or a status code (then nothing is to be read from out).  One kernel for both
    forms and for the stacks' loop: every further compiled caller costs ~6 s of LLVM on the
    whole linked code."""
    mi, mf, ws = unpack_packed(buf)
    nb, nq, nv = model_sizes(mi)
    nl = li.shape[0]
    m = int(cw[1]) if form == GEOMETRIC else 6 * nl
    if q.shape[0] != nq or v.shape[0] != nv or tau.shape[0] != nv or out.shape[0] != nv + m or out.shape[1] != 3 * nv:
        return BAD_SHAPE
    qc, vc, tc, fwd, qdd = _carve(sw, nb, nq, nv, m)[:5]
    _copy_inputs(q, v, tau, qc, vc, tc)
    if form == GEOMETRIC:
        st = _constraint_solve(buf, lam, cw, _any(qc), _any(vc), _any(tc), alpha, beta, fwd)
        nc = int(cw[0])
        ci = _view(cw, 2, (nc, 4))
        cf = _view(cw, 2 + 4 * nc, (nc, NF))
    else:
        force = _view(sw, nq + 2 * nv + nv, (nl, 6))            # lambda as (nl, 6)
        st = constrained_solve(mi, mf, ws, li, lf, lam, lw, _any(qc), _any(vc), _any(tc), np.int64(FD), alpha, beta,
                               qdd, force)
        ci = _view(sw, 0, (0, 4))
        cf = _view(sw, 0, (0, NF))
    if st != OK:
        return st
    return _core(mi, mf, ws, lam, ci, cf, li, lf, dws, sw, alpha, beta, out)


@njit(parallel=True, cache=True)
def derivatives_batch(form, BUF, lam, CW, li, lf, LW, DW, SW, Q, V, T, alpha, beta, OUT, status):
    """:func:`derivatives_kernel` on a stack: one parallel loop, each thread with its own rows of
    the packed model (its workspace), the constraint buffer, the loop workspace and the scratch
    (the rows typed as the single-state entry's arguments: the same compiled kernel)."""
    nt, n = BUF.shape[0], OUT.shape[0]
    for t in prange(nt):
        lo, hi = chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = derivatives_kernel(form, pick(BUF, t), lam, pick(CW, t), li, lf, pick(LW, t), pick(DW, t),
                                           pick(SW, t), _any(pick(Q, k)), _any(pick(V, k)), _any(pick(T, k)), alpha,
                                           beta, pick(OUT, k))
