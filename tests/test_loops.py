"""Closed kinematic chains (issue 4, seed 004 secs. 2-3): the four-bar against its closed-form
one-DoF equation of motion, the slider-crank against its closed-form kinematics and statics,
the five-bar with two and three actuators, spatial loops with spherical and universal cut
joints; ID(FD(tau)) = tau; the three forward-dynamics methods agree; energy and loop closure
over a passive simulation."""
import numpy as np
import pytest

import linkdyn as ld
from conftest import assert_close, fd_t
from linkdyn import loops
from linkdyn.models import mechanisms as mech

G = 9.81


def _closed(model, guess, hold=None):
    return loops.close_loops(model, np.asarray(guess, dtype=float), hold=hold)


def _state(model, q, rng, actuated=None):
    """A closed, velocity-consistent state (q, v) and the analysis there."""
    an = loops.analyze(model, q, actuated)
    v = an.W @ rng.standard_normal(an.dof)
    return q, v, an


MECHANISMS = {
    "four_bar": (lambda: mech.four_bar(), [0.8, -1.0, 1.9, 0.5], ["crank"]),
    "four_bar_other_cut": (lambda: mech.four_bar(cut="crank-coupler"), [0.8, 2.0, -1.0, 1.0], ["crank"]),
    "slider_crank": (lambda: mech.slider_crank(), [0.5, -0.6, 0.7, 0.2], ["crank"]),
    "five_bar": (lambda: mech.five_bar(), [2.0, -1.6, 0.0, 1.2, 1.6], ["left_base", "right_base"]),
    "spatial_RSUR": (lambda: mech.spatial_loop("universal"), None, ["crank"]),
    "spatial_RUSR": (lambda: mech.spatial_loop("spherical"), None, ["crank"]),
}


@pytest.fixture(params=list(MECHANISMS), scope="module")
def mechanism(request):
    make, guess, act = MECHANISMS[request.param]
    m = make()
    q = _closed(m, ld.neutral(m) if guess is None else guess)
    return request.param, m, q, act


# --------------------------------------------------------------------------------------
# kinematics
EXPECTED = {"four_bar": (3, 1), "four_bar_other_cut": (3, 1), "slider_crank": (3, 1), "five_bar": (3, 2),
            "spatial_RSUR": (6, 1), "spatial_RUSR": (6, 1)}


def test_constraint_count_and_degrees_of_freedom(mechanism):
    """m independent constraints and N_F = N_J - m (seed 004 eqs. 7-8): planar loops give 3 of
    their 6 rows, spatial ones 6; the degrees of freedom are Grubler's."""
    name, m, q, act = mechanism
    an = loops.analyze(m, q, act)
    assert (an.m, an.dof) == EXPECTED[name]
    assert an.dof == m.nv - an.m
    assert np.linalg.matrix_rank(an.JC) == an.m


def test_closure_and_velocities(mechanism):
    name, m, q, act = mechanism
    assert np.abs(loops.loop_error(m, q)).max() < 1e-12
    rng = np.random.default_rng(1)
    _, v, an = _state(m, q, rng, act)
    assert np.abs(loops.loop_jacobian(m, q) @ v).max() < 1e-12 * max(1, np.abs(v).max())
    # theta_S' = H theta_G' (eq. 11): W maps theta_G' to the whole velocity
    assert_close(v[an.S_dofs], an.H @ v[an.G_dofs], 1e-12, "theta_S' = H theta_G'")
    # moving along v keeps the loops closed to second order
    for h in (1e-3, 5e-4):
        assert np.abs(loops.loop_error(m, ld.integrate(m, q, v, h))).max() < 5 * h * h * (1 + np.abs(v).max()) ** 2


def test_loop_jacobian_is_the_error_derivative(mechanism):
    """d e / dt = -J_C q' along any motion through a closed configuration."""
    name, m, q, act = mechanism
    rng = np.random.default_rng(2)
    v = rng.standard_normal(m.nv)
    de = fd_t(lambda t: loops.loop_error(m, ld.integrate(m, q, v, t)).ravel())
    assert_close(de, -loops.loop_jacobian(m, q) @ v, 1e-8, "de/dt = -J v")


def test_loop_bias_is_the_jacobian_rate(mechanism):
    """J_C' q' (eq. 16) = d/dt (J_C q') along q' = v, q'' = 0, on the constraint manifold."""
    name, m, q, act = mechanism
    _, v, _ = _state(m, q, np.random.default_rng(3), act)
    rate = fd_t(lambda t: loops.loop_jacobian(m, ld.integrate(m, q, v, t)) @ v)
    assert_close(loops.loop_bias(m, q, v), rate, 1e-7, "J' v")


def test_accelerations_from_generalized_ones(mechanism):
    """theta_S'' = H theta_G'' + H' theta_G' (eqs. 13-16) keeps J_C a + J_C' v = 0, and
    H' theta_G' equals d/dt(H) theta_G' by finite differences of the analysis."""
    name, m, q, act = mechanism
    rng = np.random.default_rng(4)
    _, v, an = _state(m, q, rng, act)
    bias = loops.loop_bias(m, q, v)
    a = an.accelerations(rng.standard_normal(an.dof), bias)
    assert np.abs(loops.loop_jacobian(m, q) @ a + bias).max() < 1e-10 * max(1.0, np.abs(a).max())
    # the same G choice along the motion: H(q(t)) theta_G'
    G = [m.joint_names[m.dof_body[d] - 1] for d in an.G_dofs]

    def H_at(t):
        qt = loops.close_loops(m, ld.integrate(m, q, v, t), hold=None)
        return loops.analyze(m, qt, act, generalized=G).H @ v[an.G_dofs]
    assert_close(an.Hdot_qdot(bias), fd_t(H_at, 1e-5), 1e-5, "H' theta_G'")


def test_close_loops_holds_the_named_joints():
    m = mech.four_bar()
    q = _closed(m, [0.8, -1.0, 1.9, 0.5], hold=["crank"])
    assert q[m.q_index("crank")] == 0.8
    with pytest.raises(loops.LoopClosureError, match="out of the mechanism's reach"):
        # a crank angle the coupler cannot follow when the ground link is too long
        _closed(mech.four_bar(lengths=(0.3, 0.5, 0.4, 1.5)), [0.0, 0.0, 0.0, 3.0], hold=["crank"])


# --------------------------------------------------------------------------------------
# forward and inverse dynamics
@pytest.mark.parametrize("seed", [0, 1])
def test_three_forward_dynamics_methods_agree(mechanism, seed):
    """Unit vectors (eqs. 17-19), W^T M W and the multiplier form (seed 002 eq. 6.10) agree to
    1e-9, and their accelerations satisfy the loops' acceleration constraint."""
    name, m, q, act = mechanism
    rng = np.random.default_rng(seed)
    _, v, an = _state(m, q, rng, act)
    tau = rng.standard_normal(m.nv)
    out = {k: loops.forward_dynamics(m, q, v, tau, method=k) for k in loops.dynamics.METHODS}
    for k in ("projected", "unit_vector"):
        assert_close(out[k], out["kkt"], 1e-9, f"{k} vs kkt")
    assert np.abs(loops.loop_jacobian(m, q) @ out["kkt"] + loops.loop_bias(m, q, v)).max() < 1e-9 * max(
        1, np.abs(out["kkt"]).max())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_inverse_dynamics_inverts_forward_dynamics(mechanism, seed):
    """ID(FD(tau_A)) = tau_A with as many actuators as degrees of freedom."""
    name, m, q, act = mechanism
    rng = np.random.default_rng(seed)
    _, v, an = _state(m, q, rng, act)
    tau_A = rng.standard_normal(len(an.A_dofs))
    a = loops.forward_dynamics(m, q, v, tau_A, actuated=act)
    r = loops.inverse_dynamics(m, q, v, a, act)
    assert_close(r.tau_A, tau_A, 1e-9, "ID(FD(tau))")
    # FD(ID(a)) = a for a consistent a
    a2 = an.accelerations(rng.standard_normal(an.dof), loops.loop_bias(m, q, v))
    r2 = loops.inverse_dynamics(m, q, v, a2, act)
    assert_close(loops.forward_dynamics(m, q, v, r2.tau_A, actuated=act), a2, 1e-9, "FD(ID(a))")


def test_constraint_forces_balance_the_open_chain(mechanism):
    """M a + b = tau + J_C^T lam (seed 002 eq. 6.10), from ID and from FD alike; a revolute cut
    joint transmits no torque about its axis."""
    name, m, q, act = mechanism
    rng = np.random.default_rng(5)
    _, v, an = _state(m, q, rng, act)
    tau = np.zeros(m.nv)
    tau[an.A_dofs] = rng.standard_normal(len(an.A_dofs))
    a, lam = loops.constraint_forces(m, q, v, tau)
    JC = loops.loop_jacobian(m, q)
    assert_close(ld.crba(m, q) @ a + ld.nonlinear_effects(m, q, v), tau + JC.T @ lam.ravel(), 1e-9, "M a + b")
    r = loops.inverse_dynamics(m, q, v, a, act)
    assert_close(r.loop_forces(), lam, 1e-8, "ID and FD constraint forces")
    lp = m.loops[0]
    S_cut = JC[:6, lp.cut_v]
    assert np.abs(S_cut.T @ lam[0]).max() < 1e-9 * max(1, np.abs(lam).max())


def test_results_do_not_depend_on_the_cut():
    """The same four-bar cut at two different joints moves the same way."""
    a, b = mech.four_bar(), mech.four_bar(cut="crank-coupler")
    qa = _closed(a, [0.8, -1.0, 1.9, 0.5], hold=["crank"])
    # the other model's coordinates from the same mechanism pose: crank and rocker angles agree
    qb = np.zeros(b.nq)
    qb[b.q_index("crank")] = qa[a.q_index("crank")]
    qb[b.q_index("rocker")] = qa[a.q_index("rocker")]
    qb = _closed(b, qb + [0, 0, 2.5, -1.0] * (np.arange(4) >= 2), hold=["crank", "rocker"])
    for mm, qq in ((a, qa), (b, qb)):
        assert np.abs(loops.loop_error(mm, qq)).max() < 1e-12
    w = 1.7
    va = loops.analyze(a, qa, generalized=["crank"]).W @ [w]
    vb = loops.analyze(b, qb, generalized=["crank"]).W @ [w]
    assert_close(va[a.v_index("rocker")], vb[b.v_index("rocker")], 1e-10, "rocker rate")
    for tau in (0.0, 0.6):
        aa = loops.forward_dynamics(a, qa, va, [tau], actuated=["crank"])
        ab = loops.forward_dynamics(b, qb, vb, [tau], actuated=["crank"])
        assert_close(aa[a.v_index("crank")], ab[b.v_index("crank")], 1e-9, "crank acceleration")
        assert_close(aa[a.v_index("rocker")], ab[b.v_index("rocker")], 1e-9, "rocker acceleration")


# --------------------------------------------------------------------------------------
# closed forms
def _u(x):
    """Direction of a rod at angle x about +y in the (x, z) plane: R_y(x) e_x."""
    return np.array([np.cos(x), -np.sin(x)])


def _du(x):
    return np.array([-np.sin(x), -np.cos(x)])


def four_bar_closed_form(lengths, density, th, thd, tau, branch):
    """theta'' of a four-bar in the vertical (x, z) plane by Kane's method, from circle
    intersection kinematics and analytic velocity ratios (no recursive algorithm)."""
    l1, l2, l3, l0 = lengths
    m1, m2, m3 = (density * x for x in (l1, l2, l3))
    r = 0.01
    I1, I2, I3 = (m * (3 * r * r + L * L) / 12 for m, L in ((m1, l1), (m2, l2), (m3, l3)))
    P, O2 = l1 * _u(th), np.array([l0, 0.0])
    d = O2 - P
    dist = np.linalg.norm(d)
    # coupler end C: |C - P| = l2, |C - O2| = l3
    aa = (l2 * l2 - l3 * l3 + dist * dist) / (2 * dist)
    h = np.sqrt(l2 * l2 - aa * aa)
    base = P + aa * d / dist
    perp = np.array([-d[1], d[0]]) / dist
    C = base + branch * h * perp
    phi = np.arctan2(-(C - P)[1], (C - P)[0])
    psi = np.arctan2(-(C - O2)[1], (C - O2)[0])
    # velocity ratios: l1 u'(th) + l2 u'(phi) k_phi = l3 u'(psi) k_psi
    A = np.column_stack([l2 * _du(phi), -l3 * _du(psi)])
    k_phi, k_psi = np.linalg.solve(A, -l1 * _du(th))
    phid, psid = k_phi * thd, k_psi * thd
    # accelerations at theta'' = 0: l1 u'' thd^2 + l2 (u'' phid^2 + u' c_phi) = l3 (u'' psid^2 + u' c_psi)
    rhs = -(-l1 * _u(th) * thd ** 2 - l2 * _u(phi) * phid ** 2 + l3 * _u(psi) * psid ** 2)
    c_phi, c_psi = np.linalg.solve(A, rhs)
    # Kane: sum m a . dr/dth + I alpha dw/dth - m g . dr/dth = tau, linear in theta''
    g = np.array([0.0, -G])
    coef, const = 0.0, 0.0
    parts = [  # (m, I, dr/dth, a = a_lin_coef * thdd + a_lin_const, dw/dth, alpha coef, alpha const)
        (m1, I1, 0.5 * l1 * _du(th), 0.5 * l1 * _du(th), -0.5 * l1 * _u(th) * thd ** 2, 1.0, 1.0, 0.0),
        (m2, I2, l1 * _du(th) + 0.5 * l2 * _du(phi) * k_phi,
         l1 * _du(th) + 0.5 * l2 * _du(phi) * k_phi,
         -l1 * _u(th) * thd ** 2 + 0.5 * l2 * (_du(phi) * c_phi - _u(phi) * phid ** 2), k_phi, k_phi, c_phi),
        (m3, I3, 0.5 * l3 * _du(psi) * k_psi, 0.5 * l3 * _du(psi) * k_psi,
         0.5 * l3 * (_du(psi) * c_psi - _u(psi) * psid ** 2), k_psi, k_psi, c_psi),
    ]
    for m, I, dr, acoef, aconst, dw, alcoef, alconst in parts:
        coef += m * acoef @ dr + I * alcoef * dw
        const += m * aconst @ dr + I * alconst * dw - m * g @ dr
    return (tau - const) / coef, phi, psi, k_phi, k_psi


@pytest.mark.parametrize("th, thd, tau", [(0.8, 0.0, 0.0), (0.8, 2.0, 0.5), (2.5, -3.0, -1.0), (4.0, 1.0, 2.0)])
def test_four_bar_against_closed_form_lagrangian(th, thd, tau):
    lengths, density = (0.3, 1.0, 0.8, 1.0), 2.0
    m = mech.four_bar(lengths, density)
    q = _closed(m, [th, -1.0, 1.9, 0.5], hold=["crank"])
    phi_ld = q[m.q_index("crank")] + q[m.q_index("coupler")]
    psi_ld = q[m.q_index("rocker")]
    branch = min((1, -1), key=lambda b: abs(np.angle(np.exp(1j * (four_bar_closed_form(
        lengths, density, th, thd, tau, b)[1] - phi_ld)))))
    thdd, phi, psi, k_phi, k_psi = four_bar_closed_form(lengths, density, th, thd, tau, branch)
    assert abs(np.angle(np.exp(1j * (phi - phi_ld)))) < 1e-10
    assert abs(np.angle(np.exp(1j * (psi - psi_ld)))) < 1e-10
    an = loops.analyze(m, q, ["crank"], generalized=["crank"])
    v = an.W @ [thd]
    assert_close(v[m.v_index("crank")] + v[m.v_index("coupler")], k_phi * thd, 1e-10, "coupler rate")
    assert_close(v[m.v_index("rocker")], k_psi * thd, 1e-10, "rocker rate")
    for method in loops.dynamics.METHODS:
        a = loops.forward_dynamics(m, q, v, [tau], actuated=["crank"], method=method)
        assert_close(a[m.v_index("crank")], thdd, 1e-9, f"crank acceleration ({method})")
    # and the closed form's torque for that acceleration is what ID gives
    r = loops.inverse_dynamics(m, q, v, loops.forward_dynamics(m, q, v, [tau], actuated=["crank"]), ["crank"])
    assert_close(r.tau_A, [tau], 1e-9, "ID")


@pytest.mark.parametrize("th", [0.3, 1.2, 2.9, 4.4])
def test_slider_crank_kinematics_and_statics(th):
    """Slider position x = l1 cos th + sqrt(l2^2 - l1^2 sin^2 th), its rate, and the torque that
    holds the mechanism still against gravity, dV/dth = -g (m1 + m2) l1 cos(th) / 2."""
    l1, l2, dens = 0.2, 0.6, 2.0
    m = mech.slider_crank(l1, l2, dens)
    s = np.sqrt(l2 * l2 - (l1 * np.sin(th)) ** 2)
    # a rough guess on the branch with the slider ahead of the crank (the rod roughly along +x)
    q = _closed(m, [th, -th + 0.1, th - 0.1, l1 * np.cos(th) + s + 0.05], hold=["crank"])
    assert_close(q[m.q_index("slider")], l1 * np.cos(th) + s, 1e-12, "slider position")
    an = loops.analyze(m, q, ["crank"], generalized=["crank"])
    xdot = an.W[m.v_index("slider"), 0]
    assert_close(xdot, -l1 * np.sin(th) - l1 * l1 * np.sin(th) * np.cos(th) / s, 1e-10, "dx/dth")
    r = loops.inverse_dynamics(m, q, np.zeros(m.nv), np.zeros(m.nv), ["crank"])
    assert_close(r.tau_A, [-G * dens * (l1 + l2) * l1 * np.cos(th) / 2], 1e-10, "holding torque")


def test_five_bar_redundant_actuation():
    """Two actuators: exact; three: the minimum (weighted) norm solution of S^T tau_A = tau_G,
    which reproduces the motion; one actuator cannot produce a general motion."""
    m = mech.five_bar()
    q = _closed(m, MECHANISMS["five_bar"][1])
    rng = np.random.default_rng(7)
    an = loops.analyze(m, q, ["left_base", "right_base"])
    v = an.W @ rng.standard_normal(2)
    a = an.accelerations(rng.standard_normal(2), loops.loop_bias(m, q, v))
    two = loops.inverse_dynamics(m, q, v, a, ["left_base", "right_base"])
    three_act = ["left_base", "right_base", "left_elbow"]
    three = loops.inverse_dynamics(m, q, v, a, three_act)
    assert three.tau_A.shape == (3,)
    assert_close(three.analysis.S.T @ three.tau_A, three.tau_G, 1e-10, "S^T tau_A = tau_G")
    assert_close(loops.forward_dynamics(m, q, v, three.tau_A, actuated=three_act), a, 1e-9, "FD(redundant ID)")
    # minimum norm: adding any null-space torque of S^T makes it larger
    null = np.linalg.svd(three.analysis.S.T)[2][-1]
    for s in (-0.3, 0.2):
        assert np.linalg.norm(three.tau_A + s * null) > np.linalg.norm(three.tau_A)
    assert np.linalg.norm(three.tau_A) <= np.linalg.norm(np.append(two.tau_A, 0.0)) + 1e-12
    # weights move the load onto the heavily weighted actuator
    w = loops.inverse_dynamics(m, q, v, a, three_act, weights=[1.0, 1.0, 100.0])
    assert_close(w.analysis.S.T @ w.tau_A, w.tau_G, 1e-10, "weighted S^T tau_A = tau_G")
    assert abs(w.tau_A[2]) > abs(three.tau_A[2])
    with pytest.raises(ValueError, match="cannot produce this motion"):
        loops.inverse_dynamics(m, q, v, a, ["left_base"])
    # a motion one actuator can produce (the one its own FD gives) is solved exactly
    a1 = loops.forward_dynamics(m, q, v, [0.4], actuated=["left_base"])
    assert_close(loops.inverse_dynamics(m, q, v, a1, ["left_base"]).tau_A, [0.4], 1e-9, "one actuator")


@pytest.mark.parametrize("n", [5, 40])       # below and above the serial/parallel threshold
def test_stacks_of_states_match_one_state_at_a_time(mechanism, n):
    """constrained_dynamics, velocity_projection and position_correction on (N, .) stacks
    give, row by row, what they give on each state; a single tau is shared by all rows."""
    name, m, q, act = mechanism
    rng = np.random.default_rng(n)
    Q = np.array([_closed(m, ld.integrate(m, q, 0.05 * rng.standard_normal(m.nv))) for _ in range(n)])
    V = np.array([_state(m, Q[k], rng, act)[1] for k in range(n)])
    T = rng.standard_normal((n, m.nv))
    A, F = loops.constrained_dynamics(m, Q, V, T, forces=True)
    assert A.shape == (n, m.nv) and F.shape == (n, m.nloops, 6)
    A1 = loops.constrained_dynamics(m, Q, V, T[0])
    for k in range(n):
        a_k, f_k = loops.constrained_dynamics(m, Q[k], V[k], T[k], forces=True)
        assert_close(A[k], a_k, 1e-13, f"state {k}")
        assert_close(F[k], f_k, 1e-13, f"force of state {k}")
        assert_close(A1[k], loops.constrained_dynamics(m, Q[k], V[k], T[0]), 1e-13, f"shared tau, state {k}")
    W = V + rng.standard_normal(V.shape)
    DV, IMP = loops.velocity_projection(m, Q, W, impulses=True)
    DQ = loops.position_correction(m, Q)
    for k in (0, n - 1):
        dv, imp = loops.velocity_projection(m, Q[k], W[k], impulses=True)
        assert_close(DV[k], dv, 1e-13)
        assert_close(IMP[k], imp, 1e-13)
        assert_close(DQ[k], loops.position_correction(m, Q[k]), 1e-13)
    bad = Q.copy()
    bad[n - 2, 0] = np.nan
    with pytest.raises(ValueError, match=f"state {n - 2} of the stack: q: contains NaN"):
        loops.constrained_dynamics(m, bad, V, T)
    with pytest.raises(ValueError, match="stack of 2 states, but another argument has"):
        loops.constrained_dynamics(m, Q, V[:2], T)


def test_bad_input_is_reported():
    m = mech.four_bar()
    q = _closed(m, [0.8, -1.0, 1.9, 0.5], hold=["crank"])
    with pytest.raises(ValueError, match="violates the loop constraints"):
        loops.inverse_dynamics(m, q, np.ones(m.nv), np.zeros(m.nv), ["crank"])
    with pytest.raises(KeyError, match="unknown joint 'nope'"):
        loops.analyze(m, q, actuated=["nope"])
    with pytest.raises(ValueError, match="degrees of freedom"):
        loops.analyze(m, q, generalized=["crank", "rocker"])
    with pytest.raises(ValueError, match="actuator torques"):
        loops.forward_dynamics(m, q, np.zeros(m.nv), [1.0, 2.0], actuated=["crank"])
    with pytest.raises(ValueError, match="loops are open"):
        loops.forward_dynamics(m, [0.0] * 4, np.zeros(4), np.zeros(4), method="projected")
    with pytest.raises(ValueError, match="no loop closures"):
        loops.loop_error(ld.models.random_tree(3, seed=0), np.zeros(3))
    b = ld.ModelBuilder()
    b.add_body("a", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0))
    b.add_loop("v", "a", "world", ld.Revolute("z"))
    with pytest.raises(ValueError, match="virtual link"):
        b.add_body("c", "v", ld.Revolute("z"))


# --------------------------------------------------------------------------------------
# simulation
@pytest.mark.parametrize("name", ["four_bar", "spatial_RSUR"])
def test_passive_simulation_conserves_energy_and_closure(name):
    """10 s of passive motion under gravity: the loop error stays below 1e-9 and the energy is
    conserved to the integrator's accuracy."""
    make, guess, act = MECHANISMS[name]
    m = make()
    q = _closed(m, ld.neutral(m) if guess is None else guess)
    _, v, _ = _state(m, q, np.random.default_rng(0), act)
    tr = ld.sim.simulate(m, q, v, 10.0, 2e-3, record_every=50)
    assert tr.loop_error.max() < 1e-9
    scale = np.ptp(tr.potential) + tr.kinetic.max()
    assert np.ptp(tr.energy) < 1e-6 * scale, f"energy drift {np.ptp(tr.energy):.3g} of {scale:.3g}"


def test_closed_chain_keeps_its_coordinates_and_hands_over_near_singularity():
    """A four-bar driven through a full crank turn: with the rocker as theta_G, J_S becomes
    singular where the rocker reverses (a dead point for rocker-driven motion); ClosedChain
    keeps the rocker while J_S is well-conditioned, hands over to a well-conditioned choice
    there, and every analysis it returns has J_S conditioned below the bound."""
    m = mech.four_bar()
    chain = loops.ClosedChain(m, generalized=["rocker"], max_cond=50.0)
    q = _closed(m, [0.1, -1.0, 1.9, 0.5], hold=["crank"])
    used = []
    for th in np.linspace(0.1, 2 * np.pi + 0.1, 90):
        q = q.copy()
        q[m.q_index("crank")] = th
        q = loops.close_loops(m, q, hold=["crank"])
        an = chain.analyze(q)
        assert an.cond <= 50.0
        used.append(tuple(an.G_dofs))
    assert len(chain.changes) >= 1
    assert used[0] == (m.v_index("rocker"),)
    # between hand-overs the choice stays put
    switches = sum(1 for a, b in zip(used, used[1:]) if a != b)
    assert switches == len(chain.changes)
