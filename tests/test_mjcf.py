"""Tests of the MJCF import (linkdyn.model.io.mjcf).

Two independent oracles read the same text: MuJoCo itself (body and site poses, the joint-space
inertia mj_fullM, inverse dynamics mj_inverse, geom-derived mass properties, the residual of
its equality constraints) and Pinocchio's own MJCF parser (crba, rnea, frame poses).  Both are
optional (importorskip); hand computations (scipy rotations, invariant hinge anchors, closed
forms) check what does not need them.  Loop closures are checked against linkdyn's built-in
four-bar and against MuJoCo's constraint residuals; malformed and hostile files must raise
MJCFError naming the element.
"""
import os
import warnings

import numpy as np
import pytest

from linkdyn.model import GearWarning
from scipy.spatial.transform import Rotation

import linkdyn as ld
from linkdyn.model import joints as J
from linkdyn.model.io.mjcf import (MAX_INCLUDE_DEPTH, MJCFError, MJCFWarning, load_mjcf, parse_mjcf, q_to_qpos,
                                   qpos_to_q, qvel_to_v, v_to_qvel)

TOL = 1e-10


@pytest.fixture(scope="module")
def mj():
    return pytest.importorskip("mujoco")


@pytest.fixture(scope="module")
def pin():
    return pytest.importorskip("pinocchio")


def rng_states(model, seed, n=3):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield ld.random_configuration(model, rng), rng.standard_normal(model.nv), rng.standard_normal(model.nv)


def assert_close(got, want, tol=TOL, what=""):
    got, want = np.asarray(got, float), np.asarray(want, float)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    err = np.abs(got - want).max() if got.size else 0.0
    scale = max(1.0, np.abs(want).max() if want.size else 0.0)
    assert err <= tol * scale, f"{what}: max error {err:.3e} > {tol:.1e} * {scale:.3g}"


# --------------------------------------------------------------------------------------------
# the oracles
class MuJoCo:
    """The same text in MuJoCo, with the conversions between its coordinates and linkdyn's."""

    def __init__(self, mj, text, model, constraints=False):
        self.mj, self.ld = mj, model
        self.m = mj.MjModel.from_xml_string(text)
        if not constraints:
            self.m.opt.disableflags |= mj.mjtDisableBit.mjDSBL_CONSTRAINT
        else:
            self.m.opt.disableflags |= mj.mjtDisableBit.mjDSBL_CONTACT
        self.d = mj.MjData(self.m)
        assert (self.m.nq, self.m.nv) == (len(q_to_qpos(model, ld.neutral(model))),
                                          len(v_to_qvel(model, ld.neutral(model), np.zeros(model.nv))))

    def T(self, q):
        """dqvel/dv: the free joints' linear velocities are in the world frame in MuJoCo."""
        return np.column_stack([v_to_qvel(self.ld, q, e) for e in np.eye(self.ld.nv)])

    def forward(self, q, v=None):
        self.d.qpos[:] = q_to_qpos(self.ld, q)
        self.d.qvel[:] = 0.0 if v is None else v_to_qvel(self.ld, q, v)
        self.mj.mj_forward(self.m, self.d)

    def M(self, q):
        """linkdyn's mass matrix from MuJoCo's: T^T M_mj T."""
        self.forward(q)
        M = np.zeros((self.m.nv, self.m.nv))
        if hasattr(self.d, "qM"):                  # MuJoCo < 4: mj_fullM(m, dst, qM)
            self.mj.mj_fullM(self.m, M, self.d.qM)
        else:                                      # MuJoCo 4: mj_fullM(m, d, dst)
            self.mj.mj_fullM(self.m, self.d, M)
        T = self.T(q)
        return T.T @ M @ T

    def inverse(self, q, v, a):
        """linkdyn's rnea(q, v, a) from mj_inverse: qacc = d/dt (T v) = T a + T' v, tau = T^T qfrc."""
        T = self.T(q)
        acc = T @ a
        for i in range(1, self.ld.nbody):
            if self.ld.jnt_type[i] == J.FREE and not self.ld.is_virtual[i]:
                qa, va = self.ld.jnt_qadr[i], self.ld.jnt_vadr[i]
                R = Rotation.from_quat(q[qa + 3:qa + 7]).as_matrix()
                k = np.flatnonzero(T[:, va])[0]          # the free joint's first qvel index
                acc[k:k + 3] += R @ np.cross(v[va + 3:va + 6], v[va:va + 3])
        self.forward(q, v)
        self.d.qacc[:] = acc
        self.mj.mj_inverse(self.m, self.d)
        return T.T @ self.d.qfrc_inverse

    def body_pose(self, name):
        k = self.mj.mj_name2id(self.m, self.mj.mjtObj.mjOBJ_BODY, name)
        return self.d.xmat[k].reshape(3, 3), self.d.xpos[k]

    def site_pose(self, name):
        k = self.mj.mj_name2id(self.m, self.mj.mjtObj.mjOBJ_SITE, name)
        return self.d.site_xmat[k].reshape(3, 3), self.d.site_xpos[k]

    def equality_residual(self, q):
        self.forward(q)
        rows = self.d.efc_type == self.mj.mjtConstraint.mjCNSTR_EQUALITY
        return self.d.efc_pos[rows]


def canonical(model, q):
    """q with every quaternion's w >= 0 (q and -q are the same rotation)."""
    q = np.array(q, dtype=float)
    for o in model._quat_starts:
        if q[o + 3] < 0:
            q[o:o + 4] *= -1
    return q


def check_against_mujoco(mj, text, model, seed=0, n=3, sites=()):
    """Joint layout, names, qpos0, limits and joint terms read by MuJoCo; then at random states
    M, inverse dynamics and the pose of every body and of the given sites."""
    sim = MuJoCo(mj, text, model)
    m = sim.m
    _, info = parse_mjcf(text, return_info=True)
    assert_close(canonical(model, info.q0), canonical(model, qpos_to_q(model, m.qpos0)), 1e-14, what="qpos0")
    movable = [i for i in range(1, model.nbody) if not model.is_virtual[i]]
    kinds = {J.REVOLUTE: mj.mjtJoint.mjJNT_HINGE, J.PRISMATIC: mj.mjtJoint.mjJNT_SLIDE,
             J.SPHERICAL: mj.mjtJoint.mjJNT_BALL, J.FREE: mj.mjtJoint.mjJNT_FREE}
    assert [int(kinds[model.jnt_type[i]]) for i in movable] == [int(t) for t in m.jnt_type]
    for k, i in enumerate(movable):
        if m.joint(k).name:
            assert model.joint_names[i - 1] == m.joint(k).name
        if model.jnt_type[i] in (J.REVOLUTE, J.PRISMATIC):
            a = model.jnt_qadr[i]
            lim = m.jnt_range[k] if m.jnt_limited[k] else [-np.inf, np.inf]
            np.testing.assert_allclose([model.lower[a], model.upper[a]], lim, rtol=1e-15)
    keep = np.concatenate([np.arange(model.jnt_vadr[i], model.jnt_vadr[i] + model.jnt_nv[i]) for i in movable])
    for ours, theirs in ((model.armature, m.dof_armature), (model.damping, m.dof_damping),
                         (model.friction, m.dof_frictionloss)):
        assert_close(ours[keep], theirs, 0)
    bodies = [m.body(k).name for k in range(1, m.nbody)]
    for q, v, a in rng_states(model, seed, n):
        assert_close(ld.crba(model, q), sim.M(q), what="M vs mj_fullM")
        # MuJoCo's frictionloss is a constraint (disabled here), linkdyn's friction a torque
        tau = ld.rnea(model, q, v, a) - model.friction * np.sign(v)
        assert_close(tau, sim.inverse(q, v, a), what="rnea vs mj_inverse")
        sim.forward(q)
        for name in bodies:
            R, p = sim.body_pose(name)
            T = ld.frame_pose(model, q, name)
            assert_close(T[:3, :3], R, what=f"R of body {name}")
            assert_close(T[:3, 3], p, what=f"p of body {name}")
        for name in sites:
            R, p = sim.site_pose(name)
            T = ld.frame_pose(model, q, name)
            assert_close(T[:3, :3], R, what=f"R of site {name}")
            assert_close(T[:3, 3], p, what=f"p of site {name}")
    return sim


def pin_q(model, pm, q):
    """Pinocchio's q for linkdyn's q.  Pinocchio 4 builds hinge and slide joints so that q is
    MuJoCo's qpos (ref included) as linkdyn does, so those coordinates are the same; it keeps
    the cut joints of loop closures apart.  Its free joint of a top-level body with a pose in
    the file gets a joint placement P (a translation; MuJoCo has none: qpos is the world
    pose), so its q is P^-1 X(q)."""
    out = []
    for i in range(1, model.nbody):
        if model.is_virtual[i]:
            continue
        qi = q[model.jnt_qadr[i]:model.jnt_qadr[i] + model.jnt_nq[i]]
        if model.jnt_type[i] == J.FREE:
            P = pm.jointPlacements[pm.getJointId(model.joint_names[i - 1])]
            X = Rotation.from_quat(qi[3:])
            out.extend(P.rotation.T @ (qi[:3] - P.translation))
            out.extend((Rotation.from_matrix(P.rotation).inv() * X).as_quat())
        else:
            out.extend(qi)
    return np.array(out)


def check_against_pinocchio(pin, tmp_path, text, seed=1, frames=(), n=3):
    path = tmp_path / "model.xml"
    path.write_text(text)
    model, info = load_mjcf(path, joint_friction=False, return_info=True)
    pm = pin.buildModelFromMJCF(str(path))
    pm.gravity.linear = model.gravity          # Pinocchio does not read <option gravity>
    pd = pm.createData()
    assert (pm.nv, pm.nq) == (model.nv, model.nq)
    for q, v, a in rng_states(model, seed, n):
        qp = pin_q(model, pm, q)
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert_close(ld.crba(model, q), Mp, what="M vs pin.crba")
        assert_close(ld.rnea(model, q, v, a), pin.rnea(pm, pd, qp, v, a), what="rnea vs pin.rnea")
        pin.framesForwardKinematics(pm, pd, qp)
        for name in frames:
            T = ld.frame_pose(model, q, name)
            assert_close(T, pd.oMf[pm.getFrameId(name)].homogeneous, what=f"pose of {name} vs Pinocchio")
    return model, info


# --------------------------------------------------------------------------------------------
# a pendulum with an offset hinge
PENDULUM = """
<mujoco model="pendulum">
  <compiler angle="degree" autolimits="true"/>
  <worldbody>
    <body name="pendulum" pos="0.1 -0.2 1.0" euler="10 -20 30">
      <joint name="hinge" type="hinge" axis="0.2 1 0.1" pos="0.05 0 0.4" range="-90 60" ref="15" armature="0.02"/>
      <inertial pos="0.02 0.01 -0.3" mass="1.7" diaginertia="0.05 0.04 0.012" euler="5 10 15"/>
      <site name="tip" pos="0 0 -0.6" quat="0.9 0.1 -0.2 0.3"/>
      <body name="bob" pos="0 0.1 -0.6" zaxis="1 0 1">
        <geom type="sphere" size="0.08"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_pendulum_structure_and_hand_checks():
    model, info = parse_mjcf(PENDULUM, return_info=True)
    assert model.name == "pendulum"
    assert model.joint_names == ("hinge",)
    assert (model.nq, model.nv) == (1, 1)
    # the hinge is not at the body origin: a massless carrier at the anchor, the body a frame on it
    assert model.body_names == ("world", "pendulum::hinge")
    assert {"pendulum", "bob", "tip"} <= set(model.frame_names)
    # degrees: range in radians, q = qpos (ref 15 degrees is the pose in the file)
    assert_close(model.lower, [np.radians(-90)])
    assert_close(model.upper, [np.radians(60)])
    assert_close(info.q0, [np.radians(15)])
    assert model.armature[0] == 0.02
    R_file = Rotation.from_euler("XYZ", [10, -20, 30], degrees=True).as_matrix()   # MuJoCo "xyz": moving axes
    T = ld.frame_pose(model, info.q0, "pendulum")
    assert_close(T[:3, :3], R_file, 1e-14)
    assert_close(T[:3, 3], [0.1, -0.2, 1.0], 1e-14)
    # the anchor point does not move, the body turns about the normalised axis through it
    def anchor(q):
        return (ld.frame_pose(model, q, "pendulum") @ [0.05, 0, 0.4, 1])[:3]
    a0 = anchor(info.q0)
    for th in (-1.0, 0.0, 0.7):
        assert_close(anchor(np.array([th])), a0, 1e-14)
        Rq = ld.frame_pose(model, np.array([th]), "pendulum")[:3, :3]
        axis = np.array([0.2, 1, 0.1]) / np.linalg.norm([0.2, 1, 0.1])
        assert_close(Rq, R_file @ Rotation.from_rotvec(axis * (th - info.q0[0])).as_matrix(), 1e-14)
    # bob: welded, its sphere's mass merged; zaxis (1, 0, 1): the smallest turn taking z there
    Rb = ld.frame_pose(model, info.q0, "bob")[:3, :3]
    assert_close(R_file.T @ Rb @ [0, 0, 1], np.array([1, 0, 1]) / np.sqrt(2), 1e-14)
    assert_close(R_file.T @ Rb @ [0, 1, 0], [0, 1, 0], 1e-14)
    assert model.total_mass == pytest.approx(1.7 + 1000 * 4 / 3 * np.pi * 0.08 ** 3, rel=1e-14)


def test_pendulum_against_mujoco(mj):
    model = parse_mjcf(PENDULUM)
    check_against_mujoco(mj, PENDULUM, model, sites=("tip",))


def test_pendulum_against_pinocchio(pin, tmp_path):
    check_against_pinocchio(pin, tmp_path, PENDULUM, frames=("pendulum", "bob", "tip"))


# --------------------------------------------------------------------------------------------
# a chain with ball joints, geom inertia, a free-floating body, several joints in one body
BALL_CHAIN = """
<mujoco model="ball_chain">
  <compiler angle="radian"/>
  <worldbody>
    <body name="l1" pos="0 0 1.5" axisangle="0.6 0.8 0 0.4">
      <joint name="b1" type="ball" armature="0.03"/>
      <geom type="capsule" size="0.04" fromto="0 0 0 0 0 -0.4"/>
      <body name="l2" pos="0 0 -0.4" quat="0.8 0.2 0.1 -0.3">
        <joint name="b2" type="ball" pos="0 0 0.02"/>
        <geom type="capsule" size="0.03" fromto="0 0 0 0.1 0 -0.35"/>
        <site name="l2_end" pos="0.1 0 -0.35" xyaxes="0 1 0 -1 0 0.2"/>
        <site name="l2_axis" type="capsule" size="0.01" fromto="0 0 0 0.1 0 -0.35"/>
        <body name="l3" pos="0.1 0 -0.35">
          <joint name="b3" type="ball" pos="0.01 0.02 0"/>
          <geom type="box" size="0.05 0.02 0.1" pos="0 0 -0.1"/>
          <geom type="sphere" size="0.05" pos="0 0 -0.25"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""

FLOATING = """
<mujoco model="floating">
  <compiler angle="radian"/>
  <option gravity="0.5 -0.3 -9.7"/>
  <worldbody>
    <body name="torso" pos="0.3 -0.2 1.1" quat="0.7 0.1 0.6 -0.2">
      <freejoint name="root"/>
      <geom type="box" size="0.2 0.1 0.05"/>
      <geom type="ellipsoid" size="0.05 0.08 0.1" pos="0.1 0 0.1"/>
      <site name="imu" pos="0.05 0.02 0.03" euler="0.1 0.2 0.3"/>
      <body name="arm" pos="0.2 0 0">
        <joint name="shoulder" axis="0 1 0" pos="0 0 0.02" range="-2 2" damping="0.4"/>
        <geom type="cylinder" size="0.03 0.15" pos="0.15 0 0" euler="0 1.5707963 0"/>
        <body name="hand" pos="0.3 0 0">
          <joint name="wrist" type="ball"/>
          <geom type="sphere" size="0.04"/>
        </body>
      </body>
      <body name="leg" pos="-0.2 0 -0.05">
        <joint name="hip" type="slide" axis="0 0 1" ref="0.05"/>
        <geom type="capsule" size="0.03 0.1"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""

MULTI_JOINT = """
<mujoco model="multi">
  <compiler angle="radian" autolimits="true"/>
  <worldbody>
    <body name="base" pos="0 0 0.5">
      <joint name="yaw" axis="0 0 1" pos="0.1 0 0" ref="0.3"/>
      <joint name="lift" type="slide" axis="0 0.6 0.8" ref="-0.1" range="-0.5 0.5"/>
      <joint name="pitch" axis="1 0 0" pos="0 0.2 -0.1" armature="0.05"/>
      <inertial pos="0.1 0.05 0" mass="2" fullinertia="0.03 0.04 0.05 0.001 -0.002 0.003"/>
      <body name="tool" pos="0.3 0 0" euler="0.3 0 0">
        <joint name="roll" axis="1 0 0" pos="0.05 0 0"/>
        <joint name="spin" type="ball" pos="0 0 0.05"/>
        <inertial pos="0.05 0 0" mass="0.5" diaginertia="0.002 0.003 0.004"/>
        <site name="tcp" pos="0.1 0 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


FRAMES = """
<mujoco model="frames">
  <compiler angle="radian"/>
  <worldbody>
    <frame pos="0.1 0 0.2" euler="0 0.3 0">
      <body name="f1" pos="0 0 0.5" euler="0.2 0 0">
        <frame pos="0.02 0.01 0" euler="0 0 0.7">
          <joint name="fj1" axis="1 0 0" pos="0 0.05 0" damping="0.1"/>
          <joint name="fj2" type="slide" axis="0 1 0" ref="0.02" range="-0.1 0.2"/>
          <inertial pos="0.1 0 0" quat="1 0.2 0 0" mass="1" diaginertia="0.01 0.02 0.025"/>
          <site name="fs" pos="0.1 0 0" zaxis="1 1 0"/>
        </frame>
        <site name="fromto_site" type="capsule" size="0.01" fromto="0 0 0 0.1 0.2 0.3"/>
        <body name="f2" pos="0.2 0 0">
          <frame euler="0.4 0 0"><frame pos="0 0 0.1"><joint name="fj3" type="ball" pos="0 0 0.05"/></frame></frame>
          <geom type="box" size="0.1 0.02 0.03" pos="0.1 0 0"/>
        </body>
      </body>
    </frame>
    <frame pos="0 1 0" euler="0.1 0.2 0.3">
      <body name="floater" pos="0.1 0 0" quat="-0.5 0.5 0.5 0.5">
        <freejoint name="float"/>
        <geom type="cylinder" size="0.05" fromto="0 0 0 0.1 0.1 0"/>
        <site name="floater_site" type="cylinder" size="0.01" fromto="0 0 0 0 0.2 0"/>
      </body>
    </frame>
  </worldbody>
</mujoco>
"""


def test_ball_chain_structure():
    model = parse_mjcf(BALL_CHAIN)
    assert model.joint_names == ("b1", "b2", "b3")
    assert [model.joints[model.joint_id(n)].kind for n in model.joint_names] == [J.SPHERICAL] * 3
    assert (model.nq, model.nv) == (12, 9)
    assert_close(model.armature[:3], [0.03] * 3)
    # ball anchors off the body origin get carriers; b1 is at the origin of l1 and l1 carries it
    assert model.body_names == ("world", "l1", "l2::b2", "l3::b3")


@pytest.mark.parametrize("text", [BALL_CHAIN, FLOATING, MULTI_JOINT, FRAMES],
                         ids=["ball_chain", "floating", "multi_joint", "frames"])
def test_against_mujoco(mj, text):
    model = parse_mjcf(text)
    sites = [el.split('"')[1] for el in text.split("<site name=")[1:]]
    check_against_mujoco(mj, text, model, seed=3, sites=sites)


# Pinocchio 4.1 leaves out the ref of a hinge inside a composite joint (several joints in one
# body; MuJoCo and linkdyn agree, see test_several_joints_in_one_body_compose_like_mujoco_by_hand):
# its multi-joint model here has no hinge ref
@pytest.mark.parametrize("text", [BALL_CHAIN, FLOATING, MULTI_JOINT.replace(' ref="0.3"', "")],
                         ids=["ball_chain", "floating", "multi_joint"])
def test_against_pinocchio(pin, tmp_path, text):
    model = parse_mjcf(text)
    # Pinocchio 4.1 ignores fromto on sites (l2_axis; MuJoCo and linkdyn agree, see test_against_mujoco)
    frames = [n for n in model.frame_names if n not in ("world", "l2_axis") and "::" not in n]
    check_against_pinocchio(pin, tmp_path, text, seed=4, frames=frames)


def test_floating_body_coordinates():
    model, info = parse_mjcf(FLOATING, return_info=True)
    assert model.joint_names == ("root", "shoulder", "wrist", "hip")
    assert model.joints[1].kind == J.FREE
    assert_close(model.gravity, [0.5, -0.3, -9.7], 0)
    assert_close(parse_mjcf(FLOATING, gravity=(0, 0, -1)).gravity, [0, 0, -1], 0)
    # q0: the free body's pose from the file ([x, y, z, w]), identity ball, the slide's ref
    qf = np.array([0.7, 0.1, 0.6, -0.2]) / np.linalg.norm([0.7, 0.1, 0.6, -0.2])
    sl = model.q_slice("root")
    assert_close(info.q0[sl], [0.3, -0.2, 1.1, *qf[1:], qf[0]], 1e-15)
    assert_close(info.q0[model.q_slice("wrist")], [0, 0, 0, 1], 0)
    assert info.q0[model.q_index("hip")] == 0.05
    T = ld.frame_pose(model, info.q0, "torso")
    assert_close(T[:3, :3], Rotation.from_quat([*qf[1:], qf[0]]).as_matrix(), 1e-14)
    # damping on the shoulder only; joint_friction=False drops it
    assert_close(model.damping, np.r_[np.zeros(6), 0.4, np.zeros(4)], 0)
    assert not parse_mjcf(FLOATING, joint_friction=False).damping.any()


def test_several_joints_in_one_body_compose_like_mujoco_by_hand():
    """base: hinge 'yaw' about z through (0.1, 0, 0), slide along (0, .6, .8), hinge 'pitch'
    about x through (0, .2, -.1); MuJoCo's rule: X = X_file * [p1 R1 -p1] [slide] [p3 R3 -p3],
    each joint measured from its ref."""
    model, info = parse_mjcf(MULTI_JOINT, return_info=True)
    assert model.joint_names == ("yaw", "lift", "pitch", "roll", "spin")
    assert_close(model.lower[model.q_index("lift")], -0.5, 0)

    def hom(R=np.eye(3), p=(0, 0, 0)):
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = R, p
        return T

    def about(axis, th, p):
        return hom(p=p) @ hom(Rotation.from_rotvec(np.asarray(axis) / np.linalg.norm(axis) * th).as_matrix()) @ \
            hom(p=-np.asarray(p))

    rng = np.random.default_rng(7)
    for _ in range(3):
        q = ld.random_configuration(model, rng)
        y, s, p = q[model.q_index("yaw")], q[model.q_index("lift")], q[model.q_index("pitch")]
        want = hom(p=[0, 0, 0.5]) @ about([0, 0, 1], y - 0.3, [0.1, 0, 0]) @ \
            hom(p=np.array([0, 0.6, 0.8]) * (s + 0.1)) @ about([1, 0, 0], p, [0, 0.2, -0.1])
        assert_close(ld.frame_pose(model, q, "base"), want, 1e-14)


# --------------------------------------------------------------------------------------------
# inertia from geoms
GEOMS = """
<mujoco model="geoms">
  <compiler angle="radian"/>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="ja" axis="0 1 0"/>
      <geom type="sphere" size="0.1" pos="0.1 0.2 0.3"/>
      <geom type="capsule" size="0.05 0.2" pos="0 0 -0.2" euler="0.3 0.2 0.1"/>
      <geom type="capsule" size="0.04" fromto="0 0 0 0.3 0.4 0" density="700"/>
      <geom type="cylinder" size="0.06" fromto="0 0 0 0 -0.2 0.1"/>
      <geom type="box" size="0.1 0.05 0.02" pos="0.2 0 0" quat="0.9 0 0.4 0.1" mass="1.5"/>
      <geom type="box" size="0.03" fromto="0 0 0 0.1 0.1 0.1"/>
      <geom type="ellipsoid" size="0.05 0.1 0.15" pos="-0.1 0 0" xyaxes="0 1 0 0 0 1"/>
      <geom type="ellipsoid" size="0.02" fromto="0 0 0 0 0 0.2"/>
      <geom type="sphere" size="0.3" group="6"/>
      <geom type="sphere" size="0.3" density="0"/>
      <body name="b" pos="0.5 0 0">
        <joint name="jb" axis="1 0 0"/>
        <geom type="cylinder" size="0.05 0.1" pos="0 0.1 0" zaxis="0 1 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_geom_inertia_against_mujoco(mj):
    model = parse_mjcf(GEOMS)
    m = mj.MjModel.from_xml_string(GEOMS)
    for name in ("a", "b"):
        k = m.body(name).id
        R = Rotation.from_quat(np.roll(m.body_iquat[k], -1)).as_matrix()
        want = ld.spatial.spatial_inertia(m.body_mass[k], m.body_ipos[k], R @ np.diag(m.body_inertia[k]) @ R.T)
        assert_close(model.inertia[model.body_id(name)], want, 1e-12, what=f"inertia of {name}")
    check_against_mujoco(mj, GEOMS, model, seed=5)


def test_geom_inertia_closed_forms():
    """Single geoms against textbook formulas (no oracle needed)."""
    def one(geom):
        text = f'<mujoco><compiler angle="radian"/><worldbody><body name="b"><joint/>{geom}</body></worldbody></mujoco>'
        I6 = parse_mjcf(text).inertia[1]
        return I6[0, 0], I6[3:, 3:]

    m, I = one('<geom type="sphere" size="0.2"/>')
    assert m == pytest.approx(1000 * 4 / 3 * np.pi * 0.008, rel=1e-14)
    assert_close(I, 0.4 * m * 0.04 * np.eye(3), 1e-14)
    m, I = one('<geom type="box" size="0.1 0.2 0.3" mass="6"/>')
    assert m == 6.0
    assert_close(I, np.diag([6 * (0.16 + 0.36), 6 * (0.04 + 0.36), 6 * (0.04 + 0.16)]) / 12, 1e-14)
    m, I = one('<geom type="cylinder" size="0.1 0.5" density="10"/>')
    assert m == pytest.approx(10 * np.pi * 0.01 * 1.0, rel=1e-14)
    assert_close(I, np.diag([m * (0.03 + 1.0) / 12, m * (0.03 + 1.0) / 12, m * 0.01 / 2]), 1e-14)
    # a capsule: its inertia about z is that of a cylinder plus a sphere of the same radius
    r, h, rho = 0.1, 0.3, 500.0
    m, I = one(f'<geom type="capsule" size="{r} {h / 2}" density="{rho}"/>')
    mc, ms = rho * np.pi * r * r * h, rho * 4 / 3 * np.pi * r ** 3
    assert m == pytest.approx(mc + ms, rel=1e-14)
    assert I[2, 2] == pytest.approx(mc * r * r / 2 + 0.4 * ms * r * r, rel=1e-13)
    # offset geom: parallel axis theorem
    m, I = one('<geom type="sphere" size="0.1" pos="0.3 0 0"/>')
    c = np.array([0.3, 0, 0])
    assert_close(I, 0.4 * m * 0.01 * np.eye(3) + m * (c @ c * np.eye(3) - np.outer(c, c)), 1e-13)


def test_inertiafromgeom_modes_and_mesh_warning():
    body = ('<body name="b"><joint/><inertial pos="0 0 0" mass="2" diaginertia="1 1 1"/>'
            '<geom type="sphere" size="0.1"/></body>')
    text = '<mujoco><compiler inertiafromgeom="{}"/><worldbody>' + body + '</worldbody></mujoco>'
    assert parse_mjcf(text.format("auto")).inertia[1, 0, 0] == 2.0
    assert parse_mjcf(text.format("true")).inertia[1, 0, 0] == pytest.approx(4.18879, rel=1e-5)
    no_inertial = '<mujoco><compiler inertiafromgeom="false"/><worldbody><body name="b"><joint/>' \
                  '<geom size="0.1"/></body><body name="c"><joint/><inertial pos="0 0 0" mass="1" ' \
                  'diaginertia="1 1 1"/></body></worldbody></mujoco>'
    assert parse_mjcf(no_inertial).inertia[1, 0, 0] == 0.0
    mesh = ('<mujoco><asset><mesh name="m" file="m.stl"/></asset><worldbody><body name="b"><joint/>'
            '<geom type="mesh" mesh="m"/><geom size="0.1"/></body></worldbody></mujoco>')
    with pytest.raises(MJCFError, match="without base_dir, so the mesh file 'm.stl' cannot be looked up"):
        parse_mjcf(mesh)
    # MuJoCo's own binary .msh format is read like STL: a missing one is an error naming it
    with pytest.raises(MJCFError, match="cannot read the mesh file .*m.msh.*no such file"):
        parse_mjcf(mesh.replace("m.stl", "m.msh"), base_dir=".")


@pytest.mark.parametrize("mode", ["legacy", "convex", "exact", "shell"])
def test_mesh_geoms_give_mujocos_mass_properties(mj, tmp_path, mode):
    """A body's inertia from a non-convex mesh geom (file and inline vertices, scale, refpos,
    refquat, geom pose, density or mass) equals what MuJoCo compiles, in every inertia mode."""
    from test_mesh_inertia import l_prism, write_stl
    V, F = l_prism()
    write_stl(tmp_path / "L.stl", V, F)
    verts = " ".join(f"{x:.17g}" for x in V.ravel())
    faces = " ".join(str(int(i)) for i in F.ravel())
    xml = f"""<mujoco><compiler meshdir="."/><asset>
      <mesh name="L" file="L.stl" scale="1 2 1.5" inertia="{mode}"/>
      <mesh name="Lr" file="L.stl" refpos="0.05 0 0.02" refquat="0.9 0.1 0.3 -0.2" inertia="{mode}"/>
      <mesh name="inline" vertex="{verts}" face="{faces}" inertia="{mode}"/></asset><worldbody>
      <body name="a" pos="0 0 1"><freejoint/><geom type="mesh" mesh="L" pos="0.1 0.2 0.3" euler="30 40 50" density="800"/>
        <geom type="sphere" size="0.05" pos="0.3 0 0"/></body>
      <body name="b" pos="1 0 1"><freejoint/><geom type="mesh" mesh="Lr" quat="0.5 0.5 0.5 0.5" mass="3"/></body>
      <body name="c" pos="2 0 1"><freejoint/><geom type="mesh" mesh="inline"/></body>
    </worldbody></mujoco>"""
    path = tmp_path / "scene.xml"
    path.write_text(xml)
    ref = mj.MjModel.from_xml_path(str(path))
    model = load_mjcf(path)
    for name in ("a", "b", "c"):
        bid = mj.mj_name2id(ref, mj.mjtObj.mjOBJ_BODY, name)
        R = Rotation.from_quat(ref.body_iquat[bid], scalar_first=True).as_matrix()
        want = ld.Inertia(ref.body_mass[bid], ref.body_ipos[bid], R @ np.diag(ref.body_inertia[bid]) @ R.T).matrix()
        got = model.inertia[model.body_id(name)]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9 * np.abs(want).max(), err_msg=f"{mode} {name}")


def test_mesh_geom_without_trimesh(tmp_path, monkeypatch):
    """STL, OBJ and MSH need no optional package; another format without trimesh is left out
    of the inertia with a warning naming the package it needs."""
    import builtins
    real_import = builtins.__import__

    def no_trimesh(name, *args, **kwargs):
        if name == "trimesh" or name.startswith("trimesh."):
            raise ImportError("no trimesh")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_trimesh)
    from test_mesh_inertia import l_prism, write_stl
    V, F = l_prism()
    write_stl(tmp_path / "m.stl", V, F)
    (tmp_path / "m.ply").write_bytes(b"ply\n")
    text = ('<mujoco><asset><mesh name="m" file="m.{}"/></asset><worldbody><body name="b"><joint/>'
            '<geom type="mesh" mesh="m" contype="0" conaffinity="0"/><geom size="0.1"/></body></worldbody></mujoco>')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = parse_mjcf(text.format("stl"), base_dir=tmp_path)
    assert m.inertia[1, 0, 0] > 4.18879 + 1.0        # the sphere's 4.19 kg and the prism's
    with pytest.warns(MJCFWarning, match=r"m.ply: reading .ply mesh files needs trimesh, which is not installed"):
        m = parse_mjcf(text.format("ply"), base_dir=tmp_path)
    assert m.inertia[1, 0, 0] == pytest.approx(4.18879, rel=1e-5)


def test_a_missing_or_special_mesh_file_is_an_error(tmp_path):
    text = ('<mujoco><asset><mesh name="m" file="{}"/></asset><worldbody><body name="b"><joint/>'
            '<geom type="mesh" mesh="m"/></body></worldbody></mujoco>')
    with pytest.raises(MJCFError, match="cannot read the mesh file .*gone.stl"):
        parse_mjcf(text.format("gone.stl"), base_dir=tmp_path)
    os.mkfifo(tmp_path / "fifo.stl")
    with pytest.raises(MJCFError, match="FIFO"):
        parse_mjcf(text.format("fifo.stl"), base_dir=tmp_path)


def test_compiler_mass_bounds(mj, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)        # MuJoCo 4 logs a deprecation of settotalmass to MUJOCO_LOG.TXT
    text = ('<mujoco><compiler boundmass="0.5" boundinertia="0.01" settotalmass="{}"/><worldbody>'
            '<body name="a"><joint/><geom size="0.01"/><body name="b" pos="1 0 0"><joint/>'
            '<inertial pos="0.1 0 0" mass="2" diaginertia="0.05 0.04 0.001"/></body></body></worldbody></mujoco>')
    for total in (-1, 7.0):
        model = parse_mjcf(text.format(total))
        m = mj.MjModel.from_xml_string(text.format(total))
        for name in ("a", "b"):
            k, i = m.body(name).id, model.body_id(name)
            assert model.inertia[i, 0, 0] == pytest.approx(m.body_mass[k], rel=1e-12)
            assert_close(np.sort(np.linalg.eigvalsh(model.inertia[i, 3:, 3:] - ld.spatial.spatial_inertia(
                m.body_mass[k], m.body_ipos[k], np.zeros((3, 3)))[3:, 3:])), np.sort(m.body_inertia[k]), 1e-12)


# --------------------------------------------------------------------------------------------
# default classes
DEFAULTS = """
<mujoco model="defaults">
  <compiler angle="radian"/>
  <default>
    <joint damping="0.3" armature="0.01" axis="0 1 0"/>
    <geom type="capsule" size="0.04" density="500"/>
    <site pos="0 0 0.1"/>
    <default class="arm">
      <joint range="-1 1" damping="0.7"/>
      <default class="wrist">
        <joint axis="1 0 0" frictionloss="0.2"/>
        <geom type="box" size="0.03 0.03 0.03"/>
        <site euler="0 0 1"/>
      </default>
    </default>
    <default class="light">
      <geom density="100"/>
    </default>
  </default>
  <worldbody>
    <body name="b0" childclass="arm">
      <joint name="j0"/>
      <geom fromto="0 0 0 0 0 -0.3"/>
      <site name="s0"/>
      <body name="b1" pos="0 0 -0.3">
        <joint name="j1" class="wrist"/>
        <geom class="wrist"/>
        <geom class="light" fromto="0 0 0 0.2 0 0"/>
        <site name="s1" class="wrist" pos="0.1 0 0"/>
        <body name="b2" childclass="wrist" pos="0.2 0 0">
          <joint name="j2" axis="0 0 1" damping="0"/>
          <geom pos="0.05 0 0"/>
          <frame pos="0.1 0 0" euler="0 0.5 0" childclass="light">
            <geom fromto="0 0 0 0 0 0.1"/>
            <site name="s2"/>
            <body name="b3" pos="0.1 0 0">
              <joint name="j3"/>
              <geom size="0.02" fromto="0 0 0 0.1 0 0"/>
            </body>
          </frame>
        </body>
      </body>
    </body>
    <body name="b4" pos="1 0 0">
      <joint name="j4" type="slide"/>
      <geom size="0.04 0.1"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_default_classes_by_hand():
    model = parse_mjcf(DEFAULTS)
    jid = model.joint_id
    ax = {n: model.jnt_axis[jid(n)] for n in model.joint_names}
    assert_close(ax["j0"], [0, 1, 0], 0)            # main
    assert_close(ax["j1"], [1, 0, 0], 0)            # class wrist
    assert_close(ax["j2"], [0, 0, 1], 0)            # own attribute wins over childclass wrist
    assert_close(ax["j3"], [0, 1, 0], 0)            # childclass light (from main)
    assert_close(ax["j4"], [0, 1, 0], 0)            # main, slide
    assert_close(model.damping, [0.7, 0.7, 0.0, 0.3, 0.3], 0)
    assert_close(model.friction, [0.0, 0.2, 0.2, 0.0, 0.0], 0)
    assert_close(model.armature, [0.01] * 5, 0)
    np.testing.assert_array_equal(model.lower, [-1, -1, -1, -np.inf, -np.inf])
    # sites: s0 main pos, s1 wrist orientation with its own pos, s2 in the rotated frame
    assert_close(ld.frame_pose(model, np.zeros(5), "s1")[:3, :3] @ [1, 0, 0], [np.cos(1), np.sin(1), 0], 1e-14)
    # the masses: b4 a capsule of the main class (density 500), b1's box of class wrist (density 500)
    # and its capsule of class light (density 100)
    def cap(r, h, rho):
        return rho * np.pi * r * r * (2 * h + 4 / 3 * r)
    assert model.inertia[model.body_id("b4"), 0, 0] == pytest.approx(cap(0.04, 0.1, 500), rel=1e-14)
    assert model.inertia[model.body_id("b1"), 0, 0] == pytest.approx(500 * 0.06 ** 3 + cap(0.04, 0.1, 100), rel=1e-14)
    # the main class gives the b4 capsule a radius only: its half-length is missing
    with pytest.raises(MJCFError, match=r"<geom> in body 'b4'.*capsule needs 2 positive size"):
        parse_mjcf(DEFAULTS.replace('<geom size="0.04 0.1"/>', "<geom/>"))


def test_default_classes_against_mujoco(mj):
    text = DEFAULTS
    model = parse_mjcf(text)
    m = mj.MjModel.from_xml_string(text)
    assert_close(model.damping, m.dof_damping, 0)
    assert_close(model.friction, m.dof_frictionloss, 0)
    assert_close(model.armature, m.dof_armature, 0)
    assert_close(model.jnt_axis[1:], m.jnt_axis, 1e-15)
    lim = m.jnt_limited.astype(bool)
    assert_close(model.lower[lim], m.jnt_range[lim, 0], 0)
    check_against_mujoco(mj, text, model, seed=8, sites=("s0", "s1", "s2"))


# --------------------------------------------------------------------------------------------
# orientations and angle units
def orientations_text(eulerseq="xyz", degree=False):
    c = (180 / np.pi) if degree else 1.0
    return f"""
<mujoco model="orient">
  <compiler angle="{'degree' if degree else 'radian'}" eulerseq="{eulerseq}"/>
  <worldbody>
    <body name="by_quat" pos="0.1 0.2 0.3" quat="0.5 -0.3 0.2 0.8">
      <joint name="j1" axis="1 2 3" range="{-1.2 * c!r} {0.9 * c!r}" ref="{0.2 * c!r}"/>
      <geom size="0.05"/>
      <site name="s_euler" pos="0.1 0 0" euler="{0.3 * c!r} {-0.4 * c!r} {1.1 * c!r}"/>
      <body name="by_axisangle" pos="0 0.3 0" axisangle="1 -1 2 {0.7 * c!r}">
        <joint name="j2" type="ball" pos="0 0 0.05"/>
        <geom type="box" size="0.05 0.1 0.02"/>
        <site name="s_zaxis_down" zaxis="0 0 -1"/>
        <body name="by_euler" pos="0.2 0 0" euler="{0.5 * c!r} {0.6 * c!r} {-0.7 * c!r}">
          <joint name="j3" type="slide" axis="0 1 1"/>
          <geom type="capsule" size="0.02 0.1"/>
          <site name="s_xyaxes" xyaxes="0 1 0 -1 0.3 0"/>
          <body name="by_xyaxes" pos="0 0 0.1" xyaxes="1 1 0 -1 1 1">
            <joint name="j4" axis="0 0 1" pos="0.02 0 0"/>
            <geom type="cylinder" size="0.03 0.05"/>
            <site name="s_axisangle" axisangle="0 0 1 {np.pi / 2 * c!r}"/>
            <body name="by_zaxis" pos="0 0.1 0" zaxis="0.3 -0.2 0.9">
              <joint name="j5" axis="1 0 0"/>
              <inertial pos="0.01 0 0" quat="0.1 0.9 0.3 0" mass="0.3" diaginertia="0.001 0.002 0.0025"/>
              <site name="s_quat" quat="0 0 0 1"/>
            </body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


ORIENT_SITES = ("s_euler", "s_zaxis_down", "s_xyaxes", "s_axisangle", "s_quat")


@pytest.mark.parametrize("eulerseq", ["xyz", "ZYX", "zXy"])
def test_every_orientation_form_against_mujoco(mj, eulerseq):
    text = orientations_text(eulerseq)
    check_against_mujoco(mj, text, parse_mjcf(text), seed=9, sites=ORIENT_SITES)


def test_orientation_forms_by_hand():
    text = orientations_text("zXy")
    model, info = parse_mjcf(text, return_info=True)
    q0 = info.q0

    def rel(frame, parent):
        Tp, Tf = ld.frame_pose(model, q0, parent), ld.frame_pose(model, q0, frame)
        return np.linalg.solve(Tp, Tf)

    # in qpos0 every body is where the file puts it
    w, x, y, z = np.array([0.5, -0.3, 0.2, 0.8]) / np.linalg.norm([0.5, -0.3, 0.2, 0.8])
    assert_close(ld.frame_pose(model, q0, "by_quat")[:3, :3], Rotation.from_quat([x, y, z, w]).as_matrix(), 1e-14)
    ax = np.array([1, -1, 2]) / np.linalg.norm([1, -1, 2])
    assert_close(rel("by_axisangle", "by_quat")[:3, :3], Rotation.from_rotvec(0.7 * ax).as_matrix(), 1e-14)
    # "zXy": z about moving axes, then X about the fixed axes, then y about moving axes
    Rz, Rx, Ry = (Rotation.from_rotvec(a).as_matrix() for a in ([0, 0, 0.5], [0.6, 0, 0], [0, -0.7, 0]))
    assert_close(rel("by_euler", "by_axisangle")[:3, :3], Rx @ Rz @ Ry, 1e-14)
    xa, ya = np.array([1, 1, 0]) / np.sqrt(2), np.array([-1, 1, 1])
    ya = ya - (ya @ xa) * xa
    ya /= np.linalg.norm(ya)
    assert_close(rel("by_xyaxes", "by_euler")[:3, :3], np.column_stack([xa, ya, np.cross(xa, ya)]), 1e-14)
    zr = rel("by_zaxis", "by_xyaxes")[:3, :3]
    zz = np.array([0.3, -0.2, 0.9]) / np.linalg.norm([0.3, -0.2, 0.9])
    assert_close(zr[:, 2], zz, 1e-14)
    assert_close(zr @ np.cross([0, 0, 1], zz), np.cross([0, 0, 1], zz), 1e-14)      # turned about z x zaxis
    assert_close(rel("s_zaxis_down", "by_axisangle")[:3, :3], np.diag([1.0, -1, -1]), 1e-15)
    assert_close(rel("s_axisangle", "by_xyaxes")[:3, :3], [[0, -1, 0], [1, 0, 0], [0, 0, 1]], 1e-15)


def test_degrees_and_radians_give_the_same_model():
    a, b = parse_mjcf(orientations_text("xyz", degree=True)), parse_mjcf(orientations_text("xyz"))
    for attr in ("R_tree", "p_tree", "inertia", "lower", "upper", "jnt_axis", "frame_R", "frame_p"):
        assert_close(getattr(a, attr)[np.isfinite(getattr(a, attr))], getattr(b, attr)[np.isfinite(getattr(b, attr))],
                      1e-13, what=attr)
    assert_close(b.lower[b.q_index("j1")], -1.2, 1e-15)
    # and the default unit is the degree
    text = orientations_text("xyz", degree=True).replace('angle="degree" ', "")
    assert_close(parse_mjcf(text).R_tree, a.R_tree, 1e-15)


# --------------------------------------------------------------------------------------------
# coordinates, keyframes
def test_qpos_qvel_conversions_round_trip():
    text = FLOATING.replace("</worldbody>", '</worldbody><keyframe><key name="crouch" qpos="1 2 3 0 1 0 0 0.5 '
                                           '0.5 0.5 0.5 0.5 0.2"/></keyframe>')
    model, info = parse_mjcf(text, return_info=True)
    rng = np.random.default_rng(2)
    Q = ld.random_configuration(model, rng, size=4)
    assert_close(qpos_to_q(model, q_to_qpos(model, Q)), Q, 0)
    V = rng.standard_normal((4, model.nv))
    assert_close(qvel_to_v(model, Q, v_to_qvel(model, Q, V)), V, 1e-14)
    qpos = q_to_qpos(model, Q[0])
    assert_close(qpos[3:7], np.r_[Q[0, 6], Q[0, 3:6]], 0)                # [w, x, y, z]
    R = Rotation.from_quat(Q[0, 3:7]).as_matrix()
    assert_close(v_to_qvel(model, Q[0], V[0])[:3], R @ V[0, :3], 1e-14)   # world-frame linear velocity
    key = info.keyframes["crouch"]
    assert_close(key[:7], [1, 2, 3, 1, 0, 0, 0], 0)
    assert_close(key[model.q_slice("wrist")], [0.5] * 4, 0)


def test_keyframe_against_mujoco(mj):
    text = FLOATING.replace("</worldbody>", '</worldbody><keyframe><key name="k" qpos="1 2 3 0.5 0.5 0.5 0.5 0.5 '
                                           '0 0.6 0 0.8 0.2"/></keyframe>')
    model, info = parse_mjcf(text, return_info=True)
    sim = MuJoCo(mj, text, model)
    mj.mj_resetDataKeyframe(sim.m, sim.d, 0)
    mj.mj_forward(sim.m, sim.d)
    for name in ("torso", "arm", "hand", "leg"):
        R, p = sim.body_pose(name)
        T = ld.frame_pose(model, info.keyframes["k"], name)
        assert_close(T[:3, 3], p, 1e-14)
        assert_close(T[:3, :3], R, 1e-14)
    with pytest.raises(MJCFError, match="qpos has 3 numbers"):
        parse_mjcf(FLOATING.replace("</worldbody>", '</worldbody><keyframe><key qpos="1 2 3"/></keyframe>'),
                   return_info=True)


# --------------------------------------------------------------------------------------------
# loop closures
def four_bar_text(q_crank=0.6):
    """The four-bar of linkdyn.models.four_bar() in MJCF: the same rods; the loop is a
    <connect> at the coupler's end.  The file must show an assembled pose (MuJoCo's connect
    is satisfied in qpos0): the body orientations put the linkage there and each hinge's ref
    equals that angle, so that q is the absolute angle as in four_bar()."""
    fb = ld.models.four_bar()
    q = ld.neutral(fb)
    q[fb.q_index("crank")] = q_crank
    q[fb.q_index("coupler")], q[fb.q_index("rocker")] = -1.0, 1.2
    q = ld.loops.close_loops(fb, q, hold=["crank"])
    a1, a2, a3 = (float(q[fb.q_index(n)]) for n in ("crank", "coupler", "rocker"))
    l1, l2, l3, l0, rho, r = 0.3, 1.0, 0.8, 1.0, 2.0, 0.01

    def rod(l):
        m = rho * l
        return (f'<inertial pos="{l / 2!r} 0 0" mass="{m!r}" '
                f'diaginertia="{0.5 * m * r * r!r} {m * (3 * r * r + l * l) / 12!r} {m * (3 * r * r + l * l) / 12!r}"/>')

    text = f"""
<mujoco model="four_bar">
  <compiler angle="radian"/>
  <worldbody>
    <body name="crank" axisangle="0 1 0 {a1!r}">
      <joint name="crank" axis="0 1 0" ref="{a1!r}"/>
      {rod(l1)}
      <body name="coupler" pos="{l1!r} 0 0" axisangle="0 1 0 {a2!r}">
        <joint name="coupler" axis="0 1 0" ref="{a2!r}"/>
        {rod(l2)}
        <site name="coupler_end" pos="{l2!r} 0 0"/>
      </body>
    </body>
    <body name="rocker" pos="{l0!r} 0 0" axisangle="0 1 0 {a3!r}">
      <joint name="rocker" axis="0 1 0" ref="{a3!r}"/>
      {rod(l3)}
      <site name="rocker_tip" pos="{l3!r} 0 0"/>
    </body>
  </worldbody>
  <equality>
    <connect name="loop" body1="coupler" body2="rocker" anchor="{l2!r} 0 0"/>
  </equality>
</mujoco>
"""
    return text, fb, q


def test_four_bar_connect_is_a_one_dof_closed_chain_like_four_bar():
    text, fb, q_fb = four_bar_text()
    model, info = parse_mjcf(text, return_info=True)
    assert model.nloops == 1
    lp = model.loops[0]
    assert lp.kind == J.SPHERICAL and lp.name == "loop"
    assert model.joint_names == ("crank", "coupler", "loop_joint", "rocker")
    # closed in the file's pose (qpos0), with the cut joint at the identity
    assert_close(ld.loops.loop_error(model, info.q0), np.zeros((1, 6)), 1e-12)
    assert_close(info.q0[model.q_slice("loop_joint")], [0, 0, 0, 1], 0)
    an = ld.loops.analyze(model, info.q0, actuated=["crank"])
    assert (model.nv, an.m, an.dof) == (6, 5, 1)
    # elsewhere on the mechanism: both models closed at the same crank angle
    hinges = ("crank", "coupler", "rocker")
    for crank in (-2.0, 0.3, 2.5):
        fb_q = ld.neutral(fb)
        fb_q[[fb.q_index(n) for n in hinges]] = q_fb[[fb.q_index(n) for n in hinges]]
        fb_q[fb.q_index("crank")] = crank
        fb_q = ld.loops.close_loops(fb, fb_q, hold=["crank"])
        q_ld = info.q0.copy()
        for n in hinges:
            q_ld[model.q_index(n)] = fb_q[fb.q_index(n)]
        q_ld = ld.loops.close_loops(model, q_ld, hold=list(hinges))       # only the cut joint moves
        assert_close(ld.loops.loop_error(model, q_ld), np.zeros((1, 6)), 1e-10)
        assert_close(ld.frame_pose(model, q_ld, "coupler_end"), ld.frame_pose(fb, fb_q, "coupler_end"), 1e-12)
        # the same motion: a crank rate, the dependent rates from each model's own constraints
        v_fb = ld.loops.analyze(fb, fb_q, generalized=["crank"]).W @ [0.8]
        v_ld = np.zeros(model.nv)
        for n in hinges:
            v_ld[model.v_index(n)] = v_fb[fb.v_index(n)]
        v_ld = ld.loops.project_velocity(model, q_ld, v_ld, hold=list(hinges))
        assert_close(ld.loops.loop_jacobian(model, q_ld) @ v_ld, np.zeros(6), 1e-10)
        # the tree's inertia on the hinges is the same (the virtual link is massless)
        iv, fv = [model.v_index(n) for n in hinges], [fb.v_index(n) for n in hinges]
        assert_close(ld.crba(model, q_ld)[np.ix_(iv, iv)], ld.crba(fb, fb_q)[np.ix_(fv, fv)], 1e-12)
        # closed-chain forward dynamics under gravity and a crank torque
        for tau_crank in (0.0, 1.5):
            tau_ld, tau_fb = np.zeros(model.nv), np.zeros(fb.nv)
            tau_ld[model.v_index("crank")] = tau_fb[fb.v_index("crank")] = tau_crank
            a_ld = ld.loops.forward_dynamics(model, q_ld, v_ld, tau_ld)
            a_fb = ld.loops.forward_dynamics(fb, fb_q, v_fb, tau_fb)
            assert_close(a_ld[iv], a_fb[fv], 1e-8, what=f"closed-chain accelerations at crank {crank}")


def test_four_bar_connect_against_mujoco_constraint(mj):
    """Where linkdyn's loop is closed, MuJoCo's connect constraint is satisfied too."""
    text, _, _ = four_bar_text()
    model, info = parse_mjcf(text, return_info=True)
    sim = MuJoCo(mj, text, model, constraints=True)
    assert_close(sim.equality_residual(info.q0), np.zeros(3), 1e-12)
    q = info.q0.copy()
    q[model.q_index("crank")] += 1.0
    assert np.abs(sim.equality_residual(q)).max() > 0.1
    q = ld.loops.close_loops(model, q, hold=["crank"])
    assert_close(sim.equality_residual(q), np.zeros(3), 1e-10)


WELDS = """
<mujoco model="welds">
  <compiler angle="radian"/>
  <worldbody>
    <body name="l1" pos="0 0 1">
      <joint name="j1" axis="0 1 0"/>
      <geom type="capsule" size="0.03" fromto="0 0 0 0.4 0 0"/>
      <site name="l1_tip" pos="0.4 0 0" euler="0.2 0.1 0.3"/>
      <body name="l2" pos="0.4 0 0">
        <joint name="j2" axis="0 1 0"/>
        <joint name="j2b" axis="1 0 0"/>
        <geom type="capsule" size="0.03" fromto="0 0 0 0.3 0 0"/>
      </body>
    </body>
    <body name="box" pos="0.9 0.1 0.9" euler="0.1 0.2 0.3">
      <freejoint name="box_free"/>
      <geom type="box" size="0.05 0.05 0.05"/>
      <site name="box_site" pos="0.02 0 0.03" euler="0.3 0 0.1"/>
    </body>
    <body name="ball" pos="0 1 1">
      <freejoint/>
      <geom size="0.05"/>
    </body>
  </worldbody>
  <equality>
    {}
  </equality>
</mujoco>
"""


@pytest.mark.parametrize("weld", [
    '<weld name="w" body1="l2" body2="box" anchor="0.01 0.02 0.03" relpose="0.3 0.05 0 0.9 0.1 -0.2 0.3"/>',
    '<weld name="w" body1="l2" body2="box" anchor="0.01 0.02 0.03"/>',
    '<weld name="w" body1="box"/>',
    '<weld name="w" site1="l1_tip" site2="box_site"/>',
    '<connect name="w" site1="l1_tip" site2="box_site"/>',
    '<connect name="w" body1="box" anchor="0.1 0 0"/>',
], ids=["weld-relpose", "weld-qpos0", "weld-to-world", "weld-sites", "connect-sites", "connect-to-world"])
def test_weld_and_connect_closures_against_mujoco(mj, weld):
    text = WELDS.format(weld)
    model, info = parse_mjcf(text, return_info=True)
    assert model.nloops == 1
    kind = model.loops[0].kind
    assert kind == (J.FIXED if weld.startswith("<weld") else J.SPHERICAL)
    sim = MuJoCo(mj, text, model, constraints=True)
    n = 6 if kind == J.FIXED else 3
    if "relpose" not in weld and "site" not in weld:
        # the relative pose (weld) or point (connect) is taken in qpos0: closed there
        assert_close(ld.loops.loop_error(model, info.q0), np.zeros((1, 6)), 1e-12)
        assert_close(sim.equality_residual(info.q0), np.zeros(n), 1e-12)
    q = info.q0.copy()
    q[model.q_index("j1")] += 0.4
    q[model.q_index("j2b")] -= 0.3
    q[model.q_slice("box_free")][:3] += [0.1, -0.2, 0.05]
    assert np.abs(sim.equality_residual(q)).max() > 1e-3
    q = ld.loops.close_loops(model, q, hold=["j1", "j2", "j2b"])          # the free box follows
    assert_close(ld.loops.loop_error(model, q), np.zeros((1, 6)), 1e-11)
    assert_close(sim.equality_residual(q), np.zeros(n), 1e-9, what="MuJoCo's equality residual")
    assert ld.loops.analyze(model, q).dof == model.nv - 6      # six independent constraints


def test_weld_relpose_by_hand():
    """MuJoCo's weld: the frame relpose (position, quaternion [w, x, y, z]) on body1 and the
    frame at anchor on body2 coincide; so do the anchor point on body1 and body2's anchor."""
    weld = '<weld name="w" body1="l2" body2="box" anchor="0.01 0.02 0.03" relpose="0.3 0.05 0 0.9 0.1 -0.2 0.3"/>'
    model, info = parse_mjcf(WELDS.format(weld), return_info=True)
    q = info.q0.copy()
    q[model.q_index("j1")] = 0.7
    q[model.q_index("j2b")] = -0.4
    q = ld.loops.close_loops(model, q, hold=["j1", "j2", "j2b"])
    rel = np.eye(4)
    w, x, y, z = np.array([0.9, 0.1, -0.2, 0.3]) / np.linalg.norm([0.9, 0.1, -0.2, 0.3])
    rel[:3, :3], rel[:3, 3] = Rotation.from_quat([x, y, z, w]).as_matrix(), [0.3, 0.05, 0]
    anchor = np.eye(4)
    anchor[:3, 3] = [0.01, 0.02, 0.03]
    assert_close(ld.frame_pose(model, q, "l2") @ rel, ld.frame_pose(model, q, "box") @ anchor, 1e-11)
    # without relpose: the relative pose of qpos0 is kept
    model, info = parse_mjcf(WELDS.format('<weld body1="l2" body2="box"/>'), return_info=True)
    q = info.q0.copy()
    q[model.q_index("j1")] = 0.7
    q = ld.loops.close_loops(model, q, hold=["j1", "j2", "j2b"])
    rel0 = np.linalg.solve(ld.frame_pose(model, info.q0, "l2"), ld.frame_pose(model, info.q0, "box"))
    assert_close(np.linalg.solve(ld.frame_pose(model, q, "l2"), ld.frame_pose(model, q, "box")), rel0, 1e-11)
    assert model.loops[0].name == "weld_l2_box"


def test_joint_equality_becomes_a_gear():
    text = MULTI_JOINT.replace("</worldbody>", '</worldbody><equality><joint joint1="roll" joint2="yaw" '
                                              'polycoef="0.1 -2 0 0 0"/></equality>')
    with pytest.warns(GearWarning, match="neither serial"):      # roll and yaw: lift and pitch between them
        model = parse_mjcf(text)
    # MuJoCo: roll - 0 = 0.1 - 2 (yaw - 0.3); linkdyn's q is qpos
    assert model.mimic == ({"joint": "roll", "mimicked": "yaw", "multiplier": -2.0, "offset": 0.1 + 0.6},)
    assert model.nloops == 0
    assert [tuple(g) for g in model.gears] == [("roll", "yaw", -2.0, 0.1 + 0.6)]
    assert model.nv == model.full_model.nv - 1
    with pytest.raises(NotImplementedError, match="nonlinear coupling"):
        parse_mjcf(text.replace("0.1 -2 0 0 0", "0 1 0.5 0 0"))
    with pytest.raises(NotImplementedError, match="alone"):
        parse_mjcf(text.replace(' joint2="yaw"', ""))
    with pytest.raises(MJCFError, match="spin.*ball joint"):
        parse_mjcf(text.replace('joint2="yaw"', 'joint2="spin"'))


def test_inactive_equality_is_skipped_with_a_warning():
    text, _, _ = four_bar_text()
    with pytest.warns(MJCFWarning, match="inactive"):
        model = parse_mjcf(text.replace('<connect name="loop"', '<connect name="loop" active="false"'))
    assert model.nloops == 0


# --------------------------------------------------------------------------------------------
# <include>
ARM_PART = """<mujoco>
  <body name="upper" pos="0 0 0.5">
    <joint name="shoulder" axis="0 1 0"/>
    <geom type="capsule" size="0.04" fromto="0 0 0 0 0 0.3"/>
    <include file="{}"/>
  </body>
</mujoco>"""
FORE_PART = """<mujoco>
  <body name="fore" pos="0 0 0.3">
    <joint name="elbow" axis="0 1 0"/>
    <geom type="capsule" size="0.03" fromto="0 0 0 0 0 0.25"/>
  </body>
</mujoco>"""
INLINE_ARM = """<mujoco model="arm"><default><joint damping="0.1"/></default><worldbody>
  <body name="upper" pos="0 0 0.5"><joint name="shoulder" axis="0 1 0"/>
    <geom type="capsule" size="0.04" fromto="0 0 0 0 0 0.3"/>
    <body name="fore" pos="0 0 0.3"><joint name="elbow" axis="0 1 0"/>
      <geom type="capsule" size="0.03" fromto="0 0 0 0 0 0.25"/></body></body>
</worldbody></mujoco>"""


def test_includes_are_expanded_relative_to_the_model_folder(tmp_path):
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "arm.xml").write_text(ARM_PART.format("parts/fore.xml"))
    (tmp_path / "parts" / "fore.xml").write_text(FORE_PART)
    (tmp_path / "defaults.xml").write_text('<mujoco><default><joint damping="0.1"/></default></mujoco>')
    main = tmp_path / "arm.xml"
    main.write_text('<mujoco model="arm"><include file="defaults.xml"/><worldbody><include file="parts/arm.xml"/>'
                    "</worldbody></mujoco>")
    m, h = load_mjcf(main), parse_mjcf(INLINE_ARM)
    assert m.joint_names == h.joint_names == ("shoulder", "elbow")
    for attr in ("inertia", "R_tree", "p_tree", "damping"):
        assert_close(getattr(m, attr), getattr(h, attr), 0)
    # the same text with base_dir
    assert parse_mjcf(main.read_text(), base_dir=tmp_path).joint_names == ("shoulder", "elbow")
    with pytest.raises(MJCFError, match="base_dir"):
        parse_mjcf(main.read_text())
    # an error inside an included file names that file
    (tmp_path / "parts" / "fore.xml").write_text(FORE_PART.replace('axis="0 1 0"', 'axis="0 1 zero"'))
    with pytest.raises(MJCFError, match=r"fore\.xml: joint 'elbow' in body 'fore'.*'zero' is not a finite number"):
        load_mjcf(main)


def test_include_loops_depth_and_escapes_are_refused(tmp_path):
    (tmp_path / "a.xml").write_text('<mujoco><include file="b.xml"/></mujoco>')
    (tmp_path / "b.xml").write_text('<mujoco><include file="./sub/../a.xml"/></mujoco>')
    (tmp_path / "sub").mkdir()
    with pytest.raises(MJCFError, match=r"include loop: a\.xml -> b\.xml -> a\.xml"):
        load_mjcf(tmp_path / "a.xml")
    (tmp_path / "self.xml").write_text('<mujoco><include file="self.xml"/></mujoco>')
    with pytest.raises(MJCFError, match="include loop"):
        load_mjcf(tmp_path / "self.xml")
    n = MAX_INCLUDE_DEPTH + 3
    for k in range(n):
        (tmp_path / f"d{k}.xml").write_text(f'<mujoco><include file="d{k + 1}.xml"/></mujoco>')
    (tmp_path / f"d{n}.xml").write_text("<mujoco/>")
    with pytest.raises(MJCFError, match="nested more than"):
        load_mjcf(tmp_path / "d0.xml")
    outside = tmp_path.parent / f"outside_{tmp_path.name}.xml"
    outside.write_text("<mujoco/>")
    (tmp_path / "up.xml").write_text(f'<mujoco><include file="../{outside.name}"/></mujoco>')
    with pytest.raises(MJCFError, match="outside the model's folder"):
        load_mjcf(tmp_path / "up.xml")
    (tmp_path / "abs.xml").write_text(f'<mujoco><include file="{outside}"/></mujoco>')
    with pytest.raises(MJCFError, match="absolute path"):
        load_mjcf(tmp_path / "abs.xml")
    if hasattr(os, "symlink"):
        os.symlink(outside, tmp_path / "link.xml")
        (tmp_path / "sym.xml").write_text('<mujoco><include file="link.xml"/></mujoco>')
        with pytest.raises(MJCFError, match="outside the model's folder"):
            load_mjcf(tmp_path / "sym.xml")
    (tmp_path / "missing.xml").write_text('<mujoco><include file="nope.xml"/></mujoco>')
    with pytest.raises(MJCFError, match="no such file"):
        load_mjcf(tmp_path / "missing.xml")
    # many includes of one small file (an include "bomb") stop at MAX_INCLUDES
    (tmp_path / "leaf.xml").write_text("<mujoco/>")
    (tmp_path / "wide.xml").write_text("<mujoco>" + '<include file="leaf.xml"/>' * 200 + "</mujoco>")
    with pytest.raises(MJCFError, match="more than .* <include> elements"):
        load_mjcf(tmp_path / "wide.xml")


# --------------------------------------------------------------------------------------------
# malformed and hostile input
def body(inner, attrs='name="b"'):
    return f'<mujoco><worldbody><body {attrs}>{inner}</body></worldbody></mujoco>'


GOOD_INERTIAL = '<inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>'

MALFORMED = [
    (body('<joint name="j" type="screw"/>' + GOOD_INERTIAL), r"joint 'j' in body 'b'.*unknown joint type 'screw'"),
    (body('<joint/><inertial pos="0 0 0" diaginertia="1 1 1"/>'), r"<inertial> of body 'b'.*needs a 'mass'"),
    (body('<joint/><inertial mass="1" diaginertia="1 1 1"/>'), r"<inertial> needs a 'pos'"),
    (body('<joint/><inertial pos="0 0 0" mass="1"/>'), "needs diaginertia or fullinertia"),
    (body('<joint/><inertial pos="0 0 0" mass="-1" diaginertia="1 1 1"/>'), "must not be negative"),
    (body('<joint/><inertial pos="0 0 0" mass="1" diaginertia="1 1 3"/>'), r"violate A \+ B >= C"),
    (body('<joint/><inertial pos="0 0 0" mass="1" fullinertia="1 1 1 2 0 0"/>'), "not positive semi-definite"),
    (body('<joint pos="0 0 x"/>' + GOOD_INERTIAL), r"<joint pos='0 0 x'>: 'x' is not a finite number"),
    (body('<joint pos="0 0"/>' + GOOD_INERTIAL), r"<joint pos='0 0'> needs 3 numbers, got 2"),
    (body('<joint pos="0 0 nan"/>' + GOOD_INERTIAL), "'nan' is not a finite number"),
    (body('<joint pos="0 0 1e999"/>' + GOOD_INERTIAL), "overflows"),
    (body('<joint axis="0 0 0"/>' + GOOD_INERTIAL), "the axis is zero"),
    (body('<joint range="1 -1"/>' + GOOD_INERTIAL), "lower limit must be below the upper"),
    (body('<joint limited="true"/>' + GOOD_INERTIAL), "limited='true' needs a 'range'"),
    (body('<joint limited="yes" range="0 1"/>' + GOOD_INERTIAL), r"<joint limited='yes'>: expected one of"),
    (body('<joint name="a"/><joint name="a"/>' + GOOD_INERTIAL), "the joint name 'a' is used twice"),
    (body('<joint/><geom type="box" size="0.1 0.1"/>'), r"<geom> in body 'b'.*box needs 3 positive size"),
    (body('<joint/><geom type="blob" size="1"/>'), r"<geom type='blob'>: expected one of"),
    (body('<joint/><geom type="sphere" size="0.1" fromto="0 0 0 1 0 0"/>'), "fromto cannot be used with a sphere"),
    (body('<joint/><geom type="capsule" size="0.1" fromto="0 0 0 0 0 0"/>'), "the two points coincide"),
    (body(GOOD_INERTIAL, 'name="b" quat="1 0 0 0" euler="0 0 1"'), r"body 'b'.*several orientations \(quat, euler\)"),
    (body(GOOD_INERTIAL, 'name="b" quat="0 0 0 0"'), "the quaternion is zero"),
    (body(GOOD_INERTIAL, 'name="b" xyaxes="1 0 0 2 0 0"'), "y axis is parallel to the x axis"),
    (body(GOOD_INERTIAL, 'name="b" zaxis="0 0 0"'), "the z axis is zero"),
    (body('<joint class="nope"/>' + GOOD_INERTIAL), r"<joint class='nope'>: unknown default class"),
    (body(GOOD_INERTIAL, 'name="b" childclass="nope"'), r"childclass='nope': unknown default class"),
    (body("<joitn/>" + GOOD_INERTIAL), r"body 'b': unknown element <joitn>"),
    ('<mujoco><worldbody><body name="b">' + GOOD_INERTIAL + '</body><body name="b">' + GOOD_INERTIAL +
     "</body></worldbody></mujoco>", "the name is used by two <body> elements"),
    (body(GOOD_INERTIAL, 'name="world"'), "MuJoCo's world body"),
    (body('<body name="c"><freejoint/>' + GOOD_INERTIAL + "</body>" + GOOD_INERTIAL),
     r"body 'c'.*not in a top-level body"),
    (body('<freejoint/><joint/>' + GOOD_INERTIAL), "must be the only joint of its body"),
    (body('<joint/>' + GOOD_INERTIAL + GOOD_INERTIAL), "two <inertial> elements"),
    ('<mujoco><compiler angle="gradian"/></mujoco>', r"<compiler angle='gradian'>: expected one of"),
    ('<mujoco><compiler eulerseq="xyw"/></mujoco>', "expected 3 letters"),
    ('<mujoco><default><default/></default></mujoco>', "needs a 'class' attribute"),
    ('<mujoco><default><default class="a"/><default class="a"/></default></mujoco>', "the class is defined twice"),
    ('<mujoco><worldbody><joint/></worldbody></mujoco>', "cannot be in the world body"),
    ('<mujoco><bogus/></mujoco>', r"<mujoco>: unknown element <bogus>"),
    ("<robot/>", r"the root element is <robot>, expected <mujoco>"),
    ("<mujoco><worldbody></mujoco>", "not well-formed XML"),
    (body('<joint/>' + GOOD_INERTIAL).replace("</mujoco>", '<equality><connect body1="b" anchor="0 0 0"/>'
                                              '<connect body2="b" anchor="0 0 0"/></equality></mujoco>'),
     r"<connect> number 2 in <equality>.*needs a 'body1'"),
    (body('<joint/>' + GOOD_INERTIAL).replace("</mujoco>", '<equality><connect body1="b" body2="x" '
                                              'anchor="0 0 0"/></equality></mujoco>'), "body2='x' is not a body"),
    (body('<joint/>' + GOOD_INERTIAL).replace("</mujoco>", '<equality><connect body1="b"/></equality></mujoco>'),
     "needs a 'anchor'"),
    (body('<joint/>' + GOOD_INERTIAL).replace("</mujoco>", '<equality><weld body1="b" body2="b"/></equality></mujoco>'),
     "both ends are on body 'b'"),
    (body('<joint/>' + GOOD_INERTIAL).replace("</mujoco>", '<equality><weld site1="s"/></equality></mujoco>'),
     "needs both 'site1' and 'site2'"),
    (body('<joint/>' + GOOD_INERTIAL).replace("</mujoco>", '<equality><weld body1="b" site1="s"/></equality></mujoco>'),
     "either site1/site2"),
    (body('<joint/>' + GOOD_INERTIAL).replace("</mujoco>", '<equality><glue body1="b"/></equality></mujoco>'),
     r"<equality>: unknown element <glue>"),
] 


@pytest.mark.parametrize("text,match", MALFORMED, ids=[f"m{k}" for k in range(len(MALFORMED))])
def test_malformed_files_raise_mjcf_error(text, match):
    with pytest.raises(MJCFError, match=match) as exc:
        parse_mjcf(text, source="bad.xml")
    assert str(exc.value).startswith("bad.xml")


def test_a_fixed_weld_between_welded_bodies_is_refused():
    text = ('<mujoco><worldbody><body name="a"><joint/>' + GOOD_INERTIAL + '<body name="b">' + GOOD_INERTIAL +
            '</body></body></worldbody><equality><weld body1="a" body2="b"/></equality></mujoco>')
    with pytest.raises(MJCFError, match="welded to body"):
        parse_mjcf(text)


@pytest.mark.parametrize("text,match", [
    (body('<joint/><composite type="rope"/>'), "<composite> is not supported"),
    (body('<joint/><geom size="0.1" shellinertia="true"/>'), "shellinertia"),
    ('<mujoco><compiler coordinate="global"/></mujoco>', "only local coordinates"),
    (body('<joint name="j"/>' + GOOD_INERTIAL).replace("</mujoco>", '<equality><tendon tendon1="t"/></equality>'
                                                                    "</mujoco>"), r"tendon 't' is not a fixed tendon"),
])
def test_unsupported_features_raise_not_implemented(text, match):
    with pytest.raises(NotImplementedError, match=match):
        parse_mjcf(text)


def test_features_that_cannot_be_represented_warn():
    m = parse_mjcf(body('<joint type="ball" range="0 60"/>' + GOOD_INERTIAL))   # now a swing cone (no warning)
    assert np.isinf(m.lower).all() and m.joints[1].swing == pytest.approx(np.radians(60))
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # a joint spring is modelled: no warning
        m = parse_mjcf(body('<joint stiffness="3" springref="0.2"/>' + GOOD_INERTIAL))
    assert m.stiffness.tolist() == [3.0] and m.spring_ref.tolist() == [np.radians(0.2)]   # degrees by default
    with pytest.warns(MJCFWarning, match="the name is taken by a body"):
        m = parse_mjcf(body('<joint/><site name="b"/>' + GOOD_INERTIAL))
    assert "b_site" in m.frame_names


ENTITY_BOMB = """<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<mujoco model="&lol3;"/>"""
EXTERNAL = """<?xml version="1.0"?>
<!DOCTYPE mujoco [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<mujoco model="&xxe;"/>"""
DTD_ONLY = """<?xml version="1.0"?><!DOCTYPE mujoco SYSTEM "http://example.com/mjcf.dtd"><mujoco/>"""


@pytest.mark.parametrize("text", [ENTITY_BOMB, EXTERNAL, DTD_ONLY], ids=["entity-bomb", "external-entity", "dtd"])
def test_hostile_xml_is_refused(text, tmp_path):
    with pytest.raises(MJCFError, match="refused"):
        parse_mjcf(text)
    path = tmp_path / "evil.xml"
    path.write_text(text)
    with pytest.raises(MJCFError, match="evil.xml: refused"):
        load_mjcf(path)


def test_api_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_mjcf(tmp_path / "missing.xml")
    with pytest.raises(TypeError, match="load_mjcf"):
        parse_mjcf(tmp_path)
    model = parse_mjcf(FLOATING)
    with pytest.raises(ValueError, match="qpos_to_q: expected shape"):
        qpos_to_q(model, np.zeros(model.nq + 1))


def test_deep_chains_do_not_hit_the_recursion_limit():
    n = 1500
    text = "<mujoco><compiler angle=\"radian\"/><worldbody>" + "".join(
        f'<body name="b{k}" pos="0 0 -0.1"><joint axis="0 1 0"/><geom size="0.01"/>' for k in range(n)) + \
        "</body>" * n + "</worldbody></mujoco>"
    model = parse_mjcf(text)
    assert model.nv == n and model.parent[-1] == n - 1


def test_mujoco_states_round_trip_through_interop(mj):
    """``ld.interop.from_mujoco`` / ``to_mujoco``: a MuJoCo state of a floating model becomes
    linkdyn's (q, v) with the same kinetic energy, and comes back unchanged."""
    from linkdyn import interop
    model = parse_mjcf(FLOATING)
    m = mj.MjModel.from_xml_string(FLOATING)
    d = mj.MjData(m)
    rng = np.random.default_rng(5)
    d.qpos[:] = q_to_qpos(model, ld.random_configuration(model, rng))
    d.qvel[:] = rng.standard_normal(m.nv)
    mj.mj_forward(m, d)
    q, v = interop.from_mujoco(model, d.qpos, d.qvel)
    M = np.zeros((m.nv, m.nv))
    if hasattr(d, "qM"):
        mj.mj_fullM(m, M, d.qM)
    else:
        mj.mj_fullM(m, d, M)
    assert ld.kinetic_energy(model, q, v) == pytest.approx(0.5 * d.qvel @ M @ d.qvel, rel=1e-12)
    qpos, qvel = interop.to_mujoco(model, q, v)
    assert np.allclose(qpos, d.qpos, atol=1e-15) and np.allclose(qvel, d.qvel, atol=1e-13)
    assert interop.from_mujoco(model, d.qpos)[1] is None
