"""Integrators on the configuration manifold.

The state is (q, v); v' comes from the articulated body algorithm and q moves by
``linkdyn.integrate`` (the exponential map for ball and free joints, seed 004 eqs. 34-38),
so quaternions stay of unit norm without renormalization tricks.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dynamics.aba import aba
from ..dynamics.energy import kinetic_energy, potential_energy
from ..model.configuration import integrate


def semi_implicit_euler_step(model, q, v, tau, dt):
    """v+ = v + dt a(q, v),  q+ = q (+) v+ dt  (symplectic Euler)."""
    v1 = v + dt * aba(model, q, v, tau)
    return integrate(model, q, v1, dt), v1


def rk4_step(model, q, v, tau, dt):
    """Classical 4th-order Runge-Kutta with the stages moved along the manifold from q."""
    a1 = aba(model, q, v, tau)
    v2 = v + 0.5 * dt * a1
    a2 = aba(model, integrate(model, q, v, 0.5 * dt), v2, tau)
    v3 = v + 0.5 * dt * a2
    a3 = aba(model, integrate(model, q, v2, 0.5 * dt), v3, tau)
    v4 = v + dt * a3
    a4 = aba(model, integrate(model, q, v3, dt), v4, tau)
    q1 = integrate(model, q, (v + 2.0 * v2 + 2.0 * v3 + v4) / 6.0, dt)
    return q1, v + dt / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)


_STEPS = {"rk4": rk4_step, "euler": semi_implicit_euler_step}


@dataclass
class Trajectory:
    """Recorded states: ``t`` (K,), ``q`` (K, nq), ``v`` (K, nv), ``tau`` (K, nv), and the
    kinetic / potential energy at each sample."""
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    tau: np.ndarray
    kinetic: np.ndarray
    potential: np.ndarray

    @property
    def energy(self) -> np.ndarray:
        return self.kinetic + self.potential

    def save(self, path) -> None:
        np.savez_compressed(path, t=self.t, q=self.q, v=self.v, tau=self.tau,
                            kinetic=self.kinetic, potential=self.potential)


def simulate(model, q0, v0, duration: float, dt: float = 1e-3, controller=None, method: str = "rk4",
             record_every: int = 1) -> Trajectory:
    """Integrate from (q0, v0) for ``duration`` seconds with step ``dt``.

    ``controller(t, q, v) -> tau`` gives the joint torques (zero if None).  ``method`` is
    "rk4" or "euler" (semi-implicit).  Every ``record_every``-th step is recorded.
    """
    if method not in _STEPS:
        raise ValueError(f"method: expected one of {list(_STEPS)}, got {method!r}")
    if not (dt > 0 and np.isfinite(dt)) or not (duration >= 0 and np.isfinite(duration)):
        raise ValueError(f"dt and duration must be positive and finite, got dt={dt}, duration={duration}")
    step = _STEPS[method]
    q = np.array(q0, dtype=float)
    v = np.array(v0, dtype=float)
    zero = np.zeros(model.nv)
    nsteps = int(round(duration / dt))
    ts, qs, vs, taus = [], [], [], []
    for k in range(nsteps + 1):
        t = k * dt
        tau = zero if controller is None else np.asarray(controller(t, q, v), dtype=float)
        if k % record_every == 0 or k == nsteps:
            ts.append(t), qs.append(q), vs.append(v), taus.append(tau)
        if k < nsteps:
            q, v = step(model, q, v, tau, dt)
    Q, V = np.array(qs), np.array(vs)
    return Trajectory(np.array(ts), Q, V, np.array(taus), kinetic_energy(model, Q, V), potential_energy(model, Q))
