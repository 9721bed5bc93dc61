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
    """dm_control's humanoid collapsing from its default pose: at about 1.05 s and 2.1 s the
    ground's impulses drive joints into limits that were not candidates of the step (up to 0.01
    rad past them); the step is taken again with those limits in its problem, so no limit or
    contact is ever projected out and no overshoot is left at any step."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, info = ld.load_mjcf(SUITE / "humanoid.xml", contacts=False, return_info=True)
        sim = ld.Simulation(m, info.q0, dt=5e-3, contact_method="timestep", record_every=20)
    sim.run(until=2.3, progress=False)
    stats, x = sim.contact_stats, sim.recording.extremes
    assert stats.get("retaken", 0) >= 2
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
