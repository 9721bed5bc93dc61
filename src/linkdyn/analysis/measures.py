"""Manipulability measures and ellipsoids (Yoshikawa 1985).

All functions take the frame Jacobian in the ``"local_world_aligned"`` reference (rows
``[linear; angular]`` of the frame's origin, world axes), keep the rows selected by ``part``
(``"full"``: all 6, ``"translation"``: rows 0-2, ``"rotation"``: rows 3-5, or an explicit
sequence of row indices such as ``(0, 1)`` for a planar arm's xy-velocity), optionally weight
it, and work with its singular values ``sigma_1 >= ... >= sigma_k``, ``k = min(m, n)`` for an
``m x n`` task Jacobian (n = model.nv).

Spong, Hutchinson and Vidyasagar 2006 assumes ``n >= m`` (square or wide J).  For a tall Jacobian (``m > n``, e.g. the 3-row
translation part of a planar 2-link arm) ``det(J J^T)`` is identically zero; the functions here
then use the ``k = n`` non-trivial singular values, i.e. ``sqrt(det(J^T J))``, the volume of the
(n-dimensional) ellipsoid inside the m-dimensional task space.

Every function accepts one configuration ``q`` (nq,) or a stack (N, nq) and then returns one
value per configuration.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..kinematics import frame_pose, jacobian

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from mpl_toolkits.mplot3d import Axes3D
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model

_PARTS = {"full": (0, 1, 2, 3, 4, 5), "translation": (0, 1, 2), "rotation": (3, 4, 5)}
_KINDS = ("yoshikawa", "stochastic", "condition")


def _rows(part):
    if isinstance(part, str):
        if part not in _PARTS:
            raise ValueError(f"part: expected one of {sorted(_PARTS)} or a sequence of row indices 0..5, got {part!r}")
        return list(_PARTS[part])
    try:
        rows = [int(r) for r in part]
    except TypeError:
        raise ValueError(f"part: expected one of {sorted(_PARTS)} or a sequence of row indices 0..5, got {part!r}") from None
    if not rows or any(r < 0 or r > 5 for r in rows) or len(set(rows)) != len(rows):
        raise ValueError(f"part: row indices must be distinct integers in 0..5, got {part!r}")
    return rows


def _weight_factor(model, weight):
    """``L^-T`` with ``W = L L^T``: the weighted Jacobian is ``J L^-T`` (= ``J W^-1/2`` for diagonal W)."""
    if weight is None:
        return None
    W = np.asarray(weight, dtype=float)
    n = model.nv
    if W.shape == (n,):
        if not np.isfinite(W).all() or (W <= 0).any():
            raise ValueError("weight: the diagonal weights must be finite and positive")
        return np.diag(1.0 / np.sqrt(W))
    if W.shape != (n, n):
        raise ValueError(f"weight: expected {n} diagonal weights or an ({n}, {n}) matrix, got shape {W.shape}")
    if not np.isfinite(W).all() or not np.allclose(W, W.T, atol=1e-12 * max(1.0, np.abs(W).max())):
        raise ValueError("weight: the matrix must be finite and symmetric")
    try:
        L = np.linalg.cholesky(0.5 * (W + W.T))
    except np.linalg.LinAlgError:
        raise ValueError("weight: the matrix must be positive definite") from None
    return np.linalg.inv(L).T


def task_jacobian(model: Model, q: ArrayLike, frame: str | int, part: str | Sequence[int] = "full",
                  weight: ArrayLike | None = None) -> NDArray[np.float64]:
    """The (weighted) task Jacobian the measures are computed from: rows ``part`` of the
    ``"local_world_aligned"`` Jacobian of ``frame``, times ``W^-1/2`` (see :func:`manipulability`).
    (m, nv) for one configuration, (N, m, nv) for a stack."""
    rows = _rows(part)
    Lt = _weight_factor(model, weight)
    if not isinstance(frame, (str, int, np.integer)):
        raise ValueError(f"frame: expected a frame name or index, got {frame!r}")
    if isinstance(frame, str) and frame not in model.frame_names and frame not in model.joint_names:
        raise ValueError(f"frame: unknown frame {frame!r}; known: {list(model.frame_names)}")
    qa = np.asarray(q, dtype=float)
    if qa.ndim not in (1, 2) or qa.shape[-1] != model.nq:
        raise ValueError(f"q: expected shape ({model.nq},) or (N, {model.nq}), got {qa.shape}")
    if not np.isfinite(qa).all():
        raise ValueError("q: must be finite")
    J = jacobian(model, qa, frame, "local_world_aligned")[..., rows, :]
    return J if Lt is None else J @ Lt


def manipulability(model: Model, q: ArrayLike, frame: str | int, kind: str = "yoshikawa", part: str | Sequence[int] = "full",
                   weight: ArrayLike | None = None) -> float | NDArray[np.float64]:
    """Manipulability of ``frame`` at ``q`` (float, or (N,) for a stack of configurations).

    ``kind``:

    ``"yoshikawa"``
        ``w = sqrt(det(J J^T)) = prod sigma_i`` (Yoshikawa 1985), computed as the product of
        the singular values (robust, and ``sqrt(det(J^T J))`` for a tall J, see the module doc).
    ``"stochastic"``
        the stochastic / harmonic-mean manipulability of Yoshikawa 1985,
        ``m_s = sqrt(m n / sum_i sigma_i^-2)`` with ``m`` the task dimension (here ``k``, the
        number of singular values) and ``n = nv``; 0 where ``det(J J^T) = 0``.  It is continuous:
        it tends to 0 as the smallest singular value does.
    ``"condition"``
        the condition number ``sigma_max / sigma_min`` (>= 1, ``inf`` at a singularity: unlike the
        two others, *smaller* is better).

    ``weight``: joint-speed weighting of Yoshikawa 1985.  Some texts write the constraint as
    a quadratic form with a diagonal ``W`` whose entries are larger for joints with a smaller
    maximum speed, i.e. ``q'^T W q' <= 1`` (the textbook's text prints ``x'``, but W weighs joints).
    Substituting ``u = W^1/2 q'`` (``||u|| <= 1``) gives the weighted Jacobian ``J W^-1/2``; for a
    full SPD ``W = L L^T`` it is ``J L^-T``.  ``weight`` is W, given as its diagonal (nv,) or as an
    (nv, nv) SPD matrix.  With joint speed limits ``v_max``, ``W = 1 / v_max**2`` gives
    ``J diag(v_max)``.  (If you hold a scaling matrix T with ``J_w = J T``, pass ``W = T^-2``.)
    """
    if kind not in _KINDS:
        raise ValueError(f"kind: expected one of {list(_KINDS)}, got {kind!r}")
    J = task_jacobian(model, q, frame, part, weight)
    s = np.linalg.svd(J, compute_uv=False)          # (..., k), descending
    if kind == "yoshikawa":
        out = np.prod(s, axis=-1)
    elif kind == "stochastic":
        k, n = s.shape[-1], J.shape[-1]
        with np.errstate(divide="ignore"):
            inv2 = np.where(s > 0, 1.0 / np.where(s > 0, s, 1.0) ** 2, np.inf)
        out = np.sqrt(k * n / inv2.sum(axis=-1))     # 1/inf = 0 where a singular value vanishes
    else:
        smin, smax = s[..., -1], s[..., 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(smin > 0, smax / np.where(smin > 0, smin, 1.0), np.inf)
    return float(out) if np.ndim(out) == 0 else out


def manipulability_ellipsoid(model: Model, q: ArrayLike, frame: str | int, part: str | Sequence[int] = "translation",
                             weight: ArrayLike | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Manipulability ellipsoid ``x'^T (J J^T)^-1 x' <= 1`` (Yoshikawa 1985): the image of the
    unit ball of joint speeds.  Returns ``(radii, axes)`` from the SVD ``J = U S V^T``: ``radii``
    (m,) are the singular values (descending, padded with zeros when m > nv) and the columns of
    ``axes`` (m, m) = U are the corresponding orthonormal principal directions in world axes.
    (N, m) and (N, m, m) for a stack of configurations.  ``part``/``weight`` as in
    :func:`manipulability`.
    """
    J = task_jacobian(model, q, frame, part, weight)
    U, s, _ = np.linalg.svd(J, full_matrices=True)
    m = J.shape[-2]
    radii = np.zeros(J.shape[:-2] + (m,))
    radii[..., :s.shape[-1]] = s
    return radii, U


def plot_manipulability_ellipses(model: Model, qs: ArrayLike, frame: str | int, ax: Axes | None = None, scale: float = 0.2,
                                 links: Sequence[str | int] | None = None) -> Axes:
    """Draw a planar arm (in the world xy-plane) and the xy manipulability ellipse of ``frame`` at
    each configuration of ``qs`` (N, nq), like Yoshikawa 1985.  The arm is drawn through the
    frames ``links`` (default: ``"link0"``, ``"link1"``, ... when they exist, as in models from
    :func:`linkdyn.models.dh.from_dh`).  ``scale`` multiplies the ellipse radii.  Needs matplotlib;
    returns the axes."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Ellipse

    qs = np.atleast_2d(np.asarray(qs, dtype=float))
    if ax is None:
        _, ax = plt.subplots()
    if links is None:
        links = []
        while f"link{len(links)}" in model.frame_names:
            links.append(f"link{len(links)}")
    radii, axes = manipulability_ellipsoid(model, qs, frame, part=(0, 1))
    tip = frame_pose(model, qs, frame)[:, :2, 3]
    for k in range(len(qs)):
        if links:
            pts = np.array([frame_pose(model, qs[k], f)[:2, 3] for f in links])
            ax.plot(pts[:, 0], pts[:, 1], "-o", color="0.4", lw=1.5, ms=3)
        ang = np.degrees(np.arctan2(axes[k, 1, 0], axes[k, 0, 0]))
        ax.add_patch(Ellipse(tip[k], 2 * scale * radii[k, 0], 2 * scale * radii[k, 1], angle=ang,
                             fill=False, color="C0"))
    ax.set_aspect("equal")
    ax.autoscale_view()
    return ax


def ellipsoid_surface(model: Model, q: ArrayLike, frame: str | int, scale: float = 1.0, part: str | Sequence[int] = "translation",
                      resolution: int = 24) -> NDArray[np.float64]:
    """(X, Y, Z) grids of the manipulability ellipsoid's surface (scaled by ``scale``) centred at
    ``frame``'s origin: what :func:`plot_manipulability_ellipsoid` draws."""
    radii, axes = manipulability_ellipsoid(model, np.asarray(q, dtype=float), frame, part=part)
    if radii.shape != (3,):
        raise ValueError(f"part: a 3-D ellipsoid needs 3 task rows, got {radii.shape[0]}")
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, resolution), np.linspace(0, np.pi, resolution // 2 + 1))
    sphere = np.stack([np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v)])       # (3, ...)
    pts = np.einsum("ij,j...->i...", axes * (scale * radii), sphere)
    return pts + frame_pose(model, np.asarray(q, dtype=float), frame)[:3, 3, None, None]


def plot_manipulability_ellipsoid(model: Model, q: ArrayLike, frame: str | int, ax: Axes3D | None = None, scale: float = 0.2,
                                  part: str | Sequence[int] = "translation", links: Sequence[str | int] | None = None,
                                  resolution: int = 24) -> Axes3D:
    """Draw the 3-D manipulability ellipsoid of ``frame`` at configuration ``q`` (the image of
    the unit ball of joint speeds, :func:`manipulability_ellipsoid`, ``part`` "translation"
    or "rotation"), centred at the frame's origin, with the arm through the frames ``links``
    (default ``"link0"``, ``"link1"``, ... when they exist).  ``scale`` multiplies the radii.
    Needs matplotlib; returns the (3-D) axes."""
    import matplotlib.pyplot as plt
    q = np.asarray(q, dtype=float)
    if ax is None:
        ax = plt.figure().add_subplot(projection="3d")
    if links is None:
        links = []
        while f"link{len(links)}" in model.frame_names:
            links.append(f"link{len(links)}")
    ax.plot_surface(*ellipsoid_surface(model, q, frame, scale, part, resolution), color="C0", alpha=0.3,
                    linewidth=0)
    if links:
        arm = np.array([frame_pose(model, q, f)[:3, 3] for f in links])
        ax.plot(*arm.T, "-o", color="0.3", lw=2, ms=3)
    ax.set_box_aspect((1, 1, 1))
    return ax
