"""Helpers for batched kernels: a stack of N states runs as one parallel compiled loop.

The stack is cut into one contiguous chunk per thread; each thread owns one workspace row
``WS[t]``, so threads share nothing they write.
"""
from numba import njit

from .layout import _view


@njit(inline="always", cache=True)
def chunk(t, nthreads, n):
    """[lo, hi) of the states that thread ``t`` of ``nthreads`` handles out of ``n``."""
    return (t * n) // nthreads, ((t + 1) * n) // nthreads


@njit(inline="always", cache=True)
def pick(X, n):
    """Row n of a C-contiguous stack, or row 0 of a stack of one (an input shared by every
    state).  The row is a carray view: a plain ``X[n]`` view bumps the reference count of X,
    an atomic on one cache line that all threads then fight over (it cost ~20 % of ABA)."""
    k = n if X.shape[0] > 1 else 0
    size = X.size // X.shape[0] if X.shape[0] > 0 else 0
    return _view(X, k * size, X.shape[1:])
