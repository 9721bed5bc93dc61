"""Human figures in structure-varying scenes (Nakamura and Yamane 2000 sec. 5): the high bar (Fig. 14), the
swing (Fig. 15), and a figure that drops and lands on its feet (pseudo-closed chains with
the ground, Fig. 11).  Each scene is a function returning ``(model, q)`` or a ready
:class:`~linkdyn.sim.Simulation` with its events scheduled (``*_simulation``).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg

from .. import spatial, structure
from ..kinematics import frame_pose
from ..model import builder as _b
from ..model import joints as J
from ..model.configuration import difference
from .human import dimensions, human_figure, human_figure_16, standing_configuration
from .mechanisms import rod

_GRIPS = {"revolute": lambda: J.Revolute("y"), "spherical": J.Spherical, "weld": J.Fixed}


def hanging_configuration(model, arms_forward: float = 0.0, elbows: float = 0.15) -> np.ndarray:
    """The figure standing with both arms raised overhead (each shoulder turned half a turn about
    the body's y axis, less ``arms_forward`` rad), the elbows bent by ``elbows`` rad: straight
    arms are a singular configuration of a hanging figure (the hands cannot move along them)."""
    q = standing_configuration(model)
    a = 0.5 * (np.pi - arms_forward)
    for side in ("l", "r"):
        q[model.q_slice(f"{side}_shoulder")] = [0.0, np.sin(a), 0.0, np.cos(a)]
        q[model.q_slice(f"{side}_elbow")] = elbows
    return q


def _rotate_base_about(model, q, point, axis, angle):
    """q with the floating base (and so the whole figure) turned by ``angle`` about the line
    through ``point`` along ``axis`` (world)."""
    q = q.copy()
    R = spatial.axis_angle_to_matrix(axis, angle)
    qs = model.q_slice("root_joint")
    p, quat = q[qs][:3], q[qs][3:]
    q[qs] = np.concatenate([point + R @ (p - point), spatial.matrix_to_quat(R @ spatial.quat_to_matrix(quat))])
    return q


def on_bar(figure=None, grip: str = "revolute", bar_height: float | None = None, swing: float = 0.0):
    """(model, q): ``figure`` (default the 16-DoF figure of Nakamura and Yamane 2000 sec. 5.1) hanging from a
    bar along the world y axis by both hands, each on a cut joint of kind ``grip``:
    "revolute" (about the bar, the textbook's high bar), "spherical" or "weld".  The bar is part of
    the world, marked by the frame "bar" on the world at the middle of the hands; the two
    loops are named "l_grip__bar" and "r_grip__bar" and are closed in
    the returned configuration, the arms raised overhead, the feet ``bar_height`` below the bar
    (default: where the standing figure's raised hands are), the figure turned about the bar
    by ``swing`` rad (positive: the feet forward, towards +x)."""
    if grip not in _GRIPS:
        raise ValueError(f"grip: expected one of {sorted(_GRIPS)}, got {grip!r}")
    model = human_figure_16() if figure is None else figure
    q = hanging_configuration(model)
    if bar_height is not None:
        q[2] += bar_height - frame_pose(model, q, "l_grip")[2, 3]
    if swing:
        q = _rotate_base_about(model, q, frame_pose(model, q, "l_grip")[:3, 3], [0.0, -1.0, 0.0], swing)
    grips = [frame_pose(model, q, f"{s}_grip")[:3, 3] for s in ("l", "r")]
    b = _b.ModelBuilder.from_model(model)
    b.add_frame("bar", "world", placement=0.5 * (grips[0] + grips[1]))
    model = b.build()
    for side in ("l", "r"):
        model, q = structure.connect(model, q, f"{side}_grip", "bar", _GRIPS[grip]())
    return model, q


#: the height of a competition high bar above the floor (m): 2.80 m (FIG Apparatus Norms, the
#: bar's top 2750 mm above a 200 mm landing mat: 2.8 m above the floor the mat lies on, to the
#: bar's axis, rounded)
COMPETITION_BAR_HEIGHT = 2.8


def high_bar(mass: float = 70.0, height: float = 1.75, swing: float = 0.0,
             bar_height: float | None = COMPETITION_BAR_HEIGHT, floor: bool = True):
    """The high bar of Nakamura and Yamane 2000 sec. 5.1: the 16-DoF figure (4 DoF per limb) hanging by both
    hands on 1-DoF revolute joints about the bar, turned by ``swing`` rad about the bar.  The
    bar's axis stands ``bar_height`` m above the floor z = 0 (default a competition bar's,
    :data:`COMPETITION_BAR_HEIGHT`; None: where the standing figure's raised hands are, 2.05 m
    for a 1.75 m figure, low enough that its feet brush the floor); ``floor``: the model has the
    ground plane z = 0 (its contact points would land on it).  Returns (model, q)."""
    model = human_figure_16(mass=mass, height=height)
    if floor:
        b = _b.ModelBuilder.from_model(model)
        b.add_ground()
        model = b.build()
    return on_bar(model, "revolute", bar_height=bar_height, swing=swing)


def released_arm_posture(model, q, side: str = "r", lower: float = 0.5 * np.pi, roll: float = 1.5, elbow: float = 0.3):
    """``q`` with the ``side`` arm, raised overhead in ``q``, brought down sideways in the body's
    frontal plane by ``lower`` rad (pi/2: held out horizontally, as a gymnast opens the arm
    that let go of the bar) and rolled by ``roll`` rad about its own length (palm down: without
    the roll the lowered arm's twist would be 117 deg, past the shoulder's 90 deg stop), the
    elbow bent by ``elbow`` rad.  Only the arm's joints change."""
    q = q.copy()
    sign = -1.0 if side == "r" else 1.0
    s = model.q_slice(f"{side}_shoulder")
    R = (spatial.axis_angle_to_matrix([1.0, 0.0, 0.0], -sign * lower) @ spatial.quat_to_matrix(q[s])
         @ spatial.axis_angle_to_matrix([0.0, 0.0, 1.0], -sign * roll))
    q[s] = spatial.matrix_to_quat(R)
    q[model.q_slice(f"{side}_elbow")] = elbow
    return q


def high_bar_simulation(dt: float = 1e-3, release: float = 1.0, swing: float = 0.8, record_every: int = 10,
                        posture: float | None = 8.0, bar_height: float | None = COMPETITION_BAR_HEIGHT,
                        **options):
    """Fig. 14 as a simulation: the figure hangs from the bar by both hands, swung back by
    ``swing`` rad and let go from rest; at ``release`` s the right hand opens (the revolute
    joint to the bar is cut) and the figure swings and turns on its left hand.  The bar stands
    ``bar_height`` m above the floor (a competition bar's: the feet pass ~0.7 m above it).

    ``posture``: the figure holds its hanging posture (arms overhead, body straight: a
    gymnast's) with the posture controller at this frequency (rad/s), as a gymnast's muscles
    do; the swing about the bar stays free (it has no actuator).  From the release on, the
    freed right arm is brought down and out sideways (:func:`released_arm_posture`): the hand
    leaves the bar, and the figure, no longer symmetric, turns about the left hand.  (Held in
    its overhead posture the freed hand would stay on the bar's axis: the figure swings in its
    sagittal plane about that axis, and a hand fixed in the body's posture follows the same
    circle as the hand that still holds the bar.)  ``None``: a passive figure (a ragdoll: its
    energy is conserved between events, the tests of the mechanics use it)."""
    from ..sim import Simulation
    model, q = high_bar(swing=-swing, bar_height=bar_height)
    if posture is not None:
        # the posture held: as hung, with the knees bent by 0.1 rad (straight knees would sit on
        # their limit stop, a contact to keep solving at every step); the loops go through the
        # arms, so they stay closed
        for side in ("l", "r"):
            q[model.q_slice(f"{side}_knee")] = 0.1
        hanging = posture_controller(model, q, frequency=posture)
        opened = posture_controller(model, released_arm_posture(model, q), frequency=posture)

        def control(t, q_, v, m):
            return (hanging if t < release else opened)(t, q_, v, m)
        options.setdefault("controller", control)
    sim = Simulation(model, q, dt=dt, record_every=record_every, **options)
    sim.at(release, "cut", "r_grip", "bar")
    return sim


def figure_on_bar_40(grip: str = "revolute"):
    """The 40-DoF figure of Nakamura and Yamane 2000 Fig. 13 (46 velocities with its floating base) hanging from
    a bar by both hands (two loops).  Returns (model, q)."""
    return on_bar(human_figure(), grip)


# ---------------------------------------------------------------------------------------
# the swing (Nakamura and Yamane 2000 sec. 5.2, Fig. 15)
#: contact filter bits of the swing (MuJoCo's contype/conaffinity): every geom of the figure
#: (head, trunk, thighs, shanks, feet) touches the ground and the seat; the figure never touches
#: itself, nor the seat the ground.  Each pair with the seat has the seat's friction (a polished
#: board: every figure geom carries that coefficient, and a pair takes the larger of its two
#: geoms', so against the ground, 1.0, they keep the ground's).  Measured over the demo's 4 s
#: (``linkdyn demo swing``; docs/demos.md): with only the thighs touching the seat, the free
#: seat passed through the shanks (3 cm) and the trunk's capsule (9 cm); with every geom
#: touching it at a friction of 1.0 on the body, the right thigh and shank catch on the tilted
#: seat and the figure stays on it to the end; with the seat hinged to its rope (a damped
#: revolute joint, the board hanging from its end) the right thigh stays on it too.
_FIGURE, _GROUND, _SEAT = (3, 0), (0, 1), (0, 2)


def swing(mass: float = 70.0, height: float = 1.75, rope_length: float = 2.5, swing_angle: float = 0.5,
          friction: float = 0.3, ground_clearance: float = 0.6, elbows: float = 1.2):
    """The swing of Nakamura and Yamane (2000, sec. 5.2, Fig. 15): the 16-DoF figure sits on a
    seat hung from two ropes.  Each rope turns about a spherical joint at its top; the seat is
    rigid between the rope ends (fixed to the right rope's end, welded to the left one's through
    the loop "seat_l_end__l_rope_end", the weld that breaks); the hands hold the ropes through
    spherical joints (loops "l_grip__l_rope", "r_grip__r_rope").  Where the paper joins each
    thigh to the seat by a sideways prismatic joint, the thighs here *rest* on the seat through
    collision geometry (``ModelBuilder.add_geom``): a capsule along each thigh ("l_thigh",
    "r_thigh") on the seat, a box ("seat") 2 w wide, with Coulomb ``friction``, so they stick while
    the seat is level enough, and can lift off or slide, and leave it over its end; the rest of
    the figure's collision geometry (head, trunk, shanks, feet) meets the seat too, with the same
    friction (the free seat swings against the body, it does not pass through it).  The figure
    therefore has a floating base: the paper's 30 joint DoF (16 + 4 x 3 + 2) are ours minus the
    6 of the base plus the 2 prismatic joints (34 velocities).  The ground is a plane geom
    ("ground"), z = 0, ``ground_clearance`` below the feet at the bottom of the swing; the figure's head
    (a sphere, "head"), trunk, thighs, shanks and feet (capsules) touch it and the seat (contact
    filter bits: the figure never touches itself, the seat never the ground).  The hands hold the ropes
    above the head, the arms raised forward, the elbows bent by ``elbows`` rad, the ropes hanging
    straight down through the hands to the seat's ends at the bottom.  The swing starts at rest,
    drawn back by ``swing_angle`` rad from the bottom (the ropes hanging straight down) about the
    line through the rope tops.  Returns (model, q, w): frame "seat_centre" is the seat's middle
    and the seat is ``2 w`` wide (``w`` = half the distance between the ropes)."""
    d = dimensions(height)
    fig = human_figure_16(mass=mass, height=height, contacts=False)
    r_thigh = 0.035 * height                      # the thigh's half-thickness about its axis
    # sitting: thighs forward (hips turned -90 deg about y), shanks down (knees at 90 deg), the
    # arms raised forward and up, elbows bent, the hands holding the ropes above the head's
    # height (hands at the seat's level would leave the body standing on its hands once the seat
    # goes: it topples backwards about them, head first)
    q = standing_configuration(fig)
    for side in ("l", "r"):
        q[fig.q_slice(f"{side}_hip")] = spatial.quat_from_axis_angle([0, 1, 0], -np.pi / 2)
        q[fig.q_slice(f"{side}_knee")] = np.pi / 2
        q[fig.q_slice(f"{side}_elbow")] = elbows
    b = _b.ModelBuilder.from_model(fig, name="swing")
    H = d["vertex"]
    for side in ("l", "r"):
        # the frame under the middle of each thigh, where it rests on the seat
        b.add_frame(f"{side}_seat", f"{side}_thigh", placement=(np.eye(3), [-r_thigh, 0.0, -0.5 * d["L_thigh"]]))
        b.add_geom(f"{side}_thigh", "capsule", [r_thigh, 0.5 * d["L_thigh"] - r_thigh], [0.0, 0.0, -0.5 * d["L_thigh"]],
                   name=f"{side}_thigh", friction=friction, contype=_FIGURE[0], conaffinity=_FIGURE[1])
        r_shank = 0.025 * H
        b.add_geom(f"{side}_shank_foot", "capsule", [r_shank, 0.5 * d["L_shank"] - r_shank],
                   [0.0, 0.0, -0.5 * d["L_shank"]], name=f"{side}_shank", friction=friction,
                   contype=_FIGURE[0], conaffinity=_FIGURE[1])
        r_foot = 0.5 * d["ankle"]
        foot_R = spatial.axis_angle_to_matrix([0.0, 1.0, 0.0], 0.5 * np.pi)          # its z along the foot (x)
        b.add_geom(f"{side}_shank_foot", "capsule", [r_foot, 0.5 * (d["toe"] - d["heel"]) - r_foot],
                   (foot_R, [0.5 * (d["toe"] + d["heel"]), 0.0, -d["L_shank"] - d["ankle"] + r_foot]),
                   name=f"{side}_foot", friction=friction, contype=_FIGURE[0], conaffinity=_FIGURE[1])
    head_centre = [0.0, 0.0, d["vertex"] - d["hip"] - 0.5 * d["L_head"]]
    b.add_geom("trunk", "sphere", [0.055 * H], head_centre, name="head", friction=friction,
               contype=_FIGURE[0], conaffinity=_FIGURE[1])
    b.add_frame("head_centre", "trunk", placement=head_centre)
    r_trunk = 0.08 * H
    b.add_geom("trunk", "capsule", [r_trunk, 0.5 * (d["neck"] - d["hip"]) - r_trunk],
               [0.0, 0.0, 0.5 * (d["neck"] - d["hip"])], name="trunk", friction=friction,
               contype=_FIGURE[0], conaffinity=_FIGURE[1])
    fig = b.build()
    # the ground is the plane z = 0: the seated figure's feet ``ground_clearance`` above it at
    # the bottom of the swing
    q[2] += ground_clearance - min(frame_pose(fig, q, f"{s}_{e}")[2, 3] for s in ("l", "r") for e in ("heel", "toe"))
    contact = {s: frame_pose(fig, q, f"{s}_seat")[:3, 3] for s in ("l", "r")}
    x_seat, z_seat = 0.5 * (contact["l"][0] + contact["r"][0]), contact["l"][2]
    # the arms, raised overhead, come forward until the hands are right above the seat's ends
    # (the ropes hang straight down through them at the bottom of the swing)
    best = None
    for a in np.linspace(-3.0, -1.6, 1401):
        for side in ("l", "r"):
            q[fig.q_slice(f"{side}_shoulder")] = spatial.quat_from_axis_angle([0, 1, 0], a)
        miss = abs(frame_pose(fig, q, "l_grip")[0, 3] - x_seat)
        if best is None or miss < best[0]:
            best = (miss, a)
    for side in ("l", "r"):
        q[fig.q_slice(f"{side}_shoulder")] = spatial.quat_from_axis_angle([0, 1, 0], best[1])
    grips = {s: frame_pose(fig, q, f"{s}_grip")[:3, 3] for s in ("l", "r")}
    w = abs(grips["l"][1])                        # the ropes pass by the hands
    ends = {"l": np.array([x_seat, w, z_seat]), "r": np.array([x_seat, -w, z_seat])}
    # each rope: from its top, through the hand, to the seat's end; its frame's x runs down it
    b = _b.ModelBuilder.from_model(fig, name="swing")
    rope_R = {}
    for s in ("l", "r"):
        x = np.array([0.0, 0.0, -1.0])
        top = ends[s] - rope_length * x
        y = np.array([0.0, 1.0, 0.0]) - x[1] * x
        y /= np.linalg.norm(y)
        R = rope_R[s] = np.column_stack([x, y, np.cross(x, y)])
        b.add_body(f"{s}_rope", "world", J.Spherical(), placement=(R, top), inertia=rod(0.5, rope_length, radius=0.015),
                   joint_name=f"{s}_rope_top")
        b.add_frame(f"{s}_rope_top_point", "world", placement=top)
        b.add_frame(f"{s}_rope_end", f"{s}_rope", placement=(R.T, [rope_length, 0.0, 0.0]))
    # the seat: a board 2w wide fixed to the right rope's end; its frame is at that end,
    # world-aligned at q, its top the face the thighs rest on
    thick, depth, m_seat = 0.03, 0.3 * height / 1.75, 3.0
    Rr = rope_R["r"]
    b.add_body("seat", "r_rope", J.Fixed(), placement=(Rr.T, [rope_length, 0.0, 0.0]),
               inertia=_b.Inertia(m_seat, [0.0, w, -0.5 * thick],
                                  m_seat / 12 * np.diag([4 * w * w + thick ** 2, depth ** 2 + thick ** 2,
                                                         4 * w * w + depth ** 2])),
               joint_name="seat_mount")
    b.add_frame("seat_centre", "seat", placement=[0.0, w, 0.0])
    b.add_frame("seat_l_end", "seat", placement=[0.0, 2 * w, 0.0])
    b.add_geom("seat", "box", [0.5 * depth, w, 0.5 * thick], [0.0, w, -0.5 * thick], name="seat", friction=friction,
               contype=_SEAT[0], conaffinity=_SEAT[1])
    scene = b.build()
    q0 = structure.map_state(fig, scene, q)          # the thighs' capsules touch the seat's top
    tops = [frame_pose(scene, q0, f"{s}_rope_top_point")[:3, 3] for s in ("l", "r")]
    axis = (tops[0] - tops[1]) / np.linalg.norm(tops[0] - tops[1])

    def turned(angle):
        """q0 with the ropes turned by ``angle`` about the line of their tops, the figure with them."""
        qs = q0.copy()
        Rs = spatial.axis_angle_to_matrix(axis, angle)
        for s in ("l", "r"):
            R0 = scene.R_tree[scene.joint_id(f"{s}_rope_top")]
            qs[scene.q_slice(f"{s}_rope_top")] = spatial.matrix_to_quat(R0.T @ Rs @ R0)
        return _rotate_base_about(scene, qs, tops[0], axis, angle)
    # as built the swing is at its bottom: the ropes hang straight down, the seat level
    b = _b.ModelBuilder.from_model(scene, name="swing")
    b.add_geom("world", "plane", (), name="ground", friction=1.0, contype=_GROUND[0], conaffinity=_GROUND[1])
    scene = b.build()
    qs = turned(-swing_angle)                    # drawn back from the bottom
    # the loops, closed where everything now is
    scene, qs = structure.connect(scene, qs, "seat_l_end", "l_rope_end")          # a weld
    for s in ("l", "r"):
        scene, qs = structure.connect(scene, qs, f"{s}_grip", f"{s}_rope", J.Spherical())
    return scene, qs, w


def thigh_offset(model, q, side):
    """How far the ``side`` thigh's contact point sits from the seat's centre along the seat's
    width (y of the seat)."""
    T_seat = frame_pose(model, q, "seat_centre")
    p = frame_pose(model, q, f"{side}_seat")[:3, 3]
    return float((T_seat[:3, :3].T @ (p - T_seat[:3, 3]))[1])


def swing_simulation(dt: float = 1e-3, seat_breaks: float = 1.2, record_every: int = 10,
                     posture: float | None = 8.0, friction: float = 0.05, arm_damping: float = 40.0,
                     ground_clearance: float = 0.6, **options):
    """Fig. 15 as a simulation (Nakamura and Yamane 2000, sec. 5.2): the figure swings on the
    seat, holding the ropes above its head; at ``seat_breaks`` s the seat comes off the left rope
    (that weld is cut) and hangs from the right rope, tilts (left end down), and the thighs (two
    capsule geoms on the seat's box) slide along it and off its end; the figure falls, its hands
    still on the ropes, and swings on hanging from them, its feet above the ground.  Stepped by
    time stepping (``contact_method="timestep"`` unless ``options`` say otherwise: the
    contacts are collision geometry).  ``friction``: between the thighs and the seat (the paper's
    sideways prismatic joints are frictionless; 0.05 is a polished board: at 0.1 the thighs
    stay on the tilted seat for another 2 s).  ``ground_clearance``: the ground this far below
    the feet of the figure seated at the bottom of the swing (0.6 m: the figure hanging from
    the ropes swings 7 cm above it; at 0.25 m its feet strike the ground while it slides off).

    ``posture``: the figure keeps its sitting posture with the posture controller at this
    frequency (rad/s; the seat and the ropes carry it: ``posture_controller``'s stance on the
    geom contacts) until the seat breaks; from then on its arms give (shoulders and elbows not
    controlled, the hands still on the ropes), damped by ``arm_damping`` N m s/rad on the
    shoulders' swing (flexion, abduction) and the elbows (a tau = -c v of the muscles, which lets the body down
    slowly instead of dropping it onto the arms' stops), while the trunk and the legs keep their
    posture.  Held arms would make the figure, the two ropes and the seat one rigid
    parallelogram: the seat could only tilt by a few degrees and the thighs would lift off it
    rather than slide.  None: a passive figure (nothing holds its thighs on the seat)."""
    from ..dynamics.crba import crba
    from ..sim import Simulation
    model, q, w = swing(friction=friction, ground_clearance=ground_clearance)
    options.setdefault("contact_method", "timestep")
    if posture is not None:
        ropes = ("l_rope_top", "r_rope_top")
        seated = posture_controller(model, q, frequency=posture, passive=ropes)
        falling = posture_controller(model, q, frequency=posture,
                                     passive=ropes + ("l_shoulder", "r_shoulder", "l_elbow", "r_elbow"))

        def control(t, q_, v, m):
            if t < seat_breaks:
                return seated(t, q_, v, m)
            tau = falling(t, q_, v, m)
            # the arms give, damped: tau = -c v on the shoulders' swing (flexion and abduction,
            # about the upper arm's y and x axes) and the elbows, c at most half of what an
            # explicit step keeps stable on the dof's own inertia (c dt / M_jj < 2); the
            # shoulders' twist stays free (damped, the twist of the arm and hand about the arm
            # against the grip on the rope, ~1 % of the swing's inertia, rings and blows up)
            Mjj = np.diag(crba(m, q_))
            for j in [m.v_index(f"{s}_shoulder") + k for s in "lr" for k in (0, 1)] + [m.v_index(f"{s}_elbow") for s in "lr"]:
                tau[j] -= min(arm_damping, 0.5 * Mjj[j] / dt) * v[j]
            return tau
        options.setdefault("controller", control)
    sim = Simulation(model, q, dt=dt, record_every=record_every, **options)
    sim.at(seat_breaks, "cut", "seat_l_end__l_rope_end")
    if sim.contacts:
        sim.watch = SwingWatch(sim)
        sim.when(sim.watch, SwingWatch.nothing, once=False)
    return sim


#: per model of a swing (a model is immutable): the model with an explicit candidate pair between
#: the seat's box and each of the figure's collision geoms (``_seat_probe``)
_SEAT_PROBES: dict = {}


def _seat_probe(model):
    """``model`` with the seat's box paired with every other geom but the ground
    (``ModelBuilder.add_pair``: checked whatever the contact filter says), its configuration
    laid out as ``model``'s; cached per model."""
    probe = _SEAT_PROBES.get(model)
    if probe is None:
        b = _b.ModelBuilder.from_model(model)
        for g in model.geom_names:
            if g not in ("seat", "ground"):
                b.add_pair("seat", g)
        probe = b.build()
        same = probe.nq == model.nq and all(
            probe.q_slice(n) == model.q_slice(n) for n in model.joint_names)
        if not same:
            raise RuntimeError(f"model {model.name!r}: its seat probe lays out q differently")
        if len(_SEAT_PROBES) > 16:
            _SEAT_PROBES.clear()
        _SEAT_PROBES[model] = probe
    return probe


def seat_overlap(model, q) -> dict:
    """How deep the swing's seat (its box geom) and each collision geom of the figure overlap
    at ``q``, measured by the collision detection between geoms (:func:`linkdyn.contact.collide`,
    the narrow phase the simulation uses) on every pair of the seat with a figure geom, whatever
    the scene's contact filter says: {figure geom's name: penetration depth (m), 0 when apart}."""
    from ..contact import collide
    probe = _seat_probe(model)
    con = collide(probe, q)
    names = list(probe.geom_names)
    seat = names.index("seat")
    out = {g: 0.0 for g in names if g not in ("seat", "ground")}
    for g1, g2, d in zip(con.geom1, con.geom2, con.dist):
        if seat in (g1, g2):
            g = names[g2 if g1 == seat else g1]
            out[g] = max(out[g], float(-d))
    return out


def limit_impacts(recording) -> list:
    """The impacts of a ``recording`` (its events) in which a joint stop is struck (a unit
    named ``<joint>.upper``, ``.lower`` or ``.swing``), as the swing's scene check counts them."""
    return [e for e in recording.events if e.kind == "impact"
            and any(n.endswith((".upper", ".lower", ".swing")) for n in e.name.split(", "))]


def thighs_on_seat(segment, within: float = 0.01) -> np.ndarray:
    """Per sample of a swing recording's ``segment``: how many contacts the thighs' capsules have
    with the seat's box within ``within`` m (collision detection at each recorded
    configuration: two per thigh lying on the seat, none once both are off it)."""
    from ..contact import collide
    m = segment.model
    out = np.zeros(len(segment.t), dtype=np.int64)
    for k, q in enumerate(segment.q):
        con = collide(m, q, margin=within)
        out[k] = sum(1 for pair in con.names() if set(pair) in ({"l_thigh", "seat"}, {"r_thigh", "seat"}))
    return out


class SwingWatch:
    """What a person watching the swing would check, kept at every step of a
    :func:`swing_simulation` (``sim.when(watch, watch.nothing, once=False)``: a condition that
    looks and never fires; :func:`swing_simulation` attaches one as ``sim.watch``):

    * ``head_low``: the lowest point of the head's sphere above the ground (m);
    * ``max_force``, ``max_force_at``: the largest contact force of any geom contact (its
      magnitude, normal and friction, N) and the step it came at, and ``weight`` the body
      weight m g (N) of the figure;
    * per thigh (``"l"``, ``"r"``), over the steps after the seat breaks at which the thigh's
      capsule pushes on the seat's box: ``slide[side]`` the range of the thigh's position along
      the seat's width (:func:`thigh_offset`, m), ``last_on[side]`` the last such step's time
      (None: never); ``off[side]`` whether it is off the seat now;
    * ``seated_load``: the smallest total normal force of the thighs on the seat over the steps
      before the break (N);
    * ``overlap``, ``overlap_at``: the deepest the seat's box and any collision geom of the
      figure overlap (:func:`seat_overlap`, m) and (the time, the figure geom's name) where.

    The forces are the simulation's own geom contacts of each step
    (:meth:`linkdyn.sim.Simulation.geom_contacts`, what the recording keeps at its samples).
    """

    def __init__(self, sim):
        m = sim.model
        g = list(m.geom_names)
        self.ground = float(m.geom_pos[g.index("ground")][2])
        self.head_radius = float(m.geom_size[g.index("head")][0])
        self.weight = float(sum(m.inertia[i][0, 0] for i in range(m.nbody) if not m.is_virtual[i]
                                and not m.body_names[i].startswith(("l_rope", "r_rope", "seat")))) * 9.81
        self.head_low, self.max_force, self.max_force_at = np.inf, 0.0, None
        self._ys = {"l": [], "r": []}
        self.last_on = {"l": None, "r": None}
        self.off = {"l": False, "r": False}
        self.seated_load = np.inf
        self.overlap, self.overlap_at = 0.0, None

    @staticmethod
    def nothing(sim):
        """The action of the watch's condition, which never fires."""

    @property
    def slide(self) -> dict:
        return {s: float(np.ptp(y)) if len(y) else 0.0 for s, y in self._ys.items()}

    def __call__(self, sim) -> bool:
        m, q = sim.model, sim.q
        head = frame_pose(m, q, "head_centre")[2, 3] - self.head_radius - self.ground
        self.head_low = min(self.head_low, float(head))
        con = sim.geom_contacts()
        names, fn = con.names, con.normal_force
        if len(con):
            size = np.linalg.norm(con.force, axis=1)
            k = int(np.argmax(size))
            if size[k] > self.max_force:
                self.max_force, self.max_force_at = float(size[k]), (float(sim.t), names[k])
        seated = any(lp.name == "seat_l_end__l_rope_end" for lp in m.loops)
        if seated and len(names):       # (the step of the break starts the new structure's contacts afresh)
            self.seated_load = min(self.seated_load, float(sum(f for n, f in zip(names, fn)
                                                                if n in ("l_thigh/seat", "r_thigh/seat"))))
        depth = seat_overlap(m, q)
        which = max(depth, key=depth.get)
        deep = depth[which]
        if deep > self.overlap:
            self.overlap, self.overlap_at = deep, (float(sim.t), which)
        for s in ("l", "r"):
            on = any(n == f"{s}_thigh/seat" and f > 0.0 for n, f in zip(names, fn))
            self.off[s] = not on
            if on and not seated:
                self._ys[s].append(thigh_offset(m, q, s))
                self.last_on[s] = float(sim.t)
        return False


# ---------------------------------------------------------------------------------------
# drop and land (pseudo-closed chains with the ground, Nakamura and Yamane 2000 Fig. 11)
def posture_controller(model, q_ref, frequency: float = 12.0, damping_ratio: float = 1.0, stance: bool = True,
                       stance_gap: float = 1e-3, passive=()):
    """Computed-torque control of the posture ``q_ref`` of ``model`` by every joint but the
    floating base, the virtual links and the joints named in ``passive`` (e.g. a swing's ropes),
    whatever model the simulation is on (joints matched by name).  The joints are asked for the accelerations a* = -w^2 e - 2 z w v (e the error on the
    joints' manifolds, w = ``frequency`` rad/s, z the damping ratio), and the torques that give
    them come from the dynamics itself:

    * an open chain with an unactuated floating base: tau_a = (M_aa - M_ab M_bb^-1 M_ba) a*
      + b_a - M_ab M_bb^-1 b_b (the base's reaction taken into account);
    * a closed chain (feet welded to the ground): the closed-chain inverse dynamics of
      Nakamura and Yamane (2000, eqs. 1-4) for theta_G'' = a* on the generalized coordinates
      (the actuated joints; the base is dependent), least-norm over the redundant actuators;
      an underactuated one (hands on a bar: the swing about the bar has no actuator) gets the
      nearest motion the actuators can make, the loops as rows of ``_constrained_torque``;
    * a figure resting on contact points (``stance``: the model's contacts within
      ``stance_gap`` m of a plane, e.g. the sole corners on the ground, the thighs on a seat):
      those points are held still (their rows J a + J' v = 0 with the loops', their forces
      unknowns, the accelerations closest to a* on the joints in least squares;
      ``_constrained_torque``), so the legs or the seat carry the body's weight; points whose
      normal force would pull are left out, points whose friction would leave its cone only
      keep their normal row (they may slide), and the rest is solved again (the contacts
      themselves stay unilateral in the simulation).

    Gains on the joints' own inertia M_aa instead would meet a much smaller effective inertia
    (the base moves too): ~90 times stiffer than asked on the human figure, and beyond an
    explicit integrator's reach at dt = 1 ms."""
    from ..dynamics.crba import crba
    from ..dynamics.rnea import nonlinear_effects
    from ..loops.dynamics import inverse_dynamics
    from ..loops.kinematics import analyze, loop_bias, loop_jacobian
    ref_model, ref = model, np.asarray(q_ref, dtype=float)
    w2, c = frequency ** 2, 2.0 * damping_ratio * frequency
    underactuated, refs = set(), {}

    def control(t, q, v, m):
        act = np.ones(m.nv, dtype=bool)
        for i in range(1, m.nbody):
            if m.jnt_type[i] == J.FREE or m.is_virtual[i] or m._joint_names[i] in passive:
                act[m.jnt_vadr[i]:m.jnt_vadr[i] + m.jnt_nv[i]] = False
        if m not in refs:                         # the posture on this structure (models are immutable)
            if len(refs) > 16:
                refs.clear()
            refs[m] = structure.map_state(ref_model, m, ref)
        a_star = -w2 * difference(m, refs[m], q) - c * v
        tau = np.zeros(m.nv)
        # the contact points on a plane now (the soles on the ground, the thighs on a seat)
        on, cat = np.zeros(0, dtype=np.int64), None
        if stance:
            cat = _contact_catalog(m)
            if cat is not None:
                gaps = cat.gaps(q)
                on = np.flatnonzero(gaps <= stance_gap)
        if m.nloops and not len(on) and m not in underactuated:
            names = [n for n in m.joint_names if act[m.v_index(n)]]
            an = analyze(m, q, actuated=names)
            a = an.accelerations(a_star[an.G_dofs], loop_bias(m, q, v))
            try:
                tau[an.A_dofs] = inverse_dynamics(m, q, v, a, names, analysis=an).tau_A
                return tau
            except ValueError:      # underactuated (a figure hanging from a bar swings freely about
                underactuated.add(m)  # it): the least-squares form below, with the loops as its rows
                # (remembered per model: the loop analysis is most of a step's cost)
        M, b = crba(m, q), nonlinear_effects(m, q, v)
        if m.nloops or len(on):
            JL = loop_jacobian(m, q) if m.nloops else np.zeros((0, m.nv))
            dL = loop_bias(m, q, v) if m.nloops else np.zeros(0)
            slide = np.zeros(len(on), dtype=bool)
            for _ in range(2 * len(on) + 2):
                k = len(on)
                if k:
                    u = cat.units(q, v, on, with_drift=True)
                    st = ~slide                                # sticking points hold their tangents too
                    Jr = np.concatenate([JL, u.N, u.T[st].reshape(-1, m.nv)])
                    dr = np.concatenate([dL, u.drift_n, u.drift_t[st].reshape(-1)])
                else:
                    Jr, dr = JL, dL
                if not len(Jr):
                    break
                tau_c, lam = _constrained_torque(m, M, b, a_star, act, Jr, dr)
                push = lam[len(dL):len(dL) + k]
                if k and push.min() < 0.0:                     # the ground only pushes: drop the pulling ones
                    keep = push >= push.max() * 1e-9 if push.max() > 0 else np.zeros(k, dtype=bool)
                    on, slide = on[keep], slide[keep]
                    continue
                if k and st.any():                             # friction the cone cannot give: let them slide
                    ft = np.hypot(*lam[len(dL) + k:].reshape(-1, 2).T)
                    over = np.zeros(k, dtype=bool)
                    over[st] = ft > u.mu[st] * push[st] * (1 + 1e-9)
                    if over.any():
                        slide |= over
                        continue
                return tau_c
        p, a_ = ~act, act
        K = np.linalg.solve(M[np.ix_(p, p)], M[np.ix_(p, a_)]) if p.any() else np.zeros((0, a_.sum()))
        S = M[np.ix_(a_, a_)] - M[np.ix_(a_, p)] @ K
        tau[a_] = S @ a_star[a_] + b[a_] - K.T @ b[p]
        return tau
    return control


#: per model (a model is immutable): the catalog of its contacts (None: none)
_CONTACTS: dict = {}


class _GeomStance:
    """The posture controller's view of a model whose contacts are collision geometry
    (``ModelBuilder.add_geom``): the same two calls as a ``UnitCatalog`` of contact points,
    ``gaps(q)`` (the geom contacts within ``margin`` of touching at q) and ``units(q, v, on,
    with_drift)`` (the units of those with indices ``on``, through the model's
    ``GeomCatalog``: normal and tangent rows and their drifts)."""

    def __init__(self, m, margin: float = 0.01):
        from ..contact.geom_rows import GeomCatalog
        from ..loops.data import prepare
        self.geoms, self.margin, self._con = GeomCatalog(m, prepare(m)), margin, None

    def gaps(self, q):
        self._con = (q.copy(), *self.geoms.collide(q, self.margin))
        return self._con[2][:, 0] - self._con[2][:, 9]         # dist less the pair's skin

    def units(self, q, v, on, with_drift=True):
        q0, ci, cf = self._con
        if not np.array_equal(q0, q):
            self.gaps(q)
            q0, ci, cf = self._con
        return self.geoms.units(q, v if with_drift else None, ci[on], cf[on])


def _contact_catalog(m):
    """The UnitCatalog of ``m``'s contact pairs (no limits), or None when it has none; for a
    model whose contacts are collision geometry (geom pairs, no contact points), a
    :class:`_GeomStance`."""
    if m in _CONTACTS:
        return _CONTACTS[m]
    cat = None
    if m.contacts and m.planes:
        from ..contact.rows import UnitCatalog
        cat = UnitCatalog(m, limits=False)
        cat = None if cat.empty else cat
    elif m.full_model.ngeom and len(m.full_model.geom_pairs):
        cat = _GeomStance(m)
    if len(_CONTACTS) > 64:
        _CONTACTS.clear()
    _CONTACTS[m] = cat
    return cat


def _constrained_torque(m, M, b, a_star, act, J, drift):
    """Torques for the posture accelerations a* on the actuated dofs ``act`` of a system held
    by the rows J (J a + drift = 0: loops, or contact points held still) with forces lambda:
    the accelerations a and lambda minimise |a_act - a*|^2 (+ 1e-8 |a_rest|^2 and a small
    multiple of |lambda|^2, which picks the least-norm split of redundant rows) subject to the
    unactuated dofs' equations of motion M_u a + b_u = J_u^T lambda; then
    tau = (M a + b - J^T lambda)_act.  Where the actuators can produce a* exactly (a fully
    actuated closed chain) this is the closed-chain inverse dynamics; where they cannot (a
    figure swinging on a bar, a foot on one corner) it is the nearest motion they can.
    Returns (tau, lambda)."""
    nv = m.nv
    nc, base = J.shape[0], ~act
    nb = int(base.sum())
    scale = max(float(np.trace(M)) / nv, 1e-12)
    eps = 1e-8
    n = nv + nc
    h = np.empty(n)                                   # the diagonal of H
    h[:nv] = np.where(act, 1.0, eps)
    h[nv:] = eps / scale ** 2
    C = np.empty((nb + nc, n))
    C[:nb, :nv] = M[base]
    C[:nb, nv:] = -J[:, base].T
    C[nb:, :nv] = J
    C[nb:, nv:] = 0.0
    g = np.zeros(n)
    g[:nv][act] = a_star[act]
    d = np.concatenate([-b[base], -drift])
    # H is diagonal: z = H^-1 (g - C^T mu) with the Schur complement (C H^-1 C^T) mu = C H^-1 g - d,
    # Cholesky-factored with a relative 1e-12 on its diagonal (dependent rows, e.g. redundant
    # contact points, get the least-norm split)
    h_inv = 1.0 / h
    CH = C * h_inv
    S = CH @ C.T
    S[np.diag_indices_from(S)] += 1e-12 * max(float(np.abs(np.diag(S)).max()), 1e-300)
    L, info = scipy.linalg.lapack.dpotrf(S, lower=1, clean=0)      # LAPACK directly: this is per step
    if info == 0:
        mu, info = scipy.linalg.lapack.dpotrs(L, CH @ g - d, lower=1)
    if info == 0:
        z = h_inv * (g - C.T @ mu)
    else:
        K = np.block([[np.diag(h), C.T], [C, np.zeros((nb + nc, nb + nc))]])
        z = np.linalg.lstsq(K, np.concatenate([g, d]), rcond=1e-12)[0]
    a, lam = z[:nv], z[nv:n]
    tau = np.zeros(nv)
    tau[act] = (M @ a + b - J.T @ lam)[act]
    return tau, lam




def drop(height_above: float = 0.5, figure=None, ground: bool = True):
    """(model, q): a figure (default the 40-DoF one) standing ``height_above`` metres above the
    ground, knees slightly bent, at rest.  ``ground``: the model has the ground plane z = 0 that
    the figure's contact points land on."""
    model = human_figure() if figure is None else figure
    if ground:
        b = _b.ModelBuilder.from_model(model)
        b.add_ground()
        model = b.build()
    q = standing_configuration(model)
    q[2] += height_above
    for side in ("l", "r"):
        q[model.q_slice(f"{side}_knee")] = 0.3
        if f"{side}_hip" in model.joint_names and model.jnt_nq[model.joint_id(f"{side}_hip")] == 4:
            q[model.q_slice(f"{side}_hip")] = spatial.quat_from_axis_angle([0, 1, 0], -0.15)
        if f"{side}_ankle" in model.joint_names:
            q[model.q_slice(f"{side}_ankle")] = spatial.quat_from_axis_angle([0, 1, 0], -0.15)
    return model, q


#: the posture controller's frequency (rad/s) for a landing on contacts: stiff enough that the
#: legs take a landing from 0.3-0.7 m without folding (12 rad/s folds them at 0.5 m)
LANDING_FREQUENCY = 25.0


def drop_simulation(dt: float = 1e-3, height_above: float = 0.5, record_every: int = 10, landing: str = "contact",
                    **options):
    """A figure drops from ``height_above`` m and lands; a posture controller keeps the joints near
    the starting posture.  ``landing``:

    * ``"contact"`` (default): the soles' corner points meet the ground plane as unilateral
      contacts with Coulomb friction (``linkdyn.contact``): an inelastic impact, then contact
      forces that push and never pull, so a foot can roll, lift and slide; stepped by time
      stepping (``contact_method="timestep"`` unless ``options`` say otherwise) under the
      posture controller with its stance branch at ``LANDING_FREQUENCY``;
    * ``"weld"``: a sole reaching the ground is welded there (a pseudo-closed chain with the
      ground, Nakamura and Yamane 2000, Fig. 11, with the velocity jump of a perfectly inelastic
      landing), as in the paper; the ground then holds the foot whatever the force.

    ``options`` go to :class:`~linkdyn.Simulation`."""
    from ..sim import Simulation
    if landing not in ("contact", "weld"):
        raise ValueError(f"landing: expected 'contact' or 'weld', got {landing!r}")
    model, q = drop(height_above, ground=landing == "contact")
    if landing == "weld":
        options.setdefault("contacts", False)
        control = posture_controller(model, q)
    else:
        options.setdefault("contact_method", "timestep")
        control = posture_controller(model, q, frequency=LANDING_FREQUENCY)
    sim = Simulation(model, q, dt=dt, record_every=record_every, controller=control, **options)
    if landing == "weld":
        for side in ("l", "r"):
            sim.when(sim.below(f"{side}_sole", "z", 0.0), "connect", f"{side}_sole", "world")
    return sim
