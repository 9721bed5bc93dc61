"""Gear couplings together with loop closures (linkdyn.model.gears with linkdyn.loops): a
two-finger gripper whose fingers are four-bar linkages (Nakamura and Yamane 2000 sec. 3.2, the
loops cut at the coupler-rocker joint) and whose input cranks are geared (parallel siblings,
tazz, "Formulation of Featherstone's algorithm", eqs. 36-40).  In reduced coordinates the
closed-chain equations are M_r q'' + b_r = tau + (J_C G)^T lambda, (J_C G) q'' = -J_C' v_full;
they must equal the uncoupled tree's KKT system with the coupling as one more constraint row."""
import pickle

import numpy as np
import pytest

import linkdyn as ld
from linkdyn import loops
from linkdyn.model import joints as J
from linkdyn.model.builder import ModelBuilder
from linkdyn.models.mechanisms import rod

L1, L2, L3, L0 = 0.3, 1.0, 0.8, 1.0          # crank, coupler, rocker, ground (ld.models.four_bar's)
RATIO, OFFSET = -1.0, 0.3


def gripper(gear=True, rocker_lower=None, damping=0.05):
    """Two four-bar fingers side by side (y = 0 and y = 0.5); crank_R = RATIO crank_L + OFFSET."""
    b = ModelBuilder("gripper", gravity=(0.0, 0.0, -9.81))
    for s, y in (("L", 0.0), ("R", 0.5)):
        b.add_body(f"crank_{s}", "world", J.Revolute("y"), placement=[0, y, 0], inertia=rod(2 * L1, L1),
                   joint_name=f"crank_{s}", damping=[damping])
        lim = {} if rocker_lower is None or s == "L" else {"lower": [rocker_lower], "upper": [4.0]}
        b.add_body(f"rocker_{s}", "world", J.Revolute("y"), placement=[L0, y, 0], inertia=rod(2 * L3, L3),
                   joint_name=f"rocker_{s}", **lim)
        b.add_body(f"coupler_{s}", f"crank_{s}", J.Revolute("y"), placement=[L1, 0, 0], inertia=rod(2 * L2, L2),
                   joint_name=f"coupler_{s}")
        b.add_loop(f"loop_{s}", f"coupler_{s}", f"rocker_{s}", J.Revolute("y"), placement=[L2, 0, 0],
                   real_placement=[L3, 0, 0])
    if gear:
        b.add_gear("crank_R", "crank_L", RATIO, OFFSET)
    return b.build()


def closed_state(model, seed=0):
    q = ld.neutral(model)
    q[model.q_index("crank_L")] = 0.8
    for s in "LR":
        q[model.q_index(f"coupler_{s}")], q[model.q_index(f"loop_{s}_joint")] = -1.0, 1.9
        q[model.q_index(f"rocker_{s}")] = 0.5
    q = loops.close_loops(model, q, hold=["crank_L"])
    an = loops.analyze(model, q, ["crank_L"])
    rng = np.random.default_rng(seed)
    return q, an.W @ rng.standard_normal(an.dof), rng.standard_normal(model.nv)


@pytest.fixture(scope="module")
def geared():
    return gripper()


@pytest.fixture(scope="module")
def uncoupled():
    return gripper(gear=False)


def _coupling_row(full):
    """The gear as a velocity constraint of the uncoupled tree: v_R - RATIO v_L = 0."""
    row = np.zeros(full.nv)
    row[full.v_slice("crank_R").start], row[full.v_slice("crank_L").start] = 1.0, -RATIO
    return row


def test_model_keeps_the_full_trees_loops(geared, uncoupled):
    full = geared.full_model
    assert (geared.nv, full.nv, geared.nloops, full.nloops) == (7, 8, 2, 2)
    # the full tree's own loop buffers; the cut joints' slices in reduced v on the geared model
    assert full._loop_packed is not geared._loop_packed and full._loop_lw.size
    assert [lp.cut_v for lp in full.loops] == [lp.cut_v for lp in uncoupled.loops]
    for lp in geared.loops:
        assert lp.cut_v == geared.v_slice(lp.joint_name)
    q, _, _ = closed_state(geared)
    qf = geared.expand(q)[0] if isinstance(geared.expand(q), tuple) else geared.expand(q)
    np.testing.assert_allclose(loops.loop_error(geared, q), loops.loop_error(uncoupled, qf), atol=0)
    np.testing.assert_allclose(loops.loop_jacobian(geared, q),
                               loops.loop_jacobian(uncoupled, qf) @ geared.coupling_matrix(), atol=1e-14)


def test_cut_joint_cannot_be_geared():
    b = ModelBuilder("bad")
    b.add_body("a", "world", J.Revolute("y"), inertia=rod(1.0, 1.0), joint_name="a")
    b.add_body("c", "world", J.Revolute("y"), placement=[1, 0, 0], inertia=rod(1.0, 1.0), joint_name="c")
    b.add_loop("loop", "a", "c", J.Revolute("y"), placement=[1, 0, 0], real_placement=[1, 0, 0])
    b.add_gear("loop_joint", "a", 1.0)
    with pytest.raises(ValueError, match="cut joint"):
        b.build()


def test_constrained_dynamics_equals_the_uncoupled_kkt_with_the_coupling_row(geared, uncoupled):
    """q''_full = G q'' and the loop forces: [[M, A^T], [A, 0]] with A = [J_C; coupling row]."""
    G = geared.coupling_matrix()
    for seed in range(3):
        q, v, tau = closed_state(geared, seed)
        qdd, lam = loops.constrained_dynamics(geared, q, v, tau, forces=True)
        qf, vf = geared.expand(q, v)[:2]
        tf = np.zeros(uncoupled.nv)
        tf[geared._coupling.keep_v] = tau          # tau = G^T tau_full: the follower's share on its leader
        JC = loops.loop_jacobian(uncoupled, qf)
        A = np.vstack([JC, _coupling_row(uncoupled)])
        rhs = np.concatenate([-loops.loop_bias(uncoupled, qf, vf), [0.0]])
        rows = loops.independent_rows(A)
        A, rhs = A[rows], rhs[rows]
        n, m = uncoupled.nv, len(rows)
        K = np.block([[ld.crba(uncoupled, qf), A.T], [A, np.zeros((m, m))]])
        sol = np.linalg.solve(K, np.concatenate([tf - ld.rnea(uncoupled, qf, vf, np.zeros(n)), rhs]))
        np.testing.assert_allclose(G @ qdd, sol[:n], atol=1e-10)
        # the loop forces (least norm where a planar loop's rows are redundant) balance the same
        # generalized force on the reduced dofs as the uncoupled multipliers' loop part
        mu = -sol[n:]
        gen = (A.T @ mu)[:]                         # the constraint force of loops and gear on the full tree
        np.testing.assert_allclose(G.T @ gen, (JC @ G).T @ lam.ravel(), atol=1e-9)
        # the same answers from every route
        qdd2, lam2 = loops.constraint_forces(geared, q, v, tau)
        np.testing.assert_allclose(qdd2, qdd, atol=1e-10)
        np.testing.assert_allclose(lam2, lam, atol=1e-9)
        np.testing.assert_allclose(ld.constrained_dynamics(geared, q, v, tau).qdd, qdd, atol=1e-9)
        np.testing.assert_allclose(loops.forward_dynamics(geared, q, v, tau, method="projected"), qdd, atol=1e-9)
        np.testing.assert_allclose(loops.forward_dynamics(geared, q, v, tau, method="unit_vector"), qdd, atol=1e-9)
        # inverse dynamics with the crank actuated (Nakamura and Yamane 2000 eqs. 1-4): ID(FD(tau)) = tau_G
        an = loops.analyze(geared, q, ["crank_L"])
        tau_a = np.zeros(geared.nv)
        tau_a[geared.v_slice("crank_L")] = 1.7
        a = loops.forward_dynamics(geared, q, v, tau_a)
        res = loops.inverse_dynamics(geared, q, v, a, actuated=["crank_L"], analysis=an)
        np.testing.assert_allclose(res.tau_A, [1.7], atol=1e-9)


def test_stacks_and_baumgarte(geared):
    q, v, tau = closed_state(geared)
    one = loops.constrained_dynamics(geared, q, v, tau, (2.0, 3.0))
    two = loops.constrained_dynamics(geared, np.stack([q, q]), v, np.stack([tau, tau]), (2.0, 3.0))
    np.testing.assert_allclose(two, [one, one], atol=0)
    with pytest.raises(NotImplementedError, match="gear"):
        loops.constrained_dynamics_derivatives(geared, q, v, tau)


def test_projections_close_the_loops_and_respect_the_coupling(geared, uncoupled):
    q, v, _ = closed_state(geared)
    rng = np.random.default_rng(5)
    vb = v + 0.3 * rng.standard_normal(geared.nv)
    dv, imp = loops.velocity_projection(geared, q, vb, impulses=True)
    JCG = loops.loop_jacobian(geared, q)
    np.testing.assert_allclose(JCG @ (vb + dv), 0, atol=1e-12)
    # least kinetic energy of the change: M_r dv = (J_C G)^T impulse, i.e. dv is M_r-orthogonal to null(J_C G)
    Mr = ld.crba(geared, q)
    np.testing.assert_allclose(Mr @ dv, JCG.T @ imp.ravel(), atol=1e-10)
    # the full velocities satisfy the coupling row and the loops of the uncoupled tree
    qf, vf = geared.expand(q, vb + dv)[:2]
    assert abs(_coupling_row(uncoupled) @ vf) < 1e-14
    np.testing.assert_allclose(loops.loop_jacobian(uncoupled, qf) @ vf, 0, atol=1e-12)
    # position: Newton steps from a perturbed configuration
    qb = q + 1e-3 * rng.standard_normal(geared.nq)
    for _ in range(4):
        qb = ld.integrate(geared, qb, loops.position_correction(geared, qb))
    assert np.abs(loops.loop_error(geared, qb)).max() < 1e-13
    qf = geared.expand(qb)[0] if isinstance(geared.expand(qb), tuple) else geared.expand(qb)
    assert abs(qf[uncoupled.q_index("crank_R")] - (RATIO * qf[uncoupled.q_index("crank_L")] + OFFSET)) < 1e-15
    assert np.abs(loops.loop_error(uncoupled, qf)).max() < 1e-13
    # close_loops / project_velocity work in reduced coordinates, the held leader kept
    qc = loops.close_loops(geared, q + 1e-2 * rng.standard_normal(geared.nq), hold=["crank_L"])
    assert np.abs(loops.loop_error(geared, qc)).max() < 1e-12
    np.testing.assert_allclose(JCG @ loops.project_velocity(geared, q, vb), 0, atol=1e-12)


def test_simulation_keeps_the_loops_closed_and_the_energy_ledger():
    geared = gripper(damping=0.0)      # the ledger counts no joint damping (Simulation.work)
    q, _, _ = closed_state(geared)
    sim = ld.Simulation(geared, q, np.zeros(geared.nv), dt=1e-3, limits=False, contacts=False)
    sim.run(0.5)
    Q = np.concatenate([np.asarray(s.q) for s in sim.recording.segments])
    assert len(Q) == 501
    assert max(np.abs(loops.loop_error(geared, x)).max() for x in Q) < 1e-9
    assert sim.checks().ok
    moved = Q[-1] - Q[0]
    assert np.abs(moved).max() > 0.1                       # it fell


def test_simulation_with_a_limit_on_a_finger():
    """The unilateral layer on the geared closed chain: the right rocker hits its stop."""
    m = gripper(rocker_lower=1.7, damping=0.0)
    q, _, _ = closed_state(m)
    sim = ld.Simulation(m, q, np.zeros(m.nv), dt=1e-3, limits=True, contacts=False)
    sim.run(0.5)
    assert [e.name for e in sim.recording.events if e.kind == "impact"][:1] == ["rocker_R.lower"]
    Q = np.concatenate([np.asarray(s.q) for s in sim.recording.segments])
    assert max(np.abs(loops.loop_error(m, x)).max() for x in Q) < 1e-9
    assert Q[:, m.q_index("rocker_R")].min() > 1.7 - 1e-6
    assert sim.checks().ok


def test_pickling_round_trips(geared):
    q, v, tau = closed_state(geared)
    p = pickle.loads(pickle.dumps(geared))
    assert p.nloops == 2 and p.full_model.nloops == 2
    assert [lp.cut_v for lp in p.loops] == [lp.cut_v for lp in geared.loops]
    np.testing.assert_array_equal(loops.constrained_dynamics(p, q, v, tau), loops.constrained_dynamics(geared, q, v, tau))
    np.testing.assert_array_equal(loops.velocity_projection(p, q, v), loops.velocity_projection(geared, q, v))


def _finger(s, y, a1, a2, a3):
    def inertial(l):
        m, r = 2.0 * l, 0.01
        return (f'<inertial pos="{l / 2!r} 0 0" mass="{m!r}" '
                f'diaginertia="{0.5 * m * r * r!r} {m * (3 * r * r + l * l) / 12!r} {m * (3 * r * r + l * l) / 12!r}"/>')
    return f"""
    <body name="crank_{s}" pos="0 {y} 0" axisangle="0 1 0 {a1!r}">
      <joint name="crank_{s}" axis="0 1 0" ref="{a1!r}"/>
      {inertial(L1)}
      <body name="coupler_{s}" pos="{L1!r} 0 0" axisangle="0 1 0 {a2!r}">
        <joint name="coupler_{s}" axis="0 1 0" ref="{a2!r}"/>
        {inertial(L2)}
      </body>
    </body>
    <body name="rocker_{s}" pos="{L0!r} {y} 0" axisangle="0 1 0 {a3!r}">
      <joint name="rocker_{s}" axis="0 1 0" ref="{a3!r}"/>
      {inertial(L3)}
    </body>"""


def test_mjcf_connect_and_joint_equality(uncoupled):
    """A Robotiq-style MJCF: the fingers' four-bars closed by <equality connect>, the cranks
    coupled by <equality joint> (polycoef: crank_R = crank_L)."""
    fb = ld.models.four_bar()
    q = ld.neutral(fb)
    q[fb.q_index("crank")], q[fb.q_index("coupler")], q[fb.q_index("rocker")] = 0.6, -1.0, 1.2
    q = loops.close_loops(fb, q, hold=["crank"])
    a = [float(q[fb.q_index(n)]) for n in ("crank", "coupler", "rocker")]
    text = f"""<mujoco model="gripper">
  <compiler angle="radian"/>
  <worldbody>{_finger("L", 0.0, *a)}{_finger("R", 0.5, *a)}
  </worldbody>
  <equality>
    <connect name="loop_L" body1="coupler_L" body2="rocker_L" anchor="{L2!r} 0 0"/>
    <connect name="loop_R" body1="coupler_R" body2="rocker_R" anchor="{L2!r} 0 0"/>
    <joint joint1="crank_R" joint2="crank_L" polycoef="0 1 0 0 0"/>
  </equality>
</mujoco>"""
    model, info = ld.parse_mjcf(text, return_info=True)
    assert model.nloops == 2 and len(model.gears) == 1 and model.full_model.nv == model.nv + 1
    q0 = info.q0 if len(info.q0) == model.nq else model.reduce(info.q0)
    assert np.abs(loops.loop_error(model, q0)).max() < 1e-12
    an = loops.analyze(model, q0, ["crank_L"])
    assert an.dof == 1
    v = an.W @ [0.7]
    tau = np.zeros(model.nv)
    tau[model.v_slice("crank_L")] = 0.5
    qdd = loops.constrained_dynamics(model, q0, v, tau)
    np.testing.assert_allclose(loops.loop_jacobian(model, q0) @ qdd, -loops.loop_bias(model, q0, v), atol=1e-9)
    # both fingers move alike: the coupled cranks' accelerations are one coordinate
    qddf = model.coupling_matrix() @ qdd
    full = model.full_model
    assert qddf[full.v_slice("crank_R").start] == qddf[full.v_slice("crank_L").start]
    np.testing.assert_allclose(qddf[full.v_slice("rocker_R")], qddf[full.v_slice("rocker_L")], atol=1e-9)
    np.testing.assert_allclose(ld.constrained_dynamics(model, q0, v, tau).qdd, qdd, atol=1e-9)
