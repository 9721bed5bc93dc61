"""The rows of the contacts between geoms: one unilateral unit per contact of the collider.

Given the contacts that :func:`linkdyn.contact.collide` (or :class:`Collider`) found at q, each
contact k (geom 1 on body b1, geom 2 on body b2, world point x midway between the surfaces,
unit normal n from geom 1 to geom 2, signed distance ``dist``) becomes a unit of
:class:`linkdyn.contact.rows.Units`, the structure of the point-plane contacts and limits:

* ``gap`` = dist;
* the frame [t1, t2, n] (columns), right-handed and orthonormal: when geom 1 is a plane (its
  normal is n), t1, t2 are the plane's own x and y axes, as ``rows.py`` takes a plane's axes
  (body-fixed, so continuous as the plane moves); otherwise the basis of Duff, Burgess,
  Christensen, Hery, Kensler, Liani and Villemin 2017 ("Building an orthonormal basis,
  revisited", JCGT 6(1)), the rotation of the world frame that takes +-z to n by the shortest
  way: continuous in n on each half-sphere n_z > 0 and n_z < 0, exact at n = +-z (the ground's
  normal gives t1 = x, t2 = +-y);
* the normal row N = n^T (J_2(x) - J_1(x)) with J_b(x) the (3, nv) Jacobian of the material
  point of body b at x (zero for the world), so N v = n . (v_2(x) - v_1(x)) = d dist / dt: for
  two convex surfaces at their closest (or deepest) points the rate of the distance is the
  relative normal velocity of the material points there, at any point on the line of the normal
  (the witness points x -+ dist/2 n differ from x along n, where a rotation adds nothing);
* the tangent rows T_j = t_j^T (J_2(x) - J_1(x)): the sliding velocity of the material points at x;
* with ``with_drift``, ``drift_n`` = d/dt (N v) at q'' = 0, the second derivative of the gap along
  the motion (the J' v of the normal row, as rows.py's for a sphere on a plane), and ``drift_t``
  the relative classical acceleration of the two material points at x at q'' = 0 along t1, t2;
* ``mu`` and ``e``: the pair's friction and restitution (the collider's: the larger of the geoms').

The rows are assembled on the uncoupled tree, one dof column at a time along the two bodies'
paths to the root, stopping at their nearest common ancestor (the dofs there move both points
alike and add nothing), and each column c of the full tree is added into the reduced column of a
geared model with its ratio (J G, ``linkdyn.model.gears``).

The drift needs the surfaces' curvature.  Each side of a contact is read as one *feature* of its
geom where its witness point lies: a point core with a radius (a sphere's centre, a capsule's
segment end or the segment point of a parallel capsule, a box's vertex), a line core with a
radius (the interior of a capsule's segment, a box's edge, a cylinder's side) or a plane (a
plane, a box's face, a cylinder's cap); the gap is then the distance between the two cores less
the radii, and its second derivative has a closed form (point-point, point-line, line-line as
skew lines, point-plane: the contact kinematics of Montana 1988, "The kinematics of contact and
grasp", written for these cores).  A side that is none of these (an ellipsoid, a cylinder's rim,
a point that the box-box or capsule-box manifold clipped to a face's edge, two parallel faces)
is taken at first order: the tangent plane of one side, fixed to its body, against the material
point of the other; such drifts neglect the rolling of the contact point over a curved surface.
For clipped manifold points the rows themselves are those of the material point of the incident
geom (as every engine treats a manifold), not the rate of that point's ``dist``, which also
slides along the clipped edge.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from .. import _api
from .._kernels.layout import _view, data_size, model_sizes, unpack_data, unpack_model
from .._kernels.passes import ACC, OK, POS, check_inputs, check_q, kinematics_pass
from .._kernels.spatial_nb import motion_act
from ..model.geometry import BOX, CAPSULE, CYLINDER, PLANE, SPHERE
from .collision import Contacts, collide, collider
from .collision._vec import add, axpy, col, cross, dot, mtv, mv, norm, scl, sub, vec
from .rows import CONTACT, Units

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model

__all__ = ["geom_units", "GeomRows", "GeomCatalog", "geom_rows_kernel"]

#: features of a side of a contact: a point core, a line core (each with a radius), a plane, unknown
PT, LN, PL, UNK = 0, 1, 2, 3
_TOL = 1e-9          # relative tolerance of the feature tests (the collider's output is exact to ~1e-15)
_ZERO3 = (0.0, 0.0, 0.0)


# --- the contact frame --------------------------------------------------------------------------
@njit(cache=True)
def tangents(n):
    """t1, t2 with [t1, t2, n] a right-handed orthonormal frame (Duff et al. 2017, listing 2)."""
    s = 1.0 if n[2] >= 0.0 else -1.0
    a = -1.0 / (s + n[2])
    b = n[0] * n[1] * a
    return (1.0 + s * n[0] * n[0] * a, s * b, -s * n[0]), (b, s + n[1] * n[1] * a, -n[1])


# --- motion of material points and body-fixed directions -----------------------------------------
@njit(cache=True)
def _body_motion(oR, op, V, A, b):
    """Body b's world angular velocity w and acceleration al, its origin's world velocity and
    classical acceleration (body-frame spatial V, A: [v; w], the origin's classical acceleration
    is a_lin + w x v in the body frame)."""
    R = oR[b]
    vb, wb = (V[b, 0], V[b, 1], V[b, 2]), (V[b, 3], V[b, 4], V[b, 5])
    ab = add((A[b, 0], A[b, 1], A[b, 2]), cross(wb, vb))
    return mv(R, wb), mv(R, (A[b, 3], A[b, 4], A[b, 5])), mv(R, vb), mv(R, ab)


@njit(cache=True)
def _point(oR, op, V, A, b, y):
    """World velocity and classical acceleration (at q'' = 0) of body b's material point at y."""
    if b == 0:
        return _ZERO3, _ZERO3
    w, al, vo, ao = _body_motion(oR, op, V, A, b)
    r = sub(y, (op[b, 0], op[b, 1], op[b, 2]))
    wr = cross(w, r)
    return add(vo, wr), add(add(ao, cross(al, r)), cross(w, wr))


@njit(cache=True)
def _direction(oR, op, V, A, b, u):
    """First and second time derivatives of a direction u fixed to body b."""
    if b == 0:
        return _ZERO3, _ZERO3
    w, al, _, _ = _body_motion(oR, op, V, A, b)
    ud = cross(w, u)
    return ud, add(cross(al, u), cross(w, ud))


@njit(cache=True)
def _relative(oR, op, V, A, b1, c1, b2, c2):
    """d = c2 - c1 and its first two derivatives for material points c1 of b1, c2 of b2."""
    v1, a1 = _point(oR, op, V, A, b1, c1)
    v2, a2 = _point(oR, op, V, A, b2, c2)
    return sub(c2, c1), sub(v2, v1), sub(a2, a1)


# --- second derivatives of the distance between cores (Montana 1988) ------------------------------
@njit(cache=True)
def _norm_dd(w, wd, wdd):
    """(|w|)'' from w, w', w'': n . w'' + (|w'|^2 - (n . w')^2) / |w|, n = w / |w|."""
    L = norm(w)
    if L < 1e-12:
        return 0.0
    n = scl(w, 1.0 / L)
    s = dot(n, wd)
    return dot(n, wdd) + (dot(wd, wd) - s * s) / L


@njit(cache=True)
def _dd_point_point(oR, op, V, A, b1, c1, b2, c2):
    d, dd, ddd = _relative(oR, op, V, A, b1, c1, b2, c2)
    return _norm_dd(d, dd, ddd)


@njit(cache=True)
def _dd_point_plane(oR, op, V, A, bp, c, bl, o, m):
    """phi = m . (c - o): c a material point of bp, the plane (o, m) fixed to bl."""
    d, dd, ddd = _relative(oR, op, V, A, bl, o, bp, c)
    md, mdd = _direction(oR, op, V, A, bl, m)
    return dot(mdd, d) + 2.0 * dot(md, dd) + dot(m, ddd)


@njit(cache=True)
def _dd_point_line(oR, op, V, A, bp, c, bl, o, a):
    """phi = |w|, w = d - (a . d) a, d = c - o: c a material point of bp, the line (o, a) fixed to bl."""
    d, dd, ddd = _relative(oR, op, V, A, bl, o, bp, c)
    ad, add_ = _direction(oR, op, V, A, bl, a)
    s = dot(a, d)
    sd = dot(ad, d) + dot(a, dd)
    sdd = dot(add_, d) + 2.0 * dot(ad, dd) + dot(a, ddd)
    w = axpy(d, -s, a)
    wd = sub(sub(dd, scl(a, sd)), scl(ad, s))
    wdd = sub(sub(sub(ddd, scl(a, sdd)), scl(ad, 2.0 * sd)), scl(add_, s))
    return _norm_dd(w, wd, wdd)


@njit(cache=True)
def _dd_line_line(oR, op, V, A, b1, c1, a1, b2, c2, a2, n):
    """phi = sigma e . d / |e|, e = a1 x a2, d = c2 - c1 (skew lines), sigma = sign(e . n)."""
    d, dd, ddd = _relative(oR, op, V, A, b1, c1, b2, c2)
    a1d, a1dd = _direction(oR, op, V, A, b1, a1)
    a2d, a2dd = _direction(oR, op, V, A, b2, a2)
    e = cross(a1, a2)
    ed = add(cross(a1d, a2), cross(a1, a2d))
    edd = add(add(cross(a1dd, a2), scl(cross(a1d, a2d), 2.0)), cross(a1, a2dd))
    f, fd, fdd = dot(e, d), dot(ed, d) + dot(e, dd), dot(edd, d) + 2.0 * dot(ed, dd) + dot(e, ddd)
    s = norm(e)
    sd = dot(e, ed) / s
    sdd = (dot(ed, ed) + dot(e, edd) - sd * sd) / s
    g = fdd / s - 2.0 * fd * sd / (s * s) + f * (2.0 * sd * sd / (s * s * s) - sdd / (s * s))
    return g if dot(e, n) >= 0.0 else -g


# --- the feature of each side ---------------------------------------------------------------------
@njit(cache=True)
def feature(t, gp, gR, gs, y, m):
    """The feature of a geom (type t, world position gp, axes gR, size gs) at its witness point
    y with outward normal m: (kind, point, direction, radius); a point core's point, a line's
    point and axis, a plane's point and outward normal."""
    if t == PLANE:
        return PL, vec(gp), col(gR, 2), 0.0
    if t == SPHERE:
        return PT, vec(gp), m, gs[0]
    if t == CAPSULE:
        z, r = col(gR, 2), gs[0]
        c = axpy(y, -r, m)                              # the centre of the touching sphere
        if abs(dot(z, sub(c, gp))) < gs[1] * (1.0 - _TOL) and abs(dot(z, m)) < _TOL:
            return LN, vec(gp), z, r                    # the interior of the segment
        return PT, c, m, r                              # an end (or a segment along m's plane)
    if t == BOX:
        ml = mtv(gR, m)
        for j in range(3):
            if abs(ml[j]) > 1.0 - _TOL:                 # a face
                return PL, y, scl(col(gR, j), 1.0 if ml[j] > 0.0 else -1.0), 0.0
        yl = mtv(gR, sub(y, gp))
        k, free = 0, 0
        for j in range(3):
            if abs(yl[j]) >= gs[j] * (1.0 - _TOL):
                k += 1
            else:
                free = j
        if k == 3:
            return PT, y, m, 0.0                        # a vertex
        if k == 2 and abs(ml[free]) < _TOL:
            return LN, y, col(gR, free), 0.0            # an edge
        return UNK, y, m, 0.0
    if t == CYLINDER:
        z = col(gR, 2)
        mz = dot(z, m)
        if abs(mz) > 1.0 - _TOL:
            return PL, y, scl(z, 1.0 if mz > 0.0 else -1.0), 0.0     # a cap
        if abs(mz) < _TOL and abs(dot(z, sub(y, gp))) < gs[1] * (1.0 - _TOL):
            return LN, vec(gp), z, gs[0]                # the side
    return UNK, y, m, 0.0


@njit(cache=True)
def drift_normal(oR, op, V, A, t1, p1, R1, s1, b1, t2, p2, R2, s2, b2, x, n, dist):
    """d^2 dist / dt^2 at q'' = 0 of one contact (module docstring: features and cores)."""
    y1, y2 = axpy(x, -0.5 * dist, n), axpy(x, 0.5 * dist, n)
    m2 = scl(n, -1.0)
    k1, c1, a1, r1 = feature(t1, p1, R1, s1, y1, n)
    k2, c2, a2, r2 = feature(t2, p2, R2, s2, y2, m2)
    if k1 == UNK:                                       # first order: its tangent plane
        k1, c1, a1 = PL, y1, n
    if k2 == UNK:
        k2, c2, a2 = PL, y2, m2
    if k1 == PL and k2 == PL:                           # parallel faces: a point of 2 on the plane of 1
        k2, c2 = PT, y2
    if k2 == PL and k1 == LN:
        k1, c1 = PT, axpy(y1, -r1, n)
    if k1 == PL and k2 == LN:
        k2, c2 = PT, axpy(y2, -r2, m2)
    if k1 == LN and k2 == LN and norm(cross(a1, a2)) < 1e-6:     # (nearly) parallel lines
        k2, c2 = PT, axpy(y2, -r2, m2)
    if k1 == PT and k2 == PT:
        return _dd_point_point(oR, op, V, A, b1, c1, b2, c2)
    if k1 == PT and k2 == PL:
        return _dd_point_plane(oR, op, V, A, b1, c1, b2, c2, a2)
    if k1 == PL and k2 == PT:
        return _dd_point_plane(oR, op, V, A, b2, c2, b1, c1, a1)
    if k1 == PT and k2 == LN:
        return _dd_point_line(oR, op, V, A, b1, c1, b2, c2, a2)
    if k1 == LN and k2 == PT:
        return _dd_point_line(oR, op, V, A, b2, c2, b1, c1, a1)
    return _dd_line_line(oR, op, V, A, b1, c1, a1, b2, c2, a2, n)


# --- the rows -------------------------------------------------------------------------------------
@njit(cache=True)
def _add_columns(J0, vadr, jnv, vsrc, vscale, b, sign, x, n, t1, t2, N, T, r):
    """Add sign * [n; t1; t2]^T J_b(x) for the dofs of body b's own joint (reduced columns)."""
    for d in range(vadr[b], vadr[b] + jnv[b]):
        # the point velocity of dof d's world-origin twist (v_o, w): v_o + w x x
        w = (J0[d, 3], J0[d, 4], J0[d, 5])
        u = add((J0[d, 0], J0[d, 1], J0[d, 2]), cross(w, x))
        c, s = vsrc[d], sign * vscale[d]
        N[r, c] += s * dot(n, u)
        T[r, 0, c] += s * dot(t1, u)
        T[r, 1, c] += s * dot(t2, u)


@njit(cache=True)
def geom_rows_kernel(mi, mf, ws, qsrc, qscale, qoff, vsrc, vscale, q, v, with_drift, gi, gf, con_i, con_f, ncon,
                     J0, qf, vf, af, gap, N, T, dn, dt, point, frame):
    """The rows of the first ``ncon`` contacts of ``con_i`` (geom1, geom2) and ``con_f`` (dist,
    pos, normal, ...) (the collider's tables) at the reduced state (q, v) of a model whose full
    tree is (mi, mf) with workspace ws: q_full = qscale q[qsrc] + qoff, v_full = vscale v[vsrc]
    (the identity without gears).  Writes gap (ncon,), N (ncon, nv), T (ncon, 2, nv), with
    ``with_drift`` dn (ncon,) and dt (ncon, 2), point (ncon, 3), frame (ncon, 3, 3); scratch:
    J0 (nv_full, 6), qf, vf, af.  Returns OK or the status of a bad q or v (passes.check_inputs)."""
    nb, nq, nvf = model_sizes(mi)
    for k in range(nq):
        qf[k] = qscale[k] * q[qsrc[k]] + qoff[k]
    if with_drift:
        for k in range(nvf):
            vf[k] = vscale[k] * v[vsrc[k]]
            af[k] = 0.0
        st = check_inputs(mi, qf, vf, af, True)
    else:
        st = check_q(mi, qf)
    if st != OK:
        return st
    parent, _, _, vadr, _, jnv, _, _, _, _, _, _, _ = unpack_model(mi, mf)
    kinematics_pass(mi, mf, ws, qf, vf if with_drift else qf[:0], af if with_drift else qf[:0],
                    np.int64(ACC if with_drift else POS), np.bool_(True), np.bool_(False))
    oR, op, _, _, V, A, _, S, _, _, _, _, _, _, _, _, _, W3 = unpack_data(ws, nb, nvf)
    R1, R2 = W3[0], W3[1]
    for j in range(1, nb):                  # every dof's twist in the world, at the world origin
        for d in range(vadr[j], vadr[j] + jnv[j]):
            motion_act(oR[j], op[j], S[d], J0[d])
    ng = gi.shape[0]
    gsize, gpos, gR = _view(gf, 0, (ng, 3)), _view(gf, 3 * ng, (ng, 3)), _view(gf, 6 * ng, (ng, 3, 3))
    nv = N.shape[1]
    for r in range(ncon):
        g1, g2 = con_i[r, 0], con_i[r, 1]
        b1, b2 = gi[g1, 1], gi[g2, 1]
        dist = con_f[r, 0]
        x, n = (con_f[r, 1], con_f[r, 2], con_f[r, 3]), (con_f[r, 4], con_f[r, 5], con_f[r, 6])
        # world poses of the two geoms: oMg = oMb bMg
        p1 = add(vec(op[b1]), mv(oR[b1], vec(gpos[g1])))
        p2 = add(vec(op[b2]), mv(oR[b2], vec(gpos[g2])))
        for a in range(3):
            for c in range(3):
                R1[a, c] = oR[b1, a, 0] * gR[g1, 0, c] + oR[b1, a, 1] * gR[g1, 1, c] + oR[b1, a, 2] * gR[g1, 2, c]
                R2[a, c] = oR[b2, a, 0] * gR[g2, 0, c] + oR[b2, a, 1] * gR[g2, 1, c] + oR[b2, a, 2] * gR[g2, 2, c]
        if gi[g1, 0] == PLANE:
            t1, t2 = col(R1, 0), col(R1, 1)
        else:
            t1, t2 = tangents(n)
        gap[r] = dist
        for k in range(3):
            point[r, k] = x[k]
            frame[r, k, 0], frame[r, k, 1], frame[r, k, 2] = t1[k], t2[k], n[k]
        for c in range(nv):
            N[r, c] = 0.0
            T[r, 0, c] = 0.0
            T[r, 1, c] = 0.0
        # the two paths to the root, up to the nearest common ancestor (parent[i] < i)
        i, j = b2, b1
        while i != j:
            if i > j:
                _add_columns(J0, vadr, jnv, vsrc, vscale, i, 1.0, x, n, t1, t2, N, T, r)
                i = parent[i]
            else:
                _add_columns(J0, vadr, jnv, vsrc, vscale, j, -1.0, x, n, t1, t2, N, T, r)
                j = parent[j]
        if with_drift:
            dn[r] = drift_normal(oR, op, V, A, gi[g1, 0], p1, R1, gsize[g1], b1, gi[g2, 0], p2, R2, gsize[g2], b2,
                                 x, n, dist)
            _, a1 = _point(oR, op, V, A, b1, x)
            _, a2 = _point(oR, op, V, A, b2, x)
            da = sub(a2, a1)
            dt[r, 0], dt[r, 1] = dot(t1, da), dot(t2, da)
        else:
            dn[r] = 0.0
            dt[r, 0] = dt[r, 1] = 0.0
    return OK


class GeomRows:
    """The buffers of the geom-contact rows of a model, made once (``prepare`` keeps one per
    model).  ``run(q, v, con_i, con_f, n, with_drift)`` fills the first n rows of ``gap``, ``N``,
    ``T``, ``drift_n``, ``drift_t``, ``point``, ``frame`` for the contacts of the collider's tables
    (``Collider.con_i``, ``con_f``: by default the model's collider's, as ``Collider.run(q_full)``
    left them) at the reduced state (q, v), without validating its input (it returns the kernel's
    status: 0 when q, v are fine); ``v`` is read only ``with_drift``.  The buffers are
    overwritten by the next run."""

    def __init__(self, model: Model) -> None:
        full = model.full_model
        self.model, self.collider = model, collider(model)
        cap = max(self.collider.maxcon, 1)
        nv, nvf = model.nv, full.nv
        if model._full is None:
            self.qsrc, self.qscale, self.qoff = np.arange(full.nq), np.ones(full.nq), np.zeros(full.nq)
            self.vsrc, self.vscale = np.arange(nvf), np.ones(nvf)
        else:
            c = model._coupling
            self.qsrc, self.qscale, self.qoff = (np.ascontiguousarray(x) for x in (c.qsrc, c.qscale, c.qoff))
            self.vsrc, self.vscale = np.ascontiguousarray(c.vsrc), np.ascontiguousarray(c.vscale)
        self.qsrc, self.vsrc = self.qsrc.astype(np.int64), self.vsrc.astype(np.int64)
        self.ws = np.zeros(data_size(full.nbody, nvf))
        self.J0, self.qf, self.vf, self.af = np.zeros((nvf, 6)), np.zeros(full.nq), np.zeros(nvf), np.zeros(nvf)
        self.gap, self.N, self.T = np.zeros(cap), np.zeros((cap, nv)), np.zeros((cap, 2, nv))
        self.drift_n, self.drift_t = np.zeros(cap), np.zeros((cap, 2))
        self.point, self.frame = np.zeros((cap, 3)), np.zeros((cap, 3, 3))
        self._zero_v = np.zeros(nv)
        self._full = full

    def run(self, q: NDArray[np.float64], v: NDArray[np.float64] | None = None, con_i: NDArray[np.int64] | None = None,
            con_f: NDArray[np.float64] | None = None, n: int = 0, with_drift: bool = False) -> int:
        c = self.collider
        ci = c.con_i if con_i is None else con_i
        cf = c.con_f if con_f is None else con_f
        f = self._full
        return geom_rows_kernel(f._mi, f._mf, self.ws, self.qsrc, self.qscale, self.qoff, self.vsrc, self.vscale, q,
                                self._zero_v if v is None else v, bool(with_drift), c.gi, c.gf, ci, cf, int(n),
                                self.J0, self.qf, self.vf, self.af, self.gap, self.N, self.T, self.drift_n,
                                self.drift_t, self.point, self.frame)


def geom_rows(model: Model) -> GeomRows:
    """The model's :class:`GeomRows` (made on first use, not pickled)."""
    if model._geom_rows is None:
        model._geom_rows = GeomRows(model)
    return model._geom_rows


def geom_units(model: Model, q: ArrayLike, v: ArrayLike | None = None, contacts: Contacts | None = None,
               margin: float = 0.0, with_drift: bool = False) -> Units:
    """The unilateral units (:class:`linkdyn.contact.rows.Units`, kind CONTACT) of the contacts
    between the model's geoms at configuration ``q`` (one state): of ``contacts`` (a
    :class:`Contacts` found at this q), or of ``collide(model, q, margin)``.  Unit k is contact k:
    its name ``"geom1/geom2"``, key ``("g", geom1, geom2, j)`` (the j-th contact of that pair),
    gap, normal row N (nv,), tangent rows T (2, nv), point, frame [t1, t2, n], mu, e, and with
    ``with_drift`` (needs ``v``) the drifts J' v.  Rows are in the model's coordinates (J G for a
    geared model).  See :mod:`linkdyn.contact.geom_rows` for the definitions."""
    if with_drift and v is None:
        raise ValueError("v: with_drift=True needs the velocity v")
    s = _api.as_states(model, q=q) if v is None else _api.as_states(model, q=q, v=v)
    if s.batch is not None:
        raise ValueError(f"q: geom_units takes one state, q of shape ({model.nq},) and v of shape ({model.nv},); "
                         "call it once per state")
    if contacts is None:
        contacts = collide(model, s.q, margin)
    elif not isinstance(contacts, Contacts):
        raise TypeError(f"contacts: expected a linkdyn.contact.Contacts (from collide), got {type(contacts).__name__}")
    elif contacts.model is not model.full_model:
        raise ValueError("contacts: they were found on another model")
    k = len(contacts)
    gr = geom_rows(model)
    con_i = np.ascontiguousarray(np.column_stack([contacts.geom1, contacts.geom2]).reshape(k, 2), dtype=np.int64)
    con_f = np.ascontiguousarray(np.column_stack([contacts.dist, contacts.pos, contacts.normal, contacts.friction,
                                                  contacts.restitution]).reshape(k, 9), dtype=float)
    if k > gr.gap.shape[0]:                     # more contacts than the collider makes: not from it
        raise ValueError(f"contacts: {k} contacts, more than the model's collider can find ({gr.gap.shape[0]})")
    vv = s.v if with_drift else None
    st = gr.run(s.q, vv, con_i, con_f, k, with_drift)
    if st != OK:
        _api.raise_for_status(model, st, **({"q": s.q} if vv is None else {"q": s.q, "v": vv}))
    names = model.full_model.geom_names
    keys, seen = [], {}
    for a, b in zip(contacts.geom1.tolist(), contacts.geom2.tolist()):
        j = seen.get((a, b), 0)
        seen[(a, b)] = j + 1
        keys.append(("g", a, b, j))
    return Units([f"{names[a]}/{names[b]}" for a, b in zip(contacts.geom1, contacts.geom2)],
                 np.full(k, CONTACT, dtype=np.int64), gr.gap[:k].copy(), gr.N[:k].copy(), gr.T[:k].copy(),
                 contacts.friction.copy(), contacts.restitution.copy(), gr.drift_n[:k].copy(),
                 gr.drift_t[:k].copy(), gr.point[:k].copy(), gr.frame[:k].copy(), keys)


class GeomCatalog:
    """The geom contacts of a model for a stepping scheme: detection and rows through the
    model's :class:`Collider` and :class:`GeomRows` without validating their input (the prepared
    layer: ``data`` is the model's :class:`linkdyn.dynamics.data.Data`), and what a scheme needs
    to follow contacts from one configuration to the next, whose number and order change:

    * ``collide(q, margin)``: the contacts at q (reduced coordinates) with ``dist <= margin``,
      as (con_i, con_f) copies of the collider's tables;
    * ``units(q, v, con_i, con_f)``: their :class:`Units` (names ``"geom1/geom2"``, keys
      ``("g", g1, g2, j)``), with the drifts at v when v is given;
    * ``displacement(q0, q1)``: a bound on how far any point of any geom moves from q0 to q1
      (|dp_b| + |dR_b|_F rho_b per body, rho_b the radius about the body's origin of a ball
      holding its geoms): two geoms' distance changes by at most the sum of their points'
      displacements, so a contact within ``m`` at q1 is within ``m + 2 * displacement`` at q0;
    * ``match(con_a, con_b, radius)``: for each contact of a, the contact of b of the same pair
      whose point is nearest, within ``radius`` (-1: none).  Contacts are matched by where they
      are, not by their rank j in the pair's list: a box's vertex that enters the margin shifts
      the ranks of the others.

    A plane fixed to a moving body counts its points near the body's origin only (rho = 0): the
    bound does not hold for the far parts of a rotating plane."""

    def __init__(self, model: Model, data) -> None:
        self.model, self.data = model, data
        self.collider, self.rows = collider(model), geom_rows(model)
        full = model.full_model
        self.names = list(full.geom_names)
        self.geared = model._full is not None
        t, s = np.asarray(full.geom_type), np.asarray(full.geom_size)
        ext = np.where(t == SPHERE, s[:, 0], np.where(t == CAPSULE, s[:, 0] + s[:, 1],
                       np.where(t == CYLINDER, np.hypot(s[:, 0], s[:, 1]), np.linalg.norm(s, axis=1))))
        ext = np.where(t == PLANE, 0.0, ext)
        self._rho = np.zeros(full.nbody)
        np.maximum.at(self._rho, np.asarray(full.geom_body), np.linalg.norm(full.geom_pos, axis=1) + ext)

    def _full_q(self, q):
        return self.model.expand(q) if self.geared else q

    def collide(self, q: NDArray[np.float64], margin: float) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        c = self.collider
        n = c.run(self._full_q(q), margin)
        if n < 0:
            _api.raise_for_status(self.model, -n, q=q)
        return c.con_i[:n].copy(), c.con_f[:n].copy()

    def units(self, q: NDArray[np.float64], v: NDArray[np.float64] | None, con_i: NDArray[np.int64],
              con_f: NDArray[np.float64]) -> Units:
        k, gr = len(con_i), self.rows
        st = gr.run(q, v, con_i, con_f, k, v is not None)
        if st != OK:
            _api.raise_for_status(self.model, st, **({"q": q} if v is None else {"q": q, "v": v}))
        names, keys, seen = [], [], {}
        for a, b in con_i.tolist():
            j = seen.get((a, b), 0)
            seen[(a, b)] = j + 1
            keys.append(("g", a, b, j))
            names.append(f"{self.names[a]}/{self.names[b]}")
        return Units(names, np.full(k, CONTACT, dtype=np.int64), gr.gap[:k].copy(), gr.N[:k].copy(),
                     gr.T[:k].copy(), con_f[:, 7].copy(), con_f[:, 8].copy(), gr.drift_n[:k].copy(),
                     gr.drift_t[:k].copy(), gr.point[:k].copy(), gr.frame[:k].copy(), keys)

    def displacement(self, q0: NDArray[np.float64], q1: NDArray[np.float64]) -> float:
        if self.geared:                      # the geoms are on the full tree's bodies
            from ..kinematics import forward_kinematics
            full = self.model.full_model
            k0, k1 = forward_kinematics(full, self._full_q(q0)), forward_kinematics(full, self._full_q(q1))
            R0, p0, R1, p1 = k0.R, k0.p, k1.R, k1.p
        else:
            R0, p0 = (x.copy() for x in self.data.poses(q0))
            R1, p1 = self.data.poses(q1)
        d = np.linalg.norm(p1 - p0, axis=1) + np.linalg.norm(R1 - R0, axis=(1, 2)) * self._rho
        return float(d.max(initial=0.0))

    @staticmethod
    def match(con_a: tuple, con_b: tuple, radius: float) -> NDArray[np.int64]:
        (ia, fa), (ib, fb) = con_a, con_b
        out = np.full(len(ia), -1, dtype=np.int64)
        if not len(ia) or not len(ib):
            return out
        same = (ia[:, None, 0] == ib[None, :, 0]) & (ia[:, None, 1] == ib[None, :, 1])
        d = np.linalg.norm(fa[:, None, 1:4] - fb[None, :, 1:4], axis=2)
        d = np.where(same, d, np.inf)
        j = np.argmin(d, axis=1)
        ok = d[np.arange(len(ia)), j] <= radius
        out[ok] = j[ok]
        return out
