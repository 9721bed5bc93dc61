"""Tutorial: closed kinematic chains (docs/tutorials/closed-chains.md).

Loop closures as virtual links, assembly, the loop Jacobian and the W, S, H of Nakamura and
Yamane (2000, secs. 2-3), closed-chain forward and inverse dynamics, redundant actuation, and
a simulation.  The results the tutorial shows are asserted.

    python examples/tutorial_loops.py
"""
# --8<-- [start:imports]
import numpy as np

import linkdyn as ld
from linkdyn import loops
from linkdyn.models.mechanisms import rod
# --8<-- [end:imports]

# --8<-- [start:build]
# A four-bar linkage in the vertical xz-plane (joint axes y): crank 0.3 m, coupler 1.0 m,
# rocker 0.8 m, ground 1.0 m.  The tree is crank -> coupler, and the rocker on the ground; the
# loop is cut at the coupler-rocker joint.  The cut joint hangs from the coupler's end as a
# *virtual link* (no inertia) that must coincide with the rocker's tip, its *real link*.
b = ld.ModelBuilder("my_four_bar")
b.add_body("crank", "world", ld.Revolute("y"), inertia=rod(0.6, 0.3), joint_name="crank")
b.add_body("coupler", "crank", ld.Revolute("y"), placement=[0.3, 0, 0], inertia=rod(2.0, 1.0), joint_name="coupler")
b.add_body("rocker", "world", ld.Revolute("y"), placement=[1.0, 0, 0], inertia=rod(1.6, 0.8), joint_name="rocker")
b.add_loop("loop", "coupler", "rocker", ld.Revolute("y"), placement=[1.0, 0, 0], real_placement=[0.8, 0, 0])
fb = b.build()
print(fb.nq, "coordinates (the cut joint's angle included),", fb.nloops, "loop")   # 4, 1
# ld.models.four_bar() builds this same mechanism (rods of 2 kg per metre).
# --8<-- [end:build]

# --8<-- [start:assemble]
# q = 0 is not closed.  close_loops assembles the mechanism by Newton's method on the loop error,
# keeping the held joints where they are.
q = loops.close_loops(fb, [0.8, -1.0, 1.9, 0.5], hold=["crank"])
assert np.abs(loops.loop_error(fb, q)).max() < 1e-10 and q[0] == 0.8
# --8<-- [end:assemble]

# --8<-- [start:analyze]
# The closed-chain analysis (Nakamura and Yamane 2000, eqs. 5-12): J_C, the m independent
# constraints, N_F = N_J - m degrees of freedom, the dependent velocities theta_S and the
# generalized ones theta_G, H = -J_S^-1 J_G, W = d theta_O / d theta_G and S = d theta_A / d theta_G.
an = loops.analyze(fb, q, actuated=["crank"])
assert an.m == 3 and an.dof == 1          # a planar loop: 3 of the 6 rows are independent
assert list(an.G_dofs) == [fb.v_slice("crank").start]   # the actuated crank is theta_G

v = an.W @ [2.0]                          # every joint velocity from theta_G' = 2 rad/s
assert np.abs(loops.loop_jacobian(fb, q) @ v).max() < 1e-12
# --8<-- [end:analyze]

# --8<-- [start:forward]
# Forward dynamics under a crank torque of 0.5 N m, three ways that agree on a closed state:
# the compiled multiplier (KKT) form, W^T M W from one CRBA, and the unit-vector method (sec. 2.4).
qdd = {m: loops.forward_dynamics(fb, q, v, [0.5], actuated=["crank"], method=m)
       for m in ("kkt", "projected", "unit_vector")}
assert np.allclose(qdd["kkt"], qdd["projected"]) and np.allclose(qdd["kkt"], qdd["unit_vector"])
a = qdd["kkt"]
assert np.abs(loops.loop_jacobian(fb, q) @ a + loops.loop_bias(fb, q, v)).max() < 1e-9   # J_C a + J_C' v = 0
# --8<-- [end:forward]

# --8<-- [start:inverse]
# Inverse dynamics through the virtually cut open chain: tau_O = RNEA(theta, theta', theta''),
# tau_G = W^T tau_O (eq. 1) = S^T tau_A (eq. 2).  It gives back the 0.5 N m.
r = loops.inverse_dynamics(fb, q, v, a, ["crank"])
assert np.allclose(r.tau_A, [0.5])
print("force of the rocker on the coupler's end [f; n]:", r.loop_forces()[0].round(3))
# --8<-- [end:inverse]

# --8<-- [start:redundant]
# The five-bar parallel arm: 2 degrees of freedom.  With three actuators (redundant actuation)
# the torques are the least-norm ones that produce the motion.
five = ld.models.five_bar()
q5 = loops.close_loops(five, [1.2, -1.0, 1.6, 1.0, 0.0], hold=["left_base", "right_base"])
an5 = loops.analyze(five, q5, actuated=["left_base", "right_base"])
v5 = an5.W @ [0.5, -0.3]
a5 = an5.accelerations([1.0, 2.0], loops.loop_bias(five, q5, v5))     # theta_S'' = H theta_G'' + H' theta_G'
two = loops.inverse_dynamics(five, q5, v5, a5, ["left_base", "right_base"])
three = loops.inverse_dynamics(five, q5, v5, a5, ["left_base", "right_base", "left_elbow"])
assert np.linalg.norm(three.tau_A) < np.linalg.norm(two.tau_A)
# The three torques produce the same motion as the two.
tau3 = loops.forward_dynamics(five, q5, v5, three.tau_A, actuated=["left_base", "right_base", "left_elbow"])
assert np.allclose(tau3, a5)

# One actuator cannot produce an arbitrary motion of a 2-dof mechanism: an error says so.
try:
    loops.inverse_dynamics(five, q5, v5, a5, ["left_base"])
    raise AssertionError("expected a ValueError")
except ValueError as exc:
    print("under-actuated:", str(exc)[:60], "...")
# --8<-- [end:redundant]

# --8<-- [start:simulate]
# Simulation: RK4, the loops projected back after every step.  The passive four-bar swings under
# gravity; its energy is kept and its loop stays closed.
tr = ld.sim.simulate(fb, q, v, duration=2.0, dt=1e-3)
print(f"energy drift {np.ptp(tr.energy):.1e} J, largest loop error {tr.loop_error.max():.1e}")
assert np.ptp(tr.energy) < 1e-6 and tr.loop_error.max() < 1e-9
# --8<-- [end:simulate]

print("tutorial_loops: all checks passed")
