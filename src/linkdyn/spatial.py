"""Spatial algebra and rotation toolkit (pure NumPy, batched).

Conventions (identical to Pinocchio):

* spatial motion vectors are ``[v; w]`` (linear first), force vectors ``[f; n]``;
* a pose ``M = aMb = (R, p)`` maps b-coordinates to a-coordinates,
  ``x_a = R x_b + p``;
* quaternions are stored ``[x, y, z, w]`` (scalar last) and multiplied with
  the Hamilton product, so ``R(a * b) = R(a) @ R(b)``.

Every function takes a single input or a stack with leading batch axes
(broadcast between arguments) and returns the matching stack.  Inputs are
validated once at the public entry point: bad shapes, non-finite values and
incompatible batch axes raise ``ValueError`` naming the argument.  Rotation
matrices are assumed orthonormal (use :func:`is_rotation_matrix` to check).

References: Featherstone (2008), ch. 2 (spatial vectors, Plucker transforms ``X(R, r)``,
cross products, spatial inertia; the book orders vectors ``[w; v]``, the blocks here are
permuted to ``[v; w]``, as Pinocchio does); Spong, Hutchinson and Vidyasagar (2006), ch. 2
(rotation matrices, Euler and roll-pitch-yaw angles, quaternions, homogeneous transforms);
Siciliano et al. (2009) for the quaternion and Euler-angle rate equations.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "skew", "unskew", "rotx", "roty", "rotz", "is_rotation_matrix",
    "axis_angle_to_matrix", "matrix_to_axis_angle", "exp3", "log3",
    "rpy_to_matrix", "matrix_to_rpy", "zyx_to_matrix", "matrix_to_zyx",
    "euler_zyz_to_matrix", "matrix_to_euler_zyz",
    "rpy_rate_matrix", "rpy_rate_matrix_inverse",
    "zyx_rate_matrix", "zyx_rate_matrix_inverse",
    "euler_zyz_rate_matrix", "euler_zyz_rate_matrix_inverse",
    "quat_to_matrix", "matrix_to_quat", "quat_multiply", "quat_conjugate",
    "quat_inverse", "quat_normalize", "quat_rotate", "quat_from_axis_angle",
    "quat_to_axis_angle", "quat_derivative", "quat_angular_velocity",
    "exp6", "log6", "pose_inverse", "transform", "transform_inverse",
    "transform_point", "transform_compose", "motion_transform",
    "motion_transform_inverse", "force_transform", "cross_motion",
    "cross_force", "spatial_inertia", "inertia_parameters",
    "inertia_transform", "kinetic_energy",
]

UNIT_TOL = 1e-6     # allowed | |quat| - 1 | for functions reading a rotation
_ZERO_TOL = 1e-12   # norms below this count as zero
_LOCK_TOL = 1e-12   # |cos pitch|, |sin theta| below this: gimbal lock
_SERIES_TOL = 1e-2  # below this angle, Rodrigues coefficients use Taylor series
_FRAMES = ("body", "world")


# ----------------------------------------------------------------- validation

def _shape_str(tail):
    return "(" + ", ".join(["..."] + [str(d) for d in tail]) + ")"


def _arr(x, name, tail=()):
    """``x`` as a float array of shape ``(..., *tail)`` with finite entries."""
    expected = _shape_str(tail)
    if np.iscomplexobj(x):
        raise ValueError(f"{name}: expected a real array of shape {expected}, got complex")
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a real array of shape {expected}, "
                         f"got {type(x).__name__}") from None
    if a.ndim < len(tail) or a.shape[a.ndim - len(tail):] != tuple(tail):
        raise ValueError(f"{name}: expected shape {expected}, got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: contains non-finite values (nan or inf)")
    return a


def _inputs(*specs):
    """Validate ``(name, value, tail)`` specs and broadcast their batch axes."""
    arrays = [_arr(x, name, tail) for name, x, tail in specs]
    tails = [a.shape[a.ndim - len(t):] for a, (_, _, t) in zip(arrays, specs)]
    batches = [a.shape[:a.ndim - len(t)] for a, t in zip(arrays, tails)]
    try:
        batch = np.broadcast_shapes(*batches)
    except ValueError:
        got = ", ".join(f"{n} {a.shape}" for (n, _, _), a in zip(specs, arrays))
        raise ValueError(f"batch axes do not broadcast: {got}") from None
    return [np.broadcast_to(a, batch + t) for a, t in zip(arrays, tails)]


def _normalized(x, name, what="zero norm"):
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    if np.any(n < _ZERO_TOL):
        raise ValueError(f"{name}: {what} (norm < {_ZERO_TOL:g})")
    return x / n


def _unit_quat(q, name="quat"):
    """Check that ``q`` has unit norm within UNIT_TOL; return it renormalized."""
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    err = np.max(np.abs(n - 1.0), initial=0.0)
    if err > UNIT_TOL:
        raise ValueError(f"{name}: not unit norm (max | |q| - 1 | = {err:.3g} > {UNIT_TOL:g}); "
                         "normalize with quat_normalize")
    return q / n


def _frame(frame):
    if frame not in _FRAMES:
        raise ValueError(f"frame: expected 'body' or 'world', got {frame!r}")
    return frame


def _scalar(x):
    """Numpy scalar for 0-d results, the array otherwise."""
    return x[()]


# ------------------------------------------------------------------ kernels

def _mat(entries, n):
    """Stack ``n*n`` row-major (broadcastable) entries into ``(..., n, n)``."""
    e = np.broadcast_arrays(*[np.asarray(x, dtype=float) for x in entries])
    return np.stack(e, axis=-1).reshape(e[0].shape + (n, n))


def _skew(v):
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    return _mat([0, -z, y, z, 0, -x, -y, x, 0], 3)


def _vee(S):
    return 0.5 * np.stack([S[..., 2, 1] - S[..., 1, 2],
                           S[..., 0, 2] - S[..., 2, 0],
                           S[..., 1, 0] - S[..., 0, 1]], axis=-1)


def _mv(A, x):
    return np.einsum("...ij,...j->...i", A, x)


def _T(A):
    return np.swapaxes(A, -1, -2)


def _elementary(axis, angle):
    """Rotation by ``angle`` about coordinate axis 0, 1 or 2 (Spong, Hutchinson and Vidyasagar 2006, ch. 2)."""
    c, s = np.cos(angle), np.sin(angle)
    i, j = (axis + 1) % 3, (axis + 2) % 3
    R = np.zeros(np.shape(angle) + (3, 3))
    R[..., axis, axis] = 1.0
    R[..., i, i], R[..., j, j], R[..., i, j], R[..., j, i] = c, c, -s, s
    return R


def _series(theta, exact, coeffs):
    """``exact(theta)``, or its Taylor series in ``theta**2`` for small angles."""
    small = theta < _SERIES_TOL
    taylor = np.polynomial.polynomial.polyval(theta**2, coeffs)
    return np.where(small, taylor, exact(np.where(small, 1.0, theta)))


def _sinc(t):     # sin t / t
    return _series(t, lambda t: np.sin(t) / t, (1, -1 / 6, 1 / 120, -1 / 5040))


def _cosc(t):     # (1 - cos t) / t^2
    return _series(t, lambda t: 2 * np.sin(t / 2) ** 2 / t**2,
                   (1 / 2, -1 / 24, 1 / 720, -1 / 40320))


def _sinc3(t):    # (t - sin t) / t^3
    return _series(t, lambda t: (t - np.sin(t)) / t**3,
                   (1 / 6, -1 / 120, 1 / 5040, -1 / 362880))


def _logc(t):     # (1 - (t/2) cot(t/2)) / t^2, the W^2 coefficient of V^-1
    return _series(t, lambda t: (1 - (t / 2) / np.tan(t / 2)) / t**2,
                   (1 / 12, 1 / 720, 1 / 30240, 1 / 1209600))


def _poly_skew(K, a, b):
    """``I + a K + b K^2`` (Rodrigues-type series of a skew matrix)."""
    a, b = np.asarray(a)[..., None, None], np.asarray(b)[..., None, None]
    return np.eye(3) + a * K + b * (K @ K)


def _exp3(w):
    t = np.linalg.norm(w, axis=-1)
    return _poly_skew(_skew(w), _sinc(t), _cosc(t))


def _qmul(a, b):
    av, aw, bv, bw = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    vec = aw * bv + bw * av + np.cross(av, bv)
    return np.concatenate([vec, aw * bw - np.sum(av * bv, -1, keepdims=True)], -1)


def _qconj(q):
    return q * np.array([-1.0, -1.0, -1.0, 1.0])


def _qinv(q, name="quat"):
    """``conj(q) / |q|^2``; ValueError for a zero quaternion."""
    return _qconj(_normalized(q, name)) / np.linalg.norm(q, axis=-1, keepdims=True)


def _pure(w):
    """Quaternion ``[w, 0]`` of a 3-vector."""
    return np.concatenate([w, np.zeros(w.shape[:-1] + (1,))], -1)


def _quat_to_matrix(q):
    v, w = q[..., :3], q[..., 3]
    d = (w**2 - np.sum(v * v, -1))[..., None, None]
    return d * np.eye(3) + 2 * np.einsum("...i,...j->...ij", v, v) + 2 * w[..., None, None] * _skew(v)


def _matrix_to_quat(R):
    r = [[R[..., i, j] for j in range(3)] for i in range(3)]
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = r
    K = _mat([1 + r00 - r11 - r22, r01 + r10, r02 + r20, r21 - r12,
              r01 + r10, 1 - r00 + r11 - r22, r12 + r21, r02 - r20,
              r02 + r20, r12 + r21, 1 - r00 - r11 + r22, r10 - r01,
              r21 - r12, r02 - r20, r10 - r01, 1 + r00 + r11 + r22], 4)  # = 4 q q^T
    diag = np.diagonal(K, axis1=-2, axis2=-1)
    i = np.argmax(diag, axis=-1)[..., None]
    col = np.take_along_axis(K, i[..., None], axis=-1)[..., 0]
    q = col / (2 * np.sqrt(np.take_along_axis(diag, i, axis=-1)))
    q = np.where(q[..., 3:] < 0, -q, q)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def _quat_to_axis_angle(q):
    q = np.where(q[..., 3:] < 0, -q, q)
    v, w = q[..., :3], q[..., 3]
    n = np.hypot(np.hypot(v[..., 0], v[..., 1]), v[..., 2])  # no underflow for tiny angles
    axis = np.where(n[..., None] > 0, v / np.where(n > 0, n, 1.0)[..., None], [1.0, 0.0, 0.0])
    # once more: a subnormal v (an angle near 1e-308) carries too few bits for v / |v| to be of
    # unit norm to round-off (1 - 8e-12 was seen); the direction itself is what it is
    axis = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    return axis, 2 * np.arctan2(n, w)


def _log3(R):
    axis, angle = _quat_to_axis_angle(_matrix_to_quat(R))
    return axis * angle[..., None]


def _euler_to_matrix(angles, axes):
    R0, R1, R2 = (_elementary(ax, angles[..., k]) for k, ax in enumerate(axes))
    return R0 @ R1 @ R2


def _euler_rate_matrix(angles, axes):
    """E with ``omega_world = E @ angles_dot`` for ``R = R_a0 R_a1 R_a2``."""
    R0 = _elementary(axes[0], angles[..., 0])
    R01 = R0 @ _elementary(axes[1], angles[..., 1])
    e0 = np.broadcast_to(np.eye(3)[:, axes[0]], R0.shape[:-1])
    return np.stack([e0, R0[..., :, axes[1]], R01[..., :, axes[2]]], axis=-1)


def _rpy_rate(rpy):
    """rpy rate matrix: the zyx one on reversed angles, columns reversed."""
    return _euler_rate_matrix(rpy[..., ::-1], (2, 1, 0))[..., ::-1]


def _checked_inverse(E, measure, tol, name, where):
    if np.any(np.abs(measure) < tol):
        raise ValueError(f"{name}: rate matrix is singular at {where}")
    return np.linalg.inv(E)


def _matrix_to_zyx(R):
    cy = np.hypot(R[..., 2, 1], R[..., 2, 2])
    y = np.arctan2(-R[..., 2, 0], cy)
    x = np.where(cy < _LOCK_TOL, 0.0, np.arctan2(R[..., 2, 1], R[..., 2, 2]))
    c, s = np.cos(x), np.sin(x)
    # column 1 of R Rx(x)^T = Rz(z) Ry(y) e_y = [-sin z, cos z, 0]
    z = np.arctan2(s * R[..., 0, 2] - c * R[..., 0, 1], c * R[..., 1, 1] - s * R[..., 1, 2])
    return np.stack([z, y, x], axis=-1)


def _pose_inverse(R, p):
    Rt = _T(R)
    return Rt, -_mv(Rt, p)


def _split(T, name="T"):
    """Check the last row of a (validated) homogeneous transform; return ``(R, p)``."""
    if np.any(np.abs(T[..., 3, :] - [0.0, 0.0, 0.0, 1.0]) > _ZERO_TOL):
        raise ValueError(f"{name}: last row must be [0, 0, 0, 1]")
    return T[..., :3, :3], T[..., :3, 3]


def _transform(R, p):
    bottom = np.broadcast_to([0.0, 0.0, 0.0, 1.0], R.shape[:-2] + (1, 4))
    return np.concatenate([np.concatenate([R, p[..., None]], -1), bottom], -2)


def _motion_transform(R, p):
    return np.block([[R, _skew(p) @ R], [np.zeros_like(R), R]])


def _force_transform(R, p):
    return np.block([[R, np.zeros_like(R)], [_skew(p) @ R, R]])


def _cross_motion(v):
    W = _skew(v[..., 3:])
    return np.block([[W, _skew(v[..., :3])], [np.zeros_like(W), W]])


# ------------------------------------------------------------ SO(3) basics

def skew(v: ArrayLike) -> NDArray[np.float64]:
    """Skew matrix ``S(v)`` with ``S(v) @ u = v x u`` (Spong, Hutchinson and Vidyasagar 2006, ch. 2).

    ``v``: (..., 3) -> (..., 3, 3).
    """
    return _skew(_arr(v, "v", (3,)))


def unskew(S: ArrayLike) -> NDArray[np.float64]:
    """Vector of the skew-symmetric part of ``S``: inverse of :func:`skew`.

    ``S``: (..., 3, 3) -> (..., 3).  The symmetric part of ``S`` is ignored.
    """
    return _vee(_arr(S, "S", (3, 3)))


def rotx(angle: ArrayLike) -> NDArray[np.float64]:
    """Rotation about x by ``angle`` [rad], (...) -> (..., 3, 3) (Spong, Hutchinson and Vidyasagar 2006, ch. 2)."""
    return _elementary(0, _arr(angle, "angle"))


def roty(angle: ArrayLike) -> NDArray[np.float64]:
    """Rotation about y by ``angle`` [rad], (...) -> (..., 3, 3) (Spong, Hutchinson and Vidyasagar 2006, ch. 2)."""
    return _elementary(1, _arr(angle, "angle"))


def rotz(angle: ArrayLike) -> NDArray[np.float64]:
    """Rotation about z by ``angle`` [rad], (...) -> (..., 3, 3) (Spong, Hutchinson and Vidyasagar 2006, ch. 2)."""
    return _elementary(2, _arr(angle, "angle"))


def is_rotation_matrix(R: ArrayLike, tol: float = 1e-9) -> np.bool_ | NDArray[np.bool_]:
    """Boolean (...) array: ``R^T R = I`` and ``det R = 1`` within ``tol``."""
    R = _arr(R, "R", (3, 3))
    orth = np.abs(_T(R) @ R - np.eye(3)).max(axis=(-2, -1)) <= tol
    return _scalar(orth & (np.abs(np.linalg.det(R) - 1) <= tol))


def axis_angle_to_matrix(axis: ArrayLike, angle: ArrayLike) -> NDArray[np.float64]:
    """Rotation by ``angle`` about ``axis`` (Rodrigues; Spong, Hutchinson and Vidyasagar 2006, ch. 2).

    ``R = I + sin(a) K + (1 - cos(a)) K^2`` with ``K = skew(axis / |axis|)``.
    ``axis``: (..., 3), normalized here (zero axis -> ValueError); ``angle``: (...).
    """
    axis, angle = _inputs(("axis", axis, (3,)), ("angle", angle, ()))
    k = _normalized(axis, "axis", "zero-length axis")
    return _poly_skew(_skew(k), np.sin(angle), 1 - np.cos(angle))


def matrix_to_axis_angle(R: ArrayLike) -> tuple[NDArray[np.float64], float | NDArray[np.float64]]:
    """``(axis, angle)`` of a rotation matrix, ``angle`` in [0, pi].

    Computed from the Shepperd quaternion, so it is accurate near 0 and near
    pi.  For the identity the axis is ``[1, 0, 0]``; at ``angle = pi`` the
    axis sign is whichever Shepperd's method returns.
    """
    axis, angle = _quat_to_axis_angle(_matrix_to_quat(_arr(R, "R", (3, 3))))
    return axis, _scalar(angle)


def exp3(omega: ArrayLike) -> NDArray[np.float64]:
    """SO(3) exponential ``exp(skew(omega))``: rotation by ``|omega|`` about ``omega``.

    ``omega``: (..., 3) -> (..., 3, 3); exact at ``omega = 0`` (Taylor series).
    """
    return _exp3(_arr(omega, "omega", (3,)))


def log3(R: ArrayLike) -> NDArray[np.float64]:
    """SO(3) logarithm: rotation vector ``omega`` with ``|omega|`` in [0, pi].

    Inverse of :func:`exp3`, robust near 0 and near pi (via Shepperd's quaternion).
    """
    return _log3(_arr(R, "R", (3, 3)))


# ------------------------------------------------------------- Euler angles

def rpy_to_matrix(rpy: ArrayLike) -> NDArray[np.float64]:
    """``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)`` from ``rpy = [roll, pitch, yaw]`` (..., 3).

    Same product as Spong, Hutchinson and Vidyasagar 2006, ch. 2 (some texts name the angles in the
    reverse order); roll is about x as in URDF and ``pinocchio.rpy``.
    """
    return _euler_to_matrix(_arr(rpy, "rpy", (3,))[..., ::-1], (2, 1, 0))


def matrix_to_rpy(R: ArrayLike) -> NDArray[np.float64]:
    """``[roll, pitch, yaw]`` of ``R = Rz(yaw) Ry(pitch) Rx(roll)``.

    Principal branch: pitch in [-pi/2, pi/2], roll and yaw in [-pi, pi].  At
    gimbal lock (|cos pitch| < 1e-12) roll is set to 0 and yaw carries the
    whole rotation about z; yaw is always computed from the already-chosen
    roll, so the angles reproduce ``R`` to round-off even near the lock.
    """
    return _matrix_to_zyx(_arr(R, "R", (3, 3)))[..., ::-1]


def zyx_to_matrix(zyx: ArrayLike) -> NDArray[np.float64]:
    """``R = Rz(z) @ Ry(y) @ Rx(x)`` from ``zyx = [z, y, x]`` (..., 3).

    The ball-joint angles of Baerlocher and Boulic 2001; equal to
    ``rpy_to_matrix(zyx[..., ::-1])``.
    """
    return _euler_to_matrix(_arr(zyx, "zyx", (3,)), (2, 1, 0))


def matrix_to_zyx(R: ArrayLike) -> NDArray[np.float64]:
    """``[z, y, x]`` of ``R = Rz(z) Ry(y) Rx(x)``; branch and gimbal lock as :func:`matrix_to_rpy`."""
    return _matrix_to_zyx(_arr(R, "R", (3, 3)))


def euler_zyz_to_matrix(zyz: ArrayLike) -> NDArray[np.float64]:
    """``R = Rz(phi) @ Ry(theta) @ Rz(psi)`` from ``zyz = [phi, theta, psi]`` (Spong, Hutchinson and Vidyasagar 2006, ch. 2)."""
    return _euler_to_matrix(_arr(zyz, "zyz", (3,)), (2, 1, 2))


def matrix_to_euler_zyz(R: ArrayLike) -> NDArray[np.float64]:
    """``[phi, theta, psi]`` of ``R = Rz(phi) Ry(theta) Rz(psi)``.

    Principal branch: theta in [0, pi], phi and psi in [-pi, pi].  At the
    singularity (|sin theta| < 1e-12, theta = 0 or pi) phi is set to 0 and psi
    carries the rotation; psi is always computed from the chosen phi.
    """
    R = _arr(R, "R", (3, 3))
    st = np.hypot(R[..., 0, 2], R[..., 1, 2])
    theta = np.arctan2(st, R[..., 2, 2])
    phi = np.where(st < _LOCK_TOL, 0.0, np.arctan2(R[..., 1, 2], R[..., 0, 2]))
    c, s = np.cos(phi), np.sin(phi)
    # row 1 of Rz(phi)^T R = Ry(theta) Rz(psi) row 1 = [sin psi, cos psi, 0]
    psi = np.arctan2(c * R[..., 1, 0] - s * R[..., 0, 0], c * R[..., 1, 1] - s * R[..., 0, 1])
    return np.stack([phi, theta, psi], axis=-1)


# -------------------------------------------------- Euler-angle rate matrices

def zyx_rate_matrix(zyx: ArrayLike) -> NDArray[np.float64]:
    """E with ``omega_world = E @ [z_dot, y_dot, x_dot]`` for :func:`zyx_to_matrix`.

    Siciliano et al. 2009, sec. 3.6 (``omega = T(phi) phi_dot``); columns are ``e_z``,
    ``Rz e_y``, ``Rz Ry e_x``.
    """
    return _euler_rate_matrix(_arr(zyx, "zyx", (3,)), (2, 1, 0))


def zyx_rate_matrix_inverse(zyx: ArrayLike, tol: float = 1e-9) -> NDArray[np.float64]:
    """Inverse of :func:`zyx_rate_matrix`; ValueError where |cos y| < ``tol``."""
    zyx = _arr(zyx, "zyx", (3,))
    return _checked_inverse(_euler_rate_matrix(zyx, (2, 1, 0)), np.cos(zyx[..., 1]), tol,
                            "zyx", "y = +-pi/2 (cos y ~ 0)")


def rpy_rate_matrix(rpy: ArrayLike) -> NDArray[np.float64]:
    """E with ``omega_world = E @ [roll_dot, pitch_dot, yaw_dot]`` for :func:`rpy_to_matrix`.

    ``E = [[cy cp, -sy, 0], [sy cp, cy, 0], [-sp, 0, 1]]``; this is the
    angular block of the ball-joint Jacobian of Baerlocher and Boulic 2001 with
    ``q = [roll, pitch, yaw]`` (Siciliano et al. 2009, ch. 3).
    """
    return _rpy_rate(_arr(rpy, "rpy", (3,)))


def rpy_rate_matrix_inverse(rpy: ArrayLike, tol: float = 1e-9) -> NDArray[np.float64]:
    """Inverse of :func:`rpy_rate_matrix`; ValueError where |cos pitch| < ``tol``."""
    rpy = _arr(rpy, "rpy", (3,))
    return _checked_inverse(_rpy_rate(rpy), np.cos(rpy[..., 1]), tol, "rpy", "pitch = +-pi/2 (cos pitch ~ 0)")


def euler_zyz_rate_matrix(zyz: ArrayLike) -> NDArray[np.float64]:
    """E with ``omega_world = E @ [phi_dot, theta_dot, psi_dot]`` for :func:`euler_zyz_to_matrix`.

    ``E = [[0, -s_phi, c_phi s_theta], [0, c_phi, s_phi s_theta], [1, 0, c_theta]]``
    (Siciliano et al. 2009, ch. 3).
    """
    return _euler_rate_matrix(_arr(zyz, "zyz", (3,)), (2, 1, 2))


def euler_zyz_rate_matrix_inverse(zyz: ArrayLike, tol: float = 1e-9) -> NDArray[np.float64]:
    """Inverse of :func:`euler_zyz_rate_matrix`; ValueError where |sin theta| < ``tol``."""
    zyz = _arr(zyz, "zyz", (3,))
    return _checked_inverse(_euler_rate_matrix(zyz, (2, 1, 2)), np.sin(zyz[..., 1]), tol,
                            "zyz", "theta = 0 or pi (sin theta ~ 0)")


# --------------------------------------------------------------- quaternions

def quat_to_matrix(quat: ArrayLike) -> NDArray[np.float64]:
    """Rotation matrix of a unit quaternion ``[x, y, z, w]`` (Spong, Hutchinson and Vidyasagar 2006, ch. 2).

    ``R = (w^2 - |e|^2) I + 2 e e^T + 2 w S(e)`` with ``e = [x, y, z]``.
    ValueError if | |quat| - 1 | > 1e-6 ("not unit norm"); within the
    tolerance the quaternion is renormalized first.
    """
    return _quat_to_matrix(_unit_quat(_arr(quat, "quat", (4,))))


def matrix_to_quat(R: ArrayLike) -> NDArray[np.float64]:
    """Unit quaternion ``[x, y, z, w]`` of ``R`` with ``w >= 0`` (Shepperd's method).

    Builds ``K = 4 q q^T`` from the entries of ``R`` (Spong, Hutchinson and Vidyasagar 2006, ch. 2
    are its ``w`` column) and takes the column with the largest diagonal, so
    no division by a small number occurs (accurate near ``angle = pi``).
    """
    return _matrix_to_quat(_arr(R, "R", (3, 3)))


def quat_multiply(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """Hamilton product ``a * b`` of ``[x, y, z, w]`` quaternions.

    ``quat_to_matrix(quat_multiply(a, b)) == quat_to_matrix(a) @ quat_to_matrix(b)``.
    """
    return _qmul(*_inputs(("a", a, (4,)), ("b", b, (4,))))


def quat_conjugate(quat: ArrayLike) -> NDArray[np.float64]:
    """Conjugate ``[-x, -y, -z, w]``."""
    return _qconj(_arr(quat, "quat", (4,)))


def quat_inverse(quat: ArrayLike) -> NDArray[np.float64]:
    """Multiplicative inverse ``conj(q) / |q|^2`` (any non-zero quaternion)."""
    return _qinv(_arr(quat, "quat", (4,)))


def quat_normalize(quat: ArrayLike) -> NDArray[np.float64]:
    """``quat / |quat|``; ValueError for a zero quaternion."""
    return _normalized(_arr(quat, "quat", (4,)), "quat")


def quat_rotate(quat: ArrayLike, v: ArrayLike) -> NDArray[np.float64]:
    """Rotate ``v`` (..., 3) by the unit quaternion ``quat``: ``R(quat) @ v``."""
    q, v = _inputs(("quat", quat, (4,)), ("v", v, (3,)))
    q = _unit_quat(q)
    u, w = q[..., :3], q[..., 3:]
    t = 2 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def quat_from_axis_angle(axis: ArrayLike, angle: ArrayLike) -> NDArray[np.float64]:
    """Quaternion ``[k sin(a/2), cos(a/2)]``, ``k = axis / |axis|`` (Spong, Hutchinson and Vidyasagar 2006, ch. 2).

    ``w`` is negative for angles beyond pi (no sign canonicalization).
    """
    axis, angle = _inputs(("axis", axis, (3,)), ("angle", angle, ()))
    k = _normalized(axis, "axis", "zero-length axis")
    half = angle[..., None] / 2
    return np.concatenate([k * np.sin(half), np.cos(half)], -1)


def quat_to_axis_angle(quat: ArrayLike) -> tuple[NDArray[np.float64], float | NDArray[np.float64]]:
    """``(axis, angle)`` of a unit quaternion, ``angle`` in [0, pi] (``q`` and ``-q`` agree).

    For the identity the axis is ``[1, 0, 0]``.
    """
    axis, angle = _quat_to_axis_angle(_unit_quat(_arr(quat, "quat", (4,))))
    return axis, _scalar(angle)


def quat_derivative(quat: ArrayLike, omega: ArrayLike, frame: str = "body") -> NDArray[np.float64]:
    """Time derivative of ``quat`` for angular velocity ``omega``.

    ``frame="body"`` (the default: linkdyn's joint velocities, like Pinocchio's, are in the
    body frame): ``dq = 0.5 q * [omega, 0]`` (``R_dot = R skew(omega)``).
    ``frame="world"``: ``dq = 0.5 [omega, 0] * q`` (``R_dot = skew(omega) R``), the form most
    textbooks print (e.g. Siciliano et al. 2009):
    ``[e_dot; w_dot] = 0.5 [w I - S(e); -e^T] omega``.  Pass ``frame="world"`` to compare with
    them: the two differ unless omega is along the rotation axis.
    """
    q, w = _inputs(("quat", quat, (4,)), ("omega", omega, (3,)))
    pairs = {"body": (q, _pure(w)), "world": (_pure(w), q)}
    return 0.5 * _qmul(*pairs[_frame(frame)])


def quat_angular_velocity(quat: ArrayLike, dquat: ArrayLike, frame: str = "body") -> NDArray[np.float64]:
    """Angular velocity from ``quat`` and ``dquat``: inverse of :func:`quat_derivative`.

    ``body``: ``omega = 2 vec(q^-1 * dq)``; ``world``: ``omega = 2 vec(dq * q^-1)``
    (Siciliano et al. 2009, ch. 3, ``omega = 2 J_E^T [e_dot; w_dot]`` for unit ``q``).
    The component of ``dquat`` along ``quat`` (norm change) is ignored.
    """
    q, dq = _inputs(("quat", quat, (4,)), ("dquat", dquat, (4,)))
    pairs = {"body": (_qinv(q), dq), "world": (dq, _qinv(q))}
    return 2 * _qmul(*pairs[_frame(frame)])[..., :3]


# ------------------------------------------------------------- SE(3), poses

def exp6(nu: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """SE(3) exponential of the twist ``nu = [v; w]``: returns ``(R, p)``.

    ``R = exp3(w)``, ``p = V(w) v`` with the left Jacobian
    ``V = I + (1 - cos t)/t^2 W + (t - sin t)/t^3 W^2``, ``t = |w|``
    (same as ``pinocchio.exp6``).
    """
    nu = _arr(nu, "nu", (6,))
    v, w = nu[..., :3], nu[..., 3:]
    t, W = np.linalg.norm(w, axis=-1), _skew(w)
    return _poly_skew(W, _sinc(t), _cosc(t)), _mv(_poly_skew(W, _cosc(t), _sinc3(t)), v)


def log6(R: ArrayLike, p: ArrayLike) -> NDArray[np.float64]:
    """SE(3) logarithm of ``(R, p)``: twist ``nu = [v; w]`` with ``|w|`` in [0, pi].

    ``w = log3(R)``, ``v = V^-1 p``, ``V^-1 = I - W/2 + (1 - (t/2) cot(t/2))/t^2 W^2``
    (same as ``pinocchio.log6``).
    """
    R, p = _inputs(("R", R, (3, 3)), ("p", p, (3,)))
    w = _log3(R)
    t = np.linalg.norm(w, axis=-1)
    Vinv = _poly_skew(_skew(w), -0.5, _logc(t))
    return np.concatenate([_mv(Vinv, p), w], -1)


def pose_inverse(R: ArrayLike, p: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Inverse pose ``bMa = (R^T, -R^T p)`` of ``aMb = (R, p)`` (Spong, Hutchinson and Vidyasagar 2006, ch. 2)."""
    return _pose_inverse(*_inputs(("R", R, (3, 3)), ("p", p, (3,))))


def transform(R: ArrayLike, p: ArrayLike) -> NDArray[np.float64]:
    """Homogeneous transform ``[[R, p], [0, 1]]`` (..., 4, 4) (Spong, Hutchinson and Vidyasagar 2006, ch. 2)."""
    return _transform(*_inputs(("R", R, (3, 3)), ("p", p, (3,))))


def transform_inverse(T: ArrayLike) -> NDArray[np.float64]:
    """Inverse ``[[R^T, -R^T p], [0, 1]]`` of a homogeneous transform (Spong, Hutchinson and Vidyasagar 2006, ch. 2)."""
    return _transform(*_pose_inverse(*_split(_arr(T, "T", (4, 4)))))


def transform_point(T: ArrayLike, x: ArrayLike) -> NDArray[np.float64]:
    """``R x + p`` for points ``x`` (..., 3) (Spong, Hutchinson and Vidyasagar 2006, ch. 2)."""
    T, x = _inputs(("T", T, (4, 4)), ("x", x, (3,)))
    R, p = _split(T)
    return _mv(R, x) + p


def transform_compose(T1: ArrayLike, T2: ArrayLike) -> NDArray[np.float64]:
    """``T1 @ T2``: ``aTc`` from ``aTb``, ``bTc`` (Spong, Hutchinson and Vidyasagar 2006, ch. 2)."""
    T1, T2 = _inputs(("T1", T1, (4, 4)), ("T2", T2, (4, 4)))
    _split(T1, "T1")
    _split(T2, "T2")
    return T1 @ T2


# ----------------------------------------------------- spatial (6D) algebra

def motion_transform(R: ArrayLike, p: ArrayLike) -> NDArray[np.float64]:
    """Plücker motion transform ``aXb = [[R, skew(p) R], [0, R]]`` of ``aMb = (R, p)``.

    ``v_a = X v_b`` for motion vectors ``[v; w]`` (``pinocchio.SE3.action``).
    Featherstone 2008; the ``X(R, r)`` of Featherstone 2008, ch. 2
    maps the other way: ``X(R, r) = motion_transform_inverse(R, r)``, and
    ``X(M1 M2) = X(M1) X(M2)`` (Featherstone 2008, ch. 2).
    """
    return _motion_transform(*_inputs(("R", R, (3, 3)), ("p", p, (3,))))


def motion_transform_inverse(R: ArrayLike, p: ArrayLike) -> NDArray[np.float64]:
    """``bXa = X(aMb)^-1 = [[R^T, -R^T skew(p)], [0, R^T]]`` (Featherstone 2008, ch. 2)."""
    return _motion_transform(*_pose_inverse(*_inputs(("R", R, (3, 3)), ("p", p, (3,)))))


def force_transform(R: ArrayLike, p: ArrayLike) -> NDArray[np.float64]:
    """Force transform ``aX*b = [[R, 0], [skew(p) R, R]] = X^-T`` (Featherstone 2008).

    ``f_a = X* f_b`` for force vectors ``[f; n]`` (``pinocchio.SE3.dualAction``).
    """
    return _force_transform(*_inputs(("R", R, (3, 3)), ("p", p, (3,))))


def cross_motion(v: ArrayLike) -> NDArray[np.float64]:
    """Matrix of ``v x`` on motion vectors: ``[[S(w), S(v_lin)], [0, S(w)]]``.

    ``cross_motion(v) @ u = [w x u_lin + v_lin x u_ang; w x u_ang]`` (Featherstone 2008
    "cross product" slide, blocks permuted to ``[v; w]``).
    """
    return _cross_motion(_arr(v, "v", (6,)))


def cross_force(v: ArrayLike) -> NDArray[np.float64]:
    """Matrix of ``v x*`` on force vectors: ``-cross_motion(v)^T = [[S(w), 0], [S(v_lin), S(w)]]``.

    ``cross_force(v) @ f = [w x f_lin; w x f_ang + v_lin x f_lin]`` (Featherstone 2008).
    """
    return -_T(_cross_motion(_arr(v, "v", (6,))))


def spatial_inertia(mass: ArrayLike, com: ArrayLike, inertia_com: ArrayLike) -> NDArray[np.float64]:
    """6x6 spatial inertia about the frame origin (Featherstone 2008).

    ``I = [[m 1, -m S(c)], [m S(c), I_c - m S(c) S(c)]]`` with the mass ``m``
    (>= 0), centre of mass ``c`` and rotational inertia ``I_c`` about the
    centre of mass, all in the body frame (``pinocchio.Inertia(m, c, I_c).matrix()``).
    """
    m, c, Ic = _inputs(("mass", mass, ()), ("com", com, (3,)), ("inertia_com", inertia_com, (3, 3)))
    if np.any(m < 0):
        raise ValueError("mass: must be non-negative")
    if np.any(np.abs(Ic - _T(Ic)) > 1e-9 * (1 + np.abs(Ic).max())):
        raise ValueError("inertia_com: expected a symmetric matrix")
    C, m = _skew(c), m[..., None, None]
    return np.block([[m * np.eye(3), -m * C], [m * C, Ic - m * (C @ C)]])


def inertia_parameters(I6: ArrayLike) -> tuple[float | NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``(mass, com, inertia_com)`` of a spatial inertia: inverse of :func:`spatial_inertia`.

    The mass is the mean of the diagonal of the linear block; it must be positive.
    """
    I6 = _arr(I6, "I6", (6, 6))
    m = np.trace(I6[..., :3, :3], axis1=-2, axis2=-1) / 3
    if np.any(m <= 0):
        raise ValueError("I6: mass must be positive to recover the centre of mass")
    c = _vee(I6[..., 3:, :3]) / m[..., None]
    C = _skew(c)
    return _scalar(m), c, I6[..., 3:, 3:] + m[..., None, None] * (C @ C)


def inertia_transform(R: ArrayLike, p: ArrayLike, I6: ArrayLike) -> NDArray[np.float64]:
    """Inertia in frame a from ``I6`` in frame b: ``I_a = X* I_b X^-1`` for ``aMb = (R, p)``.

    Keeps the kinetic energy invariant (``X^-1 = X*^T``); same as
    ``pinocchio.SE3.act(Inertia)``.
    """
    R, p, I6 = _inputs(("R", R, (3, 3)), ("p", p, (3,)), ("I6", I6, (6, 6)))
    Xf = _force_transform(R, p)
    return np.einsum("...ij,...jk,...lk->...il", Xf, I6, Xf)


def kinetic_energy(I6: ArrayLike, v: ArrayLike) -> float | NDArray[np.float64]:
    """Kinetic energy ``0.5 v^T I v`` of spatial velocity ``v`` (..., 6)."""
    I6, v = _inputs(("I6", I6, (6, 6)), ("v", v, (6,)))
    return _scalar(0.5 * np.einsum("...i,...ij,...j->...", v, I6, v))
