"""The viewer draws the collision geometry and the ground where the physics has them.

Two scenes: a box geom (placed off its body's origin, turned) dropped tumbling onto a ground
plane geom at z = 0.3, and the swing of ``linkdyn demo swing`` (its ground the plane geom
"ground", a ground prop that disagrees at -0.5 m as the demo once had); and each demo page
(high bar, drop, swing) in Chromium: the drawn floor and grid at the physics plane's height.  From the
page's scene data (no browser): the ground is the physics plane's height exactly, whatever the
props say; every geom and contact plane is in ``collision`` with its body and its placement;
the box composed from the page's body poses is the physics' box at every frame.  In headless
Chromium (three.js's own objects, read through ``window.linkdynViewer``): the floor and its grid
lie at the plane's height to 1e-9, the drawn box's world pose at a chosen frame is the physics
pose (float32 poses in the page: 1e-6), and the legend's checkbox hides and shows the layer.
"""
from __future__ import annotations

import base64

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import linkdyn as ld
from linkdyn import viz
from linkdyn.cli import SCENE_CAMERAS, _scene_props
from linkdyn.model.geometry import PLANE

from test_viewer import _browser, _page_data

FLOOR_Z = 0.3
HALF = (0.15, 0.1, 0.05)
GEOM_R = Rotation.from_euler("z", 90, degrees=True).as_matrix()
GEOM_P = np.array([0.02, 0.0, 0.0])


def _box_model():
    m, (a, b, c) = 2.0, HALF
    b_ = ld.ModelBuilder("box on a ground plane")
    b_.add_body("box", "world", ld.FreeFlyer(),
                inertia=ld.Inertia(m, GEOM_P, GEOM_R @ np.diag([m / 3 * (b * b + c * c), m / 3 * (a * a + c * c),
                                                                 m / 3 * (a * a + b * b)]) @ GEOM_R.T))
    b_.add_geom("box", "box", HALF, placement=(GEOM_R, GEOM_P), name="box", friction=0.8)
    b_.add_geom("world", "plane", (), placement=[0.0, 0.0, FLOOR_Z], name="floor", friction=0.8)
    return b_.build()


@pytest.fixture(scope="module")
def box_run():
    model = _box_model()
    q = ld.neutral(model)
    q[2] = FLOOR_Z + 0.25
    v = np.zeros(model.nv)
    v[3:] = [2.0, -3.0, 1.0]                      # tumbling as it falls
    rec = ld.Simulation(model, q, v, dt=1e-3, contact_method="timestep").run(until=0.6, progress=False)
    return model, rec


@pytest.fixture(scope="module")
def swing_run():
    rec = ld.models.scenarios.swing_simulation().run(until=0.05, progress=False)
    return rec


def _decode(s, dtype):
    return np.frombuffer(base64.b64decode(s), dtype=dtype)


def _physics_box(model, q):
    """(R, p) of the box geom in the world: the body's pose from forward kinematics, composed
    with the geom's placement in the body (the model's geom_R, geom_pos)."""
    g = model.geom_names.index("box")
    kin = ld.forward_kinematics(model, np.asarray(q))
    b = int(model.geom_body[g])
    return kin.R[b] @ model.geom_R[g], kin.p[b] + kin.R[b] @ model.geom_pos[g]


def _physics_ground(model):
    """The height of the model's ground: its unbounded world plane with normal +z, a contact plane
    (``add_ground``) or a plane geom."""
    zs = [float(pl.p[2]) for pl in model.planes if pl.body == 0 and pl.extent is None and pl.R[2, 2] == 1.0]
    zs += [float(model.geom_pos[g][2]) for g in range(model.ngeom) if model.geom_body[g] == 0
           and model.geom_names[g] and int(model.geom_type[g]) == PLANE and model.geom_R[g][2, 2] == 1.0]
    assert len(zs) == 1, zs
    return zs[0]


# ---------------------------------------------------------------------------------------
# the scene data (no browser)
def test_the_box_and_the_ground_plane_are_in_the_scene_data(box_run):
    model, rec = box_run
    v = viz.view(rec)
    d = _page_data(v.html())                      # as the page reads it
    assert d["floor"] == FLOOR_Z and d["ground"] == {"z": FLOOR_Z, "source": "geom", "name": "floor"}
    items = {(c["src"], c["name"]): c for c in d["collision"]}
    assert set(items) == {("geom", "box"), ("geom", "floor")}
    floor, box = items["geom", "floor"], items["geom", "box"]
    assert floor["ground"] and floor["b"] == -1 and floor["k"] == "plane" and floor["ext"] is None
    assert floor["p"] == [0.0, 0.0, FLOOR_Z] and floor["grid"] is None           # the page's grid is this plane
    assert box["k"] == "box" and box["body"] == "box" and not box["ground"]
    np.testing.assert_allclose(box["s"], 2 * np.array(HALF), rtol=0, atol=0)         # full edges
    np.testing.assert_allclose(box["p"], GEOM_P, atol=1e-15)
    np.testing.assert_allclose(Rotation.from_quat(box["q"]).as_matrix(), GEOM_R, atol=1e-15)
    # the box as the page composes it (body pose of each frame, then the geom's placement) is the
    # physics' box at the recorded sample the frame shows
    nf, names = d["nframes"], d["bodies"]
    poses = _decode(d["poses"], "<f4").reshape(nf, len(names), 7).astype(float)
    k = names.index(box["body"])
    seg = rec.segments[0]
    lowest = []
    for f in range(nf):
        Rb = Rotation.from_quat(poses[f, k, 3:]).as_matrix()
        R = Rb @ Rotation.from_quat(box["q"]).as_matrix()
        p = poses[f, k, :3] + Rb @ np.asarray(box["p"])
        R_ph, p_ph = _physics_box(model, seg.q[v.sample[f]])
        np.testing.assert_allclose(p, p_ph, atol=1e-6)
        np.testing.assert_allclose(R, R_ph, atol=1e-6)
        corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * HALF
        lowest.append(float((p_ph + corners @ R_ph.T)[:, 2].min()))
    assert lowest[0] > FLOOR_Z + 0.05 and abs(lowest[-1] - FLOOR_Z) < 1e-3        # it falls and lands on the floor


def test_the_swing_ground_is_the_contact_ground_not_the_prop(swing_run):
    rec = swing_run
    model = rec.segments[0].model
    z = _physics_ground(model)
    props = _scene_props("swing", rec) + [viz.ground(z=-0.5)]       # a prop that disagrees, as the demo had
    d = viz.view(rec, props=props).data
    assert z == 0.0
    assert d["floor"] == z and d["ground"] == {"z": z, "source": "geom", "name": "ground"}
    assert [p["z"] for p in d["props"] if p["kind"] == "ground"] == [z, z]
    assert any("ground prop (z = -0.5 m)" in n for n in d["notes"])
    seat = next(c for c in d["collision"] if c["name"] == "seat")
    g = model.geom_names.index("seat")
    assert seat["src"] == "geom" and seat["k"] == "box" and seat["body"] == model.body_names[model.geom_body[g]]
    np.testing.assert_allclose(seat["s"], 2 * np.asarray(model.geom_size[g]), rtol=0, atol=0)
    assert seat["p"] == [float(x) for x in model.geom_pos[g]]
    lo = np.array(d["bounds"][0])
    assert lo[2] <= z
    # the figure draws the seat as a solid where its geom is, and each rope as one line from its
    # top to its end: no line from the origin, none from a rope's top to the places on the seat
    seat_body = d["bodies"].index(model.body_names[model.geom_body[g]])
    solid = [sh for sh in d["shapes"] if sh["b"] == seat_body and sh["k"] == "box"]
    assert len(solid) == 1 and np.allclose(solid[0]["s"], seat["s"], atol=1e-6)
    for rope in ("l_rope", "r_rope"):
        k = d["bodies"].index(rope)
        caps = [sh for sh in d["shapes"] if sh["b"] == k and sh["k"] == "capsule"]
        assert len(caps) == 1 and caps[0]["s"][1] == pytest.approx(2.5), rope


def test_the_page_camera_looks_from_the_direction_asked():
    rec = ld.models.scenarios.drop_simulation().run(until=0.01, progress=False)
    assert viz.view(rec).data["camera"] is None
    assert viz.view(rec, camera=(2.0, 0.0, 0.0)).data["camera"] == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="camera"):
        viz.view(rec, camera=(0.0, 0.0, 0.0))


def test_without_a_model_ground_the_page_keeps_its_default():
    """No ground plane in the model: a ground prop sets the floor, as before; without one, the
    lowest point of the scene; a tilted infinite plane is drawn as a grid in its own plane."""
    b = ld.ModelBuilder("ball")
    b.add_body("ball", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 4e-3))
    b.add_geom("ball", "sphere", [0.1], name="ball")
    th = 0.3
    R = np.array([[np.cos(th), 0, np.sin(th)], [0, 1, 0], [-np.sin(th), 0, np.cos(th)]])
    b.add_geom("world", "plane", (), placement=(R, [0.0, 0.0, -1.0]), name="ramp")
    model = b.build()
    q = ld.neutral(model)
    traj = ld.sim.simulate(model, q, np.zeros(model.nv), 0.05, dt=0.01)
    d = viz.view(traj, model=model, props=[viz.ground(z=-2.0)]).data
    assert d["floor"] == -2.0 and d["ground"]["source"] == "prop"
    ramp = next(c for c in d["collision"] if c["name"] == "ramp")
    assert not ramp["ground"] and ramp["grid"]["h"] > 0 and ramp["grid"]["step"] == d["grid"]
    ball = next(c for c in d["collision"] if c["name"] == "ball")
    assert ball["k"] == "sphere" and ball["s"] == [0.1]
    d = viz.view(traj, model=model).data
    assert d["ground"]["source"] == "default" and d["floor"] == pytest.approx(-0.1 - 0.05 * 9.81 * 0.05, abs=0.05)


# ---------------------------------------------------------------------------------------
# the pages in a browser
def _open(sync_playwright, chromium, pages, tmp_path, work):
    """Open each page of ``pages`` ({name: Viewer}) in headless Chromium and run ``work(page, name,
    viewer)``; returns {name: its result}, after checking no page logged an error."""
    out, errors = {}, []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--use-angle=swiftshader",
                                                                   "--enable-unsafe-swiftshader"])
        try:
            for name, v in pages.items():
                page = browser.new_page(viewport={"width": 900, "height": 640})
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(v.save(tmp_path / f"{name}.html").as_uri() + "#t=0")
                page.wait_for_function("window.linkdynViewer && window.linkdynViewer.ready", timeout=60_000)
                out[name] = work(page, name, v)
                page.close()
        finally:
            browser.close()
    assert errors == []
    return out


def test_the_pages_draw_the_ground_and_the_box_where_the_physics_has_them(box_run, swing_run, tmp_path):
    sync_playwright, chromium = _browser()
    from PIL import Image
    model, rec = box_run
    pages = {"box": viz.view(rec, title="a box on a ground plane geom"),
             "swing": viz.view(swing_run, props=_scene_props("swing", swing_run), title="swing")}
    f = int(np.argmin(np.abs(pages["box"].times - 0.2)))             # mid-tumble, before it lands

    def work(page, name, v):
        got = {"ground": page.evaluate("window.linkdynViewer.ground()")}
        t = float(v.times[f if name == "box" else -1])
        page.evaluate(f"window.linkdynViewer.setTime({t!r})")
        got["t"] = page.evaluate("window.linkdynViewer.getTime()")
        got["collision"] = page.evaluate("window.linkdynViewer.collision()")
        page.screenshot(path=str(tmp_path / f"{name}.png"))
        got["legend"] = page.locator("#legend").inner_text()
        got["hud"] = page.locator("#hud").bounding_box()
        page.locator("#show-collision").uncheck()                   # the legend's toggle
        got["hidden"] = [c["visible"] for c in page.evaluate("window.linkdynViewer.collision()")]
        page.screenshot(path=str(tmp_path / f"{name}-hidden.png"))
        page.locator("#show-collision").check()
        got["shown"] = [c["visible"] for c in page.evaluate("window.linkdynViewer.collision()")]
        return got

    got = _open(sync_playwright, chromium, pages, tmp_path, work)
    # the ground: the floor and its grid at the physics plane's height
    for name, z, source in (("box", FLOOR_Z, "geom"), ("swing", _physics_ground(swing_run.segments[0].model), "geom")):
        g = got[name]["ground"]
        assert abs(g["floor"] - z) <= 1e-9 and abs(g["grid"] - z) <= 1e-9 and g["source"] == source, (name, g)
        assert f"z = {float(f'{z:.3g}'):g} m" in got[name]["legend"] and "collision geometry" in got[name]["legend"]
        assert got[name]["hidden"] == [False] * len(got[name]["hidden"]) and all(got[name]["shown"])
    # the box at frame f, as three.js draws it, is the physics' box at the sample that frame shows
    v = pages["box"]
    assert got["box"]["t"] == v.times[f]
    (box,) = [c for c in got["box"]["collision"] if c["name"] == "box"]
    M = np.array(box["matrix"]).reshape(4, 4).T                     # three.js: column-major
    R_ph, p_ph = _physics_box(model, rec.segments[0].q[v.sample[f]])
    np.testing.assert_allclose(M[:3, 3], p_ph, atol=1e-6)
    np.testing.assert_allclose(M[:3, :3], R_ph, atol=1e-6)
    assert abs(np.trace(R_ph) - 3.0) > 0.1 and p_ph[2] - FLOOR_Z > 0.06                # turned, in the air
    # the swing's seat box is drawn on the seat's body
    (seat,) = [c for c in got["swing"]["collision"] if c["name"] == "seat"]
    assert seat["kind"] == "box" and seat["visible"]
    # the box's collision layer is seen: hiding it changes the picture around the box, not only the
    # checkbox
    a = np.asarray(Image.open(tmp_path / "box.png").convert("RGB"), dtype=int)
    b = np.asarray(Image.open(tmp_path / "box-hidden.png").convert("RGB"), dtype=int)
    changed = np.abs(a - b).sum(axis=2) > 30
    h = got["box"]["hud"]
    changed[:int(h["y"] + h["height"]) + 1, :int(h["x"] + h["width"]) + 1] = False
    assert changed.sum() > 2000


def test_an_mjcf_model_brings_its_floor_and_geoms_to_the_page():
    """An MJCF floor geom raised to z = 0.25 is the page's ground (with contacts=True the loader
    also makes it a contact plane: both are the ground, drawn once, as the grid); the capsule
    from ``fromto`` and the sphere are drawn on their body with MuJoCo's sizes as full lengths."""
    xml = """<mujoco model="m"><worldbody>
      <geom name="floor" type="plane" size="2 2 0.1" pos="0 0 0.25"/>
      <body name="a" pos="0 0 1"><freejoint/>
        <geom name="c" type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05"/>
        <geom name="s" type="sphere" pos="0 0 -0.5" size="0.1"/>
      </body></worldbody></mujoco>"""
    for contacts in (True, False):
        model = ld.parse_mjcf(xml, contacts=contacts)
        traj = ld.sim.simulate(model, ld.neutral(model), np.zeros(model.nv), 0.05, dt=0.01)
        d = viz.view(traj, model=model).data
        assert d["floor"] == 0.25 and d["ground"] == {"z": 0.25, "source": "geom", "name": "floor"}
        got = {(c["src"], c["name"]): c for c in d["collision"]}
        assert set(got) == {("geom", "floor"), ("geom", "c"), ("geom", "s")} | ({("plane", "floor")} if contacts
                                                                                else set())
        assert [c["name"] for c in d["collision"] if c["ground"]] == ["floor"] * (2 if contacts else 1)
        cap, sph = got["geom", "c"], got["geom", "s"]
        assert cap["k"] == "capsule" and cap["s"] == [0.05, 0.5] and cap["body"] == "a"
        np.testing.assert_allclose(cap["p"], [0, 0, -0.25], atol=1e-12)
        assert sph["s"] == [0.1] and np.allclose(sph["p"], [0, 0, -0.5])


def test_each_demo_page_draws_the_ground_at_the_physics_plane(tmp_path):
    """``linkdyn demo highbar|drop|swing``: each page (as the demo makes it, its props included),
    opened in headless Chromium, draws its floor and its grid at the height of the physics'
    ground plane (a contact plane for the high bar and the drop, a plane geom for the swing),
    read from the page (``linkdynViewer.ground()``); the page's scene data say the same.  The
    swing's page looks from the direction the demo asks (``SCENE_CAMERAS``)."""
    sync_playwright, chromium = _browser()
    from linkdyn.models import scenarios as sc
    make = {"highbar": sc.high_bar_simulation, "drop": sc.drop_simulation, "swing": sc.swing_simulation}
    pages, z = {}, {}
    for name, f in make.items():
        rec = f().run(until=0.03, progress=False)
        z[name] = _physics_ground(rec.segments[0].model)
        pages[name] = viz.view(rec, props=_scene_props(name, rec), title=name, camera=SCENE_CAMERAS.get(name))
        assert pages[name].data["ground"]["z"] == z[name]
    assert z == {"highbar": 0.0, "drop": 0.0, "swing": 0.0}

    def work(page, name, v):
        return (page.evaluate("window.linkdynViewer.ground()"), page.evaluate("window.linkdynViewer.cameraDirection()"),
                page.locator("#legend").inner_text())

    got = _open(sync_playwright, chromium, pages, tmp_path, work)
    cam = np.asarray(SCENE_CAMERAS["swing"])
    np.testing.assert_allclose(got["swing"][1], cam / np.linalg.norm(cam), atol=1e-6)
    # the props are explained in the legend
    assert "the bar, 2.8 m above the floor" in got["highbar"][2]
    assert "the swing's frame" in got["swing"][2]
    got = {name: g for name, (g, _, _) in got.items()}
    for name, g in got.items():
        assert abs(g["floor"] - z[name]) <= 1e-9 and abs(g["grid"] - z[name]) <= 1e-9, (name, g)
        assert g["source"] == ("geom" if name == "swing" else "plane"), (name, g)


# ---------------------------------------------------------------------------------------
# mesh geoms: their convex hulls drawn where the physics has them
MESH_XML = """<mujoco model="meshes"><asset>
  <mesh name="tet" vertex="0 0 0  1 0 0  0 1 0  0 0 1" scale="0.2 0.2 0.2"/>
  <mesh name="brick" vertex="-1 -1 -1  1 -1 -1  -1 1 -1  1 1 -1  -1 -1 1  1 -1 1  -1 1 1  1 1 1  0 0 0.5"
        scale="0.15 0.1 0.05"/></asset>
  <worldbody><geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="a" pos="0 0 0.6" euler="20 10 0"><freejoint/>
      <geom name="tet" type="mesh" mesh="tet" pos="0.1 -0.05 0.02" euler="0 0 90" density="500"/>
      <geom name="brick" type="mesh" mesh="brick" pos="-0.2 0 0" euler="30 0 0" density="500"/>
    </body></worldbody></mujoco>"""


@pytest.fixture(scope="module")
def mesh_run():
    model = ld.parse_mjcf(MESH_XML)
    q = ld.neutral(model)
    q[2] = 0.6                                                 # above the floor
    v = np.zeros(model.nv)
    v[3:] = [1.0, -2.0, 0.5]                                   # turning as it falls
    traj = ld.sim.simulate(model, q, v, 0.2, dt=0.01)
    return model, traj


def _hull_volume(V, T):
    """Volume enclosed by the triangles T (rows of V), by the divergence theorem: positive only
    for a closed surface whose triangles all turn counter-clockwise seen from outside."""
    a, b, c = V[T[:, 0]], V[T[:, 1]], V[T[:, 2]]
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def test_a_mesh_geom_is_drawn_as_its_hull_at_the_geoms_pose(mesh_run):
    """Each mesh geom of an MJCF is in the page's collision data with its hull: the triangles
    close a surface turned outwards whose volume is the shape's (the scaled tetrahedron's
    s^3 / 6; the brick's 8 |half sizes| product, its inner vertex left out of the hull), and,
    composed with the page's own body poses, they lie where the physics has the geom (forward
    kinematics, geom_R, geom_pos, geom_verts) at every frame."""
    model, traj = mesh_run
    v = viz.view(traj, model=model)
    d = _page_data(v.html())
    nf, names = d["nframes"], d["bodies"]
    poses = _decode(d["poses"], "<f4").reshape(nf, len(names), 7)
    items = {c["name"]: c for c in d["collision"] if c["k"] == "mesh"}
    assert set(items) == {"tet", "brick"}
    volume = {"tet": 0.2 ** 3 / 6.0, "brick": 8 * 0.15 * 0.1 * 0.05}
    for name, it in items.items():
        V, T = np.asarray(it["v"], dtype=float), np.asarray(it["t"], dtype=int)
        assert T.shape == (2 * len(V) - 4, 3)                  # a closed triangulated hull (Euler: F = 2V - 4)
        edges = np.sort(np.concatenate([T[:, [0, 1]], T[:, [1, 2]], T[:, [2, 0]]]), axis=1)
        _, count = np.unique(edges, axis=0, return_counts=True)
        assert (count == 2).all()                              # every edge shared by two triangles: closed
        assert _hull_volume(V, T) == pytest.approx(volume[name], rel=1e-5)
        g = model.geom_names.index(name)
        a, n = int(model.geom_vert_adr[g]), int(model.geom_vert_num[g])
        np.testing.assert_allclose(V, model.geom_verts[a:a + n], atol=1e-6)
        b = names.index(it["body"])
        for f in (0, nf // 2, nf - 1):
            q = traj.q[v.sample[f]]
            kin = ld.forward_kinematics(model, q)
            k = int(model.geom_body[g])
            Rg, pg = kin.R[k] @ model.geom_R[g], kin.p[k] + kin.R[k] @ model.geom_pos[g]
            physics = model.geom_verts[a:a + n] @ Rg.T + pg
            pose = poses[f, b].astype(float)
            Rb = Rotation.from_quat(pose[3:]).as_matrix()
            Ri = Rotation.from_quat(it["q"]).as_matrix()
            page = (V @ Ri.T + np.asarray(it["p"])) @ Rb.T + pose[:3]
            np.testing.assert_allclose(page, physics, atol=2e-6)
        assert np.ptp(traj.q[:, 2]) > 0.1                     # it moved: the poses were not all the same


def test_the_page_draws_the_mesh_hulls(mesh_run, tmp_path):
    """In headless Chromium the page holds a mesh for each mesh geom, with the hull's triangles,
    at the physics pose of the geom (float32 poses: 1e-6)."""
    sync_playwright, chromium = _browser()
    model, traj = mesh_run
    pages = {"meshes": viz.view(traj, model=model, title="mesh geoms")}
    f = len(pages["meshes"].times) // 2

    def work(page, name, v):
        page.evaluate(f"window.linkdynViewer.setTime({float(v.times[f])!r})")
        page.screenshot(path=str(tmp_path / "meshes.png"))
        return page.evaluate("window.linkdynViewer.collision()")

    got = _open(sync_playwright, chromium, pages, tmp_path, work)["meshes"]
    drawn = {c["name"]: c for c in got if c["kind"] == "mesh"}
    items = {c["name"]: c for c in pages["meshes"].data["collision"] if c["k"] == "mesh"}
    q = traj.q[pages["meshes"].sample[f]]
    kin = ld.forward_kinematics(model, q)
    for name in ("tet", "brick"):
        assert drawn[name]["visible"] and drawn[name]["triangles"] == len(items[name]["t"])
        g = model.geom_names.index(name)
        k = int(model.geom_body[g])
        M = np.array(drawn[name]["matrix"]).reshape(4, 4).T
        np.testing.assert_allclose(M[:3, :3], kin.R[k] @ model.geom_R[g], atol=1e-6)
        np.testing.assert_allclose(M[:3, 3], kin.p[k] + kin.R[k] @ model.geom_pos[g], atol=1e-6)
