"""The forward pass every algorithm starts with, and the input checks kernels report.

``kinematics_pass`` is the first loop of RNEA/ABA (Featherstone 2008, ch. 2): for each
body, ``jcalc`` gives the joint transform, then

    liMi = X_tree(i) X_J(q_i)                          pose in the parent
    oMi  = oMparent liMi                               pose in the world (optional)
    v_i  = liMi^-1 v_parent + vJ                       (eq. 4)
    a_i  = liMi^-1 a_parent + S q''_i + cJ + v_i x vJ  (eq. 5)

Kernels return a status instead of raising: 0 means the input was good; otherwise one of the
codes below, and the public layer turns it into a message that names the argument.
"""
import math

import numpy as np

from numba import njit, types

from . import INTERNAL, njit_on_first_use
from .kinds import FREE, PRISMATIC, REVOLUTE, SPHERICAL
from .jcalc import jcalc, jcalc_common, rodrigues
from .layout import axis_ids, model_sizes, subtree_ends, unpack_data, unpack_model
from .spatial_nb import motion_cross_add, motion_inv_act

OK, BAD_Q, BAD_QUAT, BAD_V, BAD_A, BAD_F, SINGULAR, BAD_SHAPE, NO_MASS, OVERFLOW = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
QUAT_TOL = 1e-6   # |‖quaternion‖ - 1| allowed in a configuration

# kinematics levels
POS, VEL, ACC = 0, 1, 2


@njit(inline="always", cache=True)
def all_finite(x):
    for k in range(x.size):
        if not math.isfinite(x.flat[k]):
            return False
    return True


@njit(inline="always", cache=True)
def joint_torque(armature, damping, friction, qd, qdd):
    """The torque a joint's own rotor and bearings take: armature q'' + damping q'
    + friction sign(q') (Coulomb friction is 0 at rest here, as sign(0) = 0)."""
    s = 0.0 if qd == 0.0 else (1.0 if qd > 0.0 else -1.0)
    return armature * qdd + damping * qd + friction * s


# The input checks take one signature each (compiled on first use): their callers pass q, v, a
# in both layouts and the flag as a literal or not, and each combination was a compile of its own
# (four of check_inputs in the swing demo)
_MI = types.Array(types.int64, 2, "C", readonly=True)
_VEC = types.Array(types.float64, 1, "A")


@njit(inline="always", cache=True)
def _check_q(mi, q):
    if q.shape[0] != model_sizes(mi)[1]:
        return BAD_SHAPE
    if not all_finite(q):
        return BAD_Q
    jtype, qadr = mi[1], mi[2]
    for i in range(1, mi.shape[1]):
        k = jtype[i]
        if k == SPHERICAL or k == FREE:
            o = qadr[i] + (3 if k == FREE else 0)
            x, y, z, w = q[o], q[o + 1], q[o + 2], q[o + 3]
            n = math.sqrt(x * x + y * y + z * z + w * w)
            if abs(n - 1.0) > QUAT_TOL:
                return BAD_QUAT
    return OK


@njit_on_first_use(types.int64(_MI, _VEC), cache=True)
def check_q(mi, q):
    """BAD_SHAPE if q is not of length nq, BAD_Q if it has a NaN/inf, BAD_QUAT if a
    quaternion is not of unit norm, else OK."""
    return _check_q(mi, q)


# check_q's body inlined, not called: a compiled level of its own cost the first rnea 0.2 s
# (its compile, and LLVM optimizing and emitting its code again in this function)
@njit_on_first_use(types.int64(_MI, _VEC, _VEC, _VEC, types.boolean), cache=True)
def check_inputs(mi, q, v, a, need_a):
    """Check q, v (length nv) and, if ``need_a``, a (length nv)."""
    st = _check_q(mi, q)
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


@njit(inline="always", cache=True)
def _tree_times_axis_rotation(Rt, k, c, s, out):
    """out = Rt R_k(theta) for a rotation about coordinate axis e_k (c, s = cos, sin theta):
    column k is kept, the other two turn in their plane (12 products instead of 27)."""
    k1 = k + 1 if k < 2 else 0          # (k + 1) % 3 without an integer division
    k2 = k1 + 1 if k1 < 2 else 0
    for r in range(3):
        x, y = Rt[r, k1], Rt[r, k2]
        out[r, k] = Rt[r, k]
        out[r, k1] = c * x + s * y
        out[r, k2] = c * y - s * x


# One compiled signature for every caller (explicit: arrays of any layout convert to these), so
# that the pass, the biggest piece of code in linkdyn, compiles once and not once per caller's
# array layouts or literal flags (~13 s each on a cold cache); compiled on first use, not at import.
# Not inline="always": Numba's IR-level inlining of this large function into its callers
# doubled the compile time of the kinematics pass (14 s -> 7 s of CPU without it), and the
# per-call times are unchanged (measured on UR5 and Talos)
_ARR = types.Array(types.float64, 1, "A")
_PASS_SIG = (types.Array(types.int64, 2, "C", readonly=True), types.Array(types.float64, 1, "C", readonly=True),
             types.Array(types.float64, 1, "C"), _ARR, _ARR, _ARR, types.int64, types.boolean, types.boolean,
             types.int64, types.BooleanLiteral(True))
# world, target and rare None: see forward_pass_common.  ``rare`` is the literal True in the
# general pass: Numba prunes a branch on ``rare is None`` only for an argument it knows the value
# of (None or a literal), and the general pass then compiles neither jcalc_common nor its call
_PASS_SIG_COMMON = _PASS_SIG[:7] + (types.none, types.boolean, types.none, types.none)


def _forward_pass(mi, mf, ws, q, v, a, level, world, with_gravity, target, rare):
    """Fill liMi (and oMi if ``world``), S, vJ, cJ, and for ``level`` >= VEL the body
    velocities, for ``level`` == ACC the accelerations.  With ``with_gravity`` the world
    accelerates by a_0 = [-g; 0] instead of gravity pulling on every body.

    Revolute and prismatic joints (most of every robot) take a fused path: X_tree X_J is
    formed directly (a plane rotation of two columns of R_tree when the axis is a
    coordinate axis), S is one 6-vector and c_J = 0; every other kind goes through jcalc, or
    with ``rare`` None (a model whose joints are all revolute, prismatic, free, spherical or
    fixed) through ``jcalc_common``: Numba prunes the other call before typing (``rare`` is the
    literal True or None), and the common pass compiles none of jcalc's rarer kinds.

    With ``target`` >= 0 only the bodies that support body ``target`` (it and its ancestors,
    the i with i <= target < subtree_end[i]) are computed, as for one frame's Jacobian.

    ``world`` and ``target`` None are False and -1 with their code pruned (as ``rare``'s)."""
    parent, jtype, qadr, vadr, jnq, jnv, axis, axis2, R_tree, p_tree, _, _, g = unpack_model(mi, mf)
    axid = axis_ids(mi)
    nb, nq, nv = model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, U, Dinv, u, tmp, W6, W3 = unpack_data(ws, nb, nv)
    RJ, T, pJ = W3[0], W3[1], W3[2, 0]
    has_v = level >= VEL
    for r in range(3):
        for c in range(3):
            oR[0, r, c] = 1.0 if r == c else 0.0
        op[0, r] = 0.0
    for k in range(6):
        vel[0, k] = 0.0
        acc[0, k] = 0.0
    if with_gravity:
        acc[0, 0], acc[0, 1], acc[0, 2] = -g[0], -g[1], -g[2]
    sub = subtree_ends(mi)
    end = nb
    if target is not None and target >= 0:
        end = target + 1
    for i in range(1, end):
        if target is not None and target >= 0 and sub[i] <= target:
            continue                # a body on another branch (i <= target always holds here)
        pi = parent[i]
        kind = jtype[i]
        Rt = R_tree[i]
        ax = axis[i]
        va = vadr[i]
        if kind == REVOLUTE or kind == PRISMATIC:
            x = q[qadr[i]]
            Si = S[va]
            off = 3 if kind == REVOLUTE else 0
            for k in range(6):
                Si[k] = 0.0
            Si[off], Si[off + 1], Si[off + 2] = ax[0], ax[1], ax[2]
            if kind == REVOLUTE:
                k = axid[i]
                if k >= 0:
                    # liMi = X_tree R_k(+-q): a plane rotation of two columns
                    _tree_times_axis_rotation(Rt, k, math.cos(x), ax[k] * math.sin(x), liR[i])
                else:
                    rodrigues(ax, x, RJ)
                    _matmul3(Rt, RJ, liR[i])
                for r in range(3):
                    lip[i, r] = p_tree[i, r]
            else:
                # liMi = (R_tree, p_tree + R_tree a q)
                for r in range(3):
                    for c in range(3):
                        liR[i, r, c] = Rt[r, c]
                    lip[i, r] = p_tree[i, r] + x * (Rt[r, 0] * ax[0] + Rt[r, 1] * ax[1] + Rt[r, 2] * ax[2])
            if has_v:
                qd = v[va]
                for k in range(6):
                    vJ[i, k] = Si[k] * qd
                    cJ[i, k] = 0.0
        else:
            if rare is None:
                jcalc_common(kind, ax, axis2[i], q, qadr[i], v, va, has_v, RJ, pJ, S, vJ[i], cJ[i], T)
            else:
                jcalc(kind, ax, axis2[i], q, qadr[i], v, va, has_v, RJ, pJ, S, vJ[i], cJ[i], T)
            # liMi = X_tree X_J
            _matmul3(Rt, RJ, liR[i])
            for r in range(3):
                lip[i, r] = p_tree[i, r] + Rt[r, 0] * pJ[0] + Rt[r, 1] * pJ[1] + Rt[r, 2] * pJ[2]
        if world is not None and world:
            # oMi = oMparent liMi (through locals: the views share one buffer, so the compiler
            # cannot keep values in registers across the stores by itself)
            _compose_pose(oR[pi], op[pi], liR[i], lip[i], oR[i], op[i])
        if has_v:
            # v_i = liMi^-1 v_parent + vJ
            motion_inv_act(liR[i], lip[i], vel[pi], vel[i])
            for k in range(6):
                vel[i, k] += vJ[i, k]
            # the velocity-product bias c_i = cJ + v_i x vJ is kept in cJ
            motion_cross_add(vel[i], vJ[i], cJ[i])
        if level >= ACC:
            # a_i = liMi^-1 a_parent + S q'' + c_i
            motion_inv_act(liR[i], lip[i], acc[pi], acc[i])
            for d in range(jnv[i]):
                for k in range(6):
                    acc[i, k] += S[va + d, k] * a[va + d]
            for k in range(6):
                acc[i, k] += cJ[i, k]


forward_pass = njit_on_first_use(types.void(*_PASS_SIG), cache=True, **INTERNAL)(_forward_pass)

# The pass of RNEA for a model whose joints are all revolute, prismatic, free, spherical (or
# fixed): ``rare`` None, so that jcalc's other kinds are not compiled (1.0 s of the 4.4 s CPU of a
# cold first rnea, issue 28), and ``world``, ``target`` None (every body, no pose in the world:
# 0.3 s more).  A second compiled copy of the pass (the same source and cache index, another
# signature), which the rnea of such a model uses (dynamics.rnea, Model._plain_rnea).
forward_pass_common = njit_on_first_use(types.void(*_PASS_SIG_COMMON), cache=True, **INTERNAL)(_forward_pass)


@njit(inline="always", cache=True)
def _compose_pose(Ra, pa, Rb, pb, R, p):
    """(R, p) = (Ra Rb, pa + Ra pb)."""
    b00, b01, b02 = Rb[0, 0], Rb[0, 1], Rb[0, 2]
    b10, b11, b12 = Rb[1, 0], Rb[1, 1], Rb[1, 2]
    b20, b21, b22 = Rb[2, 0], Rb[2, 1], Rb[2, 2]
    x, y, z = pb[0], pb[1], pb[2]
    for r in range(3):
        a0, a1, a2 = Ra[r, 0], Ra[r, 1], Ra[r, 2]
        R[r, 0] = a0 * b00 + a1 * b10 + a2 * b20
        R[r, 1] = a0 * b01 + a1 * b11 + a2 * b21
        R[r, 2] = a0 * b02 + a1 * b12 + a2 * b22
        p[r] = pa[r] + a0 * x + a1 * y + a2 * z


@njit(inline="always", cache=True)
def _matmul3(A, B, out):
    """out = A B for 3x3 matrices."""
    for r in range(3):
        for c in range(3):
            out[r, c] = A[r, 0] * B[0, c] + A[r, 1] * B[1, c] + A[r, 2] * B[2, c]


# The two entries into the pass are inlined into their callers (a few statements each), so that
# a kernel calls the compiled pass directly: each compiled level between a kernel and the pass
# (these two were, each a function of its own) links the pass's code into its own and has LLVM
# optimize and emit all of it again, about 0.4 s of a cold first ``rnea`` each.
@njit(inline="always", cache=True)
def support_pass(mi, mf, ws, q, v, a, level, world, with_gravity, target):
    """``forward_pass`` of the bodies that support body ``target``."""
    forward_pass(mi, mf, ws, q, v, a, level, world, with_gravity, target, True)


@njit(inline="always", cache=True)
def kinematics_pass(mi, mf, ws, q, v, a, level, world, with_gravity):
    """``forward_pass`` of every body (callers pass ``np.int64``/``np.bool_`` flags and mutable
    arrays: the pass has one compiled signature for all of them, not one per literal value)."""
    forward_pass(mi, mf, ws, q, v, a, level, world, with_gravity, np.int64(-1), True)


@njit(inline="always", cache=True)
def kinematics_pass_common(mi, mf, ws, q, v, a, level, with_gravity):
    """``kinematics_pass`` without the poses in the world (``world`` False) of a model whose
    joints are all revolute, prismatic, free, spherical or fixed (``forward_pass_common``)."""
    forward_pass_common(mi, mf, ws, q, v, a, level, None, with_gravity, None, None)
