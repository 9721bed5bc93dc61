"""Swing-twist decomposition of a ball joint's rotation, and its swing cone and twist range as
unilateral constraint rows (pure NumPy).

Decomposition
-------------
A rotation R (the plug's, or child's, frame in the socket's, or joint's, frame) splits uniquely
(away from a swing of pi) into ``R = R_swing R_twist``: ``R_twist`` a rotation by the *twist*
angle about z and ``R_swing`` a rotation by the *swing* angle about an axis in the xy-plane, the
smallest rotation taking the socket's z axis to the plug's (Baerlocher and Boulic 2001,
"Parametrization and range of motion of the ball-and-socket joint"; Dobrowolski 2015,
"Swing-twist decomposition in Clifford algebra").  On the quaternion ``q = [x, y, z, w]`` of R,
``q = q_swing (x) q_twist`` with

    q_twist = [0, 0, z, w] / n,   n = sqrt(z^2 + w^2) = cos(swing / 2),
    twist   = 2 atan2(z, w)  (wrapped to (-pi, pi]),
    swing   = 2 atan2(sqrt(x^2 + y^2), n) = acos(R_zz).

This is the definition of tazz's notes "Formulation of Featherstone's algorithm" (2005-2013), sec. 2.5.3,
eqs. 27-29:
the swing angle is the angle between the socket's and the plug's z axes, ``acos(R_zz)``
(eq. 27); the rotation of eq. 28,

    M = [[R_zy^2/(1+R_zz) + R_zz,  -R_zy R_zx/(1+R_zz),     -R_zx],
         [-R_zy R_zx/(1+R_zz),     R_zx^2/(1+R_zz) + R_zz,  -R_zy],
         [R_zx,                    R_zy,                     R_zz]],

is the smallest rotation taking the socket's z axis seen from the plug (``R^T e_z``, the third
row of R) to the plug's z axis, so that ``R M^T`` is a rotation about z: by the twist angle
(eq. 28 is right; ``tests/test_ball_limits.py`` checks it).  The twist angle is then the angle
between the x axes, ``cos(twist) = (R M^T)_xx``, which written out is

    cos(twist) = (R_zy^2 R_xx + (1+R_zz) R_zz R_xx - R_zy R_zx R_xy - (1+R_zz) R_zx R_xz) / (1+R_zz).

Eq. 29 as printed, ``acos((R_zy^2 R_xx + (1+R_zz) R_zz R_xx - R_zy R_zx R_xy -
(1+R_zz R_zx R_xz)/(1+R_zz)))``, misplaces a parenthesis: its last term should be
``(1+R_zz) R_zx R_xz`` and the whole numerator is divided by ``1+R_zz``.  As printed it gives
1.5 at R = I (no real arccosine) and wrong values elsewhere (the tests show it).  An arccosine
also loses the twist's sign; here the twist is ``2 atan2(z, w)``, its sign included, which
agrees with the corrected eq. 29 (``atan2((R M^T)_yx, (R M^T)_xx)``).  (The notes' closing
paraphrase in terms of the axis and the angle of the joint rotation is not used here: the
angle of R is not its twist unless the swing is zero.)

Limits of a ball joint
----------------------
:class:`linkdyn.Spherical` and :class:`linkdyn.SphericalZYX` carry ``swing`` (a cone about
``axis``), ``twist`` (a range) and the frames C (``cone_frame``) and C_p (``plug_frame``); the
swing and twist are those of ``R' = C^T R C_p`` (:func:`limit_rotation`), R the joint rotation.
:func:`ball_limit_rows` returns, in this fixed order, one unit per limit the joint has:

* ``"swing"`` (when ``swing`` is set): circular cone of half-angle a: gap = a - swing (rad).
  Elliptical cone (a, b): the plug's axis tilts by the swing angle theta towards the direction
  at the angle phi from the cone frame's x; the boundary is theta_max(phi) = a b /
  sqrt(b^2 cos^2 phi + a^2 sin^2 phi) and the gap is ``(theta_max(phi) - theta) kappa(phi)``,
  ``kappa = 1 / sqrt(1 + (theta_max'(phi) / sin theta_max(phi))^2)``: the radial margin times the
  cosine of the angle between the meridian and the boundary's normal on the sphere, i.e. the
  angular distance of the plug's axis to the boundary to first order (exactly a - theta for
  a = b).
* ``"twist.lower"``, ``"twist.upper"`` (when ``twist = (lo, hi)`` is set): ``twist - lo`` and
  ``hi - twist`` (rad), the twist taken in (m - pi, m + pi], m = (lo + hi) / 2, so that a twist
  in the forbidden arc reports the bound it is nearer to as violated.

Gaps are >= 0 inside.  ``rows`` (k, 3) satisfy d(gap)/dt = rows @ v_joint, v_joint the
joint's velocity: the angular velocity in the child frame for ``Spherical``, the angle rates
for ``SphericalZYX``.  :func:`ball_limit_drift` gives d/dt(rows) @ v_joint, so that
d^2(gap)/dt^2 = rows @ dv_joint/dt + drift.  Rows and drift are *exact* (analytic): the gaps
are evaluated on truncated second-order Taylor series (forward-mode automatic differentiation)
along q + eps dq, with dq = q (x) [v, 0] / 2 for a quaternion (the second derivative along that
straight line is the drift because the gaps, functions of the quaternion's direction only, are
homogeneous of degree 0 in its four components) and dq = v for ZYX angles.

Implementation and cost: compiled (Numba) kernels, the Taylor numbers as tuples of floats along
the three unit velocities (the rows) and v_joint (the drift) at once; each joint's constants
(kind, half-angles, twist range, the 4x4 map of :func:`limit_rotation` on quaternions) are
computed once and kept.  The arithmetic is that of the former pure-Python implementation, in
the same order (``tests/test_ball_limits.py`` keeps it as the reference: agreement to about
1e-14, relative).  From Python, :func:`ball_limit_gaps` costs about 1.5 us a joint,
:func:`ball_limit_rows` and :func:`ball_limit_drift` about 2.5 us each, mostly the call itself
(:func:`ball_limit_drift` keeps its last result, so asking it once per unit of the same joint
and state costs one evaluation).  For a whole model, :func:`ball_limit_gaps_model` and
:func:`ball_limits_model` evaluate every limited ball joint (:func:`ball_limit_joints`) in one
compiled call: about 4 us for the gaps and 10 us for gaps, rows and drift of the 12 ball joints
of the human figure.

Singular points
---------------
* Swing = 0: the swing's gradient is undefined there (a cone point).  A cone limit can only
  be active near its bound, so while the swing is below half the smallest half-angle the
  swing row is that of -swing (a unit row, exact for a circular cone; for an elliptical cone
  the exact row of the gap grows like 1/swing there) and at swing = 0 exactly (below 1e-9 rad)
  an arbitrary unit row (the tilt towards the cone frame's x).  The gap itself is always exact.
* Swing = pi (the plug's axis against the cone axis): the twist is undefined.  When
  ``cos(swing / 2) < 1e-8`` the decomposition puts the whole rotation in the swing (twist 0)
  and the twist units report the half-range as their gap with zero rows.  Near it the twist rows
  grow like 1 / cos(swing / 2)^2.  At a swing of exactly pi the swing row is zero (no direction
  to leave the cone point by).  A swing cone (half-angles < pi) keeps the joint away from it.
"""
from __future__ import annotations

import functools
import math
import weakref

import numpy as np
from numba import njit

from .._kernels.jets import (_jadd, _jatan2, _jc, _jcos, _jdiv, _jinv, _jlin4, _jmul, _jscale, _jshift, _jsin,
                            _jsqrt, _jsub)
from ..model import joints as J

__all__ = ["swing_twist", "swing_twist_angles", "swing_twist_quat", "rotation_from_swing_twist",
           "limit_rotation", "ball_limit_names", "ball_limit_gaps", "ball_limit_rows", "ball_limit_drift",
           "ball_limit_joints", "ball_limit_gaps_model", "ball_limits_model", "project_inside"]

#: below this |(x, y)| of the (unit) quaternion the tilt direction is undefined (swing ~ 0)
EPS_SWING = 1e-9
#: below this cos(swing / 2) the twist is undefined (swing ~ pi)
EPS_TWIST = 1e-8


# ---------------------------------------------------------------------------------------------
# quaternions [x, y, z, w] as sequences
def _qmul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return [aw * bx + bw * ax + ay * bz - az * by,
            aw * by + bw * ay + az * bx - ax * bz,
            aw * bz + bw * az + ax * by - ay * bx,
            aw * bw - ax * bx - ay * by - az * bz]


def _qconj(q):
    return [-q[0], -q[1], -q[2], q[3]]


def _mat_to_quat(R) -> np.ndarray:
    """Unit quaternion [x, y, z, w], w >= 0, of a rotation matrix (Shepperd's method)."""
    R = np.asarray(R, dtype=float)
    t = np.trace(R)
    d = np.array([R[0, 0], R[1, 1], R[2, 2], t])
    k = int(np.argmax(d))
    if k == 3:
        w = 0.5 * math.sqrt(1.0 + t)
        q = np.array([(R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w), w])
    else:
        i, j, l = k, (k + 1) % 3, (k + 2) % 3
        r = math.sqrt(max(1.0 + R[i, i] - R[j, j] - R[l, l], 0.0))
        q = np.zeros(4)
        q[i] = 0.5 * r
        s = 0.5 / r
        q[3] = (R[l, j] - R[j, l]) * s
        q[j] = (R[j, i] + R[i, j]) * s
        q[l] = (R[l, i] + R[i, l]) * s
    if q[3] < 0:
        q = -q
    return q / np.linalg.norm(q)


def _quat_to_mat(q) -> np.ndarray:
    x, y, z, w = np.asarray(q, dtype=float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _wrap(a):
    """a in (-pi, pi]."""
    a = math.fmod(a + math.pi, 2.0 * math.pi)
    if a <= 0.0:
        a += 2.0 * math.pi
    return a - math.pi


# ---------------------------------------------------------------------------------------------
def swing_twist_quat(q):
    """``(swing_vector (2,), twist)`` of the unit quaternion ``q = [x, y, z, w]`` (any norm).

    ``swing_vector``: the rotation vector of R_swing, in the xy-plane (its length the swing angle
    in [0, pi], its direction the tilt axis: the plug's z axis leans towards ``(v_y, -v_x)``);
    ``twist`` in (-pi, pi].  At a swing of pi (``cos(swing/2) < EPS_TWIST``) the twist is
    undefined and set to 0 (the whole rotation is swing)."""
    q = np.asarray(q, dtype=float)
    if q.shape != (4,) or not np.isfinite(q).all() or not np.linalg.norm(q) > 0:
        raise ValueError(f"q: expected a non-zero finite quaternion [x, y, z, w], got {q!r}")
    x, y, z, w = q / np.linalg.norm(q)
    s, n = math.hypot(x, y), math.hypot(z, w)
    if n < EPS_TWIST:
        tz, tw, twist = 0.0, 1.0, 0.0
    else:
        tz, tw = z / n, w / n
        twist = _wrap(2.0 * math.atan2(z, w))
    sx, sy = tw * x - tz * y, tz * x + tw * y
    theta = 2.0 * math.atan2(s, n)
    vec = np.array([sx, sy]) * (theta / s) if s > 0 else np.zeros(2)
    return vec, twist


def _check_R(R):
    R = np.asarray(R, dtype=float)
    if R.shape != (3, 3) or not np.isfinite(R).all():
        raise ValueError(f"R: expected a finite 3x3 rotation matrix, got shape {R.shape}")
    return R


def swing_twist(R):
    """``(swing_vector (2,), twist)`` of the rotation matrix R: R = R_swing R_twist, R_twist a
    rotation by ``twist`` (in (-pi, pi]) about z, R_swing the rotation by the vector
    ``[swing_vector, 0]`` (in the xy-plane; its length is the swing angle acos(R_zz) in [0, pi]).
    See the module docstring (eqs. 27-29 of tazz's notes, eq. 29 corrected)."""
    return swing_twist_quat(_mat_to_quat(_check_R(R)))


def swing_twist_angles(R):
    """``(swing, twist)``: the swing angle acos(R_zz) in [0, pi] and the twist in (-pi, pi]."""
    vec, twist = swing_twist(R)
    return float(np.linalg.norm(vec)), twist


def rotation_from_swing_twist(swing_vector, twist) -> np.ndarray:
    """The rotation matrix ``R_swing R_twist`` (inverse of :func:`swing_twist`)."""
    return _quat_to_mat(_compose(np.asarray(swing_vector, dtype=float), float(twist)))


def _compose(r, twist):
    th = float(np.hypot(r[0], r[1]))
    if th > 0:
        sw = [r[0] / th * math.sin(th / 2), r[1] / th * math.sin(th / 2), 0.0, math.cos(th / 2)]
    else:
        sw = [0.0, 0.0, 0.0, 1.0]
    return np.array(_qmul(sw, [0.0, 0.0, math.sin(twist / 2), math.cos(twist / 2)]))


# ---------------------------------------------------------------------------------------------
def _ball(joint):
    if joint.kind not in (J.SPHERICAL, J.SPHERICAL_ZYX):
        raise ValueError(f"expected a Spherical or SphericalZYX joint, got {joint!r}")
    return joint


def _q(joint, q_joint):
    q = np.asarray(q_joint, dtype=float).reshape(-1)
    n = 4 if joint.kind == J.SPHERICAL else 3
    if q.shape != (n,) or not np.isfinite(q).all():
        raise ValueError(f"q_joint: expected {n} finite coordinates for {joint!r}, got {q_joint!r}")
    if n == 4 and not np.linalg.norm(q) > 0:
        raise ValueError("q_joint: the quaternion is zero")
    return q


def _zyx_quat(z, y, x):
    """Quaternion of Rz(z) Ry(y) Rx(x)."""
    qz = [0.0, 0.0, math.sin(0.5 * z), math.cos(0.5 * z)]
    qy = [0.0, math.sin(0.5 * y), 0.0, math.cos(0.5 * y)]
    qx = [math.sin(0.5 * x), 0.0, 0.0, math.cos(0.5 * x)]
    return _qmul(_qmul(qz, qy), qx)


@functools.lru_cache(maxsize=256)
def _frame_map(cone_bytes, plug_bytes):
    """The 4x4 matrix L with quat(C^T R C_p) = L quat(R) (q -> conj(c) (x) q (x) c_p is linear)."""
    cs = _mat_to_quat(np.frombuffer(cone_bytes).reshape(3, 3))
    cp = _mat_to_quat(np.frombuffer(plug_bytes).reshape(3, 3))
    L = np.array([_qmul(_qmul(list(_qconj(cs)), list(e)), list(cp)) for e in np.eye(4)]).T
    L.flags.writeable = False
    return L


def _L(joint):
    return _frame_map(np.ascontiguousarray(joint.cone_frame).tobytes(), np.ascontiguousarray(joint.plug_frame).tobytes())


def _limit_quat(joint, qj):
    """Quaternion of R' = C^T R C_p; qj: the joint's quaternion or angles."""
    q = list(qj) if joint.kind == J.SPHERICAL else _zyx_quat(*qj)
    return list(_L(joint) @ np.array(q, dtype=float))


def limit_rotation(joint, q_joint) -> np.ndarray:
    """``R' = C^T R C_p``: the joint rotation R seen in the cone frame (socket side) and the plug
    frame (child side), whose swing and twist the limits bound."""
    joint = _ball(joint)
    return _quat_to_mat(np.array(_limit_quat(joint, _q(joint, q_joint)), dtype=float))


def ball_limit_names(joint):
    """The names of the joint's limit units, in the order of :func:`ball_limit_rows`."""
    out = []
    if getattr(joint, "swing", None) is not None:
        out.append("swing")
    if getattr(joint, "twist", None) is not None:
        out += ["twist.lower", "twist.upper"]
    return out


# ---------------------------------------------------------------------------------------------
# compiled gaps, rows and drift.  A joint's constants are one float row C (_NC entries):
# [kind, has swing, a, b, has twist, lo, hi, number of units, L (4x4, row-major)].
_NC = 24
_SPH = J.SPHERICAL


@njit(cache=True, error_model="numpy")
def _ellipse_gap(c, si, theta, a, b):
    """(theta_max(phi) - theta) kappa(phi) for the tilt direction (cos phi, sin phi) = (c, si)."""
    D = b * b * c * c + a * a * si * si
    rD = math.sqrt(D)
    tmax = a * b / rD
    r = -a * b * (a * a - b * b) * c * si / (D * rD) / math.sin(tmax)      # theta_max' / sin(theta_max)
    return (tmax - theta) / math.sqrt(1.0 + r * r)


@njit(cache=True, error_model="numpy")
def _ellipse_gap_jet(c, si, theta, a, b):
    """:func:`_ellipse_gap` on jets."""
    D = _jadd(_jmul(_jscale(c, b * b), c), _jmul(_jscale(si, a * a), si))
    rD = _jsqrt(D)
    tmax = _jscale(_jinv(rD), a * b)
    r = _jdiv(_jdiv(_jmul(_jscale(c, -a * b * (a * a - b * b)), si), _jmul(D, rD)), _jsin(tmax))
    return _jdiv(_jsub(tmax, theta), _jsqrt(_jshift(_jmul(r, r), 1.0)))


@njit(cache=True, error_model="numpy")
def _check(C, q, v, want):
    """0, or what is wrong: 1 a non-finite q, 2 a zero quaternion, 3 a non-finite v (want 2)."""
    for i in range(q.shape[0]):
        if not math.isfinite(q[i]):
            return 1
    if C[0] == _SPH and q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] == 0.0:
        return 2
    if want == 2:
        for i in range(3):
            if not math.isfinite(v[i]):
                return 3
    return 0


@njit(cache=True, error_model="numpy")
def _limit_quat_f(C, q):
    """The quaternion of R' = C^T R C_p (floats) from the joint's quaternion or ZYX angles."""
    if C[0] == _SPH:
        x, y, z, w = q[0], q[1], q[2], q[3]
    else:                                   # qz (x) qy (x) qx
        sz, cz = math.sin(0.5 * q[0]), math.cos(0.5 * q[0])
        sy, cy = math.sin(0.5 * q[1]), math.cos(0.5 * q[1])
        sx, cx = math.sin(0.5 * q[2]), math.cos(0.5 * q[2])
        x = cz * cy * sx - sz * sy * cx
        y = cz * sy * cx + sz * cy * sx
        z = sz * cy * cx - cz * sy * sx
        w = cz * cy * cx + sz * sy * sx
    return (C[8] * x + C[9] * y + C[10] * z + C[11] * w, C[12] * x + C[13] * y + C[14] * z + C[15] * w,
            C[16] * x + C[17] * y + C[18] * z + C[19] * w, C[20] * x + C[21] * y + C[22] * z + C[23] * w)


@njit(cache=True, error_model="numpy")
def _limit_quat_jet(C, q, v):
    """:func:`_limit_quat_f` on jets along the unit velocities and v: dq = q (x) [e_k, 0] / 2 for
    a quaternion (a straight line: no second derivative), d(angles) = e_k for ZYX angles."""
    if C[0] == _SPH:
        x, y, z, w = q[0], q[1], q[2], q[3]
        vx, vy, vz = v[0], v[1], v[2]
        jx = (x, 0.5 * w, -0.5 * z, 0.5 * y, 0.5 * (w * vx + y * vz - z * vy), 0.0, 0.0, 0.0, 0.0)
        jy = (y, 0.5 * z, 0.5 * w, -0.5 * x, 0.5 * (w * vy + z * vx - x * vz), 0.0, 0.0, 0.0, 0.0)
        jz = (z, -0.5 * y, 0.5 * x, 0.5 * w, 0.5 * (w * vz + x * vy - y * vx), 0.0, 0.0, 0.0, 0.0)
        jw = (w, -0.5 * x, -0.5 * y, -0.5 * z, -0.5 * (x * vx + y * vy + z * vz), 0.0, 0.0, 0.0, 0.0)
    else:
        hz = (0.5 * q[0], 0.5, 0.0, 0.0, 0.5 * v[0], 0.0, 0.0, 0.0, 0.0)
        hy = (0.5 * q[1], 0.0, 0.5, 0.0, 0.5 * v[1], 0.0, 0.0, 0.0, 0.0)
        hx = (0.5 * q[2], 0.0, 0.0, 0.5, 0.5 * v[2], 0.0, 0.0, 0.0, 0.0)
        sz, cz, sy, cy, sx, cx = _jsin(hz), _jcos(hz), _jsin(hy), _jcos(hy), _jsin(hx), _jcos(hx)
        # (operands in the order of the Hamilton product: the same rounding as _qmul on jets)
        czcy, szsy, czsy, cysz = _jmul(cz, cy), _jmul(sz, sy), _jmul(cz, sy), _jmul(cy, sz)
        jx = _jsub(_jmul(czcy, sx), _jmul(cx, szsy))
        jy = _jadd(_jmul(cx, czsy), _jmul(cysz, sx))
        jz = _jsub(_jmul(cx, cysz), _jmul(czsy, sx))
        jw = _jadd(_jmul(czcy, cx), _jmul(szsy, sx))
    return (_jlin4(jx, jy, jz, jw, C[8], C[9], C[10], C[11]), _jlin4(jx, jy, jz, jw, C[12], C[13], C[14], C[15]),
            _jlin4(jx, jy, jz, jw, C[16], C[17], C[18], C[19]), _jlin4(jx, jy, jz, jw, C[20], C[21], C[22], C[23]))


@njit(cache=True, error_model="numpy")
def _gap_values(C, x, y, z, w, g):
    """The gaps of the limit quaternion [x, y, z, w] (any norm) into g[0:k]."""
    sv, nv = math.sqrt(x * x + y * y), math.sqrt(z * z + w * w)
    norm = math.hypot(sv, nv)
    k = 0
    if C[1] != 0.0:
        a, b = C[2], C[3]
        theta = 2.0 * math.atan2(sv, nv)
        if a == b:
            g[0] = a - theta
        else:
            if sv == 0.0:
                c, si = 1.0, 0.0             # no tilt: any direction (the gap jumps there, far inside)
            elif nv < EPS_TWIST * norm:
                c, si = y / sv, -x / sv      # swing ~ pi: the direction of the swing vector's tilt
            else:                            # (R'_xz, R'_yz) / sin(swing)
                sn = sv * nv
                c, si = (x * z + y * w) / sn, (y * z - x * w) / sn
            g[0] = _ellipse_gap(c, si, theta, a, b)
        k = 1
    if C[4] != 0.0:
        lo, hi = C[5], C[6]
        mid, h = 0.5 * (lo + hi), 0.5 * (hi - lo)
        if nv < EPS_TWIST * norm:
            g[k], g[k + 1] = h, h
        else:
            re, im = w * w - z * z, 2.0 * z * w              # (w + i z)^2 = n^2 e^{i twist}
            cm, sm = math.cos(mid), math.sin(mid)
            tc = math.atan2(im * cm - re * sm, re * cm + im * sm)  # twist - mid, in (-pi, pi]
            g[k], g[k + 1] = tc + h, h - tc


@njit(cache=True, error_model="numpy")
def _put(u, sign, k, rows, drift, with_drift):
    rows[k, 0], rows[k, 1], rows[k, 2] = sign * u[1], sign * u[2], sign * u[3]
    if with_drift:
        drift[k] = sign * u[8]


@njit(cache=True, error_model="numpy")
def _gap_jets(C, X, Y, Z, W, rows, drift, with_drift):
    """The rows (and the drift) of the gaps from the jets of the limit quaternion."""
    s2 = _jadd(_jmul(X, X), _jmul(Y, Y))
    n2 = _jadd(_jmul(Z, Z), _jmul(W, W))
    sv, nv = math.sqrt(s2[0]), math.sqrt(n2[0])
    norm = math.hypot(sv, nv)
    k = 0
    if C[1] != 0.0:
        a, b = C[2], C[3]
        if sv < EPS_SWING * norm:
            # swing ~ 0: the row of the tilt towards the cone frame's x
            gj = _jscale(_jatan2(Y, _jsqrt(n2)), -2.0)
        else:
            rs, rn = _jsqrt(s2), _jsqrt(n2)
            theta = _jscale(_jatan2(rs, rn), 2.0)
            if a == b or theta[0] < 0.5 * min(a, b) or nv < EPS_TWIST * norm:
                gj = _jscale(theta, -1.0)     # circular, or far inside (or at swing ~ pi): -swing
            else:
                sn = _jmul(rs, rn)
                c = _jdiv(_jadd(_jmul(X, Z), _jmul(Y, W)), sn)
                si = _jdiv(_jsub(_jmul(Y, Z), _jmul(X, W)), sn)
                gj = _ellipse_gap_jet(c, si, theta, a, b)
        _put(gj, 1.0, 0, rows, drift, with_drift)
        k = 1
    if C[4] != 0.0:
        if nv < EPS_TWIST * norm:
            tc = _jc(0.0)
        else:
            mid = 0.5 * (C[5] + C[6])
            cm, sm = math.cos(mid), math.sin(mid)
            re = _jsub(_jmul(W, W), _jmul(Z, Z))
            im = _jmul(_jscale(Z, 2.0), W)
            tc = _jatan2(_jsub(_jscale(im, cm), _jscale(re, sm)), _jadd(_jscale(re, cm), _jscale(im, sm)))
        _put(tc, 1.0, k, rows, drift, with_drift)
        _put(tc, -1.0, k + 1, rows, drift, with_drift)


@njit(cache=True, error_model="numpy")
def _gaps_kernel(C, q, g):
    """The gaps of one joint into g; returns :func:`_check`'s code."""
    status = _check(C, q, q, 0)
    if status == 0:
        x, y, z, w = _limit_quat_f(C, q)
        _gap_values(C, x, y, z, w, g)
    return status


@njit(cache=True, error_model="numpy")
def _rows_kernel(C, q, v, want, g, rows, drift):
    """Gaps, rows and (want 2) the drift along v of one joint; returns :func:`_check`'s code."""
    status = _check(C, q, v, want)
    if status == 0:
        X, Y, Z, W = _limit_quat_jet(C, q, v)
        _gap_values(C, X[0], Y[0], Z[0], W[0], g)
        _gap_jets(C, X, Y, Z, W, rows, drift, want == 2)
    return status


@njit(cache=True, error_model="numpy")
def _model_kernel(C, I, q, v, want, g, rows, drift):
    """:func:`_gaps_kernel` (want 0) or :func:`_rows_kernel` over the joints: row j of C their
    constants, of I (q address, v address, first unit, nq).  Returns -1, or 4 j + the code of
    the first joint j whose coordinates are bad."""
    for j in range(C.shape[0]):
        qa, va, u, n = I[j, 0], I[j, 1], I[j, 2], I[j, 3]
        if want == 0:
            status = _gaps_kernel(C[j], q[qa:qa + n], g[u:])
        else:
            status = _rows_kernel(C[j], q[qa:qa + n], v[va:va + 3], np.int64(want), g[u:], rows[u:], drift[u:])
        if status != 0:
            return 4 * j + status
    return -1


_NO_ROWS = np.zeros((0, 3))
_NO_DRIFT = np.zeros(0)
_NO_V = np.zeros(3)

#: joint -> (C, number of units, nq); joints are immutable and hash by identity
_JOINT_CONSTANTS: dict = {}


def _joint_constants(joint):
    hit = _JOINT_CONSTANTS.get(joint)
    if hit is not None:
        return hit
    _ball(joint)
    names = ball_limit_names(joint)
    C = np.zeros(_NC)
    C[0] = joint.kind
    if joint.swing is not None:
        C[1] = 1.0
        C[2], C[3] = joint.swing_ab
    if joint.twist is not None:
        C[4] = 1.0
        C[5], C[6] = joint.twist
    C[7] = len(names)
    C[8:] = _L(joint).ravel()
    hit = (C, len(names), 4 if joint.kind == J.SPHERICAL else 3)
    if len(_JOINT_CONSTANTS) >= 4096:
        _JOINT_CONSTANTS.clear()
    _JOINT_CONSTANTS[joint] = hit
    return hit


def _coords(joint, q_joint, n):
    q = np.ascontiguousarray(q_joint, dtype=np.float64)
    if q.ndim != 1:
        q = q.reshape(-1)
    if q.shape[0] != n:
        raise ValueError(f"q_joint: expected {n} finite coordinates for {joint!r}, got {q_joint!r}")
    return q


def _velocity(v_joint):
    v = np.ascontiguousarray(v_joint, dtype=np.float64)
    if v.ndim != 1:
        v = v.reshape(-1)
    if v.shape[0] != 3:
        raise ValueError(f"v_joint: expected 3 finite velocities, got {v_joint!r}")
    return v


def _raise(status, joint, q_joint, v_joint=None):
    if status == 1:
        raise ValueError(f"q_joint: expected {joint.nq} finite coordinates for {joint!r}, got {q_joint!r}")
    if status == 2:
        raise ValueError("q_joint: the quaternion is zero")
    raise ValueError(f"v_joint: expected 3 finite velocities, got {v_joint!r}")


def ball_limit_gaps(joint, q_joint) -> np.ndarray:
    """The gaps (k,) of the joint's limits (:func:`ball_limit_names` order), >= 0 inside: the
    cheap part of :func:`ball_limit_rows`."""
    C, k, n = _joint_constants(joint)
    q = _coords(joint, q_joint, n)
    g = np.empty(k)
    status = _gaps_kernel(C, q, g)
    if status:
        _raise(status, joint, q_joint)
    return g


def ball_limit_rows(joint, q_joint):
    """``(gaps (k,), rows (k, 3), drift_fn)`` of a ball joint's limits at ``q_joint`` (its 4
    quaternion or 3 angle coordinates), k = len(:func:`ball_limit_names`): d(gap)/dt =
    rows @ v_joint.  ``drift_fn(v_joint)`` is :func:`ball_limit_drift` at this q (None when the
    joint has no limits).  See the module docstring for the units and the singular points."""
    C, k, n = _joint_constants(joint)
    q = _coords(joint, q_joint, n)
    g, rows = np.empty(k), np.empty((k, 3))
    status = _rows_kernel(C, q, _NO_V, 1, g, rows, _NO_DRIFT)
    if status:
        _raise(status, joint, q_joint)
    if k == 0:
        return g, rows, None
    q = q.copy()
    return g, rows, (lambda v_joint: ball_limit_drift(joint, q, v_joint))


def ball_limit_drift(joint, q_joint, v_joint) -> np.ndarray:
    """``d/dt(rows) @ v_joint`` (k,) along the joint's own motion (q' from v_joint), so that
    d^2(gap)/dt^2 = rows @ dv_joint/dt + drift.  Exact (second-order forward-mode automatic
    differentiation of the gaps), not a finite difference."""
    global _LAST_DRIFT
    C, k, n = _joint_constants(joint)
    q = _coords(joint, q_joint, n)
    v = _velocity(v_joint)
    key = (joint, q.tobytes(), v.tobytes())
    last = _LAST_DRIFT
    if last[0] == key:                   # callers often ask once per unit of the same joint and state
        return last[1].copy()
    g, rows, drift = np.empty(k), np.empty((k, 3)), np.empty(k)
    status = _rows_kernel(C, q, v, 2, g, rows, drift)
    if status:
        _raise(status, joint, q_joint, v_joint)
    _LAST_DRIFT = (key, drift.copy())
    return drift


_LAST_DRIFT = (None, None)


# ---------------------------------------------------------------------------------------------
# every limited ball joint of a model in one compiled call
class _ModelBalls:
    __slots__ = ("bodies", "C", "I", "size", "v0")


_MODEL_BALLS = weakref.WeakKeyDictionary()


def _model_balls(model):
    try:
        return _MODEL_BALLS[model]
    except KeyError:
        pass
    out = _ModelBalls()
    bodies, rows, idx, u = [], [], [], 0
    for i in range(1, model.nbody):
        joint = model.joints[i]
        if model.is_virtual[i] or int(model.jnt_type[i]) not in (J.SPHERICAL, J.SPHERICAL_ZYX) or \
                (getattr(joint, "swing", None) is None and getattr(joint, "twist", None) is None):
            continue
        C, k, n = _joint_constants(joint)
        bodies.append(i)
        rows.append(C)
        idx.append((int(model.jnt_qadr[i]), int(model.jnt_vadr[i]), u, n))
        u += k
    out.bodies = tuple(bodies)
    out.C = np.array(rows, dtype=np.float64).reshape(-1, _NC)
    out.I = np.array(idx, dtype=np.int64).reshape(-1, 4)
    out.size = u
    out.v0 = np.zeros(max(model.nv, 3))
    _MODEL_BALLS[model] = out
    return out


def ball_limit_joints(model) -> tuple:
    """The body (joint) indices of the model's limited ball joints, in the order of
    :func:`ball_limits_model`: the bodies 1..nbody-1 whose joint is a ``Spherical`` or
    ``SphericalZYX`` with a swing cone or a twist range, virtual links (loop closures) left out
    (the order of ``linkdyn.contact.rows.UnitCatalog.balls``)."""
    return _model_balls(model).bodies


def _model_vector(x, n, what):
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.shape != (n,):
        raise ValueError(f"{what}: expected shape ({n},), got {x.shape}")
    return x


def _model_raise(model, code, q, v):
    j, status = divmod(code, 4)
    i = _model_balls(model).bodies[j]
    name = model._joint_names[i]
    if status == 1:
        raise ValueError(f"q: non-finite coordinates of the ball joint {name!r}: "
                         f"{q[model.jnt_qadr[i]:model.jnt_qadr[i] + model.jnt_nq[i]]!r}")
    if status == 2:
        raise ValueError(f"q: the quaternion of the ball joint {name!r} is zero")
    raise ValueError(f"v: non-finite velocities of the ball joint {name!r}: "
                     f"{v[model.jnt_vadr[i]:model.jnt_vadr[i] + 3]!r}")


def ball_limit_gaps_model(model, q) -> np.ndarray:
    """The gaps (K,) of every limited ball joint of ``model`` at the configuration ``q`` (nq,),
    in one compiled call: the joints in :func:`ball_limit_joints` order, each one's units in
    :func:`ball_limit_names` order (the concatenation of :func:`ball_limit_gaps`)."""
    mb = _model_balls(model)
    q = _model_vector(q, model.nq, "q")
    g = np.empty(mb.size)
    if mb.size:
        code = _model_kernel(mb.C, mb.I, q, mb.v0, 0, g, _NO_ROWS, _NO_DRIFT)
        if code >= 0:
            _model_raise(model, code, q, None)
    return g


def ball_limits_model(model, q, v=None):
    """``(gaps (K,), rows (K, 3), drift (K,) or None)`` of every limited ball joint of ``model``
    at ``q`` (nq,) (and ``v`` (nv,)), in one compiled call: the concatenation of
    :func:`ball_limit_rows` and :func:`ball_limit_drift` over the joints of
    :func:`ball_limit_joints` (each joint's units in :func:`ball_limit_names` order).  Unit r of
    joint i has d(gap_r)/dt = rows[r] @ v[jnt_vadr[i]:jnt_vadr[i] + 3] (its 3 columns of the full
    row); drift (when v is given) = d/dt(rows) @ v_joint.  For :class:`UnitCatalog`: unit b of
    the catalog's ball part (b = catalog index - contacts - coordinate limits) is entry b."""
    mb = _model_balls(model)
    q = _model_vector(q, model.nq, "q")
    want = 1
    if v is None:
        vv, drift = mb.v0, _NO_DRIFT
    else:
        vv, want = _model_vector(v, model.nv, "v"), 2
        drift = np.empty(mb.size)
    g, rows = np.empty(mb.size), np.empty((mb.size, 3))
    if mb.size:
        code = _model_kernel(mb.C, mb.I, q, vv, want, g, rows, drift)
        if code >= 0:
            _model_raise(model, code, q, vv)
    return g, rows, (drift if want == 2 else None)


# ---------------------------------------------------------------------------------------------
def _nearest_on_ellipse(p, A, B):
    """The point of the ellipse (x/A)^2 + (y/B)^2 = 1 nearest to p (outside it)."""
    px, py = abs(p[0]), abs(p[1])
    lo, hi = 0.0, max(A, B) * math.hypot(px, py)
    for _ in range(200):
        t = 0.5 * (lo + hi)
        f = (A * px / (t + A * A)) ** 2 + (B * py / (t + B * B)) ** 2 - 1.0
        if f > 0:
            lo = t
        else:
            hi = t
        if hi - lo <= 1e-15 * max(1.0, hi):
            break
    t = 0.5 * (lo + hi)
    return np.array([math.copysign(A * A * px / (t + A * A), p[0]), math.copysign(B * B * py / (t + B * B), p[1])])


def _tilt_gap(t, a, b):
    """The elliptical cone's gap at the tilt t = theta (cos phi, sin phi)."""
    th = float(np.hypot(t[0], t[1]))
    c, si = (t[0] / th, t[1] / th) if th > 0 else (1.0, 0.0)
    return _ellipse_gap(c, si, th, a, b)


def _zyx_from_matrix(R, near):
    """ZYX angles of R, the branch (and the multiples of 2 pi) nearest to ``near``."""
    y = math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0]))
    z = math.atan2(R[1, 0], R[0, 0])
    x = math.atan2(R[2, 1], R[2, 2])
    best = None
    for cand in ((z, y, x), (z + math.pi, math.pi - y, x + math.pi)):
        ang = np.array([near[i] + _wrap(cand[i] - near[i]) for i in range(3)])
        d = float(np.sum((ang - near) ** 2))
        if best is None or d < best[0]:
            best = (d, ang)
    return best[1]


def project_inside(joint, q_joint, margin: float = 0.0) -> np.ndarray:
    """The joint configuration nearest to ``q_joint`` that satisfies its limits with ``margin``
    (rad) to spare: the twist clamped into [lo + margin, hi - margin] (towards the nearer bound)
    and the tilt of the plug's axis (swing angle x direction, in the plane of the swing vectors)
    moved to the nearest point of the cone shrunk by ``margin`` (half-angles a - margin,
    b - margin), the other of the two kept.  Nearest in these swing-twist coordinates, not the
    geodesic nearest rotation.  Returns a copy of ``q_joint`` when nothing is violated; a
    quaternion keeps the sign of the input's, ZYX angles the branch nearest the input's.  For
    position correction and for sampling states inside the limits."""
    joint = _ball(joint)
    q = _q(joint, q_joint)
    margin = float(margin)
    if not margin >= 0.0:
        raise ValueError(f"margin: expected a number >= 0, got {margin!r}")
    Q = np.array(_limit_quat(joint, q), dtype=float)
    r, twist = swing_twist_quat(Q)
    changed = False
    if joint.twist is not None:
        lo, hi = joint.twist
        mid, h = 0.5 * (lo + hi), 0.5 * (hi - lo)
        lim = max(h - margin, 0.0)
        tc = _wrap(twist - mid)
        if abs(tc) > lim:
            twist, changed = mid + math.copysign(lim, tc), True
    if joint.swing is not None:
        a, b = joint.swing_ab
        if margin >= min(a, b):
            raise ValueError(f"margin: must be below the cone's smallest half-angle {min(a, b)!r}, got {margin!r}")
        A, B = a - margin, b - margin
        t = np.array([r[1], -r[0]])                           # the tilt: theta (cos phi, sin phi)
        if (t[0] / A) ** 2 + (t[1] / B) ** 2 > 1.0:
            t = t * (A / np.hypot(*t)) if A == B else _nearest_on_ellipse(t, A, B)
            changed = True
        if a != b and _tilt_gap(t, a, b) < margin:
            # the shrunk ellipse is not exactly the level set gap = margin: slide in along the ray
            lo, hi = 0.0, 1.0
            for _ in range(100):
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if _tilt_gap(mid * t, a, b) >= margin else (lo, mid)
            t, changed = lo * t, True
        if changed:
            r = np.array([-t[1], t[0]])
    if not changed:
        return q.copy()
    Qn = _compose(r, twist)
    cs, cp = _mat_to_quat(joint.cone_frame), _mat_to_quat(joint.plug_frame)
    qn = np.array(_qmul(_qmul(list(cs), list(Qn)), _qconj(list(cp))))
    if joint.kind == J.SPHERICAL:
        qn *= np.linalg.norm(q) / np.linalg.norm(qn)
        return -qn if qn @ q < 0 else qn
    return _zyx_from_matrix(_quat_to_mat(qn), q)
