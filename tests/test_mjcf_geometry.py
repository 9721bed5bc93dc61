"""MJCF geoms -> the model's collision geometry (ModelBuilder.add_geom), checked against MuJoCo.

* Every model file of dm_control's suite and of gymnasium's MuJoCo environments (where those
  packages are installed; ``LINKDYN_MJCF_SUITES``, folders separated by ``os.pathsep``, adds
  folders of .xml files, e.g. the unpacked wheels): loaded by linkdyn and by MuJoCo, posed at
  random (dropped so that its lowest geom sinks into the floor, or with random joint angles
  alone), ``linkdyn.contact.collide`` against ``mj_forward``'s contacts between the geoms and
  pair types linkdyn implements: the same contacts, distance, point and normal to 1e-9.
* Hand-written files, one feature each: shapes, sizes and frames against MuJoCo's compiled
  model (pos/quat/euler/axisangle/xyaxes/zaxis, <frame>, fromto), default classes and
  childclass, contype/conaffinity, <exclude> (on a welded body too), <pair>, bodies with
  several joints (carrier bodies), priority, the mesh warning and the soft-contact warning.
"""
import importlib.util
import os
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

import linkdyn as ld
from linkdyn.contact.collision._pipeline import MAX_CONTACTS
from linkdyn.model.io.mjcf import MJCFError, MJCFWarning, parse_mjcf, q_to_qpos, qpos_to_q

mujoco = pytest.importorskip("mujoco")

TOL = 1e-9
PRIMITIVE = {0, 2, 3, 4, 5, 6, 7}          # MuJoCo's mjtGeom codes of plane .. box, mesh (linkdyn's too)
#: pairs that go through GJK / EPA (or a mesh's vertices on a plane): compared by their deepest
#: distance to CONVEX_TOL (MuJoCo run with multiccd off and ccd_tolerance 1e-12; its mesh
#: vertices are single precision); see tests/test_convex.py
CONVEX_TOL = 1e-6


def convex_kind(kind):
    return (7 in kind or (4 in kind and kind != (0, 4)) or kind in ((3, 5), (5, 5), (5, 6)))


# ----------------------------------------------------------------------------------------
# the two collision detectors on one state
def included(mjm):
    """MuJoCo's geom ids that linkdyn loads as collision geometry, in linkdyn's order: the
    primitive geoms MuJoCo may collide (contype or conaffinity set, or in a <pair>)."""
    in_pair = set(mjm.pair_geom1) | set(mjm.pair_geom2)
    return [g for g in range(mjm.ngeom) if int(mjm.geom_type[g]) in PRIMITIVE
            and (mjm.geom_contype[g] or mjm.geom_conaffinity[g] or g in in_pair)]


def rows(g1, g2, dist, pos, normal):
    """Contacts as rows [g1, g2, dist, pos, normal], g1 < g2 (the normal from g1 to g2)."""
    out = []
    for a, b, d, p, n in zip(g1, g2, dist, pos, normal):
        n = np.asarray(n, dtype=float)
        if a > b:
            a, b, n = b, a, -n
        out.append(np.concatenate([[a, b, d], p, n]))
    return np.array(out).reshape(-1, 9)


def mujoco_rows(mjm, mjd, ours_of, skipped=None):
    """MuJoCo's contacts between geoms linkdyn has, of pair types linkdyn implements, in
    linkdyn's geom indices (``skipped``, a list: gets the type pairs of the others)."""
    mujoco.mj_forward(mjm, mjd)
    keep = []
    for c in mjd.contact[:mjd.ncon]:
        if c.geom1 not in ours_of or c.geom2 not in ours_of:
            if skipped is not None:
                skipped.append(tuple(sorted((int(mjm.geom_type[c.geom1]), int(mjm.geom_type[c.geom2])))))
            continue
        t = tuple(sorted((int(mjm.geom_type[c.geom1]), int(mjm.geom_type[c.geom2]))))
        if t not in MAX_CONTACTS and skipped is not None:
            skipped.append(t)
        if t in MAX_CONTACTS:
            keep.append((ours_of[c.geom1], ours_of[c.geom2], c.dist, c.pos.copy(), c.frame[:3].copy()))
    return rows(*zip(*keep)) if keep else np.zeros((0, 9))


def our_rows(model, q):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")               # CollisionWarning: pairs without a function yet
        r = ld.contact.collide(model, q)
    types = model.geom_type
    k = [i for i in range(len(r)) if tuple(sorted((int(types[r.geom1[i]]), int(types[r.geom2[i]])))) in MAX_CONTACTS]
    return rows(r.geom1[k], r.geom2[k], r.dist[k], r.pos[k], r.normal[k])


CAPSULE_BOX, BOX_BOX = (3, 6), (6, 6)


def compare(model, a, b):
    """How far linkdyn's contacts ``a`` are from MuJoCo's ``b``: (largest difference over the
    pairs compared point by point, over the box-box pairs' deepest distances, the number of
    contacts compared point by point).  The same geom pairs touch, a contact exactly at the
    surface (|dist| < 1e-12) counting either way.  Per pair, as tests/test_collision.py checks
    the pair types: one contact to one, matched by position, distance, point and normal;
    box-box: the deepest distance (MuJoCo may break ties between face axes differently in its
    manifold); capsule-box: the deepest contact and its normal while the segment is outside
    the box, else ours is at least as deep (MuJoCo's second point, and its depth when the
    segment crosses the box, are its own heuristics; it may even miss a capsule passing right
    through a thin box)."""
    a, b = a[np.abs(a[:, 2]) >= 1e-12], b[np.abs(b[:, 2]) >= 1e-12]
    pairs_a = {tuple(r) for r in a[:, :2].astype(int)}
    pairs_b = {tuple(r) for r in b[:, :2].astype(int)}
    kind = {p: tuple(sorted(int(model.geom_type[g]) for g in p)) for p in pairs_a | pairs_b}
    for p in pairs_a - pairs_b:                                # MuJoCo's capsule through a thin box
        cap = p[0] if model.geom_type[p[0]] == 3 else p[1]
        assert kind[p] == CAPSULE_BOX and a[(a[:, :2] == p).all(1), 2].min() < -model.geom_size[cap, 0], p
    assert pairs_b <= pairs_a, sorted(pairs_b - pairs_a)
    exact = boxes = 0.0
    n = 0
    for p in sorted(pairs_b):
        A, B = a[(a[:, :2] == p).all(1)], b[(b[:, :2] == p).all(1)]
        if kind[p] == BOX_BOX or convex_kind(kind[p]):
            boxes = max(boxes, abs(A[:, 2].min() - B[:, 2].min()))
        elif kind[p] == CAPSULE_BOX:
            x, y = A[np.argmin(A[:, 2])], B[np.argmin(B[:, 2])]
            cap = p[0] if model.geom_type[p[0]] == 3 else p[1]
            if x[2] > -model.geom_size[cap, 0]:
                exact = max(exact, abs(x[2] - y[2]), np.abs(x[6:] - y[6:]).max())
                n += 1
            else:
                assert x[2] <= y[2] + 1e-12
        else:
            assert len(A) == len(B), (p, A, B)
            left = list(range(len(B)))
            for row in A:
                k = min(left, key=lambda j: np.abs(B[j, 3:6] - row[3:6]).max())
                left.remove(k)
                exact = max(exact, np.abs(B[k, 2:] - row[2:]).max())
                n += 1
    return exact, boxes, n


def lowest(mjm, mjd, geoms):
    """The lowest world z of the moving geoms among ``geoms`` (exact for each primitive)."""
    z = np.inf
    for g in geoms:
        t, s = int(mjm.geom_type[g]), mjm.geom_size[g]
        if t == 0 or mjm.body_weldid[mjm.geom_bodyid[g]] == 0:
            continue
        R = mjd.geom_xmat[g].reshape(3, 3)
        a = np.abs(R[2])
        w = {2: s[0], 3: s[1] * a[2] + s[0], 5: s[1] * a[2] + s[0] * np.sqrt(max(1 - a[2] ** 2, 0.0)),
             4: np.sqrt(((a * s) ** 2).sum()), 6: (a * s).sum(), 7: mjm.geom_rbound[g]}[t]
        z = min(z, mjd.geom_xpos[g, 2] - w)
    return z


def random_states(model, mjm, rng, n):
    """n states (MuJoCo qpos, linkdyn q): random joint values (within limited ranges, +-pi or
    +-0.5 m otherwise; free bodies at random orientations), then, every other state, the model
    lowered (its free joint or root slide along z) until its lowest geom is 0 to 5 cm under
    z = 0, where the floors are.  The qpos goes through linkdyn's q and back, so that gear
    couplings (tendon equalities) hold in MuJoCo's state too."""
    mjd = mujoco.MjData(mjm)
    geoms = included(mjm)
    root = None
    for j in range(mjm.njnt):
        if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE or (
                mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_SLIDE and mjm.jnt_bodyid[j] == 1
                and abs(mjm.jnt_axis[j] @ [0, 0, 1]) > 0.99):
            root = j
            break
    for k in range(n):
        qpos = mjm.qpos0.copy()
        for j in range(mjm.njnt):
            a, t = mjm.jnt_qposadr[j], mjm.jnt_type[j]
            if t == mujoco.mjtJoint.mjJNT_FREE:
                qpos[a + 3:a + 7] = (lambda x: x / np.linalg.norm(x))(rng.normal(size=4) + [3, 0, 0, 0])
            elif t == mujoco.mjtJoint.mjJNT_BALL:
                qpos[a:a + 4] = (lambda x: x / np.linalg.norm(x))(rng.normal(size=4) + [2, 0, 0, 0])
            elif mjm.jnt_limited[j]:
                qpos[a] = rng.uniform(*mjm.jnt_range[j])
            elif j != root:
                qpos[a] = rng.uniform(-np.pi, np.pi) if t == mujoco.mjtJoint.mjJNT_HINGE else rng.uniform(-0.5, 0.5)
        qpos = q_to_qpos(model, qpos_to_q(model, qpos))
        if root is not None and k % 2 == 0:
            mjd.qpos[:] = qpos
            mujoco.mj_kinematics(mjm, mjd)
            a = mjm.jnt_qposadr[root] + (2 if mjm.jnt_type[root] == mujoco.mjtJoint.mjJNT_FREE else 0)
            sign = 1.0 if mjm.jnt_type[root] == mujoco.mjtJoint.mjJNT_FREE else float(np.sign(mjm.jnt_axis[root, 2]))
            qpos[a] -= sign * (lowest(mjm, mjd, geoms) + rng.uniform(0.0, 0.05))
        yield qpos, qpos_to_q(model, qpos)


# ----------------------------------------------------------------------------------------
# the model files shipped with dm_control and gymnasium
def suite_files():
    folders = []
    for pkg, sub in (("dm_control", "suite"), ("gymnasium", "envs/mujoco/assets")):
        spec = importlib.util.find_spec(pkg)
        if spec is not None and spec.submodule_search_locations:
            folders.append(Path(list(spec.submodule_search_locations)[0]) / sub)
    for root in filter(None, os.environ.get("LINKDYN_MJCF_SUITES", "").split(os.pathsep)):
        root = Path(root)
        folders += [root / "dm_control" / "suite", root / "gymnasium" / "envs" / "mujoco" / "assets"]
        folders += [root] if not any(f.is_dir() for f in folders[-2:]) else []
    files = sorted({f for d in folders if d.is_dir() for f in d.glob("*.xml")})
    return [pytest.param(f, id=f"{f.parent.parent.name if f.parent.name == 'suite' else 'gym'}/{f.stem}")
            for f in files]


FILES = suite_files()


@pytest.mark.skipif(not FILES, reason="neither dm_control nor gymnasium is installed (LINKDYN_MJCF_SUITES unset)")
@pytest.mark.parametrize("path", FILES)
def test_model_files_collide_as_mujoco(path):
    """Each file: linkdyn's geoms are MuJoCo's collidable primitive geoms (names, types,
    sizes); on 40 random states the contacts between them agree with MuJoCo's, pair by pair,
    to 1e-9 (distance, point, normal; see ``compare``), the geoms' margins included (contacts
    within the pair's skin, MuJoCo's includemargin).  MuJoCo's gaps and pair margins are set to
    zero (linkdyn has neither), and its ``geom_sameframe`` shortcut is switched off (it
    puts a geom that is within a tolerance of its body's inertial frame at that frame: 2e-6 rad
    away from the geom's own orientation in dog.xml).  A file that cannot be compared is skipped with the reason."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = ld.load_mjcf(path)
    except (MJCFError, NotImplementedError) as exc:
        pytest.skip(f"linkdyn does not load {path.name}: {exc}")
    mjm = mujoco.MjModel.from_xml_path(str(path))
    mjm.geom_gap[:] = 0.0               # (the geoms' margins are kept: linkdyn reads them as their skin)
    mjm.pair_margin[:] = 0.0
    mjm.pair_gap[:] = 0.0
    mjm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_MULTICCD     # one GJK / EPA contact (test_convex.py)
    mjm.opt.ccd_tolerance, mjm.opt.ccd_iterations = 1e-12, 1000
    mjm.geom_sameframe[:] = 0       # MuJoCo's shortcut: a geom within its tolerance of the body's
    #                                 inertial frame takes that frame (dog.xml: 2e-6 rad off its quat)
    if mjm.opt.disableflags & (mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT):
        assert model.ngeom == 0
        pytest.skip(f"{path.name}: contacts are disabled (<option><flag contact|constraint='disable'>): "
                    "MuJoCo collides nothing, linkdyn loads no collision geometry")
    mine = included(mjm)
    assert model.ngeom == len(mine)
    if not model.ngeom:
        pytest.skip(f"{path.name}: no geom MuJoCo collides is a primitive")
    for g, k in enumerate(mine):
        name = mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, k)
        assert name is None or model.geom_names[g] == name
        assert model.geom_type[g] == mjm.geom_type[k]
        n = {0: 0, 2: 1, 3: 2, 5: 2, 4: 3, 6: 3, 7: 0}[int(mjm.geom_type[k])]
        np.testing.assert_allclose(model.geom_size[g, :n], mjm.geom_size[k, :n], rtol=1e-12)
    ours_of = {k: g for g, k in enumerate(mine)}
    mjd = mujoco.MjData(mjm)
    rng = np.random.default_rng(zlib.crc32(path.name.encode()))
    touching = compared = 0
    worst = worst_boxes = 0.0
    pair_types, skipped = set(), []
    for qpos, q in random_states(model, mjm, rng, 40):
        mjd.qpos[:] = qpos
        theirs, ours = mujoco_rows(mjm, mjd, ours_of, skipped), our_rows(model, q)
        e, eb, n = compare(model, ours, theirs)
        worst, worst_boxes, compared = max(worst, e), max(worst_boxes, eb), compared + n
        touching += len(ours)
        pair_types |= {tuple(sorted((int(model.geom_type[int(a)]), int(model.geom_type[int(b)])))) for a, b in ours[:, :2]}
    assert worst < TOL and worst_boxes < CONVEX_TOL, (worst, worst_boxes)
    if model.geom_pairs.shape[0]:
        assert touching > 0, f"{path.name}: no contact in 40 states, the test proves nothing"
    print(f"{path.name}: {touching} contacts ({compared} point by point), worst difference {worst:.2e} "
          f"(box-box depth {worst_boxes:.2e}), pair types {sorted(pair_types)}; MuJoCo's contacts left out "
          f"(mesh geoms, pairs without a function here): {len(skipped)} {sorted(set(skipped))}")


# ----------------------------------------------------------------------------------------
# one feature each
def overlapping_pairs(xml, **kw):
    """(linkdyn model, the geom-name pairs linkdyn finds touching, MuJoCo's) at qpos0, with
    MuJoCo's contacts mapped to linkdyn's geoms."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MJCFWarning)
        model = parse_mjcf(xml, **kw)
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjd = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, mjd)
    ours = ld.contact.collide(model, qpos_to_q(model, mjm.qpos0))
    name = lambda g: mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, g)      # noqa: E731
    return (model, sorted({tuple(sorted(p)) for p in ours.names()}),
            sorted({tuple(sorted((name(c.geom1), name(c.geom2)))) for c in mjd.contact[:mjd.ncon]}))


FRAMES = """<mujoco><compiler angle="radian" eulerseq="zyx"/><worldbody>
  <geom name="floor" type="plane" size="1 1 .1" pos="0 0 -1" quat="0.9 0.1 0.2 0"/>
  <body name="a" pos="0.1 0.2 0.3" euler="0.3 0.2 0.1"><freejoint/>
    <geom name="s" type="sphere" size="0.1" pos="0.1 0 0"/>
    <geom name="c" type="capsule" size="0.05" fromto="0 0 0 0.2 0.3 0.1"/>
    <geom name="y" type="cylinder" size="0.04" fromto="0.1 0 0 0.1 0 -0.4"/>
    <geom name="b" type="box" size="0.03" fromto="0 0 0 0 0.4 0.4"/>
    <geom name="e" type="ellipsoid" size="0.1 0.2 0.3" axisangle="1 1 0 0.7"/>
    <frame pos="0 0 0.5" euler="0.2 0 0">
      <geom name="x" type="box" size="0.1 0.2 0.3" xyaxes="0 1 0 -1 0 0.2"/>
      <geom name="z" type="capsule" size="0.1 0.2" zaxis="1 1 1" pos="0.2 0 0"/>
    </frame>
    <body name="w" pos="0 0.5 0" quat="0 1 0 0"><geom name="welded" type="box" size="0.1 0.1 0.1" pos="0.3 0 0"/></body>
  </body>
</worldbody></mujoco>"""


def test_shapes_sizes_and_frames_as_mujoco():
    """Every orientation attribute, <frame>, fromto (capsule, cylinder, box) and a welded body:
    each geom's size and its pose in its body (merged over the weld) are MuJoCo's compiled
    geom_size and geom_pos/geom_quat composed with the welded body's pose, to 1e-12."""
    m = parse_mjcf(FRAMES)
    mjm = mujoco.MjModel.from_xml_string(FRAMES)
    mjd = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, mjd)
    q = qpos_to_q(m, mjm.qpos0)
    kin = ld.forward_kinematics(m, q)
    assert m.geom_names == tuple(mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, g) for g in range(mjm.ngeom))
    for g in range(m.ngeom):
        b = m.geom_body[g]
        np.testing.assert_allclose(kin.p[b] + kin.R[b] @ m.geom_pos[g], mjd.geom_xpos[g], atol=1e-12)
        np.testing.assert_allclose(kin.R[b] @ m.geom_R[g], mjd.geom_xmat[g].reshape(3, 3), atol=1e-12)
        n = {0: 0, 2: 1, 3: 2, 5: 2, 4: 3, 6: 3}[int(m.geom_type[g])]
        np.testing.assert_allclose(m.geom_size[g, :n], mjm.geom_size[g, :n], rtol=1e-12)
    assert list(m.geom_body) == [0] + [1] * 8             # "welded" merged into body a


def test_default_classes_and_childclass():
    """A geom's shape, size, friction, bits, condim, group and priority come from its class,
    its body's childclass, or the main default, as in MuJoCo's compiled model."""
    xml = """<mujoco><default><geom friction="0.6" condim="4"/>
      <default class="foot"><geom type="capsule" size="0.02 0.1" contype="2" conaffinity="3" group="2" priority="1"/>
        <default class="toe"><geom type="sphere" size="0.03" friction="0.9 0.1 0.1"/></default></default>
      <default class="ghost"><geom contype="0" conaffinity="0"/></default></default>
      <worldbody><geom name="floor" type="plane" size="1 1 1"/>
        <body name="leg" childclass="foot"><freejoint/><geom name="shin"/><geom name="t" class="toe" pos="0 0 -0.1"/>
          <geom name="v" class="ghost" type="box" size="0.1 0.1 0.1"/><geom name="plain" class="main" size="0.05"/>
        </body></worldbody></mujoco>"""
    m = parse_mjcf(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    ids = [mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_GEOM, n) for n in m.geom_names]
    assert m.geom_names == ("floor", "shin", "t", "plain")               # the ghost draws only
    np.testing.assert_array_equal(m.geom_type, mjm.geom_type[ids])
    np.testing.assert_allclose(m.geom_size, mjm.geom_size[ids] * [[0, 0, 0], [1, 1, 0], [1, 0, 0], [1, 0, 0]])
    np.testing.assert_allclose(m.geom_friction, mjm.geom_friction[ids, 0])
    for ours, theirs in (("geom_contype", "geom_contype"), ("geom_conaffinity", "geom_conaffinity"),
                         ("geom_condim", "geom_condim"), ("geom_group", "geom_group"), ("geom_priority", "geom_priority")):
        np.testing.assert_array_equal(getattr(m, ours), getattr(mjm, theirs)[ids], err_msg=ours)
    assert list(m.geom_friction) == [0.6, 0.6, 0.9, 0.6] and list(m.geom_contype) == [1, 2, 2, 1]


FILTER = """<mujoco><worldbody>
  <geom name="floor" type="plane" size="1 1 1" {floor}/>
  <body name="a" pos="0 0 0.05"><joint type="hinge" axis="0 0 1"/><geom name="ga" size="0.1" {ga}/>
    <body name="weld" pos="0.05 0 0"><geom name="gw" size="0.1"/></body>
    <body name="b" pos="0.05 0 0"><joint type="hinge" axis="0 0 1"/><joint type="hinge" axis="0 1 0" pos="0.02 0 0"/>
      <geom name="gb" type="capsule" size="0.05 0.1"/>
      <body name="c" pos="0.05 0 0"><joint type="hinge" axis="1 0 0"/><geom name="gc" type="box" size="0.08 0.08 0.08" {gc}/></body>
    </body></body>
  <body name="d" pos="0.1 0 0.05"><freejoint/><geom name="gd" size="0.1" {gd}/></body>
</worldbody>{contact}</mujoco>"""


def scene(floor="", ga="", gc="", gd="", contact=""):
    return FILTER.format(floor=floor, ga=ga, gc=gc, gd=gd, contact=f"<contact>{contact}</contact>" if contact else "")


@pytest.mark.parametrize("kw", [
    {},
    dict(gc='contype="2" conaffinity="2"'),                               # gc touches no geom of type 1
    dict(gd='contype="2" conaffinity="0"', floor='contype="1" conaffinity="2"'),   # one way is enough
    dict(ga='contype="0" conaffinity="0"'),                               # drawing only: not a geom here
    dict(contact='<exclude body1="world" body2="d"/>'),
    dict(contact='<exclude body1="weld" body2="d"/>'),                    # a welded body: ga-gd still touch
    dict(contact='<exclude body1="a" body2="c"/><exclude body1="b" body2="d"/>'),
    dict(contact='<pair geom1="ga" geom2="gb"/><pair geom1="gw" geom2="gc" friction="0.3"/>'),   # parent-child pairs
    dict(ga='contype="0" conaffinity="0"', contact='<pair geom1="ga" geom2="gd"/>'),             # a pair makes it a geom
])
def test_filters_as_mujoco(kw):
    """Everything overlaps everything at qpos0: the touching geom pairs are MuJoCo's, through
    contype/conaffinity, the parent-child rule (b hangs from a carrier body: its two joints are
    at different points; the welded body 'weld' is a's), <exclude> (on a welded body: MuJoCo
    excludes that body alone) and <pair> (regardless of the filters)."""
    model, ours, theirs = overlapping_pairs(scene(**kw))
    assert ours == theirs and len(ours) > 0
    if not kw:
        assert ("ga", "gb") not in ours and ("gb", "gc") not in ours and ("ga", "gc") in ours
    if kw.get("ga"):
        assert ("ga" in model.geom_names) == ("pair" in kw.get("contact", ""))


def test_pair_friction_and_priority():
    """A <pair>'s friction is the contact's (condim 1: none), a pair of geoms of different
    priority takes the higher one's, others the larger: the friction MuJoCo's contacts carry."""
    xml = scene(floor='friction="0.2" priority="1"', gd='friction="0.9"',
                contact='<pair geom1="ga" geom2="gb" friction="0.3"/><pair geom1="gb" geom2="gc" condim="1"/>')
    model = parse_mjcf(xml)
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjd = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, mjd)
    r = ld.contact.collide(model, qpos_to_q(model, mjm.qpos0))
    name = lambda g: mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, g)      # noqa: E731
    theirs = {tuple(sorted((name(c.geom1), name(c.geom2)))): (c.friction[0] if c.dim > 1 else 0.0)
              for c in mjd.contact[:mjd.ncon]}
    ours = {tuple(sorted(p)): f for p, f in zip(r.names(), r.friction)}
    assert ours.keys() == theirs.keys()
    assert ours == pytest.approx(theirs)
    assert ours[("floor", "gd")] == 0.2 and ours[("ga", "gb")] == 0.3 and ours[("gb", "gc")] == 0.0


def test_filterparent_disabled():
    """<flag filterparent="disable">: parent and child touch in MuJoCo, and here (explicit pairs)."""
    xml = scene().replace("<worldbody>", '<option><flag filterparent="disable"/></option><worldbody>', 1)
    model, ours, theirs = overlapping_pairs(xml)
    assert ours == theirs and ("ga", "gb") in ours and ("gb", "gc") in ours


def test_contact_flag_and_contacts_argument():
    """Geometry does not depend on contacts= (the old points and planes do); MuJoCo's contact
    flag disabled: nothing collides, no geometry."""
    with_c, without = parse_mjcf(scene()), parse_mjcf(scene(), contacts=False)
    assert with_c.geom_names == without.geom_names and without.ngeom == 6
    np.testing.assert_array_equal(with_c.geom_pairs, without.geom_pairs)
    assert without.contacts == () and len(with_c.contacts) > 0
    off = parse_mjcf(scene().replace("<worldbody>", '<option><flag contact="disable"/></option><worldbody>', 1))
    assert off.ngeom == 0


MESH = """<mujoco><asset><mesh name="tet" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>
  <hfield name="h" nrow="2" ncol="2" size="1 1 0.1 0.1"/></asset><worldbody>{world}
  <body name="a"><freejoint/><geom name="s" size="0.1"/>{body}</body></worldbody></mujoco>"""


def test_meshes_collide_height_fields_skipped_with_one_warning():
    """Mesh geoms MuJoCo collides become convex mesh geoms (their hull's vertices, placed as
    MuJoCo places them); height fields are skipped with one warning; visual-only meshes
    (contype and conaffinity 0) are skipped silently."""
    xml = MESH.format(world='<geom type="hfield" hfield="h"/>',
                      body='<geom name="m1" type="mesh" mesh="tet" pos="0 0 0.5" euler="0 0 90"/>'
                           '<geom type="mesh" mesh="tet" contype="0" conaffinity="0"/>')
    with pytest.warns(MJCFWarning) as rec:
        m = parse_mjcf(xml)
    msgs = [str(w.message) for w in rec if "not collision geometry" in str(w.message)]
    assert len(msgs) == 1 and "1 geom " in msgs[0] and "hfield" in msgs[0] and "m1" not in msgs[0]
    assert m.geom_names == ("s", "m1") and m.geom_vert_num.tolist() == [0, 4]
    # the world vertices are MuJoCo's (MuJoCo moves a mesh to its centre of mass and principal
    # axes and the geom frame with it: the same points)
    mjm = mujoco.MjModel.from_xml_string(xml)
    mjd = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, mjd)
    g = mujoco.mj_name2id(mjm, mujoco.mjtObj.mjOBJ_GEOM, "m1")
    k = mjm.geom_dataid[g]
    vm = mjm.mesh_vert[mjm.mesh_vertadr[k]:mjm.mesh_vertadr[k] + mjm.mesh_vertnum[k]]
    theirs = mjd.geom_xpos[g] + vm @ mjd.geom_xmat[g].reshape(3, 3).T
    ours = m.geom_pos[1] + m.geom_verts @ m.geom_R[1].T           # body a at the origin
    assert np.abs(np.sort(theirs, axis=0) - np.sort(ours, axis=0)).max() < 1e-6      # float32 in MuJoCo
    with warnings.catch_warnings():
        warnings.simplefilter("error", MJCFWarning)
        parse_mjcf(MESH.format(world="", body='<geom type="mesh" mesh="tet" contype="0" conaffinity="0"/>'))


@pytest.mark.parametrize("attrs,warns", [
    ('solref="0.02 1" solimp="0.9 0.95 0.001" margin="0" gap="0"', False),     # MuJoCo's defaults
    ('solref="0.01 1"', True), ('margin="0.01"', False), ('solimp="0.8 0.9 0.01"', True), ('gap="0.1"', True),
])
def test_soft_contact_parameters_warn_once_when_set(attrs, warns):
    xml = MESH.format(world=f'<geom type="plane" size="1 1 1" {attrs}/>', body=f'<geom size="0.2" {attrs}/>')
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always", MJCFWarning)
        parse_mjcf(xml)
    soft = [str(w.message) for w in rec if "soft-contact" in str(w.message)]
    assert len(soft) == (1 if warns else 0)
    if attrs == 'margin="0.01"':          # a geom's margin is its skin (MuJoCo's includemargin), kept
        assert parse_mjcf(xml).geom_margin.tolist() == [0.01, 0.0, 0.01]     # plane, s, the geom
    if warns:
        assert attrs.split("=")[0] in soft[0] and "hard" in soft[0]

