"""Defects a sweep of public MJCF files found in the default simulation
(``load_mjcf(f, return_info=True)``, then ``Simulation(m, info.q0, dt=<the file's timestep>)``,
passive).

dm_control's ``third_party/ant/ant.xml`` is a fixed-base ant (its torso has no joint) whose
four legs each start with a capsule on a jointless body (welded to the torso, so to the world)
and go on with a capsule on the hip's body that shares its end sphere, centred on the hip's
axis.  MuJoCo collides the two (the parent is welded to the world, so its parent-child filter
does not apply, and the file's ``<exclude>`` names the torso, not the jointless leg body):
two contacts per leg 0.16 m deep (twice the radius) whose Jacobian is zero.  The time step
asked those rows for a separating velocity no impulse can give; the ADMM fallback divided by
their zero diagonal, the residual read the infinite answer as 0, and the first step blew up in
NaN.  Now the Simulation leaves such pairs out at construction, saying which, and the solver
never applies a non-finite answer."""
from __future__ import annotations

import importlib.util
import pathlib
import warnings

import numpy as np
import pytest

import linkdyn as ld
from linkdyn.contact import lcp
from linkdyn.interop import to_mujoco

mujoco = pytest.importorskip("mujoco")
_spec = importlib.util.find_spec("dm_control")
ROOT = pathlib.Path(_spec.origin).parent if _spec else None
needs_dm = pytest.mark.skipif(ROOT is None, reason="dm_control (its model files) is not installed")

LEGS = ("front_left", "front_right", "back_right", "back_left")


def _ant():
    path = ROOT / "third_party" / "ant" / "ant.xml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # soft-contact parameters become hard contact
        m, info = ld.load_mjcf(path, return_info=True)
    return path, m, info


@needs_dm
def test_the_ants_knuckle_pairs_are_inert_in_mujoco_and_left_out_here():
    path, m, info = _ant()
    mm = mujoco.MjModel.from_xml_path(str(path))
    dd = mujoco.MjData(mm)
    mujoco.mj_forward(mm, dd)
    # MuJoCo: the eight contacts are the four knuckle pairs, 2 r deep, and their rows are zero
    names = {(mujoco.mj_id2name(mm, mujoco.mjtObj.mjOBJ_GEOM, c.geom1),
              mujoco.mj_id2name(mm, mujoco.mjtObj.mjOBJ_GEOM, c.geom2)) for c in dd.contact[:dd.ncon]}
    assert names == {(f"{leg}_aux_geom", f"{leg}_leg_geom") for leg in LEGS}
    r = 0.08                                                  # the capsules' radius (the file's)
    assert np.allclose([c.dist for c in dd.contact[:dd.ncon]], -2 * r, atol=1e-12)
    J = np.zeros((dd.nefc, mm.nv))
    mujoco.mju_sparse2dense(J, dd.efc_J, dd.efc_J_rownnz, dd.efc_J_rowadr, dd.efc_J_colind) \
        if mujoco.mj_isSparse(mm) else J.__setitem__(slice(None), dd.efc_J.reshape(dd.nefc, mm.nv))
    assert dd.nefc > 0 and np.abs(J).max() == 0.0
    # here: the Simulation says which pairs it leaves out, and how deep they are
    with pytest.warns(UserWarning, match="no motion of the model moves") as rec:
        sim = ld.Simulation(m, info.q0, dt=mm.opt.timestep)
    msg = " ".join(str(w.message) for w in rec)
    for leg in LEGS:
        assert f"{leg}_aux_geom/{leg}_leg_geom" in msg
    inert = dict(sim._uni.inert)
    assert sorted(inert) == sorted(f"{leg}_aux_geom/{leg}_leg_geom" for leg in LEGS)
    assert np.allclose(list(inert.values()), 2 * r, atol=1e-9)
    # ... and only those: the other candidate pairs are still detected
    assert sim._uni.geoms is not None


@needs_dm
def test_the_ant_falls_onto_its_ankle_limits_as_in_mujoco_at_every_step():
    path, m, info = _ant()
    mm = mujoco.MjModel.from_xml_path(str(path))
    dd = mujoco.MjData(mm)
    h = mm.opt.timestep
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = ld.Simulation(m, info.q0, dt=h, record_every=50)
    lower = np.asarray(m.lower)
    hips = [m.q_index(f"{leg}_hip") for leg in LEGS]
    for k in range(600):                                     # 1.2 s: the ankles reach their limits
        sim.step()
        assert np.isfinite(sim.q).all() and np.isfinite(sim.v).all(), f"step {k}"
        assert np.all(sim.q >= lower - 1e-4), f"step {k}: past a limit"
        assert np.abs(sim.q[hips]).max() <= 1e-12, f"step {k}: the hips are in balance (symmetry)"
        mujoco.mj_step(mm, dd)
        if k < 400:                                          # before MuJoCo's soft limit: the same motion
            # (first-order schemes both; MuJoCo's Euler takes the damping implicitly)
            assert np.abs(to_mujoco(m, sim.q)[0] - dd.qpos).max() <= 1e-3, f"step {k}"
    ankles = [m.q_index(f"{leg}_ankle") for leg in LEGS]
    assert np.allclose(sim.q[ankles], lower[ankles], atol=1e-4)     # resting on the limit (hard)
    checks = sim.checks()
    assert checks.ok, str(checks)


@needs_dm
def test_an_inert_overlap_left_in_is_held_without_nan():
    """Without the initial state (``TimeStepping(model)``) the pairs stay in the step's problem: its
    first solve now reports the residual it has (1: the push-out demanded of rows no impulse moves),
    so the step holds the overlaps (no deeper, no push-out) instead of applying the infinite answer
    that read as residual 0, with no NaN on the way, for 50 steps."""
    from linkdyn.sim.timestepping import TimeStepping
    _, m, info = _ant()
    ts = TimeStepping(m)
    q, v, z = info.q0.copy(), np.zeros(m.nv), np.zeros(m.nv)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)        # no "invalid value" on the way
        for k in range(50):
            q, v, _ = ts.step(q, v, z, 0.002, 0.002 * k)
            assert np.isfinite(q).all() and np.isfinite(v).all(), f"step {k}"
            left = dict(ts.overlaps(q, 1e-6))
            assert {n.split("/")[0] for n in left} == {f"{leg}_aux_geom" for leg in LEGS}
            assert max(-g for g in left.values()) <= 0.16 + 1e-9, f"step {k}: deeper"
    assert ts.stats["held"] >= 1 and ts.stats["lcp_residual"] <= 1e-3


def test_a_non_finite_answer_misses_every_condition():
    """The residual of an answer with an infinite or NaN entry is infinite (it read 0: inf / inf
    scales and NaN comparisons), so no caller's tolerance accepts it."""
    A = np.array([[2.0, 0.0], [0.0, 1.0]])
    r = np.array([-1.0, 0.5])
    kind = np.array([lcp.NORMAL, lcp.NORMAL])
    mu, normal = np.zeros(2), np.arange(2)
    assert lcp.residual(A, r, kind, mu, normal, np.array([0.5, 0.0])) <= 1e-15      # the answer
    for bad in (np.inf, -np.inf, np.nan):
        assert lcp.residual(A, r, kind, mu, normal, np.array([bad, 0.0])) == np.inf


def test_rows_no_motion_moves_get_a_finite_answer_and_an_honest_residual():
    """A normal row with a zero diagonal (A's row and column zero) and a positive demand is
    infeasible: the step's solve returns a finite answer and a residual above any tolerance
    (the ADMM fallback divided by the zero diagonal and returned infinities read as residual 0)."""
    A = np.zeros((2, 2))
    A[1, 1] = 1.0
    r = np.array([-16.0, -1.0])
    kind = np.array([lcp.NORMAL, lcp.NORMAL])
    mu, normal = np.zeros(2), np.arange(2)
    lam = np.zeros(2)
    res, _ = lcp._kept_solve(A, r, kind, mu, normal, lam, 100, 1e-5, 2000, np.zeros(2, dtype=np.int64))
    assert np.isfinite(lam).all()
    assert res >= 0.5
    assert abs(lam[1] - 1.0) <= 1e-12                        # the feasible row is still solved
    lam = np.zeros(2)
    A[1, 1] = 0.0
    res, _ = lcp._kept_solve(A, r, kind, mu, normal, lam, 100, 1e-5, 2000, np.zeros(2, dtype=np.int64))
    assert np.isfinite(lam).all() and res >= 0.5


# ------------------------------------------------------------------------------------------
# small arms with joint friction (MJCF frictionloss): the ledger failed after 2 s
def _default_run(rel, steps, every=None):
    path = ROOT / rel
    mm = mujoco.MjModel.from_xml_path(str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, info = ld.load_mjcf(path, return_info=True)
        sim = ld.Simulation(m, info.q0, dt=mm.opt.timestep)
    assert np.array_equal(m.friction, mm.dof_frictionloss) and np.array_equal(m.armature, mm.dof_armature)
    for k in range(steps):
        sim.step()
        if every is not None:
            every(k, m, sim)
    return m, sim


@needs_dm
def test_the_kinova_hands_fingers_are_held_by_their_friction_at_every_step():
    """dm_control's ``third_party/kinova/jaco_hand.xml``: three fingers (frictionloss 0.1 N m,
    armature 0.1) whose weight's torque is far below their friction.  Taken explicitly, the friction
    reversed their velocity every step (2e-3 rad/s), and the ledger's residual grew by
    h f^2 (M^-1)_dd / 2 a second and a finger (3.0e-4 W measured, 3.0e-4 predicted): 1.0 of the
    0.6 mJ it counted as moved after 2 s.  Implicitly, they stay at rest."""
    def still(k, m, sim):
        assert np.abs(sim.v).max() == 0.0, f"step {k}: v = {sim.v}"
    m, sim = _default_run("third_party/kinova/jaco_hand.xml", 1000, still)
    assert m.friction.min() > 0.0
    checks = sim.checks()
    assert checks.ok, str(checks)


@needs_dm
def test_the_testing_arm_keeps_its_ledger_with_its_fingers_friction():
    """dm_control's ``mujoco/testing/assets/arm.xml``: the arm falls over 2 s while its hand's
    fingers (frictionloss 0.1) are held; the ledger residual was 0.239 of the 2.5 mJ moved (the
    fingers' chatter, 3.0e-4 W), now within the first-order tolerance at every step."""
    m, sim = _default_run("mujoco/testing/assets/arm.xml", 1000)
    assert sim.recording.segments[0].arrays()["t"].shape == (1001,)     # the ledger at every step
    checks = sim.checks()
    assert checks.ok, str(checks)


@needs_dm
def test_the_kinova_arm_held_by_its_joints_friction_stays_at_rest_at_every_step():
    """dm_control's ``third_party/kinova/jaco_arm.xml`` (frictionloss 2 and 1 N m, armature 4 and
    2) posed inside its limits where the weight's torques are below the joints' friction: at rest at
    every step, the ledger exact.  Taken explicitly the four loaded joints chattered and the ledger's
    residual grew by 3.4e-3 W (its default start, which the projection now puts where the arm falls,
    passes either way: 11.9 J move there)."""
    path = ROOT / "third_party" / "kinova" / "jaco_arm.xml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, _ = ld.load_mjcf(path, return_info=True)
    q0 = np.array([0.0, 3.0, 3.0, 0.0, 0.0, 0.0])
    assert np.all((q0 >= m.lower) & (q0 <= m.upper))
    sim = ld.Simulation(m, q0, dt=0.002)
    z = np.zeros(m.nv)
    load = np.abs(ld.rnea(m, q0, z, z))
    assert np.all(load <= m.friction) and load.max() > 0.1            # loaded, within the friction
    for k in range(1000):
        sim.step()
        assert np.abs(sim.v).max() == 0.0 and np.array_equal(sim.q, q0), f"step {k}"
    checks = sim.checks()
    assert checks.ok, str(checks)
