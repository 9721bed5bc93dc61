"""Analytical derivatives of inverse and forward dynamics (Carpentier and Mansard 2018).

``rnea_derivatives`` gives the partial derivatives of tau = RNEA(q, v, a) with respect to q
and v, and M = dtau/da; ``aba_derivatives`` those of q'' = ABA(q, v, tau), by differentiating
M(q) q'' + b(q, v) = tau at q'' = ABA(q, v, tau), as Carpentier and Mansard 2018 do:

    dq''/dq = -M^-1 dtau/dq,  dq''/dv = -M^-1 dtau/dv   (dtau/d. taken at a = q'')

with M^-1 from the sparse LTDL factorization of M (Featherstone 2008, sec. 6.5;
:mod:`linkdyn.dynamics.cholesky`).

**The tangent space.**  Derivatives with respect to q are taken along ``integrate``: column k of
dtau/dq is d/de tau(integrate(q, e e_k), v, a) at e = 0, so they have nv columns for every joint
kind, as Pinocchio's.  The motion subspace S of every joint is the body-frame derivative of its
transform along the tangent coordinates, so moving dof k moves the whole subtree of its joint by
the world twist J_k = oX_i S_k: d(oM_j)/dq_k = J_k^ oM_j for every body j of that subtree.

**The recursion** is Algorithm 1 of Carpentier and Mansard 2018, with every quantity in the
world frame (prefix o, as they do: the derivative of a quantity carried by a moving body is then a
cross product with J_k).  Steps, as labelled in the code:

  (D1) forward, for each body i of parent p:
       oI_i = oX_i^-T I_i oX_i^-1,  h_i = oI_i ov_i                   world inertia, momentum
       of_i = oI_i oa_i + ov_i x* h_i - oX_i^* f_i^ext                 body force (oa_0 = [-g; 0])
  (D2) for each dof k of joint i:
       J_k = oX_i S_k                                                  joint column, world
       dV_k = ov_p x J_k                                               d ov_j/dq_k - J_k x ov_j
       dA_k = oa_p x J_k + ov_p x dV_k                                 d oa_j/dq_k - J_k x oa_j - dV_k x ov_j
       dAv_k = (ov_p + ov_i) x J_k                                     d oa_j/dv_k - J_k x ov_j
       for every body j in the subtree of i: what moving dof k changes, apart from the rigid
       motion J_k of the whole subtree (which leaves the torques of the subtree's joints alone);
  (D3) B_i = (ov_i x*) oI_i - oI_i (ov_i x) + (. x* h_i): a change x of ov_i, with the change
       y + x x ov_i of oa_i, changes of_i by oI_i y + B_i x (Pinocchio's "doYcrb");
  (D4) backward, children first: composites of the subtree of i,
       Yc_i = sum oI_j,  Bc_i = sum B_j,  F_i = sum of_j;
  (D5) row k of joint i, column m of joint i or of an ancestor (k in the subtree of m):
       dtau_k/dq_m = J_k^T (Yc_i dA_m + Bc_i dV_m),  dtau_k/dv_m = J_k^T (Yc_i dAv_m + Bc_i J_m),
       M_km = J_k^T Yc_i J_m;
  (D6) row m of a strict ancestor, column k of joint i:
       dtau_m/dq_k = J_m^T (J_k x* F_i + Yc_i dA_k + Bc_i dV_k),  dtau_m/dv_k = J_m^T (Yc_i dAv_k + Bc_i J_k)
       (J_m stays, but the subtree's force turns with it: J_k x* F_i; within the subtree that
       term cancels against the turn of J itself).
  Everything else is zero (dofs on different branches).  O(n d) for a tree of depth d.

  (D7) Joints whose S depends on their own coordinates (universal, ZYX angles; Baerlocher and
       Boulic 2001) add the derivatives of S and of their bias S' q', which Carpentier and
       Mansard 2018 do not need (their joints have constant S): with sv_k = sum_l dS_l/dq_k v_l,
       dV_k += oX_i sv_k,  dA_k += oX_i (sum_l dS_l/dq_k a_l + d(S'q')/dq_k) + ov_i x oX_i sv_k,
       dAv_k += oX_i d(S'q')/dv_k,  dtau_l/dq_k += (oX_i dS_l/dq_k)^T F_i  (l, k of one joint).

The joints' own torques tau_J = armature a + damping v + friction sign(v) add the armature to the
diagonal of M and the damping to that of dtau/dv, and a joint's spring tau_s(q) its block
d tau_s/dq to dtau/dq (k for a one-dof joint; k J_r^-1(r) for a ball, Barfoot
2017, sec. 7.1.5; see linkdyn._kernels.springs); Coulomb friction friction * sign(v) is constant
away from v = 0, so it adds nothing to either derivative (at v = 0 it is not differentiable; the
derivative given there is that of the smooth part).
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange
from numba import types as nt

from .._api import _F64, _ND, FEXT, MF, MI, PACKED, VEC, WS, Entry, as_fext, as_states, run
from ..model.gears import reduced
from .geared_aba import aba_geared
from .._kernels.batch import chunk as _chunk, pick as _pick
from .._kernels.layout import (_view, model_sizes as _model_sizes, no_forces as _no_forces, unpack_data as _unpack_data,
    unpack_joint_terms as _unpack_joint_terms, unpack_model as _unpack_model, unpack_packed as _unpack_packed)
from .._kernels.passes import (ACC, BAD_F, OK, OVERFLOW, _compose_pose, all_finite as _all_finite,
    check_inputs as _check_inputs, kinematics_pass as _kinematics_pass)
from .._kernels.spatial_nb import (dot6 as _dot, force_act_add as _force_act_add, force_cross_add as _force_cross_add,
    mat6_vec as _mat6_vec,
    motion_act as _motion_act, rigid_inertia_to_parent_add as _rigid_inertia_to_parent_add)
from .._kernels.springs import spring_stiffness_add as _spring_stiffness_add
from .._kernels.joint_derivatives import _joint_S_partials, joint_columns as _joint_columns
from .._kernels.kinds import SPHERICAL_ZYX, UNIVERSAL
from .aba import _aba_kernel
from .cholesky import LAM, _ltdl_factor, _lit_rows, _dinv_li_rows

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model

OUT3 = nt.Array(nt.float64, 3, "C")
DWS = nt.Array(nt.float64, 2, "C")


# --- the derivative workspace -----------------------------------------------------------
def _dws_size(nb: int, nv: int) -> int:
    """ov, oa, F (nb, 6); Yc, Bc (nb, 6, 6); J, dV, dA, dAv (nv, 6); u, w (6, 6) each; dS (3, 3, 3);
    d2S (3, 3, 3, 3); t (4, 6); qdd (nv,); LD (nv, nv); X (nv, 3 nv)."""
    return nb * (18 + 72) + nv * 24 + 72 + 27 + 81 + 24 + nv + 4 * nv * nv


@njit(inline="always", cache=True)
def _unpack_dws(dws, nb, nv):
    o = 0
    ov = _view(dws, o, (nb, 6)); o += 6 * nb
    oa = _view(dws, o, (nb, 6)); o += 6 * nb
    F = _view(dws, o, (nb, 6)); o += 6 * nb
    Yc = _view(dws, o, (nb, 6, 6)); o += 36 * nb
    Bc = _view(dws, o, (nb, 6, 6)); o += 36 * nb
    J = _view(dws, o, (nv, 6)); o += 6 * nv
    dV = _view(dws, o, (nv, 6)); o += 6 * nv
    dA = _view(dws, o, (nv, 6)); o += 6 * nv
    dAv = _view(dws, o, (nv, 6)); o += 6 * nv
    uw = _view(dws, o, (2, 6, 6)); o += 72
    dS = _view(dws, o, (3, 3, 3)); o += 27
    d2S = _view(dws, o, (3, 3, 3, 3)); o += 81
    t = _view(dws, o, (4, 6)); o += 24
    qdd = _view(dws, o, (nv,)); o += nv
    LD = _view(dws, o, (nv, nv)); o += nv * nv
    X = _view(dws, o, (nv, 3 * nv))
    return ov, oa, F, Yc, Bc, J, dV, dA, dAv, uw, dS, d2S, t, qdd, LD, X


# --- small spatial helpers ---------------------------------------------------------------
@njit(inline="always", cache=True)
def _add_inertia_rate(v, I, h, B):
    """B += (v x*) I - I (v x) + (. x* h): the matrix of x -> (v x*) I x + I (x x v) + x x* h,
    the change of of = I a + v x* I v when v changes by x and a by x x v (step D3).
    With A = (v x*) I, I (v x) = -A^T for a symmetric I."""
    v0, v1, v2, v3, v4, v5 = v[0], v[1], v[2], v[3], v[4], v[5]
    for c in range(6):
        f0, f1, f2, f3, f4, f5 = I[0, c], I[1, c], I[2, c], I[3, c], I[4, c], I[5, c]
        a0 = v4 * f2 - v5 * f1
        a1 = v5 * f0 - v3 * f2
        a2 = v3 * f1 - v4 * f0
        a3 = v4 * f5 - v5 * f4 + v1 * f2 - v2 * f1
        a4 = v5 * f3 - v3 * f5 + v2 * f0 - v0 * f2
        a5 = v3 * f4 - v4 * f3 + v0 * f1 - v1 * f0
        B[0, c] += a0
        B[1, c] += a1
        B[2, c] += a2
        B[3, c] += a3
        B[4, c] += a4
        B[5, c] += a5
        B[c, 0] += a0
        B[c, 1] += a1
        B[c, 2] += a2
        B[c, 3] += a3
        B[c, 4] += a4
        B[c, 5] += a5
    # x x* h = [[0, -[f]x], [-[f]x, -[n]x]] x for h = [f; n]
    f0, f1, f2, n0, n1, n2 = h[0], h[1], h[2], h[3], h[4], h[5]
    B[0, 4] += f2
    B[0, 5] -= f1
    B[1, 3] -= f2
    B[1, 5] += f0
    B[2, 3] += f1
    B[2, 4] -= f0
    B[3, 1] += f2
    B[3, 2] -= f1
    B[4, 0] -= f2
    B[4, 2] += f0
    B[5, 0] += f1
    B[5, 1] -= f0
    B[3, 4] += n2
    B[3, 5] -= n1
    B[4, 3] -= n2
    B[4, 5] += n0
    B[5, 3] += n1
    B[5, 4] -= n0


@njit(inline="always", cache=True)
def _mat6_tvec(M, x, out):
    """out = M^T x."""
    x0, x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4], x[5]
    for c in range(6):
        out[c] = M[0, c] * x0 + M[1, c] * x1 + M[2, c] * x2 + M[3, c] * x3 + M[4, c] * x4 + M[5, c] * x5


@njit(cache=True)
def _derivatives_from_kinematics(mi, mf, ws, dws, q, v, a, fext, compose, dq, dv, M):
    """dtau/dq, dtau/dv and M (Carpentier and Mansard 2018, Algorithm 1) on the world poses,
    body velocities and accelerations (with gravity) a kinematics pass left in ``ws``; with
    ``compose`` the world poses are formed here from the poses in the parents (after ABA, whose
    pass leaves every other quantity needed, and the accelerations of q'' = ABA(...))."""
    parent, jtype, qadr, vadr, jnq, jnv, axis, axis2, _, _, inertia, armature, g = _unpack_model(mi, mf)
    damping, _ = _unpack_joint_terms(mi, mf)
    nb, nq, nv = _model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, U, Dinv, u, tmp, W6, W3 = _unpack_data(ws, nb, nv)
    ov, oa, F, Yc, Bc, J, dV, dA, dAv, uw, dS, d2S, t, _, _, _ = _unpack_dws(dws, nb, nv)
    for r in range(nv):
        for c in range(nv):
            dq[r, c] = 0.0
            dv[r, c] = 0.0
            M[r, c] = 0.0
    for k in range(6):
        ov[0, k] = 0.0
        oa[0, k] = 0.0
    oa[0, 0], oa[0, 1], oa[0, 2] = -g[0], -g[1], -g[2]          # a_0 = [-g; 0]
    has_f = fext.shape[0] > 0
    # forward pass
    for i in range(1, nb):
        pi = parent[i]
        R, p = oR[i], op[i]
        if compose:
            _compose_pose(oR[pi], op[pi], liR[i], lip[i], R, p)          # oMi = oMparent liMi
        _motion_act(R, p, vel[i], ov[i])
        _motion_act(R, p, acc[i], oa[i])
        # (D1) oI_i = oX_i^-T I_i oX_i^-1 (the composite Yc starts as the body's own), h_i = oI_i ov_i
        Y, B = Yc[i], Bc[i]
        for r in range(6):
            for c in range(6):
                Y[r, c] = 0.0
                B[r, c] = 0.0
        _rigid_inertia_to_parent_add(R, p, inertia[i], Y)
        h = t[0]
        _mat6_vec(Y, ov[i], h)
        # (D1) of_i = oI_i oa_i + ov_i x* h_i - oX_i^* f_i^ext
        _mat6_vec(Y, oa[i], F[i])
        fo = F[i]
        _force_cross_add(ov[i], h, fo)
        if has_f:
            fw = t[1]
            for k in range(6):
                fw[k] = 0.0
            _force_act_add(R, p, fext[i], fw)
            for k in range(6):
                fo[k] -= fw[k]
        # (D3) B_i
        _add_inertia_rate(ov[i], Y, h, B)
        _joint_columns(jtype[i], axis[i], axis2[i], q, qadr[i], S, v, a, vadr[i], jnv[i], R, p, ov[pi], oa[pi], ov[i],
                       J, dV, dA, dAv, dS, d2S, t)
    # backward pass
    for i in range(nb - 1, 0, -1):
        pi = parent[i]
        va, ni = vadr[i], jnv[i]
        Y, B, Fi = Yc[i], Bc[i], F[i]
        uq, wq = uw[0], uw[1]
        for k in range(ni):
            d = va + k
            _mat6_vec(Y, J[d], uq[k])                               # u_k = Yc_i J_k
            _mat6_tvec(B, J[d], wq[k])                              # w_k = Bc_i^T J_k
        # (D5) rows of joint i, columns of joint i and its ancestors
        for k in range(ni):
            d = va + k
            u_, w_ = uq[k], wq[k]
            c = i
            while c > 0:
                for m in range(vadr[c], vadr[c] + jnv[c]):
                    dq[d, m] = _dot(u_, dA[m]) + _dot(w_, dV[m])
                    dv[d, m] = _dot(u_, dAv[m]) + _dot(w_, J[m])
                    x = _dot(u_, J[m])
                    M[d, m] = x
                    M[m, d] = x
                c = parent[c]
        kind = jtype[i]
        if kind == UNIVERSAL or kind == SPHERICAL_ZYX:
            # (D7) dtau_l/dq_k += (oX_i dS_l/dq_k)^T F_i within the joint
            _joint_S_partials(kind, axis[i], axis2[i], q, qadr[i], S[va], dS, d2S)
            W = t[3]
            for k in range(ni):
                for l in range(ni):
                    W[0], W[1], W[2] = 0.0, 0.0, 0.0
                    W[3], W[4], W[5] = dS[k, l, 0], dS[k, l, 1], dS[k, l, 2]
                    _motion_act(oR[i], op[i], W, t[0])
                    dq[va + l, va + k] += _dot(t[0], Fi)
        # (D6) columns of joint i, rows of the strict ancestors
        if pi > 0:
            fq, fv = t[0], t[1]
            for k in range(ni):
                d = va + k
                # fq = J_k x* F_i + Yc dA_k + Bc dV_k ;  fv = Yc dAv_k + Bc J_k
                _mat6_vec(Y, dA[d], fq)
                _mat6_vec(B, dV[d], t[2])
                _mat6_vec(Y, dAv[d], fv)
                _mat6_vec(B, J[d], t[3])
                j0, j1, j2, j3, j4, j5 = J[d, 0], J[d, 1], J[d, 2], J[d, 3], J[d, 4], J[d, 5]
                f0, f1, f2, f3, f4, f5 = Fi[0], Fi[1], Fi[2], Fi[3], Fi[4], Fi[5]
                fq[0] += t[2, 0] + j4 * f2 - j5 * f1
                fq[1] += t[2, 1] + j5 * f0 - j3 * f2
                fq[2] += t[2, 2] + j3 * f1 - j4 * f0
                fq[3] += t[2, 3] + j4 * f5 - j5 * f4 + j1 * f2 - j2 * f1
                fq[4] += t[2, 4] + j5 * f3 - j3 * f5 + j2 * f0 - j0 * f2
                fq[5] += t[2, 5] + j3 * f4 - j4 * f3 + j0 * f1 - j1 * f0
                for x in range(6):
                    fv[x] += t[3, x]
                c = pi
                while c > 0:
                    for m in range(vadr[c], vadr[c] + jnv[c]):
                        dq[m, d] = _dot(J[m], fq)
                        dv[m, d] = _dot(J[m], fv)
                    c = parent[c]
            # (D4) composite quantities of the parent
            Yp, Bp, Fp = Yc[pi], Bc[pi], F[pi]
            for r in range(6):
                Fp[r] += Fi[r]
                for c in range(6):
                    Yp[r, c] += Y[r, c]
                    Bp[r, c] += B[r, c]
    for d in range(nv):
        M[d, d] += armature[d]
        dv[d, d] += damping[d]
    # the joints' springs: d tau_s/dq, one block per joint (linkdyn._kernels.springs)
    _spring_stiffness_add(mi, mf, q, W3[0], W3[1, 0], dq)


@njit(cache=True)
def _rnea_derivatives_impl(mi, mf, ws, dws, q, v, a, fext, out):
    st = _check_inputs(mi, q, v, a, True)
    if st != OK:
        return st
    if not _all_finite(fext):
        return BAD_F
    _kinematics_pass(mi, mf, ws, q, v, a, np.int64(ACC), np.bool_(True), np.bool_(True))
    _derivatives_from_kinematics(mi, mf, ws, dws, q, v, a, fext, False, out[0], out[1], out[2])
    return OK if _all_finite(out) else OVERFLOW


@njit(cache=True)
def _aba_derivatives_impl(mi, mf, ws, dws, q, v, tau, fext, lam, out):
    """q'' = ABA(q, v, tau), then the RNEA derivatives at a = q'' and
    dq''/dq = -M^-1 dtau/dq, dq''/dv = -M^-1 dtau/dv, M^-1 (Carpentier and Mansard 2018),
    by the LTDL factor of M (Featherstone 2008, sec. 6.5)."""
    nb, nq, nv = _model_sizes(mi)
    qdd, LD, X = _unpack_dws(dws, nb, nv)[13:]
    st = _aba_kernel(mi, mf, ws, q, v, tau, fext, qdd)
    if st != OK:
        return st
    # ABA left liMi, S, the velocities, the biases and the accelerations of q'' (with a_0 = -g)
    dq, dv, Minv = out[0], out[1], out[2]
    _derivatives_from_kinematics(mi, mf, ws, dws, q, v, qdd, fext, True, dq, dv, LD)
    st = _ltdl_factor(LD, lam)
    if st != OK:
        return st
    # X = [-dtau/dq, -dtau/dv, 1] <- M^-1 X, the three solves at once (rows of 3 nv: longer inner loops)
    for r in range(nv):
        for c in range(nv):
            X[r, c] = -dq[r, c]
            X[r, nv + c] = -dv[r, c]
            X[r, 2 * nv + c] = 1.0 if r == c else 0.0
    _lit_rows(LD, lam, X)
    _dinv_li_rows(LD, lam, X)
    for r in range(nv):
        for c in range(nv):
            dq[r, c] = X[r, c]
            dv[r, c] = X[r, nv + c]
            Minv[r, c] = X[r, 2 * nv + c]
    return OK if _all_finite(out) else OVERFLOW


@njit(cache=True)
def _rnea_derivatives_kernel(mi, mf, ws, q, v, a, fext, DW, out):
    return _rnea_derivatives_impl(mi, mf, ws, _pick(DW, 0), q, v, a, fext, out)


@njit(cache=True)
def _aba_derivatives_kernel(mi, mf, ws, q, v, tau, fext, DW, lam, out):
    return _aba_derivatives_impl(mi, mf, ws, _pick(DW, 0), q, v, tau, fext, lam, out)


@njit(cache=True)
def _rnea_derivatives_packed(buf, dws, q, v, a, out):
    mi, mf, ws = _unpack_packed(buf)
    return _rnea_derivatives_impl(mi, mf, ws, dws, q, v, a, _no_forces(buf), out)


@njit(cache=True)
def _aba_derivatives_packed(buf, dws, q, v, tau, lam, out):
    mi, mf, ws = _unpack_packed(buf)
    return _aba_derivatives_impl(mi, mf, ws, dws, q, v, tau, _no_forces(buf), lam, out)


@njit(parallel=True, cache=True)
def _rnea_derivatives_batch(mi, mf, WS, Q, V, A, F, DW, OUT, status):
    nt_, n = WS.shape[0], OUT.shape[0]
    for t in prange(nt_):
        lo, hi = _chunk(t, nt_, n)
        for k in range(lo, hi):
            status[k] = _rnea_derivatives_impl(mi, mf, _pick(WS, t), _pick(DW, t), _pick(Q, k), _pick(V, k),
                                               _pick(A, k), _pick(F, k), _pick(OUT, k))


@njit(parallel=True, cache=True)
def _aba_derivatives_batch(mi, mf, WS, Q, V, T, F, DW, lam, OUT, status):
    nt_, n = WS.shape[0], OUT.shape[0]
    for t in prange(nt_):
        lo, hi = _chunk(t, nt_, n)
        for k in range(lo, hi):
            status[k] = _aba_derivatives_impl(mi, mf, _pick(WS, t), _pick(DW, t), _pick(Q, k), _pick(V, k),
                                              _pick(T, k), _pick(F, k), lam, _pick(OUT, k))


_rnea_d = Entry(_rnea_derivatives_kernel, MI, MF, WS, VEC, VEC, VEC, FEXT, DWS, OUT3)
_aba_d = Entry(_aba_derivatives_kernel, MI, MF, WS, VEC, VEC, VEC, FEXT, DWS, LAM, OUT3)
_rnea_d_entry = Entry(_rnea_derivatives_packed, PACKED, WS, VEC, VEC, VEC, OUT3)
_aba_d_entry = Entry(_aba_derivatives_packed, PACKED, WS, VEC, VEC, VEC, LAM, OUT3)


# --- public layer ------------------------------------------------------------------------
def _own_workspace(model):
    """The derivative workspace of single-state calls, kept on the model like its ``_ws`` (the
    model is immutable, and so is the size)."""
    dw = getattr(model, "_derivatives_ws", None)
    if dw is None:
        dw = model._derivatives_ws = np.zeros(_dws_size(model.nbody, model.nv))
    return dw


def _workspace(model, batch):
    """The derivative workspace as rows: one per compiled thread for a stack, else the model's own."""
    if batch is not None:
        return np.empty((numba.get_num_threads(), _dws_size(model.nbody, model.nv)))
    return _own_workspace(model).reshape(1, -1)


def _split(out):
    if out.ndim == 3:
        return out[0], out[1], out[2]
    return out[:, 0], out[:, 1], out[:, 2]


@reduced(("matrix", "matrix", "matrix"))
def rnea_derivatives(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike, fext: ArrayLike | None = None
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Partial derivatives of inverse dynamics tau = RNEA(q, v, a, fext) (Carpentier and
    Mansard 2018, Algorithm 1): ``(dtau_dq, dtau_dv, M)``, each (nv, nv), or (N, nv, nv) for a
    stack of states.

    The derivative with respect to q is taken in the tangent space, as Pinocchio's: column k is
    d/de tau(integrate(q, e e_k), v, a) at e = 0, nv columns for every joint kind (free and
    spherical joints included).  ``M = dtau/da`` is the joint-space inertia (with the armature).
    The model's viscous damping enters dtau_dv; its Coulomb friction, piecewise constant in v,
    adds nothing (at v = 0 exactly, where it is not differentiable, neither).  External forces
    ``fext`` (nbody, 6) or (N, nbody, 6) are per body in the body frame, as in :func:`linkdyn.rnea`,
    and held fixed in that frame while q moves.  Shapes and validation as in :func:`linkdyn.rnea`.
    """
    if (fext is None and type(q) is _ND and type(v) is _ND and type(a) is _ND and q.dtype is _F64
            and v.dtype is _F64 and a.dtype is _F64 and q.ndim == 1 and v.ndim == 1 and a.ndim == 1):
        out = np.empty((3, model.nv, model.nv))
        dw = getattr(model, "_derivatives_ws", None)
        if _rnea_d_entry.fn(model._packed, _own_workspace(model) if dw is None else dw, q, v, a, out) == OK:
            return out[0], out[1], out[2]
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return rnea_derivatives.on_full_tree(model, q, v, a, fext)
    args = as_states(model, q=q, v=v, a=a)
    F = as_fext(model, fext, args.batch)
    out = run(model, (_rnea_d, _rnea_derivatives_batch), (3, model.nv, model.nv), args, ("q", "v", "a"),
              (F, _workspace(model, args.batch)), 1, fext=fext)
    return _split(out)


def _aba_derivatives_geared(model, q, v, tau, fext=None):
    """(dq''/dq, dq''/dv, M^-1) of the geared model: the reduced dynamics M_r q'' = tau - G^T b
    differentiated (M_r = G^T M G is constant in the follower directions G spans), i.e.
    dq''/dx = -M_r^-1 G^T (dtau_full/dx_full) G at a_full = G q''."""
    c, full = model._coupling, model._full
    args = as_states(model, q=q, v=v, tau=tau)
    qdd = aba_geared(model, args.q, args.v, args.tau, fext)
    G = c.G
    dq, dv, M = rnea_derivatives(full, c.q(args.q), c.v(args.v), c.v(qdd), fext)
    Minv = np.linalg.inv(G.T @ M @ G)
    return -Minv @ (G.T @ dq @ G), -Minv @ (G.T @ dv @ G), Minv


@reduced(via=_aba_derivatives_geared)
def aba_derivatives(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike, fext: ArrayLike | None = None
                    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Partial derivatives of forward dynamics q'' = ABA(q, v, tau, fext):
    ``(dqdd_dq, dqdd_dv, Minv)``, each (nv, nv), or (N, nv, nv) for a stack of states.

    As Carpentier and Mansard 2018: dq''/dq = -M^-1 dtau/dq and dq''/dv = -M^-1 dtau/dv,
    the RNEA derivatives (:func:`rnea_derivatives`) taken at a = q''; ``Minv`` = M^-1 from the
    sparse LTDL factorization of M (Featherstone 2008, sec. 6.5).  q-derivatives in the tangent
    space (nv columns), damping and friction as in :func:`rnea_derivatives`.
    """
    if (fext is None and type(q) is _ND and type(v) is _ND and type(tau) is _ND and q.dtype is _F64
            and v.dtype is _F64 and tau.dtype is _F64 and q.ndim == 1 and v.ndim == 1 and tau.ndim == 1):
        out = np.empty((3, model.nv, model.nv))
        dw = getattr(model, "_derivatives_ws", None)
        if _aba_d_entry.fn(model._packed, _own_workspace(model) if dw is None else dw, q, v, tau, model.dof_parent,
                           out) == OK:
            return out[0], out[1], out[2]
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return aba_derivatives.on_full_tree(model, q, v, tau, fext)
    args = as_states(model, q=q, v=v, tau=tau)
    F = as_fext(model, fext, args.batch)
    out = run(model, (_aba_d, _aba_derivatives_batch), (3, model.nv, model.nv), args, ("q", "v", "tau"),
              (F, _workspace(model, args.batch), model.dof_parent), 1, fext=fext)
    return _split(out)
