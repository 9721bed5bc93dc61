"""The time-stepping step of ``linkdyn.sim.timestepping`` for a tree (no loops) as one compiled call.

The same computation as ``TimeStepping._step_python`` (forward dynamics, the gaps at the start
and at the free motion's end, the candidates' rows, the Delassus matrix by a Cholesky
factorization of the CRBA matrix, Gauss-Seidel with one polish, semi-implicit Euler on the
configuration manifold), with the model's own compiled kernels called in a row: a Python
step costs about thirty NumPy calls, this one none.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._kernels.layout import model_sizes, no_forces, unpack_data, unpack_packed
from .._kernels.passes import OK, POS, kinematics_pass
from ..contact import lcp
from ..contact.rows import _contact_gaps, _contact_rows
from ..contact.swing_twist import _model_kernel as _ball_kernel
from ..dynamics.aba import _aba_kernel
from ..dynamics.crba import _crba_kernel
from ..kinematics import _joint_jacobians_kernel
from ..model import joints as J
from ..model.configuration import _integrate_kernel, _quat_exp, _rot_apply

#: kernel status beyond the model kernels' own: a ball joint's coordinates are bad
BAD_BALL = 100


@njit(cache=True)
def free_classical(mi, v, a):
    """a += (w x v_lin, 0) at each free joint: its origin's classical acceleration, from the
    spatial one that forward dynamics gives (Featherstone 2008 sec. 2.11: a_classical =
    a_spatial + w x v), in the joint's frame at q held fixed over the step (``step_configuration``)."""
    jtype, vadr = mi[1], mi[3]
    for i in range(1, mi.shape[1]):
        if jtype[i] == J.FREE:
            d = vadr[i]
            vx, vy, vz, wx, wy, wz = v[d], v[d + 1], v[d + 2], v[d + 3], v[d + 4], v[d + 5]
            a[d] += wy * vz - wz * vy
            a[d + 1] += wz * vx - wx * vz
            a[d + 2] += wx * vy - wy * vx


@njit(cache=True)
def step_configuration(mi, q, v, h, q_out, v_out):
    """The step's move from q with velocity v over h: q (+) h v on the configuration manifold
    for every joint but the free ones, which move on R^3 x SO(3) (Mueller and Terze 2014): the
    origin along the straight line p + h R v_lin, the orientation R exp(h w).  v_out is v with
    each free joint's linear velocity carried into its new frame, exp(-h w) v_lin (the same
    velocity of the origin in the world: a free flight keeps its momentum and kinetic energy
    exactly, where SE(3)'s screw with the Coriolis term of the body-frame velocity taken by
    explicit Euler gains (w h)^2 of the translational energy per step).  Returns a status."""
    st = _integrate_kernel(mi, q, v, h, q_out)
    if st != OK:
        return st
    v_out[:] = v
    jtype, qadr, vadr = mi[1], mi[2], mi[3]
    for i in range(1, mi.shape[1]):
        if jtype[i] == J.FREE:
            o, d = qadr[i], vadr[i]
            rx, ry, rz = _rot_apply(q[o + 3], q[o + 4], q[o + 5], q[o + 6], v[d], v[d + 1], v[d + 2])
            q_out[o], q_out[o + 1], q_out[o + 2] = q[o] + h * rx, q[o + 1] + h * ry, q[o + 2] + h * rz
            ex, ey, ez, ew = _quat_exp(-h * v[d + 3], -h * v[d + 4], -h * v[d + 5])
            v_out[d], v_out[d + 1], v_out[d + 2] = _rot_apply(ex, ey, ez, ew, v[d], v[d + 1], v[d + 2])
    return OK


@njit(cache=True)
def _gaps(mi, mf, ws, q, geo, lim_q, lim_s, lim_b, bC, bI, v0, ncp, out):
    """Every unit's gap at q (catalog order), kinematics included; returns a status."""
    cbody, cpos, crad, pbody, pR, pp, pext, pair_c, pair_p = geo
    nb, nq, nv = model_sizes(mi)
    if ncp:
        kinematics_pass(mi, mf, ws, q, q[:0], q[:0], np.int64(POS), np.bool_(True), np.bool_(False))
        oR, op = unpack_data(ws, nb, nv)[:2]
        _contact_gaps(oR, op, cbody, cpos, crad, pbody, pR, pp, pext, pair_c, pair_p, out[:ncp])
    ncl = lim_q.shape[0]
    for k in range(ncl):
        out[ncp + k] = lim_s[k] * (q[lim_q[k]] - lim_b[k])
    if bC.shape[0]:
        code = _ball_kernel(bC, bI, q, v0, np.int64(0), out[ncp + ncl:], np.zeros((0, 3)), np.zeros(0))
        if code >= 0:
            return BAD_BALL
    return OK


@njit(cache=True)
def timestep_kernel(buf, q, v, tau, h, geo, mask, pair_mu, pair_e, lim_q, lim_v, lim_s, lim_b, bC, bI, ball_va,
                    prm, warm, q_out, v_out, force, vn_out, gaps_out, info):
    """One step of h; ``prm`` = (CANDIDATE, BETA, V_BOUNCE, sweeps, tol, fallback sweeps).  Outputs:
    q_out, v_out, force (size, 3) = impulses / h, vn_out (size,) the normal velocity at the start of
    the candidates (NaN elsewhere), gaps_out (size,) the gaps at q_out, warm (size, 3) the
    impulses (for the next step), info = (status, number of candidates, residual, 1 if the
    fallback ran).  The caller refuses a residual above its tolerance (ContactSolverError)."""
    mi, mf, ws = unpack_packed(buf)
    nb, nq, nv = model_sizes(mi)
    ncp = geo[7].shape[0]
    ncl = lim_q.shape[0]
    size = force.shape[0]
    cand_gap, beta, v_bounce, sweeps, tol = prm[0], prm[1], prm[2], int(prm[3]), prm[4]
    fallback_sweeps = int(prm[5])
    v0 = np.zeros(max(nv, 3))
    info[0] = OK
    info[1] = 0.0
    info[2] = 0.0
    info[3] = 0.0
    # free motion
    a = np.empty(nv)
    st = _aba_kernel(mi, mf, ws, q[::1], v[::1], tau[::1], no_forces(buf), a)
    if st != OK:
        info[0] = st
        return
    free_classical(mi, v, a)
    v_free = np.empty(nv)
    for d in range(nv):
        v_free[d] = v[d] + h * a[d]
    g0 = np.empty(size)
    g1 = np.empty(size)
    st = _gaps(mi, mf, ws, q, geo, lim_q, lim_s, lim_b, bC, bI, v0, ncp, g0)
    if st != OK:
        info[0] = st
        return
    q_end = np.empty(nq)
    st = step_configuration(mi, q[::1], v_free[::1], h, q_end, np.empty(nv))
    if st != OK:
        info[0] = st
        return
    st = _gaps(mi, mf, ws, q_end, geo, lim_q, lim_s, lim_b, bC, bI, v0, ncp, g1)
    if st != OK:
        info[0] = st
        return
    cand = np.empty(size, dtype=np.int64)
    k = 0
    for u in range(size):
        vn_out[u] = np.nan
        force[u, 0] = force[u, 1] = force[u, 2] = 0.0
        if g0[u] <= cand_gap or g1[u] <= cand_gap:
            cand[k] = u
            k += 1
    cand = cand[:k]
    info[1] = k
    v1 = v_free.copy()
    if k:
        # rows of the candidates: N (k, nv), T (k, 2, nv)
        J0 = np.zeros((6, nv))
        _joint_jacobians_kernel(mi, mf, ws, q[::1], J0)
        oR, op = unpack_data(ws, nb, nv)[:2]
        N = np.zeros((k, nv))
        T = np.zeros((k, 2, nv))
        gap = np.empty(k)
        mu = np.zeros(k)
        e = np.zeros(k)
        nc = 0
        for r in range(k):
            if cand[r] < ncp:
                nc += 1
        if nc:
            csel = cand[:nc]                         # contacts come first in the catalog
            V = np.zeros((nb, 6))
            cdn, cdt = np.zeros(nc), np.zeros((nc, 2))
            cpt, cfr = np.empty((nc, 3)), np.empty((nc, 3, 3))
            cbody, cpos, crad, pbody, pR, pp, pext, pair_c, pair_p = geo
            _contact_rows(oR, op, V, V, J0, mask, cbody, cpos, crad, pbody, pR, pp, pext, pair_c, pair_p, csel,
                         False, gap[:nc], N[:nc], T[:nc], cdn, cdt, cpt, cfr)
            for r in range(nc):
                mu[r] = pair_mu[csel[r]]
                e[r] = pair_e[csel[r]]
        nball = bC.shape[0]
        brows = np.zeros((size - ncp - ncl, 3))
        bgap = np.zeros(size - ncp - ncl)
        if nball:
            code = _ball_kernel(bC, bI, q, v0, np.int64(1), bgap, brows, np.zeros(0))
            if code >= 0:
                info[0] = BAD_BALL
                return
        for r in range(nc, k):
            u = cand[r]
            if u < ncp + ncl:
                lk = u - ncp
                gap[r] = g0[u]
                N[r, lim_v[lk]] = lim_s[lk]
            else:
                b = u - ncp - ncl
                gap[r] = bgap[b]
                for c in range(3):
                    N[r, ball_va[b] + c] = brows[b, c]
        # the problem: normals first, then the friction pairs of contacts with mu > 0
        nf = 0
        for r in range(k):
            if mu[r] > 0.0:
                nf += 1
        m = k + 2 * nf
        G = np.zeros((m, nv))
        kinds = np.empty(m, dtype=np.int64)
        mus = np.zeros(m)
        normals = np.empty(m, dtype=np.int64)
        unit = np.empty(m, dtype=np.int64)
        slot = np.empty(m, dtype=np.int64)
        vn = np.empty(k)
        rr = np.empty(m)
        j = k
        for r in range(k):
            G[r] = N[r]
            kinds[r] = lcp.NORMAL
            normals[r] = r
            unit[r] = r
            slot[r] = 0
            s = 0.0
            for d in range(nv):
                s += N[r, d] * v[d]
            vn[r] = s
            if mu[r] > 0.0:
                for t in range(2):
                    G[j] = T[r, t]
                    kinds[j] = lcp.FRICTION if t == 0 else lcp.FRICTION2
                    mus[j] = mu[r]
                    normals[j] = r
                    unit[j] = r
                    slot[j] = t + 1
                    j += 1
        for i in range(m):
            s = 0.0
            for d in range(nv):
                s += G[i, d] * v_free[d]
            rr[i] = s
        for r in range(k):
            u = cand[r]
            # the free motion's curvature: how far the gap at its end misses the linear guess
            curv = g1[u] - g0[u] - h * rr[r]
            if not np.isfinite(curv):
                curv = 0.0
            phi = gap[r]
            b = -(phi + curv) / h if phi >= 0.0 else -(beta * phi + curv) / h
            if e[r] > 0.0 and vn[r] < -v_bounce and phi + h * vn[r] <= 0.0:
                b = max(b, -e[r] * vn[r])
            rr[r] -= b
        # Delassus matrix A = G M^-1 G^T by the Cholesky factor of M
        M = np.empty((nv, nv))
        _crba_kernel(mi, mf, ws, q[::1], M)
        L = np.linalg.cholesky(M)
        Y = np.empty((nv, m))                         # M^-1 G^T
        for i in range(m):
            col = G[i].copy()
            for d in range(nv):                       # L z = g
                s = col[d]
                for c in range(d):
                    s -= L[d, c] * col[c]
                col[d] = s / L[d, d]
            for d in range(nv - 1, -1, -1):           # L^T y = z
                s = col[d]
                for c in range(d + 1, nv):
                    s -= L[c, d] * col[c]
                col[d] = s / L[d, d]
            Y[:, i] = col
        A = G @ Y
        lam = np.empty(m)
        for i in range(m):
            lam[i] = warm[cand[unit[i]], slot[i]]
        lcp._pgs(A, rr, kinds, mus, normals, lam, sweeps, 1e-12)
        res = lcp._residual(A, rr, kinds, mus, normals, lam)
        if res > tol:
            res = lcp._polish_better(A, rr, kinds, mus, normals, lam, res)
        if res > tol:
            # the fallback: Gauss-Seidel carried on (redundant friction rows, e.g. two feet of one
            # rigid body, converge slowly along their null direction), then the polish again
            lcp._pgs(A, rr, kinds, mus, normals, lam, fallback_sweeps, 1e-14)
            res = lcp._polish_better(A, rr, kinds, mus, normals, lam, lcp._residual(A, rr, kinds, mus, normals, lam))
            info[3] = 1.0
        info[2] = res
        for d in range(nv):
            s = 0.0
            for i in range(m):
                s += Y[d, i] * lam[i]
            v1[d] += s
        for u in range(size):
            warm[u, 0] = warm[u, 1] = warm[u, 2] = 0.0
        for i in range(m):
            u = cand[unit[i]]
            warm[u, slot[i]] = lam[i]
            force[u, slot[i]] = lam[i] / h
        for r in range(k):
            vn_out[cand[r]] = vn[r]
    else:
        for u in range(size):
            warm[u, 0] = warm[u, 1] = warm[u, 2] = 0.0
    st = step_configuration(mi, q[::1], v1[::1], h, q_out, v_out)
    if st != OK:
        info[0] = st
        return
    st = _gaps(mi, mf, ws, q_out, geo, lim_q, lim_s, lim_b, bC, bI, v0, ncp, gaps_out)
    if st != OK:
        info[0] = st
