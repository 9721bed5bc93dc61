"""What a user sees of a capture: the plots of its inverse dynamics (linkdyn.mocap.plot_capture)
and the 3-D page with the capture as a ghost (linkdyn.mocap.view_capture, linkdyn.viz.view's
``ghost=``).  The plots are read back from the matplotlib figure (each curve is the array it
claims to be); the page's data are decoded (each figure's bodies are where the forward
kinematics of its own motion puts them, at every frame)."""
import base64

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

pytest.importorskip("pybvh")
pytest.importorskip("proxsuite")
pytest.importorskip("matplotlib")

import linkdyn as ld  # noqa: E402
from linkdyn.mocap import retargeting as rt  # noqa: E402
from linkdyn.models.human import standing_configuration  # noqa: E402


def decode(data, key="poses"):
    raw = np.frombuffer(base64.b64decode(data[key]), dtype="<f4")
    return raw.reshape(data["nframes"], len(data["bodies"]), 7).astype(float)


def same_rotation(qa, qb):
    """Angle (rad) between quaternion stacks (..., 4)."""
    return (Rotation.from_quat(qa.reshape(-1, 4)).inv() * Rotation.from_quat(qb.reshape(-1, 4))).magnitude()


@pytest.fixture(scope="module")
def standing(tmp_path_factory):
    """A figure standing still on both feet and waving its arms, 0.6 s at 30 Hz, as BVH, read
    without smoothing; its inverse dynamics and a dynamics filter of it."""
    m = ld.models.human_figure()
    T, h = 18, 1 / 30
    t = np.arange(T) * h
    q = np.tile(standing_configuration(m), (T, 1))
    for s in "lr":
        q[:, m.q_slice(f"{s}_elbow")] = (0.4 + 0.3 * np.sin(4 * t))[:, None]
    p = tmp_path_factory.mktemp("cap") / "stand.bvh"
    rt.write_figure_bvh(p, m, q, h)
    cap = ld.mocap.load_bvh(p, mass=70, height=1.75, cutoff=None, ground=0.0)
    ids = ld.mocap.inverse_dynamics(cap)
    filt = ld.mocap.dynamics_filter(cap)
    return cap, ids, filt


def test_plot_holds_the_inverse_dynamics(standing, tmp_path):
    """Every curve of the page is the array it is labelled with, over all T frames: each
    foot's vertical reaction in body weights, the centres of pressure, the hip/knee/ankle
    torque sizes and powers, the residual force in % of body weight."""
    cap, ids, filt = standing
    fig = ld.mocap.plot_capture(cap, ids, tmp_path / "id.png", filtered=filt)
    assert (tmp_path / "id.png").stat().st_size > 10_000
    lines = {ln.get_label(): ln for ax in fig.axes for ln in ax.get_lines()}
    T = len(cap.t)
    mg = 70 * 9.81
    for k, side in enumerate(("left", "right")):
        ln = lines[f"{side} foot vertical"]
        assert len(ln.get_xdata()) == T
        np.testing.assert_allclose(ln.get_ydata(), ids.grf[:, k, 2] / mg, rtol=0, atol=1e-12)
        np.testing.assert_allclose(lines[f"{side} foot CoP x"].get_ydata(), ids.cop[:, k, 0], equal_nan=True)
    both = lines["vertical, both feet"].get_ydata()
    np.testing.assert_allclose(both, ids.grf[:, :, 2].sum(axis=1) / mg, atol=1e-12)
    assert np.allclose(both[1:-1], 1.0, atol=0.01)            # standing, waving the arms: about the weight
    joints = ld.mocap.plots.default_joints(cap)
    assert joints == ["LeftUpLeg", "LeftLeg", "LeftFoot", "RightUpLeg", "RightLeg", "RightFoot"]
    for n in joints:
        sl = cap.model.v_slice(n)
        np.testing.assert_allclose(lines[f"{n} |tau|"].get_ydata(), np.linalg.norm(ids.tau[:, sl], axis=1))
        np.testing.assert_allclose(lines[f"{n} power"].get_ydata(), (ids.tau[:, sl] * cap.v[:, sl]).sum(axis=1),
                                   atol=1e-12)
    np.testing.assert_allclose(lines["residual force (% BW)"].get_ydata(),
                               100 * np.linalg.norm(ids.residual[:, :3], axis=1) / mg)
    np.testing.assert_allclose(lines["filtered root off the capture (cm)"].get_ydata(),
                               100 * filt.filter.root_deviation)


def test_page_holds_both_figures_at_their_poses(standing):
    """The page of the filtered motion: the figure's bodies at every frame are at the filter's
    step that frame shows, the ghost's (``ghost:`` + name) at the capture's frame nearest in
    time, each to float32 rounding; the ghost's shapes are translucent grey, the figure's opaque;
    the arrows carry the filter's ground forces (their sum: the weight, standing)."""
    cap, ids, filt = standing
    rep = filt.filter
    v = ld.mocap.view_capture(cap, ids, filt)
    d = v.data
    m = cap.model
    names = [m.body_names[b] for b in range(1, m.nbody)]
    assert list(v.bodies) == names + [f"ghost:{n}" for n in names]
    g = d["ghost"]
    assert g["bodies"] == list(range(len(names), 2 * len(names))) and g["opacity"] == pytest.approx(0.3)
    P = decode(d)
    kin = ld.forward_kinematics(m, rep.q[v.sample])
    bods = [m.body_id(n) for n in names]
    np.testing.assert_allclose(P[:, :len(names), :3], kin.p[:, bods], atol=2e-6)
    assert same_rotation(P[:, :len(names), 3:], Rotation.from_matrix(kin.R[:, bods].reshape(-1, 3, 3)).as_quat()
                         ).max() < 1e-5
    near = np.abs(cap.t[None, :] - v.times[:, None]).argmin(axis=1)
    kg = ld.forward_kinematics(m, cap.q[near])
    np.testing.assert_allclose(P[:, len(names):, :3], kg.p[:, bods], atol=2e-6)
    assert same_rotation(P[:, len(names):, 3:], Rotation.from_matrix(kg.R[:, bods].reshape(-1, 3, 3)).as_quat()
                         ).max() < 1e-5
    ghost_shapes = [s for s in d["shapes"] if s["b"] in g["bodies"]]
    fig_shapes = [s for s in d["shapes"] if 0 <= s["b"] < len(names)]
    assert {s["b"] for s in ghost_shapes} == set(g["bodies"])
    assert all(s["o"] == pytest.approx(0.3) and s["c"] == "#8c8c8c" for s in ghost_shapes)
    assert all(s["o"] == 1.0 for s in fig_shapes)
    A = np.frombuffer(base64.b64decode(d["arrows"]["data"]), dtype="<f4").reshape(d["nframes"], d["arrows"]["n"], 6)
    fz = A[:, :, 5].sum(axis=1)
    np.testing.assert_allclose(fz, rep.forces[v.sample][:, :, 2].sum(axis=1), rtol=1e-5)
    # the arrows start at the filtered figure's soles (the filter's larger ones), not the capture's
    from linkdyn.mocap.page import _points
    assert filt.soles == ld.mocap.FILTER_SOLES != cap.soles
    np.testing.assert_allclose(A[:, :, :3], _points(filt.model, rep.q[v.sample]), atol=1e-5)
    assert np.abs(A[:, :, :3] - _points(m, rep.q[v.sample])).max() > 0.01
    assert np.median(fz) == pytest.approx(70 * 9.81, rel=0.02)
    assert "show-ghost" in v.html()


def test_page_without_a_filter_shows_the_capture_and_its_reactions(standing):
    cap, ids, _ = standing
    v = ld.mocap.view_capture(cap, ids)
    assert v.data["ghost"] is None and len(v.bodies) == cap.model.nbody - 1
    with pytest.raises(ValueError, match="ids="):
        ld.mocap.view_capture(cap)


def test_viewer_ghost_checks_its_input():
    from linkdyn.recording import Recording
    m = ld.models.human_figure()
    q = standing_configuration(m)[None]
    run = Recording()
    seg = run.start_segment(m)
    seg.t, seg.q, seg.v = [0.0, 0.01], [q[0], q[0]], [np.zeros(m.nv)] * 2
    seg.kinetic, seg.potential, seg.loop_error, seg.loop_forces = [0.0] * 2, [0.0] * 2, [0.0] * 2, [np.zeros((0, 6))] * 2
    assert ld.viz.view(run, ghost=(m, [0.0], q)).data["ghost"]["bodies"][0] == m.nbody - 1
    with pytest.raises(ValueError, match="ghost: q must have shape"):
        ld.viz.view(run, ghost=(m, [0.0, 0.01], q))
    with pytest.raises(TypeError, match=r"ghost: expected \(model, t, q\)"):
        ld.viz.view(run, ghost=m)
    with pytest.raises(ValueError, match="ghost_opacity"):
        ld.viz.view(run, ghost=(m, [0.0], q), ghost_opacity=0.0)


def test_the_tutorial_script_runs_on_a_capture_we_wrote(tmp_path, monkeypatch):
    """examples/mocap_walk.py (docs/mocap_tutorial.md) end to end, on a BVH of the 40-DoF figure
    walking in place (no download): it writes its two plots and its two pages, and returns
    the retargeting of the file, which gives the written motion back."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    try:
        import mocap_walk
    finally:
        sys.path.pop(0)
    m = ld.models.human_figure()
    T, h = 45, 1 / 30
    t = np.arange(T) * h
    q = np.tile(standing_configuration(m), (T, 1))
    for s, ph in (("l", 0.0), ("r", np.pi)):
        q[:, m.q_slice(f"{s}_elbow")] = (0.4 + 0.3 * np.sin(4 * t + ph))[:, None]
    p = tmp_path / "figure.bvh"
    rt.write_figure_bvh(p, m, q, h)
    cap, ids, filt, ret = mocap_walk.main(["--bvh", str(p), "--out", str(tmp_path / "out"), "--start", "0",
                                          "--seconds", "1.5", "--filter-start", "0", "--filter-seconds", "0.6"])
    for name in ("mocap_walk_forces.png", "mocap_filter_forces.png", "mocap_walk.html", "mocap_walk_retargeted.html"):
        assert (tmp_path / "out" / name).stat().st_size > 10_000, name
    assert ids.grf.shape == (T, 2, 3)
    assert np.abs(ld.difference(m, q, ret.q)[:, 6:]).max() < 1e-9


def test_the_kept_capture_is_checked_before_use(tmp_path, monkeypatch):
    """walking_capture() returns the kept file only if its SHA-256 is the published one: a
    damaged file is removed (and, without download, None is returned; nothing is fetched)."""
    from linkdyn.mocap import samples
    monkeypatch.setattr(samples, "data_dir", lambda: tmp_path)
    assert samples.walking_capture(download=False) is None
    bad = tmp_path / samples.FILENAME
    bad.write_text("HIERARCHY\n")
    assert samples.walking_capture(download=False) is None and not bad.exists()

    def no_network(*a, **k):
        raise AssertionError("no download was asked for")
    monkeypatch.setattr(samples.urllib.request, "urlopen", no_network)
    assert samples.walking_capture(download=False) is None
