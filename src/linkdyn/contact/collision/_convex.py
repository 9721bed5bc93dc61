"""Narrow phase of the general convex pairs: GJK for the distance of separated shapes and EPA
for the depth and normal of penetrating ones, on the shapes' support functions.

A convex shape S is known here only by its support function s_S(d), a point of S farthest
along the direction d.  The two shapes A (geom 1) and B (geom 2) touch when their Minkowski
difference M = A - B = {a - b} contains the origin:

* separated: the distance is that of M to the origin.  GJK (Gilbert, Johnson and Keerthi
  1988) finds it by growing and shrinking a simplex of support points of M,
  s_M(d) = s_A(d) - s_B(-d), towards the origin; each iteration takes the point v of the
  simplex nearest the origin (Ericson 2004, Real-Time Collision Detection, sec. 5.1.5 and
  5.1.6, on the points, segments, triangles and tetrahedra it can be) and stops when the
  support point w = s_M(-v) brings v no closer: |v| - v.w / |v| is an upper bound on |v| -
  dist (van den Bergen 2003, Collision Detection in Interactive 3D Environments, sec. 4.3.3).
* penetrating: the depth is the distance from the origin to the boundary of M.  EPA (van den
  Bergen 2001, "Proximity queries and penetration depth computation on 3D game objects")
  starts from GJK's tetrahedron around the origin and expands it: the face nearest the
  origin, its normal n and distance d; the support point s_M(n) lies on the boundary when
  s_M(n).n - d is below the tolerance, and otherwise replaces the faces it sees.  Where EPA
  runs out of vertices first (a deep overlap of two coaxial round shapes has a whole circle of
  deepest directions), its normal is improved by descending on the overlap along n,
  h_A(n) + h_B(-n), and that overlap is reported: a translation that separates the shapes.

A sphere and a capsule are a point and a segment (their *cores*) swept by a radius (as in
coal and MuJoCo): GJK runs on the cores, so a sphere or capsule against anything is exact
to round-off while the cores are apart, and EPA runs on the full shapes when they are not.
The smooth shapes (ellipsoid, cylinder side and rim) make GJK and EPA converge linearly,
to the tolerances ``GJK_TOL`` and ``EPA_TOL`` (1e-10 m here; MuJoCo's default
``ccd_tolerance`` is 1e-6).

Conventions as :mod:`._primitives`: normal from geom 1 to geom 2, ``pos`` midway between the
two witness points, contacts with ``dist <= margin``.

Several points (``manifold``): one point cannot hold a body resting face to face (a cylinder
lying on a box slides along its axis and off), so between two shapes that both have faces or
straight edges (capsule, cylinder, box, mesh) the faces of the two shapes along the GJK / EPA
normal n are sampled by their support points along n and along 8 directions tilted from n by
TILT (3 degrees: a box face gives its 4 corners, a cylinder cap 8 rim points, a cylinder's or
capsule's side the ends of its line); each sampled point of one shape whose projection on the
tangent plane lies inside the other's sampled face (their 2-d convex hulls) is a contact, at its
own height against the other shape's support plane; GJK / EPA's point is added when it is
deeper.  MuJoCo 4.0 does the like by default (its ``multiccd`` flag, now on unless disabled:
up to 4 or 5 points clipped between the two faces, with a face's normal); ours keeps the
minimum-translation normal of EPA, and misses the points where two faces' edges cross (two
squares turned 45 degrees on each other get GJK / EPA's one point).

A convex mesh is the array of its hull's vertices in the geom frame; its support is the vertex
of largest d.v, by brute force (the hulls of collision meshes have tens to hundreds of
vertices; MuJoCo climbs the hull's graph for large ones).
"""
import math

import numpy as np
from numba import njit

from ...model.geometry import BOX, CAPSULE, CYLINDER, ELLIPSOID, MESH, SPHERE
from ._vec import add, axpy, cross, dot, mtv, mv, norm, put, scl, sub, tangents, vec

GJK_TOL = 1e-10         # metres: GJK stops when |v| - v.w/|v| (a bound on its error) is below this
EPA_TOL = 1e-10         # metres: EPA stops when the support point is this close to the nearest face
GJK_ITER = 200
EPA_ITER = 200
MAXV = 256              # EPA's polytope: vertices ...
MAXF = 2 * MAXV         # ... and faces (a closed triangulated polytope of V vertices has 2V - 4)


@njit(cache=True)
def core_radius(t, s):
    """The radius swept around a shape's core (sphere: a point, capsule: a segment), else 0."""
    if t == SPHERE or t == CAPSULE:
        return s[0]
    return 0.0


@njit(cache=True)
def support_local(t, s, V, d, full):
    """The support point of a shape in its own frame along the direction d (frame coordinates):
    of its core when ``full`` is False (spheres and capsules), else of the whole shape."""
    if t == SPHERE or t == CAPSULE:
        z = 0.0
        if t == CAPSULE:
            z = s[1] if d[2] >= 0.0 else -s[1]
        if not full:
            return (0.0, 0.0, z)
        L = norm(d)
        if L < 1e-300:
            return (0.0, 0.0, z)
        f = s[0] / L
        return (f * d[0], f * d[1], z + f * d[2])
    if t == BOX:
        return (s[0] if d[0] >= 0.0 else -s[0], s[1] if d[1] >= 0.0 else -s[1], s[2] if d[2] >= 0.0 else -s[2])
    if t == ELLIPSOID:
        # max d.x over x = D u, |u| = 1: u = D d / |D d|, x = D^2 d / |D d|
        e = (s[0] * d[0], s[1] * d[1], s[2] * d[2])
        L = norm(e)
        if L < 1e-300:
            return (s[0], 0.0, 0.0)
        return (s[0] * e[0] / L, s[1] * e[1] / L, s[2] * e[2] / L)
    if t == CYLINDER:
        z = s[1] if d[2] >= 0.0 else -s[1]
        L = math.sqrt(d[0] * d[0] + d[1] * d[1])
        if L < 1e-300:
            return (s[0], 0.0, z)           # along the axis: any rim point (the cap is the face)
        return (s[0] * d[0] / L, s[0] * d[1] / L, z)
    # MESH: the vertex of largest d.v
    best, j = -math.inf, 0
    for i in range(V.shape[0]):
        x = V[i, 0] * d[0] + V[i, 1] * d[1] + V[i, 2] * d[2]
        if x > best:
            best, j = x, i
    return (V[j, 0], V[j, 1], V[j, 2])


@njit(cache=True)
def support(t, p, R, s, V, d, full):
    """The support point in the world of a shape at (p, R) along the world direction d."""
    return add(vec(p), mv(R, support_local(t, s, V, mtv(R, d), full)))


# --- the nearest point of a simplex to the origin (Ericson 2004, sec. 5.1.5) --------------------
@njit(cache=True)
def _triangle(a, b, c):
    """Barycentric weights (u, v, w) of the point of triangle abc nearest the origin."""
    ab, ac = sub(b, a), sub(c, a)
    ap = scl(a, -1.0)
    d1, d2 = dot(ab, ap), dot(ac, ap)
    if d1 <= 0.0 and d2 <= 0.0:
        return 1.0, 0.0, 0.0
    bp = scl(b, -1.0)
    d3, d4 = dot(ab, bp), dot(ac, bp)
    if d3 >= 0.0 and d4 <= d3:
        return 0.0, 1.0, 0.0
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        return 1.0 - v, v, 0.0
    cp = scl(c, -1.0)
    d5, d6 = dot(ab, cp), dot(ac, cp)
    if d6 >= 0.0 and d5 <= d6:
        return 0.0, 0.0, 1.0
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        return 1.0 - w, 0.0, w
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return 0.0, 1.0 - w, w
    den = va + vb + vc
    if den <= 0.0 or not math.isfinite(den):        # degenerate (collinear): the best edge
        return _degenerate_triangle(a, b, c)
    v, w = vb / den, vc / den
    return 1.0 - v - w, v, w


@njit(cache=True)
def _segment(a, b):
    ab = sub(b, a)
    L2 = dot(ab, ab)
    if L2 <= 0.0:
        return 1.0, 0.0
    t = -dot(a, ab) / L2
    t = 0.0 if t < 0.0 else (1.0 if t > 1.0 else t)
    return 1.0 - t, t


@njit(cache=True)
def _degenerate_triangle(a, b, c):
    best, u, v, w = math.inf, 1.0, 0.0, 0.0
    x, y = _segment(a, b)
    d = norm(add(scl(a, x), scl(b, y)))
    if d < best:
        best, u, v, w = d, x, y, 0.0
    x, y = _segment(a, c)
    d = norm(add(scl(a, x), scl(c, y)))
    if d < best:
        best, u, v, w = d, x, 0.0, y
    x, y = _segment(b, c)
    d = norm(add(scl(b, x), scl(c, y)))
    if d < best:
        best, u, v, w = d, 0.0, x, y
    return u, v, w


@njit(cache=True)
def _nearest(W, n, lam):
    """Weights lam[:n] of the point of the simplex W[:n] nearest the origin; True when the
    origin is inside the tetrahedron (n = 4; lam then are its barycentric coordinates)."""
    if n == 1:
        lam[0] = 1.0
        return False
    a, b = vec(W[0]), vec(W[1])
    if n == 2:
        lam[0], lam[1] = _segment(a, b)
        return False
    c = vec(W[2])
    if n == 3:
        lam[0], lam[1], lam[2] = _triangle(a, b, c)
        return False
    # the tetrahedron: the origin is outside face (i, j, k) when it is on the other side from l
    best = math.inf
    inside = True
    for f in range(4):
        i, j, k, l = (1, 2, 3, 0) if f == 0 else ((0, 2, 3, 1) if f == 1 else ((0, 1, 3, 2) if f == 2 else (0, 1, 2, 3)))
        pi, pj, pk, pl = vec(W[i]), vec(W[j]), vec(W[k]), vec(W[l])
        nrm = cross(sub(pj, pi), sub(pk, pi))
        so = -dot(nrm, pi)                   # side of the origin
        sl = dot(nrm, sub(pl, pi))           # side of the fourth vertex
        if so * sl < 0.0 or sl == 0.0:
            inside = False
            u, v, w = _triangle(pi, pj, pk)
            x = add(add(scl(pi, u), scl(pj, v)), scl(pk, w))
            dd = dot(x, x)
            if dd < best:
                best = dd
                lam[i], lam[j], lam[k], lam[l] = u, v, w, 0.0
    return inside                            # (lam is not used then: EPA takes over)


@njit(cache=True)
def _reduce(W, WA, WB, n, lam):
    """Keep the simplex points of positive weight; returns their number."""
    m = 0
    for i in range(n):
        if lam[i] > 0.0:
            for r in range(3):
                W[m, r], WA[m, r], WB[m, r] = W[i, r], WA[i, r], WB[i, r]
            lam[m] = lam[i]
            m += 1
    return m


@njit(cache=True)
def _combo(X, lam, n):
    x = (0.0, 0.0, 0.0)
    for i in range(n):
        x = axpy(x, lam[i], vec(X[i]))
    return x


@njit(cache=True)
def gjk(t1, p1, R1, s1, V1, t2, p2, R2, s2, V2, full, W, WA, WB, lam):
    """GJK on the two shapes (their cores unless ``full``): (distance, number of simplex points
    left in W, WA, WB with weights lam, True when they intersect).  The nearest points are
    sum lam_i WA_i on shape 1 and sum lam_i WB_i on shape 2 (W = WA - WB)."""
    d = sub(vec(p1), vec(p2))
    if norm(d) < 1e-12:
        d = (1.0, 0.0, 0.0)
    n = 0
    v = d
    dist = math.inf
    for it in range(GJK_ITER):
        # the support point of M = A - B along -v
        a = support(t1, p1, R1, s1, V1, scl(v, -1.0), full)
        b = support(t2, p2, R2, s2, V2, v, full)
        w = sub(a, b)
        vv = dot(v, v)
        if n > 0:
            vl = math.sqrt(vv)
            if vl - dot(v, w) / vl <= GJK_TOL:
                return vl, n, False           # w brings v no closer: converged
            dup = False
            for i in range(n):
                if W[i, 0] == w[0] and W[i, 1] == w[1] and W[i, 2] == w[2]:
                    dup = True
            if dup:
                return vl, n, False
        for r in range(3):
            W[n, r], WA[n, r], WB[n, r] = w[r], a[r], b[r]
        n += 1
        inside = _nearest(W, n, lam)
        if inside:
            return 0.0, 4, True
        n = _reduce(W, WA, WB, n, lam)
        v = _combo(W, lam, n)
        nv = norm(v)
        if nv < 1e-13:
            return 0.0, n, True               # the origin is on the simplex: touching or overlapping
        if nv > dist:                         # no progress (round-off): stop with the best
            return nv, n, False
        dist = nv
    return dist, n, False


# --- EPA ---------------------------------------------------------------------------------------
@njit(cache=True)
def _face(P, F, FN, FD, f, i, j, k, c):
    """Face f = (i, j, k) of the polytope P, oriented away from the interior point c."""
    pi, pj, pk = vec(P[i]), vec(P[j]), vec(P[k])
    nrm = cross(sub(pj, pi), sub(pk, pi))
    L = norm(nrm)
    if dot(nrm, sub(pi, c)) < 0.0:
        j, k = k, j
        nrm = scl(nrm, -1.0)
    F[f, 0], F[f, 1], F[f, 2] = i, j, k
    if L < 1e-300:
        FN[f, 0], FN[f, 1], FN[f, 2] = 0.0, 0.0, 0.0
        FD[f] = math.inf                      # a sliver: never the nearest face
        return
    nrm = scl(nrm, 1.0 / L)
    FN[f, 0], FN[f, 1], FN[f, 2] = nrm[0], nrm[1], nrm[2]
    FD[f] = dot(nrm, pi)


@njit(cache=True)
def _complete(t1, p1, R1, s1, V1, t2, p2, R2, s2, V2, W, WA, WB, n):
    """Grow GJK's simplex (the origin on it, n < 4) to a tetrahedron of support points of M with
    the origin in it or on its boundary: support points along directions normal to it."""
    dirs = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (-1.0, 0.0, 0.0), (0.0, -1.0, 0.0), (0.0, 0.0, -1.0))
    while n < 4:
        best, bw, ba, bb = -1.0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
        for q in range(12):
            if n == 3:                        # the triangle's normal, both ways
                e = cross(sub(vec(W[1]), vec(W[0])), sub(vec(W[2]), vec(W[0])))
                if q >= 2:
                    break
                e = e if q == 0 else scl(e, -1.0)
            elif n == 2:                      # perpendicular to the segment
                u = sub(vec(W[1]), vec(W[0]))
                e = cross(u, dirs[q % 6])
                if q >= 6:
                    e = scl(e, -1.0)
            else:
                e = dirs[q % 6]
            if norm(e) < 1e-300:
                continue
            a = support(t1, p1, R1, s1, V1, e, True)
            b = support(t2, p2, R2, s2, V2, scl(e, -1.0), True)
            w = sub(a, b)
            # how far w is from the affine hull of the simplex (its volume gain)
            if n == 1:
                g = norm(sub(w, vec(W[0])))
            elif n == 2:
                g = norm(cross(sub(vec(W[1]), vec(W[0])), sub(w, vec(W[0]))))
            else:
                g = abs(dot(cross(sub(vec(W[1]), vec(W[0])), sub(vec(W[2]), vec(W[0]))), sub(w, vec(W[0]))))
            if g > best:
                best, bw, ba, bb = g, w, a, b
        if best <= 1e-300:
            return n
        for r in range(3):
            W[n, r], WA[n, r], WB[n, r] = bw[r], ba[r], bb[r]
        n += 1
    return n


@njit(cache=True)
def epa(t1, p1, R1, s1, V1, t2, p2, R2, s2, V2, W, WA, WB, n):
    """EPA from the tetrahedron W[:4] (support points of the full shapes with the origin in it):
    (depth, normal from shape 1 to shape 2, witness point on 1, witness point on 2); depth < 0
    when the polytope cannot be built (degenerate)."""
    n = _complete(t1, p1, R1, s1, V1, t2, p2, R2, s2, V2, W, WA, WB, n)
    if n < 4:
        return -1.0, (0.0, 0.0, 1.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    P, PA, PB = np.empty((MAXV, 3)), np.empty((MAXV, 3)), np.empty((MAXV, 3))
    F = np.empty((MAXF, 3), dtype=np.int64)
    FN, FD = np.empty((MAXF, 3)), np.empty(MAXF)
    alive = np.zeros(MAXF, dtype=np.bool_)
    E = np.empty((3 * MAXF, 2), dtype=np.int64)
    for i in range(4):
        for r in range(3):
            P[i, r], PA[i, r], PB[i, r] = W[i, r], WA[i, r], WB[i, r]
    c = scl(add(add(vec(P[0]), vec(P[1])), add(vec(P[2]), vec(P[3]))), 0.25)
    nv, nf = 4, 4
    _face(P, F, FN, FD, 0, 0, 1, 2, c)
    _face(P, F, FN, FD, 1, 0, 1, 3, c)
    _face(P, F, FN, FD, 2, 0, 2, 3, c)
    _face(P, F, FN, FD, 3, 1, 2, 3, c)
    for f in range(4):
        alive[f] = True
    best = 0
    for it in range(EPA_ITER):
        best, bd = -1, math.inf
        for f in range(nf):
            if alive[f] and FD[f] < bd:
                best, bd = f, FD[f]
        if best < 0:
            break
        nrm = vec(FN[best])
        a = support(t1, p1, R1, s1, V1, nrm, True)
        b = support(t2, p2, R2, s2, V2, scl(nrm, -1.0), True)
        w = sub(a, b)
        if dot(w, nrm) - bd <= EPA_TOL or nv == MAXV:
            break
        # the faces w sees go; the horizon (their edges not shared between two of them) closes
        ne = 0
        for f in range(nf):
            if alive[f] and FD[f] < math.inf and dot(vec(FN[f]), sub(w, vec(P[F[f, 0]]))) > 0.0:
                alive[f] = False
                for e in range(3):
                    E[ne, 0], E[ne, 1] = F[f, e], F[f, (e + 1) % 3]
                    ne += 1
        if ne == 0:
            break
        for r in range(3):
            P[nv, r], PA[nv, r], PB[nv, r] = w[r], a[r], b[r]
        full = False
        for e in range(ne):
            i, j = E[e, 0], E[e, 1]
            shared = False
            for e2 in range(ne):
                if E[e2, 0] == j and E[e2, 1] == i:
                    shared = True
                    break
            if shared:
                continue
            # reuse a dead slot when there is one
            f = nf
            for g in range(nf):
                if not alive[g]:
                    f = g
                    break
            if f == nf:
                if nf == MAXF:
                    full = True
                    break
                nf += 1
            _face(P, F, FN, FD, f, i, j, nv, c)
            alive[f] = True
        nv += 1
        if full:
            break
    if best < 0:
        return -1.0, (0.0, 0.0, 1.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    nrm = vec(FN[best])
    i, j, k = F[best, 0], F[best, 1], F[best, 2]
    # the origin's projection on the face, in barycentric coordinates of the face
    x = scl(nrm, FD[best])
    pi, pj, pk = vec(P[i]), vec(P[j]), vec(P[k])
    u, v, w_ = _triangle(sub(pi, x), sub(pj, x), sub(pk, x))
    wa = add(add(scl(vec(PA[i]), u), scl(vec(PA[j]), v)), scl(vec(PA[k]), w_))
    wb = add(add(scl(vec(PB[i]), u), scl(vec(PB[j]), v)), scl(vec(PB[k]), w_))
    return FD[best], nrm, wa, wb


@njit(cache=True)
def convex_convex(t1, p1, R1, s1, V1, t2, p2, R2, s2, V2, margin, out, k):
    """One contact between two convex shapes (module docstring): GJK on the cores, EPA on the
    full shapes when the cores overlap."""
    W, WA, WB, lam = np.empty((4, 3)), np.empty((4, 3)), np.empty((4, 3)), np.empty(4)
    r1, r2 = core_radius(t1, s1), core_radius(t2, s2)
    dc, n, hit = gjk(t1, p1, R1, s1, V1, t2, p2, R2, s2, V2, False, W, WA, WB, lam)
    if dc - r1 - r2 > margin:
        return 0
    if not hit and dc > 1e-9:
        ac, bc = _combo(WA, lam, n), _combo(WB, lam, n)
        nrm = scl(sub(bc, ac), 1.0 / dc)
        dist = dc - r1 - r2
        a, b = axpy(ac, r1, nrm), axpy(bc, -r2, nrm)
        put(out, k, dist, scl(add(a, b), 0.5), nrm)
        return 1
    if r1 > 0.0 or r2 > 0.0:                  # the cores overlap: the full shapes' simplex
        dc, n, hit = gjk(t1, p1, R1, s1, V1, t2, p2, R2, s2, V2, True, W, WA, WB, lam)
        if not hit and dc > 1e-9:             # (round-off: cores within 1e-9, full shapes apart)
            ac, bc = _combo(WA, lam, n), _combo(WB, lam, n)
            nrm = scl(sub(bc, ac), 1.0 / dc)
            put(out, k, dc, scl(add(ac, bc), 0.5), nrm)
            return 1 if dc <= margin else 0
    depth, nrm, a, b = epa(t1, p1, R1, s1, V1, t2, p2, R2, s2, V2, W, WA, WB, n)
    if depth < 0.0:
        return 0
    # EPA's face distance is a lower bound of the depth; the overlap of the two shapes along its
    # normal, h1(n) + h2(-n), an upper bound (translating shape 2 by it along n separates them).
    # Where EPA stopped short (its vertex budget: deep overlaps of round shapes with a whole
    # circle of deepest directions, as two coaxial round shapes), descend on the overlap
    # h1(n) + h2(-n) by the fixed point n <- w(n) / |w(n)|, w(n) = s1(n) - s2(-n) (at the minimum
    # w is along n), and report the overlap along the final normal: always a translation that
    # separates the shapes, never shallower than the truth.
    w = sub(support(t1, p1, R1, s1, V1, nrm, True), support(t2, p2, R2, s2, V2, scl(nrm, -1.0), True))
    ov = dot(w, nrm)
    if ov - depth > EPA_TOL:
        for _ in range(32):
            L = norm(w)
            if L < 1e-300:
                break
            cand = scl(w, 1.0 / L)
            wc = sub(support(t1, p1, R1, s1, V1, cand, True), support(t2, p2, R2, s2, V2, scl(cand, -1.0), True))
            oc = dot(wc, cand)
            if oc >= ov - 1e-15:
                break
            nrm, w, ov = cand, wc, oc
        a = support(t1, p1, R1, s1, V1, nrm, True)
        b = support(t2, p2, R2, s2, V2, scl(nrm, -1.0), True)
        depth = ov
    put(out, k, -depth, scl(add(a, b), 0.5), nrm)
    return 1


@njit(cache=True)
def _flat(t):
    """Shapes with faces or straight edges (where one point cannot hold a resting body)."""
    return t == CAPSULE or t == CYLINDER or t == BOX or t == MESH


@njit(cache=True)
def convex_pair(t1, p1, R1, s1, V1, t2, p2, R2, s2, V2, margin, out, k):
    """The contacts of a convex pair: GJK / EPA's one (convex_convex); when both shapes have
    faces or straight edges, the points where their faces along its normal overlap instead
    (``manifold``), if there are two or more."""
    m = convex_convex(t1, p1, R1, s1, V1, t2, p2, R2, s2, V2, margin, out, k)
    if m == 0 or not (_flat(t1) and _flat(t2)):
        return m
    n = (out[k, 4], out[k, 5], out[k, 6])
    first = (out[k, 0], out[k, 1], out[k, 2], out[k, 3])
    mm = manifold(t1, p1, R1, s1, V1, t2, p2, R2, s2, V2, n, margin, out, k + 1)
    if mm < 2:
        return 1
    # GJK / EPA's point stays (row k) when it is deeper than the sampled ones (a curved face's
    # deepest line lies between the samples); else the samples move up one row
    low = math.inf
    for c in range(k + 1, k + 1 + mm):
        low = min(low, out[c, 0])
    if first[0] < low - 1e-12:
        return mm + 1
    for c in range(k, k + mm):
        for r in range(7):
            out[c, r] = out[c + 1, r]
    return mm


@njit(cache=True)
def plane_mesh(p1, R1, s1, p2, R2, s2, V2, margin, out, k):
    """The hull's vertices within the plane's margin: the deepest, then up to 3 more by depth
    (at most 4, as MuJoCo's plane-mesh); each at its own depth, the point midway."""
    n = (R1[0, 2], R1[1, 2], R1[2, 2])
    d0 = dot(sub(vec(p2), vec(p1)), n)
    nl = mtv(R2, n)
    h = np.empty(V2.shape[0])
    for i in range(V2.shape[0]):
        h[i] = d0 + nl[0] * V2[i, 0] + nl[1] * V2[i, 1] + nl[2] * V2[i, 2]
    m = 0
    for _ in range(4):
        best, j = math.inf, -1
        for i in range(V2.shape[0]):
            if h[i] <= margin and h[i] < best:
                best, j = h[i], i
        if j < 0:
            break
        h[j] = math.inf
        x = add(vec(p2), mv(R2, vec(V2[j])))
        put(out, k + m, best, axpy(x, -0.5 * best, n), n)
        m += 1
    return m


# --- several points: the two shapes' faces along the normal (a manifold) ------------------------
TILT = 0.05             # radians: the normal's tilts that sample a face (faces within ~3 degrees)
NSAMP = 9               # the support along n and along 8 tilts of it
MAXMANIFOLD = 8         # most points of one convex pair


@njit(cache=True)
def _samples(t, p, R, s, V, n, X):
    """The shape's support along n and along the 8 directions tilted from n by TILT: points
    of its face (or edge) along n.  X (NSAMP, 3)."""
    t1, t2 = tangents(n)
    tt = math.tan(TILT)
    for k in range(NSAMP):
        d = n
        if k > 0:
            ang = (k - 1) * math.pi / 4.0
            d = axpy(axpy(n, tt * math.cos(ang), t1), tt * math.sin(ang), t2)
        x = support(t, p, R, s, V, d, True)
        X[k, 0], X[k, 1], X[k, 2] = x[0], x[1], x[2]


@njit(cache=True)
def _hull2(U, m, H):
    """The convex hull (counter-clockwise, gift wrapping) of the 2-d points U[:m]: its number of
    vertices, their indices in H; points closer than 1e-9 m are one."""
    # the lowest-leftmost point starts
    s0 = 0
    for i in range(1, m):
        if U[i, 1] < U[s0, 1] - 1e-12 or (abs(U[i, 1] - U[s0, 1]) <= 1e-12 and U[i, 0] < U[s0, 0]):
            s0 = i
    h, cur = 0, s0
    for _ in range(m + 1):
        H[h] = cur
        h += 1
        nxt = -1
        for i in range(m):
            if i == cur:
                continue
            dx, dy = U[i, 0] - U[cur, 0], U[i, 1] - U[cur, 1]
            if dx * dx + dy * dy < 1e-18:
                continue
            if nxt < 0:
                nxt = i
                continue
            ax, ay = U[nxt, 0] - U[cur, 0], U[nxt, 1] - U[cur, 1]
            cr = ax * dy - ay * dx
            if cr < 0.0 or (cr == 0.0 and dx * dx + dy * dy > ax * ax + ay * ay):
                nxt = i                      # i is to the right of cur -> nxt: take it
        if nxt < 0 or nxt == s0:
            break
        cur = nxt
    return h


@njit(cache=True)
def _inside(U, H, h, x, y):
    """Is (x, y) inside the counter-clockwise convex polygon U[H[:h]] (h >= 3)?"""
    for e in range(h):
        i, j = H[e], H[(e + 1) % h]
        if (U[j, 0] - U[i, 0]) * (y - U[i, 1]) - (U[j, 1] - U[i, 1]) * (x - U[i, 0]) < -1e-12:
            return False
    return True


@njit(cache=True)
def manifold(t1, p1, R1, s1, V1, t2, p2, R2, s2, V2, n, margin, out, k):
    """Up to MAXMANIFOLD - 1 points where the two shapes' faces along the normal n overlap: the
    sampled points of each face (``_samples``) whose projection on the tangent plane lies in
    the other face's, each at its own height against the other shape's support plane
    (dist = n.b0 - n.a for a point a of shape 1, n.b - n.a0 for a point b of shape 2).  Returns
    the number written (0 or 1: the caller keeps its single contact)."""
    A, B = np.empty((NSAMP, 3)), np.empty((NSAMP, 3))
    _samples(t1, p1, R1, s1, V1, n, A)
    _samples(t2, p2, R2, s2, V2, scl(n, -1.0), B)
    ta, tb = tangents(n)
    UA, UB = np.empty((NSAMP, 2)), np.empty((NSAMP, 2))
    for i in range(NSAMP):
        UA[i, 0], UA[i, 1] = dot(vec(A[i]), ta), dot(vec(A[i]), tb)
        UB[i, 0], UB[i, 1] = dot(vec(B[i]), ta), dot(vec(B[i]), tb)
    HA, HB = np.empty(NSAMP + 1, dtype=np.int64), np.empty(NSAMP + 1, dtype=np.int64)
    ha, hb = _hull2(UA, NSAMP, HA), _hull2(UB, NSAMP, HB)
    ha0, hb0 = dot(n, vec(A[0])), dot(n, vec(B[0]))
    m = 0
    if hb >= 3:
        for e in range(ha):
            i = HA[e]
            if m < MAXMANIFOLD - 1 and _inside(UB, HB, hb, UA[i, 0], UA[i, 1]):
                dist = hb0 - dot(n, vec(A[i]))
                if dist <= margin:
                    put(out, k + m, dist, axpy(vec(A[i]), 0.5 * dist, n), n)
                    m += 1
    if ha >= 3:
        for e in range(hb):
            i = HB[e]
            if m < MAXMANIFOLD - 1 and _inside(UA, HA, ha, UB[i, 0], UB[i, 1]):
                dup = False                  # a point of 2 on a point of 1 already taken
                for c in range(m):
                    px = out[k + c, 1] - B[i, 0] + 0.5 * out[k + c, 0] * n[0]
                    py = out[k + c, 2] - B[i, 1] + 0.5 * out[k + c, 0] * n[1]
                    pz = out[k + c, 3] - B[i, 2] + 0.5 * out[k + c, 0] * n[2]
                    if px * px + py * py + pz * pz < 1e-18:
                        dup = True
                if dup:
                    continue
                dist = dot(n, vec(B[i])) - ha0
                if dist <= margin:
                    put(out, k + m, dist, axpy(vec(B[i]), -0.5 * dist, n), n)
                    m += 1
    return m
