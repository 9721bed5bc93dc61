"""Lagrange's form D q'' + C q' + G = tau (seed 002 eqs. 5.60-5.77): the Coriolis matrix, the
derivative of the mass matrix, and their properties.

What is proved, and against what:
* C v = b(q, v) - g(q) (RNEA) and D q'' + C q' + G (+ friction) = RNEA, to round-off;
* D' - 2C is skew-symmetric (eq. 5.66) with D' from finite differences of CRBA along
  ``integrate`` (Richardson-extrapolated central differences, ~1e-11 accurate), so that
  neither side is computed from the other; ``mass_matrix_derivative`` against the same;
* C is the Christoffel form (eqs. 5.64-5.65), with the symbols built from finite-difference
  derivatives of D, wherever v = q' (and is not, and cannot be, for quaternion, planar, free
  joints, whose velocities are body-frame quasi-velocities);
* the closed form of the planar 2-link arm (eqs. 5.87, 5.95);
* Pinocchio's ``computeCoriolisMatrix`` on Panda, Talos (floating) and random twins, except
  where Pinocchio 4.1 is wrong (joints whose motion subspace depends on q).
"""

import numpy as np
import pytest

import linkdyn as ld
from linkdyn.dynamics.lagrange import (LagrangianTerms, coriolis_matrix, joint_friction, lagrangian_terms,
                                       mass_matrix_derivative)
from linkdyn.model import joints as J

from conftest import ALL_MODELS, TREES, assert_close, build_tree, get_model as get, make_twin, needs_pin, pin, random_state

TOL = 1e-10
HOLONOMIC = (J.REVOLUTE, J.PRISMATIC, J.CYLINDRICAL, J.UNIVERSAL, J.SPHERICAL_ZYX)   # v = q'




def richardson(f, h=1e-3):
    """d/dt f(t) at 0: central differences at h and h/2, Richardson-extrapolated (error O(h^4))."""
    d1 = (np.asarray(f(h)) - np.asarray(f(-h))) / (2 * h)
    d2 = (np.asarray(f(h / 2)) - np.asarray(f(-h / 2))) / h
    return (4 * d2 - d1) / 3


def mdot_fd(model, q, v):
    """dD/dt along integrate(q, v t), by finite differences of CRBA."""
    return richardson(lambda t: ld.crba(model, ld.integrate(model, q, v, t)))


def is_holonomic(model):
    return all(k in HOLONOMIC for k in model.jnt_type[1:])


def b_minus_g(model, q, v):
    """C v by RNEA: the velocity terms, without the joint friction."""
    return ld.nonlinear_effects(model, q, v) - ld.generalized_gravity(model, q) - joint_friction(model, v)


# ------------------------------------------------------------------------------ vs RNEA
@pytest.mark.parametrize("kind, name", ALL_MODELS)
def test_coriolis_times_v_is_b_minus_g(kind, name):
    model = get(kind, name)
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, v, _ = random_state(model, rng)
        C = coriolis_matrix(model, q, v)
        assert C.shape == (model.nv, model.nv)
        assert_close(C @ v, b_minus_g(model, q, v), TOL, f"{name}: C v vs b - g")


@pytest.mark.parametrize("kind, name", ALL_MODELS)
def test_lagrange_form_reproduces_rnea(kind, name):
    """D q'' + C q' + G + F = RNEA(q, q', q'') (seed 002 eq. 5.60, friction eq. 5.94)."""
    model = get(kind, name)
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, v, a = random_state(model, rng)
        t = lagrangian_terms(model, q, v)
        assert isinstance(t, LagrangianTerms)
        assert_close(t.D, ld.crba(model, q), 0.0, "D is crba")
        assert_close(t.G, ld.generalized_gravity(model, q), 0.0, "G")
        assert_close(t.D @ a + t.C @ v + t.G + t.F, ld.rnea(model, q, v, a), TOL, f"{name}: D a + C v + G + F")


def test_friction_enters_as_F():
    """A model with viscous and Coulomb friction: F = d v + f sign(v), and RNEA is still
    reproduced (once RNEA applies them; F is zero for models that have none)."""
    b = ld.ModelBuilder("rubbing")
    kw = dict(damping=[0.7], friction=[0.3])
    b.add_body("a", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0, [0.1, 0, 0], np.eye(3) * 0.1), **kw)
    b.add_body("b", "a", ld.Revolute("y"), placement=[0.3, 0, 0],
               inertia=ld.Inertia(0.5, [0.1, 0, 0], np.eye(3) * 0.02), damping=[0.2], friction=[0.1])
    model = b.build()
    q, v, a = np.array([0.3, -0.4]), np.array([1.5, -2.0]), np.array([0.2, 0.1])
    t = lagrangian_terms(model, q, v)
    assert_close(t.F, np.array([0.7 * 1.5 + 0.3, 0.2 * -2.0 - 0.1]), 1e-15, "F")
    assert_close(t.D @ a + t.C @ v + t.G + t.F, ld.rnea(model, q, v, a), TOL, "with friction")


# ------------------------------------------------------------------------------ D' and skew symmetry
@pytest.mark.parametrize("kind, name", ALL_MODELS)
def test_skew_symmetry_of_mdot_minus_2c(kind, name):
    """S = D' - 2C is skew-symmetric (seed 002 eqs. 5.66-5.71, property 5), with D' by finite
    differences of CRBA: neither side derived from the other."""
    model = get(kind, name)
    rng = np.random.default_rng(2)
    for _ in range(2):
        q, v, _ = random_state(model, rng)
        K = mdot_fd(model, q, v) - 2 * coriolis_matrix(model, q, v)
        scale = max(1.0, np.abs(K).max())
        assert np.abs(K + K.T).max() <= TOL * scale, f"{name}: |K + K^T| = {np.abs(K + K.T).max():.2e}"
        x = rng.standard_normal(model.nv)
        assert abs(x @ K @ x) <= TOL * scale * (x @ x)             # eq. 5.77, second form


@pytest.mark.parametrize("kind, name", ALL_MODELS)
def test_mass_matrix_derivative_against_finite_differences(kind, name):
    model = get(kind, name)
    rng = np.random.default_rng(3)
    for _ in range(2):
        q, v, _ = random_state(model, rng)
        Md = mass_matrix_derivative(model, q, v)
        assert_close(Md, mdot_fd(model, q, v), TOL, f"{name}: D' vs finite differences")


def test_finite_differences_are_accurate_enough_to_fail():
    """The reference D' distinguishes a wrong C: dropping the S' term of a universal joint
    (what Pinocchio does) is caught by the skew test at its tolerance."""
    model = build_tree("chain4-universal")
    q, v, _ = random_state(model, np.random.default_rng(0))
    Md = mdot_fd(model, q, v)
    C = coriolis_matrix(model, q, v)
    assert np.abs(Md - C - C.T).max() <= TOL * max(1.0, np.abs(Md).max())
    assert np.abs(Md - C - C.T - np.diag(np.full(model.nv, 1e-8))).max() > TOL * max(1.0, np.abs(Md).max())


# ------------------------------------------------------------------------------ Christoffel form
HOLONOMIC_MODELS = [("tree", n) for n in TREES if is_holonomic(build_tree(n)) and build_tree(n).nv] + \
                   [("robot", n) for n in ("puma560", "stanford", "panda")]


def christoffel_coriolis(model, q, v):
    """C_kj = sum_i C_ijk v_i with C_ijk = (d_kj,i + d_ki,j - d_ij,k) / 2 (seed 002 eqs.
    5.64-5.65), the partial derivatives of D by finite differences (v = q' here)."""
    n = model.nv
    dD = np.stack([richardson(lambda t, e=e: ld.crba(model, q + t * e)) for e in np.eye(n)])   # dD[i] = dD/dq_i
    Gam = 0.5 * (np.einsum("ikj->ijk", dD) + np.einsum("jki->ijk", dD) - np.einsum("kij->ijk", dD))
    return np.einsum("ijk,i->kj", Gam, v)


@pytest.mark.parametrize("kind, name", HOLONOMIC_MODELS)
def test_coriolis_is_the_christoffel_form(kind, name):
    model = get(kind, name)
    assert model.nq == model.nv
    rng = np.random.default_rng(4)
    q, v, _ = random_state(model, rng)
    C = coriolis_matrix(model, q, v)
    assert_close(C, christoffel_coriolis(model, q, v), 1e-9, f"{name}: C vs Christoffel symbols")
    # property 4 (eq. 5.75): C(q, x) y = C(q, y) x, to round-off
    x, y = rng.standard_normal((2, model.nv))
    assert_close(coriolis_matrix(model, q, x) @ y, coriolis_matrix(model, q, y) @ x, 1e-12, "C(x) y = C(y) x")


@pytest.mark.parametrize("name", ["chain4-spherical", "chain4-planar", "chain4-free", "mixed-floating-s3"])
def test_quasi_velocities_have_no_christoffel_form(name):
    """With body-frame velocities (quaternion, planar, free joints) v != q', and C(x) y != C(y) x:
    the bracket terms of the Boltzmann-Hamel equations.  C still gives C v = b - g and the
    skew property (tested above), so nothing that can be symmetric in (x, y) could."""
    model = build_tree(name)
    rng = np.random.default_rng(5)
    q, _, _ = random_state(model, rng)
    x, y = rng.standard_normal((2, model.nv))
    gap = np.abs(coriolis_matrix(model, q, x) @ y - coriolis_matrix(model, q, y) @ x).max()
    assert gap > 1e-3


@pytest.mark.parametrize("kind, name", ALL_MODELS[::3])
def test_coriolis_is_linear_in_v(kind, name):
    """Property 4, eq. 5.76: C(q, x + a y) = C(q, x) + a C(q, y); and C(q, 0) = 0."""
    model = get(kind, name)
    rng = np.random.default_rng(6)
    q, x, y = random_state(model, rng)
    Cx, Cy = coriolis_matrix(model, q, x), coriolis_matrix(model, q, y)
    assert_close(coriolis_matrix(model, q, x - 2.5 * y), Cx - 2.5 * Cy, 1e-12, "linearity")
    assert np.abs(coriolis_matrix(model, q, np.zeros(model.nv))).max() == 0.0


def test_planar_2link_closed_form():
    """Seed 002 sec. 5.4: D of eq. 5.87 and the skew-symmetric C of eq. 5.95,
    C = -m2 a1 l2 s2 [[q2', q1' + q2'], [-q1', 0]]."""
    L1, L2, m1, m2 = 0.8, 0.6, 1.3, 0.9
    model = ld.models.planar_2link(L1, L2, m1, m2)
    l1, l2, J1, J2 = L1 / 2, L2 / 2, m1 * L1 ** 2 / 12, m2 * L2 ** 2 / 12
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, v = rng.uniform(-3, 3, 2), rng.standard_normal(2)
        c2, s2 = np.cos(q[1]), np.sin(q[1])
        D = np.array([[m1 * l1 ** 2 + J1 + m2 * (L1 ** 2 + l2 ** 2) + J2 + 2 * m2 * L1 * l2 * c2,
                       J2 + m2 * l2 ** 2 + m2 * L1 * l2 * c2],
                      [J2 + m2 * l2 ** 2 + m2 * L1 * l2 * c2, J2 + m2 * l2 ** 2]])
        C = -m2 * L1 * l2 * s2 * np.array([[v[1], v[0] + v[1]], [-v[0], 0.0]])
        t = lagrangian_terms(model, q, v)
        assert_close(t.D, D, 1e-13, "D, eq. 5.87")
        assert_close(t.C, C, 1e-13, "C, eq. 5.95")
        assert_close(t.G, np.zeros(2), 1e-13, "G = 0 in the horizontal plane")


# ------------------------------------------------------------------------------ Pinocchio
def _pin_pair(name):
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_core import load_pair, to_pin_q
    model, pmodel = load_pair(name)
    return model, pmodel, (lambda q: to_pin_q(model, pmodel, q)[0])


@needs_pin
@pytest.mark.parametrize("name", ["panda", "talos"])
def test_coriolis_vs_pinocchio_robots(name):
    model, pm, to_pin = _pin_pair(name)
    pd = pm.createData()
    rng = np.random.default_rng(8)
    for _ in range(3):
        q = ld.random_configuration(model, rng)
        v = rng.standard_normal(model.nv)
        Cp = pin.computeCoriolisMatrix(pm, pd, to_pin(q), v)
        assert_close(coriolis_matrix(model, q, v), Cp, 1e-9, f"{name}: C vs Pinocchio")


CONSTANT_S = ("revolute", "prismatic", "cylindrical", "spherical", "planar", "free", "fixed")


@needs_pin
@pytest.mark.parametrize("seed, floating", [(0, False), (1, True), (2, True)])
def test_coriolis_vs_pinocchio_twins(seed, floating):
    """Random twins with every joint kind whose motion subspace is constant in the body frame."""
    tw = make_twin(seed=seed, nbodies=10, kinds=CONSTANT_S, floating=floating)
    rng = np.random.default_rng(seed)
    q, v, _ = random_state(tw.ld, rng)
    Cp = pin.computeCoriolisMatrix(tw.pin, tw.data, tw.q_pin(q), tw.v_pin(v))
    assert_close(coriolis_matrix(tw.ld, q, v), tw.M_ld(Cp), 1e-9, "C vs Pinocchio")


@needs_pin
@pytest.mark.parametrize("kind", ["universal", "spherical_zyx"])
def test_pinocchio_coriolis_misses_the_motion_subspace_derivative(kind):
    """Pinocchio 4.1's computeCoriolisMatrix takes J' = v_i x J (no S'), so for joints whose S
    depends on q its C v is not b - g; ours is.  If a Pinocchio release fixes this, this test
    fails: then compare these joints in test_coriolis_vs_pinocchio_twins as well."""
    tw = make_twin(seed=3, nbodies=4, kinds=(kind,), branching=0.0, floating=True)
    q, v, _ = random_state(tw.ld, np.random.default_rng(9))
    qp, vp = tw.q_pin(q), tw.v_pin(v)
    Cp = pin.computeCoriolisMatrix(tw.pin, tw.data, qp, vp)
    bp = pin.nonLinearEffects(tw.pin, tw.data, qp, vp) - pin.computeGeneralizedGravity(tw.pin, tw.data, qp)
    assert np.abs(Cp @ vp - bp).max() > 1e-3 * np.abs(bp).max()
    assert_close(coriolis_matrix(tw.ld, q, v) @ v, tw.v_ld(bp), 1e-10, "ours: C v = b - g (Pinocchio's b)")


# ------------------------------------------------------------------------------ batches and input
@pytest.mark.parametrize("name", ["mixed-floating-s4", "chain4-spherical_zyx"])
def test_batched_equals_single(name):
    model = build_tree(name)
    rng = np.random.default_rng(10)
    states = [random_state(model, rng) for _ in range(7)]
    Q = np.stack([s[0] for s in states])
    V = np.stack([s[1] for s in states])
    C, Md = coriolis_matrix(model, Q, V), mass_matrix_derivative(model, Q, V)
    t = lagrangian_terms(model, Q, V)
    assert C.shape == Md.shape == t.D.shape == t.C.shape == (7, model.nv, model.nv)
    assert t.G.shape == t.F.shape == (7, model.nv)
    for k, (q, v, _) in enumerate(states):
        assert np.array_equal(C[k], coriolis_matrix(model, q, v))
        assert np.array_equal(Md[k], mass_matrix_derivative(model, q, v))
        tk = lagrangian_terms(model, q, v)
        for a, b in zip(t, tk):
            assert_close(a[k], b, 1e-15, "lagrangian_terms")
    # one configuration shared by a stack of velocities
    t1 = lagrangian_terms(model, Q[0], V)
    assert t1.D.shape == (7, model.nv, model.nv)
    assert_close(t1.C[3], coriolis_matrix(model, Q[0], V[3]), 1e-15, "shared q")
    assert_close(t1.D[3], ld.crba(model, Q[0]), 1e-15, "shared q: D")


def test_bad_input_names_the_argument():
    model = build_tree("chain4-spherical")
    q, v, _ = random_state(model, np.random.default_rng(11))
    with pytest.raises(ValueError, match=r"^q: expected shape"):
        coriolis_matrix(model, q[:-1], v)
    with pytest.raises(ValueError, match=r"^v: expected shape"):
        mass_matrix_derivative(model, q, np.zeros(model.nv + 1))
    bad = v.copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match=r"^v: contains NaN"):
        coriolis_matrix(model, q, bad)
    with pytest.raises(ValueError, match="quaternion"):
        coriolis_matrix(model, 2 * q, v)
    with pytest.raises(ValueError, match=r"state 1 of the stack: v: contains NaN"):
        coriolis_matrix(model, np.stack([q, q]), np.stack([v, bad]))
    with pytest.raises(ValueError, match=r"^v: stack of 3 states, but another argument has 2"):
        lagrangian_terms(model, np.stack([q, q]), np.stack([v, v, v]))
    with pytest.raises(TypeError, match=r"^q: expected real numbers"):
        coriolis_matrix(model, ["a"] * model.nq, v)
