"""Tutorial: contacts and joint limits (docs/tutorials/contacts.md).

Contact points and spheres against planes with Coulomb friction and Newton's restitution,
joint limits and ball-joint swing cones, the event-driven scheme and the time-stepping scheme of
Stewart and Trinkle (1996) and Anitescu and Potra (1997), and the inverse inertia between
frames.  The results the tutorial shows are asserted.

    python examples/tutorial_contacts.py
"""
# --8<-- [start:imports]
import numpy as np

import linkdyn as ld
# --8<-- [end:imports]

# --8<-- [start:slide]
G, MU = 9.81, 0.5

# A 2 kg box on four corner points resting on the ground, pushed to slide at 1 m/s.
b = ld.ModelBuilder("box")
b.add_body("box", "world", ld.FreeFlyer(), inertia=ld.Inertia(2.0, [0, 0, 0], np.eye(3) * 0.01))
for x in (-0.1, 0.1):
    for y in (-0.1, 0.1):
        b.add_contact("box", [x, y, -0.05], friction=MU)
b.add_ground()
box = b.build()
q = ld.neutral(box)
q[2] = 0.05                                    # the corners on the ground
v = np.zeros(box.nv)
v[0] = 1.0

# Coulomb friction decelerates it at mu g: it stops after v^2 / (2 mu g) = 0.1019 m.
sim = ld.Simulation(box, q, v, dt=1e-3)        # limits=True, contacts=True, contact_method="events"
sim.run(until=0.5)
slid = sim.q[0]
assert abs(slid - 1.0 / (2 * MU * G)) < 1e-4, slid
assert sim.checks().ok                         # no pull, no penetration, the energy ledger closes

# The time-stepping scheme (one velocity-level complementarity problem per step, first order,
# one compiled call per step for a tree) gets the same distance to about a millimetre.
ts = ld.Simulation(box, q, v, dt=1e-3, contact_method="timestep")
ts.run(until=0.5)
assert abs(ts.q[0] - slid) < 2e-3
print(f"slid {slid:.5f} m (events), {ts.q[0]:.5f} m (time stepping); exact {1 / (2 * MU * G):.5f} m")
# --8<-- [end:slide]

# --8<-- [start:forces]
# The recording holds every contact's force [normal, friction 1, friction 2] at every sample.
seg = sim.recording.segments[0]
a = seg.arrays()
print(seg.unit_names)                          # 'box_contact0/ground', ...
k = np.searchsorted(a["t"], 0.1)               # while it slides
normal = a["unit_force"][k, :, 0]
assert np.isclose(normal.sum(), 2.0 * G)       # the four normal forces carry the weight
friction = np.linalg.norm(a["unit_force"][k, :, 1:], axis=1)
assert np.allclose(friction, MU * normal)      # sliding: on the rim of the friction cone
# --8<-- [end:forces]

# --8<-- [start:bounce]
# A ball (a contact sphere of radius 0.1 m) dropped from 1 m with a coefficient of restitution
# of 0.5: the impact is located inside the step and solved by an impulse; it bounces back up to
# 0.5^2 x 1 m.
b = ld.ModelBuilder("ball")
b.add_body("ball", "world", ld.FreeFlyer(), inertia=ld.Inertia(0.5, [0, 0, 0], np.eye(3) * 0.002))
b.add_contact("ball", radius=0.1, restitution=0.5)
b.add_ground()
ball = b.build()
q = ld.neutral(ball)
q[2] = 1.1
sim = ld.Simulation(ball, q, dt=1e-3)
rec = sim.run(until=1.2)
impact = rec.events[0]
assert impact.kind == "impact" and abs(impact.t - np.sqrt(2 / G)) < 1e-6
a = rec.segments[-1].arrays()
apex = a["q"][a["t"] > impact.t, 2].max() - 0.1
assert abs(apex - 0.25) < 1e-4, apex
print(f"impact at t = {impact.t:.6f} s, bounced up to {apex:.5f} m, took {impact.energy_loss:.3f} J")
# --8<-- [end:bounce]

# --8<-- [start:limits]
# Joint limits: a 1 kg arm on a revolute joint, released horizontal, falls onto its stop at
# 0.5 rad and stays there.
b = ld.ModelBuilder("arm")
b.add_body("arm", "world", ld.Revolute("y"), lower=-1.0, upper=0.5,
           inertia=ld.Inertia(1.0, [0.3, 0, 0], np.diag([1e-3, 0.03, 0.03])))
arm = b.build()
sim = ld.Simulation(arm, [0.0], dt=1e-3)
rec = sim.run(until=1.5)
assert abs(sim.q[0] - 0.5) < 1e-4 and sim.checks().ok
seg = rec.segments[-1]
a = seg.arrays()
upper = seg.unit_names.index("arm_joint.upper")
# at rest on the stop, the limit's torque balances gravity's m g x_c cos(q)
assert np.isclose(a["unit_force"][-1, upper, 0], 1.0 * G * 0.3 * np.cos(0.5), rtol=1e-6)
# --8<-- [end:limits]

# --8<-- [start:cone]
# A ball joint with a swing cone (Baerlocher and Boulic 2001): a pendulum hanging along -z whose
# axis may tilt at most 0.4 rad from -z, and twist at most +-0.3 rad about itself.
b = ld.ModelBuilder("cone")
b.add_body("bob", "world", ld.Spherical(swing=0.4, twist=(-0.3, 0.3), axis="-z"),
           inertia=ld.Inertia(1.0, [0, 0, -0.5], np.diag([0.01, 0.01, 0.001])))
cone = b.build()
v = np.array([2.0, 0.5, 0.0])                   # a push sideways (body-frame angular velocity)
sim = ld.Simulation(cone, ld.neutral(cone), v, dt=1e-3)
rec = sim.run(until=1.0)
tilt = [np.arccos(ld.frame_pose(cone, qk, "bob")[2, 2]) for qk in rec.segments[-1].arrays()["q"]]   # angle of the bob's -z to -z
assert max(tilt) < 0.4 + 1e-4 and max(tilt) > 0.39    # it reached the cone and stayed inside
assert sim.checks().ok
# --8<-- [end:cone]

# --8<-- [start:delassus]
# The inverse inertia J M^-1 J^T between frames (the Delassus matrix), by the articulated-body
# recursion without forming M^-1: how a force at one frame accelerates another.
fig = ld.models.human_figure()
q = ld.models.standing_configuration(fig)
Lam_inv = ld.contact.inverse_inertia(fig, q, ["l_sole", "r_sole"])
J = np.vstack([ld.jacobian(fig, q, f, "local_world_aligned") for f in ("l_sole", "r_sole")])
assert np.allclose(Lam_inv, J @ np.linalg.solve(ld.crba(fig, q), J.T))
# --8<-- [end:delassus]

print("tutorial_contacts: all checks passed")

# --8<-- [start:geoms]
# collision geometry: shapes on bodies, and the contacts between them (not used by Simulation yet)
b = ld.ModelBuilder("geoms")
b.add_geom("world", "plane", (), name="floor")
b.add_body("crate", "world", ld.FreeFlyer(), inertia=ld.Inertia(2.0, [0, 0, 0], np.diag([0.02, 0.02, 0.02])))
b.add_geom("crate", "box", (0.2, 0.2, 0.1), name="crate", friction=0.6)
b.add_body("rod", "world", ld.FreeFlyer(), inertia=ld.Inertia(0.5, [0, 0, 0], np.diag([0.01, 0.01, 0.001])))
b.add_geom("rod", "capsule", (0.03, 0.25), placement=(ld.spatial.roty(np.pi / 2), [0, 0, 0]), name="rod")
geoms = b.build()
q = ld.neutral(geoms)
q[:3] = [0.0, 0.0, 0.099]                       # the crate sinks 1 mm into the floor
q[7:10] = [0.1, 0.0, 0.227]                     # the rod lies on it, 2 mm deep, over its edge
c = ld.contact.collide(geoms, q)
assert c.names().count(("floor", "crate")) == 4 and c.names().count(("rod", "crate")) == 2
assert np.allclose(c.dist, [-0.001] * 4 + [-0.002] * 2)
assert np.allclose(c.normal[4:], [0, 0, -1])    # from the rod (geom 1) to the crate (geom 2)
lifted = q + np.r_[0, 0, 0.01, 0, 0, 0, 0, 0, 0, 0.02, 0, 0, 0, 0]   # 9 mm over the floor, 8 mm over the crate
assert len(ld.contact.collide(geoms, lifted)) == 0 and len(ld.contact.collide(geoms, lifted, margin=0.01)) == 6
# --8<-- [end:geoms]

# --8<-- [start:georec]
# the geom contacts in the recording: the crate on the floor, the rod resting on the crate
q = ld.neutral(geoms)
q[:3] = [0.0, 0.0, 0.1]                         # the crate on the floor
q[7:10] = [0.1, 0.0, 0.23]                      # the rod on the crate (0.2 + its radius 0.03)
rec = ld.Simulation(geoms, q, dt=1e-3).run(until=0.2)       # "auto": time stepping (the contacts are geoms)
seg = rec.segments[0]
print(seg.geom_contacts(-1).names)              # ['floor/crate', 'floor/crate', ..., 'rod/crate', 'rod/crate']
t, pairs, fn = rec.geom_normal_force()          # the normal force summed per pair of geoms
g = 9.81
assert np.allclose(fn[1:, pairs.index("floor/crate")], 2.5 * g) and np.allclose(fn[1:, pairs.index("rod/crate")], 0.5 * g)
t, bodies, w = rec.geom_wrench("body")          # [force; moment about the world origin] on each body
assert np.allclose(w[1:, bodies.index("rod"), :3], [0, 0, 0.5 * g])    # the crate holds the rod up
# --8<-- [end:georec]
