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
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from .dynamics.crba import crba
from .dynamics.rnea import nonlinear_effects
from .kinematics import frame_pose, frame_velocity, jacobian, jacobian_dot_times_v


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


class Constraint:
    """A constraint's rows at a state: ``terms(model, q, v) -> (J, Jdot_v, c or None)``."""
    size = 0

    def terms(self, model, q, v):
        raise NotImplementedError


@dataclass
class PointFixed(Constraint):
    """The point ``point`` (coordinates in ``frame``) held at the world position ``target``
    (default: none, the acceleration and velocity are held, any drift stays)."""
    frame: str
    point: tuple = (0.0, 0.0, 0.0)
    target: tuple | None = None
    size = 3

    def terms(self, model, q, v):
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

    def terms(self, model, q, v):
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

    def terms(self, model, q, v):
        J = jacobian(model, q, self.frame, "local_world_aligned")
        jdv = jacobian_dot_times_v(model, q, v, self.frame, "local_world_aligned")
        if self.target is None:
            return J, jdv, None
        from .spatial import log3
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

    def terms(self, model, q, v):
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

    def terms(self, model, q, v):
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
class Result:
    """``qdd`` (nv,); ``forces``: one array per constraint (its lambda, in its rows' units), in
    the order given; ``loop_forces`` (6 nloops,) of the model's loops; ``residual``: the largest
    |J q'' + J' v + stabilization| left (round-off, or a constraint that cannot hold)."""
    qdd: np.ndarray
    forces: list
    loop_forces: np.ndarray
    residual: float


def constrained_dynamics(model, q, v, tau, constraints=(), baumgarte=(0.0, 0.0)) -> Result:
    """Forward dynamics under ``constraints`` (module docstring: the Lagrange-multiplier form)
    and the model's loops: q'' and each constraint's multiplier lambda.  ``baumgarte``:
    (alpha, beta) in 1/s, the stabilization of the constraints that have a target (and of the
    loops); (0, 0) holds the accelerations only."""
    from .loops.kinematics import loop_bias, loop_error, loop_jacobian
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
        rhs.append(-loop_bias(model, q, v) - 2.0 * alpha * (JL @ v) - beta ** 2 * loop_error(model, q).reshape(-1))
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
