"""linkdyn.viz.view: the interactive 3D viewer page (three.js).

The data embedded in the page are decoded again and checked against the recording: every
frame's body poses against forward kinematics of the recorded sample it shows (float32
precision), the events on the timeline, the scene props, the contact forces (against the
recorded normal forces), the visual geometry of URDF files (primitives, meshes read with
trimesh and simplified within their triangle budget, a missing mesh file falling back to the
collision geometry).  Then the page itself is opened in headless Chromium (Debian's
``chromium`` driven by Python ``playwright``): it loads with no console error, and two
screenshots at two times differ where the figure moved and nowhere far from it.  Without
chromium or playwright that test is skipped, except under CI (``CI`` set), where it fails.
"""
from __future__ import annotations

import base64
import json
import os
import re
import shutil

import numpy as np
import pytest

import linkdyn as ld
from linkdyn import structure, viz
from linkdyn.models.human import human_figure_16, standing_configuration
from linkdyn.recording import Event, Recording
from linkdyn.viz.viewer import simplify_mesh


def _fill(seg, model, Q, t):
    Q = np.asarray(Q)
    seg.t, seg.q = list(t), list(Q)
    seg.v = list(np.zeros((len(t), model.nv)))
    seg.kinetic, seg.potential = [0.0] * len(t), [0.0] * len(t)
    seg.loop_error = [0.0] * len(t)
    seg.loop_forces = list(np.zeros((len(t), model.nloops, 6)))


@pytest.fixture(scope="module")
def two_segments():
    """0 <= t <= 0.6: a standing figure raises its right arm (elbow and shoulder); at t = 0.6 its
    left hand is welded to the world (an event); 0.6 <= t <= 1.2: the right knee bends."""
    m1 = human_figure_16()
    q0 = standing_configuration(m1)
    t1 = np.linspace(0.0, 0.6, 25)
    Q1 = np.repeat(q0[None], len(t1), axis=0)
    Q1[:, m1.q_index("r_elbow")] = np.linspace(0.0, 1.8, len(t1))
    m2, q2 = structure.connect(m1, Q1[-1], "l_grip", "world")
    t2 = np.linspace(0.6, 1.2, 31)
    Q2 = np.repeat(q2[None], len(t2), axis=0)
    Q2[:, m2.q_index("r_knee")] = np.linspace(0.0, -1.5, len(t2))
    rec = Recording()
    _fill(rec.start_segment(m1), m1, Q1, t1)
    _fill(rec.start_segment(m2), m2, Q2, t2)
    rec.events.append(Event(0.6, "connect", "l_grip__bar", np.array([3.0, 0.0, 4.0, 0.0, 0.1, 0.0]),
                            np.zeros(m2.nv), 1.0, 0.4))
    return rec


def _decode(s, dtype):
    return np.frombuffer(base64.b64decode(s), dtype=dtype)


def _page_data(html):
    m = re.search(r'<script type="application/json" id="linkdyn-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


# ---------------------------------------------------------------------------------------
# the data in the page
def test_poses_are_the_forward_kinematics_of_the_recorded_samples(two_segments):
    v = viz.view(two_segments, fps=30)
    d = _page_data(v.html())                       # what the page reads, decoded from the page itself
    nf, names = d["nframes"], d["bodies"]
    times = _decode(d["times"], "<f8")
    assert nf == len(times) == len(v.times) and times[0] == 0.0 and abs(times[-1] - 1.2) < 1e-12
    assert np.allclose(np.diff(times), 1 / 30)                           # 30 frames per second of playback
    poses = _decode(d["poses"], "<f4").reshape(nf, len(names), 7)
    seg_of = _decode(d["segment"], "<i4")
    from scipy.spatial.transform import Rotation
    for f in range(nf):
        seg = two_segments.segments[seg_of[f]]
        m = seg.model
        kin = ld.forward_kinematics(m, np.asarray(seg.q[v.sample[f]]))
        assert abs(seg.t[v.sample[f]] - times[f]) <= 0.5 / 30 + 1e-12
        for k, name in enumerate(names):
            b = m.body_names.index(name)
            np.testing.assert_allclose(poses[f, k, :3], kin.p[b], atol=2e-6)
            R = Rotation.from_quat(poses[f, k, 3:].astype(float)).as_matrix()
            np.testing.assert_allclose(R, kin.R[b], atol=2e-6)
    # the virtual link of the weld is not a body of the page; the real bodies are, once each
    assert len(names) == len(set(names)) and not any("::" in n or n == "l_grip__world" for n in names)


def test_events_segments_and_props_are_on_the_page(two_segments):
    v = viz.view(two_segments, props=[viz.bar(height=2.3, length=1.0), viz.ground(z=0.0)], title="two <segments>")
    html = v.html()
    d = _page_data(html)
    assert [(e["t"], e["kind"], e["label"]) for e in d["events"]] == [(0.6, "connect", "left grip takes hold of bar")]
    assert d["events"][0]["impulse"] == pytest.approx(5.0)
    assert [s["text"] for s in d["segments"]] == ["segment 1/2: closed loops: none (open tree)",
                                                 "segment 2/2: closed loops: l_grip__world"]
    kinds = sorted(p["kind"] for p in d["props"])
    assert kinds == ["ground", "tubes"] and d["floor"] == 0.0
    loops = _decode(d["loops"]["pts"], "<f4").reshape(d["nframes"], 1, 3)
    seg_of = _decode(d["segment"], "<i4")
    assert np.isnan(loops[seg_of == 0]).all() and np.isfinite(loops[seg_of == 1]).all()
    # the figure: a head with a nose (the front), feet, both sides coloured
    assert {"cone", "box", "capsule", "sphere", "ellipsoid"} <= {s["k"] for s in d["shapes"]}
    assert html.startswith("<!DOCTYPE html>") and "<title>two &lt;segments&gt;</title>" in html
    # self-contained: no script, style sheet or image from elsewhere
    assert not re.search(r"<(script|link|img)[^>]*(src|href)=", html)
    assert html.count("</script>") == 3
    lo, hi = np.array(d["bounds"][0]), np.array(d["bounds"][1])
    assert np.all(hi - lo > 0.3) and lo[2] <= 0.0 and hi[2] >= 2.3


def test_viewer_saves_and_shows_in_jupyter(two_segments, tmp_path):
    v = viz.view(two_segments)
    path = v.save(tmp_path / "run")
    assert path.suffix == ".html" and path.read_text(encoding="utf-8") == v.html()
    frame = v._repr_html_()
    assert frame.startswith('<iframe srcdoc="&lt;!DOCTYPE html&gt;')
    assert '"' not in frame[len('<iframe srcdoc="'):frame.index('" style=')]        # one attribute, escaped
    assert "frames" in repr(v) and v.seconds < 5.0


def test_a_trajectory_with_its_model():
    m, q = ld.models.scenarios.high_bar()
    vel = np.zeros(m.nv)
    vel[4] = 1.0
    vel = ld.loops.project_velocity(m, q, vel)
    traj = ld.sim.simulate(m, q, vel, 0.2, dt=0.01)
    v = viz.view(traj, model=m, fps=50)
    assert v.data["nframes"] == 11 and v.data["figure"] and v.data["events"] == []
    with pytest.raises(TypeError, match="model="):
        viz.view(traj)


def test_contact_forces_are_arrows():
    """A block dropped on the ground: its four corners' normal forces, turned into world vectors
    along the ground's normal, are the arrows of the page."""
    b = ld.ModelBuilder("block")
    b.add_body("box", "world", ld.FreeFlyer(), inertia=ld.Inertia(2.0, [0, 0, 0], np.eye(3) * 0.01))
    for x in (-0.1, 0.1):
        for y in (-0.1, 0.1):
            b.add_contact("box", [x, y, -0.05], friction=0.5)
    b.add_ground()
    model = b.build()
    q = ld.neutral(model)
    q[2] = 0.06
    rec = ld.Simulation(model, q, np.zeros(model.nv), dt=1e-3).run(until=0.2, progress=False)
    v = viz.view(rec)
    d = v.data
    arrows = _decode(d["arrows"]["data"], "<f4").reshape(d["nframes"], 4, 6)
    a = rec.segments[0].arrays()
    f = a["unit_force"][v.sample]                          # [normal, tangent 1, tangent 2]
    np.testing.assert_allclose(arrows[..., 5], np.where(f[..., 0] > 0, f[..., 0], 0.0), rtol=1e-6, atol=1e-4)
    at_rest = arrows[-1]
    assert np.allclose(at_rest[:, 5].sum(), 2.0 * 9.81, rtol=0.05)        # the weight, on four corners
    np.testing.assert_allclose(at_rest[:, 2], 0.0, atol=1e-3)              # drawn from the contact points
    assert d["arrows"]["max"] > 0 and d["planes"][0]["name"] == "ground" and d["floor"] == 0.0


# ---------------------------------------------------------------------------------------
# URDF visual geometry, meshes
URDF = """<robot name="arm">
  <material name="steel"><color rgba="0.6 0.6 0.7 1"/></material>
  <link name="base"><visual><geometry><box size="0.2 0.2 0.1"/></geometry><material name="steel"/></visual></link>
  <link name="upper">
    <inertial><mass value="1"/><origin xyz="0 0 0.2"/><inertia ixx="0.01" iyy="0.01" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><origin xyz="0 0 0.2" rpy="0 0 0"/><geometry><cylinder radius="0.04" length="0.4"/></geometry></visual>
    <visual><geometry><mesh filename="meshes/missing.stl" scale="2 2 2"/></geometry></visual>
    <collision><geometry><sphere radius="0.05"/></geometry></collision>
  </link>
  <link name="tool">
    <visual><geometry><mesh filename="meshes/tool.stl"/></geometry></visual>
  </link>
  <link name="bad"><visual><geometry><box size="oops"/></geometry></visual></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="flange" type="fixed"><parent link="upper"/><child link="tool"/><origin xyz="0 0 0.4"/></joint>
  <joint name="bad_joint" type="fixed"><parent link="tool"/><child link="bad"/></joint>
</robot>"""


def test_urdf_visuals_are_kept_and_drawn(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    (tmp_path / "meshes").mkdir()
    trimesh.creation.icosphere(subdivisions=4, radius=0.05).export(tmp_path / "meshes" / "tool.stl")
    (tmp_path / "arm.urdf").write_text(URDF)
    model = ld.load_urdf(tmp_path / "arm.urdf")
    plain = ld.parse_urdf(URDF)
    assert model.nq == plain.nq == 1 and np.array_equal(model.inertia, plain.inertia)    # the dynamics are as before
    kinds = [(v.frame, v.role, v.kind) for v in model.visuals]
    assert kinds == [("base", "visual", "box"), ("upper", "visual", "cylinder"), ("upper", "visual", "mesh"),
                     ("upper", "collision", "sphere"), ("tool", "visual", "mesh")]       # the malformed box: skipped
    assert model.visuals[0].rgba == (0.6, 0.6, 0.7, 1.0) and np.allclose(model.visuals[2].scale, 2.0)
    Q = np.linspace(-1, 1, 11)[:, None]
    traj = ld.sim.simulate(model, Q[0], np.zeros(1), 0.1, dt=0.01)
    v = viz.view(traj, model=model)
    d = v.data
    assert not d["figure"] and len(d["meshes"]) == 1 and any("missing.stl" in n for n in d["notes"])
    shapes = {(s["k"], s["b"]) for s in d["shapes"]}
    # base on the world (-1); on "upper": the cylinder, and the tool's sphere mesh (a fixed link: a frame)
    assert shapes == {("box", -1), ("cylinder", 0), ("mesh", 0)}
    mesh_shape = next(s for s in d["shapes"] if s["k"] == "mesh")
    assert mesh_shape["p"] == [0.0, 0.0, 0.4]
    assert d["meshes"][0]["nt"] == 5120                      # small enough: kept whole (duplicates merged)
    w = viz.view(traj, model=model, max_triangles=2000)     # a budget (1000 for each of the two meshes): simplified
    assert 200 < w.data["meshes"][0]["nt"] <= 1000
    assert viz.view(traj, model=model, meshes=False).data["figure"]


MJCF = """<mujoco model="m">
  <compiler meshdir="assets"/>
  <asset><mesh name="blob" file="blob.stl" scale="2 2 2"/></asset>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="a" pos="0 0 1">
      <joint name="j" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05" rgba="1 0 0 1"/>
      <geom type="box" pos="0 0 -0.5" size="0.1 0.1 0.1" group="3"/>
      <body name="b" pos="0 0 -0.5">
        <geom type="mesh" mesh="blob"/>
        <inertial pos="0 0 0" mass="1" diaginertia="0.01 0.01 0.01"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""


def test_mjcf_geoms_are_kept_and_drawn(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    (tmp_path / "assets").mkdir()
    trimesh.creation.box(extents=(0.1, 0.1, 0.1)).export(tmp_path / "assets" / "blob.stl")
    (tmp_path / "m.xml").write_text(MJCF)
    model = ld.load_mjcf(tmp_path / "m.xml")
    got = [(v.frame, v.role, v.kind, v.size) for v in model.visuals]
    assert got == [("world", "visual", "plane", (4.0, 4.0)), ("a", "visual", "capsule", (0.05, 0.5)),
                   ("a", "collision", "box", (0.2, 0.2, 0.2)), ("b", "visual", "mesh", ())]
    assert np.allclose(model.visuals[1].p, [0, 0, -0.25]) and model.visuals[1].rgba == (1.0, 0.0, 0.0, 1.0)
    assert np.allclose(model.visuals[3].scale, 2.0)
    traj = ld.sim.simulate(model, ld.neutral(model), np.zeros(model.nv), 0.05, dt=0.01)
    d = viz.view(traj, model=model).data
    # "b" has no joint: a frame of "a"; the collision box is not drawn when "a" has visual geometry
    assert sorted((s["k"], s["b"]) for s in d["shapes"]) == [("capsule", 0), ("mesh", 0)]
    assert len(d["meshes"]) == 1 and d["floor"] == 0.0


def test_without_trimesh_meshes_fall_back_to_simple_shapes(tmp_path, monkeypatch):
    import sys

    from linkdyn.viz import viewer
    (tmp_path / "arm.urdf").write_text(URDF.replace('<mesh filename="meshes/tool.stl"/>', '<sphere radius="0.05"/>'))
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "missing.stl").write_text("solid x\nendsolid x\n")
    model = ld.load_urdf(tmp_path / "arm.urdf")
    traj = ld.sim.simulate(model, np.zeros(1), np.zeros(1), 0.05, dt=0.01)
    monkeypatch.setitem(sys.modules, "trimesh", None)           # import trimesh -> ImportError
    viewer._read_mesh.cache_clear()
    d = viz.view(traj, model=model).data
    assert d["meshes"] == [] and any("trimesh is not installed" in n for n in d["notes"])
    assert {s["k"] for s in d["shapes"]} >= {"box", "cylinder", "sphere"}
    viewer._read_mesh.cache_clear()


def test_simplify_mesh_keeps_the_shape_within_the_budget():
    trimesh = pytest.importorskip("trimesh")
    s = trimesh.creation.icosphere(subdivisions=5, radius=1.0)
    V, F = simplify_mesh(s.vertices, s.faces, 800)
    assert 100 < len(F) <= 800 and F.max() < len(V)
    r = np.linalg.norm(V, axis=1)
    assert np.all(r > 0.85) and np.all(r < 1.0 + 1e-9)          # still a sphere
    V2, F2 = simplify_mesh(s.vertices, s.faces, 10 ** 6)
    assert len(F2) == len(s.faces)


def test_a_robot_from_example_robot_data_is_drawn_with_its_meshes():
    pytest.importorskip("trimesh")
    try:
        model = ld.models.example_robot("ur5")
    except (FileNotFoundError, ImportError) as exc:        # pragma: no cover - example-robot-data missing
        pytest.skip(str(exc))
    traj = ld.sim.simulate(model, ld.neutral(model), np.zeros(model.nv), 0.05, dt=0.01)
    v = viz.view(traj, model=model)
    d = v.data
    assert not d["figure"] and len(d["meshes"]) >= 6 and sum(m["nt"] for m in d["meshes"]) <= 150_000


# ---------------------------------------------------------------------------------------
# the page in a browser
def _browser():
    """(playwright's sync_playwright, chromium path) or a skip / a failure under CI."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    missing = [what for what, ok in (("chromium (apt-get install chromium)", path),
                                     ("playwright (pip install playwright)", sync_playwright)) if not ok]
    if missing:
        msg = "the browser test needs " + " and ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(msg + "; CI must run it")
        pytest.skip(msg)
    return sync_playwright, path


def test_the_page_plays_in_a_browser(two_segments, tmp_path):
    sync_playwright, chromium = _browser()
    from PIL import Image
    path = viz.view(two_segments, props=[viz.ground(z=0.0)], title="two segments").save(tmp_path / "run.html")
    shots, errors = {}, []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--use-angle=swiftshader",
                                                                   "--enable-unsafe-swiftshader"])
        try:
            page = browser.new_page(viewport={"width": 900, "height": 640})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(path.as_uri() + "#t=0.05")
            page.wait_for_function("window.linkdynViewer && window.linkdynViewer.ready", timeout=60_000)
            assert page.evaluate("window.linkdynViewer.getTime()") == pytest.approx(0.05)   # from the URL
            where = {}
            for t in (0.05, 1.15):
                page.evaluate(f"window.linkdynViewer.setTime({t})")
                page.screenshot(path=str(tmp_path / f"t{t}.png"))
                shots[t] = np.asarray(Image.open(tmp_path / f"t{t}.png").convert("RGB"), dtype=int)
                where[t] = [page.evaluate("(b) => { const v = window.linkdynViewer, p = v.bodyPosition(b); "
                                          "return p && v.project(p[0], p[1], p[2]); }", b)
                            for b in ("r_forearm_hand", "r_shank_foot")]
                assert page.locator("#time").inner_text() == f"t = {t:.3f} s"
            label = page.locator(".mlabel").first.inner_text()
            view_box = page.locator("#view").bounding_box()
            panels = [page.locator(f"#{k}").bounding_box() for k in ("hud", "flash", "help")]
        finally:
            browser.close()
    assert errors == []
    assert label == "left grip takes hold of bar"
    diff = np.abs(shots[0.05] - shots[1.15]).sum(axis=2) > 30
    for b in panels:                                   # the title, the event's flash, the help: text, not the figure
        if b is not None:
            diff[int(b["y"]):int(b["y"] + b["height"]) + 1, int(b["x"]):int(b["x"] + b["width"]) + 1] = False
    top = int(view_box["height"])                      # the 3D view, above the time bar
    changed = diff[:top]
    ys, xs = np.nonzero(changed)
    assert len(ys) > 500, "the two times look the same"
    # where the moving parts are (the right forearm, then the right shank) at either time
    pts = np.array([pt for t in where for pt in where[t] if pt is not None])
    x0, y0 = pts.min(axis=0) - 150                     # (their shadows on the ground are near them too)
    x1, y1 = pts.max(axis=0) + 150
    inside = (xs >= x0) & (xs <= x1) & (ys >= y0) & (ys <= y1)
    assert inside.mean() > 0.95, f"{(~inside).sum()} pixels changed away from the moving figure"
    # and something is drawn: the figure is not the background
    assert (np.abs(shots[0.05][:top] - shots[0.05][5, 450]).sum(axis=2) > 60).sum() > 2000


def test_simulation_animate_html_is_the_viewer(tmp_path):
    """``sim.animate("run.html")`` writes the 3-D viewer page (``.gif``/``.mp4`` stay matplotlib's),
    and ``sim.view()`` is the Viewer that shows inline in Jupyter."""
    b = ld.ModelBuilder("pendulum")
    b.add_body("rod", "world", ld.Revolute("y"), inertia=ld.Inertia(1.0, [0, 0, -0.5], np.diag([0.02, 0.02, 1e-4])))
    model = b.build()
    sim = ld.Simulation(model, [0.5], dt=1e-3)
    sim.run(until=0.2, progress=False)
    path = sim.animate(tmp_path / "run.html")
    text = path.read_text()
    assert path == tmp_path / "run.html" and "three" in text.lower() and len(text) > 100_000
    v = sim.view(fps=30)
    assert isinstance(v, viz.Viewer) and v.times[-1] == pytest.approx(0.2, abs=0.04)
    assert "<iframe" in v._repr_html_()
