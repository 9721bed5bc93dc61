"""The contact solver never applies an answer it did not find (the contact issue's solver items):
a friction direction the model cannot move in (a planar model's out-of-plane tangent), redundant
friction rows of two feet on one rigid body, and a ContactSolverError where no answer is found."""
from __future__ import annotations

import numpy as np
import pytest

import linkdyn as ld
from linkdyn.contact import lcp
from linkdyn.sim import timestepping as TS


def planar_two_feet(mu=1.0):
    """A planar body (x, z, pitch) on two sphere feet, the dm_control cheetah's situation: its
    feet's out-of-plane friction rows are zero in A, and their in-plane rows nearly dependent."""
    b = ld.ModelBuilder("planar_two_feet")
    tiny = ld.Inertia(1e-9, [0, 0, 0], np.eye(3) * 1e-12)
    b.add_body("x", "world", ld.Prismatic("x"), inertia=tiny)
    b.add_body("z", "x", ld.Prismatic("z"), inertia=tiny)
    b.add_body("torso", "z", ld.Revolute("y"), inertia=ld.Inertia(10.0, [0, 0, 0], np.diag([0.1, 1.0, 1.0])))
    for x in (-0.5, 0.5):
        b.add_contact("torso", [x, 0, -0.2], radius=0.05, friction=mu)
    b.add_plane("ground")
    return b.build()


def test_a_friction_direction_without_mobility_gets_the_sticking_answer():
    """A 3-row problem (a normal, its friction pair) whose second tangent has no mobility (zero row
    and column of A): the sticking solution solves the 2x2 in-plane system; before the fix the pair
    was pushed onto the cone's rim with the force along the slip (residual 1)."""
    A = np.array([[0.3205, 0.1473, 0.0], [0.1473, 0.1984, 0.0], [0.0, 0.0, 0.0]])
    r = np.array([-0.0098, -0.0071, 0.0])
    kinds = np.array([lcp.NORMAL, lcp.FRICTION, lcp.FRICTION2])
    mus, normals = np.array([0.0, 1.0, 1.0]), np.array([0, 0, 0])
    want = np.linalg.solve(A[:2, :2], -r[:2])
    assert abs(want[1]) < want[0]                                  # inside the cone: sticking
    for exact in (False, True):
        lam, res = lcp.solve(A, r, kinds, mus, normals, np.array([0.0565, -0.0565, 0.0]), max_iter=100, tol=1e-9,
                             exact=exact)
        assert res <= 1e-12
        np.testing.assert_allclose(lam, [want[0], want[1], 0.0], atol=1e-12)


@pytest.mark.parametrize("compiled", [True, False])
def test_planar_two_feet_lands_with_every_problem_solved_and_no_energy_gained(compiled):
    """Dropped with a spin onto both feet (mu = 1): every step's problem is solved to 1e-9 (the
    redundant friction rows go through the fallback), and the mechanical energy does not rise from
    one step to the next (a passive body, inelastic contact), checked at every step, beyond the
    potential energy of pushing the landing's 5e-8 m penetration back out (BETA: m g 1e-8 m a step,
    booked in the ledger): 1e-7 of the energy per step, 1e-6 over the run."""
    m = planar_two_feet()
    q, v = np.array([0.0, 0.26, 0.05]), np.array([1.0, -1.0, 2.0])
    sim = ld.Simulation(m, q, v, dt=1e-3, contact_method="timestep", record_every=1)
    sim._uni._compiled = compiled
    data = sim._uni.data
    E = [sum(data.energies(sim.q, sim.v))]
    for _ in range(800):
        sim.step()
        E.append(sum(data.energies(sim.q, sim.v)))
    stats = sim.contact_stats
    stats = stats() if callable(stats) else stats
    assert stats["steps_in_contact"] > 500
    assert stats["lcp_residual"] <= 1e-9, stats
    rises = np.clip(np.diff(E), 0.0, None)
    assert rises.max() <= 1e-7 * E[0] and rises.sum() <= 1e-6 * E[0], (rises.max(), rises.sum())
    assert sim.checks().ok


def test_an_unsolved_problem_is_never_applied(monkeypatch):
    """With a tolerance no answer can meet, the step raises ContactSolverError naming the time and
    the rows, and the simulation keeps its state and recording from before the step."""
    m = planar_two_feet()
    sim = ld.Simulation(m, np.array([0.0, 0.25, 0.0]), dt=1e-3, contact_method="timestep")
    sim.run(until=0.05, progress=False)
    q0, n0 = sim.q.copy(), len(sim.recording.t)
    monkeypatch.setattr(TS, "FAIL_TOL", -1.0)
    with pytest.raises(ld.contact.ContactSolverError) as err:
        sim.step()
    assert "torso_contact" in str(err.value) and err.value.t == pytest.approx(0.05)
    assert err.value.rows and err.value.residual >= 0.0
    np.testing.assert_array_equal(sim.q, q0)
    assert len(sim.recording.t) == n0


def test_minimum_norm_solves_agree_with_lstsq():
    """The polish's compiled linear algebra (lcp._min_norm_solve: pivoted QR and a complete
    orthogonal decomposition; dense.min_norm_psd: pivoted Cholesky and the pseudo-inverse of the
    full-rank factor) gives NumPy's lstsq answer: full rank, rank deficient (redundant contacts),
    symmetric semidefinite, and (min_norm_psd) a right-hand side outside B's range (the least
    squares answer of minimum norm)."""
    from linkdyn._kernels import dense
    rng = np.random.default_rng(7)
    for trial in range(400):
        n = int(rng.integers(1, 25))
        r = int(rng.integers(0, n + 1))
        U = rng.standard_normal((n, r))
        B = U @ rng.standard_normal((r, n)) if trial % 2 else U @ U.T
        b = B @ rng.standard_normal(n)              # consistent: a polish with the right active set
        ref = np.linalg.lstsq(B, b, rcond=1e-12)[0]
        x = np.empty(n)
        lcp._min_norm_solve(B, b, 1e-12, x)
        scale = max(1.0, np.abs(ref).max())
        tol = 1e-9 * scale * max(1.0, np.linalg.cond(B[:, :max(r, 1)]) * 1e-4)
        assert np.abs(x - ref).max() <= tol
        if trial % 2 == 0:
            B0, b0 = B.copy(), b.copy()
            x[:] = np.nan
            assert dense.min_norm_psd(B, b, 1e-12, x)
            assert np.abs(x - ref).max() <= tol
            assert (B == B0).all() and (b == b0).all()
            if r < n:                               # plus a part outside the range of B
                b2 = b + (np.eye(n) - np.linalg.pinv(B, rcond=1e-10) @ B) @ rng.standard_normal(n)
                ref2 = np.linalg.lstsq(B, b2, rcond=1e-12)[0]
                assert dense.min_norm_psd(B, b2, 1e-12, x)
                assert np.abs(x - ref2).max() <= tol
    # a zero eigenvalue that round-off may lift to a pivot near the rank tolerance, and a
    # right-hand side a little off B's range (a standing figure's events-scheme problem): the
    # pivoted Cholesky gives way to the orthogonal decomposition rather than put 1/pivot into x
    for seed in range(20):
        g = np.random.default_rng(seed)
        U = np.linalg.qr(g.standard_normal((12, 12)))[0]
        s = np.r_[np.sort(g.uniform(0.01, 1.0, 9))[::-1], 2.5e-13, 0.0, 0.0]
        B = (U * s) @ U.T
        b = B @ g.standard_normal(12) + 1e-6 * U[:, 9:] @ g.standard_normal(3)
        ref = np.linalg.lstsq(B, b, rcond=1e-12)[0]
        if dense.min_norm_psd(B, b, 1e-12, x := np.empty(12)):
            assert np.abs(x - ref).max() <= 1e-6 * np.abs(ref).max()
    B = np.array([[4.0, 1.0], [1.0, 3.0]])
    x = np.empty(2)
    assert dense.min_norm_psd(B, np.array([1.0, 2.0]), 1e-12, x)
    assert np.allclose(x, np.linalg.solve(B, [1.0, 2.0]), rtol=1e-15, atol=0)
    assert dense.min_norm_psd(np.zeros((3, 3)), np.ones(3), 1e-12, x := np.empty(3)) and (x == 0).all()


def _sliding_problems(seed, k=4, nv=9):
    """A random problem of k contacts with friction (mu = 0.3) whose tangential rows are coupled
    through a random inverse inertia, driven so that some of them slide."""
    rng = np.random.default_rng(seed)
    m = 3 * k
    G = rng.standard_normal((m, nv))
    A = G @ G.T
    order = np.r_[np.arange(0, m, 3), np.concatenate([[i + 1, i + 2] for i in range(0, m, 3)])]
    A = A[np.ix_(order, order)]
    r = np.empty(m)
    r[:k] = -rng.uniform(0.5, 1.5, k)                    # every contact pushed into the ground
    r[k:] = rng.standard_normal(2 * k) * 3.0            # and hard along it: some slide
    kinds = np.r_[np.full(k, lcp.NORMAL), np.tile([lcp.FRICTION, lcp.FRICTION2], k)]
    normal = np.r_[np.arange(k), np.repeat(np.arange(k), 2)]
    mu = np.r_[np.zeros(k), np.full(2 * k, 0.3)]
    return A, r, kinds.astype(np.int64), mu, normal.astype(np.int64)


def test_the_polish_turns_sliding_forces_against_their_slip():
    """A sliding pair's force is mu lambda_n opposite to its slip, a direction Gauss-Seidel
    approaches only slowly when the contacts are coupled: the polish turns it from the slip of
    its own answer.  From thirty sweeps of random coupled problems with sliding contacts, the
    polish that turns reaches round-off on every problem the polish with the direction held
    fixed does, and on many more."""
    fixed, turned, sliding = set(), set(), 0
    for seed in range(60):
        A, r, kinds, mu, normal = _sliding_problems(seed)
        lam = np.zeros(len(r))
        lcp._pgs(A, r, kinds, mu, normal, lam, 30, 0.0)
        if lcp._residual(A, r, kinds, mu, normal, lam) <= 1e-10:
            continue
        sliding += 1
        for turns, got in ((1, fixed), (lcp.RIM_TURNS, turned)):
            out = np.empty(len(r))
            lcp._polish_kernel(A, r, kinds, mu, normal, lam, out, turns)
            if lcp._residual(A, r, kinds, mu, normal, out) <= 1e-12:
                got.add(seed)
    assert sliding >= 20
    assert fixed <= turned and len(turned) >= len(fixed) + 10 and len(turned) >= 0.7 * sliding, (fixed, turned)


def test_the_warm_polish_starts_newton_from_the_last_answer():
    """A time step's warm start is the last step's answer, near this step's: its polish starts
    Newton's method from it (``direct``) instead of from the fold with its directions, which costs a
    solve (gymnasium's humanoid, 3 s: the solves 49 -> 40 ms).  On random coupled problems with
    sliding contacts, each solved and then moved a little (r + 2 % of its size, a next step), the
    direct polish of the old answer reaches round-off wherever the fold-first one does, and the two
    give the same motion (A-weighted, to 1e-9; a redundant load's split may differ) and the same
    forces where the problem has one answer."""
    both = direct_only = unique = 0
    for seed in range(80):
        A, r, kinds, mu, normal = _sliding_problems(seed, nv=9 if seed % 2 else 14)   # A singular / not
        lam = np.zeros(len(r))
        res, _ = lcp._step_solve(A, r, kinds, mu, normal, lam, 2000, 1e-12, 0)
        if res > 1e-12 or not lcp._sliding(kinds, mu, normal, lam):
            continue
        r2 = r + 0.02 * np.abs(r).max() * np.random.default_rng(1000 + seed).standard_normal(len(r))
        outs = []
        for direct in (False, True):
            out = np.empty(len(r))
            lcp._polish_kernel(A, r2, kinds, mu, normal, lam, out, lcp.RIM_TURNS, False, direct)
            outs.append(out if lcp._residual(A, r2, kinds, mu, normal, out) <= 1e-12 else None)
        fold, direct = outs
        assert fold is None or direct is not None, seed
        if fold is None:
            direct_only += direct is not None
            continue
        both += 1
        d = fold - direct
        assert np.sqrt(max(d @ A @ d, 0.0)) <= 1e-9 * np.sqrt(fold @ A @ fold), seed
        if seed % 2 == 0:
            unique += 1
            assert np.allclose(fold, direct, rtol=0, atol=1e-9 * np.abs(fold).max()), seed
    assert both >= 20 and unique >= 10, (both, unique, direct_only)


def test_the_cone_projection_is_the_nearest_point_of_the_cones():
    """``lcp._cone_project`` (the ADMM fallback's z-update) against its defining property, Moreau's
    decomposition: x = z + y with z in the cones, y in their polar cones (-y in the dual cones,
    mu |y_t| <= -y_n for the self-dual scaling of a friction cone) and z . y = 0 per block; a free
    row passes through, a frictionless normal is clipped at 0; mu = 0 and points inside, in the
    polar cone and on the axis included."""
    rng = np.random.default_rng(0)
    kinds = np.array([lcp.FREE, lcp.NORMAL, lcp.NORMAL, lcp.NORMAL, lcp.FRICTION, lcp.FRICTION2, lcp.FRICTION,
                      lcp.FRICTION2], dtype=np.int64)
    normal = np.array([0, 1, 2, 3, 2, 2, 3, 3], dtype=np.int64)
    cases = 0
    for k in range(400):
        mu = np.array([0, 0, 0, 0, 1, 1, 0, 0], float) * rng.uniform(0.1, 2.0) + np.array([0, 0, 0, 0, 0, 0, 1, 1]) * (
            0.0 if k % 4 == 0 else rng.uniform(0.1, 2.0))
        x = rng.standard_normal(8) * rng.uniform(0.01, 10.0)
        if k % 5 == 1:
            x[4:6] = 0.0                                   # on the cone's axis
        z = np.empty(8)
        lcp._cone_project(kinds, mu, normal, x, z)
        y = x - z
        assert z[0] == x[0] and z[1] == max(x[1], 0.0)
        for n, f in ((2, 4), (3, 6)):
            c, zt, yt = mu[f], np.hypot(z[f], z[f + 1]), np.hypot(y[f], y[f + 1])
            scale = 1e-12 * max(1.0, np.abs(x).max())
            assert zt <= c * z[n] + scale                   # z in the friction cone
            assert c * yt <= -y[n] + scale or (c == 0.0 and y[n] <= scale)   # y in its polar cone
            assert abs(z[n] * y[n] + z[f] * y[f] + z[f + 1] * y[f + 1]) <= scale * max(1.0, np.abs(x).max())
            cases += zt > 0 and yt > 0
    assert cases > 50                                       # on the rim with a component cut off


def test_basic_solves_solve_full_rank_and_consistent_singular_systems():
    """``dense.basic_solve`` (rook pivoting, the Newton steps' solver): on a nonsingular B the
    unique solution; on a singular B (rank r < n, redundant contacts) with b in its range, rank r
    and an exact solution with n - r unknowns zero, also with its rows and columns scaled over
    two orders of magnitude; on a zero B, rank 0 and x = 0; an entry below 1e-12 of the largest
    is negligible wherever it sits (a rook pivot taken first from column 0 would keep it)."""
    from linkdyn._kernels import dense
    rng = np.random.default_rng(1)
    for n in (1, 5, 20, 27):
        B = rng.standard_normal((n, n))
        b = rng.standard_normal(n)
        x = np.empty(n)
        assert dense.basic_solve(B, b, 1e-12, x) == n
        np.testing.assert_allclose(x, np.linalg.solve(B, b), rtol=1e-9, atol=1e-12)
        for r in range(1, n):
            C = rng.standard_normal((n, r)) @ rng.standard_normal((r, n))
            c = C @ rng.standard_normal(n)
            assert dense.basic_solve(C, c, 1e-12, x) == r
            assert np.abs(C @ x - c).max() <= 1e-9 * np.abs(c).max()
            assert (x == 0.0).sum() >= n - r
            D1, D2 = 10.0 ** rng.uniform(-1, 1, n), 10.0 ** rng.uniform(-1, 1, n)
            S = D1[:, None] * C * D2[None, :]
            s = S @ rng.standard_normal(n)
            assert dense.basic_solve(S, s, 1e-12, x) == r
            assert np.abs(S @ x - s).max() <= 1e-8 * np.abs(s).max()
    x = np.empty(2)
    assert dense.basic_solve(np.diag([1e-13, 1.0]), np.array([1.0, 2.0]), 1e-12, x) == 1 and (x == [0.0, 2.0]).all()
    assert dense.basic_solve_gap(np.diag([1e-9, 1.0]), np.array([1.0, 2.0]), 1e-12, x) == (2, 1e-9)   # kept, its gap told
    x = np.full(3, 7.0)
    assert dense.basic_solve(np.zeros((3, 3)), np.ones(3), 1e-12, x) == 0 and (x == 0).all()


def test_a_compiled_runs_samples_are_the_single_steps_samples():
    """The samples a compiled run records inside its call (``Simulation._record_samples``: the
    contact points from the kernel's own kinematics pass, the energies, the forces) equal those
    stepping one step at a time records (``Simulation._record``: ``UnitCatalog.points``)."""
    m = planar_two_feet()
    q, v = np.array([0.0, 0.26, 0.05]), np.array([1.0, -1.0, 2.0])
    sims = [ld.Simulation(m, q, v, dt=1e-3, contact_method="timestep", record_every=3) for _ in range(2)]
    sims[0].run(until=0.3, progress=False)
    for _ in range(300):
        sims[1].step()
    a, b = (s.recording.segments[0].arrays() for s in sims)
    assert len(a["t"]) == len(b["t"]) > 90
    for key in ("q", "v", "unit_point", "unit_force", "unit_gap", "kinetic", "potential"):
        assert np.abs(np.asarray(a[key]) - np.asarray(b[key])).max() <= 1e-12, key
    assert np.abs(np.asarray(a["unit_point"])).max() > 0.1            # the points are there



def test_an_inexact_answer_is_put_inside_its_cones():
    """An answer accepted at the step's tolerance may leave a friction force past its cone (the
    residual counts that like any other violation; 1.2e-6 of the force on a sole of the stepping
    figure of tests/test_mocap_groundtruth.py with a looser relinearization): the kept solve
    scales each such pair onto its rim (``lcp._into_cones``), so the forces a step applies are
    inside their cones to round-off.  A pair outside shrinks along its own direction onto mu
    lambda_n (zero where lambda_n <= 0), a pair inside and every normal are left bit for bit."""
    rng = np.random.default_rng(7)
    k = 6
    kinds = np.r_[np.full(k, lcp.NORMAL), np.tile([lcp.FRICTION, lcp.FRICTION2], k)].astype(np.int64)
    normal = np.r_[np.arange(k), np.repeat(np.arange(k), 2)].astype(np.int64)
    mu = np.r_[np.zeros(k), np.full(2 * k, 0.8)]
    lam = np.r_[[2.0, 1.0, 0.0, 3.0, 0.5, 1.0], rng.standard_normal(2 * k)]
    lam[k + 2:k + 4] = [0.3, -0.4]                          # contact 1: |f_t| 0.5 <= 0.8, inside
    lam[k + 10:k + 12] = [0.48, 0.64]                       # contact 5: |f_t| 0.8 = 0.8 mu, on the rim
    lam[k + 6:k + 8] = [3.0, 4.0]                           # contact 3: |f_t| 5 > 2.4, outside
    before = lam.copy()
    assert lcp._into_cones(kinds, mu, normal, lam)
    np.testing.assert_array_equal(lam[:k], before[:k])
    for c in range(k):
        i = k + 2 * c
        t0, t1 = before[i:i + 2], lam[i:i + 2]
        cap = mu[i] * max(before[c], 0.0)
        if np.hypot(*t0) <= cap:
            np.testing.assert_array_equal(t1, t0)
        else:
            assert np.hypot(*t1) == pytest.approx(cap, rel=1e-15, abs=1e-300)
            assert t1 @ t0 >= 0 and abs(t1[0] * t0[1] - t1[1] * t0[0]) <= 1e-15 * np.hypot(*t0) ** 2
    np.testing.assert_allclose(lam[k + 6:k + 8], [1.44, 1.92], rtol=1e-15)
    np.testing.assert_array_equal(lam[k + 4:k + 6], [0.0, 0.0])              # lambda_n = 0: no friction
    again = lam.copy()
    assert not lcp._into_cones(kinds, mu, normal, again)
    np.testing.assert_array_equal(again, lam)
