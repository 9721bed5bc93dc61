"""Joint springs (ModelBuilder.add_body(stiffness=, spring_ref=); linkdyn._kernels.springs).

Closed forms: a spring-mass-damper (a prismatic joint), a torsion pendulum (a revolute joint with
armature) and a ball-jointed sphere swinging through 2.5 rad about a fixed axis (the spring on the
rotation vector); the free joint's world-frame translation spring.  Consistency: RNEA vs ABA (and
the geared ABA), dU/dq vs the springs' torque, rnea/aba derivatives vs finite differences, the
passive forces as the difference of two twin models, the energy ledger of the simulation.  MuJoCo's
qfrc_passive on real files is checked in tests/test_mjcf_zoo.py."""
import pickle

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import linkdyn as ld
from linkdyn.model import joints as J


def qv(rec):
    """(q, v) samples of a one-segment run."""
    a = rec.segments[0].arrays()
    return a["q"], a["v"]


def sphere(m, r, com=(0.0, 0.0, 0.0)):
    return ld.Inertia(m, com, 0.4 * m * r * r * np.eye(3))


# ------------------------------------------------------------------------------ closed forms
def test_spring_mass_damper_closed_form():
    """m x'' + b x' + k (x - x_ref) = 0, underdamped: x = x_ref + e^(-z w t) (A cos w_d t + B sin w_d t)."""
    m, k, b, x_ref, x0 = 2.0, 50.0, 3.0, 0.1, 0.4
    bld = ld.ModelBuilder("smd")
    bld.add_body("cart", "world", J.Prismatic("x"), inertia=sphere(m, 0.1), stiffness=k, spring_ref=[x_ref], damping=[b])
    model = bld.build()
    w = np.sqrt(k / m)
    zeta = b / (2.0 * np.sqrt(k * m))
    wd = w * np.sqrt(1.0 - zeta ** 2)
    A, B = x0 - x_ref, zeta * w * (x0 - x_ref) / wd

    def x(t):
        return x_ref + np.exp(-zeta * w * t) * (A * np.cos(wd * t) + B * np.sin(wd * t))

    sim = ld.Simulation(model, q=[x0], dt=1e-3)
    rec = sim.run(2.0)
    t, (q, v) = rec.t, (x[:, 0] for x in qv(rec))
    np.testing.assert_allclose(q, x(t), atol=1e-9)
    for qi, vi in zip(q[::50], v[::50]):          # the equation of motion itself, state by state
        assert ld.aba(model, np.array([qi]), np.array([vi]), np.zeros(1))[0] == pytest.approx(
            -(k * (qi - x_ref) + b * vi) / m, rel=1e-13, abs=1e-13)
    # the spring's energy is potential energy: 1/2 k (x - x_ref)^2
    np.testing.assert_allclose(rec.potential, 0.5 * k * (q - x_ref) ** 2, rtol=1e-13, atol=1e-15)
    assert all(c.ok for c in sim.checks()), str(sim.checks())       # the ledger: damping took what is gone


def test_torsion_pendulum_closed_form():
    """A disc on a vertical revolute axis: (J + armature) th'' = -k (th - th_ref); th = th_ref + d cos(w t)."""
    Jz, arm, k, th_ref, d = 0.02, 0.005, 0.8, -0.3, 1.2
    bld = ld.ModelBuilder("torsion")
    bld.add_body("disc", "world", J.Revolute("z"), inertia=ld.Inertia(1.5, (0, 0, 0), np.diag([0.01, 0.01, Jz])),
                 stiffness=k, spring_ref=[th_ref], armature=[arm])
    model = bld.build()
    w = np.sqrt(k / (Jz + arm))
    sim = ld.Simulation(model, q=[th_ref + d], dt=1e-3)
    rec = sim.run(1.5)
    np.testing.assert_allclose(qv(rec)[0][:, 0], th_ref + d * np.cos(w * rec.t), atol=1e-9)
    E = rec.kinetic + rec.potential
    np.testing.assert_allclose(E, 0.5 * k * d * d, rtol=1e-9)      # the energy stays where it started
    assert all(c.ok for c in sim.checks()), str(sim.checks())


def test_ball_spring_swings_on_the_rotation_vector():
    """A sphere on a ball joint at its centre, turned 2.5 rad about an axis: the spring's torque
    -k r keeps r on that axis, and r(t) = 2.5 cos(w t) axis, w = sqrt(k / I) (no gravity moment)."""
    m, r, k, alpha = 3.0, 0.2, 2.0, 2.5
    I = 0.4 * m * r * r
    axis = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])
    ref = Rotation.from_rotvec([0.3, 0.1, -0.2])
    bld = ld.ModelBuilder("ball")
    bld.add_body("s", "world", J.Spherical(), inertia=sphere(m, r), stiffness=k, spring_ref=ref.as_quat())
    model = bld.build()
    q0 = (ref * Rotation.from_rotvec(alpha * axis)).as_quat()
    sim = ld.Simulation(model, q=q0, dt=1e-3)
    rec = sim.run(1.0)
    w = np.sqrt(k / I)
    rv = (ref.inv() * Rotation.from_quat(qv(rec)[0])).as_rotvec()
    np.testing.assert_allclose(rv, np.outer(alpha * np.cos(w * rec.t), axis), atol=1e-8)
    np.testing.assert_allclose(rec.potential, 0.5 * k * np.sum(rv ** 2, axis=1), rtol=1e-12)
    assert all(c.ok for c in sim.checks()), str(sim.checks())


def test_free_joint_spring_pulls_in_the_world_frame():
    """A free body turned and displaced, at rest, no gravity: its centre accelerates by
    -K (p - p_ref) / m in the world, however it is turned, and its rotation spring turns it back
    about the rotation vector of q_ref^-1 q."""
    m, K, kr = 2.0, np.array([3.0, 5.0, 7.0]), 0.6
    bld = ld.ModelBuilder("free", gravity=(0, 0, 0))
    p_ref, R_ref = np.array([0.5, -0.2, 1.0]), Rotation.from_rotvec([0.2, 0.4, -0.1])
    bld.add_body("b", "world", J.FreeFlyer(), inertia=sphere(m, 0.3), stiffness=[*K, kr, kr, kr],
                 spring_ref=[*p_ref, *R_ref.as_quat()])
    model = bld.build()
    R = R_ref * Rotation.from_rotvec([0.7, -0.5, 0.9])
    p = np.array([1.0, 2.0, -1.5])
    q = np.concatenate([p, R.as_quat()])
    a = ld.aba(model, q, np.zeros(6), np.zeros(6))
    np.testing.assert_allclose(R.as_matrix() @ a[:3], -K * (p - p_ref) / m, rtol=1e-13)
    np.testing.assert_allclose(a[3:], -kr * (R_ref.inv() * R).as_rotvec() / (0.4 * m * 0.09), rtol=1e-12)


# ------------------------------------------------------------------------------ consistency
def every_kind(springs=True, damping=True, gravity=(0.0, 0.0, -9.81)):
    """A tree with one joint of every kind, each with a spring (random references) and damping."""
    rng = np.random.default_rng(7)
    bld = ld.ModelBuilder("kinds", gravity=gravity)
    joints = [J.Revolute([0.3, 0.5, -0.8]), J.Prismatic("y"), J.Cylindrical("x"), J.Universal("x", "z"),
              J.Spherical(), J.SphericalZYX(), J.Planar(), J.FreeFlyer()]
    parent = "world"
    for k, joint in enumerate(joints):
        # the same draws with or without springs and damping: the twins differ only in those
        if joint.kind in J.QUAT_OFFSET:
            o = J.QUAT_OFFSET[joint.kind]
            ref = np.concatenate([rng.normal(size=o), Rotation.random(random_state=k).as_quat()])
        else:
            ref = rng.normal(size=joint.nq)
        stiff = rng.uniform(0.5, 3.0, joint.nv)
        if joint.kind in J.QUAT_OFFSET:
            stiff[-3:] = stiff[-1]
        damp = rng.uniform(0.1, 0.5, joint.nv)
        kw = dict(stiffness=stiff, spring_ref=ref) if springs else {}
        if damping:
            kw["damping"] = damp
        name = f"b{k}"
        bld.add_body(name, "world" if joint.kind == J.FREE else parent, joint,
                     placement=(Rotation.random(random_state=10 + k).as_matrix(), rng.normal(size=3) * 0.3),
                     inertia=ld.Inertia(rng.uniform(0.5, 2.0), rng.normal(size=3) * 0.1, np.diag(rng.uniform(0.1, 0.15, 3))),
                     **kw)
        if joint.kind != J.FREE:
            parent = name
    return bld.build()


def states(model, n=3, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield ld.random_configuration(model, rng), rng.standard_normal(model.nv), rng.standard_normal(model.nv)


def fd(f, model, q, eps=1e-6):
    """Central differences along integrate: columns d f / d q_k (a scalar f: its gradient (nv,))."""
    cols = [(np.asarray(f(ld.integrate(model, q, eps * e))) - np.asarray(f(ld.integrate(model, q, -eps * e)))) / (2 * eps)
            for e in np.eye(model.nv)]
    return np.array([float(np.squeeze(c)) for c in cols]) if np.size(cols[0]) == 1 else np.column_stack(cols)


def test_rnea_aba_and_the_springs_torque_agree():
    model, bare = every_kind(), every_kind(springs=False, damping=False)
    for q, v, a in states(model):
        tau = ld.rnea(model, q, v, a)
        np.testing.assert_allclose(ld.aba(model, q, v, tau), a, atol=1e-10)
        np.testing.assert_allclose(ld.crba(model, q) @ a + ld.nonlinear_effects(model, q, v), tau, atol=1e-10)
        # the springs and the damping are exactly the passive forces: the twin without them differs by those
        np.testing.assert_allclose(tau - ld.rnea(bare, q, v, a), -ld.passive_forces(model, q, v), atol=1e-12)
        # the springs' torque is the gradient of their energy (along the tangent space)
        np.testing.assert_allclose(ld.generalized_gravity(model, q), fd(lambda x: ld.potential_energy(model, x), model, q),
                                   atol=1e-7)
    Q = np.array([q for q, _, _ in states(model)])
    V = np.array([v for _, v, _ in states(model)])
    np.testing.assert_allclose(ld.passive_forces(model, Q, V), [ld.passive_forces(model, q, v) for q, v in zip(Q, V)],
                               atol=1e-14)


def test_derivatives_include_the_springs():
    model = every_kind()
    for q, v, a in states(model, 2):
        dq, dv, M = ld.rnea_derivatives(model, q, v, a)[:3]
        np.testing.assert_allclose(dq, fd(lambda x: ld.rnea(model, x, v, a), model, q), atol=2e-6)
        tau = ld.rnea(model, q, v, a)
        ddq = ld.aba_derivatives(model, q, v, tau)[0]
        np.testing.assert_allclose(ddq, fd(lambda x: ld.aba(model, x, v, tau), model, q), atol=2e-6)


def test_pickling_rebuilding_and_gears_keep_the_springs():
    model = every_kind()
    q, v, a = next(states(model))
    tau = ld.rnea(model, q, v, a)
    for other in (pickle.loads(pickle.dumps(model)), ld.ModelBuilder.from_model(model).build()):
        np.testing.assert_array_equal(other.stiffness, model.stiffness)
        np.testing.assert_array_equal(other.spring_ref, model.spring_ref)
        np.testing.assert_allclose(ld.rnea(other, q, v, a), tau, atol=1e-13)
    # a geared pair with springs on both joints: the geared ABA inverts the geared RNEA
    bld = ld.ModelBuilder("geared")
    bld.add_body("a", "world", J.Revolute("y"), inertia=sphere(1.0, 0.1, (0.3, 0, 0)), joint_name="ja",
                 stiffness=2.0, spring_ref=[0.4], damping=[0.1])
    bld.add_body("b", "a", J.Revolute("y"), placement=(np.eye(3), [0.5, 0, 0]), inertia=sphere(1.0, 0.1, (0.3, 0, 0)),
                 joint_name="jb", stiffness=3.0, spring_ref=[-0.2])
    bld.add_body("c", "b", J.Revolute("x"), placement=(np.eye(3), [0.5, 0, 0]), inertia=sphere(0.5, 0.1, (0, 0.2, 0)),
                 joint_name="jc", stiffness=1.5, spring_ref=[0.7])
    bld.add_gear("jb", "ja", ratio=-2.0, offset=0.1)
    geared = bld.build()
    assert geared.nv == 2
    np.testing.assert_allclose(geared.stiffness, [2.0 + 4.0 * 3.0, 1.5])        # G^T K G on the diagonal
    G = geared.coupling_matrix()
    for q, v, a in states(geared):
        tau = ld.rnea(geared, q, v, a)
        np.testing.assert_allclose(ld.aba(geared, q, v, tau), a, atol=1e-10)
        qf, vf = geared.expand(q, v)
        np.testing.assert_allclose(ld.passive_forces(geared, q, v), G.T @ ld.passive_forces(geared.full_model, qf, vf),
                                   atol=1e-13)
        # the follower's spring at q_b = -2 q_a + 0.1, seen by the leader: 2 (q_a - 0.4) + (-2) 3 (q_b + 0.2)
        qa = q[0]
        assert -ld.passive_forces(geared, q, 0 * v)[0] == pytest.approx(
            2.0 * (qa - 0.4) - 2.0 * 3.0 * (-2.0 * qa + 0.1 + 0.2), rel=1e-12)
        # the energy's gradient along the reduced coordinates is the reduced springs' torque (no gravity moment
        # would cancel it: compare the whole generalized gravity)
        np.testing.assert_allclose(ld.generalized_gravity(geared, q),
                                   fd(lambda x: ld.potential_energy(geared, x), geared, q), atol=1e-7)


@pytest.mark.parametrize("contact_method", ["events", "timestep"])
def test_energy_with_springs_closes_in_the_ledger(contact_method):
    """Springs on every kind of joint, damping, gravity: E(t) - E(0) - work is the integrator's
    error only (Simulation.checks), and with no damping the mechanical energy is kept."""
    for damping in (True, False):
        model = every_kind(damping=damping)
        q0 = ld.random_configuration(model, np.random.default_rng(3))
        sim = ld.Simulation(model, q=q0, dt=5e-4, contact_method=contact_method)
        rec = sim.run(0.4)
        assert all(c.ok for c in sim.checks()), (contact_method, damping, str(sim.checks()))
        E = rec.kinetic + rec.potential
        if not damping:
            assert np.ptp(E) < 1e-5 * (np.ptp(rec.potential) + 1.0), (contact_method, np.ptp(E))
        else:
            assert np.all(np.diff(E) < 1e-9 * np.abs(E).max()), contact_method     # damping only takes energy


def test_builder_refuses_bad_springs():
    bld = ld.ModelBuilder("bad")
    with pytest.raises(ValueError, match=r"add_body\('a'\).stiffness: expected finite values >= 0"):
        bld.add_body("a", "world", J.Revolute("z"), stiffness=-1.0)
    with pytest.raises(ValueError, match=r"add_body\('a'\).stiffness: expected 1 values for a revolute joint, got 2"):
        bld.add_body("a", "world", J.Revolute("z"), stiffness=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"spherical joint's rotational stiffness is one number"):
        bld.add_body("a", "world", J.Spherical(), stiffness=[1.0, 2.0, 1.0])
    with pytest.raises(ValueError, match=r"free joint's rotational stiffness is one number"):
        bld.add_body("a", "world", J.FreeFlyer(), stiffness=[1, 2, 3, 4, 4, 5])
    with pytest.raises(ValueError, match=r"spring_ref: expected 4 values \(a configuration of a spherical joint\), got 3"):
        bld.add_body("a", "world", J.Spherical(), stiffness=1.0, spring_ref=[0, 0, 0])
    with pytest.raises(ValueError, match=r"spring_ref: the quaternion \[x, y, z, w\] is zero"):
        bld.add_body("a", "world", J.Spherical(), stiffness=1.0, spring_ref=[0, 0, 0, 0])
    with pytest.raises(ValueError, match=r"spring_ref: expected finite values"):
        bld.add_body("a", "world", J.Revolute("z"), stiffness=1.0, spring_ref=[np.nan])
    # per-dof translational stiffness of a free joint is fine; a reference quaternion is normalized
    bld.add_body("f", "world", J.FreeFlyer(), stiffness=[1, 2, 3, 4, 4, 4], spring_ref=[0, 0, 0, 0, 0, 0, 2])
    assert bld.build().spring_ref.tolist() == [0, 0, 0, 0, 0, 0, 1]
