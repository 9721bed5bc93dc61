"""Tutorial: the dynamics algorithms (docs/tutorials/dynamics.md).

Inverse dynamics by the recursive Newton-Euler algorithm (RNEA), the joint-space inertia by the
composite rigid body algorithm (CRBA), forward dynamics by the articulated body algorithm (ABA),
all of Featherstone (2008); the tree-sparse LTDL factorization of M, the Coriolis matrix, the
regressor, stacks of states and a simulation.  The results the tutorial shows are asserted.

    python examples/tutorial_dynamics.py
"""
# --8<-- [start:imports]
import numpy as np

import linkdyn as ld
# --8<-- [end:imports]

# --8<-- [start:model]
# A floating base (a free joint: q = [x, y, z, qx, qy, qz, qw], v = [v; w] in the body frame)
# carrying two 2-dof arms: a universal joint, a revolute elbow with a rotor inertia (armature)
# and viscous and Coulomb friction.
b = ld.ModelBuilder("satellite")
b.add_body("base", "world", ld.FreeFlyer(), inertia=ld.Inertia(10.0, [0, 0, 0], np.diag([0.4, 0.5, 0.6])))
for side, y in (("l", 0.3), ("r", -0.3)):
    b.add_body(f"{side}_upper", "base", ld.Universal("x", "y"), placement=[0, y, 0],
               inertia=ld.Inertia(1.0, [0, 0, -0.15], np.diag([0.008, 0.008, 0.001])))
    b.add_body(f"{side}_fore", f"{side}_upper", ld.Revolute("y"), placement=[0, 0, -0.3],
               inertia=ld.Inertia(0.6, [0, 0, -0.12], np.diag([0.003, 0.003, 0.0005])),
               armature=0.01, damping=0.05, friction=0.02)
    b.add_frame(f"{side}_hand", f"{side}_fore", placement=[0, 0, -0.25])
model = b.build()
print(model.nq, "coordinates,", model.nv, "velocities")          # 13 and 12

rng = np.random.default_rng(0)
q = ld.random_configuration(model, rng=1)                      # unit quaternion included
v, a = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
# --8<-- [end:model]

# --8<-- [start:three]
tau = ld.rnea(model, q, v, a)          # inverse dynamics: tau = M(q) a + b(q, v)
M = ld.crba(model, q)                  # joint-space inertia (full, symmetric, positive definite)
qdd = ld.aba(model, q, v, tau)         # forward dynamics: a = M^-1 (tau - b)

b_qv = ld.nonlinear_effects(model, q, v)                       # = rnea(q, v, 0)
assert np.allclose(tau, M @ a + b_qv)
assert np.allclose(qdd, a)                                     # ABA inverts RNEA
assert np.allclose(qdd, np.linalg.solve(M, tau - b_qv))        # ... and agrees with the CRBA solve
assert np.allclose(M, M.T) and np.linalg.eigvalsh(M).min() > 0
assert np.allclose(ld.generalized_gravity(model, q), ld.rnea(model, q, np.zeros(model.nv), np.zeros(model.nv)))
# --8<-- [end:three]

# --8<-- [start:mass_matrix]
# Three ways to M(q): CRBA, one RNEA per unit acceleration, and sum J_i^T I_i J_i (Walker and Orin 1982).
for method in ("unit_vector", "jacobian"):
    assert np.allclose(ld.mass_matrix(model, q, method=method), M)

# M^-1 b without forming M^-1: CRBA and the tree-sparse LTDL factorization (Featherstone 2008, sec. 6.5).
rhs = rng.standard_normal(model.nv)
assert np.allclose(ld.solve_mass_matrix(model, q, rhs), np.linalg.solve(M, rhs))
fact = ld.mass_matrix_cholesky(model, q)                       # reuse it for many right-hand sides
assert np.allclose(fact.solve(rhs), np.linalg.solve(M, rhs))
# --8<-- [end:mass_matrix]

# --8<-- [start:lagrange]
# Lagrange's form D(q) q'' + C(q, q') q' + G(q) + F(q') = tau (Spong, Hutchinson and Vidyasagar 2006, ch. 7).
D, C, G, F = ld.lagrangian_terms(model, q, v)
assert np.allclose(D @ a + C @ v + G + F, tau)
K = ld.mass_matrix_derivative(model, q, v) - 2 * C             # D' - 2C is skew-symmetric
assert np.allclose(K, -K.T)
assert np.isclose(ld.kinetic_energy(model, q, v), 0.5 * v @ M @ v)
# --8<-- [end:lagrange]

# --8<-- [start:fext]
# External forces: one spatial force [f; n] per body, in the body's own frame.  A push on the
# left forearm accelerates the system as the same torques J^T f would.
fext = np.zeros((model.nbody, 6))
fore = model.body_id("l_fore")
fext[fore] = [0.0, 0.0, 5.0, 0.0, 0.0, 0.0]                    # 5 N along the forearm's z, at its origin
J_fore = ld.jacobian(model, q, "l_fore", reference="local")    # (6, nv) in the forearm's frame
assert np.allclose(ld.aba(model, q, v, tau, fext=fext), ld.aba(model, q, v, tau + J_fore.T @ fext[fore]))
assert np.allclose(ld.rnea(model, q, v, a, fext=fext), tau - J_fore.T @ fext[fore])
# --8<-- [end:fext]

# --8<-- [start:regressor]
# The dynamics is linear in the inertial parameters (10 per body): tau = Y(q, v, a) pi.
Y = ld.joint_torque_regressor(model, q, v, a, with_joint_terms=True)
pi = ld.inertial_parameters(model, with_joint_terms=True)     # + armature, viscous, Coulomb per dof
assert np.allclose(Y @ pi, tau)
# --8<-- [end:regressor]

# --8<-- [start:batch]
# A stack of states runs as one parallel compiled loop (leading axis N).
N = 2000
Q = ld.random_configuration(model, rng=2, size=N)
V, A = rng.standard_normal((N, model.nv)), rng.standard_normal((N, model.nv))
TAU = ld.rnea(model, Q, V, A)
assert TAU.shape == (N, model.nv)
assert np.allclose(ld.aba(model, Q, V, TAU), A)
assert np.allclose(TAU[7], ld.rnea(model, Q[7], V[7], A[7]))
# --8<-- [end:batch]

# --8<-- [start:simulate]
# Tumbling in space (no gravity, no friction): the energy is conserved.
free = ld.ModelBuilder("free", gravity=(0, 0, 0))
free.add_body("base", "world", ld.FreeFlyer(), inertia=ld.Inertia(10.0, [0, 0, 0], np.diag([0.4, 0.5, 0.6])))
free.add_body("arm", "base", ld.Revolute("y"), placement=[0, 0.3, 0],
              inertia=ld.Inertia(1.0, [0, 0, -0.15], np.diag([0.008, 0.008, 0.001])))
free = free.build()
q0 = ld.neutral(free)                                           # identity quaternion
v0 = np.array([0.1, 0.0, 0.0, 0.3, -0.2, 0.5, 2.0])
traj = ld.sim.simulate(free, q0, v0, duration=2.0, dt=1e-3)     # RK4 on the configuration manifold
drift = np.abs(traj.energy - traj.energy[0]).max()
assert drift < 1e-8, drift
assert np.allclose(np.linalg.norm(traj.q[:, 3:7], axis=1), 1.0)  # the quaternion stays on the unit sphere
print(f"energy drift over 2 s: {drift:.1e} J")
# --8<-- [end:simulate]

print("tutorial_dynamics: all checks passed")
