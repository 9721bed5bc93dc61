"""Analytic Jacobians, orientation rates and task accelerations (seed 002 sec. 4.3, appendix A4):
against finite differences of the orientation coordinates along linkdyn.integrate, against joints
whose coordinates *are* the orientation coordinates, rate-map round trips, the representation
singularities, and x'' = J q'' + J' q' against finite differences of the frame velocity."""
from math import pi

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import linkdyn as ld
from conftest import assert_close, build_tree, fd, fd_t, random_q
from linkdyn import spatial as sp
from linkdyn.analysis.rates import (REPRESENTATIONS, RepresentationSingularityError, analytic_jacobian, analytic_pose,
                                    angular_velocity, orientation_coordinates, orientation_rate, rate_matrix,
                                    task_acceleration, task_velocity)

REPS = tuple(REPRESENTATIONS)
EULER = ("rpy", "zyx", "zyz")
FD_TOL = 1e-6


def _model(name):
    if name == "puma560":
        return ld.models.puma560(), "tool"
    if name == "panda":
        return ld.models.example_robot("panda"), "panda_hand"
    return build_tree(name), "tip"


MODELS = ("puma560", "panda", "mixed-floating-s3", "chain4-spherical")


def _single(joint, placement=None):
    """One body on ``joint`` hanging from the world, with a frame 'f' at its origin."""
    b = ld.ModelBuilder("single")
    b.add_body("b", "world", joint, inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3)))
    b.add_frame("f", "b", placement=placement if placement is not None else np.eye(4))
    return b.build()


def _coord_difference(x_plus, x_minus, x0, rep):
    """x(+h) - x(-h) with angles wrapped to (-pi, pi] and quaternion signs aligned with x0."""
    d = x_plus - x_minus
    if rep == "quaternion":
        qp, qm, q0 = x_plus[3:], x_minus[3:], x0[3:]
        qp = qp if qp @ q0 >= 0 else -qp
        qm = qm if qm @ q0 >= 0 else -qm
        d[3:] = qp - qm
    else:
        d[3:] = np.angle(np.exp(1j * d[3:]))
    return d


def _random_q_not_singular(model, frame, rng):
    """A random configuration at which no Euler sequence is within 1e-2 of its singularity."""
    for _ in range(100):
        q = random_q(model, rng)
        R = ld.frame_pose(model, q, frame)[:3, :3]
        if (abs(np.cos(sp.matrix_to_rpy(R)[1])) > 1e-2 and abs(np.cos(sp.matrix_to_zyx(R)[1])) > 1e-2
                and abs(np.sin(sp.matrix_to_euler_zyz(R)[1])) > 1e-2 and abs(sp.matrix_to_quat(R)[3]) > 1e-2):
            return q
    raise AssertionError("no generic configuration found")


# ---------------------------------------------------------------------------------------
# analytic Jacobian
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("rep", REPS)
def test_analytic_jacobian_is_derivative_of_coordinates(name, rep):
    """J_A v = d/dt [p; phi](integrate(q, v t)), column by column and for a random v."""
    model, frame = _model(name)
    rng = np.random.default_rng(7)
    h = 1e-6
    for _ in range(3):
        q = _random_q_not_singular(model, frame, rng)
        JA = analytic_jacobian(model, q, frame, rep)
        assert JA.shape == (3 + REPRESENTATIONS[rep], model.nv)
        x0 = analytic_pose(model, q, frame, rep)
        for v in list(np.eye(model.nv)) + [rng.standard_normal(model.nv)]:
            xp = analytic_pose(model, ld.integrate(model, q, v, h), frame, rep)
            xm = analytic_pose(model, ld.integrate(model, q, v, -h), frame, rep)
            assert_close(JA @ v, _coord_difference(xp, xm, x0, rep) / (2 * h), FD_TOL, f"{name} {rep}")


@pytest.mark.parametrize("rep", REPS)
def test_analytic_jacobian_position_rows_are_the_geometric_ones(rep):
    model, frame = _model("puma560")
    q = _random_q_not_singular(model, frame, np.random.default_rng(3))
    J = ld.jacobian(model, q, frame, "local_world_aligned")
    JA = analytic_jacobian(model, q, frame, rep)
    assert_close(JA[:3], J[:3], 0.0, "linear rows")
    # and the angular rows map back to the geometric ones: omega = E(phi) phi'
    phi = analytic_pose(model, q, frame, rep)[3:]
    assert_close(rate_matrix(phi, rep) @ JA[3:], J[3:], 1e-12, "E J_A = J_omega")


def test_zyx_joint_coordinates_are_the_zyx_angles():
    """A SphericalZYX joint's q is [z, y, x] with R = Rz Ry Rx: the zyx analytic Jacobian is
    [0; I], the rpy one [0; anti-identity], whatever the angles (independent of E)."""
    model = _single(ld.SphericalZYX())
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = np.array([rng.uniform(-3, 3), rng.uniform(-1.4, 1.4), rng.uniform(-3, 3)])
        assert_close(analytic_pose(model, q, "f", "zyx"), np.concatenate([np.zeros(3), q]), 1e-12, "zyx pose")
        assert_close(analytic_pose(model, q, "f", "rpy")[3:], q[::-1], 1e-12, "rpy pose")
        assert_close(analytic_jacobian(model, q, "f", "zyx"), np.vstack([np.zeros((3, 3)), np.eye(3)]), 1e-12,
                     "zyx")
        assert_close(analytic_jacobian(model, q, "f", "rpy"), np.vstack([np.zeros((3, 3)), np.eye(3)[::-1]]),
                     1e-12, "rpy")


def test_spherical_joint_quaternion_is_the_coordinate():
    """A Spherical joint's q is the frame's quaternion (up to sign): the quaternion block of J_A
    is 1/2 q * [e_k, 0] (body angular velocity e_k), i.e. the seed's 1/2 J_E applied to R e_k."""
    model = _single(ld.Spherical())
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = rng.standard_normal(4)
        q /= np.linalg.norm(q)
        q = q if q[3] >= 0 else -q
        assert_close(analytic_pose(model, q, "f", "quaternion")[3:], q, 1e-12, "pose")
        JA = analytic_jacobian(model, q, "f", "quaternion")
        want = np.stack([sp.quat_derivative(q, e, frame="body") for e in np.eye(3)], axis=1)
        assert_close(JA[3:], want, 1e-12, "quaternion block")
        assert_close(JA[:3], np.zeros((3, 3)), 1e-12, "no translation")


def test_analytic_jacobian_of_a_stack_equals_the_loop():
    model, frame = _model("puma560")
    rng = np.random.default_rng(5)
    Q = np.array([_random_q_not_singular(model, frame, rng) for _ in range(4)])
    for rep in REPS:
        JA = analytic_jacobian(model, Q, frame, rep)
        for k in range(len(Q)):
            assert_close(JA[k], analytic_jacobian(model, Q[k], frame, rep), 1e-14, rep)
        X = analytic_pose(model, Q, frame, rep)
        assert_close(X[2], analytic_pose(model, Q[2], frame, rep), 0.0, rep)


# ---------------------------------------------------------------------------------------
# rate maps
def _random_phi(rep, rng, n=None):
    shape = () if n is None else (n,)
    if rep == "quaternion":
        q = rng.standard_normal(shape + (4,))
        return q / np.linalg.norm(q, axis=-1, keepdims=True)
    lo, hi = (0.1, pi - 0.1) if rep == "zyz" else (-pi / 2 + 0.1, pi / 2 - 0.1)
    phi = rng.uniform(-pi, pi, shape + (3,))
    phi[..., 1] = rng.uniform(lo, hi, shape)
    return phi


def _matrix(phi, rep):
    return {"rpy": sp.rpy_to_matrix, "zyx": sp.zyx_to_matrix, "zyz": sp.euler_zyz_to_matrix,
            "quaternion": lambda x: sp.quat_to_matrix(x / np.linalg.norm(x, axis=-1, keepdims=True))}[rep](phi)


@pytest.mark.parametrize("rep", REPS)
def test_angular_velocity_is_the_world_rate_of_the_rotation(rep):
    """omega = unskew(R' R^T) for R(phi + t phi'): fixes the frame of omega (world) independently."""
    rng = np.random.default_rng(2)
    for _ in range(10):
        phi, phid = _random_phi(rep, rng), rng.standard_normal(REPRESENTATIONS[rep])
        R = _matrix(phi, rep)
        Rd = fd_t(lambda t: _matrix(phi + t * phid, rep))
        assert_close(angular_velocity(phi, phid, rep), sp.unskew(Rd @ R.T), FD_TOL, rep)


@pytest.mark.parametrize("rep", REPS)
def test_rate_maps_round_trip(rep):
    rng = np.random.default_rng(3)
    phi, omega = _random_phi(rep, rng, 50), rng.standard_normal((50, 3))
    phid = orientation_rate(phi, omega, rep)
    assert phid.shape == (50, REPRESENTATIONS[rep])
    assert_close(angular_velocity(phi, phid, rep), omega, 1e-12, "omega -> phi' -> omega")
    back = rng.standard_normal((50, REPRESENTATIONS[rep]))
    if rep == "quaternion":          # only the tangent part of a quaternion rate rotates
        back -= np.sum(back * phi, -1, keepdims=True) * phi
        assert_close(np.sum(phid * phi, -1), np.zeros(50), 1e-12, "q . q' = 0 (unit norm kept)")
    assert_close(orientation_rate(phi, angular_velocity(phi, back, rep), rep), back, 1e-10, "phi' -> omega -> phi'")
    # one state equals the row of the stack; the rate matrix is the map itself
    assert_close(orientation_rate(phi[4], omega[4], rep), phid[4], 1e-15, "single state")
    assert_close(rate_matrix(phi[4], rep) @ back[4], angular_velocity(phi[4], back[4], rep), 1e-12, "rate_matrix")


def test_orientation_coordinates_invert_the_rotation():
    R = Rotation.random(20, random_state=4).as_matrix()
    for rep in REPS:
        assert_close(_matrix(orientation_coordinates(R, rep), rep), R, 1e-12, rep)
    assert np.all(orientation_coordinates(R, "quaternion")[:, 3] >= 0)


# ---------------------------------------------------------------------------------------
# representation singularities
SINGULAR = [("rpy", [0.3, pi / 2, -0.2], "pitch"), ("rpy", [0.3, -pi / 2, 1.0], "pitch"),
            ("zyx", [0.1, -pi / 2, 0.4], r"cos\(y\)"), ("zyz", [0.5, 0.0, 0.2], "theta"),
            ("zyz", [0.5, pi, 0.2], "theta")]


@pytest.mark.parametrize("rep, phi, word", SINGULAR)
def test_singular_angles_raise_naming_the_representation(rep, phi, word):
    with pytest.raises(RepresentationSingularityError, match=word) as exc:
        orientation_rate(phi, [0.1, 0.2, 0.3], rep)
    msg = str(exc.value)
    assert repr(rep) in msg and "quaternion" in msg and "representation singularity" in msg
    assert isinstance(exc.value, ValueError)
    # the forward map E phi' is still fine there
    assert np.isfinite(angular_velocity(phi, [0.1, 0.2, 0.3], rep)).all()


def test_singularity_tolerance():
    phi = np.array([0.3, pi / 2 - 1e-4, -0.2])                 # |cos pitch| = 1e-4
    with pytest.raises(RepresentationSingularityError, match="tol = 0.001"):
        orientation_rate(phi, [0.1, 0.2, 0.3], "rpy", tol=1e-3)
    phid = orientation_rate(phi, [0.1, 0.2, 0.3], "rpy")        # default tol 1e-6: allowed
    assert np.abs(phid).max() > 100                             # large rates near the singularity ...
    assert_close(angular_velocity(phi, phid, "rpy"), [0.1, 0.2, 0.3], 1e-9, "round trip")   # ... but exact
    with pytest.raises(ValueError, match="tol"):
        orientation_rate(phi, [0.1, 0.2, 0.3], "rpy", tol=-1.0)


def test_singular_configuration_of_a_model():
    """An arm turning only about z has ZYZ theta = 0 forever; a ZYX joint at y = pi/2 is at the
    rpy/zyx singularity.  Euler parameters work at both (checked against finite differences)."""
    rz = _single(ld.Revolute("z"))
    with pytest.raises(RepresentationSingularityError, match="'zyz'"):
        analytic_jacobian(rz, np.array([0.4]), "f", "zyz")
    assert_close(analytic_jacobian(rz, np.array([0.4]), "f", "rpy")[3:], [[0.0], [0.0], [1.0]], 1e-12, "yaw rate")
    ball = _single(ld.SphericalZYX())
    q = np.array([0.3, pi / 2, -0.7])
    for rep in ("rpy", "zyx"):
        with pytest.raises(RepresentationSingularityError, match=repr(rep)):
            analytic_jacobian(ball, q, "f", rep)
        with pytest.raises(RepresentationSingularityError, match=repr(rep)):
            task_acceleration(ball, q, np.ones(3), np.ones(3), "f", rep)
    with pytest.raises(RepresentationSingularityError, match="state 1 of the stack"):
        analytic_jacobian(ball, np.array([[0.1, 0.2, 0.3], q]), "f", "rpy")
    for model, qq in ((rz, np.array([0.4])), (ball, q)):
        JA = analytic_jacobian(model, qq, "f", "quaternion")
        x0 = analytic_pose(model, qq, "f", "quaternion")
        for v in np.eye(model.nv):
            d = _coord_difference(analytic_pose(model, ld.integrate(model, qq, v, 1e-6), "f", "quaternion"),
                                  analytic_pose(model, ld.integrate(model, qq, v, -1e-6), "f", "quaternion"),
                                  x0, "quaternion") / 2e-6
            assert_close(JA @ v, d, FD_TOL, "quaternion at an Euler singularity")


def test_bad_inputs():
    with pytest.raises(ValueError, match="representation"):
        orientation_rate([0, 0, 0], [0, 0, 1], "xyz")
    with pytest.raises(ValueError, match="unit norm"):
        orientation_rate([0, 0, 0, 2.0], [0, 0, 1], "quaternion")
    with pytest.raises(ValueError, match="omega"):
        orientation_rate([0, 0, 0], [0, 1], "rpy")
    with pytest.raises(ValueError, match="phi"):
        angular_velocity([0, 0, np.nan], [0, 0, 1], "rpy")
    model, frame = _model("puma560")
    with pytest.raises(ValueError, match="representation"):
        analytic_jacobian(model, np.zeros(6), frame, "euler")


# ---------------------------------------------------------------------------------------
# accelerations: x'' = J q'' + J' q' (seed 002 eq. (4.46))
def _state(model, frame, rng):
    q = _random_q_not_singular(model, frame, rng)
    return q, rng.standard_normal(model.nv), rng.standard_normal(model.nv)


def _along(model, q, v, a, t):
    """The state at time t of the motion with q(0) = q, q'(0) = v, q'' = a (on the manifold:
    q(t) = integrate(q, v t + a t^2 / 2), v(t) = v + a t, exact to the order FD needs)."""
    return ld.integrate(model, q, v * t + 0.5 * a * t * t), v + a * t


@pytest.mark.parametrize("name", MODELS)
def test_task_acceleration_is_derivative_of_frame_velocity(name):
    model, frame = _model(name)
    rng = np.random.default_rng(11)
    for _ in range(3):
        q, v, a = _state(model, frame, rng)
        xdd = task_acceleration(model, q, v, a, frame)
        want = fd_t(lambda t: ld.frame_velocity(model, *_along(model, q, v, a, t), frame, "local_world_aligned"))
        assert_close(xdd, want, FD_TOL, f"{name} [p''; omega']")
        # the two parts of x'' = J q'' + J' q' separately: a = 0 gives J' q'
        J = ld.jacobian(model, q, frame, "local_world_aligned")
        assert_close(task_acceleration(model, q, v, np.zeros(model.nv), frame), xdd - J @ a, 1e-12, "J' q'")
        assert_close(task_velocity(model, q, v, frame), J @ v, 1e-14, "x' = J q'")


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("rep", REPS)
def test_analytic_task_acceleration_is_derivative_of_analytic_rates(name, rep):
    model, frame = _model(name)
    rng = np.random.default_rng(12)
    for _ in range(2):
        q, v, a = _state(model, frame, rng)
        got = task_acceleration(model, q, v, a, frame, rep)
        assert got.shape == (3 + REPRESENTATIONS[rep],)
        # the rates [p'; phi'] along the motion, from the geometric velocity and the coordinates
        def rates(t):
            qt, vt = _along(model, q, v, a, t)
            return task_velocity(model, qt, vt, frame, rep)
        assert_close(got, fd_t(rates), FD_TOL, f"{name} {rep}")
        # and the rates themselves are J_A v and the derivative of the coordinates
        assert_close(rates(0.0), analytic_jacobian(model, q, frame, rep) @ v, 1e-12, "J_A v")
        x0 = analytic_pose(model, q, frame, rep)
        d = _coord_difference(analytic_pose(model, ld.integrate(model, q, v, 1e-6), frame, rep),
                              analytic_pose(model, ld.integrate(model, q, v, -1e-6), frame, rep), x0, rep) / 2e-6
        assert_close(rates(0.0), d, FD_TOL, "phi' by finite differences")


@pytest.mark.parametrize("rep", REPS)
def test_analytic_acceleration_is_second_derivative_of_coordinates(rep):
    """On a revolute arm q(t) = q + v t + a t^2/2 exactly: x'' by a second difference of x(q(t))."""
    model, frame = _model("puma560")
    rng = np.random.default_rng(13)
    h = 1e-4
    for _ in range(3):
        q, v, a = _state(model, frame, rng)
        x = [analytic_pose(model, q + v * t + 0.5 * a * t * t, frame, rep) for t in (-h, 0.0, h)]
        d2 = _coord_difference(x[2], x[1], x[1], rep) - _coord_difference(x[1], x[0], x[1], rep)
        assert_close(task_acceleration(model, q, v, a, frame, rep), d2 / h**2, 1e-5, rep)


def test_task_acceleration_of_a_stack_equals_the_loop():
    model, frame = _model("panda")
    rng = np.random.default_rng(14)
    S = [_state(model, frame, rng) for _ in range(4)]
    Q, V, A = (np.array(x) for x in zip(*S))
    for rep in (None,) + REPS:
        X = task_acceleration(model, Q, V, A, frame, rep)
        for k in range(4):
            assert_close(X[k], task_acceleration(model, Q[k], V[k], A[k], frame, rep), 1e-12, str(rep))
    # one configuration shared by a stack of velocities
    X = task_acceleration(model, Q[0], V, A, frame, "zyz")
    assert_close(X[3], task_acceleration(model, Q[0], V[3], A[3], frame, "zyz"), 1e-12, "shared q")


def test_task_acceleration_agrees_with_classical_frame_acceleration():
    """frame_acceleration(classical=True) is a second route (the same kernel, other entry point)."""
    model, frame = _model("mixed-floating-s3")
    q, v, a = _state(model, frame, np.random.default_rng(15))
    assert_close(task_acceleration(model, q, v, a, frame),
                 ld.frame_acceleration(model, q, v, a, frame, "local_world_aligned", classical=True), 1e-12, "x''")
    # and the J' q' part is the derivative of J along the motion
    Jdv = fd(lambda x: ld.jacobian(model, x, frame, "local_world_aligned") @ v, model, q, v)
    assert_close(task_acceleration(model, q, v, np.zeros(model.nv), frame), Jdv, FD_TOL, "J' q'")


def test_euler_parameter_maps_are_seed_002_a4():
    """[eps'; eta'] = 1/2 J_E omega, J_E = [eta I - S(eps); -eps^T]; omega = 2 J_E^T [eps'; eta'];
    and 2 J_E^T 1/2 J_E = I (seed 002 appendix A4)."""
    rng = np.random.default_rng(21)
    for _ in range(5):
        q = rng.standard_normal(4)
        q /= np.linalg.norm(q)
        e, w = q[:3], q[3]
        JE = np.vstack([w * np.eye(3) - sp.skew(e), -e[None, :]])
        np.testing.assert_allclose(rate_matrix(q, "quaternion"), 2 * JE.T, atol=1e-15)
        omega = rng.standard_normal(3)
        np.testing.assert_allclose(orientation_rate(q, omega, "quaternion"), 0.5 * JE @ omega, atol=1e-15)
        np.testing.assert_allclose(rate_matrix(q, "quaternion") @ (0.5 * JE), np.eye(3), atol=1e-14)
