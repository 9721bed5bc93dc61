"""Collision geometry: every ``<geom>`` MuJoCo would collide -> ``ModelBuilder.add_geom``, with
MuJoCo's contact filter (contype/conaffinity, parent and child, ``<exclude>``, ``<pair>``)
carried over exactly (see the module docstring of :mod:`linkdyn.model.io.mjcf`)."""
from __future__ import annotations

import numpy as np

from .common import _WORLD, MJCFError, _pose, _unique, _warn
from .contacts import _collision_filter, _contact_section, _read_geoms, _shown, _welds

#: the geom types that become collision geometry (a mesh: its convex hull, as MuJoCo collides it),
#: and those that are not collision geometry yet
_SHAPES = ("plane", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh")
_LATER = ("hfield", "sdf")
#: MuJoCo's defaults of the soft-contact parameters (linkdyn's contact is hard)
_SOFT = {"solref": (0.02, 1.0), "solimp": (0.9, 0.95, 0.001, 0.5, 2.0), "margin": (0.0,), "gap": (0.0,)}


def _soft_set(a, keys):
    """The soft-contact attributes of element ``a`` (with its default class) that differ from
    MuJoCo's defaults."""
    out = []
    for key in keys:
        if not a.has(key):
            continue
        d = _SOFT[key]
        v = a.floats(key, len(d), min_n=1)
        n = len(a.raw(key).split())
        if not np.allclose(v[:n], d[:n], rtol=0.0, atol=1e-12):
            out.append(key)
    return out


class _Settle:
    """What the loader checks once the model is built: that its candidate pairs are MuJoCo's
    (``settle(builder, model)`` fixes the differences a merged body makes and returns the model)."""

    def __init__(self, mj_pairs, explicit):
        self.mj_pairs = mj_pairs        # {(g1, g2) g1 < g2: linkdyn geom indices} MuJoCo considers
        self.explicit = explicit        # {(g1, g2): friction} the file's <pair> elements

    def __call__(self, b, model, source):
        """linkdyn's filter works on the merged bodies (Fixed joints), MuJoCo's on the file's:
        a pair linkdyn keeps and MuJoCo does not (a body under a mocap body) gets its two bodies
        excluded, and every pair MuJoCo keeps that linkdyn does not (an ``<exclude>`` naming a
        welded body, ``filterparent`` disabled, and those just excluded) becomes an explicit
        pair.  Pairs of one merged body (geoms welded together) cannot touch: reported."""
        body = model.geom_body
        ours = {(int(a), int(c)) for a, c in model.geom_pairs}
        extra = ours - set(self.mj_pairs)
        banned = {(min(int(body[a]), int(body[c])), max(int(body[a]), int(body[c]))) for a, c in extra}
        for x, y in sorted(banned):
            b.exclude(model.body_names[x], model.body_names[y])
        welded, rebuild = [], bool(banned)
        for (g1, g2) in sorted(self.mj_pairs):
            hosts = (min(int(body[g1]), int(body[g2])), max(int(body[g1]), int(body[g2])))
            if hosts[0] == hosts[1]:
                welded.append((g1, g2))
                continue
            if (g1, g2) not in ours or hosts in banned or (g1, g2) in self.explicit:
                b.add_pair(g1, g2, friction=self.explicit.get((g1, g2)))
                rebuild = True
        if rebuild:
            model = b.build()
        if welded:
            names = model.geom_names
            _warn(f"{source}: {len(welded)} geom pair{'s' if len(welded) > 1 else ''} that MuJoCo checks for contact "
                  f"lie on bodies welded together here (a mocap body and the world): they never touch in "
                  f"linkdyn: {_shown(f'{names[a]!r}/{names[c]!r}' for a, c in welded)}")
        return model


def _collision_geometry(P, b, root):
    """Add the file's collision geometry to builder ``b``; returns the _Settle to run on the
    built model (None when the file has none)."""
    source = P.ctx.source
    if not P.flags.get("contact", True) or not P.flags.get("constraint", True):
        return None
    parent, weld, static, weld_parent = _welds(P)
    problems = []                              # (file geom, message): bad geoms (MuJoCo refuses them too)
    geoms = _read_geoms(P, problems)
    by_name = {g.name: k for k, g in enumerate(geoms) if g.name}
    explicit, excluded = _contact_section(P, root, by_name, weld)
    in_pair = {k for pair in explicit for k in pair}
    collide_matrix = _collision_filter(P, geoms, weld, weld_parent, explicit, excluded)

    used = set(by_name)
    index, later, soft = {}, [], {}            # file geom -> linkdyn geom; skipped geoms; soft parameters
    unread = []                                # mesh geoms whose file cannot be read here
    for k, g in enumerate(geoms):
        if g.type == "invalid" or not (g.contype or g.conaffinity or k in in_pair):
            continue                           # drawing only: MuJoCo never collides it
        if g.type in _LATER:
            later.append(f"{g.label} ({g.type})")
            continue
        a = g.a
        try:
            if g.type in ("sphere", "plane", "mesh") and a.has("fromto"):
                raise a.err(f"fromto cannot be used with a {g.type}")
            verts = None
            if g.type == "mesh":
                if not a.raw("mesh"):
                    raise a.err("a mesh geom needs a 'mesh' attribute")
                verts = P.ctx.mesh_vertices(a.el, a.where, a.raw("mesh"))
                if verts is None:               # unreadable here (warned): MuJoCo collides it
                    unread.append(f"{g.label} (mesh {a.raw('mesh')!r})")
                    continue
            R, p, size = a.geom_frame(g.type)
            R, p = _pose(g.R, g.p, R, p)
            n = {"plane": 0, "sphere": 1, "capsule": 2, "cylinder": 2, "ellipsoid": 3, "box": 3, "mesh": 0}[g.type]
            name = g.name or _unique(f"{g.body}_geom{sum(1 for x in geoms[:k] if x.body == g.body)}", used)
            soft_keys = _soft_set(a, ("solref", "solimp", "gap"))
            try:
                b.add_geom(g.body, g.type, tuple(size[:n]), placement=(R, p), name=name, friction=g.friction,
                           contype=g.contype, conaffinity=g.conaffinity, condim=g.condim,
                           group=int(a.number("group", 0)), priority=g.priority, margin=a.nonneg("margin", 0.0),
                           vertices=verts)
            except (ValueError, TypeError) as exc:
                raise a.err(str(exc)) from None
        except MJCFError as exc:
            problems.append((k, str(exc)))
            continue
        for key in soft_keys:
            soft.setdefault(key, []).append(g.label)
        index[k] = len(index)

    # <exclude>: on the merged bodies here (MuJoCo's on the file's bodies: _Settle mends the difference)
    for pair in excluded:
        x, y = sorted(pair) if len(pair) == 2 else (next(iter(pair)),) * 2
        if x != y:
            b.exclude(x, y)
    # a body with several joints hangs from carrier bodies: MuJoCo's parent-child filter is on the
    # file's bodies (weld bodies), so the body and its parent's weld body are excluded here
    if P.flags.get("filterparent", True):
        for bd in P.bodies:
            if bd.joints and bd.joints[0].type != "free" and weld[bd.parent] != _WORLD and len(bd.joints) > 1:
                b.exclude(weld[bd.parent], bd.name)
    # <pair>: explicit pairs with their own friction (none when condim is 1)
    pairs = {}
    for pair, (mu, cd, a) in explicit.items():
        ids = sorted(pair)
        if len(ids) == 1 or ids[0] not in index or ids[1] not in index:
            continue
        g1, g2 = index[ids[0]], index[ids[1]]
        if geoms[ids[0]].type == "plane" and geoms[ids[1]].type == "plane":
            continue
        pairs[(min(g1, g2), max(g1, g2))] = 0.0 if cd == 1 else mu
        for key in _soft_set(a, ("solref", "solimp", "margin", "gap")):
            soft.setdefault(key, []).append(f"<pair {a.raw('geom1')}/{a.raw('geom2')}>")

    # the pairs MuJoCo considers
    ks = sorted(index)
    mj_pairs = set()
    if ks:
        M = collide_matrix(ks, ks)
        for i, ki in enumerate(ks):
            for j in range(i + 1, len(ks)):
                kj = ks[j]
                if not M[i, j] or (geoms[ki].type == "plane" and geoms[kj].type == "plane"):
                    continue
                mj_pairs.add((index[ki], index[kj]))

    if later:
        _warn(f"{source}: {len(later)} geom{'s' if len(later) > 1 else ''} that MuJoCo collides "
              f"{'are' if len(later) > 1 else 'is'} not collision geometry in linkdyn yet (height fields "
              f"and SDFs have no collision function here), skipped: {_shown(later, 4)}")
    if unread:
        _warn(f"{source}: {len(unread)} mesh geom{'s' if len(unread) > 1 else ''} that MuJoCo collides "
              f"cannot be read here (no trimesh for the mesh file, or MuJoCo's .msh format) and "
              f"{'are' if len(unread) > 1 else 'is'} not collision geometry, skipped: {_shown(unread, 4)}")
    if problems:
        _warn(f"{source}: {len(problems)} geom{'s' if len(problems) > 1 else ''} cannot be collision geometry "
              f"(MuJoCo refuses such a file), skipped: {_shown((m for _, m in problems), 3)}")
    if soft:
        parts = [f"{key} ({_shown(v, 3)})" for key, v in sorted(soft.items())]
        _warn(f"{source}: MuJoCo's soft-contact parameters are set ({'; '.join(parts)}); linkdyn's contact is hard "
              f"(no solref, solimp or gap; a geom's margin is kept as its skin, a <pair>'s is not): ignored")
    return _Settle(mj_pairs, pairs) if index else None

