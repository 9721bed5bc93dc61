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


def load_mesh(path):
    """Vertices (n, 3) and triangles (m, 3) of a mesh file (STL, OBJ, ...: whatever trimesh
    reads; the optional dependency ``pip install 'linkdyn[meshes]'``)."""
    try:
        import trimesh
    except ImportError:
        raise ImportError("reading mesh files needs trimesh: pip install 'linkdyn[meshes]'") from None
    import io
    from pathlib import Path

    from ._files import read_model_file
    data = read_model_file(path, ValueError, what="mesh file")       # a regular file, a bounded read
    mesh = trimesh.load(io.BytesIO(data), file_type=Path(path).suffix.lstrip(".").lower(), force="mesh",
                        process=False)
    V = np.asarray(mesh.vertices, dtype=float)
    F = np.asarray(mesh.faces, dtype=np.int64)
    if V.ndim != 2 or V.shape[1] != 3 or F.ndim != 2 or F.shape[1] != 3 or len(F) == 0:
        raise ValueError(f"{path}: no triangles")
    return V, F
