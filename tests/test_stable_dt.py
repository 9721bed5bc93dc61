"""Time stepping refuses a dt at which it cannot be stable (issue 28: the drop scene at dt = 0.5 s
gained 4e10 J and ended 10 km up).  The check linearizes the motion at the initial state and asks
whether a mode of semi-implicit Euler (h omega < 2, h c < 2) cannot be stable
(``Simulation._check_stable_dt``)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import linkdyn as ld

K_SPRING, I_ZZ = 400.0, 0.01          # omega = sqrt(k / I) = 200 rad/s: semi-implicit Euler needs h < 2 / omega


def _spring_pendulum(damping=0.0):
    b = ld.ModelBuilder("spring", gravity=(0.0, 0.0, 0.0))
    b.add_body("a", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0, [0, 0, 0], np.diag([I_ZZ, I_ZZ, I_ZZ])),
               lower=-1.0, upper=1.0, stiffness=K_SPRING, damping=damping)
    return b.build()


def test_dt_0_5_of_the_drop_scene_refused_with_the_stable_bound():
    from linkdyn.models import scenarios as sc
    with pytest.raises(ValueError, match=r"dt = 0.5 s: time stepping .*cannot be stable .*'human'.* need dt < 0.04"):
        sc.drop_simulation(dt=0.5)
    assert sc.drop_simulation(dt=1e-3).dt == 1e-3


def test_spring_beyond_two_over_omega_refused_and_really_unstable():
    m, omega = _spring_pendulum(), math.sqrt(K_SPRING / I_ZZ)
    q0 = np.array([0.1])
    with pytest.raises(ValueError, match=r"200 rad/s .* need dt < 0.01 s"):       # 2 / omega = 0.01
        ld.Simulation(m, q0, dt=2.1 / omega, contact_method="timestep")
    sim = ld.Simulation(m, q0, dt=1.9 / omega, contact_method="timestep")
    energy = []
    for _ in range(400):
        sim.step()
        energy.append(sim._energy())
    # bounded: symplectic Euler keeps a modified energy, so the true one oscillates (by up to
    # 1 / (1 - h omega / 2) = 20 times near the bound) without growing
    assert max(energy[200:]) <= max(energy[:200]) * 1.01 and np.isfinite(energy).all()
    # the refused step does blow up: the same run taking steps of 2.1 / omega by hand
    sim_q = []
    b = ld.ModelBuilder.from_model(m)
    b.set_limits("a_joint", -1e3, 1e3)            # far limits: the spring alone decides
    sim = ld.Simulation(b.build(), q0, dt=1.9 / omega, contact_method="timestep")
    for _ in range(60):
        sim.step(2.1 / omega)
        sim_q.append(abs(sim.q[0]))
    assert sim_q[-1] > 100 * q0[0]


def test_joint_damping_is_implicit_in_the_time_step_and_not_a_limit_on_dt():
    """c = d / I = 1000 1/s: explicit damping needed h < 2 / c = 2 ms and the check refused 2.5 ms.
    The time step takes the joints' damping implicitly (M + h D, ``TimeStepping._implicit``), so
    2.5 ms and 5 ms (h c = 2.5 and 5) are accepted and stay stable; the spring's oscillation
    (omega 200 rad/s: h omega < 2 needs h < 10 ms) still limits the step: 20 ms is refused."""
    m = _spring_pendulum(damping=10.0)
    for h in (2.5e-3, 5e-3):
        sim = ld.Simulation(m, np.array([0.1]), dt=h, contact_method="timestep")
        sim.run(until=0.5, progress=False)
        assert np.all(np.abs(sim.recording.segments[0].arrays()["q"]) <= 0.1 + 1e-12)   # never grows
        if h < 5e-3:        # (at 5 ms, h omega = 1: the spring's own first-order energy error is 3.7 % of it)
            assert sim.checks().ok, str(sim.checks())
    with pytest.raises(ValueError, match=r"stiffest mode has 200 rad/s"):
        ld.Simulation(m, np.array([0.1]), dt=0.02, contact_method="timestep")


def test_stiff_controller_refused_soft_one_accepted():
    b = ld.ModelBuilder("pd", gravity=(0.0, 0.0, 0.0))
    b.add_body("a", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * I_ZZ),
               lower=-1.0, upper=1.0)
    m = b.build()
    stiff = lambda t, q, v: -K_SPRING * q           # noqa: E731  omega 200 rad/s
    with pytest.raises(ValueError, match=r"the controller\) its stiffest mode has 200 rad/s .* need dt < 0.01 s"):
        ld.Simulation(m, np.array([0.1]), dt=0.05, controller=stiff, contact_method="timestep")
    ld.Simulation(m, np.array([0.1]), dt=0.005, controller=stiff, contact_method="timestep")


def test_inverted_pendulum_falling_is_physics_not_instability():
    """An inverted pendulum's linearization grows by itself (exp(h sqrt(g/l)) per step): not
    refused at a coarse but usable step."""
    b = ld.ModelBuilder("inv")
    b.add_body("a", "world", ld.Revolute("y"), inertia=ld.Inertia(1.0, [0, 0, 1.0], np.eye(3) * 1e-3),
               lower=-1.5, upper=1.5)
    m = b.build()
    sim = ld.Simulation(m, np.array([0.01]), dt=0.05, contact_method="timestep")
    sim.run(0.5)
    assert abs(sim.q[0]) > 0.01                    # it falls, as it should
