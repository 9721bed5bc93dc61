"""Moving on the configuration manifold: neutral, random, integrate, difference, normalize.

Vector-like joints add ``v dt``.  Quaternion joints move by the exponential map
(Rodrigues' formula, Nakamura and Yamane 2000 eqs. 34-38): a ball joint's q <- q (x) exp(w dt / 2) with w in
the child frame; a free joint moves on SE(3), (R, p) <- (R, p) exp6([v; w] dt), exactly as
Pinocchio's ``integrate``; a planar joint on SE(2).  ``difference`` is the inverse:
``integrate(q0, difference(q0, q1)) == q1``.
"""
from __future__ import annotations

import math
from .gears import difference_via, integrate_via, reduced
from typing import TYPE_CHECKING

import numpy as np
import numba
from numba import njit, prange

from .._api import MI, OUT1, VEC, Entry, as_states, raise_for_status, vectors
from .._kernels.batch import chunk as _chunk, pick as _pick
from .._kernels.passes import BAD_SHAPE, BAD_V, OK, all_finite as _all_finite, check_q as _check_q
from . import joints as J

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from .model import Model


@njit(inline="always", cache=True)
def _quat_mul(ax, ay, az, aw, bx, by, bz, bw):
    return (aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz)


@njit(inline="always", cache=True)
def _quat_exp(wx, wy, wz):
    """exp of the rotation vector w as a unit quaternion (Rodrigues, Nakamura and Yamane 2000 eq. 36)."""
    th = math.sqrt(wx * wx + wy * wy + wz * wz)
    if th < 1e-8:
        s = 0.5 - th * th / 48.0           # sin(th/2)/th
    else:
        s = math.sin(0.5 * th) / th
    return wx * s, wy * s, wz * s, math.cos(0.5 * th)


@njit(inline="always", cache=True)
def _quat_log(x, y, z, w):
    """Rotation vector of a unit quaternion (shortest rotation)."""
    if w < 0.0:
        x, y, z, w = -x, -y, -z, -w
    n = math.sqrt(x * x + y * y + z * z)
    if n < 1e-8:
        k = 2.0 / w                        # th / sin(th/2) ~ 2 / cos(th/2)
    else:
        k = 2.0 * math.atan2(n, w) / n
    return x * k, y * k, z * k


@njit(inline="always", cache=True)
def _rot_apply(x, y, z, w, vx, vy, vz):
    """R(q) v for the unit quaternion q = [x, y, z, w]."""
    # v + 2 w (u x v) + 2 u x (u x v), u = [x, y, z]
    tx = 2.0 * (y * vz - z * vy)
    ty = 2.0 * (z * vx - x * vz)
    tz = 2.0 * (x * vy - y * vx)
    return (vx + w * tx + y * tz - z * ty, vy + w * ty + z * tx - x * tz, vz + w * tz + x * ty - y * tx)


@njit(inline="always", cache=True)
def _se3_V(wx, wy, wz, vx, vy, vz, inverse):
    """V(w) v (or V(w)^-1 v), V = I + a [w]x + b [w]x^2 with a = (1 - cos t)/t^2,
    b = (t - sin t)/t^3: the left Jacobian of SO(3) that couples translation and rotation in
    exp6.  V^-1 = I - [w]x / 2 + c [w]x^2, c = (1 - (t/2) cot(t/2)) / t^2.  Below t = 0.1 the
    closed forms cancel, so their Taylor series are used (truncation error < 1e-16)."""
    t2 = wx * wx + wy * wy + wz * wz
    t = math.sqrt(t2)
    if inverse:
        a = -0.5
        if t < 0.1:
            b = 1.0 / 12.0 + t2 * (1.0 / 720.0 + t2 * (1.0 / 30240.0 + t2 / 1209600.0))
        else:
            h = 0.5 * t
            b = (1.0 - h * math.cos(h) / math.sin(h)) / t2
    else:
        h = 0.5 * t
        sinc_h = 1.0 - h * h / 6.0 if h < 1e-4 else math.sin(h) / h
        a = 0.5 * sinc_h * sinc_h                    # (1 - cos t)/t^2 = sin^2(t/2) / (t^2/2)
        if t < 0.1:
            b = 1.0 / 6.0 - t2 * (1.0 / 120.0 - t2 * (1.0 / 5040.0 - t2 / 362880.0))
        else:
            b = (t - math.sin(t)) / (t2 * t)
    cx, cy, cz = wy * vz - wz * vy, wz * vx - wx * vz, wx * vy - wy * vx           # w x v
    ccx, ccy, ccz = wy * cz - wz * cy, wz * cx - wx * cz, wx * cy - wy * cx        # w x (w x v)
    return vx + a * cx + b * ccx, vy + a * cy + b * ccy, vz + a * cz + b * ccz


@njit(inline="always", cache=True)
def _se2_V(th, vx, vy, inverse):
    """V(th) [vx, vy] of the SE(2) exponential (or its inverse), with s = sin th / th and
    c = (1 - cos th) / th = 2 sin^2(th/2) / th, both free of cancellation."""
    h = 0.5 * th
    sinc_h = 1.0 - h * h / 6.0 if abs(h) < 1e-4 else math.sin(h) / h
    s = sinc_h * math.cos(h)                          # sin th / th
    c = sinc_h * math.sin(h)                          # (1 - cos th) / th
    if inverse:
        d = s * s + c * c
        return (s * vx + c * vy) / d, (-c * vx + s * vy) / d
    return s * vx - c * vy, c * vx + s * vy


@njit(cache=True)
def _integrate_kernel(mi, q, v, dt, out):
    """out = q (+) v dt."""
    st = _check_q(mi, q)
    if st != OK:
        return st
    if v.shape[0] != mi[3, mi.shape[1] - 1] + mi[5, mi.shape[1] - 1]:
        return BAD_SHAPE
    if not _all_finite(v):
        return BAD_V
    jtype, qadr, vadr = mi[1], mi[2], mi[3]
    out[:] = q
    for i in range(1, mi.shape[1]):
        k, o, d = jtype[i], qadr[i], vadr[i]
        if k == J.SPHERICAL:
            ex, ey, ez, ew = _quat_exp(v[d] * dt, v[d + 1] * dt, v[d + 2] * dt)
            out[o], out[o + 1], out[o + 2], out[o + 3] = _quat_mul(q[o], q[o + 1], q[o + 2], q[o + 3], ex, ey, ez, ew)
        elif k == J.FREE:
            wx, wy, wz = v[d + 3] * dt, v[d + 4] * dt, v[d + 5] * dt
            px, py, pz = _se3_V(wx, wy, wz, v[d] * dt, v[d + 1] * dt, v[d + 2] * dt, False)
            qx, qy, qz, qw = q[o + 3], q[o + 4], q[o + 5], q[o + 6]
            rx, ry, rz = _rot_apply(qx, qy, qz, qw, px, py, pz)
            out[o], out[o + 1], out[o + 2] = q[o] + rx, q[o + 1] + ry, q[o + 2] + rz
            ex, ey, ez, ew = _quat_exp(wx, wy, wz)
            out[o + 3], out[o + 4], out[o + 5], out[o + 6] = _quat_mul(qx, qy, qz, qw, ex, ey, ez, ew)
        elif k == J.PLANAR:
            th = q[o + 2]
            dx, dy = _se2_V(v[d + 2] * dt, v[d] * dt, v[d + 1] * dt, False)
            c, s = math.cos(th), math.sin(th)
            out[o] += c * dx - s * dy
            out[o + 1] += s * dx + c * dy
            out[o + 2] += v[d + 2] * dt
        else:
            for j in range(mi[5, i]):
                out[o + j] += v[d + j] * dt
    return OK


@njit(inline="always", cache=True)
def _crm(r0, r1, r2, p0, p1, p2, v0, v1, v2, w0, w1, w2, out, o):
    """out[o:o+6] = [phi x v + rho x w; phi x w], the motion cross product of [rho; phi] and
    [v; w] (the Lie bracket of se(3) in linkdyn's [linear; angular] order)."""
    out[o] = p1 * v2 - p2 * v1 + r1 * w2 - r2 * w1
    out[o + 1] = p2 * v0 - p0 * v2 + r2 * w0 - r0 * w2
    out[o + 2] = p0 * v1 - p1 * v0 + r0 * w1 - r1 * w0
    out[o + 3] = p1 * w2 - p2 * w1
    out[o + 4] = p2 * w0 - p0 * w2
    out[o + 5] = p0 * w1 - p1 * w0


@njit(cache=True)
def _dexpinv_kernel(mi, theta, v, out, tmp):
    """out = dexp^-1_{-theta}(v) joint by joint, to third order: v + [theta, v] / 2 +
    [theta, [theta, v]] / 12.  For q(t) = q (+) theta(t) with the body velocity v (linkdyn's
    joints move by right multiplication), theta' is this; Runge-Kutta-Munthe-Kaas methods
    of order 4 need it to this order.  Joints whose coordinates are a vector space (all but
    spherical, planar and free) have theta' = v.  ``tmp`` (nv,) is scratch."""
    jtype, vadr = mi[1], mi[3]
    for i in range(1, mi.shape[1]):
        k, d = jtype[i], vadr[i]
        if k == J.SPHERICAL or k == J.FREE or k == J.PLANAR:
            # embed in se(3): (rho, phi) and (vlin, w)
            if k == J.SPHERICAL:
                r = (0.0, 0.0, 0.0)
                p = (theta[d], theta[d + 1], theta[d + 2])
                x = (0.0, 0.0, 0.0, v[d], v[d + 1], v[d + 2])
            elif k == J.FREE:
                r = (theta[d], theta[d + 1], theta[d + 2])
                p = (theta[d + 3], theta[d + 4], theta[d + 5])
                x = (v[d], v[d + 1], v[d + 2], v[d + 3], v[d + 4], v[d + 5])
            else:
                r = (theta[d], theta[d + 1], 0.0)
                p = (0.0, 0.0, theta[d + 2])
                x = (v[d], v[d + 1], 0.0, 0.0, 0.0, v[d + 2])
            _crm(r[0], r[1], r[2], p[0], p[1], p[2], x[0], x[1], x[2], x[3], x[4], x[5], tmp, 0)     # [theta, v]
            b = (tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5])
            _crm(r[0], r[1], r[2], p[0], p[1], p[2], b[0], b[1], b[2], b[3], b[4], b[5], tmp, 0)     # [theta, [theta, v]]
            y = (x[0] + 0.5 * b[0] + tmp[0] / 12.0, x[1] + 0.5 * b[1] + tmp[1] / 12.0,
                 x[2] + 0.5 * b[2] + tmp[2] / 12.0, x[3] + 0.5 * b[3] + tmp[3] / 12.0,
                 x[4] + 0.5 * b[4] + tmp[4] / 12.0, x[5] + 0.5 * b[5] + tmp[5] / 12.0)
            if k == J.SPHERICAL:
                out[d], out[d + 1], out[d + 2] = y[3], y[4], y[5]
            elif k == J.FREE:
                for j in range(6):
                    out[d + j] = y[j]
            else:
                out[d], out[d + 1], out[d + 2] = y[0], y[1], y[5]
        else:
            for j in range(mi[5, i]):
                out[d + j] = v[d + j]


def dexpinv(model: Model, theta: ArrayLike, v: ArrayLike) -> NDArray[np.float64]:
    """theta' for q(t) = q (+) theta(t) moving with velocity v: dexp^-1_{-theta}(v) per joint
    to third order (see :func:`_dexpinv_kernel`); theta and v (nv,)."""
    theta = np.ascontiguousarray(theta, dtype=float)
    v = np.ascontiguousarray(v, dtype=float)
    if theta.shape != (model.nv,) or v.shape != (model.nv,):
        raise ValueError(f"theta, v: expected shape ({model.nv},), got {theta.shape} and {v.shape}")
    if model._full is not None:          # a geared model: the full tree's, at G theta, G v
        c = model._coupling
        return dexpinv(model._full, c.v(theta), c.v(v))[c.keep_v]
    out = np.empty(model.nv)
    _dexpinv_kernel(model._mi, theta, v, out, np.empty(6))
    return out


@njit(cache=True)
def _difference_kernel(mi, q0, q1, out):
    """out = q1 (-) q0, the velocity that moves q0 to q1 in unit time."""
    st = _check_q(mi, q0)
    if st == OK:
        st = _check_q(mi, q1)
    if st != OK:
        return st
    jtype, qadr, vadr = mi[1], mi[2], mi[3]
    for i in range(1, mi.shape[1]):
        k, o, d = jtype[i], qadr[i], vadr[i]
        if k == J.SPHERICAL or k == J.FREE:
            a = o + (3 if k == J.FREE else 0)
            # relative rotation q0^-1 (x) q1, then its log
            rx, ry, rz, rw = _quat_mul(-q0[a], -q0[a + 1], -q0[a + 2], q0[a + 3], q1[a], q1[a + 1], q1[a + 2], q1[a + 3])
            wx, wy, wz = _quat_log(rx, ry, rz, rw)
            if k == J.SPHERICAL:
                out[d], out[d + 1], out[d + 2] = wx, wy, wz
            else:
                # p_rel = R0^T (p1 - p0), v = V(w)^-1 p_rel
                px, py, pz = _rot_apply(-q0[a], -q0[a + 1], -q0[a + 2], q0[a + 3],
                                        q1[o] - q0[o], q1[o + 1] - q0[o + 1], q1[o + 2] - q0[o + 2])
                out[d], out[d + 1], out[d + 2] = _se3_V(wx, wy, wz, px, py, pz, True)
                out[d + 3], out[d + 4], out[d + 5] = wx, wy, wz
        elif k == J.PLANAR:
            th0 = q0[o + 2]
            dth = q1[o + 2] - th0
            c, s = math.cos(th0), math.sin(th0)
            dx, dy = q1[o] - q0[o], q1[o + 1] - q0[o + 1]
            out[d], out[d + 1] = _se2_V(dth, c * dx + s * dy, -s * dx + c * dy, True)
            out[d + 2] = dth
        else:
            for j in range(mi[5, i]):
                out[d + j] = q1[o + j] - q0[o + j]
    return OK


@njit(parallel=True, cache=True)
def _integrate_batch(mi, Q, V, dt, nt, OUT, status):
    n = OUT.shape[0]
    for t in prange(nt):
        lo, hi = _chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = _integrate_kernel(mi, _pick(Q, k), _pick(V, k), dt, _pick(OUT, k))


@njit(parallel=True, cache=True)
def _difference_batch(mi, Q0, Q1, nt, OUT, status):
    n = OUT.shape[0]
    for t in prange(nt):
        lo, hi = _chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = _difference_kernel(mi, _pick(Q0, k), _pick(Q1, k), _pick(OUT, k))


_integrate = Entry(_integrate_kernel, MI, VEC, VEC, numba.types.float64, OUT1)
_difference = Entry(_difference_kernel, MI, VEC, VEC, OUT1)


@reduced(via=integrate_via, pass_fn=True)
def integrate(model: Model, q: ArrayLike, v: ArrayLike, dt: float = 1.0) -> NDArray[np.float64]:
    """q (+) v dt on the configuration manifold; (N, nq) for a stack."""
    if type(dt) is float and math.isfinite(dt) and vectors(q, v):      # one state: straight to the kernel
        out = np.empty(model.nq)
        if _integrate.fn(model._mi, q, v, dt, out) == OK:
            return out
    if isinstance(dt, (bool, np.bool_)) or not isinstance(dt, (int, float, np.integer, np.floating)):
        raise TypeError(f"dt: expected a real number, got {dt!r}")
    dt = float(dt)
    if not math.isfinite(dt):
        raise ValueError(f"dt: must be finite, got {dt}")
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return integrate.on_full_tree(model, q, v, dt)
    args = as_states(model, q=q, v=v)
    if args.batch is None:
        out = np.empty(model.nq)
        st = _integrate_kernel(model._mi, args.q, args.v, dt, out)
    else:
        out, st = np.empty((args.batch, model.nq)), np.empty(args.batch, dtype=np.int64)
        _integrate_batch(model._mi, args.q, args.v, dt, numba.get_num_threads(), out, st)
    raise_for_status(model, st, q=q, v=v)
    return out


@reduced(via=difference_via, pass_fn=True)
def difference(model: Model, q0: ArrayLike, q1: ArrayLike) -> NDArray[np.float64]:
    """The velocity v (nv,) with integrate(q0, v, 1) == q1; (N, nv) for a stack."""
    if vectors(q0, q1):
        out = np.empty(model.nv)
        if _difference.fn(model._mi, q0, q1, out) == OK:
            return out
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return difference.on_full_tree(model, q0, q1)
    args = as_states(model, q0=q0, q1=q1)
    if args.batch is None:
        out = np.empty(model.nv)
        st = _difference_kernel(model._mi, args.q0, args.q1, out)
    else:
        out, st = np.empty((args.batch, model.nv)), np.empty(args.batch, dtype=np.int64)
        _difference_batch(model._mi, args.q0, args.q1, numba.get_num_threads(), out, st)
    if np.any(st):
        _raise_named(model, st, args)
    return out


def _raise_named(model, status, args):
    """difference's kernels report a bad configuration without saying which: check each."""
    for name in ("q0", "q1"):
        Q = getattr(args, name)
        if args.batch is not None and Q.shape[0] == 1:
            Q = np.repeat(Q, args.batch, axis=0)          # one configuration shared by the stack
        st = np.array([_check_q(model._mi, r) for r in Q]) if Q.ndim == 2 else _check_q(model._mi, Q)
        raise_for_status(model, st, q_name=name, q=Q)
    raise_for_status(model, status, q_name="q0", q=args.q0)


def neutral(model: Model) -> NDArray[np.float64]:
    """The reference configuration: zeros, identity quaternions."""
    q = np.zeros(model.nq)
    for o in model._quat_starts:
        q[o + 3] = 1.0
    return q


def normalize(model: Model, q: ArrayLike) -> NDArray[np.float64]:
    """q with every quaternion scaled to unit norm (a copy)."""
    q = np.array(q, dtype=float)
    if q.shape[-1] != model.nq:
        raise ValueError(f"q: expected shape ({model.nq},) or (N, {model.nq}), got {q.shape}")
    for o in model._quat_starts:
        n = np.linalg.norm(q[..., o:o + 4], axis=-1, keepdims=True)
        if np.any(n < 1e-12) or not np.all(np.isfinite(n)):
            raise ValueError(f"q: the quaternion q[{o}:{o + 4}] is zero or not finite and cannot be normalized")
        q[..., o:o + 4] /= n
    return q


def random_configuration(model: Model, rng: int | np.random.Generator | None = None, size: int | None = None) -> NDArray[np.float64]:
    """A configuration drawn uniformly within the joint limits (or a stack of ``size``).

    Unlimited coordinates are drawn in [-pi, pi] for angles and [-1, 1] for translations,
    a coordinate limited on one side only within a span of 2 pi (angles) or 2 (translations)
    from its limit; quaternions uniformly on the unit sphere.
    """
    rng = np.random.default_rng(rng)
    shape = (model.nq,) if size is None else (int(size), model.nq)
    lo, hi = model.lower.copy(), model.upper.copy()
    angle = np.zeros(model.nq, dtype=bool)
    for i in range(1, model.nbody):
        k, o = model.jnt_type[i], model.jnt_qadr[i]
        if k in (J.REVOLUTE, J.UNIVERSAL, J.SPHERICAL_ZYX):
            angle[o:o + model.jnt_nq[i]] = True
        elif k == J.CYLINDRICAL:
            angle[o + 1] = True
        elif k == J.PLANAR:
            angle[o + 2] = True
    half = np.where(angle, np.pi, 1.0)
    lo_f, hi_f = np.isfinite(lo), np.isfinite(hi)
    lo, hi = (np.where(lo_f, lo, np.where(hi_f, hi - 2 * half, -half)),
              np.where(hi_f, hi, np.where(lo_f, lo + 2 * half, half)))
    q = rng.uniform(lo, hi, size=shape)
    for o in model._quat_starts:
        g = rng.standard_normal(q[..., o:o + 4].shape)
        q[..., o:o + 4] = g / np.linalg.norm(g, axis=-1, keepdims=True)
    return q
