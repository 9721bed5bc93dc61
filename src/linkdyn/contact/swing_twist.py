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

This is the definition of the source notes on Featherstone's algorithm, sec. 2.5.3, eqs. 27-29:
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

Cost (pure Python): :func:`ball_limit_gaps` about 20 us a joint, :func:`ball_limit_rows` about
0.35 ms (Taylor arithmetic on small arrays); ask for the gaps alone when the rows are not needed.
:func:`ball_limit_drift` keeps its last results, so asking it once per unit of the same joint
and state costs one evaluation.

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
  grow like 1 / cos(swing / 2)^2.  A swing cone (half-angles < pi) keeps the joint away from it.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..model import joints as J

__all__ = ["swing_twist", "swing_twist_angles", "swing_twist_quat", "rotation_from_swing_twist",
           "limit_rotation", "ball_limit_names", "ball_limit_gaps", "ball_limit_rows", "ball_limit_drift",
           "project_inside"]

#: below this |(x, y)| of the (unit) quaternion the tilt direction is undefined (swing ~ 0)
EPS_SWING = 1e-9
#: below this cos(swing / 2) the twist is undefined (swing ~ pi)
EPS_TWIST = 1e-8


# ---------------------------------------------------------------------------------------------
# second-order Taylor numbers along m directions: value a, first derivatives b (m,), pure second
# derivatives c (m,) (the directions do not mix: each is its own univariate Taylor series)
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
    See the module docstring (eqs. 27-29 of the source notes, eq. 29 corrected)."""
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
    """Quaternion of Rz(z) Ry(y) Rx(x) (floats or jets)."""
    qz = [0.0, 0.0, _sin(0.5 * z), _cos(0.5 * z)]
    qy = [0.0, _sin(0.5 * y), 0.0, _cos(0.5 * y)]
    qx = [_sin(0.5 * x), 0.0, 0.0, _cos(0.5 * x)]
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
    """Quaternion of R' = C^T R C_p (floats or jets); qj: the joint's quaternion or angles."""
    q = list(qj) if joint.kind == J.SPHERICAL else _zyx_quat(*qj)
    L = _L(joint)
    if not any(isinstance(x, _Jet) for x in q):
        return list(L @ np.array(q, dtype=float))
    m = next(x for x in q if isinstance(x, _Jet)).b.shape[0]
    q = [x if isinstance(x, _Jet) else _const(float(x), m) for x in q]
    a = L @ np.array([x.a for x in q])
    b = L @ np.array([x.b for x in q])
    c = L @ np.array([x.c for x in q])
    return [_Jet(a[i], b[i], c[i]) for i in range(4)]


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


def ball_limit_gaps(joint, q_joint) -> np.ndarray:
    """The gaps (k,) of the joint's limits (:func:`ball_limit_names` order), >= 0 inside: the
    cheap part of :func:`ball_limit_rows`."""
    joint = _ball(joint)
    return np.array([float(g) for g in _gaps(joint, _limit_quat(joint, _q(joint, q_joint)))])


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


def ball_limit_rows(joint, q_joint):
    """``(gaps (k,), rows (k, 3), drift_fn)`` of a ball joint's limits at ``q_joint`` (its 4
    quaternion or 3 angle coordinates), k = len(:func:`ball_limit_names`): d(gap)/dt =
    rows @ v_joint.  ``drift_fn(v_joint)`` is :func:`ball_limit_drift` at this q (None when the
    joint has no limits).  See the module docstring for the units and the singular points."""
    joint = _ball(joint)
    q = _q(joint, q_joint)
    k = len(ball_limit_names(joint))
    if k == 0:
        return np.zeros(0), np.zeros((0, 3)), None
    gs = _evaluate(joint, q, np.eye(3))
    gaps = np.array([g.a for g in gs])
    rows = np.array([g.b for g in gs])
    return gaps, rows, (lambda v_joint: ball_limit_drift(joint, q, v_joint))


def ball_limit_drift(joint, q_joint, v_joint) -> np.ndarray:
    """``d/dt(rows) @ v_joint`` (k,) along the joint's own motion (q' from v_joint), so that
    d^2(gap)/dt^2 = rows @ dv_joint/dt + drift.  Exact (second-order forward-mode automatic
    differentiation of the gaps), not a finite difference."""
    joint = _ball(joint)
    q = _q(joint, q_joint)
    v = np.asarray(v_joint, dtype=float).reshape(-1)
    if v.shape != (3,) or not np.isfinite(v).all():
        raise ValueError(f"v_joint: expected 3 finite velocities, got {v_joint!r}")
    if not ball_limit_names(joint):
        return np.zeros(0)
    key = (joint.kind, joint.swing, joint.twist, joint.cone_frame.tobytes(), joint.plug_frame.tobytes(),
           q.tobytes(), v.tobytes())
    hit = _DRIFT_CACHE.get(key)
    if hit is None:                      # callers often ask once per unit of the same joint and state
        hit = np.array([g.c[0] for g in _evaluate(joint, q, v[:, None])])
        hit.flags.writeable = False
        if len(_DRIFT_CACHE) >= 64:
            _DRIFT_CACHE.pop(next(iter(_DRIFT_CACHE)))
        _DRIFT_CACHE[key] = hit
    return hit.copy()


_DRIFT_CACHE: dict = {}


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
