"""A capture as linkdyn's 3-D page (:func:`linkdyn.viz.view`): the figure playing the filtered
motion with its ground forces as arrows, and the capture itself as a translucent ghost."""
from __future__ import annotations

import numpy as np

from ..kinematics import forward_kinematics
from ..recording import Recording
from ..viz.viewer import Viewer, view
from .capture import Capture, InverseDynamics


def _points(model, q):
    """World positions (K, npoints, 3) of the model's contact points."""
    kin = forward_kinematics(model, q)
    out = np.empty((len(q), len(model.contacts), 3))
    for i, c in enumerate(model.contacts):
        out[:, i] = kin.p[:, c.body] + np.einsum("tij,j->ti", kin.R[:, c.body], c.position)
    return out


def capture_recording(model, t, q, v, forces) -> Recording:
    """A one-segment :class:`~linkdyn.recording.Recording` of a motion of a capture figure with
    the world forces (K, npoints, 3) at its contact points, as contact units
    ``"point/ground"`` on the model's ground plane (normal, then the plane's x and y), so that
    the viewer draws them as arrows and the plots read them."""
    planes = [p for p in getattr(model, "planes", ()) if p.body == 0]
    if not planes:
        raise ValueError("the capture figure has no ground plane")
    pl = max(planes, key=lambda p: p.R[2, 2])
    rec = Recording()
    seg = rec.start_segment(model)
    K = len(t)
    P = _points(model, q)
    fl = np.einsum("ji,tnj->tni", pl.R, forces)                  # R^T f: the plane's frame
    seg.t, seg.q, seg.v = list(np.asarray(t, float)), list(q), list(v)
    nan = np.full(K, np.nan)
    seg.kinetic, seg.potential, seg.loop_error = list(nan), list(nan), list(nan)
    seg.loop_forces = list(np.zeros((K, 0, 6)))
    seg.unit_names = [f"{c.name}/{pl.name}" for c in model.contacts]
    seg.unit_force = list(np.stack([fl[..., 2], fl[..., 0], fl[..., 1]], axis=-1))
    seg.unit_point = list(P)
    seg.unit_gap = list(np.einsum("tnj,j->tn", P - pl.p, pl.R[:, 2]))
    return rec


def view_capture(capture: Capture, ids: InverseDynamics | None = None, filtered: Capture | None = None, *,
                 ghost: bool = True, title: str | None = None, fps: float = 30.0, **kw) -> Viewer:
    """The 3-D page of a capture (:func:`linkdyn.viz.view`; ``.save("page.html")``).

    With ``filtered`` (from :func:`linkdyn.mocap.dynamics_filter`): the figure plays the
    filtered motion, every simulation step of it, with the filter's ground forces as arrows,
    and (``ghost``) the capture as a translucent grey figure beside it, so that where the
    physics departs from the capture shows.  Without: the figure plays the capture with the
    ground reactions of ``ids`` (from :func:`linkdyn.mocap.inverse_dynamics`) as arrows (no
    ghost).  Other keywords go to :func:`linkdyn.viz.view` (e.g. ``every``, ``camera``)."""
    m = capture.model
    rep = getattr(filtered, "filter", None) if filtered is not None else None
    if rep is not None:
        # the filtered figure's own model: its soles (the forces' points) are the filter's, FILTER_SOLES
        rec = capture_recording(filtered.model, rep.t, rep.q, rep.v, rep.forces)
        g = (m, capture.t, capture.q) if ghost else None
        label = "the capture (ghost)"
        name = "dynamics filter"
    else:
        if ids is None:
            raise ValueError("view_capture: pass ids= (inverse_dynamics) or filtered= (dynamics_filter)")
        rec = capture_recording(m, capture.t, capture.q, capture.v, ids.forces)
        g, label, name = None, "", "capture"
    import os
    base = os.path.basename(capture.skeleton.path) or "capture"
    return view(rec, props=(), title=title if title is not None else f"{base}: {name}", fps=fps, ghost=g,
                ghost_label=label or "ghost", **kw)
