"""User constraints in the equations of motion (``ld.constrained_dynamics``, the Lagrange-multiplier
form): against the tree that makes the same motion, against finite
differences of the constraint functions, and the forces against statics."""
import numpy as np
import pytest

import linkdyn as ld
from linkdyn import constraints as C
from linkdyn.constraints import dynamics as CD
from linkdyn.models import scenarios as sc


def body(joint):
    b = ld.ModelBuilder("body")
    b.add_body("b", "world", joint, inertia=ld.Inertia(2.0, [0.1, -0.05, -0.5], np.diag([0.08, 0.07, 0.02])))
    b.add_frame("tip", "b", placement=[0.0, 0.0, -1.0])
    return b.build()


def test_a_free_body_held_at_a_point_moves_as_a_ball_joint():
    """A free body whose origin is held by PointFixed has the angular acceleration of the same
    body on a spherical joint there (ABA), for random states."""
    rng = np.random.default_rng(0)
    ball, free = body(ld.Spherical()), body(ld.FreeFlyer())
    for _ in range(5):
        qb = ld.random_configuration(ball, rng)
        w = rng.standard_normal(3)
        tau = rng.standard_normal(3)
        qf = np.concatenate([[0.0, 0.0, 0.0], qb])
        vf = np.concatenate([[0.0, 0.0, 0.0], w])
        res = ld.constrained_dynamics(free, qf, vf, np.concatenate([np.zeros(3), tau]),
                                      [C.PointFixed("b", target=(0.0, 0.0, 0.0))])
        assert np.allclose(res.qdd[3:], ld.aba(ball, qb, w, tau), atol=1e-12)
        assert np.allclose(res.qdd[:3], 0.0, atol=1e-12) and res.residual < 1e-12
        # the force on the point is what the ball joint transmits: total momentum rate = force + weight
        m = 2.0
        R = ld.frame_pose(free, qf, "b")[:3, :3]
        com = R @ np.array([0.1, -0.05, -0.5])
        acc_com = np.cross(R @ res.qdd[3:], com) + np.cross(R @ w, np.cross(R @ w, com))
        assert np.allclose(m * acc_com, res.forces[0] + m * np.asarray(free.gravity), atol=1e-10)


@pytest.mark.parametrize("make", [
    lambda: C.PointFixed("tip", point=(0.05, 0.0, 0.0)),
    lambda: C.PointOnPlane("tip", normal=(1.0, 0.5, 0.2), offset=0.3, point=(0.0, 0.02, 0.0)),
    lambda: C.FrameFixed("tip"),
    lambda: C.Distance("tip", "world_anchor", 1.0),
])
def test_the_constraints_accelerations_vanish_along_the_motion(make):
    """c''(t) = 0 at t = 0 along q(t) = q (+) (v t + q'' t^2 / 2), by central differences of the
    constraint's own function (the position of its points), on a floating two-body chain."""
    b = ld.ModelBuilder("chain")
    b.add_body("a", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.5, [0.0, 0.1, -0.2], np.diag([0.05, 0.04, 0.03])))
    b.add_body("c", "a", ld.Revolute("y"), placement=[0.0, 0.0, -0.4],
               inertia=ld.Inertia(1.0, [0.0, 0.0, -0.3], np.diag([0.03, 0.03, 0.01])))
    b.add_frame("tip", "c", placement=(ld.spatial.rotx(0.3), [0.02, 0.01, -0.6]))
    b.add_frame("world_anchor", "world", placement=[0.3, -0.2, 0.4])
    m = b.build()
    rng = np.random.default_rng(4)
    q = ld.random_configuration(m, rng)
    v = rng.standard_normal(m.nv)
    tau = rng.standard_normal(m.nv)
    c = make()
    res = ld.constrained_dynamics(m, q, v, tau, [c])
    J, jdv, _ = c.terms(m, q, v)
    assert np.abs(J @ res.qdd + jdv).max() < 1e-10

    def position(t):
        qt = ld.integrate(m, q, v * t + 0.5 * res.qdd * t * t)
        if isinstance(c, C.FrameFixed):
            return ld.frame_pose(m, qt, "tip")
        if isinstance(c, C.Distance):
            return np.array([np.linalg.norm(ld.frame_pose(m, qt, "tip")[:3, 3] - ld.frame_pose(m, qt, "world_anchor")[:3, 3])])
        T = ld.frame_pose(m, qt, c.frame)
        p = T[:3, 3] + T[:3, :3] @ np.asarray(c.point)
        if isinstance(c, C.PointOnPlane):
            n = np.asarray(c.normal) / np.linalg.norm(c.normal)
            return np.array([n @ p])
        return p
    h = 1e-4
    second = (position(h) - 2 * position(0.0) + position(-h)) / h ** 2
    if not isinstance(c, C.FrameFixed):
        # an independent KKT check: M q'' + b - tau is a combination of the rows of the constraint's
        # Jacobian taken by finite differences of its function (q'' = 0, v = e_k: the tangent directions)
        def value(qq):
            T = ld.frame_pose(m, qq, "tip")
            if isinstance(c, C.Distance):
                return np.array([np.linalg.norm(T[:3, 3] - ld.frame_pose(m, qq, "world_anchor")[:3, 3])])
            pt = T[:3, 3] + T[:3, :3] @ np.asarray(c.point)
            return np.array([np.asarray(c.normal) / np.linalg.norm(c.normal) @ pt]) if isinstance(c, C.PointOnPlane) else pt
        e = np.eye(m.nv) * 1e-6
        Jfd = np.column_stack([(value(ld.integrate(m, q, e[k])) - value(ld.integrate(m, q, -e[k]))) / 2e-6
                               for k in range(m.nv)])
        assert np.abs(Jfd - J).max() < 1e-6
        g = ld.crba(m, q) @ res.qdd + ld.nonlinear_effects(m, q, v) - tau
        lam = np.linalg.lstsq(Jfd.T, g, rcond=None)[0]
        assert np.abs(Jfd.T @ lam - g).max() < 1e-5 * max(1.0, np.abs(g).max())
    if isinstance(c, C.FrameFixed):
        R0 = position(0.0)[:3, :3]
        lin = second[:3, 3]
        ang = ld.spatial.log3(position(h)[:3, :3] @ R0.T) + ld.spatial.log3(position(-h)[:3, :3] @ R0.T)
        assert np.abs(lin).max() < 1e-5 and np.abs(ang / h ** 2).max() < 1e-5
    else:
        assert np.abs(second).max() < 1e-5


def test_a_planar_arm_pressing_on_a_wall_feels_its_push():
    """A 2-link arm at rest with its tip on the wall x = x_tip: torques g(q) + J^T (F n) press
    the tip with F newtons; the wall answers with lambda = -F and nothing moves."""
    b = ld.ModelBuilder("arm")
    b.add_body("l1", "world", ld.Revolute("y"), inertia=ld.Inertia(1.0, [0.5, 0, 0], np.diag([0.01, 0.09, 0.09])))
    b.add_body("l2", "l1", ld.Revolute("y"), placement=[1.0, 0, 0],
               inertia=ld.Inertia(1.0, [0.5, 0, 0], np.diag([0.01, 0.09, 0.09])))
    b.add_frame("tip", "l2", placement=[1.0, 0, 0])
    m = b.build()
    q = np.array([-0.4, 1.1])
    x_tip = ld.frame_pose(m, q, "tip")[0, 3]
    wall = C.PointOnPlane("tip", normal=(1.0, 0.0, 0.0), offset=x_tip)
    J, _, _ = wall.terms(m, q, np.zeros(2))
    F = 5.0
    tau = ld.generalized_gravity(m, q) + J[0] * F
    res = ld.constrained_dynamics(m, q, np.zeros(2), tau, [wall])
    assert res.forces[0] == pytest.approx([-F], abs=1e-9)
    # the arm has 2 dofs and 1 constraint: it may slide along the wall, not through it
    assert abs((J @ res.qdd)[0]) < 1e-12


def test_constraints_combine_with_the_models_loops_and_bad_input_is_named():
    m, q = sc.high_bar()
    v = np.zeros(m.nv)
    res = ld.constrained_dynamics(m, q, v, np.zeros(m.nv), [C.PointOnPlane("l_toe", normal=(1, 0, 0),
                                                                          offset=ld.frame_pose(m, q, "l_toe")[0, 3])])
    free = ld.loops.constrained_dynamics(m, q, v, np.zeros(m.nv))
    rng = np.random.default_rng(2)
    tau = rng.standard_normal(m.nv)
    for i in range(1, m.nbody):
        if m.is_virtual[i]:                                          # no torque on the cut joints
            tau[m.jnt_vadr[i]:m.jnt_vadr[i] + m.jnt_nv[i]] = 0.0
    assert np.allclose(ld.constrained_dynamics(m, q, v, tau).qdd, ld.loops.constrained_dynamics(m, q, v, tau),
                       atol=1e-9)                                  # the loops alone: the closed-chain dynamics
    assert len(res.loop_forces) == 6 * m.nloops and res.residual < 1e-9
    assert not np.allclose(res.qdd, free)                              # the toe's wall changes the motion
    assert abs(ld.loops.loop_jacobian(m, q) @ res.qdd + ld.loops.loop_bias(m, q, v)).max() < 1e-9
    with pytest.raises(TypeError, match=r"constraints\[0\]"):
        ld.constrained_dynamics(m, q, v, np.zeros(m.nv), ["wall"])
    with pytest.raises(ValueError, match="tau"):
        ld.constrained_dynamics(m, q, v, np.zeros(3), [])
    with pytest.raises(ValueError, match="Custom 'bad'"):
        ld.constrained_dynamics(m, q, v, np.zeros(m.nv), [C.Custom(lambda m_, q_, v_: (np.zeros((1, 3)), [0.0]), "bad")])


def test_baumgarte_pulls_a_drifted_point_back():
    m = body(ld.FreeFlyer())
    q = ld.neutral(m)
    q[:3] = [0.01, 0.0, -0.02]                                          # 2 cm off its target
    res = ld.constrained_dynamics(m, q, np.zeros(6), np.zeros(6), [C.PointFixed("b", target=(0, 0, 0))],
                                  baumgarte=(10.0, 10.0))
    R = ld.frame_pose(m, q, "b")[:3, :3]
    assert np.allclose(R @ res.qdd[:3], [-1.0, 0.0, 2.0], atol=1e-9)   # -beta^2 (p - target)


def test_a_simulation_holds_user_constraints_as_a_joint_would():
    """A free body held at its origin by PointFixed in a Simulation moves as the same body on a
    ball joint: the same orientation after 0.5 s to 1e-6, the point kept within 1e-6 m."""
    ball, free = body(ld.Spherical()), body(ld.FreeFlyer())
    qb = ld.spatial.quat_from_axis_angle([1.0, 0.3, 0.0], 0.7)
    w = np.array([0.5, -1.0, 2.0])
    a = ld.Simulation(ball, qb, w, dt=1e-3, limits=False, contacts=False)
    b = ld.Simulation(free, np.concatenate([[0.0, 0.0, 0.0], qb]), np.concatenate([[0.0, 0.0, 0.0], w]), dt=1e-3,
                      limits=False, contacts=False, constraints=[C.PointFixed("b", target=(0.0, 0.0, 0.0))])
    a.run(until=0.5, progress=False)
    b.run(until=0.5, progress=False)
    assert np.abs(b.q[:3]).max() < 1e-6
    assert np.abs(ld.difference(ball, a.q, b.q[3:])).max() < 1e-6
    with pytest.raises(TypeError, match=r"constraints\[0\]"):
        ld.Simulation(free, constraints=["wall"])


def test_a_constraint_is_held_over_ten_seconds():
    """Over 10 s of simulation (2 ms steps) a free body held at its origin stays there to 1e-9 m
    and keeps its energy to 1e-9 J (the constraint does no work)."""
    m = body(ld.FreeFlyer())
    qb = ld.spatial.quat_from_axis_angle([1.0, 0.3, 0.0], 0.7)
    sim = ld.Simulation(m, np.concatenate([[0.0, 0.0, 0.0], qb]), np.concatenate([[0.0, 0.0, 0.0], [0.5, -1.0, 2.0]]),
                        dt=2e-3, limits=False, contacts=False, record_every=25,
                        constraints=[C.PointFixed("b", target=(0.0, 0.0, 0.0))])
    rec = sim.run(until=10.0, progress=False)
    a = rec.segments[0].arrays()
    assert np.abs(a["q"][:, :3]).max() < 1e-9
    assert np.ptp(a["kinetic"] + a["potential"]) < 1e-9


# ------------------------------------------------------------------ the compiled path


COMPILED_MODELS = {
    "floating tree": lambda: ld.models.random_tree(8, floating=True, seed=3, joint_terms=True),
    "tree": lambda: ld.models.random_tree(7, seed=5),
    "panda": lambda: ld.models.example_robot("panda"),
    "puma560": lambda: ld.models.puma560(),
}


def _all_kinds(model, rng, q):
    """One constraint of every geometric kind on the model's last bodies' frames, with and
    without targets, and a Distance to a point of the world."""
    body = {f: int(model.frame_body[k]) for k, f in enumerate(model.frame_names)}
    f1 = max(body, key=lambda f: (body[f], f))                       # on the last body
    f2 = min((f for f in body if 0 < body[f] < body[f1]), key=lambda f: (abs(body[f] - body[f1] // 2 - 1), f))
    T = ld.frame_pose(model, q, f1)
    drift = ld.spatial.exp3(0.05 * rng.standard_normal(3))
    target = np.eye(4)
    target[:3, :3], target[:3, 3] = drift @ T[:3, :3], T[:3, 3] + 0.01 * rng.standard_normal(3)
    p = 0.1 * rng.standard_normal(3)
    return [
        [C.PointFixed(f1, point=p)],
        [C.PointFixed(f2, point=p, target=tuple(ld.frame_pose(model, q, f2)[:3, 3] + 0.02))],
        [C.PointOnPlane(f1, normal=rng.standard_normal(3), offset=0.2, point=p)],
        [C.FrameFixed(f1)],
        [C.FrameFixed(f1, target=target)],
        [C.Distance(f1, f2, 0.3, point_a=p, point_b=-p)],
        [C.Distance(f1, model.frame_names[0], 1.0, point_a=p, point_b=(0.3, -0.2, 0.1))],
        [C.PointOnPlane(f2, normal=(0.0, 0.0, 1.0)), C.PointFixed(f1, point=p, target=(0.1, 0.2, 0.3))],
    ]


@pytest.mark.parametrize("name", list(COMPILED_MODELS))
def test_the_compiled_path_agrees_with_the_numpy_path(name):
    """On random states, every geometric kind (with and without targets, alone and combined),
    with and without Baumgarte's stabilization: the compiled kernel gives the NumPy path's q'',
    lambda and residual to 1e-10 (relative), directly, through the cache and through prepare()."""
    model = COMPILED_MODELS[name]()
    rng = np.random.default_rng(11)
    for _ in range(2):
        q = ld.random_configuration(model, rng)
        v = rng.standard_normal(model.nv)
        tau = 5.0 * rng.standard_normal(model.nv)
        for cons in _all_kinds(model, rng, q):
            prepared = C.prepare(model, cons)
            assert prepared.compiled
            for bg in ((0.0, 0.0), (3.0, 7.0)):
                ref = CD._constrained_dynamics_numpy(model, q, v, tau, cons, bg)
                for res in (ld.constrained_dynamics(model, q, v, tau, cons, bg), prepared(q, v, tau, baumgarte=bg)):
                    scale = 1.0 + np.abs(ref.qdd).max()
                    assert np.abs(res.qdd - ref.qdd).max() < 1e-10 * scale, (name, cons, bg)
                    for a, b in zip(res.forces, ref.forces, strict=True):
                        assert a.shape == b.shape
                        assert np.abs(a - b).max() < 1e-10 * (1.0 + np.abs(b).max()), (name, cons, bg)
                    assert abs(res.residual - ref.residual) < 1e-9 * scale and res.loop_forces.shape == (0,)


def test_the_compiled_path_takes_the_least_norm_split_of_redundant_rows():
    """Two PointFixed on the same point (6 rows, rank 3) and a FrameFixed with a PointFixed on its
    origin: q'' as without the copy, lambda the least-norm split (the NumPy path's lstsq)."""
    model = ld.models.example_robot("panda")
    rng = np.random.default_rng(5)
    q = ld.random_configuration(model, rng)
    v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
    one = [C.PointFixed("panda_hand", point=(0.0, 0.0, 0.1))]
    for cons in (one + [C.PointFixed("panda_hand", point=(0.0, 0.0, 0.1))],
                 [C.FrameFixed("panda_hand"), C.PointFixed("panda_hand")]):
        res = ld.constrained_dynamics(model, q, v, tau, cons)
        ref = CD._constrained_dynamics_numpy(model, q, v, tau, cons)
        assert C.prepare(model, cons).compiled
        assert np.abs(res.qdd - ref.qdd).max() < 1e-9 * (1 + np.abs(ref.qdd).max())
        for a, b in zip(res.forces, ref.forces):
            assert np.abs(a - b).max() < 1e-8 * (1 + np.abs(b).max())
    single = ld.constrained_dynamics(model, q, v, tau, one)
    res = ld.constrained_dynamics(model, q, v, tau, one + [C.PointFixed("panda_hand", point=(0.0, 0.0, 0.1))])
    assert np.allclose(res.forces[0], res.forces[1]) and np.allclose(res.forces[0] * 2, single.forces[0])


def test_the_point_acceleration_of_the_kernel_is_the_classical_one():
    """The kernel's J' v of a point is its classical acceleration (a + dw x r + w x (v + w x r)
    from the pass's spatial, body-coordinate bias acceleration), not the spatial one: along
    q(t) = q (+) (v t + a t^2 / 2) the point's world position x(t) has x'' = J a + J' v, and the
    kernel's q'' (held by J q'' = -J' v) satisfies J (q'' - a) = -x'' (second central
    differences), on a floating tree where w x v is large."""
    model = ld.models.random_tree(6, floating=True, seed=8)
    rng = np.random.default_rng(1)
    q = ld.random_configuration(model, rng)
    v, a = 3.0 * rng.standard_normal(model.nv), rng.standard_normal(model.nv)
    f = model.frame_names[-1]
    c = C.PointFixed(f, point=(0.2, -0.1, 0.3))
    res = ld.constrained_dynamics(model, q, v, ld.rnea(model, q, v, a), [c])
    assert C.prepare(model, [c]).compiled
    J = c.terms(model, q, v)[0]

    def x(t):
        T = ld.frame_pose(model, ld.integrate(model, q, v * t + 0.5 * a * t * t), f)
        return T[:3, 3] + T[:3, :3] @ np.array(c.point)
    h = 1e-4
    xdd = (x(h) - 2 * x(0.0) + x(-h)) / h ** 2
    assert np.abs(J @ (res.qdd - a) + xdd).max() < 1e-5 * (1 + np.abs(xdd).max())
    # w x (the point's velocity), what the spatial acceleration leaves out, is not small here
    w = ld.jacobian(model, q, f, "local_world_aligned")[3:] @ v
    assert np.abs(np.cross(w, J @ v)).max() > 1.0


def test_packings_follow_edits_and_bad_input_is_still_named():
    model = ld.models.example_robot("panda")
    rng = np.random.default_rng(2)
    q = ld.random_configuration(model, rng)
    v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
    c = C.PointFixed("panda_hand", target=(0.3, 0.0, 0.5))
    first = ld.constrained_dynamics(model, q, v, tau, [c], baumgarte=(0.0, 10.0)).qdd
    c.target = (0.3, 0.1, 0.5)                                   # a new value: packed anew
    second = ld.constrained_dynamics(model, q, v, tau, [c], baumgarte=(0.0, 10.0)).qdd
    ref = CD._constrained_dynamics_numpy(model, q, v, tau, [c], (0.0, 10.0)).qdd
    assert not np.allclose(first, second) and np.allclose(second, ref, atol=1e-10)
    with pytest.raises((TypeError, ValueError)):
        c.target[0] = 1.0                                        # values, not shared arrays
    ff = C.FrameFixed("panda_hand", target=np.eye(4))
    with pytest.raises(ValueError):
        ff.target[0, 3] = 1.0
    prepared = C.prepare(model, [c])
    with pytest.raises(ValueError, match="tau"):
        prepared(q, v, np.zeros(3))
    with pytest.raises(ValueError, match="q"):
        ld.constrained_dynamics(model, np.full(model.nq, np.nan), v, tau, [c])
    with pytest.raises(KeyError, match="nowhere"):
        ld.constrained_dynamics(model, q, v, tau, [C.PointFixed("nowhere")])
    with pytest.raises(ValueError, match="coincide"):
        ld.constrained_dynamics(model, q, v, tau, [C.Distance("panda_hand", "panda_hand", 1.0)])
    # lists, Custom and loops take the NumPy path
    custom = C.Custom(lambda m_, q_, v_: c.terms(m_, q_, v_))
    assert not C.prepare(model, [custom]).compiled
    assert np.allclose(C.prepare(model, [custom])(q, v, tau).qdd,
                       ld.constrained_dynamics(model, q, v, tau, [c]).qdd, atol=1e-10)
    assert np.allclose(ld.constrained_dynamics(model, list(q), list(v), list(tau), [c]).qdd,
                       ld.constrained_dynamics(model, q, v, tau, [c]).qdd, atol=1e-12)
    assert "compiled" in repr(prepared)
