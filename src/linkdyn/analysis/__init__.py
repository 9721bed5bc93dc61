"""Analysis tools built on the kinematics: manipulability measures and ellipsoids (Yoshikawa 1985),
analytic Jacobians and orientation rates (Spong, Hutchinson and Vidyasagar 2006, chs. 3-4; Siciliano
et al. 2009), inverse kinematics with null-space redundancy resolution (Liegeois 1977).

Layer (docs/architecture.md): beside ``structure``, ``control`` and ``viz``, above the constraint layer.
May import: the layers below.  Imported by: the top-level ``linkdyn`` only.
"""
from .ik import IKError, IKResult, inverse_kinematics, null_space_projector, planar_2link_ik  # noqa: F401
from .measures import (manipulability, manipulability_ellipsoid, plot_manipulability_ellipses,
                       plot_manipulability_ellipsoid,  # noqa: F401
                       task_jacobian)
from .rates import (RepresentationSingularityError, analytic_jacobian, analytic_pose,  # noqa: F401
                    angular_velocity, orientation_coordinates, orientation_rate, rate_matrix,
                    task_acceleration, task_velocity)
