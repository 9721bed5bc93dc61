"""The compiled part of :mod:`linkdyn.contact.geom_rows` (private: the kernels trust their
input; the public functions there validate it): the contact frame, the features of each side and
the closed-form drifts, and the row assembly over a kinematics pass."""
from __future__ import annotations


import numpy as np
from numba import njit

from .._kernels.layout import _view, model_sizes, unpack_data, unpack_model
from .._kernels.passes import ACC, OK, POS, check_inputs, check_q, kinematics_pass
from .._kernels.spatial_nb import motion_act
from ..model.geometry import BOX, CAPSULE, CYLINDER, PLANE, SPHERE
from .collision._vec import add, axpy, col, cross, dot, mtv, mv, norm, scl, sub, tangents, vec



#: features of a side of a contact: a point core, a line core (each with a radius), a plane, unknown
PT, LN, PL, UNK = 0, 1, 2, 3
_TOL = 1e-9          # relative tolerance of the feature tests (the collider's output is exact to ~1e-15)
_ZERO3 = (0.0, 0.0, 0.0)


# --- motion of material points and body-fixed directions -----------------------------------------
@njit(cache=True)
def _body_motion(oR, op, V, A, b):
    """Body b's world angular velocity w and acceleration al, its origin's world velocity and
    classical acceleration (body-frame spatial V, A: [v; w], the origin's classical acceleration
    is a_lin + w x v in the body frame)."""
    R = oR[b]
    vb, wb = (V[b, 0], V[b, 1], V[b, 2]), (V[b, 3], V[b, 4], V[b, 5])
    ab = add((A[b, 0], A[b, 1], A[b, 2]), cross(wb, vb))
    return mv(R, wb), mv(R, (A[b, 3], A[b, 4], A[b, 5])), mv(R, vb), mv(R, ab)


@njit(cache=True)
def _point(oR, op, V, A, b, y):
    """World velocity and classical acceleration (at q'' = 0) of body b's material point at y."""
    if b == 0:
        return _ZERO3, _ZERO3
    w, al, vo, ao = _body_motion(oR, op, V, A, b)
    r = sub(y, (op[b, 0], op[b, 1], op[b, 2]))
    wr = cross(w, r)
    return add(vo, wr), add(add(ao, cross(al, r)), cross(w, wr))


@njit(cache=True)
def _direction(oR, op, V, A, b, u):
    """First and second time derivatives of a direction u fixed to body b."""
    if b == 0:
        return _ZERO3, _ZERO3
    w, al, _, _ = _body_motion(oR, op, V, A, b)
    ud = cross(w, u)
    return ud, add(cross(al, u), cross(w, ud))


@njit(cache=True)
def _relative(oR, op, V, A, b1, c1, b2, c2):
    """d = c2 - c1 and its first two derivatives for material points c1 of b1, c2 of b2."""
    v1, a1 = _point(oR, op, V, A, b1, c1)
    v2, a2 = _point(oR, op, V, A, b2, c2)
    return sub(c2, c1), sub(v2, v1), sub(a2, a1)


# --- second derivatives of the distance between cores (Montana 1988) ------------------------------
@njit(cache=True)
def _norm_dd(w, wd, wdd):
    """(|w|)'' from w, w', w'': n . w'' + (|w'|^2 - (n . w')^2) / |w|, n = w / |w|."""
    L = norm(w)
    if L < 1e-12:
        return 0.0
    n = scl(w, 1.0 / L)
    s = dot(n, wd)
    return dot(n, wdd) + (dot(wd, wd) - s * s) / L


@njit(cache=True)
def _dd_point_point(oR, op, V, A, b1, c1, b2, c2):
    d, dd, ddd = _relative(oR, op, V, A, b1, c1, b2, c2)
    return _norm_dd(d, dd, ddd)


@njit(cache=True)
def _dd_point_plane(oR, op, V, A, bp, c, bl, o, m):
    """phi = m . (c - o): c a material point of bp, the plane (o, m) fixed to bl."""
    d, dd, ddd = _relative(oR, op, V, A, bl, o, bp, c)
    md, mdd = _direction(oR, op, V, A, bl, m)
    return dot(mdd, d) + 2.0 * dot(md, dd) + dot(m, ddd)


@njit(cache=True)
def _dd_point_line(oR, op, V, A, bp, c, bl, o, a):
    """phi = |w|, w = d - (a . d) a, d = c - o: c a material point of bp, the line (o, a) fixed to bl."""
    d, dd, ddd = _relative(oR, op, V, A, bl, o, bp, c)
    ad, add_ = _direction(oR, op, V, A, bl, a)
    s = dot(a, d)
    sd = dot(ad, d) + dot(a, dd)
    sdd = dot(add_, d) + 2.0 * dot(ad, dd) + dot(a, ddd)
    w = axpy(d, -s, a)
    wd = sub(sub(dd, scl(a, sd)), scl(ad, s))
    wdd = sub(sub(sub(ddd, scl(a, sdd)), scl(ad, 2.0 * sd)), scl(add_, s))
    return _norm_dd(w, wd, wdd)


@njit(cache=True)
def _dd_line_line(oR, op, V, A, b1, c1, a1, b2, c2, a2, n):
    """phi = sigma e . d / |e|, e = a1 x a2, d = c2 - c1 (skew lines), sigma = sign(e . n)."""
    d, dd, ddd = _relative(oR, op, V, A, b1, c1, b2, c2)
    a1d, a1dd = _direction(oR, op, V, A, b1, a1)
    a2d, a2dd = _direction(oR, op, V, A, b2, a2)
    e = cross(a1, a2)
    ed = add(cross(a1d, a2), cross(a1, a2d))
    edd = add(add(cross(a1dd, a2), scl(cross(a1d, a2d), 2.0)), cross(a1, a2dd))
    f, fd, fdd = dot(e, d), dot(ed, d) + dot(e, dd), dot(edd, d) + 2.0 * dot(ed, dd) + dot(e, ddd)
    s = norm(e)
    sd = dot(e, ed) / s
    sdd = (dot(ed, ed) + dot(e, edd) - sd * sd) / s
    g = fdd / s - 2.0 * fd * sd / (s * s) + f * (2.0 * sd * sd / (s * s * s) - sdd / (s * s))
    return g if dot(e, n) >= 0.0 else -g


# --- the feature of each side ---------------------------------------------------------------------
@njit(cache=True)
def feature(t, gp, gR, gs, y, m):
    """The feature of a geom (type t, world position gp, axes gR, size gs) at its witness point
    y with outward normal m: (kind, point, direction, radius); a point core's point, a line's
    point and axis, a plane's point and outward normal."""
    if t == PLANE:
        return PL, vec(gp), col(gR, 2), 0.0
    if t == SPHERE:
        return PT, vec(gp), m, gs[0]
    if t == CAPSULE:
        z, r = col(gR, 2), gs[0]
        c = axpy(y, -r, m)                              # the centre of the touching sphere
        if abs(dot(z, sub(c, gp))) < gs[1] * (1.0 - _TOL) and abs(dot(z, m)) < _TOL:
            return LN, vec(gp), z, r                    # the interior of the segment
        return PT, c, m, r                              # an end (or a segment along m's plane)
    if t == BOX:
        ml = mtv(gR, m)
        for j in range(3):
            if abs(ml[j]) > 1.0 - _TOL:                 # a face
                return PL, y, scl(col(gR, j), 1.0 if ml[j] > 0.0 else -1.0), 0.0
        yl = mtv(gR, sub(y, gp))
        k, free = 0, 0
        for j in range(3):
            if abs(yl[j]) >= gs[j] * (1.0 - _TOL):
                k += 1
            else:
                free = j
        if k == 3:
            return PT, y, m, 0.0                        # a vertex
        if k == 2 and abs(ml[free]) < _TOL:
            return LN, y, col(gR, free), 0.0            # an edge
        return UNK, y, m, 0.0
    if t == CYLINDER:
        z = col(gR, 2)
        mz = dot(z, m)
        if abs(mz) > 1.0 - _TOL:
            return PL, y, scl(z, 1.0 if mz > 0.0 else -1.0), 0.0     # a cap
        if abs(mz) < _TOL and abs(dot(z, sub(y, gp))) < gs[1] * (1.0 - _TOL):
            return LN, vec(gp), z, gs[0]                # the side
    return UNK, y, m, 0.0


@njit(cache=True)
def drift_normal(oR, op, V, A, t1, p1, R1, s1, b1, t2, p2, R2, s2, b2, x, n, dist):
    """d^2 dist / dt^2 at q'' = 0 of one contact (module docstring: features and cores)."""
    y1, y2 = axpy(x, -0.5 * dist, n), axpy(x, 0.5 * dist, n)
    m2 = scl(n, -1.0)
    k1, c1, a1, r1 = feature(t1, p1, R1, s1, y1, n)
    k2, c2, a2, r2 = feature(t2, p2, R2, s2, y2, m2)
    if k1 == UNK:                                       # first order: its tangent plane
        k1, c1, a1 = PL, y1, n
    if k2 == UNK:
        k2, c2, a2 = PL, y2, m2
    if k1 == PL and k2 == PL:                           # parallel faces: a point of 2 on the plane of 1
        k2, c2 = PT, y2
    if k2 == PL and k1 == LN:
        k1, c1 = PT, axpy(y1, -r1, n)
    if k1 == PL and k2 == LN:
        k2, c2 = PT, axpy(y2, -r2, m2)
    if k1 == LN and k2 == LN and norm(cross(a1, a2)) < 1e-6:     # (nearly) parallel lines
        k2, c2 = PT, axpy(y2, -r2, m2)
    if k1 == PT and k2 == PT:
        return _dd_point_point(oR, op, V, A, b1, c1, b2, c2)
    if k1 == PT and k2 == PL:
        return _dd_point_plane(oR, op, V, A, b1, c1, b2, c2, a2)
    if k1 == PL and k2 == PT:
        return _dd_point_plane(oR, op, V, A, b2, c2, b1, c1, a1)
    if k1 == PT and k2 == LN:
        return _dd_point_line(oR, op, V, A, b1, c1, b2, c2, a2)
    if k1 == LN and k2 == PT:
        return _dd_point_line(oR, op, V, A, b2, c2, b1, c1, a1)
    return _dd_line_line(oR, op, V, A, b1, c1, a1, b2, c2, a2, n)


# --- the rows -------------------------------------------------------------------------------------
@njit(cache=True)
def _add_columns(J0, vadr, jnv, vsrc, vscale, b, sign, x, n, t1, t2, N, T, r):
    """Add sign * [n; t1; t2]^T J_b(x) for the dofs of body b's own joint (reduced columns)."""
    for d in range(vadr[b], vadr[b] + jnv[b]):
        # the point velocity of dof d's world-origin twist (v_o, w): v_o + w x x
        w = (J0[d, 3], J0[d, 4], J0[d, 5])
        u = add((J0[d, 0], J0[d, 1], J0[d, 2]), cross(w, x))
        un, ut1, ut2 = dot(n, u), dot(t1, u), dot(t2, u)
        for t in range(vsrc.shape[1]):          # every reduced dof the full dof d depends on
            c, s = vsrc[d, t], sign * vscale[d, t]
            if s != 0.0:
                N[r, c] += s * un
                T[r, 0, c] += s * ut1
                T[r, 1, c] += s * ut2


@njit(cache=True)
def geom_rows_kernel(mi, mf, ws, qsrc, qscale, qoff, vsrc, vscale, q, v, with_drift, gi, gf, con_i, con_f, ncon,
                     J0, qf, vf, af, gap, N, T, dn, dt, point, frame):
    """The rows of the first ``ncon`` contacts of ``con_i`` (geom1, geom2) and ``con_f`` (dist,
    pos, normal, ...) (the collider's tables) at the reduced state (q, v) of a model whose full
    tree is (mi, mf) with workspace ws: q_full[k] = qoff[k] + sum_t qscale[k, t] q[qsrc[k, t]],
    v_full[k] = sum_t vscale[k, t] v[vsrc[k, t]] (linkdyn.model.gears.Coupling; the identity
    without gears, one term per row).  Writes gap (ncon,), N (ncon, nv), T (ncon, 2, nv), with
    ``with_drift`` dn (ncon,) and dt (ncon, 2), point (ncon, 3), frame (ncon, 3, 3); scratch:
    J0 (nv_full, 6), qf, vf, af.  Returns OK or the status of a bad q or v (passes.check_inputs)."""
    nb, nq, nvf = model_sizes(mi)
    for k in range(nq):
        qf[k] = qoff[k]
        for t in range(qsrc.shape[1]):
            qf[k] += qscale[k, t] * q[qsrc[k, t]]
    if with_drift:
        for k in range(nvf):
            vf[k] = 0.0
            for t in range(vsrc.shape[1]):
                vf[k] += vscale[k, t] * v[vsrc[k, t]]
            af[k] = 0.0
        st = check_inputs(mi, qf, vf, af, True)
    else:
        st = check_q(mi, qf)
    if st != OK:
        return st
    parent, _, _, vadr, _, jnv, _, _, _, _, _, _, _ = unpack_model(mi, mf)
    kinematics_pass(mi, mf, ws, qf, vf if with_drift else qf[:0], af if with_drift else qf[:0],
                    np.int64(ACC if with_drift else POS), np.bool_(True), np.bool_(False))
    oR, op, _, _, V, A, _, S, _, _, _, _, _, _, _, _, _, W3 = unpack_data(ws, nb, nvf)
    R1, R2 = W3[0], W3[1]
    for j in range(1, nb):                  # every dof's twist in the world, at the world origin
        for d in range(vadr[j], vadr[j] + jnv[j]):
            motion_act(oR[j], op[j], S[d], J0[d])
    ng = gi.shape[0]
    gsize, gpos, gR = _view(gf, 0, (ng, 3)), _view(gf, 3 * ng, (ng, 3)), _view(gf, 6 * ng, (ng, 3, 3))
    nv = N.shape[1]
    for r in range(ncon):
        g1, g2 = con_i[r, 0], con_i[r, 1]
        b1, b2 = gi[g1, 1], gi[g2, 1]
        dist = con_f[r, 0]
        x, n = (con_f[r, 1], con_f[r, 2], con_f[r, 3]), (con_f[r, 4], con_f[r, 5], con_f[r, 6])
        # world poses of the two geoms: oMg = oMb bMg
        p1 = add(vec(op[b1]), mv(oR[b1], vec(gpos[g1])))
        p2 = add(vec(op[b2]), mv(oR[b2], vec(gpos[g2])))
        for a in range(3):
            for c in range(3):
                R1[a, c] = oR[b1, a, 0] * gR[g1, 0, c] + oR[b1, a, 1] * gR[g1, 1, c] + oR[b1, a, 2] * gR[g1, 2, c]
                R2[a, c] = oR[b2, a, 0] * gR[g2, 0, c] + oR[b2, a, 1] * gR[g2, 1, c] + oR[b2, a, 2] * gR[g2, 2, c]
        if gi[g1, 0] == PLANE:
            t1, t2 = col(R1, 0), col(R1, 1)
        else:
            t1, t2 = tangents(n)
        gap[r] = dist - con_f[r, 9]          # the pair's skin (MuJoCo's includemargin)
        for k in range(3):
            point[r, k] = x[k]
            frame[r, k, 0], frame[r, k, 1], frame[r, k, 2] = t1[k], t2[k], n[k]
        for c in range(nv):
            N[r, c] = 0.0
            T[r, 0, c] = 0.0
            T[r, 1, c] = 0.0
        # the two paths to the root, up to the nearest common ancestor (parent[i] < i)
        i, j = b2, b1
        while i != j:
            if i > j:
                _add_columns(J0, vadr, jnv, vsrc, vscale, i, 1.0, x, n, t1, t2, N, T, r)
                i = parent[i]
            else:
                _add_columns(J0, vadr, jnv, vsrc, vscale, j, -1.0, x, n, t1, t2, N, T, r)
                j = parent[j]
        if with_drift:
            dn[r] = drift_normal(oR, op, V, A, gi[g1, 0], p1, R1, gsize[g1], b1, gi[g2, 0], p2, R2, gsize[g2], b2,
                                 x, n, dist)
            _, a1 = _point(oR, op, V, A, b1, x)
            _, a2 = _point(oR, op, V, A, b2, x)
            da = sub(a2, a1)
            dt[r, 0], dt[r, 1] = dot(t1, da), dot(t2, da)
        else:
            dn[r] = 0.0
            dt[r, 0] = dt[r, 1] = 0.0
    return OK
