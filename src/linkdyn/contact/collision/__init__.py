"""Collision detection between the model's geoms (:meth:`ModelBuilder.add_geom`).

MuJoCo's staged pipeline, compiled: the geoms' world poses from the forward kinematics pass,
a broad phase (axis-aligned bounding boxes, sweep and prune over the candidate pairs the model
computed at build time), and a narrow phase of primitive pairs.  Each contact has ``geom1``,
``geom2`` (geom 1 of the lower type in MuJoCo's order plane < sphere < capsule < ellipsoid <
cylinder < box < mesh, the lower index between equal types), the signed distance ``dist`` (negative:
penetration), the world point ``pos`` midway between the two surfaces, the unit ``normal``
from geom 1 to geom 2, and the pair's ``friction`` and ``restitution`` (the larger of the two
geoms', as MuJoCo; an explicit pair's own friction when :meth:`ModelBuilder.add_pair` gave one).  Contacts with ``dist <= margin`` plus the pair's skin (the geoms' own margins,
``ModelBuilder.add_geom(margin=)``, MuJoCo's ``includemargin``) are reported (as MuJoCo: ``<=``).

Pairs with a collision function (at most this many contacts each):

    plane:     sphere 1, capsule 2, ellipsoid 1, cylinder 4 (3 or 4 on the rim), box 4, mesh 4
    sphere:    sphere 1, capsule 1, cylinder 1, box 1
    capsule:   capsule 2 (2 when parallel), box 2
    box:       box 8 (a contact manifold)
    convex:    every other pair of sphere, capsule, ellipsoid, cylinder, box and convex mesh:
               GJK for the distance, EPA for the depth (:mod:`._convex`): 1 contact when one
               shape is a sphere or an ellipsoid; up to 8 between two shapes with faces or
               straight edges (capsule, cylinder, box, mesh), where the faces along the normal
               overlap (a cylinder lying on a box: the two ends of its line)

MuJoCo's primitive pairs agree with MuJoCo 4.0 to round-off (tests/test_collision.py); the GJK /
EPA pairs agree with MuJoCo's ``mjc_Convex`` in its one-contact mode (``multiccd`` disabled) to
1e-6 m, their stopping tolerance being 1e-10 m (tests/test_convex.py).  A mesh geom collides as
the convex hull of its vertices (``ModelBuilder.add_geom(..., "mesh", vertices=...)``, MJCF
mesh geoms), as in MuJoCo.  Every pair of shapes has a function now; :class:`CollisionWarning`
stays for a candidate pair without one (it would name each, once per model, and make no
contacts).  The time-stepping scheme uses them (``linkdyn.sim.timestepping``, compiled step);
the event scheme does not yet.
"""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from ... import _api
from ...model.geometry import SHAPE_NAMES
from . import _box, _pipeline, _primitives  # noqa: F401 (compiled pairs; private: they trust their input)
from ._pipeline import MAX_CONTACTS, collide_kernel as _collide_kernel

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ...model.model import Model

__all__ = ["collide", "Contacts", "Collider", "CollisionWarning"]


class CollisionWarning(UserWarning):
    """A candidate pair of geoms whose shapes have no collision function yet: it makes no contacts."""


class Contacts:
    """The contacts of :func:`collide` (n of them): ``geom1``, ``geom2`` (n,) geom indices,
    ``dist`` (n,) signed distances (negative: penetration), ``pos`` (n, 3) world points midway
    between the surfaces, ``normal`` (n, 3) unit normals from geom 1 to geom 2, ``friction``
    and ``restitution`` (n,) of each pair, ``margin`` (n,) the pair's skin (the sum of the two geoms'
    margins, MuJoCo's ``includemargin``: the contact holds the surfaces that far apart, its gap is
    ``dist - margin``).  ``len(contacts)`` is n; ``names()`` the geom names."""
    __slots__ = ("model", "geom1", "geom2", "dist", "pos", "normal", "friction", "restitution", "margin")

    def __init__(self, model: Model, con_i: NDArray[np.int64], con_f: NDArray[np.float64]) -> None:
        self.model = model
        self.geom1, self.geom2 = con_i[:, 0].copy(), con_i[:, 1].copy()
        self.dist = con_f[:, 0].copy()
        self.pos, self.normal = con_f[:, 1:4].copy(), con_f[:, 4:7].copy()
        self.friction, self.restitution = con_f[:, 7].copy(), con_f[:, 8].copy()
        self.margin = con_f[:, 9].copy()

    def __len__(self) -> int:
        return len(self.dist)

    def names(self) -> list[tuple[str, str]]:
        """(geom1 name, geom2 name) of each contact."""
        n = self.model.geom_names
        return [(n[a], n[b]) for a, b in zip(self.geom1, self.geom2)]

    def __repr__(self):
        d = f", deepest {self.dist.min():.4g}" if len(self) else ""
        return f"<Contacts: {len(self)}{d}>"


class Collider:
    """The buffers of a model's collision detection, made once (the model keeps one: see
    :func:`collider`).  ``run(q, margin)`` calls the compiled pipeline without validating its
    input and returns the number of contacts, which are the first rows of ``con_i`` (geom1,
    geom2) and ``con_f`` (dist, pos, normal, friction, restitution); a negative number is a bad
    q's status code.  ``keep``: a mask over ``model.geom_pairs``, the pairs this collider detects
    (default all; the time step leaves out those that point contacts describe, ``linkdyn.contact.
    geom_rows.point_pairs``).  ``args`` are the kernel's buffers, for callers that are compiled too:
    ``_pipeline.collide_kernel(mi, mf, ws, q, *args[:4], margin, *args[4:])``."""

    def __init__(self, model: Model, keep: NDArray[np.bool_] | None = None) -> None:
        # keep: a mask over model.geom_pairs, the pairs this collider detects (default: all)
        n, pairs = model.ngeom, np.ascontiguousarray(np.asarray(model.geom_pairs).reshape(-1, 2))
        sel = np.ones(len(pairs), dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
        pairs = np.ascontiguousarray(pairs[sel])
        self.model = model
        self.gi = np.ascontiguousarray(np.column_stack([model.geom_type, model.geom_body, model.geom_vert_adr,
                                                        model.geom_vert_num]).reshape(n, 4), dtype=np.int64)
        self.gf = np.concatenate([model.geom_size.ravel(), model.geom_pos.ravel(), model.geom_R.ravel(),
                                  model.geom_friction, model.geom_restitution,
                                  np.asarray(model.geom_pair_friction)[sel], pair_skin(model)[sel],
                                  model.geom_verts.ravel()]).astype(float)
        self.pairs = pairs
        adr = np.zeros(n + 1, dtype=np.int64)
        np.add.at(adr, pairs[:, 0] + 1, 1)
        adr = np.cumsum(adr)
        key = np.lexsort((pairs[:, 1], pairs[:, 0]))          # by g1, then g2 (already so)
        self.adj = np.concatenate([adr, pairs[key, 1], key]).astype(np.int64)
        types = model.geom_type
        lo, hi = np.minimum(types[pairs[:, 0]], types[pairs[:, 1]]), np.maximum(types[pairs[:, 0]], types[pairs[:, 1]])
        self.maxcon = int(sum(MAX_CONTACTS.get((int(a), int(b)), 0) for a, b in zip(lo, hi)))
        self.missing = [(int(g1), int(g2)) for (g1, g2), a, b in zip(pairs, lo, hi)
                        if (int(a), int(b)) not in MAX_CONTACTS]
        self.cw = np.zeros(_pipeline.cw_size(n))
        self.ci = np.concatenate([np.arange(n), np.zeros(len(pairs))]).astype(np.int64)
        self.con_i = np.zeros((self.maxcon, 2), dtype=np.int64)
        self.con_f = np.zeros((self.maxcon, 10))
        self.args = (self.gi, self.gf, self.pairs, self.adj, self.cw, self.ci, self.con_i, self.con_f)
        if self.missing:
            g = model.geom_names
            text = "; ".join(f"{g[a]!r} ({SHAPE_NAMES[int(types[a])]}) - {g[b]!r} ({SHAPE_NAMES[int(types[b])]})"
                             for a, b in self.missing)
            warnings.warn(f"model {model.name!r}: {len(self.missing)} candidate geom pair(s) have no collision "
                          f"function yet and make no contacts: {text}", CollisionWarning, stacklevel=4)

    def run(self, q: NDArray[np.float64], margin: float = 0.0) -> int:
        m = self.model
        return _collide_kernel(m._mi, m._mf, m._ws, q, self.gi, self.gf, self.pairs, self.adj, float(margin),
                              self.cw, self.ci, self.con_i, self.con_f)


def pair_skin(model: Model) -> NDArray[np.float64]:
    """(npair,) each candidate pair's skin (MuJoCo's includemargin): the sum of its two geoms'
    margins, or 0 for an explicit pair (``add_pair``: MuJoCo's ``<pair>`` takes its own margin,
    0 by default, not the geoms')."""
    pairs, m = np.asarray(model.geom_pairs).reshape(-1, 2), np.asarray(model.geom_margin, dtype=float)
    skin = m[pairs[:, 0]] + m[pairs[:, 1]]
    explicit = {(int(a), int(b)) for a, b in np.asarray(model.geom_explicit).reshape(-1, 2)}
    for k, (a, b) in enumerate(pairs.tolist()):
        if (a, b) in explicit:
            skin[k] = 0.0
    return skin


def collider(model: Model) -> Collider:
    """The model's :class:`Collider` (made on first use, with the warning about missing pairs;
    a geared model's is its full tree's)."""
    model = model.full_model
    if model._collider is None:
        model._collider = Collider(model)
    return model._collider


def collide(model: Model, q: ArrayLike, margin: float = 0.0) -> Contacts:
    """The contacts between the model's geoms at configuration ``q`` (one state, (nq,)) with a
    signed distance ``dist <= margin + skin`` (``margin`` >= 0, in metres; ``skin`` the pair's, the
    sum of the two geoms' own margins, 0 unless they were given): a :class:`Contacts`.

    See :mod:`linkdyn.contact.collision` for the pairs, the conventions and the pairs not
    implemented yet (which warn once per model)."""
    if isinstance(margin, (bool, np.bool_)) or not isinstance(margin, (int, float, np.integer, np.floating)) \
            or not np.isfinite(margin) or margin < 0:
        raise ValueError(f"margin: expected a finite number >= 0, got {margin!r}")
    s = _api.as_states(model, q=q)
    if s.batch is not None:
        raise ValueError(f"q: collide takes one configuration of shape ({model.nq},), got a stack {np.shape(q)}; "
                         "call it once per state")
    qf = model.expand(s.q) if model._full is not None else s.q
    c = collider(model)
    n = c.run(qf, margin)
    if n < 0:
        _api.raise_for_status(model, -n, q=s.q)
    return Contacts(model.full_model, c.con_i[:n], c.con_f[:n])
