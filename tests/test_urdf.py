"""Tests of the URDF import (linkdyn.model.io.urdf): the mapping of every element onto the
builder, checked against models built by hand, and the refusal of malformed or hostile files."""
import time

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import linkdyn as ld
from linkdyn.model import joints as J
from linkdyn.model.io.urdf import URDFError, URDFWarning, load_urdf, parse_urdf

INERTIA = '<inertia ixx="{:g}" ixy="{:g}" ixz="{:g}" iyy="{:g}" iyz="{:g}" izz="{:g}"/>'


def rpy(r, p, y):
    """URDF roll-pitch-yaw: R = Rz(y) Ry(p) Rx(r) (scipy's extrinsic "xyz")."""
    return Rotation.from_euler("xyz", [r, p, y]).as_matrix()


def robot(*body, name="t"):
    return f'<robot name="{name}">' + "".join(body) + "</robot>"


def link(name, mass=None, com="0 0 0", com_rpy="0 0 0", I=(1, 0, 0, 1, 0, 1)):
    if mass is None:
        return f'<link name="{name}"/>'
    return (f'<link name="{name}"><inertial><origin xyz="{com}" rpy="{com_rpy}"/><mass value="{mass}"/>'
            + INERTIA.format(*I) + "</inertial></link>")


def joint(name, type_, parent, child, xyz="0 0 0", rpy_="0 0 0", axis=None, limit=None, extra=""):
    s = (f'<joint name="{name}" type="{type_}"><parent link="{parent}"/><child link="{child}"/>'
         f'<origin xyz="{xyz}" rpy="{rpy_}"/>')
    if axis is not None:
        s += f'<axis xyz="{axis}"/>'
    if limit is not None:
        s += f"<limit {limit}/>"
    return s + extra + "</joint>"


LIM = 'lower="-2" upper="2" effort="10" velocity="3"'


def pose(R, p):
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


def axis_angle(axis, angle):
    return Rotation.from_rotvec(np.asarray(axis, float) / np.linalg.norm(axis) * angle).as_matrix()


# ------------------------------------------------------------------ a 2-link arm vs the builder
ARM = robot(
    link("base"),
    link("upper", 1.5, com="0 0 0.2", I=(0.02, 0, 0, 0.03, 0, 0.01)),
    link("fore", 0.8, com="0.1 0 0.15", com_rpy="0.3 -0.2 0.5", I=(0.01, 0.001, -0.002, 0.012, 0.0005, 0.008)),
    joint("shoulder", "revolute", "base", "upper", xyz="0 0 0.1", rpy_="0 0 0.3", axis="0 0 1",
          limit='lower="-2" upper="2" effort="40" velocity="3"'),
    joint("elbow", "revolute", "upper", "fore", xyz="0 0.05 0.4", rpy_="0.1 0.2 0.3", axis="0 1 0",
          limit='lower="-2.5" upper="2.5" effort="20" velocity="4"'),
    name="arm")


def arm_by_hand():
    b = ld.ModelBuilder("arm")
    b.add_body("base", "world")
    b.add_body("upper", "base", ld.Revolute("z"), placement=(rpy(0, 0, 0.3), [0, 0, 0.1]),
               inertia=ld.Inertia(1.5, (0, 0, 0.2), np.diag([0.02, 0.03, 0.01])), joint_name="shoulder",
               lower=[-2], upper=[2], effort_limit=[40], velocity_limit=[3])
    R = rpy(0.3, -0.2, 0.5)
    I = np.array([[0.01, 0.001, -0.002], [0.001, 0.012, 0.0005], [-0.002, 0.0005, 0.008]])
    b.add_body("fore", "upper", ld.Revolute("y"), placement=(rpy(0.1, 0.2, 0.3), [0, 0.05, 0.4]),
               inertia=ld.Inertia(0.8, (0.1, 0, 0.15), R @ I @ R.T), joint_name="elbow",
               lower=[-2.5], upper=[2.5], effort_limit=[20], velocity_limit=[4])
    return b.build()


def test_two_link_arm_matches_the_builder():
    m, h = parse_urdf(ARM), arm_by_hand()
    assert m.name == "arm"
    assert m.joint_names == ("shoulder", "elbow") == h.joint_names
    assert (m.nq, m.nv, m.nbody) == (2, 2, 3)
    for attr in ("lower", "upper", "velocity_limit", "effort_limit", "gravity", "parent"):
        np.testing.assert_array_equal(getattr(m, attr), getattr(h, attr))
    np.testing.assert_allclose(m.inertia, h.inertia, rtol=0, atol=1e-15)
    np.testing.assert_allclose(m.R_tree, h.R_tree, rtol=0, atol=1e-15)
    rng = np.random.default_rng(0)
    for _ in range(5):
        q, v, a = rng.uniform(-2, 2, (3, 2))
        np.testing.assert_allclose(ld.rnea(m, q, v, a), ld.rnea(h, q, v, a), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(ld.crba(m, q), ld.crba(h, q), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(ld.frame_pose(m, q, "fore"), ld.frame_pose(h, q, "fore"), atol=1e-14)


def test_load_urdf_reads_a_file_like_parse_urdf(tmp_path):
    path = tmp_path / "arm.urdf"
    path.write_text(ARM)
    m = load_urdf(path)
    assert m.joint_names == parse_urdf(ARM).joint_names
    np.testing.assert_array_equal(m.inertia, parse_urdf(ARM.encode()).inertia)   # bytes accepted
    with pytest.raises(FileNotFoundError):
        load_urdf(tmp_path / "missing.urdf")


def test_gravity_is_passed_on():
    assert np.array_equal(parse_urdf(ARM, gravity=(0, -1.62, 0)).gravity, [0, -1.62, 0])


def test_robot_without_name_uses_the_file_stem(tmp_path):
    (tmp_path / "noname.urdf").write_text("<robot>" + link("a", 1) + "</robot>")
    assert load_urdf(tmp_path / "noname.urdf").name == "noname"


# ------------------------------------------------------------------ fixed joints
def test_fixed_links_are_merged_and_kept_as_frames():
    text = robot(link("base", 2.0), link("arm", 1.0, com="0.5 0 0"), link("tool", 0.5, com="0 0 0.1"),
                 link("flange"),
                 joint("j1", "revolute", "base", "arm", xyz="0 0 1", axis="0 0 1", limit=LIM),
                 joint("fix1", "fixed", "arm", "flange", xyz="1 0 0", rpy_="0 0.5 0"),
                 joint("fix2", "fixed", "flange", "tool", xyz="0 0 0.2", rpy_="0.3 0 0"))
    m = parse_urdf(text)
    assert m.nbody == 2 and m.joint_names == ("j1",) and m.body_names == ("world", "arm")
    assert m.total_mass == pytest.approx(3.5)             # base (on the world) + arm + tool
    assert m.inertia[1, 0, 0] == pytest.approx(1.5)       # arm + tool
    assert m.body_id("tool") == m.body_id("flange") == 1 and m.body_id("base") == 0
    # the merged centre of mass: arm's at (0.5, 0, 0), tool's at flange * (0, 0, 0.2) * (0, 0, 0.1)
    tool_T = pose(rpy(0, 0.5, 0), [1, 0, 0]) @ pose(rpy(0.3, 0, 0), [0, 0, 0.2])
    c_tool = tool_T[:3, :3] @ [0, 0, 0.1] + tool_T[:3, 3]
    c = (1.0 * np.array([0.5, 0, 0]) + 0.5 * c_tool) / 1.5
    q = np.array([0.7])
    np.testing.assert_allclose(ld.center_of_mass(m, q), rpy(0, 0, 0.7) @ c + [0, 0, 1], atol=1e-14)
    arm_T = pose(rpy(0, 0, 0.7), [0, 0, 1])
    np.testing.assert_allclose(ld.frame_pose(m, q, "tool"), arm_T @ tool_T, atol=1e-14)
    np.testing.assert_allclose(ld.frame_pose(m, q, "flange"), arm_T @ pose(rpy(0, 0.5, 0), [1, 0, 0]), atol=1e-14)
    np.testing.assert_allclose(ld.frame_pose(m, q, "base"), np.eye(4), atol=0)


def test_a_robot_of_fixed_joints_only_has_no_dof():
    m = parse_urdf(robot(link("a", 1.0), link("b", 2.0), joint("f", "fixed", "a", "b", xyz="0 0 1")))
    assert (m.nq, m.nv, m.nbody) == (0, 0, 1)
    assert m.total_mass == pytest.approx(3.0)
    assert ld.rnea(m, np.zeros(0), np.zeros(0), np.zeros(0)).shape == (0,)


# ------------------------------------------------------------------ joint kinds and limits
def test_revolute_limits_and_continuous_joints():
    text = robot(link("a"), link("b", 1), link("c", 1), link("d", 1),
                 joint("rev", "revolute", "a", "b", axis="0 0 1", limit='lower="-1.5" upper="0.5" effort="7" velocity="2"'),
                 joint("cont", "continuous", "b", "c", axis="1 0 0", limit='effort="5" velocity="6"'),
                 joint("bare", "continuous", "c", "d", axis="0 1 0"))
    m = parse_urdf(text)
    assert all(j.kind == J.REVOLUTE for j in m.joints[1:])
    assert (m.nq, m.nv) == (3, 3)                   # a continuous joint has ONE coordinate, the angle
    np.testing.assert_array_equal(m.lower, [-1.5, -np.inf, -np.inf])
    np.testing.assert_array_equal(m.upper, [0.5, np.inf, np.inf])
    np.testing.assert_array_equal(m.effort_limit, [7, 5, np.inf])
    np.testing.assert_array_equal(m.velocity_limit, [2, 6, np.inf])
    np.testing.assert_allclose(m.joints[2].axis, [1, 0, 0])


def test_limit_attributes_default_like_urdfdom():
    # lower/upper missing -> 0 (urdfdom); velocity/effort missing -> unlimited; <limit> missing -> unlimited
    m = parse_urdf(robot(link("a"), link("b", 1), link("c", 1),
                         joint("r", "revolute", "a", "b", axis="0 0 1", limit='upper="1"'),
                         joint("p", "prismatic", "b", "c", axis="0 0 1")))
    np.testing.assert_array_equal(m.lower, [0, -np.inf])
    np.testing.assert_array_equal(m.upper, [1, np.inf])
    np.testing.assert_array_equal(m.velocity_limit, [np.inf, np.inf])


def test_axis_defaults_to_x_and_is_normalised():
    m = parse_urdf(robot(link("a"), link("b", 1), link("c", 1),
                         joint("r", "revolute", "a", "b", limit=LIM),
                         joint("r2", "revolute", "b", "c", axis="0 3 4", limit=LIM)))
    np.testing.assert_array_equal(m.joints[1].axis, [1, 0, 0])
    np.testing.assert_allclose(m.joints[2].axis, [0, 0.6, 0.8], atol=1e-15)


def test_prismatic():
    m = parse_urdf(robot(link("a"), link("slider", 2.0),
                         joint("s", "prismatic", "a", "slider", xyz="1 2 3", rpy_="0 0 1.5707963267948966",
                               axis="0 0 -2", limit='lower="-0.1" upper="0.4" effort="100" velocity="0.5"')))
    assert m.joints[1].kind == J.PRISMATIC and (m.nq, m.nv) == (1, 1)
    np.testing.assert_array_equal([m.lower[0], m.upper[0], m.effort_limit[0]], [-0.1, 0.4, 100])
    T = ld.frame_pose(m, np.array([0.25]), "slider")
    np.testing.assert_allclose(T[:3, 3], [1, 2, 3 - 0.25], atol=1e-15)
    np.testing.assert_allclose(T[:3, :3], rpy(0, 0, np.pi / 2), atol=1e-15)
    # a prismatic joint does not rotate: the mass matrix is the mass; holding it up along -z takes -m g
    np.testing.assert_allclose(ld.crba(m, np.array([0.3])), [[2.0]], atol=1e-14)
    np.testing.assert_allclose(ld.generalized_gravity(m, np.array([0.3])), [-2.0 * 9.81], rtol=1e-14)   # axis -z


def test_planar_joint_about_z():
    m = parse_urdf(robot(link("ground"), link("puck", 1.0),
                         joint("slide", "planar", "ground", "puck", xyz="1 0 0.5", rpy_="0 0 0.3", axis="0 0 1")))
    assert m.joints[1].kind == J.PLANAR and (m.nq, m.nv) == (3, 3)
    assert m.body_names == ("world", "puck")
    x, y, th = 0.2, -0.4, 0.9
    T = ld.frame_pose(m, np.array([x, y, th]), "puck")
    np.testing.assert_allclose(T, pose(rpy(0, 0, 0.3), [1, 0, 0.5]) @ pose(rpy(0, 0, th), [x, y, 0]), atol=1e-14)


@pytest.mark.parametrize("axis", ["1 0 0", None, "0 -1 0", "0 0 -1", "1 2 -3"])
def test_planar_joint_moves_in_the_plane_normal_to_its_axis(axis):
    """URDF: "motion in a plane perpendicular to the axis" (default axis (1, 0, 0)).
    Pinocchio ignores the axis (always the xy-plane); see the module docstring."""
    n = np.array([1.0, 0, 0]) if axis is None else np.array(axis.split(), float)
    n /= np.linalg.norm(n)
    m = parse_urdf(robot(link("ground"), link("puck", 1.0, com="0.1 0.2 0.3"),
                         joint("slide", "planar", "ground", "puck", xyz="1 0 0.5", rpy_="0.2 0 0.3", axis=axis)))
    assert (m.nq, m.nv) == (3, 3) and m.joint_names == ("slide",)
    T0 = pose(rpy(0.2, 0, 0.3), [1, 0, 0.5])
    np.testing.assert_allclose(ld.frame_pose(m, np.zeros(3), "puck"), T0, atol=1e-14)
    x, y, th = 0.2, -0.4, 0.9
    T = np.linalg.inv(T0) @ ld.frame_pose(m, np.array([x, y, th]), "puck")     # in the joint frame
    assert abs(T[:3, 3] @ n) < 1e-14                                            # stays in the plane
    assert np.linalg.norm(T[:3, 3]) == pytest.approx(np.hypot(x, y), abs=1e-14)
    np.testing.assert_allclose(T[:3, :3], axis_angle(n, th), atol=1e-14)        # turns about the normal
    # the link's inertia is where it was: the mass matrix of the translation is the mass
    M = ld.crba(m, np.array([x, y, th]))
    np.testing.assert_allclose(M[:2, :2], np.eye(2), atol=1e-14)


def test_floating_joint_and_floating_base():
    text = robot(link("base", 3.0), link("drone", 1.0), joint("fly", "floating", "base", "drone", xyz="0 0 1"))
    m = parse_urdf(text)
    assert m.joints[1].kind == J.FREE and (m.nq, m.nv) == (7, 6) and m.joint_names == ("fly",)
    q = ld.neutral(m)
    q[:3] = [0.1, 0.2, 0.3]
    np.testing.assert_allclose(ld.frame_pose(m, q, "drone")[:3, 3], [0.1, 0.2, 1.3])
    mf = parse_urdf(text, floating_base=True)
    assert mf.joint_names == ("root_joint", "fly") and (mf.nq, mf.nv) == (14, 12)
    assert mf.joints[1].kind == J.FREE and mf.body_names[1] == "base"
    assert mf.total_mass == pytest.approx(4.0)


def test_floating_base_root_joint_name_clash():
    text = robot(link("a"), link("b", 1), joint("root_joint", "revolute", "a", "b", limit=LIM))
    assert parse_urdf(text).joint_names == ("root_joint",)
    with pytest.raises(URDFError, match="joint 'root_joint'.*already has a joint of that name"):
        parse_urdf(text, floating_base=True)


def test_inertial_origin_with_rotation():
    # diag(1, 2, 3) in a frame turned by 90 deg about z: in the link frame the x and y moments swap
    m = parse_urdf(robot(link("a"), link("b", 2.0, com="0.1 0.2 0.3", com_rpy="0 0 1.5707963267948966",
                                         I=(1, 0, 0, 2, 0, 3)),
                         joint("j", "revolute", "a", "b", axis="0 0 1", limit=LIM)))
    expected = ld.Inertia(2.0, (0.1, 0.2, 0.3), np.diag([2.0, 1.0, 3.0])).matrix()
    np.testing.assert_allclose(m.inertia[1], expected, atol=1e-15)
    # a general rotation: R I R^T
    I = np.array([[0.3, 0.01, -0.02], [0.01, 0.2, 0.03], [-0.02, 0.03, 0.15]])
    m = parse_urdf(robot(link("a"), link("b", 2.0, com="0 0 0", com_rpy="0.4 -0.7 1.1",
                                         I=(0.3, 0.01, -0.02, 0.2, 0.03, 0.15)),
                         joint("j", "revolute", "a", "b", axis="0 0 1", limit=LIM)))
    R = rpy(0.4, -0.7, 1.1)
    np.testing.assert_allclose(m.inertia[1], ld.Inertia(2.0, (0, 0, 0), R @ I @ R.T).matrix(), atol=1e-15)


def test_link_without_inertial_is_massless():
    m = parse_urdf(robot(link("a"), link("b"), link("c", 1.0),
                         joint("j1", "revolute", "a", "b", limit=LIM), joint("j2", "revolute", "b", "c", limit=LIM)))
    assert np.all(m.inertia[1] == 0) and m.total_mass == 1.0


# ------------------------------------------------------------------ mimic, order, names
def test_mimic_tags_are_kept():
    text = robot(link("a"), link("b", 1), link("c", 1), link("d", 1),
                 joint("lead", "revolute", "a", "b", axis="0 0 1", limit=LIM),
                 joint("follow", "revolute", "a", "c", axis="0 0 1", limit=LIM,
                       extra='<mimic joint="lead" multiplier="-2.5" offset="0.1"/>'),
                 joint("plain", "prismatic", "a", "d", axis="0 0 1", limit=LIM, extra='<mimic joint="lead"/>'))
    tags = [{"joint": "follow", "mimicked": "lead", "multiplier": -2.5, "offset": 0.1},
            {"joint": "plain", "mimicked": "lead", "multiplier": 1.0, "offset": 0.0}]
    m = parse_urdf(text, mimic=False)
    assert m.nv == 3 and m.gears == ()              # mimic=False: independent dofs (Pinocchio's default)
    assert list(m.mimic) == tags
    m = parse_urdf(text)                            # the default: coupled, reduced coordinates
    assert (m.nq, m.nv, m.full_model.nv) == (1, 1, 3) and list(m.mimic) == tags
    assert [tuple(g) for g in m.gears] == [("follow", "lead", -2.5, 0.1), ("plain", "lead", 1.0, 0.0)]
    assert m.q_index("follow") == m.q_index("plain") == m.q_index("lead") == 0
    qf, f = m.expand(np.array([0.4])), m.full_model
    assert (qf[f.q_index("lead")], qf[f.q_index("follow")], qf[f.q_index("plain")]) == (0.4, -2.5 * 0.4 + 0.1, 0.4)


def test_mimic_of_an_unknown_joint_is_dropped_with_a_warning():
    text = robot(link("a"), link("b", 1), joint("j", "revolute", "a", "b", limit=LIM, extra='<mimic joint="ghost"/>'))
    with pytest.warns(URDFWarning, match="joint 'j': <mimic joint='ghost'> refers to an unknown joint"):
        m = parse_urdf(text)
    assert m.mimic == () and m.nv == 1


def test_mimic_of_a_joint_that_is_not_one_dof_is_dropped_with_a_warning():
    text = robot(link("a"), link("b", 1), link("c", 1), joint("fix", "fixed", "a", "b"),
                 joint("j", "revolute", "b", "c", limit=LIM, extra='<mimic joint="fix"/>'))
    with pytest.warns(URDFWarning, match="couples a revolute joint to a fixed joint"):
        assert parse_urdf(text).mimic == ()


def test_infinite_limits_are_accepted():
    m = parse_urdf(robot(link("a"), link("b", 1), joint("j", "prismatic", "a", "b",
                                                        limit='lower="-inf" upper="+Infinity" velocity="INF"')))
    assert (m.lower[0], m.upper[0], m.velocity_limit[0]) == (-np.inf, np.inf, np.inf)


def test_encoding_declarations():
    latin1 = '<?xml version="1.0" encoding="ISO-8859-1"?><robot name="caf\xe9"><link name="a\xe9"/></robot>'
    assert parse_urdf(latin1.encode("latin-1")).frame_names[1] == "a\xe9"
    assert parse_urdf(latin1).name == "caf\xe9"            # a str is already decoded
    assert parse_urdf(b"\xef\xbb\xbf" + ARM.encode()).joint_names == ("shoulder", "elbow")   # UTF-8 BOM


def test_depth_first_order_with_children_by_joint_name():
    """urdfdom keeps joints in a std::map, so Pinocchio visits the child joints of a link in
    alphabetical order of joint name; linkdyn does the same so that the layouts agree."""
    text = robot(link("root"), *(link(n, 1) for n in ("l1", "l2", "l3", "l11", "l21")),
                 joint("zeta", "revolute", "root", "l1", limit=LIM),
                 joint("alpha", "revolute", "root", "l2", limit=LIM),
                 joint("mid", "fixed", "root", "l3"),
                 joint("alpha_child", "revolute", "l2", "l21", limit=LIM),
                 joint("zeta_child", "prismatic", "l1", "l11", limit=LIM))
    m = parse_urdf(text)
    assert m.joint_names == ("alpha", "alpha_child", "zeta", "zeta_child")
    assert [m.q_index(n) for n in m.joint_names] == [0, 1, 2, 3]
    assert list(m.parent) == [-1, 0, 1, 0, 3]


def test_a_link_named_world_does_not_clash_with_the_world_body():
    m = parse_urdf(robot(link("world"), link("base", 1.0), link("arm", 1.0),
                         joint("weld", "fixed", "world", "base", xyz="0 0 0.5"),
                         joint("j", "revolute", "base", "arm", axis="0 0 1", limit=LIM)))
    assert m.body_names[0] == "universe"
    np.testing.assert_allclose(ld.frame_pose(m, np.zeros(1), "world"), np.eye(4))
    np.testing.assert_allclose(ld.frame_pose(m, np.zeros(1), "base")[:3, 3], [0, 0, 0.5])


def test_root_fixed_joint_name_does_not_clash():
    # the root's weld to the world is named "root_joint" unless the URDF uses that name
    m = parse_urdf(robot(link("a", 1), link("b", 1), joint("root_joint", "fixed", "a", "b")))
    assert m.nbody == 1


def test_ignored_elements_and_namespaces():
    text = ('<robot name="r" xmlns:xacro="http://wiki.ros.org/xacro"><material name="blue"><color rgba="0 0 1 1"/>'
            '</material><link name="a"><visual><geometry><box size="1 1 1"/></geometry></visual></link>'
            '<link name="b"><inertial><mass value="1"/>' + INERTIA.format(1, 0, 0, 1, 0, 1) + '</inertial>'
            '<collision><geometry><mesh filename="package://x/y.stl"/></geometry></collision></link>'
            '<joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>'
            '<limit lower="-1" upper="1" effort="1" velocity="1"/><dynamics damping="0.1" friction="0"/>'
            '<safety_controller k_velocity="1"/><calibration rising="0"/></joint>'
            '<transmission name="t"><type>x</type></transmission><gazebo reference="a"><mu1>1</mu1></gazebo>'
            '<xacro:property name="p" value="1"/></robot>')
    m = parse_urdf(text)
    assert m.nv == 1 and m.total_mass == 1.0


def test_a_long_chain_loads():
    n = 1500                        # more than the default recursion limit (1000)
    body = [link("l0")] + [link(f"l{k}", 1.0) for k in range(1, n)]
    body += [joint(f"j{k}", "revolute", f"l{k - 1}", f"l{k}", xyz="0 0 0.01", limit=LIM) for k in range(1, n)]
    m = parse_urdf(robot(*body))
    assert m.nv == n - 1 and m.joint_names[-1] == f"j{n - 1}"


# ------------------------------------------------------------------ malformed files
L2 = link("b", 1)
BAD = {
    "missing link name": (robot('<link/>'), r"<link> number 1: has no 'name'"),
    "missing joint name": (robot(link("a"), L2, '<joint type="fixed"><parent link="a"/><child link="b"/></joint>'),
                           r"<joint> number 1: has no 'name'"),
    "duplicate link": (robot(link("a"), link("a")), r"link 'a': the name is used by two <link>"),
    "duplicate joint": (robot(link("a"), L2, link("c"), joint("j", "fixed", "a", "b"), joint("j", "fixed", "a", "c")),
                        r"joint 'j': the name is used by two <joint>"),
    "unknown type": (robot(link("a"), L2, joint("j", "ball", "a", "b")), r"joint 'j': unknown joint type 'ball'"),
    "missing type": (robot(link("a"), L2, '<joint name="j"><parent link="a"/><child link="b"/></joint>'),
                     r"joint 'j': has no 'type'"),
    "unknown child link": (robot(link("a"), joint("j", "fixed", "a", "ghost")),
                           r"joint 'j': <child link='ghost'> refers to an unknown link"),
    "unknown parent link": (robot(link("a"), joint("j", "fixed", "ghost", "a")),
                            r"joint 'j': <parent link='ghost'> refers to an unknown link"),
    "missing parent": (robot(link("a"), L2, '<joint name="j" type="fixed"><child link="b"/></joint>'),
                       r"joint 'j': needs a <parent link='...'>"),
    "two parents, two roots": (robot(link("a"), link("c"), L2, joint("j1", "fixed", "a", "b"),
                                     joint("j2", "fixed", "c", "b")), r"several root links .*'a', 'c'"),
    "floating loop joint": (robot(link("a"), L2, joint("j1", "revolute", "a", "b"), joint("j2", "floating", "a", "b")),
                            r"joint 'j2': link 'b' already has the parent joint 'j1'; a floating joint cannot close"),
    "self loop": (robot(link("a"), joint("j", "fixed", "a", "a")), r"joint 'j': kinematic loop"),
    "loop": (robot(link("r"), link("a"), L2, link("c"), joint("j0", "fixed", "r", "a"), joint("j1", "fixed", "b", "c"),
                   joint("j2", "fixed", "c", "b")), r"kinematic loop through links '(b|c)' -> '(b|c)' -> '(b|c)'"),
    "no root": (robot(link("a"), L2, joint("j1", "fixed", "a", "b"), joint("j2", "fixed", "b", "a")),
                r"kinematic loop: every link is the child of a joint"),
    "several roots": (robot(link("a"), L2, link("c")), r"several root links .*'a', 'b', 'c'"),
    "no link": (robot(), r"<robot>: has no <link>"),
    "not a robot": ('<sdf version="1.6"/>', r"the root element is <sdf>, expected <robot>"),
    "negative mass": (robot(link("a", -1.0)), r"link 'a': <mass value='-1.0'> is negative"),
    "non-numeric mass": (robot('<link name="a"><inertial><mass value="heavy"/>' + INERTIA.format(1, 0, 0, 1, 0, 1)
                               + "</inertial></link>"), r"link 'a': <mass value='heavy'>: 'heavy' is not a finite"),
    "non-numeric origin": (robot(link("a"), L2, joint("j", "fixed", "a", "b", xyz="1 two 3")),
                           r"joint 'j': <origin xyz='1 two 3'>: 'two' is not a finite number"),
    "short origin": (robot(link("a"), L2, joint("elbow", "fixed", "a", "b", xyz="1 2")),
                     r"joint 'elbow': <origin xyz='1 2'> needs 3 numbers, got 2"),
    "nan rpy": (robot(link("a"), L2, joint("j", "fixed", "a", "b", rpy_="0 nan 0")),
                r"joint 'j': <origin rpy='0 nan 0'>: 'nan' is not a finite number"),
    "python-only float syntax": (robot(link("a"), L2, joint("j", "fixed", "a", "b", xyz="1_0 0 0")),
                                 r"'1_0' is not a finite number"),
    "non-numeric limit": (robot(link("a"), L2, joint("j", "revolute", "a", "b", limit='lower="-1" upper="one"')),
                          r"joint 'j': <limit upper='one'>: 'one' is not a number"),
    "nan limit": (robot(link("a"), L2, joint("j", "revolute", "a", "b", limit='lower="nan" upper="1"')),
                  r"joint 'j': <limit lower='nan'>: 'nan' is not a number"),
    "lower above upper": (robot(link("a"), L2, joint("j", "prismatic", "a", "b", limit='lower="1" upper="-1"')),
                          r"joint 'j': <limit lower='1' upper='-1'>: lower is above upper"),
    "negative velocity": (robot(link("a"), L2, joint("j", "revolute", "a", "b", limit='velocity="-1"')),
                          r"joint 'j': <limit velocity='-1'> is negative"),
    "zero axis": (robot(link("a"), L2, joint("j", "revolute", "a", "b", axis="0 0 0", limit=LIM)),
                  r"joint 'j': <axis xyz='0 0 0'> is zero"),
    "missing mass": (robot('<link name="a"><inertial>' + INERTIA.format(1, 0, 0, 1, 0, 1) + "</inertial></link>"),
                     r"link 'a': <inertial> has no <mass>"),
    "missing inertia attribute": (robot('<link name="a"><inertial><mass value="1"/><inertia ixx="1"/></inertial></link>'),
                                  r"link 'a': <inertia> needs a 'ixy' attribute"),
    "not xml": ("<robot name='x'><link name='a'></robot>", r"not well-formed XML: mismatched tag"),
    "empty": ("", r"not well-formed XML"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_malformed_urdf_raises_urdf_error(case):
    text, match = BAD[case]
    with pytest.raises(URDFError, match=match) as info:
        parse_urdf(text, source="bad.urdf")
    assert str(info.value).startswith("bad.urdf: ")
    assert isinstance(info.value, ValueError)


def test_error_message_names_the_file(tmp_path):
    path = tmp_path / "broken.urdf"
    path.write_text(BAD["short origin"][0])
    with pytest.raises(URDFError, match=r"broken\.urdf: joint 'elbow': <origin xyz='1 2'> needs 3 numbers, got 2"):
        load_urdf(path)


def test_parse_urdf_wants_text():
    with pytest.raises(TypeError, match="load_urdf"):
        parse_urdf(123)


# ------------------------------------------------------------------ hostile XML
BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<robot name="&lol9;"><link name="&lol9;"/></robot>
"""


def test_billion_laughs_is_refused_quickly(tmp_path):
    path = tmp_path / "bomb.urdf"
    path.write_text(BILLION_LAUGHS)
    t = time.perf_counter()
    with pytest.raises(URDFError, match=r"bomb\.urdf: refused"):
        load_urdf(path)
    with pytest.raises(URDFError, match="refused"):
        parse_urdf(BILLION_LAUGHS)
    assert time.perf_counter() - t < 1.0


def test_external_entity_is_refused(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    xxe = (f'<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY xxe SYSTEM "{secret.as_uri()}">]>'
           '<robot name="&xxe;"><link name="&xxe;"/></robot>')
    path = tmp_path / "xxe.urdf"
    path.write_text(xxe)
    t = time.perf_counter()
    with pytest.raises(URDFError, match=r"xxe\.urdf: refused") as info:
        load_urdf(path)
    assert "TOPSECRET" not in str(info.value)
    assert time.perf_counter() - t < 1.0


def test_external_dtd_is_refused():
    text = ('<?xml version="1.0"?><!DOCTYPE robot SYSTEM "http://127.0.0.1:9/evil.dtd">'
            '<robot name="r"><link name="a"/></robot>')
    t = time.perf_counter()
    with pytest.raises(URDFError, match="refused"):
        parse_urdf(text)
    assert time.perf_counter() - t < 1.0


FOUR_BAR_URDF = """<robot name="four_bar_urdf">
  <link name="ground"/>
  {crank}{coupler}{rocker}
  <joint name="crank" type="continuous"><parent link="ground"/><child link="crank"/><axis xyz="0 1 0"/></joint>
  <joint name="coupler" type="continuous"><parent link="crank"/><child link="coupler"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 1 0"/></joint>
  <joint name="rocker" type="continuous"><parent link="ground"/><child link="rocker"/>
    <origin xyz="1.0 0 0"/><axis xyz="0 1 0"/></joint>
  <link name="rocker_tip"/>
  <joint name="tip" type="fixed"><parent link="rocker"/><child link="rocker_tip"/><origin xyz="0.8 0 0"/></joint>
  <joint name="closure" type="continuous"><parent link="coupler"/><child link="rocker_tip"/>
    <origin xyz="1.0 0 0"/><axis xyz="0 1 0"/></joint>
</robot>"""


def _rod_link(name, length, density=2.0, r=0.01):
    m = density * length
    ix, it = 0.5 * m * r * r, m * (3 * r * r + length * length) / 12
    return (f'<link name="{name}"><inertial><origin xyz="{length / 2} 0 0"/><mass value="{m}"/>'
            f'<inertia ixx="{ix}" ixy="0" ixz="0" iyy="{it}" iyz="0" izz="{it}"/></inertial></link>')


def test_a_second_parent_joint_closes_a_loop():
    """The four-bar written in URDF, its rocker's tip link the child of two joints (the rocker's
    fixed joint and the coupler's "closure"), loads as a closed chain of one degree of freedom
    that moves exactly as linkdyn.models.four_bar()."""
    from linkdyn.models import mechanisms
    text = FOUR_BAR_URDF.format(crank=_rod_link("crank", 0.3), coupler=_rod_link("coupler", 1.0),
                                rocker=_rod_link("rocker", 0.8))
    m = ld.parse_urdf(text)
    assert m.nloops == 1 and m.loops[0].joint_name == "closure" and m.loops[0].kind == J.REVOLUTE
    assert set(m.joint_names) == {"crank", "coupler", "rocker", "closure"}
    ref = mechanisms.four_bar()
    q = np.zeros(m.nq)
    q[m.q_index("crank")], q[m.q_index("coupler")], q[m.q_index("rocker")] = 0.8, -1.0, 1.9
    q = ld.loops.close_loops(m, q, hold=["crank"])
    an = ld.loops.analyze(m, q, actuated=["crank"])
    assert an.dof == 1
    qr = np.zeros(ref.nq)
    for name in ("crank", "coupler", "rocker"):
        qr[ref.q_index(name)] = q[m.q_index(name)]
    qr = ld.loops.close_loops(ref, qr, hold=["crank", "coupler", "rocker"])
    assert np.abs(ld.loops.loop_error(ref, qr)).max() < 1e-10
    v = an.W @ [1.5]
    vr = np.zeros(ref.nv)
    for name in ("crank", "coupler", "rocker"):
        vr[ref.v_index(name)] = v[m.v_index(name)]
    vr = ld.loops.project_velocity(ref, qr, vr, hold=["crank", "coupler", "rocker"])
    a = ld.loops.forward_dynamics(m, q, v, [0.4], actuated=["crank"])
    ar = ld.loops.forward_dynamics(ref, qr, vr, [0.4], actuated=["crank"])
    for name in ("crank", "coupler", "rocker"):
        assert abs(a[m.v_index(name)] - ar[ref.v_index(name)]) < 1e-9 * max(1, abs(ar).max()), name


def test_an_inertia_that_breaks_the_triangle_inequality_is_kept_with_a_warning(tmp_path):
    """Real files carry such inertias (example-robot-data's romeo arms break A + B >= C by 80 %):
    the URDF loader keeps them as Pinocchio does, and says which link; ld.Inertia refuses them."""
    path = tmp_path / "bad.urdf"
    path.write_text("""<robot name="r"><link name="base"/>
      <link name="arm"><inertial><origin xyz="0 0 0.1"/><mass value="2"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.05"/></inertial></link>
      <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>""")
    with pytest.warns(URDFWarning, match="link 'arm'.*triangle inequality"):
        model = load_urdf(path)
    I6 = model.inertia[model.body_id("arm")]
    assert I6[5, 5] == pytest.approx(0.05 + 2 * 0.0, abs=1e-15)      # izz about the joint axis, c on the axis
    assert I6[3, 3] == pytest.approx(0.01 + 2 * 0.1 ** 2, abs=1e-15)


def test_mimic_multiplier_zero_is_a_urdf_error_naming_the_file(tmp_path):
    """<mimic multiplier="0"> gave a plain ValueError without the file, where the docs promise a URDFError."""
    from linkdyn.model.io.urdf import URDFError, load_urdf
    text = robot(link("a"), link("b", 1), link("c", 1),
                 joint("lead", "revolute", "a", "b", axis="0 0 1", limit=LIM),
                 joint("follow", "revolute", "a", "c", axis="0 0 1", limit=LIM,
                       extra='<mimic joint="lead" multiplier="0"/>'))
    p = tmp_path / "zero_mimic.urdf"
    p.write_text(text)
    with pytest.raises(URDFError, match="zero_mimic.urdf.*mimic.*follow.*ratio of 0"):
        load_urdf(p)
