"""Tests of linkdyn.spatial: round trips, identities, finite differences,
independent references (scipy, point-mass bodies) and Pinocchio."""

from decimal import Decimal, localcontext
from functools import partial

import numpy as np
import pytest
import scipy.linalg
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.spatial.transform import Rotation

from linkdyn import spatial as sp

try:
    import pinocchio as pin
except ImportError:  # pragma: no cover
    pin = None
needs_pin = pytest.mark.skipif(pin is None, reason="pinocchio not installed")

settings.register_profile("spatial", max_examples=40, deadline=None)
settings.load_profile("spatial")

PI = np.pi
E3 = np.eye(3)


# ------------------------------------------------------------------ helpers

def rng_(seed=0):
    return np.random.default_rng(seed)


def rand_rot(n, seed=0):
    """Uniform random rotations from scipy (independent of the module)."""
    return Rotation.random(n, random_state=seed).as_matrix()


def rand_unit(n, seed=0):
    v = rng_(seed).normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def rand_spd(n, seed=0):
    A = rng_(seed).normal(size=(n, 3, 3))
    return A @ np.swapaxes(A, -1, -2) + 0.1 * E3


def hat6(nu):
    """4x4 twist matrix [[skew(w), v], [0, 0]] built by hand."""
    v, w = nu[:3], nu[3:]
    T = np.zeros((4, 4))
    T[:3, :3] = [[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]
    T[:3, 3] = v
    return T


def expm_ref(A, terms=60):
    """Matrix exponential by its Taylor series in 40-digit decimal arithmetic
    (a correctly rounded reference for |A| <~ 5)."""
    n = len(A)
    with localcontext() as ctx:
        ctx.prec = 40
        M = [[Decimal(float(x)) for x in row] for row in A]
        term = [[Decimal(int(i == j)) for j in range(n)] for i in range(n)]
        total = [row[:] for row in term]
        for k in range(1, terms):
            term = [[sum(term[i][m] * M[m][j] for m in range(n)) / k for j in range(n)] for i in range(n)]
            total = [[total[i][j] + term[i][j] for j in range(n)] for i in range(n)]
    return np.array(total, dtype=float)


def assert_rotation(R, atol=1e-12):
    np.testing.assert_allclose(np.swapaxes(R, -1, -2) @ R, np.broadcast_to(E3, R.shape), atol=atol)
    np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=atol)


def close(a, b, atol=1e-12, rtol=0.0):
    np.testing.assert_allclose(a, b, atol=atol, rtol=rtol)


def omega_from_rdot(Rdot, R, frame):
    """Angular velocity from R_dot: world skew(w) = R_dot R^T, body skew(w) = R^T R_dot."""
    S = Rdot @ R.swapaxes(-1, -2) if frame == "world" else R.swapaxes(-1, -2) @ Rdot
    return sp.unskew(S)


def central_diff(f, x, dx, h=1e-6):
    return (f(x + h * dx) - f(x - h * dx)) / (2 * h)


finite = partial(st.floats, allow_nan=False, allow_infinity=False)
vec3 = hnp.arrays(np.float64, 3, elements=finite(-5, 5))
vec6 = hnp.arrays(np.float64, 6, elements=finite(-5, 5))
unit3 = hnp.arrays(np.float64, 3, elements=finite(-1, 1)).filter(
    lambda a: np.linalg.norm(a) > 0.1).map(lambda a: a / np.linalg.norm(a))
unit_quat = hnp.arrays(np.float64, 4, elements=finite(-1, 1)).filter(
    lambda a: np.linalg.norm(a) > 0.1).map(lambda a: a / np.linalg.norm(a))
rotation = unit_quat.map(lambda q: Rotation.from_quat(q).as_matrix())
# rotation angles spread over magnitudes, including tiny ones and values next to pi
angle_0_pi = st.one_of(finite(0, PI), st.floats(-16, 0).map(lambda e: 10.0**e),
                       st.floats(-16, -1).map(lambda e: PI - 10.0**e), st.just(PI), st.just(0.0))


# ------------------------------------------------------------ SO(3) basics

@given(vec3, vec3)
def test_skew_is_cross_product_and_unskew_inverts(a, b):
    close(sp.skew(a) @ b, np.cross(a, b))
    close(sp.skew(a), -sp.skew(a).T)
    close(sp.unskew(sp.skew(a)), a)


def test_unskew_ignores_symmetric_part():
    a = np.array([1.0, -2.0, 3.0])
    close(sp.unskew(sp.skew(a) + rand_spd(1)[0]), a, atol=1e-14)


def test_elementary_rotations_match_scipy():
    ang = np.linspace(-2 * PI, 2 * PI, 41)
    for fn, ax, e in [(sp.rotx, "x", E3[0]), (sp.roty, "y", E3[1]), (sp.rotz, "z", E3[2])]:
        close(fn(ang), Rotation.from_euler(ax, ang[:, None]).as_matrix(), atol=1e-15)
        close(sp.axis_angle_to_matrix(e, ang), fn(ang), atol=1e-15)


MATRIX_CONSTRUCTORS = {
    "rotx": lambda r: sp.rotx(r.uniform(-9, 9, 50)),
    "axis_angle": lambda r: sp.axis_angle_to_matrix(r.normal(size=(50, 3)), r.uniform(-9, 9, 50)),
    "exp3": lambda r: sp.exp3(r.normal(scale=3, size=(50, 3))),
    "rpy": lambda r: sp.rpy_to_matrix(r.uniform(-9, 9, (50, 3))),
    "zyx": lambda r: sp.zyx_to_matrix(r.uniform(-9, 9, (50, 3))),
    "zyz": lambda r: sp.euler_zyz_to_matrix(r.uniform(-9, 9, (50, 3))),
    "quat": lambda r: sp.quat_to_matrix(sp.quat_normalize(r.normal(size=(50, 4)))),
    "exp6": lambda r: sp.exp6(r.normal(scale=3, size=(50, 6)))[0],
}


@pytest.mark.parametrize("name", MATRIX_CONSTRUCTORS)
def test_constructors_return_proper_rotations(name):
    R = MATRIX_CONSTRUCTORS[name](rng_(1))
    assert R.shape == (50, 3, 3)
    assert_rotation(R)
    assert sp.is_rotation_matrix(R).all()


def test_is_rotation_matrix_rejects_reflections_and_scaling():
    assert sp.is_rotation_matrix(E3)
    assert not sp.is_rotation_matrix(np.diag([1.0, 1.0, -1.0]))
    assert not sp.is_rotation_matrix(1.001 * E3)


@given(vec3, finite(-10, 10))
def test_axis_angle_matches_scipy_rotvec(axis, angle):
    if np.linalg.norm(axis) < 1e-3:
        return
    k = axis / np.linalg.norm(axis)
    close(sp.axis_angle_to_matrix(axis, angle), Rotation.from_rotvec(k * angle).as_matrix(), atol=1e-13)


@given(unit3, angle_0_pi)
@example(np.array([0.0, 0.70710678, 0.70710678]), 2.2250738585e-313)     # a subnormal angle: the axis stays of unit norm
def test_matrix_to_axis_angle_round_trip(k, angle):
    R = Rotation.from_rotvec(k * angle).as_matrix()
    axis, got = sp.matrix_to_axis_angle(R)
    assert 0.0 <= got <= PI
    close(np.linalg.norm(axis), 1.0)
    close(sp.axis_angle_to_matrix(axis, got), R, atol=1e-14)
    close(got, angle, atol=1e-14)
    if 1e-6 < angle < PI - 1e-6:  # axis is unique there
        close(axis, k, atol=1e-9)


@given(vec3.filter(lambda w: np.linalg.norm(w) > 0).map(lambda w: w / np.linalg.norm(w)),
       st.floats(-16, 0.7).map(lambda e: 10.0**e))
def test_exp3_matches_expm(direction, scale):
    w = direction * scale
    close(sp.exp3(w), scipy.linalg.expm(sp.skew(w)), atol=1e-14 * (1 + scale) ** 2)  # expm's accuracy


# angles across the switch between Taylor series and closed form (1e-2) and beyond
REF_ANGLES = [0.0, 1e-12, 1e-8, 1e-5, 1e-3, 5e-3, 1e-2 * (1 - 1e-9), 1e-2 * (1 + 1e-9), 0.03, 0.099, 0.3, 1.0, 3.0]


@pytest.mark.parametrize("angle", REF_ANGLES)
def test_exp6_log6_against_decimal_reference(angle):
    """Few-ulp agreement with a 40-digit exponential, also where the Taylor series is used."""
    k, v = rand_unit(1, seed=50)[0], rng_(51).normal(size=3)
    nu = np.concatenate([v, k * angle])
    ref = expm_ref(hat6(nu))
    R, p = sp.exp6(nu)
    close(R, ref[:3, :3], atol=1e-15)
    close(p, ref[:3, 3], atol=2e-15)
    close(sp.exp3(k * angle), ref[:3, :3], atol=1e-15)
    close(sp.log6(ref[:3, :3], ref[:3, 3]), nu, atol=4e-15)


@given(unit3, angle_0_pi)
def test_log3_inverts_exp3(k, angle):
    R = sp.exp3(k * angle)
    w = sp.log3(R)
    close(np.linalg.norm(w), angle, atol=1e-14)
    close(sp.exp3(w), R, atol=1e-14)
    if angle < PI - 1e-6:  # unique logarithm
        close(w, k * angle, atol=1e-12)


def test_log3_exactly_at_pi_and_identity():
    for R in [np.diag([1.0, -1, -1]), np.diag([-1.0, 1, -1]), np.diag([-1.0, -1, 1]), E3]:
        w = sp.log3(R)
        assert np.isfinite(w).all()
        close(sp.exp3(w), R, atol=1e-15)
    close(sp.log3(E3), np.zeros(3))


# ------------------------------------------------------------- quaternions

def test_quat_to_matrix_matches_scipy_and_seed_formula():
    q = Rotation.random(100, random_state=3).as_quat()  # scipy stores [x, y, z, w] too
    R = sp.quat_to_matrix(q)
    close(R, Rotation.from_quat(q).as_matrix(), atol=1e-14)
    close(sp.quat_to_matrix(-q), R)  # double cover


def test_matrix_quat_round_trip_with_nonnegative_w():
    q = Rotation.random(200, random_state=4).as_quat()
    got = sp.matrix_to_quat(sp.quat_to_matrix(q))
    assert (got[:, 3] >= 0).all()
    close(got, q * np.sign(q[:, 3:]), atol=1e-14)


@pytest.mark.parametrize("big", [0, 1, 2, 3])
def test_matrix_to_quat_each_shepperd_branch(big):
    # quaternions dominated by one component, incl. w = 0 (angle = pi) exactly
    q = rng_(big).normal(scale=1e-3, size=(50, 4))
    q[:, big] = 1.0
    q[:10, 3] = 0.0 if big != 3 else 1.0
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    R = Rotation.from_quat(q).as_matrix()
    got = sp.matrix_to_quat(R)
    assert (got[:, 3] >= 0).all()
    close(sp.quat_to_matrix(got), R, atol=1e-15)
    close(np.abs(np.sum(got * q, -1)), 1.0, atol=1e-14)  # same up to sign


@given(unit_quat, unit_quat)
def test_quat_multiply_composes_matrices(a, b):
    close(sp.quat_to_matrix(sp.quat_multiply(a, b)), sp.quat_to_matrix(a) @ sp.quat_to_matrix(b))


def test_quat_multiply_is_hamilton_product():
    i, j, k, one = np.eye(4)
    close(sp.quat_multiply(i, j), k)
    close(sp.quat_multiply(j, i), -k)
    close(sp.quat_multiply(i, i), -one)


def test_quat_inverse_conjugate_normalize():
    q = rng_(5).normal(scale=3, size=(50, 4))
    close(sp.quat_multiply(q, sp.quat_inverse(q)), np.broadcast_to([0, 0, 0, 1.0], q.shape), atol=1e-14)
    u = sp.quat_normalize(q)
    close(np.linalg.norm(u, axis=-1), 1.0)
    close(sp.quat_conjugate(u), sp.quat_inverse(u))
    close(sp.quat_to_matrix(sp.quat_conjugate(u)), np.swapaxes(sp.quat_to_matrix(u), -1, -2))


def test_quat_unit_tolerance():
    q = np.array([0.0, 0.6, 0.0, 0.8])
    assert_rotation(sp.quat_to_matrix(q * (1 + 5e-7)), atol=1e-15)  # inside tolerance: renormalized
    with pytest.raises(ValueError, match="quat: not unit norm"):
        sp.quat_to_matrix(q * (1 + 2e-6))


@given(unit_quat, vec3)
def test_quat_rotate_matches_matrix(q, v):
    close(sp.quat_rotate(q, v), sp.quat_to_matrix(q) @ v)


@given(unit3, finite(-2 * PI, 2 * PI))
def test_quat_axis_angle_consistency(k, angle):
    q = sp.quat_from_axis_angle(3 * k, angle)
    close(np.linalg.norm(q), 1.0)
    close(sp.quat_to_matrix(q), sp.axis_angle_to_matrix(k, angle))
    axis, got = sp.quat_to_axis_angle(q)
    assert 0 <= got <= PI
    close(sp.axis_angle_to_matrix(axis, got), sp.axis_angle_to_matrix(k, angle))
    if 1e-6 < abs(angle) < PI - 1e-6:  # unique up to the sign of the angle
        close(axis * got, k * angle, atol=1e-12)


@pytest.mark.parametrize("frame", ["body", "world"])
def test_quat_derivative_matches_finite_difference(frame):
    q = Rotation.random(30, random_state=6).as_quat()
    w = rng_(6).normal(size=(30, 3))
    dq = sp.quat_derivative(q, w, frame=frame)
    close(np.sum(dq * q, -1), 0.0, atol=1e-15)  # keeps the norm
    R = sp.quat_to_matrix(q)
    Rdot = central_diff(lambda x: sp.quat_to_matrix(sp.quat_normalize(x)), q, dq)
    expected = R @ sp.skew(w) if frame == "body" else sp.skew(w) @ R
    close(Rdot, expected, atol=1e-8)
    close(omega_from_rdot(Rdot, R, frame), w, atol=1e-8)


def test_quat_derivative_world_is_seed_002_a4():
    q = Rotation.random(30, random_state=7).as_quat()
    w = rng_(7).normal(size=(30, 3))
    e, eta = q[:, :3], q[:, 3:]
    expected = 0.5 * np.concatenate([eta * w - np.cross(e, w), -np.sum(e * w, -1, keepdims=True)], -1)
    close(sp.quat_derivative(q, w, frame="world"), expected, atol=1e-15)


@pytest.mark.parametrize("frame", ["body", "world"])
def test_quat_angular_velocity_inverts_derivative(frame):
    q = rng_(8).normal(scale=2, size=(30, 4))  # also valid for non-unit q
    w = rng_(9).normal(size=(30, 3))
    dq = sp.quat_derivative(q, w, frame=frame)
    close(sp.quat_angular_velocity(q, dq, frame=frame), w, atol=1e-13)
    # a norm change (dq along q) does not add angular velocity
    close(sp.quat_angular_velocity(q, dq + 0.3 * q, frame=frame), w, atol=1e-13)


def test_body_and_world_velocity_related_by_rotation():
    q = Rotation.random(10, random_state=10).as_quat()
    w_body = rng_(10).normal(size=(10, 3))
    dq = sp.quat_derivative(q, w_body, frame="body")
    close(sp.quat_angular_velocity(q, dq, frame="world"), sp.quat_rotate(q, w_body), atol=1e-14)


# ------------------------------------------------------------ Euler angles

EULER = {
    # name: (to_matrix, from_matrix, index of the singular angle, its singular values,
    #        index of the angle set to 0 at an exact lock)
    "rpy": (sp.rpy_to_matrix, sp.matrix_to_rpy, 1, (PI / 2, -PI / 2), 0),
    "zyx": (sp.zyx_to_matrix, sp.matrix_to_zyx, 1, (PI / 2, -PI / 2), 2),
    "zyz": (sp.euler_zyz_to_matrix, sp.matrix_to_euler_zyz, 1, (0.0, PI), 0),
}


def principal_ranges_ok(a, name):
    mid = a[..., 1]
    mid_ok = (np.abs(mid) <= PI / 2) if name != "zyz" else (mid >= 0) & (mid <= PI)
    return mid_ok.all() and (np.abs(a) <= PI).all()


def test_euler_conventions_match_scipy():
    a = rng_(11).uniform(-PI, PI, (50, 3))
    close(sp.rpy_to_matrix(a), Rotation.from_euler("xyz", a).as_matrix(), atol=1e-15)  # extrinsic
    close(sp.zyx_to_matrix(a), Rotation.from_euler("ZYX", a).as_matrix(), atol=1e-15)  # intrinsic
    close(sp.euler_zyz_to_matrix(a), Rotation.from_euler("ZYZ", a).as_matrix(), atol=1e-15)
    close(sp.zyx_to_matrix(a), sp.rotz(a[:, 0]) @ sp.roty(a[:, 1]) @ sp.rotx(a[:, 2]))
    close(sp.zyx_to_matrix(a), sp.rpy_to_matrix(a[:, ::-1]))


@pytest.mark.parametrize("name", EULER)
def test_euler_round_trip_generic(name):
    to_m, from_m, i, _, _ = EULER[name]
    a = rng_(12).uniform(-PI, PI, (300, 3))
    a[:, i] = a[:, i] / 2 if name != "zyz" else np.abs(a[:, i])  # principal branch
    a = a[np.abs(np.sin(a[:, i]) if name == "zyz" else np.cos(a[:, i])) > 1e-2]
    got = from_m(to_m(a))
    assert principal_ranges_ok(got, name)
    close(got, a, atol=1e-11)
    R = rand_rot(300, seed=13)  # arbitrary matrices: matrix round trip
    got = from_m(R)
    assert principal_ranges_ok(got, name)
    close(to_m(got), R, atol=1e-14)


@pytest.mark.parametrize("name", EULER)
@pytest.mark.parametrize("delta", [0.0, 1e-15, -1e-15, 1e-12, -1e-12, 1e-9, -1e-9, 1e-6, -1e-6])
def test_euler_round_trip_near_singular(name, delta):
    to_m, from_m, i, singular, zeroed = EULER[name]
    a = rng_(14).uniform(-PI, PI, (40, 3))
    for s in singular:
        a[:, i] = s + (abs(delta) if s == 0.0 else -abs(delta) if s == PI else delta)
        R = to_m(a)
        got = from_m(R)
        assert np.isfinite(got).all() and principal_ranges_ok(got, name)
        close(to_m(got), R, atol=1e-14)
        if delta == 0.0:  # exact lock: roll (x) / phi is set to 0 (documented)
            close(got[:, zeroed], 0.0, atol=0)


# ---------------------------------------------------- Euler rate matrices

RATES = {
    "rpy": (sp.rpy_to_matrix, sp.rpy_rate_matrix, sp.rpy_rate_matrix_inverse),
    "zyx": (sp.zyx_to_matrix, sp.zyx_rate_matrix, sp.zyx_rate_matrix_inverse),
    "zyz": (sp.euler_zyz_to_matrix, sp.euler_zyz_rate_matrix, sp.euler_zyz_rate_matrix_inverse),
}


@pytest.mark.parametrize("name", RATES)
def test_rate_matrix_matches_finite_difference(name):
    to_m, rate, rate_inv = RATES[name]
    a = rng_(15).uniform(-3, 3, (40, 3))
    adot = rng_(16).normal(size=(40, 3))
    Rdot = central_diff(to_m, a, adot)
    close(rate(a) @ adot[..., None], omega_from_rdot(Rdot, to_m(a), "world")[..., None], atol=1e-8)
    close(rate_inv(a) @ rate(a), np.broadcast_to(E3, (40, 3, 3)), atol=1e-9)


def test_rpy_rate_matrix_closed_form_and_seed_000_ball_joint():
    r, p, y = 0.3, -0.7, 1.9
    cy, sy, cp, sp_ = np.cos(y), np.sin(y), np.cos(p), np.sin(p)
    E = np.array([[cy * cp, -sy, 0], [sy * cp, cy, 0], [-sp_, 0, 1]])
    close(sp.rpy_rate_matrix([r, p, y]), E)
    close(sp.zyx_rate_matrix([y, p, r]), E[:, ::-1])


@pytest.mark.parametrize("fn, angles, match", [
    (sp.rpy_rate_matrix_inverse, [0.3, PI / 2, 0.1], "rpy: rate matrix is singular at pitch"),
    (sp.rpy_rate_matrix_inverse, [[0, 0, 0], [0.3, -PI / 2 + 1e-12, 0.1]], "rpy: .*singular"),
    (sp.zyx_rate_matrix_inverse, [0.3, PI / 2, 0.1], "zyx: .*singular"),
    (sp.euler_zyz_rate_matrix_inverse, [0.3, 0.0, 0.1], "zyz: rate matrix is singular at theta"),
    (sp.euler_zyz_rate_matrix_inverse, [0.3, PI, 0.1], "zyz: .*singular"),
])
def test_rate_matrix_inverse_raises_at_singularity(fn, angles, match):
    with pytest.raises(ValueError, match=match):
        fn(angles)


# ------------------------------------------------------------------- SE(3)

@given(vec3, vec3.filter(lambda w: np.linalg.norm(w) > 0).map(lambda w: w / np.linalg.norm(w)),
       st.one_of(st.floats(-16, 0.4).map(lambda e: 10.0**e), st.just(0.0)))
def test_exp6_matches_expm(v, direction, scale):
    nu = np.concatenate([v, direction * scale])
    R, p = sp.exp6(nu)
    T = scipy.linalg.expm(hat6(nu))
    tol = 1e-14 * (1 + np.linalg.norm(nu)) ** 2  # scipy's expm is the less accurate side
    close(R, T[:3, :3], atol=tol)
    close(p, T[:3, 3], atol=tol)


@given(vec3, unit3, angle_0_pi)
def test_log6_inverts_exp6(v, k, angle):
    nu = np.concatenate([v, k * angle])
    R, p = sp.exp6(nu)
    got = sp.log6(R, p)
    R2, p2 = sp.exp6(got)
    close(R2, R, atol=1e-14)
    close(p2, p, atol=1e-12)
    if angle < PI - 1e-6:
        close(got, nu, atol=1e-9)


def test_log6_of_random_poses_near_pi():
    k = rand_unit(20, seed=17)
    R = sp.axis_angle_to_matrix(k, PI - np.logspace(-15, -1, 20))
    p = rng_(117).normal(size=(20, 3))
    R2, p2 = sp.exp6(sp.log6(R, p))
    close(R2, R, atol=1e-14)
    close(p2, p, atol=1e-12)


def random_poses(n, seed):
    return rand_rot(n, seed), rng_(seed).normal(scale=2, size=(n, 3))


def test_homogeneous_transforms():
    R, p = random_poses(20, 18)
    R2, p2 = random_poses(20, 19)
    x = rng_(20).normal(size=(20, 3))
    T, T2 = sp.transform(R, p), sp.transform(R2, p2)
    close(sp.transform_point(T, x), np.einsum("nij,nj->ni", R, x) + p)
    close(sp.transform_inverse(T) @ T, np.broadcast_to(np.eye(4), T.shape), atol=1e-14)
    close(sp.transform_point(sp.transform_compose(T, T2), x), sp.transform_point(T, sp.transform_point(T2, x)))
    close(sp.transform(*sp.pose_inverse(R, p)), sp.transform_inverse(T))


def compose(R1, p1, R2, p2):
    return R1 @ R2, np.einsum("...ij,...j->...i", R1, p2) + p1


def test_motion_transform_composition_and_inverse():
    (R1, p1), (R2, p2) = random_poses(20, 21), random_poses(20, 22)
    X1, X2 = sp.motion_transform(R1, p1), sp.motion_transform(R2, p2)
    close(sp.motion_transform(*compose(R1, p1, R2, p2)), X1 @ X2, atol=1e-12)  # seed 000 eq. (5)
    close(sp.motion_transform_inverse(R1, p1), np.linalg.inv(X1), atol=1e-12)  # seed 000 eq. (6)
    close(sp.motion_transform(*sp.pose_inverse(R1, p1)), np.linalg.inv(X1), atol=1e-12)
    close(sp.force_transform(R1, p1), np.swapaxes(np.linalg.inv(X1), -1, -2), atol=1e-12)


def test_motion_transform_moves_point_velocities():
    """v_a = X v_b gives the same velocity of every body point as v_b does."""
    R, p = random_poses(20, 23)
    vb = rng_(23).normal(size=(20, 6))
    xb = rng_(24).normal(size=(20, 3))
    va = np.einsum("nij,nj->ni", sp.motion_transform(R, p), vb)
    point_vel_b = vb[:, :3] + np.cross(vb[:, 3:], xb)
    xa = np.einsum("nij,nj->ni", R, xb) + p
    close(va[:, :3] + np.cross(va[:, 3:], xa), np.einsum("nij,nj->ni", R, point_vel_b), atol=1e-12)


def test_force_transform_preserves_power():
    R, p = random_poses(20, 25)
    vb, fb = rng_(25).normal(size=(2, 20, 6))
    va = np.einsum("nij,nj->ni", sp.motion_transform(R, p), vb)
    fa = np.einsum("nij,nj->ni", sp.force_transform(R, p), fb)
    close(np.sum(va * fa, -1), np.sum(vb * fb, -1), atol=1e-12)


# ---------------------------------------------------------- cross products

def test_cross_products_explicit_formulas():
    v, u, f = rng_(26).normal(size=(3, 30, 6))
    w, vl = v[:, 3:], v[:, :3]
    cm = np.einsum("nij,nj->ni", sp.cross_motion(v), u)
    close(cm, np.concatenate([np.cross(w, u[:, :3]) + np.cross(vl, u[:, 3:]), np.cross(w, u[:, 3:])], -1))
    cf = np.einsum("nij,nj->ni", sp.cross_force(v), f)
    close(cf, np.concatenate([np.cross(w, f[:, :3]), np.cross(w, f[:, 3:]) + np.cross(vl, f[:, :3])], -1))
    # duality <v x* f, u> = -<f, v x u>
    close(np.sum(cf * u, -1), -np.sum(f * cm, -1))
    close(np.einsum("nij,nj->ni", sp.cross_motion(v), v), 0.0, atol=1e-15)  # v x v = 0


def test_cross_motion_commutes_with_transforms():
    """X (v x u) = (X v) x (X u)."""
    R, p = random_poses(20, 27)
    v, u = rng_(27).normal(size=(2, 20, 6))
    X = sp.motion_transform(R, p)
    Xv, Xu = np.einsum("nij,nj->ni", X, v), np.einsum("nij,nj->ni", X, u)
    lhs = np.einsum("nij,njk,nk->ni", X, sp.cross_motion(v), u)
    close(lhs, np.einsum("nij,nj->ni", sp.cross_motion(Xv), Xu), atol=1e-12)


def test_cross_motion_is_derivative_of_motion_transform():
    """d/dt X(M exp(t nu)) at t = 0 equals X(M) (nu x)."""
    R, p = random_poses(10, 28)
    nu = rng_(28).normal(size=(10, 6))

    def X_of(t):
        return sp.motion_transform(*compose(R, p, *sp.exp6(t[:, None] * nu)))

    dX = central_diff(X_of, np.zeros(10), np.ones(10))
    close(dX, sp.motion_transform(R, p) @ sp.cross_motion(nu), atol=1e-8)


# ------------------------------------------------------------ spatial inertia

def point_cloud(seed, n=7):
    r = rng_(seed)
    return r.uniform(0.1, 2.0, n), r.normal(size=(n, 3))


def cloud_inertia(m, x):
    """Spatial inertia about the origin of point masses, summed by hand."""
    I6 = np.zeros((6, 6))
    for mk, xk in zip(m, x):
        S = sp.skew(xk)
        I6 += mk * np.block([[E3, -S], [S, -S @ S]])
    return I6


def cloud_parameters(m, x):
    c = m @ x / m.sum()
    r = x - c
    Ic = np.einsum("k,kij->ij", m, np.einsum("ki,ki->k", r, r)[:, None, None] * E3 - np.einsum("ki,kj->kij", r, r))
    return m.sum(), c, Ic


@pytest.mark.parametrize("seed", range(5))
def test_spatial_inertia_of_point_masses(seed):
    m, x = point_cloud(seed)
    I6 = sp.spatial_inertia(*cloud_parameters(m, x))
    close(I6, cloud_inertia(m, x), atol=1e-12)
    v = rng_(seed + 200).normal(size=6)
    vel = v[:3] + np.cross(v[3:], x)  # velocities of the points
    close(sp.kinetic_energy(I6, v), 0.5 * np.sum(m * np.sum(vel**2, -1)), atol=1e-12)
    # inertia_transform equals the inertia of the moved points
    R, p = random_poses(1, seed + 100)
    xa = x @ R[0].T + p[0]
    close(sp.inertia_transform(R[0], p[0], I6), cloud_inertia(m, xa), atol=1e-12)


def test_spatial_inertia_positive_definite_and_parameters_round_trip():
    m = rng_(29).uniform(0.1, 10, 50)
    c = rng_(30).normal(size=(50, 3))
    Ic = rand_spd(50, seed=31)
    I6 = sp.spatial_inertia(m, c, Ic)
    close(I6, np.swapaxes(I6, -1, -2), atol=1e-13)
    assert (np.linalg.eigvalsh(I6) > 0).all()
    m2, c2, Ic2 = sp.inertia_parameters(I6)
    close(m2, m)
    close(c2, c, atol=1e-12)
    close(Ic2, Ic, atol=1e-12)


def test_inertia_transform_keeps_kinetic_energy_and_momentum():
    R, p = random_poses(30, 32)
    Ib = sp.spatial_inertia(rng_(32).uniform(0.1, 5, 30), rng_(33).normal(size=(30, 3)), rand_spd(30, 34))
    vb = rng_(35).normal(size=(30, 6))
    Ia = sp.inertia_transform(R, p, Ib)
    va = np.einsum("nij,nj->ni", sp.motion_transform(R, p), vb)
    close(sp.kinetic_energy(Ia, va), sp.kinetic_energy(Ib, vb), atol=1e-11)
    ha = np.einsum("nij,nj->ni", Ia, va)
    close(ha, np.einsum("nij,njk,nk->ni", sp.force_transform(R, p), Ib, vb), atol=1e-11)
    close(sp.inertia_transform(*sp.pose_inverse(R, p), Ia), Ib, atol=1e-11)


# ---------------------------------------------------------------- Pinocchio

@needs_pin
@pytest.mark.parametrize("seed", range(10))
def test_against_pinocchio(seed):
    r = rng_(seed)
    nu = r.normal(scale=2, size=6)
    M = pin.exp6(nu)
    R, p = sp.exp6(nu)
    close(R, M.rotation)
    close(p, M.translation)
    close(sp.log6(R, p), pin.log6(M).vector)
    close(sp.log3(R), pin.log3(M.rotation))
    close(sp.motion_transform(R, p), M.action)
    close(sp.force_transform(R, p), M.dualAction)
    close(sp.motion_transform_inverse(R, p), M.actionInverse)
    close(sp.transform(R, p), M.homogeneous)
    v, u, f = r.normal(size=(3, 6))
    close(sp.cross_motion(v) @ u, pin.Motion(v).cross(pin.Motion(u)).vector)
    close(sp.cross_force(v) @ f, pin.Motion(v).cross(pin.Force(f)).vector)
    m, c, Ic = r.uniform(0.5, 3), r.normal(size=3), rand_spd(1, seed)[0]
    inertia = pin.Inertia(m, c, Ic)
    close(sp.spatial_inertia(m, c, Ic), inertia.matrix())
    close(sp.inertia_transform(R, p, inertia.matrix()), M.act(inertia).matrix(), atol=1e-11)
    q = sp.quat_normalize(r.normal(size=4))
    close(sp.quat_to_matrix(q), pin.Quaternion(q).toRotationMatrix())  # from 4-vector: (x, y, z, w)
    close(np.abs(sp.matrix_to_quat(R) @ pin.Quaternion(R).coeffs()), 1.0)
    rpy = r.uniform(-PI / 2, PI / 2, 3)
    close(sp.rpy_to_matrix(rpy), pin.rpy.rpyToMatrix(rpy))
    close(sp.matrix_to_rpy(pin.rpy.rpyToMatrix(rpy)), pin.rpy.matrixToRpy(pin.rpy.rpyToMatrix(rpy)))
    close(sp.rpy_rate_matrix(rpy), pin.rpy.computeRpyJacobian(rpy, pin.WORLD))
    close(sp.rpy_rate_matrix_inverse(rpy), pin.rpy.computeRpyJacobianInverse(rpy, pin.WORLD), atol=1e-11)


# ---------------------------------------------------------- batch vs loop

def _batch_inputs():
    r = rng_(40)
    R, p = random_poses(6, 41)
    q = Rotation.random(6, random_state=42).as_quat()
    I6 = sp.spatial_inertia(r.uniform(1, 2, 6), r.normal(size=(6, 3)), rand_spd(6, 43))
    T = sp.transform(R, p)
    a3, v3, v6, ang = r.uniform(-3, 3, (6, 3)), r.normal(size=(6, 3)), r.normal(size=(6, 6)), r.normal(size=6)
    return {
        "skew": (sp.skew, [v3]), "unskew": (sp.unskew, [R]),
        "rotx": (sp.rotx, [ang]), "roty": (sp.roty, [ang]), "rotz": (sp.rotz, [ang]),
        "is_rotation_matrix": (sp.is_rotation_matrix, [R]),
        "axis_angle_to_matrix": (sp.axis_angle_to_matrix, [v3, ang]),
        "matrix_to_axis_angle": (sp.matrix_to_axis_angle, [R]),
        "exp3": (sp.exp3, [v3]), "log3": (sp.log3, [R]),
        "rpy_to_matrix": (sp.rpy_to_matrix, [a3]), "matrix_to_rpy": (sp.matrix_to_rpy, [R]),
        "zyx_to_matrix": (sp.zyx_to_matrix, [a3]), "matrix_to_zyx": (sp.matrix_to_zyx, [R]),
        "euler_zyz_to_matrix": (sp.euler_zyz_to_matrix, [a3]),
        "matrix_to_euler_zyz": (sp.matrix_to_euler_zyz, [R]),
        "rpy_rate_matrix": (sp.rpy_rate_matrix, [a3]),
        "rpy_rate_matrix_inverse": (sp.rpy_rate_matrix_inverse, [a3]),
        "zyx_rate_matrix": (sp.zyx_rate_matrix, [a3]),
        "zyx_rate_matrix_inverse": (sp.zyx_rate_matrix_inverse, [a3]),
        "euler_zyz_rate_matrix": (sp.euler_zyz_rate_matrix, [a3]),
        "euler_zyz_rate_matrix_inverse": (sp.euler_zyz_rate_matrix_inverse, [a3]),
        "quat_to_matrix": (sp.quat_to_matrix, [q]), "matrix_to_quat": (sp.matrix_to_quat, [R]),
        "quat_multiply": (sp.quat_multiply, [q, q[::-1]]),
        "quat_conjugate": (sp.quat_conjugate, [q]), "quat_inverse": (sp.quat_inverse, [2 * q]),
        "quat_normalize": (sp.quat_normalize, [2 * q]), "quat_rotate": (sp.quat_rotate, [q, v3]),
        "quat_from_axis_angle": (sp.quat_from_axis_angle, [v3, ang]),
        "quat_to_axis_angle": (sp.quat_to_axis_angle, [q]),
        "quat_derivative_body": (partial(sp.quat_derivative, frame="body"), [q, v3]),
        "quat_derivative_world": (partial(sp.quat_derivative, frame="world"), [q, v3]),
        "quat_angular_velocity": (partial(sp.quat_angular_velocity, frame="world"), [q, q[::-1]]),
        "exp6": (sp.exp6, [v6]), "log6": (sp.log6, [R, p]), "pose_inverse": (sp.pose_inverse, [R, p]),
        "transform": (sp.transform, [R, p]), "transform_inverse": (sp.transform_inverse, [T]),
        "transform_point": (sp.transform_point, [T, v3]),
        "transform_compose": (sp.transform_compose, [T, T[::-1]]),
        "motion_transform": (sp.motion_transform, [R, p]),
        "motion_transform_inverse": (sp.motion_transform_inverse, [R, p]),
        "force_transform": (sp.force_transform, [R, p]),
        "cross_motion": (sp.cross_motion, [v6]), "cross_force": (sp.cross_force, [v6]),
        "spatial_inertia": (sp.spatial_inertia, [np.arange(1.0, 7.0), v3, rand_spd(6, 44)]),
        "inertia_parameters": (sp.inertia_parameters, [I6]),
        "inertia_transform": (sp.inertia_transform, [R, p, I6]),
        "kinetic_energy": (sp.kinetic_energy, [I6, v6]),
    }


BATCH = _batch_inputs()


def _outputs(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("name", BATCH)
def test_batch_equals_loop(name):
    fn, args = BATCH[name]
    batch = _outputs(fn(*args))
    for i in range(6):
        for b, s in zip(batch, _outputs(fn(*[a[i] for a in args]))):
            assert np.shape(s) == b.shape[1:]
            close(b[i], s, atol=1e-13)
    # two batch axes give the same stack
    for b, b2 in zip(batch, _outputs(fn(*[a.reshape((2, 3) + a.shape[1:]) for a in args]))):
        close(b2.reshape(b.shape), b, atol=1e-13)


def test_batch_axes_broadcast_between_arguments():
    R, p = random_poses(6, 45)
    close(sp.motion_transform(R, p[0]), sp.motion_transform(R, np.broadcast_to(p[0], p.shape)))
    close(sp.quat_rotate([0, 0, 0, 1.0], p), p)
    close(sp.rotx(np.zeros((2, 4))), np.broadcast_to(E3, (2, 4, 3, 3)))


def test_api_is_complete():
    required = """skew unskew rotx roty rotz axis_angle_to_matrix matrix_to_axis_angle rpy_to_matrix
    matrix_to_rpy zyx_to_matrix matrix_to_zyx euler_zyz_to_matrix matrix_to_euler_zyz quat_to_matrix
    matrix_to_quat quat_multiply quat_conjugate quat_inverse quat_normalize quat_rotate
    quat_from_axis_angle quat_to_axis_angle quat_derivative quat_angular_velocity rpy_rate_matrix
    rpy_rate_matrix_inverse euler_zyz_rate_matrix euler_zyz_rate_matrix_inverse exp3 log3 exp6 log6
    transform transform_inverse transform_point transform_compose motion_transform force_transform
    motion_transform_inverse cross_motion cross_force spatial_inertia inertia_parameters
    inertia_transform kinetic_energy""".split()
    assert set(required) <= set(sp.__all__)
    assert set(sp.__all__) <= set(BATCH) | {"quat_derivative", "quat_angular_velocity"}


# ------------------------------------------------------------- bad inputs

Q = np.array([0.0, 0.0, 0.0, 1.0])
BAD = [
    (sp.skew, ([1.0, 2.0, 3.0, 4.0],), r"v: expected shape \(\.\.\., 3\), got \(4,\)"),
    (sp.skew, (1.0,), r"v: expected shape \(\.\.\., 3\), got \(\)"),
    (sp.quat_to_matrix, (np.zeros(3),), r"quat: expected shape \(\.\.\., 4\), got \(3,\)"),
    (sp.matrix_to_quat, (np.eye(4),), r"R: expected shape \(\.\.\., 3, 3\), got \(4, 4\)"),
    (sp.kinetic_energy, (np.eye(6), np.zeros(3)), r"v: expected shape \(\.\.\., 6\), got \(3,\)"),
    (sp.inertia_transform, (E3, np.zeros(3), np.eye(3)), r"I6: expected shape \(\.\.\., 6, 6\)"),
    (sp.quat_to_matrix, ([0, 0, 0, 2.0],), "quat: not unit norm"),
    (sp.quat_to_matrix, ([[0, 0, 0, 1.0], [0, 0, 0, 0.9]],), "quat: not unit norm"),
    (sp.quat_rotate, ([0, 0, 0, 1.1], [1.0, 0, 0]), "quat: not unit norm"),
    (sp.quat_to_axis_angle, ([0, 0, 0, 0.5],), "quat: not unit norm"),
    (sp.exp3, ([np.nan, 0, 0],), "omega: .*non-finite"),
    (sp.log6, (E3, [np.inf, 0, 0]), "p: .*non-finite"),
    (sp.quat_to_matrix, ([[0, 0, 0, 1.0], [np.nan, 0, 0, 1]],), "quat: .*non-finite"),
    (sp.rotx, ("abc",), "angle: expected a real array"),
    (sp.rotx, (1 + 1j,), "angle: .*complex"),
    (sp.axis_angle_to_matrix, (np.zeros(3), 1.0), "axis: zero-length axis"),
    (sp.quat_from_axis_angle, ([[1.0, 0, 0], [0, 0, 0]], 1.0), "axis: zero-length axis"),
    (sp.quat_normalize, (np.zeros(4),), "quat: zero norm"),
    (sp.quat_inverse, (np.zeros(4),), "quat: zero norm"),
    (sp.quat_angular_velocity, (np.zeros(4), Q), "quat: zero norm"),
    (partial(sp.quat_derivative, frame="space"), (Q, np.zeros(3)), "frame: expected 'body' or 'world'"),
    (partial(sp.quat_angular_velocity, frame=None), (Q, Q), "frame:"),
    (sp.motion_transform, (np.stack([E3, E3]), np.zeros((3, 3))),
     r"batch axes do not broadcast: R \(2, 3, 3\), p \(3, 3\)"),
    (sp.quat_multiply, (np.tile(Q, (2, 1)), np.tile(Q, (3, 1))), r"batch axes .*a \(2, 4\), b \(3, 4\)"),
    (sp.transform_inverse, (np.zeros((4, 4)),), r"T: last row must be \[0, 0, 0, 1\]"),
    (sp.transform_compose, (np.eye(4), np.zeros((4, 4))), "T2: last row"),
    (sp.transform_point, (np.zeros((4, 4)), np.zeros(3)), "T: last row"),
    (sp.spatial_inertia, (-1.0, np.zeros(3), E3), "mass: must be non-negative"),
    (sp.spatial_inertia, (1.0, np.zeros(3), [[1, 1, 0], [0, 1, 0], [0, 0, 1.0]]), "inertia_com: .*symmetric"),
    (sp.inertia_parameters, (np.zeros((6, 6)),), "I6: mass must be positive"),
]


@pytest.mark.parametrize("fn, args, match", BAD)
def test_bad_input_raises_value_error_naming_argument(fn, args, match):
    with pytest.raises(ValueError, match=match):
        fn(*args)
