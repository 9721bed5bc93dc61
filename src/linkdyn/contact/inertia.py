"""Inverse inertia between the bodies of a tree: J M^-1 J^T of a set of frames in O(n + k^2).

Implementation notes (internal reference: the inverse operational-space inertia (Featherstone 2008), "the inertia between bodies of
a tree", built on the articulated body algorithm of secs. 2.3-2.4, eqs. 17-26).  In the
book's symbols, with the articulated inertias Î_c of ABA's backward pass (eq. 25) and the
motion subspace Ĵ_c of the joint of body c (``S`` in the code):

    D_c  = Ĵ_c^T Î_c Ĵ_c (+ armature)
    T_cp = (1 - Ĵ_c D_c^-1 (Î_c Ĵ_c)^T) X_cp       X_cp: motion transform parent p -> child c
    S_cp = Ĵ_c D_c^-1 Ĵ_c^T                        (6x6)

A change δf of the external force on body i changes its bias force by δẐ_i = -δf (eq. 19),
which moves up the tree as δẐ_p = T_cp^T δẐ_c (from eq. 26), and the accelerations respond
as δA_c = T_cp δA_p - S_cp δẐ_c (eqs. 22, 15).  With δA_p = Θ_p δẐ_p:

    Θ_world = 0 (a fixed world has infinite inertia; for a floating base the free joint's
    S_cp = Î_root^-1 gives the book's Θ_0 = -Î_0^-1),
    Θ_c = T_cp Θ_p T_cp^T - S_cp.

The derivation this follows prints S_cp with a trailing δẐ_c (``S_cp = Ĵ_c D_c^-1 Ĵ_c^T δẐ_c``): a misprint,
since S_cp multiplies δẐ_c in the very next line and Θ_c = T Θ T^T - S_cp needs a 6x6 matrix;
S_cp is the matrix without it (tests/test_inverse_inertia.py checks this numerically).

For bodies i, j with deepest common ancestor p (p = i when i supports j, and so on), the
acceleration of j per unit force on i is, with T_{j<-p} = T_{j, ..} ... T_{c1, p} the
product of the T's along the path from p down to j (identity for j = p):

    Φ_ji = -T_{j<-p} Θ_p T_{i<-p}^T ,   Φ_ii = -Θ_i ,

only T's on the two paths: Θ_p already holds every S term above and at p, and the bodies
between p and j carry no δẐ (they do not support i).  A frame f on body b sees
E_f Φ E_g^T, with E_f the 6x6 map from body b's velocity to the frame's velocity in the
requested reference (what ``kinematics._express`` does), and the result equals J M^-1 J^T.

Cost: one kinematics pass, one ABA inertia pass and the Θ pass, each O(n) with 6x6 blocks;
then k walks up the tree (one 6x6 product per ancestor) and k (k + 1) / 2 blocks of two
6x6 products each.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np
from numba import njit
from numba import types as nt

from .._api import OUT2, PACKED, VEC, Entry, _as_vector, as_states, raise_for_status
from .._kernels.layout import (model_sizes as _model_sizes, unpack_data as _unpack_data, unpack_model as _unpack_model,
    unpack_packed as _unpack_packed)
from .._kernels.passes import OK, POS, SINGULAR, check_q as _check_q, kinematics_pass as _kinematics_pass
from .._kernels.spatial_nb import (dot6 as _dot6, force_act_inplace as _force_act_inplace, inertia_to_parent_add as _inertia_to_parent_add,
    mat6_vec as _mat6_vec, motion_inv_act as _motion_inv_act)
from ..dynamics.aba import _spd_inverse
from ..kinematics import _frame, _ref, _express

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model

__all__ = ["inverse_inertia", "inverse_inertia_block"]


# ---------------------------------------------------------------------------------------
# kernels
@njit(inline="always", cache=True)
def _matmul6(A, B, out):
    """out = A B for 6x6 matrices (out must not alias A or B)."""
    for r in range(6):
        a0, a1, a2, a3, a4, a5 = A[r, 0], A[r, 1], A[r, 2], A[r, 3], A[r, 4], A[r, 5]
        for c in range(6):
            out[r, c] = a0 * B[0, c] + a1 * B[1, c] + a2 * B[2, c] + a3 * B[3, c] + a4 * B[4, c] + a5 * B[5, c]


@njit(inline="always", cache=True)
def _matmul6_bt(A, B, out, scale):
    """out = scale A B^T for 6x6 matrices."""
    for r in range(6):
        a0, a1, a2, a3, a4, a5 = A[r, 0], A[r, 1], A[r, 2], A[r, 3], A[r, 4], A[r, 5]
        for c in range(6):
            out[r, c] = scale * (a0 * B[c, 0] + a1 * B[c, 1] + a2 * B[c, 2] + a3 * B[c, 3] + a4 * B[c, 4]
                                 + a5 * B[c, 5])


@njit(cache=True)
def _inverse_inertia_kernel(mi, mf, ws, q, fb, fR, fp, ref, G, T, out):
    """out (6k, 6k) = J M^-1 J^T for the k frames (body fb[f], pose fR[f], fp[f] in it) in
    reference ``ref`` (kinematics.WORLD / LOCAL / LOCAL_WORLD_ALIGNED).

    Scratch: G (k, nb, 6, 6) (the path products E_f T_{b<-a} for the ancestors a of each
    frame's body), T (nb, 6, 6) (the T_cp of every body); the workspace's articulated
    inertias I6 are overwritten with Θ.  Returns a status code (passes.OK, ...)."""
    st = _check_q(mi, q)
    if st != OK:
        return st
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, inertia, armature, _ = _unpack_model(mi, mf)
    nb, nq, nv = _model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, U, Dinv, u, tmp, W6, W3 = _unpack_data(ws, nb, nv)
    _kinematics_pass(mi, mf, ws, q, q[:0], q[:0], np.int64(POS), np.bool_(True), np.bool_(False))

    # --- ABA's pass 2 without bias forces: Î_i, U = Î S, D^-1 (eq. 25) ------------------
    for i in range(nb):
        for r in range(6):
            for c in range(6):
                I6[i, r, c] = inertia[i, r, c] if i > 0 else 0.0
    D = W6[0]
    for i in range(nb - 1, 0, -1):
        va, ni = vadr[i], jnv[i]
        for d in range(va, va + ni):
            _mat6_vec(I6[i], S[d], U[d])                         # U = Î S
        if ni == 1:
            Dd = _dot6(S[va], U[va]) + armature[va]
            if not Dd > 0.0:
                return SINGULAR
            Dinv[va, 0] = 1.0 / Dd
        elif ni > 1:
            for d in range(ni):
                for e in range(ni):
                    D[d, e] = _dot6(S[va + d], U[va + e])
                D[d, d] += armature[va + d]
            if not _spd_inverse(D, ni, Dinv[va:va + ni]):
                return SINGULAR
        if parent[i] == 0:
            continue
        for d in range(ni):                                     # Î^a = Î - U D^-1 U^T
            for e in range(ni):
                w = Dinv[va + d, e]
                for r in range(6):
                    x = w * U[va + d, r]
                    for c in range(6):
                        I6[i, r, c] -= x * U[va + e, c]
        _inertia_to_parent_add(liR[i], lip[i], I6[i], I6[parent[i]])

    # --- Θ pass (root to leaves), Θ_i stored over Î_i in I6 -----------------------------
    # Θ_0 = 0 (I6[0] was zeroed above and receives nothing: children of the world skip the add)
    W = W6[1]
    col, y, t6 = W6[0, 0], W6[0, 1], W6[0, 2]                # 6-vectors (D is free again)
    for i in range(1, nb):
        va, ni = vadr[i], jnv[i]
        p = parent[i]
        Th = I6[i]
        if p != 0:
            # T_i = X_i - S K with K = D^-1 U^T X_i: row d of K is X_i^T (D^-1 U^T)_d, a force
            # carried to the parent (X^T = X^*, force_act), ni transforms instead of 6 ni^2 dots
            Ti = T[i]
            for c in range(6):                                  # X_i, column by column
                for k in range(6):
                    y[k] = 1.0 if k == c else 0.0
                _motion_inv_act(liR[i], lip[i], y, col)
                for r in range(6):
                    Ti[r, c] = col[r]
            for d in range(ni):
                for k in range(6):
                    s = 0.0
                    for e in range(ni):
                        s += Dinv[va + d, e] * U[va + e, k]
                    W[d, k] = s
                _force_act_inplace(liR[i], lip[i], W[d])
            for d in range(ni):
                for r in range(6):
                    x = S[va + d, r]
                    if x != 0.0:
                        for c in range(6):
                            Ti[r, c] -= x * W[d, c]
            _matmul6(T[i], I6[p], W)                            # Θ_i = T Θ_p T^T - S D^-1 S^T
            for r in range(6):
                for c in range(r, 6):
                    s = 0.0
                    for k in range(6):
                        s += W[r, k] * T[i, c, k]
                    Th[r, c] = s
        else:
            for r in range(6):
                for c in range(r, 6):
                    Th[r, c] = 0.0
        for d in range(ni):
            for e in range(ni):
                w = Dinv[va + d, e]
                for r in range(6):
                    x = w * S[va + d, r]
                    if x != 0.0:
                        for c in range(r, 6):
                            Th[r, c] -= x * S[va + e, c]
        for r in range(6):
            for c in range(r + 1, 6):
                Th[c, r] = Th[r, c]

    # --- the frames: E_f, then E_f T_{b<-a} for every ancestor a of the frame's body ------
    k = fb.shape[0]
    R3, p3 = W3[0], W3[2, 0]
    for f in range(k):
        b = fb[f]
        if b == 0:
            continue
        Gf = G[f]
        for c in range(6):                                      # G[f, b] = E_f, column by column
            for r in range(6):
                y[r] = 1.0 if r == c else 0.0
            _express(ref, oR, op, b, fR[f], fp[f], y, col, R3, p3, t6)
            for r in range(6):
                Gf[b, r, c] = col[r]
        a = b
        while parent[a] != 0:
            _matmul6(Gf[a], T[a], Gf[parent[a]])
            a = parent[a]

    # --- the blocks: out_gf = -G[g, p] Θ_p G[f, p]^T, p the deepest common ancestor ---------
    for g in range(k):
        for f in range(g + 1):
            bg, bf = fb[g], fb[f]
            a, b = bg, bf
            while a != b:                                       # depth-first order: parent < child
                if a > b:
                    a = parent[a]
                else:
                    b = parent[b]
            blk = out[6 * g:6 * g + 6, 6 * f:6 * f + 6]
            if a == 0 or bg == 0 or bf == 0:
                for r in range(6):
                    for c in range(6):
                        blk[r, c] = 0.0
            else:
                _matmul6(G[g, a], I6[a], W)
                _matmul6_bt(W, G[f, a], blk, -1.0)
            if f != g:
                for r in range(6):
                    for c in range(6):
                        out[6 * f + c, 6 * g + r] = blk[r, c]
            else:                                               # exactly symmetric diagonal blocks
                for r in range(6):
                    for c in range(r + 1, 6):
                        x = 0.5 * (blk[r, c] + blk[c, r])
                        blk[r, c] = x
                        blk[c, r] = x
    return OK


@njit(cache=True)
def _inverse_inertia_packed(buf, q, fb, fR, fp, ref, G, T, out):
    """``_inverse_inertia_kernel`` on a model packed in one buffer (Model._packed)."""
    mi, mf, ws = _unpack_packed(buf)
    return _inverse_inertia_kernel(mi, mf, ws, q, fb, fR, fp, ref, G, T, out)


_entry = Entry(_inverse_inertia_packed, PACKED, VEC, nt.Array(nt.int64, 1, "C"), nt.Array(nt.float64, 3, "C"),
               OUT2, nt.int64, nt.Array(nt.float64, 4, "C"), nt.Array(nt.float64, 3, "C"), OUT2)


# ---------------------------------------------------------------------------------------
# public functions
_CACHE = "_inverse_inertia_cache"          # frames as given -> (fb, fR, fp, G view, T)
_SCRATCH = "_inverse_inertia_scratch"      # [T, G]
_CACHE_MAX = 64


def _frames(model, frames):
    """(fb, fR, fp, G, T) for ``frames``: the frames' bodies and poses and the scratch arrays,
    cached per model by the frames as given (names or indices).  The model is immutable, so
    the cache (a private attribute of the model, like ``kinematics._frame``'s) never goes stale."""
    cache = model.__dict__.get(_CACHE)
    if cache is None:
        cache = model.__dict__.setdefault(_CACHE, {})
    single = isinstance(frames, (str, int, np.integer)) and not isinstance(frames, (bool, np.bool_))
    try:
        key = frames if single or isinstance(frames, tuple) else tuple(frames)
        hit = cache.get(key)
    except TypeError:                           # not iterable, or unhashable items: not cached
        key = hit = None
    if hit is not None:
        return hit
    if single:
        seq = (frames,)
    else:
        try:
            seq = tuple(frames)
        except TypeError:
            raise TypeError(f"frames: expected a frame name or index, or a list of them, got {frames!r}") from None
    fb = np.zeros(len(seq), dtype=np.int64)
    fR = np.zeros((len(seq), 3, 3))
    fp = np.zeros((len(seq), 3))
    for n, fr in enumerate(seq):
        if isinstance(fr, (bool, np.bool_)) or not isinstance(fr, (str, int, np.integer)):
            raise TypeError(f"frames[{n}]: expected a frame name (str) or index (int), got {fr!r}")
        try:
            fb[n], fR[n], fp[n] = _frame(model, fr)
        except KeyError as exc:
            what = "frames" if single else f"frames[{n}]"
            raise KeyError(f"{what}: {exc.args[0]}") from None
    # scratch shared by every frame set of the model: T (nb, 6, 6) and G (k_max, nb, 6, 6)
    scratch = model.__dict__.setdefault(_SCRATCH, [np.zeros((model.nbody, 6, 6)), np.zeros((0, model.nbody, 6, 6))])
    T, G = scratch
    if G.shape[0] < len(seq):
        G = scratch[1] = np.zeros((len(seq), model.nbody, 6, 6))
        cache.clear()               # the cached frame sets hold views of the old G
    elif len(cache) >= _CACHE_MAX:
        cache.clear()
    args = (fb, fR, fp, G[:len(seq)], T)
    if key is not None:
        cache[key] = args
    return args


def inverse_inertia(model: Model, q: ArrayLike, frames: str | int | Sequence[str | int],
                    reference: str = "local_world_aligned") -> NDArray[np.float64]:
    """Inverse operational-space inertia (the Delassus matrix) of a set of frames:
    ``J M^-1 J^T`` (6k, 6k) with ``J`` the k frame Jacobians ``linkdyn.jacobian(model, q, f,
    reference)`` stacked, without forming M or J.

    Block (g, f) is the change of frame g's spatial acceleration per unit spatial force
    (dual of ``reference``, e.g. a force [f; n] at the frame origin in world axes for
    "local_world_aligned") applied at frame f.  Blocks of frames on the world are zero.

    ``frames``: a frame name or index (result 6x6) or a sequence of them (frames may repeat
    and may sit on the same body); ``reference``: "world", "local" or "local_world_aligned"
    (as in :func:`linkdyn.jacobian`).  ``q`` is a single configuration (nq,).  The armature
    is included (as in ``crba``); loop closures of the model are not (the tree's J M^-1 J^T).

    Method: a recursion of the inverse inertia over the articulated-body algorithm
    (R. Featherstone, *Rigid Body Dynamics Algorithms*, Springer 2008, the articulated-body
    algorithm of ch. 7; the same propagation as K. Kreutz-Delgado, A. Jain & G. Rodriguez,
    "Recursive formulation of operational space control", Int. J. Robotics Research 11(4),
    1992; cf. the extended-force-propagator algorithm of P. Wensing, R. Featherstone &
    D. Orin, ICRA 2012).  With the articulated inertias Î_c of the articulated body
    algorithm, the joint motion subspaces Ĵ_c, D_c = Ĵ_c^T Î_c Ĵ_c (+ armature) and the
    motion transforms X_cp from parent p to child c,

        T_cp = (1 - Ĵ_c D_c^-1 (Î_c Ĵ_c)^T) X_cp,    S_cp = Ĵ_c D_c^-1 Ĵ_c^T,
        Θ_world = 0,    Θ_c = T_cp Θ_p T_cp^T - S_cp,

    and the block of bodies i, j with deepest common ancestor p is
    Φ_ji = -T_{j<-p} Θ_p T_{i<-p}^T (T_{j<-p}: product of the T's on the path p -> j), which
    is mapped to the frames.  (A source of this recursion prints S_cp with a trailing δẐ_c;
    S_cp is the 6x6 matrix above, the δẐ_c belongs to the product S_cp δẐ_c.)

    Cost O(n + k n_depth + k^2) 6x6 operations in one compiled call.
    """
    if model._full is not None:          # a geared model (linkdyn.model.gears): J_r M_r^-1 J_r^T, densely
        from ..dynamics.crba import crba
        from ..kinematics import jacobian
        names = [frames] if isinstance(frames, (str, int, np.integer)) else list(frames)
        J = np.concatenate([jacobian(model, q, f, reference) for f in names])
        return J @ np.linalg.solve(crba(model, q), J.T)
    ref = _ref(reference)
    fb, fR, fp, G, T = _frames(model, frames)
    k = fb.shape[0]
    out = np.empty((6 * k, 6 * k))
    if type(q) is np.ndarray and q.dtype == np.float64 and q.ndim == 1:
        st = _entry.fn(model._packed, q, fb, fR, fp, ref, G, T, out)
        if st == OK:
            return out
        q_arr = q
    else:
        q_arr = _as_vector(q, model.nq, "q")
        if q_arr.ndim != 1:
            raise ValueError(f"q: inverse_inertia takes a single configuration of shape ({model.nq},), "
                             f"got a stack of shape {q_arr.shape}; call it once per state")
        st = _entry.fn(model._packed, q_arr, fb, fR, fp, ref, G, T, out)
        if st == OK:
            return out
    as_states(model, q=q_arr)           # the shape message, if that is what is wrong
    raise_for_status(model, st, q=q_arr)
    raise RuntimeError(f"inverse_inertia: kernel status {st}")      # pragma: no cover


def inverse_inertia_block(model: Model, q: ArrayLike, frame_a: str | int, frame_b: str | int,
                          reference: str = "local_world_aligned") -> NDArray[np.float64]:
    """The 6x6 block ``J_a M^-1 J_b^T`` of :func:`inverse_inertia` for one pair of frames
    (any pair: the same frame, frames on one body, an ancestor, siblings, the world): the
    acceleration of frame a per unit force at frame b."""
    return inverse_inertia(model, q, (frame_a, frame_b), reference)[0:6, 6:12]
