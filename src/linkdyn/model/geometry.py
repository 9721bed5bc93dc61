"""Collision geometry of a model: primitive shapes fixed to bodies, frozen into flat arrays.

A geom is a shape with a size, a placement in its body's frame and the coefficients of the
contacts it makes (:meth:`ModelBuilder.add_geom`).  The shapes and their ``size`` (three
slots, unused ones zero), with the type codes of MuJoCo's ``mjtGeom``:

    PLANE     0   ()              the half-space z <= 0 of its frame (boundary: the xy-plane, normal +z)
    SPHERE    2   (r,)            radius
    CAPSULE   3   (r, h)          radius, half-length of the segment along local z
    ELLIPSOID 4   (a, b, c)       semi-axes along local x, y, z
    CYLINDER  5   (r, h)          radius, half-length along local z
    BOX       6   (x, y, z)       half-extents
    MESH      7   (rbound,)       a convex mesh: the convex hull of the vertices given
                                  (ModelBuilder.add_geom(..., vertices=...)); size[0] is the
                                  radius of its bounding sphere about the geom frame's origin

The frozen arrays (``ngeom`` geoms, ``npair`` candidate pairs), named as MuJoCo's:

    geom_type        (ngeom,)       shape code (above)
    geom_body        (ngeom,)       model body carrying the geom (after Fixed joints are merged)
    geom_size        (ngeom, 3)     size (above)
    geom_pos         (ngeom, 3)     geom frame in the body frame: position
    geom_R           (ngeom, 3, 3)  ... and rotation (columns: the geom's axes)
    geom_friction    (ngeom,)       Coulomb coefficient; a pair uses the larger (MuJoCo)
    geom_restitution (ngeom,)       Newton's coefficient; a pair uses the larger
    geom_contype     (ngeom,)       filter bits (MuJoCo's contype / conaffinity)
    geom_conaffinity (ngeom,)
    geom_condim      (ngeom,)       1 (frictionless), 3 (sliding friction), 4, 6 (torsional, rolling);
                                    a pair's is the higher priority's, else the larger (MuJoCo)
    geom_group       (ngeom,)       a free label (visibility groups, as MuJoCo's)
    geom_priority    (ngeom,)       MuJoCo's priority: a pair of different priorities takes the
                                    higher one's friction (equal: the larger friction)
    geom_margin      (ngeom,)       contact skin (m, MuJoCo's margin): a pair's contact holds its
                                    geoms apart at the sum of their margins (MuJoCo's includemargin)
    geom_names       (ngeom,)       names, unique
    geom_vert_adr    (ngeom,)       a mesh's first vertex in geom_verts (-1: not a mesh) ...
    geom_vert_num    (ngeom,)       ... its number of vertices (0: not a mesh) ...
    geom_verts       (nvert, 3)     ... and the vertices of every mesh's convex hull in its geom
                                    frame (MuJoCo's mesh_vertadr, mesh_vertnum, mesh_vert)
    geom_pairs       (npair, 2)     candidate pairs (g1 < g2): those that pass the contact filter and
                                    the explicit pairs, ascending
    geom_pair_friction (npair,)     the pair's Coulomb coefficient where it is not the larger of the
                                    two geoms' (an explicit pair's own, the higher priority's, 0 for a
                                    pair of condim 1), else -1
    geom_exclude     (nexclude, 2)  body pairs excluded by ModelBuilder.exclude (model bodies)
    geom_explicit    (nexplicit, 2) the explicit pairs of ModelBuilder.add_pair (g1 < g2) ...
    geom_explicit_friction (nexplicit,)  ... and their friction (-1: none given)

The candidate pairs are computed once, at build time, by MuJoCo's rules ("Contact filtering",
mujoco.readthedocs.io, Computation chapter): no pair within one body (bodies merged over Fixed
joints are one body, as MuJoCo's weld bodies); no pair between a parent and its child unless
the parent is the world; ``contype[a] & conaffinity[b]`` or ``contype[b] & conaffinity[a]``
non-zero; no pair between excluded bodies; no pair of two planes (there is no collision
function for it, as in MuJoCo).  Explicit pairs (:meth:`ModelBuilder.add_pair`, MuJoCo's
``<contact><pair>``) are added to these regardless of the filter (two planes excepted), as
MuJoCo adds its ``<pair>`` elements.  One difference: MuJoCo's ``<exclude>`` names bodies before
welding, here an exclude applies to the merged body.
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    pass

PLANE, SPHERE, CAPSULE, ELLIPSOID, CYLINDER, BOX, MESH = 0, 2, 3, 4, 5, 6, 7
SHAPES = {"plane": PLANE, "sphere": SPHERE, "capsule": CAPSULE, "ellipsoid": ELLIPSOID,
          "cylinder": CYLINDER, "box": BOX, "mesh": MESH}
SHAPE_NAMES = {v: k for k, v in SHAPES.items()}
#: number of size values of each shape, and what they are (for error messages)
SIZE_ARITY = {PLANE: (0, "none: a plane is unbounded"), SPHERE: (1, "(radius,)"),
              CAPSULE: (2, "(radius, half-length)"), ELLIPSOID: (3, "(a, b, c) semi-axes"),
              CYLINDER: (2, "(radius, half-length)"), BOX: (3, "(x, y, z) half-extents"),
              MESH: (0, "none: a mesh is given by its vertices")}
CONDIMS = (1, 3, 4, 6)
#: the largest length (m) a position, a radius, a size or a finite limit may have: 1000 km.  A
#: model beyond that is a unit slip or garbage, and the squares the kinematics and the collision
#: tests form of lengths near 1e154 overflow (issue 28: a contact at 1e300 m fell through the
#: ground with only overflow warnings, ``checks()`` saying ok)
MAX_LENGTH = 1e6


def _number(x, what, lo=None, hi=None, lo_open=False):
    """float(x) for a real number x (not a bool, a string or an array), within [lo, hi]."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise TypeError(f"{what}: expected a real number, got {x!r}")
    v = float(x)
    if not np.isfinite(v):
        raise ValueError(f"{what}: expected a finite number, got {x!r}")
    if lo is not None and (v <= lo if lo_open else v < lo):
        raise ValueError(f"{what}: expected a number {'>' if lo_open else '>='} {lo}"
                         + (f" and <= {hi}" if hi is not None else "") + f", got {x!r}")
    if hi is not None and v > hi:
        raise ValueError(f"{what}: expected a number in [{lo}, {hi}], got {x!r}")
    return v


def _strict_reals(x, what):
    """Refuse a bool, a string or anything not a real number anywhere in ``x`` (a number, a
    sequence or an array): ``np.asarray([0, 0, True], float)`` would read True as 1 silently."""
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "fiu":
            return
        if x.dtype.kind != "O":
            raise TypeError(f"{what}: expected real numbers, got an array of {x.dtype}")
        items = x.reshape(-1).tolist()
    elif isinstance(x, (str, bytes, bool, np.bool_)):
        raise TypeError(f"{what}: expected real numbers, got {x!r}")
    elif isinstance(x, numbers.Real):
        return
    elif isinstance(x, (list, tuple)):
        items = x
    else:
        raise TypeError(f"{what}: expected real numbers, got {type(x).__name__}")
    for v in items:
        _strict_reals(v, what)


def _reals(x, what, n=None, max_abs=None):
    """A float array from real numbers ``x`` (no bool or string), finite, of ``n`` values when
    given (flattened), each |value| <= ``max_abs`` when given."""
    _strict_reals(x, what)
    a = np.asarray(x, dtype=float)
    if n is not None:
        a = a.reshape(-1)
        if a.shape != (n,):
            raise ValueError(f"{what}: expected {n} values, got {a.size}")
    if not np.isfinite(a).all():
        raise ValueError(f"{what}: expected finite values, got {a.tolist()}")
    if max_abs is not None and a.size and np.abs(a).max() > max_abs:
        raise ValueError(f"{what}: {np.abs(a).max():g} is beyond the physical range (|x| <= {max_abs:g}; "
                         "check the units)")
    return a


def _integer(x, what, lo=0):
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{what}: expected an integer, got {x!r}")
    if int(x) < lo:
        raise ValueError(f"{what}: expected an integer >= {lo}, got {x!r}")
    return int(x)


def shape_code(shape, what="shape") -> int:
    """The type code of a shape name ("sphere", "capsule", "box", "cylinder", "ellipsoid", "plane")."""
    if not isinstance(shape, str):
        raise TypeError(f"{what}: expected a shape name, one of {sorted(SHAPES)}, got {shape!r}")
    try:
        return SHAPES[shape.lower()]
    except KeyError:
        raise ValueError(f"{what}: unknown shape {shape!r}; shapes: {sorted(SHAPES)}") from None


def check_size(code: int, size, what="size") -> np.ndarray:
    """The (3,) size array of a shape from the values given (each finite and > 0)."""
    n, meaning = SIZE_ARITY[code]
    out = np.zeros(3)
    if code == PLANE or code == MESH:
        if size is None or (np.ndim(size) == 1 and len(size) == 0):
            return out
        if code == MESH:
            raise ValueError(f"{what}: a mesh takes no size (its vertices give it); pass () or None, got {size!r}")
        raise ValueError(f"{what}: a plane takes no size (it is unbounded); pass () or None, got {size!r}")
    if isinstance(size, (str, bytes)) or size is None:
        raise TypeError(f"{what}: expected {n} number(s) {meaning} for a {SHAPE_NAMES[code]}, got {size!r}")
    vals = [size] if np.ndim(size) == 0 else list(np.asarray(size, dtype=object).reshape(-1))
    if len(vals) != n:
        raise ValueError(f"{what}: a {SHAPE_NAMES[code]} takes {n} value(s) {meaning}, got {len(vals)}: {size!r}")
    for k, x in enumerate(vals):
        out[k] = _number(x, f"{what}[{k}] of a {SHAPE_NAMES[code]} {meaning}", lo=0.0, lo_open=True)
        if out[k] > MAX_LENGTH:
            raise ValueError(f"{what}[{k}] of a {SHAPE_NAMES[code]} {meaning}: {out[k]:g} m is beyond the physical "
                             f"range (<= {MAX_LENGTH:g} m; check the units)")
    return out


def check_geom(shape, size, friction, restitution, contype, conaffinity, condim, group, what):
    """Validated (code, size (3,), friction, restitution, contype, conaffinity, condim, group)."""
    code = shape_code(shape, f"{what}.shape")
    return (code, check_size(code, size, f"{what}.size"),
            _number(friction, f"{what}.friction", lo=0.0),
            _number(restitution, f"{what}.restitution", lo=0.0, hi=1.0),
            _integer(contype, f"{what}.contype"), _integer(conaffinity, f"{what}.conaffinity"),
            _condim(condim, f"{what}.condim"), _integer(group, f"{what}.group"))


def convex_hull(vertices, what="vertices") -> np.ndarray:
    """The vertices of the convex hull of a point cloud ((n, 3), finite, not all in a plane),
    in their input order (scipy.spatial.ConvexHull, Barber, Dobkin and Huhdanpaa 1996, qhull)."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        v = np.asarray(vertices, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: expected an (n, 3) array of numbers, got {type(vertices).__name__}") from None
    if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] < 4:
        raise ValueError(f"{what}: expected an (n, 3) array of at least 4 points, got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{what}: the vertices must be finite")
    if np.abs(v).max() > MAX_LENGTH:
        raise ValueError(f"{what}: a vertex at {np.abs(v).max():g} m is beyond the physical range "
                         f"(<= {MAX_LENGTH:g} m; check the units)")
    try:
        hull = ConvexHull(v)
    except QhullError:
        raise ValueError(f"{what}: the {len(v)} points have no 3-d convex hull (they lie in a plane or "
                         "on a line)") from None
    return np.ascontiguousarray(v[np.sort(hull.vertices)])


def _condim(x, what):
    v = _integer(x, what, lo=1)
    if v not in CONDIMS:
        raise ValueError(f"{what}: expected one of {CONDIMS} (MuJoCo's contact dimensions), got {x!r}")
    return v


def candidate_pairs(geom_type, geom_body, contype, conaffinity, parent, exclude, explicit=()) -> np.ndarray:
    """(npair, 2) geom pairs g1 < g2, ascending: those that pass MuJoCo's contact filter and the
    ``explicit`` ones (module docstring)."""
    ex = {(min(a, b), max(a, b)) for a, b in exclude}
    forced = {(min(a, b), max(a, b)) for a, b in explicit
              if not (geom_type[a] == PLANE and geom_type[b] == PLANE)}
    pairs = []
    n = len(geom_type)
    for g1 in range(n):
        b1 = int(geom_body[g1])
        for g2 in range(g1 + 1, n):
            b2 = int(geom_body[g2])
            if b1 == b2:
                continue                                   # one body (or bodies welded together)
            if (g1, g2) in forced:
                pairs.append((g1, g2))                     # an explicit pair: no filter
                continue
            if (b1 != 0 and b2 != 0) and (parent[b2] == b1 or parent[b1] == b2):
                continue                                   # parent and child, neither the world
            if not (contype[g1] & conaffinity[g2] or contype[g2] & conaffinity[g1]):
                continue                                   # the filter bits
            if (min(b1, b2), max(b1, b2)) in ex:
                continue                                   # excluded body pair
            if geom_type[g1] == PLANE and geom_type[g2] == PLANE:
                continue                                   # no plane-plane collision function
            pairs.append((g1, g2))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def _ro(a):
    a.flags.writeable = False
    return a


def explicit_pairs(pairs, ngeom, what="add_pair"):
    """The explicit pairs ((g1, g2, friction or None), ...) as (nexplicit, 2) g1 < g2 and
    (nexplicit,) friction (-1: none); a pair given twice keeps its last friction."""
    last = {}
    for g1, g2, mu in pairs:
        if not (0 <= g1 < ngeom and 0 <= g2 < ngeom) or g1 == g2:
            raise ValueError(f"{what}: expected two different geoms, got indices {g1}, {g2}")
        last[(min(g1, g2), max(g1, g2))] = -1.0 if mu is None else float(mu)
    keys = sorted(last)
    return (np.array(keys, dtype=np.int64).reshape(-1, 2), np.array([last[k] for k in keys], dtype=float))


def pair_friction(pairs, friction, priority, explicit, explicit_friction, condim=None) -> np.ndarray:
    """(npair,) each candidate pair's Coulomb coefficient where it is not the larger of the two
    geoms' (-1 there): an explicit pair's own; for two geoms of different ``priority``, the
    higher one's (MuJoCo's mixing rule); 0 where the pair's ``condim`` is 1, frictionless (MuJoCo's
    rule for the pair's dimension: the higher priority's, else the larger of the two; an explicit
    pair keeps its own coefficient, ``ModelBuilder.add_pair``)."""
    own = {(int(a), int(b)): float(f) for (a, b), f in zip(explicit, explicit_friction) if f >= 0}
    out = np.full(len(pairs), -1.0)
    for k, (a, b) in enumerate(pairs):
        a, b = int(a), int(b)
        if (a, b) in own:
            out[k] = own[(a, b)]
            continue
        if condim is not None:
            cd = (condim[a] if priority[a] > priority[b] else condim[b]) if priority[a] != priority[b] \
                else max(condim[a], condim[b])
            if cd == 1:
                out[k] = 0.0
                continue
        if priority[a] != priority[b]:
            mu = friction[a] if priority[a] > priority[b] else friction[b]
            if mu != max(friction[a], friction[b]):
                out[k] = mu
    return out


def freeze(geoms, exclude, parent, pairs=()) -> dict:
    """The model's geometry attributes (module docstring) from the builder's resolved geoms:
    dicts with name, body (model index), type, size, R, p, friction, restitution, contype,
    conaffinity, condim, group; ``exclude``: pairs of model body indices; ``pairs``: explicit
    pairs (geom index, geom index, friction or None)."""
    n = len(geoms)
    expl, expl_mu = explicit_pairs(pairs, n)
    out = {
        "ngeom": n,
        "geom_names": tuple(g["name"] for g in geoms),
        "geom_type": np.array([g["type"] for g in geoms], dtype=np.int64),
        "geom_body": np.array([g["body"] for g in geoms], dtype=np.int64),
        "geom_size": np.array([g["size"] for g in geoms], dtype=float).reshape(n, 3),
        "geom_pos": np.array([g["p"] for g in geoms], dtype=float).reshape(n, 3),
        "geom_R": np.array([g["R"] for g in geoms], dtype=float).reshape(n, 3, 3),
        "geom_friction": np.array([g["friction"] for g in geoms], dtype=float),
        "geom_restitution": np.array([g["restitution"] for g in geoms], dtype=float),
        "geom_contype": np.array([g["contype"] for g in geoms], dtype=np.int64),
        "geom_conaffinity": np.array([g["conaffinity"] for g in geoms], dtype=np.int64),
        "geom_condim": np.array([g["condim"] for g in geoms], dtype=np.int64),
        "geom_group": np.array([g["group"] for g in geoms], dtype=np.int64),
        "geom_priority": np.array([g.get("priority", 0) for g in geoms], dtype=np.int64),
        "geom_margin": np.array([g.get("margin", 0.0) for g in geoms], dtype=float),
        "geom_exclude": np.array(sorted({(min(a, b), max(a, b)) for a, b in exclude}),
                                 dtype=np.int64).reshape(-1, 2),
    }
    verts = [np.asarray(g["verts"], dtype=float).reshape(-1, 3) if g["type"] == MESH else np.zeros((0, 3))
             for g in geoms]
    num = np.array([len(v) for v in verts], dtype=np.int64)
    adr = np.concatenate([[0], np.cumsum(num)[:-1]]).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
    out["geom_vert_num"] = num
    out["geom_vert_adr"] = np.where(num > 0, adr, -1).astype(np.int64)
    out["geom_verts"] = np.concatenate(verts, axis=0) if n else np.zeros((0, 3))
    out["geom_explicit"], out["geom_explicit_friction"] = expl, expl_mu
    out["geom_pairs"] = candidate_pairs(out["geom_type"], out["geom_body"], out["geom_contype"],
                                        out["geom_conaffinity"], parent, out["geom_exclude"].tolist(),
                                        expl.tolist())
    out["geom_pair_friction"] = pair_friction(out["geom_pairs"], out["geom_friction"], out["geom_priority"],
                                              expl, expl_mu, out["geom_condim"])
    for k, v in out.items():
        if isinstance(v, np.ndarray):
            _ro(v)
    return out
