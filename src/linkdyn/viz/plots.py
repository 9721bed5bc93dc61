"""A recorded run on one page: joint angles, energies, loop errors, loop forces, event impulses.

matplotlib is an optional dependency: ``pip install 'linkdyn[plot]'``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..model import joints as J
from .animate import _figure, require_matplotlib
from .runs import event_label, impulse_size, run_data, unit_words

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import os
    from collections.abc import Sequence


    from ..model.model import Model
    from ..recording import Trajectory
    from ..recording import Recording

#: how many joints plot_run shows when none are named
MAX_DEFAULT_JOINTS = 10

_DEG = 180.0 / np.pi


def _quat_angle(x):
    """Rotation angle (rad, in [0, pi]) of unit quaternions [x, y, z, w] (..., 4)."""
    return 2.0 * np.arctan2(np.linalg.norm(x[..., :3], axis=-1), np.abs(x[..., 3]))


def _swing_twist(joint, x):
    """(swing, twist) (K,) of a ball joint's coordinates x (K, 4 or 3): the swing-twist
    decomposition (Baerlocher and Boulic 2001) of its rotation seen in its limit frames (the
    cone's axis, or z), the angles its limits bound."""
    from ..contact.swing_twist import limit_rotation, swing_twist_angles
    out = np.full((len(x), 2), np.nan)
    for k, xk in enumerate(x):
        if np.isfinite(xk).all():
            out[k] = swing_twist_angles(limit_rotation(joint, xk))
    return out[:, 0], out[:, 1]


def _coordinates(kind, name, x, joint=None):
    """[(label, values, angular)] to plot for the coordinates ``x`` (K, nq_joint) of one joint."""
    if kind == J.REVOLUTE:
        return [(name, x[:, 0], True)]
    if kind == J.PRISMATIC:
        return [(name, x[:, 0], False)]
    if kind in (J.SPHERICAL, J.SPHERICAL_ZYX) and joint is not None:
        sw, tw = _swing_twist(joint, x)
        return [(f"{name} swing", sw, True), (f"{name} twist", tw, True)]
    if kind == J.SPHERICAL:
        return [(f"{name} (rotation angle)", _quat_angle(x), True)]
    if kind == J.SPHERICAL_ZYX:
        return [(f"{name}[{a}]", x[:, k], True) for k, a in enumerate("zyx")]
    if kind == J.UNIVERSAL:
        return [(f"{name}[{k}]", x[:, k], True) for k in range(2)]
    if kind == J.CYLINDRICAL:
        return [(f"{name}[displacement]", x[:, 0], False), (f"{name}[angle]", x[:, 1], True)]
    if kind == J.PLANAR:
        return [(f"{name}[x]", x[:, 0], False), (f"{name}[y]", x[:, 1], False), (f"{name}[theta]", x[:, 2], True)]
    if kind == J.FREE:
        return ([(f"{name}[{a}]", x[:, k], False) for k, a in enumerate("xyz")]
                + [(f"{name} (rotation angle)", _quat_angle(x[:, 3:7]), True)])
    return []


def _default_joints(segs):
    """Movable joints of the run's models in order of appearance, without free joints and the
    cut joints of virtual links, at most :data:`MAX_DEFAULT_JOINTS`."""
    out = []
    for s in segs:
        m = s.model
        for i in range(1, m.nbody):
            name = m._joint_names[i]
            if m.jnt_nq[i] == 0 or m.jnt_type[i] == J.FREE or m.is_virtual[i] or name in out:
                continue
            out.append(name)
    return out[:MAX_DEFAULT_JOINTS]


def _joint_curves(segs, joints):
    """{label: (values over the whole run, angular)}, NaN where a segment lacks the joint."""
    curves = {}
    known = set()
    for s in segs:
        known.update(s.model.joint_names)
    missing = [j for j in joints if j not in known]
    if missing:
        raise KeyError(f"joints: no segment of this run has joint(s) {missing}; joints: {sorted(known)}")
    for j in joints:
        parts = None
        pieces = []
        for s in segs:
            m = s.model
            if j in m._joint_index:
                i = m.joint_id(j)
                joint = m.joints[i] if hasattr(m, "joints") else None
                cs = _coordinates(int(m.jnt_type[i]), j, s.q[:, m.q_slice(j)], joint)
                parts = [(lab, ang) for lab, _, ang in cs]
                pieces.append([v for _, v, _ in cs])
            else:
                pieces.append(None)
        for c, (lab, ang) in enumerate(parts or []):
            vals = [np.full(len(s.t), np.nan) if p is None else p[c] for s, p in zip(segs, pieces)]
            curves[lab] = (np.concatenate(vals), ang)
    return curves


#: impacts labelled in the events panel (the largest by impulse)
MAX_LABELS = 8


def _event_lines(ax, events):
    for e in events:
        ax.axvline(e.t, color="0.5", lw=0.8, ls=":", zorder=0)


def _series(segs, t, fn):
    """Concatenate fn(segment) (K,) over segments; NaN where a segment has nothing."""
    return np.concatenate([fn(s) if len(s.unit_names) else np.full(len(s.t), np.nan) for s in segs])


def _unit_panels(axs, segs, t):
    """Contact forces per body, limit forces, centres of pressure."""
    names = list(dict.fromkeys(n for s in segs for n in s.unit_names))
    contacts = [n for n in names if "/" in n]
    limits = [n for n in names if "/" not in n]
    # group contacts by the body that carries the point ("l_sole_toe_in/ground" -> "l_foot")
    body_of = {}
    for s_ in segs:
        for c in s_.model.contacts:
            body_of.setdefault(c.name, s_.model.body_names[c.body])

    def group(n):
        pt = n.split("/")[0]
        return body_of.get(pt, pt)
    groups = list(dict.fromkeys(group(n) for n in contacts))

    def pick(s, sel, col):
        idx = [k for k, n in enumerate(s.unit_names) if sel(n)]
        return s.unit_force[:, idx, col] if idx else np.zeros((len(s.t), 0))
    ax = axs[0]
    drawn = 0
    for c, g in enumerate(groups):
        fn = _series(segs, t, lambda s, g=g: pick(s, lambda n: "/" in n and group(n) == g, 0).sum(axis=1))
        ft = _series(segs, t, lambda s, g=g: np.hypot(pick(s, lambda n: "/" in n and group(n) == g, 1).sum(axis=1),
                                                      pick(s, lambda n: "/" in n and group(n) == g, 2).sum(axis=1)))
        if np.nanmax(np.abs(fn), initial=0.0) > 0:
            ax.plot(t, fn, lw=1.2, color=f"C{c % 10}", label=f"{g} normal")
            ax.plot(t, ft, lw=0.9, ls="--", color=f"C{c % 10}", label=f"{g} friction")
            drawn += 1
    # the contacts of collision geometry: the normal force summed over each pair's contacts, and
    # the size of their summed friction (Segment.geom_normal_force)
    pairs = list(dict.fromkeys(p for s_ in segs for p in (s_.geom_pairs or ())))

    def pair_series(s, p, which):
        if p not in (s.geom_pairs or ()):
            return np.zeros(len(s.t)) if s.geom_offset is not None else np.full(len(s.t), np.nan)
        return getattr(s, which)[:, s.geom_pairs.index(p)]
    for p in pairs:
        fn = np.concatenate([pair_series(s, p, "geom_normal_force") for s in segs])
        ft = np.concatenate([pair_series(s, p, "geom_friction") for s in segs])
        if np.nanmax(np.abs(fn), initial=0.0) > 0:
            c = len(groups) + pairs.index(p)
            ax.plot(t, fn, lw=1.2, color=f"C{c % 10}", label=f"{unit_words(p)} normal")
            ax.plot(t, ft, lw=0.9, ls="--", color=f"C{c % 10}", label=f"{unit_words(p)} friction")
            drawn += 1
    ax.set_ylabel("contact force [N]\n(normal; friction --)")
    if drawn:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False, ncol=1 + (drawn > 6))
    else:
        ax.text(0.5, 0.5, "no contact" if contacts or any(s_.geom_offset is not None for s_ in segs) else
                "no contact points", transform=ax.transAxes, ha="center", va="center", color="0.4")
    ax = axs[1]
    active = []
    for n in limits:
        y = _series(segs, t, lambda s, n=n: s.unit_force[:, s.unit_names.index(n), 0] if n in s.unit_names
                    else np.full(len(s.t), np.nan))
        if np.nanmax(np.abs(y), initial=0.0) > 0:
            active.append((np.nanmax(np.abs(y)), n, y))
    for c, (_, n, y) in enumerate(sorted(active, reverse=True)[:10]):
        ax.plot(t, y, lw=1.0, color=f"C{c % 10}", label=n)
    ax.set_ylabel("limit torque [N m]\nor force [N]")
    if active:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    else:
        ax.text(0.5, 0.5, "no limit reached" if limits else "no joint limits", transform=ax.transAxes,
                ha="center", va="center", color="0.4")
    ax = axs[2]
    drawn = 0
    for c, g in enumerate(groups):
        def cop(s, g=g, k=0):
            idx = [j for j, n in enumerate(s.unit_names) if "/" in n and group(n) == g]
            if len(idx) < 2:
                return np.full(len(s.t), np.nan)
            fn = s.unit_force[:, idx, 0]
            tot = fn.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                x = (fn * s.unit_point[:, idx, k]).sum(axis=1) / tot
            return np.where(tot > 1e-9, x, np.nan)
        cx = _series(segs, t, lambda s, g=g: cop(s, g, 0))
        cy = _series(segs, t, lambda s, g=g: cop(s, g, 1))
        if np.isfinite(cx).any():
            ax.plot(t, cx, lw=1.1, color=f"C{c % 10}", label=f"{g} x")
            ax.plot(t, cy, lw=1.1, ls="--", color=f"C{c % 10}", label=f"{g} y")
            drawn += 1
    ax.set_ylabel("centre of pressure\n[m, world x; y --]")
    if drawn:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    else:
        ax.text(0.5, 0.5, "no body on two or more contacts", transform=ax.transAxes, ha="center", va="center",
                color="0.4")


def plot_run(run: Recording | Trajectory, path: str | os.PathLike[str], joints: Sequence[str] | None = None, *,
             model: Model | None = None, title: str | None = None, dpi: int = 100,
             size: tuple[float, float] = (10.0, 12.0)) -> Path:
    """Write a multi-panel PNG of a recorded run to ``path`` (or any format matplotlib writes,
    by the extension) and return the path.  Panels, all over time with the events as dotted
    vertical lines:

    1. the joints ``joints`` (names; default up to :data:`MAX_DEFAULT_JOINTS` movable joints,
       without free joints and loops' cut joints): angles in degrees, lengths (prismatic, planar
       and free positions) in metres on a right-hand axis; a ball joint its swing and twist
       (the swing-twist decomposition in its limit frames: the angles its limits bound; from a
       saved recording, without the joints, the rotation angle of its quaternion, so labelled),
       a free joint its position and rotation angle;
    2. kinetic, potential and total energy;
    3. the largest loop error (log axis);
    4. each loop's constraint force magnitude |f| (``loop_forces[..., :3]``), by loop name;
    5. the events' linear impulses |p| (``impulse[:3]``; an impact's total normal impulse) as
       stems, labelled;
    6. with contacts and limits (``linkdyn.contact``): the normal and friction force on each
       group of contact points (e.g. one foot's corners), signed, and on each pair of collision
       geoms that touched (the normal forces of its contacts summed, and the size of their summed
       friction: ``Segment.geom_normal_force``);
    7. the force or torque of each limit that was reached;
    8. the centre of pressure of each group of two or more contact points (world x and y).

    ``run``: a :class:`~linkdyn.recording.Recording`, or a :class:`~linkdyn.sim.Trajectory`
    with ``model=`` (its loop forces are then computed from the recorded states).
    """
    path = Path(path)
    segs, events = run_data(run, model, loop_forces=True)
    require_matplotlib()
    t = np.concatenate([s.t for s in segs])
    names = _default_joints(segs) if joints is None else ([joints] if isinstance(joints, str) else list(joints))
    curves = _joint_curves(segs, names)

    units = any(len(s.unit_names) or s.geom_offset is not None for s in segs)
    fig = _figure((size[0], size[1] * (1.45 if units else 1.0)), dpi)
    ratios = [3, 2, 1.5, 2, 1.5] + ([2, 1.5, 2] if units else [])
    axs = fig.subplots(len(ratios), 1, sharex=True, gridspec_kw={"height_ratios": ratios})
    fig.subplots_adjust(left=0.1, right=0.74, top=0.95, bottom=0.05, hspace=0.12)
    if title is None:
        title = " / ".join(dict.fromkeys(s.model.name for s in segs))
        title += f": {len(segs)} segment{'s' if len(segs) > 1 else ''}, {len(events)} event{'s' * (len(events) != 1)}"
    fig.suptitle(title, fontsize=11)

    # 1. joints
    ax = axs[0]
    lin_ax = None
    for c, (lab, (y, angular)) in enumerate(curves.items()):
        if angular:
            ax.plot(t, y * _DEG, lw=1.2, label=lab, color=f"C{c % 10}")
        else:
            lin_ax = lin_ax or ax.twinx()
            lin_ax.plot(t, y, lw=1.2, ls="--", label=f"{lab} [m]", color=f"C{c % 10}")
    rot = any("(rotation angle)" in lab for lab in curves)
    st = any(lab.endswith(" swing") for lab in curves)
    ax.set_ylabel("joint angle [deg]" + ("\n(ball joints: rotation angle\nof the quaternion, 0..180)" if rot
                                         else "\n(ball joints: swing\nand twist)" if st else ""))
    handles, labels = ax.get_legend_handles_labels()
    if lin_ax is not None:
        lin_ax.set_ylabel("joint position [m]")
        h2, l2 = lin_ax.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    if handles:
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.13 if lin_ax else 1.01, 1.0),
                  fontsize=7, frameon=False)
    else:
        ax.text(0.5, 0.5, "no joints to show", transform=ax.transAxes, ha="center", va="center", color="0.4")

    # 2. energies
    ax = axs[1]
    K = np.concatenate([s.kinetic for s in segs])
    V = np.concatenate([s.potential for s in segs])
    ax.plot(t, K, lw=1.2, label="kinetic")
    ax.plot(t, V, lw=1.2, label="potential")
    ax.plot(t, K + V, lw=1.6, color="k", label="total")
    ax.set_ylabel("energy [J]")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)

    # 3. loop error
    ax = axs[2]
    err = np.concatenate([s.loop_error for s in segs])
    nloops = sum(s.model.nloops for s in segs)
    pos = np.where(err > 0, err, np.nan)
    if np.isfinite(pos).any():
        ax.semilogy(t, pos, lw=1.0, color="C3")
    else:
        ax.text(0.5, 0.5, "no loops closed" if nloops == 0 else "loop error not recorded (or exactly zero)",
                transform=ax.transAxes, ha="center", va="center", color="0.4")
    ax.set_ylabel("largest loop\nerror")

    # 4. loop forces, one line per loop name
    ax = axs[3]
    loop_names = list(dict.fromkeys(lp.name for s in segs for lp in s.model.loops))
    drawn = 0
    for c, name in enumerate(loop_names):
        vals = []
        for s in segs:
            idx = [lp.index for lp in s.model.loops if lp.name == name]
            vals.append(np.linalg.norm(s.loop_forces[:, idx[0], :3], axis=-1) if idx else np.full(len(s.t), np.nan))
        y = np.concatenate(vals)
        if np.isfinite(y).any():
            ax.plot(t, y, lw=1.2, label=name, color=f"C{c % 10}")
            drawn += 1
    if drawn:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    else:
        ax.text(0.5, 0.5, "no loops closed" if not loop_names else "loop forces not recorded",
                transform=ax.transAxes, ha="center", va="center", color="0.4")
    ax.set_ylabel("loop force |f| [N]")

    # 5. event impulses (every one drawn; labels and dotted lines for the structure changes and
    # the largest impacts: a limb chattering on its stop makes hundreds)
    impacts = sorted((e for e in events if e.kind == "impact"), key=lambda e: -impulse_size(e))
    labelled = {id(e) for e in events if e.kind != "impact"} | {id(e) for e in impacts[:MAX_LABELS]}
    ax = axs[4]
    if events:
        te = np.array([e.t for e in events])
        pe = np.array([impulse_size(e) for e in events])
        ax.stem(te, pe, basefmt="k-")
        # one label per cluster of events closer than 4 % of the run (the first structure change
        # in it, else its largest impact, and how many more), left of the stem in the run's right
        # half so that it stays inside the panel, rows alternating so that neighbours do not meet
        span = max(float(t[-1] - t[0]), 1e-9)
        order = [k for k in np.argsort(te, kind="stable") if id(events[k]) in labelled]
        clusters = []
        for k in order:
            if clusters and te[k] - te[clusters[-1][0]] < 0.04 * span:
                clusters[-1].append(k)
            else:
                clusters.append([k])
        for row, ks in enumerate(clusters):
            main = next((k for k in ks if events[k].kind != "impact"), max(ks, key=lambda k: np.nan_to_num(pe[k])))
            text = event_label(events[main]) + (f" (+{len(ks) - 1} more)" if len(ks) > 1 else "")
            right = te[main] - t[0] > 0.5 * span
            y = np.nanmax(np.nan_to_num(pe[ks]))
            ax.annotate(text, (te[main], y), xytext=(-3 if right else 3, 3 + 9 * (row % 2)), textcoords="offset points",
                        fontsize=6, ha="right" if right else "left", annotation_clip=False)
        if len(labelled) < len(events):
            ax.text(0.99, 0.95, f"labels: the structure changes and the {MAX_LABELS} largest impacts of "
                    f"{sum(e.kind == 'impact' for e in events)}", transform=ax.transAxes, ha="right", va="top",
                    fontsize=6, color="0.4")
        top = np.nanmax(pe) if np.isfinite(pe).any() else 0.0
        ax.set_ylim(0.0, 1.35 * top if top > 0 else 1.0)
    else:
        ax.text(0.5, 0.5, "no events", transform=ax.transAxes, ha="center", va="center", color="0.4")
    ax.set_ylabel("event impulse\n|p| [N s]")
    if units:
        _unit_panels(axs[5:], segs, t)
    axs[-1].set_xlabel("time [s]")
    ax.set_xlim(t[0], t[-1] if t[-1] > t[0] else t[0] + 1.0)

    for ax in axs:
        _event_lines(ax, [e for e in events if id(e) in labelled])
        ax.grid(True, lw=0.3, alpha=0.5)
        ax.yaxis.set_label_coords(-0.08, 0.5)
    fig.savefig(path, dpi=dpi)
    return path
