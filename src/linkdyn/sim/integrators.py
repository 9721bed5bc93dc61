"""Integrators on the configuration manifold.

The state is (q, v); v' comes from the articulated body algorithm (for a closed chain: the
closed-chain forward dynamics, ``linkdyn.loops``) and q moves by ``linkdyn.integrate`` (the
exponential map for ball and free joints, Nakamura and Yamane 2000 eqs. 34-38), so quaternions stay of unit
norm without renormalization tricks.  A closed chain is projected back onto its constraint
manifold after every step: the loops are closed by Newton's method and the velocity is
projected in the kinetic-energy metric, so the loop error stays at round-off level.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..dynamics.aba import aba
from ..dynamics.energy import kinetic_energy, potential_energy
from ..model.configuration import dexpinv, integrate

if TYPE_CHECKING:
    import os
    from pathlib import Path

    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model


def _accel(model, q, v, tau):
    if model.nloops:
        from ..loops.dynamics import constrained_dynamics
        return constrained_dynamics(model, q, v, tau)
    return aba(model, q, v, tau)


#: a closed chain's loops are closed to this (largest loop error) after every step
CLOSURE_TOL = 1e-11


def project(model, q, v, tol=CLOSURE_TOL, max_iter=10):
    """(q, v) of a closed chain put back on its constraint manifold (a no-op for a tree):
    Newton steps on the loop error in the kinetic-energy metric, then the velocity projected
    in the same metric (both compiled, ``linkdyn.loops``)."""
    if not model.nloops:
        return q, v
    from ..loops.dynamics import position_correction, velocity_projection
    from ..loops.kinematics import LoopClosureError, loop_error
    for _ in range(max_iter):
        err = np.abs(loop_error(model, q)).max()
        if err <= tol:
            break
        q = integrate(model, q, position_correction(model, q))
    else:
        err = np.abs(loop_error(model, q)).max()
        if err > tol:
            # the metric Newton step treats the cut joint's motion as at closure; with a rotation
            # error left it can stall near 1e-8 (first-order steps leave that much): finish with
            # the least-squares Newton over every dof, which uses the loop Jacobian as it is
            from ..loops.kinematics import close_loops
            try:
                q = close_loops(model, q, tol=tol)
            except LoopClosureError:
                pass
            err = np.abs(loop_error(model, q)).max()
        if err > 1e3 * tol:
            raise LoopClosureError(f"the loops drifted apart ({err:.3g}) and do not close again: the step is too "
                                   "large for the motion, or the mechanism passed a singular configuration")
    return q, v + velocity_projection(model, q, v)


def joint_friction_power(model: Model, v: NDArray[np.float64]) -> float:
    """The power the joints' viscous and Coulomb friction take out of the motion,
    v . (damping v + friction sign(v)) >= 0 (the armature stores energy, it takes none)."""
    d, f = model.damping, model.friction
    if not (d.any() or f.any()):
        return 0.0
    return float(v @ (d * v) + np.abs(v) @ f)


def semi_implicit_euler_step(model: Model, q: NDArray[np.float64], v: NDArray[np.float64], tau: ArrayLike, dt: float, accel: Callable[[NDArray[np.float64], NDArray[np.float64]], ArrayLike] | None = None,
                             project_loops: bool = True, dissipation: list[float] | None = None
                             ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """v+ = v + dt a(q, v),  q+ = q (+) v+ dt  (symplectic Euler).  ``dissipation``: a list to
    which the energy the joints' friction took over the step is appended (dt times its power at
    v+, the velocity the step moves with)."""
    v1 = v + dt * (_accel(model, q, v, tau) if accel is None else accel(q, v))
    if dissipation is not None:
        dissipation.append(dt * joint_friction_power(model, v1))
    q1 = integrate(model, q, v1, dt)
    return project(model, q1, v1) if project_loops else (q1, v1)


def rk4_step(model: Model, q: NDArray[np.float64], v: NDArray[np.float64], tau: ArrayLike, dt: float, accel: Callable[[NDArray[np.float64], NDArray[np.float64]], ArrayLike] | None = None,
             project_loops: bool = True, dissipation: list[float] | None = None
             ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The classical 4th-order Runge-Kutta method on the configuration manifold, in the
    Runge-Kutta-Munthe-Kaas form: every stage's configuration is q (+) theta_k (the joints'
    exponential maps from q), and the stages' velocities enter the final increment through
    dexp^-1 of their theta (``linkdyn.model.configuration.dexpinv``); without that correction
    RK4 is only second order on rotations (spherical and free joints).  Velocities are a vector
    space and step as in classical RK4.  ``accel(q, v)``: the acceleration (default: the
    forward dynamics of the model under ``tau``); ``project_loops``: project onto the loops
    after the step; ``dissipation``: a list to which the energy the joints' friction took over
    the step is appended, by the same quadrature over the stages' velocities (the energy ledger's
    term of an extra state W' = v . tau_friction(v), integrated with the motion)."""
    if accel is None:
        def accel(q_, v_):
            return _accel(model, q_, v_, tau)
    a1 = accel(q, v)
    k1 = v
    th2 = 0.5 * dt * k1
    v2 = v + 0.5 * dt * a1
    a2 = accel(integrate(model, q, th2), v2)
    k2 = dexpinv(model, th2, v2)
    th3 = 0.5 * dt * k2
    v3 = v + 0.5 * dt * a2
    a3 = accel(integrate(model, q, th3), v3)
    k3 = dexpinv(model, th3, v3)
    th4 = dt * k3
    v4 = v + dt * a3
    a4 = accel(integrate(model, q, th4), v4)
    k4 = dexpinv(model, th4, v4)
    q1 = integrate(model, q, dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4))
    v1 = v + dt / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
    if dissipation is not None:
        P = joint_friction_power
        dissipation.append(dt / 6.0 * (P(model, v) + 2.0 * P(model, v2) + 2.0 * P(model, v3) + P(model, v4)))
    return project(model, q1, v1) if project_loops else (q1, v1)


_STEPS = {"rk4": rk4_step, "euler": semi_implicit_euler_step}


@dataclass
class Trajectory:
    """Recorded states: ``t`` (K,), ``q`` (K, nq), ``v`` (K, nv), ``tau`` (K, nv), the
    kinetic / potential energy at each sample, and for a closed chain ``loop_error`` (K,),
    the largest loop-closure error (zeros for a tree)."""
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    tau: np.ndarray
    kinetic: np.ndarray
    potential: np.ndarray
    loop_error: np.ndarray = None
    events: list = None

    @property
    def energy(self) -> np.ndarray:
        return self.kinetic + self.potential

    def save(self, path: str | os.PathLike[str]) -> Path:
        """An ``.npz`` of the arrays, written whole or not at all (temporary file, fsync,
        rename); ``path`` as given (``.npz`` added, with a warning, when it has no suffix).
        Returns the path written."""
        from .recording import atomic_savez
        return atomic_savez(path, t=self.t, q=self.q, v=self.v, tau=self.tau, kinetic=self.kinetic,
                            potential=self.potential, loop_error=self.loop_error)


def simulate(model: Model, q0: ArrayLike, v0: ArrayLike, duration: float, dt: float = 1e-3,
             controller: Callable[[float, NDArray[np.float64], NDArray[np.float64]], ArrayLike] | None = None, method: str = "rk4",
             record_every: int = 1, limits: bool = True, contacts: bool = True) -> Trajectory:
    """Integrate from (q0, v0) for ``duration`` seconds with step ``dt``.

    ``controller(t, q, v) -> tau`` gives the joint torques (zero if None).  ``method`` is
    "rk4" or "euler" (semi-implicit).  Every ``record_every``-th step is recorded.  A closed
    chain (``model.loops``) is integrated with its multiplier-form forward dynamics and
    projected onto its constraints after every step; (q0, v0) must close the loops to within
    1e-6 (``linkdyn.loops.close_loops``, ``project_velocity``) and are projected first.
    Joint limits and contacts (``linkdyn.contact``) hold unless ``limits`` / ``contacts`` is
    False, as in :class:`linkdyn.Simulation`; the impacts are in ``Trajectory.events``.
    """
    if method not in _STEPS:
        raise ValueError(f"method: expected one of {list(_STEPS)}, got {method!r}")
    if not (dt > 0 and np.isfinite(dt)) or not (duration >= 0 and np.isfinite(duration)):
        raise ValueError(f"dt and duration must be positive and finite, got dt={dt}, duration={duration}")
    step = _STEPS[method]
    q = np.array(q0, dtype=float)
    v = np.array(v0, dtype=float)
    if model.nloops:
        from ..loops.kinematics import loop_error, loop_jacobian
        err = np.abs(loop_error(model, q)).max()
        verr = np.abs(loop_jacobian(model, q) @ v).max()
        if err > 1e-6 or verr > 1e-6 * max(1.0, np.abs(v).max()):
            raise ValueError(f"q0, v0: the initial state violates the loop closures (position error {err:.3g}, "
                             f"velocity error {verr:.3g}); use linkdyn.loops.close_loops and project_velocity")
        q, v = project(model, q, v)
    from .unilateral import Unilateral
    uni = Unilateral(model, limits, contacts, method)
    uni = None if uni.empty else uni
    events = []
    if uni is not None:
        q, v = uni.correct(q, v)
    zero = np.zeros(model.nv)
    nsteps = int(round(duration / dt))
    rows = []                               # (t, q, v, tau): one append per sample, whole or not at all
    try:
        for k in range(nsteps + 1):
            t = k * dt
            tau = zero if controller is None else np.asarray(controller(t, q, v), dtype=float)
            if tau.shape != (model.nv,) or not np.isfinite(tau).all():
                what = "non-finite torques" if tau.shape == (model.nv,) else f"shape {tau.shape}"
                raise ValueError(f"controller: returned {what} at t = {t:.6g} s (expected ({model.nv},) finite values)")
            if k % record_every == 0 or k == nsteps:
                rows.append((t, q, v, tau))
            if k < nsteps:
                try:
                    if uni is not None:
                        q1, v1, evs = uni.step(q, v, tau, dt, t)
                        events.extend(evs)
                    else:
                        q1, v1 = step(model, q, v, tau, dt)
                except (ValueError, FloatingPointError, np.linalg.LinAlgError) as exc:
                    raise FloatingPointError(f"the simulation blew up in the step from t = {t:.6g} s (largest |v| "
                                             f"before it: {np.abs(v).max():.3g}, largest |tau|: {np.abs(tau).max():.3g}): "
                                             f"{type(exc).__name__}: {exc}") from exc
                if not (np.isfinite(q1).all() and np.isfinite(v1).all()):
                    raise FloatingPointError(f"the simulation blew up in the step from t = {t:.6g} s (largest |v| "
                                             f"before it: {np.abs(v).max():.3g}): the state became non-finite")
                q, v = q1, v1
    except BaseException as exc:            # a failure or Ctrl-C: keep what was computed
        exc.trajectory = _trajectory(model, rows, events)
        note = (f"linkdyn: the trajectory up to t = {rows[-1][0]:.6g} s ({len(rows)} samples) is kept as the "
                "exception's .trajectory" if rows else "")
        if note and hasattr(exc, "add_note"):
            exc.add_note(note)
        raise
    return _trajectory(model, rows, events)


def _trajectory(model, rows, events) -> Trajectory:
    ts = [r[0] for r in rows]
    Q = np.array([r[1] for r in rows]).reshape(len(rows), model.nq)
    V = np.array([r[2] for r in rows]).reshape(len(rows), model.nv)
    taus = [r[3] for r in rows]
    errs = np.zeros(len(ts))
    if model.nloops:
        from ..loops.kinematics import loop_error
        errs = np.array([np.abs(loop_error(model, x)).max() for x in Q])
    kin = kinetic_energy(model, Q, V) if len(ts) else np.zeros(0)
    pot = potential_energy(model, Q) if len(ts) else np.zeros(0)
    return Trajectory(np.array(ts), Q, V, np.array(taus).reshape(len(taus), model.nv), kin, pot, errs, list(events))
