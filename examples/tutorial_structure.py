"""Tutorial: structure-varying chains (docs/tutorials/structure-varying.md).

Links that connect and let go while they move (Nakamura and Yamane 2000, secs. 4-5): a new
joint is a new loop closure with the velocity jump it imposes (sec. 4.3), a cut removes a loop
or frees a subtree (sec. 4.4, Fig. 12); a simulation schedules them by time or by condition and
keeps an energy ledger.  The results the tutorial shows are asserted.

    python examples/tutorial_structure.py
"""
# --8<-- [start:imports]
import numpy as np

import linkdyn as ld
from linkdyn import structure
# --8<-- [end:imports]

# --8<-- [start:chain]
# A hanging chain of three rods (0.5 m, 1 kg each) in the xz-plane, joints about y.
b = ld.ModelBuilder("chain")
parent = "world"
for k in range(3):
    b.add_body(f"link{k}", parent, ld.Revolute("y"), placement=[0, 0, -0.5] if k else None,
               inertia=ld.Inertia(1.0, [0, 0, -0.25], np.diag([0.021, 0.021, 1e-4])), joint_name=f"j{k}")
    parent = f"link{k}"
b.add_frame("tip", "link2", placement=[0, 0, -0.5])
chain = b.build()
q = np.array([0.9, -0.6, -0.5])
v = np.array([1.0, -2.0, 0.5])
# --8<-- [end:chain]

# --8<-- [start:connect]
# The tip takes hold of a bar where it is now: a revolute joint about y between the frame "tip"
# and the world.  It becomes a loop closure (a virtual link under the tip pointing to the world),
# and the velocity jumps: the impulse is the least-kinetic-energy change that meets the new
# constraint (a perfectly inelastic joining, Nakamura and Yamane 2000, eqs. 20-33).
change = structure.connect_state(chain, q, v, "tip", "world", ld.Revolute("y"))
closed = change.model
assert closed.nloops == 1 and closed.loops[0].name == "tip__world"
jump = change.jump
assert np.abs(ld.loops.loop_jacobian(closed, change.q) @ change.v).max() < 1e-12   # the loop holds
assert jump.energy_loss > 0                                 # kinetic energy lost, never gained
print(f"impulse {jump.impulses[0][[0, 2]].round(3)} N s, kinetic energy {jump.kinetic_before:.3f} "
      f"-> {jump.kinetic_after:.3f} J")
# --8<-- [end:connect]

# --8<-- [start:cut]
# Cutting the loop again releases the tip: the velocities are kept (a cut does not strike).
free = structure.cut(closed, change.q, change.v, "tip__world")
assert free.model.nloops == 0 and free.jump is None
for j in free.model.joint_names:                           # j0, j1, j2 (the cut joint went with its loop)
    assert np.allclose(free.v[free.model.v_slice(j)], change.v[closed.v_slice(j)])

# Cutting a joint of the tree frees the subtree below it: link2 now hangs from the world on
# a free joint "link2_free" whose state is its present pose and velocity (Fig. 12).
broken = structure.cut(chain, q, v, "j2")
assert "link2_free" in broken.model.joint_names
assert np.allclose(ld.frame_velocity(broken.model, broken.q, broken.v, "tip", "world"),
                   ld.frame_velocity(chain, q, v, "tip", "world"))
# --8<-- [end:cut]

# --8<-- [start:simulation]
# In a simulation: the tip takes hold when it comes within 5 cm of a bar at (0.84, 0, -1.0),
# and lets go at t = 1.5 s.  Events are checked after every step.
b.add_body("bar", "world", ld.Fixed(), placement=[0.84, 0, -1.0])
chain = b.build()
sim = ld.Simulation(chain, q, v, dt=1e-3)
sim.when(sim.distance_below("tip", "bar", 0.05), "connect", "tip", "bar", ld.Revolute("y"))
sim.at(1.5, "cut", "tip__bar")
rec = sim.run(until=2.5, progress=False)
for e in rec.events:
    print(f"t = {e.t:.3f} s: {e.kind} {e.name}, energy taken {e.energy_loss:.3f} J")
assert [e.kind for e in rec.events] == ["connect", "cut"]

# The energy ledger: what the actuators, the limits and contacts, and the structure changes put
# in or took (J).  Here only the connection took energy; E(t) - E(0) - sum(work) is the
# integrator's error, one of the checks a reviewer would ask for.
assert np.isclose(sim.work[2], -rec.events[0].energy_loss)
checks = sim.checks()
print(checks)
assert checks.ok
# --8<-- [end:simulation]

# --8<-- [start:highbar]
# The high-bar scene of the README: a 16-DoF human figure hangs from a bar by both hands
# (revolute grips), swung back; a posture controller holds a gymnast's posture, and the right
# hand lets go at t = 1 s.
scenarios = ld.models.scenarios                    # the scenes of the README and the demos

model, q0 = scenarios.high_bar(swing=-0.8)
sim = ld.Simulation(model, q0, dt=1e-3, controller=scenarios.posture_controller(model, q0, frequency=8.0))
sim.at(1.0, "cut", "r_grip", "bar")
rec = sim.run(until=1.2, progress=False)
assert [(e.kind, e.name) for e in rec.events if e.kind != "impact"] == [("cut", "r_grip__bar")]
assert sim.checks().ok
# --8<-- [end:highbar]

print("tutorial_structure: all checks passed")
