"""Linear couplings of several joints (ModelBuilder.add_coupling, linkdyn.model.gears): reduced
coordinates against the same coupling held by the constraint layer (linkdyn.constraints.LinearCoupling
on the uncoupled tree), against finite differences, and MJCF fixed-tendon equalities against MuJoCo."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import linkdyn as ld
from linkdyn import interop
from linkdyn.constraints import LinearCoupling, constrained_dynamics
from linkdyn.model import GearWarning
from linkdyn.model import joints as J

from test_gears import _close, _inertia, _one_dof, _placement

COEF = {"jb": 0.7, "jd": -1.3, "je": 0.9}          # jb, jd, je on three different branches
OFFSET = 0.15


def coupled_tree(seed=0, coupled=True, floating=True, dependent=None, limits=False, extra_gear=False):
    """A random tree with a three-joint coupling across branches, a free base, a ball joint and an
    ordinary chain; ``coupled=False``: the same tree uncoupled."""
    rng = np.random.default_rng(seed)
    b = ld.ModelBuilder("coupled")
    root = "world"
    if floating:
        b.add_body("base", "world", J.FreeFlyer(), inertia=_inertia(rng), joint_name="root")
        root = "base"

    def add(name, parent, joint=None, **kw):
        joint = joint or _one_dof(rng)
        one = joint.nv == 1
        b.add_body(name, parent, joint, placement=_placement(rng), inertia=_inertia(rng),
                   joint_name="j" + name, armature=[rng.uniform(0, 0.05)] if one else None,
                   damping=[rng.uniform(0.1, 0.5)] if one else None, **kw)

    add("a", root, J.Revolute([0, 0, 1]))
    add("b", "a")
    add("c", root, J.Spherical())
    add("d", "c", **({"lower": [-0.4], "upper": [0.5]} if limits else {}))
    add("e", "b", J.Revolute(rng.standard_normal(3)))
    add("f", "e")
    add("g", "d")
    if coupled:
        b.add_coupling(COEF, offset=OFFSET, dependent=dependent)
        if extra_gear:
            b.add_gear("jg", "je", -0.6, 0.05)       # a gear on a joint that a coupling depends on
    return b.build()


def _coupled_state(model, rng):
    q = ld.random_configuration(model, rng)
    return q, rng.standard_normal(model.nv), rng.standard_normal(model.nv)


def test_the_dependent_row_of_G_and_the_coupling_holds():
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # solved through G^T M G, same answer: no warning
        m = coupled_tree()
    full = m.full_model
    assert (m.nq, m.nv) == (full.nq - 1, full.nv - 1)
    G = m.coupling_matrix()
    k = full.v_index("je")
    # q_e = (offset - 0.7 q_b + 1.3 q_d) / 0.9: two entries in its row, the unit rows elsewhere
    row = np.zeros(m.nv)
    row[m.v_index("jb")], row[m.v_index("jd")] = -COEF["jb"] / COEF["je"], -COEF["jd"] / COEF["je"]
    _close(G[k], row, 1e-15)
    assert np.count_nonzero(G[np.arange(full.nv) != k], axis=1).tolist() == [1] * (full.nv - 1)
    rng = np.random.default_rng(3)
    q, v, _ = _coupled_state(m, rng)
    qf, vf = m.expand(q, v)
    aq, av = LinearCoupling(COEF, OFFSET).terms_of(full)
    assert abs(aq @ qf - OFFSET) < 1e-14 and abs(av @ vf) < 1e-14
    _close(m.reduce(qf), q, 0)
    assert repr(m).endswith(", 1 coupling>")
    # pickling and rebuilding keep the coupling
    import pickle
    for m2 in (pickle.loads(pickle.dumps(m)), ld.ModelBuilder.from_model(m).build()):
        assert m2.gears == m.gears
        _close(m2.coupling_matrix(), G, 0)
        _close(ld.aba(m2, q, v, v), ld.aba(m, q, v, v), 1e-12)
    assert m.q_slice("je") == slice(m.q_index("je"), m.q_index("je"))     # no coordinate of its own


@pytest.mark.parametrize("dependent", [None, "jb", "jd"])
def test_reduced_coordinates_agree_with_the_constraint_layer(dependent):
    m = coupled_tree(seed=1, dependent=dependent)
    full = coupled_tree(seed=1, coupled=False)
    rng = np.random.default_rng(4)
    c = [LinearCoupling(COEF, OFFSET)]
    for _ in range(3):
        q, v, tau = _coupled_state(m, rng)
        qf, vf = m.expand(q, v)
        G = m.coupling_matrix()
        # the same physical torques: tau on the independent joints, none on the dependent one
        tau_f = np.linalg.pinv(G.T) @ tau
        _close(G.T @ tau_f, tau, 1e-12)
        res = constrained_dynamics(full, qf, vf, tau_f, c)
        a = ld.aba(m, q, v, tau)
        _close(G @ a, res.qdd, 1e-9)
        # inverse dynamics: rnea of the reduced model is G^T of the full tree's, at accelerations
        # that satisfy the coupling
        _close(ld.rnea(m, q, v, a), G.T @ ld.rnea(full, qf, vf, G @ a), 1e-10)
        _close(ld.crba(m, q), G.T @ ld.crba(full, qf) @ G, 1e-12)


def test_cyclic_dependencies_are_solved_together():
    # jb depends on jd and je, and a gear makes je follow jb: the two dependents are solved at once
    rng = np.random.default_rng(0)
    b = ld.ModelBuilder("cyclic")
    for n, p in (("a", "world"), ("b", "a"), ("d", "world"), ("e", "d")):
        b.add_body(n, p, _one_dof(rng), placement=_placement(rng), inertia=_inertia(rng), joint_name="j" + n)
    b.add_coupling({"jb": 1.0, "jd": 2.0, "je": -0.5}, offset=0.3, dependent="jb")
    b.add_gear("je", "jb", 0.4, 0.1)
    with pytest.warns(GearWarning, match="jb"):     # both follow jd alone, across branches: G^T M G
        m = b.build()
    assert m.nv == 2
    q = rng.standard_normal(2)
    qf = m.expand(q)
    ib, i_d, ie = (m.full_model.q_index(n) for n in ("jb", "jd", "je"))
    assert abs(qf[ib] + 2.0 * qf[i_d] - 0.5 * qf[ie] - 0.3) < 1e-14
    assert abs(qf[ie] - 0.4 * qf[ib] - 0.1) < 1e-14
    # a cycle that determines nothing is refused, naming the way out
    b2 = ld.ModelBuilder("singular")
    for n, p in (("a", "world"), ("b", "a"), ("d", "world")):
        b2.add_body(n, p, _one_dof(rng), placement=_placement(rng), inertia=_inertia(rng), joint_name="j" + n)
    b2.add_coupling({"ja": 1.0, "jb": 1.0, "jd": 1.0}, dependent="ja")
    b2.add_coupling({"ja": 2.0, "jb": 2.0, "jd": 1.0}, dependent="jb")
    with pytest.raises(ValueError, match="LinearCoupling"):
        b2.build()


def test_builder_refuses_bad_couplings():
    b = ld.ModelBuilder("bad")
    b.add_body("a", "world", J.Revolute([0, 0, 1]), inertia=ld.Inertia(1, [0, 0, 0], np.eye(3)), joint_name="ja")
    b.add_body("b", "a", J.Spherical(), inertia=ld.Inertia(1, [0, 0, 0], np.eye(3)), joint_name="jb")
    b.add_body("c", "a", J.Revolute([0, 1, 0]), inertia=ld.Inertia(1, [0, 0, 0], np.eye(3)), joint_name="jc")
    with pytest.raises(KeyError, match="nope"):
        b.add_coupling({"ja": 1, "nope": 1})
    with pytest.raises(TypeError, match="at least two"):
        b.add_coupling({"ja": 1})
    with pytest.raises(ValueError, match="coefficient 0"):
        b.add_coupling({"ja": 1, "jc": 0}, dependent="jc")
    with pytest.raises(ValueError, match="finite"):
        b.add_coupling({"ja": 1, "jc": np.nan})
    with pytest.raises(KeyError, match="dependent"):
        b.add_coupling({"ja": 1, "jc": 1}, dependent="jb")
    b.add_coupling({"ja": 1, "jb": 1})
    with pytest.raises(ValueError, match="spherical|only revolute"):
        b.build()


def test_to_pinocchio_refuses_a_coupling_of_several_joints():
    pytest.importorskip("pinocchio")
    with pytest.raises(NotImplementedError, match="mimic joint follows one joint"):
        interop.to_pinocchio(coupled_tree(floating=False))


def test_derivatives_through_the_coupling_match_finite_differences():
    m = coupled_tree(seed=2, extra_gear=True)
    rng = np.random.default_rng(5)
    q, v, tau = _coupled_state(m, rng)
    a = rng.standard_normal(m.nv)
    dq, dv, M = ld.rnea_derivatives(m, q, v, a)
    Aq, Av, Minv = ld.aba_derivatives(m, q, v, tau)
    eps = 1e-6
    E = np.eye(m.nv)
    fd_q = np.column_stack([(ld.rnea(m, ld.integrate(m, q, eps * e), v, a)
                             - ld.rnea(m, ld.integrate(m, q, -eps * e), v, a)) / (2 * eps) for e in E])
    fd_v = np.column_stack([(ld.rnea(m, q, v + eps * e, a) - ld.rnea(m, q, v - eps * e, a)) / (2 * eps) for e in E])
    fa_q = np.column_stack([(ld.aba(m, ld.integrate(m, q, eps * e), v, tau)
                             - ld.aba(m, ld.integrate(m, q, -eps * e), v, tau)) / (2 * eps) for e in E])
    fa_v = np.column_stack([(ld.aba(m, q, v + eps * e, tau) - ld.aba(m, q, v - eps * e, tau)) / (2 * eps) for e in E])
    _close(dq, fd_q, 1e-6)
    _close(dv, fd_v, 1e-6)
    _close(M, ld.crba(m, q), 1e-12)
    _close(Aq, fa_q, 1e-6)
    _close(Av, fa_v, 1e-6)
    _close(Minv, np.linalg.inv(M), 1e-9)
    # a frame Jacobian (the full tree's times G) is the derivative of the frame's position
    Jf = ld.jacobian(m, q, "f", "local_world_aligned")[:3]
    p = lambda x: ld.frame_pose(m, x, "f")[:3, 3]   # noqa: E731
    fd = np.column_stack([(p(ld.integrate(m, q, eps * e)) - p(ld.integrate(m, q, -eps * e))) / (2 * eps) for e in E])
    _close(Jf, fd, 1e-7)


# --- MJCF: dm_control's quadruped (fixed-tendon equalities of three joints) ---------------------
def _quadruped_path():
    suite = pytest.importorskip("dm_control.suite")
    path = os.path.join(os.path.dirname(suite.__file__), "quadruped.xml")
    if not os.path.exists(path):
        pytest.skip("dm_control's quadruped.xml is not installed")
    return path


def _quadruped():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # its sites named as bodies, soft contacts, hfield: not ours here
        return ld.load_mjcf(_quadruped_path())


def _tendon_residuals(mj, mjm, qpos):
    """Every <equality tendon> of MuJoCo's model: L - L_0 - c0 at qpos (L = sum coef q)."""
    out = []
    for e in range(mjm.neq):
        if mjm.eq_type[e] != mj.mjtEq.mjEQ_TENDON:
            continue
        t = mjm.eq_obj1id[e]
        adr, num = mjm.tendon_adr[t], mjm.tendon_num[t]
        L = sum(mjm.wrap_prm[w] * qpos[mjm.jnt_qposadr[mjm.wrap_objid[w]]] for w in range(adr, adr + num))
        out.append(L - mjm.tendon_length0[t] - mjm.eq_data[e, 0])
    return np.array(out)


def test_quadruped_mass_matrix_and_bias_forces_against_mujoco():
    mj = pytest.importorskip("mujoco")
    from test_mjcf import MuJoCo
    path = _quadruped_path()
    m = _quadruped()
    assert len(m.gears) == 4 and all(isinstance(g, ld.model.JointCoupling) for g in m.gears)
    sim = object.__new__(MuJoCo)                 # the test_mjcf oracle on MuJoCo's own file (it has includes)
    sim.mj, sim.ld = mj, m
    sim.m = mj.MjModel.from_xml_path(path)
    sim.m.opt.disableflags |= mj.mjtDisableBit.mjDSBL_CONSTRAINT     # the couplings are G here, not forces
    sim.d = mj.MjData(sim.m)
    full = m.full_model
    assert (sim.m.nq, sim.m.nv) == (full.nq, full.nv) and m.nv == full.nv - 4
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, v, a = _coupled_state(m, rng)
        qpos = interop.to_mujoco(m, q)[0]
        # a state of the reduced model satisfies MuJoCo's four tendon equalities
        assert np.abs(_tendon_residuals(mj, sim.m, qpos)).max() < 1e-14
        # and round-trips through MuJoCo's coordinates
        q2, v2 = interop.from_mujoco(m, *interop.to_mujoco(m, q, v))
        _close(canonical_q(m, q2), canonical_q(m, q), 1e-14)
        _close(v2, v, 1e-13)
        # M_r = T^T M_mj T and G^T (M_mj qacc + bias - passive) with qvel = T v, T = d qvel / dv (G inside)
        Mr = sim.M(q)
        _close(ld.crba(m, q), Mr, 1e-12)
        _close(ld.rnea(m, q, v, a), sim.inverse(q, v, a), 1e-11)
        _close(ld.nonlinear_effects(m, q, v), sim.inverse(q, v, np.zeros(m.nv)), 1e-11)
        # the full tree itself is MuJoCo's model without the couplings
        qf, vf = m.expand(q, v)
        sim_f = object.__new__(MuJoCo)
        sim_f.mj, sim_f.ld, sim_f.m, sim_f.d = mj, full, sim.m, sim.d
        _close(ld.crba(full, qf), sim_f.M(qf), 1e-12)


def canonical_q(model, q):
    q = np.array(q, dtype=float)
    for o in model._quat_starts:
        if q[o + 3] < 0:
            q[o:o + 4] *= -1
    return q


def test_quadruped_simulates_with_its_couplings_held():
    mj = pytest.importorskip("mujoco")
    m = _quadruped()
    mjm = mj.MjModel.from_xml_path(_quadruped_path())
    q0 = interop.from_mujoco(m, mjm.qpos0)[0]
    q0[m.q_index("root") + 2] += 0.1             # a drop onto the floor from a little above qpos0
    q0[m.q_index("ball_root") + 2] += 0.1
    # the knees bent so that each dependent ankle (ankle = -(pitch + knee)) starts 0.03 rad below its
    # upper limit and turns towards it at 1 rad/s: the limit rows over the joints it depends on must
    # stop it (a passive drop leaves the ankles 0.22 rad short of it, 0.70 in MuJoCo, now that the
    # legs' capsules stand on the floor too)
    v0 = np.zeros(m.nv)
    for leg in ("front_left", "front_right", "back_left", "back_right"):
        q0[m.q_index(f"knee_{leg}")] = -0.93
        v0[m.v_slice(f"knee_{leg}")] = -1.0
    rec = ld.Simulation(m, q0, v0, dt=2e-3, contact_method="timestep", integrator="euler").run(1.0)
    Q = np.concatenate([np.asarray(s.q) for s in rec.segments if len(s.t)])
    assert len(Q) > 100 and np.isfinite(Q).all()
    res = np.array([_tendon_residuals(mj, mjm, interop.to_mujoco(m, q)[0]) for q in Q])
    assert np.abs(res).max() < 1e-9
    # the dependent ankles keep their own limits (rows over the joints they depend on), once each
    from linkdyn.contact.rows import UnitCatalog
    names = [n for n in UnitCatalog(m, contacts=False).names if n.startswith("ankle")]
    assert sorted(names) == sorted(f"{g.dependent}.{s}" for g in m.gears for s in ("lower", "upper"))
    full = m.full_model
    hit = False
    for g in m.gears:
        k = full.q_index(g.dependent)
        qa = m.expand(Q)[:, k]
        assert (qa >= full.lower[k] - 1e-9).all() and (qa <= full.upper[k] + 1e-9).all()
        hit |= bool(np.isclose(qa, full.upper[k], atol=1e-6).any())
    assert hit, "no ankle reached its limit: the limit rows went untested"
    # the legs moved: the motion is not trivially the rest pose
    assert np.ptp(Q[:, m.q_index("knee_front_left")]) > 1e-3


def test_joint_damping_of_a_dependent_joint_has_cross_terms():
    # rnea = D a + C v + G + F: F of a coupled model is G^T (d * G v), not diagonal in v
    m = coupled_tree(seed=3)
    rng = np.random.default_rng(6)
    q, v, a = _coupled_state(m, rng)
    t = ld.lagrangian_terms(m, q, v)
    _close(t.D @ a + t.C @ v + t.G + t.F, ld.rnea(m, q, v, a), 1e-10)
    G, d = m.coupling_matrix(), m.full_model.damping
    _close(t.F, G.T @ (d * (G @ v)), 1e-13)
    from linkdyn.sim.steps import joint_friction_power
    assert abs(joint_friction_power(m, v) - v @ t.F) < 1e-12 * max(1.0, abs(v @ t.F))


def test_the_limits_of_a_dependent_joint_are_rows_over_its_dofs():
    from linkdyn.contact.rows import UnitCatalog
    m = coupled_tree(seed=4, limits=True, dependent="jd")     # jd in [-0.4, 0.5] depends on jb and je
    full = m.full_model
    k = full.q_index("jd")
    cat = UnitCatalog(m, contacts=False)
    sel = [cat.names.index("jd.lower"), cat.names.index("jd.upper")]
    assert sum(n.startswith("jd") for n in cat.names) == 2
    rng = np.random.default_rng(7)
    q, v, _ = _coupled_state(m, rng)
    u = cat.units(q, v, select=sel)
    qd = m.expand(q)[k]
    _close(u.gap, [qd + 0.4, 0.5 - qd], 1e-14)
    _close(cat.gaps(q)[sel], u.gap, 1e-14)
    # the rows are the gaps' derivatives along the tangent directions
    eps = 1e-6
    fd = np.column_stack([(cat.gaps(ld.integrate(m, q, eps * e))[sel] - cat.gaps(ld.integrate(m, q, -eps * e))[sel])
                          / (2 * eps) for e in np.eye(m.nv)])
    _close(u.N, fd, 1e-8)


def test_quadruped_energy_ledger_closes_with_the_coupled_damping():
    # damping 30 on every joint: the dependent ankles' damping couples pitch and knee (G^T D G); the
    # ledger's friction power must take it so (it was off by 1.8 % of the energy moved before)
    mj = pytest.importorskip("mujoco")
    m = _quadruped()
    q0 = interop.from_mujoco(m, mj.MjModel.from_xml_path(_quadruped_path()).qpos0)[0]
    q0[m.q_index("root") + 2] += 0.1
    q0[m.q_index("ball_root") + 2] += 0.1
    sim = ld.Simulation(m, q0, dt=2e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim.run(0.5)
    checks = sim.checks()
    assert checks.ok, checks


def test_loops_with_a_coupling_of_several_joints():
    # two four-bar fingers, the right crank tied to the left crank and rocker: the closed-chain solve in
    # reduced coordinates (J_C G) against the uncoupled tree's loops plus the coupling as a constraint
    from linkdyn import loops
    from test_gear_loops import closed_state, gripper
    coef = {"crank_L": 0.5, "rocker_L": -0.3, "crank_R": 1.0}
    un = gripper(gear=False)
    b = ld.ModelBuilder.from_model(un)
    b.add_coupling(coef, offset=0.2)
    m = b.build()
    assert m.nv == un.nv - 1
    G = m.coupling_matrix()
    for seed in range(2):
        q, v, tau = closed_state(m, seed)
        assert np.abs(loops.loop_error(m, q)).max() < 1e-9
        qdd = loops.constrained_dynamics(m, q, v, tau)
        qf, vf = m.expand(q, v)
        res = constrained_dynamics(un, qf, vf, np.linalg.pinv(G.T) @ tau, [LinearCoupling(coef, 0.2)])
        _close(G @ qdd, res.qdd, 1e-8)
