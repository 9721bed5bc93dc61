"""Derivatives of constrained forward dynamics, linkdyn against Pinocchio, in one run on one machine.

    python benchmarks/bench_constrained_derivatives.py
    python benchmarks/bench_constrained_derivatives.py --calls 50 --blocks 7

Per call from Python on one state: ``ld.constrained_dynamics_derivatives`` (geometric
constraints) and ``ld.loops.constrained_dynamics_derivatives`` (closed chains) against
Pinocchio's ``constraintDynamics`` followed by ``computeConstraintDynamicsDerivatives`` (the
forward dynamics is part of both calls: ours solves it inside).  Cases, checked before timing
(the largest difference of the six derivatives, relative to each one's largest entry):

* Solo-12, its four feet held (PointFixed / CONTACT_3D, LOCAL_WORLD_ALIGNED);
* Talos, its two feet welded (FrameFixed / CONTACT_6D, LOCAL_WORLD_ALIGNED), at a velocity that
  keeps the feet still (where the classical and the spatial acceleration rows agree);
* the 40-DoF figure of Nakamura and Yamane (2000) Fig. 13 hanging from a bar by welded grips:
  two loops of ``ld.loops`` against CONTACT_6D in the LOCAL frame (the loop's rows and force are
  those of the virtual link's frame: the same rows, the same lambda).

Timed as in ``bench_core.py``: blocks that alternate between the two libraries, the median over
blocks of the thread CPU time per call, and the ratio linkdyn / Pinocchio.  Both are one compiled
call per state (linkdyn's kernel: the forward solve, RNEA's derivatives with the constraint
forces, the rows' derivatives and the KKT through the sparse factor of M), plus linkdyn's Python
layer (validation, the packing look-up, the output).  Needs ``pip install -e '.[bench]'``.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")     # as in bench_core.py

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import linkdyn as ld  # noqa: E402
from bench_core import paired_times  # noqa: E402
from linkdyn import constraints as C  # noqa: E402
from linkdyn.interop import pinocchio_q, pinocchio_v, to_pinocchio  # noqa: E402
from linkdyn.models import scenarios  # noqa: E402


def pin_contacts(model, ctype, ref, pairs):
    """Pinocchio model, data and constraint models/datas for ``pairs`` (frame, world pose or None)."""
    import pinocchio as pin
    pm, jid = to_pinocchio(model)
    cms, cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for frame, pose in pairs:
        k = model.frame_id(frame)
        pa = pin.SE3(np.array(model.frame_R[k]), np.array(model.frame_p[k]))
        if pose is None:
            cm = pin.RigidConstraintModel(ctype, pm, jid[int(model.frame_body[k])], pa, ref)
        else:
            cm = pin.RigidConstraintModel(ctype, pm, jid[int(model.frame_body[k])], pa, 0,
                                          pin.SE3(pose[:3, :3], pose[:3, 3]), ref)
        cms.append(cm)
        cds.append(cm.createData())
    pd = pm.createData()
    pin.initConstraintDynamics(pm, pd, cms, cds)
    return pm, pd, cms, cds


def rel_diff(ours, theirs):
    return max(np.abs(a - b).max() / max(1.0, np.abs(b).max()) for a, b in zip(ours, theirs))


def case(label, model, ours, q, v, tau, pin_setup, real, calls, blocks):
    """Time ``ours()`` against Pinocchio's constraintDynamics + derivatives; ``real`` the velocity
    indices Pinocchio's model has (all but the virtual links')."""
    import pinocchio as pin
    pm, pd, cms, cds = pin_setup
    prox = pin.ProximalSettings(1e-14, 0.0, 1)
    qp, vp, tp = pinocchio_q(model, q), pinocchio_v(model, v), pinocchio_v(model, tau)

    def theirs():
        pin.constraintDynamics(pm, pd, qp, vp, tp, cms, cds, prox)
        return pin.computeConstraintDynamicsDerivatives(pm, pd, cms, cds, prox)
    D = ours()
    P = [np.array(x) for x in theirs()]
    ix = np.ix_(real, real)
    err = rel_diff([D.ddq_dq[ix], D.ddq_dv[ix], D.ddq_dtau[ix], D.dlambda_dq[:, real], D.dlambda_dv[:, real],
                    D.dlambda_dtau[:, real]], P)
    t_ld, t_pin = paired_times(ours, theirs, calls, blocks, clock=time.thread_time)
    print(f"{label:<46}{model.nv:>4}{D.dlambda_dq.shape[0]:>5}{t_ld * 1e6:>11.1f}us{t_pin * 1e6:>10.1f}us"
          f"{t_ld / t_pin:>8.1f}{err:>11.1e}")
    return t_ld, t_pin, err


def main(argv=None):
    import pinocchio as pin
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=100, help="calls per timing block")
    p.add_argument("--blocks", type=int, default=11, help="timing blocks; the median is reported")
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    LWA, LOCAL = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED, pin.ReferenceFrame.LOCAL
    print(f"linkdyn {ld.__version__}, pinocchio {pin.__version__}; median of {args.blocks} blocks of {args.calls} "
          "calls, thread CPU time")
    print(f"{'case':<46}{'nv':>4}{'rows':>5}{'linkdyn':>13}{'pinocchio':>12}{'ratio':>8}{'max diff':>11}")

    solo = ld.models.example_robot("solo")
    feet = [f for f in solo.frame_names if f.endswith("FOOT")]
    q = ld.random_configuration(solo, rng)
    v, tau = rng.standard_normal((2, solo.nv))
    cons = [C.PointFixed(f) for f in feet]
    case("Solo-12, 4 feet (PointFixed / 3-D)", solo, lambda: ld.constrained_dynamics_derivatives(solo, q, v, tau, cons),
         q, v, tau, pin_contacts(solo, pin.ContactType.CONTACT_3D, LWA, [(f, None) for f in feet]),
         np.arange(solo.nv), args.calls, args.blocks)

    talos = ld.models.example_robot("talos")
    feet = ["left_sole_link", "right_sole_link"]
    q = ld.random_configuration(talos, rng)
    v, tau = rng.standard_normal((2, talos.nv))
    Jc = np.vstack([ld.jacobian(talos, q, f, "local_world_aligned") for f in feet])
    v = v - np.linalg.pinv(Jc) @ (Jc @ v)
    cons2 = [C.FrameFixed(f) for f in feet]
    case("Talos, 2 feet welded (FrameFixed / 6-D)", talos,
         lambda: ld.constrained_dynamics_derivatives(talos, q, v, tau, cons2),
         q, v, tau, pin_contacts(talos, pin.ContactType.CONTACT_6D, LWA, [(f, None) for f in feet]),
         np.arange(talos.nv), args.calls, args.blocks)

    fig, q = scenarios.figure_on_bar_40("weld")
    an = ld.loops.analyze(fig, q)
    v = an.W @ rng.standard_normal(an.dof)
    real = np.array([d for d in range(fig.nv) if not fig.is_virtual[fig.dof_body[d]]])
    tau = np.zeros(fig.nv)
    tau[real] = rng.standard_normal(len(real))
    pairs = [(f"{s}_grip", ld.frame_pose(fig, q, f"{s}_grip")) for s in ("l", "r")]
    case("figure on a bar, welded grips (loops / 6-D)", fig,
         lambda: ld.loops.constrained_dynamics_derivatives(fig, q, v, tau),
         q, v, tau, pin_contacts(fig, pin.ContactType.CONTACT_6D, LOCAL, pairs), real, args.calls, args.blocks)


if __name__ == "__main__":
    main()
