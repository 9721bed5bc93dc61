"""Human figures: the 40-DoF figure of Nakamura and Yamane 2000 (Fig. 13) and its 16-DoF version (sec. 5.1, 5.2).

Nakamura and Yamane (2000) (Nakamura, Yamane, Nagashima) sec. 4.5 models a human with 12 spherical and 4 revolute
joints, 40 DoF on 17 links, the spherical joints taken as single 3-DoF joints rather than three
revolute ones (17 links instead of 41).  Its high-bar and swing examples (sec. 5.1, 5.2) use a
16-DoF figure with 4 DoF per limb.  :func:`human_figure` and :func:`human_figure_16` build both,
with quaternion :class:`~linkdyn.Spherical` joints (no singularity) and, when ``floating=True``,
a :class:`~linkdyn.FreeFlyer` base named ``"root_joint"``.

Mass properties: de Leva (1996)
-------------------------------
P. de Leva, "Adjustments to Zatsiorsky-Seluyanov's segment inertia parameters",
J. Biomechanics 29(9):1223-1230, 1996, Table 4 (:data:`DE_LEVA_1996`).  Values in percent:
segment length in mm for the reference subjects (female stature 1735 mm / 61.9 kg, male
1741 mm / 73.0 kg), mass in % of body mass, centre of mass (CM) in % of the segment length
measured from the first endpoint ("origin"), radii of gyration about the CM in % of the segment
length about the sagittal, transverse and longitudinal axes::

    segment        origin-other   length F/M     mass % F/M     CM % F/M       r_sag F/M    r_trans F/M  r_long F/M
    head           VERT-MIDG      200.2 / 203.3   6.68 /  6.94  58.94 / 59.76  33.0 / 36.2  35.9 / 37.6  31.8 / 31.2
    upper trunk    SUPR-XYPH      142.5 / 170.7  15.45 / 15.96  20.77 / 29.99  74.6 / 71.6  50.2 / 45.4  71.8 / 65.9
    middle trunk   XYPH-OMPH      205.3 / 215.5  14.65 / 16.33  45.12 / 45.02  43.3 / 48.2  35.4 / 38.3  41.5 / 46.8
    lower trunk    OMPH-MIDH      181.5 / 145.7  12.47 / 11.17  49.20 / 61.15  43.3 / 61.5  40.2 / 55.1  44.4 / 58.7
    upper arm      SJC-EJC        275.1 / 281.7   2.55 /  2.71  57.54 / 57.72  27.8 / 28.5  26.0 / 26.9  14.8 / 15.8
    forearm        EJC-WJC        264.3 / 268.9   1.38 /  1.62  45.59 / 45.74  26.1 / 27.6  25.7 / 26.5   9.4 / 12.1
    hand           WJC-MET3        78.0 /  86.2   0.56 /  0.61  74.74 / 79.00  53.1 / 62.8  45.4 / 51.3  33.5 / 40.1
    thigh          HJC-KJC        368.5 / 422.2  14.78 / 14.16  36.12 / 40.95  36.9 / 32.9  36.4 / 32.9  16.2 / 14.9
    shank          KJC-LMAL       432.3 / 434.0   4.81 /  4.33  44.16 / 44.59  27.1 / 25.5  26.7 / 24.9   9.3 / 10.3
    foot           HEEL-TTIP      228.3 / 258.1   1.29 /  1.37  40.14 / 44.15  29.9 / 25.7  27.9 / 24.5  13.9 / 12.4

(VERT vertex, MIDG mid-gonion, SUPR suprasternale, XYPH xiphion, OMPH omphalion, MIDH mid-hip
(midpoint of the hip joint centres), SJC/EJC/WJC/HJC/KJC shoulder/elbow/wrist/hip/knee joint
centres, MET3 3rd metacarpale, LMAL lateral malleolus, HEEL pternion, TTIP acropodion.)

* **Masses** scale with ``mass``: segment mass = table % / (sum of the table's %) x ``mass``, so
  the model's total mass is ``mass``.  The male column sums to 100.00 %, the female one to
  99.99 % (rounding in the table); the female fractions are therefore divided by 0.9999, which
  changes none of them at the two decimals printed.
* **Trunk.**  The 40-DoF figure's *pelvis* is de Leva's lower trunk (OMPH-MIDH); its *torso* is
  the middle trunk (XYPH-OMPH) plus the upper trunk (SUPR-XYPH) less the two clavicles; the
  waist joint is at the omphalion, the neck joint at the suprasternale height.
* **Clavicles.**  De Leva has no shoulder-girdle segment.  Each clavicle link takes
  :data:`CLAVICLE_SHARE` = 5 % of the upper-trunk mass (0.80 % of the body mass for the male,
  0.77 % for the female), placed at the clavicle's midpoint, with the inertia of a uniform solid
  cylinder running from the sternoclavicular joint to the shoulder joint of diameter half its
  length (a modelling choice, stated here because no table gives it).  The remaining 90 % of the
  upper trunk keeps de Leva's CM and radii of gyration.
* **Combined segments** (the torso; the 16-DoF figure's trunk-head, forearm-hand and shank-foot)
  are summed with the parallel-axis theorem (:func:`combine`), from the parts' own CMs and
  inertias, not re-read from a table.
* **Inertias** about the segment CM are ``m (r L)^2`` with ``L`` the segment's scaled length.  Body
  frames are parallel to the world in the standing pose (x forward, y to the figure's left,
  z up).  Axis mapping: de Leva's *sagittal* axis (the anteroposterior axis, perpendicular to
  the frontal plane) -> body x, *transverse* axis (mediolateral) -> body y, *longitudinal* axis
  -> body z, for every upright segment (head, trunk parts, arm and leg segments).  For the foot,
  whose long axis is horizontal: longitudinal (heel to toe) -> x, sagittal (the axis in the
  sagittal plane perpendicular to the long axis, i.e. vertical) -> z, transverse -> y.  (The
  larger sagittal than transverse radius of the trunk and the hand, both wider than deep, agrees
  with this reading.)

Lengths: de Leva's segment lengths scaled by ``height / stature`` of the reference subject of the
same sex, stacked vertically in the standing pose, plus these proportions (fractions of the
height, the same for both sexes; de Leva gives no widths):

* ankle joint (lateral malleolus) above the sole: :data:`ANKLE_HEIGHT` = 0.039 (Drillis & Contini
  1966, as in D. A. Winter, *Biomechanics and Motor Control of Human Movement*, Fig. 4.1);
* the neck joint (at the suprasternale height) to the mid-gonion: whatever closes the stature,
  ``height - ankle - shank - thigh - trunk - head`` (81.7 mm male, 137.0 mm female for the
  reference statures; the female table's short thigh makes it longer);
* hip joint centres :data:`HIP_HALF_WIDTH` = 0.05 either side of the mid-line (0.1 H apart,
  175 mm at 1.75 m, inside Drillis & Contini's bi-trochanteric width 0.191 H);
* shoulder joint centres :data:`SHOULDER_HALF_WIDTH` = 0.10 either side (0.2 H apart, inside
  the shoulder width 0.259 H) and :data:`SHOULDER_DROP` = 0.03 below the suprasternale;
  sternoclavicular joints :data:`STERNOCLAVICULAR_HALF_WIDTH` = 0.015 either side, at the
  suprasternale height;
* the foot: heel :data:`HEEL_BEHIND_ANKLE` = 20 % of the foot length behind the ankle, toe tip
  80 % in front, both on the sole; the foot's CM at de Leva's fraction of heel-to-toe, half the
  ankle height above the sole.

All joint centres lie in the mid-sagittal plane of their limb (x = 0 in the standing pose).
At q = neutral the figure stands in the anatomical position de Leva's axes refer to: z up, facing
+x, arms hanging with the palms facing forward (so the hand's plane is the frontal plane and its
largest, sagittal, radius of gyration is about x), soles on z = 0 in the configuration
:func:`standing_configuration` returns.  The floating base's free joint sits at the world origin
and carries the pelvis origin (the mid-hip point MIDH), so, as for any free joint in linkdyn and
Pinocchio, ``q[:3]`` is the pelvis origin's world position and ``q[3:7]`` the pelvis orientation;
standing, ``q[:3] = (0, 0, pelvis_height)`` (``dimensions(height, sex)["pelvis_height"]``).  With
``floating=False`` the pelvis is welded at that standing height (it becomes part of the world
body) and ``neutral`` stands.

Joint limits
------------
Normal ranges of motion of the American Academy of Orthopaedic Surgeons, *Joint Motion: Method
of Measuring and Recording* (AAOS, 1965), as tabulated e.g. by Norkin and White, *Measurement of
Joint Motion: A Guide to Goniometry*, appendix A (compare Soucie et al. 2011, "Range of motion
measurements: reference values and a database for comparison studies", Haemophilia 17:500-507,
whose means are close).  Revolute joints flex in one direction only, ``q >= 0``: elbow 0-150 deg
about the body's -y axis (the forearm swings forward), knee 0-135 deg about +y (the shank swings
backward); ``lower``/``upper`` of the model.

The spherical joints (quaternions; their ``lower``/``upper`` stay infinite) carry a swing cone
and a twist range (``Spherical(swing, twist, axis, plug_axis)``, the swing-twist decomposition
of Baerlocher and Boulic 2001, constraint rows in :mod:`linkdyn.contact.swing_twist`), built by
:func:`ball_joint` from :data:`BALL_LIMITS_DEG` (:func:`limited_ball` builds one row of that
format; :mod:`linkdyn.mocap.figure` re-expresses them in a capture skeleton's joint frames).  The *plug axis* is the segment's own axis in the
standing pose; the *cone axis* is tilted from it to the middle of the anatomical range, so that
the standing posture lies inside, off the cone's centre; the half-angles are half the total
arcs (an elliptical cone when the sagittal and frontal arcs differ); the twist is the rotation
about the segment's axis, zero standing.  Left side, degrees (the right side is the mirror
image, its twist range negated)::

    joint             plug axis        cone axis tilted     half-angles a / b    twist (lo, hi)
    waist             +z (trunk)       27.5 fwd (flexion)   52.5 sag / 35 front  -45, 45
    neck              +z (head)        -                    45 (circular)        -60, 60
    sternoclavicular  clavicle (lat.,  15 up, 5 back        20 horiz / 25 vert   -40, 10 (posterior -)
                      19.4 down)
    shoulder          -z (arm)         62.5 fwd             122.5 sag / 105 lat  -90, 70 (external -)
    wrist             -z (hand)        5 palmar, 5 ulnar    75 sag / 25 front    -10, 150 (pronation +)
    hip               -z (thigh)       45 fwd, 7.5 lat      75 sag / 37.5 front  -45, 45
    ankle             +z (foot)        15 plantar, 10 inv.  35 sag / 25 front    -20, 10 (adduction -)

    joint             source: total arcs (degrees)
    waist             AAOS thoracolumbar: flexion 80, extension 25, lateral bending 35 each side,
                      rotation 45 each side
    neck              AAOS cervical: flexion 45, extension 45, lateral bending 45, rotation 60 each side
    sternoclavicular  approximate (Kapandji, The Physiology of the Joints, vol. 1): elevation 40,
                      depression 10, protraction 15, retraction 25, posterior rotation 40, anterior 10
    shoulder          AAOS: flexion 180 (+5, see below), extension 60, abduction 180, internal
                      rotation 70, external rotation 90
    wrist             AAOS: flexion 80, extension 70, radial deviation 20, ulnar deviation 30;
                      forearm pronation + supination 160 (80 + 80)
    hip               AAOS: flexion 120, extension 30, abduction 45, adduction 30, internal and
                      external rotation 45
    ankle             AAOS: dorsiflexion 20, plantarflexion 50, inversion 35, eversion 15; forefoot
                      adduction 20, abduction 10

Notes.  The wrist's twist stands in for the forearm's pronation and supination (the elbow is a
hinge): 160 deg in all, the palms-forward anatomical position taken 10 deg short of full
supination.  The shoulder's cone lets the arm reach 185 deg of flexion (5 beyond AAOS) so that
the arms-overhead posture of the high bar (each shoulder turned half a turn about y) is 5 deg
inside rather than on the boundary; the shoulder and sternoclavicular ranges overlap (the
clinical shoulder range includes the shoulder girdle's share).  A cone couples the planes:
the ranges along the anatomical planes from the standing posture come out as (tests measure
them) waist flex 80 / ext 25 / lat. 30 / rot 45; neck 45 / 45 / 45 / 60; sternoclavicular
elevation 39.5 / depression 9.5 / protraction 11.5 / retraction 22 / rotation 40 and 10;
shoulder flex 180 / ext 60 / int. 70 / ext. rot 90, and abduction 98 by a pure rotation in the
frontal plane, which turns the humerus internally against the twist bound (Codman's paradox),
while with the humerus turned as the arm rises every arm direction of the frontal plane up to
overhead is inside the cone; wrist 80 / 70 / 20 / 30, pronation 150 / supination 10; hip flex
119 / ext 27 / abd 39.5 / add 18 / rotation 45 each; ankle plantar 48 / dorsi 17 / inversion 33 /
eversion 12.5 / adduction 20 / abduction 10.
"""
from __future__ import annotations

from math import radians
from typing import TYPE_CHECKING, Iterable, NamedTuple

import numpy as np

from .. import spatial
from ..model import builder as _b
from ..model import joints as J

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..model.model import Model

__all__ = ["human_figure", "human_figure_16", "segment_table", "dimensions", "de_leva", "combine",
           "ball_joint", "limited_ball", "DE_LEVA_1996", "REFERENCE_SUBJECT", "BALL_LIMITS_DEG"]

#: de Leva (1996) Table 4: segment -> (origin, other endpoint, length mm, mass %, CM % from the
#: origin, r_sagittal %, r_transverse %, r_longitudinal %), each value as (female, male).
DE_LEVA_1996 = {
    "head": ("VERT", "MIDG", (200.2, 203.3), (6.68, 6.94), (58.94, 59.76),
             (33.0, 36.2), (35.9, 37.6), (31.8, 31.2)),
    "upper_trunk": ("SUPR", "XYPH", (142.5, 170.7), (15.45, 15.96), (20.77, 29.99),
                    (74.6, 71.6), (50.2, 45.4), (71.8, 65.9)),
    "middle_trunk": ("XYPH", "OMPH", (205.3, 215.5), (14.65, 16.33), (45.12, 45.02),
                     (43.3, 48.2), (35.4, 38.3), (41.5, 46.8)),
    "lower_trunk": ("OMPH", "MIDH", (181.5, 145.7), (12.47, 11.17), (49.20, 61.15),
                    (43.3, 61.5), (40.2, 55.1), (44.4, 58.7)),
    "upper_arm": ("SJC", "EJC", (275.1, 281.7), (2.55, 2.71), (57.54, 57.72),
                  (27.8, 28.5), (26.0, 26.9), (14.8, 15.8)),
    "forearm": ("EJC", "WJC", (264.3, 268.9), (1.38, 1.62), (45.59, 45.74),
                (26.1, 27.6), (25.7, 26.5), (9.4, 12.1)),
    "hand": ("WJC", "MET3", (78.0, 86.2), (0.56, 0.61), (74.74, 79.00),
             (53.1, 62.8), (45.4, 51.3), (33.5, 40.1)),
    "thigh": ("HJC", "KJC", (368.5, 422.2), (14.78, 14.16), (36.12, 40.95),
              (36.9, 32.9), (36.4, 32.9), (16.2, 14.9)),
    "shank": ("KJC", "LMAL", (432.3, 434.0), (4.81, 4.33), (44.16, 44.59),
              (27.1, 25.5), (26.7, 24.9), (9.3, 10.3)),
    "foot": ("HEEL", "TTIP", (228.3, 258.1), (1.29, 1.37), (40.14, 44.15),
             (29.9, 25.7), (27.9, 24.5), (13.9, 12.4)),
}
#: de Leva's reference subjects: stature (m) and body mass (kg)
REFERENCE_SUBJECT = {"female": (1.735, 61.9), "male": (1.741, 73.0)}
#: the segments that appear twice (left and right)
_BILATERAL = ("upper_arm", "forearm", "hand", "thigh", "shank", "foot")

CLAVICLE_SHARE = 0.05            # of the upper-trunk mass, per clavicle
ANKLE_HEIGHT = 0.039             # x height: lateral malleolus above the sole (Drillis & Contini)
HIP_HALF_WIDTH = 0.05            # x height: hip joint centre from the mid-line
SHOULDER_HALF_WIDTH = 0.10       # x height: shoulder joint centre from the mid-line
SHOULDER_DROP = 0.03             # x height: shoulder joint centre below the suprasternale
STERNOCLAVICULAR_HALF_WIDTH = 0.015  # x height: sternoclavicular joint from the mid-line
HEEL_BEHIND_ANKLE = 0.20         # x foot length: heel behind the ankle (the toe tip is 0.80 in front)
ELBOW_RANGE = (0.0, radians(150.0))
KNEE_RANGE = (0.0, radians(135.0))

#: Anatomical limits of the ball joints of the left side, degrees (the right side is their mirror
#: image): joint -> (plug axis, tilts of the cone axis from the plug axis, swing half-angles
#: (a, b) or one half-angle, twist (lo, hi)); see the module docstring for the sources.  The
#: plug axis is the segment's axis in the standing pose (x forward, y left, z up); the cone
#: axis is the plug axis turned by each (towards, degrees) in turn; a is the half-angle towards
#: +-x of the cone frame (the socket's x made perpendicular to the cone axis), b the other.
BALL_LIMITS_DEG = {
    "waist": ((0.0, 0.0, 1.0), (("x", 27.5),), (52.5, 35.0), (-45.0, 45.0)),
    "neck": ((0.0, 0.0, 1.0), (), 45.0, (-60.0, 60.0)),
    "sternoclavicular": ((0.0, SHOULDER_HALF_WIDTH - STERNOCLAVICULAR_HALF_WIDTH, -SHOULDER_DROP),
                         (("z", 15.0), ("-x", 5.0)), (20.0, 25.0), (-40.0, 10.0)),
    "shoulder": ((0.0, 0.0, -1.0), (("x", 62.5),), (122.5, 105.0), (-90.0, 70.0)),
    "wrist": ((0.0, 0.0, -1.0), (("x", 5.0), ("-y", 5.0)), (75.0, 25.0), (-10.0, 150.0)),
    "hip": ((0.0, 0.0, -1.0), (("x", 45.0), ("y", 7.5)), (75.0, 37.5), (-45.0, 45.0)),
    "ankle": ((0.0, 0.0, 1.0), (("x", 15.0), ("y", 10.0)), (35.0, 25.0), (-20.0, 10.0)),
}


def _tilt(u, toward, deg):
    """Unit vector u turned by ``deg`` degrees towards the direction ``toward``."""
    t = J.as_axis(toward)
    t = t - (t @ u) * u
    t /= np.linalg.norm(t)
    a = radians(deg)
    return np.cos(a) * u + np.sin(a) * t


def ball_joint(name: str, side: str = "l") -> J.Spherical:
    """The limited :class:`~linkdyn.Spherical` joint ``name`` (a key of :data:`BALL_LIMITS_DEG`)
    of the ``side`` ("l" or "r": the mirror image in the sagittal plane, the twist range
    negated and swapped)."""
    if name not in BALL_LIMITS_DEG:
        raise ValueError(f"name: expected one of {sorted(BALL_LIMITS_DEG)}, got {name!r}")
    return limited_ball(BALL_LIMITS_DEG[name], side)


def limited_ball(row, side: str = "l", share: float = 1.0) -> J.Spherical:
    """The :class:`~linkdyn.Spherical` joint of one row in the format of :data:`BALL_LIMITS_DEG`
    (plug axis, cone tilts, swing half-angle(s), twist range; degrees, left side, the figure's
    standing axes) for the ``side`` ("l" or "r", the mirror image).  ``share`` in (0, 1] scales
    every angle (tilts, half-angles, twist bounds): one of ``1 / share`` joints in series that
    share the range of one, e.g. the spine joints of a capture skeleton sharing the waist's
    (:mod:`linkdyn.mocap.figure`).  :func:`ball_joint` is ``limited_ball(BALL_LIMITS_DEG[name], side)``."""
    if side not in ("l", "r"):
        raise ValueError(f"side: expected 'l' or 'r', got {side!r}")
    if not 0.0 < share <= 1.0:
        raise ValueError(f"share: expected a number in (0, 1], got {share!r}")
    plug, tilts, swing, (lo, hi) = row
    plug = J.as_axis(plug)
    cone = plug
    for toward, deg in tilts:
        cone = _tilt(cone, toward, deg * share)
    swing = tuple(radians(x * share) for x in swing) if isinstance(swing, tuple) else radians(swing * share)
    twist = (radians(lo * share), radians(hi * share))
    if side == "r":
        P = np.array([1.0, -1.0, 1.0])
        plug, cone, twist = plug * P, cone * P, (-twist[1], -twist[0])
    return J.Spherical(swing=swing, twist=twist, axis=cone, plug_axis=plug)


def _sex_index(sex) -> int:
    key = str(sex).strip().lower() if isinstance(sex, str) else sex
    if key in ("female", "f"):
        return 0
    if key in ("male", "m"):
        return 1
    raise ValueError(f"sex: expected 'male' or 'female', got {sex!r}")


def _positive(x, what):
    try:
        x = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: expected a number, got {x!r}") from None
    if not np.isfinite(x) or x <= 0:
        raise ValueError(f"{what}: expected a finite positive number, got {x}")
    return x


class DeLevaSegment(NamedTuple):
    """One row of :data:`DE_LEVA_1996` for one sex, as fractions (not percent) and metres."""
    origin: str
    other: str
    length: float        # m, reference subject
    mass: float          # fraction of body mass (normalized so that the whole body sums to 1)
    com: float           # fraction of the length from the origin
    r_sagittal: float    # fraction of the length
    r_transverse: float
    r_longitudinal: float


def de_leva(sex: str = "male") -> dict:
    """De Leva's Table 4 for ``sex`` as :class:`DeLevaSegment` rows (fractions, metres), masses
    normalized to sum to 1 over the whole body (the 10 segments, the limbs counted twice)."""
    k = _sex_index(sex)
    total = sum(row[3][k] * (2 if name in _BILATERAL else 1) for name, row in DE_LEVA_1996.items())
    return {name: DeLevaSegment(o, e, L[k] / 1000.0, m[k] / total, c[k] / 100.0, rs[k] / 100.0, rt[k] / 100.0,
                                rl[k] / 100.0)
            for name, (o, e, L, m, c, rs, rt, rl) in DE_LEVA_1996.items()}


# ------------------------------------------------------------------------------------------------
def dimensions(height: float = 1.75, sex: str = "male") -> dict:
    """Lengths (m) of the figure standing, for ``height`` and ``sex``: segment lengths, widths and
    the heights above the sole of the landmarks (``"ankle"``, ``"knee"``, ``"hip"`` = the pelvis
    origin = ``"pelvis_height"``, ``"waist"`` (omphalion), ``"xiphion"``, ``"neck"``
    (suprasternale), ``"shoulder"``, ``"elbow"``, ``"wrist"``, ``"grip"``, ``"vertex"``)."""
    height = _positive(height, "height")
    t = de_leva(sex)
    s = height / REFERENCE_SUBJECT["male" if _sex_index(sex) else "female"][0]
    d = {f"L_{name}": row.length * s for name, row in t.items()}
    d["ankle"] = ANKLE_HEIGHT * height
    d["knee"] = d["ankle"] + d["L_shank"]
    d["hip"] = d["pelvis_height"] = d["knee"] + d["L_thigh"]
    d["ankle"] = (d["hip"] - d["L_thigh"]) - d["L_shank"]   # = 0.039 H, rounded as the kinematics go down
    d["waist"] = d["hip"] + d["L_lower_trunk"]
    d["xiphion"] = d["waist"] + d["L_middle_trunk"]
    d["neck"] = d["xiphion"] + d["L_upper_trunk"]
    d["L_neck"] = height - d["L_head"] - d["neck"]          # neck joint to mid-gonion: closes the stature
    d["vertex"] = height
    d["shoulder"] = d["neck"] - SHOULDER_DROP * height
    d["elbow"] = d["shoulder"] - d["L_upper_arm"]
    d["wrist"] = d["elbow"] - d["L_forearm"]
    d["grip"] = d["wrist"] - d["L_hand"]
    d["hip_half_width"] = HIP_HALF_WIDTH * height
    d["shoulder_half_width"] = SHOULDER_HALF_WIDTH * height
    d["sternoclavicular_half_width"] = STERNOCLAVICULAR_HALF_WIDTH * height
    d["shoulder_drop"] = SHOULDER_DROP * height
    d["heel"] = -HEEL_BEHIND_ANKLE * d["L_foot"]
    d["toe"] = (1.0 - HEEL_BEHIND_ANKLE) * d["L_foot"]
    return d


class _Part(NamedTuple):
    mass: float
    com: np.ndarray          # (3,) in the frame the part is expressed in
    inertia: np.ndarray      # (3, 3) about com


def combine(parts: Iterable[_Part]) -> _Part:
    """Mass, centre of mass and rotational inertia about it of rigid parts ``(m, c, I_c)`` given in
    one frame (parallel-axis theorem: ``I = sum I_i + m_i (|d_i|^2 1 - d_i d_i^T)``, ``d_i = c_i - c``)."""
    parts = [(float(m), np.asarray(c, dtype=float), np.asarray(I, dtype=float)) for m, c, I in parts]
    m = sum(p[0] for p in parts)
    c = sum(p[0] * p[1] for p in parts) / m
    I = np.zeros((3, 3))
    for mi, ci, Ii in parts:
        dv = ci - c
        I += Ii + mi * (dv @ dv * np.eye(3) - np.outer(dv, dv))
    return _Part(m, c, I)


def _segment(row: DeLevaSegment, body_mass, L, com, axes=(0, 1, 2), share=1.0) -> _Part:
    """A de Leva segment of length ``L`` with its CM at ``com``: inertia ``m (r L)^2`` with the
    sagittal, transverse and longitudinal radii on body axes ``axes``."""
    m = row.mass * body_mass * share
    I = np.zeros(3)
    for ax, r in zip(axes, (row.r_sagittal, row.r_transverse, row.r_longitudinal)):
        I[ax] = m * (r * L) ** 2
    return _Part(m, np.asarray(com, dtype=float), np.diag(I))


def _cylinder(m, a, b) -> _Part:
    """Uniform solid cylinder from point ``a`` to ``b`` of diameter half its length."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    u = b - a
    L = np.linalg.norm(u)
    u /= L
    r = L / 4
    k_long2, k_perp2 = r * r / 2, L * L / 12 + r * r / 4
    return _Part(m, 0.5 * (a + b), m * (k_perp2 * (np.eye(3) - np.outer(u, u)) + k_long2 * np.outer(u, u)))


def _offset(part: _Part, origin) -> _Part:
    """The same part in a parent frame in which the part's frame origin is at ``origin``
    (frames parallel): the centre of mass moves to ``com + origin``."""
    return _Part(part.mass, part.com + np.asarray(origin, dtype=float), part.inertia)


def _parts(mass, height, sex):
    """Every segment of the 40-DoF figure in its own body frame, plus the joint placements."""
    mass = _positive(mass, "mass")
    d = dimensions(height, sex)
    t = de_leva(sex)
    z = np.array([0.0, 0.0, 1.0])
    P = {}
    # pelvis (frame at MIDH): lower trunk, CM 'com' of its length below OMPH
    h_low = d["L_lower_trunk"]
    P["pelvis"] = _segment(t["lower_trunk"], mass, h_low, z * h_low * (1 - t["lower_trunk"].com))
    # torso (frame at OMPH): middle trunk + 90 % of the upper trunk
    h_mid, h_up = d["L_middle_trunk"], d["L_upper_trunk"]
    mid = _segment(t["middle_trunk"], mass, h_mid, z * h_mid * (1 - t["middle_trunk"].com))
    up = _segment(t["upper_trunk"], mass, h_up, z * (h_mid + h_up * (1 - t["upper_trunk"].com)),
                  share=1 - 2 * CLAVICLE_SHARE)
    P["torso"] = combine([mid, up])
    top = h_mid + h_up                                  # suprasternale height in the torso frame
    # head (frame at the neck joint, suprasternale height)
    P["head"] = _segment(t["head"], mass, d["L_head"], z * (d["L_neck"] + d["L_head"] * (1 - t["head"].com)))
    # clavicle (frame at the sternoclavicular joint): sternoclavicular -> shoulder joint
    wsc, ws, drop = d["sternoclavicular_half_width"], d["shoulder_half_width"], d["shoulder_drop"]
    for side, sy in (("l", 1.0), ("r", -1.0)):
        P[f"{side}_clavicle"] = _cylinder(CLAVICLE_SHARE * t["upper_trunk"].mass * mass, [0, 0, 0],
                                          [0, sy * (ws - wsc), -drop])
    for name in _BILATERAL:
        row, L = t[name], d[f"L_{name}"]
        if name == "foot":       # long axis x: longitudinal -> x, sagittal -> z, transverse -> y
            com = [d["heel"] + row.com * L, 0.0, -0.5 * d["ankle"]]
            P[name] = _segment(row, mass, L, com, axes=(2, 1, 0))
        else:                    # hanging down from the proximal joint
            P[name] = _segment(row, mass, L, -z * row.com * L)
    place = {
        "waist": z * d["L_lower_trunk"],
        "neck": z * top,
        "sternoclavicular": lambda sy: np.array([0.0, sy * wsc, top]),
        "shoulder": lambda sy: np.array([0.0, sy * (ws - wsc), -drop]),
        "elbow": -z * d["L_upper_arm"],
        "wrist": -z * d["L_forearm"],
        "hip": lambda sy: np.array([0.0, sy * d["hip_half_width"], 0.0]),
        "knee": -z * d["L_thigh"],
        "ankle": -z * d["L_shank"],
    }
    return P, place, d


def _inertia(part: _Part):
    return _b.Inertia(part.mass, part.com, part.inertia)


#: half the foot's breadth: Drillis and Contini (1966) give the foot breadth as 0.055 of stature
FOOT_HALF_WIDTH = 0.0275
#: friction of the contact points (a rubber sole on a dry floor)
CONTACT_FRICTION = 0.8


def _foot_frames(b, body, side, d, origin, contacts=True):
    """Sole (under the ankle), heel and toe frames on the sole; ``origin``: the ankle in ``body``.
    With ``contacts``, the sole's four corners are contact points ``{side}_sole_{heel,toe}_{in,out}``
    (heel and toe, the foot's breadth apart)."""
    o = np.asarray(origin, dtype=float)
    b.add_frame(f"{side}_sole", body, placement=o + [0.0, 0.0, -d["ankle"]])
    b.add_frame(f"{side}_heel", body, placement=o + [d["heel"], 0.0, -d["ankle"]])
    b.add_frame(f"{side}_toe", body, placement=o + [d["toe"], 0.0, -d["ankle"]])
    if contacts:
        w = FOOT_HALF_WIDTH * d["vertex"]
        sy = 1.0 if side == "l" else -1.0
        for end in ("heel", "toe"):
            for edge, y in (("in", -sy * w), ("out", sy * w)):
                b.add_contact(body, o + [d[end], y, -d["ankle"]], friction=CONTACT_FRICTION,
                              name=f"{side}_sole_{end}_{edge}")


def _body_contacts(b, d, head, head_centre, pelvis, hands, knees):
    """Contact spheres where a fallen or kneeling figure touches the ground: the head, the
    pelvis (buttocks), the hands (at the grip) and the front of the knees.  ``hands``/``knees``:
    (side, body, position) triples."""
    H = d["vertex"]
    b.add_contact(head, head_centre, radius=0.055 * H, friction=CONTACT_FRICTION, name="head_contact")
    b.add_contact(pelvis, [-0.05 * H, 0.0, -0.02 * H], radius=0.06 * H, friction=CONTACT_FRICTION,
                  name="pelvis_contact")
    for side, body, pos in hands:
        b.add_contact(body, pos, radius=0.02 * H, friction=CONTACT_FRICTION, name=f"{side}_hand_contact")
    for side, body, pos in knees:
        b.add_contact(body, pos, radius=0.03 * H, friction=CONTACT_FRICTION, name=f"{side}_knee_contact")


def _base(b, name, part, floating, d):
    if floating:
        b.add_body(name, "world", J.FreeFlyer(), inertia=_inertia(part), joint_name="root_joint")
    else:
        b.add_body(name, "world", J.Fixed(), placement=[0.0, 0.0, d["pelvis_height"]], inertia=_inertia(part),
                   joint_name="root_joint")


def standing_configuration(model: Model) -> NDArray[np.float64]:
    """The configuration in which a figure of this module stands upright on z = 0, facing +x,
    arms hanging: ``neutral`` with, for a floating base, the pelvis raised to its standing
    height (read off the model: the height that puts the soles on the ground)."""
    from ..kinematics import frame_pose
    from ..model.configuration import neutral
    q = neutral(model)
    if model.nbody > 1 and model.jnt_type[1] == J.FREE and model._joint_names[1] == "root_joint":
        q[2] -= frame_pose(model, q, "l_sole")[2, 3]
    return q


def human_figure(mass: float = 70.0, height: float = 1.75, sex: str = "male", floating: bool = True,
                 name: str = "human", contacts: bool = True) -> Model:
    """The 40-DoF human figure of Nakamura and Yamane 2000 Fig. 13: 17 links, 12 spherical + 4 revolute joints.

    Bodies (joint -> body): ``root_joint`` (free, or welded with ``floating=False``) -> ``pelvis``;
    ``waist`` -> ``torso``; ``neck`` -> ``head``; ``{l,r}_sternoclavicular`` -> ``{l,r}_clavicle``;
    ``{l,r}_shoulder`` -> ``{l,r}_upper_arm``; ``{l,r}_elbow`` (revolute) -> ``{l,r}_forearm``;
    ``{l,r}_wrist`` -> ``{l,r}_hand``; ``{l,r}_hip`` -> ``{l,r}_thigh``; ``{l,r}_knee`` (revolute) ->
    ``{l,r}_shank``; ``{l,r}_ankle`` -> ``{l,r}_foot``.  All other joints are quaternion
    :class:`~linkdyn.Spherical` ones: ``nv = 40`` (+6 floating), ``nq = 12 * 4 + 4 = 52`` (+7).
    Every joint has anatomical limits (module docstring, "Joint limits").

    Frames: ``{l,r}_grip`` (the hand's end, de Leva's MET3 on the hand's long axis: where a closed
    fist holds a bar), ``{l,r}_sole`` (under the ankle, on the sole), ``{l,r}_heel``,
    ``{l,r}_toe``, ``head_top`` (the vertex).

    Contact points (``contacts=True``; they touch the planes a scene adds, e.g. a ground): the
    four corners of each sole (the foot's breadth after Drillis and Contini 1966), spheres at
    the hands, the front of the knees, the pelvis and the head (``model.contacts``).

    ``mass`` (kg) and ``height`` (m) scale de Leva's (1996) male or female table; see the module
    docstring for the table, the trunk split, the clavicles and the proportions.  At
    :func:`standing_configuration` the figure stands on z = 0 facing +x.  ``floating=True``:
    ``q[:3]`` is the pelvis origin's world position (``dimensions()["pelvis_height"]`` above the
    ground when standing), ``q[3:7]`` its orientation quaternion ``[x, y, z, w]``.
    """
    P, place, d = _parts(mass, height, sex)
    b = _b.ModelBuilder(name)
    _base(b, "pelvis", P["pelvis"], floating, d)
    b.add_body("torso", "pelvis", ball_joint("waist"), placement=place["waist"], inertia=_inertia(P["torso"]),
               joint_name="waist")
    b.add_body("head", "torso", ball_joint("neck"), placement=place["neck"], inertia=_inertia(P["head"]),
               joint_name="neck")
    b.add_frame("head_top", "head", placement=[0.0, 0.0, d["L_neck"] + d["L_head"]])
    for side, sy in (("l", 1.0), ("r", -1.0)):
        b.add_body(f"{side}_clavicle", "torso", ball_joint("sternoclavicular", side),
                   placement=place["sternoclavicular"](sy), inertia=_inertia(P[f"{side}_clavicle"]),
                   joint_name=f"{side}_sternoclavicular")
        b.add_body(f"{side}_upper_arm", f"{side}_clavicle", ball_joint("shoulder", side),
                   placement=place["shoulder"](sy), inertia=_inertia(P["upper_arm"]), joint_name=f"{side}_shoulder")
        b.add_body(f"{side}_forearm", f"{side}_upper_arm", J.Revolute("-y"), placement=place["elbow"],
                   inertia=_inertia(P["forearm"]), joint_name=f"{side}_elbow",
                   lower=[ELBOW_RANGE[0]], upper=[ELBOW_RANGE[1]])
        b.add_body(f"{side}_hand", f"{side}_forearm", ball_joint("wrist", side), placement=place["wrist"],
                   inertia=_inertia(P["hand"]), joint_name=f"{side}_wrist")
        b.add_frame(f"{side}_grip", f"{side}_hand", placement=[0.0, 0.0, -d["L_hand"]])
    for side, sy in (("l", 1.0), ("r", -1.0)):
        b.add_body(f"{side}_thigh", "pelvis", ball_joint("hip", side), placement=place["hip"](sy),
                   inertia=_inertia(P["thigh"]), joint_name=f"{side}_hip")
        b.add_body(f"{side}_shank", f"{side}_thigh", J.Revolute("y"), placement=place["knee"],
                   inertia=_inertia(P["shank"]), joint_name=f"{side}_knee",
                   lower=[KNEE_RANGE[0]], upper=[KNEE_RANGE[1]])
        b.add_body(f"{side}_foot", f"{side}_shank", ball_joint("ankle", side), placement=place["ankle"],
                   inertia=_inertia(P["foot"]), joint_name=f"{side}_ankle")
        _foot_frames(b, f"{side}_foot", side, d, [0.0, 0.0, 0.0], contacts)
    if contacts:
        _body_contacts(b, d, "head", [0.0, 0.0, d["L_neck"] + 0.5 * d["L_head"]], "pelvis",
                       [(s_, f"{s_}_hand", [0.0, 0.0, -d["L_hand"]]) for s_ in "lr"],
                       [(s_, f"{s_}_shank", [0.03 * d["vertex"], 0.0, 0.0]) for s_ in "lr"])
    return b.build()


def _parts_16(mass, height, sex):
    """The 16-DoF figure's segments: the 40-DoF figure's parts merged in the standing pose."""
    P, place, d = _parts(mass, height, sex)
    waist, neck = place["waist"], place["waist"] + place["neck"]
    trunk = [P["pelvis"], _offset(P["torso"], waist), _offset(P["head"], neck)]
    for sy in (1.0, -1.0):
        sc = neck + [0.0, sy * d["sternoclavicular_half_width"], 0.0]
        trunk.append(_offset(P["l_clavicle" if sy > 0 else "r_clavicle"], sc))
    shoulder = lambda sy: neck + [0.0, sy * d["shoulder_half_width"], -d["shoulder_drop"]]   # noqa: E731
    Q = {"trunk": combine(trunk),
         "upper_arm": P["upper_arm"],
         "forearm_hand": combine([P["forearm"], _offset(P["hand"], place["wrist"])]),
         "thigh": P["thigh"],
         "shank_foot": combine([P["shank"], _offset(P["foot"], place["ankle"])])}
    return Q, shoulder, place, d


def human_figure_16(mass: float = 70.0, height: float = 1.75, sex: str = "male", floating: bool = True,
                    name: str = "human16", contacts: bool = True) -> Model:
    """The 16-DoF human figure of Nakamura and Yamane 2000 sec. 5.1 (high bar) and 5.2 (swing): 4 DoF per limb.

    ``root_joint`` (free, or welded) -> ``trunk`` (one rigid segment: de Leva's head, upper, middle
    and lower trunk and the two clavicles of :func:`human_figure`, merged in the standing pose);
    ``{l,r}_shoulder`` (spherical) -> ``{l,r}_upper_arm``; ``{l,r}_elbow`` (revolute, 0-150 deg)
    -> ``{l,r}_forearm_hand`` (forearm and hand as one segment); ``{l,r}_hip`` (spherical) ->
    ``{l,r}_thigh``; ``{l,r}_knee`` (revolute, 0-135 deg) -> ``{l,r}_shank_foot``.
    ``nv = 16`` (+6 floating), ``nq = 4 * 4 + 4 = 20`` (+7).  Shoulders and hips carry the same
    anatomical swing cones and twist ranges as in :func:`human_figure` (module docstring).

    The merged segments' mass properties come from their parts by the parallel-axis theorem
    (:func:`combine`), so at ``q = neutral`` this figure has exactly the mass distribution of
    :func:`human_figure` (same pelvis origin, same standing pose).  Frames: ``{l,r}_grip``,
    ``{l,r}_sole``, ``{l,r}_heel``, ``{l,r}_toe``, ``head_top``.
    """
    Q, shoulder, place, d = _parts_16(mass, height, sex)
    b = _b.ModelBuilder(name)
    _base(b, "trunk", Q["trunk"], floating, d)
    b.add_frame("head_top", "trunk", placement=[0.0, 0.0, d["vertex"] - d["hip"]])
    for side, sy in (("l", 1.0), ("r", -1.0)):
        b.add_body(f"{side}_upper_arm", "trunk", ball_joint("shoulder", side), placement=shoulder(sy),
                   inertia=_inertia(Q["upper_arm"]), joint_name=f"{side}_shoulder")
        b.add_body(f"{side}_forearm_hand", f"{side}_upper_arm", J.Revolute("-y"), placement=place["elbow"],
                   inertia=_inertia(Q["forearm_hand"]), joint_name=f"{side}_elbow",
                   lower=[ELBOW_RANGE[0]], upper=[ELBOW_RANGE[1]])
        b.add_frame(f"{side}_grip", f"{side}_forearm_hand", placement=[0.0, 0.0, -d["L_forearm"] - d["L_hand"]])
    for side, sy in (("l", 1.0), ("r", -1.0)):
        b.add_body(f"{side}_thigh", "trunk", ball_joint("hip", side), placement=place["hip"](sy),
                   inertia=_inertia(Q["thigh"]), joint_name=f"{side}_hip")
        b.add_body(f"{side}_shank_foot", f"{side}_thigh", J.Revolute("y"), placement=place["knee"],
                   inertia=_inertia(Q["shank_foot"]), joint_name=f"{side}_knee",
                   lower=[KNEE_RANGE[0]], upper=[KNEE_RANGE[1]])
        _foot_frames(b, f"{side}_shank_foot", side, d, place["ankle"], contacts)
    if contacts:
        _body_contacts(b, d, "trunk", [0.0, 0.0, d["vertex"] - d["hip"] - 0.5 * d["L_head"]], "trunk",
                       [(s_, f"{s_}_forearm_hand", [0.0, 0.0, -d["L_forearm"] - d["L_hand"]]) for s_ in "lr"],
                       [(s_, f"{s_}_shank_foot", [0.03 * d["vertex"], 0.0, 0.0]) for s_ in "lr"])
    return b.build()


# ------------------------------------------------------------------------------------------------
class SegmentRow(NamedTuple):
    """Mass properties of one body of a model, in its body frame."""
    body: str
    mass: float                  # kg
    com: np.ndarray              # (3,) m, body frame
    inertia: np.ndarray          # (3, 3) kg m^2 about the com, body frame
    principal: np.ndarray        # (3,) principal moments, ascending


def segment_table(model: Model, text: bool = False) -> list[SegmentRow] | str:
    """The mass properties the model actually carries, one :class:`SegmentRow` per body with mass
    (read back from ``model.inertia``; a welded base shows up as the world body).  ``text=True``
    returns a plain-text table instead (mass kg, CM m, principal moments kg m^2)."""
    rows = []
    for i, name in enumerate(model.body_names):
        I6 = np.asarray(model.inertia[i])
        if I6[0, 0] <= 0:
            continue
        m, c, Ic = spatial.inertia_parameters(I6)
        Ic = 0.5 * (Ic + Ic.T)
        rows.append(SegmentRow(name, float(m), np.asarray(c), Ic, np.linalg.eigvalsh(Ic)))
    if not text:
        return rows
    lines = [f"{'body':<16}{'mass':>9}{'com x':>9}{'com y':>9}{'com z':>9}{'I1':>10}{'I2':>10}{'I3':>10}"]
    for r in rows:
        lines.append(f"{r.body:<16}{r.mass:9.3f}" + "".join(f"{x + 0.0:9.4f}" for x in r.com)
                     + "".join(f"{x:10.5f}" for x in r.principal))
    lines.append(f"{'total':<16}{sum(r.mass for r in rows):9.3f}")
    return "\n".join(lines)
