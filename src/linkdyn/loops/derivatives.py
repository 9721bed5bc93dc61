"""Analytical derivatives of closed-chain forward dynamics (the multiplier form of
:func:`linkdyn.loops.constrained_dynamics`), by the implicit-function theorem on its KKT system
(Carpentier and Mansard 2018; Sathya and Carpentier 2024): the loops are rows of the
Lagrange-multiplier form like any other constraint, and share the implementation of
:mod:`linkdyn.constraints.derivatives` (see its docstring for the derivation)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..constraints.derivatives import (_NO_CW, ConstrainedDynamicsDerivatives, _check_baumgarte, _compiled,
                                      _loop_blocks, _one_state)
from .dynamics import constrained_dynamics
from ._kernels import ACC
from .kinematics import _need_loops, _terms

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..model.model import Model

__all__ = ["constrained_dynamics_derivatives"]


def constrained_dynamics_derivatives(model: Model, q: ArrayLike, v: ArrayLike, tau: ArrayLike,
                                     baumgarte: tuple[float, float] = (0.0, 0.0)) -> ConstrainedDynamicsDerivatives:
    """Partial derivatives of the closed-chain forward dynamics :func:`linkdyn.loops.constrained_dynamics`
    ``(model, q, v, tau, baumgarte)`` (the loops of Nakamura and Yamane 2000 in the multiplier
    form): of q'' and of the loop forces lambda (6 nloops rows: loop by loop the force [f; n] of
    the real link on the virtual link, in the virtual link's frame, i.e. ``forces.reshape(-1)``)
    with respect to q (tangent space), v and tau, as a
    :class:`linkdyn.constraints.derivatives.ConstrainedDynamicsDerivatives` (``ddq_dq, ddq_dv,
    ddq_dtau, dlambda_dq, dlambda_dv, dlambda_dtau``), by the implicit-function theorem on the
    KKT system (Carpentier and Mansard 2018; Sathya and Carpentier 2024).  The Baumgarte terms
    J q'' = -J' v - 2 alpha J v + beta^2 e are differentiated with the rest (the loop error
    e = log6 of the real link's frame seen from the virtual link's, through the inverse right
    Jacobian of SE(3), Barfoot 2017, ch. 7).

    Without dependent loop rows lambda is the loop force that every function returns; with them
    (a planar loop: 3 of its 6 rows) it is the least-norm split of
    :func:`linkdyn.loops.constraint_forces` (``constrained_dynamics(..., forces=True)`` returns
    another valid split, its pivoted Cholesky's); q'' and its derivatives are unique either way.
    q (nq,) or (N, nq), v and tau (nv,) or (N, nv), a single state next to a stack shared; a
    stack runs as one parallel compiled loop and gives (N, nv, nv) and (N, 6 nloops, nv).
    """
    _need_loops(model, "constrained_dynamics_derivatives")
    if model._full is not None:
        raise NotImplementedError(f"model {model.name!r} has gear couplings: the derivatives of its closed-chain "
                                  "dynamics are not implemented yet (linkdyn.loops.constrained_dynamics itself works; "
                                  "differentiate it numerically, or build the model without the gears and add the "
                                  "couplings as linkdyn.constraints.Custom rows)")
    baumgarte = _check_baumgarte(baumgarte)
    return _compiled(model, 1, 6 * model.nloops, _NO_CW, model._loop_lw, q, v, tau, baumgarte,
                     _reference(model, baumgarte))


def _reference(model, baumgarte):
    """The NumPy implementation of one state (:func:`linkdyn.constraints.derivatives._one_state`),
    for the states the kernel declines (dependent loop rows, the massless cut joints' singular M)."""
    alpha, beta = baumgarte
    blocks = []

    def one(q, v, tau):
        if not blocks:
            blocks.extend(_loop_blocks(model, -1.0))
        qdd = constrained_dynamics(model, q, v, tau, baumgarte)

        def residual():
            e, JC, bias = _terms(model, q, v, ACC)
            return float(np.abs(JC @ qdd + bias + 2.0 * alpha * (JC @ v) - beta * beta * e.ravel()).max())
        return _one_state(model, blocks, q, v, tau, (qdd, residual), baumgarte)
    return one
