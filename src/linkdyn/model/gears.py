"""Gear couplings between joints, linear couplings of several joints, and the model in reduced
coordinates they make.

A gear (a URDF ``<mimic>``, an MJCF joint or two-joint fixed-tendon equality, or
:meth:`ModelBuilder.add_gear`) ties a one-dof joint, the *follower*, to another, the *leader*:

    q_f = gamma q_l + offset,   so   q'_f = gamma q'_l,   q''_f = gamma q''_l.

A linear coupling (:class:`JointCoupling`, :meth:`ModelBuilder.add_coupling`, an MJCF fixed-tendon
equality of more joints) ties several: sum_i c_i q_i = offset, its *dependent* joint d following
all the others, q_d = (offset - sum_{i != d} c_i q_i) / c_d; a gear is the two-joint case, and
the dependent's row of G below has an entry per joint it depends on.  Its limits cannot narrow a
box of one reduced coordinate: they stay rows over the joints it depends on
(:meth:`Coupling.row`, held by :mod:`linkdyn.contact.rows`).

A geared model runs in reduced coordinates, as Pinocchio's ``mimic=True`` models do: ``model.nq``
and ``model.nv`` count the independent coordinates, a follower has no coordinate of its own
(``jnt_nq = jnt_nv = 0``) and ``model.q_index(follower)`` is its leader's.  The full joint
coordinates of the uncoupled tree (``model.full_model``) are

    q_full = expand(q),   v_full = G v,   a_full = G a,

with G = ``model.coupling_matrix()`` (nv_full x nv: one non-zero per row, the ratio of a gear's
follower and 1 for the other coordinates; a linear coupling's dependent has several).  As q_full is affine in q, the reduced dynamics is the
full one projected (the principle of virtual work):

    M_r = G^T M(q_full) G,   tau_r = G^T RNEA(q_full, G v, G a),   J_r = J(q_full) G,

and the velocity-product terms need no correction (G is constant).  ``linkdyn.aba`` on a geared
model is the articulated-body algorithm with couplings folded in (tazz, "Formulation of
Featherstone's algorithm", secs. 2.6-2.7, eqs. 30-40), for couplings that are *serial* (a
follower's parent is its leader, or another follower of the same leader, eqs. 30-35) or
*parallel* (leader and follower are siblings, eqs. 36-40), the two cases that recursion can fold
in (a leader hanging from its follower is serial too).  Any other coupling (e.g. leader and follower on different branches) is solved through the
reduced inertia G^T M G instead (the same answer as a KKT solve with the coupling as a
constraint, O(n^3)); the model says so with a :class:`GearWarning` when it is built.  A model with
a joint that depends on several is always solved so, without a warning (the recursion's group of
one reduced dof does not describe it; the answer is the same).
"""
from __future__ import annotations

import copy
import functools
import inspect
import warnings
from typing import NamedTuple

import numpy as np

from .._api import as_states
from .._kernels import layout
from . import joints as J


class GearWarning(UserWarning):
    """A gear coupling that the articulated-body recursion cannot fold in (see linkdyn.model.gears)."""


class Gear(NamedTuple):
    """q_follower = ratio * q_leader + offset (joint names)."""
    follower: str
    leader: str
    ratio: float
    offset: float = 0.0


_ONE_DOF = (J.REVOLUTE, J.PRISMATIC)


def _readonly(a):
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


class JointCoupling(NamedTuple):
    """A linear coupling of several one-dof joints, sum_i coef_i q_i = offset, in which the joint
    ``dependent`` loses its coordinate (:meth:`ModelBuilder.add_coupling`):

        q_dependent = (offset - sum_{i != dependent} coef_i q_i) / coef_dependent.

    ``terms``: ((joint name, coefficient), ...); a :class:`Gear` is the two-joint case."""
    terms: tuple
    offset: float = 0.0
    dependent: str = ""

    @property
    def follower(self) -> str:
        """The joint that loses its coordinate (named as a gear's)."""
        return self.dependent

    @property
    def joints(self) -> tuple:
        return tuple(n for n, _ in self.terms)


def coupled_joints(g):
    """The joint names a gear or a :class:`JointCoupling` ties."""
    return g.joints if isinstance(g, JointCoupling) else (g.follower, g.leader)


def _describe(g):
    if isinstance(g, JointCoupling):
        return "coupling " + " + ".join(f"{c:g} {n}" for n, c in g.terms) + f" = {g.offset:g}"
    return f"gear {g.follower!r} -> {g.leader!r}"


class Coupling:
    """The resolved couplings of a model: the maps from reduced to full coordinates, and the
    groups of bodies one reduced dof drives (for the geared articulated-body kernel).

    Every coupling is a linear equation over one-dof joints, sum_i c_i q_i = b, with one
    dependent joint (a gear's follower); the dependents are solved for in terms of the joints
    that depend on nothing, q_D = A_D^-1 (b - A_I q_I), by substitution along the chain when the
    dependencies are acyclic (chains of gears: exact products of ratios) and by one linear solve
    when they are cyclic (refused when A_D is singular: then no set of those dependents can be
    eliminated).  A full coordinate k is then

        q_full[k] = qoff[k] + sum_t qscale[k, t] q[qsrc[k, t]]    (t < K, the most terms of a row)

    and v_full[k] = sum_t vscale[k, t] v[vsrc[k, t]] (unused terms: scale 0)."""

    def __init__(self, full, gears):
        names = {n: i for i, n in enumerate(full._joint_names) if i > 0}
        drive = {}                                   # follower body -> (leader body, ratio, offset): gears
        rows = {}                                    # dependent body -> ({body: coef}, constant)
        for g in gears:
            what = _describe(g)
            for n in coupled_joints(g):
                if n not in names:
                    raise KeyError(f"{what}: unknown joint {n!r}; movable joints: {list(full.joint_names)}")
                i = names[n]
                if full.jnt_type[i] not in _ONE_DOF:
                    raise ValueError(f"{what}: the joint {n!r} is {full.joints[i].kind_name}; only revolute and "
                                     "prismatic joints can be coupled")
            if isinstance(g, JointCoupling):
                terms = {}
                for n, k in g.terms:
                    terms[names[n]] = terms.get(names[n], 0.0) + float(k)
                if not (all(np.isfinite(k) for k in terms.values()) and np.isfinite(g.offset)):
                    raise ValueError(f"{what}: coefficients and offset must be finite")
                f = names[g.dependent] if g.dependent in names else -1
                if f not in terms or terms[f] == 0.0:
                    raise ValueError(f"{what}: the dependent joint {g.dependent!r} must have a non-zero coefficient")
                terms = {i: k for i, k in terms.items() if k != 0.0}
                if len(terms) < 2:
                    raise ValueError(f"{what}: couples fewer than two joints (it would lock {g.dependent!r})")
                const = float(g.offset)
            else:
                f, l_ = names[g.follower], names[g.leader]
                if f == l_:
                    raise ValueError(f"{what}: a joint cannot follow itself")
                if not (np.isfinite(g.ratio) and np.isfinite(g.offset)):
                    raise ValueError(f"{what}: ratio and offset must be finite")
                drive[f] = (l_, float(g.ratio), float(g.offset))
                terms, const = {f: 1.0, l_: -float(g.ratio)}, float(g.offset)
            if f in rows:
                raise ValueError(f"joint {full._joint_names[f]!r} is the dependent joint of two couplings "
                                 f"(the second: {what}); a joint follows one gear or coupling")
            rows[f] = (terms, const)
        for f in drive:                              # a cycle of gears alone is refused (it locks them)
            k, seen = f, {f}
            while k in drive:
                k = drive[k][0]
                if k in seen:
                    raise ValueError("gears form a cycle: " + " -> ".join(full._joint_names[i] for i in seen))
                seen.add(k)
        expr = _resolve(rows, full._joint_names)        # dependent body -> ({independent body: coef}, offset)
        nb = full.nbody
        # reduced coordinates: every coordinate of a joint that depends on no other, in model order
        jq, jv = np.zeros(nb, dtype=np.int64), np.zeros(nb, dtype=np.int64)
        jnq, jnv = np.array(full.jnt_nq), np.array(full.jnt_nv)
        nq = nv = 0
        for i in range(1, nb):
            if i in expr:
                jnq[i] = jnv[i] = 0
                continue
            jq[i], jv[i] = nq, nv
            nq += int(full.jnt_nq[i])
            nv += int(full.jnt_nv[i])
        K = max([1] + [len(e[0]) for e in expr.values()])
        qsrc, vsrc = np.zeros((full.nq, K), dtype=np.int64), np.zeros((full.nv, K), dtype=np.int64)
        qscale, qoff, vscale = np.zeros((full.nq, K)), np.zeros(full.nq), np.zeros((full.nv, K))
        ratio = np.zeros(nb)
        self.leader, self.sources = {}, {}
        for i in range(1, nb):
            fq, fv, n_q, n_v = full.jnt_qadr[i], full.jnt_vadr[i], full.jnt_nq[i], full.jnt_nv[i]
            if i in expr:
                src, o = expr[i]
                self.sources[i] = dict(src)
                for t, (lead, r) in enumerate(sorted(src.items())):
                    qsrc[fq, t], qscale[fq, t] = jq[lead], r
                    vsrc[fv, t], vscale[fv, t] = jv[lead], r
                qoff[fq] = o
                lead0 = min(src)
                jq[i], jv[i] = jq[lead0], jv[lead0]
                if len(src) == 1:
                    self.leader[i] = lead0
                    ratio[i] = src[lead0]
            else:
                qsrc[fq:fq + n_q, 0] = np.arange(jq[i], jq[i] + n_q)
                vsrc[fv:fv + n_v, 0] = np.arange(jv[i], jv[i] + n_v)
                qscale[fq:fq + n_q, 0] = 1.0
                vscale[fv:fv + n_v, 0] = 1.0
                ratio[i] = 1.0
        self.nq, self.nv = nq, nv
        self.jnt_qadr, self.jnt_vadr, self.jnt_nq, self.jnt_nv = (_readonly(x) for x in (jq, jv, jnq, jnv))
        self.qsrc, self.qscale, self.qoff = _readonly(qsrc), _readonly(qscale), _readonly(qoff)
        self.vsrc, self.vscale = _readonly(vsrc), _readonly(vscale)
        G = np.zeros((full.nv, nv))
        for t in range(K):
            np.add.at(G, (np.arange(full.nv), vsrc[:, t]), vscale[:, t])
        self.G = _readonly(G)
        #: the dependent joints of several independent ones (their limits are rows, not boxes)
        self.multi = tuple(sorted(i for i, s in self.sources.items() if len(s) > 1))
        # which full coordinates are the reduced ones
        keep_q = np.ones(full.nq, dtype=bool)
        keep_v = np.ones(full.nv, dtype=bool)
        for i in expr:
            keep_q[full.jnt_qadr[i]] = False
            keep_v[full.jnt_vadr[i]] = False
        self.keep_q, self.keep_v = _readonly(keep_q), _readonly(keep_v)

        # groups: the bodies one coupled dof drives, hanging from one anchor body (tazz secs. 2.6-2.7):
        # every member's parent is the anchor or another member; the group is reduced into the anchor
        # when the backward pass reaches its first member (the lowest index, a child of the anchor).
        # A dependent of several dofs belongs to no group: the model is solved through G^T M G.
        gdof = np.full(nb, -1, dtype=np.int64)
        anchor = np.full(nb, -1, dtype=np.int64)
        gptr = np.zeros(nb, dtype=np.int64)
        gcnt = np.zeros(nb, dtype=np.int64)
        members = {}
        for f, lead in self.leader.items():
            members.setdefault(lead, [lead]).append(f)
        self.general = []
        if self.multi:
            # no warning for these: the answer is the same as a recursion's, at O(n^3)
            self.general.append(tuple(full._joint_names[m] for m in sorted({k for i in self.multi
                                                                          for k in (i, *self.sources[i])})))
            members = {}
        self.warn = []
        mem = []
        for lead in sorted(members):
            ms = sorted(members[lead])
            p = int(full.parent[ms[0]])         # the parent of the topmost member (the leader or not)
            if not all(full.parent[m] == p or full.parent[m] in ms for m in ms):
                self.general.append(tuple(full._joint_names[m] for m in ms))
                self.warn.append(self.general[-1])
                continue
            for m in ms:
                gdof[m], anchor[m] = jv[lead], p
            gptr[ms[0]], gcnt[ms[0]] = len(mem), len(ms)
            mem.extend(ms)
        # the kernel's data (single-term rows only: with a dependent of several dofs the kernel is not
        # used): ints [nq_r, nv_r | qsrc | vsrc | gdof | anchor | gptr | gcnt | members],
        # floats [qscale | qoff | vscale | ratio of every body's joint to its reduced dof]
        self.gi = _readonly(np.concatenate([[nq, nv], qsrc[:, 0], vsrc[:, 0], gdof, anchor, gptr, gcnt,
                                            np.array(mem, dtype=np.int64)]).astype(np.int64))
        self.gf = _readonly(np.concatenate([qscale[:, 0], qoff, vscale[:, 0], ratio]))

    def row(self, k, kv):
        """(a_q (nq,), a_v (nv,)): full coordinate k of a one-dof joint as qoff[k] + a_q . q, and its
        velocity (full velocity kv) as a_v . v."""
        aq, av = np.zeros(self.nq), np.zeros(self.nv)
        np.add.at(aq, self.qsrc[k], self.qscale[k])
        np.add.at(av, self.vsrc[kv], self.vscale[kv])
        return aq, av

    # --- maps between reduced and full coordinates ------------------------------------------
    def q(self, q):
        """q_full from reduced q (..., nq) -> (..., nq_full)."""
        out = self.qoff + self.qscale[:, 0] * q[..., self.qsrc[:, 0]]
        for t in range(1, self.qsrc.shape[1]):
            out = out + self.qscale[:, t] * q[..., self.qsrc[:, t]]
        return out

    def v(self, v):
        out = self.vscale[:, 0] * v[..., self.vsrc[:, 0]]
        for t in range(1, self.vsrc.shape[1]):
            out = out + self.vscale[:, t] * v[..., self.vsrc[:, t]]
        return out


def _resolve(rows, joint_names):
    """{dependent: ({body: coef}, const)} of equations sum coef q = const -> {dependent:
    ({independent body: coef}, offset)}: q_dep = offset + sum coef q_indep."""
    dep = list(rows)
    memo = {}

    def own(f):                                   # q_f = o + sum_i k_i q_i over the other joints
        terms, const = rows[f]
        cf = terms[f]
        return {i: -k / cf for i, k in terms.items() if i != f}, const / cf

    def sub(f, path):
        if f in memo:
            return memo[f]
        if f in path:
            raise _Cycle
        path = path | {f}
        lin, o = own(f)
        out = {}
        for i, k in lin.items():
            if i in rows:
                s, so = sub(i, path)
                o = o + k * so
                for j, kj in s.items():
                    out[j] = out.get(j, 0.0) + k * kj
            else:
                out[i] = out.get(i, 0.0) + k
        memo[f] = ({i: k for i, k in out.items() if k != 0.0}, o)
        return memo[f]

    try:
        for f in dep:
            sub(f, frozenset())
    except _Cycle:
        # cyclic dependencies: A_D q_D = b - A_I q_I in one solve
        memo = {}
        indep = sorted({i for terms, _ in rows.values() for i in terms} - set(dep))
        A_D = np.array([[rows[f][0].get(d, 0.0) for d in dep] for f in dep])
        A_I = np.array([[rows[f][0].get(i, 0.0) for i in indep] for f in dep]).reshape(len(dep), len(indep))
        b = np.array([rows[f][1] for f in dep])
        if np.linalg.matrix_rank(A_D) < len(dep):
            raise ValueError("the couplings of joints " + ", ".join(repr(joint_names[f]) for f in dep)
                             + " have cyclic dependencies that determine no dependent joint (A_D singular): "
                             "choose other dependent joints, or hold the coupling through the constraint layer "
                             "(linkdyn.constraints.LinearCoupling on the uncoupled model)") from None
        X = np.linalg.solve(A_D, np.column_stack([b, -A_I]))
        for r, f in enumerate(dep):
            memo[f] = ({i: float(X[r, 1 + c]) for c, i in enumerate(indep) if X[r, 1 + c] != 0.0}, float(X[r, 0]))
    for f, (src, _) in memo.items():
        if not src:
            raise ValueError(f"the couplings fix joint {joint_names[f]!r} (it depends on no free joint); "
                             "use a fixed joint instead")
    return memo


class _Cycle(Exception):
    pass


def reduce(model, gears):
    """Turn ``model`` (just built, the full tree) into the geared model in reduced coordinates;
    a shallow copy of the full tree is kept as ``model.full_model``."""
    gears = tuple(JointCoupling(tuple((str(n), float(k)) for n, k in g.terms), float(g.offset), str(g.dependent))
                  if isinstance(g, JointCoupling) else Gear(g.follower, g.leader, float(g.ratio), float(g.offset))
                  for g in gears)
    full = copy.copy(model)
    c = Coupling(full, gears)
    model._full = full
    model.gears = gears
    model._coupling = c
    apply(model)
    if c.warn:
        warnings.warn(f"model {model.name!r}: the gear coupling(s) of {c.warn} are neither serial (a follower "
                      "hanging from its leader) nor parallel (leader and follower siblings); linkdyn.aba solves "
                      "them through the reduced joint-space inertia G^T M G (as a KKT solve with the coupling as "
                      "a constraint would, O(n^3)) instead of the articulated-body recursion",
                      GearWarning, stacklevel=4)


def apply(model):
    """Set the reduced-coordinate attributes of a geared model (also after unpickling)."""
    c, full = model._coupling, model._full
    # the compiled kernels see the full tree only through model.full_model: this model's own packed
    # buffers are those of an empty tree, so that a kernel handed reduced (or full-length) vectors
    # directly answers "wrong length" rather than computing on the wrong coordinates
    mi = np.zeros((layout.N_INT_ROWS, 1), dtype=np.int64)
    mi[layout.PARENT], mi[layout.SUBTREE_END] = -1, 1
    model._packed, mi, mf, model._ws = layout.pack(mi, np.zeros(layout.float_size(1, 0)), layout.data_size(1, 0))
    model._mi, model._mf = _readonly(mi), _readonly(mf)
    for name in (*layout.INT_FIELDS, *(f[0] for f in layout.FLOAT_FIELDS)):
        setattr(model, name, getattr(full, name))
    model.nq, model.nv = c.nq, c.nv
    model._shape_6v, model._shape_vv = (6, c.nv), (c.nv, c.nv)
    model.jnt_qadr, model.jnt_vadr, model.jnt_nq, model.jnt_nv = c.jnt_qadr, c.jnt_vadr, c.jnt_nq, c.jnt_nv
    G = c.G
    # limits: the leader's, narrowed by every follower's mapped back through q_f = r q + o
    lo, hi = np.array(full.lower)[c.keep_q], np.array(full.upper)[c.keep_q]
    vel = np.array(full.velocity_limit)[c.keep_v]
    single = {int(full.jnt_qadr[i]) for i in c.leader}
    narrowed = {}                                   # reduced coordinate -> the followers that narrowed it
    for k in np.flatnonzero(~c.keep_q):
        if k not in single:
            continue        # a dependent of several dofs: its limits are rows (limit_rows), not a box
        r, o, d = c.qscale[k, 0], c.qoff[k], c.qsrc[k, 0]
        with np.errstate(invalid="ignore"):
            a, b = (full.lower[k] - o) / r, (full.upper[k] - o) / r
        a, b = min(a, b), max(a, b)
        lo[d], hi[d] = max(lo[d], a), min(hi[d], b)
        narrowed.setdefault(int(d), []).append(int(k))
    for d, ks in narrowed.items():
        if lo[d] >= hi[d]:                          # issue 28: a leader in [0, 1], a follower (ratio 1) in [5, 6]
            qname = {int(full.jnt_qadr[i]): full._joint_names[i] for i in range(1, full.nbody) if full.jnt_nq[i]}
            lead = qname.get(int(np.flatnonzero(c.keep_q)[d]), f"q[{d}]")
            folls = ", ".join(f"{qname.get(k, k)!r} in [{full.lower[k]:g}, {full.upper[k]:g}]" for k in ks)
            raise ValueError(f"model {model.name!r}: the gear coupling(s) of joint {lead!r} leave it no position: "
                             f"its own limits and those of its follower(s) {folls}, mapped through "
                             f"q_follower = ratio q_leader + offset, give [{lo[d]:g}, {hi[d]:g}], which is "
                             f"{'empty' if lo[d] > hi[d] else 'a single point'}")
    single_v = {int(full.jnt_vadr[i]) for i in c.leader}
    for k in np.flatnonzero(~c.keep_v):
        if k in single_v:
            vel[c.vsrc[k, 0]] = min(vel[c.vsrc[k, 0]], full.velocity_limit[k] / abs(c.vscale[k, 0]))
    model.lower, model.upper, model.velocity_limit = _readonly(lo), _readonly(hi), _readonly(vel)
    model.effort_limit = _readonly(np.array(full.effort_limit)[c.keep_v])
    # joint terms seen at the reduced dof: sum of r^2 x (armature, damping) over the coupled joints
    model.armature = _readonly(G.T ** 2 @ np.asarray(full.armature))
    model.damping = _readonly(G.T ** 2 @ np.asarray(full.damping))
    model.friction = _readonly(np.abs(G.T) @ np.asarray(full.friction))
    # springs: r^2 k seen at the reduced dof (the stiffness of G^T K G); the reference of the kept
    # coordinates (the full tree's springs are what the kernels apply, on q_full = G q + o)
    model.stiffness = _readonly(G.T ** 2 @ np.asarray(full.stiffness))
    model.spring_ref = _readonly(np.array(full.spring_ref)[c.keep_q])
    model.dof_body = _readonly(np.array(full.dof_body)[c.keep_v])
    model.dof_parent = _readonly(np.full(c.nv, -1, dtype=np.int64))     # not tree-sparse: unused
    model._zero_v = _readonly(np.zeros(c.nv))
    model._quat_starts = _readonly(np.array([c.qsrc[o, 0] for o in full._quat_starts], dtype=np.int64))
    model._gws = np.zeros(full.nbody * 24 + 2 * full.nq + 2 * full.nv)
    if full.loops:
        # loop closures: the full tree keeps its own loop buffers (made in Model.__init__ before
        # reduce, rebuilt by its own unpickling) and linkdyn.loops solves on it in reduced
        # coordinates (J_C G); here only the cut joints' velocity slices move to the reduced v
        # (a cut joint is never geared, Model.__init__), and the fast path of
        # loops.constrained_dynamics gets loop buffers of no loops, so that on this model's empty
        # tree it answers "wrong length" and the call is routed (never reading the full tree's loops)
        model.loops = tuple(type(lp)(lp.index, lp.name, lp.joint_name, lp.kind, lp.a, lp.a_pose, lp.b, lp.b_pose,
                                 lp.virtual, lp.real,
                                 slice(int(c.jnt_vadr[lp.virtual]), int(c.jnt_vadr[lp.virtual]) + lp.nv)
                                 if lp.virtual is not None else slice(0, 0))
                            for lp in full.loops)
        model._loop_packed = layout.pack_loops(np.zeros((0, 4), dtype=np.int64), np.zeros((0, 24)),
                                        np.zeros(0, dtype=np.int64), 0)
        model.__dict__.pop("_loop_args", None)


# --- the adapter: what a public function's answer is on a geared model ----------------------
# Each public function that takes (model, q, ...) declares, once, with @reduced(kind), how its
# answer on a geared model follows from its answer on the uncoupled tree (``model.full_model``);
# its body, after its fast path, routes a geared model with one line,
# ``if model._full is not None: return fn.on_full_tree(model, ...)``.  (A wrapping decorator
# would do the routing itself but costs every call ~55 ns, 4 % of a frame Jacobian; a geared
# model's packed buffers are an empty tree's, so the fast path always fails for it, for free.)
# The inputs are validated against the *reduced* sizes (an error names the argument as the user
# passed it), expanded, q_full = expand(q), v_full = G v, a_full = G a, and the answer projected:
#
#     "force"     generalized forces:           tau = G^T tau_full      (virtual work)
#     "matrix"    matrices on both sides:       G^T X G                 (inertia, Coriolis, dtau/dq)
#     "rows"      regressor rows:               G^T Y
#     "columns"   Jacobians, d/dv columns:      X G
#     None        anything else (poses, velocities, energies, the centre of mass)
#
# or a tuple of these for a tuple of answers.  ``via=f`` names a function that answers for the
# geared model itself (the geared ABA, integrate/difference): ``fn.on_full_tree = f`` (given fn
# as its first argument when ``pass_fn``).
_Q_ARGS = ("q", "q0", "q1")
_V_ARGS = ("v", "a")
_KINDS = ("force", "matrix", "rows", "columns", None)


def _project(kind, x, G):
    if kind is None:
        return x
    if isinstance(kind, tuple):
        return tuple(_project(k, y, G) for k, y in zip(kind, x))
    if kind == "force":
        return x @ G
    if kind == "columns":
        return x @ G if x.shape[-1] else x      # (3, 0): a Jacobian that was not asked for
    if kind == "matrix":
        return G.T @ x @ G
    return G.T @ x                               # "rows"


def _through_full_tree(fn, sig, kind, model, *args, **kwargs):
    """``fn(model, *args, **kwargs)`` on the geared ``model`` through its full tree."""
    bound = sig.bind(model, *args, **kwargs)
    named = {n: x for n, x in bound.arguments.items() if (n in _Q_ARGS or n in _V_ARGS) and x is not None}
    s = as_states(model, **named)
    c = model._coupling
    for n in named:
        bound.arguments[n] = c.q(getattr(s, n)) if n in _Q_ARGS else c.v(getattr(s, n))
    bound.arguments["model"] = model._full
    return _project(kind, fn(*bound.args, **bound.kwargs), c.G)


def reduced(kind=None, *, via=None, pass_fn=False):
    """Declare how the decorated public function answers on a geared model (see above): sets
    ``fn.on_full_tree(model, *args, **kwargs)`` and ``fn.gear_kind``; returns ``fn`` itself."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if any(k not in _KINDS for k in kinds):
        raise ValueError(f"reduced: unknown kind {kind!r}; expected one of {_KINDS} or a tuple of them")

    def declare(fn):
        if via is not None:
            fn.on_full_tree = functools.partial(via, fn) if pass_fn else via
        else:
            fn.on_full_tree = functools.partial(_through_full_tree, fn, inspect.signature(fn), kind)
        fn.gear_kind = kind
        return fn
    return declare


def integrate_via(fn, model, q, v, dt=1.0):
    """``integrate`` of a geared model: on the full tree, the reduced coordinates kept."""
    c = model._coupling
    s = as_states(model, q=q, v=v)
    return fn(model._full, c.q(s.q), c.v(s.v), dt)[..., c.keep_q]


def difference_via(fn, model, q0, q1):
    """``difference`` of a geared model: on the full tree, the reduced velocities kept."""
    c = model._coupling
    s = as_states(model, q0=q0, q1=q1)
    return fn(model._full, c.q(s.q0), c.q(s.q1))[..., c.keep_v]


def tangent_jacobians_via(fn, model, q, x):
    """integrate/difference Jacobians: the reduced rows and columns of the full ones (the
    followers' coordinates are affine in the reduced ones, so P J_full G with P the selection of
    the reduced coordinates)."""
    c = model._coupling
    name = "v" if fn.__name__ == "integrate_jacobians" else "q1"
    s = as_states(model, **{("q" if name == "v" else "q0"): q, name: x})
    a = c.q(s.q if name == "v" else s.q0)
    b = c.v(s.v) if name == "v" else c.q(s.q1)
    J1, J2 = fn(model._full, a, b)
    keep = c.keep_v
    return tuple(J[..., keep, :] @ c.G for J in (J1, J2))
