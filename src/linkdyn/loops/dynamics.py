"""Dynamics of closed chains (Nakamura and Yamane 2000, secs. 2.1-2.4) and the Lagrange-multiplier form of the constrained equations of motion.

Inverse dynamics through the virtually cut open chain (Nakamura and Yamane 2000 eqs. 1-4):

    tau_O = RNEA(theta_J, theta_J', theta_J'')     every joint of the cut tree driven
    tau_G = W^T tau_O                              (1)  generalized forces
    tau_G = S^T tau_A                              (2)  actuator torques

Forward dynamics, three ways that agree on a closed, velocity-consistent state:

* ``"unit_vector"`` (sec. 2.4, eqs. 17-19): b = W^T tau_O at theta_G'' = 0, then column i of
  A = W^T tau_O at theta_G'' = e_i minus b, each by RNEA; theta_G'' = A^-1 (tau_G - b);
* ``"projected"``: the same A = W^T M W from one CRBA and b from one RNEA;
* ``"kkt"``: the Lagrange-multiplier form of the constrained equations of motion on all of theta_J,
  ``[M  J^T; J  0] [theta''; -lambda] = [tau - b; -J' theta' + stabilization]``,
  which needs no W and is the default: :func:`constrained_dynamics`, one compiled kernel
  (tree-sparse factorization of M, cut joints eliminated, redundant rows pivoted out).

Torques: ``tau`` is the applied joint torque of every velocity of the tree (nv,; zero for
passive joints), or, with ``actuated`` (joint names), the actuator torques tau_A (N_A,).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Sequence, overload

import numpy as np
from numba import carray as _carray, njit as _njit, types as _nt

from .._api import (_F64, _ND, MF, MI, OUT1, OUT2, PACKED, SERIAL_BELOW, VEC, WS, Entry, as_states, batch_workspace,
                    raise_for_status)
from .._kernels.layout import (LOOP_HEADER, _as_readonly, _int_address, _view, pack_loops,  # noqa: F401 (pack_loops: re-export)
                               unpack_packed as _unpack_packed)
from ..dynamics.crba import crba
from ..dynamics.rnea import rnea
from ._kernels import (ACC, FD, POS, POSITION, SINGULAR, VEL, VELOCITY, constrained_response as _constrained_response,
    constrained_solve as _constrained_solve, constrained_solve_batch as _constrained_solve_batch,
    loop_terms as _loop_terms)
from .kinematics import (RANK_TOL, _need_loops, _single, _terms, analyze, dof_indices, independent_rows)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model
    from .kinematics import LoopAnalysis

METHODS = ("kkt", "projected", "unit_vector")


@dataclass
class ClosedChainID:
    """Result of :func:`inverse_dynamics`: ``tau_A`` (N_A,) actuator torques, ``tau_G`` (N_F,)
    generalized forces, ``tau_O`` (nv,) torques of the cut open chain, ``lam`` (6 nloops,) the
    constraint forces: for every loop the spatial force [f; n] that the real link exerts on
    the virtual link, in the virtual link's frame (the cut joint's reaction); ``residual`` the
    part of tau_G the actuators cannot produce (zero unless under-actuated);
    ``analysis`` the :class:`LoopAnalysis` used."""
    tau_A: np.ndarray
    tau_G: np.ndarray
    tau_O: np.ndarray
    lam: np.ndarray
    residual: float
    analysis: object

    def loop_forces(self) -> NDArray[np.float64]:
        """(nloops, 6): ``lam`` per loop."""
        return self.lam.reshape(-1, 6)


def _full_tau(model, tau, actuated):
    """Applied torques on every velocity from ``tau`` (nv,) or, with ``actuated``, tau_A."""
    tau = np.asarray(tau, dtype=float)
    if actuated is None:
        if tau.shape != (model.nv,):
            raise ValueError(f"tau: expected shape ({model.nv},) (a torque on every velocity of the tree; "
                             f"or pass actuated=[joint names] and the actuator torques), got {tau.shape}")
        if not np.isfinite(tau).all():
            raise ValueError("tau: contains NaN or infinity")
        return tau
    A = dof_indices(model, actuated, "actuated")
    if tau.shape != (len(A),):
        raise ValueError(f"tau: expected the {len(A)} actuator torques of {list(actuated)}, got shape {tau.shape}")
    if not np.isfinite(tau).all():
        raise ValueError("tau: contains NaN or infinity")
    full = np.zeros(model.nv)
    full[A] = tau
    return full


def _check_consistent(model, JC, bias, v, a, tol):
    scale = max(1.0, np.abs(JC).max() * (np.abs(v).max() + np.abs(a).max()))
    rv = np.abs(JC @ v).max() if JC.size else 0.0
    ra = np.abs(JC @ a + bias).max() if JC.size else 0.0
    if rv > tol * scale:
        raise ValueError(f"v: violates the loop constraints (|J_C v| = {rv:.3g}); use linkdyn.loops.project_velocity "
                         "or velocities built from theta_G' with H")
    if ra > tol * scale:
        raise ValueError(f"a: violates the loop constraints (|J_C a + J_C' v| = {ra:.3g}); build a from "
                         "theta_G'' with LoopAnalysis.accelerations (Nakamura and Yamane 2000 eq. 13)")


def _check_closed(model, e, JC, v, tol):
    """The W-based forms hold on the constraint manifold only."""
    scale = max(1.0, np.abs(JC).max() * np.abs(v).max())
    if np.abs(e).max() > tol:
        raise ValueError(f"q: the loops are open (error {np.abs(e).max():.3g}); close them first "
                         "(linkdyn.loops.close_loops) or use method='kkt'")
    if JC.size and np.abs(JC @ v).max() > tol * scale:
        raise ValueError(f"v: violates the loop constraints (|J_C v| = {np.abs(JC @ v).max():.3g}); use "
                         "linkdyn.loops.project_velocity or method='kkt'")


def inverse_dynamics(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike, actuated: str | Sequence[str], weights: ArrayLike | None = None,
                     analysis: LoopAnalysis | None = None, tol: float = 1e-8) -> ClosedChainID:
    """Actuator torques for the motion (q, v, a) of a closed chain (Nakamura and Yamane 2000 eqs. 1-4).

    ``a`` is the acceleration of every velocity (nv,), consistent with the loops
    (``LoopAnalysis.accelerations(qdd_G, loop_bias(q, v))`` builds one from theta_G'').
    ``actuated``: joint names.  With as many actuators as degrees of freedom, S^T tau_A =
    tau_G is solved exactly; with more (redundant actuation), tau_A is the minimum-norm
    solution, weighted by ``weights`` (N_A,: minimizes sum tau_A^2 / weights... i.e.
    tau_A^T diag(1/weights) tau_A) (Nakamura and Yamane 2000 ref. [8]); with fewer, a motion the actuators
    cannot produce raises ValueError (a producible one is solved exactly).  The constraint
    forces are those of the Lagrange-multiplier form of the constrained equations of motion: J_C^T lam = tau_O - tau (applied).
    """
    _need_loops(model, "inverse_dynamics")
    args = _single(model, "inverse_dynamics", q=q, v=v, a=a)
    q, v, a = args.q, args.v, args.a
    an = analysis if analysis is not None else analyze(model, q, actuated)
    e, JC, bias = _terms(model, q, v, ACC)
    _check_consistent(model, JC, bias, v, a, tol)
    tau_O = rnea(model, q, v, a)                                  # the cut open chain, all joints driven
    tau_G = an.W.T @ tau_O                                        # eq. (1)
    S = an.S                                                      # eq. (4): (N_A, N_F)
    n_a = S.shape[0]
    if weights is None:
        wts = np.ones(n_a)
    else:
        wts = np.asarray(weights, dtype=float)
        if wts.shape != (n_a,) or not np.all(wts > 0) or not np.isfinite(wts).all():
            raise ValueError(f"weights: expected {n_a} positive finite numbers, got {weights!r}")
    # eq. (2): S^T tau_A = tau_G; minimum weighted norm: tau_A = Wt S (S^T Wt S)^+ tau_G
    St = S.T * wts                                                # S^T Wt
    sol = np.linalg.lstsq(St @ S, tau_G, rcond=None)[0] if n_a else np.zeros(an.dof)
    tau_A = wts * (S @ sol)
    residual = float(np.abs(S.T @ tau_A - tau_G).max()) if an.dof else 0.0
    scale = max(1.0, np.abs(tau_G).max() if an.dof else 1.0)
    if residual > 1e-8 * scale:
        raise ValueError(f"the actuators {list(actuated)} cannot produce this motion: the generalized force "
                         f"tau_G misses the range of S^T by {residual:.3g} (under-actuated: {n_a} actuated "
                         f"velocities for {an.dof} degrees of freedom)")
    applied = np.zeros(model.nv)
    applied[an.A_dofs] = tau_A
    # constraint forces: J_C^T lam = tau_O - applied
    return ClosedChainID(tau_A, tau_G, tau_O, _min_norm_forces(JC, tau_O - applied), residual, an)


def _min_norm_forces(JC, gen_force):
    """lam with J_C^T lam = gen_force and the least norm: where the loops are redundant (a
    planar loop has 3 independent constraints of 6) the split of the force between them is
    statically indeterminate, and this picks the smallest one."""
    return np.linalg.lstsq(JC.T, gen_force, rcond=None)[0]


def _generalized_terms(model, q, v, an, bias):
    """b = W^T tau_O at theta_G'' = 0 (Nakamura and Yamane 2000 sec. 2.4 step 2)."""
    a0 = an.accelerations(np.zeros(an.dof), bias)
    return an.W.T @ rnea(model, q, v, a0)


def forward_dynamics(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike, actuated: str | Sequence[str] | None = None, method: str = "kkt",
                     analysis: LoopAnalysis | None = None, baumgarte: tuple[float, float] = (0.0, 0.0),
                     tol: float = 1e-8) -> NDArray[np.float64]:
    """Accelerations q'' (nv,) of every velocity of a closed chain under the applied torques
    ``tau`` (see the module docstring), by ``method`` "kkt" (default), "projected" or
    "unit_vector" (Nakamura and Yamane 2000 eqs. 17-19).  ``baumgarte`` = (alpha, beta) adds
    -2 alpha J q' + beta^2 e to the constraint acceleration of the "kkt" form (e the loop
    error; zero on a closed state); the other two need a closed, velocity-consistent state."""
    _need_loops(model, "forward_dynamics")
    if method not in METHODS:
        raise ValueError(f"method: expected one of {list(METHODS)}, got {method!r}")
    args = _single(model, "forward_dynamics", q=q, v=v)
    q, v = args.q, args.v
    tau = _full_tau(model, tau, actuated)
    if method == "kkt":
        return constrained_dynamics(model, q, v, tau, baumgarte)
    an = analysis if analysis is not None else analyze(model, q, actuated)
    e, JC, bias = _terms(model, q, v, ACC)
    _check_closed(model, e, JC, v, tol)
    tau_G = an.W.T @ tau                                            # eq. (2) with tau = E_A tau_A
    b = _generalized_terms(model, q, v, an, bias)                   # step (2)
    if method == "projected":
        A = an.W.T @ crba(model, q) @ an.W
    else:
        A = np.empty((an.dof, an.dof))
        for i in range(an.dof):                                     # step (3), eq. (18)
            ei = np.zeros(an.dof)
            ei[i] = 1.0
            A[:, i] = an.W.T @ rnea(model, q, v, an.accelerations(ei, bias)) - b
    qdd_G = np.linalg.solve(A, tau_G - b)                           # eq. (19)
    return an.accelerations(qdd_G, bias)                            # step (5), eq. (13)


def _kkt(model, q, v, tau, baumgarte, tol):
    """Dense reference solution of the Lagrange-multiplier form of the constrained equations of motion on all velocities (cut joints included:
    M is singular on them, the KKT matrix is not, as J_C has full rank on their columns)."""
    e, JC, bias = _terms(model, q, v, ACC)
    rows = independent_rows(JC, RANK_TOL)
    J = JC[rows]
    alpha, beta = baumgarte
    c = -bias[rows] - 2.0 * alpha * (J @ v) + beta * beta * e.ravel()[rows]
    M = crba(model, q)
    b = rnea(model, q, v, np.zeros(model.nv))
    n, m = model.nv, len(rows)
    K = np.zeros((n + m, n + m))
    K[:n, :n] = M
    K[:n, n:] = J.T
    K[n:, :n] = J
    rhs = np.concatenate([tau - b, c])
    sol = np.linalg.solve(K, rhs)
    return sol[:n], _min_norm_forces(JC, -J.T @ sol[n:])


def constraint_forces(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike, actuated: str | Sequence[str] | None = None,
                      baumgarte: tuple[float, float] = (0.0, 0.0)) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(q'' (nv,), lam (nloops, 6)) of the multiplier form: M q'' + b = tau + J_C^T lam, lam per
    loop the spatial force [f; n] of the real link on the virtual link in the virtual link's
    frame (least norm where the loops are redundant)."""
    _need_loops(model, "constraint_forces")
    args = _single(model, "constraint_forces", q=q, v=v)
    a, lam = _kkt(model, args.q, args.v, _full_tau(model, tau, actuated), baumgarte, 1e-8)
    return a, lam.reshape(-1, 6)


# ---------------------------------------------------------------------------------------
# the compiled multiplier form (the default forward dynamics, projections, impulses)
_LI = _nt.Array(_nt.int64, 2, "C", readonly=True)
_LF = _nt.Array(_nt.float64, 2, "C", readonly=True)
_LAM = _nt.Array(_nt.int64, 1, "C", readonly=True)
_solve = Entry(_constrained_solve, MI, MF, WS, _LI, _LF, _LAM, WS, VEC, VEC, VEC, _nt.int64, _nt.float64,
               _nt.float64, OUT1, OUT2)


# The fixed arguments of constrained_solve after the model's (li, lf, lam, lw) in one buffer
# (linkdyn._kernels.layout.pack_loops), as Model._packed holds (mi, mf, ws): the fast path of
# constrained_dynamics unboxes two arrays for the seven (~0.04 us each).
@_njit(cache=True)
def _unpack_loops(lbuf):
    """(li, lf, lam, lw) of the loops packed in ``lbuf`` (:func:`pack_loops`): views, no copy."""
    h = _carray(_int_address(lbuf, 0), (LOOP_HEADER,))
    nl, nv, o_lf, o_lam, o_lw = h[0], h[1], h[2], h[3], h[4]
    li = _as_readonly(_carray(_int_address(lbuf, LOOP_HEADER), (nl, 4)))
    lf = _as_readonly(_view(lbuf, o_lf, (nl, 24)))
    lam = _as_readonly(_carray(_int_address(lbuf, o_lam), (nv,)))
    lw = _view(lbuf, o_lw, (lbuf.shape[0] - o_lw,))
    return li, lf, lam, lw


@_njit(cache=True)
def _solve_packed(buf, lbuf, q, v, tau, mode, alpha, beta, out, force):
    """``constrained_solve`` on a model packed in ``buf`` (Model._packed) and its loops in
    ``lbuf`` (:func:`pack_loops`), typed as the Model's own arrays (the same compiled solver)."""
    mi, mf, ws = _unpack_packed(buf)
    li, lf, lam, lw = _unpack_loops(lbuf)
    return _constrained_solve(mi, mf, ws, li, lf, lam, lw, q, v, tau, mode, alpha, beta, out, force)


@_njit(cache=True)
def _response_packed(buf, lbuf, q, F, out):
    """``constrained_response`` on a model packed in ``buf`` and its loops in ``lbuf``, as
    ``_solve_packed`` (the compiled time step's impulse response: ``linkdyn.sim._timestep_kernel``)."""
    mi, mf, ws = _unpack_packed(buf)
    li, lf, lam, lw = _unpack_loops(lbuf)
    return _constrained_response(mi, mf, ws, li, lf, lam, lw, q, F, out)


@_njit(cache=True)
def _loop_error_packed(buf, lbuf, q):
    """The largest loop error |e|_max at q (``LoopData.loop_error``, the same kernel), the
    model in ``buf`` and its loops in ``lbuf``; the loop workspace's rows as scratch."""
    mi, mf, ws = _unpack_packed(buf)
    h = _carray(_int_address(lbuf, 0), (LOOP_HEADER,))
    nl, nv, o_lf, o_lw = h[0], h[1], h[2], h[4]
    li = _as_readonly(_carray(_int_address(lbuf, LOOP_HEADER), (nl, 4)))
    lf = _as_readonly(_view(lbuf, o_lf, (nl, 24)))
    # the solver's workspace, carved as _carve does: H (nv, nv), JR (6 nl, nv), ... e, g scratch
    JL = _view(lbuf, o_lw + nv * nv, (6 * nl, nv))
    g = _view(lbuf, o_lw + nv * nv + 6 * nl * nv, (6 * nl,))
    e = _view(lbuf, o_lw + nv * nv + 12 * nl * nv, (nl, 6))
    _loop_terms(mi, mf, ws, li, lf, q, q[:0], POS, e, JL, g)
    err = 0.0
    for k in range(nl):
        for r in range(6):
            err = max(err, abs(e[k, r]))
    return err


_solve_entry = Entry(_solve_packed, PACKED, PACKED, VEC, VEC, VEC, _nt.int64, _nt.float64, _nt.float64, OUT1, OUT2)
_empty = np.empty
_NO_BAUMGARTE = (0.0, 0.0)


def _buffers(model):
    """The loop workspace and the dof parents (made with the model)."""
    return model._loop_lw, model.dof_parent


def _geared_solve(model, q, v, tau, mode, alpha, beta):
    """``constrained_solve``'s three jobs on a geared model (linkdyn.model.gears), one state, dense
    NumPy (O(n^3); no compiled kernel yet).  In reduced coordinates (q_full = expand(q),
    v_full = G v) the closed-chain equations of Nakamura and Yamane 2000 (eqs. 5-6, 16) with the
    couplings folded in by virtual work (tazz, "Formulation of Featherstone's algorithm",
    eqs. 30-31) read

        M_r q'' + b_r = tau + (J_C G)^T lambda,   (J_C G) q'' = -J_C' v_full - 2 alpha J_C G v + beta^2 e,

    M_r = G^T M(q_full) G, b_r = G^T b(q_full, v_full), J_C and J_C' v_full the full tree's loop
    Jacobian and bias: one KKT system [[M_r, J^T], [J, 0]] on the independent rows J of J_C G
    (M_r is singular on the massless cut joints, the KKT matrix is not).  VELOCITY: M_r dv = J^T mu,
    J (v + dv) = 0; POSITION: M_r dq = J^T mu, J dq = e.  ``force`` (nloops, 6): lambda per loop
    (force or impulse of the real link on the virtual link, virtual link's frame), the least-norm
    split where the loops are redundant, as :func:`constraint_forces`.  Returns (out, force, status)."""
    full, c = model._full, model._coupling
    G = c.G
    qf, vf = c.q(q), c.v(v)
    e, JCf, g = _terms(full, qf, vf, ACC if mode == FD else VEL)
    JC = JCf @ G
    rows = independent_rows(JC, RANK_TOL)
    J = JC[rows]
    n, m = model.nv, len(rows)
    K = np.zeros((n + m, n + m))
    K[:n, :n] = G.T @ crba(full, qf) @ G
    K[:n, n:] = J.T
    K[n:, :n] = J
    if mode == FD:
        r1 = tau - rnea(full, qf, vf, np.zeros(full.nv)) @ G
        r2 = -g[rows] - 2.0 * alpha * (J @ v) + beta * beta * e.ravel()[rows]
    elif mode == VELOCITY:
        r1, r2 = np.zeros(n), -(J @ v)
    else:
        r1, r2 = np.zeros(n), e.ravel()[rows]
    try:
        sol = np.linalg.solve(K, np.concatenate([r1, r2]))
    except np.linalg.LinAlgError:
        return np.full(n, np.nan), np.full((model.nloops, 6), np.nan), SINGULAR
    if not np.isfinite(sol).all():
        return np.full(n, np.nan), np.full((model.nloops, 6), np.nan), SINGULAR
    return sol[:n], _min_norm_forces(JC, -J.T @ sol[n:]).reshape(-1, 6), 0


def _run_solve(model, q, v, tau, mode, alpha, beta):
    """``constrained_solve`` on one state or a stack (N rows; a single state next to stacked
    ones is shared): returns out (nv,) or (N, nv) and force (nloops, 6) or (N, nloops, 6)."""
    args = as_states(model, q=q, v=v, tau=tau)
    if model._full is not None:         # a geared model: the dense reduced solve, state by state
        alpha, beta = float(alpha), float(beta)
        if args.batch is None:
            out, force, status = _geared_solve(model, args.q, args.v, args.tau, mode, alpha, beta)
        else:
            n = args.batch
            out, force = np.empty((n, model.nv)), np.empty((n, model.nloops, 6))
            status = np.empty(n, dtype=np.int64)
            for k in range(n):
                q_k, v_k, tau_k = (x[k] if x.shape[0] > 1 else x[0] for x in (args.q, args.v, args.tau))
                out[k], force[k], status[k] = _geared_solve(model, q_k, v_k, tau_k, mode, alpha, beta)
        raise_for_status(model, status, q=args.q, v=args.v, tau=args.tau)
        return out, force
    lw, lam = _buffers(model)
    alpha, beta = float(alpha), float(beta)
    fixed = (model._mi, model._mf, model._ws, model._loop_i, model._loop_f, lam, lw)
    if args.batch is None:
        out, force = np.empty(model.nv), np.empty((model.nloops, 6))
        status = _solve(*fixed, args.q, args.v, args.tau, mode, alpha, beta, out, force)
    else:
        n = args.batch
        out, force = np.empty((n, model.nv)), np.empty((n, model.nloops, 6))
        status = np.empty(n, dtype=np.int64)
        if n < SERIAL_BELOW:                 # waking the thread pool costs more than a few states
            for k in range(n):
                q_k, v_k, tau_k = (x[k] if x.shape[0] > 1 else x[0] for x in (args.q, args.v, args.tau))
                status[k] = _solve(*fixed, q_k, v_k, tau_k, mode, alpha, beta, out[k], force[k])
        else:
            WS = batch_workspace(model)
            LW = np.empty((WS.shape[0], lw.size))
            _constrained_solve_batch(model._mi, model._mf, WS, model._loop_i, model._loop_f, lam, LW, args.q, args.v,
                                    args.tau, mode, alpha, beta, out, force, status)
    raise_for_status(model, status, q=args.q, v=args.v, tau=args.tau)
    return out, force


@overload
def constrained_dynamics(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike, baumgarte: tuple[float, float] = (0.0, 0.0), forces: Literal[False] = False) -> NDArray[np.float64]: ...


@overload
def constrained_dynamics(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike, baumgarte: tuple[float, float] = (0.0, 0.0), *, forces: Literal[True]) -> tuple[NDArray[np.float64], NDArray[np.float64]]: ...


@overload
def constrained_dynamics(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike, baumgarte: tuple[float, float] = _NO_BAUMGARTE, forces: bool = False) -> NDArray[np.float64] | tuple[NDArray[np.float64], NDArray[np.float64]]: ...


def constrained_dynamics(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike, baumgarte: tuple[float, float] = _NO_BAUMGARTE, forces: bool = False) -> NDArray[np.float64] | tuple[NDArray[np.float64], NDArray[np.float64]]:
    """q'' of a closed chain under the joint torques ``tau`` (nv,) by the multiplier form
    (the Lagrange-multiplier form of the constrained equations of motion, compiled: tree-sparse factorization of M, the cut joints eliminated,
    dependent constraints dropped by pivoting.  ``baumgarte`` = (alpha, beta) stabilizes the
    loops: J q'' = -J' q' - 2 alpha J q' + beta^2 e.  With ``forces`` also returns (nloops, 6):
    each loop's force [f; n] of the real link on the virtual link, in the virtual link's frame
    (where loops are redundant, e.g. planar ones, one valid split of a statically indeterminate
    force; :func:`constraint_forces` gives the least-norm one).

    A stack of states (q (N, nq), v and tau (N, nv); a single one among them is shared) runs
    as one parallel compiled loop and gives (N, nv) and (N, nloops, 6)."""
    if (type(q) is _ND and type(v) is _ND and type(tau) is _ND and q.dtype is _F64 and v.dtype is _F64
            and tau.dtype is _F64 and q.ndim == 1 and v.ndim == 1 and tau.ndim == 1 and model.loops):
        out = _empty(model.nv)
        force = _empty(model._loop_force.shape) if forces else model._loop_force
        if baumgarte is _NO_BAUMGARTE:
            alpha = beta = 0.0
        else:
            alpha, beta = baumgarte
            alpha, beta = float(alpha), float(beta)
        if _solve_entry.fn(model._packed, model._loop_packed, q, v, tau, FD, alpha, beta, out, force) == 0:
            return (out, force) if forces else out
    _need_loops(model, "constrained_dynamics")
    out, force = _run_solve(model, q, v, tau, FD, baumgarte[0], baumgarte[1])
    return (out, force) if forces else out


@overload
def velocity_projection(model: Model, q: ArrayLike, v: ArrayLike, impulses: Literal[False] = False) -> NDArray[np.float64]: ...


@overload
def velocity_projection(model: Model, q: ArrayLike, v: ArrayLike, impulses: Literal[True]) -> tuple[NDArray[np.float64], NDArray[np.float64]]: ...


@overload
def velocity_projection(model: Model, q: ArrayLike, v: ArrayLike, impulses: bool = False) -> NDArray[np.float64] | tuple[NDArray[np.float64], NDArray[np.float64]]: ...


def velocity_projection(model: Model, q: ArrayLike, v: ArrayLike, impulses: bool = False) -> NDArray[np.float64] | tuple[NDArray[np.float64], NDArray[np.float64]]:
    """dv with J_C (v + dv) = 0 and the least kinetic energy of the change (M-metric): the
    jump that a perfectly inelastic closure of the loops imposes (Nakamura and Yamane 2000 sec. 4.3; see
    :func:`linkdyn.structure.velocity_jump`).  With ``impulses`` also (nloops, 6): each loop's
    impulse [linear; angular] of the real link on the virtual link, virtual link's frame.
    Stacks of states as in :func:`constrained_dynamics`."""
    _need_loops(model, "velocity_projection")
    dv, imp = _run_solve(model, q, v, np.zeros(model.nv), VELOCITY, 0.0, 0.0)
    return (dv, imp) if impulses else dv


def position_correction(model: Model, q: ArrayLike) -> NDArray[np.float64]:
    """dq (a velocity-space step) with J_C dq = e in the kinetic-energy metric: one Newton step
    towards closing the loops; apply with ``linkdyn.integrate(model, q, dq)``.  q may be a
    stack (N, nq)."""
    _need_loops(model, "position_correction")
    z = np.zeros(model.nv)
    return _run_solve(model, q, z, z, POSITION, 0.0, 0.0)[0]
