"""Manipulability measures (seed 002 sec. 4.4) on the DH arms."""
from math import pi

import numpy as np
import pytest

import linkdyn as ld
from linkdyn.analysis import manipulability, manipulability_ellipsoid
from linkdyn.analysis import task_jacobian
from linkdyn.models import dh

RNG = np.random.default_rng(4)
L1, L2 = 0.8, 0.5


@pytest.fixture(scope="module")
def planar():
    return dh.planar_2link(L1, L2, 1.0, 2.0)


@pytest.fixture(scope="module")
def puma():
    return dh.puma560()


def planar_J(q):
    """Closed-form xy Jacobian of the planar 2-link tip."""
    s1, c1, s12, c12 = np.sin(q[0]), np.cos(q[0]), np.sin(q[0] + q[1]), np.cos(q[0] + q[1])
    return np.array([[-L1 * s1 - L2 * s12, -L2 * s12], [L1 * c1 + L2 * c12, L2 * c12]])


def test_planar_yoshikawa_is_l1_l2_abs_sin_q2(planar):
    Q = RNG.uniform(-pi, pi, size=(50, 2))
    expected = L1 * L2 * np.abs(np.sin(Q[:, 1]))
    for part in ("translation", (0, 1)):    # tall 3x2 (z row zero) and square 2x2
        np.testing.assert_allclose(manipulability(planar, Q, "tool", part=part), expected, atol=1e-12)
    # square case: equals |det J| of the closed form
    for q in Q[:5]:
        assert manipulability(planar, q, "tool", part=(0, 1)) == pytest.approx(abs(np.linalg.det(planar_J(q))), abs=1e-12)


@pytest.mark.parametrize("q2", [0.0, pi, -pi])
def test_zero_at_singularities(planar, q2):
    q = np.array([0.7, q2])
    assert manipulability(planar, q, "tool", part=(0, 1)) == pytest.approx(0.0, abs=1e-12)
    assert manipulability(planar, q, "tool", part="translation") == pytest.approx(0.0, abs=1e-12)
    assert manipulability(planar, q, "tool", kind="stochastic", part=(0, 1)) == pytest.approx(0.0, abs=1e-6)
    assert manipulability(planar, q, "tool", kind="condition", part=(0, 1)) > 1e12


def test_exact_singular_point_gives_zero_and_inf():
    model = dh.cartesian_arm()
    # a Cartesian arm's rotation Jacobian is identically zero
    q = np.array([0.2, 0.3, 0.4])
    assert manipulability(model, q, "tool", part="rotation") == 0.0
    assert manipulability(model, q, "tool", kind="stochastic", part="rotation") == 0.0
    assert manipulability(model, q, "tool", kind="condition", part="rotation") == np.inf
    # and its translation Jacobian is a rotation matrix: all measures are those of the identity
    assert manipulability(model, q, "tool", part="translation") == pytest.approx(1.0, abs=1e-12)
    assert manipulability(model, q, "tool", kind="stochastic", part="translation") == pytest.approx(np.sqrt(3 * 3 / 3))
    assert manipulability(model, q, "tool", kind="condition", part="translation") == pytest.approx(1.0)


def test_yoshikawa_equals_sqrt_det_JJT_for_wide_J(puma):
    for q in RNG.uniform(-1.5, 1.5, size=(5, 6)):
        J = ld.jacobian(puma, q, "tool", "local_world_aligned")
        for part, rows in (("translation", slice(0, 3)), ("rotation", slice(3, 6)), ("full", slice(0, 6))):
            Jp = J[rows]
            assert manipulability(puma, q, "tool", part=part) == pytest.approx(np.sqrt(np.linalg.det(Jp @ Jp.T)), rel=1e-9)


def test_weighted(planar, puma):
    q = np.array([0.3, 1.1])
    w = np.array([4.0, 9.0])               # q'^T W q' <= 1: joint speed limits 1/2 and 1/3
    base = L1 * L2 * abs(np.sin(q[1]))
    assert manipulability(planar, q, "tool", part=(0, 1), weight=w) == pytest.approx(base / 6.0, rel=1e-12)
    assert manipulability(planar, q, "tool", part=(0, 1), weight=np.diag(w)) == pytest.approx(base / 6.0, rel=1e-12)
    # full SPD weight on a wide Jacobian: sqrt(det(J W^-1 J^T))
    A = RNG.normal(size=(6, 6))
    W = A @ A.T + np.eye(6)
    qp = RNG.uniform(-1, 1, 6)
    J = ld.jacobian(puma, qp, "tool", "local_world_aligned")[:3]
    expected = np.sqrt(np.linalg.det(J @ np.linalg.inv(W) @ J.T))
    assert manipulability(puma, qp, "tool", part="translation", weight=W) == pytest.approx(expected, rel=1e-9)
    radii, _ = manipulability_ellipsoid(puma, qp, "tool", weight=W)
    np.testing.assert_allclose(np.sort(radii ** 2), np.sort(np.linalg.eigvalsh(J @ np.linalg.inv(W) @ J.T)), rtol=1e-9)


def stochastic_direct(J):
    """Eqs. (4.67)-(4.70): m_s = sqrt(1 / E), E = tr((J J^T)^-1) / (m n)."""
    m, n = J.shape
    return np.sqrt(1.0 / (np.trace(np.linalg.inv(J @ J.T)) / (m * n)))


def test_stochastic_matches_definition(planar, puma):
    for q in RNG.uniform(-pi, pi, size=(10, 2)):
        J = planar_J(q)
        assert manipulability(planar, q, "tool", kind="stochastic", part=(0, 1)) == pytest.approx(stochastic_direct(J), rel=1e-9)
    for q in RNG.uniform(-1.5, 1.5, size=(5, 6)):
        J = ld.jacobian(puma, q, "tool", "local_world_aligned")
        for part, rows in (("translation", slice(0, 3)), ("full", slice(0, 6))):
            got = manipulability(puma, q, "tool", kind="stochastic", part=part)
            assert got == pytest.approx(stochastic_direct(J[rows]), rel=1e-9)


def test_stochastic_monte_carlo_expectation(puma):
    """Eqs. (4.62)-(4.63) with a uniform P(dS): E = mean over unit x' of x'^T (J J^T)^-1 x' / n."""
    q = np.array([0.1, 0.7, -1.2, 0.4, 0.9, 0.2])
    J = ld.jacobian(puma, q, "tool", "local_world_aligned")[:3]
    x = RNG.normal(size=(400_000, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    E = np.einsum("ki,ij,kj->k", x, np.linalg.inv(J @ J.T), x).mean() / puma.nv
    assert manipulability(puma, q, "tool", kind="stochastic", part="translation") == pytest.approx(np.sqrt(1 / E), rel=1e-2)


def test_condition_number(planar, puma):
    for q in RNG.uniform(-pi, pi, size=(10, 2)):
        assert manipulability(planar, q, "tool", kind="condition", part=(0, 1)) == pytest.approx(np.linalg.cond(planar_J(q)), rel=1e-9)
    q = RNG.uniform(-1, 1, 6)
    J = ld.jacobian(puma, q, "tool", "local_world_aligned")
    assert manipulability(puma, q, "tool", kind="condition") == pytest.approx(np.linalg.cond(J), rel=1e-9)


def test_ellipsoid_radii_and_axes(planar, puma):
    for model, q, part, rows in ((planar, np.array([0.4, 1.3]), (0, 1), [0, 1]),
                                 (planar, np.array([0.4, 1.3]), "translation", [0, 1, 2]),
                                 (puma, RNG.uniform(-1, 1, 6), "translation", [0, 1, 2]),
                                 (puma, RNG.uniform(-1, 1, 6), "full", list(range(6)))):
        J = ld.jacobian(model, q, "tool", "local_world_aligned")[rows]
        radii, axes = manipulability_ellipsoid(model, q, "tool", part=part)
        m = len(rows)
        assert radii.shape == (m,) and axes.shape == (m, m)
        sv = np.linalg.svd(J, compute_uv=False)
        np.testing.assert_allclose(radii[:len(sv)], sv, atol=1e-12)
        np.testing.assert_allclose(radii[len(sv):], 0.0)
        assert np.all(np.diff(radii) <= 1e-15)
        np.testing.assert_allclose(axes.T @ axes, np.eye(m), atol=1e-12)
        # J J^T = U diag(r^2) U^T: the ellipsoid x'^T (J J^T)^-1 x' <= 1 has these semi-axes
        np.testing.assert_allclose(axes @ np.diag(radii ** 2) @ axes.T, J @ J.T, atol=1e-12)
        # yoshikawa is the product of the (non-trivial) radii
        assert manipulability(model, q, "tool", part=part) == pytest.approx(np.prod(sv), rel=1e-12)
    # the image of the unit circle of joint speeds lies on the ellipse (square planar case)
    q = np.array([0.4, 1.3])
    radii, axes = manipulability_ellipsoid(planar, q, "tool", part=(0, 1))
    t = np.linspace(0, 2 * pi, 50)
    xd = planar_J(q) @ np.vstack([np.cos(t), np.sin(t)])
    coords = axes.T @ xd
    np.testing.assert_allclose((coords[0] / radii[0]) ** 2 + (coords[1] / radii[1]) ** 2, 1.0, atol=1e-12)


@pytest.mark.parametrize("kind", ["yoshikawa", "stochastic", "condition"])
def test_batch_equals_loop(puma, kind):
    Q = RNG.uniform(-1.5, 1.5, size=(7, 6))
    W = RNG.uniform(0.5, 2.0, 6)
    for part in ("full", "translation", "rotation"):
        batch = manipulability(puma, Q, "tool", kind=kind, part=part, weight=W)
        assert batch.shape == (7,)
        loop = [manipulability(puma, q, "tool", kind=kind, part=part, weight=W) for q in Q]
        assert all(isinstance(x, float) for x in loop)
        np.testing.assert_allclose(batch, loop, rtol=1e-12)
    radii, axes = manipulability_ellipsoid(puma, Q, "link3")
    assert radii.shape == (7, 3) and axes.shape == (7, 3, 3)
    for k, q in enumerate(Q):
        r, a = manipulability_ellipsoid(puma, q, "link3")
        np.testing.assert_allclose(radii[k], r, atol=1e-12)
        np.testing.assert_allclose(np.abs(np.einsum("ij,ij->j", axes[k], a)), 1.0, atol=1e-9)   # same axes up to sign


def test_bad_arguments(planar):
    q = np.array([0.1, 0.2])
    cases = [
        (dict(kind="volume"), "kind"),
        (dict(part="linear"), "part"),
        (dict(part=(0, 6)), "part"),
        (dict(part=(1, 1)), "part"),
        (dict(part=()), "part"),
        (dict(part=3), "part"),
        (dict(weight=[1.0, 2.0, 3.0]), "weight"),
        (dict(weight=[1.0, -2.0]), "weight"),
        (dict(weight=[[1.0, 2.0], [2.0, 1.0]]), "weight"),       # indefinite
        (dict(weight=[[1.0, 0.5], [0.0, 1.0]]), "weight"),       # not symmetric
        (dict(weight=[1.0, np.nan]), "weight"),
    ]
    for kw, what in cases:
        with pytest.raises(ValueError, match=what):
            manipulability(planar, q, "tool", **kw)
    with pytest.raises(ValueError, match="q"):
        manipulability(planar, [0.1, 0.2, 0.3], "tool")
    with pytest.raises(ValueError, match="q"):
        manipulability(planar, np.zeros((2, 2, 2)), "tool")
    with pytest.raises(ValueError, match="q"):
        manipulability(planar, [0.1, np.inf], "tool")
    with pytest.raises(ValueError, match="frame"):
        manipulability(planar, q, "gripper")
    with pytest.raises(ValueError, match="frame"):
        manipulability_ellipsoid(planar, q, None)
    with pytest.raises(ValueError, match="part"):
        manipulability_ellipsoid(planar, q, "tool", part="everything")
    assert task_jacobian(planar, q, "tool", part="rotation").shape == (3, 2)


def test_plot_manipulability_ellipses(planar):
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    from linkdyn.analysis import plot_manipulability_ellipses
    qs = np.c_[np.full(5, 0.3), np.linspace(0.3, 2.5, 5)]
    ax = plot_manipulability_ellipses(planar, qs, "tool")
    assert len(ax.patches) == 5 and len(ax.lines) == 5
    plt.close(ax.figure)


def test_the_3d_ellipsoid_is_drawn_with_its_radii(tmp_path):
    """``ld.plot_manipulability_ellipsoid``: the surface spans the ellipsoid's principal radii
    (scaled) around the tool; exported at the top level."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    m = ld.models.puma560()
    q = np.array([0.2, 0.7, -0.9, 0.3, 0.5, 0.1])
    radii, axes = ld.manipulability_ellipsoid(m, q, "tool")
    ax = ld.plot_manipulability_ellipsoid(m, q, "tool", scale=0.5)
    from linkdyn.analysis.measures import ellipsoid_surface
    pts = np.stack(ellipsoid_surface(m, q, "tool", scale=0.5, resolution=64), axis=-1).reshape(-1, 3)
    proj = np.abs((pts - ld.frame_pose(m, q, "tool")[:3, 3]) @ axes)  # along the principal axes
    assert np.allclose(proj.max(axis=0), 0.5 * radii, rtol=0.01)
    assert len(ax.collections) == 1
    ax.figure.savefig(tmp_path / "e.png")
    plt.close(ax.figure)
    assert (tmp_path / "e.png").stat().st_size > 1000
