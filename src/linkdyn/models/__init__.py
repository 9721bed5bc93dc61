"""Built-in models: random trees (for tests and experiments), DH arms (PUMA 560, Stanford,
SCARA, ...; :mod:`linkdyn.models.dh`) and the real robots of the ``example-robot-data``
package (``pip install linkdyn[robots]``).

Layer (docs/architecture.md): above ``sim`` (the scenes are simulations), below ``distributed`` and
``cli``.  May import: every layer below.  Imported by: distributed, cli, the top-level ``linkdyn``.
"""
from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..model import builder as _b
from ..model import joints as J
from . import dh, gripper, human, mechanisms
from .dh import (DHLink, cartesian_arm, cylindrical_arm, dh_table, dh_transform, from_dh, planar_2link, polar_arm, puma560,
                 scara, stanford_arm)
from .human import human_figure, human_figure_16, standing_configuration
from .gripper import geared_gripper
from .mechanisms import five_bar, four_bar, four_bar_with_stop, slider_crank, spatial_loop

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..model.model import Model



def __getattr__(name):
    """``linkdyn.models.scenarios`` and ``linkdyn.models.mjcf_examples`` load on first use."""
    if name in ("scenarios", "mjcf_examples"):
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'linkdyn.models' has no attribute {name!r}")


ALL_KINDS = ("revolute", "prismatic", "cylindrical", "universal", "spherical", "spherical_zyx", "planar", "fixed")


def _random_rotation(rng):
    q = rng.standard_normal(4)
    x, y, z, w = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _random_joint(kind, rng):
    axis = rng.standard_normal(3)
    return {"revolute": lambda: J.Revolute(axis), "prismatic": lambda: J.Prismatic(axis),
            "cylindrical": lambda: J.Cylindrical(axis),
            "universal": lambda: J.Universal(axis, np.cross(axis, rng.standard_normal(3))),
            "spherical": J.Spherical, "spherical_zyx": J.SphericalZYX, "planar": J.Planar,
            "fixed": J.Fixed, "free": J.FreeFlyer}[kind]()


def random_tree(nbodies: int = 10, kinds: Sequence[str] = ALL_KINDS, floating: bool = False,
                seed: int | np.random.Generator | None = None, branching: float = 0.5,
                gravity: ArrayLike = (0.0, 0.0, -9.81), joint_terms: bool = False) -> Model:
    """A random kinematic tree of ``nbodies`` bodies with joints drawn from ``kinds``.

    Every body has a random placement, mass in [0.5, 2], centre of mass and a positive
    definite rotational inertia, so every algorithm is well defined.  ``branching`` is the
    probability that a body hangs from a random earlier body rather than the last one.
    ``joint_terms`` also draws an armature, a viscous damping and a Coulomb friction for
    every degree of freedom (the free joint's excepted).
    """
    rng = np.random.default_rng(seed)
    rng_terms = np.random.default_rng(rng.integers(2**63))   # its own stream: same tree either way
    b = _b.ModelBuilder(f"random_tree_{nbodies}", gravity=gravity)
    names = ["world"]
    for k in range(nbodies):
        kind = "free" if (floating and k == 0) else kinds[rng.integers(len(kinds))]
        parent = names[-1] if rng.random() > branching else names[rng.integers(len(names))]
        if floating and k > 0 and parent == "world":
            parent = names[1]
        A = rng.standard_normal((3, 3))
        # a random second moment P of the mass about its centre, and I = tr(P) 1 - P: always the
        # inertia of a real mass distribution (principal moments satisfy A + B >= C)
        P = A @ A.T + 0.05 * np.eye(3)
        inertia = _b.Inertia(rng.uniform(0.5, 2.0), 0.2 * rng.standard_normal(3), np.trace(P) * np.eye(3) - P)
        name = f"body{k}"
        joint = _random_joint(kind, rng)
        extra = {}
        if joint_terms and kind != "free":
            extra = {key: rng_terms.uniform(0.05, 0.5, joint.nv) for key in ("armature", "damping", "friction")}
        b.add_body(name, parent, joint, placement=(_random_rotation(rng), 0.3 * rng.standard_normal(3)),
                   inertia=inertia, joint_name=f"joint{k}", **extra)
        names.append(name)
    b.add_frame("tip", names[-1], placement=(_random_rotation(rng), 0.2 * rng.standard_normal(3)))
    return b.build()


def example_robot_data_dir() -> Path:
    """Folder of the robots shipped by the ``example-robot-data`` package."""
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        raise ImportError("example-robot-data is not installed: pip install 'linkdyn[robots]'") from None
    path = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    if not path.is_dir():
        raise FileNotFoundError(f"example-robot-data is installed but {path} does not exist")
    return path


def example_robot_urdfs() -> dict:
    """{relative name: path} of every URDF in example-robot-data, e.g. 'panda_description/urdf/panda'."""
    root = example_robot_data_dir()
    return {str(p.relative_to(root).with_suffix("")): p for p in sorted(root.rglob("*.urdf"))}


#: the robots used by the demo, tests and benchmarks: URDF path in example-robot-data, floating base
ROBOTS = {
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "talos": ("talos_data/robots/talos_reduced.urdf", True),
    "human": ("human_description/robots/human.urdf", True),
    "double_pendulum": ("double_pendulum_description/urdf/double_pendulum.urdf", False),
    "solo": ("solo_description/robots/solo12.urdf", True),
}


def example_robot(name: str, mimic: bool = False, **kwargs: Any) -> Model:
    """Load one of :data:`ROBOTS` (e.g. "panda", "talos") from example-robot-data.

    As ``example_robot_data.load`` does (Pinocchio's default), the mimic joints (the Panda's
    second finger) stay independent dofs unless ``mimic=True`` (:func:`linkdyn.load_urdf`'s
    default), so that these models compare one to one with Pinocchio's.  ``kwargs`` go to
    :func:`linkdyn.load_urdf`.

    The URDF warnings these known files raise (talos's grippers carry mimic tags on joints the
    reduced model fixes) are silenced here; ``load_urdf`` on the same path shows them."""
    import warnings

    from ..model.io.urdf import URDFWarning, load_urdf
    if name not in ROBOTS:
        raise KeyError(f"unknown robot {name!r}; known: {sorted(ROBOTS)} (or load any URDF with linkdyn.load_urdf)")
    rel, floating = ROBOTS[name]
    # their meshes are named package://example-robot-data/...: that package's folder is allowed
    kwargs.setdefault("package_dirs", [example_robot_data_dir().parent])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        return load_urdf(example_robot_data_dir() / rel, floating_base=floating, mimic=mimic, **kwargs)
