"""Ball-joint limits: the swing-twist decomposition (linkdyn.contact.swing_twist) against an
independent construction (scipy rotations), the source notes' eqs. 27-29 (eq. 28 checked, eq. 29
as printed shown wrong, its correction checked), gaps / rows / drift of Spherical and
SphericalZYX joints (tilted and elliptical cones, offset plug axes) against finite differences
along motions, the singular points, projection inside the limits, the joint API, the MJCF
mapping of a ball joint's range (against MuJoCo's own limit distance when MuJoCo is installed),
and the anatomical limits of the human figures at the scenes' starting configurations."""
import math
import zlib

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.spatial.transform import Rotation

import linkdyn as ld
from linkdyn.contact import swing_twist as st
from linkdyn.model import joints as J
from linkdyn.model.io.mjcf import MJCFWarning, parse_mjcf
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


# ------------------------------------------------- the pure-Python reference implementation
# The module's implementation before it was compiled, kept verbatim as the reference the
# compiled kernels are checked against: the gaps evaluated on second-order Taylor numbers
# ("jets") in pure Python (about 20 us a joint for the gaps and 0.35 ms for the rows), with the
# module's 4x4 frame map (st._L, unchanged).  One change: L @ q (the limit quaternion) is summed in
# the order of the compiled kernels instead of numpy's (BLAS) order.  An ulp of difference in it matters at the cone's centre: there the gap of
# an elliptical cone depends on the tilt's direction (it jumps at swing 0, far from any bound),
# and for a swing of 1e-13 an ulp of the quaternion turns that direction by about 1e-3.
EPS_SWING, EPS_TWIST = 1e-9, 1e-8


def _apply_L(L, x):
    """L @ x, each entry summed as L[i, 0] x[0] + L[i, 1] x[1] + L[i, 2] x[2] + L[i, 3] x[3]."""
    return np.array([L[i, 0] * x[0] + L[i, 1] * x[1] + L[i, 2] * x[2] + L[i, 3] * x[3] for i in range(4)])


class _Jet:
    __slots__ = ("a", "b", "c")

    def __init__(self, a, b, c):
        self.a, self.b, self.c = a, b, c

    def __add__(self, o):
        if isinstance(o, _Jet):
            return _Jet(self.a + o.a, self.b + o.b, self.c + o.c)
        return _Jet(self.a + o, self.b, self.c)

    __radd__ = __add__

    def __neg__(self):
        return _Jet(-self.a, -self.b, -self.c)

    def __sub__(self, o):
        return self + (-o)

    def __rsub__(self, o):
        return (-self) + o

    def __mul__(self, o):
        if isinstance(o, _Jet):
            return _Jet(self.a * o.a, self.a * o.b + o.a * self.b, self.a * o.c + 2.0 * self.b * o.b + o.a * self.c)
        return _Jet(self.a * o, self.b * o, self.c * o)

    __rmul__ = __mul__

    def _inv(self):
        a = self.a
        return _Jet(1.0 / a, -self.b / a ** 2, -self.c / a ** 2 + 2.0 * self.b ** 2 / a ** 3)

    def __truediv__(self, o):
        if isinstance(o, _Jet):
            return self * o._inv()
        return _Jet(self.a / o, self.b / o, self.c / o)

    def __rtruediv__(self, o):
        return self._inv() * o


def _val(u):
    return u.a if isinstance(u, _Jet) else u


def _chain(u, f0, f1, f2):
    return _Jet(f0, f1 * u.b, f1 * u.c + f2 * u.b ** 2)


def _sqrt(u):
    if not isinstance(u, _Jet):
        return math.sqrt(u)
    r = math.sqrt(u.a)
    return _chain(u, r, 0.5 / r, -0.25 / (r * u.a))


def _sin(u):
    if not isinstance(u, _Jet):
        return math.sin(u)
    s, c = math.sin(u.a), math.cos(u.a)
    return _chain(u, s, c, -s)


def _cos(u):
    if not isinstance(u, _Jet):
        return math.cos(u)
    s, c = math.sin(u.a), math.cos(u.a)
    return _chain(u, c, -s, -c)


def _atan2(y, x):
    if not isinstance(y, _Jet) and not isinstance(x, _Jet):
        return math.atan2(y, x)
    m = (y if isinstance(y, _Jet) else x).b.shape
    y = y if isinstance(y, _Jet) else _Jet(y, np.zeros(m), np.zeros(m))
    x = x if isinstance(x, _Jet) else _Jet(x, np.zeros(m), np.zeros(m))
    r2 = x.a * x.a + y.a * y.a
    num = x.a * y.b - y.a * x.b                       # r2 * d(angle)
    dnum = x.a * y.c - y.a * x.c                      # its derivative (x' y' - y' x' = 0)
    dr2 = 2.0 * (x.a * x.b + y.a * y.b)
    return _Jet(math.atan2(y.a, x.a), num / r2, dnum / r2 - num * dr2 / r2 ** 2)


def _const(value, m):
    return _Jet(value, np.zeros(m), np.zeros(m))


# ---------------------------------------------------------------------------------------------
# quaternions [x, y, z, w] as sequences (floats or jets)
def _qmul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return [aw * bx + bw * ax + ay * bz - az * by,
            aw * by + bw * ay + az * bx - ax * bz,
            aw * bz + bw * az + ax * by - ay * bx,
            aw * bw - ax * bx - ay * by - az * bz]


def _zyx_quat(z, y, x):
    """Quaternion of Rz(z) Ry(y) Rx(x) (floats or jets)."""
    qz = [0.0, 0.0, _sin(0.5 * z), _cos(0.5 * z)]
    qy = [0.0, _sin(0.5 * y), 0.0, _cos(0.5 * y)]
    qx = [_sin(0.5 * x), 0.0, 0.0, _cos(0.5 * x)]
    return _qmul(_qmul(qz, qy), qx)


def _limit_quat(joint, qj):
    """Quaternion of R' = C^T R C_p (floats or jets); qj: the joint's quaternion or angles."""
    q = list(qj) if joint.kind == J.SPHERICAL else _zyx_quat(*qj)
    L = st._L(joint)
    if not any(isinstance(x, _Jet) for x in q):
        return list(_apply_L(L, np.array(q, dtype=float)))
    m = next(x for x in q if isinstance(x, _Jet)).b.shape[0]
    q = [x if isinstance(x, _Jet) else _const(float(x), m) for x in q]
    a = _apply_L(L, np.array([x.a for x in q]))
    b = _apply_L(L, np.array([x.b for x in q]))
    c = _apply_L(L, np.array([x.c for x in q]))
    return [_Jet(a[i], b[i], c[i]) for i in range(4)]


def _ellipse_gap(c, si, theta, a, b):
    """(theta_max(phi) - theta) kappa(phi) for the tilt direction (cos phi, sin phi) = (c, si)."""
    D = b * b * c * c + a * a * si * si
    rD = _sqrt(D)
    tmax = a * b / rD
    r = -a * b * (a * a - b * b) * c * si / (D * rD) / _sin(tmax)      # theta_max' / sin(theta_max)
    return (tmax - theta) / _sqrt(1.0 + r * r)


def _tilt(x, y, z, w, s, n):
    """(cos, sin) of the direction the plug's axis leans towards: (R'_xz, R'_yz) / sin(swing)."""
    sn = s * n
    return (x * z + y * w) / sn, (y * z - x * w) / sn


def _ellipse_gap_value(x, y, z, w, s, n, theta, a, b):
    """The elliptical cone's gap as a float, also at the singular points (s or n ~ 0)."""
    if s == 0.0:
        c, si = 1.0, 0.0                 # no tilt: any direction (the gap jumps there, far inside)
    elif n < EPS_TWIST * math.hypot(s, n):
        c, si = y / s, -x / s            # swing ~ pi: the direction of the swing vector's tilt
    else:
        c, si = _tilt(x, y, z, w, s, n)
    return _ellipse_gap(c, si, theta, a, b)


def _gaps(joint, Q, m=None):
    """The gaps (floats, or jets along m directions) of the limit quaternion Q."""
    x, y, z, w = Q
    s2, n2 = x * x + y * y, z * z + w * w
    sv, nv = math.sqrt(_val(s2)), math.sqrt(_val(n2))
    norm = math.hypot(sv, nv)
    out = []
    if joint.swing is not None:
        a, b = joint.swing_ab
        theta_v = 2.0 * math.atan2(sv, nv)
        gv = a - theta_v if a == b else _ellipse_gap_value(_val(x), _val(y), _val(z), _val(w), sv, nv, theta_v, a, b)
        if m is None:
            g = gv
        elif sv < EPS_SWING * norm:
            # swing ~ 0: the exact gap with the row of the tilt towards the cone frame's x
            t = -2.0 * _atan2(y, _sqrt(n2))
            g = t + (gv - t.a)
        else:
            theta = 2.0 * _atan2(_sqrt(s2), _sqrt(n2))
            if a == b:
                g = a - theta
            elif theta_v < 0.5 * min(a, b) or nv < EPS_TWIST * norm:
                g = -theta + (gv + theta_v)          # far inside (or at swing ~ pi): the row of -swing
            else:
                c, si = _tilt(x, y, z, w, _sqrt(s2), _sqrt(n2))
                g = _ellipse_gap(c, si, theta, a, b)
        out.append(g)
    if joint.twist is not None:
        lo, hi = joint.twist
        mid, h = 0.5 * (lo + hi), 0.5 * (hi - lo)
        if nv < EPS_TWIST * norm:
            out += [h, h] if m is None else [_const(h, m), _const(h, m)]
        else:
            re, im = w * w - z * z, 2.0 * z * w              # (w + i z)^2 = n^2 e^{i twist}
            cm, sm = math.cos(mid), math.sin(mid)
            tc = _atan2(im * cm - re * sm, re * cm + im * sm)  # twist - mid, in (-pi, pi]
            out += [tc + h, h - tc]
    return out


def _jets(joint, q, dirs):
    """The joint's coordinates as jets along the columns of ``dirs`` (nq, m)."""
    m = dirs.shape[1]
    return [_Jet(float(q[i]), dirs[i].astype(float), np.zeros(m)) for i in range(len(q))]


def _directions(joint, q, v_cols):
    """dq for the velocity columns v_cols (nv, m): q (x) [v, 0] / 2 for a quaternion, v for angles."""
    if joint.kind == J.SPHERICAL_ZYX:
        return v_cols
    out = np.zeros((4, v_cols.shape[1]))
    for k in range(v_cols.shape[1]):
        out[:, k] = 0.5 * np.array(_qmul(list(q), [*v_cols[:, k], 0.0]))
    return out


def _evaluate(joint, q, v_cols):
    qj = _jets(joint, q, _directions(joint, q, v_cols))
    return _gaps(joint, _limit_quat(joint, qj), v_cols.shape[1])


def ref_gaps(joint, q):
    return np.array([float(g) for g in _gaps(joint, _limit_quat(joint, np.asarray(q, dtype=float)))])


def ref_rows(joint, q):
    gs = _evaluate(joint, np.asarray(q, dtype=float), np.eye(3))
    return np.array([g.a for g in gs]), np.array([g.b for g in gs]).reshape(-1, 3)


def ref_drift(joint, q, v):
    return np.array([g.c[0] for g in _evaluate(joint, np.asarray(q, dtype=float), np.asarray(v, dtype=float)[:, None])])


# ------------------------------------------------------ compiled kernels against the reference
MORE_JOINTS = {
    "circle_tilted_plug": J.Spherical(swing=0.9, twist=(-0.3, 0.6), axis=[0.2, -0.5, 1.0], plug_axis=[0.3, 0.1, 1.0]),
    "zyx_circle_tilted": J.SphericalZYX(swing=0.7, twist=(-2.0, 0.4), axis=[1.0, -0.4, 0.3]),
    "wide_ellipse_matrix_axis": J.Spherical(swing=(2.5, 0.3), twist=(-0.2, 2.9), axis=rot([1, 2, 3], 0.8)),
    "zyx_wide_ellipse_plug": J.SphericalZYX(swing=(0.4, 2.2), axis="-x", plug_axis=[0.2, 1.0, 0.0]),
    "twist_only_plug": J.Spherical(twist=(-2.9, 2.9), axis="y", plug_axis="x"),
    "unlimited": J.Spherical(),
}
ALL_JOINTS = {**JOINTS, **MORE_JOINTS}


def sample_states(joint, n, rng):
    """n joint configurations over the whole sphere, near swing 0, near swing pi, near the far-inside
    threshold of an elliptical cone (half the smallest half-angle) and near the cone's boundary; a
    quaternion with a random norm and sign, ZYX angles with random turns added."""
    a, b = joint.swing_ab or (1.0, 1.0)
    out = []
    for i in range(n):
        kind = i % 6
        ph = rng.uniform(-PI, PI)
        tw = rng.uniform(-PI, PI)
        if kind == 0:
            q = joint_q(joint, Rotation.random(random_state=rng).as_matrix())
        else:
            if kind == 1:
                th = 0.0 if rng.random() < 0.1 else 10 ** rng.uniform(-16, -3)
            elif kind == 2:
                th = PI - 10 ** rng.uniform(-12, -1)
            elif kind == 3:
                th = 0.5 * min(a, b) * (1 + rng.choice([-1, 1]) * 10 ** rng.uniform(-10, -1))
            elif kind == 4:
                tmax = a * b / math.hypot(b * math.cos(ph), a * math.sin(ph))
                th = min(tmax * (1 + rng.uniform(-0.1, 0.1)), PI)
            else:
                th = rng.uniform(0.0, PI)
            lean = np.array([math.cos(ph), math.sin(ph)])
            q = from_limit_frame(joint, th * np.array([-lean[1], lean[0]]), tw)
        if joint.kind == J.SPHERICAL:
            q = q * rng.choice([-1.0, 1.0]) * 10 ** rng.uniform(-3, 3)
        else:
            q = q + 2 * PI * rng.integers(-2, 3, size=3)
        out.append(q)
    return out


def assert_close(fast, ref, what, rel=1e-12):
    """|fast - ref| <= rel max(1, |ref|) elementwise (the rows grow like 1 / cos(swing / 2)^2 near
    swing pi: relative there)."""
    fast, ref = np.asarray(fast), np.asarray(ref)
    assert fast.shape == ref.shape, what
    err = np.abs(fast - ref) / np.maximum(1.0, np.abs(ref))
    assert np.all(err <= rel), f"{what}: {fast!r} vs the reference {ref!r} (rel. error {err.max():.3g})"


def compare_with_reference(joint, states, rng):
    """The compiled gaps, rows and drift against the reference at each state; the number of states
    compared (the reference fails at a swing of exactly pi: there the compiled ones are finite)."""
    done = 0
    for q in states:
        v = rng.standard_normal(3) * 10 ** rng.uniform(-1, 1)
        g = st.ball_limit_gaps(joint, q)
        gr, rows, drift_fn = st.ball_limit_rows(joint, q)
        drift = st.ball_limit_drift(joint, q, v)
        assert np.isfinite(g).all() and np.isfinite(rows).all() and np.isfinite(drift).all(), (joint, q)
        assert np.allclose(gr, g, rtol=0, atol=1e-15)
        assert np.array_equal(drift_fn(v), drift) if len(g) else drift_fn is None
        try:
            with np.errstate(all="raise"):
                rg, (rgr, rrows), rdrift = ref_gaps(joint, q), ref_rows(joint, q), ref_drift(joint, q, v)
        except (ZeroDivisionError, FloatingPointError):
            continue
        what = f"{joint!r} at q={q.tolist()}, v={v.tolist()}"
        assert_close(g, rg, "gaps " + what)
        assert_close(gr, rgr, "gaps (rows) " + what)
        assert_close(rows, rrows, "rows " + what)
        assert_close(drift, rdrift, "drift " + what)
        done += 1
    return done


@pytest.mark.parametrize("name", ALL_JOINTS)
def test_compiled_kernels_match_the_pure_python_reference(name):
    j = ALL_JOINTS[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    n = 480
    done = compare_with_reference(j, sample_states(j, n, rng), rng)
    assert done >= 0.95 * n


def test_compiled_kernels_match_the_reference_on_the_human_figure():
    rng = np.random.default_rng(7)
    m = H.human_figure()
    done = 0
    for i in st.ball_limit_joints(m):
        done += compare_with_reference(m.joints[i], sample_states(m.joints[i], 120, rng), rng)
    assert done >= 0.95 * 12 * 120


def test_compiled_kernels_at_the_exact_singular_points():
    # swing exactly 0 (the gap exact, a unit swing row) and exactly pi (no NaN where the reference
    # divided by zero)
    for j in (J.Spherical(swing=0.8, twist=(-0.5, 0.4)), J.Spherical(swing=(1.0, 0.6), twist=(-0.5, 0.4))):
        g, rows, drift = st.ball_limit_rows(j, [0.0, 0.0, 0.0, 1.0])
        assert np.array_equal(g, ref_gaps(j, [0, 0, 0, 1.0])) and g[0] >= 0.6 and np.array_equal(g[1:], [0.5, 0.4])
        assert np.linalg.norm(rows[0]) == pytest.approx(1.0) and np.array_equal(rows, ref_rows(j, [0, 0, 0, 1.0])[1])
        q = np.array([1.0, 0.0, 0.0, 0.0])                  # a swing of pi about x, no twist
        g, rows, drift = st.ball_limit_rows(j, q)
        d = st.ball_limit_drift(j, q, [0.3, -1.0, 2.0])
        assert np.isfinite(g).all() and np.isfinite(rows).all() and np.isfinite(d).all()
        assert g[0] < 0 and np.array_equal(g[1:], [0.45, 0.45]) and not rows[1:].any() and not d[1:].any()
        assert g[0] == pytest.approx(ref_gaps(j, q)[0], abs=1e-15)
        with pytest.raises(ZeroDivisionError), np.errstate(all="raise"):
            ref_rows(j, q)
    # a swing exactly at the thresholds of the reference: the same branch, the same result
    j = J.Spherical(swing=(1.0, 0.6), twist=(-0.5, 0.4))
    for q in ([1e-9, 0.0, 0.0, 1.0], [0.0, 2e-9, 0.0, 1.0], [1.0, 0.0, 1e-8, 0.0], [1.0, 0.0, 0.0, 1e-8],
              [0.3, 1.0, 2e-9, -1e-9]):
        v = np.array([0.4, -0.7, 1.3])
        assert_close(st.ball_limit_gaps(j, q), ref_gaps(j, q), f"gaps at {q}")
        assert_close(st.ball_limit_rows(j, q)[1], ref_rows(j, q)[1], f"rows at {q}")
        assert_close(st.ball_limit_drift(j, q, v), ref_drift(j, q, v), f"drift at {q}")


def test_drift_cache_follows_the_joint_and_the_state():
    j1, j2 = JOINTS["ellipse_tilted"], JOINTS["ellipse_plug"]
    q, v = random_limit_state(j1), RNG.standard_normal(3)
    d1 = st.ball_limit_drift(j1, q, v)
    d1[:] = 99.0                                           # a copy: the cache is not touched
    assert np.allclose(st.ball_limit_drift(j1, q, v), ref_drift(j1, q, v), rtol=1e-12, atol=1e-12)
    assert np.allclose(st.ball_limit_drift(j2, q, v), ref_drift(j2, q, v), rtol=1e-12, atol=1e-12)
    assert np.allclose(st.ball_limit_drift(j1, q, 2 * v), ref_drift(j1, q, 2 * v), rtol=1e-12, atol=1e-12)
    q2 = q.copy()
    q2[0] += 0.1
    assert np.allclose(st.ball_limit_drift(j1, q2, v), ref_drift(j1, q2, v), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ the whole model at once
def limited_ball_model():
    """Limited Spherical and SphericalZYX joints among other kinds, an unlimited ball joint and a
    virtual link (a loop closure) whose cut joint is a limited ball joint."""
    b = ld.ModelBuilder()
    I1 = ld.Inertia(1.0, [0, 0, -0.3], np.eye(3) * 0.1)
    b.add_body("base", "world", J.FreeFlyer(), inertia=I1)
    b.add_body("a", "base", ALL_JOINTS["ellipse_tilted"], placement=(np.eye(3), [0, 0, -0.5]), inertia=I1)
    b.add_body("b", "a", J.Revolute("y"), placement=(np.eye(3), [0, 0, -0.5]), inertia=I1)
    b.add_body("c", "b", ALL_JOINTS["zyx_ellipse"], placement=(np.eye(3), [0, 0, -0.5]), inertia=I1)
    b.add_body("d", "base", J.Spherical(), placement=(np.eye(3), [0.3, 0, 0]), inertia=I1)
    b.add_body("e", "d", ALL_JOINTS["twist_only"], placement=(np.eye(3), [0, 0, -0.5]), inertia=I1)
    b.add_body("f", "e", ALL_JOINTS["zyx_plug"], placement=(np.eye(3), [0, 0, -0.5]), inertia=I1)
    b.add_loop("v", "f", "c", ALL_JOINTS["circle"])
    b.add_body("g", "base", ALL_JOINTS["swing_only"], placement=(np.eye(3), [0, 0.3, 0]), inertia=I1)
    return b.build()


def random_model_state(m, rng):
    q = rng.standard_normal(m.nq)
    return q, rng.standard_normal(m.nv)


@pytest.mark.parametrize("make", [H.human_figure, H.human_figure_16, limited_ball_model])
def test_model_batch_is_the_concatenation_over_the_joints(make):
    from linkdyn.contact.rows import UnitCatalog
    m = make()
    bodies = st.ball_limit_joints(m)
    cat = UnitCatalog(m)
    assert list(bodies) == [i for i, _ in cat.balls]
    assert [m.joints[i] for i in bodies] == [j for _, j in cat.balls]
    if make is limited_ball_model:
        assert len(bodies) == 5 and not any(m.is_virtual[i] for i in bodies)
        assert any(m.is_virtual[i] and m.joints[i].limited for i in range(m.nbody))
    rng = np.random.default_rng(3)
    for _ in range(30):
        q, v = random_model_state(m, rng)
        gaps, rows, drift = st.ball_limits_model(m, q, v)
        g0, r0, d0 = st.ball_limits_model(m, q)
        assert d0 is None and np.array_equal(g0, gaps) and np.array_equal(r0, rows)
        assert np.array_equal(st.ball_limit_gaps_model(m, q), gaps)
        eg, er, ed = [], [], []
        for i in bodies:
            j, qa, va = m.joints[i], m.jnt_qadr[i], m.jnt_vadr[i]
            qj, vj = q[qa:qa + m.jnt_nq[i]], v[va:va + 3]
            g, r, _ = st.ball_limit_rows(j, qj)
            eg.append(g), er.append(r), ed.append(st.ball_limit_drift(j, qj, vj))
            assert np.array_equal(st.ball_limit_gaps(j, qj), g)
        assert np.array_equal(gaps, np.concatenate(eg)) and np.array_equal(rows, np.concatenate(er))
        assert np.array_equal(drift, np.concatenate(ed))
        assert len(gaps) == cat.size - len(cat.pairs) - len(cat.coord_limits)
    # the rows and drift are the catalog's ball-limit rows (their columns of the full rows)
    q, v = random_model_state(m, rng)
    gaps, rows, drift = st.ball_limits_model(m, q, v)
    u = cat.units(q, v, select=np.arange(len(cat.pairs) + len(cat.coord_limits), cat.size), with_drift=True)
    va = np.repeat([m.jnt_vadr[i] for i in bodies], [len(st.ball_limit_names(m.joints[i])) for i in bodies])
    full = np.zeros((len(gaps), m.nv))
    for r in range(len(gaps)):
        full[r, va[r]:va[r] + 3] = rows[r]
    assert np.allclose(u.gap, gaps, rtol=0, atol=1e-15) and np.allclose(u.N, full, rtol=0, atol=1e-15)
    assert np.allclose(u.drift_n, drift, rtol=0, atol=1e-15)


def test_model_batch_bad_calls():
    m = limited_ball_model()
    q, v = random_model_state(m, np.random.default_rng(5))
    with pytest.raises(ValueError, match=r"q: expected shape"):
        st.ball_limits_model(m, q[:-1])
    with pytest.raises(ValueError, match=r"v: expected shape"):
        st.ball_limits_model(m, q, v[:-1])
    i = st.ball_limit_joints(m)[1]
    bad = q.copy()
    bad[m.jnt_qadr[i]] = np.nan
    with pytest.raises(ValueError, match=r"q: non-finite coordinates of the ball joint 'c"):
        st.ball_limit_gaps_model(m, bad)
    i = st.ball_limit_joints(m)[0]
    bad = q.copy()
    bad[m.jnt_qadr[i]:m.jnt_qadr[i] + 4] = 0.0
    with pytest.raises(ValueError, match=r"q: the quaternion of the ball joint 'a.* is zero"):
        st.ball_limits_model(m, bad, v)
    bad = v.copy()
    bad[m.jnt_vadr[i] + 2] = np.inf
    with pytest.raises(ValueError, match=r"v: non-finite velocities of the ball joint 'a"):
        st.ball_limits_model(m, q, bad)
    st.ball_limits_model(m, q, None)                              # no v: not checked
    m0 = ld.models.planar_2link()                                # no ball joint: empty results
    g, r, d = st.ball_limits_model(m0, np.zeros(m0.nq), np.zeros(m0.nv))
    assert st.ball_limit_joints(m0) == () and g.shape == (0,) and r.shape == (0, 3) and d.shape == (0,)
    assert st.ball_limit_gaps_model(m0, np.zeros(m0.nq)).shape == (0,)
