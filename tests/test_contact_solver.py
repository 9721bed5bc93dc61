"""The contact solver never applies an answer it did not find (the contact issue's solver items):
a friction direction the model cannot move in (a planar model's out-of-plane tangent), redundant
friction rows of two feet on one rigid body, and a ContactSolverError where no answer is found."""
from __future__ import annotations

import numpy as np
import pytest

import linkdyn as ld
from linkdyn.contact import lcp
from linkdyn.sim import timestepping as TS


def planar_two_feet(mu=1.0):
    """A planar body (x, z, pitch) on two sphere feet, the dm_control cheetah's situation: its
    feet's out-of-plane friction rows are zero in A, and their in-plane rows nearly dependent."""
    b = ld.ModelBuilder("planar_two_feet")
    tiny = ld.Inertia(1e-9, [0, 0, 0], np.eye(3) * 1e-12)
    b.add_body("x", "world", ld.Prismatic("x"), inertia=tiny)
    b.add_body("z", "x", ld.Prismatic("z"), inertia=tiny)
    b.add_body("torso", "z", ld.Revolute("y"), inertia=ld.Inertia(10.0, [0, 0, 0], np.diag([0.1, 1.0, 1.0])))
    for x in (-0.5, 0.5):
        b.add_contact("torso", [x, 0, -0.2], radius=0.05, friction=mu)
    b.add_plane("ground")
    return b.build()


def test_a_friction_direction_without_mobility_gets_the_sticking_answer():
    """A 3-row problem (a normal, its friction pair) whose second tangent has no mobility (zero row
    and column of A): the sticking solution solves the 2x2 in-plane system; before the fix the pair
    was pushed onto the cone's rim with the force along the slip (residual 1)."""
    A = np.array([[0.3205, 0.1473, 0.0], [0.1473, 0.1984, 0.0], [0.0, 0.0, 0.0]])
    r = np.array([-0.0098, -0.0071, 0.0])
    kinds = np.array([lcp.NORMAL, lcp.FRICTION, lcp.FRICTION2])
    mus, normals = np.array([0.0, 1.0, 1.0]), np.array([0, 0, 0])
    want = np.linalg.solve(A[:2, :2], -r[:2])
    assert abs(want[1]) < want[0]                                  # inside the cone: sticking
    for exact in (False, True):
        lam, res = lcp.solve(A, r, kinds, mus, normals, np.array([0.0565, -0.0565, 0.0]), max_iter=100, tol=1e-9,
                             exact=exact)
        assert res <= 1e-12
        np.testing.assert_allclose(lam, [want[0], want[1], 0.0], atol=1e-12)


@pytest.mark.parametrize("compiled", [True, False])
def test_planar_two_feet_lands_with_every_problem_solved_and_no_energy_gained(compiled):
    """Dropped with a spin onto both feet (mu = 1): every step's problem is solved to 1e-9 (the
    redundant friction rows go through the fallback), and the mechanical energy does not rise from
    one step to the next (a passive body, inelastic contact), checked at every step, beyond the
    potential energy of pushing the landing's 5e-8 m penetration back out (BETA: m g 1e-8 m a step,
    booked in the ledger): 1e-7 of the energy per step, 1e-6 over the run."""
    m = planar_two_feet()
    q, v = np.array([0.0, 0.26, 0.05]), np.array([1.0, -1.0, 2.0])
    sim = ld.Simulation(m, q, v, dt=1e-3, contact_method="timestep", record_every=1)
    sim._uni._compiled = compiled
    data = sim._uni.data
    E = [sum(data.energies(sim.q, sim.v))]
    for _ in range(800):
        sim.step()
        E.append(sum(data.energies(sim.q, sim.v)))
    stats = sim.contact_stats
    stats = stats() if callable(stats) else stats
    assert stats["steps_in_contact"] > 500
    assert stats["lcp_residual"] <= 1e-9, stats
    rises = np.clip(np.diff(E), 0.0, None)
    assert rises.max() <= 1e-7 * E[0] and rises.sum() <= 1e-6 * E[0], (rises.max(), rises.sum())
    assert sim.checks().ok


def test_an_unsolved_problem_is_never_applied(monkeypatch):
    """With a tolerance no answer can meet, the step raises ContactSolverError naming the time and
    the rows, and the simulation keeps its state and recording from before the step."""
    m = planar_two_feet()
    sim = ld.Simulation(m, np.array([0.0, 0.25, 0.0]), dt=1e-3, contact_method="timestep")
    sim.run(until=0.05, progress=False)
    q0, n0 = sim.q.copy(), len(sim.recording.t)
    monkeypatch.setattr(TS, "FAIL_TOL", -1.0)
    with pytest.raises(ld.contact.ContactSolverError) as err:
        sim.step()
    assert "torso_contact" in str(err.value) and err.value.t == pytest.approx(0.05)
    assert err.value.rows and err.value.residual >= 0.0
    np.testing.assert_array_equal(sim.q, q0)
    assert len(sim.recording.t) == n0
