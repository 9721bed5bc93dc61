"""Models: joint kinds, the builder, the frozen Model, configuration-space operations, import."""
from . import joints
from .builder import Inertia, ModelBuilder
from .configuration import difference, integrate, neutral, normalize, random_configuration
from .joints import (Cylindrical, Fixed, FreeFlyer, Planar, Prismatic, Revolute, Spherical, SphericalZYX,
                     Universal)
from .gears import Gear, GearWarning
from .model import Model
