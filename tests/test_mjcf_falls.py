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
