"""Forward dynamics under a user constraint per call: linkdyn's ``constrained_dynamics`` (and a
``constraints.prepare``-d call) against Pinocchio's ``constraintDynamics``, in one run on one
machine.

    python benchmarks/bench_constraints.py

Cases: the PUMA 560 (``ld.models.puma560()``, rebuilt in Pinocchio by ``to_pinocchio``, with the
same armature) and the Franka Panda (the same URDF loaded by both libraries), each with

* a point held still (linkdyn ``PointFixed`` on the tool / hand frame; Pinocchio ``CONTACT_3D``);
* a frame held still (linkdyn ``FrameFixed``; Pinocchio ``CONTACT_6D``),

both with the reference frame LOCAL_WORLD_ALIGNED in Pinocchio (its multipliers are then
linkdyn's: world axes at the frame's origin) and no Baumgarte stabilization in either library
(``initConstraintDynamics`` once, ``constraintDynamics`` per call).  The state is random, with a
velocity that keeps the constraint (in its null space: for a CONTACT_6D Pinocchio holds the
spatial acceleration, linkdyn the classical one, the same there); before timing, q'' and the
multipliers of the two libraries are compared ("max diff", relative).  Times are the median over
blocks of the thread CPU time per call, the blocks alternating between the three callers.
Needs ``pip install -e '.[bench]'``.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import linkdyn as ld  # noqa: E402
from bench_core import load_pair, to_pin_q  # noqa: E402
from linkdyn import constraints as C  # noqa: E402
from linkdyn.interop import to_pinocchio  # noqa: E402


def interleaved_times(fns, calls: int, blocks: int, clock=time.thread_time):
    """Median seconds per call of each of ``fns``, timed in blocks of ``calls`` calls that
    alternate between them (a load that comes and goes falls on all of them alike)."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(blocks):
        for fn, out in zip(fns, times):
            t0 = clock()
            for _ in range(calls):
                fn()
            out.append((clock() - t0) / calls)
    return [statistics.median(t) for t in times]


def robots():
    """(label, linkdyn model, Pinocchio model, q -> Pinocchio q, frame)."""
    puma = ld.models.puma560()
    pm, _ = to_pinocchio(puma)
    pm.armature[:] = np.asarray(puma.armature)
    yield "puma560", puma, pm, (lambda q: q), "tool"
    panda, pp = load_pair("panda")
    yield "panda", panda, pp, (lambda q, m=panda, p=pp: to_pin_q(m, p, q)[0]), "panda_hand"


def case(label, model, pm, pin_q, frame, kind, calls, blocks, rng):
    import pinocchio as pin
    pd = pm.createData()
    q = ld.random_configuration(model, rng)
    qp = pin_q(q)
    cons = [C.PointFixed(frame)] if kind == "3d" else [C.FrameFixed(frame)]
    J = cons[0].terms(model, q, np.zeros(model.nv))[0]
    null = np.linalg.svd(J)[2][J.shape[0]:].T
    v = null @ rng.standard_normal(null.shape[1])              # a velocity that keeps the constraint
    tau = rng.standard_normal(model.nv)
    fid = pm.getFrameId(frame)
    fr = pm.frames[fid]
    pin.framesForwardKinematics(pm, pd, qp)
    ctype = pin.ContactType.CONTACT_3D if kind == "3d" else pin.ContactType.CONTACT_6D
    cm = pin.RigidConstraintModel(ctype, pm, fr.parentJoint, fr.placement, 0, pd.oMf[fid],
                                  pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    cms, cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    cms.append(cm)
    cds.append(cm.createData())
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-12, 1e-10, 20)
    prepared = C.prepare(model, cons)
    res = ld.constrained_dynamics(model, q, v, tau, cons)
    a_pin = pin.constraintDynamics(pm, pd, qp, v, tau, cms, cds, prox)
    lam_pin = np.array(cds[0].contact_force.vector)[:J.shape[0]]
    err = max(np.abs(res.qdd - a_pin).max() / max(1.0, np.abs(a_pin).max()),
              np.abs(res.forces[0] - lam_pin).max() / max(1.0, np.abs(lam_pin).max()))
    t_ld, t_prep, t_pin = interleaved_times(
        (lambda: ld.constrained_dynamics(model, q, v, tau, cons), lambda: prepared(q, v, tau),
         lambda: pin.constraintDynamics(pm, pd, qp, v, tau, cms, cds, prox)), calls, blocks)
    name = f"{label} {'PointFixed / CONTACT_3D' if kind == '3d' else 'FrameFixed / CONTACT_6D'}"
    print(f"{name:<34}{model.nv:>4}{J.shape[0]:>5}{t_ld * 1e6:>10.2f}us{t_prep * 1e6:>10.2f}us"
          f"{t_pin * 1e6:>10.2f}us{t_ld / t_pin:>8.2f}{t_prep / t_pin:>8.2f}{err:>11.1e}")


def main(argv=None):
    import pinocchio as pin
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--blocks", type=int, default=15)
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"linkdyn {ld.__version__}, pinocchio {pin.__version__}; median of {args.blocks} blocks of {args.calls}")
    print(f"{'case':<34}{'nv':>4}{'rows':>5}{'linkdyn':>12}{'prepared':>12}{'pinocchio':>12}"
          f"{'ratio':>8}{'prep.':>8}{'max diff':>11}")
    for label, model, pm, pin_q, frame in robots():
        for kind in ("3d", "6d"):
            case(label, model, pm, pin_q, frame, kind, args.calls, args.blocks, rng)


if __name__ == "__main__":
    main()
