"""Flat memory layout shared by the frozen ``Model`` and the compiled kernels.

A compiled call pays for every argument it unboxes (a tuple of 20 arrays costs ~3 us, a
plain array ~0.08 us), so a model travels to the kernels as two buffers:

* ``mi``: int64, shape ``(N_INT_ROWS, nbody)``, one row per integer field;
* ``mf``: float64, 1-D, the float fields one after another, each C-contiguous.

and every workspace of one evaluation (the "data" of Pinocchio) as one float64 buffer ``ws``.
A model's own ``mi``, ``mf`` and single-state ``ws`` are views into one buffer (``pack``), so
that the hottest entry points take that one array instead of three (``unpack_packed``).
``unpack_model`` / ``unpack_data`` turn the buffers back into named views inside a kernel at
no cost (``carray``-like views over the caller's buffer, built by the ``_view`` intrinsic: unlike ``reshape`` views they carry no
reference count, which made unpacking cost ~1 us per call); the Python ``Model`` exposes the very same views as read-only attributes.  The order
of the segments is defined once here and nowhere else.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core.errors import TypingError
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import np_cfarray

# --- integer rows of mi, each of shape (nbody,) -----------------------------------------
PARENT, JTYPE, QADR, VADR, JNQ, JNV, JAXIS, SUBTREE_END = range(8)
N_INT_ROWS = 8
# jnt_axis_id: k in {0, 1, 2} when a revolute or prismatic axis is +-e_k (the kernels then
# skip the general Rodrigues rotation and 3x3 product), -1 otherwise
# subtree_end: the subtree of body i is the contiguous range [i, subtree_end[i]) (depth-first order)
INT_FIELDS = ("parent", "jnt_type", "jnt_qadr", "jnt_vadr", "jnt_nq", "jnt_nv", "jnt_axis_id", "subtree_end")

# --- float segments of mf: (name, shape as a function of (nbody, nv)) --------------------
FLOAT_FIELDS = (
    ("jnt_axis", lambda nb, nv: (nb, 3)),      # joint axis in the joint frame
    ("jnt_axis2", lambda nb, nv: (nb, 3)),     # second axis (universal joints)
    ("R_tree", lambda nb, nv: (nb, 3, 3)),     # joint frame in the parent body frame: rotation
    ("p_tree", lambda nb, nv: (nb, 3)),        # ... and position
    ("inertia", lambda nb, nv: (nb, 6, 6)),    # spatial inertia in the body frame, [lin; ang]
    ("armature", lambda nb, nv: (nv,)),        # rotor inertia added to the diagonal of M
    ("gravity", lambda nb, nv: (3,)),          # gravity in the world frame
    ("damping", lambda nb, nv: (nv,)),         # viscous friction: tau += damping * v
    ("friction", lambda nb, nv: (nv,)),        # Coulomb friction: tau += friction * sign(v)
    ("stiffness", lambda nb, nv: (nv,)),       # joint springs: tau += stiffness * (q - spring_ref) (passes.spring_torques)
    ("jnt_spring_ref", lambda nb, nv: (nb, 7)),  # each joint's spring reference configuration, first jnt_nq slots
)

# --- workspace segments of ws ------------------------------------------------------------
DATA_FIELDS = (
    ("oR", lambda nb, nv: (nb, 3, 3)),         # body pose in the world: rotation (oMi)
    ("op", lambda nb, nv: (nb, 3)),            # ... and position
    ("liR", lambda nb, nv: (nb, 3, 3)),        # body pose in its parent: rotation (liMi)
    ("lip", lambda nb, nv: (nb, 3)),           # ... and position
    ("vel", lambda nb, nv: (nb, 6)),           # spatial velocity, body frame
    ("acc", lambda nb, nv: (nb, 6)),           # spatial acceleration, body frame
    ("frc", lambda nb, nv: (nb, 6)),           # spatial force transmitted by each joint, body frame
    ("S", lambda nb, nv: (nv, 6)),             # motion subspace column of each dof, body frame
    ("vJ", lambda nb, nv: (nb, 6)),            # joint velocity S q'
    ("cJ", lambda nb, nv: (nb, 6)),            # joint bias S' q'
    ("I6", lambda nb, nv: (nb, 6, 6)),         # composite (CRBA) or articulated (ABA) inertia
    ("pA", lambda nb, nv: (nb, 6)),            # articulated bias force (ABA)
    ("U", lambda nb, nv: (nv, 6)),             # U = IA S (ABA)
    ("Dinv", lambda nb, nv: (nv, 6)),          # (S^T IA S)^-1, rows of each joint's block (ABA)
    ("u", lambda nb, nv: (nv,)),               # u = tau - S^T pA (ABA)
    ("tmp", lambda nb, nv: (nb, 6)),           # scratch 6-vector per body
    ("W6", lambda nb, nv: (2, 6, 6)),          # scratch 6x6 pair (ABA's D block, Lagrange and loop kernels)
    ("W3", lambda nb, nv: (3, 3, 3)),          # scratch 3x3: joint rotation, jcalc scratch, joint position (row 2, 0)
)


def _size(fields, nb, nv):
    return int(sum(np.prod(shape(nb, nv)) for _, shape in fields))


def float_size(nb: int, nv: int) -> int:
    return _size(FLOAT_FIELDS, nb, nv)


def data_size(nb: int, nv: int) -> int:
    return _size(DATA_FIELDS, nb, nv)


def views(buf: np.ndarray, fields, nb: int, nv: int) -> dict:
    """Named NumPy views into ``buf`` (the Python twin of ``unpack_*``)."""
    out, o = {}, 0
    for name, shape in fields:
        shp = shape(nb, nv)
        n = int(np.prod(shp))
        out[name] = buf[o:o + n].reshape(shp)
        o += n
    return out


@intrinsic
def _int_address(typingctx, arr, offset):
    """Pointer to ``arr.flat[offset]`` read as int64 (arr a C-contiguous float64 buffer whose
    slots from there on hold int64 bit patterns, written through ``view(np.int64)``)."""
    sig = types.CPointer(types.int64)(arr, offset)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        index = context.cast(builder, args[1], signature.args[1], types.intp)
        ptr = builder.gep(ary.data, [index])
        return builder.bitcast(ptr, context.get_value_type(types.CPointer(types.int64)))
    return sig, codegen


def _view_codegen(as_int):
    def codegen(context, builder, signature, args):
        buf_t, off_t, shape_t = signature.args
        ary = context.make_array(buf_t)(context, builder, args[0])
        index = context.cast(builder, args[1], off_t, types.intp)
        ptr = builder.gep(ary.data, [index])
        if as_int:
            ptr = builder.bitcast(ptr, context.get_value_type(types.CPointer(types.int64)))
        ptr_t = types.CPointer(signature.return_type.dtype)
        return np_cfarray(context, builder, signature.return_type(ptr_t, shape_t), (ptr, args[2]))
    return codegen


def _view_type(shape, dtype):
    if not (isinstance(shape, types.BaseTuple) and all(isinstance(t, types.Integer) for t in shape)):
        raise TypingError(f"_view: the shape must be a tuple of integers, got {shape}")
    return types.Array(dtype, len(shape), "C")


@intrinsic
def _view(typingctx, buf, o, shape):
    """A C-contiguous view of buf[o:o + prod(shape)] with the given shape (buf C-contiguous;
    the caller keeps it alive): what ``carray`` of a pointer to ``buf.flat[o]`` gives, built in one
    step: an intrinsic is typed and lowered once per call site, where the inlined ``carray``
    call cost Numba's typing and lowering about 7 ms more at each of the ~30 views a kernel
    unpacks (0.59 s -> 0.36 s of CPU for a kernel that unpacks a model and its workspace)."""
    return _view_type(shape, buf.dtype)(buf, o, shape), _view_codegen(False)


@intrinsic
def _int_view(typingctx, buf, o, shape):
    """``_view`` of int64 slots of the float64 buffer ``buf`` (bit patterns written through
    ``view(np.int64)``), as ``carray(_int_address(buf, o), shape)``."""
    return _view_type(shape, types.int64)(buf, o, shape), _view_codegen(True)


def _segments(fields, what):
    """An intrinsic ``views(buf, nb, nv)`` -> the tuple of C-contiguous views of the segments
    ``fields`` [(name, shape(nb, nv))] laid one after another from buf's start (as ``_view`` of
    each at its running offset), built in one call: one call site to type and lower instead of
    a ``_view`` call, its shape tuple and its offset arithmetic per segment."""
    dims = [shape("nb", "nv") for _, shape in fields]

    @intrinsic
    def views(typingctx, buf, nb, nv):
        rets = [types.Array(buf.dtype, len(d), "C") for d in dims]

        def codegen(context, builder, signature, args):
            intp = types.intp
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            sym = {"nb": context.cast(builder, args[1], signature.args[1], intp),
                   "nv": context.cast(builder, args[2], signature.args[2], intp)}
            off = context.get_constant(intp, 0)
            out = []
            for d, rt in zip(dims, rets):
                shape = [sym[x] if isinstance(x, str) else context.get_constant(intp, x) for x in d]
                shape_t = types.UniTuple(intp, len(d))
                ptr_t = types.CPointer(rt.dtype)
                out.append(np_cfarray(context, builder, rt(ptr_t, shape_t),
                                      (builder.gep(ary.data, [off]), context.make_tuple(builder, shape_t, shape))))
                size = shape[0]
                for x in shape[1:]:
                    size = builder.mul(size, x)
                off = builder.add(off, size)
            return context.make_tuple(builder, signature.return_type, out)
        return types.Tuple(rets)(buf, nb, nv), codegen
    views.__doc__ = f"The views of {what} (``_segments``)."
    return views


# --- one buffer for a model and its workspace ---------------------------------------------
# [header (HEADER int64 slots) | mi (int64) | mf | ws]; the header holds
# nb, offset of mf, size of mf, offset of ws, size of ws.
HEADER = 6


def pack(mi: np.ndarray, mf: np.ndarray, ws_size: int):
    """One float64 buffer holding mi (bit patterns), mf and a zeroed workspace, and the
    views (mi, mf, ws) into it: the arguments of every kernel, and ``buf`` itself for the
    entry points that take :func:`unpack_packed`'s single argument."""
    nb = mi.shape[1]
    o_mf = HEADER + mi.size
    o_ws = o_mf + mf.size
    buf = np.zeros(o_ws + ws_size)
    buf[:HEADER].view(np.int64)[:5] = nb, o_mf, mf.size, o_ws, ws_size
    vmi = buf[HEADER:o_mf].view(np.int64).reshape(mi.shape)
    vmi[:] = mi
    vmf = buf[o_mf:o_ws]
    vmf[:] = mf
    return buf, vmi, vmf, buf[o_ws:]


@intrinsic
def _as_readonly(typingctx, arr):
    """The same array typed read-only (only the type changes: the data model is the same)."""
    sig = arr.copy(readonly=True)(arr)

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, signature.return_type, args[0])
    return sig, codegen


@njit(inline="always", cache=True)
def unpack_packed(buf):
    """(mi, mf, ws) views of a buffer made by :func:`pack`, typed as the Model's own
    arrays (mi, mf read-only), so that a kernel called on them is the very compiled
    version the other entry points use, not a second one."""
    h = _int_view(buf, 0, (HEADER,))
    nb, o_mf, n_mf, o_ws, n_ws = h[0], h[1], h[2], h[3], h[4]
    return (_as_readonly(_int_view(buf, HEADER, (N_INT_ROWS, nb))),
            _as_readonly(_view(buf, o_mf, (n_mf,))), _view(buf, o_ws, (n_ws,)))


@njit(inline="always", cache=True)
def no_forces(buf):
    """An empty (0, 6) array of external forces, without allocating (a view of buf)."""
    return _view(buf, 0, (0, 6))


@njit(inline="always", cache=True)
def model_sizes(mi):
    nb = mi.shape[1]
    nv = mi[VADR, nb - 1] + mi[JNV, nb - 1]
    nq = mi[QADR, nb - 1] + mi[JNQ, nb - 1]
    return nb, nq, nv


_MODEL_ROWS = _segments([(name, lambda nb, nv: (nb,)) for name in INT_FIELDS[:JNV + 1]], "mi's first rows")
_MODEL_FLOATS = _segments(FLOAT_FIELDS[:7], "mf's first segments (jnt_axis to gravity)")
_DATA = _segments(DATA_FIELDS, "a workspace (DATA_FIELDS)")


@njit(inline="always", cache=True)
def unpack_model(mi, mf):
    """Named views of a packed model; order as in FLOAT_FIELDS."""
    nb, nq, nv = model_sizes(mi)
    parent, jtype, qadr, vadr, jnq, jnv = _MODEL_ROWS(mi, nb, nv)
    axis, axis2, R_tree, p_tree, inertia, armature, gravity = _MODEL_FLOATS(mf, nb, nv)
    return parent, jtype, qadr, vadr, jnq, jnv, axis, axis2, R_tree, p_tree, inertia, armature, gravity


@njit(inline="always", cache=True)
def unpack_joint_terms(mi, mf):
    """(damping, friction), each (nv,): the velocity-dependent joint torques, kept apart from
    ``unpack_model`` so that kernels without them keep their signature."""
    nb, nq, nv = model_sizes(mi)
    o = 54 * nb + nv + 3
    return _view(mf, o, (nv,)), _view(mf, o + nv, (nv,))


@njit(inline="always", cache=True)
def unpack_springs(mi, mf):
    """(stiffness (nv,), jnt_spring_ref (nb, 7)): the joints' springs (after the joint terms)."""
    nb, nq, nv = model_sizes(mi)
    o = 54 * nb + 3 * nv + 3
    return _view(mf, o, (nv,)), _view(mf, o + nv, (nb, 7))


@njit(inline="always", cache=True)
def axis_ids(mi):
    """``jnt_axis_id`` (nb,)."""
    nb = mi.shape[1]
    return _view(mi, JAXIS * nb, (nb,))


@njit(inline="always", cache=True)
def subtree_ends(mi):
    """``subtree_end`` (nb,)."""
    nb = mi.shape[1]
    return _view(mi, SUBTREE_END * nb, (nb,))


@njit(inline="always", cache=True)
def unpack_data(ws, nb, nv):
    """Named views of a workspace buffer; order as in DATA_FIELDS: oR, op, liR, lip, vel, acc,
    frc, S, vJ, cJ, I6, pA, U, Dinv, u, tmp, W6, W3."""
    return _DATA(ws, nb, nv)


# --- loop closures (linkdyn.loops): the solver's workspace and the loops in one buffer ---------------
def loop_ws_size(nv, nl):
    """Size of the loop workspace: H, J (raw and projected), Y, Lambda, vectors, and each
    loop's cut projector P and (S^T S)^-1 S^T (carved in this order by ``linkdyn.loops._kernels._carve``)."""
    m = 6 * nl
    return nv * nv + 2 * m * nv + nv * m + m * m + 4 * m + 2 * nv + max(nv, 6) + 6 * nl + 72 * nl


#: [header: nl, nv, offsets of lf, lam, lw | li | lf | lam | lw]
LOOP_HEADER = 5


def pack_loops(li, lf, lam, lw_size):
    """One float64 buffer holding li and lam (int64 bit patterns), lf and a zeroed loop workspace."""
    nl, nv = li.shape[0], lam.shape[0]
    o_lf = LOOP_HEADER + li.size
    o_lam = o_lf + lf.size
    o_lw = o_lam + nv
    buf = np.zeros(o_lw + lw_size)
    buf[:LOOP_HEADER].view(np.int64)[:] = nl, nv, o_lf, o_lam, o_lw
    buf[LOOP_HEADER:o_lf].view(np.int64)[:] = li.ravel()
    buf[o_lf:o_lam] = lf.ravel()
    buf[o_lam:o_lw].view(np.int64)[:] = lam
    return buf
