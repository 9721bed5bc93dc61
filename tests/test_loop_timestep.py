"""The compiled time step of a closed chain (``linkdyn.sim._timestep_kernel`` with the model's
loops: q'' with the loops closed, the impulses' response with the loops held, the projection
back onto the loops) is the Python step's computation (``TimeStepping._step_python``, forced by
``timestepping._force_python``): the same states, impulses, ledger and events to round-off, step
by step and through ``Simulation.run``'s compiled calls, and the loops stay closed (position and
velocity) at every step."""
import numpy as np
import pytest

import linkdyn as ld
from linkdyn.loops.kinematics import loop_error, loop_jacobian
from linkdyn.models import scenarios
from linkdyn.sim import timestepping as ts
from linkdyn.sim.steps import CLOSURE_TOL


def _sim(make, python, **kw):
    ts._force_python = python
    try:
        sim = make(**kw)
    finally:
        ts._force_python = False
    assert sim._uni._compiled is (not python)
    return sim


def four_bar(**kw):
    m, q0 = ld.models.four_bar_with_stop(0.3)
    return ld.Simulation(m, q0, dt=1e-3, contact_method="timestep", **kw)


def fingers(**kw):
    """Two four-bar fingers (two loops), their joints damped (the ledger's joint losses), the right
    rocker falling onto its stop (``test_gear_loops.gripper`` without its gear)."""
    from test_gear_loops import closed_state, gripper
    m = gripper(gear=False, rocker_lower=1.7, damping=0.05)
    q = closed_state(m)[0]
    return ld.Simulation(m, q, np.zeros(m.nv), dt=1e-3, contact_method="timestep", **kw)


def high_bar(**kw):
    """The passive figure on the bar (two loops through the hands, a floating base; limits at the
    elbows, knees, hips and shoulders), which lets go with its right hand at 1 s (a cut: the
    model, and its TimeStepping, change to one loop)."""
    return scenarios.high_bar_simulation(dt=1e-3, contact_method="timestep", posture=None, **kw)


def swing(**kw):
    """The figure seated on the swing (three loops: the hands on the ropes, the seat on the
    ropes), its thighs on the seat: capsule-box geom contacts, under the posture controller
    (single steps: ``Simulation.step``)."""
    return scenarios.swing_simulation(dt=1e-3, **kw)


def assert_closed(model, q, v):
    """The loops closed at q to the projection's tolerance, and v tangent to them."""
    assert np.abs(loop_error(model, q)).max() <= CLOSURE_TOL
    assert np.abs(loop_jacobian(model, q) @ v).max() <= 1e-9 * max(1.0, np.abs(v).max())


def assert_same_events(ea, eb, tol):
    assert [(e.kind, e.name, e.units) for e in ea] == [(e.kind, e.name, e.units) for e in eb]
    for a, b in zip(ea, eb):
        assert a.t == pytest.approx(b.t, abs=1e-12)
        for f in ("impulse", "dv", "loop_impulse"):
            x, y = np.asarray(getattr(a, f)), np.asarray(getattr(b, f))
            assert x.shape == y.shape and np.abs(x - y).max(initial=0.0) <= tol * max(1.0, np.abs(y).max(initial=0.0)), f
        assert a.kinetic_before == pytest.approx(b.kinetic_before, rel=tol, abs=tol)
        assert a.kinetic_after == pytest.approx(b.kinetic_after, rel=tol, abs=tol)


@pytest.mark.parametrize("make,steps,tol", [(four_bar, 400, 1e-9), (fingers, 400, 1e-9), (high_bar, 1100, 1e-6),
                                             (swing, 150, 1e-8)])
def test_compiled_closed_chain_step_equals_the_python_step(make, steps, tol):
    """Step by step (``Simulation.step``: ``TimeStepping._step_compiled`` against
    ``_step_python``): the four-bar falling onto its crank stop (an impact, then resting on the
    stop with the loop closed), two fingers with damped joints, the figure on the bar swinging
    into its joint limits and letting go with one hand (a round-off difference grows along the
    chaotic swing, hence its looser tolerance), the figure seated on the swing (geom contacts;
    the split of the load between a thigh's redundant contacts is the solver's, so their forces
    are compared by their sum per geom pair)."""
    a, b = _sim(make, False), _sim(make, True)
    m0 = a.model
    pushed = 0
    for k in range(steps):
        a.step()
        b.step()
        assert a.model.nloops == b.model.nloops
        assert np.abs(a.q - b.q).max() <= tol * 1e-3 and np.abs(a.v - b.v).max() <= tol
        ua, ub = a._uni, b._uni
        assert np.abs(ua.force - ub.force).max(initial=0.0) <= tol * max(1.0, np.abs(ub.force).max(initial=0.0))
        assert ua.work == pytest.approx(ub.work, abs=tol * 1e-2) and ua.joint_loss == pytest.approx(ub.joint_loss, abs=tol)
        assert a._work == pytest.approx(b._work, abs=tol * 1e-2)
        assert_closed(a.model, a.q, a.v)
        pushed += bool(ua.force[:, 0].any())
        ga, gb = ua.geom_step(), ub.geom_step()
        assert ga[3] == gb[3] and ga[0] == pytest.approx(gb[0], abs=1e-12)
        if len(ga[1]):
            for name in set(ga[3]):
                on = [i for i, n in enumerate(ga[3]) if n == name]
                assert ga[1][on, 0].sum() == pytest.approx(gb[1][on, 0].sum(), rel=tol * 1e2)
            pushed += bool(ga[1][:, 0].any())
    if make is high_bar:
        assert (m0.nloops, a.model.nloops) == (2, 1)        # it let go
    assert pushed > 50                                       # the limits took part
    assert any(e.kind == "impact" for e in a.recording.events) or make is swing     # (it sits)
    assert_same_events(a.recording.events, b.recording.events, tol)
    for key in ("impacts", "steps_in_contact", "projections"):
        assert a._uni.stats[key] == b._uni.stats[key]


@pytest.mark.parametrize("make,until", [(four_bar, 0.4), (fingers, 0.4), (high_bar, 0.9)])
def test_compiled_run_of_a_closed_chain_equals_python_steps(make, until):
    """``Simulation.run`` takes a closed chain's steps in compiled calls (``TimeStepping.run``);
    every recorded sample (state, unit forces and gaps, energies and the ledger) and every
    event equals those of the Python step taken one step at a time, and every sample is on the
    loops."""
    a, b = _sim(make, False, record_every=1), _sim(make, True, record_every=1)
    calls = []
    run = a._uni.run

    def counted(*args, **kw):
        out = run(*args, **kw)
        calls.append(out[2])
        return out
    a._uni.run = counted
    a.run(until=until, progress=False)
    b.run(until=until, progress=False)
    assert sum(calls) > 0.9 * until / a.dt        # the steps were the compiled run's
    ra, rb = a.recording.segments[0].arrays(), b.recording.segments[0].arrays()
    assert ra["t"] == pytest.approx(rb["t"], abs=1e-12)
    tol = 1e-6 if make is high_bar else 1e-9
    for key in ("q", "v", "unit_force", "unit_gap", "kinetic", "potential", "loop_forces", "work"):
        if key in ra:
            assert np.abs(ra[key] - rb[key]).max() <= tol * max(1.0, np.abs(rb[key]).max()), key
    assert a._work == pytest.approx(b._work, abs=tol)
    for q, v in zip(ra["q"], ra["v"]):
        assert_closed(a.model, q, v)
    assert_same_events(a.recording.events, b.recording.events, tol)
    e = a.recording.extremes
    assert e["steps"] == b.recording.extremes["steps"]
    assert e["limit_violation"] == pytest.approx(b.recording.extremes["limit_violation"], abs=1e-12)


def test_compiled_response_is_the_kkt_response():
    """The impulse response with the loops held (``loops._kernels.constrained_response``, the
    compiled step's) equals ``contact.dynamics.Response``'s KKT solution, and its loop impulses
    hold the loops: J Z F = 0 and M Z F = F + J^T mu, on the figure's two loops."""
    from linkdyn.contact.dynamics import Response
    from linkdyn.loops.dynamics import _response_packed
    m = high_bar().model
    rng = np.random.default_rng(3)
    q = ld.sim.steps.project(m, ld.random_configuration(m, rng) * 0.0 + high_bar().q, np.zeros(m.nv))[0]
    F = rng.standard_normal((5, m.nv))
    out = np.empty_like(F)
    assert _response_packed(m._packed, m._loop_packed, q, F, out) == 0
    ZF, MU = Response(m, q).apply(F.T, loops=True)
    assert np.abs(out.T - ZF).max() <= 1e-9 * np.abs(ZF).max()
    J = loop_jacobian(m, q)
    assert np.abs(J @ out.T).max() <= 1e-9 * np.abs(ZF).max()
    assert np.abs(ld.crba(m, q) @ out.T - F.T - J.T @ MU).max() <= 1e-9 * np.abs(F).max()


def test_a_geared_closed_chain_keeps_the_python_step():
    """A geared model's reduced coordinates are not the compiled step's: it stays on the Python
    step (``model._full``)."""
    from test_gear_loops import gripper
    m = gripper(rocker_lower=1.7, damping=0.0)
    assert m._full is not None and m.nloops
    assert not ts.TimeStepping(m)._compiled


def test_loops_the_kernel_cannot_close_go_to_the_python_step():
    """Where the kernel's Newton steps leave the loops open (here: none allowed), the compiled step
    gives the step back (status LOOP_STALL) and the Python step takes it from the same state
    (``steps.project``, with ``close_loops`` to finish): the same motion, every moving step taken
    in Python, in single steps and in ``Simulation.run``."""
    from linkdyn.sim import _timestep_kernel as K
    for use_run in (False, True):
        a, b = _sim(four_bar, False, record_every=1), _sim(four_bar, True, record_every=1)
        a._uni._prm[9] = 0                      # LOOP_NEWTON: no Newton step in the kernel
        calls = []
        python = a._uni._step_python

        def counted(*args, **kw):
            calls.append(1)
            return python(*args, **kw)
        a._uni._step_python = counted
        if use_run:
            a.run(until=0.2, progress=False)
            b.run(until=0.2, progress=False)
        else:
            for _ in range(200):
                a.step()
                b.step()
        assert len(calls) > 100                 # (at rest on its stop a step leaves the loop closed)
        assert np.abs(a.q - b.q).max() <= 1e-12 and np.abs(a.v - b.v).max() <= 1e-9
        assert_closed(a.model, a.q, a.v)
    assert K.LOOP_STALL not in (0, K.BAD_BALL)
