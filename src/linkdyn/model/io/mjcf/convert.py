"""q / v in MuJoCo's layout: ``qpos_to_q``, ``q_to_qpos``, ``qvel_to_v``, ``v_to_qvel`` (the
module docstring of :mod:`linkdyn.model.io.mjcf` says how the layouts differ)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import joints as J

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ...model import Model


# --------------------------------------------------------------------------------------------
# q / v in MuJoCo's layout
def _layout(model):
    """(src_q, fill_q, src_v, free) for qpos_to_q and friends: q[k] = qpos[src_q[k]] where
    src_q[k] >= 0, else fill_q[k] (cut joints of loop closures); the same for v; ``free``:
    (q address, v address) of the free joints."""
    src_q = np.full(model.nq, -1, dtype=np.int64)
    fill = np.zeros(model.nq)
    src_v = np.full(model.nv, -1, dtype=np.int64)
    free = []
    k = kv = 0
    for i in range(1, model.nbody):
        kind, qa, va = int(model.jnt_type[i]), int(model.jnt_qadr[i]), int(model.jnt_vadr[i])
        nq, nv = int(model.jnt_nq[i]), int(model.jnt_nv[i])
        if model.is_virtual[i]:
            if kind in J.QUAT_OFFSET:
                fill[qa + J.QUAT_OFFSET[kind] + 3] = 1.0
            continue
        if kind == J.FREE:
            src_q[qa:qa + 7] = k + np.array([0, 1, 2, 4, 5, 6, 3])
            free.append((qa, va))
        elif kind == J.SPHERICAL:
            src_q[qa:qa + 4] = k + np.array([1, 2, 3, 0])
        else:
            src_q[qa:qa + nq] = k + np.arange(nq)
        src_v[va:va + nv] = kv + np.arange(nv)
        k += nq
        kv += nv
    return src_q, fill, src_v, free, k, kv


def qpos_to_q(model: Model, qpos: ArrayLike) -> np.ndarray:
    """MuJoCo's ``qpos`` (shape (nq_mj,) or (N, nq_mj)) -> linkdyn's q: quaternions reordered
    from [w, x, y, z] to [x, y, z, w]; the cut joints of loop closures (not in qpos) at zero /
    the identity.  A geared model's q is reduced (MuJoCo's qpos holds every joint, followers too)."""
    if model._full is not None:
        return model.reduce(qpos_to_q(model._full, qpos))
    src, fill, _, _, nq_mj, _ = _layout(model)
    qpos = np.asarray(qpos, dtype=float)
    if qpos.shape[-1:] != (nq_mj,) or qpos.ndim > 2:
        raise ValueError(f"qpos_to_q: expected shape ({nq_mj},) or (N, {nq_mj}), got {qpos.shape}")
    q = np.broadcast_to(fill, qpos.shape[:-1] + (model.nq,)).copy()
    have = src >= 0
    q[..., have] = qpos[..., src[have]]
    return q


def q_to_qpos(model: Model, q: ArrayLike) -> np.ndarray:
    """linkdyn's q -> MuJoCo's ``qpos`` (the inverse of :func:`qpos_to_q`; cut joints dropped)."""
    if model._full is not None:
        return q_to_qpos(model._full, model.expand(q))
    src, _, _, _, nq_mj, _ = _layout(model)
    q = np.asarray(q, dtype=float)
    if q.shape[-1:] != (model.nq,) or q.ndim > 2:
        raise ValueError(f"q_to_qpos: expected shape ({model.nq},) or (N, {model.nq}), got {q.shape}")
    qpos = np.zeros(q.shape[:-1] + (nq_mj,))
    have = src >= 0
    qpos[..., src[have]] = q[..., have]
    return qpos


def _quat_xyzw_matrix(qv):
    x, y, z, w = np.moveaxis(qv / np.linalg.norm(qv, axis=-1, keepdims=True), -1, 0)
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
                     np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
                     np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], -2)


def qvel_to_v(model: Model, q: ArrayLike, qvel: ArrayLike) -> np.ndarray:
    """MuJoCo's ``qvel`` at linkdyn configuration q -> linkdyn's v: a free joint's linear
    velocity is turned from the world frame into the body frame (v = R^T v_world); cut joints
    of loop closures get zero (project with ``linkdyn.loops.project_velocity``)."""
    if model._full is not None:
        qf = model.expand(q)
        return model.reduce(qf, qvel_to_v(model._full, qf, qvel))[1]
    _, _, src, free, _, nv_mj = _layout(model)
    q, qvel = np.asarray(q, dtype=float), np.asarray(qvel, dtype=float)
    if qvel.shape[-1:] != (nv_mj,) or qvel.ndim > 2:
        raise ValueError(f"qvel_to_v: expected shape ({nv_mj},) or (N, {nv_mj}), got {qvel.shape}")
    v = np.zeros(qvel.shape[:-1] + (model.nv,))
    have = src >= 0
    v[..., have] = qvel[..., src[have]]
    for qa, va in free:
        R = _quat_xyzw_matrix(q[..., qa + 3:qa + 7])
        v[..., va:va + 3] = np.einsum("...ji,...j->...i", R, v[..., va:va + 3])
    return v


def v_to_qvel(model: Model, q: ArrayLike, v: ArrayLike) -> np.ndarray:
    """linkdyn's v at q -> MuJoCo's ``qvel`` (the inverse of :func:`qvel_to_v`)."""
    if model._full is not None:
        return v_to_qvel(model._full, *model.expand(q, v))
    _, _, src, free, _, nv_mj = _layout(model)
    q, v = np.asarray(q, dtype=float), np.array(v, dtype=float)
    if v.shape[-1:] != (model.nv,) or v.ndim > 2:
        raise ValueError(f"v_to_qvel: expected shape ({model.nv},) or (N, {model.nv}), got {v.shape}")
    for qa, va in free:
        R = _quat_xyzw_matrix(q[..., qa + 3:qa + 7])
        v[..., va:va + 3] = np.einsum("...ij,...j->...i", R, v[..., va:va + 3])
    qvel = np.zeros(v.shape[:-1] + (nv_mj,))
    have = src >= 0
    qvel[..., src[have]] = v[..., have]
    return qvel

