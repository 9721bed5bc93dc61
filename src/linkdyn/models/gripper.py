"""A geared example: a two-finger gripper whose four finger joints follow one actuator."""
from __future__ import annotations

import numpy as np

from ..model import joints as J
from ..model.builder import Inertia, ModelBuilder
from ..model.model import Model


def _box(mass, size, com):
    """A uniform box of ``size`` (x, y, z) with its centre at ``com``."""
    a, b, c = size
    I = mass / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    return Inertia(mass, com, I)


def geared_gripper(wrist: bool = True, rotor_inertia: float = 2e-6, reduction: float = 80.0) -> Model:
    """An underactuated two-finger gripper (nv = 2 with the wrist, 1 without): one motor, "grip",
    closes both fingers through gears.

    * "grip" (revolute, the leader) turns the left finger's proximal link; its motor's rotor
      (``rotor_inertia`` kg m^2 behind a ``reduction``:1 gearbox) adds rotor_inertia x
      reduction^2 to the joint's armature (:meth:`ModelBuilder.add_rotor`);
    * the right proximal joint follows it mirrored, q = -q_grip (a *parallel* coupling: the two
      joints share the palm as parent; tazz, "Formulation of Featherstone's algorithm", eqs. 36-40);
    * each distal joint follows its proximal joint at 0.7 (a *serial* coupling, eqs. 30-35),
      so that the fingertips curl as the fingers close (chains of gears: the right distal joint
      follows grip at -0.7);
    * with ``wrist``, the palm turns about the vertical on an independent revolute joint
      ("wrist", not coupled).

    ``model.full_model`` is the same gripper with all five joints independent."""
    b = ModelBuilder("geared_gripper")
    parent = "world"
    if wrist:
        b.add_body("palm", "world", J.Revolute("z"), inertia=_box(0.6, (0.08, 0.12, 0.04), (0, 0, 0.02)),
                   joint_name="wrist", lower=[-np.pi], upper=[np.pi], armature=[0.01])
        parent = "palm"
    else:
        b.add_body("palm", "world", J.Fixed(), inertia=_box(0.6, (0.08, 0.12, 0.04), (0, 0, 0.02)))
        parent = "palm"
    for side, y, sign in (("left", 0.04, 1.0), ("right", -0.04, -1.0)):
        prox_joint = "grip" if side == "left" else "right_proximal"
        b.add_body(f"{side}_proximal", parent, J.Revolute("x"), placement=(np.eye(3), [0.0, y, 0.04]),
                   inertia=_box(0.05, (0.02, 0.015, 0.06), (0, 0, 0.03)), joint_name=prox_joint,
                   lower=[-0.3 if sign > 0 else -1.2], upper=[1.2 if sign > 0 else 0.3])
        b.add_body(f"{side}_distal", f"{side}_proximal", J.Revolute("x"), placement=(np.eye(3), [0.0, 0.0, 0.06]),
                   inertia=_box(0.03, (0.02, 0.015, 0.045), (0, 0, 0.022)), joint_name=f"{side}_distal",
                   lower=[-1.0], upper=[1.0])
        b.add_frame(f"{side}_tip", f"{side}_distal", placement=(np.eye(3), [0.0, 0.0, 0.045]))
    b.add_rotor("grip", rotor_inertia, reduction)
    b.add_gear("right_proximal", "grip", -1.0)
    b.add_gear("left_distal", "grip", 0.7)
    b.add_gear("right_distal", "right_proximal", 0.7)
    return b.build()
