"""The articulated body algorithm with gear couplings folded in (tazz, "Formulation of
Featherstone's algorithm", secs. 2.6-2.7, eqs. 30-40).

A reduced dof q drives a *group* of one-dof joints: its leader (ratio 1) and every joint that
follows it through a gear (ratio gamma_c), all hanging from one *anchor* body p, each member's
parent being p or another member.  For every member c the acceleration propagates from the anchor
as

    A_c = X_cp A_p + C^_c + J^_c q''                                              (eq. 36)

with the serial composition of eqs. 30-35 (a member m between c and p):

    X_cp = X_cm X_mp,   J^_c = X_cm J^_m + gamma_c S_c,   C^_c = X_cm C^_m + c_c,

and J^_c = gamma_c S_c, C^_c = c_c for a member whose parent is the anchor.  With the members'
articulated inertias I^_c and bias forces Z^_c (which hold their subtrees *except* other members),
the virtual work of the group, tau = sum_c J^_c^T F_c (eq. 37), gives

    D   = sum_c J^_c^T I^_c J^_c  (+ sum_c gamma_c^2 armature_c),   W = sum_c X_cp^T I^_c J^_c
    u   = tau - sum_c gamma_c tau_joint,c - sum_c J^_c^T (I^_c C^_c + Z^_c)
    q'' = D^-1 (u - W^T A_p)                                                      (eq. 38)
    I^_p += sum_c X_cp^T I^_c X_cp - W D^-1 W^T                                   (eq. 39)
    Z^_p += sum_c X_cp^T (I^_c C^_c + Z^_c) + W D^-1 u                            (eq. 40)

Eq. 36 as printed carries C^_pc q'' where the bias C^_pc alone is meant, and eq. 40 sums tau_c
where the one generalized force tau of the shared coordinate is meant (the principle of virtual
work, eq. 37); both are used corrected here, and checked against solve(G^T M G, tau - G^T b) in
tests/test_gears.py.  Bodies outside any group take the ordinary ABA steps (linkdyn.aba).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

import numba
from numba import types as nt

from .._api import (FEXT, MF, MI, OUT1, SERIAL_BELOW, VEC, WS, Entry, _NO_FORCE, as_fext, as_states, batch_workspace,
                    raise_for_status, vectors)
from .._kernels.batch import chunk as _chunk, pick as _pick
from .._kernels.layout import (model_sizes as _model_sizes, unpack_data as _unpack_data,
    unpack_joint_terms as _unpack_joint_terms, unpack_model as _unpack_model)
from .._kernels.passes import (BAD_A, BAD_F, BAD_SHAPE, OK, OVERFLOW, SINGULAR, VEL, all_finite as _all_finite,
    check_inputs as _check_inputs, joint_torque as _joint_torque, kinematics_pass as _kinematics_pass)
from .._kernels.spatial_nb import (dot6 as _dot6, force_act_add as _force_act_add, force_cross_add as _force_cross_add,
    inertia_to_parent_add as _inertia_to_parent_add, mat6_vec as _mat6_vec, motion_inv_act as _motion_inv_act)
from ._articulated import _articulate
from .crba import crba
from .rnea import rnea
from .._kernels.springs import add_spring_torques as _add_spring_torques


@njit(cache=True)
def _geared_aba_kernel(mi, mf, ws, gi, gf, gws, q, v, tau, fext, qdd):
    nb, nqf, nvf = _model_sizes(mi)
    nqr, nvr = gi[0], gi[1]
    if q.shape[0] != nqr or v.shape[0] != nvr or tau.shape[0] != nvr or qdd.shape[0] != nvr:
        return BAD_SHAPE
    if not _all_finite(tau):
        return BAD_A
    if not _all_finite(fext):
        return BAD_F
    o = 2
    qsrc = gi[o:o + nqf]
    o += nqf
    vsrc = gi[o:o + nvf]
    o += nvf
    gdof = gi[o:o + nb]
    anchor = gi[o + nb:o + 2 * nb]
    gptr = gi[o + 2 * nb:o + 3 * nb]
    gcnt = gi[o + 3 * nb:o + 4 * nb]
    mem = gi[o + 4 * nb:]
    qscale, qoff = gf[:nqf], gf[nqf:2 * nqf]
    vscale, ratio = gf[2 * nqf:2 * nqf + nvf], gf[2 * nqf + nvf:]
    gR = gws[:9 * nb].reshape((nb, 3, 3))
    gp = gws[9 * nb:12 * nb].reshape((nb, 3))
    gJ = gws[12 * nb:18 * nb].reshape((nb, 6))
    gC = gws[18 * nb:24 * nb].reshape((nb, 6))
    qf = gws[24 * nb:24 * nb + nqf]
    vf = gws[24 * nb + nqf:24 * nb + nqf + nvf]
    tf = gws[24 * nb + nqf + nvf:24 * nb + nqf + 2 * nvf]      # tau of the ungeared dofs, full layout
    for k in range(nqf):
        qf[k] = qscale[k] * q[qsrc[k]] + qoff[k]
    for k in range(nvf):
        vf[k] = vscale[k] * v[vsrc[k]]
        tf[k] = tau[vsrc[k]]
    st = _check_inputs(mi, qf, vf, vf, False)
    if st != OK:
        return st
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, inertia, armature, g = _unpack_model(mi, mf)
    damping, friction = _unpack_joint_terms(mi, mf)
    oR, op, liR, lip, vel, acc, frc, S, vJ, c, IA, pA, U, Dinv, u, tmp, W6, W3 = _unpack_data(ws, nb, nvf)
    _kinematics_pass(mi, mf, ws, qf, vf, vf[:0], np.int64(VEL), np.bool_(False), np.bool_(False))
    # pass 1: I^A_i = I_i, Z_i = v_i x* I_i v_i - f_ext
    for i in range(1, nb):
        IA[i, :, :] = inertia[i]
        _mat6_vec(inertia[i], vel[i], tmp[i])
        pA[i, :] = 0.0
        _force_cross_add(vel[i], tmp[i], pA[i])
        if fext.shape[0] > 0:
            for k in range(6):
                pA[i, k] -= fext[i, k]
    # pass 2 (u starts as -tau_s, the springs of the full tree's joints)
    for d in range(nvf):
        u[d] = 0.0
    _add_spring_torques(mi, mf, qf, -1.0, W3[0], W3[1, 0], u)
    D = W6[0]
    for i in range(nb - 1, 0, -1):
        if gdof[i] >= 0:
            if gcnt[i] == 0:
                continue                    # a member: reduced with its group, at the group's first member
            # the group of reduced dof d hanging from anchor p (eqs. 30-35 to compose, 38-40 to reduce)
            p, lo, hi = anchor[i], gptr[i], gptr[i] + gcnt[i]
            Dg, ug = 0.0, tau[gdof[i]]
            Wg = tmp[0]
            Wg[:] = 0.0
            for k in range(lo, hi):
                m = mem[k]
                dm, r = vadr[m], ratio[m]
                pm = parent[m]
                if pm == p:
                    gR[m, :, :] = liR[m]
                    gp[m, :] = lip[m]
                    for e in range(6):
                        gJ[m, e] = r * S[dm, e]
                        gC[m, e] = c[m, e]
                else:
                    for a_ in range(3):
                        for b_ in range(3):
                            gR[m, a_, b_] = gR[pm, a_, 0] * liR[m, 0, b_] + gR[pm, a_, 1] * liR[m, 1, b_] \
                                + gR[pm, a_, 2] * liR[m, 2, b_]
                        gp[m, a_] = gp[pm, a_] + gR[pm, a_, 0] * lip[m, 0] + gR[pm, a_, 1] * lip[m, 1] \
                            + gR[pm, a_, 2] * lip[m, 2]
                    _motion_inv_act(liR[m], lip[m], gJ[pm], gJ[m])
                    _motion_inv_act(liR[m], lip[m], gC[pm], gC[m])
                    for e in range(6):
                        gJ[m, e] += r * S[dm, e]
                        gC[m, e] += c[m, e]
                _mat6_vec(IA[m], gJ[m], U[dm])                               # I^_c J^_c
                Dg += _dot6(gJ[m], U[dm]) + r * r * armature[dm]
                ug -= r * _joint_torque(0.0, damping[dm], friction[dm], vf[dm], 0.0)
                ug += r * u[dm]                                              # - r tau_s (read before u[s0] is set)
                _mat6_vec(IA[m], gC[m], tmp[1])                              # I^_c C^_c + Z^_c
                for e in range(6):
                    tmp[1, e] += pA[m, e]
                ug -= _dot6(gJ[m], tmp[1])
                _force_act_add(gR[m], gp[m], U[dm], Wg)                     # W += X_cp^T I^_c J^_c
                if p > 0:
                    _inertia_to_parent_add(gR[m], gp[m], IA[m], IA[p])
                    _force_act_add(gR[m], gp[m], tmp[1], pA[p])
            if not Dg > 0.0:
                return SINGULAR
            s0 = vadr[i]                                                     # the group's slot
            Dinv[s0, 0] = 1.0 / Dg
            u[s0] = ug
            U[s0, :] = Wg
            if p > 0:
                w = 1.0 / Dg
                for r_ in range(6):
                    x = w * Wg[r_]
                    pA[p, r_] += x * ug
                    for k in range(6):
                        IA[p, r_, k] -= x * Wg[k]
            continue
        # an ordinary joint: linkdyn.aba's steps (Featherstone 2008 eqs. 21-24)
        va, ni = vadr[i], jnv[i]
        for d in range(va, va + ni):
            _mat6_vec(IA[i], S[d], U[d])
            u[d] += tf[d] - _joint_torque(0.0, damping[d], friction[d], vf[d], 0.0) - _dot6(S[d], pA[i])
        if not _articulate(i, va, ni, parent, IA, pA, S, U, Dinv, u, c, tmp, D, armature, liR, lip):
            return SINGULAR
    # pass 3: a_0 = -g
    acc[0, :] = 0.0
    acc[0, 0], acc[0, 1], acc[0, 2] = -g[0], -g[1], -g[2]
    for i in range(1, nb):
        if gdof[i] >= 0:
            if gcnt[i] == 0:
                continue
            p, s0 = anchor[i], vadr[i]
            x = Dinv[s0, 0] * (u[s0] - _dot6(U[s0], acc[p]))                # eq. 38
            qdd[gdof[i]] = x
            for k in range(gptr[i], gptr[i] + gcnt[i]):
                m = mem[k]
                _motion_inv_act(gR[m], gp[m], acc[p], acc[m])               # eq. 36
                for e in range(6):
                    acc[m, e] += gC[m, e] + gJ[m, e] * x
            continue
        va, ni = vadr[i], jnv[i]
        _motion_inv_act(liR[i], lip[i], acc[parent[i]], acc[i])
        for k in range(6):
            acc[i, k] += c[i, k]
        for d in range(ni):
            tmp[0, d] = u[va + d] - _dot6(U[va + d], acc[i])
        for d in range(ni):
            s = 0.0
            for e in range(ni):
                s += Dinv[va + d, e] * tmp[0, e]
            qdd[vsrc[va + d]] = s
        for d in range(ni):
            for k in range(6):
                acc[i, k] += S[va + d, k] * qdd[vsrc[va + d]]
    return OK if _all_finite(qdd) else OVERFLOW


@njit(parallel=True, cache=True)
def _geared_aba_batch(mi, mf, WS, gi, gf, GWS, Q, V, T, F, QDD, status):
    nt, n = WS.shape[0], QDD.shape[0]
    for t in prange(nt):
        lo, hi = _chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = _geared_aba_kernel(mi, mf, _pick(WS, t), gi, gf, _pick(GWS, t), _pick(Q, k), _pick(V, k),
                                           _pick(T, k), _pick(F, k), _pick(QDD, k))


# --- the public layer's handler for a geared model (linkdyn.aba routes here) ----------------------
_GI = nt.Array(nt.int64, 1, "C", readonly=True)
_GF = nt.Array(nt.float64, 1, "C", readonly=True)
_aba_entry = Entry(_geared_aba_kernel, MI, MF, WS, _GI, _GF, WS, VEC, VEC, VEC, FEXT, OUT1)


def aba_geared(model, q, v, tau, fext=None):
    """q'' of the geared model: the geared articulated-body kernel (serial and parallel couplings),
    or solve(G^T M G, tau - G^T b) for couplings that recursion cannot fold in."""
    c, full = model._coupling, model._full
    if fext is None and not c.general and vectors(q, v, tau):        # one state: straight to the kernel
        out = np.empty(model.nv)
        if _aba_entry.fn(full._mi, full._mf, full._ws, c.gi, c.gf, model._gws, q, v, tau, _NO_FORCE, out) == 0:
            return out
    args = as_states(model, q=q, v=v, tau=tau)
    if c.general:
        qf, vf = c.q(args.q), c.v(args.v)
        G = c.G
        Mr = G.T @ crba(full, qf) @ G
        b = rnea(full, qf, vf, np.zeros(vf.shape[-1]), fext) @ G
        rhs = args.tau - b
        if args.batch is None:
            return np.linalg.solve(Mr, rhs)
        Mr = np.broadcast_to(Mr, (args.batch,) + Mr.shape[-2:])
        return np.linalg.solve(Mr, np.broadcast_to(rhs, (args.batch, model.nv))[..., None])[..., 0]
    F = as_fext(model, fext, args.batch)
    if args.batch is None:
        out = np.empty(model.nv)
        st = _geared_aba_kernel(full._mi, full._mf, full._ws, c.gi, c.gf, model._gws, args.q, args.v, args.tau, F, out)
    else:
        out = np.empty((args.batch, model.nv))
        st = np.empty(args.batch, dtype=np.int64)
        if args.batch < SERIAL_BELOW:
            for k in range(args.batch):
                row = [x[k] if x.shape[0] > 1 else x[0] for x in (args.q, args.v, args.tau, F)]
                st[k] = _geared_aba_kernel(full._mi, full._mf, full._ws, c.gi, c.gf, model._gws, *row, out[k])
        else:
            gws = np.empty((numba.get_num_threads(), model._gws.shape[0]))
            _geared_aba_batch(full._mi, full._mf, batch_workspace(full), c.gi, c.gf, gws, args.q, args.v, args.tau,
                              F, out, st)
    raise_for_status(model, st, q=args.q, v=args.v, tau=args.tau, fext=fext)
    return out
