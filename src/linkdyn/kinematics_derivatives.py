"""Moved to :mod:`linkdyn.kinematics.derivatives`; this name re-exports it for code written
against earlier releases."""
from .kinematics.derivatives import (frame_acceleration_derivatives, frame_pose_derivative,  # noqa: F401
                                     frame_velocity_derivatives)
