"""Analytical derivatives of frame kinematics (Carpentier and Mansard 2018) against

* central finite differences on the manifold (q moved by ``integrate``) on conftest's random trees
  of every joint kind, fixed and floating, for the three references, and for the classical
  acceleration of ``frame_acceleration(..., classical=True)``;
* the frame Jacobians: dv/dv = da/da = ``jacobian(model, q, frame, reference)``, and the pose
  derivative d log(T(q)^-1 T(q exp(dq)))/ddq = the local Jacobian;
* Pinocchio's getFrameVelocityDerivatives / getFrameAccelerationDerivatives on real robots loaded
  from the same URDF (fixed and floating base).
"""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import linkdyn as ld
from conftest import TREES, assert_close, build_tree, random_state
from linkdyn.model.io.urdf import URDFWarning

REFS = ("local", "world", "local_world_aligned")
H = 1e-6
RTOL_FD = 1e-6          # central differences, relative to the largest entry (at least 1)
RTOL = 1e-9             # analytical against analytical


def frames_of(model, rng, n=3):
    """The last frame (a leaf, often a user frame) and a few others at random."""
    names = list(model.frame_names[1:]) or list(model.frame_names)
    pick = {names[-1]} | {names[k] for k in rng.integers(len(names), size=n - 1)}
    return sorted(pick)


def fd_q(f, model, q):
    """(6, nv): column k = d/de f(integrate(q, e e_k)) at e = 0, central differences."""
    eye = np.eye(model.nv)
    return np.stack([(f(ld.integrate(model, q, H * e)) - f(ld.integrate(model, q, -H * e))) / (2 * H) for e in eye],
                    axis=1).reshape(6, model.nv)


def fd_x(f, x):
    """(6, n): central differences of f in the plain vector x."""
    eye = np.eye(len(x))
    return np.stack([(f(x + H * e) - f(x - H * e)) / (2 * H) for e in eye], axis=1).reshape(6, len(x))


# ---------------------------------------------------------------- finite differences
@pytest.mark.parametrize("name", list(TREES))
def test_velocity_derivatives_fd(name):
    model = build_tree(name)
    rng = np.random.default_rng(1)
    q, v, _ = random_state(model, rng)
    for frame in frames_of(model, rng):
        for ref in REFS:
            dq, dv = ld.frame_velocity_derivatives(model, q, v, frame, ref)
            assert dq.shape == dv.shape == (6, model.nv)
            what = f"{frame} {ref}"
            assert_close(dq, fd_q(lambda qq: ld.frame_velocity(model, qq, v, frame, ref), model, q), RTOL_FD,
                         f"dv/dq {what}")
            assert_close(dv, fd_x(lambda vv: ld.frame_velocity(model, q, vv, frame, ref), v), RTOL_FD, f"dv/dv {what}")
            assert_close(dv, ld.jacobian(model, q, frame, ref), RTOL, f"dv/dv = J {what}")


@pytest.mark.parametrize("name", list(TREES))
def test_acceleration_derivatives_fd(name):
    model = build_tree(name)
    rng = np.random.default_rng(2)
    q, v, a = random_state(model, rng)
    for frame in frames_of(model, rng):
        for ref in REFS:
            for classical in ((False, True) if ref == "local_world_aligned" else (False,)):
                def acc(qq=q, vv=v, aa=a):
                    return ld.frame_acceleration(model, qq, vv, aa, frame, ref, classical)
                dq, dv, da = ld.frame_acceleration_derivatives(model, q, v, a, frame, ref, classical)
                assert dq.shape == dv.shape == da.shape == (6, model.nv)
                what = f"{frame} {ref} classical={classical}"
                assert_close(dq, fd_q(lambda qq: acc(qq=qq), model, q), RTOL_FD, f"da/dq {what}")
                assert_close(dv, fd_x(lambda vv: acc(vv=vv), v), RTOL_FD, f"da/dv {what}")
                # affine in a: differences with a unit step are exact
                da_want = np.stack([acc(aa=a + e) - acc() for e in np.eye(model.nv)], axis=1).reshape(6, model.nv)
                assert_close(da, da_want, 1e-9, f"da/da {what}")
                assert_close(da, ld.jacobian(model, q, frame, ref), RTOL, f"da/da = J {what}")


@pytest.mark.parametrize("name", ["chain4-free", "chain4-spherical", "chain4-universal", "chain4-planar",
                                  "mixed-floating-s4", "branchy-25"])
def test_pose_derivative_is_local_jacobian(name):
    """d/de log(T(q)^-1 T(integrate(q, e e_k))) at e = 0 (SE(3) logarithm, [v; w]) is the
    frame Jacobian in the local frame, for every frame."""
    model = build_tree(name)
    rng = np.random.default_rng(3)
    q = random_state(model, rng)[0]
    for frame in frames_of(model, rng):
        T0 = ld.frame_pose(model, q, frame)
        Ti = np.linalg.inv(T0)

        def log_rel(qq):
            T = Ti @ ld.frame_pose(model, qq, frame)
            return ld.spatial.log6(T[:3, :3], T[:3, 3])
        D = ld.frame_pose_derivative(model, q, frame)
        assert D.shape == (6, model.nv)
        assert_close(D, fd_q(log_rel, model, q), RTOL_FD, f"d log/dq {frame}")
        assert_close(D, ld.jacobian(model, q, frame, "local"), 0.0, f"= J local {frame}")


def test_zero_columns_and_arguments():
    """Dofs that do not support the frame have zero columns; references and frames are checked."""
    model = build_tree("branchy-25")
    rng = np.random.default_rng(4)
    q, v, a = random_state(model, rng)
    frame = model.frame_names[-1]
    J = ld.jacobian(model, q, frame, "world")
    support = np.zeros(model.nv, dtype=bool)
    b = model.frame_body[model.frame_id(frame)]
    while b > 0:
        support[model.jnt_vadr[b]:model.jnt_vadr[b] + model.jnt_nv[b]] = True
        b = model.parent[b]
    for ref in REFS:
        for D in (*ld.frame_velocity_derivatives(model, q, v, frame, ref),
                  *ld.frame_acceleration_derivatives(model, q, v, a, frame, ref)):
            assert np.all(D[:, ~support] == 0.0)
    assert np.any(J[:, support] != 0.0)
    with pytest.raises(ValueError, match="reference"):
        ld.frame_velocity_derivatives(model, q, v, frame, "body")
    with pytest.raises(ValueError, match="reference"):
        ld.frame_acceleration_derivatives(model, q, v, a, frame, "body")
    with pytest.raises(KeyError):
        ld.frame_velocity_derivatives(model, q, v, "no such frame")


# ---------------------------------------------------------------- Pinocchio
try:
    import pinocchio as pin
    from linkdyn.models import ROBOTS, example_robot_data_dir
    example_robot_data_dir()
except (ImportError, FileNotFoundError):  # pragma: no cover
    pin = None

PIN_ROBOTS = [("panda", False), ("solo", True)]


@functools.lru_cache(maxsize=None)
def pin_pair(name, floating):
    path = str(example_robot_data_dir() / ROBOTS[name][0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        model = ld.load_urdf(path, floating_base=floating, mimic=False)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    assert pm.nv == model.nv and pm.nq == model.nq and pm.njoints == model.nbody
    for j in range(1, pm.njoints):                   # the same joint order: v compares entry by entry
        assert model.v_slice(pm.names[j]).start == pm.joints[j].idx_v
    return model, pm


def origin_motion_term(y, J_lwa):
    """[y_ang x dp_k; 0] for every column k, dp_k = J_lwa[:3, k] the velocity of the frame origin:
    the part of d(y in local_world_aligned)/dq that comes from the motion of the frame origin."""
    out = np.zeros_like(J_lwa)
    out[:3] = np.cross(y[3:], J_lwa[:3], axisb=0, axisc=0)
    return out


@pytest.mark.skipif(pin is None, reason="pinocchio or example-robot-data not installed")
@pytest.mark.parametrize("name,floating", PIN_ROBOTS)
def test_vs_pinocchio(name, floating):
    """Pinocchio's derivatives in "local" and "world" equal ours.  In "local_world_aligned",
    Pinocchio 4.1 returns T_p d(y_world)/dq, the world derivative carried to the frame origin p as
    if p stood still: it lacks [y_ang x dp/dq_k; 0] (it is not the derivative of its own
    getFrameVelocity / getFrameAcceleration in that reference: checked here by central
    differences of those), ours is the plain derivative of the reference's 6-vector."""
    model, pm = pin_pair(name, floating)
    pd = pm.createData()
    pin_refs = {"local": pin.LOCAL, "world": pin.WORLD, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
    frames = [f for f in model.frame_names[1:] if pm.existFrame(f)]
    assert len(frames) >= 5
    rng = np.random.default_rng(5)
    for _ in range(2):
        q = ld.random_configuration(model, rng)
        v, a = rng.standard_normal((2, model.nv))
        pin.computeForwardKinematicsDerivatives(pm, pd, q, v, a)
        pin.updateFramePlacements(pm, pd)
        for frame in frames:
            fid = pm.getFrameId(frame)
            assert_close(ld.frame_pose(model, q, frame), pd.oMf[fid].homogeneous, RTOL, f"pose {frame}")
            J_lwa = pin.getFrameJacobian(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)
            for ref, pref in pin_refs.items():
                what = f"{name} {frame} {ref}"
                lwa = ref == "local_world_aligned"
                vel = pin.getFrameVelocity(pm, pd, fid, pref).vector
                acc = pin.getFrameAcceleration(pm, pd, fid, pref).vector
                want = [np.array(x) for x in pin.getFrameVelocityDerivatives(pm, pd, fid, pref)]
                got = ld.frame_velocity_derivatives(model, q, v, frame, ref)
                assert_close(got[0], want[0] + (origin_motion_term(vel, J_lwa) if lwa else 0.0), RTOL,
                             f"dv/dq {what}")
                assert_close(got[1], want[1], RTOL, f"dv/dv {what}")
                want = [np.array(x) for x in pin.getFrameAccelerationDerivatives(pm, pd, fid, pref)]
                got = ld.frame_acceleration_derivatives(model, q, v, a, frame, ref)
                assert_close(got[0], want[1] + (origin_motion_term(acc, J_lwa) if lwa else 0.0), RTOL,
                             f"da/dq {what}")
                assert_close(got[1], want[2], RTOL, f"da/dv {what}")
                assert_close(got[2], want[3], RTOL, f"da/da {what}")
            assert_close(ld.frame_pose_derivative(model, q, frame), pin.getFrameJacobian(pm, pd, fid, pin.LOCAL),
                         RTOL, f"pose derivative {name} {frame}")


@pytest.mark.skipif(pin is None, reason="pinocchio or example-robot-data not installed")
@pytest.mark.parametrize("name,floating", PIN_ROBOTS)
def test_local_world_aligned_vs_pinocchio_differences(name, floating):
    """In "local_world_aligned" ours are the derivatives of Pinocchio's own frame velocity and
    acceleration (central differences along pin.integrate, Pinocchio alone)."""
    model, pm = pin_pair(name, floating)
    pd = pm.createData()
    rng = np.random.default_rng(6)
    q = ld.random_configuration(model, rng)
    v, a = rng.standard_normal((2, model.nv))
    frame = model.frame_names[-1]
    fid = pm.getFrameId(frame)

    def motion(qq):
        pin.forwardKinematics(pm, pd, qq, v, a)
        pin.updateFramePlacements(pm, pd)
        return np.concatenate([pin.getFrameVelocity(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED).vector,
                               pin.getFrameAcceleration(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED).vector])
    eye = np.eye(model.nv)
    want = np.stack([(motion(pin.integrate(pm, q, H * e)) - motion(pin.integrate(pm, q, -H * e))) / (2 * H)
                     for e in eye], axis=1)
    dv_dq, _ = ld.frame_velocity_derivatives(model, q, v, frame, "local_world_aligned")
    da_dq, _, _ = ld.frame_acceleration_derivatives(model, q, v, a, frame, "local_world_aligned")
    assert_close(dv_dq, want[:6], RTOL_FD, "dv/dq")
    assert_close(da_dq, want[6:], RTOL_FD, "da/dq")


def test_stack_and_bad_input():
    """A stack gives its states one by one (a single state next to a stack is shared); a bad
    quaternion is reported with the state's index."""
    model = build_tree("mixed-floating-s3")
    rng = np.random.default_rng(7)
    states = [random_state(model, rng) for _ in range(3)]
    Q, V, A = (np.stack(x) for x in zip(*states))
    frame = model.frame_names[-1]
    for ref in REFS:
        got_v = ld.frame_velocity_derivatives(model, Q, V, frame, ref)
        got_a = ld.frame_acceleration_derivatives(model, Q, V, A[0], frame, ref)
        assert all(x.shape == (3, 6, model.nv) for x in (*got_v, *got_a))
        for k, (q, v, _) in enumerate(states):
            for g, w in zip(got_v, ld.frame_velocity_derivatives(model, q, v, frame, ref)):
                np.testing.assert_array_equal(g[k], w)
            for g, w in zip(got_a, ld.frame_acceleration_derivatives(model, q, v, A[0], frame, ref)):
                np.testing.assert_array_equal(g[k], w)
    bad = Q.copy()
    bad[1, 3:7] *= 2.0                      # the free joint's quaternion, not of unit norm
    with pytest.raises(ValueError, match="state 1 of the stack.*norm"):
        ld.frame_velocity_derivatives(model, bad, V, frame)
    with pytest.raises(ValueError, match="norm"):
        ld.frame_acceleration_derivatives(model, bad[1], V[1], A[1], frame)
