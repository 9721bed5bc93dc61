"""The derivative columns of a joint along its own dofs, shared by the dynamics derivatives
(:mod:`linkdyn.dynamics.derivatives`, Carpentier and Mansard 2018, Algorithm 1, steps D2 and D7)
and the frame-kinematics derivatives (:mod:`linkdyn.kinematics.derivatives`): J_k = oX_i S_k and
the derivatives of the body's world velocity, acceleration and velocity-product bias along them,
including the terms of the joints whose motion subspace S depends on their own coordinates
(universal, ZYX angles; Baerlocher and Boulic 2001).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .kinds import SPHERICAL_ZYX, UNIVERSAL
from .spatial_nb import motion_act as _motion_act, motion_cross_add as _cross_add


@njit(inline="always", cache=True)
def _cross(x, y, out):
    """out = x x y (motion cross product)."""
    x0, x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4], x[5]
    y0, y1, y2, y3, y4, y5 = y[0], y[1], y[2], y[3], y[4], y[5]
    out[0] = x4 * y2 - x5 * y1 + x1 * y5 - x2 * y4
    out[1] = x5 * y0 - x3 * y2 + x2 * y3 - x0 * y5
    out[2] = x3 * y1 - x4 * y0 + x0 * y4 - x1 * y3
    out[3] = x4 * y5 - x5 * y4
    out[4] = x5 * y3 - x3 * y5
    out[5] = x3 * y4 - x4 * y3


@njit(inline="always", cache=True)
def _joint_S_partials(kind, a1, a2, q, qa, Sb, dS, d2S):
    """dS[k, l] = dS_l/dq_k and d2S[k, m, l] = d2S_l/dq_k dq_m (angular parts, child frame; the
    linear parts are zero) for the joints whose S depends on q: universal and ZYX angles
    (Baerlocher and Boulic 2001).  ``Sb``: the joint's first S column (from jcalc)."""
    for x in range(27):
        dS.flat[x] = 0.0
    for x in range(81):
        d2S.flat[x] = 0.0
    if kind == UNIVERSAL:
        # S_0 = [0; b], b = R2^T a1: db/dq2 = b x a2, d2b/dq2^2 = (b x a2) x a2
        b0, b1, b2 = Sb[3], Sb[4], Sb[5]
        c0 = b1 * a2[2] - b2 * a2[1]
        c1 = b2 * a2[0] - b0 * a2[2]
        c2 = b0 * a2[1] - b1 * a2[0]
        dS[1, 0, 0], dS[1, 0, 1], dS[1, 0, 2] = c0, c1, c2
        d2S[1, 1, 0, 0] = c1 * a2[2] - c2 * a2[1]
        d2S[1, 1, 0, 1] = c2 * a2[0] - c0 * a2[2]
        d2S[1, 1, 0, 2] = c0 * a2[1] - c1 * a2[0]
    else:
        # S = [[-sy, 0, 1], [cy sx, cx, 0], [cy cx, -sx, 0]] (angular rows), q = (z, y, x)
        cy, sy = np.cos(q[qa + 1]), np.sin(q[qa + 1])
        cx, sx = np.cos(q[qa + 2]), np.sin(q[qa + 2])
        dS[1, 0, 0], dS[1, 0, 1], dS[1, 0, 2] = -cy, -sy * sx, -sy * cx
        dS[2, 0, 1], dS[2, 0, 2] = cy * cx, -cy * sx
        dS[2, 1, 1], dS[2, 1, 2] = -sx, -cx
        d2S[1, 1, 0, 0], d2S[1, 1, 0, 1], d2S[1, 1, 0, 2] = sy, -cy * sx, -cy * cx
        d2S[1, 2, 0, 1], d2S[1, 2, 0, 2] = -sy * cx, sy * sx
        d2S[2, 1, 0, 1], d2S[2, 1, 0, 2] = -sy * cx, sy * sx
        d2S[2, 2, 0, 1], d2S[2, 2, 0, 2] = -cy * sx, -cy * cx
        d2S[2, 2, 1, 1], d2S[2, 2, 1, 2] = -cx, sx


# --- the kernels -------------------------------------------------------------------------
@njit(cache=True)
def _joint_S_terms(kind, a1, a2, q, qa, Sb, dS, d2S, v, a, va, ni, R, p, ovi, t, dV, dA, dAv):
    """(D7) The terms of a joint whose motion subspace S depends on its own coordinates
    (universal, ZYX spherical), added to the world-frame derivatives of body i's velocity
    (dV), acceleration (dA) and velocity-product bias with respect to v (dAv), columns va.. of
    its ni dofs; (R, p) is body i's world pose, ovi its world velocity, t (4, 6) scratch.
    (The paper's joints have a constant S and need none of this.)"""
    _joint_S_partials(kind, a1, a2, q, qa, Sb, dS, d2S)
    sv, sa, W = t[1], t[2], t[3]
    for k in range(ni):
        for x in range(3):
            s_v = 0.0       # sv_k = sum_l dS_l/dq_k v_l
            s_a = 0.0       # sum_l dS_l/dq_k a_l + d(S'q')/dq_k, S'q' = sum_ml dS_l/dq_m v_m v_l
            s_t = 0.0       # sum_m dS_k/dq_m v_m
            for m in range(ni):
                s_v += dS[k, m, x] * v[va + m]
                s_a += dS[k, m, x] * a[va + m]
                s_t += dS[m, k, x] * v[va + m]
                for l in range(ni):
                    s_a += d2S[k, m, l, x] * v[va + m] * v[va + l]
            sv[x], sv[3 + x] = 0.0, s_v
            sa[x], sa[3 + x] = 0.0, s_a
            W[x], W[3 + x] = 0.0, s_v + s_t                  # d(S'q')/dv_k
        d = va + k
        _motion_act(R, p, W, t[0])
        for x in range(6):
            dAv[d, x] += t[0, x]
        _motion_act(R, p, sv, W)                            # oX_i sv_k
        for x in range(6):
            dV[d, x] += W[x]
        _motion_act(R, p, sa, t[0])
        for x in range(6):
            dA[d, x] += t[0, x]
        _cross_add(ovi, W, dA[d])


@njit(cache=True)
def joint_columns(kind, a1, a2, q, qa, S, v, a, va, ni, R, p, ovp, oap, ovi, J, dV, dA, dAv, dS, d2S, t):
    """(D2, D7) The columns of body i's dofs va..va+ni: J_k = oX_i S_k and the derivatives of the
    body's world velocity (dV), acceleration (dA) and velocity-product bias in v (dAv) along
    them, from the parent's world velocity ovp and acceleration oap and the body's ovi; (R, p)
    is body i's world pose.  Shared by the dynamics and the frame-kinematics derivatives."""
    for d in range(va, va + ni):
        _motion_act(R, p, S[d], J[d])                           # J_k = oX_i S_k
        _cross(ovp, J[d], dV[d])                                # dV_k = ov_p x J_k
        _cross(oap, J[d], dA[d])                                # dA_k = oa_p x J_k + ov_p x dV_k
        _cross(ovp, J[d], dAv[d])                               # dAv_k = (ov_p + ov_i) x J_k
        _cross_add(ovi, J[d], dAv[d])
    if kind == UNIVERSAL or kind == SPHERICAL_ZYX:
        # (D7) S depends on the joint's own coordinates
        _joint_S_terms(kind, a1, a2, q, qa, S[va], dS, d2S, v, a, va, ni, R, p, ovi, t, dV, dA, dAv)
    for d in range(va, va + ni):
        _cross_add(ovp, dV[d], dA[d])
