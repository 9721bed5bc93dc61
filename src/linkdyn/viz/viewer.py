"""An interactive 3D viewer of recorded runs: one self-contained HTML page (three.js).

    v = linkdyn.viz.view(rec, props=[linkdyn.viz.bar(height=2.6)])
    v.save("run.html")          # opens offline from disk, in any browser with WebGL
    v                           # in Jupyter: the same page, inline (an iframe)

The page orbits, pans and zooms (mouse or touch), plays the run with a time slider, a
play/pause button and a speed choice, marks the events on the timeline (a click jumps to one),
and draws the ground, the scene props (bars, ropes, tethers), the contact forces as arrows, the
loop closures and the model's collision geometry: every geom (``model.geom_*``) and contact
plane (``model.planes``) on its body, translucent orange (a convex mesh geom as its hull's
triangles), shown or hidden by a checkbox of the legend (``#collision=0`` in the URL hides it at load).  The ground is where the physics has it:
the model's unbounded world plane with normal +z (the highest, if several) sets the height of
the page's grid and floor, whatever height a ``ground`` prop gives; without one, as before: the
prop's height, else a horizontal contact plane of the world, else the lowest point of the
scene.  Other unbounded planes are drawn as a finite grid in their own plane, near the scene.
``Viewer.data["collision"]`` and ``["ground"]`` say what is drawn.

Models loaded from URDF are drawn with their visual meshes (STL, DAE, OBJ, read with trimesh
when it is installed: ``pip install trimesh``, plus ``pycollada`` for DAE; a missing file or
reader falls back to the link's collision geometry, then to the figure below; only the files
the loader allowed, ``Visual.path``, inside the model's folder or the ``asset_dirs`` /
``package_dirs`` given, are read and put in a page); other models are drawn as a figure made of
the equivalent-inertia ellipsoid of each body (the uniform solid ellipsoid with the body's mass and
rotational inertia), capsules along the bones, a head with a nose where a ``head_top`` frame is
and a foot box from heel to toe, left limbs blue and right limbs red.

The page reads its start time from the URL (``run.html#t=1.5`` shows t = 1.5 s, paused) and
exposes ``window.linkdynViewer`` (``setTime(t)``, ``play()``, ``pause()``, ``ready``;
``ground()`` and ``collision()``: the heights and world poses three.js draws) for scripts.

Data are compact: per frame (about 30 per second of simulated time), the world pose of every
body, position and quaternion [x, y, z, w], as float32, base64; meshes as float32 vertices and
uint32 triangles.  The three.js library (MIT licence, its text in ``_static/three-LICENSE.txt``)
is inlined from ``_static/three-bundle.min.js``, built by ``viewer-js/`` in the source tree.
"""
from __future__ import annotations

import base64
import functools
import html as _html
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..model import joints as J
from ..model.io.urdf import _z_to
from .animate import _frames, _nice, frame_times
from .props import Tether, static_geometry
from .runs import event_label, impulse_size, need_models, run_data
from .skeleton import Skeleton, _side

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import os
    from collections.abc import Sequence


    from ..model.model import Model
    from ..recording import Trajectory
    from ..recording import Recording

_STATIC = Path(__file__).with_name("_static")
_SIDE_COLORS = {"l": "#2f6fdb", "r": "#d9412b", "": "#c9b8a6"}
_TRANSLATING = (J.PRISMATIC, J.CYLINDRICAL, J.PLANAR, J.FREE)
_TAB = {"tab:blue": "#1f77b4", "tab:orange": "#ff7f0e", "tab:green": "#2ca02c", "tab:red": "#d62728",
        "tab:purple": "#9467bd", "tab:brown": "#8c564b", "tab:pink": "#e377c2", "tab:gray": "#7f7f7f",
        "tab:olive": "#bcbd22", "tab:cyan": "#17becf", "black": "#000000", "white": "#ffffff", "k": "#000000",
        "gray": "#808080", "grey": "#808080", "red": "#ff0000", "green": "#008000", "blue": "#0000ff"}


@functools.lru_cache(maxsize=None)
def _static(name: str) -> str:
    return (_STATIC / name).read_text(encoding="utf-8")


def _b64(a, dtype) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype=dtype).tobytes()).decode("ascii")


def _color(c, default="#808080") -> str:
    """A CSS colour from a matplotlib-style colour: "0.35" (grey level), "#rrggbb", a name, RGB(A) floats."""
    if c is None:
        return default
    if isinstance(c, str):
        s = c.strip()
        if s.startswith("#") and len(s) in (4, 7, 9):
            return s[:7]
        try:
            g = float(s)
            if 0.0 <= g <= 1.0:
                v = int(round(255 * g))
                return f"#{v:02x}{v:02x}{v:02x}"
        except ValueError:
            pass
        if s in _TAB:
            return _TAB[s]
        try:
            from matplotlib.colors import to_hex
            return to_hex(s)
        except Exception:
            return default
    try:
        x = np.clip(np.asarray(c, dtype=float).reshape(-1)[:3], 0.0, 1.0)
        return "#" + "".join(f"{int(round(255 * v)):02x}" for v in x)
    except (TypeError, ValueError):
        return default


def _quat(R) -> np.ndarray:
    """Quaternions [x, y, z, w] of rotation matrices (..., 3, 3)."""
    from scipy.spatial.transform import Rotation
    R = np.asarray(R, dtype=float)
    return Rotation.from_matrix(R.reshape(-1, 3, 3)).as_quat().reshape(R.shape[:-2] + (4,))


# ---------------------------------------------------------------------------------------
# meshes
def simplify_mesh(V, F, budget: int):
    """(vertices, triangles) with at most about ``budget`` triangles: duplicate vertices merged,
    then vertex clustering on a grid (Rossignac and Borrel 1993) whose cell grows until the
    budget is met; degenerate and repeated triangles are dropped."""
    V = np.asarray(V, dtype=float).reshape(-1, 3)
    F = np.asarray(F, dtype=np.int64).reshape(-1, 3)
    if len(V) == 0 or len(F) == 0:
        return np.zeros((0, 3)), np.zeros((0, 3), np.int64)
    lo, hi = V.min(axis=0), V.max(axis=0)
    diag = float(np.linalg.norm(hi - lo)) or 1.0

    def cluster(cell):
        key = np.floor((V - lo) / cell).astype(np.int64)
        _, inv = np.unique(key, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        G = inv[F]
        G = G[(G[:, 0] != G[:, 1]) & (G[:, 1] != G[:, 2]) & (G[:, 0] != G[:, 2])]
        if len(G):
            s = np.sort(G, axis=1)
            _, first = np.unique(s, axis=0, return_index=True)
            G = G[np.sort(first)]
        n = inv.max() + 1
        cnt = np.bincount(inv, minlength=n).astype(float)
        W = np.stack([np.bincount(inv, weights=V[:, k], minlength=n) for k in range(3)], axis=1) / cnt[:, None]
        used = np.unique(G)
        remap = np.full(n, -1, np.int64)
        remap[used] = np.arange(len(used))
        return W[used], remap[G]

    V1, F1 = cluster(diag * 1e-6)          # merge duplicates only
    if len(F1) <= budget:
        return V1, F1
    cell = diag / np.sqrt(max(budget, 4)) * 0.6
    for _ in range(30):
        V2, F2 = cluster(cell)
        if len(F2) <= budget:
            return V2, F2
        cell *= 1.25
    return V2, F2


@functools.lru_cache(maxsize=1)
def _sidecar_resolver(trimesh):
    """trimesh's file resolver, kept to the mesh's own folder: the files a mesh names (an OBJ's
    materials, a DAE's textures) are read only from there, links resolved (``_files.confine``;
    trimesh 4's resolver follows ``../``)."""
    from ..model.io._files import confine, read_model_file

    class MeshFolder(trimesh.resolvers.FilePathResolver):
        def get(self, name):
            folder = Path(self.parent).resolve()
            return read_model_file(confine(folder / name.strip(), (folder,), ValueError, "file a mesh names"),
                                   ValueError, what="file a mesh names")

        def namespaced(self, namespace):
            return MeshFolder(str(Path(self.parent) / namespace))
    return MeshFolder


@functools.lru_cache(maxsize=64)
def _read_mesh(path: str, mtime: float):
    """[(vertices, triangles, colour or None)] of a mesh file, one entry per colour (trimesh)."""
    import io

    import trimesh

    from ..model.io._files import read_model_file
    data = read_model_file(path, ValueError, what="mesh file")      # a regular file, a bounded read
    obj = trimesh.load(io.BytesIO(data), file_type=Path(path).suffix.lstrip(".").lower(), process=False,
                       resolver=_sidecar_resolver(trimesh)(path))
    parts = []
    if isinstance(obj, trimesh.Scene):
        for node in obj.graph.nodes_geometry:
            T, gname = obj.graph[node]
            g = obj.geometry[gname]
            if not hasattr(g, "faces") or len(g.faces) == 0:
                continue
            V = trimesh.transform_points(np.asarray(g.vertices), T)
            parts.append((V, np.asarray(g.faces), _mesh_color(g)))
    elif hasattr(obj, "faces"):
        parts.append((np.asarray(obj.vertices), np.asarray(obj.faces), _mesh_color(obj)))
    by_color = {}
    for V, F, c in parts:
        by_color.setdefault(c, []).append((V, F))
    out = []
    for c, items in by_color.items():
        off = np.cumsum([0] + [len(V) for V, _ in items])
        out.append((np.concatenate([V for V, _ in items]), np.concatenate([F + o for (_, F), o in zip(items, off)]),
                    c))
    return out


def _mesh_color(g):
    try:
        mat = getattr(g.visual, "material", None)
        c = getattr(mat, "main_color", None)
        if c is None:
            c = getattr(mat, "diffuse", None)
        if c is None and getattr(g.visual, "kind", None) in ("face", "vertex"):
            c = np.asarray(g.visual.face_colors).reshape(-1, 4).mean(axis=0)
        if c is None:
            return None
        c = np.asarray(c, dtype=float).reshape(-1)[:3]
        return "#" + "".join(f"{int(v):02x}" for v in np.clip(c, 0, 255))
    except Exception:
        return None


# ---------------------------------------------------------------------------------------
# what to draw on each body
class _Scene:
    """Shapes (static geometry in body frames) and meshes, gathered while building a page."""

    def __init__(self, names, max_triangles):
        self.index = {n: k for k, n in enumerate(names)}
        self.shapes, self.meshes, self._mesh_keys, self.mesh_box = [], [], {}, []
        self.max_triangles = max_triangles
        self.triangles = 0
        self.notes = []

    def add(self, body, kind, size, R=None, p=None, color="#999999", mesh=None, opacity=1.0):
        q = [0.0, 0.0, 0.0, 1.0] if R is None else _quat(R).tolist()
        self.shapes.append({"b": body, "k": kind, "s": [round(float(x), 6) for x in size],
                            "p": [0.0] * 3 if p is None else [round(float(x), 6) for x in p],
                            "q": [round(float(x), 7) for x in q], "c": color, "m": mesh, "o": opacity})


def _corners(sc: _Scene, shape) -> np.ndarray:
    """(8, 3) corners of a box around a shape, in its body's frame."""
    s = np.asarray(shape["s"], dtype=float)
    k = shape["k"]
    if k == "mesh":
        lo, hi = sc.mesh_box[shape["m"]]
        lo, hi = lo * s, hi * s
    elif k == "box":
        lo, hi = -0.5 * s, 0.5 * s
    elif k in ("sphere",):
        lo, hi = -s[0] * np.ones(3), s[0] * np.ones(3)
    elif k == "ellipsoid":
        lo, hi = -s, s
    elif k in ("capsule", "cylinder", "cone"):
        h = 0.5 * s[1] + (s[0] if k == "capsule" else 0.0)
        lo, hi = np.array([-s[0], -s[0], -h]), np.array([s[0], s[0], h])
    else:
        lo, hi = np.zeros(3), np.zeros(3)
    box = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    from scipy.spatial.transform import Rotation
    return Rotation.from_quat(shape["q"]).apply(box) + np.asarray(shape["p"])


def _frame_in_body(model, frame):
    """(body index, R, p) of a frame of the model, or None."""
    names = model.frame_names
    if frame not in names:
        return None
    k = names.index(frame)
    return int(model.frame_body[k]), np.asarray(model.frame_R[k]), np.asarray(model.frame_p[k])


def _visual_shapes(sc: _Scene, model, budget_each: int) -> bool:
    """Shapes for the model's visuals (URDF / MJCF): meshes and primitives, the collision
    geometry of a frame when its visual meshes cannot be read.  False when nothing is drawn."""
    visuals = tuple(getattr(model, "visuals", ()) or ())
    if not visuals:
        return False
    by_frame = {}
    for v in visuals:
        by_frame.setdefault(v.frame, {"visual": [], "collision": []})[v.role if v.role == "collision" else "visual"] \
            .append(v)
    drawn = 0
    palette = ["#d8d8dc", "#b9bec7", "#9aa3ad"]
    for fi, (frame, roles) in enumerate(by_frame.items()):
        where = _frame_in_body(model, frame)
        if where is None:
            continue
        b, Rf, pf = where
        body = -1 if b == 0 else sc.index.get(model.body_names[b])
        if body is None:
            continue
        for role in ("visual", "collision"):
            items = [x for v in roles[role] for x in _visual_shape(sc, v, budget_each)]
            if items:
                for kind, size, R, p, color, mesh in items:
                    color = color or palette[fi % len(palette)]
                    sc.add(body, kind, size, Rf @ R, pf + Rf @ p, color, mesh)
                    drawn += 1
                break
    return drawn > 0


def _visual_shape(sc: _Scene, v, budget):
    """[(kind, size, R, p, colour, mesh index)] for one visual: one entry per coloured part of a
    mesh, one for a primitive, none when it cannot be drawn."""
    color = None if v.rgba is None else _color(v.rgba[:3])
    if v.kind == "mesh":
        return [("mesh", list(v.scale), v.R, v.p, color or mcolor, mid) for mid, mcolor in _mesh(sc, v, budget)]
    if v.kind in ("box", "cylinder", "sphere", "capsule", "ellipsoid"):
        return [(v.kind, list(v.size), v.R, v.p, color, None)]
    return []


def _mesh(sc: _Scene, v, budget):
    """[(mesh index, colour)] of a mesh visual, or [] when it cannot be read."""
    path = getattr(v, "path", None)     # set by the loader, only for a file it was allowed to read
    if path is None:
        sc.notes.append(f"mesh not found or refused: {v.filename}")
        return []
    path = Path(path)
    key = (str(path), budget)
    if key in sc._mesh_keys:
        return sc._mesh_keys[key]
    if sc.triangles >= sc.max_triangles:
        return []
    try:
        parts = _read_mesh(str(path), path.stat().st_mtime)
    except ImportError:
        sc.notes.append("trimesh is not installed (pip install trimesh pycollada): meshes drawn as simple shapes")
        sc._mesh_keys[key] = []
        return []
    except Exception as exc:         # a reader missing for this format, a broken file
        sc.notes.append(f"mesh {path.name} not read ({type(exc).__name__}: {exc})")
        sc._mesh_keys[key] = []
        return []
    out = []
    total = sum(len(F) for _, F, _ in parts) or 1
    for V, F, c in parts:
        V2, F2 = simplify_mesh(V, F, max(64, int(budget * len(F) / total)))
        if len(F2) == 0:
            continue
        sc.meshes.append({"v": _b64(V2, "<f4"), "i": _b64(F2, "<u4"), "nv": len(V2), "nt": len(F2)})
        sc.mesh_box.append((V2.min(axis=0), V2.max(axis=0)))
        sc.triangles += len(F2)
        out.append((len(sc.meshes) - 1, c))
    sc._mesh_keys[key] = out
    return out


def _figure_shapes(sc: _Scene, model):
    """A figure for a model without visuals: equivalent-inertia ellipsoids, bone capsules,
    joint spheres, a head with a nose and foot boxes (see the module docstring)."""
    from ..spatial import inertia_parameters
    sk = Skeleton(model)
    bn = model.body_names
    virtual = np.asarray(model.is_virtual, dtype=bool)
    lengths = [float(np.linalg.norm(model.p_tree[b])) for _, b in sk.bones]
    lengths += [float(np.linalg.norm(o)) for o in sk.end_offsets]
    lengths = [x for x in lengths if x > 1e-6]
    scale = float(np.median(lengths)) if lengths else 0.3
    r_bone = float(np.clip(0.07 * scale, 0.004, 0.05))

    def body_id(b):
        return -1 if b == 0 else sc.index.get(bn[b])

    def capsule(b, a, c, radius, color):
        d = np.asarray(c, float) - np.asarray(a, float)
        L = float(np.linalg.norm(d))
        if L < 1e-6 or body_id(b) is None:
            return
        sc.add(body_id(b), "capsule", [radius, L], _z_to(d / L), 0.5 * (np.asarray(a) + np.asarray(c)), color)

    limbs = {}                  # body -> [(start, end, colour)] in its frame

    def limb(b, a, c, side):
        if body_id(b) is not None and np.linalg.norm(np.asarray(c) - np.asarray(a)) > 1e-6:
            limbs.setdefault(b, []).append((np.asarray(a, float), np.asarray(c, float), side))

    for a, b in sk.bones:
        if model.jnt_type[b] in _TRANSLATING:
            continue
        side = _side(bn[b]) if a and _side(bn[a]) == _side(bn[b]) else ""
        limb(a, np.zeros(3), model.p_tree[b], side)
    # frames: feet (heel and toe on one body), heads
    frames = {}
    for k, name in enumerate(model.frame_names):
        frames.setdefault(int(model.frame_body[k]), {})[name] = np.asarray(model.frame_p[k], dtype=float)
    front = np.array([1.0, 0.0, 0.0])
    feet, heads, head_r = {}, {}, {}
    for b, fr in frames.items():
        heel = next((p for n, p in fr.items() if "heel" in n.lower()), None)
        toe = next((p for n, p in fr.items() if "toe" in n.lower()), None)
        if heel is not None and toe is not None and np.linalg.norm(toe - heel) > 1e-3:
            feet[b] = (heel, toe)
            d = toe - heel
            front = d / np.linalg.norm(d)
    # box geoms on bodies (a seat): drawn as solids below; the frames on or in one mark places on
    # it, not limbs (only the one nearest the body's origin is drawn: what holds the box)
    from ..model.geometry import BOX
    boxes = {}
    for g in range(int(getattr(model, "ngeom", 0) or 0)):
        if int(model.geom_type[g]) == BOX and int(model.geom_body[g]) != 0:
            boxes.setdefault(int(model.geom_body[g]), []).append(g)

    def on_box(b, p):
        for g in boxes.get(b, ()):
            local = np.asarray(model.geom_R[g]).T @ (np.asarray(p) - np.asarray(model.geom_pos[g]))
            if np.all(np.abs(local) <= np.asarray(model.geom_size[g]) + 1e-9):
                return True
        return False
    held = {}
    for k, (b, off) in enumerate(zip(sk.ends, sk.end_offsets)):
        if on_box(b, off) and (b not in held or np.linalg.norm(off) < np.linalg.norm(sk.end_offsets[held[b]])):
            held[b] = k
    for k, (b, off, name) in enumerate(zip(sk.ends, sk.end_offsets, sk.end_names)):
        low = name.lower()
        # left and right are the figure's: a body hung from the world (a rope) is neither
        side = _side(name) if _side(name) == _side(bn[b]) and model.parent[b] != 0 else ""
        if b in feet and any(w in low for w in ("heel", "toe", "sole", "foot", "ankle")):
            continue
        if on_box(b, off) and k != held[b]:
            continue
        if "head" in low:
            heads[b] = (off, side)
            continue
        limb(b, np.zeros(3), off, side)
    for b, (off, side) in heads.items():
        if body_id(b) is None:
            continue
        L = float(np.linalg.norm(off))
        only = not limbs.get(b)                       # a head of its own: as heavy as the body
        m = float(np.trace(np.asarray(model.inertia[b])[:3, :3]) / 3.0)
        r = float(np.clip((3.0 * m / (4.0 * np.pi * 1000.0)) ** (1.0 / 3.0) if only and m > 0 else 0.1, 0.06, 0.13))
        r = min(r, 0.5 * L) if L > 0 else r
        head_r[b] = r
        up = off / max(L, 1e-9)
        centre = off - r * up
        fwd = front - (front @ up) * up
        fwd = fwd / np.linalg.norm(fwd) if np.linalg.norm(fwd) > 1e-6 else np.array([1.0, 0.0, 0.0])
        neck_from = np.zeros(3) if only else centre - 2.2 * r * up
        capsule(b, neck_from, centre - 0.5 * r * up, 0.45 * r, "#e3c4a3")           # the neck
        sc.add(body_id(b), "sphere", [r], None, centre, "#e8c9a8")
        sc.add(body_id(b), "cone", [0.22 * r, 0.5 * r], _z_to(fwd), centre + 1.1 * r * fwd, "#d9412b")   # the nose
        for s_ in (-1.0, 1.0):        # eyes
            e = centre + 0.8 * r * fwd + 0.38 * r * np.cross(up, fwd) * s_ + 0.3 * r * up
            sc.add(body_id(b), "sphere", [0.13 * r], None, e, "#222222")
    for b, (heel, toe) in feet.items():
        if body_id(b) is None:
            continue
        side = _side(bn[b])
        L = float(np.linalg.norm(toe - heel))
        x = (toe - heel) / L
        up = np.array([0.0, 0.0, 1.0]) - (x @ [0.0, 0.0, 1.0]) * x
        up = up / np.linalg.norm(up) if np.linalg.norm(up) > 1e-6 else np.array([0.0, 1.0, 0.0])
        R = np.stack([x, np.cross(up, x), up], axis=1)
        h = 0.22 * L
        sc.add(body_id(b), "box", [L, 0.38 * L, h], R, 0.5 * (heel + toe) + 0.5 * h * up,
               {"l": "#1d4fb0", "r": "#b3261e"}.get(side, "#555555"))
        limb(b, np.zeros(3), heel + 0.25 * L * x + h * up, side)           # the shin, down to the ankle
    # bodies: one limb -> a capsule as heavy as the body (density of water); otherwise the
    # equivalent-inertia ellipsoid and thin bones; a sphere at every joint
    for b in range(1, model.nbody):
        if virtual[b] or body_id(b) is None:
            continue
        side = _side(bn[b]) if model.parent[b] != 0 else ""
        I6 = np.asarray(model.inertia[b])
        m = float(np.trace(I6[:3, :3]) / 3.0)
        mine = limbs.get(b, [])
        color = _SIDE_COLORS[side] if side else "#d8c3ad"
        for g in boxes.get(b, ()):                 # a seat: a wooden box where its geom is
            sc.add(body_id(b), "box", [2.0 * x for x in model.geom_size[g]], np.asarray(model.geom_R[g]),
                   np.asarray(model.geom_pos[g]), "#9c6b3c")
        if len(mine) == 1 and m > 1e-9:
            a, c, sd = mine[0]
            L = float(np.linalg.norm(c - a))
            r = float(np.clip(np.sqrt(m / (1000.0 * np.pi * L)), r_bone, 0.3 * L))
            capsule(b, a, c, r, _soften(_SIDE_COLORS[sd]) if sd else _soften("#c9b8a6"))
        else:
            for a, c, sd in mine:          # connectors (inside the body's ellipsoid, or ropes)
                capsule(b, a, c, 0.5 * r_bone, _SIDE_COLORS[sd] if sd else "#8d8d95")
            if m > 1e-9 and not (b in heads and not mine):
                _, com, Ic = inertia_parameters(I6)
                w, E = np.linalg.eigh(0.5 * (Ic + Ic.T))
                sq = 2.5 / m * (w.sum() - 2.0 * w)           # a^2 = 5 / (2 m) (I_b + I_c - I_a)
                axes = np.sqrt(np.clip(sq, (0.25 * r_bone) ** 2, None))
                if np.linalg.det(E) < 0:
                    E[:, 0] = -E[:, 0]
                if m / (4.0 / 3.0 * np.pi * np.prod(axes)) < 100.0:
                    axes = None         # mass far apart (a seat on a rope): no solid says what it is
                elif b in heads:                 # a trunk that carries the head: ends below the chin
                    off = heads[b][0]
                    up = off / max(float(np.linalg.norm(off)), 1e-9)
                    k = int(np.argmax(np.abs(E.T @ up)))
                    top = float(com @ up) + float(np.sqrt(np.sum((axes * (E.T @ up)) ** 2)))
                    chin = float(off @ up) - 2.0 * head_r.get(b, 0.1)
                    if top > chin > float(com @ up):
                        axes[k] *= max(0.5, 1.0 - (top - chin) / (axes[k] * abs(E[:, k] @ up) + 1e-12))
                if axes is not None:
                    sc.add(body_id(b), "ellipsoid", axes, E, com, _soften(color))
        sc.add(body_id(b), "sphere", [1.2 * r_bone], None, np.zeros(3), "#4a4a52")
    for a, c, sd in limbs.get(0, []):           # bones fixed to the world
        capsule(0, a, c, r_bone, "#8d8d95")
    for pl in getattr(model, "planes", ()):      # bounded planes on bodies (a seat): thin slabs under them
        if pl.body != 0 and pl.extent is not None and body_id(pl.body) is not None:
            h = 0.2 * float(min(pl.extent))
            sc.add(body_id(pl.body), "box", [2.0 * pl.extent[0], 2.0 * pl.extent[1], h], pl.R,
                   np.asarray(pl.p) - 0.5 * h * np.asarray(pl.R)[:, 2], "#9c6b3c")


# ---------------------------------------------------------------------------------------
# collision geometry: the model's geoms and contact planes, where the physics has them
def _geom_size(kind: str, size) -> list:
    """The page's size of a geom (full lengths, as the page's shapes) from its half sizes."""
    r, h, c = (float(x) for x in size)
    return {"sphere": [r], "capsule": [r, 2.0 * h], "cylinder": [r, 2.0 * h], "box": [2.0 * r, 2.0 * h, 2.0 * c],
            "ellipsoid": [r, h, c]}.get(kind, [])


def _is_ground(item) -> bool:
    """An unbounded plane of the world whose normal is +z: the ground."""
    if item["k"] != "plane" or item["b"] != -1 or item["ext"] is not None:
        return False
    from scipy.spatial.transform import Rotation
    return float(Rotation.from_quat(item["q"]).as_matrix()[2, 2]) > 1.0 - 1e-9


def collision_items(models, index) -> list:
    """What the page draws as collision geometry: one dict per geom (``model.geom_*``) and per
    contact plane (``model.planes``) of ``models`` (each once, by kind and name, from the first
    model that has it) on a drawn body (``index``: body name -> page body; the world is -1).
    ``k`` the shape (a :mod:`linkdyn.model.geometry` name), ``s`` its size as the page draws it
    (full lengths: a box's edges, a capsule's or cylinder's radius and segment length; a bounded
    plane's two edges), ``p``, ``q`` (position, quaternion [x, y, z, w]) in the body frame,
    ``ext`` a plane's half sizes (None: unbounded), ``ground`` whether it is the ground (an
    unbounded world plane with normal +z); a mesh geom's ``v`` its convex hull's vertices in the
    geom frame (rounded to 1e-6 m) and ``t`` the hull's triangles (rows of ``v``, counter-clockwise
    seen from outside), which the page draws.  Positions are exact (float64, not rounded)."""
    from ..model.geometry import SHAPE_NAMES
    items, seen = [], set()
    for m in models:
        bn = m.body_names

        def body_id(b):
            return -1 if b == 0 else index.get(bn[b])
        for g in range(int(getattr(m, "ngeom", 0) or 0)):
            b, name = int(m.geom_body[g]), m.geom_names[g]
            kind = SHAPE_NAMES.get(int(m.geom_type[g]))
            if kind is None or body_id(b) is None or ("geom", name) in seen:
                continue
            seen.add(("geom", name))
            item = {"name": name, "src": "geom", "b": body_id(b), "body": bn[b], "k": kind,
                    "s": _geom_size(kind, m.geom_size[g]), "p": [float(x) for x in m.geom_pos[g]],
                    "q": _quat(m.geom_R[g]).tolist(), "ext": None}
            if kind == "mesh":             # its convex hull: vertices in the geom frame and triangles
                a, n = int(m.geom_vert_adr[g]), int(m.geom_vert_num[g])
                V = np.asarray(m.geom_verts[a:a + n], dtype=float)
                item["v"] = np.round(V, 6).tolist()
                item["t"] = _hull_triangles(V)
            items.append(item)
        for pl in getattr(m, "planes", ()):
            if body_id(pl.body) is None or ("plane", pl.name) in seen:
                continue
            seen.add(("plane", pl.name))
            ext = None if pl.extent is None else [float(x) for x in pl.extent]
            items.append({"name": pl.name, "src": "plane", "b": body_id(pl.body), "body": bn[pl.body], "k": "plane",
                          "s": [] if ext is None else [2.0 * ext[0], 2.0 * ext[1]],
                          "p": [float(x) for x in pl.p], "q": _quat(pl.R).tolist(), "ext": ext})
    for it in items:
        it["ground"] = _is_ground(it)
    return items


def _hull_triangles(V) -> list:
    """The triangles [[i, j, k], ...] (rows of ``V``, counter-clockwise seen from outside) of the
    convex hull of the points ``V`` (n, 3), the shape a convex mesh geom collides as
    (scipy.spatial.ConvexHull, Barber, Dobkin and Huhdanpaa 1996, qhull); [] when the points
    span no volume (a flat or degenerate set: the page then draws its points' extents only)."""
    from scipy.spatial import ConvexHull, QhullError
    V = np.asarray(V, dtype=float).reshape(-1, 3)
    if len(V) < 4:
        return []
    try:
        hull = ConvexHull(V)
    except (QhullError, ValueError):
        return []
    tri = np.array(hull.simplices, dtype=np.int64)
    a, b, c = V[tri[:, 0]], V[tri[:, 1]], V[tri[:, 2]]
    flip = np.einsum("ij,ij->i", np.cross(b - a, c - a), hull.equations[:, :3]) < 0.0     # outward normals
    tri[flip] = tri[flip][:, [0, 2, 1]]
    return tri.tolist()


def _item_corners(item) -> np.ndarray:
    """(n, 3) points around a collision item in its body frame (none for an unbounded plane)."""
    if item["k"] == "plane":
        if item["ext"] is None:
            return np.zeros((0, 3))
        hx, hy = item["ext"]
        loc = np.array([[x, y, 0.0] for x in (-hx, hx) for y in (-hy, hy)])
        from scipy.spatial.transform import Rotation
        return Rotation.from_quat(item["q"]).apply(loc) + np.asarray(item["p"])
    if item["k"] == "mesh":
        from scipy.spatial.transform import Rotation
        return Rotation.from_quat(item["q"]).apply(np.asarray(item["v"], dtype=float).reshape(-1, 3)) + np.asarray(item["p"])
    return _corners(None, {"k": item["k"], "s": item["s"], "q": item["q"], "p": item["p"]})


def _swept(c, body, poses) -> np.ndarray:
    """Points ``c`` (n, 3) of a body's frame in world coordinates at every frame where the body is
    drawn (``body`` -1: the world, ``c`` as it is)."""
    if body < 0 or not len(c):
        return c
    pq = poses[:, body]
    ok = np.isfinite(pq).all(axis=1)
    if not ok.any():
        return np.zeros((0, 3))
    from scipy.spatial.transform import Rotation
    rot = Rotation.from_quat(np.repeat(pq[ok, 3:], len(c), axis=0))
    return rot.apply(np.tile(c, (int(ok.sum()), 1))) + np.repeat(pq[ok, :3], len(c), axis=0)


def _plane_grid(item, lo, hi, spacing) -> dict:
    """Where the page draws an unbounded plane (not the ground): a square grid in the plane's
    frame, centred on the point of the plane nearest the middle of the scene (world planes)
    or on the plane's origin (planes on bodies), as wide as the scene."""
    from scipy.spatial.transform import Rotation
    half = float(np.ceil(0.6 * float(np.max(hi - lo)) / spacing) * spacing)
    c = np.zeros(2)
    if item["b"] == -1:
        R = Rotation.from_quat(item["q"]).as_matrix()
        loc = R.T @ (0.5 * (lo + hi) - np.asarray(item["p"]))
        c = np.round(loc[:2] / spacing) * spacing
    return {"c": c.tolist(), "h": half, "step": spacing}


def _soften(color: str) -> str:
    """A lighter tint of a colour (the body bulk, under its bones)."""
    c = np.array([int(color[k:k + 2], 16) for k in (1, 3, 5)], dtype=float)
    c = c + 0.45 * (255 - c)
    return "#" + "".join(f"{int(v):02x}" for v in c)


def _add_ghost(ghost, names, poses, times, opacity, label):
    """(names, poses, info) with a second figure's bodies appended as ``"ghost:" + name``: its
    world poses at each page frame (the sample nearest in time)."""
    from .skeleton import Skeleton as _Sk
    try:
        gm, gt, gq = ghost
    except (TypeError, ValueError):
        raise TypeError("ghost: expected (model, t, q)") from None
    gt = np.asarray(gt, dtype=float).reshape(-1)
    gq = np.asarray(gq, dtype=float)
    if gq.ndim != 2 or gq.shape != (len(gt), gm.nq) or len(gt) == 0:
        raise ValueError(f"ghost: q must have shape (len(t), {gm.nq}) = ({len(gt)}, {gm.nq}), got {gq.shape}")
    if not (np.isfinite(gq).all() and np.isfinite(gt).all()) or np.any(np.diff(gt) < 0):
        raise ValueError("ghost: t must be finite and non-decreasing and q finite")
    if not (0.0 < float(opacity) <= 1.0):
        raise ValueError(f"ghost_opacity: expected a number in (0, 1], got {opacity!r}")
    i = np.clip(np.searchsorted(gt, times), 1, max(len(gt) - 1, 1))
    k = np.where(np.abs(gt[i - 1] - times) <= np.abs(gt[np.minimum(i, len(gt) - 1)] - times), i - 1,
                 np.minimum(i, len(gt) - 1)) if len(gt) > 1 else np.zeros(len(times), int)
    bods = [b for b in range(1, gm.nbody) if not gm.is_virtual[b]]
    kin = _Sk(gm).kinematics(gq[k])
    gp = np.concatenate([kin.p[:, bods, :], _quat(kin.R[:, bods, :, :])], axis=2)
    first = len(names)
    names = list(names) + [f"ghost:{gm.body_names[b]}" for b in bods]
    poses = np.concatenate([poses, gp], axis=1)
    info = {"first": first, "bodies": list(range(first, len(names))), "opacity": float(opacity),
            "color": "#8c8c8c", "label": str(label), "model": gm}
    return names, poses, info


# ---------------------------------------------------------------------------------------
@dataclass
class Viewer:
    """A run prepared for the browser (:func:`view`): :meth:`html` is the page, :meth:`save`
    writes it, and in Jupyter the object shows itself (an iframe of the page).  ``data`` is what
    the page reads; ``times`` (nframes,) the simulated time of each frame, ``segment`` and
    ``sample`` the recorded sample each frame shows, ``bodies`` the names of the bodies whose
    poses ``data["poses"]`` holds, ``seconds`` the time it took to prepare."""
    data: dict
    times: np.ndarray
    segment: np.ndarray
    sample: np.ndarray
    bodies: tuple
    seconds: float
    height: int = 560

    def html(self) -> str:
        """The self-contained page (three.js and the data inlined)."""
        payload = json.dumps(self.data, separators=(",", ":")).replace("<", "\\u003c")   # nothing ends the script
        head, rest = _static("viewer.html").split("__LINKDYN_TITLE__", 1)
        mid, rest = rest.split("/*__LINKDYN_THREE__*/", 1)
        mid2, tail = rest.split("__LINKDYN_DATA__", 1)
        three = _static("three-bundle.min.js").replace("</script", "<\\/script")
        return "".join([head, _html.escape(self.data["title"]), mid, three, mid2, payload, tail])

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the page to ``path`` (``.html`` added when it has no suffix); returns the path."""
        path = Path(path)
        if not path.suffix:
            path = path.with_suffix(".html")
        path.write_text(self.html(), encoding="utf-8")
        return path

    def _repr_html_(self) -> str:
        doc = _html.escape(self.html(), quote=True)
        return (f'<iframe srcdoc="{doc}" style="width:100%;height:{int(self.height)}px;border:1px solid #ddd;'
                f'border-radius:4px" sandbox="allow-scripts" allow="fullscreen"></iframe>')

    def __repr__(self):
        return (f"<linkdyn Viewer {self.data['title']!r}: {len(self.times)} frames, {len(self.bodies)} bodies, "
                f"{len(self.data['events'])} events>")


def view(run: Recording | Trajectory, model: Model | None = None, props: Sequence = (), *, title: str | None = None, fps: float = 30.0, every: float | None = None,
         meshes: bool = True, max_triangles: int = 150_000, forces: bool = True, height: int = 560,
         camera: Sequence[float] | None = None, ghost: tuple | None = None, ghost_opacity: float = 0.3,
         ghost_label: str = "ghost") -> Viewer:
    """An interactive 3D view of a recorded run (see the module docstring): returns a
    :class:`Viewer`; ``.save("run.html")`` writes the page, in Jupyter it shows inline.

    ``run``: a :class:`~linkdyn.recording.Recording`, or a Trajectory from
    :func:`linkdyn.sim.simulate` with ``model=`` the model it ran; a Recording's segments bring
    their own models, and ``model`` (if given) then only supplies the visual geometry
    (``model.visuals``, from :func:`linkdyn.load_urdf`).  ``props``: scene props, anything
    :func:`~linkdyn.viz.static_geometry` takes (``bar``, ``ground``, ``ropes``, ``tether``).
    ``fps``: frames stored per second of playback, ``every``: simulated seconds between frames
    (default ``1 / fps``: real time); the page interpolates between frames.  ``meshes``: draw
    URDF/MJCF visual geometry (False: the figure of ellipsoids and capsules), within about
    ``max_triangles`` triangles in all.  ``forces``: draw contact forces as arrows (a point contact's
    force on its point; a geom contact's, ``Segment.geom_contacts``, the force on its geom 2 at
    the contact point, e.g. the ground's on a foot).
    ``camera``: the direction (x, y, z, world) from the middle of the motion towards the camera of
    the page's home view (default (0.78, -1, 0.42): from the front right, +x being the front of
    the figures, above); the camera stands as close as it can with the whole motion in view.
    ``ghost``: ``(model, t, q)``, a second figure drawn translucent (``ghost_opacity``, grey)
    beside the run, e.g. a captured motion behind the simulation that tracks it; at each frame
    of the page it shows its sample nearest in time.  Its bodies are ``"ghost:" + name`` in
    ``Viewer.bodies`` and ``data["poses"]``; ``data["ghost"]`` lists them, and the page's legend
    has a checkbox (``ghost_label``) that shows or hides it.
    """
    clock = time.perf_counter()
    if not (fps > 0 and np.isfinite(fps)):
        raise ValueError(f"fps: expected a positive number, got {fps!r}")
    props = static_geometry(*props) if isinstance(props, (list, tuple)) else static_geometry(props)
    if camera is not None:
        camera = np.asarray(camera, dtype=float)
        if camera.shape != (3,) or not np.isfinite(camera).all() or not np.linalg.norm(camera) > 0:
            raise ValueError(f"camera: expected a non-zero direction (x, y, z), got {camera!r}")
        camera = (camera / np.linalg.norm(camera)).tolist()
    segs, events = run_data(run, model)
    need_models(segs, model)            # a run read back from a file: its model must be given
    every = 1.0 / fps if every is None else float(every)
    t0, t1 = float(segs[0].t[0]), float(segs[-1].t[-1])
    times = frame_times(t0, t1, every)
    if times[-1] < t1 - 1e-9:
        times = np.append(times, t1)
    seg_of, local = _frames(segs, times)
    nf = len(times)

    # bodies: the real bodies of every segment's model, by name, in order of appearance
    names = []
    for s in segs:
        m = s.model
        for b in range(1, m.nbody):
            if not m.is_virtual[b] and m.body_names[b] not in names:
                names.append(m.body_names[b])
    index = {n: k for k, n in enumerate(names)}
    nb = len(names)
    poses = np.full((nf, nb, 7), np.nan)
    tethers = [p for p in props if isinstance(p, Tether)]
    teth = np.full((nf, len(tethers), 3), np.nan)
    nloops = max(s.model.nloops for s in segs)
    loop_pts = np.full((nf, nloops, 3), np.nan)
    npoint = max(len(s.unit_names) for s in segs)
    # the geom contacts' arrows after the point contacts' slots: as many as the most any drawn frame has
    ngc = 0
    if forces:
        for k in np.unique(seg_of):
            s = segs[k]
            if s.geom_offset is not None:
                ngc = max(ngc, int(np.diff(s.geom_offset)[local[seg_of == k]].max(initial=0)))
    nunits = npoint + ngc
    arrows = np.zeros((nf, nunits, 6))
    force_max = 0.0
    for k in np.unique(seg_of):
        s = segs[k]
        m = s.model
        sk = Skeleton(m)
        rows = np.flatnonzero(seg_of == k)
        Q = s.q[local[rows]]
        if not np.isfinite(Q).all():
            raise ValueError(f"segment {k}: the recorded q has non-finite values in the frames to draw")
        kin = sk.kinematics(Q)
        cols = [index[m.body_names[b]] for b in range(1, m.nbody) if not m.is_virtual[b]]
        bods = [b for b in range(1, m.nbody) if not m.is_virtual[b]]
        P = kin.p[:, bods, :]
        quat = _quat(kin.R[:, bods, :, :])
        for r_, row in enumerate(rows):
            poses[row, cols, :3] = P[r_]
            poses[row, cols, 3:] = quat[r_]
        if m.nloops:
            loop_pts[rows, :m.nloops] = sk.closure_points(kin=kin)
        for j, tt in enumerate(tethers):
            if tt.frame in m.frame_names:
                teth[rows, j] = kin.pose(tt.frame)[:, :3, 3]
        if forces and len(s.unit_names) and s.unit_force is not None and np.isfinite(s.unit_force).any():
            F = s.unit_force[local[rows]]
            Pt = s.unit_point[local[rows]]
            planes = {pl.name: pl for pl in getattr(m, "planes", ())}
            for u, uname in enumerate(s.unit_names):
                if "/" not in uname:
                    continue                     # a joint limit
                pl = planes.get(uname.split("/", 1)[1])
                if pl is None:
                    continue
                Rp = np.broadcast_to(pl.R, (len(rows), 3, 3)) if pl.body == 0 else kin.R[:, pl.body] @ pl.R
                f = F[:, u]
                f = np.nan_to_num(f)
                vec = Rp[:, :, 0] * f[:, 1:2] + Rp[:, :, 1] * f[:, 2:3] + Rp[:, :, 2] * f[:, 0:1]
                on = f[:, 0] > 0
                arrows[rows[on], u, :3] = Pt[on, u]
                arrows[rows[on], u, 3:] = vec[on]
        if forces and ngc and s.geom_offset is not None:
            # a geom contact's arrow: the force on geom 2 (e.g. the ground's on a foot) at the contact point
            for row, i in zip(rows, local[rows]):
                a, b = int(s.geom_offset[i]), int(s.geom_offset[i + 1])
                arrows[row, npoint:npoint + b - a, :3] = s.geom_point[a:b]
                arrows[row, npoint:npoint + b - a, 3:] = s.geom_force[a:b]
    force_scale = 0.0
    if forces and nunits:
        mag = np.linalg.norm(arrows[:, :, 3:], axis=-1)
        force_max = float(mag.max()) if mag.size else 0.0
        if force_max > 0:           # the scale of the arrows: a typical force, not the largest spike
            force_scale = float(_nice(np.percentile(mag[mag > 0], 90)))

    ghost_info = None
    if ghost is not None:
        names, poses, ghost_info = _add_ghost(ghost, names, poses, times, ghost_opacity, ghost_label)
        index = {n: k for k, n in enumerate(names)}
        nb = len(names)

    # what to draw on the bodies
    sc = _Scene(names, max_triangles)
    vis_model = model if model is not None and getattr(model, "visuals", None) else next(
        (s.model for s in segs if getattr(s.model, "visuals", None)), None)
    drew_visuals = False
    if meshes and vis_model is not None:
        nvis = max(1, sum(1 for v in vis_model.visuals if v.kind == "mesh" and v.role == "visual"))
        drew_visuals = _visual_shapes(sc, vis_model, max(300, min(6000, max_triangles // nvis)))
    if not drew_visuals:
        done = set()
        for s in segs:           # each body drawn from the first model that has it
            m = s.model
            if not hasattr(m, "inertia"):
                continue
            new = [m.body_names[b] for b in range(1, m.nbody) if not m.is_virtual[b] and m.body_names[b] not in done]
            if not new:
                continue
            sub = _Scene(names, max_triangles)
            _figure_shapes(sub, m)
            keep = {index[n] for n in new} | ({-1} if not done else set())
            sc.shapes += [x for x in sub.shapes if x["b"] in keep]
            done.update(new)

    if ghost_info is not None:
        sub = _Scene([n[len("ghost:"):] for n in names[ghost_info["first"]:]], max_triangles)
        _figure_shapes(sub, ghost_info.pop("model"))
        for x in sub.shapes:
            if x["b"] is None or x["b"] < 0:
                continue
            x["b"] += ghost_info["first"]
            x["c"], x["o"] = ghost_info["color"], ghost_info["opacity"]
            sc.shapes.append(x)

    # the scene around: props, ground, planes
    prop_data, ground_z, prop_ground = [], None, False
    for p in props:
        if isinstance(p, Tether):
            continue
        if p.label == "ground":
            ground_z = float(p.segments[..., 2].min()) if ground_z is None else min(ground_z, p.segments[..., 2].min())
            prop_ground = True
            lo, hi = p.segments.reshape(-1, 3).min(axis=0), p.segments.reshape(-1, 3).max(axis=0)
            prop_data.append({"kind": "ground", "z": float(lo[2]), "lo": lo[:2].tolist(), "hi": hi[:2].tolist(),
                              "label": "ground"})
            continue
        prop_data.append({"kind": "tubes", "seg": np.round(p.segments, 6).reshape(-1).tolist(),
                          "r": 0.005 * float(p.linewidth), "c": _color(p.color, "#444444"), "label": p.label or ""})
    m0 = segs[0].model
    planes = []
    for pl in getattr(m0, "planes", ()):
        if pl.body != 0:
            continue
        n = pl.R[:, 2]
        if abs(n[2]) > 0.999 and ground_z is None:
            ground_z = float(pl.p[2])
        planes.append({"p": pl.p.tolist(), "q": _quat(pl.R).tolist(), "name": pl.name,
                       "ext": None if pl.extent is None else [float(x) for x in pl.extent]})
    # the ground is where the physics has it: the model's unbounded world plane with normal +z
    # (the highest, if several), whatever height a ground prop gives
    collision = collision_items([s.model for s in segs], index)
    grounds = [it for it in collision if it["ground"]]
    ground = {"z": ground_z, "source": "prop" if prop_ground else ("plane" if ground_z is not None else "default"),
              "name": None}
    if grounds:
        top = max(grounds, key=lambda it: it["p"][2])
        if prop_ground and abs(ground_z - top["p"][2]) > 1e-9:
            sc.notes.append(f"the ground prop (z = {ground_z:.4g} m) is drawn at the model's ground plane "
                            f"{top['name']!r} (z = {top['p'][2]:.4g} m)")
        ground_z = float(top["p"][2])
        ground = {"z": ground_z, "source": top["src"], "name": top["name"]}
        for pd in prop_data:
            if pd["kind"] == "ground":
                pd["z"] = ground_z

    # the bounds of the motion (every shape's corners in every frame), for the camera and the ground
    pts = [poses[:, :, :3].reshape(-1, 3)]
    pts += [_swept(_corners(sc, shp), shp["b"], poses) for shp in sc.shapes]
    pts += [_swept(_item_corners(it), it["b"], poses) for it in collision]
    pts += [p.segments.reshape(-1, 3) for p in props if not isinstance(p, Tether) and p.label != "ground"]
    pts += [teth.reshape(-1, 3)]
    P = np.concatenate(pts)
    P = P[np.isfinite(P).all(axis=1)]
    if len(P) == 0:
        P = np.zeros((1, 3))
    floor = ground_z if ground_z is not None else float(P[:, 2].min())
    pad = max(0.05, 0.04 * float(np.ptp(P, axis=0).max()))
    lo, hi = P.min(axis=0) - pad, P.max(axis=0) + pad
    lo[2] = min(floor, lo[2] + pad)
    # a fixed-base robot above the floor stands on a pedestal
    fixed = [_corners(sc, x) for x in sc.shapes if x["b"] < 0]
    if drew_visuals and fixed:
        C = np.concatenate(fixed)
        base_z = float(C[:, 2].min())
        if base_z - floor > 0.02:
            rad = 0.8 * float(np.max(np.abs(C[:, :2] - C[:, :2].mean(axis=0)))) or 0.05
            mid = C[:, :2].mean(axis=0)
            sc.add(-1, "cylinder", [rad, base_z - floor], None, [mid[0], mid[1], 0.5 * (base_z + floor)], "#aab1ba")
    span = float(max(hi[0] - lo[0], hi[1] - lo[1], 0.6 * (hi[2] - lo[2]), 1e-3))
    spacing = float(_nice(span / 6.0))
    for it in collision:
        drawn_as_grid = it["k"] == "plane" and it["ext"] is None and not it["ground"]    # the ground: the page's grid
        it["grid"] = _plane_grid(it, lo, hi, spacing) if drawn_as_grid else None
    ground["z"] = float(floor)

    ev = []
    for e in events:
        size = impulse_size(e)
        ev.append({"t": float(e.t), "kind": e.kind, "label": event_label(e),
                   "impulse": None if not np.isfinite(size) else float(size), "loss": float(e.energy_loss)})
    seg_info = []
    for k, s in enumerate(segs):
        loops = [lp.name for lp in getattr(s.model, "loops", ())]
        seg_info.append({"t0": float(s.t[0]), "t1": float(s.t[-1]), "model": s.model.name,
                         "text": (f"segment {k + 1}/{len(segs)}: " if len(segs) > 1 else "")
                         + "closed loops: " + (", ".join(loops) if loops else "none (open tree)")})
    data = {
        "format": "linkdyn-viewer-1",
        "title": title if title is not None else segs[0].model.name,
        "nframes": nf, "bodies": names,
        "times": _b64(times, "<f8"),
        "segment": _b64(seg_of, "<i4"),
        "poses": _b64(poses, "<f4"),
        "shapes": sc.shapes, "meshes": sc.meshes,
        "loops": {"n": nloops, "pts": _b64(loop_pts, "<f4")} if nloops else None,
        "tethers": {"n": len(tethers), "pts": _b64(teth, "<f4"), "anchors": [t.anchor.tolist() for t in tethers],
                    "c": [_color(t.color, "#777777") for t in tethers]} if tethers else None,
        "arrows": {"n": nunits, "data": _b64(arrows, "<f4"), "max": force_max, "scale": force_scale}
        if force_max > 0 else None,
        "events": ev, "segments": seg_info, "props": prop_data, "planes": planes,
        "bounds": [lo.tolist(), hi.tolist()], "floor": float(floor), "grid": spacing,
        "ground": ground, "collision": collision,
        "figure": not drew_visuals, "notes": sorted(set(sc.notes))[:8], "camera": camera,
        "ghost": ghost_info,
    }
    return Viewer(data, times, seg_of, local, tuple(names), time.perf_counter() - clock, height)
