"""MJCF (MuJoCo XML) import: ``load_mjcf(path)`` / ``parse_mjcf(text)`` -> :class:`linkdyn.Model`.

    model = linkdyn.load_mjcf("four_bar.xml")                         # loop closures included
    model, info = linkdyn.load_mjcf("robot.xml", return_info=True)   # + MuJoCo's qpos0 and keyframes

The XML is read with :mod:`defusedxml` (DTDs, entity declarations and external references are
refused), so untrusted files are safe to open.  ``<include file>`` is resolved relative to the
folder of the main file only: absolute paths, paths that leave that folder (``..``, symbolic
links), include loops, more than ``MAX_INCLUDE_DEPTH`` nested or ``MAX_INCLUDES`` included
files are refused.  Malformed input raises :class:`MJCFError` (a ``ValueError``) whose message
names the file, the element and what is wrong; MJCF features outside the supported subset
raise ``NotImplementedError``; things that are read but cannot be represented are reported by
an :class:`MJCFWarning`.

Coordinates
-----------
linkdyn's q is MuJoCo's ``qpos`` joint by joint, in the same order, except that quaternions are
stored [x, y, z, w] (MuJoCo: [w, x, y, z]) and that the cut joints of ``<connect>`` loop
closures add coordinates (see below).  :func:`qpos_to_q` / :func:`q_to_qpos` convert.  A hinge
or slide joint with ``ref`` is built so that q = qpos (the joint frame is turned or shifted by
``-ref``): the pose written in the file is at q = ref, ranges and keyframes carry over unchanged,
and ``linkdyn.neutral`` (q = 0) is *not* MuJoCo's ``qpos0``; ``return_info=True`` gives it
(``info.q0``).  A free joint's q is the body's world pose, as MuJoCo's qpos.  Velocities are MuJoCo's ``qvel``
except for a free joint's linear part: linkdyn (and Pinocchio) use the body-frame velocity, MuJoCo
the world-frame velocity of the body origin (:func:`qvel_to_v` / :func:`v_to_qvel`).  MuJoCo's
world body is linkdyn's ``"world"``.

Mapping (the supported subset)
------------------------------
* ``<compiler angle eulerseq autolimits inertiafromgeom inertiagrouprange boundmass
  boundinertia balanceinertia settotalmass>``; ``angle`` defaults to ``"degree"`` as in MuJoCo
  (it applies to ``euler``, the angle of ``axisangle``, hinge ``range``/``ref``, ball ``range``).  Asset and
  rendering options are ignored; ``coordinate="global"`` (removed from MuJoCo) is refused.
* ``<option gravity>`` and ``<flag gravity="disable">`` give the gravity unless ``gravity=`` is
  passed.
* ``<default>`` classes, nested, used by ``class`` and ``childclass`` (of bodies and
  ``<frame>``), for ``<joint>``, ``<geom>``, ``<site>`` and ``<equality>`` attributes.
* ``<worldbody>``, nested ``<body name pos quat|axisangle|euler|xyaxes|zaxis childclass>``,
  ``<frame>`` (a pose and childclass applied to its children).  Unnamed bodies are called
  ``"body<k>"`` (k: MuJoCo's body id).  ``mocap`` bodies are welded where they are.
* Joints (``<joint>``, ``<freejoint>``), in the order they appear in the body:

  - ``hinge`` -> ``Revolute(axis)`` about the axis through the joint's ``pos``;
  - ``slide`` -> ``Prismatic(axis)``; ``ball`` -> ``Spherical`` about ``pos``;
  - ``free`` -> ``FreeFlyer`` from the world (only alone in a top-level body, as in MuJoCo).

  A body whose only (or last) joint is at its origin carries that joint itself.  Every other
  joint gets a massless carrier body ``"<body>::<joint>"`` whose frame is at the joint's anchor,
  each carrier hanging from the previous one, and the MJCF body hangs from the last carrier by a
  fixed joint at ``-pos`` (it is merged into the carrier: its name becomes a frame where MuJoCo
  has the body frame).  The joints compose as in MuJoCo's ``mj_kinematics``.  Joints, sites and
  ``<inertial>`` inside ``<frame>`` elements are moved by the frame.
  Unnamed joints are called ``"<body>_joint"``, ``"<body>_joint_1"``, ...
* Joint attributes: ``range`` with ``limited`` / ``autolimits`` -> ``lower``/``upper`` (hinge,
  slide); a ball joint's ``range="0 X"`` (X in the compiler's angle unit) -> ``Spherical(swing=X,
  twist=(-X, X))``: MuJoCo bounds the total rotation angle, ``cos(swing/2) cos(twist/2) >=
  cos(X/2)``, linkdyn the swing and the twist separately, which agrees for a pure swing and a
  pure twist and is looser for a combination of both (X = 60 deg admits 60 deg of swing with
  60 deg of twist, a rotation of 82.8 deg); X >= 180 deg limits nothing (in MuJoCo either);
  ``armature`` -> ``armature``; ``damping`` -> ``damping`` (viscous, as MuJoCo's passive
  force); ``frictionloss`` -> linkdyn's Coulomb ``friction`` (``tau += friction * sign(v)``; MuJoCo
  treats it as a soft constraint that can also hold the joint at rest: the two agree while the
  joint slides); ``joint_friction=False`` leaves damping and friction out; ``ref`` (see above);
  ``actuatorfrcrange`` -> ``effort_limit`` (the larger magnitude).  ``stiffness`` (joint springs)
  is not modelled (warning).
* ``<inertial pos quat.. mass diaginertia|fullinertia>``; without it (``inertiafromgeom="auto"``)
  or always (``"true"``) the body's mass properties are computed from its geoms as MuJoCo does:
  ``sphere``, ``capsule``, ``cylinder``, ``box``, ``ellipsoid`` (``size`` or ``fromto``), solid,
  ``density`` (default 1000) or ``mass``, geoms whose ``group`` is inside ``inertiagrouprange``.
  ``mesh`` geoms as MuJoCo's compiler does (the mesh's ``inertia="legacy|convex|exact|shell"``,
  ``scale``, ``refpos``, ``refquat``; files read with trimesh, ``pip install 'linkdyn[meshes]'``,
  or ``vertex``/``face`` given inline; without trimesh, or for MuJoCo's ``.msh`` format, the
  geom is left out with a warning); ``plane``, ``hfield`` and ``sdf`` geoms carry no mass;
  ``shellinertia`` on a primitive geom is refused.
* ``<site>`` -> a frame named after the site on its body (unnamed sites are skipped; a site
  whose name is taken by a body gets ``"<name>_site"``, with a warning).
* ``<equality>``:

  - ``<connect body1 body2 anchor>`` -> ``add_loop`` with a ``Spherical`` cut joint: a virtual
    link named after the constraint hangs from body1 at ``anchor`` and must coincide with the
    point of body2 that is there in the reference pose (``qpos0``); its joint frame is oriented
    so that the cut joint's quaternion is the identity in that pose.  ``site1``/``site2``: the
    two sites' origins coincide.  ``body2`` defaults to the world;
  - ``<weld body1 body2 anchor relpose>`` -> a weld loop: the frame ``relpose`` on body1 (or the
    relative pose in ``qpos0`` when ``relpose`` has a zero quaternion, MuJoCo's default) and
    the frame at ``anchor`` on body2 coincide; ``site1``/``site2``: the site frames coincide;
  - ``<joint joint1 joint2 polycoef>`` with a linear polynomial -> a gear (``add_gear``:
    q1 = c1 q2 + offset, the model in reduced coordinates, see :mod:`linkdyn.model.gears`; MuJoCo
    holds it with a soft constraint, linkdyn exactly), also listed in ``model.mimic``; a nonlinear
    polynomial or a joint locked alone is refused;
  - ``<tendon tendon1 tendon2 polycoef>`` on fixed tendons (``<tendon><fixed>``, lengths
    L = sum coef_i q_i) -> a gear when the equality, L1 - L1_0 = c0 + c1 (L2 - L2_0) with
    L_0 the lengths at ``qpos0``, involves exactly two hinge or slide joints (a two-joint tendon
    alone, or two one-joint tendons): the first joint follows the other; any other tendon
    equality is refused, with the reason;
  - ``flex``, ``distance`` equalities are refused; ``active="false"`` constraints are
    skipped with a warning.  ``solref``, ``solimp``, ``torquescale`` are solver parameters and
    ignored.
* Contact geometry (``contacts=True``, the default; linkdyn's contacts are spheres and points
  against planes, ``linkdyn.contact``):

  - ``<geom type="plane">`` -> ``add_plane`` on its body (the world, or a static body: MuJoCo
    allows planes nowhere else): the plane is the xy-plane of the geom frame, its z axis the
    outward normal, unbounded (MuJoCo's planes are infinite for collision; ``size`` only draws
    them); ``friction`` -> the plane's ``friction`` (the first of the geom's ``friction``
    values, default 1 as in MuJoCo; 0 when ``condim="1"``);
  - ``<geom type="sphere">`` on a moving body -> ``add_contact(body, pos, radius=size[0],
    friction=...)`` (friction as for planes; restitution 0: MuJoCo's soft contacts have no
    coefficient of restitution);
  - a geom is used only if MuJoCo would let it collide with a geom of the other kind: its
    ``contype``/``conaffinity`` bit masks (``contype="0" conaffinity="0"`` means no collision),
    ``<contact><exclude body1 body2>`` and ``<contact><pair geom1 geom2>`` are applied as MuJoCo
    does, default classes included; ``<option><flag contact="disable">`` (or
    ``constraint="disable"``) imports no contact geometry.  Spheres on static bodies (welded to
    the world, mocap bodies included) are skipped: they never meet a plane, which is static too;
  - linkdyn makes every contact touch every plane, with the friction sqrt(mu_sphere mu_plane);
    MuJoCo takes the larger of the two (the higher ``priority``'s, or the ``<pair>``'s own),
    so an :class:`MJCFWarning` names the pairs whose friction differs (equal frictions, the
    common case, agree exactly) and the pairs that MuJoCo's filters keep apart but linkdyn
    does not; torsional and rolling friction (``condim`` 4, 6) are not modelled (warning);
  - every other geom (``capsule``, ``box``, ``cylinder``, ``ellipsoid``, ``mesh``, ``hfield``,
    ``sdf``) is left out of contact; when the model has planes, one warning names those that
    MuJoCo would let touch them (give the body small spheres where it should touch, e.g. at
    the corners of a foot, and ``contype="0" conaffinity="0"`` to the rest).  Collisions
    between moving bodies (sphere-sphere included) are not modelled;
  - ``margin``, ``gap``, ``solref``, ``solimp``, ``solmix`` (MuJoCo's soft-contact parameters)
    have no counterpart: linkdyn's contacts are hard.
* ``<keyframe><key qpos>`` -> ``info.keyframes`` (q in linkdyn's layout; cut joints at the
  identity, close them with ``linkdyn.loops.close_loops``).
* Drawing only (the dynamics never read it): every geom's shape, pose and ``rgba`` and the
  ``<asset><mesh file scale>`` files under ``<compiler meshdir>`` are kept in ``model.visuals``
  (:class:`linkdyn.model.urdf.Visual` on the geom's body frame; ``group`` 3 and above as
  collision geometry), which :func:`linkdyn.viz.view` draws.
* Ignored: ``<asset>`` (but for meshes, above), ``<visual>``, ``<statistic>``, ``<size>``, ``<tendon>``,
  ``<actuator>``, ``<sensor>``, ``<custom>``, ``<extension>``, ``<deformable>``, cameras,
  lights, and ``<contact>`` apart from the pairs and exclusions above.  Refused (``NotImplementedError``): ``<composite>``, ``<flexcomp>``, ``<replicate>``,
  ``<attach>``, body plugins.
"""
from __future__ import annotations

import math
import re
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import joints as J
from ._files import read_model_file
from .builder import Inertia, ModelBuilder
from .safexml import parse_xml

if TYPE_CHECKING:
    import os

    from numpy.typing import ArrayLike

    from .model import Model

__all__ = ["MJCFError", "MJCFWarning", "MJCFInfo", "load_mjcf", "parse_mjcf", "qpos_to_q", "q_to_qpos",
           "qvel_to_v", "v_to_qvel"]

#: nesting limit of ``<include>`` files
MAX_INCLUDE_DEPTH = 8
#: total number of ``<include>`` elements expanded while reading one model
MAX_INCLUDES = 100
#: size limit of one file (main or included), and of all included files together, bytes
MAX_FILE_BYTES = 64 * 1024 * 1024


class MJCFError(ValueError):
    """An MJCF file that cannot be read, or that does not describe a valid model."""


class MJCFWarning(UserWarning):
    """Something in an MJCF file was ignored or approximated."""


@dataclass
class MJCFInfo:
    """What ``return_info=True`` adds to the model: ``q0``, MuJoCo's reference configuration
    ``qpos0`` in linkdyn's layout (hinge and slide ``ref``, identity ball quaternions, the
    free bodies' poses from the file, identity cut joints: the ``<connect>`` loops are closed
    there when the file's constraints hold in ``qpos0``), and ``keyframes``, name -> q."""
    q0: np.ndarray
    keyframes: dict = field(default_factory=dict)


_FLOAT = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_ORIENT = ("quat", "axisangle", "euler", "xyaxes", "zaxis")
_JOINT_TYPES = ("hinge", "slide", "ball", "free")
_GEOM_TYPES = ("sphere", "capsule", "cylinder", "box", "ellipsoid", "mesh", "plane", "hfield", "sdf")
_TOP_IGNORED = {"option", "size", "visual", "statistic", "asset", "contact", "tendon", "actuator", "sensor",
                "custom", "extension", "deformable", "keyframe", "compiler", "default", "worldbody",
                "equality"}
_BODY_IGNORED = {"camera", "light"}
_BODY_REFUSED = {"composite", "flexcomp", "replicate", "attach", "plugin"}
_WORLD = "world"


# --------------------------------------------------------------------------------------------
# public API
def load_mjcf(path: str | os.PathLike[str], gravity: ArrayLike | None = None, joint_friction: bool = True,
              return_info: bool = False, contacts: bool = True) -> Model | tuple[Model, MJCFInfo]:
    """Read the MJCF file ``path`` into a :class:`~linkdyn.Model` (see the module docstring for
    the mapping).

    ``gravity``: the world gravity vector (default: the file's ``<option gravity>``, else
    [0, 0, -9.81]).  ``joint_friction``: read joint ``damping`` and ``frictionloss`` into
    ``model.damping`` / ``model.friction`` (applied by RNEA and ABA as viscous and Coulomb
    friction); on by default since MuJoCo always applies them.  ``return_info``: return
    ``(model, MJCFInfo)``.  ``contacts``: turn sphere and plane geoms into linkdyn contacts and
    planes (module docstring); ``False`` leaves the model without contact geometry.
    ``<include>`` files are looked up in the folder of ``path``.
    Raises ``FileNotFoundError`` for a missing file, :class:`MJCFError` for a malformed one and
    ``NotImplementedError`` for an unsupported feature.
    """
    path = Path(path)
    data = _read_limited(path, str(path))
    return _build(data, str(path), path.resolve().parent, gravity, joint_friction, return_info,
                  default_name=path.stem, main_file=path.resolve(), contacts=contacts)


def parse_mjcf(text: str | bytes, gravity: ArrayLike | None = None, joint_friction: bool = True,
               return_info: bool = False, source: str = "<string>", base_dir: str | os.PathLike[str] | None = None,
               contacts: bool = True) -> Model | tuple[Model, MJCFInfo]:
    """Build a :class:`~linkdyn.Model` from MJCF ``text`` (an XML ``str`` or ``bytes``).

    ``source`` names the text in error messages; ``base_dir`` is the folder ``<include>``
    files are read from (without it, ``<include>`` is refused).  See :func:`load_mjcf`.
    """
    if not isinstance(text, (str, bytes, bytearray)):
        raise TypeError(f"parse_mjcf: expected the MJCF XML as str or bytes, got {type(text).__name__} "
                        "(use load_mjcf for a path)")
    base = None if base_dir is None else Path(base_dir).resolve()
    return _build(text, source, base, gravity, joint_friction, return_info, default_name="mujoco", main_file=None,
                  contacts=contacts)


# --------------------------------------------------------------------------------------------
# q / v in MuJoCo's layout
def _layout(model):
    """(src_q, fill_q, src_v, free) for qpos_to_q and friends: q[k] = qpos[src_q[k]] where
    src_q[k] >= 0, else fill_q[k] (cut joints of loop closures); the same for v; ``free``:
    (q address, v address) of the free joints."""
    src_q = np.full(model.nq, -1, dtype=np.int64)
    fill = np.zeros(model.nq)
    src_v = np.full(model.nv, -1, dtype=np.int64)
    free = []
    k = kv = 0
    for i in range(1, model.nbody):
        kind, qa, va = int(model.jnt_type[i]), int(model.jnt_qadr[i]), int(model.jnt_vadr[i])
        nq, nv = int(model.jnt_nq[i]), int(model.jnt_nv[i])
        if model.is_virtual[i]:
            if kind in J.QUAT_OFFSET:
                fill[qa + J.QUAT_OFFSET[kind] + 3] = 1.0
            continue
        if kind == J.FREE:
            src_q[qa:qa + 7] = k + np.array([0, 1, 2, 4, 5, 6, 3])
            free.append((qa, va))
        elif kind == J.SPHERICAL:
            src_q[qa:qa + 4] = k + np.array([1, 2, 3, 0])
        else:
            src_q[qa:qa + nq] = k + np.arange(nq)
        src_v[va:va + nv] = kv + np.arange(nv)
        k += nq
        kv += nv
    return src_q, fill, src_v, free, k, kv


def qpos_to_q(model: Model, qpos: ArrayLike) -> np.ndarray:
    """MuJoCo's ``qpos`` (shape (nq_mj,) or (N, nq_mj)) -> linkdyn's q: quaternions reordered
    from [w, x, y, z] to [x, y, z, w]; the cut joints of loop closures (not in qpos) at zero /
    the identity.  A geared model's q is reduced (MuJoCo's qpos holds every joint, followers too)."""
    if model._full is not None:
        return model.reduce(qpos_to_q(model._full, qpos))
    src, fill, _, _, nq_mj, _ = _layout(model)
    qpos = np.asarray(qpos, dtype=float)
    if qpos.shape[-1:] != (nq_mj,) or qpos.ndim > 2:
        raise ValueError(f"qpos_to_q: expected shape ({nq_mj},) or (N, {nq_mj}), got {qpos.shape}")
    q = np.broadcast_to(fill, qpos.shape[:-1] + (model.nq,)).copy()
    have = src >= 0
    q[..., have] = qpos[..., src[have]]
    return q


def q_to_qpos(model: Model, q: ArrayLike) -> np.ndarray:
    """linkdyn's q -> MuJoCo's ``qpos`` (the inverse of :func:`qpos_to_q`; cut joints dropped)."""
    if model._full is not None:
        return q_to_qpos(model._full, model.expand(q))
    src, _, _, _, nq_mj, _ = _layout(model)
    q = np.asarray(q, dtype=float)
    if q.shape[-1:] != (model.nq,) or q.ndim > 2:
        raise ValueError(f"q_to_qpos: expected shape ({model.nq},) or (N, {model.nq}), got {q.shape}")
    qpos = np.zeros(q.shape[:-1] + (nq_mj,))
    have = src >= 0
    qpos[..., src[have]] = q[..., have]
    return qpos


def _quat_xyzw_matrix(qv):
    x, y, z, w = np.moveaxis(qv / np.linalg.norm(qv, axis=-1, keepdims=True), -1, 0)
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
                     np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
                     np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], -2)


def qvel_to_v(model: Model, q: ArrayLike, qvel: ArrayLike) -> np.ndarray:
    """MuJoCo's ``qvel`` at linkdyn configuration q -> linkdyn's v: a free joint's linear
    velocity is turned from the world frame into the body frame (v = R^T v_world); cut joints
    of loop closures get zero (project with ``linkdyn.loops.project_velocity``)."""
    if model._full is not None:
        qf = model.expand(q)
        return model.reduce(qf, qvel_to_v(model._full, qf, qvel))[1]
    _, _, src, free, _, nv_mj = _layout(model)
    q, qvel = np.asarray(q, dtype=float), np.asarray(qvel, dtype=float)
    if qvel.shape[-1:] != (nv_mj,) or qvel.ndim > 2:
        raise ValueError(f"qvel_to_v: expected shape ({nv_mj},) or (N, {nv_mj}), got {qvel.shape}")
    v = np.zeros(qvel.shape[:-1] + (model.nv,))
    have = src >= 0
    v[..., have] = qvel[..., src[have]]
    for qa, va in free:
        R = _quat_xyzw_matrix(q[..., qa + 3:qa + 7])
        v[..., va:va + 3] = np.einsum("...ji,...j->...i", R, v[..., va:va + 3])
    return v


def v_to_qvel(model: Model, q: ArrayLike, v: ArrayLike) -> np.ndarray:
    """linkdyn's v at q -> MuJoCo's ``qvel`` (the inverse of :func:`qvel_to_v`)."""
    if model._full is not None:
        return v_to_qvel(model._full, *model.expand(q, v))
    _, _, src, free, _, nv_mj = _layout(model)
    q, v = np.asarray(q, dtype=float), np.array(v, dtype=float)
    if v.shape[-1:] != (model.nv,) or v.ndim > 2:
        raise ValueError(f"v_to_qvel: expected shape ({model.nv},) or (N, {model.nv}), got {v.shape}")
    for qa, va in free:
        R = _quat_xyzw_matrix(q[..., qa + 3:qa + 7])
        v[..., va:va + 3] = np.einsum("...ij,...j->...i", R, v[..., va:va + 3])
    qvel = np.zeros(v.shape[:-1] + (nv_mj,))
    have = src >= 0
    qvel[..., src[have]] = v[..., have]
    return qvel


# --------------------------------------------------------------------------------------------
# rotations (MuJoCo quaternions are [w, x, y, z])
def _quat_wxyz_matrix(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _axis_angle(axis, angle):
    k = np.asarray(axis, dtype=float)
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * (K @ K)


def _z_to(v):
    """MuJoCo's mjuu_z2quat: the smallest rotation taking +z to the unit vector v (a half turn
    about x when v is -z)."""
    c = np.cross([0.0, 0.0, 1.0], v)
    s = float(np.linalg.norm(c))
    if s < 1e-10:
        c = np.array([1.0, 0.0, 0.0])
    else:
        c = c / s
    return _axis_angle(c, math.atan2(s, v[2]))


def _pose(R1, p1, R2, p2):
    return R1 @ R2, R1 @ p2 + p1


_I3, _Z3 = np.eye(3), np.zeros(3)


# --------------------------------------------------------------------------------------------
# reading the XML safely, with <include>
def _read_limited(path: Path, shown: str) -> bytes:
    """A regular file's bytes, read with a bound (``linkdyn.model._files``)."""
    return read_model_file(path, MJCFError, MAX_FILE_BYTES, "MJCF file")


def _parse_xml(text, source):
    return parse_xml(text, source, MJCFError, "MJCF")


class _Reader:
    """Parses the main text and expands <include> elements; remembers each element's file."""

    def __init__(self, base_dir):
        self.base = base_dir
        self.count = 0
        self.bytes = 0              # read from included files
        self.file_of = {}           # element -> file name, for error messages

    def read(self, text, shown, chain):
        root = _parse_xml(text, shown)
        for el in root.iter():
            self.file_of[el] = shown
        if root.tag != "mujoco":
            where = f"the root element is <{root.tag}>, expected <mujoco>"
            raise MJCFError(f"{shown}: {where}")
        self._expand(root, shown, chain)
        return root

    def _expand(self, root, shown, chain):
        for parent in list(root.iter()):
            kids = list(parent)
            if not any(k.tag == "include" for k in kids):
                continue
            new = []
            for k in kids:
                if k.tag != "include":
                    new.append(k)
                    continue
                new.extend(self._include(k, shown, chain))
            for k in kids:
                parent.remove(k)
            parent.extend(new)

    def _include(self, el, shown, chain):
        name = el.get("file")
        where = f"{shown}: <include file={name!r}>" if name is not None else f"{shown}: <include>"
        if not name:
            raise MJCFError(f"{where}: needs a 'file' attribute")
        if len(list(el)) or el.attrib.keys() - {"file"}:
            raise MJCFError(f"{where}: takes only the 'file' attribute and no children")
        if self.base is None:
            raise MJCFError(f"{where}: the model was given as text without base_dir, so included files "
                            "cannot be looked up (use load_mjcf(path) or parse_mjcf(text, base_dir=...))")
        rel = Path(name)
        if rel.is_absolute() or rel.drive or rel.anchor:
            raise MJCFError(f"{where}: refused: an absolute path; included files must lie in the model's "
                            f"folder {str(self.base)!r}")
        target = (self.base / rel).resolve()
        try:
            target.relative_to(self.base)
        except ValueError:
            raise MJCFError(f"{where}: refused: the path leads outside the model's folder "
                            f"{str(self.base)!r}") from None
        if target in chain:
            names = [p.name for p in chain[chain.index(target):]] + [target.name]
            raise MJCFError(f"{where}: include loop: " + " -> ".join(names))
        if len(chain) > MAX_INCLUDE_DEPTH:
            raise MJCFError(f"{where}: includes are nested more than {MAX_INCLUDE_DEPTH} deep")
        self.count += 1
        if self.count > MAX_INCLUDES:
            raise MJCFError(f"{where}: more than {MAX_INCLUDES} <include> elements in one model")
        if not target.is_file():
            raise MJCFError(f"{where}: no such file {str(target)!r}")
        data = _read_limited(target, str(target))
        self.bytes += len(data)
        if self.bytes > MAX_FILE_BYTES:
            raise MJCFError(f"{where}: the included files add up to more than {MAX_FILE_BYTES} bytes")
        sub = self.read(data, str(target), chain + [target])
        return list(sub)


# --------------------------------------------------------------------------------------------
# attribute access with default classes
class _Compiler:
    def __init__(self):
        self.degree = True
        self.eulerseq = "xyz"
        self.autolimits = True
        self.inertiafromgeom = "auto"
        self.group_range = (0, 5)
        self.boundmass = 0.0
        self.boundinertia = 0.0
        self.balanceinertia = False
        self.settotalmass = -1.0

    def angle(self, x):
        return x * (math.pi / 180.0) if self.degree else x


def _warn(msg):
    """An MJCFWarning attributed to the first caller outside linkdyn.model.mjcf."""
    depth, f = 2, sys._getframe(1)        # stacklevel 2 is the caller of _warn
    while f is not None and f.f_globals.get("__name__") == __name__:
        depth, f = depth + 1, f.f_back
    warnings.warn(msg, MJCFWarning, stacklevel=depth)


class _Ctx:
    def __init__(self, source, reader, compiler):
        self.source = source
        self.reader = reader
        self.comp = compiler

    def file(self, el):
        return self.reader.file_of.get(el, self.source)

    def error(self, el, where, msg):
        return MJCFError(f"{self.file(el)}: {where}: {msg}" if where else f"{self.file(el)}: {msg}")

    def warn(self, el, where, msg):
        _warn(f"{self.file(el)}: {where}: {msg}")

    def mesh_properties(self, el, where, name):
        return self.meshes.properties(el, where, name)


class _Attr:
    """The attributes of one element: its own, then those of its default class."""

    def __init__(self, ctx, el, where, dflt=None):
        self.ctx, self.el, self.where = ctx, el, where
        self.dflt = dflt or {}

    def raw(self, name):
        v = self.el.get(name)
        return self.dflt.get(name) if v is None else v

    def has(self, name):
        return self.raw(name) is not None

    def desc(self, name, raw):
        return f"<{self.el.tag} {name}='{raw}'>"

    def err(self, msg):
        return self.ctx.error(self.el, self.where, msg)

    def floats(self, name, n, default=None, min_n=None):
        """n floats (min_n..n when min_n is given; the rest 0), or ``default`` when absent."""
        raw = self.raw(name)
        if raw is None:
            if default is None:
                raise self.err(f"<{self.el.tag}> needs a '{name}' attribute")
            return np.array(default, dtype=float)
        parts = raw.split()
        lo = n if min_n is None else min_n
        if not lo <= len(parts) <= n:
            want = f"{n}" if min_n is None else f"{min_n} to {n}"
            raise self.err(f"{self.desc(name, raw)} needs {want} number{'s' if n > 1 else ''}, got {len(parts)}")
        out = np.zeros(n)
        for k, s in enumerate(parts):
            if not _FLOAT.fullmatch(s):
                raise self.err(f"{self.desc(name, raw)}: {s!r} is not a finite number")
            out[k] = float(s)
            if not math.isfinite(out[k]):
                raise self.err(f"{self.desc(name, raw)}: {s!r} overflows")
        return out

    def number(self, name, default=None):
        return float(self.floats(name, 1, None if default is None else [default])[0])

    def nonneg(self, name, default=0.0):
        x = self.number(name, default)
        if x < 0:
            raise self.err(f"{self.desc(name, self.raw(name))} must not be negative")
        return x

    def choice(self, name, options, default):
        raw = self.raw(name)
        if raw is None:
            return default
        if raw not in options:
            raise self.err(f"{self.desc(name, raw)}: expected one of {', '.join(repr(o) for o in options)}")
        return raw

    def boolean(self, name, default):
        return self.choice(name, ("true", "false"), "true" if default else "false") == "true"

    def orientation(self):
        """The rotation given by quat / axisangle / euler / xyaxes / zaxis (identity if none)."""
        own = [k for k in _ORIENT if self.el.get(k) is not None]
        if len(own) > 1:
            raise self.err(f"<{self.el.tag}> has several orientations ({', '.join(own)}); give at most one")
        keys = own or [k for k in _ORIENT if k in self.dflt]
        if len(keys) > 1:
            raise self.err(f"the default class gives several orientations ({', '.join(keys)}); give at most one")
        if not keys:
            return np.eye(3)
        key = keys[0]
        comp = self.ctx.comp
        if key == "quat":
            q = self.floats("quat", 4)
            n = np.linalg.norm(q)
            if n < 1e-10:
                raise self.err(f"{self.desc('quat', self.raw('quat'))}: the quaternion is zero")
            return _quat_wxyz_matrix(q / n)
        if key == "axisangle":
            a = self.floats("axisangle", 4)
            n = np.linalg.norm(a[:3])
            if n < 1e-10:
                raise self.err(f"{self.desc('axisangle', self.raw('axisangle'))}: the axis is zero")
            return _axis_angle(a[:3] / n, comp.angle(a[3]))
        if key == "euler":
            e = self.floats("euler", 3)
            R = np.eye(3)
            for c, x in zip(comp.eulerseq, e):
                Rk = _axis_angle(np.eye(3)["xyz".index(c.lower())], comp.angle(x))
                R = R @ Rk if c.islower() else Rk @ R       # lower case: moving axes
            return R
        if key == "xyaxes":
            a = self.floats("xyaxes", 6)
            x, y = a[:3], a[3:]
            nx = np.linalg.norm(x)
            if nx < 1e-10:
                raise self.err(f"{self.desc('xyaxes', self.raw('xyaxes'))}: the x axis is zero")
            x = x / nx
            y = y - (x @ y) * x
            ny = np.linalg.norm(y)
            if ny < 1e-10:
                raise self.err(f"{self.desc('xyaxes', self.raw('xyaxes'))}: the y axis is parallel to the x axis")
            y = y / ny
            return np.column_stack([x, y, np.cross(x, y)])
        z = self.floats("zaxis", 3)
        n = np.linalg.norm(z)
        if n < 1e-10:
            raise self.err(f"{self.desc('zaxis', self.raw('zaxis'))}: the z axis is zero")
        return _z_to(z / n)

    def pose(self):
        """(R, p) from pos and the orientation attributes."""
        return self.orientation(), self.floats("pos", 3, [0.0, 0.0, 0.0])

    def fromto_pose(self):
        """(R, p, half length) from ``fromto`` (z from 'to' towards 'from', as MuJoCo), or None."""
        if not self.has("fromto"):
            return None
        ft = self.floats("fromto", 6)
        d = ft[:3] - ft[3:]
        n = float(np.linalg.norm(d))
        if n < 1e-10:
            raise self.err(f"{self.desc('fromto', self.raw('fromto'))}: the two points coincide")
        return _z_to(d / n), 0.5 * (ft[:3] + ft[3:]), 0.5 * n


class _Defaults:
    """class name -> {element tag -> {attribute -> value}}, inheritance resolved."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.classes = {"main": {}}

    def add_top(self, el):
        name = el.get("class", "main")
        if name != "main":
            raise self.ctx.error(el, f"<default class={name!r}>", "the top-level <default> is class 'main'")
        self._add(el, "main", self.classes["main"])      # several top-level <default> elements merge

    def _add(self, el, name, inherited):
        table = {tag: dict(a) for tag, a in inherited.items()}
        seen = set()
        for ch in el:
            if ch.tag == "default":
                continue
            if ch.tag in seen:
                raise self.ctx.error(ch, f"<default class={name!r}>", f"has two <{ch.tag}> elements")
            seen.add(ch.tag)
            table.setdefault(ch.tag, {}).update(ch.attrib)
        self.classes[name] = table
        for ch in el.findall("default"):
            cname = ch.get("class")
            if not cname:
                raise self.ctx.error(ch, f"<default> inside class {name!r}", "needs a 'class' attribute")
            if cname in self.classes:
                raise self.ctx.error(ch, f"<default class={cname!r}>", "the class is defined twice")
            self._add(ch, cname, table)

    def of(self, el, tag, childclass, where):
        cls = el.get("class") or childclass or "main"
        if cls not in self.classes:
            raise self.ctx.error(el, where, f"<{el.tag} class={cls!r}>: unknown default class; "
                                            f"defined: {sorted(self.classes)}")
        return self.classes[cls].get(tag, {})

    def check(self, el, cls, where):
        if cls is not None and cls not in self.classes:
            raise self.ctx.error(el, where, f"childclass={cls!r}: unknown default class; defined: {sorted(self.classes)}")


# --------------------------------------------------------------------------------------------
# the parsed tree
@dataclass
class _Joint:
    name: str
    type: str
    pos: np.ndarray
    axis: np.ndarray
    ref: float
    lower: float
    upper: float
    armature: float
    damping: float
    frictionloss: float
    effort: float
    ball_max: float | None = None     # a ball joint's range "0 X": X in radians


@dataclass
class _Body:
    name: str
    parent: str
    R: np.ndarray               # body frame in the parent body's frame (pose in the file)
    p: np.ndarray
    W: tuple                    # world pose in qpos0
    joints: list
    mass: float
    com: np.ndarray
    I: np.ndarray               # about the centre of mass, body frame
    el: object
    where: str
    sites: list = field(default_factory=list)     # (name, R, p)


def _unique(base, used):
    name, k = base, 1
    while name in used:
        name, k = f"{base}_{k}", k + 1
    used.add(name)
    return name


def _gather(ctx, defaults, el, childclass, where):
    """The children of a body (or worldbody) in document order, ``<frame>`` expanded:
    (child, R, p of the frame offset in the body, childclass)."""
    out = []

    def walk(parent, R, p, cc):
        for ch in parent:
            if ch.tag == "frame":
                a = _Attr(ctx, ch, f"<frame> in {where}")
                Rf, pf = _pose(R, p, *a.pose())
                fc = ch.get("childclass", cc)
                defaults.check(ch, fc, f"<frame> in {where}")
                walk(ch, Rf, pf, fc)
            else:
                out.append((ch, R, p, cc))

    walk(el, _I3, _Z3, childclass)
    return out


def _geom_inertia(ctx, a):
    """(mass, R, p, diag inertia about the geom centre in the geom frame) of one geom, or None."""
    gtype = a.choice("type", _GEOM_TYPES, "sphere")
    if gtype in ("plane", "hfield", "sdf"):
        return None
    if gtype == "mesh":
        return _mesh_geom_inertia(ctx, a)
    if a.boolean("shellinertia", False):
        raise NotImplementedError(f"{ctx.file(a.el)}: {a.where}: shellinertia='true' is not supported")
    size = a.floats("size", 3, [0.0, 0.0, 0.0], min_n=1)
    ft = a.fromto_pose()
    if ft is not None:
        if gtype == "sphere":
            raise a.err("fromto cannot be used with a sphere")
        R, p, half = ft
        size = np.array([size[0], half, 0.0]) if gtype in ("capsule", "cylinder") else np.array([size[0], size[0], half])
    else:
        R, p = a.pose()
    need = {"sphere": 1, "capsule": 2, "cylinder": 2, "box": 3, "ellipsoid": 3}[gtype]
    if np.any(size[:need] <= 0):
        raise a.err(f"a {gtype} needs {need} positive size value{'s' if need > 1 else ''} "
                    f"({'radius' if need == 1 else 'radius, half-length' if need == 2 else 'half-sizes'}"
                    f"{' or fromto' if need == 2 else ''}), got size='{a.raw('size')}'")
    r = size[0]
    if gtype == "sphere":
        vol = 4.0 / 3.0 * math.pi * r ** 3
    elif gtype == "capsule":
        vol = math.pi * r * r * (2.0 * size[1] + 4.0 / 3.0 * r)
    elif gtype == "cylinder":
        vol = math.pi * r * r * 2.0 * size[1]
    elif gtype == "box":
        vol = 8.0 * size[0] * size[1] * size[2]
    else:
        vol = 4.0 / 3.0 * math.pi * size[0] * size[1] * size[2]
    if a.has("mass"):
        m = a.nonneg("mass")
    else:
        m = a.nonneg("density", 1000.0) * vol
    if gtype == "sphere":
        d = np.full(3, 0.4 * m * r * r)
    elif gtype == "capsule":
        h = 2.0 * size[1]                               # cylinder height
        ms = m * 4.0 * r / (4.0 * r + 3.0 * h)          # the two hemispheres (volume fraction)
        mc = m - ms
        ix = mc * (3 * r * r + h * h) / 12.0 + 0.4 * ms * r * r + ms * h * (3.0 * r + 2.0 * h) / 8.0
        d = np.array([ix, ix, mc * r * r / 2.0 + 0.4 * ms * r * r])
    elif gtype == "cylinder":
        h = 2.0 * size[1]
        ix = m * (3 * r * r + h * h) / 12.0
        d = np.array([ix, ix, m * r * r / 2.0])
    elif gtype == "box":
        s2 = (2.0 * size) ** 2
        d = m / 12.0 * np.array([s2[1] + s2[2], s2[0] + s2[2], s2[0] + s2[1]])
    else:
        s2 = size ** 2
        d = m / 5.0 * np.array([s2[1] + s2[2], s2[0] + s2[2], s2[0] + s2[1]])
    return m, R, p, d


def _mesh_geom_inertia(ctx, a):
    """(mass, R, p, diag inertia) of a mesh geom, as MuJoCo's compiler computes it
    (:mod:`linkdyn.model._mesh_inertia`: the mesh's ``inertia`` mode, its ``scale``, ``refpos``
    and ``refquat``; the geom's ``density`` or ``mass``); None, with a warning, when the mesh
    cannot be read here (no trimesh, or MuJoCo's own .msh format)."""
    name = a.raw("mesh")
    if not name:
        raise a.err("a mesh geom needs a 'mesh' attribute")
    props = ctx.mesh_properties(a.el, a.where, name)
    if props is None:
        return None
    measure, com, I = props
    if a.has("mass"):
        m = a.nonneg("mass")
        rho = m / measure
    else:
        rho = a.nonneg("density", 1000.0)
        m = rho * measure
    lam, W = np.linalg.eigh(rho * I)
    if np.linalg.det(W) < 0:
        W[:, 0] = -W[:, 0]
    R, p = a.pose()
    return m, R @ W, p + R @ com, np.maximum(lam, 0.0)


class _MeshAssets:
    """``<asset><mesh>`` elements by name, read on first use: (measure, com, I) per mesh for a
    unit density, in the mesh's coordinates after its refpos, refquat and scale."""

    def __init__(self, ctx, defaults, root, base_dir):
        self.ctx, self.cache, self.els = ctx, {}, {}
        meshdir = None
        for el in root.iter("compiler"):
            meshdir = el.get("meshdir") or el.get("assetdir") or meshdir
        base = Path(base_dir) if base_dir is not None else None
        self.meshdir = meshdir
        self.folder = (base / meshdir if meshdir else base) if base is not None else None
        self.defaults = defaults
        for asset in root.iter("asset"):
            for m in asset.findall("mesh"):
                f = m.get("file")
                name = m.get("name") or (Path(f).stem if f else None)
                if name:
                    self.els[name] = m

    def properties(self, gel, where, name):
        if name in self.cache:
            return self.cache[name]
        from . import _mesh_inertia as mi
        el = self.els.get(name)
        if el is None:
            raise self.ctx.error(gel, where, f"<geom mesh={name!r}>: no <asset><mesh> of that name")
        mwhere = f"<mesh name={name!r}>"
        a = _Attr(self.ctx, el, mwhere, self.defaults.of(el, "mesh", None, mwhere))
        mode = a.choice("inertia", mi.MODES, "legacy")
        if a.has("vertex"):
            try:
                V = np.asarray([float(x) for x in a.raw("vertex").split()], dtype=float).reshape(-1, 3)
                F = (np.asarray([int(x) for x in a.raw("face").split()], dtype=np.int64).reshape(-1, 3)
                     if a.has("face") else None)
            except ValueError:
                raise a.err("'vertex' needs 3 numbers per vertex and 'face' 3 integers per triangle") from None
            if not np.isfinite(V).all() or len(V) < 4 or (F is not None and (F.min() < 0 or F.max() >= len(V))):
                raise a.err("a mesh needs at least 4 finite vertices and faces that index them")
            if F is None:
                mode = "convex"             # MuJoCo makes the faces from the convex hull
                F = np.zeros((0, 3), dtype=np.int64)
        else:
            f = a.raw("file")
            if not f:
                raise a.err("a mesh needs a 'file' or 'vertex' attribute")
            if f.lower().endswith(".msh"):
                self.ctx.warn(gel, where, f"the mesh {name!r} is in MuJoCo's .msh format, which linkdyn does not read: "
                                          "left out of the body's inertia (give the body an <inertial> element)")
                self.cache[name] = None
                return None
            if self.folder is None:
                raise a.err(f"the model was given as text without base_dir, so the mesh file {f!r} cannot be "
                            "looked up (use load_mjcf(path) or parse_mjcf(text, base_dir=...))")
            path = self.folder / f
            try:
                V, F = mi.load_mesh(path)
            except ImportError:
                self.ctx.warn(gel, where, f"the mesh {name!r} is left out of the body's inertia: reading mesh files "
                                          "needs trimesh (pip install 'linkdyn[meshes]')")
                self.cache[name] = None
                return None
            except (OSError, ValueError) as exc:
                raise a.err(f"cannot read the mesh file {str(path)!r}: {exc}") from None
        refpos = a.floats("refpos", 3, [0.0, 0.0, 0.0])
        V = V - refpos
        if a.has("refquat"):
            qr = a.floats("refquat", 4)
            if not np.linalg.norm(qr) > 1e-10:
                raise a.err("refquat: the quaternion is zero")
            R = _quat_wxyz_matrix(qr / np.linalg.norm(qr))
            V = V @ R                       # the vertices in the frame refquat names
        V = V * a.floats("scale", 3, [1.0, 1.0, 1.0])
        try:
            props = mi.mass_properties(V, F, mode)
        except ValueError as exc:
            raise a.err(str(exc)) from None
        self.cache[name] = props
        return props


def _combine(parts):
    """Mass, centre of mass and inertia about it of rigidly joined parts (m, R, p, diag)."""
    m = sum(x[0] for x in parts)
    if m <= 0.0:
        I = sum((x[1] @ np.diag(x[3]) @ x[1].T for x in parts), np.zeros((3, 3)))
        return 0.0, np.zeros(3), I
    c = sum(x[0] * x[2] for x in parts) / m
    I = np.zeros((3, 3))
    for mk, R, p, d in parts:
        r = p - c
        I += R @ np.diag(d) @ R.T + mk * ((r @ r) * np.eye(3) - np.outer(r, r))
    return m, c, 0.5 * (I + I.T)


class _Parser:
    def __init__(self, ctx, root):
        self.ctx, self.root = ctx, root
        self.defaults = _Defaults(ctx)
        self.bodies = []            # _Body in MuJoCo's order
        self.world_sites = []       # (name, R, p)
        self.joint_names = set()
        self.joint_info = {}        # name -> _Joint
        self.site_info = {}         # name -> (body name, R, p)
        self.stiff = []             # joints with a spring (stiffness), reported once
        self.geoms = []             # (element, body name, R, p of its frame in the body, childclass, where)
        self.flags = {}             # <option><flag ...> values that matter for contacts

    # ---------------------------------------------------------------- compiler, option, default
    def read_header(self):
        ctx, comp = self.ctx, self.ctx.comp
        gravity = None
        for el in self.root:
            where = f"<{el.tag}>"
            if el.tag == "compiler":
                a = _Attr(ctx, el, where)
                if a.has("coordinate") and a.raw("coordinate") != "local":
                    raise NotImplementedError(f"{ctx.file(el)}: <compiler coordinate={a.raw('coordinate')!r}>: "
                                              "only local coordinates are supported (MuJoCo removed 'global')")
                comp.degree = a.choice("angle", ("degree", "radian"), "degree" if comp.degree else "radian") == "degree"
                seq = a.raw("eulerseq")
                if seq is not None:
                    if len(seq) != 3 or any(c not in "xyzXYZ" for c in seq):
                        raise a.err(f"<compiler eulerseq='{seq}'>: expected 3 letters from x, y, z, X, Y, Z")
                    comp.eulerseq = seq
                comp.autolimits = a.boolean("autolimits", comp.autolimits)
                comp.inertiafromgeom = a.choice("inertiafromgeom", ("true", "false", "auto"), comp.inertiafromgeom)
                if a.has("inertiagrouprange"):
                    g = a.floats("inertiagrouprange", 2)
                    comp.group_range = (g[0], g[1])
                comp.boundmass = a.nonneg("boundmass", comp.boundmass)
                comp.boundinertia = a.nonneg("boundinertia", comp.boundinertia)
                comp.balanceinertia = a.boolean("balanceinertia", comp.balanceinertia)
                comp.settotalmass = a.number("settotalmass", comp.settotalmass)
            elif el.tag == "option":
                a = _Attr(ctx, el, where)
                if a.has("gravity"):
                    gravity = a.floats("gravity", 3)
                for fl in el.findall("flag"):
                    fa = _Attr(ctx, fl, "<option><flag>")
                    if fa.choice("gravity", ("enable", "disable"), "enable") == "disable":
                        gravity = np.zeros(3)
                    for key in ("contact", "constraint", "filterparent"):
                        if fa.has(key):
                            self.flags[key] = fa.choice(key, ("enable", "disable"), "enable") == "enable"
            elif el.tag == "default":
                self.defaults.add_top(el)
            elif el.tag not in _TOP_IGNORED:
                raise ctx.error(el, "<mujoco>", f"unknown element <{el.tag}>")
        return gravity

    # ---------------------------------------------------------------- the body tree
    def read_bodies(self):
        ctx = self.ctx
        worldbodies = self.root.findall("worldbody")
        # all body names first (generated names must not take a name used later)
        used = {_WORLD}
        k = 0
        for wb in worldbodies:
            for el in wb.iter("body"):
                k += 1
                name = el.get("name")
                if name is not None:
                    if not name:
                        raise ctx.error(el, f"body number {k}", "has an empty 'name' attribute")
                    if name == _WORLD:
                        raise ctx.error(el, f"body {name!r}", "the name 'world' is MuJoCo's world body")
                    if name in used:
                        raise ctx.error(el, f"body {name!r}", "the name is used by two <body> elements")
                    used.add(name)
        self.used_bodies = used
        counter = [0]
        for wb in worldbodies:
            if wb.attrib:
                raise ctx.error(wb, "<worldbody>", f"takes no attributes, got {sorted(wb.attrib)}")
            tops = []
            for ch, R, p, cc in _gather(ctx, self.defaults, wb, None, "<worldbody>"):
                self._world_child(ch, R, p, cc, tops)
            stack = tops[::-1]
            while stack:
                self._body(stack.pop(), stack, counter)

    def _world_child(self, ch, R, p, cc, stack):
        ctx = self.ctx
        where = "<worldbody>"
        if ch.tag == "body":
            stack.append((ch, _WORLD, (_I3, _Z3), R, p, cc))
        elif ch.tag == "site":
            self._site(ch, R, p, cc, where, self.world_sites, _WORLD)
        elif ch.tag == "geom":
            self.geoms.append((ch, _WORLD, R, p, cc, where))
        elif ch.tag in ("camera", "light"):
            pass
        elif ch.tag in ("joint", "freejoint", "inertial"):
            raise ctx.error(ch, where, f"<{ch.tag}> cannot be in the world body")
        elif ch.tag in _BODY_REFUSED:
            raise NotImplementedError(f"{ctx.file(ch)}: {where}: <{ch.tag}> is not supported by the linkdyn MJCF importer")
        else:
            raise ctx.error(ch, where, f"unknown element <{ch.tag}>")

    def _site(self, el, R, p, cc, where, out, body):
        ctx = self.ctx
        name = el.get("name")
        a = _Attr(ctx, el, f"<site{' name=' + repr(name) if name else ''}> in {where}",
                  self.defaults.of(el, "site", cc, where))
        ft = a.fromto_pose()
        Rs, ps = (ft[0], ft[1]) if ft is not None else a.pose()
        if not name:
            return
        if name in self.site_info:
            raise a.err(f"the site name {name!r} is used twice")
        Rs, ps = _pose(R, p, Rs, ps)
        self.site_info[name] = (body, Rs, ps)
        out.append((name, Rs, ps))

    def _body(self, item, stack, counter):
        ctx, comp = self.ctx, self.ctx.comp
        el, parent, Wp, Rf, pf, inherited_cc = item
        counter[0] += 1
        name = el.get("name") or _unique(f"body{counter[0]}", self.used_bodies)
        where = f"body {name!r}"
        a = _Attr(ctx, el, where)
        Rb, pb = _pose(Rf, pf, *a.pose())
        cc = el.get("childclass", inherited_cc)
        self.defaults.check(el, cc, where)
        if a.boolean("mocap", False) and parent != _WORLD:
            raise a.err("a mocap body must be a child of the world body")
        if a.has("gravcomp") and a.number("gravcomp") != 0.0:
            ctx.warn(el, where, "gravcomp (gravity compensation) is not modelled; ignored")
        kids = _gather(ctx, self.defaults, el, cc, where)

        joints, inertial, geoms, sites, children = [], [], [], [], []
        for ch, R, p, ccc in kids:
            if ch.tag in ("joint", "freejoint"):
                j = self._joint(ch, name, ccc, where, len(joints))
                j.pos, j.axis = R @ j.pos + p if j.type in ("hinge", "ball") else j.pos, R @ j.axis
                joints.append(j)
            elif ch.tag == "inertial":
                inertial.append((ch, R, p))
            elif ch.tag == "geom":
                geoms.append((ch, R, p, ccc))
                self.geoms.append((ch, name, R, p, ccc, where))
            elif ch.tag == "site":
                self._site(ch, R, p, ccc, where, sites, name)
            elif ch.tag == "body":
                children.append((ch, name, None, R, p, ccc))
            elif ch.tag in _BODY_IGNORED:
                pass
            elif ch.tag in _BODY_REFUSED:
                raise NotImplementedError(f"{ctx.file(ch)}: {where}: <{ch.tag}> is not supported by the linkdyn "
                                          "MJCF importer")
            else:
                raise ctx.error(ch, where, f"unknown element <{ch.tag}>")
        if len(inertial) > 1:
            raise ctx.error(el, where, "has two <inertial> elements")
        free = [j for j in joints if j.type == "free"]
        if free:
            if parent != _WORLD:
                raise ctx.error(el, where, f"the free joint {free[0].name!r} is not in a top-level body "
                                           "(MuJoCo allows free joints only in children of the world body)")
            if len(joints) > 1:
                raise ctx.error(el, where, f"the free joint {free[0].name!r} must be the only joint of its body")
        if joints and a.boolean("mocap", False):
            raise a.err("a mocap body cannot have joints")
        # world pose in qpos0: a free body is where the file puts it, relative to the world
        W = _pose(*Wp, Rb, pb)

        # mass properties
        use_geoms = comp.inertiafromgeom == "true" or (comp.inertiafromgeom == "auto" and not inertial)
        if use_geoms:
            parts = []
            for g, R, p, gcc in geoms:
                gname = g.get("name")
                ga = _Attr(ctx, g, f"<geom{' name=' + repr(gname) if gname else ''}> in {where}",
                           self.defaults.of(g, "geom", gcc, where))
                group = ga.number("group", 0.0)
                if not comp.group_range[0] <= group <= comp.group_range[1]:
                    ga.choice("type", _GEOM_TYPES, "sphere")
                    continue
                gi = _geom_inertia(ctx, ga)
                if gi is not None:
                    m, Rg, pg, d = gi
                    Rg, pg = _pose(R, p, Rg, pg)
                    parts.append((m, Rg, pg, d))
            mass, com, I = _combine(parts) if parts else (0.0, np.zeros(3), np.zeros((3, 3)))
        elif inertial:
            ch, R, p = inertial[0]
            mass, com, I = self._inertial(ch, where)
            com, I = R @ com + p, R @ I @ R.T
        else:
            mass, com, I = 0.0, np.zeros(3), np.zeros((3, 3))
        for ch, R, p, ccc in geoms:           # check the geoms' attributes even when unused
            if not use_geoms:
                _Attr(ctx, ch, f"<geom> in {where}", self.defaults.of(ch, "geom", ccc, where)).choice(
                    "type", _GEOM_TYPES, "sphere")

        body = _Body(name, parent, Rb, pb, W, joints, mass, com, I, el, where, sites)
        self.bodies.append(body)
        for ch in reversed(children):
            stack.append((ch[0], name, W) + ch[3:])

    def _inertial(self, el, where):
        a = _Attr(self.ctx, el, f"<inertial> of {where}")
        if not a.has("mass"):
            raise a.err("<inertial> needs a 'mass' attribute")
        m = a.nonneg("mass")
        R, c = a.orientation(), a.floats("pos", 3)
        if a.has("diaginertia") and a.has("fullinertia"):
            raise a.err("<inertial> has both diaginertia and fullinertia; give one")
        if a.has("diaginertia"):
            I = np.diag(a.floats("diaginertia", 3))
        elif a.has("fullinertia"):
            if any(a.has(k) for k in _ORIENT):
                raise a.err("fullinertia cannot be combined with an orientation (MuJoCo refuses it)")
            ixx, iyy, izz, ixy, ixz, iyz = a.floats("fullinertia", 6)
            I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        else:
            raise a.err("<inertial> needs diaginertia or fullinertia")
        lam = np.linalg.eigvalsh(I)
        if lam.min() < -1e-12 * max(1.0, abs(lam).max()):
            raise a.err(f"the inertia is not positive semi-definite (eigenvalues {lam.round(12).tolist()})")
        return m, c, R @ I @ R.T

    def _joint(self, el, body, cc, where, k):
        ctx, comp = self.ctx, self.ctx.comp
        name = el.get("name")
        jwhere = f"joint {name!r} in {where}" if name else f"<{el.tag}> number {k + 1} in {where}"
        if el.tag == "freejoint":
            a = _Attr(ctx, el, jwhere)
            jtype = "free"
        else:
            a = _Attr(ctx, el, jwhere, self.defaults.of(el, "joint", cc, jwhere))
            raw = a.raw("type")
            if raw is not None and raw not in _JOINT_TYPES:
                raise a.err(f"unknown joint type {raw!r}; expected one of {', '.join(_JOINT_TYPES)}")
            jtype = raw or "hinge"
        if name is None:
            name = _unique(f"{body}_joint", self.joint_names | self._all_joint_names())
        elif not name:
            raise a.err("has an empty 'name' attribute")
        elif name in self.joint_names:
            raise a.err(f"the joint name {name!r} is used twice")
        self.joint_names.add(name)
        pos = a.floats("pos", 3, [0.0, 0.0, 0.0]) if jtype in ("hinge", "ball") else np.zeros(3)
        if jtype == "slide" and el.tag == "joint":
            a.floats("pos", 3, [0.0, 0.0, 0.0])          # checked, but a slide acts the same anywhere
        axis = np.array([0.0, 0.0, 1.0])
        if jtype in ("hinge", "slide"):
            axis = a.floats("axis", 3, [0.0, 0.0, 1.0])
            n = np.linalg.norm(axis)
            if n < 1e-10:
                raise a.err(f"{a.desc('axis', a.raw('axis'))}: the axis is zero")
            axis = axis / n
        ang = comp.angle if jtype == "hinge" else (lambda x: x)
        ref = ang(a.number("ref", 0.0)) if jtype in ("hinge", "slide") else 0.0
        lo, hi, ball_max = -np.inf, np.inf, None
        if el.tag == "joint" and jtype != "free":
            limited = a.choice("limited", ("true", "false", "auto"), "auto")
            if limited == "auto":
                limited = "true" if (comp.autolimits and a.has("range")) else "false"
            if limited == "true":
                if not a.has("range"):
                    raise a.err("limited='true' needs a 'range'")
                r = a.floats("range", 2)
                if jtype == "ball":
                    if r[0] != 0.0 or r[1] <= 0.0:
                        raise a.err(f"a ball joint's range must be '0 max-angle', got '{a.raw('range')}'")
                    ball_max = comp.angle(r[1])           # degrees or radians, as a hinge's range
                else:
                    if r[0] >= r[1]:
                        raise a.err(f"{a.desc('range', a.raw('range'))}: the lower limit must be below the upper")
                    lo, hi = ang(r[0]), ang(r[1])
            elif a.has("range"):
                a.floats("range", 2)
        if el.tag == "joint":
            if a.has("stiffness") and a.number("stiffness") != 0.0:
                self.stiff.append(name)
        arm = a.nonneg("armature") if el.tag == "joint" else 0.0
        damp = a.nonneg("damping") if el.tag == "joint" else 0.0
        fl = a.nonneg("frictionloss") if el.tag == "joint" else 0.0
        effort = np.inf
        if el.tag == "joint" and a.has("actuatorfrcrange") and a.choice(
                "actuatorfrclimited", ("true", "false", "auto"), "auto") != "false":
            fr = a.floats("actuatorfrcrange", 2)
            if fr[0] > fr[1]:
                raise a.err(f"{a.desc('actuatorfrcrange', a.raw('actuatorfrcrange'))}: lower above upper")
            effort = float(np.max(np.abs(fr)))
        j = _Joint(name, jtype, pos, axis, ref, lo, hi, arm, damp, fl, effort, ball_max)
        self.joint_info[name] = j
        return j

    def _all_joint_names(self):
        """Names of every named joint of the file (so that generated names avoid them)."""
        if not hasattr(self, "_named_joints"):
            self._named_joints = {el.get("name") for wb in self.root.findall("worldbody")
                                  for tag in ("joint", "freejoint") for el in wb.iter(tag) if el.get("name")}
        return self._named_joints

    # ---------------------------------------------------------------- mass post-processing
    def finish_inertia(self):
        comp = self.ctx.comp
        for b in self.bodies:
            if comp.boundmass > 0.0 and b.mass < comp.boundmass:
                b.mass = comp.boundmass
            if comp.boundinertia > 0.0 or comp.balanceinertia:
                lam, V = np.linalg.eigh(b.I)
                lam = np.maximum(lam, comp.boundinertia)
                if comp.balanceinertia and (lam[0] + lam[1] < lam[2] * (1 - 1e-12)):
                    lam = np.full(3, lam.mean())
                b.I = V @ np.diag(lam) @ V.T
            lam = np.linalg.eigvalsh(b.I)
            if lam[0] + lam[1] < lam[2] - 1e-10 * max(1.0, lam[2]):
                raise self.ctx.error(b.el, b.where, f"the principal moments of inertia {lam.round(12).tolist()} "
                                                    "violate A + B >= C (MuJoCo refuses such a body; "
                                                    "<compiler balanceinertia='true'> fixes it)")
        if comp.settotalmass > 0:
            total = sum(b.mass for b in self.bodies)
            if total <= 0:
                raise self.ctx.error(self.root, "<compiler settotalmass>", "the model has no mass to scale")
            s = comp.settotalmass / total
            for b in self.bodies:
                b.mass *= s
                b.I = b.I * s


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


# --------------------------------------------------------------------------------------------
# the model
def _build(text, source, base_dir, gravity, joint_friction, return_info, default_name, main_file, contacts=True):
    reader = _Reader(base_dir)
    root = reader.read(text, source, [main_file] if main_file is not None else [])
    ctx = _Ctx(source, reader, _Compiler())
    P = _Parser(ctx, root)
    ctx.meshes = _MeshAssets(ctx, P.defaults, root, base_dir)
    try:
        file_gravity = P.read_header()
        P.read_bodies()
    except RecursionError:
        raise MJCFError(f"{source}: the XML is nested too deeply") from None
    P.finish_inertia()
    if P.stiff:
        shown = ", ".join(repr(n) for n in P.stiff[:8]) + (", ..." if len(P.stiff) > 8 else "")
        _warn(f"{source}: joint stiffness (springs) is not modelled; ignored for {len(P.stiff)} joint"
              f"{'s' if len(P.stiff) > 1 else ''}: {shown}")
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

    def terms(j, nv):
        kw = dict(armature=[j.armature] * nv)
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
            call(bd, b.add_body, bd.name, _WORLD, J.FreeFlyer(), placement=None, inertia=inertia,
                 joint_name=j0.name, **terms(j0, 6))
            Rw, pw = bd.W
            w, x, y, z = _matrix_to_quat_wxyz(Rw)
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
            kw = terms(j, joint.nv)
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
    if contacts:
        _contact_geometry(P, b, root)

    try:
        model = b.build()
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


def _geom_visuals(P, base_dir):
    """Every geom as drawing geometry (:class:`linkdyn.model.urdf.Visual` on its body's frame):
    spheres, capsules, cylinders, boxes, ellipsoids, planes and meshes (``<asset><mesh file>``
    under ``<compiler meshdir>``); geoms of ``group`` 3 and above are "collision" geometry, as
    MuJoCo's viewer hides them.  A geom that cannot be read is skipped: drawing never stops a
    file from loading."""
    from .urdf import Visual
    assets, meshes = P.ctx.meshes, {}
    for name, m in assets.els.items():
        f = m.get("file")
        if not f:
            continue
        try:
            sc = [float(x) for x in (m.get("scale") or "1 1 1").split()]
        except ValueError:
            sc = [1.0, 1.0, 1.0]
        meshes[name] = (f, sc if len(sc) == 3 else [1.0, 1.0, 1.0])
    folder = str(Path(base_dir or ".") / assets.meshdir) if assets.meshdir else base_dir
    out = []
    for el, body, R0, p0, cc, where in P.geoms:
        try:
            a = _Attr(P.ctx, el, where, P.defaults.of(el, "geom", cc, where))
            gtype = a.choice("type", _GEOM_TYPES, "sphere")
            if gtype in ("hfield", "sdf"):
                continue
            size = a.floats("size", 3, [0.0, 0.0, 0.0], min_n=1)
            ft = a.fromto_pose() if gtype in ("capsule", "cylinder", "box", "ellipsoid") else None
            if ft is not None:
                R, p, half = ft
                size = np.array([size[0], half, 0.0]) if gtype in ("capsule", "cylinder") else \
                    np.array([size[0], size[0], half])
            else:
                R, p = a.pose()
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
                out.append(Visual(body, "mesh", (), mesh[0], folder, mesh[1], **kw))
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


def _equalities(P, b, root, taken, used_joints):
    ctx = P.ctx
    world_pose = {_WORLD: (_I3, _Z3)}
    world_pose.update({bd.name: bd.W for bd in P.bodies})
    counter = 0
    for eq in root.findall("equality"):
        for el in eq:
            counter += 1
            given = el.get("name")
            where = f"<{el.tag} name={given!r}>" if given else f"<{el.tag}> number {counter} in <equality>"
            if el.tag in ("flex", "flexvert", "flexstrain", "distance"):
                raise NotImplementedError(f"{ctx.file(el)}: {where}: <equality><{el.tag}> is not supported "
                                          "(connect, weld and linear joint couplings are)")
            if el.tag not in ("connect", "weld", "joint", "tendon"):
                raise ctx.error(el, "<equality>", f"unknown element <{el.tag}>")
            a = _Attr(ctx, el, where, P.defaults.of(el, "equality", None, where))
            if not a.boolean("active", True):
                ctx.warn(el, where, "an inactive constraint (active='false') is skipped")
                continue
            if el.tag == "joint":
                _joint_equality(P, b, a)
                continue
            if el.tag == "tendon":
                _tendon_equality(P, b, a, root)
                continue
            has_site = a.has("site1") or a.has("site2")
            has_body = any(a.has(k) for k in ("body1", "body2", "anchor", "relpose"))
            if has_site and has_body:
                raise a.err("give either site1/site2 or body1/body2 (with anchor, relpose), not both")

            def body_ref(attr, default):
                nm = a.raw(attr)
                if nm is None:
                    if default is None:
                        raise a.err(f"<{el.tag}> needs a '{attr}' attribute")
                    return default
                if nm not in world_pose:
                    raise a.err(f"{attr}={nm!r} is not a body of the model")
                return nm

            def site_ref(attr):
                nm = a.raw(attr)
                if nm not in P.site_info:
                    raise a.err(f"{attr}={nm!r} is not a named site of the model")
                return P.site_info[nm]

            if has_site:
                if not (a.has("site1") and a.has("site2")):
                    raise a.err(f"<{el.tag}> needs both 'site1' and 'site2'")
                b1, R1, p1 = site_ref("site1")
                b2, R2, p2 = site_ref("site2")
            else:
                b1, b2 = body_ref("body1", None), body_ref("body2", _WORLD)
            if b1 == b2:
                raise a.err(f"both ends are on body {b1!r}; the constraint would constrain nothing")
            W1, W2 = world_pose[b1], world_pose[b2]
            lname = _unique(given or f"{el.tag}_{b1}_{b2}", taken)
            if given and lname != given:
                ctx.warn(el, where, f"the name is taken by a body, site or another constraint; the loop is "
                                    f"called {lname!r}")
            if el.tag == "connect":
                if has_site:
                    anchor, real_p = p1, p2
                else:
                    anchor = a.floats("anchor", 3)
                    x = W1[0] @ anchor + W1[1]                      # the point in qpos0, world
                    real_p = W2[0].T @ (x - W2[1])
                # orient the virtual link so that the cut joint is at the identity in qpos0
                real_R = W2[0].T @ W1[0]
                try:
                    b.add_loop(lname, b1, b2, J.Spherical(), placement=(_I3, anchor),
                               real_placement=(real_R, real_p), joint_name=_unique(f"{lname}_joint", used_joints))
                except ValueError as exc:
                    raise a.err(str(exc)) from None
            else:   # weld
                if has_site:
                    pa, pb = (R1, p1), (R2, p2)
                else:
                    anchor = a.floats("anchor", 3, [0.0, 0.0, 0.0])
                    rel = a.floats("relpose", 7, [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
                    if np.linalg.norm(rel[3:]) < 1e-10:         # MuJoCo: the relative pose in qpos0
                        x = W2[0] @ anchor + W2[1]
                        pa = (W1[0].T @ W2[0], W1[0].T @ (x - W1[1]))
                    else:
                        pa = (_quat_wxyz_matrix(rel[3:] / np.linalg.norm(rel[3:])), rel[:3])
                    pb = (_I3, anchor)
                try:
                    b.add_loop(lname, b1, b2, J.Fixed(), placement=pa, real_placement=pb,
                               joint_name=_unique(f"{lname}_joint", used_joints))
                except ValueError as exc:
                    raise a.err(str(exc)) from None


def _joint_equality(P, b, a):
    names = []
    for attr in ("joint1", "joint2"):
        nm = a.raw(attr)
        if nm is None:
            if attr == "joint1":
                raise a.err("<joint> needs a 'joint1' attribute")
            raise NotImplementedError(f"{P.ctx.file(a.el)}: {a.where}: an equality that locks joint "
                                      f"{a.raw('joint1')!r} alone (no joint2) is not supported")
        if nm not in P.joint_info:
            raise a.err(f"{attr}={nm!r} is not a joint of the model")
        if P.joint_info[nm].type not in ("hinge", "slide"):
            raise a.err(f"{attr}={nm!r} is a {P.joint_info[nm].type} joint; joint equalities couple hinge "
                        "and slide joints")
        names.append(nm)
    if names[0] == names[1]:
        raise a.err("joint1 and joint2 are the same joint")
    c = a.floats("polycoef", 5, [0.0, 1.0, 0.0, 0.0, 0.0])
    if np.any(c[2:] != 0.0):
        raise NotImplementedError(f"{P.ctx.file(a.el)}: {a.where}: a nonlinear coupling polycoef='{a.raw('polycoef')}' "
                                  "is not supported (only q1 = c0 + c1 q2)")
    j1, j2 = P.joint_info[names[0]], P.joint_info[names[1]]
    # MuJoCo: q1 - ref1 = c0 + c1 (q2 - ref2), and linkdyn's q is MuJoCo's qpos
    _add_gear(P, b, a, names[0], names[1], float(c[1]), float(j1.ref + c[0] - c[1] * j2.ref))


def _add_gear(P, b, a, follower, leader, ratio, offset):
    b.mimic.append({"joint": follower, "mimicked": leader, "multiplier": ratio, "offset": offset})
    if ratio == 0.0:
        raise NotImplementedError(f"{P.ctx.file(a.el)}: {a.where}: a coupling with ratio 0 locks joint "
                                  f"{follower!r} alone, which is not supported")
    try:
        b.add_gear(follower, leader, ratio, offset)
    except (KeyError, ValueError) as exc:
        raise a.err(f"cannot couple {follower!r} to {leader!r}: {exc}") from None


def _fixed_tendons(P, root):
    """name -> [(joint, coef)] of every ``<tendon><fixed>``."""
    out = {}
    for ten in root.findall("tendon"):
        for k, el in enumerate(ten.findall("fixed")):
            name = el.get("name") or f"<fixed> number {k + 1}"
            terms = []
            for j in el.findall("joint"):
                jn = j.get("joint")
                if jn not in P.joint_info:
                    raise P.ctx.error(el, f"<fixed name={name!r}>", f"joint={jn!r} is not a joint of the model")
                try:
                    terms.append((jn, float(j.get("coef", "1"))))
                except ValueError:
                    raise P.ctx.error(el, f"<fixed name={name!r}>", f"coef={j.get('coef')!r} is not a number") from None
            out[name] = terms
    return out


def _tendon_equality(P, b, a, root):
    """A fixed-tendon equality that is a linear coupling of two joints -> a gear (module docstring)."""
    tendons = _fixed_tendons(P, root)
    where = f"{P.ctx.file(a.el)}: {a.where}"
    names = [a.raw("tendon1"), a.raw("tendon2")]
    if names[0] is None:
        raise a.err("<tendon> needs a 'tendon1' attribute")
    for nm in names:
        if nm is not None and nm not in tendons:
            spatial = any(t.find(f"spatial[@name='{nm}']") is not None for t in root.findall("tendon"))
            raise NotImplementedError(f"{where}: tendon {nm!r} is " + ("a spatial tendon; only fixed tendons, linear in the "
                                      "joint coordinates, can couple joints" if spatial else "not a fixed tendon of the model"))
    c = a.floats("polycoef", 5, [0.0, 1.0, 0.0, 0.0, 0.0])
    if np.any(c[2:] != 0.0):
        raise NotImplementedError(f"{where}: a nonlinear coupling polycoef='{a.raw('polycoef')}' is not supported "
                                  "(only L1 - L1_0 = c0 + c1 (L2 - L2_0))")
    # sum_i k_i (q_i - ref_i) = c0 with k = coefs of tendon1 minus c1 x coefs of tendon2
    k = {}
    for jn, coef in tendons[names[0]]:
        k[jn] = k.get(jn, 0.0) + coef
    if names[1] is not None:
        for jn, coef in tendons[names[1]]:
            k[jn] = k.get(jn, 0.0) - float(c[1]) * coef
    k = {jn: x for jn, x in k.items() if x != 0.0}
    if len(k) != 2 or any(P.joint_info[jn].type not in ("hinge", "slide") for jn in k):
        raise NotImplementedError(f"{where}: the equality couples joints {sorted(k)}; linkdyn turns a tendon equality "
                                  "into a gear only when it ties exactly two hinge or slide joints")
    (f, kf), (lead, kl) = list(k.items())
    rf, rl = P.joint_info[f].ref, P.joint_info[lead].ref
    # kf (q_f - ref_f) + kl (q_l - ref_l) = c0  ->  q_f = -kl/kf q_l + ref_f + (c0 + kl ref_l) / kf
    _add_gear(P, b, a, f, lead, -kl / kf, rf + (float(c[0]) + kl * rl) / kf)


# --------------------------------------------------------------------------------------------
# contact geometry: sphere geoms -> contacts, plane geoms -> planes
@dataclass
class _CGeom:
    name: str | None
    label: str                  # for messages
    type: str
    body: str
    contype: int
    conaffinity: int
    condim: int
    priority: int
    friction: float            # the first (sliding) friction value
    a: object                  # the _Attr, to read the pose and size of the geoms that are used
    R: np.ndarray              # the frame the geom sits in (a <frame>), in the body frame
    p: np.ndarray


def _shown(items, n=6):
    items = list(items)
    return ", ".join(items[:n]) + (", ..." if len(items) > n else "")


def _contact_geometry(P, b, root):
    """Sphere and plane geoms -> ``add_contact`` / ``add_plane`` (see the module docstring)."""
    ctx = P.ctx
    source = ctx.source
    if not P.flags.get("contact", True) or not P.flags.get("constraint", True):
        return
    # MuJoCo's weld bodies (body_weldid: the nearest ancestor with joints, or a mocap body) and
    # linkdyn's static bodies (welded to the world: mocap bodies are fixed in linkdyn)
    parent = {bd.name: bd.parent for bd in P.bodies}
    weld, static = {_WORLD: _WORLD}, {_WORLD: True}
    for bd in P.bodies:                                  # parents come before their children
        mocap = bd.el.get("mocap") == "true"
        weld[bd.name] = bd.name if (bd.joints or mocap) else weld[bd.parent]
        static[bd.name] = not bd.joints and static[bd.parent]

    def weld_parent(w):
        return _WORLD if w == _WORLD else weld[parent[w]]

    geoms = []
    for el, body, R, p, cc, where in P.geoms:
        gname = el.get("name")
        gwhere = f"<geom{' name=' + repr(gname) if gname else ''}> in {where}"
        a = _Attr(ctx, el, gwhere, P.defaults.of(el, "geom", cc, gwhere))
        gtype = a.choice("type", _GEOM_TYPES, "sphere")
        condim = int(a.number("condim", 3))
        if condim not in (1, 3, 4, 6):
            raise a.err(f"{a.desc('condim', a.raw('condim'))}: expected 1, 3, 4 or 6")
        fr = a.floats("friction", 3, [1.0, 0.005, 0.0001], min_n=1)
        if np.any(fr < 0):
            raise a.err(f"{a.desc('friction', a.raw('friction'))}: friction must not be negative")
        label = repr(gname) if gname else f"a {gtype} in {where}"
        geoms.append(_CGeom(gname, label, gtype, body, int(a.number("contype", 1)), int(a.number("conaffinity", 1)),
                            condim, int(a.number("priority", 0)), float(fr[0]), a, R, p))
        if gtype == "plane" and weld[body] != _WORLD:
            raise a.err("a plane is allowed only in static bodies (the world body, or bodies without joints "
                        "between them and the world), as in MuJoCo")

    # <contact>: explicit pairs and excluded body pairs
    by_name = {g.name: k for k, g in enumerate(geoms) if g.name}
    explicit, excluded = {}, set()
    for cel in root.findall("contact"):
        for n, el in enumerate(cel):
            where = f"<contact><{el.tag}{' name=' + repr(el.get('name')) if el.get('name') else ''}> number {n + 1}"
            if el.tag == "pair":
                a = _Attr(ctx, el, where, P.defaults.of(el, "pair", None, where))
                ids = []
                for attr in ("geom1", "geom2"):
                    nm = a.raw(attr)
                    if nm is None or nm not in by_name:
                        raise a.err(f"{attr}={nm!r} is not a named geom of the model")
                    ids.append(by_name[nm])
                fr = a.floats("friction", 5, [1.0, 1.0, 0.005, 0.0001, 0.0001], min_n=1)
                explicit[frozenset(ids)] = (float(fr[0]), int(a.number("condim", 3)))
            elif el.tag == "exclude":
                a = _Attr(ctx, el, where)
                pair = []
                for attr in ("body1", "body2"):
                    nm = a.raw(attr)
                    if nm is None or nm not in weld:
                        raise a.err(f"{attr}={nm!r} is not a body of the model")
                    pair.append(nm)
                excluded.add(frozenset(pair))

    filterparent = P.flags.get("filterparent", True)

    # per geom: its body, weld body and the weld body's parent as integers (0: the world)
    ids = {nm: k for k, nm in enumerate([_WORLD] + [bd.name for bd in P.bodies])}
    g_body = np.array([ids[g.body] for g in geoms], dtype=np.int64)
    g_weld = np.array([ids[weld[g.body]] for g in geoms], dtype=np.int64)
    g_wpar = np.array([ids[weld_parent(weld[g.body])] for g in geoms], dtype=np.int64)
    g_type = np.array([g.contype for g in geoms], dtype=np.int64)
    g_aff = np.array([g.conaffinity for g in geoms], dtype=np.int64)
    excl = [tuple(ids[nm] for nm in pair) * (2 if len(pair) == 1 else 1) for pair in excluded]
    expl = [tuple(pair) * (2 if len(pair) == 1 else 1) for pair in explicit]

    def collide_matrix(I, Jx):
        """M[a, b]: whether MuJoCo's collision detection considers geoms I[a] and Jx[b] (bit
        masks, same weld body, filterparent, <exclude>; <pair> always)."""
        I, Jx = np.asarray(I, dtype=np.int64), np.asarray(Jx, dtype=np.int64)
        wi, wj = g_weld[I][:, None], g_weld[Jx][None, :]
        M = ((g_type[I][:, None] & g_aff[Jx][None, :]) | (g_type[Jx][None, :] & g_aff[I][:, None])) != 0
        M &= wi != wj
        if filterparent:
            M &= ~((wi != 0) & (wj != 0) & ((wi == g_wpar[Jx][None, :]) | (wj == g_wpar[I][:, None])))
        bi, bj = g_body[I][:, None], g_body[Jx][None, :]
        for b1, b2 in excl:
            M &= ~(((bi == b1) & (bj == b2)) | ((bi == b2) & (bj == b1)))
        for i, j in expl:
            M |= ((I[:, None] == i) & (Jx[None, :] == j)) | ((I[:, None] == j) & (Jx[None, :] == i))
        return M

    def mj_friction(i, j):
        """(sliding friction, condim) of MuJoCo's contact between geoms i and j."""
        key = frozenset((i, j))
        if key in explicit:
            fr, cd = explicit[key]
        else:
            gi, gj = geoms[i], geoms[j]
            if gi.priority != gj.priority:
                g = gi if gi.priority > gj.priority else gj
                fr, cd = g.friction, g.condim
            else:
                fr, cd = max(gi.friction, gj.friction), max(gi.condim, gj.condim)
        return (0.0 if cd == 1 else fr), cd

    def own_friction(g):
        return 0.0 if g.condim == 1 else g.friction

    planes = [k for k, g in enumerate(geoms) if g.type == "plane"]
    spheres = [k for k, g in enumerate(geoms) if g.type == "sphere" and not static[g.body]]
    moving = [k for k, g in enumerate(geoms) if weld[g.body] != _WORLD]
    SP = collide_matrix(spheres, planes)
    used_s = [s for s, row in zip(spheres, SP) if row.any()]
    used_p = [p for p, row in zip(planes, collide_matrix(planes, moving)) if row.any()]
    SP = collide_matrix(used_s, used_p)

    names = set(by_name)
    for k in used_p:
        g = geoms[k]
        a = g.a
        if a.has("fromto"):
            raise a.err("fromto cannot be used with a plane")
        R, p = _pose(g.R, g.p, *a.pose())
        name = g.name or _unique("plane" if g.body == _WORLD else f"{g.body}_plane", names)
        try:
            b.add_plane(name, g.body, placement=(R, p), friction=own_friction(g))
        except ValueError as exc:
            raise a.err(str(exc)) from None
    counter = {}
    for k in used_s:
        g = geoms[k]
        a = g.a
        if a.has("fromto"):
            raise a.err("fromto cannot be used with a sphere")
        r = a.floats("size", 3, [0.0, 0.0, 0.0], min_n=1)[0]
        if r <= 0:
            raise a.err(f"a sphere needs a positive radius, got size='{a.raw('size')}'")
        _, p = _pose(g.R, g.p, *a.pose())
        if g.name is None:
            counter[g.body] = counter.get(g.body, -1) + 1
        name = g.name or _unique(f"{g.body}_contact{counter[g.body]}", names)
        try:
            b.add_contact(g.body, p, radius=r, friction=own_friction(g), name=name)
        except ValueError as exc:
            raise a.err(str(exc)) from None

    # what linkdyn does differently
    apart, differ, torsional = [], [], []
    for a_, s in enumerate(used_s):
        for b_, p in enumerate(used_p):
            pair = f"{geoms[s].label}/{geoms[p].label}"
            if not SP[a_, b_]:
                apart.append(pair)
                continue
            mu_mj, cd = mj_friction(s, p)
            mu_ld = math.sqrt(own_friction(geoms[s]) * own_friction(geoms[p]))
            if abs(mu_ld - mu_mj) > 1e-12 * max(1.0, mu_mj):
                differ.append(f"{pair} ({mu_ld:.4g} instead of {mu_mj:.4g})")
            if cd > 3:
                torsional.append(pair)
    if apart:
        _warn(f"{source}: linkdyn makes every contact sphere touch every plane; MuJoCo's collision filters "
              f"(contype/conaffinity, <exclude>) keep {len(apart)} of these sphere-plane pairs apart: {_shown(apart)}")
    if differ:
        _warn(f"{source}: the friction of {len(differ)} sphere-plane pair{'s' if len(differ) > 1 else ''} differs from "
              f"MuJoCo's (linkdyn: sqrt(mu_sphere mu_plane); MuJoCo: the larger one, the higher priority's or the "
              f"<pair>'s): {_shown(differ, 4)}")
    if torsional:
        _warn(f"{source}: torsional and rolling friction (condim 4, 6) are not modelled; {len(torsional)} "
              f"sphere-plane pair{'s' if len(torsional) > 1 else ''} get sliding friction only: {_shown(torsional)}")
    # geoms of other types that MuJoCo would let touch a plane; reported only when the model has
    # planes (without one, linkdyn has nothing for them to touch, and MuJoCo's self-collisions
    # between bodies are not modelled: a robot arm's meshes are no news)
    others = [k for k, g in enumerate(geoms) if g.type not in ("sphere", "plane")]
    if used_p and others:
        left = {}
        for k, row in zip(others, collide_matrix(others, used_p)):
            if row.any():
                left.setdefault(geoms[k].type, []).append(geoms[k].label)
        if left:
            parts = [f"{len(v)} {t} geom{'s' if len(v) > 1 else ''} ({_shown(v, 4)})" for t, v in sorted(left.items())]
            _warn(f"{source}: geoms left out of contact ({', '.join(sorted(left))}): linkdyn's contacts are spheres "
                  f"and points against planes; these touch the model's planes in MuJoCo but nothing here: "
                  f"{'; '.join(parts)} (give such a body small spheres where it should touch, e.g. at the corners "
                  f"of a foot)")
