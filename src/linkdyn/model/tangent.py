"""Jacobians of ``integrate`` and ``difference`` on the configuration manifold.

linkdyn's joints move by right multiplication: ``integrate(q, v) = q exp(v)`` joint by joint
(SO(3) for a spherical joint, SE(3) for a free joint, SE(2) for a planar joint, plain addition
for every other kind), and ``difference(q0, q1) = log(q0^-1 q1)``.  A perturbation of a
configuration is a tangent vector in the same (body) coordinates, ``q exp(dq)``, so every
Jacobian here is (nv, nv), and block diagonal, one block per joint (the convention of
Pinocchio's ``dIntegrate`` / ``dDifference``, so that derivatives chain with
:func:`linkdyn.rnea_derivatives` and :func:`linkdyn.aba_derivatives`).

With ``Ad`` the adjoint of the group, ``J_r`` the right Jacobian of its exponential
(``exp(x + dx) = exp(x) exp(J_r(x) dx)`` to first order; Barfoot 2017, secs. 7.1.5 and 7.1.9,
with twists ordered ``[v; w]`` as linkdyn's):

    integrate:   d(q exp(v)) / dq = Ad(exp(-v)),         d(q exp(v)) / dv = J_r(v)
    difference:  d log(q0^-1 q1) / dq1 = J_r(d)^-1,      d log(q0^-1 q1) / dq0 = -J_r(d)^-1 Ad(exp(-d))

with ``d = difference(q0, q1)``.  SO(3) and SE(2) are the rotation and the planar blocks of
the SE(3) formulas (both are subgroups, closed under the bracket).
"""
from __future__ import annotations

from .gears import reduced, tangent_jacobians_via
from typing import TYPE_CHECKING

import numpy as np

from . import joints as J
from .configuration import difference, integrate

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from .model import Model


def _hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _coefficients(t):
    """(1 - cos t)/t^2, (t - sin t)/t^3, (t^2 + 2 cos t - 2)/(2 t^4), (2 t - 3 sin t + t cos t)/(2 t^5),
    by their Taylor series near 0 (the closed forms cancel there)."""
    if t < 1e-2:
        t2 = t * t
        return (0.5 - t2 / 24.0 + t2 * t2 / 720.0, 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0,
                1.0 / 24.0 - t2 / 720.0 + t2 * t2 / 40320.0, 1.0 / 120.0 - t2 / 2520.0 + t2 * t2 / 120960.0)
    s, c = np.sin(t), np.cos(t)
    return ((1.0 - c) / t ** 2, (t - s) / t ** 3, (t * t + 2.0 * c - 2.0) / (2.0 * t ** 4),
            (2.0 * t - 3.0 * s + t * c) / (2.0 * t ** 5))


def _se3_left_jacobian(x):
    """J_l of SE(3) at the twist x = [rho; phi] (Barfoot 2017, eqs. 7.85-7.86)."""
    rho, phi = x[:3], x[3:]
    a, b, c, d = _coefficients(float(np.linalg.norm(phi)))
    P, Rh = _hat(phi), _hat(rho)
    PP = P @ P
    Jl = np.eye(3) + a * P + b * PP
    Q = (0.5 * Rh + b * (P @ Rh + Rh @ P + P @ Rh @ P) + c * (PP @ Rh + Rh @ PP - 3.0 * P @ Rh @ P)
         + d * (P @ Rh @ PP + PP @ Rh @ P))
    out = np.zeros((6, 6))
    out[:3, :3] = out[3:, 3:] = Jl
    out[:3, 3:] = Q
    return out


def _se3_right_jacobian(x):
    return _se3_left_jacobian(-np.asarray(x, dtype=float))


def _se3_exp(x):
    """(R, p) = exp([rho; phi]) in SE(3)."""
    rho, phi = x[:3], x[3:]
    a, b, _, _ = _coefficients(float(np.linalg.norm(phi)))
    P = _hat(phi)
    t = float(np.linalg.norm(phi))
    R = np.eye(3) + (np.sin(t) / t if t > 1e-8 else 1.0 - t * t / 6.0) * P + a * (P @ P)
    V = np.eye(3) + a * P + b * (P @ P)
    return R, V @ rho


def _se3_adjoint(R, p):
    """Ad of (R, p) on twists [v; w]."""
    out = np.zeros((6, 6))
    out[:3, :3] = out[3:, 3:] = R
    out[:3, 3:] = _hat(p) @ R
    return out


def _embed(kind, x):
    """The joint's tangent vector as an SE(3) twist, and the indices of its block."""
    if kind == J.SPHERICAL:
        return np.concatenate([np.zeros(3), x]), [3, 4, 5]
    if kind == J.PLANAR:
        return np.array([x[0], x[1], 0.0, 0.0, 0.0, x[2]]), [0, 1, 5]
    return np.asarray(x, dtype=float), [0, 1, 2, 3, 4, 5]


def _blocks(model, x, fn, vector=1.0):
    """Block diagonal (nv, nv): fn(SE(3) twist) (6, 6) restricted to each Lie-group joint's block,
    ``vector`` times the identity for joints whose coordinates are a vector space."""
    out = vector * np.eye(model.nv)
    for i in range(1, model.nbody):
        k = model.jnt_type[i]
        if k not in (J.SPHERICAL, J.FREE, J.PLANAR):
            continue
        a, n = model.jnt_vadr[i], model.jnt_nv[i]
        twist, idx = _embed(k, x[a:a + n])
        out[a:a + n, a:a + n] = fn(twist)[np.ix_(idx, idx)]
    return out


def _vector(model, x, name):
    x = np.asarray(x, dtype=float)
    if x.shape != (model.nv,) or not np.isfinite(x).all():
        raise ValueError(f"{name}: expected {model.nv} finite values, got shape {x.shape}")
    return x


@reduced(via=tangent_jacobians_via, pass_fn=True)
def integrate_jacobians(model: Model, q: ArrayLike, v: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(J_q, J_v)``: the derivatives of ``integrate(model, q, v)`` with respect to q and v,
    (nv, nv) each, in the tangent spaces (the module docstring).  ``integrate`` validates q."""
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return integrate_jacobians.on_full_tree(model, q, v)
    v = _vector(model, v, "v")
    integrate(model, q, v)                        # validates q (shape, unit quaternions) with clear errors

    def ad_inv(x):
        return _se3_adjoint(*_se3_exp(-x))
    return _blocks(model, v, ad_inv), _blocks(model, v, _se3_right_jacobian)


@reduced(via=tangent_jacobians_via, pass_fn=True)
def difference_jacobians(model: Model, q0: ArrayLike, q1: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(J_q0, J_q1)``: the derivatives of ``difference(model, q0, q1)`` with respect to q0 and
    q1, (nv, nv) each, in the tangent spaces (the module docstring).  Singular where a rotation
    of the difference reaches 2 pi (the logarithm's cut)."""
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return difference_jacobians.on_full_tree(model, q0, q1)
    d = difference(model, q0, q1)                 # validates q0 and q1

    def jr_inv(x):
        return np.linalg.inv(_se3_right_jacobian(x))

    def jq0(x):
        return -np.linalg.inv(_se3_right_jacobian(x)) @ _se3_adjoint(*_se3_exp(-x))
    return _blocks(model, d, jq0, -1.0), _blocks(model, d, jr_inv)
