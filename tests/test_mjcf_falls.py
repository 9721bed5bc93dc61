"""Public MJCF robots, passive, fall onto their floor under the time-stepping scheme with the
collision geometry of their files (``load_mjcf(..., contacts=False)``: geoms only): at every step
no geom sinks into another beyond 2 mm as MuJoCo's own collision detector measures on our states,
the solver solves every problem, and the checks (every step) pass.  dm_control's suite files."""
from __future__ import annotations

import importlib.util
import pathlib
import warnings

import numpy as np
import pytest

import linkdyn as ld
from linkdyn.interop import to_mujoco

mujoco = pytest.importorskip("mujoco")
_spec = importlib.util.find_spec("dm_control")
SUITE = pathlib.Path(_spec.origin).parent / "suite" if _spec else None


@pytest.mark.skipif(SUITE is None, reason="dm_control (its model files) is not installed")
@pytest.mark.parametrize("name", ["hopper", "cheetah", "walker", "humanoid"])
def test_a_passive_robot_falls_onto_its_floor_and_stays_above_it(name):
    path = SUITE / f"{name}.xml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # soft-contact parameters become hard contact
        m, info = ld.load_mjcf(path, contacts=False, return_info=True)
    mm = mujoco.MjModel.from_xml_path(str(path))
    mm.geom_margin[:] = 0.0
    mm.geom_gap[:] = 0.0
    dd = mujoco.MjData(mm)
    q0, v0 = info.q0.copy(), np.zeros(m.nv)
    first = m.joint_names[0]
    if m.joints[1].kind_name == "free":                  # dropped from 0.3 m higher, turning
        q0[2] += 0.3
        v0[3:6] = (0.5, 1.0, 0.0)
    else:                                                # planar: rootz, rootx, rooty
        q0[m.q_index("rootz")] += 0.3
        v0[m.v_slice("rooty")] = 1.0
    assert first in ("root", "rootz", "rootx", "rooty") or m.joints[1].kind_name == "free"
    sim = ld.Simulation(m, q0, v0, dt=2e-3, contact_method="timestep", record_every=25)
    deepest = 0.0
    for _ in range(400):
        sim.step()
        dd.qpos[:] = to_mujoco(m, sim.q)[0]
        mujoco.mj_forward(mm, dd)
        if dd.ncon:
            deepest = max(deepest, -float(min(dd.contact[i].dist for i in range(dd.ncon))))
    assert deepest <= 2e-3, f"{name}: MuJoCo measures {deepest:.3g} m of penetration on our states"
    assert sim.contact_stats["steps_in_contact"] > 50                # it landed (400 steps of 2 ms)
    stats = sim.contact_stats
    assert stats["lcp_residual"] <= 1e-3
    checks = sim.checks()
    assert checks.ok, str(checks)


@pytest.mark.skipif(SUITE is None, reason="dm_control (its model files) is not installed")
@pytest.mark.parametrize("seed", [3, 5, 7])
def test_every_landing_of_the_humanoid_is_solved_to_the_solvers_tolerance(seed):
    """dm_control's humanoid from its default pose with every joint moved by ~1 mrad (a seed's
    normal noise): its landing on both feet (eight redundant contacts, mu = 1) is a problem that
    Gauss-Seidel and the polish leave near 1e-3.  Seeds 3 and 5 raised ContactSolverError at
    t = 0.205 s (residual 1.2e-3 and 1.1e-3 > FAIL_TOL) and seed 7 applied an answer at 6.8e-4;
    with the conic fallback (``lcp.conic_fallback``, through the Python step) every applied answer
    met LCP_TOL, and now the compiled step's own ADMM fallback (``lcp._admm_fallback``) solves it:
    no step leaves the compiled run for the cone programs."""
    from linkdyn.sim.timestepping import LCP_TOL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, info = ld.load_mjcf(SUITE / "humanoid.xml", contacts=False, return_info=True)
    q0 = info.q0.copy()
    q0[7:] += np.random.default_rng(seed).normal(0.0, 1e-3, m.nq - 7)
    sim = ld.Simulation(m, q0, dt=0.005, contact_method="timestep", record_every=20)
    sim.run(until=0.5, progress=False)
    stats = sim.contact_stats
    assert stats["steps_in_contact"] > 40
    assert stats["lcp_fallbacks"] >= 1                            # the landing needed a fallback
    assert stats.get("conic_fallbacks", 0) == 0                   # ... and the compiled one found it
    assert stats["lcp_residual"] <= LCP_TOL
    checks = sim.checks()
    assert checks.ok, str(checks)


@pytest.mark.skipif(SUITE is None, reason="dm_control (its model files) is not installed")
def test_time_steppings_energy_ledger_residual_is_first_order_in_the_step():
    """The ledger's residual (E - E0 - the work booked) of a first-order scheme shrinks with h:
    dm_control's cheetah, passive for 2 s from its file's pose, at 10, 5 and 2.5 ms. The check's
    tolerance for time stepping (2 %, in proportion to h above 5 ms) passes at each."""
    from linkdyn.sim.checks import energy_residual
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, info = ld.load_mjcf(SUITE / "cheetah.xml", contacts=False, return_info=True)
    rel = []
    for h in (0.01, 0.005, 0.0025):
        sim = ld.Simulation(m, info.q0, dt=h, contact_method="timestep", record_every=1)
        sim.run(2.0, progress=False)
        _, res, scale = energy_residual(sim.recording)
        rel.append(np.abs(res).max() / scale)
        checks = sim.checks()
        assert checks.ok, str(checks)
    assert rel[0] > rel[1] > rel[2] and rel[0] / rel[2] > 1.8, rel      # halving h twice: about 1/4


@pytest.mark.skipif(SUITE is None, reason="dm_control (its model files) is not installed")
def test_a_limit_other_contacts_drive_a_joint_into_is_taken_into_the_step_not_projected():
    """dm_control's humanoid collapsing from its default pose at dt = 10 ms: the ground's impulses
    drive joints into limits that were not candidates of the step; the step is taken again with
    those limits in its problem, so no limit or contact is ever projected out and no overshoot is
    left at any step.  (At 5 ms this happened at about 1.05 s and 2.1 s while the joints' damping
    was explicit and the body's self-contacts had friction; they have condim 1, frictionless in
    MuJoCo and now here, and the damping is implicit.)"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, info = ld.load_mjcf(SUITE / "humanoid.xml", contacts=False, return_info=True)
        sim = ld.Simulation(m, info.q0, dt=1e-2, contact_method="timestep", record_every=20)
    sim.run(until=4.0, progress=False)
    stats, x = sim.contact_stats, sim.recording.extremes
    assert stats.get("retaken", 0) >= 1
    assert stats["projections"] == 0
    assert x["limit_violation"] <= 1e-5 and x["penetration"] <= 1e-5
    assert sim.checks().ok, str(sim.checks())


def test_gymnasium_ant_comes_to_rest_where_mujoco_puts_it():
    """gymnasium's ant, passive from its default pose (its ankles start 0.52 rad outside their
    range), with the default contact method: after 30 s it rests where MuJoCo 4.0 puts it, torso
    within 1 cm (0.4 mm: MuJoCo's soft contacts sink that far) and joints within 0.01 rad.  The
    geoms' margins (0.01 m each) are their skin, as MuJoCo's includemargin: without them the
    torso rested 2 cm low."""
    gym = importlib.util.find_spec("gymnasium")
    if gym is None:
        pytest.skip("gymnasium (its model files) is not installed")
    path = pathlib.Path(gym.origin).parent / "envs/mujoco/assets/ant.xml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, info = ld.load_mjcf(path, contacts=False, return_info=True)
        mm = mujoco.MjModel.from_xml_path(str(path))
        sim = ld.Simulation(m, info.q0, dt=mm.opt.timestep, record_every=100)
    assert sim.contact_method == "timestep" and np.all(m.geom_margin == 0.01)
    dd = mujoco.MjData(mm)
    while dd.time < 30.0:
        mujoco.mj_step(mm, dd)
    sim.run(until=30.0, progress=False)
    ours = to_mujoco(m, sim.q)[0]
    assert np.linalg.norm(ours[:3] - dd.qpos[:3]) < 1e-2
    assert np.abs(ours[7:] - dd.qpos[7:]).max() < 1e-2
    assert sim.checks().ok, str(sim.checks())


def _gym(name):
    gym = importlib.util.find_spec("gymnasium")
    return None if gym is None else pathlib.Path(gym.origin).parent / f"envs/mujoco/assets/{name}.xml"


@pytest.mark.parametrize("where,name", [("dm", "humanoid"), ("gym", "humanoid"), ("gym", "ant")])
def test_the_default_load_and_simulation_hold_every_geom_not_only_the_spheres(where, name):
    """``load_mjcf(path)`` with its defaults turns sphere and plane geoms into point contacts as
    well; the simulation must still hold the capsules, boxes and the rest.  Once it held the
    spheres only when a file had any (gymnasium's humanoid sank 34 cm into its floor with
    ``ld.Simulation(m, q0)``).  Now the default method is time stepping, every candidate pair
    the point contacts do not describe is collision geometry, and those they describe are not
    counted twice: at every step MuJoCo's own detector measures no penetration beyond 2 mm, no
    geom contact is a pair of ``point_pairs``."""
    from linkdyn.contact.geom_rows import point_pairs
    from linkdyn.contact.rows import point_plane_pairs
    path = SUITE / f"{name}.xml" if where == "dm" else _gym(name)
    if path is None or not path.exists():
        pytest.skip(f"{where}'s model files are not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, info = ld.load_mjcf(path, return_info=True)
    covered = point_pairs(m, point_plane_pairs(m))
    assert len(m.contacts) and covered.any() and not covered.all()
    twice = {tuple(p) for p in np.asarray(m.geom_pairs)[covered].tolist()}
    mm = mujoco.MjModel.from_xml_path(str(path))
    mm.geom_margin[:] = 0.0
    mm.geom_gap[:] = 0.0
    dd = mujoco.MjData(mm)
    q0 = info.q0.copy()
    q0[2] += 0.2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim = ld.Simulation(m, q0, dt=2e-3, record_every=50)
    with pytest.raises(ValueError, match="not point contacts"):
        ld.Simulation(m, q0, dt=2e-3, contact_method="events")
    deepest, geom_touch = 0.0, 0
    for _ in range(500):
        sim.step()
        assert sim.contact_method == "timestep"
        dd.qpos[:] = to_mujoco(m, sim.q)[0]
        mujoco.mj_forward(mm, dd)
        if dd.ncon:
            deepest = max(deepest, -float(min(dd.contact[i].dist for i in range(dd.ncon))))
        gc = sim.geom_contacts()
        assert not {tuple(sorted(p)) for p in gc.pair.tolist()} & twice
        geom_touch += len(gc) > 0
    assert deepest <= 2e-3, f"{name}: MuJoCo measures {deepest:.3g} m of penetration on our states"
    assert geom_touch > 100                              # the capsules landed, not only the spheres
    assert sim.checks().ok, str(sim.checks())


def test_point_pairs_are_the_sphere_plane_pairs_a_point_contact_describes():
    """A sphere geom with a point contact of the same centre and radius against a plane geom with
    the same plane is described twice; moved by 1 mm, or of another radius, it is not."""
    from linkdyn.contact.geom_rows import geom_pairs_to_detect, point_pairs
    from linkdyn.contact.rows import point_plane_pairs

    def build(shift=0.0, radius=0.05):
        b = ld.ModelBuilder("twice")
        b.add_body("ball", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 1e-3))
        b.add_geom("ball", "sphere", [0.05], (0.0, 0.0, 0.1), name="s")
        b.add_geom("ball", "capsule", (0.03, 0.1), (0.0, 0.0, -0.1), name="c")
        b.add_geom("world", "plane", (), name="floor")
        b.add_plane("ground", "world")
        b.add_contact("ball", (shift, 0.0, 0.1), radius=radius)
        return b.build()

    m = build()
    names = [f"{m.geom_names[a]}/{m.geom_names[c]}" for a, c in np.asarray(m.geom_pairs)]
    mask = point_pairs(m, point_plane_pairs(m))
    got = {"/".join(sorted(n.split("/"))): k for n, k in zip(names, mask.tolist())}
    assert got == {"floor/s": True, "c/floor": False}
    assert geom_pairs_to_detect(m, point_plane_pairs(m)).tolist() == (~mask).tolist()
    assert not point_pairs(build(shift=1e-3), point_plane_pairs(build(shift=1e-3))).any()
    assert not point_pairs(build(radius=0.06), point_plane_pairs(build(radius=0.06))).any()


@pytest.mark.skipif(SUITE is None, reason="dm_control (its model files) is not installed")
def test_the_humanoids_landing_problems_are_solved_by_both_fallbacks():
    """The problems of that landing (seed 3, taken from the Python step) that Gauss-Seidel and its
    polish leave above LCP_TOL even after 20 000 sweeps (polished every 200, as the old fallback
    did): the ADMM fallback (``lcp._admm_fallback``) solves each to round-off, and the conic
    fallback (``lcp.conic_fallback``, De Saxce's fixed point by Clarabel) to CONIC_TOL."""
    from linkdyn.contact import lcp
    from linkdyn.sim import timestepping as ts
    from linkdyn.sim.timestepping import LCP_TOL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, info = ld.load_mjcf(SUITE / "humanoid.xml", contacts=False, return_info=True)
    q0 = info.q0.copy()
    q0[7:] += np.random.default_rng(3).normal(0.0, 1e-3, m.nq - 7)
    hard, kept = [], lcp._kept_solve

    def recording(A, r, kinds, mus, normals, lam, *args):
        lam0 = lam.copy()
        out = kept(A, r, kinds, mus, normals, lam, *args)
        if out[1]:                                           # the fallback ran
            hard.append((A.copy(), r.copy(), kinds, mus, normals, lam0))
        return out
    ts._force_python = True
    try:
        sim = ld.Simulation(m, q0, dt=0.005, contact_method="timestep", record_every=20)
        sim._uni._compiled = False
        lcp._kept_solve = recording
        sim.run(until=0.25, progress=False)
    finally:
        lcp._kept_solve = kept
        ts._force_python = False
    assert sim.contact_stats.get("conic_fallbacks", 0) == 0
    solved = 0
    for A, r, kinds, mus, normals, lam0 in hard:
        lam = lam0.copy()
        lcp._pgs(A, r, kinds, mus, normals, lam, 100, 1e-12)
        start = lam.copy()
        res = lcp._residual(A, r, kinds, mus, normals, lam)
        for _ in range(100):                                 # the old fallback: sweeps and polishes
            lcp._pgs(A, r, kinds, mus, normals, lam, 200, 1e-14)
            res = lcp._polish_better(A, r, kinds, mus, normals, lam, lcp._residual(A, r, kinds, mus, normals, lam), 0, False)
        if res <= LCP_TOL:
            continue
        solved += 1
        admm = start.copy()
        assert lcp._admm_fallback(A, r, kinds, mus, normals, admm, lcp._residual(A, r, kinds, mus, normals, admm),
                                  LCP_TOL) <= 1e-12
        assert lcp.residual(A, r, kinds, mus, normals, admm) <= 1e-12
        cone, cres = lcp.conic_fallback(A, r, kinds, mus, normals, start.copy())
        assert cres <= lcp.CONIC_TOL and lcp.residual(A, r, kinds, mus, normals, cone) <= lcp.CONIC_TOL
    assert solved >= 1, "the landing had no problem that Gauss-Seidel's fallback leaves unsolved"
