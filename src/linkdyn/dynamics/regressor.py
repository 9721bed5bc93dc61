"""Linearity in the inertial parameters: Y(q, q', q'') a = tau (Spong, Hutchinson and Vidyasagar 2006, ch. 7,
the base (identifiable) parameters, and their least-squares identification.

* :func:`joint_torque_regressor` Y (nv, 10 (nbody - 1)) with ``rnea(q, v, a) = Y @ inertial_parameters(model)``
  (plus armature, viscous and Coulomb friction with ``with_joint_terms=True``).  The 10
  parameters of each moving body are Pinocchio's (``Inertia.toDynamicParameters``), in the
  body frame, about the body origin:

      [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]

  Body 0, the world (and what is welded to it), has none.  With joint terms, 3 nv columns
  follow: q''_d (armature of dof d), q'_d (viscous friction, Spong, Hutchinson and Vidyasagar 2006, ch. 7 and
  sign(q'_d) (Coulomb friction).
* :func:`base_parameters`: which combinations of the parameters the torques determine, by a
  rank-revealing QR of the regressor stacked over random states (Spong, Hutchinson and Vidyasagar 2006, ch. 7 forms them
  by hand for the planar 2-link arm: phi_1 = m1 l1^2 + m2 a1^2 + J1, ...).
* :func:`identify`: least-squares estimates of the base parameters from measured torques, with
  standard errors.

The regressor (Spong, Hutchinson and Vidyasagar 2006, ch. 7 for a tree).  The spatial force of body k,
f_k = I_k a_k + v_k x* I_k v_k, is linear in its parameters, f_k = A(v_k, a_k) pi_k (6x10, body
frame; a_k includes -g as in RNEA), and the torque of dof e is S_e^T times the sum of the forces
of the bodies that e supports.  Here A is carried to the world once per body, and every
entry is then one dot product with the world-frame motion S_e of an ancestor dof:

    Y[e, 10 (k - 1) + c] = S_e^T (X_0k^* A_k)[:, c]       for every e that supports body k.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from numba import njit, prange

from .._api import as_states, run, vectors
from ..model.gears import reduced
from .._kernels.batch import chunk as _chunk, pick as _pick
from .._kernels.layout import (_view, model_sizes as _model_sizes, unpack_data as _unpack_data, unpack_model as _unpack_model)
from .._kernels.passes import ACC, OK, check_inputs as _check_inputs, kinematics_pass as _kinematics_pass
from .._kernels.spatial_nb import dot6 as _dot6, force_act_inplace as _force_act_inplace, motion_act as _motion_act
from ..model.parameters import (BODY_PARAM_NAMES, JOINT_PARAM_NAMES, N_BODY_PARAMS, _flag,  # noqa: F401 (re-exported)
                                inertial_parameters, parameter_names)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model


# leading fields of unpack_model / unpack_data by position (new fields are appended after)
_PARENT, _VADR, _JNV = 0, 3, 5
_OR, _OP, _VEL, _ACC, _S, _TMP, _W6 = 0, 1, 4, 5, 7, 15, 16


@njit(inline="always", cache=True)
def _body_regressor(v, a, A):
    """A[c] = column c of the 6x10 matrix with I a + v x* (I v) = A pi for the 10 parameters pi
    (order above) of a rigid body with velocity v = [v_l; w] and acceleration a = [a_l; w'].

        m:        [a_l + w x v_l; 0]
        m c:      [([w]x^2 + [w']x) e_c;  e_c x (a_l + w x v_l)]
        Ib:       [0;  L(w') + w x L(w)]        with L(w) pi_I = Ib w
    """
    w0, w1, w2 = v[3], v[4], v[5]
    d0, d1, d2 = a[3], a[4], a[5]
    # acc = a_l + w x v_l
    c0 = a[0] + w1 * v[2] - w2 * v[1]
    c1 = a[1] + w2 * v[0] - w0 * v[2]
    c2 = a[2] + w0 * v[1] - w1 * v[0]
    for c in range(10):
        for k in range(6):
            A[c, k] = 0.0
    A[0, 0], A[0, 1], A[0, 2] = c0, c1, c2
    # m c: lin = w (w . e) - e |w|^2 + w' x e ; ang = e x acc
    ww = w0 * w0 + w1 * w1 + w2 * w2
    A[1, 0], A[1, 1], A[1, 2] = w0 * w0 - ww, w1 * w0 + d2, w2 * w0 - d1
    A[2, 0], A[2, 1], A[2, 2] = w0 * w1 - d2, w1 * w1 - ww, w2 * w1 + d0
    A[3, 0], A[3, 1], A[3, 2] = w0 * w2 + d1, w1 * w2 - d0, w2 * w2 - ww
    A[1, 4], A[1, 5] = -c2, c1
    A[2, 3], A[2, 5] = c2, -c0
    A[3, 3], A[3, 4] = -c1, c0
    # Ib: L(w') + w x L(w), columns xx, xy, yy, xz, yz, zz of L(w) = [w0,0,0], [w1,w0,0], [0,w1,0],
    # [w2,0,w0], [0,w2,w1], [0,0,w2]
    _rot_col(A[4], d0, 0.0, 0.0, w0, 0.0, 0.0, w0, w1, w2)
    _rot_col(A[5], d1, d0, 0.0, w1, w0, 0.0, w0, w1, w2)
    _rot_col(A[6], 0.0, d1, 0.0, 0.0, w1, 0.0, w0, w1, w2)
    _rot_col(A[7], d2, 0.0, d0, w2, 0.0, w0, w0, w1, w2)
    _rot_col(A[8], 0.0, d2, d1, 0.0, w2, w1, w0, w1, w2)
    _rot_col(A[9], 0.0, 0.0, d2, 0.0, 0.0, w2, w0, w1, w2)


@njit(inline="always", cache=True)
def _rot_col(out, l0, l1, l2, m0, m1, m2, w0, w1, w2):
    """out[3:] = l + w x m."""
    out[3] = l0 + w1 * m2 - w2 * m1
    out[4] = l1 + w2 * m0 - w0 * m2
    out[5] = l2 + w0 * m1 - w1 * m0


@njit(cache=True)
def _regressor_kernel(mi, mf, ws, q, v, a, joint_terms, Y):
    """Y (nv, 10 (nb - 1) [+ 3 nv]) with tau = Y pi."""
    st = _check_inputs(mi, q, v, a, True)
    if st != OK:
        return st
    mdl = _unpack_model(mi, mf)
    parent, vadr, jnv = mdl[_PARENT], mdl[_VADR], mdl[_JNV]
    nb, nq, nv = _model_sizes(mi)
    dat = _unpack_data(ws, nb, nv)
    oR, op, vel, acc, S, tmp, W6 = dat[_OR], dat[_OP], dat[_VEL], dat[_ACC], dat[_S], dat[_TMP], dat[_W6]
    A = _view(W6, 0, (12, 6))
    # forward: v_i, a_i (a_0 = -g) in the body frames, poses in the world
    _kinematics_pass(mi, mf, ws, q, v, a, np.int64(ACC), np.bool_(True), np.bool_(True))
    Y[:, :] = 0.0
    for i in range(1, nb):
        for d in range(vadr[i], vadr[i] + jnv[i]):
            _motion_act(oR[i], op[i], S[d], tmp[0])           # S_e in the world
            for k in range(6):
                S[d, k] = tmp[0, k]
    for i in range(1, nb):
        # A_i, then X_0i^* A_i: the body's force per unit parameter, in the world
        _body_regressor(vel[i], acc[i], A)
        for c in range(10):
            _force_act_inplace(oR[i], op[i], A[c])
        col = 10 * (i - 1)
        j = i
        while j > 0:
            # tau_e += S_e^T f_i for every dof e that supports body i
            for e in range(vadr[j], vadr[j] + jnv[j]):
                Se = S[e]
                for c in range(10):
                    Y[e, col + c] = _dot6(Se, A[c])
            j = parent[j]
    if joint_terms:
        n0 = 10 * (nb - 1)
        for d in range(nv):
            Y[d, n0 + d] = a[d]
            Y[d, n0 + nv + d] = v[d]
            Y[d, n0 + 2 * nv + d] = 1.0 if v[d] > 0.0 else (-1.0 if v[d] < 0.0 else 0.0)
    return OK


@njit(parallel=True, cache=True)
def _regressor_batch(mi, mf, WS, Q, V, A, joint_terms, OUT, status):
    nt, n = WS.shape[0], OUT.shape[0]
    for t in prange(nt):
        lo, hi = _chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = _regressor_kernel(mi, mf, _pick(WS, t), _pick(Q, k), _pick(V, k), _pick(A, k), joint_terms,
                                         _pick(OUT, k))


# ------------------------------------------------------------------------------------ public
def n_parameters(model: Model, with_joint_terms: bool = False) -> int:
    """Number of columns of the regressor: 10 per moving body (+ 3 per dof with joint terms; the
    dofs of ``model.full_model`` for a geared model, whose regressor is G^T Y_full)."""
    model = model.full_model
    return N_BODY_PARAMS * (model.nbody - 1) + (3 * model.nv if with_joint_terms else 0)


@reduced("rows")
def joint_torque_regressor(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike, with_joint_terms: bool = False) -> NDArray[np.float64]:
    """Y(q, v, a) (nv, 10 (nbody - 1)) with ``Y @ inertial_parameters(model) == rnea(model, q, v, a)``
    (Spong, Hutchinson and Vidyasagar 2006, ch. 7, gravity included, the armature and friction not;
    (N, nv, ncols) for a stack.

    With ``with_joint_terms`` 3 nv columns follow: a (armature), v (viscous friction, eq. 5.94)
    and sign(v) (Coulomb friction), and ``Y @ inertial_parameters(model, True)`` is the whole
    RNEA torque.  The same matrix as Pinocchio's ``computeJointTorqueRegressor`` (without the
    joint columns).
    """
    jt = _flag(with_joint_terms, "with_joint_terms")
    shape = (model.nv, n_parameters(model, jt))
    if vectors(q, v, a):
        out = np.empty(shape)
        if _regressor_kernel(model._mi, model._mf, model._ws, q, v, a, jt, out) == OK:
            return out
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return joint_torque_regressor.on_full_tree(model, q, v, a, with_joint_terms)
    args = as_states(model, q=q, v=v, a=a)
    return run(model, (_regressor_kernel, _regressor_batch), shape, args, ("q", "v", "a"), (jt,))


@dataclass(frozen=True)
class BaseParameters:
    """The identifiable combinations beta = E @ pi of the parameters pi (Spong, Hutchinson and Vidyasagar 2006, ch. 7).

    ``index`` (nbase,) are independent columns of the regressor (ascending), ``dependent`` the
    others; Y[:, dependent] = Y[:, index] @ K for every state, so
    ``Y @ pi == Y[:, index] @ (E @ pi)`` with ``E[:, index] = 1`` and ``E[:, dependent] = K``.
    """
    index: np.ndarray          #: (nbase,) independent columns
    dependent: np.ndarray      #: (ncols - nbase,) the other columns
    E: np.ndarray              #: (nbase, ncols) beta = E @ pi
    nbase: int                 #: number of base parameters
    with_joint_terms: bool
    model_name: str            #: the model it was computed for
    names: tuple               #: names of all ncols parameters
    tol: float                 #: |R_kk| / |R_00| below this counted as dependent (column-scaled QR)
    gap: float                 #: smallest kept / largest dropped |R_kk| (large: a clear rank)

    def beta(self, pi: ArrayLike) -> NDArray[np.float64]:
        """Base parameters of a full parameter vector (e.g. ``inertial_parameters(model)``)."""
        return self.E @ np.asarray(pi, dtype=float)

    def regressor(self, Y: ArrayLike) -> NDArray[np.float64]:
        """The base regressor Y[..., index] of a full regressor (nv, ncols) or (N, nv, ncols)."""
        return np.asarray(Y)[..., self.index]

    def describe(self, k: int, digits: int = 4) -> str:
        """Base parameter k as a sum of named parameters, e.g. ``"body1.Izz + 0.09 body2.m"``."""
        row = self.E[k]
        terms = [self.names[self.index[k]]]
        for j in np.flatnonzero(np.abs(row) > 1e-10):
            if j != self.index[k]:
                c = row[j]
                terms.append(f"{'-' if c < 0 else '+'} {abs(c):.{digits}g} {self.names[j]}")
        return " ".join(terms)


DEFAULT_RTOL = 1e-9


def base_parameters(model: Model, with_joint_terms: bool = False, n_samples: int | None = None,
                    rng: int | np.random.Generator | None = 0,
                    rtol: float = DEFAULT_RTOL) -> BaseParameters:
    """Base parameters by a rank-revealing QR (``scipy.linalg.qr`` with column pivoting) of the
    regressor stacked over ``n_samples`` random states (configurations from
    ``random_configuration``, standard normal velocities and accelerations).

    Columns are scaled to unit norm first (parameters of different units), then column k of the
    pivoted R counts as independent while |R_kk| > rtol |R_00|.  The dependent columns are
    expressed in the independent ones, Y_2 = Y_1 K with K = R_11^-1 R_12, so tau = Y_1 (pi_1 + K pi_2).
    The default rtol = 1e-9 sits in a wide gap: with scaled columns the dependent |R_kk| are
    round-off (below 1e-14 |R_00| on UR5, Panda, Talos, the human model, PUMA 560) and the
    smallest independent ones about 0.2 |R_00|; ``gap`` in the result (smallest kept over
    largest dropped) reports how clear the cut was for the model at hand.
    """
    from scipy.linalg import qr, solve_triangular

    from ..model.configuration import random_configuration

    jt = _flag(with_joint_terms, "with_joint_terms")
    p = n_parameters(model, jt)
    if model.nv == 0:
        raise ValueError(f"model {model.name!r} has no degrees of freedom: no parameter is identifiable")
    if n_samples is None:
        n_samples = max(50, int(np.ceil(4 * p / model.nv)))
    n_samples = int(n_samples)
    if n_samples * model.nv < p:
        raise ValueError(f"n_samples: {n_samples} states give {n_samples * model.nv} equations for {p} "
                         f"parameters; use at least {int(np.ceil(p / model.nv))}")
    if not (0.0 < rtol < 1.0):
        raise ValueError(f"rtol: expected a number in (0, 1), got {rtol!r}")
    gen = np.random.default_rng(rng)
    Q = random_configuration(model, gen, size=n_samples)
    V = gen.standard_normal((n_samples, model.nv))
    A = gen.standard_normal((n_samples, model.nv))
    W = joint_torque_regressor(model, Q, V, A, jt).reshape(-1, p)
    norms = np.linalg.norm(W, axis=0)
    scale = np.where(norms > 1e-12 * max(norms.max(), 1e-300), norms, 1.0)
    R, piv = qr(W / scale, mode="r", pivoting=True)
    diag = np.abs(np.diag(R))
    r0 = diag[0] if diag.size else 0.0
    r = int(np.sum(diag > rtol * r0)) if r0 > 0 else 0
    kept, dropped = diag[:r], diag[r:]
    gap = float(kept.min() / max(dropped.max(), 1e-300)) if (r and dropped.size) else np.inf
    idx1, idx2 = piv[:r], piv[r:]
    Ks = solve_triangular(R[:r, :r], R[:r, r:p]) if r else np.zeros((0, p))
    K = Ks / scale[idx1][:, None] * scale[idx2][None, :]
    order = np.argsort(idx1)
    index, K = idx1[order], K[order]
    E = np.zeros((r, p))
    E[np.arange(r), index] = 1.0
    E[:, idx2] = K
    E[np.abs(E) < 1e-12 * max(1.0, np.abs(E).max())] = 0.0
    return BaseParameters(index=index, dependent=np.sort(idx2), E=E, nbase=r, with_joint_terms=jt,
                          model_name=model.name, names=parameter_names(model, jt), tol=float(rtol), gap=gap)


@dataclass(frozen=True)
class Identification:
    """Result of :func:`identify`."""
    beta: np.ndarray           #: (nbase,) estimated base parameters
    std: np.ndarray            #: (nbase,) their standard errors
    cov: np.ndarray            #: (nbase, nbase) covariance of the estimate
    sigma2: float              #: residual variance (of the weighted residuals)
    residual: np.ndarray       #: (N, nv) measured minus predicted torques
    condition: float           #: condition number of the (weighted) base regressor
    base: BaseParameters

    @property
    def relative_std(self) -> np.ndarray:
        """std / |beta| (inf where beta is 0)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.beta != 0, self.std / np.abs(self.beta), np.inf)

    def predict(self, Y: ArrayLike) -> NDArray[np.float64]:
        """Torques of a full regressor (from :func:`joint_torque_regressor`) with the estimate."""
        return self.base.regressor(Y) @ self.beta


def _weights(weights, n, nv):
    w = np.asarray(weights, dtype=float)
    if w.shape not in ((nv,), (n, nv)):
        raise ValueError(f"weights: expected shape ({nv},) or ({n}, {nv}) (inverse variances), got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights: must be finite and non-negative")
    return np.broadcast_to(w, (n, nv))


def identify(model: Model, Q: ArrayLike, V: ArrayLike, A: ArrayLike, TAU: ArrayLike, base: BaseParameters | None = None,
             weights: ArrayLike | Literal["joint"] | None = None,
             with_joint_terms: bool | None = None, chunk_size: int = 4096) -> Identification:
    """Least-squares estimate of the base parameters from measured torques (Spong, Hutchinson and Vidyasagar 2006, ch. 7:
    stack Y_base(q_k, v_k, a_k) beta = tau_k over the samples and solve).

    Q (N, nq), V, A, TAU (N, nv): the measured trajectory.  ``base``: from
    :func:`base_parameters` (computed with ``with_joint_terms`` when None; default without).
    ``weights``: None (ordinary least squares), inverse variances (nv,) per joint or (N, nv)
    per sample, or ``"joint"``: two steps, ordinary least squares then weights 1 / sigma_j^2
    from each joint's residual variance.  Standard errors: sqrt(diag(sigma^2 (Y^T W Y)^-1))
    with sigma^2 = r^T W r / (rows - nbase).  Raises ValueError if the trajectory does not
    excite every base parameter (rank-deficient regressor).
    """
    if base is None:
        jt = False if with_joint_terms is None else _flag(with_joint_terms, "with_joint_terms")
        base = base_parameters(model, jt)
    elif not isinstance(base, BaseParameters):
        raise TypeError(f"base: expected a BaseParameters from base_parameters(), got {type(base).__name__}")
    elif with_joint_terms is not None and _flag(with_joint_terms, "with_joint_terms") != base.with_joint_terms:
        raise ValueError(f"with_joint_terms={with_joint_terms} but base was computed with "
                         f"with_joint_terms={base.with_joint_terms}")
    if base.model_name != model.name or base.names != parameter_names(model, base.with_joint_terms):
        raise ValueError(f"base: computed for another model ({base.model_name!r}, not {model.name!r})")
    args = as_states(model, q=Q, v=V, a=A, tau=TAU)
    if args.batch is None:
        args = as_states(model, q=np.atleast_2d(args.q), v=np.atleast_2d(args.v), a=np.atleast_2d(args.a),
                         tau=np.atleast_2d(args.tau))
    n, nv, r = args.batch, model.nv, base.nbase
    Qs, Vs, As, T = (np.broadcast_to(x, (n, x.shape[1])) for x in (args.q, args.v, args.a, args.tau))
    if not np.all(np.isfinite(T)):
        raise ValueError("TAU: contains NaN or infinity")
    if n * nv <= r:
        raise ValueError(f"Q: {n} samples give {n * nv} equations for {r} base parameters; need more")
    Yb = np.empty((n, nv, r))
    step = max(1, int(chunk_size))
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        Y = joint_torque_regressor(model, Qs[lo:hi], Vs[lo:hi], As[lo:hi], base.with_joint_terms)
        Yb[lo:hi] = Y[..., base.index]

    def solve(w):
        # one QR of [Y_w | tau_w] (Householder, not the normal equations): R_11 beta = z,
        # then the SVD of the small R_11 for the rank, the condition number and (R^T R)^-1
        sw = np.sqrt(w).reshape(-1)
        R = np.linalg.qr(np.column_stack([Yb.reshape(-1, r) * sw[:, None], T.reshape(-1) * sw]), mode="r")
        U, s, Vt = np.linalg.svd(R[:r, :r])
        if s.size == 0 or s[-1] <= max(n * nv, r) * np.finfo(float).eps * s[0]:
            raise ValueError("Q, V, A: the trajectory does not excite every base parameter (the stacked "
                             "base regressor is rank deficient); use a richer (exciting) trajectory")
        beta = Vt.T @ ((U.T @ R[:r, r]) / s)
        res = T - Yb @ beta
        dof = int(np.count_nonzero(sw)) - r
        sigma2 = float(np.sum(w * res ** 2) / dof) if dof > 0 else np.nan
        cov = (Vt.T / s ** 2) @ Vt * sigma2
        return beta, cov, sigma2, res, float(s[0] / s[-1])

    if weights is None:
        w = np.ones((n, nv))
    elif isinstance(weights, str):
        if weights != "joint":
            raise ValueError(f"weights: expected None, an array or 'joint', got {weights!r}")
        res0 = solve(np.ones((n, nv)))[3]
        var = np.sum(res0 ** 2, axis=0) / max(n - r / nv, 1.0)
        w = np.broadcast_to(1.0 / np.maximum(var, 1e-300 + 1e-12 * var.max()), (n, nv))
    else:
        w = _weights(weights, n, nv)
    beta, cov, sigma2, res, cond = solve(w)
    return Identification(beta=beta, std=np.sqrt(np.maximum(np.diag(cov), 0.0)), cov=cov, sigma2=sigma2,
                          residual=res, condition=cond, base=base)
