"""The compiled collision pipeline: geom poses from the forward kinematics, the broad phase
(bounding boxes, sweep and prune over the model's candidate pairs) and the narrow phase.

Buffers (made once per model by :class:`linkdyn.contact.collision.Collider`):

    gi    (ngeom, 4) int    geom type, body, first vertex in verts, number of vertices (meshes)
    gf    float             size (ngeom, 3) | pos (ngeom, 3) | R (ngeom, 3, 3) | friction (ngeom,) | restitution (ngeom,)
                            | pair friction (npair,): an explicit pair's own, or -1 (model.geom_pair_friction)
                            | pair skin (npair,): the sum of the geoms' margins, 0 for an explicit pair
                              (collision.pair_skin: MuJoCo's includemargin)
                            | verts (nvert, 3): the meshes' hull vertices in their geom frames (model.geom_verts)
    pairs (npair, 2) int    candidate pairs g1 < g2 (model.geom_pairs)
    adj   int               adr (ngeom + 1,) | partner (npair,) | pair (npair,): for each geom g, its
                            candidate partners h > g, ascending, and the index of the pair (g, h)
    cw    float             xpos (ngeom, 3) | xR (ngeom, 3, 3) | lo (ngeom, 3) | hi (ngeom, 3) | poly (2, 16, 3)
    ci    int               order (ngeom,): the sweep order, kept from call to call | hit (npair,)
    con_i (maxcon, 2) int   geom1, geom2 of each contact
    con_f (maxcon, 10)      dist, pos (3), normal (3), friction, restitution, the pair's skin (the
                            sum of the two geoms' margins: MuJoCo's includemargin)
"""
import math

import numpy as np
from numba import njit

from ..._kernels.layout import _view, model_sizes, unpack_data
from ..._kernels.passes import OK, POS, check_q, kinematics_pass
from ...model.geometry import BOX, CAPSULE, CYLINDER, ELLIPSOID, MESH, PLANE, SPHERE
from . import _box as B
from . import _convex as C
from . import _primitives as P

#: the pairs with a collision function, (type1, type2) with type1 <= type2, and the most
#: contacts each makes
MAX_CONTACTS = {(PLANE, SPHERE): 1, (PLANE, CAPSULE): 2, (PLANE, ELLIPSOID): 1, (PLANE, CYLINDER): 4,
                (PLANE, BOX): 4, (SPHERE, SPHERE): 1, (SPHERE, CAPSULE): 1, (SPHERE, CYLINDER): 1,
                (SPHERE, BOX): 1, (CAPSULE, CAPSULE): 2, (CAPSULE, BOX): 2, (BOX, BOX): 8,
                # the general convex pairs (GJK / EPA, _convex): one contact with a smooth shape,
                # up to C.MAXMANIFOLD between two shapes with faces or straight edges
                (SPHERE, ELLIPSOID): 1, (CAPSULE, ELLIPSOID): 1, (ELLIPSOID, ELLIPSOID): 1,
                (ELLIPSOID, CYLINDER): 1, (ELLIPSOID, BOX): 1, (CAPSULE, CYLINDER): C.MAXMANIFOLD,
                (CYLINDER, CYLINDER): C.MAXMANIFOLD, (CYLINDER, BOX): C.MAXMANIFOLD, (PLANE, MESH): 4,
                (SPHERE, MESH): 1, (CAPSULE, MESH): C.MAXMANIFOLD, (ELLIPSOID, MESH): 1,
                (CYLINDER, MESH): C.MAXMANIFOLD, (BOX, MESH): C.MAXMANIFOLD, (MESH, MESH): C.MAXMANIFOLD}
POLY = 2 * 16 * 3


def cw_size(ngeom):
    return 18 * ngeom + POLY


@njit(cache=True)
def narrow(t1, p1, R1, s1, V1, t2, p2, R2, s2, V2, margin, out, k, poly):
    """The contacts of one pair (t1 <= t2) in rows k... of out; -1 if the pair has no
    collision function.  V1, V2: a mesh's hull vertices in its frame (else empty)."""
    if t1 == PLANE:
        if t2 == MESH:
            return C.plane_mesh(p1, R1, s1, p2, R2, s2, V2, margin, out, k)
        if t2 == SPHERE:
            return P.plane_sphere(p1, R1, s1, p2, R2, s2, margin, out, k)
        if t2 == CAPSULE:
            return P.plane_capsule(p1, R1, s1, p2, R2, s2, margin, out, k)
        if t2 == ELLIPSOID:
            return P.plane_ellipsoid(p1, R1, s1, p2, R2, s2, margin, out, k)
        if t2 == CYLINDER:
            return P.plane_cylinder(p1, R1, s1, p2, R2, s2, margin, out, k)
        if t2 == BOX:
            return P.plane_box(p1, R1, s1, p2, R2, s2, margin, out, k)
    elif t1 == SPHERE:
        if t2 == SPHERE:
            return P.sphere_sphere(p1, R1, s1, p2, R2, s2, margin, out, k)
        if t2 == CAPSULE:
            return P.sphere_capsule(p1, R1, s1, p2, R2, s2, margin, out, k)
        if t2 == CYLINDER:
            return P.sphere_cylinder(p1, R1, s1, p2, R2, s2, margin, out, k)
        if t2 == BOX:
            return B.sphere_box(p1, R1, s1, p2, R2, s2, margin, out, k)
    elif t1 == CAPSULE:
        if t2 == CAPSULE:
            return P.capsule_capsule(p1, R1, s1, p2, R2, s2, margin, out, k)
        if t2 == BOX:
            return B.capsule_box(p1, R1, s1, p2, R2, s2, margin, out, k)
    elif t1 == BOX and t2 == BOX:
        return B.box_box(p1, R1, s1, p2, R2, s2, margin, out, k, poly)
    if t1 != PLANE and t2 >= ELLIPSOID:
        # every other pair of convex shapes: GJK / EPA on the support functions
        return C.convex_pair(t1, p1, R1, s1, V1, t2, p2, R2, s2, V2, margin, out, k)
    return -1


@njit(cache=True)
def geom_poses(oR, op, gi, size, pos, R, xpos, xR):
    """World pose of every geom: oMg = oMb bMg."""
    for g in range(gi.shape[0]):
        b = gi[g, 1]
        for r in range(3):
            xpos[g, r] = op[b, r] + oR[b, r, 0] * pos[g, 0] + oR[b, r, 1] * pos[g, 1] + oR[b, r, 2] * pos[g, 2]
            for c in range(3):
                xR[g, r, c] = oR[b, r, 0] * R[g, 0, c] + oR[b, r, 1] * R[g, 1, c] + oR[b, r, 2] * R[g, 2, c]


@njit(cache=True)
def bounding_boxes(gi, size, xpos, xR, margin, lo, hi):
    """Axis-aligned bounding boxes, each grown by margin / 2 (two boxes then overlap when the
    geoms may be within the margin); a plane's is the whole space.  Exact for every shape:
    half-width along world axis r of a box sum_j |R_rj| s_j, of an ellipsoid
    sqrt(sum_j (R_rj s_j)^2), of a capsule h |R_r2| + r, of a cylinder h |R_r2| + r sqrt(1 - R_r2^2);
    a mesh's is its bounding sphere's (size[0] about the geom's origin: not tight)."""
    for g in range(gi.shape[0]):
        t = gi[g, 0]
        s0, s1, s2 = size[g, 0], size[g, 1], size[g, 2]
        for r in range(3):
            if t == PLANE:
                lo[g, r], hi[g, r] = -math.inf, math.inf
                continue
            a0, a1, a2 = abs(xR[g, r, 0]), abs(xR[g, r, 1]), abs(xR[g, r, 2])
            if t == SPHERE:
                w = s0
            elif t == CAPSULE:
                w = s1 * a2 + s0
            elif t == CYLINDER:
                w = s1 * a2 + s0 * math.sqrt(max(1.0 - a2 * a2, 0.0))
            elif t == ELLIPSOID:
                w = math.sqrt((a0 * s0) ** 2 + (a1 * s1) ** 2 + (a2 * s2) ** 2)
            elif t == MESH:
                w = s0                      # the bounding sphere about the geom's origin
            else:
                w = a0 * s0 + a1 * s1 + a2 * s2
            w += 0.5 * margin
            lo[g, r], hi[g, r] = xpos[g, r] - w, xpos[g, r] + w


@njit(cache=True)
def _pair_index(adj, n, g, h):
    """Index of the candidate pair (g, h), g < h, or -1 (binary search in g's partners)."""
    npair = (adj.shape[0] - n - 1) // 2
    a, b = adj[g], adj[g + 1]
    while a < b:
        m = (a + b) // 2
        x = adj[n + 1 + m]
        if x == h:
            return adj[n + 1 + npair + m]
        if x < h:
            a = m + 1
        else:
            b = m
    return -1


@njit(cache=True)
def sweep_and_prune(lo, hi, order, adj, hit):
    """Mark hit[p] = 1 for the candidate pairs whose boxes overlap.  Sweep and prune along the
    axis where the boxes' centres spread most (Baraff 1992; Cohen, Lin, Manocha and Ponamgi
    1995, I-COLLIDE): ``order`` is sorted by the lower bounds by insertion sort, starting from
    the last call's order, which the geoms' coherence from step to step leaves nearly sorted."""
    n = lo.shape[0]
    # the axis of largest spread of the finite boxes' centres
    best, axis = -1.0, 0
    for r in range(3):
        s, s2, m = 0.0, 0.0, 0
        for g in range(n):
            if math.isfinite(lo[g, r]):
                c = 0.5 * (lo[g, r] + hi[g, r])
                s += c
                s2 += c * c
                m += 1
        var = s2 / m - (s / m) ** 2 if m > 0 else 0.0
        if var > best:
            best, axis = var, r
    for i in range(1, n):                   # insertion sort on lo[:, axis]
        g = order[i]
        x = lo[g, axis]
        j = i - 1
        while j >= 0 and lo[order[j], axis] > x:
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = g
    for i in range(n):
        g = order[i]
        for j in range(i + 1, n):
            h = order[j]
            if lo[h, axis] > hi[g, axis]:
                break
            overlap = True
            for r in range(3):
                if lo[h, r] > hi[g, r] or lo[g, r] > hi[h, r]:
                    overlap = False
            if overlap:
                p = _pair_index(adj, n, min(g, h), max(g, h))
                if p >= 0:
                    hit[p] = 1


@njit(cache=True)
def collide_kernel(mi, mf, ws, q, gi, gf, pairs, adj, margin, cw, ci, con_i, con_f):
    """Every contact of the model at q within ``margin``: the number of contacts written to
    con_i, con_f (ordered by candidate pair), or -status for a bad q (passes.check_q).
    Unvalidated otherwise: the buffers must be those of the model (Collider)."""
    st = check_q(mi, q)
    if st != OK:
        return -st
    if pairs.shape[0] == 0:
        return 0
    kinematics_pass(mi, mf, ws, q, q[:0], q[:0], np.int64(POS), np.bool_(True), np.bool_(False))
    return collide_at_kinematics(mi, ws, gi, gf, pairs, adj, margin, cw, ci, con_i, con_f)


@njit(cache=True)
def collide_at_kinematics(mi, ws, gi, gf, pairs, adj, margin, cw, ci, con_i, con_f):
    """``collide_kernel`` at the forward kinematics ``ws`` holds (the caller has just computed them
    at a valid q)."""
    n, npair = gi.shape[0], pairs.shape[0]
    if npair == 0:
        return 0
    nb, nq, nv = model_sizes(mi)
    oR, op = unpack_data(ws, nb, nv)[:2]
    size, pos = _view(gf, 0, (n, 3)), _view(gf, 3 * n, (n, 3))
    R = _view(gf, 6 * n, (n, 3, 3))
    skin = _view(gf, 17 * n + npair, (npair,))
    xpos, xR = _view(cw, 0, (n, 3)), _view(cw, 3 * n, (n, 3, 3))
    lo, hi = _view(cw, 12 * n, (n, 3)), _view(cw, 15 * n, (n, 3))
    order, hit = ci[:n], ci[n:n + npair]
    geom_poses(oR, op, gi, size, pos, R, xpos, xR)
    wide = 0.0                          # the largest skin: no pair within its own is pruned
    for p in range(npair):
        wide = max(wide, skin[p])
    bounding_boxes(gi, size, xpos, xR, margin + wide, lo, hi)
    sweep_and_prune(lo, hi, order, adj, hit)
    k = np.int64(0)         # not the literal 0: Numba would compile narrow for Literal[int](0) and again for int64
    for p in range(npair):
        if hit[p] == 0:
            continue
        hit[p] = 0
        k += _pair_contacts(gi, gf, npair, cw, p, pairs[p, 0], pairs[p, 1], margin, con_i, con_f, k)
    return k


@njit(cache=True)
def _pair_contacts(gi, gf, npair, cw, p, g1, g2, margin, con_i, con_f, k):
    """The contacts of candidate pair p = (g1, g2) within ``margin`` (plus its skin) at the geom
    poses in cw, in rows k... of con_i, con_f; returns how many."""
    n = gi.shape[0]
    size = _view(gf, 0, (n, 3))
    fric, rest = _view(gf, 15 * n, (n,)), _view(gf, 16 * n, (n,))
    pfric = _view(gf, 17 * n, (npair,))
    skin = _view(gf, 17 * n + npair, (npair,))
    nvert = (gf.shape[0] - 17 * n - 2 * npair) // 3
    verts = _view(gf, 17 * n + 2 * npair, (nvert, 3))
    xpos, xR = _view(cw, 0, (n, 3)), _view(cw, 3 * n, (n, 3, 3))
    poly = _view(cw, 18 * n, (2, 16, 3))
    if gi[g1, 0] > gi[g2, 0]:           # geom 1 is of the lower type (MuJoCo's order)
        g1, g2 = g2, g1
    s = skin[p]
    v1 = verts[max(gi[g1, 2], 0):max(gi[g1, 2], 0) + gi[g1, 3]]
    v2 = verts[max(gi[g2, 2], 0):max(gi[g2, 2], 0) + gi[g2, 3]]
    m = narrow(gi[g1, 0], xpos[g1], xR[g1], size[g1], v1, gi[g2, 0], xpos[g2], xR[g2], size[g2], v2,
               margin + s, con_f, k, poly)
    for c in range(k, k + max(m, 0)):
        con_i[c, 0], con_i[c, 1] = g1, g2
        con_f[c, 7] = pfric[p] if pfric[p] >= 0.0 else max(fric[g1], fric[g2])
        con_f[c, 8] = max(rest[g1], rest[g2])
        con_f[c, 9] = s
    return max(m, 0)


@njit(cache=True)
def collide_pairs_kernel(mi, ws, gi, gf, adj, margin, cw, pairs_of, npo, con_i, con_f):
    """The contacts within ``margin`` of the geom pairs named in pairs_of[:npo] (rows (g1, g2) as
    ``collide_kernel`` writes its contacts; each pair taken once), at the forward kinematics that
    ``ws`` holds: ``collide_kernel``'s narrow phase on those pairs alone, without its broad phase
    and the other pairs.  A pair's contacts are the same as in ``collide_kernel`` (its broad phase
    only prunes pairs with no contact within the margin); the time step asks it for the step's own
    contacts at the configurations its motion reaches, where it has just computed the kinematics
    (dm_control's humanoid lying down, 10 contacts, timed from Python: collide_kernel 3.2 us, this 1.2 us).
    Returns the number written."""
    n = gi.shape[0]
    npair = (adj.shape[0] - n - 1) // 2
    nb, nq, nv = model_sizes(mi)
    oR, op = unpack_data(ws, nb, nv)[:2]
    size, pos = _view(gf, 0, (n, 3)), _view(gf, 3 * n, (n, 3))
    R = _view(gf, 6 * n, (n, 3, 3))
    xpos, xR = _view(cw, 0, (n, 3)), _view(cw, 3 * n, (n, 3, 3))
    geom_poses(oR, op, gi, size, pos, R, xpos, xR)
    k = np.int64(0)
    for c in range(npo):
        g1, g2 = pairs_of[c, 0], pairs_of[c, 1]
        seen = False
        for d in range(c):
            if pairs_of[d, 0] == g1 and pairs_of[d, 1] == g2:
                seen = True
                break
        if seen:
            continue
        p = _pair_index(adj, n, min(g1, g2), max(g1, g2))
        if p < 0:
            continue
        k += _pair_contacts(gi, gf, npair, cw, p, min(g1, g2), max(g1, g2), margin, con_i, con_f, k)
    return k
