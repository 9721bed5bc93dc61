"""Anatomical limits for a capture figure (:func:`anatomical_limits`): each BVH ball joint takes
the swing cone and twist range of the 40-DoF figure's joint it maps to
(:data:`linkdyn.models.human.BALL_LIMITS_DEG`, :data:`linkdyn.mocap.figure.HINGE_LIMITS_DEG`),
re-expressed in the joint's anatomical axes, which are calibrated on the skeleton as
:mod:`linkdyn.mocap.retargeting` calibrates a capture (its own module: the figure's module is
imported by the retargeting, this one imports both)."""
from __future__ import annotations

import numpy as np

from .. import model as _m
from ..models import human as _h
from .bvh import MocapError, Skeleton
from .figure import HINGE_LIMITS_DEG, LIMIT_RULES, Y_UP_TO_Z_UP, FigureLimits, JointLimit, _reframe, classify, side_of


def _calibration(sk: Skeleton, scale: float, reference="auto", fit_hinges: bool = True):
    """(K (J, 3, 3), reference, match): each BVH joint frame's anatomical axes (columns: its
    segment's forward, left, up when the figure stands), found as :mod:`linkdyn.mocap.retargeting`
    calibrates a capture on the 40-DoF figure (its reference pose, limb axes, knee and elbow
    hinge axes fit over the clip); a joint that no body of that figure matches takes the axes
    of the body it rides on (trunk and neck joints the torso's)."""
    from ..models.human import human_figure, standing_configuration
    from . import retargeting as rt
    match = rt.match_joints(sk)
    J = len(sk.names)
    P, R, _ = sk.world_positions()
    keys = rt._bvh_keys(sk, match, P, R, scale)
    fig_model = human_figure()
    fig = rt._figure_keys(fig_model, standing_configuration(fig_model))
    sc_present = {s: f"{s}_clavicle" in match for s in "lr"}
    Pr, _ = sk.rest_positions()
    rest_keys = rt._bvh_keys(sk, match, Pr[None], np.broadcast_to(np.eye(3), (1, J, 3, 3)), scale)
    if reference == "auto":
        reference = "rest" if rt._rest_stands(rest_keys) else None
    if reference == "rest":
        rk, kref, Wref = rest_keys, 0, np.broadcast_to(Y_UP_TO_Z_UP, (J, 3, 3))
    else:
        thigh = np.mean([np.linalg.norm(keys.knee[s] - keys.hip[s], axis=1).mean() for s in "lr"])
        kref = rt._straightest(keys, 2 * thigh) if reference is None else int(reference)
        if not 0 <= kref < sk.frames:
            raise ValueError(f"reference: expected 'auto', 'rest' or a frame index in [0, {sk.frames}), "
                             f"got {reference!r}")
        reference = kref
        rk, Wref = keys, Y_UP_TO_Z_UP @ R[kref]
    # the knees' and elbows' axes fit over the clip, signed as the limb's own axes at the
    # reference pose expect (hinge_axis signs them by the mean rotation, which says nothing
    # for a clip that bends a joint as far both ways)
    F0 = rt._reference_frames(rk, fig, kref, sc_present, {})
    hinges = {}
    for s in "lr":
        for a, b, h, y in (("thigh", "shank", "knee", 1.0), ("upper_arm", "forearm", "elbow", -1.0)):
            ax = rt.hinge_axis(R, match[f"{s}_{a}"], match[f"{s}_{b}"]) if fit_hinges else None
            if ax is not None:
                ax = Wref[match[f"{s}_{a}"]] @ ax
                ax = -ax if ax @ F0[f"{s}_{a}"][:, 1] * y < 0 else ax
            hinges[f"{s}_{h}"] = ax
    Fref = rt._reference_frames(rk, fig, kref, sc_present, hinges)
    for s in "lr":            # the hand: the capture's wrist rotation at the reference pose is zero
        if f"{s}_hand" in match:
            h, f = match[f"{s}_hand"], match[f"{s}_forearm"]
            Fref[f"{s}_hand"] = Wref[h] @ Wref[f].T @ Fref[f"{s}_forearm"]
    body = {j: b for b, j in match.items()}
    carrier: list[str] = []
    for j in range(J):
        seg, _ = classify(sk.names[j], sk.parents[j] < 0)
        if j in body:
            c = body[j]
        elif seg == "lower_trunk":
            c = "pelvis"
        elif seg in ("trunk", "head"):
            c = "torso"
        elif seg == "foot" and f"{side_of(sk.names[j])}_foot" in match:
            c = f"{side_of(sk.names[j])}_foot"
        else:
            c = carrier[sk.parents[j]]
        carrier.append(c)
    K = np.stack([Wref[j].T @ Fref[carrier[j]] for j in range(J)])
    # the foot: flat on the ground (z up) in the rest pose if it stands, else in the frame where
    # its ankle is lowest (mid-stance), heading where the shank faces (the capture's tibial
    # torsion and toe-out count as the ankle's zero twist: the 40-DoF figure has neither)
    for s in "lr":
        jf, jk = match[f"{s}_foot"], match[f"{s}_shank"]
        if reference == "rest":
            Wf, Wk = Wref[jf], Wref[jk]
        else:
            f = int(np.argmin(P[:, jf, 1]))
            Wf, Wk = Y_UP_TO_Z_UP @ R[f, jf], Y_UP_TO_Z_UP @ R[f, jk]
        K[jf] = Wf.T @ rt._heading((Wk @ K[jk])[:, 1])
    return K, reference, match


def anatomical_limits(sk: Skeleton, scale: float, reference="auto", fit_hinges: bool = True,
                      split: bool = False) -> FigureLimits:
    """The anatomical swing cones and twist ranges of a capture skeleton's joints (module
    docstring, "Limits").  ``reference``: ``"auto"`` (the rest pose if it stands, else the
    frame that stands straightest), ``"rest"`` or a frame index; ``fit_hinges``: the knees' and
    elbows' flexion axes from the clip (:func:`linkdyn.mocap.retargeting.hinge_axis`).  A
    skeleton without the legs, arms and head that the calibration needs gets no limits (every
    joint in ``unlimited``, with the reason)."""
    J = len(sk.names)
    try:
        K, reference, match = _calibration(sk, scale, reference, fit_hinges)
    except MocapError as e:
        return FigureLimits({}, {n: f"no anatomical axes ({e})" for n in sk.names[1:]}, None)
    parents = sk.parents

    ancestors = sk.ancestors
    cls = [classify(n, p < 0) for n, p in zip(sk.names, parents)]
    torso, head = match["torso"], match["head"]
    spine = [j for j in ancestors(torso) if j > 0 and cls[j][0] == "trunk"]
    neck = [j for j in ancestors(head) if j not in ancestors(torso) and cls[j][0] in ("head", "trunk")]
    body = {j: b for b, j in match.items()}
    limits, unlimited = {}, {}
    for j in range(1, J):
        name, (seg, _) = sk.names[j], cls[j]
        side, share = "l", 1.0
        if j in body and seg in LIMIT_RULES and body[j].endswith(seg):
            rule, side = LIMIT_RULES[seg], body[j][0]
        elif j in spine:
            rule, share = "waist", 1.0 / len(spine) if split else 1.0
        elif j in neck:
            rule, share = "neck", 1.0 / len(neck) if split else 1.0
        else:
            unlimited[name] = ("a pelvic bone (rigid with the pelvis)" if seg == "lower_trunk" else
                               "finger" if seg == "hand" else "toe" if seg == "foot" else
                               f"no anatomical joint for its class {seg!r} here")
            continue
        row = HINGE_LIMITS_DEG.get(rule) or _h.BALL_LIMITS_DEG[rule]
        anat = _h.limited_ball(row, side, share)
        if rule == "wrist" and reference != "rest":
            # no standing rest pose: where the palm faces is unknown; the twist range is centred
            lo, hi = anat.twist
            anat = _m.Spherical(swing=anat.swing, twist=(0.5 * (lo - hi), 0.5 * (hi - lo)), axis=anat.cone_frame,
                                plug_axis=anat.plug_axis)
        joint, shift = _reframe(anat, K[parents[j]], K[j])
        limits[name] = JointLimit(name, rule, side, share, joint, float(np.degrees(shift)))
    return FigureLimits(limits, unlimited, reference)
