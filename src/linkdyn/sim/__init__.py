"""Time integration of the equations of motion on the configuration manifold, and simulation
of structure-varying chains with events (connections, cuts) and recording."""
from .checks import Check, Checks, check
from .integrators import Trajectory, rk4_step, semi_implicit_euler_step, simulate
from .recording import Event, Recording, Segment
from .simulation import Simulation

__all__ = ["Check", "Checks", "Event", "Recording", "Segment", "Simulation", "Trajectory", "rk4_step", "semi_implicit_euler_step",
           "simulate", "check"]
