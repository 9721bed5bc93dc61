"""One simulation step with joint limits and contacts (event-driven, events located in time).

A step of dt from (q, v):

1. the units at their boundary (phi <= ``GAP_TOL``) that approach (phi' < -``V_TOL``) get an
   impact: the impulse problem of ``linkdyn.contact.impulse`` on every unit at the boundary
   (restitution where the approach is faster than ``V_BOUNCE``, so bouncing ends);
2. the units at the boundary that do not separate are *active*: between events the motion is
   RK4 on the configuration manifold with the acceleration of
   ``linkdyn.contact.acceleration`` (contact and limit forces from the acceleration-level
   complementarity problem; a force that would pull is zero and the unit separates);
   each contact's mode is fixed for the piece: it slides (friction -mu lambda_n against the
   slip's direction at the piece's start) when its slip is faster than
   ``linkdyn.contact.dynamics.V_SLIDE``, else its friction is a variable (it sticks, or starts
   to slip on the rim of its cone) and a slow leftover slip decays; a slide that slows below
   V_SLIDE sticks from the next piece on;
3. if an inactive unit's gap crosses zero inside the step, the first such time is located
   (Illinois regula falsi on the step length, each trial an RK4 step from the start), the
   step is taken up to it and the rest of the step goes on from there (back to 1.); a slow
   and shallow touch (slower than V_REPORT, less than PEN_LOCATE deep at the step's end) is
   not located but taken up by the correction of 4. (a resting body's contacts come and go
   by micrometres; locating each would cost eight RK4 trials);
4. after every piece: the loops are closed, penetrations and limit overshoots are projected
   out (``linkdyn.contact.position_correction``) and the active units' approach velocities
   are removed by an inelastic impulse, so nothing drifts.

References: the event-driven scheme of Pfeiffer and Glocker (1996), "Multibody Dynamics with
Unilateral Contacts"; the located restarts of Hairer, Norsett and Wanner's dense-output
event location, done here by re-stepping.
"""
from __future__ import annotations

import numpy as np

from ..contact import dynamics as cd
from ..contact.rows import CONTACT, UnitCatalog
from ..model.configuration import integrate
from .steps import project, rk4_step, semi_implicit_euler_step
from ..recording import Event

#: a unit is at its boundary (in contact, at its limit) when its gap is below this (m or rad)
GAP_TOL = 1e-6
#: ... and it approaches (an impact) when its gap rate is below -V_TOL (m/s or rad/s); slower
#: approaches are taken up by the velocity correction after the step (an inelastic touch), and a
#: unit that separates slower than V_TOL stays active (its force is zero while it separates)
V_TOL = 1e-3
#: restitution applies only to impacts faster than this (m/s or rad/s); slower ones are inelastic
V_BOUNCE = 1e-2
#: impacts slower than this (m/s or rad/s: a resting or rocking body touching down again) are
#: resolved all the same but not listed as events; ``stats`` counts them and their energy
V_REPORT = 1e-2
#: a unit that crosses its boundary inside a step slower than V_REPORT and ends it less than
#: this deep (m or rad) is not located: the step's correction takes it up (an inelastic touch)
PEN_LOCATE = 1e-5
#: penetrations and limit overshoots are projected out to this (m or rad)
POS_TOL = 1e-12
#: event location: stop when the located gap is within this (m or rad) or the bracket is this small (s)
LOC_TOL, LOC_DT = 1e-10, 1e-12


def _energy(model, q, v):
    from ..dynamics.energy import kinetic_energy, potential_energy
    return float(kinetic_energy(model, q, v)) + float(potential_energy(model, q))


class Unilateral:
    """The limits and contacts of one model in a simulation (rebuilt on a structure change)."""

    def __init__(self, model, limits=True, contacts=True, integrator="rk4"):
        self.model = model
        self.catalog = UnitCatalog(model, limits=limits, contacts=contacts)
        self._step = rk4_step if integrator == "rk4" else semi_implicit_euler_step
        self.warm = {}
        self.last = None               # the last acceleration-level Solution (for recording)
        self.stats = {"impacts": 0, "small_impacts": 0, "small_impact_energy": 0.0, "located": 0, "touches": 0, "pieces": 0}
        #: the energy (J) the limit and contact forces have put in so far (negative: taken):
        #: impacts, the approach velocities removed by ``correct``, the power of the forces of
        #: held units over each piece (sliding friction; trapezoidal), and the potential energy
        #: the projections out of penetrations change
        self.work = 0.0
        self.joint_loss = 0.0         # energy the joints' damping and friction took (J)

    @property
    def empty(self):
        return self.catalog.empty

    # ------------------------------------------------------------------------------------
    def _accel_fn(self, tau, active, slide):
        """The acceleration through a piece: the active units and each contact's stick/slide
        mode fixed at the piece's start (a mode that changes inside the piece is an event)."""
        model, cat = self.model, self.catalog

        def accel(q, v):
            units = cat.units(q, v, active, with_drift=True)
            sol = cd.acceleration(model, q, v, tau, units, warm=self.warm, slide=slide)
            self.last = sol
            return sol.value
        return accel

    def unit_forces(self, q, v, tau):
        """(size, 3) contact and limit forces at (q, v) (normal, two tangents), catalog order:
        the acceleration-level solution with the units at their boundary active."""
        force = np.zeros((self.catalog.size, 3))
        active = self._active(q, v)
        if len(active):
            units = self.catalog.units(q, v, active, with_drift=True)
            force[active] = cd.acceleration(self.model, q, v, tau, units, warm=self.warm).force
        return force

    def gaps_after(self, q):
        """The gaps at q (the end of the last step)."""
        return self.catalog.gaps(q)

    def step_forces(self):
        """None: the event scheme solves its forces at the acceleration level inside its pieces
        and keeps none per step; the recorded samples carry them (``unit_forces``)."""
        return None

    def _near(self, q):
        gaps = self.catalog.gaps(q)
        return np.flatnonzero(gaps <= GAP_TOL), gaps

    def _active(self, q, v):
        near, _ = self._near(q)
        if len(near) == 0:
            return near
        units = self.catalog.units(q, v, near)
        return near[units.N @ v <= V_TOL]

    # ------------------------------------------------------------------------------------
    def impact(self, q, v, t):
        """An impact on the units at their boundary that approach; returns (v, event or None)."""
        near, _ = self._near(q)
        if len(near) == 0:
            return v, None
        units = self.catalog.units(q, v, near)
        vn = units.N @ v
        if not np.any(vn < -V_TOL):
            return v, None
        units.e = np.where(vn < -V_BOUNCE, units.e, 0.0)
        sol = cd.impulse(self.model, q, v, units, restitution=True)
        from ..dynamics.energy import kinetic_energy
        k0 = float(kinetic_energy(self.model, q, v))
        v1 = v + sol.value
        k1 = float(kinetic_energy(self.model, q, v1))
        self.work += k1 - k0
        hit = [units.name[u] for u in np.flatnonzero(vn < -V_TOL)]
        if not np.any(sol.force):               # the others' impulses already stopped it
            return v1, None
        self.stats["impacts"] += 1
        if -vn.min() < V_REPORT:                # a resting or rocking body touching again
            self.stats["small_impacts"] += 1
            self.stats["small_impact_energy"] += k0 - k1
            return v1, None
        ev = Event(t, "impact", ", ".join(hit), sol.force.copy(), sol.value.copy(), k0, k1,
                   note=f"{len(units)} units at their boundary: " + ", ".join(units.name),
                   units=list(units.name), loop_impulse=sol.loop_impulse.copy())
        return v1, ev

    def correct(self, q, v, active=None):
        """Close the loops, project penetrations out, remove the approach velocity of the units
        in ``active`` (catalog indices; default: every unit at its boundary)."""
        model, cat = self.model, self.catalog
        q_in, v_in = q, v
        for _ in range(5):
            gaps = cat.gaps(q)
            if gaps.min(initial=np.inf) >= -POS_TOL:
                break
            units = cat.units(q, None, np.flatnonzero(gaps <= GAP_TOL))
            q = integrate(model, q, cd.position_correction(model, q, units))
            if model.nloops:
                q, v = project(model, q, v)
        near, gaps = self._near(q)
        if active is not None and len(near):
            near = np.intersect1d(near, active)
        if len(near):
            units = cat.units(q, v, near)
            if np.any(units.N @ v < 0.0):
                units.e = np.zeros(len(units))
                v = v + cd.impulse(model, q, v, units, restitution=False).value
        if q is not q_in or v is not v_in:
            self.work += _energy(model, q, v) - _energy(model, q_in, v_in)
        return q, v

    def _power(self, q, v, tau, active, slide):
        """The power (W) of the forces of the held units ``active`` at (q, v)."""
        units = self.catalog.units(q, v, active, with_drift=True)
        sol = cd.acceleration(self.model, q, v, tau, units, warm=self.warm, slide=slide)
        f = sol.force
        return float(f[:, 0] @ (units.N @ v) + np.einsum("kj,kjn,n->", f[:, 1:], units.T, v))

    # ------------------------------------------------------------------------------------
    def _event_values(self, q, v, watch_gap, watch_slip):
        """Event functions (positive at the start of the piece) at (q, v)."""
        vals = []
        if len(watch_gap):
            vals.extend(self.catalog.gaps(q)[watch_gap])
        if watch_slip:
            idx = np.array([u for u, _ in watch_slip])
            units = self.catalog.units(q, v, idx)
            for k, (_, d) in enumerate(watch_slip):
                vals.append(float(d @ (units.T[k] @ v)))
        return np.array(vals)

    def step(self, q, v, tau, dt, t):
        """One step of dt from time t; returns (q, v, events)."""
        model, cat = self.model, self.catalog
        events = []
        remaining = dt
        for _ in range(64):
            if remaining <= LOC_DT:
                break
            near, gaps0 = self._near(q)
            if len(near):                       # (nothing at its boundary: nothing to strike or hold)
                v, ev = self.impact(q, v, t + (dt - remaining))
                if ev is not None:
                    events.append(ev)
                active = self._active(q, v)
            else:
                active = near
            watch_gap = np.flatnonzero(np.isfinite(gaps0) & (gaps0 > GAP_TOL))     # (not ``near``)
            watch_slip = []
            slide = [False] * len(active)
            if len(active):
                units = cat.units(q, v, active)
                for k, u in enumerate(active):
                    if units.kind[k] == CONTACT and units.mu[k] > 0:
                        slip = units.T[k] @ v
                        if np.hypot(*slip) > cd.V_SLIDE:
                            slide[k] = slip / np.hypot(*slip)
                            watch_slip.append((u, slide[k]))     # a slide that stops is an event
            accel = self._accel_fn(tau, active, slide) if len(active) else None

            diss = {}                           # h -> the joints' friction loss of that trial

            def trial(h, q=q, v=v):
                lost = []
                out = self._step(model, q, v, tau, h, accel=accel, project_loops=False, dissipation=lost)
                diss[h] = lost[0]
                return out
            q1, v1 = trial(remaining)
            self.stats["pieces"] += 1
            p0 = self._power(q, v, tau, active, slide) if len(active) else 0.0
            f1 = self._event_values(q1, v1, watch_gap, watch_slip)
            h = remaining
            touched = active
            fg, fs = f1[:len(watch_gap)], f1[len(watch_gap):]
            if len(fs) and fs.min() < -LOC_TOL:
                # a sliding contact's slip went through zero: its friction, held along the slip's
                # first direction, would push it the other way (doing work); stop the piece there
                h, q1, v1 = self._locate(trial, remaining, q, v, watch_gap, watch_slip)
                self.stats["located"] += 1
            elif len(fg) and fg.min() < -LOC_TOL:
                crossed = watch_gap[fg < -LOC_TOL]
                vn = cat.units(q1, v1, crossed).N @ v1
                if fg.min() < -PEN_LOCATE or vn.min() < -V_REPORT:
                    h, q1, v1 = self._locate(trial, remaining, q, v, watch_gap, watch_slip)
                    self.stats["located"] += 1
                else:                           # a slow, shallow touch: taken up by the correction
                    touched = np.union1d(active, crossed)
                    self.stats["touches"] += 1
            self.joint_loss += diss[h]
            if len(active):
                self.work += 0.5 * h * (p0 + self._power(q1, v1, tau, active, slide))
            if model.nloops:
                q1, v1 = project(model, q1, v1)
            q, v = self.correct(q1, v1, touched)
            remaining -= h
        return q, v, events

    def _locate(self, trial, H, q0, v0, watch_gap, watch_slip):
        """The first time in (0, H] at which an event function reaches zero (Illinois)."""
        f0 = self._event_values(q0, v0, watch_gap, watch_slip)
        a, fa = 0.0, float(f0.min()) if len(f0) else 1.0
        fa = max(fa, 0.0) if fa < 0 else fa
        b = H
        qb, vb = trial(b)
        fb = fb_val = float(self._event_values(qb, vb, watch_gap, watch_slip).min())
        side = 0
        for _ in range(60):
            if b - a <= LOC_DT or -LOC_TOL <= fb_val <= 0.0:
                break
            c = b - fb * (b - a) / (fb - fa) if fb != fa else 0.5 * (a + b)
            if not (a < c < b):
                c = 0.5 * (a + b)
            qc, vc = trial(c)
            fc = float(self._event_values(qc, vc, watch_gap, watch_slip).min())
            if fc < 0.0:
                b, fb, fb_val, qb, vb = c, fc, fc, qc, vc
                if side == -1:
                    fa *= 0.5
                side = -1
            else:
                a, fa = c, fc
                if side == 1:
                    fb *= 0.5
                side = 1
        return b, qb, vb
