"""Structure-varying chains (issue 5, seed 004 sec. 4): connecting links at run time with the
velocity jump of eqs. 20-33, cutting at a virtual link and at a real joint (Fig. 12)."""
import numpy as np
import pytest

import linkdyn as ld
from conftest import assert_close, world_momentum
from linkdyn import structure as st

JOINTS = {"weld": ld.Fixed, "revolute": lambda: ld.Revolute([0.3, -0.5, 0.8]), "spherical": ld.Spherical,
          "universal": lambda: ld.Universal("x", "z"), "prismatic": lambda: ld.Prismatic("y")}


def two_free_bodies():
    b = ld.ModelBuilder("two", gravity=(0.0, 0.0, 0.0))
    b.add_body("a", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0.1, 0, 0], np.diag([0.01, 0.02, 0.03])))
    b.add_body("b", "world", ld.FreeFlyer(), inertia=ld.Inertia(2.0, [0, 0.1, 0.05], np.diag([0.03, 0.02, 0.04])))
    b.add_frame("a_tip", "a", placement=[0.2, 0.0, 0.0])
    b.add_frame("b_tip", "b", placement=(ld.spatial.rotz(0.4), [0.0, 0.2, 0.0]))
    m = b.build()
    q = ld.neutral(m)
    q[m.q_slice("b_joint")] = [0.3, -0.1, 0.05, *ld.spatial.quat_from_axis_angle([1, 2, 3], 0.7)]
    q[m.q_slice("a_joint")] = [-0.1, 0.05, 0.02, *ld.spatial.quat_from_axis_angle([-1, 0, 2], 0.3)]
    return m, q


def _old_columns(old, new):
    """Indices in the new model's v of each old velocity (in old order)."""
    idx = np.empty(old.nv, dtype=int)
    for name in old.joint_names:
        idx[old.v_slice(name)] = np.arange(new.v_slice(name).start, new.v_slice(name).stop)
    return idx


@pytest.mark.parametrize("kind", list(JOINTS))
def test_connection_of_two_mechanisms(kind):
    """Seed 004 sec. 4.3, item 3 of the issue: after joining two free bodies the new joint's
    constraint velocity is zero, momentum (linear and angular) is conserved, the kinetic energy
    does not increase, the impulse reported is the one that changed the velocities
    (J^T F = M dv) and its work is the energy lost."""
    m, q = two_free_bodies()
    v = np.random.default_rng(1).standard_normal(m.nv)
    ch = st.connect_state(m, q, v, "a_tip", "b", JOINTS[kind]())
    new, qn, vn, jump = ch.model, ch.q, ch.v, ch.jump
    assert np.abs(ld.loops.loop_error(new, qn)).max() < 1e-12
    JC = ld.loops.loop_jacobian(new, qn)
    assert np.abs(JC @ vn).max() < 1e-12 * max(1, np.abs(v).max())
    assert_close(world_momentum(new, qn, vn), world_momentum(m, q, v), 1e-12, "momentum")
    assert jump.kinetic_after <= jump.kinetic_before + 1e-14
    assert jump.energy_loss > 1e-6                               # a generic relative velocity costs energy
    # the impulse: M dv = J_L^T F on the new model (the new joint's own row is F's part along it: zero)
    M = ld.crba(new, qn)
    assert_close(JC.T @ jump.impulses.ravel(), M @ jump.dv, 1e-10, "J^T F = M dv")
    # its work: 1/2 (v- + v+)^T J^T F = T+ - T-
    _, v_before = st.map_state(m, new, q, v)
    work = 0.5 * (v_before + vn) @ (JC.T @ jump.impulses.ravel())
    assert_close(work, jump.kinetic_after - jump.kinetic_before, 1e-10, "work of the impulse")


def _seed_two_mechanisms(A1, A2, J1, J2, Jn, th1, th2):
    """Seed 004 eqs. (24)-(28), literally."""
    A1i, A2i = np.linalg.inv(A1), np.linalg.inv(A2)
    B = J1 @ A1i @ J1.T + J2 @ A2i @ J2.T                                         # (26)
    Bi = np.linalg.inv(B)
    C = np.zeros((6, 6)) if Jn.shape[1] == 0 else Jn @ np.linalg.inv(Jn.T @ Bi @ Jn) @ Jn.T @ Bi   # (27)
    vrel = J1 @ th1 - J2 @ th2                                                    # (28)
    d1 = -A1i @ J1.T @ Bi @ (np.eye(6) - C) @ vrel                                # (24)
    d2 = A2i @ J2.T @ Bi @ (np.eye(6) - C) @ vrel                                 # (25)
    return d1, d2


def _seed_one_mechanism(A1, J1, J2, Jn, th1):
    """Seed 004 eqs. (30)-(33), literally."""
    Ai = np.linalg.inv(A1)
    D = J1 - J2
    Bt = D @ Ai @ D.T                                                             # (31)
    Bi = np.linalg.inv(Bt)
    C = np.zeros((6, 6)) if Jn.shape[1] == 0 else Jn @ np.linalg.inv(Jn.T @ Bi @ Jn) @ Jn.T @ Bi   # (32)
    return -Ai @ D.T @ Bi @ (np.eye(6) - C) @ (D @ th1)                           # (30), (33)


@pytest.mark.parametrize("kind", list(JOINTS))
def test_jump_equals_seed_eqs_24_to_28(kind):
    m, q = two_free_bodies()
    v = np.random.default_rng(2).standard_normal(m.nv)
    ch = st.connect_state(m, q, v, "a_tip", "b", JOINTS[kind]())
    new = ch.model
    JL = ld.loops.loop_jacobian(new, ch.q)
    cols = _old_columns(m, new)
    a, b = m.v_slice("a_joint"), m.v_slice("b_joint")
    J1, J2 = JL[:, cols[a]], -JL[:, cols[b]]
    Jn = JL[:, new.loops[0].cut_v]
    M = ld.crba(m, q)
    d1, d2 = _seed_two_mechanisms(M[a, a], M[b, b], J1, J2, Jn, v[a], v[b])
    assert_close(ch.jump.dv[cols[a]], d1, 1e-10, "mechanism 1 (eq. 24)")
    assert_close(ch.jump.dv[cols[b]], d2, 1e-10, "mechanism 2 (eq. 25)")


@pytest.mark.parametrize("kind", list(JOINTS))
@pytest.mark.parametrize("seed", [0, 1])
def test_jump_inside_one_mechanism_equals_seed_eqs_30_to_33(kind, seed):
    """Two links of one random floating tree join: eqs. 29-33; momentum is conserved (the
    connection is internal), and the energy does not increase."""
    m = ld.models.random_tree(8, kinds=("revolute", "spherical", "universal"), floating=True, seed=seed,
                              gravity=(0, 0, 0))
    rng = np.random.default_rng(seed)
    q = ld.random_configuration(m, rng)
    v = rng.standard_normal(m.nv)
    a_body, b_body = m.body_names[2], m.body_names[m.nbody - 1]
    ch = st.connect_state(m, q, v, a_body, b_body, JOINTS[kind]())
    new = ch.model
    JL = ld.loops.loop_jacobian(new, ch.q)
    cols = _old_columns(m, new)
    # J_L = J1 - J2 on the old velocities (J1: the virtual side's, J2: the real side's)
    J1 = np.zeros((6, m.nv))
    J2 = np.zeros((6, m.nv))
    support_a = set(int(d) for d in range(m.nv) if m.dof_body[d] in m.support(m.body_id(a_body)))
    for d in range(m.nv):
        if d in support_a:
            J1[:, d] = JL[:, cols[d]]
        else:
            J2[:, d] = -JL[:, cols[d]]
    # (the common ancestors' columns of J_L are zero: both sides move alike; J1 - J2 = J_L)
    Jn = JL[:, new.loops[0].cut_v]
    d = _seed_one_mechanism(ld.crba(m, q), J1, J2, Jn, v)
    assert_close(ch.jump.dv[cols], d, 1e-9, "eq. 30")
    assert_close(world_momentum(new, ch.q, ch.v), world_momentum(m, q, v), 1e-10, "momentum")
    assert ch.jump.kinetic_after <= ch.jump.kinetic_before + 1e-12


def test_connect_then_cut_a_weld_conserves_momentum():
    """Two free bodies weld together, fly joined, and come apart: total momentum is conserved
    throughout (zero gravity): exactly by the jump and the cut, to round-off by the joined
    dynamics (dh/dt = 0), to the integrator's accuracy over the flight."""
    m, q = two_free_bodies()
    v = np.random.default_rng(3).standard_normal(m.nv)
    h0 = world_momentum(m, q, v)
    ch = st.connect_state(m, q, v, "a_tip", "b")
    assert_close(world_momentum(ch.model, ch.q, ch.v), h0, 1e-12, "momentum across the jump")
    a = ld.loops.constrained_dynamics(ch.model, ch.q, ch.v, np.zeros(ch.model.nv))
    eps = 1e-5
    dh = (world_momentum(ch.model, ld.integrate(ch.model, ch.q, ch.v, eps), ch.v + eps * a)
          - world_momentum(ch.model, ld.integrate(ch.model, ch.q, ch.v, -eps), ch.v - eps * a)) / (2 * eps)
    assert np.abs(dh).max() < 1e-7, f"dh/dt = {dh}"
    tr = ld.sim.simulate(ch.model, ch.q, ch.v, 0.3, 1e-3, record_every=100)
    assert_close(world_momentum(ch.model, tr.q[-1], tr.v[-1]), h0, 1e-9, "momentum while joined")
    h0 = world_momentum(ch.model, tr.q[-1], tr.v[-1])
    cut = st.cut(ch.model, tr.q[-1], tr.v[-1], ch.name)
    assert cut.model.nloops == 0 and cut.model.nv == m.nv
    assert_close(world_momentum(cut.model, cut.q, cut.v), h0, 1e-12, "momentum across the cut")
    assert_close(ld.kinetic_energy(cut.model, cut.q, cut.v), ld.kinetic_energy(ch.model, tr.q[-1], tr.v[-1]),
                 1e-12, "a cut does not change the kinetic energy")


def test_which_side_is_the_virtual_link_does_not_matter():
    """Connecting a to b or b to a gives the same motion (the virtual link on either side)."""
    m, q = two_free_bodies()
    v = np.random.default_rng(4).standard_normal(m.nv)
    ab = st.connect_state(m, q, v, "a_tip", "b", ld.Revolute("y"))
    # the same joint from b's side: b's frame at a_tip's pose, axis y of that frame
    T = ld.frame_pose(m, q, "a_tip")
    oMb = ld.frame_pose(m, q, "b")
    bMf = np.linalg.inv(oMb) @ T
    b2 = ld.ModelBuilder.from_model(m)
    b2.add_frame("b_at_a_tip", "b", placement=(bMf[:3, :3], bMf[:3, 3]))
    m2 = b2.build()
    ba = st.connect_state(m2, q, v, "b_at_a_tip", "a", ld.Revolute("y"))
    for name in m.joint_names:
        assert_close(ba.v[ba.model.v_slice(name)], ab.v[ab.model.v_slice(name)], 1e-10, name)
    tra = ld.sim.simulate(ab.model, ab.q, ab.v, 0.2, 1e-3)
    trb = ld.sim.simulate(ba.model, ba.q, ba.v, 0.2, 1e-3)
    for name in m.joint_names:
        assert_close(trb.q[-1][ba.model.q_slice(name)], tra.q[-1][ab.model.q_slice(name)], 1e-9, name)


def test_cut_at_a_real_joint_keeps_pose_velocity_and_loops():
    """Fig. 12: cutting a joint that is not a virtual link hangs the cut-off subtree from the
    world by a free joint at its present pose and velocity; every body's pose and velocity,
    the kinetic energy and the other loops are unchanged."""
    from linkdyn.models import scenarios
    m, q = scenarios.high_bar()
    rng = np.random.default_rng(5)
    an = ld.loops.analyze(m, q)
    v = an.W @ rng.standard_normal(an.dof)
    ch = st.cut(m, q, v, "l_elbow")                        # the left forearm comes off at the elbow
    new = ch.model
    assert "l_forearm_hand_free" in new.joint_names and "l_elbow" not in new.joint_names
    assert [lp.name for lp in new.loops] == [lp.name for lp in m.loops]
    k0, k1 = ld.forward_kinematics(m, q, v), ld.forward_kinematics(new, ch.q, ch.v)
    for name in m.body_names[1:]:
        i, j = m.body_names.index(name), new.body_names.index(name)
        assert_close(k1.p[j], k0.p[i], 1e-12, f"{name} position")
        assert_close(k1.R[j], k0.R[i], 1e-12, f"{name} orientation")
        assert_close(k1.v[j], k0.v[i], 1e-12, f"{name} velocity")
    assert_close(ld.kinetic_energy(new, ch.q, ch.v), ld.kinetic_energy(m, q, v), 1e-12, "kinetic energy")
    assert np.abs(ld.loops.loop_error(new, ch.q)).max() < 1e-12
    assert np.abs(ld.loops.loop_jacobian(new, ch.q) @ ch.v).max() < 1e-10


def test_cut_at_a_virtual_link_keeps_velocities():
    from linkdyn.models import scenarios
    m, q = scenarios.high_bar()
    an = ld.loops.analyze(m, q)
    v = an.W @ np.random.default_rng(6).standard_normal(an.dof)
    ch = st.cut(m, q, v, "r_grip__bar")
    assert [lp.name for lp in ch.model.loops] == ["l_grip__bar"]
    assert ch.model.nv == m.nv - 1
    for name in ch.model.joint_names:
        assert_close(ch.v[ch.model.v_slice(name)], v[m.v_slice(name)], 0, name)
    with pytest.raises(KeyError, match="no loop or joint"):
        st.cut(m, q, v, "nope")
