"""Joint limits and contacts by velocity-level time stepping: one complementarity problem per step.

The event-driven scheme of ``linkdyn.sim.unilateral`` locates every touch and release inside
the step and integrates between them with RK4; it is exact, and slow when many contacts come
and go (a figure lying or standing on its sole corners).  This scheme is the one of
Stewart and Trinkle (1996) and Anitescu and Potra (1997), which MuJoCo, Bullet and Drake use
in their own forms: each step of h solves for *impulses* P (contacts, limits) such that

    v+ = v + h a_free + Z F P              (a_free: q'' under tau with the loops closed; Z F P the
                                             velocity change the impulses make, loops held)
    0 <= P_n  _|_  n v+ - b >= 0            (per unit: no approach faster than b allows)
    |P_t| <= mu P_n, T v+ = 0 inside the disk, on its rim T v+ opposes P_t   (Coulomb, exact disk)
    q+ = q (+) h v+                          (semi-implicit Euler on the configuration manifold;
                                             free joints on R^3 x SO(3), below)

and, where the joints have viscous damping D, the damping implicit as in MuJoCo's Euler
integrator: a_free and Z are those of M + h D with the damping torque taken at v, i.e.
M (v+ - v) = h (tau - b - D v+) + G^T P (``TimeStepping._implicit``: stable at any damping; the
step once refused dm_control's finger at its own 10 ms for a damping rate of 1500 1/s).

The joints' Coulomb friction (MJCF ``frictionloss``) of a tree is in v_free implicitly: the impulse
|P_d| <= h f_d that leaves v_free closest to the motion without it (``linkdyn.dynamics._friction``), so
a joint whose load is below its friction stays at rest (taken explicitly it chattered, and the
ledger's residual grew by h f^2 (M^-1)_dd / 2 a second); a closed chain and a geared model keep
the torque -f sign(v) explicit.  It is solved before the impulses, not with them (a limit's
impulse can set a joint held by friction creeping at O(h)).

With the bound b of each unit at gap phi:

* phi >= 0: b = -(phi + c) / h, a *speculative* contact: it may approach as far as the gap it
  has left, so a unit is never stopped before it touches, and touches without penetrating
  (the constraint  phi + h n v+ + c >= 0).  c is the curvature of the step: how far the gap
  at the end of the free motion q (+) h v_free misses its linear guess phi + h n v_free (a
  swinging limb's contact point moves on a circle, a box's corner turns about its centre);
  with it a turning body neither sinks in nor is pumped out.  The free motion is a guess: the
  curvature is taken at the motion the warm start's impulses give, and where the answer's own
  motion would still end below a gap of -RELINEARIZE_TOL, at that motion, and solved again
  (GEOM_RELINEARIZE times at most; point contacts and geom contacts alike, not the limits: a
  narrow ball-joint cone's gap is too far from linear over a step);
* phi < 0 (a penetration left over, e.g. at the start): b = -(BETA phi + c) / h, a gentle push
  out; deeper than PEN_PROJECT it is projected out at once (``position_correction``), and where
  the projection cannot (overlaps a joint limit keeps, geoms of an initial state inside each
  other), the step holds it, b = -c / h: no deeper, and no push-out by velocity, whose kinetic
  energy would stay (Baumgarte's push-out of dm_control's robot_arm, its links 19 mm inside
  each other at the start, spun a joint at 117 rad/s in the first step);
* a unit that will touch within the step and approaches faster than
  ``linkdyn.sim.unilateral.V_BOUNCE`` gets Newton's restitution at the touch, not at the step's
  start: b = max(b, vn+) with vn+ the normal velocity whose end of the step has the rebound's
  energy along the normal (``_timestep_kernel.restitution_bound``; e |n v| when nothing
  accelerates the unit).

**Closed chains** take the same step with their loops held: the free motion's q'' is that of the
closed chain (``linkdyn.loops``), the impulses act through Z, the inverse inertia projected onto
the motions the loops allow (``contact.dynamics.Response``: M alone is singular on the massless
cut joints), and after the configuration step (q, v) are put back onto the loops
(``linkdyn.sim.steps.project``: Newton steps on the loop error and the velocity projected, both
in the kinetic-energy metric).  An impact's event reports the impulses each loop took.

The problem is the one ``linkdyn.contact.lcp`` solves (``lcp._step_solve``: Gauss-Seidel
warm-started from the last step, and the polish of its active set; the Python step and the
compiled one call the same function) (A = G Z F, the Delassus matrix of the rows), and it is the velocity-level form of the acceleration problem of
``linkdyn.contact.dynamics``: the reported forces are P / h.  The scheme is first order in h
and dissipates a little (sticking and touching are inelastic); in exchange a step costs one
forward dynamics, one factorization and one small complementarity problem whatever the
contacts do, with no event location.  Units are taken into the problem when their gap is
small at the start or at the predicted end of the step (``CANDIDATE``), so a fast body does
not pass through a plane.

**Free joints move on R^3 x SO(3)** (Mueller and Terze 2014 compare this configuration space
with SE(3) for Lie group integrators): the origin along the straight line p + h R v_lin, the
orientation R exp(h w), and the body-frame linear velocity is carried into the new frame,
exp(-h w) v_lin; the free motion's linear part is then the origin's classical acceleration
(the spatial one plus w x v, Featherstone 2008 sec. 2.11).  A free flight keeps its momentum and
energy exactly.  SE(3)'s exponential moves a constant body twist along a screw, and the
Coriolis term -w x v of the body-frame velocity, taken by explicit Euler, grew its length by
(w h)^2 per step: a sphere rolling at 2 m/s (w = 20 rad/s) gained 40 % of its energy per
second.  Other joints, and a geared model's reduced coordinates, move by the manifold's
exponential as before.

**Collision geometry** (``ModelBuilder.add_geom``): the model's candidate geom pairs join each
step's problem, but for the sphere-plane pairs that point contacts describe already
(``add_contact``, ``add_plane``; an MJCF file loads its spheres and planes as both: the two would
count one touch twice; ``linkdyn.contact.geom_rows.point_pairs``).  They are detected at the step's start
with a margin that covers the step (CANDIDATE plus twice the largest displacement of a geom's
point in the free motion, so a pair that comes within CANDIDATE by the free motion's end is a
candidate, as the catalog's units at either end), made into units by
``linkdyn.contact.geom_rows.GeomCatalog`` (gap, normal and tangent rows, the pair's friction and
restitution), and their curvature c is the distance of the same contact found at the free
motion's end (matched by pair and nearest point; with no match, h^2 / 2 times the normal drift).
Each unit is named ``"geom1/geom2"`` in the events and errors; its warm start is the last step's
impulse of the matched contact, the friction carried as a world vector (the tangents of a
contact turn with its normal).  Geom contacts vary in number from step to step, so the
recording's per-sample unit arrays (``unit_force``, ``unit_gap``) hold the fixed catalog only,
and each sample keeps the geom contacts of the step that ended at it apart (``geom_contacts()``:
``Segment.geom_force``, ``geom_point``, ...); the geom contacts' penetration, normal forces and
cone ratios of every step enter ``Recording.extremes`` (``Simulation.checks`` reads them), and
``geom_step()`` gives the last step's.
"""
from __future__ import annotations


import numpy as np

from ..contact import dynamics as cd
from ..contact import lcp
from ..contact.geom_rows import GeomCatalog, geom_pairs_to_detect, inert_overlaps
from ..contact.rows import CONTACT, UnitCatalog, Units, inert
from ..loops.data import prepare
from .._kernels.passes import OK
from ..model.joints import FREE
from ._timestep_kernel import free_classical as _free_classical, restitution_bound as _restitution_bound
from ._timestep_kernel import impulse_work as _impulse_work_kernel, step_configuration as _step_configuration
from .steps import CLOSURE_TOL, project
from ..recording import Event
from .unilateral import V_BOUNCE, V_REPORT

#: units whose gap is below this (m or rad) at the start or at the free motion's end of a step
#: enter its problem
CANDIDATE = 1e-3
#: a penetration is pushed out at this fraction per step (Baumgarte's stabilization, velocity level)
BETA = 0.2
#: ... and projected out at once when deeper than this (m or rad)
PEN_PROJECT = 1e-5
#: the projection's Newton steps at most, each halved at most this many times until the total
#: overlap falls
PROJECT_ITERS, PROJECT_HALVINGS = 10, 12
#: the impacts a compiled run (``TimeStepping.run``) keeps the data of before it returns: the call goes on
#: through impacts (each an event built afterwards) and ends after the one that fills its buffers
IMPACTS_PER_RUN = 32
#: Gauss-Seidel sweeps per step at most, and its tolerance (``linkdyn.contact.lcp.solve``,
#: exact=False): the forces are always feasible (pushing, inside their cones), complementarity
#: is met to about 1e-6 of the problem's scale (benchmarks/README), far below the scheme's O(h)
LCP_SWEEPS, LCP_TOL = 100, 1e-5
#: where that has not converged (redundant friction rows, e.g. two feet of one rigid body, converge
#: slowly along their null direction): the ADMM fallback (``lcp._admm_fallback``), and where that
#: leaves it above LCP_TOL too, Gauss-Seidel carried on this far at most, with the polish after
#: every ``lcp.FALLBACK_ROUND`` sweeps
FALLBACK_SWEEPS = 20000
#: an answer above LCP_TOL after the Gauss-Seidel fallback is sought again by the conic fallback
#: (``lcp.conic_fallback``); one whose residual is still above this is never applied: the step
#: raises ContactSolverError (the recording so far is kept)
FAIL_TOL = 1e-3
#: solves again with the curvature of the answer's own motion, at most this many times, while that
#: motion would leave a gap below -RELINEARIZE_TOL (m).  Point contacts too: with the free motion's
#: curvature alone, the soles of a figure stepping under a controller at 1 kHz sank up to 37 um and
#: were projected out 12 524 times in 3 900 steps (tests/test_mocap_groundtruth.py); with it, 17 nm
#: and none
GEOM_RELINEARIZE, RELINEARIZE_TOL = 2, 1e-13
#: a closed chain's Newton steps back onto its loops after a step at most (``steps.project``'s
#: max_iter; its tolerance ``steps.CLOSURE_TOL``)
LOOP_NEWTON = 10
#: every step the Python one (``_step_python``), for tests that compare it with the compiled step:
#: read when a TimeStepping is made
_force_python = False


def _geom_buffers(geoms, nbody):
    """The compiled step's geom buffers: the collider's and the rows' (``gk``) and the contacts
    carried from step to step (``gs``: con_i, con_f, impulses, (count, the solver's memo of
    ``lcp._kept_solve``), forces, normal velocities);
    empty ones without geoms (the same types: one compiled step)."""
    i64 = np.int64
    if geoms is None:
        from ..contact.collision._pipeline import cw_size
        gk = (np.zeros((0, 2), i64), np.zeros(0), np.zeros((0, 2), i64), np.zeros(1, i64), np.zeros(cw_size(0)),
              np.zeros(0, i64), np.zeros(nbody), np.zeros((0, 1), i64), np.zeros((0, 1)), np.zeros(0),
              np.zeros((0, 1), i64), np.zeros((0, 1)))
        cap = 0
    else:
        c, r = geoms.collider, geoms.rows
        gk = (c.gi, c.gf, c.pairs, c.adj, c.cw, c.ci, geoms._rho, r.qsrc, r.qscale, r.qoff, r.vsrc, r.vscale)
        gk = tuple(np.array(x, dtype=i64 if np.asarray(x).dtype.kind in "iu" else float, order="C") for x in gk)
        gk = gk[:4] + (c.cw, c.ci) + gk[6:]          # the collider's own scratch (sweep order kept)
        cap = c.maxcon
    gs = (np.zeros((cap, 2), i64), np.zeros((cap, 10)), np.zeros((cap, 4)), np.zeros(3, i64), np.zeros((cap, 3)),
          np.zeros(cap))
    return gk, gs


class TimeStepping:
    """Limits and contacts of one model, stepped by a velocity-level complementarity problem
    per step (module docstring).  Same interface as ``linkdyn.sim.unilateral.Unilateral``."""

    def __init__(self, model, limits=True, contacts=True, integrator="euler", q=None):
        self.model = model
        self.data = prepare(model)                      # the prepared layer: no validation per call
        #: joint damping enters the step implicitly (``_implicit``)
        self.damped = bool(np.any(np.asarray(model.full_model.damping) > 0.0))
        self._hmodel = (None, model, self.data)         # (h, model with armature + h D, its prepared layer)
        self.catalog = UnitCatalog(model, limits=limits, contacts=contacts, data=self.data)
        self.warm = np.zeros((self.catalog.size, 3))    # (P_n, P_t1, P_t2) of the last step, catalog order
        self.force = np.zeros((self.catalog.size, 3))   # forces of the last step, catalog order
        self._gaps = None                               # (q, gaps at q) of the last step's end
        #: the geom contacts (``linkdyn.contact.geom_rows.GeomCatalog``), or None: no candidate geom
        #: pairs but those the point contacts describe (module docstring)
        keep = geom_pairs_to_detect(model, self.catalog.pairs) if contacts else np.zeros(0, dtype=bool)
        #: the geom pairs left out because they overlap at ``q`` (the initial state, when given) at a point no
        #: motion moves (``linkdyn.contact.geom_rows.inert_overlaps``): ("geom1/geom2", depth in m)
        self.inert = []
        if q is not None and keep.any():
            keep, self.inert = inert_overlaps(model, self.data, keep, np.asarray(q, dtype=float))
        self.geoms = GeomCatalog(model, self.data, keep) if keep.any() else None
        #: the last step's geom contacts: forces (n, 3) as [f_n, f_t1, f_t2], names, friction
        #: coefficients; the smallest geom distance at the step's end (inf: none touch)
        self._geom_py = (np.zeros((0, 3)), [], np.zeros(0))      # the Python step's (geom_force, names, mu)
        z = np.zeros((0, 3))
        #: the Python step's geom contacts as recorded (``geom_contacts``)
        self._geom_rec = (np.zeros((0, 2), dtype=np.int64), z, z, z)
        self._gunits, self._gcon = None, None            # the current step's geom units and contacts
        self._geom_end = (None, np.inf)
        self._gprev = None          # the last step's geom contacts and impulses (warm start)
        self._gfresh = False        # the last step was the compiled one (its geom contacts are in _gs)
        self._runargs = None        # run()'s constant arguments, made on its first call
        self._impacts = None        # a compiled run's impacts' data (``run``), allocated once
        #: the compiled step's ledger buffers (its free motion's velocity, the mass matrix), a closed
        #: chain's generalized impulse G^T lam (an event's loop impulses) and the loop solver's scratch
        self._led = (np.empty(model.nv), np.empty((model.nv, model.nv)), np.zeros(model.nv),
                     np.empty((model.nloops, 6)), np.array(model.dof_parent, dtype=np.int64))
        # a tree or a closed chain is stepped by one compiled call, its geom contacts included (a geared
        # model's reduced coordinates take the Python step); ``_force_python`` makes every step the
        # Python one (the tests compare the two)
        self._compiled = model._full is None and not self.empty and not _force_python
        # free joints move on R^3 x SO(3) (module docstring); a geared model's reduced coordinates on the
        # configuration manifold of its joints
        self._free = model._full is None and bool(np.any(np.asarray(model.jnt_type) == FREE))
        if self._compiled:
            from ..contact.swing_twist import _model_balls
            cat = self.catalog
            self._geo = (cat._cbody, cat._cpos, cat._crad, cat._pbody, cat._pR, cat._pp, cat._pext, cat._pair_c,
                         cat._pair_p)
            self._balls = _model_balls(model)
            self._prm = np.array([CANDIDATE, BETA, V_BOUNCE, LCP_SWEEPS, LCP_TOL, FALLBACK_SWEEPS, GEOM_RELINEARIZE,
                                  RELINEARIZE_TOL, CLOSURE_TOL, LOOP_NEWTON, PEN_PROJECT])
            self._gk, self._gs = _geom_buffers(self.geoms, model.nbody)
            #: the compiled single step's scratch: v_mid, vn, info, extra, hit (``_step_compiled``)
            size = cat.size
            self._scratch = (np.empty(model.nv), np.empty(size), np.empty(7), np.zeros(size, dtype=bool),
                             np.zeros(size + self._gs[0].shape[0], dtype=bool))
        #: the contact solver's memo of an active set it could not polish (``lcp._kept_solve``);
        #: the compiled step keeps it in its geom buffers
        self._memo = self._gs[3][1:] if self._compiled else np.zeros(2, dtype=np.int64)
        #: the Python step's problem holds its penetrations (no push-out: ``_step_python``)
        self._hold = False
        #: the current step holds an overlap (``step``: stats["held"] counts such steps)
        self._held_step = False
        #: lcp_residual: the largest residual of an applied answer; lcp_fallbacks: steps whose first
        #: solve missed LCP_TOL; last_residual: the last step's (0 without contact)
        self.stats = {"impacts": 0, "small_impacts": 0, "small_impact_energy": 0.0, "steps_in_contact": 0,
                      "projections": 0, "lcp_residual": 0.0, "lcp_fallbacks": 0, "last_residual": 0.0}
        #: the energy (J) the impulses have put in so far (negative: taken): per step the kinetic
        #: energy from the free motion's velocity to the step's (at the step's start), plus the
        #: potential energy the projections out of penetrations change
        self.work = 0.0
        self.joint_loss = 0.0         # energy the joints' damping and friction took (J)

    @property
    def _lbuf(self):
        """The compiled step's loops: the model's packed loop buffer (its own, taken at each call: a
        TimeStepping keeps no copy of it), None for a tree (``_timestep_kernel``: a compilation of
        its own)."""
        m = self.model
        return m._loop_packed if m.nloops and m._full is None else None

    @property
    def empty(self):
        return self.catalog.empty and self.geoms is None

    def _implicit(self, h):
        """(model, prepared layer) of the step of h: with joint damping D, the model whose
        armature is the armature + h D.  Joint damping is integrated implicitly, as MuJoCo's Euler
        integrator does: M (v+ - v) = h (tau - b(q, v) - D v+) + G^T lam, i.e. the step's mass
        matrix is M + h D with the damping torque taken at v (b includes -D v), and the contact
        impulses meet the same matrix.  Explicit damping needs h d / m < 2 per mode (dm_control's
        finger: dt < 1.3 ms at its 10 ms); this step is stable at any damping, and the damping's
        loss is D v+ . v+ h, as booked."""
        if not self.damped:
            return self.model, self.data
        if self._hmodel[0] != h:
            full = self.model.full_model               # a geared model: its tree's damping, M = G^T M_full G
            m = self.model._with_armature(np.asarray(full.armature) + h * np.asarray(full.damping))
            self._hmodel = (h, m, prepare(m))
        return self._hmodel[1], self._hmodel[2]

    def _v_free(self, q, v, tau, h):
        """The free motion's velocity v + h a_free: a_free of the step's mass matrix (``_implicit``),
        a free joint's linear part its origin's classical acceleration
        (``linkdyn.sim._timestep_kernel.free_classical``: the step moves free joints on R^3 x SO(3)),
        the joints' Coulomb friction taken implicitly for a tree (``linkdyn.dynamics._friction``: as
        the compiled step)."""
        mh, dh = self._implicit(h)
        a = dh.accel(q, v, tau)
        if self._free:
            _free_classical(self.model._mi, v, a)
        v_free = v + h * a
        m = self.model
        if m._full is None and not m.nloops and np.any(np.asarray(m.friction) > 0.0):
            from ..dynamics.cholesky import _ltdl_factor
            from ..dynamics.crba import crba
            from ..dynamics._friction import implicit_friction
            M = np.ascontiguousarray(crba(mh, q))      # the step's matrix (M + h D with damping)
            LD = M.copy()
            if _ltdl_factor(LD, self._led[4]) == OK:
                implicit_friction(M, LD, self._led[4], np.ascontiguousarray(v, dtype=float), float(h),
                                  np.ascontiguousarray(m.friction, dtype=float), v_free)
        return v_free

    def _advance(self, q, v, h):
        """(q+, v+): q moved by v over h and v carried into the new frames of the free joints
        (``linkdyn.sim._timestep_kernel.step_configuration``)."""
        if not self._free:
            return self.data.integrate(q, h * v), v
        q1, v1 = np.empty(self.model.nq), np.empty(self.model.nv)
        if _step_configuration(self.model._mi, q, v, float(h), q1, v1) != OK:
            return self.data.integrate(q, h * v), v        # raises, naming the bad argument
        return q1, v1

    # ------------------------------------------------------------------------------------
    def _solve(self, A, r, kinds, mus, normals, lam):
        """(lam, residual): the step's solve from the warm start lam, and where it stays above
        LCP_TOL (Gauss-Seidel and the polish stalled: redundant contacts sliding), De Saxce's
        fixed point over cone programs (``lcp.conic_fallback``)."""
        lam = np.array(lam, dtype=float)
        res, fell = lcp._kept_solve(np.ascontiguousarray(A), np.ascontiguousarray(r, dtype=float), kinds, mus,
                                    normals, lam, LCP_SWEEPS, LCP_TOL, FALLBACK_SWEEPS, self._memo)
        self.stats["lcp_fallbacks"] += int(fell)
        if not res <= LCP_TOL:
            self.stats["conic_fallbacks"] = self.stats.get("conic_fallbacks", 0) + 1
            lam_c, res_c = lcp.conic_fallback(A, r, kinds, mus, normals, lam)
            if res_c < res:
                lam, res = lam_c, res_c
        return lam, res

    def _problem(self, units, v_free, v, h):
        """The complementarity problem's data: kinds, mu, normal index, rows G (m, nv), the
        bound-shifted r = G v_free - b, and per variable (unit, slot).  An inert unit
        (``contact.rows.inert``: no motion changes its gap) has a zero row, no friction rows and
        r >= 0: it asks for nothing and gets no force (``_bounds`` of the compiled step)."""
        k = len(units)
        still = inert(units.N)
        fr = np.flatnonzero((units.kind == CONTACT) & (units.mu > 0) & ~still)
        nf = len(fr)
        m = k + 2 * nf
        kinds = np.empty(m, dtype=np.int64)
        kinds[:k] = lcp.NORMAL
        kinds[k::2] = lcp.FRICTION
        kinds[k + 1::2] = lcp.FRICTION2
        mus = np.zeros(m)
        mus[k:] = np.repeat(units.mu[fr], 2)
        normals = np.empty(m, dtype=np.int64)
        normals[:k] = np.arange(k)
        normals[k:] = np.repeat(fr, 2)
        G = np.concatenate([np.where(still[:, None], 0.0, units.N), units.T[fr].reshape(2 * nf, units.N.shape[1])])
        vn = units.N @ v
        phi = units.gap
        r = G @ v_free
        curv = np.nan_to_num(self._gaps_end - phi - h * r[:k], posinf=0.0, neginf=0.0)
        beta = 0.0 if self._hold else BETA
        b = np.where(phi >= 0.0, -(phi + curv) / h, np.where(phi >= -PEN_PROJECT, -(beta * phi + curv) / h, -curv / h))
        for u in np.flatnonzero((units.e > 0) & (vn < -V_BOUNCE) & (phi + h * vn <= 0.0)):
            b[u] = max(b[u], _restitution_bound(phi[u], vn[u], (r[u] - vn[u]) / h, units.e[u], h))
        r[:k] -= b
        r[:k][still] = np.maximum(r[:k][still], 0.0)
        unit = np.concatenate([np.arange(k), np.repeat(fr, 2)])
        slot = np.concatenate([np.zeros(k, dtype=np.int64), np.tile([1, 2], nf)])
        return kinds, mus, normals, G, r, unit, slot, vn

    def step(self, q, v, tau, dt, t):
        """One step of dt from time t; returns (q, v, events).  A tree or a closed chain is
        stepped by one compiled call (``linkdyn.sim._timestep_kernel``), its geom contacts and
        its loops included (q'' with the loops closed, the impulses' response with the loops
        held, the projection back onto the loops); a geared model in Python (its reduced
        coordinates: the loops through the KKT system of ``linkdyn.contact.dynamics.Response``).
        A step the compiled call cannot finish (bad input, a blow-up, an answer above the
        solver's tolerance, loops that the metric Newton steps do not close) is taken again by
        the Python step from the same state."""
        from .steps import joint_friction_power
        # a step that starts deeper than PEN_PROJECT starts with what the projection could not
        # remove: it holds it (``_problem``, ``_timestep_kernel._bounds``); counted in stats["held"]
        gaps = self._gaps[1] if self._gaps is not None and self._gaps[0] is q else self.catalog.gaps(q)
        gmin = self._geom_end[1] if self._geom_end[0] is q else self._geom_min(q)
        self._held_step = min(gaps.min(initial=np.inf), gmin) < -PEN_PROJECT
        out = self._step_compiled(q, v, tau, dt, t) if self._compiled else None
        if out is None:
            out = self._step_python(q, v, tau, dt, t)
        if self._held_step:
            self.stats["held"] = self.stats.get("held", 0) + 1
        self.joint_loss += dt * joint_friction_power(self.model, out[1])     # first order, as the step
        return out

    def _step_compiled(self, q, v, tau, h, t):
        from ._timestep_kernel import step_flags, timestep_kernel
        model, cat = self.model, self.catalog
        prev = self.warm[:, 0].copy()
        warm0 = self.warm.copy()
        gs = self._gs
        n0 = int(gs[3][0])              # the geom contacts carried in: restored if the step is undone
        gprev = (gs[0][:n0].copy(), gs[1][:n0].copy(), gs[2][:n0].copy(), gs[3].copy()) if self.geoms is not None else None
        q1, v1, gaps1 = np.empty(model.nq), np.empty(model.nv), np.empty(cat.size)
        vm, vn, info, extra, hit = self._scratch
        extra[:] = False
        led = self._led
        ng = 0
        for attempt in range(2):
            timestep_kernel(self._implicit(h)[0]._packed, self._lbuf, q, v, tau, float(h), self._geo, cat._mask, cat._pair_mu, cat._pair_e,
                            cat._lim_q, cat._lim_v, cat._lim_s, cat._lim_b, self._balls.C, self._balls.I,
                            cat._ball_va, self._prm, self.warm, self._gk, gs, extra, q1, v1, vm, self.force, vn, gaps1,
                            info, led)
            ng = int(info[5]) if info[0] == 0 else 0
            flags = step_flags(self.force, vn, prev, gs[4], gs[5], gs[1], ng, float(h), V_REPORT, gaps1, PEN_PROJECT,
                               hit)
            if attempt or info[0] != 0 or not flags & 1:
                break
            # again, with the units the first try left penetrating (``_step_python``)
            self._undo(warm0, gprev)
            extra |= (gaps1 < -PEN_PROJECT) & np.isnan(vn)
            self.stats["retaken"] = self.stats.get("retaken", 0) + 1
        self.stats["lcp_fallbacks"] += int(info[3])
        if info[0] != 0 or info[2] > min(LCP_TOL, FAIL_TOL):
            # bad input or a blow-up (the Python step says what), or an answer above the solver's
            # tolerance (the Python step tries the conic fallback, then raises above FAIL_TOL): the
            # step is taken again from the same state
            self._undo(warm0, gprev)
            return None
        self.stats["lcp_residual"] = max(self.stats["lcp_residual"], info[2])
        self.stats["last_residual"] = info[2]
        if info[6]:
            self.stats["relinearized"] = self.stats.get("relinearized", 0) + int(info[6])
        events = []
        self._h = h
        if flags & 8:
            # at q, before the free joints' carry: _impulse_work with the step's own free motion and
            # mass matrix (the kernel's ``led``), as run_kernel books it
            self.work += _impulse_work_kernel(led[1], vm, led[0], v)
        if flags & 2:
            self.stats["steps_in_contact"] += 1
            if flags & 4:
                events.append(self._impact(q, v, vm.copy(), hit[:cat.size + ng].copy(), t, tau, h, led[2]))
        gmin = info[4]
        if flags & 16 or gmin < -PEN_PROJECT:
            q1 = self._project(q1, gaps1)
            gaps1 = cat.gaps(q1)
            gmin = self._geom_min(q1)
        self._gaps = (q1, gaps1)
        self._geom_end = (q1, gmin)
        self._gfresh = True
        return q1, v1, events

    def _undo(self, warm0, gprev):
        """The warm starts and the carried geom contacts as they were before a compiled step."""
        self.warm[:] = warm0
        if gprev is not None:
            n0 = gprev[0].shape[0]
            for a, b in zip(self._gs[:3], gprev[:3]):
                a[:n0] = b
            self._gs[3][:] = gprev[3]

    def recorder(self, samples, every, phase):
        """Buffers for ``run`` to record up to ``samples`` samples in its call, one every
        ``every`` steps, the first after ``every - phase`` steps (``_timestep_kernel.run_kernel``'s
        ``rec``; allocated once and kept: ``samples`` is fixed per simulation)."""
        model, size = self.model, self.catalog.size
        cap = self._gs[0].shape[0]
        recs = self.__dict__.setdefault("_recs", {})
        buf = recs.get(samples)
        if buf is None:
            flat = samples * min(cap, 16) + cap
            buf = (np.zeros(4, np.int64), np.zeros(samples, np.int64), np.empty((samples, model.nq)),
                   np.empty((samples, model.nv)), np.empty((samples, size, 3)), np.empty((samples, size)),
                   np.empty((samples, 2)), np.zeros(samples + 1, np.int64), np.zeros((flat, 2), np.int64),
                   np.empty((flat, 9)), np.zeros((samples, size, 3)), np.empty((samples, 2)))
            recs[samples] = buf
        buf[0][:] = (every, phase, 0, 0)
        return buf

    def run(self, q, v, tau, h, nsteps, t=0.0, rec=None):
        """Up to ``nsteps`` steps of h from time t under constant torques tau in one compiled call
        (a tree or a closed chain: ``_compiled``), as many as are ordinary: the first step with a penetration
        to project out, an unsolved problem or bad input is left undone, for ``step`` to take; a
        step with an impact (a unit hit faster than V_REPORT) is taken, its data kept by the kernel
        and its event built after the call (which ends after IMPACTS_PER_RUN of them).  Returns
        (q, v, k, totals, events): the state after the k steps taken, what ``Simulation`` books per
        step, summed or extreme over them (a dict: see ``_timestep_kernel.run_kernel``), and the
        impacts' events in order.  The ledger's terms (``work``, ``joint_loss``) and the
        solver's statistics are updated here.  ``rec`` (``recorder``) records samples on the way."""
        from ._timestep_kernel import run_kernel
        model, cat = self.model, self.catalog
        if self._runargs is None:
            self._runargs = (np.ascontiguousarray(cat.is_limit, dtype=np.bool_), np.ascontiguousarray(cat.unit_mu, dtype=float),
                             np.ascontiguousarray(model.damping, dtype=float), np.ascontiguousarray(model.friction, dtype=float),
                             np.concatenate([self._prm, [min(LCP_TOL, FAIL_TOL), PEN_PROJECT, V_REPORT]]))
        limit, mu, damping, friction, prm = self._runargs
        q, v = np.array(q, dtype=float), np.array(v, dtype=float)
        vn, gaps = np.empty(cat.size), np.empty(cat.size)
        acc = np.zeros(17)
        acc[6] = np.inf
        tau = np.ascontiguousarray(tau, dtype=float)
        ev = self._impacts
        if ev is None:
            cap, K = self._gs[0].shape[0], IMPACTS_PER_RUN
            ev = self._impacts = (np.empty((K, model.nq)), np.empty((K, model.nv)), np.empty((K, model.nv)),
                                  np.zeros((K, cat.size + cap), dtype=np.bool_), np.zeros((K, model.nv)),
                                  np.empty((K, cat.size, 3)), np.empty((K, cap, 3)), np.empty((K, cap, 2), np.int64),
                                  np.empty(K, np.int64), np.empty(K, np.int64))
        if rec is None:
            rec = self.recorder(0, 0, 0)
        run_kernel(self._implicit(h)[0]._packed, self._lbuf, q, v, tau, float(h), int(nsteps), self._geo,
                   cat._mask, cat._pair_mu, cat._pair_e, cat._lim_q, cat._lim_v, cat._lim_s, cat._lim_b, self._balls.C,
                   self._balls.I, cat._ball_va, prm, self.warm, self._gk, self._gs, limit, mu, damping, friction,
                   self.force, vn, gaps, acc, ev, rec, self._led[4], model._packed)
        k = int(acc[0])
        self._h = h
        EQ, EV, EVM, EH, EP, EF, EG, EI, ES, EN = ev
        events = [self._impact(EQ[j], EV[j], EVM[j], EH[j], t + (int(ES[j]) - 1) * h, tau, h, EP[j],
                               (EF[j], EG[j][:EN[j]], EI[j][:EN[j]])) for j in range(int(acc[16]))]
        if k:
            self.work += acc[1]
            self.joint_loss += acc[2]
            st = self.stats
            st["steps_in_contact"] += int(acc[10])
            st["lcp_residual"] = max(st["lcp_residual"], acc[11])
            st["lcp_fallbacks"] += int(acc[12])
            if acc[13]:
                st["relinearized"] = st.get("relinearized", 0) + int(acc[13])
            st["last_residual"] = acc[14]
            if acc[15]:
                st["retaken"] = st.get("retaken", 0) + int(acc[15])
            self._gaps = (q, gaps.copy())
            gmin = np.inf
            if self.geoms is not None:
                gmin = self._geom_min(q)
            self._geom_end = (q, gmin)
            self._gfresh = True
        keys = ("steps", "contact_work", "joint_loss", "tau_work", "limit_violation", "penetration", "min_normal_force",
                "max_cone_ratio", "max_step_contact_work", "force_steps")
        return q, v, k, dict(zip(keys, acc[:10].tolist())), events

    def _impact(self, q, v, vm, hit, t, tau, h, Pq=None, step=None):
        """The event of an impact the compiled step took from (q, v) at t to the velocity vm:
        ``hit`` flags the units hit, the catalog's then the step's geom contacts (the test of
        ``_step_compiled`` and ``_timestep_kernel.run_kernel``); its impulses are those of every
        unit pushing in the step.  ``Pq``: a closed chain's generalized impulse G^T lam, whose
        loop impulses (what held the loops closed against it: ``contact.dynamics.Response``, as
        the Python step's MU lam) the event reports.  ``step``: the step's (unit forces, geom
        contacts' forces, their geom pairs) as a compiled run kept them (default: the last step's)."""
        cat, size = self.catalog, self.catalog.size
        if step is None:
            ng = int(self._gs[3][0])
            step = (self.force, self._gs[4][:ng], self._gs[0][:ng])
        force, gforce, pairs = step
        ng = len(gforce)
        on, gon = np.flatnonzero(force[:, 0] > 0.0), np.flatnonzero(gforce[:, 0] > 0.0)
        self.stats["impacts"] += 1
        return self._event(q, v, vm, [cat.names[u] for u in np.flatnonzero(hit[:size])]
                           + [self._geom_name(r, pairs) for r in np.flatnonzero(hit[size:size + ng])],
                           [cat.names[u] for u in on] + [self._geom_name(r, pairs) for r in gon],
                           np.concatenate([force[on], gforce[gon]]) * h, t, tau, h,
                           cd.Response(self._implicit(h)[0], q).apply(Pq, loops=True)[1].reshape(-1, 6)
                           if self.model.nloops and Pq is not None else None)

    def _geom_name(self, r, pairs=None):
        """The name "geom1/geom2" of the compiled step's geom contact r (of ``pairs``, default the
        last step's)."""
        g1, g2 = (self._gs[0] if pairs is None else pairs)[r]
        return f"{self.geoms.names[g1]}/{self.geoms.names[g2]}"

    def gaps_after(self, q):
        """The gaps at q, the end of the last step (kept by the step: no second kinematics pass)."""
        return self._gaps[1] if self._gaps is not None and self._gaps[0] is q else self.catalog.gaps(q)

    def step_forces(self):
        """(size, 3) contact and limit forces of the last step (impulses / h), catalog order."""
        return self.force

    @property
    def geom_force(self):
        """The last step's geom contact forces (n, 3) as (f_n, f_t1, f_t2) in their frames."""
        return self._gs[4][:int(self._gs[3][0])] if self._gfresh else self._geom_py[0]

    @property
    def geom_mu(self):
        """The last step's geom contacts' friction coefficients (n,)."""
        return self._gs[1][:int(self._gs[3][0]), 7] if self._gfresh else self._geom_py[2]

    @property
    def geom_names(self):
        """The last step's geom contacts' names "geom1/geom2" (n,)."""
        return [self._geom_name(r) for r in range(int(self._gs[3][0]))] if self._gfresh else self._geom_py[1]

    def geom_step(self, names=True):
        """The last step's geom contacts, which vary in number from step to step (the
        recording keeps them per sample apart from the fixed catalog's units: ``geom_contacts``;
        ``Simulation`` keeps their extremes in ``Recording.extremes``): (the smallest geom distance at the step's end, forces
        (n, 3) as (f_n, f_t1, f_t2), friction coefficients (n,), names (n,), or None without
        ``names``)."""
        return self._geom_end[1], self.geom_force, self.geom_mu, self.geom_names if names else None

    def geom_contacts(self, q):
        """The last step's geom contacts for the recording (``Segment.geom_pair`` ...): (pairs
        (n, 2) geom indices, world forces geom 1 exerts on geom 2 (n, 3), points (n, 3), unit
        normals from geom 1 to geom 2 (n, 3)), the points and normals as the step's problem took
        them (at its start), and the force in the frame the step's problem had (the compiled step
        keeps the friction impulse as a world vector).  ``q``, the step's end, is not needed by the
        compiled step's contacts."""
        if self.geoms is None:
            z = np.zeros((0, 3))
            return np.zeros((0, 2), dtype=np.int64), z, z.copy(), z.copy()
        if not self._gfresh:
            return tuple(x.copy() for x in self._geom_rec)
        n = int(self._gs[3][0])
        con_i, con_f, gP, f = self._gs[0][:n].copy(), self._gs[1][:n], self._gs[2][:n], self._gs[4][:n]
        if not n:
            z = np.zeros((0, 3))
            return con_i, z, z.copy(), z.copy()
        # the normal force along the normal, the friction impulse the step kept as a world vector
        # (its tangents at the step's start), over the step: as run_kernel records it
        world = con_f[:, 4:7] * f[:, :1] + gP[:, 1:4] / self._h
        return con_i, world, con_f[:, 1:4].copy(), con_f[:, 4:7].copy()

    def _impulse_work(self, q, v, v1, tau, h, v_free=None):
        """The energy the step's impulses took or gave, for the ledger (``Simulation.work``).

        They change the kinetic energy from the free motion's v_free to v1 by
        P . G v1 - |v1 - v_free|^2_M / 2: the work on the velocity after them (zero for a unit
        that holds, by complementarity) less the energy of the jump.  Part of that jump is the
        scheme's own: a unit resting under gravity is stopped from falling by the g h the free
        motion gave it in the step, (g h)^2 / 2 per unit mass, which the free motion had put in.
        So the jump's energy is counted only beyond the free motion's own, |v_free - v|^2_M / 2:
        an impact's loss (to within that, O(h^2) per step).  T is the step's (``_implicit``: with
        joint damping, of M + h D, whose impulse-driven loss h D dv . v the joints' loss books)."""
        T = self._implicit(h)[1].kinetic_energy
        if v_free is None:
            v_free = self._v_free(q, v, tau, h)
        return T(q, v1) - T(q, v_free) + min(T(q, v1 - v_free), T(q, v_free - v))

    def _event(self, q, v, v1, hit, touching, P, t, tau, h, loop_impulse=None):
        """An impact event: the names of the units hit and of those pushing, the latter's
        impulses P (len(touching), 3), and the kinetic energy before and after them (from the
        free motion's velocity v + h a_free to v1: what the impulses took, without the work of
        gravity and the torques in the step)."""
        v_free = self._v_free(q, v, tau, h)
        T = self.data.kinetic_energy
        return Event(t, "impact", ", ".join(hit), P.copy(), v1 - v_free,
                     T(q, v_free), T(q, v1),
                     note=f"{len(touching)} units push in this step (time stepping: the impact is at the step; "
                          "its impulses include what holds the units against gravity and the torques for the step)",
                     units=list(touching),
                     loop_impulse=np.zeros((self.model.nloops, 6)) if loop_impulse is None else loop_impulse)

    def _step_python(self, q, v, tau, dt, t, extra=None):
        model, cat, h, data = self.model, self.catalog, dt, self.data
        snapshot = (self.warm.copy(), dict(self.stats), self.work, self._gprev, self._geom_py, self._gfresh,
                    self._gaps, tuple(x.copy() for x in self._gs[:4]) if self._compiled else (), self._memo.copy())
        v_free = self._v_free(q, v, tau, h)
        q_end = self._advance(q, v_free, h)[0]
        gaps = self._gaps[1] if self._gaps is not None and self._gaps[0] is q else cat.gaps(q)
        gaps_end = cat.gaps(q_end)
        near = (gaps <= CANDIDATE) | (gaps_end <= CANDIDATE)
        cand = np.flatnonzero(near if extra is None else near | extra)
        kc = len(cand)
        parts, ends, warm = [], [], []
        if kc:
            parts.append(cat.units(q, v, cand))
            ends.append(gaps_end[cand])
            warm.append(self.warm[cand])
        gcon = None
        if self.geoms is not None:
            if self._gfresh:            # the last step was the compiled one: its contacts warm this one
                n = int(self._gs[3][0])
                self._gprev = ((self._gs[0][:n].copy(), self._gs[1][:n].copy()), self._gs[2][:n, 0].copy(),
                               self._gs[2][:n, 1:].copy()) if n else None
                self._gfresh = False
            gcon, gu, gend, gwarm = self._geom_units(q, v_free, q_end, h)
            if len(gu):
                parts.append(gu)
                ends.append(gend)
                warm.append(gwarm)
        self.force[:] = 0.0
        self.warm[:] = 0.0
        events = []
        if parts:
            units = Units.concat(parts, model.nv)
            self._gaps_end = np.concatenate(ends)
            kinds, mus, normals, G, r, unit, slot, vn = self._problem(units, v_free, v, h)
            resp = cd.Response(self._implicit(h)[0], q)
            ZF, MU = resp.apply(G.T, loops=True)
            A = G @ ZF
            lam = np.concatenate(warm)[unit, slot]
            if lam.any():
                # linearize at the motion the warm start gives, not the free motion (as the
                # compiled step, _timestep_kernel._linearize_at)
                v1 = v_free + ZF @ lam
                end = self._end_gaps(q, v1, h, cand, kc)
                ok = np.isfinite(end)
                self._gaps_end[ok] = end[ok] + h * (units.N[ok] @ (v_free - v1))
                kinds, mus, normals, G, r, unit, slot, vn = self._problem(units, v_free, v, h)
            self._hold = False
            for it in range(1 + GEOM_RELINEARIZE):
                lam, res = self._solve(A, r, kinds, mus, normals, lam)
                if not res <= FAIL_TOL and np.any(units.gap < 0.0):
                    # overlaps that cannot all be pushed out at once (neighbouring bodies' geoms
                    # inside each other where a joint limit keeps them, as the projection left
                    # them): the step holds them, no deeper and no push-out, and goes on
                    self._hold = True
                    self._held_step = True
                    kinds, mus, normals, G, r, unit, slot, vn = self._problem(units, v_free, v, h)
                    lam, res = self._solve(A, r, kinds, mus, normals, np.zeros_like(lam))
                if not res <= FAIL_TOL:
                    raise lcp.ContactSolverError(t, [units.name[u] for u in np.unique(unit)], res, FAIL_TOL,
                                                 FALLBACK_SWEEPS)
                if it == GEOM_RELINEARIZE:
                    break
                # the curvature was the free motion's: where the answer's own motion would
                # penetrate, take the curvature of that motion and solve again (A is the same)
                v1 = v_free + ZF @ lam
                end = self._end_gaps(q, v1, h, cand, kc)
                end[inert(units.N)] = np.nan         # an inert unit's gap is not the motion's to mend
                if not end[np.isfinite(end)].min(initial=np.inf) < -RELINEARIZE_TOL:
                    break
                self.stats["relinearized"] = self.stats.get("relinearized", 0) + 1
                ok = np.isfinite(end)
                self._gaps_end[ok] = end[ok] + h * (units.N[ok] @ (v_free - v1))
                kinds, mus, normals, G, r, unit, slot, vn = self._problem(units, v_free, v, h)
            self.stats["lcp_residual"] = max(self.stats["lcp_residual"], res)
            self.stats["last_residual"] = res
            v1 = v_free + ZF @ lam
            P = np.zeros((len(units), 3))
            P[unit, slot] = lam
            self.warm[cand] = P[:kc]
            self.force[cand] = P[:kc] / h
            if np.any(P[:, 0] > 0.0):
                self.stats["steps_in_contact"] += 1
            # hit: pushing, approaching faster than V_REPORT, and new to the touch: a catalog unit
            # that did not push in the last step (the rest of an impact a speculative contact
            # finishes in the next step is not a second one), a geom contact within the step's
            # reach (it has no identity from step to step); the compiled step's test
            new = units.gap <= -h * vn
            new[:kc] = snapshot[0][cand, 0] <= 0.0
            hit = np.flatnonzero((P[:, 0] > 0.0) & (vn < -V_REPORT) & new)
            if lam.any():
                self.work += self._impulse_work(q, v, v1, tau, h, v_free)
            if len(hit):
                self.stats["impacts"] += 1
                on = np.flatnonzero(P[:, 0] > 0.0)
                events.append(self._event(q, v, v1, [units.name[u] for u in hit], [units.name[u] for u in on], P[on],
                                          t, tau, h, (MU @ lam).reshape(-1, 6)))
        else:
            self.stats["last_residual"] = 0.0
            v1 = v_free
            P = np.zeros((0, 3))
        if self.geoms is not None:
            self._geom_keep(gcon, P[kc:], h)
        q1, v1 = self._advance(q, v1, h)
        if model.nloops:
            # in the step's metric (M + h D with damping, as the compiled step's project_loops)
            mh, dh = self._implicit(h)
            q1, v1 = project(mh, q1, v1, data=dh)
        gaps1 = cat.gaps(q1)
        missed = gaps1 < -PEN_PROJECT
        missed[cand] = False
        if extra is None and missed.any():
            # a unit that was not in the problem ends the step penetrating (the other units' impulses
            # drive a joint into its limit): the step again, with it (as the compiled step)
            (self.warm, self.stats, self.work, self._gprev, self._geom_py, self._gfresh, self._gaps, gs, memo) = snapshot
            self._memo[:] = memo
            for a, b in zip(self._gs[:4] if self._compiled else (), gs):
                a[...] = b
            self.stats["retaken"] = self.stats.get("retaken", 0) + 1
            return self._step_python(q, v, tau, dt, t, extra=missed)
        gmin = self._geom_min(q1)
        if min(gaps1.min(initial=np.inf), gmin) < -PEN_PROJECT:
            q1 = self._project(q1, gaps1)
            gaps1 = cat.gaps(q1)
            gmin = self._geom_min(q1)
        self._gaps = (q1, gaps1)                        # the next step starts here
        self._geom_end = (q1, gmin)
        return q1, v1, events

    # --- geom contacts ------------------------------------------------------------------
    def _geom_units(self, q, v_free, q_end, h):
        """The geom contacts that may touch within the step: (the collider's tables, their units
        at q, their gaps at the free motion's end, their warm start).

        Detection at q with a margin that covers the step: CANDIDATE plus twice the largest
        displacement of a geom's point from q to the free motion's end q_end (two geoms' distance
        changes by at most the sum of their points' displacements), so a contact within CANDIDATE
        at q_end is a candidate at q, as the catalog takes the units close at either end.  The gap
        at q_end (for the curvature term of ``_problem``) is the distance of the same contact
        found by detection at q_end, matched by pair and nearest point; a contact with no match
        there (a manifold point clipped to another edge) takes it from the second-order expansion
        phi + h N v_free + h^2 / 2 drift_n (the drift at v_free)."""
        gc = self.geoms
        disp = gc.displacement(q, q_end)
        margin = CANDIDATE + 2.0 * disp
        con = gc.collide(q, margin)
        units = gc.units(q, v_free, *con)
        k = len(units)
        self._gunits, self._gcon = units, con
        if not k:
            return con, units, np.zeros(0), np.zeros((0, 3))
        end = gc.collide(q_end, margin + 2.0 * disp)
        j = gc.match(con, end, 3.0 * disp + 1e-9)
        gap_end = units.gap + h * (units.N @ v_free) + 0.5 * h * h * units.drift_n
        gap_end[j >= 0] = end[1][j[j >= 0], 0] - end[1][j[j >= 0], 9]       # less the pair's skin
        warm = np.zeros((k, 3))
        if self._gprev is not None:
            pcon, Pn, Pt = self._gprev
            i = gc.match(con, pcon, 3.0 * disp + CANDIDATE)
            ok = i >= 0
            warm[ok, 0] = Pn[i[ok]]
            warm[ok, 1:] = np.einsum("kji,kj->ki", units.frame[ok, :, :2], Pt[i[ok]])
        self._gunits, self._gcon = units, con
        return con, units, gap_end, warm

    def _end_gaps(self, q, v1, h, cand, kc):
        """The gaps of the problem's units at q moved by v1 over h (nan where a geom contact has
        no match there, and for the limits: their gaps are not relinearized)."""
        q1 = self._advance(q, v1, h)[0]
        g = self.catalog.gaps(q1)[cand]
        g[np.asarray(cand) >= len(self.catalog.pairs)] = np.nan     # a limit keeps the free motion's curvature
        out = [g]
        if self.geoms is not None and self._gunits is not None and len(self._gunits) and self._gcon is not None:
            gc = self.geoms
            disp = gc.displacement(q, q1)
            end = gc.collide(q1, CANDIDATE + 4.0 * disp)
            j = gc.match(self._gcon, end, 3.0 * disp + 1e-9)
            g = np.full(len(j), np.nan)
            g[j >= 0] = end[1][j[j >= 0], 0] - end[1][j[j >= 0], 9]
            out.append(g)
        return np.concatenate(out)

    def _geom_keep(self, con, P, h):
        """Keep the step's geom contacts: forces, names, and the impulses for the next warm start
        (the friction as a world vector: a contact's tangents turn with its normal)."""
        if con is None or not len(con[0]):
            self._geom_py, self._gprev = (np.zeros((0, 3)), [], np.zeros(0)), None
            z = np.zeros((0, 3))
            self._geom_rec = (np.zeros((0, 2), dtype=np.int64), z, z, z)
            if self._compiled:
                self._gs[3][0] = 0
            return
        u = self._gunits
        self._geom_py = (P / h, u.name, u.mu)
        self._geom_rec = (np.array(con[0], dtype=np.int64), np.einsum("kij,kj->ki", u.frame, (P / h)[:, [1, 2, 0]]),
                          np.array(con[1][:, 1:4]), u.frame[:, :, 2].copy())
        Pt = np.einsum("kij,kj->ki", u.frame[:, :, :2], P[:, 1:])
        self._gprev = (con, P[:, 0].copy(), Pt)
        if self._compiled:              # the compiled step's warm start
            n = len(P)
            self._gs[0][:n], self._gs[1][:n] = con
            self._gs[2][:n, 0], self._gs[2][:n, 1:] = P[:, 0], Pt
            self._gs[3][0] = n

    def _geom_min(self, q):
        """The smallest distance between geoms at q (+inf: none touch)."""
        if self.geoms is None:
            return np.inf
        _, f = self.geoms.collide(q, 0.0)
        return float((f[:, 0] - f[:, 9]).min(initial=np.inf))

    def _project(self, q, gaps):
        """Project the penetrations out; the potential energy this changes goes to ``work``."""
        pe0 = self.data.potential_energy(q)
        q = self._project_out(q, gaps)
        self.work += self.data.potential_energy(q) - pe0
        return q

    def _touching(self, q, v, gaps, tol):
        """The units at q whose gap is <= tol: the catalog's and the geom contacts'."""
        units = self.catalog.units(q, v, np.flatnonzero(gaps <= tol))
        if self.geoms is not None:
            con = self.geoms.collide(q, tol)
            units = Units.concat([units, self.geoms.units(q, None, *con)], self.model.nv)
        return units

    def _overlap(self, q, gaps):
        """(the total overlap at q: the catalog's penetrations and limit overshoots and the geoms'
        penetrations summed, the deepest of them); m and rad."""
        total, deepest = float(np.maximum(-gaps, 0.0).sum()), float(max(-gaps.min(initial=0.0), 0.0))
        if self.geoms is not None:
            _, f = self.geoms.collide(q, 0.0)
            d = np.maximum(f[:, 9] - f[:, 0], 0.0)
            total, deepest = total + float(d.sum()), max(deepest, float(d.max(initial=0.0)))
        return total, deepest

    def overlaps(self, q, tol, inert_only=False):
        """[(name, gap)] of the units and geom contacts at q deeper than tol (m or rad); with
        ``inert_only``, of those that are inert (``contact.rows.inert``: no motion changes the gap)."""
        units = self._touching(q, None, self.catalog.gaps(q), -tol)
        still = inert(units.N) if inert_only else np.ones(len(units), dtype=bool)
        return [(n, float(g)) for n, g, s in zip(units.name, units.gap, still) if g < -tol and s]

    def _project_out(self, q, gaps):
        """q with its penetrations projected out: Newton's steps of ``position_correction``, each
        taken only as far as it lowers the total overlap (``_overlap``; halved up to
        PROJECT_HALVINGS times).  The first-order step of a deep overlap can overshoot by far
        (dm_control's CMU humanoid on its own, its pelvis welded to the world with its thighs'
        capsules 8.7 cm inside the pelvis' one, once turned a foot by 1234 rad); what cannot be
        projected out (overlaps a joint limit
        keeps) is left as small as the steps got it, for the step to hold (``_problem``)."""
        model, cat = self.model, self.catalog
        total, deepest = self._overlap(q, gaps)
        for _ in range(PROJECT_ITERS):
            if deepest <= 1e-12:
                break
            self.stats["projections"] += 1
            units = self._touching(q, None, gaps, 0.0)
            dq, _ = cd._position_correction(model, q, units)
            alpha = 1.0 if np.abs(dq).max(initial=0.0) > 0.0 else 0.0
            for _ in range(PROJECT_HALVINGS + 1):
                if alpha == 0.0:
                    break
                q1 = self.data.integrate(q, alpha * dq)
                if model.nloops:
                    q1, _ = project(model, q1, np.zeros(model.nv), data=self.data)
                g1 = cat.gaps(q1)
                t1, d1 = self._overlap(q1, g1)
                if t1 < total:
                    break
                alpha *= 0.5
            else:
                alpha = 0.0
            if alpha == 0.0:
                break
            q, gaps, total, deepest = q1, g1, t1, d1
        return q

    # ------------------------------------------------------------------------------------
    def correct(self, q, v, active=None):
        """Project penetrations and limit overshoots out and remove approach velocities at the
        boundary (as ``Unilateral.correct``; used at the start and after structure changes)."""
        gaps = self.catalog.gaps(q)
        if min(gaps.min(initial=np.inf), self._geom_min(q)) < -1e-12:
            q = self._project(q, gaps)
        units = self._touching(q, v, self.catalog.gaps(q), 1e-6)
        if len(units):
            if np.any(units.N @ v < 0.0):
                units.e = np.zeros(len(units))
                v = v + cd.impulse(self.model, q, v, units, restitution=False).value
        return q, v

    def unit_forces(self, q, v, tau):
        """(size, 3) contact and limit forces of the last step, in catalog order."""
        return self.force.copy()
