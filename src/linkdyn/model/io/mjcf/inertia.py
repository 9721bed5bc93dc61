"""Mass properties from geoms, as MuJoCo's compiler computes them: primitive geoms, mesh geoms
(``<asset><mesh>``, read on first use) and their combination into a body's inertia."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .common import _GEOM_TYPES, _quat_wxyz_matrix
from .defaults import _Attr


def _geom_inertia(ctx, a):
    """(mass, R, p, diag inertia about the geom centre in the geom frame) of one geom, or None."""
    gtype = a.choice("type", _GEOM_TYPES, "sphere")
    if gtype in ("plane", "hfield", "sdf"):
        return None
    if gtype == "mesh":
        return _mesh_geom_inertia(ctx, a)
    if a.boolean("shellinertia", False):
        raise NotImplementedError(f"{ctx.file(a.el)}: {a.where}: shellinertia='true' is not supported")
    if gtype == "sphere" and a.has("fromto"):
        raise a.err("fromto cannot be used with a sphere")
    R, p, size = a.geom_frame(gtype)
    need = {"sphere": 1, "capsule": 2, "cylinder": 2, "box": 3, "ellipsoid": 3}[gtype]
    if np.any(size[:need] <= 0):
        raise a.err(f"a {gtype} needs {need} positive size value{'s' if need > 1 else ''} "
                    f"({'radius' if need == 1 else 'radius, half-length' if need == 2 else 'half-sizes'}"
                    f"{' or fromto' if need == 2 else ''}), got size='{a.raw('size')}'")
    r = size[0]
    if gtype == "sphere":
        vol = 4.0 / 3.0 * math.pi * r ** 3
    elif gtype == "capsule":
        vol = math.pi * r * r * (2.0 * size[1] + 4.0 / 3.0 * r)
    elif gtype == "cylinder":
        vol = math.pi * r * r * 2.0 * size[1]
    elif gtype == "box":
        vol = 8.0 * size[0] * size[1] * size[2]
    else:
        vol = 4.0 / 3.0 * math.pi * size[0] * size[1] * size[2]
    if a.has("mass"):
        m = a.nonneg("mass")
    else:
        m = a.nonneg("density", 1000.0) * vol
    if gtype == "sphere":
        d = np.full(3, 0.4 * m * r * r)
    elif gtype == "capsule":
        h = 2.0 * size[1]                               # cylinder height
        ms = m * 4.0 * r / (4.0 * r + 3.0 * h)          # the two hemispheres (volume fraction)
        mc = m - ms
        ix = mc * (3 * r * r + h * h) / 12.0 + 0.4 * ms * r * r + ms * h * (3.0 * r + 2.0 * h) / 8.0
        d = np.array([ix, ix, mc * r * r / 2.0 + 0.4 * ms * r * r])
    elif gtype == "cylinder":
        h = 2.0 * size[1]
        ix = m * (3 * r * r + h * h) / 12.0
        d = np.array([ix, ix, m * r * r / 2.0])
    elif gtype == "box":
        s2 = (2.0 * size) ** 2
        d = m / 12.0 * np.array([s2[1] + s2[2], s2[0] + s2[2], s2[0] + s2[1]])
    else:
        s2 = size ** 2
        d = m / 5.0 * np.array([s2[1] + s2[2], s2[0] + s2[2], s2[0] + s2[1]])
    return m, R, p, d


def _mesh_geom_inertia(ctx, a):
    """(mass, R, p, diag inertia) of a mesh geom, as MuJoCo's compiler computes it
    (:mod:`linkdyn.model.io._mesh_inertia`: the mesh's ``inertia`` mode, its ``scale``, ``refpos``
    and ``refquat``; the geom's ``density`` or ``mass``); None, with a warning, when the mesh
    cannot be read here (a format other than STL, OBJ and MSH, without the optional reader it needs)."""
    name = a.raw("mesh")
    if not name:
        raise a.err("a mesh geom needs a 'mesh' attribute")
    props = ctx.mesh_properties(a.el, a.where, name)
    if props is None:
        return None
    measure, com, I = props
    if a.has("mass"):
        m = a.nonneg("mass")
        rho = m / measure
    else:
        rho = a.nonneg("density", 1000.0)
        m = rho * measure
    lam, W = np.linalg.eigh(rho * I)
    if np.linalg.det(W) < 0:
        W[:, 0] = -W[:, 0]
    R, p = a.pose()
    return m, R @ W, p + R @ com, np.maximum(lam, 0.0)


class _MeshAssets:
    """``<asset><mesh>`` elements by name, read on first use: (measure, com, I) per mesh for a
    unit density, in the mesh's coordinates after its refpos, refquat and scale."""

    def __init__(self, ctx, defaults, root, base_dir, roots=()):
        self.ctx, self.cache, self.els = ctx, {}, {}
        self.verts = {}                 # name -> the mesh's vertices in its geoms' frame (collision)
        self.roots = roots              # the folders mesh files may be read from (_files.confine)
        meshdir = None
        for el in root.iter("compiler"):
            meshdir = el.get("meshdir") or el.get("assetdir") or meshdir
        base = Path(base_dir) if base_dir is not None else None
        self.meshdir = meshdir
        self.folder = (base / meshdir if meshdir else base) if base is not None else None
        self.defaults = defaults
        for asset in root.iter("asset"):
            for m in asset.findall("mesh"):
                f = m.get("file")
                name = m.get("name") or (Path(f).stem if f else None)
                if name:
                    self.els[name] = m

    def path(self, f, error):
        """The mesh file ``f`` (under ``meshdir``), symbolic links resolved, if it lies inside the
        model's folder or the ``asset_dirs`` (``_files.confine``; ``error`` makes the exception
        otherwise); FileNotFoundError when it is missing."""
        from .._files import confine
        return confine(self.folder / f, self.roots, error, "mesh file", "")

    def properties(self, gel, where, name):
        if name in self.cache:
            return self.cache[name]
        from .. import _mesh_inertia as mi
        el = self.els.get(name)
        if el is None:
            raise self.ctx.error(gel, where, f"<geom mesh={name!r}>: no <asset><mesh> of that name")
        mwhere = f"<mesh name={name!r}>"
        a = _Attr(self.ctx, el, mwhere, self.defaults.of(el, "mesh", None, mwhere))
        mode = a.choice("inertia", mi.MODES, "legacy")
        if a.has("vertex"):
            try:
                V = np.asarray([float(x) for x in a.raw("vertex").split()], dtype=float).reshape(-1, 3)
                F = (np.asarray([int(x) for x in a.raw("face").split()], dtype=np.int64).reshape(-1, 3)
                     if a.has("face") else None)
            except ValueError:
                raise a.err("'vertex' needs 3 numbers per vertex and 'face' 3 integers per triangle") from None
            if not np.isfinite(V).all() or len(V) < 4 or (F is not None and (F.min() < 0 or F.max() >= len(V))):
                raise a.err("a mesh needs at least 4 finite vertices and faces that index them")
            if F is None:
                mode = "convex"             # MuJoCo makes the faces from the convex hull
                F = np.zeros((0, 3), dtype=np.int64)
        else:
            f = a.raw("file")
            if not f:
                raise a.err("a mesh needs a 'file' or 'vertex' attribute")
            if self.folder is None:
                raise a.err(f"the model was given as text without base_dir, so the mesh file {f!r} cannot be "
                            "looked up (use load_mjcf(path) or parse_mjcf(text, base_dir=...))")
            try:
                path = self.path(f, a.err)
            except FileNotFoundError:
                raise a.err(f"cannot read the mesh file {str(self.folder / f)!r}: no such file") from None
            try:
                V, F = mi.load_mesh(path)
            except mi.MeshReaderMissing as exc:
                self.ctx.warn(gel, where, f"the mesh {name!r} is left out of the body's inertia: {exc}")
                self.cache[name] = None
                return None
            except mi.MeshFileError as exc:
                raise a.err(str(exc)) from None
            except OSError as exc:
                raise a.err(f"cannot read the mesh file {str(path)!r}: {exc}") from None
            if len(F) == 0:
                mode = "convex"             # an MSH file without faces: MuJoCo makes them from the convex hull
        refpos = a.floats("refpos", 3, [0.0, 0.0, 0.0])
        V = V - refpos
        if a.has("refquat"):
            qr = a.floats("refquat", 4)
            if not np.linalg.norm(qr) > 1e-10:
                raise a.err("refquat: the quaternion is zero")
            R = _quat_wxyz_matrix(qr / np.linalg.norm(qr))
            V = V @ R                       # the vertices in the frame refquat names
        V = V * a.floats("scale", 3, [1.0, 1.0, 1.0])
        self.verts[name] = V
        try:
            props = mi.mass_properties(V, F, mode)
        except ValueError as exc:
            raise a.err(str(exc)) from None
        self.cache[name] = props
        return props


    def vertices(self, gel, where, name):
        """The mesh's vertices as its geoms place them (refpos, refquat, scale applied), or None
        when it cannot be read here (``properties`` warned)."""
        if name not in self.verts:
            self.properties(gel, where, name)
        return self.verts.get(name)


def _combine(parts):
    """Mass, centre of mass and inertia about it of rigidly joined parts (m, R, p, diag)."""
    m = sum(x[0] for x in parts)
    if m <= 0.0:
        I = sum((x[1] @ np.diag(x[3]) @ x[1].T for x in parts), np.zeros((3, 3)))
        return 0.0, np.zeros(3), I
    c = sum(x[0] * x[2] for x in parts) / m
    I = np.zeros((3, 3))
    for mk, R, p, d in parts:
        r = p - c
        I += R @ np.diag(d) @ R.T + mk * ((r @ r) * np.eye(3) - np.outer(r, r))
    return m, c, 0.5 * (I + I.T)

