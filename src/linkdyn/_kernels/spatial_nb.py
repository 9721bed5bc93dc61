"""Compiled spatial-algebra primitives on small arrays (seed 001, seed 000 sec. 1).

Conventions: motion vectors [v; w], force vectors [f; n].  A pose (R, p) of frame b in
frame a maps b-coordinates to a-coordinates.  ``act`` carries a vector from b to a, ``inv_act``
from a to b.  Every function writes into an output argument and allocates nothing.
"""
from numba import njit

_opts = dict(inline="always", cache=True)


@njit(**_opts)
def motion_inv_act(R, p, v, out):
    """out = X^-1 v: motion v in frame a -> frame b; lin = R^T (v - p x w), ang = R^T w."""
    lx = v[0] - (p[1] * v[5] - p[2] * v[4])
    ly = v[1] - (p[2] * v[3] - p[0] * v[5])
    lz = v[2] - (p[0] * v[4] - p[1] * v[3])
    for r in range(3):
        out[r] = R[0, r] * lx + R[1, r] * ly + R[2, r] * lz
        out[3 + r] = R[0, r] * v[3] + R[1, r] * v[4] + R[2, r] * v[5]


@njit(**_opts)
def motion_act(R, p, v, out):
    """out = X v: motion v in frame b -> frame a; ang = R w, lin = R v + p x (R w)."""
    for r in range(3):
        out[3 + r] = R[r, 0] * v[3] + R[r, 1] * v[4] + R[r, 2] * v[5]
        out[r] = R[r, 0] * v[0] + R[r, 1] * v[1] + R[r, 2] * v[2]
    out[0] += p[1] * out[5] - p[2] * out[4]
    out[1] += p[2] * out[3] - p[0] * out[5]
    out[2] += p[0] * out[4] - p[1] * out[3]


@njit(**_opts)
def force_act_add(R, p, f, out):
    """out += X* f: force f in frame b -> frame a; lin = R f, ang = R n + p x (R f)."""
    fx = R[0, 0] * f[0] + R[0, 1] * f[1] + R[0, 2] * f[2]
    fy = R[1, 0] * f[0] + R[1, 1] * f[1] + R[1, 2] * f[2]
    fz = R[2, 0] * f[0] + R[2, 1] * f[1] + R[2, 2] * f[2]
    out[0] += fx
    out[1] += fy
    out[2] += fz
    out[3] += R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5] + p[1] * fz - p[2] * fy
    out[4] += R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5] + p[2] * fx - p[0] * fz
    out[5] += R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5] + p[0] * fy - p[1] * fx


@njit(**_opts)
def force_act_inplace(R, p, f):
    """f <- X* f: force f in frame b -> frame a, in place."""
    fx = R[0, 0] * f[0] + R[0, 1] * f[1] + R[0, 2] * f[2]
    fy = R[1, 0] * f[0] + R[1, 1] * f[1] + R[1, 2] * f[2]
    fz = R[2, 0] * f[0] + R[2, 1] * f[1] + R[2, 2] * f[2]
    nx = R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5] + p[1] * fz - p[2] * fy
    ny = R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5] + p[2] * fx - p[0] * fz
    nz = R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5] + p[0] * fy - p[1] * fx
    f[0], f[1], f[2], f[3], f[4], f[5] = fx, fy, fz, nx, ny, nz


@njit(**_opts)
def motion_cross_add(v, u, out):
    """out += v x u (motion cross product): [w x u_lin + v_lin x u_ang; w x u_ang]."""
    out[0] += v[4] * u[2] - v[5] * u[1] + v[1] * u[5] - v[2] * u[4]
    out[1] += v[5] * u[0] - v[3] * u[2] + v[2] * u[3] - v[0] * u[5]
    out[2] += v[3] * u[1] - v[4] * u[0] + v[0] * u[4] - v[1] * u[3]
    out[3] += v[4] * u[5] - v[5] * u[4]
    out[4] += v[5] * u[3] - v[3] * u[5]
    out[5] += v[3] * u[4] - v[4] * u[3]


@njit(**_opts)
def force_cross_add(v, f, out):
    """out += v x* f (force cross product): [w x f_lin; w x f_ang + v_lin x f_lin]."""
    out[0] += v[4] * f[2] - v[5] * f[1]
    out[1] += v[5] * f[0] - v[3] * f[2]
    out[2] += v[3] * f[1] - v[4] * f[0]
    out[3] += v[4] * f[5] - v[5] * f[4] + v[1] * f[2] - v[2] * f[1]
    out[4] += v[5] * f[3] - v[3] * f[5] + v[2] * f[0] - v[0] * f[2]
    out[5] += v[3] * f[4] - v[4] * f[3] + v[0] * f[1] - v[1] * f[0]


@njit(**_opts)
def mat6_vec(M, x, out):
    """out = M x for a 6x6 M."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += M[r, c] * x[c]
        out[r] = s


@njit(**_opts)
def dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@njit(**_opts)
def rigid_inertia_to_parent_add(R, p, I, out):
    """out += X^T I X (as ``inertia_to_parent_add``) for a rigid-body inertia
    I = [[m 1, -[h]x], [[h]x, Ib]] (h = m c, Ib about the origin), which keeps that form:

        h' = R h + m p,   Ib' = R Ib R^T - [Rh]x [p]x - [p]x [Rh]x - m [p]x [p]x

    about a third of the work of the general congruence (composite inertias of CRBA).
    """
    m = I[0, 0]
    h0, h1, h2 = I[5, 1], I[3, 2], I[4, 0]
    # r = R h
    r0 = R[0, 0] * h0 + R[0, 1] * h1 + R[0, 2] * h2
    r1 = R[1, 0] * h0 + R[1, 1] * h1 + R[1, 2] * h2
    r2 = R[2, 0] * h0 + R[2, 1] * h1 + R[2, 2] * h2
    # R Ib R^T (upper triangle, symmetric)
    for a in range(3):
        t0 = I[3, 3] * R[a, 0] + I[3, 4] * R[a, 1] + I[3, 5] * R[a, 2]
        t1 = I[4, 3] * R[a, 0] + I[4, 4] * R[a, 1] + I[4, 5] * R[a, 2]
        t2 = I[5, 3] * R[a, 0] + I[5, 4] * R[a, 1] + I[5, 5] * R[a, 2]
        for b in range(a, 3):
            x = R[b, 0] * t0 + R[b, 1] * t1 + R[b, 2] * t2
            # - [r]x[p]x - [p]x[r]x - m [p]x[p]x, entry (a, b):
            # [u]x[w]x = w u^T - (u.w) 1
            pp = p[0] * p[0] + p[1] * p[1] + p[2] * p[2]
            rp = r0 * p[0] + r1 * p[1] + r2 * p[2]
            ra = r0 if a == 0 else (r1 if a == 1 else r2)
            rb = r0 if b == 0 else (r1 if b == 1 else r2)
            x -= p[a] * rb + p[b] * ra + m * p[a] * p[b]
            if a == b:
                x += 2.0 * rp + m * pp
            out[3 + a, 3 + b] += x
            if b != a:
                out[3 + b, 3 + a] += x
    # h' = R h + m p ;  blocks m 1, -[h']x, [h']x
    g0, g1, g2 = r0 + m * p[0], r1 + m * p[1], r2 + m * p[2]
    out[0, 0] += m
    out[1, 1] += m
    out[2, 2] += m
    out[5, 1] += g0
    out[1, 5] += g0
    out[4, 2] -= g0
    out[2, 4] -= g0
    out[3, 2] += g1
    out[2, 3] += g1
    out[5, 0] -= g1
    out[0, 5] -= g1
    out[4, 0] += g2
    out[0, 4] += g2
    out[3, 1] -= g2
    out[1, 3] -= g2


@njit(**_opts)
def inertia_to_parent_add(R, p, I, W, out):
    """out += X^T I X with X = X^-1 of (R, p), the motion transform parent -> child:
    a spatial inertia in the child frame re-expressed in the parent frame and added.

    ``W`` is a (2, 6, 6) scratch.  X = [[R^T, -R^T [p]x], [0, R^T]]; its lower-left block is
    zero, which the loops skip.
    """
    X = W[0]
    Y = W[1]
    for r in range(3):
        for c in range(3):
            X[r, c] = R[c, r]
            X[3 + r, 3 + c] = R[c, r]
            X[3 + r, c] = 0.0
        # (-R^T [p]x)[r, :] = -(R[:, r] x ...) ; [p]x columns: e_c x p -> row r of R^T times [p]x
        X[r, 3] = -(R[1, r] * p[2] - R[2, r] * p[1])
        X[r, 4] = -(R[2, r] * p[0] - R[0, r] * p[2])
        X[r, 5] = -(R[0, r] * p[1] - R[1, r] * p[0])
    # Y = I X
    for r in range(6):
        for c in range(3):
            Y[r, c] = I[r, 0] * X[0, c] + I[r, 1] * X[1, c] + I[r, 2] * X[2, c]
        for c in range(3, 6):
            s = 0.0
            for k in range(6):
                s += I[r, k] * X[k, c]
            Y[r, c] = s
    # out += X^T Y, symmetric: the upper triangle, mirrored
    for r in range(3):
        for c in range(r, 6):
            v = X[0, r] * Y[0, c] + X[1, r] * Y[1, c] + X[2, r] * Y[2, c]
            out[r, c] += v
            if c != r:
                out[c, r] += v
    for r in range(3, 6):
        for c in range(r, 6):
            v = 0.0
            for k in range(6):
                v += X[k, r] * Y[k, c]
            out[r, c] += v
            if c != r:
                out[c, r] += v


# --- rigid-body inertias as 10 parameters ------------------------------------------------
# P = [m, h_x, h_y, h_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz] with h = m c the first moment and
# I the rotational inertia about the frame's origin: the spatial inertia
# [[m 1, -[h]x], [[h]x, I]] in 10 numbers (composites of CRBA are sums of these).

@njit(**_opts)
def rigid_params_to_world(R, p, I, P):
    """P = the 10 parameters of the 6x6 rigid-body inertia I (body frame) seen in the frame
    where the body sits at (R, p): h' = R h + m p,
    I' = R Ib R^T - [Rh]x [p]x - [p]x [Rh]x - m [p]x [p]x (as ``rigid_inertia_to_parent_add``)."""
    m = I[0, 0]
    h0, h1, h2 = I[5, 1], I[3, 2], I[4, 0]
    r0 = R[0, 0] * h0 + R[0, 1] * h1 + R[0, 2] * h2
    r1 = R[1, 0] * h0 + R[1, 1] * h1 + R[1, 2] * h2
    r2 = R[2, 0] * h0 + R[2, 1] * h1 + R[2, 2] * h2
    pp = p[0] * p[0] + p[1] * p[1] + p[2] * p[2]
    rp = r0 * p[0] + r1 * p[1] + r2 * p[2]
    P[0] = m
    P[1], P[2], P[3] = r0 + m * p[0], r1 + m * p[1], r2 + m * p[2]
    # P[4 + index of (a, b)] in the order xx, xy, yy, xz, yz, zz
    k = 4
    for b in range(3):
        t0 = I[3, 3] * R[b, 0] + I[3, 4] * R[b, 1] + I[3, 5] * R[b, 2]
        t1 = I[4, 3] * R[b, 0] + I[4, 4] * R[b, 1] + I[4, 5] * R[b, 2]
        t2 = I[5, 3] * R[b, 0] + I[5, 4] * R[b, 1] + I[5, 5] * R[b, 2]
        rb = r0 if b == 0 else (r1 if b == 1 else r2)
        for a in range(b + 1):
            ra = r0 if a == 0 else (r1 if a == 1 else r2)
            x = R[a, 0] * t0 + R[a, 1] * t1 + R[a, 2] * t2
            # [u]x[w]x = w u^T - (u.w) 1
            x -= p[a] * rb + p[b] * ra + m * p[a] * p[b]
            if a == b:
                x += 2.0 * rp + m * pp
            P[k] = x
            k += 1


@njit(**_opts)
def rigid_params_times_motion(P, v, out):
    """out = I v for the inertia of parameters P and a motion v = [v; w]:
    [m v - h x w; h x v + I w]."""
    m, h0, h1, h2 = P[0], P[1], P[2], P[3]
    ixx, ixy, iyy, ixz, iyz, izz = P[4], P[5], P[6], P[7], P[8], P[9]
    out[0] = m * v[0] - (h1 * v[5] - h2 * v[4])
    out[1] = m * v[1] - (h2 * v[3] - h0 * v[5])
    out[2] = m * v[2] - (h0 * v[4] - h1 * v[3])
    out[3] = h1 * v[2] - h2 * v[1] + ixx * v[3] + ixy * v[4] + ixz * v[5]
    out[4] = h2 * v[0] - h0 * v[2] + ixy * v[3] + iyy * v[4] + iyz * v[5]
    out[5] = h0 * v[1] - h1 * v[0] + ixz * v[3] + iyz * v[4] + izz * v[5]
