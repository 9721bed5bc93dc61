"""Gear couplings (linkdyn.model.gears): reduced coordinates, the geared ABA (tazz eqs. 30-40),
every entry point against the uncoupled tree projected by G, against a KKT solve, against
Pinocchio's mimic joints, and the loaders (URDF <mimic>, MJCF joint and tendon equalities)."""
import pickle
import warnings

import numpy as np
import pytest

import linkdyn as ld
from linkdyn.model import GearWarning
from linkdyn.model import joints as J


def _inertia(rng):
    P = rng.standard_normal((3, 3))
    P = P @ P.T * 0.01 + 0.002 * np.eye(3)
    return ld.Inertia(rng.uniform(0.3, 2.0), rng.uniform(-0.1, 0.1, 3), np.trace(P) * np.eye(3) - P)


def _placement(rng):
    return ld.models._random_rotation(rng), rng.uniform(-0.3, 0.3, 3)


def _one_dof(rng):
    axis = rng.standard_normal(3)
    return J.Revolute(axis) if rng.random() < 0.6 else J.Prismatic(axis)


def geared_tree(case, seed=0, floating=False, armature=True):
    """Random trees with the couplings of each kind:
    serial (follower hangs from its leader), parallel (siblings), chain (a gear on a gear),
    reverse (the leader hangs from its follower), mixed (all of these plus ordinary joints of every
    kind between and below the members) and general (leader and follower on different branches)."""
    rng = np.random.default_rng(seed)
    b = ld.ModelBuilder(f"geared_{case}")
    root = "world"
    if floating:
        b.add_body("base", "world", J.FreeFlyer(), inertia=_inertia(rng), joint_name="root")
        root = "base"
    b.add_body("a", root, J.Spherical() if case == "mixed" else _one_dof(rng), placement=_placement(rng),
               inertia=_inertia(rng), joint_name="ja")
    arm = {"armature": [rng.uniform(0, 0.05)]} if armature else {}

    def add(name, parent, joint=None, **kw):
        b.add_body(name, parent, joint or _one_dof(rng), placement=_placement(rng), inertia=_inertia(rng),
                   joint_name="j" + name, **(arm if joint is None else {}), **kw)

    add("l", "a")
    if case in ("serial", "chain", "mixed"):
        add("f1", "l")
        b.add_gear("jf1", "jl", rng.uniform(-2, 2), rng.uniform(-0.5, 0.5))
    if case == "chain":
        add("f2", "f1")
        b.add_gear("jf2", "jf1", rng.uniform(-2, 2), rng.uniform(-0.5, 0.5))
    if case in ("parallel", "mixed"):
        add("p1", "a")
        add("p2", "a")
        b.add_gear("jp1", "jl", rng.uniform(-2, 2), rng.uniform(-0.5, 0.5))
        b.add_gear("jp2", "jl", rng.uniform(-2, 2))
    if case == "reverse":
        add("c", "l")
        b.add_gear("jl", "jc", rng.uniform(-2, 2), rng.uniform(-0.5, 0.5))
    if case == "mixed":
        add("x", "f1", J.Universal([1, 0, 0], [0, 1, 0]))   # ordinary bodies below members
        add("y", "p1", J.Spherical())
        add("z", "x")
        add("w", "a", J.Cylindrical([0, 0, 1]))
        add("pp", "p2")
        b.add_gear("jpp", "jl", rng.uniform(-2, 2))          # a member below a parallel member
    if case == "general":
        add("m", "a")
        add("n", "m")
        add("o", "a")
        b.add_gear("jn", "jl", rng.uniform(-2, 2), 0.2)      # across branches, through an ordinary joint
        b.add_gear("jo", "jn", rng.uniform(-2, 2))
    return b.build()


CASES = ["serial", "parallel", "chain", "reverse", "mixed"]


def _state(model, rng, n=None):
    q = ld.random_configuration(model, rng, size=n)
    shape = (model.nv,) if n is None else (n, model.nv)
    return q, rng.standard_normal(shape), rng.standard_normal(shape)


def _close(a, b, tol=1e-9):
    scale = max(1.0, float(np.max(np.abs(b))))
    assert np.max(np.abs(np.asarray(a) - np.asarray(b))) <= tol * scale, np.max(np.abs(np.asarray(a) - np.asarray(b)))


@pytest.mark.parametrize("floating", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_aba_is_the_reduced_dynamics(case, floating):
    model = geared_tree(case, seed=CASES.index(case), floating=floating)
    full, G = model.full_model, model.coupling_matrix()
    assert model.nv == full.nv - len(model.gears) and G.shape == (full.nv, model.nv)
    rng = np.random.default_rng(7)
    for _ in range(5):
        q, v, tau = _state(model, rng)
        qf, vf = model.expand(q, v)
        M = ld.crba(model, q)
        _close(M, G.T @ ld.crba(full, qf) @ G, 1e-12)
        b = ld.nonlinear_effects(model, q, v)
        _close(b, G.T @ ld.nonlinear_effects(full, qf, vf), 1e-12)
        qdd = ld.aba(model, q, v, tau)
        _close(qdd, np.linalg.solve(M, tau - b), 1e-9)
        _close(ld.rnea(model, q, v, qdd), tau, 1e-9)
        # the same motion as the uncoupled tree with the couplings as constraints (KKT):
        # M_f a + b_f = G tau_r-like actuation + C^T lambda, C a = 0 with C the coupling rows
        C = np.zeros((full.nv - model.nv, full.nv))
        for k, row in enumerate(np.flatnonzero(~model._coupling.keep_v)):
            C[k, row] = 1.0
            C[k, model._coupling.keep_v.nonzero()[0][model._coupling.vsrc[row]]] = -model._coupling.vscale[row]
        tau_f = np.zeros(full.nv)
        tau_f[model._coupling.keep_v] = tau
        Mf = ld.crba(full, qf)
        K = np.block([[Mf, C.T], [C, np.zeros((len(C), len(C)))]])
        af = np.linalg.solve(K, np.concatenate([tau_f - ld.nonlinear_effects(full, qf, vf), np.zeros(len(C))]))[:full.nv]
        _close(af, G @ qdd, 1e-9)


@pytest.mark.parametrize("case", CASES)
def test_stacks_external_forces_and_pickling(case):
    model = geared_tree(case, seed=11 + CASES.index(case), floating=True)
    rng = np.random.default_rng(3)
    for n in (3,):                                       # the serial loop (the parallel kernel: below, slow)
        Q, V, T = _state(model, rng, n)
        ref = np.array([ld.aba(model, Q[k], V[k], T[k]) for k in range(n)])
        _close(ld.aba(model, Q, V, T), ref, 1e-12)
        _close(ld.rnea(model, Q, V, ref), T, 1e-9)
    q, v, tau = _state(model, rng)
    F = rng.standard_normal((model.nbody, 6))
    qdd = ld.aba(model, q, v, tau, fext=F)
    _close(qdd, np.linalg.solve(ld.crba(model, q), tau - ld.rnea(model, q, v, np.zeros(model.nv), fext=F)), 1e-9)
    again = pickle.loads(pickle.dumps(model))
    assert (again.nq, again.nv) == (model.nq, model.nv)
    np.testing.assert_array_equal(ld.aba(again, q, v, tau), ld.aba(model, q, v, tau))


@pytest.mark.slow
def test_stacks_run_the_parallel_kernel():
    """A stack of at least SERIAL_BELOW states runs the parallel compiled loop (30 s of compilation
    on a cold cache, hence slow; ``linkdyn warmup`` compiles it)."""
    model = geared_tree("mixed", seed=12, floating=True)
    rng = np.random.default_rng(4)
    Q, V, T = _state(model, rng, 40)
    ref = np.array([ld.aba(model, Q[k], V[k], T[k]) for k in range(40)])
    _close(ld.aba(model, Q, V, T), ref, 1e-12)
    _close(ld.aba(model, Q[0], V, T), np.array([ld.aba(model, Q[0], V[k], T[k]) for k in range(40)]), 1e-12)


def test_every_entry_point_is_the_projection_of_the_full_tree():
    model = geared_tree("mixed", seed=5, floating=True)
    full, G = model.full_model, model.coupling_matrix()
    rng = np.random.default_rng(0)
    q, v, a = _state(model, rng)
    qf, vf, af = model.expand(q, v, a)
    frame = "z"
    _close(ld.rnea(model, q, v, a), G.T @ ld.rnea(full, qf, vf, af), 1e-12)
    _close(ld.generalized_gravity(model, q), G.T @ ld.generalized_gravity(full, qf), 1e-12)
    for ref in ("world", "local", "local_world_aligned"):
        _close(ld.jacobian(model, q, frame, ref), ld.jacobian(full, qf, frame, ref) @ G, 1e-12)
        _close(ld.frame_velocity(model, q, v, frame, ref), ld.frame_velocity(full, qf, vf, frame, ref), 1e-12)
        _close(ld.frame_acceleration(model, q, v, a, frame, ref), ld.frame_acceleration(full, qf, vf, af, frame, ref), 1e-12)
        # the frame velocity is J v in the reduced coordinates too
        _close(ld.frame_velocity(model, q, v, frame, ref), ld.jacobian(model, q, frame, ref) @ v, 1e-12)
        dq, dv = ld.frame_velocity_derivatives(model, q, v, frame, ref)
        _close(dv, ld.jacobian(model, q, frame, ref), 1e-12)
    _close(ld.joint_jacobians(model, q), ld.joint_jacobians(full, qf) @ G, 1e-12)
    _close(ld.frame_pose(model, q, frame), ld.frame_pose(full, qf, frame), 0)
    _close(ld.center_of_mass(model, q), ld.center_of_mass(full, qf), 1e-14)
    _close(ld.com_jacobian(model, q), ld.com_jacobian(full, qf) @ G, 1e-12)
    _close(ld.point_jacobian(model, q, frame, (0.1, 0, 0)), ld.point_jacobian(full, qf, frame, (0.1, 0, 0)) @ G, 1e-12)
    _close(ld.kinetic_energy(model, q, v), 0.5 * v @ ld.crba(model, q) @ v, 1e-12)
    _close(ld.potential_energy(model, q), ld.potential_energy(full, qf), 1e-14)
    C = ld.coriolis_matrix(model, q, v)
    _close(C @ v, ld.nonlinear_effects(model, q, v) - ld.generalized_gravity(model, q), 1e-10)
    Md = ld.mass_matrix_derivative(model, q, v)
    _close(Md - 2 * C, -(Md - 2 * C).T, 1e-10)                 # skew-symmetric (Spong et al. 2006)
    terms = ld.lagrangian_terms(model, q, v)
    _close(terms.D @ a + terms.C @ v + terms.G + terms.F, ld.rnea(model, q, v, a), 1e-10)
    Y = ld.joint_torque_regressor(model, q, v, a, with_joint_terms=True)
    _close(Y @ ld.inertial_parameters(model, True), ld.rnea(model, q, v, a), 1e-10)
    kin, kf = ld.forward_kinematics(model, q, v), ld.forward_kinematics(full, qf, vf)
    _close(kin.v, kf.v, 0)
    _close(ld.solve_mass_matrix(model, q, a), np.linalg.solve(ld.crba(model, q), a), 1e-10)
    with pytest.raises(NotImplementedError, match="gear couplings"):
        ld.mass_matrix_cholesky(model, q)
    # the configuration space: integrate and difference keep the couplings
    q1 = ld.integrate(model, q, v, 0.3)
    _close(model.expand(q1), ld.integrate(full, qf, vf, 0.3), 1e-12)
    _close(ld.difference(model, q, q1), 0.3 * v, 1e-10)
    assert np.all(ld.random_configuration(model, 1, size=50) <= model.upper + 1e-12)
    _close(model.reduce(qf), q, 0)


def test_derivatives_match_finite_differences():
    model = geared_tree("mixed", seed=2, floating=True)
    rng = np.random.default_rng(1)
    q, v, tau = _state(model, rng)
    a = rng.standard_normal(model.nv)
    dq, dv, M = ld.rnea_derivatives(model, q, v, a)
    Aq, Av, Minv = ld.aba_derivatives(model, q, v, tau)
    eps = 1e-6
    E = np.eye(model.nv)
    fd_q = np.column_stack([(ld.rnea(model, ld.integrate(model, q, eps * e), v, a)
                             - ld.rnea(model, ld.integrate(model, q, -eps * e), v, a)) / (2 * eps) for e in E])
    fd_v = np.column_stack([(ld.rnea(model, q, v + eps * e, a) - ld.rnea(model, q, v - eps * e, a)) / (2 * eps) for e in E])
    fa_q = np.column_stack([(ld.aba(model, ld.integrate(model, q, eps * e), v, tau)
                             - ld.aba(model, ld.integrate(model, q, -eps * e), v, tau)) / (2 * eps) for e in E])
    _close(dq, fd_q, 1e-6)
    _close(dv, fd_v, 1e-6)
    _close(M, ld.crba(model, q), 1e-12)
    _close(Aq, fa_q, 1e-6)
    _close(Minv, np.linalg.inv(M), 1e-9)
    J1, J2 = ld.integrate_jacobians(model, q, v)
    fd = np.column_stack([ld.difference(model, ld.integrate(model, q, v), ld.integrate(model, ld.integrate(model, q, eps * e), v))
                          for e in E]) / eps
    _close(J1, fd, 1e-5)


def test_general_couplings_warn_and_are_solved_exactly():
    with pytest.warns(GearWarning, match="neither serial"):
        model = geared_tree("general", seed=4)
    rng = np.random.default_rng(2)
    Q, V, T = _state(model, rng, 5)
    ref = np.array([np.linalg.solve(ld.crba(model, Q[k]), T[k] - ld.nonlinear_effects(model, Q[k], V[k]))
                    for k in range(5)])
    _close(ld.aba(model, Q, V, T), ref, 1e-10)
    _close(ld.aba(model, Q[0], V[0], T[0]), ref[0], 1e-10)


def test_armature_and_rotors_are_seen_through_the_ratio():
    b = ld.ModelBuilder("rotor")
    b.add_body("a", "world", J.Revolute("z"), inertia=ld.Inertia(1.0, [0.2, 0, 0], np.diag([0.01, 0.02, 0.02])),
               joint_name="lead", armature=[0.1])
    b.add_body("b", "a", J.Revolute("z"), placement=(np.eye(3), [0.4, 0, 0]),
               inertia=ld.Inertia(1.0, [0.2, 0, 0], np.diag([0.01, 0.02, 0.02])), joint_name="follow", armature=[0.2])
    b.add_rotor("lead", 1e-4, 50.0)                      # + 1e-4 x 50^2 = 0.25
    b.add_gear("follow", "lead", 3.0)
    m = b.build()
    assert m.armature == pytest.approx([0.1 + 0.25 + 9 * 0.2])
    full = m.full_model
    np.testing.assert_allclose(full.armature, [0.35, 0.2])
    q = np.array([0.3])
    G = m.coupling_matrix()
    np.testing.assert_allclose(ld.crba(m, q), G.T @ ld.crba(full, m.expand(q)) @ G, rtol=1e-14)
    qdd = ld.aba(m, q, np.array([0.5]), np.array([1.0]))
    np.testing.assert_allclose(qdd, np.linalg.solve(ld.crba(m, q), 1.0 - ld.nonlinear_effects(m, q, np.array([0.5]))))


def test_builder_refuses_bad_gears():
    def base():
        b = ld.ModelBuilder()
        b.add_body("a", "world", J.Revolute("z"), inertia=ld.Inertia(1.0, [0.1, 0, 0], np.eye(3) * 0.01), joint_name="ja")
        b.add_body("b", "a", J.Revolute("z"), inertia=ld.Inertia(1.0, [0.1, 0, 0], np.eye(3) * 0.01), joint_name="jb")
        b.add_body("c", "b", J.Spherical(), inertia=ld.Inertia(1.0, [0.1, 0, 0], np.eye(3) * 0.01), joint_name="jc")
        return b
    with pytest.raises(KeyError, match="unknown follower joint 'nope'"):
        base().add_gear("nope", "ja", 1.0)
    with pytest.raises(ValueError, match="ratio of 0"):
        base().add_gear("jb", "ja", 0.0)
    with pytest.raises(ValueError, match="finite"):
        base().add_gear("jb", "ja", np.nan)
    b = base()
    b.add_gear("jb", "ja", 1.0)
    with pytest.raises(ValueError, match="already follows"):
        b.add_gear("jb", "ja", 2.0)
    b = base()
    b.add_gear("jc", "ja", 1.0)
    with pytest.raises(ValueError, match="spherical.*only revolute and prismatic"):
        b.build()
    b = base()
    b.add_gear("jb", "ja", 1.0)
    b.add_gear("ja", "jb", 1.0)
    with pytest.raises(ValueError, match="cycle"):
        b.build()
    b = base()
    b.add_gear("jb", "ja", 1.0)
    b.add_loop("loop", "c", "world")
    assert b.build().full_model.nloops == 1          # gears with loops: tests/test_gear_loops.py
    m = base()
    m.add_gear("jb", "ja", 2.0)
    model = m.build()
    with pytest.raises(ValueError, match=r"q: expected shape \(5,\)"):
        ld.rnea(model, np.zeros(7), np.zeros(4), np.zeros(4))     # the full tree's sizes are refused
    with pytest.raises(ValueError, match=r"v: expected shape \(4,\)"):
        ld.aba(model, ld.neutral(model), np.zeros(5), np.zeros(4))
    again = ld.ModelBuilder.from_model(model).build()             # the builder keeps the gears
    assert again.gears == model.gears and again.nv == model.nv


def test_geared_gripper():
    m = ld.models.geared_gripper()
    assert (m.nq, m.nv, m.full_model.nv) == (2, 2, 5) and len(m.gears) == 3
    assert m._coupling.general == []                      # parallel and serial: the ABA recursion
    q = np.array([0.2, 0.5])
    qf = m.expand(q)
    f = m.full_model
    assert qf[f.q_index("right_proximal")] == -0.5 and qf[f.q_index("right_distal")] == pytest.approx(-0.35)
    # the fingers close symmetrically: the tips mirror each other about the palm's xz plane
    pl, pr = ld.frame_pose(m, q, "left_tip"), ld.frame_pose(m, q, "right_tip")
    palm = ld.frame_pose(m, q, "palm")
    xl, xr = np.linalg.solve(palm, pl[:, 3]), np.linalg.solve(palm, pr[:, 3])
    np.testing.assert_allclose(xl * [1, -1, 1, 1], xr, atol=1e-14)
    rng = np.random.default_rng(0)
    for _ in range(5):
        q, v, tau = _state(m, rng)
        _close(ld.aba(m, q, v, tau), np.linalg.solve(ld.crba(m, q), tau - ld.nonlinear_effects(m, q, v)), 1e-10)


# --------------------------------------------------------------------------------------------
# loaders
def test_mjcf_tendon_equality_becomes_a_gear():
    xml = """<mujoco model="t"><compiler angle="radian"/>
      <worldbody><body name="a"><joint name="j1" axis="0 0 1" ref="0.1"/>
        <inertial pos="0.1 0 0" mass="1" diaginertia="0.01 0.02 0.02"/>
        <body name="b" pos="0.3 0 0"><joint name="j2" axis="0 1 0"/>
          <inertial pos="0.1 0 0" mass="1" diaginertia="0.01 0.02 0.02"/></body>
        <body name="c" pos="0 0.3 0"><joint name="j3" type="slide" axis="1 0 0"/>
          <inertial pos="0.1 0 0" mass="1" diaginertia="0.01 0.02 0.02"/></body></body></worldbody>
      <tendon><fixed name="t"><joint joint="j2" coef="2"/><joint joint="j1" coef="-1"/></fixed>
              <fixed name="u"><joint joint="j3" coef="1"/></fixed>
              <fixed name="w"><joint joint="j1" coef="1"/></fixed></tendon>
      <equality><tendon tendon1="t" polycoef="0.3 0 0 0 0"/></equality></mujoco>"""
    m = ld.parse_mjcf(xml)
    # 2 q2 - q1 - (2 * 0 - 0.1) = 0.3  ->  q2 = 0.5 q1 + 0.1
    assert [tuple(g) for g in m.gears] == [("j2", "j1", pytest.approx(0.5), pytest.approx(0.1))]
    m = ld.parse_mjcf(xml.replace('tendon1="t" polycoef="0.3 0 0 0 0"', 'tendon1="u" tendon2="w" polycoef="0 -3 0 0 0"'))
    # q3 - 0 = -3 (q1 - 0.1)  ->  q3 = -3 q1 + 0.3
    assert [tuple(g) for g in m.gears] == [("j3", "j1", pytest.approx(-3.0), pytest.approx(0.3))]
    with pytest.raises(NotImplementedError, match="alone"):          # c1 = 0: u alone, j3 locked
        ld.parse_mjcf(xml.replace('tendon1="t"', 'tendon1="u" tendon2="t"'))
    # three joints: q3 = c1 (2 q2 - q1 + 0.1) -> a linear coupling, j1 (listed last) dependent
    m = ld.parse_mjcf(xml.replace('tendon1="t" polycoef="0.3 0 0 0 0"', 'tendon1="u" tendon2="t" polycoef="0 2 0 0 0"'))
    (g,) = m.gears
    assert isinstance(g, ld.model.JointCoupling) and g.dependent == "j1"
    assert dict(g.terms) == {"j3": 1.0, "j2": -4.0, "j1": 2.0} and g.offset == pytest.approx(0.2)
    with pytest.raises(NotImplementedError, match="nonlinear"):
        ld.parse_mjcf(xml.replace('polycoef="0.3 0 0 0 0"', 'polycoef="0 1 1 0 0"'))


def _mimic_robots():
    from linkdyn.models import example_robot_data_dir
    root = example_robot_data_dir()
    out = []
    for rel, floating in [("panda_description/urdf/panda.urdf", False),
                          ("baxter_description/urdf/baxter.urdf", False),
                          ("talos_data/robots/talos_full_v2.urdf", True),
                          ("romeo_description/urdf/romeo.urdf", True)]:
        out.append(pytest.param(root / rel, floating, id=rel.split("/")[0]))
    return out


@pytest.mark.parametrize("path,floating", _mimic_robots())
def test_mimic_robots_against_pinocchio(path, floating):
    pin = pytest.importorskip("pinocchio")
    if not path.exists():
        pytest.skip(f"{path} is not in this example-robot-data")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ld.load_urdf(path, floating_base=floating)
    try:
        pm = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer(), mimic=True) if floating
              else pin.buildModelFromUrdf(str(path), mimic=True))
    except ValueError as exc:          # e.g. talos_full_v2: "The parent joint of the mimic joint is not in the tree"
        pytest.skip(f"Pinocchio {pin.__version__} does not load it with mimic=True: {exc}")
    assert model.gears and (model.nq, model.nv) == (pm.nq, pm.nv)
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, v, a = _state(model, rng)
        # Pinocchio 4.1's crba on mimic models depends on earlier calls: a fresh Data per call
        _close(ld.rnea(model, q, v, a), pin.rnea(pm, pm.createData(), q, v, a), 1e-10)
        M = pin.crba(pm, pm.createData(), q)
        M = np.triu(M) + np.triu(M, 1).T
        _close(ld.crba(model, q), M, 1e-10)
        qdd = ld.aba(model, q, v, a)
        _close(qdd, np.linalg.solve(M, a - pin.nonLinearEffects(pm, pm.createData(), q, v)), 1e-8)


@pytest.mark.parametrize("method", ["events", "timestep"])
def test_geared_gripper_simulation_holds_its_limits_and_closes_the_ledger(method):
    m = ld.models.geared_gripper()
    sim = ld.Simulation(m, q=np.array([0.0, 0.3]), v=np.array([1.0, 2.0]), dt=1e-3, contact_method=method,
                        controller=lambda t, q, v: np.array([0.0, 0.2]))
    rec = sim.run(0.6)
    t, grip = rec.joint_series("grip")
    _, rd = rec.joint_series("right_distal")             # a follower's own coordinate, not its leader's
    np.testing.assert_allclose(rd, -0.7 * grip, atol=1e-14)
    assert grip.max() == pytest.approx(m.upper[1], abs=1e-6)    # closed onto its stop (1.2 rad)
    assert np.all(grip <= m.upper[1] + 1e-9)                     # at every sample
    report = sim.checks()
    assert report.ok, str(report)


def test_constraints_on_a_geared_model_are_the_reduced_kkt():
    from linkdyn.constraints import PointFixed
    m = ld.models.geared_gripper()
    q, v, tau = np.array([0.1, 0.3]), np.array([0.2, 0.1]), np.array([0.0, 0.1])
    r = ld.constrained_dynamics(m, q, v, tau, [PointFixed("left_tip")])
    J = ld.point_jacobian(m, q, "left_tip")
    jdv = ld.jacobian_dot_times_v(m, q, v, "left_tip", "local_world_aligned")[:3]
    K = np.block([[ld.crba(m, q), J.T], [J, np.zeros((3, 3))]])
    x = np.linalg.lstsq(K, np.concatenate([tau - ld.nonlinear_effects(m, q, v), -jdv]), rcond=None)[0]
    _close(r.qdd, x[:2], 1e-9)


def test_constrained_derivatives_refuse_geared_models_clearly():
    from linkdyn.constraints import PointFixed
    m = ld.models.geared_gripper()
    with pytest.raises(NotImplementedError, match="gear couplings"):
        ld.constrained_dynamics_derivatives(m, ld.neutral(m), np.zeros(2), np.zeros(2), [PointFixed("left_tip")])


def test_to_pinocchio_makes_the_followers_mimic_joints():
    pin = pytest.importorskip("pinocchio")
    from linkdyn.interop import pinocchio_q, to_pinocchio
    g = ld.models.geared_gripper()
    pm, _ = to_pinocchio(g)
    assert (pm.nq, pm.nv) == (g.nq, g.nv)
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, v, a = _state(g, rng)
        qp = pinocchio_q(g, q)
        _close(ld.rnea(g, q, v, a), pin.rnea(pm, pm.createData(), qp, v, a), 1e-12)
        M = pin.crba(pm, pm.createData(), qp)
        _close(ld.crba(g, q), np.triu(M) + np.triu(M, 1).T, 1e-12)
