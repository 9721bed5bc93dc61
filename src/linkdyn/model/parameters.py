"""The standard inertial parameters of a model: 10 per moving body, in Pinocchio's order
(``Inertia.toDynamicParameters``), and the joints' armature, viscous and Coulomb friction
coefficients, with their names.  ``rnea(q, v, a) = joint_torque_regressor(q, v, a) @ p``
(:mod:`linkdyn.dynamics.regressor`; Spong, Hutchinson and Vidyasagar 2006, ch. 7).

Model data only (no kinematics or dynamics): it sits in the model layer so that
``Model.inertial_parameters`` needs nothing above it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .model import Model

N_BODY_PARAMS = 10
BODY_PARAM_NAMES = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
JOINT_PARAM_NAMES = ("armature", "viscous", "coulomb")


def _flag(x, name):
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    raise TypeError(f"{name}: expected True or False, got {x!r}")


def _joint_vector(model, name):
    x = getattr(model, name, None)
    if x is None:
        return np.zeros(model.nv)
    x = np.asarray(x, dtype=float)
    if x.shape != (model.nv,):
        raise ValueError(f"model.{name}: expected shape ({model.nv},), got {x.shape}")
    return x.copy()


def inertial_parameters(model: Model, with_joint_terms: bool = False) -> NDArray[np.float64]:
    """The parameter vector of :func:`joint_torque_regressor`: 10 per moving body,
    [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz] (body frame, rotational inertia
    about the body origin; Pinocchio's ``Inertia.toDynamicParameters``), then with
    ``with_joint_terms`` the armature, viscous (``model.damping``) and Coulomb
    (``model.friction``) coefficients of every dof (zero where the model has none)."""
    jt = _flag(with_joint_terms, "with_joint_terms")
    model = model.full_model
    I = np.asarray(model.inertia[1:], dtype=float)
    pi = np.empty((model.nbody - 1, N_BODY_PARAMS))
    pi[:, 0] = I[:, 0, 0]
    pi[:, 1], pi[:, 2], pi[:, 3] = I[:, 5, 1], I[:, 3, 2], I[:, 4, 0]      # m c from m [c]x
    pi[:, 4], pi[:, 5], pi[:, 6] = I[:, 3, 3], I[:, 3, 4], I[:, 4, 4]
    pi[:, 7], pi[:, 8], pi[:, 9] = I[:, 3, 5], I[:, 4, 5], I[:, 5, 5]
    out = pi.reshape(-1)
    if jt:
        out = np.concatenate([out, _joint_vector(model, "armature"), _joint_vector(model, "damping"),
                              _joint_vector(model, "friction")])
    return out


def parameter_names(model: Model, with_joint_terms: bool = False) -> tuple[str, ...]:
    """Names of the parameters, e.g. ``"link2.Izz"``, ``"joint3.viscous"`` (the joint terms name
    the dof: ``"joint.armature"``, or ``"joint[k].armature"`` for dof k of a multi-dof joint)."""
    jt = _flag(with_joint_terms, "with_joint_terms")
    model = model.full_model
    names = [f"{model.body_names[i]}.{p}" for i in range(1, model.nbody) for p in BODY_PARAM_NAMES]
    if jt:
        dofs = []
        for i in range(1, model.nbody):
            jn, n = model.joint_names[i - 1], int(model.jnt_nv[i])
            dofs += [jn] if n == 1 else [f"{jn}[{k}]" for k in range(n)]
        names += [f"{d}.{p}" for p in JOINT_PARAM_NAMES for d in dofs]
    return tuple(names)
