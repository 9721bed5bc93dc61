"""The joint-space inertia matrix M(q), three ways (seed 003).

* ``crba``: the composite rigid body algorithm (seed 003 sec. 2; Featherstone's CRBA):
  composite inertias I^c_i = I_i + sum_children X^T I^c_j X (backward), then
  M_ij = S_i^T (X_{i<-j}^* I^c_j S_j) walking from j to the root.  About twice as fast as
  the other two, as the seed measures.
* ``unit_vector``: column j of M is the inverse dynamics of q'' = e_j with v = 0 and no
  gravity (seed 003 sec. 3, seed 002 "inertia matrix by unit vectors").
* ``jacobian``: M = sum_i J_i^T I_i J_i over the bodies' Jacobians (seed 003 sec. 4,
  seed 002 eq. 5.50), here with world-frame Jacobians and inertias.

All three include the armature on the diagonal and must agree to round-off.
"""
import numpy as np
from numba import njit, prange

from .._api import as_states, run, vectors
from .._kernels.batch import chunk, pick
from .._kernels.layout import model_sizes, unpack_data, unpack_model
from .._kernels.passes import OK, POS, check_q, kinematics_pass
from .._kernels.spatial_nb import (dot6, force_act_add, force_act_inplace,
                                   rigid_inertia_to_parent_add, mat6_vec, motion_act,
                                   motion_inv_act)

_EMPTY = np.zeros(0)
CRBA, UNIT_VECTOR, JACOBIAN = 0, 1, 2
_METHODS = {"crba": CRBA, "unit_vector": UNIT_VECTOR, "jacobian": JACOBIAN}


@njit(cache=True)
def crba_kernel(mi, mf, ws, q, M):
    st = check_q(mi, q)
    if st != OK:
        return st
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, inertia, armature, _ = unpack_model(mi, mf)
    nb, nq, nv = model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, Ic, pA, F, Dinv, u, tmp, W6, W3 = unpack_data(ws, nb, nv)
    kinematics_pass(mi, mf, ws, q, _EMPTY, _EMPTY, POS, False, False)
    Ic[:] = inertia
    M[:, :] = 0.0
    # I^c_parent += X^T I^c_i X
    for i in range(nb - 1, 0, -1):
        if parent[i] > 0:
            rigid_inertia_to_parent_add(liR[i], lip[i], Ic[i], Ic[parent[i]])
    for i in range(1, nb):
        va, ni = vadr[i], jnv[i]
        # F = I^c_i S_i ; M_ii = S_i^T F
        for d in range(va, va + ni):
            mat6_vec(Ic[i], S[d], F[d])
            for e in range(va, va + ni):
                M[e, d] = dot6(S[e], F[d])
            M[d, d] += armature[d]
        j = i
        while parent[j] > 0:
            # F <- X_j^* F, then M_ji = S_j^T F
            for d in range(va, va + ni):
                force_act_inplace(liR[j], lip[j], F[d])
            j = parent[j]
            for d in range(va, va + ni):
                for e in range(vadr[j], vadr[j] + jnv[j]):
                    M[e, d] = dot6(S[e], F[d])
                    M[d, e] = M[e, d]
    return OK


@njit(cache=True)
def unit_vector_kernel(mi, mf, ws, q, M):
    st = check_q(mi, q)
    if st != OK:
        return st
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, inertia, armature, _ = unpack_model(mi, mf)
    nb, nq, nv = model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, U, Dinv, u, tmp, W6, W3 = unpack_data(ws, nb, nv)
    kinematics_pass(mi, mf, ws, q, _EMPTY, _EMPTY, POS, False, False)
    for j in range(nv):
        # RNEA with v = 0, q'' = e_j, no gravity: a_i = X_i a_p + S_i e_j, f_i = I_i a_i
        acc[0, :] = 0.0
        for i in range(1, nb):
            motion_inv_act(liR[i], lip[i], acc[parent[i]], acc[i])
            if vadr[i] <= j < vadr[i] + jnv[i]:
                for k in range(6):
                    acc[i, k] += S[j, k]
            mat6_vec(inertia[i], acc[i], frc[i])
        for i in range(nb - 1, 0, -1):
            for d in range(vadr[i], vadr[i] + jnv[i]):
                M[d, j] = dot6(S[d], frc[i])
            if parent[i] > 0:
                force_act_add(liR[i], lip[i], frc[i], frc[parent[i]])
        M[j, j] += armature[j]
    return OK


@njit(cache=True)
def jacobian_sum_kernel(mi, mf, ws, q, M):
    st = check_q(mi, q)
    if st != OK:
        return st
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, inertia, armature, _ = unpack_model(mi, mf)
    nb, nq, nv = model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, oI, pA, Jw, Dinv, u, tmp, W6, W3 = unpack_data(ws, nb, nv)
    kinematics_pass(mi, mf, ws, q, _EMPTY, _EMPTY, POS, True, False)
    # world-frame dof motions (rows of Jw) and world-frame body inertias oI_i
    for j in range(1, nb):
        for d in range(vadr[j], vadr[j] + jnv[j]):
            motion_act(oR[j], op[j], S[d], Jw[d])
        oI[j, :, :] = 0.0
        rigid_inertia_to_parent_add(oR[j], op[j], inertia[j], oI[j])
    M[:, :] = 0.0
    for i in range(1, nb):
        # M += J_i^T oI_i J_i over the dofs d, e that support body i
        d_body = i
        while d_body > 0:
            for d in range(vadr[d_body], vadr[d_body] + jnv[d_body]):
                mat6_vec(oI[i], Jw[d], tmp[0])
                e_body = i
                while e_body > 0:
                    for e in range(vadr[e_body], vadr[e_body] + jnv[e_body]):
                        M[e, d] += dot6(Jw[e], tmp[0])
                    e_body = parent[e_body]
            d_body = parent[d_body]
    for d in range(nv):
        M[d, d] += armature[d]
    return OK


@njit(cache=True)
def mass_matrix_kernel(mi, mf, ws, q, method, M):
    if method == UNIT_VECTOR:
        return unit_vector_kernel(mi, mf, ws, q, M)
    if method == JACOBIAN:
        return jacobian_sum_kernel(mi, mf, ws, q, M)
    return crba_kernel(mi, mf, ws, q, M)


@njit(parallel=True, cache=True)
def mass_matrix_batch(mi, mf, WS, Q, method, OUT, status):
    nt, n = WS.shape[0], OUT.shape[0]
    for t in prange(nt):
        lo, hi = chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = mass_matrix_kernel(mi, mf, pick(WS, t), pick(Q, k), method, pick(OUT, k))


def mass_matrix(model, q, method: str = "crba") -> np.ndarray:
    """Joint-space inertia matrix M(q) (nv, nv), full and symmetric; (N, nv, nv) for a stack.

    ``method``: "crba" (default, fastest), "unit_vector" or "jacobian" (seed 003).
    """
    try:
        code = _METHODS[method]
    except (KeyError, TypeError):
        raise ValueError(f"method: expected one of {list(_METHODS)}, got {method!r}") from None
    args = as_states(model, q=q)
    return run(model, (mass_matrix_kernel, mass_matrix_batch), (model.nv, model.nv), args, ("q",), (code,))


def crba(model, q) -> np.ndarray:
    """M(q) by the composite rigid body algorithm (full symmetric matrix)."""
    if vectors(q):
        M = np.empty((model.nv, model.nv))
        if crba_kernel(model._mi, model._mf, model._ws, q, M) == OK:
            return M
    return mass_matrix(model, q, "crba")
