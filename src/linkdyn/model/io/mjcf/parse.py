"""The parsed tree: ``<compiler>``, ``<option>`` and ``<default>`` (the header), then the body
tree with its joints, sites, inertials and geoms, and the compiler's mass post-processing."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .common import (_BODY_IGNORED, _BODY_REFUSED, _GEOM_TYPES, _I3, _JOINT_TYPES, _ORIENT, _TOP_IGNORED, _WORLD,
                     _Z3, _pose, _unique)
from .defaults import _Attr, _Defaults
from .inertia import _combine, _geom_inertia


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
    stiffness: float = 0.0            # the joint's spring (MuJoCo's jnt_stiffness)
    springref: float = 0.0            # a hinge's or slide's spring reference (qpos_spring), radians for a hinge
    springdamper: tuple | None = None  # (time constant, damping ratio), both > 0: k and b from M(qpos0)


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



class _Parser:
    def __init__(self, ctx, root):
        self.ctx, self.root = ctx, root
        self.defaults = _Defaults(ctx)
        self.bodies = []            # _Body in MuJoCo's order
        self.world_sites = []       # (name, R, p)
        self.joint_names = set()
        self.joint_info = {}        # name -> _Joint
        self.site_info = {}         # name -> (body name, R, p)
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
        stiff = a.nonneg("stiffness") if el.tag == "joint" else 0.0
        springref = ang(a.number("springref", 0.0)) if el.tag == "joint" and jtype in ("hinge", "slide") else 0.0
        springdamper = None
        if el.tag == "joint" and a.has("springdamper"):
            sd = a.floats("springdamper", 2)
            if sd[0] > 0.0 and sd[1] > 0.0:         # MuJoCo: only when both are positive
                springdamper = (float(sd[0]), float(sd[1]))
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
        j = _Joint(name, jtype, pos, axis, ref, lo, hi, arm, damp, fl, effort, ball_max, stiff, springref, springdamper)
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
