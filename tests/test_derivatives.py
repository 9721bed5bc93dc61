"""Analytical derivatives of RNEA and ABA (Carpentier and Mansard 2018) against

* central finite differences on the manifold (q moved by ``integrate``) on random trees of every
  joint kind, fixed and floating, with armature, damping, Coulomb friction and external forces;
* Pinocchio's computeRNEADerivatives / computeABADerivatives on real robots (fixed and floating);
* Pinocchio's rnea and aba (central differences) on random trees built in both libraries, every
  joint kind, where Pinocchio's own analytical derivatives are not exact (joints whose S depends on q);
* each other: dq''/dq = -M^-1 dtau/dq at q'' = ABA(q, v, tau), M = CRBA, M^-1 M = 1;
* themselves per state: a stack gives what its states give one by one.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import linkdyn as ld
from linkdyn.model import joints as J
from conftest import TREES, build_tree, fd, random_state
from linkdyn.model.io.urdf import URDFWarning

RTOL_FD = 1e-6          # central differences, h = 1e-6 (relative to the largest entry, at least 1)
RTOL = 1e-9             # analytical against analytical


def rel_err(got, want):
    return float(np.max(np.abs(got - want))) / max(1.0, float(np.max(np.abs(want))))


def fd_jacobians(f, model, q, v):
    """(df/dq, df/dv) by central differences: q moved along integrate(q, e_k t)."""
    eye = np.eye(model.nv)
    dq = np.stack([fd(lambda qq: f(qq, v), model, q, eye[k]) for k in range(model.nv)], axis=1)
    h = 1e-6
    dv = np.stack([(f(q, v + h * eye[k]) - f(q, v - h * eye[k])) / (2 * h) for k in range(model.nv)], axis=1)
    return dq, dv


# the trees of conftest, plus ones whose joints carry armature, damping and Coulomb friction
DERIV_TREES = list(TREES) + ["terms-fixed", "terms-floating"]


@functools.lru_cache(maxsize=None)
def deriv_tree(name):
    if name == "terms-fixed":
        return ld.models.random_tree(10, seed=21, branching=0.5, joint_terms=True)
    if name == "terms-floating":
        return ld.models.random_tree(12, floating=True, seed=22, branching=0.6, joint_terms=True)
    return build_tree(name)


def random_fext(model, rng):
    F = rng.standard_normal((model.nbody, 6))
    F[0] = 0.0
    return F


# ---------------------------------------------------------------- finite differences
@pytest.mark.parametrize("name", DERIV_TREES)
def test_rnea_derivatives_fd(name):
    model = deriv_tree(name)
    rng = np.random.default_rng(3)
    q, v, a = random_state(model, rng)
    F = random_fext(model, rng)
    for fext in (None, F):
        dq, dv, M = ld.rnea_derivatives(model, q, v, a, fext)
        assert dq.shape == dv.shape == M.shape == (model.nv, model.nv)
        want_q, want_v = fd_jacobians(lambda qq, vv: ld.rnea(model, qq, vv, a, fext), model, q, v)
        assert rel_err(dq, want_q) < RTOL_FD, "dtau/dq"
        assert rel_err(dv, want_v) < RTOL_FD, "dtau/dv"
        assert rel_err(M, ld.crba(model, q)) < RTOL, "M"
        # dtau/da = M exactly: tau is affine in a
        h = 1.0
        da = np.stack([ld.rnea(model, q, v, a + h * e, fext) - ld.rnea(model, q, v, a, fext) for e in np.eye(model.nv)], 1)
        assert rel_err(M, da) < 1e-9


@pytest.mark.parametrize("name", DERIV_TREES)
def test_aba_derivatives_fd(name):
    model = deriv_tree(name)
    rng = np.random.default_rng(4)
    q, v, _ = random_state(model, rng)
    tau = rng.standard_normal(model.nv)
    F = random_fext(model, rng)
    for fext in (None, F):
        dq, dv, Minv = ld.aba_derivatives(model, q, v, tau, fext)
        want_q, want_v = fd_jacobians(lambda qq, vv: ld.aba(model, qq, vv, tau, fext), model, q, v)
        assert rel_err(dq, want_q) < RTOL_FD, "dqdd/dq"
        assert rel_err(dv, want_v) < RTOL_FD, "dqdd/dv"
        assert rel_err(Minv @ ld.crba(model, q), np.eye(model.nv)) < 1e-9, "Minv"
        assert rel_err(Minv, Minv.T) < 1e-12


def test_damping_and_friction_terms():
    """Viscous damping is on the diagonal of dtau/dv, armature on that of M; Coulomb friction
    (piecewise constant in v) changes neither, also at v = 0 exactly."""
    model = deriv_tree("terms-fixed")
    rng = np.random.default_rng(5)
    q, v, a = random_state(model, rng)
    bare = ld.models.random_tree(10, seed=21, branching=0.5)        # the same tree without the terms
    dq0, dv0, M0 = ld.rnea_derivatives(bare, q, v, a)
    dq, dv, M = ld.rnea_derivatives(model, q, v, a)
    np.testing.assert_allclose(dq, dq0, rtol=0, atol=1e-10)
    np.testing.assert_allclose(dv - dv0, np.diag(model.damping), rtol=0, atol=1e-10)
    np.testing.assert_allclose(M - M0, np.diag(model.armature), rtol=0, atol=1e-10)
    dqz, dvz, _ = ld.rnea_derivatives(model, q, np.zeros(model.nv), a)
    dqz0, dvz0, _ = ld.rnea_derivatives(bare, q, np.zeros(model.nv), a)
    np.testing.assert_allclose(dvz - dvz0, np.diag(model.damping), rtol=0, atol=1e-10)
    np.testing.assert_allclose(dqz, dqz0, rtol=0, atol=1e-10)


# ---------------------------------------------------------------- ABA against RNEA
@pytest.mark.parametrize("name", ["mixed-floating-s4", "terms-floating", "branchy-25"])
def test_aba_vs_rnea_derivatives(name):
    model = deriv_tree(name)
    rng = np.random.default_rng(6)
    q, v, _ = random_state(model, rng)
    tau = rng.standard_normal(model.nv)
    F = random_fext(model, rng)
    qdd = ld.aba(model, q, v, tau, F)
    tq, tv, M = ld.rnea_derivatives(model, q, v, qdd, F)
    aq, av, Minv = ld.aba_derivatives(model, q, v, tau, F)
    np.testing.assert_allclose(Minv, np.linalg.inv(M), rtol=0, atol=1e-9 * np.abs(Minv).max())
    np.testing.assert_allclose(M @ aq, -tq, rtol=0, atol=1e-9 * max(1.0, np.abs(tq).max()))
    np.testing.assert_allclose(M @ av, -tv, rtol=0, atol=1e-9 * max(1.0, np.abs(tv).max()))


# ---------------------------------------------------------------- stacks
@pytest.mark.parametrize("n", [3, 40])          # state by state, and the parallel loop
def test_batch_equals_per_state(n):
    model = deriv_tree("terms-floating")
    rng = np.random.default_rng(7)
    Q = np.stack([random_state(model, rng)[0] for _ in range(n)])
    V, A, T = rng.standard_normal((3, n, model.nv))
    F = rng.standard_normal((n, model.nbody, 6))
    for fn, X in ((ld.rnea_derivatives, A), (ld.aba_derivatives, T)):
        for fext in (None, F):
            out = fn(model, Q, V, X, fext)
            assert all(o.shape == (n, model.nv, model.nv) for o in out)
            for k in range(n):
                one = fn(model, Q[k], V[k], X[k], None if fext is None else fext[k])
                for got, want in zip(out, one):
                    np.testing.assert_array_equal(got[k], want)
    # a single state next to a stack is shared by all
    out = ld.rnea_derivatives(model, Q[0], V, A)
    np.testing.assert_array_equal(out[0][n - 1], ld.rnea_derivatives(model, Q[0], V[n - 1], A[n - 1])[0])


def test_validation():
    model = deriv_tree("chain4-free")
    q, v, a = random_state(model, np.random.default_rng(8))
    with pytest.raises(ValueError, match="v"):
        ld.rnea_derivatives(model, q, v[:-1], a)
    bad = v.copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ld.aba_derivatives(model, q, bad, a)
    qb = q.copy()
    qb[3:7] *= 2.0
    with pytest.raises(ValueError, match="quaternion"):
        ld.rnea_derivatives(model, qb, v, a)
    with pytest.raises(ValueError, match="fext"):
        ld.aba_derivatives(model, q, v, a, np.zeros((2, 6)))
    # lists are accepted like arrays
    out = ld.rnea_derivatives(model, list(q), list(v), list(a))
    np.testing.assert_array_equal(out[0], ld.rnea_derivatives(model, q, v, a)[0])


# ---------------------------------------------------------------- Pinocchio
try:
    import pinocchio as pin
    from linkdyn.models import ROBOTS, example_robot_data_dir
    example_robot_data_dir()
except (ImportError, FileNotFoundError):  # pragma: no cover
    pin = None

PIN_ROBOTS = [("ur5", False), ("ur5", True), ("panda", False), ("panda", True), ("talos", True), ("talos", False),
              ("solo", True), ("solo", False), ("human", True)]


@functools.lru_cache(maxsize=None)
def pin_pair(name, floating):
    path = str(example_robot_data_dir() / ROBOTS[name][0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        model = ld.load_urdf(path, floating_base=floating, mimic=False)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    assert pm.nv == model.nv and pm.njoints == model.nbody
    return model, pm


def to_pin_q(model, pm, q):
    """Our configuration in Pinocchio's layout (continuous joints there store (cos, sin); their
    tangent, the angle's rate, is the same, so derivatives compare entry by entry)."""
    out = np.empty(pm.nq)
    for j in range(1, pm.njoints):
        jm, sl = pm.joints[j], model.q_slice(pm.names[j])
        if jm.nq == 2 and jm.nv == 1:
            out[jm.idx_q], out[jm.idx_q + 1] = np.cos(q[sl.start]), np.sin(q[sl.start])
        else:
            out[jm.idx_q:jm.idx_q + jm.nq] = q[sl]
    return out


def sym(U):
    """Pinocchio fills the upper triangle of M and M^-1."""
    return np.triu(U) + np.triu(U, 1).T


@pytest.mark.skipif(pin is None, reason="pinocchio or example-robot-data not installed")
@pytest.mark.parametrize("name,floating", PIN_ROBOTS)
def test_vs_pinocchio(name, floating):
    model, pm = pin_pair(name, floating)
    pd = pm.createData()
    rng = np.random.default_rng(9)
    for _ in range(2):
        q = ld.random_configuration(model, rng)
        v, a, tau = rng.standard_normal((3, model.nv))
        F = random_fext(model, rng)
        qp = to_pin_q(model, pm, q)
        fp = pin.StdVec_Force([pin.Force(f[:3], f[3:]) for f in F])
        for fext, pf in ((None, ()), (F, (fp,))):
            # Pinocchio returns views of its data, which the next call overwrites: copy
            want = [np.array(x) for x in pin.computeRNEADerivatives(pm, pd, qp, v, a, *pf)]
            got = ld.rnea_derivatives(model, q, v, a, fext)
            assert rel_err(got[0], want[0]) < RTOL, "dtau/dq"
            assert rel_err(got[1], want[1]) < RTOL, "dtau/dv"
            assert rel_err(got[2], sym(want[2])) < RTOL, "M"
            want = [np.array(x) for x in pin.computeABADerivatives(pm, pd, qp, v, tau, *pf)]
            got = ld.aba_derivatives(model, q, v, tau, fext)
            assert rel_err(got[0], want[0]) < 1e-8, "dqdd/dq"
            assert rel_err(got[1], want[1]) < 1e-8, "dqdd/dv"
            assert rel_err(got[2], sym(want[2])) < 1e-8, "Minv"


# ---------------------------------------------------------------- twins: every joint kind in Pinocchio
CONSTANT_S_KINDS = ("revolute", "prismatic", "cylindrical", "spherical", "planar", "fixed")


@functools.lru_cache(maxsize=None)
def twin_for(name):
    from conftest import TWINS, make_twin
    if name == "twin-constant-S":
        return make_twin(seed=10, nbodies=12, kinds=CONSTANT_S_KINDS, floating=True, branching=0.6)
    return make_twin(**TWINS[name])


@pytest.mark.skipif(pin is None, reason="pinocchio not installed")
@pytest.mark.parametrize("name", ["twin-fixed-s0", "twin-fixed-s1", "twin-floating-s2", "twin-floating-s3",
                                  "twin-massless-s4", "twin-nofixed-s5", "twin-constant-S"])
def test_twins_vs_pinocchio(name):
    """The same random tree built in both libraries (conftest.make_twin): our derivatives against
    central differences of Pinocchio's rnea and aba (on its own manifold), and against its
    computeRNEADerivatives / computeABADerivatives when the tree has no joint whose S depends
    on q.  Pinocchio 4.1's analytical derivatives leave out dS/dq (its composite joints and
    SphericalZYX): there they disagree with central differences of its own rnea by far more
    than round-off (seen: 7 to 70 absolute), while ours agree with them."""
    tw = twin_for(name)
    m, pm = tw.ld, tw.pin
    pd = pm.createData()
    rng = np.random.default_rng(11)
    q, v, a = random_state(m, rng)
    tau = rng.standard_normal(m.nv)
    qp, vp, ap, tp = tw.q_pin(q), tw.v_pin(v), tw.v_pin(a), tw.v_pin(tau)
    h, E = 1e-6, np.eye(pm.nv)

    def pin_fd(f, x):
        dq = np.stack([(f(pin.integrate(pm, qp, h * E[k]), vp, x) - f(pin.integrate(pm, qp, -h * E[k]), vp, x)) / (2 * h)
                       for k in range(pm.nv)], 1)
        dv = np.stack([(f(qp, vp + h * E[k], x) - f(qp, vp - h * E[k], x)) / (2 * h) for k in range(pm.nv)], 1)
        return tw.M_ld(dq), tw.M_ld(dv)

    ours_r = ld.rnea_derivatives(m, q, v, a)
    ours_a = ld.aba_derivatives(m, q, v, tau)
    fd_r = pin_fd(lambda *s: pin.rnea(pm, pd, *s), ap)
    fd_a = pin_fd(lambda *s: pin.aba(pm, pd, *s), tp)
    for got, want in zip(ours_r[:2] + ours_a[:2], fd_r + fd_a):
        assert rel_err(got, want) < RTOL_FD
    if not any(m.joints[i].kind in (J.UNIVERSAL, J.SPHERICAL_ZYX) for i in range(1, m.nbody)):
        want = [tw.M_ld(np.array(x)) for x in pin.computeRNEADerivatives(pm, pd, qp, vp, ap)]
        assert rel_err(ours_r[0], want[0]) < RTOL and rel_err(ours_r[1], want[1]) < RTOL
        want = [tw.M_ld(np.array(x)) for x in pin.computeABADerivatives(pm, pd, qp, vp, tp)]
        assert rel_err(ours_a[0], want[0]) < 1e-8 and rel_err(ours_a[1], want[1]) < 1e-8

