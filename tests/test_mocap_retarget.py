"""Retargeting a BVH capture onto the 40-DoF figure (linkdyn.mocap.retargeting).

The ground truth is a motion of ``human_figure()`` itself, written as BVH by the mocap writer
(CMU joint names, cm, Y up) and read back: the retargeting must return the same q to rounding,
clip nothing that was inside the limits and clip by the known angle what was outside.  The
real capture (bvhtools' 4-minute LAFAN1 clip) is used when it is in the user cache (the
example script ``examples/mocap_walk.py`` downloads it); otherwise that test is skipped."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

pytest.importorskip("pybvh")

import linkdyn as ld  # noqa: E402
from linkdyn.contact.swing_twist import project_inside  # noqa: E402
from linkdyn.model import joints as J  # noqa: E402
from linkdyn.mocap import retargeting as rt  # noqa: E402
from linkdyn.mocap.bvh import Skeleton, write_skeleton  # noqa: E402
from linkdyn.models.human import standing_configuration  # noqa: E402

H = 1 / 60


def figure_motion(model, T=60, seed=1, neutral_first=False, yaw0=0.0):
    """A smooth motion of the figure inside its limits (a margin of 0.05 rad): walking forward
    and turning, every ball joint swinging about three axes, knees and elbows bending."""
    rng = np.random.default_rng(seed)
    t = np.arange(T) * H
    q = np.tile(standing_configuration(model), (T, 1))
    q[:, 0] += 0.8 * t
    q[:, 2] += 0.02 * np.sin(6 * t)
    q[:, 3:7] = Rotation.from_rotvec(np.stack([0.05 * np.sin(3 * t), 0.1 * np.sin(2 * t), yaw0 + 0.4 * t], 1)).as_quat()
    for n in model.joint_names:
        if n == "root_joint":
            continue
        j, sl = model.joints[model.joint_id(n)], model.q_slice(n)
        if j.kind == J.REVOLUTE:
            q[:, sl] = (0.3 + 0.5 * (1 + np.sin(2 * np.pi * rng.uniform(0.3, 1) * t + rng.uniform(0, 6))))[:, None]
        else:
            rv = rng.uniform(0.1, 0.6, 3) * np.sin(2 * np.pi * rng.uniform(0.3, 1, 3) * t[:, None] + rng.uniform(0, 6, 3))
            q[:, sl] = np.array([project_inside(j, x, margin=0.05) for x in Rotation.from_rotvec(rv).as_quat()])
    if neutral_first:                      # frame 0 stands in the neutral pose (only the root moved)
        q0 = standing_configuration(model)
        q[0, 7:] = q0[7:]
        q[0, 2] = q0[2]
        q[0, 3:7] = Rotation.from_rotvec([0, 0, yaw0]).as_quat()
    return q


@pytest.fixture(scope="module")
def figure():
    return ld.models.human_figure()


def lying_skeleton(sk):
    """The same motion with every joint frame turned by one rotation D (the rest pose lies down,
    as LAFAN1's): the root's rotation R D, each joint's D^T L D, the offsets D^T o."""
    D = Rotation.from_rotvec([np.pi / 2, 0.3, 0.1]).as_matrix()
    Rr = Rotation.from_euler(sk.orders[0], sk.angles[:, 0], degrees=True).as_matrix()
    ang = [Rotation.from_matrix(Rr @ D).as_euler(sk.orders[0], degrees=True)]
    for j in range(1, len(sk.names)):
        L = Rotation.from_euler(sk.orders[j], sk.angles[:, j], degrees=True).as_matrix()
        ang.append(Rotation.from_matrix(D.T @ L @ D).as_euler(sk.orders[j], degrees=True))
    off = sk.offsets.copy()
    off[1:] = off[1:] @ D                                   # D^T offset
    ends = [[e @ D for e in es] for es in sk.end_sites]
    return Skeleton(sk.names, sk.parents, off, sk.orders, ends, np.stack(ang, 1), sk.root_position, sk.frame_time)


def test_round_trip_through_bvh_is_exact(figure, tmp_path):
    """figure motion -> BVH (write_figure_bvh, 17 digits) -> retarget -> the same q: every
    joint to 1e-12 rad, the root to 1e-12 m; nothing clipped; the hinges lose nothing; the rest
    pose (the figure's neutral) is the reference and the legs' scale is 1."""
    q = figure_motion(figure)
    p = tmp_path / "figure.bvh"
    rt.write_figure_bvh(p, figure, q, H)
    r = rt.retarget(p, figure, ground=0.0)
    assert r.reference == "rest" and r.leg_scale == pytest.approx(1.0, abs=1e-12)
    assert r.q.shape == q.shape and np.allclose(r.t, np.arange(len(q)) * H, atol=1e-15)
    assert np.abs(ld.difference(figure, q, r.q)).max() < 1e-12
    assert np.abs(r.q[:, :3] - q[:, :3]).max() < 1e-12
    assert r.clip.max() < 1e-9 and r.off_axis.max() < 1e-9
    assert r.match["torso"] == "Spine" and r.match["l_shank"] == "LeftLeg"


def test_limits_clip_by_the_known_angle(figure, tmp_path):
    """A knee hyperextended by 0.3 rad and a hip turned 60 deg about the thigh's axis (its
    twist range is +-45 deg) in the first 5 frames come back inside the limits, each clipped by
    exactly the excess (17.19 and 15 deg) there, every other joint and frame untouched."""
    q = figure_motion(figure, T=40)
    q[:5, figure.q_slice("l_knee")] = -0.3
    hip = figure.joints[figure.joint_id("r_hip")]
    q[:5, figure.q_slice("r_hip")] = Rotation.from_rotvec(np.radians(60) * hip.plug_axis).as_quat()
    p = tmp_path / "clipped.bvh"
    rt.write_figure_bvh(p, figure, q, H)
    r = rt.retarget(p, figure, ground=0.0)
    i = {n: k for k, n in enumerate(r.joint_names)}
    np.testing.assert_allclose(r.clip[:5, i["l_knee"]], np.degrees(0.3), atol=1e-9)
    np.testing.assert_allclose(r.clip[:5, i["r_hip"]], 15.0, atol=1e-6)
    clip = r.clip.copy()
    clip[:5, [i["l_knee"], i["r_hip"]]] = 0.0
    assert clip.max() < 1e-9
    assert np.allclose(r.q[:5, figure.q_slice("l_knee")], 0.0)
    # the unlimited coordinates are the written ones
    assert np.abs(ld.difference(figure, q, r.q_unlimited)).max() < 1e-9
    assert "l_knee" in r.summary()


def test_a_smaller_capture_is_scaled_by_the_legs(figure, tmp_path):
    """A 1.55 m figure's motion onto the 1.75 m figure: the legs' scale is the ratio of the
    standing hip heights, the root's path is the capture's mid-hip path times it, and the
    joint rotations are the capture's (same figure shape, other size)."""
    small = ld.models.human_figure(height=1.55, mass=55)
    q = figure_motion(small)
    p = tmp_path / "small.bvh"
    rt.write_figure_bvh(p, small, q, H)
    r = rt.retarget(p, figure, ground=0.0)
    s = standing_configuration(figure)[2] / standing_configuration(small)[2]
    assert r.leg_scale == pytest.approx(s, rel=1e-12)
    np.testing.assert_allclose(r.q[:, :3], s * q[:, :3], atol=1e-12)      # the pelvis origin is the mid-hip point
    assert np.abs(ld.difference(figure, q, r.q)[:, 3:]).max() < 1e-12


def test_a_rest_pose_lying_down_is_calibrated_on_a_standing_frame(figure, tmp_path):
    """Every joint frame of the file turned by one rotation (the rest pose then lies on its
    back, as LAFAN1's lies along x): the rest pose does not stand, the reference is the frame in
    which the figure stands (frame 0), the knees' and elbows' axes are fit from the clip, and q
    comes back to 1e-9."""
    q = figure_motion(figure, neutral_first=True, yaw0=0.4)
    sk = rt.figure_skeleton(figure, q, H)
    turned = lying_skeleton(sk)
    p = tmp_path / "lying.bvh"
    write_skeleton(p, turned)
    r = rt.retarget(p, figure, ground=0.0, centre_wrists=False)
    assert r.reference == 0 and r.wrist_shift == {}
    assert np.abs(ld.difference(figure, q, r.q)).max() < 1e-9
    assert np.abs(r.q[:, :3] - q[:, :3]).max() < 1e-9
    # by default the hands are turned about their axes so that the median wrist twist is the
    # middle of the twist range; every other joint is unchanged
    c = rt.retarget(p, figure, ground=0.0)
    for s in "lr":
        jt = figure.joints[figure.joint_id(f"{s}_wrist")]
        qq = c.q_unlimited[:, figure.q_slice(f"{s}_wrist")]
        tw = 2 * np.arctan2(qq[:, :3] @ jt.plug_axis, qq[:, 3])
        assert np.median(tw) == pytest.approx(0.5 * sum(jt.twist), abs=1e-9)
        q0 = q[:, figure.q_slice(f"{s}_wrist")]
        tw0 = 2 * np.arctan2(q0[:, :3] @ jt.plug_axis, q0[:, 3])
        assert c.wrist_shift[f"{s}_wrist"] == pytest.approx(np.degrees(0.5 * sum(jt.twist) - np.median(tw0)), abs=1e-7)
    d = ld.difference(figure, q, c.q_unlimited)
    others = np.ones(figure.nv, bool)
    for s in "lr":
        others[figure.v_slice(f"{s}_wrist")] = False
    assert np.abs(d[:, others]).max() < 1e-9


def test_missing_segments_are_named(tmp_path):
    """A skeleton without arms cannot be retargeted: the error names what is missing."""
    sk = Skeleton(["Hips", "LeftUpLeg", "LeftLeg", "LeftFoot"], [-1, 0, 1, 2], np.array([[0, 90, 0], [9, 0, 0],
                  [0, -42, 0], [0, -40, 0.0]]), ["ZXY"] * 4, [[], [], [], [np.array([0, -5, 15.0])]],
                  np.zeros((5, 4, 3)), np.tile([0, 90, 0.0], (5, 1)), 1 / 30)
    write_skeleton(tmp_path / "legs.bvh", sk)
    with pytest.raises(ld.mocap.MocapError, match="r_thigh.*l_upper_arm|l_upper_arm"):
        rt.retarget(tmp_path / "legs.bvh")


def test_the_real_capture_when_cached():
    """bvhtools' 4-minute LAFAN1 clip (if the example script has put it in the cache): the
    figure's thighs and upper arms point exactly where the capture's do (before the limits),
    its soles stay within a few cm of the floor, the root's path is the capture's times the legs'
    scale, and the knees and elbows lose little to their hinges."""
    from linkdyn.mocap.samples import walking_capture
    path = walking_capture(download=False)
    if path is None:
        pytest.skip("the real capture is not in the cache (run examples/mocap_walk.py to download it)")
    r = rt.retarget(path)
    sk = ld.mocap.read_skeleton(path)
    P, _, _ = sk.world_positions()
    C = ld.mocap.Y_UP_TO_Z_UP
    m = r.model
    kin = ld.forward_kinematics(m, r.q_unlimited)
    idx = {n: i for i, n in enumerate(sk.names)}
    for a, b, fa, fb in (("LeftUpLeg", "LeftLeg", "l_thigh", "l_shank"), ("RightArm", "RightForeArm", "r_upper_arm",
                                                                          "r_forearm")):
        u = (P[:, idx[b]] - P[:, idx[a]]) @ C.T
        w = kin.p[:, m.body_id(fb)] - kin.p[:, m.body_id(fa)]
        cos = np.einsum("ti,ti->t", u, w) / np.linalg.norm(u, axis=1) / np.linalg.norm(w, axis=1)
        assert np.degrees(np.arccos(np.clip(cos, -1, 1))).max() < 1e-5
    kin = ld.forward_kinematics(m, r.q)
    sole = np.minimum(kin.pose("l_sole")[:, 2, 3], kin.pose("r_sole")[:, 2, 3])
    assert np.all(np.abs(np.percentile(sole, [5, 50])) < 0.03)
    mid = 0.005 * (P[:, idx["LeftUpLeg"]] + P[:, idx["RightUpLeg"]]) @ C.T
    np.testing.assert_allclose(r.q[:, :2], r.leg_scale * mid[:, :2], atol=1e-9)
    i = {n: k for k, n in enumerate(r.joint_names)}
    off = np.sqrt(np.mean(r.off_axis ** 2, axis=0))
    assert max(off[i["l_knee"]], off[i["r_knee"]], off[i["l_elbow"]], off[i["r_elbow"]]) < 12.0
