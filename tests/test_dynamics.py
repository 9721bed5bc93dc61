"""Dynamics: RNEA, CRBA (three methods), ABA, external forces, energies, a passive
simulation, stacks of states, and Pinocchio as an independent oracle (twin trees)."""
import numpy as np
import pytest

import linkdyn as ld
from conftest import (FLOATING_TREES, TREES, assert_close, build_tree, fd, fd_t, needs_pin,
                      random_q, random_state, world_momentum)

try:
    import pinocchio as pin
except ImportError:  # pragma: no cover
    pin = None

SEEDS = [0, 1, 2]


def _fext(model, rng):
    return rng.standard_normal((model.nbody, 6))


def _body_jacobians_local(model, q):
    """J_i (6, nv) of every body frame, local reference, by linkdyn.jacobian."""
    return [ld.jacobian(model, q, model.body_names[i], reference="local") for i in range(model.nbody)]


def _body_jacobians_local_by_hand(model, q):
    """The same from joint_jacobians (world dof motions) and the body poses: J_i = X_i0 J_world
    restricted to the dofs that support body i (independent of linkdyn.jacobian)."""
    Jw = ld.joint_jacobians(model, q)
    kin = ld.forward_kinematics(model, q)
    out = [np.zeros((6, model.nv))]
    for i in range(1, model.nbody):
        R, p = kin.R[i], kin.p[i]
        cols = [d for d in range(model.nv) if model.dof_body[d] in model.support(i)]
        Ji = np.zeros((6, model.nv))
        for d in cols:
            v, w = Jw[:3, d], Jw[3:, d]
            Ji[:3, d] = R.T @ (v + np.cross(w, p))      # velocity of the body origin, body frame
            Ji[3:, d] = R.T @ w
        out.append(Ji)
    return out


# ---------------------------------------------------------------------------------------
# RNEA, CRBA, ABA against each other
@pytest.mark.parametrize("seed", SEEDS)
def test_rnea_is_mass_matrix_times_a_plus_bias(tree, seed):
    q, v, a = random_state(tree, np.random.default_rng(seed))
    M = ld.crba(tree, q)
    b = ld.nonlinear_effects(tree, q, v)
    assert_close(ld.rnea(tree, q, v, a), M @ a + b, 1e-10, "rnea vs M a + b")
    assert np.abs(M @ a).max() > 1e-3 and np.abs(b).max() > 1e-3      # not a vacuous identity


@pytest.mark.parametrize("seed", SEEDS)
def test_mass_matrix_methods_agree(tree, seed):
    q = random_q(tree, np.random.default_rng(seed))
    Mc = ld.mass_matrix(tree, q, method="crba")
    assert_close(ld.crba(tree, q), Mc, 0.0, "crba vs mass_matrix(crba)")
    scale = np.abs(Mc).max()
    for method in ("unit_vector", "jacobian"):
        Mm = ld.mass_matrix(tree, q, method=method)
        assert np.abs(Mm - Mc).max() <= 1e-10 * scale, method


@pytest.mark.parametrize("seed", SEEDS)
def test_mass_matrix_symmetric_positive_definite(tree, seed):
    q = random_q(tree, np.random.default_rng(seed))
    for method in ("crba", "unit_vector", "jacobian"):
        M = ld.mass_matrix(tree, q, method=method)
        assert M.shape == (tree.nv, tree.nv)
        assert np.abs(M - M.T).max() <= 1e-12 * np.abs(M).max(), method
        assert np.linalg.eigvalsh(M).min() > 0, method
        np.linalg.cholesky(M)


def test_mass_matrix_is_the_rnea_jacobian_in_a(tree):
    """M = d rnea / d a (rnea is affine in a): M e_k = rnea(q, v, a + e_k) - rnea(q, v, a)."""
    q, v, a = random_state(tree, np.random.default_rng(5))
    M = ld.crba(tree, q)
    base = ld.rnea(tree, q, v, a)
    cols = np.stack([ld.rnea(tree, q, v, a + e) - base for e in np.eye(tree.nv)], axis=1)
    assert_close(cols, M, 1e-9, "columns of M")


@pytest.mark.parametrize("seed", SEEDS)
def test_aba_inverts_rnea(tree, seed):
    q, v, a = random_state(tree, np.random.default_rng(seed))
    tau = ld.rnea(tree, q, v, a)
    assert_close(ld.aba(tree, q, v, tau), a, 1e-8, "aba(rnea(a))")


@pytest.mark.parametrize("seed", SEEDS)
def test_rnea_inverts_aba(tree, seed):
    rng = np.random.default_rng(seed)
    q, v, _ = random_state(tree, rng)
    tau = 10 * rng.standard_normal(tree.nv)
    qdd = ld.aba(tree, q, v, tau)
    assert_close(ld.rnea(tree, q, v, qdd), tau, 1e-9, "rnea(aba(tau))")
    # and the forward dynamics is M^-1 (tau - b)
    assert_close(qdd, np.linalg.solve(ld.crba(tree, q), tau - ld.nonlinear_effects(tree, q, v)), 1e-8, "aba")


@pytest.mark.parametrize("seed", SEEDS)
def test_generalized_gravity(tree, seed):
    q, v, _ = random_state(tree, np.random.default_rng(seed))
    z = np.zeros(tree.nv)
    g = ld.generalized_gravity(tree, q)
    assert_close(g, ld.rnea(tree, q, z, z), 1e-12, "g vs rnea(q, 0, 0)")
    assert_close(g, ld.nonlinear_effects(tree, q, z), 1e-12, "g vs b(q, 0)")
    # b(q, v) - g(q) is quadratic in v: b(q, 2v) - g = 4 (b(q, v) - g)
    assert_close(ld.nonlinear_effects(tree, q, 2 * v) - g, 4 * (ld.nonlinear_effects(tree, q, v) - g), 1e-9,
                 "Coriolis terms quadratic in v")


@pytest.mark.parametrize("name", list(TREES))
def test_gravity_free_model_has_no_generalized_gravity(name):
    model = build_tree(name, gravity=(0.0, 0.0, 0.0))
    q = random_q(model, np.random.default_rng(0))
    assert np.abs(ld.generalized_gravity(model, q)).max() == 0.0
    assert ld.potential_energy(model, q) == 0.0


# ---------------------------------------------------------------------------------------
# external forces
@pytest.mark.parametrize("seed", [0, 1])
def test_rnea_external_forces_are_jacobian_transpose(tree, seed):
    rng = np.random.default_rng(seed)
    q, v, a = random_state(tree, rng)
    fext = _fext(tree, rng)
    Js = _body_jacobians_local(tree, q)
    want = ld.rnea(tree, q, v, a) - sum(Js[i].T @ fext[i] for i in range(1, tree.nbody))
    assert_close(ld.rnea(tree, q, v, a, fext=fext), want, 1e-10, "rnea with fext")
    # the same bodies' Jacobians built by hand from joint_jacobians
    for i, Jh in enumerate(_body_jacobians_local_by_hand(tree, q)):
        assert_close(Js[i], Jh, 1e-10, f"local jacobian of body {i}")


@pytest.mark.parametrize("seed", [0, 1])
def test_rnea_external_forces_by_hand_jacobians(tree, seed):
    """rnea(fext) = rnea - sum_i J_i^T f_i, J_i built from joint_jacobians and the body poses."""
    rng = np.random.default_rng(seed)
    q, v, a = random_state(tree, rng)
    fext = _fext(tree, rng)
    Js = _body_jacobians_local_by_hand(tree, q)
    want = ld.rnea(tree, q, v, a) - sum(Js[i].T @ fext[i] for i in range(1, tree.nbody))
    got = ld.rnea(tree, q, v, a, fext=fext)
    assert_close(got, want, 1e-10, "rnea with fext")
    # row 0 (the world) is ignored
    f2 = fext.copy()
    f2[0] = 1e3
    assert_close(ld.rnea(tree, q, v, a, fext=f2), got, 0.0, "fext row 0")


@pytest.mark.parametrize("seed", [0, 1])
def test_aba_external_forces(tree, seed):
    rng = np.random.default_rng(seed)
    q, v, a = random_state(tree, rng)
    fext = _fext(tree, rng)
    tau = ld.rnea(tree, q, v, a, fext=fext)
    assert_close(ld.aba(tree, q, v, tau, fext=fext), a, 1e-8, "aba(rnea(a, fext), fext)")
    # fext acts as the generalized force sum_i J_i^T f_i
    Js = _body_jacobians_local_by_hand(tree, q)
    tau_f = sum(Js[i].T @ fext[i] for i in range(1, tree.nbody))
    tau0 = rng.standard_normal(tree.nv)
    assert_close(ld.aba(tree, q, v, tau0, fext=fext), ld.aba(tree, q, v, tau0 + tau_f), 1e-8, "aba fext")
    # zero forces change nothing
    assert_close(ld.aba(tree, q, v, tau0, fext=np.zeros((tree.nbody, 6))), ld.aba(tree, q, v, tau0), 0.0, "f=0")


# ---------------------------------------------------------------------------------------
# energies
@pytest.mark.parametrize("seed", SEEDS)
def test_kinetic_energy_is_half_vMv(tree, seed):
    q, v, _ = random_state(tree, np.random.default_rng(seed))
    T = ld.kinetic_energy(tree, q, v)
    assert_close(T, 0.5 * v @ ld.crba(tree, q) @ v, 1e-11, "T")
    assert T > 0
    assert_close(ld.mechanical_energy(tree, q, v), T + ld.potential_energy(tree, q), 1e-12, "E = T + U")


def test_potential_energy_by_hand(tree):
    """U = -sum_i m_i g . c_i with the body centres of mass from forward_kinematics."""
    q = random_q(tree, np.random.default_rng(3))
    kin = ld.forward_kinematics(tree, q)
    U = 0.0
    for i in range(1, tree.nbody):
        m = tree.inertia[i, 0, 0]
        c = np.array([tree.inertia[i, 5, 1], tree.inertia[i, 3, 2], tree.inertia[i, 4, 0]]) / m
        U -= m * tree.gravity @ (kin.p[i] + kin.R[i] @ c)
    assert_close(ld.potential_energy(tree, q), U, 1e-12, "U")


def test_potential_energy_gradient_is_generalized_gravity(tree):
    q = random_q(tree, np.random.default_rng(4))
    grad = np.array([fd(lambda x: ld.potential_energy(tree, x), tree, q, e) for e in np.eye(tree.nv)])
    assert_close(grad, ld.generalized_gravity(tree, q), 1e-6, "dU/dq along integrate")


@pytest.mark.parametrize("seed", SEEDS)
def test_power_balance(tree, seed):
    """dE/dt = v^T tau along q' = v, v' = aba(q, v, tau)."""
    rng = np.random.default_rng(seed)
    q, v, _ = random_state(tree, rng)
    tau = 5 * rng.standard_normal(tree.nv)
    vdot = ld.aba(tree, q, v, tau)
    dE = fd_t(lambda t: ld.mechanical_energy(tree, ld.integrate(tree, q, v, t), v + t * vdot))
    assert_close(dE, v @ tau, 1e-6, "dE/dt")
    # without input the energy is stationary
    vdot0 = ld.aba(tree, q, v, np.zeros(tree.nv))
    dE0 = fd_t(lambda t: ld.mechanical_energy(tree, ld.integrate(tree, q, v, t), v + t * vdot0))
    assert abs(dE0) <= 1e-6 * max(1.0, abs(ld.kinetic_energy(tree, q, v)))


def _rk4(model, q, v, dt, nsteps):
    f = lambda q_, v_: ld.aba(model, q_, v_, np.zeros(model.nv))  # noqa: E731
    for _ in range(nsteps):
        a1 = f(q, v)
        v2 = v + 0.5 * dt * a1
        q2 = ld.integrate(model, q, v, 0.5 * dt)
        a2 = f(q2, v2)
        v3 = v + 0.5 * dt * a2
        q3 = ld.integrate(model, q, v2, 0.5 * dt)
        a3 = f(q3, v3)
        v4 = v + dt * a3
        q4 = ld.integrate(model, q, v3, dt)
        a4 = f(q4, v4)
        q = ld.integrate(model, q, (v + 2 * v2 + 2 * v3 + v4) / 6, dt)
        v = v + dt * (a1 + 2 * a2 + 2 * a3 + a4) / 6
    return q, v


@pytest.mark.parametrize("name", FLOATING_TREES)
def test_passive_simulation_conserves_energy_and_momentum(name):
    model = build_tree(name, gravity=(0.0, 0.0, 0.0))
    rng = np.random.default_rng(8)
    q, v, _ = random_state(model, rng)
    E0, h0 = ld.mechanical_energy(model, q, v), world_momentum(model, q, v)
    q1, v1 = _rk4(model, q, v, 2.5e-4, 2000)     # RK4 on the manifold: 2nd order in dt (no dexp^-1)
    E1, h1 = ld.mechanical_energy(model, q1, v1), world_momentum(model, q1, v1)
    assert abs(E1 - E0) <= 1e-6 * abs(E0), (E0, E1)
    assert np.abs(h1 - h0).max() <= 1e-6 * np.abs(h0).max(), (h0, h1)
    # the system did move
    assert np.abs(ld.difference(model, q, q1)).max() > 0.05


def test_momentum_changes_under_gravity():
    """Control of the conservation test: with gravity the linear momentum changes by m g t."""
    model = build_tree("mixed-floating-s3")
    q, v, _ = random_state(model, np.random.default_rng(8))
    h0 = world_momentum(model, q, v)
    q1, v1 = _rk4(model, q, v, 1e-3, 100)
    h1 = world_momentum(model, q1, v1)
    assert_close(h1[:3] - h0[:3], model.total_mass * model.gravity * 0.1, 1e-6, "impulse of gravity")


# ---------------------------------------------------------------------------------------
# stacks
N = 5


def _stack(model, rng, n=N):
    states = [random_state(model, rng) for _ in range(n)]
    return tuple(np.stack(x) for x in zip(*states))


def test_batch_equals_loop(tree):
    rng = np.random.default_rng(9)
    Q, V, A = _stack(tree, rng)
    F = rng.standard_normal((N, tree.nbody, 6))
    T = ld.rnea(tree, Q, V, A, fext=F)
    assert T.shape == (N, tree.nv)
    for n in range(N):
        assert_close(T[n], ld.rnea(tree, Q[n], V[n], A[n], fext=F[n]), 1e-14, f"rnea {n}")
    Ms = ld.crba(tree, Q)
    assert Ms.shape == (N, tree.nv, tree.nv)
    for method in ("crba", "unit_vector", "jacobian"):
        Mm = ld.mass_matrix(tree, Q, method=method)
        for n in range(N):
            assert_close(Mm[n], ld.mass_matrix(tree, Q[n], method=method), 1e-14, f"{method} {n}")
    QDD = ld.aba(tree, Q, V, T, fext=F)
    for n in range(N):
        assert_close(QDD[n], ld.aba(tree, Q[n], V[n], T[n], fext=F[n]), 1e-14, f"aba {n}")
        assert_close(QDD[n], A[n], 1e-8, f"aba(rnea) {n}")
    B, G = ld.nonlinear_effects(tree, Q, V), ld.generalized_gravity(tree, Q)
    KE, PE = ld.kinetic_energy(tree, Q, V), ld.potential_energy(tree, Q)
    assert KE.shape == PE.shape == (N,)
    for n in range(N):
        assert_close(B[n], ld.nonlinear_effects(tree, Q[n], V[n]), 1e-14, f"nle {n}")
        assert_close(G[n], ld.generalized_gravity(tree, Q[n]), 1e-14, f"g {n}")
        assert_close(KE[n], ld.kinetic_energy(tree, Q[n], V[n]), 1e-14, f"T {n}")
        assert_close(PE[n], ld.potential_energy(tree, Q[n]), 1e-14, f"U {n}")


def test_batch_larger_than_thread_count():
    """A long stack (many states per thread) and a stack of one."""
    model = build_tree("mixed-floating-s4")
    rng = np.random.default_rng(10)
    Q, V, A = _stack(model, rng, 37)
    T = ld.rnea(model, Q, V, A)
    QDD = ld.aba(model, Q, V, T)
    for n in range(37):
        assert_close(T[n], ld.rnea(model, Q[n], V[n], A[n]), 1e-14, f"rnea {n}")
        assert_close(QDD[n], A[n], 1e-8, f"aba {n}")
    T1 = ld.rnea(model, Q[:1], V[:1], A[:1])
    assert T1.shape == (1, model.nv)
    assert_close(T1[0], T[0], 1e-14, "stack of one")


def test_batch_broadcasts_a_shared_state(tree):
    rng = np.random.default_rng(11)
    Q, V, A = _stack(tree, rng)
    q, v, a = Q[0], V[0], A[0]
    f = rng.standard_normal((tree.nbody, 6))
    # stacked q, shared v and a (and a shared fext)
    T = ld.rnea(tree, Q, v, a, fext=f)
    assert T.shape == (N, tree.nv)
    for n in range(N):
        assert_close(T[n], ld.rnea(tree, Q[n], v, a, fext=f), 1e-14, f"Q stacked {n}")
    # shared q, stacked v / a
    T = ld.rnea(tree, q, V, A)
    for n in range(N):
        assert_close(T[n], ld.rnea(tree, q, V[n], A[n]), 1e-14, f"V, A stacked {n}")
    QDD = ld.aba(tree, q, V, ld.rnea(tree, q, V, a))
    for n in range(N):
        assert_close(QDD[n], a, 1e-8, f"aba shared q {n}")
    QDD = ld.aba(tree, Q, v, np.zeros(tree.nv))
    for n in range(N):
        assert_close(QDD[n], ld.aba(tree, Q[n], v, np.zeros(tree.nv)), 1e-14, f"aba shared v {n}")
    B = ld.nonlinear_effects(tree, Q, v)
    KE = ld.kinetic_energy(tree, q, V)
    for n in range(N):
        assert_close(B[n], ld.nonlinear_effects(tree, Q[n], v), 1e-14, f"nle {n}")
        assert_close(KE[n], ld.kinetic_energy(tree, q, V[n]), 1e-14, f"T {n}")


def test_single_state_calls_do_not_alias_outputs():
    """Each call returns a fresh array (the single-state workspace is shared by the model)."""
    model = build_tree("mixed-fixed-s0")
    rng = np.random.default_rng(12)
    q, v, a = random_state(model, rng)
    t1 = ld.rnea(model, q, v, a)
    t1c = t1.copy()
    M = ld.crba(model, q)
    Mc = M.copy()
    q2, v2, a2 = random_state(model, rng)
    ld.rnea(model, q2, v2, a2)
    ld.crba(model, q2)
    ld.aba(model, q2, v2, a2)
    assert_close(t1, t1c, 0.0, "tau overwritten")
    assert_close(M, Mc, 0.0, "M overwritten")
    # inputs are not modified
    q0, v0, a0 = q.copy(), v.copy(), a.copy()
    ld.aba(model, q, v, a)
    ld.rnea(model, q, v, a)
    assert_close(q, q0, 0.0, "q")
    assert_close(v, v0, 0.0, "v")
    assert_close(a, a0, 0.0, "a")


# ---------------------------------------------------------------------------------------
# massless bodies
def test_massless_intermediate_bodies():
    """A massless body between two massive ones is fine for every algorithm."""
    b = ld.ModelBuilder("massless-middle")
    b.add_body("a", "world", ld.Revolute("z"), placement=[0, 0, 0.1])
    b.add_body("b", "a", ld.Revolute("x"), placement=[0.3, 0, 0],
               inertia=ld.Inertia(1.0, [0.1, 0.2, 0.0], np.diag([0.1, 0.2, 0.3])))
    model = b.build()
    rng = np.random.default_rng(0)
    q, v, a = random_state(model, rng)
    tau = ld.rnea(model, q, v, a)
    assert_close(ld.aba(model, q, v, tau), a, 1e-9, "aba")
    assert np.linalg.eigvalsh(ld.crba(model, q)).min() > 0


# ---------------------------------------------------------------------------------------
# Pinocchio twins: independent models of the same random trees
def _pin_force_list(tw, fext_ld):
    """linkdyn fext (per linkdyn body, body frame) -> Pinocchio forces per joint (joint frame)."""
    fl = [pin.Force.Zero() for _ in range(tw.pin.njoints)]
    for i in range(1, tw.ld.nbody):
        jid = tw.pin.getJointId(tw.ld.joint_names[i - 1])
        fl[jid] = pin.Force(fext_ld[i])
    return pin.StdVec_Force(fl) if hasattr(pin, "StdVec_Force") else fl


@needs_pin
def test_twin_builds_the_same_tree(twin):
    assert twin.ld.nv == twin.pin.nv
    assert twin.ld.nbody == twin.pin.njoints
    assert sorted(twin.ld.joint_names) == sorted(n for n in twin.pin.names[1:])
    assert_close(twin.ld.total_mass, sum(I.mass for I in twin.pin.inertias), 1e-12, "total mass")
    # depth first: the parent of every body comes before it and subtrees are contiguous
    assert all(twin.ld.parent[i] < i for i in range(1, twin.ld.nbody))
    for i in range(twin.ld.nbody):
        sub = set(range(i, twin.ld.subtree_end[i]))
        for j in range(twin.ld.nbody):
            anc = set([j] + twin.ld.support(j)) | {0}
            assert (i in anc) == (j in sub), (i, j)


@needs_pin
@pytest.mark.parametrize("seed", [0, 1])
def test_twin_dynamics_match_pinocchio(twin, seed):
    tw = twin
    rng = np.random.default_rng(seed)
    q, v, a = random_state(tw.ld, rng)
    qp, vp, ap = tw.q_pin(q), tw.v_pin(v), tw.v_pin(a)
    d = tw.data
    M = pin.crba(tw.pin, d, qp)
    M = np.triu(M) + np.triu(M, 1).T
    assert_close(ld.crba(tw.ld, q), tw.M_ld(M), 1e-10, "crba")
    assert_close(ld.rnea(tw.ld, q, v, a), tw.v_ld(pin.rnea(tw.pin, d, qp, vp, ap)), 1e-10, "rnea")
    assert_close(ld.nonlinear_effects(tw.ld, q, v), tw.v_ld(pin.nonLinearEffects(tw.pin, d, qp, vp)), 1e-10, "nle")
    assert_close(ld.generalized_gravity(tw.ld, q), tw.v_ld(pin.computeGeneralizedGravity(tw.pin, d, qp)), 1e-10,
                 "g")
    tau = rng.standard_normal(tw.ld.nv)
    assert_close(ld.aba(tw.ld, q, v, tau), tw.v_ld(pin.aba(tw.pin, d, qp, vp, tw.v_pin(tau))), 1e-8, "aba")
    # T = 1/2 v^T M v with the armature (Pinocchio's computeKineticEnergy treats the armature
    # of some joint kinds differently, so use its mass matrix)
    assert_close(ld.kinetic_energy(tw.ld, q, v), 0.5 * vp @ M @ vp, 1e-10, "T")
    assert_close(ld.potential_energy(tw.ld, q), pin.computePotentialEnergy(tw.pin, d, qp), 1e-10, "U")


@needs_pin
def test_twin_external_forces_match_pinocchio(twin):
    tw = twin
    rng = np.random.default_rng(3)
    q, v, a = random_state(tw.ld, rng)
    fext = _fext(tw.ld, rng)
    qp, vp = tw.q_pin(q), tw.v_pin(v)
    fl = _pin_force_list(tw, fext)
    want = tw.v_ld(pin.rnea(tw.pin, tw.data, qp, vp, tw.v_pin(a), fl))
    assert_close(ld.rnea(tw.ld, q, v, a, fext=fext), want, 1e-10, "rnea fext")
    tau = rng.standard_normal(tw.ld.nv)
    want = tw.v_ld(pin.aba(tw.pin, tw.data, qp, vp, tw.v_pin(tau), fl))
    assert_close(ld.aba(tw.ld, q, v, tau, fext=fext), want, 1e-8, "aba fext")


@needs_pin
def test_builder_inertia_is_pinocchio_spatial_inertia():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 3))
    P = A @ A.T + np.eye(3)                  # second moment of the mass
    m, c, Ic = 1.7, rng.standard_normal(3), np.trace(P) * np.eye(3) - P
    b = ld.ModelBuilder("one")
    b.add_body("body", "world", ld.FreeFlyer(), inertia=ld.Inertia(m, c, Ic))
    model = b.build()
    assert_close(model.inertia[1], pin.Inertia(m, c, Ic).matrix(), 1e-14, "spatial inertia")
    # a fixed child: its inertia lands in the parent frame as Pinocchio's SE3.act(Inertia)
    R = ld.spatial.exp3(rng.standard_normal(3))
    p = rng.standard_normal(3)
    b.add_body("child", "body", ld.Fixed(), placement=(R, p), inertia=ld.Inertia(m, c, Ic))
    model = b.build()
    want = pin.Inertia(m, c, Ic) + pin.SE3(R, p).act(pin.Inertia(m, c, Ic))
    assert model.nbody == 2
    assert_close(model.inertia[1], want.matrix(), 1e-13, "merged inertia")


# --------------------------------------------------------------------------------------
# joint terms: armature, viscous and Coulomb friction (seed 002 sec. 5)
FRICTION_TREES = {k: kw for k, kw in TREES.items() if k in ("mixed-fixed-s0", "mixed-floating-s4", "branchy-25",
                                                              "chain4-spherical", "chain4-universal")}


@pytest.fixture(params=list(FRICTION_TREES), scope="module")
def pair_with_friction(request):
    """The same random tree without and with armature, damping and friction on every dof."""
    kw = FRICTION_TREES[request.param]
    return ld.models.random_tree(**kw), ld.models.random_tree(joint_terms=True, **kw)


def test_random_tree_joint_terms_are_drawn(pair_with_friction):
    bare, rough = pair_with_friction
    free = np.zeros(rough.nv, dtype=bool)
    for i in range(1, rough.nbody):
        if rough.jnt_type[i] == ld.joints.FREE:
            free[rough.jnt_vadr[i]:rough.jnt_vadr[i] + 6] = True
    for what in ("armature", "damping", "friction"):
        assert np.all(getattr(rough, what)[~free] > 0) and np.all(getattr(rough, what)[free] == 0), what
        assert np.all(getattr(bare, what) == 0), what


@pytest.mark.parametrize("seed", [0, 1])
def test_rnea_adds_the_joint_terms(pair_with_friction, seed):
    """tau = rigid-body tau + armature a + damping v + friction sign(v), the rest unchanged."""
    bare, rough = pair_with_friction
    q, v, a = random_state(bare, np.random.default_rng(seed))
    v[::3] = 0.0                                           # sign(0) = 0: no Coulomb torque at rest
    want = ld.rnea(bare, q, v, a) + rough.armature * a + rough.damping * v + rough.friction * np.sign(v)
    assert_close(ld.rnea(rough, q, v, a), want, 1e-12, "rnea with joint terms")
    assert_close(ld.crba(rough, q), ld.crba(bare, q) + np.diag(rough.armature), 1e-12, "crba + armature")
    assert_close(ld.nonlinear_effects(rough, q, v),
                 ld.nonlinear_effects(bare, q, v) + rough.damping * v + rough.friction * np.sign(v), 1e-12, "b")
    assert_close(ld.generalized_gravity(rough, q), ld.generalized_gravity(bare, q), 1e-12, "g has no friction")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_aba_and_rnea_agree_with_joint_terms(pair_with_friction, seed):
    _, m = pair_with_friction
    q, v, a = random_state(m, np.random.default_rng(seed))
    tau = ld.rnea(m, q, v, a)
    assert_close(ld.aba(m, q, v, tau), a, 1e-9, "aba(rnea(a)) = a")
    tau = 3 * np.random.default_rng(seed + 7).standard_normal(m.nv)
    # M a = tau - b, with b carrying the friction
    a = ld.aba(m, q, v, tau)
    assert_close(ld.crba(m, q) @ a + ld.nonlinear_effects(m, q, v), tau, 1e-9, "M aba + b = tau")
    # batched calls apply them too
    Q = np.stack([q, q]); V = np.stack([v, -v]); T = np.stack([tau, tau])
    assert_close(ld.aba(m, Q, V, T)[1], ld.aba(m, q, -v, tau), 1e-12, "batched aba")


@pytest.mark.parametrize("seed", [0, 1])
def test_friction_dissipates_power(pair_with_friction, seed):
    """dE/dt = v^T tau - v^T (damping v + friction sign v) <= v^T tau (armature is part of the
    kinetic energy as 1/2 armature v^2)."""
    _, m = pair_with_friction
    rng = np.random.default_rng(seed)
    q, v, _ = random_state(m, rng)
    tau = 5 * rng.standard_normal(m.nv)
    vdot = ld.aba(m, q, v, tau)
    dE = fd_t(lambda t: ld.mechanical_energy(m, ld.integrate(m, q, v, t), v + t * vdot))
    loss = v @ (m.damping * v + m.friction * np.sign(v))
    assert loss > 0
    assert_close(dE, v @ tau - loss, 1e-6, "dE/dt with friction")


def test_builder_rejects_negative_joint_terms():
    b = ld.ModelBuilder()
    for what in ("armature", "damping", "friction"):
        with pytest.raises(ValueError, match=what):
            b.add_body(f"b_{what}", "world", ld.Revolute("z"), **{what: [-1.0]})
