"""The builder's physical parameters are validated once, at build time, naming what is wrong
(issue 28): each test is named after the careless or hostile input it stops, and a hypothesis
fuzz checks that whatever the builder accepts is physical."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import linkdyn as ld
from linkdyn.model import geometry as G
from linkdyn.model.io.mjcf.common import MJCFError
from linkdyn.model.io.urdf import URDFWarning

I1 = ld.Inertia(1.0, [0, 0, 0.1], np.eye(3) * 0.01)


def _arm(**kw):
    b = ld.ModelBuilder("m")
    b.add_body("a", "world", ld.Revolute("z"), inertia=I1, **kw)
    return b


# -------------------------------------------------------------------------------- limits
@pytest.mark.parametrize("lo, hi, why", [(0.5, 0.5, "equal"), (1.0, 0.5, "above"), (0.0, -0.0, "equal")])
def test_equal_or_crossed_limits_refused_naming_the_joint(lo, hi, why):
    with pytest.raises(ValueError, match=rf"joint 'a_joint': lower limit {why}"):
        _arm(lower=lo, upper=hi)
    b = _arm()
    with pytest.raises(ValueError, match=rf"set_limits\('a_joint'\): lower limit {why}"):
        b.set_limits("a_joint", lo, hi)


def test_limit_at_1e308_refused_not_blamed_on_q():
    with pytest.raises(ValueError, match=r"joint 'a_joint': a limit of 1e\+308 is beyond the physical range"):
        _arm(lower=-1e308)
    _arm(lower=-G.MAX_LENGTH, upper=G.MAX_LENGTH).build()      # the edge of the range is accepted


def test_gear_composed_empty_limits_refused_at_build():
    """A leader in [0, 1] whose follower (ratio 1) is limited to [5, 6]: no position satisfies
    both; before, the model was built with lower 5 > upper 1."""
    b = _arm(lower=0.0, upper=1.0)
    b.add_body("c", "a", ld.Revolute("z"), inertia=I1, lower=5.0, upper=6.0)
    b.add_gear("c_joint", "a_joint", 1.0)
    with pytest.raises(ValueError, match=r"joint 'a_joint' leave it no position: .*'c_joint' in \[5, 6\].*\[5, 1\], "
                                         r"which is empty"):
        b.build()
    # a follower whose limits meet the leader's in one point only: refused as equal limits are
    b = _arm(lower=0.0, upper=1.0)
    b.add_body("c", "a", ld.Revolute("z"), inertia=I1, lower=-3.0, upper=-2.0)
    b.add_gear("c_joint", "a_joint", -2.0)               # q_c = -2 q_a: q_a in [1, 1.5]
    with pytest.raises(ValueError, match=r"a single point"):
        b.build()
    # overlapping ones narrow the leader: q_c = 2 q_a + 1 in [2, 6] -> q_a in [0.5, 1]
    b = _arm(lower=0.0, upper=1.0)
    b.add_body("c", "a", ld.Revolute("z"), inertia=I1, lower=2.0, upper=6.0)
    b.add_gear("c_joint", "a_joint", 2.0, 1.0)
    m = b.build()
    assert m.lower.tolist() == [0.5] and m.upper.tolist() == [1.0]


def test_urdf_limit_with_equal_bounds_dropped_with_a_warning(tmp_path):
    """urdfdom reads a missing lower/upper as 0: ``<limit effort velocity/>`` on a revolute joint
    is common in files; it loads, without a position limit, and says so."""
    p = tmp_path / "r.urdf"
    p.write_text('<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/><inertia ixx="1" '
                 'iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="j" type="revolute">'
                 '<parent link="a"/><child link="b"/><axis xyz="0 0 1"/><limit effort="1" velocity="1"/></joint>'
                 '</robot>')
    with pytest.warns(URDFWarning, match=r"joint 'j': .*lower equals upper"):
        m = ld.load_urdf(p)
    assert m.lower.tolist() == [-np.inf] and m.upper.tolist() == [np.inf]



@pytest.mark.parametrize("lo, hi, want", [("-1e16", "1e16", (-np.inf, np.inf)), ("-0.5", "1e16", (-0.5, np.inf)),
                                          ("-1e16", "2", (-np.inf, 2.0))])
def test_urdf_limit_of_1e16_read_as_no_limit_on_that_side(tmp_path, lo, hi, want):
    """Real files (example-robot-data's iris) write 1e16 for "no limit": the loader reads a side
    beyond the physical range as unbounded, with a warning, where the builder refuses it."""
    p = tmp_path / "r.urdf"
    p.write_text('<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/><inertia ixx="1" '
                 'iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="j" type="revolute">'
                 f'<parent link="a"/><child link="b"/><axis xyz="0 0 1"/><limit lower="{lo}" upper="{hi}" effort="1" '
                 'velocity="1"/></joint></robot>')
    with pytest.warns(URDFWarning, match=r"joint 'j': .*read as no limit on that side"):
        m = ld.load_urdf(p)
    assert (m.lower[0], m.upper[0]) == want

# ---------------------------------------------------------------------------- strict types
@pytest.mark.parametrize("what", ["friction", "damping", "armature", "stiffness", "lower", "upper",
                                  "velocity_limit", "effort_limit"])
@pytest.mark.parametrize("bad", [True, "2", [True], np.array([True])])
def test_joint_friction_true_and_other_non_numbers_refused(what, bad):
    with pytest.raises(TypeError, match=rf"add_body\('a'\)\.{what}: expected real numbers"):
        _arm(**{what: bad})


def test_bool_or_str_in_placements_inertia_gravity_rotor_refused():
    with pytest.raises(TypeError, match=r"add_body\('a'\).placement: expected real numbers"):
        _arm(placement=[0, 0, True])
    b = ld.ModelBuilder("m")
    with pytest.raises(TypeError, match=r"add_body\('a'\).inertia: Inertia.mass"):
        b.add_body("a", "world", ld.Revolute("z"), inertia=ld.Inertia(True, [0, 0, 0], np.eye(3)))
    with pytest.raises(TypeError, match=r"add_body\('a'\).inertia: Inertia.com"):
        b.add_body("a", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0, [0, "0", 0], np.eye(3)))
    with pytest.raises(TypeError, match=r"gravity"):
        ld.ModelBuilder("m", gravity=(0, 0, True))
    with pytest.raises(TypeError, match=r"add_rotor\('a_joint'\).inertia"):
        _arm().add_rotor("a_joint", True)
    with pytest.raises(TypeError, match=r"add_plane\('p'\).depth"):
        ld.ModelBuilder("m").add_plane("p", depth=True)


@pytest.mark.parametrize("what", ["velocity_limit", "effort_limit"])
def test_negative_velocity_or_effort_limit_refused(what):
    with pytest.raises(ValueError, match=rf"{what}: expected values >= 0"):
        _arm(**{what: -1.0})


# -------------------------------------------------------------------------- physical range
def _free():
    b = ld.ModelBuilder("m")
    b.add_body("a", "world", ld.FreeFlyer(), inertia=I1)
    return b


@pytest.mark.parametrize("call, match", [
    (lambda b: b.add_contact("a", [0, 0, 1e300]), r"add_contact\('a_contact0'\).position: 1e\+300 is beyond"),
    (lambda b: b.add_contact("a", radius=1e300), r"add_contact\('a_contact0'\).radius"),
    (lambda b: b.add_plane("p", point=[0, 0, -1e300]), r"add_plane\('p'\).point: 1e\+300 is beyond"),
    (lambda b: b.add_plane("p", extent=[1e300, 1]), r"add_plane\('p'\).extent"),
    (lambda b: b.add_plane("p", depth=1e300), r"add_plane\('p'\).depth"),
    (lambda b: b.add_geom("a", "sphere", 1e300), r"size\[0\] of a sphere .*beyond the physical range"),
    (lambda b: b.add_geom("a", "box", (1, 1, 1), placement=[1e300, 0, 0], name="g"), r"add_geom\('g'\).placement"),
    (lambda b: b.add_geom("a", "mesh", (), vertices=np.eye(4)[:, :3] * 1e300), r"vertices: a vertex at 1e\+300"),
    (lambda b: b.add_frame("f", "a", placement=[0, 1e300, 0]), r"add_frame\('f'\).placement"),
    (lambda b: b.add_body("c", "a", ld.Revolute("x"), placement=[0, 0, 1e300]), r"add_body\('c'\).placement"),
])
def test_contact_at_1e300_m_and_other_unphysical_lengths_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call(_free())


@pytest.mark.parametrize("what, x", [("restitution", 5.0), ("restitution", -0.1), ("friction", -1.0),
                                     ("restitution", True), ("friction", "0.5")])
def test_restitution_5_and_negative_friction_refused_everywhere(what, x):
    err = TypeError if isinstance(x, (bool, str)) else ValueError
    with pytest.raises(err, match=rf"add_plane\('p'\).{what}"):
        ld.ModelBuilder("m").add_plane("p", **{what: x})
    with pytest.raises(err, match=rf"add_contact\('a_contact0'\).{what}"):
        _free().add_contact("a", **{what: x})
    with pytest.raises(err, match=rf"add_geom\('g'\).{what}|add_geom\(body 'a'\).{what}"):
        _free().add_geom("a", "sphere", 0.1, name="g", **{what: x})


def test_mjcf_negative_friction_refused_and_restitution_not_read(tmp_path):
    """MJCF geoms go through the same checks: a negative friction is an MJCFError naming the
    attribute; MJCF has no restitution (MuJoCo's is solref's), so a file cannot set one: 0."""
    p = tmp_path / "m.xml"
    body = '<mujoco><worldbody><geom type="plane" size="1 1 .1"/><body pos="0 0 1"><freejoint/><geom type="sphere" ' \
           'size=".1" {}/></body></worldbody></mujoco>'
    p.write_text(body.format('friction="-1 0.005 0.0001"'))
    with pytest.raises(MJCFError, match=r"<geom friction='-1 0.005 0.0001'>: friction must not be negative"):
        ld.load_mjcf(p)
    p.write_text(body.format('restitution="5"'))
    m = ld.load_mjcf(p)
    assert np.asarray(m.geom_restitution).tolist() == [0.0, 0.0]


# ---------------------------------------------------------------------------- simulation
@pytest.mark.parametrize("bg", [(np.nan, 1.0), (1.0, np.inf), (1, 2, 3), "ab", 5, (True, 1.0), ("1", 2), (-1.0, 1.0)])
def test_baumgarte_not_a_pair_of_finite_numbers_refused(bg):
    m = _arm().build()
    with pytest.raises((ValueError, TypeError), match=r"baumgarte: expected a pair \(alpha, beta\)"):
        ld.Simulation(m, baumgarte=bg)
    assert ld.Simulation(m, baumgarte=np.array([10.0, 5.0])).baumgarte == (10.0, 5.0)


@pytest.mark.parametrize("kw", [dict(dt=0), dict(dt=-1e-3), dict(dt=math.nan), dict(dt=True), dict(t=math.nan),
                                dict(t=math.inf), dict(t="0")])
def test_dt_not_positive_or_t_not_finite_refused(kw):
    with pytest.raises(ValueError, match=rf"{next(iter(kw))}: expected"):
        ld.Simulation(_arm().build(), **kw)


@pytest.mark.parametrize("until", [True, "1", math.nan, -1.0])
def test_run_until_true_or_nan_refused(until):
    sim = ld.Simulation(_arm().build(), contacts=False)
    with pytest.raises(ValueError, match=r"until: expected a time after the present"):
        sim.run(until)


def test_step_minus_0_01_refused_time_does_not_run_backwards():
    sim = ld.Simulation(_arm().build(), contacts=False)
    with pytest.raises(ValueError, match=r"step: dt must be a positive finite number"):
        sim.step(-0.01)
    assert sim.t == 0.0 and len(sim.recording.segments[0].t) == 1


# ---------------------------------------------------------------------- hypothesis fuzz
_ANY = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.floats(min_value=-10, max_value=10),
    st.sampled_from([0.0, 1.0, -1.0, 1e300, -1e300, 1e6, 1e7, True, False, "1", None, np.nan]),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=4),
    st.lists(st.sampled_from([0.0, 0.5, True, "x", 1e300]), min_size=1, max_size=3))
_FUZZ = settings(max_examples=120, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
_JOINT_ARGS = ["lower", "upper", "friction", "damping", "armature", "stiffness", "velocity_limit", "effort_limit",
               "placement"]


def _refused_or_physical(call, check):
    try:
        b = call()
    except (ValueError, TypeError, KeyError) as exc:
        assert str(exc), "a refusal must say why"
        return
    check(b.build())


def _finite_in_range(x, hi=G.MAX_LENGTH):
    x = np.asarray(x, dtype=float)
    return bool(np.isfinite(x).all() and (np.abs(x) <= hi).all())


@_FUZZ
@given(what=st.sampled_from(_JOINT_ARGS), x=_ANY, other=_ANY)
def test_fuzz_joint_parameters_accepted_only_when_physical(what, x, other):
    def call():
        kw = {what: x}
        if what == "lower":
            kw["upper"] = other
        return _arm(**{k: v for k, v in kw.items() if v is not None})

    def check(m):
        lo, hi = np.asarray(m.lower), np.asarray(m.upper)
        assert (lo < hi).all() and (lo < np.inf).all() and (hi > -np.inf).all()
        assert _finite_in_range(lo[np.isfinite(lo)]) and _finite_in_range(hi[np.isfinite(hi)])
        for name in ("friction", "damping", "armature", "stiffness"):
            v = np.asarray(getattr(m, name))
            assert np.isfinite(v).all() and (v >= 0).all(), name
        for name in ("velocity_limit", "effort_limit"):
            v = np.asarray(getattr(m, name))
            assert not np.isnan(v).any() and (v >= 0).all(), name
        assert _finite_in_range(m.p_tree)
    _refused_or_physical(call, check)


@_FUZZ
@given(what=st.sampled_from(["position", "radius", "friction", "restitution"]), x=_ANY)
def test_fuzz_contact_parameters_accepted_only_when_physical(what, x):
    def call():
        b = _free()
        b.add_contact("a", **{what: x})
        b.add_ground()
        return b

    def check(m):
        c = m.contacts[0]
        assert _finite_in_range(c.position) and 0 <= c.radius <= G.MAX_LENGTH
        assert 0.0 <= c.restitution <= 1.0 and 0.0 <= c.friction < np.inf
    _refused_or_physical(call, check)


@_FUZZ
@given(what=st.sampled_from(["point", "extent", "friction", "restitution", "depth"]), x=_ANY)
def test_fuzz_plane_parameters_accepted_only_when_physical(what, x):
    def call():
        b = ld.ModelBuilder("m")
        b.add_plane("p", **{what: x})
        return b

    def check(m):
        pl = m.planes[0]
        assert _finite_in_range(pl.p)
        assert pl.extent is None or (len(pl.extent) == 2 and all(0 < e <= G.MAX_LENGTH for e in pl.extent))
        assert pl.depth is None or 0 < pl.depth <= G.MAX_LENGTH
        assert pl.friction is None or 0.0 <= pl.friction < np.inf
        assert pl.restitution is None or 0.0 <= pl.restitution <= 1.0
    _refused_or_physical(call, check)


@_FUZZ
@given(shape=st.sampled_from(["sphere", "capsule", "box", "cylinder", "ellipsoid"]),
       what=st.sampled_from(["size", "placement", "friction", "restitution", "margin"]), x=_ANY)
def test_fuzz_geom_parameters_accepted_only_when_physical(shape, what, x):
    sizes = {"sphere": 0.1, "capsule": (0.1, 0.2), "box": (0.1, 0.1, 0.1), "cylinder": (0.1, 0.2),
             "ellipsoid": (0.1, 0.2, 0.3)}
    kw = dict(size=sizes[shape])
    kw[what] = x

    def call():
        b = _free()
        b.add_geom("a", shape, kw.pop("size"), **kw)
        return b

    def check(m):
        assert _finite_in_range(m.geom_size) and (np.asarray(m.geom_size)[0, 0] > 0)
        assert _finite_in_range(m.geom_pos)
        assert 0.0 <= m.geom_friction[0] < np.inf and 0.0 <= m.geom_restitution[0] <= 1.0
        assert 0.0 <= m.geom_margin[0] <= 1e3
    _refused_or_physical(call, check)


# ------------------------------------------------------------------------ ball joint's cone
@pytest.mark.parametrize("swing", [1e-9, 1e-5, (0.5, 1e-9), (1e-4, 0.3)])
def test_ball_joint_swing_1e_9_refused(swing):
    """A 1e-9 rad cone under time stepping went from 7.3 J to 2e6 J, booked as limit work."""
    with pytest.raises(ValueError, match=r"swing: a half-angle of .* is below the narrowest cone .*Revolute"):
        ld.Spherical(swing=swing)


def test_narrowest_allowed_cone_holds_without_energy_gain():
    """At the narrowest cone (MIN_SWING) and the default step, a pendulum thrown at 5.7 rad/s
    stays in its cone and only loses energy (limit impacts are inelastic)."""
    from linkdyn.model.joints import MIN_SWING
    b = ld.ModelBuilder("ball")
    b.add_body("a", "world", ld.Spherical(swing=MIN_SWING), inertia=ld.Inertia(1.0, [0.3, 0, -0.5], np.eye(3) * 0.01))
    m = b.build()
    sim = ld.Simulation(m, v=5.0 * np.array([1.0, 0.5, 0.2]), dt=1e-3, contact_method="timestep")
    e0 = sim._energy()
    energy = []
    for _ in range(20):
        sim.run(sim.t + 0.05)
        energy.append(sim._energy())
    assert max(energy) <= e0 + 1e-9 and sim.recording.extremes["limit_violation"] < 1e-4
