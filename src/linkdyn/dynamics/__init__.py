"""Dynamics algorithms, one module each: rnea, crba (and the unit-vector and Jacobian
methods), aba, energy."""
from .aba import aba
from .crba import crba, mass_matrix
from .rnea import generalized_gravity, nonlinear_effects, rnea
from .energy import kinetic_energy, mechanical_energy, potential_energy
