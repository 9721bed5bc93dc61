"""Tutorial: gears and mimic joints (docs/tutorials/gears.md).

Joints coupled by gears, q_follower = ratio q_leader + offset, make a model in reduced
coordinates: the built-in geared gripper (one motor closes two fingers of two links each), what
its coordinates mean, the reduced dynamics against the uncoupled tree, the articulated-body
algorithm with the couplings folded in (tazz, "Formulation of Featherstone's algorithm",
eqs. 30-40), a URDF with <mimic> tags, and a simulation that closes the gripper onto its stop.
The results the tutorial shows are asserted.

    python examples/tutorial_gears.py
"""
# --8<-- [start:imports]
import numpy as np

import linkdyn as ld
# --8<-- [end:imports]

# --8<-- [start:build]
# A two-finger gripper: the motor turns "grip" (the left proximal joint); the right proximal
# joint follows it mirrored (a parallel coupling: both hang from the palm), each distal joint
# follows its proximal joint at 0.7 (a serial coupling).  The motor's rotor, 2e-6 kg m^2 behind
# an 80:1 gearbox, adds 2e-6 x 80^2 = 0.0128 kg m^2 to the joint's armature.
b = ld.ModelBuilder("gripper")
b.add_body("palm", "world", ld.Revolute("z"), joint_name="wrist",
           inertia=ld.Inertia(0.6, [0, 0, 0.02], np.diag([8e-4, 4e-4, 1e-3])))
for side, y, lo, hi in (("left", 0.04, -0.3, 1.2), ("right", -0.04, -1.2, 0.3)):
    b.add_body(f"{side}_proximal", "palm", ld.Revolute("x"), placement=[0, y, 0.04], lower=[lo], upper=[hi],
               joint_name="grip" if side == "left" else "right_proximal",
               inertia=ld.Inertia(0.05, [0, 0, 0.03], np.diag([1.6e-5, 1.6e-5, 2.6e-6])))
    b.add_body(f"{side}_distal", f"{side}_proximal", ld.Revolute("x"), placement=[0, 0, 0.06],
               joint_name=f"{side}_distal", inertia=ld.Inertia(0.03, [0, 0, 0.022], np.diag([6e-6, 6e-6, 1.6e-6])))
    b.add_frame(f"{side}_tip", f"{side}_distal", placement=[0, 0, 0.045])
b.add_rotor("grip", inertia=2e-6, ratio=80.0)
b.add_gear("right_proximal", "grip", -1.0)           # q_right_proximal = -q_grip
b.add_gear("left_distal", "grip", 0.7)
b.add_gear("right_distal", "right_proximal", 0.7)    # a gear on a gear: -0.7 q_grip
model = b.build()
print(model)                 # 5 revolute joints, nq=2, nv=2, 3 gears
assert (model.nq, model.nv) == (2, 2) and model.full_model.nv == 5
# --8<-- [end:build]

# --8<-- [start:coordinates]
# q = [wrist, grip]: a follower has no coordinate of its own; its index is its leader's.
assert model.q_index("right_distal") == model.q_index("grip") == 1
q = np.array([0.2, 0.5])
q_full = model.expand(q)                             # the uncoupled tree's coordinates
full = model.full_model
assert np.isclose(q_full[full.q_index("right_distal")], -0.35)
G = model.coupling_matrix()                          # v_full = G v  (5 x 2)
print(G)
# --8<-- [end:coordinates]

# --8<-- [start:dynamics]
# The reduced dynamics is the uncoupled tree's projected by G (virtual work):
rng = np.random.default_rng(0)
v, tau = rng.standard_normal(2), rng.standard_normal(2)
qf, vf = model.expand(q, v)
M = ld.crba(model, q)
assert np.allclose(M, G.T @ ld.crba(full, qf) @ G)
assert np.allclose(ld.nonlinear_effects(model, q, v), G.T @ ld.nonlinear_effects(full, qf, vf))
assert np.allclose(ld.jacobian(model, q, "left_tip"), ld.jacobian(full, qf, "left_tip") @ G)
# ABA folds the couplings into its recursion (tazz eqs. 30-40): the same as solving with M
qdd = ld.aba(model, q, v, tau)
assert np.allclose(qdd, np.linalg.solve(M, tau - ld.nonlinear_effects(model, q, v)))
assert np.allclose(ld.rnea(model, q, v, qdd), tau)
# --8<-- [end:dynamics]

# --8<-- [start:urdf]
# URDF <mimic> tags are gears by default (mimic=False keeps the joints independent)
urdf = """<robot name="pinch">
  <link name="base"/>
  <link name="a"><inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="left" type="prismatic"><parent link="base"/><child link="a"/><axis xyz="0 1 0"/>
    <limit lower="0" upper="0.04" effort="20" velocity="0.2"/></joint>
  <joint name="right" type="prismatic"><parent link="base"/><child link="b"/><axis xyz="0 -1 0"/>
    <limit lower="0" upper="0.04" effort="20" velocity="0.2"/><mimic joint="left"/></joint>
</robot>"""
pinch = ld.parse_urdf(urdf)
assert (pinch.nv, ld.parse_urdf(urdf, mimic=False).nv) == (1, 2)
# --8<-- [end:urdf]

# --8<-- [start:simulate]
# Close the gripper with a constant motor torque: it stops on the joint limit of "grip"
# (the leader's range, narrowed by every follower's range mapped through its ratio)
sim = ld.Simulation(model, q=np.array([0.0, 0.3]), dt=1e-3,
                    controller=lambda t, q, v: np.array([0.0, 0.05]))
rec = sim.run(1.0, progress=False)
t, grip = rec.joint_series("grip")
t, tip = rec.joint_series("right_distal")            # a follower's own angle
assert np.allclose(tip, -0.7 * grip)
assert model.upper[1] == 1.2 and np.all(grip <= 1.2 + 1e-9) and grip.max() > 1.2 - 1e-6
assert sim.checks().ok
print(sim.checks())
# --8<-- [end:simulate]

# --8<-- [start:coupling]
# A linear coupling of three joints (dm_control's quadruped ties pitch, knee and ankle so):
# 0.5 q_hip + 1 q_knee + 0.5 q_ankle = 0, the ankle (the last joint named) dependent on the other two.
b = ld.ModelBuilder("leg")
for name, parent in (("thigh", "world"), ("shin", "thigh"), ("foot", "shin")):
    b.add_body(name, parent, ld.Revolute([0, 1, 0]), placement=(np.eye(3), [0, 0, -0.3 if parent != "world" else 0]),
               inertia=ld.Inertia(1.0, [0, 0, -0.15], np.diag([0.01, 0.01, 0.001])),
               joint_name={"thigh": "hip", "shin": "knee", "foot": "ankle"}[name],
               lower=[-1.0], upper=[1.0])
b.add_coupling({"hip": 0.5, "knee": 1.0, "ankle": 0.5}, offset=0.0)
leg = b.build()
G = leg.coupling_matrix()                      # q_ankle = -q_hip - 2 q_knee: two entries in its row
assert leg.nv == 2 and np.allclose(G[2], [-1.0, -2.0])
q = np.array([0.2, -0.3])
assert np.allclose(leg.expand(q), [0.2, -0.3, 0.4])
assert np.allclose(ld.crba(leg, q), G.T @ ld.crba(leg.full_model, leg.expand(q)) @ G)
# the same coupling held by the constraint layer on the uncoupled tree gives the same motion
from linkdyn.constraints import LinearCoupling, constrained_dynamics  # noqa: E402
qf, vf = leg.expand(q, np.array([0.5, 0.1]))
free = constrained_dynamics(leg.full_model, qf, vf, np.zeros(3), [LinearCoupling({"hip": 0.5, "knee": 1.0, "ankle": 0.5})])
assert np.allclose(free.qdd, G @ ld.aba(leg, q, np.array([0.5, 0.1]), np.zeros(2)))
# --8<-- [end:coupling]
