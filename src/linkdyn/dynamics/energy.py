"""Kinetic and potential energy (Spong, Hutchinson and Vidyasagar 2006, ch. 7, the Lagrangian L = T - U).

    T = 1/2 sum_i v_i^T I_i v_i  (= 1/2 v^T M(q) v)        U = -sum_i m_i g . c_i + U_s(q)

with U_s the joint springs' energy, 1/2 k (q - q_ref)^2 for a one-dof joint
(:mod:`linkdyn._kernels.springs`).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .._api import OUT1, PACKED, VEC, Entry, as_states, run, vectors
from ..model.gears import reduced
from .._kernels.batch import chunk as _chunk, pick as _pick
from .._kernels.layout import (model_sizes as _model_sizes, unpack_data as _unpack_data, unpack_model as _unpack_model,
    unpack_packed as _unpack_packed)
from .._kernels.passes import OK, OVERFLOW, VEL, check_inputs as _check_inputs, kinematics_pass as _kinematics_pass
from .._kernels.springs import spring_energy as _spring_energy
from .._kernels.spatial_nb import dot6 as _dot6, mat6_vec as _mat6_vec

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model


@njit(cache=True)
def _energy_kernel(mi, mf, ws, q, v, out):
    """out[0] = kinetic, out[1] = potential energy."""
    st = _check_inputs(mi, q, v, v, False)
    if st != OK:
        return st
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, inertia, armature, g = _unpack_model(mi, mf)
    nb, nq, nv = _model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, U, Dinv, u, tmp, W6, W3 = _unpack_data(ws, nb, nv)
    _kinematics_pass(mi, mf, ws, q, v, v[:0], np.int64(VEL), np.bool_(True), np.bool_(False))
    T = 0.0
    Ug = 0.0
    for i in range(1, nb):
        _mat6_vec(inertia[i], vel[i], tmp[i])
        T += 0.5 * _dot6(vel[i], tmp[i])
        # m c in the world: m p_i + R_i (m c_i), with m c_i from the block m [c]x
        h0, h1, h2 = inertia[i, 5, 1], inertia[i, 3, 2], inertia[i, 4, 0]
        m = inertia[i, 0, 0]
        for r in range(3):
            mc = m * op[i, r] + oR[i, r, 0] * h0 + oR[i, r, 1] * h1 + oR[i, r, 2] * h2
            Ug -= g[r] * mc
    for d in range(nv):
        T += 0.5 * armature[d] * v[d] * v[d]
    Ug += _spring_energy(mi, mf, q, W3[1, 0])
    out[0] = T
    out[1] = Ug
    return OK if math.isfinite(T) and math.isfinite(Ug) else OVERFLOW


@njit(parallel=True, cache=True)
def _energy_batch(mi, mf, WS, Q, V, OUT, status):
    nt, n = WS.shape[0], OUT.shape[0]
    for t in prange(nt):
        lo, hi = _chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = _energy_kernel(mi, mf, _pick(WS, t), _pick(Q, k), _pick(V, k), _pick(OUT, k))


@njit(cache=True)
def _energy_packed(buf, q, v, out):
    mi, mf, ws = _unpack_packed(buf)
    return _energy_kernel(mi, mf, ws, q, v, out)


_energy = Entry(_energy_packed, PACKED, VEC, VEC, OUT1)


def _energies(model, q, v):
    """[T, U] (2,), or (N, 2) for a stack."""
    if vectors(q, v):
        out = np.empty(2)
        if _energy.fn(model._packed, q, v, out) == OK:
            return out
    args = as_states(model, q=q, v=v)
    return run(model, (_energy_kernel, _energy_batch), (2,), args, ("q", "v"))


@reduced(None)
def kinetic_energy(model: Model, q: ArrayLike, v: ArrayLike) -> float | NDArray[np.float64]:
    """T = 1/2 v^T M(q) v (float, or (N,) for a stack)."""
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return kinetic_energy.on_full_tree(model, q, v)
    e = _energies(model, q, v)
    return e[0] if e.ndim == 1 else e[:, 0]


@reduced(None)
def potential_energy(model: Model, q: ArrayLike) -> float | NDArray[np.float64]:
    """U = -sum_i m_i g . c_i (zero at the world origin) plus the joint springs' energy
    1/2 k (q - q_ref)^2 (float, or (N,) for a stack)."""
    if vectors(q):
        out = np.empty(2)
        if _energy.fn(model._packed, q, model._zero_v, out) == OK:
            return out[1]
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return potential_energy.on_full_tree(model, q)
    args = as_states(model, q=q)
    zeros = np.zeros(model.nv if args.batch is None else (args.batch, model.nv))
    return _energies(model, args.q if args.batch is None else args.q.reshape(args.batch, -1), zeros)[..., 1]


@reduced(None)
def mechanical_energy(model: Model, q: ArrayLike, v: ArrayLike) -> float | NDArray[np.float64]:
    """T + U."""
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return mechanical_energy.on_full_tree(model, q, v)
    e = _energies(model, q, v)
    return e[0] + e[1] if e.ndim == 1 else e[:, 0] + e[:, 1]
