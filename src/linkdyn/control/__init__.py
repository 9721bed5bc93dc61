"""Controllers for ``Simulation(controller=...)``: computed torque (:func:`computed_torque`),
operational space (:func:`operational_space`), and hybrid force/position control
(:class:`HybridForcePosition`).

Each is a callable ``controller(t, q, v) -> tau`` built on a model (which may differ from the
simulated one: a controller's model error is the point of testing it).

**Hybrid force/position control** (Yoshikawa 1987, IEEE J. Robotics and Automation 3(5);
equations labelled (H1)-(H7) here).  The task coordinates x = f(q) (a point, or a frame: [p; R]) meet a
constraint C(x) = 0 (a wall); E_f = dC/dx (m x n) spans the constrained directions, E_p the free
ones, E = [E_p; E_f] invertible (here orthonormal: E^-1 = E^T).  With the contact force lambda
(what the arm pushes with along E_f) the dynamics are D q'' + h = tau - J^T E_f^T lambda (H1),
x'' = J q'' + J' q' (H2), and the free directions move by E x'' + E' x' = [x_p''; 0] (H3).
Substituting q'' from (H1) and (H2) into (H3) gives (H4):

    [I; 0] x_p'' = E (J D^-1 (tau - h - J^T E_f^T lambda) + J' q') + E' J q'

(a form that circulates in lecture notes has E J^-1 where E J is meant, and leaves J' q'
outside E).  Asking for
x_p'' = u_1 and lambda = u_2 (H5) and solving for tau:

    tau = D J^-1 (E^-1 ([I; 0] u_1 - E' J q') - J' q') + h + J^T E_f^T u_2

(H6) (the circulating form has J E^-1 for J^-1 E^-1, drops -J' q' and puts h inside D{};
checked numerically, tests/test_control.py: that form misses x_p'' and lambda, (H6) gives them to
round-off).  With it x_p'' = u_1 and lambda = u_2 exactly when the model is exact, and the loops (H7)

    u_1 = x_d'' - K_1 e_p - K_2 e_p',     u_2 = lambda_d - K_3 int e_f dt

track the position along the wall and the force into it; the integral of the measured force
error absorbs model errors.  For a task of fewer coordinates than joints, J^-1 becomes the
dynamically consistent inverse D^-1 J^T (J D^-1 J^T)^-1 and the remaining motion is damped.

Layer (docs/architecture.md): beside ``structure``, ``analysis`` and ``viz``, above the constraint layer.
May import: the layers below.  Imported by: the top-level ``linkdyn``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from ..dynamics.crba import crba
from ..dynamics.rnea import nonlinear_effects
from ..kinematics import frame_pose, frame_velocity, jacobian, jacobian_dot_times_v

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model

    #: ``target(t) -> (x_d, x_d', x_d'')``; x_d is (p_d, R_d) for a frame task
    Target = Callable[[float], tuple[ArrayLike | tuple[ArrayLike, ArrayLike], ArrayLike, ArrayLike]]


def computed_torque(model: Model, trajectory: Callable[[float], tuple[ArrayLike, ArrayLike, ArrayLike]], kp: float,
                    kd: float) -> Callable[[float, ArrayLike, ArrayLike], NDArray[np.float64]]:
    """tau = M (q_d'' - kp e - kd e') + b (``trajectory(t) -> (q_d, v_d, a_d)``; e on the
    configuration manifold)."""
    from ..model.configuration import difference

    def control(t: float, q: ArrayLike, v: ArrayLike) -> NDArray[np.float64]:
        qd, vd, ad = trajectory(t)
        e = -difference(model, q, qd)
        a = np.asarray(ad, dtype=float) - kp * e - kd * (v - np.asarray(vd, dtype=float))
        return crba(model, q) @ a + nonlinear_effects(model, q, v)
    return control


class _Task:
    """Task coordinates of a point (``axes`` of its world position) or of a frame ([p; R])."""

    def __init__(self, model, frame, kind, point, axes):
        if kind not in ("point", "frame"):
            raise ValueError(f"task: expected 'point' or 'frame', got {kind!r}")
        self.model, self.frame, self.kind = model, frame, kind
        self.point = np.asarray(point, dtype=float)
        self.axes = np.arange(3) if axes is None else np.asarray(axes, dtype=int)
        self.n = 6 if kind == "frame" else len(self.axes)

    def terms(self, q, v):
        """(x: position (n_pos,) and R or None, J (n, nv), J' v (n,), x' (n,))."""
        m = self.model
        T = frame_pose(m, q, self.frame)
        Jf = jacobian(m, q, self.frame, "local_world_aligned")
        bias = jacobian_dot_times_v(m, q, v, self.frame, "local_world_aligned")
        if self.kind == "frame":
            return (T[:3, 3], T[:3, :3]), Jf, bias, Jf @ v
        r = T[:3, :3] @ self.point
        w = frame_velocity(m, q, v, self.frame, "local_world_aligned")[3:]
        J = Jf[:3] - np.cross(r, Jf[3:].T).T
        jdv = bias[:3] + np.cross(bias[3:], r) + np.cross(w, np.cross(w, r))
        p = T[:3, 3] + r
        return (p[self.axes], None), J[self.axes], jdv[self.axes], (J @ v)[self.axes]

    def error(self, x, target):
        """x - x_d (n,): for a frame, [p - p_d; log(R R_d^T)]."""
        if self.kind == "frame":
            from ..spatial import log3
            (p, R), (pd, Rd) = x, target
            return np.concatenate([p - np.asarray(pd, dtype=float), log3(R @ np.asarray(Rd, dtype=float).T)])
        return x[0] - np.asarray(target, dtype=float)


def _basis(normal, n):
    """E = [E_p; E_f] (n x n, orthonormal) with E_f = normal^T / |normal| (no E_f: E_p = I)."""
    if normal is None:
        return np.eye(n), np.eye(n), np.zeros((0, n))
    nf = np.asarray(normal, dtype=float).reshape(-1)
    if nf.shape != (n,):
        raise ValueError(f"normal: expected {n} components (the task's coordinates), got {nf.shape}")
    nf = nf / np.linalg.norm(nf)
    # the complement: the last n - 1 left singular vectors of nf
    U = np.linalg.svd(nf[:, None])[0]
    Ep = U[:, 1:].T
    return np.vstack([Ep, nf[None, :]]), Ep, nf[None, :]


class HybridForcePosition:
    """Hybrid force/position control (module docstring, (H1)-(H7)).

    ``frame`` and ``task`` ("point": the world position of ``point`` of ``frame``, on ``axes``;
    "frame": its pose [p; R], 6 coordinates); ``normal`` (task coordinates) the wall's normal
    E_f, pointing into the wall; ``target(t) -> (x_d, x_d', x_d'')`` the task motion (its
    normal part is ignored; for a frame task x_d = (p_d, R_d) and the rates 6-vectors
    [v; w]); ``force(t)`` the force lambda_d to push with along ``normal``; gains K_1, K_2 (the
    position loop) and K_3 (the force integral); ``measure(t, q, v) -> lambda`` the force sensor
    (default: none, the force loop is open: u_2 = lambda_d); ``damping``: on the joint motion a
    task of fewer coordinates than joints leaves free.

    ``last`` holds the last (u_1, u_2, lambda measured) for plots."""

    def __init__(self, model: Model, frame: str | int, normal: ArrayLike | None, target: Target, force: Callable[[float], float],
                 K1: float, K2: float, K3: float = 0.0, *, task: str = "point", point: ArrayLike = (0.0, 0.0, 0.0),
                 axes: Sequence[int] | None = None, measure: Callable[[float, ArrayLike, ArrayLike], float] | None = None,
                 damping: float = 1.0) -> None:
        self.model = model
        self.task = _Task(model, frame, task, point, axes)
        self.E, self.Ep, self.Ef = _basis(normal, self.task.n)
        self.target, self.force, self.measure = target, force, measure
        self.K1, self.K2, self.K3, self.damping = float(K1), float(K2), float(K3), float(damping)
        self._integral, self._t = 0.0, None
        self.last = None

    def __call__(self, t: float, q: ArrayLike, v: ArrayLike) -> NDArray[np.float64]:
        m, tk = self.model, self.task
        x, J, jdv, xdot = tk.terms(q, v)
        xd, vd, ad = self.target(t)
        e = tk.error(x, xd)
        ep, ep_dot = self.Ep @ e, self.Ep @ (xdot - np.asarray(vd, dtype=float))
        u1 = self.Ep @ np.asarray(ad, dtype=float) - self.K1 * ep - self.K2 * ep_dot       # (H7)
        lam_d = float(self.force(t)) if self.Ef.shape[0] else 0.0
        lam = None
        if self.measure is not None:
            lam = float(self.measure(t, q, v))
            if self._t is not None and t > self._t:
                self._integral += (lam - lam_d) * (t - self._t)
            self._t = t
        u2 = lam_d - self.K3 * self._integral                                            # (H7)
        D, h = crba(m, q), nonlinear_effects(m, q, v)
        # x'' wanted: E^-1 ([I; 0] u_1 - E' J q'), E constant (a plane): E^T [u_1; 0]
        xdd = self.Ep.T @ u1
        rhs = xdd - jdv
        if J.shape[0] == m.nv:
            qdd = np.linalg.solve(J, rhs)
            tau_null = 0.0
        else:                                      # the dynamically consistent inverse, the rest damped
            DiJt = np.linalg.solve(D, J.T)
            Jbar = DiJt @ np.linalg.inv(J @ DiJt)
            qdd = Jbar @ rhs
            N = np.eye(m.nv) - J.T @ Jbar.T
            tau_null = N @ (-self.damping * (D @ v))
        tau = D @ qdd + h + tau_null                                                    # (H6)
        if self.Ef.shape[0]:
            tau = tau + J.T @ (self.Ef[0] * u2)
        self.last = (u1, u2, lam)
        return tau


def operational_space(model: Model, frame: str | int, target: Target, K1: float, K2: float, *, task: str = "point",
                      point: ArrayLike = (0.0, 0.0, 0.0), axes: Sequence[int] | None = None,
                      damping: float = 1.0) -> HybridForcePosition:
    """Operational-space (task-space) control of ``frame``'s point or pose: x'' = x_d'' - K_1 e
    - K_2 e' by tau = D J^-1 (x'' - J' q') + h (the dynamically consistent inverse for a task
    of fewer coordinates than joints, the rest damped): :class:`HybridForcePosition` with no
    constrained direction."""
    return HybridForcePosition(model, frame, None, target, lambda t: 0.0, K1, K2, 0.0, task=task, point=point,
                               axes=axes, damping=damping)
