"""Bad input: every public function raises an exception whose message names the argument
and what was expected, never crashes, never returns garbage."""
import numpy as np
import pytest

import linkdyn as ld


def _model():
    b = ld.ModelBuilder("val")
    I = ld.Inertia(1.0, [0.1, 0.0, 0.0], np.eye(3))
    b.add_body("base", "world", ld.FreeFlyer(), inertia=I, joint_name="root")
    b.add_body("arm", "base", ld.Spherical(), placement=[0, 0, 0.5], inertia=I, joint_name="shoulder")
    b.add_body("fore", "arm", ld.Revolute("y"), placement=[0.3, 0, 0], inertia=I, joint_name="elbow")
    b.add_body("hand", "fore", ld.Fixed(), placement=[0.2, 0, 0], inertia=I, joint_name="wrist")
    b.add_frame("tool", "hand", placement=[0.1, 0, 0])
    return b.build()


MODEL = _model()
NQ, NV, NB = MODEL.nq, MODEL.nv, MODEL.nbody          # 12, 10, 4


def _good():
    rng = np.random.default_rng(0)
    q = ld.random_configuration(MODEL, rng)
    return {"q": q, "q0": q, "q1": ld.random_configuration(MODEL, rng), "v": rng.standard_normal(NV),
            "a": rng.standard_normal(NV), "tau": rng.standard_normal(NV)}


# name -> (call(model, args), argument names)
CALLS = {
    "rnea": (lambda m, s: ld.rnea(m, s["q"], s["v"], s["a"]), ("q", "v", "a")),
    "aba": (lambda m, s: ld.aba(m, s["q"], s["v"], s["tau"]), ("q", "v", "tau")),
    "crba": (lambda m, s: ld.crba(m, s["q"]), ("q",)),
    "mass_matrix": (lambda m, s: ld.mass_matrix(m, s["q"], "jacobian"), ("q",)),
    "nonlinear_effects": (lambda m, s: ld.nonlinear_effects(m, s["q"], s["v"]), ("q", "v")),
    "generalized_gravity": (lambda m, s: ld.generalized_gravity(m, s["q"]), ("q",)),
    "kinetic_energy": (lambda m, s: ld.kinetic_energy(m, s["q"], s["v"]), ("q", "v")),
    "potential_energy": (lambda m, s: ld.potential_energy(m, s["q"]), ("q",)),
    "mechanical_energy": (lambda m, s: ld.mechanical_energy(m, s["q"], s["v"]), ("q", "v")),
    "forward_kinematics": (lambda m, s: ld.forward_kinematics(m, s["q"], s["v"], s["a"]), ("q", "v", "a")),
    "frame_pose": (lambda m, s: ld.frame_pose(m, s["q"], "tool"), ("q",)),
    "center_of_mass": (lambda m, s: ld.center_of_mass(m, s["q"]), ("q",)),
    "com_jacobian": (lambda m, s: ld.com_jacobian(m, s["q"]), ("q",)),
    "joint_jacobians": (lambda m, s: ld.joint_jacobians(m, s["q"]), ("q",)),
    "integrate": (lambda m, s: ld.integrate(m, s["q"], s["v"], 0.1), ("q", "v")),
    "difference": (lambda m, s: ld.difference(m, s["q0"], s["q1"]), ("q0", "q1")),
    "jacobian": (lambda m, s: ld.jacobian(m, s["q"], "tool", "local"), ("q",)),
    "point_jacobian": (lambda m, s: ld.point_jacobian(m, s["q"], "tool", [0.1, 0, 0]), ("q",)),
    "frame_velocity": (lambda m, s: ld.frame_velocity(m, s["q"], s["v"], "tool"), ("q", "v")),
    "frame_acceleration": (lambda m, s: ld.frame_acceleration(m, s["q"], s["v"], s["a"], "tool"), ("q", "v", "a")),
    "jacobian_dot_times_v": (lambda m, s: ld.jacobian_dot_times_v(m, s["q"], s["v"], "tool"), ("q", "v")),
}


def _size(arg):
    return NQ if arg.startswith("q") else NV


def _cases(only_q=False):
    """(function, argument) pairs."""
    out = []
    for fn, (_, args) in CALLS.items():
        for arg in args:
            if only_q and not arg.startswith("q"):
                continue
            out.append(pytest.param(fn, arg, id=f"{fn}-{arg}"))
    return out


def _call(fn, **bad):
    s = _good()
    s.update(bad)
    if "q" in bad:
        s["q0"] = bad["q"]
    return CALLS[fn][0](MODEL, s)


def test_the_good_inputs_pass():
    """Control: every call below succeeds with the good inputs."""
    for fn, (call, _) in CALLS.items():
        call(MODEL, _good())


# ---------------------------------------------------------------------------------------
# shapes and types (checked before any kernel runs)
@pytest.mark.parametrize("fn, arg", _cases())
@pytest.mark.parametrize("shape", ["short", "long", "3d", "cols", "scalar", "empty_stack"])
def test_wrong_shape(fn, arg, shape):
    n = _size(arg)
    bad = {"short": np.zeros(n - 1), "long": np.zeros(n + 1), "3d": np.zeros((2, 2, n)),
           "cols": np.zeros((3, n + 1)), "scalar": 0.5, "empty_stack": np.zeros((0, n))}[shape]
    want = rf"\b{arg}: the stack of states is empty" if shape == "empty_stack" else \
        rf"^{arg}: expected shape \({n},\) or \(N, {n}\), got"
    with pytest.raises(ValueError, match=want):
        _call(fn, **{arg: bad})


@pytest.mark.parametrize("fn, arg", _cases())
@pytest.mark.parametrize("bad", ["hello", ["a"] * 12, [None, "x"], {"q": 1}])
def test_not_numbers(fn, arg, bad):
    """(regression: potential_energy, frame_velocity and jacobian_dot_times_v converted their
    argument with np.asarray(x, dtype=float) first and raised numpy's message)"""
    with pytest.raises((TypeError, ValueError), match=rf"^{arg}: expected .*shape \({_size(arg)},\)"):
        _call(fn, **{arg: bad})


@pytest.mark.filterwarnings("ignore:Casting complex values")
def test_complex_input_is_rejected():
    """(regression: complex arrays were cast with a ComplexWarning, the imaginary part dropped)"""
    s = _good()
    with pytest.raises((TypeError, ValueError), match="q"):
        ld.rnea(MODEL, s["q"] + 1j, s["v"], s["a"])
    with pytest.raises((TypeError, ValueError), match="fext"):
        ld.rnea(MODEL, s["q"], s["v"], s["a"], fext=np.zeros((NB, 6)) + 1j)


def test_strided_and_read_only_inputs():
    """Views that are not C-contiguous or not writeable give the same results (the fast paths
    pass 1-D float64 arrays straight to the kernels)."""
    s = _good()
    q, v, a = s["q"], s["v"], s["a"]
    big = np.zeros((2, NQ))
    big[0] = q
    strided = np.asfortranarray(big)[0]
    assert not strided.flags.c_contiguous
    ro = q.copy()
    ro.flags.writeable = False
    for x in (strided, ro):
        assert_equal = np.testing.assert_array_equal
        assert_equal(ld.rnea(MODEL, x, v, a), ld.rnea(MODEL, q, v, a))
    assert_equal(ld.crba(MODEL, strided), ld.crba(MODEL, q))
    assert_equal(ld.jacobian(MODEL, strided, "tool"), ld.jacobian(MODEL, q, "tool"))
    assert_equal(ld.crba(MODEL, np.asfortranarray(np.stack([q, q]))), ld.crba(MODEL, np.stack([q, q])))


# ---------------------------------------------------------------------------------------
# NaN and infinity (checked inside the kernels)
@pytest.mark.parametrize("fn, arg", _cases())
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite(fn, arg, value):
    x = _good()[arg].copy()
    x[2] = value
    with pytest.raises(ValueError, match=rf"^{arg}: contains NaN or infinity at index \(2,\)"):
        _call(fn, **{arg: x})


@pytest.mark.parametrize("fn", ["rnea", "aba"])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_external_forces(fn, value):
    s = _good()
    f = np.zeros((NB, 6))
    f[2, 4] = value
    third = s["a"] if fn == "rnea" else s["tau"]
    with pytest.raises(ValueError, match=r"^fext: contains NaN or infinity at index \(2, 4\)"):
        getattr(ld, fn)(MODEL, s["q"], s["v"], third, fext=f)


@pytest.mark.parametrize("fn", ["rnea", "aba"])
@pytest.mark.parametrize("shape", [(NB, 3), (NB - 1, 6), (6,), (2, NB, 6)])
def test_external_forces_wrong_shape(fn, shape):
    s = _good()
    third = s["a"] if fn == "rnea" else s["tau"]
    with pytest.raises(ValueError, match=rf"^fext: expected shape \({NB}, 6\)"):
        getattr(ld, fn)(MODEL, s["q"], s["v"], third, fext=np.zeros(shape))


def test_external_forces_not_numbers():
    """(regression: numpy's bare "could not convert string to float" without the name)"""
    s = _good()
    with pytest.raises((TypeError, ValueError), match="fext"):
        ld.rnea(MODEL, s["q"], s["v"], s["a"], fext="abc")


@pytest.mark.parametrize("dt", [np.nan, np.inf, "abc"])
def test_integrate_bad_dt(dt):
    """(regression: a non-finite dt was reported as "v: contains NaN or infinity")"""
    s = _good()
    with pytest.raises((TypeError, ValueError), match=r"\bdt\b"):
        ld.integrate(MODEL, s["q"], s["v"], dt)


# ---------------------------------------------------------------------------------------
# quaternions
@pytest.mark.parametrize("fn, arg", _cases(only_q=True))
@pytest.mark.parametrize("joint, offset", [("root", 3), ("shoulder", 7)])
@pytest.mark.parametrize("scale", [1.01, 0.5, 0.0])
def test_unnormalized_quaternion_names_the_joint(fn, arg, joint, offset, scale):
    q = _good()[arg].copy()
    q[offset:offset + 4] *= scale
    with pytest.raises(ValueError, match=rf"^{arg}: the quaternion of joint '{joint}' \(q\[{offset}:{offset + 4}\]\)"
                                         r" has norm .* unit norm"):
        _call(fn, **{arg: q})


def test_quaternion_tolerance():
    """Round-off is accepted (|norm - 1| <= 1e-6), anything more is not."""
    q = _good()["q"].copy()
    q[7:11] *= 1 + 5e-7
    ld.rnea(MODEL, q, np.zeros(NV), np.zeros(NV))
    q[7:11] *= 1 + 2e-6
    with pytest.raises(ValueError, match="shoulder"):
        ld.rnea(MODEL, q, np.zeros(NV), np.zeros(NV))


# ---------------------------------------------------------------------------------------
# stacks: the message says which state is bad
@pytest.mark.parametrize("fn, arg", _cases())
def test_stack_with_one_non_finite_state(fn, arg):
    X = np.tile(_good()[arg], (6, 1))
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match=rf"^state 3 of the stack: {arg}: contains NaN or infinity"):
        _call(fn, **{arg: X})


@pytest.mark.parametrize("fn, arg", _cases(only_q=True))
def test_stack_with_one_unnormalized_quaternion(fn, arg):
    X = np.tile(_good()[arg], (6, 1))
    X[3, 7:11] *= 1.5
    with pytest.raises(ValueError, match=rf"^state 3 of the stack: {arg}: the quaternion of joint 'shoulder'"):
        _call(fn, **{arg: X})


@pytest.mark.parametrize("fn", ["rnea", "aba"])
def test_stack_with_one_bad_external_force(fn):
    s = _good()
    F = np.zeros((5, NB, 6))
    F[3, 1, 0] = np.inf
    third = s["a"] if fn == "rnea" else s["tau"]
    with pytest.raises(ValueError, match=r"^state 3 of the stack: fext: contains NaN or infinity at index \(3, 1, 0\)"):
        getattr(ld, fn)(MODEL, np.tile(s["q"], (5, 1)), s["v"], third, fext=F)


@pytest.mark.parametrize("call", [
    lambda s: ld.rnea(MODEL, np.tile(s["q"], (5, 1)), np.zeros((4, NV)), np.zeros((5, NV))),
    lambda s: ld.aba(MODEL, np.tile(s["q"], (5, 1)), s["v"], np.zeros((3, NV))),
    lambda s: ld.forward_kinematics(MODEL, np.tile(s["q"], (2, 1)), np.zeros((3, NV))),
    lambda s: ld.kinetic_energy(MODEL, np.tile(s["q"], (2, 1)), np.zeros((3, NV))),
    lambda s: ld.integrate(MODEL, np.tile(s["q"], (2, 1)), np.zeros((3, NV))),
    lambda s: ld.difference(MODEL, np.tile(s["q"], (2, 1)), np.tile(s["q"], (3, 1))),
    lambda s: ld.frame_velocity(MODEL, np.tile(s["q"], (2, 1)), np.zeros((3, NV)), "tool"),
], ids=["rnea", "aba", "forward_kinematics", "kinetic_energy", "integrate", "difference", "frame_velocity"])
def test_mismatched_stack_sizes(call):
    with pytest.raises(ValueError, match=r"stack of \d states, but another argument has \d"):
        call(_good())


def test_mismatched_external_force_stack():
    s = _good()
    with pytest.raises(ValueError, match=rf"^fext: expected shape \({NB}, 6\) or \(5, {NB}, 6\)"):
        ld.rnea(MODEL, np.tile(s["q"], (5, 1)), s["v"], s["a"], fext=np.zeros((4, NB, 6)))


# ---------------------------------------------------------------------------------------
# names
_FRAME_CALLS = {
    "frame_pose": lambda q, f: ld.frame_pose(MODEL, q, f),
    "Kinematics.pose": lambda q, f: ld.forward_kinematics(MODEL, q).pose(f),
    "jacobian": lambda q, f: ld.jacobian(MODEL, q, f),
    "point_jacobian": lambda q, f: ld.point_jacobian(MODEL, q, f),
    "frame_velocity": lambda q, f: ld.frame_velocity(MODEL, q, np.zeros(NV), f),
    "frame_acceleration": lambda q, f: ld.frame_acceleration(MODEL, q, np.zeros(NV), np.zeros(NV), f),
    "jacobian_dot_times_v": lambda q, f: ld.jacobian_dot_times_v(MODEL, q, np.zeros(NV), f),
    "frame_id": lambda q, f: MODEL.frame_id(f),
    "body_id": lambda q, f: MODEL.body_id(f),
}


@pytest.mark.parametrize("fn", list(_FRAME_CALLS))
@pytest.mark.parametrize("frame", ["nope", "Tool", 1.5, None])
def test_unknown_frame(fn, frame):
    with pytest.raises(KeyError, match=rf"unknown frame {frame!r}.*'world', 'base', 'arm', 'fore', 'hand', 'tool'"):
        _FRAME_CALLS[fn](_good()["q"], frame)


@pytest.mark.parametrize("fn", list(_FRAME_CALLS))
@pytest.mark.parametrize("index", [6, -1, 100])
def test_frame_index_out_of_range(fn, index):
    with pytest.raises(KeyError, match=rf"frame index {index} out of range \[0, 6\)"):
        _FRAME_CALLS[fn](_good()["q"], index)


@pytest.mark.parametrize("method", ["joint_id", "q_index", "v_index", "q_slice", "v_slice"])
@pytest.mark.parametrize("name", ["nope", "wrist", "world", "", None])
def test_unknown_joint(method, name):
    """Unknown names, the fixed joint 'wrist' and the world are not movable joints."""
    with pytest.raises(KeyError, match=rf"unknown joint {name!r}; movable joints: \['root', 'shoulder', 'elbow'\]"):
        getattr(MODEL, method)(name)


def test_known_names_resolve():
    """Control of the two tests above."""
    assert MODEL.joint_id("elbow") == 3 and MODEL.q_slice("shoulder") == slice(7, 11)
    assert MODEL.v_slice("elbow") == slice(9, 10) and MODEL.frame_id("wrist") == MODEL.frame_id("hand")
    assert MODEL.body_id("tool") == 3


_REF_CALLS = {
    "jacobian": lambda q, r: ld.jacobian(MODEL, q, "tool", r),
    "frame_velocity": lambda q, r: ld.frame_velocity(MODEL, q, np.zeros(NV), "tool", r),
    "frame_acceleration": lambda q, r: ld.frame_acceleration(MODEL, q, np.zeros(NV), np.zeros(NV), "tool", r),
    "jacobian_dot_times_v": lambda q, r: ld.jacobian_dot_times_v(MODEL, q, np.zeros(NV), "tool", r),
}


@pytest.mark.parametrize("fn", list(_REF_CALLS))
@pytest.mark.parametrize("ref", ["global", "WORLD", "", None, 0])
def test_wrong_reference(fn, ref):
    with pytest.raises(ValueError, match=rf"^reference: expected one of \['world', 'local', 'local_world_aligned'\], "
                                         rf"got {ref!r}"):
        _REF_CALLS[fn](_good()["q"], ref)


@pytest.mark.parametrize("method", ["CRBA", "aba", "", None])
def test_wrong_mass_matrix_method(method):
    with pytest.raises(ValueError, match=r"^method: expected one of \['crba', 'unit_vector', 'jacobian'\], got"):
        ld.mass_matrix(MODEL, _good()["q"], method=method)


def test_bad_point():
    with pytest.raises(ValueError, match=r"^point: expected a finite 3-vector"):
        ld.point_jacobian(MODEL, _good()["q"], "tool", [1.0, 2.0])
    with pytest.raises(ValueError, match=r"^point: expected a finite 3-vector"):
        ld.point_jacobian(MODEL, _good()["q"], "tool", [1.0, np.nan, 2.0])


# ---------------------------------------------------------------------------------------
# singular models
def _massless():
    b = ld.ModelBuilder("massless")
    b.add_body("a", "world", ld.Revolute("z"))
    b.add_body("b", "a", ld.Spherical(), placement=[1, 0, 0])
    b.add_body("c", "b", ld.FreeFlyer())
    return b.build()


def test_massless_model_aba_raises():
    model = _massless()
    q = ld.random_configuration(model, 0)
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        ld.aba(model, q, np.zeros(model.nv), np.ones(model.nv))
    with pytest.raises(np.linalg.LinAlgError, match="state 0 of the stack: .*singular"):
        ld.aba(model, q[None], np.zeros(model.nv), np.ones(model.nv))
    assert np.all(ld.crba(model, q) == 0)          # well defined, just zero
    with pytest.raises(ValueError, match="no .*mass"):
        ld.center_of_mass(model, q)


@pytest.mark.parametrize("joint, inertia", [
    (ld.Spherical(), ld.Inertia(1.0)),                          # a point mass at the ball's centre
    (ld.Revolute("z"), ld.Inertia(1.0, [0, 0, 0.3])),           # a point mass on the revolute axis
    (ld.Universal("x", "y"), ld.Inertia(1.0, [0, 0.4, 0])),     # ... on the second axis
    (ld.Cylindrical("x"), ld.Inertia(2.0, [0.5, 0, 0])),        # ... on the cylinder axis
])
def test_no_inertia_in_the_direction_of_motion(joint, inertia):
    b = ld.ModelBuilder("degenerate")
    b.add_body("a", "world", joint, inertia=inertia)
    model = b.build()
    q = ld.random_configuration(model, 1)
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        ld.aba(model, q, np.zeros(model.nv), np.ones(model.nv))


def test_gimbal_lock_is_singular_in_one_state_of_a_stack():
    b = ld.ModelBuilder("zyx")
    b.add_body("a", "world", ld.SphericalZYX(), inertia=ld.Inertia(1.0, [0.1, 0.2, 0.3], np.diag([1.0, 2.0, 3.0])))
    model = b.build()
    Q = np.zeros((6, 3))
    Q[3, 1] = np.pi / 2
    ld.aba(model, Q[:3], np.zeros(3), np.ones(3))             # control: the other states are fine
    with pytest.raises(np.linalg.LinAlgError, match="^state 3 of the stack: .*singular"):
        ld.aba(model, Q, np.zeros(3), np.ones(3))


# ---------------------------------------------------------------------------------------
# the builder
def _builder():
    b = ld.ModelBuilder("b")
    b.add_body("a", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0))
    return b


@pytest.mark.parametrize("call, exc, msg", [
    (lambda b: b.add_body("a", "world", ld.Revolute()), ValueError, r"a body named 'a' already exists"),
    (lambda b: b.add_body("world"), ValueError, r"a body named 'world' already exists"),
    (lambda b: b.add_body("c", "a", joint_name="a_joint"), ValueError, r"a joint named 'a_joint' already exists"),
    (lambda b: b.add_body("c", "nope"), ValueError, r"add_body\('c'\)\.parent: unknown body 'nope'; known: \['a', "
                                                    r"'world'\]"),
    (lambda b: b.add_body("c", 7), ValueError, r"no body with index 7"),
    (lambda b: b.add_body("c", "a", placement=(np.diag([1.0, 1.0, -1.0]), np.zeros(3))), ValueError,
     r"add_body\('c'\)\.placement: the rotation is not a proper rotation matrix"),
    (lambda b: b.add_body("c", "a", placement=(2 * np.eye(3), np.zeros(3))), ValueError, r"not a proper rotation"),
    (lambda b: b.add_body("c", "a", placement=np.diag([1.0, 1.0, 1.1, 1.0])), ValueError, r"not a proper rotation"),
    (lambda b: b.add_body("c", "a", placement=[1.0, np.nan, 0.0]), ValueError, r"placement: must be finite"),
    (lambda b: b.add_body("c", "a", placement=np.eye(3)), ValueError, r"placement: expected a 4x4 matrix"),
    (lambda b: b.add_body("c", "a", inertia=ld.Inertia(-1.0)), ValueError, r"Inertia\.mass: .*non-negative"),
    (lambda b: b.add_body("c", "a", inertia=ld.Inertia(np.inf)), ValueError, r"Inertia\.mass"),
    (lambda b: b.add_body("c", "a", inertia=ld.Inertia(1.0, [0, 0, 0], [[1, 2, 0], [0, 1, 0], [0, 0, 1]])),
     ValueError, r"symmetric"),
    (lambda b: b.add_body("c", "a", inertia=np.ones((5, 5))), ValueError, r"6x6"),
    (lambda b: b.add_body("c", "a", joint="revolute"), TypeError, r"joint must be a linkdyn joint kind"),
    (lambda b: b.add_body("c", "a", ld.Revolute(), lower=[0.0, 1.0]), ValueError,
     r"add_body\('c'\)\.lower: expected 1 values for a revolute joint, got 2"),
    (lambda b: b.add_body("c", "a", ld.Revolute(), lower=[1.0], upper=[0.0]), ValueError, r"lower limit above upper"),
    (lambda b: b.add_body("", "a"), ValueError, r"name must be a non-empty string"),
    (lambda b: b.add_frame("a", "a"), ValueError, r"the name 'a' is already used"),
    (lambda b: b.add_frame("f", "nope"), ValueError, r"add_frame\('f'\)\.body: unknown body 'nope'"),
    (lambda b: ld.Universal("x", "x"), ValueError, r"axis1 and axis2 must not be parallel"),
    (lambda b: ld.Universal([1.0, 0, 0], [-2.0, 0, 0]), ValueError, r"must not be parallel"),
    (lambda b: ld.Universal([1.0, 0, 0], [1.0, 1e-12, 0]), ValueError, r"must not be parallel"),
    (lambda b: ld.Revolute([0.0, 0.0, 0.0]), ValueError, r"axis: must be a finite non-zero vector"),
    (lambda b: ld.Prismatic([1.0, np.nan, 0.0]), ValueError, r"axis: must be a finite non-zero vector"),
    (lambda b: ld.Cylindrical("w"), ValueError, r"axis: expected 'x', 'y', 'z'"),
    (lambda b: ld.Revolute([1.0, 0.0]), ValueError, r"axis: expected a 3-vector"),
    (lambda b: ld.ModelBuilder("g", gravity=[0.0, 0.0]), ValueError, r"gravity: expected a finite 3-vector"),
], ids=["duplicate-body", "duplicate-world", "duplicate-joint", "unknown-parent", "parent-index", "reflection",
        "scaled-rotation", "scaled-4x4", "nan-placement", "3x3-placement", "negative-mass", "infinite-mass",
        "asymmetric-inertia", "6x6-shape", "joint-not-a-joint", "limits-size", "limits-order", "empty-name",
        "duplicate-frame", "frame-unknown-body", "universal-parallel", "universal-antiparallel",
        "universal-nearly-parallel", "zero-axis", "nan-axis", "bad-axis-name", "axis-size", "gravity"])
def test_builder_errors(call, exc, msg):
    b = _builder()
    with pytest.raises(exc, match=msg):
        call(b)
    b.build()          # the failed call left the builder usable


@pytest.mark.parametrize("Ic", [-np.eye(3), np.diag([1.0, 1.0, -0.1])])
def test_builder_rejects_negative_rotational_inertia(Ic):
    """(regression: a negative mass was refused but not a rotational inertia with a negative
    eigenvalue, giving an indefinite mass matrix)"""
    b = _builder()
    with pytest.raises(ValueError, match="inertia"):
        b.add_body("c", "a", ld.Revolute("x"), inertia=ld.Inertia(1.0, [0, 0, 0], Ic))
    b.build()


def test_builder_errors_leave_no_partial_body():
    b = _builder()
    with pytest.raises(ValueError):
        b.add_body("c", "a", ld.Revolute(), lower=[1.0], upper=[0.0])
    b.add_body("c", "a", ld.Revolute(), inertia=ld.Inertia(1.0))     # the name is still free
    assert b.build().body_names == ("world", "a", "c")


# ------------------------------------------------------------------------------------------
# model files: regular files only, bounded reads (issue 17)
@pytest.mark.parametrize("loader", ["load_urdf", "load_mjcf"])
def test_loaders_refuse_devices_fifos_directories_and_huge_files(tmp_path, loader):
    import os
    import time
    from linkdyn.model.io import _files
    load = getattr(ld, loader)
    err = ld.model.io.urdf.URDFError if loader == "load_urdf" else ld.model.io.mjcf.MJCFError
    link = tmp_path / "zero.xml"
    os.symlink("/dev/zero", link)
    fifo = tmp_path / "pipe.xml"
    os.mkfifo(fifo)
    for path, kind in ((link, "a device"), (fifo, "a FIFO"), (tmp_path, "a directory")):
        t0 = time.perf_counter()
        with pytest.raises(err, match=f"{path.name}.*is {kind}"):
            load(path)
        assert time.perf_counter() - t0 < 1.0
    big = tmp_path / "big.xml"
    big.write_bytes(b" " * 2048)
    with pytest.raises(err, match="larger than the limit of 1024"):
        _files.read_model_file(big, err, max_bytes=1024)
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.xml")


def test_model_values_and_argument_types_are_checked():
    b = ld.ModelBuilder("m")
    with pytest.raises(ValueError, match=r"add_body\('huge'\).inertia: .*overflows"):
        b.add_body("huge", "world", ld.Revolute("z"), inertia=ld.Inertia(1e300, [1e5, 0, 0], np.eye(3)))
    with pytest.raises(ValueError, match=r"add_body\('far'\).inertia: Inertia.com: .*physical range"):
        b.add_body("far", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0, [1e200, 0, 0], np.eye(3)))
    with pytest.raises(ValueError, match=r"add_body\('neg'\).inertia: .*positive semi-definite"):
        b.add_body("neg", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0, [0, 0, 0], np.diag([0.1, -0.1, 0.1])))
    # principal moments no mass distribution has (C > A + B): refused, naming the body
    with pytest.raises(ValueError, match=r"add_body\('rod'\).inertia: .*triangle inequality"):
        b.add_body("rod", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0, [0, 0, 0], np.diag([0.1, 0.1, 0.3])))
    # a thin disc sits on the boundary (C = A + B), and files print few digits: accepted
    b.add_body("disc", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0, [0, 0, 0], np.diag([0.1, 0.1, 0.2000001])))
    b.add_body("ok", "world", ld.Revolute("z"), inertia=ld.Inertia(1.0, [0, 0, 0], np.diag([0.1, 0.1, 0.2])))
    m = b.build()
    with pytest.raises(TypeError, match="frame"):
        ld.frame_pose(m, ld.neutral(m), True)
    with pytest.raises(TypeError, match="dt"):
        ld.integrate(m, ld.neutral(m), np.zeros(m.nv), dt="0.1")
    with pytest.raises(ValueError, match="record_every"):
        ld.Simulation(m, record_every=2.7)
    with pytest.raises(ValueError, match="dt"):
        ld.Simulation(m, dt="0.001")


def test_no_compiled_kernel_is_reachable_by_a_public_name():
    """The compiled kernels trust their arguments (wrong sizes would read out of bounds), so
    none is reachable from a public name: every module-level Numba function of a public module
    is private (underscore), and the private modules (``linkdyn._kernels``,
    ``linkdyn.loops._kernels``, ``linkdyn.sim._timestep_kernel``) say so by their names.  Every
    public entry point validates its input first."""
    import importlib
    import pkgutil

    from numba.core.registry import CPUDispatcher
    public = []
    for info in pkgutil.walk_packages(ld.__path__, "linkdyn."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        mod = importlib.import_module(info.name)
        public += [f"{info.name}.{n}" for n, o in vars(mod).items()
                   if not n.startswith("_") and isinstance(o, CPUDispatcher)]
    assert public == []


# --- physical parameters refused at the door (the security issue's "silent wrong physics") ---------
def _box_on_ground():
    b = ld.ModelBuilder("box")
    b.add_body("box", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
    return b


@pytest.mark.parametrize("kw,err", [({"restitution": 5.0}, ValueError), ({"restitution": -0.1}, ValueError),
                                    ({"friction": -1.0}, ValueError), ({"friction": np.inf}, ValueError),
                                    ({"restitution": True}, TypeError), ({"friction": "0.5"}, TypeError)])
def test_a_plane_with_an_unphysical_coefficient_is_refused_by_name(kw, err):
    """add_plane(restitution=5) let a box go from 5.9 J to 124 J; add_contact already capped it at 1."""
    b = _box_on_ground()
    with pytest.raises(err, match=f"add_plane\\('ground'\\)\\.{next(iter(kw))}"):
        b.add_plane("ground", **kw)


@pytest.mark.parametrize("kw,err", [({"restitution": 1.5}, ValueError), ({"radius": True}, TypeError),
                                    ({"friction": "1"}, TypeError), ({"radius": 1e308 * 10}, ValueError)])
def test_a_contact_with_an_unphysical_parameter_is_refused_by_name(kw, err):
    b = _box_on_ground()
    with pytest.raises(err, match=next(iter(kw))):
        b.add_contact("box", [0, 0, -0.1], **kw)


@pytest.mark.parametrize("dt", [-0.01, 0.0, np.nan, np.inf, True])
def test_a_step_never_runs_time_backwards_or_nowhere(dt):
    sim = ld.Simulation(ld.models.planar_2link(), dt=1e-3)
    with pytest.raises(ValueError, match="dt"):
        sim.step(dt)
    assert sim.t == 0.0


@pytest.mark.parametrize("t", [np.nan, np.inf, "0", True])
def test_a_simulation_starts_at_a_finite_time(t):
    with pytest.raises(ValueError, match="t: expected a finite number"):
        ld.Simulation(ld.models.planar_2link(), t=t)


@pytest.mark.parametrize("field, bad, error", [("ratio", "2", TypeError), ("ratio", True, TypeError),
                                               ("ratio", float("nan"), ValueError), ("offset", True, TypeError),
                                               ("offset", float("inf"), ValueError)])
def test_add_gear_refuses_str_bool_and_nonfinite_ratio_and_offset_by_name(field, bad, error):
    """add_gear(ratio="2") and ratio=True were accepted (float("2"), float(True))."""
    from linkdyn.model import joints as J
    b = ld.ModelBuilder("g")
    b.add_body("a", "world", J.Revolute((0, 0, 1)), inertia=ld.Inertia(1.0, np.zeros(3), np.eye(3)), joint_name="jl")
    b.add_body("c", "a", J.Revolute((0, 0, 1)), inertia=ld.Inertia(1.0, np.zeros(3), np.eye(3)), joint_name="jf")
    leader, follower = "jl", "jf"
    kw = {"ratio": 2.0, "offset": 0.0, field: bad}
    with pytest.raises(error, match=f"add_gear.*{field}"):
        b.add_gear(follower, leader, **kw)


@pytest.mark.parametrize("lower, upper", [(np.inf, np.inf), (-np.inf, -np.inf), (np.inf, None), (None, -np.inf)])
def test_infinite_wrong_side_limits_refused(lower, upper):
    """lower=upper=inf was accepted as 'no limit'."""
    from linkdyn.model import joints as J
    b = ld.ModelBuilder("lim")
    with pytest.raises(ValueError, match="add_body\\('a'\\).*inf"):
        b.add_body("a", "world", J.Revolute((0, 0, 1)), inertia=ld.Inertia(1.0, np.zeros(3), np.eye(3)),
                   lower=None if lower is None else [lower], upper=None if upper is None else [upper])
