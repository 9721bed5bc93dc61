"""The dynamics filter (Yamane and Nakamura 2003): a capture made physically consistent.

Yamane, K. and Nakamura, Y. (2003), "Dynamics filter -- concept and implementation of online
motion generator for human figures", IEEE Trans. Robotics and Automation 19(3):421-432.  A
forward simulation of the capture figure tracks the capture; at every step a convex QP picks
the accelerations and ground forces closest to what the capture asks for among those that the
figure's equations of motion, with an unactuated root, allow.

Each step (time step h, the state q, v):

1. **Reference** (a PD law on the capture, Yamane and Nakamura 2003, Sec. III-A):
   a_ref = a_cap + K_d (v_cap - v) + K_p (q_cap (-) q), with (-) :func:`linkdyn.difference` on
   the configuration manifold (the free root and the ball joints), K_p = omega^2,
   K_d = 2 zeta omega.  Between two frames the capture is extrapolated from the earlier one,
   q_cap(t_k + s) = q_k (+) (s v_k + s^2/2 a_k).
2. **QP** over x = [a (nv); f (3 per candidate sole point, world frame)] (proxsuite's dense ProxQP,
   as :func:`linkdyn.mocap.inverse_dynamics` uses)::

       min  ||a - a_ref||^2_W + w_c sum_stance ||J_i a + dJ_i v - a_i*||^2 + eps ||f / (m g)||^2
       s.t. M[:6] a + h[:6] = J[:, :6]^T f           (the root is unactuated: 6 equalities)
            f_z >= 0,  |f_x|, |f_y| <= mu f_z       (the friction pyramid enclosing the cone)
            n^T (J_i a + dJ_i v) >= -(n^T v_i + beta_i d_i / h) / h   (every point near the ground)

   W is diagonal: each coordinate's weight is (M_ii / median_j M_jj)^p with M_ii the joint-space
   inertia's diagonal at the first frame and the median over the joints' coordinates
   (``inertia_weighting`` p = 0.5; the root's six times ``root_weight``).  Where the capture asks
   for more than the ground can give, the root's equations move some accelerations off a_ref:
   with all weights 1 (p = 0, the first form) it was the heavy spine and the swing hip that moved
   most (their coupling with the root is largest), the trunk folded and the real walk of
   docs/mocap.md fell at 54.6 s; weighted by their inertia the light distal joints take a larger
   share and it walks to 67 s.
   M (CRBA) and h (RNEA at a = 0) are linkdyn's compiled kernels; J_i is the world Jacobian of
   sole point i, dJ_i v its acceleration at a = 0, d_i its height above the ground.  Forces
   may act only at points within ``contact_distance`` (5 mm: the sole's compliance; with 1 mm a
   stance foot tilted by a few millimetres rested on one corner, its centre of pressure fixed
   there, and the real walk of docs/mocap.md fell at 13 s instead of 54.6 s) of the ground; the
   non-penetration rows hold at every point within ``guard_distance``.  They are a discrete
   Baumgarte stabilisation (Baumgarte 1972): after the semi-implicit step the height is
   d' = d + h v_n' >= (1 - beta_i) d, with beta_i = beta (0.2) for a point in contact, whose
   penetration, if any, is pushed out at beta d / h, and beta_i = 1 for a point still above
   contact_distance, which may land on the ground in one step but not go through it.  A point that is down (within ``contact_distance``) while
   its foot is in a stance phase of the capture (:func:`linkdyn.mocap.contact_phases`) should
   not slide or leave the ground: a_i* (below, Balance) is asked of it with the heavy weight w_c.  (Asking it as an equality makes the QP infeasible: four sole points of
   one rigid foot have more acceleration equations than the foot has freedoms, and the
   Baumgarte targets of four slightly uneven points are not a rigid motion.)
   **Balance** (the local and global feedback of Yamane and Nakamura 2003 beside the joints' PD
   law; the paper is not among the project's source documents, so no equation numbers): the
   forces give c'' = sum f / m + g, asked (weight ``com_weight``) to be c''_cap + K_d (c'_cap - c')
   + K_p (c_cap - c) with the capture's centre of mass; the angular momentum about it,
   L' = sum (p_i - c) x f_i, asked (same weight, per unit mass) to be L'_cap + K_d (L_cap - L);
   and the stance feet's points follow the capture's points (the same PD law; the height target
   put on the ground within ``flat`` of the foot's lowest point; the normal row weighted
   ``normal_weight`` times), a_i* = a_cap_i + K_d (v_cap_i - v_i) + K_p (p_cap_i - p_i).  The tracked
   capture is lowered by how high its stance feet float (``lift``: the lowest sole point of the
   feet down, smoothed over ``lift_window`` s), so that its centre of mass can be reached
   standing on the ground.
   **Look-ahead** (``preview``, on by default): before the simulation the capture's centre of
   mass is moved horizontally, as little as it can be over the whole clip, so that the centre of
   pressure it asks for lies on the capture's own stance soles at every frame (:func:`_feasible_com`,
   one sparse QP; the capture's height, vertical motion and angular momentum kept), and the tracked
   root moves with it.  Where the capture asks for a centre of pressure past its feet (the quick
   steps of the real walk in docs/mocap.md), the reference then starts moving the centre of mass
   a few frames early, as a body that knows the next steps would, instead of asking the
   impossible and leaving an error that one foot cannot take back: the real walk's figure falls
   at 110.7 s instead of 67.1 s.
   **Joint limits** (the model's: a one-degree joint's ``lower``/``upper``; a ball joint's swing
   cone and twist range, :mod:`linkdyn.contact.swing_twist`) are rows of the QP that keep the
   next step inside: q + h v + h^2 a within [lower, upper] (exact for the integrator below), and
   g + h G (v + h a) + h^2/2 G'v >= 0 for a ball joint's gaps g, their rows G (dg/dt = G v_joint)
   and drift G'v (second order in h, so held to O(h^3)).  The figure of
   :func:`linkdyn.mocap.load_bvh` has them with ``limits=True`` (off by default: a real walk's
   ankles leave the passive range, docs/mocap.md); a model that has them gets the rows.
3. **Integration**: semi-implicit Euler on the manifold, v' = v + h a, q' = q (+) h v'.

**Soles.**  The filtered figure's heels reach behind the skeleton's ankles (:data:`FILTER_SOLES`,
``soles=None`` for the capture's own soles): its heel points 0.4 of the heel-to-toe length behind
the heel joint (6.3 cm on the real walk of docs/mocap.md), its toe points and the soles' width
those of :func:`linkdyn.mocap.figure.build_figure` (the toe joint;
:data:`linkdyn.models.human.FOOT_HALF_WIDTH`).  A BVH skeleton has no foot outline: its heel point
lies under the ankle joint, where a real heel (the calcaneus) reaches about 5-7 cm further back.
On the skeleton's soles the real walk's figure falls at 110.6 s, in a side-stepping stretch
(103.5-120 s) where the capture's centre of mass passes behind those heel points; with the heels
0.35-0.5 of the length back it walks the whole four minutes (root 2.2-2.3 cm RMS from the
capture, 4.3-5.8 cm at most), with 0.25 or 0.3 it does not.  Toe points moved ahead of the toe
joint (on the light toe segment, whose joint the QP turns almost for free) bent the toes 14-22
deg off the capture in plain standing and fell in the side-step unless the soles were also made
1.6 times as wide; wider soles are not needed with the heels alone.  The capture's contact phases
(``phases``) and its ground stay those of its own feet.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from .. import model as _m
from ..contact.rows import UnitCatalog
from ..contact.swing_twist import ball_limit_joints, ball_limit_names, ball_limits_model
from ..dynamics import crba, nonlinear_effects
from ..kinematics import center_of_mass, forward_kinematics, jacobian
from .capture import Capture, MocapError, _positive, _sole_points, contact_phases


#: the filtered figure's soles (heel, toe, width; :meth:`linkdyn.mocap.Capture.with_soles`), module docstring "Soles"
FILTER_SOLES = (0.4, 0.0, 1.0)


@dataclass
class FilterReport:
    """What the dynamics filter did.  Per simulation step (S steps of ``h`` s): ``t`` (S,),
    ``q`` (S, nq), ``v``, ``a``, ``tau`` (S, nv; the root's 6 rows zero), ``forces`` (S,
    npoints, 3) every sole point's ground force (world frame, N), ``gap`` (S, npoints) each
    sole point's height above the ground (m); ``relaxed``: the steps whose QP was infeasible until
    the non-penetration rows of points that could not push were dropped.  Per capture frame: ``deviation`` (T, njoints)
    each joint's angle |q_cap (-) q| (rad; the root's rotation first) and ``root_deviation``
    (T,) the root's distance from the capture's (m).  ``joint_names``; ``rms_deviation``
    (njoints,) and ``root_rms`` (m) over the clip."""
    h: float
    t: NDArray[np.float64]
    q: NDArray[np.float64]
    v: NDArray[np.float64]
    a: NDArray[np.float64]
    tau: NDArray[np.float64]
    forces: NDArray[np.float64]
    gap: NDArray[np.float64]
    relaxed: NDArray[np.int_]
    joint_names: list[str]
    deviation: NDArray[np.float64]
    root_deviation: NDArray[np.float64]

    @property
    def rms_deviation(self) -> NDArray[np.float64]:
        return np.sqrt(np.mean(self.deviation ** 2, axis=0))

    @property
    def root_rms(self) -> float:
        return float(np.sqrt(np.mean(self.root_deviation ** 2)))

    def lost(self, distance: float = 0.10) -> float | None:
        """The time (s, from the capture's first frame, the clock of ``t``) of the first capture frame
        whose filtered root is more than ``distance`` (m) from the capture's: the figure fell or stumbled away from the capture, and what follows
        is a recovery under the filter's feedback, not a tracking (after a fall the feedback, whose
        ground forces have no bound, can throw the figure up: docs/mocap.md "Not yet").  None if it
        never does."""
        far = np.flatnonzero(self.root_deviation > distance)
        if not far.size:
            return None
        T = len(self.root_deviation)
        return float(self.t[0] + far[0] * (self.t[-1] - self.t[0]) / max(T - 1, 1))

    def summary(self) -> str:
        """A few lines: the root path's and the joints' deviation from the capture."""
        rms = np.degrees(self.rms_deviation)
        order = np.argsort(rms)[::-1][:5]
        worst = ", ".join(f"{self.joint_names[i]} {rms[i]:.1f}" for i in order)
        return (f"dynamics filter: {len(self.t)} steps of {1e3 * self.h:g} ms; root path deviation "
                f"{100 * self.root_rms:.2f} cm RMS, {100 * self.root_deviation.max():.2f} cm max\n"
                f"joint deviation (deg RMS): mean {rms.mean():.2f}; largest: {worst}\n"
                f"root residual max {np.abs(self.tau[:, :6]).max():.2e} N|N m; lowest sole point "
                f"{1e3 * self.gap.min():+.2f} mm; peak ground force "
                f"{self.forces[..., 2].sum(axis=1).max():.0f} N"
                + (f"; {len(self.relaxed)} step(s) relaxed (infeasible)" if len(self.relaxed) else "")
                + ("" if self.lost() is None else
                   f"\nthe root left the capture by more than 10 cm at t = {self.lost():.2f} s (a fall or a "
                   f"stumble: the motion after it is a recovery, not a tracking of the capture)"))


def _skew(x):
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def _angular_momentum(m, q, v, c, M=None, R=None, o=None):
    """(N, 3) angular momentum about the centre of mass c (N, 3), world frame: the root's rows of
    M v are the spatial momentum [p; L_o] in the root frame (R, about the root's origin o)."""
    M = crba(m, q) if M is None else M
    hm = np.einsum("nij,nj->ni", M[:, :6], v)
    if R is None:
        kin = forward_kinematics(m, q)
        R, o = kin.R[:, 1], kin.p[:, 1]
    p_w = np.einsum("nij,nj->ni", R, hm[:, :3])
    L_o = np.einsum("nij,nj->ni", R, hm[:, 3:])
    return L_o - np.cross(c - o, p_w)


def _friction_rows(mu, n, nv):
    """C x <= 0 rows of the friction pyramid on the f block (x = [a; f]), 5 rows a point."""
    C = np.zeros((5 * n, nv + 3 * n))
    for i in range(n):
        r, c = 5 * i, nv + 3 * i
        C[r, c], C[r, c + 2] = 1.0, -mu[i]
        C[r + 1, c], C[r + 1, c + 2] = -1.0, -mu[i]
        C[r + 2, c + 1], C[r + 2, c + 2] = 1.0, -mu[i]
        C[r + 3, c + 1], C[r + 3, c + 2] = -1.0, -mu[i]
        C[r + 4, c + 2] = -1.0
    return C


def _clarabel(H, g, Aeq, beq, C, u):
    import clarabel
    from scipy import sparse
    st = clarabel.DefaultSettings()
    st.verbose = False
    st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = 1e-10
    sol = clarabel.DefaultSolver(sparse.csc_matrix(np.triu(H)), g, sparse.csc_matrix(np.vstack([Aeq, C])),
                                 np.r_[beq, u], [clarabel.ZeroConeT(len(beq)), clarabel.NonnegativeConeT(len(u))],
                                 st).solve()
    x = np.asarray(sol.x)
    if str(sol.status) in ("AlmostSolved", "InsufficientProgress", "MaxIterations") and np.isfinite(x).all():
        # accepted only if it holds the equalities and inequalities to 1e-7 (N / (m g), m/s^2)
        if np.abs(Aeq @ x - beq).max() < 1e-7 and (C @ x - u).max(initial=0.0) < 1e-7:
            return x, str(sol.status)
    if str(sol.status) != "Solved":
        return None, str(sol.status)
    return x, "Solved"


def _support_rows(pts, margin):
    """Half-planes (n (r, 2), d (r,)), n p <= d, of the convex hull of the 2-D points ``pts`` moved
    in by ``margin`` (at most half way to the points' mean); the hull of two points (or of
    collinear ones) is their segment, widened by ``margin`` either side."""
    from scipy.spatial import ConvexHull, QhullError
    pts = np.asarray(pts, dtype=float)
    ctr = pts.mean(axis=0)
    if len(pts) >= 3:
        try:
            eq = ConvexHull(pts).equations                 # n p + e <= 0 inside
            n, d = eq[:, :2], -eq[:, 2]
            return n, d - np.minimum(margin, 0.5 * (d - n @ ctr))
        except QhullError:                                  # collinear: the segment below
            pass
    i, j = np.unravel_index(np.argmax(((pts[:, None] - pts[None]) ** 2).sum(-1)), (len(pts), len(pts)))
    u = pts[j] - pts[i]
    if np.linalg.norm(u) < 1e-9:
        n = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
        return n, n @ ctr + margin
    u /= np.linalg.norm(u)
    w = np.array([-u[1], u[0]])
    return (np.array([u, -u, w, -w]),
            np.array([u @ pts[j], -u @ pts[i], w @ ctr + margin, -w @ ctr + margin]))


def _feasible_com(c, dL, support, dt, mass, g, wv):
    """The look-ahead centre-of-mass reference of :func:`dynamics_filter` (``preview``): a
    horizontal path c_f (T, 2) near the capture's c (T, 3) whose centre of pressure lies in the
    capture's own support at every frame.

    With the capture's height c_z, its vertical acceleration and the rate L' (T, 3) of its angular
    momentum about the centre of mass kept, the ground force is f = m (c'' - g) and its moment
    about c is L', so on the ground z = 0 the centre of pressure is exactly (the whole body's
    Newton-Euler equations; the ZMP of Vukobratovic and Borovac 2004 with the momentum term)
    p_x = c_x - (c_z c''_x + L'_y / m) / (g + c''_z), p_y = c_y - (c_z c''_y - L'_x / m) / (g + c''_z),
    linear in the horizontal path.  One sparse QP over the clip (Clarabel, an interior-point
    method): min sum_k ||c_f - c||^2 + wv ||c_f' - c'||^2 (forward differences) subject to
    n p_k <= d at every inner frame k with ``support[k]`` = (n, d) (None: no row), c_f'' by central
    differences.  Raises ``RuntimeError`` if it is not solved."""
    import clarabel
    from scipy import sparse
    T = len(c)
    ddz = np.zeros(T)
    ddz[1:-1] = (c[2:, 2] - 2 * c[1:-1, 2] + c[:-2, 2]) / dt ** 2
    den = np.maximum(g + ddz, 0.1 * g)             # g + c_z'', kept positive (no frame pulls the ground)
    a_ = c[:, 2] / den / dt ** 2                    # p_k = c_k - a_k (c_{k+1} - 2 c_k + c_{k-1}) + b_k
    b = np.stack([-dL[:, 1], dL[:, 0]], axis=1) / (mass * den[:, None])
    D1 = sparse.diags([-np.ones(T - 1), np.ones(T - 1)], [0, 1], shape=(T - 1, T)) / dt
    D2 = sparse.diags([np.ones(T - 2), -2 * np.ones(T - 2), np.ones(T - 2)], [0, 1, 2], shape=(T - 2, T))
    Pk = (sparse.eye(T - 2, T, k=1) - sparse.diags(a_[1:-1]) @ D2).tocsr()      # p - b at frames 1..T-2
    Hs = (sparse.identity(T) + wv * (D1.T @ D1)).tocsr()
    rows, rhs = [], []
    for k in range(1, T - 1):
        if support[k] is not None:
            n, d = support[k]
            r = Pk[k - 1]
            rows.append(sparse.hstack([sparse.csr_matrix(n[:, :1]) @ r, sparse.csr_matrix(n[:, 1:]) @ r]))
            rhs.append(d - n @ b[k])
    if not rows:
        return c[:, :2].copy()
    A = sparse.vstack(rows).tocsc()
    u = np.concatenate(rhs)
    st = clarabel.DefaultSettings()
    st.verbose = False
    sol = clarabel.DefaultSolver(sparse.triu(sparse.block_diag([Hs, Hs])).tocsc(), -np.r_[Hs @ c[:, 0], Hs @ c[:, 1]],
                                 A, u, [clarabel.NonnegativeConeT(len(u))], st).solve()
    if str(sol.status) not in ("Solved", "AlmostSolved"):
        raise RuntimeError(f"dynamics filter: the look-ahead centre-of-mass path was not found ({sol.status})")
    x = np.asarray(sol.x)
    return np.stack([x[:T], x[T:]], axis=1)


def dynamics_filter(capture: Capture, *, omega: float = 20.0, zeta: float = 1.0, substeps: int | None = None,
                    max_step: float = 1 / 240, phases: NDArray[np.bool_] | None = None, beta: float = 0.2,
                    contact_distance: float = 0.005, guard_distance: float = 0.05, stance_weight: float = 100.0, root_weight: float = 1.0,
                    regularisation: float = 1e-3, flat: float = 0.03, lift: bool = True, normal_weight: float = 10.0, lift_window: float = 0.5, com_weight: float = 100.0, com_omega: float | None = None,
                    inertia_weighting: float = 0.5, preview: bool = True, preview_margin: float = 0.0,
                    preview_velocity: float = 0.01, soles: tuple[float, float, float] | None = FILTER_SOLES,
                    progress: bool = False) -> Capture:
    """The capture made physically consistent by the dynamics filter (module docstring).

    ``omega`` (rad/s) and ``zeta``: the PD law's natural frequency and damping ratio;
    ``substeps``: simulation steps per capture frame (default: enough for steps of at most
    ``max_step`` s); ``phases`` (T, nfeet): the capture's stance phases (default
    :func:`contact_phases`); ``beta``: the Baumgarte fraction of a gap closed per step;
    ``contact_distance``/``guard_distance`` (m): how near the ground a sole point may push /
    is kept from going through; ``stance_weight``: w_c; ``regularisation``: eps; ``flat`` (m),
    ``normal_weight``, ``lift``, ``lift_window`` (s), ``com_weight`` (0: no balance terms) and
    ``com_omega`` (rad/s, default ``omega``): the balance terms; ``inertia_weighting``: the
    exponent p of the tracking term's weights W (module docstring; 0: all 1); ``preview``,
    ``preview_margin`` (m, how far inside the soles' polygon the centre of pressure is kept) and
    ``preview_velocity`` (s^2, the weight of the velocity's deviation against the position's):
    the look-ahead centre-of-mass reference (module docstring); ``soles`` (heel, toe, width): the
    filtered figure's sole points (:meth:`Capture.with_soles`; default :data:`FILTER_SOLES`, module
    docstring "Soles"; None: the capture's figure as it is), while the default ``phases`` are
    the capture's own soles'.  Returns a
    :class:`Capture` of the filtered motion at the capture's frames, with ``.filter`` its
    :class:`FilterReport`."""
    if not isinstance(capture, Capture):
        raise TypeError(f"capture: expected a linkdyn.mocap.Capture, got {type(capture).__name__}")
    omega, zeta = _positive(omega, "omega"), _positive(zeta, "zeta")
    beta = _positive(beta, "beta")
    if beta > 1:
        raise ValueError(f"beta: expected a fraction in (0, 1], got {beta}")
    contact_distance = _positive(contact_distance, "contact_distance")
    guard_distance = _positive(guard_distance, "guard_distance")
    if guard_distance < contact_distance:
        raise ValueError("guard_distance: must not be below contact_distance")
    stance_weight = _positive(stance_weight, "stance_weight")
    regularisation = _positive(regularisation, "regularisation")
    orig = capture
    if soles is not None:
        capture = capture.with_soles(soles)
    m = capture.model
    qc, vc, ac = capture.q, capture.v, capture.a
    T = len(qc)
    if T < 2:
        raise MocapError(f"{capture.skeleton.path}: {T} frame(s); the filter needs at least 2")
    for name, x in (("q", qc), ("v", vc), ("a", ac)):
        if not np.isfinite(x).all():
            raise ValueError(f"capture.{name}: not finite")
    nf = len(capture.feet.names)
    if nf == 0:
        raise MocapError(f"{capture.skeleton.path}: the figure has no feet (no joint named foot/ankle with a side)")
    phases = contact_phases(orig) if phases is None else np.asarray(phases, dtype=bool)
    if phases.shape != (T, nf):
        raise ValueError(f"phases: expected shape {(T, nf)}, got {phases.shape}")
    if substeps is None:
        substeps = max(1, int(np.ceil(capture.dt / _positive(max_step, "max_step") - 1e-9)))
    elif not isinstance(substeps, (int, np.integer)) or substeps < 1:
        raise ValueError(f"substeps: expected a positive integer, got {substeps!r}")
    h = capture.dt / substeps
    if omega * h > 1.0:
        raise ValueError(f"omega: {omega} rad/s is too stiff for steps of {h:g} s (omega h must be <= 1); "
                         f"lower it or pass more substeps")
    kp, kd = omega ** 2, 2 * zeta * omega
    root_weight = _positive(root_weight, "root_weight")
    # each coordinate's weight in ||a - a_ref||^2: its diagonal of the joint-space inertia at the
    # first frame over the joints' median, to the power inertia_weighting (0: all 1)
    inertia_weighting = float(inertia_weighting)
    if not np.isfinite(inertia_weighting) or inertia_weighting < 0:
        raise ValueError(f"inertia_weighting: expected an exponent >= 0, got {inertia_weighting}")
    dM = np.diag(crba(m, qc[0]))
    wdiag = np.diag((np.maximum(dM, 1e-12) / np.median(dM[6:]) if m.nv > 6 else np.ones(m.nv)) ** inertia_weighting)
    wdiag[:6, :6] *= root_weight

    nv = m.nv
    names = [c.name for c in m.contacts]
    pidx = [[names.index(n) for n in pts] for pts in capture.feet.points]
    allp = [i for ps in pidx for i in ps]
    npt = len(allp)
    foot_of = np.repeat(np.arange(nf), [len(p) for p in pidx])
    body = np.array([m.contacts[i].body for i in allp])
    local = np.array([m.contacts[i].position for i in allp])
    mu = np.array([m.contacts[i].friction for i in allp])
    bodies = sorted(set(body.tolist()))
    frame_of = {b: m.body_names[b] for b in bodies}
    g = float(np.linalg.norm(m.gravity))
    mg = capture.mass * (g if g > 0 else 1.0)

    # the capture's centre of mass, its velocity and acceleration (the balance feedback's reference)
    # The tracked motion: the capture lowered by how high its stance feet float (the skeleton's
    # foot joints are not its soles: 1-3 cm on the real walk of docs/mocap.md), so that it can
    # stand on the ground: the lowest sole point of the feet in stance, smoothed over ``lift_window`` s
    P_cap = _sole_points(m, qc)[:, allp]
    qt = qc.copy()
    if lift:
        zmin = np.where(phases[:, foot_of], P_cap[..., 2], np.inf).min(axis=1)
        have = np.isfinite(zmin)
        if have.any():
            idx = np.arange(T)
            zmin = np.interp(idx, idx[have], zmin[have])
            wdw = max(1, int(round(lift_window / capture.dt)))
            zmin = np.convolve(np.pad(zmin, (wdw, wdw), mode="edge"), np.ones(2 * wdw + 1) / (2 * wdw + 1), "same")[wdw:-wdw]
            qt[:, 2] -= zmin
            P_cap[..., 2] -= zmin[:, None]
    c_cap = center_of_mass(m, qt)
    dc_cap = np.gradient(c_cap, capture.dt, axis=0)
    ddc_cap = np.gradient(dc_cap, capture.dt, axis=0)
    V_cap = np.gradient(P_cap, capture.dt, axis=0)
    A_cap = np.gradient(V_cap, capture.dt, axis=0)
    low_cap = np.stack([P_cap[:, foot_of == f_, 2].min(axis=1) for f_ in range(nf)], axis=1)
    # ... and its angular momentum about the centre of mass (world frame), from the root's rows of M
    L_cap = np.empty((T, 3))
    for k0 in range(0, T, 256):
        sl_ = slice(k0, min(T, k0 + 256))
        L_cap[sl_] = _angular_momentum(m, qt[sl_], vc[sl_], c_cap[sl_])
    dL_cap = np.gradient(L_cap, capture.dt, axis=0)
    preview_margin, preview_velocity = float(preview_margin), float(preview_velocity)
    for name_, x_ in (("preview_margin", preview_margin), ("preview_velocity", preview_velocity)):
        if not np.isfinite(x_) or x_ < 0:
            raise ValueError(f"{name_}: expected a value >= 0, got {x_}")
    if preview and g > 0:
        # look ahead: the capture's centre of mass moved (horizontally, as little as it can) so that
        # the centre of pressure it asks for lies on the capture's own stance soles at every frame
        # (those within ``flat`` of each stance foot's lowest point, ``preview_margin`` inside);
        # the tracked root moves with it
        support = []
        for k_ in range(T):
            pts = [P_cap[k_, foot_of == f_] for f_ in range(nf) if phases[k_, f_]]
            pts = [Pf[Pf[:, 2] <= Pf[:, 2].min() + flat, :2] for Pf in pts]
            support.append(_support_rows(np.vstack(pts), preview_margin) if pts else None)
        c_f = _feasible_com(c_cap, dL_cap, support, capture.dt, capture.mass, g, preview_velocity)
        qt[:, :2] += c_f - c_cap[:, :2]
        c_cap = np.c_[c_f, c_cap[:, 2]]
        dc_cap = np.gradient(c_cap, capture.dt, axis=0)
        ddc_cap = np.gradient(dc_cap, capture.dt, axis=0)
    wfoot = np.sqrt([1.0, 1.0, normal_weight])
    com_weight = float(com_weight)
    if not np.isfinite(com_weight) or com_weight < 0:
        raise ValueError(f"com_weight: expected a weight >= 0, got {com_weight}")
    com_omega = omega if com_omega is None else _positive(com_omega, "com_omega")
    kpc, kdc = com_omega ** 2, 2 * zeta * com_omega
    gvec = np.asarray(m.gravity, dtype=float)
    Mtot = float(capture.mass)

    from proxsuite import proxqp

    # the model's joint limits (rows of the QP, below): each finite bound of a coordinate, as the
    # contact catalog lists them ((name, q index, v index, sign, bound): gap = sign (q - bound)), and
    # the ball joints' swing cones and twist ranges
    scalar_lim = [(qa, va, sg, b_) for _, qa, va, sg, b_ in UnitCatalog(m, contacts=False).coord_limits]
    ball_bodies = ball_limit_joints(m)
    ball_va = [int(m.jnt_vadr[i]) for i in ball_bodies for _ in ball_limit_names(m.joints[i])]
    ball_lim = len(ball_va) > 0
    nlim = len(scalar_lim) + len(ball_va)

    # the initial state: the capture's, lifted if a sole point starts below the ground
    q = qt[0].copy()
    low = _sole_points(m, q[None])[0, allp, 2].min()
    if low < 0:
        q[2] -= low
    v = vc[0].copy()
    S = (T - 1) * substeps + 1
    relaxed = []
    prev = None                     # the last step's QP solution (primal, equality and inequality duals)
    Q, V, A = np.empty((S, m.nq)), np.empty((S, nv)), np.empty((S, nv))
    TAU, F, GAP = np.empty((S, nv)), np.zeros((S, npt, 3)), np.empty((S, npt))
    root = slice(0, 6)
    it = range(S)
    if progress:
        from tqdm import tqdm
        it = tqdm(it, desc="dynamics filter", unit="step")
    for s in it:
        k, j = divmod(s, substeps)
        k = min(k, T - 1)
        tau_s = j * h
        if j == 0:
            q_ref, v_ref, a_ref0 = qt[k], vc[k], ac[k]
        else:
            q_ref = _m.integrate(m, qt[k], tau_s * vc[k] + 0.5 * tau_s ** 2 * ac[k])
            v_ref, a_ref0 = vc[k] + tau_s * ac[k], ac[k]
        a_ref = a_ref0 + kd * (v_ref - v) + kp * _m.difference(m, q, q_ref)
        M = crba(m, q)
        b = nonlinear_effects(m, q, v)
        kin = forward_kinematics(m, q, v, np.zeros(nv))
        # sole points: world position, velocity, acceleration at a = 0 and Jacobian
        R = kin.R[body]                                                 # (n, 3, 3)
        P = kin.p[body] + np.einsum("nij,nj->ni", R, local)
        vb, ab = kin.v[body], kin.a[body]                               # body-frame [lin; ang]
        w = vb[:, 3:]
        vel_b = vb[:, :3] + np.cross(w, local)
        acc_b = ab[:, :3] + np.cross(ab[:, 3:], local) + np.cross(w, vel_b)
        Vp = np.einsum("nij,nj->ni", R, vel_b)
        dJv = np.einsum("nij,nj->ni", R, acc_b)
        Jb = {bb: jacobian(m, q, frame_of[bb], "world") for bb in bodies}
        gap = P[:, 2]
        GAP[s] = gap
        guard = np.flatnonzero(gap < guard_distance)
        act = np.flatnonzero(gap < contact_distance)
        nc = act.size
        Jp = {}
        for i in guard:
            J6 = Jb[body[i]]
            Jp[i] = J6[:3] - _skew(P[i]) @ J6[3:]         # the point's velocity v_o + w x p
        nx = nv + 3 * nc
        # objective
        H = np.zeros((nx, nx))
        gv = np.zeros(nx)
        H[:nv, :nv] = wdiag
        gv[:nv] = -wdiag.diagonal() * a_ref
        on = phases[k][foot_of]
        for i in guard:
            if on[i]:
                # global feedback on the stance foot: its points follow the capture's, the foot's
                # lowest point put on the ground
                ps = j * h
                pr = P_cap[k, i] + ps * V_cap[k, i] + 0.5 * ps ** 2 * A_cap[k, i]
                vr = V_cap[k, i] + ps * A_cap[k, i]
                ar = A_cap[k, i].copy()
                pr[2] -= low_cap[k, foot_of[i]] + flat
                if pr[2] <= 0:              # near the foot's lowest point: flat on the ground
                    pr[2] = vr[2] = ar[2] = 0.0
                target = ar + kd * (vr - Vp[i]) + kp * (pr - P[i]) - dJv[i]
                Ji = Jp[i]
                Jw = Ji * wfoot[:, None]
                H[:nv, :nv] += stance_weight * Jw.T @ Jw
                gv[:nv] -= stance_weight * Jw.T @ (wfoot * target)
        if nc:
            H[nv:, nv:] += regularisation * np.eye(3 * nc)     # the unknowns are f / (m g)
            if com_weight > 0:
                # balance: the ground forces give the centre of mass c'' = sum f / m + g; asked to
                # be c''_cap + K_d (c'_cap - c') + K_p (c_cap - c), the capture's centre of mass
                cs = j * h
                cr = c_cap[k] + cs * dc_cap[k] + 0.5 * cs ** 2 * ddc_cap[k]
                dcr = dc_cap[k] + cs * ddc_cap[k]
                c = center_of_mass(m, q)
                dc = kin.R[1] @ (M[:3] @ v) / Mtot
                ddc_ref = ddc_cap[k] + kdc * (dcr - dc) + kpc * (cr - c)
                Sx = np.tile(np.eye(3), (1, nc)) * (mg / Mtot)     # c'' - g in the unknowns
                H[nv:, nv:] += com_weight * Sx.T @ Sx
                gv[nv:] -= com_weight * Sx.T @ (ddc_ref - gvec)
                # the angular momentum about it: L' = sum (p_i - c) x f_i, asked to be
                # L'_cap + K_d (L_cap - L), per unit mass
                L = _angular_momentum(m, q[None], v[None], c[None], M[None], kin.R[None, 1], kin.p[None, 1])[0]
                dL_ref = dL_cap[k] + kdc * (L_cap[k] + cs * dL_cap[k] - L)
                Sl = np.hstack([_skew(P[i] - c) for i in act]) * (mg / Mtot)
                H[nv:, nv:] += com_weight * Sl.T @ Sl
                gv[nv:] -= com_weight * Sl.T @ (dL_ref / Mtot)
        # root equations: M[:6] a - J[:, :6]^T f = -b[:6]
        Aeq = np.zeros((6, nx))
        Aeq[:, :nv] = M[root]
        for r_, i in enumerate(act):         # (r_, not c: c is the centre of mass above)
            Aeq[:, nv + 3 * r_:nv + 3 * r_ + 3] = -mg * Jp[i][:, root].T
        beq = -b[root]
        # inequalities: friction pyramid (<= 0), non-penetration (-n^T J a <= n^T dJ v + bound)
        ng = guard.size
        C = np.zeros((5 * nc + ng, nx))
        u = np.zeros(5 * nc + ng)
        if nc:
            C[:5 * nc] = _friction_rows(mu[act], nc, nv)
        for r, i in enumerate(guard):
            C[5 * nc + r, :nv] = -Jp[i][2]
            u[5 * nc + r] = dJv[i, 2] + (Vp[i, 2] + (beta if gap[i] <= contact_distance else 1.0) * gap[i] / h) / h
        if nlim:
            # joint limits, kept in the next step (semi-implicit Euler, v' = v + h a, q' = q (+) h v'):
            # a one-degree coordinate q + h v + h^2 a inside [lower, upper]; a ball joint's swing
            # cone and twist range, gap + h G v' + h^2/2 G' v >= 0 (G its rows, G' v the drift:
            # linkdyn.contact.swing_twist.ball_limits_model)
            CL = np.zeros((nlim, nx))
            uL = np.zeros(nlim)
            r = 0
            for qa, va, sg, b_ in scalar_lim:         # sign (q + h v + h^2 a - bound) >= 0
                CL[r, va] = -sg
                uL[r] = sg * (q[qa] + h * v[va] - b_) / h ** 2
                r += 1
            if ball_lim:
                gq, Gq, dq_ = ball_limits_model(m, q, v)
                for u_, va in enumerate(ball_va):
                    CL[r, va:va + 3] = -Gq[u_]
                    uL[r] = (gq[u_] + h * Gq[u_] @ v[va:va + 3]) / h ** 2 + 0.5 * dq_[u_]
                    r += 1
            C = np.vstack([C, CL])
            u = np.r_[u, uL]
        qp = proxqp.dense.QP(nx, 6, C.shape[0])
        st = qp.settings
        st.eps_abs, st.eps_rel, st.verbose, st.max_iter = 1e-9, 0.0, False, 3000
        st.eps_primal_inf, st.eps_dual_inf = 1e-15, 1e-15
        qp.init(H, gv, Aeq, beq, C if C.shape[0] else None, np.full(C.shape[0], -1e20) if C.shape[0] else None,
                u if C.shape[0] else None)
        if prev is not None and prev[0].size == nx and prev[2].size == C.shape[0]:
            qp.solve(*prev)         # warm start from the last step's solution: half the QP's time
        else:
            qp.solve()
        prev = (qp.results.x.copy(), qp.results.y.copy(), qp.results.z.copy())
        if qp.results.info.status == proxqp.PROXQP_SOLVED:
            x = qp.results.x
        else:       # ill-conditioned (a hard impact): the interior-point solver, slower but sure
            x, status = _clarabel(H, gv, Aeq, beq, C, u)
            if x is None and nc < guard.size:
                # infeasible: a point that cannot push (above contact_distance) cannot be stopped
                # either (a straight leg cannot pull its foot up); its row is dropped this step
                keep = np.r_[np.arange(5 * nc), 5 * nc + np.flatnonzero(gap[guard] < contact_distance),
                             5 * nc + guard.size + np.arange(nlim)]
                x, status = _clarabel(H, gv, Aeq, beq, C[keep], u[keep])
                relaxed.append(s)
            if x is None:
                err = RuntimeError(f"dynamics filter: the QP at t = {s * h:.4f} s was not solved (proxsuite, "
                                   f"then clarabel: {status})")
                err.q, err.forces = Q[:s], F[:s]       # the steps done, for a look at what went wrong
                raise err
        a = x[:nv].copy()
        fa = mg * x[nv:].reshape(nc, 3)
        gen = np.zeros(nv)
        for r_, i in enumerate(act):
            F[s, i] = fa[r_]
            gen += Jp[i].T @ fa[r_]
        Q[s], V[s], A[s] = q, v, a
        TAU[s] = M @ a + b - gen
        v = v + h * a
        q = _m.integrate(m, q, h * v)
    frames = np.arange(T) * substeps
    qo, vo, ao = Q[frames], V[frames], A[frames]
    joints = ["root_joint"] + [n for n, p in zip(capture.skeleton.names, capture.skeleton.parents) if p >= 0]
    dq = _m.difference(m, qo, qc)
    dev = np.empty((T, len(joints)))
    for c, jn in enumerate(joints):
        sl = m.v_slice(jn)
        dev[:, c] = np.linalg.norm(dq[:, max(sl.start, sl.stop - 3):sl.stop], axis=1)   # a hinge: its angle
    report = FilterReport(h, np.arange(S) * h, Q, V, A, TAU, F, GAP, np.array(relaxed, dtype=int), joints, dev,
                          np.linalg.norm(qo[:, :3] - qc[:, :3], axis=1))
    return replace(capture, q=qo, v=vo, a=ao, filter=report)
