"""Analysis tools built on the kinematics: manipulability measures and ellipsoids (seed 002 sec. 4.4)."""
from .measures import (manipulability, manipulability_ellipsoid, plot_manipulability_ellipses,  # noqa: F401
                       task_jacobian)
