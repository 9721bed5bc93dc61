"""The joints' Coulomb friction in a time step taken implicitly (``linkdyn._kernels.friction``,
whose docstring says why): the free motion v_free = v + h M^-1 (tau - b - D v - F sign(v)) of a
step holds the friction explicitly; this takes the explicit torque back out and puts in the
friction impulse of the proximal problem instead,

    v* = v_free + h M^-1 F sign(v),     v_free <- argmin 1/2 |w - v*|^2_M + h sum_d f_d |w_d|,

so that a joint whose load is below its friction stays at rest instead of chattering at
h f (M^-1)_dd.  A tree's M (a closed chain's motion is the loops' projection of it, and a geared
model's friction lives on its full tree's joints: both keep the explicit torque)."""
from __future__ import annotations

import numpy as np
from numba import njit

from .._kernels.friction import friction_prox
from .cholesky import _ltdl_solve


@njit(cache=True)
def any_friction(f):
    """Whether any joint has Coulomb friction (f (nv,))."""
    for d in range(f.shape[0]):
        if f[d] > 0.0:
            return True
    return False


@njit(cache=True)
def implicit_friction(M, LD, lam, v, h, f, v_free):
    """v_free (nv,) in place: the explicit friction torque -F sign(v) that it holds taken out
    (through the factor LD, lam of M: ``dynamics.cholesky._ltdl_factor``) and the implicit friction
    impulse put in (``_kernels.friction.friction_prox``).  Returns the sweeps taken."""
    n = v.shape[0]
    x = np.zeros(n)
    for d in range(n):
        if v[d] > 0.0:
            x[d] = f[d]
        elif v[d] < 0.0:
            x[d] = -f[d]
    _ltdl_solve(LD, lam, x)
    vs = np.empty(n)
    for d in range(n):
        vs[d] = v_free[d] + h * x[d]
    return friction_prox(M, vs, h, f, v_free)
