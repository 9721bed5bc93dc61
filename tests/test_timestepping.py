"""Limits and contacts by time stepping (``contact_method="timestep"``): the same closed-form
physics as tests/test_contact.py to the accuracy of a first-order scheme, the compiled step
equal to the Python one, closed chains, and a humanoid against MuJoCo.  Every simulation
asserts at every recorded sample that normal forces push, friction stays inside its cone and
nothing penetrates deeper than the scheme's projection threshold."""
import numpy as np
import pytest

import linkdyn as ld
from linkdyn.sim import timestepping as ts

from test_contact import G, assert_physical, ball, block, pendulum

PEN = ts.PEN_PROJECT


def run(model, q, v=None, until=1.0, **kw):
    sim = ld.Simulation(model, q, v, dt=1e-3, contact_method="timestep", **kw)
    return sim, sim.run(until=until, progress=False)


@pytest.mark.parametrize("theta,mu", [(0.3, 0.5), (0.45, 0.3)])
def test_block_on_incline(theta, mu):
    """Sticks for tan(theta) < mu (no creep at all), otherwise slides with
    a = g (sin theta - mu cos theta): semi-implicit Euler is exact for a constant force."""
    m, q, R = block(theta, mu)
    sim, rec = run(m, q, until=0.4)
    assert_physical(rec, PEN)
    a = rec.segments[0].arrays()
    x = a["q"][:, :3] @ R[:, 0]
    if np.tan(theta) < mu:
        assert np.abs(x - x[0]).max() < 1e-12
    else:
        vx = np.einsum("ij,kj->ki", R, a["v"][:, :3]) @ R[:, 0]
        acc = np.diff(vx) / np.diff(a["t"])
        expected = G * (np.sin(theta) - mu * np.cos(theta))
        assert np.abs(acc[5:]) == pytest.approx(np.full(len(acc) - 5, expected), rel=1e-9)
    assert np.abs(np.einsum("ij,kj->ki", R, a["v"][:, :3]) @ R[:, 2]).max() < 1e-9


@pytest.mark.parametrize("e", [0.5, 0.8])
def test_ball_rebounds_to_e_squared_of_its_height(e):
    """Newton's restitution at the step of the touch: the rebound apex is e^2 h to the
    scheme's O(h) (the touch is at a step, not located inside it)."""
    m = ball(e)
    q = ld.neutral(m)
    h = 0.9
    q[2] = h + 0.1
    t_fall = np.sqrt(2 * h / G)
    sim, rec = run(m, q, until=2.2 * t_fall)
    assert_physical(rec, PEN)
    first = rec.events[0]
    assert first.kind == "impact" and abs(first.t - t_fall) <= 2e-3     # within a step or two
    a = rec.segments[0].arrays()
    after = a["t"] > first.t
    assert (a["q"][after, 2] - 0.1).max() == pytest.approx(e * e * h, rel=2e-2)


def test_inelastic_ball_comes_to_rest_without_penetration_and_rolls():
    m = ball(0.0)
    q = ld.neutral(m)
    q[2] = 0.6
    v = np.zeros(6)
    v[0] = 1.0
    sim, rec = run(m, q, v, until=1.0)
    assert_physical(rec, PEN)
    a = rec.segments[0].arrays()
    assert [e.kind for e in rec.events] == ["impact"]
    # rolling: a step of the free joint's screw motion about the contact point would dip the
    # centre by r (w h)^2 / 2; the curvature term of the bound takes it into account, so the
    # centre rolls level, neither sinking in nor pumped out
    z = a["q"][-300:, 2] - 0.1
    assert np.abs(z).max() < 1e-9 and a["unit_gap"][-300:].min() > -1e-9
    u = ld.contact.UnitCatalog(m).units(sim.q, sim.v)
    assert np.abs(u.T[0] @ sim.v).max() < 1e-9            # rolls without slipping
    assert a["unit_force"][-1, 0, 0] == pytest.approx(G, rel=1e-4)   # 1 kg rolling (the screw: r w^2 h / 2g)


def test_pendulum_stops_on_its_limit_and_stays():
    mass, length, lower = 1.5, 0.8, 0.5
    m = pendulum(mass, length, lower)
    sim, rec = run(m, np.array([1.2]), until=1.5)
    assert_physical(rec, PEN)
    a = rec.segments[0].arrays()
    assert a["q"].min() >= lower - 1e-9
    assert [e.kind for e in rec.events] == ["impact"]
    rest = a["t"] > rec.events[0].t + 0.01
    assert np.all(np.abs(a["q"][rest, 0] - lower) < 1e-12)
    assert a["unit_force"][rest, 0, 0] == pytest.approx(np.full(rest.sum(), mass * G * length * np.sin(lower)),
                                                        rel=1e-9)


def test_compiled_step_equals_the_python_step():
    """The compiled step of a tree is the Python step's computation: same state after a
    landing with friction and limits, to round-off, and the same normal forces.  (The friction
    forces of a foot's redundant contacts may split differently: a contact at the rim of its cone
    that hardly slips has a direction round-off decides, and the two steps' Delassus matrices differ
    by round-off; the motion, which the split does not change, agrees.)"""
    from linkdyn.models.mjcf_examples import humanoid_xml
    m, info = ld.parse_mjcf(humanoid_xml(drop=0.002, tilt=0.1), return_info=True)
    a = ts.TimeStepping(m)
    b = ts.TimeStepping(m)
    assert a._compiled
    b._compiled = False
    q, v = info.q0, np.zeros(m.nv)
    qa, va, qb, vb = q, v, q, v
    tau = np.zeros(m.nv)
    for k in range(60):
        qa, va, _ = a.step(qa, va, tau, 1e-3, k * 1e-3)
        qb, vb, _ = b.step(qb, vb, tau, 1e-3, k * 1e-3)
    assert a.stats["steps_in_contact"] > 30
    assert qa == pytest.approx(qb, abs=1e-9) and va == pytest.approx(vb, abs=1e-7)
    assert a.force[:, 0] == pytest.approx(b.force[:, 0], abs=1e-5)


def _humanoid_landing():
    from linkdyn.models.mjcf_examples import humanoid_xml
    m, info = ld.parse_mjcf(humanoid_xml(drop=0.02, tilt=0.1), return_info=True)
    return m, info.q0


def _box_landing():
    from linkdyn import spatial as sp
    from test_geom_timestep import box_inertia
    b = ld.ModelBuilder("box")
    b.add_body("box", "world", ld.FreeFlyer(), inertia=box_inertia(2.0, (0.1, 0.08, 0.05)))
    b.add_geom("box", "box", (0.1, 0.08, 0.05), name="box", friction=0.8)
    b.add_geom("world", "plane", (), name="ground", friction=0.8)
    m = b.build()
    q = ld.neutral(m)
    q[:3] = [0.0, 0.0, 0.12]
    q[3:7] = sp.matrix_to_quat(sp.rotx(0.3) @ sp.roty(0.2))
    return m, q


@pytest.mark.parametrize("every", [1, 3])
@pytest.mark.parametrize("scene", [_humanoid_landing, _box_landing])
def test_samples_recorded_inside_the_compiled_run_are_those_of_single_steps(scene, every):
    """``Simulation.run`` records its samples inside the compiled call (``TimeStepping.recorder``);
    they are the samples ``step()`` records one at a time through ``Simulation._record``: the
    state, the energies, the ledger, every unit's force, gap and contact point, and the geom
    contacts (a humanoid with point contacts and limits landing; a box geom landing tilted,
    its contacts appearing and vanishing)."""
    m, q = scene()
    out = []
    for stepwise in (False, True):
        sim = ld.Simulation(m, q, dt=1e-3, contact_method="timestep", record_every=every)
        if stepwise:
            for _ in range(150):
                sim.step()
        else:
            sim.run(until=0.15, progress=False)
        out.append(sim.recording.segments[0].arrays())
    a, b = out
    assert len(a["t"]) == len(b["t"]) == 150 // every + 1
    if len(m.contacts):
        assert np.abs(a["unit_force"]).max() > 0 and np.abs(a["unit_point"]).max() > 0
    else:
        assert a["geom_offset"][-1] > 10
    for key in ("t", "q", "v", "unit_gap", "geom_pair", "geom_offset", "geom_point", "geom_normal"):
        if key in a:
            assert np.array_equal(a[key], b[key]), key
    for key in ("kinetic", "potential", "work", "unit_force", "unit_point", "geom_force"):
        if key in a:
            assert np.allclose(a[key], b[key], rtol=1e-12, atol=1e-12), key


def test_bad_torques_raise_a_clear_error_from_the_compiled_step():
    m = ball(0.0)
    st = ts.TimeStepping(m)
    tau = np.zeros(6)
    tau[0] = np.nan
    with pytest.raises(ValueError, match="tau"):
        st.step(ld.neutral(m), np.zeros(6), tau, 1e-3, 0.0)


def test_a_limit_inside_a_closed_chain():
    """A four-bar with a crank stop goes through the compiled step (its loops held in the
    impulses' response, closed after every step; tests/test_loop_timestep.py compares it with
    the Python step): the loop stays closed and the stop holds."""
    m, q0 = ld.models.four_bar_with_stop(0.3)
    hi = float(q0[m.q_index("crank")]) + 0.3
    sim, rec = run(m, q0, until=1.5)
    assert sim._uni._compiled
    assert_physical(rec, PEN)
    crank = rec.segments[0].arrays()["q"][:, m.q_index("crank")]
    # time stepping holds a stop at the velocity level and pulls a step's overshoot back over the
    # next steps (BETA): here 6.5e-6 rad at the impact, decaying by 0.8 a step
    over = crank - hi
    assert over.max() <= 1e-5 and crank[-1] > hi - 1e-6 and abs(over[-1]) < 1e-9
    k = int(np.argmax(over))
    assert np.all(np.diff(over[k:k + 20]) < 0)
    assert rec.loop_error.max() < 1e-8


def test_humanoid_falls_like_mujocos():
    """The passive humanoid of ``linkdyn.models.mjcf_examples`` dropped 0.3 m with its pelvis
    pitched: it lands, stands for a moment on its straight legs, topples and comes to rest on
    the floor, in both simulators (MuJoCo's soft contacts and linkdyn's hard ones): the
    heights agree within 1 cm while it stands; the posture it comes to rest in after the topple
    is sensitive to the step (ours at 0.25 ms rests with the pelvis 4.1 cm lower than MuJoCo's
    at 1 ms; at 1 ms within 5 cm, pelvis and head): within 6 cm of MuJoCo's."""
    mujoco = pytest.importorskip("mujoco")
    from linkdyn.models.mjcf_examples import humanoid_xml
    xml = humanoid_xml(tilt=0.15)
    mm = mujoco.MjModel.from_xml_string(xml)
    dd = mujoco.MjData(mm)
    head = mm.body("head").id
    ref = []
    for i in range(3000):
        mujoco.mj_step(mm, dd)
        if i % 250 == 249:
            ref.append((dd.xpos[1, 2], dd.xpos[head, 2]))
    m, info = ld.parse_mjcf(xml, return_info=True)
    sim, rec = run(m, info.q0, until=3.0, record_every=250)
    assert_physical(rec, PEN)
    a = rec.segments[0].arrays()
    mine = np.array([(ld.frame_pose(m, q, "pelvis")[2, 3], ld.frame_pose(m, q, "head")[2, 3]) for q in a["q"][1:]])
    ref = np.array(ref)
    assert ref[0, 0] > 0.9 and ref[-1, 0] < 0.25                     # it stood, then fell
    assert np.abs(mine[:3] - ref[:3]).max() < 0.01                  # the landing and standing
    assert np.abs(mine[-3:] - ref[-3:]).max() < 0.06                 # at rest
    assert mine[-1, 0] < 0.25                                        # on the floor
    assert np.abs(sim.v).max() < 0.05                                # at rest
    E = rec.energy
    assert np.diff(E).max() < 1e-6                                   # passive: never gains energy


def test_drop_scene_lands_on_both_feet_symmetrically_and_stands():
    """``scenarios.drop_simulation()`` (the 40-DoF figure, 0.5 m, sole corners on the ground,
    the stance posture controller, time stepping): both feet land in the same step with mirror
    impulses, nothing pulls or penetrates at any step, and the figure ends standing still on
    both feet, carrying its weight with each centre of pressure inside its sole.  The sole
    corners stay out of the ground to round-off under the controller's torques, with no
    projection (before the point contacts' curvature was taken at the answer's own motion:
    3.8 um deep and 5 projections in 2 s)."""
    from linkdyn.models import scenarios as sc
    sim = sc.drop_simulation(height_above=0.5, record_every=5)
    m = sim.model
    rec = sim.run(until=1.2, progress=False)
    assert_physical(rec, PEN)
    assert rec.extremes["penetration"] <= 1e-9            # every step
    assert sim.contact_stats["projections"] == 0
    landing = [e for e in rec.events if e.kind == "impact" and "sole" in e.name][0]
    assert landing.t == pytest.approx(np.sqrt(2 * 0.5 / G), abs=3e-3)
    names = landing.units
    imp = {n: p for n, p in zip(names, landing.impulse)}
    left = [n for n in names if n.startswith("l_sole")]
    assert left and all(n.replace("l_sole", "r_sole") in imp for n in left)
    for n in left:                                      # mirror images: same normal, friction mirrored in y
        assert imp[n][0] == pytest.approx(imp[n.replace("l_sole", "r_sole")][0], rel=1e-6, abs=1e-9)
    a, unit_names = rec.segments[0].arrays(), rec.segments[0].unit_names
    assert np.abs(sim.v).max() < 1e-3 and sim.q[2] > 0.9
    weight = sum(m.inertia[i][0, 0] for i in range(m.nbody)) * G
    for side in "lr":
        idx = [k for k, n in enumerate(unit_names) if n.startswith(f"{side}_sole")]
        fn, pts = a["unit_force"][-1, idx, 0], a["unit_point"][-1, idx, :2]
        assert fn.sum() > 0.3 * weight                 # each foot carries a share
        cop = fn @ pts / fn.sum()
        assert np.all(cop >= pts.min(0) - 1e-9) and np.all(cop <= pts.max(0) + 1e-9)
    total = a["unit_force"][-1, :, 0].sum()
    assert total == pytest.approx(weight, rel=1e-3)
