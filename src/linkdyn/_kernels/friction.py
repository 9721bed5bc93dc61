"""The joints' Coulomb friction (MJCF ``frictionloss``) over one time step, taken implicitly.

Taken explicitly (the torque -f sign(v) at the step's start velocity, as the free motion of
``linkdyn.sim.timestepping`` takes it), a joint that friction should hold chatters: each step the
torque f reverses a velocity of about h f (M^-1)_dd, and semi-implicit Euler's energy error
1/2 |dv|^2_M of every step, h^2 f^2 (M^-1)_dd / 2 per such joint, no longer averages out: the
ledger's residual grows by h f^2 (M^-1)_dd / 2 per second and per joint, and the joint creeps
under a load below its friction (dm_control's kinova hand and arms, 2 ms steps).

Implicitly, the friction impulse P (|P_d| <= h f_d) is the one that leaves the velocity v1 of
the step the closest, in the kinetic-energy metric, to the motion without friction v*:

    v1 = argmin 1/2 (v1 - v*)^T M (v1 - v*) + h sum_d f_d |v1_d|,      P = M (v1 - v*)

(Moreau's 1988 proximal form of dry friction; the box problem MuJoCo solves for its frictionloss
rows, Todorov 2014).  Its conditions: a stuck joint (v1_d = 0) takes |P_d| <= h f_d, a sliding
one P_d = -h f_d sign(v1_d), and a joint without friction P_d = 0.  The impulse takes energy and
never gives it: P . v1 = -h sum f_d |v1_d| <= 0 and 1/2 |v1|^2_M <= 1/2 |v*|^2_M.

Solved by coordinate descent (each dof minimized exactly with the others held: a
soft-threshold; Gauss-Seidel on the box problem, convergent for M positive definite), then
polished on the active set it found (the stuck dofs held at 0, the sliding ones' signs fixed:
one linear solve of the others, kept when it meets every condition), which gives the answer to
round-off.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import dense

#: coordinate-descent sweeps at most, and the change (relative to the velocities' size) that ends them
FRICTION_SWEEPS, FRICTION_TOL = 200, 1e-13


@njit(cache=True)
def friction_prox(M, v_star, h, f, v1):
    """v1 (nv,) of the module docstring's problem, in place (any start; v* is a good one), for M
    (nv, nv) positive definite, v_star (nv,) the step's velocity without the friction, h the step,
    f (nv,) >= 0 the joints' friction.  Returns the sweeps taken (0: nothing to do, no friction)."""
    n = v_star.shape[0]
    any_f = False
    for d in range(n):
        if f[d] > 0.0:
            any_f = True
    if not any_f:
        v1[:] = v_star
        return 0
    Mv = M @ v_star                                  # (M v*)_d
    size = 1e-300
    for d in range(n):
        size = max(size, abs(v_star[d]))
    sweeps = 0
    for sweeps in range(1, FRICTION_SWEEPS + 1):
        change = 0.0
        for d in range(n):
            # with the others held: M_dd v1_d + c = -h f_d s_d, s_d in d|v1_d|
            c = -Mv[d]
            for j in range(n):
                if j != d:
                    c += M[d, j] * v1[j]
            t = h * f[d]
            if c > t:
                new = -(c - t) / M[d, d]
            elif c < -t:
                new = -(c + t) / M[d, d]
            else:
                new = 0.0
            change = max(change, abs(new - v1[d]))
            v1[d] = new
        if change <= FRICTION_TOL * size:
            break
    _polish(M, Mv, h, f, v1)
    return sweeps


@njit(cache=True)
def _polish(M, Mv, h, f, v1):
    """The exact answer on v1's active set (stuck: f_d > 0 and v1_d = 0; the others with their
    signs), kept where it meets every condition (to round-off); v1 otherwise left as it is."""
    n = v1.shape[0]
    idx = np.empty(n, dtype=np.int64)
    k = 0
    for d in range(n):
        if not (f[d] > 0.0 and v1[d] == 0.0):
            idx[k] = d
            k += 1
    x = np.zeros(n)
    if k:
        K = np.empty((k, k))
        b = np.empty(k)
        for a in range(k):
            d = idx[a]
            s = 0.0 if f[d] == 0.0 else (1.0 if v1[d] > 0.0 else -1.0)
            b[a] = Mv[d] - h * f[d] * s
            for c in range(k):
                K[a, c] = M[d, idx[c]]
        if not dense.cholesky(K, k, 1e-14):
            return
        dense.forward(K, k, b)
        dense.backward(K, k, b)
        for a in range(k):
            x[idx[a]] = b[a]
    # the conditions: signs kept, the stuck dofs' impulses inside their boxes
    scale = 1e-300
    for d in range(n):
        scale = max(scale, abs(Mv[d]), h * f[d])
    for a in range(k):
        d = idx[a]
        if f[d] > 0.0 and x[d] * v1[d] <= 0.0:
            return
    for d in range(n):
        if f[d] > 0.0 and v1[d] == 0.0:
            P = -Mv[d]
            for j in range(n):
                P += M[d, j] * x[j]
            if abs(P) > h * f[d] + 1e-12 * scale:
                return
    v1[:] = x
