"""Compiled forward dynamics under geometric constraints (``linkdyn.constraints``).

One kernel, :func:`_constraint_solve`, does what ``constrained_dynamics`` does in NumPy for the
constraints made of points and frames fixed on bodies (PointFixed, PointOnPlane, FrameFixed,
Distance), on a model without loops:

1. the kinematics pass with q'' = 0 and no gravity (Featherstone 2008, ch. 2): body poses,
   spatial velocities v_i = [v; w] and bias accelerations a_i = [a; dw] (body coordinates);
2. b = C v + g (+ joint friction) by the force passes of RNEA on that pass, and M by CRBA
   (Walker and Orin 1982), which also leaves the world motion J_d = X_i S_d of every dof;
3. each constraint's rows J (world axes) and J' v from the poses, velocities and bias
   accelerations.  A point r (body coordinates) of body i at world position x moves with
   x' = sum_d (J_d,lin + J_d,ang x x) q'_d, and its classical acceleration at q'' = 0 is
   J' v = R_i (a + dw x r + w x (v + w x r)): the spatial acceleration shifted to the point
   (a + dw x r), plus w x (the point's velocity), the term that turns a spatial acceleration
   into a classical one (Featherstone 2008, sec. 2.11);
4. the Lagrange-multiplier form M q'' + b = tau + J^T lambda, J q'' = rhs (Featherstone 2008,
   ch. 8; Baumgarte 1972 for rhs = -J' v - 2 alpha J v - beta^2 c): M factorized tree-sparse
   (LTDL, Featherstone 2008, sec. 6.5), Lambda = J M^-1 J^T solved by pivoted Cholesky; if
   Lambda is rank deficient (redundant rows) lambda is taken as the least-norm solution,
   lambda = G (G^T G)^-2 G^T rhs' for Lambda = G G^T (the pseudo-inverse, as ``lstsq``).

Constraints are packed into the float buffer ``cw`` (:func:`_cw_size`), which also holds every
workspace the kernel uses:

    [nc, m] | ci (nc, 4): kind, body a, body b, first row | cf (nc, NF) | workspaces

with cf per kind (points in body coordinates, i.e. the frame's placement applied):

    POINT  (PointFixed)    r (3), target (3), has target
    PLANE  (PointOnPlane)  r (3), unit normal (3), offset
    FRAME  (FrameFixed)    R_f (9, row-major), p_f (3), target R (9), target p (3), has target
    DIST   (Distance)      r_a (3), r_b (3), length
"""
import math

import numpy as np
from numba import njit

from ..dynamics.cholesky import _ltdl_factor, _ltdl_inverse_congruence, _ltdl_solve
from ..dynamics.crba import _crba_from_kinematics
from ..dynamics.rnea import _rnea_from_kinematics
from ..loops._kernels import PIVOT_TOL, log6, pivoted_solve
from .._kernels import dense
from .._kernels.layout import _view, model_sizes, no_forces, unpack_data, unpack_model, unpack_packed
from .._kernels.passes import ACC, OK, SINGULAR, check_inputs, kinematics_pass

POINT, PLANE, FRAME, DIST = 0, 1, 2, 3
NF = 25                  # floats per constraint in cf
#: status codes beyond passes' (the public layer falls back to the NumPy path, which explains)
DEGENERATE = 101         # a Distance whose two points coincide


def _cw_size(nc, m, nv):
    """Floats of the constraint buffer for nc constraints with m rows on nv dofs."""
    return 2 + 4 * nc + NF * nc + nv + nv * nv + 2 * m * nv + 2 * m * m + 6 * m + 2 * nv + 3 * nv + 32


@njit(inline="always", cache=True)
def _point_rows(oR, op, vel, acc, Jw, parent, vadr, jnv, i, r, sgn, rows, x, pv, pa):
    """For the point r (body coordinates) of body i: x (3) its world position, pv (3) its world
    velocity and pa (3) its classical acceleration at q'' = 0 (world axes); and
    rows (3, nv) += sgn * its Jacobian (world axes)."""
    wx, wy, wz = vel[i, 3], vel[i, 4], vel[i, 5]
    rx, ry, rz = r[0], r[1], r[2]
    # velocity of the point in body coordinates: v + w x r
    ux = vel[i, 0] + wy * rz - wz * ry
    uy = vel[i, 1] + wz * rx - wx * rz
    uz = vel[i, 2] + wx * ry - wy * rx
    dx, dy, dz = acc[i, 3], acc[i, 4], acc[i, 5]
    # classical acceleration in body coordinates: a + dw x r + w x (v + w x r)
    ax = acc[i, 0] + dy * rz - dz * ry + wy * uz - wz * uy
    ay = acc[i, 1] + dz * rx - dx * rz + wz * ux - wx * uz
    az = acc[i, 2] + dx * ry - dy * rx + wx * uy - wy * ux
    for k in range(3):
        x[k] = op[i, k] + oR[i, k, 0] * rx + oR[i, k, 1] * ry + oR[i, k, 2] * rz
        pv[k] = oR[i, k, 0] * ux + oR[i, k, 1] * uy + oR[i, k, 2] * uz
        pa[k] = oR[i, k, 0] * ax + oR[i, k, 1] * ay + oR[i, k, 2] * az
    x0, x1, x2 = x[0], x[1], x[2]
    j = i
    while j > 0:
        for d in range(vadr[j], vadr[j] + jnv[j]):
            l0, l1, l2, w0, w1, w2 = Jw[d, 0], Jw[d, 1], Jw[d, 2], Jw[d, 3], Jw[d, 4], Jw[d, 5]
            rows[0, d] += sgn * (l0 + w1 * x2 - w2 * x1)
            rows[1, d] += sgn * (l1 + w2 * x0 - w0 * x2)
            rows[2, d] += sgn * (l2 + w0 * x1 - w1 * x0)
        j = parent[j]


@njit(inline="always", cache=True)
def _min_norm(A, piv, rank, c, K, w, out):
    """out = the least-norm (pseudo-inverse) solution of Lambda out = c, Lambda = G G^T (m, m)
    of rank ``rank``, from the pivoted Cholesky factor G that :func:`pivoted_solve` left in A
    (G[i, k] = A[piv[i], piv[k]], i >= k, k < rank): out = G (G^T G)^-2 G^T c."""
    m = A.shape[0]
    n = rank
    # K = G^T G (n, n), w = G^T c
    for a in range(n):
        pa = int(piv[a])
        s = 0.0
        for i in range(a, m):
            s += A[int(piv[i]), pa] * c[int(piv[i])]
        w[a] = s
        for b in range(a, n):
            pb = int(piv[b])
            s = 0.0
            for i in range(b, m):
                ri = int(piv[i])
                s += A[ri, pa] * A[ri, pb]
            K[a, b] = s
            K[b, a] = s
    # Cholesky of K (positive definite: G has full column rank), then two solves with K
    if not dense.cholesky(K, n, 0.0):
        w[:n] = np.nan                  # (not reached for a full-rank G: the NaN says so downstream)
    for rep in range(2):
        dense.forward(K, n, w)
        dense.backward(K, n, w)
    for i in range(m):
        ri = int(piv[i])
        s = 0.0
        for a in range(min(i + 1, n)):
            s += A[ri, int(piv[a])] * w[a]
        out[ri] = s


@njit(cache=True)
def _constraint_solve(buf, lam, cw, q, v, tau, alpha, beta, out):
    """q'' and lambda of M q'' + b = tau + J^T lambda, J q'' = -J' v - 2 alpha J v - beta^2 c
    for the constraints packed in ``cw`` (module docstring), on the model packed in ``buf``
    (``Model._packed``; ``lam`` its dof parents).  out (nv + m + 1): q'', lambda (the
    constraints' rows in order), and the largest |J q'' - rhs|.  Returns OK, an input code,
    SINGULAR (M not positive definite) or DEGENERATE."""
    mi, mf, ws = unpack_packed(buf)
    nb, nq, nv = model_sizes(mi)
    st = check_inputs(mi, q, v, tau, True)
    if st != OK:
        return st
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, _, _, _ = unpack_model(mi, mf)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, U, Jw, u, tmp, W6, W3 = unpack_data(ws, nb, nv)
    nc, m = int(cw[0]), int(cw[1])
    o = 2
    ci = _view(cw, o, (nc, 4)); o += 4 * nc
    cf = _view(cw, o, (nc, NF)); o += NF * nc
    zero = _view(cw, o, (nv,)); o += nv
    H = _view(cw, o, (nv, nv)); o += nv * nv
    J = _view(cw, o, (m, nv)); o += m * nv
    Y = _view(cw, o, (nv, m)); o += nv * m
    Lam = _view(cw, o, (m, m)); o += m * m
    K = _view(cw, o, (m, m)); o += m * m
    rhs = _view(cw, o, (m,)); o += m
    c = _view(cw, o, (m,)); o += m
    mu = _view(cw, o, (m,)); o += m
    piv = _view(cw, o, (m,)); o += m
    w = _view(cw, o, (m,)); o += m
    err = _view(cw, o, (m,)); o += m
    x = _view(cw, o, (nv,)); o += nv
    b = _view(cw, o, (nv,)); o += nv
    S3 = _view(cw, o, (3, nv)); o += 3 * nv
    sc = _view(cw, o, (32,))
    px, pv, pa = sc[0:3], sc[3:6], sc[6:9]
    qx, qv, qa = sc[9:12], sc[12:15], sc[15:18]
    Rw = _view(cw, o + 18, (3, 3))
    e6 = sc[27:30]
    # 1-2: the pass (q'' = 0, no gravity), b (gravity added body by body) and M
    for d in range(nv):
        zero[d] = 0.0
    kinematics_pass(mi, mf, ws, q, v, zero, np.int64(ACC), np.bool_(True), np.bool_(False))
    _rnea_from_kinematics(mi, mf, ws, q, v, zero, no_forces(buf), np.bool_(True), b)
    _crba_from_kinematics(mi, mf, ws, H)
    # 3: the rows, their bias J' v and error c (err, 0 where there is no target)
    for r in range(m):
        err[r] = 0.0
        for d in range(nv):
            J[r, d] = 0.0
    for k in range(nc):
        kind, ia, ib, r0 = int(ci[k, 0]), int(ci[k, 1]), int(ci[k, 2]), int(ci[k, 3])
        f = cf[k]
        if kind == POINT:
            _point_rows(oR, op, vel, acc, Jw, parent, vadr, jnv, ia, f[0:3], 1.0, J[r0:r0 + 3], px, pv, pa)
            for a in range(3):
                rhs[r0 + a] = -pa[a]
                err[r0 + a] = px[a] - f[3 + a] if f[6] != 0.0 else 0.0
        elif kind == PLANE:
            for a in range(3):
                for d in range(nv):
                    S3[a, d] = 0.0
            _point_rows(oR, op, vel, acc, Jw, parent, vadr, jnv, ia, f[0:3], 1.0, S3, px, pv, pa)
            n0, n1, n2 = f[3], f[4], f[5]
            for d in range(nv):
                J[r0, d] = n0 * S3[0, d] + n1 * S3[1, d] + n2 * S3[2, d]
            rhs[r0] = -(n0 * pa[0] + n1 * pa[1] + n2 * pa[2])
            err[r0] = n0 * px[0] + n1 * px[1] + n2 * px[2] - f[6]
        elif kind == FRAME:
            _point_rows(oR, op, vel, acc, Jw, parent, vadr, jnv, ia, f[9:12], 1.0, J[r0:r0 + 3], px, pv, pa)
            j = ia
            while j > 0:
                for d in range(vadr[j], vadr[j] + jnv[j]):
                    J[r0 + 3, d] = Jw[d, 3]
                    J[r0 + 4, d] = Jw[d, 4]
                    J[r0 + 5, d] = Jw[d, 5]
                j = parent[j]
            for a in range(3):
                rhs[r0 + a] = -pa[a]
                rhs[r0 + 3 + a] = -(oR[ia, a, 0] * acc[ia, 3] + oR[ia, a, 1] * acc[ia, 4] + oR[ia, a, 2] * acc[ia, 5])
            if f[24] != 0.0:
                # c = [x - x_t; log(R R_t^T)], R = R_i R_f
                for a in range(3):
                    for bb in range(3):
                        Rw[a, bb] = oR[ia, a, 0] * f[bb] + oR[ia, a, 1] * f[3 + bb] + oR[ia, a, 2] * f[6 + bb]
                for a in range(3):
                    for bb in range(3):
                        s = 0.0
                        for kk in range(3):
                            s += Rw[a, kk] * f[12 + 3 * bb + kk]
                        W3[0, a, bb] = s
                    e6[a] = 0.0
                log6(W3[0], e6, W6[0, 0])
                for a in range(3):
                    err[r0 + a] = px[a] - f[21 + a]
                    err[r0 + 3 + a] = W6[0, 0, 3 + a]
        else:   # DIST
            for a in range(3):
                for d in range(nv):
                    S3[a, d] = 0.0
            _point_rows(oR, op, vel, acc, Jw, parent, vadr, jnv, ia, f[0:3], 1.0, S3, px, pv, pa)
            _point_rows(oR, op, vel, acc, Jw, parent, vadr, jnv, ib, f[3:6], -1.0, S3, qx, qv, qa)
            L = math.sqrt((px[0] - qx[0]) ** 2 + (px[1] - qx[1]) ** 2 + (px[2] - qx[2]) ** 2)
            if not L > 0.0:
                return DEGENERATE
            u0, u1, u2 = (px[0] - qx[0]) / L, (px[1] - qx[1]) / L, (px[2] - qx[2]) / L
            for d in range(nv):
                J[r0, d] = u0 * S3[0, d] + u1 * S3[1, d] + u2 * S3[2, d]
            d0, d1, d2 = pv[0] - qv[0], pv[1] - qv[1], pv[2] - qv[2]
            ud = u0 * d0 + u1 * d1 + u2 * d2
            # d/dt (u . d') = u . d'' + (|d'|^2 - (u . d')^2) / L
            rhs[r0] = -(u0 * (pa[0] - qa[0]) + u1 * (pa[1] - qa[1]) + u2 * (pa[2] - qa[2])
                        + (d0 * d0 + d1 * d1 + d2 * d2 - ud * ud) / L)
            err[r0] = L - f[6]
    # Baumgarte: rhs = -J' v - 2 alpha J v - beta^2 c
    b2 = beta * beta
    for r in range(m):
        s = 0.0
        for d in range(nv):
            s += J[r, d] * v[d]
        rhs[r] -= 2.0 * alpha * s + b2 * err[r]
    # 4: the multiplier form through M^-1
    for d in range(nv):
        x[d] = tau[d] - b[d]
    if _ltdl_factor(H, lam) != OK:
        return SINGULAR
    _ltdl_inverse_congruence(H, lam, J, Y, Lam)               # Y = M^-1 J^T, Lambda = J M^-1 J^T
    _ltdl_solve(H, lam, x)                                    # M^-1 (tau - b)
    for r in range(m):
        s = rhs[r]
        for d in range(nv):
            s -= J[r, d] * x[d]
        c[r] = s                                              # Lambda lambda = rhs - J M^-1 (tau - b)
    rank = pivoted_solve(Lam, c, piv, mu, PIVOT_TOL)
    if rank < m:
        _min_norm(Lam, piv, rank, c, K, w, mu)
    for d in range(nv):
        s = x[d]
        for r in range(m):
            s += Y[d, r] * mu[r]
        out[d] = s
    res = 0.0
    for r in range(m):
        out[nv + r] = mu[r]
        s = -rhs[r]
        for d in range(nv):
            s += J[r, d] * out[d]
        res = max(res, abs(s))
    out[nv + m] = res
    return OK
