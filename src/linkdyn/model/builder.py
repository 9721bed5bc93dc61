"""Build a kinematic tree, then freeze it into the flat arrays the kernels run on.

    b = ModelBuilder("arm")
    b.add_body("upper", parent="world", joint=Revolute("z"), inertia=Inertia(1.0, [0, 0, 0.2], np.eye(3) * 0.01))
    b.add_body("fore", parent="upper", joint=Revolute("y"), placement=([0, 0, 0.4]))
    b.add_frame("tool", "fore", placement=[0, 0, 0.3])
    model = b.build()

``build`` orders the bodies depth-first (so ``parent[i] < i`` and each subtree is a
contiguous range), merges bodies on fixed joints into their parent (their inertia is added,
their name becomes a frame), and computes the derived topology once: children, subtree ends,
and the parent/child/brother pointers of Nakamura and Yamane 2000 sec. 3.1.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping
from typing import TYPE_CHECKING, Iterable

import numpy as np

from .. import spatial
from . import geometry as G
from . import joints as J

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from .model import Model


class InertiaWarning(UserWarning):
    """An inertia no rigid body has (principal moments breaking A + B >= C), kept as given
    because it comes from a file or a published parameter set."""


def triangle_violation(lam: ArrayLike) -> float:
    """How far principal moments ``lam`` (ascending) break A + B >= C, beyond a tolerance of
    1e-6 of their sum (files print few digits; a thin disc sits exactly on the boundary).
    Positive: broken, by that much."""
    a, b, c = (float(x) for x in lam)
    return c - (a + b) - 1e-6 * max(abs(a) + abs(b) + abs(c), 1e-300)


@dataclass(frozen=True)
class Inertia:
    """Mass properties of a body: ``mass``, centre of mass ``com`` and rotational inertia
    ``inertia`` about the centre of mass, both in the body frame."""
    mass: float
    com: ArrayLike = (0.0, 0.0, 0.0)
    inertia: ArrayLike = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))

    def matrix(self) -> NDArray[np.float64]:
        for what, x in (("mass", self.mass), ("com", self.com), ("inertia", self.inertia)):
            G._strict_reals(x, f"Inertia.{what}")                      # no bool or str (issue 28)
        m = float(self.mass)
        c = np.asarray(self.com, dtype=float)
        Ic = np.asarray(self.inertia, dtype=float)
        if not np.isfinite(m) or m < 0:
            raise ValueError(f"Inertia.mass: expected a finite non-negative number, got {self.mass}")
        if c.shape != (3,) or Ic.shape != (3, 3):
            raise ValueError(f"Inertia: com must have shape (3,) and inertia (3, 3), got {c.shape} and {Ic.shape}")
        if not (np.isfinite(c).all() and np.isfinite(Ic).all()):
            raise ValueError("Inertia: com and inertia must be finite")
        if np.abs(c).max() > G.MAX_LENGTH:
            raise ValueError(f"Inertia.com: {np.abs(c).max():g} m is beyond the physical range (<= {G.MAX_LENGTH:g} m)")
        if not np.allclose(Ic, Ic.T, atol=1e-9 * max(1.0, np.abs(Ic).max())):
            raise ValueError("Inertia.inertia: the rotational inertia must be symmetric")
        lam = np.linalg.eigvalsh(0.5 * (Ic + Ic.T))
        if lam[0] < -1e-12 * max(1.0, np.abs(Ic).max()):
            raise ValueError("Inertia.inertia: the rotational inertia must be positive semi-definite "
                             f"(principal moments {lam.tolist()})")
        # (a massless body with a rotational inertia, a motor's rotor as in the textbook PUMA 560's
        # first link, is a modelling idiom that only ever turns about one axis: not checked)
        if m > 0.0 and triangle_violation(lam) > 0.0:
            raise ValueError(f"Inertia.inertia: the principal moments {lam.tolist()} break the triangle inequality "
                             "A + B >= C, which every rigid body's moments satisfy (a mass distribution has "
                             "C - A - B = -2 sum m z^2 <= 0); check the values and their units")
        with np.errstate(over="ignore", invalid="ignore"):
            I6 = spatial.spatial_inertia(m, c, 0.5 * (Ic + Ic.T))
        if not np.isfinite(I6).all():
            raise ValueError(f"Inertia: mass {m:g} with the centre of mass at {c.tolist()} overflows the spatial inertia")
        return I6


def as_pose(placement: ArrayLike | tuple[ArrayLike, ArrayLike] | None, what: str = "placement") -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(R, p) from None, a 3-vector position, a 4x4 homogeneous matrix or an (R, p) pair."""
    if placement is None:
        return np.eye(3), np.zeros(3)
    G._strict_reals(placement, what)                                 # no bool or str (issue 28)
    if isinstance(placement, (tuple, list)) and len(placement) == 2:
        R, p = (np.asarray(x, dtype=float) for x in placement)
    else:
        T = np.asarray(placement, dtype=float)
        if T.shape == (3,):
            R, p = np.eye(3), T
        elif T.shape == (4, 4):
            R, p = T[:3, :3], T[:3, 3]
        else:
            raise ValueError(f"{what}: expected a 4x4 matrix, an (R, p) pair or a position 3-vector, got shape {T.shape}")
    if R.shape != (3, 3) or p.shape != (3,):
        raise ValueError(f"{what}: R must be 3x3 and p a 3-vector, got {R.shape} and {p.shape}")
    if not (np.isfinite(R).all() and np.isfinite(p).all()):
        raise ValueError(f"{what}: must be finite")
    if np.abs(p).max() > G.MAX_LENGTH:
        raise ValueError(f"{what}: the position {p.tolist()} is beyond the physical range (|x| <= {G.MAX_LENGTH:g} m; "
                         "check the units)")
    if not np.allclose(R.T @ R, np.eye(3), atol=1e-6) or np.linalg.det(R) < 0:
        raise ValueError(f"{what}: the rotation is not a proper rotation matrix")
    return R.copy(), p.copy()


def _check_limits(what, lo, hi):
    """Position limits (nq,) of a joint: lower < upper (equal limits leave the joint no motion and
    give the solver two opposite rows at one point: a Fixed joint locks it), at least one side
    finite where one is given (lower=+inf or upper=-inf bound nothing), finite ones within
    +-MAX_LENGTH (m or rad; 1e308 overflowed later, blamed on q).  Issue 28."""
    if (lo == np.inf).any() or (hi == -np.inf).any():      # lower=upper=inf read as "no limit" (issue 28)
        raise ValueError(f"{what}: a lower limit of +inf or an upper limit of -inf bounds nothing "
                         f"(lower={lo.tolist()}, upper={hi.tolist()}); leave a side out (None) for no limit")
    if (lo > hi).any():
        raise ValueError(f"{what}: lower limit above upper limit (lower={lo.tolist()}, upper={hi.tolist()})")
    if (lo == hi).any():
        raise ValueError(f"{what}: lower limit equal to upper limit (lower={lo.tolist()}, upper={hi.tolist()}): "
                         "the joint could not move; use a Fixed joint to lock it")
    fin = np.concatenate([lo[np.isfinite(lo)], hi[np.isfinite(hi)]])
    if fin.size and np.abs(fin).max() > G.MAX_LENGTH:
        raise ValueError(f"{what}: a limit of {np.abs(fin).max():g} is beyond the physical range "
                         f"(|limit| <= {G.MAX_LENGTH:g} m or rad; leave the side out for no limit)")


def _z_to(n):
    """A rotation whose z axis is the unit vector n (x axis as close to world x as it can be)."""
    x = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = x - (x @ n) * n
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(n, x), n])


def _compose(R1, p1, R2, p2):
    return R1 @ R2, R1 @ p2 + p1


@dataclass
class _BodySpec:
    name: str
    parent: int                 # index into the builder's list; 0 is the world
    joint: J.Joint
    joint_name: str
    R: np.ndarray
    p: np.ndarray
    I6: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray
    armature: np.ndarray
    damping: np.ndarray
    friction: np.ndarray
    stiffness: np.ndarray
    spring_ref: np.ndarray


def _spring_ref(name, joint, ref):
    """A joint's spring reference configuration (nq,): its neutral one by default (zeros, identity
    quaternions); a given quaternion must be finite and nonzero (it is normalized)."""
    nq = joint.nq
    out = np.zeros(nq)
    if joint.kind in J.QUAT_OFFSET:
        out[J.QUAT_OFFSET[joint.kind] + 3] = 1.0
    if ref is None:
        return out
    a = np.array(ref, dtype=float).reshape(-1)
    if a.shape != (nq,):
        raise ValueError(f"add_body({name!r}).spring_ref: expected {nq} values (a configuration of a "
                         f"{joint.kind_name} joint), got {a.size}")
    if not np.isfinite(a).all():
        raise ValueError(f"add_body({name!r}).spring_ref: expected finite values, got {a.tolist()}")
    if joint.kind in J.QUAT_OFFSET:
        o = J.QUAT_OFFSET[joint.kind]
        n = np.linalg.norm(a[o:o + 4])
        if n == 0.0:
            raise ValueError(f"add_body({name!r}).spring_ref: the quaternion [x, y, z, w] is zero")
        a[o:o + 4] /= n
    return a


class ModelBuilder:
    """Collects bodies, joints and frames; ``build()`` returns the frozen :class:`Model`."""

    def __init__(self, name: str = "model", gravity: ArrayLike = (0.0, 0.0, -9.81), world_name: str = "world") -> None:
        self.name = name
        G._strict_reals(gravity, "gravity")
        self.gravity = np.asarray(gravity, dtype=float)
        if self.gravity.shape != (3,) or not np.isfinite(self.gravity).all():
            raise ValueError(f"gravity: expected a finite 3-vector, got {gravity!r}")
        self._bodies = [_BodySpec(world_name, -1, J.Fixed(), "", np.eye(3), np.zeros(3), np.zeros((6, 6)),
                                  *(np.zeros(0) for _ in range(9)))]
        self._index = {world_name: 0}
        self._joint_names = set()
        self._frames = []          # (name, body index, R, p)
        self._loops = []           # dicts: see add_loop
        self._virtual = set()      # builder indices of virtual links
        self.mimic = []            # the mimic tags a file declared: joint, mimicked, multiplier, offset (metadata)
        self._gears = []           # linkdyn.model.gears.Gear: see add_gear
        self._contacts = []        # dicts: see add_contact
        self._planes = []          # dicts: see add_plane
        self._geoms = []           # dicts: see add_geom
        self._exclude = []         # (builder body index, builder body index): see exclude
        self._pairs = []           # (geom index, geom index, friction or None): see add_pair

    @classmethod
    def from_model(cls, model: Model, name: str | None = None, without_loops: Iterable[str] = ()) -> ModelBuilder:
        """A builder holding ``model``'s tree (bodies merged over fixed joints stay merged, their
        names stay frames), frames, limits, joint terms and loop closures: extend it and build
        again.  Structure changes (Nakamura and Yamane 2000 sec. 4: connecting and cutting links) go this way,
        building a new model rather than changing one a running computation uses.  Loops named
        in ``without_loops`` are left out (their virtual links with them)."""
        drop = set(without_loops)
        gears, model = model.gears, model.full_model         # a geared model: its tree, then its gears
        unknown = drop - {lp.name for lp in model.loops}
        if unknown:
            raise KeyError(f"without_loops: model {model.name!r} has no loop {sorted(unknown)}; "
                           f"its loops: {[lp.name for lp in model.loops]}")
        b = cls(name or model.name, gravity=model.gravity, world_name=model.body_names[0])
        loops_by_virtual = {lp.virtual: lp for lp in model.loops if lp.virtual is not None}
        for i in range(1, model.nbody):
            if i in loops_by_virtual:
                continue
            qs, vs = slice(model.jnt_qadr[i], model.jnt_qadr[i] + model.jnt_nq[i]), \
                slice(model.jnt_vadr[i], model.jnt_vadr[i] + model.jnt_nv[i])
            b.add_body(model.body_names[i], model.body_names[model.parent[i]], model.joints[i],
                       placement=(model.R_tree[i], model.p_tree[i]), inertia=np.array(model.inertia[i]),
                       joint_name=model._joint_names[i], lower=model.lower[qs], upper=model.upper[qs],
                       velocity_limit=model.velocity_limit[vs], effort_limit=model.effort_limit[vs],
                       armature=model.armature[vs], damping=model.damping[vs], friction=model.friction[vs],
                       stiffness=model.stiffness[vs], spring_ref=model.spring_ref[qs])
        weld_frames = {lp.name for lp in model.loops if lp.virtual is None}
        bodies = set(model.body_names)
        for k, fname in enumerate(model.frame_names):
            if fname in bodies or fname in weld_frames or fname in b._index:
                continue
            body = int(model.frame_body[k])
            if body in loops_by_virtual:
                continue
            b.add_frame(fname, model.body_names[body], placement=(model.frame_R[k], model.frame_p[k]))
        for lp in model.loops:
            if lp.name in drop:
                continue
            if lp.virtual is not None:
                i = lp.virtual
                b.add_loop(lp.name, model.body_names[model.parent[i]], model.body_names[lp.b], model.joints[i],
                           placement=(model.R_tree[i], model.p_tree[i]), real_placement=lp.b_pose,
                           joint_name=lp.joint_name)
            else:
                b.add_loop(lp.name, model.body_names[lp.a], model.body_names[lp.b], placement=lp.a_pose,
                           real_placement=lp.b_pose, joint_name=lp.joint_name)
        b.mimic = [dict(m) for m in model.mimic]
        b._gears = list(gears)
        for c in model.contacts:
            b.add_contact(model.body_names[c.body], c.position, radius=c.radius, friction=c.friction,
                          restitution=c.restitution, name=c.name)
        for pl in model.planes:
            b.add_plane(pl.name, model.body_names[pl.body], placement=(pl.R, pl.p), extent=pl.extent,
                        friction=pl.friction, restitution=pl.restitution, depth=pl.depth)
        for g in range(model.ngeom):
            code = int(model.geom_type[g])
            n = G.SIZE_ARITY[code][0]
            b.add_geom(model.body_names[model.geom_body[g]], G.SHAPE_NAMES[code],
                       tuple(float(x) for x in model.geom_size[g, :n]), placement=(model.geom_R[g], model.geom_pos[g]),
                       name=model.geom_names[g], friction=float(model.geom_friction[g]),
                       restitution=float(model.geom_restitution[g]), contype=int(model.geom_contype[g]),
                       conaffinity=int(model.geom_conaffinity[g]), condim=int(model.geom_condim[g]),
                       group=int(model.geom_group[g]), priority=int(model.geom_priority[g]),
                       margin=float(model.geom_margin[g]),
                       vertices=(model.geom_verts[model.geom_vert_adr[g]:model.geom_vert_adr[g] + model.geom_vert_num[g]]
                                 if code == G.MESH else None))
        for a, c in model.geom_exclude:
            b.exclude(model.body_names[a], model.body_names[c])
        for (g1, g2), mu in zip(model.geom_explicit, model.geom_explicit_friction):
            b.add_pair(int(g1), int(g2), friction=None if mu < 0 else float(mu))
        return b

    def _body_index(self, ref, what):
        if isinstance(ref, (int, np.integer)):
            if not 0 <= ref < len(self._bodies):
                raise ValueError(f"{what}: no body with index {ref}")
            return int(ref)
        if ref not in self._index:
            raise ValueError(f"{what}: unknown body {ref!r}; known: {sorted(self._index)}")
        return self._index[ref]

    def add_body(self, name: str, parent: str | int = "world", joint: J.Joint | None = None, placement: ArrayLike | tuple[ArrayLike, ArrayLike] | None = None,
                 inertia: Inertia | ArrayLike | None = None, joint_name: str | None = None,
                 lower: ArrayLike | None = None, upper: ArrayLike | None = None, velocity_limit: ArrayLike | None = None, effort_limit: ArrayLike | None = None,
                 armature: ArrayLike | None = None, damping: ArrayLike | None = None, friction: ArrayLike | None = None,
                 stiffness: ArrayLike | None = None, spring_ref: ArrayLike | None = None) -> int:
        """Add body ``name`` under ``parent`` through ``joint`` (default: fixed).

        ``placement`` is the joint frame in the parent body frame (the body frame coincides
        with the joint frame at q = 0).  ``inertia`` is an :class:`Inertia` or a 6x6 spatial
        inertia in the body frame.  Limits are per coordinate (``lower``/``upper``, size nq)
        and per velocity (``velocity_limit``/``effort_limit``/``armature``, size nv).
        ``damping`` (viscous, ``tau += damping * v``) and ``friction`` (Coulomb,
        ``tau += friction * sign(v)``), size nv, enter RNEA and ABA alike (Spong, Hutchinson and Vidyasagar 2006, ch. 7).
        ``stiffness`` (a number or nv values >= 0) and ``spring_ref`` (a configuration of the
        joint, nq values; default its neutral one) make a joint spring, ``tau += stiffness *
        (q - spring_ref)`` for a one-dof joint; a spherical joint's spring acts on the rotation
        vector of spring_ref^-1 q and a free joint's on the world position and that rotation
        vector, as MuJoCo's (see :mod:`linkdyn._kernels.springs`); a spherical (or a free joint's
        rotational) stiffness must be one number.  The spring's energy 1/2 k (q - q_ref)^2 is
        potential energy (:func:`linkdyn.potential_energy`).
        Returns the body's index in the builder.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"add_body: name must be a non-empty string, got {name!r}")
        if name in self._index:
            raise ValueError(f"add_body: a body named {name!r} already exists")
        joint = J.Fixed() if joint is None else joint
        if not isinstance(joint, J.Joint):
            raise TypeError(f"add_body({name!r}): joint must be a linkdyn joint kind, got {type(joint).__name__}")
        joint_name = joint_name or f"{name}_joint"
        if joint_name in self._joint_names:
            raise ValueError(f"add_body({name!r}): a joint named {joint_name!r} already exists")
        pidx = self._body_index(parent, f"add_body({name!r}).parent")
        if pidx in self._virtual:
            raise ValueError(f"add_body({name!r}).parent: {self._bodies[pidx].name!r} is a virtual link (a loop "
                             "closure); virtual links are end links and carry no bodies")
        R, p = as_pose(placement, f"add_body({name!r}).placement")
        if inertia is None:
            I6 = np.zeros((6, 6))
        elif isinstance(inertia, Inertia):
            try:
                I6 = inertia.matrix()
            except (ValueError, TypeError) as exc:
                raise type(exc)(f"add_body({name!r}).inertia: {exc}") from None
        else:
            I6 = np.asarray(inertia, dtype=float)
            if I6.shape != (6, 6) or not np.isfinite(I6).all():
                raise ValueError(f"add_body({name!r}).inertia: expected an Inertia or a finite 6x6 matrix")
            if np.any(I6 != 0.0):
                # the kernels rely on the rigid-body form [[m 1, -m[c]x], [m[c]x, I]]
                # (a 6x6 is taken as given otherwise: URDF files carry slightly indefinite
                # rotational inertias that Pinocchio accepts; Inertia(...) refuses them)
                if I6[0, 0] > 0.0:
                    m, c, Ic = spatial.inertia_parameters(I6)
                    rebuilt = spatial.spatial_inertia(m, c, 0.5 * (Ic + Ic.T))
                else:
                    # no mass: a pure rotational inertia (a rotor); every other block must be zero
                    rebuilt = np.zeros((6, 6))
                    rebuilt[3:, 3:] = 0.5 * (I6[3:, 3:] + I6[3:, 3:].T)
                if not np.allclose(rebuilt, I6, atol=1e-9 * np.abs(I6).max()):
                    raise ValueError(f"add_body({name!r}).inertia: the 6x6 matrix is not a rigid-body spatial inertia "
                                     "[[m 1, -m [c]x], [m [c]x, I_c - m [c]x [c]x]]")
                I6 = rebuilt
        nq, nv = joint.nq, joint.nv

        def vec(x, n, default, what):
            if x is not None:
                G._strict_reals(x, f"add_body({name!r}).{what}")      # no bool or str (issue 28)
            a = np.full(n, default, dtype=float) if x is None else np.asarray(x, dtype=float).reshape(-1)
            if a.shape != (n,):
                raise ValueError(f"add_body({name!r}).{what}: expected {n} values for a {joint.kind_name} joint, got {a.size}")
            if np.isnan(a).any():
                raise ValueError(f"add_body({name!r}).{what}: NaN")
            return a

        if stiffness is not None:
            G._strict_reals(stiffness, f"add_body({name!r}).stiffness")
        lo, hi = vec(lower, nq, -np.inf, "lower"), vec(upper, nq, np.inf, "upper")
        _check_limits(f"add_body({name!r}), joint {joint_name!r}", lo, hi)
        spec = _BodySpec(name, pidx, joint, joint_name, R, p, I6, lo, hi,
                         vec(velocity_limit, nv, np.inf, "velocity_limit"),
                         vec(effort_limit, nv, np.inf, "effort_limit"),
                         vec(armature, nv, 0.0, "armature"),
                         vec(damping, nv, 0.0, "damping"), vec(friction, nv, 0.0, "friction"),
                         vec(np.full(nv, float(stiffness)) if np.ndim(stiffness) == 0 and stiffness is not None
                             else stiffness, nv, 0.0, "stiffness"),
                         _spring_ref(name, joint, spring_ref))
        for what in ("velocity_limit", "effort_limit"):
            x = getattr(spec, {"velocity_limit": "velocity", "effort_limit": "effort"}[what])
            if (x < 0).any():
                raise ValueError(f"add_body({name!r}).{what}: expected values >= 0 (inf: none), got {x.tolist()}")
        for what in ("armature", "damping", "friction", "stiffness"):
            x = getattr(spec, what)
            if not np.isfinite(x).all() or (x < 0).any():
                raise ValueError(f"add_body({name!r}).{what}: expected finite values >= 0, got {x.tolist()}")
        if joint.kind in J.QUAT_OFFSET and len(set(spec.stiffness[-3:].tolist())) > 1:
            raise ValueError(f"add_body({name!r}).stiffness: a {joint.kind_name} joint's rotational stiffness is one "
                             f"number (its spring acts on a rotation vector), got {spec.stiffness[-3:].tolist()}")
        self._bodies.append(spec)
        self._index[name] = len(self._bodies) - 1
        self._joint_names.add(joint_name)
        return len(self._bodies) - 1

    def add_loop(self, name: str, parent: str | int, real: str | int, joint: J.Joint | None = None, placement: ArrayLike | tuple[ArrayLike, ArrayLike] | None = None,
                 real_placement: ArrayLike | tuple[ArrayLike, ArrayLike] | None = None, joint_name: str | None = None) -> None:
        """Close a kinematic loop (Nakamura and Yamane 2000 sec. 3.2): a *virtual link* ``name`` hangs from
        ``parent`` through the cut joint ``joint`` (any kind; default ``Fixed()``, a weld) with
        its joint frame at ``placement`` in ``parent``'s frame, and must coincide with its *real
        link*: the frame at ``real_placement`` on body ``real``.  The virtual link has kinematic
        parameters only (no inertia) and is an end link of the tree, so the tree stays a tree:
        its joint's coordinates are part of q (the cut joint's angle, say), and the loop adds the
        constraint  pose(virtual link) = pose(real_placement on real).

        A weld leaves no virtual body (a weld has no coordinates): the loop then joins the frame
        ``name`` on ``parent`` to the frame on ``real``.  ``model.loops`` lists the closures.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"add_loop: name must be a non-empty string, got {name!r}")
        joint = J.Fixed() if joint is None else joint
        if not isinstance(joint, J.Joint):
            raise TypeError(f"add_loop({name!r}): joint must be a linkdyn joint kind, got {type(joint).__name__}")
        if joint.kind == J.FREE:
            raise ValueError(f"add_loop({name!r}): a free cut joint constrains nothing")
        pidx = self._body_index(parent, f"add_loop({name!r}).parent")
        ridx = self._body_index(real, f"add_loop({name!r}).real")
        if pidx == ridx:
            raise ValueError(f"add_loop({name!r}): parent and real are the same body {self._bodies[pidx].name!r}")
        if ridx in self._virtual or pidx in self._virtual:
            raise ValueError(f"add_loop({name!r}): a loop cannot end on a virtual link")
        R_b, p_b = as_pose(real_placement, f"add_loop({name!r}).real_placement")
        if joint.kind == J.FIXED:
            if name in self._index or any(f[0] == name for f in self._frames):
                raise ValueError(f"add_loop: the name {name!r} is already used")
            R_a, p_a = as_pose(placement, f"add_loop({name!r}).placement")
            self._frames.append((name, pidx, R_a, p_a))
            self._loops.append(dict(name=name, a=pidx, R_a=R_a, p_a=p_a, b=ridx, R_b=R_b, p_b=p_b,
                                    virtual=None, joint=joint, joint_name=joint_name or f"{name}_joint"))
            return
        idx = self.add_body(name, pidx, joint, placement=placement, inertia=None,
                            joint_name=joint_name or f"{name}_joint")
        self._virtual.add(idx)
        self._loops.append(dict(name=name, a=idx, R_a=np.eye(3), p_a=np.zeros(3), b=ridx, R_b=R_b, p_b=p_b,
                                virtual=idx, joint=joint, joint_name=self._bodies[idx].joint_name))

    def reattach(self, body: str | int, parent: str | int = "world", joint: J.Joint | None = None, placement: ArrayLike | tuple[ArrayLike, ArrayLike] | None = None,
                 joint_name: str | None = None) -> None:
        """Hang ``body`` (and its subtree, which keeps its shape) from ``parent`` through ``joint``
        (default a free joint) at ``placement`` instead of its present joint: the cut of
        Nakamura and Yamane (2000) sec. 4.4 / Fig. 12 at a joint that is not a virtual link."""
        k = self._body_index(body, "reattach.body")
        if k == 0:
            raise ValueError("reattach: the world cannot be re-attached")
        if k in self._virtual:
            raise ValueError(f"reattach: {self._bodies[k].name!r} is a virtual link; cut its loop instead")
        pidx = self._body_index(parent, "reattach.parent")
        j = pidx
        while j > 0:
            if j == k:
                raise ValueError(f"reattach: {self._bodies[pidx].name!r} is in the subtree of "
                                 f"{self._bodies[k].name!r}")
            j = self._bodies[j].parent
        joint = J.FreeFlyer() if joint is None else joint
        spec = self._bodies[k]
        name = joint_name or f"{spec.name}_free"
        if name != spec.joint_name and name in self._joint_names:
            raise ValueError(f"reattach: a joint named {name!r} already exists")
        self._joint_names.discard(spec.joint_name)
        self._joint_names.add(name)
        spec.parent, spec.joint, spec.joint_name = pidx, joint, name
        spec.R, spec.p = as_pose(placement, "reattach.placement")
        nq, nv = joint.nq, joint.nv
        spec.lower, spec.upper = np.full(nq, -np.inf), np.full(nq, np.inf)
        spec.velocity, spec.effort = np.full(nv, np.inf), np.full(nv, np.inf)
        spec.armature, spec.damping, spec.friction = np.zeros(nv), np.zeros(nv), np.zeros(nv)
        spec.stiffness, spec.spring_ref = np.zeros(nv), _spring_ref(spec.name, joint, None)

    def add_gear(self, follower: str, leader: str, ratio: float, offset: float = 0.0) -> None:
        """Couple two one-dof joints by a gear: q_follower = ratio * q_leader + offset.

        The built model runs in reduced coordinates (see :mod:`linkdyn.model.gears`): the
        follower loses its own coordinate, and every algorithm answers for the coupled system
        (the ABA by tazz, "Formulation of Featherstone's algorithm", eqs. 30-40).  A leader may itself
        follow another gear (chains of gears); a joint follows one leader.  Joint names as given to
        :meth:`add_body`; the joints must be revolute or prismatic (checked by :meth:`build`)."""
        from .gears import Gear
        for what, n in (("follower", follower), ("leader", leader)):
            if n not in self._joint_names:
                raise KeyError(f"add_gear: unknown {what} joint {n!r}; joints: {sorted(self._joint_names)}")
        r = G._number(ratio, f"add_gear({follower!r}, {leader!r}).ratio")          # no bool, str: issue 28
        o = G._number(offset, f"add_gear({follower!r}, {leader!r}).offset")
        if r == 0.0:
            raise ValueError(f"add_gear({follower!r}, {leader!r}): a ratio of 0 locks the follower; "
                             "use a fixed joint instead")
        if any(g.follower == follower for g in self._gears):
            raise ValueError(f"add_gear: joint {follower!r} already follows a gear")
        self._gears.append(Gear(follower, leader, r, o))

    def add_coupling(self, terms: Mapping[str, float], offset: float = 0.0, dependent: str | None = None) -> None:
        """Couple several one-dof joints linearly: sum_i terms[i] * q_i = offset (e.g. MuJoCo's
        equality on a fixed tendon, dm_control's quadruped: 0.333 (q_pitch + q_knee + q_ankle) = 0).

        The built model runs in reduced coordinates (see :mod:`linkdyn.model.gears`): the joint
        ``dependent`` (default: the last joint of ``terms``) loses its coordinate,

            q_dependent = (offset - sum_{i != dependent} terms[i] q_i) / terms[dependent],

        its row of the coupling matrix G has an entry per other joint, and every algorithm answers
        for the coupled system (M = G^T M_full G, tau = G^T tau_full; ``linkdyn.aba`` solves
        through G^T M G).  Limits of the dependent joint stay its own: they are held as limit rows
        over the joints it depends on (``linkdyn.contact.rows``).  A gear is the two-joint case
        (:meth:`add_gear`).  Other joints of a coupling may themselves depend on other gears or
        couplings; dependencies that are cyclic are solved together, and refused (with a message)
        when they determine no dependent joint.  The same coupling on the uncoupled tree, through
        the constraint layer: :class:`linkdyn.constraints.LinearCoupling`."""
        from .gears import JointCoupling
        if not isinstance(terms, Mapping) or len(terms) < 2:
            raise TypeError(f"add_coupling: terms must be a mapping {{joint name: coefficient}} of at least two "
                            f"joints, got {terms!r}")
        t = []
        for n, k in terms.items():
            if n not in self._joint_names:
                raise KeyError(f"add_coupling: unknown joint {n!r}; joints: {sorted(self._joint_names)}")
            try:
                k = float(k)
            except (TypeError, ValueError):
                raise TypeError(f"add_coupling: the coefficient of {n!r} must be a number, got {k!r}") from None
            if not np.isfinite(k):
                raise ValueError(f"add_coupling: the coefficient of {n!r} must be finite, got {k!r}")
            t.append((n, k))
        o = float(offset)
        if not np.isfinite(o):
            raise ValueError(f"add_coupling: offset must be finite, got {offset!r}")
        dep = t[-1][0] if dependent is None else dependent
        if dep not in terms:
            raise KeyError(f"add_coupling: dependent={dep!r} is not one of the coupled joints {list(terms)}")
        if terms[dep] == 0:
            raise ValueError(f"add_coupling: the dependent joint {dep!r} has coefficient 0; it cannot be solved for")
        if any(g.follower == dep for g in self._gears):
            raise ValueError(f"add_coupling: joint {dep!r} already depends on a gear or coupling; "
                             "choose another dependent joint")
        self._gears.append(JointCoupling(tuple(t), o, dep))

    def add_rotor(self, joint: str, inertia: float, ratio: float = 1.0) -> None:
        """A motor's rotor of moment of inertia ``inertia`` (kg m^2) driving ``joint`` through a gear
        reduction ``ratio`` (rotor turns per joint turn): adds inertia * ratio^2 to the joint's
        armature, the rotor inertia as the joint sees it (Featherstone 2008 sec. 9.6; Pinocchio's
        and MuJoCo's ``armature``)."""
        for k, b in enumerate(self._bodies):
            if b.joint_name == joint and k > 0:
                break
        else:
            raise KeyError(f"add_rotor: unknown joint {joint!r}; joints: {sorted(self._joint_names)}")
        if b.joint.nv != 1:
            raise ValueError(f"add_rotor({joint!r}): the joint has {b.joint.nv} dofs; a rotor drives a one-dof joint")
        x = G._number(inertia, f"add_rotor({joint!r}).inertia", lo=0.0)
        r = G._number(ratio, f"add_rotor({joint!r}).ratio")
        b.armature = b.armature + x * r * r

    def add_frame(self, name: str, body: str | int, placement: ArrayLike | tuple[ArrayLike, ArrayLike] | None = None) -> None:
        """A named frame fixed to ``body`` at ``placement`` (a point of interest, a tool, a sensor)."""
        if name in self._index or any(f[0] == name for f in self._frames):
            raise ValueError(f"add_frame: the name {name!r} is already used")
        b = self._body_index(body, f"add_frame({name!r}).body")
        R, p = as_pose(placement, f"add_frame({name!r}).placement")
        self._frames.append((name, b, R, p))

    def set_limits(self, joint: str, lower: ArrayLike | None = None, upper: ArrayLike | None = None) -> None:
        """Set the position limits of the joint named ``joint`` (per coordinate, size nq; None
        keeps the present value, -inf/inf remove a bound)."""
        spec = next((b for b in self._bodies[1:] if b.joint_name == joint), None)
        if spec is None:
            raise KeyError(f"set_limits: no joint {joint!r}; joints: {sorted(self._joint_names)}")
        nq = spec.joint.nq
        for what, x in (("lower", lower), ("upper", upper)):
            if x is not None:
                G._strict_reals(x, f"set_limits({joint!r}).{what}")
        lo = spec.lower if lower is None else np.broadcast_to(np.asarray(lower, dtype=float), (nq,)).copy()
        hi = spec.upper if upper is None else np.broadcast_to(np.asarray(upper, dtype=float), (nq,)).copy()
        if np.isnan(lo).any() or np.isnan(hi).any():
            raise ValueError(f"set_limits({joint!r}): expected limits without NaN, got {lo} and {hi}")
        _check_limits(f"set_limits({joint!r})", lo, hi)
        spec.lower, spec.upper = lo, hi

    def _contact_name_free(self, name):
        return name not in {c["name"] for c in self._contacts} | {p["name"] for p in self._planes}

    def add_contact(self, body: str | int, position: ArrayLike = (0.0, 0.0, 0.0), radius: float = 0.0, friction: float = 0.8,
                    restitution: float = 0.0, name: str | None = None) -> str:
        """A contact point (``radius`` 0) or sphere on ``body`` at ``position`` (body frame).  It
        touches every plane of the model that is not on the same body (:meth:`add_plane`):
        unilaterally (the plane pushes, never pulls), with Coulomb friction ``friction`` (the
        pair's coefficient is the geometric mean when the plane has one too) and Newton's
        coefficient of ``restitution`` in impacts.  Returns the contact's name."""
        bidx = self._body_index(body, "add_contact.body")
        name = name or f"{self._bodies[bidx].name}_contact{sum(c['body'] == bidx for c in self._contacts)}"
        if not self._contact_name_free(name):
            raise ValueError(f"add_contact: the name {name!r} is already used by a contact or plane")
        pos = G._reals(position, f"add_contact({name!r}).position", max_abs=G.MAX_LENGTH)
        if pos.shape != (3,):
            raise ValueError(f"add_contact({name!r}).position: expected a finite 3-vector, got {position!r}")
        for what, x, hi in (("radius", radius, G.MAX_LENGTH), ("friction", friction, None), ("restitution", restitution, 1.0)):
            G._number(x, f"add_contact({name!r}).{what}", 0.0, hi)
        self._contacts.append(dict(name=name, body=bidx, position=pos.copy(), radius=float(radius),
                                   friction=float(friction), restitution=float(restitution)))
        return name

    def move_contact(self, name: str, position: ArrayLike) -> None:
        """Put the contact point ``name`` (:meth:`add_contact`) at ``position`` on its body (body
        frame); everything else about it is kept."""
        for c in self._contacts:
            if c["name"] == name:
                pos = G._reals(position, f"move_contact({name!r}).position", max_abs=G.MAX_LENGTH)
                if pos.shape != (3,):
                    raise ValueError(f"move_contact({name!r}).position: expected a finite 3-vector, got {position!r}")
                c["position"] = pos.copy()
                return
        raise ValueError(f"move_contact: no contact named {name!r}; the contacts are "
                         f"{[c['name'] for c in self._contacts]}")

    def add_plane(self, name: str, body: str | int = "world", point: ArrayLike = (0.0, 0.0, 0.0),
                  normal: str | ArrayLike = (0.0, 0.0, 1.0), placement: ArrayLike | tuple[ArrayLike, ArrayLike] | None = None,
                  extent: ArrayLike | None = None, friction: float | None = None, restitution: float | None = None,
                  depth: float | None = None) -> None:
        """A plane fixed to ``body`` (default the world: a ground) that the contact points of other
        bodies cannot pass: through ``point`` with outward ``normal`` (body frame), or, with
        ``placement``, the xy-plane of that frame with its z axis outward.  ``extent``: None for
        an unbounded plane, or the half-sizes (hx, hy) of a rectangle in the plane's frame (a
        box's face: a seat, a table top); points outside it do not touch.  ``depth``: None (the
        plane bounds a half-space) or the box's depth behind the face: a point (a sphere's
        centre) farther than that behind the plane is beyond the box and does not touch it (a
        hand under a seat board).  ``friction`` and ``restitution``: the plane's own
        coefficients (None: the contact's alone)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"add_plane: name must be a non-empty string, got {name!r}")
        if not self._contact_name_free(name):
            raise ValueError(f"add_plane: the name {name!r} is already used by a contact or plane")
        bidx = self._body_index(body, f"add_plane({name!r}).body")
        if placement is not None:
            R, p = as_pose(placement, f"add_plane({name!r}).placement")
        else:
            n = J.as_axis(normal, f"add_plane({name!r}).normal")
            p = G._reals(point, f"add_plane({name!r}).point", max_abs=G.MAX_LENGTH)
            if p.shape != (3,):
                raise ValueError(f"add_plane({name!r}).point: expected a finite 3-vector, got {point!r}")
            R = _z_to(n)
        if extent is not None:
            extent = tuple(float(x) for x in G._reals(extent, f"add_plane({name!r}).extent", max_abs=G.MAX_LENGTH).reshape(-1))
            if len(extent) != 2 or not all(x > 0 for x in extent):
                raise ValueError(f"add_plane({name!r}).extent: expected two positive half-sizes (hx, hy), got {extent!r}")
        friction = None if friction is None else G._number(friction, f"add_plane({name!r}).friction", 0.0)
        restitution = None if restitution is None else G._number(restitution, f"add_plane({name!r}).restitution", 0.0, 1.0)
        if depth is not None:
            depth = G._number(depth, f"add_plane({name!r}).depth (m)", 0.0, G.MAX_LENGTH, lo_open=True)
        self._planes.append(dict(name=name, body=bidx, R=R, p=p.copy(), extent=extent,
                                 depth=None if depth is None else float(depth),
                                 friction=None if friction is None else float(friction),
                                 restitution=None if restitution is None else float(restitution)))

    def add_ground(self, height: float = 0.0, friction: float | None = None, name: str = "ground") -> None:
        """The horizontal plane z = ``height`` of the world (normal +z), for contacts to stand on."""
        self.add_plane(name, "world", point=(0.0, 0.0, float(height)), normal=(0.0, 0.0, 1.0), friction=friction)

    def add_geom(self, body: str | int, shape: str, size: ArrayLike | float | None,
                 placement: ArrayLike | tuple[ArrayLike, ArrayLike] | None = None, *, name: str | None = None,
                 friction: float = 1.0, restitution: float = 0.0, contype: int = 1, conaffinity: int = 1,
                 condim: int = 3, group: int = 0, priority: int = 0, margin: float = 0.0,
                 vertices: ArrayLike | None = None) -> str:
        """Collision geometry: a ``shape`` of ``size`` fixed to ``body`` (the world too) at
        ``placement`` in the body frame (a position 3-vector, a 4x4 matrix or an (R, p) pair, as
        :meth:`add_frame`).  Shapes and sizes (:mod:`linkdyn.model.geometry`): ``"sphere"``
        (radius,), ``"capsule"`` (radius, half-length along local z), ``"cylinder"`` (radius,
        half-length along z), ``"box"`` (half-extents x, y, z), ``"ellipsoid"`` (semi-axes), and
        ``"plane"`` (size ``()``): the half-space below the local xy-plane, normal +z, and
        ``"mesh"`` (size ``()``, ``vertices`` an (n, 3) array in the geom frame): the convex hull
        of the vertices (only the hull's vertices are kept; a non-convex mesh collides as its hull,
        as in MuJoCo).

        ``friction`` (Coulomb) and ``restitution`` (Newton, in [0, 1]) are the geom's; a pair of
        geoms takes the larger of each (MuJoCo's rule).  ``contype``/``conaffinity`` are MuJoCo's
        filter bits (two geoms may touch when ``contype_a & conaffinity_b`` or
        ``contype_b & conaffinity_a`` is non-zero), ``condim`` the contact's dimension (1, 3, 4
        or 6; a pair's is the higher priority's, else the larger of the two, and a pair of condim 1
        is frictionless, as in MuJoCo; 4 and 6 get sliding friction only), ``group`` a free label, ``priority`` MuJoCo's: a pair of geoms of different
        priorities takes the higher one's friction instead of the larger.  ``margin`` (m, >= 0) is
        MuJoCo's: a skin around the geom; a pair's contact holds the two surfaces apart at the sum of
        their margins (MuJoCo's ``includemargin``) instead of touching.  Geoms on bodies merged over
        Fixed joints move to the merged body with the composed placement.  Returns the geom's name.

        :func:`linkdyn.contact.collide` finds their contacts; time stepping simulates with them
        (``Simulation(contact_method="auto" | "timestep")``)."""
        bidx = self._body_index(body, "add_geom.body")
        what = f"add_geom({name!r})" if name is not None else f"add_geom(body {self._bodies[bidx].name!r})"
        code, sz, mu, e, ct, ca, cd, gr = G.check_geom(shape, size, friction, restitution, contype, conaffinity,
                                                       condim, group, what)
        if name is None:
            k = sum(g["body"] == bidx for g in self._geoms)
            name = f"{self._bodies[bidx].name}_geom{k}"
            while any(g["name"] == name for g in self._geoms):
                k += 1
                name = f"{self._bodies[bidx].name}_geom{k}"
        elif not isinstance(name, str) or not name:
            raise ValueError(f"add_geom: name must be a non-empty string, got {name!r}")
        if any(g["name"] == name for g in self._geoms):
            raise ValueError(f"add_geom: a geom named {name!r} already exists")
        R, p = as_pose(placement, f"add_geom({name!r}).placement")
        verts = None
        if code == G.MESH:
            if vertices is None:
                raise ValueError(f"{what}: a mesh needs its vertices (an (n, 3) array in the geom frame)")
            verts = G.convex_hull(vertices, f"{what}.vertices")
            sz = np.array([float(np.sqrt((verts ** 2).sum(axis=1)).max()), 0.0, 0.0])
        elif vertices is not None:
            raise ValueError(f"{what}: vertices are for a mesh only, not a {shape!r}")
        skin = G._number(margin, f"{what}.margin (m)", lo=0.0, hi=1e3)
        self._geoms.append(dict(name=name, body=bidx, type=code, size=sz, R=R, p=p, friction=mu, restitution=e,
                                contype=ct, conaffinity=ca, condim=cd, group=gr, verts=verts,
                                priority=G._integer(priority, f"{what}.priority", lo=-2 ** 31), margin=skin))
        return name

    def exclude(self, body_a: str | int, body_b: str | int) -> None:
        """No contact between the geoms of ``body_a`` and those of ``body_b`` (MuJoCo's
        ``<exclude>``).  After Fixed joints are merged it applies to the merged bodies."""
        a = self._body_index(body_a, "exclude.body_a")
        b = self._body_index(body_b, "exclude.body_b")
        if a == b:
            raise ValueError(f"exclude: body_a and body_b are the same body {self._bodies[a].name!r} "
                             "(geoms of one body never touch each other)")
        self._exclude.append((a, b))

    def _geom_index(self, ref, what):
        if isinstance(ref, (int, np.integer)) and not isinstance(ref, (bool, np.bool_)):
            if not 0 <= ref < len(self._geoms):
                raise ValueError(f"{what}: no geom with index {ref} (the builder has {len(self._geoms)})")
            return int(ref)
        for k, g in enumerate(self._geoms):
            if g["name"] == ref:
                return k
        raise ValueError(f"{what}: unknown geom {ref!r}; known: {sorted(g['name'] for g in self._geoms)}")

    def add_pair(self, geom1: str | int, geom2: str | int, friction: float | None = None) -> None:
        """An explicit candidate pair of geoms (MuJoCo's ``<contact><pair>``), by name or index:
        checked for contact whatever the contact filter says (contype/conaffinity, parent and
        child, :meth:`exclude`), as MuJoCo adds its pairs.  ``friction``: the pair's own Coulomb
        coefficient (None: the larger of the two geoms', as for any pair).  Two geoms of one body
        (after Fixed joints are merged) or two planes make no pair: refused at :meth:`build`
        for the first, left out for the second (no collision function, as in MuJoCo).  Adding a
        pair again replaces its friction."""
        g1 = self._geom_index(geom1, "add_pair.geom1")
        g2 = self._geom_index(geom2, "add_pair.geom2")
        if g1 == g2:
            raise ValueError(f"add_pair: geom1 and geom2 are the same geom {self._geoms[g1]['name']!r}")
        if friction is not None:
            friction = G._number(friction, "add_pair.friction", lo=0.0)
        self._pairs.append((g1, g2, friction))

    # ----------------------------------------------------------------------------------
    def _dfs_order(self):
        children = [[] for _ in self._bodies]
        for k, b in enumerate(self._bodies[1:], start=1):
            children[b.parent].append(k)
        order, stack = [], [0]
        while stack:
            k = stack.pop()
            order.append(k)
            stack.extend(reversed(children[k]))
        return order

    def build(self) -> Model:
        """Freeze into a :class:`Model` (the builder can be reused and extended afterwards)."""
        from .model import Model

        host = {0: (0, np.eye(3), np.zeros(3))}      # builder index -> (model body, R, p in that body)
        kept = [self._bodies[0]]                     # specs of the model's bodies
        tree, inertia = [(np.eye(3), np.zeros(3))], [np.zeros((6, 6))]
        frames = [(self._bodies[0].name, 0, np.eye(3), np.zeros(3))]
        joint_frames = {}
        for k in self._dfs_order()[1:]:
            b = self._bodies[k]
            hb, hR, hp = host[b.parent]
            R, p = _compose(hR, hp, b.R, b.p)        # joint frame in the host body's frame
            if b.joint.kind == J.FIXED:
                host[k] = (hb, R, p)
                inertia[hb] = inertia[hb] + spatial.inertia_transform(R, p, b.I6)
            else:
                host[k] = (len(kept), np.eye(3), np.zeros(3))
                kept.append(b)
                tree.append((R, p))
                inertia.append(b.I6.copy())
            frames.append((b.name,) + host[k])
            joint_frames[b.joint_name] = len(frames) - 1
        for name, bidx, R, p in self._frames:
            hb, hR, hp = host[bidx]
            frames.append((name, hb) + _compose(hR, hp, R, p))
        parent_model = [-1] + [host[b.parent][0] for b in kept[1:]]
        loops = []
        for lp in self._loops:
            ha, hRa, hpa = host[lp["a"]]
            hb, hRb, hpb = host[lp["b"]]
            if ha == hb:
                raise ValueError(f"loop {lp['name']!r}: both ends are welded to body "
                                 f"{self._bodies[lp['b']].name!r}, the loop closes nothing")
            loops.append(dict(name=lp["name"], joint_name=lp["joint_name"], kind=lp["joint"].kind,
                              a=ha, a_pose=_compose(hRa, hpa, lp["R_a"], lp["p_a"]),
                              b=hb, b_pose=_compose(hRb, hpb, lp["R_b"], lp["p_b"]),
                              virtual=None if lp["virtual"] is None else host[lp["virtual"]][0],
                              real=hb))
        contacts = []
        for c in self._contacts:
            hb, hR, hp = host[c["body"]]
            contacts.append(dict(name=c["name"], body=hb, position=hR @ c["position"] + hp, radius=c["radius"],
                                 friction=c["friction"], restitution=c["restitution"]))
        planes = []
        for pl in self._planes:
            hb, hR, hp = host[pl["body"]]
            R, p = _compose(hR, hp, pl["R"], pl["p"])
            planes.append(dict(name=pl["name"], body=hb, R=R, p=p, extent=pl["extent"], friction=pl["friction"],
                               restitution=pl["restitution"], depth=pl["depth"]))
        geoms = []
        for g in self._geoms:
            hb, hR, hp = host[g["body"]]
            R, p = _compose(hR, hp, g["R"], g["p"])
            geoms.append(dict(g, body=hb, R=R, p=p))
        exclude = [(host[a][0], host[b][0]) for a, b in self._exclude]
        for g1, g2, _ in self._pairs:
            if geoms[g1]["body"] == geoms[g2]["body"]:
                raise ValueError(f"add_pair({geoms[g1]['name']!r}, {geoms[g2]['name']!r}): both geoms are on body "
                                 f"{kept[geoms[g1]['body']].name!r} after Fixed joints are "
                                 "merged; geoms of one body never touch")
        return Model(self.name, kept, parent_model, tree, inertia, frames, joint_frames,
                     self.gravity.copy(), list(self.mimic), loops, contacts, planes, gears=self._gears,
                     geoms=geoms, exclude=exclude, pairs=list(self._pairs))
