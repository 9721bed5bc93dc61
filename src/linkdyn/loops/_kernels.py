"""Compiled loop-closure kinematics (seed 004 secs. 2.2-2.3).

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

from numba import njit

from .._kernels.layout import model_sizes, unpack_data, unpack_model
from .._kernels.passes import ACC, POS, VEL, kinematics_pass
from .._kernels.spatial_nb import motion_act, motion_cross_add, motion_inv_act


@njit(inline="always", cache=True)
def frame_in_world(oR, op, b, lf, off, R, p):
    """(R, p) = oM_b bMf for the frame stored at lf[off:off + 12] (R row-major, then p)."""
    for r in range(3):
        for c in range(3):
            R[r, c] = oR[b, r, 0] * lf[off + c] + oR[b, r, 1] * lf[off + 3 + c] + oR[b, r, 2] * lf[off + 6 + c]
        p[r] = (op[b, r] + oR[b, r, 0] * lf[off + 9] + oR[b, r, 1] * lf[off + 10]
                + oR[b, r, 2] * lf[off + 11])


@njit(inline="always", cache=True)
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


@njit(cache=True)
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
    kinematics_pass(mi, mf, ws, q, v if level == ACC else zero, zero, level if level == ACC else POS, True, False)
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


@njit(inline="always", cache=True)
def _body_to_frame_a(oR, op, j, x, Ra, pa, out, tmp):
    """out = motion x of body j (body frame) expressed in frame A (world pose Ra, pa)."""
    motion_act(oR[j], op[j], x, tmp)
    motion_inv_act(Ra, pa, tmp, out)


LEVELS = (POS, VEL, ACC)
