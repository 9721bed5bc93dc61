"""The rows of the contacts between geoms: one unilateral unit per contact of the collider.

Given the contacts that :func:`linkdyn.contact.collide` (or :class:`Collider`) found at q, each
contact k (geom 1 on body b1, geom 2 on body b2, world point x midway between the surfaces,
unit normal n from geom 1 to geom 2, signed distance ``dist``) becomes a unit of
:class:`linkdyn.contact.rows.Units`, the structure of the point-plane contacts and limits:

* ``gap`` = dist less the pair's skin (``Contacts.margin``, 0 unless the geoms have margins);
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

from .. import _api
from .._kernels.layout import data_size
from .._kernels.passes import OK
from ..model.geometry import CAPSULE, CYLINDER, PLANE, SPHERE
from ._geom_kernels import geom_rows_kernel as _geom_rows_kernel
from .collision import Collider, Contacts, collide, collider
from .rows import CONTACT, Units, inert

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model

__all__ = ["geom_units", "GeomRows", "GeomCatalog", "point_pairs", "geom_pairs_to_detect", "inert_overlaps"]


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
            self.qsrc, self.qscale, self.qoff = np.arange(full.nq)[:, None], np.ones((full.nq, 1)), np.zeros(full.nq)
            self.vsrc, self.vscale = np.arange(nvf)[:, None], np.ones((nvf, 1))
        else:
            c = model._coupling
            self.qsrc, self.qscale, self.qoff = (np.ascontiguousarray(x) for x in (c.qsrc, c.qscale, c.qoff))
            self.vsrc, self.vscale = np.ascontiguousarray(c.vsrc), np.ascontiguousarray(c.vscale)
        self.qsrc, self.vsrc = (np.ascontiguousarray(x, dtype=np.int64) for x in (self.qsrc, self.vsrc))
        self.qscale, self.vscale = np.ascontiguousarray(self.qscale), np.ascontiguousarray(self.vscale)
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
        return _geom_rows_kernel(f._mi, f._mf, self.ws, self.qsrc, self.qscale, self.qoff, self.vsrc, self.vscale, q,
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
                                                  contacts.restitution, contacts.margin]).reshape(k, 10), dtype=float)
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


def point_pairs(model: Model, pairs: Sequence[tuple[int, int]]) -> NDArray[np.bool_]:
    """A mask over ``model.full_model.geom_pairs``: the sphere-plane pairs that point contacts
    describe already, a contact of ``pairs`` ((contact index, plane index), the catalog's: ``add_contact``,
    ``add_plane``) whose sphere is the sphere geom (the same body, centre and radius to 1e-9) and
    whose plane is the plane geom (the same body, normal and plane).  An MJCF file loads every
    sphere and plane geom as both (``load_mjcf(contacts=True)``); the time step takes these pairs
    by their point contacts and every other candidate pair (a capsule, a box, two bodies) by
    collision geometry, so that a touch is counted once."""
    full = model.full_model
    gp = np.asarray(full.geom_pairs).reshape(-1, 2)
    out = np.zeros(len(gp), dtype=bool)
    if not len(gp) or not len(pairs):
        return out
    t, body = np.asarray(full.geom_type), np.asarray(full.geom_body)
    pos, R, size = np.asarray(full.geom_pos), np.asarray(full.geom_R), np.asarray(full.geom_size)
    cs, ps = model.contacts, model.planes

    def same_sphere(g, c):
        return (body[g] == c.body and np.allclose(pos[g], c.position, rtol=0.0, atol=1e-9)
                and abs(size[g, 0] - c.radius) <= 1e-9)

    def same_plane(g, pl):
        n = pl.R[:, 2]
        return (body[g] == pl.body and pl.extent is None and np.allclose(R[g][:, 2], n, rtol=0.0, atol=1e-9)
                and abs(n @ (pos[g] - pl.p)) <= 1e-9)

    for k, (a, b) in enumerate(gp):
        if {int(t[a]), int(t[b])} != {SPHERE, PLANE}:
            continue
        s_, p_ = (a, b) if t[a] == SPHERE else (b, a)
        out[k] = any(same_sphere(s_, cs[ci]) and same_plane(p_, ps[pi]) for ci, pi in pairs)
    return out


def geom_pairs_to_detect(model: Model, pairs: Sequence[tuple[int, int]]) -> NDArray[np.bool_]:
    """A mask over ``model.full_model.geom_pairs``: the candidate pairs a scheme takes as collision
    geometry, all but those point contacts describe (``point_pairs``; ``pairs``: the catalog's
    (contact index, plane index))."""
    full = model.full_model
    if not full.ngeom or not len(full.geom_pairs):
        return np.zeros(0, dtype=bool)
    return ~point_pairs(model, pairs)


def inert_overlaps(model: Model, data, keep: NDArray[np.bool_], q: NDArray[np.float64]
                   ) -> tuple[NDArray[np.bool_], list[tuple[str, float]]]:
    """The candidate pairs ``keep`` (a mask over ``model.full_model.geom_pairs``) without those that
    overlap at q at a point no motion of the model moves, and those left out as (``"geom1/geom2"``,
    depth in m).

    A contact whose normal and tangent rows all vanish (``contact.rows.inert`` of them all) is one whose
    two material points move alike under every joint velocity: two capsules of a parent and a
    child body that share an end sphere centred on the hinge between them (dm_control's ant: the
    parent is welded to the world, so MuJoCo's parent-child filter does not apply, and the file's
    ``<exclude>`` names the torso, not the leg's first body).  Overlapping there, it asks the step
    for a separating velocity that no impulse can give (a complementarity row with a zero
    diagonal and a positive demand: infeasible), and the penetration could never be projected out
    either.  MuJoCo keeps such a contact as a soft one whose Jacobian is zero, a force that does
    nothing; a hard contact cannot be kept, so the pair is left out.  (A pair that is inert only
    at q and not elsewhere is left out as well: whatever its geoms do later, the pair was
    unsatisfiable at the start.)  ``data``: the model's prepared layer."""
    keep = np.asarray(keep, dtype=bool)
    if not keep.any():
        return keep.copy(), []
    cat = GeomCatalog(model, data, keep)
    con_i, con_f = cat.collide(q, 0.0)
    if not len(con_i):
        return keep.copy(), []
    u = cat.units(q, None, con_i, con_f)
    k = len(u)
    still = np.flatnonzero((u.gap < 0.0) & inert(np.concatenate([u.N.reshape(k, -1), u.T.reshape(k, -1)], axis=1)))
    if not len(still):
        return keep.copy(), []
    gp = np.asarray(model.full_model.geom_pairs).reshape(-1, 2)
    index = {(int(a), int(b)): p for p, (a, b) in enumerate(gp)}
    out, deepest = keep.copy(), {}
    for c in still:
        a, b = int(con_i[c, 0]), int(con_i[c, 1])
        p = index.get((a, b), index.get((b, a)))
        if p is None:
            continue
        out[p] = False
        deepest[u.name[c]] = max(deepest.get(u.name[c], 0.0), float(-u.gap[c]))
    return out, sorted(deepest.items())


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

    def __init__(self, model: Model, data, keep: NDArray[np.bool_] | None = None) -> None:
        # keep: the candidate pairs to detect (a mask over geom_pairs; default all)
        self.model, self.data = model, data
        whole = keep is None or bool(np.all(keep))
        self.collider = collider(model) if whole else Collider(model.full_model, keep)
        self.rows = geom_rows(model)
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
