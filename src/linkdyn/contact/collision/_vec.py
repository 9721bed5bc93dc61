"""3-vectors as tuples for the compiled narrow phase (no allocation: tuples live in registers).

A rotation ``R`` is a (3, 3) array whose columns are a frame's axes in the world."""
import math

from numba import njit


@njit(cache=True)
def add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit(cache=True)
def sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit(cache=True)
def scl(a, s):
    return (a[0] * s, a[1] * s, a[2] * s)


@njit(cache=True)
def axpy(a, s, b):
    """a + s b."""
    return (a[0] + s * b[0], a[1] + s * b[1], a[2] + s * b[2])


@njit(cache=True)
def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True)
def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(cache=True)
def norm(a):
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@njit(cache=True)
def col(R, j):
    """Axis j of the frame R."""
    return (R[0, j], R[1, j], R[2, j])


@njit(cache=True)
def mv(R, v):
    """R v: a vector from the frame's coordinates to the world's."""
    return (R[0, 0] * v[0] + R[0, 1] * v[1] + R[0, 2] * v[2],
            R[1, 0] * v[0] + R[1, 1] * v[1] + R[1, 2] * v[2],
            R[2, 0] * v[0] + R[2, 1] * v[1] + R[2, 2] * v[2])


@njit(cache=True)
def mtv(R, v):
    """R^T v: a world vector in the frame's coordinates."""
    return (R[0, 0] * v[0] + R[1, 0] * v[1] + R[2, 0] * v[2],
            R[0, 1] * v[0] + R[1, 1] * v[1] + R[2, 1] * v[2],
            R[0, 2] * v[0] + R[1, 2] * v[1] + R[2, 2] * v[2])


@njit(cache=True)
def vec(a):
    """A (3,) array row as a tuple."""
    return (a[0], a[1], a[2])


@njit(cache=True)
def put(out, k, dist, pos, normal):
    """Row k of a contact table: [dist, pos (3), normal (3)]."""
    out[k, 0] = dist
    out[k, 1], out[k, 2], out[k, 3] = pos[0], pos[1], pos[2]
    out[k, 4], out[k, 5], out[k, 6] = normal[0], normal[1], normal[2]


@njit(cache=True)
def clip(x, lo, hi):
    return lo if x < lo else (hi if x > hi else x)


@njit(cache=True)
def tangents(n):
    """t1, t2 with [t1, t2, n] a right-handed orthonormal frame (Duff et al. 2017, listing 2)."""
    s = 1.0 if n[2] >= 0.0 else -1.0
    a = -1.0 / (s + n[2])
    b = n[0] * n[1] * a
    return (1.0 + s * n[0] * n[0] * a, s * b, -s * n[0]), (b, s + n[1] * n[1] * a, -n[1])
