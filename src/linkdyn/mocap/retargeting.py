"""Retargeting a BVH capture onto the 40-DoF figure :func:`linkdyn.models.human_figure`, and
writing a motion of that figure as BVH.

The capture's skeleton and the figure have different bones, rest poses and joint frames: a
BVH joint frame is wherever the exporter put it (CMU's T-pose has every frame aligned with the
file's axes while the figure stands; LAFAN1's rest pose lies along x), the figure's body frames
are parallel to the world when it stands (x forward, y to its left, z up).  The retargeting
therefore works on rotations, in three steps.

1. **Which BVH joint moves which body** (:func:`match_joints`), by name (CMU, LAFAN1/bvhtools,
   Mixamo-style names, through :func:`linkdyn.mocap.figure.classify` and
   :func:`~linkdyn.mocap.figure.side_of`) and structure: ``pelvis`` <- the root;
   ``{l,r}_thigh``, ``_shank``, ``_foot`` <- the first thigh, shank and foot joint of that side
   (a toe joint rides on the foot); ``{l,r}_upper_arm``, ``_forearm``, ``_hand`` likewise;
   ``{l,r}_clavicle`` <- a shoulder/collar/clavicle joint if there is one (else it rides on the
   torso); ``torso`` <- the deepest trunk joint that carries both arms (spine joints below it
   are merged into the figure's waist); ``head`` <- the head joint (a neck joint is merged into
   the figure's neck).
2. **A calibration** per body: a constant rotation K_b such that the body's world orientation
   is F_b(t) = W_b(t) K_b, W_b(t) the world orientation (Z-up) of its BVH joint.  K_b comes
   from one *reference pose* in which both the capture and the figure are known: the figure
   stands facing the capture's heading, and each limb segment is turned so that its long axis
   (hip -> knee, knee -> ankle, shoulder -> elbow, elbow -> wrist, wrist -> hand end,
   sternoclavicular -> shoulder, neck -> head end) points where the capture's does.  The
   thigh's, shank's, upper arm's and forearm's twist about that axis is fixed by the knee's or
   elbow's hinge axis, taken from the clip (:func:`hinge_axis`: the principal axis of the
   capture's knee or elbow rotations), or from the plane of the limb at the reference pose
   when bent there by more than 25 deg, else by the parent's lateral axis (its forward axis
   for a limb along it, the arms of a T-pose); pelvis, torso and feet take the capture's
   heading (from the hips, the shoulders and heel to toe) with z up; the hand takes the
   capture's wrist rotation relative to the forearm as it is (the capture's zero wrist
   rotation is the figure's), then, when the rest pose does not stand, is turned about its own
   axis so that the clip's median pronation is the middle of the figure's range
   (``centre_wrists``; a skeleton without fingers says nothing of where the palm faces).  The
   reference pose is the BVH rest pose when it stands (the hips above the ankles, as CMU's
   T-pose), else the frame of the clip that stands straightest (both knees straight, the trunk
   upright, both feet level: LAFAN1).
3. **Joint coordinates and limits.**  Each joint's rotation is L = F_parent^T F_child (the
   figure's joint placements carry no rotation).  A ball joint takes L as its quaternion, then
   :func:`linkdyn.contact.swing_twist.project_inside` moves it into the joint's anatomical
   swing cone and twist range (Baerlocher and Boulic 2001; the limits of
   :data:`linkdyn.models.human.BALL_LIMITS_DEG`); the knee and elbow hinges take the twist of
   L about their axis (the swing-twist decomposition; what the hinge cannot express is
   reported as ``off_axis``), clamped to their ranges.  ``clip`` is how far (deg) the limits
   moved each joint at each frame: the angle of the rotation between L (or the hinge angle)
   before and after.  The root's orientation is the pelvis's; its position is the capture's
   mid-hip point (the mean of the two hip joints, the figure's pelvis origin) scaled by the
   ratio of the legs' lengths (hip joint to the sole, standing: thigh + shank + ankle height;
   the figure's over the capture's), about the ground, so that a shorter figure takes shorter
   steps and keeps its feet on the floor.

The round trip is exact: :func:`figure_skeleton` writes a motion of ``human_figure()`` as a
BVH skeleton (CMU joint names, centimetres, Y up, the figure's neutral standing pose as the
rest pose, end sites at the head top, the grips and the toes), and retargeting that file gives
the motion back to rounding wherever it is inside the limits (``tests/test_mocap_retarget.py``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.spatial.transform import Rotation

from .. import model as _m
from ..contact.swing_twist import project_inside
from ..kinematics import forward_kinematics
from ..model import joints as J
from .bvh import MocapError, Skeleton, detect_scale, read_skeleton, write_skeleton
from .figure import Y_UP_TO_Z_UP, classify, side_of

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .capture import Capture

#: the figure's bodies and the BVH names :func:`figure_skeleton` gives them (CMU's naming)
BVH_NAMES = {"pelvis": "Hips", "torso": "Spine", "head": "Head",
             "l_clavicle": "LeftShoulder", "l_upper_arm": "LeftArm", "l_forearm": "LeftForeArm", "l_hand": "LeftHand",
             "r_clavicle": "RightShoulder", "r_upper_arm": "RightArm", "r_forearm": "RightForeArm",
             "r_hand": "RightHand", "l_thigh": "LeftUpLeg", "l_shank": "LeftLeg", "l_foot": "LeftFoot",
             "r_thigh": "RightUpLeg", "r_shank": "RightLeg", "r_foot": "RightFoot"}
#: end sites of :func:`figure_skeleton`: body -> the figure's frame at the segment's end
END_FRAMES = {"head": "head_top", "l_hand": "l_grip", "r_hand": "r_grip", "l_foot": "l_toe", "r_foot": "r_toe"}
#: a limb bent by more than this at the reference pose takes its twist from the limb's plane (deg)
BENT_DEG = 25.0

_LIMB = {"thigh": "thigh", "shank": "shank", "foot": "foot", "upper_arm": "upper_arm", "forearm": "forearm",
         "hand": "hand", "clavicle": "clavicle"}
_C = Y_UP_TO_Z_UP


def _unit(x, axis=-1):
    n = np.linalg.norm(x, axis=axis, keepdims=True)
    return x / np.where(n > 0, n, 1.0)


def _frame(u, r):
    """The rotation whose first column is u and whose second is r made perpendicular to u."""
    u = _unit(np.asarray(u, float))
    n = np.asarray(r, float) - (np.asarray(r, float) @ u) * u
    n = _unit(n)
    return np.column_stack([u, n, np.cross(u, n)])


# ------------------------------------------------------------------------------ joint matching
def match_joints(sk: Skeleton) -> dict[str, int]:
    """{figure body: BVH joint index} for the bodies the skeleton has (module docstring, step 1).
    Raises :class:`MocapError` naming the segments it cannot find (legs, arms and head are needed)."""
    names, parents = sk.names, sk.parents
    cls = [classify(n, p < 0) for n, p in zip(names, parents)]
    sides = [side_of(n) for n in names]
    out: dict[str, int] = {"pelvis": 0}
    for j, ((seg, w), s) in enumerate(zip(cls, sides)):
        if seg in _LIMB and s is not None and w == 1.0:
            key = f"{s}_{_LIMB[seg]}"
            out.setdefault(key, j)                          # the first in depth order
        if seg == "head" and w == 1.0:
            out.setdefault("head", j)
    if "head" not in out:                                   # a neck without a head
        necks = [j for j, (seg, w) in enumerate(cls) if seg == "head"]
        if necks:
            out["head"] = necks[-1]

    ancestors = sk.ancestors
    missing = [b for b in ("l_thigh", "l_shank", "l_foot", "r_thigh", "r_shank", "r_foot", "l_upper_arm",
                           "l_forearm", "r_upper_arm", "r_forearm", "head") if b not in out]
    if missing:
        raise MocapError(f"{sk.path}: cannot retarget onto human_figure(): no BVH joint found for {missing} "
                         f"(joints: {names})")
    # the torso: the deepest joint that is an ancestor of both upper arms and of the head
    common = set(ancestors(out["l_upper_arm"])) & set(ancestors(out["r_upper_arm"])) & set(ancestors(out["head"]))
    for b in ("l_clavicle", "r_clavicle", "l_upper_arm", "r_upper_arm", "head"):
        common.discard(out.get(b, -1))
    cand = [j for j in common if cls[j][0] in ("trunk", "lower_trunk", "head") or parents[j] < 0]
    torso = max(cand, key=lambda j: len(ancestors(j))) if cand else 0
    out["torso"] = torso
    return out


# ------------------------------------------------------------------------------ keypoints
def _chain(sk, j, limit=None):
    """Joint j and every joint below it (stopping at ``limit`` joints, which are excluded)."""
    limit = set() if limit is None else set(limit)
    out, stack = [], [j]
    while stack:
        k = stack.pop()
        out.append(k)
        stack += [c for c in sk.children[k] if c not in limit]
    return out


def _end_point(sk, j, P, R, stop):
    """The point of joint j's segment farthest from its origin (its own end sites and the
    joints below it that no other mapped body takes), per frame (F, 3), file units."""
    chain = _chain(sk, j, stop)
    cands = [P[:, k] for k in chain if k != j]
    cands += [P[:, k] + R[:, k] @ e for k in chain for e in sk.end_sites[k]]
    if not cands:
        return P[:, j].copy()
    C = np.stack(cands, axis=1)
    d = np.linalg.norm(C - P[:, j, None], axis=2).mean(axis=0)
    return C[:, int(np.argmax(d))]


@dataclass
class _Keys:
    """World keypoints (F, 3) in metres, Z up, of the figure's segments (one pose or many)."""
    hip: dict
    knee: dict
    ankle: dict
    toe: dict
    shoulder: dict
    elbow: dict
    wrist: dict
    hand_end: dict
    sc: dict            # sternoclavicular joint (the clavicle's origin), or None
    neck: NDArray       # the head's origin
    head_end: NDArray


def _bvh_keys(sk, match, P, R, scale):
    """Keypoints of the capture from its joint positions P (F, J, 3) and rotations (file units)."""
    stop = set(match.values())
    w = lambda x: scale * x @ _C.T                      # noqa: E731 - file -> world, metres
    k = {f: {} for f in ("hip", "knee", "ankle", "toe", "shoulder", "elbow", "wrist", "hand_end", "sc")}
    for s in "lr":
        k["hip"][s] = w(P[:, match[f"{s}_thigh"]])
        k["knee"][s] = w(P[:, match[f"{s}_shank"]])
        k["ankle"][s] = w(P[:, match[f"{s}_foot"]])
        k["toe"][s] = w(_end_point(sk, match[f"{s}_foot"], P, R, stop - {match[f"{s}_foot"]}))
        k["shoulder"][s] = w(P[:, match[f"{s}_upper_arm"]])
        k["elbow"][s] = w(P[:, match[f"{s}_forearm"]])
        hand = match.get(f"{s}_hand")
        k["wrist"][s] = w(P[:, hand]) if hand is not None else w(_end_point(sk, match[f"{s}_forearm"], P, R, stop))
        k["hand_end"][s] = w(_end_point(sk, hand, P, R, stop - {hand})) if hand is not None else k["wrist"][s]
        cl = match.get(f"{s}_clavicle")
        k["sc"][s] = w(P[:, cl]) if cl is not None else None
    hd = match["head"]
    neck = w(P[:, hd])
    end = w(_end_point(sk, hd, P, R, stop - {hd}))
    if np.linalg.norm(end - neck, axis=-1).max() < 1e-3 and sk.parents[hd] >= 0:   # no head end: neck -> head
        par = w(P[:, sk.parents[hd]])
        end = neck + (neck - par)
    return _Keys(k["hip"], k["knee"], k["ankle"], k["toe"], k["shoulder"], k["elbow"], k["wrist"], k["hand_end"],
                 k["sc"], neck, end)


def _figure_keys(model, q):
    kin = forward_kinematics(model, q[None])
    p = lambda b: kin.p[:, model.body_id(b)]              # noqa: E731
    f = lambda n: kin.pose(n)[:, :3, 3]                   # noqa: E731
    d = {fld: {} for fld in ("hip", "knee", "ankle", "toe", "shoulder", "elbow", "wrist", "hand_end", "sc")}
    for s in "lr":
        d["hip"][s], d["knee"][s], d["ankle"][s] = p(f"{s}_thigh"), p(f"{s}_shank"), p(f"{s}_foot")
        d["toe"][s] = f(f"{s}_toe")
        d["shoulder"][s], d["elbow"][s], d["wrist"][s] = p(f"{s}_upper_arm"), p(f"{s}_forearm"), p(f"{s}_hand")
        d["hand_end"][s], d["sc"][s] = f(f"{s}_grip"), p(f"{s}_clavicle")
    return _Keys(d["hip"], d["knee"], d["ankle"], d["toe"], d["shoulder"], d["elbow"], d["wrist"], d["hand_end"],
                 d["sc"], p("head"), f("head_top"))


def _bend(a, b, c):
    """The angle (rad) between the segments a->b and b->c (0: straight), per frame."""
    u, v = _unit(b - a), _unit(c - b)
    return np.arccos(np.clip(np.einsum("...i,...i->...", u, v), -1.0, 1.0))


# ------------------------------------------------------------------------------ reference pose
_EZ = np.array([0.0, 0.0, 1.0])


def _heading(lateral):
    """The frame x forward (horizontal), y = the given lateral direction made horizontal, z up."""
    y = lateral - (lateral @ _EZ) * _EZ
    y = _unit(y)
    return np.column_stack([np.cross(y, _EZ), y, _EZ])


def hinge_axis(R: NDArray[np.float64], parent: int, child: int, min_deg: float = 10.0) -> NDArray | None:
    """The axis (in the parent joint's frame) about which a BVH joint ``child`` turns relative
    to ``parent`` over the clip (rotations R (T, J, 3, 3) in file axes): the principal direction
    of the relative rotation vectors r(t) (the top eigenvector of sum r r^T), signed so that the
    mean rotation about it is positive (flexion; the figure's knee and elbow ranges start at 0).
    None when the RMS rotation along it is below ``min_deg`` (a limb that hardly bends)."""
    Lr = np.einsum("tji,tjk->tik", R[:, parent], R[:, child])
    r = Rotation.from_matrix(Lr).as_rotvec()
    w, V = np.linalg.eigh(r.T @ r / len(r))
    a = V[:, -1]
    if np.sqrt(w[-1]) < np.radians(min_deg):
        return None
    return a if np.mean(r @ a) >= 0 else -a


def _reference_frames(keys: _Keys, fig: _Keys, k: int, sc_present: dict, hinges: dict) -> dict[str, NDArray]:
    """Each figure body's world orientation in the reference pose (frame k of ``keys``): the
    figure standing at the capture's heading, its limbs along the capture's (module docstring)."""
    g = lambda x: x[k]                                    # noqa: E731
    f0 = lambda x: x[0]                                   # noqa: E731
    F = {}
    F["pelvis"] = _heading(g(keys.hip["l"]) - g(keys.hip["r"]))
    F["torso"] = _heading(g(keys.shoulder["l"]) - g(keys.shoulder["r"]))
    F["head"] = None
    bent = np.radians(BENT_DEG)

    def limb(name, a, b, fa, fb, parent, hinge=None, hinge_fig=None, sign=1.0):
        """Orientation of a limb segment a->b whose figure segment is fa->fb (neutral pose)."""
        u, uf = g(b) - g(a), f0(fb) - f0(fa)
        if np.linalg.norm(u) < 1e-9:
            u = F[parent] @ _unit(uf)                     # no length: along the parent's axis
        Pp = F[parent]
        if hinge is not None and hinge[2] is not None:           # the knee's or elbow's axis fit over the clip
            r, rf = hinge[2], sign * np.array([0.0, 1.0, 0.0])
        elif hinge is not None and hinge[0] > bent:             # the limb's plane at the reference pose
            r, rf = hinge[1], sign * np.array([0.0, 1.0, 0.0])
        else:
            r, rf = Pp[:, 1], np.array([0.0, 1.0, 0.0])
            if abs(_unit(u) @ r) > 0.9:                  # along the lateral axis (a T-pose arm)
                r, rf = Pp[:, 0], np.array([1.0, 0.0, 0.0])
        F[name] = _frame(u, r) @ _frame(uf, rf).T

    for s in "lr":
        hip, knee, ankle = g(keys.hip[s]), g(keys.knee[s]), g(keys.ankle[s])
        nk = np.cross(knee - hip, ankle - knee)
        ang = float(_bend(hip, knee, ankle))
        hk = hinges.get(f"{s}_knee")
        limb(f"{s}_thigh", keys.hip[s], keys.knee[s], fig.hip[s], fig.knee[s], "pelvis", (ang, nk, hk))
        limb(f"{s}_shank", keys.knee[s], keys.ankle[s], fig.knee[s], fig.ankle[s], f"{s}_thigh", (ang, nk, hk))
        F[f"{s}_foot"] = _heading(np.cross(_EZ, g(keys.toe[s]) - g(keys.ankle[s]))) @ \
            _heading(np.cross(_EZ, f0(fig.toe[s]) - f0(fig.ankle[s]))).T
        if sc_present[s]:
            limb(f"{s}_clavicle", keys.sc[s], keys.shoulder[s], fig.sc[s], fig.shoulder[s], "torso")
        else:
            F[f"{s}_clavicle"] = F["torso"]
        sh, el, wr = g(keys.shoulder[s]), g(keys.elbow[s]), g(keys.wrist[s])
        ne = np.cross(el - sh, wr - el)
        ang = float(_bend(sh, el, wr))
        he = hinges.get(f"{s}_elbow")
        limb(f"{s}_upper_arm", keys.shoulder[s], keys.elbow[s], fig.shoulder[s], fig.elbow[s], f"{s}_clavicle",
             (ang, ne, he), sign=-1.0)
        limb(f"{s}_forearm", keys.elbow[s], keys.wrist[s], fig.elbow[s], fig.wrist[s], f"{s}_upper_arm",
             (ang, ne, he), sign=-1.0)
        limb(f"{s}_hand", keys.wrist[s], keys.hand_end[s], fig.wrist[s], fig.hand_end[s], f"{s}_forearm")
    limb("head", keys.neck, keys.head_end, fig.neck, fig.head_end, "torso")
    return F


def _rest_stands(keys: _Keys) -> bool:
    """Does a pose (keys of one frame) stand: each hip above its ankle within 30 deg of vertical,
    the head above the hips?"""
    ok = True
    for s in "lr":
        d = _unit(keys.hip[s][0] - keys.ankle[s][0])
        ok &= d @ _EZ > np.cos(np.radians(30))
    return bool(ok and keys.head_end[0, 2] > keys.hip["l"][0, 2])


def _straightest(keys: _Keys, leg: float) -> int:
    """The frame that stands straightest: knees straight, trunk upright, feet level."""
    score = np.zeros(len(keys.neck))
    for s in "lr":
        score += _bend(keys.hip[s], keys.knee[s], keys.ankle[s])
    mid = 0.5 * (keys.hip["l"] + keys.hip["r"])
    sh = 0.5 * (keys.shoulder["l"] + keys.shoulder["r"])
    score += np.arccos(np.clip(_unit(sh - mid) @ _EZ, -1, 1))
    score += 5.0 * np.abs(keys.ankle["l"][:, 2] - keys.ankle["r"][:, 2]) / leg
    return int(np.argmin(score))


# ------------------------------------------------------------------------------ the result
@dataclass
class Retargeted:
    """A capture on :func:`linkdyn.models.human_figure`: ``model``, ``t`` (T,), ``q`` (T, nq)
    inside the joint limits; ``q_unlimited`` (T, nq) the same before the limits;
    ``joint_names`` (the figure's joints but the root); ``clip`` (T, njoints) how far (deg) the
    limits moved each joint; ``off_axis`` (T, njoints) the rotation (deg) the knee and elbow
    hinges cannot take (zero for the ball joints); ``match`` {figure body: BVH joint name};
    ``reference`` the frame (or "rest") the calibration used; ``leg_scale`` the figure's leg
    over the capture's; ``ground`` (m, world z of the capture's floor); ``wrist_shift``
    {wrist: deg} the turn of each hand about its axis (``centre_wrists`` of :func:`retarget`)."""
    model: _m.Model
    t: NDArray[np.float64]
    q: NDArray[np.float64]
    q_unlimited: NDArray[np.float64]
    joint_names: list[str]
    clip: NDArray[np.float64]
    off_axis: NDArray[np.float64]
    match: dict[str, str]
    reference: int | str
    leg_scale: float
    ground: float
    wrist_shift: dict

    @property
    def clip_rms(self) -> NDArray[np.float64]:
        """(njoints,) RMS over the clip of ``clip`` (deg)."""
        return np.sqrt(np.mean(self.clip ** 2, axis=0))

    @property
    def clip_max(self) -> NDArray[np.float64]:
        return self.clip.max(axis=0)

    @property
    def clipped_fraction(self) -> NDArray[np.float64]:
        """(njoints,) the fraction of frames in which the limits moved the joint by more than 0.1 deg."""
        return np.mean(self.clip > 0.1, axis=0)

    def summary(self) -> str:
        """A table: each joint's BVH source, the share of frames clipped, RMS and largest clip, off-axis RMS."""
        rows = [f"retargeted {len(self.t)} frames onto {self.model.name!r} (reference pose: {self.reference}, "
                f"leg scale {self.leg_scale:.3f})",
                f"{'joint':<20} {'clipped':>8} {'rms deg':>8} {'max deg':>8} {'off-axis':>9}"]
        if self.wrist_shift:
            rows.insert(1, "hands turned about their axes (centre_wrists): "
                        + ", ".join(f"{k} {v:+.1f} deg" for k, v in self.wrist_shift.items()))
        oa = np.sqrt(np.mean(self.off_axis ** 2, axis=0))
        for i, n in enumerate(self.joint_names):
            rows.append(f"{n:<20} {100 * self.clipped_fraction[i]:7.1f}% {self.clip_rms[i]:8.2f} "
                        f"{self.clip_max[i]:8.2f} {oa[i]:9.2f}")
        return "\n".join(rows)


def _source(source, scale, ground):
    """(skeleton, scale, ground) from a Capture or a BVH path."""
    if hasattr(source, "skeleton") and hasattr(source, "scale"):      # a Capture (not imported: capture -> figure -> here)
        sk = source.skeleton
        return sk, (source.scale if scale is None else float(scale)), (source.ground if ground is None else ground)
    if isinstance(source, Skeleton):
        sk = source
    elif isinstance(source, (str, os.PathLike)):
        sk = read_skeleton(source)
    else:
        raise TypeError(f"source: expected a BVH path, a linkdyn.mocap.Capture or a Skeleton, got "
                        f"{type(source).__name__}")
    if scale is None:
        scale, _ = detect_scale(sk)
    return sk, float(scale), ("auto" if ground is None else ground)


def retarget(source: str | os.PathLike[str] | Skeleton | Capture, figure: _m.Model | None = None, *, reference: int | str = "auto", scale: float | None = None,
             ground: float | str | None = None, fit_hinges: bool = True,
             centre_wrists: bool | None = None) -> Retargeted:
    """Retarget a capture onto the 40-DoF figure (module docstring).

    ``source``: a BVH path, a :class:`~linkdyn.mocap.Capture` (its file content, unit scale
    and ground are used; its smoothing is not: the retargeting reads the file's rotations) or a
    :class:`~linkdyn.mocap.Skeleton`.  ``figure``: a floating :func:`linkdyn.models.human_figure`
    (default: 70 kg, 1.75 m, male).  ``reference``: ``"auto"`` (the rest pose if it stands,
    else the frame that stands straightest), ``"rest"`` or a frame index: the pose in which the
    capture is matched to the standing figure.  ``scale``: metres per file unit (default: the
    capture's, or detected).  ``ground``: the floor's height in metres (world z after the unit
    and axis change), or ``"auto"``: the 2nd percentile over the clip of the feet's lowest point.
    ``fit_hinges``: take the knees' and elbows' axes from the clip (:func:`hinge_axis`; False:
    from the limbs' planes or their parents' lateral axes at the reference pose).
    ``centre_wrists``: turn each hand about its own axis so that the capture's median wrist
    twist (pronation) over the clip is the middle of the figure's twist range (70 deg of
    pronation: a relaxed hand, palm towards the thigh).  A skeleton without fingers says
    nothing of where the palm faces, and a rest pose that does not stand gives no anatomical
    zero; default (None): only when the reference is not the rest pose (LAFAN1), whose zero
    wrist rotation would otherwise be taken as the figure's.  ``.wrist_shift`` records the turn."""
    from ..models.human import human_figure, standing_configuration
    sk, scale, ground = _source(source, scale, ground)
    model = human_figure() if figure is None else figure
    need = set(BVH_NAMES) | {"root_joint"}
    have = set(model.body_names) | set(model.joint_names)
    if not need <= have or model.joints[model.joint_id("root_joint")].kind != J.FREE:
        raise ValueError("figure: expected a floating linkdyn.models.human_figure() (bodies "
                         f"{sorted(BVH_NAMES)} and a free root_joint)")
    match = match_joints(sk)
    T = sk.frames
    P, R, _ = sk.world_positions()
    keys = _bvh_keys(sk, match, P, R, scale)
    q0 = standing_configuration(model)
    fig = _figure_keys(model, q0)
    leg_f = float(q0[2]) if np.isfinite(q0[2]) else 1.0              # hip joints above the sole, standing
    sc_present = {s: f"{s}_clavicle" in match for s in "lr"}
    # the reference pose: the rest pose if it stands, else the straightest frame of the clip
    Pr, Er = sk.rest_positions()
    Rr = np.broadcast_to(np.eye(3), (1, len(sk.names), 3, 3))
    rest_keys = _bvh_keys(sk, match, Pr[None], Rr, scale)
    if reference == "auto":
        reference = "rest" if _rest_stands(rest_keys) else None
    if reference == "rest":
        rk, kref, Wref = rest_keys, 0, np.broadcast_to(_C, (len(sk.names), 3, 3))
    else:
        thigh = np.mean([np.linalg.norm(keys.knee[s] - keys.hip[s], axis=1).mean() for s in "lr"])
        kref = _straightest(keys, 2 * thigh) if reference is None else int(reference)
        if not 0 <= kref < T:
            raise ValueError(f"reference: expected 'auto', 'rest' or a frame index in [0, {T}), got {reference!r}")
        reference = kref
        rk, Wref = keys, _C @ R[kref]
    # the knee and elbow hinge axes, fit over the clip, in the world at the reference pose
    hinges = {}
    for s, a, b, hinge in [(s, f"{s}_{a}", f"{s}_{b}", f"{s}_{h}") for s in "lr"
                           for a, b, h in (("thigh", "shank", "knee"), ("upper_arm", "forearm", "elbow"))]:
        ax = hinge_axis(R, match[a], match[b]) if fit_hinges else None
        hinges[hinge] = None if ax is None else Wref[match[a]] @ ax
    Fref = _reference_frames(rk, fig, kref, sc_present, hinges)
    for s in "lr":          # the hand: the capture's zero wrist rotation is the figure's
        if f"{s}_hand" in match:
            h, f = match[f"{s}_hand"], match[f"{s}_forearm"]
            Fref[f"{s}_hand"] = Wref[h] @ Wref[f].T @ Fref[f"{s}_forearm"]
    # the capture's leg: thigh + shank + the ankle's height above the foot's lowest point, in the reference pose
    legs = []
    for s in "lr":
        foot = _chain(sk, match[f"{s}_foot"])
        if reference == "rest":
            pts = [Pr[k] for k in foot] + [Pr[k] + e for k in foot for e in sk.end_sites[k]]
            low = scale * min((_C @ p)[2] for p in pts)
        else:
            pts = [P[kref, k] for k in foot] + [P[kref, k] + R[kref, k] @ e for k in foot for e in sk.end_sites[k]]
            low = scale * min((_C @ p)[2] for p in pts)
        a = rk.ankle[s][kref]
        legs.append(np.linalg.norm(rk.knee[s][kref] - rk.hip[s][kref]) + np.linalg.norm(a - rk.knee[s][kref])
                    + (a[2] - low))
    leg_scale = leg_f / float(np.mean(legs))
    if isinstance(ground, str):
        if ground != "auto":
            raise ValueError(f"ground: expected a height in metres or 'auto', got {ground!r}")
        lows = []
        for s in "lr":
            foot = _chain(sk, match[f"{s}_foot"])
            pts = [P[:, k] for k in foot] + [P[:, k] + R[:, k] @ e for k in foot for e in sk.end_sites[k]]
            lows.append(scale * np.min(np.stack(pts, 1)[..., 1], axis=1))
        ground = float(np.percentile(np.minimum(*lows), 2))
    ground = float(ground)
    # every body's world orientation F_b(t) = W_b(t) K_b, K_b = W_b(ref)^T F_b(ref)
    carrier = {b: match.get(b, match["torso"]) for b in BVH_NAMES}
    F = {}
    for b, j in carrier.items():
        K = Wref[j].T @ Fref[b]
        F[b] = np.einsum("ij,tjk,kl->til", _C, R[:, j], K)
    if centre_wrists is None:
        centre_wrists = reference != "rest"
    wrist_shift = {}
    if centre_wrists:        # the hand's twist about its axis: unknown without fingers; centred (docstring)
        for s in "lr":
            if f"{s}_hand" not in match:
                continue
            jt = model.joints[model.joint_id(f"{s}_wrist")]
            if getattr(jt, "twist", None) is None:
                continue
            p = np.asarray(jt.plug_axis, float)
            L = np.einsum("tji,tjk->tik", F[f"{s}_forearm"], F[f"{s}_hand"])
            qq = Rotation.from_matrix(L).as_quat()
            tw = 2 * np.arctan2(qq[:, :3] @ p, qq[:, 3])
            tw = (tw + np.pi) % (2 * np.pi) - np.pi
            lo, hi = jt.twist
            delta = 0.5 * (lo + hi) - float(np.median(tw))
            F[f"{s}_hand"] = F[f"{s}_hand"] @ Rotation.from_rotvec(delta * p).as_matrix()
            wrist_shift[f"{s}_wrist"] = float(np.degrees(delta))
    q = np.empty((T, model.nq))
    qu = np.empty((T, model.nq))
    names = [n for n in model.joint_names if n != "root_joint"]
    clip = np.zeros((T, len(names)))
    off = np.zeros((T, len(names)))
    # the root: the pelvis's orientation; the mid-hip point scaled by the legs about the ground
    mid = 0.5 * (keys.hip["l"] + keys.hip["r"])
    mid[:, 2] -= ground
    hips_f = 0.5 * (model.p_tree[model.body_id("l_thigh")] + model.p_tree[model.body_id("r_thigh")])
    pos = leg_scale * mid - F["pelvis"] @ hips_f
    rq = _continuous(Rotation.from_matrix(F["pelvis"]).as_quat())
    q[:, 0:3], q[:, 3:7] = pos, rq
    for i, n in enumerate(names):
        jid = model.joint_id(n)
        child = model.body_names[jid]
        parent = model.body_names[model.parent[jid]]
        L = np.einsum("tji,tjk->tik", F[parent], F[child])
        jt = model.joints[jid]
        sl = model.q_slice(n)
        if jt.kind == J.REVOLUTE:
            axis = np.asarray(model.jnt_axis[jid], float)
            rv = Rotation.from_matrix(L)
            qq = rv.as_quat()
            th = 2 * np.arctan2(qq[:, :3] @ axis, qq[:, 3])
            th = (th + np.pi) % (2 * np.pi) - np.pi
            rest = rv * Rotation.from_rotvec(-th[:, None] * axis)
            off[:, i] = np.degrees(rest.magnitude())
            lo, hi = float(model.lower[sl][0]), float(model.upper[sl][0])
            thc = np.clip(th, lo, hi)
            qu[:, sl], q[:, sl] = th[:, None], thc[:, None]
            clip[:, i] = np.degrees(np.abs(th - thc))
        elif jt.kind == J.SPHERICAL:
            qq = _continuous(Rotation.from_matrix(L).as_quat())
            qu[:, sl] = qq
            if getattr(jt, "limited", False):
                qc = np.array([project_inside(jt, x) for x in qq])
                q[:, sl] = qc
                d = Rotation.from_quat(qq).inv() * Rotation.from_quat(qc)
                clip[:, i] = np.degrees(d.magnitude())
            else:
                q[:, sl] = qq
        else:
            raise ValueError(f"figure: joint {n!r} is neither a ball joint nor a hinge; expected human_figure()")
    qu[:, :7] = q[:, :7]
    t = np.arange(T) * sk.frame_time
    return Retargeted(model, t, q, qu, names, clip, off, {b: sk.names[j] for b, j in match.items()}, reference,
                      leg_scale, ground, wrist_shift)


def _continuous(qs):
    q = qs.copy()
    d = np.einsum("ij,ij->i", q[1:], q[:-1])
    q[1:] *= np.cumprod(np.where(d < 0, -1.0, 1.0))[:, None]
    return q


# ------------------------------------------------------------------------------ figure -> BVH
def figure_skeleton(model: _m.Model, q: NDArray[np.float64], frame_time: float, *, unit: float = 0.01,
                    order: str = "ZXY") -> Skeleton:
    """A motion ``q`` (T, nq) of a floating :func:`linkdyn.models.human_figure` as a BVH
    skeleton: CMU joint names (:data:`BVH_NAMES`), lengths in ``unit`` metres (default cm), Y up
    (linkdyn's world turned back by :data:`~linkdyn.mocap.Y_UP_TO_Z_UP`), the figure's neutral
    standing pose as the rest pose (every BVH joint frame then is the body frame in file axes),
    Euler channels in ``order`` (intrinsic), end sites at ``head_top``, the grips and the toes.
    Write it with :func:`linkdyn.mocap.bvh.write_skeleton` (17 significant digits)."""
    q = np.asarray(q, dtype=float)
    if q.ndim != 2 or q.shape[1] != model.nq:
        raise ValueError(f"q: expected shape (T, {model.nq}), got {q.shape}")
    bodies = [model.body_names[b] for b in range(1, model.nbody)]
    if set(bodies) != set(BVH_NAMES):
        raise ValueError(f"model: expected the bodies of human_figure() ({sorted(BVH_NAMES)}), got {bodies}")
    kin = forward_kinematics(model, q)
    idx = {b: model.body_id(b) for b in bodies}
    names = [BVH_NAMES[b] for b in bodies]
    parents = [-1 if model.parent[idx[b]] == 0 else bodies.index(model.body_names[model.parent[idx[b]]])
               for b in bodies]
    offsets = np.array([_C.T @ model.p_tree[idx[b]] / unit for b in bodies])
    offsets[0] = _C.T @ q[0, :3] / unit
    ends = []
    for b in bodies:
        fr = END_FRAMES.get(b)
        ends.append([_C.T @ model.frame_p[model.frame_id(fr)] / unit] if fr else [])
    angles = np.empty((len(q), len(bodies), 3))
    for j, b in enumerate(bodies):
        Rw = kin.R[:, idx[b]]
        L = Rw if parents[j] < 0 else np.einsum("tji,tjk->tik", kin.R[:, model.parent[idx[b]]], Rw)
        Lf = np.einsum("ji,tjk,kl->til", _C, L, _C)          # C^T L C: the same rotation in file axes
        angles[:, j] = Rotation.from_matrix(Lf).as_euler(order, degrees=True)
    root = (q[:, :3] @ _C) / unit                           # C^T p
    return Skeleton(names, parents, offsets, [order] * len(bodies), ends, angles, root, float(frame_time))


def write_figure_bvh(path: str | os.PathLike[str], model: _m.Model, q: NDArray[np.float64], frame_time: float,
                     **kw) -> None:
    """Write a motion of :func:`linkdyn.models.human_figure` as a BVH file (:func:`figure_skeleton`)."""
    write_skeleton(path, figure_skeleton(model, q, frame_time, **kw))
