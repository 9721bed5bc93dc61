"""Derivatives of constrained forward dynamics (ld.constrained_dynamics_derivatives,
ld.loops.constrained_dynamics_derivatives): against central finite differences on the manifold
(q moved with ld.integrate), against Pinocchio's computeConstraintDynamicsDerivatives, and
dq''/dtau against the KKT system solved for unit torques."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import linkdyn as ld
from linkdyn import constraints as C
from linkdyn.models import mechanisms as mech
from linkdyn.models import scenarios

try:
    import pinocchio as pin
except ImportError:  # pragma: no cover
    pin = None

H = 1e-6          # finite-difference step
RTOL = 1e-6       # relative to max(1, the largest entry of the finite difference)


def fd_jacobians(model, fwd, q, v, tau, h=H):
    """Central differences of fwd(q, v, tau) -> (q'', lambda) along the tangent coordinates of q,
    and along v and tau: three (nv + m, nv) matrices."""
    def f(q, v, tau):
        a, lam = fwd(q, v, tau)
        return np.concatenate([a, lam])
    E = np.eye(model.nv)
    dq = np.stack([f(ld.integrate(model, q, h * e), v, tau) - f(ld.integrate(model, q, -h * e), v, tau) for e in E], 1)
    dv = np.stack([f(q, v + h * e, tau) - f(q, v - h * e, tau) for e in E], 1)
    dt = np.stack([f(q, v, tau + h * e) - f(q, v, tau - h * e) for e in E], 1)
    return dq / (2 * h), dv / (2 * h), dt / (2 * h)


def assert_matches_fd(model, D, fwd, q, v, tau, what, h=H):
    nv = model.nv
    for name, want, dqdd, dlam in zip(("q", "v", "tau"), fd_jacobians(model, fwd, q, v, tau, h),
                                      (D.ddq_dq, D.ddq_dv, D.ddq_dtau), (D.dlambda_dq, D.dlambda_dv, D.dlambda_dtau)):
        for part, got, ref in (("q''", dqdd, want[:nv]), ("lambda", dlam, want[nv:])):
            assert got.shape == ref.shape, f"{what}: d{part}/d{name} shape {got.shape} != {ref.shape}"
            err = np.abs(got - ref).max()
            scale = max(1.0, np.abs(ref).max())
            assert err <= RTOL * scale, f"{what}: d{part}/d{name} max error {err:.2e} > {RTOL:.0e} * {scale:.3g}"


# ---------------------------------------------------------------------------------------
# closed chains (ld.loops)
def loops_fwd(model, baumgarte):
    """q'' of the compiled multiplier form and the least-norm loop forces (constraint_forces)."""
    def f(q, v, tau):
        a = ld.loops.constrained_dynamics(model, q, v, tau, baumgarte)
        lam = ld.loops.constraint_forces(model, q, v, tau, baumgarte=baumgarte)[1]
        return a, lam.reshape(-1)
    return f


@functools.lru_cache(maxsize=None)
def loop_tree():
    """A fixed-base tree whose loop runs through a free joint, a universal joint and ZYX angles,
    closed by a spherical cut joint: a -revolute- a1 -free- a2 -universal- a3 on one side,
    b1 -ZYX- b2 on the other, the virtual link on a3 held to a point of b2."""
    rng = np.random.default_rng(4)

    def inertia():
        A = rng.standard_normal((3, 3))
        P = A @ A.T + 0.05 * np.eye(3)
        return ld.Inertia(rng.uniform(0.5, 2.0), 0.1 * rng.standard_normal(3), np.trace(P) * np.eye(3) - P)

    def place():
        return Rotation.random(random_state=rng).as_matrix(), 0.3 * rng.standard_normal(3)
    b = ld.ModelBuilder("loop-tree")
    b.add_body("a1", "world", ld.Revolute((0.0, 0.0, 1.0)), placement=place(), inertia=inertia())
    b.add_body("a2", "a1", ld.FreeFlyer(), placement=place(), inertia=inertia())
    b.add_body("a3", "a2", ld.Universal((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)), placement=place(), inertia=inertia())
    b.add_body("b1", "world", ld.Revolute((0.0, 1.0, 0.0)), placement=place(), inertia=inertia())
    b.add_body("b2", "b1", ld.SphericalZYX(), placement=place(), inertia=inertia())
    b.add_loop("grip", "a3", "b2", ld.Spherical(), placement=(np.eye(3), (0.2, 0.0, 0.1)),
               real_placement=(np.eye(3), (0.0, 0.1, -0.2)))
    m = b.build()
    return m, ld.loops.close_loops(m, ld.integrate(m, ld.neutral(m), 0.3 * rng.standard_normal(m.nv)))


@functools.lru_cache(maxsize=None)
def loop_case(name):
    if name == "four-bar":
        m = mech.four_bar()
        return m, ld.loops.close_loops(m, [0.8, -1.0, 1.9, 0.5], hold=["crank"])
    if name == "loop-tree":
        return loop_tree()
    return scenarios.figure_on_bar_40(name.split("-")[-1])


LOOP_CASES = ["four-bar", "loop-tree", "figure-on-bar-spherical", "figure-on-bar-weld"]


@pytest.mark.parametrize("name", LOOP_CASES)
def test_loop_derivatives_match_finite_differences(name):
    """On a closed state with a velocity that keeps the loops closed, and (with Baumgarte's
    terms, which then act) on an opened state with any velocity.  The 52-velocity figure's q''
    carries a round-off of ~1e-8 (both the kernel and the dense KKT), which a step of 1e-6 turns
    into 2e-6 of error in the differences: it takes a step of 1e-4 (errors 4e-8)."""
    model, q = loop_case(name)
    rng = np.random.default_rng(2)
    an = ld.loops.analyze(model, q)
    tau = rng.standard_normal(model.nv)
    states = [(q, an.W @ rng.standard_normal(an.dof), (0.0, 0.0))]
    if model.nv < 30:
        q_open = ld.integrate(model, q, 0.05 * rng.standard_normal(model.nv))
        states.append((q_open, rng.standard_normal(model.nv), (2.0, 5.0)))
    else:            # the 46-velocity figure: one state, Baumgarte on (its error terms vanish there)
        states = [(q, an.W @ rng.standard_normal(an.dof), (2.0, 5.0))]
    for qk, vk, bg in states:
        D = ld.loops.constrained_dynamics_derivatives(model, qk, vk, tau, bg)
        assert D.dlambda_dq.shape == (6 * model.nloops, model.nv)
        assert_matches_fd(model, D, loops_fwd(model, bg), qk, vk, tau, f"{name} {bg}",
                          h=1e-4 if model.nv > 30 else H)


def test_the_loop_forward_dynamics_meet_their_equations_on_an_open_state():
    """The three forms (compiled kernel, dense KKT, the NumPy path of ld.constrained_dynamics)
    agree off the constraint manifold with Baumgarte's terms, on the four-bar (nv = 4 < 6: the
    kernel's scratch once ran into the loop error) and keep J q'' = -J' v - 2 alpha J v + beta^2 e."""
    model, q = loop_case("four-bar")
    rng = np.random.default_rng(3)
    q = ld.integrate(model, q, 0.05 * rng.standard_normal(model.nv))
    v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
    alpha, beta = 2.0, 5.0
    a1 = ld.loops.constrained_dynamics(model, q, v, tau, (alpha, beta))
    a2 = ld.loops.constraint_forces(model, q, v, tau, baumgarte=(alpha, beta))[0]
    a3 = ld.constrained_dynamics(model, q, v, tau, (), (alpha, beta)).qdd
    JC, e = ld.loops.loop_jacobian(model, q), ld.loops.loop_error(model, q).ravel()
    rhs = -ld.loops.loop_bias(model, q, v) - 2 * alpha * JC @ v + beta ** 2 * e
    for a in (a1, a2, a3):
        assert np.abs(JC @ a - rhs).max() < 1e-10
        assert np.abs(a - a2).max() < 1e-10 * (1 + np.abs(a2).max())


def test_loop_dqdd_dtau_is_the_kkt_solved_for_unit_torques():
    """dq''/dtau and dlambda/dtau: column k is the solution of [M -J^T; J 0] [x; y] = [e_k; 0]
    (the independent rows of J), and q'', lambda are affine in tau."""
    model, q = loop_case("loop-tree")
    rng = np.random.default_rng(5)
    v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
    D = ld.loops.constrained_dynamics_derivatives(model, q, v, tau)
    JC = ld.loops.loop_jacobian(model, q)
    J = JC[ld.loops.independent_rows(JC)]
    n, m = model.nv, J.shape[0]
    K = np.block([[ld.crba(model, q), -J.T], [J, np.zeros((m, m))]])
    X = np.linalg.solve(K, np.vstack([np.eye(n), np.zeros((m, n))]))
    assert np.abs(D.ddq_dtau - X[:n]).max() < 1e-9 * max(1.0, np.abs(X[:n]).max())
    assert m == 6 * model.nloops           # independent rows: lambda is the multipliers' own
    assert np.abs(D.dlambda_dtau - X[n:]).max() < 1e-9 * max(1.0, np.abs(X[n:]).max())
    fwd = loops_fwd(model, (0.0, 0.0))
    a0, l0 = fwd(q, v, tau)
    for k in range(n):
        a1, l1 = fwd(q, v, tau + np.eye(n)[k])
        assert np.abs(a1 - a0 - D.ddq_dtau[:, k]).max() < 1e-9 * max(1.0, np.abs(D.ddq_dtau).max())
        assert np.abs(l1 - l0 - D.dlambda_dtau[:, k]).max() < 1e-9 * max(1.0, np.abs(D.dlambda_dtau).max())


def test_planar_loop_takes_the_least_norm_forces():
    """The four-bar's loop has 3 independent rows of 6: dq'' is unique, dlambda is that of the
    least-norm split (constraint_forces); its forces stay in the null space's complement."""
    model, q = loop_case("four-bar")
    rng = np.random.default_rng(6)
    v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
    D = ld.loops.constrained_dynamics_derivatives(model, q, v, tau)
    JC = ld.loops.loop_jacobian(model, q)
    assert len(ld.loops.independent_rows(JC)) == 3
    U, S, _ = np.linalg.svd(JC)
    null = U[:, 3:]                                        # null(J^T): the indeterminate splits
    assert np.abs(null.T @ D.dlambda_dtau).max() < 1e-9 * np.abs(D.dlambda_dtau).max()


# ---------------------------------------------------------------------------------------
# geometric constraints (ld.constrained_dynamics)
@functools.lru_cache(maxsize=None)
def floating_tree():
    return ld.models.random_tree(8, floating=True, seed=3, joint_terms=True)


def geometric_sets(model, q, rng):
    names = model.frame_names
    last, mid = names[-1], names[len(names) // 2]
    T = ld.frame_pose(model, q, last)
    target = np.eye(4)
    target[:3, :3], target[:3, 3] = ld.spatial.exp3(0.05 * rng.standard_normal(3)) @ T[:3, :3], T[:3, 3] + 0.01
    p = 0.1 * rng.standard_normal(3)
    return {
        "point+plane": [C.PointFixed(last, point=p, target=tuple(T[:3, 3] + 0.02)),
                        C.PointOnPlane(mid, normal=rng.standard_normal(3), offset=0.2, point=p)],
        "frame": [C.FrameFixed(last, target=target)],
        "distance": [C.Distance(last, mid, 0.3, point_a=p, point_b=-p)],
        "redundant": [C.FrameFixed(last), C.PointFixed(last, point=p)],
    }


def geometric_fwd(model, cons, baumgarte):
    def f(q, v, tau):
        res = ld.constrained_dynamics(model, q, v, tau, cons, baumgarte)
        return res.qdd, np.concatenate(list(res.forces) + [res.loop_forces])
    return f


@pytest.mark.parametrize("kind", ["point+plane", "frame", "distance", "redundant"])
def test_geometric_derivatives_match_finite_differences(kind):
    """A floating tree with joint damping, each kind of constraint with a target, with and without
    Baumgarte's terms; a FrameFixed and a PointFixed on one body (9 rows, rank 6: lambda the
    least-norm split)."""
    model = floating_tree()
    rng = np.random.default_rng(7)
    q = ld.random_configuration(model, rng)
    v, tau = rng.standard_normal(model.nv), 5.0 * rng.standard_normal(model.nv)
    cons = geometric_sets(model, q, rng)[kind]
    if kind == "redundant":
        # the dependent rows agree with the others only when the frame does not move (J v = 0);
        # elsewhere the forward dynamics is a least-squares compromise, which is refused
        with pytest.raises(ValueError, match="contradict"):
            ld.constrained_dynamics_derivatives(model, q, v, tau, cons)
        J = ld.jacobian(model, q, cons[0].frame, "local_world_aligned")
        v = v - np.linalg.pinv(J) @ (J @ v)
    for bg in ((0.0, 0.0), (3.0, 7.0)):
        D = ld.constrained_dynamics_derivatives(model, q, v, tau, cons, bg)
        assert_matches_fd(model, D, geometric_fwd(model, cons, bg), q, v, tau, f"{kind} {bg}")


def test_geometric_constraints_with_the_models_loops():
    """ld.constrained_dynamics with a model's loops and a user constraint (its NumPy path); with
    no user constraint, the same derivatives as ld.loops.constrained_dynamics_derivatives."""
    model, q = loop_case("loop-tree")
    rng = np.random.default_rng(8)
    q = ld.integrate(model, q, 0.05 * rng.standard_normal(model.nv))
    v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
    cons = [C.PointOnPlane("a2", normal=(0.0, 0.0, 1.0), offset=0.1)]
    D = ld.constrained_dynamics_derivatives(model, q, v, tau, cons, (1.0, 3.0))
    assert D.dlambda_dq.shape == (1 + 6, model.nv)
    assert_matches_fd(model, D, geometric_fwd(model, cons, (1.0, 3.0)), q, v, tau, "loops + plane")
    A = ld.constrained_dynamics_derivatives(model, q, v, tau, (), (1.0, 3.0))
    B = ld.loops.constrained_dynamics_derivatives(model, q, v, tau, (1.0, 3.0))
    for a, b in zip(A, B):
        assert np.abs(a - b).max() < 1e-9 * max(1.0, np.abs(b).max())


# ---------------------------------------------------------------------------------------
# Pinocchio
@functools.lru_cache(maxsize=None)
def solo():
    try:
        return ld.models.example_robot("solo")
    except Exception as exc:      # pragma: no cover - example-robot-data missing
        pytest.skip(f"example-robot-data: {exc}")


@pytest.mark.skipif(pin is None, reason="pinocchio not installed")
@pytest.mark.parametrize("kind", ["3D", "6D"])
def test_against_pinocchio(kind):
    """Solo-12 (floating base) with its four feet held (CONTACT_3D, a PointFixed each) or two
    feet welded (CONTACT_6D, a FrameFixed each), both LOCAL_WORLD_ALIGNED, which are our rows:
    world axes, the force on the point (and the torque about it).  Pinocchio's 6-D rows take the
    spatial acceleration where FrameFixed takes the classical one of the origin; they agree when
    the contact frames do not move (J v = 0), which the 6-D case uses."""
    from linkdyn.interop import pinocchio_q, pinocchio_v, to_pinocchio
    model = solo()
    feet = [f for f in model.frame_names if f.endswith("FOOT")]
    frames = feet if kind == "3D" else feet[:2]
    cons = [C.PointFixed(f) for f in frames] if kind == "3D" else [C.FrameFixed(f) for f in frames]
    ctype = pin.ContactType.CONTACT_3D if kind == "3D" else pin.ContactType.CONTACT_6D
    pm, jid = to_pinocchio(model)
    pd = pm.createData()
    cms, cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for f in frames:
        k = model.frame_id(f)
        cm = pin.RigidConstraintModel(ctype, pm, jid[int(model.frame_body[k])],
                                      pin.SE3(np.array(model.frame_R[k]), np.array(model.frame_p[k])),
                                      pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        cms.append(cm)
        cds.append(cm.createData())
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-14, 0.0, 1)
    rng = np.random.default_rng(1)
    for _ in range(2):
        q = ld.random_configuration(model, rng)
        v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        if kind == "6D":
            Jc = np.vstack([ld.jacobian(model, q, f, "local_world_aligned") for f in frames])
            v = v - np.linalg.pinv(Jc) @ (Jc @ v)
        qp, vp, tp = pinocchio_q(model, q), pinocchio_v(model, v), pinocchio_v(model, tau)
        a_pin = pin.constraintDynamics(pm, pd, qp, vp, tp, cms, cds, prox)
        res = ld.constrained_dynamics(model, q, v, tau, cons)
        assert np.abs(a_pin - res.qdd).max() < 1e-8 * max(1.0, np.abs(a_pin).max())
        assert np.abs(pd.lambda_c - np.concatenate(res.forces)).max() < 1e-8 * max(1.0, np.abs(pd.lambda_c).max())
        want = [np.array(x) for x in pin.computeConstraintDynamicsDerivatives(pm, pd, cms, cds, prox)]
        got = ld.constrained_dynamics_derivatives(model, q, v, tau, cons)
        for name, g, w in zip(got._fields, got, want):
            assert np.abs(g - w).max() < 1e-9 * max(1.0, np.abs(w).max()), name


# ---------------------------------------------------------------------------------------
# stacks and input
def test_stacks_are_state_by_state_and_bad_input_is_named():
    model, q = loop_case("four-bar")
    rng = np.random.default_rng(9)
    Q = np.stack([ld.integrate(model, q, 0.02 * rng.standard_normal(model.nv)) for _ in range(3)])
    V, T = rng.standard_normal((3, model.nv)), rng.standard_normal((3, model.nv))
    D = ld.loops.constrained_dynamics_derivatives(model, Q, V, T[0], (1.0, 2.0))
    assert D.ddq_dq.shape == (3, model.nv, model.nv) and D.dlambda_dv.shape == (3, 6, model.nv)
    for k in range(3):
        one = ld.loops.constrained_dynamics_derivatives(model, Q[k], V[k], T[0], (1.0, 2.0))
        for a, b in zip(D, one):
            np.testing.assert_array_equal(a[k], b)
    with pytest.raises(ValueError, match="q: expected shape"):
        ld.loops.constrained_dynamics_derivatives(model, q[:-1], V[0], T[0])
    with pytest.raises(ValueError, match="tau: stack of 2 states"):
        ld.loops.constrained_dynamics_derivatives(model, Q, V, T[:2])
    with pytest.raises(ValueError, match="baumgarte"):
        ld.loops.constrained_dynamics_derivatives(model, q, V[0], T[0], baumgarte=(1.0,))
    with pytest.raises(ValueError, match="no loop closures"):
        ld.loops.constrained_dynamics_derivatives(floating_tree(), ld.neutral(floating_tree()),
                                                  np.zeros(floating_tree().nv), np.zeros(floating_tree().nv))
    tree = floating_tree()
    z = np.zeros(tree.nv)
    with pytest.raises(ValueError, match="no constraints"):
        ld.constrained_dynamics_derivatives(tree, ld.neutral(tree), z, z)
    with pytest.raises(TypeError, match="Custom cannot be differentiated"):
        ld.constrained_dynamics_derivatives(tree, ld.neutral(tree), z, z,
                                            [C.Custom(lambda m, q, v: (np.zeros((1, m.nv)), np.zeros(1)))])
    with pytest.raises(TypeError, match=r"constraints\[0\]: expected"):
        ld.constrained_dynamics_derivatives(tree, ld.neutral(tree), z, z, ["PointFixed"])
    with pytest.raises(ValueError, match="v: expected shape"):
        ld.constrained_dynamics_derivatives(tree, ld.neutral(tree), z[:-1], z, [C.PointFixed(tree.frame_names[-1])])


@pytest.mark.skipif(pin is None, reason="pinocchio not installed")
def test_loops_against_pinocchio():
    """The figure of Nakamura and Yamane (2000) Fig. 13 hanging by welded grips: its two loops are
    Pinocchio's CONTACT_6D in the LOCAL frame (the virtual link's frame: the same rows, the same
    force on the hand), so the six derivatives agree."""
    from linkdyn.interop import pinocchio_q, pinocchio_v, to_pinocchio
    model, q = loop_case("figure-on-bar-weld")
    pm, jid = to_pinocchio(model)
    pd = pm.createData()
    cms, cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for s in ("l", "r"):
        k = model.frame_id(f"{s}_grip")
        T = ld.frame_pose(model, q, k)
        cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_6D, pm, jid[int(model.frame_body[k])],
                                      pin.SE3(np.array(model.frame_R[k]), np.array(model.frame_p[k])), 0,
                                      pin.SE3(T[:3, :3], T[:3, 3]), pin.ReferenceFrame.LOCAL)
        cms.append(cm)
        cds.append(cm.createData())
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-14, 0.0, 1)
    rng = np.random.default_rng(10)
    an = ld.loops.analyze(model, q)
    v, tau = an.W @ rng.standard_normal(an.dof), rng.standard_normal(model.nv)
    real = np.array([d for d in range(model.nv) if not model.is_virtual[model.dof_body[d]]])
    pin.constraintDynamics(pm, pd, pinocchio_q(model, q), pinocchio_v(model, v), pinocchio_v(model, tau), cms, cds, prox)
    want = [np.array(x) for x in pin.computeConstraintDynamicsDerivatives(pm, pd, cms, cds, prox)]
    D = ld.loops.constrained_dynamics_derivatives(model, q, v, tau)
    ix = np.ix_(real, real)
    got = [D.ddq_dq[ix], D.ddq_dv[ix], D.ddq_dtau[ix], D.dlambda_dq[:, real], D.dlambda_dv[:, real],
           D.dlambda_dtau[:, real]]
    for name, g, w in zip(D._fields, got, want):
        assert np.abs(g - w).max() < 1e-9 * max(1.0, np.abs(w).max()), name


# ---------------------------------------------------------------------------------------
# the compiled kernel against the NumPy implementation it replaced (kept as the reference)
def compiled_only(fn, *args):
    """fn(*args) with the NumPy implementation unreachable: the answer is the kernel's."""
    from linkdyn.constraints import derivatives as CD
    from linkdyn.loops import derivatives as LD

    def refuse(*a, **k):
        raise AssertionError("the NumPy path answered")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(CD, "_one_state", refuse)
        mp.setattr(LD, "_one_state", refuse)
        return fn(*args)


def assert_same(got, want, what, tol=1e-11):
    for name, g, w in zip(got._fields, got, want):
        assert g.shape == w.shape, f"{what}: {name} shape {g.shape} != {w.shape}"
        err = np.abs(g - w).max()
        assert err <= tol * max(1.0, np.abs(w).max()), f"{what}: {name} differs by {err:.2e}"


@pytest.mark.parametrize("kind", ["point+plane", "frame", "distance"])
def test_compiled_geometric_equals_the_numpy_reference(kind):
    """Every kind with a target, with and without Baumgarte's terms (a FrameFixed's error through
    log3 and Jl^-1), off the constraint manifold: the kernel's derivatives are the NumPy
    implementation's to round-off."""
    from linkdyn.constraints import derivatives as CD
    model = floating_tree()
    rng = np.random.default_rng(11)
    for _ in range(2):
        q = ld.random_configuration(model, rng)
        v, tau = rng.standard_normal(model.nv), 5.0 * rng.standard_normal(model.nv)
        cons = geometric_sets(model, q, rng)[kind]
        for bg in ((0.0, 0.0), (3.0, 7.0)):
            want = CD._reference(model, q, v, tau, cons, bg)
            got = compiled_only(ld.constrained_dynamics_derivatives, model, q, v, tau, cons, bg)
            assert_same(got, want, f"{kind} {bg}")


def test_compiled_loops_equal_the_numpy_reference():
    """The welded figure (no cut joint: M positive definite), opened, with Baumgarte's terms (the
    loop error through Jr^-1 of SE(3)) and without; the four-bar (a cut joint, dependent rows)
    is declined by the kernel and answered by the NumPy path."""
    from linkdyn.loops import derivatives as LD
    model, q = loop_case("figure-on-bar-weld")
    rng = np.random.default_rng(12)
    q = ld.integrate(model, q, 0.03 * rng.standard_normal(model.nv))
    v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
    for bg in ((0.0, 0.0), (2.0, 5.0)):
        want = LD.ConstrainedDynamicsDerivatives(*LD._reference(model, bg)(q, v, tau))
        got = compiled_only(ld.loops.constrained_dynamics_derivatives, model, q, v, tau, bg)
        assert_same(got, want, f"figure {bg}", tol=1e-10)
    model, q = loop_case("four-bar")
    with pytest.raises(AssertionError, match="NumPy path"):
        compiled_only(ld.loops.constrained_dynamics_derivatives, model, q, np.zeros(model.nv), np.zeros(model.nv))


@pytest.mark.slow
def test_parallel_stacks_equal_single_states():
    """A stack of 20 (the parallel compiled loop) equals its states one by one, with a state the
    kernel declines (dependent rows) answered by the NumPy path in place, and a bad state named."""
    model = floating_tree()
    rng = np.random.default_rng(13)
    n = 20
    Q = np.stack([ld.random_configuration(model, rng) for _ in range(n)])
    V, T = rng.standard_normal((n, model.nv)), rng.standard_normal((n, model.nv))
    last = model.frame_names[-1]
    for cons in ([C.FrameFixed(last), C.PointFixed(model.frame_names[3])],
                 [C.FrameFixed(last), C.PointFixed(last, point=(0.1, 0.0, 0.0))]):
        Vk = V.copy()
        if len(cons) == 2 and cons[1].frame == last:          # redundant: consistent only at J v = 0
            for k in range(n):
                J = ld.jacobian(model, Q[k], last, "local_world_aligned")
                Vk[k] = V[k] - np.linalg.pinv(J) @ (J @ V[k])
        D = ld.constrained_dynamics_derivatives(model, Q, Vk, T, cons, (1.0, 2.0))
        for k in range(n):
            one = ld.constrained_dynamics_derivatives(model, Q[k], Vk[k], T[k], cons, (1.0, 2.0))
            for a, b in zip(D, one):
                np.testing.assert_array_equal(a[k], b)
    fig, q = loop_case("figure-on-bar-weld")
    Q = np.stack([ld.integrate(fig, q, 0.02 * rng.standard_normal(fig.nv)) for _ in range(n)])
    V, T = rng.standard_normal((n, fig.nv)), rng.standard_normal(fig.nv)
    D = ld.loops.constrained_dynamics_derivatives(fig, Q, V, T, (1.0, 2.0))
    for k in (0, 7, n - 1):
        one = ld.loops.constrained_dynamics_derivatives(fig, Q[k], V[k], T, (1.0, 2.0))
        for a, b in zip(D, one):
            np.testing.assert_array_equal(a[k], b)
    Q[5, 0] = np.nan
    with pytest.raises(ValueError, match="state 5 of the stack"):
        ld.loops.constrained_dynamics_derivatives(fig, Q, V, T)
