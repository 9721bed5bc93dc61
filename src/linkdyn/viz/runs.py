"""Recorded runs as the drawing functions read them: a :class:`~linkdyn.recording.Recording`
(segments, one per model, and events) or a :class:`~linkdyn.sim.Trajectory` with its model."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..recording import Trajectory
from ..recording import Recording, SavedModel

from typing import TYPE_CHECKING

if TYPE_CHECKING:


    from ..model.model import Model
    from ..recording import Trajectory
    from ..recording import Recording


@dataclass
class SegmentData:
    """One segment's samples as arrays; fields that were not recorded are NaN."""
    model: object
    t: np.ndarray            # (K,)
    q: np.ndarray            # (K, nq)
    v: np.ndarray            # (K, nv)
    kinetic: np.ndarray      # (K,)
    potential: np.ndarray    # (K,)
    loop_error: np.ndarray   # (K,)
    loop_forces: np.ndarray  # (K, nloops, 6)
    unit_names: tuple = ()   # contacts "point/plane" and limits "joint.lower", ... (linkdyn.contact)
    unit_force: np.ndarray = None   # (K, nunits, 3): normal, tangent 1, tangent 2
    unit_gap: np.ndarray = None     # (K, nunits)
    unit_point: np.ndarray = None   # (K, nunits, 3) world contact points
    # the geom contacts (``Segment.geom_contacts``), ragged: sample k's are rows geom_offset[k]:geom_offset[k + 1]
    geom_offset: np.ndarray = None  # (K + 1,)
    geom_force: np.ndarray = None   # (total, 3) world force of geom 1 on geom 2
    geom_point: np.ndarray = None   # (total, 3) world points
    geom_pairs: tuple = ()          # the pairs "geom1/geom2" that touched
    geom_normal_force: np.ndarray = None    # (K, npairs) summed normal force per pair
    geom_friction: np.ndarray = None        # (K, npairs) |summed friction force| per pair


def _field(values, n, shape, what):
    """``values`` (a list or array of n samples) as an array (n, *shape); NaN if none recorded."""
    if values is None or len(values) == 0:
        return np.full((n,) + shape, np.nan)
    a = np.asarray(values, dtype=float)
    if a.size != n * int(np.prod(shape, dtype=int)):
        raise ValueError(f"{what}: expected {n} samples of shape {shape}, got an array of shape {a.shape}")
    return a.reshape((n,) + shape)


def segment_data(seg) -> SegmentData:
    m = seg.model
    t = np.asarray(seg.t, dtype=float).reshape(-1)
    n = len(t)
    names = tuple(getattr(seg, "unit_names", ()) or ())
    k = len(names)
    geom = {}
    if getattr(seg, "geom_names", None) and hasattr(seg, "geom_wrench"):
        a = seg.arrays()
        f, nrm, off = a["geom_force"], a["geom_normal"], a["geom_offset"]
        pairs, fn = seg.geom_normal_force()
        tang = f - np.einsum("ij,ij->i", f, nrm)[:, None] * nrm
        ft = np.zeros((n, len(pairs), 3))
        if len(pairs):
            idx = {p: c for c, p in enumerate(pairs)}
            which = [idx[f"{seg.geom_names[i]}/{seg.geom_names[j]}"] for i, j in a["geom_pair"].tolist()]
            np.add.at(ft, (np.repeat(np.arange(n), np.diff(off)), np.asarray(which, dtype=np.int64)), tang)
        geom = {"geom_offset": off, "geom_force": f, "geom_point": a["geom_point"], "geom_pairs": tuple(pairs),
                "geom_normal_force": fn, "geom_friction": np.linalg.norm(ft, axis=-1)}
    return SegmentData(m, t, _field(seg.q, n, (m.nq,), "q"), _field(seg.v, n, (m.nv,), "v"),
                       _field(seg.kinetic, n, (), "kinetic"), _field(seg.potential, n, (), "potential"),
                       _field(seg.loop_error, n, (), "loop_error"),
                       _field(seg.loop_forces, n, (m.nloops, 6), "loop_forces"), names,
                       _field(getattr(seg, "unit_force", None), n, (k, 3), "unit_force"),
                       _field(getattr(seg, "unit_gap", None), n, (k,), "unit_gap"),
                       _field(getattr(seg, "unit_point", None), n, (k, 3), "unit_point"), **geom)


def _with_model(rec, model):
    """A recording read back from a file (``Recording.load``) keeps only the names and sizes of
    its models (:class:`~linkdyn.recording.SavedModel`); its segments whose joints, sizes and loops
    are ``model``'s get ``model`` back (a shallow copy of the recording: the file's arrays are
    shared).  Others, and every segment without ``model``, are left as they are."""
    import copy
    import dataclasses
    if model is None or not any(isinstance(s.model, SavedModel) for s in rec.segments):
        return rec

    def fits(sm):
        return (tuple(sm.joint_names) == tuple(model.joint_names) and sm.nq == model.nq and sm.nv == model.nv
                and tuple(sm.loop_names) == tuple(lp.name for lp in model.loops))
    out = copy.copy(rec)
    out.segments = [dataclasses.replace(s, model=model) if isinstance(s.model, SavedModel) and fits(s.model) else s
                    for s in rec.segments]
    return out


def need_models(segs, model=None) -> None:
    """Raise a clear error when a segment of a run read back from a file has no model to draw
    with (its :class:`~linkdyn.recording.SavedModel` has names and sizes, no kinematics)."""
    for k, s in enumerate(segs):
        sm = s.model
        if isinstance(sm, SavedModel):
            why = ("no model= was given" if model is None else
                   f"model {model.name!r} (nq={model.nq}, nv={model.nv}, {len(model.joint_names)} joints, "
                   f"{model.nloops} loops) is not the one it ran")
            raise ValueError(f"segment {k} of the run was read from a file and holds the names and sizes of its model "
                             f"{sm.name!r} (nq={sm.nq}, nv={sm.nv}, {len(sm.joint_names)} joints, {sm.nloops} loops), "
                             f"not the model itself, and {why}: pass model= the model it was simulated with")


def as_recording(run: Recording | Trajectory, model: Model | None = None, loop_forces: bool = True) -> Recording:
    """``run`` as a :class:`~linkdyn.recording.Recording`: a Recording is returned as it is;
    a :class:`~linkdyn.sim.Trajectory` (from :func:`linkdyn.sim.simulate`) with its ``model``
    becomes a one-segment recording.  A Trajectory holds no loop forces: with ``loop_forces``
    they are computed for a closed chain from the recorded (q, v, tau) by
    :func:`linkdyn.loops.constraint_forces`, otherwise they are NaN (not recorded)."""
    if isinstance(run, Recording):
        return _with_model(run, model)
    if isinstance(run, tuple) and len(run) == 2 and model is None:
        a, b = run
        run, model = (a, b) if isinstance(a, Trajectory) else (b, a)
    if not isinstance(run, Trajectory):
        raise TypeError(f"expected a linkdyn Recording or a Trajectory (with model=...), got {type(run).__name__}")
    if model is None:
        raise TypeError("a Trajectory does not know its model: pass model=... (the model it was simulated with)")
    t = np.asarray(run.t, dtype=float)
    Q, V = np.asarray(run.q, dtype=float), np.asarray(run.v, dtype=float)
    if Q.shape != (len(t), model.nq) or V.shape != (len(t), model.nv):
        raise ValueError(f"the trajectory's q {Q.shape} / v {V.shape} do not fit model {model.name!r} "
                         f"(nq={model.nq}, nv={model.nv}) over {len(t)} samples")
    rec = Recording()
    seg = rec.start_segment(model)
    K = len(t)
    tau = np.zeros((K, model.nv)) if run.tau is None else np.asarray(run.tau, dtype=float)
    err = np.zeros(K) if run.loop_error is None else np.asarray(run.loop_error, dtype=float)
    forces = np.full((K, model.nloops, 6), np.nan)
    if model.nloops and loop_forces:
        from ..loops.dynamics import constraint_forces
        for k in range(K):
            forces[k] = constraint_forces(model, Q[k], V[k], tau[k])[1]
    seg.t, seg.q, seg.v, seg.tau = list(t), list(Q), list(V), list(tau)
    seg.kinetic, seg.potential = list(np.asarray(run.kinetic, dtype=float)), list(np.asarray(run.potential, float))
    seg.loop_error, seg.loop_forces = list(err), list(forces)
    return rec


def run_data(run, model=None, loop_forces: bool = False):
    """(list of :class:`SegmentData` with samples, events) of a Recording or Trajectory (whose
    loop forces are computed only with ``loop_forces``, see :func:`as_recording`)."""
    rec = as_recording(run, model, loop_forces=loop_forces)
    segs = [segment_data(s) for s in rec.segments if len(s.t)]
    if not segs:
        raise ValueError("the run has no samples")
    return segs, list(rec.events)


def words(name: str) -> str:
    """A model's name for something in words: "l_rope_end" -> "left rope end" (the l_ and r_ of the
    figures' sides spelled out, underscores as spaces)."""
    return " ".join({"l": "left", "r": "right"}.get(w, w) for w in str(name).split("_") if w)


#: a limit unit's suffix (``linkdyn.contact.rows``) in words
_STOPS = {"upper": "upper stop", "lower": "lower stop", "swing": "swing stop", "twist.upper": "twist stop (upper)",
          "twist.lower": "twist stop (lower)"}


def unit_words(name: str) -> str:
    """A contact or limit unit in words: "l_thigh/seat" -> "left thigh on seat",
    "r_shoulder.twist.upper" -> "right shoulder twist stop (upper)"."""
    if "/" in name:
        a, b = name.split("/", 1)
        return f"{words(a)} on {words(b)}"
    joint, _, stop = name.partition(".")
    return f"{words(joint)} {_STOPS.get(stop, stop)}" if stop else words(name)


def event_label(e) -> str:
    """What an event did, in a few words, each thing named once: "right grip lets go of bar",
    "left grip takes hold of bar", "impact: left thigh on seat" (the names the recording keeps
    are in ``e.name``)."""
    if e.kind == "impact":
        names = e.name.split(", ")
        return "impact: " + ", ".join(unit_words(n) for n in names[:3]) + (f" (+{len(names) - 3})" if len(names) > 3
                                                                          else "")
    a, sep, b = e.name.partition("__")
    if sep:
        s = f"{words(a)} {'lets go of' if e.kind == 'cut' else 'takes hold of' if e.kind == 'connect' else e.kind} " \
            f"{words(b)}"
    else:
        s = f"{words(e.name)} " + {"cut": "released", "connect": "connected"}.get(e.kind, e.kind)
    note = getattr(e, "note", "")
    return f"{s} ({note})" if note and note not in (e.name, f"{a} - {b}") else s


def impulse_size(e):
    """|p| of a structure change's linear impulse, or an impact's total normal impulse."""
    if e.impulse is None:
        return np.nan
    p = np.asarray(e.impulse, dtype=float)
    if e.kind == "impact" and p.ndim == 2:
        return float(p[:, 0].sum())
    return float(np.linalg.norm(p.reshape(-1)[:3]))
