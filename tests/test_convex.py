"""The general convex pairs (GJK / EPA, ``linkdyn.contact.collision._convex``) and convex mesh
geoms, checked against MuJoCo's own collision detector on the same scenes (the helpers of
test_collision.py: the same MJCF scene for MuJoCo and ModelBuilder scene for linkdyn, free
bodies at seeded random poses).

MuJoCo is run in its one-contact mode (``multiccd`` disabled: MuJoCo 4.0 enables it by default
and then clips faces, with a face's normal, for up to 4 or 5 points on capsule, cylinder, box
and mesh pairs) with ``ccd_tolerance`` 1e-12, and with a margin on every geom (0.15 + 0.15 m),
so that separated pairs are reported and compared too.

Tolerances, and why:

* ``dist`` to 1e-6 m.  Separated pairs come from GJK, penetrating ones from EPA; on the
  flat-sided pairs (box, cylinder cap, mesh) both converge to their 1e-10 m stopping tolerance,
  but on a deep penetration of two curved surfaces (an ellipsoid half a metre into a sphere)
  EPA's polytope approaches the smooth boundary slowly: we and MuJoCo agree to ~3e-8 there.
* the normal: not compared directly.  The depth is a minimum over directions, flat to first
  order at its minimiser, so a 1e-8 error in depth allows ~1e-4 in the normal; and where two
  faces are parallel the position along them is not unique.  Instead each contact is checked
  for what it claims: the two shapes' overlap along our normal (from their support functions,
  h1(n) + h2(-n)) equals our ``dist`` to 1e-6, and it is no larger than the overlap along
  MuJoCo's normal (ours is at least as good a separating direction), to 1e-6.
"""
import warnings

import mujoco
import numpy as np
import pytest

import linkdyn as ld
from linkdyn import spatial as sp
from linkdyn.contact.collision import CollisionWarning, collider
from linkdyn.contact.collision._convex import MAXMANIFOLD, support

from test_collision import SIZES, _f, canonical, random_R, random_poses, wxyz

MARGIN = 0.3            # the pair's margin: 0.15 on each geom in MuJoCo (it adds them)
DIST_TOL = 1e-6

CONVEX_PAIRS = [("sphere", "ellipsoid"), ("capsule", "ellipsoid"), ("ellipsoid", "ellipsoid"),
                ("ellipsoid", "cylinder"), ("ellipsoid", "box"), ("capsule", "cylinder"),
                ("cylinder", "cylinder"), ("cylinder", "box"), ("sphere", "mesh"), ("capsule", "mesh"),
                ("ellipsoid", "mesh"), ("cylinder", "mesh"), ("box", "mesh"), ("mesh", "mesh")]


def random_mesh(rng, n=None):
    """A random convex-ish point cloud: points on a randomly scaled sphere, all on the hull."""
    n = n or int(rng.integers(8, 30))
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    return d * rng.uniform(0.05, 0.3, 3)


def convex_scene(s1, s2, rng):
    """Geom 0 (s1, or a tilted plane on the world) and geom 1 (s2) on free bodies b0, b1, each
    at a random placement in its body, margin 0.15 on each geom in MuJoCo."""
    b = ld.ModelBuilder("convex")
    xml = ['<mujoco><option><flag gravity="disable"/></option>', "<asset>"]
    bodies = []
    for i, shape in enumerate((s1, s2)):
        if shape == "plane":
            R, p = sp.roty(0.3 * rng.normal()) @ sp.rotx(0.3 * rng.normal()), 0.1 * rng.normal(size=3)
            bodies.append(f'<geom type="plane" size="0 0 1" margin="0.15" pos="{_f(p)}" quat="{_f(wxyz(R))}"/>')
            b.add_geom("world", "plane", (), placement=(R, p))
            continue
        R, p = random_R(rng), 0.05 * rng.normal(size=3)
        b.add_body(f"b{i}", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
        if shape == "mesh":
            V = random_mesh(rng)
            xml.append(f'<mesh name="m{i}" vertex="{_f(V.ravel())}"/>')
            geom = f'type="mesh" mesh="m{i}"'
            b.add_geom(f"b{i}", "mesh", (), placement=(R, p), vertices=V)
        else:
            size = SIZES[shape](rng)
            geom = f'type="{shape}" size="{_f(size)}"'
            b.add_geom(f"b{i}", shape, size, placement=(R, p))
        bodies.append(f'<body name="b{i}"><freejoint/><geom {geom} margin="0.15" '
                      f'pos="{_f(p)}" quat="{_f(wxyz(R))}"/></body>')
    xml += ["</asset>", "<worldbody>"] + bodies + ["</worldbody></mujoco>"]
    mjm = mujoco.MjModel.from_xml_string("\n".join(xml))
    mjm.opt.ccd_tolerance, mjm.opt.ccd_iterations = 1e-12, 1000
    mjm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_MULTICCD
    return b.build(), mjm, mujoco.MjData(mjm)


def mj_contacts(mjm, mjd):
    mujoco.mj_forward(mjm, mjd)
    c = mjd.contact[:mjd.ncon]
    return canonical([x.geom1 for x in c], [x.geom2 for x in c], [x.dist for x in c], [x.pos for x in c],
                     [x.frame[:3] for x in c])


def overlap(model, n):
    """h1(n) + h2(-n) - as a signed distance: n.(s2(-n) - s1(n)), geoms 0 and 1 at the
    collider's last poses (the separation of the two shapes' projections on n)."""
    c = collider(model)
    ng = model.ngeom
    xpos, xR = c.cw[:3 * ng].reshape(ng, 3), c.cw[3 * ng:12 * ng].reshape(ng, 3, 3)
    V = [model.geom_verts[model.geom_vert_adr[g]:model.geom_vert_adr[g] + model.geom_vert_num[g]] for g in range(ng)]
    t, s = model.geom_type, model.geom_size
    a = np.array(support(t[0], xpos[0], xR[0], s[0], V[0], n, True))
    b = np.array(support(t[1], xpos[1], xR[1], s[1], V[1], -n, True))
    return float(np.dot(b - a, n))


@pytest.mark.parametrize("s1,s2", CONVEX_PAIRS)
def test_convex_pair_agrees_with_mujoco(s1, s2):
    """Random poses, separated (within the margin) and penetrating: one contact where MuJoCo
    has one, the same distance, and a normal that is a minimum-overlap direction (module
    docstring: tolerances)."""
    rng = np.random.default_rng(CONVEX_PAIRS.index((s1, s2)))
    seen = {True: 0, False: 0}
    for _ in range(60):
        m, mjm, mjd = convex_scene(s1, s2, rng)
        q = random_poses(m, mjd, rng)
        a = mj_contacts(mjm, mjd)
        with warnings.catch_warnings():
            warnings.simplefilter("error", CollisionWarning)
            r = ld.contact.collide(m, q, MARGIN)
        b = canonical(r.geom1, r.geom2, r.dist, r.pos, r.normal)
        assert len(a) <= 1 and (len(a) == 0) == (len(b) == 0)
        if not len(a):
            continue
        seen[bool(a[0, 2] > 0)] += 1
        # several points (two shapes with faces): one normal, the deepest is GJK / EPA's
        assert len(b) == 1 or (len(b) <= MAXMANIFOLD and "ellipsoid" not in (s1, s2) and "sphere" not in (s1, s2))
        assert np.allclose(b[:, 6:], b[0, 6:], atol=0.0) and np.all(b[:, 2] <= MARGIN)
        d = b[:, 2].min()
        assert abs(a[0, 2] - d) <= DIST_TOL, (a[0, 2], d)
        n_ours, n_mj = b[0, 6:], a[0, 6:]
        assert abs(np.linalg.norm(n_ours) - 1.0) < 1e-12
        assert abs(overlap(m, n_ours) - d) <= DIST_TOL
        assert overlap(m, n_ours) >= overlap(m, n_mj) - DIST_TOL
        # separated: the nearest points are unique, pos midway between them
        if a[0, 2] > 0 and len(b) == 1:
            assert np.linalg.norm(a[0, 3:6] - b[0, 3:6]) < 1e-4
    assert seen[True] >= 5 and seen[False] >= 5, seen


def test_plane_mesh_agrees_with_mujoco():
    """A mesh above a tilted plane: the deepest vertex's distance as MuJoCo's deepest contact
    (to 1e-7 m: MuJoCo stores mesh vertices in single precision, 6e-8 relative), and every
    contact a hull vertex at its own height over the plane (MuJoCo reports up to 3, we up to 4)."""
    rng = np.random.default_rng(11)
    hits = 0
    for _ in range(60):
        m, mjm, mjd = convex_scene("plane", "mesh", rng)
        q = random_poses(m, mjd, rng)
        a = mj_contacts(mjm, mjd)
        r = ld.contact.collide(m, q, MARGIN)
        assert (len(a) > 0) == (len(r) > 0)
        if not len(a):
            continue
        hits += 1
        assert abs(a[:, 2].min() - r.dist.min()) < 1e-7     # MuJoCo keeps mesh vertices in float32
        assert 1 <= len(r) <= 4 and np.all(r.dist <= MARGIN)
        n = r.normal[0]
        c = collider(m)
        xp, xR = c.cw[3:6], c.cw[6 + 9:6 + 18].reshape(3, 3)
        world = xp + m.geom_verts @ xR.T
        plane_p = c.cw[:3]
        h = (world - plane_p) @ n
        for d, p in zip(r.dist, r.pos):
            assert np.min(np.linalg.norm(world - (p + 0.5 * d * n), axis=1)) < 1e-12
        assert np.allclose(np.sort(r.dist), np.sort(h)[:len(r)], atol=1e-12)
    assert hits > 20


def test_no_collision_warning_for_the_new_pairs():
    """Every pair of shapes has a collision function now: a scene of all of them, everything
    overlapping, warns nothing and makes a contact for every candidate pair."""
    b = ld.ModelBuilder("all")
    b.add_geom("world", "plane", (), name="floor")
    rng = np.random.default_rng(2)
    shapes = [("s", "sphere", (0.1,)), ("c", "capsule", (0.1, 0.2)), ("e", "ellipsoid", (0.1, 0.15, 0.2)),
              ("y", "cylinder", (0.1, 0.2)), ("b", "box", (0.1, 0.1, 0.1)), ("m", "mesh", ())]
    for name, shape, size in shapes:
        b.add_body(name, "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
        b.add_geom(name, shape, size, name=name, vertices=random_mesh(rng) if shape == "mesh" else None)
    m = b.build()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = ld.contact.collide(m, ld.neutral(m))
    assert {tuple(sorted(p)) for p in r.names()} == {tuple(sorted((m.geom_names[g1], m.geom_names[g2])))
                                                     for g1, g2 in m.geom_pairs}


def test_mesh_geom_is_its_convex_hull():
    """add_geom("mesh") keeps the hull's vertices only (an interior point goes), in the
    model's flat arrays; its bounding radius is size[0]; a flat cloud is refused."""
    b = ld.ModelBuilder("hull")
    b.add_body("a", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
    cube = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * 0.1
    b.add_geom("a", "mesh", (), vertices=np.vstack([cube, [[0.0, 0.01, 0.02]]]), name="m")
    b.add_geom("a", "sphere", (0.1,), name="s")
    m = b.build()
    assert m.geom_vert_num.tolist() == [8, 0] and m.geom_vert_adr.tolist() == [0, -1]
    assert np.array_equal(m.geom_verts, cube)
    assert m.geom_size[0, 0] == pytest.approx(0.1 * np.sqrt(3))
    with pytest.raises(ValueError, match="no 3-d convex hull"):
        b.add_geom("a", "mesh", (), vertices=np.c_[cube[:, :2], np.zeros(8)])
    with pytest.raises(ValueError, match="needs its vertices"):
        b.add_geom("a", "mesh", ())
    with pytest.raises(ValueError, match="vertices are for a mesh only"):
        b.add_geom("a", "box", (0.1, 0.1, 0.1), vertices=cube)
    # a mesh cube collides as the box of the same size (box-plane: 4 corners on the floor)
    b2 = ld.ModelBuilder("cubes")
    for name in ("mesh", "box"):
        b2.add_body(name, "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
    b2.add_geom("mesh", "mesh", (), vertices=cube, contype=1, conaffinity=2)
    b2.add_geom("box", "box", (0.1, 0.1, 0.1), contype=1, conaffinity=2)
    b2.add_geom("world", "plane", (), contype=2, conaffinity=1)
    mm = b2.build()
    q = ld.neutral(mm)
    R = random_R(np.random.default_rng(4))
    for k in range(2):
        q[7 * k:7 * k + 3], q[7 * k + 3:7 * k + 7] = [0.0, 0.0, 0.12], sp.matrix_to_quat(R)
    r = ld.contact.collide(mm, q, 0.05)
    dm, db = np.sort(r.dist[r.geom2 == 0]), np.sort(r.dist[r.geom2 == 1])
    assert len(dm) == len(db) and np.allclose(dm, db, atol=1e-12)


# --- resting under time stepping ------------------------------------------------------------------
def _rest(model, q, until=1.0):
    sim = ld.Simulation(model, q, dt=1e-3, contact_method="timestep")
    sim.run(until=until, progress=False)
    return sim


def test_cylinder_rests_and_rolls_on_a_box():
    """A cylinder lying on its side on a fixed box, dropped 1 mm, then rolling across it: it
    stays on the box, penetrating 1 mm at most at every step (one EPA contact on the line
    of contact)."""
    r, h = 0.05, 0.1
    b = ld.ModelBuilder("cyl_on_box")
    b.add_geom("world", "box", (0.5, 0.5, 0.05), name="table", friction=0.8)
    I = ld.Inertia(1.0, [0, 0, 0], np.diag([(3 * r * r + 4 * h * h) / 12, (3 * r * r + 4 * h * h) / 12, r * r / 2]))
    b.add_body("cyl", "world", ld.FreeFlyer(), inertia=I)
    b.add_geom("cyl", "cylinder", (r, h), name="cyl", friction=0.8)
    m = b.build()
    q = ld.neutral(m)
    q[:3] = [0.0, 0.0, 0.05 + r + 1e-3]
    q[3:7] = sp.matrix_to_quat(sp.rotx(np.pi / 2))            # axis along y: it rolls along x
    sim = ld.Simulation(m, q, np.array([0.3, 0, 0, 0, 0.3 / r, 0]), dt=1e-3, contact_method="timestep")
    rec = sim.run(until=1.0, progress=False)
    x = sim.recording.extremes
    assert x["penetration"] <= 1e-3, x["penetration"]
    z = rec.segments[0].arrays()["q"][:, 2]
    assert np.all(z > 0.05 + r - 1e-3)                         # the centre never sinks into the box
    assert sim.q[0] > 0.15                                     # and it rolled


def test_ellipsoid_rests_on_a_capsule():
    """An ellipsoid dropped onto a fixed horizontal capsule: penetration <= 1 mm at every step,
    and its centre stays above the capsule's top."""
    b = ld.ModelBuilder("ell_on_cap")
    b.add_geom("world", "capsule", (0.05, 0.3), placement=(sp.roty(np.pi / 2), np.zeros(3)), name="bar",
               friction=1.0)
    a, bb, c = 0.08, 0.06, 0.04
    I = ld.Inertia(0.5, [0, 0, 0], np.diag([bb * bb + c * c, a * a + c * c, a * a + bb * bb]) * 0.5 / 5)
    b.add_body("egg", "world", ld.FreeFlyer(), inertia=I)
    b.add_geom("egg", "ellipsoid", (a, bb, c), name="egg", friction=1.0)
    m = b.build()
    q = ld.neutral(m)
    q[2] = 0.05 + c + 2e-3
    sim = _rest(m, q, until=0.5)
    x = sim.recording.extremes
    assert x["penetration"] <= 1e-3, x["penetration"]
    z = sim.recording.segments[0].arrays()["q"][:, 2]
    assert np.all(z > 0.05)


# --- URDF <collision> ---------------------------------------------------------------------------
URDF = """<robot name="r">
  <link name="base"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>
    <collision><origin xyz="0 0 -0.05"/><geometry><box size="1 1 0.1"/></geometry></collision></link>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>
    <collision><geometry><cylinder radius="0.05" length="0.4"/></geometry></collision></link>
  <link name="hand"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>
    <collision><origin xyz="0 0 0.1" rpy="0 0 0.3"/><geometry><mesh filename="cube.obj" scale="0.5 0.5 0.5"/></geometry></collision>
    <collision><origin xyz="0 0 0.2"/><geometry><sphere radius="0.02"/></geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.3"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="arm"/><child link="hand"/><origin xyz="0 0 -0.42"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
</robot>"""


def test_urdf_collision_elements_become_geoms(tmp_path):
    """load_urdf(collision=True): box, cylinder, sphere and a mesh (its file's vertices times
    its scale, as a hull) become geoms on their links; off by default.  The hand's cube hangs
    into the base's slab at q = 0: the pair (not parent and child) touches, at the depth the
    geometry gives."""
    pytest.importorskip("trimesh")
    cube = [(x, y, z) for x in (-0.1, 0.1) for y in (-0.1, 0.1) for z in (-0.1, 0.1)]
    faces = [(1, 2, 4), (1, 4, 3), (5, 7, 8), (5, 8, 6), (1, 5, 6), (1, 6, 2), (3, 4, 8), (3, 8, 7),
             (1, 3, 7), (1, 7, 5), (2, 6, 8), (2, 8, 4)]
    (tmp_path / "cube.obj").write_text("".join(f"v {x} {y} {z}\n" for x, y, z in cube)
                                       + "".join(f"f {a} {b_} {c}\n" for a, b_, c in faces))
    (tmp_path / "r.urdf").write_text(URDF)
    plain = ld.load_urdf(tmp_path / "r.urdf")
    assert plain.ngeom == 0
    m = ld.load_urdf(tmp_path / "r.urdf", collision=True)
    types = {m.geom_names[g]: int(m.geom_type[g]) for g in range(m.ngeom)}
    assert sorted(types.values()) == [2, 5, 6, 7]
    g = int(np.flatnonzero(m.geom_type == 7)[0])
    V = m.geom_verts[m.geom_vert_adr[g]:m.geom_vert_adr[g] + m.geom_vert_num[g]]
    assert np.allclose(np.sort(V, axis=0), np.sort(0.5 * np.array(cube), axis=0))
    assert np.allclose(m.geom_pos[g], [0, 0, 0.1]) and np.allclose(m.geom_R[g], sp.rotz(0.3))
    assert np.allclose(m.geom_size[m.geom_type == 6][0], [0.5, 0.5, 0.05])
    assert np.allclose(m.geom_size[m.geom_type == 5][0, :2], [0.05, 0.2])
    r = ld.contact.collide(m, ld.neutral(m))
    # the cube (half 0.05, turned 0.3 about z) spans z in [0.3 - 0.42 + 0.1 -+ 0.05] = [-0.07, 0.03]
    # in the world, inside the slab z in [-0.1, 0] from its top down to -0.07: lifted 0.07 it
    # is out (the least translation), normal vertical
    names = {tuple(sorted(p)) for p in r.names()}
    box, mesh = m.geom_names[int(np.flatnonzero(m.geom_type == 6)[0])], m.geom_names[g]
    assert names == {tuple(sorted((box, mesh)))}
    assert r.dist.min() == pytest.approx(-0.07, abs=1e-9)
    assert np.allclose(np.abs(r.normal[:, 2]), 1.0, atol=1e-9) and 2 <= len(r) <= MAXMANIFOLD


def test_cylinder_stands_on_its_cap_on_a_box():
    """A cylinder standing on its cap on a fixed box, dropped 1 mm: its cap rests on several
    points (the manifold of the cap's rim inside the box's face), it stays upright and above
    the box, penetrating 1 mm at most at every step."""
    r, h = 0.05, 0.1
    b = ld.ModelBuilder("cyl_on_cap")
    b.add_geom("world", "box", (0.5, 0.5, 0.05), name="table", friction=0.8)
    I = ld.Inertia(1.0, [0, 0, 0], np.diag([(3 * r * r + 4 * h * h) / 12, (3 * r * r + 4 * h * h) / 12, r * r / 2]))
    b.add_body("cyl", "world", ld.FreeFlyer(), inertia=I)
    b.add_geom("cyl", "cylinder", (r, h), name="cyl", friction=0.8)
    m = b.build()
    q = ld.neutral(m)
    q[2] = 0.05 + h + 1e-3
    assert len(ld.contact.collide(m, q, 0.01)) >= 3            # the cap on the face: several points
    sim = _rest(m, q, until=1.0)
    x = sim.recording.extremes
    assert x["penetration"] <= 1e-3, x["penetration"]
    Q = sim.recording.segments[0].arrays()["q"]
    assert np.all(Q[:, 2] > 0.05 + h - 1e-3)
    tilt = [np.arccos(np.clip(sp.quat_to_matrix(qq[3:7])[2, 2], -1, 1)) for qq in Q]
    assert max(tilt) < 1e-3


@pytest.mark.parametrize("s1,s2", [("capsule", "cylinder"), ("cylinder", "cylinder"), ("cylinder", "box"),
                                   ("ellipsoid", "ellipsoid"), ("sphere", "ellipsoid"), ("box", "mesh")])
def test_degenerate_poses(s1, s2):
    """Coincident centres, parallel axes, coaxial shapes (symmetric deep overlaps, where EPA's
    deepest direction is a whole circle and it stops on its vertex budget): always a contact,
    finite, and the reported depth is the shapes' overlap along the reported normal (a
    translation that separates them) to 1e-4 m (coaxial flat caps make GJK's support points
    ambiguous; 4e-5 m is the worst seen in 1500 such poses)."""
    from linkdyn.contact.collision._convex import convex_pair
    from linkdyn.model.geometry import SHAPES, convex_hull
    rng = np.random.default_rng(3)
    out = np.zeros((MAXMANIFOLD, 7))
    for i in range(150):
        geoms = []
        for shape in (s1, s2):
            V, z = np.zeros((0, 3)), np.zeros(3)
            if shape == "mesh":
                V = convex_hull(random_mesh(rng))
                z[0] = np.linalg.norm(V, axis=1).max()
            else:
                k = {"sphere": 1, "capsule": 2, "cylinder": 2, "box": 3, "ellipsoid": 3}[shape]
                z[:k] = rng.uniform(0.05, 0.3, k)
            geoms.append([SHAPES[shape], np.zeros(3), random_R(rng) if i % 3 == 0 else np.eye(3), z, V])
        geoms[1][1] = np.zeros(3) if i % 2 else np.array([0.0, 0.0, rng.uniform(0.0, 0.05)])
        (t1, p1, R1, z1, V1), (t2, p2, R2, z2, V2) = geoms
        m = convex_pair(t1, p1, R1, z1, V1, t2, p2, R2, z2, V2, 0.0, out, 0)
        assert m >= 1 and np.all(np.isfinite(out[:m]))
        n = out[0, 4:7]
        a = np.array(support(t1, p1, R1, z1, V1, n, True))
        b = np.array(support(t2, p2, R2, z2, V2, -n, True))
        assert abs(np.dot(b - a, n) - out[:m, 0].min()) < 1e-4


def test_either_order():
    """GJK / EPA called with the two shapes swapped: the same distance (separated: to twice
    GJK's 1e-10 m stopping tolerance; overlapping: to 1e-7 m, EPA's polytopes differ) and the
    normal reversed, to 1e-3 (the distance is flat to first order in the normal at its
    optimum, so a round shape's normal is known only to about the square root of the distance's
    tolerance, more on deep overlaps)."""
    from linkdyn.contact.collision._convex import convex_convex
    from linkdyn.model.geometry import SHAPES, convex_hull
    rng = np.random.default_rng(8)
    o1, o2 = np.zeros((1, 7)), np.zeros((1, 7))
    for s1, s2 in (("cylinder", "box"), ("ellipsoid", "mesh"), ("capsule", "cylinder"), ("ellipsoid", "ellipsoid")):
        for _ in range(100):
            g = []
            for shape in (s1, s2):
                V, z = np.zeros((0, 3)), np.zeros(3)
                if shape == "mesh":
                    V = convex_hull(random_mesh(rng))
                    z[0] = np.linalg.norm(V, axis=1).max()
                else:
                    k = {"capsule": 2, "cylinder": 2, "box": 3, "ellipsoid": 3}[shape]
                    z[:k] = rng.uniform(0.05, 0.3, k)
                g.append((SHAPES[shape], 0.3 * rng.normal(size=3), random_R(rng), z, V))
            m1 = convex_convex(*g[0], *g[1], 1.0, o1, 0)
            m2 = convex_convex(*g[1], *g[0], 1.0, o2, 0)
            assert m1 == m2
            if m1:
                assert abs(o1[0, 0] - o2[0, 0]) < 2e-10 or (o1[0, 0] < 0 and abs(o1[0, 0] - o2[0, 0]) < 1e-7)
                assert np.abs(o1[0, 4:] + o2[0, 4:]).max() < 1e-3


def test_mjcf_mesh_file_geom_on_a_floor_as_mujoco(tmp_path):
    """An MJCF mesh geom read from an OBJ file (through the loader's confined mesh reader, with
    the asset's scale): it collides with the floor as MuJoCo's plane-mesh does (deepest point
    to 1e-7 m, MuJoCo's vertices being float32), on random poses of its free body."""
    pytest.importorskip("trimesh")
    V = random_mesh(np.random.default_rng(12), 24)
    from scipy.spatial import ConvexHull
    hull = ConvexHull(V)
    faces = [f if np.dot(np.cross(V[f[1]] - V[f[0]], V[f[2]] - V[f[0]]), V[f[0]] - V.mean(0)) > 0 else f[::-1]
             for f in hull.simplices]                   # outward (MuJoCo's inertia reads the faces)
    (tmp_path / "rock.obj").write_text("".join(f"v {float(x)!r} {float(y)!r} {float(z)!r}\n" for x, y, z in V)
                                       + "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in faces))
    xml = """<mujoco><asset><mesh name="rock" file="rock.obj" scale="1.5 1 0.8"/></asset>
      <worldbody><geom name="floor" type="plane" size="0 0 1"/>
      <body name="b" pos="0 0 0.3"><freejoint/><geom name="rock" type="mesh" mesh="rock" pos="0.01 0 0.02"
        euler="10 20 30"/></body></worldbody></mujoco>"""
    (tmp_path / "rock.xml").write_text(xml)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = ld.load_mjcf(tmp_path / "rock.xml")
    assert list(m.geom_type) == [0, 7]
    assert np.allclose(np.sort(m.geom_verts, axis=0), np.sort(convex_hull_of(V * [1.5, 1, 0.8]), axis=0))
    mjm = mujoco.MjModel.from_xml_path(str(tmp_path / "rock.xml"))
    mjd = mujoco.MjData(mjm)
    from linkdyn.model.io.mjcf import qpos_to_q
    rng = np.random.default_rng(1)
    touched = 0
    for _ in range(30):
        qpos = mjm.qpos0.copy()
        qpos[2] = rng.uniform(-0.05, 0.3)
        qpos[3:7] = (lambda x: x / np.linalg.norm(x))(rng.normal(size=4))
        mjd.qpos[:] = qpos
        mujoco.mj_forward(mjm, mjd)
        r = ld.contact.collide(m, qpos_to_q(m, qpos))
        assert (mjd.ncon > 0) == (len(r) > 0)
        if len(r):
            touched += 1
            assert abs(min(c.dist for c in mjd.contact[:mjd.ncon]) - r.dist.min()) < 1e-7
    assert touched > 5


def convex_hull_of(P):
    from linkdyn.model.geometry import convex_hull
    return convex_hull(P)
