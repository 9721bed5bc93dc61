"""Closed kinematic chains (Nakamura and Yamane 2000 secs. 2-3): loop closures described by virtual links,
loop Jacobians, the W, S, H of the virtually cut open chain, closed-chain inverse and forward
dynamics.

Layer (docs/architecture.md): the constraint layer, with its siblings :mod:`linkdyn.constraints` and
:mod:`linkdyn.contact`.  May import: the layers below (``_kernels`` to ``dynamics``) and its siblings.
Imported by: structure, sim, control, viz, models.  :mod:`linkdyn.loops.data` is the closed chain's
prepared layer (:func:`~linkdyn.loops.data.prepare`).
"""
from .kinematics import (ClosedChain, LoopAnalysis, LoopClosureError, analyze, close_loops, independent_rows,  # noqa: F401
                         loop_bias, loop_error, loop_jacobian, project_velocity)
from .dynamics import (ClosedChainID, constraint_forces, forward_dynamics, inverse_dynamics,  # noqa: F401
                       constrained_dynamics, position_correction, velocity_projection)
from .derivatives import constrained_dynamics_derivatives  # noqa: F401
