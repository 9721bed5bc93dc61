"""linkdyn.contact.inertia: the inverse inertia J M^-1 J^T of frames by the articulated-body
recursion (seed 000 sec. 2.8), checked against

* the dense J M^-1 J^T from ``ld.jacobian`` and ``ld.crba`` (every joint kind, fixed and
  floating base, armature, massless links, human figures, example-robot-data robots);
* the response of ``ld.aba`` to a unit external force: the frame accelerations change by
  the block's column;
* a NumPy transcription of the seed's recursion in its own symbols (T_cp, S_cp, Θ), which
  shows that S_cp is the 6x6 matrix Ĵ D^-1 Ĵ^T (the seed prints a trailing δẐ_c) and that
  Φ_ji = -T_{j<-p} Θ_p T_{i<-p}^T for every pair of bodies.
"""
from __future__ import annotations

import numpy as np
import pytest

import linkdyn as ld
from linkdyn.contact.inertia import inverse_inertia, inverse_inertia_block

from conftest import TREES, build_tree, make_twin, pin, random_q, robot

REFS = ("world", "local", "local_world_aligned")
TOL = 1e-10


def dense(model, q, frames, reference):
    """J M^-1 J^T from the frame Jacobians and the joint-space inertia."""
    J = np.vstack([ld.jacobian(model, q, f, reference) for f in frames])
    return J @ np.linalg.solve(ld.crba(model, q), J.T)


def assert_rel(got, want, tol=TOL, what=""):
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    scale = max(np.max(np.abs(want)), 1e-300)
    err = np.max(np.abs(got - want))
    assert err <= tol * scale, f"{what}: max error {err:.3e} > {tol:.0e} * {scale:.3g}"


def with_armature(model, seed=0):
    """The same model with a random armature on every dof."""
    rng = np.random.default_rng(seed)
    b = ld.ModelBuilder.from_model(model, name=model.name + "+armature")
    for spec in b._bodies[1:]:
        spec.armature = rng.uniform(0.01, 0.3, len(spec.armature))
    m = b.build()
    assert m.nv == 0 or m.armature.min() > 0.0
    return m


def shuffled_frames(model, rng, extra=()):
    """Every frame of the model in random order, plus ``extra`` (repeats allowed)."""
    names = list(model.frame_names) + list(extra)
    rng.shuffle(names)
    return names


def relations(model, frames):
    """Which relations between the frames' bodies the set covers."""
    b = [int(model.frame_body[model.frame_id(f)]) for f in frames]

    def ancestors(i):
        out = set()
        while i > 0:
            i = int(model.parent[i])
            out.add(i)
        return out

    seen = set()
    for x in range(len(b)):
        if b[x] == 0:
            seen.add("world")
        for y in range(x):
            if b[x] == 0 or b[y] == 0:
                continue
            if b[x] == b[y]:
                seen.add("same body")
            elif b[y] in ancestors(b[x]) or b[x] in ancestors(b[y]):
                seen.add("ancestor")
            elif model.parent[b[x]] == model.parent[b[y]]:
                seen.add("siblings")
            else:
                seen.add("cousins")
    return seen


# --------------------------------------------------------------------------------------
# (a) against J M^-1 J^T
@pytest.mark.parametrize("name", list(TREES))
def test_random_trees_every_joint_kind(name):
    model = build_tree(name)
    rng = np.random.default_rng(1)
    for _ in range(2):
        q = random_q(model, rng)
        frames = shuffled_frames(model, rng, extra=("tip",))
        for ref in REFS:
            assert_rel(inverse_inertia(model, q, frames, ref), dense(model, q, frames, ref), what=f"{name} {ref}")


ARMATURE_TREES = {
    "arm-fixed-all-kinds": dict(nbodies=10, floating=False, seed=21, branching=0.6),
    "arm-floating-branchy": dict(nbodies=18, floating=True, seed=22, branching=0.8),
    "arm-fixed-chain": dict(nbodies=8, floating=False, seed=23, branching=0.0),
}


@pytest.mark.parametrize("name", list(ARMATURE_TREES))
def test_random_trees_with_armature(name):
    model = ld.models.random_tree(joint_terms=True, **ARMATURE_TREES[name])
    assert model.armature.max() > 0.0
    rng = np.random.default_rng(2)
    q = random_q(model, rng)
    frames = shuffled_frames(model, rng, extra=("tip", "world"))
    for ref in REFS:
        assert_rel(inverse_inertia(model, q, frames, ref), dense(model, q, frames, ref), what=f"{name} {ref}")


@pytest.mark.skipif(pin is None, reason="pinocchio not installed (make_twin builds both models)")
def test_massless_links_and_armature():
    model = make_twin(seed=4, nbodies=10, massless_every=3).ld
    rng = np.random.default_rng(3)
    q = random_q(model, rng)
    frames = shuffled_frames(model, rng)
    for ref in REFS:
        assert_rel(inverse_inertia(model, q, frames, ref), dense(model, q, frames, ref), what=ref)


@pytest.mark.parametrize("make", [ld.models.human_figure, ld.models.human_figure_16])
def test_human_figures(make):
    rng = np.random.default_rng(4)
    for model in (make(), with_armature(make(), seed=5), make(floating=False)):
        q = random_q(model, rng)
        frames = shuffled_frames(model, rng)
        assert {"world", "same body", "ancestor", "siblings", "cousins"} <= relations(model, frames)
        for ref in REFS:
            assert_rel(inverse_inertia(model, q, frames, ref), dense(model, q, frames, ref),
                       what=f"{model.name} {ref}")


@pytest.mark.parametrize("name", ["panda", "talos", "solo"])
def test_example_robots(name):
    try:
        base = robot(name)
    except Exception as exc:        # example-robot-data not installed
        pytest.skip(f"{name} unavailable: {exc}")
    rng = np.random.default_rng(6)
    for model in (base, with_armature(base, seed=7)):
        q = random_q(model, rng)
        frames = shuffled_frames(model, rng)
        for ref in REFS:
            assert_rel(inverse_inertia(model, q, frames, ref), dense(model, q, frames, ref),
                       what=f"{model.name} {ref}")


def test_every_relation_between_two_frames():
    """inverse_inertia_block for one frame with itself, two frames on one body, an ancestor
    (both orders), siblings, cousins and the world."""
    model = ld.models.random_tree(nbodies=14, floating=True, seed=31, branching=0.8, joint_terms=True)
    b = ld.ModelBuilder.from_model(model)
    b.add_frame("extra", "body5", placement=(np.eye(3), np.array([0.1, -0.2, 0.3])))
    model = b.build()
    parent = model.parent
    bid = {n: int(model.frame_body[model.frame_id(n)]) for n in model.frame_names}
    kids = [np.flatnonzero(parent == i) for i in range(model.nbody)]
    sib = next(k for k in kids[1:] if len(k) >= 2)
    leaf = max(range(1, model.nbody), key=lambda i: len(model.support(i)))
    anc = model.support(leaf)[1]
    name = {i: model.body_names[i] for i in range(model.nbody)}
    assert bid["extra"] == bid["body5"]
    pairs = {"itself": ("extra", "extra"), "same body": ("extra", "body5"), "ancestor": (name[anc], name[leaf]),
             "descendant": (name[leaf], name[anc]), "siblings": (name[sib[0]], name[sib[1]]),
             "world-left": ("world", name[leaf]), "world-right": (name[leaf], "world")}
    rng = np.random.default_rng(8)
    q = random_q(model, rng)
    for ref in REFS:
        for what, (a, c) in pairs.items():
            blk = inverse_inertia_block(model, q, a, c, ref)
            want = dense(model, q, (a, c), ref)[:6, 6:]
            assert blk.shape == (6, 6)
            if "world" in what:
                assert np.all(blk == 0.0), what
            else:
                assert_rel(blk, want, what=f"{what} {ref}")


def test_single_frame_indices_and_repeats():
    model = with_armature(ld.models.human_figure_16(), seed=9)
    q = random_q(model, np.random.default_rng(10))
    full = inverse_inertia(model, q, ["l_sole", "r_grip", "l_sole"])
    one = inverse_inertia(model, q, "r_grip")
    assert one.shape == (6, 6)
    np.testing.assert_array_equal(one, full[6:12, 6:12])
    np.testing.assert_array_equal(full[0:6, 0:6], full[12:18, 12:18])
    np.testing.assert_allclose(full[0:6, :], full[12:18, :], rtol=0, atol=1e-14 * np.abs(full).max())
    k = model.frame_id("r_grip")
    np.testing.assert_array_equal(inverse_inertia(model, q, k), one)
    np.testing.assert_array_equal(inverse_inertia(model, q, np.int64(k)), one)
    assert inverse_inertia(model, q, []).shape == (0, 0)
    # a strided q, a list q and a fresh q after the frames were cached
    qq = np.empty(2 * model.nq)
    qq[::2] = q
    np.testing.assert_allclose(inverse_inertia(model, qq[::2], "r_grip"), one, rtol=0, atol=0)
    np.testing.assert_allclose(inverse_inertia(model, list(q), "r_grip"), one, rtol=0, atol=0)
    q2 = random_q(model, np.random.default_rng(11))
    assert_rel(inverse_inertia(model, q2, ["l_sole", "r_grip", "l_sole"]),
               dense(model, q2, ["l_sole", "r_grip", "l_sole"], "local_world_aligned"))


# --------------------------------------------------------------------------------------
# (b) against the response of ABA to a unit external force
def _E(model, q, frame, ref):
    """The 6x6 map from the velocity [v; w] of the frame's body (body frame) to the frame's
    velocity in ``ref``; a force λ in ``ref`` acts on the body as E^T λ."""
    f = model.frame_id(frame)
    fR, fp = np.asarray(model.frame_R[f]), np.asarray(model.frame_p[f])
    T = ld.frame_pose(model, q, frame)
    Rb = T[:3, :3] @ fR.T                   # the body's world pose from the frame's
    pb = T[:3, 3] - Rb @ fp

    def sk(w):
        return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])

    E = np.zeros((6, 6))
    if ref == "local":
        E[:3, :3], E[:3, 3:], E[3:, 3:] = fR.T, -fR.T @ sk(fp), fR.T
    elif ref == "local_world_aligned":
        E[:3, :3], E[:3, 3:], E[3:, 3:] = Rb, -Rb @ sk(fp), Rb
    else:
        E[:3, :3], E[:3, 3:], E[3:, 3:] = Rb, sk(pb) @ Rb, Rb
    return E


@pytest.mark.parametrize("which", ["human_armature", "floating-tree", "fixed-tree"])
def test_against_aba_with_unit_external_forces(which):
    if which == "human_armature":
        model = with_armature(ld.models.human_figure(), seed=12)
        frames = ["l_sole", "r_toe", "l_grip", "head_top", "torso", "l_foot", "world"]
    else:
        model = ld.models.random_tree(nbodies=9, floating=which == "floating-tree", seed=41, branching=0.7,
                                      joint_terms=True)
        frames = ["tip", "body8", "body2", "body5", "world", "body0"]
    rng = np.random.default_rng(13)
    q = random_q(model, rng)
    v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
    qdd0 = ld.aba(model, q, v, tau)
    for ref in REFS:
        Phi = inverse_inertia(model, q, frames, ref)
        J = np.vstack([ld.jacobian(model, q, f, ref) for f in frames])
        for col, fr in enumerate(frames):
            b = int(model.frame_body[model.frame_id(fr)])
            if b == 0:
                np.testing.assert_array_equal(Phi[:, 6 * col:6 * col + 6], 0.0)
                continue
            E = _E(model, q, fr, ref)
            Jb = ld.jacobian(model, q, model.body_names[b], "local")
            assert_rel(E @ Jb, ld.jacobian(model, q, fr, ref), 1e-12, "E maps the body's velocity to the frame's")
            for k in range(6):
                fext = np.zeros((model.nbody, 6))
                fext[b] = E[k]                                    # E^T e_k: a unit force in ref
                dqdd = ld.aba(model, q, v, tau, fext=fext) - qdd0
                assert_rel(Phi[:, 6 * col + k], J @ dqdd, TOL, f"{which} {ref} {fr} e{k}")


# --------------------------------------------------------------------------------------
# (c) the seed's recursion in its own symbols, and the misprint in S_cp
def seed_recursion(model, q, s_term="matrix"):
    """Φ (nb, nb, 6, 6): Φ[j, i] = acceleration of body j (body frame) per unit force on
    body i, by seed 000 sec. 2.8 from public quantities only.

    ``s_term``: "matrix" (S_cp = Ĵ D^-1 Ĵ^T, the corrected reading), "none" (no S term),
    "literal" (S_cp = Ĵ D^-1 Ĵ^T δẐ_c for the unit δẐ_c = -1 (6,): a vector, which NumPy can
    only subtract from Θ row by row)."""
    nb, parent = model.nbody, model.parent
    kin = ld.forward_kinematics(model, q)

    def X(i):                   # motion transform parent -> child, [lin; ang]
        p = parent[i]
        R = kin.R[p].T @ kin.R[i]
        r = kin.R[p].T @ (kin.p[i] - kin.p[p])
        sk = np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])
        out = np.zeros((6, 6))
        out[:3, :3], out[:3, 3:], out[3:, 3:] = R.T, -R.T @ sk, R.T
        return out

    Jh = {}
    for i in range(1, nb):      # Ĵ_i: the joint's own columns of the body's local Jacobian
        sl = slice(model.jnt_vadr[i], model.jnt_vadr[i] + model.jnt_nv[i])
        Jh[i] = ld.jacobian(model, q, model.body_names[i], "local")[:, sl]
    arm = np.asarray(model.armature)
    I = {i: np.array(model.inertia[i]) for i in range(nb)}
    Dinv = {}
    for i in range(nb - 1, 0, -1):              # eq. 25
        sl = slice(model.jnt_vadr[i], model.jnt_vadr[i] + model.jnt_nv[i])
        D = Jh[i].T @ I[i] @ Jh[i] + np.diag(arm[sl])
        Dinv[i] = np.linalg.inv(D)
        if parent[i] > 0:
            U = I[i] @ Jh[i]
            I[parent[i]] = I[parent[i]] + X(i).T @ (I[i] - U @ Dinv[i] @ U.T) @ X(i)
    T, Th = {}, {0: np.zeros((6, 6))}
    for i in range(1, nb):
        T[i] = (np.eye(6) - Jh[i] @ Dinv[i] @ (I[i] @ Jh[i]).T) @ X(i)
        S = Jh[i] @ Dinv[i] @ Jh[i].T
        if s_term == "none":
            S = 0.0 * S
        elif s_term == "literal":
            S = S @ -np.ones(6)
        Th[i] = T[i] @ Th[parent[i]] @ T[i].T - S

    def up(j, p):               # T_{j<-p}
        out = np.eye(6)
        while j != p:
            out = out @ T[j]
            j = parent[j]
        return out

    def lca(a, b):
        while a != b:
            if a > b:
                a = parent[a]
            else:
                b = parent[b]
        return a

    Phi = np.zeros((nb, nb, 6, 6))
    for j in range(1, nb):
        for i in range(1, nb):
            p = lca(i, j)
            Phi[j, i] = -up(j, p) @ Th[p] @ up(i, p).T
    return Phi


def body_dense(model, q):
    J = [ld.jacobian(model, q, model.body_names[i], "local") for i in range(model.nbody)]
    Minv = np.linalg.inv(ld.crba(model, q))
    return np.array([[J[j] @ Minv @ J[i].T for i in range(model.nbody)] for j in range(model.nbody)])


@pytest.mark.parametrize("model_name", ["branchy-floating", "fixed-armature", "human16"])
def test_seed_recursion_and_the_misprint(model_name):
    if model_name == "human16":
        model = with_armature(ld.models.human_figure_16(), seed=14)
    else:
        model = ld.models.random_tree(nbodies=10, floating=model_name == "branchy-floating", seed=51,
                                      branching=0.7, joint_terms=model_name == "fixed-armature")
    q = random_q(model, np.random.default_rng(15))
    want = body_dense(model, q)[1:, 1:]
    Phi = seed_recursion(model, q, "matrix")[1:, 1:]
    assert_rel(Phi, want, what="Φ_ji = -T_{j<-p} Θ_p T_{i<-p}^T with S_cp = Ĵ D^-1 Ĵ^T")
    # Φ_ii = -Θ_i: the diagonal blocks alone
    for i in range(model.nbody - 1):
        assert_rel(Phi[i, i], want[i, i], what=f"Φ_ii body {i + 1}")
    # the compiled kernel on the bodies' own frames (reference "local" = body frame)
    got = inverse_inertia(model, q, list(model.body_names[1:]), "local")
    assert_rel(got, want.transpose(0, 2, 1, 3).reshape(got.shape), what="kernel, body frames")
    # without the S term, or with the printed S_cp (a vector), the recursion is wrong
    for s_term in ("none", "literal"):
        bad = seed_recursion(model, q, s_term)[1:, 1:]
        err = np.max(np.abs(bad - want)) / np.max(np.abs(want))
        assert err > 1e-2, f"{s_term}: unexpectedly close ({err:.1e})"
    lit = seed_recursion(model, q, "literal")[1:, 1:].transpose(0, 2, 1, 3).reshape(got.shape)
    assert np.max(np.abs(lit - lit.T)) > 1e-3 * np.max(np.abs(lit)), "the literal reading is not even symmetric"


@pytest.mark.parametrize("ref", REFS)
def test_symmetric_positive_semidefinite(ref):
    model = with_armature(ld.models.human_figure(), seed=16)
    rng = np.random.default_rng(17)
    q = random_q(model, rng)
    frames = shuffled_frames(model, rng)
    A = inverse_inertia(model, q, frames, ref)
    np.testing.assert_array_equal(A, A.T)
    w = np.linalg.eigvalsh(A)
    assert w.min() >= -1e-10 * w.max()
    # rank: at most nv, and the diagonal block of a frame on a moving body is positive definite
    assert np.sum(w > 1e-9 * w.max()) <= model.nv
    f = frames.index("l_hand")
    assert np.linalg.eigvalsh(A[6 * f:6 * f + 6, 6 * f:6 * f + 6]).min() > 0.0


# --------------------------------------------------------------------------------------
# (d) errors
def test_errors():
    model = ld.models.human_figure_16()
    q = ld.neutral(model)
    with pytest.raises(KeyError, match=r"frames\[1\]: unknown frame 'nose'.*frames: \["):
        inverse_inertia(model, q, ["l_sole", "nose"])
    with pytest.raises(KeyError, match=r"frames: unknown frame 'nose'"):
        inverse_inertia(model, q, "nose")
    with pytest.raises(KeyError, match="out of range"):
        inverse_inertia(model, q, [model.nframes])
    with pytest.raises(TypeError, match=r"frames\[0\]"):
        inverse_inertia(model, q, [1.5])
    with pytest.raises(TypeError, match="frames"):
        inverse_inertia(model, q, None)
    with pytest.raises(ValueError, match=rf"q: expected shape \({model.nq},\).*got \(3,\)"):
        inverse_inertia(model, q[:3], "l_sole")
    with pytest.raises(ValueError, match=rf"q: expected shape \({model.nq},\).*got \(3,\)"):
        inverse_inertia(model, [0.0, 1.0, 2.0], "l_sole")
    with pytest.raises(ValueError, match="single configuration"):
        inverse_inertia(model, np.stack([q, q]), "l_sole")
    bad = q.copy()
    bad[4] = np.nan
    with pytest.raises(ValueError, match=r"q: contains NaN or infinity at index \(4,\)"):
        inverse_inertia(model, bad, "l_sole")
    bad = q.copy()
    bad[3:7] = [0.0, 0.0, 0.0, 2.0]
    with pytest.raises(ValueError, match="quaternion"):
        inverse_inertia(model, bad, "l_sole")
    with pytest.raises(TypeError, match="q: expected real numbers"):
        inverse_inertia(model, q.astype(complex), "l_sole")
    with pytest.raises(ValueError, match="reference: expected one of"):
        inverse_inertia(model, q, "l_sole", "global")
    # a good call still works after the failures
    assert_rel(inverse_inertia(model, q, "l_sole"), dense(model, q, ["l_sole"], "local_world_aligned"))


def test_frame_set_cache():
    """Frame sets are cached per model (with a shared scratch that grows): small, large and
    many different sets in turn all stay right."""
    model = ld.models.random_tree(nbodies=9, floating=True, seed=61, branching=0.6)
    q = random_q(model, np.random.default_rng(18))
    names = list(model.frame_names)
    want = dense(model, q, names, "world")

    def check(idx):
        got = inverse_inertia(model, q, [names[i] for i in idx], "world")
        assert_rel(got, want.reshape(len(names), 6, len(names), 6)[np.ix_(idx, range(6), idx, range(6))]
                   .reshape(got.shape), what=str(idx))

    check([3, 1])
    check(list(range(len(names))))          # the scratch grows
    check([3, 1])                           # the cached pair after the growth
    rng = np.random.default_rng(19)
    for _ in range(150):                    # more sets than the cache holds
        check(list(rng.choice(len(names), size=rng.integers(1, 5))))
