"""Bodies with collision geometry (ModelBuilder.add_geom) touch in the time-stepping scheme
(``contact_method="timestep"``): closed-form physics with geoms only (a sphere or a box on a
free body, a plane on the world), dt = 1 ms, asserted at every step (``record_every=1``, and the
running extremes of ``Recording.extremes``, which see the geom contacts of every step).

* a box slides down an incline with a = g (sin th - mu cos th) and sticks, without creeping,
  when tan th < mu;
* a sphere dropped with restitution e rebounds to e^2 h and lands without penetrating;
* a box dropped tilted comes to rest flat on 4 contacts whose normal forces carry m g, and the
  mechanical energy never rises;
* two spheres collide head-on: momentum kept to round-off, kinetic energy for e = 1, one common
  velocity for e = 0;
* three stacked boxes rest where MuJoCo puts them;
* a sphere rolling on flat ground keeps its kinetic energy (the free joint's step on R^3 x SO(3)).
"""
import numpy as np
import pytest

import linkdyn as ld
from linkdyn import spatial as sp
from linkdyn.sim import timestepping as ts

G = 9.81
DT = 1e-3


def sim_run(model, q, v=None, until=1.0):
    sim = ld.Simulation(model, q, v, dt=DT, contact_method="timestep")
    rec = sim.run(until=until, progress=False)
    return sim, rec, rec.segments[0].arrays()


def assert_checks(sim, pen=1e-6):
    """Every step: no pull, friction inside its cone, no penetration beyond pen."""
    x = sim.recording.extremes
    assert x["steps"] == len(sim.recording.segments[0].t) - 1 and x["force_steps"] == x["steps"]
    assert x["min_normal_force"] >= -1e-9
    assert x["max_cone_ratio"] <= 1.0 + 1e-6
    assert x["penetration"] <= pen, f"penetration {x['penetration']:.3g}"


def box_inertia(m, half):
    hx, hy, hz = half
    return ld.Inertia(m, [0, 0, 0], np.diag([hy * hy + hz * hz, hx * hx + hz * hz, hx * hx + hy * hy]) * m / 3.0)


def ball_inertia(m, r):
    return ld.Inertia(m, [0, 0, 0], np.eye(3) * 0.4 * m * r * r)


def incline(theta, mu, half=(0.1, 0.08, 0.05), mass=2.0):
    """A box geom on a free body resting on a plane geom tilted by theta about y."""
    b = ld.ModelBuilder("incline")
    b.add_body("box", "world", ld.FreeFlyer(), inertia=box_inertia(mass, half))
    b.add_geom("box", "box", half, name="box", friction=mu)
    R = sp.roty(theta)
    b.add_geom("world", "plane", (), placement=(R, np.zeros(3)), name="incline", friction=mu)
    m = b.build()
    q = ld.neutral(m)
    q[:3] = R @ np.array([0.0, 0.0, half[2]])
    q[3:7] = sp.matrix_to_quat(R)
    return m, q, R


def ball_on_ground(e=0.0, mu=0.5, r=0.1, mass=1.0):
    b = ld.ModelBuilder("ball")
    b.add_body("ball", "world", ld.FreeFlyer(), inertia=ball_inertia(mass, r))
    b.add_geom("ball", "sphere", [r], name="ball", friction=mu, restitution=e)
    b.add_geom("world", "plane", (), name="ground", friction=mu, restitution=e)
    return b.build()


@pytest.mark.parametrize("theta,mu", [(0.3, 0.5), (0.45, 0.3)])
def test_box_on_incline_slides_with_coulombs_acceleration_or_sticks(theta, mu):
    """Sliding: the plane's 4 contacts with the box's face share the friction; their sum is
    mu times the normal force, so a = g (sin th - mu cos th) at every step (semi-implicit Euler
    is exact for a constant force).  Sticking (tan th < mu): the box does not move at all."""
    m, q, R = incline(theta, mu)
    sim, rec, a = sim_run(m, q, until=0.3)
    assert_checks(sim)
    assert len(sim._uni.geom_names) == 4 and np.all(sim._uni.geom_force[:, 0] > 0)
    x = a["q"][:, :3] @ R[:, 0]
    vx = np.einsum("ij,kj->ki", R, a["v"][:, :3]) @ R[:, 0]          # the box keeps the plane's orientation
    if np.tan(theta) < mu:
        assert np.abs(x - x[0]).max() < 1e-12
        assert np.abs(a["v"]).max() < 1e-12
    else:
        acc = np.diff(vx) / np.diff(a["t"])
        expected = G * (np.sin(theta) - mu * np.cos(theta))
        assert np.abs(acc / expected - 1.0).max() < 1e-6
    # it stays on the plane: no normal velocity, no tumbling
    assert np.abs(np.einsum("ij,kj->ki", R, a["v"][:, :3]) @ R[:, 2]).max() < 1e-9
    assert np.abs(a["v"][:, 3:]).max() < 1e-9


@pytest.mark.parametrize("dt", [DT, 5e-3])
@pytest.mark.parametrize("e", [0.3, 0.5, 0.8])
def test_dropped_sphere_rebounds_to_e_squared_of_its_height(e, dt):
    """A ball dropped 0.9 m with restitution e: the impact step leaves it with e^2 of its energy
    (Newton's law at the touch inside the step, ``_timestep_kernel.restitution_bound``; taken at
    the step's start, the rebound began up to |v| h above the ground: +1.4 % for e = 0.5 at 1 ms,
    +21 % for e = 0.3 at 5 ms), and at 1 ms it rises to e^2 h within 1 % (the rest is the
    semi-implicit Euler flight's own loss, g^2 h^2 / 2 per unit mass and step)."""
    m = ball_on_ground(e)
    h, r = 0.9, 0.1
    q = ld.neutral(m)
    q[2] = h + r
    sim = ld.Simulation(m, q, dt=dt, contact_method="timestep")
    rec = sim.run(until=2.0 * np.sqrt(2 * h / G), progress=False)
    a = rec.segments[0].arrays()
    assert_checks(sim, pen=1e-6)
    first = rec.events[0]
    assert first.kind == "impact" and first.name == "ground/ball"
    assert abs(first.t - np.sqrt(2 * h / G)) <= 2 * dt
    E = a["kinetic"] + G * (a["q"][:, 2] - r)            # unit mass, zero at the touch
    k = int(np.searchsorted(a["t"], first.t))
    assert E[k + 1] == pytest.approx(e * e * E[k - 1], rel=2e-4 if dt == DT else 1e-3)
    if dt == DT:
        apex = (a["q"][a["t"] > first.t, 2] - r).max()
        assert apex == pytest.approx(e * e * h, rel=1e-2)


def test_box_dropped_tilted_comes_to_rest_flat_on_four_contacts():
    """Lowest corner 1 mm above the ground, tilted by a few degrees: it lands on a corner, tips
    onto its face and rests there on 4 contacts whose normal forces sum to m g; the mechanical
    energy K + U never rises from one step to the next (the contacts are inelastic, the free
    motion's semi-implicit Euler loses g^2 h^2 / 2 per unit mass and step)."""
    half, mass = (0.1, 0.08, 0.05), 2.0
    b = ld.ModelBuilder("box")
    b.add_body("box", "world", ld.FreeFlyer(), inertia=box_inertia(mass, half))
    b.add_geom("box", "box", half, name="box", friction=0.8)
    b.add_geom("world", "plane", (), name="ground", friction=0.8)
    m = b.build()
    R = sp.rotx(0.06) @ sp.roty(-0.04)
    corners = np.array([[sx * half[0], sy * half[1], sz * half[2]] for sx in (-1, 1) for sy in (-1, 1)
                        for sz in (-1, 1)]) @ R.T
    q = ld.neutral(m)
    q[2] = 1e-3 - corners[:, 2].min()
    q[3:7] = sp.matrix_to_quat(R)
    sim, rec, a = sim_run(m, q, until=1.5)
    assert_checks(sim)
    E = a["kinetic"] + a["potential"]
    assert np.diff(E).max() <= 1e-12 * np.abs(E).max()
    uni = sim._uni
    assert uni.geom_names == ["ground/box"] * 4
    f = uni.geom_force
    assert np.all(f[:, 0] > 0)
    assert f[:, 0].sum() == pytest.approx(mass * G, rel=1e-9)
    assert np.abs(a["v"][-1]).max() < 1e-9
    Rz = sp.quat_to_matrix(sim.q[3:7])[:, 2]
    assert Rz[2] == pytest.approx(1.0, abs=1e-12)
    assert sim.q[2] == pytest.approx(half[2], abs=1e-6)


def two_spheres(e, r1=0.1, r2=0.15, m1=1.0, m2=2.0):
    b = ld.ModelBuilder("spheres", gravity=[0, 0, 0])
    b.add_body("a", "world", ld.FreeFlyer(), inertia=ball_inertia(m1, r1))
    b.add_geom("a", "sphere", [r1], name="a", friction=0.5, restitution=e)
    b.add_body("b", "world", ld.FreeFlyer(), inertia=ball_inertia(m2, r2))
    b.add_geom("b", "sphere", [r2], name="b", friction=0.5, restitution=e)
    m = b.build()
    q = ld.neutral(m)
    q[0], q[7] = -0.3, 0.3
    v = np.zeros(12)
    v[0], v[6] = 1.0, -0.5
    return m, q, v, (m1, m2)


@pytest.mark.parametrize("e", [1.0, 0.0])
def test_two_spheres_collide_head_on(e):
    m, q, v, (m1, m2) = two_spheres(e)
    sim, rec, a = sim_run(m, q, v, until=0.6)
    assert_checks(sim)
    # one impact; for e = 0 the speculative contact stops the approach at the touch in two steps
    assert {ev.name for ev in rec.events} == {"a/b"} and len(rec.events) <= (1 if e == 1.0 else 2)

    def momentum(qq, vv):
        return m1 * sp.quat_to_matrix(qq[3:7]) @ vv[:3] + m2 * sp.quat_to_matrix(qq[10:14]) @ vv[6:9]
    p = np.array([momentum(qq, vv) for qq, vv in zip(a["q"], a["v"])])
    assert np.abs(p - p[0]).max() < 1e-14
    K = a["kinetic"]
    if e == 1.0:
        assert np.abs(K / K[0] - 1.0).max() < 1e-6
    else:
        assert a["v"][-1, 0] == pytest.approx(a["v"][-1, 6], abs=1e-12)
        assert a["v"][-1, 0] == pytest.approx(p[0][0] / (m1 + m2), abs=1e-12)
    assert np.abs(a["v"][:, [1, 2, 3, 4, 5, 7, 8, 9, 10, 11]]).max() < 1e-12


STACK = [(0.12, 0.1, 0.05, 1.0), (0.1, 0.08, 0.04, 0.7), (0.07, 0.06, 0.03, 0.4)]    # half-extents, mass


def stack_mjcf(z):
    bodies = "".join(f"""
    <body name="b{i}" pos="0 0 {zi}">
      <freejoint/>
      <geom name="g{i}" type="box" size="{hx} {hy} {hz}" mass="{mm}" friction="0.8 0 0"/>
    </body>""" for i, ((hx, hy, hz, mm), zi) in enumerate(zip(STACK, z)))
    return f"""<mujoco><option timestep="0.001"/>
  <worldbody><geom name="ground" type="plane" size="0 0 1" friction="0.8 0 0"/>{bodies}
  </worldbody></mujoco>"""


def test_three_stacked_boxes_rest_where_mujoco_puts_them():
    """Three boxes dropped 1 mm apart onto each other and the ground: no overlap beyond 1 mm at
    any step, at rest, and at MuJoCo's heights within 1 cm (MuJoCo's soft contacts sink by
    millimetres; ours not at all: each box rests on the one below to 1e-6 m)."""
    mujoco = pytest.importorskip("mujoco")
    b = ld.ModelBuilder("stack")
    z, top = [], 0.0
    for i, (hx, hy, hz, mm) in enumerate(STACK):
        b.add_body(f"b{i}", "world", ld.FreeFlyer(), inertia=box_inertia(mm, (hx, hy, hz)))
        b.add_geom(f"b{i}", "box", (hx, hy, hz), name=f"g{i}", friction=0.8)
        z.append(top + 1e-3 + hz)
        top = z[-1] + hz
    b.add_geom("world", "plane", (), name="ground", friction=0.8)
    m = b.build()
    q = ld.neutral(m)
    for i, zi in enumerate(z):
        q[7 * i + 2] = zi
    sim, rec, a = sim_run(m, q, until=1.0)
    assert_checks(sim, pen=1e-3)
    assert sim.recording.extremes["penetration"] <= 1e-6
    assert np.abs(a["v"][-1]).max() < 1e-6
    ours = sim.q[2::7]
    rest = np.cumsum([0.0] + [2 * s[2] for s in STACK])[:-1] + [s[2] for s in STACK]
    assert ours == pytest.approx(rest, abs=1e-6)
    mj = mujoco.MjModel.from_xml_string(stack_mjcf(z))
    d = mujoco.MjData(mj)
    for _ in range(1000):
        mujoco.mj_step(mj, d)
    assert np.abs(d.qvel).max() < 1e-3
    theirs = d.qpos[2::7]
    assert ours == pytest.approx(theirs, abs=1e-2)


def test_sphere_rolling_on_flat_ground_keeps_its_energy():
    """At 2 m/s, rolling without slipping: the kinetic energy is kept to 1e-4 per second (it is
    kept to round-off).  With the free joint moved by SE(3)'s exponential and its body-frame
    velocity's Coriolis term -w x v taken by explicit Euler, the step gained (w h)^2 of the
    translational energy per step, +40 %/s here (w = 20 rad/s); on R^3 x SO(3) the centre moves
    straight and the velocity turns exactly with the body."""
    r = 0.1
    m = ball_on_ground(0.0, r=r)
    q = ld.neutral(m)
    q[2] = r
    v = np.zeros(6)
    v[0], v[4] = 2.0, 2.0 / r
    sim, rec, a = sim_run(m, q, v, until=1.0)
    assert_checks(sim)
    K = a["kinetic"]
    assert np.all(np.abs(K / K[0] - 1.0) <= 1e-4 * a["t"] + 1e-12)
    assert np.abs(a["q"][:, 2] - r).max() < 1e-9
    assert a["q"][-1, 0] == pytest.approx(2.0, rel=1e-9)


def _tilted_box_drop():
    half = (0.1, 0.08, 0.05)
    b = ld.ModelBuilder("box")
    b.add_body("box", "world", ld.FreeFlyer(), inertia=box_inertia(2.0, half))
    b.add_geom("box", "box", half, name="box", friction=0.8)
    b.add_body("ball", "world", ld.FreeFlyer(), inertia=ball_inertia(0.5, 0.04))
    b.add_geom("ball", "sphere", [0.04], name="ball", friction=0.8)
    b.add_geom("world", "plane", (), name="ground", friction=0.8)
    m = b.build()
    q = ld.neutral(m)
    q[2], q[3:7] = 0.08, sp.matrix_to_quat(sp.rotx(0.3) @ sp.roty(-0.2))
    q[7:10] = (0.02, 0.0, 0.25)                   # the ball falls onto the box, then rolls off it
    v = np.zeros(12)
    v[6], v[9:12] = 0.3, (1.0, -2.0, 0.5)
    return m, q, v


def test_the_compiled_step_takes_the_python_steps_geom_contacts():
    """A box dropped tilted with a ball falling onto it (plane-box, plane-sphere, sphere-box
    contacts appearing and vanishing): the compiled step (one call per step, detection, rows and
    solve inside) and the Python step make the same states, step by step, to round-off where
    both solvers end in the same polished active set."""
    m, q, v = _tilted_box_drop()
    out = []
    for compiled in (True, False):
        stepper = ts.TimeStepping(m)
        assert stepper._compiled and stepper.geoms is not None
        stepper._compiled = compiled
        qq, vv, states, ncon = q.copy(), v.copy(), [], 0
        for k in range(400):
            qq, vv, _ = stepper.step(qq, vv, np.zeros(m.nv), DT, k * DT)
            states.append(np.concatenate([qq, vv]))
            ncon += len(stepper.geom_names)
        out.append((np.array(states), ncon, stepper.work))
    (a, na, wa), (b, nb, wb) = out
    assert na == nb and na > 400                            # the same contacts, several at a time
    assert np.abs(a - b).max() < 1e-9, np.abs(a - b).max()
    assert wa == pytest.approx(wb, abs=1e-8)


def _struck_lever():
    """A light hanging rod (0.5 m, 50 g, on a hinge) struck 2 cm below its hinge by a heavy ball
    at 2 m/s (e = 1): its tip swings at ~15 times the ball's speed, into a box 1.2 cm from it that no
    body's free motion came near (no gravity)."""
    b = ld.ModelBuilder("lever", gravity=(0.0, 0.0, 0.0))
    b.add_body("rod", "world", ld.Revolute("y"), inertia=ld.Inertia(0.05, [0, 0, -0.25], np.diag([1e-3, 1e-3, 1e-5])))
    b.add_geom("rod", "capsule", [0.01, 0.25], [0.0, 0.0, -0.25], name="rod", restitution=1.0)
    b.add_body("ball", "world", ld.FreeFlyer(), inertia=ball_inertia(5.0, 0.03))
    b.add_geom("ball", "sphere", [0.03], name="ball", restitution=1.0)
    b.add_body("block", "world", ld.FreeFlyer(), inertia=box_inertia(1.0, (0.05, 0.05, 0.05)))
    b.add_geom("block", "box", (0.05, 0.05, 0.05), name="block")
    m = b.build()
    q = ld.neutral(m)
    q[1:4] = (-0.0415, 0.0, -0.02)
    q[8:11] = (0.072, 0.0, -0.47)
    v = np.zeros(m.nv)
    v[1] = 2.0
    return m, q, v


@pytest.mark.parametrize("scene", ["drop", "fast drop", "lever"])
def test_the_steps_smallest_distance_is_the_whole_detections(scene):
    """The compiled step's smallest geom distance at its end (the penetration it reports and
    projects) is the whole collision pipeline's at that configuration, at every step: where no pair
    its detection at the start left out can have come within reach, it looks at the step's own pairs
    only.  A box dropped tilted with a ball thrown onto it (at 1 and 8 m/s: impacts, contacts
    appearing and vanishing), and a struck lever whose tip enters a box in one step."""
    if scene == "lever":
        m, q, v = _struck_lever()
    else:
        m, q, v = _tilted_box_drop()
        v[9:12] *= 8.0 if scene == "fast drop" else 1.0
    stepper = ts.TimeStepping(m)
    qq, vv, touching, swung = q.copy(), v.copy(), 0, False
    for k in range(300):
        qq, vv, _ = stepper.step(qq, vv, np.zeros(m.nv), DT, k * DT)
        q_end, gmin = stepper._geom_end
        assert q_end is qq or np.array_equal(q_end, qq)
        assert gmin == stepper._geom_min(qq), k
        touching += np.isfinite(gmin)
        if scene == "lever":
            assert gmin > -1e-6                             # the tip's entry caught and projected out
            swung = swung or vv[0] > 0.0                    # ... and the rod bounced off the box
    assert swung if scene == "lever" else touching > 100


@pytest.mark.parametrize("per_run", [ts.IMPACTS_PER_RUN, 1])
def test_a_run_of_many_compiled_steps_books_what_single_steps_book(per_run, monkeypatch):
    """``Simulation.run`` takes the steps of a passive tree many at a time in one compiled call
    (``TimeStepping.run``; it goes on through impacts, whose events it builds after the call, and
    ends after IMPACTS_PER_RUN of them: 1 too, as before) and those it cannot (projections, answers
    above the solver's tolerance) one at a time; stepping one by one gives the same states, ledger,
    events and running extremes."""
    monkeypatch.setattr(ts, "IMPACTS_PER_RUN", per_run)
    m, q, v = _tilted_box_drop()
    sims = [ld.Simulation(m, q, v, dt=DT, contact_method="timestep", record_every=7) for _ in range(2)]
    single, step = [], sims[0].step
    sims[0].step = lambda *a: (single.append(sims[0].t), step(*a))
    calls, run = [], sims[0]._uni.run
    sims[0]._uni.run = lambda *a, **k: (calls.append(1), run(*a, **k))[1]
    sims[0].run(until=0.6, progress=False)
    impacts = sims[0]._uni.stats["impacts"]
    if per_run == 1:                    # each impact ends its call
        assert len(calls) >= impacts + 1
    else:                               # one call per recorded chunk, the impacts inside them
        assert len(calls) <= len(single) + 2 < impacts
    # every step was taken by the compiled run, but those whose answer it left above LCP_TOL: the
    # Python step's conic fallback takes them (one here: 1.7e-5 -> 9e-11)
    assert len(single) <= sims[0]._uni.stats.get("conic_fallbacks", 0) <= 2
    for _ in range(600):
        sims[1].step()
    sims[1]._record()
    (a, b) = (s.recording for s in sims)
    assert len(a.events) == len(b.events) >= 2
    assert [e.t for e in a.events] == [e.t for e in b.events]
    for ea, eb in zip(a.events, b.events):          # an impact is taken inside the compiled run
        assert (ea.kind, ea.name, ea.units) == (eb.kind, eb.name, eb.units)
        assert np.abs(ea.impulse - eb.impulse).max() < 1e-12
        assert ea.kinetic_before == pytest.approx(eb.kinetic_before, abs=1e-12)
        assert ea.kinetic_after == pytest.approx(eb.kinetic_after, abs=1e-12)
    sa, sb = a.segments[0].arrays(), b.segments[0].arrays()
    assert np.array_equal(sa["t"], sb["t"])
    assert np.abs(sa["q"] - sb["q"]).max() < 1e-12 and np.abs(sa["v"] - sb["v"]).max() < 1e-12
    assert np.abs(sa["work"] - sb["work"]).max() < 1e-12
    xa, xb = a.extremes, b.extremes
    assert xa["steps"] == xb["steps"] == 600 and xa["force_steps"] == xb["force_steps"]
    for key in ("limit_violation", "penetration", "min_normal_force", "max_cone_ratio", "max_step_contact_work"):
        assert xa[key] == pytest.approx(xb[key], abs=1e-12), key
    ua, ub = sims[0]._uni.stats, sims[1]._uni.stats
    assert ua["steps_in_contact"] == ub["steps_in_contact"] > 300
    assert ua["impacts"] == ub["impacts"]


def test_the_default_method_holds_a_model_whose_contacts_are_geoms():
    """A ball geom dropped onto a plane geom with the default contact method: "auto" picks time
    stepping (the event scheme has no collision geometry) and the ball rests on the plane; asking
    for the event scheme on such a model is an error that says so, not a fall through the floor."""
    m = ball_on_ground(r=0.1)
    q = ld.neutral(m)
    q[2] = 0.5
    sim = ld.Simulation(m, q)
    assert sim.contact_method == "timestep"
    sim.run(until=1.0, progress=False)
    assert sim.q[2] == pytest.approx(0.1, abs=1e-6)
    assert sim.recording.extremes["penetration"] <= 1e-6
    with pytest.raises(ValueError, match="event scheme does not handle collision geometry"):
        ld.Simulation(m, q, contact_method="events")
    assert ld.Simulation(m, q, contacts=False, contact_method="events").contact_method == "events"


def test_sphere_rolls_down_an_incline_with_five_sevenths_g_sin_theta():
    """A solid sphere rolling without slip down a 35 deg incline (mu = 0.8 > 2/7 tan th): its
    centre accelerates at a = 5/7 g sin th (a uniform sphere, I = 2/5 m r^2), its spin keeps
    w r = v, at every recorded step, to round-off (the 1 % the contact issue asks for; it measured
    13 % too fast before the free joint's step on R^3 x SO(3)); it neither sinks in nor leaves the plane."""
    th, r, mu = np.radians(35.0), 0.1, 0.8
    b = ld.ModelBuilder("rolling")
    b.add_body("ball", "world", ld.FreeFlyer(), inertia=ball_inertia(1.0, r))
    b.add_geom("ball", "sphere", [r], name="ball", friction=mu)
    R = sp.roty(th)
    b.add_geom("world", "plane", (), placement=(R, np.zeros(3)), name="incline", friction=mu)
    m = b.build()
    q = ld.neutral(m)
    q[:3] = R @ np.array([0.0, 0.0, r])
    q[3:7] = sp.matrix_to_quat(R)                    # body axes along the incline's
    sim, rec, arr = sim_run(m, q, until=1.0)
    assert_checks(sim)
    a = 5.0 / 7.0 * G * np.sin(th)
    t = arr["t"]
    down = R @ np.array([1.0, 0.0, 0.0])             # down the slope (roty tips +x down)
    x = (arr["q"][:, :3] - q[:3]) @ down
    v = np.array([sp.quat_to_matrix(qq[3:7]) @ vv[:3] for qq, vv in zip(arr["q"], arr["v"])]) @ down
    late = t > 0.05
    assert np.abs(v[late] / (a * t[late]) - 1.0).max() < 1e-12
    assert np.allclose(x, 0.5 * a * t * (t + DT), rtol=1e-12, atol=1e-15)   # semi-implicit Euler's sum, exactly
    normal_offset = (arr["q"][:, :3] @ (R @ np.array([0.0, 0.0, 1.0])))
    assert np.abs(normal_offset - r).max() < 1e-6
    spin = np.array([sp.quat_to_matrix(qq[3:7]) @ vv[3:] for qq, vv in zip(arr["q"], arr["v"])])
    assert np.abs(np.linalg.norm(spin[late], axis=1) * r / np.abs(v[late]) - 1.0).max() < 1e-6


def test_three_stacked_spheres_rest_on_each_other_where_mujoco_puts_them():
    """Three spheres dropped 1 mm apart, one above the other (the contact issue found them
    passing through each other, 190 mm of overlap): at rest each on the one below, to 1e-6 m,
    no overlap at any step, and at MuJoCo's heights within 1 cm."""
    mujoco = pytest.importorskip("mujoco")
    radii, masses = (0.12, 0.09, 0.06), (1.0, 0.6, 0.3)
    b = ld.ModelBuilder("spheres")
    z, top = [], 0.0
    for i, (r, mass) in enumerate(zip(radii, masses)):
        b.add_body(f"s{i}", "world", ld.FreeFlyer(), inertia=ball_inertia(mass, r))
        b.add_geom(f"s{i}", "sphere", [r], name=f"g{i}", friction=0.8)
        z.append(top + 1e-3 + r)
        top = z[-1] + r
    b.add_geom("world", "plane", (), name="ground", friction=0.8)
    m = b.build()
    q = ld.neutral(m)
    for i, zi in enumerate(z):
        q[7 * i + 2] = zi
    sim, rec, a = sim_run(m, q, until=1.0)
    assert_checks(sim)
    assert np.abs(a["v"][-1]).max() < 1e-6
    rest = np.cumsum([0.0, *(2 * np.array(radii[:-1]))]) + np.array(radii)
    assert sim.q[2::7] == pytest.approx(rest, abs=1e-6)
    bodies = "".join(f'<body pos="0 0 {zi}"><freejoint/><geom type="sphere" size="{r}" mass="{mass}" '
                     f'friction="0.8 0 0"/></body>' for zi, r, mass in zip(z, radii, masses))
    mj = mujoco.MjModel.from_xml_string(f'<mujoco><option timestep="0.001"/><worldbody>'
                                        f'<geom type="plane" size="0 0 1" friction="0.8 0 0"/>{bodies}</worldbody></mujoco>')
    d = mujoco.MjData(mj)
    for _ in range(1000):
        mujoco.mj_step(mj, d)
    assert sim.q[2::7] == pytest.approx(d.qpos[2::7], abs=1e-2)


def test_a_ball_within_the_candidate_distance_flies_until_it_reaches_the_ground():
    """A ball 0.8 mm above the ground, falling at 0.1 m/s: the ground is a candidate of every step
    (within CANDIDATE and the step's displacement), and until the free motion reaches it the step
    takes no force (lam = 0 answers the problem without a solve: every normal row content at
    zero force, zero warm start) and moves the ball as a model without the ground does; the step
    whose free motion would reach the ground takes it to the ground (the speculative contact), the
    next stops it, and no step leaves it below the ground."""
    r = 0.1
    m = ball_on_ground(r=r)
    b = ld.ModelBuilder("ball alone")
    b.add_body("ball", "world", ld.FreeFlyer(), inertia=ball_inertia(1.0, r))
    b.add_geom("ball", "sphere", [r], name="ball")
    alone = b.build()
    q = ld.neutral(m)
    q[2] = r + 0.8e-3
    v = np.zeros(m.nv)
    v[2] = -0.1
    with_ground, without = ts.TimeStepping(m), ts.TimeStepping(alone)
    assert with_ground._compiled and with_ground.geoms is not None
    qa, va, qb, vb = q.copy(), v.copy(), q.copy(), v.copy()
    flight = 0
    for k in range(20):
        free_end = qa[2] - r + DT * (va[2] - G * DT)        # the gap at the free motion's end
        qa, va, _ = with_ground.step(qa, va, np.zeros(m.nv), DT, k * DT)
        qb, vb, _ = without.step(qb, vb, np.zeros(m.nv), DT, k * DT)
        assert qa[2] - r >= -1e-9
        if free_end > 1e-9:
            assert len(with_ground.geom_names) == 1          # the ground is in the step's problem
            assert not with_ground.geom_force.any()         # no force on the way
            assert np.abs(qa - qb).max() < 1e-14 and np.abs(va - vb).max() < 1e-13
            flight += 1
        else:
            break
    assert flight >= 5 and with_ground.stats["steps_in_contact"] >= 1
    for k in range(k + 1, k + 6):                          # it lands and stays (e = 0)
        qa, va, _ = with_ground.step(qa, va, np.zeros(m.nv), DT, k * DT)
        assert qa[2] - r >= -1e-9
    assert abs(va[2]) < 1e-9 and with_ground.geom_force[:, 0].sum() > 0
