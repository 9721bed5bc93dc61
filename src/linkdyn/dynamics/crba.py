"""The joint-space inertia matrix M(q), three ways (Walker and Orin 1982).

* ``crba``: the composite rigid body algorithm (Walker and Orin 1982; Featherstone's CRBA),
  in world coordinates: composite inertias I^c_i = oI_i + sum_children I^c_j (backward),
  then M_ed = J_e^T I^c_i J_d for the dofs e of the subtree of joint i.  About twice as
  fast as the other two, as Walker and Orin (1982) measure.
* ``unit_vector``: column j of M is the inverse dynamics of q'' = e_j with v = 0 and no
  gravity (Walker and Orin 1982).
* ``jacobian``: M = sum_i J_i^T I_i J_i over the bodies' Jacobians (Walker and Orin 1982,
  Spong, Hutchinson and Vidyasagar 2006, ch. 7, here with world-frame Jacobians and inertias.

All three include the armature on the diagonal and must agree to round-off.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange
from numba import types as nt

from .._api import _F64, _ND, MF, MI, OUT2, PACKED, VEC, WS, Entry, as_states, run
from ..model.gears import reduced
from .._kernels.batch import chunk as _chunk, pick as _pick
from .._kernels.layout import (model_sizes as _model_sizes, subtree_ends as _subtree_ends, unpack_data as _unpack_data,
    unpack_model as _unpack_model, unpack_packed as _unpack_packed)
from .._kernels.passes import OK, OVERFLOW, POS, all_finite as _all_finite, check_q as _check_q, kinematics_pass as _kinematics_pass
from .._kernels.spatial_nb import (dot6 as _dot6, force_act_add as _force_act_add, mat6_vec as _mat6_vec, motion_act as _motion_act,
    motion_inv_act as _motion_inv_act, rigid_inertia_to_parent_add as _rigid_inertia_to_parent_add,
    rigid_params_times_motion as _rigid_params_times_motion, rigid_params_to_world as _rigid_params_to_world)

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model

_EMPTY = np.zeros(0)
_empty = np.empty
CRBA, UNIT_VECTOR, JACOBIAN = 0, 1, 2
_METHODS = {"crba": CRBA, "unit_vector": UNIT_VECTOR, "jacobian": JACOBIAN}


@njit(cache=True)
def _crba_kernel(mi, mf, ws, q, M):
    """Composite rigid body algorithm in world coordinates (Walker and Orin 1982).

    Walker and Orin 1982 writes the composite body i (everything beyond joint i moving as one rigid
    body, its mass, centre of mass and inertia found recursively) in link i's frame; here
    every quantity is in world coordinates, which makes the recursion a plain sum and each
    entry of M one dot product (no force transform per ancestor):

        oI_i = X_i^-T I_i X_i^-1,  J_d = X_i S_d               (world inertia, dof motion)
        I^c_i = oI_i + sum_{children j} I^c_j                  (backward)
        F_d = I^c_i J_d,  M_ed = J_e^T F_d                     (e in the subtree of i)
    """
    st = _check_q(mi, q)
    if st != OK:
        return st
    _kinematics_pass(mi, mf, ws, q, q[:0], q[:0], np.int64(POS), np.bool_(True), np.bool_(False))
    _crba_from_kinematics(mi, mf, ws, M)
    return OK if _all_finite(M) else OVERFLOW            # finite input, too large for float64


@njit(cache=True)
def _crba_packed(buf, q, M):
    """``_crba_kernel`` on a model packed in one buffer (Model._packed)."""
    mi, mf, ws = _unpack_packed(buf)
    return _crba_kernel(mi, mf, ws, q, M)


@njit(cache=True)
def _crba_from_kinematics(mi, mf, ws, M):
    """CRBA on the world poses and motion subspaces a kinematics pass (``world``) left in ws."""
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, inertia, armature, _ = _unpack_model(mi, mf)
    nb, nq, nv = _model_sizes(mi)
    sub = _subtree_ends(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, F, Jw, u, tmp, W6, W3 = _unpack_data(ws, nb, nv)
    Ic = I6.reshape((nb, 36))      # composite inertias as 10 parameters (spatial_nb), world frame
    for i in range(1, nb):
        # oI_i, the body inertia about the world origin in world axes; J_d = X_i S_d
        _rigid_params_to_world(oR[i], op[i], inertia[i], Ic[i])
        for d in range(vadr[i], vadr[i] + jnv[i]):
            _motion_act(oR[i], op[i], S[d], Jw[d])
    for i in range(nb - 1, 0, -1):
        va, ni = vadr[i], jnv[i]
        end = vadr[sub[i]] if sub[i] < nb else nv
        # F_d = I^c_i J_d for the dofs of joint i (the subtree's F are already in place)
        for d in range(va, va + ni):
            _rigid_params_times_motion(Ic[i], Jw[d], F[d])
        # M_de = J_d^T F_e for the dofs e of the subtree of i
        for d in range(va, va + ni):
            # J_d in locals: M may alias the workspace as far as the compiler knows
            j0, j1, j2, j3, j4, j5 = Jw[d, 0], Jw[d, 1], Jw[d, 2], Jw[d, 3], Jw[d, 4], Jw[d, 5]
            for e in range(va, end):
                x = j0 * F[e, 0] + j1 * F[e, 1] + j2 * F[e, 2] + j3 * F[e, 3] + j4 * F[e, 4] + j5 * F[e, 5]
                M[d, e] = x
                M[e, d] = x
            M[d, d] += armature[d]
            # the dofs after the subtree (depth-first order) are on other branches: zero
            for e in range(end, nv):
                M[d, e] = 0.0
                M[e, d] = 0.0
        # I^c_parent += I^c_i
        pi = parent[i]
        if pi > 0:
            for k in range(10):
                Ic[pi, k] += Ic[i, k]
    return OK


@njit(cache=True)
def _unit_vector_kernel(mi, mf, ws, q, M):
    st = _check_q(mi, q)
    if st != OK:
        return st
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, inertia, armature, _ = _unpack_model(mi, mf)
    nb, nq, nv = _model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, U, Dinv, u, tmp, W6, W3 = _unpack_data(ws, nb, nv)
    _kinematics_pass(mi, mf, ws, q, q[:0], q[:0], np.int64(POS), np.bool_(False), np.bool_(False))
    for j in range(nv):
        # RNEA with v = 0, q'' = e_j, no gravity: a_i = X_i a_p + S_i e_j, f_i = I_i a_i
        acc[0, :] = 0.0
        for i in range(1, nb):
            _motion_inv_act(liR[i], lip[i], acc[parent[i]], acc[i])
            if vadr[i] <= j < vadr[i] + jnv[i]:
                for k in range(6):
                    acc[i, k] += S[j, k]
            _mat6_vec(inertia[i], acc[i], frc[i])
        for i in range(nb - 1, 0, -1):
            for d in range(vadr[i], vadr[i] + jnv[i]):
                M[d, j] = _dot6(S[d], frc[i])
            if parent[i] > 0:
                _force_act_add(liR[i], lip[i], frc[i], frc[parent[i]])
        M[j, j] += armature[j]
    return OK


@njit(cache=True)
def _jacobian_sum_kernel(mi, mf, ws, q, M):
    st = _check_q(mi, q)
    if st != OK:
        return st
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, inertia, armature, _ = _unpack_model(mi, mf)
    nb, nq, nv = _model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, oI, pA, Jw, Dinv, u, tmp, W6, W3 = _unpack_data(ws, nb, nv)
    _kinematics_pass(mi, mf, ws, q, q[:0], q[:0], np.int64(POS), np.bool_(True), np.bool_(False))
    # world-frame dof motions (rows of Jw) and world-frame body inertias oI_i
    for j in range(1, nb):
        for d in range(vadr[j], vadr[j] + jnv[j]):
            _motion_act(oR[j], op[j], S[d], Jw[d])
        oI[j, :, :] = 0.0
        _rigid_inertia_to_parent_add(oR[j], op[j], inertia[j], oI[j])
    M[:, :] = 0.0
    for i in range(1, nb):
        # M += J_i^T oI_i J_i over the dofs d, e that support body i
        d_body = i
        while d_body > 0:
            for d in range(vadr[d_body], vadr[d_body] + jnv[d_body]):
                _mat6_vec(oI[i], Jw[d], tmp[0])
                e_body = i
                while e_body > 0:
                    for e in range(vadr[e_body], vadr[e_body] + jnv[e_body]):
                        M[e, d] += _dot6(Jw[e], tmp[0])
                    e_body = parent[e_body]
            d_body = parent[d_body]
    for d in range(nv):
        M[d, d] += armature[d]
    return OK


@njit(cache=True)
def _mass_matrix_kernel(mi, mf, ws, q, method, M):
    if method == UNIT_VECTOR:
        return _unit_vector_kernel(mi, mf, ws, q, M)
    if method == JACOBIAN:
        return _jacobian_sum_kernel(mi, mf, ws, q, M)
    return _crba_kernel(mi, mf, ws, q, M)


@njit(parallel=True, cache=True)
def _mass_matrix_batch(mi, mf, WS, Q, method, OUT, status):
    nt, n = WS.shape[0], OUT.shape[0]
    for t in prange(nt):
        lo, hi = _chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = _mass_matrix_kernel(mi, mf, _pick(WS, t), _pick(Q, k), method, _pick(OUT, k))


_mass_matrix = Entry(_mass_matrix_kernel, MI, MF, WS, VEC, nt.int64, OUT2)
_crba = Entry(_crba_packed, PACKED, VEC, OUT2)


@reduced("matrix")
def mass_matrix(model: Model, q: ArrayLike, method: str = "crba") -> NDArray[np.float64]:
    """Joint-space inertia matrix M(q) (nv, nv), full and symmetric; (N, nv, nv) for a stack.

    ``method``: "crba" (default, fastest), "unit_vector" or "jacobian" (Walker and Orin 1982).
    """
    try:
        code = _METHODS[method]
    except (KeyError, TypeError):
        raise ValueError(f"method: expected one of {list(_METHODS)}, got {method!r}") from None
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return mass_matrix.on_full_tree(model, q, method)
    args = as_states(model, q=q)
    return run(model, (_mass_matrix, _mass_matrix_batch), (model.nv, model.nv), args, ("q",), (code,))


def crba(model: Model, q: ArrayLike) -> NDArray[np.float64]:
    """M(q) by the composite rigid body algorithm (full symmetric matrix)."""
    if type(q) is _ND and q.dtype is _F64 and q.ndim == 1:
        M = _empty(model._shape_vv)
        if _crba.fn(model._packed, q, M) == OK:
            return M
    return mass_matrix(model, q, "crba")
