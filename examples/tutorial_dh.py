"""Tutorial: DH arms and manipulability (docs/tutorials/dh-manipulability.md).

Serial arms from Denavit-Hartenberg tables (standard and modified), the built-in PUMA 560,
Yoshikawa's manipulability and its ellipsoid, analytic Jacobians and inverse kinematics.
The results the tutorial shows are asserted.

    python examples/tutorial_dh.py [--plot ellipses.png]
"""
import argparse

# --8<-- [start:imports]
import numpy as np

import linkdyn as ld
from linkdyn.models import dh
# --8<-- [end:imports]

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--plot", help="write the manipulability ellipses of the planar arm to this PNG file")
args = parser.parse_args()

# --8<-- [start:table]
# A 3-joint arm from a standard DH table: A_i = Rot_z(theta_i) Trans_z(d_i) Trans_x(a_i) Rot_x(alpha_i).
# theta is the offset of a revolute joint (theta_i = theta + q_i), d that of a prismatic one.
links = [
    ld.DHLink(a=0.0, alpha=np.pi / 2, d=0.3, mass=2.0, inertia=[0.01, 0.01, 0.01]),
    ld.DHLink(a=0.4, mass=1.5, com=(-0.2, 0, 0), inertia=[0.001, 0.02, 0.02]),
    ld.DHLink(a=0.3, mass=1.0, com=(-0.15, 0, 0), inertia=[0.001, 0.008, 0.008], lower=-2.5, upper=2.5),
]
arm = ld.from_dh(links, name="rrr")
print(dh.dh_table(links))

# Frames "link0" (the base) .. "link3" (DH frame i) and "tool"; bodies "body1".., joints "joint1"..
q = np.array([0.3, -0.5, 1.1])
T = ld.frame_pose(arm, q, "tool")
T_dh = np.eye(4)
for L, qi in zip(links, q):
    T_dh = T_dh @ dh.dh_transform(L.a, L.alpha, L.d, L.theta + qi)
assert np.allclose(T, T_dh)
# --8<-- [end:table]

# --8<-- [start:modified]
# The same arm in the modified (Craig) convention: row i carries a_{i-1} and alpha_{i-1}, and the
# last link's a_n, alpha_n go into the tool transform.
modified = [ld.DHLink(a=0.0, alpha=0.0, d=0.3),
            ld.DHLink(a=0.0, alpha=np.pi / 2),
            ld.DHLink(a=0.4, alpha=0.0)]
arm_mod = ld.from_dh(modified, convention="modified", tool=dh.dh_transform(0.3, 0.0, 0.0, 0.0))
assert np.allclose(ld.frame_pose(arm_mod, q, "tool"), T)
# --8<-- [end:modified]

# --8<-- [start:puma]
# Built-in arms: puma560 (Corke's mdl_puma560 parameters), stanford_arm, scara, planar_2link, ...
puma = ld.models.puma560()
print(puma.nq, "joints, limits (deg):", np.degrees(puma.upper).round())
q_puma = np.array([0.0, 0.8, -1.2, 0.0, 0.6, 0.0])
J = ld.jacobian(puma, q_puma, "tool", "local_world_aligned")   # rows [p'; omega], world axes
# --8<-- [end:puma]

# --8<-- [start:manipulability]
# Yoshikawa's manipulability w = sqrt(det(J J^T)) = the product of the singular values of J.
# For the planar 2-link arm's tip velocity in its plane (rows x, y: part=(0, 1)),
# w = l1 l2 |sin q2|: zero when the arm is stretched or folded, largest at q2 = +-90 degrees.
planar = ld.models.planar_2link(l1=1.0, l2=0.8)
q2 = np.linspace(-np.pi, np.pi, 181)
Q = np.column_stack([np.zeros_like(q2), q2])                     # a stack of configurations
w = ld.manipulability(planar, Q, "tool", part=(0, 1))
assert np.allclose(w, 1.0 * 0.8 * np.abs(np.sin(q2)))
print("best elbow angle:", np.degrees(q2[np.argmax(w)]), "deg")

# The other measures: the condition number (>= 1, smaller is better) and the stochastic one.
kappa = ld.manipulability(puma, q_puma, "tool", kind="condition")
w_s = ld.manipulability(puma, q_puma, "tool", kind="stochastic")
s = np.linalg.svd(J, compute_uv=False)
assert np.isclose(kappa, s[0] / s[-1]) and np.isclose(ld.manipulability(puma, q_puma, "tool"), np.prod(s))
assert w_s > 0

# The manipulability ellipsoid: the image of the unit ball of joint speeds, radii the singular
# values, axes the left singular vectors (world axes).
radii, axes = ld.manipulability_ellipsoid(planar, [0.3, 1.2], "tool", part=(0, 1))
assert np.isclose(np.prod(radii), ld.manipulability(planar, [0.3, 1.2], "tool", part=(0, 1)))

# Joint speeds weighted by their limits: W = 1 / v_max^2 gives the Jacobian J diag(v_max).
v_max = np.array([2.0, 1.0])
w_weighted = ld.manipulability(planar, [0.3, 1.2], "tool", part=(0, 1), weight=1 / v_max**2)
assert np.isclose(w_weighted, np.prod(v_max) * np.prod(radii))
# --8<-- [end:manipulability]

# --8<-- [start:plot]
if args.plot:                                                    # --plot ellipses.png
    import matplotlib
    matplotlib.use("Agg")                                        # no window
    ax = ld.plot_manipulability_ellipses(planar, [[0.2, q] for q in (0.4, 1.0, 1.6, 2.4)], "tool", scale=0.3)
    ax.figure.savefig(args.plot, dpi=100)
# --8<-- [end:plot]

# --8<-- [start:analytic]
# The analytic Jacobian maps q' to [p'; phi'] for orientation coordinates phi
# (roll-pitch-yaw here; "zyx", "zyz" and "quaternion" also exist).
J_A = ld.analytic_jacobian(puma, q_puma, "tool", orientation="rpy")
qd = np.array([0.1, -0.2, 0.3, 0.2, -0.1, 0.4])
h = 1e-6
x_plus = ld.analysis.analytic_pose(puma, q_puma + h * qd, "tool")
x_minus = ld.analysis.analytic_pose(puma, q_puma - h * qd, "tool")
assert np.allclose(J_A @ qd, (x_plus - x_minus) / (2 * h), atol=1e-6)
# --8<-- [end:analytic]

# --8<-- [start:ik]
# Inverse kinematics: damped least squares with the joint limits and random restarts.
target = ld.frame_pose(puma, np.array([0.4, 0.5, -0.9, 0.3, 0.7, -0.2]), "tool")
sol = ld.inverse_kinematics(puma, "tool", target, rng=0)
assert sol.success and sol.position_error < 1e-6 and sol.orientation_error < 1e-6
assert np.all(sol.q >= puma.lower) and np.all(sol.q <= puma.upper)

# The planar 2-link arm in closed form: both elbow solutions.
for q_ik in ld.planar_2link_ik(1.0, 0.8, 1.2, 0.5):
    assert np.allclose(ld.frame_pose(planar, q_ik, "tool")[:2, 3], [1.2, 0.5])
# --8<-- [end:ik]

# --8<-- [start:redundant]
# A redundant task: the tool position of the 6-joint PUMA (3 of 6 dofs).  Once it is met, steps in
# the null space of the task (Liegeois 1977) move the joints towards the middle of their ranges
# without moving the tool; secondary="manipulability" raises Yoshikawa's measure the same way.
p_target = target[:3, 3]
plain = ld.inverse_kinematics(puma, "tool", p_target, q0=q_puma, mode="position")
centred = ld.inverse_kinematics(puma, "tool", p_target, q0=q_puma, mode="position", secondary="joint_centering")
assert plain.success and centred.success and centred.position_error < 1e-6
centre = (puma.lower + puma.upper) / 2
h_plain = -0.5 * np.sum((plain.q - centre) ** 2)
assert centred.objective > h_plain
print(f"joint centring: {h_plain:.3f} -> {centred.objective:.3f}")
# --8<-- [end:redundant]

print("tutorial_dh: all checks passed")
