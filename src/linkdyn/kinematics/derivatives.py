"""Analytical derivatives of frame kinematics (Carpentier and Mansard 2018).

``frame_velocity_derivatives`` and ``frame_acceleration_derivatives`` give the partial
derivatives of :func:`linkdyn.frame_velocity` and :func:`linkdyn.frame_acceleration` with respect
to q, v (and a), as Pinocchio's ``computeForwardKinematicsDerivatives`` followed by
``getFrameVelocityDerivatives`` / ``getFrameAccelerationDerivatives``; ``frame_pose_derivative``
that of the pose, which is the frame Jacobian in the local frame.

**The tangent space.**  As for :func:`linkdyn.rnea_derivatives`: column k of a q-derivative is
d/de f(integrate(q, e e_k)) at e = 0, so there are nv columns for every joint kind.  The motion
subspace S of every joint is the body-frame derivative of its transform along the tangent
coordinates, so moving dof k (of joint i) moves every body j of the subtree of i by the world
twist J_k = oX_i S_k: d(oM_j)/dq_k = J_k^ oM_j.

**The recursion** (Carpentier and Mansard 2018, the forward pass of Algorithm 1, all in the
world frame, prefix o), along the bodies that support the frame's body b only, with p the parent
of joint i:

  ov_i = oX_i v_i,  oa_i = oX_i a_i                          (body velocity, spatial acceleration)
  J_k   = oX_i S_k                                           (joint column, world)
  dV_k  = ov_p x J_k                                         = d ov_j/dq_k - J_k x ov_j
  dA_k  = oa_p x J_k + ov_p x dV_k                           = d oa_j/dq_k - J_k x oa_j - dV_k x ov_j
  dAv_k = (ov_p + ov_i) x J_k                                = d oa_j/dv_k - J_k x ov_j

for every body j of the subtree of i (here: j = b).  Joints whose S depends on their own
coordinates (universal, ZYX angles; Baerlocher and Boulic 2001) add, with
sv_k = sum_l dS_l/dq_k v_l:  dV_k += oX_i sv_k,
dA_k += oX_i (sum_l dS_l/dq_k a_l + d(S'q')/dq_k) + ov_i x oX_i sv_k,  dAv_k += oX_i d(S'q')/dv_k.

**The frame and its reference.**  The frame f sits on body b at the world pose oM_f = (R, p);
its world velocity is ov_b and its world spatial acceleration oa_b (no gravity: the acceleration
:func:`linkdyn.frame_acceleration` returns).  In world coordinates, for k in the support of b:

  d ov_b/dq_k = dV_k + J_k x ov_b,                 d ov_b/dv_k = J_k
  d oa_b/dq_k = dA_k + J_k x oa_b + dV_k x ov_b,   d oa_b/dv_k = dAv_k + J_k x ov_b,   d oa_b/da_k = J_k

and zero for the other dofs.  The local reference is y_f = oX_f^-1 y and oX_f^-1 turns with the
body (d oX_f^-1/dq_k = -oX_f^-1 (J_k x)), so d y_f/dq_k = oX_f^-1 (d y/dq_k - J_k x y).  The
local-world-aligned reference is y_a = [y_lin - p x y_ang; y_ang] with p moving at
dp_k = J_k,lin + J_k,ang x p, so d y_a/dq_k = T_p d y/dq_k + [y_ang x dp_k; 0].

Only the spatial acceleration is differentiated unless ``classical`` is set (then, in the
local-world-aligned reference, the frame origin's classical acceleration
x'' = a_lin + w x v_lin, whose derivatives follow by the product rule).

**Pinocchio.**  In the local and world references the results equal Pinocchio's (version 4.1).
In the local-world-aligned reference Pinocchio returns T_p d y/dq_k, without the term
[y_ang x dp_k; 0] of the moving frame origin, which is not the derivative of its own frame
velocity or acceleration in that reference; the q-derivatives here are (they differ from
Pinocchio's by that term; the v- and a-derivatives agree).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from .._api import as_states, raise_for_status
from ..model.gears import reduced
from .._kernels.layout import model_sizes as _model_sizes, unpack_data as _unpack_data, unpack_model as _unpack_model
from .._kernels.passes import (ACC, OK, OVERFLOW, all_finite as _all_finite, check_inputs as _check_inputs,
                              support_pass as _support_pass)
from .._kernels.spatial_nb import motion_act as _motion_act
from .._kernels.joint_derivatives import joint_columns as _joint_columns
from . import LOCAL, LOCAL_WORLD_ALIGNED, WORLD, _frame, _frame_pose_nb, _ref, jacobian

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model

__all__ = ["frame_acceleration_derivatives", "frame_pose_derivative", "frame_velocity_derivatives"]


# ---------------------------------------------------------------------------------------
# the kernel: the forward pass of Carpentier and Mansard 2018 along the support of one body
@njit(cache=True)
def _fk_derivatives_kernel(mi, mf, ws, q, v, a, b, fR, fp, ov, oa, cols, fpose, scratch):
    """Fill ``ov``, ``oa`` (nb, 6) for the bodies supporting body b (world, no gravity),
    ``cols`` (4, nv, 6) = J, dV, dA, dAv of their dofs (zero for every other dof) and ``fpose``
    (4, 3) = [R; p^T], the world pose of the frame bMf = (fR, fp) on body b."""
    st = _check_inputs(mi, q, v, a, True)
    if st != OK:
        return st
    parent, jtype, qadr, vadr, jnq, jnv, axis, axis2, _, _, _, _, _ = _unpack_model(mi, mf)
    nb, nq, nv = _model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, U, Dinv, u, tmp, W6, W3 = _unpack_data(ws, nb, nv)
    _support_pass(mi, mf, ws, q, v, a, np.int64(ACC), np.bool_(True), np.bool_(False), b)
    J, dV, dA, dAv = cols[0], cols[1], cols[2], cols[3]
    for x in range(cols.size):
        cols.flat[x] = 0.0
    for k in range(6):
        ov[0, k] = 0.0
        oa[0, k] = 0.0
    # the support of b, root first
    path = np.empty(nb, dtype=np.int64)
    n = 0
    j = b
    while j > 0:
        path[n] = j
        n += 1
        j = parent[j]
    dS, d2S = scratch[:27].reshape((3, 3, 3)), scratch[27:108].reshape((3, 3, 3, 3))
    t = scratch[108:132].reshape((4, 6))
    for s in range(n - 1, -1, -1):
        i = path[s]
        pi = parent[i]
        R, p = oR[i], op[i]
        _motion_act(R, p, vel[i], ov[i])
        _motion_act(R, p, acc[i], oa[i])
        _joint_columns(jtype[i], axis[i], axis2[i], q, qadr[i], S, v, a, vadr[i], jnv[i], R, p, ov[pi], oa[pi], ov[i],
                       J, dV, dA, dAv, dS, d2S, t)
    _frame_pose_nb(oR, op, b, fR, fp, fpose[:3], fpose[3])
    if not (_all_finite(cols) and _all_finite(ov) and _all_finite(oa) and _all_finite(fpose)):
        return OVERFLOW
    return OK


# ---------------------------------------------------------------------------------------
# the reference frames (NumPy, on the world quantities of the kernel)
def _cross_cols(x, Y):
    """x x Y[:, k] (motion cross product) for every column of Y (6, n)."""
    lin = np.cross(x[3:], Y[:3], axisb=0, axisc=0) + np.cross(x[:3], Y[3:], axisb=0, axisc=0)
    return np.concatenate([lin, np.cross(x[3:], Y[3:], axisb=0, axisc=0)])


def _cols_cross(Y, x):
    """Y[:, k] x x for every column of Y (6, n)."""
    return -_cross_cols(x, Y)


def _world(model, q, v, a, frame):
    """World quantities: oM_f = (R, p), ov_b, oa_b and the derivatives (6, nv) in world coordinates
    d ov_b/dq, d oa_b/dq, d oa_b/dv, and J (= d ov_b/dv = d oa_b/da)."""
    b, fR, fp = _frame(model, frame)
    nb, nv = model.nbody, model.nv
    ov, oa = np.zeros((nb, 6)), np.zeros((nb, 6))
    cols = np.zeros((4, nv, 6))
    fpose = np.empty((4, 3))
    st = _fk_derivatives_kernel(model._mi, model._mf, model._ws, q, v, a, np.int64(b), fR, fp, ov, oa, cols, fpose,
                                np.zeros(132))
    raise_for_status(model, st, q=q, v=v, a=a)
    J, dV, dA, dAv = np.ascontiguousarray(cols.transpose(0, 2, 1))     # (6, nv) each
    T = fpose[:3], fpose[3]
    vb, ab = ov[b], oa[b]
    dv_dq = dV + _cols_cross(J, vb)                        # dV_k + J_k x ov_b
    da_dq = dA + _cols_cross(J, ab) + _cols_cross(dV, vb)  # dA_k + J_k x oa_b + dV_k x ov_b
    da_dv = dAv + _cols_cross(J, vb)                       # dAv_k + J_k x ov_b
    return T, vb, ab, J, dv_dq, da_dq, da_dv


def _inv_act(R, p, Y):
    """oX_f^-1 Y for columns Y (6, n): lin = R^T (y_lin - p x y_ang), ang = R^T y_ang."""
    lin = Y[:3] - np.cross(p, Y[3:], axisb=0, axisc=0)
    return np.concatenate([R.T @ lin, R.T @ Y[3:]])


def _translate(p, Y):
    """T_p Y = [y_lin - p x y_ang; y_ang] for columns Y (6, n)."""
    return np.concatenate([Y[:3] - np.cross(p, Y[3:], axisb=0, axisc=0), Y[3:]])


def _to_reference(ref, R, p, J, y, dy_dq, others):
    """(d y_ref/dq, [d y_ref/dx for the derivatives ``others``]) of a world motion vector y."""
    if ref == WORLD:
        return dy_dq, others
    if ref == LOCAL:
        # d(oX_f^-1 y)/dq_k = oX_f^-1 (dy/dq_k - J_k x y)
        return _inv_act(R, p, dy_dq - _cols_cross(J, y)), [_inv_act(R, p, D) for D in others]
    # local world aligned: d(T_p y)/dq_k = T_p dy/dq_k + [y_ang x dp_k; 0], dp_k = J_k,lin + J_k,ang x p
    dp = J[:3] + np.cross(J[3:], p, axisa=0, axisc=0)
    dq = _translate(p, dy_dq)
    dq[:3] += np.cross(y[3:], dp, axisb=0, axisc=0)
    return dq, [_translate(p, D) for D in others]


def _per_state(model, q, v, a, one):
    """``one(q, v, a)`` (a tuple of arrays) on a single state, or state by state on a stack
    (rows stacked: (N, ...) each; a single state next to a stack is shared by its rows)."""
    args = as_states(model, q=q, v=v, a=a)
    if args.batch is None:
        return one(np.ascontiguousarray(args.q), np.ascontiguousarray(args.v), np.ascontiguousarray(args.a))
    rows = []
    for k in range(args.batch):
        qk, vk, ak = (x[k] if x.shape[0] > 1 else x[0] for x in (args.q, args.v, args.a))
        try:
            rows.append(one(np.ascontiguousarray(qk), np.ascontiguousarray(vk), np.ascontiguousarray(ak)))
        except ValueError as exc:
            raise ValueError(f"state {k} of the stack: {exc}") from None
    return tuple(np.stack(x) for x in zip(*rows))


# ---------------------------------------------------------------------------------------
# public functions
@reduced(("columns", "columns"))
def frame_velocity_derivatives(model: Model, q: ArrayLike, v: ArrayLike, frame: str | int, reference: str = "local"
                               ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Partial derivatives ``(dv_dq, dv_dv)``, each (6, nv), of the spatial velocity
    :func:`linkdyn.frame_velocity` ``(model, q, v, frame, reference)`` (Carpentier and Mansard 2018;
    Pinocchio's ``getFrameVelocityDerivatives``).

    ``reference`` is "local", "world" or "local_world_aligned", as for :func:`linkdyn.jacobian`.
    The q-derivative is taken in the tangent space: column k is d/de frame_velocity(integrate(q,
    e e_k), v) at e = 0 (nv columns for every joint kind).  ``dv_dv`` is the frame Jacobian in
    that reference.  In "local_world_aligned", ``dv_dq`` includes the term of the moving frame
    origin, [w x dp/dq_k; 0], which Pinocchio 4.1 leaves out (see the module's notes).  A stack of
    states gives (N, 6, nv) each, computed state by state.
    """
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return frame_velocity_derivatives.on_full_tree(model, q, v, frame, reference)
    ref = _ref(reference)

    def one(q, v, a):
        T, vb, ab, J, dv_dq, da_dq, da_dv = _world(model, q, v, a, frame)
        dq, (dv,) = _to_reference(ref, T[0], T[1], J, vb, dv_dq, [J])
        return dq, dv
    return _per_state(model, q, v, np.zeros(model.nv), one)


@reduced(("columns", "columns", "columns"))
def frame_acceleration_derivatives(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike, frame: str | int,
                                   reference: str = "local", classical: bool = False
                                   ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Partial derivatives ``(da_dq, da_dv, da_da)``, each (6, nv), of
    :func:`linkdyn.frame_acceleration` ``(model, q, v, a, frame, reference, classical)``
    (Carpentier and Mansard 2018; Pinocchio's ``getFrameAccelerationDerivatives``).

    What is differentiated is what :func:`linkdyn.frame_acceleration` returns: the *spatial*
    acceleration of the frame (the derivative of its body's spatial velocity, Featherstone 2008,
    without gravity) expressed in ``reference`` ("local", "world" or "local_world_aligned"), the
    quantity Pinocchio's function differentiates.  With ``classical`` and "local_world_aligned",
    the classical acceleration of the frame origin x'' = a_lin + w x v_lin and the angular
    acceleration instead (``classical`` is ignored in the other references, as by
    :func:`linkdyn.frame_acceleration`).  The q-derivative is taken in the tangent space (column
    k: d/de at e = 0 along integrate(q, e e_k)); ``da_da`` is the frame Jacobian in that
    reference.  In "local_world_aligned", ``da_dq`` includes the term of the moving frame origin,
    [a_ang x dp/dq_k; 0], which Pinocchio 4.1 leaves out (see the module's notes).  A stack of
    states gives (N, 6, nv) each, computed state by state.
    """
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return frame_acceleration_derivatives.on_full_tree(model, q, v, a, frame, reference, classical)
    ref = _ref(reference)

    def one(q, v, a):
        T, vb, ab, J, dv_dq, da_dq, da_dv = _world(model, q, v, a, frame)
        R, p = T
        dq, (dv, da) = _to_reference(ref, R, p, J, ab, da_dq, [da_dv, J])
        if classical and ref == LOCAL_WORLD_ALIGNED:
            # x'' = a_lin + w x v_lin: add d(w x v_lin) = dw x v_lin + w x dv_lin (velocities local world aligned)
            vq, (vv,) = _to_reference(ref, R, p, J, vb, dv_dq, [J])
            va = _translate(p, vb[:, None])[:, 0]
            w, vl = va[3:], va[:3]
            dq = dq.copy()
            dv = dv.copy()
            dq[:3] += np.cross(vq[3:], vl, axisa=0, axisc=0) + np.cross(w, vq[:3], axisb=0, axisc=0)
            dv[:3] += np.cross(vv[3:], vl, axisa=0, axisc=0) + np.cross(w, vv[:3], axisb=0, axisc=0)
        return dq, dv, da
    return _per_state(model, q, v, a, one)


def frame_pose_derivative(model: Model, q: ArrayLike, frame: str | int) -> NDArray[np.float64]:
    """(6, nv) derivative of the world pose T(q) = :func:`linkdyn.frame_pose` of ``frame`` in the
    tangent spaces of both the configuration and SE(3): column k is
    d/de log(T(q)^-1 T(integrate(q, e e_k))) at e = 0, with log the SE(3) logarithm, twists
    [v; w].  This is exactly the frame Jacobian in the local frame,
    ``jacobian(model, q, frame, "local")`` (Murray, Li and Sastry 1994, the body Jacobian;
    Carpentier and Mansard 2018), which is what is returned; for a stack, (N, 6, nv).
    """
    return jacobian(model, q, frame, "local")
