"""Analysis tools built on the kinematics: manipulability measures and ellipsoids (seed 002
sec. 4.4), analytic Jacobians and orientation rates (seed 002 ch. 4, appendix A4), inverse
kinematics with null-space redundancy resolution (seed 002 eqs. 4.49-4.51)."""
from .ik import IKError, IKResult, inverse_kinematics, null_space_projector, planar_2link_ik  # noqa: F401
from .measures import (manipulability, manipulability_ellipsoid, plot_manipulability_ellipses,  # noqa: F401
                       task_jacobian)
from .rates import (RepresentationSingularityError, analytic_jacobian, analytic_pose,  # noqa: F401
                    angular_velocity, orientation_coordinates, orientation_rate, rate_matrix,
                    task_acceleration, task_velocity)
