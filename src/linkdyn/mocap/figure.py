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

Limits
------
With ``limits`` (:func:`linkdyn.mocap.limits.anatomical_limits`; ``load_bvh(..., limits=True)``) the ball joints get
the 40-DoF figure's anatomical swing cones and twist ranges (:data:`linkdyn.models.human.BALL_LIMITS_DEG`:
AAOS 1965 ranges of motion; the swing-twist decomposition of Baerlocher and Boulic 2001;
constraint rows in :mod:`linkdyn.contact.swing_twist`), each re-expressed in the joint's own
frames.  A BVH joint frame says nothing of anatomy, so each segment's anatomical axes (forward,
left, up when the figure stands) are found from the skeleton as
:mod:`linkdyn.mocap.retargeting` calibrates a capture on the figure: in a reference pose (the rest
pose if it stands, as CMU's T-pose; else the frame of the clip that stands straightest, as for
LAFAN1), pelvis and trunk face where the hips' and shoulders' lateral axes say, with z up; each
limb segment's long axis is its bone (so the *plug axis* of a limb's joint lies along its bone
in the reference pose) and its twist about it is fixed by the knee's or elbow's hinge axis
(fit over the clip, :func:`linkdyn.mocap.retargeting.hinge_axis`, signed as the limb's axes
expect) or the limb's plane; the
hand takes the capture's wrist rotation at the reference as zero; the foot lies flat (z up)
in the rest pose if it stands, else in the frame where its ankle is lowest, heading where the
shank faces (the capture's tibial torsion and toe-out count as the ankle's zero twist).  With
K_p, K_c the axes of the parent's and child's segments in their body frames, a figure joint
(cone frame C, plug axis p, twist range) becomes the cone frame K_p C, the plug axis K_c p and
the twist range shifted by a constant (the twist of K_c C_p against the plug frame's own zero):
the capture figure's joint then judges a pose exactly as the figure's joint judges
K_p^T R K_c (``tests/test_mocap_limits.py``: equal gaps to 1e-9 rad on a BVH of the figure).

Which joint gets which limit (:func:`classify` of the joint's own body): thigh -> hip, shank ->
knee, foot -> ankle, upper arm -> shoulder, forearm -> elbow, hand -> wrist, clavicle ->
sternoclavicular (the joint that :func:`linkdyn.mocap.retargeting.match_joints` matches to that
figure body); every trunk joint between the root and the torso (the joint that carries the
arms and the head) -> waist, every joint between the torso and the head -> neck, each with the
whole range (``split=True``: 1 / n of every angle each, for n joints in the chain; on the real
walk the capture's neck joints turn in opposite directions, and halves of the range were left
in 73-77 % of the frames by up to 26 deg).  Knees and elbows are ball joints in a BVH: they take
:data:`HINGE_LIMITS_DEG`, a narrow elliptical cone about the flexion plane.  No limits: the root
(free), pelvic bones (CMU's ``LHipJoint``, rigid with the pelvis), toes, fingers, names no rule
knows, and every joint of a skeleton without the legs, arms and head the calibration needs
(``FigureLimits.unlimited`` says why for each).  Without a standing rest pose the wrist's twist
range is centred on the reference pose (160 deg, where the palm faces is unknown).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

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


def build_figure(sk: Skeleton, scale: float, mass: float, height: float, sex: str = "male",
                 limits: FigureLimits | None = None, soles: tuple[float, float, float] = (0.0, 0.0, 1.0)
                 ) -> tuple[_m.Model, Feet]:
    """(model, feet) for the skeleton ``sk`` with lengths times ``scale`` (m per file unit);
    ``limits`` (:func:`linkdyn.mocap.limits.anatomical_limits`): the ball joints' swing cones and twist ranges (None:
    every joint unlimited); ``soles`` (heel, toe, width): the sole points' heel pair moved back
    and toe pair moved forward by these fractions of the heel-to-toe length, and their half width
    times ``width`` (default: the heel below the ankle, the toe at the toe joint, the width of
    :data:`linkdyn.models.human.FOOT_HALF_WIDTH`)."""
    soles = tuple(float(x) for x in np.asarray(soles, dtype=float).ravel())
    if len(soles) != 3 or not np.isfinite(soles).all() or soles[0] < 0 or soles[1] < 0 or soles[2] <= 0:
        raise ValueError(f"soles: expected (heel >= 0, toe >= 0, width > 0), got {soles}")
    lim = {} if limits is None else limits.limits
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
            joint = lim[name].spherical if name in lim else _m.Spherical()
            b.add_body(name, sk.names[sk.parents[j]], joint, placement=scale * sk.offsets[j],
                       inertia=inertia, joint_name=name)
        for i, e in enumerate(sk.end_sites[j]):
            b.add_frame(f"{name}_end" + (str(i) if i else ""), name, placement=scale * np.asarray(e))
    feet = _add_feet(b, sk, scale, height, cls, sides, soles)
    b.add_ground()
    return b.build(), feet


def _add_feet(b, sk, scale, height, cls, sides, soles=(0.0, 0.0, 1.0)):
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
        length = np.linalg.norm(fwd)
        fwd /= length
        heel = heel - soles[0] * length * fwd
        toe = toe + soles[1] * length * fwd
        lat = np.cross([0.0, 0.0, 1.0], fwd)
        w = _h.FOOT_HALF_WIDTH * height * soles[2]
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


# ------------------------------------------------------------------------------------------------
# anatomical limits of the ball joints (module docstring, "Limits")
def _hinge_row(flexion, toward, lateral, twist):
    """A hinge-like joint (knee, elbow) as a ball joint, in :data:`linkdyn.models.human.BALL_LIMITS_DEG`'s
    format: the segment hangs along -z standing, flexes towards ``toward`` over ``flexion`` (deg,
    (lo, hi), lo < 0 a hyperextension), swings at most ``lateral`` deg out of that plane (the
    ellipse's minor half-angle), twists within ``twist`` (deg)."""
    lo, hi = flexion
    return ((0.0, 0.0, -1.0), ((toward, 0.5 * (lo + hi)),), (0.5 * (hi - lo), lateral), twist)


#: hyperextension (deg) the knee's and elbow's cones admit beyond the straight limb: AAOS (1965)
#: records up to 10 deg at the knee and 0-5 at the elbow (more in women) as normal
HYPEREXTENSION_DEG = 5.0
#: the capture figure's knees and elbows (quaternion ball joints: a BVH joint has three rotations)
#: in :data:`linkdyn.models.human.BALL_LIMITS_DEG`'s format, left side, the figure's standing axes:
#: flexion over :data:`linkdyn.models.human.KNEE_RANGE` / ``ELBOW_RANGE`` (AAOS 1965) plus
#: :data:`HYPEREXTENSION_DEG`; out of the flexion plane at most 10 deg (knee: varus-valgus laxity,
#: about 5-10 deg, Blankevoort, Huiskes and de Lange 1988, "The envelope of passive knee joint
#: motion", J. Biomech. 21(9):705-720) or 15 deg (elbow: the carrying angle's 10-15 deg varies
#: with flexion); twist: the knee's tibial rotation, about 25-30 deg each way at 90 deg of
#: flexion (Blankevoort et al. 1988), the elbow's the forearm's pronation and supination, 80 deg
#: each way (AAOS), centred on the reference pose (a skeleton without fingers does not say where
#: the palm faces).
HINGE_LIMITS_DEG = {
    "knee": _hinge_row((-HYPEREXTENSION_DEG, float(np.degrees(_h.KNEE_RANGE[1]))), "-x", 10.0, (-30.0, 30.0)),
    "elbow": _hinge_row((-HYPEREXTENSION_DEG, float(np.degrees(_h.ELBOW_RANGE[1]))), "x", 15.0, (-80.0, 80.0)),
}
#: the anatomical joint each body class's joint gets (the class of the BVH joint's own body, :func:`classify`)
LIMIT_RULES = {"thigh": "hip", "shank": "knee", "foot": "ankle", "upper_arm": "shoulder", "forearm": "elbow",
               "hand": "wrist", "clavicle": "sternoclavicular"}


@dataclass
class JointLimit:
    """The anatomical limit of one BVH joint: ``joint`` (its name), ``rule`` (the 40-DoF figure's
    joint whose limits it takes: a key of :data:`linkdyn.models.human.BALL_LIMITS_DEG` or of
    :data:`HINGE_LIMITS_DEG`), ``side``, ``share`` (the fraction of the range: 1 / the number of
    joints in a spine or neck chain), ``spherical`` (the joint, its cone and plug axes in the BVH
    joint frames), ``twist_shift`` (deg: the twist of the figure's joint minus the BVH joint's,
    a constant; the range is shifted by it)."""
    joint: str
    rule: str
    side: str
    share: float
    spherical: _m.Spherical
    twist_shift: float


@dataclass
class FigureLimits:
    """The anatomical limits of a capture figure (:func:`linkdyn.mocap.limits.anatomical_limits`): ``limits`` {BVH
    joint name: :class:`JointLimit`}, ``unlimited`` {joint name: why it has none} (the root is
    free), ``reference`` (``"rest"`` or the frame whose pose calibrated the anatomical axes)."""
    limits: dict
    unlimited: dict
    reference: int | str

    def summary(self) -> str:
        """A table: each limited joint's rule, its cone's half-angles and twist range (deg)."""
        rows = [f"anatomical limits (reference pose: {self.reference}):",
                f"{'joint':<18} {'rule':<17} {'share':>5}  {'cone a/b deg':>13}  {'twist deg':>15}"]
        for n, lim in self.limits.items():
            a, b = np.degrees(lim.spherical.swing_ab)
            lo, hi = np.degrees(lim.spherical.twist)
            rows.append(f"{n:<18} {lim.rule + ' ' + lim.side:<17} {lim.share:5.2f}  {a:6.1f}/{b:<6.1f}  "
                        f"{lo:7.1f} {hi:7.1f}")
        for n, why in self.unlimited.items():
            rows.append(f"{n:<18} unlimited: {why}")
        return "\n".join(rows)


def _wrap(a):
    return (a + np.pi) % (2 * np.pi) - np.pi


def _reframe(anat: _m.Spherical, Kp, Kc):
    """The limits of ``anat`` (a ball joint between two segments in the figure's standing axes)
    for a joint whose parent and child body frames see those axes as ``Kp`` and ``Kc`` (columns:
    forward, left, up of each segment, in the body frame): the cone frame ``Kp C``, the plug
    axis ``Kc p`` and the twist range shifted by the constant that the plug frame's own zero
    (the smallest rotation from the cone axis) differs from ``Kc C_p`` by.  Returns (joint,
    shift in rad); the joint's gaps at ``R`` equal ``anat``'s at ``Kp^T R Kc``."""
    C = Kp @ anat.cone_frame
    p = Kc @ anat.plug_axis
    j0 = _m.Spherical(swing=anat.swing, axis=C, plug_axis=p)
    M = j0.plug_frame.T @ Kc @ anat.plug_frame                 # a rotation about z by the shift
    shift = float(np.arctan2(M[1, 0], M[0, 0]))
    lo, hi = anat.twist
    mid, half = _wrap(0.5 * (lo + hi) - shift), 0.5 * (hi - lo)
    twist = (mid - half, mid + half)
    return _ball(anat.swing, twist, C, p), shift


def _ball(swing, twist, C, p):
    """``Spherical(swing, twist, C, p)``, also for a twist range across +-pi (lo < hi, hi - lo <
    2 pi, the middle in (-pi, pi]).  Such a range comes out of :func:`_reframe` when the BVH rest
    pose is far from standing (LAFAN1's); the constructor refuses it (``-pi < lo < hi < pi``),
    but every user of the range (the compiled gaps and rows of :mod:`linkdyn.contact.swing_twist`,
    ``project_inside``) takes the twist about the range's middle, where it is well defined."""
    lo, hi = twist
    if -np.pi < lo < hi < np.pi:
        return _m.Spherical(swing=swing, twist=(lo, hi), axis=C, plug_axis=p)
    if not (0.0 < hi - lo < 2 * np.pi and -np.pi < 0.5 * (lo + hi) <= np.pi):
        raise ValueError(f"twist range {twist!r}")
    j = _m.Spherical(swing=swing, twist=(-0.5, 0.5), axis=C, plug_axis=p)
    object.__setattr__(j, "twist", (float(lo), float(hi)))
    return j


def limit_violations(model: _m.Model, q: NDArray[np.float64], tol_deg: float = 0.0) -> list[tuple]:
    """How far the configurations ``q`` (T, nq) leave the model's ball-joint limits: one row
    ``(joint, unit, fraction of frames, largest violation deg, RMS violation over the violating
    frames deg)`` per limit unit (``"swing"``, ``"twist.lower"``, ``"twist.upper"``,
    :func:`linkdyn.contact.swing_twist.ball_limit_names`) violated by more than ``tol_deg``."""
    from ..contact import swing_twist as st
    q = np.atleast_2d(np.asarray(q, dtype=float))
    idx = st.ball_limit_joints(model)
    units = [(model._joint_names[i], u) for i in idx for u in st.ball_limit_names(model.joints[i])]
    g = np.array([st.ball_limit_gaps_model(model, x) for x in q]).reshape(len(q), len(units))
    out = []
    viol = np.degrees(-g)
    for k, (jn, u) in enumerate(units):
        bad = viol[:, k] > tol_deg
        if bad.any():
            out.append((jn, u, float(bad.mean()), float(viol[bad, k].max()), float(np.sqrt(np.mean(viol[bad, k] ** 2)))))
    return out
