"""The public entry points on a geared model (linkdyn.model.gears): reduced coordinates in,
the uncoupled tree's kernels, reduced answers out.

Every public function that takes (model, q, ...) calls :func:`call` when ``model.full_model`` is
not the model itself, after its fast path has failed (a geared model's own packed buffers are an
empty tree's, so the fast path always fails for it, at no cost to other models).  The inputs are
validated against the *reduced* sizes (the error names the argument as the user passed it), then
expanded, q_full = expand(q), v_full = G v, a_full = G a, and the answer projected:

    "T"  generalized forces:  tau = G^T tau_full          (virtual work)
    "M"  matrices on both sides: G^T X G                  (inertia, Coriolis, dtau/dq, ...)
    "R"  regressor rows: G^T Y
    "J"  Jacobians and other d/dv columns:  X G
    None anything else (poses, velocities, energies, the centre of mass)

``linkdyn.aba`` has its own kernel (linkdyn.dynamics.geared_aba, tazz eqs. 30-40).
"""
from __future__ import annotations

import inspect

import numba
import numpy as np

from numba import types as nt

from ._api import (FEXT, MF, MI, OUT1, SERIAL_BELOW, VEC, WS, Entry, _NO_FORCE, as_fext, as_states, batch_workspace,
                   raise_for_status, vectors)

_Q_ARGS = ("q", "q0", "q1")
_V_ARGS = ("v", "a")
_SIGS: dict = {}


def _project(kind, x, G):
    if kind is None:
        return x
    if isinstance(kind, tuple):
        return tuple(_project(k, y, G) for k, y in zip(kind, x))
    if kind == "T":
        return x @ G
    if kind == "J":
        return x @ G if x.shape[-1] else x      # (3, 0): a Jacobian that was not asked for
    if kind == "M":
        return G.T @ x @ G
    if kind == "R":
        return G.T @ x
    raise ValueError(kind)


def call(fn, kind, model, *args, **kwargs):
    """``fn(model, *args, **kwargs)`` on the geared ``model`` through its full tree."""
    sig = _SIGS.get(fn)
    if sig is None:
        sig = _SIGS[fn] = inspect.signature(fn)
    bound = sig.bind(model, *args, **kwargs)
    named = {n: x for n, x in bound.arguments.items() if (n in _Q_ARGS or n in _V_ARGS) and x is not None}
    s = as_states(model, **named)
    c = model._coupling
    for n in named:
        bound.arguments[n] = c.q(getattr(s, n)) if n in _Q_ARGS else c.v(getattr(s, n))
    bound.arguments["model"] = model._full
    return _project(kind, fn(*bound.args, **bound.kwargs), c.G)


# --- forward dynamics ---------------------------------------------------------------------
_GI = nt.Array(nt.int64, 1, "C", readonly=True)
_GF = nt.Array(nt.float64, 1, "C", readonly=True)
_aba_entry = None


def aba(model, q, v, tau, fext=None):
    """q'' of the geared model: the geared articulated-body kernel (serial and parallel couplings),
    or solve(G^T M G, tau - G^T b) for couplings that recursion cannot fold in."""
    global _aba_entry
    from .dynamics.geared_aba import _geared_aba_batch, _geared_aba_kernel
    c, full = model._coupling, model._full
    if fext is None and not c.general and vectors(q, v, tau):        # one state: straight to the kernel
        if _aba_entry is None:
            _aba_entry = Entry(_geared_aba_kernel, MI, MF, WS, _GI, _GF, WS, VEC, VEC, VEC, FEXT, OUT1)
        out = np.empty(model.nv)
        if _aba_entry.fn(full._mi, full._mf, full._ws, c.gi, c.gf, model._gws, q, v, tau, _NO_FORCE, out) == 0:
            return out
    args = as_states(model, q=q, v=v, tau=tau)
    if c.general:
        from .dynamics import crba, rnea
        qf, vf = c.q(args.q), c.v(args.v)
        G = c.G
        Mr = G.T @ crba(full, qf) @ G
        b = rnea(full, qf, vf, np.zeros(vf.shape[-1]), fext) @ G
        rhs = args.tau - b
        if args.batch is None:
            return np.linalg.solve(Mr, rhs)
        Mr = np.broadcast_to(Mr, (args.batch,) + Mr.shape[-2:])
        return np.linalg.solve(Mr, np.broadcast_to(rhs, (args.batch, model.nv))[..., None])[..., 0]
    F = as_fext(model, fext, args.batch)
    if args.batch is None:
        out = np.empty(model.nv)
        st = _geared_aba_kernel(full._mi, full._mf, full._ws, c.gi, c.gf, model._gws, args.q, args.v, args.tau, F, out)
    else:
        out = np.empty((args.batch, model.nv))
        st = np.empty(args.batch, dtype=np.int64)
        if args.batch < SERIAL_BELOW:
            for k in range(args.batch):
                row = [x[k] if x.shape[0] > 1 else x[0] for x in (args.q, args.v, args.tau, F)]
                st[k] = _geared_aba_kernel(full._mi, full._mf, full._ws, c.gi, c.gf, model._gws, *row, out[k])
        else:
            gws = np.empty((numba.get_num_threads(), model._gws.shape[0]))
            _geared_aba_batch(full._mi, full._mf, batch_workspace(full), c.gi, c.gf, gws, args.q, args.v, args.tau,
                              F, out, st)
    raise_for_status(model, st, q=args.q, v=args.v, tau=args.tau, fext=fext)
    return out


def aba_derivatives(model, q, v, tau, fext=None):
    """(dq''/dq, dq''/dv, M^-1) of the geared model: the reduced dynamics M_r q'' = tau - G^T b
    differentiated (M_r = G^T M G is constant in the follower directions G spans), i.e.
    dq''/dx = -M_r^-1 G^T (dtau_full/dx_full) G at a_full = G q''."""
    from .dynamics.derivatives import rnea_derivatives
    c, full = model._coupling, model._full
    args = as_states(model, q=q, v=v, tau=tau)
    qdd = aba(model, args.q, args.v, args.tau, fext)
    G = c.G
    dq, dv, M = rnea_derivatives(full, c.q(args.q), c.v(args.v), c.v(qdd), fext)
    Minv = np.linalg.inv(G.T @ M @ G)
    return -Minv @ (G.T @ dq @ G), -Minv @ (G.T @ dv @ G), Minv


def tangent_jacobians(fn, model, q, x):
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


def integrate(fn, model, q, v, dt):
    c = model._coupling
    s = as_states(model, q=q, v=v)
    return fn(model._full, c.q(s.q), c.v(s.v), dt)[..., c.keep_q]


def difference(fn, model, q0, q1):
    c = model._coupling
    s = as_states(model, q0=q0, q1=q1)
    return fn(model._full, c.q(s.q0), c.q(s.q1))[..., c.keep_v]
