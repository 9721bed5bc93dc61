"""Command line: ``linkdyn demo [robot]``, ``linkdyn info model.urdf``."""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def _demo(args) -> int:
    import linkdyn as ld
    from linkdyn.models import ROBOTS

    model = ld.models.example_robot(args.robot)
    print(model)
    rng = np.random.default_rng(args.seed)
    q0 = ld.neutral(model)
    movable = np.isfinite(model.lower) & np.isfinite(model.upper)
    q0[movable] = 0.5 * (model.lower + model.upper)[movable] + 0.2 * rng.standard_normal(movable.sum())
    q0 = np.clip(q0, np.where(movable, model.lower, -np.inf), np.where(movable, model.upper, np.inf))
    v0 = np.zeros(model.nv)
    floating = ROBOTS[args.robot][1]
    if floating:
        # a tumbling floating base in zero gravity: energy and momentum must both stay put
        model = ld.models.example_robot(args.robot, gravity=(0.0, 0.0, 0.0))
        v0[:6] = [0.2, 0.0, 0.1, 0.5, -0.3, 0.8]
        v0[6:] = 0.5 * rng.standard_normal(model.nv - 6)
        what = "tumbling in zero gravity"
    else:
        what = "swinging under gravity, no torques"
    t0 = time.perf_counter()
    traj = ld.sim.simulate(model, q0, v0, args.duration, args.dt, method="rk4", record_every=max(1, int(0.01 / args.dt)))
    wall = time.perf_counter() - t0
    E = traj.energy
    print(f"\n{args.robot}: {what}; RK4 on the configuration manifold, dt = {args.dt * 1e3:g} ms, "
          f"{args.duration:g} s simulated in {wall:.2f} s of wall time")
    print(f"{'t [s]':>7} {'kinetic [J]':>13} {'potential [J]':>14} {'total [J]':>12}")
    for k in np.linspace(0, len(traj.t) - 1, 6).astype(int):
        print(f"{traj.t[k]:7.3f} {traj.kinetic[k]:13.6f} {traj.potential[k]:14.6f} {E[k]:12.6f}")
    scale = max(np.abs(traj.kinetic).max(), np.abs(traj.potential - traj.potential[0]).max(), 1e-12)
    print(f"energy drift over the run: {np.abs(E - E[0]).max():.3e} J ({np.abs(E - E[0]).max() / scale:.2e} of the energy exchanged)")
    if args.plot:
        _plot(model, traj, args.plot, f"{args.robot}: {what}")
        print(f"plot written to {args.plot}")
    return 0


def _plot(model, traj, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install 'linkdyn[plot]'); no plot written", file=sys.stderr)
        return
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for name in model.joint_names[:8]:
        s = model.q_slice(name)
        if s.stop - s.start == 1:
            ax1.plot(traj.t, traj.q[:, s.start], label=name)
    ax1.set_ylabel("joint angle [rad]")
    ax1.legend(fontsize=7, ncol=2)
    ax2.plot(traj.t, traj.kinetic, label="kinetic")
    ax2.plot(traj.t, traj.potential - traj.potential[0], label="potential (from start)")
    ax2.plot(traj.t, traj.energy - traj.potential[0], "k--", label="total")
    ax2.set_xlabel("t [s]")
    ax2.set_ylabel("energy [J]")
    ax2.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _info(args) -> int:
    import linkdyn as ld
    model = ld.load_urdf(args.path, floating_base=args.floating)
    print(model)
    for i in range(1, model.nbody):
        j = model.joints[i]
        print(f"  {i:3d} {model._joint_names[i]:<30} {j.kind_name:<14} parent {model.body_names[model.parent[i]]:<24}"
              f" q[{model.jnt_qadr[i]}:{model.jnt_qadr[i] + model.jnt_nq[i]}]")
    return 0


def main(argv=None) -> int:
    from linkdyn.models import ROBOTS
    p = argparse.ArgumentParser(prog="linkdyn", description="Dynamics of link systems.")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="simulate a real robot from example-robot-data and report energy conservation")
    d.add_argument("robot", nargs="?", default="ur5", choices=sorted(ROBOTS))
    d.add_argument("--duration", type=float, default=2.0)
    d.add_argument("--dt", type=float, default=1e-3)
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--plot", default=None, help="write a PNG of joint angles and energies")
    d.set_defaults(func=_demo)
    i = sub.add_parser("info", help="load a URDF and list its joints")
    i.add_argument("path")
    i.add_argument("--floating", action="store_true", help="attach the root link by a free joint")
    i.set_defaults(func=_info)
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
