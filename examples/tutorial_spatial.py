"""Tutorial: spatial algebra and rotations (docs/tutorials/spatial.md).

Rotation matrices, roll-pitch-yaw and Euler angles, quaternions, exp/log on SO(3) and SE(3),
Plücker transforms of motions and forces, and spatial inertias, with ``linkdyn.spatial``.
The results the tutorial shows are asserted.

    python examples/tutorial_spatial.py
"""
# --8<-- [start:imports]
import numpy as np

from linkdyn import spatial as sp
# --8<-- [end:imports]

# --8<-- [start:rotations]
# Elementary rotations and roll-pitch-yaw angles: R = Rz(yaw) Ry(pitch) Rx(roll), as in URDF.
rpy = np.array([0.3, -0.4, 1.2])                       # [roll, pitch, yaw] in rad
R = sp.rpy_to_matrix(rpy)
assert np.allclose(R, sp.rotz(1.2) @ sp.roty(-0.4) @ sp.rotx(0.3))
assert sp.is_rotation_matrix(R)
assert np.allclose(sp.matrix_to_rpy(R), rpy)           # principal branch: pitch in [-pi/2, pi/2]

# At gimbal lock (pitch = pi/2) only roll - yaw is defined: roll is set to 0 and the angles
# still reproduce the matrix.
R_lock = sp.rpy_to_matrix([0.5, np.pi / 2, 0.2])
assert np.allclose(sp.rpy_to_matrix(sp.matrix_to_rpy(R_lock)), R_lock)

# ZYZ Euler angles, theta in [0, pi]
zyz = sp.matrix_to_euler_zyz(R)
assert np.allclose(sp.euler_zyz_to_matrix(zyz), R)
# --8<-- [end:rotations]

# --8<-- [start:quaternions]
# Quaternions are [x, y, z, w] (scalar last) with the Hamilton product: R(a * b) = R(a) R(b).
a = sp.quat_from_axis_angle([0, 0, 1], 0.7)
b = sp.matrix_to_quat(R)                               # Shepperd's method, w >= 0
assert np.allclose(sp.quat_to_matrix(sp.quat_multiply(a, b)), sp.quat_to_matrix(a) @ R)
assert np.allclose(sp.quat_rotate(a, [1.0, 0, 0]), [np.cos(0.7), np.sin(0.7), 0])

# The quaternion rate of an angular velocity.  linkdyn's joint velocities are in the body
# frame (as Pinocchio's): frame="body" is the default; frame="world" is the textbook form.
omega = np.array([0.1, -0.2, 0.3])
dq_body = sp.quat_derivative(b, omega)                 # 0.5 q * [omega, 0]
dq_world = sp.quat_derivative(b, R @ omega, frame="world")   # the same motion seen in the world
assert np.allclose(dq_body, dq_world)
assert np.allclose(sp.quat_angular_velocity(b, dq_body), omega)
# --8<-- [end:quaternions]

# --8<-- [start:exp_log]
# exp and log on SO(3): a rotation vector <-> a rotation matrix (exact near 0 and near pi).
w = np.array([0.0, 0.0, np.pi - 1e-9])
assert np.allclose(sp.log3(sp.exp3(w)), w)
axis, angle = sp.matrix_to_axis_angle(R)
assert np.allclose(sp.axis_angle_to_matrix(axis, angle), R)

# exp and log on SE(3): a twist nu = [v; w] <-> a pose (R, p), as pinocchio.exp6 / log6.
nu = np.array([0.2, 0.0, -0.1, 0.3, 0.4, -0.5])
R6, p6 = sp.exp6(nu)
assert np.allclose(sp.log6(R6, p6), nu)

# Homogeneous transforms: T = [[R, p], [0, 1]] maps b-coordinates to a-coordinates.
T_ab = sp.transform(R, [1.0, 2.0, 3.0])
T_bc = sp.transform(R6, p6)
T_ac = sp.transform_compose(T_ab, T_bc)
x_c = np.array([0.1, 0.2, 0.3])
assert np.allclose(sp.transform_point(T_ac, x_c), sp.transform_point(T_ab, sp.transform_point(T_bc, x_c)))
assert np.allclose(sp.transform_inverse(T_ac) @ T_ac, np.eye(4))
# --8<-- [end:exp_log]

# --8<-- [start:plucker]
# Spatial vectors are [linear; angular].  aXb maps motion vectors from frame b to frame a,
# aX*b = aXb^-T maps force vectors, so the power f . v is the same in both frames
# (Featherstone 2008, ch. 2; his vectors are [angular; linear], the blocks are permuted).
p = np.array([1.0, 2.0, 3.0])
X = sp.motion_transform(R, p)
Xf = sp.force_transform(R, p)
assert np.allclose(Xf, np.linalg.inv(X).T)
v_b = np.array([0.1, 0.2, 0.3, -1.0, 0.5, 0.2])        # a twist in b: [v; w]
f_b = np.array([3.0, -1.0, 2.0, 0.4, 0.1, -0.2])       # a wrench in b: [f; n]
assert np.isclose((Xf @ f_b) @ (X @ v_b), f_b @ v_b)

# Featherstone's X(R, r) maps the other way: X(R, r) = motion_transform_inverse(R, r).
assert np.allclose(sp.motion_transform_inverse(R, p), np.linalg.inv(X))

# Cross products: (v x) on motions, (v x*) = -(v x)^T on forces.
assert np.allclose(sp.cross_force(v_b), -sp.cross_motion(v_b).T)
assert np.allclose(sp.cross_motion(v_b) @ v_b, 0.0)    # v x v = 0
# --8<-- [end:plucker]

# --8<-- [start:inertia]
# A spatial inertia about the body origin from the mass, the centre of mass and the
# rotational inertia about the centre of mass (pinocchio.Inertia(m, c, I_c).matrix()).
I_b = sp.spatial_inertia(2.0, [0.0, 0.0, 0.1], np.diag([0.02, 0.02, 0.01]))
m, c, Ic = sp.inertia_parameters(I_b)
assert np.isclose(m, 2.0) and np.allclose(c, [0, 0, 0.1])

# Moved to frame a, it keeps the kinetic energy: 0.5 v_a^T I_a v_a = 0.5 v_b^T I_b v_b.
I_a = sp.inertia_transform(R, p, I_b)
assert np.isclose(sp.kinetic_energy(I_a, X @ v_b), sp.kinetic_energy(I_b, v_b))
# --8<-- [end:inertia]

# --8<-- [start:batched]
# Every function takes a stack with leading batch axes: 1000 random rotations at once.
rng = np.random.default_rng(0)
Q = sp.quat_normalize(rng.standard_normal((1000, 4)))
Rs = sp.quat_to_matrix(Q)                              # (1000, 3, 3)
assert Rs.shape == (1000, 3, 3) and sp.is_rotation_matrix(Rs).all()
back = sp.matrix_to_quat(Rs)                           # q and -q are the same rotation
assert np.allclose(np.abs(np.sum(back * Q, axis=1)), 1.0)
# --8<-- [end:batched]

print("tutorial_spatial: all checks passed")
