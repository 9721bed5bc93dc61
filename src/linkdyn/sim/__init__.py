"""Time integration of the equations of motion on the configuration manifold."""
from .integrators import Trajectory, rk4_step, semi_implicit_euler_step, simulate

__all__ = ["Trajectory", "rk4_step", "semi_implicit_euler_step", "simulate"]
