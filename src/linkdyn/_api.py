"""Input validation of the public layer, done once per call before any kernel runs.

Shapes and dtypes are checked here (with a message that names the argument, the shape got
and the shape expected); finiteness and quaternion norms are checked inside the kernels,
which return a status code that :func:`raise_for_status` turns into the same kind of message.
A well-formed single state takes the fast path: a handful of attribute checks, no copies.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types as nt

from ._kernels import passes
from ._kernels.layout import data_size
from ._kernels.kinds import FREE, SPHERICAL

_F64 = np.dtype(np.float64)
_Q_NAMES = ("q", "q0", "q1")


class States:
    """Validated inputs: attributes named as the arguments, plus ``batch`` (None or N)."""
    __slots__ = ("q", "v", "a", "tau", "q0", "q1", "b", "batch")


def _size(model, name):
    return model.nq if name in _Q_NAMES else model.nv


_ND = np.ndarray


# --- compiled entry points ---------------------------------------------------------------
# Argument types of the single-state kernels: the packed model (mi, mf), the workspace, the
# caller's vectors in any layout (so a strided view is read correctly, not copied), and
# outputs the public layer allocates.
MI = nt.Array(nt.int64, 2, "C", readonly=True)
MF = nt.Array(nt.float64, 1, "C", readonly=True)
WS = nt.Array(nt.float64, 1, "C")
VEC = nt.Array(nt.float64, 1, "A")
OUT1 = nt.Array(nt.float64, 1, "C")
OUT2 = nt.Array(nt.float64, 2, "C")
FEXT = nt.Array(nt.float64, 2, "C")
#: a model and its workspace in one buffer (``Model._packed``, layout.pack): the hottest entry
#: points take it instead of (mi, mf, ws), as every argument costs ~0.04 us to unbox
PACKED = nt.Array(nt.float64, 1, "C")


class Entry:
    """One kernel compiled for one fixed signature and called without Numba's dispatcher.

    The dispatcher works out the type of every argument on every call (about 0.03 us per
    argument) to pick a compiled version; for a kernel that takes eight arrays and runs for
    a microsecond that is a fifth of the time.  ``entry.fn`` is the compiled version itself.
    It trusts its arguments completely: a float64 array where the signature says so, of the
    stated number of dimensions (anything else is undefined behaviour), which is why only
    the public layer calls it, right after checking exactly that.  Compiled on first use
    (from Numba's disk cache when it is there).

    ``kernel.overloads[sig].entry_point`` is not part of Numba's documented interface: the
    releases it was checked against are pinned in tests/test_architecture.py (NUMBA_CHECKED),
    whose test fails on any other release, and where a release lacks it ``Entry`` calls the
    dispatcher instead (correct, a little slower).
    """
    __slots__ = ("fn", "kernel", "sig")

    def __init__(self, kernel, *sig):
        self.kernel, self.sig = kernel, tuple(sig)
        self.fn = self._first_call

    def _first_call(self, *args):
        self.kernel.compile(self.sig)
        try:
            self.fn = self.kernel.overloads[self.sig].entry_point
        except (AttributeError, KeyError):    # a Numba that hides it: the dispatcher, always safe
            self.fn = self.kernel
        return self.fn(*args)

    def __call__(self, *args):
        return self.fn(*args)


def vectors(q, v=None, a=None) -> bool:
    """True if every given argument is a 1-D float64 ndarray: such input takes the fast path,
    straight to the kernel's :class:`Entry` (``VEC`` arguments), which checks lengths,
    finiteness and quaternion norms itself and returns a status; on any bad status the caller
    re-runs the full validation below, which builds the error message.  The hottest callers
    inline this test."""
    return (type(q) is _ND and q.dtype is _F64 and q.ndim == 1
            and (v is None or (type(v) is _ND and v.dtype is _F64 and v.ndim == 1))
            and (a is None or (type(a) is _ND and a.dtype is _F64 and a.ndim == 1)))


def _as_real_array(x, name, shape_text):
    """float64 C-contiguous copy (or view) of x; TypeError naming ``name`` for non-numbers and
    complex numbers (whose imaginary part would otherwise be dropped silently)."""
    try:
        raw = np.asarray(x)
        if raw.dtype.kind == "c":
            raise TypeError("complex numbers are not accepted")
        if raw.dtype.kind not in "biuf":
            raise TypeError(f"elements of type {raw.dtype} are not real numbers")
        return np.ascontiguousarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}: expected real numbers of shape {shape_text}; {exc}") from None


def _as_vector(x, n, name):
    if type(x) is np.ndarray and x.dtype == _F64 and x.shape == (n,) and x.flags.c_contiguous:
        return x
    arr = _as_real_array(x, name, f"({n},) or (N, {n})")
    if arr.ndim == 0 or arr.ndim > 2 or arr.shape[-1] != n:
        raise ValueError(f"{name}: expected shape ({n},) or (N, {n}), got {arr.shape}")
    if arr.ndim == 2 and arr.shape[0] == 0:
        raise ValueError(f"{name}: the stack of states is empty")
    return arr


def as_states(model, **arrays) -> States:
    """Check every named array against the model (q-like: nq columns, the rest: nv).

    All stacked arrays must have the same number of rows N; a single state next to stacked
    ones is shared by all of them (passed to the kernels as a stack of one row).
    """
    out = States()
    batch = None
    for name, x in arrays.items():
        arr = _as_vector(x, _size(model, name), name)
        if arr.ndim == 2:
            if batch is not None and arr.shape[0] != batch:
                raise ValueError(f"{name}: stack of {arr.shape[0]} states, but another argument has {batch}")
            batch = arr.shape[0]
        setattr(out, name, arr)
    if batch is not None:
        for name in arrays:
            arr = getattr(out, name)
            if arr.ndim == 1:
                setattr(out, name, arr.reshape(1, -1))
    out.batch = batch
    return out


_NO_FORCE = np.zeros((0, 6))
_NO_FORCE_STACK = np.zeros((1, 0, 6))


def as_fext(model, fext, batch):
    """External forces: None, (nbody, 6), or (N, nbody, 6) when batched."""
    if fext is None:
        return _NO_FORCE if batch is None else _NO_FORCE_STACK
    nb = model.nbody
    F = _as_real_array(fext, "fext", f"({nb}, 6)")
    if F.shape == (nb, 6):
        return F if batch is None else F.reshape(1, nb, 6)
    if batch is not None and F.shape == (batch, nb, 6):
        return F
    want = f"({nb}, 6)" + ("" if batch is None else f" or ({batch}, {nb}, 6)")
    raise ValueError(f"fext: expected shape {want} (one spatial force [f; n] per body, body frame), got {F.shape}")


#: stacks smaller than this run state by state on the calling thread: waking the thread pool
#: costs ~10 us on an idle machine and milliseconds on a busy one, more than a few states take
SERIAL_BELOW = 16


def run(model, kernels, out_shape, args, names, extra=(), stacked_extra=0, **originals):
    """Run a kernel on validated ``args``: the single-state kernel, or its batched twin on
    a stack (one parallel compiled loop; a small stack state by state).  Kernels take
    ``(mi, mf, ws, *inputs, *extra, out)`` and return a status; batched twins
    ``(mi, mf, WS, *inputs, *extra, OUT, status)``.  ``names`` lists the inputs taken from
    ``args``; the first ``stacked_extra`` of ``extra`` are stacks like the inputs (external
    forces); ``originals`` are extra arrays that error messages may point into (e.g. fext)."""
    kernel, batched = kernels      # kernel: a Numba dispatcher or an Entry taking these arrays
    inputs = tuple(getattr(args, n) for n in names)
    if args.batch is None:
        out = np.empty(out_shape)
        status = kernel(model._mi, model._mf, model._ws, *inputs, *extra, out)
    else:
        out = np.empty((args.batch,) + tuple(out_shape))
        status = np.empty(args.batch, dtype=np.int64)
        if args.batch < SERIAL_BELOW:
            stacks = inputs + tuple(extra[:stacked_extra])
            rest = tuple(extra[stacked_extra:])
            for k in range(args.batch):
                rows = tuple(x[k] if x.shape[0] > 1 else x[0] for x in stacks)
                status[k] = kernel(model._mi, model._mf, model._ws, *rows, *rest, out[k])
        else:
            batched(model._mi, model._mf, batch_workspace(model), *inputs, *extra, out, status)
    raise_for_status(model, status, **dict(zip(names, inputs)), **originals)
    return out


def batch_workspace(model) -> np.ndarray:
    """One workspace row per compiled thread."""
    return np.empty((numba.get_num_threads(), data_size(model.nbody, model.nv)))


def _describe_quat(model, q):
    for i, k in enumerate(model.jnt_type):
        if k in (SPHERICAL, FREE):
            o = model.jnt_qadr[i] + (3 if k == FREE else 0)
            n = float(np.linalg.norm(q[o:o + 4]))
            if abs(n - 1.0) > passes.QUAT_TOL:
                return (f"the quaternion of joint {model._joint_names[i]!r} (q[{o}:{o + 4}]) has norm {n:.9g}; "
                        "it must be of unit norm (use linkdyn.normalize or linkdyn.integrate)")
    return "a quaternion is not of unit norm"


def _first_bad(x):
    x = np.asarray(x, dtype=float)
    idx = np.argwhere(~np.isfinite(x))
    return tuple(int(i) for i in idx[0]) if len(idx) else None


def raise_for_status(model, status, q_name="q", **arrays):
    """Raise ValueError for a kernel status (a code, or an array of codes for a stack).

    ``arrays`` are the caller's arguments by name (to locate the bad entry); the
    configuration is ``arrays["q"]``, reported as ``q_name``."""
    if np.ndim(status) == 0:
        code, which, prefix = int(status), None, ""
    else:
        bad = np.flatnonzero(status)
        if len(bad) == 0:
            return
        which = int(bad[0])
        code = int(status[which])
        prefix = f"state {which} of the stack: "
    if code == passes.OK:
        return

    def row(name):
        x = np.asarray(arrays[name], dtype=float)
        if which is None or x.ndim < 2:
            return x
        return x[which] if x.shape[0] > 1 else x[0]      # a stack of one is shared by all states

    if code == passes.BAD_QUAT:
        raise ValueError(f"{prefix}{q_name}: " + _describe_quat(model, row("q")))
    if code == passes.NO_MASS:
        raise ValueError(f"model {model.name!r}: no moving body has mass, so the centre of mass is undefined")
    if code == passes.BAD_SHAPE:
        raise ValueError(f"{prefix}an argument has the wrong length for model {model.name!r} "
                         f"(nq = {model.nq}, nv = {model.nv})")
    if code == passes.OVERFLOW:
        big = max((float(np.abs(np.asarray(x, dtype=float)).max(initial=0.0)) for n, x in arrays.items()
                   if n in ("q", "v", "a", "tau") and x is not None), default=0.0)
        raise FloatingPointError(f"{prefix}the result overflowed float64: the inputs are finite but too large "
                                 f"(the largest magnitude among them is {big:.3g})")
    if code == passes.SINGULAR:
        raise np.linalg.LinAlgError(prefix + "the joint-space inertia is singular: a joint moves a subtree "
                                    "without mass or inertia in the direction of motion")
    name = {passes.BAD_Q: "q", passes.BAD_V: "v", passes.BAD_A: next((n for n in ("a", "tau") if n in arrays), "a"),
            passes.BAD_F: "fext"}.get(code)
    if name is None:
        raise RuntimeError(f"kernel returned unknown status {code}")
    where = _first_bad(row(name) if name != "fext" else arrays[name])
    name = q_name if name == "q" else name
    raise ValueError(f"{prefix}{name}: contains NaN or infinity" + (f" at index {where}" if where else ""))
