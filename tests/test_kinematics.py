"""Kinematics: frame Jacobians in the three references, frame velocities and accelerations,
J'v, point and joint Jacobians, centre of mass, forward kinematics and frame poses, all
against finite differences along linkdyn.integrate, and against Pinocchio (twin trees)."""
import numpy as np
import pytest

import linkdyn as ld
from conftest import (assert_close, fd, fd_t, needs_pin, random_q, random_state,
                      twists_from_pose_derivative)

try:
    import pinocchio as pin
except ImportError:  # pragma: no cover
    pin = None

REFS = ("world", "local", "local_world_aligned")
FD_TOL = 1e-6


def _frames(model):
    """Frames to test: the user frame, the first and last bodies, a merged fixed body, a joint name."""
    out = ["tip", model.body_names[1], model.body_names[-1]]
    merged = [n for n in model.frame_names if n not in model.body_names and n != "tip"]
    out += merged[:1]
    out.append(model.joint_names[-1])
    return list(dict.fromkeys(out))


def _pose_twists(model, q, v, frame):
    """Spatial velocities (local, world, lwa) of ``frame`` moving along integrate(q, v, t)."""
    T = ld.frame_pose(model, q, frame)
    Td = fd(lambda x: ld.frame_pose(model, x, frame), model, q, v)
    return twists_from_pose_derivative(T, Td)


def _blockdiag_R(model, q, frame):
    R = ld.frame_pose(model, q, frame)[:3, :3]
    X = np.zeros((6, 6))
    X[:3, :3] = X[3:, 3:] = R
    return X


# ---------------------------------------------------------------------------------------
# the helper itself: a known rigid motion
def test_twists_from_pose_derivative_on_a_known_motion():
    """A frame rotating about world z at rate w through the point c: world twist [c x ... ]."""
    w, c, R0 = 0.7, np.array([1.0, 2.0, 0.5]), ld.spatial.exp3([0.3, -0.2, 0.9])
    p0 = np.array([0.4, -1.0, 2.0])

    def pose(t):
        Rz = ld.spatial.rotz(w * t)
        T = np.eye(4)
        T[:3, :3] = Rz @ R0
        T[:3, 3] = c + Rz @ (p0 - c)
        return T
    tw = twists_from_pose_derivative(pose(0.0), fd_t(pose))
    wv = np.array([0.0, 0.0, w])
    assert_close(tw["world"], np.concatenate([-np.cross(wv, c), wv]), 1e-8, "world twist")
    assert_close(tw["local_world_aligned"], np.concatenate([np.cross(wv, p0 - c), wv]), 1e-8, "lwa twist")
    assert_close(tw["local"], np.concatenate([R0.T @ np.cross(wv, p0 - c), R0.T @ wv]), 1e-8, "local twist")


# ---------------------------------------------------------------------------------------
# Jacobians
def test_jacobian_columns_are_pose_derivatives(tree):
    q = random_q(tree, np.random.default_rng(0))
    for frame in _frames(tree):
        Js = {ref: ld.jacobian(tree, q, frame, reference=ref) for ref in REFS}
        for ref in REFS:
            assert Js[ref].shape == (6, tree.nv)
        for k, e in enumerate(np.eye(tree.nv)):
            tw = _pose_twists(tree, q, e, frame)
            for ref in REFS:
                assert_close(Js[ref][:, k], tw[ref], FD_TOL, f"{frame} {ref} column {k}")


def test_jacobian_default_reference_is_world(tree):
    q = random_q(tree, np.random.default_rng(1))
    assert_close(ld.jacobian(tree, q, "tip"), ld.jacobian(tree, q, "tip", reference="world"), 0.0, "default")


def test_jacobian_of_the_world_frame_is_zero(tree):
    q = random_q(tree, np.random.default_rng(1))
    for ref in REFS:
        assert np.abs(ld.jacobian(tree, q, "world", reference=ref)).max() == 0.0


def test_jacobian_references_are_related_by_the_frame_pose(tree):
    """J_local = X_f^-1 J_world and J_lwa = blockdiag(R, R) J_local."""
    q = random_q(tree, np.random.default_rng(2))
    T = ld.frame_pose(tree, q, "tip")
    R, p = T[:3, :3], T[:3, 3]
    Jw, Jl, Ja = (ld.jacobian(tree, q, "tip", reference=r) for r in REFS)
    Xinv = np.zeros((6, 6))
    Xinv[:3, :3], Xinv[:3, 3:], Xinv[3:, 3:] = R.T, -R.T @ ld.spatial.skew(p), R.T
    assert_close(Jl, Xinv @ Jw, 1e-12, "local vs world")
    assert_close(Ja, _blockdiag_R(tree, q, "tip") @ Jl, 1e-12, "lwa vs local")


@pytest.mark.parametrize("seed", [0, 1])
def test_frame_velocity_is_jacobian_times_v(tree, seed):
    q, v, _ = random_state(tree, np.random.default_rng(seed))
    for frame in _frames(tree):
        tw = _pose_twists(tree, q, v, frame)
        for ref in REFS:
            fv = ld.frame_velocity(tree, q, v, frame, reference=ref)
            assert_close(fv, ld.jacobian(tree, q, frame, reference=ref) @ v, 1e-12, f"{frame} {ref} J v")
            assert_close(fv, tw[ref], FD_TOL, f"{frame} {ref} pose derivative")
    assert_close(ld.frame_velocity(tree, q, v, "tip"), ld.frame_velocity(tree, q, v, "tip", "local"), 0.0,
                 "default reference is local")


@pytest.mark.parametrize("seed", [0, 1])
def test_jacobian_dot_times_v_is_derivative_of_jacobian(tree, seed):
    q, v, _ = random_state(tree, np.random.default_rng(seed))
    for frame in _frames(tree):
        for ref in REFS:
            want = fd(lambda x: ld.jacobian(tree, x, frame, reference=ref) @ v, tree, q, v)
            got = ld.jacobian_dot_times_v(tree, q, v, frame, reference=ref)
            assert_close(got, want, FD_TOL, f"{frame} {ref}")
    assert_close(ld.jacobian_dot_times_v(tree, q, v, "tip"),
                 ld.jacobian_dot_times_v(tree, q, v, "tip", reference="local_world_aligned"), 0.0,
                 "default reference")


@pytest.mark.parametrize("seed", [0, 1])
def test_frame_acceleration_is_J_a_plus_Jdot_v(tree, seed):
    q, v, a = random_state(tree, np.random.default_rng(seed))
    for frame in _frames(tree):
        for ref in REFS:
            J = ld.jacobian(tree, q, frame, reference=ref)
            Jdv = ld.jacobian_dot_times_v(tree, q, v, frame, reference=ref)
            classical = ref == "local_world_aligned"
            acc = ld.frame_acceleration(tree, q, v, a, frame, reference=ref, classical=classical)
            assert_close(acc, J @ a + Jdv, 1e-10, f"{frame} {ref}")
            # x'' by finite differences of the frame velocity along the trajectory
            want = fd_t(lambda t: ld.jacobian(tree, ld.integrate(tree, q, v, t), frame, reference=ref) @ (v + t * a))
            assert_close(acc, want, FD_TOL, f"{frame} {ref} finite differences")


def test_frame_acceleration_spatial_vs_classical(tree):
    """classical only changes local_world_aligned: the spatial acceleration there is the local
    one rotated to the world, the classical one adds w x v to its linear part."""
    q, v, a = random_state(tree, np.random.default_rng(3))
    for ref in ("world", "local"):
        assert_close(ld.frame_acceleration(tree, q, v, a, "tip", ref, classical=True),
                     ld.frame_acceleration(tree, q, v, a, "tip", ref, classical=False), 0.0, ref)
    loc = ld.frame_acceleration(tree, q, v, a, "tip", "local")
    spatial = ld.frame_acceleration(tree, q, v, a, "tip", "local_world_aligned", classical=False)
    assert_close(spatial, _blockdiag_R(tree, q, "tip") @ loc, 1e-12, "spatial lwa")
    vel = ld.frame_velocity(tree, q, v, "tip", "local_world_aligned")
    classical = ld.frame_acceleration(tree, q, v, a, "tip", "local_world_aligned", classical=True)
    assert_close(classical[:3], spatial[:3] + np.cross(vel[3:], vel[:3]), 1e-12, "classical linear")
    assert_close(classical[3:], spatial[3:], 1e-12, "classical angular")
    assert_close(ld.frame_acceleration(tree, q, v, a, "tip"), loc, 0.0, "default: local, spatial")


def test_point_jacobian_is_point_velocity(tree):
    rng = np.random.default_rng(4)
    q = random_q(tree, rng)
    for frame in _frames(tree)[:3]:
        point = rng.standard_normal(3)
        Jp = ld.point_jacobian(tree, q, frame, point)
        assert Jp.shape == (3, tree.nv)

        def x(qq):
            T = ld.frame_pose(tree, qq, frame)
            return T[:3, :3] @ point + T[:3, 3]
        for k, e in enumerate(np.eye(tree.nv)):
            assert_close(Jp[:, k], fd(x, tree, q, e), FD_TOL, f"{frame} column {k}")
        # the origin of the frame: the linear rows of the local_world_aligned Jacobian
        assert_close(ld.point_jacobian(tree, q, frame),
                     ld.jacobian(tree, q, frame, "local_world_aligned")[:3], 1e-12, "origin")


def test_joint_jacobians_are_world_jacobians_of_the_bodies(tree):
    q = random_q(tree, np.random.default_rng(5))
    Jall = ld.joint_jacobians(tree, q)
    for d in range(tree.nv):
        body = tree.body_names[tree.dof_body[d]]
        assert_close(Jall[:, d], ld.jacobian(tree, q, body, "world")[:, d], 1e-12, f"dof {d}")


def test_joint_jacobians_are_pose_derivatives(tree):
    """Column d: the world twist of the body moved by dof d (finite differences)."""
    q = random_q(tree, np.random.default_rng(5))
    Jall = ld.joint_jacobians(tree, q)
    assert Jall.shape == (6, tree.nv)
    for d, e in enumerate(np.eye(tree.nv)):
        body = tree.body_names[tree.dof_body[d]]
        assert_close(Jall[:, d], _pose_twists(tree, q, e, body)["world"], FD_TOL, f"dof {d}")


# ---------------------------------------------------------------------------------------
# centre of mass
def _com_by_hand(model, q):
    kin = ld.forward_kinematics(model, q)
    mc, M = np.zeros(3), 0.0
    for i in range(1, model.nbody):
        I6 = model.inertia[i]
        m = I6[0, 0]
        c = np.array([I6[5, 1], I6[3, 2], I6[4, 0]]) / m          # the block m [c]x
        mc += m * (kin.p[i] + kin.R[i] @ c)
        M += m
    return mc / M


def test_center_of_mass_by_hand(tree):
    for seed in range(3):
        q = random_q(tree, np.random.default_rng(seed))
        assert_close(ld.center_of_mass(tree, q), _com_by_hand(tree, q), 1e-12, "com")


def test_center_of_mass_of_a_known_body():
    b = ld.ModelBuilder("one", gravity=(0, 0, -9.81))
    b.add_body("base", "world", ld.FreeFlyer(), inertia=ld.Inertia(2.0, [0.1, -0.2, 0.3], np.eye(3)))
    b.add_body("arm", "base", ld.Revolute("z"), placement=[1.0, 0, 0],
               inertia=ld.Inertia(1.0, [0.5, 0, 0], np.eye(3)))
    model = b.build()
    q = ld.neutral(model)
    q[:3] = [1.0, 2.0, 3.0]
    q[7] = np.pi / 2          # the arm points along +y
    c_base = np.array([1.1, 1.8, 3.3])
    c_arm = np.array([2.0, 2.5, 3.0])
    assert_close(ld.center_of_mass(model, q), (2 * c_base + c_arm) / 3, 1e-14, "com")
    assert_close(ld.potential_energy(model, q), 9.81 * (2 * 3.3 + 3.0), 1e-14, "U")


def test_com_jacobian_is_com_derivative(tree):
    q = random_q(tree, np.random.default_rng(6))
    Jc = ld.com_jacobian(tree, q)
    assert Jc.shape == (3, tree.nv)
    for k, e in enumerate(np.eye(tree.nv)):
        assert_close(Jc[:, k], fd(lambda x: ld.center_of_mass(tree, x), tree, q, e), FD_TOL, f"column {k}")


# ---------------------------------------------------------------------------------------
# forward kinematics, frame poses
@pytest.mark.parametrize("seed", [0, 1])
def test_forward_kinematics_velocities_are_pose_derivatives(tree, seed):
    q, v, a = random_state(tree, np.random.default_rng(seed))
    kin = ld.forward_kinematics(tree, q, v, a)
    assert kin.R.shape == (tree.nbody, 3, 3) and kin.v.shape == kin.a.shape == (tree.nbody, 6)
    assert np.abs(kin.v[0]).max() == 0.0 and np.abs(kin.a[0]).max() == 0.0
    kin_v = ld.forward_kinematics(tree, q, v)
    assert kin_v.a is None and ld.forward_kinematics(tree, q).v is None
    assert_close(kin_v.v, kin.v, 0.0, "v without a")

    def poses(x):
        k = ld.forward_kinematics(tree, x)
        T = np.zeros((tree.nbody, 4, 4))
        T[:, :3, :3], T[:, :3, 3], T[:, 3, 3] = k.R, k.p, 1.0
        return T
    T0, Td = poses(q), fd(poses, tree, q, v)
    for i in range(1, tree.nbody):
        assert_close(kin.v[i], twists_from_pose_derivative(T0[i], Td[i])["local"], FD_TOL, f"v of body {i}")
        R = kin.R[i]
        assert_close(R.T @ R, np.eye(3), 1e-12, f"R of body {i}")
        assert abs(np.linalg.det(R) - 1) < 1e-12
    # accelerations: the derivative of the body velocities along q' = v, v' = a
    acc = fd_t(lambda t: ld.forward_kinematics(tree, ld.integrate(tree, q, v, t), v + t * a).v)
    assert_close(kin.a, acc, FD_TOL, "body accelerations")


def test_forward_kinematics_at_neutral_composes_the_placements():
    b = ld.ModelBuilder("chain")
    R1 = ld.spatial.exp3([0.1, 0.2, 0.3])
    b.add_body("a", "world", ld.Revolute("z"), placement=(R1, [1.0, 0, 0]), inertia=ld.Inertia(1.0))
    b.add_body("b", "a", ld.Prismatic("x"), placement=[0, 2.0, 0], inertia=ld.Inertia(1.0))
    model = b.build()
    q = ld.neutral(model)
    kin = ld.forward_kinematics(model, q)
    assert_close(kin.R[1], R1, 1e-15, "R a")
    assert_close(kin.p[2], [1.0, 0, 0] + R1 @ [0, 2.0, 0], 1e-15, "p b")
    q = np.array([np.pi / 2, 0.5])
    kin = ld.forward_kinematics(model, q)
    Rz = ld.spatial.rotz(np.pi / 2)
    assert_close(kin.R[2], R1 @ Rz, 1e-15, "R b")
    assert_close(kin.p[2], [1.0, 0, 0] + R1 @ Rz @ [0.5, 2.0, 0], 1e-15, "p b")


def test_frame_pose_of_joint_link_and_user_frames(tree):
    q = random_q(tree, np.random.default_rng(7))
    kin = ld.forward_kinematics(tree, q)
    for i in range(1, tree.nbody):
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = kin.R[i], kin.p[i]
        assert_close(ld.frame_pose(tree, q, tree.body_names[i]), T, 1e-15, f"link {tree.body_names[i]}")
        assert_close(ld.frame_pose(tree, q, tree.joint_names[i - 1]), T, 1e-15, f"joint {tree.joint_names[i - 1]}")
        assert_close(kin.pose(tree.body_names[i]), T, 0.0, "Kinematics.pose")
    assert_close(ld.frame_pose(tree, q, "world"), np.eye(4), 0.0, "world")
    # a user frame (or a merged fixed body) rides on its body at a constant placement
    for name in tree.frame_names:
        f = tree.frame_id(name)
        b = tree.frame_body[f]
        Tb = np.eye(4)
        Tb[:3, :3], Tb[:3, 3] = kin.R[b], kin.p[b]
        Tf = np.eye(4)
        Tf[:3, :3], Tf[:3, 3] = tree.frame_R[f], tree.frame_p[f]
        assert_close(ld.frame_pose(tree, q, name), Tb @ Tf, 1e-14, name)
        assert_close(ld.frame_pose(tree, q, f), Tb @ Tf, 1e-14, f"frame index {f}")


def test_frame_pose_of_a_fixed_joint_name():
    b = ld.ModelBuilder("fixed")
    b.add_body("a", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3)))
    R = ld.spatial.exp3([0.4, 0.0, -0.2])
    b.add_body("sensor", "a", ld.Fixed(), placement=(R, [0.3, 0.1, 0.0]), joint_name="weld")
    model = b.build()
    q = np.array([0.7])
    Ta = ld.frame_pose(model, q, "a")
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, [0.3, 0.1, 0.0]
    assert_close(ld.frame_pose(model, q, "sensor"), Ta @ T, 1e-15, "link")
    assert_close(ld.frame_pose(model, q, "weld"), Ta @ T, 1e-15, "fixed joint name")
    assert_close(Ta[:3, :3], ld.spatial.rotz(0.7), 1e-15, "revolute")


# ---------------------------------------------------------------------------------------
# stacks
N = 4


def test_kinematics_batch_equals_loop(tree):
    rng = np.random.default_rng(8)
    states = [random_state(tree, rng) for _ in range(N)]
    Q, V, A = (np.stack(x) for x in zip(*states))
    kin = ld.forward_kinematics(tree, Q, V, A)
    assert kin.R.shape == (N, tree.nbody, 3, 3) and kin.a.shape == (N, tree.nbody, 6)
    poses = kin.pose("tip")
    assert poses.shape == (N, 4, 4)
    assert_close(ld.frame_pose(tree, Q, "tip"), poses, 1e-14, "frame_pose stack")
    C, Jc, Jall = ld.center_of_mass(tree, Q), ld.com_jacobian(tree, Q), ld.joint_jacobians(tree, Q)
    for n in range(N):
        k1 = ld.forward_kinematics(tree, Q[n], V[n], A[n])
        for attr in ("R", "p", "v", "a"):
            assert_close(getattr(kin, attr)[n], getattr(k1, attr), 1e-15, f"{attr} {n}")
        assert_close(poses[n], k1.pose("tip"), 1e-15, f"pose {n}")
        assert_close(C[n], ld.center_of_mass(tree, Q[n]), 1e-15, f"com {n}")
        assert_close(Jc[n], ld.com_jacobian(tree, Q[n]), 1e-15, f"com jacobian {n}")
        assert_close(Jall[n], ld.joint_jacobians(tree, Q[n]), 1e-15, f"joint jacobians {n}")
    # a shared velocity
    kin = ld.forward_kinematics(tree, Q, V[0])
    for n in range(N):
        assert_close(kin.v[n], ld.forward_kinematics(tree, Q[n], V[0]).v, 1e-15, f"shared v {n}")


def test_frame_functions_batch_equal_loop(tree):
    rng = np.random.default_rng(9)
    states = [random_state(tree, rng) for _ in range(N)]
    Q, V, A = (np.stack(x) for x in zip(*states))
    for ref in REFS:
        Js = ld.jacobian(tree, Q, "tip", reference=ref)
        FV = ld.frame_velocity(tree, Q, V, "tip", reference=ref)
        FA = ld.frame_acceleration(tree, Q, V, A, "tip", reference=ref)
        JD = ld.jacobian_dot_times_v(tree, Q, V, "tip", reference=ref)
        assert Js.shape == (N, 6, tree.nv) and FV.shape == FA.shape == JD.shape == (N, 6)
        for n in range(N):
            assert_close(Js[n], ld.jacobian(tree, Q[n], "tip", reference=ref), 1e-15, f"J {ref} {n}")
            assert_close(FV[n], ld.frame_velocity(tree, Q[n], V[n], "tip", reference=ref), 1e-15, f"v {n}")
            assert_close(FA[n], ld.frame_acceleration(tree, Q[n], V[n], A[n], "tip", reference=ref), 1e-15,
                         f"a {n}")
            assert_close(JD[n], ld.jacobian_dot_times_v(tree, Q[n], V[n], "tip", reference=ref), 1e-15, f"Jdv {n}")
    P = ld.point_jacobian(tree, Q, "tip", [0.1, 0.2, 0.3])
    for n in range(N):
        assert_close(P[n], ld.point_jacobian(tree, Q[n], "tip", [0.1, 0.2, 0.3]), 1e-15, f"point {n}")


# ---------------------------------------------------------------------------------------
# Pinocchio twins
_PIN_REFS = {"world": "WORLD", "local": "LOCAL", "local_world_aligned": "LOCAL_WORLD_ALIGNED"}


@needs_pin
def test_twin_frame_poses_match_pinocchio(twin):
    tw = twin
    q = random_q(tw.ld, np.random.default_rng(0))
    pin.framesForwardKinematics(tw.pin, tw.data, tw.q_pin(q))
    for name, fid in tw.frames.items():
        assert_close(ld.frame_pose(tw.ld, q, name), tw.data.oMf[fid].homogeneous, 1e-12, name)
    for name in tw.ld.joint_names:      # a joint's frame is its child body's
        body = "b" + name[1:]
        assert_close(ld.frame_pose(tw.ld, q, name), tw.data.oMf[tw.frames[body]].homogeneous, 1e-12, name)


@needs_pin
def test_twin_center_of_mass_matches_pinocchio(twin):
    tw = twin
    q = random_q(tw.ld, np.random.default_rng(1))
    qp = tw.q_pin(q)
    assert_close(ld.center_of_mass(tw.ld, q), pin.centerOfMass(tw.pin, tw.data, qp), 1e-12, "com")
    Jc = pin.jacobianCenterOfMass(tw.pin, tw.data, qp)
    assert_close(ld.com_jacobian(tw.ld, q), Jc[:, np.argsort(tw.perm)], 1e-12, "com jacobian")


@needs_pin
def test_twin_body_velocities_match_pinocchio(twin):
    tw = twin
    q, v, a = random_state(tw.ld, np.random.default_rng(2))
    pin.forwardKinematics(tw.pin, tw.data, tw.q_pin(q), tw.v_pin(v), tw.v_pin(a))
    kin = ld.forward_kinematics(tw.ld, q, v, a)
    for i in range(1, tw.ld.nbody):
        jid = tw.pin.getJointId(tw.ld.joint_names[i - 1])
        assert_close(kin.v[i], tw.data.v[jid].vector, 1e-12, f"v {i}")
        assert_close(kin.a[i], tw.data.a[jid].vector, 1e-12, f"a {i}")


@needs_pin
def test_twin_frame_jacobians_match_pinocchio(twin):
    tw = twin
    q, v, a = random_state(tw.ld, np.random.default_rng(3))
    qp, vp, ap = tw.q_pin(q), tw.v_pin(v), tw.v_pin(a)
    inv = np.argsort(tw.perm)
    pin.computeJointJacobians(tw.pin, tw.data, qp)
    pin.forwardKinematics(tw.pin, tw.data, qp, vp, ap)
    pin.updateFramePlacements(tw.pin, tw.data)
    for name, fid in tw.frames.items():
        for ref in REFS:
            rf = getattr(pin.ReferenceFrame, _PIN_REFS[ref])
            Jp = pin.getFrameJacobian(tw.pin, tw.data, fid, rf)[:, inv]
            assert_close(ld.jacobian(tw.ld, q, name, reference=ref), Jp, 1e-12, f"{name} {ref} J")
            assert_close(ld.frame_velocity(tw.ld, q, v, name, reference=ref),
                         pin.getFrameVelocity(tw.pin, tw.data, fid, rf).vector, 1e-12, f"{name} {ref} v")
            assert_close(ld.frame_acceleration(tw.ld, q, v, a, name, reference=ref),
                         pin.getFrameAcceleration(tw.pin, tw.data, fid, rf).vector, 1e-12, f"{name} {ref} a")
            assert_close(ld.frame_acceleration(tw.ld, q, v, a, name, reference=ref, classical=True)[:3],
                         pin.getFrameClassicalAcceleration(tw.pin, tw.data, fid, rf).linear
                         if ref == "local_world_aligned" else
                         pin.getFrameAcceleration(tw.pin, tw.data, fid, rf).linear, 1e-12, f"{name} {ref} classical")
