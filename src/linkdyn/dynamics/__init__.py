"""Dynamics algorithms, one module each: rnea, crba (and the unit-vector and Jacobian
methods), aba, energy, cholesky (the tree-sparse LTDL factorization of M), lagrange (C, D'),
regressor, derivatives (of RNEA and ABA), passive (the joints' springs and damping, MuJoCo's qfrc_passive).

Layer (docs/architecture.md): above ``kinematics``, below the constraint layer (``constraints``,
``loops``, ``contact``).  May import: ``_kernels``, ``_api``, ``spatial``, ``model``, ``kinematics``.
Imported by: the constraint layer and everything above it.  :mod:`linkdyn.dynamics.data` is the
prepared layer: the kernels over a model's workspace, called without validation, that linkdyn's
own loops use (the public functions validate; nothing inside linkdyn calls them in a hot loop).
"""
from .aba import aba
from .crba import crba, mass_matrix
from .rnea import generalized_gravity, nonlinear_effects, rnea
from .energy import kinetic_energy, mechanical_energy, potential_energy
from .passive import passive_forces
from .cholesky import MassMatrixCholesky, mass_matrix_cholesky, solve_mass_matrix
from .derivatives import aba_derivatives, rnea_derivatives
