"""linkdyn.mocap: BVH reading and writing, the capture figure, kinematics, contact phases and
inverse dynamics with unknown ground reactions (issue 26).

Every BVH here is made by the test (none is vendored).  The ground truth is a simulation of the
capture figure landing on penalty contacts (known forces at the sole points) under a posture
controller, written as BVH, read back and run through the pipeline."""
import subprocess
import sys
from functools import lru_cache

import numpy as np
import pytest

pytest.importorskip("pybvh")
pytest.importorskip("clarabel")

import linkdyn as ld  # noqa: E402
from linkdyn import mocap  # noqa: E402
from linkdyn.mocap.bvh import Skeleton, write_skeleton  # noqa: E402
from linkdyn.models.human import de_leva  # noqa: E402

# a small humanoid in centimetres, Y up, facing +Z, with mixed channel orders (name, parent, offset, order, end site)
JOINTS = [
    ("Hips", -1, (0, 0, 0), "ZYX", None),
    ("LeftUpLeg", 0, (9, -4, 0), "ZXY", None),
    ("LeftLeg", 1, (0, -43, 0), "XYZ", None),
    ("LeftFoot", 2, (0, -42, 0), "YZX", None),
    ("LeftToeBase", 3, (0, -7, 13), "ZXY", (0, 0, 6)),
    ("RightUpLeg", 0, (-9, -4, 0), "ZXY", None),
    ("RightLeg", 5, (0, -43, 0), "XYZ", None),
    ("RightFoot", 6, (0, -42, 0), "YZX", None),
    ("RightToeBase", 7, (0, -7, 13), "ZXY", (0, 0, 6)),
    ("Spine", 0, (0, 12, 0), "ZXY", None),
    ("Spine1", 9, (0, 22, 0), "ZXY", None),
    ("Neck", 10, (0, 20, 0), "ZXY", None),
    ("Head", 11, (0, 10, 0), "ZXY", (0, 17, 0)),
    ("LeftArm", 10, (17, 16, 0), "XZY", None),
    ("LeftForeArm", 13, (28, 0, 0), "YXZ", None),
    ("LeftHand", 14, (26, 0, 0), "ZXY", (9, 0, 0)),
    ("RightArm", 10, (-17, 16, 0), "XZY", None),
    ("RightForeArm", 16, (-28, 0, 0), "YXZ", None),
    ("RightHand", 17, (-26, 0, 0), "ZXY", (-9, 0, 0)),
]


def without_toes():
    """JOINTS with the feet ending in end sites (the landing test: the sole points then ride on
    the foot, not on a toe light enough to make explicit penalty forces unstable)."""
    names = [j[0] for j in JOINTS]
    keep = [j for j in JOINTS if "Toe" not in j[0]]
    new = [k[0] for k in keep]
    out = []
    for name, par, off, order, end in keep:
        p = -1 if par < 0 else new.index(names[par])
        if name.endswith("Foot"):
            end = (0, -7, 19)
        out.append((name, p, off, order, end))
    return out


def skeleton(angles, root, frame_time=1 / 120, unit=1.0, joints=JOINTS):
    names = [j[0] for j in joints]
    parents = [j[1] for j in joints]
    offsets = np.array([j[2] for j in joints], dtype=float) * unit
    offsets[0] = root[0]
    ends = [[np.array(j[4], dtype=float) * unit] if j[4] else [] for j in joints]
    return Skeleton(names, parents, offsets, [j[3] for j in joints], ends, np.asarray(angles, dtype=float),
                    np.asarray(root, dtype=float), frame_time)


def smooth_motion(T, frame_time=1 / 120, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(T) * frame_time
    J = len(JOINTS)
    A, f, ph = rng.uniform(5, 30, (J, 3)), rng.uniform(0.3, 1.2, (J, 3)), rng.uniform(0, 6, (J, 3))
    angles = A * np.sin(2 * np.pi * f * t[:, None, None] + ph)
    root = np.stack([20 * np.sin(t), 95 + 2 * np.sin(3 * t), 40 * t], axis=1)
    return angles, root


def write(tmp_path, sk, name="clip.bvh"):
    p = tmp_path / name
    write_skeleton(p, sk)
    return p


def elementary(axis, deg):
    c, s = np.cos(np.radians(deg)), np.sin(np.radians(deg))
    return {"X": np.array([[1, 0, 0], [0, c, -s], [0, s, c]]), "Y": np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
            "Z": np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])}[axis]


def test_reading_matches_a_hand_written_forward_kinematics(tmp_path):
    """Joint and end-site positions of the figure equal the BVH forward kinematics written out
    here with elementary matrices (channels multiplied left to right, offsets in the parent's
    frame), scaled from cm to m and turned Y-up -> Z-up."""
    angles, root = smooth_motion(40)
    sk = skeleton(angles, root)
    cap = mocap.load_bvh(write(tmp_path, sk), mass=70, cutoff=None, ground=0.0)
    assert cap.scale == 0.01 and cap.dt == pytest.approx(1 / 120, rel=1e-15)
    kin = ld.forward_kinematics(cap.model, cap.q)
    C = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0]])
    for k in (0, 17, 39):
        R, P = {}, {}
        for j, (name, par, off, order, end) in enumerate(JOINTS):
            Rl = np.eye(3)
            for ax, a in zip(order, angles[k, j]):
                Rl = Rl @ elementary(ax, a)
            R[j] = Rl if par < 0 else R[par] @ Rl
            P[j] = root[k] if par < 0 else P[par] + R[par] @ np.array(off, float)
            b = cap.model.body_id(name)
            np.testing.assert_allclose(kin.p[k, b], 0.01 * C @ P[j], atol=1e-12)
            np.testing.assert_allclose(kin.R[k, b], C @ R[j], atol=1e-12)
            if end:
                T_end = kin.pose(f"{name}_end")[k]
                np.testing.assert_allclose(T_end[:3, 3], 0.01 * C @ (P[j] + R[j] @ np.array(end, float)), atol=1e-12)


def test_units_are_detected_and_can_be_given(tmp_path):
    angles, root = smooth_motion(10)
    for unit, scale in ((1.0, 0.01), (0.01, 1.0), (10.0, 0.001)):
        cap = mocap.load_bvh(write(tmp_path, skeleton(angles, root * unit, unit=unit)), cutoff=None)
        assert cap.scale == scale
        assert 1.5 < cap.height < 1.9
    cap = mocap.load_bvh(write(tmp_path, skeleton(angles, root)), cutoff=None, scale=0.011)
    assert cap.scale == 0.011
    with pytest.raises(mocap.MocapError, match="length unit"):
        mocap.load_bvh(write(tmp_path, skeleton(angles, root * 50, unit=50.0)), cutoff=None)


@pytest.mark.parametrize("damage, message", [
    (lambda s: s.replace("  JOINT LeftLeg\n", "  JOINT LeftLeg\n  }\n", 1), "broken"),
    (lambda s: s.replace("CHANNELS 3 XYZ", "CHANNELS 3 Xrotation Yrotation").replace(
        "CHANNELS 3 Xrotation Yrotation Zrotation", "CHANNELS 2 Xrotation Yrotation", 1), "channel"),
    (lambda s: s[:s.rindex("\n", 0, len(s) - 1)] + "\n" + " ".join(["nan"] * 60) + "\n", "NaN"),
    (lambda s: s.replace("Frame Time: 0.008333333333333333", "Frame Time: 0"), "frame time"),
])
def test_bad_files_get_one_clear_error_naming_the_file(tmp_path, damage, message):
    angles, root = smooth_motion(5)
    p = write(tmp_path, skeleton(angles, root))
    text = damage(p.read_text())
    assert text != p.read_text()
    bad = tmp_path / "bad.bvh"
    bad.write_text(text)
    with pytest.raises(mocap.MocapError, match=message) as e:
        mocap.load_bvh(bad)
    assert str(bad) in str(e.value)


@pytest.mark.parametrize("sex", ["male", "female"])
def test_figure_mass_properties_follow_de_leva(tmp_path, sex):
    """Segment masses are de Leva's (1996, Table 4) fractions of the body mass for the figure's
    sex (scaled up by the share of the clavicles, which this skeleton lacks), each centre of
    mass on its bone at the table's fraction of the bone length, and the masses sum to the body
    mass."""
    angles, root = smooth_motion(5)
    cap = mocap.load_bvh(write(tmp_path, skeleton(angles, root)), mass=80.0, cutoff=None, sex=sex)
    m = cap.model
    assert m.total_mass == pytest.approx(80.0, rel=1e-12)
    t = de_leva(sex)
    k = 1 / (1 - 2 * 0.05 * t["upper_trunk"].mass)
    params = m.inertial_parameters().reshape(-1, 10)   # per moving body: m, m c, I (Pinocchio's order)
    names = [j[0] for j in JOINTS]
    for name, child, seg in (("LeftUpLeg", "LeftLeg", "thigh"), ("RightLeg", "RightFoot", "shank"),
                             ("LeftForeArm", "LeftHand", "forearm")):
        row = params[m.body_id(name) - 1]
        assert row[0] == pytest.approx(80.0 * t[seg].mass * k, rel=1e-12)
        bone = 0.01 * np.array(JOINTS[names.index(child)][2], float)
        np.testing.assert_allclose(row[1:4] / row[0], t[seg].com * bone, atol=1e-12)
    assert cap.feet.names == ["l", "r"] and [len(p) for p in cap.feet.points] == [4, 4]
    # the sole points lie on the soles: in a standing capture, at the level of the toe's end site
    still = mocap.load_bvh(write(tmp_path, skeleton(np.zeros_like(angles), root), "still.bvh"), cutoff=None)
    z = mocap.capture._sole_points(still.model, still.q[:1])[0, :, 2]
    toe_end = ld.forward_kinematics(still.model, still.q[:1]).pose("LeftToeBase_end")[0, 2, 3]
    np.testing.assert_allclose(z, toe_end, atol=1e-12)


def mass_and_bias(m, q, v, fext):
    """M(q) and the bias b = RNEA(q, v, 0, fext) (so M a = tau - b) from one batched RNEA, the
    kernel the inverse dynamics uses (M's columns are RNEA at unit accelerations less gravity):
    a cold test run then compiles neither CRBA nor ABA for the simulation."""
    n = m.nv
    Q = np.broadcast_to(q, (n + 2, m.nq))
    V = np.zeros((n + 2, n))
    V[-1] = v
    A = np.zeros((n + 2, n))
    A[:n] = np.eye(n)
    F = np.zeros((n + 2, m.nbody, 6))
    F[-1] = fext
    r = ld.rnea(m, Q, V, A, F)
    return (r[:n] - r[n]).T, r[-1]


@lru_cache(maxsize=None)
def landing(tmp_dir):
    """Simulate the figure of a capture dropping 3 cm onto penalty contacts, tilted so the left
    foot lands first, under a PD posture controller; semi-implicit Euler as linkdyn's time
    stepping takes it (v += h a with the root's linear part its origin's classical acceleration,
    then :func:`r3so3_step`), which ``cutoff=None`` reads back exactly.  Returns the capture it
    was built from, the motion and its forces."""
    import pathlib
    tmp = pathlib.Path(tmp_dir)
    joints = without_toes()
    names = [j[0] for j in joints]
    angles = np.zeros((3, len(joints), 3))
    for side in ("Left", "Right"):
        angles[:, names.index(side + "Leg"), 0] = 15.0          # knees bent a little
        angles[:, names.index(side + "UpLeg"), 1] = -7.0
        angles[:, names.index(side + "Foot"), 1] = -8.0
    root = np.tile([0.0, 95.0, 0.0], (3, 1))
    cap = mocap.load_bvh(write(tmp, skeleton(angles, root, frame_time=1e-3, joints=joints), "rest.bvh"), mass=70,
                         cutoff=None, ground=0.0)
    m = cap.model
    q0 = cap.q[0].copy()
    lowest = mocap.capture._sole_points(m, q0[None])[0, :, 2].min()
    q0[2] += 0.03 - lowest
    q0[3:7] = ld.spatial.quat_multiply(ld.spatial.quat_from_axis_angle([1, 0, 0], -0.06), q0[3:7])
    qref = q0.copy()
    h, T = 1e-3, 400
    k_n, c_n, c_t = 1e4, 30.0, 30.0            # soft enough for the light toes under explicit forces
    names = [c.name for c in m.contacts]
    idx = [names.index(n) for pts in cap.feet.points for n in pts]
    q, v = q0.copy(), np.zeros(m.nv)
    D, w = 1 / np.diag(np.linalg.inv(mass_and_bias(m, q0, np.zeros(m.nv), np.zeros((m.nbody, 6)))[0])), 20.0
    # (PD gains per effective inertia, 20 rad/s)
    Q, F, TAU, DOWN = [], [], [], []
    for step in range(T):
        if not np.isfinite(q).all():
            raise RuntimeError(f"blow-up at step {step}: first contact {np.flatnonzero(np.array(DOWN).any(1))[:1]}, max |v| {[np.abs(x).max() for x in Q[-5:]]}")
        kin = ld.forward_kinematics(m, q, v)
        fext = np.zeros((m.nbody, 6))
        f_pts = np.zeros((len(idx), 3))
        below = np.zeros(len(idx), dtype=bool)
        for i, ci in enumerate(idx):
            c = m.contacts[ci]
            R, p = kin.R[c.body], kin.p[c.body]
            x = p + R @ c.position
            vel = R @ (kin.v[c.body, :3] + np.cross(kin.v[c.body, 3:], c.position))
            below[i] = x[2] < 0
            if x[2] < 0:
                fn = max(0.0, -k_n * x[2] - c_n * vel[2])
                ft = -c_t * vel[:2]
                if np.linalg.norm(ft) > c.friction * fn:
                    ft *= c.friction * fn / np.linalg.norm(ft)
                f = np.array([ft[0], ft[1], fn])
                f_pts[i] = f
                fb = R.T @ f
                fext[c.body, :3] += fb
                fext[c.body, 3:] += np.cross(c.position, fb)
        dq = ld.difference(m, qref, q)
        tau = -D * (w ** 2 * dq + 2 * w * v)
        tau[:6] = 0.0
        M, b = mass_and_bias(m, q, v, fext)
        a = np.linalg.solve(M, tau - b)
        Q.append(q.copy()); F.append(f_pts); TAU.append(tau)
        DOWN.append([below[:4].any(), below[4:].any()])
        a[:3] += np.cross(v[3:6], v[:3])          # the root origin's classical acceleration
        v = v + h * a
        q, v = r3so3_step(m, q, v, h)
    return cap, np.array(Q), np.array(F), np.array(TAU), np.array(DOWN)


def r3so3_step(m, q, v, h):
    """q moved by v over h as linkdyn's time stepping moves it (``linkdyn.sim.timestepping``):
    the free root's origin along the straight line p + h R v_lin, every rotation by the
    exponential map, and the root's body-frame linear velocity carried into its new frame."""
    q1 = ld.integrate(m, q, h * v)
    R0, R1 = ld.spatial.quat_to_matrix(q[3:7]), ld.spatial.quat_to_matrix(q1[3:7])
    q1[:3] = q[:3] + h * R0 @ v[:3]
    v = v.copy()
    v[:3] = R1.T @ R0 @ v[:3]
    return q1, v


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    return landing(str(tmp_path_factory.mktemp("landing")))


def test_ground_truth_simulation_round_trips_exactly(sim, tmp_path):
    """Written as BVH and read back without smoothing, the simulated landing gives back its
    ground reactions, centres of pressure and joint torques to 1e-6 of body weight / of the
    torques' scale wherever the root's equations determine them (flight, one foot down), its
    total ground reaction at every frame, and its contact phases to the frame."""
    cap0, Q, F, TAU, DOWN = sim
    p = tmp_path / "landing.bvh"
    mocap.write_bvh(p, cap0, Q, frame_time=1e-3)
    cap = mocap.load_bvh(p, mass=70, height=cap0.height, cutoff=None, ground=0.0)
    np.testing.assert_allclose(cap.q, Q, atol=1e-12)
    phases = mocap.contact_phases(cap, height_on=0.0, height_off=0.0, speed_on=np.inf, speed_off=np.inf)
    assert (phases == DOWN).all()
    assert DOWN[:, 0].any() and (DOWN[:, 0] & ~DOWN[:, 1]).any() and (DOWN[:, 0] & DOWN[:, 1]).any()
    res = mocap.inverse_dynamics(cap, phases=phases)
    W = 70 * 9.81
    inner = slice(1, len(Q) - 1)           # v_0 and a_{T-1} are not in the file
    grf_true = np.stack([F[:, :4].sum(1), F[:, 4:].sum(1)], axis=1)
    total = res.grf.sum(1)
    np.testing.assert_allclose(total[inner], grf_true.sum(1)[inner], atol=1e-6 * W)
    assert np.abs(res.residual[inner]).max() < 1e-6 * W
    single = DOWN[:, 0] ^ DOWN[:, 1]
    single[[0, -1]] = False
    assert single.sum() > 10
    np.testing.assert_allclose(res.grf[single], grf_true[single], atol=1e-6 * W)
    tau_scale = np.abs(TAU[single][:, 6:]).max()
    np.testing.assert_allclose(res.tau[single][:, 6:], TAU[single][:, 6:], atol=1e-6 * tau_scale)
    assert np.abs(res.tau[single][:, :6]).max() < 1e-6 * W
    # centre of pressure of the foot that is down: the force-weighted mean of its points
    for k in np.flatnonzero(single)[:5]:
        s = 0 if DOWN[k, 0] else 1
        pts = mocap.capture._sole_points(cap.model, cap.q[k:k + 1])[0]
        names = [c.name for c in cap.model.contacts]
        P = pts[[names.index(n) for n in cap.feet.points[s]]]
        fz = F[k, 4 * s:4 * s + 4, 2]
        np.testing.assert_allclose(res.cop[k, s, :2], (fz @ P[:, :2]) / fz.sum(), atol=1e-6)
    # flight: no force at all
    air = ~DOWN.any(1)
    assert air.sum() > 10 and np.abs(res.grf[air]).max() == 0.0
    # the solver bounds hold at every frame: pushing only, inside the friction pyramid
    fz = res.forces[..., 2]
    assert fz.min() > -1e-9 * W
    assert (np.abs(res.forces[..., :2]) <= 0.8 * fz[..., None] + 1e-9 * W).all()


def test_ground_truth_with_the_default_smoothing(sim, tmp_path):
    """Read back with the default smoothing (``cutoff="auto"``: Winter's residual analysis, which
    for a noise-free file picks its cap, a quarter of the frame rate), the simulated landing's
    summed ground reaction is within 2 % of body weight in RMS over the clip, the ground
    reaction of the one foot down and the joint torques within 2 % of body weight (N, N m) in
    RMS over the single-support frames; the forces push and stay in their friction pyramids at
    every frame.  A fixed 6 Hz cut-off, the default before, is 31 % off here (docs/mocap.md)."""
    cap0, Q, F, TAU, DOWN = sim
    p = tmp_path / "landing.bvh"
    mocap.write_bvh(p, cap0, Q, frame_time=1e-3)
    cap = mocap.load_bvh(p, mass=70, height=cap0.height, ground=0.0)
    assert cap.cutoff == pytest.approx(mocap.capture.AUTO_CUTOFF_MAX / 1e-3)
    res = mocap.inverse_dynamics(cap, phases=DOWN)
    W = 70 * 9.81
    grf_true = np.stack([F[:, :4].sum(1), F[:, 4:].sum(1)], axis=1)
    inner = slice(1, len(Q) - 1)
    def rms(d):
        return np.sqrt(np.mean(np.sum(d.reshape(len(d), -1) ** 2, axis=1)))
    assert rms((res.grf.sum(1) - grf_true.sum(1))[inner]) < 0.02 * W
    single = DOWN[:, 0] ^ DOWN[:, 1]
    single[[0, -1]] = False
    assert rms(res.grf[single] - grf_true[single]) < 0.02 * W
    assert np.sqrt(np.mean((res.tau[single][:, 6:] - TAU[single][:, 6:]) ** 2)) < 0.02 * W
    fz = res.forces[..., 2]
    assert fz.min() > -1e-9 * W
    assert (np.abs(res.forces[..., :2]) <= 0.8 * fz[..., None] + 1e-9 * W).all()
    # the fixed 6 Hz of before smears the impact: far outside 2 %
    q, v, a = mocap.kinematics(cap.model, cap.skeleton, cap.scale, 0.0, 6.0)
    from dataclasses import replace
    six = mocap.inverse_dynamics(replace(cap, q=q, v=v, a=a, cutoff=6.0), phases=DOWN)
    assert rms((six.grf.sum(1) - grf_true.sum(1))[inner]) > 0.2 * W


def test_residual_analysis_finds_the_band_of_a_noisy_signal():
    """Winter's residual analysis on a 2 Hz sine plus white noise sampled at 100 Hz picks a
    cut-off above the signal's 2 Hz and well below the 45 Hz top of its scan, a lower one for
    more noise, and the cap
    (a quarter of the frame rate) on a noise-free signal."""
    rng = np.random.default_rng(3)
    t = np.arange(2000) / 100
    clean = np.stack([np.sin(2 * np.pi * 2 * t), np.cos(2 * np.pi * 2 * t + 1)], axis=1)
    fc = mocap.capture.residual_cutoff(clean + rng.normal(0, 0.01, clean.shape), 100.0)
    assert 2.0 < fc < 15.0
    # ten times the noise: the signal's band ends sooner above the noise line
    assert 2.0 < mocap.capture.residual_cutoff(clean + rng.normal(0, 0.1, clean.shape), 100.0) < fc
    assert mocap.capture.residual_cutoff(clean, 100.0) == pytest.approx(25.0)


def test_smoothed_kinematics_are_the_derivatives_of_q(tmp_path):
    """With the default cut-off, v and a are the derivatives of q: v matches the central
    difference of q on the manifold and a that of v, to the differences' O(h^2) error."""
    angles, root = smooth_motion(600)
    cap = mocap.load_bvh(write(tmp_path, skeleton(angles, root)), cutoff=6.0)
    m, h = cap.model, cap.dt
    vc = ld.difference(m, cap.q[:-2], cap.q[2:]) / (2 * h)
    inner = slice(20, -20)
    err_v = np.abs(vc - cap.v[1:-1])[inner].max() / np.abs(cap.v).max()
    ac = (cap.v[2:] - cap.v[:-2]) / (2 * h)
    err_a = np.abs(ac - cap.a[1:-1])[inner].max() / np.abs(cap.a).max()
    assert err_v < 2e-3 and err_a < 2e-2
    # the cut-off removes what lies above it: noise on the channels barely moves the smoothed a
    noisy = angles + np.random.default_rng(1).normal(0, 0.2, angles.shape)
    cap_n = mocap.load_bvh(write(tmp_path, skeleton(noisy, root), "noisy.bvh"), cutoff=6.0)
    raw_n = mocap.load_bvh(tmp_path / "noisy.bvh", cutoff=None)
    e_s = np.abs(cap_n.a - cap.a)[inner].mean()
    e_r = np.abs(raw_n.a - cap.a)[inner].mean()
    assert e_s < 0.05 * e_r
    with pytest.raises(ValueError, match="Nyquist"):
        mocap.load_bvh(tmp_path / "noisy.bvh", cutoff=70.0)


def test_cli_prints_the_summary_and_writes_the_table(sim, tmp_path):
    cap0, Q, F, TAU, DOWN = sim
    p = tmp_path / "landing.bvh"
    mocap.write_bvh(p, cap0, Q, frame_time=1e-3)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "linkdyn.cli", "mocap", str(p), "--mass", "70", "--height",
                        str(cap0.height), "--cutoff", "0", "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "frames: 400" in r.stdout and "peak ground reaction" in r.stdout and "residual" in r.stdout
    import csv
    rows = list(csv.DictReader(open(out / "mocap.csv")))
    assert len(rows) == 400 and "l_grf_z" in rows[0]
    bad = subprocess.run([sys.executable, "-m", "linkdyn.cli", "mocap", str(p), "--mass", "-1"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "mass" in bad.stderr


def test_contact_phases_hysteresis_and_speed(tmp_path):
    """A foot hovering across the landing height does not chatter (it stays down until it rises
    above the lift-off height), while without hysteresis it would switch every frame; a foot
    sweeping low but fast is not down."""
    from dataclasses import replace
    angles, root = smooth_motion(5)
    still = mocap.load_bvh(write(tmp_path, skeleton(np.zeros((140, len(JOINTS), 3)), np.tile(root[0], (140, 1))),
                                 "still.bvh"), cutoff=None, ground=0.0)
    on, off = mocap.capture.HEIGHT_ON, mocap.capture.HEIGHT_OFF
    h = np.zeros(140)
    h[:20] = np.linspace(0.0, on - 0.0005, 20)                # slowly up to the landing height
    h[20:60] = on + 0.0005 * (-1) ** np.arange(40)            # 0.5 mm either side of it, slowly (0.12 m/s)
    h[60:80] = np.linspace(on, off + 0.02, 20)                # lifts off
    h[80:100] = off + 0.02
    h[100:140] = 0.005                                        # sweeps forward at 0.5 cm, at 1 m/s
    q = still.q.copy()
    z0 = mocap.capture._sole_points(still.model, q[:1])[0, :, 2].min()
    q[:, 2] += h - z0                                         # h: the lowest sole point's height
    q[100:, 0] += np.arange(40) / 120
    cap = replace(still, q=q)
    down = mocap.contact_phases(cap)
    assert (down[:, 0] == down[:, 1]).all()
    d = down[:, 0]
    assert d[:60].all(), np.flatnonzero(~d[:60])
    assert not d[80:].any(), np.flatnonzero(d[80:]) + 80
    first_up = np.flatnonzero(~d)[0]
    assert h[first_up] > off >= h[first_up - 1]
    chatter = mocap.contact_phases(cap, height_off=on)
    assert np.count_nonzero(np.diff(chatter[20:60, 0].astype(int))) > 30
    with pytest.raises(ValueError, match="hysteresis"):
        mocap.contact_phases(cap, height_off=on / 2)


def test_smoothing_keeps_a_uniform_motion_to_the_ends(tmp_path):
    """A figure gliding at constant velocity with a joint turning at a constant rate has zero
    acceleration at every frame, the first and last included: the filter's padding is long
    enough for its memory (a 9-sample pad at 1 kHz made a 6 Hz filter ring at the clip's ends)."""
    T, h = 500, 1e-3
    t = np.arange(T) * h
    angles = np.zeros((T, len(JOINTS), 3))
    angles[:, 13, 0] = 40.0 * t                                   # LeftArm about its first axis
    root = np.stack([100.0 * t, np.full(T, 95.0), 50.0 * t], axis=1)
    cap = mocap.load_bvh(write(tmp_path, skeleton(angles, root, frame_time=h)), cutoff=6.0)
    # (with scipy's default pad the root's acceleration reached 17 m/s^2 and its speed was 1 m/s off)
    assert np.abs(cap.a[:, :3]).max() < 1e-3                      # m/s^2
    assert np.abs(cap.a).max() < 0.05                             # rad/s^2, against a rate of 0.70 rad/s
    np.testing.assert_allclose(np.linalg.norm(cap.v[:, :3], axis=1), np.hypot(1.0, 0.5), atol=1e-4)


@pytest.fixture(scope="module")
def real_walk(tmp_path_factory):
    """The real 4-minute 30 Hz capture of docs/mocap.md: ``testBvhFiles/test.bvh`` of the
    ``bvhtools`` 1.6.0 source distribution on PyPI, fetched by pip into a temporary folder (not
    vendored), or the file ``LINKDYN_TEST_BVH`` names; skipped when neither is at hand."""
    import os
    import tarfile
    path = os.environ.get("LINKDYN_TEST_BVH")
    if path:
        return path
    d = tmp_path_factory.mktemp("bvhtools")
    r = subprocess.run([sys.executable, "-m", "pip", "download", "bvhtools==1.6.0", "--no-deps", "--no-binary",
                        ":all:", "-d", str(d)], capture_output=True, text=True, timeout=300)
    sdists = list(d.glob("bvhtools-1.6.0.tar.gz"))
    if r.returncode != 0 or not sdists:
        pytest.skip(f"bvhtools 1.6.0 could not be downloaded: {r.stderr[-300:]}")
    with tarfile.open(sdists[0]) as tar:
        member = tar.getmember("bvhtools-1.6.0/testBvhFiles/test.bvh")
        tar.extractall(d, members=[member], filter="data")
    return str(d / member.name)


@pytest.mark.slow
def test_real_walk_residual_and_vertical_reaction(real_walk):
    """On a real 4-minute 30 Hz walk (with turns and pauses), with every default (the cut-off
    by residual analysis, the contact phases, de Leva's figure at 70 kg and 1.75 m): a foot is
    down in every frame, the residual root force is below 5 % of body weight in RMS over the
    stance frames (the issue's bound), the summed vertical reaction averages body weight
    within 5 % over the clip, and at every frame each force pushes and stays in its
    friction pyramid."""
    cap = mocap.load_bvh(real_walk, mass=70, height=1.75)
    assert len(cap.t) == 7184 and 4.0 < cap.cutoff < 8.0
    res = mocap.inverse_dynamics(cap)
    W = 70 * 9.81
    down = res.phases.sum(1)
    assert (down > 0).all()
    rf = np.linalg.norm(res.residual[:, :3], axis=1)
    assert np.sqrt(np.mean(rf[down > 0] ** 2)) < 0.05 * W
    assert np.sqrt(np.mean(rf[down == 1] ** 2)) < 0.05 * W           # single support alone too
    assert abs(res.grf.sum(1)[:, 2].mean() / W - 1) < 0.05
    fz = res.forces[..., 2]
    assert fz.min() > -1e-6 * W
    assert (np.abs(res.forces[..., :2]) <= 0.8 * fz[..., None] + 1e-6 * W).all()


def test_real_walk_adaptive_contact_heights_are_the_fixed_ones(real_walk):
    """On the real 30 Hz walk of docs/mocap.md the default contact heights, adapted to the capture
    (three times the height at which its still feet rest, at most 4 cm), are the fixed 4 cm / 6 cm
    its phases were tuned with: its still feet rest more than a third of 4 cm above the detected
    ground (the skeleton's foot joints are not its soles), and not one frame of its phases changes."""
    cap = mocap.load_bvh(real_walk, mass=70, height=1.75)
    c = mocap.capture
    rest = c.rest_height(cap)
    assert rest > c.HEIGHT_ON / c.REST_MARGIN, rest
    assert mocap.contact_heights(cap) == (c.HEIGHT_ON, c.HEIGHT_OFF)
    fixed = mocap.contact_phases(cap, height_on=c.HEIGHT_ON, height_off=c.HEIGHT_OFF)
    assert (mocap.contact_phases(cap) == fixed).all()
    assert fixed.any(axis=1).all() and not fixed.all()        # (phases with swings, a foot down in every frame)


def test_a_foot_rolling_over_its_toes_stays_down(tmp_path):
    """A figure standing flat that then pitches forward about its toe line (heels rising at up
    to 3 m/s, the toes still on the ground) keeps both feet down: one sole point low and still
    is enough, though the points' mean speed is above the lift-off speed (a test on the mean
    speed, or on the lowest point's height alone with the heel, would lift the foot); once the
    toes leave the ground too, the foot lifts."""
    from dataclasses import replace
    T = 60
    still = mocap.load_bvh(write(tmp_path, skeleton(np.zeros((T, len(JOINTS), 3)), np.tile([0, 95, 0], (T, 1))),
                                 "still.bvh"), cutoff=None, ground=0.0)
    m = still.model
    names = [c.name for c in m.contacts]
    P0 = mocap.capture._sole_points(m, still.q[:1])[0]
    toe = P0[[names.index(n) for n in names if "toe" in n]].mean(axis=0)
    q = still.q.copy()
    q[:, 2] -= P0[:, 2].min()                                  # the soles on the ground
    theta = np.zeros(T)
    theta[20:40] = np.cumsum(np.full(20, 12.0 / 120))         # 12 rad/s about the toe line, 20 frames
    theta[40:] = theta[39]
    for k in range(T):
        R = ld.spatial.quat_from_axis_angle([0, 1, 0], theta[k])
        q[k, :3] = toe + ld.spatial.quat_to_matrix(R) @ (q[k, :3] - toe)
        q[k, 3:7] = ld.spatial.quat_multiply(R, q[k, 3:7])
    q[45:, 2] += np.arange(1, T - 44) * 0.01                  # then the whole figure rises, 1.2 m/s
    cap = replace(still, q=q)
    P = mocap.capture._sole_points(m, q)
    speed = np.linalg.norm(np.gradient(P, cap.dt, axis=0), axis=2)
    left = [names.index(n) for n in cap.feet.points[0]]
    assert speed[22:38][:, left].mean(axis=1).min() > mocap.capture.SPEED_OFF      # the mean is fast
    assert P[38, left, 2].max() > mocap.capture.HEIGHT_OFF                        # the heel is up
    down = mocap.contact_phases(cap)
    assert down[:45].all(), np.flatnonzero(~down[:45].all(axis=1))
    assert not down[50:].any()
