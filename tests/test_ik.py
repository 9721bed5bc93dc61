"""Inverse kinematics: the planar 2-link closed form against forward kinematics; the general
solver on random reachable targets of the Panda and the PUMA 560 (success rate, and every reported
success checked independently), unreachable targets, joint limits, quaternion joints, and the
null-space secondary objectives of seed 002 eqs. (4.49)-(4.51)."""
import time
from math import pi

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import linkdyn as ld
from conftest import build_tree
from linkdyn.analysis.ik import IKError, IKResult, inverse_kinematics, null_space_projector, planar_2link_ik
from linkdyn.models import dh

TOL = 1e-6


@pytest.fixture(scope="module")
def panda():
    return ld.models.example_robot("panda")


@pytest.fixture(scope="module")
def puma():
    return ld.models.puma560()


def errors(model, frame, q, target):
    """(position error, orientation angle) of frame at q, computed here (not by the solver)."""
    T = ld.frame_pose(model, q, frame)
    if np.shape(target) == (3,):
        return float(np.linalg.norm(T[:3, 3] - target)), float("nan")
    R, p = (target[:3, :3], target[:3, 3]) if np.shape(target) == (4, 4) else target
    return float(np.linalg.norm(T[:3, 3] - p)), float(Rotation.from_matrix(T[:3, :3].T @ R).magnitude())


def within_limits(model, q):
    lo, hi = np.asarray(model.lower), np.asarray(model.upper)
    return bool(np.all(q >= np.where(np.isfinite(lo), lo, -np.inf)) and np.all(q <= np.where(np.isfinite(hi), hi, np.inf)))


def check_success(model, frame, res, target, mode="pose"):
    """A reported success must really be one: recompute the errors and check the limits."""
    assert isinstance(res, IKResult)
    pe, oe = errors(model, frame, res.q, target)
    assert pe <= TOL * (1 + 1e-9), f"reported success with position error {pe:.3g}"
    if mode == "pose":
        assert oe <= TOL * (1 + 1e-6), f"reported success with orientation error {oe:.3g}"
    assert within_limits(model, res.q), "reported success outside the joint limits"
    assert res.position_error == pytest.approx(pe, abs=1e-12)


# ---------------------------------------------------------------------------------------
# planar 2-link closed form
@pytest.mark.parametrize("l1, l2", [(1.0, 1.0), (0.8, 0.5), (0.3, 0.9)])
def test_planar_2link_ik_reaches_the_target_with_both_elbows(l1, l2):
    model = dh.planar_2link(l1, l2)
    rng = np.random.default_rng(0)
    for _ in range(50):
        r = rng.uniform(abs(l1 - l2) + 1e-3, l1 + l2 - 1e-3)
        a = rng.uniform(-pi, pi)
        x, y = r * np.cos(a), r * np.sin(a)
        sols = planar_2link_ik(l1, l2, x, y)
        assert sols.shape == (2, 2)
        assert sols[0, 1] > 0 > sols[1, 1]                                  # the two elbows
        assert sols[0, 1] == pytest.approx(-sols[1, 1])
        for q in sols:
            tip = ld.frame_pose(model, q, "tool")[:3, 3]
            np.testing.assert_allclose(tip, [x, y, 0.0], atol=1e-12)
            assert np.all(np.abs(q) <= pi)


def test_planar_2link_ik_recovers_the_configuration():
    """FK of random q, then IK: one of the two solutions is q (angles modulo 2 pi)."""
    l1, l2 = 0.8, 0.5
    model = dh.planar_2link(l1, l2)
    rng = np.random.default_rng(1)
    for _ in range(50):
        q = rng.uniform(-pi, pi, 2)
        x, y = ld.frame_pose(model, q, "tool")[:2, 3]
        sols = planar_2link_ik(l1, l2, x, y)
        d = np.angle(np.exp(1j * (sols - q)))
        assert np.min(np.abs(d).max(axis=1)) < 1e-9


def test_planar_2link_ik_on_the_boundary_and_outside():
    l1, l2 = 0.8, 0.5
    # fully stretched and fully folded: one (double) solution, even with round-off beyond the circle
    for r, q2 in ((l1 + l2, 0.0), (l1 - l2, pi)):
        sols = planar_2link_ik(l1, l2, r * np.cos(0.3) * (1 + 1e-15), r * np.sin(0.3))
        np.testing.assert_allclose(np.abs(sols[:, 1]), q2, atol=1e-6)
        np.testing.assert_allclose(sols[0], sols[1] * [1, 1 if q2 == 0 else -1], atol=1e-6)
    for x, y in ((1.4, 0.0), (0.0, 1.31), (0.1, 0.1), (0.0, 0.0)):
        with pytest.raises(ValueError, match="unreachable"):
            planar_2link_ik(l1, l2, x, y)
        assert planar_2link_ik(l1, l2, x, y, raise_if_unreachable=False).shape == (0, 2)
    with pytest.raises(ValueError, match="positive"):
        planar_2link_ik(-1.0, 1.0, 0.5, 0.5)
    # l1 = l2: the base itself is reachable (folded arm)
    sols = planar_2link_ik(1.0, 1.0, 0.0, 0.0)
    np.testing.assert_allclose(ld.frame_pose(dh.planar_2link(1.0, 1.0), sols[0], "tool")[:2, 3], 0.0, atol=1e-12)


# ---------------------------------------------------------------------------------------
# random reachable targets
def sweep(model, frame, n, seed, mode="pose", **kw):
    """IK of n targets given by FK of random configurations within the limits; returns
    (success rate, mean iterations, mean time per solve [s], results)."""
    rng = np.random.default_rng(seed)
    Q = ld.random_configuration(model, rng, size=n)
    ok, its, out = 0, [], []
    t0 = time.perf_counter()
    for k in range(n):
        T = ld.frame_pose(model, Q[k], frame)
        target = T if mode == "pose" else T[:3, 3]
        res = inverse_kinematics(model, frame, target, None, mode=mode, rng=seed * 100000 + k, **kw)
        if res.success:
            check_success(model, frame, res, target, mode)
            ok += 1
        else:
            assert not res.message.startswith("converged")
        assert within_limits(model, res.q), "limits violated"
        its.append(res.iterations)
        out.append(res)
    dt = (time.perf_counter() - t0) / n
    return ok / n, float(np.mean(its)), dt, out


@pytest.mark.parametrize("robot, frame", [("panda", "panda_hand"), ("puma", "tool")])
def test_success_rate_on_random_reachable_poses(robot, frame, request):
    model = request.getfixturevalue(robot)
    assert frame in model.frame_names
    rate, its, dt, _ = sweep(model, frame, 200, seed=1)
    print(f"\n{robot} pose IK: success {rate:.1%}, mean iterations {its:.1f}, {dt * 1e3:.1f} ms per solve")
    assert rate >= 0.99


@pytest.mark.parametrize("robot, frame", [("panda", "panda_link8"), ("puma", "tool")])
def test_success_rate_on_random_reachable_positions(robot, frame, request):
    model = request.getfixturevalue(robot)
    rate, its, dt, _ = sweep(model, frame, 100, seed=2, mode="position")
    print(f"\n{robot} position IK: success {rate:.1%}, mean iterations {its:.1f}, {dt * 1e3:.1f} ms per solve")
    assert rate >= 0.99


@pytest.mark.slow
@pytest.mark.parametrize("robot, frame", [("panda", "panda_hand"), ("puma", "tool")])
def test_success_rate_big_sweep(robot, frame, request):
    model = request.getfixturevalue(robot)
    rate, its, dt, _ = sweep(model, frame, 2000, seed=3)
    print(f"\n{robot} pose IK (2000): success {rate:.2%}, mean iterations {its:.1f}, {dt * 1e3:.1f} ms per solve")
    assert rate >= 0.995


def test_target_formats_agree(panda):
    T = ld.frame_pose(panda, ld.random_configuration(panda, 5), "panda_hand")
    q0 = ld.random_configuration(panda, 6)
    a = inverse_kinematics(panda, "panda_hand", T, q0, rng=0)
    b = inverse_kinematics(panda, "panda_hand", (T[:3, :3], T[:3, 3]), q0, rng=0)
    c = inverse_kinematics(panda, "panda_hand", [T[:3, :3].tolist(), T[:3, 3].tolist()], q0, rng=0)
    assert a.success and b.success and c.success
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.q, c.q)
    p = inverse_kinematics(panda, "panda_hand", T[:3, 3], q0, mode="position", rng=0)
    assert p.success and np.isnan(p.orientation_error)
    check_success(panda, "panda_hand", p, T[:3, 3], "position")
    # a pose target in position mode: only its position counts
    pp = inverse_kinematics(panda, "panda_hand", T, q0, mode="position", rng=0)
    np.testing.assert_array_equal(pp.q, p.q)
    with pytest.raises(ValueError, match="mode='position'"):
        inverse_kinematics(panda, "panda_hand", T[:3, 3], q0)
    bad = T.copy()
    bad[:3, :3] *= 1.1
    with pytest.raises(ValueError, match="rotation"):
        inverse_kinematics(panda, "panda_hand", bad, q0)
    bad = T.copy()
    bad[3, 0] = 1.0
    with pytest.raises(ValueError, match="last row"):
        inverse_kinematics(panda, "panda_hand", bad, q0)
    with pytest.raises(KeyError):
        inverse_kinematics(panda, "no_such_frame", T, q0)
    with pytest.raises(ValueError, match="mode"):
        inverse_kinematics(panda, "panda_hand", T, q0, mode="orientation")


# ---------------------------------------------------------------------------------------
# failures are reported, never passed off as successes
def test_unreachable_position_fails_with_a_reason(panda):
    target = np.array([2.0, 0.3, 0.5])                         # the Panda reaches about 0.85 m
    res = inverse_kinematics(panda, "panda_hand", target, None, mode="position", restarts=3, rng=0)
    assert not res.success
    assert res.attempts == 4
    assert "failed" in res.message and "local minimum" in res.message
    pe, _ = errors(panda, "panda_hand", res.q, target)
    assert res.position_error == pytest.approx(pe) and pe > 1.0
    assert within_limits(panda, res.q)
    with pytest.raises(IKError, match="failed") as exc:
        inverse_kinematics(panda, "panda_hand", target, None, mode="position", restarts=1, rng=0,
                           raise_on_failure=True)
    assert exc.value.result.success is False


def test_unreachable_orientation_of_a_planar_arm():
    """A planar arm cannot tilt its tool out of the plane: the position alone is reachable."""
    model = dh.planar_2link(0.8, 0.5)
    R = ld.spatial.rotx(0.3)
    res = inverse_kinematics(model, "tool", (R, np.array([1.0, 0.4, 0.0])), None, restarts=2, rng=0)
    assert not res.success
    assert res.orientation_error >= 0.3 - 1e-9        # rotations about z cannot undo a tilt about x
    ok = inverse_kinematics(model, "tool", np.array([1.0, 0.4, 0.0]), None, mode="position", restarts=2, rng=0)
    assert ok.success
    closed = planar_2link_ik(0.8, 0.5, 1.0, 0.4)
    assert np.min(np.abs(np.angle(np.exp(1j * (closed - ok.q)))).max(axis=1)) < 1e-5


def test_iteration_limit_is_reported(puma):
    T = ld.frame_pose(puma, ld.random_configuration(puma, 9), "tool")
    res = inverse_kinematics(puma, "tool", T, None, max_iterations=1, restarts=0)
    assert not res.success and res.iterations == 1
    assert "iteration limit" in res.message and "max_iterations=1" in res.message
    with pytest.raises(IKError, match="iteration limit"):
        inverse_kinematics(puma, "tool", T, None, max_iterations=1, restarts=0, raise_on_failure=True)


def test_looser_tolerances_are_honoured(puma):
    T = ld.frame_pose(puma, ld.random_configuration(puma, 10), "tool")
    res = inverse_kinematics(puma, "tool", T, None, tol_position=1e-3, tol_orientation=1e-2, rng=0)
    assert res.success
    pe, oe = errors(puma, "tool", res.q, T)
    assert pe <= 1e-3 and oe <= 1e-2


# ---------------------------------------------------------------------------------------
# joint limits
def _limited_planar(q2_range):
    links = dh.planar_2link_links(0.8, 0.5)
    links[1].lower, links[1].upper = q2_range
    return dh.from_dh(links)


def test_limits_select_the_feasible_elbow():
    """q2 limited to [0.05, pi]: from an elbow-up start the solver must end on the elbow-down
    solution of the closed form, inside the limits."""
    model = _limited_planar((0.05, pi))
    rng = np.random.default_rng(4)
    for _ in range(20):
        r, a = rng.uniform(0.5, 1.2), rng.uniform(-pi, pi)
        target = np.array([r * np.cos(a), r * np.sin(a), 0.0])
        res = inverse_kinematics(model, "tool", target, np.array([a, -1.0]), mode="position", rng=0)
        assert res.success, res.message
        assert 0.05 <= res.q[1] <= pi
        want = planar_2link_ik(0.8, 0.5, *target[:2])[0]
        assert np.abs(np.angle(np.exp(1j * (res.q - want)))).max() < 1e-5


def test_target_reachable_only_beyond_the_limits_fails():
    model = _limited_planar((0.1, 0.5))                     # the elbow bends 0.1 .. 0.5 rad only
    x, y = ld.frame_pose(dh.planar_2link(0.8, 0.5), np.array([0.2, 1.5]), "tool")[:2, 3]
    res = inverse_kinematics(model, "tool", np.array([x, y, 0.0]), None, mode="position", restarts=5, rng=0)
    assert not res.success
    assert 0.1 <= res.q[1] <= 0.5
    assert "beyond the joint limits" in res.message


def test_initial_guess_outside_limits_is_projected(puma):
    T = ld.frame_pose(puma, ld.random_configuration(puma, 11), "tool")
    q0 = np.asarray(puma.upper) + 1.0
    res = inverse_kinematics(puma, "tool", T, q0, rng=0)
    assert res.success
    check_success(puma, "tool", res, T)


# ---------------------------------------------------------------------------------------
# quaternion joints: steps go through integrate
@pytest.mark.parametrize("name", ["chain4-spherical", "chain4-free", "mixed-floating-s3"])
def test_models_with_quaternion_joints(name):
    model = build_tree(name)
    rng = np.random.default_rng(12)
    for _ in range(5):
        T = ld.frame_pose(model, ld.random_configuration(model, rng), "tip")
        res = inverse_kinematics(model, "tip", T, ld.random_configuration(model, rng), rng=0)
        assert res.success, res.message
        check_success(model, "tip", res, T)
        for o in model._quat_starts:
            assert np.linalg.norm(res.q[o:o + 4]) == pytest.approx(1.0, abs=1e-12)


# ---------------------------------------------------------------------------------------
# redundancy: the null-space projector (seed 002 eqs. (4.49)-(4.51))
def test_null_space_raises_manipulability_without_moving_the_hand(panda):
    """Start *at* a solution (target = FK(q0)): without a secondary objective nothing moves;
    with secondary="manipulability" the arm moves inside the null space: same hand pose, higher w."""
    rng = np.random.default_rng(13)
    for _ in range(3):
        q0 = ld.random_configuration(panda, rng)
        T = ld.frame_pose(panda, q0, "panda_hand")
        plain = inverse_kinematics(panda, "panda_hand", T, q0)
        assert plain.success and plain.iterations == 0
        np.testing.assert_array_equal(plain.q, q0)
        res = inverse_kinematics(panda, "panda_hand", T, q0, secondary="manipulability")
        check_success(panda, "panda_hand", res, T)
        w0 = ld.manipulability(panda, q0, "panda_hand")
        w1 = ld.manipulability(panda, res.q, "panda_hand")
        assert w1 > 1.01 * w0, (w0, w1)
        assert res.objective == pytest.approx(w1)
        assert np.linalg.norm(res.q - q0) > 1e-2               # it really moved


def test_secondary_manipulability_beats_plain_solution(panda):
    rng = np.random.default_rng(14)
    for _ in range(3):
        T = ld.frame_pose(panda, ld.random_configuration(panda, rng), "panda_hand")
        q0 = ld.random_configuration(panda, rng)
        plain = inverse_kinematics(panda, "panda_hand", T, q0, rng=0)
        best = inverse_kinematics(panda, "panda_hand", T, q0, rng=0, secondary="manipulability")
        assert plain.success and best.success
        check_success(panda, "panda_hand", best, T)
        assert ld.manipulability(panda, best.q, "panda_hand") > ld.manipulability(panda, plain.q, "panda_hand")


def test_joint_centering_on_the_puma_wrist(puma):
    """Position task of the PUMA's wrist centre (the tool frame has d6 = 0): joints 4-6 span the
    null space, so centring brings them to the middle of their ranges exactly (30, 0 and 0
    degrees), and joints 1-3 stay where they were."""
    mid = 0.5 * (np.asarray(puma.lower) + np.asarray(puma.upper))
    rng = np.random.default_rng(15)
    for _ in range(3):
        q0 = ld.random_configuration(puma, rng)
        p = ld.frame_pose(puma, q0, "tool")[:3, 3]
        res = inverse_kinematics(puma, "tool", p, q0, mode="position", secondary="joint_centering")
        check_success(puma, "tool", res, p, "position")
        np.testing.assert_allclose(res.q[3:], mid[3:], atol=1e-4)
        np.testing.assert_allclose(res.q[:3], q0[:3], atol=1e-6)


def test_joint_centering_on_the_panda(panda):
    """The arm has a one-dimensional self-motion, the fingers do not move the hand at all: centring
    brings the fingers to mid-range and moves the arm along its self-motion towards the centre."""
    lo, hi = np.asarray(panda.lower), np.asarray(panda.upper)
    centre = 0.5 * (lo + hi)
    rng = np.random.default_rng(16)
    for _ in range(3):
        q0 = ld.random_configuration(panda, rng)
        T = ld.frame_pose(panda, q0, "panda_hand")
        res = inverse_kinematics(panda, "panda_hand", T, q0, secondary="joint_centering")
        check_success(panda, "panda_hand", res, T)
        d0, d1 = np.sum((q0[:7] - centre[:7]) ** 2), np.sum((res.q[:7] - centre[:7]) ** 2)
        assert d1 < d0 - 1e-2, (d0, d1)
        np.testing.assert_allclose(res.q[7:], centre[7:], atol=1e-5)
        assert res.objective == pytest.approx(-0.5 * np.sum((res.q - centre) ** 2))


def test_user_gradient(panda):
    """A callable gradient pulling joint 1 towards +1 rad: joint 1 ends nearer to 1, pose kept."""
    rng = np.random.default_rng(17)
    q0 = ld.random_configuration(panda, rng)
    q0[0] = -1.0
    T = ld.frame_pose(panda, q0, "panda_hand")
    calls = []

    def grad(q):
        calls.append(q)
        g = np.zeros(panda.nv)
        g[0] = 1.0 - q[0]
        return g
    res = inverse_kinematics(panda, "panda_hand", T, q0, secondary=grad)
    check_success(panda, "panda_hand", res, T)
    assert calls and res.q[0] > -0.5, res.q[0]
    with pytest.raises(ValueError, match="gradient of shape"):
        inverse_kinematics(panda, "panda_hand", T, q0, secondary=lambda q: np.zeros(3))
    with pytest.raises(ValueError, match="secondary"):
        inverse_kinematics(panda, "panda_hand", T, q0, secondary="speed")


def test_null_space_projector_properties(panda):
    """N = I - J^+ J (eqs. (4.50)-(4.51)): J N = 0, N^2 = N = N^T, N xi = xi on the null space;
    exact also at a singularity (rank-deficient J)."""
    rng = np.random.default_rng(18)
    stretched = dh.planar_2link(0.8, 0.5)
    cases = [ld.jacobian(panda, ld.random_configuration(panda, rng), "panda_hand", "local"),
             ld.jacobian(stretched, np.array([0.3, 0.0]), "tool", "local_world_aligned")[:2],   # rank 1
             rng.standard_normal((3, 7))]
    for J in cases:
        N = null_space_projector(J)
        n = J.shape[1]
        rank = np.linalg.matrix_rank(J, tol=1e-9)
        np.testing.assert_allclose(J @ N, 0.0, atol=1e-12)
        np.testing.assert_allclose(N @ N, N, atol=1e-12)
        np.testing.assert_allclose(N, N.T, atol=1e-12)
        assert np.trace(N) == pytest.approx(n - rank)
        _, _, Vt = np.linalg.svd(J)
        for xi in Vt[rank:]:
            np.testing.assert_allclose(N @ xi, xi, atol=1e-12)
    with pytest.raises(ValueError, match="2-D"):
        null_space_projector(np.zeros(3))


def test_null_space_motion_keeps_the_hand_pose_to_second_order(panda):
    """q(t) = integrate(q, N xi t): the hand pose changes by O(t^2) only (x' = J N xi = 0)."""
    rng = np.random.default_rng(19)
    q = ld.random_configuration(panda, rng)
    J = ld.jacobian(panda, q, "panda_hand", "local")
    xi = rng.standard_normal(panda.nv)
    T0 = ld.frame_pose(panda, q, "panda_hand")

    def drift(v, t):
        T = ld.frame_pose(panda, ld.integrate(panda, q, v, t), "panda_hand")
        return np.linalg.norm(ld.spatial.log6(T0[:3, :3].T @ T[:3, :3], T0[:3, :3].T @ (T[:3, 3] - T0[:3, 3])))
    v = null_space_projector(J) @ xi
    assert np.linalg.norm(v) > 0.1
    d1, d2 = drift(v, 1e-3), drift(v, 1e-4)
    assert d1 < 1e-5 and d2 < d1 / 50                           # second order: / 100 for t / 10
    assert drift(xi, 1e-3) > 1e-4                               # an unprojected step moves the hand


def test_final_check_catches_a_wrong_answer(panda, monkeypatch):
    """The result is verified on the returned q itself: a (simulated) faulty null-space phase that
    hands back a configuration off the target must give success=False, not a silent wrong answer."""
    import linkdyn.analysis.ik as ik_module
    q0 = ld.random_configuration(panda, 20)
    T = ld.frame_pose(panda, q0, "panda_hand")

    def faulty(prob, obj, q, r, pe, oe, *args):
        q = q.copy()
        q[0] += 0.01
        return q, r, pe, oe, 1, 1, "a simulated fault"
    monkeypatch.setattr(ik_module, "_null_space", faulty)
    res = inverse_kinematics(panda, "panda_hand", T, q0, secondary="joint_centering")
    assert not res.success and "internal check failed" in res.message
    assert res.position_error == pytest.approx(errors(panda, "panda_hand", res.q, T)[0]) and res.position_error > 1e-4
    with pytest.raises(IKError):
        inverse_kinematics(panda, "panda_hand", T, q0, secondary="joint_centering", raise_on_failure=True)
