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
    ``unit_point`` (K, nunits, 3) the world contact points (zero for limits).

    The contacts between collision geoms (``ModelBuilder.add_geom``, MJCF geoms; time stepping)
    vary in number from sample to sample: each sample keeps those of the step that ended at it
    (none at a segment's first sample, where no step has ended), per sample ``geom_pair``
    (n, 2) indices into ``geom_names`` (geom 1, geom 2), ``geom_force`` (n, 3) the world force
    geom 1 exerts on geom 2 over the step (its impulse / h; geom 1 takes the opposite),
    ``geom_point`` (n, 3) the world contact point and ``geom_normal`` (n, 3) the unit normal
    from geom 1 to geom 2, both where the step's problem took them (at the step's start).
    :meth:`arrays` gives them flat (``geom_offset`` (K + 1,): sample k's contacts are rows
    ``geom_offset[k]:geom_offset[k + 1]``), :meth:`geom_contacts` one sample's, and
    :meth:`geom_wrench` / :meth:`geom_normal_force` their sums per pair, geom or body."""
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
    #: the model's geom names (the indices of ``geom_pair``) and the body each geom is on
    geom_names: list = field(default_factory=list)
    geom_bodies: list = field(default_factory=list)
    geom_pair: list = field(default_factory=list)
    geom_force: list = field(default_factory=list)
    geom_point: list = field(default_factory=list)
    geom_normal: list = field(default_factory=list)

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
                "unit_point": field(self.unit_point, (len(self.unit_names), 3)), **self._geom_arrays()}

    def _geom_arrays(self) -> dict:
        """The geom contacts flat: ``geom_offset`` (K + 1,) and ``geom_pair`` (total, 2),
        ``geom_force``, ``geom_point``, ``geom_normal`` (total, 3); none when not recorded."""
        n = len(self.t)
        if len(self.geom_force) != n or not n:
            return {"geom_offset": np.zeros(n + 1, dtype=np.int64), "geom_pair": np.zeros((0, 2), dtype=np.int64),
                    **{f"geom_{k}": np.zeros((0, 3)) for k in ("force", "point", "normal")}}
        counts = [len(x) for x in self.geom_force]
        out = {"geom_offset": np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
               "geom_pair": np.concatenate([np.asarray(x, dtype=np.int64).reshape(-1, 2) for x in self.geom_pair])}
        for k in ("force", "point", "normal"):
            out[f"geom_{k}"] = np.concatenate([np.asarray(x, dtype=float).reshape(-1, 3)
                                               for x in getattr(self, f"geom_{k}")])
        return out

    def geom_contacts(self, k: int) -> GeomContacts:
        """The geom contacts of sample ``k`` (those of the step that ended at it):
        :class:`GeomContacts` (empty when none touched or none were recorded)."""
        n = len(self.t)
        if not -n <= k < n:
            raise IndexError(f"sample {k}: the segment has {n} samples")
        k %= n
        if len(self.geom_force) != n:
            z = np.zeros((0, 3))
            return GeomContacts([], np.zeros((0, 2), dtype=np.int64), z, z.copy(), z.copy())
        pair = np.asarray(self.geom_pair[k], dtype=np.int64).reshape(-1, 2)
        names = [f"{self.geom_names[a]}/{self.geom_names[b]}" for a, b in pair.tolist()]
        return GeomContacts(names, pair, *(np.asarray(getattr(self, f"geom_{x}")[k], dtype=float).reshape(-1, 3)
                                           for x in ("force", "point", "normal")))

    def _geom_groups(self, by: str):
        """(names, index of the group each contact's geom 1 is in, ... geom 2's; -1 for a pair's
        geom 1: a pair counts the force on geom 2 only)."""
        a = self._geom_arrays()
        pair = a["geom_pair"]
        if by == "pair":
            keys = [f"{self.geom_names[i]}/{self.geom_names[j]}" for i, j in pair.tolist()]
            names = list(dict.fromkeys(keys))
            idx = {nm: c for c, nm in enumerate(names)}
            return names, np.full(len(pair), -1), np.array([idx[x] for x in keys], dtype=np.int64), a
        if by == "geom":
            label = list(self.geom_names)
        elif by == "body":
            if len(self.geom_bodies) != len(self.geom_names):
                raise ValueError("by='body': this segment does not record the geoms' bodies")
            label = list(self.geom_bodies)
        else:
            raise ValueError(f"by: expected 'pair', 'geom' or 'body', got {by!r}")
        used = sorted(set(pair.ravel().tolist()))
        names = list(dict.fromkeys(label[g] for g in used))
        idx = {nm: c for c, nm in enumerate(names)}
        to = np.array([idx.get(label[g], -1) for g in range(len(label))], dtype=np.int64)
        return names, to[pair[:, 0]] if len(pair) else np.zeros(0, np.int64), \
            to[pair[:, 1]] if len(pair) else np.zeros(0, np.int64), a

    def geom_wrench(self, by: str = "pair") -> tuple[list, NDArray[np.float64]]:
        """The geom contacts' forces summed per sample: (names, (K, n, 6) wrenches [force;
        moment about the world origin], world frame).  ``by="pair"``: per pair "geom1/geom2",
        the wrench on geom 2 (e.g. "floor/foot": the floor's reaction on the foot); ``"geom"``
        or ``"body"``: the wrench on each geom, or on each body (the sum over its geoms; a
        contact between two geoms of one body cancels), from every contact it is in.  The
        ground reaction of a robot on a floor geom is ``-`` the floor's by geom."""
        names, g1, g2, a = self._geom_groups(by)
        n, off = len(self.t), a["geom_offset"]
        f, p = a["geom_force"], a["geom_point"]
        w = np.concatenate([f, np.cross(p, f)], axis=1)
        sample = np.repeat(np.arange(n), np.diff(off))
        out = np.zeros((n, len(names), 6))
        for grp, sign in ((g2, 1.0), (g1, -1.0)):
            ok = grp >= 0
            np.add.at(out, (sample[ok], grp[ok]), sign * w[ok])
        return names, out

    def geom_normal_force(self) -> tuple[list, NDArray[np.float64]]:
        """The normal force summed per pair of geoms and sample: (names "geom1/geom2", (K, n)),
        each contact's force along its own normal (N; positive: pushing)."""
        names, _, g2, a = self._geom_groups("pair")
        n, off = len(self.t), a["geom_offset"]
        fn = np.einsum("ij,ij->i", a["geom_force"], a["geom_normal"])
        out = np.zeros((n, len(names)))
        np.add.at(out, (np.repeat(np.arange(n), np.diff(off)), g2), fn)
        return names, out


@dataclass
class GeomContacts:
    """One sample's geom contacts (``Segment.geom_contacts``): ``names`` "geom1/geom2" (n,),
    ``pair`` (n, 2) geom indices, ``force`` (n, 3) the world force geom 1 exerts on geom 2,
    ``point`` (n, 3) world contact points, ``normal`` (n, 3) unit normals from geom 1 to geom 2."""
    names: list
    pair: np.ndarray
    force: np.ndarray
    point: np.ndarray
    normal: np.ndarray

    @property
    def normal_force(self) -> np.ndarray:
        """(n,) each contact's force along its normal (N)."""
        return np.einsum("ij,ij->i", self.force, self.normal)

    def __len__(self) -> int:
        return len(self.names)


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
                                     "geoms": list(s.geom_names), "geom_bodies": list(s.geom_bodies),
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
                geoms = {name: arrays.pop(name) for name in list(arrays) if name.startswith("geom_")}
                _load_geoms(path, k, sm, seg, geoms, rows)
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

    def geom_wrench(self, by: str = "pair") -> tuple[NDArray[np.float64], list, NDArray[np.float64]]:
        """``Segment.geom_wrench`` over the whole run: (t (N,), names (the union over the
        segments, in order of appearance), (N, n, 6) wrenches [force; moment about the world
        origin]; zero where a segment has no contact of that name)."""
        return self._geom_cat(lambda s: s.geom_wrench(by), (6,))

    def geom_normal_force(self) -> tuple[NDArray[np.float64], list, NDArray[np.float64]]:
        """``Segment.geom_normal_force`` over the whole run: (t (N,), pair names, (N, n))."""
        return self._geom_cat(lambda s: s.geom_normal_force(), ())

    def _geom_cat(self, fn, shape):
        segs = [s for s in self.segments if len(s.t)]
        parts = [fn(s) for s in segs]
        names = list(dict.fromkeys(nm for nm_, _ in parts for nm in nm_))
        idx = {nm: c for c, nm in enumerate(names)}
        out = []
        for s, (nm_, x) in zip(segs, parts):
            y = np.zeros((len(s.t), len(names)) + shape)
            y[:, [idx[nm] for nm in nm_]] = x
            out.append(y)
        return self.t, names, (np.concatenate(out) if out else np.zeros((0, 0) + shape))

    def __repr__(self):
        t = self.t
        span = f"{t[0]:.3f}..{t[-1]:.3f} s" if len(t) else "empty"
        return f"<Recording {span}: {len(t)} samples, {len(self.segments)} segments, {len(self.events)} events>"


_GEOM_MEMBERS = {"geom_offset": None, "geom_pair": 2, "geom_force": 3, "geom_point": 3, "geom_normal": 3}


def _load_geoms(path, k, sm, seg, arrays, rows):
    """Check and set a loaded segment's geom contacts (``Segment``): all five members or none
    (files written before they were recorded), ``geom_offset`` (rows + 1,) integers rising from
    0 to the contacts' count, the others as many rows of 2 (geom indices into the metadata's
    ``geoms``) or 3 finite numbers.  A RecordingError naming the file and member otherwise."""
    names = sm.get("geoms", [])
    bodies = sm.get("geom_bodies", [])
    if not isinstance(names, list) or not all(isinstance(x, str) for x in names) or \
            not isinstance(bodies, list) or not all(isinstance(x, str) for x in bodies) or \
            (bodies and len(bodies) != len(names)):
        raise RecordingError(f"{path}: segment {k}'s geom names and bodies are not two lists of names of one length")
    seg.geom_names, seg.geom_bodies = list(names), list(bodies)
    if not arrays:
        return
    for name in arrays:
        if name not in _GEOM_MEMBERS:
            raise RecordingError(f"{path}: unknown member 'seg{k}_{name}'")
    missing = [name for name in _GEOM_MEMBERS if name not in arrays]
    if missing:
        raise RecordingError(f"{path}: member 'seg{k}_{missing[0]}' is missing (the geom contacts are recorded "
                             f"by {len(_GEOM_MEMBERS)} members together)")
    off = arrays["geom_offset"]
    if off.dtype.kind not in "iu" or off.shape != (rows + 1,) or off[0] != 0 or np.any(np.diff(off) < 0):
        raise RecordingError(f"{path}: member 'seg{k}_geom_offset' has shape {off.shape} and dtype {off.dtype}; "
                             f"expected {rows + 1} integers rising from 0 (one more than seg{k}_t's rows)")
    total = int(off[-1])
    for name, width in _GEOM_MEMBERS.items():
        if width is None:
            continue
        arr = arrays[name]
        kind = "iu" if width == 2 else "f"
        if arr.dtype.kind not in kind or arr.shape != (total, width) or (width == 3 and not np.isfinite(arr).all()):
            raise RecordingError(f"{path}: member 'seg{k}_{name}' has shape {arr.shape} and dtype {arr.dtype}; "
                                 f"expected ({total}, {width}) finite {'integers' if width == 2 else 'numbers'} "
                                 f"(seg{k}_geom_offset counts {total} contacts)")
    pair = arrays["geom_pair"]
    if total and (pair.min() < 0 or pair.max() >= len(names)):
        raise RecordingError(f"{path}: member 'seg{k}_geom_pair' holds geom indices outside 0..{len(names) - 1} "
                             f"(the segment's {len(names)} geoms)")
    if not rows:
        return
    cut = off[1:-1]
    seg.geom_pair = np.split(pair.astype(np.int64), cut)
    for name in ("force", "point", "normal"):
        setattr(seg, f"geom_{name}", np.split(arrays[f"geom_{name}"].astype(float), cut))


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
