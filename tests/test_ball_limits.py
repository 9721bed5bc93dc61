"""Ball-joint limits: the swing-twist decomposition (linkdyn.contact.swing_twist) against an
independent construction (scipy rotations), the source notes' eqs. 27-29 (eq. 28 checked, eq. 29
as printed shown wrong, its correction checked), gaps / rows / drift of Spherical and
SphericalZYX joints (tilted and elliptical cones, offset plug axes) against finite differences
along motions, the singular points, projection inside the limits, the joint API, the MJCF
mapping of a ball joint's range (against MuJoCo's own limit distance when MuJoCo is installed),
and the anatomical limits of the human figures at the scenes' starting configurations."""
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.spatial.transform import Rotation

import linkdyn as ld
from linkdyn.contact import swing_twist as st
from linkdyn.model import joints as J
from linkdyn.model.mjcf import MJCFWarning, parse_mjcf
from linkdyn.models import human as H

RNG = np.random.default_rng(20240611)
PI = math.pi


# ----------------------------------------------------------------------------------- helpers
def rot(axis, angle):
    """Rotation matrix by scipy (independent of linkdyn)."""
    a = np.asarray(axis, dtype=float)
    return Rotation.from_rotvec(a / np.linalg.norm(a) * angle).as_matrix()


def rz(t):
    return rot([0, 0, 1], t)


def quat(R):
    """[x, y, z, w] by scipy."""
    return Rotation.from_matrix(R).as_quat()


def qmul(a, b):
    return (Rotation.from_quat(a) * Rotation.from_quat(b)).as_quat()


def qexp(w):
    """Quaternion of the rotation vector w, sign chosen continuous at 0 (w component > 0)."""
    th = np.linalg.norm(w)
    if th == 0:
        return np.array([0.0, 0.0, 0.0, 1.0])
    return np.r_[w / th * np.sin(th / 2), np.cos(th / 2)]


def qprod(a, b):
    """Hamilton product [x, y, z, w] keeping signs (for smooth quaternion curves)."""
    av, aw, bv, bw = a[:3], a[3], b[:3], b[3]
    return np.r_[aw * bv + bw * av + np.cross(av, bv), aw * bw - av @ bv]


def zyx_matrix(a):
    return rz(a[0]) @ rot([0, 1, 0], a[1]) @ rot([1, 0, 0], a[2])


def joint_rotation(joint, qj):
    if joint.kind == J.SPHERICAL:
        return Rotation.from_quat(qj).as_matrix()
    return zyx_matrix(qj)


def joint_q(joint, R):
    """The joint's coordinates of the rotation R (quaternion or ZYX angles)."""
    if joint.kind == J.SPHERICAL:
        return quat(R)
    z, y, x = Rotation.from_matrix(R).as_euler("ZYX")
    return np.array([z, y, x])


def from_limit_frame(joint, swing_vec, twist):
    """Joint coordinates whose R' = C^T R C_p is R_swing(swing_vec) R_z(twist)."""
    th = np.linalg.norm(swing_vec)
    Rs = rot([swing_vec[0], swing_vec[1], 0.0], th) if th > 0 else np.eye(3)
    Rp = Rs @ rz(twist)
    return joint_q(joint, joint.cone_frame @ Rp @ joint.plug_frame.T)


def motion(joint, q, v, a=None):
    """q(t) with velocity v and acceleration a at t = 0 (body angular velocity for Spherical)."""
    a = np.zeros(3) if a is None else a
    if joint.kind == J.SPHERICAL:
        return lambda t: qprod(q, qexp(v * t + 0.5 * a * t * t))
    return lambda t: q + v * t + 0.5 * a * t * t


JOINTS = {
    "circle": J.Spherical(swing=1.0, twist=(-0.7, 1.1)),
    "ellipse_tilted": J.Spherical(swing=(1.3, 0.6), twist=(-0.5, 0.8), axis=[0.4, -0.3, 1.0]),
    "ellipse_plug": J.Spherical(swing=(0.9, 1.5), twist=(-1.2, 0.3), axis=[1.0, 0.2, -0.5], plug_axis="-z"),
    "zyx_ellipse": J.SphericalZYX(swing=(1.2, 0.7), twist=(-0.9, 0.6), axis=[0.3, 1.0, 0.2]),
    "zyx_plug": J.SphericalZYX(swing=1.1, twist=(-0.4, 1.0), axis="x", plug_axis=[1.0, 0.5, 0.3]),
    "swing_only": J.Spherical(swing=(0.8, 1.2), axis="-y"),
    "twist_only": J.SphericalZYX(twist=(-1.0, 2.0), axis=[0, 1, 1]),
}


def random_limit_state(joint, lo_frac=0.55, hi=2.6):
    """Coordinates with the swing between lo_frac * min(a, b) and ``hi`` (off both singular
    points) and a random twist."""
    a, b = joint.swing_ab or (1.0, 1.0)
    th = RNG.uniform(lo_frac * min(a, b), min(hi, 1.3 * max(a, b)))
    ph = RNG.uniform(-PI, PI)
    return from_limit_frame(joint, th * np.array([np.cos(ph), np.sin(ph)]), RNG.uniform(-PI + 0.05, PI - 0.05))


# ------------------------------------------------------------------------ the decomposition
def test_swing_twist_recovers_an_independent_construction():
    for _ in range(400):
        th = RNG.uniform(0.0, PI - 0.05)
        ph = RNG.uniform(-PI, PI)
        tw = RNG.uniform(-PI + 1e-6, PI - 1e-6)
        axis = np.array([np.cos(ph), np.sin(ph), 0.0])
        R = rot(axis, th) @ rz(tw)
        vec, twist = st.swing_twist(R)
        assert np.allclose(vec, th * axis[:2], atol=1e-12, rtol=0)
        assert twist == pytest.approx(tw, abs=1e-12)
        s, t = st.swing_twist_angles(R)
        assert s == pytest.approx(th, abs=1e-12) and t == pytest.approx(tw, abs=1e-12)
        # the plug's z axis leans towards (v_y, -v_x) by the swing angle
        if th > 1e-6:
            lean = R[:2, 2] / np.linalg.norm(R[:2, 2])
            assert np.allclose(lean, np.array([vec[1], -vec[0]]) / th, atol=1e-9)
        assert np.allclose(st.rotation_from_swing_twist(vec, twist), R, atol=1e-12)
    # tiny and zero swings, pure twists
    for th in (0.0, 1e-12, 1e-8):
        vec, twist = st.swing_twist(rot([1, 1, 0], th) @ rz(0.3) if th else rz(0.3))
        assert np.linalg.norm(vec) == pytest.approx(th, abs=1e-15) and twist == pytest.approx(0.3, abs=1e-14)


def test_swing_of_pi_has_no_nan():
    R = rot([1, 0, 0], PI) @ rz(0.7)       # the plug's z axis against the socket's
    vec, twist = st.swing_twist(R)
    assert np.isfinite(vec).all() and np.isfinite(twist)
    assert np.linalg.norm(vec) == pytest.approx(PI) and twist == 0.0
    assert np.allclose(st.rotation_from_swing_twist(vec, twist), R, atol=1e-12)   # all of it in the swing


def eq28(R):
    """The source notes' eq. 28 as printed."""
    zx, zy, zz = R[2]
    return np.array([[zy ** 2 / (1 + zz) + zz, -zy * zx / (1 + zz), -zx],
                     [-zy * zx / (1 + zz), zx ** 2 / (1 + zz) + zz, -zy],
                     [zx, zy, zz]])


def eq29_printed(R):
    """The argument of the arccosine of eq. 29, exactly as printed (parentheses included)."""
    (xx, xy, xz), _, (zx, zy, zz) = R
    return zy ** 2 * xx + (1 + zz) * zz * xx - zy * zx * xy - (1 + zz * zx * xz) / (1 + zz)


def eq29_corrected(R):
    (xx, xy, xz), _, (zx, zy, zz) = R
    return (zy ** 2 * xx + (1 + zz) * zz * xx - zy * zx * xy - (1 + zz) * zx * xz) / (1 + zz)


def test_eq27_and_eq28_of_the_source_notes():
    for _ in range(200):
        R = Rotation.random(random_state=RNG).as_matrix()
        if R[2, 2] < -0.95:
            continue
        swing, twist = st.swing_twist_angles(R)
        assert swing == pytest.approx(math.acos(R[2, 2]), abs=1e-9)              # eq. 27
        M = eq28(R)
        assert np.allclose(M @ M.T, np.eye(3), atol=1e-12) and np.linalg.det(M) == pytest.approx(1.0)
        assert np.allclose(M @ R[2], [0, 0, 1], atol=1e-12)      # takes R^T e_z (socket z seen from the plug) to z
        assert abs(M[0, 1] - M[1, 0]) < 1e-15                    # its axis lies in the xy-plane
        assert math.acos(np.clip(M[2, 2], -1, 1)) == pytest.approx(swing, abs=1e-9)   # by the swing angle
        Q = R @ M.T                                              # what is left: a rotation about z ...
        assert np.allclose(Q[2], [0, 0, 1], atol=1e-12) and np.allclose(Q[:, 2], [0, 0, 1], atol=1e-12)
        assert math.atan2(Q[1, 0], Q[0, 0]) == pytest.approx(twist, abs=1e-10)    # ... by the twist
        assert eq29_corrected(R) == pytest.approx(math.cos(twist), abs=1e-10)


def test_eq29_as_printed_is_wrong():
    # at R = I (no swing, no twist) the printed expression is 1.5: no real arccosine
    assert eq29_printed(np.eye(3)) == pytest.approx(1.5)
    with np.errstate(invalid="ignore"):
        assert np.isnan(np.arccos(eq29_printed(np.eye(3))))
    # a pure twist t: the printed formula gives 2 cos(t) - 1/2 instead of cos(t)
    assert eq29_printed(rz(0.4)) == pytest.approx(2 * math.cos(0.4) - 0.5)
    errs = []
    for _ in range(200):
        R = Rotation.random(random_state=RNG).as_matrix()
        if R[2, 2] < -0.9:
            continue
        errs.append(abs(eq29_printed(R) - math.cos(st.swing_twist_angles(R)[1])))
    assert np.median(errs) > 0.1                               # wrong almost everywhere
    assert max(errs) > 0.5


# --------------------------------------------------------------------------- gaps and rows
def test_gap_definitions():
    j = J.Spherical(swing=0.8, twist=(-0.3, 0.5))
    for th, tw in ((0.2, 0.1), (0.9, -0.4), (0.5, 0.7)):
        g = st.ball_limit_gaps(j, quat(rot([1, 2, 0], th) @ rz(tw)))
        assert np.allclose(g, [0.8 - th, tw + 0.3, 0.5 - tw], atol=1e-12)
    assert st.ball_limit_names(j) == ["swing", "twist.lower", "twist.upper"]
    # a twist in the forbidden arc (0.5, 2 pi - 0.3) reports the nearer bound as violated
    g = st.ball_limit_gaps(j, quat(rz(2.0)))
    assert g[2] == pytest.approx(0.5 - 2.0) and g[1] > 0
    g = st.ball_limit_gaps(j, quat(rz(-2.5)))                 # = 3.78: nearer to -0.3 (+2 pi)
    assert g[1] == pytest.approx(-2.5 + 0.3) and g[2] > 0


def test_elliptical_gap_is_zero_on_the_ellipse_and_angular_distance_near_it():
    j = J.Spherical(swing=(1.2, 0.5), axis=[0.2, 0.1, 1.0])
    a, b = j.swing_ab
    for phi in np.linspace(-PI, PI, 13):
        tmax = a * b / math.sqrt((b * math.cos(phi)) ** 2 + (a * math.sin(phi)) ** 2)
        lean = np.array([math.cos(phi), math.sin(phi)])        # the plug axis leans this way ...
        sv = np.array([-lean[1], lean[0]])                      # ... for this swing vector direction
        on = st.ball_limit_gaps(j, from_limit_frame(j, tmax * sv, 0.3))[0]
        assert on == pytest.approx(0.0, abs=1e-12)
        assert st.ball_limit_gaps(j, from_limit_frame(j, 0.97 * tmax * sv, -1.0))[0] > 0
        assert st.ball_limit_gaps(j, from_limit_frame(j, 1.03 * tmax * sv, 2.0))[0] < 0
        # near the boundary the gap is the angular distance of the plug's axis to it (1st order)
        d = 1e-4
        g = st.ball_limit_gaps(j, from_limit_frame(j, (tmax - d) * sv, 0.0))[0]
        p = np.array([math.sin(tmax - d) * math.cos(phi), math.sin(tmax - d) * math.sin(phi), math.cos(tmax - d)])

        def dist(ps):                                           # from p to the boundary point at ps
            tm = a * b / np.sqrt((b * np.cos(ps)) ** 2 + (a * np.sin(ps)) ** 2)
            x = np.stack([np.sin(tm) * np.cos(ps), np.sin(tm) * np.sin(ps), np.cos(tm)], -1)
            return np.arctan2(np.linalg.norm(np.cross(x, p), axis=-1), x @ p)
        ps = np.linspace(phi - 0.3, phi + 0.3, 6001)
        k = int(np.argmin(dist(ps)))
        best = minimize_scalar(dist, bounds=(ps[k - 1], ps[k + 1]), method="bounded",
                               options=dict(xatol=1e-13)).fun
        assert g == pytest.approx(best, rel=3e-4)          # (the radial margin d is off by up to 50 %)


@pytest.mark.parametrize("name", JOINTS)
def test_rows_are_the_gap_rates(name):
    j = JOINTS[name]
    for _ in range(25):
        q = random_limit_state(j)
        v = RNG.standard_normal(3)
        gaps, rows, drift = st.ball_limit_rows(j, q)
        assert rows.shape == (len(st.ball_limit_names(j)), 3) and callable(drift)
        assert np.allclose(gaps, st.ball_limit_gaps(j, q), atol=1e-14)
        path, h = motion(j, q, v), 1e-6
        fd = (st.ball_limit_gaps(j, path(h)) - st.ball_limit_gaps(j, path(-h))) / (2 * h)
        assert np.allclose(rows @ v, fd, atol=2e-7 * (1 + np.abs(fd)))


@pytest.mark.parametrize("name", JOINTS)
def test_drift_is_the_second_derivative_along_a_trajectory(name):
    j = JOINTS[name]
    for _ in range(20):
        q = random_limit_state(j)
        v, acc = RNG.standard_normal(3), RNG.standard_normal(3)
        _, rows, drift_fn = st.ball_limit_rows(j, q)
        drift = st.ball_limit_drift(j, q, v)
        assert np.allclose(drift_fn(v), drift, atol=0)
        path = motion(j, q, v, acc)

        def second_difference(h):
            g0, gp, gm = (st.ball_limit_gaps(j, path(t)) for t in (0.0, h, -h))
            return (gp - 2 * g0 + gm) / h ** 2
        dd = (4 * second_difference(2e-4) - second_difference(4e-4)) / 3      # Richardson: O(h^4)
        assert np.allclose(rows @ acc + drift, dd, atol=1e-5 * (1 + np.abs(dd)))


def test_rows_far_inside_an_elliptical_cone_are_those_of_the_swing():
    j = J.Spherical(swing=(1.2, 0.6), axis=[0.3, 0.0, 1.0])
    for _ in range(10):
        ph = RNG.uniform(-PI, PI)
        q = from_limit_frame(j, RNG.uniform(0.02, 0.28) * np.array([np.cos(ph), np.sin(ph)]), 0.2)
        v = RNG.standard_normal(3)
        gaps, rows, _ = st.ball_limit_rows(j, q)
        assert gaps[0] > 0.3
        path, h = motion(j, q, v), 1e-6
        sw = [st.swing_twist_angles(st.limit_rotation(j, path(t)))[0] for t in (h, -h)]
        assert rows[0] @ v == pytest.approx(-(sw[0] - sw[1]) / (2 * h), abs=1e-7)
        assert np.linalg.norm(rows[0]) == pytest.approx(1.0)      # child-frame angular velocity: a unit row


def test_singular_points():
    j = J.Spherical(swing=(1.0, 0.6), twist=(-0.5, 0.4), axis=[0.2, 0.3, 1.0])
    # swing exactly 0: exact gap, a unit row, finite drift
    q = from_limit_frame(j, np.zeros(2), 0.1)
    gaps, rows, drift = st.ball_limit_rows(j, q)
    assert np.isfinite(gaps).all() and np.isfinite(rows).all() and np.isfinite(drift(RNG.standard_normal(3))).all()
    # (the elliptical gap's value at the cone's centre depends on the direction it is approached
    # from, between the two half-angles: far from any bound)
    assert 0.6 - 1e-12 <= gaps[0] <= 1.0 + 1e-12 and np.linalg.norm(rows[0]) == pytest.approx(1.0)
    assert st.ball_limit_gaps(J.Spherical(0.7), [0, 0, 0, 1.0])[0] == 0.7
    assert gaps[1:] == pytest.approx([0.6, 0.3])
    # swing = pi: the twist is undefined; no NaN, twist units at their half-range, zero rows
    for jj in (j, J.SphericalZYX(swing=(1.0, 0.6), twist=(-0.5, 0.4)), J.Spherical(twist=(-0.5, 0.4))):
        q = from_limit_frame(jj, np.array([PI, 0.0]), 0.0)
        gaps, rows, drift = st.ball_limit_rows(jj, q)
        assert np.isfinite(gaps).all() and np.isfinite(rows).all() and np.isfinite(drift(RNG.standard_normal(3))).all()
        assert gaps[-2:] == pytest.approx([0.45, 0.45]) and not rows[-2:].any()
        if jj.swing is not None:
            assert gaps[0] < 0
    # no limits: nothing
    g, r, d = st.ball_limit_rows(J.Spherical(), [0, 0, 0, 1])
    assert g.shape == (0,) and r.shape == (0, 3) and d is None


def test_quaternion_norm_and_sign_do_not_matter():
    j = JOINTS["ellipse_plug"]
    q = random_limit_state(j)
    v = RNG.standard_normal(3)
    g, r, _ = st.ball_limit_rows(j, q)
    for s in (-1.0, 2.5):
        g2, r2, _ = st.ball_limit_rows(j, s * q)
        assert np.allclose(g2, g, atol=1e-13) and np.allclose(r2, r, atol=1e-12)
        assert np.allclose(st.ball_limit_drift(j, s * q, v), st.ball_limit_drift(j, q, v), atol=1e-10)


def test_limit_rotation_is_CT_R_Cp_and_q0_is_a_pure_swing():
    for j in JOINTS.values():
        q = random_limit_state(j)
        R = joint_rotation(j, q)
        assert np.allclose(st.limit_rotation(j, q), j.cone_frame.T @ R @ j.plug_frame, atol=1e-12)
        q0 = [0, 0, 0, 1.0] if j.kind == J.SPHERICAL else np.zeros(3)
        sw, tw = st.swing_twist_angles(st.limit_rotation(j, q0))
        assert tw == pytest.approx(0.0, abs=1e-12)
        c, p = j.cone_axis, j.plug_axis
        assert sw == pytest.approx(math.atan2(np.linalg.norm(np.cross(c, p)), c @ p), abs=1e-12)


# ------------------------------------------------------------------------------- projection
@pytest.mark.parametrize("name", JOINTS)
def test_project_inside(name):
    j = JOINTS[name]
    for _ in range(20):
        q = random_limit_state(j, lo_frac=0.0, hi=3.0)
        for margin in (0.0, 0.05):
            p = st.project_inside(j, q, margin)
            g = st.ball_limit_gaps(j, p)
            assert (g >= margin - 1e-9).all()
            assert np.allclose(st.project_inside(j, p, margin), p)          # idempotent
            if (st.ball_limit_gaps(j, q) >= margin).all():
                assert np.array_equal(p, q)
            if j.kind == J.SPHERICAL:
                assert p @ q >= 0 and np.linalg.norm(p) == pytest.approx(np.linalg.norm(q))
            else:
                assert np.all(np.abs(p - q) <= PI + 1e-9)                    # the nearest branch
    # a circular cone: the swing is moved back to the bound along its own direction
    j = J.Spherical(swing=0.5)
    p = st.project_inside(j, quat(rot([1, 0, 0], 0.9) @ rz(0.2)))
    vec, tw = st.swing_twist(Rotation.from_quat(p).as_matrix())
    assert np.allclose(vec, [0.5, 0.0]) and tw == pytest.approx(0.2)
    with pytest.raises(ValueError, match="margin"):
        st.project_inside(j, [0, 0, 0, 1.0], margin=0.6)


# ------------------------------------------------------------------------------ the joints
def test_joint_api():
    assert repr(J.Spherical()) == "Spherical()" and repr(J.SphericalZYX()) == "SphericalZYX()"
    j = J.Spherical(swing=(0.5, 0.25), twist=(-0.1, 0.2), axis="-z", plug_axis=[0, 1, -1])
    r = repr(j)
    assert "swing=(0.5, 0.25)" in r and "twist=(-0.1, 0.2)" in r and "axis=[0.0, 0.0, -1.0]" in r and "plug_axis" in r
    assert j.swing == (0.5, 0.25) and j.twist == (-0.1, 0.2) and j.limited and not J.Spherical().limited
    assert J.Spherical().swing is None and J.Spherical().twist is None and J.Spherical(0.3).swing_ab == (0.3, 0.3)
    assert np.allclose(j.cone_frame @ [0, 0, 1], [0, 0, -1])
    assert np.allclose(j.plug_axis, [0, 1 / 2 ** .5, -1 / 2 ** .5])
    assert np.allclose(J.Spherical().axis, 0) and j.nq == 4 and J.SphericalZYX(0.3).nq == 3
    for attr, val in (("swing", 1.0), ("twist", None), ("axis", np.zeros(3))):
        with pytest.raises(AttributeError, match="immutable"):
            setattr(j, attr, val)
    with pytest.raises(ValueError):
        j.cone_frame[0, 0] = 2.0                                   # read-only arrays
    # a 3x3 axis fixes the direction of a; a vector axis takes the socket's x made perpendicular
    C = rot([0, 0, 1], 0.3)
    assert np.allclose(J.Spherical((0.5, 0.2), axis=C).cone_frame, C)
    assert np.allclose(J.Spherical(axis="x").cone_frame[:, 0], [0, 1, 0])
    # the limits reach the model through its joints
    b = ld.ModelBuilder()
    b.add_body("a", "world", j, inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3)))
    m = b.build()
    assert m.joints[1].swing == (0.5, 0.25) and np.isinf(m.lower).all()


@pytest.mark.parametrize("kwargs, match", [
    (dict(swing=0.0), r"swing: every half-angle must be in \(0, pi\)"),
    (dict(swing=PI), r"swing: every half-angle must be in \(0, pi\)"),
    (dict(swing=(0.5, -0.1)), r"swing: every half-angle"),
    (dict(swing=(0.5, 0.4, 0.3)), r"swing: expected None, a cone half-angle"),
    (dict(swing="wide"), r"swing: expected None, a cone half-angle"),
    (dict(swing=True), r"swing: expected None"),
    (dict(swing=float("nan")), r"swing: expected a finite number"),
    (dict(twist=0.5), r"twist: expected None or a pair \(lo, hi\)"),
    (dict(twist=(0.5, 0.1)), r"-pi < lo < hi < pi"),
    (dict(twist=(-4.0, 0.1)), r"-pi < lo < hi < pi"),
    (dict(twist=(-0.1, PI)), r"-pi < lo < hi < pi"),
    (dict(twist=("a", 1.0)), r"twist: expected a number"),
    (dict(axis="w"), r"axis: expected 'x', 'y', 'z'"),
    (dict(axis=[0, 0, 0]), r"axis: must be a finite non-zero vector"),
    (dict(axis=np.eye(3) * 2), r"axis: a 3x3 axis must be a rotation matrix"),
    (dict(axis=np.diag([1.0, 1.0, -1.0])), r"axis: a 3x3 axis must be a rotation matrix"),
    (dict(plug_axis="-z"), r"plug_axis: must not point against the cone axis"),
    (dict(plug_axis=[1, 2]), r"plug_axis: expected a 3-vector"),
])
@pytest.mark.parametrize("cls", [J.Spherical, J.SphericalZYX])
def test_bad_arguments_raise(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(**kwargs)


def test_bad_calls_raise():
    with pytest.raises(ValueError, match="Spherical or SphericalZYX"):
        st.ball_limit_rows(J.Revolute(), [0.0])
    with pytest.raises(ValueError, match="q_joint: expected 4"):
        st.ball_limit_gaps(J.Spherical(0.5), [0, 0, 1.0])
    with pytest.raises(ValueError, match="q_joint: the quaternion is zero"):
        st.ball_limit_gaps(J.Spherical(0.5), np.zeros(4))
    with pytest.raises(ValueError, match="v_joint: expected 3"):
        st.ball_limit_drift(J.Spherical(0.5), [0, 0, 0, 1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="R: expected a finite 3x3"):
        st.swing_twist(np.eye(4))


# ------------------------------------------------------------------------------------ MJCF
def ball_xml(joint_attrs, compiler=""):
    return (f'<mujoco>{compiler}<worldbody><body name="b"><joint name="j" type="ball" {joint_attrs}/>'
            '<inertial pos="0 0 -0.5" mass="1" diaginertia="0.1 0.1 0.1"/></body></worldbody></mujoco>')


def test_mjcf_ball_range_becomes_a_swing_cone_and_twist_range(recwarn):
    m = parse_mjcf(ball_xml('range="0 60"'))                  # degrees by default
    j = m.joints[m.joint_id("j")]
    x60 = math.radians(60)
    assert j.swing == pytest.approx(x60) and j.twist == pytest.approx((-x60, x60))
    assert np.isinf(m.lower).all() and np.isinf(m.upper).all()
    assert not [w for w in recwarn if issubclass(w.category, MJCFWarning)]
    m = parse_mjcf(ball_xml('range="0 1.2" limited="true"', '<compiler angle="radian" autolimits="false"/>'))
    assert m.joints[m.joint_id("j")].swing == pytest.approx(1.2)
    for attrs, compiler in (('range="0 60" limited="false"', ""), ('range="0 180"', ""), ("", ""),
                            ('range="0 4"', '<compiler angle="radian"/>')):
        j = parse_mjcf(ball_xml(attrs, compiler)).joints[1]
        assert j.swing is None and j.twist is None and not j.limited
    with pytest.raises(ValueError, match="0 max-angle"):
        parse_mjcf(ball_xml('range="-10 60"'))


def test_mjcf_ball_limit_against_mujoco():
    mj = pytest.importorskip("mujoco")
    xml = ball_xml('range="0 60"')
    mm, d = mj.MjModel.from_xml_string(xml), None
    d = mj.MjData(mm)
    joint = parse_mjcf(xml).joints[1]

    def mujoco_dist(R):
        x, y, z, w = quat(R)
        d.qpos[:] = [w, x, y, z]
        mj.mj_forward(mm, d)
        lim = [d.efc_pos[k] for k in range(d.nefc) if d.efc_type[k] == mj.mjtConstraint.mjCNSTR_LIMIT_JOINT]
        return lim[0] if lim else None

    x60 = math.radians(60)
    for R in (rot([1, 0.4, 0], x60 + 0.2), rot([0, 0, 1], x60 + 0.1), rot([0, 0, -1], x60 + 0.3)):
        # a pure swing or a pure twist past the bound: the same distance as MuJoCo's
        ours = st.ball_limit_gaps(joint, quat(R)).min()
        assert ours < 0 and mujoco_dist(R) == pytest.approx(ours, abs=1e-9)
    for R in (rot([1, 0.4, 0], x60 - 0.1), rot([0, 0, 1], x60 - 0.1)):
        assert mujoco_dist(R) is None and st.ball_limit_gaps(joint, quat(R)).min() > 0
    # swing and twist of 50 deg each: a rotation of 69.9 deg, beyond MuJoCo's limit, inside ours
    R = rot([1, 0, 0], math.radians(50)) @ rz(math.radians(50))
    assert mujoco_dist(R) < 0 and st.ball_limit_gaps(joint, quat(R)).min() > 0


# ------------------------------------------------------------------------------ human figures
def limit_gaps(model, q):
    """{unit name: gap} of every joint limit of the model (coordinate limits and ball limits)."""
    out = {}
    for i in range(1, model.nbody):
        if model.is_virtual[i]:
            continue
        jn, qa, nq = model._joint_names[i], model.jnt_qadr[i], model.jnt_nq[i]
        j = model.joints[i]
        for k in range(nq):
            if np.isfinite(model.lower[qa + k]):
                out[f"{jn}[{k}].lower"] = q[qa + k] - model.lower[qa + k]
            if np.isfinite(model.upper[qa + k]):
                out[f"{jn}[{k}].upper"] = model.upper[qa + k] - q[qa + k]
        if j.kind in (J.SPHERICAL, J.SPHERICAL_ZYX) and j.limited:
            for nm, g in zip(st.ball_limit_names(j), st.ball_limit_gaps(j, q[qa:qa + nq])):
                out[f"{jn}.{nm}"] = g
    return out


@pytest.mark.parametrize("fig", [H.human_figure, H.human_figure_16])
def test_every_ball_joint_of_the_figures_has_a_cone_and_a_twist_range(fig):
    m = fig()
    balls = [i for i in range(1, m.nbody) if m.jnt_type[i] == J.SPHERICAL]
    assert len(balls) == (12 if fig is H.human_figure else 4)
    for i in balls:
        j = m.joints[i]
        assert j.swing is not None and j.twist is not None, m._joint_names[i]
        sl = slice(m.jnt_qadr[i], m.jnt_qadr[i] + 4)
        assert np.isneginf(m.lower[sl]).all() and np.isposinf(m.upper[sl]).all()
    for name in ("l_elbow", "r_elbow", "l_knee", "r_knee"):
        i = m.q_index(name)
        assert m.lower[i] == 0.0 and np.isfinite(m.upper[i])


def scene_configurations():
    from linkdyn.models import scenarios as S
    m40, m16 = H.human_figure(), H.human_figure_16()
    swing_model, swing_q, _ = S.swing()
    return {"standing_40": (m40, H.standing_configuration(m40)),
            "standing_16": (m16, H.standing_configuration(m16)),
            "high_bar": S.high_bar(), "high_bar_swung": S.high_bar(swing=-0.8),
            "figure_on_bar_40": S.figure_on_bar_40(), "swing": (swing_model, swing_q),
            "drop": S.drop(), "drop_16": S.drop(figure=m16)}


def test_the_scenes_start_inside_every_limit():
    on_bound = set()
    for scene, (m, q) in scene_configurations().items():
        gaps = limit_gaps(m, q)
        bad = {k: g for k, g in gaps.items() if g < 0}
        assert not bad, f"{scene}: outside the limits: {bad}"
        for k, g in gaps.items():
            if ".swing" in k or ".twist" in k:
                assert g > math.radians(4.9), f"{scene}: {k} only {math.degrees(g):.2f} deg inside"
            elif g == 0.0:
                on_bound.add(k.split("[")[0])
    # elbows and knees start straight: at their lower limit (0), never beyond it
    assert on_bound == {"l_elbow", "r_elbow", "l_knee", "r_knee"}


def quat_about(axis, deg):
    return qexp(np.asarray(axis, float) / np.linalg.norm(axis) * math.radians(deg))


def range_along(joint, axis):
    """Degrees the joint turns about ``axis`` (joint frame) from q = 0 before leaving its limits."""
    for deg in np.arange(0.0, 180.0, 0.25):
        if st.ball_limit_gaps(joint, quat_about(axis, deg)).min() < 0:
            return deg
    return 180.0


@pytest.mark.parametrize("name, axis, expected", [
    ("waist", [0, 1, 0], 80), ("waist", [0, -1, 0], 25), ("waist", [0, 0, 1], 45),
    ("neck", [0, 1, 0], 45), ("neck", [1, 0, 0], 45), ("neck", [0, 0, 1], 60),
    ("shoulder", [0, -1, 0], 180), ("shoulder", [0, 1, 0], 60),
    ("shoulder", [0, 0, 1], 90), ("shoulder", [0, 0, -1], 70),
    ("wrist", [0, -1, 0], 80), ("wrist", [0, 1, 0], 70), ("wrist", [1, 0, 0], 20), ("wrist", [-1, 0, 0], 30),
    ("wrist", [0, 0, -1], 150),
    ("hip", [0, -1, 0], 119), ("hip", [0, 0, 1], 45), ("hip", [0, 0, -1], 45),
    ("ankle", [0, 1, 0], 48), ("ankle", [0, 0, -1], 20), ("ankle", [0, 0, 1], 10),
    ("sternoclavicular", [1, 0, 0], 39.5), ("sternoclavicular", [-1, 0, 0], 9.5),
])
def test_anatomical_ranges_from_the_standing_posture(name, axis, expected):
    assert range_along(H.ball_joint(name, "l"), axis) == pytest.approx(expected, abs=1.0)


def test_right_side_is_the_mirror_image():
    P = np.diag([1.0, -1.0, 1.0])
    for name in H.BALL_LIMITS_DEG:
        jl, jr = H.ball_joint(name, "l"), H.ball_joint(name, "r")
        for _ in range(5):
            R = Rotation.random(random_state=RNG).as_matrix()
            assert np.allclose(st.ball_limit_gaps(jr, quat(P @ R @ P)), st.ball_limit_gaps(jl, quat(R))[[0, 2, 1]],
                               atol=1e-9)
    with pytest.raises(ValueError, match="side"):
        H.ball_joint("hip", "left")
