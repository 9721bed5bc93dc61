"""Joint springs: the torque tau_s that holds each joint's spring, its potential energy and its
derivative along the tangent space (compiled building blocks; RNEA adds tau_s to the joint
torque, ABA takes it off tau, as the damping).

For a joint of stiffness k (``model.stiffness``, per dof) and reference configuration q_ref
(``model.spring_ref``), as MuJoCo defines its joint springs (``mj_springdamper``: ``qfrc_spring
= -k (q - qpos_spring)``, a ball's difference the rotation vector of q_ref^-1 q):

* Euclidean joints (revolute, prismatic, cylindrical, universal, ZYX angles, whose v = q'):
  tau_s = k (q - q_ref),                         U = 1/2 sum k (q - q_ref)^2;
* spherical: r = log(q_ref^-1 q) (the rotation vector, |r| <= pi, in the joint's child frame),
  tau_s = k r,                                   U = 1/2 k |r|^2;
  (r is an eigenvector of the inverse right Jacobian J_r^-1(r) with eigenvalue 1, so
  dU/dt = k r . J_r^-1(r) w = k r . w: tau_s is exactly the gradient of U; Barfoot 2017,
  sec. 7.1.5);
* free: the translation as Euclidean in the world frame, seen by the body-frame velocity
  (tau_lin = R^T K (p - p_ref)), the rotation as a spherical joint;
* planar (v in the child frame): tau_xy = R(theta)^T K (xy - xy_ref), tau_theta = k (theta - theta_ref).

A ball's (and a free joint's rotational) stiffness is one number (the builder checks it): a
different k per axis of the rotation vector would not be the gradient of any energy.
"""
from __future__ import annotations

import math

from numba import njit

from . import INTERNAL

from .jcalc import quat_to_rot
from .kinds import FREE, PLANAR, SPHERICAL
from .layout import model_sizes, unpack_model, unpack_springs


@njit(inline="always", cache=True)
def _rotation_vector(q, qa, ref, out):
    """out = log(ref^-1 quat(q[qa:qa+4])), quaternions [x, y, z, w]; q's quaternion is
    normalized first (as MuJoCo's mj_springdamper does).  Returns |out|."""
    x, y, z, w = q[qa], q[qa + 1], q[qa + 2], q[qa + 3]
    n = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    # conj(ref) (x) q: w = rw w + rv.v, vec = rw v - w rv - rv x v
    rx, ry, rz, rw = ref[0], ref[1], ref[2], ref[3]
    dw = rw * w + rx * x + ry * y + rz * z
    dx = rw * x - w * rx - (ry * z - rz * y)
    dy = rw * y - w * ry - (rz * x - rx * z)
    dz = rw * z - w * rz - (rx * y - ry * x)
    if dw < 0.0:                      # the same rotation, angle in [0, pi]
        dx, dy, dz, dw = -dx, -dy, -dz, -dw
    s = math.sqrt(dx * dx + dy * dy + dz * dz)
    if s == 0.0:
        out[0], out[1], out[2] = 0.0, 0.0, 0.0
        return 0.0
    angle = 2.0 * math.atan2(s, dw)
    f = angle / s
    out[0], out[1], out[2] = dx * f, dy * f, dz * f
    return angle


@njit(inline="always", cache=True)
def _any(stiffness, va, n):
    for d in range(va, va + n):
        if stiffness[d] != 0.0:
            return True
    return False


@njit(cache=True, **INTERNAL)
def add_spring_torques(mi, mf, q, sign, R, r, out):
    """out += sign * tau_s (tau_s: the torque that holds the springs; MuJoCo's qfrc_spring is
    -tau_s).  R (3, 3), r (3,): scratch.  Returns False when the model has no spring."""
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, _, _, _ = unpack_model(mi, mf)
    stiffness, ref = unpack_springs(mi, mf)
    nb, nq, nv = model_sizes(mi)
    found = False
    for i in range(1, nb):
        va, qa, n = vadr[i], qadr[i], jnv[i]
        if n == 0 or not _any(stiffness, va, n):
            continue
        found = True
        kind = jtype[i]
        if kind == SPHERICAL or kind == FREE:
            # (one inlined copy of the rotation vector for both kinds: each copy costs Numba
            # typing and lowering when the RNEA first compiles, springs or not)
            o = 0
            if kind == FREE:
                o = 3
                quat_to_rot(q, qa + 3, R)
                f0 = stiffness[va] * (q[qa] - ref[i, 0])
                f1 = stiffness[va + 1] * (q[qa + 1] - ref[i, 1])
                f2 = stiffness[va + 2] * (q[qa + 2] - ref[i, 2])
                for k in range(3):
                    out[va + k] += sign * (R[0, k] * f0 + R[1, k] * f1 + R[2, k] * f2)
            _rotation_vector(q, qa + o, ref[i, o:], r)
            for k in range(3):
                out[va + o + k] += sign * stiffness[va + o + k] * r[k]
        elif kind == PLANAR:
            c, s = math.cos(q[qa + 2]), math.sin(q[qa + 2])
            fx = stiffness[va] * (q[qa] - ref[i, 0])
            fy = stiffness[va + 1] * (q[qa + 1] - ref[i, 1])
            out[va] += sign * (c * fx + s * fy)
            out[va + 1] += sign * (c * fy - s * fx)
            out[va + 2] += sign * stiffness[va + 2] * (q[qa + 2] - ref[i, 2])
        else:                          # v = q'
            for k in range(n):
                out[va + k] += sign * stiffness[va + k] * (q[qa + k] - ref[i, k])
    return found


@njit(cache=True)
def spring_energy(mi, mf, q, r):
    """U = sum of the springs' potential energies (module docstring); r (3,) scratch."""
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, _, _, _ = unpack_model(mi, mf)
    stiffness, ref = unpack_springs(mi, mf)
    nb, nq, nv = model_sizes(mi)
    U = 0.0
    for i in range(1, nb):
        va, qa, n = vadr[i], qadr[i], jnv[i]
        if n == 0 or not _any(stiffness, va, n):
            continue
        kind = jtype[i]
        if kind == SPHERICAL or kind == FREE:
            o = 3 if kind == FREE else 0
            for k in range(o):
                e = q[qa + k] - ref[i, k]
                U += 0.5 * stiffness[va + k] * e * e
            _rotation_vector(q, qa + o, ref[i, o:], r)
            U += 0.5 * stiffness[va + o] * (r[0] * r[0] + r[1] * r[1] + r[2] * r[2])
        else:
            for k in range(n):
                e = q[qa + k] - ref[i, k]
                U += 0.5 * stiffness[va + k] * e * e
    return U


@njit(inline="always", cache=True)
def _add_jr_inv(r, k, dq, o):
    """dq[o:o+3, o:o+3] += k J_r^-1(r), the inverse right Jacobian of SO(3):
    I + 1/2 [r]x + (1/t^2 - (1 + cos t) / (2 t sin t)) [r]x^2, t = |r| (Barfoot 2017,
    sec. 7.1.5)."""
    t2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2]
    if t2 < 1e-8:
        c = 1.0 / 12.0 + t2 / 720.0
    else:
        t = math.sqrt(t2)
        c = 1.0 / t2 - (1.0 + math.cos(t)) / (2.0 * t * math.sin(t))
    # [r]x^2 = r r^T - t2 I
    for a in range(3):
        for b in range(3):
            x = c * (r[a] * r[b] - (t2 if a == b else 0.0))
            if a == b:
                x += 1.0
            dq[o + a, o + b] += k * x
    dq[o + 1, o + 2] -= 0.5 * k * r[0]
    dq[o + 2, o + 1] += 0.5 * k * r[0]
    dq[o + 2, o + 0] -= 0.5 * k * r[1]
    dq[o + 0, o + 2] += 0.5 * k * r[1]
    dq[o + 0, o + 1] -= 0.5 * k * r[2]
    dq[o + 1, o + 0] += 0.5 * k * r[2]


@njit(cache=True)
def spring_stiffness_add(mi, mf, q, R, r, dq):
    """dq += d tau_s / dq along the tangent space (column k: d/de tau_s(integrate(q, e e_k))),
    block diagonal, one block per joint; R (3, 3), r (3,) scratch."""
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, _, _, _ = unpack_model(mi, mf)
    stiffness, ref = unpack_springs(mi, mf)
    nb, nq, nv = model_sizes(mi)
    for i in range(1, nb):
        va, qa, n = vadr[i], qadr[i], jnv[i]
        if n == 0 or not _any(stiffness, va, n):
            continue
        kind = jtype[i]
        if kind == SPHERICAL:
            _rotation_vector(q, qa, ref[i], r)
            _add_jr_inv(r, stiffness[va], dq, va)
        elif kind == FREE:
            # p moves by R e_lin, R by R exp(e_ang): d(R^T K dp) = R^T K R e_lin + [R^T K dp]x e_ang
            quat_to_rot(q, qa + 3, R)
            t = r
            f0 = stiffness[va] * (q[qa] - ref[i, 0])
            f1 = stiffness[va + 1] * (q[qa + 1] - ref[i, 1])
            f2 = stiffness[va + 2] * (q[qa + 2] - ref[i, 2])
            for a in range(3):
                t[a] = R[0, a] * f0 + R[1, a] * f1 + R[2, a] * f2
                for b in range(3):
                    dq[va + a, va + b] += (R[0, a] * stiffness[va] * R[0, b] + R[1, a] * stiffness[va + 1] * R[1, b]
                                           + R[2, a] * stiffness[va + 2] * R[2, b])
            dq[va + 0, va + 4] -= t[2]
            dq[va + 0, va + 5] += t[1]
            dq[va + 1, va + 3] += t[2]
            dq[va + 1, va + 5] -= t[0]
            dq[va + 2, va + 3] -= t[1]
            dq[va + 2, va + 4] += t[0]
            _rotation_vector(q, qa + 3, ref[i, 3:], r)
            _add_jr_inv(r, stiffness[va + 3], dq, va + 3)
        elif kind == PLANAR:
            c, s = math.cos(q[qa + 2]), math.sin(q[qa + 2])
            kx, ky = stiffness[va], stiffness[va + 1]
            fx, fy = kx * (q[qa] - ref[i, 0]), ky * (q[qa + 1] - ref[i, 1])
            # xy moves by R(theta) e_xy: R^T K R; theta by e_theta: dR^T/dtheta K dxy
            dq[va, va] += c * c * kx + s * s * ky
            dq[va, va + 1] += -c * s * kx + s * c * ky
            dq[va + 1, va] += -s * c * kx + c * s * ky
            dq[va + 1, va + 1] += s * s * kx + c * c * ky
            dq[va, va + 2] += -s * fx + c * fy
            dq[va + 1, va + 2] += -c * fx - s * fy
            dq[va + 2, va + 2] += stiffness[va + 2]
        else:
            for k in range(n):
                dq[va + k, va + k] += stiffness[va + k]
