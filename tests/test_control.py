"""Controllers (``ld.control``): hybrid force/position control decouples position and force
exactly with an exact model ((H6) of ``linkdyn.control``), the form that circulates in lecture notes does not; the example
(examples/hybrid_wall.py) tracks with a 10 % model error; computed torque tracks a trajectory."""
import pathlib
import sys

import numpy as np
import pytest

import linkdyn as ld
from linkdyn import constraints as C

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))


def _arm_on_wall(rng):
    m = ld.models.planar_2link(gravity=(0.0, -9.81, 0.0))
    y = rng.uniform(-0.3, 0.6)
    q = ld.planar_2link_ik(1.0, 1.0, 1.2, y)[0]
    J = ld.point_jacobian(m, q, "tool")[:2]
    v = np.linalg.solve(J, [0.0, rng.uniform(-1, 1)])                  # sliding along the wall
    return m, q, v, C.PointOnPlane("tool", normal=(1.0, 0.0, 0.0), offset=1.2)


def test_hybrid_control_gives_the_asked_acceleration_and_force_exactly():
    """With the controller's model exact: the wall's force is lambda_d and the acceleration
    along the wall is u_1, to round-off , at random states sliding on the wall."""
    rng = np.random.default_rng(0)
    for _ in range(5):
        m, q, v, wall = _arm_on_wall(rng)
        ad = rng.standard_normal(2)
        ctrl = ld.control.HybridForcePosition(m, "tool", normal=(1.0, 0.0),
                                              target=lambda t: (ld.frame_pose(m, q, "tool")[:2, 3], np.zeros(2), ad),
                                              force=lambda t: 7.0, K1=0.0, K2=0.0, axes=(0, 1))
        tau = ctrl(0.0, q, v)
        res = ld.constrained_dynamics(m, q, v, tau, [wall])
        assert -res.forces[0][0] == pytest.approx(7.0, abs=1e-9)
        Jp, jdv, _ = wall.terms(m, q, v)
        x_acc = ld.point_jacobian(m, q, "tool")[:2] @ res.qdd + ld.constraints._point_terms(m, q, v, "tool", (0, 0, 0))[2][:2]
        assert x_acc[1] == pytest.approx(ad[1], abs=1e-9)               # u_1 along the wall
        assert abs(x_acc[0]) < 1e-9                                       # and none through it


def test_the_circulating_misprinted_form_misses_both():
    """tau = D {J E^-1 [u_1; 0] + h + J^T E_f^T u_2} (E' = 0), as some notes print it: neither the force nor
    the acceleration comes out as asked."""
    rng = np.random.default_rng(1)
    m, q, v, wall = _arm_on_wall(rng)
    D, h = ld.crba(m, q), ld.nonlinear_effects(m, q, v)
    J = ld.point_jacobian(m, q, "tool")[:2]
    E = np.array([[0.0, 1.0], [1.0, 0.0]])                              # [E_p; E_f]
    u1, u2 = 0.7, 3.0
    tau = D @ (J @ np.linalg.solve(E, [u1, 0.0]) + h + J.T @ (E[1] * u2))
    res = ld.constrained_dynamics(m, q, v, tau, [wall])
    x_acc = J @ res.qdd + ld.constraints._point_terms(m, q, v, "tool", (0, 0, 0))[2][:2]
    assert abs(-res.forces[0][0] - u2) > 0.1 and abs(x_acc[1] - u1) > 0.1


def test_the_wall_example_tracks_position_and_force_with_a_wrong_model():
    import hybrid_wall
    r = hybrid_wall.main(duration=2.0, model_error=0.1)
    assert r["position_error"] < 2e-3 and r["force_error"] < 0.02 and r["off_wall"] < 1e-9
    exact = hybrid_wall.main(duration=1.5, model_error=0.0)
    assert exact["position_error"] < 1e-5 and exact["force_error"] < 1e-3


def test_computed_torque_tracks_a_trajectory():
    m = ld.models.planar_2link(gravity=(0.0, -9.81, 0.0))

    def traj(t):
        return (np.array([0.3 * np.sin(t), 0.5 + 0.2 * np.cos(t)]), np.array([0.3 * np.cos(t), -0.2 * np.sin(t)]),
                np.array([-0.3 * np.sin(t), -0.2 * np.cos(t)]))
    ctrl = ld.control.computed_torque(m, traj, kp=100.0, kd=20.0)
    sim = ld.Simulation(m, np.array([0.0, 0.7]), dt=1e-3, controller=ctrl, limits=False, contacts=False)
    sim.run(until=2.0, progress=False)
    assert np.abs(sim.q - traj(2.0)[0]).max() < 1e-4


def test_operational_space_control_of_a_redundant_arm_tracks_its_tip():
    """A 3-joint planar arm's tip (2 task coordinates; the third dof damped) follows a circle."""
    b = ld.ModelBuilder("arm3")
    parent = "world"
    for k in range(3):
        b.add_body(f"l{k}", parent, ld.Revolute("z"), placement=[0.7 if k else 0.0, 0.0, 0.0],
                   inertia=ld.Inertia(1.0, [0.35, 0.0, 0.0], np.diag([0.001, 0.04, 0.04])))
        parent = f"l{k}"
    b.add_frame("tip", "l2", placement=[0.7, 0.0, 0.0])
    m = b.build()

    def circle(t):
        c, s = np.cos(t), np.sin(t)
        return np.array([1.2 + 0.2 * c, 0.2 * s]), np.array([-0.2 * s, 0.2 * c]), np.array([-0.2 * c, -0.2 * s])
    q0 = np.array([0.5, -0.6, -0.5])
    ctrl = ld.control.operational_space(m, "tip", circle, K1=400.0, K2=40.0, axes=(0, 1))
    sim = ld.Simulation(m, q0, dt=1e-3, controller=ctrl, limits=False, contacts=False)
    sim.run(until=2.0, progress=False)
    assert np.abs(ld.frame_pose(m, sim.q, "tip")[:2, 3] - circle(2.0)[0]).max() < 1e-3


def test_a_six_dof_arm_presses_on_the_wall_and_holds_its_tool_orientation():
    """examples/hybrid_wall.py on the PUMA 560 (a frame task: one constrained direction, five
    free): exact with an exact model, close with 10 % mass errors."""
    import hybrid_wall
    exact = hybrid_wall.puma_on_wall(duration=1.5, model_error=0.0)
    assert exact["position_error"] < 1e-5 and exact["orientation_error"] < 1e-5 and exact["force_error"] < 0.01
    r = hybrid_wall.puma_on_wall(duration=1.5, model_error=0.1)
    assert r["position_error"] < 1e-3 and r["orientation_error"] < 2e-3 and r["force_error"] < 0.05
    assert r["off_wall"] < 1e-9
