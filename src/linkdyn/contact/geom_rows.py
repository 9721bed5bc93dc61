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

from .. import _api
from .._kernels.layout import data_size
from .._kernels.passes import OK
from ._geom_kernels import geom_rows_kernel as _geom_rows_kernel
from .collision import Contacts, collide, collider
from .rows import CONTACT, Units

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model

__all__ = ["geom_units", "GeomRows"]


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
