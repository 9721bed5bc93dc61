"""Narrow phase of the smooth primitive pairs: a plane against every convex primitive, and the
pairs of spheres, capsules and a sphere with a cylinder.

Every function has the same form: ``f(p1, R1, s1, p2, R2, s2, margin, out, k)`` for geom 1 at
world position ``p1`` with axes ``R1`` (columns) and size ``s1``, geom 2 likewise, with
type(1) <= type(2) in MuJoCo's order (plane < sphere < capsule < ellipsoid < cylinder < box).
It writes the contacts whose signed distance ``dist <= margin`` into rows ``k, k + 1, ...`` of
``out`` as ``[dist, pos (3), normal (3)]`` and returns how many it wrote.  ``normal`` points
from geom 1 to geom 2, ``pos`` is midway between the two surfaces: the surface points are
``pos - dist/2 normal`` (geom 1) and ``pos + dist/2 normal`` (geom 2).  These are the
conventions of MuJoCo (engine_collision_primitive.c), whose primitive colliders these follow.
"""
import math

from numba import njit

from ._vec import add, axpy, clip, col, cross, dot, mtv, mv, norm, put, scl, sub, vec

MINVAL = 1e-15          # MuJoCo's mjMINVAL: below this a length is taken as zero


# --- helpers on points (no geoms): used by several pairs --------------------------------------
@njit(cache=True)
def sphere_sphere_at(c1, r1, z1, c2, r2, z2, margin, out, k):
    """Two spheres at c1, c2; z1, z2 their frames' z axes, for a normal when c1 = c2."""
    d = sub(c2, c1)
    L = norm(d)
    dist = L - r1 - r2
    if dist > margin:
        return 0
    if L < MINVAL:              # concentric: the cross product of the z axes, else world x
        n = cross(z1, z2)
        ln = norm(n)
        n = scl(n, 1.0 / ln) if ln >= MINVAL else (1.0, 0.0, 0.0)
    else:
        n = scl(d, 1.0 / L)
    put(out, k, dist, axpy(c1, r1 + 0.5 * dist, n), n)
    return 1


@njit(cache=True)
def plane_sphere_at(o, n, c, r, margin, out, k):
    """The half-space below the plane through o with unit normal n, and a sphere (c, r)."""
    dist = dot(sub(c, o), n) - r
    if dist > margin:
        return 0
    put(out, k, dist, axpy(c, -(r + 0.5 * dist), n), n)
    return 1


@njit(cache=True)
def segment_segment(c1, a1, c2, a2):
    """Closest points of the segments c1 + x a1 and c2 + y a2, x, y in [-1, 1] (a1, a2 the
    half-axes): (x, y), or x = y = nan when the segments are parallel (Ericson 2004, Real-Time
    Collision Detection, sec. 5.1.9: the unconstrained minimiser, then clamp one parameter and
    solve for the other, twice)."""
    d = sub(c1, c2)
    aa, bb, ab = dot(a1, a1), dot(a2, a2), dot(a1, a2)
    u, v = -dot(a1, d), dot(a2, d)
    det = aa * bb - ab * ab                     # |a1 x a2|^2
    if abs(det) < MINVAL:
        return math.nan, math.nan
    # minimise |d + x a1 - y a2|^2:  [aa -ab; -ab bb] [x; y] = [u; v]
    x = (bb * u + ab * v) / det
    y = (ab * u + aa * v) / det
    if x > 1.0:
        x, y = 1.0, (v + ab) / bb
    elif x < -1.0:
        x, y = -1.0, (v - ab) / bb
    if y > 1.0:
        y, x = 1.0, clip((u + ab) / aa, -1.0, 1.0)
    elif y < -1.0:
        y, x = -1.0, clip((u - ab) / aa, -1.0, 1.0)
    return x, y


# --- plane pairs ---------------------------------------------------------------------------------
@njit(cache=True)
def plane_sphere(p1, R1, s1, p2, R2, s2, margin, out, k):
    return plane_sphere_at(vec(p1), col(R1, 2), vec(p2), s2[0], margin, out, k)


@njit(cache=True)
def plane_capsule(p1, R1, s1, p2, R2, s2, margin, out, k):
    """The two end spheres of the capsule's segment (2 points when it lies on the plane)."""
    o, n, c, a = vec(p1), col(R1, 2), vec(p2), scl(col(R2, 2), s2[1])
    m = plane_sphere_at(o, n, add(c, a), s2[0], margin, out, k)
    return m + plane_sphere_at(o, n, sub(c, a), s2[0], margin, out, k + m)


@njit(cache=True)
def plane_box(p1, R1, s1, p2, R2, s2, margin, out, k):
    """The corners of the box on the plane's side of its centre (at most 4) within the margin."""
    n = col(R1, 2)
    d0 = dot(sub(vec(p2), vec(p1)), n)
    m = 0
    for i in range(8):
        v = (s2[0] if i & 1 else -s2[0], s2[1] if i & 2 else -s2[1], s2[2] if i & 4 else -s2[2])
        corner = mv(R2, v)
        h = dot(n, corner)              # height of the corner over the box's centre
        if h > 0.0 or d0 + h > margin:
            continue
        dist = d0 + h
        put(out, k + m, dist, axpy(add(vec(p2), corner), -0.5 * dist, n), n)
        m += 1
        if m == 4:
            break
    return m


@njit(cache=True)
def plane_cylinder(p1, R1, s1, p2, R2, s2, margin, out, k):
    """The deepest point of the rim, the rim point below it on the other cap, and two more points
    of the near cap's rim at +-120 degrees (3 or 4 points; MuJoCo's plane-cylinder)."""
    n, c = col(R1, 2), vec(p2)
    axis = col(R2, 2)
    pa = dot(n, axis)
    if pa > 0.0:                        # the axis points towards the plane
        axis, pa = scl(axis, -1.0), -pa
    d0 = dot(sub(c, vec(p1)), n)
    # radial direction of the deepest rim point: -n without its component along the axis
    w = sub(scl(axis, pa), n)
    lw = norm(w)
    if lw >= MINVAL:
        w = scl(w, s2[0] / lw)
    else:                               # the disc is parallel to the plane: any radius
        w = scl(col(R2, 0), s2[0])
    pw = dot(w, n)
    a = scl(axis, s2[1])
    pa *= s2[1]
    dist = d0 + pa + pw
    if dist > margin:
        return 0
    put(out, k, dist, axpy(add(add(c, w), a), -0.5 * dist, n), n)
    m = 1
    dist = d0 - pa + pw
    if dist <= margin:
        put(out, k + m, dist, axpy(sub(add(c, w), a), -0.5 * dist, n), n)
        m += 1
    dist = d0 + pa - 0.5 * pw
    if dist <= margin:
        t = cross(w, a)
        t = scl(t, s2[0] * math.sqrt(3.0) / 2.0 / norm(t))
        base = axpy(add(c, a), -0.5, w)
        put(out, k + m, dist, axpy(add(base, t), -0.5 * dist, n), n)
        put(out, k + m + 1, dist, axpy(sub(base, t), -0.5 * dist, n), n)
        m += 2
    return m


@njit(cache=True)
def plane_ellipsoid(p1, R1, s1, p2, R2, s2, margin, out, k):
    """The ellipsoid's support point in the direction -n: with x = c + R D u, |u| = 1,
    min n.x is at u = -D R^T n / |D R^T n|, so dist = n.(c - o) - |D R^T n|."""
    n = col(R1, 2)
    nl = mtv(R2, n)
    dn = (s2[0] * nl[0], s2[1] * nl[1], s2[2] * nl[2])
    L = norm(dn)
    dist = dot(sub(vec(p2), vec(p1)), n) - L
    if dist > margin:
        return 0
    sup = add(vec(p2), mv(R2, (-s2[0] * dn[0] / L, -s2[1] * dn[1] / L, -s2[2] * dn[2] / L)))
    put(out, k, dist, axpy(sup, -0.5 * dist, n), n)
    return 1


# --- spheres and capsules --------------------------------------------------------------------------
@njit(cache=True)
def sphere_sphere(p1, R1, s1, p2, R2, s2, margin, out, k):
    return sphere_sphere_at(vec(p1), s1[0], col(R1, 2), vec(p2), s2[0], col(R2, 2), margin, out, k)


@njit(cache=True)
def sphere_capsule(p1, R1, s1, p2, R2, s2, margin, out, k):
    """The sphere against the point of the capsule's segment nearest its centre."""
    axis = col(R2, 2)
    x = clip(dot(axis, sub(vec(p1), vec(p2))), -s2[1], s2[1])
    return sphere_sphere_at(vec(p1), s1[0], col(R1, 2), axpy(vec(p2), x, axis), s2[0], axis, margin, out, k)


@njit(cache=True)
def capsule_capsule(p1, R1, s1, p2, R2, s2, margin, out, k):
    """Spheres at the closest points of the two segments (Ericson 2004 sec. 5.1.9); parallel
    segments: each end of one against its nearest point on the other, two contacts at most."""
    c1, c2 = vec(p1), vec(p2)
    z1, z2 = col(R1, 2), col(R2, 2)
    a1, a2 = scl(z1, s1[1]), scl(z2, s2[1])
    x, y = segment_segment(c1, a1, c2, a2)
    if not math.isnan(x):
        return sphere_sphere_at(axpy(c1, x, a1), s1[0], z1, axpy(c2, y, a2), s2[0], z2, margin, out, k)
    # parallel: the ends of segment 1, then (if fewer than two contacts) the ends of segment 2
    m = 0
    for e in (1.0, -1.0):
        e1 = axpy(c1, e, a1)
        y = clip(dot(a2, sub(e1, c2)) / dot(a2, a2), -1.0, 1.0)
        m += sphere_sphere_at(e1, s1[0], z1, axpy(c2, y, a2), s2[0], z2, margin, out, k + m)
    for e in (1.0, -1.0):
        if m >= 2:
            break
        e2 = axpy(c2, e, a2)
        x = clip(dot(a1, sub(e2, c1)) / dot(a1, a1), -1.0, 1.0)
        m += sphere_sphere_at(axpy(c1, x, a1), s1[0], z1, e2, s2[0], z2, margin, out, k + m)
    return m


@njit(cache=True)
def sphere_cylinder(p1, R1, s1, p2, R2, s2, margin, out, k):
    """The sphere's centre against the cylinder's nearest feature: the side (a sphere on the
    axis), a cap (a plane) or the rim (a point); a centre inside takes the nearer of side and
    cap (MuJoCo's sphere-cylinder)."""
    c, o, axis = vec(p1), vec(p2), col(R2, 2)
    r, h = s2[0], s2[1]
    d = sub(c, o)
    x = dot(axis, d)
    ap = scl(axis, x)
    pp = sub(d, ap)                         # radial part
    rr = dot(pp, pp)
    side, cap = abs(x) < h, rr < r * r
    if side and cap:                        # centre inside the cylinder: the nearer boundary
        if h - abs(x) < r - math.sqrt(rr):
            side = False
        else:
            cap = False
    if side:
        return sphere_sphere_at(c, s1[0], col(R1, 2), add(o, ap), r, axis, margin, out, k)
    if cap:
        # the cap's plane, its normal outward; then flip the normal to point from sphere to cylinder
        nc = axis if x > 0.0 else scl(axis, -1.0)
        m = plane_sphere_at(axpy(o, h, nc), nc, c, s1[0], margin, out, k)
        if m:
            out[k, 4], out[k, 5], out[k, 6] = -out[k, 4], -out[k, 5], -out[k, 6]
        return m
    rim = add(axpy(o, h if x > 0.0 else -h, axis), scl(pp, r / math.sqrt(rr)))
    return sphere_sphere_at(c, s1[0], col(R1, 2), rim, 0.0, axis, margin, out, k)
