"""Inverse kinematics: the planar 2-link arm in closed form, and a general damped least-squares
(Levenberg-Marquardt) solver with joint limits, random restarts and redundancy resolution by the
null-space projector of Liegeois 1977.

The general solver (:func:`inverse_kinematics`) works in two phases.

1. **Primary task.**  The residual is the SE(3) error ``r = log6(oMf^-1 oMt)`` of the frame
   pose ``oMf(q)`` to the target ``oMt`` (a twist in the frame's own axes, so the Jacobian is
   the ``"local"`` frame Jacobian; for a pose ``oMf exp(J dq)`` the step ``J dq = r`` lands on the
   target to first order), or the position error ``r = p* - p`` with the translation rows of the
   ``"local_world_aligned"`` Jacobian for ``mode="position"``.  Each iteration takes the
   Levenberg-Marquardt step ``dq = (J^T J + mu I)^-1 J^T r`` (the damped form of
   ``q' = J^+ x'``, eq. (4.49) with ``eta = 0``), moves with :func:`linkdyn.integrate` (so
   quaternion joints stay unit), projects into ``[model.lower, model.upper]`` (finite bounds) and
   keeps the step only if the error decreased; the damping ``mu`` adapts (Nielsen's rule).  A
   joint resting on a bound that the step would push further is locked for that step (its
   column removed), so the others do the work.  The attempt ends when the position and
   orientation errors are within tolerance, or fails when the iteration limit is reached or the
   error stops decreasing (a local minimum: a target outside the workspace or beyond the limits);
   optional random restarts then start again from random configurations within the limits.
2. **Secondary objective (redundant arms).**  From a solution, steps in the null space of the
   task Jacobian, ``dq = (I - J^+ J) k grad h`` (eq. (4.49) with ``x' = 0`` and
   ``eta = (I - J^+ J) xi``, eqs. (4.50)-(4.51) with ``xi = k grad h``), raise ``h`` without
   moving the frame to first order; the second-order drift is removed by primary iterations
   after each step, and a step is kept only if the primary task is met again (and ``h``
   increased, for the built-in objectives).  So the returned configuration always meets the
   tolerances; the secondary objective is improved, not necessarily maximised.

A result reports ``success=True`` only after the errors of the returned configuration have been
recomputed and found within tolerance and its coordinates within the limits.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from .. import spatial as sp
from ..kinematics import frame_pose, jacobian
from ..model import joints as J
from ..model.configuration import difference, integrate, neutral, normalize, random_configuration
from .measures import manipulability

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model

__all__ = ["IKResult", "IKError", "inverse_kinematics", "null_space_projector", "planar_2link_ik"]


# ---------------------------------------------------------------------------------------
# closed form: planar 2-link arm
def planar_2link_ik(l1: float, l2: float, x: float, y: float, raise_if_unreachable: bool = True,
                    tol: float = 1e-12) -> np.ndarray:
    """Joint angles ``[q1, q2]`` of the planar 2-link arm (Spong, Hutchinson and Vidyasagar 2006, chs. 3-4,
    :func:`linkdyn.models.planar_2link`, tip at ``[l1 c1 + l2 c12, l1 s1 + l2 s12]``) that put the
    tip at ``(x, y)``.

    Law of cosines: ``c2 = (x^2 + y^2 - l1^2 - l2^2) / (2 l1 l2)``, ``q2 = +-acos(c2)``,
    ``q1 = atan2(y, x) - atan2(l2 sin q2, l1 + l2 cos q2)``.  Returns a (2, 2) array: row 0 the
    solution with ``q2 >= 0``, row 1 the one with ``q2 <= 0`` (elbow "down" and "up" for a target
    in front of the arm, seen with y up); ``q1`` in ``(-pi, pi]``, ``q2`` in ``[-pi, pi]``.  On
    the boundary of the workspace the two rows are the same configuration (``q2 = 0`` at
    ``r = l1 + l2``; ``q2 = pi`` and ``-pi`` at ``r = |l1 - l2|``); at ``r = 0`` with ``l1 = l2``
    any ``q1`` works and ``q1 = 0`` is returned.

    Outside the annulus ``|l1 - l2| <= r <= l1 + l2`` (``r = |(x, y)|``; ``|c2| <= 1 + tol``
    absorbs round-off) the target is unreachable: ``ValueError``, or an empty (0, 2) array when
    ``raise_if_unreachable=False``.
    """
    try:
        l1, l2, x, y = float(l1), float(l2), float(x), float(y)
    except (TypeError, ValueError):
        raise TypeError("planar_2link_ik: l1, l2, x, y must be real numbers") from None
    if not all(np.isfinite([l1, l2, x, y])):
        raise ValueError(f"planar_2link_ik: l1, l2, x, y must be finite, got {[l1, l2, x, y]}")
    if l1 <= 0 or l2 <= 0:
        raise ValueError(f"planar_2link_ik: link lengths must be positive, got l1={l1}, l2={l2}")
    r2 = x * x + y * y
    c2 = (r2 - l1 * l1 - l2 * l2) / (2.0 * l1 * l2)
    if abs(c2) > 1.0 + tol:
        if raise_if_unreachable:
            r = np.sqrt(r2)
            raise ValueError(f"planar_2link_ik: target ({x:g}, {y:g}) is unreachable: its distance r = {r:.9g} from "
                             f"the base is outside the annulus |l1 - l2| <= r <= l1 + l2 = [{abs(l1 - l2):.9g}, "
                             f"{l1 + l2:.9g}]")
        return np.empty((0, 2))
    q2 = np.arccos(np.clip(c2, -1.0, 1.0))
    out = np.empty((2, 2))
    for k, s in enumerate((q2, -q2)):
        q1 = np.arctan2(y, x) - np.arctan2(l2 * np.sin(s), l1 + l2 * np.cos(s))
        out[k] = [np.arctan2(np.sin(q1), np.cos(q1)), s]
    return out


# ---------------------------------------------------------------------------------------
# general solver
def null_space_projector(J: ArrayLike, rcond: float = 1e-10) -> NDArray[np.float64]:
    """``N = I - J^+ J`` (n, n) of a task Jacobian ``J`` (m, n), Liegeois 1977: ``J N = 0``,
    so ``q' = J^+ x' + N xi`` (eq. (4.49)) realises ``x'`` whatever ``xi``.  ``J^+`` is the
    pseudo-inverse (eq. (4.50) ``J^T (J J^T)^-1`` when J has full row rank; singular values below
    ``rcond`` times the largest are dropped, so the projector stays exact at singularities).
    ``xi`` is a joint-space vector (in R^n; the textbook's text prints R^m)."""
    J = np.asarray(J, dtype=float)
    if J.ndim != 2:
        raise ValueError(f"J: expected a 2-D matrix, got shape {J.shape}")
    return np.eye(J.shape[1]) - np.linalg.pinv(J, rcond=rcond) @ J


class IKError(RuntimeError):
    """Raised by :func:`inverse_kinematics` with ``raise_on_failure=True``; ``.result`` holds the
    :class:`IKResult`."""

    def __init__(self, message: str, result: IKResult) -> None:
        super().__init__(message)
        self.result = result


@dataclass
class IKResult:
    """Outcome of :func:`inverse_kinematics`.

    ``q``: the configuration (the best one found if ``success`` is False); ``success``: the
    errors of ``q`` were recomputed and are within tolerance, and ``q`` is within the limits;
    ``iterations``: solver iterations over all attempts; ``attempts``: 1 + random restarts used;
    ``position_error``: ``|p(q) - p*|`` [m]; ``orientation_error``: rotation angle of
    ``R(q)^T R*`` [rad] (NaN when the target has no orientation; for a pose target in position
    mode, for information only); ``message``: what happened;
    ``objective``: the secondary objective's value at ``q`` (manipulability, or
    ``-1/2 |q - q_centre|^2`` for joint centring; None otherwise).
    """
    q: np.ndarray
    success: bool
    iterations: int
    position_error: float
    orientation_error: float
    message: str
    attempts: int = 1
    objective: float | None = None


def _as_target(target, mode):
    """(R or None, p) of a 4x4 transform, an (R, p) pair or a 3-vector."""
    if isinstance(target, (tuple, list)) and len(target) == 2 and np.shape(target[0]) == (3, 3):
        R, p = target
        R, p = np.asarray(R, dtype=float), np.asarray(p, dtype=float)
        if p.shape != (3,):
            raise ValueError(f"target: the position of an (R, p) pair must be a 3-vector, got shape {p.shape}")
    else:
        try:
            T = np.asarray(target, dtype=float)
        except (TypeError, ValueError):
            raise ValueError("target: expected a 4x4 homogeneous matrix, an (R, p) pair or a 3-vector") from None
        if T.shape == (3,):
            if mode == "pose":
                raise ValueError("target: a 3-vector gives a position only; use mode='position' (or give a 4x4 "
                                 "matrix or an (R, p) pair for mode='pose')")
            if not np.isfinite(T).all():
                raise ValueError("target: contains NaN or infinity")
            return None, T.copy()
        if T.shape != (4, 4):
            raise ValueError(f"target: expected a 4x4 homogeneous matrix, an (R, p) pair or a 3-vector, "
                             f"got shape {T.shape}")
        if not np.allclose(T[3], [0.0, 0.0, 0.0, 1.0], atol=1e-12):
            raise ValueError(f"target: the last row of a homogeneous matrix must be [0, 0, 0, 1], got {T[3].tolist()}")
        R, p = T[:3, :3], T[:3, 3]
    if not (np.isfinite(R).all() and np.isfinite(p).all()):
        raise ValueError("target: contains NaN or infinity")
    if not sp.is_rotation_matrix(R, tol=1e-6):
        raise ValueError("target: the rotation part is not a rotation matrix (R^T R = I, det R = 1, within 1e-6)")
    U, _, Vt = np.linalg.svd(R)                  # the nearest exact rotation (removes round-off)
    return U @ Vt, p.copy()


def _positive(x, name):
    try:
        x = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected a number, got {x!r}") from None
    if not np.isfinite(x) or x <= 0:
        raise ValueError(f"{name}: expected a finite positive number, got {x}")
    return x


def _count(x, name, minimum):
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < minimum:
        raise ValueError(f"{name}: expected an integer >= {minimum}, got {x!r}")
    return int(x)


class _Problem:
    """Everything one solve needs: the model, frame, target, tolerances and the objective."""

    def __init__(self, model, frame, R, p, mode, tol_position, tol_orientation, max_step):
        self.model, self.frame, self.R, self.p, self.mode = model, frame, R, p, mode
        self.tol_p, self.tol_o, self.max_step = tol_position, tol_orientation, max_step
        lo, hi = np.asarray(model.lower, dtype=float), np.asarray(model.upper, dtype=float)
        self.lo, self.hi = lo, hi
        self.lo_fin, self.hi_fin = np.isfinite(lo), np.isfinite(hi)
        self.lo_c, self.hi_c = np.where(self.lo_fin, lo, -np.inf), np.where(self.hi_fin, hi, np.inf)
        # dofs whose coordinate moves additively (q_c += v_d): these can be locked at a bound
        dofs, coords = [], []
        for i in range(1, model.nbody):
            if model.jnt_type[i] in (J.REVOLUTE, J.PRISMATIC, J.CYLINDRICAL, J.UNIVERSAL, J.SPHERICAL_ZYX):
                for k in range(model.jnt_nv[i]):
                    c, d = model.jnt_qadr[i] + k, model.jnt_vadr[i] + k
                    if self.lo_fin[c] or self.hi_fin[c]:
                        dofs.append(d)
                        coords.append(c)
        self.lim_dof, self.lim_coord = np.array(dofs, dtype=int), np.array(coords, dtype=int)

    # --- task ---------------------------------------------------------------------------
    def evaluate(self, q):
        """(residual r, position error, orientation error) at q."""
        T = frame_pose(self.model, q, self.frame)
        R, p = T[:3, :3], T[:3, 3]
        pe = float(np.linalg.norm(p - self.p))
        if self.mode == "position":
            r = self.p - p
            oe = float("nan") if self.R is None else float(np.linalg.norm(sp.log3(R.T @ self.R)))
        else:
            r = sp.log6(R.T @ self.R, R.T @ (self.p - p))
            oe = float(np.linalg.norm(r[3:]))          # the angular part of log6 is log3(R^T R*)
        return r, pe, oe

    def jac(self, q):
        if self.mode == "position":
            return jacobian(self.model, q, self.frame, "local_world_aligned")[:3]
        return jacobian(self.model, q, self.frame, "local")

    def met(self, pe, oe):
        return pe <= self.tol_p and (self.mode == "position" or oe <= self.tol_o)

    # --- configuration space ------------------------------------------------------------
    def project(self, q):
        return np.minimum(np.maximum(q, self.lo_c), self.hi_c)

    def inside(self, q):
        return bool(np.all(q >= self.lo_c) and np.all(q <= self.hi_c))

    def pushing_out(self, q, dq):
        """Mask (nv,) of the dofs resting on a bound that dq would push further out."""
        out = np.zeros(self.model.nv, dtype=bool)
        if self.lim_dof.size:
            qc, d = q[self.lim_coord], dq[self.lim_dof]
            eps = 1e-12 * (1.0 + np.abs(qc))
            out[self.lim_dof] = ((qc <= self.lo_c[self.lim_coord] + eps) & (d < 0)) | \
                                ((qc >= self.hi_c[self.lim_coord] - eps) & (d > 0))
        return out

    def move(self, q, dq):
        n = np.max(np.abs(dq), initial=0.0)
        if n > self.max_step:
            dq = dq * (self.max_step / n)
        return self.project(integrate(self.model, q, dq))


# an attempt has stalled when its cost fell by less than 10 % over the last 12 iterations: at a local
# minimum (a joint pinned at a bound, an unreachable target) it stops falling, while near a solution
# it falls quadratically, and even near a singular solution (linear convergence) steadily
_WINDOW = 12
_PROGRESS = 0.9


def _lm_step(J, r, mu, blocked):
    """dq = (J^T J + mu I)^-1 J^T r with the columns of the ``blocked`` dofs removed (their dq is 0)."""
    Jb = J * ~blocked
    g = Jb.T @ r
    A = Jb.T @ Jb
    A[np.diag_indices_from(A)] += mu
    return np.linalg.solve(A, g), g


def _primary(prob, q, r, pe, oe, max_iter):
    """Levenberg-Marquardt on the primary task from q.  Returns (q, r, pe, oe, iterations, reason)
    with reason "converged", "iterations" or "stalled"."""
    cost = 0.5 * float(r @ r)
    mu, nu = None, 2.0
    window_cost, window_it = cost, 0
    it = 0
    while not prob.met(pe, oe):
        if it >= max_iter:
            return q, r, pe, oe, it, "iterations"
        it += 1
        Jq = prob.jac(q)
        if mu is None:                  # Nielsen's initial damping: 1e-3 max diag(J^T J)
            scale = max(1e-12, float(np.max(np.sum(Jq * Jq, axis=0))))
            mu = 1e-3 * scale
        blocked = np.zeros(prob.model.nv, dtype=bool)
        for _ in range(prob.model.nv + 1):
            dq, g = _lm_step(Jq, r, mu, blocked)
            new = prob.pushing_out(q, dq) & ~blocked
            if not new.any():
                break
            blocked |= new
        if np.max(np.abs(g), initial=0.0) < 1e-14 * max(1.0, cost):
            return q, r, pe, oe, it, "stalled"
        q_t = prob.move(q, dq)
        r_t, pe_t, oe_t = prob.evaluate(q_t)
        cost_t = 0.5 * float(r_t @ r_t)
        if cost_t < cost:
            pred = 0.5 * float(dq @ (mu * dq + g))
            rho = (cost - cost_t) / pred if pred > 0 else 1.0
            mu = max(mu * max(1.0 / 3.0, 1.0 - (2.0 * min(rho, 1.0) - 1.0) ** 3), 1e-15 * scale)
            nu = 2.0
            q, r, pe, oe, cost = q_t, r_t, pe_t, oe_t, cost_t
        else:
            mu *= nu
            nu *= 2.0
            if mu > 1e12 * scale or not np.isfinite(mu):    # no step of any length decreases the error
                return q, r, pe, oe, it, "stalled"
        if it - window_it >= _WINDOW:
            if cost > _PROGRESS * window_cost:
                return q, r, pe, oe, it, "stalled"
            window_cost, window_it = cost, it
    return q, r, pe, oe, it, "converged"


# --- secondary objectives: (value h(q), direction xi = grad h in the tangent space) ------
class _Manipulability:
    """h = log w, w = Yoshikawa manipulability (Yoshikawa 1985) of the task rows; the
    gradient by central differences along integrate (one state at a time: for a handful of states
    the loop is faster than one batched call)."""
    name = "manipulability"

    def __init__(self, prob, h=1e-6):
        self.prob, self.h = prob, h
        self.part = "translation" if prob.mode == "position" else "full"

    def value(self, q):
        return manipulability(self.prob.model, q, self.prob.frame, part=self.part)

    def _log_w(self, q):
        return np.log(max(self.value(q), 1e-300))

    def direction(self, q):
        m, h = self.prob.model, self.h
        g = np.empty(m.nv)
        e = np.zeros(m.nv)
        for i in range(m.nv):
            e[i] = h
            g[i] = (self._log_w(integrate(m, q, e)) - self._log_w(integrate(m, q, -e))) / (2 * h)
            e[i] = 0.0
        return g

    def better(self, h_new, h_old):
        return h_new > h_old


class _Centering:
    """h = -1/2 |difference(q, q_c)|^2, q_c = q with every coordinate that has finite lower and upper
    bounds at the middle of its range; xi = grad h = difference(q, q_c)."""
    name = "joint_centering"

    def __init__(self, prob):
        self.prob = prob
        both = prob.lo_fin & prob.hi_fin
        for o in prob.model._quat_starts:                 # a quaternion has no centre
            both[o:o + 4] = False
        self.mask = both
        self.centre = np.where(both, 0.5 * (np.where(both, prob.lo, 0) + np.where(both, prob.hi, 0)), 0.0)

    def _qc(self, q):
        return np.where(self.mask, self.centre, q)

    def value(self, q):
        d = difference(self.prob.model, q, self._qc(q))
        return -0.5 * float(d @ d)

    def direction(self, q):
        return difference(self.prob.model, q, self._qc(q))

    def better(self, h_new, h_old):
        return h_new > h_old


class _UserGradient:
    name = "user"

    def __init__(self, prob, fn):
        self.prob, self.fn = prob, fn

    def value(self, q):
        return None

    def direction(self, q):
        g = np.asarray(self.fn(q.copy()), dtype=float)
        nv = self.prob.model.nv
        if g.shape != (nv,):
            raise ValueError(f"secondary: the callable must return a gradient of shape ({nv},), got {g.shape}")
        if not np.isfinite(g).all():
            raise ValueError("secondary: the callable returned NaN or infinity")
        return g

    def better(self, h_new, h_old):
        return True


def _null_space(prob, obj, q, r, pe, oe, gain, max_iter, secondary_tol):
    """Gradient steps of obj projected on the null space of the task Jacobian (Spong, Hutchinson and Vidyasagar 2006 eqs.
    (4.49)-(4.51)), each followed by primary iterations that restore the task.  Returns
    (q, r, pe, oe, iterations, steps taken, reason)."""
    it, steps = 0, 0
    h = obj.value(q)
    k = gain
    while it < max_iter:
        it += 1
        Jq = prob.jac(q)
        xi = obj.direction(q)
        blocked = np.zeros(prob.model.nv, dtype=bool)
        for _ in range(prob.model.nv + 1):
            Jb = Jq * ~blocked
            dq = k * (null_space_projector(Jb) @ (xi * ~blocked))       # (I - J^+ J) xi, eq. (4.51)
            new = prob.pushing_out(q, dq) & ~blocked
            if not new.any():
                break
            blocked |= new
        if np.linalg.norm(dq) < secondary_tol:
            return q, r, pe, oe, it, steps, ("the projected gradient vanished" if k == gain
                                            else "the null-space step became small")
        q_t = prob.move(q, dq)
        r_t, pe_t, oe_t = prob.evaluate(q_t)
        q_t, r_t, pe_t, oe_t, used, why = _primary(prob, q_t, r_t, pe_t, oe_t, 20)
        it += used
        h_t = obj.value(q_t) if why == "converged" else None
        if why == "converged" and obj.better(h_t, h):
            q, r, pe, oe, h = q_t, r_t, pe_t, oe_t, h_t
            steps += 1
            k = min(gain, 2.0 * k)
        else:
            k *= 0.5
            if k < 1e-6 * gain:
                return q, r, pe, oe, it, steps, "no null-space step improved the objective"
    return q, r, pe, oe, it, steps, "the iteration limit was reached"


def inverse_kinematics(model: Model, frame: str | int, target: ArrayLike | tuple[ArrayLike, ArrayLike], q0: ArrayLike | None = None,
                       mode: str = "pose", *, tol_position: float = 1e-6,
                       tol_orientation: float = 1e-6, max_iterations: int = 200, restarts: int = 50,
                       rng: int | np.random.Generator | None = None,
                       secondary: str | Callable[[NDArray[np.float64]], ArrayLike] | None = None, secondary_gain: float = 0.5, secondary_iterations: int = 100,
                       secondary_tol: float = 1e-6, max_step: float = 0.5,
                       raise_on_failure: bool = False) -> IKResult:
    """Joint configuration that brings ``frame`` to ``target`` (see the module docstring for the
    method: Levenberg-Marquardt on the SE(3) error, joint limits, restarts, null-space objective).

    ``target``: a 4x4 homogeneous matrix, an ``(R, p)`` pair, or (``mode="position"``) a 3-vector;
    in ``mode="position"`` only the position of a pose target is used.  ``q0``: the initial
    configuration (default: the middle of the finite limits, neutral elsewhere); it is projected
    into ``[model.lower, model.upper]``.

    ``tol_position`` [m] and ``tol_orientation`` [rad]: success means ``|p - p*| <= tol_position``
    and (pose mode) the angle of ``R^T R* <= tol_orientation``.  ``max_iterations``: per attempt,
    for the primary task.  ``restarts``: at most this many further attempts from random
    configurations within the limits (``rng``: seed or ``numpy.random.Generator``), each only
    after a failed one (so a solvable target usually costs one attempt; an unreachable one costs
    all of them).  ``max_step``: the
    largest change of one velocity coordinate per iteration [rad or m].

    ``secondary``: an objective ``h`` to increase in the null space once the task is met:
    ``"manipulability"`` (Yoshikawa's ``w = sqrt(det J J^T)``, Yoshikawa 1985, of the task
    rows; ascent on ``log w`` with a finite-difference gradient), ``"joint_centering"``
    (``h = -1/2 |q - q_centre|^2`` over the coordinates with finite limits) or a callable
    ``f(q) -> (nv,)`` returning the gradient of an objective to *increase* (a tangent vector;
    for a callable, steps are accepted whenever the task is met again).  ``secondary_gain`` is
    ``k`` in ``xi = k grad h``; at most ``secondary_iterations`` iterations are spent on it, and
    it stops when the projected step is below ``secondary_tol``.

    Returns an :class:`IKResult`.  On failure (iteration limit, no further decrease of the error:
    an unreachable target or one beyond the limits) ``success`` is False, ``q`` is the best
    configuration found and ``message`` says why; with ``raise_on_failure=True`` an
    :class:`IKError` carrying the result is raised instead.
    """
    if mode not in ("pose", "position"):
        raise ValueError(f"mode: expected 'pose' or 'position', got {mode!r}")
    model.frame_id(frame)                                   # KeyError for an unknown frame
    R, p = _as_target(target, mode)
    tol_position = _positive(tol_position, "tol_position")
    tol_orientation = _positive(tol_orientation, "tol_orientation")
    max_step = _positive(max_step, "max_step")
    secondary_gain = _positive(secondary_gain, "secondary_gain")
    secondary_tol = _positive(secondary_tol, "secondary_tol")
    max_iterations = _count(max_iterations, "max_iterations", 1)
    restarts = _count(restarts, "restarts", 0)
    secondary_iterations = _count(secondary_iterations, "secondary_iterations", 0)
    prob = _Problem(model, frame, R, p, mode, tol_position, tol_orientation, max_step)

    if secondary is None:
        obj = None
    elif callable(secondary):
        obj = _UserGradient(prob, secondary)
    elif secondary == "manipulability":
        obj = _Manipulability(prob)
    elif secondary == "joint_centering":
        obj = _Centering(prob)
    else:
        raise ValueError(f"secondary: expected None, 'manipulability', 'joint_centering' or a callable "
                         f"returning a gradient, got {secondary!r}")

    if q0 is None:
        q0 = neutral(model)
        both = prob.lo_fin & prob.hi_fin
        q0[both] = 0.5 * (prob.lo[both] + prob.hi[both])
    else:
        q0 = np.asarray(q0, dtype=float)
        if q0.shape != (model.nq,):
            raise ValueError(f"q0: expected shape ({model.nq},), got {q0.shape}")
        if not np.isfinite(q0).all():
            raise ValueError("q0: contains NaN or infinity")
        q0 = normalize(model, q0)
    gen = np.random.default_rng(rng)

    total = 0
    best = None                                            # (cost, q, r, pe, oe)
    reasons = []
    for attempt in range(restarts + 1):
        q = prob.project(q0 if attempt == 0 else random_configuration(model, gen))
        r, pe, oe = prob.evaluate(q)
        q, r, pe, oe, used, why = _primary(prob, q, r, pe, oe, max_iterations)
        total += used
        reasons.append(why)
        cost = 0.5 * float(r @ r)
        if best is None or cost < best[0]:
            best = (cost, q, r, pe, oe)
        if why == "converged":
            break
    else:
        q = best[1]
        r, pe, oe = prob.evaluate(q)
        stalled = reasons.count("stalled")
        why_text = (f"{stalled} attempt(s) stopped where the error no longer decreased (a local minimum: "
                    f"the target may be outside the workspace or beyond the joint limits, or need more restarts)"
                    if stalled else "")
        lim = len(reasons) - stalled
        lim_text = f"{lim} attempt(s) reached the iteration limit (max_iterations={max_iterations})" if lim else ""
        msg = (f"failed after {len(reasons)} attempt(s) and {total} iterations: "
               + "; ".join(t for t in (why_text, lim_text) if t)
               + f".  Best: position error {pe:.3g} m"
               + (f", orientation error {oe:.3g} rad" if mode == "pose" else "")
               + f" (tolerances {tol_position:g} m" + (f", {tol_orientation:g} rad)" if mode == "pose" else ")"))
        res = IKResult(q, False, total, pe, oe, msg, len(reasons), obj.value(q) if obj else None)
        if raise_on_failure:
            raise IKError(msg, res)
        return res

    msg = f"converged in {total} iterations ({len(reasons)} attempt(s))"
    if obj is not None and secondary_iterations > 0:
        h0 = obj.value(q)
        q, r, pe, oe, used, steps, why = _null_space(prob, obj, q, r, pe, oe, secondary_gain,
                                                     secondary_iterations, secondary_tol)
        total += used
        h1 = obj.value(q)
        gain_text = f" from {h0:.6g} to {h1:.6g}" if h0 is not None else ""
        msg += f"; secondary objective {obj.name!r}: {steps} null-space step(s){gain_text}, stopped because {why}"

    # never report a success that is not one: recompute the errors and check the limits
    r, pe, oe = prob.evaluate(q)
    ok = prob.met(pe, oe) and prob.inside(q)
    if not ok:                                             # a guard: the phases above keep the task met
        msg = (f"internal check failed: the configuration reached does not meet the task (position error "
               f"{pe:.3g} m, orientation error {oe:.3g} rad, inside the limits: {prob.inside(q)})")
        res = IKResult(q, False, total, pe, oe, msg, len(reasons), obj.value(q) if obj else None)
        if raise_on_failure:
            raise IKError(msg, res)
        return res
    return IKResult(q, True, total, pe, oe, msg, len(reasons), obj.value(q) if obj else None)
