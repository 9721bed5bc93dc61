"""Joint damping in the time step is implicit, as in MuJoCo's Euler integrator: the step's mass
matrix is M + h D (``linkdyn.sim.timestepping.TimeStepping._implicit``).  Checked against MuJoCo's
own Euler step on the same MJCF file (to round-off: the two schemes are the same) at a damping
that explicit damping could not step (h d / m >> 2), on a tree and on a geared model (a joint
coupling: the implicit equation of each step), and on dm_control's suite files that were refused at their own time step before."""
from __future__ import annotations

import importlib.util
import pathlib
import warnings

import numpy as np
import pytest

import linkdyn as ld
from linkdyn.interop import to_mujoco

mujoco = pytest.importorskip("mujoco")

# a damped three-link arm in the air: every joint limited far from where it goes (so the time step
# runs: a limit is a unit), the third coupled to the second by a fixed tendon when `geared`
ARM = """<mujoco model="damped arm">
  <compiler angle="radian"/>
  <option timestep="{dt}" integrator="Euler"/>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="j1" type="hinge" axis="0 1 0" damping="{d}" limited="true" range="-3 3"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1" contype="0" conaffinity="0"/>
      <body name="b" pos="0.3 0 0">
        <joint name="j2" type="hinge" axis="0 1 0" damping="{d}" limited="true" range="-3 3"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5" contype="0" conaffinity="0"/>
        <body name="c" pos="0.3 0 0">
          <joint name="j3" type="hinge" axis="0 0 1" damping="{d}" limited="true" range="-3 3"/>
          <geom type="capsule" fromto="0 0 0 0.2 0 0.1" size="0.02" mass="0.2" contype="0" conaffinity="0"/>
        </body>
      </body>
    </body>
  </worldbody>
  {tendon}
</mujoco>"""
TENDON = """<equality><joint joint1="j3" joint2="j2" polycoef="0 0.5 0 0 0"/></equality>"""


def _both(xml):
    mm = mujoco.MjModel.from_xml_string(xml)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, info = ld.parse_mjcf(xml, return_info=True)
    return mm, m, info


def test_the_damped_step_is_mujocos_euler_step():
    """At h d / m_eff up to ~50 (explicit damping needs < 2) the simulation is accepted, and over 300
    steps its states are MuJoCo's Euler step's to round-off, every step."""
    dt, d = 0.01, 20.0
    mm, m, info = _both(ARM.format(dt=dt, d=d, tendon=""))
    dd = mujoco.MjData(mm)
    q0 = info.q0.copy()
    q0[0] = 0.4
    dd.qpos[:] = to_mujoco(m, q0)[0]
    sim = ld.Simulation(m, q0, dt=dt, contact_method="timestep", record_every=1)
    assert sim._uni is not None and sim._uni.damped
    worst = 0.0
    for _ in range(300):
        mujoco.mj_step(mm, dd)
        sim.step()
        qpos, qvel = to_mujoco(m, sim.q, sim.v)
        worst = max(worst, np.abs(qpos - dd.qpos).max(), dt * np.abs(qvel - dd.qvel).max())
    assert worst < 1e-10, worst
    assert abs(sim.q[0] - 0.4) > 1e-2                # it moved (gravity against the damping)
    assert sim.checks().ok, str(sim.checks())


@pytest.mark.parametrize("geared", [False, True])
def test_every_step_solves_the_implicit_equation(geared):
    """Each step's velocity solves M (v+ - v) / h + b(q, v) + D (v+ - v) = tau (no contact acts):
    ``rnea(q, v, a) + h D a = 0`` with a = (v+ - v) / h and D = d tau / d v at v = 0 (the damping,
    for the geared model through its coupling), to round-off; the compiled step (a tree) and the
    Python step (the geared model) alike."""
    dt, d = 0.01, 20.0
    _, m, info = _both(ARM.format(dt=dt, d=d, tendon=TENDON if geared else ""))
    assert (m._full is not None) == geared
    q0 = info.q0.copy()
    q0[0] = 0.4
    sim = ld.Simulation(m, q0, dt=dt, contact_method="timestep")
    z = np.zeros(m.nv)
    for _ in range(50):
        q, v = sim.q.copy(), sim.v.copy()
        sim.step()
        a = (sim.v - v) / dt
        D = ld.rnea_derivatives(m, q, z, z)[1]
        r = ld.rnea(m, q, v, a) + dt * D @ a
        assert np.abs(r).max() < 1e-10 * (1.0 + np.abs(ld.rnea(m, q, z, z)).max()), r


_spec = importlib.util.find_spec("dm_control")
SUITE = pathlib.Path(_spec.origin).parent / "suite" if _spec else None


@pytest.mark.skipif(SUITE is None, reason="dm_control (its model files) is not installed")
@pytest.mark.parametrize("name", ["finger", "quadruped", "manipulator", "stacker"])
def test_suite_models_refused_for_their_damping_run_at_their_own_step(name):
    """dm_control's finger, quadruped (geared: tendons), manipulator and stacker were refused at
    their own time step ("cannot be stable": explicit damping of 400-137 000 1/s).  Now they run
    0.5 s passive at it: every step solved, MuJoCo's detector measures no penetration beyond
    2 mm on our states, every check (the energy ledger included) ok."""
    path = SUITE / f"{name}.xml"
    mm = mujoco.MjModel.from_xml_path(str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, info = ld.load_mjcf(path, return_info=True)
        sim = ld.Simulation(m, info.q0, dt=mm.opt.timestep)
    mm.geom_margin[:] = 0.0
    mm.geom_gap[:] = 0.0
    dd = mujoco.MjData(mm)
    deepest = 0.0
    for _ in range(int(round(0.5 / mm.opt.timestep))):
        sim.step()
        dd.qpos[:] = to_mujoco(m, sim.q)[0]
        mujoco.mj_kinematics(mm, dd)
        mujoco.mj_collision(mm, dd)
        for i in range(dd.ncon):
            deepest = max(deepest, -dd.contact[i].dist)
    assert deepest <= 2e-3
    assert sim.contact_stats["lcp_residual"] <= 1e-3
    assert sim.checks().ok, str(sim.checks())
