"""Jets: compiled second-order Taylor numbers, for forward-mode differentiation in kernels.

A jet is a value carried together with its derivatives along a few directions, so that
arithmetic on jets differentiates as it computes: here a tuple of 9 floats, the value, the
first derivatives d0..d3 along 4 directions and the pure second derivatives dd0..dd3 along the
same directions (each direction is its own univariate Taylor series; mixed second derivatives
are not kept).  The operations (``_jadd``, ``_jmul``, ``_jdiv``, ``_jsqrt``, ``_jsin``,
``_jatan2``, ...) are Numba functions on plain tuples, which stay in registers: no allocation
per operation.  ``_jchain`` applies any scalar function given its value and first two
derivatives at the point.

Used by :mod:`linkdyn.contact.swing_twist`, whose ball-joint limit kernels evaluate the swing
and twist gaps on jets along the three unit joint velocities and v_joint, reading the
constraint rows from the first derivatives and the drift from the second.  A building block:
it imports only Numba and the standard library.
"""
from __future__ import annotations

import math

from numba import njit


# ---------------------------------------------------------------------------------------------
# compiled second-order Taylor numbers ("jets") along 4 directions: a tuple of 9 floats
# (value, first derivatives d0..d3, pure second derivatives dd0..dd3); each direction is its
# own univariate Taylor series (they do not mix).  Directions 0-2 are the unit joint
# velocities (their first derivatives are the rows), 3 is v_joint (its second derivative is the
# drift).  Plain tuples stay in registers: no allocation per operation.
@njit(cache=True, error_model="numpy")
def _jc(a):
    return (a, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@njit(cache=True, error_model="numpy")
def _jadd(u, w):
    return (u[0] + w[0], u[1] + w[1], u[2] + w[2], u[3] + w[3], u[4] + w[4],
            u[5] + w[5], u[6] + w[6], u[7] + w[7], u[8] + w[8])


@njit(cache=True, error_model="numpy")
def _jsub(u, w):
    return (u[0] - w[0], u[1] - w[1], u[2] - w[2], u[3] - w[3], u[4] - w[4],
            u[5] - w[5], u[6] - w[6], u[7] - w[7], u[8] - w[8])


@njit(cache=True, error_model="numpy")
def _jscale(u, p):
    return (p * u[0], p * u[1], p * u[2], p * u[3], p * u[4], p * u[5], p * u[6], p * u[7], p * u[8])


@njit(cache=True, error_model="numpy")
def _jshift(u, p):
    return (u[0] + p, u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8])


@njit(cache=True, error_model="numpy")
def _jlin4(u0, u1, u2, u3, p0, p1, p2, p3):
    """p0 u0 + p1 u1 + p2 u2 + p3 u3 (constant coefficients)."""
    return (p0 * u0[0] + p1 * u1[0] + p2 * u2[0] + p3 * u3[0],
            p0 * u0[1] + p1 * u1[1] + p2 * u2[1] + p3 * u3[1],
            p0 * u0[2] + p1 * u1[2] + p2 * u2[2] + p3 * u3[2],
            p0 * u0[3] + p1 * u1[3] + p2 * u2[3] + p3 * u3[3],
            p0 * u0[4] + p1 * u1[4] + p2 * u2[4] + p3 * u3[4],
            p0 * u0[5] + p1 * u1[5] + p2 * u2[5] + p3 * u3[5],
            p0 * u0[6] + p1 * u1[6] + p2 * u2[6] + p3 * u3[6],
            p0 * u0[7] + p1 * u1[7] + p2 * u2[7] + p3 * u3[7],
            p0 * u0[8] + p1 * u1[8] + p2 * u2[8] + p3 * u3[8])


@njit(cache=True, error_model="numpy")
def _jmul(u, w):
    a, c = u[0], w[0]
    return (a * c,
            a * w[1] + c * u[1], a * w[2] + c * u[2], a * w[3] + c * u[3], a * w[4] + c * u[4],
            a * w[5] + 2.0 * u[1] * w[1] + c * u[5], a * w[6] + 2.0 * u[2] * w[2] + c * u[6],
            a * w[7] + 2.0 * u[3] * w[3] + c * u[7], a * w[8] + 2.0 * u[4] * w[4] + c * u[8])


@njit(cache=True, error_model="numpy")
def _jchain(u, f0, f1, f2):
    """f(u) from f(u0), f'(u0), f''(u0)."""
    return (f0, f1 * u[1], f1 * u[2], f1 * u[3], f1 * u[4],
            f1 * u[5] + f2 * (u[1] * u[1]), f1 * u[6] + f2 * (u[2] * u[2]),
            f1 * u[7] + f2 * (u[3] * u[3]), f1 * u[8] + f2 * (u[4] * u[4]))


@njit(cache=True, error_model="numpy")
def _jinv(u):
    a = u[0]
    a2, a3 = math.pow(a, 2.0), math.pow(a, 3.0)     # (as a ** 2, a ** 3 in Python: the same rounding)
    return (1.0 / a, -u[1] / a2, -u[2] / a2, -u[3] / a2, -u[4] / a2,
            -u[5] / a2 + 2.0 * (u[1] * u[1]) / a3, -u[6] / a2 + 2.0 * (u[2] * u[2]) / a3,
            -u[7] / a2 + 2.0 * (u[3] * u[3]) / a3, -u[8] / a2 + 2.0 * (u[4] * u[4]) / a3)


@njit(cache=True, error_model="numpy")
def _jdiv(u, w):
    return _jmul(u, _jinv(w))


@njit(cache=True, error_model="numpy")
def _jsqrt(u):
    r = math.sqrt(u[0])
    if r == 0.0:             # a cone point (only at a swing of exactly pi): no derivative
        return _jc(0.0)
    return _jchain(u, r, 0.5 / r, -0.25 / (r * u[0]))


@njit(cache=True, error_model="numpy")
def _jsin(u):
    s, c = math.sin(u[0]), math.cos(u[0])
    return _jchain(u, s, c, -s)


@njit(cache=True, error_model="numpy")
def _jcos(u):
    s, c = math.sin(u[0]), math.cos(u[0])
    return _jchain(u, c, -s, -c)


@njit(cache=True, error_model="numpy")
def _jatan2(y, x):
    x0, y0 = x[0], y[0]
    r2 = x0 * x0 + y0 * y0
    r4 = math.pow(r2, 2.0)
    n1, n2, n3, n4 = x0 * y[1] - y0 * x[1], x0 * y[2] - y0 * x[2], x0 * y[3] - y0 * x[3], x0 * y[4] - y0 * x[4]
    e1, e2 = 2.0 * (x0 * x[1] + y0 * y[1]), 2.0 * (x0 * x[2] + y0 * y[2])     # d(r2)
    e3, e4 = 2.0 * (x0 * x[3] + y0 * y[3]), 2.0 * (x0 * x[4] + y0 * y[4])
    return (math.atan2(y0, x0), n1 / r2, n2 / r2, n3 / r2, n4 / r2,
            (x0 * y[5] - y0 * x[5]) / r2 - n1 * e1 / r4, (x0 * y[6] - y0 * x[6]) / r2 - n2 * e2 / r4,
            (x0 * y[7] - y0 * x[7]) / r2 - n3 * e3 / r4, (x0 * y[8] - y0 * x[8]) / r2 - n4 * e4 / r4)
