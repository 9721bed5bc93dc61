"""Moved: the URDF importer is :mod:`linkdyn.model.io.urdf`.  This module keeps the old import
path working for code outside linkdyn; linkdyn itself imports from the new place."""
from .io.urdf import *  # noqa: F403
from .io.urdf import (URDFError, URDFWarning, Visual, _z_to, load_urdf, parse_urdf,  # noqa: F401
                      rpy_matrix)
