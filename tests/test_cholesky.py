"""Tree-sparse LTDL factorization of the joint-space inertia (Featherstone 2008 sec. 6.5).

What is proved here, on the random trees of conftest (every joint kind, fixed and floating,
branchy) and on real robots:
* the parent-dof array against a construction from the body tree (model.support);
* L^T D L reconstructs H = crba(q); a dense factorization computed independently (NumPy
  Cholesky of the reversed matrix) has no fill-in outside the tree pattern and equals ours;
* the kernels recover a known factor of random tree-patterned matrices (hypothesis);
* solves against numpy.linalg.solve and against ABA with v = 0 and no gravity;
* the inverse congruence (H^-1 Jc^T, Jc H^-1 Jc^T) against the dense computation;
* singular models raise LinAlgError naming the joint; stacks equal single states;
* Pinocchio's cholesky (H = U D U^T, U = L^T) on panda: same D and U where the dof orders
  agree (shown), same solves on talos under its own dof order.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import linkdyn as ld
from conftest import TREES, assert_close, build_tree, needs_pin, random_q
from linkdyn._kernels.passes import OK, SINGULAR
from linkdyn.dynamics.cholesky import (SINGULAR_TOL, MassMatrixCholesky, dof_parent,
                                       _ltdl_factor, _ltdl_inverse_congruence, _ltdl_solve, _ltdl_solve_many,
                                       mass_matrix_cholesky, solve_mass_matrix)

try:
    import pinocchio as pin
except ImportError:  # pragma: no cover
    pin = None

SEEDS = [0, 1]
ROBOTS = ("panda", "talos")


@pytest.fixture(scope="module", params=ROBOTS)
def robot(request):
    return ld.models.example_robot(request.param)


def _rigid(A):
    """A rigid body's rotational inertia from a random matrix: I = tr(P) 1 - P, P = A A^T + 0.1 1."""
    P = A @ A.T + 0.1 * np.eye(3)
    return np.trace(P) * np.eye(3) - P


def _models():
    return [build_tree(n) for n in TREES]


def _relerr(got, want):
    return np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300)


# --------------------------------------------------------------------------------------
# independent references
def _lam_from_tree(model):
    """lambda(i) built from the body tree (model.support, jnt_vadr), not from the kernel."""
    lam = np.empty(model.nv, dtype=np.int64)
    for i in range(1, model.nbody):
        va, n = int(model.jnt_vadr[i]), int(model.jnt_nv[i])
        if n == 0:
            continue
        anc = [b for b in model.support(i)[1:] if model.jnt_nv[b] > 0]
        lam[va] = model.jnt_vadr[anc[0]] + model.jnt_nv[anc[0]] - 1 if anc else -1
        lam[va + 1:va + n] = np.arange(va, va + n - 1)
    return lam


def _pattern_from_tree(model):
    """P[k, i] = True iff i < k and dofs i, k are on one root path (same body or ancestor)."""
    nv = model.nv
    P = np.zeros((nv, nv), dtype=bool)
    for k in range(nv):
        bk = int(model.dof_body[k])
        chain = set(model.support(bk))
        for i in range(k):
            P[k, i] = int(model.dof_body[i]) in chain
    return P


def _dense_ltdl(H):
    """H = L^T diag(D) L by dense NumPy Cholesky: with J the reversal, J H J = C C^T (C lower),
    J L^T J = C diag(C)^-1, D = J diag(C)^2."""
    Hr = H[::-1, ::-1]
    C = np.linalg.cholesky(Hr)
    c = np.diag(C)
    Lt = (C / c)[::-1, ::-1]            # unit upper triangular = L^T
    return Lt.T.copy(), (c ** 2)[::-1].copy()


# --------------------------------------------------------------------------------------
# the parent dofs
@pytest.mark.parametrize("name", list(TREES))
def test_dof_parents_match_the_body_tree(name):
    model = build_tree(name)
    lam = dof_parent(model)
    assert lam.dtype == np.int64 and lam.shape == (model.nv,)
    np.testing.assert_array_equal(lam, _lam_from_tree(model))
    assert all(lam[i] < i for i in range(model.nv))


def test_dof_parents_skip_fixed_bodies():
    """A fixed-joint body between two moving ones (merged into its parent by the builder)
    leaves no gap: both children of the spherical joint hang from its last dof."""
    b = ld.ModelBuilder("fixed-middle")
    I = ld.Inertia(1.0, [0.1, 0.0, 0.2], np.diag([0.1, 0.2, 0.3]))
    b.add_body("a", "world", ld.Spherical(), inertia=I)
    b.add_body("f", "a", ld.Fixed(), placement=[0, 0, 0.3], inertia=I)
    b.add_body("c", "f", ld.Revolute("x"), placement=[0.2, 0, 0], inertia=I)
    b.add_body("d", "a", ld.Prismatic("y"), inertia=I)
    model = b.build()
    lam = dof_parent(model)
    c, d = model.v_index("c_joint"), model.v_index("d_joint")
    assert sorted([c, d]) == [3, 4]
    np.testing.assert_array_equal(lam[:3], [-1, 0, 1])
    assert lam[c] == 2 and lam[d] == 2


# --------------------------------------------------------------------------------------
# the factorization
def _check_factor(model, q, tol=1e-12):
    H = ld.crba(model, q)
    fac = mass_matrix_cholesky(model, q)
    L, D = fac.to_dense()
    assert np.all(D > 0)
    assert _relerr(L.T @ np.diag(D) @ L, H) <= tol, "L^T D L != H"
    # the strict upper triangle of LD is H's
    iu = np.triu_indices(model.nv, 1)
    np.testing.assert_array_equal(fac.LD[iu], H[iu])
    return H, fac, L, D


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(TREES))
def test_ltdl_reconstructs_H_on_random_trees(name, seed):
    model = build_tree(name)
    _check_factor(model, random_q(model, np.random.default_rng(seed)))


@pytest.mark.parametrize("seed", SEEDS)
def test_ltdl_reconstructs_H_on_robots(robot, seed):
    _check_factor(robot, random_q(robot, np.random.default_rng(seed)))


@pytest.mark.parametrize("name", ["branchy-25", "mixed-floating-s4", "mixed-fixed-s0", "chain4-universal"])
def test_no_fill_in_and_equal_to_dense_factor(name):
    """The dense LTDL (independent NumPy Cholesky) is zero outside the tree pattern (fill-in
    free), and ours equals it; our LD has exact zeros there (never written)."""
    model = build_tree(name)
    q = random_q(model, np.random.default_rng(3))
    H, fac, L, D = _check_factor(model, q)
    P = _pattern_from_tree(model)
    np.testing.assert_array_equal(P, np.tril(P, -1))
    off = np.tril(~P, -1)
    assert off.any() == (name != "chain4-universal"), "branches <=> entries outside the pattern"
    Ld, Dd = _dense_ltdl(H)
    if off.any():
        assert np.abs(Ld[off]).max() <= 1e-12 * np.abs(Ld).max(), "dense factor fills in"
    assert np.all(fac.LD[off] == 0.0)
    assert_close(L, Ld, 1e-10, "L vs dense")
    assert _relerr(D, Dd) <= 1e-10
    assert (np.abs(L[P]) > 1e-14).mean() > 0.5       # the pattern is really used


@pytest.mark.parametrize("robot_name", ROBOTS)
def test_no_fill_in_on_robots(robot_name):
    model = ld.models.example_robot(robot_name)
    H, fac, L, D = _check_factor(model, random_q(model, np.random.default_rng(0)))
    P = _pattern_from_tree(model)
    Ld, Dd = _dense_ltdl(H)
    off = np.tril(~P, -1)
    if off.any():
        assert np.abs(Ld[off]).max() <= 1e-12 * np.abs(Ld).max()
    assert_close(L, Ld, 1e-9, "L vs dense")
    assert _relerr(D, Dd) <= 1e-9


def test_D_is_the_schur_complement_of_the_descendants():
    """D_kk = H_kk - H_k,d H_d,d^-1 H_d,k over the dofs d after k (the articulated inertia)."""
    model = build_tree("branchy-25")
    H = ld.crba(model, random_q(model, np.random.default_rng(5)))
    D = mass_matrix_cholesky(model, random_q(model, np.random.default_rng(5))).diagonal()
    n = model.nv
    for k in range(n):
        d = slice(k + 1, n)
        s = H[k, k] - (H[k, d] @ np.linalg.solve(H[d, d], H[d, k]) if k + 1 < n else 0.0)
        assert abs(D[k] - s) <= 1e-9 * H[k, k]


@pytest.mark.parametrize("name", list(TREES))
def test_D_blocks_are_abas_articulated_joint_inertias(name):
    """For each joint i, L_ii^T D_ii L_ii (its diagonal block of the factor) is ABA's
    D_i = S_i^T I^A_i S_i (+ armature): the joint inertia with the subtree free.  ABA keeps
    D_i^-1 in the workspace rows ``Dinv[vadr:vadr + nv, :nv]`` (layout.DATA_FIELDS)."""
    from linkdyn._kernels import layout
    model = build_tree(name)
    rng = np.random.default_rng(9)
    q = random_q(model, rng)
    L, D = mass_matrix_cholesky(model, q).to_dense()
    ld.aba(model, q, np.zeros(model.nv), np.zeros(model.nv))          # single state: model._ws
    Dinv = layout.views(model._ws, layout.DATA_FIELDS, model.nbody, model.nv)["Dinv"]
    for i in range(1, model.nbody):
        va, n = int(model.jnt_vadr[i]), int(model.jnt_nv[i])
        Lb = L[va:va + n, va:va + n]
        A = Lb.T @ np.diag(D[va:va + n]) @ Lb
        assert_close(np.linalg.inv(A), Dinv[va:va + n, :n], 1e-9, f"joint {i}")


def _three_limbs(order):
    """A floating torso with three limbs (2-3 bodies, mixed joints) added in ``order``."""
    rng = np.random.default_rng(12)
    limbs = {
        "L": [("L1", ld.Revolute([0.3, 1.0, 0.2])), ("L2", ld.Universal("x", "y")), ("L3", ld.Prismatic("z"))],
        "R": [("R1", ld.Spherical()), ("R2", ld.Revolute("y"))],
        "H": [("H1", ld.Cylindrical("z")), ("H2", ld.SphericalZYX())],
    }
    specs = {}
    for key in "LRH":
        for name, joint in limbs[key]:
            A = rng.standard_normal((3, 3))
            specs[name] = (joint, ld.Inertia(rng.uniform(0.5, 2), 0.1 * rng.standard_normal(3), _rigid(A)),
                           0.3 * rng.standard_normal(3))
    b = ld.ModelBuilder("three-limbs")
    b.add_body("torso", "world", ld.FreeFlyer(), inertia=ld.Inertia(5.0, [0, 0, 0.1], np.diag([0.3, 0.3, 0.2])))
    for key in order:
        parent = "torso"
        for name, _ in limbs[key]:
            joint, inertia, p = specs[name]
            b.add_body(name, parent, joint, placement=p, inertia=inertia)
            parent = name
    return b.build()


def test_D_does_not_depend_on_the_order_of_siblings():
    """Two depth-first numberings of one tree (limbs in another order): D, L and the solves
    are the same up to the dof permutation, because D_kk only depends on k's descendants."""
    A, B = _three_limbs("LRH"), _three_limbs("HLR")
    perm = np.empty(A.nv, dtype=int)                  # v_B = v_A[perm]
    for name in A.joint_names:
        perm[B.v_slice(name)] = np.arange(A.v_slice(name).start, A.v_slice(name).stop)
    assert not np.array_equal(perm, np.arange(A.nv))
    qA = random_q(A, np.random.default_rng(0))
    qB = np.empty(B.nq)
    for name in A.joint_names:
        qB[B.q_slice(name)] = qA[A.q_slice(name)]
    qB[:7] = qA[:7]
    fA, fB = mass_matrix_cholesky(A, qA), mass_matrix_cholesky(B, qB)
    assert _relerr(fA.diagonal()[perm], fB.diagonal()) <= 1e-12
    LA, _ = fA.to_dense()
    LB, _ = fB.to_dense()
    assert_close(LA[np.ix_(perm, perm)], LB, 1e-12, "L permuted")
    b = np.random.default_rng(1).standard_normal(A.nv)
    assert_close(fA.solve(b)[perm], fB.solve(b[perm]), 1e-12, "solve permuted")


def test_logdet():
    model = build_tree("mixed-floating-s4")
    q = random_q(model, np.random.default_rng(1))
    sign, want = np.linalg.slogdet(ld.crba(model, q))
    assert sign == 1.0
    assert abs(mass_matrix_cholesky(model, q).logdet() - want) <= 1e-10 * max(1.0, abs(want))


# --------------------------------------------------------------------------------------
# the kernels on random tree-patterned matrices with a known factor
@st.composite
def _tree_factor(draw):
    n = draw(st.integers(1, 24))
    lam = [-1]
    for i in range(1, n):
        # depth-first numbering: the parent of dof i is on the path root..(i-1), or none
        path = [-1]
        j = i - 1
        while j >= 0:
            path.append(j)
            j = lam[j]
        lam.append(draw(st.sampled_from(path)))
    lam = np.array(lam, dtype=np.int64)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    L = np.eye(n)
    for k in range(n):
        i = lam[k]
        while i >= 0:
            L[k, i] = rng.uniform(-2, 2)
            i = lam[i]
    D = rng.uniform(0.05, 5.0, n) * 10.0 ** rng.integers(-2, 3, n)
    return lam, L, D


@settings(max_examples=60, deadline=None)
@given(_tree_factor())
def test_kernels_recover_a_known_factor(case):
    lam, L, D = case
    n = len(lam)
    H = L.T @ np.diag(D) @ L
    LD = H.copy()
    assert _ltdl_factor(LD, lam) == OK
    np.testing.assert_allclose(np.diag(LD), D, rtol=1e-8)
    Lgot = np.tril(LD, -1) + np.eye(n)
    assert np.abs(Lgot - L).max() <= 1e-7 * max(1.0, np.abs(L).max())
    np.testing.assert_array_equal(np.triu(LD, 1), np.triu(H, 1))
    rng = np.random.default_rng(n)
    b = rng.standard_normal(n)
    x = b.copy()
    _ltdl_solve(LD, lam, x)
    # residual test (H may be ill conditioned: D spans 4 decades)
    assert np.abs(H @ x - b).max() <= 1e-9 * (1 + np.abs(H).max() * np.abs(x).max())
    B = rng.standard_normal((n, 3))
    X = B.copy()
    _ltdl_solve_many(LD, lam, X)
    for c in range(3):
        xc = B[:, c].copy()
        _ltdl_solve(LD, lam, xc)
        np.testing.assert_allclose(X[:, c], xc, rtol=1e-12, atol=1e-14 * np.abs(xc).max())


def test_kernel_reports_singular_pivot():
    lam = np.array([-1, 0, 1], dtype=np.int64)
    # rank 2: the last two dofs move the same thing (H = [[2,1,1],[1,1,1],[1,1,1]])
    H = np.array([[2.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    assert _ltdl_factor(H.copy(), lam) == SINGULAR
    # a zero row (a dof that moves nothing)
    H0 = np.diag([1.0, 2.0, 0.0])
    assert _ltdl_factor(H0.copy(), lam) == SINGULAR
    # ... but a tiny, well separated pivot is not singular: the test is relative to H_kk
    Ht = np.diag([1e6, 1.0, 1e-9])
    assert _ltdl_factor(Ht.copy(), lam) == OK
    # near rank loss: D_0 = eps * H_00 after the descendants are eliminated (H_00 is the
    # original diagonal entry, not D_0 itself); singular iff eps <= SINGULAR_TOL
    lam2 = np.array([-1, 0], dtype=np.int64)
    for eps, want in ((1e-14, SINGULAR), (1e-13, SINGULAR), (1e-11, OK), (1e-8, OK)):
        H2 = np.array([[1.0 + eps, 1.0], [1.0, 1.0]]) * 3.0
        assert _ltdl_factor(H2, lam2) == want, eps


# --------------------------------------------------------------------------------------
# solves
@pytest.mark.parametrize("name", list(TREES))
def test_solve_equals_numpy(name):
    model = build_tree(name)
    rng = np.random.default_rng(2)
    q = random_q(model, rng)
    H = ld.crba(model, q)
    b = rng.standard_normal(model.nv)
    B = rng.standard_normal((model.nv, 4))
    want, Want = np.linalg.solve(H, b), np.linalg.solve(H, B)
    assert_close(solve_mass_matrix(model, q, b), want, 1e-10, "solve_mass_matrix")
    fac = mass_matrix_cholesky(model, q)
    assert_close(fac.solve(b), want, 1e-10, "solve (nv,)")
    assert_close(fac.solve(B), Want, 1e-10, "solve (nv, k)")
    assert_close(H @ fac.solve(b), b, 1e-10, "residual")


@pytest.mark.parametrize("seed", SEEDS)
def test_solve_equals_numpy_on_robots(robot, seed):
    rng = np.random.default_rng(seed)
    q = random_q(robot, rng)
    H = ld.crba(robot, q)
    b = rng.standard_normal(robot.nv)
    assert _relerr(solve_mass_matrix(robot, q, b), np.linalg.solve(H, b)) <= 1e-9


@pytest.mark.parametrize("name", [n for n in TREES if n != "single-body"] + ["panda", "talos"])
def test_solve_equals_aba_without_gravity(name):
    """aba(model_without_gravity, q, 0, tau) = H^-1 tau: the O(n) recursion vs CRBA + LTDL."""
    if name in ROBOTS:
        model = ld.models.example_robot(name, gravity=(0.0, 0.0, 0.0))
    else:
        model = build_tree(name, gravity=(0.0, 0.0, 0.0))
    rng = np.random.default_rng(4)
    q, tau = random_q(model, rng), rng.standard_normal(model.nv)
    want = ld.aba(model, q, np.zeros(model.nv), tau)
    assert np.abs(want).max() > 1e-3
    assert _relerr(solve_mass_matrix(model, q, tau), want) <= 1e-9


# --------------------------------------------------------------------------------------
# the inverse congruence
def _frame_jacobians(model, q, names):
    return np.vstack([ld.jacobian(model, q, n, reference="world") for n in names])


@pytest.mark.parametrize("name", ["branchy-25", "mixed-floating-s3", "chain4-spherical"])
def test_inverse_congruence_equals_dense(name):
    model = build_tree(name)
    rng = np.random.default_rng(6)
    q = random_q(model, rng)
    H = ld.crba(model, q)
    fac = mass_matrix_cholesky(model, q)
    # a dense Jc, and a sparse one (frame Jacobians of two bodies on different branches)
    leaves = [model.body_names[i] for i in range(1, model.nbody) if model.subtree_end[i] == i + 1]
    for Jc in (rng.standard_normal((5, model.nv)), _frame_jacobians(model, q, leaves[:2])):
        Y, Lam = fac.inverse_congruence(Jc)
        Yd = np.linalg.solve(H, Jc.T)
        assert_close(Y, Yd, 1e-9, "H^-1 Jc^T")
        assert_close(Lam, Jc @ Yd, 1e-9, "Jc H^-1 Jc^T")
        np.testing.assert_array_equal(Lam, Lam.T)
    # the kernel with m = 0
    Y0, L0 = np.empty((model.nv, 0)), np.empty((0, 0))
    _ltdl_inverse_congruence(fac.LD, fac.lam, np.zeros((0, model.nv)), Y0, L0)


def test_inverse_congruence_on_talos_feet():
    model = ld.models.example_robot("talos")
    q = random_q(model, np.random.default_rng(0))
    H = ld.crba(model, q)
    Jc = _frame_jacobians(model, q, ["leg_left_6_link", "leg_right_6_link"])
    Y, Lam = mass_matrix_cholesky(model, q).inverse_congruence(Jc)
    Yd = np.linalg.solve(H, Jc.T)
    assert _relerr(Y, Yd) <= 1e-9
    assert _relerr(Lam, Jc @ Yd) <= 1e-9
    assert np.linalg.eigvalsh(Lam).min() > 0


# --------------------------------------------------------------------------------------
# singular models
def _massless_leaf():
    b = ld.ModelBuilder("massless-leaf")
    b.add_body("a", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0, [0.1, 0.2, 0.0], np.diag([0.1, 0.2, 0.3])))
    b.add_body("tip", "a", ld.Revolute("x"), placement=[0.3, 0, 0])          # no mass: moves nothing
    return b.build()


def _coaxial_on_massless():
    """A massless body on a z revolute carries a massive one on a coaxial z revolute: the two
    joints move the same thing (H = [[c, c], [c, c]] up to round-off)."""
    b = ld.ModelBuilder("coaxial")
    b.add_body("a", "world", ld.Revolute("z"), placement=[0, 0, 0.1])
    b.add_body("b", "a", ld.Revolute("z"), placement=[0, 0, 0.2],
               inertia=ld.Inertia(1.0, [0.3, 0.1, 0.0], np.diag([0.1, 0.2, 0.3])))
    return b.build()


def _nearly_coaxial_on_massless(tilt):
    """As _coaxial_on_massless with the second axis tilted by ``tilt`` rad: D_0 / H_00 ~ tilt^2."""
    b = ld.ModelBuilder("nearly-coaxial")
    b.add_body("a", "world", ld.Revolute("z"), placement=[0, 0, 0.1])
    b.add_body("b", "a", ld.Revolute([0.0, np.sin(tilt), np.cos(tilt)]), placement=[0, 0, 0.2],
               inertia=ld.Inertia(1.0, [0.3, 0.1, 0.0], np.diag([0.1, 0.2, 0.3])))
    return b.build()


@pytest.mark.parametrize("tilt, singular", [(1e-8, True), (1e-7, True), (1e-5, False), (1e-3, False)])
def test_nearly_coaxial_joints(tilt, singular):
    """The relative pivot test on a physical near-singularity (D_0 / H_00 ~ tilt^2)."""
    model = _nearly_coaxial_on_massless(tilt)
    q = np.array([0.3, -0.7])
    H = ld.crba(model, q)
    if singular:
        with pytest.raises(np.linalg.LinAlgError, match="joint 'a_joint'"):
            solve_mass_matrix(model, q, np.ones(2))
    else:
        D = mass_matrix_cholesky(model, q).diagonal()
        assert 0.1 * tilt ** 2 < D[0] / H[0, 0] < 10 * tilt ** 2
        b = np.array([1.0, -2.0])
        x = solve_mass_matrix(model, q, b)
        # backward stable: the residual is round-off of |H| |x| (x is huge: cond(H) ~ 1 / tilt^2)
        assert np.abs(H @ x - b).max() <= 1e-14 * np.abs(H).max() * np.abs(x).max()


@pytest.mark.parametrize("make, joint", [(_massless_leaf, "tip_joint"), (_coaxial_on_massless, "a_joint")])
def test_singular_models_raise_linalg_error_naming_the_joint(make, joint):
    model = make()
    q = random_q(model, np.random.default_rng(0))
    H = ld.crba(model, q)
    assert np.linalg.eigvalsh(H).min() <= 1e-12 * np.abs(H).max()     # really singular
    for call in (lambda: mass_matrix_cholesky(model, q), lambda: solve_mass_matrix(model, q, np.ones(model.nv))):
        with pytest.raises(np.linalg.LinAlgError, match=f"singular at dof \\d \\(joint '{joint}'"):
            call()
    Q = np.stack([random_q(model, np.random.default_rng(s)) for s in range(3)])
    with pytest.raises(np.linalg.LinAlgError, match="state 0 of the stack"):
        solve_mass_matrix(model, Q, np.ones((3, model.nv)))
    with pytest.raises(np.linalg.LinAlgError, match="state 0 of the stack"):
        mass_matrix_cholesky(model, Q)


def test_armature_makes_the_massless_leaf_regular():
    b = ld.ModelBuilder("massless-leaf-armature")
    b.add_body("a", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0, [0.1, 0.2, 0.0], np.diag([0.1, 0.2, 0.3])))
    b.add_body("tip", "a", ld.Revolute("x"), placement=[0.3, 0, 0], armature=[0.01])
    model = b.build()
    q = random_q(model, np.random.default_rng(0))
    assert_close(solve_mass_matrix(model, q, np.ones(2)), np.linalg.solve(ld.crba(model, q), np.ones(2)), 1e-10)


def test_massless_intermediate_body_is_not_singular():
    """As tests/test_dynamics.py::test_massless_intermediate_bodies: regular, so no error."""
    b = ld.ModelBuilder("massless-middle")
    b.add_body("a", "world", ld.Revolute("z"), placement=[0, 0, 0.1])
    b.add_body("b", "a", ld.Revolute("x"), placement=[0.3, 0, 0],
               inertia=ld.Inertia(1.0, [0.1, 0.2, 0.0], np.diag([0.1, 0.2, 0.3])))
    model = b.build()
    q = random_q(model, np.random.default_rng(0))
    H = ld.crba(model, q)
    D = mass_matrix_cholesky(model, q).diagonal()
    assert D.min() > 1e3 * SINGULAR_TOL * H.diagonal().max()
    assert_close(solve_mass_matrix(model, q, np.ones(2)), np.linalg.solve(H, np.ones(2)), 1e-10)


# --------------------------------------------------------------------------------------
# stacks
@pytest.mark.parametrize("name", ["branchy-25", "chain4-free", "mixed-fixed-s0"])
def test_batched_equals_per_state(name):
    model = build_tree(name)
    rng = np.random.default_rng(7)
    N = 9
    Q = np.stack([random_q(model, rng) for _ in range(N)])
    B = rng.standard_normal((N, model.nv))
    fac = mass_matrix_cholesky(model, Q)
    assert isinstance(fac, MassMatrixCholesky) and fac.batch == N and fac.LD.shape == (N, model.nv, model.nv)
    X = solve_mass_matrix(model, Q, B)
    Xf = fac.solve(B)
    Bk = rng.standard_normal((N, model.nv, 2))
    Xk = fac.solve(Bk)
    Jc = rng.standard_normal((3, model.nv))
    Y, Lam = fac.inverse_congruence(Jc)
    L, D = fac.to_dense()
    ld_ = fac.logdet()
    for k in range(N):
        one = mass_matrix_cholesky(model, Q[k])
        np.testing.assert_array_equal(fac.LD[k], one.LD)
        np.testing.assert_array_equal(X[k], solve_mass_matrix(model, Q[k], B[k]))
        assert_close(Xf[k], X[k], 1e-13)
        assert_close(Xk[k], one.solve(Bk[k]), 1e-13)
        Y1, Lam1 = one.inverse_congruence(Jc)
        assert_close(Y[k], Y1, 1e-13)
        assert_close(Lam[k], Lam1, 1e-13)
        L1, D1 = one.to_dense()
        np.testing.assert_array_equal(L[k], L1)
        np.testing.assert_array_equal(D[k], D1)
        assert ld_[k] == one.logdet()
    # shared q with a stack of b (factorized once), shared b with a stack of q
    q0 = Q[0]
    Xs = solve_mass_matrix(model, q0, B)
    assert_close(Xs, np.linalg.solve(ld.crba(model, q0), B.T).T, 1e-10)
    Xb = solve_mass_matrix(model, Q, B[0])
    for k in range(N):
        assert_close(Xb[k], solve_mass_matrix(model, Q[k], B[0]), 1e-13)


# --------------------------------------------------------------------------------------
# validation
def test_validation_messages():
    model = build_tree("mixed-floating-s3")
    q = random_q(model, np.random.default_rng(0))
    nv = model.nv
    with pytest.raises(ValueError, match=r"b: expected shape"):
        solve_mass_matrix(model, q, np.ones(nv + 1))
    with pytest.raises(ValueError, match=r"b: contains NaN"):
        bad = np.ones(nv)
        bad[2] = np.nan
        solve_mass_matrix(model, q, bad)
    with pytest.raises(ValueError, match=r"state 1 of the stack: b: contains NaN"):
        B = np.ones((3, nv))
        B[1, 0] = np.inf
        solve_mass_matrix(model, np.stack([q, q, q]), B)
    with pytest.raises(ValueError, match=r"state 1 of the stack: b: contains NaN"):
        B = np.ones((3, nv))
        B[1, 0] = np.inf
        solve_mass_matrix(model, q, B)
    qb = q.copy()
    qb[3:7] *= 2.0                      # the free joint's quaternion
    with pytest.raises(ValueError, match="quaternion"):
        solve_mass_matrix(model, qb, np.ones(nv))
    with pytest.raises(ValueError, match="quaternion"):
        mass_matrix_cholesky(model, qb)
    with pytest.raises(ValueError, match=r"q: expected shape"):
        mass_matrix_cholesky(model, q[:-1])
    fac = mass_matrix_cholesky(model, q)
    with pytest.raises(ValueError, match=r"b: expected shape"):
        fac.solve(np.ones((2, nv)))
    with pytest.raises(ValueError, match=r"b: contains NaN"):
        fac.solve(np.full(nv, np.nan))
    with pytest.raises(ValueError, match=r"Jc: expected shape"):
        fac.inverse_congruence(np.ones((2, nv + 1)))
    with pytest.raises(TypeError, match="b: expected real"):
        fac.solve(np.ones(nv, dtype=complex))
    # inputs are not modified, lists are accepted
    b = np.arange(nv, dtype=float)
    b0 = b.copy()
    fac.solve(b)
    solve_mass_matrix(model, list(q), list(b))
    np.testing.assert_array_equal(b, b0)


# --------------------------------------------------------------------------------------
# Pinocchio: H = U D U^T (U unit upper) is our factorization with U = L^T when the dofs agree
def _pin_pair(name):
    from linkdyn.models import ROBOTS as PATHS, example_robot_data_dir
    rel, floating = PATHS[name]
    path = str(example_robot_data_dir() / rel)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    model = ld.models.example_robot(name)
    perm = np.empty(model.nv, dtype=int)        # v_pin = v[perm]
    qmap = []
    for j in range(1, pm.njoints):
        jm, jname = pm.joints[j], pm.names[j]
        sl = model.v_slice(jname) if jname != "root_joint" else slice(0, 6)
        perm[jm.idx_v:jm.idx_v + jm.nv] = np.arange(sl.start, sl.stop)
        qsl = model.q_slice(jname) if jname != "root_joint" else slice(0, 7)
        qmap.append((qsl, jm.idx_q, jm.nq, jm.nv))
    return model, pm, perm, qmap


def _q_pin(pm, qmap, q):
    out = np.zeros(pm.nq)
    for sl, iq, nq, nv in qmap:
        if nq == 2 and nv == 1:                 # continuous joint: (cos, sin)
            out[iq], out[iq + 1] = np.cos(q[sl.start]), np.sin(q[sl.start])
        else:
            out[iq:iq + nq] = q[sl]
    return out


@needs_pin
@pytest.mark.parametrize("name", ROBOTS)
def test_against_pinocchio_cholesky(name):
    model, pm, perm, qmap = _pin_pair(name)
    pdata = pm.createData()
    rng = np.random.default_rng(8)
    q = random_q(model, rng)
    qp = _q_pin(pm, qmap, q)
    Hp = pin.crba(pm, pdata, qp)
    Hp = np.triu(Hp) + np.triu(Hp, 1).T
    H = ld.crba(model, q)
    assert _relerr(H[np.ix_(perm, perm)], Hp) <= 1e-9          # the same H, dof order aside
    pin.cholesky.decompose(pm, pdata)
    fac = mass_matrix_cholesky(model, q)
    b = rng.standard_normal(model.nv)
    xp = pin.cholesky.solve(pm, pdata, b[perm].copy())
    x = fac.solve(b)
    assert _relerr(x[perm], xp) <= 1e-9
    assert _relerr(solve_mass_matrix(model, q, b)[perm], xp) <= 1e-9
    # Minv by Pinocchio's ABA extension = our solve of the identity
    Minv = pin.computeMinverse(pm, pdata, qp)
    Minv = np.triu(Minv) + np.triu(Minv, 1).T
    assert _relerr(fac.solve(np.eye(model.nv))[np.ix_(perm, perm)], Minv) <= 1e-8
    # the same factorization: D and U = L^T (dof order mapped; D_kk depends only on the set of
    # k's descendants, so any depth-first order gives the same D, see the sibling-order test)
    L, D = fac.to_dense()
    assert _relerr(D[perm], np.asarray(pdata.D)) <= 1e-10
    assert_close(L.T[np.ix_(perm, perm)], np.asarray(pdata.U), 1e-10, "U = L^T")
    assert abs(fac.logdet() - np.log(np.asarray(pdata.D)).sum()) <= 1e-10 * max(1.0, abs(fac.logdet()))


@needs_pin
@pytest.mark.parametrize("name", ROBOTS)
def test_robot_dof_order_agrees_with_pinocchio(name):
    """Both libraries number these robots' dofs alike (so the comparison above is of the same
    matrix entry by entry, perm being the identity)."""
    model, pm, perm, qmap = _pin_pair(name)
    np.testing.assert_array_equal(perm, np.arange(model.nv))
