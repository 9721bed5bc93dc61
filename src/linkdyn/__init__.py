"""linkdyn: dynamics of link systems in Python.

    import linkdyn as ld
    model = ld.load_urdf("panda.urdf")
    q = ld.random_configuration(model)
    tau = ld.rnea(model, q, v, a)        # inverse dynamics
    M = ld.crba(model, q)                # joint-space inertia
    qdd = ld.aba(model, q, v, tau)       # forward dynamics

Conventions (the same as Pinocchio's): spatial vectors [linear; angular], quaternions
[x, y, z, w], a free joint's q = [x, y, z, qx, qy, qz, qw] with v = [v; w] in the body frame.
"""
from . import _kernels  # noqa: F401  (first: the kernels' cache is set up before any is defined)
from .model import joints  # noqa: F401  (ld.joints.Revolute, ...)
from . import spatial
from . import analysis, constraints, contact, loops, models, sim, structure
from .analysis import (IKError, analytic_jacobian, inverse_kinematics, manipulability, manipulability_ellipsoid,
                       plot_manipulability_ellipses, plot_manipulability_ellipsoid, planar_2link_ik,
                       task_acceleration)
from .dynamics import (aba, aba_derivatives, crba, generalized_gravity, kinetic_energy, mass_matrix, mechanical_energy,
                       nonlinear_effects, passive_forces, potential_energy, rnea, rnea_derivatives)
from .dynamics.cholesky import mass_matrix_cholesky, solve_mass_matrix
from .dynamics.lagrange import coriolis_matrix, lagrangian_terms, mass_matrix_derivative
from .dynamics.regressor import base_parameters, identify, inertial_parameters, joint_torque_regressor
from .kinematics import (Kinematics, center_of_mass, com_jacobian, forward_kinematics, frame_acceleration,
                         frame_pose, frame_velocity, jacobian, jacobian_dot_times_v, joint_jacobians,
                         point_jacobian)
from .kinematics.derivatives import (frame_acceleration_derivatives, frame_pose_derivative,
                                     frame_velocity_derivatives)
from .model import (Cylindrical, Fixed, FreeFlyer, Inertia, Model, ModelBuilder, Planar, Prismatic, Revolute,
                    Spherical, SphericalZYX, Universal, difference, integrate, neutral, normalize,
                    random_configuration)

from .model.tangent import difference_jacobians, integrate_jacobians
from .model.io.mjcf import load_mjcf, parse_mjcf
from .model.io.urdf import load_urdf, parse_urdf
from .models.dh import DHLink, from_dh
from . import control
from .constraints import ConstrainedDynamicsDerivatives, constrained_dynamics, constrained_dynamics_derivatives
from .sim import Simulation

__version__ = "0.1.0"


def __getattr__(name):
    """``ld.viz`` (plots, the viewer), ``ld.symbolic`` and ``ld.distributed`` are imported on
    first use: they load matplotlib, SymPy and Dask, which the dynamics does not need."""
    if name in ("viz", "symbolic", "distributed"):
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'linkdyn' has no attribute {name!r}")
