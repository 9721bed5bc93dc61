"""Structure-varying chains (seed 004 sec. 4): links that connect and disconnect at run time.

Every connection is a new loop closure (sec. 4.2): a virtual link is added under one link,
pointing to the other, with a joint of any kind, and no parent/child relation is reversed; a
floating mechanism meeting the ground or another mechanism becomes a pseudo-closed chain
(Fig. 11) the same way.  A connection made at the current configuration is closed there: the
virtual link's joint frame is the connecting frame on one link, its real-link frame the same
pose on the other.  Structure changes build a new model; the state moves over by joint name.
"""
from __future__ import annotations

import numpy as np

from .kinematics import frame_pose
from .model.builder import ModelBuilder
from .model.configuration import neutral
from .model.joints import Fixed, Joint


def _frame(model, frame, what):
    """(body index, R, p of the frame in the body) for a frame name (or body name)."""
    try:
        k = model.frame_id(frame)
    except KeyError as exc:
        raise KeyError(f"{what}: {exc.args[0]}") from None
    return int(model.frame_body[k]), np.array(model.frame_R[k]), np.array(model.frame_p[k])


def map_state(old, new, q, v=None):
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


def connect(model, q, frame, to="world", joint: Joint | None = None, name: str | None = None):
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
