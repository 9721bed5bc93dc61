"""URDF import: ``load_urdf(path)`` / ``parse_urdf(text)`` -> :class:`linkdyn.Model`.

    model = linkdyn.load_urdf("panda.urdf")                       # fixed base
    model = linkdyn.load_urdf("talos.urdf", floating_base=True)   # FreeFlyer "root_joint"

The XML is read with :mod:`defusedxml` (DTDs, entity declarations and external references
are refused), so untrusted files are safe to open.  Every problem with the file raises
:class:`URDFError` (a ``ValueError``) whose message names the file, the element and what
is wrong.

Mapping (the same as Pinocchio's ``buildModelFromUrdf`` unless stated):

* the root link (the one link that is no joint's child) hangs from the world by a fixed
  joint, or by a ``FreeFlyer`` named ``"root_joint"`` with ``floating_base=True``.  The
  world body is called ``"world"``, or ``"universe"`` (Pinocchio's name) when a URDF link is
  already called ``"world"``;
* ``revolute`` and ``continuous`` -> ``Revolute(axis)`` with ONE coordinate, the angle
  (Pinocchio gives a continuous joint two, [cos, sin]); ``prismatic`` -> ``Prismatic``;
  ``fixed`` -> merged into the parent body, the link stays a frame; ``floating`` ->
  ``FreeFlyer``; ``planar`` -> ``Planar``, see below.  A missing ``<axis>`` is (1, 0, 0);
  axes are normalised;
* kinematic loops (linkdyn's extension; URDF itself is a tree and Pinocchio refuses them): a
  joint whose child link already has a parent joint closes a loop.  It becomes the cut joint
  of a virtual link ``"<joint>::virtual"`` hanging from its parent link at its origin, whose
  real link is the child link's frame (``ModelBuilder.add_loop``; revolute, continuous,
  prismatic or fixed); the joint's name names the cut joint in q and v;
* bodies are added depth first from the root, the child joints of a link visited in
  alphabetical order of the JOINT name: that is the order of urdfdom (which keeps joints in a
  ``std::map``) and so of Pinocchio, which makes the joint order, q and v layouts equal to
  Pinocchio's (continuous and planar joints aside);
* ``<origin xyz rpy>``: R = Rz(yaw) Ry(pitch) Rx(roll); ``<inertial>``: the inertia tensor
  given in the inertial frame is rotated into the link frame (R I R^T); a link without
  ``<inertial>`` is massless;
* ``<limit>``: lower/upper (revolute, prismatic; 0 when the attribute is missing, as in
  urdfdom; equal lower and upper, a range the joint could not move in, are dropped with a
  :class:`URDFWarning`), velocity, effort (infinite when missing).  A revolute or prismatic joint without
  ``<limit>`` is accepted as unlimited (urdfdom rejects it);
* ``<mimic joint multiplier offset>`` couples the joint to the one it names by a gear,
  q = multiplier q_mimicked + offset (:meth:`ModelBuilder.add_gear`): with ``mimic=True``
  (the default) the model runs in reduced coordinates, as Pinocchio's ``mimic=True`` models;
  with ``mimic=False`` the mimic joint stays an independent degree of freedom (Pinocchio's
  default).  Either way the tags are kept in ``model.mimic`` as
  ``{"joint", "mimicked", "multiplier", "offset"}`` (in model order).  A tag that names an
  unknown joint (Pinocchio loads such files too), or that involves a joint other than
  revolute, continuous or prismatic, is dropped with a :class:`URDFWarning`;
* ``<dynamics damping friction>`` of revolute, continuous and prismatic joints with
  ``joint_friction=True`` (viscous and Coulomb friction, applied by RNEA and ABA); ignored
  otherwise, as Pinocchio's algorithms do;
* ``<visual>`` and ``<collision>`` play no part in the dynamics (unless ``collision=True``:
  then the ``<collision>`` elements become collision geometry, :func:`load_urdf`); their
  geometry (mesh file name and scale, box, cylinder, sphere; origin; material colour) is kept for drawing in
  ``model.visuals``, a tuple of :class:`Visual` on the link's frame (an element that cannot be
  read is skipped: drawing never stops a file from loading); a mesh file is allowed (``Visual.path``)
  only inside the model's folder, ``asset_dirs`` or ``package_dirs`` (:func:`load_urdf`);
* ``<safety_controller>``, ``<calibration>``, ``<transmission>``, ``<gazebo>`` and unknown
  elements are ignored.

Planar joints: the URDF specification says a planar joint moves in the plane normal to its
axis.  linkdyn follows it: for an axis n other than +z, the joint frame is turned by Rn, the
smallest rotation that takes z to n (a half turn about x when n = -z), the planar joint moves
in the xy-plane of that turned frame (q = [x, y, theta] along Rn ex, Rn ey, theta about n),
and the link is attached to it by a fixed joint at Rn^T, so that at q = 0 the link frame is
the joint's origin as in the file.  This adds a body named ``"<link>::planar"`` that carries
the joint and whose frame is the turned one; the link itself is a frame on it.  Pinocchio
ignores the axis of a planar joint and always moves in the xy-plane of the joint origin: the
two agree only when the axis is +z.  Note that the URDF default axis (1, 0, 0) applies to a
planar joint without ``<axis>`` (motion in the yz-plane).
"""
from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ... import spatial
from .. import joints as J
from ..builder import Inertia, ModelBuilder, triangle_violation
from ..geometry import MAX_LENGTH
from ._files import asset_roots, confine, read_model_file, resolve_reference
from .safexml import parse_xml

if TYPE_CHECKING:
    from collections.abc import Iterable

    from numpy.typing import ArrayLike

    from ..model import Model


class URDFError(ValueError):
    """A URDF file that cannot be read, or that does not describe a valid kinematic tree."""


class URDFWarning(UserWarning):
    """Something in a URDF file was ignored (e.g. a ``<mimic>`` tag naming an unknown joint)."""


class Visual:
    """Drawing geometry on a frame of a model (URDF ``<visual>`` / ``<collision>``, MJCF
    ``<geom>``); the dynamics never read it.

    ``frame``: the name of the model frame it is attached to (a URDF link, an MJCF body);
    ``kind``: "mesh", "box", "cylinder", "sphere", "capsule", "ellipsoid" or "plane";
    ``size``: box (x, y, z) full lengths, cylinder and capsule (radius, length of the axis
    part, along z), sphere (radius,), ellipsoid (a, b, c) semi-axes, plane (x, y) full lengths;
    ``filename``: a mesh file as written in the model file (may be ``package://...``),
    ``base_dir``: the folder of the model file (to resolve relative names), ``scale`` (3,);
    ``path``: the mesh file the loader resolved and allowed (symbolic links resolved, inside the
    model's folder or the folders given as ``asset_dirs`` / ``package_dirs``:
    ``linkdyn.model.io._files.confine``), or None when it is missing or refused: the viewer
    reads and embeds this file only, never ``filename``;
    ``R``, ``p``: the pose of the geometry in the frame; ``rgba``: a colour or None;
    ``role``: "visual" or "collision"; ``name``: the element's name or ""."""
    __slots__ = ("frame", "kind", "size", "filename", "base_dir", "scale", "R", "p", "rgba", "role", "name", "path")

    def __init__(self, frame: str, kind: str, size: ArrayLike = (), filename: str | None = None,
                 base_dir: str | os.PathLike[str] | None = None, scale: ArrayLike = (1.0, 1.0, 1.0),
                 R: ArrayLike | None = None, p: ArrayLike | None = None, rgba: ArrayLike | None = None,
                 role: str = "visual", name: str = "", path: str | os.PathLike[str] | None = None) -> None:
        self.frame, self.kind, self.size = str(frame), str(kind), tuple(float(x) for x in size)
        self.filename, self.base_dir = filename, base_dir
        self.path = None if path is None else Path(path)
        self.scale = np.array(scale, dtype=float).reshape(3)
        self.R = np.eye(3) if R is None else np.array(R, dtype=float).reshape(3, 3)
        self.p = np.zeros(3) if p is None else np.array(p, dtype=float).reshape(3)
        self.rgba = None if rgba is None else tuple(float(x) for x in rgba)
        self.role, self.name = role, name

    def __repr__(self):
        what = self.filename if self.kind == "mesh" else self.size
        return f"Visual({self.role} {self.kind} {what!r} on {self.frame!r})"


_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
_FLOAT = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_INF = re.compile(r"[+-]?inf(?:inity)?", re.IGNORECASE)
_ONE_DOF = ("revolute", "continuous", "prismatic")


def load_urdf(path: str | os.PathLike[str], floating_base: bool = False, gravity: ArrayLike = (0.0, 0.0, -9.81),
              joint_friction: bool = False, mimic: bool = True, asset_dirs: Iterable[str | os.PathLike[str]] | None = None,
              package_dirs: Iterable[str | os.PathLike[str]] | None = None, collision: bool = False) -> Model:
    """Read the URDF file ``path`` into a :class:`~linkdyn.Model`.

    ``floating_base`` puts a free-flyer joint named ``"root_joint"`` between the world and the
    root link (otherwise the root link is welded to the world).  ``gravity`` is the world
    gravity vector.  ``joint_friction`` reads ``<dynamics damping friction>`` into
    ``model.damping`` and ``model.friction``, which RNEA and ABA then apply (viscous and
    Coulomb joint friction); off by default, so that the rigid-body results are the same as
    Pinocchio's, which stores these values but leaves them out of its algorithms.  ``mimic``
    couples every ``<mimic>`` joint to its leader (reduced coordinates, see
    :mod:`linkdyn.model.gears`); ``mimic=False`` keeps them independent.  Raises
    ``FileNotFoundError`` for a missing file and :class:`URDFError` for a malformed one, for
    anything that is not a regular file (a device, a FIFO) or a file above 64 MB.

    Mesh files (drawing only): a relative name is looked up in the folder of ``path``,
    ``file://`` names as absolute paths, ``package://pkg/rest`` in each of ``package_dirs``
    (folders that hold packages, as Pinocchio's ``package_dirs``; a folder named ``pkg`` itself
    works too) and of ``$ROS_PACKAGE_PATH``, then ``pkg/rest`` in the model's folder or a folder
    above it named ``pkg``.  The file found, symbolic links resolved, must lie inside the
    model's folder, ``asset_dirs`` or ``package_dirs`` (or ``$ROS_PACKAGE_PATH``): anything else
    is refused (never read, never drawn, never put in a page) with a :class:`URDFWarning`; a
    missing mesh is left to the viewer, which says so.

    ``collision=True`` makes every link's ``<collision>`` elements collision geometry
    (:meth:`ModelBuilder.add_geom`, with the builder's default filter: no pair within a link or
    between a parent and its child): box, cylinder, sphere (and capsule, an extension some files
    use), and a mesh as the convex hull of its file's vertices times its ``scale`` (the mesh
    file read as above; reading needs the ``[meshes]`` extra: an unreadable mesh is skipped with
    one :class:`URDFWarning`).  Off by default: a URDF's collision meshes of neighbouring links
    often overlap, and such a model would then simulate with them.
    """
    path = Path(path)
    data = read_model_file(path, URDFError, what="URDF file")
    return _build(data, str(path), floating_base, gravity, default_name=path.stem, joint_friction=joint_friction,
                  base_dir=str(path.resolve().parent), mimic=mimic, asset_dirs=asset_dirs, package_dirs=package_dirs,
                  collision=collision)


def parse_urdf(text: str | bytes, floating_base: bool = False, gravity: ArrayLike = (0.0, 0.0, -9.81),
               source: str = "<string>", joint_friction: bool = False, mimic: bool = True,
               asset_dirs: Iterable[str | os.PathLike[str]] | None = None,
               package_dirs: Iterable[str | os.PathLike[str]] | None = None, collision: bool = False) -> Model:
    """Build a :class:`~linkdyn.Model` from URDF ``text`` (an XML ``str`` or ``bytes``).

    ``source`` names the text in error messages.  The text has no folder: its mesh files are
    read only from ``asset_dirs`` and ``package_dirs`` (and ``$ROS_PACKAGE_PATH``).  See
    :func:`load_urdf`.
    """
    if not isinstance(text, (str, bytes, bytearray)):
        raise TypeError(f"parse_urdf: expected the URDF XML as str or bytes, got {type(text).__name__} "
                        "(use load_urdf for a path)")
    return _build(text, source, floating_base, gravity, default_name="robot", joint_friction=joint_friction,
                  mimic=mimic, asset_dirs=asset_dirs, package_dirs=package_dirs, collision=collision)


# --------------------------------------------------------------------------------------------
# XML
def _parse_xml(text, source):
    return parse_xml(text, source, URDFError, "URDF")


class _Ctx:
    """Error helpers bound to the source name."""

    def __init__(self, source):
        self.source = source

    def error(self, where, msg):
        return URDFError(f"{self.source}: {where}: {msg}" if where else f"{self.source}: {msg}")

    def numbers(self, where, el, attr, n, default=None, allow_inf=False):
        """n floats from attribute ``attr`` of element ``el`` (``default`` when absent)."""
        raw = el.get(attr)
        if raw is None:
            if default is None:
                raise self.error(where, f"<{el.tag}> needs a '{attr}' attribute")
            return np.array(default, dtype=float)
        parts = raw.split()
        if len(parts) != n:
            raise self.error(where, f"<{el.tag} {attr}='{raw}'> needs {n} number{'s' if n > 1 else ''}, "
                                    f"got {len(parts)}")
        out = np.empty(n)
        for k, s in enumerate(parts):
            if _FLOAT.fullmatch(s):
                out[k] = float(s)
            elif allow_inf and _INF.fullmatch(s):
                out[k] = float(s)
            else:
                raise self.error(where, f"<{el.tag} {attr}='{raw}'>: {s!r} is not a "
                                        f"{'number' if allow_inf else 'finite number'}")
            if not allow_inf and not np.isfinite(out[k]):
                raise self.error(where, f"<{el.tag} {attr}='{raw}'>: {s!r} overflows")
        return out

    def number(self, where, el, attr, default=None, allow_inf=False):
        return float(self.numbers(where, el, attr, 1, None if default is None else [default], allow_inf)[0])

    def origin(self, where, parent_el):
        """(R, p) of the ``<origin>`` child of ``parent_el`` (identity when absent)."""
        el = parent_el.find("origin")
        if el is None:
            return np.eye(3), np.zeros(3)
        p = self.numbers(where, el, "xyz", 3, default=[0.0, 0.0, 0.0])
        rpy = self.numbers(where, el, "rpy", 3, default=[0.0, 0.0, 0.0])
        return rpy_matrix(*rpy), p


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """R = Rz(yaw) Ry(pitch) Rx(roll) (URDF's fixed-axis roll, pitch, yaw)."""
    cr, sr = np.cos(roll), np.sin(roll)
    cp, sp = np.cos(pitch), np.sin(pitch)
    cy, sy = np.cos(yaw), np.sin(yaw)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _z_to(n):
    """The smallest rotation taking +z to the unit vector n (a half turn about x for n = -z)."""
    z = np.array([0.0, 0.0, 1.0])
    c = float(z @ n)
    if c > 1.0 - 1e-15:
        return np.eye(3)
    if c < -1.0 + 1e-15:
        return np.diag([1.0, -1.0, -1.0])
    k = np.cross(z, n)
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + K + K @ K / (1.0 + c)


# --------------------------------------------------------------------------------------------
# URDF -> builder
def _link_inertia(ctx, where, link_el):
    el = link_el.find("inertial")
    if el is None:
        return None
    R, c = ctx.origin(where, el)
    mass_el = el.find("mass")
    if mass_el is None:
        raise ctx.error(where, "<inertial> has no <mass>")
    m = ctx.number(where, mass_el, "value")
    if m < 0:
        raise ctx.error(where, f"<mass value='{mass_el.get('value')}'> is negative")
    in_el = el.find("inertia")
    if in_el is None:
        raise ctx.error(where, "<inertial> has no <inertia>")
    ixx, ixy, ixz, iyy, iyz, izz = (ctx.number(where, in_el, a) for a in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
    I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    I = R @ I @ R.T
    I = 0.5 * (I + I.T)
    lam = np.linalg.eigvalsh(I).min()
    if lam < -1e-12 * max(1.0, np.abs(I).max()):
        # real files have these (romeo, tiago); Pinocchio takes them as they are, and so do we
        warnings.warn(f"{ctx.source}: {where}: the rotational inertia is not positive semi-definite "
                      f"(smallest eigenvalue {lam:.3g}); kept as given", URDFWarning, stacklevel=4)
        return spatial.spatial_inertia(m, c, I)
    lam = np.linalg.eigvalsh(I)
    if triangle_violation(lam) > 0.0:
        # no rigid body has such moments, but real files do (example-robot-data's romeo arms break
        # it by 80 %); Pinocchio takes them as they are, so we keep them and say so
        warnings.warn(f"{ctx.source}: {where}: the principal moments of inertia {np.round(lam, 9).tolist()} break "
                      "the triangle inequality A + B >= C of a rigid body; kept as given", URDFWarning, stacklevel=4)
        return spatial.spatial_inertia(m, c, I)
    return Inertia(m, tuple(c), I)


class _JointSpec:
    __slots__ = ("name", "type", "parent", "child", "el")

    def __init__(self, name, type_, parent, child, el):
        self.name, self.type, self.parent, self.child, self.el = name, type_, parent, child, el


def _unique(base, used):
    name, k = base, 1
    while name in used:
        name, k = f"{base}_{k}", k + 1
    used.add(name)
    return name


def _visuals(root, link_els, base_dir):
    """The ``<visual>`` and ``<collision>`` geometry of every link, as :class:`Visual` objects on
    the link's frame; elements that cannot be read are skipped (they are drawing only)."""
    materials = {}
    for m in root.findall("material"):
        c = m.find("color")
        if m.get("name") and c is not None:
            rgba = _floats(c.get("rgba"), 4)
            if rgba is not None:
                materials[m.get("name")] = rgba
    out = []
    for link, el in link_els.items():
        for role in ("visual", "collision"):
            for v in el.findall(role):
                try:
                    vis = _visual(v, link, role, base_dir, materials)
                except (TypeError, ValueError):
                    vis = None
                if vis is not None:
                    out.append(vis)
    return tuple(out)


def _floats(raw, n):
    if raw is None:
        return None
    try:
        x = np.array([float(s) for s in raw.split()], dtype=float)
    except ValueError:
        return None
    return x if len(x) == n and np.isfinite(x).all() else None


def _visual(v, link, role, base_dir, materials):
    geo = v.find("geometry")
    if geo is None or len(geo) == 0:
        return None
    g = geo[0]
    o = v.find("origin")
    xyz = _floats(o.get("xyz"), 3) if o is not None else None
    rpy = _floats(o.get("rpy"), 3) if o is not None else None
    R = rpy_matrix(*rpy) if rpy is not None else np.eye(3)
    p = xyz if xyz is not None else np.zeros(3)
    rgba = None
    mat = v.find("material")
    if mat is not None:
        c = mat.find("color")
        rgba = _floats(c.get("rgba"), 4) if c is not None else None
        if rgba is None:
            rgba = materials.get(mat.get("name"))
    kw = dict(R=R, p=p, rgba=rgba, role=role, name=v.get("name") or "")
    if g.tag == "mesh" and g.get("filename"):
        scale = _floats(g.get("scale"), 3)
        if scale is None:
            s1 = _floats(g.get("scale"), 1)
            scale = np.repeat(s1, 3) if s1 is not None else np.ones(3)
        return Visual(link, "mesh", (), g.get("filename"), base_dir, scale, **kw)
    if g.tag == "box":
        size = _floats(g.get("size"), 3)
        return None if size is None else Visual(link, "box", size, **kw)
    if g.tag in ("cylinder", "capsule"):
        r, h = _floats(g.get("radius"), 1), _floats(g.get("length"), 1)
        return None if r is None or h is None else Visual(link, g.tag, (r[0], h[0]), **kw)
    if g.tag == "sphere":
        r = _floats(g.get("radius"), 1)
        return None if r is None else Visual(link, "sphere", r, **kw)
    return None


def _build(text, source, floating_base, gravity, default_name, joint_friction=False, base_dir=None, mimic=True,
           asset_dirs=None, package_dirs=None, collision=False):
    ctx = _Ctx(source)
    root = _parse_xml(text, source)
    if root.tag != "robot":
        raise ctx.error("", f"the root element is <{root.tag}>, expected <robot>")
    robot_name = root.get("name") or default_name

    # links
    links, link_els = [], {}
    for k, el in enumerate(root.findall("link")):
        name = el.get("name")
        if not name:
            raise ctx.error(f"<link> number {k + 1}", "has no 'name' attribute")
        if name in link_els:
            raise ctx.error(f"link {name!r}", "the name is used by two <link> elements")
        links.append(name)
        link_els[name] = el
    if not links:
        raise ctx.error("<robot>", "has no <link>")

    # joints
    joints, joint_of_child, children = {}, {}, {n: [] for n in links}
    loop_joints, loop_names = [], set()      # second parent joints: loop closures
    for k, el in enumerate(root.findall("joint")):
        name = el.get("name")
        if not name:
            raise ctx.error(f"<joint> number {k + 1}", "has no 'name' attribute")
        where = f"joint {name!r}"
        if name in joints:
            raise ctx.error(where, "the name is used by two <joint> elements")
        type_ = el.get("type")
        if type_ is None:
            raise ctx.error(where, "has no 'type' attribute")
        if type_ not in _JOINT_TYPES:
            raise ctx.error(where, f"unknown joint type {type_!r}; expected one of {', '.join(_JOINT_TYPES)}")
        ends = []
        for tag in ("parent", "child"):
            e = el.find(tag)
            if e is None or not e.get("link"):
                raise ctx.error(where, f"needs a <{tag} link='...'> element")
            if e.get("link") not in link_els:
                raise ctx.error(where, f"<{tag} link={e.get('link')!r}> refers to an unknown link")
            ends.append(e.get("link"))
        parent, child = ends
        if parent == child:
            raise ctx.error(where, f"kinematic loop: link {child!r} is its own parent")
        if child in joint_of_child:
            # a second parent joint closes a kinematic loop (Nakamura and Yamane 2000 sec. 3.2): its child link is
            # the real link of a virtual link that hangs from the parent through this joint
            if type_ == "floating":
                raise ctx.error(where, f"link {child!r} already has the parent joint {joint_of_child[child]!r}; "
                                       "a floating joint cannot close a loop (it constrains nothing)")
            if type_ == "planar":
                raise ctx.error(where, f"link {child!r} already has the parent joint {joint_of_child[child]!r}; "
                                       "a planar joint cannot close a loop here (revolute, continuous, prismatic "
                                       "or fixed can)")
            loop_joints.append(_JointSpec(name, type_, parent, child, el))
            loop_names.add(name)
            continue
        joint_of_child[child] = name
        joints[name] = _JointSpec(name, type_, parent, child, el)
        children[parent].append(name)

    # the tree
    roots = [n for n in links if n not in joint_of_child]
    if not roots:
        raise ctx.error("<robot>", "kinematic loop: every link is the child of a joint, so there is no root link")
    if len(roots) > 1:
        shown = ", ".join(repr(r) for r in roots[:10]) + (", ..." if len(roots) > 10 else "")
        raise ctx.error("<robot>", f"several root links (links that are no joint's child): {shown}; "
                                   "a URDF must connect every link into a single tree")
    root_link = roots[0]
    # joints in depth-first order from the root, the children of a link by joint name
    order, seen = [], {root_link}
    stack = sorted(children[root_link], reverse=True)
    while stack:
        jn = stack.pop()
        order.append(jn)
        child = joints[jn].child
        seen.add(child)
        stack.extend(sorted(children[child], reverse=True))
    if len(seen) != len(links):
        lost = [n for n in links if n not in seen]
        # every lost link has a parent but does not reach the root: follow parents to a cycle
        cyc, n = [], lost[0]
        while n not in cyc:
            cyc.append(n)
            n = joints[joint_of_child[n]].parent
        loop = cyc[cyc.index(n):] + [n]
        raise ctx.error("<robot>", "kinematic loop through links " + " -> ".join(repr(x) for x in reversed(loop))
                        + " that the root does not reach; close a loop with a second parent joint instead")

    # world name: "world" unless a link has it
    world = next(w for w in ("world", "universe", "__world__", "__linkdyn_world__") if w not in link_els)
    try:
        b = ModelBuilder(robot_name, gravity=gravity, world_name=world)
    except ValueError as exc:
        raise URDFError(f"{source}: {exc}") from None
    used_joint_names = set(joints)
    used_body_names = set(links) | {world}

    def add(name, parent, joint, **kw):
        try:
            b.add_body(name, parent, joint, **kw)
        except ValueError as exc:
            raise ctx.error(f"link {name!r}", str(exc)) from None

    root_inertia = _link_inertia(ctx, f"link {root_link!r}", link_els[root_link])
    if floating_base:
        if "root_joint" in joints:
            raise ctx.error("joint 'root_joint'", "floating_base=True adds a free-flyer joint named 'root_joint', "
                                                  "but the URDF already has a joint of that name")
        used_joint_names.add("root_joint")
        add(root_link, world, J.FreeFlyer(), joint_name="root_joint", inertia=root_inertia)
    else:
        add(root_link, world, J.Fixed(), joint_name=_unique("root_joint", used_joint_names), inertia=root_inertia)

    mimic_tags = []
    for jn in order:
        js = joints[jn]
        el, where = js.el, f"joint {jn!r}"
        R, p = ctx.origin(where, el)
        inertia = _link_inertia(ctx, f"link {js.child!r}", link_els[js.child])
        kw = {}
        axis = None
        if js.type in ("revolute", "continuous", "prismatic", "planar"):
            ax_el = el.find("axis")
            a = np.array([1.0, 0.0, 0.0]) if ax_el is None else ctx.numbers(where, ax_el, "xyz", 3, default=[1, 0, 0])
            nrm = float(np.linalg.norm(a))
            if nrm < 1e-12:
                raise ctx.error(where, f"<axis xyz='{ax_el.get('xyz')}'> is zero")
            axis = a / nrm
        lim = el.find("limit")
        if js.type in ("revolute", "continuous", "prismatic") and lim is not None:
            for attr, key in (("velocity", "velocity_limit"), ("effort", "effort_limit")):
                if lim.get(attr) is not None:
                    x = ctx.number(where, lim, attr, allow_inf=True)
                    if x < 0:
                        raise ctx.error(where, f"<limit {attr}='{lim.get(attr)}'> is negative")
                    kw[key] = [x]
            if js.type != "continuous":
                lo = ctx.number(where, lim, "lower", default=0.0, allow_inf=True)
                hi = ctx.number(where, lim, "upper", default=0.0, allow_inf=True)
                if lo > hi:
                    raise ctx.error(where, f"<limit lower='{lim.get('lower')}' upper='{lim.get('upper')}'>: "
                                           "lower is above upper")
                if max(abs(lo), abs(hi)) > MAX_LENGTH:     # e.g. 1e16: a file's way of writing "no limit"
                    warnings.warn(f"{source}: {where}: <limit lower='{lim.get('lower')}' upper='{lim.get('upper')}'>: "
                                  f"a side beyond {MAX_LENGTH:g} (m or rad) is read as no limit on that side",
                                  URDFWarning, stacklevel=3)
                    lo = -np.inf if abs(lo) > MAX_LENGTH else lo
                    hi = np.inf if abs(hi) > MAX_LENGTH else hi
                if lo == hi:        # a <limit effort velocity/> (urdfdom's 0, 0) or a locked joint
                    warnings.warn(f"{source}: {where}: <limit lower='{lim.get('lower')}' upper='{lim.get('upper')}'>: "
                                  "lower equals upper, a limit the joint could not move within; loaded without a "
                                  "position limit (a fixed joint locks a joint)", URDFWarning, stacklevel=3)
                elif np.isfinite(lo) or np.isfinite(hi):
                    kw["lower"], kw["upper"] = [lo], [hi]
        dyn = el.find("dynamics")
        if joint_friction and dyn is not None and js.type in ("revolute", "continuous", "prismatic"):
            for attr, key in (("damping", "damping"), ("friction", "friction")):
                x = ctx.number(where, dyn, attr, default=0.0)
                if x < 0:
                    raise ctx.error(where, f"<dynamics {attr}='{dyn.get(attr)}'> is negative")
                kw[key] = [x]
        mim = el.find("mimic")
        if mim is not None:
            target = mim.get("joint")
            if not target:
                raise ctx.error(where, "<mimic> needs a 'joint' attribute")
            if target not in joints:
                warnings.warn(f"{source}: {where}: <mimic joint={target!r}> refers to an unknown joint; "
                              "the mimic tag is ignored", URDFWarning, stacklevel=3)
            elif js.type not in _ONE_DOF or joints[target].type not in _ONE_DOF:
                warnings.warn(f"{source}: {where}: <mimic joint={target!r}> couples a {js.type} joint to a "
                              f"{joints[target].type} joint; only revolute, continuous and prismatic joints "
                              "can mimic each other; the mimic tag is ignored", URDFWarning, stacklevel=3)
            else:
                mimic_tags.append({"joint": jn, "mimicked": target,
                              "multiplier": ctx.number(where, mim, "multiplier", default=1.0),
                              "offset": ctx.number(where, mim, "offset", default=0.0)})

        if js.type in ("revolute", "continuous"):
            add(js.child, js.parent, J.Revolute(axis), placement=(R, p), inertia=inertia, joint_name=jn, **kw)
        elif js.type == "prismatic":
            add(js.child, js.parent, J.Prismatic(axis), placement=(R, p), inertia=inertia, joint_name=jn, **kw)
        elif js.type == "fixed":
            add(js.child, js.parent, J.Fixed(), placement=(R, p), inertia=inertia, joint_name=jn)
        elif js.type == "floating":
            add(js.child, js.parent, J.FreeFlyer(), placement=(R, p), inertia=inertia, joint_name=jn)
        else:  # planar, the plane normal to the axis
            Rn = _z_to(axis)
            if np.array_equal(Rn, np.eye(3)):
                add(js.child, js.parent, J.Planar(), placement=(R, p), inertia=inertia, joint_name=jn)
            else:
                carrier = _unique(f"{js.child}::planar", used_body_names)
                add(carrier, js.parent, J.Planar(), placement=(R @ Rn, p), joint_name=jn)
                add(js.child, carrier, J.Fixed(), placement=(Rn.T, np.zeros(3)), inertia=inertia,
                    joint_name=_unique(f"{jn}::planar_link", used_joint_names))
    for js in loop_joints:
        el, where = js.el, f"joint {js.name!r}"
        R, p = ctx.origin(where, el)
        if js.type == "fixed":
            joint = J.Fixed()
        else:
            ax_el = el.find("axis")
            a = np.array([1.0, 0.0, 0.0]) if ax_el is None else ctx.numbers(where, ax_el, "xyz", 3, default=[1, 0, 0])
            if float(np.linalg.norm(a)) < 1e-12:
                raise ctx.error(where, f"<axis xyz='{ax_el.get('xyz')}'> is zero")
            joint = J.Prismatic(a) if js.type == "prismatic" else J.Revolute(a)
        b.add_loop(_unique(f"{js.name}::virtual", used_body_names), js.parent, js.child, joint, placement=(R, p),
                   joint_name=js.name)
    b.mimic.extend(mimic_tags)
    if mimic:
        for m in mimic_tags:
            try:
                b.add_gear(m["joint"], m["mimicked"], m["multiplier"], m["offset"])
            except (ValueError, TypeError) as exc:     # multiplier="0", a follower twice: the file's fault
                raise URDFError(f"{source}: <mimic> of joint {m['joint']!r}: {exc}") from None
    try:
        model = b.build()
    except ValueError as exc:       # pragma: no cover - the checks above should make this unreachable
        raise URDFError(f"{source}: {exc}") from None
    model.visuals = _visuals(root, link_els, base_dir)
    _allow_meshes(model.visuals, source, base_dir, asset_dirs, package_dirs)
    if collision and any(v.role == "collision" for v in model.visuals):
        visuals = model.visuals
        _collision_geoms(b, visuals, source)
        try:
            model = b.build()
        except ValueError as exc:
            raise URDFError(f"{source}: {exc}") from None
        model.visuals = visuals
    return model


def _collision_geoms(b, visuals, source):
    """Every ``<collision>`` element as a geom of builder ``b`` (load_urdf's ``collision``)."""
    from ._mesh_inertia import load_mesh
    skipped = []
    for v in visuals:
        if v.role != "collision":
            continue
        placement = (v.R, v.p)
        if v.kind == "mesh":
            if v.path is None:
                skipped.append(f"{v.filename!r} on {v.frame!r} (missing or refused)")
                continue
            try:
                V, _ = load_mesh(v.path)
            except ImportError:
                skipped.append(f"{v.filename!r} on {v.frame!r} (reading mesh files needs trimesh: "
                               "pip install 'linkdyn[meshes]')")
                continue
            except (OSError, ValueError) as exc:
                skipped.append(f"{v.filename!r} on {v.frame!r} ({exc})")
                continue
            try:
                b.add_geom(v.frame, "mesh", (), placement=placement, vertices=V * v.scale)
            except ValueError as exc:
                skipped.append(f"{v.filename!r} on {v.frame!r} ({exc})")
            continue
        size = {"box": lambda s: (s[0] / 2, s[1] / 2, s[2] / 2), "sphere": lambda s: (s[0],),
                "cylinder": lambda s: (s[0], s[1] / 2), "capsule": lambda s: (s[0], s[1] / 2)}.get(v.kind)
        if size is None:
            continue
        try:
            b.add_geom(v.frame, v.kind, size(v.size), placement=placement)
        except (TypeError, ValueError) as exc:
            skipped.append(f"a {v.kind} on {v.frame!r} ({exc})")
    if skipped:
        warnings.warn(f"{source}: {len(skipped)} <collision> element{'s' if len(skipped) > 1 else ''} "
                      "not made collision geometry: " + "; ".join(skipped[:3]) + ("; ..." if len(skipped) > 3 else ""),
                      URDFWarning, stacklevel=4)


def _package_path():
    return [d for d in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if d]


def _allow_meshes(visuals, source, base_dir, asset_dirs, package_dirs):
    """Set each mesh visual's ``path`` to the file its name stands for when that file, symbolic
    links resolved, lies inside the model's folder, ``asset_dirs``, ``package_dirs`` or
    ``$ROS_PACKAGE_PATH`` (``_files.confine``); one URDFWarning lists the refused ones."""
    packages = [*(package_dirs or ()), *_package_path()]
    roots = asset_roots(base_dir, asset_dirs, packages)
    refused, done = [], {}
    for v in visuals:
        if v.kind != "mesh" or not v.filename:
            continue
        if v.filename not in done:
            target, allowed = resolve_reference(v.filename, base_dir, packages), None
            if target is not None:
                try:
                    allowed = confine(target, roots, URDFError, "mesh file", repr(v.filename))
                except URDFError as exc:
                    refused.append(str(exc))
                except OSError:
                    pass                                      # missing: the viewer says so
            done[v.filename] = allowed
        v.path = done[v.filename]
    if refused:
        warnings.warn(f"{source}: {len(refused)} mesh file{'s' if len(refused) > 1 else ''} refused, not read "
                      "or drawn: " + "; ".join(refused[:3]) + ("; ..." if len(refused) > 3 else ""),
                      URDFWarning, stacklevel=3)
