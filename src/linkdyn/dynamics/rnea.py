"""Recursive Newton-Euler algorithm: inverse dynamics tau = ID(q, v, a, f_ext).

Featherstone 2008 (recursive Newton-Euler) and Featherstone 2008, ch. 2 (velocity and acceleration
propagation); the same steps as spatial_v2's ``ID.m``:

    forward:   v_i = X_i v_p + S_i q'_i,   a_i = X_i a_p + S_i q''_i + c_i      (a_0 = -g)
               f_i = I_i a_i + v_i x* I_i v_i - f_i^ext
    backward:  tau_i = S_i^T f_i + tau_J,i,   f_p += X_i^* f_i

with the joint's own torque tau_J = armature q'' + damping q' + friction sign(q') + tau_s(q) (rotor
inertia, viscous and Coulomb friction, Spong, Hutchinson and Vidyasagar 2006, ch. 7, and the joint's
spring, tau_s = stiffness (q - spring_ref) for a one-dof joint, see linkdyn._kernels.springs; zero
unless the model has them).

External forces are per body, in the body frame (Pinocchio's convention).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._api import _F64, _ND, FEXT, MF, MI, OUT1, PACKED, VEC, WS, Entry, as_fext, as_states, run
from ..model.gears import reduced
from .._kernels import INTERNAL as _INTERNAL
from .._kernels.batch import chunk as _chunk, pick as _pick
from .._kernels.layout import (model_sizes as _model_sizes, no_forces as _no_forces, unpack_data as _unpack_data,
    unpack_joint_terms as _unpack_joint_terms, unpack_model as _unpack_model, unpack_packed as _unpack_packed)
from .._kernels.passes import (ACC, BAD_F, OK, OVERFLOW, all_finite as _all_finite, check_inputs as _check_inputs, joint_torque as _joint_torque,
    kinematics_pass as _kinematics_pass, kinematics_pass_common as _kinematics_pass_common)
from .._kernels.springs import add_spring_torques as _add_spring_torques
from .._kernels.spatial_nb import (dot6 as _dot6, force_act_add as _force_act_add, force_cross_add as _force_cross_add, mat6_vec as _mat6_vec)

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..model.model import Model



@njit(inline="always", cache=True)
def _checked_kinematics(mi, mf, ws, q, v, a, fext):
    st = _check_inputs(mi, q, v, a, True)
    if st != OK:
        return st
    if not _all_finite(fext):
        return BAD_F
    _kinematics_pass(mi, mf, ws, q, v, a, np.int64(ACC), np.bool_(False), np.bool_(True))
    return OK


@njit(inline="always", cache=True)
def _rnea_body(mi, mf, ws, q, v, a, fext, tau):
    st = _checked_kinematics(mi, mf, ws, q, v, a, fext)
    if st != OK:
        return st
    _rnea_from_kinematics(mi, mf, ws, q, v[::1], a[::1], fext, np.bool_(False), tau)
    return OK if _all_finite(tau) else OVERFLOW          # finite input, too large for float64


@njit(cache=True)
def _rnea_kernel(mi, mf, ws, q, v, a, fext, tau):
    return _rnea_body(mi, mf, ws, q, v, a, fext, tau)


# the body inlined, not a call of _rnea_kernel: a compiled level between this entry and the passes
# would link their code and have LLVM optimize and emit it again (0.5 s of a cold first rnea)
@njit(cache=True)
def _rnea_packed(buf, q, v, a, tau):
    """``_rnea_kernel`` without external forces on a model packed in one buffer (Model._packed)."""
    mi, mf, ws = _unpack_packed(buf)
    return _rnea_body(mi, mf, ws, q, v, a, _no_forces(buf), tau)


# a model without springs whose joints are all revolute, prismatic, free, spherical (or fixed):
# no spring code compiled (the springs' kernel was a sixth of a cold first rnea's compile), the
# pass without jcalc's rarer kinds, the poses in the world and the support-only loop (a third of
# it, issue 28), and the force passes without gravity added or external forces (None: pruned)
@njit(cache=True)
def _rnea_packed_plain(buf, q, v, a, tau):
    """``_rnea_packed`` for a model whose joints have no springs and are all revolute,
    prismatic, free, spherical or fixed (``Model._plain_rnea``)."""
    mi, mf, ws = _unpack_packed(buf)
    st = _check_inputs(mi, q, v, a, True)
    if st != OK:
        return st
    _kinematics_pass_common(mi, mf, ws, q, v, a, np.int64(ACC), np.bool_(True))
    _force_passes(mi, mf, ws, v[::1], a[::1], None, None, tau)
    return OK if _all_finite(tau) else OVERFLOW


# inlined, not compiled apart and called: a call cost RNEA 2-3 % (Panda, the URDF human), for
# 0.35 s less of a cold first rnea's compile
@njit(inline="always", cache=True)
def _force_passes(mi, mf, ws, v, a, fext, add_gravity, tau):
    """The force passes of RNEA on the velocities and accelerations a kinematics pass left in
    ``ws``.  With ``add_gravity`` that pass ran without gravity, and gravity is added here, as
    each body's acceleration [-R_i^T g; 0] (the world's a_0 = [-g; 0] seen in body i).
    ``add_gravity`` and ``fext`` None (the plain rnea's) are False and no force, their code
    pruned by Numba before typing."""
    parent, jtype, qadr, vadr, jnq, jnv, _, _, _, _, inertia, armature, g = _unpack_model(mi, mf)
    damping, friction = _unpack_joint_terms(mi, mf)
    nb, nq, nv = _model_sizes(mi)
    oR, op, liR, lip, vel, acc, frc, S, vJ, cJ, I6, pA, U, Dinv, u, tmp, W6, W3 = _unpack_data(ws, nb, nv)
    for i in range(1, nb):
        # f_i = I_i a_i + v_i x* (I_i v_i) - f_ext
        if add_gravity is not None and add_gravity:
            for r in range(3):
                tmp[i, r] = acc[i, r] - (oR[i, 0, r] * g[0] + oR[i, 1, r] * g[1] + oR[i, 2, r] * g[2])
                tmp[i, 3 + r] = acc[i, 3 + r]
            _mat6_vec(inertia[i], tmp[i], frc[i])
        else:
            _mat6_vec(inertia[i], acc[i], frc[i])
        _mat6_vec(inertia[i], vel[i], tmp[i])
        _force_cross_add(vel[i], tmp[i], frc[i])
        if fext is not None and fext.shape[0] > 0:
            for k in range(6):
                frc[i, k] -= fext[i, k]
    for i in range(nb - 1, 0, -1):
        va = vadr[i]
        # tau_i = S_i^T f_i + tau_J
        for d in range(va, va + jnv[i]):
            tau[d] = _dot6(S[d], frc[i]) + _joint_torque(armature[d], damping[d], friction[d], v[d], a[d])
        # f_parent += X_i^* f_i
        if parent[i] > 0:
            _force_act_add(liR[i], lip[i], frc[i], frc[parent[i]])


@njit(cache=True, **_INTERNAL)
def _rnea_from_kinematics(mi, mf, ws, q, v, a, fext, add_gravity, tau):
    """The force passes, then tau_J += tau_s, the joints' springs (linkdyn._kernels.springs)."""
    _force_passes(mi, mf, ws, v, a, fext, add_gravity, tau)
    nb, nq, nv = _model_sizes(mi)
    W3 = _unpack_data(ws, nb, nv)[-1]
    _add_spring_torques(mi, mf, q, 1.0, W3[0], W3[1, 0], tau)


@njit(parallel=True, cache=True)
def _rnea_batch(mi, mf, WS, Q, V, A, F, TAU, status):
    nt, n = WS.shape[0], TAU.shape[0]
    for t in prange(nt):
        lo, hi = _chunk(t, nt, n)
        for k in range(lo, hi):
            status[k] = _rnea_kernel(mi, mf, _pick(WS, t), _pick(Q, k), _pick(V, k), _pick(A, k), _pick(F, k), _pick(TAU, k))


_rnea = Entry(_rnea_kernel, MI, MF, WS, VEC, VEC, VEC, FEXT, OUT1)
_rnea_entry = Entry(_rnea_packed, PACKED, VEC, VEC, VEC, OUT1)
_rnea_plain_entry = Entry(_rnea_packed_plain, PACKED, VEC, VEC, VEC, OUT1)

_empty = np.empty


def _run(model, q, v, a, fext):
    return _run_states(model, as_states(model, q=q, v=v, a=a), fext)


def _run_states(model, args, fext=None):
    F = as_fext(model, fext, args.batch)
    return run(model, (_rnea, _rnea_batch), (model.nv,), args, ("q", "v", "a"), (F,), 1, fext=fext)


@reduced("force")
def rnea(model: Model, q: ArrayLike, v: ArrayLike, a: ArrayLike, fext: ArrayLike | None = None) -> NDArray[np.float64]:
    """Joint torques ``tau = M(q) a + b(q, v) - sum_i J_i^T f_i^ext`` by the recursive
    Newton-Euler algorithm (with the model's armature, damping and friction, if any).

    q (nq,) or (N, nq); v, a (nv,) or (N, nv); fext (nbody, 6) or (N, nbody, 6): external
    spatial force [f; n] on each body, in the body frame (row 0, the world, is ignored).
    Returns tau (nv,) or (N, nv).
    """
    if (fext is None and type(q) is _ND and type(v) is _ND and type(a) is _ND and q.dtype is _F64
            and v.dtype is _F64 and a.dtype is _F64 and q.ndim == 1 and v.ndim == 1 and a.ndim == 1):
        tau = _empty(model.nv)
        if (_rnea_plain_entry if model._plain_rnea else _rnea_entry).fn(model._packed, q, v, a, tau) == OK:
            return tau
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return rnea.on_full_tree(model, q, v, a, fext)
    return _run(model, q, v, a, fext)


@reduced("force")
def nonlinear_effects(model: Model, q: ArrayLike, v: ArrayLike) -> NDArray[np.float64]:
    """b(q, v) = C(q, v) v + g(q) (+ the joints' damping and friction torques, if the model
    has any): RNEA with zero acceleration, so that ``rnea(q, v, a) = crba(q) a + b(q, v)``."""
    if (type(q) is _ND and type(v) is _ND and q.dtype is _F64 and v.dtype is _F64 and q.ndim == 1
            and v.ndim == 1):
        tau = _empty(model.nv)
        if (_rnea_plain_entry if model._plain_rnea else _rnea_entry).fn(model._packed, q, v, model._zero_v, tau) == OK:
            return tau
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return nonlinear_effects.on_full_tree(model, q, v)
    args = as_states(model, q=q, v=v)
    args.a = np.zeros_like(args.v)
    return _run_states(model, args)


@reduced("force")
def generalized_gravity(model: Model, q: ArrayLike) -> NDArray[np.float64]:
    """g(q): the joint torques that hold the model still against gravity (and the joints'
    springs, if the model has any: g = dU/dq with U :func:`linkdyn.potential_energy`)."""
    if type(q) is _ND and q.dtype is _F64 and q.ndim == 1:
        tau = _empty(model.nv)
        if (_rnea_plain_entry if model._plain_rnea else _rnea_entry).fn(model._packed, q, model._zero_v, model._zero_v, tau) == OK:
            return tau
    if model._full is not None:          # a geared model (linkdyn.model.gears)
        return generalized_gravity.on_full_tree(model, q)
    args = as_states(model, q=q)
    args.v = args.a = np.zeros(model.nv if args.batch is None else (1, model.nv))
    return _run_states(model, args)
