"""Narrow phase of the pairs with a box: sphere-box, capsule-box, box-box (conventions as in
:mod:`.primitives`: geom 1 is the sphere, the capsule, or the first box; ``normal`` from geom 1
to geom 2; ``pos`` midway between the surfaces; contacts with ``dist <= margin``)."""
import math

import numpy as np
from numba import njit

from ._vec import add, axpy, clip, col, dot, mtv, mv, norm, put, scl, sub, vec
from ._primitives import MINVAL, segment_segment


@njit(cache=True)
def _compose(i, xi, j, xj, l, xl):
    """The 3-vector with x_i = xi, x_j = xj, x_l = xl ({i, j, l} = {0, 1, 2})."""
    x0 = xi if i == 0 else (xj if j == 0 else xl)
    x1 = xi if i == 1 else (xj if j == 1 else xl)
    x2 = xi if i == 2 else (xj if j == 2 else xl)
    return (x0, x1, x2)


@njit(cache=True)
def box_sdf(x, e):
    """Signed distance of the point x (box frame) to the box of half-extents e: the distance
    to the box outside, minus the distance to the nearest face inside."""
    q0, q1, q2 = abs(x[0]) - e[0], abs(x[1]) - e[1], abs(x[2]) - e[2]
    o = math.sqrt(max(q0, 0.0) ** 2 + max(q1, 0.0) ** 2 + max(q2, 0.0) ** 2)
    return o + min(max(q0, max(q1, q2)), 0.0)


@njit(cache=True)
def sphere_box_local(c, r, e, margin, out, k, R2, p2):
    """A sphere (centre c in the box frame, radius r) against the box e (frame R2, p2 in the
    world): the sphere against the box's nearest point, or with its centre inside, against
    the nearest face.  The normal points from the sphere to the box."""
    cl = (clip(c[0], -e[0], e[0]), clip(c[1], -e[1], e[1]), clip(c[2], -e[2], e[2]))
    d = sub(cl, c)
    L = norm(d)
    if L - r > margin:
        return 0
    if L <= MINVAL:
        # centre inside: the face at the least depth; the normal enters the box through it
        best, ax, sg = math.inf, 0, 1.0
        for i in range(3):
            for s in (-1.0, 1.0):
                depth = abs(s * e[i] - c[i])
                if depth < best:
                    best, ax, sg = depth, i, s
        nl = (-sg if ax == 0 else 0.0, -sg if ax == 1 else 0.0, -sg if ax == 2 else 0.0)
        dist = -best - r
        pl = axpy(c, 0.5 * (r - best), nl)
    else:
        nl = scl(d, 1.0 / L)
        dist = L - r
        pl = axpy(c, r + 0.5 * dist, nl)
    put(out, k, dist, add(vec(p2), mv(R2, pl)), mv(R2, nl))
    return 1


@njit(cache=True)
def sphere_box(p1, R1, s1, p2, R2, s2, margin, out, k):
    return sphere_box_local(mtv(R2, sub(vec(p1), vec(p2))), s1[0], s2, margin, out, k, R2, p2)


@njit(cache=True)
def _deepest_on_segment(c, a, e):
    """The parameter t in [-1, 1] of the point c + t a (box frame) deepest in (or nearest to)
    the box e.  The box's signed distance is convex along the segment and piecewise smooth:
    outside, the closest pair is an end of the segment or the segment against an edge of the
    box; inside, it is max_i(|x_i| - e_i), piecewise linear, with its minimum at a kink
    (x_i = 0) or where two faces are equally far.  Its minimum is at one of these candidates."""
    best_t, best = 1.0, box_sdf(axpy(c, 1.0, a), e)
    f = box_sdf(axpy(c, -1.0, a), e)
    if f < best:
        best_t, best = -1.0, f
    for j in range(3):
        # the four edges of the box along axis j: segment against segment
        for s1 in (-1.0, 1.0):
            for s2 in (-1.0, 1.0):
                # the edge o + u ea, u in [-1, 1]: o_j = 0, the other two at the signs' corner
                j1, j2 = (j + 1) % 3, (j + 2) % 3
                o = _compose(j1, s1 * e[j1], j2, s2 * e[j2], j, 0.0)
                ea = _compose(j, e[j], j1, 0.0, j2, 0.0)
                t, _ = segment_segment(c, a, o, ea)
                if not math.isnan(t):
                    f = box_sdf(axpy(c, t, a), e)
                    if f < best:
                        best_t, best = t, f
        # inside: x_j = 0, and |x_i| - e_i = |x_j| - e_j
        if abs(a[j]) > MINVAL:
            t = clip(-c[j] / a[j], -1.0, 1.0)
            f = box_sdf(axpy(c, t, a), e)
            if f < best:
                best_t, best = t, f
        i = (j + 1) % 3
        for si in (-1.0, 1.0):
            for sj in (-1.0, 1.0):
                den = si * a[i] - sj * a[j]
                if abs(den) > MINVAL:
                    t = clip((e[i] - e[j] - si * c[i] + sj * c[j]) / den, -1.0, 1.0)
                    f = box_sdf(axpy(c, t, a), e)
                    if f < best:
                        best_t, best = t, f
    return best_t


@njit(cache=True)
def capsule_box(p1, R1, s1, p2, R2, s2, margin, out, k):
    """Spheres on the capsule's segment against the box: at the segment's point deepest in (or
    nearest to) the box, and at the farthest point of the segment over the same face of the
    box (the far end of the segment clipped to the slab of that face), so that a capsule lying
    on a face rests on two points.  At most 2 contacts."""
    c = mtv(R2, sub(vec(p1), vec(p2)))
    a = scl(mtv(R2, col(R1, 2)), s1[1])
    r = s1[0]
    t = _deepest_on_segment(c, a, s2)
    m = sphere_box_local(axpy(c, t, a), r, s2, margin, out, k, R2, p2)
    if m == 0:
        return 0
    # the face the contact goes through: the largest component of its normal (box frame)
    nl = mtv(R2, (out[k, 4], out[k, 5], out[k, 6]))
    f = 0
    for i in (1, 2):
        if abs(nl[i]) > abs(nl[f]):
            f = i
    # the part of the segment over that face: |x_i| <= e_i for the other two axes
    lo, hi = -1.0, 1.0
    for i in range(3):
        if i == f:
            continue
        if abs(a[i]) > MINVAL:
            t1, t2 = (-s2[i] - c[i]) / a[i], (s2[i] - c[i]) / a[i]
            lo, hi = max(lo, min(t1, t2)), min(hi, max(t1, t2))
    if lo > hi:
        return 1
    t2 = lo if t - lo > hi - t else hi
    if abs(t2 - t) <= 1e-9:
        return 1
    return 1 + sphere_box_local(axpy(c, t2, a), r, s2, margin, out, k + 1, R2, p2)


@njit(cache=True)
def _clip_side(poly, n, buf, coord, sign, limit):
    """Sutherland and Hodgman (1974): the polygon poly[:n] (rows x, y, z) clipped to the
    half-plane sign * x[coord] <= limit, written to buf; returns the new vertex count."""
    m = 0
    for i in range(n):
        j = i + 1 if i + 1 < n else 0
        di = sign * poly[i, coord] - limit
        dj = sign * poly[j, coord] - limit
        if di <= 0.0:
            buf[m, 0], buf[m, 1], buf[m, 2] = poly[i, 0], poly[i, 1], poly[i, 2]
            m += 1
        if (di < 0.0 < dj) or (dj < 0.0 < di):
            s = di / (di - dj)
            for q in range(3):
                buf[m, q] = poly[i, q] + s * (poly[j, q] - poly[i, q])
            m += 1
    return m


@njit(cache=True)
def box_box(p1, R1, s1, p2, R2, s2, margin, out, k, poly):
    """Separating-axis test over the 15 axes of two boxes (Gottschalk, Lin and Manocha 1996,
    OBBTree; Eberly, Dynamic collision detection using oriented bounding boxes), then the
    contact manifold of the axis of least penetration: for a face axis, the incident face of
    the other box clipped to the reference face (Sutherland and Hodgman 1974), its vertices
    within the margin (at most 8); for an edge-edge axis, the closest points of the two edges
    (Ericson 2004 sec. 5.1.9), one contact.  A face axis is kept over an edge axis that is not
    5 % better (ODE's dBoxBox, R. Smith; MuJoCo's box-box): a face gives a manifold.
    ``poly`` is (2, 16, 3) scratch."""
    e1, e2 = s1, s2
    # box 2 in box 1's frame: C = R1^T R2 (columns: box 2's axes), t = R1^T (p2 - p1)
    t = mtv(R1, sub(vec(p2), vec(p1)))
    C00, C01, C02 = dot(col(R1, 0), col(R2, 0)), dot(col(R1, 0), col(R2, 1)), dot(col(R1, 0), col(R2, 2))
    C10, C11, C12 = dot(col(R1, 1), col(R2, 0)), dot(col(R1, 1), col(R2, 1)), dot(col(R1, 1), col(R2, 2))
    C20, C21, C22 = dot(col(R1, 2), col(R2, 0)), dot(col(R1, 2), col(R2, 1)), dot(col(R1, 2), col(R2, 2))
    C = ((C00, C01, C02), (C10, C11, C12), (C20, C21, C22))
    tol = margin + 1e-13 * (e1[0] + e1[1] + e1[2] + e2[0] + e2[1] + e2[2])
    best, code = -math.inf, -1
    for i in range(3):                      # faces of box 1: axis e_i
        rb = abs(C[i][0]) * e2[0] + abs(C[i][1]) * e2[1] + abs(C[i][2]) * e2[2]
        sep = abs(t[i]) - e1[i] - rb
        if sep > tol:
            return 0
        if sep > best:
            best, code = sep, i
    tb = (C00 * t[0] + C10 * t[1] + C20 * t[2], C01 * t[0] + C11 * t[1] + C21 * t[2],
          C02 * t[0] + C12 * t[1] + C22 * t[2])          # t in box 2's frame
    for j in range(3):                      # faces of box 2: axis C[:, j]
        ra = abs(C[0][j]) * e1[0] + abs(C[1][j]) * e1[1] + abs(C[2][j]) * e1[2]
        sep = abs(tb[j]) - e2[j] - ra
        if sep > tol:
            return 0
        if sep > best:
            best, code = sep, 3 + j
    face_best, face_code = best, code
    for i in range(3):                      # edges: e_i x C[:, j], in box 1's frame
        for j in range(3):
            cj = (C[0][j], C[1][j], C[2][j])
            u = (0.0, -cj[2], cj[1]) if i == 0 else ((cj[2], 0.0, -cj[0]) if i == 1 else (-cj[1], cj[0], 0.0))
            L = norm(u)
            if L * L < 1e-16:               # parallel edges: the face axes cover them
                continue
            u = scl(u, 1.0 / L)
            ra = e1[0] * abs(u[0]) + e1[1] * abs(u[1]) + e1[2] * abs(u[2])
            v = (C00 * u[0] + C10 * u[1] + C20 * u[2], C01 * u[0] + C11 * u[1] + C21 * u[2],
                 C02 * u[0] + C12 * u[1] + C22 * u[2])
            rb = e2[0] * abs(v[0]) + e2[1] * abs(v[1]) + e2[2] * abs(v[2])
            sep = abs(dot(u, t)) - ra - rb
            if sep > tol:
                return 0
            if sep - 1e-6 * abs(sep) > best and sep > face_best:
                best, code = sep, 6 + 3 * i + j
    if code >= 6:
        # an edge axis within ~8 degrees of the best face axis and not 5 % better: the face
        i, j = (code - 6) // 3, (code - 6) % 3
        cj = (C[0][j], C[1][j], C[2][j])
        u = (0.0, -cj[2], cj[1]) if i == 0 else ((cj[2], 0.0, -cj[0]) if i == 1 else (-cj[1], cj[0], 0.0))
        u = scl(u, 1.0 / norm(u))
        fa = (1.0 if face_code == 0 else 0.0, 1.0 if face_code == 1 else 0.0, 1.0 if face_code == 2 else 0.0) \
            if face_code < 3 else (C[0][face_code - 3], C[1][face_code - 3], C[2][face_code - 3])
        if abs(dot(u, fa)) > 0.99 and best < face_best + 0.05 * abs(face_best) + MINVAL:
            best, code = face_best, face_code
    if code >= 6:
        return _edge_edge(code, C, t, e1, e2, R1, p1, tol, out, k)
    return _face(code, C, t, tb, e1, e2, R1, p1, R2, p2, margin, out, k, poly)


@njit(cache=True)
def _edge_edge(code, C, t, e1, e2, R1, p1, tol, out, k):
    """One contact at the closest points of the supporting edges along the axis e_i x C[:, j]."""
    i, j = (code - 6) // 3, (code - 6) % 3
    cj = (C[0][j], C[1][j], C[2][j])
    u = (0.0, -cj[2], cj[1]) if i == 0 else ((cj[2], 0.0, -cj[0]) if i == 1 else (-cj[1], cj[0], 0.0))
    u = scl(u, 1.0 / norm(u))
    if dot(u, t) < 0.0:                     # from box 1 towards box 2
        u = scl(u, -1.0)
    ub = (C[0][0] * u[0] + C[1][0] * u[1] + C[2][0] * u[2], C[0][1] * u[0] + C[1][1] * u[1] + C[2][1] * u[2],
          C[0][2] * u[0] + C[1][2] * u[1] + C[2][2] * u[2])      # u in box 2's frame
    # box 1's supporting edge: along e_i at the corner furthest along +u;
    # box 2's: along its axis j at the corner furthest along -u
    a1 = (e1[0] if u[0] >= 0.0 else -e1[0], e1[1] if u[1] >= 0.0 else -e1[1], e1[2] if u[2] >= 0.0 else -e1[2])
    h1 = (e1[0] if i == 0 else 0.0, e1[1] if i == 1 else 0.0, e1[2] if i == 2 else 0.0)
    a1 = sub(a1, (a1[0] if i == 0 else 0.0, a1[1] if i == 1 else 0.0, a1[2] if i == 2 else 0.0))
    b2 = (-e2[0] if ub[0] >= 0.0 else e2[0], -e2[1] if ub[1] >= 0.0 else e2[1], -e2[2] if ub[2] >= 0.0 else e2[2])
    b2 = (0.0 if j == 0 else b2[0], 0.0 if j == 1 else b2[1], 0.0 if j == 2 else b2[2])
    c2 = add(t, (C[0][0] * b2[0] + C[0][1] * b2[1] + C[0][2] * b2[2], C[1][0] * b2[0] + C[1][1] * b2[1] + C[1][2] * b2[2],
                 C[2][0] * b2[0] + C[2][1] * b2[1] + C[2][2] * b2[2]))
    h2 = scl(cj, e2[j])
    x, y = segment_segment(a1, h1, c2, h2)
    if math.isnan(x):
        x, y = 0.0, 0.0
    w1, w2 = axpy(a1, x, h1), axpy(c2, y, h2)
    dist = dot(sub(w2, w1), u)
    if dist > tol:
        return 0
    put(out, k, dist, add(vec(p1), mv(R1, scl(add(w1, w2), 0.5))), mv(R1, u))
    return 1


@njit(cache=True)
def _face(code, C, t, tb, e1, e2, R1, p1, R2, p2, margin, out, k, poly):
    """The incident face of one box clipped to the reference face of the other (the owner of
    the face axis ``code``); contacts at the clipped vertices within the margin, midway between
    the reference face's plane and the incident face."""
    ref1 = code < 3
    a = code if ref1 else code - 3
    er, ei = (e1, e2) if ref1 else (e2, e1)
    to = t if ref1 else scl(tb, -1.0)            # incident centre in the reference frame
    # D[r][c]: component r of incident axis c in the reference frame
    if ref1:
        D = C
    else:
        D = ((C[0][0], C[1][0], C[2][0]), (C[0][1], C[1][1], C[2][1]), (C[0][2], C[1][2], C[2][2]))
    sg = 1.0 if to[a] >= 0.0 else -1.0         # the incident box lies along sg e_a
    b = 0                                       # incident face: its normal most (anti)parallel to e_a
    for q in (1, 2):
        if abs(D[a][q]) > abs(D[a][b]):
            b = q
    tinc = -1.0 if sg * D[a][b] > 0.0 else 1.0  # the incident face's side, facing the reference box
    ax, ay = (a + 1) % 3, (a + 2) % 3
    bu, bv = (b + 1) % 3, (b + 2) % 3
    # corners in (x, y, z): x, y along e_ax, e_ay, z the height over the reference face
    P, Q = poly[0], poly[1]
    for n in range(4):
        su = 1.0 if n == 0 or n == 3 else -1.0
        sv = 1.0 if n < 2 else -1.0
        for r in range(3):
            cc = ax if r == 0 else (ay if r == 1 else a)
            P[n, r] = to[cc] + tinc * ei[b] * D[cc][b] + su * ei[bu] * D[cc][bu] + sv * ei[bv] * D[cc][bv]
        P[n, 2] = sg * P[n, 2] - er[a]
    n = _clip_side(P, np.int64(4), Q, 0, 1.0, er[ax])     # int64, as below: one compile
    n = _clip_side(Q, n, P, 0, -1.0, er[ax])
    n = _clip_side(P, n, Q, 1, 1.0, er[ay])
    n = _clip_side(Q, n, P, 1, -1.0, er[ay])
    Rr, pr = (R1, p1) if ref1 else (R2, p2)
    nw = scl(col(Rr, a), sg if ref1 else -sg)   # from geom 1 to geom 2
    m = 0
    for q in range(n):
        z = P[q, 2]
        if z > margin:
            continue
        dup = False
        for s in range(m):                      # a vertex clipped twice at a corner
            if abs(P[q, 0] - P[s, 0]) + abs(P[q, 1] - P[s, 1]) < 1e-12 * (er[ax] + er[ay]):
                dup = True
        if dup:
            continue
        if m < q:
            P[m, 0], P[m, 1], P[m, 2] = P[q, 0], P[q, 1], P[q, 2]
        loc = _compose(ax, P[q, 0], ay, P[q, 1], a, sg * (er[a] + 0.5 * z))
        put(out, k + m, z, add(vec(pr), mv(Rr, loc)), nw)
        m += 1
    return m
