"""Built-in serial arms from Denavit-Hartenberg tables: a planar two-link arm, the PUMA 560, the
Stanford arm, SCARA, cartesian, cylindrical and polar arms (each ``name()`` builds the model,
``name_links()`` gives its table).

The model built from a table, :func:`from_dh` (both conventions, Spong, Hutchinson and Vidyasagar 2006,
chs. 3-4, and Craig's), is here; the table itself (:class:`DHLink`, :func:`dh_table`, :func:`dh_transform`)
is in :mod:`linkdyn.model.dh`, re-exported here.
"""
from __future__ import annotations

import warnings
from math import pi
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from ..model import builder as _b
from .. import spatial
from ..model import joints as J
from ..model.dh import _KINDS, DHLink, dh_table, dh_transform  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..model.model import Model

__all__ = ["DHLink", "from_dh", "dh_transform", "dh_table", "planar_2link", "puma560", "stanford_arm", "scara",
           "cartesian_arm", "cylindrical_arm", "polar_arm"] + [
    f"{n}_links" for n in ("planar_2link", "puma560", "stanford_arm", "scara", "cartesian_arm", "cylindrical_arm",
                           "polar_arm")]


def _pose4(T, what):
    if T is None:
        return np.eye(4)
    R, p = _b.as_pose(T, what)
    out = np.eye(4)
    out[:3, :3], out[:3, 3] = R, p
    return out


def _dh_inertia(m, c, I, i):
    """Link i's inertia; one whose principal moments break the triangle inequality of a rigid
    body (published parameter sets do: Armstrong, Khatib and Burdick 1986's PUMA 560 wrist,
    the Stanford arm's links) is kept as given, with a :class:`linkdyn.model.builder.InertiaWarning`."""
    if m > 0.0 and _b.triangle_violation(np.linalg.eigvalsh(0.5 * (I + I.T))) > 0.0:
        warnings.warn(f"DH link {i}: the principal moments of inertia {np.round(np.linalg.eigvalsh(I), 9).tolist()} "
                      "break the triangle inequality A + B >= C of a rigid body; kept as given", _b.InertiaWarning,
                      stacklevel=4)
        return spatial.spatial_inertia(m, c, 0.5 * (I + I.T))
    return _b.Inertia(m, c, I)


def from_dh(links: Iterable[DHLink], convention: str = "standard", base: ArrayLike | tuple[ArrayLike, ArrayLike] | None = None, tool: ArrayLike | tuple[ArrayLike, ArrayLike] | None = None,
            name: str = "dh_arm", gravity: ArrayLike = (0.0, 0.0, -9.81)) -> Model:
    """Build a :class:`~linkdyn.Model` of a serial arm from a DH table (list of :class:`DHLink`).

    ``base`` (4x4) places DH frame 0 in the world; ``tool`` (4x4) is the tool frame in DH frame
    ``n``.  See the module docstring for the joint-variable convention (``q = 0`` is the table's
    offset) and the frames (``"link0"`` .. ``"link{n}"``, ``"tool"``).  The model keeps a copy of
    the table (``model.dh_links``, ``model.dh_convention``): ``print(model.dh_table())``.
    """
    if convention not in ("standard", "modified"):
        raise ValueError(f"convention: expected 'standard' or 'modified', got {convention!r}")
    links = list(links)
    if not links:
        raise ValueError("links: expected at least one DHLink")
    for k, L in enumerate(links):
        if not isinstance(L, DHLink):
            raise TypeError(f"links[{k}]: expected a DHLink, got {type(L).__name__}")
    base4, tool4 = _pose4(base, "base"), _pose4(tool, "tool")
    b = _b.ModelBuilder(name, gravity=gravity)
    b.add_frame("link0", "world", placement=base4)
    parent, placement = "world", base4
    for i, L in enumerate(links, start=1):
        S = dh_transform(L.a, L.alpha, L.d, L.theta, convention)   # the link transform at q = 0
        joint = J.Revolute("z") if L.kind == "revolute" else J.Prismatic("z")
        if convention == "standard":
            # body i sits at DH frame i-1 (joint i's axis z_{i-1}); DH frame i = body * S_i
            body_place, frame_in_body = placement, S
        else:
            # body i is DH frame i: placement S_i in DH frame i-1, joint about z_i
            body_place, frame_in_body = placement @ S, np.eye(4)
        R, p = frame_in_body[:3, :3], frame_in_body[:3, 3]
        inertia = _dh_inertia(float(L.mass), R @ L.com + p, R @ L.inertia @ R.T, i)
        body = f"body{i}"
        b.add_body(body, parent, joint, placement=body_place, inertia=inertia, joint_name=f"joint{i}",
                   lower=[L.lower], upper=[L.upper], armature=[L.armature], damping=[L.viscous],
                   friction=[L.coulomb])
        b.add_frame(f"link{i}", body, placement=frame_in_body)
        parent = body
        placement = frame_in_body if convention == "standard" else np.eye(4)
    b.add_frame("tool", parent, placement=placement @ tool4 if convention == "standard" else tool4)
    model = b.build()
    # the table itself, for model.dh_table() (copies: later edits of ``links`` do not reach it)
    model.dh_links = tuple(replace(L) for L in links)
    model.dh_convention = convention
    return model


# ------------------------------------------------------------------------------ built-in arms

def _rod_x(m, length):
    """Uniform slender rod along x: inertia about its centre of mass."""
    return np.diag([0.0, m * length ** 2 / 12.0, m * length ** 2 / 12.0])


def _box(m, sx, sy, sz):
    return m / 12.0 * np.diag([sy * sy + sz * sz, sx * sx + sz * sz, sx * sx + sy * sy])


def planar_2link_links(l1: float = 1.0, l2: float = 1.0, m1: float = 1.0, m2: float = 1.0) -> list:
    """The DH table (list of :class:`DHLink`) of :func:`planar_2link`."""
    links = [DHLink(a=l1, kind="revolute", mass=m1, com=(-l1 / 2, 0, 0), inertia=_rod_x(m1, l1)),
             DHLink(a=l2, kind="revolute", mass=m2, com=(-l2 / 2, 0, 0), inertia=_rod_x(m2, l2))]
    return links


def planar_2link(l1: float = 1.0, l2: float = 1.0, m1: float = 1.0, m2: float = 1.0, **kwargs: Any) -> Model:
    """The planar 2-link arm of Spong, Hutchinson and Vidyasagar 2006, chs. 3-4 / 5.4 (two revolute joints about z, standard DH
    ``a_i = l_i``, ``alpha_i = d_i = theta_i = 0``), links modelled as *uniform slender rods*.

    In the notation of Spong, Hutchinson and Vidyasagar 2006, ch. 7 (eqs. (5.79)-(5.87)), the centre of mass of link ``i``
    is at ``[-r_i, 0, 0]`` in DH frame ``i`` with ``r_i = l_i / 2`` (so the distance from the joint
    is ``l_ci = l_i / 2``), and ``J_i = m_i l_i^2 / 12`` about the z axis.  The arm moves in the
    xy-plane; with the default gravity (-z) gravity does no work, as in Spong, Hutchinson and Vidyasagar 2006, ch. 7.
    The tool frame is DH frame 2 (the tip).  ``kwargs`` go to :func:`from_dh`.
    """
    kwargs.setdefault("name", "planar_2link")
    return from_dh(planar_2link_links(l1=l1, l2=l2, m1=m1, m2=m2), **kwargs)


# The Puma 560's drives, per joint, as in Corke's Robotics Toolbox (``mdl_puma560``, and the Python
# toolbox's ``Puma560``), which takes them from Armstrong, Khatib and Burdick (1986) through
# Corke and Armstrong-Helouvry (1994); all referred to the motor side of the gearbox:
#: motor (armature) inertia Jm [kg m^2]
_PUMA_JM = (200e-6, 200e-6, 200e-6, 33e-6, 33e-6, 33e-6)
#: gear ratio G (motor : link; the sign is the motor's sense of rotation)
_PUMA_G = (-62.6111, 107.815, -53.7063, 76.0364, 71.923, 76.686)
#: viscous friction B [N m s / rad]
_PUMA_B = (1.48e-3, 0.817e-3, 1.38e-3, 71.2e-6, 82.6e-6, 36.7e-6)
#: Coulomb friction (Tc+ for q' > 0, Tc- for q' < 0) [N m]
_PUMA_TC = ((0.395, -0.435), (0.126, -0.071), (0.132, -0.105), (11.2e-3, -16.9e-3), (9.26e-3, -14.5e-3),
            (3.96e-3, -10.5e-3))
#: height of the shoulder axis above the mounting surface [m] (the Python toolbox's ``Puma560``)
PUMA_PEDESTAL = 0.672


def _pedestal(pedestal) -> float:
    if pedestal is True:
        return PUMA_PEDESTAL
    if pedestal is False or pedestal is None:
        return 0.0
    try:
        h = float(pedestal)
    except (TypeError, ValueError):
        raise TypeError(f"pedestal: expected True, False or a height in metres, got {pedestal!r}") from None
    if not np.isfinite(h):
        raise ValueError(f"pedestal: expected a finite height, got {pedestal!r}")
    return h


def puma560_links(armature: bool = True, pedestal: bool | float = False, friction: bool = False) -> list[DHLink]:
    """The DH table (list of :class:`DHLink`) of :func:`puma560` (same arguments)."""
    deg = pi / 180
    rows = [  # a, alpha, d, mass, com, (Ixx, Iyy, Izz), limits (deg; Wang and Chen 1991)
        (0.0, pi / 2, _pedestal(pedestal), 0.0, (0, 0, 0), (0, 0.35, 0), (-160, 160)),
        (0.4318, 0.0, 0.0, 17.4, (-0.3638, 0.006, 0.2275), (0.13, 0.524, 0.539), (-45, 225)),
        (0.0203, -pi / 2, 0.15005, 4.8, (-0.0203, -0.0141, 0.070), (0.066, 0.086, 0.0125), (-225, 45)),
        (0.0, pi / 2, 0.4318, 0.82, (0, 0.019, 0), (1.8e-3, 1.3e-3, 1.8e-3), (-110, 170)),
        (0.0, -pi / 2, 0.0, 0.34, (0, 0, 0), (0.3e-3, 0.4e-3, 0.3e-3), (-100, 100)),
        (0.0, 0.0, 0.0, 0.09, (0, 0, 0.032), (0.15e-3, 0.15e-3, 0.04e-3), (-266, 266)),
    ]
    links = []
    for (a, al, d, m, c, I, lim), jm, g, B, (tp, tn) in zip(rows, _PUMA_JM, _PUMA_G, _PUMA_B, _PUMA_TC):
        links.append(DHLink(a=a, alpha=al, d=d, kind="revolute", mass=m, com=c, inertia=np.diag(I),
                            armature=(jm * g * g if armature else 0.0),
                            viscous=(B * g * g if friction else 0.0),
                            coulomb=(abs(g) * 0.5 * (tp - tn) if friction else 0.0),
                            lower=lim[0] * deg, upper=lim[1] * deg))
    return links


def puma560(armature: bool = True, pedestal: bool | float = False, friction: bool = False, **kwargs: Any) -> Model:
    """Unimation PUMA 560, standard DH, with the kinematic and dynamic parameters of Peter Corke's
    Robotics Toolbox ``mdl_puma560`` (Corke and Armstrong-Helouvry 1994, "A search for consensus
    among model parameters reported for the PUMA 560 robot", ICRA, pp. 1608-1613).

    Where the numbers come from:

    * kinematics: Paul's link twists (the zero pose a "righty" L), d_3 = 0.15005 m as in Armstrong,
      Khatib and Burdick (1986) and Corke and Armstrong-Helouvry (1994), a_2 = 0.4318 m,
      a_3 = 0.0203 m, d_4 = 0.4318 m;
    * link masses, centres of mass and inertias about the centre of mass (in DH frame i):
      Armstrong, Khatib and Burdick (1986, "The explicit dynamic model and inertial parameters of
      the PUMA 560 arm", ICRA), as Corke and Armstrong-Helouvry (1994) tabulate them; link 1 has
      mass 0 and only its inertia about its axis, 0.35 kg m^2, matters (Armstrong et al. found no
      mass for it);
    * drives (Armstrong, Khatib and Burdick 1986, in Corke and Armstrong-Helouvry 1994), at the
      motor: inertia Jm, gear ratio G, viscous friction B and Coulomb friction Tc+ / Tc-;
    * joint limits: Wang and Chen (1991, IEEE Trans. Robotics and Automation 7(4)), as the Python
      toolbox's ``Puma560`` has them.

    ``armature`` (default on): the motor inertias seen at the link, Jm G^2, on the diagonal of the
    mass matrix (as Corke's ``rne`` does).  ``pedestal``: False (default) puts the shoulder at the
    base, d_1 = 0, as ``mdl_puma560`` (MATLAB) does; True uses the Python toolbox's d_1 = 0.672 m
    (mounting surface to shoulder axis); a number is d_1 in metres.  With link 1 massless it moves
    the frames only, not the dynamics.  ``friction`` (default off): the joint friction seen at the
    link, viscous B G^2 and Coulomb friction.  The toolbox's Coulomb friction is asymmetric,
    |G| Tc+ for q' > 0 and |G| |Tc-| for q' < 0; linkdyn's joints take one level for both
    directions (``tau += coulomb sign(q')``), so here it is the mean |G| (Tc+ - Tc-) / 2, which
    leaves out the offset |G| (Tc+ + Tc-) / 2 (0.19 N m at joint 5 to 2.96 N m at joint 2 in size)
    that the toolbox adds to it in both directions of motion.  Centres of mass and inertias are in DH frame
    ``i``.  ``kwargs`` go to :func:`from_dh`; ``model.dh_table()`` prints the table.
    """
    kwargs.setdefault("name", "puma560")
    with warnings.catch_warnings():
        # the published wrist inertias break A + B >= C (kept as published: see _dh_inertia)
        warnings.simplefilter("ignore", _b.InertiaWarning)
        return from_dh(puma560_links(armature=armature, pedestal=pedestal, friction=friction), **kwargs)


def stanford_arm_links(armature: bool = True) -> list:
    """The DH table (list of :class:`DHLink`) of :func:`stanford_arm`."""
    deg, inch = pi / 180, 0.0254
    r = lambda lim: dict(lower=-lim * deg, upper=lim * deg)   # noqa: E731
    links = [
        DHLink(d=0.412, alpha=-pi / 2, mass=9.29, com=(0, 0.0175, -0.1105), inertia=np.diag([0.276, 0.255, 0.071]),
               armature=0.953 if armature else 0.0, **r(170)),
        DHLink(d=0.154, alpha=pi / 2, mass=5.01, com=(0, -1.054, 0), inertia=np.diag([0.108, 0.018, 0.100]),
               armature=2.193 if armature else 0.0, **r(170)),
        DHLink(theta=-pi / 2, a=0.0203, kind="prismatic", mass=4.25, com=(0, 0, -6.447),
               inertia=np.diag([2.51, 2.51, 0.006]), armature=0.782 if armature else 0.0,
               lower=12 * inch, upper=50 * inch),
        DHLink(alpha=-pi / 2, mass=1.08, com=(0, 0.092, -0.054), inertia=np.diag([0.002, 0.001, 0.001]),
               armature=0.106 if armature else 0.0, **r(170)),
        DHLink(alpha=pi / 2, mass=0.630, com=(0, 0.566, 0.003), inertia=np.diag([0.003, 0.0004, 0.0]),
               armature=0.097 if armature else 0.0, **r(90)),
        DHLink(mass=0.51, com=(0, 0, 1.554), inertia=np.diag([0.013, 0.013, 0.0003]),
               armature=0.020 if armature else 0.0, **r(170)),
    ]
    return links


def stanford_arm(armature: bool = True, **kwargs: Any) -> Model:
    """Stanford arm (RRPRRR), standard DH, with the parameters of Peter Corke's Robotics Toolbox
    ``mdl_stanford`` as the Python toolbox's ``Stanford`` has it (a_3 = 0.0203 m, d_6 = 0; the MATLAB
    file has a_3 = 0, d_6 = 0.263 m) (kinematics: Stanford AIM-177 fig. 2.3; dynamics: R. P. Paul, "Robot
    Manipulators", 1981, tables 6.5, 6.6).  Joint 3 is prismatic with ``theta = -pi/2`` and
    ``q_3 = d_3`` (limits 12 to 50 inches).  ``armature=True`` adds Corke's ``Jm`` (gear ratio 1).

    The centres of mass are copied as Corke lists them; several (e.g. link 2's 1.054 m, link 3's
    6.447 m) are implausible for this arm's size, so treat the dynamics as a test case rather than
    a faithful model of the hardware.  ``kwargs`` go to :func:`from_dh`.
    """
    kwargs.setdefault("name", "stanford_arm")
    with warnings.catch_warnings():
        # the published link inertias break A + B >= C (kept as published: see _dh_inertia)
        warnings.simplefilter("ignore", _b.InertiaWarning)
        return from_dh(stanford_arm_links(armature=armature), **kwargs)


def scara_links(l1: float = 0.35, l2: float = 0.30, h: float = 0.40) -> list:
    """The DH table (list of :class:`DHLink`) of :func:`scara`."""
    links = [DHLink(a=l1, d=h, mass=4.0, com=(-l1 / 2, 0, 0), inertia=_box(4.0, l1, 0.08, 0.08)),
             DHLink(a=l2, alpha=pi, mass=3.0, com=(-l2 / 2, 0, 0), inertia=_box(3.0, l2, 0.07, 0.07)),
             DHLink(kind="prismatic", mass=1.0, com=(0, 0, -0.1), inertia=_box(1.0, 0.03, 0.03, 0.2),
                    lower=0.0, upper=0.2),
             DHLink(mass=0.3, com=(0, 0, 0.02), inertia=_box(0.3, 0.05, 0.05, 0.04))]
    return links


def scara(l1: float = 0.35, l2: float = 0.30, h: float = 0.40, **kwargs: Any) -> Model:
    """SCARA arm (RRPR, Spong, Hutchinson and Vidyasagar 2006, ch. 1), standard DH: ``a_1 = l1``, ``d_1 = h``; ``a_2 = l2``,
    ``alpha_2 = pi`` (so z_2 points down); prismatic ``d_3 = q_3`` (downwards); wrist roll.
    Dimensions and masses are *illustrative* (roughly a 0.65 m reach table-top SCARA), not taken
    from a datasheet.  ``kwargs`` go to :func:`from_dh`.
    """
    kwargs.setdefault("name", "scara")
    return from_dh(scara_links(l1=l1, l2=l2, h=h), **kwargs)


def cartesian_arm_links(stroke: float = 1.0) -> list:
    """The DH table (list of :class:`DHLink`) of :func:`cartesian_arm`."""
    box = lambda m: _box(m, 0.1, 0.1, 0.1)   # noqa: E731
    lim = dict(lower=0.0, upper=stroke)
    links = [DHLink(alpha=-pi / 2, kind="prismatic", mass=8.0, inertia=box(8.0), **lim),
             DHLink(theta=-pi / 2, alpha=-pi / 2, kind="prismatic", mass=5.0, inertia=box(5.0), **lim),
             DHLink(kind="prismatic", mass=2.0, com=(0, 0, -0.1), inertia=box(2.0), **lim)]
    return links


def cartesian_arm(stroke: float = 1.0, **kwargs: Any) -> Model:
    """Cartesian (PPP) arm of Spong, Hutchinson and Vidyasagar 2006, ch. 1, standard DH: joint 1 along world z, joint 2
    along world y, joint 3 along world x (``alpha_1 = -pi/2``; ``theta_2 = -pi/2``,
    ``alpha_2 = -pi/2``).  Masses and the ``[0, stroke]`` limits are *illustrative*."""
    kwargs.setdefault("name", "cartesian_arm")
    return from_dh(cartesian_arm_links(stroke=stroke), **kwargs)


def cylindrical_arm_links(h: float = 0.5) -> list:
    """The DH table (list of :class:`DHLink`) of :func:`cylindrical_arm`."""
    links = [DHLink(d=h, mass=6.0, com=(0, 0, -h / 2), inertia=_box(6.0, 0.15, 0.15, h)),
             DHLink(alpha=-pi / 2, kind="prismatic", mass=3.0, inertia=_box(3.0, 0.1, 0.1, 0.1), lower=0.0, upper=1.0),
             DHLink(kind="prismatic", mass=1.5, com=(0, 0, -0.25), inertia=_box(1.5, 0.05, 0.05, 0.5),
                    lower=0.0, upper=0.8)]
    return links


def cylindrical_arm(h: float = 0.5, **kwargs: Any) -> Model:
    """Cylindrical (RPP) arm of Spong, Hutchinson and Vidyasagar 2006, ch. 1, standard DH: base rotation about z (``d_1 = h``),
    vertical prismatic ``d_2 = q_2`` (``alpha_2 = -pi/2``), horizontal radial prismatic
    ``d_3 = q_3``.  Dimensions and masses are *illustrative*."""
    kwargs.setdefault("name", "cylindrical_arm")
    return from_dh(cylindrical_arm_links(h=h), **kwargs)


def polar_arm_links(h: float = 0.5) -> list:
    """The DH table (list of :class:`DHLink`) of :func:`polar_arm`."""
    links = [DHLink(d=h, alpha=-pi / 2, mass=6.0, com=(0, h / 2, 0), inertia=_box(6.0, 0.15, h, 0.15)),
             DHLink(alpha=pi / 2, mass=3.0, inertia=_box(3.0, 0.15, 0.15, 0.15)),
             DHLink(d=0.3, kind="prismatic", mass=1.5, com=(0, 0, -0.25), inertia=_box(1.5, 0.05, 0.05, 0.5),
                    lower=-0.2, upper=0.5)]
    return links


def polar_arm(h: float = 0.5, **kwargs: Any) -> Model:
    """Polar (spherical, RRP) arm of Spong, Hutchinson and Vidyasagar 2006, ch. 1, standard DH: base rotation about z
    (``d_1 = h``, ``alpha_1 = -pi/2``), elevation (``alpha_2 = pi/2``), radial prismatic ``d_3 = q_3``
    (offset 0.3 m).  Dimensions and masses are *illustrative*."""
    kwargs.setdefault("name", "polar_arm")
    return from_dh(polar_arm_links(h=h), **kwargs)
