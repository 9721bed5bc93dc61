"""Joint kind codes, as the compiled kernels read them (``model.jnt_type``).

They live in the kernel layer because ``jcalc`` switches on them; :mod:`linkdyn.model.joints`
re-exports them next to the joint classes that users build models with.
"""

FIXED, REVOLUTE, PRISMATIC, CYLINDRICAL, UNIVERSAL, SPHERICAL, SPHERICAL_ZYX, PLANAR, FREE = range(9)
