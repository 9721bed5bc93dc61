"""The joints' Coulomb friction over a step taken implicitly (``linkdyn._kernels.friction``):
the closed form of one joint, the optimality conditions on random coupled problems, and the
energy it takes (never gives)."""
from __future__ import annotations

import numpy as np
import pytest

from linkdyn._kernels.friction import friction_prox


def _solve(M, vs, h, f):
    v1 = vs.copy()
    friction_prox(M, vs, h, f, v1)
    return v1


@pytest.mark.parametrize("vs", [-3.0, -0.02, -1e-3, 0.0, 4e-4, 0.05, 2.0])
def test_one_joint_is_the_soft_threshold(vs):
    """One dof of inertia I: v1 = sign(v*) max(|v*| - h f / I, 0) (stuck below the breakaway)."""
    I, h, f = 0.1, 2e-3, 0.1
    v1 = _solve(np.array([[I]]), np.array([vs]), h, np.array([f]))
    assert v1[0] == pytest.approx(np.sign(vs) * max(abs(vs) - h * f / I, 0.0), abs=1e-15)


@pytest.mark.parametrize("seed", range(8))
def test_coupled_joints_meet_the_conditions_and_only_take_energy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    B = rng.normal(size=(n, n))
    M = B @ B.T + 0.05 * np.eye(n)
    h = 2e-3
    f = np.where(rng.random(n) < 0.7, rng.uniform(0.0, 50.0, n), 0.0)
    vs = rng.normal(scale=0.05, size=n)
    v1 = _solve(M, vs, h, f)
    P = M @ (v1 - vs)
    scale = np.abs(M @ vs).max() + h * f.max()
    tol = 1e-11 * scale
    for d in range(n):
        if f[d] == 0.0:
            assert abs(P[d]) <= tol                                   # no friction: no impulse
        elif v1[d] == 0.0:
            assert abs(P[d]) <= h * f[d] + tol                        # stuck: inside the box
        else:
            assert P[d] == pytest.approx(-h * f[d] * np.sign(v1[d]), abs=tol)   # sliding: against it
    # the impulse's work on the step's velocity, and the energy: taken, never given
    assert P @ v1 == pytest.approx(-h * np.sum(f * np.abs(v1)), abs=tol * np.abs(v1).sum() + 1e-300)
    assert 0.5 * v1 @ M @ v1 <= 0.5 * vs @ M @ vs * (1 + 1e-12)
    # the minimum of the convex objective: no coordinate move lowers it
    phi = lambda v: 0.5 * (v - vs) @ M @ (v - vs) + h * np.sum(f * np.abs(v))     # noqa: E731
    base = phi(v1)
    for d in range(n):
        for step in (1e-6, -1e-6):
            e = np.zeros(n)
            e[d] = step
            assert phi(v1 + e) >= base - 1e-15 * max(1.0, abs(base))


def test_without_friction_the_velocity_is_kept():
    M = np.array([[2.0, 0.3], [0.3, 1.0]])
    vs = np.array([0.4, -0.7])
    assert np.array_equal(_solve(M, vs, 1e-3, np.zeros(2)), vs)


# ------------------------------------------------------------------------------------------
# in the time step
def _arm(friction, mass=0.5, length=0.2, armature=0.01):
    import linkdyn as ld
    b = ld.ModelBuilder("arm")
    b.add_body("rod", "world", ld.Revolute("y"), inertia=ld.Inertia(mass, [0, 0, -length], np.eye(3) * 1e-4),
               lower=-3.0, upper=3.0, armature=armature, friction=friction)   # (limits: the time step runs it)
    return b.build()


@pytest.mark.parametrize("compiled", [True, False])
def test_a_joint_held_by_friction_stays_at_rest_at_every_step(compiled, monkeypatch):
    """A horizontal arm whose weight's torque (0.98 N m) is below its joint's friction (1.5 N m)
    stays where it is, v = 0 at every step.  Taken explicitly, the friction reversed a velocity of
    h f / I every step (the joint chattered, and the ledger's residual grew by h f^2 / (2 I) a second)."""
    import linkdyn as ld
    from linkdyn.sim import timestepping as ts
    monkeypatch.setattr(ts, "_force_python", not compiled)
    m = _arm(1.5)
    q0 = np.array([np.pi / 2])
    assert abs(ld.rnea(m, q0, np.zeros(1), np.zeros(1))[0]) == pytest.approx(0.5 * 9.81 * 0.2, rel=1e-12)
    sim = ld.Simulation(m, q0, dt=2e-3, contact_method="timestep")
    for k in range(300):
        sim.step()
        assert sim.v[0] == 0.0 and sim.q[0] == q0[0], f"step {k}: v = {sim.v[0]:.3g}"
    assert sim.checks().ok, str(sim.checks())


@pytest.mark.parametrize("compiled", [True, False])
def test_a_joint_that_slides_takes_the_impulse_of_its_friction_at_every_step(compiled, monkeypatch):
    """Below its weight's torque (friction 0.5 N m): each step's velocity is the soft threshold of
    the frictionless one, v1 = sign(v*) max(|v*| - h f / I, 0), v* = v - h g(q) / I (one dof: no
    velocity product terms), and the ledger closes to the scheme's first order."""
    import linkdyn as ld
    from linkdyn.sim import timestepping as ts
    from linkdyn.sim.checks import energy_residual
    monkeypatch.setattr(ts, "_force_python", not compiled)
    f, h = 0.5, 2e-3
    m = _arm(f)
    sim = ld.Simulation(m, np.array([np.pi / 2]), dt=h, contact_method="timestep")
    z = np.zeros(1)
    for k in range(300):
        q, v = sim.q.copy(), sim.v.copy()
        I = ld.crba(m, q)[0, 0]
        vs = v[0] - h * ld.rnea(m, q, z, z)[0] / I
        sim.step()
        assert sim.v[0] == pytest.approx(np.sign(vs) * max(abs(vs) - h * f / I, 0.0), rel=1e-12, abs=1e-15)
    assert sim.q[0] < np.pi / 2 - 0.5                             # it fell
    # the ledger at every step (recorded at every step): the friction's loss h f |v1| is the work its
    # impulse did on the step's motion, the residual first order
    t, res, scale = energy_residual(sim.recording)
    assert len(t) == 301 and np.abs(res).max() <= 0.02 * scale
    assert sim.checks().ok, str(sim.checks())
