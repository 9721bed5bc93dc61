"""linkdyn.viz: stick figures, animations (.gif, .html, .mp4) and the run plot.

The skeleton is checked point by point against forward kinematics; the animations are opened
again (the GIF with Pillow, the HTML by its embedded frames) and must hold the number of frames
that the run's duration and the frame rate give; the runs are a Recording built by hand from two
segments with different models (a standing figure, then the same figure with its left hand
welded to the world) and a Trajectory from ``linkdyn.sim.simulate``.
"""
from __future__ import annotations

import base64
import io
import re
import shutil

import numpy as np
import pytest

import linkdyn as ld
from linkdyn import structure
from linkdyn.loops import loop_error
from linkdyn.models.human import human_figure_16, standing_configuration
from linkdyn.models.scenarios import high_bar
from linkdyn.recording import Event, Recording

matplotlib = pytest.importorskip("matplotlib")
PIL_Image = pytest.importorskip("PIL.Image")

from linkdyn import viz  # noqa: E402

SMALL = dict(size=(2.5, 2.5), dpi=40)       # tiny frames: the tests check structure, not looks


def _fill(seg, model, Q, V, t):
    """Per-sample fields of a Segment as a simulation would record them."""
    Q, V = np.asarray(Q), np.asarray(V)
    seg.t = list(t)
    seg.q, seg.v = list(Q), list(V)
    seg.tau = list(np.zeros_like(V))
    seg.kinetic = list(ld.kinetic_energy(model, Q, V))
    seg.potential = list(ld.potential_energy(model, Q))
    seg.loop_error = [float(np.abs(loop_error(model, q)).max()) if model.nloops else 0.0 for q in Q]
    seg.loop_forces = list(np.zeros((len(t), model.nloops, 6)))


@pytest.fixture(scope="module")
def two_segments():
    """0 <= t <= 0.2: a standing figure bends its right elbow; at t = 0.2 its left hand is welded
    to the world (an event with an impulse); 0.2 <= t <= 0.4: the left elbow bends further, the
    left hand still in place.  Samples are not uniform (the event repeats t = 0.2)."""
    m1 = human_figure_16()
    q0 = standing_configuration(m1)
    t1 = np.linspace(0.0, 0.2, 9)
    Q1 = np.repeat(q0[None], len(t1), axis=0)
    Q1[:, m1.q_index("r_elbow")] = np.linspace(0.0, 1.2, len(t1))
    V1 = np.zeros((len(t1), m1.nv))
    V1[:, m1.v_index("r_elbow")] = 6.0
    m2, q2 = structure.connect(m1, Q1[-1], "l_grip", "world")
    t2 = np.linspace(0.2, 0.4, 13)
    Q2 = np.repeat(q2[None], len(t2), axis=0)
    Q2[:, m2.q_index("r_knee")] = np.linspace(0.0, 0.8, len(t2))
    V2 = np.zeros((len(t2), m2.nv))
    rec = Recording()
    _fill(rec.start_segment(m1), m1, Q1, V1, t1)
    _fill(rec.start_segment(m2), m2, Q2, V2, t2)
    rec.events.append(Event(0.2, "connect", "l_grip__bar", np.array([3.0, 0.0, 4.0, 0.0, 0.1, 0.0]),
                            np.zeros(m2.nv), 1.0, 0.4))
    return rec


@pytest.fixture(scope="module")
def swing():
    """A 0.1 s simulation of the high bar (two revolute grips: virtual links)."""
    m, q = high_bar()
    v = np.zeros(m.nv)
    v[4] = 1.0                                     # trunk turning about its y axis ...
    v = ld.loops.project_velocity(m, q, v)         # ... as far as the grips allow
    return m, ld.sim.simulate(m, q, v, 0.1, dt=0.01)


# ---------------------------------------------------------------------------------------
# skeleton
def _has_segment(segs, a, b, tol=1e-12):
    return bool(np.any((np.abs(segs[:, 0] - a).max(axis=1) < tol) & (np.abs(segs[:, 1] - b).max(axis=1) < tol)))


def test_skeleton_bones_and_ends_are_the_body_origins_and_frames():
    m, q = high_bar()
    q = ld.integrate(m, q, 0.3 * np.random.default_rng(0).standard_normal(m.nv))   # any configuration
    kin = ld.forward_kinematics(m, q)
    segs = viz.skeleton(m, q)
    sk = viz.Skeleton(m)
    assert segs.shape == (sk.nsegments, 2, 3)
    # one bone per real body, from its parent's origin, none to the floating base from the world
    expected = [i for i in range(1, m.nbody) if not m.is_virtual[i] and m.parent[i] != 0]
    assert sorted(sk.bones[:, 1].tolist()) == expected
    for i in expected:
        assert _has_segment(segs, kin.p[m.parent[i]], kin.p[i])
    assert not np.any(np.all(np.abs(segs[:, 0]) < 1e-12, axis=1))      # nothing starts at the world origin
    # the bones are exactly the first len(bones) segments, body origin to body origin
    np.testing.assert_allclose(segs[:len(sk.bones), 0], kin.p[sk.bones[:, 0]], atol=1e-14)
    np.testing.assert_allclose(segs[:len(sk.bones), 1], kin.p[sk.bones[:, 1]], atol=1e-14)
    # the ends of the limbs, head_top included although the trunk has children
    assert set(sk.end_names) == {"head_top", "l_grip", "r_grip", "l_sole", "l_heel", "l_toe",
                                 "r_sole", "r_heel", "r_toe"}
    for name in sk.end_names:
        b = m.body_id(name)
        assert _has_segment(segs, kin.p[b], ld.frame_pose(m, q, name)[:3, 3])
    # a stack of configurations gives the same segments
    Q = np.stack([q, ld.integrate(m, q, np.full(m.nv, 0.1))])
    np.testing.assert_allclose(viz.skeleton(m, Q)[0], segs, atol=1e-14)


def test_virtual_links_are_not_drawn_and_loops_are_markers():
    m, q = high_bar()
    # a prismatic cut joint moved off its closure: the virtual link's origin is away from its real link
    m2, q2 = structure.connect(m, q, "l_toe", "world", ld.Prismatic("z"))
    q2[m2.q_index("l_toe__world_joint")] = 0.3
    virtual = np.flatnonzero(m2.is_virtual)
    assert len(virtual) == 3
    kin = ld.forward_kinematics(m2, q2)
    segs = viz.skeleton(m2, q2)
    pts = segs.reshape(-1, 3)
    assert not set(virtual) & set(viz.Skeleton(m2).bones.ravel().tolist())
    toe_virtual = m2.body_names.index("l_toe__world")
    assert np.abs(pts - kin.p[toe_virtual]).max(axis=1).min() > 0.2
    assert len(segs) == len(viz.skeleton(m, q))         # the loop added no line
    # closure points: where the grips are on the bar, and where the toe was
    cp = viz.closure_points(m2, q2)
    assert cp.shape == (3, 3)
    for k, name in enumerate(("l_grip", "r_grip")):
        np.testing.assert_allclose(cp[k], ld.frame_pose(m, q, name)[:3, 3], atol=1e-9)
    np.testing.assert_allclose(cp[2], ld.frame_pose(m, q, "l_toe")[:3, 3], atol=1e-12)


def test_skeleton_of_a_fixed_base_arm_starts_at_the_world():
    b = ld.ModelBuilder("arm")
    b.add_body("upper", "world", ld.Revolute("z"), placement=[0, 0, 0.1], inertia=ld.Inertia(1.0, [0, 0, 0.2], np.eye(3)))
    b.add_body("fore", "upper", ld.Revolute("y"), placement=[0, 0, 0.4], inertia=ld.Inertia(0.5, [0, 0, 0.1], np.eye(3)))
    b.add_frame("tool", "fore", placement=[0, 0, 0.3])
    arm = b.build()
    q = np.array([0.3, 0.7])
    segs = viz.skeleton(arm, q)
    kin = ld.forward_kinematics(arm, q)
    assert len(segs) == 3
    assert _has_segment(segs, np.zeros(3), kin.p[1])
    assert _has_segment(segs, kin.p[1], kin.p[2])
    assert _has_segment(segs, kin.p[2], ld.frame_pose(arm, q, "tool")[:3, 3])


def test_skeleton_of_bodies_hung_from_several_world_points_has_no_bones_from_the_origin():
    """Two ropes, each on a spherical joint at its own point of the world 2.5 m up (a swing): no
    line from the world origin to either top (the demo drew two thick rods from the floor to the
    rope tops); the ropes themselves are drawn, from each top to its end frame."""
    b = ld.ModelBuilder("ropes")
    for side, y in (("l", 0.3), ("r", -0.3)):
        b.add_body(f"{side}_rope", "world", ld.Spherical(), placement=[0.5, y, 2.5],
                   inertia=ld.Inertia(0.5, [0, 0, -1.0], np.eye(3) * 0.1))
        b.add_frame(f"{side}_end", f"{side}_rope", placement=[0, 0, -2.0])
    m = b.build()
    q = ld.neutral(m)
    sk = viz.Skeleton(m)
    assert len(sk.bones) == 0
    segs = viz.skeleton(m, q)
    assert len(segs) == 2
    for y in (0.3, -0.3):
        assert _has_segment(segs, np.array([0.5, y, 2.5]), np.array([0.5, y, 0.5]))
    assert not np.any(np.all(np.isclose(segs, 0.0), axis=-1))                   # nothing starts at the origin


def test_props():
    props = viz.static_geometry(viz.bar(height=2.5), viz.ground(size=2.0, spacing=0.5),
                                [[0, -1, 3], [0, -1, 1]], viz.ropes([[0, -0.2, 3], [0, 0.2, 3]], [[0, -0.2, 1], [0, 0.2, 1]]))
    assert [len(p.segments) for p in props] == [3, 10, 1, 2]
    np.testing.assert_allclose(props[0].segments[0][:, 2], 2.5)                  # the bar at its height ...
    np.testing.assert_allclose(props[0].segments[0][:, 1], [-1.2, 1.2])          # ... along y
    with pytest.raises(ValueError, match="pairs of 3D points"):
        viz.static_geometry(np.zeros((4, 3, 3)))


def test_frames_pick_the_nearest_sample_and_the_new_structure_at_events():
    t = np.array([0.0, 0.05, 0.1, 0.1, 0.32])
    times = viz.frame_times(0.0, 0.32, 0.1)
    np.testing.assert_allclose(times, [0.0, 0.1, 0.2, 0.3])
    assert viz.pick_samples(t, times).tolist() == [0, 3, 3, 4]
    assert len(viz.frame_times(0.0, 5.0, 1 / 30)) == 151


# ---------------------------------------------------------------------------------------
# animations
def test_gif_has_one_frame_per_step_of_the_run(two_segments, tmp_path):
    path = tmp_path / "run.gif"
    info = viz.animate(two_segments, path, fps=10, props=[viz.bar(height=2.3)], **SMALL)
    expected = int(np.floor(0.4 * 10 + 1e-9)) + 1
    assert info.frames == expected == 5
    assert path.stat().st_size > 1000
    with PIL_Image.open(path) as im:
        assert im.format == "GIF"
        assert im.n_frames == expected
        assert im.size == (100, 100)
        assert abs(im.info["duration"] - 100) <= 10
    # frames 0, 1 show the standing figure; from the event at t = 0.2 on, the one holding on
    assert info.segment.tolist() == [0, 0, 1, 1, 1]
    assert info.sample.tolist() == [0, 4, 0, 6, 12]


def test_html_embeds_every_frame(two_segments, tmp_path):
    path = tmp_path / "run.html"
    info = viz.animate(two_segments, path, fps=20, title="two segments", view="side", **SMALL)
    html = path.read_text()
    n = int(np.floor(0.4 * 20 + 1e-9)) + 1
    assert info.frames == n == 9
    frames = dict(re.findall(r'frames\[(\d+)\] = "data:image/png;base64,([^"]*)"', html))
    assert sorted(map(int, frames)) == list(range(n))
    png = base64.b64decode(frames["0"].replace("\\\n", ""))
    with PIL_Image.open(io.BytesIO(png)) as im:
        assert im.format == "PNG" and im.size == (100, 100)
    assert html.startswith("<!DOCTYPE html>") and "<title>two segments</title>" in html
    assert "font-awesome" not in html                    # self-contained: no style sheet from the network
    # slow motion: every = 0.025 s of the run per frame
    info = viz.animate(two_segments, tmp_path / "slow.html", fps=20, every=0.025, **SMALL)
    assert info.frames == 17


def test_mp4_without_ffmpeg_says_what_to_do(two_segments, tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(RuntimeError, match=r"ffmpeg.*\.gif.*\.html"):
        viz.animate(two_segments, tmp_path / "run.mp4")
    assert not (tmp_path / "run.mp4").exists()
    with pytest.raises(ValueError, match="extension"):
        viz.animate(two_segments, tmp_path / "run.avi")


def test_without_matplotlib_says_how_to_install_it(two_segments, tmp_path, monkeypatch):
    import sys
    for name in [k for k in sys.modules if k == "matplotlib" or k.startswith(("matplotlib.", "mpl_toolkits"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install 'linkdyn\[plot\]'"):
        viz.animate(two_segments, tmp_path / "run.gif")
    with pytest.raises(ImportError, match=r"linkdyn\[plot\]"):
        viz.plot_run(two_segments, tmp_path / "run.png")


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg not installed")
def test_mp4_with_ffmpeg(two_segments, tmp_path):     # pragma: no cover - no ffmpeg here
    path = tmp_path / "run.mp4"
    viz.animate(two_segments, path, fps=10, size=(2.0, 2.0), dpi=50)
    assert path.stat().st_size > 1000


def test_animate_a_trajectory_with_its_model(swing, tmp_path):
    m, traj = swing
    with pytest.raises(TypeError, match="model="):
        viz.animate(traj, tmp_path / "x.gif")
    info = viz.animate(traj, tmp_path / "swing.gif", model=m, fps=20, **SMALL)
    assert info.frames == 3
    with PIL_Image.open(tmp_path / "swing.gif") as im:
        assert im.n_frames == 3


# ---------------------------------------------------------------------------------------
# the run plot
def test_plot_run(two_segments, swing, tmp_path):
    path = viz.plot_run(two_segments, tmp_path / "run.png", joints=["r_elbow", "l_shoulder", "r_knee"], dpi=50)
    with PIL_Image.open(path) as im:
        assert im.format == "PNG"
        assert im.size == (500, 600)
    assert path.stat().st_size > 10_000
    with pytest.raises(KeyError, match="no_such_joint"):
        viz.plot_run(two_segments, tmp_path / "bad.png", joints=["no_such_joint"])
    m, traj = swing
    path = viz.plot_run(traj, tmp_path / "swing.png", model=m, dpi=40)
    with PIL_Image.open(path) as im:
        assert im.size == (400, 480)


def test_trajectory_as_recording_computes_loop_forces(swing):
    m, traj = swing
    rec = viz.as_recording(traj, m)
    assert len(rec.segments) == 1 and rec.events == []
    F = np.asarray(rec.segments[0].loop_forces)
    assert F.shape == (len(traj.t), 2, 6)
    # hanging at rest-ish: the two grips hold the figure's weight (vertical forces sum to m g
    # less the small acceleration of the centre of mass)
    weight = m.total_mass * 9.81
    assert 0.5 * weight < np.linalg.norm(F[0, :, :3], axis=-1).sum() < 2.0 * weight


def test_ball_joints_are_plotted_as_swing_and_twist():
    """A ball joint's curves are its swing and twist (what its limits bound), not the rotation
    angle of its quaternion: a rotation of 0.7 rad about x is all swing, one of 0.4 rad about the
    twist axis z all twist."""
    from linkdyn import spatial
    from linkdyn.model import joints as J
    from linkdyn.viz.plots import _coordinates
    joint = ld.Spherical(swing=1.0, twist=(-0.5, 0.5), axis="z")
    x = np.stack([spatial.quat_from_axis_angle([1, 0, 0], 0.7), spatial.quat_from_axis_angle([0, 0, 1], 0.4)])
    (l1, sw, a1), (l2, tw, a2) = _coordinates(J.SPHERICAL, "shoulder", x, joint)
    assert (l1, l2) == ("shoulder swing", "shoulder twist") and a1 and a2
    assert np.allclose(sw, [0.7, 0.0]) and np.allclose(tw, [0.0, 0.4])


def test_event_labels_name_things_once_in_words():
    from linkdyn.recording import Event
    from linkdyn.viz.runs import event_label, unit_words

    def ev(kind, name, note=""):
        return Event(1.0, kind, name, None, None, 0.0, 0.0, note)
    assert event_label(ev("cut", "r_grip__bar", "r_grip__bar")) == "right grip lets go of bar"
    assert event_label(ev("connect", "l_grip__bar", "l_grip - bar")) == "left grip takes hold of bar"
    assert event_label(ev("cut", "seat_l_end__l_rope_end", "seat_l_end__l_rope_end")) == \
        "seat left end lets go of left rope end"
    assert event_label(ev("impact", "l_thigh/seat, r_shoulder.twist.upper, l_knee.lower, x.upper")) == \
        "impact: left thigh on seat, right shoulder twist stop (upper), left knee lower stop (+1)"
    assert unit_words("head_contact/ground") == "head contact on ground"
    assert event_label(ev("cut", "r_grip__bar", "a reason")) == "right grip lets go of bar (a reason)"
