"""Dense Cholesky factorization and triangular solves for the small systems inside kernels (the
contact solver's polish, the time step's Delassus matrix, the constraint forces): loops that
Numba compiles to a few microseconds at tens of rows, where a LAPACK call through NumPy costs
its copies and its checks each time.  Golub and Van Loan 2013, alg. 4.2.1 (gaxpy Cholesky) and
sec. 3.1 (triangular systems)."""
from __future__ import annotations

import math

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
        s = math.sqrt(s)
        K[k, k] = s
        for i in range(k + 1, n):
            t = K[i, k]
            for j in range(k):
                t -= K[i, j] * K[k, j]
            K[i, k] = t / s
    return True


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
