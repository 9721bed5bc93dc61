"""Unilateral constraints (issue 10): the rows against finite differences, the complementarity
solver against enumeration, and simulations whose physics has a closed form: a block on an
incline, a bouncing ball, a pendulum on its stop.  Every simulation here asserts at every
recorded sample that normal forces push (>= -1e-9), friction stays inside its cone and
nothing penetrates."""
import itertools

import numpy as np
import pytest

import linkdyn as ld
from linkdyn import spatial as sp
from linkdyn.contact import lcp
from linkdyn.contact.rows import CONTACT, UnitCatalog

G = 9.81


def assert_physical(rec, pen_tol=1e-9):
    """At every recorded sample: normal forces >= -1e-9, friction inside the cone, gaps >= -tol."""
    for seg in rec.segments:
        if not seg.unit_names:
            continue
        a = seg.arrays()
        f = a["unit_force"]
        assert f[:, :, 0].min() >= -1e-9, "a normal force pulls"
        cat = UnitCatalog(seg.model)
        mu = np.zeros(len(seg.unit_names))
        mu[:len(cat.pairs)] = cat._pair_mu
        ft = np.hypot(f[:, :, 1], f[:, :, 2])
        assert np.all(ft <= mu * f[:, :, 0] * (1 + 1e-9) + 1e-9), "friction outside its cone"
        assert a["unit_gap"].min() >= -pen_tol, f"penetration {a['unit_gap'].min():.3g}"


# ----------------------------------------------------------------------------------------
# models
def block(theta, mu, half=0.1, mass=2.0):
    """A box on 4 corner contacts resting on a plane tilted by theta about y."""
    b = ld.ModelBuilder("block")
    b.add_body("box", "world", ld.FreeFlyer(), inertia=ld.Inertia(mass, [0, 0, 0], np.diag([0.01, 0.012, 0.014])))
    for sx, sy in itertools.product((-1, 1), (-1, 1)):
        b.add_contact("box", [half * sx, half * sy, -0.05], friction=mu)
    R = sp.roty(theta)
    b.add_plane("incline", "world", normal=R[:, 2])
    m = b.build()
    q = ld.neutral(m)
    q[:3] = R @ np.array([0.0, 0.0, 0.05])
    q[3:7] = sp.matrix_to_quat(R)
    return m, q, R


def ball(e, mu=0.5, radius=0.1):
    b = ld.ModelBuilder("ball")
    b.add_body("ball", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.004))
    b.add_contact("ball", [0, 0, 0], radius=radius, friction=mu, restitution=e)
    b.add_ground()
    return b.build()


def pendulum(mass=1.5, length=0.8, lower=0.5):
    b = ld.ModelBuilder("pendulum")
    b.add_body("rod", "world", ld.Revolute("y"), inertia=ld.Inertia(mass, [0, 0, -length], np.eye(3) * 1e-4),
               lower=lower)
    return b.build()


# ----------------------------------------------------------------------------------------
# rows
def test_contact_rows_are_the_gap_rates_and_drifts():
    """N v = d(phi)/dt, T v = the contact point's sliding velocity, and N q'' + drift =
    d2(phi)/dt2, by central differences along a motion, for a sphere on a plane carried by
    another moving body (the plane's own rotation enters)."""
    b = ld.ModelBuilder("pair")
    b.add_body("table", "world", ld.Revolute("x"), placement=[0, 0, 0.2],
               inertia=ld.Inertia(1.0, [0, 0.1, 0], np.eye(3) * 0.01))
    b.add_plane("top", "table", point=[0, 0, 0.05], normal=[0.1, 0.0, 1.0])
    b.add_body("arm", "world", ld.Spherical(), placement=[0.3, 0, 1.0],
               inertia=ld.Inertia(1.0, [0, 0, -0.3], np.eye(3) * 0.01))
    b.add_contact("arm", [0.05, 0.0, -0.6], radius=0.04)
    m = b.build()
    rng = np.random.default_rng(3)
    q, v, a = ld.random_configuration(m, rng), rng.standard_normal(m.nv), rng.standard_normal(m.nv)
    cat = UnitCatalog(m)
    u = cat.units(q, v, with_drift=True)
    assert u.kind[0] == CONTACT and len(u) == 1
    h = 1e-5

    def state(t):   # q(t), v(t) with constant acceleration a
        return ld.integrate(m, q, v * t + 0.5 * a * t * t), v + a * t
    g = [cat.gaps(state(t)[0])[0] for t in (-h, 0.0, h)]
    assert u.N[0] @ v == pytest.approx((g[2] - g[0]) / (2 * h), rel=1e-6, abs=1e-8)
    assert u.N[0] @ a + u.drift_n[0] == pytest.approx((g[2] - 2 * g[1] + g[0]) / h ** 2, rel=1e-4, abs=1e-4)
    # the rate of N v along the motion is the second derivative too (tangents: T v matches
    # the relative velocity of the material points at the contact point)
    un = [cat.units(*state(t)) for t in (-h, h)]
    dn = (un[1].N[0] @ state(h)[1] - un[0].N[0] @ state(-h)[1]) / (2 * h)
    assert u.N[0] @ a + u.drift_n[0] == pytest.approx(dn, rel=1e-5, abs=1e-6)
    kin = ld.forward_kinematics(m, q, v)
    arm = m.body_id("arm")
    table = m.body_id("table")
    x = u.point[0]

    def point_velocity(bi):
        R, p, vb = kin.R[bi], kin.p[bi], kin.v[bi]
        return R @ vb[:3] + np.cross(R @ vb[3:], x - p)
    rel = point_velocity(arm) - point_velocity(table)
    assert u.T[0] @ v == pytest.approx(u.frame[0][:, :2].T @ rel, rel=1e-10, abs=1e-12)


def test_limit_rows():
    m = pendulum(lower=-0.3)
    b = ld.ModelBuilder.from_model(m)
    b.add_body("slider", "rod", ld.Prismatic("z"), lower=-0.1, upper=0.2, inertia=ld.Inertia(0.5))
    m = b.build()
    cat = UnitCatalog(m)
    u = cat.units(np.array([0.1, 0.15]), np.array([1.0, -2.0]))
    assert u.name == ["rod_joint.lower", "slider_joint.lower", "slider_joint.upper"]
    assert u.gap == pytest.approx([0.4, 0.25, 0.05])
    assert u.N @ np.array([1.0, -2.0]) == pytest.approx([1.0, -2.0, 2.0])


def test_catalog_respects_switches_and_bounded_planes():
    b = ld.ModelBuilder("seat")
    b.add_body("seat", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
    b.add_plane("seat_top", "seat", point=[0, 0, 0.02], extent=(0.2, 0.1))
    b.add_body("thigh", "world", ld.Prismatic("x"), placement=[0, 0, 0.5], lower=-1.0, upper=1.0,
               inertia=ld.Inertia(1.0))
    b.add_contact("thigh", [0, 0, 0])
    b.add_ground()
    m = b.build()
    assert len(UnitCatalog(m).pairs) == 2            # thigh on the seat top and on the ground; not the seat on itself
    assert UnitCatalog(m, limits=False).coord_limits == []
    assert UnitCatalog(m, contacts=False).pairs == []
    q = ld.neutral(m)
    q[7] = 0.15                                       # the thigh's point beyond the seat's 0.2 x 0.1 top? no: x
    gaps = UnitCatalog(m).gaps(q)
    assert np.isfinite(gaps[0])
    q[7] = 0.3
    assert UnitCatalog(m).gaps(q)[0] == np.inf       # past the seat's end: no contact with its top
    with pytest.raises(ValueError, match="restitution"):
        ld.ModelBuilder("x").add_contact("world", restitution=2.0)
    with pytest.raises(ValueError, match="extent"):
        ld.ModelBuilder("x").add_plane("p", extent=(1.0, -1.0))


# ----------------------------------------------------------------------------------------
# the complementarity solver
def _enumerate_lcp(A, r):
    """All solutions of the LCP 0 <= x _|_ A x + r >= 0 by trying every active set."""
    n = len(r)
    out = []
    for k in range(n + 1):
        for act in itertools.combinations(range(n), k):
            x = np.zeros(n)
            if act:
                idx = list(act)
                try:
                    x[idx] = np.linalg.solve(A[np.ix_(idx, idx)], -r[idx])
                except np.linalg.LinAlgError:
                    continue
            w = A @ x + r
            if x.min() >= -1e-10 and w.min() >= -1e-10:
                out.append(x)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_lcp_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    n = 6
    B = rng.standard_normal((n, n + 2))
    A = B @ B.T + 1e-3 * np.eye(n)
    r = rng.standard_normal(n)
    x, res = lcp.solve(A, r, np.full(n, lcp.NORMAL), np.zeros(n), np.arange(n))
    sols = _enumerate_lcp(A, r)
    assert len(sols) == 1                     # A positive definite: a unique solution
    assert x == pytest.approx(sols[0], abs=1e-10)
    assert res < 1e-10


@pytest.mark.parametrize("seed", range(6))
def test_lcp_with_friction_cones(seed):
    """Random contact problems (A = J M^-1 J^T of random rows): the solution satisfies every
    condition to 1e-9, friction inside its disk, a sticking pair has no slip, a sliding one
    slips against its force."""
    rng = np.random.default_rng(seed)
    nc, nv = 4, 10
    J = rng.standard_normal((3 * nc, nv))
    Mi = np.linalg.inv((lambda X: X @ X.T + np.eye(nv))(rng.standard_normal((nv, nv))))
    A = J @ Mi @ J.T
    r = rng.standard_normal(3 * nc)
    kind = np.tile([lcp.NORMAL, lcp.FRICTION, lcp.FRICTION2], nc)
    mu = np.repeat(rng.uniform(0.2, 1.0, nc), 3)
    normal = np.repeat(np.arange(0, 3 * nc, 3), 3)
    x, res = lcp.solve(A, r, kind, mu, normal)
    assert res < 1e-9
    assert lcp.residual(A, r, kind, mu, normal, x) == res
    for c in range(nc):
        assert x[3 * c] >= 0
        assert np.hypot(*x[3 * c + 1:3 * c + 3]) <= mu[3 * c] * x[3 * c] * (1 + 1e-9) + 1e-12


def test_lcp_shares_redundant_contacts():
    """Four coplanar corners carry a box: A is singular (12 rows, 6 dofs); the solution
    is exact and the load is shared symmetrically."""
    m, q, R = block(0.0, 0.8)
    cat = UnitCatalog(m)
    sol = ld.contact.acceleration(m, q, np.zeros(m.nv), np.zeros(m.nv), cat.units(q, np.zeros(m.nv), with_drift=True))
    assert sol.residual < 1e-9
    assert sol.force[:, 0] == pytest.approx(np.full(4, 2.0 * G / 4), rel=1e-9)
    assert np.abs(sol.value).max() < 1e-9


# ----------------------------------------------------------------------------------------
# simulations with a closed form
@pytest.mark.parametrize("theta,mu", [(0.3, 0.5), (0.3, 0.2), (0.45, 0.3)])
def test_block_on_incline(theta, mu):
    """Sticks for tan(theta) < mu; otherwise slides with a = g (sin theta - mu cos theta)."""
    m, q, R = block(theta, mu)
    sim = ld.Simulation(m, q, dt=1e-3)
    rec = sim.run(until=0.4, progress=False)
    assert_physical(rec)
    a = rec.segments[0].arrays()
    vw = np.einsum("ij,kj->ki", R, a["v"][:, :3])       # the body keeps the plane's orientation
    down = -R[:, 0]                                     # down the slope (tilt about y lowers +x? see below)
    if vw[-1] @ R[:, 0] > 0:
        down = R[:, 0]
    s = vw @ down
    acc = np.diff(s) / np.diff(a["t"])
    expected = G * (np.sin(theta) - mu * np.cos(theta)) if np.tan(theta) > mu else 0.0
    assert acc == pytest.approx(np.full(len(acc), expected), abs=1e-6)
    assert np.abs(vw @ R[:, 2]).max() < 1e-9            # no bouncing off the plane
    assert not rec.events


@pytest.mark.parametrize("e", [0.5, 0.8])
def test_ball_rebounds_to_e_squared_of_its_height(e):
    m = ball(e)
    q = ld.neutral(m)
    h = 0.9
    q[2] = h + 0.1
    t_fall = np.sqrt(2 * h / G)
    sim = ld.Simulation(m, q, dt=1e-3)
    rec = sim.run(until=2.2 * t_fall, progress=False)
    assert_physical(rec)
    first = rec.events[0]
    assert first.kind == "impact" and first.t == pytest.approx(t_fall, abs=1e-9)
    # the flight after the impact has a closed form: the apex is e^2 h above the ground
    v_up = e * np.sqrt(2 * G * h)
    a = rec.segments[0].arrays()
    k = np.searchsorted(a["t"], first.t) + 1
    vz = np.array([ld.spatial.quat_rotate(qq[3:7], vv[:3]) for qq, vv in zip(a["q"][k:k + 5], a["v"][k:k + 5])])[:, 2]
    assert vz[0] == pytest.approx(v_up - G * (a["t"][k] - first.t), rel=1e-9)
    assert (a["q"][:, 2] - 0.1).max() == pytest.approx(h, rel=1e-12)
    after = a["t"] > first.t
    assert (a["q"][after, 2] - 0.1).max() == pytest.approx(e * e * h, rel=2e-5)   # sampled every 1 ms


def test_inelastic_ball_comes_to_rest_without_penetration():
    m = ball(0.0)
    q = ld.neutral(m)
    q[2] = 0.6
    v = np.zeros(6)
    v[0] = 1.0                                            # sliding as it lands: friction stops it
    sim = ld.Simulation(m, q, v, dt=1e-3)
    rec = sim.run(until=1.0, progress=False)
    assert_physical(rec)
    a = rec.segments[0].arrays()
    assert (a["q"][:, 2] - 0.1).min() > -1e-6
    assert [e.kind for e in rec.events] == ["impact"]
    assert np.abs(a["v"][-1, 2]) < 1e-9 if False else abs(ld.spatial.quat_rotate(a["q"][-1, 3:7], a["v"][-1, :3])[2]) < 1e-9
    # rolling without slipping at the end: the contact point does not move
    u = UnitCatalog(m).units(sim.q, sim.v)
    assert np.abs(u.T[0] @ sim.v).max() < 1e-6


def test_pendulum_stops_on_its_limit_and_stays():
    mass, length, lower = 1.5, 0.8, 0.5
    m = pendulum(mass, length, lower)
    sim = ld.Simulation(m, np.array([1.2]), dt=1e-3)
    rec = sim.run(until=1.5, progress=False)
    assert_physical(rec)
    a = rec.segments[0].arrays()
    assert a["q"].min() >= lower - 1e-12
    assert [e.kind for e in rec.events] == ["impact"]
    # the free fall from 1.2 to 0.5 has its energy; the impact takes all the kinetic energy
    ev = rec.events[0]
    assert ev.kinetic_after == pytest.approx(0.0, abs=1e-20)
    assert ev.kinetic_before == pytest.approx(mass * G * length * (np.cos(lower) - np.cos(1.2)), rel=1e-8)
    rest = a["t"] > ev.t + 1e-9
    assert np.all(a["q"][rest, 0] == pytest.approx(lower, abs=1e-12))
    assert a["unit_force"][rest, 0, 0] == pytest.approx(np.full(rest.sum(), mass * G * length * np.sin(lower)),
                                                        rel=1e-9)
    # limits off: it swings through
    rec2 = ld.Simulation(m, np.array([1.2]), dt=1e-3, limits=False).run(until=0.6, progress=False)
    assert rec2.segments[0].arrays()["q"].min() < 0.0


def test_a_limit_inside_a_closed_chain():
    """A four-bar whose crank has a stop: the loop stays closed, the stop holds, and when no
    limit is active the step is the closed chain's own (the same as with limits off)."""
    fb = ld.models.four_bar()
    q0 = ld.loops.close_loops(fb, ld.neutral(fb) + 0.3, hold=["crank"])
    hi = float(q0[fb.q_index("crank")]) + 0.3            # gravity turns the crank up from rest
    b = ld.ModelBuilder.from_model(fb)
    b.set_limits("crank", upper=hi)
    m = b.build()
    v0 = np.zeros(m.nv)
    s_on = ld.Simulation(m, q0, v0, dt=1e-3)
    s_off = ld.Simulation(m, q0, v0, dt=1e-3, limits=False)
    s_on.step(), s_off.step()
    assert s_on.q == pytest.approx(s_off.q, abs=1e-14)
    rec = s_on.run(until=1.5, progress=False)
    assert_physical(rec)
    a = rec.segments[0].arrays()
    crank = a["q"][:, m.q_index("crank")]
    assert crank.max() <= hi + 1e-9 and crank[-1] > hi - 1e-6      # it reaches the stop and rests there
    assert rec.loop_error.max() < 1e-8
    with pytest.raises(KeyError, match="no joint"):
        b.set_limits("crankk", lower=0.0)


# ----------------------------------------------------------------------------------------
# human figures on the ground
def _figure_on_ground():
    from linkdyn.models.human import human_figure_16, standing_configuration
    b = ld.ModelBuilder.from_model(human_figure_16())
    b.add_ground()
    m = b.build()
    return m, standing_configuration(m)


def _sole_polygon(m, q, side):
    """World x-y corners of a sole's contact points at q (the support polygon of that foot)."""
    u = UnitCatalog(m).units(q)
    return np.array([p[:2] for n, p in zip(u.name, u.point) if n.startswith(f"{side}_sole")])


def test_standing_figure_keeps_its_centres_of_pressure_inside_the_soles():
    """A figure stands under posture control and is pushed (the pelvis starts moving forward at
    0.3 m/s): whenever a foot carries load its centre of pressure is inside its sole, the
    centre of pressure moves (the push is taken by the feet), and the figure keeps standing."""
    from linkdyn.models import scenarios as sc
    m, q = _figure_on_ground()
    v = np.zeros(m.nv)
    v[0] = 0.3
    sim = ld.Simulation(m, q, v, dt=1e-3, controller=sc.posture_controller(m, q), record_every=2)
    rec = sim.run(until=0.2, progress=False)
    assert_physical(rec)
    a, names = rec.segments[0].arrays(), rec.segments[0].unit_names
    for side in "lr":
        idx = [k for k, n in enumerate(names) if n.startswith(f"{side}_sole")]
        fn, pts = a["unit_force"][:, idx, 0], a["unit_point"][:, idx, :2]
        load = fn.sum(axis=1)
        on = load > 1.0
        assert on.mean() > 0.8 and on[-10:].any()               # a rigid foot rocks a little
        cop = np.einsum("kc,kcd->kd", fn[on], pts[on]) / load[on, None]
        lo, hi = pts[on].min(axis=1), pts[on].max(axis=1)               # the sole's rectangle (loaded: flat)
        assert np.all(cop >= lo - 1e-9) and np.all(cop <= hi + 1e-9)
        assert np.ptp(cop[:, 0]) > 1e-3                                  # the push moved it
    assert sim.q[2] > 0.85


@pytest.mark.slow
def test_dropped_figure_lands_and_its_feet_lift_and_slide():
    """A figure drops 15 cm while drifting forward at 0.6 m/s and lands under posture control on
    a slippery floor (friction 0.1 on the floor's side: 0.28 for the pair):
    the feet take the landing (inelastic impacts on the sole corners), a foot rocks (some corners
    unloaded while the foot carries load) and slides (a loaded corner moves along the ground),
    and the energy, net of the joints' work, never grows."""
    from linkdyn.models import scenarios as sc
    from linkdyn.models.human import human_figure_16
    m, q = sc.drop(0.15, figure=human_figure_16(), ground=False)
    b = ld.ModelBuilder.from_model(m)
    b.add_ground(friction=0.1)
    m = b.build()
    v = np.zeros(m.nv)
    v[0] = 0.6
    sim = ld.Simulation(m, q, v, dt=1e-3, controller=sc.posture_controller(m, q), record_every=1)
    rec = sim.run(until=0.5, progress=False)
    assert_physical(rec)
    landing = [e for e in rec.events if e.kind == "impact" and "sole" in e.name]
    assert landing and landing[0].t == pytest.approx(np.sqrt(2 * 0.15 / G), abs=0.02)
    a, names = rec.segments[0].arrays(), rec.segments[0].unit_names
    idx = [k for k, n in enumerate(names) if "_sole_" in n]
    fn = a["unit_force"][:, idx, 0]
    assert np.any((fn == 0).any(axis=1) & (fn.sum(axis=1) > 50))
    cat = UnitCatalog(m)
    slid = 0.0
    for k in np.flatnonzero(fn.sum(axis=1) > 50):
        u = cat.units(a["q"][k], None, np.array(idx))
        slip = np.hypot(*np.einsum("cij,j->ic", u.T, a["v"][k]))
        slid = max(slid, float(slip[fn[k] > 1.0].max(initial=0.0)))
    assert slid > 1e-3
    # the mechanical energy net of the joints' work (the posture controller raises the figure after the
    # landing: T + U alone grows by its 21 W there): the contacts and impacts never add energy
    E = rec.energy - a["work"][:, 0]
    assert np.diff(E).max() < 1e-3 and E[-1] < E[0]
    assert sim.q[2] > 0.8


@pytest.mark.parametrize("kind", ["quaternion", "zyx"])
def test_ball_joint_cone_and_twist_hold_under_random_torques(kind):
    """A limb on a ball joint with an elliptical, tilted swing cone and a twist range, driven by
    random torques for 2 s (a new torque every 20 ms): no sample exceeds the swing or twist
    limit by more than 1e-6 rad, and the limits were reached."""
    from linkdyn.contact.swing_twist import ball_limit_gaps
    J = ld.Spherical if kind == "quaternion" else ld.SphericalZYX
    joint = J(swing=(0.6, 0.35), twist=(-0.4, 0.3), axis=[0.2, 0.0, -1.0])
    b = ld.ModelBuilder("limb")
    b.add_body("limb", "world", joint, inertia=ld.Inertia(2.0, [0.02, 0.0, -0.3], np.diag([0.05, 0.06, 0.01])))
    m = b.build()
    rng = np.random.default_rng(7)
    torques = rng.normal(scale=25.0, size=(101, 3))
    sim = ld.Simulation(m, ld.neutral(m), dt=1e-3, record_every=1,
                        controller=lambda t, q, v: torques[min(int(t / 0.02), 100)])
    rec = sim.run(until=2.0, progress=False)
    assert_physical(rec, pen_tol=1e-6)
    a = rec.segments[0].arrays()
    gaps = np.array([ball_limit_gaps(joint, q) for q in a["q"]])
    assert gaps.min() >= -1e-6
    assert (gaps < 1e-6).any(axis=0)[[0]].all() and (gaps[:, 1:] < 1e-6).any()   # swing and twist stops reached


def test_a_plane_with_a_depth_is_the_face_of_a_box():
    """add_plane(depth=d): a point farther than d behind the plane is beyond the box (a hand
    under a seat board) and does not touch it, in the gaps and in the rows; in front of it and
    within the depth it does; unbounded planes without a depth are half-spaces."""
    b = ld.ModelBuilder("board")
    b.add_body("ball", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
    b.add_contact("ball", [0, 0, 0], radius=0.01)
    b.add_plane("board", "world", point=[0, 0, 1.0], extent=(0.5, 0.5), depth=0.03)
    b.add_ground()
    m = b.build()
    cat = UnitCatalog(m)
    q = ld.neutral(m)
    for z, board in ((1.2, 0.19), (0.995, -0.015), (0.95, np.inf), (0.5, np.inf)):
        q[2] = z
        g = cat.gaps(q)
        assert g[0] == pytest.approx(board) if np.isfinite(board) else g[0] == np.inf
        assert g[1] == pytest.approx(z - 0.01)                          # the ground: a half-space
        assert cat.units(q, None).gap[0] == g[0]
    assert ld.ModelBuilder.from_model(m).build().planes[0].depth == 0.03
    with pytest.raises(ValueError, match="depth"):
        b.add_plane("bad", "world", depth=-1.0)


def test_an_impact_on_a_closed_chain_reports_the_loops_impulses():
    """The four-bar's crank strikes its stop: the event lists the stop's impulse and the
    impulse every loop took to stay closed, and together they are the velocity jump:
    M dv = N^T P + J_C^T P_loop to round-off."""
    from linkdyn.loops.kinematics import loop_jacobian
    fb = ld.models.four_bar()
    q0 = ld.loops.close_loops(fb, ld.neutral(fb) + 0.3, hold=["crank"])
    b = ld.ModelBuilder.from_model(fb)
    b.set_limits("crank", upper=float(q0[fb.q_index("crank")]) + 0.3)
    m = b.build()
    sim = ld.Simulation(m, q0, dt=1e-3)
    rec = sim.run(until=1.0, progress=False)
    ev = [e for e in rec.events if e.kind == "impact"][0]
    assert ev.loop_impulse.shape == (m.nloops, 6) and np.abs(ev.loop_impulse).max() > 1e-3
    a = rec.segments[0].arrays()
    q = a["q"][np.searchsorted(a["t"], ev.t)]
    cat = UnitCatalog(m)
    u = cat.units(q, None, [cat.names.index(n) for n in ev.units])
    gen = u.N.T @ ev.impulse[:, 0] + np.einsum("kij,ki->j", u.T, ev.impulse[:, 1:])
    gen += loop_jacobian(m, q).T @ ev.loop_impulse.ravel()
    assert ld.crba(m, q) @ ev.dv == pytest.approx(gen, abs=1e-9 * max(1.0, np.abs(gen).max()))


def test_a_sliding_contact_that_reverses_inside_a_step_does_no_work():
    """A block on a spring (k x, controller force) slides on the ground with friction: its slip
    reverses inside steps (the spring's acceleration is 100 m/s^2 at the turns).  Friction
    held along the slip's first direction past the reversal would push the block and create
    energy; the reversal is an event, so the block's energy with the spring's, K + k x^2 / 2,
    never grows."""
    k = 2000.0
    m, q, _ = block(0.0, 0.5)
    v = np.zeros(6)
    v[0] = 1.0

    def spring(t, q, v):
        tau = np.zeros(6)
        tau[:3] = ld.spatial.quat_to_matrix(q[3:7]).T @ np.array([-k * q[0], 0.0, 0.0])   # body frame
        return tau

    sim = ld.Simulation(m, q, v, dt=1e-3, controller=spring, record_every=1)
    rec = sim.run(until=0.4, progress=False)
    assert_physical(rec)
    a = rec.segments[0].arrays()
    E = a["kinetic"] + 0.5 * k * a["q"][:, 0] ** 2
    assert np.diff(E).max() < 1e-6
    assert np.sum(np.diff(np.sign(a["v"][:, 0])) != 0) >= 3          # it turned round several times
