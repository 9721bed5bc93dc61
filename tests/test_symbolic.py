"""Closed-form equations of motion (linkdyn.symbolic) against the textbook and the numeric algorithms.

* the planar 2-link arm of seed 002 sec. 5.4: the derived D, C, G equal eqs. (5.87), (5.93),
  (5.95) symbolically, and D' - 2C is skew-symmetric (eqs. (5.66)-(5.71));
* the built-in DH arms: the lambdified D, C, G, tau, K, U equal linkdyn's CRBA, RNEA, b - g
  and energies at random states (two independent derivations of the same mechanism: Lagrange
  via DH matrices and Christoffel symbols vs the spatial recursive algorithms);
* symbolic parameters, the modified convention and a base pose against from_dh models built
  with the same numbers.
"""
from math import pi

import numpy as np
import pytest

sp = pytest.importorskip("sympy")

import linkdyn as ld  # noqa: E402
from linkdyn.models import dh  # noqa: E402
from linkdyn.symbolic import (SymbolicDHLink, dh_transform, planar_2link_symbolic,  # noqa: E402
                              symbolic_dynamics)

TOL = 1e-10


def rel_err(got, want):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape
    return np.max(np.abs(got - want)) / max(1.0, np.max(np.abs(want)))


def is_zero(M):
    return sp.simplify(M) == sp.zeros(*M.shape)


@pytest.fixture(scope="module")
def arm2():
    return planar_2link_symbolic()


@pytest.fixture(scope="module")
def arm2_vertical():
    return planar_2link_symbolic(gravity="in_plane")


# ------------------------------------------------------------------ seed 002 sec. 5.4, symbolically

def test_inertia_matrix_is_eq_5_87(arm2):
    assert is_zero(arm2.D - arm2.textbook["D"])
    assert [s.name for s in arm2.parameters] == ["J1", "J2", "a1", "l1", "l2", "m1", "m2"]  # no a2, no Ixx/Iyy


def test_christoffel_C_is_eq_5_95_and_C_qd_is_eq_5_93(arm2):
    tb, qd = arm2.textbook, arm2.qd
    assert is_zero(arm2.C - tb["C"])                       # (5.95): the Christoffel matrix
    assert is_zero(arm2.C * qd - tb["C_593"] * qd)         # (5.93): another factorisation, same vector
    assert not is_zero(arm2.C - tb["C_593"])               # ... but a different matrix
    assert is_zero(arm2.G)                                 # horizontal plane: no gravity torque
    assert is_zero(arm2.tau - tb["tau"])                   # the whole of eq. (5.93)
    # eq. (5.93) as printed has -q2'/2 in the (2, 2) entry; that gives a wrong vector (see docstring)
    h = tb["symbols"]["m2"] * tb["symbols"]["a1"] * tb["symbols"]["l2"] * sp.sin(arm2.q[1])
    t1, t2 = qd
    printed = -h * sp.Matrix([[2 * t2, t2], [t2 / 2 - t1, -t2 / 2]])
    assert not is_zero(printed * qd - arm2.C * qd)


def test_D_dot_minus_2C_is_skew_symmetric(arm2, arm2_vertical):
    for dyn in (arm2, arm2_vertical):
        S = dyn.Ddot - 2 * dyn.C
        assert is_zero(S + S.T)
        Ddot = sum((dyn.D.diff(dyn.q[i]) * dyn.qd[i] for i in range(2)), sp.zeros(2, 2))
        assert is_zero(Ddot - dyn.Ddot)


def test_vertical_plane_gravity_and_energies(arm2_vertical):
    dyn, tb = arm2_vertical, arm2_vertical.textbook
    assert is_zero(dyn.G - tb["G"])
    assert is_zero(dyn.tau - tb["tau"])
    g, m1, m2, l1, l2, a1 = (tb["symbols"][k] for k in ("g", "m1", "m2", "l1", "l2", "a1"))
    q1, q2 = dyn.q
    U = g * (m1 * l1 * sp.sin(q1) + m2 * (a1 * sp.sin(q1) + l2 * sp.sin(q1 + q2)))   # heights of the coms
    assert sp.simplify(dyn.U - U) == 0
    assert sp.simplify(dyn.K - (dyn.qd.T * tb["D"] * dyn.qd)[0, 0] / 2) == 0


def test_christoffel_symbols(arm2):
    n, q = arm2.n, arm2.q
    D = arm2.D
    for i in range(n):
        for j in range(n):
            for k in range(n):
                c = arm2.christoffel(i, j, k)
                want = (D[k, j].diff(q[i]) + D[k, i].diff(q[j]) - D[i, j].diff(q[k])) / 2     # (5.64)
                assert sp.simplify(c - want) == 0
                assert sp.simplify(c - arm2.christoffel(j, i, k)) == 0
    for k in range(n):
        for j in range(n):
            assert sp.simplify(arm2.C[k, j] - sum(arm2.christoffel(i, j, k) * arm2.qd[i] for i in range(n))) == 0


def test_textbook_formula_is_linkdyn_planar_2link(arm2_vertical):
    """Eq. (5.93) with uniform rods (r_i = l_i = a_i / 2, J_i = m_i a_i^2 / 12) and gravity in the
    plane equals linkdyn's numeric planar_2link."""
    L1, L2, M1, M2, g0 = 0.7, 0.45, 1.3, 0.8, 9.81
    s = arm2_vertical.textbook["symbols"]
    vals = {s["a1"]: L1, s["a2"]: L2, s["l1"]: L1 / 2, s["l2"]: L2 / 2, s["m1"]: M1, s["m2"]: M2,
            s["J1"]: M1 * L1**2 / 12, s["J2"]: M2 * L2**2 / 12, s["g"]: g0}
    tb = arm2_vertical.textbook
    dyn = arm2_vertical
    args = list(dyn.q) + list(dyn.qd) + list(dyn.qdd)
    D = sp.lambdify(args, tb["D"].subs(vals))
    tau = sp.lambdify(args, tb["tau"].subs(vals))
    model = dh.planar_2link(l1=L1, l2=L2, m1=M1, m2=M2, gravity=(0.0, -g0, 0.0))
    rng = np.random.default_rng(5)
    for _ in range(10):
        q, v, a = rng.uniform(-3, 3, (3, 2))
        x = [*q, *v, *a]
        assert rel_err(D(*x), ld.crba(model, q)) < TOL
        assert rel_err(np.ravel(tau(*x)), ld.rnea(model, q, v, a)) < TOL


# ------------------------------------------------------------------ numeric arms vs linkdyn

ARMS = {
    "planar_2link": (dh.planar_2link_links, dh.planar_2link, True),
    "scara": (dh.scara_links, dh.scara, True),
    "cartesian_arm": (dh.cartesian_arm_links, dh.cartesian_arm, True),
    "cylindrical_arm": (dh.cylindrical_arm_links, dh.cylindrical_arm, True),
    "polar_arm": (dh.polar_arm_links, dh.polar_arm, True),
    "stanford_arm": (dh.stanford_arm_links, dh.stanford_arm, False),
    "puma560": (dh.puma560_links, dh.puma560, False),
}


def check_against_linkdyn(f, model, rng, nstates=8):
    lo = np.where(np.isfinite(model.lower), model.lower, -pi)
    hi = np.where(np.isfinite(model.upper), model.upper, pi)
    Q = rng.uniform(lo, hi, (nstates, model.nq))
    V, A = rng.standard_normal((2, nstates, model.nv))
    for q, v, a in zip(Q, V, A):
        g = ld.generalized_gravity(model, q)
        assert rel_err(f.D(q), ld.crba(model, q)) < TOL
        assert rel_err(f.G(q), g) < TOL
        assert rel_err(f.C(q, v) @ v, ld.nonlinear_effects(model, q, v) - g) < TOL
        assert rel_err(f.tau(q, v, a), ld.rnea(model, q, v, a)) < TOL
        assert rel_err(f.K(q, v), ld.kinetic_energy(model, q, v)) < TOL
        assert rel_err(f.U(q), ld.potential_energy(model, q)) < TOL
    # a stack of states in one call
    assert rel_err(f.D(Q), ld.crba(model, Q)) < TOL
    assert rel_err(f.tau(Q, V, A), ld.rnea(model, Q, V, A)) < TOL
    assert rel_err(np.einsum("nij,nj->ni", f.C(Q, V), V), ld.nonlinear_effects(model, Q, V) -
                   ld.generalized_gravity(model, Q)) < TOL


@pytest.mark.parametrize("name", list(ARMS))
def test_builtin_arm_matches_linkdyn(name):
    links_fn, model_fn, simplify = ARMS[name]
    dyn = symbolic_dynamics(links_fn(), simplify=simplify)
    assert dyn.parameters == []
    f = dyn.lambdify()
    check_against_linkdyn(f, model_fn(), np.random.default_rng(list(ARMS).index(name)))
    # D' - 2C skew: the entries are canonical polynomials in cos/sin, so expand is enough
    S = dyn.Ddot - 2 * dyn.C
    assert (S + S.T).applyfunc(sp.expand) == sp.zeros(dyn.n, dyn.n)


def test_armature_on_the_diagonal():
    with_arm = symbolic_dynamics(dh.stanford_arm_links(armature=True), simplify=False)
    without = symbolic_dynamics(dh.stanford_arm_links(armature=False), simplify=False)
    diff = (with_arm.D - without.D).applyfunc(sp.expand)
    want = [L.armature for L in dh.stanford_arm_links(armature=True)]
    assert np.allclose(np.array(diff, dtype=float), np.diag(want), rtol=0, atol=1e-15)
    assert (with_arm.C - without.C).applyfunc(sp.expand) == sp.zeros(6, 6)


def test_modified_convention_base_and_gravity():
    """A modified-convention table (the PUMA numbers read as Craig's) on a tilted base with an
    oblique gravity, against from_dh with the same arguments."""
    links = dh.puma560_links()
    links[2].kind = "prismatic"                 # a prismatic joint in the middle of the chain
    links[2].d = 0.2
    links[2].lower, links[2].upper = 0.0, 0.5
    c, s = np.cos(0.4), np.sin(0.4)
    base = np.array([[c, 0, s, 0.1], [0, 1, 0, -0.2], [-s, 0, c, 0.3], [0, 0, 0, 1]])
    gravity = (1.0, -2.0, -9.0)
    dyn = symbolic_dynamics(links, convention="modified", gravity=gravity, base=base, simplify=False)
    model = ld.from_dh(links, convention="modified", base=base, gravity=gravity)
    check_against_linkdyn(dyn.lambdify(), model, np.random.default_rng(7))


def test_symbolic_parameters_then_numbers():
    """A 3-joint arm (R, P, R) with symbolic lengths, masses, full inertias and an offset
    centre of mass: lambdify(values=...) equals from_dh built from DHLinks with those numbers."""
    a1, d1, m1, m2, m3, g, arm3 = sp.symbols("a1 d1 m1 m2 m3 g arm3", positive=True)
    Ixx, Iyy, Izz, Ixy, Ixz, Iyz = sp.symbols("Ixx Iyy Izz Ixy Ixz Iyz")
    cx, cy, cz = sp.symbols("cx cy cz")
    I3 = sp.Matrix([[Ixx, Ixy, Ixz], [Ixy, Iyy, Iyz], [Ixz, Iyz, Izz]])
    sym_links = [SymbolicDHLink(a=a1, d=d1, alpha=sp.pi / 2, mass=m1, com=(-a1 / 2, 0, 0), inertia=(0, 0, Izz / 2)),
                 SymbolicDHLink(kind="prismatic", alpha=-sp.pi / 2, theta=sp.pi / 2, d=sp.Rational(1, 5), mass=m2,
                                com=(0, 0, cz), inertia=(Ixx, Ixx, Izz)),
                 dict(a=sp.Rational(3, 10), mass=m3, com=(cx, cy, cz), inertia=I3, armature=arm3)]
    dyn = symbolic_dynamics(sym_links, gravity=(0, 0, -g), simplify=False)
    assert {s.name for s in dyn.parameters} == {"a1", "d1", "m1", "m2", "m3", "g", "arm3", "Ixx", "Iyy", "Izz",
                                                "Ixy", "Ixz", "Iyz", "cx", "cy", "cz"}
    vals = dict(a1=0.4, d1=0.3, m1=2.0, m2=1.5, m3=0.7, g=9.81, arm3=0.05, Ixx=0.02, Iyy=0.03, Izz=0.025,
                Ixy=0.004, Ixz=-0.003, Iyz=0.002, cx=0.05, cy=-0.02, cz=0.1)
    f = dyn.lambdify(vals)
    v = vals
    Iv = np.array([[v["Ixx"], v["Ixy"], v["Ixz"]], [v["Ixy"], v["Iyy"], v["Iyz"]], [v["Ixz"], v["Iyz"], v["Izz"]]])
    num_links = [dh.DHLink(a=v["a1"], d=v["d1"], alpha=pi / 2, mass=v["m1"], com=(-v["a1"] / 2, 0, 0),
                           inertia=(0, 0, v["Izz"] / 2)),
                 dh.DHLink(kind="prismatic", alpha=-pi / 2, theta=pi / 2, d=0.2, mass=v["m2"], com=(0, 0, v["cz"]),
                           inertia=(v["Ixx"], v["Ixx"], v["Izz"])),
                 dh.DHLink(a=0.3, mass=v["m3"], com=(v["cx"], v["cy"], v["cz"]), inertia=Iv, armature=v["arm3"])]
    check_against_linkdyn(f, ld.from_dh(num_links), np.random.default_rng(3))
    # symbols as keys work too, and the symbolic C is skew-compatible
    f2 = dyn.lambdify({dyn.parameters[k]: vals[s.name] for k, s in enumerate(dyn.parameters)})
    q = np.array([0.3, 0.1, -0.7])
    assert rel_err(f2.D(q), f.D(q)) == 0
    S = dyn.Ddot - 2 * dyn.C
    assert (S + S.T).applyfunc(sp.expand) == sp.zeros(3, 3)


def test_symbolic_dh_transform_matches_numeric():
    a, alpha, d, theta = 0.3, -0.8, 0.25, 1.1
    for conv in ("standard", "modified"):
        A = np.array(dh_transform(a, alpha, d, theta, conv).evalf(), dtype=float)
        assert np.allclose(A, dh.dh_transform(a, alpha, d, theta, conv), atol=1e-14)


def test_input_errors(arm2):
    with pytest.raises(ValueError, match="no value for the parameters"):
        arm2.lambdify()
    with pytest.raises(KeyError, match="not a parameter"):
        arm2.lambdify({"a2": 1.0})
    with pytest.raises(ValueError, match="convention"):
        symbolic_dynamics(dh.planar_2link_links(), convention="craig")
    with pytest.raises(ValueError, match="kind"):
        SymbolicDHLink(kind="helical")
    with pytest.raises(ValueError, match="gravity"):
        planar_2link_symbolic(gravity="down")
    f = symbolic_dynamics(dh.planar_2link_links(), simplify=False).lambdify()
    with pytest.raises(ValueError, match="shape"):
        f.D(np.zeros(3))


def test_missing_sympy_message(monkeypatch):
    import sys

    from linkdyn import symbolic
    monkeypatch.setitem(sys.modules, "sympy", None)
    with pytest.raises(ImportError, match=r"pip install 'linkdyn\[symbolic\]'"):
        symbolic.symbolic_dynamics(dh.planar_2link_links())
