"""Dense Cholesky factorization and triangular solves for the small systems inside kernels (the
contact solver's polish, the time step's Delassus matrix, the constraint forces): loops that
Numba compiles to a few microseconds at tens of rows, where a LAPACK call through NumPy costs
its copies and its checks each time.  Golub and Van Loan 2013, alg. 4.2.1 (gaxpy Cholesky) and
sec. 3.1 (triangular systems)."""
from __future__ import annotations

import math

import numpy as np

from numba import njit


@njit(cache=True)
def cholesky(K, n, rel):
    """K[:n, :n] = L L^T in place on its lower triangle (the strict upper triangle is not read).
    False, K left partly factored, where a pivot is not above ``rel`` times the largest diagonal
    (K singular to that tolerance, or not positive definite)."""
    d0 = 0.0
    for i in range(n):
        d0 = max(d0, K[i, i])
    for k in range(n):
        s = K[k, k]
        for j in range(k):
            s -= K[k, j] * K[k, j]
        if not s > rel * d0:
            return False
        _column(K, k, n, math.sqrt(s))
    return True


@njit(inline="always", cache=True)
def _column(K, k, n, s):
    """Column k of a Cholesky factor in place: L_kk = s, L_ik = (K_ik - sum_j<k L_ij L_kj) / s."""
    K[k, k] = s
    for i in range(k + 1, n):
        t = K[i, k]
        for j in range(k):
            t -= K[i, j] * K[k, j]
        K[i, k] = t / s


@njit(cache=True)
def forward(L, n, x):
    """x = L^-1 x in place (L lower triangular, n x n)."""
    for i in range(n):
        s = x[i]
        for j in range(i):
            s -= L[i, j] * x[j]
        x[i] = s / L[i, i]


@njit(cache=True)
def backward(L, n, x):
    """x = L^-T x in place (L lower triangular, n x n)."""
    for i in range(n - 1, -1, -1):
        s = x[i]
        for j in range(i + 1, n):
            s -= L[j, i] * x[j]
        x[i] = s / L[i, i]


@njit(cache=True)
def pivoted_cholesky(K, n, rel, perm):
    """P K P^T = L L^T for a symmetric positive semidefinite K[:n, :n] (its full square is read),
    with the largest remaining diagonal as each pivot (Higham 2002, sec. 10.3; LAPACK's pstrf):
    L, n x rank, in place in K's lower triangle (rows and columns of K are swapped as pivoted),
    ``perm`` the order (row i of the factor is row perm[i] of K).  Returns the rank: the number
    of pivots above ``rel`` times the largest diagonal (the Schur complement that remains is
    below that and dropped: K singular to that tolerance)."""
    d0 = 0.0
    for i in range(n):
        perm[i] = i
        d0 = max(d0, K[i, i])
    for k in range(n):
        p, best = k, K[k, k]
        for j in range(k + 1, n):
            if K[j, j] > best:
                p, best = j, K[j, j]
        if not best > rel * d0:
            return k
        if p != k:
            for j in range(n):
                K[k, j], K[p, j] = K[p, j], K[k, j]
            for j in range(n):
                K[j, k], K[j, p] = K[j, p], K[j, k]
            perm[k], perm[p] = perm[p], perm[k]
        _column(K, k, n, math.sqrt(best))
        for i in range(k + 1, n):
            K[i, i] -= K[i, k] * K[i, k]    # the diagonal of the Schur complement, for the next pivot
    return n


@njit(cache=True)
def min_norm_psd(B, b, rel, x, gap=1e-8):
    """x = B^+ b, the minimum-norm least-squares solution of B x = b for a symmetric positive
    semidefinite B (n x n), by ``pivoted_cholesky``: with P B P^T = L L^T, L (n x r) of full
    column rank, B^+ = P^T L (L^T L)^-2 L^T P (Ben-Israel and Greville 2003, ch. 1, the
    pseudo-inverse of a full-rank factorization; L^T L has B's nonzero eigenvalues, so its
    condition is B's on its range, not squared).  About a third of the cost of a complete
    orthogonal decomposition at the contact solver's sizes (``lcp._min_norm_solve``).  The
    rank is trusted only where it is clear: every pivot kept above ``gap`` times the first, every
    one dropped below ``rel`` times it.  A pivot between the two may be a zero eigenvalue that
    round-off lifted (a Schur complement's diagonal is a difference of squares: a singular
    12-row block whose 10th singular value was 2.5e-13 of the first kept a pivot of 2.2e-12, and
    a right-hand side just off B's range then put 4e6 into x).  False, x untouched, there and
    where L^T L is not positive definite in floating point: the caller then takes the orthogonal
    decomposition.  B and b are not changed."""
    n = B.shape[0]
    L = B.copy()
    perm = np.empty(n, dtype=np.int64)
    r = pivoted_cholesky(L, n, rel, perm)
    if r and L[r - 1, r - 1] * L[r - 1, r - 1] <= gap * L[0, 0] * L[0, 0]:
        return False
    z = np.empty(max(r, 1))
    if r == n:                          # nonsingular: x = P^T L^-T L^-1 P b
        for i in range(n):
            z[i] = b[perm[i]]
        forward(L, n, z)
        backward(L, n, z)
        for i in range(n):
            x[perm[i]] = z[i]
        return True
    for a in range(r):                  # z = L^T P b
        s = 0.0
        for i in range(a, n):
            s += L[i, a] * b[perm[i]]
        z[a] = s
    G = np.empty((max(r, 1), max(r, 1)))
    for a in range(r):                  # G = L^T L (its lower triangle), then its Cholesky factor
        for c in range(a + 1):
            s = 0.0
            for i in range(a, n):
                s += L[i, a] * L[i, c]
            G[a, c] = s
    if not cholesky(G, r, 0.0):
        return False
    for _ in range(2):                  # z = (L^T L)^-2 z
        forward(G, r, z)
        backward(G, r, z)
    for i in range(n):                  # x = P^T L z
        s = 0.0
        for a in range(min(i + 1, r)):
            s += L[i, a] * z[a]
        x[perm[i]] = s
    return True


@njit(inline="always", cache=True)
def negligible(pivot, first, rel):
    """True where a pivoted factorization stops: its pivot is zero or not above rel times the
    first (the rank found)."""
    return pivot <= rel * first or pivot == 0.0


@njit(inline="always", cache=True)
def swap_columns(W, k, p, perm):
    """Columns k and p of W exchanged, and entries k and p of the column order perm (a pivoted
    factorization's column exchange)."""
    for i in range(W.shape[0]):
        W[i, k], W[i, p] = W[i, p], W[i, k]
    perm[k], perm[p] = perm[p], perm[k]


@njit(cache=True)
def _largest(W, k):
    """The largest |W[i, j]| with i, j >= k, and where."""
    n = W.shape[0]
    big, pi, pj = -1.0, k, k
    for i in range(k, n):
        for j in range(k, n):
            a = abs(W[i, j])
            if a > big:
                big, pi, pj = a, i, j
    return big, pi, pj


@njit(cache=True)
def _rook_pivot(W, k):
    """An entry of W[k:, k:] largest in both its row and its column (rook pivoting: Neal and Poole
    1992; Golub and Van Loan 2013, sec. 3.4.8): columns and rows scanned in turn from column k
    until one scan finds nothing larger, O(n) a scan instead of complete pivoting's O(n^2)."""
    n = W.shape[0]
    big, pi = _column_max(W, k, k, -1.0, k)
    pj = k
    for _ in range(n):
        nb, nj = _column_max(W.T, k, pi, big, pj)       # along the pivot's row
        if nj == pj:
            break
        big, pj = nb, nj
        nb, ni = _column_max(W, k, pj, big, pi)         # along the pivot's column
        if ni == pi:
            break
        big, pi = nb, ni
    return big, pi, pj


@njit(inline="always", cache=True)
def _column_max(W, k, j, big, at):
    """The largest |W[i, j]| over i >= k if above ``big``, and its row; else (big, at)."""
    for i in range(k, W.shape[0]):
        a = abs(W[i, j])
        if a > big:
            big, at = a, i
    return big, at


@njit(cache=True)
def basic_solve(B, b, rel, x):
    """x with B x = b for a small dense square B by Gaussian elimination with rook pivoting
    (``_rook_pivot``; the first pivot the largest entry, as complete pivoting's, Golub and Van Loan
    2013, sec. 3.4.8), stopped where the largest remaining entry falls to ``rel`` times the first
    pivot: r, the rank found so, is returned; the n - r unknowns whose columns were never pivoted
    are 0 (a basic solution, not the minimum-norm one) and the rows never pivoted are not solved
    (where b is not in B's range, B x != b there).  A third of a complete orthogonal
    decomposition's cost, for Newton steps whose size along a null direction does not matter; rook
    pivoting instead of complete pivoting's search of the whole block at every step: the solves of
    a 3 s run of gymnasium's humanoid 40 -> 32 ms, the same answers met.  B and b are not changed."""
    return basic_solve_gap(B, b, rel, x)[0]


@njit(cache=True)
def basic_solve_gap(B, b, rel, x):
    """``basic_solve``, returning (the rank, the smallest pivot kept over the first): a full rank
    whose gap is tiny is a matrix singular to round-off that the threshold ``rel`` did not call so."""
    n = B.shape[0]
    W = B.copy()
    y = b.copy()
    cp = np.arange(n)
    rank = n
    p0 = 0.0
    low = np.inf                        # the smallest pivot kept
    for k in range(n):
        # the first pivot the largest entry (the rank's yardstick), then rook pivots, each checked
        # against the whole remaining block where it looks negligible
        big, pi, pj = _largest(W, k) if k == 0 else _rook_pivot(W, k)
        if k > 0 and negligible(big, p0, rel):
            big, pi, pj = _largest(W, k)
        p0 = big if k == 0 else p0
        if negligible(big, p0, rel):
            rank = k
            break
        if pi != k:
            for j in range(n):
                W[k, j], W[pi, j] = W[pi, j], W[k, j]
            y[k], y[pi] = y[pi], y[k]
        if pj != k:
            swap_columns(W, k, pj, cp)
        piv = W[k, k]
        low = min(low, abs(piv))
        for i in range(k + 1, n):
            f = W[i, k] / piv
            if f != 0.0:
                for j in range(k + 1, n):
                    W[i, j] -= f * W[k, j]
                y[i] -= f * y[k]
    z = np.zeros(n)
    for i in range(rank - 1, -1, -1):
        t = y[i]
        for j in range(i + 1, rank):
            t -= W[i, j] * z[j]
        z[i] = t / W[i, i]
    for j in range(n):
        x[cp[j]] = z[j]
    return rank, (low / p0 if rank else 0.0)
