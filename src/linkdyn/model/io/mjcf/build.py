"""The public entry points ``load_mjcf`` / ``parse_mjcf`` and the model they build: the parsed
bodies and joints into a ModelBuilder (carrier bodies, hinge/slide ``ref``, ball limits),
sites as frames, equalities, contacts, drawing geometry, ``qpos0`` and keyframes."""
from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .... import spatial
from ... import joints as J
from ...builder import Inertia, ModelBuilder
from .common import _GEOM_TYPES, _I3, _WORLD, _Z3, MJCFError, MJCFInfo, _axis_angle, _pose, _unique, _warn
from .contacts import _contact_geometry
from .convert import qpos_to_q
from .defaults import _Attr, _Compiler, _Ctx
from .equality import _equalities
from .geoms import _collision_geometry
from .inertia import _MeshAssets
from .parse import _Parser
from .reader import _Reader, _read_limited

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable

    from numpy.typing import ArrayLike

    from ...model import Model


# --------------------------------------------------------------------------------------------
# public API
def load_mjcf(path: str | os.PathLike[str], gravity: ArrayLike | None = None, joint_friction: bool = True,
              return_info: bool = False, contacts: bool = True,
              asset_dirs: Iterable[str | os.PathLike[str]] | None = None) -> Model | tuple[Model, MJCFInfo]:
    """Read the MJCF file ``path`` into a :class:`~linkdyn.Model` (see the module docstring for
    the mapping).

    ``gravity``: the world gravity vector (default: the file's ``<option gravity>``, else
    [0, 0, -9.81]).  ``joint_friction``: read joint ``damping`` and ``frictionloss`` into
    ``model.damping`` / ``model.friction`` (applied by RNEA and ABA as viscous and Coulomb
    friction); on by default since MuJoCo always applies them.  ``return_info``: return
    ``(model, MJCFInfo)``.  ``contacts``: turn sphere and plane geoms into linkdyn contacts and
    planes (module docstring), which the simulation uses; ``False`` leaves those out.  The
    collision geometry (``model.geom_*``: every geom MuJoCo would collide, meshes aside) is
    loaded either way.
    ``<include>`` files are looked up in the folder of ``path``, mesh files under ``<compiler
    meshdir>`` there.  Every file the model names (includes, meshes), symbolic links resolved,
    must lie inside the folder of ``path`` or inside one of ``asset_dirs`` (folders you trust
    the file to read from, e.g. a shared mesh folder that a ``../meshes`` meshdir points to):
    an include or a mesh needed for the inertia outside them raises :class:`MJCFError`; a mesh
    only drawn is left out of ``model.visuals``' readable files, with an :class:`MJCFWarning`.
    Raises ``FileNotFoundError`` for a missing file, :class:`MJCFError` for a malformed one and
    ``NotImplementedError`` for an unsupported feature.
    """
    path = Path(path)
    data = _read_limited(path, str(path))
    return _build(data, str(path), path.resolve().parent, gravity, joint_friction, return_info,
                  default_name=path.stem, main_file=path.resolve(), contacts=contacts, asset_dirs=asset_dirs)


def parse_mjcf(text: str | bytes, gravity: ArrayLike | None = None, joint_friction: bool = True,
               return_info: bool = False, source: str = "<string>", base_dir: str | os.PathLike[str] | None = None,
               contacts: bool = True,
               asset_dirs: Iterable[str | os.PathLike[str]] | None = None) -> Model | tuple[Model, MJCFInfo]:
    """Build a :class:`~linkdyn.Model` from MJCF ``text`` (an XML ``str`` or ``bytes``).

    ``source`` names the text in error messages; ``base_dir`` is the folder ``<include>``
    files are read from (without it, ``<include>`` and mesh files are refused); files must lie
    inside it or inside ``asset_dirs``.  See :func:`load_mjcf`.
    """
    if not isinstance(text, (str, bytes, bytearray)):
        raise TypeError(f"parse_mjcf: expected the MJCF XML as str or bytes, got {type(text).__name__} "
                        "(use load_mjcf for a path)")
    base = None if base_dir is None else Path(base_dir).resolve()
    return _build(text, source, base, gravity, joint_friction, return_info, default_name="mujoco", main_file=None,
                  contacts=contacts, asset_dirs=asset_dirs)


# --------------------------------------------------------------------------------------------
# the model
def _ball_joint(max_angle):
    """The Spherical joint of a MuJoCo ball joint with ``range="0 max_angle"`` (radians; None:
    not limited).

    MuJoCo limits the total rotation angle of the joint's quaternion (relative to qpos0, "regardless
    of the axis of rotation"): angle = 2 acos(|w|) <= X, with w = cos(swing/2) cos(twist/2) in the
    swing-twist decomposition.  That is a limit on swing and twist combined, not on the swing alone.
    linkdyn's ball limits bound the swing (a cone) and the twist separately; the mapping chosen is
    swing <= X and -X <= twist <= X, the smallest such box that contains MuJoCo's set: exactly
    MuJoCo's limit for a pure swing (a cone of half-angle X about z, what a user of ``range`` on a
    ball joint usually means) and for a pure twist, and looser when the joint swings and twists at
    once.  X >= pi leaves the joint unlimited (MuJoCo's angle never exceeds pi either)."""
    if max_angle is None or max_angle >= math.pi:
        return J.Spherical()
    return J.Spherical(swing=max_angle, twist=(-max_angle, max_angle))


def _build(text, source, base_dir, gravity, joint_friction, return_info, default_name, main_file, contacts=True,
           asset_dirs=None):
    reader = _Reader(base_dir, asset_dirs)
    root = reader.read(text, source, [main_file] if main_file is not None else [])
    ctx = _Ctx(source, reader, _Compiler())
    P = _Parser(ctx, root)
    ctx.meshes = _MeshAssets(ctx, P.defaults, root, base_dir, reader.roots)
    try:
        file_gravity = P.read_header()
        P.read_bodies()
    except RecursionError:
        raise MJCFError(f"{source}: the XML is nested too deeply") from None
    P.finish_inertia()
    if gravity is None:
        gravity = file_gravity if file_gravity is not None else (0.0, 0.0, -9.81)
    name = root.get("model") or default_name
    try:
        b = ModelBuilder(name, gravity=gravity, world_name=_WORLD)
    except ValueError as exc:
        raise MJCFError(f"{source}: {exc}") from None

    used_bodies = set(P.used_bodies) | {bd.name for bd in P.bodies}
    used_joints = set(P.joint_names)
    q0_mj = []                  # MuJoCo's qpos0

    def terms(j, nv, spring_ref=None):
        # MuJoCo's qpos_spring: springref (hinge, slide), qpos0 (ball, free), with or without a spring
        kw = dict(armature=[j.armature] * nv, stiffness=j.stiffness, spring_ref=spring_ref)
        if joint_friction:
            kw.update(damping=[j.damping] * nv, friction=[j.frictionloss] * nv)
        if np.isfinite(j.effort):
            kw["effort_limit"] = [j.effort] * nv
        return kw

    def call(bd, fn, *args, **kw):
        try:
            return fn(*args, **kw)
        except ValueError as exc:
            raise ctx.error(bd.el, bd.where, str(exc)) from None

    for bd in P.bodies:
        inertia = Inertia(bd.mass, tuple(bd.com), bd.I) if bd.mass > 0 or np.any(bd.I) else None
        if not bd.joints:
            call(bd, b.add_body, bd.name, bd.parent, J.Fixed(), placement=(bd.R, bd.p), inertia=inertia,
                 joint_name=_unique(f"{bd.name}_fixed", used_joints))
            continue
        j0 = bd.joints[0]
        if j0.type == "free":
            Rw, pw = bd.W
            w, x, y, z = _matrix_to_quat_wxyz(Rw)
            call(bd, b.add_body, bd.name, _WORLD, J.FreeFlyer(), placement=None, inertia=inertia,
                 joint_name=j0.name, **terms(j0, 6, [*pw, x, y, z, w]))
            q0_mj.extend([*pw, w, x, y, z])
            continue
        prev, T = bd.parent, (bd.R, bd.p)
        for k, j in enumerate(bd.joints):
            last = k == len(bd.joints) - 1
            if j.type == "hinge":
                joint, off = J.Revolute(j.axis), (_axis_angle(j.axis, -j.ref), _Z3)
                q0_mj.append(j.ref)
            elif j.type == "slide":
                joint, off = J.Prismatic(j.axis), (_I3, -j.axis * j.ref)
                q0_mj.append(j.ref)
            else:
                joint, off = _ball_joint(j.ball_max), (_I3, _Z3)
                q0_mj.extend([1.0, 0.0, 0.0, 0.0])
            placement = _pose(*_pose(*T, _I3, j.pos), *off)
            at_origin = not np.any(j.pos)
            carrier = bd.name if (last and at_origin) else _unique(f"{bd.name}::{j.name}", used_bodies)
            kw = terms(j, joint.nv, [j.springref] if j.type in ("hinge", "slide") else None)
            if j.type in ("hinge", "slide"):
                kw.update(lower=[j.lower], upper=[j.upper])
            call(bd, b.add_body, carrier, prev, joint, placement=placement,
                 inertia=inertia if carrier == bd.name else None, joint_name=j.name, **kw)
            prev, T = carrier, (_I3, -j.pos)
        if prev != bd.name:
            call(bd, b.add_body, bd.name, prev, J.Fixed(), placement=T, inertia=inertia,
                 joint_name=_unique(f"{bd.name}_fixed", used_joints))

    # sites -> frames
    taken = set(used_bodies)
    for body, sites in [(_WORLD, P.world_sites)] + [(bd.name, bd.sites) for bd in P.bodies]:
        for sname, R, p in sites:
            fname = sname
            if fname in taken:
                fname = _unique(f"{sname}_site", taken)
                _warn(f"{source}: site {sname!r}: the name is taken by a body; the frame is called {fname!r}")
            taken.add(fname)
            b.add_frame(fname, body, placement=(R, p))

    _equalities(P, b, root, taken, used_joints)
    _tendon_springs_warning(P, root)
    settle = _collision_geometry(P, b, root)
    if contacts:
        _contact_geometry(P, b, root)

    try:
        model = b.build()
        if settle is not None:
            model = settle(b, model, source)
        sprung = {j.name: j for bd in P.bodies for j in bd.joints if j.springdamper is not None}
        if sprung:
            model = _springdampers(b, model, sprung, np.array(q0_mj, dtype=float), joint_friction)
    except ValueError as exc:
        raise MJCFError(f"{source}: {exc}") from None
    model.visuals = _geom_visuals(P, base_dir)
    if not return_info:
        return model
    q0 = qpos_to_q(model, np.array(q0_mj, dtype=float))
    keys = {}
    nq_mj = len(q0_mj)
    for kf in root.findall("keyframe"):
        for key in kf.findall("key"):
            kname = key.get("name") or f"key{len(keys)}"
            a = _Attr(ctx, key, f"<key name={kname!r}>")
            if not a.has("qpos"):
                keys[kname] = q0.copy()
                continue
            raw = a.raw("qpos").split()
            if len(raw) != nq_mj:
                raise a.err(f"qpos has {len(raw)} numbers, the model has nq = {nq_mj} (MuJoCo's layout)")
            keys[kname] = qpos_to_q(model, a.floats("qpos", nq_mj))
    return model, MJCFInfo(q0=q0, keyframes=keys)


def _tendon_springs_warning(P, root):
    """One warning naming the tendons whose spring or damper (``stiffness``, ``damping``, MuJoCo's
    tendon passive force) linkdyn leaves out: joint springs are modelled, tendon springs are not."""
    left = []
    for ten in root.findall("tendon"):
        for k, el in enumerate([*ten.findall("fixed"), *ten.findall("spatial")]):
            name = el.get("name") or f"<{el.tag}> number {k + 1}"
            where = f"<{el.tag} name={name!r}>"
            a = _Attr(P.ctx, el, where, P.defaults.of(el, "tendon", None, where))
            if a.number("stiffness", 0.0) != 0.0 or a.number("damping", 0.0) != 0.0:
                left.append(name)
    if left:
        _warn(f"{P.ctx.source}: tendon springs and dampers (a tendon's stiffness, damping) are not modelled; "
              f"left out for {len(left)} tendon{'s' if len(left) > 1 else ''}: {', '.join(map(repr, left[:8]))}"
              f"{', ...' if len(left) > 8 else ''}")


def _springdampers(b, model, sprung, q0_mj, joint_friction):
    """MuJoCo's ``springdamper="timeconst dampratio"``: a joint's stiffness and damping set so
    that it is a mass-spring-damper of that time constant and damping ratio, k = m0 /
    (timeconst dampratio)^2 and b = 2 m0 / timeconst, with m0 = 1 / (M^-1)_dd at qpos0 (the
    joint's effective inertia, MuJoCo's 1 / dof_invweight0: for a ball the mean of (M^-1)_dd over
    its dofs, for a free joint over its translations; checked against MuJoCo in the tests).
    ``b`` is rebuilt with them."""
    full = model.full_model
    Minv_diag = np.diag(np.linalg.inv(_mass_matrix(full, qpos_to_q(full, q0_mj))))
    specs = {s.joint_name: s for s in b._bodies}
    for i in range(1, full.nbody):
        j = sprung.get(full._joint_names[i])
        if j is None or full.jnt_nv[i] == 0:
            continue
        va, n = int(full.jnt_vadr[i]), int(full.jnt_nv[i])
        m0 = 1.0 / np.mean(Minv_diag[va:va + min(n, 3)])
        tc, ratio = j.springdamper
        spec = specs[j.name]
        spec.stiffness = np.full(n, m0 / (tc * tc * ratio * ratio))
        if joint_friction:
            spec.damping = np.full(n, 2.0 * m0 / tc)
    return b.build()


def _mass_matrix(model, q):
    """M(q) (armature included) by composite rigid bodies (Featherstone 2008, sec. 6.2, in
    NumPy: the model layer has no compiled CRBA) for the joints MJCF makes (revolute,
    prismatic, spherical, free, fixed)."""
    nb = model.nbody
    Ic = np.array(model.inertia, dtype=float)
    X = np.zeros((nb, 6, 6))            # motion transform from the parent's frame to the body's
    for i in range(1, nb):
        kind, qa = int(model.jnt_type[i]), int(model.jnt_qadr[i])
        RJ, pJ = np.eye(3), np.zeros(3)
        if kind == J.REVOLUTE:
            RJ = _axis_angle(np.asarray(model.jnt_axis[i]), float(q[qa]))
        elif kind == J.PRISMATIC:
            pJ = np.asarray(model.jnt_axis[i]) * float(q[qa])
        elif kind == J.SPHERICAL:
            RJ = spatial.quat_to_matrix(q[qa:qa + 4])
        elif kind == J.FREE:
            RJ, pJ = spatial.quat_to_matrix(q[qa + 3:qa + 7]), np.array(q[qa:qa + 3])
        R, p = model.R_tree[i] @ RJ, model.p_tree[i] + model.R_tree[i] @ pJ
        px = np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])
        X[i, :3, :3], X[i, :3, 3:], X[i, 3:, 3:] = R.T, -R.T @ px, R.T
    for i in range(nb - 1, 0, -1):
        if model.parent[i] > 0:
            Ic[model.parent[i]] += X[i].T @ Ic[i] @ X[i]

    def columns(i):
        kind, n = int(model.jnt_type[i]), int(model.jnt_nv[i])
        S = np.zeros((6, n))
        if kind == J.REVOLUTE:
            S[3:, 0] = model.jnt_axis[i]
        elif kind == J.PRISMATIC:
            S[:3, 0] = model.jnt_axis[i]
        elif kind == J.SPHERICAL:
            S[3:, :] = np.eye(3)
        elif kind == J.FREE:
            S[:, :] = np.eye(6)
        return S

    M = np.diag(np.array(model.armature, dtype=float))
    for i in range(1, nb):
        n = int(model.jnt_nv[i])
        if n == 0:
            continue
        vi = slice(int(model.jnt_vadr[i]), int(model.jnt_vadr[i]) + n)
        F = Ic[i] @ columns(i)
        M[vi, vi] += columns(i).T @ F
        j = i
        while model.parent[j] > 0:
            F = X[j].T @ F
            j = int(model.parent[j])
            if model.jnt_nv[j]:
                vj = slice(int(model.jnt_vadr[j]), int(model.jnt_vadr[j]) + int(model.jnt_nv[j]))
                M[vi, vj] = F.T @ columns(j)
                M[vj, vi] = M[vi, vj].T
    return M


def _geom_visuals(P, base_dir):
    """Every geom as drawing geometry (:class:`linkdyn.model.io.urdf.Visual` on its body's frame):
    spheres, capsules, cylinders, boxes, ellipsoids, planes and meshes (``<asset><mesh file>``
    under ``<compiler meshdir>``, their ``path`` set only when ``_files.confine`` allows them);
    geoms of ``group`` 3 and above are "collision" geometry, as MuJoCo's viewer hides them.  A geom that cannot be read is skipped: drawing never stops a
    file from loading."""
    from ..urdf import Visual
    assets, meshes, refused = P.ctx.meshes, {}, []
    for name, m in assets.els.items():
        f = m.get("file")
        if not f:
            continue
        try:
            sc = [float(x) for x in (m.get("scale") or "1 1 1").split()]
        except ValueError:
            sc = [1.0, 1.0, 1.0]
        path = None
        if assets.folder is not None and not f.lower().endswith(".msh"):
            try:
                path = assets.path(f, MJCFError)
            except MJCFError as exc:        # outside the model's folder and asset_dirs: never read, never drawn
                refused.append(str(exc))
            except OSError:
                pass                        # missing: the viewer says so
        meshes[name] = (f, sc if len(sc) == 3 else [1.0, 1.0, 1.0], path)
    if refused:
        _warn(f"{P.ctx.source}: {len(refused)} mesh file{'s' if len(refused) > 1 else ''} refused, not drawn: "
              + "; ".join(refused[:3]) + ("; ..." if len(refused) > 3 else ""))
    folder = str(Path(base_dir or ".") / assets.meshdir) if assets.meshdir else base_dir
    out = []
    for el, body, R0, p0, cc, where in P.geoms:
        try:
            a = _Attr(P.ctx, el, where, P.defaults.of(el, "geom", cc, where))
            gtype = a.choice("type", _GEOM_TYPES, "sphere")
            if gtype in ("hfield", "sdf"):
                continue
            R, p, size = a.geom_frame(gtype)
            rgba = a.floats("rgba", 4, [0.5, 0.5, 0.5, 1.0]) if a.has("rgba") else None
            role = "collision" if int(a.number("group", 0)) >= 3 else "visual"
            kw = dict(R=R0 @ R, p=p0 + R0 @ p, rgba=None if rgba is None else tuple(rgba), role=role,
                      name=el.get("name") or "")
            if rgba is not None and rgba[3] == 0:
                continue
            if gtype == "mesh":
                mesh = meshes.get(a.raw("mesh") or "")
                if mesh is None:
                    continue
                out.append(Visual(body, "mesh", (), mesh[0], folder, mesh[1], path=mesh[2], **kw))
            elif gtype in ("capsule", "cylinder"):
                out.append(Visual(body, gtype, (size[0], 2.0 * size[1]), **kw))
            elif gtype == "box":
                out.append(Visual(body, "box", 2.0 * size[:3], **kw))
            elif gtype == "ellipsoid":
                out.append(Visual(body, "ellipsoid", size[:3], **kw))
            elif gtype == "sphere":
                out.append(Visual(body, "sphere", size[:1], **kw))
            elif gtype == "plane":
                out.append(Visual(body, "plane", 2.0 * size[:2], **kw))
        except (ValueError, TypeError, NotImplementedError):
            continue
    return tuple(out)


def _matrix_to_quat_wxyz(R):
    t = np.trace(R)
    if t > 0:
        s = 2.0 * math.sqrt(1.0 + t)
        q = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(max(1.0 + R[i, i] - R[j, j] - R[k, k], 0.0))
        q = [0.0] * 4
        q[0] = (R[k, j] - R[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + k] = (R[k, i] + R[i, k]) / s
    q = np.array(q)
    return q / np.linalg.norm(q) * (1.0 if q[0] >= 0 else -1.0)
