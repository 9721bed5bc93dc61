"""Forward kinematics, frame velocities and accelerations, Jacobians and J'q', centre of mass.

Featherstone 2008, ch. 2 (frame-to-frame propagation with X(R, r)), Spong, Hutchinson and Vidyasagar 2006, chs. 3-4 (the
manipulator Jacobian, x'' = J q'' + J' q').  References, as in Pinocchio:

* ``"world"``: spatial velocity in world coordinates, at the world origin;
* ``"local"``: spatial velocity in the frame's own coordinates, at its origin;
* ``"local_world_aligned"``: the frame origin's linear velocity and the angular velocity,
  both in world coordinates (what a "classical" Jacobian of a point gives).

Layer (docs/architecture.md): above ``model``, below ``dynamics``.  May import: ``_kernels``, ``_api``,
``spatial``, ``model``.  Imported by: dynamics, the constraint layer, sim, control, analysis, viz, models.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit, prange
from numba import types as nt

from .._api import _F64, _ND, MF, OUT1, OUT2, PACKED, VEC, Entry, as_states, batch_workspace, raise_for_status, run, vectors
from ..model.gears import reduced
from .._kernels.batch import chunk as _chunk, pick as _pick
from .._kernels.layout import (_as_readonly, _view, model_sizes as _model_sizes, unpack_data as _unpack_data,
    unpack_model as _unpack_model, unpack_packed as _unpack_packed)
from .._kernels.passes import (ACC, NO_MASS, OK, OVERFLOW, POS, VEL, all_finite as _all_finite, check_inputs as _check_inputs,
    check_q as _check_q,
    kinematics_pass as _kinematics_pass, support_pass as _support_pass)
from .._kernels.spatial_nb import motion_act as _motion_act, motion_inv_act as _motion_inv_act

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model

WORLD, LOCAL, LOCAL_WORLD_ALIGNED = 0, 1, 2
_REFS = {"world": WORLD, "local": LOCAL, "local_world_aligned": LOCAL_WORLD_ALIGNED}
_EMPTY = np.zeros(0)


def _ref(reference):
    try:
        return _REFS[reference]
    except (KeyError, TypeError):
        raise ValueError(f"reference: expected one of {list(_REFS)}, got {reference!r}") from None


# ---------------------------------------------------------------------------------------
# kernels
@njit(inline="always", cache=True)
def _frame_pose_nb(oR, op, b, fR, fp, R, p):
    """oMf = oMb bMf."""
    for r in range(3):
        for c in range(3):
            R[r, c] = oR[b, r, 0] * fR[0, c] + oR[b, r, 1] * fR[1, c] + oR[b, r, 2] * fR[2, c]
        p[r] = op[b, r] + oR[b, r, 0] * fp[0] + oR[b, r, 1] * fp[1] + oR[b, r, 2] * fp[2]


@njit(inline="always", cache=True)
def _express(ref, oR, op, b, fR, fp, vb, out, R, p, tmp):
    """A motion vector ``vb`` of body b (body frame, at the body origin) seen from frame f
    (pose bMf on body b) in reference ``ref``; ``R``, ``p``, ``tmp`` are scratch."""
    if ref == WORLD:
        _motion_act(oR[b], op[b], vb, out)
        return
    _motion_inv_act(fR, fp, vb, tmp)          # local at the frame
    if ref == LOCAL:
        for k in range(6):
            out[k] = tmp[k]
        return
    _frame_pose_nb(oR, op, b, fR, fp, R, p)  # world-aligned at the frame origin
    for r in range(3):
        out[r] = R[r, 0] * tmp[0] + R[r, 1] * tmp[1] + R[r, 2] * tmp[2]
        out[3 + r] = R[r, 0] * tmp[3] + R[r, 1] * tmp[4] + R[r, 2] * tmp[5]


@njit(cache=True)
def _frame_jacobian_kernel(mi, mf, ws, q, b, fR, fp, ref, J):
    """J (6, nv): columns of the dofs that support body b, zero elsewhere."""
    st = _check_q(mi, q)
    if st != OK:
        return st
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, _, _, _ = _unpack_model(mi, mf)
    nb, nq, nv = _model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, U, Dinv, u, tmp, W6, W3 = _unpack_data(ws, nb, nv)
    _support_pass(mi, mf, ws, q, q[:0], q[:0], np.int64(POS), np.bool_(True), np.bool_(False), b)     # the path to body b only
    J[:, :] = 0.0
    R, p, col, t = W3[0], W3[2, 0], tmp[0], tmp[1]
    if ref != WORLD:
        _frame_pose_nb(oR, op, b, fR, fp, R, p)       # oMf
    j = b
    while j > 0:
        for d in range(vadr[j], vadr[j] + jnv[j]):
            _motion_act(oR[j], op[j], S[d], col)       # dof d in the world, at the origin
            if ref == WORLD:
                for k in range(6):
                    J[k, d] = col[k]
            else:
                if ref == LOCAL:
                    # world -> frame: X_f^-1
                    _motion_inv_act(R, p, col, t)
                    for k in range(6):
                        J[k, d] = t[k]
                else:
                    # linear velocity of the frame origin: v_o + w x p_f
                    J[0, d] = col[0] + col[4] * p[2] - col[5] * p[1]
                    J[1, d] = col[1] + col[5] * p[0] - col[3] * p[2]
                    J[2, d] = col[2] + col[3] * p[1] - col[4] * p[0]
                    J[3, d], J[4, d], J[5, d] = col[3], col[4], col[5]
        j = parent[j]
    return OK if _all_finite(J) else OVERFLOW        # finite input too large for float64


@njit(cache=True)
def _joint_jacobians_kernel(mi, mf, ws, q, J):
    """J (6, nv): every dof's motion in world coordinates at the world origin (the world
    Jacobian of each body is J restricted to the columns of its support)."""
    st = _check_q(mi, q)
    if st != OK:
        return st
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, _, _, _ = _unpack_model(mi, mf)
    nb, nq, nv = _model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, U, Dinv, u, tmp, W6, W3 = _unpack_data(ws, nb, nv)
    _kinematics_pass(mi, mf, ws, q, q[:0], q[:0], np.int64(POS), np.bool_(True), np.bool_(False))
    col = tmp[0]
    for j in range(1, nb):
        for d in range(vadr[j], vadr[j] + jnv[j]):
            _motion_act(oR[j], op[j], S[d], col)
            for k in range(6):
                J[k, d] = col[k]
    return OK if _all_finite(J) else OVERFLOW        # finite input too large for float64


@njit(cache=True)
def _joint_jacobians_packed(buf, q, J):
    """``_joint_jacobians_kernel`` on a model packed in one buffer (Model._packed)."""
    mi, mf, ws = _unpack_packed(buf)
    return _joint_jacobians_kernel(mi, mf, ws, q, J)


_joint_jacobians = Entry(_joint_jacobians_packed, PACKED, VEC, OUT2)


_FRAME_R = nt.Array(nt.float64, 2, "C", readonly=True)      # model.frame_R[f]
_FRAME_P = nt.Array(nt.float64, 1, "C", readonly=True)      # model.frame_p[f]


@njit(cache=True)
def _frame_jacobian_fa(buf, q, fa, J):
    """``_frame_jacobian_kernel`` with the frame and the reference in one array ``fa``
    (:func:`_frame_ref`): four arguments to unbox instead of seven."""
    mi, mf, ws = _unpack_packed(buf)
    return _frame_jacobian_kernel(mi, mf, ws, q, np.int64(fa[0]), _as_readonly(_view(fa, 2, (3, 3))),
                                  _as_readonly(_view(fa, 11, (3,))), np.int64(fa[1]), J)


_frame_jacobian = Entry(_frame_jacobian_fa, PACKED, VEC, MF, OUT2)


@njit(cache=True)
def _frame_motion_kernel(mi, mf, ws, q, v, a, b, fR, fp, ref, classical, out):
    """out[0] = frame velocity, out[1] = frame acceleration (Featherstone 2008, ch. 2) in ``ref``.

    With ``classical`` and ``ref`` local_world_aligned, out[1] is the acceleration of the
    frame origin as a point, x'' = R (a_lin + w x v_lin), and the angular acceleration;
    with a = 0 it is J' q' of that reference (Spong, Hutchinson and Vidyasagar 2006 eq. for x'' = J q'' + J' q')."""
    st = _check_inputs(mi, q, v, a, True)
    if st != OK:
        return st
    nb, nq, nv = _model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, U, Dinv, u, tmp, W6, W3 = _unpack_data(ws, nb, nv)
    _support_pass(mi, mf, ws, q, v, a, np.int64(ACC), np.bool_(True), np.bool_(False), b)      # the path to body b only
    R, p, t = W3[0], W3[2, 0], tmp[0]
    _express(ref, oR, op, b, fR, fp, vel[b], out[0], R, p, t)
    _express(ref, oR, op, b, fR, fp, acc[b], out[1], R, p, t)
    if classical and ref == LOCAL_WORLD_ALIGNED:
        # d/dt (R v_lin) = R (a_lin + w x v_lin), in world coordinates: add w_w x v_w
        w0, w1, w2 = out[0, 3], out[0, 4], out[0, 5]
        v0, v1, v2 = out[0, 0], out[0, 1], out[0, 2]
        out[1, 0] += w1 * v2 - w2 * v1
        out[1, 1] += w2 * v0 - w0 * v2
        out[1, 2] += w0 * v1 - w1 * v0
    return OK if _all_finite(out) else OVERFLOW        # finite input too large for float64


@njit(cache=True)
def _frame_pose_kernel(mi, mf, ws, q, b, fR, fp, T):
    """T (4, 4): the world pose oMf = oMb bMf of a frame on body b."""
    st = _check_q(mi, q)
    if st != OK:
        return st
    nb, nq, nv = _model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, U, Dinv, u, tmp, W6, W3 = _unpack_data(ws, nb, nv)
    _support_pass(mi, mf, ws, q, q[:0], q[:0], np.int64(POS), np.bool_(True), np.bool_(False), b)
    _frame_pose_nb(oR, op, b, fR, fp, T[:3, :3], T[:3, 3])
    T[3, 0], T[3, 1], T[3, 2], T[3, 3] = 0.0, 0.0, 0.0, 1.0
    return OK if _all_finite(T) else OVERFLOW        # finite input too large for float64


@njit(cache=True)
def _frame_pose_packed(buf, q, b, fR, fp, T):
    mi, mf, ws = _unpack_packed(buf)
    return _frame_pose_kernel(mi, mf, ws, q, b, fR, fp, T)


@njit(cache=True)
def _frame_motion_packed(buf, q, v, a, b, fR, fp, ref, classical, out):
    mi, mf, ws = _unpack_packed(buf)
    return _frame_motion_kernel(mi, mf, ws, q, v, a, b, fR, fp, ref, classical, out)


_frame_pose = Entry(_frame_pose_packed, PACKED, VEC, nt.int64, _FRAME_R, _FRAME_P, OUT2)
_frame_motion_entry = Entry(_frame_motion_packed, PACKED, VEC, VEC, VEC, nt.int64, _FRAME_R, _FRAME_P, nt.int64,
                            nt.boolean, OUT2)


@njit(cache=True)
def _forward_kinematics_kernel(mi, mf, ws, q, v, a, level, R, p, V, A):
    st = _check_q(mi, q) if level == POS else _check_inputs(mi, q, v, a, level >= ACC)
    if st != OK:
        return st
    nb, nq, nv = _model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, U, Dinv, u, tmp, W6, W3 = _unpack_data(ws, nb, nv)
    _kinematics_pass(mi, mf, ws, q, v, a, np.int64(level), np.bool_(True), np.bool_(False))
    R[:] = oR
    p[:] = op
    if level >= VEL:
        V[:] = vel
    if level >= ACC:
        A[:] = acc
    if not (_all_finite(R) and _all_finite(p) and _all_finite(V) and _all_finite(A)):
        return OVERFLOW                                 # finite input too large for float64
    return OK


@njit(cache=True)
def _com_kernel(mi, mf, ws, q, c, Jc):
    """Centre of mass c (3,) and, if Jc has columns, its Jacobian Jc (3, nv)."""
    st = _check_q(mi, q)
    if st != OK:
        return st
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, inertia, _, _ = _unpack_model(mi, mf)
    nb, nq, nv = _model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, U, Dinv, u, tmp, W6, W3 = _unpack_data(ws, nb, nv)
    _kinematics_pass(mi, mf, ws, q, q[:0], q[:0], np.int64(POS), np.bool_(True), np.bool_(False))
    # subtree sums: tmp[i, 0] = mass, tmp[i, 1:4] = sum m x (world)
    for i in range(nb):
        for k in range(4):
            tmp[i, k] = 0.0
    for i in range(nb - 1, 0, -1):
        m = inertia[i, 0, 0]
        # m c in the body frame from the lower-left block m [c]x
        h0, h1, h2 = inertia[i, 5, 1], inertia[i, 3, 2], inertia[i, 4, 0]
        tmp[i, 0] += m
        for r in range(3):
            tmp[i, 1 + r] += m * op[i, r] + oR[i, r, 0] * h0 + oR[i, r, 1] * h1 + oR[i, r, 2] * h2
        for k in range(4):
            tmp[parent[i], k] += tmp[i, k]
    M = tmp[0, 0]
    if M <= 0.0:
        return NO_MASS
    for r in range(3):
        c[r] = tmp[0, 1 + r] / M
    if Jc.shape[1] > 0:
        w, lin = W3[1, 0], W3[1, 1]
        for j in range(1, nb):
            ms = tmp[j, 0]
            for d in range(vadr[j], vadr[j] + jnv[j]):
                # column: (m_sub v_o + w x sum m x) / M for the dof's world motion [v_o; w]
                _motion_act(oR[j], op[j], S[d], U[0])
                for r in range(3):
                    w[r] = U[0, 3 + r]
                    lin[r] = U[0, r]
                Jc[0, d] = (ms * lin[0] + w[1] * tmp[j, 3] - w[2] * tmp[j, 2]) / M
                Jc[1, d] = (ms * lin[1] + w[2] * tmp[j, 1] - w[0] * tmp[j, 3]) / M
                Jc[2, d] = (ms * lin[2] + w[0] * tmp[j, 2] - w[1] * tmp[j, 1]) / M
    return OK


@njit(parallel=True, cache=True)
def _frame_jacobian_batch(mi, mf, WS, Q, b, fR, fp, ref, OUT, status):
    nt, n = WS.shape[0], OUT.shape[0]
    for t in prange(nt):
        lo, hi = _chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = _frame_jacobian_kernel(mi, mf, _pick(WS, t), _pick(Q, k), b, fR, fp, ref, _pick(OUT, k))


@njit(parallel=True, cache=True)
def _joint_jacobians_batch(mi, mf, WS, Q, OUT, status):
    nt, n = WS.shape[0], OUT.shape[0]
    for t in prange(nt):
        lo, hi = _chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = _joint_jacobians_kernel(mi, mf, _pick(WS, t), _pick(Q, k), _pick(OUT, k))


@njit(parallel=True, cache=True)
def _frame_pose_batch(mi, mf, WS, Q, b, fR, fp, OUT, status):
    nt, n = WS.shape[0], OUT.shape[0]
    for t in prange(nt):
        lo, hi = _chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = _frame_pose_kernel(mi, mf, _pick(WS, t), _pick(Q, k), b, fR, fp, _pick(OUT, k))


@njit(parallel=True, cache=True)
def _frame_motion_batch(mi, mf, WS, Q, V, A, b, fR, fp, ref, classical, OUT, status):
    nt, n = WS.shape[0], OUT.shape[0]
    for t in prange(nt):
        lo, hi = _chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = _frame_motion_kernel(mi, mf, _pick(WS, t), _pick(Q, k), _pick(V, k), _pick(A, k), b, fR, fp, ref,
                                            classical, _pick(OUT, k))


@njit(parallel=True, cache=True)
def _com_batch(mi, mf, WS, Q, C, JC, status):
    nt, n = WS.shape[0], C.shape[0]
    for t in prange(nt):
        lo, hi = _chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = _com_kernel(mi, mf, _pick(WS, t), _pick(Q, k), _pick(C, k), _pick(JC, k))


@njit(parallel=True, cache=True)
def _forward_kinematics_batch(mi, mf, WS, Q, V, A, level, R, P, VV, AA, status):
    nt, n = WS.shape[0], R.shape[0]
    for t in prange(nt):
        lo, hi = _chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = _forward_kinematics_kernel(mi, mf, _pick(WS, t), _pick(Q, k), _pick(V, k), _pick(A, k), level,
                                                  _pick(R, k), _pick(P, k), _pick(VV, k), _pick(AA, k))


# ---------------------------------------------------------------------------------------
# public functions
def _frame(model, frame):
    """(body, R, p) of a frame, cached per model by the name or index it was asked by."""
    try:
        return model._frame_args[frame]
    except (KeyError, TypeError):       # TypeError: not hashable; frame_id says what is wrong
        f = model.frame_id(frame)
        args = int(model.frame_body[f]), model.frame_R[f], model.frame_p[f]
        model._frame_args[frame] = args
        return args


def _frame_ref(model, frame, reference):
    """[body, reference code, R (9, row-major), p (3)] of a frame seen in a reference, one
    read-only array, cached per model by (frame, reference) as they were asked for; raises as
    :func:`_ref` and :func:`_frame` do, in that order."""
    ref = _ref(reference)
    b, fR, fp = _frame(model, frame)
    fa = np.empty(14)
    fa[0], fa[1] = b, ref
    fa[2:11] = fR.ravel()
    fa[11:] = fp
    fa.flags.writeable = False
    model._frame_ref_args[frame, reference] = fa
    return fa


_empty = np.empty


def _out(shape, batch):
    return np.empty(shape if batch is None else (batch,) + shape)


def _status(batch):
    return np.empty(batch, dtype=np.int64)


class Kinematics:
    """Result of :func:`forward_kinematics`: world poses ``R`` (nb, 3, 3), ``p`` (nb, 3) of
    every body, and if asked, body-frame spatial velocities ``v`` and accelerations ``a``
    (nb, 6), all with a leading N axis for a stack of states."""

    def __init__(self, model: Model, R: NDArray[np.float64], p: NDArray[np.float64], v: NDArray[np.float64] | None, a: NDArray[np.float64] | None) -> None:
        self.model, self.R, self.p, self.v, self.a = model, R, p, v, a

    def pose(self, frame: str | int) -> NDArray[np.float64]:
        """4x4 homogeneous world pose of a frame (or (N, 4, 4))."""
        b, fR, fp = _frame(self.model, frame)
        R, p = self.R[..., b, :, :], self.p[..., b, :]
        T = np.zeros(R.shape[:-2] + (4, 4))
        T[..., :3, :3] = R @ fR
        T[..., :3, 3] = p + R @ fp
        T[..., 3, 3] = 1.0
        return T


@reduced(None)
def forward_kinematics(model: Model, q: ArrayLike, v: ArrayLike | None = None, a: ArrayLike | None = None) -> Kinematics:
    """Poses of every body in the world (and velocities, accelerations if v, a are given)."""
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return forward_kinematics.on_full_tree(model, q, v, a)
    level = POS if v is None else (VEL if a is None else ACC)
    kw = {"q": q}
    if v is not None:
        kw["v"] = v
    if a is not None:
        kw["a"] = a
    args = as_states(model, **kw)
    nb, B = model.nbody, args.batch
    V_in = getattr(args, "v", None) if v is not None else None
    A_in = getattr(args, "a", None) if a is not None else None
    R, P = _out((nb, 3, 3), B), _out((nb, 3), B)
    VV = _out((nb, 6), B) if level >= VEL else np.zeros((1, 0, 6) if B else (0, 6))
    AA = _out((nb, 6), B) if level >= ACC else np.zeros((1, 0, 6) if B else (0, 6))
    empty = np.zeros((1, 0)) if B else _EMPTY
    vin = V_in if V_in is not None else empty
    ain = A_in if A_in is not None else empty
    if B is None:
        st = _forward_kinematics_kernel(model._mi, model._mf, model._ws, args.q, vin, ain, level, R, P, VV, AA)
    else:
        st = _status(B)
        _forward_kinematics_batch(model._mi, model._mf, batch_workspace(model), args.q, vin, ain, level,
                                 R, P, VV, AA, st)
    raise_for_status(model, st, **kw)
    return Kinematics(model, R, P, VV if level >= VEL else None, AA if level >= ACC else None)


@reduced(None)
def frame_pose(model: Model, q: ArrayLike, frame: str | int) -> NDArray[np.float64]:
    """4x4 homogeneous world pose of ``frame`` (a link, user frame or joint name); (N, 4, 4) for a stack."""
    b, fR, fp = _frame(model, frame)
    if vectors(q):
        T = np.empty((4, 4))
        if _frame_pose.fn(model._packed, q, b, fR, fp, T) == OK:
            return T
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return frame_pose.on_full_tree(model, q, frame)
    return run(model, (_frame_pose_kernel, _frame_pose_batch), (4, 4), as_states(model, q=q), ("q",), (b, fR, fp))


@reduced("columns")
def jacobian(model: Model, q: ArrayLike, frame: str | int, reference: str = "world") -> NDArray[np.float64]:
    """Frame Jacobian (6, nv), rows [linear; angular], in ``reference`` ("world", "local",
    "local_world_aligned"); (N, 6, nv) for a stack of configurations."""
    try:                                    # the fast path: one lookup, four arguments
        fa = model._frame_ref_args[frame, reference]
    except (KeyError, TypeError):           # TypeError: not hashable; _frame_ref says what is wrong
        fa = _frame_ref(model, frame, reference)
    if type(q) is _ND and q.dtype is _F64 and q.ndim == 1:
        J = _empty(model._shape_6v)
        if _frame_jacobian.fn(model._packed, q, fa, J) == OK:
            return J
    ref = _ref(reference)
    b, fR, fp = _frame(model, frame)
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return jacobian.on_full_tree(model, q, frame, reference)
    return run(model, (_frame_jacobian_kernel, _frame_jacobian_batch), (6, model.nv), as_states(model, q=q),
               ("q",), (b, fR, fp, ref))


def point_jacobian(model: Model, q: ArrayLike, frame: str | int, point: ArrayLike = (0.0, 0.0, 0.0)) -> NDArray[np.float64]:
    """(3, nv) Jacobian of the world velocity of a point fixed in ``frame`` (coordinates in that frame)."""
    point = np.asarray(point, dtype=float)
    if point.shape != (3,) or not np.isfinite(point).all():
        raise ValueError(f"point: expected a finite 3-vector, got {point!r}")
    J = jacobian(model, q, frame, "world")
    x = frame_pose(model, q, frame)
    xw = x[..., :3, :3] @ point + x[..., :3, 3]
    # v_point = v_o + w x x_w, column by column
    return J[..., :3, :] + np.cross(J[..., 3:, :], xw[..., :, None], axisa=-2, axisb=-2, axisc=-2)


@reduced("columns")
def joint_jacobians(model: Model, q: ArrayLike) -> NDArray[np.float64]:
    """(6, nv) motion of every dof in world coordinates at the world origin (Pinocchio's
    ``computeJointJacobians``); (N, 6, nv) for a stack."""
    if type(q) is _ND and q.dtype is _F64 and q.ndim == 1:
        J = _empty(model._shape_6v)
        if _joint_jacobians.fn(model._packed, q, J) == OK:
            return J
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return joint_jacobians.on_full_tree(model, q)
    return run(model, (_joint_jacobians_kernel, _joint_jacobians_batch), (6, model.nv), as_states(model, q=q), ("q",))


@reduced(None)
def _frame_motion(model, q, v, a, frame, reference, classical):
    """Velocity and acceleration of a frame; a = None means zero acceleration."""
    ref = _ref(reference)
    b, fR, fp = _frame(model, frame)
    if vectors(q, v, a):
        out = np.empty((2, 6))
        if _frame_motion_entry.fn(model._packed, q, v, model._zero_v if a is None else a, b, fR, fp, ref,
                                  classical, out) == OK:
            return out
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return _frame_motion.on_full_tree(model, q, v, a, frame, reference, classical)
    if a is None:
        args = as_states(model, q=q, v=v)
        args.a = np.zeros_like(args.v)
    else:
        args = as_states(model, q=q, v=v, a=a)
    return run(model, (_frame_motion_kernel, _frame_motion_batch), (2, 6), args, ("q", "v", "a"),
               (b, fR, fp, ref, classical))


def frame_velocity(model: Model, q: ArrayLike, v: ArrayLike, frame: str | int, reference: str = "local") -> NDArray[np.float64]:
    """Spatial velocity [v; w] (6,) of ``frame`` in ``reference``; (N, 6) for a stack."""
    return _frame_motion(model, q, v, None, frame, reference, False)[..., 0, :]


def frame_acceleration(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike, frame: str | int, reference: str = "local",
                       classical: bool = False) -> NDArray[np.float64]:
    """Spatial acceleration of ``frame``; with ``classical`` (and reference
    "local_world_aligned") the second derivative of the frame origin's position instead."""
    return _frame_motion(model, q, v, a, frame, reference, classical)[..., 1, :]


def jacobian_dot_times_v(model: Model, q: ArrayLike, v: ArrayLike, frame: str | int,
                         reference: str = "local_world_aligned") -> NDArray[np.float64]:
    """J'(q, v) v of ``jacobian(model, q, frame, reference)`` (6,): so that the frame's
    acceleration is J a + J' v (Spong, Hutchinson and Vidyasagar 2006: x'' = J q'' + J' q').  For
    "local_world_aligned" the linear rows are the origin's classical acceleration."""
    return _frame_motion(model, q, v, None, frame, reference, True)[..., 1, :]


def center_of_mass(model: Model, q: ArrayLike) -> NDArray[np.float64]:
    """World position (3,) of the centre of mass; (N, 3) for a stack."""
    return _com(model, q, False)[0]


def com_jacobian(model: Model, q: ArrayLike) -> NDArray[np.float64]:
    """(3, nv) Jacobian of the centre of mass, world coordinates; (N, 3, nv) for a stack."""
    return _com(model, q, True)[1]


@njit(cache=True)
def _com_packed(buf, q, c, Jc):
    mi, mf, ws = _unpack_packed(buf)
    return _com_kernel(mi, mf, ws, q, c, Jc)


_com_entry = Entry(_com_packed, PACKED, VEC, OUT1, OUT2)
_NO_JC = np.empty((3, 0))


@reduced((None, "columns"))
def _com(model, q, with_jacobian):
    if vectors(q):
        c, Jc = np.empty(3), (np.empty((3, model.nv)) if with_jacobian else _NO_JC)
        if _com_entry.fn(model._packed, q, c, Jc) == OK:
            return c, Jc
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return _com.on_full_tree(model, q, with_jacobian)
    args = as_states(model, q=q)
    nv = model.nv if with_jacobian else 0
    c, Jc = _out((3,), args.batch), _out((3, nv), args.batch)
    if args.batch is None:
        st = _com_kernel(model._mi, model._mf, model._ws, args.q, c, Jc)
    else:
        st = _status(args.batch)
        _com_batch(model._mi, model._mf, batch_workspace(model), args.q, c, Jc, st)
    raise_for_status(model, st, q=q)
    return c, Jc
