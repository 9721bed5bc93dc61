"""Models: joint kinds, the builder, the frozen Model, configuration-space operations, import.

Layer (docs/architecture.md): above ``_kernels``, ``spatial`` and ``_api`` (the validation at the door),
below ``kinematics``.  May import: those three.  Imported by: every layer above.  Gear couplings
(:mod:`linkdyn.model.gears`) are the reduced coordinates *and* the one adapter (``@reduced``) by
which each public function declares how it answers on a geared model.
"""
from . import joints
from .builder import Inertia, ModelBuilder
from .configuration import difference, integrate, neutral, normalize, random_configuration
from .joints import (Cylindrical, Fixed, FreeFlyer, Planar, Prismatic, Revolute, Spherical, SphericalZYX,
                     Universal)
from .gears import Gear, GearWarning, JointCoupling
from .model import Model


def __getattr__(name):
    """``linkdyn.model.urdf`` / ``linkdyn.model.mjcf`` as attributes, as before the file formats
    moved to :mod:`linkdyn.model.io`: the old modules, kept for code outside linkdyn, are
    imported on first use."""
    if name in ("urdf", "mjcf"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
