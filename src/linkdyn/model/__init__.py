"""Models: joint kinds, the builder, the frozen Model, configuration-space operations, import."""
from . import joints
from .builder import Inertia, ModelBuilder
from .configuration import difference, integrate, neutral, normalize, random_configuration
from .joints import (Cylindrical, Fixed, FreeFlyer, Planar, Prismatic, Revolute, Spherical, SphericalZYX,
                     Universal)
from .gears import Gear, GearWarning
from .model import Model


def __getattr__(name):
    """``linkdyn.model.urdf`` / ``linkdyn.model.mjcf`` as attributes, as before the file formats
    moved to :mod:`linkdyn.model.io`: the old modules, kept for code outside linkdyn, are
    imported on first use."""
    if name in ("urdf", "mjcf"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
