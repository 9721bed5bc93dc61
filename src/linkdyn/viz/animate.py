"""Animations of recorded runs: a 3D stick figure over time, written as .html, .gif or .mp4.

    rec = ...                                   # a linkdyn Recording (segments, events)
    linkdyn.viz.animate(rec, "run.html", props=[linkdyn.viz.bar(height=2.6)])
    traj = linkdyn.sim.simulate(model, q, v, 2.0)
    linkdyn.viz.animate(traj, "swing.gif", model=model)

Frames are taken at a fixed step of simulated time (``every``, default ``1 / fps``: real
time) from the recorded samples, which need not be uniform (events insert samples): each frame
shows the recorded sample nearest to its time (at an event, where two samples share a time, the
one after it: the new structure).  The axes are fixed, of equal scale and hold the whole
motion; a text shows the time, another the current structure (which loops are closed), and each
event flashes its text ("right grip lets go of bar") for ``flash`` seconds of playback.

matplotlib is an optional dependency: ``pip install 'linkdyn[plot]'``.
"""
from __future__ import annotations

import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .props import Tether, static_geometry
from .runs import event_label, run_data
from .skeleton import Skeleton

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import os
    from collections.abc import Sequence

    from numpy.typing import ArrayLike

    from ..model.model import Model
    from ..recording import Trajectory
    from ..recording import Recording

#: named views: (elevation, azimuth) in degrees, matplotlib's view_init
VIEWS = {"iso": (20.0, -60.0), "side": (0.0, -90.0), "front": (0.0, 0.0), "top": (90.0, -90.0),
         "side_iso": (15.0, -75.0)}
_SIDE_COLORS = {"l": "tab:blue", "r": "tab:red", "": "0.15"}
_FORMATS = (".html", ".gif", ".mp4")


def require_matplotlib():
    """Import matplotlib (Agg canvas, no display needed) or say how to install it."""
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
    except ImportError as exc:
        raise ImportError("linkdyn.viz needs matplotlib: pip install 'linkdyn[plot]'") from exc
    import matplotlib
    return matplotlib


def _figure(size, dpi):
    """A figure on an Agg canvas whose ``draw_idle`` does nothing: when an animation is saved, each
    frame is drawn once, by the writer (FuncAnimation would draw it a second time, for a screen)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    class _Canvas(FigureCanvasAgg):
        def draw_idle(self, *args, **kwargs):
            pass

    fig = Figure(figsize=size, dpi=dpi)
    _Canvas(fig)
    return fig


def _quantize(im):
    """A frame (PIL image) reduced to 64 colours (fast octree, no dithering): line drawings keep
    their look and shrink three- to fourfold."""
    from PIL import Image
    return im.convert("RGB").quantize(64, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)


def _writers():
    """matplotlib's Pillow (GIF) and HTML writers with each frame reduced to 64 colours as it is
    grabbed (if a matplotlib version keeps its frames elsewhere, the writers fall back to the
    plain behaviour)."""
    import base64
    from io import BytesIO

    from matplotlib.animation import HTMLWriter, PillowWriter
    from PIL import Image

    class GifWriter(PillowWriter):
        def grab_frame(self, **savefig_kwargs):
            super().grab_frame(**savefig_kwargs)
            frames = getattr(self, "_frames", None)
            if frames:
                frames[-1] = _quantize(frames[-1])

    class CompactHTMLWriter(HTMLWriter):
        def grab_frame(self, **savefig_kwargs):
            if not (self.embed_frames and isinstance(getattr(self, "_saved_frames", None), list)):
                return super().grab_frame(**savefig_kwargs)
            buf = BytesIO()
            self.fig.savefig(buf, **{**savefig_kwargs, "format": "rgba", "dpi": self.dpi})
            im = Image.frombuffer("RGBA", self.frame_size, buf.getbuffer(), "raw", "RGBA", 0, 1)
            out = BytesIO()
            _quantize(im).save(out, format="png")
            self._saved_frames.append(base64.encodebytes(out.getvalue()).decode("ascii"))

    return GifWriter, CompactHTMLWriter


# ---------------------------------------------------------------------------------------
# which samples become frames
def frame_times(t0: float, t1: float, every: float) -> np.ndarray:
    """Times of the frames from ``t0`` to ``t1`` (inclusive when it falls on the grid) every
    ``every`` seconds: ``floor((t1 - t0) / every) + 1`` of them."""
    if not (every > 0 and np.isfinite(every)):
        raise ValueError(f"every: expected a positive time step, got {every!r}")
    n = int(np.floor((t1 - t0) / every + 1e-9)) + 1
    return t0 + every * np.arange(max(n, 1))


def pick_samples(t: ArrayLike, times: ArrayLike) -> np.ndarray:
    """Index of the sample of ``t`` (non-decreasing, possibly with repeated times at events)
    nearest to each of ``times``; of samples at the same time, the last one."""
    t = np.asarray(t, dtype=float)
    times = np.asarray(times, dtype=float)
    i = np.clip(np.searchsorted(t, times, side="right") - 1, 0, len(t) - 1)
    j = np.minimum(i + 1, len(t) - 1)
    j = np.searchsorted(t, t[j], side="right") - 1          # the last of equal times
    return np.where(np.abs(t[j] - times) < np.abs(times - t[i]), j, i)


@dataclass
class AnimationInfo:
    """What :func:`animate` wrote: ``path``, the number of ``frames``, their simulated ``times``,
    the recorded sample each shows (``segment``, ``sample``), ``seconds`` of rendering, ``bytes``."""
    path: Path
    frames: int
    times: np.ndarray
    segment: np.ndarray
    sample: np.ndarray
    seconds: float
    bytes: int


# ---------------------------------------------------------------------------------------
def _view(view):
    if isinstance(view, str):
        try:
            return VIEWS[view]
        except KeyError:
            raise ValueError(f"view: expected one of {sorted(VIEWS)} or (elev, azim), got {view!r}") from None
    try:
        elev, azim = (float(x) for x in view)
    except (TypeError, ValueError):
        raise ValueError(f"view: expected one of {sorted(VIEWS)} or (elev, azim), got {view!r}") from None
    return elev, azim


def _format(path):
    ext = Path(path).suffix.lower()
    if ext not in _FORMATS:
        raise ValueError(f"animate: cannot write {Path(path).name!r}: the format is chosen by the extension, one "
                         f"of {', '.join(_FORMATS)} (.html needs nothing else)")
    if ext == ".mp4" and shutil.which("ffmpeg") is None:
        raise RuntimeError("animate: writing .mp4 needs ffmpeg, which is not on the PATH; write a .gif or an .html "
                           "(self-contained) instead, or install ffmpeg")
    return ext


def _frames(segs, times):
    """Per frame: the segment and sample shown, and what to draw there."""
    t_all = np.concatenate([s.t for s in segs])
    if np.any(np.diff(t_all) < 0):
        raise ValueError("the recorded sample times decrease somewhere; expected a run in time order")
    starts = np.cumsum([0] + [len(s.t) for s in segs])
    g = pick_samples(t_all, times)
    seg_of = np.searchsorted(starts, g, side="right") - 1
    local = g - starts[seg_of]
    return seg_of, local


def _place(segs, seg_of, local, tethers):
    """Draw data per frame: (segments, joint points, closure points, tether lines), by segment."""
    skel, data = {}, [None] * len(seg_of)
    for k in np.unique(seg_of):
        s = segs[k]
        sk = skel.setdefault(k, Skeleton(s.model))
        rows = np.flatnonzero(seg_of == k)
        Q = s.q[local[rows]]
        if not np.isfinite(Q).all():
            raise ValueError(f"segment {k}: the recorded q has non-finite values in the frames to draw")
        kin = sk.kinematics(Q)
        lines = sk.segments(kin=kin)
        joints = sk.joint_points(kin=kin)
        closures = sk.closure_points(kin=kin)
        teth = []
        for tt in tethers:
            if tt.frame in s.model.frame_names or tt.frame in s.model._joint_frame_index:
                end = kin.pose(tt.frame)[:, :3, 3]
                teth.append(np.stack([np.broadcast_to(tt.anchor, end.shape), end], axis=1))
            else:
                teth.append(None)
        for r, row in enumerate(rows):
            data[row] = (lines[r], joints[r], closures[r], [None if x is None else x[r] for x in teth])
    return skel, data


def _bounds(data, props, pad=0.08, min_fraction=0.25):
    pts = [np.concatenate([d[0].reshape(-1, 3), d[1].reshape(-1, 3), d[2].reshape(-1, 3)]
                          + [x for x in d[3] if x is not None]) for d in data]
    pts += [p.segments.reshape(-1, 3) for p in props if not isinstance(p, Tether)]
    P = np.concatenate(pts)
    lo, hi = P.min(axis=0), P.max(axis=0)
    span = hi - lo
    big = max(span.max(), 1e-3)
    span = np.maximum(span, min_fraction * big) * (1.0 + 2.0 * pad)
    mid = 0.5 * (lo + hi)
    return mid - 0.5 * span, mid + 0.5 * span


def _nice(x):
    """A round step near x: 1, 2, 2.5 or 5 times a power of ten."""
    e = 10.0 ** np.floor(np.log10(x))
    return e * min((1.0, 2.0, 2.5, 5.0, 10.0), key=lambda m: abs(np.log(m * e / x)))


def _floor(lo, hi):
    """(segments, spacing): grid lines on the bottom face of the box [lo, hi], at round positions."""
    spacing = _nice(max(hi[0] - lo[0], hi[1] - lo[1]) / 6.0)
    z = lo[2]
    xs = np.arange(np.ceil(lo[0] / spacing), np.floor(hi[0] / spacing) + 1) * spacing
    ys = np.arange(np.ceil(lo[1] / spacing), np.floor(hi[1] / spacing) + 1) * spacing
    segs = [[[x, lo[1], z], [x, hi[1], z]] for x in xs] + [[[lo[0], y, z], [hi[0], y, z]] for y in ys]
    return np.array(segs, dtype=float).reshape(-1, 2, 3), spacing


def _triad(lo, hi, spacing):
    """Unit-direction lines x, y, z at the world origin, ``spacing`` long, if it is in the box."""
    if np.any(lo > 0) or np.any(hi < 0):
        return None
    return np.array([[[0, 0, 0], [spacing, 0, 0]], [[0, 0, 0], [0, spacing, 0]], [[0, 0, 0], [0, 0, spacing]]], float)


def animate(run: Recording | Trajectory, path: str | os.PathLike[str], fps: float = 30, props: Sequence = (),
            view: str | tuple[float, float] = "iso", title: str | None = None, every: float | None = None,
            *, model: Model | None = None, size: tuple[float, float] = (5.0, 5.0), dpi: int = 80, flash: float = 0.8, axes: bool = False,
            show_joints: bool = True, show_closures: bool = True) -> AnimationInfo:
    """Write an animation of a recorded run to ``path``; the format is the extension's:

    * ``.html``: self-contained page with matplotlib's JavaScript player (``to_jshtml``),
      needs nothing else: the default to use;
    * ``.gif``: written with Pillow (which comes with matplotlib);
    * ``.mp4``: written with ffmpeg, only if ``ffmpeg`` is on the PATH (a clear error if not).

    ``run``: a :class:`~linkdyn.recording.Recording`, or a :class:`~linkdyn.sim.Trajectory`
    from :func:`linkdyn.sim.simulate` with ``model=`` the model it ran.  ``fps``: frames per
    second of playback; ``every``: simulated seconds between frames (default ``1 / fps``, real
    time; smaller is slow motion).  ``props``: scene props, anything :func:`static_geometry`
    takes (``bar``, ``ground``, ``ropes``, ``tether``, raw segments).  ``view``: a name of
    :data:`VIEWS` or (elevation, azimuth) in degrees.  ``title``: default the first model's name.
    ``size`` (inches) and ``dpi`` set the picture size; ``flash``: seconds of playback an
    event's text stays up.  ``axes``: draw matplotlib's 3D axes with ticks (about three times
    slower to render); by default a light floor grid at the bottom of the scene (unless a prop
    is labelled "ground") and an x/y/z triad at the world origin give the scale and the
    directions.  Returns an :class:`AnimationInfo`.
    """
    clock = time.perf_counter()
    path = Path(path)
    ext = _format(path)
    if not (fps > 0 and np.isfinite(fps)):
        raise ValueError(f"fps: expected a positive number, got {fps!r}")
    elev, azim = _view(view)
    props = static_geometry(*props) if isinstance(props, (list, tuple)) else static_geometry(props)
    tethers = [p for p in props if isinstance(p, Tether)]
    segs, events = run_data(run, model)
    require_matplotlib()
    import matplotlib
    from matplotlib import animation
    from mpl_toolkits.mplot3d import art3d     # (importing mplot3d registers the "3d" projection)

    every = 1.0 / fps if every is None else float(every)
    times = frame_times(segs[0].t[0], segs[-1].t[-1], every)
    seg_of, local = _frames(segs, times)
    skel, data = _place(segs, seg_of, local, tethers)
    lo, hi = _bounds(data, props)

    fig = _figure(size, dpi)
    ax = fig.add_axes((0.0, 0.0, 1.0, 0.9), projection="3d")
    ax.view_init(elev=elev, azim=azim)
    if axes:
        ax.set_box_aspect(hi - lo)
        ax.set_xlabel("x [m]", labelpad=-8), ax.set_ylabel("y [m]", labelpad=-8)
        ax.set_zlabel("z [m]", labelpad=-8)
        ax.tick_params(labelsize=6, pad=-2)
    else:       # no matplotlib axes (they take most of the drawing time): a floor grid and a triad
        ax.set_box_aspect(hi - lo, zoom=1.25)
        ax.set_axis_off()
        grid, spacing = _floor(lo, hi)
        if not any(getattr(p, "label", None) == "ground" for p in props):
            ax.add_collection3d(art3d.Line3DCollection(grid, colors="0.85", linewidths=0.6), autolim=False)
        tri = _triad(lo, hi, spacing)
        if tri is not None:
            ax.add_collection3d(art3d.Line3DCollection(tri, colors=["tab:red", "tab:green", "tab:blue"],
                                                       linewidths=1.2), autolim=False)
    for p in props:
        if not isinstance(p, Tether):
            ax.add_collection3d(art3d.Line3DCollection(p.segments, colors=p.color, linewidths=p.linewidth,
                                                       alpha=p.alpha, linestyles=p.linestyle), autolim=False)
    teth_cols = [art3d.Line3DCollection(np.zeros((0, 2, 3)), colors=tt.color, linewidths=tt.linewidth,
                                        alpha=tt.alpha, linestyles=tt.linestyle) for tt in tethers]
    for c in teth_cols:
        ax.add_collection3d(c, autolim=False)
    bones = art3d.Line3DCollection(np.zeros((0, 2, 3)), linewidths=2.5, capstyle="round")
    ax.add_collection3d(bones, autolim=False)
    (joints,) = ax.plot([], [], [], "o", ms=3.0, color="0.15", zorder=5)
    (closures,) = ax.plot([], [], [], "o", ms=8.0, mfc="none", mec="tab:green", mew=1.8, zorder=6)
    joints.set_visible(show_joints)
    ax.set_xlim(lo[0], hi[0]), ax.set_ylim(lo[1], hi[1]), ax.set_zlim(lo[2], hi[2])
    closures.set_visible(show_closures)
    fs = 8 if size[0] >= 4 else 6
    fig.text(0.5, 0.975, title if title is not None else segs[0].model.name, ha="center", va="top",
             fontsize=fs + 2, weight="bold")
    structure = fig.text(0.5, 0.925, "", ha="center", va="top", fontsize=fs)
    clock_text = fig.text(0.02, 0.02, "", ha="left", va="bottom", fontsize=fs + 1, family="monospace")
    if not axes:
        fig.text(0.98, 0.02, f"grid {spacing:g} m" + ("; x y z at the origin" if tri is not None else ""),
                 ha="right", va="bottom", fontsize=fs - 1, color="0.4")
    flash_text = fig.text(0.5, 0.86, "", ha="center", va="top", fontsize=fs + 2, color="tab:red", weight="bold")

    ev_t = np.array([e.t for e in events], dtype=float)
    ev_txt = []
    for e in events:
        s = event_label(e)
        j = float(np.linalg.norm(np.asarray(e.impulse, dtype=float)[:3])) if e.impulse is not None else 0.0
        ev_txt.append(s + (f"\n|impulse| {j:.3g} N s" if j > 0 else ""))
    hold = flash * every * fps                         # simulated seconds an event's text stays up
    state = {"seg": None}

    def structure_text(k):
        m = segs[k].model
        names = [lp.name for lp in m.loops]
        closed = ", ".join(names) if names else "none (open tree)"
        part = f"segment {k + 1}/{len(segs)}: " if len(segs) > 1 else ""
        return f"{part}{m.name}, closed loops: {closed}"

    def update(i):
        k = int(seg_of[i])
        lines, jp, cp, tl = data[i]
        if state["seg"] != k:
            state["seg"] = k
            bones.set_color([_SIDE_COLORS[s] for s in skel[k].sides])
            structure.set_text(structure_text(k))
        bones.set_segments(lines)
        joints.set_data_3d(jp[:, 0], jp[:, 1], jp[:, 2])
        closures.set_data_3d(cp[:, 0], cp[:, 1], cp[:, 2])
        for c, x in zip(teth_cols, tl):
            c.set_segments([] if x is None else [x])
        T = times[i]
        clock_text.set_text(f"t = {T:7.3f} s")
        on = [ev_txt[n] for n in np.flatnonzero((ev_t <= T + 1e-12) & (T < ev_t + hold))]
        flash_text.set_text("\n".join(on))
        return ()

    anim = animation.FuncAnimation(fig, update, frames=len(times), interval=1000.0 / fps, blit=False, repeat=True)
    rc = {"savefig.dpi": dpi, "savefig.bbox": "standard", "animation.embed_limit": 1000.0}
    with matplotlib.rc_context(rc):
        if ext == ".html":
            # what Animation.to_jshtml does (an HTMLWriter into a file, read back), with frames of
            # 64 colours: a third of the size
            html_writer = _writers()[1](fps=fps, embed_frames=True, default_mode="loop")
            html_writer.frame_format = "png"
            with tempfile.TemporaryDirectory() as tmp:
                tmp_html = Path(tmp, "anim.html")
                anim.save(str(tmp_html), writer=html_writer, dpi=dpi)
                html = tmp_html.read_text()
            html = _inline_icons(html)
            page_title = title if title is not None else segs[0].model.name
            path.write_text("<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n"
                            f"<title>{_escape(page_title)}</title>\n</head>\n<body>\n{html}\n</body>\n</html>\n",
                            encoding="utf-8")
        elif ext == ".gif":
            anim.save(str(path), writer=_writers()[0](fps=fps), dpi=dpi)
        else:
            anim.save(str(path), writer=animation.FFMpegWriter(fps=fps, codec="h264",
                                                               extra_args=["-pix_fmt", "yuv420p", "-vf",
                                                                           "scale=trunc(iw/2)*2:trunc(ih/2)*2"]), dpi=dpi)
    return AnimationInfo(path, len(times), times, seg_of, local, time.perf_counter() - clock, path.stat().st_size)


#: the player's button icons as characters, in place of the Font Awesome style sheet that
#: matplotlib's player loads from a CDN (so that the page needs no network)
_ICONS_CSS = """<style>
.anim-buttons .fa { font-style: normal; font-family: sans-serif; }
.fa-minus:before { content: "\\2212"; }
.fa-plus:before { content: "+"; }
.fa-fast-backward:before { content: "\\23EE\\FE0E"; }
.fa-fast-forward:before { content: "\\23ED\\FE0E"; }
.fa-step-backward:before { content: "\\25C1"; }
.fa-step-forward:before { content: "\\25B7"; }
.fa-play:before { content: "\\25B6\\FE0E"; }
.fa-play.fa-flip-horizontal:before { content: "\\25C0\\FE0E"; }
.fa-pause:before { content: "\\275A\\275A"; }
</style>"""


def _inline_icons(html: str) -> str:
    return re.sub(r'<link rel="stylesheet"\s+href="[^"]*font-awesome[^"]*"\s*/?>', lambda m: _ICONS_CSS, html, count=1)


def _escape(s: str) -> str:
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
