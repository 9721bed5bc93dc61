"""What every part of the MJCF importer shares: the error and warning classes, the file limits,
the info returned with ``return_info=True``, the element vocabulary, MuJoCo's rotation
conventions (quaternions [w, x, y, z]), the name helper and the warning helper."""
from __future__ import annotations

import math
import re
import sys
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..urdf import _unique  # noqa: F401 (a name made unique among the used ones: one helper for both formats)


#: nesting limit of ``<include>`` files
MAX_INCLUDE_DEPTH = 8
#: total number of ``<include>`` elements expanded while reading one model
MAX_INCLUDES = 100
#: size limit of one file (main or included), and of all included files together, bytes
MAX_FILE_BYTES = 64 * 1024 * 1024


class MJCFError(ValueError):
    """An MJCF file that cannot be read, or that does not describe a valid model."""


class MJCFWarning(UserWarning):
    """Something in an MJCF file was ignored or approximated."""


@dataclass
class MJCFInfo:
    """What ``return_info=True`` adds to the model: ``q0``, MuJoCo's reference configuration
    ``qpos0`` in linkdyn's layout (hinge and slide ``ref``, identity ball quaternions, the
    free bodies' poses from the file, identity cut joints: the ``<connect>`` loops are closed
    there when the file's constraints hold in ``qpos0``), and ``keyframes``, name -> q."""
    q0: np.ndarray
    keyframes: dict = field(default_factory=dict)


_FLOAT = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_ORIENT = ("quat", "axisangle", "euler", "xyaxes", "zaxis")
_JOINT_TYPES = ("hinge", "slide", "ball", "free")
_GEOM_TYPES = ("sphere", "capsule", "cylinder", "box", "ellipsoid", "mesh", "plane", "hfield", "sdf")
_TOP_IGNORED = {"option", "size", "visual", "statistic", "asset", "contact", "tendon", "actuator", "sensor",
                "custom", "extension", "deformable", "keyframe", "compiler", "default", "worldbody",
                "equality"}
_BODY_IGNORED = {"camera", "light"}
_BODY_REFUSED = {"composite", "flexcomp", "replicate", "attach", "plugin"}
_WORLD = "world"

#: the package whose frames _warn skips (its modules call one another)
_PACKAGE = __name__.rpartition(".")[0]


# --------------------------------------------------------------------------------------------
# rotations (MuJoCo quaternions are [w, x, y, z])
def _quat_wxyz_matrix(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _axis_angle(axis, angle):
    k = np.asarray(axis, dtype=float)
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * (K @ K)


def _z_to(v):
    """MuJoCo's mjuu_z2quat: the smallest rotation taking +z to the unit vector v (a half turn
    about x when v is -z)."""
    c = np.cross([0.0, 0.0, 1.0], v)
    s = float(np.linalg.norm(c))
    if s < 1e-10:
        c = np.array([1.0, 0.0, 0.0])
    else:
        c = c / s
    return _axis_angle(c, math.atan2(s, v[2]))


def _pose(R1, p1, R2, p2):
    return R1 @ R2, R1 @ p2 + p1


_I3, _Z3 = np.eye(3), np.zeros(3)


def _warn(msg):
    """An MJCFWarning attributed to the first caller outside linkdyn.model.io.mjcf (the package:
    its modules call one another)."""
    depth, f = 2, sys._getframe(1)        # stacklevel 2 is the caller of _warn
    while f is not None and (f.f_globals.get("__name__", "") + ".").startswith(_PACKAGE + "."):
        depth, f = depth + 1, f.f_back
    warnings.warn(msg, MJCFWarning, stacklevel=depth)

