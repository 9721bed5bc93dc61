"""Moved to :mod:`linkdyn.recording` (run data, read by the simulation and the pictures alike);
this name re-exports it for code written against earlier releases."""
from ..recording import Event, Recording, SavedModel, Segment, Trajectory, atomic_savez  # noqa: F401
