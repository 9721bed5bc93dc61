"""A figure for a capture: a :class:`~linkdyn.Model` built from a BVH skeleton's offsets.

* **Joints.** The root is a :class:`~linkdyn.FreeFlyer` (``"root_joint"``, Pinocchio's layout:
  ``q[:3]`` the root's origin in the world, ``q[3:7]`` its quaternion ``[x, y, z, w]``, ``v[:6]``
  its body-frame twist [linear; angular]); every other BVH joint is a quaternion
  :class:`~linkdyn.Spherical` joint of the same name on a body of the same name.  Body frames
  are the BVH joint frames (lengths in metres); the world is Z-up: the file's Y-up axes are
  turned by the proper rotation :data:`Y_UP_TO_Z_UP` (file z -> world x, file x -> world y,
  file y -> world z), which only the root's orientation carries.
* **Mass properties** come from de Leva (1996), "Adjustments to Zatsiorsky-Seluyanov's segment
  inertia parameters", J. Biomech. 29(9):1223-1230, Table 4, through
  :func:`linkdyn.models.human.de_leva` (the 40-DoF figure's table; not copied here).  Each
  BVH joint is matched to a de Leva segment by its name (:func:`classify`): its mass is the
  table's fraction of ``mass`` (a segment that the skeleton splits, e.g. several spine joints,
  is shared by weight), its centre of mass lies on its bone (the mean of its children's
  offsets) at the table's CM fraction of the bone length L, and its inertia about the CM is
  ``m (r_t L)^2`` across the bone and ``m (r_l L)^2`` along it, with ``r_t`` the mean of the
  table's sagittal and transverse radii (a BVH joint frame says nothing of the segment's front,
  so the two transverse radii are averaged) and ``r_l`` the longitudinal one.  The masses are
  finally scaled so that they sum to ``mass`` exactly (segments the skeleton lacks, e.g. no
  clavicles, are thereby shared by the others).  The trunk joints (spine, chest) share de Leva's
  middle and upper trunk less two clavicles (:data:`linkdyn.models.human.CLAVICLE_SHARE` of the
  upper trunk each, as in the 40-DoF figure) and take the upper trunk's CM fraction and radii;
  the toes take 0.1 of a foot's weight, finger joints 0.05 of a hand's, the neck 0.25 of the
  head's, a name no rule knows (:func:`classify`) 0.05 of the trunk's.  ``height`` sets the foot's breadth
  (:data:`linkdyn.models.human.FOOT_HALF_WIDTH`, after Drillis and Contini 1966).
* **Feet.** Each foot (a joint named foot/ankle with a side, L or R) gets four contact points on
  the sole (``model.contacts``; :meth:`~linkdyn.ModelBuilder.add_contact`), at the heel (below
  the ankle) and at the toe tip (the foot chain's farthest end), a foot's breadth apart, on
  the lowest level the foot chain reaches in a reference pose: the file's rest pose when it
  stands (at least 0.8 of the figure's height along Y, as CMU's T-pose), else the frame of the
  capture in which that ankle is lowest (the foot on the ground; LAFAN1's rest pose lies along
  x); the toe points ride on the toe's body when the skeleton has one.  The model has the ground plane z = 0.
* **End sites** are frames ``{joint}_end`` (``_end1``, ... for a second one) on their joint's body.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .. import model as _m
from ..models import human as _h
from .bvh import MocapError, Skeleton

#: file axes (Y up) -> linkdyn's world (Z up): a proper rotation (a cyclic permutation)
Y_UP_TO_Z_UP = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])

# (pattern on the lower-cased name, de Leva segment or "trunk"/"clavicle", weight in its group)
_RULES = [
    (r"toe", "foot", 0.1),
    (r"foot|ankle", "foot", 1.0),
    (r"upleg|thigh|upperleg|femur", "thigh", 1.0),
    (r"leg|shin|knee|calf|tibia", "shank", 1.0),
    (r"finger|thumb|index|middle|ring|pinky", "hand", 0.05),
    (r"hand|wrist", "hand", 1.0),
    (r"forearm|lowerarm|elbow", "forearm", 1.0),
    (r"shoulder|collar|clavicle", "clavicle", 1.0),
    (r"arm", "upper_arm", 1.0),
    (r"neck", "head", 0.25),
    (r"head", "head", 1.0),
    (r"hip|pelvis", "lower_trunk", 1.0),
    (r"spine|chest|back|torso|abdomen|thorax", "trunk", 1.0),
]


def side_of(name: str) -> str | None:
    """``"l"``, ``"r"`` or None from a joint name: Left/Right anywhere, an ``L``/``R`` prefix
    followed by a capital or ``_``, or a ``.L``/``_R`` suffix ("LHipJoint", "LeftFoot",
    "foot.L", "l_ankle"; "LowerBack" has none)."""
    low = name.lower()
    for s, word in (("l", "left"), ("r", "right")):
        if word in low or re.match(rf"^{s.upper()}([A-Z_.\-]|$)", name) or re.match(rf"^{s}[_.\-]", name) \
                or re.search(rf"[_.\-]{s}$", low):
            return s
    return None


def classify(name: str, is_root: bool) -> tuple[str, float]:
    """(de Leva segment, weight within it) for a BVH joint name; the root is the lower trunk
    (the pelvis) and a name that no rule knows counts as trunk with weight 0.05."""
    low = name.lower()
    if is_root:
        return "lower_trunk", 1.0
    for pat, seg, w in _RULES:
        if re.search(pat, low):
            if seg == "lower_trunk" and side_of(name) is not None:
                return "lower_trunk", 0.1            # CMU's LHipJoint: a short pelvic bone
            return seg, w
    return "trunk", 0.05


@dataclass
class Feet:
    """The feet of a capture figure: ``names`` (``"l"``, ``"r"``), the contact point names of
    each foot, and the joint whose origin is the ankle."""
    names: list[str]
    points: list[list[str]]
    ankles: list[str]


def _bone(sk, j, scale):
    ends = [sk.offsets[k] for k in sk.children[j]] + list(sk.end_sites[j])
    return scale * np.mean(ends, axis=0) if ends else np.zeros(3)


def build_figure(sk: Skeleton, scale: float, mass: float, height: float, sex: str = "male") -> tuple[_m.Model, Feet]:
    """(model, feet) for the skeleton ``sk`` with lengths times ``scale`` (m per file unit)."""
    mass = _h._positive(mass, "mass")
    height = _h._positive(height, "height")
    t = _h.de_leva(sex)
    J = len(sk.names)
    cls = [classify(n, sk.parents[j] < 0) for j, n in enumerate(sk.names)]
    sides = [side_of(n) for n in sk.names]
    # each group's de Leva mass fraction, shared by weight among its members
    def group(j):
        seg = cls[j][0]
        return (seg, sides[j]) if seg in _h._BILATERAL or seg == "clavicle" else (seg, None)
    frac = {"trunk": t["middle_trunk"].mass + t["upper_trunk"].mass * (1 - 2 * _h.CLAVICLE_SHARE),
            "clavicle": _h.CLAVICLE_SHARE * t["upper_trunk"].mass}
    wsum: dict = {}
    for j in range(J):
        wsum[group(j)] = wsum.get(group(j), 0.0) + cls[j][1]
    masses = np.zeros(J)
    rows = []
    for j in range(J):
        seg, w = cls[j]
        f = frac.get(seg, t[seg].mass if seg in t else 0.0)
        g = group(j)
        if g[1] is None and (seg in _h._BILATERAL or seg == "clavicle"):
            f *= 2                                      # both sides in one group
        masses[j] = f * w / wsum[g]
        rows.append(t["upper_trunk"] if seg in ("trunk", "clavicle") else t[seg])
    masses *= mass / masses.sum()
    b = _m.ModelBuilder("capture")
    for j, name in enumerate(sk.names):
        u = _bone(sk, j, scale)
        L = float(np.linalg.norm(u))
        row = rows[j]
        if L < 1e-9:
            e, L = np.array([0.0, 0.0, 1.0]), 0.05
            com = np.zeros(3)
        else:
            e = u / L
            com = row.com * u
        rt = 0.5 * (row.r_sagittal + row.r_transverse)
        m = masses[j]
        I = m * (rt * L) ** 2 * (np.eye(3) - np.outer(e, e)) + m * (row.r_longitudinal * L) ** 2 * np.outer(e, e)
        inertia = _m.Inertia(m, com, I)
        if sk.parents[j] < 0:
            b.add_body(name, "world", _m.FreeFlyer(), inertia=inertia, joint_name="root_joint")
        else:
            b.add_body(name, sk.names[sk.parents[j]], _m.Spherical(), placement=scale * sk.offsets[j],
                       inertia=inertia, joint_name=name)
        for i, e in enumerate(sk.end_sites[j]):
            b.add_frame(f"{name}_end" + (str(i) if i else ""), name, placement=scale * np.asarray(e))
    feet = _add_feet(b, sk, scale, height, cls, sides)
    b.add_ground()
    return b.build(), feet


def _add_feet(b, sk, scale, height, cls, sides):
    C = Y_UP_TO_Z_UP
    P0, E0 = sk.rest_positions()
    ys = np.concatenate([P0[:, 1], [e[1] for e in E0]])
    rest_stands = scale * (ys.max() - ys.min()) >= 0.8 * height   # CMU's T-pose does, LAFAN1's does not
    names, points, ankles = [], [], []
    for j, name in enumerate(sk.names):
        if cls[j] != ("foot", 1.0) or sides[j] is None or sides[j] in names:
            continue
        chain, stack = [], [j]
        while stack:                                   # the foot and everything below it
            k = stack.pop()
            chain.append(k)
            stack += sk.children[k]
        if rest_stands:                                  # the reference pose: the rest pose ...
            P0, _ = sk.rest_positions()
            Pw = scale * P0 @ C.T
            Rw = np.broadcast_to(C, (len(sk.names), 3, 3))
        else:                                           # ... or the frame in which this ankle is lowest
            frames = np.unique(np.linspace(0, sk.frames - 1, min(sk.frames, 400)).astype(int))
            P, R, _ = sk.world_positions(frames)
            f = frames[int(np.argmin(P[:, j, 1]))]
            P, R, _ = sk.world_positions([f])
            Pw = scale * P[0] @ C.T                     # world axes (the root's yaw kept: irrelevant here)
            Rw = C @ R[0]                               # body -> world
        pts = [(k, Pw[k]) for k in chain] + [(k, Pw[k] + Rw[k] @ (scale * e)) for k in chain for e in sk.end_sites[k]]
        sole = min(p[2] for _, p in pts)
        heel = Pw[j].copy()
        heel[2] = sole
        dist = [np.hypot(*(p - heel)[:2]) for _, p in pts]
        k_toe, toe = pts[int(np.argmax(dist))]
        toe = toe.copy()
        toe[2] = sole
        fwd = toe - heel
        if np.linalg.norm(fwd) < 1e-6:
            raise MocapError(f"{sk.path}: the foot {name!r} has no length in the ground plane (no toe or end site)")
        fwd /= np.linalg.norm(fwd)
        lat = np.cross([0.0, 0.0, 1.0], fwd)
        w = _h.FOOT_HALF_WIDTH * height
        k_toe_body = k_toe if k_toe != j else j
        s = sides[j]
        names.append(s)
        ankles.append(name)
        pn = []
        for end, body, x in (("heel", j, heel), ("toe", k_toe_body, toe)):
            for edge, sgn in (("in", -1.0 if s == "l" else 1.0), ("out", 1.0 if s == "l" else -1.0)):
                xw = x + sgn * w * lat
                local = Rw[body].T @ (xw - Pw[body])
                pn.append(b.add_contact(sk.names[body], local, friction=_h.CONTACT_FRICTION,
                                        name=f"{s}_{end}_{edge}"))
        points.append(pn)
    order = np.argsort(names)                          # "l" before "r"
    return Feet([names[i] for i in order], [points[i] for i in order], [ankles[i] for i in order])
