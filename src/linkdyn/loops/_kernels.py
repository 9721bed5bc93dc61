"""Compiled loop-closure kinematics (Nakamura and Yamane 2000 secs. 2.2-2.3).

A loop k joins frame A (the virtual link's frame, pose ``a_pose`` on body ``a``) to frame B
(pose ``b_pose`` on the real link ``b``).  Everything is expressed in frame A:

    e_k   = log6(aMb)                                   loop error (zero when closed)
    J_Lk  = X_A^-1 (J_a^world - J_b^world)              (6, nv): J_Lk q' = v_A - v_B   (eq. 5)
    g_k   = a_A - X_AB a_B + v_A x X_AB v_B             J'_Lk q' (q'' = 0)             (eq. 16)

with v, a the spatial velocity and bias acceleration (q'' = 0) of each frame in its own
coordinates.  Near closure d e / dt = -J_L q', so a Newton step on e solves J_L dq = e.

Loops are packed as ``li`` (nl, 4) int64 [a, b, first cut velocity, cut nv] and ``lf``
(nl, 24) float64 [R_a (9), p_a (3), R_b (9), p_b (3)] (``Model._loop_i``, ``Model._loop_f``).
"""
import math

from numba import njit, prange, types

import numpy as np

from .._kernels import njit_on_first_use
from .._kernels.batch import chunk, pick
from .._kernels.layout import _view, model_sizes, unpack_data, unpack_model
from .._kernels.passes import ACC, OK, POS, SINGULAR, VEL, check_inputs, kinematics_pass
from .._kernels.spatial_nb import motion_act, motion_cross_add, motion_inv_act
from ..dynamics.cholesky import _ltdl_factor, _ltdl_inverse_congruence, _ltdl_solve
from ..dynamics.crba import _crba_from_kinematics
from ..dynamics.rnea import _rnea_from_kinematics

_NO_FORCE = np.zeros((0, 6))
# The helpers below are plain @njit functions, not inline="always": Numba's IR-level inlining
# re-runs type inference over the caller for every inlined body, and made constrained_solve and
# loop_terms take 19.6 s and 5.8 s of CPU to compile (15.7 s and 4.1 s without it), with the same
# per-call time (34 us for the four-bar's forward dynamics either way).


@njit(cache=True)
def frame_in_world(oR, op, b, lf, off, R, p):
    """(R, p) = oM_b bMf for the frame stored at lf[off:off + 12] (R row-major, then p)."""
    for r in range(3):
        for c in range(3):
            R[r, c] = oR[b, r, 0] * lf[off + c] + oR[b, r, 1] * lf[off + 3 + c] + oR[b, r, 2] * lf[off + 6 + c]
        p[r] = (op[b, r] + oR[b, r, 0] * lf[off + 9] + oR[b, r, 1] * lf[off + 10]
                + oR[b, r, 2] * lf[off + 11])


@njit(cache=True)
def log6(R, p, out):
    """out = log(M) = [v; w] of the pose M = (R, p): exp([v; w]) = M.  The rotation goes
    through its quaternion (Shepperd's method), which is accurate at every angle."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr > 0.0:
        s = 2.0 * math.sqrt(1.0 + tr)
        w, x, y, z = 0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        w, x, y, z = (R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s
    elif R[1, 1] > R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        w, x, y, z = (R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s
    else:
        s = 2.0 * math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        w, x, y, z = (R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s
    if w < 0.0:
        w, x, y, z = -w, -x, -y, -z
    n = math.sqrt(x * x + y * y + z * z)
    th = 2.0 * math.atan2(n, w)
    k = 2.0 + th * th / 12.0 if n < 1e-8 else th / n      # w = theta * axis = k [x, y, z]
    wx, wy, wz = k * x, k * y, k * z
    # v = V^-1 p,  V^-1 = 1 - [w]/2 + c [w]^2,  c = (1 - (th/2) cot(th/2)) / th^2
    if th < 1e-4:
        c = 1.0 / 12.0 + th * th / 720.0
    else:
        c = (1.0 - 0.5 * th * math.cos(0.5 * th) / math.sin(0.5 * th)) / (th * th)
    cx = wy * p[2] - wz * p[1]           # w x p
    cy = wz * p[0] - wx * p[2]
    cz = wx * p[1] - wy * p[0]
    ccx = wy * cz - wz * cy              # w x (w x p)
    ccy = wz * cx - wx * cz
    ccz = wx * cy - wy * cx
    out[0] = p[0] - 0.5 * cx + c * ccx
    out[1] = p[1] - 0.5 * cy + c * ccy
    out[2] = p[2] - 0.5 * cz + c * ccz
    out[3], out[4], out[5] = wx, wy, wz


# One signature for its callers (compiled on first use): from Python q and v are C-contiguous,
# from constrained_solve any layout, and each was a compile of its own (2.1 s of CPU each)
_C = dict(layout="C", readonly=True)
_LOOP_TERMS_SIG = types.void(types.Array(types.int64, 2, **_C), types.Array(types.float64, 1, **_C),
                             types.Array(types.float64, 1, "C"), types.Array(types.int64, 2, **_C),
                             types.Array(types.float64, 2, **_C), types.Array(types.float64, 1, "A"),
                             types.Array(types.float64, 1, "A"), types.int64, types.Array(types.float64, 2, "C"),
                             types.Array(types.float64, 2, "C"), types.Array(types.float64, 1, "C"))


@njit_on_first_use(_LOOP_TERMS_SIG, cache=True)
def loop_terms(mi, mf, ws, li, lf, q, v, level, e, JL, g):
    """Fill, for every loop k, e[k] (6), and for ``level`` >= VEL JL[6k:6k+6] (6, nv); for
    ``level`` == ACC also g[6k:6k+6] = J'_L q'.  The kinematics pass runs here (q'' = 0, no
    gravity).  ``v`` is ignored below ACC.  Uses the workspace rows U (nv, 6: the dofs' world
    motions), u (a zero q''), W6 and W3."""
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, _, _, _ = unpack_model(mi, mf)
    nb, nq, nv = model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, Jw, Dinv, zero, tmp, W6, W3 = unpack_data(ws, nb, nv)
    for d in range(nv):
        zero[d] = 0.0
    kinematics_pass(mi, mf, ws, q, v if level == ACC else zero, zero, np.int64(level if level == ACC else POS), np.bool_(True), np.bool_(False))
    Ra, Rb, Rab = W3[0], W3[1], W3[2]
    X = W6[0]            # six scratch 6-vectors (tmp has only nb rows)
    pa, pb, pab, t1, t2, t3 = X[0, :3], X[0, 3:], X[1, :3], X[2], X[3], X[4]
    if level >= VEL:
        for j in range(1, nb):
            for d in range(vadr[j], vadr[j] + jnv[j]):
                motion_act(oR[j], op[j], S[d], Jw[d])       # dof d in the world, at the origin
    for k in range(li.shape[0]):
        a, b = li[k, 0], li[k, 1]
        frame_in_world(oR, op, a, lf[k], 0, Ra, pa)
        frame_in_world(oR, op, b, lf[k], 12, Rb, pb)
        # aMb = oMa^-1 oMb
        for r in range(3):
            for c in range(3):
                Rab[r, c] = Ra[0, r] * Rb[0, c] + Ra[1, r] * Rb[1, c] + Ra[2, r] * Rb[2, c]
            pab[r] = (Ra[0, r] * (pb[0] - pa[0]) + Ra[1, r] * (pb[1] - pa[1]) + Ra[2, r] * (pb[2] - pa[2]))
        log6(Rab, pab, e[k])
        if level < VEL:
            continue
        rows = JL[6 * k:6 * k + 6]
        rows[:, :] = 0.0
        for side in range(2):
            j = a if side == 0 else b
            sgn = 1.0 if side == 0 else -1.0
            while j > 0:
                for d in range(vadr[j], vadr[j] + jnv[j]):
                    motion_inv_act(Ra, pa, Jw[d], t1)       # into frame A
                    for r in range(6):
                        rows[r, d] += sgn * t1[r]
                j = parent[j]
        if level < ACC:
            continue
        # g = a_A - X_AB a_B + v_A x X_AB v_B, each frame's motion from its body's (body frame)
        gk = g[6 * k:6 * k + 6]
        _body_to_frame_a(oR, op, a, vel[a], Ra, pa, t1, t3)      # v_A
        _body_to_frame_a(oR, op, a, acc[a], Ra, pa, gk, t3)      # a_A
        _body_to_frame_a(oR, op, b, acc[b], Ra, pa, t2, t3)      # X_AB a_B
        for r in range(6):
            gk[r] -= t2[r]
        _body_to_frame_a(oR, op, b, vel[b], Ra, pa, t2, t3)      # X_AB v_B
        motion_cross_add(t1, t2, gk)


@njit(cache=True)
def _body_to_frame_a(oR, op, j, x, Ra, pa, out, tmp):
    """out = motion x of body j (body frame) expressed in frame A (world pose Ra, pa)."""
    motion_act(oR[j], op[j], x, tmp)
    motion_inv_act(Ra, pa, tmp, out)


LEVELS = (POS, VEL, ACC)


# ---------------------------------------------------------------------------------------
# constrained dynamics on the real tree (the multiplier form, the Lagrange-multiplier form of the constrained equations of motion
FD, VELOCITY, POSITION = 0, 1, 2
PIVOT_TOL = 1e-10      # a constraint whose pivot in Lambda falls below this (relative) is dependent


@njit(cache=True)
def _carve(lw, nv, nl):
    # the layout that linkdyn._kernels.layout.loop_ws_size sizes
    m = 6 * nl
    o = 0
    H = _view(lw, o, (nv, nv)); o += nv * nv
    JR = _view(lw, o, (m, nv)); o += m * nv
    JP = _view(lw, o, (m, nv)); o += m * nv
    Y = _view(lw, o, (nv, m)); o += nv * m
    Lam = _view(lw, o, (m, m)); o += m * m
    g = _view(lw, o, (m,)); o += m
    c = _view(lw, o, (m,)); o += m
    mu = _view(lw, o, (m,)); o += m
    piv = _view(lw, o, (m,)); o += m
    x = _view(lw, o, (nv,)); o += nv
    b = _view(lw, o, (nv,)); o += nv
    t = _view(lw, o, (max(nv, 6),)); o += max(nv, 6)     # also a loop's 6 rows (J v): 6 even when nv < 6
    e = _view(lw, o, (nl, 6)); o += 6 * nl
    P = _view(lw, o, (nl, 6, 6)); o += 36 * nl
    Sinv = _view(lw, o, (nl, 6, 6))
    return H, JR, JP, Y, Lam, g, c, mu, piv, x, b, t, e, P, Sinv


@njit(cache=True)
def cut_projector(JL, c0, p, P, Sinv):
    """For the loop rows JL (6, nv) whose cut joint has velocities c0:c0+p: S = JL[:, cut]
    (the cut joint's motion subspace in the virtual link's frame), Sinv (p, 6) =
    (S^T S)^-1 S^T and P (6, 6) = 1 - S Sinv, the projector onto the directions the cut joint
    does not move in (P S = 0).  Returns False if S is rank-deficient."""
    # G = S^T S (p x p, p <= 6), inverted by Gauss-Jordan into Sinv[:, :p] (scratch)
    for r in range(6):
        for k in range(6):
            P[r, k] = 0.0
    for i in range(p):
        for j in range(p):
            s = 0.0
            for r in range(6):
                s += JL[r, c0 + i] * JL[r, c0 + j]
            P[i, j] = s                                   # G in P's corner
            Sinv[i, j] = 1.0 if i == j else 0.0
    for k in range(p):
        piv = P[k, k]
        if not piv > 1e-12:
            return False
        for j in range(p):
            P[k, j] /= piv
            Sinv[k, j] /= piv
        for i in range(p):
            if i != k:
                f = P[i, k]
                for j in range(p):
                    P[i, j] -= f * P[k, j]
                    Sinv[i, j] -= f * Sinv[k, j]
    # Sinv <- G^-1 S^T (p x 6), via P's rows as scratch for G^-1
    for i in range(p):
        for j in range(p):
            P[i, j] = Sinv[i, j]
    for i in range(p):
        for r in range(6):
            s = 0.0
            for j in range(p):
                s += P[i, j] * JL[r, c0 + j]
            Sinv[i, r] = s
    for r in range(6):
        for k in range(6):
            s = 0.0
            for j in range(p):
                s += JL[r, c0 + j] * Sinv[j, k]
            P[r, k] = (1.0 if r == k else 0.0) - s
    return True


@njit(cache=True)
def pivoted_factor(A, piv, tol):
    """Cholesky with diagonal pivoting of a symmetric positive semi-definite A (m, m), in place
    (L in the columns piv[:rank], lower part), stopping at a pivot <= tol * the largest
    diagonal.  Returns the rank (``pivoted_back`` solves with it)."""
    m = A.shape[0]
    for i in range(m):
        piv[i] = i
    d0 = 0.0
    for i in range(m):
        d0 = max(d0, A[i, i])
    rank = 0
    for k in range(m):
        # pivot: the largest remaining diagonal
        best, bi = -1.0, k
        for i in range(k, m):
            ii = int(piv[i])
            if A[ii, ii] > best:
                best, bi = A[ii, ii], i
        if not best > tol * d0:
            break
        tmp = piv[k]
        piv[k] = piv[bi]
        piv[bi] = tmp
        p = int(piv[k])
        l = math.sqrt(A[p, p])
        A[p, p] = l
        for i in range(k + 1, m):
            r = int(piv[i])
            A[r, p] /= l
        for i in range(k + 1, m):
            r = int(piv[i])
            for j in range(k + 1, i + 1):
                s = int(piv[j])
                A[r, s] -= A[r, p] * A[s, p]
                if r != s:
                    A[s, r] = A[r, s]
        rank += 1
    return rank


@njit(cache=True)
def pivoted_back(A, piv, rank, rhs, out):
    """out = the solution of A out = rhs with A factored by ``pivoted_factor`` (rank ``rank``):
    L L^T y = rhs on the pivoted leading block, the dependent unknowns zero."""
    m = A.shape[0]
    for i in range(m):
        out[i] = 0.0
    for k in range(rank):
        p = int(piv[k])
        s = rhs[p]
        for j in range(k):
            s -= A[p, int(piv[j])] * out[int(piv[j])]
        out[p] = s / A[p, p]
    for k in range(rank - 1, -1, -1):
        p = int(piv[k])
        s = out[p]
        for j in range(k + 1, rank):
            r = int(piv[j])
            s -= A[r, p] * out[r]
        out[p] = s / A[p, p]


@njit(cache=True)
def pivoted_solve(A, rhs, piv, out, tol):
    """out = a solution of A out = rhs for a symmetric positive semi-definite A (m, m),
    destroyed: Cholesky with diagonal pivoting, stopping at a pivot <= tol * the largest
    diagonal; the dependent unknowns are set to zero (rhs must lie in A's range, as the
    constraint accelerations of consistent loops do).  Returns the rank."""
    rank = pivoted_factor(A, piv, tol)
    pivoted_back(A, piv, rank, rhs, out)
    return rank


@njit(cache=True)
def constrained_solve(mi, mf, ws, li, lf, lam, lw, q, v, tau, mode, alpha, beta, out, force):
    """The multiplier form on the real tree, one kernel for three jobs (``mode``):

    * FD: out = q'' of  M q'' + b = tau + J^T lambda,  J q'' = -J' q' - 2 alpha J q' + beta^2 e
      (the Lagrange-multiplier form of the constrained equations of motion with Baumgarte's stabilization; e the loop error);
    * VELOCITY: out = dv with M dv = J^T mu, J (v + dv) = 0: the projection of v in the
      kinetic-energy metric, i.e. the velocity jump of a perfectly inelastic closure (Nakamura and Yamane 2000
      sec. 4.3, eqs. 20-33);
    * POSITION: out = dq with M dq = J^T mu, J dq = e: a Newton step on the loop error in the
      same metric (apply with ``integrate``).

    The cut joints (virtual links) carry no inertia, so their velocities are eliminated loop by
    loop: with S the cut joint's motion subspace (in the virtual link's frame), the rows P J_L
    (P = 1 - S (S^T S)^-1 S^T, so P S = 0) constrain the real tree, a torque on the cut joint
    acts on the real dofs as -K^T S (S^T S)^-1 tau_cut (K: the loop's rows on the real dofs),
    and afterwards the cut joint follows: x_cut = -(S^T S)^-1 S^T (K x_real + rest).  M is
    factorized tree-sparse (LTDL); Lambda = J M^-1 J^T is solved by pivoted Cholesky, so
    dependent constraints (3 of a planar loop's rows) drop out.  ``force`` (nl, 6): in FD mode
    each loop's force [f; n] of the real link on the virtual link, in the virtual link's frame;
    in VELOCITY mode the impulse of the jump, likewise.
    ``lam`` (nv,) int64: the dof parents (``dof_parents``); ``lw``: ``loop_ws_size`` floats.
    Returns a status (OK, SINGULAR, or an input code)."""
    nb, nq, nv = model_sizes(mi)
    nl = li.shape[0]
    m = 6 * nl
    st = check_inputs(mi, q, v, tau, mode == FD)
    if st != OK:
        return st
    H, JR, JP, Y, Lam, g, c, mu, piv, x, b, t, e, PP, SS = _carve(lw, nv, nl)
    # the loops' error, rows and (FD) bias; the kinematics pass runs inside
    loop_terms(mi, mf, ws, li, lf, q[::1], v[::1], np.int64(ACC if mode == FD else VEL), e, JR, g)
    # b and M on that same pass (it ran without gravity; the bias adds it body by body)
    if mode == FD:
        for d in range(nv):
            t[d] = 0.0
        _rnea_from_kinematics(mi, mf, ws, q[::1], v[::1], t[::1], _view(lw, 0, (0, 6)), np.bool_(True), b)   # b = C v + g (+ joint friction)
        for d in range(nv):
            x[d] = tau[d] - b[d]
    else:
        for d in range(nv):
            x[d] = 0.0
    _crba_from_kinematics(mi, mf, ws, H)
    for k in range(nl):
        c0, p = li[k, 2], li[k, 3]
        rows = JR[6 * k:6 * k + 6]
        P, Sinv = PP[k], SS[k]            # kept for the cut joint's recovery below
        if p > 0:
            for d in range(c0, c0 + p):
                H[d, d] = 1.0                  # a decoupled placeholder: nothing moves there
            if not cut_projector(rows, c0, p, P, Sinv):
                return SINGULAR
            if mode == FD:
                # the cut joint's own torque (less its friction) acts through the loop
                for j in range(p):
                    force[k, j] = x[c0 + j]    # kept for the loop force below
                    _through_loop(rows, Sinv, c0, p, j, x, nv)
        else:
            _identity6(P)
        # the projected rows and their right-hand side c:
        #   FD: P (-g + beta^2 e - 2 alpha J v);  VELOCITY: -P J v;  POSITION: P e
        _project_rows(P, rows, JP, k, nv)
        for r in range(6):
            t[r] = _row_dot(rows, r, v, nv) if mode != POSITION else 0.0       # (J v)_r
        for r in range(6):
            s = 0.0
            for k2 in range(6):
                if mode == FD:
                    s += P[r, k2] * (-g[6 * k + k2] + beta * beta * e[k, k2] - 2.0 * alpha * t[k2])
                elif mode == VELOCITY:
                    s -= P[r, k2] * t[k2]
                else:
                    s += P[r, k2] * e[k, k2]
            c[6 * k + r] = s
    if _ltdl_factor(H, lam) != OK:
        return SINGULAR
    _ltdl_inverse_congruence(H, lam, JP, Y, Lam)              # Y = M^-1 J^T, Lambda = J M^-1 J^T
    _ltdl_solve(H, lam, x)                                    # the unconstrained part M^-1 (tau - b)
    for r in range(m):
        s = c[r]
        for d in range(nv):
            s -= JP[r, d] * x[d]
        c[r] = s                                             # Lambda mu = c - J x
    pivoted_solve(Lam, c, piv, mu, PIVOT_TOL)
    for d in range(nv):
        s = x[d]
        for r in range(m):
            s += Y[d, r] * mu[r]
        out[d] = s
    # each cut joint follows its loop:  S x_cut = -(K x_real + rest) with
    #   FD: rest = g + 2 alpha J v - beta^2 e;  VELOCITY: J v;  POSITION: -e
    for k in range(nl):
        c0, p = li[k, 2], li[k, 3]
        rows = JR[6 * k:6 * k + 6]
        P, Sinv = PP[k], SS[k]
        if p == 0:
            if mode != POSITION:
                for r in range(6):
                    force[k, r] = mu[6 * k + r]
            continue
        for r in range(6):
            s = 0.0
            for d in range(nv):
                if d < c0 or d >= c0 + p:
                    s += rows[r, d] * out[d]
            if mode == FD:
                s += g[6 * k + r] + 2.0 * alpha * _row_dot(rows, r, v, nv) - beta * beta * e[k, r]
            elif mode == VELOCITY:
                s += _row_dot(rows, r, v, nv)
            else:
                s -= e[k, r]
            t[r] = s
        _cut_rates(Sinv, t, p, out, c0)
        if mode != POSITION:
            # FD: f = P mu_k - S (S^T S)^-1 tau_cut (tau_cut kept in force[k, :p]);
            # VELOCITY: the impulse P mu_k
            for j in range(p):
                t[j] = force[k, j] if mode == FD else 0.0
            for r in range(6):
                s = 0.0
                for k2 in range(6):
                    s += P[r, k2] * mu[6 * k + k2]
                for j in range(p):
                    s -= Sinv[j, r] * t[j]
                force[k, r] = s
    return OK


@njit(inline="always", cache=True)
def _cut_rates(Sinv, t, p, out, c0):
    """The cut joint's p coordinates out[c0:c0 + p] = -Sinv t (t: the loop's six-vector)."""
    for j in range(p):
        s = 0.0
        for r in range(6):
            s += Sinv[j, r] * t[r]
        out[c0 + j] = -s


@njit(inline="always", cache=True)
def _through_loop(rows, Sinv, c0, p, j, x, nv):
    """The cut joint's generalized force x[c0 + j] moved onto the loop's other dofs through the
    loop's rows (x -= rows^T Sinv[j] x[c0 + j] off the cut joint), and zeroed at the cut."""
    tc = x[c0 + j]
    x[c0 + j] = 0.0
    for r in range(6):
        w = Sinv[j, r] * tc
        for d in range(nv):
            if d < c0 or d >= c0 + p:
                x[d] -= rows[r, d] * w


@njit(inline="always", cache=True)
def _project_rows(P, rows, JP, k, nv):
    """Rows 6k..6k+5 of JP = P rows: loop k's Jacobian rows projected off its cut joint."""
    for r in range(6):
        for d in range(nv):
            s = 0.0
            for k2 in range(6):
                s += P[r, k2] * rows[k2, d]
            JP[6 * k + r, d] = s


@njit(inline="always", cache=True)
def _row_dot(rows, r, v, nv):
    s = 0.0
    for d in range(nv):
        s += rows[r, d] * v[d]
    return s


@njit(inline="always", cache=True)
def _identity6(P):
    for r in range(6):
        for k in range(6):
            P[r, k] = 1.0 if r == k else 0.0


@njit(cache=True)
def constrained_response(mi, mf, ws, li, lf, lam, lw, q, F, out):
    """out[i] = Z F[i] for each generalized force (or impulse) F[i] (nv,): the acceleration (or
    velocity change) it adds with the loops held, x in  M x = F + J^T mu,  J x = 0  (the loops'
    rows J at q).  The KKT system of ``linkdyn.contact.dynamics.Response`` solved as
    ``constrained_solve`` solves its FD mode, once factored for every F[i]: the cut joints
    (no inertia) eliminated loop by loop (a force on a cut joint acts on the real dofs as
    -K^T S (S^T S)^-1 F_cut), M factorized tree-sparse, Lambda = P J M^-1 J^T P by pivoted
    Cholesky (dependent rows drop out), each cut joint following its loop.  Z is the
    loop-projected inverse inertia: G Z G^T is the Delassus matrix of rows G with the loops
    closed (``linkdyn.sim.timestepping``).  Returns a status (OK or SINGULAR)."""
    nb, nq, nv = model_sizes(mi)
    nl = li.shape[0]
    m = 6 * nl
    H, JR, JP, Y, Lam, g, c, mu, piv, x, b, t, e, PP, SS = _carve(lw, nv, nl)
    loop_terms(mi, mf, ws, li, lf, q[::1], q[:0], np.int64(VEL), e, JR, g)
    _crba_from_kinematics(mi, mf, ws, H)
    for k in range(nl):
        c0, p = li[k, 2], li[k, 3]
        rows = JR[6 * k:6 * k + 6]
        P, Sinv = PP[k], SS[k]
        if p > 0:
            for d in range(c0, c0 + p):
                H[d, d] = 1.0                  # a decoupled placeholder, as constrained_solve
            if not cut_projector(rows, c0, p, P, Sinv):
                return SINGULAR
        else:
            _identity6(P)
        _project_rows(P, rows, JP, k, nv)
    if _ltdl_factor(H, lam) != OK:
        return SINGULAR
    _ltdl_inverse_congruence(H, lam, JP, Y, Lam)              # Y = M^-1 J^T, Lambda = J M^-1 J^T
    rank = pivoted_factor(Lam, piv, PIVOT_TOL)
    for i in range(F.shape[0]):
        for d in range(nv):
            x[d] = F[i, d]
        for k in range(nl):
            c0, p = li[k, 2], li[k, 3]
            rows, Sinv = JR[6 * k:6 * k + 6], SS[k]
            for j in range(p):
                _through_loop(rows, Sinv, c0, p, j, x, nv)
        _ltdl_solve(H, lam, x)
        for r in range(m):
            s = 0.0
            for d in range(nv):
                s -= JP[r, d] * x[d]
            c[r] = s                                         # Lambda mu = -J x
        pivoted_back(Lam, piv, rank, c, mu)
        o = out[i]
        for d in range(nv):
            s = x[d]
            for r in range(m):
                s += Y[d, r] * mu[r]
            o[d] = s
        for k in range(nl):                                  # each cut joint follows its loop
            c0, p = li[k, 2], li[k, 3]
            if p == 0:
                continue
            rows, Sinv = JR[6 * k:6 * k + 6], SS[k]
            for r in range(6):
                s = 0.0
                for d in range(nv):
                    if d < c0 or d >= c0 + p:
                        s += rows[r, d] * o[d]
                t[r] = s
            _cut_rates(Sinv, t, p, o, c0)
    return OK


@njit(parallel=True, cache=True)
def constrained_solve_batch(mi, mf, WS, li, lf, lam, LW, Q, V, T, mode, alpha, beta, OUT, FORCE, status):
    """``constrained_solve`` on a stack of states: one parallel loop, each thread with its own
    rows of the tree workspace WS and the loop workspace LW."""
    nt, n = WS.shape[0], OUT.shape[0]
    for t in prange(nt):
        lo, hi = chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = constrained_solve(mi, mf, pick(WS, t), li, lf, lam, pick(LW, t), pick(Q, k), pick(V, k),
                                          pick(T, k), mode, alpha, beta, pick(OUT, k), pick(FORCE, k))
