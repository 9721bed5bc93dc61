"""``jcalc``: joint transform, motion subspace and bias for every joint kind (Baerlocher and Boulic 2001).

One compiled function, as in spatial_v2's ``jcalc``: given the kind code and the joint's
coordinates it returns the joint transform (R_J, p_J) (child joint frame in the parent joint
frame), writes the motion subspace ``S`` (one 6-vector per dof, child frame), the joint
velocity ``vJ = S q'`` and the bias ``cJ = S' q'``.  The algorithms only ever see S, vJ, cJ,
so multi-DoF joints need no algorithm variants.
"""
import math

from numba import njit

from . import INTERNAL

from .kinds import (CYLINDRICAL, FREE, PLANAR, PRISMATIC, REVOLUTE, SPHERICAL,
                            SPHERICAL_ZYX, UNIVERSAL)

_opts = dict(cache=True)


@njit(inline="always", cache=True)
def rodrigues(a, th, R):
    """R = exp([a]x th) = I cos th + [a]x sin th + a a^T (1 - cos th) for a unit axis a."""
    c = math.cos(th)
    s = math.sin(th)
    t = 1.0 - c
    R[0, 0] = c + a[0] * a[0] * t
    R[1, 1] = c + a[1] * a[1] * t
    R[2, 2] = c + a[2] * a[2] * t
    R[0, 1] = a[0] * a[1] * t - a[2] * s
    R[1, 0] = a[0] * a[1] * t + a[2] * s
    R[0, 2] = a[0] * a[2] * t + a[1] * s
    R[2, 0] = a[0] * a[2] * t - a[1] * s
    R[1, 2] = a[1] * a[2] * t - a[0] * s
    R[2, 1] = a[1] * a[2] * t + a[0] * s


@njit(inline="always", cache=True)
def quat_to_rot(q, k, R):
    """Rotation matrix of the unit quaternion q[k:k+4] = [x, y, z, w] (Siciliano et al. 2009, ch. 2)."""
    x, y, z, w = q[k], q[k + 1], q[k + 2], q[k + 3]
    R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[2, 2] = 1.0 - 2.0 * (x * x + y * y)
    R[0, 1] = 2.0 * (x * y - z * w)
    R[1, 0] = 2.0 * (x * y + z * w)
    R[0, 2] = 2.0 * (x * z + y * w)
    R[2, 0] = 2.0 * (x * z - y * w)
    R[1, 2] = 2.0 * (y * z - x * w)
    R[2, 1] = 2.0 * (y * z + x * w)


@njit(inline="always", cache=True)
def _zero6(x):
    for k in range(6):
        x[k] = 0.0


@njit(inline="always", cache=True)
def _unit_columns(S, va, n, first):
    """S[va + k] = e_{first + k} for k < n (the joint's motion subspace is n unit columns)."""
    for k in range(n):
        for r in range(6):
            S[va + k, r] = 0.0
        S[va + k, first + k] = 1.0


@njit(inline="always", cache=True)
def _axis_columns(S, va, n, first, step, a):
    """S[va + k] = a in slots first + step k .. first + step k + 2, zero elsewhere, for k < n
    (a cylindrical joint's [a; 0] and [0; a]: first 0, step 3; a universal's [0; a] twice: 3, 0)."""
    for k in range(n):
        for r in range(6):
            S[va + k, r] = 0.0
        for r in range(3):
            S[va + k, first + step * k + r] = a[r]


@njit(inline="always", cache=True)
def _ball(kind, q, qa, va, R, p, S):
    """A free or spherical joint's R, p and S (jcalc and jcalc_common share this code)."""
    # Nakamura and Yamane 2000 sec. 2.5: the floating base as one 6-DoF joint, S = 1;
    # a ball joint: the rotation of its quaternion, S = [0; 1]
    free = kind == FREE
    quat_to_rot(q, qa + 3 if free else qa, R)
    if free:
        for k in range(3):
            p[k] = q[qa + k]
    _unit_columns(S, va, 6 if free else 3, 0 if free else 3)


# The kinds that most models are made of, in a function of their own: the pass of a model with
# only these kinds (``passes.forward_pass_common``) compiles this and not jcalc's other branches,
# which were 1.0 s of the 4.4 s CPU of a cold first rnea (human_figure_16, issue 28).
# Not inline="always" (see jcalc).  jcalc does not call it: a call from jcalc (one compiled copy
# for both passes) made ABA and CRBA 6-11 % slower on the 42-DoF figure.
@njit(cache=True, **INTERNAL)
def jcalc_common(kind, a, a2, q, qa, v, va, has_v, R, p, S, vJ, cJ, T):
    """``jcalc`` for a free, spherical or fixed joint (revolute and prismatic joints are formed by
    the pass itself): the pass of a model whose joints are all of these kinds calls it for every
    joint that is not revolute or prismatic, and ``jcalc`` for these kinds, the same operations."""
    for k in range(3):
        p[k] = 0.0
    for k in range(6):
        vJ[k] = 0.0
        cJ[k] = 0.0
    if kind == REVOLUTE or kind == PRISMATIC:
        return                  # never reached, as in jcalc
    if kind == SPHERICAL or kind == FREE:
        _ball(kind, q, qa, va, R, p, S)
    if has_v:
        nvj = _joint_nv(kind)
        for k in range(nvj):
            for r in range(6):
                vJ[r] += S[va + k, r] * v[va + k]


# not inline="always": Numba's IR-level inlining of this large function into its one caller
# doubled the compile time of the kinematics pass (14 s -> 7 s of CPU without it),
# and the per-call times are unchanged (measured on UR5 and Talos).
# Each primitive (the quaternion's rotation, Rodrigues' formula, a unit motion subspace) has one
# call site shared by the kinds that use it, and S is written by loops: every inlined copy and
# every constant-index store costs Numba's typing and lowering (about 1 ms a store) when the
# pass first compiles, and this function's code is compiled for every model, whichever kinds
# it has (1.4 s of a cold first rnea before, written out kind by kind).
@njit(cache=True, **INTERNAL)
def jcalc(kind, a, a2, q, qa, v, va, has_v, R, p, S, vJ, cJ, T):
    """Fill R, p (joint transform), S[va:va+nv] (child frame), vJ and cJ.

    ``T`` is a 3x3 scratch.  With ``has_v`` False, vJ and cJ are left at zero.  Revolute and
    prismatic joints are formed by ``passes.kinematics_pass`` directly (X_tree X_J fused: a
    plane rotation of two columns of R_tree for a coordinate axis); keeping them out of this
    function keeps the pass's inlined loop small, which measured twice as fast.
    """
    for k in range(3):
        p[k] = 0.0
    for k in range(6):
        vJ[k] = 0.0
        cJ[k] = 0.0
    if kind == REVOLUTE or kind == PRISMATIC:
        # never reached: kinematics_pass forms these two kinds itself, fused with X_tree
        # (measured twice as fast as passing them through this function)
        return
    if kind == SPHERICAL or kind == FREE:
        _ball(kind, q, qa, va, R, p, S)
    elif kind == CYLINDRICAL or kind == UNIVERSAL:
        # cylindrical, q = [d, theta]: translation and rotation about the same axis (S^T a = a);
        # universal: R = R(a1, q1) R(a2, q2); w = R2^T a1 q1' + a2 q2' -> S = [0; R2^T a1 | 0; a2]
        cyl = kind == CYLINDRICAL
        rodrigues(a, q[qa + 1] if cyl else q[qa], R)
        if cyl:
            for k in range(3):
                p[k] = a[k] * q[qa]
            _axis_columns(S, va, 2, 0, 3, a)
        else:
            rodrigues(a2, q[qa + 1], T)
            b0 = T[0, 0] * a[0] + T[1, 0] * a[1] + T[2, 0] * a[2]
            b1 = T[0, 1] * a[0] + T[1, 1] * a[1] + T[2, 1] * a[2]
            b2 = T[0, 2] * a[0] + T[1, 2] * a[1] + T[2, 2] * a[2]
            _matmul3_inplace(R, T)
            _axis_columns(S, va, 2, 3, 0, a2)      # [0; a2] twice, the first overwritten next
            S[va, 3], S[va, 4], S[va, 5] = b0, b1, b2
            if has_v:
                # S' q' = d/dt(R2^T a1) q1' = (R2^T a1 x a2) q1' q2'
                w = v[va] * v[va + 1]
                cJ[3] = (b1 * a2[2] - b2 * a2[1]) * w
                cJ[4] = (b2 * a2[0] - b0 * a2[2]) * w
                cJ[5] = (b0 * a2[1] - b1 * a2[0]) * w
    elif kind == SPHERICAL_ZYX:
        # Baerlocher and Boulic 2001: R = Rz(z) Ry(y) Rx(x); w = S [z', y', x'] with
        # S = [[-sy, 0, 1], [cy sx, cx, 0], [cy cx, -sx, 0]] (child frame)
        cz, sz = math.cos(q[qa]), math.sin(q[qa])
        cy, sy = math.cos(q[qa + 1]), math.sin(q[qa + 1])
        cx, sx = math.cos(q[qa + 2]), math.sin(q[qa + 2])
        R[0, 0] = cz * cy
        R[0, 1] = cz * sy * sx - sz * cx
        R[0, 2] = cz * sy * cx + sz * sx
        R[1, 0] = sz * cy
        R[1, 1] = sz * sy * sx + cz * cx
        R[1, 2] = sz * sy * cx - cz * sx
        R[2, 0] = -sy
        R[2, 1] = cy * sx
        R[2, 2] = cy * cx
        _unit_columns(S, va, 3, 3)            # (rows 0, 1 overwritten next)
        S[va, 3], S[va, 4], S[va, 5] = -sy, cy * sx, cy * cx
        S[va + 1, 4], S[va + 1, 5] = cx, -sx
        S[va + 2, 3], S[va + 2, 5] = 1.0, 0.0
        if has_v:
            dz, dy, dx = v[va], v[va + 1], v[va + 2]
            cJ[3] = -cy * dy * dz
            cJ[4] = (-sy * sx * dy + cy * cx * dx) * dz - sx * dx * dy
            cJ[5] = (-sy * cx * dy - cy * sx * dx) * dz - cx * dx * dy
    elif kind == PLANAR:
        # q = [x, y, theta] in the joint frame's xy-plane; v = [vx, vy, wz] in the child frame
        c, s = math.cos(q[qa + 2]), math.sin(q[qa + 2])
        _eye3(R)
        R[0, 0], R[0, 1], R[1, 0], R[1, 1] = c, -s, s, c
        p[0], p[1] = q[qa], q[qa + 1]
        _unit_columns(S, va, 3, 0)
        S[va + 2, 2], S[va + 2, 5] = 0.0, 1.0
    if has_v:
        nvj = _joint_nv(kind)
        for k in range(nvj):
            for r in range(6):
                vJ[r] += S[va + k, r] * v[va + k]


@njit(inline="always", cache=True)
def _joint_nv(kind):
    if kind == REVOLUTE or kind == PRISMATIC:
        return 1
    if kind == CYLINDRICAL or kind == UNIVERSAL:
        return 2
    if kind == FREE:
        return 6
    if kind == SPHERICAL or kind == SPHERICAL_ZYX or kind == PLANAR:
        return 3
    return 0


@njit(inline="always", cache=True)
def _eye3(R):
    for r in range(3):
        for c in range(3):
            R[r, c] = 1.0 if r == c else 0.0


@njit(inline="always", cache=True)
def _matmul3_inplace(A, B):
    """A <- A B for 3x3 matrices."""
    for r in range(3):
        x, y, z = A[r, 0], A[r, 1], A[r, 2]
        for c in range(3):
            A[r, c] = x * B[0, c] + y * B[1, c] + z * B[2, c]
