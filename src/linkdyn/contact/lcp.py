"""The mixed complementarity problem of contacts and limits, with an exact friction cone.

Unknowns lambda (m,) of kinds

* FREE: a bilateral row, w_i = 0;
* NORMAL: lambda_i >= 0, w_i >= 0, lambda_i w_i = 0 (a contact's normal force or impulse, a
  limit's torque or force);
* FRICTION (a pair of rows i, i+1 following their normal row ``normal[i]``): the Coulomb
  disk |(lambda_i, lambda_i+1)| <= mu_i lambda_n; inside it w_i = w_i+1 = 0 (sticking), on
  its rim w opposes lambda (sliding, maximum dissipation),

with w = A lambda + r (A the inverse inertia of the rows, ``linkdyn.contact.inverse_inertia``;
w an acceleration, or a velocity after an impulse).  This is the LCP of Baraff (1994) and
Stewart and Trinkle (1996) with the cone kept exact instead of a pyramid.

Solved in two stages, and fallbacks where they fail:

1. projected Gauss-Seidel (compiled): each normal row solved for itself and clamped at 0, each
   friction pair solved as a 2x2 block and projected onto its disk (the cone of the present
   normal force); scale-free, since every update divides by the row's own diagonal;
2. a polish: the active set that stage 1 found (normals in contact, friction pairs inside or
   on the rim of their cone) is solved exactly as a linear system (least squares, so that
   redundant contacts, such as the four corners of a foot, share their load by the
   minimum-norm split; compiled here: Cholesky where the block is nonsingular, else a complete
   orthogonal decomposition) and kept when it satisfies every condition, which gives
   complementarity to round-off where Gauss-Seidel alone would stop at its tolerance.  A
   sliding pair's direction, what Gauss-Seidel finds most slowly, is an unknown of Newton's
   method on the active set's equations and each sliding pair's "slip parallel to its force".
   Contacts that touch without force join the active set where nothing slides (a resting box's
   four corners share its weight whichever of them its landing left unloaded).

3. where both leave the answer above the step's tolerance (redundant contacts sliding: Gauss-Seidel
   circles, the polish finds no exact active set), ``_admm_fallback`` (compiled, inside the time
   step): De Saxce's fixed point, each iterate's cone program by ADMM, its active sets polished;
   where that fails too, Gauss-Seidel carried on with a polish every FALLBACK_ROUND sweeps;
4. and last (the Python step only), ``conic_fallback``: the same fixed point with each cone
   program solved by Clarabel's interior point method, then the polish.

A dense, small problem (tens of rows) is the common case here, which is why a Gauss-Seidel
of our own over a QP library: it warm-starts, it keeps the cone exact, and it needs no
symmetric A (sliding friction makes A non-symmetric).  ``residual`` measures what a solution
misses.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from numba import njit

from .._kernels import dense

FREE, NORMAL, FRICTION, FRICTION2 = 0, 1, 2, 3


class ContactSolverError(FloatingPointError):
    """The contact and limit problem of a step was not solved (its residual after the fallback is
    above the caller's tolerance, ``linkdyn.sim.timestepping.FAIL_TOL``): the step is not taken.  ``t``, ``rows`` (the units in the problem, by name)
    and ``residual`` say which."""

    def __init__(self, t: float, rows: Sequence[str], residual: float, tol: float, sweeps: int) -> None:
        self.t, self.rows, self.residual = t, list(rows), float(residual)
        shown = ", ".join(self.rows[:8]) + (f", ... ({len(self.rows)} in all)" if len(self.rows) > 8 else "")
        super().__init__(f"the contact problem of the step from t = {t:.6g} s was not solved: residual "
                         f"{residual:.3g} > {tol:g} after {sweeps} Gauss-Seidel sweeps, the polish and the conic fallback; "
                         f"rows: {shown}")


@njit(cache=True, inline="always")
def _disk_step(a11, a12, a21, a22, w1, w2, x1, x2, cap):
    """The friction pair's own problem with the others fixed: min 1/2 y^T A y + b^T y over
    the disk |y| <= cap, b = w - A x (w the present residual at x).  Its solution has
    A y + b = -g y with g >= 0 (the slip opposes the force: maximum dissipation): the
    unconstrained minimum when inside, else the trust-region root of |y(g)| = cap."""
    a12 = 0.5 * (a12 + a21)
    b1 = w1 - (a11 * x1 + a12 * x2)
    b2 = w2 - (a12 * x1 + a22 * x2)
    if cap <= 0.0:
        return 0.0, 0.0
    tr = a11 + a22
    disc = np.sqrt(max((a11 - a22) ** 2 + 4.0 * a12 * a12, 0.0))
    lam_max, lam_min = 0.5 * (tr + disc), 0.5 * (tr - disc)
    if lam_max <= 0.0:
        return 0.0, 0.0                     # no mobility in either direction: the least force
    if lam_min <= 1e-12 * lam_max:
        # a semidefinite block: one tangent direction the model cannot move in (across a planar
        # model, A's row is zero).  Along the mobile direction e the problem is 1-D; across it
        # the force does nothing, and the least one (zero) is taken.  (A trust-region step would
        # push the force onto the rim when the 1-D minimum lies inside the disk: a wrong answer.)
        if a11 >= a22:
            e1, e2 = lam_max - a22, a12
        else:
            e1, e2 = a12, lam_max - a11
        ne = np.sqrt(e1 * e1 + e2 * e2)
        e1, e2 = e1 / ne, e2 / ne
        bp = -e2 * b1 + e1 * b2             # b across e: with no curvature there, it must vanish
        if abs(bp) <= 1e-9 * max(np.sqrt(b1 * b1 + b2 * b2), 1e-300) or abs(bp) <= 1e-14 * lam_max * cap:
            t = min(max(-(e1 * b1 + e2 * b2) / lam_max, -cap), cap)
            return t * e1, t * e2
    else:
        det = a11 * a22 - a12 * a12
        y1 = -(a22 * b1 - a12 * b2) / det
        y2 = -(a11 * b2 - a12 * b1) / det
        if y1 * y1 + y2 * y2 <= cap * cap:
            return y1, y2
    # Newton on 1/|y(g)| - 1/cap = 0, y(g) = -(A + g I)^-1 b, from g >= 0 where A + g I > 0
    g = max(0.0, -lam_min) + 1e-12 * max(abs(tr), 1e-300)
    bn = np.sqrt(b1 * b1 + b2 * b2)
    if bn == 0.0:
        return 0.0, 0.0
    g = max(g, bn / cap - max(a11, a22))
    y1 = y2 = 0.0
    for _ in range(50):
        p11, p22 = a11 + g, a22 + g
        dd = p11 * p22 - a12 * a12
        y1 = -(p22 * b1 - a12 * b2) / dd
        y2 = -(p11 * b2 - a12 * b1) / dd
        ny = np.sqrt(y1 * y1 + y2 * y2)
        # z = (A + gI)^-1 y ; d|y|/dg = -y.z/|y|
        z1 = (p22 * y1 - a12 * y2) / dd
        z2 = (p11 * y2 - a12 * y1) / dd
        yz = y1 * z1 + y2 * z2
        phi = 1.0 / ny - 1.0 / cap
        if abs(phi) * cap < 1e-14:
            break
        dphi = yz / ny ** 3
        step = phi / dphi
        g_new = g - step
        if g_new <= 0.0:
            g_new = 0.5 * g
        g = g_new
    s = cap / max(np.sqrt(y1 * y1 + y2 * y2), 1e-300)
    return y1 * s, y2 * s


@njit(cache=True)
def _pgs(A, r, kind, mu, normal, lam, max_iter, tol):
    """Projected Gauss-Seidel in place on ``lam``; returns the sweeps taken."""
    m = r.shape[0]
    scale = 1e-300
    for i in range(m):
        scale = max(scale, abs(r[i]) / max(A[i, i], 1e-300))
    it = 0
    for it in range(max_iter):
        change = 0.0
        for i in range(m):
            k = kind[i]
            if k == FRICTION2:
                continue
            if k == FREE or k == NORMAL:
                w = r[i]
                for j in range(m):
                    w += A[i, j] * lam[j]
                d = A[i, i]
                if d <= 0.0:
                    if k == NORMAL:
                        lam[i] = 0.0        # a row the model cannot move along: its least force
                    continue
                new = lam[i] - w / d
                if k == NORMAL and new < 0.0:
                    new = 0.0
                change = max(change, abs(new - lam[i]))
                lam[i] = new
            else:
                w1 = r[i]
                w2 = r[i + 1]
                for j in range(m):
                    w1 += A[i, j] * lam[j]
                    w2 += A[i + 1, j] * lam[j]
                cap = mu[i] * lam[normal[i]]
                if cap < 0.0:
                    cap = 0.0
                l1, l2 = _disk_step(A[i, i], A[i, i + 1], A[i + 1, i], A[i + 1, i + 1], w1, w2, lam[i], lam[i + 1], cap)
                change = max(change, abs(l1 - lam[i]), abs(l2 - lam[i + 1]))
                lam[i] = l1
                lam[i + 1] = l2
        if change <= tol * scale:
            return it + 1
    return it + 1


@njit(inline="always", cache=True)
def _velocities(A, r, lam, w):
    """w = A lam + r (the rows' velocities after the impulses lam), into w."""
    m = r.shape[0]
    for i in range(m):
        t = r[i]
        for j in range(m):
            t += A[i, j] * lam[j]
        w[i] = t


@njit(cache=True)
def _residual(A, r, kind, mu, normal, lam):
    m = r.shape[0]
    w = np.empty(m)
    _velocities(A, r, lam, w)
    scale_w, scale_l = 1e-9, 1e-9
    for i in range(m):
        scale_w = max(scale_w, abs(r[i]), abs(w[i]))
        scale_l = max(scale_l, abs(lam[i]))
    res = 0.0
    for i in range(m):
        if not (np.isfinite(lam[i]) and np.isfinite(w[i])):
            return np.inf               # an answer that is not a number misses every condition
    for i in range(m):
        k = kind[i]
        if k == FREE:
            res = max(res, abs(w[i]) / scale_w)
        elif k == NORMAL:
            res = max(res, -lam[i] / scale_l, -w[i] / scale_w, abs(lam[i] * w[i]) / (scale_l * scale_w))
        elif k == FRICTION:
            l1, l2 = lam[i], lam[i + 1]
            cap = mu[i] * lam[normal[i]]
            nrm = np.sqrt(l1 * l1 + l2 * l2)
            res = max(res, (nrm - cap) / scale_l)
            w1, w2 = w[i], w[i + 1]
            if nrm < cap * (1 - 1e-9) - 1e-12 * scale_l:
                res = max(res, np.sqrt(w1 * w1 + w2 * w2) / scale_w)          # sticking: no slip
            elif nrm > 0:
                d1, d2 = l1 / nrm, l2 / nrm                                 # sliding: w = -s d, s >= 0
                res = max(res, abs(w1 * d2 - w2 * d1) / scale_w, (w1 * d1 + w2 * d2) / scale_w)
    return res


@njit(cache=True)
def _residual_at_zero(r, kind):
    """``_residual`` at lam = 0 (w = r), without A: the largest normal row's -r (and a free row's
    |r|) over the problem's size, as ``_residual`` scales it (bit for bit its value)."""
    m = r.shape[0]
    scale_w = 1e-9
    for i in range(m):
        scale_w = max(scale_w, abs(r[i]))
    res = 0.0
    for i in range(m):
        if kind[i] == FREE:
            res = max(res, abs(r[i]) / scale_w)
        elif kind[i] == NORMAL:
            res = max(res, -r[i] / scale_w)
    return res


def residual(A, r, kind, mu, normal, lam):
    """The largest violation of the conditions, relative to the size of the problem: normal
    forces below 0, w below 0, lambda w != 0, a friction force outside its cone, a sticking
    pair's w != 0, a sliding pair whose w does not oppose its force.  The sizes have an
    absolute floor of 1e-9, so that a problem whose data are round-off (r ~ 1e-17) is not
    judged by the round-off's relative size.  Infinite where lambda or w is not finite (a NaN
    compares false with every bound and would read as 0)."""
    return float(_residual(np.ascontiguousarray(A, dtype=float), np.ascontiguousarray(r, dtype=float),
                           np.ascontiguousarray(kind, dtype=np.int64), np.ascontiguousarray(mu, dtype=float),
                           np.ascontiguousarray(normal, dtype=np.int64), np.ascontiguousarray(lam, dtype=float)))


#: the polish's Newton iterations on the sliding pairs' directions at most (``_polish_kernel``)
RIM_TURNS = 8
#: ``_turn_rims``' last system counts as nonsingular (its answer the only one: no minimum-norm refold)
#: where its smallest pivot is above this fraction of the first: a system singular to round-off
#: (redundant feet) may keep a pivot of 1e-12 and change its answer's split with the round-off
FULL_RANK_GAP = 1e-6


@njit(cache=True)
def _min_norm_solve(B, b, rcond, x):
    """x = the minimum-norm least-squares solution of B x = b for a small dense B (n_r, n), as
    ``np.linalg.lstsq(B, b, rcond)`` (whose SVD costs ~35 us at n = 20 through LAPACK's gelsd;
    this costs a few): a complete orthogonal decomposition (Golub and Van Loan 2013, sec. 5.4.2).
    Householder QR with column pivoting, B P = Q [R11 R12; 0 0], stops at the rank r where the
    largest remaining column norm falls to rcond |R_00|; then [R11 R12] Z = [T 0] by Householder
    reflections from the right, and x = P Z [T^-1 (Q^T b)[:r]; 0].  B and b are not changed."""
    n_r, n = B.shape
    W = B.copy()
    y = b.copy()
    perm = np.arange(n)
    kmax = min(n_r, n)
    rank = kmax
    r0 = 0.0
    v = np.empty(n_r)
    for k in range(kmax):
        # pivot: the remaining column of largest norm (norms taken afresh: no downdating drift)
        best, p = -1.0, k
        for j in range(k, n):
            s = 0.0
            for i in range(k, n_r):
                s += W[i, j] * W[i, j]
            if s > best:
                best, p = s, j
        alpha = np.sqrt(best)
        r0 = alpha if k == 0 else r0
        if dense.negligible(alpha, r0, rcond):
            rank = k
            break
        if p != k:
            dense.swap_columns(W, k, p, perm)
        if W[k, k] > 0.0:
            alpha = -alpha
        vn2 = 0.0
        for i in range(k, n_r):
            v[i] = W[i, k]
        v[k] -= alpha
        for i in range(k, n_r):
            vn2 += v[i] * v[i]
        W[k, k] = alpha
        for i in range(k + 1, n_r):
            W[i, k] = 0.0
        if vn2 == 0.0:
            continue
        for j in range(k + 1, n):
            s = 0.0
            for i in range(k, n_r):
                s += v[i] * W[i, j]
            s *= 2.0 / vn2
            for i in range(k, n_r):
                W[i, j] -= s * v[i]
        s = 0.0
        for i in range(k, n_r):
            s += v[i] * y[i]
        s *= 2.0 / vn2
        for i in range(k, n_r):
            y[i] -= s * v[i]
    z = np.zeros(n)
    nz = n - rank                                   # columns eliminated from the right
    U = np.zeros((max(rank, 1), nz + 1))            # reflector k acts on entries k, rank.. n-1
    un = np.zeros(max(rank, 1))
    if nz:
        for k in range(rank - 1, -1, -1):
            s = W[k, k] * W[k, k]
            for j in range(rank, n):
                s += W[k, j] * W[k, j]
            alpha = np.sqrt(s)
            if W[k, k] > 0.0:
                alpha = -alpha
            U[k, 0] = W[k, k] - alpha
            for j in range(nz):
                U[k, 1 + j] = W[k, rank + j]
            s = 0.0
            for j in range(nz + 1):
                s += U[k, j] * U[k, j]
            un[k] = s
            if s == 0.0:
                continue
            for i in range(k):                      # the rows above take the reflection
                t = U[k, 0] * W[i, k]
                for j in range(nz):
                    t += U[k, 1 + j] * W[i, rank + j]
                t *= 2.0 / s
                W[i, k] -= t * U[k, 0]
                for j in range(nz):
                    W[i, rank + j] -= t * U[k, 1 + j]
            W[k, k] = alpha
    for k in range(rank - 1, -1, -1):               # T w = c
        s = y[k]
        for j in range(k + 1, rank):
            s -= W[k, j] * z[j]
        z[k] = s / W[k, k]
    if nz:
        for k in range(rank):                       # z = H_{r-1} ... H_0 [w; 0]
            if un[k] == 0.0:
                continue
            t = U[k, 0] * z[k]
            for j in range(nz):
                t += U[k, 1 + j] * z[rank + j]
            t *= 2.0 / un[k]
            z[k] -= t * U[k, 0]
            for j in range(nz):
                z[rank + j] -= t * U[k, 1 + j]
    for j in range(n):
        x[perm[j]] = z[j]


@njit(cache=True)
def _symmetric(B):
    """B = B^T to round-off (the event scheme's A is not symmetric where friction slides)."""
    n = B.shape[0]
    big = 0.0
    for i in range(n):
        for j in range(n):
            big = max(big, abs(B[i, j]))
    for i in range(n):
        for j in range(i):
            if abs(B[i, j] - B[j, i]) > 1e-13 * big:
                return False
    return True


@njit(cache=True)
def _sliding(kind, mu, normal, lam):
    """True if a friction pair of lam is on the rim of its cone."""
    for i in range(lam.shape[0]):
        if kind[i] == FRICTION:
            n = lam[normal[i]]
            if n > 0.0 and lam[i] * lam[i] + lam[i + 1] * lam[i + 1] >= (mu[i] * n * (1 - 1e-7)) ** 2:
                return True
    return False


@njit(cache=True)
def _touching(A, r, kind, lam):
    """Per row, 1.0 where a normal touches without force (lambda = 0 and w = A lam + r = 0 to
    1e-10 of the problem's size), else 0.0; all zero if none does."""
    m = r.shape[0]
    w = np.empty(m)
    _velocities(A, r, lam, w)
    scale_w = 1e-9
    for i in range(m):
        scale_w = max(scale_w, abs(w[i]), abs(r[i]))
    out = np.zeros(m)
    for i in range(m):
        if kind[i] == NORMAL and lam[i] == 0.0 and abs(w[i]) <= 1e-10 * scale_w:
            out[i] = 1.0
    return out


@njit(cache=True)
def _polish_kernel(A, r, kind, mu, normal, lam, out, turns=RIM_TURNS, weak=False, direct=False):
    """The exact solution on the active set of ``lam`` into ``out`` (compiled; see _polish).  Returns
    the residual of ``out`` where it was computed on the way (the sliding pairs' Newton steps), else -1."""
    m = r.shape[0]
    scale_l = 1e-300
    for i in range(m):
        scale_l = max(scale_l, abs(lam[i]))
    unknown = np.empty(m, dtype=np.int64)
    pos = np.full(m, -1, dtype=np.int64)
    rim = np.zeros(m, dtype=np.bool_)
    d1 = np.zeros(m)
    d2 = np.zeros(m)
    # weak: a contact that touches without force (w = 0, lambda = 0) is in the active set too
    # (``_polish_better``)
    w = _touching(A, r, kind, lam) if weak else np.zeros(0)
    act = np.zeros(m, dtype=np.bool_)
    nu = np.int64(0)
    for i in range(m):
        k = kind[i]
        if k == FREE or (k == NORMAL and (lam[i] > 1e-12 * scale_l or (weak and w[i] != 0.0))):
            act[i] = True
            pos[i] = nu
            unknown[nu] = i
            nu += 1
    for i in range(m):
        if kind[i] == FRICTION:
            n = normal[i]
            if not act[n]:
                continue
            nrm = np.sqrt(lam[i] ** 2 + lam[i + 1] ** 2)
            if nrm < mu[i] * lam[n] * (1 - 1e-7) or lam[n] == 0.0:
                pos[i] = nu
                unknown[nu] = i
                pos[i + 1] = nu + 1
                unknown[nu + 1] = i + 1
                nu += 2
            elif nrm > 0:
                rim[i] = True
                d1[i] = lam[i] / nrm
                d2[i] = lam[i + 1] / nrm
    for i in range(m):
        out[i] = 0.0
    if nu == 0:
        return -1.0
    nr = np.int64(0)
    for i in range(m):
        if rim[i]:
            nr += 1
    if nr and turns > 1 and direct:
        # Newton's method from lam itself (``direct``: lam is a warm start, the last step's answer,
        # near this one): its first step solves the active rows, which are linear, as the fold
        # with lam's directions would, and the fold's solve is spared
        for i in range(m):
            if pos[i] >= 0:
                out[i] = lam[i]
            elif rim[i]:
                c = mu[i] * lam[normal[i]]
                out[i] = c * d1[i]
                out[i + 1] = c * d2[i]
    else:
        _fold_solve(A, r, mu, normal, unknown, nu, pos, rim, nr, d1, d2, out)
    if nr and turns > 1:
        full, res = _turn_rims(A, r, kind, mu, normal, out, unknown, nu, pos, rim, nr, turns)
        # Newton's steps split the load of redundant contacts (a box's four corners) by the least
        # step, not the least force: the directions it found, with the forces solved again for
        # them (the same velocities, the same conditions, the minimum-norm split), where it found an
        # answer and its last step's system was singular (else the answer is the only one there)
        if res <= 1e-12 and not full:
            again = np.empty(m)
            for i in range(m):
                if rim[i]:
                    c = np.sqrt(out[i] ** 2 + out[i + 1] ** 2)
                    if c > 0.0:
                        d1[i], d2[i] = out[i] / c, out[i + 1] / c
            _fold_solve(A, r, mu, normal, unknown, nu, pos, rim, nr, d1, d2, again)
            ares = _residual(A, r, kind, mu, normal, again)
            if ares <= 1e-12:
                out[:] = again
                res = ares
        return res
    return -1.0


@njit(cache=True)
def _fold_solve(A, r, mu, normal, unknown, nu, pos, rim, nr, d1, d2, out):
    """out = the active set's solution with each sliding pair's force mu lambda_n (d1, d2) held
    along its direction (folded into its normal's column), zero off the active set."""
    m = r.shape[0]
    B = np.empty((nu, nu))
    rhs = np.empty(nu)
    x = np.empty(nu)
    for i in range(m):
        out[i] = 0.0
    for a in range(nu):
        ia = unknown[a]
        rhs[a] = -r[ia]
        for b in range(nu):
            B[a, b] = A[ia, unknown[b]]
    for i in range(m):                    # lambda_t = mu lambda_n d folds into the normal's column
        if rim[i] and pos[normal[i]] >= 0:
            c = pos[normal[i]]
            for a in range(nu):
                ia = unknown[a]
                B[a, c] += mu[i] * (A[ia, i] * d1[i] + A[ia, i + 1] * d2[i])
    # a principal block of a symmetric A (time stepping's) is positive semidefinite: its
    # minimum-norm solution by pivoted Cholesky (redundant contacts make it singular: dm_control's
    # humanoid lying down, rank 6 short at 23 unknowns, 9.4 -> 4.1 us); where sliding pairs fold
    # in (B is not symmetric), by the complete orthogonal decomposition
    if nr or not _symmetric(B) or not dense.min_norm_psd(B, rhs, 1e-12, x):
        _min_norm_solve(B, rhs, 1e-12, x)
    for a in range(nu):
        out[unknown[a]] = x[a]
    for i in range(m):
        if rim[i]:
            c = mu[i] * out[normal[i]]
            out[i] = c * d1[i]
            out[i + 1] = c * d2[i]


@njit(cache=True)
def _turn_rims(A, r, kind, mu, normal, out, unknown, nu, pos, rim, nr, iters):
    """The sliding pairs' directions of ``out`` (the polish with them held), turned by Newton's method until
    each pair's slip w_t is parallel to its force: unknowns the active set's lambda and each sliding
    pair's angle t (force mu lambda_n (cos t, sin t)); equations w = 0 on the active rows and w_t1 sin t
    - w_t2 cos t = 0 per sliding pair (a fixed point that Gauss-Seidel approaches only slowly when
    contacts are coupled: 1e-6 of residual after a thousand sweeps). Each step is a basic solution of
    the linearized system (``dense.basic_solve``: redundant contacts make it singular, and the split of
    their load is solved again afterwards by the minimum-norm fold; a third of the complete orthogonal
    decomposition's cost: the solves of a 3 s run of gymnasium's humanoid 61 -> 49 ms, the same answers
    met). The best residual is kept; stops after two steps that do not halve it (the active set is not
    the answer's). Returns True where the last step's system was clearly nonsingular (rank full, its
    smallest pivot above FULL_RANK_GAP of the first; the answer is then the only one with these rims'
    directions: ``_polish_kernel`` need not refold it), and the residual of ``out``. The warm starts of
    a 3 s run's time steps, polished: 1188 of 1340 to round-off in 15 us each (dm_control's humanoid; a
    damped fixed point on the directions: 1150 in 20 us), 866 of 2694 in 20 us (gymnasium's humanoid;
    707 in 24 us)."""
    m = r.shape[0]
    rims = np.empty(nr, dtype=np.int64)
    k = 0
    for i in range(m):
        if rim[i]:
            rims[k] = i
            k += 1
    n = nu + nr
    x = np.empty(n)
    for a in range(nu):
        x[a] = out[unknown[a]]
    for p in range(nr):
        x[nu + p] = np.arctan2(out[rims[p] + 1], out[rims[p]])
    J = np.empty((n, n))
    F = np.empty(n)
    dx = np.empty(n)
    w = np.empty(m)
    cs, sn = np.empty(nr), np.empty(nr)
    best = np.inf
    keep = out.copy()
    stale = 0
    full = False
    for it in range(iters):
        for a in range(nu):
            out[unknown[a]] = x[a]
        for p in range(nr):
            i = rims[p]
            cs[p], sn[p] = np.cos(x[nu + p]), np.sin(x[nu + p])
            c = mu[i] * out[normal[i]]
            out[i] = c * cs[p]
            out[i + 1] = c * sn[p]
        res = _residual(A, r, kind, mu, normal, out)
        stale = 0 if res < 0.5 * best else stale + 1
        if res < best:
            best = res
            keep[:] = out
        if best <= 1e-14 or stale == 2 or it == iters - 1:
            break
        _velocities(A, r, out, w)
        # the active rows: dw/dlambda (a sliding pair's force rides on its normal), dw/dt
        for a in range(nu):
            ia = unknown[a]
            F[a] = -w[ia]
            for b in range(nu):
                J[a, b] = A[ia, unknown[b]]
            for p in range(nr):
                i = rims[p]
                J[a, pos[normal[i]]] += mu[i] * (A[ia, i] * cs[p] + A[ia, i + 1] * sn[p])
                J[a, nu + p] = mu[i] * out[normal[i]] * (A[ia, i + 1] * cs[p] - A[ia, i] * sn[p])
        # the sliding pairs' rows: sin t dw_t1 - cos t dw_t2, and the angle's own term
        for p in range(nr):
            i = rims[p]
            F[nu + p] = -(w[i] * sn[p] - w[i + 1] * cs[p])
            for b in range(nu):
                ib = unknown[b]
                J[nu + p, b] = sn[p] * A[i, ib] - cs[p] * A[i + 1, ib]
            for q in range(nr):
                jq = rims[q]
                g1 = A[i, jq] * cs[q] + A[i, jq + 1] * sn[q]             # d w_i / d lambda_n(q), over mu
                g2 = A[i + 1, jq] * cs[q] + A[i + 1, jq + 1] * sn[q]
                h1 = A[i, jq + 1] * cs[q] - A[i, jq] * sn[q]             # d w_i / d t_q, over mu lambda_n(q)
                h2 = A[i + 1, jq + 1] * cs[q] - A[i + 1, jq] * sn[q]
                J[nu + p, pos[normal[jq]]] += mu[jq] * (sn[p] * g1 - cs[p] * g2)
                J[nu + p, nu + q] = mu[jq] * out[normal[jq]] * (sn[p] * h1 - cs[p] * h2)
            J[nu + p, nu + p] += w[i] * cs[p] + w[i + 1] * sn[p]
        rank, gap = dense.basic_solve_gap(J, F, 1e-12, dx)
        full = rank == n and gap > FULL_RANK_GAP
        for a in range(n):
            x[a] += dx[a]
    out[:] = keep
    return full, best


@njit(cache=True)
def _polish_better(A, r, kind, mu, normal, lam, res, refine, direct):
    """The exact solution on lam's active set (``_polish_kernel``), kept in ``lam`` when its
    residual is below ``res``; returns the residual of what ``lam`` holds then.  ``refine``: how
    many times an answer that clipped a pulling normal is polished again on what is left."""
    pol = np.empty(lam.shape[0])
    # contacts that touch without force (w = 0, lambda = 0) are in the active set first: redundant
    # contacts (a box's four corners) then share the load by the minimum-norm split whichever of
    # them the path to lam left without force; where that is not an answer, the active set without.
    # Only where nothing slides (a body at rest: there the split shows; with sliding pairs the
    # weak contacts seldom make an answer and cost a polish each)
    weak = not _sliding(kind, mu, normal, lam) and _touching(A, r, kind, lam).any()
    pres = _polish_clipped(A, r, kind, mu, normal, lam, pol, weak, direct)
    if weak and pres > 1e-12:
        other = np.empty(lam.shape[0])
        ores = _polish_clipped(A, r, kind, mu, normal, lam, other, np.bool_(False), direct)
        if ores < pres:
            pol[:] = other
            pres = ores
    # where the polish clipped a pulling normal, the active set without it (a primal-dual active
    # set step, ``refine`` times at most): Gauss-Seidel's own iterate of a contact whose exact
    # force is zero may stay positive for thousands of sweeps (dm_control's walker: 12 fallbacks
    # of 20 000 sweeps in 3 s, 3 with it)
    sig = _active_set(kind, mu, normal, lam)
    for _ in range(refine):
        if pres <= 1e-12:
            break
        nsig = _active_set(kind, mu, normal, pol)
        if nsig == sig:
            break
        sig = nsig
        nxt = np.empty(lam.shape[0])
        nres = _polish_clipped(A, r, kind, mu, normal, pol, nxt, np.bool_(False), np.bool_(False))
        if not nres < pres:
            break
        pol[:] = nxt
        pres = nres
    if pres < res:
        lam[:] = pol
        return pres
    return res


@njit(cache=True)
def _polish_clipped(A, r, kind, mu, normal, lam, pol, weak, direct):
    """``_polish_kernel`` into pol, never a pulling force: a normal the linear system leaves below
    zero (round-off, or an active set that is not the answer's) is set to zero, with its
    friction, and the residual judges what that leaves (returned)."""
    known = _polish_kernel(A, r, kind, mu, normal, lam, pol, np.int64(RIM_TURNS), weak, direct)
    clipped = False
    for i in range(pol.shape[0]):
        if kind[i] == NORMAL and pol[i] < 0.0:
            pol[i] = 0.0
            clipped = True
    for i in range(pol.shape[0]):
        if (kind[i] == FRICTION or kind[i] == FRICTION2) and pol[normal[i]] <= 0.0 and pol[i] != 0.0:
            pol[i] = 0.0
            clipped = True
    if known >= 0.0 and not clipped:
        return known
    return _residual(A, r, kind, mu, normal, pol)


#: the fallback's Gauss-Seidel sweeps between two polishes (``_step_solve``)
FALLBACK_ROUND = 200
#: the fallback stops after FALLBACK_STALE rounds in a row that lower the residual by less than
#: FALLBACK_GAIN of itself and move lam by less than FALLBACK_MOVE of its size (dm_control's
#: humanoid landing: 99 rounds after the first left its 6.3e-4 unchanged, lam circling within
#: 3e-4, 11 ms of a 3 s run)
FALLBACK_STALE, FALLBACK_GAIN, FALLBACK_MOVE = 10, 1e-6, 1e-2



#: the first round of Gauss-Seidel sweeps of a step's solve, before its first polish (``_step_solve``)
FIRST_ROUND = 8


@njit(cache=True)
def _active_set(kind, mu, normal, lam):
    """A signature of lam's active set (``_polish_kernel``'s classes: normals in contact, friction
    pairs sticking or on their rim), to polish each active set once."""
    m = lam.shape[0]
    scale = 1e-300
    for i in range(m):
        scale = max(scale, abs(lam[i]))
    sig = np.int64(1469598103934665603)
    for i in range(m):
        c = 0
        k = kind[i]
        if k == NORMAL and lam[i] > 1e-12 * scale:
            c = 1
        elif k == FRICTION and lam[normal[i]] > 1e-12 * scale:
            c = 2 if np.sqrt(lam[i] ** 2 + lam[i + 1] ** 2) < mu[i] * lam[normal[i]] * (1 - 1e-7) else 3
        sig = (sig ^ np.int64(c + 4 * i)) * np.int64(1099511628211)
    return sig


@njit(cache=True)
def _step_solve(A, r, kind, mu, normal, lam, sweeps, tol, fallback_sweeps, skip=0):
    """A time step's solve, in place on ``lam`` (the warm start): the polish of the warm start
    (the last step's answer: its active set is often this step's), then rounds of Gauss-Seidel
    sweeps, FIRST_ROUND and then twice as many each round up to ``sweeps`` in all, each
    followed by a polish of an active set not polished yet (the exact solution on the active set
    the sweeps found; it needs only the right active set, which the sweeps find long before they
    converge), until the answer meets ``tol``.  Where it does not, ``_admm_fallback``, and where
    that leaves it above ``tol`` too, Gauss-Seidel carried on (redundant friction rows, e.g. two feet of one rigid body, converge slowly along
    their null direction) in rounds of FALLBACK_ROUND sweeps, each followed by the polish, until
    an answer meets tol, ``fallback_sweeps`` are spent or FALLBACK_STALE rounds in a row gain
    nothing.  ``skip``: the signature (``_active_set``) of an active set not to polish before the
    fallback (``_kept_solve``; 0: none).  Returns (the residual, 1.0 if the fallback ran)."""
    res = _residual(A, r, kind, mu, normal, lam)
    tried = np.int64(0)
    warm = False
    for i in range(lam.shape[0]):
        if lam[i] != 0.0:
            warm = True
    if warm and res > 1e-12:
        tried = _active_set(kind, mu, normal, lam)
        if tried != skip:
            res = _polish_better(A, r, kind, mu, normal, lam, res, np.int64(0), np.bool_(True))
    if res <= 1e-12:
        return res, 0.0
    n = min(FIRST_ROUND, sweeps)
    done = 0
    while True:
        _pgs(A, r, kind, mu, normal, lam, n, 1e-12)
        done += n
        res = _residual(A, r, kind, mu, normal, lam)
        if res > 1e-12:
            sig = _active_set(kind, mu, normal, lam)
            if sig != tried and sig != skip:
                tried = sig
                res = _polish_better(A, r, kind, mu, normal, lam, res, np.int64(2), np.bool_(False))
        if res <= tol or done >= sweeps:
            break
        n = min(2 * n, sweeps - done)
    if res <= tol:
        return res, 0.0
    res = _admm_fallback(A, r, kind, mu, normal, lam, res, tol)
    if res <= tol:
        return res, 1.0
    done = 0
    stale = 0
    prev = lam.copy()
    while done < fallback_sweeps and res > tol and stale < FALLBACK_STALE:
        n = min(FALLBACK_ROUND, fallback_sweeps - done)
        _pgs(A, r, kind, mu, normal, lam, n, 1e-14)
        done += n
        before = res
        # (no active-set refinement here: its polish, kept in lam, can land on the same point
        # every round and undo what the sweeps gained)
        res = _polish_better(A, r, kind, mu, normal, lam, _residual(A, r, kind, mu, normal, lam), np.int64(0),
                             np.bool_(False))
        # Gauss-Seidel can sit at or circle a point that is not an answer (coupled friction, whose
        # cone rides on the normals, is not a monotone problem), or drift along the null direction
        # of redundant rows with the residual unchanged until a polish lands (the planar two feet
        # of tests/test_contact_solver.py: 12 rounds, lam moving 3 % a round): rounds that gain
        # nothing and hardly move lam are the former
        move, size = 0.0, 1e-300
        for i in range(lam.shape[0]):
            move = max(move, abs(lam[i] - prev[i]))
            size = max(size, abs(lam[i]))
            prev[i] = lam[i]
        stale = stale + 1 if res > (1.0 - FALLBACK_GAIN) * before and move < FALLBACK_MOVE * size else 0
    return res, 1.0

#: the ADMM fallback (``_admm_fallback``): its penalty rho relative to A's mean diagonal, each
#: tried in turn; De Saxce's updates per rho at most; ADMM iterations per update at most; and every
#: how many of them the iterate's active set is polished (when it changed)
ADMM_RHO = (1e-3, 1e-2)
ADMM_OUTER, ADMM_INNER, ADMM_POLISH = 30, 200, 25
#: ... and its relaxation
ADMM_ALPHA = 1.6


@njit(cache=True)
def _cone_project(kind, mu, normal, x, z):
    """z = the projection of x onto the feasible set: FREE rows as they are, a normal without
    friction onto lambda_n >= 0, a normal with its friction pair onto the cone |lambda_t| <= mu
    lambda_n (Boyd and Vandenberghe 2004, exercise 8.3(c): inside it x itself, in its polar
    cone 0, else ((mu |x_t| + x_n) / (mu^2 + 1)) (1, mu x_t / |x_t|))."""
    m = x.shape[0]
    for i in range(m):
        z[i] = max(x[i], 0.0) if kind[i] == NORMAL else x[i]
    for f in range(m):
        if kind[f] != FRICTION:
            continue
        n, c = normal[f], mu[f]
        xn, t1, t2 = x[n], x[f], x[f + 1]
        tn = np.sqrt(t1 * t1 + t2 * t2)
        if tn <= c * xn:
            z[n] = xn
        elif c * tn <= -xn:
            z[n] = z[f] = z[f + 1] = 0.0
        else:
            a = (c * tn + xn) / (c * c + 1.0)
            z[n] = a
            z[f] = c * a * t1 / tn
            z[f + 1] = c * a * t2 / tn


@njit(cache=True)
def _admm_fallback(A, r, kind, mu, normal, lam, res, tol):
    """The problem as De Saxce's fixed point (``conic_fallback``'s), each convex cone program
    min 1/2 lam^T A lam + (r + s)^T lam over the cones (s_n = mu |w_t| of the last iterate) by
    ADMM (Boyd, Parikh, Chu, Peleato and Eckstein 2011, sec. 5: the splitting lam = z, z in the
    cones; x-update (A + rho I) x = rho (z - u) - (r + s) with A + rho I factored once per rho,
    z-update ``_cone_project``, u += x - z; the scheme of Carpentier, Le Lidec and Montaut's ADMM
    contact solver, 2024), its active set polished (``_polish_better``) as it
    settles.  In place on ``lam`` (the best answer found, which starts it); returns its residual.
    Stops at an exact answer (1e-12), or at one below ``tol`` whose residual a whole update did
    not halve.  A semidefinite A (redundant contacts: two feet of one body each) slows
    Gauss-Seidel along its null directions, not this.  The 151 problems that reached the old
    Gauss-Seidel fallback in 3 s passive runs of the dm_control humanoid, walker and hopper and
    gymnasium's ant (6 to 27 rows; from the default pose and three perturbed starts each): that
    fallback left 100 above LCP_TOL, this leaves 3 (most solved to round-off in 200 to 3400
    iterations; with 12 updates per rho instead of ADMM_OUTER = 30, 6)."""
    m = r.shape[0]
    d = 0.0
    for i in range(m):
        d += A[i, i]
    if not d > 0.0:
        return res                      # rows that no motion moves (A = 0): no penalty to scale, nothing to gain
    d = d / max(m, 1)
    K = np.empty((m, m))
    best = lam.copy()
    bres = res
    z, zp, u, x, c, w, pol = (np.empty(m), np.empty(m), np.empty(m), np.empty(m), np.empty(m), np.empty(m),
                              np.empty(m))
    for rho_rel in ADMM_RHO:
        rho = rho_rel * d
        for i in range(m):
            for j in range(i + 1):
                K[i, j] = 0.5 * (A[i, j] + A[j, i])
            K[i, i] += rho
        if not dense.cholesky(K, m, 1e-15):
            continue
        _cone_project(kind, mu, normal, best, z)
        u[:] = 0.0
        tried = np.int64(0)
        for outer in range(ADMM_OUTER):
            before = bres
            _velocities(A, r, z, w)
            for i in range(m):
                c[i] = r[i]
            for f in range(m):
                if kind[f] == FRICTION:
                    c[normal[f]] += mu[f] * np.sqrt(w[f] * w[f] + w[f + 1] * w[f + 1])
            for it in range(ADMM_INNER):
                for i in range(m):
                    x[i] = rho * (z[i] - u[i]) - c[i]
                dense.forward(K, m, x)
                dense.backward(K, m, x)
                for i in range(m):                  # over-relaxed (Boyd et al. 2011, sec. 3.4.3)
                    zp[i] = z[i]
                    x[i] = ADMM_ALPHA * x[i] + (1.0 - ADMM_ALPHA) * z[i] + u[i]
                _cone_project(kind, mu, normal, x, z)
                prim, dual, size = 0.0, 0.0, 1e-300
                for i in range(m):
                    ui = x[i] - z[i]
                    prim = max(prim, abs(ui - u[i]))     # how far the split is from closed
                    u[i] = ui
                    dual = max(dual, abs(z[i] - zp[i]))
                    size = max(size, abs(z[i]))
                settled = prim <= 1e-12 * size and dual <= 1e-12 * size
                if settled or (it + 1) % ADMM_POLISH == 0:
                    sig = _active_set(kind, mu, normal, z)
                    if sig != tried:
                        tried = sig
                        pol[:] = z
                        pres = _polish_better(A, r, kind, mu, normal, pol, _residual(A, r, kind, mu, normal, pol),
                                              np.int64(2), np.bool_(False))
                        if pres < bres:
                            bres = pres
                            best[:] = pol
                        if bres <= 1e-12:
                            lam[:] = best
                            return bres
                if settled:
                    break
            if bres <= tol and bres > 0.5 * before:
                lam[:] = best
                return bres
    lam[:] = best
    return bres


#: a remembered active set whose polish found no exact answer is polished again after this many
#: solves that skipped it (``_kept_solve``)
POLISH_RETRY = 16


@njit(cache=True)
def _into_cones(kind, mu, normal, lam):
    """An inexact answer (a residual up to the step's tolerance, which counts a friction force
    past its cone like any other violation: 1.2e-6 of the force on a sole of the stepping figure
    of tests/test_mocap_groundtruth.py) put into its cones, in place: each friction pair longer
    than mu lam_n scaled onto the rim.  It moves lam by no more than that violation; the forces a
    step applies are then inside their cones to round-off.  Returns whether any moved."""
    moved = False
    for i in range(lam.shape[0]):
        if kind[i] == FRICTION:
            cap = mu[i] * max(lam[normal[i]], 0.0)
            nrm = np.sqrt(lam[i] * lam[i] + lam[i + 1] * lam[i + 1])
            if nrm > cap:
                f = cap / nrm
                lam[i] *= f
                lam[i + 1] *= f
                moved = True
    return moved


@njit(cache=True)
def _kept_solve(A, r, kind, mu, normal, lam, sweeps, tol, fallback_sweeps, memo):
    """``_step_solve`` that remembers, in ``memo`` = (signature, skips so far), the active set of
    an answer its polish left inexact, and does not polish that active set again in the next
    POLISH_RETRY solves (then it tries once more).  Redundant contacts whose velocities cannot
    all vanish at once (a body resting on several contacts that are not coplanar to round-off)
    leave the active set's linear system without an exact solution; its polish and Newton's turns
    of the sliding pairs then fail in every solve of the steps that follow (the time step's
    relinearizations solve the same problem again with nearly the same data).  On gymnasium's
    humanoid lying on the floor: 1562 of 2604 solves of a 3 s run, 24 -> 9 us per solve, 22 more
    answers left at Gauss-Seidel's residual (below the step's tolerance) instead of round-off."""
    skip = memo[0] if memo[1] < POLISH_RETRY else 0
    res, fell = _step_solve(A, r, kind, mu, normal, lam, sweeps, tol, fallback_sweeps, skip)
    if res > 1e-12 and _into_cones(kind, mu, normal, lam):
        res = _residual(A, r, kind, mu, normal, lam)
    if res > 1e-12:
        sig = _active_set(kind, mu, normal, lam)
        if sig == memo[0] and skip != 0:
            memo[1] += 1
        else:
            memo[0] = sig
            memo[1] = 0
    else:
        memo[0] = 0
        memo[1] = 0
    return res, fell


#: the conic fallback's fixed-point iterations at most, and the distance to the rim (relative to
#: mu lambda_n) within which a pair that slips against its force is put on it (``conic_fallback``)
CONIC_ITERS, CONIC_RIM = 30, 1e-5
#: ... which stops at an answer whose residual is below this
CONIC_TOL = 1e-9
#: the cone programs' regularization, relative to A's largest diagonal: redundant contacts make A
#: singular, and Clarabel's interior point then stalls short of the optimum (dm_control's humanoid
#: landing: residual 1.5e-3 with 1e-12 and 1e-9, 1.5e-8 with 1e-7 after the polish); the polish on
#: the active set removes the bias it gives
CONIC_REG = 1e-7


def conic_fallback(A, r, kind, mu, normal, lam):
    """The problem solved as De Saxce's fixed point, for the steps whose Gauss-Seidel and polish
    (``_kept_solve``) stay above their tolerance: returns (lam, residual) of the best answer found
    (lam untouched, residual inf, without Clarabel).

    With s_c = |w_t| of each contact c held fixed, the Coulomb conditions (w = A lam + r; lam in
    the cones K_c = {|lam_t| <= mu lam_n}; the modified velocity w + mu s_c e_n in their duals,
    complementary to lam) are the optimality conditions of the convex second-order cone program
    min 1/2 lam^T A lam + (r + mu s e_n)^T lam over lam in K (De Saxce and Feng 1998; Acary,
    Cadoux, Lemarechal and Malick 2011, sec. 3, use this fixed point); each program is solved
    by Clarabel's interior point method and s is updated from its answer, CONIC_ITERS times at
    most.  An interior point leaves a sliding pair just inside its rim (1e-8 of mu lam_n), where
    the residual reads it as sticking with a slip: pairs within CONIC_RIM of the rim that slip
    against their force are put on it, and the answer is polished (``_polish_better``) on its
    active set.  On a landing of dm_control's humanoid (two feet, eight redundant contacts, mu =
    1) that Gauss-Seidel left at 1.2e-3: 2.5e-10."""
    try:
        import clarabel
        import scipy.sparse as sps
    except ImportError:
        return lam, np.inf
    A = np.ascontiguousarray(A, dtype=float)
    r = np.ascontiguousarray(r, dtype=float)
    kind = np.ascontiguousarray(kind, dtype=np.int64)
    mu = np.ascontiguousarray(mu, dtype=float)
    normal = np.ascontiguousarray(normal, dtype=np.int64)
    m = len(r)
    fric = {int(normal[i]): i for i in range(m) if kind[i] == FRICTION}
    rows, cones = [], []
    for i in range(m):
        if kind[i] != NORMAL:
            continue
        if i in fric:
            f = fric[i]
            rows += [(i, mu[f]), (f, 1.0), (f + 1, 1.0)]
            cones.append(clarabel.SecondOrderConeT(3))
        else:
            rows.append((i, 1.0))
            cones.append(clarabel.NonnegativeConeT(1))
    G = sps.csc_matrix((-np.array([c for _, c in rows]), (np.arange(len(rows)), [j for j, _ in rows])),
                       shape=(len(rows), m))
    scale = max(1.0, float(np.abs(np.diag(A)).max()))
    P = sps.csc_matrix(np.triu(A + CONIC_REG * scale * np.eye(m)))
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-12
    best, best_res = lam, _residual(A, r, kind, mu, normal, lam)
    s = np.zeros(m)
    for _ in range(CONIC_ITERS):
        c = r.copy()
        for n, f in fric.items():
            c[n] += mu[f] * s[n]
        x = np.asarray(clarabel.DefaultSolver(P, c, G, np.zeros(len(rows)), cones, settings).solve().x)
        if x.shape != (m,) or not np.isfinite(x).all():
            break
        w = A @ x + r
        for n, f in fric.items():                  # on the rim where the interior point stopped short
            cap, nrm = mu[f] * x[n], np.hypot(x[f], x[f + 1])
            if cap > 0.0 and nrm > cap * (1.0 - CONIC_RIM) and w[f] * x[f] + w[f + 1] * x[f + 1] < 0.0:
                x[f] *= cap / nrm
                x[f + 1] *= cap / nrm
        res = _polish_better(A, r, kind, mu, normal, x, _residual(A, r, kind, mu, normal, x), 2, False)
        if res < best_res:
            best, best_res = x.copy(), res
        if best_res <= CONIC_TOL:
            break
        s_new = np.zeros(m)
        for n, f in fric.items():
            s_new[n] = np.hypot(w[f], w[f + 1])
        if np.abs(s_new - s).max() <= 1e-10 * max(1.0, float(np.abs(s_new).max())):
            break
        s = s_new
    return best, float(best_res)


def _polish(A, r, kind, mu, normal, lam, tol):
    """The exact solution on the active set of ``lam`` (None if it breaks a condition): normals
    in contact and friction pairs inside their cone are unknowns of a linear system (least
    squares, rcond 1e-12: redundant contacts get the minimum-norm split), a friction pair on
    its rim follows its normal along its present direction."""
    out = np.empty(len(r))
    _polish_kernel(A, r, kind, mu, normal, lam, out, RIM_TURNS, False, False)
    return out if _check(A, r, kind, mu, normal, out, tol) else None


def _check(A, r, kind, mu, normal, lam, tol):
    return residual(A, r, kind, mu, normal, lam) <= tol


def solve(A, r, kind, mu, normal, lam0=None, max_iter=500, tol=1e-9, exact=True):
    """lambda of the mixed complementarity problem (module docstring) and its residual.
    ``lam0`` warm-starts Gauss-Seidel (e.g. the previous step's forces).  ``exact=False``:
    Gauss-Seidel, ``max_iter`` sweeps at most, then one polish if its residual is above
    ``tol`` (kept only if better): the normal forces stay >= 0 and the friction forces inside
    their cones; complementarity is met to ``tol`` or as far as the sweeps got."""
    A = np.ascontiguousarray(A, dtype=float)
    r = np.ascontiguousarray(r, dtype=float)
    m = len(r)
    kind = np.ascontiguousarray(kind, dtype=np.int64)
    mu = np.ascontiguousarray(mu, dtype=float)
    normal = np.ascontiguousarray(normal, dtype=np.int64)
    if m == 0:
        return np.zeros(0), 0.0
    lam = np.zeros(m) if lam0 is None else np.array(lam0, dtype=float)
    if not exact:
        # Gauss-Seidel; where it has not converged in max_iter sweeps, one polish of its active set
        _pgs(A, r, kind, mu, normal, lam, max_iter, 1e-12)
        res = residual(A, r, kind, mu, normal, lam)
        if res > tol:
            pol = _polish(A, r, kind, mu, normal, lam, res)
            if pol is not None:
                return pol, residual(A, r, kind, mu, normal, pol)
        return lam, res
    _pgs(A, r, kind, mu, normal, lam, max_iter, 1e-12)
    best = lam
    res = residual(A, r, kind, mu, normal, lam)
    # the polish always runs: besides exactness it gives redundant contacts the least-norm split
    for _ in range(3):
        pol = _polish(A, r, kind, mu, normal, lam, max(tol, 1e-10, 10 * res))
        if pol is None:
            break
        pres = residual(A, r, kind, mu, normal, pol)
        if pres <= max(res, 1e-12):
            best, res = pol, pres
        if res <= 1e-12:
            break
        lam = pol.copy()
        _pgs(A, r, kind, mu, normal, lam, 50, 1e-14)
    return best, res
