"""Integrators on the configuration manifold, and a model simulated with no script.

The one-step integrators (semi-implicit Euler, RK4 in Munthe-Kaas form) and the projection of a
closed chain back onto its loops are in :mod:`linkdyn.sim.steps` (re-exported here);
:func:`simulate` runs them from a start state, with joint limits and contacts by the event scheme of
:mod:`linkdyn.sim.unilateral`, into a :class:`~linkdyn.recording.Trajectory`.  For scripted
structure changes, controllers and recordings across segments use :class:`linkdyn.sim.Simulation`."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from ..dynamics.energy import kinetic_energy, potential_energy
from ..recording import Trajectory
from .steps import STEPS as _STEPS, joint_friction_power, project, rk4_step, semi_implicit_euler_step  # noqa: F401
from .unilateral import Unilateral

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model


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
