"""The frozen model: flat, read-only arrays named by entity (MuJoCo style).

Body 0 is the world (``parent[0] == -1``); every other body ``i`` hangs from ``parent[i] < i``
on one movable joint, also numbered ``i``.  Shapes, with ``nb = nbody``:

    parent      (nb,)       parent body, -1 for the world
    jnt_type    (nb,)       joint kind code (linkdyn.model.joints)
    jnt_qadr    (nb,)       first coordinate of the joint in q
    jnt_vadr    (nb,)       first velocity of the joint in v
    jnt_nq      (nb,)       number of coordinates
    jnt_nv      (nb,)       number of velocities
    jnt_axis    (nb, 3)     joint axis in the joint frame
    jnt_axis2   (nb, 3)     second axis (universal joints)
    R_tree      (nb, 3, 3)  joint frame in the parent body frame (X_tree of spatial_v2)
    p_tree      (nb, 3)
    inertia     (nb, 6, 6)  spatial inertia in the body frame, [linear; angular]
    jnt_axis_id (nb,)       k if a revolute/prismatic axis is +-e_k, else -1 (fast paths)
    subtree_end (nb,)       the subtree of body i is range(i, subtree_end[i])
    dof_parent  (nv,)       the parent dof of each dof (-1 at the root; Featherstone's lambda)
    armature    (nv,)       rotor inertia on the diagonal of the mass matrix
    damping     (nv,)       viscous friction coefficients: tau += damping * v
    friction    (nv,)       Coulomb friction levels: tau += friction * sign(v)
    stiffness   (nv,)       joint springs: tau += stiffness * (q - spring_ref) (linkdyn._kernels.springs)
    spring_ref  (nq,)       the springs' reference configuration (jnt_spring_ref (nb, 7): per joint)
    gravity     (3,)        gravity in the world frame
    frame_body  (nf,)       body that carries each frame
    frame_R     (nf, 3, 3)  frame pose in that body
    frame_p     (nf, 3)
    lower, upper (nq,)      position limits; velocity_limit, effort_limit (nv,)

Loop closures (Nakamura and Yamane 2000 sec. 3.2): ``loops`` (tuple of :class:`Loop`), ``is_virtual`` (nb,)
marks virtual links (zero-inertia end links carrying a cut joint) and ``real`` (nb,) points
from a virtual link to its real link (-1 elsewhere).

Collision geometry (:mod:`linkdyn.model.geometry`): ``ngeom`` geoms, ``geom_type`` (ngeom,),
``geom_body``, ``geom_size`` (ngeom, 3), ``geom_pos``, ``geom_R`` (ngeom, 3, 3), ``geom_friction``,
``geom_restitution``, ``geom_contype``, ``geom_conaffinity``, ``geom_condim``, ``geom_names``, the
convex meshes' hull vertices ``geom_verts`` (nvert, 3) with ``geom_vert_adr``, ``geom_vert_num`` (ngeom,), and
the candidate pairs ``geom_pairs`` (npair, 2) that pass the contact filter or were given
explicitly (``geom_explicit``, their friction ``geom_explicit_friction``; per candidate pair
``geom_pair_friction``, -1 where the geoms' larger coefficient applies).

Derived topology: ``children`` (list of arrays), ``subtree_end`` (above), and the pointer
description of Nakamura and Yamane 2000 sec. 3.1:
``first_child`` and ``brother`` (-1 where there is none).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from .._kernels import layout
from . import geometry as _geometry
from . import joints as J

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray


class Loop:
    """One loop closure: the frame ``a_pose`` on body ``a`` (the virtual link's frame, or a frame
    on the parent for a weld) must coincide with the frame ``b_pose`` on body ``b`` (on the real
    link ``real``).  ``kind`` is the cut joint's kind, ``virtual`` the virtual link's body index
    (None for a weld) and ``cut_v`` the slice of v that the cut joint's velocities occupy."""
    __slots__ = ("index", "name", "joint_name", "kind", "a", "a_pose", "b", "b_pose", "virtual", "real", "cut_v")

    def __init__(self, index: int, name: str, joint_name: str, kind: int, a: int, a_pose: tuple[NDArray[np.float64], NDArray[np.float64]], b: int,
                 b_pose: tuple[NDArray[np.float64], NDArray[np.float64]], virtual: int | None, real: int, cut_v: slice) -> None:
        self.index, self.name, self.joint_name, self.kind = index, name, joint_name, kind
        self.a, self.a_pose, self.b, self.b_pose = a, a_pose, b, b_pose
        self.virtual, self.real, self.cut_v = virtual, real, cut_v

    @property
    def nv(self) -> int:
        """Number of velocities of the cut joint (0 for a weld)."""
        return self.cut_v.stop - self.cut_v.start

    def __repr__(self):
        return (f"Loop({self.name!r}: {J.KIND_NAMES[self.kind]} cut joint, body {self.a} -> real body {self.b})")


class ContactPoint:
    """A contact point or sphere: ``body`` (model index), ``position`` (3,) of its centre in
    the body frame, ``radius``, ``friction``, ``restitution`` (ModelBuilder.add_contact)."""
    __slots__ = ("name", "body", "position", "radius", "friction", "restitution")

    def __init__(self, name: str, body: int, position: ArrayLike, radius: float, friction: float,
                 restitution: float) -> None:
        self.name, self.body, self.radius = name, int(body), float(radius)
        self.position = _readonly(np.array(position, dtype=float))
        self.friction, self.restitution = float(friction), float(restitution)

    def __repr__(self):
        return (f"ContactPoint({self.name!r}, body {self.body}, at {self.position.tolist()}, radius {self.radius:g}, "
                f"friction {self.friction:g}, restitution {self.restitution:g})")


class ContactPlane:
    """A plane on ``body``: the xy-plane of the frame (R, p) in the body frame, its z axis the
    outward normal; ``extent`` None (unbounded) or half-sizes (hx, hy); ``depth`` None (a
    half-space) or how far behind the plane a point still touches it (ModelBuilder.add_plane)."""
    __slots__ = ("name", "body", "R", "p", "extent", "friction", "restitution", "depth")

    def __init__(self, name: str, body: int, R: ArrayLike, p: ArrayLike, extent: tuple[float, float] | None,
                 friction: float | None, restitution: float | None, depth: float | None = None) -> None:
        self.name, self.body, self.extent, self.depth = name, int(body), extent, depth
        self.R, self.p = _readonly(np.array(R, dtype=float)), _readonly(np.array(p, dtype=float))
        self.friction, self.restitution = friction, restitution

    def __repr__(self):
        ext = "unbounded" if self.extent is None else f"extent {self.extent}"
        return f"ContactPlane({self.name!r}, body {self.body}, normal {(self.R[:, 2]).round(6).tolist()}, {ext})"


def _axis_id(joint) -> int:
    """k if a revolute or prismatic joint's axis is +-e_k exactly, else -1 (layout.JAXIS)."""
    if joint.kind not in (J.REVOLUTE, J.PRISMATIC):
        return -1
    nz = np.flatnonzero(joint.axis)
    return int(nz[0]) if len(nz) == 1 and abs(joint.axis[nz[0]]) == 1.0 else -1


def _readonly(a):
    a.flags.writeable = False
    return a


class Model:
    """Immutable description of a kinematic tree.  Build one with :class:`ModelBuilder`,
    :func:`linkdyn.load_urdf` or :mod:`linkdyn.models`."""

    #: the Denavit-Hartenberg table of a model built by :func:`linkdyn.models.from_dh` (a tuple of
    #: ``DHLink``) and its convention ("standard" or "modified"); None for any other model
    dh_links = None
    dh_convention = None
    #: gear couplings (:class:`linkdyn.model.gears.Gear`) and linear couplings of several joints
    #: (:class:`linkdyn.model.gears.JointCoupling`) that put the model in reduced coordinates
    gears: tuple = ()
    _full = None        # the uncoupled tree of a geared model (see full_model)
    _collider = None    # linkdyn.contact.collision's workspaces, made on first use (not pickled)
    _geom_rows = None   # linkdyn.contact.geom_rows' workspaces, made on first use (not pickled)

    def __init__(self, name: str, bodies: Sequence[Any], parent: ArrayLike, tree: Sequence[tuple[ArrayLike, ArrayLike]], inertia: ArrayLike,
                 frames: Sequence[tuple[str, int, ArrayLike, ArrayLike]], joint_frames: Mapping[str, int], gravity: ArrayLike,
                 mimic: Iterable[dict[str, Any]], loops: Iterable[dict[str, Any]] = (),
                 contacts: Iterable[dict[str, Any]] = (), planes: Iterable[dict[str, Any]] = (),
                 gears: Iterable[Any] = (), geoms: Iterable[dict[str, Any]] = (),
                 exclude: Iterable[tuple[int, int]] = (),
                 pairs: Iterable[tuple[int, int, float | None]] = ()) -> None:
        nb = len(bodies)
        nqs = [b.joint.nq for b in bodies]
        nvs = [b.joint.nv for b in bodies]
        self.name = name
        self.nbody = nb
        self.nq = int(sum(nqs))
        self.nv = int(sum(nvs))
        nv = self.nv

        mi = np.zeros((layout.N_INT_ROWS, nb), dtype=np.int64)
        mi[layout.PARENT] = parent
        mi[layout.JTYPE] = [b.joint.kind for b in bodies]
        mi[layout.JNQ] = nqs
        mi[layout.JNV] = nvs
        mi[layout.QADR] = np.concatenate([[0], np.cumsum(nqs)[:-1]])
        mi[layout.VADR] = np.concatenate([[0], np.cumsum(nvs)[:-1]])
        mi[layout.JAXIS] = [_axis_id(b.joint) for b in bodies]
        end = np.arange(1, nb + 1)
        for i in range(nb - 1, 0, -1):
            end[parent[i]] = max(end[parent[i]], end[i])
        mi[layout.SUBTREE_END] = end
        mf = np.zeros(layout.float_size(nb, nv))
        f = layout.views(mf, layout.FLOAT_FIELDS, nb, nv)
        f["jnt_axis"][:] = [b.joint.axis for b in bodies]
        f["jnt_axis2"][:] = [b.joint.axis2 for b in bodies]
        f["R_tree"][:] = [t[0] for t in tree]
        f["p_tree"][:] = [t[1] for t in tree]
        f["inertia"][:] = inertia
        f["armature"][:] = np.concatenate([b.armature for b in bodies]) if nv else []
        f["gravity"][:] = gravity
        f["damping"][:] = np.concatenate([b.damping for b in bodies]) if nv else []
        f["friction"][:] = np.concatenate([b.friction for b in bodies]) if nv else []
        f["stiffness"][:] = np.concatenate([b.stiffness for b in bodies]) if nv else []
        for i, b in enumerate(bodies):
            f["jnt_spring_ref"][i, :len(b.spring_ref)] = b.spring_ref
        # one buffer: the model (read-only views) and the workspace of single-state calls
        self._packed, mi, mf, self._ws = layout.pack(mi, mf, layout.data_size(nb, nv))
        self._mi, self._mf = _readonly(mi), _readonly(mf)
        self._springs = bool(np.any(f["stiffness"]))   # which single-state RNEA kernel (dynamics.rnea)
        # the smallest one, for no springs and joints of the kinds its pass has without jcalc's others
        self._plain_rnea = not self._springs and all(
            b.joint.kind in (J.FIXED, J.REVOLUTE, J.PRISMATIC, J.FREE, J.SPHERICAL) for b in bodies)
        self._zero_v = _readonly(np.zeros(nv))      # v = 0 / a = 0 of the fast paths (nonlinear_effects)
        # output shapes of the fast paths, built once (a tuple built per call costs ~0.05 us)
        self._shape_6v, self._shape_vv = (6, nv), (nv, nv)
        for k, name_ in enumerate(layout.INT_FIELDS):
            setattr(self, name_, self._mi[k])
        for name_, view in layout.views(self._mf, layout.FLOAT_FIELDS, nb, nv).items():
            setattr(self, name_, view)

        self.spring_ref = _readonly(np.concatenate([b.spring_ref for b in bodies]))
        self.lower = _readonly(np.concatenate([b.lower for b in bodies]))
        self.upper = _readonly(np.concatenate([b.upper for b in bodies]))
        self.velocity_limit = _readonly(np.concatenate([b.velocity for b in bodies]))
        self.effort_limit = _readonly(np.concatenate([b.effort for b in bodies]))
        self.body_names = tuple(b.name for b in bodies)
        self._joint_names = tuple(b.joint_name for b in bodies)   # index 0: the world, ""
        self.joints = tuple(b.joint for b in bodies)
        self.mimic = tuple(mimic)

        self.frame_names = tuple(fr[0] for fr in frames)
        self.frame_body = _readonly(np.array([fr[1] for fr in frames], dtype=np.int64))
        self.frame_R = _readonly(np.array([fr[2] for fr in frames]).reshape(-1, 3, 3))
        self.frame_p = _readonly(np.array([fr[3] for fr in frames]).reshape(-1, 3))
        self._frame_index = {n: k for k, n in enumerate(self.frame_names)}
        self._frame_args = {}       # kinematics._frame's cache: name or index -> (body, R, p)
        self._frame_ref_args = {}   # kinematics._frame_ref's cache: (frame, reference) -> packed array
        self._joint_frame_index = dict(joint_frames)
        self._joint_index = {n: i for i, n in enumerate(self._joint_names) if i > 0}

        # derived topology
        self.children = tuple(np.flatnonzero(self.parent == i) for i in range(nb))
        self.first_child = _readonly(np.array([c[0] if len(c) else -1 for c in self.children], dtype=np.int64))
        brother = np.full(nb, -1, dtype=np.int64)
        for c in self.children:
            brother[c[:-1]] = c[1:]
        self.brother = _readonly(brother)
        dof_body = np.repeat(np.arange(nb), nvs)
        self.dof_body = _readonly(dof_body)
        # the parent dof of every dof (Featherstone's lambda for the sparse factorization of M):
        # the previous dof of the joint, or the last dof of the nearest ancestor with dofs
        lam = np.full(nv, -1, dtype=np.int64)
        for i in range(1, nb):
            va, n = int(self.jnt_vadr[i]), int(self.jnt_nv[i])
            if n == 0:
                continue
            p = int(self.parent[i])
            while p > 0 and self.jnt_nv[p] == 0:
                p = int(self.parent[p])
            lam[va] = self.jnt_vadr[p] + self.jnt_nv[p] - 1 if p > 0 else -1
            lam[va + 1:va + n] = np.arange(va, va + n - 1)
        self.dof_parent = _readonly(lam)
        self._quat_starts = _readonly(np.array(
            [self.jnt_qadr[i] + J.QUAT_OFFSET[k] for i, k in enumerate(self.jnt_type) if k in J.QUAT_OFFSET],
            dtype=np.int64))

        # loop closures (Nakamura and Yamane 2000 sec. 3.2): virtual links and their real links
        self.loops = tuple(Loop(k, **lp, cut_v=(slice(int(self.jnt_vadr[lp["virtual"]]),
                                                       int(self.jnt_vadr[lp["virtual"]] + self.jnt_nv[lp["virtual"]]))
                                                 if lp["virtual"] is not None else slice(0, 0)))
                           for k, lp in enumerate(loops))
        self.real = np.full(nb, -1, dtype=np.int64)
        for lp in self.loops:
            if lp.virtual is not None:
                self.real[lp.virtual] = lp.real
        self.real = _readonly(self.real)
        self.is_virtual = _readonly(self.real >= 0)
        # unilateral contact geometry (linkdyn.contact): points/spheres on bodies, planes
        self.contacts = tuple(ContactPoint(**c) for c in contacts)
        self.planes = tuple(ContactPlane(**p) for p in planes)
        # collision geometry (linkdyn.model.geometry): geom_* arrays and the candidate pairs
        for k, x in _geometry.freeze(list(geoms), list(exclude), self.parent, list(pairs)).items():
            setattr(self, k, x)
        li = np.zeros((len(self.loops), 4), dtype=np.int64)
        lf = np.zeros((len(self.loops), 24))
        for k, lp in enumerate(self.loops):
            li[k] = lp.a, lp.b, lp.cut_v.start, lp.cut_v.stop - lp.cut_v.start
            lf[k, :9], lf[k, 9:12] = lp.a_pose[0].ravel(), lp.a_pose[1]
            lf[k, 12:21], lf[k, 21:24] = lp.b_pose[0].ravel(), lp.b_pose[1]
        self._loop_i, self._loop_f = _readonly(li), _readonly(lf)
        if self.loops:      # the workspace of the closed-chain solver (linkdyn.loops)
            self._loop_lw = np.zeros(layout.loop_ws_size(nv, len(self.loops)))
            self._loop_force = np.zeros((len(self.loops), 6))        # scratch when forces are not asked for
            self._loop_args = (self._mi, self._mf, self._ws, self._loop_i, self._loop_f, self.dof_parent,
                               self._loop_lw)
            # the same in one buffer (the fast path's)
            self._loop_packed = layout.pack_loops(self._loop_i, self._loop_f, self.dof_parent, self._loop_lw.size)
        gears = tuple(gears)
        if gears:
            # loops and gears together: the loops are closed on the full tree (its own loop buffers,
            # above) and solved in reduced coordinates by linkdyn.loops (J_C G); a cut joint is a
            # joint of the virtually cut tree and cannot also be geared
            cuts = {lp.joint_name for lp in self.loops if lp.virtual is not None}
            from . import gears as _gears
            for g in gears:
                for n in _gears.coupled_joints(g):
                    if n in cuts:
                        raise ValueError(f"model {name!r}: {_gears._describe(g)} couples the cut joint "
                                         f"{n!r} of a loop closure; gear the joints of the real chain instead")
            _gears.reduce(self, gears)

    # --- pickling (multiprocessing, Dask workers) -----------------------------------------
    def __getstate__(self):
        """The model without its packed buffer and the views into it (re-packed on unpickling,
        with a fresh workspace: an unpickled model shares no scratch memory with the original),
        the joints as (class, slot values) (their ``__setattr__`` refuses the default), and the
        names of the read-only arrays (pickle drops the flag; Numba types read-only apart)."""
        views = {"_packed", "_ws", "_loop_args", "_loop_packed", "_frame_ref_args", "_prepared", "_collider", "_geom_rows",
                 *layout.INT_FIELDS, *(f[0] for f in layout.FLOAT_FIELDS)}
        state = {k: x for k, x in self.__dict__.items() if k not in views}
        state["joints"] = tuple((type(j), {s: getattr(j, s) for c in type(j).__mro__
                                           for s in getattr(c, "__slots__", ())}) for j in self.joints)
        state["_readonly"] = [k for k, x in state.items() if isinstance(x, np.ndarray) and not x.flags.writeable]
        return state

    def __setstate__(self, state):
        state = dict(state)
        joints = []
        for cls, slots in state.pop("joints"):
            j = object.__new__(cls)
            for s, x in slots.items():
                object.__setattr__(j, s, _readonly(x) if isinstance(x, np.ndarray) else x)
            joints.append(j)
        state["joints"] = tuple(joints)
        for k in state.pop("_readonly"):
            state[k] = _readonly(state[k])
        self.__dict__.update(state)
        self._frame_ref_args = {}
        if self._full is not None:              # a geared model: its buffers and views come from apply()
            from . import gears as _gears
            _gears.apply(self)
            return
        self._packed, mi, mf, self._ws = layout.pack(state["_mi"], state["_mf"], layout.data_size(self.nbody, self.nv))
        self._mi, self._mf = _readonly(mi), _readonly(mf)
        for k, name_ in enumerate(layout.INT_FIELDS):
            setattr(self, name_, self._mi[k])
        for name_, view in layout.views(self._mf, layout.FLOAT_FIELDS, self.nbody, self.nv).items():
            setattr(self, name_, view)
        if self.loops:
            self._loop_args = (self._mi, self._mf, self._ws, self._loop_i, self._loop_f, self.dof_parent,
                               self._loop_lw)
            # the same in one buffer (the fast path's)
            self._loop_packed = layout.pack_loops(self._loop_i, self._loop_f, self.dof_parent, self._loop_lw.size)

    def _with_armature(self, armature: NDArray[np.float64]) -> Model:
        """This model with another armature (its ``armature``'s length: a geared model's is its
        full tree's), everything else the same (its own packed buffer and workspace): the time
        step's mass matrix M + h D of implicit joint damping (``linkdyn.sim.timestepping``)."""
        state = self.__getstate__()
        if self._full is not None:
            state["_full"] = self._full._with_armature(armature)
            out = object.__new__(type(self))
            out.__setstate__(state)
            return out
        mf = np.array(state["_mf"], dtype=float, copy=True)
        layout.views(mf, layout.FLOAT_FIELDS, self.nbody, self.nv)["armature"][:] = armature
        state["_mf"] = mf
        out = object.__new__(type(self))
        out.__setstate__(state)
        return out

    # --- gear couplings (linkdyn.model.gears) ---------------------------------------------
    @property
    def full_model(self) -> Model:
        """The uncoupled tree of a geared model (every joint its own coordinate); the model
        itself when it has no gears."""
        return self if self._full is None else self._full

    def coupling_matrix(self) -> NDArray[np.float64]:
        """G (nv_full, nv): v_full = G v, with nv_full = ``full_model.nv``; the identity for a model
        without gears.  Reduced dynamics: M = G^T M_full G, tau = G^T tau_full, J = J_full G."""
        return np.eye(self.nv) if self._full is None else np.array(self._coupling.G)

    def expand(self, q: ArrayLike, v: ArrayLike | None = None, a: ArrayLike | None = None
               ) -> NDArray[np.float64] | tuple[NDArray[np.float64], ...]:
        """The full joint coordinates (those of ``full_model``) of reduced q, or of (q, v) or
        (q, v, a): q_follower = ratio q_leader + offset, v_full = G v, a_full = G a.  Stacks
        (N, nq) are expanded row by row."""
        from .._api import as_states
        kw = {"q": q} | ({} if v is None else {"v": v}) | ({} if a is None else {"a": a})
        s = as_states(self, **kw)
        if self._full is None:
            out = tuple(np.array(getattr(s, k)) for k in kw)
        else:
            c = self._coupling
            out = (c.q(s.q),) + tuple(c.v(getattr(s, k)) for k in list(kw)[1:])
        if s.batch is not None:
            out = tuple(np.broadcast_to(x, (s.batch, x.shape[-1])).copy() if x.shape[0] == 1 else x for x in out)
        return out[0] if len(out) == 1 else out

    def reduce(self, q: ArrayLike, v: ArrayLike | None = None
               ) -> NDArray[np.float64] | tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The reduced coordinates of full ones (the inverse of :meth:`expand` on configurations that
        satisfy the couplings): the coordinates of the joints that follow no gear."""
        if self._full is None:
            return np.array(q, dtype=float) if v is None else (np.array(q, dtype=float), np.array(v, dtype=float))
        c = self._coupling
        qf = np.asarray(q, dtype=float)
        if qf.shape[-1] != self._full.nq:
            raise ValueError(f"q: expected the full model's {self._full.nq} coordinates, got shape {qf.shape}")
        if v is None:
            return qf[..., c.keep_q].copy()
        vf = np.asarray(v, dtype=float)
        if vf.shape[-1] != self._full.nv:
            raise ValueError(f"v: expected the full model's {self._full.nv} velocities, got shape {vf.shape}")
        return qf[..., c.keep_q].copy(), vf[..., c.keep_v].copy()

    # --- names --------------------------------------------------------------------------
    @property
    def joint_names(self) -> tuple:
        """Names of the movable joints, in model (depth-first) order."""
        return self._joint_names[1:]

    @property
    def nframes(self) -> int:
        return len(self.frame_names)

    def joint_id(self, name: str) -> int:
        """Body / joint index of the movable joint ``name``."""
        try:
            return self._joint_index[name]
        except (KeyError, TypeError):
            raise KeyError(f"unknown joint {name!r}; movable joints: {list(self.joint_names)}") from None

    def body_id(self, name: str) -> int:
        """Index of the body that carries the frame (link) ``name``."""
        return int(self.frame_body[self.frame_id(name)])

    def frame_id(self, name: str | int) -> int:
        """Index of frame ``name`` (a link, a user frame, or a joint's child frame)."""
        if isinstance(name, (bool, np.bool_)):
            raise TypeError(f"frame: expected a frame name or index, got {name!r}")
        if isinstance(name, (int, np.integer)):
            if 0 <= name < self.nframes:
                return int(name)
            raise KeyError(f"frame index {name} out of range [0, {self.nframes})")
        if name in self._frame_index:
            return self._frame_index[name]
        if name in self._joint_frame_index:
            return self._joint_frame_index[name]
        raise KeyError(f"unknown frame {name!r}; frames: {list(self.frame_names)}")

    def q_index(self, name: str) -> int:
        """First index in q of joint ``name`` (see :meth:`q_slice` for multi-coordinate joints)."""
        return int(self.jnt_qadr[self.joint_id(name)])

    def v_index(self, name: str) -> int:
        """First index in v of joint ``name``."""
        return int(self.jnt_vadr[self.joint_id(name)])

    def q_slice(self, name: str) -> slice:
        """The coordinates of joint ``name`` in q (a gear follower's: its leader's one)."""
        i = self.joint_id(name)
        n = self.jnt_nq[i] if self._full is None or i not in self._coupling.leader else 1
        return slice(int(self.jnt_qadr[i]), int(self.jnt_qadr[i] + n))

    def v_slice(self, name: str) -> slice:
        """The velocities of joint ``name`` in v (a gear follower's: its leader's one)."""
        i = self.joint_id(name)
        n = self.jnt_nv[i] if self._full is None or i not in self._coupling.leader else 1
        return slice(int(self.jnt_vadr[i]), int(self.jnt_vadr[i] + n))

    def support(self, body: int) -> list:
        """Bodies from ``body`` up to (not including) the world."""
        out = []
        while body > 0:
            out.append(int(body))
            body = self.parent[body]
        return out

    def inertial_parameters(self, with_joint_terms: bool = False) -> NDArray[np.float64]:
        """The 10 standard inertial parameters of every moving body (Pinocchio's order:
        m, m c, then the rotational inertia about the body origin xx, xy, yy, xz, yz, zz), and
        with ``with_joint_terms`` the armature, damping and friction of every dof: the vector
        ``p`` with ``rnea(q, v, a) = joint_torque_regressor(q, v, a) @ p`` (Spong, Hutchinson and Vidyasagar 2006 property 7)."""
        from .parameters import inertial_parameters
        return inertial_parameters(self, with_joint_terms)

    @property
    def total_mass(self) -> float:
        """Mass of every link, including links welded to the world (the sum of Pinocchio's
        ``model.inertias``); the centre of mass and the potential energy count the moving
        bodies only."""
        return float(self.inertia[:, 0, 0].sum())

    @property
    def nloops(self) -> int:
        return len(self.loops)

    def dh_table(self, degrees: bool = True) -> str:
        """The Denavit-Hartenberg table this model was built from (:func:`linkdyn.models.from_dh`,
        the DH arms of :mod:`linkdyn.models`), as text: ``print(model.dh_table())``."""
        if self.dh_links is None:
            raise ValueError(f"model {self.name!r} was not built from a Denavit-Hartenberg table "
                             "(linkdyn.models.from_dh): it has none to print")
        from .dh import dh_table
        return dh_table(self.dh_links, self.dh_convention, degrees)

    def __repr__(self):
        kinds = {}
        for j in self.joints[1:]:
            kinds[j.kind_name] = kinds.get(j.kind_name, 0) + 1
        ks = ", ".join(f"{v} {k}" for k, v in kinds.items())
        return (f"<linkdyn.Model {self.name!r}: {self.nbody - 1} bodies ({ks}), nq={self.nq}, nv={self.nv}, "
                f"{self.nframes} frames, mass {self.total_mass:.3f}"
                + (f", {self.nloops} loop{'s' if self.nloops > 1 else ''}" if self.nloops else "")
                + "".join(f", {n} {w}{'s' if n > 1 else ''}" for n, w in self._coupling_counts() if n) + ">")

    def _coupling_counts(self):
        from .gears import JointCoupling
        nc = sum(isinstance(g, JointCoupling) for g in self.gears)
        return (len(self.gears) - nc, "gear"), (nc, "coupling")
