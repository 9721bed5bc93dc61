"""What a simulation records, across structure changes (and the plain :class:`Trajectory` of
:func:`linkdyn.sim.simulate`).

Run data only: it imports nothing else of linkdyn, so that the simulation (which writes runs) and
the pictures (which draw them) both read it without depending on each other.

A run is a sequence of *segments*, one per model: a structure change (a connection, a cut)
ends one segment and starts the next with the new model, whose q and v may be of other sizes.
Per sample: time, q, v, the kinetic and potential energy, the largest loop error and each
loop's constraint force.  Per event: what changed, when, the impulse and the energy it took.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import os
    from pathlib import Path

    from numpy.typing import NDArray

    from ..model.model import Model


@dataclass
class Event:
    """A structure change or an impact at time ``t``: ``kind`` is "connect", "cut" or "impact",
    ``name`` the loop (or joint, or for an impact the units that struck) it concerns,
    ``impulse`` (6,) the spatial impulse [linear; angular] the new joint took (real link on
    virtual link, virtual link's frame; zeros for a cut), or for an impact (k, 3): every
    impulse it applied, [normal, tangent 1, tangent 2] per unit of ``units`` (every contact
    and limit at its boundary, not only the ones that struck), ``dv`` the jump
    of the generalized velocity (new model's), ``kinetic_before`` / ``kinetic_after`` the
    kinetic energy around it (their difference is the impulse's work, never positive).  For an
    impact on a closed chain, ``loop_impulse`` (nloops, 6): the impulse each loop took to stay
    closed, [linear; angular] in the loop's rows (``linkdyn.loops.loop_jacobian``: the virtual
    link's frame); for a redundant loop one valid split."""
    t: float
    kind: str
    name: str
    impulse: np.ndarray
    dv: np.ndarray
    kinetic_before: float
    kinetic_after: float
    note: str = ""
    units: list = field(default_factory=list)
    loop_impulse: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))

    @property
    def energy_loss(self) -> float:
        return self.kinetic_before - self.kinetic_after


@dataclass
class Segment:
    """Samples under one model: ``t`` (K,), ``q`` (K, nq), ``v`` (K, nv), ``kinetic``,
    ``potential``, ``work`` (K, 3) the run's energy ledger so far (``Simulation.work``: the joints (actuators less friction),
    limits and contacts, structure changes), ``loop_error`` (K,), ``loop_forces`` (K, nloops, 6) in ``model.loops`` order;
    for the unilateral units ``unit_names`` (contacts "point/plane", limits "joint.lower", ...),
    ``unit_force`` (K, nunits, 3): [normal, tangent 1, tangent 2] per unit (zero when not in
    contact; the tangents are the plane's x and y), ``unit_gap`` (K, nunits) and
    ``unit_point`` (K, nunits, 3) the world contact points (zero for limits)."""
    model: object
    t: list = field(default_factory=list)
    q: list = field(default_factory=list)
    v: list = field(default_factory=list)
    tau: list = field(default_factory=list)
    kinetic: list = field(default_factory=list)
    potential: list = field(default_factory=list)
    work: list = field(default_factory=list)
    loop_error: list = field(default_factory=list)
    loop_forces: list = field(default_factory=list)
    unit_names: list = field(default_factory=list)
    unit_force: list = field(default_factory=list)
    unit_gap: list = field(default_factory=list)
    unit_point: list = field(default_factory=list)

    def arrays(self) -> dict:
        """The samples as arrays; a field that was not recorded comes back as NaN."""
        m = self.model
        n = len(self.t)

        def field(values, shape):
            if len(values) != n:
                return np.full((n,) + shape, np.nan)
            return np.asarray(values, dtype=float).reshape((n,) + shape)
        return {"t": np.asarray(self.t, dtype=float), "q": field(self.q, (m.nq,)), "v": field(self.v, (m.nv,)),
                "tau": field(self.tau, (m.nv,)), "kinetic": field(self.kinetic, ()),
                "potential": field(self.potential, ()), "work": field(self.work, (3,)), "loop_error": field(self.loop_error, ()),
                "loop_forces": field(self.loop_forces, (m.nloops, 6)),
                "unit_force": field(self.unit_force, (len(self.unit_names), 3)),
                "unit_gap": field(self.unit_gap, (len(self.unit_names),)),
                "unit_point": field(self.unit_point, (len(self.unit_names), 3))}


MAX_RECORDING_BYTES = 64 * 2**20


class RecordingError(ValueError):
    """A recording file that cannot be read: names the file and what is wrong with it."""


#: A save's temporary file older than this (seconds) is an orphan of a killed save, not one in progress.
ORPHAN_AGE = 60.0


def _remove_orphans(folder) -> None:
    """Remove the temporary files (``.<name>.<8 random>.tmp``) that saves killed before their
    rename (kill -9, power loss) left in ``folder``; one younger than :data:`ORPHAN_AGE` may be
    another process's save in progress and is kept."""
    import os
    import re
    import time
    pattern = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for e in entries:
        try:
            if pattern.match(e.name) and e.is_file(follow_symlinks=False) and \
                    now - e.stat(follow_symlinks=False).st_mtime > ORPHAN_AGE:
                os.unlink(e.path)
        except OSError:
            pass


def atomic_savez(path, **arrays):
    """``np.savez_compressed`` to exactly ``path`` (``.npz`` added, with a warning, when it has
    no suffix), whole or not at all: a temporary file in the same folder, flushed to disk, then
    renamed over ``path``; an interrupt or a crash leaves the previous file as it was, and the
    orphan temporary file a killed save leaves is removed by the next save to that folder.
    Returns the path written."""
    import os
    import tempfile
    import warnings
    from pathlib import Path
    path = Path(path)
    if not path.suffix:
        path = path.with_suffix(".npz")
        warnings.warn(f"no file suffix given: writing {path}", stacklevel=3)
    _remove_orphans(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez_compressed(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


@dataclass(frozen=True)
class SavedModel:
    """What a saved recording keeps of a segment's model: its name, joint names, sizes and
    loop names (``Recording.load``)."""
    name: str
    joint_names: tuple
    nq: int
    nv: int
    loop_names: tuple
    #: (start, stop) of each joint's coordinates in q, in ``joint_names`` order (empty in files
    #: written before they were saved, and for geared models, whose q holds the leaders only)
    q_slices: tuple = ()
    #: a geared model's coupling (None: no gears): ``gears`` (the couplings, as saved:
    #: ["gear", follower, leader, ratio, offset] or ["coupling", [[joint, coef], ...], offset,
    #: dependent]), ``full_nq`` and ``full_q_slices`` (each joint's coordinates in the full q, in
    #: ``joint_names`` order) and the map q_full[k] = qoff[k] + sum_t qscale[k, t] q[qsrc[k, t]]
    #: (``linkdyn.model.gears``), which :meth:`expand` applies
    coupling: dict | None = None

    @property
    def nloops(self) -> int:
        return len(self.loop_names)

    @property
    def gears(self) -> tuple:
        return () if self.coupling is None else tuple(tuple(g) for g in self.coupling["gears"])

    def expand(self, q: NDArray[np.float64]) -> NDArray[np.float64]:
        """The full joint coordinates (..., full_nq) of recorded q (..., nq), followers included
        (``Model.expand``); q itself without gears."""
        q = np.asarray(q, dtype=float)
        if self.coupling is None:
            return q.copy()
        c = self.coupling
        src, scale = np.asarray(c["qsrc"], dtype=np.int64), np.asarray(c["qscale"], dtype=float)
        out = np.asarray(c["qoff"], dtype=float) + scale[:, 0] * q[..., src[:, 0]]
        for t in range(1, src.shape[1]):
            out = out + scale[:, t] * q[..., src[:, t]]
        return out

    def full_q_slice(self, name: str) -> slice:
        """The coordinates of joint ``name`` in :meth:`expand`'s full q (a follower's too)."""
        sl = self.q_slices if self.coupling is None else self.coupling["full_q_slices"]
        idx = {n: i for i, n in enumerate(self.joint_names)} if sl else {}
        if name not in idx:
            raise KeyError(f"the saved model {self.name!r} records no coordinates of a joint {name!r}")
        a, b = sl[idx[name]]
        return slice(a, b)

    @property
    def _joint_index(self) -> dict:
        """Joint name -> index, for the joints whose coordinates the file records."""
        return {n: i for i, n in enumerate(self.joint_names)} if self.q_slices else {}

    def q_slice(self, name: str) -> slice:
        """The coordinates of joint ``name`` in q, as ``Model.q_slice``."""
        if name not in self._joint_index:
            raise KeyError(f"the saved model {self.name!r} records no coordinates of a joint {name!r}")
        a, b = self.q_slices[self._joint_index[name]]
        return slice(a, b)


def _coupling_meta(m):
    """What a recording saves of a geared model's coupling (None without gears): enough to expand
    its reduced q into every joint's coordinates (:meth:`SavedModel.expand`)."""
    full, c = getattr(m, "_full", None), getattr(m, "_coupling", None)
    if full is None or c is None:
        return None
    gears = []
    for g in m.gears:
        if hasattr(g, "terms"):
            gears.append(["coupling", [[str(n), float(k)] for n, k in g.terms], float(g.offset), str(g.dependent)])
        else:
            gears.append(["gear", str(g.follower), str(g.leader), float(g.ratio), float(g.offset)])
    return {"gears": gears, "full_nq": int(full.nq),
            "full_q_slices": [[full.q_slice(j).start, full.q_slice(j).stop] for j in m.joint_names],
            "qoff": np.asarray(c.qoff, dtype=float).tolist(), "qscale": np.asarray(c.qscale, dtype=float).tolist(),
            "qsrc": np.asarray(c.qsrc, dtype=np.int64).tolist()}


def _check_coupling(path, k, sm):
    """A segment's saved coupling, checked against its sizes (None: no gears)."""
    c = sm.get("coupling")
    if c is None:
        return None
    bad = RecordingError(f"{path}: segment {k}'s coupling does not fit its {sm['nq']} coordinates and "
                         f"{len(sm['joint_names'])} joints")
    try:
        n = int(c["full_nq"])
        off, scale, src = (np.asarray(c[x], dtype=float) for x in ("qoff", "qscale", "qsrc"))
        sl = [(int(a), int(b)) for a, b in c["full_q_slices"]]
        gears = [list(g) for g in c["gears"]]
    except (KeyError, TypeError, ValueError):
        raise bad from None
    if (off.shape != (n,) or scale.ndim != 2 or scale.shape[0] != n or src.shape != scale.shape
            or not (np.isfinite(off).all() and np.isfinite(scale).all())
            or (src.size and (src.min() < 0 or src.max() >= sm["nq"] or (src != np.round(src)).any()))
            or len(sl) != len(sm["joint_names"]) or any(not 0 <= a <= b <= n for a, b in sl)):
        raise bad
    return {"gears": gears, "full_nq": n, "full_q_slices": tuple(sl), "qoff": off,
            "qscale": scale, "qsrc": src.astype(np.int64)}


#: the running extremes a simulation keeps at every step, and their values before the first step:
#: the largest limit violation (rad or m) and penetration (m), the smallest normal force (N), the
#: largest friction force over its cone's radius (|f_t| / (mu f_n); 1 on the rim), the most energy
#: the contacts and limits put in within one step (J; negative: they only took), the steps seen, and
#: those whose forces the scheme kept (time stepping: every one; the event scheme: none, its forces
#: are solved inside its pieces and recorded at the samples)
STEP_EXTREMES = {"limit_violation": 0.0, "penetration": 0.0, "min_normal_force": float("inf"),
                 "max_cone_ratio": 0.0, "max_step_contact_work": float("-inf"), "steps": 0, "force_steps": 0}


class Recording:
    """Everything a :class:`~linkdyn.sim.Simulation` recorded: ``segments`` (list of
    :class:`Segment`), ``events`` (list of :class:`Event`), and the whole run's time series
    ``t``, ``kinetic``, ``potential``, ``energy``, ``loop_error`` (one entry per sample)."""

    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self.events: list[Event] = []
        #: running extremes over *every step* (not only the recorded samples), kept by the
        #: simulation as it steps (:data:`STEP_EXTREMES`): the checks read them
        self.extremes: dict[str, float] = dict(STEP_EXTREMES)

    def start_segment(self, model: Model) -> Segment:
        seg = Segment(model)
        self.segments.append(seg)
        return seg

    def _cat(self, name):
        parts = [np.asarray(getattr(s, name), dtype=float) for s in self.segments if len(s.t)]
        return np.concatenate(parts) if parts else np.zeros(0)

    @property
    def t(self) -> np.ndarray:
        return self._cat("t")

    @property
    def kinetic(self) -> np.ndarray:
        return self._cat("kinetic")

    @property
    def potential(self) -> np.ndarray:
        return self._cat("potential")

    @property
    def energy(self) -> np.ndarray:
        return self.kinetic + self.potential

    @property
    def loop_error(self) -> np.ndarray:
        return self._cat("loop_error")

    def joint_series(self, joint: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(t, q) of one joint over the whole run (NaN where the joint does not exist)."""
        ts, qs = [], []
        width = None
        for s in self.segments:
            a = s.arrays()
            full = getattr(s.model, "_full", None)
            if isinstance(s.model, SavedModel) and s.model.coupling is not None:    # a loaded geared run
                x = s.model.expand(a["q"])[:, s.model.full_q_slice(joint)] if joint in s.model.joint_names else None
                width = x.shape[1] if x is not None else width
            elif full is not None:                  # a geared model: the joint's own coordinate, a follower's too
                x = s.model.expand(a["q"])[:, full.q_slice(joint)] if joint in full._joint_index else None
                width = x.shape[1] if x is not None else width
            elif joint in s.model._joint_index:
                x = a["q"][:, s.model.q_slice(joint)]
                width = x.shape[1]
            else:
                x = None
            ts.append(a["t"])
            qs.append(x)
        if width is None:
            raise KeyError(f"no segment of this run has a joint {joint!r}")
        qs = [np.full((len(t), width), np.nan) if x is None else x for t, x in zip(ts, qs)]
        return np.concatenate(ts), np.concatenate(qs)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """An ``.npz`` with each segment's arrays (``seg{k}_t``, ``seg{k}_q``, ...), the joint
        and loop names of each segment's model, and the events (JSON, with their impulses and
        velocity jumps); :meth:`load` reads it back.  The file is written whole or not at all
        (a temporary file in the same folder, flushed to disk, then renamed over ``path``), so
        an interrupted save leaves the previous file as it was.  ``path`` is used as given; a
        path without a suffix gets ``.npz`` (with a warning).  Returns the path written."""
        data = {}
        meta = {"format": "linkdyn-recording-1", "segments": [], "events": []}
        for k, s in enumerate(self.segments):
            for name, arr in s.arrays().items():
                data[f"seg{k}_{name}"] = arr
            m = s.model
            meta["segments"].append({"model": m.name, "joint_names": list(m.joint_names), "nq": m.nq, "nv": m.nv,
                                     "loops": [lp.name for lp in m.loops], "units": list(s.unit_names),
                                     "q_slices": [] if getattr(m, "_full", None) is not None else
                                     [[m.q_slice(j).start, m.q_slice(j).stop] for j in m.joint_names],
                                     "coupling": _coupling_meta(m)})
        for e in self.events:
            meta["events"].append({"t": e.t, "kind": e.kind, "name": e.name, "impulse": np.asarray(e.impulse).tolist(),
                                   "dv": np.asarray(e.dv).tolist(), "loop_impulse": np.asarray(e.loop_impulse).tolist(),
                                   "kinetic_before": e.kinetic_before, "kinetic_after": e.kinetic_after,
                                   "note": e.note, "units": list(e.units)})
        meta["extremes"] = {k: (x if np.isfinite(x) else None) for k, x in self.extremes.items()}
        data["meta"] = np.array(json.dumps(meta))
        return atomic_savez(path, **data)

    @classmethod
    def load(cls, path: str | os.PathLike[str], max_bytes: int = MAX_RECORDING_BYTES) -> Recording:
        """A recording saved by :meth:`save`: its segments (with the saved arrays and a
        :class:`SavedModel` naming each segment's joints, loops and sizes in place of the
        model) and its events.

        As strict as the model loaders: anything but a regular file (a FIFO, a device, a folder)
        is refused before it is opened; every member's size is read from the zip directory and
        one over ``max_bytes`` (default 64 MB, decompressed) is refused before it is
        decompressed; every segment's arrays must have as many rows as its ``t`` and q, v as many
        columns as its model's nq, nv.  Whatever is wrong (empty, truncated, corrupted, a missing
        member, mismatched rows) is one :class:`RecordingError` naming the file."""
        import os
        import stat
        import zipfile
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            raise RecordingError(f"{path}: cannot read it ({exc.strerror or exc})") from exc
        if not stat.S_ISREG(mode):
            raise RecordingError(f"{path}: not a regular file (a folder, FIFO or device); a recording is an .npz file")
        try:
            with zipfile.ZipFile(path) as zf:
                for info in zf.infolist():
                    if info.file_size > max_bytes:
                        raise RecordingError(f"{path}: member {info.filename!r} decompresses to {info.file_size} "
                                             f"bytes, over the {max_bytes}-byte cap (max_bytes=)")
            return cls._load_checked(path)
        except RecordingError:
            raise
        except Exception as exc:        # zlib, zipfile, NumPy's header parser, JSON: whatever a bad byte raises
            raise RecordingError(f"{path}: not a readable linkdyn recording (empty, truncated or corrupted: "
                                 f"{type(exc).__name__}: {exc})") from exc

    @classmethod
    def _load_checked(cls, path) -> Recording:
        with np.load(path, allow_pickle=False) as z:
            if "meta" not in z.files:
                raise RecordingError(f"{path}: missing member 'meta' (not a linkdyn recording)")
            meta = json.loads(str(z["meta"]))
            rec = cls()
            for k, sm in enumerate(meta["segments"]):
                arrays = {name[len(f"seg{k}_"):]: z[name] for name in z.files if name.startswith(f"seg{k}_")}
                slices = tuple((int(a), int(b)) for a, b in sm.get("q_slices", []))
                if slices and (len(slices) != len(sm["joint_names"]) or
                               any(not 0 <= a <= b <= sm["nq"] for a, b in slices)):
                    raise RecordingError(f"{path}: segment {k}'s q_slices do not fit its {sm['nq']} coordinates")
                model = SavedModel(sm["model"], tuple(sm["joint_names"]), sm["nq"], sm["nv"], tuple(sm["loops"]),
                                   slices, _check_coupling(path, k, sm))
                seg = Segment(model, unit_names=list(sm["units"]))
                for need in ("t", "q", "v"):
                    if need not in arrays:
                        raise RecordingError(f"{path}: missing member 'seg{k}_{need}'")
                rows = len(arrays["t"])
                for name, arr in arrays.items():
                    if arr.dtype.kind not in "fiu" or (arr.ndim == 0 or len(arr) != rows):
                        raise RecordingError(f"{path}: member 'seg{k}_{name}' has shape {arr.shape} and dtype "
                                             f"{arr.dtype}; expected {rows} rows of numbers (as seg{k}_t)")
                for name, n in (("q", model.nq), ("v", model.nv)):
                    if arrays[name].ndim != 2 or arrays[name].shape[1] != n:
                        raise RecordingError(f"{path}: member 'seg{k}_{name}' has shape {arrays[name].shape}; "
                                             f"expected ({rows}, {n}) for the model {model.name!r}")
                for name, arr in arrays.items():
                    setattr(seg, name, list(arr))
                rec.segments.append(seg)
        for k, x in meta.get("extremes", {}).items():
            if k in rec.extremes:
                rec.extremes[k] = STEP_EXTREMES[k] if x is None else x
        for e in meta["events"]:
            rec.events.append(Event(e["t"], e["kind"], e["name"], np.asarray(e["impulse"], dtype=float),
                                    np.asarray(e.get("dv", []), dtype=float), e["kinetic_before"], e["kinetic_after"],
                                    e.get("note", ""), list(e.get("units", [])),
                                    np.asarray(e.get("loop_impulse", []), dtype=float).reshape(-1, 6)))
        return rec

    def __repr__(self):
        t = self.t
        span = f"{t[0]:.3f}..{t[-1]:.3f} s" if len(t) else "empty"
        return f"<Recording {span}: {len(t)} samples, {len(self.segments)} segments, {len(self.events)} events>"


@dataclass
class Trajectory:
    """Recorded states: ``t`` (K,), ``q`` (K, nq), ``v`` (K, nv), ``tau`` (K, nv), the
    kinetic / potential energy at each sample, and for a closed chain ``loop_error`` (K,),
    the largest loop-closure error (zeros for a tree)."""
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    tau: np.ndarray
    kinetic: np.ndarray
    potential: np.ndarray
    loop_error: np.ndarray = None
    events: list = None

    @property
    def energy(self) -> np.ndarray:
        return self.kinetic + self.potential

    def save(self, path: str | os.PathLike[str]) -> Path:
        """An ``.npz`` of the arrays, written whole or not at all (temporary file, fsync,
        rename); ``path`` as given (``.npz`` added, with a warning, when it has no suffix).
        Returns the path written."""
        return atomic_savez(path, t=self.t, q=self.q, v=self.v, tau=self.tau, kinetic=self.kinetic,
                            potential=self.potential, loop_error=self.loop_error)
