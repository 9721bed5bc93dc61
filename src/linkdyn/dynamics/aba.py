"""Articulated body algorithm: forward dynamics q'' = FD(q, v, tau, f_ext) in O(n).

Featherstone 2008 secs. 2.3-2.4 (eqs. 17-26) and spatial_v2's ``FDab.m``; joints of any number of
dofs through their motion subspace S_i (Baerlocher and Boulic 2001):

    pass 1 (out):  v_i = X_i v_p + vJ,  c_i = cJ + v_i x vJ,
                   I^A_i = I_i,  p^A_i = v_i x* I_i v_i - f_i^ext
    pass 2 (in):   U_i = I^A_i S_i,  D_i = S_i^T U_i (+ armature),  u_i = tau_i - S_i^T p^A_i
                   I^a = I^A_i - U_i D_i^-1 U_i^T,  p^a = p^A_i + I^a c_i + U_i D_i^-1 u_i
                   I^A_p += X_i^T I^a X_i,  p^A_p += X_i^* p^a                  (eqs. 21-24)
    pass 3 (out):  a'_i = X_i a_p + c_i,  q''_i = D_i^-1 (u_i - U_i^T a'_i),
                   a_i = a'_i + S_i q''_i                                        (eqs. 25-26)

with a_0 = -g; the joints' damping and friction torques are taken off tau (see rnea).
D_i is inverted in place (a 1x1 to 6x6 symmetric positive definite block).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._api import _F64, _ND, FEXT, MF, MI, OUT1, PACKED, VEC, WS, Entry, as_fext, as_states, run
from .._kernels.batch import chunk as _chunk, pick as _pick
from .._kernels.layout import (model_sizes as _model_sizes, no_forces as _no_forces, unpack_data as _unpack_data,
    unpack_joint_terms as _unpack_joint_terms, unpack_model as _unpack_model, unpack_packed as _unpack_packed)
from .._kernels.passes import (BAD_F, OK, OVERFLOW, SINGULAR, VEL, all_finite as _all_finite, check_inputs as _check_inputs,
    joint_torque as _joint_torque, kinematics_pass as _kinematics_pass)
from .._kernels.spatial_nb import (dot6 as _dot6, force_cross_add as _force_cross_add, mat6_vec as _mat6_vec,
    motion_inv_act as _motion_inv_act)
from ..model.gears import reduced
from .._kernels.springs import add_spring_torques as _add_spring_torques
from ._articulated import _articulate, _spd_inverse  # noqa: F401 (_spd_inverse: used by contact.inertia)
from .geared_aba import aba_geared

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model


@njit(cache=True)
def _aba_kernel(mi, mf, ws, q, v, tau, fext, qdd):
    st = _check_inputs(mi, q, v, tau, True)
    if st != OK:
        return st
    if not _all_finite(fext):
        return BAD_F
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, inertia, armature, g = _unpack_model(mi, mf)
    damping, friction = _unpack_joint_terms(mi, mf)
    nb, nq, nv = _model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, c, IA, pA, U, Dinv, u, tmp, W6, W3 = _unpack_data(ws, nb, nv)
    _kinematics_pass(mi, mf, ws, q, v, tau[:0], np.int64(VEL), np.bool_(False), np.bool_(False))
    # pass 1: I^A_i = I_i, p^A_i = v_i x* I_i v_i - f_ext
    for i in range(1, nb):
        IA[i, :, :] = inertia[i]
        _mat6_vec(inertia[i], vel[i], tmp[i])
        pA[i, :] = 0.0
        _force_cross_add(vel[i], tmp[i], pA[i])
        if fext.shape[0] > 0:
            for k in range(6):
                pA[i, k] -= fext[i, k]
    # pass 2 (u starts as -tau_s, the joints' springs)
    for d in range(nv):
        u[d] = 0.0
    _add_spring_torques(mi, mf, q, -1.0, W3[0], W3[1, 0], u)
    D = W6[0]
    for i in range(nb - 1, 0, -1):
        va, ni = vadr[i], jnv[i]
        for d in range(va, va + ni):
            _mat6_vec(IA[i], S[d], U[d])                         # U = I^A S
            # u = tau - tau_J(q, q', q''=0) - S^T p^A  (the armature is in D below)
            u[d] += tau[d] - _joint_torque(0.0, damping[d], friction[d], v[d], 0.0) - _dot6(S[d], pA[i])
        if not _articulate(i, va, ni, parent, IA, pA, S, U, Dinv, u, c, tmp, D, armature, liR, lip):
            return SINGULAR
    # pass 3: a_0 = -g
    acc[0, :] = 0.0
    acc[0, 0], acc[0, 1], acc[0, 2] = -g[0], -g[1], -g[2]
    for i in range(1, nb):
        va, ni = vadr[i], jnv[i]
        _motion_inv_act(liR[i], lip[i], acc[parent[i]], acc[i])   # a' = X a_p + c
        for k in range(6):
            acc[i, k] += c[i, k]
        for d in range(ni):
            tmp[0, d] = u[va + d] - _dot6(U[va + d], acc[i])      # u - U^T a'
        for d in range(ni):
            s = 0.0
            for e in range(ni):
                s += Dinv[va + d, e] * tmp[0, e]
            qdd[va + d] = s
        for d in range(va, va + ni):                              # a = a' + S q''
            for k in range(6):
                acc[i, k] += S[d, k] * qdd[d]
    return OK if _all_finite(qdd) else OVERFLOW          # finite input, too large for float64


@njit(cache=True)
def _aba_packed(buf, q, v, tau, qdd):
    """``_aba_kernel`` without external forces on a model packed in one buffer (Model._packed)."""
    mi, mf, ws = _unpack_packed(buf)
    return _aba_kernel(mi, mf, ws, q, v, tau, _no_forces(buf), qdd)


@njit(parallel=True, cache=True)
def _aba_batch(mi, mf, WS, Q, V, T, F, QDD, status):
    nt, n = WS.shape[0], QDD.shape[0]
    for t in prange(nt):
        lo, hi = _chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = _aba_kernel(mi, mf, _pick(WS, t), _pick(Q, k), _pick(V, k), _pick(T, k), _pick(F, k), _pick(QDD, k))


_aba = Entry(_aba_kernel, MI, MF, WS, VEC, VEC, VEC, FEXT, OUT1)
_aba_entry = Entry(_aba_packed, PACKED, VEC, VEC, VEC, OUT1)
_empty = np.empty


@reduced(via=aba_geared)
def aba(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike, fext: ArrayLike | None = None) -> NDArray[np.float64]:
    """Joint accelerations q'' = M^-1 (tau - b(q, v) + sum_i J_i^T f_i^ext) by the
    articulated body algorithm.  Shapes as in :func:`linkdyn.rnea`."""
    if (fext is None and type(q) is _ND and type(v) is _ND and type(tau) is _ND and q.dtype is _F64
            and v.dtype is _F64 and tau.dtype is _F64 and q.ndim == 1 and v.ndim == 1 and tau.ndim == 1):
        qdd = _empty(model.nv)
        if _aba_entry.fn(model._packed, q, v, tau, qdd) == OK:
            return qdd
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return aba.on_full_tree(model, q, v, tau, fext)
    args = as_states(model, q=q, v=v, tau=tau)
    F = as_fext(model, fext, args.batch)
    return run(model, (_aba, _aba_batch), (model.nv,), args, ("q", "v", "tau"), (F,), 1, fext=fext)
