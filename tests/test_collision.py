"""Collision geometry (ModelBuilder.add_geom) and detection (linkdyn.contact.collide), checked
against MuJoCo's own collision detector on the same scenes: the same MJCF scene for MuJoCo and
ModelBuilder scene for linkdyn, free bodies at seeded random poses (MuJoCo's free-joint
quaternion is [w, x, y, z], ours [x, y, z, w]), ``mujoco.mj_forward`` and ``data.contact``.

What is compared, per pair type:

* smooth pairs (a plane with a sphere, capsule, ellipsoid, cylinder or box; sphere-sphere,
  sphere-capsule, capsule-capsule, sphere-cylinder, sphere-box): the whole contact set, one
  contact to one, distance, position and normal to 1e-9;
* box-box: the minimum distance to 1e-6 and every point consistent with the two surfaces (its
  surface points ``pos -+ dist/2 normal`` lie on geom 1 and geom 2 to 1e-9); MuJoCo may
  order or count the manifold's points differently (tie-breaking between face axes), so the
  point sets are compared in number and place only where MuJoCo's algorithm is the one we
  follow (it is, in the installed version: see ``test_box_box_manifold_as_mujoco``);
* capsule-box: MuJoCo's second point is a heuristic we do not copy (we add the far end of the
  segment over the contact face); while the segment is outside the box the closest distance
  and its normal agree to 1e-9; when it crosses the box the depth is not unique and MuJoCo
  takes a point of the segment we do not: ours is the deepest point of the segment, never
  shallower than MuJoCo's.  Every point is consistent with the surfaces.
"""
import pickle
import warnings
import zlib

import mujoco
import numpy as np
import pytest

import linkdyn as ld
from linkdyn import spatial as sp
from linkdyn.contact.collision._pipeline import MAX_CONTACTS, narrow

TOL = 1e-9


# ----------------------------------------------------------------------------------------
# scenes: one MJCF string for MuJoCo and one ModelBuilder model, geoms in the same order
def wxyz(R):
    x = sp.matrix_to_quat(R)
    return np.array([x[3], x[0], x[1], x[2]])


def random_R(rng):
    q = rng.normal(size=4)
    return sp.quat_to_matrix(q / np.linalg.norm(q))


def _f(v):
    return " ".join(repr(float(x)) for x in v)


SIZES = {"sphere": lambda r: [r.uniform(0.05, 0.3)],
         "capsule": lambda r: [r.uniform(0.05, 0.2), r.uniform(0.05, 0.4)],
         "cylinder": lambda r: [r.uniform(0.05, 0.3), r.uniform(0.05, 0.4)],
         "box": lambda r: list(r.uniform(0.05, 0.4, 3)),
         "ellipsoid": lambda r: list(r.uniform(0.05, 0.4, 3)),
         "plane": lambda r: []}


def pair_scene(s1, s2, rng):
    """Geom 0: s1 on the world (a tilted plane) or on free body b0; geom 1: s2 on free body b1;
    each geom at a random placement in its body."""
    b = ld.ModelBuilder("pair")
    xml = ['<mujoco><option><flag gravity="disable"/></option><worldbody>']
    bodies = []
    for i, shape in enumerate((s1, s2)):
        size = SIZES[shape](rng)
        if shape == "plane":
            R, p = sp.roty(0.3 * rng.normal()) @ sp.rotx(0.3 * rng.normal()), 0.1 * rng.normal(size=3)
            xml.append(f'<geom type="plane" size="0 0 1" pos="{_f(p)}" quat="{_f(wxyz(R))}"/>')
            b.add_geom("world", "plane", (), placement=(R, p))
        else:
            R, p = random_R(rng), 0.05 * rng.normal(size=3)
            bodies.append(f'<body name="b{i}"><freejoint/><geom type="{shape}" size="{_f(size)}" '
                          f'pos="{_f(p)}" quat="{_f(wxyz(R))}"/></body>')
            b.add_body(f"b{i}", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
            b.add_geom(f"b{i}", shape, size, placement=(R, p))
    xml += bodies + ["</worldbody></mujoco>"]
    mjm = mujoco.MjModel.from_xml_string("\n".join(xml))
    return b.build(), mjm, mujoco.MjData(mjm)


def random_poses(model, mjd, rng, near=0.6):
    """Free bodies at random orientations, the second within ``near`` of the first (so that
    about half of the cases touch); a body alone above a plane at a height in [-0.1, 0.7]."""
    q = ld.neutral(model)
    nfree = model.nq // 7
    p0 = np.array([0.0, 0.0, rng.uniform(-0.1, 0.7)]) if nfree == 1 else 0.3 * rng.normal(size=3)
    for k in range(nfree):
        R = random_R(rng)
        p = p0 if k == 0 else p0 + rng.uniform(0.0, near) * (lambda d: d / np.linalg.norm(d))(rng.normal(size=3))
        q[7 * k:7 * k + 3], q[7 * k + 3:7 * k + 7] = p, sp.matrix_to_quat(R)
        mjd.qpos[7 * k:7 * k + 3], mjd.qpos[7 * k + 3:7 * k + 7] = p, wxyz(R)
    return q


def canonical(g1, g2, dist, pos, normal):
    """Contacts as rows (g1 < g2, normal from g1 to g2): [g1, g2, dist, pos, normal]."""
    rows = []
    for a, b, d, p, n in zip(g1, g2, dist, pos, normal):
        n = np.asarray(n, dtype=float)
        if a > b:
            a, b, n = b, a, -n
        rows.append(np.concatenate([[a, b, d], p, n]))
    return np.array(rows).reshape(-1, 9)


def mujoco_contacts(mjm, mjd):
    mujoco.mj_forward(mjm, mjd)
    c = mjd.contact[:mjd.ncon]
    return canonical([x.geom1 for x in c], [x.geom2 for x in c], [x.dist for x in c], [x.pos for x in c],
                     [x.frame[:3] for x in c])


def our_contacts(model, q, margin=0.0):
    r = ld.contact.collide(model, q, margin)
    return canonical(r.geom1, r.geom2, r.dist, r.pos, r.normal)


def match(a, b):
    """Largest difference between two contact sets matched one to one by position (greedy)."""
    assert len(a) == len(b), f"{len(a)} contacts against MuJoCo's {len(b)}"
    err, left = 0.0, list(range(len(b)))
    for row in a:
        k = min(left, key=lambda j: np.abs(b[j, 3:6] - row[3:6]).max())
        left.remove(k)
        err = max(err, np.abs(b[k] - row).max())
    return err


# signed distance functions of the geoms, in numpy (a surface point has sdf 0)
def sdf(model, q, g, x):
    kin = ld.forward_kinematics(model, q)
    b = model.geom_body[g]
    R = kin.R[b] @ model.geom_R[g]
    p = kin.p[b] + kin.R[b] @ model.geom_pos[g]
    y = R.T @ (x - p)
    s = model.geom_size[g]
    t = ld.model.geometry.SHAPE_NAMES[int(model.geom_type[g])]
    if t == "plane":
        return y[2]
    if t == "sphere":
        return np.linalg.norm(y) - s[0]
    if t == "capsule":
        return np.linalg.norm(y - [0, 0, np.clip(y[2], -s[1], s[1])]) - s[0]
    if t == "box":
        d = np.abs(y) - s
        return np.linalg.norm(np.maximum(d, 0)) + min(d.max(), 0.0)
    raise NotImplementedError(t)


def assert_consistent(model, q, rows, tol=TOL):
    """Each contact's surface points pos -+ dist/2 normal lie on geom 1 and geom 2; the normal
    is a unit vector.  A capsule's contact is a sphere's on its segment (MuJoCo's too), whose
    point may lie inside the capsule when the normal is not square to the axis: on or inside."""
    for row in rows:
        g1, g2, d, p, n = int(row[0]), int(row[1]), row[2], row[3:6], row[6:9]
        assert abs(np.linalg.norm(n) - 1) < tol
        for g, x in ((g1, p - 0.5 * d * n), (g2, p + 0.5 * d * n)):
            f = sdf(model, q, g, x)
            if model.geom_type[g] == ld.model.geometry.CAPSULE:
                assert f < tol, f"geom {g}'s point is outside the capsule"
            else:
                assert abs(f) < tol, f"geom {g}'s point is off its surface"


def cases(s1, s2, nscene=10, nposes=40, seed=0):
    """nscene random scenes (sizes, placements) of the pair, nposes random poses each."""
    rng = np.random.default_rng([seed, zlib.crc32(f"{s1}-{s2}".encode())])
    for _ in range(nscene):
        model, mjm, mjd = pair_scene(s1, s2, rng)
        for _ in range(nposes):
            q = random_poses(model, mjd, rng)
            yield model, q, our_contacts(model, q), mujoco_contacts(mjm, mjd)


SMOOTH = [("plane", "sphere"), ("plane", "capsule"), ("plane", "ellipsoid"), ("plane", "cylinder"),
          ("plane", "box"), ("sphere", "sphere"), ("sphere", "capsule"), ("capsule", "capsule"),
          ("sphere", "cylinder"), ("sphere", "box")]


# ----------------------------------------------------------------------------------------
# against MuJoCo
@pytest.mark.parametrize("s1,s2", SMOOTH)
def test_pair_as_mujoco(s1, s2):
    """400 random poses per pair: the same contacts as MuJoCo, each to 1e-9; both touching and
    separated cases occur (at least 100 touching, 60 apart)."""
    touching = worst = 0
    for model, q, ours, theirs in cases(s1, s2):
        worst = max(worst, match(ours, theirs))
        touching += len(ours) > 0
    assert worst < TOL, worst
    assert touching >= 100 and 400 - touching >= 60, touching


def test_box_box_against_mujoco():
    """Box-box: the minimum distance agrees with MuJoCo's to 1e-6 and its normal to 1e-6 where
    the best axis is unique, and every point of the manifold lies on both boxes."""
    touching = 0
    for model, q, ours, theirs in cases("box", "box"):
        assert (len(ours) > 0) == (len(theirs) > 0)
        if len(ours):
            touching += 1
            assert abs(ours[:, 2].min() - theirs[:, 2].min()) < 1e-6
            assert_consistent(model, q, ours)
    assert touching >= 100


def test_box_box_manifold_as_mujoco():
    """The installed MuJoCo's box-box is the same separating-axis test and face clipping: the
    whole manifold (number, positions, distances, normals) agrees, to 1e-9."""
    worst = max(match(ours, theirs) for _, _, ours, theirs in cases("box", "box", seed=1))
    assert worst < TOL


def test_capsule_box_against_mujoco():
    """Capsule-box: with the segment outside the box (dist > -radius) the deepest contact and
    its normal agree with MuJoCo's to 1e-9; with the segment crossing the box ours is the
    deepest point of the segment, at least as deep as MuJoCo's; every point is on both surfaces."""
    shallow = deep = 0
    for model, q, ours, theirs in cases("capsule", "box"):
        assert (len(ours) > 0) == (len(theirs) > 0)
        if not len(ours):
            continue
        assert_consistent(model, q, ours)
        a, b = ours[np.argmin(ours[:, 2])], theirs[np.argmin(theirs[:, 2])]
        if a[2] > -model.geom_size[0, 0]:
            shallow += 1
            assert abs(a[2] - b[2]) < TOL and np.abs(a[6:] - b[6:]).max() < 1e-9
        else:
            deep += 1
            assert a[2] <= b[2] + 1e-12
    assert shallow >= 50 and deep >= 50


@pytest.mark.parametrize("s1,s2", [("plane", "box"), ("sphere", "box"), ("capsule", "capsule"), ("plane", "capsule")])
def test_points_on_surfaces(s1, s2):
    """The conventions, independently of MuJoCo: pos is midway, pos -+ dist/2 normal on the surfaces."""
    for model, q, ours, _ in cases(s1, s2, nscene=3, nposes=30, seed=2):
        assert_consistent(model, q, ours)


def pile(n=20, seed=0):
    """n free bodies (spheres, capsules, boxes in turn) and a floor, as MJCF and as a model."""
    rng = np.random.default_rng(seed)
    b = ld.ModelBuilder("pile")
    xml = ['<mujoco><option><flag gravity="disable"/></option><worldbody><geom type="plane" size="0 0 1"/>']
    b.add_geom("world", "plane", ())
    for i in range(n):
        shape = ("sphere", "capsule", "box")[i % 3]
        size = SIZES[shape](rng)
        xml.append(f'<body name="b{i}"><freejoint/><geom type="{shape}" size="{_f(size)}"/></body>')
        b.add_body(f"b{i}", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
        b.add_geom(f"b{i}", shape, size)
    mjm = mujoco.MjModel.from_xml_string("\n".join(xml + ["</worldbody></mujoco>"]))
    return b.build(), mjm, mujoco.MjData(mjm)


def test_pile_as_mujoco():
    """The broad phase drops nothing: 20 bodies in a 1.2 m cube over a floor, moving a little
    from pose to pose (the sweep order is kept from call to call) and now and then jumping: the
    same touching pairs as MuJoCo, and per pair the same deepest distance (capsule-box: as in
    test_capsule_box_against_mujoco, ours at least as deep).  One exception, MuJoCo's: a
    capsule whose segment passes right through a thin box (dist < -radius) may get no contact
    from MuJoCo's capsule-box; ours has it (checked against the box's distance sampled along
    the segment in ``test_capsule_through_thin_box``)."""
    model, mjm, mjd = pile()
    rng = np.random.default_rng(6)
    x = rng.uniform(-0.6, 0.6, size=(20, 3)) + [0, 0, 0.6]
    quats = rng.normal(size=(20, 4))
    pairs_seen = 0
    for step in range(40):
        x += 0.03 * rng.normal(size=x.shape) if step % 10 else rng.uniform(-0.3, 0.3, size=x.shape)
        quats += 0.1 * rng.normal(size=quats.shape)
        quats /= np.linalg.norm(quats, axis=1)[:, None]
        q = np.concatenate([np.concatenate([x[i], quats[i]]) for i in range(20)])
        for i in range(20):
            mjd.qpos[7 * i:7 * i + 3], mjd.qpos[7 * i + 3:7 * i + 7] = x[i], quats[i][[3, 0, 1, 2]]
        ours, theirs = our_contacts(model, q), mujoco_contacts(mjm, mjd)
        P = {tuple(r[:2].astype(int)) for r in ours}
        T = {tuple(r[:2].astype(int)) for r in theirs}
        assert T <= P
        for a, b in P - T:
            assert {int(model.geom_type[a]), int(model.geom_type[b])} == {ld.model.geometry.CAPSULE, ld.model.geometry.BOX}
            cap = a if model.geom_type[a] == ld.model.geometry.CAPSULE else b
            assert ours[(ours[:, 0] == a) & (ours[:, 1] == b), 2].min() < -model.geom_size[cap, 0]
        for a, b in T:
            d1 = ours[(ours[:, 0] == a) & (ours[:, 1] == b), 2].min()
            d2 = theirs[(theirs[:, 0] == a) & (theirs[:, 1] == b), 2].min()
            kinds = {int(model.geom_type[a]), int(model.geom_type[b])}
            if kinds == {ld.model.geometry.CAPSULE, ld.model.geometry.BOX}:
                assert d1 <= d2 + 1e-12
            else:
                assert abs(d1 - d2) < TOL
        pairs_seen += len(P)
    assert pairs_seen > 200


def test_capsule_through_thin_box():
    """A capsule through a thin plate: the depth is the plate's half-thickness plus the radius,
    where the segment crosses the plate's mid-plane (far from the plate's sides here), exactly;
    and the box's signed distance sampled along the segment (200001 points) agrees."""
    b = ld.ModelBuilder("plate")
    b.add_geom("world", "box", (0.02, 0.5, 0.5), name="plate")
    b.add_body("c", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
    b.add_geom("c", "capsule", (0.05, 0.3), name="cap")
    m = b.build()
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = ld.neutral(m)
        q[:3] = rng.uniform(-0.1, 0.1, 3)
        R = sp.roty(np.pi / 2 + rng.uniform(-0.8, 0.8)) @ sp.rotz(rng.uniform(-0.5, 0.5))
        q[3:7] = sp.matrix_to_quat(R)
        r = ld.contact.collide(m, q)
        t = np.linspace(-0.3, 0.3, 200001)
        y = q[:3] + np.outer(t, R[:, 2])
        d = np.abs(y) - [0.02, 0.5, 0.5]
        sd = np.linalg.norm(np.maximum(d, 0), axis=1) + np.minimum(d.max(axis=1), 0)
        assert len(r) >= 1 and abs(r.dist.min() + 0.07) < 1e-12
        assert r.dist.min() <= sd.min() - 0.05 + 1e-12 and abs(r.dist.min() - (sd.min() - 0.05)) < 1e-5


def test_parallel_capsules_two_points():
    """Two parallel capsules lying side by side touch along a line: two contacts, at the ends
    of the overlap, both at the same depth (MuJoCo's parallel case)."""
    b = ld.ModelBuilder("caps")
    for name in ("a", "b"):
        b.add_body(name, "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
        b.add_geom(name, "capsule", (0.1, 0.3), placement=(sp.roty(np.pi / 2), np.zeros(3)))
    m = b.build()
    q = ld.neutral(m)
    q[7:10] = [0.2, 0.15, 0.0]                    # overlap along x from -0.1 to 0.3, 0.05 deep
    r = ld.contact.collide(m, q)
    assert len(r) == 2
    np.testing.assert_allclose(r.dist, -0.05, atol=1e-12)
    np.testing.assert_allclose(sorted(r.pos[:, 0]), [-0.1, 0.3], atol=1e-12)
    np.testing.assert_allclose(r.normal, [[0, 1, 0]] * 2, atol=1e-12)


# ----------------------------------------------------------------------------------------
# filtering, against MuJoCo's data.ncon on the same scenes
FILTER_XML = """<mujoco><option><flag gravity="disable"/></option><worldbody>
  <geom name="floor" type="plane" size="0 0 1"/>
  <geom name="post" type="box" size="0.1 0.1 0.5" pos="0 0 0.5"/>
  <body name="a" pos="0 0 0.9"><joint type="hinge" axis="0 0 1"/>
    <geom name="ga" type="sphere" size="0.15"/>
    <geom name="ga2" type="sphere" size="0.05" pos="0.37 0 0.08"/>
    <body name="b" pos="0.22 0 0"><joint type="hinge" axis="0 0 1"/>
      <geom name="gb" type="sphere" size="0.1"/>
      <body name="c" pos="0.15 0 0"><joint type="hinge" axis="0 1 0"/>
        <geom name="gc" type="box" size="0.06 0.06 0.06" {c}/></body></body></body>
  <body name="d" pos="0.6 0 0.05"><freejoint/><geom name="gd" type="sphere" size="0.1" {d}/></body>
  <body name="e" pos="0.7 0 0.05"><freejoint/><geom name="ge" type="sphere" size="0.1" {e}/></body>
</worldbody>{exclude}</mujoco>"""


def filter_scene(c="", d="", e="", exclude=()):
    """World: a floor and a post that the arm's first sphere ga touches (world and child:
    included).  ga-gb and gb-gc overlap (parent and child: excluded), ga2-gc overlap
    (grandparent and grandchild: included); d and e rest on the floor and overlap each other.
    Every touching pair makes one contact."""
    bits = {}
    for key, attrs in (("gc", c), ("gd", d), ("ge", e)):
        kw = dict(x.split("=") for x in attrs.split())
        bits[key] = {k: int(v.strip('"')) for k, v in kw.items()}
    xml = FILTER_XML.format(c=c, d=d, e=e, exclude="".join(f'<contact><exclude body1="{a}" body2="{b}"/></contact>'
                                                           for a, b in exclude))
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjd = mujoco.MjData(mjm)
    b = ld.ModelBuilder("filter")
    I = ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01)
    b.add_geom("world", "plane", (), name="floor")
    b.add_geom("world", "box", (0.1, 0.1, 0.5), [0, 0, 0.5], name="post")
    b.add_body("a", "world", ld.Revolute("z"), placement=[0, 0, 0.9], inertia=I)
    b.add_geom("a", "sphere", 0.15, name="ga")
    b.add_geom("a", "sphere", 0.05, [0.37, 0, 0.08], name="ga2")
    b.add_body("b", "a", ld.Revolute("z"), placement=[0.22, 0, 0], inertia=I)
    b.add_geom("b", "sphere", 0.1, name="gb")
    b.add_body("c", "b", ld.Revolute("y"), placement=[0.15, 0, 0], inertia=I)
    b.add_geom("c", "box", (0.06, 0.06, 0.06), name="gc", **bits["gc"])
    b.add_body("d", "world", ld.FreeFlyer(), inertia=I)
    b.add_geom("d", "sphere", 0.1, name="gd", **bits["gd"])
    b.add_body("e", "world", ld.FreeFlyer(), inertia=I)
    b.add_geom("e", "sphere", 0.1, name="ge", **bits["ge"])
    for x, y in exclude:
        b.exclude(x, y)
    m = b.build()
    q = ld.neutral(m)
    q[3:10] = [0.6, 0, 0.05, 0, 0, 0, 1]
    q[10:17] = [0.7, 0, 0.05, 0, 0, 0, 1]
    mujoco.mj_forward(mjm, mjd)
    return m, q, mjm, mjd


def pairs_of(names, rows):
    return sorted({tuple(sorted((names[int(r[0])], names[int(r[1])]))) for r in rows})


@pytest.mark.parametrize("kw", [
    {},                                                                 # the default bits
    dict(c='contype="2" conaffinity="2"'),                              # c touches nothing of type 1
    dict(d='contype="2" conaffinity="1"', e='contype="1" conaffinity="0"'),   # one way is enough
    dict(d='contype="2" conaffinity="0"', e='contype="1" conaffinity="1"'),   # neither way
    dict(exclude=[("d", "e")]),
    dict(exclude=[("world", "a"), ("a", "c")]),
])
def test_filtering_as_mujoco(kw):
    """Parent-child exclusion (a-b, b-c), world-parent inclusion (post-a), grandparent inclusion
    (a-c), contype/conaffinity and excludes: as many contacts as MuJoCo's ``data.ncon``, between
    the same pairs."""
    m, q, mjm, mjd = filter_scene(**kw)
    ours = our_contacts(m, q)
    theirs = mujoco_contacts(mjm, mjd)
    names = [mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, g) for g in range(mjm.ngeom)]
    assert list(m.geom_names) == names
    assert len(ours) == mjd.ncon
    assert pairs_of(names, ours) == pairs_of(names, theirs)
    assert ("ga", "gb") not in pairs_of(names, ours) and ("gb", "gc") not in pairs_of(names, ours)
    assert [int(x) for x in m.geom_pairs[:, 0]] == sorted(int(x) for x in m.geom_pairs[:, 0])
    if not kw:
        assert pairs_of(names, ours) == [("floor", "gd"), ("floor", "ge"), ("ga", "post"), ("ga2", "gc"), ("gd", "ge")]


def test_fixed_joints_merge_geoms():
    """A geom on a body welded by a Fixed joint moves to the merged body with the composed
    placement; the merged bodies' geoms never pair with each other."""
    b = ld.ModelBuilder("weld")
    b.add_body("a", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
    b.add_body("tip", "a", placement=(sp.rotz(0.5), [1.0, 0, 0]))
    b.add_geom("a", "sphere", 0.2, name="s")
    b.add_geom("tip", "box", (0.1, 0.2, 0.3), placement=(sp.rotx(0.3), [0, 0.5, 0]), name="bx")
    b.add_body("w", "world", placement=[0, 0, -1])
    b.add_geom("w", "plane", (), name="floor")
    m = b.build()
    assert m.nbody == 2 and list(m.geom_body) == [1, 1, 0]
    np.testing.assert_allclose(m.geom_pos[1], [1.0, 0, 0] + sp.rotz(0.5) @ [0, 0.5, 0])
    np.testing.assert_allclose(m.geom_R[1], sp.rotz(0.5) @ sp.rotx(0.3))
    np.testing.assert_allclose(m.geom_pos[2], [0, 0, -1])
    assert m.geom_pairs.tolist() == [[0, 2], [1, 2]]


# ----------------------------------------------------------------------------------------
# margins, separation, symmetry
def test_margin_and_separation():
    """Separated geoms make no contact at margin 0; with a margin they do once dist <= margin,
    with the true (positive) distance; every reported distance is <= margin."""
    b = ld.ModelBuilder("two")
    for name in ("a", "b"):
        b.add_body(name, "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
        b.add_geom(name, "sphere", 0.1)
    m = b.build()
    q = ld.neutral(m)
    q[7:10] = [0.3, 0, 0]                             # surfaces 0.1 apart
    assert len(ld.contact.collide(m, q)) == 0
    assert len(ld.contact.collide(m, q, margin=0.05)) == 0
    r = ld.contact.collide(m, q, margin=0.15)
    assert len(r) == 1 and abs(r.dist[0] - 0.1) < 1e-15
    for s1, s2 in SMOOTH + [("box", "box"), ("capsule", "box")]:
        for model, qq, ours, _ in cases(s1, s2, nscene=2, nposes=10, seed=3):
            for margin in (0.0, 0.05):
                rows = our_contacts(model, qq, margin)
                assert np.all(rows[:, 2] <= margin)
            assert len(our_contacts(model, qq, 0.05)) >= len(ours)


@pytest.mark.parametrize("shape", ["sphere", "capsule", "box"])
def test_swapped_order_flips_normal(shape):
    """Two geoms of the same shape added in the other order: geom 1 and geom 2 swap, the normal
    flips, and the contacts are otherwise the same (to 1e-12)."""
    rng = np.random.default_rng(4)
    for _ in range(60):
        sizes = [SIZES[shape](rng) for _ in range(2)]
        models = []
        for order in ((0, 1), (1, 0)):
            b = ld.ModelBuilder("swap")
            for k in order:
                b.add_body(f"b{k}", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
                b.add_geom(f"b{k}", shape, sizes[k], name=f"g{k}")
            models.append(b.build())
        poses = [np.concatenate([rng.normal(size=3) * 0.25, sp.matrix_to_quat(random_R(rng))]) for _ in range(2)]
        r0 = ld.contact.collide(models[0], np.concatenate(poses))
        r1 = ld.contact.collide(models[1], np.concatenate(poses[::-1]))
        assert len(r0) == len(r1)
        if len(r0):
            assert list(r0.geom1) == [0] * len(r0) and list(r1.geom1) == [0] * len(r1)
            a = np.column_stack([r0.dist, r0.pos, r0.normal])
            b_ = np.column_stack([r1.dist, r1.pos, -r1.normal])
            assert match(np.column_stack([np.zeros((len(a), 2)), a]), np.column_stack([np.zeros((len(a), 2)), b_])) < 1e-12


def test_narrow_phase_either_order():
    """The kernels themselves: a box pair called as (1, 2) and (2, 1) gives the same points with
    the normal flipped."""
    rng = np.random.default_rng(5)
    out1, out2, poly = np.zeros((8, 7)), np.zeros((8, 7)), np.zeros((2, 16, 3))
    checked = 0
    for _ in range(300):
        p1, p2 = rng.normal(size=3) * 0.2, rng.normal(size=3) * 0.2
        R1, R2 = random_R(rng), random_R(rng)
        s1, s2 = rng.uniform(0.05, 0.3, 3), rng.uniform(0.05, 0.3, 3)
        nov = np.zeros((0, 3))
        n1 = narrow(6, p1, R1, s1, nov, 6, p2, R2, s2, nov, 0.0, out1, 0, poly)
        n2 = narrow(6, p2, R2, s2, nov, 6, p1, R1, s1, nov, 0.0, out2, 0, poly)
        assert n1 == n2
        if n1:
            checked += 1
            a = out1[:n1].copy()
            b = out2[:n2].copy()
            b[:, 4:] *= -1
            pad = np.zeros((n1, 2))
            assert match(np.column_stack([pad, a]), np.column_stack([pad, b])) < 1e-9
    assert checked > 50


# ----------------------------------------------------------------------------------------
# the model: input checks, pickling, from_model, no geoms, missing pairs
@pytest.mark.parametrize("args,kw,err,text", [
    (("b", "cube", (1, 1, 1)), {}, ValueError, "unknown shape 'cube'"),
    (("b", 3, (1,)), {}, TypeError, "shape name"),
    (("b", "sphere", 0.0), {}, ValueError, "size[0] of a sphere"),
    (("b", "sphere", -1.0), {}, ValueError, "size[0] of a sphere"),
    (("b", "box", (1, 1)), {}, ValueError, "a box takes 3 value(s)"),
    (("b", "capsule", (0.1, np.inf)), {}, ValueError, "size[1] of a capsule"),
    (("b", "sphere", "1"), {}, TypeError, "sphere"),
    (("b", "sphere", True), {}, TypeError, "size[0]"),
    (("b", "plane", (1, 1)), {}, ValueError, "a plane takes no size"),
    (("b", "sphere", 0.1), dict(restitution=2), ValueError, "restitution"),
    (("b", "sphere", 0.1), dict(friction=-1), ValueError, "friction"),
    (("b", "sphere", 0.1), dict(friction="1"), TypeError, "friction"),
    (("b", "sphere", 0.1), dict(contype=1.5), TypeError, "contype"),
    (("b", "sphere", 0.1), dict(conaffinity=True), TypeError, "conaffinity"),
    (("b", "sphere", 0.1), dict(contype=-1), ValueError, "contype"),
    (("b", "sphere", 0.1), dict(condim=2), ValueError, "condim"),
    (("nobody", "sphere", 0.1), {}, ValueError, "unknown body 'nobody'"),
    (("b", "sphere", 0.1, [0, 0]), {}, ValueError, "placement"),
])
def test_bad_geoms_refused(args, kw, err, text):
    b = ld.ModelBuilder()
    b.add_body("b", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
    with pytest.raises(err) as exc:
        b.add_geom(*args, **kw)
    assert text in str(exc.value)


def test_bad_names_and_excludes_refused():
    b = ld.ModelBuilder()
    b.add_body("b", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
    b.add_geom("b", "sphere", 0.1, name="s")
    with pytest.raises(ValueError, match="already exists"):
        b.add_geom("b", "sphere", 0.1, name="s")
    with pytest.raises(ValueError, match="same body"):
        b.exclude("b", "b")
    with pytest.raises(ValueError, match="unknown body"):
        b.exclude("b", "x")


def test_collide_input_checks():
    m, *_ = pair_scene("sphere", "sphere", np.random.default_rng(0))
    q = ld.neutral(m)
    with pytest.raises(ValueError, match="q: expected shape"):
        ld.contact.collide(m, q[:-1])
    bad = q.copy()
    bad[3] = 2.0
    with pytest.raises(ValueError, match="unit norm"):
        ld.contact.collide(m, bad)
    bad[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ld.contact.collide(m, bad)
    with pytest.raises(ValueError, match="one configuration"):
        ld.contact.collide(m, np.stack([q, q]))
    for margin in (-0.1, np.nan, "0", True):
        with pytest.raises(ValueError, match="margin"):
            ld.contact.collide(m, q, margin)


def test_model_round_trips():
    """Pickling and from_model keep the geoms, their pairs and the excludes; a model without
    geoms has ngeom = 0 and no contacts."""
    m, mjm, mjd = pair_scene("capsule", "box", np.random.default_rng(1))
    b = ld.ModelBuilder.from_model(m)
    b.add_body("x", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
    b.add_geom("x", "sphere", 0.1, friction=0.3, restitution=0.5, contype=3, conaffinity=2, condim=4, group=2,
               priority=1)
    b.exclude("b0", "x")
    m2 = b.build()
    for mm in (pickle.loads(pickle.dumps(m2)), ld.ModelBuilder.from_model(m2).build()):
        for k in ("geom_type", "geom_body", "geom_size", "geom_pos", "geom_R", "geom_friction", "geom_restitution",
                  "geom_contype", "geom_conaffinity", "geom_condim", "geom_group", "geom_priority", "geom_pairs",
                  "geom_pair_friction", "geom_exclude", "geom_explicit", "geom_explicit_friction"):
            np.testing.assert_array_equal(getattr(mm, k), getattr(m2, k))
        assert mm.geom_names == m2.geom_names
    assert m2.geom_pairs.tolist() == [[0, 1], [1, 2]]      # b0-x excluded
    q = random_poses(m, mjd, np.random.default_rng(2), near=0.2)
    ld.contact.collide(m, q)
    again = pickle.loads(pickle.dumps(m))                   # the collider's buffers are not pickled
    assert again._collider is None
    np.testing.assert_array_equal(our_contacts(again, q), our_contacts(m, q))
    eb = ld.ModelBuilder("no geoms")
    eb.add_body("a", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0, [0.1, 0, 0], np.eye(3) * 0.01))
    empty = eb.build()
    assert empty.ngeom == 0 and empty.geom_pairs.shape == (0, 2)
    assert len(ld.contact.collide(empty, ld.neutral(empty))) == 0


def test_every_shape_pair_has_a_function():
    """No pair of shapes is left without a collision function (the CollisionWarning is for
    pairs that would have none): a capsule and a cylinder overlapping each other and the floor
    warn nothing, and the capsule-cylinder pair makes contacts (GJK / EPA: tests/test_convex.py)."""
    from linkdyn.model.geometry import SHAPES
    codes = sorted(SHAPES.values())
    assert all((a, b) in MAX_CONTACTS for a in codes for b in codes if a <= b and (a, b) != (0, 0))
    b = ld.ModelBuilder("all_pairs")
    b.add_geom("world", "plane", (), name="floor")
    for name, shape, size in (("c", "capsule", (0.1, 0.2)), ("y", "cylinder", (0.1, 0.2))):
        b.add_body(name, "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
        b.add_geom(name, shape, size, name=name)
    m = b.build()
    q = ld.neutral(m)                                       # both at the origin: everything overlaps
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = ld.contact.collide(m, q)
    assert pairs_of(m.geom_names, our_contacts(m, q)) == [("c", "floor"), ("c", "y"), ("floor", "y")]
    assert len(r) >= 1 + 3 + 1


def test_geared_model_collides_on_its_tree():
    """A geared model (reduced coordinates): the geoms sit on the full tree, q is expanded."""
    b = ld.ModelBuilder("gear")
    I = ld.Inertia(1.0, [0.2, 0, 0], np.eye(3) * 0.01)
    b.add_body("a", "world", ld.Revolute("z"), placement=[0, 0, 0.5], inertia=I, joint_name="ja")
    b.add_body("c", "world", ld.Revolute("z"), placement=[0.8, 0, 0.5], inertia=I, joint_name="jc")
    b.add_geom("a", "capsule", (0.05, 0.3), (sp.roty(np.pi / 2), [0.3, 0, 0]), name="ca")
    b.add_geom("c", "capsule", (0.05, 0.3), (sp.roty(np.pi / 2), [0.3, 0, 0]), name="cc")
    b.add_gear("jc", "ja", ratio=1.0, offset=np.pi)
    m = b.build()
    assert m.nq == 1
    r = ld.contact.collide(m, np.array([0.0]))             # a points to +x, c to -x: they overlap
    assert len(r) == 2 and np.all(r.dist < 0)
    assert len(ld.contact.collide(m, np.array([np.pi / 2]))) == 0


def test_explicit_pairs_as_mujoco():
    """ModelBuilder.add_pair is MuJoCo's <contact><pair>: a parent-child pair and a pair with a
    contype-0 geom are checked all the same, with the pair's own friction (MuJoCo's contact
    friction); without a friction the pair takes the geoms' larger; pickling and from_model keep
    the pairs; refused: one geom twice, an unknown geom, two geoms of one (merged) body."""
    xml = """<mujoco><option><flag gravity="disable"/></option><worldbody>
      <geom name="floor" type="plane" size="0 0 1" contype="0" conaffinity="0"/>
      <body name="a" pos="0 0 0.1"><joint type="hinge" axis="0 0 1"/>
        <geom name="ga" type="sphere" size="0.15" friction="0.3"/>
        <body name="b" pos="0.2 0 0"><joint type="hinge" axis="0 0 1"/>
          <geom name="gb" type="sphere" size="0.1" friction="0.2"/></body></body>
    </worldbody><contact><pair geom1="ga" geom2="gb" friction="0.7"/><pair geom1="floor" geom2="ga"/></contact></mujoco>"""
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjd = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, mjd)
    b = ld.ModelBuilder("pairs")
    I = ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01)
    b.add_geom("world", "plane", (), name="floor", contype=0, conaffinity=0)
    b.add_body("a", "world", ld.Revolute("z"), placement=[0, 0, 0.1], inertia=I)
    b.add_geom("a", "sphere", 0.15, name="ga", friction=0.3)
    b.add_body("b", "a", ld.Revolute("z"), placement=[0.2, 0, 0], inertia=I)
    b.add_geom("b", "sphere", 0.1, name="gb", friction=0.2)
    assert b.build().geom_pairs.shape == (0, 2)                 # the filter alone: no pair
    b.add_pair("ga", "gb", friction=0.7)
    b.add_pair(0, "ga")
    m = b.build()
    assert m.geom_pairs.tolist() == [[0, 1], [1, 2]] and m.geom_pair_friction.tolist() == [-1.0, 0.7]
    q = ld.neutral(m)
    assert match(our_contacts(m, q), mujoco_contacts(mjm, mjd)) < TOL and mjd.ncon == 2
    r = ld.contact.collide(m, q)
    fr = {tuple(sorted(p)): f for p, f in zip(r.names(), r.friction)}
    assert fr == {("ga", "gb"): 0.7, ("floor", "ga"): 1.0}        # the floor's 1 is the larger
    assert sorted(c.friction[0] for c in mjd.contact[:mjd.ncon]) == [0.7, 1.0]   # MuJoCo's pair default is 1
    for mm in (pickle.loads(pickle.dumps(m)), ld.ModelBuilder.from_model(m).build()):
        np.testing.assert_array_equal(mm.geom_pairs, m.geom_pairs)
        np.testing.assert_array_equal(mm.geom_pair_friction, m.geom_pair_friction)
    with pytest.raises(ValueError, match="same geom"):
        b.add_pair("ga", "ga")
    with pytest.raises(ValueError, match="unknown geom"):
        b.add_pair("ga", "nope")
    with pytest.raises(ValueError, match="friction"):
        b.add_pair("ga", "gb", friction=-1)
    b.add_body("tip", "b", placement=[0.1, 0, 0])
    b.add_geom("tip", "sphere", 0.05, name="gt")
    b.add_pair("gb", "gt")
    with pytest.raises(ValueError, match="both geoms are on body 'b'"):
        b.build()


def test_a_pair_within_its_skin_is_not_pruned_by_the_broad_phase():
    """Two spheres 8 cm apart with margins of 5 cm each (a skin of 10 cm, MuJoCo's includemargin):
    the contact is found at margin 0 (the bounding boxes grow by the skin), its gap dist - skin
    is -2 cm; without the margins it is not a contact."""
    for margin, found in ((0.05, True), (0.0, False)):
        b = ld.ModelBuilder("skin", gravity=[0, 0, 0])
        for name, x in (("a", 0.0), ("b", 0.28)):
            b.add_body(name, "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 1e-2))
            b.add_geom(name, "sphere", [0.1], name=name, margin=margin)
        m = b.build()
        q = ld.neutral(m)
        q[7] = 0.28
        c = ld.contact.collide(m, q)
        assert len(c) == int(found)
        if found:
            assert c.dist[0] == pytest.approx(0.08) and c.margin[0] == pytest.approx(0.1)


def test_the_step_pairs_narrow_phase_is_the_full_pipelines_on_those_pairs():
    """``collide_pairs_kernel`` (the time step's detection at the configurations its motion
    reaches: only the step's own pairs, no broad phase) gives, on the pile's 40 poses and with a
    margin, bit for bit the contacts ``collide_kernel`` gives those pairs, in its order: on all the
    pairs that touch, and on every other one of them."""
    from linkdyn.contact.collision import _pipeline, collider
    model, _, _ = pile()
    c = collider(model)
    rng = np.random.default_rng(3)
    x = rng.uniform(-0.6, 0.6, size=(20, 3)) + [0, 0, 0.6]
    quats = rng.normal(size=(20, 4))
    seen = 0
    for step in range(40):
        x += 0.03 * rng.normal(size=x.shape)
        quats += 0.1 * rng.normal(size=quats.shape)
        quats /= np.linalg.norm(quats, axis=1)[:, None]
        q = np.concatenate([np.concatenate([x[i], quats[i]]) for i in range(20)])
        n = c.run(q, 0.02)                                  # the kinematics at q stay in the model's ws
        ci, cf = c.con_i[:n].copy(), c.con_f[:n].copy()
        pairs = np.unique(ci, axis=0)
        for keep in (pairs, pairs[::2]):
            sel = np.array([i for i in range(n) if any((ci[i] == p).all() for p in keep)], dtype=np.int64)
            names = ci[sel][::-1].copy()                    # in any order, each pair named more than once
            names = np.vstack([names, names]) if len(names) else np.zeros((0, 2), np.int64)
            oi, of = np.zeros((c.maxcon, 2), np.int64), np.zeros((c.maxcon, 10))
            k = _pipeline.collide_pairs_kernel(model._mi, model._ws, c.gi, c.gf, c.adj, 0.02, c.cw, names,
                                               len(names), oi, of)
            got = sorted(range(k), key=lambda i: tuple(oi[i]))
            want = sorted(sel.tolist(), key=lambda i: tuple(ci[i]))
            assert k == len(sel)
            assert (oi[got] == ci[want]).all() and (of[got] == cf[want]).all()
            seen += k
    assert seen > 300
