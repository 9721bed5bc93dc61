"""The prepared layer of a closed chain: :class:`linkdyn.dynamics.data.Data` plus the loops'
compiled solver and loop error, called without validation (see that module for what a Data
trusts and what it still checks).  :func:`prepare` gives the right one for a model."""
from __future__ import annotations

import numpy as np

from .._kernels.passes import OK, check_q as _check_q
from ..dynamics.data import Data
from ._kernels import FD, POSITION, POS, VELOCITY, loop_terms as _loop_terms
from .dynamics import _solve_entry, constrained_dynamics, position_correction, velocity_projection
from .kinematics import loop_error


class LoopData(Data):
    """:class:`~linkdyn.dynamics.data.Data` of a model with loop closures: q'' with the loops
    closed, the loops' projections and their error, straight to the compiled solver."""

    def __init__(self, model):
        super().__init__(model)
        self.nloops = model.nloops
        self._lp = model._loop_packed
        self._force = np.empty((model.nloops, 6))
        self._zero = np.zeros(model.nv)
        self._e = np.empty((model.nloops, 6))
        self._JC = np.empty((6 * model.nloops, model.nv))
        self._g = np.empty(6 * model.nloops)

    def _solve(self, q, v, tau, mode):
        out = np.empty(self.nv)
        if not self.geared and _solve_entry.fn(self._packed, self._lp, q, v, tau, mode, 0.0, 0.0, out,
                                               self._force) == OK:
            return out
        return None

    def accel(self, q, v, tau):
        """q'' with the loops closed (``linkdyn.loops.constrained_dynamics``); ABA for a tree."""
        out = self._solve(q, v, tau, FD)
        return out if out is not None else constrained_dynamics(self.model, q, v, tau)

    def velocity_projection(self, q, v):
        """dv with J_C (v + dv) = 0, least kinetic energy (``linkdyn.loops.velocity_projection``)."""
        out = self._solve(q, v, self._zero, VELOCITY)
        return out if out is not None else velocity_projection(self.model, q, v)

    def position_correction(self, q):
        """One Newton step dq towards closing the loops (``linkdyn.loops.position_correction``)."""
        out = self._solve(q, self._zero, self._zero, POSITION)
        return out if out is not None else position_correction(self.model, q)

    def loop_error(self, q):
        """(nloops, 6) loop errors (``linkdyn.loops.loop_error``); a view into this Data's buffer."""
        if not self.geared and _check_q(self._mi, q) == OK:
            _loop_terms(self._mi, self._mf, self._ws, self.model._loop_i, self.model._loop_f, q, q[:0], POS,
                        self._e, self._JC, self._g)
            return self._e
        return loop_error(self.model, q)


class TreeData(Data):
    """:class:`~linkdyn.dynamics.data.Data` with the closed-chain interface of :class:`LoopData`
    for a tree (no loops): q'' is ABA's."""
    nloops = 0

    def accel(self, q, v, tau):
        return self.aba(q, v, tau)


def prepare(model) -> Data:
    """The prepared layer for ``model``: a :class:`LoopData` if it has loop closures, else a
    :class:`TreeData`; made once per model and kept while the model lives (it shares the model's
    workspace, so it serves one thread, as the model's own fast paths do;
    ``model._prepared``, never pickled)."""
    data = model.__dict__.get("_prepared")
    if data is None or data.model is not model:           # (a copy of a model carries its original's)
        data = model.__dict__["_prepared"] = LoopData(model) if model.nloops else TreeData(model)
    return data
