"""The prepared layer: a model's compiled kernels over its workspace, called without validation.

The public functions (``linkdyn.aba(model, q, v, tau)`` and the rest) check their input on every
call: types, shapes, a geared model's routing, stacks.  Code inside linkdyn that calls them
thousands of times per run on arrays it made itself (a simulation step, the loops' projection,
the contact rows) pays that price for nothing.  It takes a :class:`Data` instead, as Pinocchio's
algorithms take a ``Data``: made once per model and run (``Data(model)``), it holds the model's
packed buffers and calls the kernels straight away.

What it trusts: every array is a 1-D C-contiguous float64 ndarray of the model's size (``q``
(nq,), ``v``, ``tau`` (nv,)).  What it still checks: the values, inside the kernels (finiteness,
unit quaternions, a singular inertia), whose status it turns into the public function's error by
calling the public function on the same input (which raises, with its message naming the argument).
A geared model (linkdyn.model.gears) has no tree of its own to run kernels on: its ``Data`` calls
the public functions, which route it.

May import: _kernels, _api, model, kinematics, the dynamics modules.  Imported by: loops (its
:class:`linkdyn.loops.data.LoopData` extends this one), contact, sim.
"""
from __future__ import annotations

import numpy as np

from .._kernels.passes import OK
from ..kinematics import _forward_kinematics_kernel, forward_kinematics
from ..model.configuration import _integrate, difference, integrate
from .aba import _aba_entry, aba
from .energy import _energy, kinetic_energy, potential_energy
from .rnea import _rnea_entry, _rnea_plain_entry, rnea

_EMPTY = np.zeros(0)
_POS = np.int64(0)          # kinematics level: poses only (linkdyn.kinematics POS)


class Data:
    """Kernels over ``model``'s workspace for one state at a time (module docstring).  Not thread
    safe: a Data, like the model's own workspace, serves one thread."""

    def __init__(self, model):
        self.model = model
        self.nq, self.nv, self.nbody = model.nq, model.nv, model.nbody
        self.geared = model._full is not None
        self._packed = model._packed
        self._mi, self._mf, self._ws = model._mi, model._mf, model._ws
        self._e2 = np.empty(2)
        self._R = np.empty((model.nbody, 3, 3))
        self._p = np.empty((model.nbody, 3))
        self._no6 = np.zeros((0, 6))

    # --- dynamics ------------------------------------------------------------------------
    def aba(self, q, v, tau):
        """q'' (nv,) = ABA(q, v, tau) (``linkdyn.aba``)."""
        if not self.geared:
            out = np.empty(self.nv)
            if _aba_entry.fn(self._packed, q, v, tau, out) == OK:
                return out
        return aba(self.model, q, v, tau)

    def rnea(self, q, v, a):
        """tau (nv,) = RNEA(q, v, a) (``linkdyn.rnea``)."""
        if not self.geared:
            out = np.empty(self.nv)
            if (_rnea_plain_entry if self.model._plain_rnea else _rnea_entry).fn(self._packed, q, v, a, out) == OK:
                return out
        return rnea(self.model, q, v, a)

    def energies(self, q, v):
        """(kinetic, potential) energy at (q, v) as floats, in one pass."""
        if not self.geared and _energy.fn(self._packed, q, v, self._e2) == OK:
            return float(self._e2[0]), float(self._e2[1])
        return float(kinetic_energy(self.model, q, v)), float(potential_energy(self.model, q))

    def kinetic_energy(self, q, v):
        return self.energies(q, v)[0]

    def potential_energy(self, q):
        """U at q (the energy kernel with v = 0)."""
        if not self.geared and _energy.fn(self._packed, q, self.model._zero_v, self._e2) == OK:
            return float(self._e2[1])
        return float(potential_energy(self.model, q))

    # --- configuration space ---------------------------------------------------------------
    def integrate(self, q, v, dt=1.0):
        """q (+) v dt (``linkdyn.integrate``); dt a float."""
        if not self.geared:
            out = np.empty(self.nq)
            if _integrate.fn(self._mi, q, v, dt, out) == OK:
                return out
        return integrate(self.model, q, v, dt)

    def difference(self, q0, q1):
        return difference(self.model, q0, q1)

    # --- kinematics ------------------------------------------------------------------------
    def poses(self, q):
        """(R (nbody, 3, 3), p (nbody, 3)): every body's world pose, in buffers of this Data
        (overwritten by the next call: copy what you keep)."""
        if not self.geared:
            st = _forward_kinematics_kernel(self._mi, self._mf, self._ws, q, _EMPTY, _EMPTY, _POS, self._R, self._p,
                                            self._no6, self._no6)
            if st == OK:
                return self._R, self._p
        kin = forward_kinematics(self.model, q)
        return kin.R, kin.p
