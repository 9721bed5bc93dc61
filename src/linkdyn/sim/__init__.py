"""Time integration of the equations of motion on the configuration manifold, and simulation
of structure-varying chains with events (connections, cuts) and recording.

Layer (docs/architecture.md): above the constraint layer, ``structure`` and ``viz`` (a simulation
shows its run with the viewer), below ``models``, ``distributed`` and ``cli``.  Reads and writes
runs as :mod:`linkdyn.recording` defines them.  Calls the prepared layer (:mod:`linkdyn.loops.data`)
in its steps, never the validating public functions.
"""
from .checks import Check, Checks, check
from ..recording import Event, Recording, RecordingError, Segment, Trajectory
from .integrators import simulate
from .steps import rk4_step, semi_implicit_euler_step
from .simulation import Simulation

__all__ = ["Check", "Checks", "Event", "Recording", "RecordingError", "Segment", "Simulation", "Trajectory", "rk4_step", "semi_implicit_euler_step",
           "simulate", "check"]
