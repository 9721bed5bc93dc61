"""Equations of motion with constraints a user states: the Lagrange-multiplier form.

A constraint c(q) = 0 (m rows) holds when its velocity J(q) v and its acceleration
J q'' + J' v vanish; the joint-space equations of motion take its force through J^T
(the Lagrange-multiplier form, e.g. Featherstone 2008, ch. 8: M q'' + b = tau + J^T lambda):

    [ M   -J^T ] [ q''    ]   [ tau - b                          ]
    [ J    0   ] [ lambda ] = [ -J' v - 2 alpha J v - beta^2 c(q) ]

with b = C v + g (``nonlinear_effects``) and Baumgarte's stabilization (alpha, beta; 1/s),
which pulls a drifting c back to zero (Baumgarte 1972).  It is solved through the inverse
inertia: lambda = -(J M^-1 J^T)^+ (J M^-1 (tau - b) + J' v + ...), q'' = M^-1 (tau - b + J^T
lambda); dependent rows (a redundant constraint) get the least-norm split of their force.

Kinds (each gives its rows J, J' v and, where it has a target, its error c):

* :class:`PointFixed` - a point of a frame held at a world position (3 rows; lambda the world
  force on the point);
* :class:`PointOnPlane` - a point of a frame on a world plane (1 row; lambda the force along the
  plane's normal): a tool pressing on a wall, free to slide along it;
* :class:`FrameFixed` - a frame held at a world pose (6 rows [linear; angular], world axes);
* :class:`Distance` - two points of two frames at a fixed distance (1 row: a massless rod);
* :class:`Custom` - any ``fn(model, q, v) -> (J, Jdot_v)`` or ``(J, Jdot_v, c)``.

The model's own loop closures (``model.loops``) are added as rows as well.

**Compiled path.**  When every constraint is one of the four geometric kinds (points and frames
fixed on bodies) and the model has no loops, one compiled kernel does the whole step
(:mod:`linkdyn.constraints._kernels`: the kinematics pass, RNEA, CRBA, the rows, the
tree-sparse factorization of M and the solve of Lambda = J M^-1 J^T); the constraints are
packed (frames resolved to bodies and placements) once and the packing is kept for the next
call with the same constraint objects (a constraint's fields are values: assigning one makes
it packed anew).  Redundant rows get the least-norm lambda, as NumPy's ``lstsq``.
:func:`prepare` gives an object that skips even the look-up.  ``Custom`` constraints and
models with loops take the NumPy path below.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np
import scipy.linalg

from ..dynamics.crba import crba
from ..dynamics.rnea import nonlinear_effects
from ..kinematics import frame_pose, frame_velocity, jacobian, jacobian_dot_times_v
from ..model import joints as _J

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model


def _point_terms(model, q, v, frame, point):
    """World position p, Jacobian J (3, nv) and J' v (3,) of a point fixed in ``frame``."""
    T = frame_pose(model, q, frame)
    r = T[:3, :3] @ np.asarray(point, dtype=float)
    Jf = jacobian(model, q, frame, "local_world_aligned")
    J = Jf[:3] - np.cross(r, Jf[3:].T).T if np.any(r) else Jf[:3].copy()
    bias = jacobian_dot_times_v(model, q, v, frame, "local_world_aligned")
    w = frame_velocity(model, q, v, frame, "local_world_aligned")[3:]
    jdv = bias[:3] + np.cross(bias[3:], r) + np.cross(w, np.cross(w, r))
    return T[:3, 3] + r, J, jdv


_EDITS = [0]          # bumped by every assignment to a constraint's field (the packings check it)


def _as_value(value, shape):
    """A read-only float copy of ``value`` if it is an array of ``shape`` (a tuple of floats for a
    3-vector), else ``value`` unchanged (it is rejected where it is used)."""
    if value is None or isinstance(value, (str, bytes)):
        return value
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        return value
    if arr.shape != shape:
        return value
    if shape == (3,):
        return tuple(float(x) for x in arr)
    arr.flags.writeable = False
    return arr


class Constraint:
    """A constraint's rows at a state: ``terms(model, q, v) -> (J, Jdot_v, c or None)``.

    The geometric kinds keep their points, normals and targets as values (tuples, read-only
    arrays), so that the compiled path's packing of them cannot go stale: change a constraint
    by assigning a field (``c.target = (0, 0, 1)``), which is seen by the next call."""
    size = 0
    _version = 0
    _vectors = ()          # fields holding 3-vectors
    _poses = ()            # fields holding 4x4 poses

    def __setattr__(self, name, value):
        if name in self._vectors:
            value = _as_value(value, (3,))
        elif name in self._poses:
            value = _as_value(value, (4, 4))
        object.__setattr__(self, name, value)
        object.__setattr__(self, "_version", self._version + 1)
        _EDITS[0] += 1

    def terms(self, model: Model, q: NDArray[np.float64], v: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64] | None]:
        raise NotImplementedError


@dataclass
class PointFixed(Constraint):
    """The point ``point`` (coordinates in ``frame``) held at the world position ``target``
    (default: none, the acceleration and velocity are held, any drift stays)."""
    frame: str
    point: tuple = (0.0, 0.0, 0.0)
    target: tuple | None = None
    size = 3
    _vectors = ("point", "target")

    def terms(self, model: Model, q: NDArray[np.float64], v: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64] | None]:
        p, J, jdv = _point_terms(model, q, v, self.frame, self.point)
        return J, jdv, (None if self.target is None else p - np.asarray(self.target, dtype=float))


@dataclass
class PointOnPlane(Constraint):
    """The point ``point`` of ``frame`` on the world plane n . x = ``offset`` (``normal`` n made
    unit); it slides freely along the plane.  lambda > 0 pushes the point along n."""
    frame: str
    normal: tuple
    offset: float = 0.0
    point: tuple = (0.0, 0.0, 0.0)
    size = 1
    _vectors = ("normal", "point")

    def terms(self, model: Model, q: NDArray[np.float64], v: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64] | None]:
        n = np.asarray(self.normal, dtype=float)
        n = n / np.linalg.norm(n)
        p, J, jdv = _point_terms(model, q, v, self.frame, self.point)
        return (n @ J)[None, :], np.array([n @ jdv]), np.array([n @ p - self.offset])


@dataclass
class FrameFixed(Constraint):
    """``frame`` held at the world pose ``target`` (4x4; default none: held still where it is,
    drift kept); rows [linear; angular] in world axes at the frame's origin."""
    frame: str
    target: np.ndarray | None = None
    size = 6
    _poses = ("target",)

    def terms(self, model: Model, q: NDArray[np.float64], v: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64] | None]:
        J = jacobian(model, q, self.frame, "local_world_aligned")
        jdv = jacobian_dot_times_v(model, q, v, self.frame, "local_world_aligned")
        if self.target is None:
            return J, jdv, None
        from ..spatial import log3
        T, Tt = frame_pose(model, q, self.frame), np.asarray(self.target, dtype=float)
        return J, jdv, np.concatenate([T[:3, 3] - Tt[:3, 3], log3(T[:3, :3] @ Tt[:3, :3].T)])


@dataclass
class Distance(Constraint):
    """Points ``point_a`` of ``frame_a`` and ``point_b`` of ``frame_b`` kept ``length`` apart
    (a massless rod with ball joints at its ends); lambda > 0 pushes them apart."""
    frame_a: str
    frame_b: str
    length: float
    point_a: tuple = (0.0, 0.0, 0.0)
    point_b: tuple = (0.0, 0.0, 0.0)
    size = 1
    _vectors = ("point_a", "point_b")

    def terms(self, model: Model, q: NDArray[np.float64], v: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64] | None]:
        pa, Ja, ba = _point_terms(model, q, v, self.frame_a, self.point_a)
        pb, Jb, bb = _point_terms(model, q, v, self.frame_b, self.point_b)
        d = pa - pb
        L = float(np.linalg.norm(d))
        if not L > 0:
            raise ValueError(f"Distance({self.frame_a!r}, {self.frame_b!r}): the two points coincide; "
                             "the direction of the rod is undefined")
        u = d / L
        Jd = Ja - Jb
        dd = Jd @ v
        J = (u @ Jd)[None, :]
        # d/dt (u . d') = u . d'' + (|d'|^2 - (u . d')^2) / L
        jdv = u @ (ba - bb) + (dd @ dd - (u @ dd) ** 2) / L
        return J, np.array([jdv]), np.array([L - self.length])


@dataclass
class Custom(Constraint):
    """Rows from ``fn(model, q, v)``: ``(J (m, nv), Jdot_v (m,))`` or ``(J, Jdot_v, c (m,))``."""
    fn: object
    name: str = "custom"

    def terms(self, model: Model, q: NDArray[np.float64], v: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64] | None]:
        out = self.fn(model, q, v)
        if len(out) == 2:
            J, jdv = out
            c = None
        else:
            J, jdv, c = out
        J = np.atleast_2d(np.asarray(J, dtype=float))
        jdv = np.atleast_1d(np.asarray(jdv, dtype=float))
        if J.shape[1] != model.nv or jdv.shape != (J.shape[0],) or not (np.isfinite(J).all() and np.isfinite(jdv).all()):
            raise ValueError(f"Custom {self.name!r}: expected J of shape (m, {model.nv}) and Jdot_v of shape (m,), "
                             f"finite; got {J.shape} and {jdv.shape}")
        return J, jdv, (None if c is None else np.atleast_1d(np.asarray(c, dtype=float)))


@dataclass
class LinearCoupling(Constraint):
    """A linear coupling of one-dof joints held as a constraint row on the uncoupled tree,
    sum_i coefficients[i] q_i = ``offset`` (one row: J = the coefficients at the joints' velocities,
    J' v = 0, error sum_i coefficients[i] q_i - offset).  The same coupling in reduced coordinates is
    :meth:`linkdyn.ModelBuilder.add_coupling` (tests/test_couplings.py checks that the two give
    the same motion); this form holds it where no joint is to be eliminated.  lambda is the
    generalized force along the coefficients."""
    coefficients: dict
    offset: float = 0.0
    size = 1

    def terms_of(self, model: Model) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(a_q (nq,), a_v (nv,)): the coefficients at the joints' coordinates and velocities."""
        aq, av = np.zeros(model.nq), np.zeros(model.nv)
        for n, k in dict(self.coefficients).items():
            i = model.joint_id(n)
            if int(model.jnt_type[i]) not in (_J.REVOLUTE, _J.PRISMATIC) or model.jnt_nq[i] != 1:
                raise ValueError(f"LinearCoupling: joint {n!r} of model {model.name!r} is not a one-dof revolute or "
                                 "prismatic joint with its own coordinate")
            aq[model.jnt_qadr[i]] += float(k)
            av[model.jnt_vadr[i]] += float(k)
        return aq, av

    def terms(self, model: Model, q: NDArray[np.float64], v: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64] | None]:
        aq, av = self.terms_of(model)
        return av[None, :], np.zeros(1), np.array([aq @ q - float(self.offset)])


@dataclass
class Result:
    """``qdd`` (nv,); ``forces``: one array per constraint (its lambda, in its rows' units), in
    the order given; ``loop_forces`` (6 nloops,) of the model's loops; ``residual``: the largest
    |J q'' + J' v + stabilization| left (round-off, or a constraint that cannot hold)."""
    qdd: np.ndarray
    forces: list
    loop_forces: np.ndarray
    residual: float


def constrained_dynamics(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike, constraints: Sequence[Constraint] = (),
                         baumgarte: tuple[float, float] = (0.0, 0.0)) -> Result:
    """Forward dynamics under ``constraints`` (module docstring: the Lagrange-multiplier form)
    and the model's loops: q'' and each constraint's multiplier lambda.  ``baumgarte``:
    (alpha, beta) in 1/s, the stabilization of the constraints that have a target (and of the
    loops); (0, 0) holds the accelerations only.

    Geometric constraints on a model without loops run compiled (module docstring), packed
    once per list of constraint objects; :func:`prepare` skips even that look-up."""
    if constraints and not model.loops:
        hit = _CACHE.get((id(model), *map(id, constraints)))
        pk = hit[1] if hit is not None and hit[0]() is model else _cached_packing(model, constraints)
        if pk is not None:
            res = _run_packed(model, pk, q, v, tau, baumgarte)
            if res is not None:
                return res
    return _constrained_dynamics_numpy(model, q, v, tau, constraints, baumgarte)


def _constrained_dynamics_numpy(model, q, v, tau, constraints=(), baumgarte=(0.0, 0.0)) -> Result:
    """The NumPy path of :func:`constrained_dynamics` (every kind, loops; it also names bad input)."""
    from ..loops.kinematics import loop_bias, loop_error, loop_jacobian
    q = np.asarray(q, dtype=float)
    v = np.asarray(v, dtype=float)
    tau = np.asarray(tau, dtype=float)
    for name, x, n in (("q", q, model.nq), ("v", v, model.nv), ("tau", tau, model.nv)):
        if x.shape != (n,) or not np.isfinite(x).all():
            raise ValueError(f"{name}: expected {n} finite values, got shape {x.shape}")
    alpha, beta = (float(x) for x in baumgarte)
    rows, rhs, sizes = [], [], []
    for k, c in enumerate(constraints):
        if not isinstance(c, Constraint):
            raise TypeError(f"constraints[{k}]: expected a linkdyn.constraints.Constraint "
                            f"(PointFixed, PointOnPlane, FrameFixed, Distance, Custom), got {type(c).__name__}")
        J, jdv, err = c.terms(model, q, v)
        stab = 2.0 * alpha * (J @ v) + (beta ** 2 * err if err is not None else 0.0)
        rows.append(J)
        rhs.append(-jdv - stab)
        sizes.append(J.shape[0])
    if model.nloops:
        JL = loop_jacobian(model, q)
        rows.append(JL)
        # the loop error e = log6(aMb) decreases along J v (d e/dt = -J v), hence + beta^2 e, as the loops' kernel
        rhs.append(-loop_bias(model, q, v) - 2.0 * alpha * (JL @ v) + beta ** 2 * loop_error(model, q).reshape(-1))
    M = crba(model, q)
    f = tau - nonlinear_effects(model, q, v)
    J = np.concatenate(rows) if rows else np.zeros((0, model.nv))
    r = np.concatenate(rhs) if rows else np.zeros(0)
    try:
        cho = scipy.linalg.cho_factor(M)
        a_free = scipy.linalg.cho_solve(cho, f)
        MiJt = scipy.linalg.cho_solve(cho, J.T)
        lam = np.linalg.lstsq(J @ MiJt, r - J @ a_free, rcond=1e-12)[0] if rows else np.zeros(0)
        qdd = a_free + MiJt @ lam
    except np.linalg.LinAlgError:     # M singular: the massless virtual links of loops; the KKT system
        nv, m = model.nv, J.shape[0]
        K = np.block([[M, -J.T], [J, np.zeros((m, m))]])
        z = np.linalg.lstsq(K, np.concatenate([f, r]), rcond=1e-12)[0]
        qdd, lam = z[:nv], z[nv:]
    if not rows:
        return Result(qdd, [], np.zeros(0), 0.0)
    residual = float(np.abs(J @ qdd - r).max())
    out, k = [], 0
    for s in sizes:
        out.append(lam[k:k + s])
        k += s
    return Result(qdd, out, lam[k:], residual)


# ---------------------------------------------------------------------------------------
# the compiled path: packing, a cache of packings per model, and prepare()
_GEOMETRIC = (PointFixed, PointOnPlane, FrameFixed, Distance)
_NO_LOOP_FORCES = np.zeros(0)
_NO_LOOP_FORCES.flags.writeable = False
_ND, _F64 = np.ndarray, np.dtype(np.float64)
_CACHE = {}           # (id(model), ids of the constraints) -> (weak reference to the model, _Packing)
_CACHE_SIZE = 64
_solve = None


def _entry():
    global _solve
    if _solve is None:
        from numba import types as nt

        from .._api import PACKED, VEC, WS, OUT1, Entry
        from ._kernels import _constraint_solve
        from ..dynamics.cholesky import LAM
        _solve = Entry(_constraint_solve, PACKED, LAM, WS, VEC, VEC, VEC, nt.float64, nt.float64, OUT1)
    return _solve


class _Packing:
    """The constraints of one list packed for the kernel (``cw``: description and workspace)."""
    __slots__ = ("constraints", "versions", "edits", "cw", "slices", "nout", "nv")


def _frame_point(model, frame, point):
    """(body, the point in body coordinates, frame rotation, frame position in the body)."""
    f = model.frame_id(frame)
    R, p = np.asarray(model.frame_R[f]), np.asarray(model.frame_p[f])
    return int(model.frame_body[f]), R @ np.asarray(point, dtype=float) + p, R, p


def _pack(model, constraints) -> _Packing:
    from . import _kernels as K
    nc = len(constraints)
    ci = np.zeros((nc, 4))
    cf = np.zeros((nc, K.NF))
    slices, r0 = [], 0
    for k, c in enumerate(constraints):
        t = type(c)
        if t is PointFixed:
            body, r, _, _ = _frame_point(model, c.frame, c.point)
            ci[k] = K.POINT, body, 0, r0
            cf[k, :3] = r
            if c.target is not None:
                cf[k, 3:6], cf[k, 6] = np.asarray(c.target, dtype=float), 1.0
        elif t is PointOnPlane:
            body, r, _, _ = _frame_point(model, c.frame, c.point)
            n = np.asarray(c.normal, dtype=float)
            ci[k] = K.PLANE, body, 0, r0
            cf[k, :3], cf[k, 3:6], cf[k, 6] = r, n / np.linalg.norm(n), float(c.offset)
        elif t is FrameFixed:
            body, _, R, p = _frame_point(model, c.frame, (0.0, 0.0, 0.0))
            ci[k] = K.FRAME, body, 0, r0
            cf[k, :9], cf[k, 9:12] = R.ravel(), p
            if c.target is not None:
                T = np.asarray(c.target, dtype=float)
                cf[k, 12:21], cf[k, 21:24], cf[k, 24] = T[:3, :3].ravel(), T[:3, 3], 1.0
        else:
            ba, ra, _, _ = _frame_point(model, c.frame_a, c.point_a)
            bb, rb, _, _ = _frame_point(model, c.frame_b, c.point_b)
            ci[k] = K.DIST, ba, bb, r0
            cf[k, :3], cf[k, 3:6], cf[k, 6] = ra, rb, float(c.length)
        slices.append(slice(model.nv + r0, model.nv + r0 + c.size))
        r0 += c.size
    if not (np.isfinite(cf).all()):
        raise ValueError("constraints: the points, normals, offsets, lengths and targets must be finite")
    pk = _Packing()
    pk.cw = np.zeros(K._cw_size(nc, r0, model.nv))
    pk.cw[:2] = nc, r0
    pk.cw[2:2 + 4 * nc] = ci.ravel()
    pk.cw[2 + 4 * nc:2 + (4 + K.NF) * nc] = cf.ravel()
    pk.constraints = tuple(constraints)
    pk.versions = tuple(c._version for c in constraints)
    pk.edits = _EDITS[0]
    pk.slices = tuple(slices)
    pk.nout = model.nv + r0 + 1
    pk.nv = model.nv
    return pk


def _geometric(constraints) -> bool:
    for c in constraints:
        if type(c) not in _GEOMETRIC:
            return False
    return True


def _cached_packing(model, constraints):
    """The packing of ``constraints`` for ``model`` (made on first use), or None if some
    constraint is not geometric (the NumPy path then takes it, and names what is wrong).
    Keyed by the ids of the model and of the constraints: the packing holds the constraints (so
    their ids stay theirs) and a weak reference to the model (checked on every hit)."""
    key = (id(model), *map(id, constraints))
    hit = _CACHE.get(key)
    if hit is not None and hit[0]() is model:
        return hit[1]
    if not _geometric(constraints):
        return None
    try:
        ref = weakref.ref(model)
    except TypeError:
        return None
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.clear()
    pk = _pack(model, constraints)
    _CACHE[key] = (ref, pk)
    return pk


def _run_packed(model, pk, q, v, tau, baumgarte):
    """The compiled step for a packing; None when the NumPy path must answer (input that is not
    three float64 vectors, a bad value, M singular, a degenerate Distance)."""
    if not (type(q) is _ND and type(v) is _ND and type(tau) is _ND and q.dtype is _F64 and v.dtype is _F64
            and tau.dtype is _F64 and q.ndim == 1 and v.ndim == 1 and tau.ndim == 1):
        return None
    if pk.edits != _EDITS[0]:
        if tuple(c._version for c in pk.constraints) != pk.versions:
            fresh = _pack(model, pk.constraints)
            pk.cw, pk.versions, pk.slices, pk.nout = fresh.cw, fresh.versions, fresh.slices, fresh.nout
        pk.edits = _EDITS[0]
    alpha, beta = baumgarte
    out = np.empty(pk.nout)
    if (_solve or _entry()).fn(model._packed, model.dof_parent, pk.cw, q, v, tau, float(alpha), float(beta),
                               out) != 0:
        return None
    sl = pk.slices
    forces = [out[sl[0]]] if len(sl) == 1 else [out[k] for k in sl]
    return Result(out[:pk.nv], forces, _NO_LOOP_FORCES, out.item(-1))


class Prepared:
    """``constrained_dynamics`` with its constraints fixed: ``prepared(q, v, tau, baumgarte=...)``
    gives the same :class:`Result`, without looking the packing up (:func:`prepare`)."""

    def __init__(self, model: Model, constraints: Iterable[Constraint]) -> None:
        self.model = model
        self.constraints = tuple(constraints)
        for k, c in enumerate(self.constraints):
            if not isinstance(c, Constraint):
                raise TypeError(f"constraints[{k}]: expected a linkdyn.constraints.Constraint "
                                f"(PointFixed, PointOnPlane, FrameFixed, Distance, Custom), got {type(c).__name__}")
        self._pk = (_pack(model, self.constraints) if self.constraints and not model.loops
                    and _geometric(self.constraints) else None)

    @property
    def compiled(self) -> bool:
        """True if the calls run the compiled kernel (geometric constraints, no loops)."""
        return self._pk is not None

    def __call__(self, q: ArrayLike, v: ArrayLike, tau: ArrayLike, baumgarte: tuple[float, float] = (0.0, 0.0)) -> Result:
        if self._pk is not None:
            res = _run_packed(self.model, self._pk, q, v, tau, baumgarte)
            if res is not None:
                return res
        return _constrained_dynamics_numpy(self.model, q, v, tau, self.constraints, baumgarte)

    def __repr__(self):
        kinds = ", ".join(type(c).__name__ for c in self.constraints)
        return f"<linkdyn.constraints.Prepared {self.model.name!r}: [{kinds}], {'compiled' if self.compiled else 'NumPy'}>"


def prepare(model: Model, constraints: Iterable[Constraint]) -> Prepared:
    """``constrained_dynamics(model, ..., constraints)`` ready to be called many times:
    ``prepared = prepare(model, constraints); res = prepared(q, v, tau, baumgarte=(a, b))``.
    The frames are resolved and the constraints packed here, once."""
    return Prepared(model, constraints)
