"""Typed use of the public API, checked by mypy in tests/test_typing.py (never run by pytest:
the name does not start with ``test_``).  Every assignment states the type the annotations
promise, so a wrong or missing annotation shows up as a mypy error here."""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

import linkdyn as ld
from linkdyn.analysis import IKResult
from linkdyn.loops import LoopAnalysis


def build() -> ld.Model:
    b = ld.ModelBuilder("arm", gravity=(0.0, 0.0, -9.81))
    b.add_body("link1", "world", ld.Revolute("z"), placement=np.eye(4),
               inertia=ld.Inertia(1.0, (0.5, 0.0, 0.0), np.diag([0.0, 0.1, 0.1]).tolist()))
    b.add_body("link2", "link1", ld.Revolute("y"), placement=(np.eye(3), [1.0, 0.0, 0.0]),
               inertia=ld.Inertia(1.0, (0.5, 0.0, 0.0)), lower=[-1.0], upper=[1.0])
    b.add_frame("tool", "link2", placement=[1.0, 0.0, 0.0])
    return b.build()


def dynamics(model: ld.Model) -> float:
    q: NDArray[np.float64] = ld.random_configuration(model, rng=0)
    Q: NDArray[np.float64] = ld.random_configuration(model, np.random.default_rng(1), size=4)
    v = np.zeros(model.nv)
    a = [0.1] * model.nv                                   # any array-like
    tau: NDArray[np.float64] = ld.rnea(model, q, v, a)
    M: NDArray[np.float64] = ld.crba(model, q)
    qdd: NDArray[np.float64] = ld.aba(model, q, v, tau)
    b: NDArray[np.float64] = ld.nonlinear_effects(model, Q, np.zeros((4, model.nv)))
    g: NDArray[np.float64] = ld.generalized_gravity(model, q)
    x: NDArray[np.float64] = ld.solve_mass_matrix(model, q, tau)
    fac = ld.mass_matrix_cholesky(model, q)
    y: NDArray[np.float64] = fac.solve(tau)
    T: float | NDArray[np.float64] = ld.kinetic_energy(model, q, v)
    E = ld.mechanical_energy(model, Q, np.zeros((4, model.nv)))
    terms = ld.lagrangian_terms(model, q, v)
    Y: NDArray[np.float64] = ld.joint_torque_regressor(model, q, v, a)
    pi: NDArray[np.float64] = ld.inertial_parameters(model)
    return float(np.sum(M @ qdd - tau + b[0] + g + x + y + terms.G + Y @ pi)) + float(T) + float(np.sum(E))


def kinematics(model: ld.Model) -> NDArray[np.float64]:
    q = ld.neutral(model)
    v = np.ones(model.nv)
    J: NDArray[np.float64] = ld.jacobian(model, q, "tool")
    J0: NDArray[np.float64] = ld.jacobian(model, q, 2, reference="local")
    pose: NDArray[np.float64] = ld.frame_pose(model, q, "tool")
    kin: ld.Kinematics = ld.forward_kinematics(model, q, v)
    vel: NDArray[np.float64] = ld.frame_velocity(model, q, v, "tool", "world")
    jdv: NDArray[np.float64] = ld.jacobian_dot_times_v(model, q, v, "tool")
    com: NDArray[np.float64] = ld.center_of_mass(model, q)
    w: float | NDArray[np.float64] = ld.manipulability(model, q, "tool", part="translation")
    radii, axes = ld.manipulability_ellipsoid(model, q, "tool")
    q1: NDArray[np.float64] = ld.integrate(model, q, v, dt=0.01)
    dq: NDArray[np.float64] = ld.difference(model, q, q1)
    qn: NDArray[np.float64] = ld.normalize(model, q1)
    ik: IKResult = ld.inverse_kinematics(model, "tool", pose, q0=q, rng=0, max_iterations=5)
    return J + J0 + pose[:3, :3].sum() + kin.pose("tool")[0, 0] + vel.sum() + jdv.sum() + com.sum() \
        + float(w) + radii.sum() + axes.sum() + dq.sum() + qn.sum() + ik.q.sum()


def spatial() -> NDArray[np.float64]:
    R: NDArray[np.float64] = ld.spatial.rotz(0.3)
    quat: NDArray[np.float64] = ld.spatial.matrix_to_quat(R)
    axis, angle = ld.spatial.quat_to_axis_angle(quat)
    Rs, p = ld.spatial.exp6([0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    I6: NDArray[np.float64] = ld.spatial.spatial_inertia(1.0, [0.0, 0.0, 0.1], np.eye(3))
    ok = ld.spatial.is_rotation_matrix(R)
    return R @ Rs + axis.sum() + float(angle) + p.sum() + I6[:3, :3] + float(bool(np.all(ok)))


def loops_and_sim() -> float:
    m = ld.models.four_bar()
    q = ld.loops.close_loops(m, ld.neutral(m), hold=["crank"])
    an: LoopAnalysis = ld.loops.analyze(m, q, actuated="crank")
    qdd: NDArray[np.float64] = ld.loops.constrained_dynamics(m, q, np.zeros(m.nv), np.zeros(m.nv))
    qdd2, lam = ld.loops.constrained_dynamics(m, q, np.zeros(m.nv), np.zeros(m.nv), forces=True)
    res = ld.constrained_dynamics(m, q, np.zeros(m.nv), np.zeros(m.nv))
    arm = ld.from_dh([ld.DHLink(a=1.0), ld.DHLink(a=1.0)], base=np.eye(4))
    sim = ld.Simulation(arm, controller=lambda t, q, v: -v, limits=False, contacts=False)
    sim.when(sim.below("tool", value=-0.5), "cut", "joint2")
    rec = sim.run(0.01, progress=False)
    t: NDArray[np.float64] = rec.t
    return float(an.cond) + float(qdd.sum() + qdd2.sum() + lam.sum() + res.qdd.sum() + t.sum())
