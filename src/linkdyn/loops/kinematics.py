"""Kinematics of closed chains: loop errors, loop Jacobians, and the W, S, H of Nakamura and Yamane 2000.

A closed chain is a tree (``Model``) plus loop closures (``ModelBuilder.add_loop``): each loop
has a virtual link, whose cut joint is a joint of the tree, that must coincide with its real
link (Nakamura and Yamane 2000 sec. 3.2).  theta_J are all the tree's velocities (nv), cut joints included.

    J_L theta_J' = 0 for every loop (eq. 5), stacked into J_C (eq. 6);
    m independent rows (J_Cm, eq. 7) by a rank-revealing QR with a stated tolerance;
    N_F = N_J - m degrees of freedom (eq. 8);
    J_Cm = [J_S  J_G] with J_S (m x m) invertible (eq. 9), H = -J_S^-1 J_G (eq. 12);
    W = d theta_O / d theta_G, S = d theta_A / d theta_G built from H as in Fig. 2 (eqs. 3-4).

Everything here works on one state; the heavy lifting is the compiled ``loop_terms`` kernel.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import scipy.linalg

from .._api import as_states, raise_for_status
from .._kernels.passes import OK, check_inputs as _check_inputs, check_q as _check_q
from ..model.configuration import integrate
from ..model.joints import FREE
from ._kernels import ACC, POS, VEL, loop_terms as _loop_terms

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model

#: relative tolerance of the rank decisions (singular values / QR pivots below
#: RANK_TOL * the largest are taken as zero)
RANK_TOL = 1e-9


class LoopClosureError(ValueError):
    """A loop cannot be closed (the mechanism cannot reach the requested configuration)."""


def _single(model, what, **arrays):
    args = as_states(model, **arrays)
    if args.batch is not None:
        raise ValueError(f"{what}: takes one state; got a stack of {args.batch}")
    return args


def _terms(model, q, v, level):
    """(e (nl, 6), J_C (6 nl, nv), J_C' v (6 nl,)) at ``level``.

    On a geared model (linkdyn.model.gears) q and v are reduced: the loops are evaluated on the
    full tree at q_full = expand(q), v_full = G v, and the Jacobian is J_C G (the loop rows in
    the independent velocities; the bias J_C' v_full needs no correction, G being constant), so
    every function of this module works in reduced coordinates."""
    full = model._full
    if full is not None:
        c = model._coupling
        e, JC, g = _terms(full, c.q(q), c.v(v) if v is not None else None, level)
        return e, (JC @ c.G if level != POS else np.zeros((JC.shape[0], model.nv))), g
    nl = model.nloops
    e = np.empty((nl, 6))
    JC = np.empty((6 * nl, model.nv))
    g = np.empty(6 * nl)
    st = _check_q(model._mi, q) if level < ACC else _check_inputs(model._mi, q, v, v, False)
    if st == OK:
        _loop_terms(model._mi, model._mf, model._ws, model._loop_i, model._loop_f, q,
                   v if v is not None else q[:0], level, e, JC, g)
    raise_for_status(model, st, q=q, v=v if v is not None else np.zeros(model.nv))
    return e, JC, g


def _need_loops(model, what):
    if model.nloops == 0:
        raise ValueError(f"{what}: model {model.name!r} has no loop closures (ModelBuilder.add_loop)")


def loop_error(model: Model, q: ArrayLike) -> NDArray[np.float64]:
    """(nloops, 6): log of the pose of each loop's real-link frame seen from its virtual link,
    [linear; angular] in the virtual link's frame; zero when every loop is closed."""
    _need_loops(model, "loop_error")
    args = _single(model, "loop_error", q=q)
    return _terms(model, args.q, None, POS)[0]


def loop_jacobian(model: Model, q: ArrayLike) -> NDArray[np.float64]:
    """J_C (6 nloops, nv) of Nakamura and Yamane 2000 eqs. 5-6: J_C q' stacks, for every loop, the velocity of
    the virtual link minus that of its real link, in the virtual link's frame."""
    _need_loops(model, "loop_jacobian")
    args = _single(model, "loop_jacobian", q=q)
    return _terms(model, args.q, None, VEL)[1]


def loop_bias(model: Model, q: ArrayLike, v: ArrayLike) -> NDArray[np.float64]:
    """J_C' q' (6 nloops,): the loops' relative acceleration at q'' = 0 (Nakamura and Yamane 2000 eq. 16)."""
    _need_loops(model, "loop_bias")
    args = _single(model, "loop_bias", q=q, v=v)
    return _terms(model, args.q, args.v, ACC)[2]


# ---------------------------------------------------------------------------------------
# independent rows and columns
def independent_rows(A: NDArray[np.float64], tol: float = RANK_TOL) -> NDArray[np.integer[Any]]:
    """Indices (sorted) of a maximal set of linearly independent rows of A, by QR with column
    pivoting of A^T: a pivot |R_kk| <= tol * |R_00| ends the set."""
    if A.shape[0] == 0 or not np.any(A):
        return np.zeros(0, dtype=np.int64)
    _, R, piv = scipy.linalg.qr(A.T, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    r = int(np.sum(d > tol * d[0]))
    return np.sort(piv[:r])


def _pick_columns(A, m, tiers, tol):
    """m columns of A (m x n, full row rank) that form a well-conditioned square block,
    taken from the tiers in order of preference: QR with column pivoting on each tier's
    columns, deflated by the columns already chosen."""
    chosen = []
    Q = np.zeros((A.shape[0], 0))
    scale = np.linalg.norm(A, axis=0).max() if A.size else 1.0
    for tier in tiers:
        if len(chosen) == m:
            break
        cols = [c for c in tier if c not in chosen]
        if not cols:
            continue
        B = A[:, cols] - Q @ (Q.T @ A[:, cols])
        _, R, piv = scipy.linalg.qr(B, mode="economic", pivoting=True)
        d = np.abs(np.diag(R))
        take = [cols[piv[k]] for k in range(min(len(d), m - len(chosen))) if d[k] > tol * max(scale, 1e-300)]
        if take:
            chosen.extend(take)
            Q, _ = np.linalg.qr(A[:, chosen])
    return chosen


class LoopAnalysis:
    """The closed-chain quantities of Nakamura and Yamane (2000) at one configuration (Nakamura and Yamane 2000 secs. 2.1-2.2).

    ``JC`` (6 nl, N_J) loop Jacobians; ``rows`` the m independent rows (J_Cm = JC[rows]);
    ``m``, ``dof`` (N_F); ``S_dofs`` / ``G_dofs`` the velocity indices of theta_S (dependent)
    and theta_G (generalized coordinates); ``JS``, ``JG``; ``H`` (m, N_F) = -J_S^-1 J_G;
    ``W`` (N_J, N_F) = d theta_O / d theta_G; ``S`` (N_A, N_F) = d theta_A / d theta_G for the
    actuated velocities ``A_dofs``; ``cond`` the condition number of J_S.
    """

    def __init__(self, model: Model, JC: NDArray[np.float64], rows: NDArray[np.integer[Any]], G_dofs: ArrayLike, A_dofs: ArrayLike) -> None:
        self.model = model
        self.JC = JC
        self.rows = rows
        self.m = len(rows)
        nv = model.nv
        self.G_dofs = np.asarray(G_dofs, dtype=np.int64)
        self.S_dofs = np.setdiff1d(np.arange(nv), self.G_dofs)
        self.dof = len(self.G_dofs)
        JCm = JC[rows]
        self.JS = JCm[:, self.S_dofs]
        self.JG = JCm[:, self.G_dofs]
        self.cond = np.linalg.cond(self.JS) if self.m else 1.0
        self.H = -np.linalg.solve(self.JS, self.JG) if self.m else np.zeros((0, self.dof))
        W = np.zeros((nv, self.dof))
        W[self.S_dofs] = self.H                             # Fig. 2: rows of theta_S are rows of H
        W[self.G_dofs, np.arange(self.dof)] = 1.0           # rows of theta_G are unit rows
        self.W = W
        self.A_dofs = np.asarray(A_dofs, dtype=np.int64)
        self.S = W[self.A_dofs]

    def Hdot_qdot(self, bias: NDArray[np.float64]) -> NDArray[np.float64]:
        """H' theta_G' = -J_S^-1 J_Cm' theta_J' (Nakamura and Yamane 2000 eq. 16) from the loop bias J_C' q'."""
        return -np.linalg.solve(self.JS, bias[self.rows]) if self.m else np.zeros(0)

    def accelerations(self, qdd_G: ArrayLike, bias: NDArray[np.float64]) -> NDArray[np.float64]:
        """theta_J'' from theta_G'' (eq. 13): theta_S'' = H theta_G'' + H' theta_G'."""
        a = np.zeros(self.model.nv)
        a[self.G_dofs] = qdd_G
        a[self.S_dofs] = self.H @ qdd_G + self.Hdot_qdot(bias)
        return a

    def __repr__(self):
        return (f"<LoopAnalysis: N_J={self.model.nv}, m={self.m}, N_F={self.dof}, "
                f"cond(J_S)={self.cond:.3g}>")


def dof_indices(model: Model, names: str | Sequence[str] | None, what: str = "actuated") -> NDArray[np.int64]:
    """Velocity indices of the joints ``names`` (every velocity of each joint)."""
    if names is None:
        return np.zeros(0, dtype=np.int64)
    if isinstance(names, str):
        names = [names]
    out = []
    for n in names:
        try:
            sl = model.v_slice(n)
        except KeyError as exc:
            raise KeyError(f"{what}: {exc.args[0]}") from None
        out.extend(range(sl.start, sl.stop))
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: a joint is named twice")
    return np.array(out, dtype=np.int64)


def analyze(model: Model, q: ArrayLike, actuated: str | Sequence[str] | None = None, generalized: str | Sequence[str] | None = None,
            tol: float = RANK_TOL) -> LoopAnalysis:
    """The closed-chain analysis at q: J_C, m independent constraints, N_F = N_J - m, the split
    into theta_S and theta_G, H, W and S (Nakamura and Yamane 2000 eqs. 5-12, Fig. 2).

    ``actuated``: joint names (their velocities are theta_A).  ``generalized``: joint names
    to use as theta_G; by default they are chosen for a well-conditioned J_S, preferring cut
    joints, then passive joints, for theta_S (so that actuated joints and a floating base
    become generalized coordinates where the mechanism allows).
    """
    _need_loops(model, "analyze")
    args = _single(model, "analyze", q=q)
    JC = _terms(model, args.q, None, VEL)[1]
    rows = independent_rows(JC, tol)
    A = dof_indices(model, actuated, "actuated")
    m = len(rows)
    if generalized is not None:
        G = dof_indices(model, generalized, "generalized")
        if len(G) != model.nv - m:
            raise ValueError(f"generalized: the mechanism has {model.nv - m} degrees of freedom "
                             f"(N_J = {model.nv}, m = {m} independent constraints), "
                             f"but {len(G)} generalized velocities were named")
        out = LoopAnalysis(model, JC, rows, G, A)
        if out.m and out.cond > 1.0 / tol:
            raise ValueError(f"generalized: J_S is singular (condition number {out.cond:.3g}): these joints "
                             "cannot serve as generalized coordinates here")
        return out
    cut = [d for lp in model.loops for d in range(lp.cut_v.start, lp.cut_v.stop)]
    actuated = set(A.tolist())
    base = [d for i in range(1, model.nbody) if model.jnt_type[i] == FREE
            for d in range(model.jnt_vadr[i], model.jnt_vadr[i] + 6) if d not in actuated]
    passive = [d for d in range(model.nv) if d not in actuated and d not in cut and d not in base]
    S = _pick_columns(JC[rows], m, (cut, passive, base, sorted(actuated)), tol)
    if len(S) < m:
        raise ValueError("analyze: could not find m independent dependent coordinates (rank-deficient J_Cm)")
    G = np.setdiff1d(np.arange(model.nv), S)
    return LoopAnalysis(model, JC, rows, G, A)


def close_loops(model: Model, q: ArrayLike, hold: str | Sequence[str] | None = None, tol: float = 1e-12, max_iter: int = 60) -> NDArray[np.float64]:
    """Solve the loop closures for q (Nakamura and Yamane 2000 sec. 2.2 at the position level): Newton on the
    loop error, dq = J^+ e (least squares, minimum norm) over the velocities not in ``hold``
    (joint names whose coordinates stay as given, e.g. the generalized coordinates theta_G),
    moving q with ``integrate`` (quaternions stay unit).  From a rough guess this assembles
    the mechanism.  Raises :class:`LoopClosureError` when the loops cannot be closed (out of
    reach, or the held joints over-constrain them)."""
    _need_loops(model, "close_loops")
    args = _single(model, "close_loops", q=q)
    q = args.q.copy()
    held = dof_indices(model, hold, "hold")
    free = np.setdiff1d(np.arange(model.nv), held)
    e = _terms(model, q, None, POS)[0]
    err = np.abs(e).max()
    best = err
    for _ in range(max_iter):
        if err <= tol:
            return q
        e, JC, _ = _terms(model, q, None, VEL)
        dq = np.zeros(model.nv)
        # Newton step on e: J dq = e (near closure e' = -J q'); damped when far away
        step = np.linalg.lstsq(JC[:, free], e.ravel(), rcond=None)[0]
        n = np.linalg.norm(step)
        if n > 0.5:
            step *= 0.5 / n
        dq[free] = step
        q = integrate(model, q, dq)
        err = np.abs(_terms(model, q, None, POS)[0]).max()
        best = min(best, err)
    if err <= tol:
        return q
    worst = int(np.argmax(np.abs(_terms(model, q, None, POS)[0]).max(axis=1)))
    raise LoopClosureError(f"close_loops: the loops do not close (loop {model.loops[worst].name!r} keeps an error "
                           f"of {err:.3g} after {max_iter} Newton steps; best {best:.3g}): the configuration "
                           "is out of the mechanism's reach" + (" with the held joints" if len(held) else ""))


def project_velocity(model: Model, q: ArrayLike, v: ArrayLike, hold: str | Sequence[str] | None = None) -> NDArray[np.float64]:
    """The velocity nearest to v (least squares over the velocities not in ``hold``) with
    J_C v = 0: the loops' velocity constraints met exactly."""
    _need_loops(model, "project_velocity")
    args = _single(model, "project_velocity", q=q, v=v)
    JC = _terms(model, args.q, None, VEL)[1]
    held = dof_indices(model, hold, "hold")
    free = np.setdiff1d(np.arange(model.nv), held)
    v = args.v.copy()
    r = JC @ v
    v[free] -= np.linalg.lstsq(JC[:, free], r, rcond=None)[0]
    return v


class ClosedChain:
    """A closed chain followed through a motion: it keeps its generalized coordinates theta_G
    from one configuration to the next, so that they mean the same joints over time, and makes
    the choice again only when J_S comes near singularity (condition number above
    ``max_cond``), from the well-conditioned choice at that configuration (Nakamura and Yamane 2000 sec. 2.2).
    The hand-over is silent; ``changes`` lists (q, old theta_G joints, new) for each one.

        chain = ld.loops.ClosedChain(model, actuated=["crank"])
        an = chain.analyze(q)        # a LoopAnalysis with the kept (or new) theta_G
    """

    def __init__(self, model: Model, actuated: str | Sequence[str] | None = None, generalized: str | Sequence[str] | None = None, max_cond: float = 1e4,
                 tol: float = RANK_TOL) -> None:
        _need_loops(model, "ClosedChain")
        self.model, self.actuated, self.max_cond, self.tol = model, actuated, float(max_cond), tol
        self._G = None if generalized is None else dof_indices(model, generalized, "generalized")
        self.changes = []

    @property
    def generalized_dofs(self) -> NDArray[np.int64] | None:
        """The velocity indices of theta_G now (None before the first analysis)."""
        return None if self._G is None else self._G.copy()

    def analyze(self, q: ArrayLike) -> LoopAnalysis:
        args = _single(self.model, "ClosedChain.analyze", q=q)
        if self._G is not None:
            JC = _terms(self.model, args.q, None, VEL)[1]
            rows = independent_rows(JC, self.tol)
            if len(rows) == self.model.nv - len(self._G):
                an = LoopAnalysis(self.model, JC, rows, self._G, dof_indices(self.model, self.actuated))
                if np.isfinite(an.cond) and an.cond <= self.max_cond:
                    return an
        an = analyze(self.model, args.q, self.actuated, tol=self.tol)
        if self._G is not None and not np.array_equal(an.G_dofs, self._G):
            self.changes.append((args.q.copy(), self._G.copy(), an.G_dofs.copy()))
        self._G = an.G_dofs
        return an
