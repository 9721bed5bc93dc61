"""Interoperation with Pinocchio (``pip install pin``): the same tree as a ``pinocchio.Model``;
and with MuJoCo: the states of a model loaded from MJCF (:func:`from_mujoco`, :func:`to_mujoco`).

The joint conventions are the same (quaternions [x, y, z, w], free joints [x, y, z, quat],
velocities in the child frame), and joints are added in linkdyn's order, so a configuration
of the tree is a configuration of the Pinocchio model once the virtual links (loop closures,
which Pinocchio expresses as constraint models instead) are left out: :func:`pinocchio_q`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, overload

import numpy as np

from .model import joints as J

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    import pinocchio

    from .model.model import Model


def _pin():
    try:
        import pinocchio
    except ImportError:
        raise ImportError("Pinocchio is not installed: pip install pin") from None
    return pinocchio


def _pin_joint(pin, joint):
    k = joint.kind
    if k == J.REVOLUTE:
        return pin.JointModelRevoluteUnaligned(*joint.axis)
    if k == J.PRISMATIC:
        return pin.JointModelPrismaticUnaligned(*joint.axis)
    if k == J.SPHERICAL:
        return pin.JointModelSpherical()
    if k == J.FREE:
        return pin.JointModelFreeFlyer()
    raise ValueError(f"to_pinocchio: no Pinocchio joint with linkdyn's coordinates for a {joint.kind_name} joint "
                     "(revolute, prismatic, spherical and free joints are supported)")


def to_pinocchio(model: Model) -> tuple[pinocchio.Model, dict[int, int]]:
    """A ``pinocchio.Model`` of ``model``'s tree without its virtual links, every linkdyn frame
    an OP_FRAME, the joints' armature (``model.armature``; the damping and friction, which
    Pinocchio's algorithms leave out, are not carried), and a dict {linkdyn body index: Pinocchio
    joint id}.  A geared model's followers
    become Pinocchio mimic joints (``transformJointIntoMimic``, each on its independent leader
    with the chained ratio and offset), so that the two models share their reduced coordinates."""
    pin = _pin()
    if model._full is not None:
        pm, jid = to_pinocchio(model._full)
        c = model._coupling
        full = model._full
        if c.multi:
            raise NotImplementedError(f"to_pinocchio: model {model.name!r} couples joint(s) "
                                      f"{[full._joint_names[i] for i in c.multi]} to several joints at once "
                                      "(ModelBuilder.add_coupling); a Pinocchio mimic joint follows one joint")
        for f, lead in sorted(model._coupling.leader.items()):
            k = int(full.jnt_qadr[f])
            pm = pin.transformJointIntoMimic(pm, jid[lead], jid[f], float(c.qscale[k, 0]), float(c.qoff[k]))
        pm.armature = np.array(model.armature)           # the reduced dofs': sum of ratio^2 x armature
        return pm, jid
    pm = pin.Model()
    pm.name = model.name
    pm.gravity = pin.Motion(np.asarray(model.gravity, dtype=float), np.zeros(3))
    jid = {0: 0}
    for i in range(1, model.nbody):
        if model.is_virtual[i]:
            continue
        placement = pin.SE3(np.array(model.R_tree[i]), np.array(model.p_tree[i]))
        jid[i] = pm.addJoint(jid[int(model.parent[i])], _pin_joint(pin, model.joints[i]), placement,
                             model._joint_names[i])
        I6 = np.array(model.inertia[i])
        m = I6[0, 0]
        if m > 0:
            c = np.array([I6[5, 1], I6[3, 2], I6[4, 0]]) / m
            Ic = I6[3:, 3:] - m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
            inertia = pin.Inertia(m, c, 0.5 * (Ic + Ic.T))
        else:
            inertia = pin.Inertia(0.0, np.zeros(3), 0.5 * (I6[3:, 3:] + I6[3:, 3:].T))
        pm.appendBodyToJoint(jid[i], inertia, pin.SE3.Identity())
    for k, name in enumerate(model.frame_names):
        b = int(model.frame_body[k])
        if b in jid and name not in (f.name for f in pm.frames):
            pm.addFrame(pin.Frame(name, jid[b], pin.SE3(np.array(model.frame_R[k]), np.array(model.frame_p[k])),
                                  pin.FrameType.OP_FRAME))
    pm.armature = pinocchio_v(model, np.asarray(model.armature, dtype=float))
    return pm, jid


def pinocchio_q(model: Model, q: ArrayLike) -> NDArray[np.float64]:
    """linkdyn configuration(s) -> the Pinocchio model's (the virtual links' coordinates left out)."""
    q = np.asarray(q, dtype=float)
    keep = np.concatenate([np.arange(model.jnt_qadr[i], model.jnt_qadr[i] + model.jnt_nq[i])
                           for i in range(1, model.nbody) if not model.is_virtual[i]] or [np.zeros(0, int)])
    return q[..., keep.astype(int)]


def pinocchio_v(model: Model, v: ArrayLike) -> NDArray[np.float64]:
    """linkdyn velocities -> the Pinocchio model's (the virtual links' left out)."""
    v = np.asarray(v, dtype=float)
    keep = np.concatenate([np.arange(model.jnt_vadr[i], model.jnt_vadr[i] + model.jnt_nv[i])
                           for i in range(1, model.nbody) if not model.is_virtual[i]] or [np.zeros(0, int)])
    return v[..., keep.astype(int)]


# ------------------------------------------------------------------------------- MuJoCo
@overload
def from_mujoco(model: Model, qpos: ArrayLike, qvel: None = None) -> tuple[NDArray[np.float64], None]: ...


@overload
def from_mujoco(model: Model, qpos: ArrayLike, qvel: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]: ...


def from_mujoco(model: Model, qpos: ArrayLike, qvel: ArrayLike | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
    """linkdyn's ``(q, v)`` of a MuJoCo state (``data.qpos``, ``data.qvel``; one state or a
    stack) of the MJCF file ``model`` was loaded from (``ld.load_mjcf``): quaternions from
    [w, x, y, z] to [x, y, z, w], a free joint's linear velocity from the world frame to the body
    frame; the cut joints of loop closures (MuJoCo's equality constraints) at zero.  ``v`` is
    None when ``qvel`` is."""
    from .model.io.mjcf import qpos_to_q, qvel_to_v
    q = qpos_to_q(model, qpos)
    return q, (None if qvel is None else qvel_to_v(model, q, qvel))


@overload
def to_mujoco(model: Model, q: ArrayLike, v: None = None) -> tuple[NDArray[np.float64], None]: ...


@overload
def to_mujoco(model: Model, q: ArrayLike, v: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]: ...


def to_mujoco(model: Model, q: ArrayLike, v: ArrayLike | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
    """MuJoCo's ``(qpos, qvel)`` of linkdyn's state (the inverse of :func:`from_mujoco`)."""
    from .model.io.mjcf import q_to_qpos, v_to_qvel
    return q_to_qpos(model, q), (None if v is None else v_to_qvel(model, q, v))
