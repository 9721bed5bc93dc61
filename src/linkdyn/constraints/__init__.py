"""Constraints, the constraint layer of linkdyn: equations of motion with rows that hold bodies
together or apart.

* :mod:`linkdyn.constraints.dynamics`: constraints a user states (points, planes, frames,
  distances, custom rows) and the Lagrange-multiplier form of the equations of motion
  (Featherstone 2008, ch. 8), compiled for the geometric kinds (:mod:`linkdyn.constraints._kernels`);
* :mod:`linkdyn.constraints.derivatives`: the derivatives of that constrained forward dynamics
  (Carpentier and Mansard 2018, the implicit-function theorem on the KKT system), compiled in
  :mod:`linkdyn.constraints._derivative_kernels`.

The same layer holds two sibling packages: :mod:`linkdyn.loops` (closed chains, Nakamura and
Yamane 2000 secs. 2-3) and :mod:`linkdyn.contact` (joint limits, contacts, the inverse inertia and
the complementarity problem).  They stay top-level packages because users and the documentation
name them so; import-linter's layers contract (pyproject.toml) puts the three in one layer.

May import: linkdyn._kernels, spatial, _api, model, kinematics, dynamics, and its siblings
loops and contact.  Imported by: structure, sim, control, models, the top-level ``linkdyn``.
"""
from .derivatives import ConstrainedDynamicsDerivatives, constrained_dynamics_derivatives
from .dynamics import (Constraint, Custom, Distance, FrameFixed, LinearCoupling, PointFixed, PointOnPlane, Prepared,
                       Result,
                       _point_terms, constrained_dynamics, prepare)

__all__ = ["Constraint", "PointFixed", "PointOnPlane", "FrameFixed", "Distance", "Custom", "LinearCoupling", "Result",
           "constrained_dynamics", "prepare", "Prepared", "ConstrainedDynamicsDerivatives",
           "constrained_dynamics_derivatives"]
