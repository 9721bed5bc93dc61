"""The human figures of seed 004 (linkdyn.models.human): structure (Fig. 13: 12 spherical + 4
revolute joints on 17 links; sec. 5.1: 16 DoF), de Leva's (1996) mass fractions typed in again here,
the standing centre of mass recomputed from the table by hand, left/right mirror symmetry under
mirrored motions, physically valid inertias, length scaling, the merged segments of the 16-DoF
figure against the 40-DoF figure's mass matrix, and the core algorithms on both figures."""
from math import radians

import numpy as np
import pytest

import linkdyn as ld
from linkdyn.model import joints as J
from linkdyn.models import human as H
from linkdyn.models.human import dimensions, human_figure, human_figure_16, segment_table, standing_configuration

RNG = np.random.default_rng(20240604)

# de Leva (1996) Table 4, mass % (female, male), typed from the paper independently of the module
MASS_PCT = {"head": (6.68, 6.94), "upper_trunk": (15.45, 15.96), "middle_trunk": (14.65, 16.33),
            "lower_trunk": (12.47, 11.17), "upper_arm": (2.55, 2.71), "forearm": (1.38, 1.62),
            "hand": (0.56, 0.61), "thigh": (14.78, 14.16), "shank": (4.81, 4.33), "foot": (1.29, 1.37)}
# length mm, CM % from the origin (the first endpoint: VERT, SUPR, XYPH, OMPH, SJC, EJC, WJC, HJC, KJC, HEEL)
LENGTH_MM = {"head": (200.2, 203.3), "upper_trunk": (142.5, 170.7), "middle_trunk": (205.3, 215.5),
             "lower_trunk": (181.5, 145.7), "upper_arm": (275.1, 281.7), "forearm": (264.3, 268.9),
             "hand": (78.0, 86.2), "thigh": (368.5, 422.2), "shank": (432.3, 434.0), "foot": (228.3, 258.1)}
CM_PCT = {"head": (58.94, 59.76), "upper_trunk": (20.77, 29.99), "middle_trunk": (45.12, 45.02),
          "lower_trunk": (49.20, 61.15), "upper_arm": (57.54, 57.72), "forearm": (45.59, 45.74),
          "hand": (74.74, 79.00), "thigh": (36.12, 40.95), "shank": (44.16, 44.59), "foot": (40.14, 44.15)}
STATURE = (1.735, 1.741)
SEXES = ("female", "male")
SIDES = ("l", "r")
FIGURES = {"40": human_figure, "16": human_figure_16}


def body_mass(model, name):
    return float(model.inertia[model.body_id(name)][0, 0])


def kinds(model):
    return [j.kind for j in model.joints[1:]]


# ------------------------------------------------------------------------------------- structure
@pytest.mark.parametrize("floating", [True, False])
def test_40dof_structure(floating):
    m = human_figure(floating=floating)
    k = kinds(m)
    assert k.count(J.SPHERICAL) == 12 and k.count(J.REVOLUTE) == 4
    assert k.count(J.FREE) == (1 if floating else 0) and len(k) == 16 + floating
    assert m.nv == 40 + 6 * floating and m.nq == 12 * 4 + 4 + 7 * floating
    links = {"pelvis", "torso", "head"} | {f"{s}_{b}" for s in SIDES for b in
                                          ("clavicle", "upper_arm", "forearm", "hand", "thigh", "shank", "foot")}
    assert len(links) == 17
    moving = set(m.body_names[1:])
    assert moving == (links if floating else links - {"pelvis"})     # welded: the pelvis joins the world body
    assert m.body_id("pelvis") == (1 if floating else 0)
    joints = {"waist", "neck"} | {f"{s}_{j}" for s in SIDES for j in
                                  ("sternoclavicular", "shoulder", "elbow", "wrist", "hip", "knee", "ankle")}
    assert set(m.joint_names) == joints | ({"root_joint"} if floating else set())
    for s in SIDES:
        assert m.joints[m.joint_id(f"{s}_elbow")].kind == J.REVOLUTE
        assert m.joints[m.joint_id(f"{s}_knee")].kind == J.REVOLUTE
    for f in ("l_grip", "r_grip", "l_sole", "r_sole", "l_toe", "r_toe", "l_heel", "r_heel", "head_top"):
        m.frame_id(f)


@pytest.mark.parametrize("floating", [True, False])
def test_16dof_structure(floating):
    m = human_figure_16(floating=floating)
    k = kinds(m)
    assert k.count(J.SPHERICAL) == 4 and k.count(J.REVOLUTE) == 4 and k.count(J.FREE) == int(floating)
    assert m.nv == 16 + 6 * floating and m.nq == 20 + 7 * floating
    per_limb = {}
    for name in m.joint_names:
        if name != "root_joint":
            limb = name[:2] + ("arm" if name.endswith(("shoulder", "elbow")) else "leg")
            per_limb[limb] = per_limb.get(limb, 0) + int(m.jnt_nv[m.joint_id(name)])
    assert per_limb == {"l_arm": 4, "r_arm": 4, "l_leg": 4, "r_leg": 4}        # sec. 5.1: 4 DoF per limb


def test_joint_limits_and_flexion_directions():
    m = human_figure()
    for s in SIDES:
        for joint, hi in ((f"{s}_elbow", radians(150)), (f"{s}_knee", radians(135))):
            i = m.q_index(joint)
            assert m.lower[i] == 0.0 and m.upper[i] == pytest.approx(hi)
    spherical = [i for i in range(1, m.nbody) if m.jnt_type[i] == J.SPHERICAL]
    for i in spherical:
        sl = slice(m.jnt_qadr[i], m.jnt_qadr[i] + 4)
        assert np.all(np.isneginf(m.lower[sl])) and np.all(np.isposinf(m.upper[sl]))
    # positive flexion: the fist comes forward, the sole goes backward (the figure faces +x)
    q = standing_configuration(m)
    q[m.q_index("l_elbow")] = np.pi / 2
    q[m.q_index("l_knee")] = np.pi / 2
    d = dimensions()
    grip = ld.frame_pose(m, q, "l_grip")[:3, 3]
    sole = ld.frame_pose(m, q, "l_sole")[:3, 3]
    assert grip[0] == pytest.approx(d["L_forearm"] + d["L_hand"]) and grip[2] == pytest.approx(d["elbow"])
    assert sole[0] == pytest.approx(-d["L_shank"] - d["ankle"]) and sole[2] == pytest.approx(d["knee"])


def test_free_joint_is_the_pelvis_origin():
    m = human_figure()
    q = standing_configuration(m)
    q[:3] = [0.3, -0.2, 0.1]
    q[3:7] = [0.0, 0.0, np.sin(0.4), np.cos(0.4)]
    T = ld.frame_pose(m, q, "pelvis")
    assert np.allclose(T[:3, 3], [0.3, -0.2, 0.1], atol=1e-14)                 # q[:3] is the world position
    assert standing_configuration(m)[2] == pytest.approx(dimensions()["pelvis_height"], rel=1e-14)
    c, s = np.cos(0.8), np.sin(0.8)
    assert np.allclose(T[:3, :3], [[c, -s, 0], [s, c, 0], [0, 0, 1]], atol=1e-14)


@pytest.mark.parametrize("bad", [dict(sex="x"), dict(mass=0.0), dict(mass=-3), dict(height=np.nan),
                                 dict(height=0.0), dict(mass="heavy")])
def test_rejects_bad_arguments(bad):
    with pytest.raises((ValueError, TypeError)):
        human_figure(**bad)
    with pytest.raises((ValueError, TypeError)):
        human_figure_16(**bad)


# ---------------------------------------------------------------------------------------- masses
@pytest.mark.parametrize("fig", FIGURES)
@pytest.mark.parametrize("sex", SEXES)
@pytest.mark.parametrize("mass,height", [(70.0, 1.75), (52.5, 1.58), (101.3, 1.93)])
@pytest.mark.parametrize("floating", [True, False])
def test_total_mass_is_exact(fig, sex, mass, height, floating):
    m = FIGURES[fig](mass=mass, height=height, sex=sex, floating=floating)
    assert m.total_mass == pytest.approx(mass, rel=1e-14, abs=0)
    assert sum(r.mass for r in segment_table(m)) == pytest.approx(mass, rel=1e-14, abs=0)


@pytest.mark.parametrize("sex", SEXES)
def test_segment_mass_fractions_are_de_levas(sex):
    k = SEXES.index(sex)
    M = 83.0
    m = human_figure(mass=M, sex=sex)
    pct = {name: 100 * body_mass(m, name) / M for name in m.body_names[1:]}
    expected = {"head": "head", "pelvis": "lower_trunk"}
    for s in SIDES:
        expected.update({f"{s}_{b}": b for b in ("upper_arm", "forearm", "hand", "thigh", "shank", "foot")})
    for body, seg in expected.items():             # equal to the two decimals the table gives
        assert abs(pct[body] - MASS_PCT[seg][k]) <= 0.005, (body, pct[body], MASS_PCT[seg][k])
    # the torso and the clavicles share the upper + middle trunk; each clavicle is 5 % of the upper trunk
    trunk = pct["torso"] + pct["l_clavicle"] + pct["r_clavicle"]
    assert abs(trunk - MASS_PCT["upper_trunk"][k] - MASS_PCT["middle_trunk"][k]) <= 0.005
    assert abs(pct["l_clavicle"] - 0.05 * MASS_PCT["upper_trunk"][k]) <= 0.0005
    if sex == "male":                              # the male table sums to exactly 100 %: no normalization
        for body, seg in expected.items():
            assert pct[body] == pytest.approx(MASS_PCT[seg][k], rel=1e-12)
    # whole trunk (de Leva's "trunk" row: 42.57 / 43.46 %)
    assert abs(pct["pelvis"] + trunk - (42.57, 43.46)[k]) <= 0.005


def test_16dof_mass_fractions():
    m = human_figure_16(mass=70.0)
    k = 1
    assert 100 * body_mass(m, "trunk") / 70 == pytest.approx(43.46 + 6.94, rel=1e-12)
    assert 100 * body_mass(m, "l_forearm_hand") / 70 == pytest.approx(MASS_PCT["forearm"][k] + MASS_PCT["hand"][k])
    assert 100 * body_mass(m, "r_shank_foot") / 70 == pytest.approx(MASS_PCT["shank"][k] + MASS_PCT["foot"][k])


# ------------------------------------------------------------------------------ centre of mass
def expected_standing_com(sex, height):
    """The standing figure's centre of mass from the table above, stacked by hand: the limbs hang on
    the joint-centre lines, every CM at its table fraction from its origin endpoint."""
    k = SEXES.index(sex)
    L = {s: LENGTH_MM[s][k] / 1000 * height / STATURE[k] for s in LENGTH_MM}
    f = {s: MASS_PCT[s][k] for s in MASS_PCT}
    c = {s: CM_PCT[s][k] / 100 for s in CM_PCT}
    ankle = H.ANKLE_HEIGHT * height
    knee = ankle + L["shank"]
    hip = knee + L["thigh"]
    omph = hip + L["lower_trunk"]
    xyph = omph + L["middle_trunk"]
    supr = xyph + L["upper_trunk"]
    shoulder = supr - H.SHOULDER_DROP * height
    share = H.CLAVICLE_SHARE
    z = [  # (mass %, height of the CM), the limbs twice
        (f["head"], height - c["head"] * L["head"]),
        (f["upper_trunk"] * (1 - 2 * share), supr - c["upper_trunk"] * L["upper_trunk"]),
        (2 * f["upper_trunk"] * share, 0.5 * (supr + shoulder)),               # clavicle midpoints
        (f["middle_trunk"], xyph - c["middle_trunk"] * L["middle_trunk"]),
        (f["lower_trunk"], omph - c["lower_trunk"] * L["lower_trunk"]),
        (2 * f["upper_arm"], shoulder - c["upper_arm"] * L["upper_arm"]),
        (2 * f["forearm"], shoulder - L["upper_arm"] - c["forearm"] * L["forearm"]),
        (2 * f["hand"], shoulder - L["upper_arm"] - L["forearm"] - c["hand"] * L["hand"]),
        (2 * f["thigh"], hip - c["thigh"] * L["thigh"]),
        (2 * f["shank"], knee - c["shank"] * L["shank"]),
        (2 * f["foot"], 0.5 * ankle),
    ]
    total = sum(w for w, _ in z)
    x_foot = (c["foot"] - H.HEEL_BEHIND_ANKLE) * L["foot"]
    return np.array([2 * f["foot"] * x_foot / total, 0.0, sum(w * h for w, h in z) / total])


@pytest.mark.parametrize("fig", FIGURES)
@pytest.mark.parametrize("sex", SEXES)
@pytest.mark.parametrize("height", [1.75, 1.62])
def test_standing_com_height_and_over_the_feet(fig, sex, height):
    m = FIGURES[fig](mass=64.0, height=height, sex=sex)
    q = standing_configuration(m)
    com = ld.center_of_mass(m, q)
    assert np.allclose(com, expected_standing_com(sex, height), rtol=0, atol=1e-12)
    ratio = com[2] / height
    if sex == "male":
        assert 0.55 <= ratio <= 0.57          # the usual 55-57 % of stature for men
    else:
        assert 0.54 <= ratio <= 0.57
    # over the feet: within the support rectangle spanned by the heels, toes and soles
    heel, toe = (ld.frame_pose(m, q, f"l_{p}")[:3, 3] for p in ("heel", "toe"))
    r_sole = ld.frame_pose(m, q, "r_sole")[:3, 3]
    assert heel[0] < com[0] < toe[0] and r_sole[1] < com[1] < heel[1]
    assert abs(com[1]) < 1e-15


# ------------------------------------------------------------------------------------- symmetry
def mirror(model, q):
    """q of the motion mirrored in the sagittal plane (y -> -y): left and right swapped, every
    rotation R -> P R P (P = diag(1, -1, 1)), i.e. quaternion [x, y, z, w] -> [-x, y, -z, w];
    rotations about the y axis (elbows, knees) are unchanged."""
    out = np.array(q, dtype=float)
    for name in model.joint_names:
        partner = {"l": "r", "r": "l"}.get(name[0]) + name[1:] if name[:2] in ("l_", "r_") else name
        src, dst = model.q_slice(name), model.q_slice(partner)
        x = np.array(q[src])
        kind = model.joints[model.joint_id(name)].kind
        if kind == J.SPHERICAL:
            x = x * [-1, 1, -1, 1]
        elif kind == J.FREE:
            x = x * [1, -1, 1, -1, 1, -1, 1]
        out[dst] = x
    return out


def mirror_v(model, v):
    """A velocity (or generalized force) of the mirrored motion: angular parts are axial vectors,
    w -> [-wx, wy, -wz]; the free joint's linear part is a polar vector, [vx, -vy, vz]."""
    out = np.array(v, dtype=float)
    for name in model.joint_names:
        partner = {"l": "r", "r": "l"}.get(name[0]) + name[1:] if name[:2] in ("l_", "r_") else name
        x = np.array(v[model.v_slice(name)])
        kind = model.joints[model.joint_id(name)].kind
        if kind == J.SPHERICAL:
            x = x * [-1, 1, -1]
        elif kind == J.FREE:
            x = x * [1, -1, 1, -1, 1, -1]
        out[model.v_slice(partner)] = x
    return out


@pytest.mark.parametrize("fig", FIGURES)
def test_left_right_mirror_symmetry(fig):
    m = FIGURES[fig](sex="female", mass=58.0, height=1.66)
    P = np.diag([1.0, -1.0, 1.0])
    rows = {r.body: r for r in segment_table(m)}
    sided = [b for b in rows if b.startswith("l_")]
    assert len(sided) == (7 if fig == "40" else 4)
    for left in sided:                             # equal masses, mirrored coms and inertias
        a, b = rows[left], rows["r_" + left[2:]]
        assert a.mass == b.mass
        assert np.allclose(b.com, P @ a.com, atol=1e-15)
        assert np.allclose(b.inertia, P @ a.inertia @ P, atol=1e-15)
    assert ld.center_of_mass(m, standing_configuration(m))[1] == 0.0
    for _ in range(4):                             # mirrored motions: mirrored com, frames and torques
        q = ld.random_configuration(m, rng=RNG)
        v, acc = RNG.standard_normal(m.nv), RNG.standard_normal(m.nv)
        qm, vm, am = mirror(m, q), mirror_v(m, v), mirror_v(m, acc)
        assert np.allclose(ld.center_of_mass(m, qm), P @ ld.center_of_mass(m, q), atol=1e-13)
        for f in ("grip", "sole", "toe"):
            Tl, Tr = ld.frame_pose(m, q, f"l_{f}"), ld.frame_pose(m, qm, f"r_{f}")
            assert np.allclose(Tr[:3, 3], P @ Tl[:3, 3], atol=1e-13)
            assert np.allclose(Tr[:3, :3], P @ Tl[:3, :3] @ P, atol=1e-13)
        assert ld.kinetic_energy(m, qm, vm) == pytest.approx(ld.kinetic_energy(m, q, v), rel=1e-12)
        assert np.allclose(ld.rnea(m, qm, vm, am), mirror_v(m, ld.rnea(m, q, v, acc)), rtol=1e-10, atol=1e-10)


# -------------------------------------------------------------------------------------- inertias
@pytest.mark.parametrize("fig", FIGURES)
@pytest.mark.parametrize("sex", SEXES)
def test_every_inertia_is_physical(fig, sex):
    m = FIGURES[fig](sex=sex)
    rows = segment_table(m)
    assert len(rows) == m.nbody - 1
    for r in rows:
        I1, I2, I3 = r.principal
        assert r.mass > 0 and I1 > 0
        assert I1 <= I2 <= I3 and I3 <= I1 + I2 * (1 + 1e-12), r.body    # triangle inequalities
        assert np.allclose(r.inertia, r.inertia.T)
    assert "total" in segment_table(m, text=True)


@pytest.mark.parametrize("sex", SEXES)
def test_segment_inertias_follow_the_radii_of_gyration(sex):
    """A single de Leva segment (the thigh, hanging): m (r L)^2 on the stated axes."""
    k = SEXES.index(sex)
    radii = {"thigh": ((36.9, 32.9), (36.4, 32.9), (16.2, 14.9)), "foot": ((29.9, 25.7), (27.9, 24.5), (13.9, 12.4))}
    m = human_figure(mass=70.0, height=1.8, sex=sex)
    rows = {r.body: r for r in segment_table(m)}
    for seg, axes in (("thigh", (0, 1, 2)), ("foot", (2, 1, 0))):      # foot: longitudinal on x, sagittal on z
        L = LENGTH_MM[seg][k] / 1000 * 1.8 / STATURE[k]
        r = rows[f"l_{seg}"]
        expect = np.zeros(3)
        for ax, rr in zip(axes, radii[seg]):
            expect[ax] = r.mass * (rr[k] / 100 * L) ** 2
        assert np.allclose(r.inertia, np.diag(expect), rtol=1e-12, atol=1e-16)


@pytest.mark.parametrize("fig", FIGURES)
def test_doubling_the_height_scales_inertias_by_4(fig):
    small = FIGURES[fig](mass=66.0, height=1.7, floating=False)
    big = FIGURES[fig](mass=66.0, height=3.4, floating=False)
    for a, b in zip(segment_table(small), segment_table(big)):
        assert a.body == b.body and a.mass == pytest.approx(b.mass, rel=1e-14)
        assert np.allclose(b.com, 2 * a.com, rtol=1e-13, atol=1e-15)
        assert np.allclose(b.inertia, 4 * a.inertia, rtol=1e-12, atol=1e-16)
    # all joints are rotations: the joint-space inertia scales by 4 at every configuration
    for _ in range(3):
        q = ld.random_configuration(small, rng=RNG)
        assert np.allclose(ld.crba(big, q), 4 * ld.crba(small, q), rtol=1e-12, atol=1e-12)
    heavy = FIGURES[fig](mass=132.0, height=1.7, floating=False)
    assert np.allclose(ld.crba(heavy, q), 2 * ld.crba(small, q), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------- the 16-DoF figure
SHARED = ("root_joint", "l_shoulder", "l_elbow", "r_shoulder", "r_elbow", "l_hip", "l_knee", "r_hip", "r_knee")


@pytest.mark.parametrize("sex", SEXES)
def test_16dof_is_the_40dof_with_the_other_joints_locked(sex):
    """The 16-DoF figure's merged segments (trunk+head+clavicles, forearm+hand, shank+foot, by the
    parallel-axis theorem) against the 40-DoF figure with its other joints at rest: same mass matrix
    on the shared joints, same bias forces, same centre of mass, same grips and soles."""
    big, small = human_figure(sex=sex, mass=77.0, height=1.83), human_figure_16(sex=sex, mass=77.0, height=1.83)
    for _ in range(4):
        q16 = ld.random_configuration(small, rng=RNG)
        v16 = RNG.standard_normal(small.nv)
        q40 = standing_configuration(big)
        vidx = []
        for name in SHARED:
            q40[big.q_slice(name)] = q16[small.q_slice(name)]
            vidx += list(range(big.v_slice(name).start, big.v_slice(name).stop))
        order = np.concatenate([np.arange(small.v_slice(n).start, small.v_slice(n).stop) for n in SHARED])
        M40, M16 = ld.crba(big, q40), ld.crba(small, q16)
        assert np.allclose(M40[np.ix_(vidx, vidx)], M16[np.ix_(order, order)], rtol=1e-12, atol=1e-12)
        v40 = np.zeros(big.nv)
        v40[vidx] = v16[order]
        tau40 = ld.rnea(big, q40, v40, np.zeros(big.nv))
        tau16 = ld.rnea(small, q16, v16, np.zeros(small.nv))
        # the locked joints carry constraint torques; the shared ones see the same bias forces
        assert np.allclose(tau40[vidx], tau16[order], rtol=1e-11, atol=1e-10)
        assert np.allclose(ld.center_of_mass(big, q40), ld.center_of_mass(small, q16), atol=1e-13)
        for f in ("l_grip", "r_grip", "l_sole", "r_toe", "l_heel", "head_top"):
            assert np.allclose(ld.frame_pose(big, q40, f), ld.frame_pose(small, q16, f), atol=1e-13)


def test_combine_against_the_builders_fixed_joint_merge():
    """combine() (used for every merged segment) against the builder merging bodies on fixed joints
    (spatial inertia transforms: an independent path)."""
    parts = [H._Part(2.0, np.array([0.1, -0.2, 0.3]), np.diag([0.02, 0.03, 0.04])),
             H._Part(0.7, np.array([-0.3, 0.05, -0.1]), np.array([[0.01, 0.002, 0], [0.002, 0.02, 0.001],
                                                                 [0, 0.001, 0.015]]))]
    b = ld.ModelBuilder()
    b.add_body("a", "world", ld.Revolute("z"), inertia=ld.Inertia(*parts[0]))
    b.add_body("b", "a", ld.Fixed(), placement=[0.4, 0.1, -0.2],
               inertia=ld.Inertia(parts[1].mass, parts[1].com - [0.4, 0.1, -0.2], parts[1].inertia))
    merged = b.build().inertia[1]
    c = H.combine(parts)
    assert np.allclose(ld.spatial.spatial_inertia(c.mass, c.com, c.inertia), merged, atol=1e-14)


# ------------------------------------------------------------------------------- frames, ground
@pytest.mark.parametrize("fig", FIGURES)
@pytest.mark.parametrize("sex", SEXES)
@pytest.mark.parametrize("height", [1.75, 1.5, 2.02])
@pytest.mark.parametrize("floating", [True, False])
def test_standing_on_the_ground(fig, sex, height, floating):
    m = FIGURES[fig](height=height, sex=sex, floating=floating)
    q = standing_configuration(m)
    for side in SIDES:
        for f in ("sole", "heel", "toe"):
            T = ld.frame_pose(m, q, f"{side}_{f}")
            assert abs(T[2, 3]) < 1e-14
            assert np.array_equal(T[:3, :3], np.eye(3))
        sole = ld.frame_pose(m, q, f"{side}_sole")[:3, 3]
        if fig == "40":
            ankle = ld.frame_pose(m, q, f"{side}_ankle")[:3, 3]
            assert ankle[0] == sole[0] and ankle[1] == sole[1]                   # under the ankle
            assert ankle[2] == pytest.approx(H.ANKLE_HEIGHT * height, rel=1e-13)
    assert ld.frame_pose(m, q, "head_top")[2, 3] == pytest.approx(height, rel=1e-15)
    assert ld.frame_pose(m, q, "l_toe")[0, 3] - ld.frame_pose(m, q, "l_heel")[0, 3] == pytest.approx(
        LENGTH_MM["foot"][SEXES.index(sex)] / 1000 * height / STATURE[SEXES.index(sex)], rel=1e-13)


@pytest.mark.parametrize("sex", SEXES)
def test_grips_at_the_ends_of_the_hands(sex):
    k = SEXES.index(sex)
    h = 1.69
    L = {s: LENGTH_MM[s][k] / 1000 * h / STATURE[k] for s in ("upper_arm", "forearm", "hand")}
    m40, m16 = human_figure(height=h, sex=sex), human_figure_16(height=h, sex=sex)
    d = dimensions(h, sex)
    for side in SIDES:                              # standing: the arm hangs straight down
        T = ld.frame_pose(m40, standing_configuration(m40), f"{side}_grip")
        S = ld.frame_pose(m40, standing_configuration(m40), f"{side}_shoulder")
        assert np.allclose(T[:3, 3], S[:3, 3] - [0, 0, L["upper_arm"] + L["forearm"] + L["hand"]], atol=1e-14)
        assert S[2, 3] == pytest.approx(d["neck"] - H.SHOULDER_DROP * h)
    for _ in range(5):
        q = ld.random_configuration(m40, rng=RNG)
        for side in SIDES:
            W = ld.frame_pose(m40, q, f"{side}_wrist")          # the wrist joint = the hand's frame
            G = ld.frame_pose(m40, q, f"{side}_grip")
            assert np.allclose(G[:3, 3], W[:3, 3] - L["hand"] * W[:3, 2], atol=1e-14)   # along the hand's axis
            assert np.linalg.norm(G[:3, 3] - W[:3, 3]) == pytest.approx(L["hand"])
        q = ld.random_configuration(m16, rng=RNG)
        for side in SIDES:
            E = ld.frame_pose(m16, q, f"{side}_elbow")
            G = ld.frame_pose(m16, q, f"{side}_grip")
            assert np.allclose(G[:3, 3], E[:3, 3] - (L["forearm"] + L["hand"]) * E[:3, 2], atol=1e-14)


# ------------------------------------------------------------------------------ core algorithms
@pytest.mark.parametrize("fig", FIGURES)
@pytest.mark.parametrize("floating", [True, False])
def test_core_algorithms(fig, floating):
    m = FIGURES[fig](floating=floating, sex="female", mass=61.0, height=1.68)
    for _ in range(4):
        q = ld.random_configuration(m, rng=RNG)
        v, a = RNG.standard_normal(m.nv), RNG.standard_normal(m.nv)
        tau = ld.rnea(m, q, v, a)
        assert np.allclose(ld.aba(m, q, v, tau), a, rtol=1e-9, atol=1e-9)
        M = ld.crba(m, q)
        assert np.allclose(M, M.T) and np.linalg.eigvalsh(M).min() > 0
        assert np.allclose(M @ a + ld.nonlinear_effects(m, q, v), tau, rtol=1e-10, atol=1e-9)
        # the kinetic energy from the mass matrix
        assert ld.kinetic_energy(m, q, v) == pytest.approx(0.5 * v @ M @ v, rel=1e-11)
    if floating:   # the free base carries the whole mass: M[:3, :3] = m 1 (body frame)
        assert np.allclose(ld.crba(m, q)[:3, :3], 61.0 * np.eye(3), rtol=1e-12)
        # standing still under gravity: the base needs the full weight, nothing else moves
        g = ld.generalized_gravity(m, standing_configuration(m))
        assert np.allclose(g[:3], [0, 0, 61.0 * 9.81], rtol=1e-12)
    Q = ld.random_configuration(m, rng=RNG, size=3)          # a stack runs too
    assert ld.rnea(m, Q, np.zeros((3, m.nv)), np.zeros((3, m.nv))).shape == (3, m.nv)


def test_de_leva_rows_normalized():
    for sex in SEXES:
        t = H.de_leva(sex)
        total = sum(r.mass * (2 if name in ("upper_arm", "forearm", "hand", "thigh", "shank", "foot") else 1)
                    for name, r in t.items())
        assert total == pytest.approx(1.0, rel=1e-15)
        assert t["head"].length == LENGTH_MM["head"][SEXES.index(sex)] / 1000
    with pytest.raises(ValueError):
        H.de_leva("robot")
