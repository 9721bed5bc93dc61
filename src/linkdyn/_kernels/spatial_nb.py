"""Compiled spatial-algebra primitives on small arrays (Featherstone 2008 sec. 1).

Conventions: motion vectors [v; w], force vectors [f; n].  A pose (R, p) of frame b in
frame a maps b-coordinates to a-coordinates.  ``act`` carries a vector from b to a, ``inv_act``
from a to b.  Every function writes into an output argument and allocates nothing.
"""
from numba import njit

_opts = dict(inline="always", cache=True)


@njit(**_opts)
def _block(M, r, c):
    """The 3x3 block of M at (r, c), row-major, as a 9-tuple (held in registers)."""
    return (M[r, c], M[r, c + 1], M[r, c + 2], M[r + 1, c], M[r + 1, c + 1], M[r + 1, c + 2],
            M[r + 2, c], M[r + 2, c + 1], M[r + 2, c + 2])


@njit(**_opts)
def motion_inv_act(R, p, v, out):
    """out = X^-1 v: motion v in frame a -> frame b; lin = R^T (v - p x w), ang = R^T w."""
    # every input is read into a local before the first store: the arrays are views of one
    # buffer, so the compiler must otherwise assume a store may change them and reload.
    # A loop over the columns of R (each element read once, LLVM unrolls it): written out,
    # its 18 constant-index reads cost Numba's typing and lowering ~1 ms each per call site
    wx, wy, wz = v[3], v[4], v[5]
    lx = v[0] - (p[1] * wz - p[2] * wy)
    ly = v[1] - (p[2] * wx - p[0] * wz)
    lz = v[2] - (p[0] * wy - p[1] * wx)
    for k in range(3):
        r0, r1, r2 = R[0, k], R[1, k], R[2, k]
        a = r0 * lx + r1 * ly + r2 * lz
        b = r0 * wx + r1 * wy + r2 * wz
        out[k] = a
        out[3 + k] = b


@njit(**_opts)
def motion_act(R, p, v, out):
    """out = X v: motion v in frame b -> frame a; ang = R w, lin = R v + p x (R w)."""
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = _block(R, 0, 0)
    v0, v1, v2, w0, w1, w2 = v[0], v[1], v[2], v[3], v[4], v[5]
    p0, p1, p2 = p[0], p[1], p[2]
    a0 = r00 * w0 + r01 * w1 + r02 * w2
    a1 = r10 * w0 + r11 * w1 + r12 * w2
    a2 = r20 * w0 + r21 * w1 + r22 * w2
    out[0] = r00 * v0 + r01 * v1 + r02 * v2 + p1 * a2 - p2 * a1
    out[1] = r10 * v0 + r11 * v1 + r12 * v2 + p2 * a0 - p0 * a2
    out[2] = r20 * v0 + r21 * v1 + r22 * v2 + p0 * a1 - p1 * a0
    out[3] = a0
    out[4] = a1
    out[5] = a2


@njit(**_opts)
def force_act_add(R, p, f, out):
    """out += X* f: force f in frame b -> frame a; lin = R f, ang = R n + p x (R f)."""
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = _block(R, 0, 0)
    f0, f1, f2, n0, n1, n2 = f[0], f[1], f[2], f[3], f[4], f[5]
    p0, p1, p2 = p[0], p[1], p[2]
    fx = r00 * f0 + r01 * f1 + r02 * f2
    fy = r10 * f0 + r11 * f1 + r12 * f2
    fz = r20 * f0 + r21 * f1 + r22 * f2
    nx = r00 * n0 + r01 * n1 + r02 * n2 + p1 * fz - p2 * fy
    ny = r10 * n0 + r11 * n1 + r12 * n2 + p2 * fx - p0 * fz
    nz = r20 * n0 + r21 * n1 + r22 * n2 + p0 * fy - p1 * fx
    out[0] += fx
    out[1] += fy
    out[2] += fz
    out[3] += nx
    out[4] += ny
    out[5] += nz


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
    v0, v1, v2, v3, v4, v5 = v[0], v[1], v[2], v[3], v[4], v[5]
    u0, u1, u2, u3, u4, u5 = u[0], u[1], u[2], u[3], u[4], u[5]
    out[0] += v4 * u2 - v5 * u1 + v1 * u5 - v2 * u4
    out[1] += v5 * u0 - v3 * u2 + v2 * u3 - v0 * u5
    out[2] += v3 * u1 - v4 * u0 + v0 * u4 - v1 * u3
    out[3] += v4 * u5 - v5 * u4
    out[4] += v5 * u3 - v3 * u5
    out[5] += v3 * u4 - v4 * u3


@njit(**_opts)
def force_cross_add(v, f, out):
    """out += v x* f (force cross product): [w x f_lin; w x f_ang + v_lin x f_lin]."""
    v0, v1, v2, v3, v4, v5 = v[0], v[1], v[2], v[3], v[4], v[5]
    f0, f1, f2, f3, f4, f5 = f[0], f[1], f[2], f[3], f[4], f[5]
    out[0] += v4 * f2 - v5 * f1
    out[1] += v5 * f0 - v3 * f2
    out[2] += v3 * f1 - v4 * f0
    out[3] += v4 * f5 - v5 * f4 + v1 * f2 - v2 * f1
    out[4] += v5 * f3 - v3 * f5 + v2 * f0 - v0 * f2
    out[5] += v3 * f4 - v4 * f3 + v0 * f1 - v1 * f0


@njit(**_opts)
def mat6_vec(M, x, out):
    """out = M x for a 6x6 M."""
    # x is read into locals before the first store (out may share x's buffer); a loop over
    # the rows (LLVM unrolls it): written out, its 36 constant-index reads of M cost Numba's
    # typing and lowering ~1 ms each per call site
    x0, x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4], x[5]
    for r in range(6):
        out[r] = M[r, 0] * x0 + M[r, 1] * x1 + M[r, 2] * x2 + M[r, 3] * x3 + M[r, 4] * x4 + M[r, 5] * x5


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
def _rot(R, A):
    """R A R^T for 3x3 9-tuples."""
    t0 = A[0] * R[0] + A[1] * R[1] + A[2] * R[2]      # T = A R^T
    t1 = A[0] * R[3] + A[1] * R[4] + A[2] * R[5]
    t2 = A[0] * R[6] + A[1] * R[7] + A[2] * R[8]
    t3 = A[3] * R[0] + A[4] * R[1] + A[5] * R[2]
    t4 = A[3] * R[3] + A[4] * R[4] + A[5] * R[5]
    t5 = A[3] * R[6] + A[4] * R[7] + A[5] * R[8]
    t6 = A[6] * R[0] + A[7] * R[1] + A[8] * R[2]
    t7 = A[6] * R[3] + A[7] * R[4] + A[8] * R[5]
    t8 = A[6] * R[6] + A[7] * R[7] + A[8] * R[8]
    return (R[0] * t0 + R[1] * t3 + R[2] * t6, R[0] * t1 + R[1] * t4 + R[2] * t7, R[0] * t2 + R[1] * t5 + R[2] * t8,
            R[3] * t0 + R[4] * t3 + R[5] * t6, R[3] * t1 + R[4] * t4 + R[5] * t7, R[3] * t2 + R[4] * t5 + R[5] * t8,
            R[6] * t0 + R[7] * t3 + R[8] * t6, R[6] * t1 + R[7] * t4 + R[8] * t7, R[6] * t2 + R[7] * t5 + R[8] * t8)


@njit(**_opts)
def _times_cross(A, p0, p1, p2):
    """A [p]x for a 3x3 9-tuple A."""
    return (A[1] * p2 - A[2] * p1, A[2] * p0 - A[0] * p2, A[0] * p1 - A[1] * p0,
            A[4] * p2 - A[5] * p1, A[5] * p0 - A[3] * p2, A[3] * p1 - A[4] * p0,
            A[7] * p2 - A[8] * p1, A[8] * p0 - A[6] * p2, A[6] * p1 - A[7] * p0)


@njit(**_opts)
def _cross_times(p0, p1, p2, A):
    """[p]x A for a 3x3 9-tuple A."""
    return (p1 * A[6] - p2 * A[3], p1 * A[7] - p2 * A[4], p1 * A[8] - p2 * A[5],
            p2 * A[0] - p0 * A[6], p2 * A[1] - p0 * A[7], p2 * A[2] - p0 * A[8],
            p0 * A[3] - p1 * A[0], p0 * A[4] - p1 * A[1], p0 * A[5] - p1 * A[2])


@njit(**_opts)
def inertia_to_parent_add(R, p, I, out):
    """out += X^T I X with X = X^-1 of (R, p), the motion transform parent -> child: a
    symmetric spatial inertia I = [[A, B], [B^T, C]] (an articulated inertia of ABA) in the
    child frame re-expressed in the parent frame and added.  Rotate, then shift by p:

        A' = R A R^T,  B' = R B R^T,  C' = R C R^T
        X^T I X = [[A', B' - A'[p]x], [sym., C' + K + K^T - [p]x A' [p]x]],  K = [p]x B'

    (Featherstone's RBDA sec. 2.18), everything in registers, no scratch memory."""
    Rt = _block(R, 0, 0)
    A = _rot(Rt, _block(I, 0, 0))
    B = _rot(Rt, _block(I, 0, 3))
    C = _rot(Rt, _block(I, 3, 3))
    p0, p1, p2 = p[0], p[1], p[2]
    E = _times_cross(A, p0, p1, p2)
    K = _cross_times(p0, p1, p2, B)
    L = _cross_times(p0, p1, p2, E)
    for r in range(3):
        for c in range(3):
            k = 3 * r + c
            b = B[k] - E[k]
            out[r, c] += A[k]
            out[r, 3 + c] += b
            out[3 + c, r] += b
            out[3 + r, 3 + c] += C[k] + K[k] + K[3 * c + r] - L[k]


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
    j00, j01, j02, j11, j12, j22 = I[3, 3], I[3, 4], I[3, 5], I[4, 4], I[4, 5], I[5, 5]
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = _block(R, 0, 0)
    p0, p1, p2 = p[0], p[1], p[2]
    # c = R h
    c0 = r00 * h0 + r01 * h1 + r02 * h2
    c1 = r10 * h0 + r11 * h1 + r12 * h2
    c2 = r20 * h0 + r21 * h1 + r22 * h2
    # T = Ib R^T (column b = Ib times row b of R)
    t00 = j00 * r00 + j01 * r01 + j02 * r02
    t10 = j01 * r00 + j11 * r01 + j12 * r02
    t20 = j02 * r00 + j12 * r01 + j22 * r02
    t01 = j00 * r10 + j01 * r11 + j02 * r12
    t11 = j01 * r10 + j11 * r11 + j12 * r12
    t21 = j02 * r10 + j12 * r11 + j22 * r12
    t02 = j00 * r20 + j01 * r21 + j02 * r22
    t12 = j01 * r20 + j11 * r21 + j12 * r22
    t22 = j02 * r20 + j12 * r21 + j22 * r22
    # R Ib R^T - [c]x[p]x - [p]x[c]x - m [p]x[p]x, with [u]x[w]x = w u^T - (u.w) 1
    d = 2.0 * (c0 * p0 + c1 * p1 + c2 * p2) + m * (p0 * p0 + p1 * p1 + p2 * p2)
    P[0] = m
    P[1], P[2], P[3] = c0 + m * p0, c1 + m * p1, c2 + m * p2
    # order xx, xy, yy, xz, yz, zz
    P[4] = r00 * t00 + r01 * t10 + r02 * t20 - (2.0 * p0 * c0 + m * p0 * p0) + d
    P[5] = r00 * t01 + r01 * t11 + r02 * t21 - (p0 * c1 + p1 * c0 + m * p0 * p1)
    P[6] = r10 * t01 + r11 * t11 + r12 * t21 - (2.0 * p1 * c1 + m * p1 * p1) + d
    P[7] = r00 * t02 + r01 * t12 + r02 * t22 - (p0 * c2 + p2 * c0 + m * p0 * p2)
    P[8] = r10 * t02 + r11 * t12 + r12 * t22 - (p1 * c2 + p2 * c1 + m * p1 * p2)
    P[9] = r20 * t02 + r21 * t12 + r22 * t22 - (2.0 * p2 * c2 + m * p2 * p2) + d


@njit(**_opts)
def rigid_params_times_motion(P, v, out):
    """out = I v for the inertia of parameters P and a motion v = [v; w]:
    [m v - h x w; h x v + I w]."""
    m, h0, h1, h2 = P[0], P[1], P[2], P[3]
    ixx, ixy, iyy, ixz, iyz, izz = P[4], P[5], P[6], P[7], P[8], P[9]
    v0, v1, v2, w0, w1, w2 = v[0], v[1], v[2], v[3], v[4], v[5]
    out[0] = m * v0 - (h1 * w2 - h2 * w1)
    out[1] = m * v1 - (h2 * w0 - h0 * w2)
    out[2] = m * v2 - (h0 * w1 - h1 * w0)
    out[3] = h1 * v2 - h2 * v1 + ixx * w0 + ixy * w1 + ixz * w2
    out[4] = h2 * v0 - h0 * v2 + ixy * w0 + iyy * w1 + iyz * w2
    out[5] = h0 * v1 - h1 * v0 + ixz * w0 + iyz * w1 + izz * w2
