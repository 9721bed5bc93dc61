"""Helpers for batched kernels: a stack of N states runs as one parallel compiled loop.

The stack is cut into one contiguous chunk per thread; each thread owns one workspace row
``WS[t]``, so threads share nothing they write.
"""
from numba import njit


@njit(inline="always", cache=True)
def chunk(t, nthreads, n):
    """[lo, hi) of the states that thread ``t`` of ``nthreads`` handles out of ``n``."""
    return (t * n) // nthreads, ((t + 1) * n) // nthreads


@njit(inline="always", cache=True)
def pick(X, n):
    """Row n of a stack, or row 0 of a stack of one (an input shared by every state)."""
    return X[n] if X.shape[0] > 1 else X[0]
