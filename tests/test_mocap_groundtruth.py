"""linkdyn.mocap against ground truth from linkdyn's own simulation (issue 26, "Done when"):
the capture figure steps forwards under a controller in ``ld.Simulation`` with the library's
unilateral friction contacts at its sole points (time stepping), the motion is written as BVH,
read back and run through the pipeline, and what the pipeline finds is compared with the
simulated contact forces and joint torques, and with the simulation's contact events.

The controller (written here, not part of linkdyn) is a whole-body inverse-dynamics QP of the
usual kind (e.g. Herzog et al. 2016, "Momentum control with hierarchical inverse dynamics on a
torque-controlled humanoid", Autonomous Robots 40(3)): at every step, over the accelerations
a and the sole forces f, min ||a - a_des||^2 (a_des a PD law on a scripted reference, the root
weighted 10) + 100 ||J_swing a + J'v - a_swing||^2 (the swing foot's pose) + 1e4 (the right
foot's share of the vertical load - its planned share)^2 + 1e-4 ||f / (m g)||^2, subject to the
root's six equations of motion, each stance foot's 6-D acceleration (a PD law holding it flat
and still) and the friction pyramid inscribed in the cone; the torques are M a + h - J^T f.
The reference is a quasi-static step sequence (feet flat, legs by closed-form inverse
kinematics, the pelvis placed so that the centre of mass follows a planned path): the weight
moves onto the left foot, the right foot steps 15 cm forwards, the weight moves onto it, the
left foot lifts."""
import pathlib
from functools import lru_cache

import numpy as np
import pytest

pytest.importorskip("pybvh")
pytest.importorskip("clarabel")

import linkdyn as ld  # noqa: E402
from linkdyn import mocap  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

from test_mocap import skeleton, without_toes, write  # noqa: E402

H = 1e-3                       # the simulation's step and the file's frame time (s)
T_END = 3.9                    # s: the left foot is then 2 cm up, in its swing
L1, L2 = 0.43, 0.42            # thigh and shank of the skeleton (m)
HIP = {"Left": np.array([0.09, -0.04, 0.0]), "Right": np.array([-0.09, -0.04, 0.0])}     # file axes
ANKLE = 0.07                   # the ankle's height above the sole (m)
FOOT_C = 0.08                  # the centre of the sole ahead of the ankle (m)
STEP, LIFT = 0.15, 0.04        # step length and swing height (m)
SWING = {"Right": (1.4, 2.2), "Left": (3.2, 4.0)}
W_BODY = 70 * 9.81


def _smooth(s):
    s = np.clip(s, 0.0, 1.0)
    return s ** 3 * (10 - 15 * s + 6 * s ** 2)


def plan(t):
    """The scripted step sequence at time t: the centre of mass's target (x, y), each ankle's
    world position, and the right foot's planned share of the vertical load."""
    def lin(t0, t1):
        return np.clip((t - t0) / (t1 - t0), 0.0, 1.0)

    c0, c1, c2 = np.array([FOOT_C, 0.0]), np.array([FOOT_C, 0.09]), np.array([STEP + FOOT_C, -0.09])
    com = c0 + (c1 - c0) * _smooth(lin(0.4, 1.4)) + (c2 - c1) * _smooth(lin(2.2, 3.2))
    share = 0.5 - 0.5 * lin(0.4, 1.4) + lin(2.2, 3.2)
    ankles = {}
    for side, y, x1 in (("Left", 0.09, STEP), ("Right", -0.09, STEP)):
        s = lin(*SWING[side])
        ankles[side] = np.array([x1 * _smooth(s), y, ANKLE + 27 / 4 * LIFT * s ** 2 * (1 - s)])
    return com, ankles, share


def pose(m, pelvis, ankles):
    """The figure's q with the pelvis upright at ``pelvis`` and each foot flat with its ankle at
    ``ankles[side]``: each leg by the closed form of a two-link chain (hip roll, hip and knee
    pitch; the ankle undoes them), in the file's axes (x left, y up, z forwards)."""
    C = mocap.Y_UP_TO_Z_UP
    q = ld.neutral(m)
    q[:3] = pelvis
    q[3:7] = Rotation.from_matrix(C).as_quat()
    for side in ("Left", "Right"):
        d = C.T @ (ankles[side] - (pelvis + C @ HIP[side]))
        psi = np.arctan2(d[0], -d[1])
        r = np.hypot(d[0], d[1])
        D = np.hypot(r, d[2])
        assert D < 0.97 * (L1 + L2), f"the {side} leg cannot reach its foot"
        kappa = np.pi - np.arccos((L1 ** 2 + L2 ** 2 - D ** 2) / (2 * L1 * L2))
        theta = np.arctan2(d[2], r) + np.arccos((L1 ** 2 + D ** 2 - L2 ** 2) / (2 * L1 * D))
        Rz, Rx = (lambda a: Rotation.from_rotvec([0, 0, a])), (lambda a: Rotation.from_rotvec([a, 0, 0]))
        for name, R in ((side + "UpLeg", Rz(psi) * Rx(-theta)), (side + "Leg", Rx(kappa)),
                        (side + "Foot", Rx(theta - kappa) * Rz(-psi))):
            q[m.q_slice(name)] = R.as_quat()
    return q


def _qp(Hq, g, Aeq, beq, Cin):
    """min x'Hx/2 + g'x, Aeq x = beq, Cin x <= 0 (Clarabel; proxsuite if Clarabel stalls)."""
    import clarabel
    from scipy import sparse
    st = clarabel.DefaultSettings()
    st.verbose = False
    st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = 1e-10
    sol = clarabel.DefaultSolver(sparse.csc_matrix(np.triu(Hq)), g, sparse.csc_matrix(np.vstack([Aeq, Cin])),
                                 np.concatenate([beq, np.zeros(len(Cin))]),
                                 [clarabel.ZeroConeT(len(beq)), clarabel.NonnegativeConeT(len(Cin))], st).solve()
    if str(sol.status) in ("Solved", "AlmostSolved"):
        return np.asarray(sol.x)
    from proxsuite import proxqp
    qp = proxqp.dense.QP(len(g), len(beq), len(Cin))
    s = qp.settings
    s.eps_abs, s.eps_rel, s.verbose, s.max_iter, s.eps_primal_inf, s.eps_dual_inf = 1e-9, 0.0, False, 100000, 1e-15, 1e-15
    qp.init(Hq, g, Aeq, beq, Cin, np.full(len(Cin), -1e20), np.zeros(len(Cin)))
    qp.solve()
    assert qp.results.info.status == proxqp.PROXQP_SOLVED, (sol.status, qp.results.info.status)
    return qp.results.x.copy()


@lru_cache(maxsize=None)
def stepping(tmp_dir):
    """Simulate the capture figure's steps (module docstring) with ``ld.Simulation`` (time
    stepping, 1 kHz).  Returns (capture the figure came from, recording segment, the catalog's
    unit frames at each sample)."""
    from linkdyn.contact.rows import UnitCatalog
    tmp = pathlib.Path(tmp_dir)
    joints = without_toes()
    angles = np.zeros((3, len(joints), 3))
    cap0 = mocap.load_bvh(write(tmp, skeleton(angles, np.tile([0.0, 95.0, 0.0], (3, 1)), frame_time=H, joints=joints),
                                "rest.bvh"), mass=70, cutoff=None, ground=0.0)
    m = cap0.model
    t_ref = np.arange(int(round(T_END / H)) + 2) * H
    Qr = []
    for t in t_ref:                     # the pelvis placed so that the centre of mass is on its path
        com, ank, _ = plan(t)
        pel = np.array([com[0], com[1], ANKLE + 0.75 + 0.04])
        for _ in range(4):
            pel[:2] += com - ld.center_of_mass(m, pose(m, pel, ank))[:2]
        Qr.append(pose(m, pel, ank))
    Qr = np.array(Qr)
    Vr = np.vstack([np.zeros((1, m.nv)), ld.difference(m, Qr[:-1], Qr[1:]) / H])
    Ar = np.vstack([(Vr[1:] - Vr[:-1]) / H, np.zeros((1, m.nv))])
    share = np.array([plan(t)[2] for t in t_ref])
    feet = ["LeftFoot", "RightFoot"]
    kin = ld.forward_kinematics(m, Qr)
    Rref, Pref = kin.R[:, [m.body_id(f) for f in feet]], kin.p[:, [m.body_id(f) for f in feet]]
    Vp = np.gradient(Pref, H, axis=0)
    Ap = np.gradient(Vp, H, axis=0)
    cat = UnitCatalog(m, limits=False, contacts=True)
    w, mg, mu = 20.0, W_BODY, 0.8 / np.sqrt(2.0)
    kp, kd = w ** 2, 2 * w

    def controller(t, q, v):
        k = min(int(round(t / H)), len(t_ref) - 1)
        nv = m.nv
        a_des = Ar[k] + kd * (Vr[k] - v) + kp * ld.difference(m, q, Qr[k])
        M, b = ld.mass_matrix(m, q), ld.nonlinear_effects(m, q, v)
        units = cat.units(q, v)
        touching = units.gap < 5e-4
        wa = np.ones(nv)
        wa[:6] = 10.0
        rows, rhs, eq, eq_rhs, pts = [np.diag(wa)], [wa * a_des], [], [], []
        for s, (side, body) in enumerate(zip(("Left", "Right"), feet)):
            J = ld.jacobian(m, q, body, "local_world_aligned")
            dJv = ld.jacobian_dot_times_v(m, q, v, body, "local_world_aligned")
            X = ld.frame_pose(m, q, body)
            vf = J @ v
            turn = Rotation.from_matrix(Rref[k, s] @ X[:3, :3].T).as_rotvec()
            t0, t1 = SWING[side]
            if not (t0 <= t < t1) and touching[4 * s:4 * s + 4].any():       # stance: flat and still
                pts += [i for i in range(4 * s, 4 * s + 4) if touching[i]]
                eq.append(J)
                eq_rhs.append(np.r_[-kd * vf[:3], kp * turn - kd * vf[3:]] - dJv)
            else:                                                               # swing: follow the plan
                af = np.r_[Ap[k, s] + kd * (Vp[k, s] - vf[:3]) + kp * (Pref[k, s] - X[:3, 3]), kp * turn - kd * vf[3:]]
                rows.append(10.0 * J)
                rhs.append(10.0 * (af - dJv))
        n = len(pts)
        Ja, ra = np.vstack(rows), np.concatenate(rhs)
        Jp = np.concatenate([units.T[pts], units.N[pts][:, None]], axis=1).reshape(3 * n, nv)    # world x, y, z
        nx = nv + 3 * n                                 # x = [a; f / (m g)]
        Hq = np.zeros((nx, nx))
        Hq[:nv, :nv] = Ja.T @ Ja
        Hq[nv:, nv:] = 1e-4 * np.eye(3 * n)
        g = np.r_[-Ja.T @ ra, np.zeros(3 * n)]
        if {p // 4 for p in pts} == {0, 1}:            # the right foot's share of the vertical load
            row = np.zeros(nx)
            for j, p in enumerate(pts):
                row[nv + 3 * j + 2] = (1.0 if p >= 4 else 0.0) - share[k]
            Hq += 1e4 * np.outer(row, row)
        Aeq = np.hstack([M[:6], -mg * Jp[:, :6].T]) / mg
        beq = -b[:6] / mg
        if eq:
            Aeq = np.vstack([Aeq, np.hstack([np.vstack(eq), np.zeros((6 * len(eq), 3 * n))])])
            beq = np.concatenate([beq] + eq_rhs)
        Cin = np.zeros((5 * n, nx))
        for i in range(n):
            r, c = 5 * i, nv + 3 * i
            Cin[r:r + 4, c:c + 2] = [[1, 0], [-1, 0], [0, 1], [0, -1]]
            Cin[r:r + 4, c + 2] = -mu
            Cin[r + 4, c + 2] = -1.0
        x = _qp(Hq, g, Aeq, beq, Cin)
        tau = M @ x[:nv] + b - Jp.T @ (mg * x[nv:])
        tau[:6] = 0.0
        return tau

    # no projection: a projection moves q without v, which no reading of q(t) can give back (the
    # step relinearizes the point contacts at the answer's own motion: without it, 12 524
    # projections in the 3 900 steps)
    sim = ld.Simulation(m, Qr[0], dt=H, controller=controller, contact_method="timestep")
    sim.run(T_END, progress=False)
    assert sim.contact_stats["projections"] == 0
    seg = sim.recording.segments[0]
    frames = np.array([cat.units(q).frame for q in seg.q])
    return cap0, seg, frames, sim.recording.extremes


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(capture, motion Q (T, nq), world sole forces F (T, 8, 3) and torques TAU (T, nv) of the
    step from each frame, feet down DOWN (T, 2): a positive normal force in that step)."""
    cap0, seg, frames, extremes = stepping(str(tmp_path_factory.mktemp("stepping")))
    Q = np.array(seg.q)
    f = np.array(seg.unit_force)                                       # [normal, t1, t2], catalog order
    world = np.einsum("kuij,kuj->kui", frames, f[:, :, [1, 2, 0]])     # frame columns: t1, t2, n
    F = np.zeros_like(world)
    F[:-1] = world[1:]                                                # the step from frame k: sample k + 1
    TAU = np.zeros((len(Q), np.array(seg.tau).shape[1]))
    TAU[:-1] = np.array(seg.tau)[1:]
    fn = np.zeros((len(Q), 8))
    fn[:-1] = f[1:, :, 0]
    DOWN = np.stack([fn[:, :4].sum(1) > 0, fn[:, 4:].sum(1) > 0], axis=1)
    return cap0, Q, F, TAU, DOWN, fn, extremes


def grf_of(F):
    return np.stack([F[:, :4].sum(1), F[:, 4:].sum(1)], axis=1)


def test_the_simulated_figure_steps(run):
    """The simulation is a stepping motion: each foot has a single-support phase (the other foot
    more than 3 cm up), there are double-support phases, the right foot lands 15 cm ahead; at
    every step the contact forces push and stay in their friction cones, no sole point is more
    than 1 mm in the ground, and the summed reaction is the body's rate of change of momentum
    (m times the centre of mass's acceleration less gravity) to 1 % of body weight."""
    cap0, Q, F, TAU, DOWN, fn, extremes = run
    m = cap0.model
    P = mocap.capture._sole_points(m, Q)
    left, right = DOWN[:-1, 0] & ~DOWN[:-1, 1], DOWN[:-1, 1] & ~DOWN[:-1, 0]
    both = DOWN[:-1].all(1)
    assert left.sum() > 500 and right.sum() > 500 and both.sum() > 1000
    assert P[:-1][left][:, 4:, 2].min(1).max() > 0.03 and P[:-1][right][:, :4, 2].min(1).max() > 0.03
    assert DOWN[:-1].any(1).all()                                 # a quasi-static step: never in flight
    assert abs(P[-1, 4:, 0].mean() - P[0, 4:, 0].mean() - STEP) < 0.01
    assert fn.min() >= 0.0 and extremes["max_cone_ratio"] <= 1.0 + 1e-6
    assert extremes["penetration"] < 1e-3 and P[..., 2].min() > -1e-3
    # Newton's law for the whole body at every step: the summed reaction is m (c'' - g), c'' the
    # centre of mass's second difference (to the scheme's O(h) in the ballistic part of a step)
    c = ld.center_of_mass(m, Q)
    cdd = (c[2:] - 2 * c[1:-1] + c[:-2]) / H ** 2
    total = grf_of(F)[1:-1].sum(1)
    err = np.abs(total - 70 * (cdd - m.gravity))
    print(f"penetration {extremes['penetration']:.2e} m, cone ratio {extremes['max_cone_ratio']:.4f}, "
          f"left {left.sum()} right {right.sum()} both {both.sum()} frames")
    print(f"momentum balance: largest error {err.max() / W_BODY:.2e} body weights")
    assert err.max() < 0.01 * W_BODY
    assert np.abs(total[:, 2] / W_BODY - 1).max() > 0.1          # (a check that can fail: the landing is felt)


def test_ground_truth_stepping_round_trips_exactly(run, tmp_path):
    """Written as BVH and read back without smoothing, the simulated steps give back, at every
    frame but the first and the last (whose v and a the file cannot give): the summed ground
    reaction to 1e-6 of body weight and a root residual below 1e-6 body weights; wherever one
    foot is down (the root's six equations then fix its force and moment), that foot's ground
    reaction to 1e-6 of body weight and every joint torque to 1e-6 of the largest."""
    cap0, Q, F, TAU, DOWN, fn, _ = run
    p = tmp_path / "steps.bvh"
    mocap.write_bvh(p, cap0, Q, frame_time=H)
    cap = mocap.load_bvh(p, mass=70, height=cap0.height, cutoff=None, ground=0.0)
    np.testing.assert_allclose(cap.q, Q, atol=1e-12)
    res = mocap.inverse_dynamics(cap, phases=DOWN)
    inner = slice(1, len(Q) - 1)
    true = grf_of(F)
    np.testing.assert_allclose(res.grf.sum(1)[inner], true.sum(1)[inner], rtol=0, atol=1e-6 * W_BODY)
    assert np.abs(res.residual[inner]).max() < 1e-6 * W_BODY
    single = DOWN[:, 0] ^ DOWN[:, 1]
    single[[0, -1]] = False
    assert single.sum() > 1000
    np.testing.assert_allclose(res.grf[single], true[single], rtol=0, atol=1e-6 * W_BODY)
    scale = np.abs(TAU[single][:, 6:]).max()
    print(f"raw: total {np.abs(res.grf.sum(1) - true.sum(1))[inner].max() / W_BODY:.1e} BW, residual "
          f"{np.abs(res.residual[inner]).max() / W_BODY:.1e} BW, one foot {np.abs(res.grf - true)[single].max() / W_BODY:.1e}"
          f" BW, torques {np.abs(res.tau - TAU)[single][:, 6:].max() / scale:.1e} of {scale:.0f} N m")
    np.testing.assert_allclose(res.tau[single][:, 6:], TAU[single][:, 6:], rtol=0, atol=1e-6 * scale)
    assert np.abs(res.tau[single][:, :6]).max() < 1e-6 * W_BODY
    fz = res.forces[..., 2]
    assert fz.min() > -1e-9 * W_BODY
    assert (np.abs(res.forces[..., :2]) <= 0.8 * fz[..., None] + 1e-9 * W_BODY).all()


def test_ground_truth_stepping_with_the_default_smoothing(run, tmp_path):
    """Read back with the default smoothing (``cutoff="auto"``: Winter's residual analysis, 174 Hz
    on this noise-free 1 kHz file) and the simulation's phases, the summed ground reaction is
    within 2 % of body weight in RMS over the clip against the simulated forces filtered the same
    way, and against the simulated forces themselves away from the landing's impact; the ground
    reaction of the one foot down and the joint torques (N m) within 2 % of body weight in RMS
    over the single-support frames away from the landing."""
    cap0, Q, F, TAU, DOWN, fn, _ = run
    p = tmp_path / "steps.bvh"
    mocap.write_bvh(p, cap0, Q, frame_time=H)
    cap = mocap.load_bvh(p, mass=70, height=cap0.height, ground=0.0)
    assert 10.0 < cap.cutoff <= mocap.capture.AUTO_CUTOFF_MAX / H
    res = mocap.inverse_dynamics(cap, phases=DOWN)
    true = grf_of(F)
    inner = slice(1, len(Q) - 1)

    def rms(d):
        return np.sqrt(np.mean(np.sum(d.reshape(len(d), -1) ** 2, axis=1)))
    single = DOWN[:, 0] ^ DOWN[:, 1]
    single[[0, -1]] = False
    # the right foot's landing is a 1 ms impact (an impulse of the time stepping), which no motion
    # smoothed at 174 Hz can carry: against the simulated forces the summed reaction is 2.9 % of
    # body weight off in RMS, all of it within 50 ms of the landing; against the simulated forces
    # filtered the same way (Kristianslund et al. 2012) it is 0.7 %
    from scipy.signal import butter, sosfiltfilt
    true_f = sosfiltfilt(butter(2, cap.cutoff, fs=1 / H, output="sos"), true.sum(1), axis=0)
    landing = np.flatnonzero(np.diff(DOWN[:, 1].astype(int)) == 1)[0] + 1
    away = np.zeros(len(Q), dtype=bool)
    away[inner] = True
    away[landing - 50:landing + 50] = False
    # the one foot down: the frames of single support away from the landing as well (the frame
    # before it carries the smoothed impact on the foot that is down: 503 N)
    single &= away
    foot = rms(res.grf[single] - true[single])
    torque = np.sqrt(np.mean((res.tau[single][:, 6:] - TAU[single][:, 6:]) ** 2))
    total = rms((res.grf.sum(1) - true.sum(1))[inner])
    total_away = rms((res.grf.sum(1) - true.sum(1))[away])
    total_f = rms((res.grf.sum(1) - true_f)[inner])
    print(f"smoothed at {cap.cutoff:.1f} Hz: total {total / W_BODY:.4f} BW ({total_away / W_BODY:.4f} away from the "
          f"landing, {total_f / W_BODY:.4f} against the filtered forces), one foot {foot / W_BODY:.4f} BW, "
          f"torques {torque:.3f} N m")
    assert total_f < 0.02 * W_BODY and total_away < 0.02 * W_BODY
    assert foot < 0.02 * W_BODY and torque < 0.02 * W_BODY
    assert total > total_away                        # (the impact is where the smoothing misses)
    fz = res.forces[..., 2]
    assert fz.min() > -1e-9 * W_BODY
    assert (np.abs(res.forces[..., :2]) <= 0.8 * fz[..., None] + 1e-9 * W_BODY).all()


def events(down):
    """(frame, foot, +1 make / -1 break) of a (T, 2) contact series."""
    out = []
    for s in range(down.shape[1]):
        for k in np.flatnonzero(np.diff(down[:, s].astype(int))):
            out.append((k + 1, s, int(down[k + 1, s]) - int(down[k, s])))
    return sorted(out)


def sampled(run, tmp_path, n, offset=0):
    """The steps as a capture file of every n-th frame from ``offset``, and the simulation's contact
    events at its frames: a foot is down while it pushes or rests on the ground (its lowest sole
    point within 0.1 mm)."""
    cap0, Q, F, TAU, DOWN, fn, _ = run
    low = mocap.capture._sole_points(cap0.model, Q)[..., 2]
    truth = np.stack([DOWN[:, s] | (low[:, 4 * s:4 * s + 4].min(1) <= 1e-4) for s in range(2)], axis=1)[:-1]
    p = tmp_path / f"steps_{n}_{offset}.bvh"
    mocap.write_bvh(p, cap0, Q[offset:-1:n], frame_time=n * H)
    want = events(truth[offset::n])
    assert [(s, e) for _, s, e in want] == [(1, -1), (1, 1), (0, -1)]         # right lifts, lands; left lifts
    return p, want


def lateness(phases, want):
    """Each found event's frame less the simulation's (the same events in the same order, or fail)."""
    got = events(phases)
    assert [(s, e) for _, s, e in got] == [(s, e) for _, s, e in want], (got, want)
    return [int(g[0] - w[0]) for g, w in zip(got, want)]


def default_lateness(run, p, want, cutoff):
    """The lateness of the default phases of the file read with ``cutoff``, checking that the
    capture's still feet rest on the ground (within 10 um) so that the heights are the floor."""
    cap = mocap.load_bvh(p, mass=70, height=run[0].height, cutoff=cutoff, ground=0.0)
    rest = mocap.capture.rest_height(cap)
    assert abs(rest) < 1e-5, rest
    on, off = mocap.contact_heights(cap)
    assert on == mocap.capture.HEIGHT_MIN and off == pytest.approx(1.5 * on)
    return cap, lateness(mocap.contact_phases(cap), want)


def test_contact_phases_of_the_simulated_steps(run, tmp_path):
    """The contact phases of the steps read as a 30 Hz capture (every 33rd frame, from each of the
    33 sampling offsets), without smoothing and with the default one, against the simulation's (``sampled``).
    With the default thresholds, adapted to the capture (``contact_heights``: its still feet rest
    on the ground to 2e-6 m, so the floor, 0.15 mm to land and 0.225 mm to lift), exactly the
    simulation's events are found (the right foot lifts and lands, the left foot lifts), each at
    the first frame at which the sampled simulation shows it or the next one: never early (the
    event happened between that frame and the one before, and a foot lifted early would lose a
    force it still has, one landed early get a force in the air), at most one frame late.  Larger
    thresholds date the lift-offs later (a foot leaving the ground from rest rises as t^3: 0.5 mm
    one frame after it leaves): 1 mm / 2 mm up to two frames late; the fixed 4 cm / 6 cm of a real
    capture (whose standing soles float 1-3 cm above the ground) find no event at all, the 4 cm
    swing never rising above 6 cm nor moving faster than 1 m/s (docs/mocap.md)."""
    c = mocap.capture
    tally = {}
    for offset in range(33):
        p, want = sampled(run, tmp_path, 33, offset)
        for cutoff in (None, "auto"):
            cap, late = default_lateness(run, p, want, cutoff)
            assert all(0 <= d <= 1 for d in late), (offset, cutoff, late)
            tally[cutoff, tuple(late)] = tally.get((cutoff, tuple(late)), 0) + 1
            assert events(mocap.contact_phases(cap, height_on=c.HEIGHT_ON, height_off=c.HEIGHT_OFF)) == []
            if offset == 0 and cutoff is None:
                coarse = lateness(mocap.contact_phases(cap, height_on=0.001, height_off=0.002), want)
                assert coarse[1] == 0 and all(0 <= d <= 2 for d in coarse), coarse
                assert max(coarse) > max(late)
    print("frames late (right lifts, lands; left lifts): reads", tally)


@pytest.mark.slow
def test_contact_phases_of_the_simulated_steps_at_every_offset(run, tmp_path):
    """The same at 60 and 100 Hz (every 17th and 10th frame) from every sampling offset, without
    smoothing and with the default one: every event at its frame or one late."""
    worst = {}
    for n in (17, 10):
        for offset in range(n):
            p, want = sampled(run, tmp_path, n, offset)
            for cutoff in (None, "auto"):
                late = default_lateness(run, p, want, cutoff)[1]
                assert all(0 <= d <= 1 for d in late), (n, offset, cutoff, late)
                worst[n] = max(worst.get(n, 0), *late)
    print("latest event (frames):", worst)
