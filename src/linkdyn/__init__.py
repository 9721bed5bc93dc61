"""linkdyn: dynamics of link systems in Python.

    import linkdyn as ld
    model = ld.load_urdf("panda.urdf")
    q = ld.random_configuration(model)
    tau = ld.rnea(model, q, v, a)        # inverse dynamics
    M = ld.crba(model, q)                # joint-space inertia
    qdd = ld.aba(model, q, v, tau)       # forward dynamics

Conventions (the same as Pinocchio's): spatial vectors [linear; angular], quaternions
[x, y, z, w], a free joint's q = [x, y, z, qx, qy, qz, qw] with v = [v; w] in the body frame.

``import linkdyn`` imports nothing else (not even Numba) and compiles nothing: each name below is
imported on first use (PEP 562, a module ``__getattr__``), and a kernel compiles when it is first
called.  The first import of any of linkdyn's modules sets up the kernels' cache
(:mod:`linkdyn._kernels`) before a kernel is defined.
"""
from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

__version__ = "0.1.0"

#: public name -> the module that defines it (imported on first use)
_LAZY = {
    **dict.fromkeys(("IKError", "analytic_jacobian", "inverse_kinematics", "manipulability",
                     "manipulability_ellipsoid", "plot_manipulability_ellipses", "plot_manipulability_ellipsoid",
                     "planar_2link_ik", "task_acceleration"), "analysis"),
    **dict.fromkeys(("aba", "aba_derivatives", "crba", "generalized_gravity", "kinetic_energy", "mass_matrix",
                     "mechanical_energy", "nonlinear_effects", "passive_forces", "potential_energy", "rnea",
                     "rnea_derivatives"),
                    "dynamics"),
    **dict.fromkeys(("mass_matrix_cholesky", "solve_mass_matrix"), "dynamics.cholesky"),
    **dict.fromkeys(("coriolis_matrix", "lagrangian_terms", "mass_matrix_derivative"), "dynamics.lagrange"),
    **dict.fromkeys(("base_parameters", "identify", "inertial_parameters", "joint_torque_regressor"),
                    "dynamics.regressor"),
    **dict.fromkeys(("Kinematics", "center_of_mass", "com_jacobian", "forward_kinematics", "frame_acceleration",
                     "frame_pose", "frame_velocity", "jacobian", "jacobian_dot_times_v", "joint_jacobians",
                     "point_jacobian"), "kinematics"),
    **dict.fromkeys(("frame_acceleration_derivatives", "frame_pose_derivative", "frame_velocity_derivatives"),
                    "kinematics.derivatives"),
    **dict.fromkeys(("Cylindrical", "Fixed", "FreeFlyer", "Inertia", "Model", "ModelBuilder", "Planar", "Prismatic",
                     "Revolute", "Spherical", "SphericalZYX", "Universal", "difference", "integrate", "neutral",
                     "normalize", "random_configuration", "joints"), "model"),
    **dict.fromkeys(("difference_jacobians", "integrate_jacobians"), "model.tangent"),
    **dict.fromkeys(("load_mjcf", "parse_mjcf"), "model.io.mjcf"),
    **dict.fromkeys(("load_urdf", "parse_urdf"), "model.io.urdf"),
    **dict.fromkeys(("DHLink", "from_dh"), "models.dh"),
    **dict.fromkeys(("ConstrainedDynamicsDerivatives", "constrained_dynamics", "constrained_dynamics_derivatives"),
                    "constraints"),
    "Simulation": "sim",
}

#: subpackages and modules reachable as attributes (``ld.sim``, ``ld.viz``, ...); ``viz``,
#: ``symbolic`` and ``distributed`` load matplotlib, SymPy and Dask, which the dynamics does not need;
#: ``mocap`` reads BVH captures (the ``mocap`` extra)
_SUBMODULES = ("analysis", "constraints", "contact", "control", "dynamics", "kinematics", "loops", "model", "models",
               "recording", "sim", "spatial", "structure", "viz", "symbolic", "distributed", "interop", "mocap")

if TYPE_CHECKING:       # what the names above are, for type checkers (never run)
    from .analysis import (IKError, analytic_jacobian, inverse_kinematics, manipulability,
                           manipulability_ellipsoid, plot_manipulability_ellipses, plot_manipulability_ellipsoid,
                           planar_2link_ik, task_acceleration)
    from .constraints import ConstrainedDynamicsDerivatives, constrained_dynamics, constrained_dynamics_derivatives
    # (aba, crba and rnea from the modules that define them: each shares its name with its module)
    from .dynamics import (aba_derivatives, generalized_gravity, kinetic_energy, mechanical_energy,
                           nonlinear_effects, passive_forces, potential_energy, rnea_derivatives)
    from .dynamics.aba import aba
    from .dynamics.crba import crba, mass_matrix
    from .dynamics.rnea import rnea
    from .dynamics.cholesky import mass_matrix_cholesky, solve_mass_matrix
    from .dynamics.lagrange import coriolis_matrix, lagrangian_terms, mass_matrix_derivative
    from .dynamics.regressor import base_parameters, identify, inertial_parameters, joint_torque_regressor
    from .kinematics import (Kinematics, center_of_mass, com_jacobian, forward_kinematics, frame_acceleration,
                             frame_pose, frame_velocity, jacobian, jacobian_dot_times_v, joint_jacobians,
                             point_jacobian)
    from .kinematics.derivatives import (frame_acceleration_derivatives, frame_pose_derivative,
                                         frame_velocity_derivatives)
    from .model import (Cylindrical, Fixed, FreeFlyer, Inertia, Model, ModelBuilder, Planar, Prismatic, Revolute,
                        Spherical, SphericalZYX, Universal, difference, integrate, joints, neutral, normalize,
                        random_configuration)
    from .model.io.mjcf import load_mjcf, parse_mjcf
    from .model.io.urdf import load_urdf, parse_urdf
    from .model.tangent import difference_jacobians, integrate_jacobians
    from .models.dh import DHLink, from_dh
    from .sim import Simulation
    from . import (analysis, constraints, contact, control, distributed, dynamics, interop, kinematics,  # noqa: I001
                   loops, mocap, model, models, recording, sim, spatial, structure, symbolic, viz)

#: ``from linkdyn import *``: the public names and the packages ``import linkdyn`` used to load
#: (not viz, symbolic, distributed or interop, which load heavy optional libraries)
__all__ = sorted(set(_LAZY) | {"analysis", "constraints", "contact", "control", "dynamics", "kinematics", "loops",
                               "model", "models", "recording", "sim", "spatial", "structure"})


def __getattr__(name):
    """Import a public name's module on first use and keep the name here (the next lookup is a
    plain attribute)."""
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'linkdyn' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))


class _KernelsFirst:
    """Import hook: the first import of any of linkdyn's modules imports :mod:`linkdyn._kernels`
    first, so that the kernels' cache (its locator, its trust checks, the compile notice) is
    set up before any kernel is defined, whichever module a program imports first.  It steps
    aside once that is done."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname.startswith(__name__ + ".") and not fullname.startswith(__name__ + "._kernels"):
            cls.remove()
            importlib.import_module("._kernels", __name__)
        return None

    @classmethod
    def remove(cls):
        try:
            sys.meta_path.remove(cls)
        except ValueError:
            pass


if f"{__name__}._kernels" not in sys.modules:
    sys.meta_path.insert(0, _KernelsFirst)
