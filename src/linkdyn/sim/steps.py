"""One step of the equations of motion on the configuration manifold (:func:`simulate` runs them:
:mod:`linkdyn.sim.integrators`).

The state is (q, v); v' comes from the articulated body algorithm (for a closed chain: the
closed-chain forward dynamics, ``linkdyn.loops``) and q moves by ``linkdyn.integrate`` (the
exponential map for ball and free joints, Nakamura and Yamane 2000 eqs. 34-38), so quaternions stay of unit
norm without renormalization tricks.  A closed chain is projected back onto its constraint
manifold after every step: the loops are closed by Newton's method and the velocity is
projected in the kinetic-energy metric, so the loop error stays at round-off level.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from .._api import as_states
from ..loops.data import prepare
from ..loops.kinematics import LoopClosureError, close_loops
from ..model.configuration import dexpinv

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model


def _one_state(model, q, v, tau):
    """(q, v, tau) checked once for a step (1-D float64 of the model's sizes), and the model's
    prepared layer, which the step's stages then call without checks."""
    s = as_states(model, q=q, v=v, tau=tau)
    if s.batch is not None:
        raise ValueError(f"a step takes one state; got a stack of {s.batch}")
    return s.q, s.v, s.tau, prepare(model)


#: a closed chain's loops are closed to this (largest loop error) after every step
CLOSURE_TOL = 1e-11


def project(model, q, v, tol=CLOSURE_TOL, max_iter=10, data=None):
    """(q, v) of a closed chain put back on its constraint manifold (a no-op for a tree):
    Newton steps on the loop error in the kinetic-energy metric, then the velocity projected
    in the same metric (both compiled, ``linkdyn.loops``).  ``data``: the model's prepared layer
    (:func:`linkdyn.loops.data.prepare`), made here when not given; q and v must then be 1-D
    float64 arrays of the model's sizes."""
    if not model.nloops:
        return q, v
    if data is None:
        from .._api import as_states
        s = as_states(model, q=q, v=v)
        if s.batch is not None:
            raise ValueError("project: takes one state")
        q, v, data = s.q, s.v, prepare(model)
    for _ in range(max_iter):
        err = np.abs(data.loop_error(q)).max()
        if err <= tol:
            break
        q = data.integrate(q, data.position_correction(q))
    else:
        err = np.abs(data.loop_error(q)).max()
        if err > tol:
            # the metric Newton step treats the cut joint's motion as at closure; with a rotation
            # error left it can stall near 1e-8 (first-order steps leave that much): finish with
            # the least-squares Newton over every dof, which uses the loop Jacobian as it is
            try:
                q = close_loops(model, q, tol=tol)
            except LoopClosureError:
                pass
            err = np.abs(data.loop_error(q)).max()
        if err > 1e3 * tol:
            raise LoopClosureError(f"the loops drifted apart ({err:.3g}) and do not close again: the step is too "
                                   "large for the motion, or the mechanism passed a singular configuration")
    return q, v + data.velocity_projection(q, v)


def joint_friction_power(model: Model, v: NDArray[np.float64]) -> float:
    """The power the joints' viscous and Coulomb friction take out of the motion,
    v . (damping v + friction sign(v)) >= 0 (the armature stores energy, it takes none)."""
    d, f = model.damping, model.friction
    if not (d.any() or f.any()):
        return 0.0
    if model._full is not None:     # a coupled model: the joints' own velocities v_full = G v (cross terms)
        full = model._full
        v, d, f = model._coupling.v(v), full.damping, full.friction
    return float(v @ (d * v) + np.abs(v) @ f)


def semi_implicit_euler_step(model: Model, q: NDArray[np.float64], v: NDArray[np.float64], tau: ArrayLike, dt: float, accel: Callable[[NDArray[np.float64], NDArray[np.float64]], ArrayLike] | None = None,
                             project_loops: bool = True, dissipation: list[float] | None = None
                             ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """v+ = v + dt a(q, v),  q+ = q (+) v+ dt  (symplectic Euler).  ``dissipation``: a list to
    which the energy the joints' friction took over the step is appended (dt times its power at
    v+, the velocity the step moves with)."""
    q, v, tau, data = _one_state(model, q, v, tau)
    v1 = v + dt * (data.accel(q, v, tau) if accel is None else accel(q, v))
    if dissipation is not None:
        dissipation.append(dt * joint_friction_power(model, v1))
    q1 = data.integrate(q, v1, float(dt))
    return project(model, q1, v1, data=data) if project_loops else (q1, v1)


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
    q, v, tau, data = _one_state(model, q, v, tau)
    integ = data.integrate
    if accel is None:
        def accel(q_, v_):
            return data.accel(q_, v_, tau)
    a1 = accel(q, v)
    k1 = v
    th2 = 0.5 * dt * k1
    v2 = v + 0.5 * dt * a1
    a2 = accel(integ(q, th2), v2)
    k2 = dexpinv(model, th2, v2)
    th3 = 0.5 * dt * k2
    v3 = v + 0.5 * dt * a2
    a3 = accel(integ(q, th3), v3)
    k3 = dexpinv(model, th3, v3)
    th4 = dt * k3
    v4 = v + dt * a3
    a4 = accel(integ(q, th4), v4)
    k4 = dexpinv(model, th4, v4)
    q1 = integ(q, dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4))
    v1 = v + dt / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
    if dissipation is not None:
        P = joint_friction_power
        dissipation.append(dt / 6.0 * (P(model, v) + 2.0 * P(model, v2) + 2.0 * P(model, v3) + P(model, v4)))
    return project(model, q1, v1, data=data) if project_loops else (q1, v1)


#: the integrators by name (Simulation(integrator=...), simulate(method=...))
STEPS = {"rk4": rk4_step, "euler": semi_implicit_euler_step}
