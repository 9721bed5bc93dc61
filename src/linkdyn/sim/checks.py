"""The checks a reviewer asks of a simulation, from its recording, each against a tolerance.

``check(recording)`` measures, over every recorded sample of every segment and over every step
(the running extremes the simulation keeps as it steps, ``Recording.extremes``: a violation
between two samples is not missed):

* the largest limit violation (rad or m): how far any joint went past a limit
  (coordinate limits and ball-joint swing/twist cones, the recording's limit units);
* the smallest normal force (N) of any contact or limit: negative would be a pull;
* the deepest penetration (m) of a contact point into a plane (within the plane's extent);
* the largest friction force over its cone (|f_t| / (mu f_n); above 1 is outside Coulomb's cone);
* the most energy an impact added (an impact or a connection that raises the kinetic energy is a
  failure, whatever the ledger says) and the most the contacts and limits put in within one step;
* the largest loop error (the closures of the closed chains);
* the energy ledger: E(t) - E(0) against the work recorded by ``Simulation.work``
  (the joints: actuators less joint damping and friction; limits and contacts including impacts
  and friction; structure changes); what is
  left is the integrator's error, given relative to the energy moved in the run (the largest
  kinetic energy plus the range of the potential energy plus the work done).  The event
  scheme (RK4, impacts located) closes it to round-off and the RK4 error; time stepping is a
  first-order scheme (its free fall alone gains g^2 h t / 2 per unit mass), so its tolerance is
  looser and says so: 2 % of the energy moved, or in proportion to the step above 5 ms.

Each :class:`Check` has its value, tolerance and whether it passed; ``Checks.ok`` is all of
them, ``str(checks)`` a table (``linkdyn demo`` prints it and exits non-zero on a failure).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..recording import Recording

#: tolerances (the issue's "done when": limits 1e-4 rad, no pull below -1e-9 N, 1 mm, 1e-6)
LIMIT_TOL = 1e-4
FORCE_TOL = -1e-9
PENETRATION_TOL = 1e-3
LOOP_TOL = 1e-6
#: friction inside its cone, to round-off
CONE_TOL = 1.0 + 1e-6
#: an impact adds no energy: at most this fraction of the energy moved in the run (round-off)
IMPACT_TOL = 1e-9
ENERGY_TOL = {"events": 1e-6, "timestep": 2e-2}
#: time stepping's tolerance grows with its step above 5 ms, as a first-order error does: at least
#: TIMESTEP_TOL_RATE * h (h in s; 2 % at 5 ms).  Measured on dm_control's cheetah, passive for 3 s:
#: residual 0.011, 0.020, 0.025 at h = 2.5, 5, 10 ms
TIMESTEP_TOL_RATE = 4.0
#: the ledger's residual is relative to the energy moved in the run, at least this (J): a run in which
#: nothing moves (a model standing in balance) is judged by its absolute residual, not by 0 / 0
ENERGY_FLOOR = 1e-9


@dataclass
class Check:
    name: str
    value: float
    tolerance: float
    unit: str
    ok: bool
    note: str = ""

    def __str__(self):
        op = ">=" if self.name == "smallest normal force" else "<="
        mark = "ok  " if self.ok else "FAIL"
        return f"{mark} {self.name:<28}{self.value:>12.3g} {self.unit:<4} ({op} {self.tolerance:g}){'  ' + self.note if self.note else ''}"


class Checks(list):
    """A list of :class:`Check`; ``ok`` when every one passed."""

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self)

    def __getitem__(self, key):
        if isinstance(key, str):
            for c in self:
                if c.name == key:
                    return c
            raise KeyError(key)
        return super().__getitem__(key)

    def __str__(self):
        return "\n".join(str(c) for c in self)


def _is_contact(name: str) -> bool:
    return "/" in name                      # contact units are "point/plane", limits "joint.lower", ...


def energy_residual(recording):
    """(t, residual, scale): E(t) - E(0) - (work(t) - work(0)) at every sample of the run, and
    the energy moved in it (largest kinetic energy + range of the potential + the work done)."""
    segs = [s.arrays() for s in recording.segments if len(s.t)]
    t = np.concatenate([a["t"] for a in segs])
    K = np.concatenate([a["kinetic"] for a in segs])
    P = np.concatenate([a["potential"] for a in segs])
    W = np.concatenate([a["work"] for a in segs])
    E = K + P
    res = E - E[0] - (W - W[0]).sum(axis=1)
    scale = float(np.nanmax(K) + np.ptp(P) + np.abs(W[-1] - W[0]).sum())
    return t, res, max(scale, ENERGY_FLOOR)


def check(recording: Recording, contact_method: str = "events", energy_tol: float | None = None,
          dt: float | None = None) -> Checks:
    """The checks of a run (module docstring); ``contact_method`` the scheme that made it and
    ``dt`` its time step (they set the energy tolerance unless ``energy_tol`` is given)."""
    limit, force, pen, loop, cone = 0.0, np.inf, 0.0, 0.0, 0.0
    for seg in recording.segments:
        if not len(seg.t):
            continue
        a = seg.arrays()
        loop = max(loop, float(np.nanmax(a["loop_error"])))
        names = list(seg.unit_names)
        if not names:
            continue
        gap, f = a["unit_gap"], a["unit_force"]
        lim = np.array([not _is_contact(n) for n in names])
        g_l, g_c = gap[:, lim], gap[:, ~lim]
        if g_l.size:
            limit = max(limit, float(np.max(-g_l[np.isfinite(g_l)], initial=0.0)))
        if g_c.size:
            pen = max(pen, float(np.max(-g_c[np.isfinite(g_c)], initial=0.0)))
        force = min(force, float(np.nanmin(f[:, :, 0])))
    ex = getattr(recording, "extremes", None) or {}
    steps = int(ex.get("steps", 0))
    fsteps = int(ex.get("force_steps", 0))
    if steps:                                  # every step, not only the samples
        limit = max(limit, ex["limit_violation"])
        pen = max(pen, ex["penetration"])
    if fsteps:
        force = min(force, ex["min_normal_force"])
        cone = max(cone, ex["max_cone_ratio"])
    force = 0.0 if not np.isfinite(force) else force
    seen = f"at every step ({steps})" if steps else "at the recorded samples"
    fseen = f"at every step ({fsteps})" if fsteps else "at the recorded samples"
    out = Checks()
    out.append(Check("largest limit violation", limit, LIMIT_TOL, "rad", limit <= LIMIT_TOL, seen))
    out.append(Check("smallest normal force", force, FORCE_TOL, "N", force >= FORCE_TOL, fseen))
    out.append(Check("deepest penetration", pen, PENETRATION_TOL, "m", pen <= PENETRATION_TOL, seen))
    if fsteps:
        out.append(Check("largest friction / its cone", cone, CONE_TOL, "", cone <= CONE_TOL, fseen))
    out.append(Check("largest loop error", loop, LOOP_TOL, "", loop <= LOOP_TOL))
    _, res, scale = energy_residual(recording)
    gained = [(-e.energy_loss, e) for e in recording.events
              if e.kind in ("impact", "connect") and np.isfinite(e.energy_loss)]
    worst, ev = max(gained, key=lambda x: x[0]) if gained else (0.0, None)
    worst = max(worst, 0.0)
    note = f"({ev.kind} at t = {ev.t:.4g} s, {ev.name})" if ev is not None and worst > 0.0 else ""
    tol = IMPACT_TOL * (scale if np.isfinite(scale) else 1.0)
    out.append(Check("most energy an impact added", worst, tol, "J", worst <= tol, note))
    if np.isnan(res).all():
        out.append(Check("energy ledger residual", np.nan, np.nan, "", True, "not recorded"))
        return out
    rel = float(np.nanmax(np.abs(res))) / scale
    tol = ENERGY_TOL.get(contact_method, 1e-6) if energy_tol is None else energy_tol
    note = f"of {scale:.4g} J moved"
    if contact_method == "timestep" and energy_tol is None:
        if dt is not None and TIMESTEP_TOL_RATE * dt > tol:
            tol = TIMESTEP_TOL_RATE * dt
            note += f"; time stepping is first order, the tolerance in proportion to its {dt * 1e3:.3g} ms step"
        else:
            note += "; time stepping is first order"
    out.append(Check("energy ledger residual", rel, tol, "", rel <= tol, note))
    return out
