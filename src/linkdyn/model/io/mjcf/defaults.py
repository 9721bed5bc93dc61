"""Attribute access with default classes: the compiler settings (``<compiler>``), the parse
context (file names for messages), typed reading of one element's attributes with its default
class, and the ``<default>`` class table."""
from __future__ import annotations

import math

import numpy as np

from .common import _FLOAT, _ORIENT, MJCFError, _axis_angle, _quat_wxyz_matrix, _warn, _z_to


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

    def mesh_vertices(self, el, where, name):
        """The vertices (n, 3) of ``<asset><mesh name=...>`` in the mesh geom's frame (after the
        mesh's refpos, refquat and scale), or None (with a warning) when it cannot be read here."""
        return self.meshes.vertices(el, where, name)


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

    def geom_frame(self, gtype):
        """(R, p, size (3,)) of a ``<geom>`` of type ``gtype`` in the frame it is written in:
        ``pos`` and the orientation, or ``fromto`` for a capsule, cylinder, box or ellipsoid
        (MuJoCo's sizes: the half-length from the two points, the radius ``size[0]``, a box's
        and an ellipsoid's two other half-sizes ``size[0]`` too).  The one place that reads a
        geom's frame: inertia, drawing and collision geometry use it."""
        size = self.floats("size", 3, [0.0, 0.0, 0.0], min_n=1)
        ft = self.fromto_pose() if gtype in ("capsule", "cylinder", "box", "ellipsoid") else None
        if ft is None:
            return (*self.pose(), size)
        R, p, half = ft
        size = np.array([size[0], half, 0.0]) if gtype in ("capsule", "cylinder") else \
            np.array([size[0], size[0], half])
        return R, p, size


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

