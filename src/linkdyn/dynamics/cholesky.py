"""Tree-sparse factorization of the joint-space inertia matrix: H = L^T D L (LTDL).

Featherstone, *Rigid Body Dynamics Algorithms* (2008), sec. 6.5 "Sparse factorization",
Table 6.3 (the LTDL factorization) and the multiplication / back-substitution algorithms
of the same section (spatial_v2: ``LTDL.m``, ``mpyLi.m``, ``mpyLit.m``).  The matrix itself
is Walker and Orin 1982 (CRBA, :mod:`linkdyn.dynamics.crba`); here it is written H as in the book.

**Branch-induced sparsity.**  Number the dofs 0..n-1 in depth-first order and give each dof
i a parent dof lambda(i) < i: the previous dof of the same joint, or for the first dof of a
joint the last dof of the nearest ancestor body that has dofs (-1 at the root).  Then
H_ij != 0 only if i lies on the chain j, lambda(j), lambda(lambda(j)), ... or j on that of i
(two dofs on different branches never share a body).  Factorizing from the leaves,

    for k = n-1 down to 0:                       # Table 6.3, 0-based, root = -1
        i = lambda(k)
        while i != -1:
            a = H_ki / H_kk
            j = i
            while j != -1:
                H_ij = H_ij - H_kj a             # only ancestors of k are touched: no fill-in
                j = lambda(j)
            H_ki = a
            i = lambda(i)

leaves L (unit lower triangular, L_ki != 0 only for i on the chain of k) in the strict lower
triangle and D in the diagonal.  Cost sum_k d_k (d_k + 1) / 2 multiply-adds (d_k: number of
ancestors of dof k), i.e. O(n d^2) for a tree of depth d instead of O(n^3); the strict upper
triangle is never read or written.  The factorization is unique, so it is the same as
Pinocchio's ``cholesky.decompose`` (H = U D U^T with U = L^T) whenever the dofs are numbered
alike.

**Back-substitution** (H x = y, i.e. L^T D L x = y), each O(n d):

    y <- L^-T y:  for i = n-1 down to 0: for j on the chain of lambda(i): y_j -= L_ij y_i
    y <- D^-1 y
    x <- L^-1 y:  for i = 0 up to n-1:   for j on the chain of lambda(i): x_i -= L_ij x_j

**Meaning of D.**  D_kk is the Schur complement of the dofs after k, which for a tree are
the descendants of k: D_kk = min over the descendant rates of q'^T H q' with q'_k = 1 and
every other rate 0, twice the smallest kinetic energy of moving dof k at unit rate while its
descendants move freely (for a 1-dof joint it is ABA's D_i = S_i^T I^A_i S_i).  D_kk = 0 means
dof k moves no mass or inertia that the joints after it cannot keep still: a massless leaf,
two coaxial joints on a massless body.  The factorization reports such a dof as singular
when D_kk <= SINGULAR_TOL * H_kk (the original diagonal entry, same units: this is
scale-free and mixes no revolute with prismatic dofs).

**Constraints.**  For a constraint Jacobian Jc (m, n), the constrained-dynamics solvers need
Y = H^-1 Jc^T and the inverse operational-space inertia Lambda = Jc H^-1 Jc^T.  With
Z = L^-T Jc^T (column r of Z is non-zero only on the ancestors of the dofs row r of Jc
touches; Featherstone, "Exploiting sparsity in operational-space dynamics", IJRR 29(10),
2010):  Lambda = Z^T D^-1 Z,  Y = L^-1 D^-1 Z.

Kernels (Numba, allocate nothing, in place; the dof parents are ``model.dof_parent``): :func:`_ltdl_factor`,
:func:`_ltdl_solve`, :func:`_ltdl_solve_many`, :func:`_ltdl_inverse_congruence`.  Public:
:func:`mass_matrix_cholesky` (a :class:`MassMatrixCholesky`) and :func:`solve_mass_matrix`.
"""
from __future__ import annotations


import numpy as np
from numba import njit, prange
from numba import types as nt

from .._api import (_F64, _ND, MF, MI, OUT1, OUT2, VEC, WS, Entry, _as_vector, _first_bad, as_states,
                    batch_workspace, raise_for_status)
from .._kernels.batch import chunk as _chunk, pick as _pick
from .._kernels.passes import BAD_A, BAD_SHAPE, OK, SINGULAR, all_finite as _all_finite
from .crba import _crba_kernel

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model

#: a dof is singular when D_kk <= SINGULAR_TOL * H_kk (H_kk: its diagonal entry of H)
SINGULAR_TOL = 1e-12

LAM = nt.Array(nt.int64, 1, "C", readonly=True)
LDT = nt.Array(nt.float64, 2, "C")


# --- kernels -----------------------------------------------------------------------------
@njit(inline="always", cache=True)
def _factor(H, lam, tol):
    """LTDL in place (Table 6.3); -1 on success, else the first dof k (from the leaves) with
    D_kk <= tol * H_kk (the factorization stops there)."""
    n = H.shape[0]
    for k in range(n - 1, -1, -1):
        Dk = H[k, k]                    # final: every descendant of k is already eliminated
        # original H_kk = D_kk + sum over descendants j of L_jk^2 D_jj (H = L^T D L); the
        # descendants of k are the contiguous dofs j > k with lambda(j) >= k (depth-first order)
        Hkk = Dk
        j = k + 1
        while j < n and lam[j] >= k:
            l = H[j, k]
            Hkk += l * l * H[j, j]
            j += 1
        if not Dk > tol * Hkk:          # also catches NaN
            return k
        i = lam[k]
        while i >= 0:
            a = H[k, i] / Dk
            j = i
            while j >= 0:
                H[i, j] -= H[k, j] * a   # H_ij = H_ij - H_kj a
                j = lam[j]
            H[k, i] = a                  # L_ki
            i = lam[i]
    return -1


@njit(cache=True)
def _ltdl_factor(H, lam):
    """H (n, n) <- L (strict lower triangle, unit diagonal implied) and D (diagonal), in place:
    H = L^T D L over the tree pattern of ``lam`` (Featherstone 2008, Table 6.3).  Reads the
    lower triangle and diagonal only; the strict upper triangle is left as it is.  Returns OK,
    or SINGULAR if some D_kk <= SINGULAR_TOL * H_kk.  Cost O(n d^2) (depth d), no allocation.
    ``lam`` must number the dofs depth first (lambda(i) < i, every subtree contiguous)."""
    return OK if _factor(H, lam, SINGULAR_TOL) < 0 else SINGULAR


@njit(cache=True)
def _ltdl_singular_dof(H, lam):
    """As :func:`_ltdl_factor`, but returns the singular dof (-1 if none): error messages."""
    return _factor(H, lam, SINGULAR_TOL)


@njit(cache=True)
def _ltdl_solve(LD, lam, x):
    """x <- H^-1 x for H = L^T D L packed in LD by :func:`_ltdl_factor`.  O(n d)."""
    n = LD.shape[0]
    # x <- L^-T x
    for i in range(n - 1, -1, -1):
        xi = x[i]
        if xi != 0.0:
            j = lam[i]
            while j >= 0:
                x[j] -= LD[i, j] * xi
                j = lam[j]
    # x <- D^-1 x
    for i in range(n):
        x[i] /= LD[i, i]
    # x <- L^-1 x
    for i in range(n):
        s = x[i]
        j = lam[i]
        while j >= 0:
            s -= LD[i, j] * x[j]
            j = lam[j]
        x[i] = s


@njit(cache=True)
def _ltdl_solve_checked(LD, lam, b, x):
    """x <- H^-1 b (b left as it is); BAD_SHAPE / BAD_A if b is not (n,) or not finite."""
    n = LD.shape[0]
    if b.shape[0] != n:
        return BAD_SHAPE
    for k in range(n):
        x[k] = b[k]
    if not _all_finite(x):
        return BAD_A
    _ltdl_solve(LD, lam, x)
    return OK


@njit(inline="always", cache=True)
def _row_is_zero(X, i):
    for r in range(X.shape[1]):
        if X[i, r] != 0.0:
            return False
    return True


@njit(inline="always", cache=True)
def _lit_rows(LD, lam, X):
    """X <- L^-T X (rows of X are dofs), skipping zero rows: a column of the result is
    non-zero only on the ancestors of the dofs where that column of X was.  O(k n d)."""
    n, k = X.shape[0], X.shape[1]
    for i in range(n - 1, -1, -1):
        if _row_is_zero(X, i):
            continue
        j = lam[i]
        while j >= 0:
            l = LD[i, j]
            if l != 0.0:
                for r in range(k):
                    X[j, r] -= l * X[i, r]
            j = lam[j]


@njit(inline="always", cache=True)
def _dinv_li_rows(LD, lam, X):
    """X <- L^-1 D^-1 X (rows of X are dofs).  O(k n d)."""
    n, k = X.shape[0], X.shape[1]
    for i in range(n):
        w = 1.0 / LD[i, i]
        for r in range(k):
            X[i, r] *= w
    for i in range(n):
        j = lam[i]
        while j >= 0:
            l = LD[i, j]
            if l != 0.0:
                for r in range(k):
                    X[i, r] -= l * X[j, r]
            j = lam[j]


@njit(cache=True)
def _ltdl_solve_many(LD, lam, X):
    """X (n, k) <- H^-1 X, every column at once (rows are dofs).  O(k n d)."""
    _lit_rows(LD, lam, X)
    _dinv_li_rows(LD, lam, X)


@njit(cache=True)
def _ltdl_inverse_congruence(LD, lam, Jc, Y, Lambda):
    """Y (n, m) <- H^-1 Jc^T and Lambda (m, m) <- Jc H^-1 Jc^T for Jc (m, n).

    Z = L^-T Jc^T (in Y; a column stays on the ancestors of its row's dofs, zero rows are
    skipped), Lambda = Z^T D^-1 Z (symmetric, zero entries of Z skipped), Y = L^-1 D^-1 Z.
    Cost O(m n d) for the two triangular solves (less when the rows of Jc touch few branches)
    plus O(m^2 n') for Lambda, n' <= n the dofs in the union of the rows' supports' ancestors."""
    n, m = LD.shape[0], Jc.shape[0]
    for i in range(n):
        for r in range(m):
            Y[i, r] = Jc[r, i]
    _lit_rows(LD, lam, Y)
    # Lambda = Z^T D^-1 Z
    for r in range(m):
        for s in range(m):
            Lambda[r, s] = 0.0
    for i in range(n):
        w = 1.0 / LD[i, i]
        for r in range(m):
            zr = Y[i, r]
            if zr != 0.0:
                zr *= w
                for s in range(r, m):
                    Lambda[r, s] += zr * Y[i, s]
    for r in range(m):
        for s in range(r + 1, m):
            Lambda[s, r] = Lambda[r, s]
    _dinv_li_rows(LD, lam, Y)


@njit(cache=True)
def _mass_matrix_cholesky_kernel(mi, mf, ws, q, lam, LD):
    """LD <- LTDL of H(q): CRBA (Walker and Orin 1982) then :func:`_ltdl_factor`."""
    st = _crba_kernel(mi, mf, ws, q, LD)
    if st != OK:
        return st
    return _ltdl_factor(LD, lam)


@njit(cache=True)
def _solve_mass_matrix_kernel(mi, mf, ws, q, b, lam, H, x):
    """x <- H(q)^-1 b: CRBA into H (scratch, (nv, nv)), LTDL, back-substitution."""
    nv = H.shape[0]
    if b.shape[0] != nv:
        return BAD_SHAPE
    st = _crba_kernel(mi, mf, ws, q, H)
    if st != OK:
        return st
    if not _all_finite(b):
        return BAD_A
    st = _ltdl_factor(H, lam)
    if st != OK:
        return st
    for k in range(nv):
        x[k] = b[k]
    _ltdl_solve(H, lam, x)
    return OK


@njit(parallel=True, cache=True)
def _mass_matrix_cholesky_batch(mi, mf, WS, Q, lam, OUT, status):
    nt_, n = WS.shape[0], OUT.shape[0]
    for t in prange(nt_):
        lo, hi = _chunk(t, nt_, n)
        for k in range(lo, hi):
            status[k] = _mass_matrix_cholesky_kernel(mi, mf, _pick(WS, t), _pick(Q, k), lam, _pick(OUT, k))


@njit(parallel=True, cache=True)
def _solve_mass_matrix_batch(mi, mf, WS, Q, B, lam, HS, X, status):
    """HS (nthreads, nv, nv): one scratch H per thread."""
    nt_, n = WS.shape[0], X.shape[0]
    for t in prange(nt_):
        lo, hi = _chunk(t, nt_, n)
        for k in range(lo, hi):
            status[k] = _solve_mass_matrix_kernel(mi, mf, _pick(WS, t), _pick(Q, k), _pick(B, k), lam,
                                                 _pick(HS, t), _pick(X, k))


@njit(parallel=True, cache=True)
def _ltdl_solve_many_batch(LD, lam, X):
    """X[k] (n, c) <- H_k^-1 X[k] for a stack of factors LD (N, n, n)."""
    for k in prange(X.shape[0]):
        _ltdl_solve_many(_pick(LD, k), lam, _pick(X, k))


@njit(parallel=True, cache=True)
def _ltdl_inverse_congruence_batch(LD, lam, Jc, Y, Lambda):
    """Per state k: Y[k], Lambda[k] from LD[k] and Jc[k] (a stack of one Jc is shared)."""
    for k in prange(Y.shape[0]):
        _ltdl_inverse_congruence(_pick(LD, k), lam, _pick(Jc, k), _pick(Y, k), _pick(Lambda, k))


_cholesky = Entry(_mass_matrix_cholesky_kernel, MI, MF, WS, VEC, LAM, OUT2)
_solve_mm = Entry(_solve_mass_matrix_kernel, MI, MF, WS, VEC, VEC, LAM, OUT2, OUT1)
_solve_checked = Entry(_ltdl_solve_checked, LDT, LAM, VEC, OUT1)
_solve_many = Entry(_ltdl_solve_many, LDT, LAM, OUT2)
_congruence = Entry(_ltdl_inverse_congruence, LDT, LAM, nt.Array(nt.float64, 2, "C"), OUT2, OUT2)


# --- public layer ------------------------------------------------------------------------


def dof_parent(model: Model) -> NDArray[np.int64]:
    """The parent dof lambda(i) of every dof, (nv,) int64, -1 at the root (read-only; computed
    once per model).  lambda(i) < i, and the descendants of dof i are the contiguous dofs
    after it."""
    return model.dof_parent


def _pattern(lam) -> np.ndarray:
    """(n, n) bool: True at (k, i) for i on the chain lambda(k), lambda(lambda(k)), ..."""
    n = len(lam)
    P = np.zeros((n, n), dtype=bool)
    for k in range(n):
        i = lam[k]
        while i >= 0:
            P[k, i] = True
            i = lam[i]
    return P


def _singular_message(model, q, lam) -> str:
    """Which dof is singular and why (slow path: only after a kernel reported SINGULAR)."""
    from .crba import crba
    H = crba(model, q)
    Hkk = H.diagonal().copy()
    k = int(_ltdl_singular_dof(H, lam))
    if k < 0:       # cannot happen for the same q; keep the message generic
        return "the joint-space inertia is singular"
    body = int(model.dof_body[k])
    jname = model._joint_names[body]
    nj = int(model.jnt_nv[body])
    which = f"dof {k} (joint {jname!r}" + (f", its dof {k - int(model.jnt_vadr[body])} of {nj})" if nj > 1 else ")")
    return (f"the joint-space inertia is singular at {which}: its pivot D[{k}] = {H[k, k]:.3g} is not above "
            f"{SINGULAR_TOL:g} * H[{k}, {k}] (H[{k}, {k}] = {Hkk[k]:.3g}).  That dof moves no mass or "
            "inertia in its direction of motion that the joints after it cannot keep still (a massless "
            "body at the end of a chain, or coaxial joints on a massless body); give the body mass, "
            "the joint armature, or remove the joint")


def _raise(model, status, lam, q, b=None):
    """raise_for_status, with the b argument named and the singular dof described."""
    codes = np.atleast_1d(status)
    bad = np.flatnonzero(codes)
    if len(bad) == 0:
        return
    which = int(bad[0])
    code = int(codes[which])
    prefix = "" if np.ndim(status) == 0 else f"state {which} of the stack: "

    def row(x):
        x = np.asarray(x, dtype=float)
        if np.ndim(status) == 0 or x.ndim < 2:
            return x
        return x[which] if x.shape[0] > 1 else x[0]

    if code == BAD_A and b is not None:
        where = _first_bad(row(b))
        raise ValueError(f"{prefix}b: contains NaN or infinity" + (f" at index {where}" if where else ""))
    if code == SINGULAR:
        raise np.linalg.LinAlgError(prefix + _singular_message(model, row(q), lam))
    raise_for_status(model, status, q=q)


class MassMatrixCholesky:
    """H(q) = L^T D L of one state or a stack (from :func:`mass_matrix_cholesky`).

    ``LD``: (nv, nv) or (N, nv, nv), L in the strict lower triangle (tree pattern, unit
    diagonal implied), D on the diagonal, H's own strict upper triangle above; ``lam``: (nv,)
    the parent dofs; ``batch``: None or N.
    """
    __slots__ = ("LD", "lam", "batch")

    def __init__(self, LD: NDArray[np.float64], lam: NDArray[np.int64], batch: int | None = None) -> None:
        self.LD, self.lam, self.batch = LD, lam, batch

    @property
    def nv(self) -> int:
        return self.LD.shape[-1]

    def __repr__(self):
        n = "" if self.batch is None else f"{self.batch} states, "
        return f"<MassMatrixCholesky: {n}nv={self.nv}, H = L^T D L>"

    def _rhs(self, b, name):
        nv = self.nv
        B = np.asarray(b)
        if B.dtype.kind not in "biuf":
            raise TypeError(f"{name}: expected real numbers, got elements of type {B.dtype}")
        lead = () if self.batch is None else (self.batch,)
        if B.shape[:len(lead)] != lead or B.ndim - len(lead) not in (1, 2) or B.shape[len(lead)] != nv:
            want = " or ".join(str(lead + s) for s in ((nv,), (nv, "k")))
            raise ValueError(f"{name}: expected shape {want}, got {B.shape}")
        B = np.array(B, dtype=np.float64, order="C")      # a copy: the kernels work in place
        if not np.isfinite(B).all():
            raise ValueError(f"{name}: contains NaN or infinity at index {_first_bad(B)}")
        return B

    def solve(self, b: ArrayLike) -> NDArray[np.float64]:
        """H^-1 b for b of shape (nv,) or (nv, k) ((N, nv) or (N, nv, k) for a stack).
        O(k nv d) per state."""
        if self.batch is None and type(b) is _ND and b.dtype is _F64 and b.ndim == 1:
            x = np.empty(self.nv)
            if _solve_checked.fn(self.LD, self.lam, b, x) == OK:
                return x
        X = self._rhs(b, "b")
        if self.batch is None:
            if X.ndim == 1:
                _solve_checked(self.LD, self.lam, X.copy(), X)
            else:
                _solve_many(self.LD, self.lam, X)
            return X
        if X.ndim == 2:
            _ltdl_solve_many_batch(self.LD, self.lam, X.reshape(X.shape + (1,)))
        else:
            _ltdl_solve_many_batch(self.LD, self.lam, X)
        return X

    def inverse_congruence(self, Jc: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(Y, Lambda) = (H^-1 Jc^T, Jc H^-1 Jc^T) for a constraint Jacobian Jc (m, nv)
        (a stack: (N, m, nv), or one (m, nv) shared by every state)."""
        nv = self.nv
        J = np.asarray(Jc)
        if J.dtype.kind not in "biuf":
            raise TypeError(f"Jc: expected real numbers, got elements of type {J.dtype}")
        ok = (J.ndim == 2 or (self.batch is not None and J.ndim == 3 and J.shape[0] == self.batch)) \
            and J.shape[-1] == nv
        if not ok:
            want = f"(m, {nv})" + ("" if self.batch is None else f" or ({self.batch}, m, {nv})")
            raise ValueError(f"Jc: expected shape {want}, got {J.shape}")
        J = np.array(J, dtype=np.float64, order="C")      # a fresh array of the compiled type
        if not np.isfinite(J).all():
            raise ValueError(f"Jc: contains NaN or infinity at index {_first_bad(J)}")
        m = J.shape[-2]
        if self.batch is None:
            Y, Lam = np.empty((nv, m)), np.empty((m, m))
            _congruence(self.LD, self.lam, J, Y, Lam)
            return Y, Lam
        Y, Lam = np.empty((self.batch, nv, m)), np.empty((self.batch, m, m))
        _ltdl_inverse_congruence_batch(self.LD, self.lam, J if J.ndim == 3 else J[None], Y, Lam)
        return Y, Lam

    def diagonal(self) -> NDArray[np.float64]:
        """D, (nv,) or (N, nv)."""
        return np.diagonal(self.LD, axis1=-2, axis2=-1).copy()

    def logdet(self) -> float | NDArray[np.float64]:
        """log det H = sum_k log D_kk (a float, or (N,) for a stack)."""
        out = np.log(self.diagonal()).sum(axis=-1)
        return float(out) if self.batch is None else out

    def to_dense(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(L, D): L (nv, nv) unit lower triangular, zero outside the tree pattern, and
        D (nv,), with H = L^T diag(D) L; (N, nv, nv) and (N, nv) for a stack."""
        P = _pattern(self.lam)
        L = np.where(P, self.LD, 0.0)
        idx = np.arange(self.nv)
        L[..., idx, idx] = 1.0
        return L, self.diagonal()


def mass_matrix_cholesky(model: Model, q: ArrayLike) -> MassMatrixCholesky:
    """The tree-sparse factorization H(q) = L^T D L of the joint-space inertia matrix
    (CRBA, then Featherstone 2008 sec. 6.5, Table 6.3): one state q (nq,) or a stack (N, nq).

    O(n d^2) for n dofs at depth d; raises ``numpy.linalg.LinAlgError`` naming the joint if
    H(q) is singular (a dof that moves no mass)."""
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        raise NotImplementedError(f"model {model.name!r} has gear couplings: its reduced inertia G^T H G is not "
                                  "tree-sparse; factorize linkdyn.crba(model, q) densely (scipy.linalg.cho_factor)")
    lam = dof_parent(model)
    nv = model.nv
    if type(q) is _ND and q.dtype is _F64 and q.ndim == 1:
        LD = np.empty((nv, nv))
        if _cholesky.fn(model._mi, model._mf, model._ws, q, lam, LD) == OK:
            return MassMatrixCholesky(LD, lam)
    args = as_states(model, q=q)
    if args.batch is None:
        LD = np.empty((nv, nv))
        status = _cholesky(model._mi, model._mf, model._ws, args.q, lam, LD)
    else:
        LD = np.empty((args.batch, nv, nv))
        status = np.empty(args.batch, dtype=np.int64)
        _mass_matrix_cholesky_batch(model._mi, model._mf, batch_workspace(model), args.q, lam, LD, status)
    _raise(model, status, lam, args.q)
    return MassMatrixCholesky(LD, lam, args.batch)


def solve_mass_matrix(model: Model, q: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """x = H(q)^-1 b by CRBA and the tree-sparse LTDL factorization (:func:`mass_matrix_cholesky`).

    q (nq,) or (N, nq), b (nv,) or (N, nv) (a single q or b is shared by the stack; one q with
    many b factorizes once).  The same as ``linkdyn.aba(model, q, 0, b)`` on the model without
    gravity, damping and friction.  For several right-hand sides per state use
    ``mass_matrix_cholesky(model, q).solve(B)``."""
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        from .crba import crba
        s = as_states(model, q=q, b=b)
        return np.linalg.solve(crba(model, s.q), s.b[..., None])[..., 0]
    lam = dof_parent(model)
    nv = model.nv
    if type(q) is _ND and type(b) is _ND and q.dtype is _F64 and b.dtype is _F64 and q.ndim == 1 and b.ndim == 1:
        H, x = np.empty((nv, nv)), np.empty(nv)
        if _solve_mm.fn(model._mi, model._mf, model._ws, q, b, lam, H, x) == OK:
            return x
    Q, B, batch = _q_and_b(model, q, b)
    if batch is None:
        H, x = np.empty((nv, nv)), np.empty(nv)
        status = _solve_mm(model._mi, model._mf, model._ws, Q, B, lam, H, x)
        _raise(model, status, lam, Q, B)
        return x
    if Q.shape[0] == 1:                 # one q, many b: factorize once
        finite = np.isfinite(B).all(axis=1)
        if not finite.all():
            _raise(model, np.where(finite, OK, BAD_A), lam, Q, B)
        fac = mass_matrix_cholesky(model, Q[0])
        return fac.solve(B.T).T.copy()
    WSs = batch_workspace(model)
    HS = np.empty((WSs.shape[0], nv, nv))
    X = np.empty((batch, nv))
    status = np.empty(batch, dtype=np.int64)
    _solve_mass_matrix_batch(model._mi, model._mf, WSs, Q, B, lam, HS, X, status)
    _raise(model, status, lam, Q, B)
    return X


def _q_and_b(model, q, b):
    """as_states for (q, b): q (nq,) or (N, nq), b (nv,) or (N, nv); a single one next to a
    stack is passed as a stack of one (shared).  Returns (Q, B, batch)."""
    args = as_states(model, q=q)
    B = _as_vector(b, model.nv, "b")
    Q, batch = args.q, args.batch
    if B.ndim == 2:
        if batch is not None and B.shape[0] != batch:
            raise ValueError(f"b: stack of {B.shape[0]} states, but q has {batch}")
        if batch is None:
            batch, Q = B.shape[0], Q.reshape(1, -1)
    elif batch is not None:
        B = B.reshape(1, -1)
    return Q, B, batch
