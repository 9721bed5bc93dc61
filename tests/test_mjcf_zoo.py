"""Every MJCF model file shipped with the installed ``dm_control`` and ``gymnasium`` packages
(both in the test extra; skipped where they are not installed), loaded by linkdyn and by MuJoCo,
compared at random states: the joint-space inertia (mj_fullM), inverse dynamics (mj_inverse:
the bias forces with gravity, springs and damping) and the passive forces (qfrc_passive: the
joints' springs and dampers), each to 1e-12 of its scale; the spring parameters (jnt_stiffness,
qpos_spring) and the damping read from the file.

What linkdyn does not model is switched off in MuJoCo before comparing, each named by the
loader's warning: fluid forces (``density``, ``viscosity``), gravity compensation and tendon
springs and dampers.  MuJoCo's ``frictionloss`` is a constraint (the constraints are disabled
here), linkdyn's a torque: taken off linkdyn's side.  A file linkdyn refuses
(NotImplementedError: a feature it does not represent, e.g. a tendon equality coupling three
joints) is skipped with its reason; a file MuJoCo itself cannot load is not a model file.
"""
import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import linkdyn as ld
from linkdyn.model import joints as J
from linkdyn.model.io.mjcf import q_to_qpos, v_to_qvel

mujoco = pytest.importorskip("mujoco")

TOL = 1e-12


def _files():
    """(file, its package's folder) of every MJCF model file of the two packages."""
    out = []
    for pkg in ("dm_control", "gymnasium"):
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(list(spec.submodule_search_locations)[0])
        for f in sorted(root.rglob("*.xml")):
            head = f.read_text(errors="replace")[:4000]
            if "<mujoco" in head and "<worldbody" in f.read_text(errors="replace"):
                out.append(pytest.param(f, root, id=f"{pkg}/{f.relative_to(root)}"))
    return out


FILES = _files()


def _mujoco(path):
    try:
        m = mujoco.MjModel.from_xml_path(str(path))
    except ValueError as exc:
        pytest.skip(f"MuJoCo does not load it either: {str(exc).splitlines()[0]}")
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    m.opt.density = m.opt.viscosity = 0.0            # fluid forces: not modelled in linkdyn
    m.body_gravcomp[:] = 0.0                         # gravity compensation: not modelled
    m.tendon_stiffness[:] = 0.0                      # tendon springs and dampers: not modelled (warned)
    m.tendon_damping[:] = 0.0
    return m


def _assert_close(got, want, what):
    scale = max(1.0, np.abs(want).max() if np.size(want) else 0.0)
    err = np.abs(np.asarray(got) - want).max() if np.size(want) else 0.0
    assert err <= TOL * scale, f"{what}: max error {err:.3e} > {TOL:.0e} * {scale:.3g}"
    return err / scale


@pytest.mark.skipif(not FILES, reason="neither dm_control nor gymnasium is installed")
def _mujocos_inertias(model, m):
    """(nbody, 6, 6): MuJoCo's compiled mass properties (body_mass, body_ipos, body_iquat,
    body_inertia) summed onto linkdyn's bodies: a MuJoCo body that linkdyn merged into its parent
    over a weld (a frame of that name now) is added at that frame's pose."""
    out = np.zeros((model.nbody, 6, 6))
    frames = dict(zip(model.frame_names, range(len(model.frame_names))))
    for k in range(1, m.nbody):
        if m.body_mass[k] == 0:
            continue
        name = m.body(k).name or f"body{k}"          # linkdyn's name of an unnamed body: its number
        if name in model.body_names:
            i, R, p = model.body_id(name), np.eye(3), np.zeros(3)
        else:
            f = frames[name]
            i, R, p = int(model.frame_body[f]), model.frame_R[f], model.frame_p[f]
        Ri = R @ Rotation.from_quat(m.body_iquat[k], scalar_first=True).as_matrix()
        out[i] += ld.Inertia(m.body_mass[k], R @ m.body_ipos[k] + p, Ri @ np.diag(m.body_inertia[k]) @ Ri.T).matrix()
    return out


def _with_mujocos_inertias(model, I6):
    """``model`` with its bodies' spatial inertias replaced by ``I6``: what is left between it and
    MuJoCo is the dynamics."""
    b = ld.ModelBuilder.from_model(model)
    for spec in b._bodies[1:]:                       # the builder's specs (test-only access)
        spec.I6 = I6[model.body_id(spec.name)]
    return b.build()


def _check_inertias(model, I6):
    """Mass and centre of mass of every body as MuJoCo compiles them, to 1e-12; the inertia
    tensor to 1e-6 of its largest moment (measured: at most 9.3e-8, on dog_v2): MuJoCo keeps a mesh's inertia as principal moments and
    axes, the axes found by an iteration (mju_eig3) that stops ~1e-9 short of them (measured: the
    jaco arm's shoulder mesh alone, moments equal to 1e-15, tensor off by 1.7e-9 of its size), and
    a body of several geoms is summed from those axes.  Returns the largest relative difference
    of a tensor."""
    worst = 0.0
    for i in range(1, model.nbody):
        if I6[i, 0, 0] == 0:
            continue
        mass, c, Ic = ld.spatial.inertia_parameters(model.inertia[i])
        mw, cw, Iw = ld.spatial.inertia_parameters(I6[i])
        assert mass == pytest.approx(mw, rel=1e-12), model.body_names[i]
        np.testing.assert_allclose(c, cw, rtol=0, atol=1e-12 * max(1.0, np.abs(cw).max()), err_msg=model.body_names[i])
        worst = max(worst, np.abs(Iw - Ic).max() / np.abs(Iw).max())
    assert worst <= 1e-6, worst
    return worst


@pytest.mark.parametrize("path, package", FILES)
def test_every_packaged_model_agrees_with_mujoco(path, package):
    m = _mujoco(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # what is not modelled is warned about; compared without it
        try:
            model = ld.load_mjcf(path, asset_dirs=[package])     # dog_v2 names the suite's meshes
        except NotImplementedError as exc:
            pytest.skip(f"linkdyn refuses it: {exc}")
    d = mujoco.MjData(m)
    if model.gears:        # MuJoCo's M and forces are those of the uncoupled tree (the coupling is a constraint)
        model = model.full_model
    assert (m.nq, m.nv) == (len(q_to_qpos(model, ld.neutral(model))), model.nv)
    # the springs and dampers as read: per joint and dof, and the spring reference as MuJoCo's qpos_spring
    movable = [i for i in range(1, model.nbody) if model.jnt_nv[i] and not model.is_virtual[i]]
    assert len(movable) == m.njnt
    for k, i in enumerate(movable):
        va, n = model.jnt_vadr[i], model.jnt_nv[i]
        # (springdamper's k and b come from M(qpos0): MuJoCo's inertias' rounding, 1e-12 of M, shows)
        np.testing.assert_allclose(model.stiffness[va:va + n], m.jnt_stiffness[k], rtol=1e-10, err_msg=m.joint(k).name)
    np.testing.assert_allclose(model.damping, m.dof_damping, rtol=1e-10)
    if m.nq:
        qs, qref = q_to_qpos(model, model.spring_ref), m.qpos_spring.copy()
        for i in movable:                            # a quaternion and its negative are one reference
            if model.jnt_type[i] in J.QUAT_OFFSET:
                o = model.jnt_qadr[i] + J.QUAT_OFFSET[model.jnt_type[i]]
                if np.dot(qs[o:o + 4], qref[o:o + 4]) < 0:
                    qs[o:o + 4] *= -1
        np.testing.assert_allclose(qs, qref, rtol=0, atol=1e-12, err_msg="spring_ref vs qpos_spring")
    I6 = _mujocos_inertias(model, m)
    _check_inertias(model, I6)
    twin = _with_mujocos_inertias(model, I6)
    rng = np.random.default_rng(0)
    for _ in range(2):
        q = ld.random_configuration(model, rng)
        v, a = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        T = np.column_stack([v_to_qvel(model, q, e) for e in np.eye(model.nv)]) if model.nv else np.zeros((0, 0))
        d.qpos[:] = q_to_qpos(model, q)
        d.qvel[:] = v_to_qvel(model, q, v) if model.nv else []
        # qacc = d/dt (T v) = T a + T' v (a free joint's world-frame velocity turns with the body)
        acc = T @ a
        for i in movable:
            if model.jnt_type[i] == J.FREE:
                qa, va = model.jnt_qadr[i], model.jnt_vadr[i]
                R = Rotation.from_quat(q[qa + 3:qa + 7]).as_matrix()
                c = np.flatnonzero(T[:, va])[0]
                acc[c:c + 3] += R @ np.cross(v[va + 3:va + 6], v[va:va + 3])
        d.qacc[:] = acc
        mujoco.mj_inverse(m, d)
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        _assert_close(ld.crba(twin, q), T.T @ M @ T, "M vs mj_fullM")
        _assert_close(ld.passive_forces(model, q, v), T.T @ d.qfrc_passive, "passive_forces vs qfrc_passive")
        _assert_close(ld.rnea(twin, q, v, a) - model.friction * np.sign(v), T.T @ d.qfrc_inverse, "rnea vs mj_inverse")
        # with linkdyn's own inertias: equal but for MuJoCo's principal axes (see _check_inertias)
        err = np.abs(ld.crba(model, q) - T.T @ M @ T).max() / max(1.0, np.abs(M).max()) if m.nv else 0.0
        assert err <= 1e-6, f"M with linkdyn's inertias: {err:.2e}"
