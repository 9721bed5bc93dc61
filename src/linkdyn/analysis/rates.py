"""Analytic Jacobians and orientation rates (Spong, Hutchinson and Vidyasagar 2006, chs. 3-4; Siciliano et al. 2009).

The geometric Jacobian of :func:`linkdyn.jacobian` maps ``q'`` to the frame origin's velocity
``p'`` and the angular velocity ``omega`` (reference ``"local_world_aligned"``, Spong, Hutchinson and Vidyasagar 2006
eqs. (4.40)-(4.45)).  An *analytic* Jacobian maps ``q'`` to the time derivatives of task
coordinates ``x = [p; phi]``, where ``phi`` are orientation coordinates:

| ``orientation`` | k | ``phi`` and its relation to the rotation ``R`` of the frame |
|---|---|---|
| ``"rpy"`` | 3 | ``[roll, pitch, yaw]``, ``R = Rz(yaw) Ry(pitch) Rx(roll)`` (Spong, Hutchinson and Vidyasagar 2006, ch. 2); singular at pitch = +-pi/2 |
| ``"zyx"`` | 3 | ``[z, y, x]``, ``R = Rz(z) Ry(y) Rx(x)``; singular at y = +-pi/2 |
| ``"zyz"`` | 3 | ``[phi, theta, psi]``, ``R = Rz(phi) Ry(theta) Rz(psi)`` (Spong, Hutchinson and Vidyasagar 2006 eq. (3.25)); singular at theta = 0 or pi |
| ``"quaternion"`` | 4 | Euler parameters ``[eps; eta] = [x, y, z, w]`` (Spong, Hutchinson and Vidyasagar 2006 eqs. (3.28)-(3.32)), ``w >= 0``; never singular |

With ``omega = E(phi) phi'`` (``omega`` in world coordinates; the rate matrices ``E`` are those
of :mod:`linkdyn.spatial`), the analytic Jacobian is (Siciliano et al. 2009, ch. 3)

    ``J_A = blockdiag(I_3, E(phi)^-1) J``,   ``J = jacobian(model, q, frame, "local_world_aligned")``.

For three angles ``E`` necessarily loses rank somewhere (a *representation* singularity: the
arm can still turn its hand about every axis, but some angular velocities have no finite angle
rate).  There the functions below raise :class:`RepresentationSingularityError`, saying which
representation and why.  Euler parameters have none: ``[eps'; eta'] = 1/2 J_E omega`` with
``J_E = [eta I - S(eps); -eps^T]`` and always ``omega = 2 J_E^T [eps'; eta']`` (Siciliano et al. 2009), so
for ``"quaternion"`` the orientation block is the 4x3 matrix ``1/2 J_E``.

Accelerations: ``x'' = J q'' + J' q'`` (Spong, Hutchinson and Vidyasagar 2006, ch. 4), with ``J' q'`` from
:func:`linkdyn.jacobian_dot_times_v`; in analytic coordinates
``phi'' = E^-1 (omega' - E' phi')`` and, for Euler parameters,
``[eps''; eta''] = 1/2 J_E omega' - |omega|^2 / 4 [eps; eta]``.

Every function takes one configuration or a stack (leading axis N), like the kinematics.
"""
from __future__ import annotations

import numpy as np

from .. import spatial as sp
from .._api import as_states
from ..kinematics import frame_pose, jacobian, jacobian_dot_times_v

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model

__all__ = ["RepresentationSingularityError", "REPRESENTATIONS", "orientation_coordinates", "orientation_rate",
           "angular_velocity", "rate_matrix", "analytic_pose", "analytic_jacobian", "task_velocity",
           "task_acceleration"]

#: default tolerance: |cos pitch| (rpy, zyx) or |sin theta| (zyz) below this is singular
SINGULAR_TOL = 1e-6
_UNIT_TOL = 1e-6


class RepresentationSingularityError(ValueError):
    """Orientation coordinates at (or within the tolerance of) a representation singularity."""


def _cos1(phi):
    return np.cos(phi[..., 1])


def _sin1(phi):
    return np.sin(phi[..., 1])


# name: (size, R -> phi, E(phi), E^-1(phi, tol), singularity measure, where and why,
#        order of the columns of E from the outermost rotation of the product to the innermost)
_EULER = {
    "rpy": (sp.matrix_to_rpy, sp.rpy_rate_matrix, sp.rpy_rate_matrix_inverse, _cos1, "cos(pitch)",
            "pitch = +-pi/2: the roll axis (x) is turned onto the yaw axis (z)", (2, 1, 0)),
    "zyx": (sp.matrix_to_zyx, sp.zyx_rate_matrix, sp.zyx_rate_matrix_inverse, _cos1, "cos(y)",
            "y = +-pi/2: the x axis of the last rotation is turned onto the first z axis", (0, 1, 2)),
    "zyz": (sp.matrix_to_euler_zyz, sp.euler_zyz_rate_matrix, sp.euler_zyz_rate_matrix_inverse, _sin1,
            "sin(theta)", "theta = 0 or pi: the two z rotations are about the same axis", (0, 1, 2)),
}
#: the supported orientation representations and their number of coordinates
REPRESENTATIONS = {"rpy": 3, "zyx": 3, "zyz": 3, "quaternion": 4}


def _rep(representation):
    if representation not in REPRESENTATIONS:
        raise ValueError(f"orientation representation: expected one of {list(REPRESENTATIONS)}, "
                         f"got {representation!r}")
    return representation


def _tol(tol):
    try:
        tol = float(tol)
    except (TypeError, ValueError):
        raise TypeError(f"tol: expected a number, got {tol!r}") from None
    if not np.isfinite(tol) or tol < 0:
        raise ValueError(f"tol: expected a finite number >= 0, got {tol}")
    return tol


def _vec(x, name, n):
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected real numbers of shape (..., {n}), got {type(x).__name__}") from None
    if a.ndim < 1 or a.shape[-1] != n:
        raise ValueError(f"{name}: expected shape (..., {n}), got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: contains NaN or infinity")
    return a


def _phi(phi, representation):
    phi = _vec(phi, "phi", REPRESENTATIONS[representation])
    if representation == "quaternion":
        err = np.max(np.abs(np.linalg.norm(phi, axis=-1) - 1.0), initial=0.0)
        if err > _UNIT_TOL:
            raise ValueError(f"phi: a quaternion [x, y, z, w] of unit norm is expected (max | |phi| - 1 | = "
                             f"{err:.3g} > {_UNIT_TOL:g})")
    return phi


def _check_singular(phi, representation, tol):
    """Raise RepresentationSingularityError where the rate matrix of ``phi`` is (nearly) singular."""
    if representation == "quaternion":
        return
    measure, mname, why = _EULER[representation][3], _EULER[representation][4], _EULER[representation][5]
    m = np.abs(measure(phi))
    bad = np.flatnonzero(np.ravel(m < tol))
    if bad.size:
        k = int(bad[0])
        flat = phi.reshape(-1, phi.shape[-1])
        where = "" if phi.ndim == 1 else f"state {k} of the stack: "
        raise RepresentationSingularityError(
            f"{where}orientation {representation!r} is singular at phi = {np.round(flat[k], 6).tolist()}: "
            f"|{mname}| = {float(np.ravel(m)[k]):.3g} < tol = {tol:g}.  At {why}, so the rate matrix E(phi) of "
            f"omega = E(phi) phi' loses rank and some angular velocities have no finite {representation} rate "
            f"(a representation singularity, Siciliano et al. 2009, ch. 3; the mechanism itself is not singular).  "
            f"Use orientation='quaternion' (Euler parameters have no such singularity) or another Euler sequence.")


# ---------------------------------------------------------------------------------------
# rate maps
def orientation_coordinates(R: ArrayLike, representation: str = "rpy") -> NDArray[np.float64]:
    """Orientation coordinates ``phi`` (..., k) of rotation matrices ``R`` (..., 3, 3): the
    principal branches of :mod:`linkdyn.spatial` (``matrix_to_rpy``, ``matrix_to_zyx``,
    ``matrix_to_euler_zyz``, ``matrix_to_quat`` with ``w >= 0``)."""
    rep = _rep(representation)
    if rep == "quaternion":
        return sp.matrix_to_quat(R)
    return _EULER[rep][0](R)


def rate_matrix(phi: ArrayLike, representation: str = "rpy") -> NDArray[np.float64]:
    """The map from ``phi'`` to the world angular velocity: ``E(phi)`` (..., 3, 3) with
    ``omega = E phi'`` for Euler angles, ``2 J_E^T`` (..., 3, 4) for Euler parameters (Spong, Hutchinson and Vidyasagar 2006
    Siciliano et al. 2009)."""
    rep = _rep(representation)
    phi = _phi(phi, rep)
    if rep == "quaternion":
        # 2 J_E^T, column by column: the (linear) map of quat_angular_velocity
        return np.stack([sp.quat_angular_velocity(phi, e, frame="world") for e in np.eye(4)], axis=-1)
    return _EULER[rep][1](phi)


def _inverse_rate(phi, rep, tol):
    """``E(phi)^-1`` (..., 3, 3), or ``1/2 J_E`` (..., 4, 3) for Euler parameters."""
    if rep == "quaternion":
        # 1/2 J_E = 1/2 [eta I - S(eps); -eps^T], column by column: the map of quat_derivative
        return np.stack([sp.quat_derivative(phi, e, frame="world") for e in np.eye(3)], axis=-1)
    _check_singular(phi, rep, tol)
    return _EULER[rep][2](phi, tol=tol)


def orientation_rate(phi: ArrayLike, omega: ArrayLike, representation: str = "rpy", tol: float = SINGULAR_TOL) -> NDArray[np.float64]:
    """``phi'`` of the orientation coordinates ``phi`` for the world angular velocity ``omega``.

    Euler angles: ``phi' = E(phi)^-1 omega`` (Siciliano et al. 2009, ch. 3, ``omega = J_a a'``), raising
    :class:`RepresentationSingularityError` where ``|cos pitch|`` (rpy, zyx) or ``|sin theta|``
    (zyz) is below ``tol``.  Euler parameters ``[x, y, z, w]``: ``[eps'; eta'] = 1/2 J_E omega``,
    ``J_E = [eta I - S(eps); -eps^T]`` (Siciliano et al. 2009, = :func:`linkdyn.spatial.quat_derivative`
    with ``frame="world"``).  ``phi`` (..., k), ``omega`` (..., 3) -> (..., k).
    """
    rep = _rep(representation)
    phi, omega, tol = _phi(phi, rep), _vec(omega, "omega", 3), _tol(tol)
    if rep == "quaternion":
        return sp.quat_derivative(phi, omega, frame="world")
    return np.einsum("...ij,...j->...i", _inverse_rate(phi, rep, tol), omega)


def angular_velocity(phi: ArrayLike, phi_dot: ArrayLike, representation: str = "rpy") -> NDArray[np.float64]:
    """World angular velocity ``omega`` (..., 3) from ``phi`` and ``phi'``: the inverse of
    :func:`orientation_rate`.  Euler angles: ``omega = E(phi) phi'``; Euler parameters:
    ``omega = 2 J_E^T [eps'; eta']`` (Siciliano et al. 2009, ch. 3; the component of ``phi'`` along
    ``phi``, a change of norm, does not rotate and is ignored)."""
    rep = _rep(representation)
    phi = _phi(phi, rep)
    phi_dot = _vec(phi_dot, "phi_dot", REPRESENTATIONS[rep])
    if rep == "quaternion":
        return sp.quat_angular_velocity(phi, phi_dot, frame="world")
    return np.einsum("...ij,...j->...i", _EULER[rep][1](phi), phi_dot)


def _edot_phidot(E, phid, order):
    """``E' phi'`` for ``R = R_a0 R_a1 R_a2``: column k of E is the k-th rotation axis carried by
    the outer rotations, so d/dt column_k = omega_<k x column_k with omega_<k the angular velocity
    of the outer product (``order`` lists the columns of E from the outermost rotation)."""
    c = [E[..., :, j] for j in order]
    r = [phid[..., j:j + 1] for j in order]
    w0 = c[0] * r[0]
    return r[1] * np.cross(w0, c[1]) + r[2] * np.cross(w0 + c[1] * r[1], c[2])


def _orientation_acceleration(phi, omega, omega_dot, rep, tol):
    """``phi''`` from ``phi``, ``omega`` and ``omega'`` (world)."""
    if rep == "quaternion":
        # q' = 1/2 [omega, 0] * q  =>  q'' = 1/2 [omega', 0] * q + 1/4 [omega, 0]^2 * q, [omega, 0]^2 = -|omega|^2
        return (sp.quat_derivative(phi, omega_dot, frame="world")
                - 0.25 * np.sum(omega * omega, axis=-1, keepdims=True) * phi)
    Einv = _inverse_rate(phi, rep, tol)
    phid = np.einsum("...ij,...j->...i", Einv, omega)
    E = _EULER[rep][1](phi)
    # omega' = E phi'' + E' phi'
    return np.einsum("...ij,...j->...i", Einv, omega_dot - _edot_phidot(E, phid, _EULER[rep][6]))


# ---------------------------------------------------------------------------------------
# on a model
def _states(model, **arrays):
    """Validated arrays; a single state next to a stack stays 1-D (the kinematics share it)."""
    args = as_states(model, **arrays)
    out = [getattr(args, n) for n in arrays]
    if args.batch is not None:
        out = [x[0] if x.shape[0] == 1 and args.batch > 1 else x for x in out]
    return out


def analytic_pose(model: Model, q: ArrayLike, frame: str | int, orientation: str = "rpy") -> NDArray[np.float64]:
    """Task coordinates ``x = [p; phi]`` (3 + k,) of ``frame``: the world position of its origin
    and the orientation coordinates of its rotation (see :func:`orientation_coordinates`);
    (N, 3 + k) for a stack of configurations."""
    rep = _rep(orientation)
    T = frame_pose(model, q, frame)
    return np.concatenate([T[..., :3, 3], orientation_coordinates(T[..., :3, :3], rep)], axis=-1)


def analytic_jacobian(model: Model, q: ArrayLike, frame: str | int, orientation: str = "rpy",
                      tol: float = SINGULAR_TOL) -> NDArray[np.float64]:
    """Analytic Jacobian ``J_A`` (3 + k, nv): ``x' = J_A q'`` for ``x = [p; phi]`` of
    :func:`analytic_pose` (Siciliano et al. 2009, sec. 3.6).

    ``J_A = blockdiag(I, E(phi)^-1) J_lwa`` for Euler angles (``orientation`` "rpy", "zyx",
    "zyz"; k = 3) and ``blockdiag(I, 1/2 J_E) J_lwa`` for Euler parameters ("quaternion",
    ``[x, y, z, w]`` with ``w >= 0``; k = 4), where ``J_lwa`` is the ``"local_world_aligned"``
    frame Jacobian.  Raises :class:`RepresentationSingularityError` (a ValueError) when the
    frame's orientation is within ``tol`` of a singularity of the chosen angles (``|cos pitch|``
    for rpy/zyx, ``|sin theta|`` for zyz).  (N, 3 + k, nv) for a stack of configurations.
    """
    rep, tol = _rep(orientation), _tol(tol)
    J = jacobian(model, q, frame, "local_world_aligned")
    phi = orientation_coordinates(frame_pose(model, q, frame)[..., :3, :3], rep)
    H = _inverse_rate(phi, rep, tol)
    return np.concatenate([J[..., :3, :], H @ J[..., 3:, :]], axis=-2)


def task_velocity(model: Model, q: ArrayLike, v: ArrayLike, frame: str | int, orientation: str | None = None,
                  tol: float = SINGULAR_TOL) -> NDArray[np.float64]:
    """``x' = J q'`` (Spong, Hutchinson and Vidyasagar 2006, ch. 4): ``[p'; omega]`` (6,) of ``frame`` in world axes, or
    with ``orientation`` the analytic rates ``[p'; phi']`` (3 + k,).  (N, ...) for a stack."""
    q, v = _states(model, q=q, v=v)
    J = jacobian(model, q, frame, "local_world_aligned")
    xd = np.einsum("...ij,...j->...i", J, v)
    if orientation is None:
        return xd
    rep, tol = _rep(orientation), _tol(tol)
    phi = orientation_coordinates(frame_pose(model, q, frame)[..., :3, :3], rep)
    return np.concatenate([xd[..., :3], orientation_rate(phi, xd[..., 3:], rep, tol)], axis=-1)


def task_acceleration(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike, frame: str | int, orientation: str | None = None,
                      tol: float = SINGULAR_TOL) -> NDArray[np.float64]:
    """``x'' = J q'' + J' q'`` (Spong, Hutchinson and Vidyasagar 2006, ch. 4) of ``frame``.

    ``orientation=None``: ``[p''; omega']`` (6,), the classical acceleration of the frame origin
    and the angular acceleration, world axes (``J`` in reference ``"local_world_aligned"``,
    ``J' q'`` from :func:`linkdyn.jacobian_dot_times_v`).  With ``orientation`` ("rpy", "zyx",
    "zyz", "quaternion"): ``[p''; phi'']`` (3 + k,), where ``phi'' = E^-1 (omega' - E' phi')``
    (the derivative of ``omega = E phi'``, Siciliano et al. 2009, ch. 3) or, for Euler parameters,
    ``1/2 J_E omega' - |omega|^2/4 [eps; eta]``.  (N, ...) for a stack of states.
    """
    q, v, a = _states(model, q=q, v=v, a=a)
    J = jacobian(model, q, frame, "local_world_aligned")
    Jdv = jacobian_dot_times_v(model, q, v, frame, "local_world_aligned")
    xdd = np.einsum("...ij,...j->...i", J, a) + Jdv
    if orientation is None:
        return xdd
    rep, tol = _rep(orientation), _tol(tol)
    omega = np.einsum("...ij,...j->...i", J[..., 3:, :], v)
    phi = orientation_coordinates(frame_pose(model, q, frame)[..., :3, :3], rep)
    phidd = _orientation_acceleration(phi, omega, xdd[..., 3:], rep, tol)
    return np.concatenate([xdd[..., :3], phidd], axis=-1)
