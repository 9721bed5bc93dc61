"""The time-stepping step of ``linkdyn.sim.timestepping`` as one compiled call, for a tree and
for a closed chain.

The same computation as ``TimeStepping._step_python`` (forward dynamics, the gaps at the start
and at the free motion's end, the candidates' rows, the Delassus matrix, Gauss-Seidel with one
polish, semi-implicit Euler on the configuration manifold), with the model's own compiled
kernels called in a row: a Python step costs about thirty NumPy calls, this one none.

A tree (``lbuf`` None) takes q'' from ABA and the Delassus matrix A = G M^-1 G^T from the
tree-sparse factorization M = L^T D L of the CRBA matrix (``linkdyn.dynamics.cholesky``).  A closed chain (``lbuf`` the model's ``_loop_packed``) takes
q'' with the loops closed (``linkdyn.loops._kernels.constrained_solve``, the kernel of
``LoopData.accel``), the impulses' response Z G^T with the loops held
(``constrained_response``: Z the loop-projected inverse inertia of ``contact.dynamics.Response``,
A = G Z G^T), and after the configuration step the projection back onto the loops
(``project_loops``: ``linkdyn.sim.steps.project``'s Newton steps on the loop error and
velocity projection, the same kernels).  The two are two compilations of the same functions:
``lbuf is None`` is decided when Numba compiles (its dead-branch pruning of an argument's
``is None``), so a tree's step compiles and runs none of the loops' code.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._kernels.layout import model_sizes, no_forces, unpack_data, unpack_joint_terms, unpack_packed
from .._kernels.passes import OK, POS, check_inputs, check_q, kinematics_pass
from ..contact import lcp
from ..contact._geom_kernels import geom_rows_kernel
from ..contact.collision._pipeline import collide_at_kinematics, collide_pairs_kernel
from ..contact.rows import INERT, _contact_gaps, _contact_points, _contact_rows
from ..contact.swing_twist import _model_kernel as _ball_kernel
from ..dynamics.aba import _aba_kernel
from ..dynamics.cholesky import _ltdl_factor, _ltdl_inverse_congruence, _ltdl_solve
from ..dynamics.crba import _crba_kernel
from ..dynamics.energy import _energy_kernel
from ..dynamics._friction import any_friction, implicit_friction
from ..dynamics.rnea import _rnea_kernel
from ..kinematics import _joint_jacobians_kernel
from ..loops._kernels import FD, POSITION, VELOCITY
from ..loops.dynamics import _loop_error_packed, _response_packed, _solve_packed
from ..model import joints as J
from ..model.configuration import _difference_kernel, _integrate_kernel, _quat_exp, _rot_apply

#: kernel status beyond the model kernels' own: a ball joint's coordinates are bad
BAD_BALL = 100
#: ... the loops do not close again by the metric Newton steps (``project_loops``): the Python
#: step takes the step (``linkdyn.sim.steps.project`` finishes with ``close_loops``, or raises)
LOOP_STALL = 101


@njit(cache=True)
def project_loops(buf, lbuf, q, v, force, tol, max_iter):
    """(q, v) of a closed chain put back on its loops in place, as ``linkdyn.sim.steps.project``
    does with the model's prepared layer: Newton steps on the loop error in the kinetic-energy
    metric (``constrained_solve``'s POSITION mode, q (+) dq) until its largest entry is <= tol,
    max_iter at most, then v plus its projection in the same metric (VELOCITY mode).  ``force``
    (nloops, 6) is scratch.  Returns a status: LOOP_STALL where the Newton steps leave the error
    above tol (the Python step's ``close_loops`` finishes that)."""
    mi = unpack_packed(buf)[0]
    nq, nv = q.shape[0], v.shape[0]
    zero = np.zeros(nv)             # (the arguments' layouts those of the Python callers': one compile each)
    dq = np.empty(nv)
    q2 = np.empty(nq)
    closed = False
    for _ in range(max_iter):
        if _loop_error_packed(buf, lbuf, q) <= tol:
            closed = True
            break
        st = _solve_packed(buf, lbuf, q[::1], zero[::1], zero[::1], np.int64(POSITION), 0.0, 0.0, dq, force)
        if st != OK:
            return st
        st = _integrate_kernel(mi, q[::1], dq[::1], 1.0, q2)
        if st != OK:
            return st
        q[:] = q2
    if not closed and not _loop_error_packed(buf, lbuf, q) <= tol:
        return LOOP_STALL
    st = _solve_packed(buf, lbuf, q[::1], v[::1], zero[::1], np.int64(VELOCITY), 0.0, 0.0, dq, force)
    if st != OK:
        return st
    for d in range(nv):
        v[d] = v[d] + dq[d]
    return OK


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
def _poses(mi, mf, ws, q, R, p):
    """The bodies' world poses at q into R (nb, 3, 3), p (nb, 3)."""
    nb, nq, nv = model_sizes(mi)
    kinematics_pass(mi, mf, ws, q, q[:0], q[:0], np.int64(POS), np.bool_(True), np.bool_(False))
    oR, op = unpack_data(ws, nb, nv)[:2]
    R[:] = oR
    p[:] = op


@njit(cache=True)
def _set_poses(mi, ws, R, p):
    """The bodies' world poses in ``ws`` set to R, p (``_poses``' output at some q): what the
    narrow phase reads of a kinematics pass at that q, without the pass."""
    nb, nq, nv = model_sizes(mi)
    oR, op = unpack_data(ws, nb, nv)[:2]
    oR[:] = R
    op[:] = p


@njit(cache=True)
def displacement(R0, p0, R1, p1, rho):
    """A bound on how far any point of any geom moves between two poses of the bodies:
    max_b |p1_b - p0_b| + |R1_b - R0_b|_F rho_b (``GeomCatalog.displacement``)."""
    d = 0.0
    for b in range(R0.shape[0]):
        dp, dR = 0.0, 0.0
        for r in range(3):
            dp += (p1[b, r] - p0[b, r]) ** 2
            for c in range(3):
                dR += (R1[b, r, c] - R0[b, r, c]) ** 2
        d = max(d, np.sqrt(dp) + np.sqrt(dR) * rho[b])
    return d


@njit(cache=True)
def match(ia, fa, na, ib, fb, nb, radius, out):
    """For each of the first na contacts of (ia, fa), the contact of (ib, fb) of the same pair
    whose point is nearest, if within radius, else -1 (``GeomCatalog.match``)."""
    for a in range(na):
        best, j = np.inf, -1
        for b in range(nb):
            if ia[a, 0] == ib[b, 0] and ia[a, 1] == ib[b, 1]:
                d = np.sqrt((fa[a, 1] - fb[b, 1]) ** 2 + (fa[a, 2] - fb[b, 2]) ** 2 + (fa[a, 3] - fb[b, 3]) ** 2)
                if d < best:
                    best, j = d, b
        out[a] = j if best <= radius else -1


@njit(cache=True)
def _geom_gaps_after(mi, mf, ws, q1, gk, cand_gap, R0, p0, con_i, con_f, ncg, out, R1, p1):
    """The distances of the step's geom contacts at q1, the configuration the step's motion
    reaches (nan where a contact has no match there): TimeStepping._end_gaps.  R1, p1: the
    bodies' poses at q1 (out)."""
    gi, gf, _, adj, cw, _, rho = gk[:7]
    nb, nq, nv = model_sizes(mi)
    st = check_q(mi, q1)
    if st != OK:
        return st
    _poses(mi, mf, ws, q1, R1, p1)
    disp = displacement(R0, p0, R1, p1, rho)
    ei, ef = np.empty_like(con_i), np.empty_like(con_f)
    # the step's own pairs only, at the kinematics _poses left (their contacts are collide_kernel's)
    n = collide_pairs_kernel(mi, ws, gi, gf, adj, cand_gap + 4.0 * disp, cw, con_i, ncg, ei, ef)
    j = np.empty(ncg, dtype=np.int64)
    match(con_i, con_f, ncg, ei, ef, n, 3.0 * disp + 1e-9, j)
    for r in range(ncg):
        out[r] = ef[j[r], 0] - ef[j[r], 9] if j[r] >= 0 else np.nan
    return OK


@njit(cache=True)
def timestep_kernel(buf, lbuf, q, v, tau, h, geo, mask, pair_mu, pair_e, lim_q, lim_v, lim_s, lim_b, bC, bI, ball_va,
                    prm, warm, gk, gs, extra, q_out, v_out, v_mid, force, vn_out, gaps_out, info, led):
    """One step of h; ``prm`` = (CANDIDATE, BETA, V_BOUNCE, sweeps, tol, fallback sweeps,
    relinearizations, their tolerance, the loops' closure tolerance, their Newton steps at most,
    PEN_PROJECT: deeper penetrations are held, not pushed out, ``_bounds``).  The catalog's units (point contacts, limits, ball
    cones) and the geom contacts (``gk``: the collider's buffers gi, gf, pairs, adj, cw, ci, the
    bodies' radii rho, the rows' maps qsrc, qscale, qoff, vsrc, vscale... see TimeStepping;
    no geoms: ngeom = 0); ``extra`` (size,) marks catalog units to take into the problem besides
    the candidates (``TimeStepping``: those a first try of the step left penetrating).  ``gs`` carries the geom contacts from step to step: con_i (cap, 2),
    con_f (cap, 10) the last step's contacts, P (cap, 4) their impulses (P_n, and the friction as a
    world vector), count (1,) how many, and out: gforce (cap, 3) the step's forces [f_n, f_t1,
    f_t2], gvn (cap,) the normal velocities at the step's start.  Outputs: q_out, v_out, v_mid
    (the velocity the impulses leave, at q: v_out before the free joints' carry into their new
    frames), force (size, 3) = impulses / h, vn_out (size,) the normal velocity at the start of the candidates
    (NaN elsewhere), gaps_out (size,) the gaps at q_out, warm (size, 3) the impulses (for the next
    step), info = (status, number of candidates, residual, 1 if the fallback ran, the smallest
    geom distance at q_out (inf: none), number of geom contacts, relinearizations).  The caller
    refuses a residual above its tolerance (ContactSolverError).  ``led`` = (v_free (nv,), M (nv, nv),
    Pq (nv,), scratch (nloops, 6), the model's ``dof_parent``): the free motion's velocity and, where
    the step has a problem, the mass matrix at q, for the ledger of ``run_kernel``, and (a closed
    chain) the impulses as a generalized impulse G^T lam (an event's loop impulses:
    ``TimeStepping._impact``); the parent dofs order the tree-sparse factorization of M.
    ``lbuf``: None for a tree, the model's ``_loop_packed`` for a closed chain (module docstring);
    q_out, v_out are then on the loops (``project_loops``; status LOOP_STALL where it cannot)."""
    mi, mf, ws = unpack_packed(buf)
    nb, nq, nv = model_sizes(mi)
    ncp = geo[7].shape[0]
    ncl = lim_q.shape[0]
    size = force.shape[0]
    gi, gf, pairs, adj, cw, ci, rho, qsrc, qscale, qoff, vsrc, vscale = gk
    ngeom = gi.shape[0] if pairs.shape[0] else 0
    con_i, con_f, gP, gcount, gforce, gvn = gs
    cand_gap, beta, v_bounce, sweeps, tol = prm[0], prm[1], prm[2], int(prm[3]), prm[4]
    fallback_sweeps, relin, relin_tol = int(prm[5]), int(prm[6]), prm[7]
    pen = prm[10]
    v0 = np.zeros(max(nv, 3))
    info[:] = 0.0
    info[4] = np.inf
    # free motion
    a = np.empty(nv)
    M = np.empty((nv, nv))
    LD = np.empty((nv, nv))
    factored = False            # M at q and its L^T D L in LD
    touched = gcount[0] > 0
    for u in range(size):
        touched = touched or warm[u, 0] != 0.0
    if lbuf is None and touched:
        # the last step touched, so this one will likely need M for its Delassus matrix: the free
        # acceleration from M's tree-sparse factors, M^-1 (tau - rnea(q, v, 0)), which with the
        # factorization costs less than ABA and then CRBA (gymnasium's humanoid: 3.5 against 4.9 us)
        st = check_inputs(mi, q[::1], v[::1], tau[::1], True)
        if st == OK:
            _crba_kernel(mi, mf, ws, q[::1], M)
            LD[:] = M
            st = _ltdl_factor(LD, led[4])
        if st == OK:
            _rnea_kernel(mi, mf, ws, q[::1], v[::1], np.zeros(nv), no_forces(buf), a)
            for d in range(nv):
                a[d] = tau[d] - a[d]
            _ltdl_solve(LD, led[4], a)
            factored = True
    elif lbuf is None:
        st = _aba_kernel(mi, mf, ws, q[::1], v[::1], tau[::1], no_forces(buf), a)
    else:                       # q'' with the loops closed (LoopData.accel: the same kernel)
        st = _solve_packed(buf, lbuf, q[::1], v[::1], tau[::1], np.int64(FD), 0.0, 0.0, a, led[3])
    if st != OK:
        info[0] = st
        return
    R0, p0 = np.empty((nb, 3, 3)), np.empty((nb, 3))
    Ra, pa = np.empty((nb, 3, 3)), np.empty((nb, 3))     # the poses at q_out where a check computed them
    pose_out = 0                # 1: Ra, pa hold the bodies' poses at q_out
    have0 = factored and ngeom > 0
    if have0:                   # CRBA and RNEA at q left the bodies' world poses at q in ws (ABA does not)
        oR, op = unpack_data(ws, nb, nv)[:2]
        R0[:] = oR
        p0[:] = op
    free_classical(mi, v, a)
    v_free = np.empty(nv)
    for d in range(nv):
        v_free[d] = v[d] + h * a[d]
    # the joints' Coulomb friction taken implicitly (``linkdyn.dynamics._friction``; a tree)
    fric = unpack_joint_terms(mi, mf)[1]
    if lbuf is None and any_friction(fric):
        Mf, LDf = M, LD
        if not factored:
            Mf, LDf = np.empty((nv, nv)), np.empty((nv, nv))
            _crba_kernel(mi, mf, ws, q[::1], Mf)
            LDf[:] = Mf
            st = _ltdl_factor(LDf, led[4])
            if st != OK:
                info[0] = st
                return
        implicit_friction(Mf, LDf, led[4], v, h, fric, v_free)
    led[0][:] = v_free
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
    kc = np.int64(0)            # not the literal 0: one compile of _linearize_at, which takes kc
    for u in range(size):
        vn_out[u] = np.nan
        force[u, 0] = force[u, 1] = force[u, 2] = 0.0
        if g0[u] <= cand_gap or g1[u] <= cand_gap or extra[u]:
            cand[kc] = u
            kc += 1
    cand = cand[:kc]
    # the geom contacts that may touch within the step (TimeStepping._geom_units): detected at q
    # with a margin covering the step, their distance at the free motion's end by detection there
    cap = con_i.shape[0]
    ci_now, cf_now = np.empty((cap, 2), dtype=np.int64), np.empty((cap, 10))
    ncg = 0
    disp = 0.0
    if ngeom:
        R1, p1 = np.empty((nb, 3, 3)), np.empty((nb, 3))
        st = check_q(mi, q)
        if st != OK:
            info[0] = st
            return
        _poses(mi, mf, ws, q_end, R1, p1)
        if have0:
            _set_poses(mi, ws, R0, p0)
        else:
            _poses(mi, mf, ws, q, R0, p0)
        disp = displacement(R0, p0, R1, p1, rho)
        margin = cand_gap + 2.0 * disp
        ncg = collide_at_kinematics(mi, ws, gi, gf, pairs, adj, margin, cw, ci, ci_now, cf_now)
    k = kc + ncg
    info[1] = kc
    info[5] = ncg
    v1 = v_free.copy()
    for r in range(ncg):
        gforce[r, 0] = gforce[r, 1] = gforce[r, 2] = 0.0
    if k:
        N = np.zeros((k, nv))
        T = np.zeros((k, 2, nv))
        gap = np.empty(k)
        gend = np.empty(k)                       # the gaps at the free motion's end
        mu = np.zeros(k)
        e = np.zeros(k)
        Pw = np.zeros((k, 3))                    # the warm start
        # rows of the catalog's candidates
        nc = 0
        for r in range(kc):
            if cand[r] < ncp:
                nc += 1
        if nc:
            J0 = np.zeros((6, nv))
            _joint_jacobians_kernel(mi, mf, ws, q[::1], J0)
            oR, op = unpack_data(ws, nb, nv)[:2]
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
        for r in range(nc, kc):
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
        for r in range(kc):
            gend[r] = g1[cand[r]]
            for s in range(3):
                Pw[r, s] = warm[cand[r], s]
        # rows of the geom contacts (their drift at v_free below, only where it is needed)
        frame = np.empty((max(ncg, 1), 3, 3))
        gexact = np.zeros(max(ncg, 1), dtype=np.bool_)        # end distance by detection at q_end
        if ncg:
            nvf = vsrc.shape[0]
            dn, dtg, point = np.empty(ncg), np.empty((ncg, 2)), np.empty((ncg, 3))
            J0g, qfg, vfg, afg = np.zeros((nvf, 6)), np.empty(qsrc.shape[0]), np.empty(nvf), np.empty(nvf)
            st = geom_rows_kernel(mi, mf, ws, qsrc, qscale, qoff, vsrc, vscale, q, v_free, np.bool_(False), gi, gf, ci_now,
                                  cf_now, ncg, J0g, qfg, vfg, afg, gap[kc:], N[kc:], T[kc:], dn, dtg, point, frame)
            if st != OK:
                info[0] = st
                return
            ei, ef = np.empty((cap, 2), dtype=np.int64), np.empty((cap, 10))
            st = check_q(mi, q_end)
            if st != OK:
                info[0] = st
                return
            _set_poses(mi, ws, R1, p1)               # the kinematics at q_end again (the rows moved ws to q)
            ne = collide_pairs_kernel(mi, ws, gi, gf, adj, cand_gap + 4.0 * disp, cw, ci_now, ncg, ei, ef)
            j = np.empty(ncg, dtype=np.int64)
            match(ci_now, cf_now, ncg, ei, ef, ne, 3.0 * disp + 1e-9, j)
            unmatched = False
            for r in range(ncg):
                unmatched = unmatched or j[r] < 0
            if unmatched:
                # a contact the free motion's end does not have: its end gap from the drift at v_free
                # (the rows again, the same, with the velocity pass: seldom needed, so not taken above)
                st = geom_rows_kernel(mi, mf, ws, qsrc, qscale, qoff, vsrc, vscale, q, v_free, np.bool_(True), gi, gf,
                                      ci_now, cf_now, ncg, J0g, qfg, vfg, afg, gap[kc:], N[kc:], T[kc:], dn, dtg, point,
                                      frame)
                if st != OK:
                    info[0] = st
                    return
            for r in range(ncg):
                s = 0.0
                for d in range(nv):
                    s += N[kc + r, d] * v_free[d]
                gend[kc + r] = ef[j[r], 0] - ef[j[r], 9] if j[r] >= 0 else gap[kc + r] + h * s + 0.5 * h * h * dn[r]
                gexact[r] = j[r] >= 0
                mu[kc + r] = cf_now[r, 7]
                e[kc + r] = cf_now[r, 8]
            # the warm start: the last step's impulse of the matched contact (friction as a world vector)
            match(ci_now, cf_now, ncg, con_i, con_f, int(gcount[0]), 3.0 * disp + cand_gap, j)
            for r in range(ncg):
                if j[r] >= 0:
                    Pw[kc + r, 0] = gP[j[r], 0]
                    for t in range(2):
                        Pw[kc + r, 1 + t] = (frame[r, 0, t] * gP[j[r], 1] + frame[r, 1, t] * gP[j[r], 2]
                                             + frame[r, 2, t] * gP[j[r], 3])
        # inert units (``contact.rows.inert``: no motion changes their gap): a zero row, no
        # friction rows, and r >= 0 (``_bounds``): they ask for nothing and get no force
        still = np.zeros(k, dtype=np.bool_)
        for r in range(k):
            big = 0.0
            for d in range(nv):
                big = max(big, abs(N[r, d]))
            if big <= INERT:
                still[r] = True
                mu[r] = 0.0
                for d in range(nv):
                    N[r, d] = 0.0
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
        Gv = np.empty(m)
        for i in range(m):
            s = 0.0
            for d in range(nv):
                s += G[i, d] * v_free[d]
            Gv[i] = s
        _bounds(Gv, gap, gend, vn, e, h, beta, pen, v_bounce, k, rr, still)
        # lam = 0 answers a problem whose every row is content without force (each normal's r at or
        # above 0: no unit closes within the step; the residual at lam = 0 is the solve's own test)
        # and whose warm start is zero: the solve would return it at once, and the check of its
        # motion (the free motion) would read the gaps known already, the catalog's at q_end and
        # the matched geom contacts' distances there.  Then A and the solve are not needed (bodies
        # near each other and not touching: dm_control's humanoid in the air, its limbs near each
        # other, 20.6 -> 17.5 us a step); the step is the same bit for bit
        res = lcp._residual_at_zero(rr, kinds)
        quiet = res <= 1e-12
        for r in range(k):
            for s in range(3):
                quiet = quiet and Pw[r, s] == 0.0
        if quiet and relin:
            for r in range(kc):
                quiet = quiet and not (cand[r] < ncp and g1[cand[r]] < -relin_tol and not still[r])
            for r in range(ncg):
                quiet = quiet and not (gexact[r] and gend[kc + r] < -relin_tol and not still[kc + r])
        lam = np.zeros(m)
        if quiet:
            gcount[1] = gcount[2] = 0                # the memo of lcp._kept_solve, as its answer at round-off
            v1[:] = v_free
            if ncg:                                  # q_out is q_end, whose poses the detection took
                Ra[:] = R1
                pa[:] = p1
                pose_out = 1
            if lbuf is not None:
                led[2][:] = 0.0
        else:
            # Delassus matrix A = G M^-1 G^T
            if not factored:
                _crba_kernel(mi, mf, ws, q[::1], M)
            led[1][:] = M
            A = np.empty((m, m))
            if lbuf is None:
                # by the tree-sparse factorization M = L^T D L (Featherstone 2008, sec. 6.5), which
                # keeps a row of G on its body's ancestors (dm_control's humanoid: 12.1 -> 8.9 us with
                # CRBA): Zt = rows of M^-1 G^T, the response itself, A = G M^-1 G^T
                if not factored:
                    LD[:] = M
                    st = _ltdl_factor(LD, led[4])
                    if st != OK:
                        info[0] = st
                        return
                Y = np.empty((nv, m))
                _ltdl_inverse_congruence(LD, led[4], G, Y, A)
                Zt = np.empty((m, nv))
                for i in range(m):
                    for d in range(nv):
                        Zt[i, d] = Y[d, i]
            else:
                # with the loops held: Zt = rows of Z G^T (the loop-projected inverse inertia, M alone is
                # singular on the cut joints), A = G Z G^T as the Python step's G @ ZF
                Zt = np.empty((m, nv))
                st = _response_packed(buf, lbuf, q, G, Zt)
                if st != OK:
                    info[0] = st
                    return
                for i in range(m):
                    for j in range(m):
                        t = 0.0
                        for d in range(nv):
                            t += G[i, d] * Zt[j, d]
                        A[i, j] = t
            for i in range(m):
                lam[i] = Pw[unit[i], slot[i]]
            res = 0.0
            nrel = relin
            if nrel:
                # linearize at the motion the warm start gives (the last step's impulses), not at the
                # free motion: a body resting on its contacts ends its step close to it, which spares
                # most steps the relinearizations below
                anywarm = False
                for i in range(m):
                    if lam[i] != 0.0:
                        anywarm = True
                if anywarm:
                    st = _linearize_at(mi, mf, ws, q, v_free, h, lam, Zt, N, geo, lim_q, lim_s, lim_b, bC, bI, v0, ncp, gk,
                                       cand_gap, R0, p0, ci_now, cf_now, ncg, cand, kc, size, gend, v1, np.bool_(True),
                                       relin_tol, Ra, pa, still)
                    if st < 0:
                        info[0] = -st
                        return
                    _bounds(Gv, gap, gend, vn, e, h, beta, pen, v_bounce, k, rr, still)
            for it in range(1 + nrel):
                res, fell = lcp._kept_solve(A, rr, kinds, mus, normals, lam, sweeps, tol, fallback_sweeps, gcount[1:])
                info[3] = max(info[3], fell)
                if it == nrel:
                    break
                # the curvature was that of a guessed motion: where the answer's own motion would
                # penetrate, take the curvature of that motion and solve again (A is the same)
                st = _linearize_at(mi, mf, ws, q, v_free, h, lam, Zt, N, geo, lim_q, lim_s, lim_b, bC, bI, v0, ncp, gk,
                                   cand_gap, R0, p0, ci_now, cf_now, ncg, cand, kc, size, gend, v1, np.bool_(False),
                                   relin_tol, Ra, pa, still)
                if st < 0:
                    info[0] = -st
                    return
                if st == 0:
                    pose_out = 1 if ncg else 0      # the answer's motion, checked: its end is q_out
                    break
                info[6] += 1
                _bounds(Gv, gap, gend, vn, e, h, beta, pen, v_bounce, k, rr, still)
            _impulse_velocity(Zt, lam, v_free, v1)
            if lbuf is not None:
                Pq = led[2]                             # G^T lam: an event's loop impulses are its response
                for d in range(nv):
                    s = 0.0
                    for i in range(m):
                        s += G[i, d] * lam[i]
                    Pq[d] = s
        info[2] = res
        for u in range(size):
            warm[u, 0] = warm[u, 1] = warm[u, 2] = 0.0
        P = np.zeros((k, 3))
        for i in range(m):
            P[unit[i], slot[i]] = lam[i]
        for r in range(kc):
            u = cand[r]
            vn_out[u] = vn[r]
            for s in range(3):
                warm[u, s] = P[r, s]
                force[u, s] = P[r, s] / h
        for r in range(ncg):
            gvn[r] = vn[kc + r]
            gP[r, 0] = P[kc + r, 0]
            for s in range(3):
                gforce[r, s] = P[kc + r, s] / h
                gP[r, 1 + s] = frame[r, s, 0] * P[kc + r, 1] + frame[r, s, 1] * P[kc + r, 2]
    else:
        for u in range(size):
            warm[u, 0] = warm[u, 1] = warm[u, 2] = 0.0
    for r in range(ncg):
        con_i[r, 0], con_i[r, 1] = ci_now[r, 0], ci_now[r, 1]
        for s in range(10):
            con_f[r, s] = cf_now[r, s]
    gcount[0] = ncg
    v_mid[:] = v1
    st = step_configuration(mi, q[::1], v1[::1], h, q_out, v_out)
    if st != OK:
        info[0] = st
        return
    if lbuf is not None:
        # back onto the loops (TimeStepping._step_python: steps.project, CLOSURE_TOL and 10 iterations)
        st = project_loops(buf, lbuf, q_out, v_out, led[3], prm[8], int(prm[9]))
        if st != OK:
            info[0] = st
            return
    st = _gaps(mi, mf, ws, q_out, geo, lim_q, lim_s, lim_b, bC, bI, v0, ncp, gaps_out)
    if st != OK:
        info[0] = st
        return
    if ngeom:
        # the smallest distance at q_out: a pair the detection at q left out was farther than its
        # margin there, and moves closer by at most twice the displacement D from q to q_out; where
        # 2 D is within the margin, only the step's own pairs can touch (collide_pairs_kernel: the
        # same contacts as the whole pipeline's, without its broad phase)
        st = check_q(mi, q_out)
        if st != OK:
            info[0] = st
            return
        R2, p2 = Ra, pa
        if pose_out and lbuf is None:       # (a closed chain's q_out was projected onto its loops)
            _set_poses(mi, ws, R2, p2)
        else:
            _poses(mi, mf, ws, q_out, R2, p2)
        if 2.0 * displacement(R0, p0, R2, p2, rho) <= cand_gap + 2.0 * disp:
            n = collide_pairs_kernel(mi, ws, gi, gf, adj, 0.0, cw, con_i, ncg, ci_now, cf_now)
        else:
            n = collide_at_kinematics(mi, ws, gi, gf, pairs, adj, 0.0, cw, ci, ci_now, cf_now)
        for r in range(n):
            info[4] = min(info[4], cf_now[r, 0] - cf_now[r, 9])


@njit(cache=True)
def _impulse_velocity(Zt, lam, v_free, v1):
    """v1 = v_free + Zt^T lam, Zt the rows of the response to the rows' impulses: M^-1 G^T for a
    tree, Z G^T with the loops held for a closed chain."""
    nv, m = v_free.shape[0], lam.shape[0]
    for d in range(nv):
        v1[d] = v_free[d]
    for i in range(m):
        if lam[i] != 0.0:
            for d in range(nv):
                v1[d] += Zt[i, d] * lam[i]


@njit(cache=True)
def _linearize_at(mi, mf, ws, q, v_free, h, lam, Zt, N, geo, lim_q, lim_s, lim_b, bC, bI, v0, ncp, gk, cand_gap,
                  R0, p0, ci_now, cf_now, ncg, cand, kc, size, gend, v1, always, relin_tol, Ra, pa, still):
    """The gaps at the end of the motion the impulses lam give, v1 = v_free + M^-1 G^T lam
    (Zt = rows of M^-1 G^T, ``_impulse_velocity``), taken as the problem's curvature: gend = gap at that end + h N (v_free - v1)
    (the bound of ``_bounds`` then reproduces that end's gap for the motion v1).  ``always``:
    take it; else only where that motion would end below -relin_tol somewhere (both calls pass
    ``always`` as np.bool_ and relin_tol as a float: one compiled signature, not one per literal).  Returns 1 if
    gend changed, 0 if not, -status on a bad configuration.  Ra, pa: the bodies' poses at that end
    (out; only where there are geom contacts, ncg > 0).  ``still``: the inert units, whose gap no
    motion mends (their end is not looked at)."""
    nq, nv = q.shape[0], v_free.shape[0]
    k = N.shape[0]
    _impulse_velocity(Zt, lam, v_free, v1)
    end = np.full(k, np.nan)
    qa = np.empty(nq)
    st = step_configuration(mi, q[::1], v1[::1], h, qa, np.empty(nv))      # the layout of the other calls
    if st != OK:
        return -st
    ga = np.empty(size)
    st = _gaps(mi, mf, ws, qa, geo, lim_q, lim_s, lim_b, bC, bI, v0, ncp, ga)
    if st != OK:
        return -st
    for r in range(kc):
        if cand[r] < ncp:               # contact pairs; a limit keeps the free motion's curvature
            end[r] = ga[cand[r]]
    if ncg:
        st = _geom_gaps_after(mi, mf, ws, qa, gk, cand_gap, R0, p0, ci_now, cf_now, ncg, end[kc:], Ra, pa)
    else:
        st = check_q(mi, qa)
    if st != OK:
        return -st
    if not always:
        low = np.inf
        for r in range(k):
            if end[r] < low and not still[r]:
                low = end[r]
        if not low < -relin_tol:
            return 0
    for r in range(k):
        if np.isfinite(end[r]):
            s = 0.0
            for d in range(nv):
                s += N[r, d] * (v_free[d] - v1[d])
            gend[r] = end[r] + h * s
    return 1



@njit(cache=True)
def restitution_bound(phi, vn, an, e, h):
    """The normal velocity a unit that touches within the step leaves it with: Newton's law
    at the touch, not at the step's start.  The unit at gap phi >= 0 approaches at vn < 0 under
    the free motion's normal acceleration an; it touches at v_i, v_i^2 = vn^2 - 2 an phi,
    leaves at e |v_i|, and the step moves it by h times the velocity vn+ it ends with, from phi
    (q+ = q (+) h v+).  vn+ is the velocity whose end of the step has the energy of the rebound
    in the normal direction, 1/2 vn+^2 - an (phi + h vn+) = 1/2 e^2 v_i^2 (a rebound from the
    gap at the step's start would be (1 + e) phi too high: 1.4 % of e^2 h for a ball dropped
    0.9 m with e = 0.5 and dt = 1 ms).  Without an it is e |vn|."""
    vi2 = vn * vn - 2.0 * an * phi
    d = an * an * h * h + 2.0 * an * phi + e * e * max(vi2, 0.0)
    return an * h + np.sqrt(max(d, 0.0))


@njit(cache=True)
def _bounds(Gv, gap, gend, vn, e, h, beta, pen, v_bounce, k, rr, still):
    """r = G v_free - b with the bound b of each unit (module docstring of timestepping): the
    speculative gap phi + c, a gentle push out of a penetration down to ``pen`` (PEN_PROJECT),
    a deeper one held (no deeper, no push-out: the projection's to mend), Newton's restitution;
    r >= 0 for an inert unit (``still``: its row is zero, nothing can change its gap)."""
    for i in range(Gv.shape[0]):
        rr[i] = Gv[i]
    for r in range(k):
        # the free motion's curvature: how far the gap at its end misses the linear guess
        curv = gend[r] - gap[r] - h * Gv[r]
        if not np.isfinite(curv):
            curv = 0.0
        phi = gap[r]
        b = -(phi + curv) / h if phi >= 0.0 else -(beta * phi + curv) / h if phi >= -pen else -curv / h
        if e[r] > 0.0 and vn[r] < -v_bounce and phi + h * vn[r] <= 0.0:
            b = max(b, restitution_bound(phi, vn[r], (Gv[r] - vn[r]) / h, e[r], h))
        rr[r] -= b
        if still[r] and rr[r] < 0.0:
            rr[r] = 0.0


@njit(cache=True)
def run_kernel(buf, lbuf, q, v, tau, h, nsteps, geo, mask, pair_mu, pair_e, lim_q, lim_v, lim_s, lim_b, bC, bI, ball_va,
               prm, warm, gk, gs, limit, unit_mu, damping, friction, force, vn, gaps, acc, ev, rec, dof_parent, ebuf):
    """Up to nsteps ordinary steps of h with no Python between them (``TimeStepping.run``): a
    step is ordinary when the kernel took it (status 0), its answer meets LCP_TOL (prm[11]), no
    penetration or limit overshoot is left beyond PEN_PROJECT (prm[12]); the first step that is not
    is undone (its warm starts restored) and left to the caller's single step, which projects or
    raises.
    q, v advance in place.  acc accumulates what ``Simulation`` keeps per step: [steps taken,
    energy the impulses put in, energy the joints' damping and friction took, the torques' work,
    largest limit overshoot, deepest penetration, smallest normal force, largest friction/cone
    ratio, most energy one step's contacts put in, steps with forces, steps in contact, largest residual,
    steps whose first solve missed its tolerance, relinearizations, the last step's residual, steps
    taken again with the units their first try left penetrating, the impacts recorded].
    An impact (a unit hit faster than V_REPORT, ``TimeStepping._step_compiled``'s test) is taken,
    and what its event needs is kept in row j (the impacts so far) of the arrays of ``ev`` = (q and
    v at its start, its velocity, which units (catalog, then geom contacts) were hit, for a closed
    chain its generalized impulse G^T lam, the units' forces, the geom contacts' forces and pairs,
    the steps taken in the call with it, the number of geom contacts); the call ends after the
    impact that fills them.  ``lbuf``: as ``timestep_kernel``'s (None: a tree); ``dof_parent``: the
    model's (``timestep_kernel``'s ``led``); ``ebuf``: the model's own packed buffer, for the samples'
    energies (``buf`` is the step's: its armature holds h D of implicit damping, ``TimeStepping._implicit``).

    ``rec`` records samples in the call (``Simulation``'s ``record_every``; ``_record_samples``):
    (ctl, S, Q, V, F, G, W, GO, GI, GX, P, E) with ctl = [every (0: none), the steps before the call
    since the last sample's phase, samples written, geom rows written], and per sample j: S[j] the
    steps taken in the call when it was written, Q[j], V[j] the state, F[j] (size, 3) the step's
    forces, G[j] (size,) its end's gaps, W[j] = (torques' work less the joints' losses, the
    contacts' work) so far in the call, and its geom contacts that took a force, rows
    GO[j]:GO[j + 1] of GI (pairs) and GX (point, normal, world force geom 1 exerts on geom 2), and
    P[j] (size, 3) the units' contact points (zero for limits), E[j] the kinetic and potential
    energy.  A call ends before a step whose
    sample might not fit."""
    mi, mf, ws = unpack_packed(buf)
    emi, emf, ews = unpack_packed(ebuf)
    nb, nq, nv = model_sizes(mi)
    jtype, vadr = mi[1], mi[3]
    free = np.zeros(nv, dtype=np.bool_)
    for i in range(1, mi.shape[1]):
        if jtype[i] == J.FREE:
            for d in range(vadr[i], vadr[i] + 6):
                free[d] = True
    fail_tol, pen, v_report = prm[11], prm[12], prm[13]
    con_i, con_f, gP, gcount, gforce, gvn = gs
    size = force.shape[0]
    q1, v1, vm, vf = np.empty(nq), np.empty(nv), np.empty(nv), np.empty(nv)
    info = np.empty(7)
    extra = np.zeros(size, dtype=np.bool_)
    M = np.empty((nv, nv))
    Pq, lforce = np.zeros(nv), np.empty((0 if lbuf is None else _loop_count(lbuf), 6))
    dq = np.empty(nv)
    ext, gmu = np.empty(4), np.empty(con_i.shape[0])
    warm0, ci0, cf0, gP0 = np.empty_like(warm), np.empty_like(con_i), np.empty_like(con_f), np.empty_like(gP)
    ctl, rS, rQ, rV, rF, rG, rW, rGO, rGI, rGX, rP, rE = rec
    EQ, EV, EVM, EH, EP, EF, EG, EI, ES, EN = ev
    hit = np.zeros(EH.shape[1], dtype=np.bool_)
    every = ctl[0]
    cap = con_i.shape[0]
    for step in range(nsteps):
        if every > 0 and (ctl[2] >= rS.shape[0] or ctl[3] + cap > rGI.shape[0]):
            return                          # the recording buffers are full: the caller goes on
        warm0[:] = warm                     # the step's warm starts, to undo it (allocated once)
        n0, memo0, memo1 = gcount[0], gcount[1], gcount[2]
        ci0[:n0] = con_i[:n0]               # the carried geom contacts (the rows past n0 are not read:
        cf0[:n0] = con_f[:n0]               # dm_control's humanoid has room for 277)
        gP0[:n0] = gP[:n0]
        extra[:] = False
        for attempt in range(2):
            timestep_kernel(buf, lbuf, q, v, tau, h, geo, mask, pair_mu, pair_e, lim_q, lim_v, lim_s, lim_b, bC, bI,
                            ball_va, prm, warm, gk, gs, extra, q1, v1, vm, force, vn, gaps, info, (vf, M, Pq, lforce, dof_parent))
            if attempt == 1 or info[0] != 0 or not _missed(gaps, vn, pen, extra):
                break
            warm[:] = warm0                   # again, with the units the first try left penetrating
            con_i[:n0] = ci0[:n0]
            con_f[:n0] = cf0[:n0]
            gP[:n0] = gP0[:n0]
            gcount[0], gcount[1], gcount[2] = n0, memo0, memo1
            acc[15] += 1.0
        ng = int(info[5])
        special = info[0] != 0 or info[2] > fail_tol or info[4] < -pen
        impact = False
        for u in range(size):
            if gaps[u] < -pen:
                special = True
            hit[u] = force[u, 0] > 0.0 and vn[u] < -v_report and warm0[u, 0] <= 0.0
            impact = impact or hit[u]
        for r in range(ng):
            hit[size + r] = gforce[r, 0] > 0.0 and gvn[r] < -v_report and con_f[r, 0] - con_f[r, 9] <= -h * gvn[r]
            impact = impact or hit[size + r]
        if special:
            warm[:] = warm0
            con_i[:n0] = ci0[:n0]
            con_f[:n0] = cf0[:n0]
            gP[:n0] = gP0[:n0]
            gcount[0], gcount[1], gcount[2] = n0, memo0, memo1
            return
        # the ledger (TimeStepping._impulse_work, Simulation.step): the impulses' work from the free
        # motion's velocity, the joints' losses at the step's velocity, the torques' work
        pushing = False
        forces = False
        for u in range(size):
            if force[u, 0] != 0.0 or force[u, 1] != 0.0 or force[u, 2] != 0.0:
                forces = True
            if force[u, 0] > 0.0:
                pushing = True
        for r in range(ng):
            if gforce[r, 0] != 0.0 or gforce[r, 1] != 0.0 or gforce[r, 2] != 0.0:
                forces = True
            if gforce[r, 0] > 0.0:
                pushing = True
        w = 0.0
        if forces:                          # (vf, M: the step's own free motion and mass matrix)
            w = impulse_work(M, vm, vf, v)
        loss, tw = 0.0, 0.0
        for d in range(nv):
            loss += v1[d] * damping[d] * v1[d] + abs(v1[d]) * friction[d]
            if not free[d]:
                tw += tau[d] * h * vm[d]
        if lbuf is not None:
            # the projection onto the loops moved q: the torques' work over the step's displacement,
            # tau . (q1 - q) (Simulation.step's)
            tw = 0.0
            _difference_kernel(mi, q[::1], q1[::1], dq)
            for d in range(nv):
                tw += tau[d] * dq[d]
        acc[0] += 1.0
        acc[1] += w
        acc[2] += h * loss
        acc[3] += tw
        # the running extremes (Simulation._watch)
        for r in range(ng):
            gmu[r] = con_f[r, 7]
        step_extremes(gaps, limit, info[4], force, unit_mu, gforce[:ng], gmu[:ng], ext)
        acc[4] = max(acc[4], ext[0])
        acc[5] = max(acc[5], ext[1])
        acc[6] = min(acc[6], ext[2])
        acc[7] = max(acc[7], ext[3])
        if size or gk[0].shape[0]:
            acc[9] += 1.0
        acc[8] = max(acc[8], w)
        if pushing:
            acc[10] += 1.0
        acc[11] = max(acc[11], info[2])
        acc[12] += info[3]
        acc[13] += info[6]
        acc[14] = info[2]
        if impact:                          # its event's data, for the caller to build it
            j = int(acc[16])
            EQ[j] = q
            EV[j] = v
            EVM[j] = vm
            EP[j] = Pq
            EH[j] = hit
            EF[j] = force
            EN[j] = ng
            ES[j] = int(acc[0])
            for r in range(ng):
                EI[j, r, 0], EI[j, r, 1] = con_i[r, 0], con_i[r, 1]
                for c in range(3):
                    EG[j, r, c] = gforce[r, c]
            acc[16] += 1.0
        q[:] = q1
        v[:] = v1
        if every > 0 and (ctl[1] + int(acc[0])) % every == 0:
            _record_sample(rec, int(acc[0]), q, v, force, gaps, acc[3] - acc[2], acc[1], con_i, con_f, gP, gforce,
                           ng, h, emi, emf, ews, geo)
        if impact and int(acc[16]) == EQ.shape[0]:
            return                          # the impacts' buffers are full


@njit(cache=True)
def _loop_count(lbuf):
    """The number of loops in a packed loop buffer (``layout.pack_loops``: its header's first int64)."""
    return lbuf[:1].view(np.int64)[0]


@njit(cache=True)
def step_flags(force, vn, prev, gforce, gvn, con_f, ng, h, v_report, gaps, pen, hit):
    """What ``TimeStepping._step_compiled`` tests after a compiled step, in one call: bit 1 a unit
    outside the problem (vn NaN) ends it deeper than ``pen``; 2 a unit or geom contact pushes; 4
    one of them is hit (``hit`` (size + ng,) flags which: a pushing unit that approached faster
    than ``v_report`` and did not push before (``prev`` its last normal impulse), a pushing geom
    contact that approached faster and touched within the step); 8 some force is not zero; 16
    some gap at the end is below -``pen`` (the projection)."""
    size = force.shape[0]
    out = 0
    for u in range(size):
        hit[u] = False
        if gaps[u] < -pen:
            out |= 16
            if np.isnan(vn[u]):
                out |= 1
        if force[u, 0] != 0.0 or force[u, 1] != 0.0 or force[u, 2] != 0.0:
            out |= 8
        if force[u, 0] > 0.0:
            out |= 2
            if vn[u] < -v_report and prev[u] <= 0.0:
                hit[u] = True
                out |= 4
    for r in range(ng):
        hit[size + r] = False
        if gforce[r, 0] != 0.0 or gforce[r, 1] != 0.0 or gforce[r, 2] != 0.0:
            out |= 8
        if gforce[r, 0] > 0.0:
            out |= 2
            if gvn[r] < -v_report and con_f[r, 0] - con_f[r, 9] <= -h * gvn[r]:
                hit[size + r] = True
                out |= 4
    return out


@njit(cache=True)
def step_extremes(gaps, limit, gmin, force, unit_mu, gforce, gmu, out):
    """One step's part of the running extremes (``Recording.extremes``), the same sums for a
    single step (``Simulation._watch``) and a compiled run (``run_kernel``): out = [the largest
    limit overshoot, the deepest penetration (of the units' gaps at the step's end, finite ones,
    and of gmin, the geom contacts' smallest distance; 0 if none), the smallest normal force
    (inf if none), the largest friction / cone ratio of a pushing contact with friction (0 if
    none)]; force (n, 3) as (f_n, f_t1, f_t2) with friction coefficients unit_mu, the geom
    contacts' gforce and gmu alike."""
    lim, pen, fmin, ratio = 0.0, max(0.0, -gmin), np.inf, 0.0
    for u in range(gaps.shape[0]):
        if limit[u]:
            lim = max(lim, -gaps[u])
        elif np.isfinite(gaps[u]):
            pen = max(pen, -gaps[u])
    for u in range(force.shape[0] + gforce.shape[0]):
        if u < force.shape[0]:
            f0, f1, f2, mu = force[u, 0], force[u, 1], force[u, 2], unit_mu[u]
        else:
            r = u - force.shape[0]
            f0, f1, f2, mu = gforce[r, 0], gforce[r, 1], gforce[r, 2], gmu[r]
        fmin = min(fmin, f0)
        if f0 > 0.0 and mu > 0.0:
            ratio = max(ratio, np.sqrt(f1 * f1 + f2 * f2) / (mu * f0))
    out[0], out[1], out[2], out[3] = lim, pen, fmin, ratio


@njit(cache=True)
def _record_sample(rec, k, q, v, force, gaps, work_j, work_c, con_i, con_f, gP, gforce, ng, h, mi, mf, ws, geo):
    """Write one sample into ``rec`` (``run_kernel``): the geom contacts with a force only, their
    world force n f_n + (the friction impulse as a world vector) / h, in the step's own frame; the
    contact pairs' points at q (``UnitCatalog.points``: the same kinematics pass) and the kinetic and
    potential energy (the kernel of ``Simulation._energy_pair``)."""
    ctl, rS, rQ, rV, rF, rG, rW, rGO, rGI, rGX, rP, rE = rec
    j, o = ctl[2], ctl[3]
    _energy_kernel(mi, mf, ws, q, v, rE[j])      # (the kinetic and potential energy of _energy_pair)
    cbody, cpos, crad, pbody, pR, pp, pext, pair_c, pair_p = geo
    if pair_c.shape[0]:
        nb, nq, nv = model_sizes(mi)
        kinematics_pass(mi, mf, ws, q, q[:0], q[:0], np.int64(POS), np.bool_(True), np.bool_(False))
        oR, op = unpack_data(ws, nb, nv)[:2]
        _contact_points(oR, op, cbody, cpos, crad, pbody, pR, pp, pair_c, pair_p, rP[j, :pair_c.shape[0]])
    rS[j] = k
    rQ[j] = q
    rV[j] = v
    rF[j] = force
    rG[j] = gaps
    rW[j, 0] = work_j
    rW[j, 1] = work_c
    rGO[j] = o
    for r in range(ng):
        if gforce[r, 0] != 0.0 or gforce[r, 1] != 0.0 or gforce[r, 2] != 0.0:
            rGI[o, 0], rGI[o, 1] = con_i[r, 0], con_i[r, 1]
            for c in range(3):
                rGX[o, c] = con_f[r, 1 + c]
                rGX[o, 3 + c] = con_f[r, 4 + c]
                rGX[o, 6 + c] = con_f[r, 4 + c] * gforce[r, 0] + gP[r, 1 + c] / h
            o += 1
    rGO[j + 1] = o
    ctl[2] = j + 1
    ctl[3] = o


@njit(cache=True)
def impulse_work(M, vm, vf, v):
    """The impulses' work on the step (``TimeStepping._impulse_work``) from its mass matrix M, the
    velocity vm they leave, the free motion's vf and the step's start v: T(vm) - T(vf) +
    min(T(vm - vf), T(vf - v)), T(x) = x^T M x / 2 (the same sums in every caller and process)."""
    nv = M.shape[0]
    T1, Tf, Tj, Tg = 0.0, 0.0, 0.0, 0.0
    for r in range(nv):
        for c in range(nv):
            T1 += vm[r] * M[r, c] * vm[c]
            Tf += vf[r] * M[r, c] * vf[c]
            Tj += (vm[r] - vf[r]) * M[r, c] * (vm[c] - vf[c])
            Tg += (vf[r] - v[r]) * M[r, c] * (vf[c] - v[c])
    return 0.5 * (T1 - Tf + min(Tj, Tg))


@njit(cache=True)
def _missed(gaps, vn, pen, extra):
    """Mark in ``extra`` the units that were not in the step's problem (vn NaN) and end it
    penetrating beyond pen (a limit the other units' impulses drive a joint into); True if any."""
    hit = False
    for u in range(gaps.shape[0]):
        if gaps[u] < -pen and np.isnan(vn[u]):
            extra[u] = True
            hit = True
    return hit
