"""Fuzzing (hypothesis): the public numeric API and the URDF/MJCF readers, fed arbitrary input,
either answer with finite numbers or raise a clear error (ValueError, TypeError, KeyError naming
what was wrong); never a crash, a hang, or a silent NaN."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import linkdyn as ld

MODEL = ld.models.human_figure_16()
FRAME = MODEL.frame_names[-1]
# derandomize: the same examples on every run (CI must not depend on the draw)
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

special = st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e-300, 1e300, -1e300, np.inf, -np.inf, np.nan, 1e155])
numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), special)


def vectors(n):
    """Arrays of about the right size (sometimes not), of any values, sometimes not arrays."""
    lengths = st.sampled_from([n, n, n, n - 1, n + 1, 0])
    arr = lengths.flatmap(lambda k: st.lists(numbers, min_size=k, max_size=k).map(np.array))
    other = st.sampled_from([None, "q", [[1.0]], np.zeros((2, n)), np.zeros((2, 3, n)), np.zeros(n, dtype=complex),
                             np.zeros(n, dtype=np.float32), True])
    return st.one_of(arr, arr, arr, other)


ERRORS = (ValueError, TypeError, KeyError, FloatingPointError)


def _finite_or_clear_error(fn, *args):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*args)
    except ERRORS as exc:
        assert str(exc), "an error without a message"
        return
    out = np.asarray(out)
    assert np.isfinite(out).all(), f"{fn.__name__} returned non-finite values without an error"


@SETTINGS
@given(q=vectors(MODEL.nq), v=vectors(MODEL.nv), a=vectors(MODEL.nv))
def test_dynamics_on_arbitrary_input(q, v, a):
    _finite_or_clear_error(ld.rnea, MODEL, q, v, a)
    _finite_or_clear_error(ld.aba, MODEL, q, v, a)
    _finite_or_clear_error(ld.crba, MODEL, q)
    _finite_or_clear_error(ld.kinetic_energy, MODEL, q, v)


@SETTINGS
@given(q=vectors(MODEL.nq), v=vectors(MODEL.nv), frame=st.sampled_from([FRAME, "nope", 3, -1, 10 ** 6, True, None]))
def test_kinematics_on_arbitrary_input(q, v, frame):
    _finite_or_clear_error(ld.frame_pose, MODEL, q, frame)
    _finite_or_clear_error(ld.jacobian, MODEL, q, frame, "world")
    _finite_or_clear_error(ld.frame_velocity, MODEL, q, v, frame)
    _finite_or_clear_error(ld.integrate, MODEL, q, v)


# ---------------------------------------------------------------------------- readers
names = st.text(alphabet="abcxyz_0123456789<>&\"' ", min_size=0, max_size=6)
attr_number = st.one_of(numbers.map(repr), st.sampled_from(["", "1 2", "nan", "inf", "1e999", "x", "0 0 0", "1 0 0"]))


@st.composite
def urdf_text(draw):
    n = draw(st.integers(0, 4))
    links = [draw(names) for _ in range(n + 1)]
    parts = ['<robot name="f">']
    for name in links:
        inertial = ""
        if draw(st.booleans()):
            inertial = (f'<inertial><origin xyz="{draw(attr_number)} 0 0"/><mass value="{draw(attr_number)}"/>'
                        f'<inertia ixx="{draw(attr_number)}" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>')
        parts.append(f'<link name="{name}">{inertial}</link>')
    for k in range(n):
        kind = draw(st.sampled_from(["revolute", "continuous", "prismatic", "fixed", "floating", "planar", "weird"]))
        parent = draw(st.sampled_from(links))
        child = links[k + 1] if draw(st.integers(0, 4)) else draw(st.sampled_from(links))
        limit = f'<limit lower="{draw(attr_number)}" upper="{draw(attr_number)}" effort="1" velocity="1"/>'
        parts.append(f'<joint name="j{k}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
                     f'<origin xyz="{draw(attr_number)} 0 0" rpy="0 {draw(attr_number)} 0"/>'
                     f'<axis xyz="{draw(attr_number)}"/>{limit if draw(st.booleans()) else ""}</joint>')
    parts.append("</robot>")
    text = "".join(parts)
    if draw(st.integers(0, 9)) == 0:                       # sometimes cut anywhere
        text = text[:draw(st.integers(0, len(text)))]
    return text


@st.composite
def mjcf_text(draw):
    depth = draw(st.integers(0, 3))
    body = ""
    for k in range(depth):
        kind = draw(st.sampled_from(["hinge", "slide", "ball", "free", "bogus"]))
        geom = (f'<geom type="{draw(st.sampled_from(["sphere", "capsule", "box", "plane", "mesh"]))}" '
                f'size="{draw(attr_number)}" mass="{draw(attr_number)}"/>')
        body = (f'<body name="b{k}" pos="{draw(attr_number)} 0 0"><joint name="j{k}" type="{kind}" '
                f'axis="{draw(attr_number)}" range="{draw(attr_number)} 1"/>{geom}{body}</body>')
    text = f'<mujoco model="f"><worldbody>{body}</worldbody></mujoco>'
    if draw(st.integers(0, 9)) == 0:
        text = text[:draw(st.integers(0, len(text)))]
    return text


def _model_or_clear_error(parse, text):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = parse(text)
    except ERRORS + (NotImplementedError,) as exc:
        assert str(exc)
        return
    q = ld.neutral(m)
    tau = ld.rnea(m, q, np.zeros(m.nv), np.zeros(m.nv))
    assert np.isfinite(tau).all(), "a model that loads must give finite dynamics"


@SETTINGS
@given(text=urdf_text())
def test_urdf_reader_on_generated_text(text):
    _model_or_clear_error(ld.parse_urdf, text)


@SETTINGS
@given(text=mjcf_text())
def test_mjcf_reader_on_generated_text(text):
    _model_or_clear_error(ld.parse_mjcf, text)


@pytest.mark.parametrize("text", ["", "<", "<robot>", "<robot name='x'><link name='a'/><link name='a'/></robot>",
                                  "<!DOCTYPE x [<!ENTITY a 'aaaa'>]><robot name='&a;'/>"])
def test_urdf_reader_edge_cases(text):
    _model_or_clear_error(ld.parse_urdf, text)


@pytest.mark.parametrize("fn", [lambda q, v: ld.rnea(MODEL, q, v, v), lambda q, v: ld.aba(MODEL, q, v, v),
                                lambda q, v: ld.kinetic_energy(MODEL, q, v), lambda q, v: ld.nonlinear_effects(MODEL, q, v),
                                lambda q, v: ld.rnea(MODEL, np.stack([q, q]), np.stack([v, v]), np.stack([v, v]))])
def test_finite_input_too_large_for_float64_is_an_error_not_inf(fn):
    """1e155 rad/s squares to 1e310: the kernels say so instead of returning inf."""
    q, v = ld.neutral(MODEL), np.full(MODEL.nv, 1e155)
    with pytest.raises(FloatingPointError, match="overflowed float64.*1e\\+155"):
        fn(q, v)
    q = ld.neutral(MODEL)
    q[:3] = 1e307                                                        # a base at 1e307 m: m g z overflows
    with pytest.raises(FloatingPointError, match="overflowed"):
        ld.potential_energy(MODEL, q)


def test_kinematics_that_overflow_raise():
    """A frame's acceleration at 1e155 rad/s (omega^2 = 1e310) and its velocity when the joint
    speeds near the float64 limit add up past it: FloatingPointError, not inf."""
    q, v = ld.neutral(MODEL), np.full(MODEL.nv, 1e155)
    with pytest.raises(FloatingPointError, match="overflowed"):
        ld.frame_acceleration(MODEL, q, v, np.zeros(MODEL.nv), FRAME)
    with pytest.raises(FloatingPointError, match="overflowed"):
        ld.frame_velocity(MODEL, q, np.full(MODEL.nv, 1.7e308), FRAME, "world")
    with pytest.raises(FloatingPointError, match="overflowed"):
        ld.forward_kinematics(MODEL, q, np.full(MODEL.nv, 1.7e308))
