"""Simulation of structure-varying chains with events (Nakamura and Yamane 2000 secs. 4-5).

    sim = ld.Simulation(model, q, dt=1e-3)
    sim.connect("r_grip", "bar", joint=ld.Revolute("y"))     # a loop appears; velocities jump
    sim.at(1.0, "cut", "r_grip", "bar")                       # scheduled: let go at t = 1 s
    sim.when(sim.below("l_sole", "z", 0.0), "connect", "l_sole", "world")   # conditional
    sim.run(until=3.0)
    sim.save("run.npz"); sim.animate("run.html")

Between events the state moves with RK4 (or semi-implicit Euler) on the configuration
manifold (quaternions by the exponential map, Nakamura and Yamane 2000 eqs. 34-38), a closed chain by its
multiplier-form dynamics, projected back onto its loops after every step.  A connection
builds the new model and applies the velocity jump of Nakamura and Yamane 2000 sec. 4.3; a cut keeps the
velocities.  Conditional events are checked after every step and fire at the end of the step
in which their condition became true (their time is accurate to one step).
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import math
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from .. import _kernels, structure
from ..dynamics.energy import _energies, kinetic_energy, potential_energy
from ..kinematics import frame_pose
from ..model.configuration import difference, neutral
from ._timestep_kernel import step_extremes as _step_extremes
from .steps import STEPS
from ..contact.geom_rows import geom_pairs_to_detect
from ..contact.lcp import ContactSolverError
from ..contact.rows import point_plane_pairs
from ..recording import Event, GeomContacts, Recording

if TYPE_CHECKING:
    import os

    from numpy.typing import ArrayLike

    from ..constraints import Constraint
    from ..model.joints import Joint
    from ..model.model import Model
    from ..viz.animate import AnimationInfo
    from ..viz.viewer import Viewer
    from .checks import Checks


def _energy_pair(m, q, v):
    """(kinetic, potential) energy at (q, v) as floats, one compiled call for a tree."""
    if m._full is None:
        e = _energies(m, q, v)
        return float(e[0]), float(e[1])
    return float(kinetic_energy(m, q, v)), float(potential_energy(m, q))


class _Interrupts:
    """Ctrl-C (SIGINT) held while a run is on (``_held_interrupts``): the run installs one handler
    for all its steps, and each block that changes the simulation's state together
    (``_deferred_interrupt``) only counts itself open: a Ctrl-C that arrives inside one waits for
    it to close, one that arrives between them is raised at once (as without the handler).
    Installing a handler per block cost two ``signal.signal`` calls a step (6 us)."""
    depth = 0           # blocks open
    pending = None      # the frame of a Ctrl-C that waits for them to close
    active = False      # a run holds Ctrl-C
    old: Any = None     # the handler before the run's


def _deliver(frame):
    """The Ctrl-C as the handler before the run's would have taken it."""
    old = _Interrupts.old
    if callable(old):
        old(signal.SIGINT, frame)
    else:
        raise KeyboardInterrupt


def _on_sigint(sig, frame):
    if _Interrupts.depth:
        _Interrupts.pending = frame
    else:
        _deliver(frame)


@contextlib.contextmanager
def _held_interrupts():
    """A run's steps under one SIGINT handler (``_Interrupts``); nothing in another thread, in
    an interpreter without signals, or inside a run that holds them already."""
    if _Interrupts.active or threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        old = signal.signal(signal.SIGINT, _on_sigint)
    except (ValueError, OSError):                 # no signals here (an embedded interpreter)
        yield
        return
    _Interrupts.old, _Interrupts.active = old, True
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        _Interrupts.old, _Interrupts.active = None, False
        _Interrupts.depth = 0
        _Interrupts.pending = None


class _Deferred:
    """The block of ``_deferred_interrupt`` inside a run that holds Ctrl-C: a counter."""
    __slots__ = ()

    def __enter__(self):
        _Interrupts.depth += 1

    def __exit__(self, *exc):
        _Interrupts.depth -= 1
        if not _Interrupts.depth and _Interrupts.pending is not None:
            frame, _Interrupts.pending = _Interrupts.pending, None
            _deliver(frame)
        return False


_DEFERRED = _Deferred()


def _deferred_interrupt():
    """Hold a Ctrl-C (SIGINT) that arrives inside the block until the block is done, then raise
    it: for the few statements that change the simulation's state together (q, v and t; a
    structure change and its segment; an event and its "done" mark), which an interrupt
    between them would leave inconsistent.  Outside the main thread: no effect.  Inside a run
    (``_held_interrupts``) the run's handler does it."""
    if _Interrupts.active and threading.current_thread() is threading.main_thread():
        return _DEFERRED
    return _deferred_block()


@contextlib.contextmanager
def _deferred_block():
    """``_deferred_interrupt`` outside a run: a handler installed for the block."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending = []
    try:
        old = signal.signal(signal.SIGINT, lambda sig, frame: pending.append(frame))
    except (ValueError, OSError):                 # no signals here (an embedded interpreter)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        if pending:
            if callable(old):
                old(signal.SIGINT, pending[0])
            else:
                raise KeyboardInterrupt

_STEPS = STEPS


def _baumgarte(x):
    """Baumgarte's (alpha, beta) in 1/s: a pair of finite real numbers >= 0 (issue 28: a NaN or a
    triple was taken, to fail later in the constrained solve with an unrelated message)."""
    import numbers
    msg = f"baumgarte: expected a pair (alpha, beta) of finite numbers >= 0 (1/s), got {x!r}"
    if isinstance(x, (str, bytes)) or not isinstance(x, (tuple, list, np.ndarray)) or np.ndim(x) != 1 or len(x) != 2:
        raise ValueError(msg)
    out = []
    for v in (x.tolist() if isinstance(x, np.ndarray) else x):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise TypeError(msg)
        if not (math.isfinite(float(v)) and float(v) >= 0.0):
            raise ValueError(msg)
        out.append(float(v))
    return tuple(out)


def _events():
    from .unilateral import Unilateral
    return Unilateral


def _timestep():
    from .timestepping import TimeStepping
    return TimeStepping


#: how joint limits and contacts are simulated: "events" (each touch, release and stick-slip
#: change located inside the step, RK4 between: exact, slow with many contacts) or "timestep"
#: (one velocity-level complementarity problem per step, first order: fast whatever the contacts do);
#: "auto" picks one for the model (``Simulation``)
#: steps per compiled call of ``Simulation.run`` (time stepping of a tree, no controller): its
#: samples are recorded inside the call (``TimeStepping.recorder``), and the progress bar and
#: Ctrl-C are looked at between calls
RUN_CHUNK = 1000

_CONTACT_METHODS = {"events": _events, "timestep": _timestep, "auto": None}


@dataclass
class _Scheduled:
    t: float
    action: object
    args: tuple
    kwargs: dict
    done: bool = False


@dataclass
class _Watch:
    condition: object
    action: object
    args: tuple
    kwargs: dict
    once: bool
    last: object = None
    fired: bool = False


def _loop_fields(m, q, v, tau):
    """A sample's loop fields: the largest loop error and the loops' forces (a tree: 0, none)."""
    if not m.nloops:
        return [("loop_error", 0.0), ("loop_forces", np.zeros((0, 6)))]
    from ..loops.dynamics import constrained_dynamics
    from ..loops.kinematics import loop_error
    return [("loop_error", float(np.abs(loop_error(m, q)).max())),
            ("loop_forces", constrained_dynamics(m, q, v, tau, forces=True)[1])]


class Simulation:
    """A simulation of ``model`` from (q, v) (default: neutral, at rest) with step ``dt``.

    ``integrator``: "rk4" or "euler" (semi-implicit).  ``controller(t, q, v)`` or
    ``controller(t, q, v, model)`` returns the joint torques (nv,) of the current model (zero
    without one).  Every ``record_every``-th step is recorded, and every event adds the
    samples just before and after it.  ``sim.recording`` holds the run.

    ``limits``, ``contacts``: hold the joint limits and the contacts of the model
    (``linkdyn.contact``).  ``contact_method``: "events" (every impact, touch, release and
    stick-slip change is located inside the step and the motion between is RK4:
    ``linkdyn.sim.unilateral``; point contacts and limits only), "timestep" (a velocity-level
    complementarity problem per step, as MuJoCo, Bullet and Drake: first order, much faster when
    many contacts come and go, e.g. a figure standing or lying on the ground, and the scheme that
    handles collision geometry, ``ModelBuilder.add_geom``: ``linkdyn.sim.timestepping``) or
    "auto" (the default): "timestep" when the model has collision geometry beyond its point
    contacts (candidate geom pairs other than the sphere-plane pairs that ``add_contact`` /
    ``add_plane`` describe, as an MJCF file's capsules and boxes), else "events".  ``sim.contact_method`` says which runs
    (after a structure change, "auto" picks again for the new model).

    ``constraints``: user constraints (``linkdyn.constraints``: a point fixed, a point on a
    plane, a frame fixed, a distance, custom rows) held in every step by
    ``ld.constrained_dynamics`` with the model's loops, their drift pulled back by Baumgarte's
    stabilization (``baumgarte`` = (alpha, beta) in 1/s); for now without limits and contacts.
    """

    def __init__(self, model: Model, q: ArrayLike | None = None, v: ArrayLike | None = None, dt: float = 1e-3,
                 integrator: str = "rk4", controller: Callable[..., ArrayLike] | None = None,
                 record_every: int = 1, t: float = 0.0, limits: bool = True, contacts: bool = True,
                 contact_method: str = "auto", constraints: Sequence[Constraint] = (),
                 baumgarte: tuple[float, float] = (20.0, 20.0)) -> None:
        if contact_method not in _CONTACT_METHODS:
            raise ValueError(f"contact_method: expected one of {list(_CONTACT_METHODS)}, got {contact_method!r}")
        if integrator not in _STEPS:
            raise ValueError(f"integrator: expected one of {list(_STEPS)}, got {integrator!r}")
        if isinstance(dt, (bool, np.bool_)) or not isinstance(dt, (int, float, np.integer, np.floating)) \
                or not (dt > 0 and math.isfinite(dt)):
            raise ValueError(f"dt: expected a positive number, got {dt!r}")
        if isinstance(record_every, (bool, np.bool_)) or not isinstance(record_every, (int, np.integer)) \
                or record_every < 1:
            raise ValueError(f"record_every: expected a positive integer, got {record_every!r}")
        from ..constraints import Constraint
        self.constraints = list(constraints)
        for k, c in enumerate(self.constraints):
            if not isinstance(c, Constraint):
                raise TypeError(f"constraints[{k}]: expected a linkdyn.constraints.Constraint, got {type(c).__name__}")
        self.baumgarte = _baumgarte(baumgarte)
        self.model = model
        self.q = neutral(model) if q is None else np.array(q, dtype=float)
        self.v = np.zeros(model.nv) if v is None else np.array(v, dtype=float)
        if self.q.shape != (model.nq,) or self.v.shape != (model.nv,):
            raise ValueError(f"q, v: expected shapes ({model.nq},) and ({model.nv},), got {self.q.shape} and "
                             f"{self.v.shape}")
        self.dt = float(dt)
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, float, np.integer, np.floating)) \
                or not math.isfinite(t):
            raise ValueError(f"t: expected a finite number (the start time, s), got {t!r}")
        self.t = self._t_start = float(t)
        self._step = _STEPS[integrator]
        self.controller = controller
        self._ctrl_model = controller is not None and len(inspect.signature(controller).parameters) >= 4
        self.record_every = int(record_every)
        self.recording = Recording()
        self._scheduled: list[_Scheduled] = []
        self._watches: list[_Watch] = []
        self._ext = np.empty(4)                 # one step's extremes (``_watch``)
        self._steps = 0
        self.tau = np.zeros(model.nv)
        self._work = np.zeros(3)            # joints (actuators less friction), limits and contacts, structure changes (J)
        if model.nloops:
            from .steps import project
            self.q, self.v = project(model, self.q, self.v)
        self.limits, self.contacts = bool(limits), bool(contacts)
        self._integrator = integrator
        self._method_asked = contact_method
        self.contact_method = contact_method
        self._unilateral()
        if self.contact_method == "timestep":
            self._check_stable_dt()
        self._segment = self.recording.start_segment(model)
        self._segment.unit_names = self._unit_names()
        self._geom_names(self._segment)
        self._record()

    # ------------------------------------------------------------------- stable step
    def _check_stable_dt(self):
        """Refuse a ``dt`` at which time stepping cannot be stable (issue 28: the drop scene at
        dt = 0.5 s gained 4e10 J and flew 10 km up).  The scheme is semi-implicit (symplectic)
        Euler: on the linearization M dv/dt = -K dq - D v at the start, a mode of frequency omega
        (omega^2 the largest real part of an eigenvalue of M^-1 K) grows unless h omega < 2, and a
        mode of damping rate c (of M^-1 D) unless h c < 2 (one mode with both: h^2 omega^2 < 4 - 2 h c;
        Hairer, Lubich and Wanner 2006, sec. I.1 on the symplectic Euler method).  (The spectral
        radius of the whole linearized step was tried first: the free base's orientation, whose
        gravity force turns with it, made it refuse MuJoCo's humanoid at its own 1 ms step.)  K is the stiffness of gravity, the
        joint springs and the controller, D the joints' damping and the controller's, by central
        differences at the initial state (the controller is called 4 nv times for it).  A necessary condition only:
        contacts and limits are solved implicitly and do not enter it, and a dt that passes can
        still be too long for the motion that follows."""
        from ..dynamics.crba import crba, mass_matrix
        from ..dynamics.rnea import rnea
        from ..model.configuration import integrate
        m, q0, v0, nv = self.model, self.q, self.v, self.model.nv
        if nv == 0:
            return
        z = np.zeros(nv)
        try:
            # (crba's kernel, not mass_matrix's, which compiles its two other methods too)
            M = crba(m, q0) if m._full is None else mass_matrix(m, q0)
            eps = 1e-6
            # the joints' damping is implicit in the step where the time step has it (TimeStepping.damped)
            implicit = getattr(self._uni, "damped", False)
            K, D = np.zeros((nv, nv)), np.diag(np.asarray(m.damping, dtype=float) * (not implicit)).copy()
            ctrl = self.controller is not None

            def tau_c(q, v):
                if not ctrl:
                    return z
                args = (self.t, q, v, m) if self._ctrl_model else (self.t, q, v)
                return np.asarray(self.controller(*args), dtype=float).reshape(nv)
            for i in range(nv):
                e = np.zeros(nv)
                e[i] = eps
                qp, qm = integrate(m, q0, e), integrate(m, q0, -e)
                K[:, i] = (rnea(m, qp, z, z) - rnea(m, qm, z, z) - tau_c(qp, v0) + tau_c(qm, v0)) / (2 * eps)
                if ctrl:
                    D[:, i] -= (tau_c(q0, v0 + e) - tau_c(q0, v0 - e)) / (2 * eps)
            with np.errstate(all="ignore"):
                lk = np.linalg.eigvals(np.linalg.solve(M, K))
                lc = np.linalg.eigvals(np.linalg.solve(M, D))
        except Exception:               # a model or controller the probe cannot linearize: no verdict
            return
        if not (np.isfinite(lk).all() and np.isfinite(lc).all()):
            return
        omega = math.sqrt(max(float(lk.real.max()), 0.0))      # the stiffest oscillation (rad/s)
        c = max(float(lc.real.max()), 0.0)                      # the fastest damping (1/s)
        bound = min(2.0 / omega if omega > 0 else math.inf, 2.0 / c if c > 0 else math.inf)
        h = self.dt
        if h >= bound:
            raise ValueError(f"dt = {h:g} s: time stepping (semi-implicit Euler) cannot be stable at this step for "
                             f"model {self.model.name!r}: linearized at the initial state (gravity, joint springs and "
                             f"damping, the controller) its stiffest mode has {omega:.3g} rad/s and its fastest "
                             f"damping {c:.3g} 1/s, which need dt < {bound:.3g} s (h omega < 2, h c < 2); "
                             "take a smaller dt")

    # ------------------------------------------------------------------- limits, contacts
    def _unilateral(self):
        if not hasattr(self, "_stats_done"):
            self._stats_done = {}
        if getattr(self, "_uni", None) is not None:
            for k, x in self._uni.stats.items():
                self._stats_done[k] = self._stats_done.get(k, 0) + x
        # the candidate geom pairs that point contacts (add_contact, add_plane) do not describe: an MJCF
        # file's capsules, boxes and meshes, bodies touching each other
        geoms = int(geom_pairs_to_detect(self.model, point_plane_pairs(self.model)).sum()) if self.contacts else 0
        method = self._method_asked
        if method == "auto":
            method = "timestep" if geoms else "events"
        elif method == "events" and geoms:
            raise ValueError(f"contact_method='events': the event scheme does not handle collision geometry yet, and "
                             f"model {self.model.name!r} has {geoms} candidate geom pair(s) that are not point contacts: "
                             "use contact_method='timestep' or 'auto' (or contacts=False to simulate without them)")
        self.contact_method = method
        # time stepping leaves out the geom pairs that overlap at the initial state where no motion moves them
        # (``linkdyn.contact.geom_rows.inert_overlaps``: a hard contact that no impulse could satisfy)
        at = {"q": self.q} if method == "timestep" else {}
        uni = _CONTACT_METHODS[method]()(self.model, self.limits, self.contacts, self._integrator, **at)
        inert = getattr(uni, "inert", [])
        if inert:
            import warnings
            shown = ", ".join(f"{n!r} ({d:.3g} m)" for n, d in inert[:6]) + (", ..." if len(inert) > 6 else "")
            warnings.warn(f"model {self.model.name!r}: {len(inert)} geom pair(s) overlap in the initial state at a "
                          f"point that no motion of the model moves (the contact's rows vanish, e.g. two capsules "
                          f"sharing an end sphere on the axis of the hinge between them): {shown}; no contact impulse "
                          "could push them apart, so they are left out of collision (MuJoCo keeps them as contacts "
                          "whose Jacobian is zero: forces that do nothing)", stacklevel=3)
        self._uni = None if uni.empty else uni
        if self._uni is not None:
            gaps = uni.catalog.gaps(self.q)
            if np.any(gaps < -1e-6):
                names = uni.catalog.units(self.q, None, np.flatnonzero(gaps < -1e-6)).name
                import warnings
                warnings.warn(f"the initial state violates {len(names)} limit(s) or contact(s) ({', '.join(names[:6])}"
                              f"{', ...' if len(names) > 6 else ''}); they are projected back", stacklevel=3)
            e0 = self._energy()
            self.q, self.v = uni.correct(self.q, self.v)
            self._work[1] += self._energy() - e0
            found = uni.overlaps(self.q, 1e-6) if hasattr(uni, "overlaps") else []
            still = sorted(uni.overlaps(self.q, 1e-6, inert_only=True), key=lambda x: x[1]) if found else []
            left = sorted((x for x in found if x not in still), key=lambda x: x[1])
            if still:
                import warnings
                shown = ", ".join(f"{n} {-g * 1e3:.3g} mm" for n, g in still[:6])
                warnings.warn(f"{len(still)} overlap(s) of the initial state that no joint can move along its normal "
                              f"({shown}{', ...' if len(still) > 6 else ''}): inert contacts (linkdyn.contact.rows.inert), "
                              "no force and no push-out, and checks() reports them (e.g. a body on slide joints parallel "
                              "to a plane it rests on within the geoms' margins)", stacklevel=3)
            if left:
                import warnings
                shown = ", ".join(f"{n} {-g * 1e3:.3g} mm" for n, g in left[:6])
                warnings.warn(f"{len(left)} overlap(s) of the initial state cannot be projected out within the joints' "
                              f"limits ({shown}{', ...' if len(left) > 6 else ''}): the time step holds them (no deeper, "
                              "no push-out) and checks() reports them; collision shapes of neighbouring bodies that are "
                              "not meant to touch are usually excluded (MJCF <exclude body1= body2=>, "
                              "ModelBuilder.exclude)", stacklevel=3)

    def _energy(self):
        return float(kinetic_energy(self.model, self.q, self.v)) + float(potential_energy(self.model, self.q))

    @property
    def work(self) -> np.ndarray:
        """The energy ledger of the run so far (J), three terms: the work at the joints (the
        ``controller``'s torques, held over each step: tau . (q1 - q0) on the configuration
        manifold, less the energy the joints' damping and friction take, by the integrator's own
        quadrature of their power), of the limits and contacts (impacts, friction, the corrections that project
        penetrations out; negative when they take energy) and of the structure changes (the
        velocity jumps when links connect).  E(t) - E(0) - sum(work) is the integrator's error
        (``linkdyn.sim.checks``)."""
        return self._work.copy()

    def checks(self, energy_tol: float | None = None) -> Checks:
        """The checks of the run so far (``linkdyn.sim.checks.check``): the largest limit
        violation, the smallest normal force, the deepest penetration, the largest loop error
        and the energy ledger's residual, each with its tolerance."""
        from .checks import check
        return check(self.recording, self.contact_method, energy_tol, self.dt)

    def geom_contacts(self) -> GeomContacts:
        """The geom contacts of the step just taken, as the recording keeps them at a sample
        (:meth:`linkdyn.recording.Segment.geom_contacts`: names "geom1/geom2", geom indices,
        world forces geom 1 exerts on geom 2, points, unit normals; the candidates that took
        no force are left out): for a watch that looks at every step without recording each
        (``when(condition, ...)``).  Empty before the first step, after a structure change
        until the next step, and for a model whose contacts are not collision geometry."""
        uni, full = self._uni, self.model.full_model
        if uni is None or getattr(uni, "geoms", None) is None or self.recording.extremes["steps"] == 0:
            pair, force, at, normal = self._uni_none()
        else:
            pair, force, at, normal = uni.geom_contacts(self.q)
            on = np.any(force != 0.0, axis=1)
            pair, force, at, normal = pair[on], force[on], at[on], normal[on]
        names = [f"{full.geom_names[a]}/{full.geom_names[b]}" for a, b in pair.tolist()]
        return GeomContacts(names, pair, force, at, normal)

    @property
    def contact_stats(self) -> dict:
        """Counts of the unilateral layer over the run: ``impacts`` (every impulse solved),
        ``small_impacts`` (those slower than ``linkdyn.sim.unilateral.V_REPORT``, resolved but not
        listed as events) and the kinetic energy they took, ``located`` (events located inside
        a step), ``pieces`` (integration pieces)."""
        out = dict(self._stats_done)
        if self._uni is not None:
            for k, x in self._uni.stats.items():
                out[k] = out.get(k, 0) + x
        return out

    @staticmethod
    def _uni_none():
        z = np.zeros((0, 3))
        return np.zeros((0, 2), dtype=np.int64), z, z, z

    def _geom_names(self, seg):
        """Name the geoms of the segment's model when its contacts are geoms (their contacts are
        then recorded per sample: ``Segment.geom_contacts``)."""
        if self._uni is not None and getattr(self._uni, "geoms", None) is not None:
            full = self.model.full_model
            seg.geom_names = list(full.geom_names)
            seg.geom_bodies = [full.body_names[int(b)] for b in full.geom_body]

    def _unit_names(self):
        if self._uni is None:
            return []
        return list(self._uni.catalog.units(self.q, None).name)

    # ------------------------------------------------------------------------------ state
    def _torque(self):
        if self.controller is None:
            return np.zeros(self.model.nv)
        args = (self.t, self.q, self.v, self.model) if self._ctrl_model else (self.t, self.q, self.v)
        tau = np.asarray(self.controller(*args), dtype=float)
        if tau.shape != (self.model.nv,):
            raise ValueError(f"controller: returned shape {tau.shape} at t = {self.t:.6g}, expected "
                             f"({self.model.nv},) for model {self.model.name!r}")
        return tau

    def _record(self):
        """Append one sample: every value is computed first, then the fields are appended
        together; an interrupt (Ctrl-C) among the appends takes the sample back out, so every
        field of the segment always has the same length."""
        m, seg = self.model, self._segment
        if seg.t and seg.t[-1] == self.t:
            return
        kin, pot = _energy_pair(m, self.q, self.v)
        row = [("t", self.t), ("q", self.q.copy()), ("v", self.v.copy()), ("tau", self.tau.copy()),
               ("kinetic", kin), ("potential", pot), ("work", self._work.copy())]
        row += _loop_fields(m, self.q, self.v, self.tau)
        if self._uni is not None:
            cat = self._uni.catalog
            row += [("unit_force", self._uni.unit_forces(self.q, self.v, self.tau)),
                    ("unit_gap", self._uni.gaps_after(self.q).copy()),
                    ("unit_point", cat.points(self.q))]
        if seg.geom_names:              # the geom contacts of the step that ended here (none at the first sample)
            pair, force, at, normal = self._uni.geom_contacts(self.q) if len(seg.t) else self._uni_none()
            on = np.any(force != 0.0, axis=1)            # the candidates that took no force are not kept
            row += [("geom_pair", pair[on]), ("geom_force", force[on]), ("geom_point", at[on]),
                    ("geom_normal", normal[on])]
        self._append(row)

    def _append(self, row):
        """Append one sample's (name, value) pairs to the segment's fields, all or none."""
        seg = self._segment
        lists = [getattr(seg, name) for name, _ in row]
        n = len(seg.t)
        try:
            for lst, (_, x) in zip(lists, row):
                lst.append(x)
        except BaseException:
            for lst in lists:
                del lst[n:]
            raise

    def _switch(self, change: structure.Change, kind: str, note: str = ""):
        """Move to the model of a structure change, recording the samples around it (whole: a
        Ctrl-C inside waits for it to finish)."""
        with _deferred_interrupt():
            return self._switch_now(change, kind, note)

    def _switch_now(self, change, kind, note):
        self._record()                                      # the last sample of the old structure
        t0 = float(kinetic_energy(self.model, self.q, self.v))
        self.model, self.q, self.v = change.model, change.q, change.v
        self.tau = np.zeros(self.model.nv)
        jump = change.jump
        imp = jump.impulses[-1] if jump is not None and len(jump.impulses) else np.zeros(6)
        t1 = float(kinetic_energy(self.model, self.q, self.v))
        self._work[2] += t1 - t0
        ev = Event(self.t, kind, change.name, np.array(imp), jump.dv if jump is not None else np.zeros(self.model.nv),
                   t0, t1, note)
        self.recording.events.append(ev)
        self._unilateral()
        self._segment = self.recording.start_segment(self.model)
        self._segment.unit_names = self._unit_names()
        self._geom_names(self._segment)
        self._record()
        return ev

    # ------------------------------------------------------------------------ structure
    def connect(self, frame: str | int, to: str | int = "world", joint: Joint | None = None, name: str | None = None) -> Event:
        """Join ``frame`` to ``to`` now by ``joint`` (default a weld; axes in ``frame``'s
        coordinates), with the velocity jump of Nakamura and Yamane 2000 sec. 4.3.  Returns the event (its
        ``impulse`` and ``energy_loss``)."""
        change = structure.connect_state(self.model, self.q, self.v, frame, to, joint, name)
        return self._switch(change, "connect", f"{frame} - {to}")

    def _loop_between(self, a, b):
        m = self.model
        names = {lp.name for lp in m.loops} | {lp.joint_name for lp in m.loops} | set(m.joint_names)
        if b is None and a in names:
            return a
        if b is None:
            raise KeyError(f"cut: no loop or joint {a!r}; loops: {[lp.name for lp in m.loops]}")
        ba, bb = m.body_id(a), m.body_id(b)
        found = []
        for lp in m.loops:
            side_a = m.parent[lp.virtual] if lp.virtual is not None else lp.a
            if {int(side_a), int(lp.b)} == {ba, bb}:
                found.append(lp.name)
        if len(found) != 1:
            raise KeyError(f"cut: {'no loop' if not found else 'several loops'} between {a!r} and {b!r}"
                           + (f" ({found}); name the loop" if found else f"; loops: {[lp.name for lp in m.loops]}"))
        return found[0]

    def cut(self, a: str | int, b: str | int | None = None) -> Event:
        """Cut now: ``cut(loop_or_joint)`` or ``cut(frame, to)`` for the loop joining them
        (Nakamura and Yamane 2000 sec. 4.4).  Velocities are kept."""
        name = self._loop_between(a, b)
        change = structure.cut(self.model, self.q, self.v, name)
        return self._switch(change, "cut", name)

    # --------------------------------------------------------------------------- events
    def _resolve(self, action):
        if isinstance(action, str):
            if action not in ("connect", "cut"):
                raise ValueError(f"action: expected 'connect', 'cut' or a callable, got {action!r}")
            return getattr(self, action)
        if not callable(action):
            raise TypeError(f"action: expected 'connect', 'cut' or a callable taking the simulation, got {action!r}")
        return lambda *a, **k: action(self, *a, **k)

    def _check_names(self, action, args, kwargs):
        """Names given to a scheduled "connect" or "cut" must name something of the model now
        (a frame, body, joint or loop, or a loop "<frame>__<to>" a connection will make), so a
        typo fails when it is scheduled, not when its time comes."""
        if action not in ("connect", "cut"):
            return
        import difflib
        m = self.model
        known = set(m.frame_names) | set(m.body_names) | set(m.joint_names) | {"world"}
        known |= {lp.name for lp in m.loops} | {lp.joint_name for lp in m.loops}
        names = [x for x in list(args[:2]) + [kwargs.get("frame"), kwargs.get("to")] if isinstance(x, str)]
        for x in names:
            parts = x.split("__") if "__" in x and x not in known else [x]
            for p in parts:
                if p.endswith("_joint") and p[:-6] in known:
                    continue
                if p not in known:
                    near = difflib.get_close_matches(p, sorted(known), n=3)
                    hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
                    raise ValueError(f"{action}: model {m.name!r} has no frame, body, joint or loop {p!r}{hint}")

    def at(self, t: float, action: str | Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Schedule ``action`` ("connect", "cut" or a callable taking the simulation) at time t.
        Names are checked now (a ValueError with the nearest names for a typo)."""
        self._resolve(action)
        self._check_names(action, args, kwargs)
        self._scheduled.append(_Scheduled(float(t), action, args, kwargs))
        self._scheduled.sort(key=lambda s: s.t)

    def when(self, condition: Callable[[Simulation], bool | float | np.bool_ | np.floating[Any]], action: str | Callable[..., Any],
             *args: Any, once: bool = True, **kwargs: Any) -> None:
        """Run ``action`` when ``condition(sim)`` becomes true (a bool), or changes sign (a
        number, e.g. a distance minus a threshold, or a joint velocity): checked after every
        step.  ``once``: fire the first time only."""
        if not callable(condition):
            raise TypeError("condition: expected a callable taking the simulation")
        self._resolve(action)
        self._check_names(action, args, kwargs)
        self._watches.append(_Watch(condition, action, args, kwargs, once))

    def below(self, frame: str | int, axis: str = "z", value: float = 0.0) -> Callable[[Simulation], bool | np.bool_]:
        """A condition: the ``axis`` coordinate ("x", "y", "z") of ``frame``'s world position
        falls below ``value`` (e.g. a sole reaching the ground)."""
        k = "xyz".index(axis)
        return lambda sim: frame_pose(sim.model, sim.q, frame)[k, 3] < value

    def distance_below(self, frame: str | int, other: str | int, threshold: float) -> Callable[[Simulation], bool | np.bool_]:
        """A condition: the distance between two frames' origins falls below ``threshold``."""
        return lambda sim: np.linalg.norm(frame_pose(sim.model, sim.q, frame)[:3, 3]
                                          - frame_pose(sim.model, sim.q, other)[:3, 3]) < threshold

    def velocity_of(self, joint: str, k: int = 0) -> Callable[[Simulation], float]:
        """A signal: the k-th velocity of ``joint`` (fires when it changes sign)."""
        return lambda sim: float(sim.v[sim.model.v_slice(joint)][k]) if joint in sim.model._joint_index else 0.0

    def _fire_due(self):
        """Run the scheduled events that are due and the watches that trigger; an event counts
        as done only once its action has returned (an interrupt inside it leaves it due)."""
        for s in self._scheduled:
            if not s.done and s.t <= self.t + 0.5 * self.dt:
                if isinstance(s.action, str):             # ours: the change and its mark, whole
                    with _deferred_interrupt():
                        self._resolve(s.action)(*s.args, **s.kwargs)
                        s.done = True
                else:                                     # a user's action may run long: Ctrl-C reaches it
                    self._resolve(s.action)(*s.args, **s.kwargs)
                    s.done = True
        for w in self._watches:
            if w.fired and w.once:
                continue
            val = w.condition(self)
            if isinstance(val, (bool, np.bool_)):
                hit = bool(val) and not bool(w.last)
            else:
                val = float(val)
                hit = w.last is not None and (w.last > 0) != (val > 0) and w.last != 0
            if hit:
                with _deferred_interrupt() if isinstance(w.action, str) else contextlib.nullcontext():
                    self._resolve(w.action)(*w.args, **w.kwargs)
                    w.fired = True
                w.last = w.condition(self)
            else:
                w.last = val

    # ------------------------------------------------------------------------------ run
    def step(self, dt: float | None = None) -> None:
        """One step of ``dt`` (default the simulation's; ``run`` takes a shorter last step to
        end exactly at its time), then the events that are due."""
        if dt is not None and (isinstance(dt, (bool, np.bool_)) or not isinstance(dt, (int, float, np.integer, np.floating))
                               or not (dt > 0 and math.isfinite(dt))):
            raise ValueError(f"step: dt must be a positive finite number (time runs forward), got {dt!r}")
        h = self.dt if dt is None else float(dt)
        self.tau = self._torque()
        w0 = self._uni.work if self._uni is not None else 0.0
        j0 = self._uni.joint_loss if self._uni is not None else 0.0
        lost = []                               # the joints' damping and friction loss of the step
        try:
            if self.constraints:
                if self._uni is not None:
                    raise NotImplementedError("constraints together with joint limits or contacts are not supported "
                                              "yet: pass limits=False, contacts=False")
                from ..constraints import constrained_dynamics
                m, tau, cons, bg = self.model, self.tau, self.constraints, self.baumgarte
                q, v = self._step(m, self.q, self.v, tau, h,
                                  accel=lambda q_, v_: constrained_dynamics(m, q_, v_, tau, cons, bg).qdd,
                                  dissipation=lost)
                events = []
            elif self._uni is not None:
                q, v, events = self._uni.step(self.q, self.v, self.tau, h, self.t)
            else:
                q, v = self._step(self.model, self.q, self.v, self.tau, h, dissipation=lost)
                events = []
        except ContactSolverError:
            raise                   # says itself where and why; the step is not taken
        except (ValueError, FloatingPointError, np.linalg.LinAlgError) as exc:
            # a finite state whose step fails inside (an RK4 stage went non-finite, a matrix lost
            # its rank, the loops flew apart) is a blow-up: say so, where, and keep the recording
            if not (np.isfinite(self.q).all() and np.isfinite(self.v).all() and np.isfinite(self.tau).all()):
                raise
            raise FloatingPointError(self._blow_up_message(h, f"{type(exc).__name__}: {exc}")) from exc
        if not (np.isfinite(q).all() and np.isfinite(v).all()):
            raise FloatingPointError(self._blow_up_message(h, "the state became non-finite"))
        dw = float(self.tau @ difference(self.model, self.q, q)) if self.tau.any() else 0.0
        dw -= sum(lost) + (self._uni.joint_loss - j0 if self._uni is not None else 0.0)
        with _deferred_interrupt():                               # the step is taken whole or not at all
            self.recording.events.extend(events)
            self._work[0] += dw
            if self._uni is not None:
                self._work[1] += self._uni.work - w0
                self._watch(q, self._uni.work - w0)
            self.q, self.v = q, v
            if dt is None:
                self._steps += 1
                self.t = self._t_start + self._steps * self.dt    # no drift from summing dt
            else:
                self.t += h
                self._t_start, self._steps = self.t, 0            # a shorter step: count from here
        if self._steps % self.record_every == 0:
            self._record()
        self._fire_due()

    def _run_compiled(self, limit):
        """Up to ``limit`` steps of dt in one compiled call (``TimeStepping.run``), for a tree or a
        closed chain under time stepping with no controller, no constraints and no watches, up to the next recorded
        sample or scheduled action; the call stops before any step with a projection or an
        error, which ``step`` then takes (the impacts' events are recorded here).  What ``step`` books per step (the ledger, the
        running extremes, the time) is booked for the steps taken.  Returns how many (0: none)."""
        uni = self._uni
        if (uni is None or not getattr(uni, "_compiled", False) or self.controller is not None or self.constraints
                or self._watches):
            return 0
        every = self.record_every
        chunk = min(limit, max(RUN_CHUNK, every))
        due = [s.t for s in self._scheduled if not s.done]
        if due:                                 # stop at the step after which the next action is due
            chunk = min(chunk, max(0, math.ceil((min(due) - 0.5 * self.dt - self._t_start) / self.dt - self._steps)))
        if chunk < 1:
            return 0
        tau = np.zeros(self.model.nv)
        rec = uni.recorder(max(RUN_CHUNK, every) // every, every, self._steps % every)
        q, v, k, x, events = uni.run(self.q, self.v, tau, self.dt, chunk, self._t_start + self._steps * self.dt, rec)
        if not k:
            return 0
        if not (np.isfinite(q).all() and np.isfinite(v).all()):
            raise FloatingPointError(self._blow_up_message(self.dt, "the state became non-finite"))
        with _deferred_interrupt():                           # the steps are taken whole or not at all
            e = self.recording.extremes
            for key in ("limit_violation", "penetration", "max_cone_ratio", "max_step_contact_work"):
                e[key] = max(e[key], x[key])
            e["min_normal_force"] = min(e["min_normal_force"], x["min_normal_force"])
            e["steps"] += k
            e["force_steps"] += int(x["force_steps"])
            self.recording.events.extend(events)          # the call's impacts, in order
            work0 = self._work.copy()
            self._work[0] += x["tau_work"] - x["joint_loss"]
            self._work[1] += x["contact_work"]
            self.q, self.v, self.tau = q, v, tau
            steps0 = self._steps
            self._steps += k
            self.t = self._t_start + self._steps * self.dt
            self._record_samples(rec, steps0, work0)
        if self._steps % self.record_every == 0:
            self._record()
        self._fire_due()
        return k

    def _record_samples(self, rec, steps0, work0):
        """Append the samples a compiled call recorded (``TimeStepping.recorder``): the fields
        ``_record`` would have taken at each, the state's from the call's buffers (copied once per
        call: each sample's arrays are rows of those copies; the energies and contact points
        computed by the kernel at the sample); every field's list extended at once (all or none,
        as ``_append``)."""
        ctl, S, Q, V, F, G, W, GO, GI, GX, P, E = rec
        m, seg = self.model, self._segment
        n = int(ctl[2])
        j0 = 0
        t = [self._t_start + (steps0 + int(k)) * self.dt for k in S[:n]]
        if n and seg.t and seg.t[-1] == t[0]:       # (the call's times increase: only its first may repeat)
            j0 = 1
        cnt = n - j0
        if cnt <= 0:
            return
        q, v = Q[j0:n].copy(), V[j0:n].copy()
        work = np.repeat(work0[None, :], cnt, axis=0)
        work[:, :2] += W[j0:n]
        tau = np.zeros((cnt, m.nv))
        kin, pot = E[j0:n, 0].tolist(), E[j0:n, 1].tolist()           # (the kernel's, as _energy_pair's)
        cols = {"t": t[j0:], "q": list(q), "v": list(v), "tau": list(tau), "kinetic": kin, "potential": pot,
                "work": list(work)}
        if m.nloops:
            rows = [_loop_fields(m, q[j], v[j], tau[j]) for j in range(cnt)]
            for i, (name, _) in enumerate(rows[0]):
                cols[name] = [row[i][1] for row in rows]
        else:                       # a tree: _loop_fields' constants (one empty array shared: it holds nothing)
            cols["loop_error"] = [0.0] * cnt
            cols["loop_forces"] = [np.zeros((0, 6))] * cnt
        cols["unit_force"] = list(F[j0:n].copy())
        cols["unit_gap"] = list(G[j0:n].copy())
        cols["unit_point"] = list(P[j0:n].copy())         # (the kernel's, as cat.points gives them)
        if seg.geom_names:
            o = GO[j0:n + 1] - GO[j0]
            gi, gx = GI[GO[j0]:GO[n]].copy(), GX[GO[j0]:GO[n]].copy()
            cols["geom_pair"] = [gi[o[j]:o[j + 1]] for j in range(cnt)]
            cols["geom_force"] = [gx[o[j]:o[j + 1], 6:9] for j in range(cnt)]
            cols["geom_point"] = [gx[o[j]:o[j + 1], 0:3] for j in range(cnt)]
            cols["geom_normal"] = [gx[o[j]:o[j + 1], 3:6] for j in range(cnt)]
        lists = [getattr(seg, name) for name in cols]
        before = len(seg.t)
        try:
            for lst, vals in zip(lists, cols.values()):
                lst.extend(vals)
        except BaseException:
            for lst in lists:
                del lst[before:]
            raise

    def _watch(self, q, contact_work):
        """Update the recording's running extremes (``Recording.extremes``) with the step just
        taken: the gaps at its end, the forces of its contacts and limits, the energy they put in
        (time stepping: ``_timestep_kernel.step_extremes``, as its compiled run sums them)."""
        x, uni = self.recording.extremes, self._uni
        gaps = uni.gaps_after(q)
        f = uni.step_forces()
        geoms = getattr(uni, "geoms", None)
        if geoms is not None:           # geom contacts vary in number: they are seen here, not in the samples
            gmin, gf, gmu, _ = uni.geom_step(names=False)
            gf, gmu = np.ascontiguousarray(gf, dtype=float), np.ascontiguousarray(gmu, dtype=float)
        else:
            gmin, gf, gmu = np.inf, np.zeros((0, 3)), np.zeros(0)
        ext = self._ext
        _step_extremes(gaps, uni.catalog.is_limit, float(gmin), np.zeros((0, 3)) if f is None else f,
                       uni.catalog.unit_mu, gf, gmu, ext)
        lim, pen, fmin, ratio = ext.tolist()
        if f is not None and (len(f) or geoms is not None):
            x["force_steps"] += 1
            x["min_normal_force"] = min(x["min_normal_force"], fmin)
            x["max_cone_ratio"] = max(x["max_cone_ratio"], ratio)
        x["limit_violation"] = max(x["limit_violation"], lim)
        x["penetration"] = max(x["penetration"], pen)
        x["max_step_contact_work"] = max(x["max_step_contact_work"], float(contact_work))
        x["steps"] += 1

    def _blow_up_message(self, h, what):
        return (f"the simulation blew up in the step from t = {self.t:.6g} s (step {self._steps + 1} of "
                f"dt = {h:g} s; largest |v| before it: {np.abs(self.v).max():.3g}, largest |tau|: "
                f"{np.abs(self.tau).max():.3g}): {what}.  The motion is too fast or too stiff for the step "
                "(a stiff controller, huge torques, a singular configuration); the recording keeps the run so far")

    def run(self, until: float, progress: bool | None = None) -> Recording:
        """Step until time ``until``, exactly: whole steps of ``dt``, then a shorter last one for
        what is left.  ``progress``: show a progress bar (tqdm; default: when the run is longer
        than 2 000 steps).  Ctrl-C stops the run (saying so), keeps what was recorded and leaves
        the simulation ready to go on."""
        if isinstance(until, (bool, np.bool_)) or not isinstance(until, (int, float, np.integer, np.floating)) \
                or not math.isfinite(until) or until < self.t:
            raise ValueError(f"until: expected a time after the present {self.t:.6g}, got {until!r}")
        self._fire_due()
        n = int(math.floor((until - self.t) / self.dt + 1e-9))
        rest = until - (self.t + n * self.dt)
        last = rest if rest > 1e-9 * self.dt else 0.0
        total = n + (last > 0)
        want_bar = progress or (progress is None and n > 2000)
        bar = None
        notices = _kernels._CompileNotice
        printer = notices.printer
        held = _held_interrupts()
        try:
            held.__enter__()
            i = 0
            while i < total:
                if i < n:
                    k = 0 if want_bar and i == 0 else self._run_compiled(n - i)     # (the first alone: the bar)
                    if not k:                   # ordinary steps, many in one compiled call, or one step
                        self.step()
                        k = 1
                else:
                    self.step(last)
                    k = 1
                i += k
                if bar is not None:
                    bar.update(k)
                elif want_bar and i < total:
                    # the bar starts after the first step, which compiles the step's kernels on a
                    # cold cache (its notice on a line of its own, seconds to a minute that would
                    # make the bar's first estimate of the time left absurd); a later compile's
                    # notice is written above the bar
                    bar = _progress_bar(total, i, until)
                    if bar is not None:
                        notices.printer = functools.partial(bar.write, file=bar.fp)
        except KeyboardInterrupt:
            msg = f"interrupted at t = {self.t:.4f} s; the recording keeps the run so far"
            if bar is not None:
                bar.write(msg)
            else:
                import sys
                print(msg, file=sys.stderr)
        finally:
            held.__exit__(None, None, None)
            notices.printer = printer
            if bar is not None:
                bar.close()
            self._record()
        return self.recording

    # --------------------------------------------------------------------------- output
    def save(self, path: str | os.PathLike[str]) -> Path:
        """The recording as an ``.npz`` (see :meth:`Recording.save`); returns the path written."""
        return self.recording.save(path)

    def animate(self, path: str | os.PathLike[str], **kwargs: Any) -> AnimationInfo | Path:
        """Write an animation of the run: ``.html`` is the interactive 3-D viewer
        (:func:`linkdyn.viz.view`, keyword arguments go to it; returns the path written),
        ``.gif`` or ``.mp4`` a matplotlib movie (:func:`linkdyn.viz.animate`)."""
        if Path(path).suffix.lower() in (".html", ".htm"):
            return self.view(**kwargs).save(path)
        from ..viz import animate
        return animate(self.recording, path, **kwargs)

    def view(self, **kwargs: Any) -> Viewer:
        """The run in the interactive 3-D viewer (:func:`linkdyn.viz.view`): shows inline in
        Jupyter; ``.save("run.html")`` writes a page that opens offline."""
        from ..viz import view
        return view(self.recording, **kwargs)

    def plot(self, path: str | os.PathLike[str], **kwargs: Any) -> Path:
        """Write plots of joint angles, energy, loop errors, constraint forces and impulses."""
        from ..viz import plot_run
        return plot_run(self.recording, path, **kwargs)

    def __repr__(self):
        return (f"<Simulation t={self.t:.4f} s, model {self.model.name!r} ({self.model.nloops} loops), "
                f"{len(self.recording.events)} events>")


def _progress_bar(total, done, until):
    """A tqdm bar of ``total`` steps of which ``done`` are taken (None without tqdm)."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    import sys
    return tqdm(total=total, initial=done, unit="step", desc=f"simulating to t = {until:g} s", leave=False,
                file=sys.stderr)
