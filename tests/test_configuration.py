"""Configuration space: integrate, difference, neutral, normalize, random_configuration,
against each other, against forward kinematics and against Pinocchio."""
import numpy as np
import pytest

import linkdyn as ld
from linkdyn.model import joints as J
from conftest import assert_close, build_tree, needs_pin, random_q

try:
    import pinocchio as pin
except ImportError:  # pragma: no cover
    pin = None

SEEDS = [0, 1, 2]


def _quat_slices(model):
    return [slice(o, o + 4) for o in model._quat_starts]


def assert_same_configuration(model, qa, qb, tol, what=""):
    """Coordinates equal, quaternions equal up to sign, and the same body poses."""
    qa, qb = np.asarray(qa, float), np.asarray(qb, float)
    mask = np.ones(model.nq, dtype=bool)
    for sl in _quat_slices(model):
        mask[sl] = False
        s = np.sign(qa[sl] @ qb[sl]) or 1.0
        assert_close(qa[sl], s * qb[sl], tol, f"{what} quaternion {sl}")
    assert_close(qa[mask], qb[mask], tol, f"{what} coordinates")
    ka, kb = ld.forward_kinematics(model, qa), ld.forward_kinematics(model, qb)
    assert_close(ka.R, kb.R, tol, f"{what} rotations")
    assert_close(ka.p, kb.p, tol, f"{what} positions")


def _angular_dofs(model):
    """Indices of v holding the angular velocity of quaternion joints (their exp/log has a cut at pi)."""
    out = []
    for i in range(1, model.nbody):
        d = model.jnt_vadr[i]
        if model.jnt_type[i] == J.SPHERICAL:
            out.append(np.arange(d, d + 3))
        elif model.jnt_type[i] == J.FREE:
            out.append(np.arange(d + 3, d + 6))
    return out


def _velocity_with_max_rotation(model, rng, max_angle):
    """A random v whose quaternion joints rotate by at most max_angle (< pi) in unit time."""
    v = rng.standard_normal(model.nv)
    for idx in _angular_dofs(model):
        n = np.linalg.norm(v[idx])
        v[idx] *= rng.uniform(0.2, 1.0) * max_angle / n
    return v


# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_integrate_difference_round_trip(tree, seed):
    rng = np.random.default_rng(seed)
    q0, q1 = random_q(tree, rng), random_q(tree, rng)
    v = ld.difference(tree, q0, q1)
    assert v.shape == (tree.nv,)
    assert_same_configuration(tree, ld.integrate(tree, q0, v), q1, 1e-12, "integrate(q0, q1 - q0)")
    assert_same_configuration(tree, ld.integrate(tree, q0, 0.5 * v, 2.0), q1, 1e-12, "dt = 2")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("max_angle", [1e-9, 1e-5, 1e-3, 1.0, 3.0])
def test_difference_of_integrate(tree, seed, max_angle):
    """difference(q, integrate(q, v, dt)) == v dt while the rotations stay below pi."""
    rng = np.random.default_rng(seed)
    q = random_q(tree, rng)
    v = _velocity_with_max_rotation(tree, rng, max_angle)
    if max_angle < 1e-6:
        v *= max_angle
    dt = 0.7
    got = ld.difference(tree, q, ld.integrate(tree, q, v / dt, dt))
    assert_close(got, v, 1e-11, "difference(integrate)")


def test_difference_is_antisymmetric(tree):
    rng = np.random.default_rng(3)
    q0, q1 = random_q(tree, rng), random_q(tree, rng)
    assert_close(ld.difference(tree, q1, q0), -ld.difference(tree, q0, q1), 1e-11, "antisymmetry")
    assert np.abs(ld.difference(tree, q0, q0)).max() <= 1e-15


def test_quaternion_sign_does_not_matter(tree):
    """q and -q are the same rotation: difference to either is the same short rotation."""
    rng = np.random.default_rng(4)
    q0, q1 = random_q(tree, rng), random_q(tree, rng)
    q1n = q1.copy()
    for sl in _quat_slices(tree):
        q1n[sl] *= -1
    assert_close(ld.difference(tree, q0, q1n), ld.difference(tree, q0, q1), 1e-12, "sign of q1")
    v = ld.difference(tree, q0, q1)
    for idx in _angular_dofs(tree):
        assert np.linalg.norm(v[idx]) <= np.pi + 1e-12


@pytest.mark.parametrize("seed", SEEDS)
def test_integrate_is_a_flow(tree, seed):
    """integrate(integrate(q, v, s), v, t) == integrate(q, v, s + t) (one-parameter subgroups)."""
    rng = np.random.default_rng(seed)
    q, v = random_q(tree, rng), 2 * rng.standard_normal(tree.nv)
    a = ld.integrate(tree, ld.integrate(tree, q, v, 0.3), v, 0.45)
    assert_same_configuration(tree, a, ld.integrate(tree, q, v, 0.75), 1e-12, "flow")
    back = ld.integrate(tree, ld.integrate(tree, q, v, 0.6), v, -0.6)
    assert_same_configuration(tree, back, q, 1e-12, "and back")
    assert_close(ld.integrate(tree, q, v, 0.0), q, 0.0, "dt = 0")
    assert_close(ld.integrate(tree, q, np.zeros(tree.nv)), q, 0.0, "v = 0")


def test_integrate_default_dt_is_one(tree):
    rng = np.random.default_rng(5)
    q, v = random_q(tree, rng), rng.standard_normal(tree.nv)
    assert_close(ld.integrate(tree, q, v), ld.integrate(tree, q, v, 1.0), 0.0, "dt")
    assert_close(ld.integrate(tree, q, v, 0.25), ld.integrate(tree, q, 0.25 * v), 1e-14, "v dt")


def test_integrate_keeps_quaternions_unit(tree):
    rng = np.random.default_rng(6)
    q = random_q(tree, rng)
    for _ in range(300):
        q = ld.integrate(tree, q, 5 * rng.standard_normal(tree.nv), 0.37)
    for sl in _quat_slices(tree):
        assert abs(np.linalg.norm(q[sl]) - 1.0) <= 1e-12
    ld.rnea(tree, q, np.zeros(tree.nv), np.zeros(tree.nv))     # still a valid configuration


def test_integrate_moves_the_bodies_with_velocity_v(tree):
    """The body velocities of forward_kinematics(q, v) are the pose derivatives along integrate
    (ties the q / v conventions of every joint kind to the kinematics)."""
    from conftest import fd, twists_from_pose_derivative
    rng = np.random.default_rng(7)
    q, v = random_q(tree, rng), rng.standard_normal(tree.nv)
    kin = ld.forward_kinematics(tree, q, v)

    def pose(x, i):
        k = ld.forward_kinematics(tree, x)
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = k.R[i], k.p[i]
        return T
    for i in range(1, tree.nbody):
        tw = twists_from_pose_derivative(pose(q, i), fd(lambda x: pose(x, i), tree, q, v))
        assert_close(kin.v[i], tw["local"], 1e-6, f"body {i}")


# ---------------------------------------------------------------------------------------
# small rotations: exact references from the Taylor series of the SE(3) / SE(2) exponentials
# (regression: closed forms such as (1 - cos t) / t^2 used just above a tiny series threshold
# lost up to 1e-4 relative in difference of a free joint, 5e-9 for planar joints)
SMALL_ANGLES = [1e-9, 1.05e-8, 2e-8, 1e-7, 1.0e-6, 1.05e-6, 2e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.05, 0.0999, 0.1,
                0.1001, 0.5, 1.0]


def _single(joint):
    b = ld.ModelBuilder("one")
    b.add_body("body", "world", joint, inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3)))
    return b.build()


def _exact_free(t):
    """q of the free joint after q = neutral, v = [1, 0, 0, 0, 0, t] in unit time:
    p = V(w) v = [1 - b t^2, a t, 0] with a = (1 - cos t)/t^2, b = (t - sin t)/t^3 (Taylor
    series below 0.05, where the closed forms cancel)."""
    if t < 0.05:
        a = 0.5 - t * t / 24 + t ** 4 / 720 - t ** 6 / 40320
        b = 1 / 6 - t * t / 120 + t ** 4 / 5040 - t ** 6 / 362880
    else:
        a, b = (1 - np.cos(t)) / t ** 2, (t - np.sin(t)) / t ** 3
    return np.array([1 - b * t * t, a * t, 0, 0, 0, np.sin(t / 2), np.cos(t / 2)])


def _exact_planar(t):
    """q of the planar joint after q = neutral, v = [1, 0, t]: [sin t / t, (1 - cos t)/t, t]."""
    if t < 0.05:
        s = 1 - t * t / 6 + t ** 4 / 120 - t ** 6 / 5040
        c = t / 2 - t ** 3 / 24 + t ** 5 / 720 - t ** 7 / 40320
    else:
        s, c = np.sin(t) / t, (1 - np.cos(t)) / t
    return np.array([s, c, t])


def test_free_flyer_difference_small_rotations():
    """difference(neutral, exp6([1, 0, 0, 0, 0, t])) == v to 1e-12 for every angle."""
    model = _single(ld.FreeFlyer())
    q = ld.neutral(model)
    errs = {t: np.abs(ld.difference(model, q, _exact_free(t)) - [1, 0, 0, 0, 0, t]).max() for t in SMALL_ANGLES}
    assert max(errs.values()) <= 1e-12, errs


def test_free_flyer_integrate_small_rotations():
    """integrate(neutral, [1, 0, 0, 0, 0, t]) == exp6 to 1e-12 for every angle."""
    model = _single(ld.FreeFlyer())
    q = ld.neutral(model)
    errs = {t: np.abs(ld.integrate(model, q, [1, 0, 0, 0, 0, t]) - _exact_free(t)).max() for t in SMALL_ANGLES}
    assert max(errs.values()) <= 1e-12, errs


def test_planar_integrate_difference_small_rotations():
    """The SE(2) exponential and its inverse to 1e-12 for every angle."""
    model = _single(ld.Planar())
    q = ld.neutral(model)
    errs = {}
    for t in SMALL_ANGLES:
        errs[t] = max(np.abs(ld.integrate(model, q, [1, 0, t]) - _exact_planar(t)).max(),
                      np.abs(ld.difference(model, q, _exact_planar(t)) - [1, 0, t]).max())
    assert max(errs.values()) <= 1e-12, errs


def test_small_rotation_references():
    """Control of the references above: the series agree with the closed forms at moderate angles."""
    for t in [1e-2, 3e-2, 0.0499]:
        a, b = (1 - np.cos(t)) / t ** 2, (t - np.sin(t)) / t ** 3
        assert_close(_exact_free(t)[:3], [1 - b * t * t, a * t, 0], 1e-14, "free")
        assert_close(_exact_planar(t)[:2], [np.sin(t) / t, (1 - np.cos(t)) / t], 1e-14, "planar")
    for t in [1e-3, 0.3]:
        model = _single(ld.FreeFlyer())
        assert_close(ld.integrate(model, ld.neutral(model), [1, 0, 0, 0, 0, t]), _exact_free(t), 1e-10, "free")


# ---------------------------------------------------------------------------------------
def test_neutral(tree):
    q = ld.neutral(tree)
    assert q.shape == (tree.nq,)
    mask = np.ones(tree.nq, dtype=bool)
    for sl in _quat_slices(tree):
        assert_close(q[sl], [0, 0, 0, 1], 0.0, "identity quaternion")
        mask[sl] = False
    assert np.all(q[mask] == 0)
    kin = ld.forward_kinematics(tree, q)        # every joint at its identity
    for i in range(1, tree.nbody):
        p = tree.parent[i]
        assert_close(kin.R[i], kin.R[p] @ tree.R_tree[i], 1e-14, f"R {i}")
        assert_close(kin.p[i], kin.p[p] + kin.R[p] @ tree.p_tree[i], 1e-14, f"p {i}")


def test_random_configuration_is_valid_and_reproducible(tree):
    q1 = ld.random_configuration(tree, 42)
    q2 = ld.random_configuration(tree, 42)
    q3 = ld.random_configuration(tree, 43)
    assert q1.shape == (tree.nq,)
    assert_close(q1, q2, 0.0, "same seed")
    assert np.abs(q1 - q3).max() > 1e-3
    assert_close(ld.random_configuration(tree, np.random.default_rng(7)),
                 ld.random_configuration(tree, np.random.default_rng(7)), 0.0, "same Generator seed")
    Q = ld.random_configuration(tree, 1, size=50)
    assert Q.shape == (50, tree.nq)
    for sl in _quat_slices(tree):
        assert np.abs(np.linalg.norm(Q[:, sl], axis=1) - 1).max() <= 1e-12
    # default ranges of unlimited coordinates: [-pi, pi] for angles, [-1, 1] for translations
    assert np.abs(Q).max() <= np.pi
    for i in range(1, tree.nbody):
        k, o = tree.jnt_type[i], tree.jnt_qadr[i]
        trans = {J.PRISMATIC: [0], J.CYLINDRICAL: [0], J.PLANAR: [0, 1], J.FREE: [0, 1, 2]}.get(k, [])
        for j in trans:
            assert np.abs(Q[:, o + j]).max() <= 1.0
    ld.rnea(tree, Q, np.zeros(tree.nv), np.zeros(tree.nv))     # valid configurations


def test_random_configuration_respects_limits():
    b = ld.ModelBuilder("limits")
    b.add_body("a", "world", ld.Revolute("z"), lower=[-0.1], upper=[0.2], inertia=ld.Inertia(1.0))
    b.add_body("b", "a", ld.Prismatic("x"), lower=[2.0], upper=[2.5], inertia=ld.Inertia(1.0))
    b.add_body("c", "b", ld.Cylindrical("y"), lower=[-3.0, 0.5], upper=[-2.0, 0.6], inertia=ld.Inertia(1.0))
    b.add_body("d", "c", ld.SphericalZYX(), lower=[0, 0, 0], upper=[0.1, 0.2, 0.3], inertia=ld.Inertia(1.0))
    b.add_body("e", "d", ld.Revolute("x"), lower=[-10.0], upper=[np.inf], inertia=ld.Inertia(1.0))
    model = b.build()
    Q = ld.random_configuration(model, 0, size=2000)
    lo, hi = model.lower, model.upper
    assert np.all(Q >= lo) and np.all(Q <= hi)
    # the samples fill the box (uniform): close to both ends of every finite interval
    fin = np.isfinite(lo) & np.isfinite(hi)
    assert np.all(Q.min(0)[fin] - lo[fin] < 0.01 * (hi - lo)[fin])
    assert np.all(hi[fin] - Q.max(0)[fin] < 0.01 * (hi - lo)[fin])
    # half-bounded: lower bound kept, the other side at the default pi
    assert Q[:, -1].min() >= -10 and Q[:, -1].max() <= np.pi


def test_normalize(tree):
    rng = np.random.default_rng(8)
    q = random_q(tree, rng)
    q_bad = q.copy()
    scales = rng.uniform(0.1, 10, len(tree._quat_starts))
    for s, sl in zip(scales, _quat_slices(tree)):
        q_bad[sl] *= s
    q_in = q_bad.copy()
    qn = ld.normalize(tree, q_bad)
    assert_close(q_bad, q_in, 0.0, "input not modified")
    assert_close(qn, q, 1e-15, "normalized")
    assert_close(ld.normalize(tree, q), q, 1e-15, "already unit")
    Q = np.stack([q_bad, q])
    for sl in _quat_slices(tree):
        Q[1, sl] *= 3.0
    assert_close(ld.normalize(tree, Q), np.stack([q, q]), 1e-15, "stack")
    if tree._quat_starts.size:
        z = q.copy()
        z[tree._quat_starts[0]:tree._quat_starts[0] + 4] = 0
        with pytest.raises(ValueError, match=r"q\[\d+:\d+\].*zero"):
            ld.normalize(tree, z)


# ---------------------------------------------------------------------------------------
# stacks
def test_integrate_and_difference_on_stacks(tree):
    rng = np.random.default_rng(9)
    Q = np.stack([random_q(tree, rng) for _ in range(4)])
    V = rng.standard_normal((4, tree.nv))
    out = ld.integrate(tree, Q, V, 0.3)
    assert out.shape == (4, tree.nq)
    D = ld.difference(tree, Q, out)
    for n in range(4):
        assert_close(out[n], ld.integrate(tree, Q[n], V[n], 0.3), 1e-15, f"integrate {n}")
        assert_close(D[n], ld.difference(tree, Q[n], out[n]), 1e-15, f"difference {n}")
    shared = ld.integrate(tree, Q[0], V, 0.3)
    for n in range(4):
        assert_close(shared[n], ld.integrate(tree, Q[0], V[n], 0.3), 1e-15, f"shared q {n}")
    D = ld.difference(tree, Q[0], Q)
    for n in range(4):
        assert_close(D[n], ld.difference(tree, Q[0], Q[n]), 1e-15, f"shared q0 {n}")


def test_integrate_stack_minimal_reproducer():
    model = build_tree("chain4-revolute")
    ld.integrate(model, np.zeros((2, model.nq)), np.zeros(model.nv))


def test_difference_stack_minimal_reproducer():
    model = build_tree("chain4-revolute")
    ld.difference(model, np.zeros((2, model.nq)), np.zeros(model.nq))


_CACHE_SCRIPT = """
import numpy as np, linkdyn as ld
b = ld.ModelBuilder("c")
b.add_body("a", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0, [0.1, 0, 0], np.eye(3)))
m = b.build()
ld.integrate(m, np.zeros((3, 1)), np.ones(1))
ld.difference(m, np.zeros((3, 1)), np.ones((3, 1)))
"""


def test_batched_integrate_and_difference_are_cached():
    """cache=True must work: a fresh process compiles (or loads) them without Numba's warning."""
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", _CACHE_SCRIPT], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Cannot cache" not in r.stderr, r.stderr[-3000:]


# ---------------------------------------------------------------------------------------
# Pinocchio: free flyer, ball, planar, ZYX and revolute joints in one chain
def _pin_pair():
    rng = np.random.default_rng(0)
    b = ld.ModelBuilder("mixed")
    pm = pin.Model()
    kinds = [(ld.FreeFlyer(), pin.JointModelFreeFlyer()), (ld.Spherical(), pin.JointModelSpherical()),
             (ld.Planar(), pin.JointModelPlanar()), (ld.SphericalZYX(), pin.JointModelSphericalZYX()),
             (ld.Revolute([0.0, 0.6, 0.8]), pin.JointModelRevoluteUnaligned(np.array([0.0, 0.6, 0.8]))),
             (ld.Spherical(), pin.JointModelSpherical())]
    parent, jid = "world", 0
    for k, (jl, jp) in enumerate(kinds):
        R = ld.spatial.exp3(rng.standard_normal(3))
        p = rng.standard_normal(3)
        b.add_body(f"b{k}", parent, jl, placement=(R, p), inertia=ld.Inertia(1.0, [0.1, 0, 0], np.eye(3)),
                   joint_name=f"j{k}")
        jid = pm.addJoint(jid, jp, pin.SE3(R, p), f"j{k}")
        parent = f"b{k}"
    return b.build(), pm


def _q_to_pin(model, q):
    out = []
    for i in range(1, model.nbody):
        qi = q[model.jnt_qadr[i]:model.jnt_qadr[i] + model.jnt_nq[i]]
        if model.jnt_type[i] == J.PLANAR:
            qi = [qi[0], qi[1], np.cos(qi[2]), np.sin(qi[2])]
        out.extend(qi)
    return np.array(out)


@needs_pin
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("scale", [1e-4, 1.0, 2.5])
def test_integrate_and_difference_match_pinocchio(seed, scale):
    model, pm = _pin_pair()
    rng = np.random.default_rng(seed)
    q = random_q(model, rng)
    v = _velocity_with_max_rotation(model, rng, scale) if scale > 1e-3 else scale * rng.standard_normal(model.nv)
    q1 = ld.integrate(model, q, v)
    qp1 = pin.integrate(pm, _q_to_pin(model, q), v)
    assert_close(_q_to_pin(model, q1), qp1, 1e-12, "integrate")
    q2 = random_q(model, rng)
    # linkdyn's planar angle is a coordinate in R (difference = theta1 - theta0, no wrapping);
    # Pinocchio's is (cos, sin): compare where the two agree, |theta1 - theta0| < pi
    o = model.q_slice("j2").start + 2
    q2[o] = q[o] + rng.uniform(-3.0, 3.0)
    assert_close(ld.difference(model, q, q2), pin.difference(pm, _q_to_pin(model, q), _q_to_pin(model, q2)),
                 1e-10, "difference")
    assert_close(_q_to_pin(model, ld.neutral(model)), pin.neutral(pm), 0.0, "neutral")


@needs_pin
def test_free_flyer_integrate_is_se3_exp():
    """q (+) v = (R, p) exp6(v) for a free joint: body-frame twist, as in Pinocchio."""
    b = ld.ModelBuilder("ff")
    b.add_body("base", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3)))
    model = b.build()
    rng = np.random.default_rng(1)
    q = random_q(model, rng)
    v = rng.standard_normal(6)
    M0 = pin.XYZQUATToSE3(q)
    M1 = M0 * pin.exp6(pin.Motion(v))
    assert_close(ld.frame_pose(model, ld.integrate(model, q, v), "base"), M1.homogeneous, 1e-12, "pose")
    assert_close(ld.difference(model, q, pin.SE3ToXYZQUAT(M1)), v, 1e-10, "log6")


def test_random_configuration_with_one_sided_limits():
    """A coordinate bounded on one side only (here beyond +-pi) is drawn next to its bound."""
    b = ld.ModelBuilder()
    b.add_body("a", "world", ld.Revolute("z"), lower=[4.0], inertia=ld.Inertia(1.0))
    b.add_body("b", "a", ld.Revolute("x"), upper=[-5.0], inertia=ld.Inertia(1.0))
    b.add_body("c", "b", ld.Prismatic("x"), lower=[3.0], inertia=ld.Inertia(1.0))
    m = b.build()
    Q = ld.random_configuration(m, 0, size=500)
    assert np.all(Q[:, 0] >= 4.0) and np.all(Q[:, 0] <= 4.0 + 2 * np.pi)
    assert np.all(Q[:, 1] <= -5.0) and np.all(Q[:, 1] >= -5.0 - 2 * np.pi)
    assert np.all(Q[:, 2] >= 3.0) and np.all(Q[:, 2] <= 5.0)


# ---------------------------------------------------------------------------------------
# Jacobians of integrate and difference (tangent-space derivatives)
def _tangent_fd(model, f, x0, n, eps=1e-6):
    """(n_out, n) central differences of y = f(dx) in the tangent space of f(0) (difference)."""
    y0 = f(np.zeros(n))
    cols = []
    for k in range(n):
        e = np.zeros(n)
        e[k] = eps
        cols.append((ld.difference(model, y0, f(e)) - ld.difference(model, y0, f(-e))) / (2 * eps))
    return np.array(cols).T


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("max_angle", [1e-7, 0.5, 2.5])
def test_integrate_and_difference_jacobians_by_finite_differences(tree, seed, max_angle):
    """d(q exp(v))/dq, /dv and d log(q0^-1 q1)/dq0, /dq1 against central differences on the
    manifold, for every joint kind, from a tiny to a large rotation."""
    rng = np.random.default_rng(seed)
    q = random_q(tree, rng)
    v = _velocity_with_max_rotation(tree, rng, max_angle)
    if max_angle < 1e-6:
        v *= max_angle
    n = tree.nv
    Jq, Jv = ld.integrate_jacobians(tree, q, v)
    assert_close(Jq, _tangent_fd(tree, lambda d: ld.integrate(tree, ld.integrate(tree, q, d), v), q, n), 1e-7, "dI/dq")
    assert_close(Jv, _tangent_fd(tree, lambda d: ld.integrate(tree, q, v + d), q, n), 1e-7, "dI/dv")
    q1 = ld.integrate(tree, q, v)
    J0, J1 = ld.difference_jacobians(tree, q, q1)

    def diff_fd(g):
        cols = []
        for k in range(n):
            e = np.zeros(n)
            e[k] = 1e-6
            cols.append((g(e) - g(-e)) / 2e-6)
        return np.array(cols).T
    assert_close(J0, diff_fd(lambda d: ld.difference(tree, ld.integrate(tree, q, d), q1)), 1e-7, "dD/dq0")
    assert_close(J1, diff_fd(lambda d: ld.difference(tree, q, ld.integrate(tree, q1, d))), 1e-7, "dD/dq1")
    # the chain rule: difference(q, integrate(q, v)) = v, so J1 Jv = 1 and J0 + J1 Jq = 0
    assert_close(J1 @ Jv, np.eye(n), 1e-9, "J1 Jv")
    assert_close(J0 + J1 @ Jq, np.zeros((n, n)), 1e-9, "J0 + J1 Jq")


@needs_pin
@pytest.mark.parametrize("seed", SEEDS)
def test_integrate_and_difference_jacobians_match_pinocchio(seed):
    model, pm = _pin_pair()
    rng = np.random.default_rng(seed)
    q, q2 = random_q(model, rng), random_q(model, rng)
    o = model.q_slice("j2").start + 2
    q2[o] = q[o] + rng.uniform(-3.0, 3.0)
    v = _velocity_with_max_rotation(model, rng, 2.0)
    qp, qp2 = _q_to_pin(model, q), _q_to_pin(model, q2)
    Jq, Jv = ld.integrate_jacobians(model, q, v)
    assert_close(Jq, pin.dIntegrate(pm, qp, v, pin.ARG0), 1e-10, "dIntegrate/dq")
    assert_close(Jv, pin.dIntegrate(pm, qp, v, pin.ARG1), 1e-10, "dIntegrate/dv")
    J0, J1 = ld.difference_jacobians(model, q, q2)
    assert_close(J0, pin.dDifference(pm, qp, qp2, pin.ARG0), 1e-9, "dDifference/dq0")
    assert_close(J1, pin.dDifference(pm, qp, qp2, pin.ARG1), 1e-9, "dDifference/dq1")


def test_tangent_jacobians_check_their_input(tree):
    q = random_q(tree, np.random.default_rng(0))
    with pytest.raises(ValueError, match="v: expected"):
        ld.integrate_jacobians(tree, q, np.zeros(tree.nv + 1))
    with pytest.raises(ValueError):
        ld.difference_jacobians(tree, q, np.full(tree.nq, np.nan))
