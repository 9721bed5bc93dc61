"""Closed-chain forward dynamics per step: linkdyn's multiplier-form kernel against Pinocchio's
``constraintDynamics`` with loop-closure constraint models, in one run on one machine.

    python benchmarks/bench_loops.py

Cases (the same mechanism and closures in both libraries, checked before timing):
* the four-bar (linkdyn: a revolute cut joint; Pinocchio: a 3-D point constraint at the same
  joint, which for a planar linkage is the same mechanism);
* the 40-DoF figure of Nakamura and Yamane (2000) Fig. 13 (46 velocities) holding a bar with both hands, two
  loops: spherical grips (Pinocchio CONTACT_3D) and welded grips (CONTACT_6D).
Times are the median over blocks of the thread CPU time per call (blocks alternate between
the libraries).  Needs ``pip install -e '.[bench]'``.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import linkdyn as ld  # noqa: E402
from bench_core import paired_times  # noqa: E402
from linkdyn.interop import pinocchio_q, pinocchio_v, to_pinocchio  # noqa: E402
from linkdyn.models import mechanisms as mech  # noqa: E402
from linkdyn.models import scenarios  # noqa: E402


def pin_setup(model, kind, pairs):
    """Pinocchio model, data and constraint models for ``pairs`` of (frame, frame-or-'world')."""
    import pinocchio as pin
    pm, jid = to_pinocchio(model)
    cms = []
    for fa, fb, pose_b in pairs:
        ka, kb = model.frame_id(fa), (None if fb == "world" else model.frame_id(fb))
        pa = pin.SE3(np.array(model.frame_R[ka]), np.array(model.frame_p[ka]))
        ja = jid[int(model.frame_body[ka])]
        if kb is None:
            jb, pb = 0, pin.SE3(pose_b[:3, :3], pose_b[:3, 3])
        else:
            jb = jid[int(model.frame_body[kb])]
            pb = pin.SE3(np.array(model.frame_R[kb]), np.array(model.frame_p[kb]))
        cms.append(pin.RigidConstraintModel(kind, pm, ja, pa, jb, pb, pin.ReferenceFrame.LOCAL))
    pd = pm.createData()
    cmv, cdv = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for c in cms:
        cmv.append(c)
        cdv.append(c.createData())
    pin.initConstraintDynamics(pm, pd, cmv, cdv)
    return pm, pd, cmv, cdv


def case(label, model, q, pairs, pin_kind, calls, blocks, rng):
    import pinocchio as pin
    an = ld.loops.analyze(model, q)
    v = an.W @ rng.standard_normal(an.dof)
    tau = np.zeros(model.nv)
    real = [d for d in range(model.nv) if not model.is_virtual[model.dof_body[d]]]
    tau[real] = rng.standard_normal(len(real))
    pm, pd, cms, cds = pin_setup(model, pin_kind, pairs)
    qp, vp, tp = pinocchio_q(model, q), pinocchio_v(model, v), pinocchio_v(model, tau)
    prox = pin.ProximalSettings(1e-12, 1e-10, 20)
    a_ld = ld.loops.constrained_dynamics(model, q, v, tau)
    a_pin = pin.constraintDynamics(pm, pd, qp, vp, tp, cms, cds, prox)
    err = np.abs(pinocchio_v(model, a_ld) - a_pin).max() / max(1.0, np.abs(a_pin).max())
    t_ld, t_pin = paired_times(lambda: ld.loops.constrained_dynamics(model, q, v, tau),
                               lambda: pin.constraintDynamics(pm, pd, qp, vp, tp, cms, cds, prox),
                               calls, blocks, clock=time.thread_time)
    rows = (3 if pin_kind == pin.ContactType.CONTACT_3D else 6) * len(pairs)
    flag = "" if err < 1e-8 else f"  * not comparable: m = {an.m} of {rows} rows independent, Pinocchio's proximal " \
                                 "solver does not converge to the constrained accelerations"
    print(f"{label:<34}{model.nv:>4}{rows:>5}"
          f"{t_ld * 1e6:>10.2f}us{t_pin * 1e6:>10.2f}us{t_ld / t_pin:>8.2f}{err:>11.1e}{flag}")


def main(argv=None):
    import pinocchio as pin
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=500)
    p.add_argument("--blocks", type=int, default=15)
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"linkdyn {ld.__version__}, pinocchio {pin.__version__}; median of {args.blocks} blocks of {args.calls}")
    print(f"{'case':<34}{'nv':>4}{'rows':>5}{'linkdyn':>12}{'pinocchio':>12}{'ratio':>8}{'max diff':>11}")
    fb = mech.four_bar()
    q = ld.loops.close_loops(fb, [0.8, -1.0, 1.9, 0.5], hold=["crank"])
    case("four-bar (revolute cut / 3-D)", fb, q, [("coupler_end", "rocker_tip", None)], pin.ContactType.CONTACT_3D,
         args.calls, args.blocks, rng)
    for grip, kind in (("spherical", pin.ContactType.CONTACT_3D), ("weld", pin.ContactType.CONTACT_6D)):
        m, q = scenarios.figure_on_bar_40(grip)
        pairs = [(f"{s}_grip", "world", ld.frame_pose(m, q, f"{s}_grip")) for s in ("l", "r")]
        case(f"40-DoF figure on a bar ({grip})", m, q, pairs, kind, args.calls, args.blocks, rng)


if __name__ == "__main__":
    main()
