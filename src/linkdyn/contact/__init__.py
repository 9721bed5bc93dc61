"""Unilateral constraints: joint limits, contacts with friction, impacts.

* ``rows``: the units of a model (contact points against planes, joint limits, ball-joint
  swing cones and twist ranges) and their gaps, rows and drifts at a state;
* ``lcp``: the mixed complementarity problem with an exact Coulomb cone;
* ``dynamics``: accelerations with contact and limit forces, impacts, position correction,
  all with the model's loop closures held;
* ``collision``: collision detection between the model's geoms (``collide``: broad phase,
  compiled primitive pairs; not yet used by the simulation);
* ``geom_rows``: the units (gap, normal and tangent rows, drifts) of the collider's contacts
  between geoms (``geom_units``; not yet used by the simulation);
* ``inertia``: the inverse inertia between bodies of a tree (the Delassus matrix J M^-1 J^T of
  a set of frames) by the articulated-body recursion.

``linkdyn.Simulation`` uses them by default (``limits=True, contacts=True``).

Layer (docs/architecture.md): the constraint layer, with its siblings :mod:`linkdyn.constraints` and
:mod:`linkdyn.loops`.  May import: the layers below (``_kernels`` to ``dynamics``) and its siblings.
Imported by: sim, viz, models.
"""
from . import dynamics, lcp, rows
from .inertia import inverse_inertia, inverse_inertia_block
from .dynamics import Solution, acceleration, impulse, position_correction
from .lcp import ContactSolverError
from .rows import UnitCatalog, Units
from .collision import Collider, CollisionWarning, Contacts, collide
from .geom_rows import GeomRows, geom_units
