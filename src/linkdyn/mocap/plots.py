"""A capture's inverse dynamics on one page: ground reactions, centres of pressure, joint torques
and powers, and the root residual (matplotlib: ``pip install 'linkdyn[plot]'``).

:func:`plot_capture` writes a PNG (or any format matplotlib writes) and returns the matplotlib
``Figure``: each curve is a ``Line2D`` labelled as in the legend, so a script (or a test) can
read back what was drawn (``fig.axes[k].get_lines()``).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..viz.animate import _figure, require_matplotlib

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure
from .capture import Capture, InverseDynamics

#: the joints whose torques and powers :func:`plot_capture` shows by default: hips, knees, ankles
#: (the BVH joints that move the thighs, shanks and feet), left and right
DEFAULT_SEGMENTS = ("thigh", "shank", "foot")
_SIDE = {"l": "left", "r": "right"}
_COLORS = {"l": "#2f6fdb", "r": "#d9412b"}


def default_joints(capture: Capture) -> list[str]:
    """The capture figure's joints that move the thighs, shanks and feet (hip, knee and ankle;
    matched by name as :func:`linkdyn.mocap.figure.classify` does), left then right."""
    from .figure import classify, side_of
    sk = capture.skeleton
    out = []
    for s in ("l", "r"):
        for seg in DEFAULT_SEGMENTS:
            for j, n in enumerate(sk.names):
                c, w = classify(n, sk.parents[j] < 0)
                if c == seg and w == 1.0 and side_of(n) == s:
                    out.append(n)
                    break
    return out


def joint_series(capture: Capture, ids: InverseDynamics, joints: list[str]) -> dict[str, tuple]:
    """{joint: (|tau| (T,) N m, power (T,) W)}: a ball joint's torque is the size of its 3-vector
    (body frame), its power the sum tau . omega over its rows (``ids.power``)."""
    m = capture.model
    out = {}
    for n in joints:
        sl = m.v_slice(n)
        out[n] = (np.linalg.norm(ids.tau[:, sl], axis=1), ids.power[:, sl].sum(axis=1))
    return out


def plot_capture(capture: Capture, ids: InverseDynamics, path: str | os.PathLike[str], *,
                 joints: list[str] | None = None, filtered: Capture | None = None, title: str | None = None,
                 t_range: tuple[float, float] | None = None, dpi: int = 100,
                 size: tuple[float, float] = (10.0, 13.0)) -> Figure:
    """Write the inverse dynamics of ``capture`` (``ids`` from
    :func:`linkdyn.mocap.inverse_dynamics`) to ``path`` as one page of panels over time, the
    stance phases of each foot shaded, and return the matplotlib ``Figure``:

    1. each foot's ground reaction, vertical and horizontal (|f_xy|), in body weights, and their
       vertical sum;
    2. each foot's centre of pressure, world x and y (m), where the foot pushes;
    3. the torque size |tau| (N m) of ``joints`` (default :func:`default_joints`: hips, knees,
       ankles);
    4. their powers tau . omega (W; positive: the joint does work on the body);
    5. the root residual: the force (% of body weight) and moment (N m) that no ground reaction
       could give (OpenSim's RRA residuals); with ``filtered`` (the output of
       :func:`linkdyn.mocap.dynamics_filter`), its root's distance from the capture (cm) on a
       right-hand axis.

    ``t_range``: (t0, t1) seconds to show (default the whole clip)."""
    require_matplotlib()
    path = Path(path)
    t = capture.t
    T = len(t)
    if ids.grf.shape[0] != T:
        raise ValueError(f"ids: {ids.grf.shape[0]} frames, the capture has {T}")
    mg = capture.mass * float(np.linalg.norm(capture.model.gravity))
    joints = default_joints(capture) if joints is None else list(joints)
    series = joint_series(capture, ids, joints)
    sel = np.ones(T, bool) if t_range is None else (t >= t_range[0]) & (t <= t_range[1])
    ts = t[sel]
    fig = _figure(size, dpi)
    axs = fig.subplots(5, 1, sharex=True, gridspec_kw={"height_ratios": [2.2, 1.6, 2, 2, 1.6]})
    feet = capture.feet.names

    def shade(ax):
        for k, s in enumerate(feet):
            on = ids.phases[sel, k]
            if not on.any():
                continue
            edges = np.flatnonzero(np.diff(np.r_[0, on.astype(int), 0]))
            for a, b in zip(edges[::2], edges[1::2]):
                ax.axvspan(ts[a], ts[b - 1], ymin=0.0 + 0.5 * k, ymax=0.5 + 0.5 * k, color=_COLORS.get(s, "0.5"),
                           alpha=0.07, lw=0)

    ax = axs[0]
    for k, s in enumerate(feet):
        g = ids.grf[sel, k]
        ax.plot(ts, g[:, 2] / mg, color=_COLORS.get(s), lw=1.2, label=f"{_SIDE.get(s, s)} foot vertical")
        ax.plot(ts, np.hypot(g[:, 0], g[:, 1]) / mg, color=_COLORS.get(s), lw=0.9, ls="--",
                label=f"{_SIDE.get(s, s)} foot horizontal")
    ax.plot(ts, ids.grf[sel, :, 2].sum(axis=1) / mg, color="k", lw=0.8, alpha=0.6, label="vertical, both feet")
    ax.axhline(1.0, color="0.6", lw=0.6, ls=":")
    ax.set_ylabel("ground reaction\n(body weights)")
    ax.set_title(title if title is not None else f"{os.path.basename(capture.skeleton.path) or 'capture'}: "
                 f"{capture.mass:g} kg, {T} frames at {1 / capture.dt:.4g} Hz", fontsize=10)

    ax = axs[1]
    for k, s in enumerate(feet):
        c = ids.cop[sel, k]
        ax.plot(ts, c[:, 0], color=_COLORS.get(s), lw=1.1, label=f"{_SIDE.get(s, s)} foot CoP x")
        ax.plot(ts, c[:, 1], color=_COLORS.get(s), lw=0.9, ls="--", label=f"{_SIDE.get(s, s)} foot CoP y")
    ax.set_ylabel("centre of\npressure (m)")

    cmap = {"thigh": "-", "shank": "--", "foot": ":"}
    from .figure import classify, side_of
    for n in joints:
        j = capture.skeleton.names.index(n) if n in capture.skeleton.names else -1
        seg = classify(n, False)[0] if j >= 0 else ""
        s = side_of(n) or ""
        style = dict(color=_COLORS.get(s, None), ls=cmap.get(seg, "-"), lw=1.0)
        axs[2].plot(ts, series[n][0][sel], label=f"{n} |tau|", **style)
        axs[3].plot(ts, series[n][1][sel], label=f"{n} power", **style)
    axs[2].set_ylabel("joint torque\n|tau| (N m)")
    axs[3].set_ylabel("joint power (W)")
    axs[3].axhline(0.0, color="0.6", lw=0.6)

    ax = axs[4]
    r = ids.residual[sel]
    ax.plot(ts, 100 * np.linalg.norm(r[:, :3], axis=1) / mg, color="k", lw=1.0, label="residual force (% BW)")
    ax.set_ylabel("root residual\nforce (% BW)")
    ax2 = ax.twinx()
    ax2.plot(ts, np.linalg.norm(r[:, 3:], axis=1), color="0.45", lw=0.8, ls="--", label="residual moment (N m)")
    ax2.set_ylabel("moment (N m)")
    if filtered is not None and getattr(filtered, "filter", None) is not None:
        dev = filtered.filter.root_deviation
        if len(dev) == T:
            ax2.plot(ts, 100 * dev[sel], color="#2ca02c", lw=1.0, label="filtered root off the capture (cm)")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper right", ncol=2)
    for a in axs[:4]:
        a.legend(fontsize=7, loc="upper right", ncol=3)
        shade(a)
        a.grid(alpha=0.25)
    shade(axs[4])
    axs[4].grid(alpha=0.25)
    axs[-1].set_xlabel("t (s)")
    fig.tight_layout()
    fig.savefig(path)
    return fig
