"""Structure-varying chains (Nakamura and Yamane 2000 sec. 4): links that connect and disconnect at run time.

Every connection is a new loop closure (sec. 4.2): a virtual link is added under one link,
pointing to the other, with a joint of any kind, and no parent/child relation is reversed; a
floating mechanism meeting the ground or another mechanism becomes a pseudo-closed chain
(Fig. 11) the same way.  A connection made at the current configuration is closed there: the
virtual link's joint frame is the connecting frame on one link, its real-link frame the same
pose on the other.  Structure changes build a new model; the state moves over by joint name.
"""
from __future__ import annotations

import numpy as np

from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

from .dynamics.energy import kinetic_energy
from .kinematics import forward_kinematics, frame_pose
from .model.builder import ModelBuilder
from .model.configuration import neutral
from .model.joints import FreeFlyer, Fixed, Joint
from .spatial import matrix_to_quat

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from .model.model import Model


def _frame(model, frame, what):
    """(body index, R, p of the frame in the body) for a frame name (or body name)."""
    try:
        k = model.frame_id(frame)
    except KeyError as exc:
        raise KeyError(f"{what}: {exc.args[0]}") from None
    return int(model.frame_body[k]), np.array(model.frame_R[k]), np.array(model.frame_p[k])


@overload
def map_state(old: Model, new: Model, q: ArrayLike, v: None = None) -> NDArray[np.float64]: ...


@overload
def map_state(old: Model, new: Model, q: ArrayLike, v: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]: ...


def map_state(old: Model, new: Model, q: ArrayLike, v: ArrayLike | None = None) -> NDArray[np.float64] | tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(q, v) of model ``old`` carried over to model ``new`` joint by joint (by name); joints
    that only ``new`` has start at their neutral configuration and at rest."""
    q = np.asarray(q, dtype=float)
    qn = neutral(new)
    vn = np.zeros(new.nv)
    for name in new.joint_names:
        if name in old._joint_index:
            qn[new.q_slice(name)] = q[old.q_slice(name)]
            if v is not None:
                vn[new.v_slice(name)] = np.asarray(v, dtype=float)[old.v_slice(name)]
    return (qn, vn) if v is not None else qn


def connect(model: Model, q: ArrayLike, frame: str | int, to: str | int = "world", joint: Joint | None = None,
            name: str | None = None) -> tuple[Model, NDArray[np.float64]]:
    """A new model in which ``frame`` (a frame or body of ``model``) is joined to ``to`` (another
    frame or body) by ``joint`` (any kind; default a weld), closed at the configuration ``q``:
    the joint's frame is ``frame``, with its axes given in ``frame``'s coordinates (so
    ``Revolute("y")`` turns about frame's y axis), and the joint is at its neutral position now.
    Returns ``(new_model, q_new)``.  The loop's name is ``name`` (default ``"<frame>__<to>"``).
    The velocity is not carried over here: use :func:`linkdyn.structure.connect_state`
    (or the simulation), which applies the velocity jump of the new joint."""
    a, Ra, pa = _frame(model, frame, "frame")
    b, Rb, pb = _frame(model, to, "to")
    if a == b:
        raise ValueError(f"connect: {frame!r} and {to!r} are on the same body {model.body_names[a]!r}")
    joint = Fixed() if joint is None else joint
    name = name or f"{frame}__{to}"
    # the real-link frame: the pose of `frame` seen from `to`'s body now
    T_a = frame_pose(model, q, frame)
    oMb = frame_pose(model, q, model.body_names[b])
    bMa = np.linalg.inv(oMb) @ T_a
    builder = ModelBuilder.from_model(model)
    builder.add_loop(name, model.body_names[a], model.body_names[b], joint, placement=(Ra, pa),
                     real_placement=(bMa[:3, :3], bMa[:3, 3]))
    new = builder.build()
    return new, map_state(model, new, q)


# ---------------------------------------------------------------------------------------
# velocities across a structure change (Nakamura and Yamane 2000 sec. 4.3)
@dataclass
class Jump:
    """A velocity jump: ``v`` after, ``dv`` = v after - v before, ``impulses`` (nloops, 6) each
    loop's impulse [linear; angular] (real link on virtual link, virtual link's frame),
    ``kinetic_before`` / ``kinetic_after`` the kinetic energies."""
    v: np.ndarray
    dv: np.ndarray
    impulses: np.ndarray
    kinetic_before: float
    kinetic_after: float

    @property
    def energy_loss(self) -> float:
        """The kinetic energy the impulse took (>= 0): the work of the impulse, negated."""
        return self.kinetic_before - self.kinetic_after


def velocity_jump(model: Model, q: ArrayLike, v: ArrayLike) -> Jump:
    """The velocity just after the loops of ``model`` take hold at (q, v) with a relative
    velocity: the impulse F with A dv = J^T F (eq. 20 / 29), the new joints' velocities free
    (eq. 23: no impulse along them) and the loops' velocity constraints met afterwards (eq. 22).
    Nakamura and Yamane (2000) solves this for one new loop in the generalized coordinates of the mechanisms
    (eqs. 24-28 for two mechanisms, 30-33 inside one, C = 0 for a weld); here it is solved for
    every loop at once in the velocities of the cut tree, where the new joint's velocity is a
    coordinate (eq. 23 is then the joint's own equation): min (dv^T M dv) s.t. J_C (v + dv) = 0,
    which is the same impulse (``tests/test_structure.py`` checks it against eqs. 24-33).  A
    perfectly inelastic joining: the kinetic energy never increases, momentum is conserved
    when the connection is internal."""
    from .loops.dynamics import velocity_projection
    q = np.asarray(q, dtype=float)
    v = np.asarray(v, dtype=float)
    t0 = float(kinetic_energy(model, q, v))
    if not model.nloops:
        return Jump(v.copy(), np.zeros(model.nv), np.zeros((0, 6)), t0, t0)
    dv, imp = velocity_projection(model, q, v, impulses=True)
    v1 = v + dv
    return Jump(v1, dv, imp, t0, float(kinetic_energy(model, q, v1)))


@dataclass
class Change:
    """The result of a structure change: the new ``model``, its ``q`` and ``v`` (after the
    velocity jump), and the ``jump`` (None for a cut, which keeps velocities)."""
    model: object
    q: np.ndarray
    v: np.ndarray
    jump: Jump | None
    name: str


def connect_state(model: Model, q: ArrayLike, v: ArrayLike, frame: str | int, to: str | int = "world", joint: Joint | None = None,
                  name: str | None = None) -> Change:
    """:func:`connect` at the state (q, v): the new model, q, and the velocity after the jump
    the new joint imposes (:func:`velocity_jump`; Nakamura and Yamane 2000 sec. 4.3).  The impulse acts on the
    new loop only: the other loops were closed and stay closed."""
    new, qn = connect(model, q, frame, to, joint, name)
    _, vn = map_state(model, new, q, v)
    jump = velocity_jump(new, qn, vn)
    return Change(new, qn, jump.v, jump, new.loops[-1].name if new.loops else "")


def cut(model: Model, q: ArrayLike, v: ArrayLike, name: str) -> Change:
    """Cut the loop or joint ``name`` (Nakamura and Yamane 2000 sec. 4.4); velocities are kept (a cut releases,
    it does not strike: no jump).

    * a loop (the name of a loop or of its cut joint): its virtual link is removed;
    * any other joint: the body it moves, with its subtree, hangs from the world through a
      free joint ``"<body>_free"`` whose state is the body's present pose and velocity (Fig.
      12); the loops that tie the subtree to the rest are kept."""
    q = np.asarray(q, dtype=float)
    v = np.asarray(v, dtype=float)
    loop = next((lp for lp in model.loops if name in (lp.name, lp.joint_name)), None)
    if loop is not None:
        new = ModelBuilder.from_model(model, without_loops=[loop.name]).build()
        qn, vn = map_state(model, new, q, v)
        return Change(new, qn, vn, None, loop.name)
    try:
        i = model.joint_id(name)
    except KeyError:
        raise KeyError(f"cut: model {model.name!r} has no loop or joint {name!r}; loops: "
                       f"{[lp.name for lp in model.loops]}") from None
    body = model.body_names[i]
    kin = forward_kinematics(model, q, v)
    builder = ModelBuilder.from_model(model)
    builder.reattach(body, "world", FreeFlyer())
    new = builder.build()
    qn, vn = map_state(model, new, q, v)
    j = new.joint_id(f"{body}_free")
    qs, vs = new.q_slice(new._joint_names[j]), new.v_slice(new._joint_names[j])
    qn[qs] = np.concatenate([kin.p[i], matrix_to_quat(kin.R[i])])
    vn[vs] = kin.v[i]                                   # the body's velocity, body frame: [v; w]
    return Change(new, qn, vn, None, name)
