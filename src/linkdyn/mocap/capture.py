"""Captures: BVH to q(t), v(t), a(t) on a figure; contact phases; inverse dynamics with unknown
ground reactions; and BVH out of a simulated motion.

Kinematics
----------
q(t) takes each BVH joint's rotation (``bvh.py``: intrinsic Euler in the channel order) as a
quaternion ``[x, y, z, w]``; the root's position and orientation are turned from the file's
Y-up axes to the Z-up world and its lengths scaled to metres.  v and a follow Pinocchio's
convention: a ball joint's v is its body-frame angular velocity, the free root's v its
body-frame twist [R^T p'; w] and a its time derivative [R^T p'' - w x R^T p'; w'].

* ``cutoff=None``: no smoothing; v and a are the differences of semi-implicit (symplectic)
  Euler, v_k = (q_k (-) q_{k-1}) / h and a_k = (v_{k+1} - v_k) / h (``linkdyn.difference``) for
  the ball joints, and for the free root on R^3 x SO(3) (its origin along a straight line, its
  orientation by the exponential map): v_k = [R_k^T (p_k - p_{k-1}) / h; log(R_{k-1}^T R_k) / h]
  and a_k = [R_k^T (p_{k+1} - 2 p_k + p_{k-1}) / h^2 - w_k x v_lin,k; (w_{k+1} - w_k) / h].  A
  motion made by linkdyn's time stepping (``ld.Simulation(..., contact_method="timestep")``:
  v+ = v + h a with a free joint's linear part the origin's classical acceleration, then the
  origin moved by h R v+, the orientation by R exp(h w+)) is read back exactly: RNEA at
  (q_k, v_k, a_k) gives the simulated torques and contact forces of the step from frame k.
* ``cutoff`` (Hz; default ``"auto"``: chosen per capture by Winter's residual analysis,
  :func:`residual_cutoff`, capped at a quarter of the frame rate): the root's position and each joint's quaternion (made sign-
  continuous) pass a zero-lag 4th-order Butterworth filter (``scipy.signal.sosfiltfilt``, the
  2nd-order filter forwards and backwards, the usual filter of gait kinematics, Winter 2009); the
  quaternions are normalised, and q, v, a are read off a cubic spline of the positions and
  scipy's ``RotationSpline`` of the rotations (a C2 spline on SO(3) whose angular rate and
  acceleration are body-frame vectors), so v and a are the exact derivatives of the smooth q.

Inverse dynamics
----------------
At each frame the contact forces f_i (world frame) on the sole points of the feet in contact
solve the convex QP

    min ||W (w_root - A f)||^2 + eps ||f / (m g)||^2     s.t.  f_z >= 0,  |f_x|, |f_y| <= mu f_z

with w_root the root's rows of RNEA without contacts (the wrench the body needs at the root,
in the root frame), A f the wrench the contact forces give there (rows ``[R^T f; r x R^T f]``),
W scaling forces by body weight and moments by body weight x half the height, and the friction
cone linearised by the pyramid that encloses it.  The residual w_root - A f is what OpenSim's
RRA calls the residual force and moment.  A foot's force is unique when the root's 6 equations
fix it (a single foot down: its total force and centre of pressure); with both feet down the
split between them is what the regulariser picks (the smallest forces), as with any method
that has kinematics alone.  Then tau = RNEA(q, v, a, f_ext) over the clip in one batched call.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray
from scipy.spatial.transform import Rotation

from .. import model as _m
from ..dynamics import rnea
from ..kinematics import forward_kinematics
from ..models.human import _positive   # one check of a positive number for the figures' sizes
from .bvh import MocapError, Skeleton, detect_scale as _detect_scale, read_skeleton, write_skeleton
from .figure import Y_UP_TO_Z_UP, Feet, FigureLimits, build_figure
from .limits import anatomical_limits

#: default filter cut-off of the kinematics: ``"auto"``, chosen for each capture by Winter's
#: residual analysis (:func:`residual_cutoff`); 5.6 Hz on the real 30 Hz walk of docs/mocap.md
DEFAULT_CUTOFF = "auto"
#: the automatic cut-off stays at or below this fraction of the frame rate (near the Nyquist
#: frequency a 2nd-order Butterworth run forwards and backwards no longer smooths: on the
#: simulated landing at 1 kHz, 400 Hz put the summed ground reaction 10 % of body weight off, 300 Hz 1.2 %)
AUTO_CUTOFF_MAX = 0.25
#: the contact-phase thresholds (m, m/s): a foot lands when one of its sole points is below
#: ``HEIGHT_ON`` and slower than ``SPEED_ON``; it lifts when every point is above ``HEIGHT_OFF``
#: or faster than ``SPEED_OFF`` (hysteresis).  4 cm, not 2: on the real 30 Hz capture of
#: docs/mocap.md the standing feet's sole points rest 1-3 cm above the detected ground (the
#: skeleton's foot joints are not its soles), and a 2 cm threshold left 13 % of a walk with no foot
#: down.  The heights are the ceiling of the adaptive defaults (:func:`contact_heights`)
HEIGHT_ON, HEIGHT_OFF, SPEED_ON, SPEED_OFF = 0.04, 0.06, 0.5, 1.0
#: the adaptive landing height is ``REST_MARGIN`` times the height at which the capture's still
#: feet rest (:func:`contact_heights`), and at least ``HEIGHT_MIN`` (m).  3, a margin: any factor
#: from 1.42 keeps the real walk of docs/mocap.md at 4 cm; with 2, 205 of 873 pieces of 1-3 s cut
#: from it got lower heights and 8 of them other phases (11 frames), and the simulated steps with
#: 1 mm of noise a spurious landing.  The floor is for noise-free data (a simulation), whose feet rest on the ground to
#: rounding and so give no scale.  A foot that leaves the ground from rest rises as t^3 (0.46 mm one
#: 30 Hz frame after it leaves): on the simulated steps of docs/mocap.md, read at 30, 50, 60, 100 and
#: 125 Hz from every sampling offset, raw and smoothed, 0.15 mm (0.225 mm to lift) dates every event
#: at its frame or one frame late; 0.12 mm put an event of 3 of the 33 smoothed 30 Hz reads a frame
#: early, 0.18 mm one of 3 of the 16 reads at 125 Hz two frames late
REST_MARGIN, HEIGHT_MIN = 3.0, 1.5e-4
#: the QP's regulariser weight (eps above): small, so the residual is zero wherever forces can make it so
REGULARISATION = 1e-9



@dataclass
class Capture:
    """A capture on its figure: ``model``, times ``t`` (T,), ``q`` (T, nq), ``v``, ``a`` (T, nv),
    ``feet`` (the sole contact points of each foot), ``scale`` (m per file unit), ``cutoff``
    (Hz or None) and ``skeleton`` (the file's content)."""
    model: _m.Model
    t: NDArray[np.float64]
    q: NDArray[np.float64]
    v: NDArray[np.float64]
    a: NDArray[np.float64]
    feet: Feet
    skeleton: Skeleton
    scale: float
    cutoff: float | None
    mass: float
    height: float
    ground: float = 0.0
    #: a filtered motion's :class:`linkdyn.mocap.filter.FilterReport` (None for a capture as read)
    filter: object = field(default=None, repr=False)
    #: the figure's anatomical joint limits (:class:`linkdyn.mocap.figure.FigureLimits`; None: unlimited)
    limits: object = field(default=None, repr=False)
    #: the sole points' (heel, toe, width) of :func:`linkdyn.mocap.figure.build_figure` (default: the
    #: skeleton's heel and toe joints, :data:`linkdyn.models.human.FOOT_HALF_WIDTH`)
    soles: tuple = (0.0, 0.0, 1.0)

    def with_soles(self, soles: tuple[float, float, float]) -> Capture:
        """The same capture (q, v, a, ground, feet's names) on its figure with the feet's sole
        points placed by ``soles`` (heel, toe, width: :func:`linkdyn.mocap.figure.build_figure`,
        measured from the skeleton's own heel and toe joints, not from this capture's soles);
        everything else about the model is kept (joints, limits, inertias)."""
        soles = tuple(float(x) for x in np.asarray(soles, dtype=float).ravel())
        if soles == tuple(self.soles):
            return self
        ref, feet = build_figure(self.skeleton, self.scale, self.mass, self.height, soles=soles)
        if feet.points != self.feet.points:
            raise ValueError(f"soles: the figure's feet {self.feet.points} are not the skeleton's {feet.points} "
                             f"(dynamics_filter: pass soles=None to filter the capture's figure as it is)")
        b = _m.ModelBuilder.from_model(self.model)
        mine = {c.name: c for c in self.model.contacts}
        theirs = {c.name: c for c in ref.contacts}
        for n in (n for pts in feet.points for n in pts):
            if n not in mine or self.model.body_names[mine[n].body] != ref.body_names[theirs[n].body]:
                raise ValueError(f"soles: the figure's sole point {n!r} is missing or on another body "
                                 f"(dynamics_filter: pass soles=None to filter the capture's figure as it is)")
            b.move_contact(n, theirs[n].position)
        return replace(self, model=b.build(), soles=soles, filter=None)

    @property
    def dt(self) -> float:
        """The frame time (s)."""
        return self.skeleton.frame_time

    def __repr__(self):
        return (f"Capture({len(self.t)} frames at {1 / self.dt:g} Hz, {self.model.nbody - 1} bodies, "
                f"feet {self.feet.names}, cutoff {self.cutoff})")


def _continuous(qs):
    """Quaternion series (T, 4) with signs chosen so neighbours are on the same hemisphere."""
    q = qs.copy()
    d = np.einsum("ij,ij->i", q[1:], q[:-1])
    flip = np.cumprod(np.where(d < 0, -1.0, 1.0))
    q[1:] *= flip[:, None]
    return q


def residual_cutoff(x: NDArray[np.float64], fs: float, fmin: float = 1.0) -> float:
    """A low-pass cut-off (Hz) for the signals ``x`` (T, channels) sampled at ``fs`` Hz by
    Winter's residual analysis (Winter 2009, *Biomechanics and Motor Control of Human
    Movement*, 4th ed., section 3.4.4.3, Fig. 3.14): for each channel the RMS residual R(f_c)
    between the raw and the filtered signal (the same zero-lag 2nd-order Butterworth as the
    kinematics) over cut-offs from ``fmin`` to 0.45 fs; above the signal's band R is a
    straight line (noise), whose intercept at 0 Hz estimates the noise's RMS; the channel's
    cut-off is the lowest f_c at which R has come down to it.  The returned cut-off is the
    median over the channels that move, capped at ``AUTO_CUTOFF_MAX * fs``: one cut-off for
    the whole figure, as Kristianslund et al. (2012, J. Biomech. 45(4):666-671) ask of
    kinematics and forces alike.  Noise-free data (a simulation) gets the cap."""
    from scipy.signal import butter, sosfiltfilt
    x = np.asarray(x, dtype=float)
    T = x.shape[0]
    top = 0.45 * fs
    cap = AUTO_CUTOFF_MAX * fs
    if T <= 9 or top <= fmin:
        return cap
    x = x[:, np.ptp(x, axis=0) > 1e-9]
    if x.shape[1] == 0:
        return cap
    fcs = np.linspace(fmin, top, 40)
    R = np.empty((len(fcs), x.shape[1]))
    for i, fc in enumerate(fcs):
        sos = butter(2, fc, fs=fs, output="sos")
        pad = min(T - 1, max(9, int(np.ceil(3 * fs / fc))))
        R[i] = np.sqrt(np.mean((sosfiltfilt(sos, x, axis=0, padlen=pad) - x) ** 2, axis=0))
    hi = fcs >= fcs[0] + 0.6 * (fcs[-1] - fcs[0])         # the noise line: the upper 40 % of the band
    A = np.vstack([fcs[hi], np.ones(hi.sum())]).T
    intercept = np.linalg.lstsq(A, R[hi], rcond=None)[0][1]
    below = R <= np.maximum(intercept, 0.0)[None]
    first = np.where(below.any(axis=0), below.argmax(axis=0), len(fcs) - 1)
    return float(min(np.median(fcs[first]), cap))


def _channels(model, sk, scale):
    """The smoothed signals: the root's position (m, world axes) and every joint's quaternion."""
    rots = sk.rotations()
    rots[0] = Rotation.from_matrix(Y_UP_TO_Z_UP) * rots[0]
    pos = (Y_UP_TO_Z_UP @ (scale * sk.root_position).T).T
    return np.hstack([pos] + [_continuous(r.as_quat()) for r in rots])


def _joint_slices(model, sk):
    return [model.q_slice("root_joint" if p < 0 else n) for n, p in zip(sk.names, sk.parents)], \
           [model.v_slice("root_joint" if p < 0 else n) for n, p in zip(sk.names, sk.parents)]


def kinematics(model: _m.Model, sk: Skeleton, scale: float, ground: float, cutoff: float | None
               ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(q, v, a) of the skeleton's motion on ``model`` (module docstring)."""
    T, h = sk.frames, sk.frame_time
    C = Rotation.from_matrix(Y_UP_TO_Z_UP)
    rots = sk.rotations()
    rots[0] = C * rots[0]
    pos = (Y_UP_TO_Z_UP @ (scale * sk.root_position).T).T
    pos[:, 2] -= ground
    quats = [_continuous(r.as_quat()) for r in rots]
    qs, vs = _joint_slices(model, sk)
    if cutoff is None:
        q = np.empty((T, model.nq))
        q[:, 0:3] = pos
        for j, sl in enumerate(qs):
            q[:, sl.stop - 4:sl.stop] = quats[j]
        if T < 3:
            raise MocapError(f"{sk.path}: {T} frames; differences need at least 3")
        vb = _m.difference(model, q[:-1], q[1:]) / h          # v_{k+1} = (q_{k+1} (-) q_k) / h
        # the root on R^3 x SO(3): v_lin,k = R_k^T (p_k - p_{k-1}) / h (the origin's velocity in
        # the body frame), as linkdyn's time stepping moves a free joint (linkdyn.sim.timestepping)
        R = Rotation.from_quat(q[:, 3:7])
        vb[:, 0:3] = R[1:].inv().apply(np.diff(q[:, 0:3], axis=0)) / h
        v = np.vstack([vb[:1], vb])
        a = np.empty_like(v)
        a[:-1] = (v[1:] - v[:-1]) / h
        # the root: a_lin,k = R_k^T (p_{k+1} - 2 p_k + p_{k-1}) / h^2 - w_k x v_lin,k (the body-frame
        # derivative of the twist, Pinocchio's convention, as the smoothed branch below)
        a[1:-1, 0:3] = R[1:-1].inv().apply(np.diff(q[:, 0:3], 2, axis=0)) / h ** 2 \
            - np.cross(v[1:-1, 3:6], v[1:-1, 0:3])
        a[-1] = a[-2]
        return q, v, a
    fs = 1.0 / h
    cutoff = _positive(cutoff, "cutoff")
    if cutoff >= 0.5 * fs:
        raise ValueError(f"cutoff: {cutoff} Hz is not below the Nyquist frequency {0.5 * fs:g} Hz of the capture")
    from scipy.interpolate import CubicSpline
    from scipy.signal import butter, sosfiltfilt
    from scipy.spatial.transform import RotationSpline
    sos = butter(2, cutoff, fs=fs, output="sos")
    # the ends are padded by an odd extension as long as three of the filter's time constants
    # (scipy's default, 9 samples, is far shorter than a 6 Hz filter's memory at 120 Hz or more)
    pad = min(T - 1, max(9, int(np.ceil(3 * fs / cutoff))))
    if T <= 9:
        raise MocapError(f"{sk.path}: {T} frames are too few to filter; pass cutoff=None")
    t = np.arange(T) * h
    pos = sosfiltfilt(sos, pos, axis=0, padlen=pad)
    ps = CubicSpline(t, pos, axis=0)
    q = np.empty((T, model.nq))
    v = np.empty((T, model.nv))
    a = np.empty((T, model.nv))
    for j, (sl, vl) in enumerate(zip(qs, vs)):
        qf = sosfiltfilt(sos, quats[j], axis=0, padlen=pad)
        qf /= np.linalg.norm(qf, axis=1, keepdims=True)
        spl = RotationSpline(t, Rotation.from_quat(qf))
        q[:, sl.stop - 4:sl.stop] = qf
        w, wd = spl(t, 1), spl(t, 2)
        v[:, vl.stop - 3:vl.stop] = w
        a[:, vl.stop - 3:vl.stop] = wd
        if j == 0:
            Rt = Rotation.from_quat(qf).inv()
            pd, pdd = Rt.apply(ps(t, 1)), Rt.apply(ps(t, 2))
            q[:, 0:3] = pos
            v[:, 0:3] = pd
            a[:, 0:3] = pdd - np.cross(w, pd)
    return q, v, a


def load_bvh(path: str | os.PathLike[str], mass: float = 70.0, height: float | None = None, *,
             scale: float | None = None, cutoff: float | str | None = DEFAULT_CUTOFF, ground: float | str = "auto",
             sex: str = "male", limits: bool | FigureLimits = False,
             soles: tuple[float, float, float] = (0.0, 0.0, 1.0)) -> Capture:
    """Read a BVH capture onto a figure built from its skeleton (:mod:`linkdyn.mocap.figure`).

    ``mass`` (kg) and ``height`` (m; None: the skeleton's own, rest pose) scale de Leva's
    (1996) segment table, its ``sex`` ("male" or "female") columns; ``scale``: metres per file unit (None: m, cm, mm or inches, whichever
    makes the skeleton 0.8-2.5 m tall); ``cutoff``: the kinematics' filter cut-off in Hz,
    ``"auto"`` (default: Winter's residual analysis, :func:`residual_cutoff`; the chosen value
    is ``Capture.cutoff``) or None for none; ``ground``: the floor's height (m, world z after the unit and axis change), or
    ``"auto"``: the 2nd percentile over the clip of the lowest sole point.  Returns a
    :class:`Capture`; a bad file raises :class:`MocapError` naming it.  ``limits``: give the
    figure's ball joints anatomical swing cones and twist ranges
    (:func:`linkdyn.mocap.limits.anatomical_limits`; ``Capture.limits`` lists them, its
    ``summary()`` prints them), or the given :class:`~linkdyn.mocap.figure.FigureLimits` (e.g.
    ``anatomical_limits(capture.skeleton, capture.scale, split=True)``, or with some joints
    taken out of ``.limits``); False (default: the real walk of docs/mocap.md leaves the ankles'
    anatomical range in a third of its frames): every joint unlimited.  ``soles`` (heel, toe,
    width): the feet's sole points moved back / forward by these fractions of the heel-to-toe
    length and widened by ``width`` (:func:`linkdyn.mocap.figure.build_figure`; default the
    skeleton's heel and toe joints; docs/mocap.md measures larger soles on the dynamics filter)."""
    mass = _positive(mass, "mass")
    sk = read_skeleton(path)
    if sk.parents[0] != -1:
        raise MocapError(f"{sk.path}: broken hierarchy: the first joint is not the root")
    s_auto, H = _detect_scale(sk)
    scale = s_auto if scale is None else _positive(scale, "scale")
    height = H * scale if height is None else _positive(height, "height")
    if isinstance(limits, FigureLimits):
        lim = limits
        unknown = sorted(set(lim.limits) - set(sk.names))
        if unknown:
            raise ValueError(f"limits: joints {unknown} are not in {sk.path}")
    elif isinstance(limits, (bool, np.bool_)):
        lim = anatomical_limits(sk, scale) if limits else None
    else:
        raise TypeError(f"limits: expected True, False or a linkdyn.mocap.figure.FigureLimits, got {limits!r}")
    model, feet = build_figure(sk, scale, mass, height, sex=sex, limits=lim, soles=soles)
    if isinstance(ground, str):
        if ground != "auto":
            raise ValueError(f"ground: expected a height in metres or 'auto', got {ground!r}")
        q, _, _ = kinematics(model, sk, scale, 0.0, None)
        z = _sole_points(model, q)[..., 2]
        ground = float(np.percentile(z.min(axis=1), 2)) if z.size else 0.0
    else:
        ground = float(ground)
    if isinstance(cutoff, str):
        if cutoff != "auto":
            raise ValueError(f"cutoff: expected a frequency in Hz, 'auto' or None, got {cutoff!r}")
        if sk.frames <= 9:
            raise MocapError(f"{sk.path}: {sk.frames} frames are too few to filter; pass cutoff=None")
        cutoff = residual_cutoff(_channels(model, sk, scale), 1.0 / sk.frame_time)
    q, v, a = kinematics(model, sk, scale, ground, cutoff)
    t = np.arange(sk.frames) * sk.frame_time
    return Capture(model, t, q, v, a, feet, sk, scale, cutoff, mass, height, ground, limits=lim,
                   soles=tuple(float(x) for x in soles))


def _sole_points(model, q, kin=None):
    """World positions (T, npoints, 3) of the model's contact points."""
    kin = forward_kinematics(model, q) if kin is None else kin
    out = np.empty((q.shape[0], len(model.contacts), 3))
    for i, c in enumerate(model.contacts):
        out[:, i] = kin.p[:, c.body] + np.einsum("tij,j->ti", kin.R[:, c.body], c.position)
    return out


def _foot_points(capture):
    """Per foot: the heights (T, n) and central-difference speeds (T, n) of its sole points."""
    P = _sole_points(capture.model, capture.q)
    names = [c.name for c in capture.model.contacts]
    out = []
    for pts in capture.feet.points:
        Pf = P[:, [names.index(n) for n in pts]]
        vel = np.gradient(Pf, capture.dt, axis=0) if len(Pf) > 1 else np.zeros_like(Pf)
        out.append((Pf[..., 2], np.linalg.norm(vel, axis=2)))
    return out


def rest_height(capture: Capture) -> float:
    """How high the capture's still feet rest above its ground (m): for each foot, over the frames
    in which its slowest sole point is at most as fast as in its median frame (the stiller half of
    the clip: its stance), the 90th percentile of its lowest sole point's height; the larger of the
    feet's.  A capture's own floor: the distance of the skeleton's foot joints from the soles
    (2.8 cm on the real walk of docs/mocap.md), the markers' scatter, the smoothing's ringing
    (2e-6 m on the simulated steps read at 30 Hz with the default smoothing), rounding (below
    1e-15 m on the same read without smoothing)."""
    heights = []
    for z, speed in _foot_points(capture):
        if z.size:
            slowest = speed.min(axis=1)
            heights.append(np.percentile(z.min(axis=1)[slowest <= np.median(slowest)], 90))
    return float(max(heights)) if heights else HEIGHT_ON


def contact_heights(capture: Capture) -> tuple[float, float]:
    """The adaptive default (``height_on``, ``height_off``) of :func:`contact_phases` (m):
    ``height_on = clip(REST_MARGIN * rest_height(capture), HEIGHT_MIN, HEIGHT_ON)`` (three times
    the height at which the capture's still feet rest, 0.15 mm to 4 cm) and ``height_off =
    height_on * HEIGHT_OFF / HEIGHT_ON`` (the hysteresis in proportion).  The real 30 Hz walk of
    docs/mocap.md (its still feet rest up to 2.8 cm up) gets the fixed 4 cm / 6 cm; a simulation
    (its feet on the ground to rounding) the floor, 0.15 mm / 0.225 mm."""
    on = float(np.clip(REST_MARGIN * rest_height(capture), HEIGHT_MIN, HEIGHT_ON))
    return on, HEIGHT_OFF * (on / HEIGHT_ON)


def contact_phases(capture: Capture, height_on: float | None = None, height_off: float | None = None,
                   speed_on: float = SPEED_ON, speed_off: float = SPEED_OFF) -> NDArray[np.bool_]:
    """(T, nfeet) booleans: which feet are on the ground.  A foot lands when one of its sole
    points is below ``height_on`` (m above the ground) and slower than ``speed_on`` (m/s): a
    heel that strikes or a toe that the foot rolls over rests on the ground while the rest of
    the foot turns about it.  It stays down until every sole point is above ``height_off`` or
    faster than ``speed_off`` (hysteresis: ``height_off >= height_on``, ``speed_off >= speed_on``).
    Speeds are central differences of the points' positions.

    ``height_on=None`` (default): adapted to the capture, :func:`contact_heights` (three times the
    height at which its still feet rest, between 0.15 mm and 4 cm); ``height_off=None``:
    ``height_on * HEIGHT_OFF / HEIGHT_ON`` (1.5 times).  The speeds are fixed (0.5 and 1 m/s):
    they tell a swing from a stance, which is the motion's, not the capture's."""
    if height_on is None:
        height_on = contact_heights(capture)[0]
    if height_off is None:
        height_off = HEIGHT_OFF * (height_on / HEIGHT_ON)
    if height_off < height_on or speed_off < speed_on:
        raise ValueError("contact_phases: the off thresholds must not be below the on thresholds (hysteresis)")
    T = len(capture.t)
    out = np.zeros((T, len(capture.feet.names)), dtype=bool)
    for k, (z, speed) in enumerate(_foot_points(capture)):
        on = ((z < height_on) & (speed < speed_on)).any(axis=1)
        off = ((z > height_off) | (speed > speed_off)).all(axis=1)
        down = False
        for i in range(T):
            if not down and on[i]:
                down = True
            elif down and off[i]:
                down = False
            out[i, k] = down
    return out


@dataclass
class InverseDynamics:
    """Inverse dynamics of a capture: ``tau`` (T, nv) generalized forces (the root's 6 rows are
    the residual in the root frame), ``grf`` (T, nfeet, 3) each foot's ground reaction in the
    world frame, ``cop`` (T, nfeet, 3) its centre of pressure (NaN while the foot is off the
    ground), ``residual`` (T, 6) the root force and moment that the contacts cannot give
    ([force; moment] in the root frame, N and N m), ``phases`` (T, nfeet), ``forces`` (T,
    npoints, 3) every sole point's force, ``power`` (T, nv) joint powers tau * v."""
    tau: NDArray[np.float64]
    grf: NDArray[np.float64]
    cop: NDArray[np.float64]
    residual: NDArray[np.float64]
    phases: NDArray[np.bool_]
    forces: NDArray[np.float64]
    power: NDArray[np.float64]
    solver: str


def _qp_matrices(mu, n):
    """Inequalities C f <= 0 of the friction pyramid for n points (5 rows a point)."""
    Cm = np.zeros((5 * n, 3 * n))
    for i in range(n):
        r, c = 5 * i, 3 * i
        Cm[r, c], Cm[r, c + 2] = 1.0, -mu[i]
        Cm[r + 1, c], Cm[r + 1, c + 2] = -1.0, -mu[i]
        Cm[r + 2, c + 1], Cm[r + 2, c + 2] = 1.0, -mu[i]
        Cm[r + 3, c + 1], Cm[r + 3, c + 2] = -1.0, -mu[i]
        Cm[r + 4, c + 2] = -1.0
    return Cm


def _solve_proxsuite(H, g, Cm, u):
    """proxsuite's dense ProxQP.  Its infeasibility tests are tightened: with the tiny
    regulariser the Hessian's condition number reaches 1e10 and the default thresholds call a
    feasible problem (f = 0 always is) primal infeasible."""
    from proxsuite import proxqp
    n = H.shape[0]
    qp = proxqp.dense.QP(n, 0, Cm.shape[0])
    st = qp.settings
    st.eps_abs, st.eps_rel, st.eps_primal_inf, st.eps_dual_inf, st.verbose = 1e-10, 0.0, 1e-15, 1e-15, False
    qp.init(H, g, None, None, Cm, np.full(Cm.shape[0], -1e20), u)
    qp.solve()
    if qp.results.info.status != proxqp.PROXQP_SOLVED:
        raise RuntimeError(f"proxsuite: {qp.results.info.status}")
    return qp.results.x.copy()


def _solve_clarabel(H, g, Cm, u):
    import clarabel
    from scipy import sparse
    st = clarabel.DefaultSettings()
    st.verbose = False
    st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = 1e-10
    s = clarabel.DefaultSolver(sparse.csc_matrix(np.triu(H)), g, sparse.csc_matrix(Cm), u,
                               [clarabel.NonnegativeConeT(Cm.shape[0])], st)
    sol = s.solve()
    if str(sol.status) != "Solved":
        raise RuntimeError(f"clarabel: {sol.status}")
    return np.asarray(sol.x)


def _solve_osqp(H, g, Cm, u):
    import osqp
    from scipy import sparse
    p = osqp.OSQP()
    p.setup(sparse.csc_matrix(np.triu(H)), g, sparse.csc_matrix(Cm), np.full(Cm.shape[0], -np.inf), u,
            verbose=False, eps_abs=1e-10, eps_rel=1e-10, max_iter=200000, polishing=True)
    return p.solve().x


SOLVERS = {"proxsuite": _solve_proxsuite, "clarabel": _solve_clarabel, "osqp": _solve_osqp}


def inverse_dynamics(capture: Capture, phases: NDArray[np.bool_] | None = None, solver: str = "proxsuite",
                     regularisation: float = REGULARISATION, progress: bool = False) -> InverseDynamics:
    """Ground reactions and joint torques of a capture (module docstring).  ``phases`` (T,
    nfeet): which feet may push (default :func:`contact_phases`); ``solver``: ``"proxsuite"``
    (default: exact on the simulated ground truth and the fastest), ``"clarabel"`` or ``"osqp"``
    (docs/mocap.md compares them; Clarabel stops at "AlmostSolved" on some ill-conditioned
    frames and then raises); ``regularisation``: eps of the module docstring."""
    if solver not in SOLVERS:
        raise ValueError(f"solver: expected one of {sorted(SOLVERS)}, got {solver!r}")
    solve = SOLVERS[solver]
    m = capture.model
    q, v, a = capture.q, capture.v, capture.a
    T = len(q)
    nf = len(capture.feet.names)
    if nf == 0:
        raise MocapError(f"{capture.skeleton.path}: the figure has no feet (no joint named foot/ankle with a side)")
    phases = contact_phases(capture) if phases is None else np.asarray(phases, dtype=bool)
    if phases.shape != (T, nf):
        raise ValueError(f"phases: expected shape {(T, nf)}, got {phases.shape}")
    names = [c.name for c in m.contacts]
    pidx = [[names.index(n) for n in pts] for pts in capture.feet.points]
    allp = [i for ps in pidx for i in ps]
    n = len(allp)
    foot_of = np.repeat(np.arange(nf), [len(p) for p in pidx])
    mu = np.array([m.contacts[i].friction for i in allp])
    kin = forward_kinematics(m, q)
    P = _sole_points(m, q, kin)[:, allp]                            # (T, n, 3)
    w0 = rnea(m, q, v, a)                                           # no contacts
    Rr, pr = kin.R[:, 1], kin.p[:, 1]                               # the root body
    mg = capture.mass * float(np.linalg.norm(m.gravity)) if np.linalg.norm(m.gravity) > 0 else capture.mass
    Wd = np.r_[np.full(3, 1 / mg), np.full(3, 1 / (mg * 0.5 * capture.height))]
    F = np.zeros((T, n, 3))
    resid = np.empty((T, 6))
    it = range(T)
    if progress:
        from tqdm import tqdm
        it = tqdm(it, desc="inverse dynamics", unit="frame")
    # every frame's map from point forces (world) to the root wrench: rows [R^T f; r x R^T f]
    r = np.einsum("tij,tni->tnj", Rr, P - pr[:, None])              # points in the root frame
    RT = np.transpose(Rr, (0, 2, 1))
    Afull = np.empty((T, 6, n, 3))
    Afull[:, :3] = RT[:, :, None, :]
    Afull[:, 3:] = np.einsum("tnab,tbc->tanc", _skew_batch(r), RT)
    Afull = Afull.reshape(T, 6, 3 * n)
    cache = {}
    for k in it:
        on = phases[k][foot_of]
        if not on.any():
            resid[k] = w0[k, :6]
            continue
        cols = np.flatnonzero(np.repeat(on, 3))                    # the points that may push
        na = cols.size // 3
        key = tuple(mu[on])
        if key not in cache:
            cache[key] = (_qp_matrices(mu[on], na), np.eye(3 * na))
        Ck, I = cache[key]
        A = Afull[k][:, cols]
        Aw = A * (Wd[:, None] * mg)                                 # unknowns x = f / (m g)
        H = Aw.T @ Aw + regularisation * I
        g = -Aw.T @ (Wd * w0[k, :6])
        f = mg * solve(H, g, Ck, np.zeros(Ck.shape[0]))
        F[k, on] = f.reshape(na, 3)
        resid[k] = w0[k, :6] - A @ f
    # joint torques: one batched RNEA with the sole forces as external forces (body frame)
    fext = np.zeros((T, m.nbody, 6))
    for i, ci in enumerate(allp):
        b = m.contacts[ci].body
        fb = np.einsum("tji,tj->ti", kin.R[:, b], F[:, i])          # R^T f
        rb = np.einsum("tji,tj->ti", kin.R[:, b], P[:, i] - kin.p[:, b])
        fext[:, b, :3] += fb
        fext[:, b, 3:] += np.cross(rb, fb)
    tau = rnea(m, q, v, a, fext)
    grf = np.zeros((T, nf, 3))
    cop = np.full((T, nf, 3), np.nan)
    for k_f in range(nf):
        sel = foot_of == k_f
        grf[:, k_f] = F[:, sel].sum(axis=1)
        fz = F[:, sel, 2]
        tot = fz.sum(axis=1)
        ok = tot > 1e-9 * mg
        cop[ok, k_f] = np.einsum("ti,tij->tj", fz[ok], P[ok][:, sel]) / tot[ok, None]
        cop[ok, k_f, 2] = P[ok][:, sel, 2].mean(axis=1)
    return InverseDynamics(tau, grf, cop, resid, phases, F, tau * v, solver)


def _skew_batch(x):
    """Cross-product matrices of the last axis (..., 3) -> (..., 3, 3)."""
    S = np.zeros(x.shape + (3,))
    S[..., 0, 1], S[..., 0, 2], S[..., 1, 2] = -x[..., 2], x[..., 1], -x[..., 0]
    S[..., 1, 0], S[..., 2, 0], S[..., 2, 1] = x[..., 2], -x[..., 1], x[..., 0]
    return S


def write_bvh(path: str | os.PathLike[str], capture: Capture, q: NDArray[np.float64] | None = None,
              frame_time: float | None = None) -> None:
    """Write a motion of a capture's figure as BVH: ``q`` (T, nq; default the capture's own),
    e.g. a simulation of ``capture.model``, in the capture's skeleton, units, axes and channel
    orders, every number with 17 significant digits, so that reading it back gives q to
    rounding.  ``frame_time``: s (default the capture's)."""
    if not isinstance(capture, Capture):
        raise TypeError(f"capture: expected a linkdyn.mocap.Capture, got {type(capture).__name__}")
    sk, scale, ground, model = capture.skeleton, capture.scale, capture.ground, capture.model
    q = capture.q if q is None else q
    frame_time = capture.dt if frame_time is None else frame_time
    q = np.asarray(q, dtype=float)
    if q.ndim != 2 or q.shape[1] != model.nq:
        raise ValueError(f"q: expected shape (T, {model.nq}), got {q.shape}")
    frame_time = _positive(frame_time, "frame_time")
    qs, _ = _joint_slices(model, sk)
    Cinv = Rotation.from_matrix(Y_UP_TO_Z_UP).inv()
    angles = np.empty((len(q), len(sk.names), 3))
    for j, sl in enumerate(qs):
        r = Rotation.from_quat(q[:, sl.stop - 4:sl.stop])
        if j == 0:
            r = Cinv * r
        angles[:, j] = r.as_euler(sk.orders[j], degrees=True)
    pos = q[:, 0:3].copy()
    pos[:, 2] += ground
    root = (Y_UP_TO_Z_UP.T @ pos.T).T / scale
    out = Skeleton(sk.names, sk.parents, sk.offsets, sk.orders, sk.end_sites, angles, root, frame_time)
    write_skeleton(path, out)
