"""The forward pass every algorithm starts with, and the input checks kernels report.

``kinematics_pass`` is the first loop of RNEA/ABA (seed 000 eqs. 1-9, seed 001): for each
body, ``jcalc`` gives the joint transform, then

    liMi = X_tree(i) X_J(q_i)                          pose in the parent
    oMi  = oMparent liMi                               pose in the world (optional)
    v_i  = liMi^-1 v_parent + vJ                       (eq. 4)
    a_i  = liMi^-1 a_parent + S q''_i + cJ + v_i x vJ  (eq. 5)

Kernels return a status instead of raising: 0 means the input was good; otherwise one of the
codes below, and the public layer turns it into a message that names the argument.
"""
import math

from numba import njit

from ..model.joints import FREE, SPHERICAL
from .jcalc import jcalc
from .layout import model_sizes, unpack_data, unpack_model
from .spatial_nb import motion_cross_add, motion_inv_act

OK, BAD_Q, BAD_QUAT, BAD_V, BAD_A, BAD_F, SINGULAR, BAD_SHAPE, NO_MASS = 0, 1, 2, 3, 4, 5, 6, 7, 8
QUAT_TOL = 1e-6   # |‖quaternion‖ - 1| allowed in a configuration

# kinematics levels
POS, VEL, ACC = 0, 1, 2


@njit(inline="always", cache=True)
def all_finite(x):
    for k in range(x.size):
        if not math.isfinite(x.flat[k]):
            return False
    return True


@njit(cache=True)
def check_q(mi, q):
    """BAD_SHAPE if q is not of length nq, BAD_Q if it has a NaN/inf, BAD_QUAT if a
    quaternion is not of unit norm, else OK."""
    if q.shape[0] != model_sizes(mi)[1]:
        return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    jtype, qadr = mi[1], mi[2]
    for i in range(1, mi.shape[1]):
        k = jtype[i]
        if k == SPHERICAL or k == FREE:
            o = qadr[i] + (3 if k == FREE else 0)
            n = math.sqrt(q[o] ** 2 + q[o + 1] ** 2 + q[o + 2] ** 2 + q[o + 3] ** 2)
            if abs(n - 1.0) > QUAT_TOL:
                return BAD_QUAT
    return OK


@njit(cache=True)
def check_inputs(mi, q, v, a, need_a):
    """Check q, v (length nv) and, if ``need_a``, a (length nv)."""
    st = check_q(mi, q)
    if st != OK:
        return st
    nv = model_sizes(mi)[2]
    if v.shape[0] != nv or (need_a and a.shape[0] != nv):
        return BAD_SHAPE
    if not all_finite(v):
        return BAD_V
    if need_a and not all_finite(a):
        return BAD_A
    return OK


@njit(cache=True)
def kinematics_pass(mi, mf, ws, q, v, a, level, world, with_gravity):
    """Fill liMi (and oMi if ``world``), S, vJ, cJ, and for ``level`` >= VEL the body
    velocities, for ``level`` == ACC the accelerations.  With ``with_gravity`` the world
    accelerates by a_0 = [-g; 0] instead of gravity pulling on every body."""
    parent, jtype, qadr, vadr, jnq, jnv, axis, axis2, R_tree, p_tree, _, _, g = unpack_model(mi, mf)
    nb, nq, nv = model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, U, Dinv, u, tmp, W6, W3 = unpack_data(ws, nb, nv)
    RJ, T, pJ = W3[0], W3[1], W3[2, 0]
    for r in range(3):
        for c in range(3):
            oR[0, r, c] = 1.0 if r == c else 0.0
        op[0, r] = 0.0
    for k in range(6):
        vel[0, k] = 0.0
        acc[0, k] = 0.0
    if with_gravity:
        acc[0, 0], acc[0, 1], acc[0, 2] = -g[0], -g[1], -g[2]
    for i in range(1, nb):
        pi = parent[i]
        jcalc(jtype[i], axis[i], axis2[i], q, qadr[i], v, vadr[i], level >= VEL, RJ, pJ, S, vJ[i], cJ[i], T)
        # liMi = X_tree X_J
        Rt = R_tree[i]
        for r in range(3):
            for c in range(3):
                liR[i, r, c] = Rt[r, 0] * RJ[0, c] + Rt[r, 1] * RJ[1, c] + Rt[r, 2] * RJ[2, c]
            lip[i, r] = p_tree[i, r] + Rt[r, 0] * pJ[0] + Rt[r, 1] * pJ[1] + Rt[r, 2] * pJ[2]
        if world:
            # oMi = oMparent liMi
            Rp = oR[pi]
            for r in range(3):
                for c in range(3):
                    oR[i, r, c] = Rp[r, 0] * liR[i, 0, c] + Rp[r, 1] * liR[i, 1, c] + Rp[r, 2] * liR[i, 2, c]
                op[i, r] = op[pi, r] + Rp[r, 0] * lip[i, 0] + Rp[r, 1] * lip[i, 1] + Rp[r, 2] * lip[i, 2]
        if level >= VEL:
            # v_i = liMi^-1 v_parent + vJ
            motion_inv_act(liR[i], lip[i], vel[pi], vel[i])
            for k in range(6):
                vel[i, k] += vJ[i, k]
            # the velocity-product bias c_i = cJ + v_i x vJ is kept in cJ
            motion_cross_add(vel[i], vJ[i], cJ[i])
        if level >= ACC:
            # a_i = liMi^-1 a_parent + S q'' + c_i
            motion_inv_act(liR[i], lip[i], acc[pi], acc[i])
            va = vadr[i]
            for d in range(jnv[i]):
                for k in range(6):
                    acc[i, k] += S[va + d, k] * a[va + d]
            for k in range(6):
                acc[i, k] += cJ[i, k]
