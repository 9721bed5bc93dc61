"""Serial arms from DH tables (linkdyn.models.dh) against closed forms, an independent numpy product
of DH matrices, the modified convention, and Pinocchio models built by hand from the same tables."""
from math import pi

import numpy as np
import pytest

import linkdyn as ld
from linkdyn.models import dh

RNG = np.random.default_rng(20261122)


# ------------------------------------------------------------------ independent DH matrices
def A_standard(theta, d, a, alpha):
    """Seed 002 eq. (4.9), written out entry by entry."""
    ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
    return np.array([[ct, -st * ca, st * sa, a * ct],
                     [st, ct * ca, -ct * sa, a * st],
                     [0.0, sa, ca, d],
                     [0.0, 0.0, 0.0, 1.0]])


def A_modified(theta, d, a, alpha):
    """Craig: Rot_x(alpha_{i-1}) Trans_x(a_{i-1}) Rot_z(theta_i) Trans_z(d_i), written out."""
    ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
    return np.array([[ct, -st, 0.0, a],
                     [st * ca, ct * ca, -sa, -sa * d],
                     [st * sa, ct * sa, ca, ca * d],
                     [0.0, 0.0, 0.0, 1.0]])


def joint_values(L, qi):
    return (L.theta + qi, L.d) if L.kind == "revolute" else (L.theta, L.d + qi)


def chain(links, q, convention, base, tool):
    A = A_standard if convention == "standard" else A_modified
    T, frames = base.copy(), [base.copy()]
    for L, qi in zip(links, q):
        th, d = joint_values(L, qi)
        T = T @ A(th, d, L.a, L.alpha)
        frames.append(T.copy())
    return frames, T @ tool


def random_pose():
    from scipy.spatial.transform import Rotation
    T = np.eye(4)
    T[:3, :3] = Rotation.random(random_state=RNG.integers(1 << 30)).as_matrix()
    T[:3, 3] = RNG.normal(size=3)
    return T


def random_q(model, n=1):
    lo = np.where(np.isfinite(model.lower), model.lower, -pi)
    hi = np.where(np.isfinite(model.upper), model.upper, pi)
    return RNG.uniform(lo, hi, size=(n, model.nq))


def random_links(kinds, seed):
    rng = np.random.default_rng(seed)
    out = []
    for k in kinds:
        A = rng.normal(size=(3, 3))
        out.append(dh.DHLink(a=rng.normal(), alpha=rng.uniform(-pi, pi), d=rng.normal(), theta=rng.uniform(-pi, pi),
                             kind=k, mass=rng.uniform(0.5, 3), com=rng.normal(size=3) * 0.3,
                             inertia=0.1 * (np.trace(A @ A.T) * np.eye(3) - A @ A.T) + 0.01 * np.eye(3), armature=rng.uniform(0, 0.5)))
    return out


def table(model_fn):
    """The DHLink list a built-in arm is made from (``puma560`` -> ``puma560_links``)."""
    return getattr(dh, model_fn.__name__ + "_links")()


ARMS = {"puma560": dh.puma560, "stanford": dh.stanford_arm, "scara": dh.scara, "cartesian": dh.cartesian_arm,
        "cylindrical": dh.cylindrical_arm, "polar": dh.polar_arm, "planar": dh.planar_2link}


# ------------------------------------------------------------------ planar 2-link closed forms
L1, L2, M1, M2 = 0.7, 0.5, 2.0, 1.5


def test_planar_2link_tool_position_closed_form():
    model = dh.planar_2link(L1, L2, M1, M2)
    Q = RNG.uniform(-pi, pi, size=(20, 2))
    x = ld.frame_pose(model, Q, "tool")[:, :3, 3]
    q1, q12 = Q[:, 0], Q.sum(1)
    np.testing.assert_allclose(x[:, 0], L1 * np.cos(q1) + L2 * np.cos(q12), atol=1e-12)
    np.testing.assert_allclose(x[:, 1], L1 * np.sin(q1) + L2 * np.sin(q12), atol=1e-12)
    np.testing.assert_allclose(x[:, 2], 0.0, atol=1e-12)
    # link1 is the elbow
    np.testing.assert_allclose(ld.frame_pose(model, Q, "link1")[:, :2, 3],
                               np.c_[L1 * np.cos(q1), L1 * np.sin(q1)], atol=1e-12)


def planar_closed_form(q, v, a, g_vec):
    """Seed 002 eqs. (5.87)/(5.93) with the Coriolis term in its form (5.95), uniform rods:
    a_1 = l1, l_ci = l_i / 2 (distance joint -> com), J_i = m_i l_i^2 / 12; plus gravity in the
    arm's plane (zero for the default vertical gravity, as in the seed)."""
    a1, lc1, lc2 = L1, L1 / 2, L2 / 2
    J1, J2 = M1 * L1 ** 2 / 12, M2 * L2 ** 2 / 12
    c2, s2 = np.cos(q[1]), np.sin(q[1])
    D = np.array([[M1 * lc1 ** 2 + J1 + M2 * (a1 ** 2 + lc2 ** 2) + J2 + 2 * M2 * a1 * lc2 * c2,
                   J2 + M2 * lc2 ** 2 + M2 * a1 * lc2 * c2],
                  [J2 + M2 * lc2 ** 2 + M2 * a1 * lc2 * c2, J2 + M2 * lc2 ** 2]])
    h = -M2 * a1 * lc2 * s2 * np.array([[v[1], v[0] + v[1]], [-v[0], 0.0]]) @ v       # eq. (5.95)
    # potential U = -m g . r_c ; gravity torque = dU/dq, for g in the xy-plane
    gx, gy = g_vec[0], g_vec[1]
    q1, q12 = q[0], q[0] + q[1]
    dr1 = np.array([[-lc1 * np.sin(q1), 0], [lc1 * np.cos(q1), 0]])
    dr2 = np.array([[-a1 * np.sin(q1) - lc2 * np.sin(q12), -lc2 * np.sin(q12)],
                    [a1 * np.cos(q1) + lc2 * np.cos(q12), lc2 * np.cos(q12)]])
    G = -(M1 * dr1.T + M2 * dr2.T) @ np.array([gx, gy])
    return D, h, G


@pytest.mark.parametrize("gravity", [(0.0, 0.0, -9.81), (0.0, -9.81, 0.0), (3.0, -4.0, -9.81)])
def test_planar_2link_dynamics_closed_form(gravity):
    model = dh.planar_2link(L1, L2, M1, M2, gravity=gravity)
    for _ in range(10):
        q, v, a = RNG.uniform(-pi, pi, 2), RNG.normal(size=2), RNG.normal(size=2)
        D, h, G = planar_closed_form(q, v, a, gravity)
        np.testing.assert_allclose(ld.crba(model, q), D, atol=1e-12)
        np.testing.assert_allclose(ld.generalized_gravity(model, q), G, atol=1e-12)
        np.testing.assert_allclose(ld.rnea(model, q, v, a), D @ a + h + G, atol=1e-12)
    if gravity == (0.0, -9.81, 0.0):   # textbook vertical-plane gravity vector
        q = np.array([0.3, -1.1])
        g = 9.81
        expected = [(M1 * L1 / 2 + M2 * L1) * g * np.cos(q[0]) + M2 * L2 / 2 * g * np.cos(q.sum()),
                    M2 * L2 / 2 * g * np.cos(q.sum())]
        np.testing.assert_allclose(ld.generalized_gravity(model, q), expected, atol=1e-12)


# ------------------------------------------------------------------ poses vs numpy DH products
@pytest.mark.parametrize("name", sorted(ARMS))
def test_builtin_frames_equal_dh_product(name):
    links = table(ARMS[name])
    base, tool = random_pose(), random_pose()
    model = dh.from_dh(links, base=base, tool=tool)
    for q in random_q(model, 5):
        frames, T_tool = chain(links, q, "standard", base, tool)
        for i, T in enumerate(frames):
            np.testing.assert_allclose(ld.frame_pose(model, q, f"link{i}"), T, atol=1e-12)
        np.testing.assert_allclose(ld.frame_pose(model, q, "tool"), T_tool, atol=1e-12)


@pytest.mark.parametrize("kinds", [("revolute",) * 6, ("revolute", "revolute", "prismatic", "revolute", "prismatic")])
def test_modified_frames_equal_dh_product(kinds):
    links = random_links(kinds, 7)
    base, tool = random_pose(), random_pose()
    model = dh.from_dh(links, convention="modified", base=base, tool=tool)
    for q in random_q(model, 5):
        frames, T_tool = chain(links, q, "modified", base, tool)
        for i, T in enumerate(frames):
            np.testing.assert_allclose(ld.frame_pose(model, q, f"link{i}"), T, atol=1e-12)
        np.testing.assert_allclose(ld.frame_pose(model, q, "tool"), T_tool, atol=1e-12)


def standard_to_modified(links, tool):
    """The same mechanism as a modified table: frame i (modified) = frame i (standard) Rot_x(-alpha_i) Trans_x(-a_i)."""
    out, prev = [], (0.0, 0.0)
    for L in links:
        S = dh.dh_transform(L.a, L.alpha, 0.0, 0.0)          # standard frame i in modified frame i
        R, p = S[:3, :3], S[:3, 3]
        out.append(dh.DHLink(a=prev[0], alpha=prev[1], d=L.d, theta=L.theta, kind=L.kind, mass=L.mass,
                             com=R @ L.com + p, inertia=R @ L.inertia @ R.T, armature=L.armature,
                             lower=L.lower, upper=L.upper))
        prev = (L.a, L.alpha)
    last = links[-1]
    return out, dh.dh_transform(last.a, last.alpha, 0.0, 0.0) @ tool


@pytest.mark.parametrize("name", ["puma560", "stanford", "scara", "polar"])
def test_modified_table_of_same_arm_agrees(name):
    links = table(ARMS[name])
    base, tool = random_pose(), random_pose()
    std = dh.from_dh(links, base=base, tool=tool)
    mlinks, mtool = standard_to_modified(links, tool)
    mod = dh.from_dh(mlinks, convention="modified", base=base, tool=mtool)
    Q = random_q(std, 4)
    np.testing.assert_allclose(ld.frame_pose(mod, Q, "tool"), ld.frame_pose(std, Q, "tool"), atol=1e-12)
    for q in Q:
        v, a = RNG.normal(size=std.nv), RNG.normal(size=std.nv)
        np.testing.assert_allclose(ld.crba(mod, q), ld.crba(std, q), atol=1e-9)
        np.testing.assert_allclose(ld.rnea(mod, q, v, a), ld.rnea(std, q, v, a), atol=1e-9)
        for ref in ("world", "local", "local_world_aligned"):
            np.testing.assert_allclose(ld.jacobian(mod, q, "tool", ref), ld.jacobian(std, q, "tool", ref), atol=1e-12)


# ------------------------------------------------------------------ against Pinocchio
def pin_model(links, convention, base, tool, gravity=(0, 0, -9.81)):
    """Pinocchio model written by hand from the DH table (RZ / PZ joints, SE3 placements)."""
    pin = pytest.importorskip("pinocchio")
    model = pin.Model()
    model.gravity.linear = np.asarray(gravity, dtype=float)
    parent, place = 0, base
    for i, L in enumerate(links, start=1):
        A = A_standard if convention == "standard" else A_modified
        S = A(L.theta, L.d, L.a, L.alpha)                       # link transform at q = 0
        jm = pin.JointModelRZ() if L.kind == "revolute" else pin.JointModelPZ()
        if convention == "standard":
            jplace, F = place, S          # joint i at DH frame i-1; DH frame i = joint frame * S
        else:
            jplace, F = place @ S, np.eye(4)
        jid = model.addJoint(parent, jm, pin.SE3(jplace[:3, :3], jplace[:3, 3]), f"j{i}")
        R, p = F[:3, :3], F[:3, 3]
        model.appendBodyToJoint(jid, pin.Inertia(L.mass, R @ L.com + p, R @ L.inertia @ R.T), pin.SE3.Identity())
        model.addFrame(pin.Frame(f"link{i}", jid, pin.SE3(R, p), pin.FrameType.OP_FRAME))
        parent, place = jid, (F if convention == "standard" else np.eye(4))
    Tt = place @ tool
    model.addFrame(pin.Frame("tool", parent, pin.SE3(Tt[:3, :3], Tt[:3, 3]), pin.FrameType.OP_FRAME))
    model.armature[:] = [L.armature for L in links]
    return model


CASES = [("puma560", "standard"), ("stanford", "standard"), ("scara", "standard"), ("cartesian", "standard"),
         ("random_rrprp", "standard"), ("random_rrprp", "modified"), ("random_r6", "modified")]


def case_links(name):
    if name == "random_rrprp":
        return random_links(("revolute", "revolute", "prismatic", "revolute", "prismatic"), 11)
    if name == "random_r6":
        return random_links(("revolute",) * 6, 12)
    return table(ARMS[name])


@pytest.mark.parametrize("name,convention", CASES)
def test_against_pinocchio(name, convention):
    pin = pytest.importorskip("pinocchio")
    links = case_links(name)
    base, tool = random_pose(), random_pose()
    gravity = (0.5, -1.0, -9.81)
    model = dh.from_dh(links, convention=convention, base=base, tool=tool, gravity=gravity)
    pm = pin_model(links, convention, base, tool, gravity)
    pd = pm.createData()
    refs = {"world": pin.WORLD, "local": pin.LOCAL, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
    for q in random_q(model, 4):
        v, a = RNG.normal(size=model.nv), RNG.normal(size=model.nv)
        scale = 1.0 + np.abs(pin.rnea(pm, pd, q, v, a)).max()
        np.testing.assert_allclose(ld.rnea(model, q, v, a), pin.rnea(pm, pd, q, v, a), rtol=0, atol=1e-9 * scale)
        M = pin.crba(pm, pd, q)
        M = np.triu(M) + np.triu(M, 1).T
        np.testing.assert_allclose(ld.crba(model, q), M, rtol=0, atol=1e-9 * (1 + np.abs(M).max()))
        np.testing.assert_allclose(ld.aba(model, q, v, a), pin.aba(pm, pd, q, v, a), rtol=1e-9, atol=1e-9)
        pin.framesForwardKinematics(pm, pd, q)
        for f in ["tool"] + [f"link{i}" for i in range(1, len(links) + 1)]:
            fid = pm.getFrameId(f)
            np.testing.assert_allclose(ld.frame_pose(model, q, f), pd.oMf[fid].homogeneous, atol=1e-12)
            for ref, pref in refs.items():
                Jp = pin.computeFrameJacobian(pm, pd, q, fid, pref)
                np.testing.assert_allclose(ld.jacobian(model, q, f, ref), Jp, atol=1e-9)


def test_armature_on_mass_matrix_diagonal():
    for fn in (dh.puma560, dh.stanford_arm):
        with_a, without = fn(), fn(armature=False)
        links = table(fn)
        q = random_q(with_a)[0]
        np.testing.assert_allclose(ld.crba(with_a, q) - ld.crba(without, q), np.diag([L.armature for L in links]),
                                   atol=1e-12)
    links = random_links(("revolute", "prismatic", "revolute"), 3)
    arm = np.array([L.armature for L in links])
    assert (arm > 0).all()
    q = RNG.normal(size=3)
    for conv in ("standard", "modified"):
        m1 = dh.from_dh(links, convention=conv)
        m0 = dh.from_dh([dh.DHLink(**{**L.__dict__, "armature": 0.0}) for L in links], convention=conv)
        np.testing.assert_allclose(ld.crba(m1, q) - ld.crba(m0, q), np.diag(arm), atol=1e-12)


def test_puma560_known_values():
    """Corke's toolbox: p560.gravload(qz) = [0, 37.4837, 0.2489, 0, 0, 0] (gravity -z, no pedestal)."""
    model = dh.puma560()
    np.testing.assert_allclose(ld.generalized_gravity(model, np.zeros(6)), [0, 37.4837, 0.2489, 0, 0, 0], atol=1e-4)
    # qz: the arm is an L, tool at x = a2 + a3-ish, y = -d3, z = d4 (standard Puma geometry)
    np.testing.assert_allclose(ld.frame_pose(model, np.zeros(6), "tool")[:3, 3], [0.4521, -0.15005, 0.4318], atol=1e-12)
    assert model.nq == 6 and np.allclose(np.degrees(model.upper), [160, 225, 45, 170, 100, 266])
    assert np.allclose(np.degrees(model.lower), [-160, -45, -225, -110, -100, -266])   # Wang and Chen 1991


def test_q_zero_is_table_offset_and_prismatic_variable():
    model = dh.stanford_arm()
    links = table(dh.stanford_arm)
    q = np.array([0.1, -0.2, 0.5, 0.3, 0.4, -0.5])
    frames, _ = chain(links, q, "standard", np.eye(4), np.eye(4))
    # joint 3 is prismatic: link3 moves by dq3 along z2
    q2 = q.copy()
    q2[2] += 0.25
    d = ld.frame_pose(model, q2, "link3")[:3, 3] - ld.frame_pose(model, q, "link3")[:3, 3]
    np.testing.assert_allclose(d, 0.25 * frames[2][:3, 2], atol=1e-12)


def test_from_dh_validation():
    with pytest.raises(ValueError, match="convention"):
        dh.from_dh([dh.DHLink(a=1)], convention="craig")
    with pytest.raises(ValueError, match="links"):
        dh.from_dh([])
    with pytest.raises(TypeError, match=r"links\[0\]"):
        dh.from_dh([(1, 0, 0, 0)])
    with pytest.raises(ValueError, match="kind"):
        dh.DHLink(kind="spherical")
    with pytest.raises(ValueError, match="inertia"):
        dh.DHLink(inertia=np.eye(2))
    with pytest.raises(ValueError, match="base"):
        dh.from_dh([dh.DHLink(a=1)], base=np.eye(3))
    with pytest.raises(ValueError, match="tool"):
        dh.from_dh([dh.DHLink(a=1)], tool=2 * np.eye(4))


def test_a_dh_table_prints_as_a_table():
    from linkdyn.models.dh import puma560_links
    text = ld.models.dh_table(puma560_links())
    lines = text.splitlines()
    assert len(lines) == 2 + 6 + 1 and "alpha [deg]" in lines[0]
    assert lines[3].split()[:3] == ["2", "0.4318", "0"] and "-45 .. 225" in lines[3]
    assert repr(puma560_links()[1]).startswith("DHLink(a=0.4318, alpha=0, d=0")
    with pytest.raises(ValueError, match="convention"):
        ld.models.dh_table(puma560_links(), convention="craig")


# ------------------------------------------------------------------ the table kept on the model
def test_a_dh_built_model_prints_its_table():
    links = random_links(("revolute", "prismatic", "revolute"), 7)
    for conv in ("standard", "modified"):
        model = dh.from_dh(links, convention=conv)
        assert model.dh_convention == conv and len(model.dh_links) == 3
        assert model.dh_table() == ld.models.dh_table(links, conv)
        assert model.dh_table(degrees=False) == ld.models.dh_table(links, conv, degrees=False)
    links[0].a = 99.0                                    # the model keeps its own copy
    assert "99" not in model.dh_table()
    puma = dh.puma560(pedestal=True)
    assert puma.dh_table() == ld.models.dh_table(dh.puma560_links(pedestal=True))
    assert puma.dh_table().splitlines()[2].split()[:4] == ["1", "0", "90", "0.672"]
    b = ld.ModelBuilder("not_dh")
    b.add_body("b", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.1))
    assert b.build().dh_links is None
    with pytest.raises(ValueError, match="Denavit-Hartenberg"):
        b.build().dh_table()


# ------------------------------------------------------------------ the PUMA 560's parameter sets
#: Corke's Robotics Toolbox Puma560 drives (Armstrong, Khatib and Burdick 1986), at the motor
TOOLBOX_G = (-62.6111, 107.815, -53.7063, 76.0364, 71.923, 76.686)
TOOLBOX_JM = (200e-6, 200e-6, 200e-6, 33e-6, 33e-6, 33e-6)
TOOLBOX_B = (1.48e-3, 0.817e-3, 1.38e-3, 71.2e-6, 82.6e-6, 36.7e-6)
TOOLBOX_TC = ((0.395, -0.435), (0.126, -0.071), (0.132, -0.105), (11.2e-3, -16.9e-3), (9.26e-3, -14.5e-3),
              (3.96e-3, -10.5e-3))


def toolbox_friction(j, qd):
    """The toolbox's Link.friction: -|G| (B |G| q' + Tc+ or Tc-), the torque friction adds."""
    G = abs(TOOLBOX_G[j])
    tc = TOOLBOX_TC[j][0] if qd > 0 else (TOOLBOX_TC[j][1] if qd < 0 else 0.0)
    return -G * (TOOLBOX_B[j] * G * qd + tc)


def test_puma560_pedestal_moves_the_frames_not_the_dynamics():
    flat, high, half = dh.puma560(), dh.puma560(pedestal=True), dh.puma560(pedestal=0.5)
    q = random_q(flat)[0]
    v, a = RNG.normal(size=6), RNG.normal(size=6)
    for m, h in ((high, 0.672), (half, 0.5)):
        dz = ld.frame_pose(m, q, "tool")[:3, 3] - ld.frame_pose(flat, q, "tool")[:3, 3]
        np.testing.assert_allclose(dz, [0, 0, h], atol=1e-12)
        np.testing.assert_allclose(ld.rnea(m, q, v, a), ld.rnea(flat, q, v, a), atol=1e-10)
    np.testing.assert_allclose(ld.generalized_gravity(high, np.zeros(6)), [0, 37.4837, 0.2489, 0, 0, 0], atol=1e-4)
    assert dh.puma560_links(pedestal=True)[0].d == 0.672 and dh.puma560_links()[0].d == 0.0
    with pytest.raises(TypeError, match="pedestal"):
        dh.puma560(pedestal="tall")


def test_puma560_friction_is_the_toolbox_friction_seen_at_the_link():
    """friction=True: viscous B G^2 exactly, and Coulomb friction the symmetric part of the toolbox's
    asymmetric one, |G| (Tc+ - Tc-) / 2 (what sign(q') can carry); the armature is Jm G^2.  The
    defaults have no friction, as before."""
    plain, rough = dh.puma560(), dh.puma560(friction=True)
    G = np.array(TOOLBOX_G)
    np.testing.assert_allclose(np.asarray(rough.armature), np.array(TOOLBOX_JM) * G ** 2, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(rough.damping), np.array(TOOLBOX_B) * G ** 2, rtol=1e-12)
    assert rough.damping[0] == pytest.approx(5.8018, abs=1e-4)     # 1.48e-3 x 62.6111^2
    assert not np.any(plain.damping) and not np.any(plain.friction)
    q = random_q(plain)[0]
    a = RNG.normal(size=6)
    for qd in (0.7, -1.3):
        v = np.full(6, qd)
        tau_f = ld.rnea(rough, q, v, a) - ld.rnea(plain, q, v, a)    # the torque the joints' friction takes
        for j in range(6):
            viscous = -G[j] ** 2 * TOOLBOX_B[j] * qd
            symmetric = 0.5 * (toolbox_friction(j, qd) - toolbox_friction(j, -qd))
            assert -tau_f[j] == pytest.approx(symmetric, rel=1e-12)
            # what is left out: the asymmetric offset, the same in both directions
            offset = toolbox_friction(j, qd) - symmetric
            assert offset == pytest.approx(-abs(G[j]) * sum(TOOLBOX_TC[j]) / 2, rel=1e-12)
            assert -tau_f[j] - viscous == pytest.approx(-abs(G[j]) * (TOOLBOX_TC[j][0] - TOOLBOX_TC[j][1]) / 2
                                                       * np.sign(qd), rel=1e-12)
