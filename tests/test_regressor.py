"""Linearity in the parameters, Y(q, q', q'') a = tau (seed 002 property 7, eq. 5.78), the base
parameters and their identification.

What is proved, and against what:
* Y @ inertial_parameters == RNEA on every random tree and real robot (RNEA is independent:
  it never forms Y), with the armature and friction columns when asked;
* Y and the parameter vector equal Pinocchio's ``computeJointTorqueRegressor`` and
  ``Inertia.toDynamicParameters`` (Panda, Talos floating, random twins of every joint kind);
* the base parameters reproduce the torques on fresh states, are independent, and for the
  planar 2-link arm are the three of seed 002 sec. 5.4 (phi_1, phi_2, phi_3);
* identification recovers the base parameters exactly from exact torques and within its
  standard errors from noisy ones.
"""
import functools
import inspect
import sys
from pathlib import Path

import numpy as np
import pytest

import linkdyn as ld
from linkdyn.dynamics.regressor import (BaseParameters, base_parameters, identify, inertial_parameters,
                                        joint_torque_regressor, n_parameters, parameter_names)

from conftest import ALL_MODELS, KINDS, assert_close, build_tree, get_model as get, make_twin, needs_pin, pin, random_state
from conftest import robot

TOL = 1e-10
ROOT = Path(__file__).resolve().parents[1]




def joint_vector(model, name):
    x = getattr(model, name, None)
    return np.zeros(model.nv) if x is None else np.asarray(x, dtype=float)


def joint_torques(model, v, a):
    """What RNEA adds per dof beyond the rigid bodies: armature a + damping v + friction sign(v)."""
    return joint_vector(model, "armature") * a + joint_vector(model, "damping") * v \
        + joint_vector(model, "friction") * np.sign(v)


_BUILDER_TAKES = set(inspect.signature(ld.ModelBuilder.add_body).parameters)


@functools.lru_cache(maxsize=None)
def rubbing_tree(seed=0, kinds=KINDS, floating=True, nbodies=7):
    """A random tree with armature and, where the builder takes them, viscous and Coulomb
    friction on every dof (without them the expected friction parameters are zero)."""
    rng = np.random.default_rng(seed)
    src = ld.models.random_tree(nbodies=nbodies, kinds=kinds, floating=floating, seed=seed)
    b = ld.ModelBuilder(f"rubbing{seed}")
    for i in range(1, src.nbody):
        n = int(src.jnt_nv[i])
        extra = {k: rng.uniform(0.05, 0.5, n) for k in ("damping", "friction") if k in _BUILDER_TAKES and n}
        b.add_body(src.body_names[i], src.body_names[src.parent[i]], src.joints[i],
                   placement=(src.R_tree[i], src.p_tree[i]), inertia=np.array(src.inertia[i]),
                   joint_name=src.joint_names[i - 1], armature=rng.uniform(0.0, 0.3, n) if n else None, **extra)
    return b.build()


# ------------------------------------------------------------------------------ vs RNEA
@pytest.mark.parametrize("kind, name", ALL_MODELS)
def test_regressor_times_parameters_is_rnea(kind, name):
    model = get(kind, name)
    rng = np.random.default_rng(0)
    pi = inertial_parameters(model)
    pi_all = inertial_parameters(model, with_joint_terms=True)
    assert pi.shape == (10 * (model.nbody - 1),) and pi_all.shape == (n_parameters(model, True),)
    for _ in range(3):
        q, v, a = random_state(model, rng)
        tau = ld.rnea(model, q, v, a)
        Y = joint_torque_regressor(model, q, v, a)
        assert Y.shape == (model.nv, 10 * (model.nbody - 1))
        assert_close(Y @ pi, tau - joint_torques(model, v, a), TOL, f"{name}: Y pi")
        Yj = joint_torque_regressor(model, q, v, a, with_joint_terms=True)
        assert np.array_equal(Yj[:, :Y.shape[1]], Y)
        assert_close(Yj @ pi_all, tau, TOL, f"{name}: Y pi with joint terms")


@pytest.mark.parametrize("seed, floating", [(0, True), (1, False)])
def test_joint_terms_with_armature_and_friction(seed, floating):
    """Armature, viscous (``model.damping``) and Coulomb (``model.friction``) columns a, v,
    sign(v) against RNEA on a model that has all three (where the builder takes them)."""
    model = rubbing_tree(seed, floating=floating)
    pi = inertial_parameters(model, with_joint_terms=True)
    nv, n0 = model.nv, 10 * (model.nbody - 1)
    assert_close(pi[n0:n0 + nv], model.armature, 0.0, "armature")
    assert_close(pi[n0 + nv:n0 + 2 * nv], joint_vector(model, "damping"), 0.0, "damping")
    assert_close(pi[n0 + 2 * nv:], joint_vector(model, "friction"), 0.0, "friction")
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q, v, a = random_state(model, rng)
        v[0] = 0.0                                       # sign(0) = 0: no Coulomb torque at rest
        Y = joint_torque_regressor(model, q, v, a, with_joint_terms=True)
        assert_close(Y[:, n0:n0 + nv], np.diag(a), 0.0, "armature columns")
        assert_close(Y[:, n0 + nv:n0 + 2 * nv], np.diag(v), 0.0, "viscous columns")
        assert_close(Y[:, n0 + 2 * nv:], np.diag(np.sign(v)), 0.0, "Coulomb columns")
        assert_close(Y @ pi, ld.rnea(model, q, v, a), TOL, "Y pi vs rnea")


def test_parameter_names():
    model = build_tree("mixed-floating-s3")
    names = parameter_names(model, True)
    assert len(names) == n_parameters(model, True) == len(set(names))
    assert names[:10] == tuple(f"{model.body_names[1]}.{p}" for p in
                               ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz"))
    n0 = 10 * (model.nbody - 1)
    assert names[n0] == f"{model.joint_names[0]}[0].armature"            # the free joint's first dof
    assert names[-1].endswith(".coulomb")


def test_inertial_parameters_are_the_body_inertias():
    """pi rebuilds each body's spatial inertia [[m 1, -m[c]x], [m[c]x, I_origin]]."""
    model = build_tree("branchy-25")
    pi = inertial_parameters(model).reshape(-1, 10)
    for i in range(1, model.nbody):
        m, h, (xx, xy, yy, xz, yz, zz) = pi[i - 1, 0], pi[i - 1, 1:4], pi[i - 1, 4:]
        H = np.array([[0, -h[2], h[1]], [h[2], 0, -h[0]], [-h[1], h[0], 0]])
        I6 = np.block([[m * np.eye(3), -H], [H, np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])]])
        assert_close(I6, model.inertia[i], 1e-15, f"body {i}")
        mass, com, Ic = ld.spatial.inertia_parameters(model.inertia[i])
        assert_close(h, mass * com, 1e-15, "m c")


# ------------------------------------------------------------------------------ Pinocchio
def _pin_pair(name):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_core import load_pair, to_pin_q
    model, pmodel = load_pair(name)
    return model, pmodel, (lambda q: to_pin_q(model, pmodel, q)[0])


@needs_pin
@pytest.mark.parametrize("name", ["panda", "talos"])
def test_regressor_vs_pinocchio_robots(name):
    model, pm, to_pin = _pin_pair(name)
    pd = pm.createData()
    assert model.joint_names == tuple(pm.names[1:])                 # same bodies, same order
    pp = np.concatenate([pm.inertias[j].toDynamicParameters() for j in range(1, pm.njoints)])
    assert_close(inertial_parameters(model), pp, 1e-12, "parameters vs toDynamicParameters")
    rng = np.random.default_rng(1)
    for _ in range(3):
        q = ld.random_configuration(model, rng)
        v, a = rng.standard_normal((2, model.nv))
        Yp = pin.computeJointTorqueRegressor(pm, pd, to_pin(q), v, a)
        assert_close(joint_torque_regressor(model, q, v, a), Yp, 1e-9, f"{name}: Y vs Pinocchio")


@needs_pin
@pytest.mark.parametrize("seed, floating", [(0, False), (2, True), (4, True)])
def test_regressor_vs_pinocchio_twins(seed, floating):
    """Every joint kind (composite universal/cylindrical in Pinocchio), fixed joints merged by
    each library, bodies in a different order: rows map by v, 10-column blocks by joint name."""
    tw = make_twin(seed=seed, nbodies=10, floating=floating)
    m, pm = tw.ld, tw.pin
    cols = np.concatenate([10 * (m.joint_id(pm.names[j]) - 1) + np.arange(10) for j in range(1, pm.njoints)])
    pp = np.concatenate([pm.inertias[j].toDynamicParameters() for j in range(1, pm.njoints)])
    assert_close(inertial_parameters(m)[cols], pp, 1e-12, "parameters")
    q, v, a = random_state(m, np.random.default_rng(seed))
    Yp = pin.computeJointTorqueRegressor(pm, tw.data, tw.q_pin(q), tw.v_pin(v), tw.v_pin(a))
    Y = joint_torque_regressor(m, q, v, a)
    assert_close(Y[tw.perm][:, cols], Yp, 1e-9, "Y vs Pinocchio")


# ------------------------------------------------------------------------------ base parameters
BASE_CASES = [(kind, name, jt) for kind, name in [("robot", "puma560"), ("robot", "stanford"), ("robot", "panda"),
                                                  ("tree", "mixed-fixed-s0"), ("tree", "mixed-floating-s4"),
                                                  ("tree", "chain4-planar")] for jt in (False, True)] \
    + [("robot", "talos", False)]


@functools.lru_cache(maxsize=None)
def base_of(kind, name, jt):
    return base_parameters(get(kind, name), with_joint_terms=jt)


@pytest.mark.parametrize("kind, name, jt", BASE_CASES)
def test_base_parameters_reproduce_the_torques(kind, name, jt):
    model = get(kind, name)
    bp = base_of(kind, name, jt)
    p = n_parameters(model, jt)
    assert isinstance(bp, BaseParameters) and 0 < bp.nbase < p
    assert bp.E.shape == (bp.nbase, p)
    assert np.array_equal(np.sort(np.concatenate([bp.index, bp.dependent])), np.arange(p))
    assert_close(bp.E[:, bp.index], np.eye(bp.nbase), 0.0, "E on the independent columns")
    assert bp.gap > 1e6, f"unclear rank: gap {bp.gap:.2e}"
    pi = inertial_parameters(model, jt)
    beta = bp.beta(pi)
    rng = np.random.default_rng(123)                   # states the QR never saw
    Ys = []
    for _ in range(max(3, 2 * bp.nbase // model.nv)):
        q, v, a = random_state(model, rng)
        Y = joint_torque_regressor(model, q, v, a, jt)
        tau = ld.rnea(model, q, v, a) - (0 if jt else joint_torques(model, v, a))
        assert_close(bp.regressor(Y) @ beta, tau, TOL, f"{name}: Y_base beta")
        assert_close(Y[:, bp.dependent], Y[:, bp.index] @ bp.E[:, bp.dependent], 1e-9, "dependent columns")
        Ys.append(bp.regressor(Y))
    s = np.linalg.svd(np.concatenate(Ys), compute_uv=False)
    assert s[-1] > 1e-8 * s[0], "the base regressor has dependent columns"


def test_planar_2link_base_parameters_are_seed_phi():
    """Seed 002 sec. 5.4: three inertial parameters phi_1 = m1 l1^2 + m2 a1^2 + J1,
    phi_2 = m2 l2^2 + J2, phi_3 = m2 a1 l2 determine the torques of the planar 2-link arm, with
    the regressor after eq. 5.96, for link 2's centre of mass on the line of the link (as the
    seed assumes).  The QR finds 4: m2 c_y of link 2 as well, which that assumption sets to 0;
    the other three span the seed's and give the same torques."""
    L1, L2, m1, m2 = 0.8, 0.6, 1.3, 0.9
    model = ld.models.planar_2link(L1, L2, m1, m2)
    bp = base_parameters(model)
    assert bp.nbase == 4
    off_line = [k for k in range(4) if bp.names[bp.index[k]] == "body2.mcy"]
    assert len(off_line) == 1 and bp.E[off_line[0], bp.index[off_line[0]]] == 1.0
    assert bp.beta(inertial_parameters(model))[off_line[0]] == 0.0
    on_line = [k for k in range(4) if k != off_line[0]]
    # with joint terms: + the armature of joint 2 (joint 1's joins phi_1), viscous and Coulomb
    assert base_parameters(model, with_joint_terms=True).nbase == 4 + 1 + 2 + 2
    l1, l2 = L1 / 2, L2 / 2
    phi = np.array([m1 * l1 ** 2 + m2 * L1 ** 2 + m1 * L1 ** 2 / 12, m2 * l2 ** 2 + m2 * L2 ** 2 / 12, m2 * L1 * l2])
    rng = np.random.default_rng(5)
    Ys, Yo = [], []
    for _ in range(10):
        q, v, a = rng.uniform(-3, 3, 2), rng.standard_normal(2), rng.standard_normal(2)
        c2, s2 = np.cos(q[1]), np.sin(q[1])
        Yseed = np.array([[a[0], a[0] + a[1], c2 * (2 * a[0] + a[1]) - s2 * v[1] * (2 * v[0] + v[1])],
                          [0.0, a[0] + a[1], c2 * a[0] + s2 * v[0] ** 2]])
        tau = ld.rnea(model, q, v, a) - joint_torques(model, v, a)
        assert_close(Yseed @ phi, tau, 1e-12, "seed regressor")
        Yb = bp.regressor(joint_torque_regressor(model, q, v, a))
        assert_close(Yb @ bp.beta(inertial_parameters(model)), tau, 1e-12, "base regressor")
        Ys.append(Yseed)
        Yo.append(Yb[:, on_line])
    Ys, Yo = np.concatenate(Ys), np.concatenate(Yo)
    assert np.linalg.matrix_rank(Ys) == np.linalg.matrix_rank(Yo) == 3
    assert np.linalg.matrix_rank(np.concatenate([Ys, Yo], axis=1), tol=1e-9) == 3   # the same column space


def test_base_parameters_bad_input():
    model = robot("puma560")
    with pytest.raises(ValueError, match=r"^n_samples: 2 states"):
        base_parameters(model, n_samples=2)
    with pytest.raises(ValueError, match=r"^rtol"):
        base_parameters(model, rtol=0.0)
    with pytest.raises(TypeError, match=r"^with_joint_terms"):
        base_parameters(model, with_joint_terms="yes")


# ------------------------------------------------------------------------------ identification
def exciting_trajectory(model, n, seed, dt=0.01, harmonics=4):
    """q(t) = q0 + sum_k a_k sin(k w t) + b_k cos(k w t) per coordinate, with its derivatives."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) * dt
    w = 2 * np.pi / (n * dt)
    A, B = rng.uniform(-0.4, 0.4, (2, harmonics, model.nv)) / np.arange(1, harmonics + 1)[:, None]
    k = np.arange(1, harmonics + 1)[:, None] * w
    s, c = np.sin(k[None] * t[:, None, None]), np.cos(k[None] * t[:, None, None])   # (n, h, 1)
    q = np.einsum("thj,hj->tj", s, A) + np.einsum("thj,hj->tj", c, B) + rng.uniform(-1, 1, model.nv)
    v = np.einsum("thj,hj->tj", c * k, A) - np.einsum("thj,hj->tj", s * k, B)
    a = -np.einsum("thj,hj->tj", s * k ** 2, A) - np.einsum("thj,hj->tj", c * k ** 2, B)
    return q, v, a


def test_identify_exact_torques_give_exact_parameters():
    model = robot("puma560")
    bp = base_of("robot", "puma560", True)
    Q, V, A = exciting_trajectory(model, 400, seed=0)
    TAU = ld.rnea(model, Q, V, A)
    res = identify(model, Q, V, A, TAU, base=bp)
    beta = bp.beta(inertial_parameters(model, True))
    assert_close(res.beta, beta, 1e-7, "beta from exact torques")
    assert res.residual.shape == (400, model.nv) and np.abs(res.residual).max() < 1e-9
    assert res.condition < 1e8


@pytest.mark.parametrize("weights", [None, "joint", "array"])
def test_identify_noisy_torques_within_standard_errors(weights):
    model = robot("puma560")
    bp = base_of("robot", "puma560", True)
    Q, V, A = exciting_trajectory(model, 3000, seed=1)
    rng = np.random.default_rng(2)
    sigma = np.array([0.5, 0.5, 0.2, 0.02, 0.02, 0.02])              # per-joint noise, N m
    TAU = ld.rnea(model, Q, V, A) + sigma * rng.standard_normal((3000, model.nv))
    w = 1 / sigma ** 2 if weights == "array" else weights
    res = identify(model, Q, V, A, TAU, base=bp, weights=w)
    beta = bp.beta(inertial_parameters(model, True))
    z = (res.beta - beta) / res.std
    assert np.all(np.isfinite(z)) and np.abs(z).max() < 4.5, f"worst |z| = {np.abs(z).max():.2f}"
    if weights is not None:
        # weighted by the inverse noise variances (given, or estimated per joint): sigma^2 ~ 1
        # and each joint's residual recovers its noise level
        assert 0.95 < res.sigma2 < 1.05
        assert_close(res.residual.std(axis=0) / sigma, np.ones(model.nv), 0.05, "residual std")


def test_identify_rejects_a_trajectory_that_excites_nothing():
    model = robot("puma560")
    bp = base_of("robot", "puma560", False)
    Q = np.tile(ld.neutral(model), (50, 1))
    Z = np.zeros((50, model.nv))
    with pytest.raises(ValueError, match="does not excite"):
        identify(model, Q, Z, Z, ld.rnea(model, Q, Z, Z), base=bp)


def test_identify_bad_input():
    model = robot("puma560")
    bp = base_of("robot", "puma560", False)
    Q, V, A = exciting_trajectory(model, 50, seed=3)
    TAU = ld.rnea(model, Q, V, A)
    with pytest.raises(ValueError, match=r"^tau: stack of 49 states, but another argument has 50"):
        identify(model, Q, V, A, TAU[:-1], base=bp)
    bad = TAU.copy()
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match=r"^TAU: contains NaN"):
        identify(model, Q, V, A, bad, base=bp)
    with pytest.raises(ValueError, match=r"^weights: expected shape"):
        identify(model, Q, V, A, TAU, base=bp, weights=np.ones(3))
    with pytest.raises(ValueError, match=r"^weights: must be finite"):
        identify(model, Q, V, A, TAU, base=bp, weights=-np.ones(model.nv))
    with pytest.raises(ValueError, match=r"with_joint_terms=True but base"):
        identify(model, Q, V, A, TAU, base=bp, with_joint_terms=True)
    with pytest.raises(ValueError, match=r"^base: computed for another model"):
        identify(robot("stanford"), Q, V, A, TAU, base=bp)


# ------------------------------------------------------------------------------ batches and input
@pytest.mark.parametrize("name", ["mixed-floating-s4", "chain4-universal"])
def test_batched_equals_single(name):
    model = build_tree(name)
    rng = np.random.default_rng(4)
    states = [random_state(model, rng) for _ in range(6)]
    Q, V, A = (np.stack([s[k] for s in states]) for k in range(3))
    for jt in (False, True):
        Y = joint_torque_regressor(model, Q, V, A, with_joint_terms=jt)
        assert Y.shape == (6, model.nv, n_parameters(model, jt))
        for k, (q, v, a) in enumerate(states):
            assert np.array_equal(Y[k], joint_torque_regressor(model, q, v, a, with_joint_terms=jt))
    # one state shared by a stack of accelerations
    Ys = joint_torque_regressor(model, Q[0], V[0], A)
    assert np.array_equal(Ys[4], joint_torque_regressor(model, Q[0], V[0], A[4]))


def test_bad_input_names_the_argument():
    model = build_tree("chain4-free")
    q, v, a = random_state(model, np.random.default_rng(5))
    with pytest.raises(ValueError, match=r"^a: expected shape"):
        joint_torque_regressor(model, q, v, a[:-1])
    bad = a.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError, match=r"^a: contains NaN"):
        joint_torque_regressor(model, q, v, bad)
    with pytest.raises(ValueError, match=r"^v: contains NaN"):
        joint_torque_regressor(model, q, bad, a)
    with pytest.raises(ValueError, match="quaternion"):
        joint_torque_regressor(model, q * 1.1, v, a)
    with pytest.raises(TypeError, match=r"^with_joint_terms"):
        joint_torque_regressor(model, q, v, a, with_joint_terms=1)
    with pytest.raises(TypeError, match=r"^with_joint_terms"):
        inertial_parameters(model, with_joint_terms=None)


def test_example_runs():
    """examples/identify_arm.py, shortened: it identifies the PUMA 560 within its error bars."""
    sys.path.insert(0, str(ROOT / "examples"))
    import identify_arm
    out = identify_arm.main(["--duration", "4", "--quiet"])
    assert out["max_abs_z"] < 5.0
    assert out["validation_rms"] < 3 * out["noise_rms"]
