"""Moved: the MJCF importer is :mod:`linkdyn.model.io.mjcf` (a package since the split of
``model/mjcf.py``).  This module keeps the old import path working for code outside linkdyn;
linkdyn itself imports from the new place."""
from .io.mjcf import *  # noqa: F403
from .io.mjcf import (MAX_FILE_BYTES, MAX_INCLUDE_DEPTH, MAX_INCLUDES, MJCFError, MJCFInfo, MJCFWarning,  # noqa: F401
                      load_mjcf, parse_mjcf, q_to_qpos, qpos_to_q, qvel_to_v, v_to_qvel)
from .io.mjcf import __all__  # noqa: F401
