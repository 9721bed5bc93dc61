"""Anatomical joint limits of the capture figure (linkdyn.mocap.limits.anatomical_limits).

The ground truth is the 40-DoF figure itself: a motion of ``human_figure()`` written as BVH
(``retargeting.figure_skeleton``: CMU joint names, the figure's standing pose as the rest pose)
and read back gives a capture figure whose ball joints must judge every pose exactly as the
figure's joints do (same gaps to rounding), inside or outside.  A CMU-style T-pose skeleton
checks that the limits' axes come from the skeleton (the knee flexes backwards, the arm hangs
in front of the trunk's plane), a LAFAN1-style one (every joint frame turned so that the rest
pose lies down) that a standing frame of the clip calibrates them, and the real walk (when it
is in the cache) is measured."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

pytest.importorskip("pybvh")

import linkdyn as ld  # noqa: E402
from linkdyn.contact import swing_twist as st  # noqa: E402
from linkdyn.model import joints as J  # noqa: E402
from linkdyn.mocap import figure as fg  # noqa: E402
from linkdyn.mocap import limits as lm  # noqa: E402
from linkdyn.mocap import retargeting as rt  # noqa: E402
from linkdyn.mocap.bvh import Skeleton, write_skeleton  # noqa: E402
from linkdyn.mocap.capture import kinematics  # noqa: E402
from linkdyn.models.human import standing_configuration  # noqa: E402
from test_mocap_retarget import lying_skeleton  # noqa: E402

H = 1 / 30
FIG_NAMES = {v: k for k, v in rt.BVH_NAMES.items()}          # BVH joint -> figure body


@pytest.fixture(scope="module")
def figure():
    return ld.models.human_figure()


def random_motion(model, T=240, seed=3, scale=0.9):
    """Frame 0 stands (the neutral pose); the others turn every ball joint by a random rotation
    (rotation vectors of about ``scale`` rad: many poses inside the limits, many outside) and
    bend the knees and elbows over -0.5..2.9 rad (hyperextended, inside, past the range).  The
    root is raised 5 cm after frame 0, so frame 0 has the lowest ankles (a foot flat on the ground)."""
    rng = np.random.default_rng(seed)
    q = np.tile(standing_configuration(model), (T, 1))
    q[1:, 2] += 0.05
    for n in model.joint_names:
        if n == "root_joint":
            continue
        j, sl = model.joints[model.joint_id(n)], model.q_slice(n)
        if j.kind == J.REVOLUTE:
            q[1:, sl] = rng.uniform(-0.5, 2.9, (T - 1, 1))
        else:
            q[1:, sl] = Rotation.from_rotvec(rng.normal(size=(T - 1, 3)) * scale).as_quat()
    return q


def capture_figure(sk, **kw):
    s, _ = ld.mocap.capture._detect_scale(sk)
    lim = lm.anatomical_limits(sk, s, **kw)
    m, _ = fg.build_figure(sk, s, 70.0, 1.75, limits=lim)
    q, _, _ = kinematics(m, sk, s, 0.0, None)
    return lim, m, q


def gaps(joint, Q):
    return np.array([st.ball_limit_gaps(joint, x) for x in Q])


def compare_with_figure(figure, q, lim, m, qb, skip=()):
    """Every limited BVH joint judges each frame as the figure's joint it stands for: equal gaps
    for the ball joints; for the knees and elbows (hinges in the figure) inside exactly when the
    hinge angle is within the figure's range widened by the hyperextension allowance."""
    seen = set()
    for name, L in lim.limits.items():
        jf = model_joint = figure._joint_names[figure.body_id(FIG_NAMES[name])]
        jt = figure.joints[figure.joint_id(model_joint)]
        gb = gaps(L.spherical, qb[:, m.q_slice(name)])
        if jt.kind == J.SPHERICAL:
            gf = gaps(jt, q[:, figure.q_slice(jf)])
            keep = [k for k, u in enumerate(st.ball_limit_names(jt)) if (jf.split("_", 1)[-1], u) not in skip]
            np.testing.assert_allclose(gb[:, keep], gf[:, keep], atol=1e-9, err_msg=name)
            assert (gf[:, keep] < 0).any() and (gf[:, keep] > 0).all(axis=1).any()    # both verdicts occur
        else:
            th = q[:, figure.q_slice(jf)][:, 0]
            lo = -np.radians(fg.HYPEREXTENSION_DEG)
            hi = float(figure.upper[figure.q_slice(jf)][0])
            inside = (th > lo + 1e-6) & (th < hi - 1e-6)
            near = (np.abs(th - lo) < 1e-6) | (np.abs(th - hi) < 1e-6)
            ok = gb.min(axis=1) >= 0
            assert (ok[~near] == inside[~near]).all(), name
            assert inside.any() and (~inside).any()
        seen.add(jt.kind)
    return seen


def test_a_bvh_of_the_figure_has_the_figures_limits(figure, tmp_path):
    """The figure's motion as BVH (standing rest pose, CMU names): every ball joint of the
    capture figure has the figure's cone and twist range in its own frames (gaps equal to 1e-9
    rad over 240 random poses, inside and outside), the knees and elbows are inside exactly
    over the figure's hinge range (plus 5 deg of hyperextension); the plug axes lie along the bones."""
    q = random_motion(figure)
    sk = rt.figure_skeleton(figure, q, H)
    lim, m, qb = capture_figure(sk)
    assert lim.reference == "rest"
    assert set(lim.limits) == {"Spine", "Head", "LeftShoulder", "LeftArm", "LeftForeArm", "LeftHand",
                               "RightShoulder", "RightArm", "RightForeArm", "RightHand", "LeftUpLeg", "LeftLeg",
                               "LeftFoot", "RightUpLeg", "RightLeg", "RightFoot"}
    assert compare_with_figure(figure, q, lim, m, qb) == {J.SPHERICAL, J.REVOLUTE}
    # the plug axis of a limb joint is its bone (the child's offset) in the rest pose
    for name, child in (("LeftUpLeg", "LeftLeg"), ("RightLeg", "RightFoot"), ("LeftArm", "LeftForeArm"),
                        ("RightForeArm", "RightHand")):
        off = sk.offsets[sk.names.index(child)]
        np.testing.assert_allclose(lim.limits[name].spherical.plug_axis, off / np.linalg.norm(off), atol=1e-9)
    # the model carries them; load_bvh(limits=True) too, by default every joint is unlimited
    assert set(m._joint_names[i] for i in st.ball_limit_joints(m)) == set(lim.limits)
    p = tmp_path / "fig.bvh"
    write_skeleton(p, sk)
    cap = ld.mocap.load_bvh(p, cutoff=None, ground=0.0, limits=True)
    assert set(cap.limits.limits) == set(lim.limits) and "LeftHand" in cap.limits.summary()
    assert set(cap.model._joint_names[i] for i in st.ball_limit_joints(cap.model)) == set(lim.limits)
    plain = ld.mocap.load_bvh(p, cutoff=None, ground=0.0)
    assert plain.limits is None and st.ball_limit_joints(plain.model) == ()
    # or the limits given, e.g. all but the ankles'
    del lim.limits["LeftFoot"], lim.limits["RightFoot"]
    some = ld.mocap.load_bvh(p, cutoff=None, ground=0.0, limits=lim)
    assert some.limits is lim and len(st.ball_limit_joints(some.model)) == len(lim.limits) == 14
    with pytest.raises(TypeError, match="limits"):
        ld.mocap.load_bvh(p, cutoff=None, ground=0.0, limits="yes")


def test_a_lying_rest_pose_is_calibrated_on_a_standing_frame(figure):
    """Every joint frame of the same file turned by one rotation (the rest pose lies down, as
    LAFAN1's): the standing frame 0 calibrates the axes, and the verdicts are the figure's again,
    but for the wrist's twist (no standing rest pose: the range is centred on the reference)."""
    q = random_motion(figure, seed=5)
    sk = rt.figure_skeleton(figure, q, H)
    turned = lying_skeleton(sk)
    lim, m, qb = capture_figure(turned, fit_hinges=False)
    assert lim.reference == 0
    compare_with_figure(figure, q, lim, m, qb, skip={("wrist", "twist.lower"), ("wrist", "twist.upper")})
    for s in "lr":
        w = lim.limits[("Left" if s == "l" else "Right") + "Hand"].spherical
        assert np.degrees(w.twist[1] - w.twist[0]) == pytest.approx(160.0)


# a CMU-style skeleton in cm, Y up, facing +Z, T-pose (the arms along x)
CMU = [("Hips", -1, (0, 95, 0)), ("LeftUpLeg", 0, (9, -4, 0)), ("LeftLeg", 1, (0, -43, 0)),
       ("LeftFoot", 2, (0, -42, 0)), ("LeftToeBase", 3, (0, -7, 13)), ("RightUpLeg", 0, (-9, -4, 0)),
       ("RightLeg", 5, (0, -43, 0)), ("RightFoot", 6, (0, -42, 0)), ("RightToeBase", 7, (0, -7, 13)),
       ("Spine", 0, (0, 12, 0)), ("Spine1", 9, (0, 22, 0)), ("Neck", 10, (0, 20, 0)), ("Head", 11, (0, 10, 0)),
       ("LeftArm", 10, (17, 16, 0)), ("LeftForeArm", 13, (28, 0, 0)), ("LeftHand", 14, (26, 0, 0)),
       ("RightArm", 10, (-17, 16, 0)), ("RightForeArm", 16, (-28, 0, 0)), ("RightHand", 17, (-26, 0, 0))]
ENDS = {"LeftToeBase": (0, 0, 6), "RightToeBase": (0, 0, 6), "Head": (0, 17, 0), "LeftHand": (9, 0, 0),
        "RightHand": (-9, 0, 0)}


def cmu_skeleton(T=3):
    names = [j[0] for j in CMU]
    return Skeleton(names, [j[1] for j in CMU], np.array([j[2] for j in CMU], float), ["ZXY"] * len(CMU),
                    [[np.array(ENDS[n], float)] if n in ENDS else [] for n in names], np.zeros((T, len(CMU), 3)),
                    np.tile([0.0, 95.0, 0.0], (T, 1)), H)


def test_a_t_pose_skeleton_takes_its_axes_from_the_bones():
    """CMU-style T-pose (facing +Z in the file): the knee flexes backwards (a rotation about
    the file's +x) over 0-135 deg, and hyperextending it by 20 deg or bending it sideways by
    30 deg violates; the hip flexes forwards to 110 deg, not backwards past 35; the arm hangs
    (adducted from the T-pose by 90 deg) and reaches forwards inside the shoulder's cone, and
    raised 80 deg behind the frontal plane it is outside, and turned about its own axis it is
    inside up to 70 deg of internal and 90 of external rotation (the twist range shifted from
    the T-pose's zero to the anatomical one); the spine and the neck each take
    the waist's and the neck's whole range (the chain's joints share no fraction of it by
    default), the toes stay unlimited."""
    sk = cmu_skeleton()
    s, _ = ld.mocap.capture._detect_scale(sk)
    lim = lm.anatomical_limits(sk, s)
    assert lim.reference == "rest"
    assert {n: (L.rule, L.side) for n, L in lim.limits.items()}["RightLeg"] == ("knee", "r")
    assert lim.limits["Spine"].share == lim.limits["Neck"].share == 1.0
    assert set(lim.unlimited) == {"LeftToeBase", "RightToeBase"}
    split = lm.anatomical_limits(sk, s, split=True)
    assert split.limits["Spine1"].share == 0.5 and split.limits["Head"].share == 0.5

    def inside(name, axis, deg):
        quat = Rotation.from_rotvec(np.radians(deg) * np.asarray(axis, float)).as_quat()
        return bool((st.ball_limit_gaps(lim.limits[name].spherical, quat) >= 0).all())
    X, Y, Z = np.eye(3)
    for knee in ("LeftLeg", "RightLeg"):
        assert all(inside(knee, X, d) for d in (0, 30, 90, 130))
        assert not inside(knee, X, -20) and not inside(knee, X, 140)
        assert not inside(knee, Z, 30)                           # sideways
    for hip in ("LeftUpLeg", "RightUpLeg"):
        assert inside(hip, -X, 110) and inside(hip, X, 20) and not inside(hip, X, 35)
    # the left arm lies along +x (file); hanging = a turn by -90 deg about +z, then forwards/backwards
    hang = Rotation.from_rotvec(np.radians(-90) * Z)
    fwd = Rotation.from_rotvec(np.radians(-80) * X)              # +z (forwards) from hanging (-y)
    back = Rotation.from_rotvec(np.radians(80) * X)
    for rot, want in ((hang, True), (fwd * hang, True), (back * hang, False)):
        g = st.ball_limit_gaps(lim.limits["LeftArm"].spherical, rot.as_quat())
        assert bool(g[0] >= 0) is want
    # the humerus turned about the hanging arm's axis (file -y): internal rotation (the front
    # of the arm turning medially) 70 deg at most, external 90 (the twist range, shifted from
    # the T-pose's zero to the anatomical one: the hanging arm's twist is 0)
    for deg, want in ((0, True), (60, True), (80, False), (-80, True), (-100, False)):
        rot = Rotation.from_rotvec(np.radians(deg) * -Y) * hang
        g = st.ball_limit_gaps(lim.limits["LeftArm"].spherical, rot.as_quat())
        assert bool((g[1:] >= 0).all()) is want, deg
        assert np.degrees(min(g[1:])) == pytest.approx(min(70 - deg, deg + 90), abs=1e-6)


def test_a_skeleton_without_arms_stays_unlimited():
    """Legs alone give no trunk axes to calibrate on: every joint unlimited, and the reason said;
    a reference frame out of range is named."""
    sk = Skeleton(["Hips", "LeftUpLeg", "LeftLeg", "LeftFoot"], [-1, 0, 1, 2], np.array([[0, 90, 0], [9, 0, 0],
                  [0, -42, 0], [0, -40, 0.0]]), ["ZXY"] * 4, [[], [], [], [np.array([0, -5, 15.0])]],
                  np.zeros((5, 4, 3)), np.tile([0, 90, 0.0], (5, 1)), H)
    lim = lm.anatomical_limits(sk, 0.01)
    assert lim.limits == {} and set(lim.unlimited) == {"LeftUpLeg", "LeftLeg", "LeftFoot"}
    assert "l_upper_arm" in lim.unlimited["LeftLeg"]
    m, _ = fg.build_figure(sk, 0.01, 70.0, 1.75, limits=lim)
    assert st.ball_limit_joints(m) == ()
    with pytest.raises(ValueError, match="reference"):
        lm.anatomical_limits(cmu_skeleton(), 0.01, reference=7)


def test_the_real_walk_against_the_limits():
    """bvhtools' 4-minute LAFAN1 clip (when in the cache), read without smoothing: the share of
    frames in which each joint leaves its limits and by how much, as measured (docs/mocap.md,
    "Anatomical joint limits").  The spine never leaves them, hips, knees and neck in under 5 %
    of the frames, the arms' joints in up to 17 % by up to 14 deg; the ankles dorsiflex past the
    passive AAOS range in a third of the frames (the crouching phases, knees bent 55-90 deg), by
    up to 37 deg."""
    from linkdyn.mocap.samples import walking_capture
    path = walking_capture(download=False)
    if path is None:
        pytest.skip("the real capture is not in the cache (run examples/mocap_walk.py to download it)")
    sk = ld.mocap.read_skeleton(path)
    lim, m, qb = capture_figure(sk)
    assert len(qb) == 7184 and len(lim.limits) == 19 and set(lim.unlimited) == {"LeftToe", "RightToe"}
    assert lim.reference != "rest"                       # LAFAN1's rest pose lies along x
    rows = {(j, u): (f, mx) for j, u, f, mx, _ in fg.limit_violations(m, qb)}
    measured = {("LeftFoot", "swing"): (0.330, 37.0), ("RightFoot", "swing"): (0.409, 33.2),
                ("LeftShoulder", "swing"): (0.119, 14.1), ("RightArm", "twist.lower"): (0.120, 11.0),
                ("RightHand", "swing"): (0.170, 10.3), ("RightLeg", "swing"): (0.048, 3.5),
                ("Head", "swing"): (0.022, 3.2), ("LeftUpLeg", "swing"): (0.008, 5.7)}
    for key, (f, mx) in measured.items():
        assert rows[key][0] == pytest.approx(f, abs=0.002) and rows[key][1] == pytest.approx(mx, abs=0.1), key
    assert not any(j.startswith("Spine") for j, _ in rows)
    assert max(f for (j, _), (f, _) in rows.items() if j.endswith(("Leg", "Neck", "Head"))) < 0.05
    others = [(k, v) for k, v in rows.items() if "Foot" not in k[0]]
    assert max(mx for _, (_, mx) in others) < 15.0 and max(f for _, (f, _) in others) < 0.18


def test_the_dynamics_filter_holds_the_anatomical_limits(tmp_path):
    """The swaying capture of tests/test_mocap_filter.py turns each forearm +-20 deg about the
    T-pose's vertical axis, i.e. flexes it forwards and hyperextends it backwards by 20 deg, 15
    past the elbow's cone (the left one for 2/3 of the clip, the right one for 1/3: the same
    angle on both sides), and raises and lowers the arms 30 deg in the frontal plane without
    turning the humerus, past the shoulder's twist bound above the T-pose (Codman's paradox, as
    for the 40-DoF figure).  The filtered motion stays inside every limit at every step (the
    QP's rows, to 1e-3 rad) and reaches them, with the physics of check_physics at every step."""
    pytest.importorskip("proxsuite")
    from test_mocap_filter import check_physics, sway
    cap = ld.mocap.load_bvh(sway(tmp_path), mass=70, cutoff=None, limits=True)
    m = cap.model
    names = [m._joint_names[i] for i in st.ball_limit_joints(m)]
    assert {"LeftForeArm", "RightForeArm", "LeftUpLeg", "Spine1"} <= set(names)
    out = {(j, u): f for j, u, f, _, _ in fg.limit_violations(m, cap.q, tol_deg=1.0)}
    assert set(out) == {("LeftForeArm", "swing"), ("RightForeArm", "swing"), ("LeftArm", "twist.upper"),
                        ("RightArm", "twist.lower")}
    assert out["LeftForeArm", "swing"] > 1.5 * out["RightForeArm", "swing"] > 0.3
    gc = np.array([st.ball_limit_gaps_model(m, q) for q in cap.q])
    assert gc.min() < -np.radians(14)
    res = ld.mocap.dynamics_filter(cap)
    check_physics(cap, res)
    g = np.array([st.ball_limit_gaps_model(m, q) for q in res.filter.q])
    assert g.min() > -1e-3 and g.min() < 1e-3                # held, and reached
