"""Contact geometry: sphere geoms -> contacts, plane geoms -> planes, with MuJoCo's collision
filters, and warnings for what linkdyn does differently."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .common import _GEOM_TYPES, _WORLD, MJCFError, _pose, _unique, _warn
from .defaults import _Attr


# --------------------------------------------------------------------------------------------
# contact geometry: sphere geoms -> contacts, plane geoms -> planes
@dataclass
class _CGeom:
    name: str | None
    label: str                  # for messages
    type: str
    body: str
    contype: int
    conaffinity: int
    condim: int
    priority: int
    friction: float            # the first (sliding) friction value
    a: object                  # the _Attr, to read the pose and size of the geoms that are used
    R: np.ndarray              # the frame the geom sits in (a <frame>), in the body frame
    p: np.ndarray


def _shown(items, n=6):
    items = list(items)
    return ", ".join(items[:n]) + (", ..." if len(items) > n else "")


def _welds(P):
    """MuJoCo's weld bodies (body_weldid: the nearest ancestor with joints, or a mocap body), the
    MJCF parents and linkdyn's static bodies (welded to the world: mocap bodies are fixed in
    linkdyn), by body name; and the weld body's parent weld body."""
    parent = {bd.name: bd.parent for bd in P.bodies}
    weld, static = {_WORLD: _WORLD}, {_WORLD: True}
    for bd in P.bodies:                                  # parents come before their children
        mocap = bd.el.get("mocap") == "true"
        weld[bd.name] = bd.name if (bd.joints or mocap) else weld[bd.parent]
        static[bd.name] = not bd.joints and static[bd.parent]

    def weld_parent(w):
        return _WORLD if w == _WORLD else weld[parent[w]]

    return parent, weld, static, weld_parent


def _read_geoms(P, problems=None):
    """Every geom of the file (P.geoms' order, MuJoCo's) as a _CGeom, attributes checked: a bad
    one raises, or, given a list ``problems``, is noted there as (index, message) and read as a
    geom that collides with nothing (contype and conaffinity 0)."""
    ctx = P.ctx
    geoms = []
    for el, body, R, p, cc, where in P.geoms:
        gname = el.get("name")
        gwhere = f"<geom{' name=' + repr(gname) if gname else ''}> in {where}"
        a = _Attr(ctx, el, gwhere, P.defaults.of(el, "geom", cc, gwhere))
        try:
            gtype = a.choice("type", _GEOM_TYPES, "sphere")
            label = repr(gname) if gname else f"a {gtype} in {where}"
            condim = int(a.number("condim", 3))
            if condim not in (1, 3, 4, 6):
                raise a.err(f"{a.desc('condim', a.raw('condim'))}: expected 1, 3, 4 or 6")
            fr = a.floats("friction", 3, [1.0, 0.005, 0.0001], min_n=1)
            if np.any(fr < 0):
                raise a.err(f"{a.desc('friction', a.raw('friction'))}: friction must not be negative")
            geoms.append(_CGeom(gname, label, gtype, body, int(a.number("contype", 1)),
                                int(a.number("conaffinity", 1)), condim, int(a.number("priority", 0)),
                                float(fr[0]), a, R, p))
        except MJCFError as exc:
            if problems is None:
                raise
            problems.append((len(geoms), str(exc)))
            geoms.append(_CGeom(gname, repr(gname) if gname else f"a geom in {where}", "invalid", body, 0, 0, 3, 0,
                                1.0, a, R, p))
    return geoms


def _contact_section(P, root, by_name, bodies):
    """``<contact>``: explicit pairs, frozenset of geom indices -> (sliding friction, condim, the
    pair's _Attr), and excluded body pairs (frozensets of body names)."""
    ctx = P.ctx
    explicit, excluded = {}, set()
    for cel in root.findall("contact"):
        for n, el in enumerate(cel):
            where = f"<contact><{el.tag}{' name=' + repr(el.get('name')) if el.get('name') else ''}> number {n + 1}"
            if el.tag == "pair":
                a = _Attr(ctx, el, where, P.defaults.of(el, "pair", None, where))
                ids = []
                for attr in ("geom1", "geom2"):
                    nm = a.raw(attr)
                    if nm is None or nm not in by_name:
                        raise a.err(f"{attr}={nm!r} is not a named geom of the model")
                    ids.append(by_name[nm])
                fr = a.floats("friction", 5, [1.0, 1.0, 0.005, 0.0001, 0.0001], min_n=1)
                explicit[frozenset(ids)] = (float(fr[0]), int(a.number("condim", 3)), a)
            elif el.tag == "exclude":
                a = _Attr(ctx, el, where)
                pair = []
                for attr in ("body1", "body2"):
                    nm = a.raw(attr)
                    if nm is None or nm not in bodies:
                        raise a.err(f"{attr}={nm!r} is not a body of the model")
                    pair.append(nm)
                excluded.add(frozenset(pair))
    return explicit, excluded


def _collision_filter(P, geoms, weld, weld_parent, explicit, excluded):
    """collide_matrix(I, J): M[a, b] tells whether MuJoCo's collision detection considers geoms
    I[a] and J[b] (bit masks, same weld body, filterparent, <exclude>; <pair> always)."""
    filterparent = P.flags.get("filterparent", True)
    # per geom: its body, weld body and the weld body's parent as integers (0: the world)
    ids = {nm: k for k, nm in enumerate([_WORLD] + [bd.name for bd in P.bodies])}
    g_body = np.array([ids[g.body] for g in geoms], dtype=np.int64)
    g_weld = np.array([ids[weld[g.body]] for g in geoms], dtype=np.int64)
    g_wpar = np.array([ids[weld_parent(weld[g.body])] for g in geoms], dtype=np.int64)
    g_type = np.array([g.contype for g in geoms], dtype=np.int64)
    g_aff = np.array([g.conaffinity for g in geoms], dtype=np.int64)
    excl = [tuple(ids[nm] for nm in pair) * (2 if len(pair) == 1 else 1) for pair in excluded]
    expl = [tuple(pair) * (2 if len(pair) == 1 else 1) for pair in explicit]

    def collide_matrix(I, Jx):
        I, Jx = np.asarray(I, dtype=np.int64), np.asarray(Jx, dtype=np.int64)
        wi, wj = g_weld[I][:, None], g_weld[Jx][None, :]
        M = ((g_type[I][:, None] & g_aff[Jx][None, :]) | (g_type[Jx][None, :] & g_aff[I][:, None])) != 0
        M &= wi != wj
        if filterparent:
            M &= ~((wi != 0) & (wj != 0) & ((wi == g_wpar[Jx][None, :]) | (wj == g_wpar[I][:, None])))
        bi, bj = g_body[I][:, None], g_body[Jx][None, :]
        for b1, b2 in excl:
            M &= ~(((bi == b1) & (bj == b2)) | ((bi == b2) & (bj == b1)))
        for i, j in expl:
            M |= ((I[:, None] == i) & (Jx[None, :] == j)) | ((I[:, None] == j) & (Jx[None, :] == i))
        return M

    return collide_matrix


def _contact_geometry(P, b, root):
    """Sphere and plane geoms -> ``add_contact`` / ``add_plane`` (see the module docstring)."""
    source = P.ctx.source
    if not P.flags.get("contact", True) or not P.flags.get("constraint", True):
        return
    parent, weld, static, weld_parent = _welds(P)
    geoms = _read_geoms(P)
    for g in geoms:
        if g.type == "plane" and weld[g.body] != _WORLD:
            raise g.a.err("a plane is allowed only in static bodies (the world body, or bodies without joints "
                          "between them and the world), as in MuJoCo")

    # <contact>: explicit pairs and excluded body pairs
    by_name = {g.name: k for k, g in enumerate(geoms) if g.name}
    explicit, excluded = _contact_section(P, root, by_name, weld)
    collide_matrix = _collision_filter(P, geoms, weld, weld_parent, explicit, excluded)

    def mj_friction(i, j):
        """(sliding friction, condim) of MuJoCo's contact between geoms i and j."""
        key = frozenset((i, j))
        if key in explicit:
            fr, cd, _ = explicit[key]
        else:
            gi, gj = geoms[i], geoms[j]
            if gi.priority != gj.priority:
                g = gi if gi.priority > gj.priority else gj
                fr, cd = g.friction, g.condim
            else:
                fr, cd = max(gi.friction, gj.friction), max(gi.condim, gj.condim)
        return (0.0 if cd == 1 else fr), cd

    def own_friction(g):
        return 0.0 if g.condim == 1 else g.friction

    planes = [k for k, g in enumerate(geoms) if g.type == "plane"]
    spheres = [k for k, g in enumerate(geoms) if g.type == "sphere" and not static[g.body]]
    moving = [k for k, g in enumerate(geoms) if weld[g.body] != _WORLD]
    SP = collide_matrix(spheres, planes)
    used_s = [s for s, row in zip(spheres, SP) if row.any()]
    used_p = [p for p, row in zip(planes, collide_matrix(planes, moving)) if row.any()]
    SP = collide_matrix(used_s, used_p)

    names = set(by_name)
    for k in used_p:
        g = geoms[k]
        a = g.a
        if a.has("fromto"):
            raise a.err("fromto cannot be used with a plane")
        R, p = _pose(g.R, g.p, *a.pose())
        name = g.name or _unique("plane" if g.body == _WORLD else f"{g.body}_plane", names)
        try:
            b.add_plane(name, g.body, placement=(R, p), friction=own_friction(g))
        except ValueError as exc:
            raise a.err(str(exc)) from None
    counter = {}
    for k in used_s:
        g = geoms[k]
        a = g.a
        if a.has("fromto"):
            raise a.err("fromto cannot be used with a sphere")
        r = a.floats("size", 3, [0.0, 0.0, 0.0], min_n=1)[0]
        if r <= 0:
            raise a.err(f"a sphere needs a positive radius, got size='{a.raw('size')}'")
        _, p = _pose(g.R, g.p, *a.pose())
        if g.name is None:
            counter[g.body] = counter.get(g.body, -1) + 1
        name = g.name or _unique(f"{g.body}_contact{counter[g.body]}", names)
        try:
            b.add_contact(g.body, p, radius=r, friction=own_friction(g), name=name)
        except ValueError as exc:
            raise a.err(str(exc)) from None

    # what linkdyn does differently
    apart, differ, torsional = [], [], []
    for a_, s in enumerate(used_s):
        for b_, p in enumerate(used_p):
            pair = f"{geoms[s].label}/{geoms[p].label}"
            if not SP[a_, b_]:
                apart.append(pair)
                continue
            mu_mj, cd = mj_friction(s, p)
            mu_ld = math.sqrt(own_friction(geoms[s]) * own_friction(geoms[p]))
            if abs(mu_ld - mu_mj) > 1e-12 * max(1.0, mu_mj):
                differ.append(f"{pair} ({mu_ld:.4g} instead of {mu_mj:.4g})")
            if cd > 3:
                torsional.append(pair)
    if apart:
        _warn(f"{source}: linkdyn makes every contact sphere touch every plane; MuJoCo's collision filters "
              f"(contype/conaffinity, <exclude>) keep {len(apart)} of these sphere-plane pairs apart: {_shown(apart)}")
    if differ:
        _warn(f"{source}: the friction of {len(differ)} sphere-plane pair{'s' if len(differ) > 1 else ''} differs from "
              f"MuJoCo's (linkdyn: sqrt(mu_sphere mu_plane); MuJoCo: the larger one, the higher priority's or the "
              f"<pair>'s): {_shown(differ, 4)}")
    if torsional:
        _warn(f"{source}: torsional and rolling friction (condim 4, 6) are not modelled; {len(torsional)} "
              f"sphere-plane pair{'s' if len(torsional) > 1 else ''} get sliding friction only: {_shown(torsional)}")
    # geoms of other types (capsules, boxes, meshes, ...) are collision geometry (model.geom_*), which
    # the time step takes besides these point contacts (linkdyn.contact.geom_rows.point_pairs): nothing
    # to report
