"""Passive joint forces: the generalized forces the joints' springs and viscous damping apply,
MuJoCo's ``qfrc_passive`` (``mj_passive``: ``qfrc_spring + qfrc_damper``):

    tau_passive = -tau_s(q) - damping v

with tau_s the springs' torque (:mod:`linkdyn._kernels.springs`: -k (q - q_ref) for a one-dof
joint; the rotation vector of q_ref^-1 q for a ball).  These are the very terms RNEA adds to the
joint torque (``rnea = M a + C v + g - tau_passive + friction sign(v)``).  Coulomb friction
(``model.friction``) is not in it: MuJoCo's ``frictionloss`` is a constraint, not a passive force,
and linkdyn's is a torque taken off tau by RNEA and ABA alike (see :func:`linkdyn.rnea`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import math

import numpy as np
from numba import njit, prange

from .._api import as_states, run
from .._kernels.batch import chunk as _chunk, pick as _pick
from .._kernels.layout import model_sizes as _model_sizes, unpack_data as _unpack_data, unpack_joint_terms as _unpack_joint_terms
from .._kernels.passes import OK, OVERFLOW, check_inputs as _check_inputs
from .._kernels.springs import add_spring_torques as _add_spring_torques
from ..model.gears import reduced

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model


@njit(cache=True)
def _passive_kernel(mi, mf, ws, q, v, out):
    st = _check_inputs(mi, q, v, v, False)
    if st != OK:
        return st
    nb, nq, nv = _model_sizes(mi)
    damping, _ = _unpack_joint_terms(mi, mf)
    W3 = _unpack_data(ws, nb, nv)[17]
    for d in range(nv):
        out[d] = -damping[d] * v[d]
    _add_spring_torques(mi, mf, q, -1.0, W3[0], W3[1, 0], out)
    for d in range(nv):
        if not math.isfinite(out[d]):
            return OVERFLOW
    return OK


@njit(parallel=True, cache=True)
def _passive_batch(mi, mf, WS, Q, V, OUT, status):
    nt, n = WS.shape[0], OUT.shape[0]
    for t in prange(nt):
        lo, hi = _chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = _passive_kernel(mi, mf, _pick(WS, t), _pick(Q, k), _pick(V, k), _pick(OUT, k))


@reduced("force")
def passive_forces(model: Model, q: ArrayLike, v: ArrayLike) -> NDArray[np.float64]:
    """The joints' passive forces ``-tau_s(q) - damping v`` (springs and viscous damping; the
    sign of a force on the joints, as MuJoCo's ``qfrc_passive``; Coulomb friction is not in it).

    q (nq,) or (N, nq); v (nv,) or (N, nv).  Returns (nv,) or (N, nv).  On a geared model, the
    reduced forces G^T tau of the uncoupled tree's."""
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return passive_forces.on_full_tree(model, q, v)
    args = as_states(model, q=q, v=v)
    return run(model, (_passive_kernel, _passive_batch), (model.nv,), args, ("q", "v"))
