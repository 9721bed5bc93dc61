"""MJCF contact geometry: sphere geoms -> linkdyn contacts, plane geoms -> planes, with
MuJoCo's collision filters (contype/conaffinity, <exclude>, <pair>), default classes and the
warnings for what linkdyn leaves out.  The set of touching pairs, their distances, contact
points and friction are checked against MuJoCo's own collision detection."""
import warnings

import numpy as np
import pytest

import linkdyn as ld
from linkdyn import spatial as sp
from linkdyn.contact.rows import UnitCatalog
from linkdyn.model.io.mjcf import MJCFError, MJCFWarning, parse_mjcf, q_to_qpos

SCENE = """
<mujoco model="scene">
  <compiler angle="radian"/>
  <default>
    <geom friction="0.8"/>
    <default class="visual"><geom contype="0" conaffinity="0"/></default>
    <default class="foot"><geom type="sphere" size="0.015" friction="0.8 0.01 0.001"/></default>
  </default>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <frame pos="1 0 0.2" euler="0 -0.3 0">
      <body name="ramp">
        <geom name="ramp_top" type="plane" size="0.5 0.5 0.1" pos="0 0 0.05" euler="0.1 0 0"/>
      </body>
    </frame>
    <geom name="ghost" type="plane" size="1 1 0.1" pos="0 0 0.5" contype="0" conaffinity="0"/>
    <body name="box" pos="0 0 0.3">
      <freejoint name="root"/>
      <geom type="box" size="0.1 0.05 0.04" class="visual"/>
      <frame pos="0 0 -0.04" euler="0 0 0.5">
        <geom name="c0" class="foot" pos="0.1 0.05 0"/>
        <geom name="c1" class="foot" pos="-0.1 0.05 0" size="0.02"/>
      </frame>
      <geom name="c2" class="foot" pos="0.1 -0.05 -0.04"/>
      <geom class="foot" pos="-0.1 -0.05 -0.04"/>
      <geom name="marker" type="sphere" size="0.01" pos="0 0 0.04" class="visual"/>
      <body name="arm" pos="0.1 0 0">
        <joint name="hinge" axis="0 1 0"/>
        <geom type="capsule" size="0.01" fromto="0 0 0 0.2 0 0" class="visual"/>
        <geom name="tip" size="0.02" pos="0.2 0 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def mujoco():
    return pytest.importorskip("mujoco")


def quat_xyzw(R):
    from scipy.spatial.transform import Rotation
    return Rotation.from_matrix(R).as_quat()


def test_planes_and_spheres_come_through_with_poses_radii_friction():
    with warnings.catch_warnings():
        warnings.simplefilter("error", MJCFWarning)
        m = parse_mjcf(SCENE)
    planes = {pl.name: pl for pl in m.planes}
    assert sorted(planes) == ["floor", "ramp_top"]                  # the ghost (contype 0) is skipped
    fl = planes["floor"]
    assert fl.body == 0 and fl.extent is None and fl.friction == pytest.approx(0.8)       # from the default class
    assert fl.R == pytest.approx(np.eye(3)) and fl.p == pytest.approx(np.zeros(3))
    # the ramp: a static body (welded to the world) in a rotated <frame>, the geom rotated again
    ry, rx = sp.roty(-0.3), sp.rotx(0.1)
    rp = planes["ramp_top"]
    assert rp.body == 0
    assert rp.R == pytest.approx(ry @ rx, abs=1e-12)
    assert rp.p == pytest.approx(np.array([1, 0, 0.2]) + ry @ np.array([0, 0, 0.05]), abs=1e-12)
    assert rp.R[:, 2] == pytest.approx((ry @ rx)[:, 2])              # the normal is the frame's z axis
    cs = {c.name: c for c in m.contacts}
    assert sorted(cs) == ["box_contact0", "c0", "c1", "c2", "tip"]  # the visual marker is skipped
    box, arm = m.body_id("box"), m.body_id("arm")
    rz = sp.rotz(0.5)
    assert cs["c0"].body == box and cs["c0"].position == pytest.approx(rz @ [0.1, 0.05, 0] + [0, 0, -0.04])
    assert cs["c1"].position == pytest.approx(rz @ [-0.1, 0.05, 0] + [0, 0, -0.04])
    assert cs["c2"].position == pytest.approx([0.1, -0.05, -0.04])
    assert cs["box_contact0"].position == pytest.approx([-0.1, -0.05, -0.04])
    assert [cs[k].radius for k in ("c0", "c1", "c2", "box_contact0", "tip")] == pytest.approx(
        [0.015, 0.02, 0.015, 0.015, 0.02])
    assert cs["c0"].friction == pytest.approx(0.8) and cs["tip"].friction == pytest.approx(0.8)
    assert cs["tip"].body == arm and cs["tip"].position == pytest.approx([0.2, 0, 0])
    assert all(c.restitution == 0.0 for c in cs.values())


def test_contacts_false_and_load_mjcf(tmp_path):
    path = tmp_path / "scene.xml"
    path.write_text(SCENE)
    m = ld.load_mjcf(path)
    assert len(m.contacts) == 5 and len(m.planes) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", MJCFWarning)
        m0 = ld.load_mjcf(path, contacts=False)
        colliding = SCENE.replace('fromto="0 0 0 0.2 0 0" class="visual"', 'fromto="0 0 0 0.2 0 0"')
        assert parse_mjcf(colliding, contacts=False).contacts == ()       # no warning about the capsule
    with warnings.catch_warnings():                                     # the capsule is collision geometry:
        warnings.simplefilter("error", MJCFWarning)                     # nothing to report
        assert len(parse_mjcf(colliding).contacts) == 5
    assert m0.contacts == () and m0.planes == ()
    assert m0.nv == m.nv and np.allclose(m0.inertia, m.inertia)
    # the contact flag of <option> turns them off too
    for flag in ('contact="disable"', 'constraint="disable"'):
        mf = parse_mjcf(SCENE.replace("<worldbody>", f"<option><flag {flag}/></option><worldbody>", 1))
        assert mf.contacts == () and mf.planes == ()


def test_contype_zero_and_bitmasks_are_respected():
    xml = """<mujoco><worldbody><geom name="floor" type="plane" size="1 1 .1" {floor}/>
      <body name="b" pos="0 0 1"><freejoint/><geom name="s" size="0.05" {ball}/></body></worldbody></mujoco>"""
    m = parse_mjcf(xml.format(floor="", ball=""))
    assert len(m.contacts) == 1 and m.planes[0].friction == 1.0 and m.contacts[0].friction == 1.0   # MuJoCo's default
    for floor, ball in [("", 'contype="0" conaffinity="0"'), ('contype="0" conaffinity="0"', ""),
                        ('contype="2" conaffinity="2"', "")]:
        m = parse_mjcf(xml.format(floor=floor, ball=ball))
        assert m.contacts == ()
    # one bit in each direction is enough (MuJoCo: contype1 & conaffinity2 or contype2 & conaffinity1)
    m = parse_mjcf(xml.format(floor='contype="2" conaffinity="0"', ball='contype="0" conaffinity="3"'))
    assert len(m.contacts) == 1 and len(m.planes) == 1
    # <exclude> and <pair>
    ex = xml.format(floor="", ball="").replace("</mujoco>", '<contact><exclude body1="world" body2="b"/></contact></mujoco>')
    assert parse_mjcf(ex).contacts == ()
    pair = xml.format(floor='contype="0" conaffinity="0"', ball="").replace(
        "</mujoco>", '<contact><pair geom1="s" geom2="floor"/></contact></mujoco>')
    assert len(parse_mjcf(pair).contacts) == 1
    # spheres on static bodies never meet a (static) plane
    static = '<mujoco><worldbody><geom type="plane" size="1 1 .1"/><body name="s"><geom size="0.1"/></body>' \
             '<geom size="0.1" pos="0 0 1"/></worldbody></mujoco>'
    m = parse_mjcf(static)
    assert m.contacts == () and m.planes == ()


def test_other_geom_types_are_collision_geometry_not_news():
    """Capsules and boxes that MuJoCo lets touch the floor are collision geometry (the time step
    detects them besides the point contacts: ``point_pairs``): no warning; the sphere is a point
    contact, and its pair with the floor the one pair the points describe."""
    from linkdyn.contact.geom_rows import point_pairs
    from linkdyn.contact.rows import point_plane_pairs
    xml = """<mujoco><worldbody><geom name="floor" type="plane" size="1 1 .1"/>
      <body name="b" pos="0 0 1"><freejoint/><geom name="leg" type="capsule" size="0.05 0.2"/>
        <geom name="arm" type="capsule" size="0.05 0.2" pos="0.3 0 0"/><geom type="box" size=".1 .1 .1"/>
        <geom name="foot" size="0.05" pos="0 0 -0.25"/>
        <geom type="box" size=".1 .1 .1" contype="0" conaffinity="0"/>
        <geom type="cylinder" size=".1 .1" contype="0" conaffinity="0"/></body></worldbody></mujoco>"""
    with warnings.catch_warnings():
        warnings.simplefilter("error", MJCFWarning)
        m = parse_mjcf(xml)
    assert [c.name for c in m.contacts] == ["foot"]
    names = ["/".join(sorted((m.geom_names[a], m.geom_names[b]))) for a, b in np.asarray(m.geom_pairs)]
    covered = point_pairs(m, point_plane_pairs(m))
    assert sorted(n for n, c in zip(names, covered) if c) == ["floor/foot"]
    assert {"floor/leg", "arm/floor"} <= {n for n, c in zip(names, covered) if not c}


def test_no_plane_no_warning_about_left_out_geoms():
    # without a plane there is nothing to touch: a robot's capsules and sphere-sphere
    # self-collisions are not news
    xml = """<mujoco><worldbody><body name="a"><freejoint/><geom size="0.1"/><geom type="capsule" size=".05 .2"/></body>
      <body name="b" pos="1 0 0"><freejoint/><geom size="0.1"/></body></worldbody></mujoco>"""
    with warnings.catch_warnings():
        warnings.simplefilter("error", MJCFWarning)
        m = parse_mjcf(xml)
    assert m.contacts == () and m.planes == ()     # spheres are used only where a plane is


def test_friction_filters_and_condim_differences_are_reported():
    base = """<mujoco><worldbody><geom name="floor" type="plane" size="1 1 .1" {floor}/>
      <geom name="wall" type="plane" size="1 1 .1" zaxis="1 0 0" pos="-1 0 0" contype="2" conaffinity="2"/>
      <body name="b" pos="0 0 1"><freejoint/><geom name="s" size="0.05" {ball}/>
      <geom name="t" size="0.05" pos="0.2 0 0" contype="3" conaffinity="3"/></body></worldbody></mujoco>"""
    # s touches the floor only, t both planes; linkdyn lets s touch the wall too
    with pytest.warns(MJCFWarning, match=r"keep 1 of these sphere-plane pairs apart: 's'/'wall'"):
        m = parse_mjcf(base.format(floor="", ball=""))
    assert len(m.contacts) == 2 and len(m.planes) == 2
    # frictions: MuJoCo takes the larger, linkdyn the geometric mean
    with pytest.warns(MJCFWarning, match=r"friction of 1 sphere-plane pair differs.*'s'/'floor' \(0.5 instead of 1\)"):
        parse_mjcf(base.format(floor='friction="1"', ball='friction="0.25"').replace(' contype="2" conaffinity="2"', ' contype="0" conaffinity="0"')
                   .replace(' contype="3" conaffinity="3"', ' contype="0" conaffinity="0"'))
    # condim 1 on both: frictionless in both; condim 4: torsional friction not modelled
    one = base.format(floor='condim="1"', ball='condim="1"').replace('contype="3" conaffinity="3"', 'contype="0" conaffinity="0"') \
        .replace(' contype="2" conaffinity="2"', ' contype="0" conaffinity="0"')
    with warnings.catch_warnings():
        warnings.simplefilter("error", MJCFWarning)
        m = parse_mjcf(one)
    assert m.contacts[0].friction == 0.0 and m.planes[0].friction == 0.0
    with pytest.warns(MJCFWarning, match="torsional and rolling friction"):
        parse_mjcf(base.format(floor='condim="4"', ball="").replace(' contype="2" conaffinity="2"', ' contype="0" conaffinity="0"'))


@pytest.mark.parametrize("xml, match", [
    ('<body name="b"><joint/><geom type="plane" size="1 1 .1"/></body>', "a plane is allowed only in static bodies"),
    ('<geom type="plane" size="1 1 .1"/><body name="b"><joint/><geom size="0.1" fromto="0 0 0 1 0 0"/></body>',
     "fromto cannot be used with a sphere"),
    ('<geom type="plane" size="1 1 .1"/><body name="b"><joint/><geom size="0" mass="1"/></body>',
     "sphere needs a positive radius"),
    ('<geom type="plane" size="1 1 .1" condim="2"/><body name="b"><joint/><geom size="0.1"/></body>',
     "expected 1, 3, 4 or 6"),
])
def test_bad_contact_geometry_raises(xml, match):
    with pytest.raises(MJCFError, match=match):
        parse_mjcf(f"<mujoco><compiler inertiafromgeom='false'/><worldbody>{xml}</worldbody></mujoco>")
    if "plane is allowed" not in match:
        parse_mjcf(f"<mujoco><compiler inertiafromgeom='false'/><worldbody>{xml}</worldbody></mujoco>", contacts=False)


def test_pairs_distances_points_and_friction_against_mujoco():
    """Put the scene in a pose where several spheres sink into the planes and compare every
    touching pair with MuJoCo's collision detection: which pairs, the signed distance, the
    contact point (MuJoCo's is midway into the penetration, ours on the sphere's surface
    nearest the plane) and the friction."""
    mj = mujoco()
    xml = SCENE.replace('<geom name="ghost"', '<geom name="ghost2" type="plane" size="1 1 .1" pos="0 0 -5" contype="4" '
                        'conaffinity="4"/><geom name="ghost"')
    mm = mj.MjModel.from_xml_string(xml)
    dd = mj.MjData(mm)
    m = parse_mjcf(xml)
    cat = UnitCatalog(m, limits=False)
    rng = np.random.default_rng(0)
    checked = 0
    for trial in range(20):
        q = ld.neutral(m)
        from scipy.spatial.transform import Rotation
        R = Rotation.from_rotvec(rng.normal(scale=0.3, size=3)).as_matrix()
        q[:3] = [rng.uniform(-0.2, 1.2), rng.uniform(-0.1, 0.1), rng.uniform(0.0, 0.5)]
        q[3:7] = quat_xyzw(R)
        q[7] = rng.uniform(-1.5, 1.5)
        dd.qpos[:] = q_to_qpos(m, q)
        mj.mj_forward(mm, dd)
        mine = {}
        u = cat.units(q)
        for k, name in enumerate(u.name):
            if u.gap[k] < 0:
                mine[name] = (u.gap[k], u.point[k], u.mu[k])
        theirs = {}
        for i in range(dd.ncon):
            c = dd.contact[i]
            g1, g2 = mm.geom(c.geom1).name, mm.geom(c.geom2).name
            if c.dist >= 0:
                continue
            sph, pl = (g1, g2) if mm.geom_type[c.geom1] == mj.mjtGeom.mjGEOM_SPHERE else (g2, g1)
            sph = sph or "box_contact0"
            theirs[f"{sph}/{pl}"] = (c.dist, c.pos.copy(), c.friction[0], c.frame[:3].copy())
        assert sorted(mine) == sorted(theirs), trial
        for key, (gap, pt, mu) in mine.items():
            dist, pos, fr, normal = theirs[key]
            assert gap == pytest.approx(dist, abs=1e-9)
            assert pt - 0.5 * gap * normal == pytest.approx(pos, abs=1e-9)
            assert mu == pytest.approx(fr, abs=1e-12)
            checked += 1
    assert checked > 20
