"""The unilateral constraints of a model at one state: contacts and joint limits as rows.

Every unilateral constraint is a *unit* with a gap phi (>= 0 allowed, < 0 penetration or a
limit overshoot), a normal row n with phi' = n v, and, for a contact, two tangent rows T
whose product T v is the sliding velocity at the contact point, with a friction coefficient
mu and a restitution e.  At the acceleration level the rows come with their drift
(phi'' = n q'' + n' v, the J' v of the rows).  A solver (``linkdyn.contact.lcp``) finds the
normal forces lambda_n >= 0 (complementary to phi'' >= 0) and the friction forces inside the
Coulomb cone |lambda_t| <= mu lambda_n; the joint torques they make are N^T lambda_n +
T^T lambda_t.

Units:

* **contact**: a point or sphere (ModelBuilder.add_contact) against a plane on another body
  (ModelBuilder.add_plane; the ground is a plane on the world).  phi is the signed distance of
  the sphere's surface to the plane; n and T measure the velocity of the sphere's lowest point
  relative to the plane's body at that point, along the plane's normal and two tangents.
* **limit**: a coordinate of a revolute, prismatic, cylindrical, universal, planar (angle) or
  ZYX-spherical joint with a finite ``lower``/``upper`` (phi = q - lower or upper - q), and
  the swing cone and twist range of a ball joint (``Spherical(swing=..., twist=...)``; the
  swing-twist decomposition of Baerlocher and Boulic 2001, ``linkdyn.contact.swing_twist``).

A unit whose normal row vanishes (``inert``: no motion the joints allow changes its gap to first
order, e.g. a body on slide joints parallel to the plane it rests on, gymnasium's pusher object
on its table) is no constraint on the motion: it can neither be pushed out nor pressed in, and
carries no force (the joints hold the body along its normal).  The solvers leave it out; a
penetration it has stays as it is.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numba import njit

from ..kinematics import forward_kinematics, joint_jacobians
from ..model import joints as J

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..kinematics import Kinematics
    from ..model.model import Model

CONTACT, LIMIT = 0, 1
#: a normal row whose every entry is at most this (m of gap per m or rad of a coordinate: a lever
#: arm of 0.1 nm, a direction within 1e-10 rad of square to a slide axis) is ``inert``: far below
#: any physical lever arm, far above the round-off (~1e-16 m) of an exact zero in rotated frames,
#: whose push-out would ask for joint speeds of 1e15 and more
INERT = 1e-10


def inert(N: NDArray[np.float64]) -> NDArray[np.bool_]:
    """(k,) the rows of N (k, nv) that no motion of the model moves (every entry <= INERT in
    magnitude): units that are no constraint on the motion (module docstring)."""
    N = np.asarray(N, dtype=float)
    return np.abs(N).max(axis=1, initial=0.0) <= INERT if N.ndim == 2 else np.zeros(0, dtype=bool)
#: joint kinds whose coordinates are their velocities' integrals (q_k' = v_k): a coordinate
#: limit is then a row e_k
_COORD_KINDS = {J.REVOLUTE: (0,), J.PRISMATIC: (0,), J.CYLINDRICAL: (0, 1), J.UNIVERSAL: (0, 1),
                J.SPHERICAL_ZYX: (0, 1, 2), J.PLANAR: (2,)}


@dataclass
class Units:
    """Unilateral units at one state (k of them).  ``name`` (k,) labels such as
    ``"l_sole_contact0/ground"`` or ``"r_knee_joint.upper"``, ``kind`` (k,) CONTACT or LIMIT,
    ``gap`` (k,), ``N`` (k, nv) normal rows, ``T`` (k, 2, nv) tangent rows (zero for limits),
    ``mu``, ``e`` (k,) friction and restitution, ``drift_n`` (k,) and ``drift_t`` (k, 2) the
    rows' J' v (when asked for), and for contacts the world ``point`` (k, 3) and the frame
    ``frame`` (k, 3, 3) whose columns are the two tangents and the normal."""
    name: list
    kind: np.ndarray
    gap: np.ndarray
    N: np.ndarray
    T: np.ndarray
    mu: np.ndarray
    e: np.ndarray
    drift_n: np.ndarray
    drift_t: np.ndarray
    point: np.ndarray
    frame: np.ndarray
    key: list

    def __len__(self):
        return len(self.name)

    @staticmethod
    def concat(parts: list[Units], nv: int) -> Units:
        """The units of ``parts`` one after the other (none: zero units of nv columns)."""
        if not parts:
            return Units([], np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros((0, nv)), np.zeros((0, 2, nv)),
                         np.zeros(0), np.zeros(0), np.zeros(0), np.zeros((0, 2)), np.zeros((0, 3)),
                         np.zeros((0, 3, 3)), [])
        if len(parts) == 1:
            return parts[0]
        cat = np.concatenate
        return Units(sum((u.name for u in parts), []), cat([u.kind for u in parts]), cat([u.gap for u in parts]),
                     cat([u.N for u in parts]), cat([u.T for u in parts]), cat([u.mu for u in parts]),
                     cat([u.e for u in parts]), cat([u.drift_n for u in parts]), cat([u.drift_t for u in parts]),
                     cat([u.point for u in parts]), cat([u.frame for u in parts]), sum((u.key for u in parts), []))

    def subset(self, idx: ArrayLike) -> Units:
        idx = np.asarray(idx, dtype=np.int64)
        return Units([self.name[i] for i in idx], self.kind[idx], self.gap[idx], self.N[idx], self.T[idx],
                     self.mu[idx], self.e[idx], self.drift_n[idx], self.drift_t[idx], self.point[idx],
                     self.frame[idx], [self.key[i] for i in idx])


@njit(cache=True, inline="always")
def _cross(a, b, out):
    x = a[1] * b[2] - a[2] * b[1]
    y = a[2] * b[0] - a[0] * b[2]
    z = a[0] * b[1] - a[1] * b[0]
    out[0], out[1], out[2] = x, y, z


@njit(cache=True)
def _point_motion(R, p, V, A, b, y, vel, acc, w, al):
    """World velocity, classical acceleration of the point y (world) moving with body b, and
    the body's world angular velocity and acceleration (body-frame spatial V, A)."""
    if b == 0:
        for k in range(3):
            vel[k] = acc[k] = w[k] = al[k] = 0.0
        return
    t1 = np.empty(3)
    t2 = np.empty(3)
    r = np.empty(3)
    for k in range(3):
        r[k] = y[k] - p[b, k]
    # classical acceleration of the origin, body frame: a_lin + w x v
    _cross(V[b, 3:], V[b, :3], t1)
    for k in range(3):
        t1[k] += A[b, k]
    for k in range(3):
        w[k] = R[b, k, 0] * V[b, 3] + R[b, k, 1] * V[b, 4] + R[b, k, 2] * V[b, 5]
        al[k] = R[b, k, 0] * A[b, 3] + R[b, k, 1] * A[b, 4] + R[b, k, 2] * A[b, 5]
        vel[k] = R[b, k, 0] * V[b, 0] + R[b, k, 1] * V[b, 1] + R[b, k, 2] * V[b, 2]
        acc[k] = R[b, k, 0] * t1[0] + R[b, k, 1] * t1[1] + R[b, k, 2] * t1[2]
    _cross(w, r, t1)
    for k in range(3):
        vel[k] += t1[k]
    _cross(w, t1, t2)
    _cross(al, r, t1)
    for k in range(3):
        acc[k] += t1[k] + t2[k]


@njit(cache=True)
def _project_point_rows(J0, mask, b, y, dirs, out, sign):
    """out[k] += sign * dirs[k]^T J_y for the world point y on body b (J_y = J0_v - [y]x J0_w)."""
    if b == 0:
        return
    nv = J0.shape[1]
    nd = dirs.shape[0]
    for c in range(nv):
        if mask[b, c] == 0.0:
            continue
        wx, wy, wz = J0[3, c], J0[4, c], J0[5, c]
        vx = J0[0, c] - (y[1] * wz - y[2] * wy)
        vy = J0[1, c] - (y[2] * wx - y[0] * wz)
        vz = J0[2, c] - (y[0] * wy - y[1] * wx)
        for k in range(nd):
            out[k, c] += sign * (dirs[k, 0] * vx + dirs[k, 1] * vy + dirs[k, 2] * vz)


@njit(cache=True)
def _contact_rows(R, p, V, A, J0, mask, cbody, cpos, crad, pbody, pR, pp, pext, pair_c, pair_p, sel,
                 with_drift, gap, N, T, dn, dt, point, frame):
    """Gap, normal row, tangent rows and (with_drift) drifts of the contact pairs ``sel``."""
    x = np.empty(3)
    xc = np.empty(3)
    op = np.empty(3)
    d = np.empty(3)
    Rp = np.empty((3, 3))
    dirs = np.empty((1, 3))
    tdirs = np.empty((2, 3))
    vc = np.empty(3)
    ac = np.empty(3)
    vq = np.empty(3)
    aq = np.empty(3)
    wc = np.empty(3)
    alc = np.empty(3)
    wp = np.empty(3)
    alp = np.empty(3)
    t1 = np.empty(3)
    t2 = np.empty(3)
    for r in range(sel.shape[0]):
        u = sel[r]
        ci, pi = pair_c[u], pair_p[u]
        bc, bp = cbody[ci], pbody[pi]
        for k in range(3):
            x[k] = p[bc, k] + R[bc, k, 0] * cpos[ci, 0] + R[bc, k, 1] * cpos[ci, 1] + R[bc, k, 2] * cpos[ci, 2]
            op[k] = p[bp, k] + R[bp, k, 0] * pp[pi, 0] + R[bp, k, 1] * pp[pi, 1] + R[bp, k, 2] * pp[pi, 2]
            for j in range(3):
                Rp[k, j] = R[bp, k, 0] * pR[pi, 0, j] + R[bp, k, 1] * pR[pi, 1, j] + R[bp, k, 2] * pR[pi, 2, j]
        g = 0.0
        for k in range(3):
            d[k] = x[k] - op[k]
            g += Rp[k, 2] * d[k]
        if g < -pext[pi, 2]:                      # behind the box the plane is a face of
            g = np.inf
        g -= crad[ci]
        if pext[pi, 0] > 0.0:
            lx = Rp[0, 0] * d[0] + Rp[1, 0] * d[1] + Rp[2, 0] * d[2]
            ly = Rp[0, 1] * d[0] + Rp[1, 1] * d[1] + Rp[2, 1] * d[2]
            if abs(lx) > pext[pi, 0] or abs(ly) > pext[pi, 1]:
                g = np.inf
        gap[r] = g
        for k in range(3):
            xc[k] = x[k] - crad[ci] * Rp[k, 2]
            point[r, k] = xc[k]
            dirs[0, k] = Rp[k, 2]
            tdirs[0, k] = Rp[k, 0]
            tdirs[1, k] = Rp[k, 1]
            for j in range(3):
                frame[r, k, j] = Rp[k, j]
        for c in range(N.shape[1]):
            N[r, c] = 0.0
            T[r, 0, c] = 0.0
            T[r, 1, c] = 0.0
        Nr = N[r:r + 1]
        _project_point_rows(J0, mask, bc, x, dirs, Nr, 1.0)
        _project_point_rows(J0, mask, bp, x, dirs, Nr, -1.0)
        _project_point_rows(J0, mask, bc, xc, tdirs, T[r], 1.0)
        _project_point_rows(J0, mask, bp, xc, tdirs, T[r], -1.0)
        if with_drift:
            # phi = n . (x - o_p):  phi'' at q'' = 0 = n'' . d + 2 n' . d' + n . (a_x - a_o)
            _point_motion(R, p, V, A, bc, x, vc, ac, wc, alc)
            _point_motion(R, p, V, A, bp, op, vq, aq, wp, alp)
            _cross(wp, dirs[0], t1)                       # n'
            _cross(alp, dirs[0], t2)
            s = 0.0
            for k in range(3):
                s += dirs[0, k] * (ac[k] - aq[k]) + 2.0 * t1[k] * (vc[k] - vq[k])
            _cross(wp, t1, vc)                            # w x (w x n)
            for k in range(3):
                s += (t2[k] + vc[k]) * d[k]
            dn[r] = s
            # tangential: relative classical acceleration of the material points at xc
            _point_motion(R, p, V, A, bc, xc, vc, ac, wc, alc)
            _point_motion(R, p, V, A, bp, xc, vq, aq, wp, alp)
            for j in range(2):
                s = 0.0
                for k in range(3):
                    s += tdirs[j, k] * (ac[k] - aq[k])
                dt[r, j] = s


@njit(cache=True)
def _contact_gaps(R, p, cbody, cpos, crad, pbody, pR, pp, pext, pair_c, pair_p, out):
    """out[k] = the signed distance of contact pair k's sphere to its plane (+inf outside a
    bounded plane's extent or behind its depth); R, p the bodies' world rotations and positions;
    pext (planes, 3): half-sizes (0: unbounded) and depth (inf: a half-space)."""
    for k in range(pair_c.shape[0]):
        c, pl = pair_c[k], pair_p[k]
        bc, bp = cbody[c], pbody[pl]
        x = np.empty(3)
        o = np.empty(3)
        for i in range(3):
            x[i] = p[bc, i] + R[bc, i, 0] * cpos[c, 0] + R[bc, i, 1] * cpos[c, 1] + R[bc, i, 2] * cpos[c, 2]
            o[i] = p[bp, i] + R[bp, i, 0] * pp[pl, 0] + R[bp, i, 1] * pp[pl, 1] + R[bp, i, 2] * pp[pl, 2]
        g = -crad[c]
        lx = 0.0
        ly = 0.0
        for i in range(3):
            d = x[i] - o[i]
            # plane axes in the world: columns of R_b pR
            nz = R[bp, i, 0] * pR[pl, 0, 2] + R[bp, i, 1] * pR[pl, 1, 2] + R[bp, i, 2] * pR[pl, 2, 2]
            g += nz * d
            if pext[pl, 0] > 0.0:
                ax = R[bp, i, 0] * pR[pl, 0, 0] + R[bp, i, 1] * pR[pl, 1, 0] + R[bp, i, 2] * pR[pl, 2, 0]
                ay = R[bp, i, 0] * pR[pl, 0, 1] + R[bp, i, 1] * pR[pl, 1, 1] + R[bp, i, 2] * pR[pl, 2, 1]
                lx += ax * d
                ly += ay * d
        if pext[pl, 0] > 0.0 and (abs(lx) > pext[pl, 0] or abs(ly) > pext[pl, 1]):
            g = np.inf
        if g + crad[c] < -pext[pl, 2]:           # the centre is behind the box the plane is a face of
            g = np.inf
        out[k] = g


@njit(cache=True)
def _contact_points(R, p, cbody, cpos, crad, pbody, pR, pp, pair_c, pair_p, out):
    """out[k] = contact pair k's world contact point: its sphere's centre less its radius along
    the plane's normal (``_contact_rows``' point)."""
    for k in range(pair_c.shape[0]):
        c, pl = pair_c[k], pair_p[k]
        bc, bp = cbody[c], pbody[pl]
        for i in range(3):
            nz = R[bp, i, 0] * pR[pl, 0, 2] + R[bp, i, 1] * pR[pl, 1, 2] + R[bp, i, 2] * pR[pl, 2, 2]
            out[k, i] = p[bc, i] + R[bc, i, 0] * cpos[c, 0] + R[bc, i, 1] * cpos[c, 1] + R[bc, i, 2] * cpos[c, 2] \
                - crad[c] * nz


def point_plane_pairs(model: Model) -> list[tuple[int, int]]:
    """The model's contact pairs of points and planes, (contact index, plane index): every
    contact point (``add_contact``) with every plane (``add_plane``) on another body."""
    return [(ci, pi) for ci, c in enumerate(model.contacts) for pi, pl in enumerate(model.planes) if pl.body != c.body]


class UnitCatalog:
    """Every unilateral unit a model can have (fixed per model): contact pairs (contact point,
    plane on another body) and limits.  ``limits`` / ``contacts``: include them."""

    def __init__(self, model: Model, limits: bool = True, contacts: bool = True, data: Any = None) -> None:
        self.model = model
        self.data = data           # the prepared layer (linkdyn.dynamics.data.Data) or None: the public functions
        self.pairs = point_plane_pairs(model) if contacts else []     # (contact index, plane index)
        self.coord_limits = []     # (name, q index, v index, sign, bound)
        self._row_limits = {}      # index in coord_limits -> (a_q (nq,), a_v (nv,), o): a row limit
        self.balls = []            # (body index, joint)
        if limits:
            for i in range(1, model.nbody):
                if model.is_virtual[i] or (model._full is not None and model.jnt_nq[i] == 0):
                    continue        # a virtual link; a coupled joint without a coordinate (its limits: below)
                kind = int(model.jnt_type[i])
                qa, va = int(model.jnt_qadr[i]), int(model.jnt_vadr[i])
                jn = model._joint_names[i]
                for k in _COORD_KINDS.get(kind, ()):
                    lo, hi = float(model.lower[qa + k]), float(model.upper[qa + k])
                    suffix = "" if model.jnt_nq[i] == 1 else f"[{k}]"
                    if np.isfinite(lo):
                        self.coord_limits.append((f"{jn}{suffix}.lower", qa + k, va + k, 1.0, lo))
                    if np.isfinite(hi):
                        self.coord_limits.append((f"{jn}{suffix}.upper", qa + k, va + k, -1.0, hi))
                joint = model.joints[i]
                if kind in (J.SPHERICAL, J.SPHERICAL_ZYX) and (getattr(joint, "swing", None) is not None
                                                               or getattr(joint, "twist", None) is not None):
                    self.balls.append((i, joint))
            # a joint that depends on several dofs through a linear coupling (linkdyn.model.gears):
            # its limits are rows over those dofs, q_dep = o + a . q
            full = model.full_model
            for i in (model._coupling.multi if model._full is not None else ()):
                k = int(full.jnt_qadr[i])
                aq, av = model._coupling.row(k, int(full.jnt_vadr[i]))
                jn = full._joint_names[i]
                for s_, bound, tag in ((1.0, float(full.lower[k]), "lower"), (-1.0, float(full.upper[k]), "upper")):
                    if np.isfinite(bound):
                        self._row_limits[len(self.coord_limits)] = (aq, av, float(model._coupling.qoff[k]))
                        self.coord_limits.append((f"{jn}.{tag}", 0, 0, s_, bound))
        self._lim_q = np.array([c[1] for c in self.coord_limits], dtype=np.int64)
        self._lim_v = np.array([c[2] for c in self.coord_limits], dtype=np.int64)
        self._lim_s = np.array([c[3] for c in self.coord_limits])
        self._lim_b = np.array([c[4] for c in self.coord_limits])
        nv = model.nv
        # support masks: dof d moves body b iff the body of d is an ancestor of b (or b)
        db = np.asarray(model.dof_body)
        end = np.asarray(model.subtree_end)
        b = np.arange(model.nbody)
        self._mask = ((db[None, :] <= b[:, None]) & (b[:, None] < end[db][None, :])).astype(float) if nv else \
            np.zeros((model.nbody, 0))

        # contact geometry as flat arrays for the compiled row builder
        cs, ps = model.contacts, model.planes
        self._cbody = np.array([c.body for c in cs], dtype=np.int64)
        self._cpos = np.array([c.position for c in cs], dtype=float).reshape(-1, 3)
        self._crad = np.array([c.radius for c in cs], dtype=float)
        self._pbody = np.array([pl.body for pl in ps], dtype=np.int64)
        self._pR = np.array([pl.R for pl in ps], dtype=float).reshape(-1, 3, 3)
        self._pp = np.array([pl.p for pl in ps], dtype=float).reshape(-1, 3)
        # per plane: half-sizes (0, 0: unbounded) and depth (inf: a half-space)
        self._pext = np.array([(pl.extent if pl.extent is not None else (0.0, 0.0))
                               + (np.inf if getattr(pl, "depth", None) is None else pl.depth,) for pl in ps],
                              dtype=float).reshape(-1, 3)
        self._pair_c = np.array([c for c, _ in self.pairs], dtype=np.int64)
        self._pair_p = np.array([p_ for _, p_ in self.pairs], dtype=np.int64)
        pm, cm = [], []
        for ci, pi in self.pairs:
            c, pl = cs[ci], ps[pi]
            cm.append(c.friction if pl.friction is None else float(np.sqrt(c.friction * pl.friction)))
            pm.append(c.restitution if pl.restitution is None else max(c.restitution, pl.restitution))
        self._pair_mu, self._pair_e = np.array(cm, dtype=float), np.array(pm, dtype=float)
        self._pair_names = [f"{cs[ci].name}/{ps[pi].name}" for ci, pi in self.pairs]
        self._ball_nk = [len(self._ball_keys(j)) for _, j in self.balls]
        # each ball unit's joint (body index) and first velocity, in catalog order
        self._ball_body = np.repeat(np.array([i for i, _ in self.balls], dtype=np.int64), self._ball_nk)
        self._ball_va = np.repeat(np.array([model.jnt_vadr[i] for i, _ in self.balls], dtype=np.int64),
                                  self._ball_nk)
        self._ball_j = np.concatenate([np.arange(k) for k in self._ball_nk]).astype(np.int64) if self.balls else \
            np.zeros(0, dtype=np.int64)
        self.size = len(self.pairs) + len(self.coord_limits) + sum(self._ball_nk)
        # per unit, catalog order: its name ("l_sole_contact0/ground", "r_knee_joint.upper") and key
        self.names = list(self._pair_names) + [c[0] for c in self.coord_limits]
        self.keys = [("c", ci, pi) for ci, pi in self.pairs] + [("l", k) for k in range(len(self.coord_limits))]
        for (i, joint), nk in zip(self.balls, self._ball_nk):
            for j, key in enumerate(self._ball_keys(joint)):
                self.names.append(f"{model._joint_names[i]}.{key}")
                self.keys.append(("b", i, j))
        ncp = len(self.pairs)
        #: per unit, catalog order: a limit (True) or a contact; the friction coefficient (0 for limits)
        self.is_limit = np.arange(self.size) >= ncp
        self.unit_mu = np.concatenate([self._pair_mu, np.zeros(self.size - ncp)])

    @property
    def empty(self) -> bool:
        return self.size == 0

    def gaps(self, q: NDArray[np.float64], kin: Kinematics | None = None) -> NDArray[np.float64]:
        """The gaps of every unit (in catalog order: contact pairs, coordinate limits, ball
        limits), cheap: no Jacobians.  Contacts outside a bounded plane's extent get +inf.
        The last answer is kept: a step asks for the gaps at the same q several times."""
        memo = self.__dict__.get("_gap_memo")
        if memo is not None and kin is None and (memo[0] is q or (memo[0].shape == np.shape(q)
                                                                and bool((memo[0] == q).all()))):
            return memo[1].copy()
        out = self._gaps(q, kin)
        if kin is None:
            self._gap_memo = (q if isinstance(q, np.ndarray) and not q.flags.writeable else np.array(q, dtype=float),
                              out.copy())
        return out

    def _gaps(self, q, kin):
        m = self.model
        out = np.empty(self.size)
        ncp, ncl = len(self.pairs), len(self.coord_limits)
        if ncp:
            if kin is not None:
                R, p = kin.R, kin.p
            elif self.data is not None:
                R, p = self.data.poses(q)
            else:
                kin = forward_kinematics(m, q)
                R, p = kin.R, kin.p
            _contact_gaps(R, p, self._cbody, self._cpos, self._crad, self._pbody, self._pR, self._pp,
                         self._pext, self._pair_c, self._pair_p, out)
        if ncl:
            out[ncp:ncp + ncl] = self._lim_s * (q[self._lim_q] - self._lim_b)
            for r, (aq, _, o) in self._row_limits.items():
                out[ncp + r] = self._lim_s[r] * (o + aq @ q - self._lim_b[r])
        if self.balls:
            from .swing_twist import ball_limit_gaps_model
            out[ncp + ncl:] = ball_limit_gaps_model(m, q)
        return out

    def points(self, q: NDArray[np.float64]) -> NDArray[np.float64]:
        """(size, 3) every unit's world contact point at q (catalog order; zero for limits), as
        :meth:`units` gives them, without the rows."""
        out = np.zeros((self.size, 3))
        ncp = len(self.pairs)
        if ncp:
            if self.data is not None:
                R, p = self.data.poses(q)
            else:
                kin = forward_kinematics(self.model, q)
                R, p = kin.R, kin.p
            _contact_points(R, p, self._cbody, self._cpos, self._crad, self._pbody, self._pR, self._pp,
                            self._pair_c, self._pair_p, out[:ncp])
        return out

    def units(self, q: NDArray[np.float64], v: NDArray[np.float64] | None = None, select: ArrayLike | None = None, with_drift: bool = False) -> Units:
        """The :class:`Units` at (q, v): all of them, or those whose catalog index is in
        ``select`` (e.g. the ones with a small gap).  ``with_drift`` computes J' v (needs v)."""
        m = self.model
        nv = m.nv
        ncp, ncl = len(self.pairs), len(self.coord_limits)
        sel = np.arange(self.size) if select is None else np.asarray(select, dtype=np.int64)
        k = len(sel)
        kind = np.full(k, LIMIT, dtype=np.int64)
        gap, mu, e = np.zeros(k), np.zeros(k), np.zeros(k)
        N, T = np.zeros((k, nv)), np.zeros((k, 2, nv))
        dn, dt = np.zeros(k), np.zeros((k, 2))
        point, frame = np.zeros((k, 3)), np.tile(np.eye(3), (k, 1, 1))
        csel = np.flatnonzero(sel < ncp)
        if len(csel):
            if with_drift:
                kin = forward_kinematics(m, q, v, np.zeros(nv))
                V, A = kin.v, kin.a
            else:
                kin = forward_kinematics(m, q)
                V = A = np.zeros((m.nbody, 6))
            J0 = joint_jacobians(m, q)
            cu = sel[csel]
            cg, cN, cT = np.empty(len(cu)), np.empty((len(cu), nv)), np.empty((len(cu), 2, nv))
            cdn, cdt, cpt, cfr = np.zeros(len(cu)), np.zeros((len(cu), 2)), np.empty((len(cu), 3)), \
                np.empty((len(cu), 3, 3))
            _contact_rows(kin.R, kin.p, V, A, J0, self._mask, self._cbody, self._cpos, self._crad, self._pbody,
                         self._pR, self._pp, self._pext, self._pair_c, self._pair_p, cu, bool(with_drift),
                         cg, cN, cT, cdn, cdt, cpt, cfr)
            gap[csel], N[csel], T[csel], dn[csel], dt[csel], point[csel], frame[csel] = cg, cN, cT, cdn, cdt, cpt, cfr
            kind[csel] = CONTACT
            mu[csel], e[csel] = self._pair_mu[cu], self._pair_e[cu]
        lsel = np.flatnonzero((sel >= ncp) & (sel < ncp + ncl))
        for r in lsel:
            nm, qi, vi, s_, bound = self.coord_limits[sel[r] - ncp]
            row = self._row_limits.get(sel[r] - ncp)
            if row is None:
                gap[r] = s_ * (q[qi] - bound)
                N[r, vi] = s_
            else:                   # a coupled joint's limit: q_dep = o + a_q . q, q'_dep = a_v . v
                gap[r] = s_ * (row[2] + row[0] @ q - bound)
                N[r] = s_ * row[1]
        bsel = np.flatnonzero(sel >= ncp + ncl)
        if len(bsel):
            from .swing_twist import ball_limits_model
            bg, brows, bdrift = ball_limits_model(m, q, v if with_drift else None)
            for r in bsel:
                b = sel[r] - ncp - ncl
                va = int(self._ball_va[b])
                gap[r] = bg[b]
                N[r, va:va + 3] = brows[b]
                if with_drift:
                    dn[r] = bdrift[b]
        names = [self.names[u] for u in sel]
        keys = [self.keys[u] for u in sel]
        return Units(names, kind, gap, N, T, mu, e, dn, dt, point, frame, keys)

    @staticmethod
    def _ball_keys(joint):
        from .swing_twist import ball_limit_names
        return ball_limit_names(joint)
