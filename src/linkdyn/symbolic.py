"""Closed-form (symbolic) equations of motion of small serial arms, derived with SymPy.

The Lagrange equations of Spong, Hutchinson and Vidyasagar 2006, ch. 7,

    D(q) q'' + C(q, q') q' + G(q) = tau                                   (5.60)

derived the way the textbooks derive them, independently of linkdyn's numeric kernels:

1. homogeneous DH transforms ``A_i(q_i)`` (standard, Denavit and Hartenberg 1955; Spong, Hutchinson and Vidyasagar 2006, ch. 3, or modified / Craig)
   and their products ``T_0i = base A_1 ... A_i``;
2. the Jacobians of each link's centre of mass ``J_vci`` and angular velocity ``J_wi`` from the
   joint axes (revolute: ``z x (p_c - o)`` and ``z``; prismatic: ``z`` and ``0``);
3. ``D = sum_i m_i J_vci^T J_vci + J_wi^T R_i I_i R_i^T J_wi`` (eq. (5.50)), plus the armature on
   the diagonal;
4. ``C`` from the Christoffel symbols of the first kind (eqs. (5.64)-(5.65))

       c_ijk = 1/2 (d d_kj/d q_i + d d_ki/d q_j - d d_ij/d q_k),   C_kj = sum_i c_ijk q'_i,

   so that ``D' - 2C`` is skew-symmetric (eqs. (5.66)-(5.71));
5. ``U = -sum_i m_i g^T p_ci`` (eq. (5.53) with ``g`` the gravity acceleration in the world,
   e.g. ``(0, 0, -9.81)``) and ``G = (dU/dq)^T``.

The link description is the one of :mod:`linkdyn.models.dh` (:class:`~linkdyn.DHLink`): mass,
centre of mass and inertia (about the centre of mass) in DH frame ``i``; ``q = 0`` is the table's
offset (``theta_i = theta + q_i`` for a revolute joint, ``d_i = d + q_i`` for a prismatic one).
A model built with :func:`linkdyn.from_dh` from the same table is the same mechanism, so the
lambdified functions agree with ``linkdyn.crba``, ``linkdyn.rnea``, ... to round-off.

Parameters may be SymPy expressions (lengths, masses, inertias, gravity), to get textbook
formulas: pass :class:`SymbolicDHLink` rows (``DHLink`` insists on numbers), or use
:func:`planar_2link_symbolic` for the arm of Spong, Hutchinson and Vidyasagar 2006, ch. 7.

The algebra runs in a polynomial ring in ``cos q_i``, ``sin q_i`` (revolute) and ``q_i``
(prismatic), reduced with ``cos^2 + sin^2 = 1``, so a 6-joint arm (PUMA 560, Stanford arm) is
derived and lambdified in about a second with ``simplify=False``.  ``simplify=True``
(``sympy.simplify`` on every entry, the readable textbook form) is for small arms: it takes
minutes for 6 joints.

SymPy is an optional dependency: ``pip install 'linkdyn[symbolic]'``.

    from linkdyn.symbolic import planar_2link_symbolic, symbolic_dynamics
    arm = planar_2link_symbolic()          # symbols a1, l1, m1, J1, ...: arm.D, arm.C, arm.G
    dyn = symbolic_dynamics(linkdyn.models.dh.puma560_links(), simplify=False)
    f = dyn.lambdify()                     # f.D(q), f.C(q, qd), f.G(q), f.tau(q, qd, qdd)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["SymbolicDHLink", "SymbolicDynamics", "LambdifiedDynamics", "symbolic_dynamics",
           "planar_2link_symbolic", "dh_transform"]


def _sympy():
    try:
        import sympy
    except ImportError:  # pragma: no cover - exercised only without sympy
        raise ImportError("linkdyn.symbolic needs SymPy: pip install 'linkdyn[symbolic]'") from None
    return sympy


# ------------------------------------------------------------------------------ links

@dataclass
class SymbolicDHLink:
    """A DH row like :class:`~linkdyn.DHLink` whose fields may be SymPy expressions.

    ``a``, ``alpha``, ``d``, ``theta`` (the joint offset), ``kind`` ("revolute" or "prismatic"),
    ``mass``, ``com`` (3-vector) and ``inertia`` (3x3 about the centre of mass, or 3 principal
    moments) in DH frame ``i``, ``armature``.  Same conventions as ``DHLink``; no numeric checks.
    """
    a: object = 0
    alpha: object = 0
    d: object = 0
    theta: object = 0
    kind: str = "revolute"
    mass: object = 0
    com: object = (0, 0, 0)
    inertia: object = field(default_factory=lambda: ((0, 0, 0), (0, 0, 0), (0, 0, 0)))
    armature: object = 0

    def __post_init__(self):
        if self.kind not in ("revolute", "prismatic"):
            raise ValueError(f"SymbolicDHLink.kind: expected 'revolute' or 'prismatic', got {self.kind!r}")


_FIELDS = ("a", "alpha", "d", "theta", "kind", "mass", "com", "inertia", "armature")


def _number(sp, x, angle=False):
    """A SymPy value for x: SymPy objects unchanged, integers exact, floats as the exact decimal of
    their shortest repr (0.4318 -> 2159/5000), angles that are multiples of pi/12 as such (so that
    cos(pi/2) is 0, not 6e-17)."""
    if isinstance(x, sp.Basic):
        return x
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"expected a number, got {x!r}")
    if isinstance(x, (int, np.integer)):
        return sp.Integer(int(x))
    try:
        f = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"expected a number or a SymPy expression, got {x!r}") from None
    if not math.isfinite(f):
        raise ValueError(f"expected a finite number, got {x!r}")
    if angle:
        k = f / math.pi * 12.0
        if abs(k - round(k)) < 1e-12:
            return sp.pi * sp.Rational(int(round(k)), 12)
    return sp.Rational(repr(f))


def _link_values(sp, L, k):
    """(a, alpha, d, theta, kind, mass, com (3x1), inertia (3x3), armature) of one link."""
    if isinstance(L, dict):
        unknown = set(L) - set(_FIELDS) - {"lower", "upper"}
        if unknown:
            raise ValueError(f"links[{k}]: unknown fields {sorted(unknown)}; expected {_FIELDS}")
        L = SymbolicDHLink(**{f: v for f, v in L.items() if f in _FIELDS})
    missing = [f for f in _FIELDS if not hasattr(L, f)]
    if missing:
        raise TypeError(f"links[{k}]: expected a DHLink, SymbolicDHLink or dict, got {type(L).__name__} "
                        f"(missing {missing})")
    if L.kind not in ("revolute", "prismatic"):
        raise ValueError(f"links[{k}].kind: expected 'revolute' or 'prismatic', got {L.kind!r}")
    com = sp.Matrix([_number(sp, c) for c in np.asarray(L.com, dtype=object).ravel()])
    if com.shape != (3, 1):
        raise ValueError(f"links[{k}].com: expected a 3-vector, got {len(com)} values")
    I = np.asarray(L.inertia, dtype=object)
    if I.shape == (3,):
        I = np.diag(I)
    if I.shape != (3, 3):
        raise ValueError(f"links[{k}].inertia: expected a 3x3 matrix or 3 principal moments, got shape {I.shape}")
    I = sp.Matrix(3, 3, [_number(sp, v) for v in I.ravel()])
    if (I - I.T).applyfunc(sp.expand) != sp.zeros(3, 3):
        raise ValueError(f"links[{k}].inertia: expected a symmetric matrix")
    return (_number(sp, L.a), _number(sp, L.alpha, angle=True), _number(sp, L.d), _number(sp, L.theta, angle=True),
            L.kind, _number(sp, L.mass), com, I, _number(sp, L.armature))


# ------------------------------------------------------------------------------ transforms

def _rx(sp, t):
    c, s = sp.cos(t), sp.sin(t)
    return sp.Matrix([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1]])


def _rz(sp, t):
    c, s = sp.cos(t), sp.sin(t)
    return sp.Matrix([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])


def _trans(sp, x=0, z=0):
    return sp.Matrix([[1, 0, 0, x], [0, 1, 0, 0], [0, 0, 1, z], [0, 0, 0, 1]])


def dh_transform(a, alpha, d, theta, convention="standard"):
    """Symbolic 4x4 link transform: standard ``Rot_z(theta) Trans_z(d) Trans_x(a) Rot_x(alpha)``
    (Denavit and Hartenberg 1955; Spong, Hutchinson and Vidyasagar 2006, ch. 3) or modified ``Rot_x(alpha) Trans_x(a) Rot_z(theta) Trans_z(d)``."""
    sp = _sympy()
    if convention == "standard":
        return _rz(sp, theta) * _trans(sp, z=d) * _trans(sp, x=a) * _rx(sp, alpha)
    if convention == "modified":
        return _rx(sp, alpha) * _trans(sp, x=a) * _rz(sp, theta) * _trans(sp, z=d)
    raise ValueError(f"convention: expected 'standard' or 'modified', got {convention!r}")


# ------------------------------------------------------------------------------ result

class SymbolicDynamics:
    """The closed-form equations of motion of a serial arm (see the module docstring).

    Attributes (SymPy ``Matrix``; vectors are columns):

    ``q``, ``qd``, ``qdd``  joint positions, velocities, accelerations (symbols ``q1..qn`` ...)
    ``D``                  inertia matrix (n, n), eq. (5.50) + armature
    ``C``                  Coriolis/centrifugal matrix (n, n) from Christoffel symbols, eq. (5.65)
    ``G``                  gravity vector (n, 1), ``(dU/dq)^T``
    ``tau``                ``D qdd + C qd + G`` (n, 1)
    ``K``, ``U``           kinetic ``qd^T D qd / 2`` and potential energy (scalars)
    ``Ddot``               ``dD/dt = sum_i dD/dq_i qd_i`` (``Ddot - 2 C`` is skew-symmetric)
    ``T``                  ``[T_00, T_01, ..., T_0n]``: world poses of the DH frames (4x4)
    ``p_com``              world positions of the centres of mass (3x1 each)
    ``Jv``, ``Jw``         centre-of-mass and angular-velocity Jacobians of each link (3, n)
    ``gravity``            the gravity acceleration (3x1, world)
    ``parameters``         free symbols other than q, qd, qdd (sorted by name)
    """

    def __init__(self, **kw):
        self.__dict__.update(kw)

    @property
    def n(self) -> int:
        return self.q.shape[0]

    def christoffel(self, i: int, j: int, k: int):
        """Christoffel symbol of the first kind ``c_ijk`` (Spong, Hutchinson and Vidyasagar 2006, ch. 7), 0-based indices."""
        ring, chris = self._chris
        return ring.expr(chris[i][j][k]) / 2

    def lambdify(self, values=None, cse: bool = True) -> "LambdifiedDynamics":
        """Fast numeric functions ``D(q)``, ``C(q, qd)``, ``G(q)``, ``tau(q, qd, qdd)`` (plus
        ``K(q, qd)``, ``U(q)``) generated with ``sympy.lambdify`` (NumPy backend).

        ``values``: {symbol or name: number} for the symbolic parameters (lengths, masses, ``g``
        ...); every parameter must get a value.  The functions take one state (``(n,)`` arrays)
        or a stack (``(N, n)``) and return ``(n, n)`` / ``(n,)`` (or with a leading ``N``).
        """
        sp = _sympy()
        subs = {}
        by_name = {s.name: s for s in self.parameters}
        for key, val in (values or {}).items():
            sym = by_name.get(key) if isinstance(key, str) else key
            if sym is None or sym not in self.parameters:
                raise KeyError(f"values: {key!r} is not a parameter of these equations; "
                               f"parameters: {[s.name for s in self.parameters]}")
            subs[sym] = _number(sp, val) if not isinstance(val, sp.Basic) else val
        missing = [s.name for s in self.parameters if s not in subs]
        if missing:
            raise ValueError(f"values: no value for the parameters {missing}; pass values={{name: number}}")

        def fix(e):
            return e.xreplace(subs) if subs else e

        q, qd, qdd = list(self.q), list(self.qd), list(self.qdd)
        n = self.n
        D, C, G = fix(self.D), fix(self.C), fix(self.G)
        tau = fix(self.tau)
        return LambdifiedDynamics(
            n,
            D=_vectorized(sp, [q], D, (n, n), cse),
            C=_vectorized(sp, [q, qd], C, (n, n), cse),
            G=_vectorized(sp, [q], G, (n,), cse),
            tau=_vectorized(sp, [q, qd, qdd], tau, (n,), cse),
            K=_vectorized(sp, [q, qd], sp.Matrix([fix(self.K)]), (), cse),
            U=_vectorized(sp, [q], sp.Matrix([fix(self.U)]), (), cse))

    def __repr__(self):
        return f"SymbolicDynamics(n={self.n}, parameters={[s.name for s in self.parameters]})"


class LambdifiedDynamics:
    """Numeric functions made by :meth:`SymbolicDynamics.lambdify`: ``D(q)``, ``C(q, qd)``,
    ``G(q)``, ``tau(q, qd, qdd)``, ``K(q, qd)``, ``U(q)``."""

    def __init__(self, n, **fns):
        self.n = n
        self.__dict__.update(fns)

    def __repr__(self):
        return f"LambdifiedDynamics(n={self.n})"


def _vectorized(sp, arg_groups, M, shape, cse):
    """lambdify the entries of M (flattened) and wrap: arguments (n,) or (N, n) arrays."""
    entries = list(M)
    f = sp.lambdify(arg_groups, entries, modules="numpy", cse=cse)
    n = len(arg_groups[0])

    def fn(*args):
        if len(args) != len(arg_groups):
            raise TypeError(f"expected {len(arg_groups)} arrays, got {len(args)}")
        arrs = [np.asarray(a, dtype=float) for a in args]
        batch = None
        for a in arrs:
            if a.shape[-1:] != (n,) or a.ndim > 2:
                raise ValueError(f"expected arrays of shape ({n},) or (N, {n}), got {a.shape}")
            if a.ndim == 2:
                if batch is not None and a.shape[0] != batch:
                    raise ValueError("the stacked arguments have different lengths")
                batch = a.shape[0]
        cols = [list(a.T) for a in arrs]          # each argument as n scalars or n (N,) columns
        vals = f(*cols)
        lead = () if batch is None else (batch,)
        out = np.empty(lead + (len(entries),))
        for k, v in enumerate(vals):
            out[..., k] = v
        if shape == () and batch is None:
            return float(out[0])
        return out.reshape(lead + shape)

    fn.__doc__ = f"lambdified: {len(entries)} entries, output shape {shape} (leading N for stacked input)"
    return fn


# ------------------------------------------------------------------------------ derivation
#
# The algebra runs in a polynomial ring: for a revolute joint i the generators are c_i = cos(q_i)
# and s_i = sin(q_i), for a prismatic joint q_i itself; the coefficients (link parameters, cosines
# of the fixed angles, gravity) live in the ring's domain (QQ for numeric tables, QQ[a1, m1, ...]
# for symbolic ones).  Every product is reduced modulo c_i^2 + s_i^2 - 1 (c_i^2 -> 1 - s_i^2), a
# canonical form, so cancellations are exact and expressions stay small; d/dq_i of a revolute
# joint is c_i d/ds_i - s_i d/dc_i.  Only the results are turned into expressions in cos(q_i),
# sin(q_i) and (optionally) simplified.

class _Ring:
    """The polynomial ring of the derivation and its operations (see above)."""

    def __init__(self, sp, q, kinds, constants):
        from sympy.polys.constructor import construct_domain
        self.sp = sp
        syms, self.var = [], []          # var[i]: ("R", ic, is) or ("P", iq): generator indices
        for i, kind in enumerate(kinds):
            if kind == "revolute":
                syms += [sp.Dummy(f"c{i + 1}"), sp.Dummy(f"s{i + 1}")]
                self.var.append(("R", len(syms) - 2, len(syms) - 1))
            else:
                syms.append(q[i])
                self.var.append(("P", len(syms) - 1))
        domain = construct_domain(list(constants) + [sp.Rational(1, 2)])[0]
        self.R, *self.gens = sp.ring(syms, domain)
        self.syms = syms
        self.back = {}                   # generator symbol -> expression in q
        for i, v in enumerate(self.var):
            if v[0] == "R":
                self.back[syms[v[1]]] = sp.cos(q[i])
                self.back[syms[v[2]]] = sp.sin(q[i])

    def __call__(self, e):
        return self.R.from_expr(self.sp.sympify(e)) if not isinstance(e, type(self.R.zero)) else e

    def cos_sin(self, i, offset):
        """cos and sin of theta_i = offset + q_i (revolute joint i)."""
        sp, (_, ic, is_) = self.sp, self.var[i]
        c, s = self.gens[ic], self.gens[is_]
        co, so = self(sp.cos(offset)), self(sp.sin(offset))
        return co * c - so * s, so * c + co * s

    def reduce(self, p):
        """Normal form modulo c_i^2 + s_i^2 - 1: c_i^(2k+r) -> c_i^r (1 - s_i^2)^k."""
        for v in self.var:
            if v[0] != "R":
                continue
            ic, s = v[1], self.gens[v[2]]
            one_minus_s2 = 1 - s * s
            while True:
                hi = {m: c for m, c in p.items() if m[ic] >= 2}
                if not hi:
                    break
                low = p - self.R.from_dict(hi)
                lowered = self.R.from_dict({m[:ic] + (m[ic] - 2,) + m[ic + 1:]: c for m, c in hi.items()})
                p = low + lowered * one_minus_s2
        return p

    def diff(self, p, i):
        """d p / d q_i."""
        v = self.var[i]
        if v[0] == "P":
            return p.diff(self.gens[v[1]])
        c, s = self.gens[v[1]], self.gens[v[2]]
        return self.reduce(p.diff(s) * c - p.diff(c) * s)

    def expr(self, p):
        return p.as_expr().xreplace(self.back)

    def matmul(self, A, B):
        return [[self.reduce(sum((A[i][k] * B[k][j] for k in range(len(B))), self.R.zero))
                 for j in range(len(B[0]))] for i in range(len(A))]


def _link_matrix(sp, ring, i, row, convention):
    """A_i(q_i) as a 4x4 list of ring elements (standard: Denavit and Hartenberg 1955; Spong, Hutchinson and Vidyasagar 2006, ch. 3; modified: Craig)."""
    a, alpha, d, theta, kind = row[:5]
    if kind == "revolute":
        ct, st = ring.cos_sin(i, theta)
        d = ring(d)
    else:
        ct, st = ring(sp.cos(theta)), ring(sp.sin(theta))
        d = ring(d) + ring.gens[ring.var[i][1]]
    ca, sa, a = ring(sp.cos(alpha)), ring(sp.sin(alpha)), ring(a)
    zero, one = ring.R.zero, ring.R.one
    if convention == "standard":   # Rot_z(theta) Trans_z(d) Trans_x(a) Rot_x(alpha)
        return [[ct, -st * ca, st * sa, a * ct],
                [st, ct * ca, -ct * sa, a * st],
                [zero, sa, ca, d],
                [zero, zero, zero, one]]
    return [[ct, -st, zero, a],          # Rot_x(alpha) Trans_x(a) Rot_z(theta) Trans_z(d)
            [st * ca, ct * ca, -sa, -sa * d],
            [st * sa, ct * sa, ca, ca * d],
            [zero, zero, zero, one]]


def _simplifier(sp, simplify, njoints):
    if simplify == "auto":
        simplify = njoints <= _AUTO_SIMPLIFY_MAX
    if simplify is True:
        return sp.simplify
    if simplify is False or simplify is None:
        return lambda e: e
    if simplify == "trig":
        return sp.trigsimp
    if callable(simplify):
        return simplify
    raise ValueError(f"simplify: expected 'auto', True, False, 'trig' or a callable, got {simplify!r}")


_AUTO_SIMPLIFY_MAX = 3     # sympy.simplify on every entry: seconds for 3 joints, minutes for 6


def symbolic_dynamics(links, convention: str = "standard", gravity=(0, 0, -9.81), simplify="auto",
                      base=None) -> SymbolicDynamics:
    """Derive ``D(q)``, ``C(q, q')``, ``G(q)`` of a serial arm from its DH table.

    links: a list of :class:`~linkdyn.DHLink` (numbers), :class:`SymbolicDHLink` or dicts with
    the same fields (numbers or SymPy expressions).  convention: ``"standard"`` or ``"modified"``
    (as :func:`linkdyn.from_dh`).  gravity: the gravity acceleration in the world (numbers or SymPy
    expressions).  base: 4x4 pose of DH frame 0 in the world (default identity), as in ``from_dh``.
    simplify: ``"auto"`` (the default: ``True`` up to 3 joints, ``False`` beyond), ``True``
    (``sympy.simplify`` on every entry of the results; fine up to about 3 joints, minutes for 6), ``"trig"`` (``sympy.trigsimp``), ``False`` (none: the entries are
    expanded polynomials in cos(q_i), sin(q_i) and the prismatic q_i, reduced with
    cos^2 + sin^2 = 1 -- already exact and fairly compact, the choice for 6 joints) or a callable
    applied to every entry.  Floats become exact rationals of their decimal repr (0.4318 ->
    2159/5000) and angles that are multiples of pi/12 become exact, so ``cos(pi/2)`` is 0.

    Returns a :class:`SymbolicDynamics`; ``.lambdify()`` makes fast numeric functions.
    """
    sp = _sympy()
    if convention not in ("standard", "modified"):
        raise ValueError(f"convention: expected 'standard' or 'modified', got {convention!r}")
    rows = [_link_values(sp, L, k) for k, L in enumerate(list(links))]
    if not rows:
        raise ValueError("links: expected at least one link")
    simp = _simplifier(sp, simplify, len(rows))
    n = len(rows)
    q = sp.Matrix(sp.symbols(f"q1:{n + 1}", real=True))
    qd = sp.Matrix(sp.symbols(f"qd1:{n + 1}", real=True))
    qdd = sp.Matrix(sp.symbols(f"qdd1:{n + 1}", real=True))
    g = [_number(sp, x) for x in np.asarray(gravity, dtype=object).ravel()]
    if len(g) != 3:
        raise ValueError(f"gravity: expected a 3-vector, got {len(g)} values")
    if base is None:
        base = np.eye(4, dtype=int)
    base = np.asarray(base, dtype=object)
    if base.shape != (4, 4):
        raise ValueError(f"base: expected a 4x4 homogeneous transform, got shape {base.shape}")
    base = [[_number(sp, x) for x in r] for r in base]

    constants = list(g) + [x for r in base for x in r]
    for a, alpha, d, theta, _kind, m, com, I, arm in rows:
        constants += [a, d, sp.cos(alpha), sp.sin(alpha), sp.cos(theta), sp.sin(theta), m, arm, *com, *I]
    ring = _Ring(sp, q, [r[4] for r in rows], constants)
    Z = ring.R.zero

    # forward kinematics: T[i] = T_0i, the world pose of DH frame i
    T = [[[ring(x) for x in r] for r in base]]
    axes = []                                        # (z, o, kind) of joint i in the world
    for i, row in enumerate(rows):
        T.append(ring.matmul(T[-1], _link_matrix(sp, ring, i, row, convention)))
        # standard: joint i moves about / along z_{i-1} through o_{i-1}; modified: z_i through o_i
        F = T[-2] if convention == "standard" else T[-1]
        axes.append(([F[r][2] for r in range(3)], [F[r][3] for r in range(3)], row[4]))

    def cross(u, v):
        return [ring.reduce(u[1] * v[2] - u[2] * v[1]), ring.reduce(u[2] * v[0] - u[0] * v[2]),
                ring.reduce(u[0] * v[1] - u[1] * v[0])]

    # link Jacobians (5.48) and the inertia matrix (5.50); potential energy (5.53)
    D = [[Z] * n for _ in range(n)]
    U = Z
    p_com, Jvs, Jws = [], [], []
    for i, (_a, _al, _d, _th, _kind, m, com, I, _arm) in enumerate(rows):
        Rm = [[T[i + 1][r][c] for c in range(3)] for r in range(3)]
        pc = [ring.reduce(sum((Rm[r][c] * ring(com[c]) for c in range(3)), T[i + 1][r][3])) for r in range(3)]
        Jv = [[Z] * n for _ in range(3)]
        Jw = [[Z] * n for _ in range(3)]
        for j in range(i + 1):
            z, o, kind = axes[j]
            col_v = cross(z, [pc[r] - o[r] for r in range(3)]) if kind == "revolute" else z
            for r in range(3):
                Jv[r][j] = col_v[r]
                if kind == "revolute":
                    Jw[r][j] = z[r]
        Iw = ring.matmul(ring.matmul(Rm, [[ring(I[r, c]) for c in range(3)] for r in range(3)]),
                         [list(col) for col in zip(*Rm)])       # R I R^T
        IwJw = ring.matmul(Iw, Jw)
        mm = ring(m)
        for r in range(n):
            for c in range(r, n):
                lin = sum((Jv[k][r] * Jv[k][c] for k in range(3)), Z)
                ang = sum((Jw[k][r] * IwJw[k][c] for k in range(3)), Z)
                D[r][c] = D[r][c] + ring.reduce(mm * lin + ang)
        U = U - mm * sum((ring(g[k]) * pc[k] for k in range(3)), Z)
        p_com.append(pc)
        Jvs.append(Jv)
        Jws.append(Jw)
    for i, row in enumerate(rows):
        D[i][i] = D[i][i] + ring(row[8])
    for r in range(n):
        for c in range(r):
            D[r][c] = D[c][r]

    # Christoffel symbols of the first kind (5.64): dD[i] = dD/dq_i
    dD = [[[ring.diff(D[r][c], i) if c >= r else None for c in range(n)] for r in range(n)] for i in range(n)]
    for i in range(n):
        for r in range(n):
            for c in range(r):
                dD[i][r][c] = dD[i][c][r]
    chris = [[[ring.reduce(dD[i][k][j] + dD[j][k][i] - dD[k][i][j]) for k in range(n)] for j in range(n)]
             for i in range(n)]                                  # 2 c_ijk, indexed [i][j][k]
    G = [ring.diff(U, k) for k in range(n)]

    def mat(rows_):                                             # kinematics: unsimplified
        return sp.Matrix([[ring.expr(x) for x in r] for r in rows_])

    Dm = sp.zeros(n, n)
    for r in range(n):
        for c in range(r, n):
            Dm[r, c] = Dm[c, r] = simp(ring.expr(D[r][c]))
    Cm = sp.zeros(n, n)                                          # C_kj = sum_i c_ijk q'_i (5.65)
    for k in range(n):
        for j in range(n):
            Cm[k, j] = simp(sp.Add(*[ring.expr(chris[i][j][k]) * qd[i] for i in range(n)]) / 2)
    Ddot = sp.zeros(n, n)
    for r in range(n):
        for c in range(r, n):
            Ddot[r, c] = Ddot[c, r] = simp(sp.Add(*[ring.expr(dD[i][r][c]) * qd[i] for i in range(n)]))
    Gm = sp.Matrix([simp(ring.expr(x)) for x in G])
    Um = simp(ring.expr(U))
    K = (qd.T * Dm * qd)[0, 0] / 2
    tau = Dm * qdd + Cm * qd + Gm

    reserved = set(q) | set(qd) | set(qdd)
    free = set().union(Dm.free_symbols, Gm.free_symbols, Cm.free_symbols, Um.free_symbols) - reserved
    return SymbolicDynamics(
        q=q, qd=qd, qdd=qdd, D=Dm, C=Cm, G=Gm, tau=tau, K=K, U=Um, Ddot=Ddot,
        T=[mat(Ti) for Ti in T], p_com=[mat([[x] for x in pc]) for pc in p_com],
        Jv=[mat(J) for J in Jvs], Jw=[mat(J) for J in Jws],
        gravity=sp.Matrix(g), convention=convention, parameters=sorted(free, key=lambda s: s.name),
        _chris=(ring, chris))


# ------------------------------------------------------------------------------ Spong, Hutchinson and Vidyasagar 2006, ch. 7

def planar_2link_symbolic(gravity: str = "none", simplify=True) -> SymbolicDynamics:
    """The planar 2-link arm of Spong, Hutchinson and Vidyasagar 2006, ch. 7 (fig. 5.5) with symbolic parameters, and the
    textbook's closed form next to the derived one.

    Notation of the seed: link ``i`` has length ``a_i`` (standard DH, ``alpha_i = d_i = 0``), its
    centre of mass is at ``[-r_i, 0, 0]`` in DH frame ``i``, i.e. at the distance ``l_i = a_i - r_i``
    from joint ``i`` (``l_ci`` in other books), mass ``m_i`` and moment of inertia ``J_i`` about
    the z axis through the centre of mass (eqs. (5.85)-(5.86)).  Symbols: ``a1, a2, l1, l2, m1, m2,
    J1, J2, g`` (``a2`` does not enter the dynamics).

    gravity: ``"none"`` (the arm moves in a horizontal plane, gravity along -z does no work: the
    case of eq. (5.93)) or ``"in_plane"`` (gravity ``(0, -g, 0)``, the arm hangs in a vertical
    plane).

    Returns the :class:`SymbolicDynamics` of :func:`symbolic_dynamics` with an extra attribute
    ``textbook``: a dict with the textbook's ``D`` (eq. (5.87)), ``C_593`` (the velocity matrix of
    eq. (5.93), a non-skew factorisation from eq. (5.92)), ``C`` (its skew-compatible form, eq.
    (5.95): the Christoffel one), ``G`` and ``tau`` (eq. (5.93) with ``G`` added).

    Eq. (5.93) as printed has ``-1/2 theta2'`` in the (2, 2) entry of its velocity matrix; eq.
    (5.92) gives ``-1/2 theta1'`` (and only then does the product with ``q'`` equal the
    Coriolis/centrifugal vector ``[-h(2 q1' q2' + q2'^2), h q1'^2]``, ``h = m2 a1 l2 s2``, that
    eqs. (5.95)-(5.96) and the regressor after eq. (5.96) also give); ``C_593`` holds the corrected
    entry.
    """
    sp = _sympy()
    a1, a2, l1, l2, m1, m2, J1, J2, g = sp.symbols("a1 a2 l1 l2 m1 m2 J1 J2 g", positive=True)
    if gravity == "none":
        gvec = (0, 0, -g)
    elif gravity == "in_plane":
        gvec = (0, -g, 0)
    else:
        raise ValueError(f"gravity: expected 'none' or 'in_plane', got {gravity!r}")
    # the x and y moments of inertia ('*' in eqs. (5.85)-(5.86)) do not enter planar motion; they
    # are kept as symbols so that the derivation shows it
    Ix1, Iy1, Ix2, Iy2 = sp.symbols("Ixx1 Iyy1 Ixx2 Iyy2", positive=True)
    links = [SymbolicDHLink(a=a1, mass=m1, com=(-(a1 - l1), 0, 0), inertia=(Ix1, Iy1, J1)),
             SymbolicDHLink(a=a2, mass=m2, com=(-(a2 - l2), 0, 0), inertia=(Ix2, Iy2, J2))]
    dyn = symbolic_dynamics(links, "standard", gravity=gvec, simplify=simplify)

    q1, q2 = dyn.q
    t1d, t2d = dyn.qd
    c1, s2, c2, c12 = sp.cos(q1), sp.sin(q2), sp.cos(q2), sp.cos(q1 + q2)
    D = sp.Matrix([[m1 * l1**2 + J1 + m2 * (a1**2 + l2**2) + J2 + 2 * m2 * a1 * l2 * c2,
                    J2 + m2 * l2**2 + m2 * a1 * l2 * c2],
                   [J2 + m2 * l2**2 + m2 * a1 * l2 * c2, J2 + m2 * l2**2]])                  # (5.87)
    h = m2 * a1 * l2 * s2
    C_593 = -h * sp.Matrix([[2 * t2d, t2d], [t2d / 2 - t1d, -t1d / 2]])                        # (5.93), corrected
    C = -h * sp.Matrix([[t2d, t1d + t2d], [-t1d, 0]])                                           # (5.95)
    if gravity == "none":
        G = sp.zeros(2, 1)
    else:
        G = g * sp.Matrix([(m1 * l1 + m2 * a1) * c1 + m2 * l2 * c12, m2 * l2 * c12])
    tau = D * dyn.qdd + C_593 * dyn.qd + G
    dyn.textbook = dict(D=D, C_593=C_593, C=C, G=G, tau=tau,
                        symbols=dict(a1=a1, a2=a2, l1=l1, l2=l2, m1=m1, m2=m2, J1=J1, J2=J2, g=g))
    return dyn
