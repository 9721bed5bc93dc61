"""The articulated-body step shared by :mod:`linkdyn.dynamics.aba` and the geared ABA of
:mod:`linkdyn.dynamics.geared_aba` (Featherstone 2008, eqs. 21-24): D = S^T U (+ armature), its
inverse, and I^a, p^a carried to the parent.  Both are inlined into their callers at Numba IR level
(as a called function the step cost ABA 15-30 % per call).
"""
from __future__ import annotations

from numba import njit

from .._kernels.spatial_nb import (dot6 as _dot6, force_act_add as _force_act_add,
                                   inertia_to_parent_add as _inertia_to_parent_add, mat6_vec as _mat6_vec)


@njit(inline="always", cache=True)
def _spd_inverse(D, n, out):
    """out[:n, :n] = D^-1 for a symmetric positive definite D (Gauss-Jordan without pivoting,
    which is stable for SPD); D is destroyed.  Returns False if D is not positive definite."""
    for r in range(n):
        for c in range(n):
            out[r, c] = 1.0 if r == c else 0.0
    scale = 0.0
    for r in range(n):
        scale = max(scale, abs(D[r, r]))
    for k in range(n):
        piv = D[k, k]
        if not piv > 1e-14 * max(scale, 1e-300):
            return False
        inv = 1.0 / piv
        for c in range(n):
            D[k, c] *= inv
            out[k, c] *= inv
        for r in range(n):
            if r != k:
                f = D[r, k]
                if f != 0.0:
                    for c in range(n):
                        D[r, c] -= f * D[k, c]
                        out[r, c] -= f * out[k, c]
    return True


@njit(inline="always", cache=True)
def _articulate(i, va, ni, parent, IA, pA, S, U, Dinv, u, c, tmp, D, armature, liR, lip):
    """The backward step of body i once U = I^A S and u = tau - S^T p^A are set (Featherstone
    2008 eqs. 21-24): D = S^T U (+ armature) and D^-1, then I^a = I^A - U D^-1 U^T and
    p^a = p^A + I^a c + U D^-1 u handed to the parent.  False if D is not positive definite.
    Shared by linkdyn.aba and the geared ABA (linkdyn.dynamics.geared_aba)."""
    if ni == 1:
        # one dof (most joints): D and D^-1 are scalars
        Dd = _dot6(S[va], U[va]) + armature[va]
        if not Dd > 0.0:
            return False
        w = 1.0 / Dd
        Dinv[va, 0] = w
        if parent[i] == 0:
            return True
        tmp[0, 0] = w * u[va]                               # D^-1 u
        for r in range(6):                                  # I^a = I^A - U U^T / D
            x = w * U[va, r]
            for k in range(6):
                IA[i, r, k] -= x * U[va, k]
    else:
        for d in range(ni):
            for e in range(ni):
                D[d, e] = _dot6(S[va + d], U[va + e])        # D = S^T U
            D[d, d] += armature[va + d]
        if not _spd_inverse(D, ni, Dinv[va:va + ni]):
            return False
        if parent[i] == 0:
            return True
        # I^a = I^A - U D^-1 U^T ;  p^a = p^A + I^a c + U D^-1 u   (in place in IA[i], pA[i])
        for d in range(ni):
            s = 0.0
            for e in range(ni):
                s += Dinv[va + d, e] * u[va + e]
            tmp[0, d] = s                                   # D^-1 u
        for d in range(ni):
            for e in range(ni):
                w = Dinv[va + d, e]
                for r in range(6):
                    for k in range(6):
                        IA[i, r, k] -= U[va + d, r] * w * U[va + e, k]
    _mat6_vec(IA[i], c[i], tmp[1])
    for k in range(6):
        pA[i, k] += tmp[1, k]
        for d in range(ni):
            pA[i, k] += U[va + d, k] * tmp[0, d]
    _inertia_to_parent_add(liR[i], lip[i], IA[i], IA[parent[i]])
    _force_act_add(liR[i], lip[i], pA[i], pA[parent[i]])
    return True
