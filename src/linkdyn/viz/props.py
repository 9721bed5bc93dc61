"""Scene props drawn around a model: a bar, ropes, a ground grid, any line segments.

A prop is a set of line segments in world coordinates with a style (:class:`Prop`), or a line
from a fixed world point to a frame of the model that moves with it (:class:`Tether`, e.g. the
rope of a swing to its seat).  :func:`static_geometry` turns what a caller gives (props, arrays
of segments, pairs of points, lists of those) into a list of props.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from typing import TYPE_CHECKING

if TYPE_CHECKING:

    from numpy.typing import ArrayLike



@dataclass
class Prop:
    """Line segments ``segments`` (n, 2, 3) [start, end] in world coordinates, drawn with
    matplotlib's ``color``, ``linewidth``, ``alpha`` and ``linestyle``; ``label`` names it."""
    segments: np.ndarray
    color: object = "0.35"
    linewidth: float = 2.0
    alpha: float = 1.0
    linestyle: str = "-"
    label: str | None = None

    def __post_init__(self):
        self.segments = _as_segments(self.segments, self.label or "prop")


@dataclass
class Tether:
    """A line from the world point ``anchor`` to the frame ``frame`` of the model being drawn
    (while the current model has that frame): a rope to a moving seat, a spring to a hand."""
    anchor: np.ndarray
    frame: str
    color: object = "0.45"
    linewidth: float = 1.2
    alpha: float = 1.0
    linestyle: str = "-"
    label: str | None = None

    def __post_init__(self):
        self.anchor = np.asarray(self.anchor, dtype=float)
        if self.anchor.shape != (3,) or not np.isfinite(self.anchor).all():
            raise ValueError(f"Tether.anchor: expected a finite 3-vector, got {self.anchor!r}")


def _as_segments(x, what) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim == 2 and a.shape == (2, 3):
        a = a[None]
    if a.ndim != 3 or a.shape[1:] != (2, 3):
        raise ValueError(f"{what}: expected line segments of shape (n, 2, 3) (pairs of 3D points), got shape "
                         f"{a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{what}: the segments must be finite")
    return a


def static_geometry(*items, **style) -> list:
    """A list of props from ``items``: :class:`Prop` and :class:`Tether` objects, arrays of line
    segments (n, 2, 3) or single segments (2, 3) (drawn with ``style``: the :class:`Prop`
    fields ``color``, ``linewidth``, ...), or lists / tuples of any of these.

        static_geometry(bar(height=2.5), ground(), [[0, -1, 3], [0, -1, 1]])
    """
    out = []
    for it in items:
        if it is None:
            continue
        if isinstance(it, (Prop, Tether)):
            out.append(it)
        elif _is_numeric(it):
            out.append(Prop(it, **style))
        elif isinstance(it, (list, tuple)):
            out.extend(static_geometry(*it, **style))
        else:
            raise TypeError(f"static_geometry: expected props or line segments (n, 2, 3), got {type(it).__name__}")
    return out


def _is_numeric(x) -> bool:
    try:
        a = np.asarray(x, dtype=float)
    except (ValueError, TypeError):
        return False
    return a.ndim in (2, 3) and a.shape[-1] == 3


def bar(height: float, x: float = 0.0, y: float = 0.0, length: float = 2.4, axis: str = "y", uprights: bool = True,
        **style) -> Prop:
    """A horizontal bar through the point (x, y, ``height``) along world ``axis`` ("x" or "y"),
    ``length`` long, on two uprights down to z = 0 (``uprights=False``: the bar alone)."""
    c = np.array([x, y, height], dtype=float)
    u = {"x": np.array([1.0, 0.0, 0.0]), "y": np.array([0.0, 1.0, 0.0])}.get(axis)
    if u is None:
        raise ValueError(f"bar: axis must be 'x' or 'y', got {axis!r}")
    a, b = c - 0.5 * length * u, c + 0.5 * length * u
    segs = [[a, b]]
    if uprights:
        segs += [[a, a * [1, 1, 0]], [b, b * [1, 1, 0]]]
    style = {"color": "0.2", "linewidth": 3.0, "label": "bar", **style}
    return Prop(np.array(segs), **style)


def ropes(anchors: ArrayLike, ends: ArrayLike, **style) -> Prop:
    """Straight ropes from each of the world points ``anchors`` (n, 3) to ``ends`` (n, 3) (for
    ropes that follow a moving seat, use :class:`Tether`)."""
    a = np.asarray(anchors, dtype=float).reshape(-1, 3)
    b = np.asarray(ends, dtype=float).reshape(-1, 3)
    if a.shape != b.shape:
        raise ValueError(f"ropes: {len(a)} anchors but {len(b)} ends")
    style = {"color": "0.45", "linewidth": 1.2, "label": "ropes", **style}
    return Prop(np.stack([a, b], axis=1), **style)


def ground(z: float = 0.0, size: float = 3.0, spacing: float = 0.5, center: ArrayLike = (0.0, 0.0), **style) -> Prop:
    """A square grid of lines on the plane at height ``z``, ``size`` wide, ``spacing`` apart."""
    if not (size > 0 and spacing > 0):
        raise ValueError(f"ground: size and spacing must be positive, got {size}, {spacing}")
    cx, cy = center
    h = 0.5 * size
    ticks = np.arange(-h, h + 1e-9, spacing)
    segs = [[[cx + s, cy - h, z], [cx + s, cy + h, z]] for s in ticks]
    segs += [[[cx - h, cy + s, z], [cx + h, cy + s, z]] for s in ticks]
    style = {"color": "0.8", "linewidth": 0.6, "label": "ground", **style}
    return Prop(np.array(segs), **style)


def tether(anchor: ArrayLike, frame: str, **style) -> Tether:
    """A line from the world point ``anchor`` to the model frame ``frame`` (see :class:`Tether`)."""
    return Tether(anchor, frame, **style)
