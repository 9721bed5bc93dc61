"""Mass properties of a triangle mesh the way MuJoCo's compiler computes them, so that an MJCF
body whose inertia comes from mesh geoms gets the mass, centre of mass and inertia MuJoCo
gives it.

Every triangle (vertices D, E, F, unit normal n, area A, centroid c) and a reference point o
span a pyramid of signed volume  V = (c - o) . n A / 3  (the divergence theorem: the volume of
a closed, outward-oriented surface is the sum of these).  The centre of mass is the volume-
weighted mean of the pyramids' centroids, (3/4) c + (1/4) o, and about it (o = 0) the second
moments of a pyramid with apex at the origin are

    P_jk = V / 20 (2 (D_j D_k + E_j E_k + F_j F_k) + D_j E_k + D_k E_j + D_j F_k + D_k F_j + E_j F_k + E_k F_j),

the inertia being I = tr(P) 1 - P.  The mesh's ``inertia`` attribute chooses the surface:

* ``convex``: the convex hull (what MuJoCo collides with);
* ``exact``: the mesh itself (closed and consistently oriented);
* ``legacy`` (MuJoCo's default): the mesh, with every pyramid's volume taken positive, which
  over-counts the volume of a non-convex mesh; for a convex one it is exact;
* ``shell``: the mass on the surface, each triangle weighing its area (the pyramid formula with
  V -> A and 1/20 -> 1/12 is the second moment of a uniform triangle).

MuJoCo's reference point o for the volume and centre of mass is the area-weighted centroid of
the faces; the inertia and the volume that sets the mass are then summed about the centre of
mass.  The same steps are taken here (the formulas are the standard ones, e.g. Eberly 2002,
"Polyhedral mass properties"; the order of the steps follows MuJoCo's documentation of the
``inertia`` attribute, so that the numbers agree with ``mujoco.MjModel``).
"""
from __future__ import annotations

import numpy as np

MODES = ("legacy", "convex", "exact", "shell")


def _triangles(V: np.ndarray, F: np.ndarray):
    D, E, G = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    cross = np.cross(E - D, G - D)
    norm = np.linalg.norm(cross, axis=1)
    area = 0.5 * norm
    n = np.divide(cross, norm[:, None], out=np.zeros_like(cross), where=norm[:, None] > 0)
    return D, E, G, n, area, (D + E + G) / 3.0


def hull_faces(V: np.ndarray) -> np.ndarray:
    """Outward-oriented triangles of the convex hull of points V (Qhull, through SciPy)."""
    from scipy.spatial import ConvexHull
    hull = ConvexHull(V)
    F = hull.simplices.copy()
    inside = V[hull.vertices].mean(axis=0)
    D, E, G = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
    flip = np.einsum("ij,ij->i", np.cross(E - D, G - D), D - inside) < 0
    F[flip] = F[flip][:, [0, 2, 1]]
    return F


def mass_properties(V, F, mode: str = "legacy"):
    """(measure, com (3,), I (3, 3)) of the mesh V (n, 3), F (m, 3) for a unit density: the
    volume (the area for ``shell``), the centre of mass, and the inertia about it; multiply
    the inertia by the density (mass / measure) to get a body's."""
    if mode not in MODES:
        raise ValueError(f"mesh inertia: expected one of {MODES}, got {mode!r}")
    V = np.asarray(V, dtype=float)
    F = np.asarray(F, dtype=np.int64)
    if mode == "convex":
        F = hull_faces(V)
    D, E, G, n, area, c = _triangles(V, F)
    total_area = area.sum()
    if not total_area > 0:
        raise ValueError("mesh surface area is zero")
    o = (area[:, None] * c).sum(axis=0) / total_area            # area-weighted face centroid
    if mode == "shell":
        w = area
    else:
        w = np.einsum("ij,ij->i", c - o, n) * area / 3.0
        if mode == "legacy":
            w = np.abs(w)
    total = w.sum()
    if not total > 0:
        raise ValueError("mesh volume is not positive (misoriented triangles?); "
                         "try inertia='shell' or 'convex'" if mode != "shell" else "mesh area is zero")
    com = (w[:, None] * (0.75 * c + 0.25 * o)).sum(axis=0) / total
    # about the centre of mass
    D, E, G, c = D - com, E - com, G - com, c - com
    if mode == "shell":
        w, k = area, 12.0
    else:
        w, k = np.einsum("ij,ij->i", c, n) * area / 3.0, 20.0
        if mode == "legacy":
            w = np.abs(w)
    S = (2.0 * (np.einsum("ti,tj->tij", D, D) + np.einsum("ti,tj->tij", E, E) + np.einsum("ti,tj->tij", G, G))
         + np.einsum("ti,tj->tij", D, E) + np.einsum("ti,tj->tij", E, D)
         + np.einsum("ti,tj->tij", D, G) + np.einsum("ti,tj->tij", G, D)
         + np.einsum("ti,tj->tij", E, G) + np.einsum("ti,tj->tij", G, E))
    P = np.einsum("t,tij->ij", w / k, S)
    I = np.trace(P) * np.eye(3) - P
    return float(w.sum()), com, 0.5 * (I + I.T)


class MeshFileError(ValueError):
    """A mesh file that cannot be read: corrupt, or of a format nothing here reads.  The message
    names the file and what is wrong with it."""


class MeshReaderMissing(ImportError):
    """A mesh format that only an optional package reads (``reader``) that is not installed."""

    def __init__(self, msg, reader):
        super().__init__(msg)
        self.reader = reader


#: the formats read here without any optional package: MuJoCo's own three
NATIVE_FORMATS = ("stl", "obj", "msh")


def _check(V, F, path, fmt):
    if not np.isfinite(V).all():
        raise MeshFileError(f"{path}: corrupt {fmt} mesh: a vertex coordinate is not finite")
    if len(F) and (F.min() < 0 or F.max() >= len(V)):
        raise MeshFileError(f"{path}: corrupt {fmt} mesh: a face names vertex {int(F.max() if F.max() >= len(V) else F.min())}"
                            f" of {len(V)}")
    return V, F


def read_msh(data: bytes, path="<bytes>"):
    """MuJoCo's binary .msh: int32 nvertex, nnormal, ntexcoord, nface, then float32
    positions (3 nvertex), normals (3 nnormal), texture coordinates (2 ntexcoord) and int32
    faces (3 nface), little-endian, the file exactly 16 + 12 (nvertex + nnormal + nface) +
    8 ntexcoord bytes long (MuJoCo's XML reference, ``mesh/file``).  nface = 0: the faces are
    the convex hull's (an empty F)."""
    if len(data) < 16:
        raise MeshFileError(f"{path}: corrupt MSH mesh: {len(data)} bytes, shorter than the 16-byte header")
    nv, nn, nt, nf = (int(x) for x in np.frombuffer(data, dtype="<i4", count=4))
    if min(nv, nn, nt, nf) < 0:
        raise MeshFileError(f"{path}: corrupt MSH mesh: negative counts in the header {[nv, nn, nt, nf]}")
    want = 16 + 12 * (nv + nn + nf) + 8 * nt
    if len(data) != want:
        raise MeshFileError(f"{path}: corrupt MSH mesh: the header (nvertex {nv}, nnormal {nn}, ntexcoord {nt}, "
                            f"nface {nf}) needs {want} bytes, the file has {len(data)}")
    if nv < 4:
        raise MeshFileError(f"{path}: corrupt MSH mesh: {nv} vertices, a mesh needs at least 4")
    V = np.frombuffer(data, dtype="<f4", count=3 * nv, offset=16).astype(float).reshape(nv, 3)
    F = np.frombuffer(data, dtype="<i4", count=3 * nf, offset=16 + 12 * (nv + nn) + 8 * nt).astype(np.int64)
    return _check(V, F.reshape(nf, 3), path, "MSH")


def read_stl(data: bytes, path="<bytes>"):
    """Binary STL (80-byte header, uint32 count, 50 bytes per triangle: normal, 3 vertices as
    float32, a uint16) when the size matches the count, else ASCII STL (``vertex x y z``
    lines, three per facet)."""
    if len(data) >= 84:
        n = int(np.frombuffer(data, dtype="<u4", count=1, offset=80)[0])
        if len(data) == 84 + 50 * n:
            rec = np.frombuffer(data, dtype=np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]),
                                count=n, offset=84)
            V = rec["v"].astype(float).reshape(-1, 3)
            return _check(V, np.arange(3 * n, dtype=np.int64).reshape(n, 3), path, "STL")
    head = data[:512].lstrip().lower()
    if not head.startswith(b"solid"):
        n = int(np.frombuffer(data, dtype="<u4", count=1, offset=80)[0]) if len(data) >= 84 else None
        raise MeshFileError(f"{path}: corrupt STL mesh: neither ASCII (no 'solid' at the start) nor binary ("
                            + (f"the header counts {n} triangles, {84 + 50 * n} bytes, the file has {len(data)})"
                               if n is not None else f"{len(data)} bytes, shorter than the 84-byte header)"))
    V = []
    for k, line in enumerate(data.decode("latin-1").splitlines()):
        parts = line.split()
        if parts and parts[0].lower() == "vertex":
            if len(parts) != 4:
                raise MeshFileError(f"{path}: corrupt STL mesh: line {k + 1}: 'vertex' needs 3 numbers")
            try:
                V.append([float(x) for x in parts[1:]])
            except ValueError:
                raise MeshFileError(f"{path}: corrupt STL mesh: line {k + 1}: not a number in {line.strip()!r}") from None
    if not V or len(V) % 3:
        raise MeshFileError(f"{path}: corrupt STL mesh: {len(V)} vertices, not three per facet")
    V = np.asarray(V, dtype=float)
    return _check(V, np.arange(len(V), dtype=np.int64).reshape(-1, 3), path, "STL")


def read_obj(data: bytes, path="<bytes>"):
    """Wavefront OBJ: ``v x y z`` vertices and ``f`` faces (``i``, ``i/t``, ``i//n``, ``i/t/n``,
    1-based, negative counting back from the last vertex), polygons split into fans as MuJoCo's
    reader does; every other statement (normals, texture coordinates, groups, materials) is
    ignored here (no other file is read)."""
    V, F = [], []
    for k, line in enumerate(data.decode("latin-1").splitlines()):
        parts = line.split()
        if not parts:
            continue
        try:
            if parts[0] == "v":
                if len(parts) < 4:
                    raise ValueError("'v' needs 3 numbers")
                V.append([float(x) for x in parts[1:4]])
            elif parts[0] == "f":
                if len(parts) < 4:
                    raise ValueError("a face needs at least 3 vertices")
                idx = []
                for t in parts[1:]:
                    i = int(t.split("/")[0])
                    if i == 0:
                        raise ValueError("vertex index 0 (OBJ counts from 1)")
                    idx.append(i - 1 if i > 0 else len(V) + i)
                F.extend([idx[0], idx[j], idx[j + 1]] for j in range(1, len(idx) - 1))
        except ValueError as exc:
            raise MeshFileError(f"{path}: corrupt OBJ mesh: line {k + 1}: {exc}") from None
    if len(V) < 4:
        raise MeshFileError(f"{path}: corrupt OBJ mesh: {len(V)} vertices, a mesh needs at least 4")
    return _check(np.asarray(V, dtype=float), np.asarray(F, dtype=np.int64).reshape(-1, 3), path, "OBJ")


_READERS = {"stl": read_stl, "obj": read_obj, "msh": read_msh}
#: formats trimesh reads only with one more package: suffix -> (module, package)
_TRIMESH_NEEDS = {"dae": ("collada", "pycollada"), "zae": ("collada", "pycollada")}


def load_mesh(path):
    """Vertices (n, 3) and triangles (m, 3) of a mesh file.  STL, OBJ and MuJoCo's MSH (the
    formats MuJoCo's compiler reads) are read here with NumPy alone; any other format through
    trimesh when it is installed (``pip install 'linkdyn[meshes]'``).  The file is read through
    :func:`linkdyn.model.io._files.read_model_file` (a regular file, a bounded read); the
    caller confines the path.  Raises :class:`MeshFileError` (a ValueError naming the file) for
    a corrupt file or an unknown format, :class:`MeshReaderMissing` (an ImportError naming the
    package) when the format needs a package that is not installed, FileNotFoundError."""
    from pathlib import Path

    from ._files import read_model_file
    fmt = Path(path).suffix.lstrip(".").lower()
    data = read_model_file(path, MeshFileError, what="mesh file")       # a regular file, a bounded read
    if fmt in _READERS:
        V, F = _READERS[fmt](data, path)
    else:
        V, F = _load_with_trimesh(data, fmt, path)
    if len(F) == 0 and fmt != "msh":
        raise MeshFileError(f"{path}: the {fmt.upper() or 'mesh'} file has no triangles")
    return V, F


def _load_with_trimesh(data, fmt, path):
    import io
    try:
        import trimesh
    except ImportError:
        raise MeshReaderMissing(f"{path}: reading .{fmt} mesh files needs trimesh, which is not installed "
                                f"(pip install 'linkdyn[meshes]'); STL, OBJ and MSH need nothing", "trimesh") from None
    if fmt in _TRIMESH_NEEDS:
        try:
            __import__(_TRIMESH_NEEDS[fmt][0])
        except ImportError:
            raise MeshReaderMissing(f"{path}: reading .{fmt} mesh files needs {_TRIMESH_NEEDS[fmt][1]}, which is not "
                                    "installed (pip install 'linkdyn[meshes]')", _TRIMESH_NEEDS[fmt][1]) from None
    known = set(trimesh.exchange.load.mesh_formats())
    if not fmt or fmt not in known:
        raise MeshFileError(f"{path}: unknown mesh format {('.' + fmt) if fmt else '(no suffix)'}: "
                            f"expected one of {', '.join(sorted({*NATIVE_FORMATS, *known}))}")
    try:
        mesh = trimesh.load(io.BytesIO(data), file_type=fmt, force="mesh", process=False)
    except ImportError as exc:              # a reader that trimesh itself imports on use (pycollada for .dae)
        name = getattr(exc, "name", None) or str(exc)
        raise MeshReaderMissing(f"{path}: trimesh needs {name}, which is not installed, to read .{fmt} mesh files",
                                name) from None
    except Exception as exc:                # trimesh's parsers raise anything on a corrupt file
        raise MeshFileError(f"{path}: corrupt {fmt.upper()} mesh: {type(exc).__name__}: {exc}") from None
    V = np.asarray(getattr(mesh, "vertices", np.zeros((0, 3))), dtype=float)
    F = np.asarray(getattr(mesh, "faces", np.zeros((0, 3))), dtype=np.int64)
    if V.ndim != 2 or V.shape[1] != 3 or F.ndim != 2 or F.shape[1] != 3:
        raise MeshFileError(f"{path}: no triangles in the .{fmt} file")
    return _check(V, F, path, fmt.upper())
