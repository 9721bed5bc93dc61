"""The structure-varying scenes of Nakamura and Yamane (2000) sec. 5: wall time per simulated second at dt = 1 ms,
and the per-step forward dynamics of the high-bar figure against Pinocchio's
``constraintDynamics`` with the same closures, in one run on one machine.

    python benchmarks/bench_scenes.py

A scene's step is RK4 (four constrained forward dynamics) plus the projection of (q, v) back
onto the loops and, for the landing, a closed-chain computed-torque controller.  Pinocchio
has no revolute loop closure, so the per-step comparison uses the hands on spherical joints
(CONTACT_3D) and welded (CONTACT_6D); the revolute grips of the real scene are timed alone.
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
from bench_core import median_time  # noqa: E402
from bench_loops import case  # noqa: E402
from linkdyn.models import scenarios  # noqa: E402

SCENES = {"highbar": (scenarios.high_bar_simulation, 3.0), "swing": (scenarios.swing_simulation, 4.0),
          "drop": (scenarios.drop_simulation, 2.0)}


def scene_times(repeats):
    print(f"{'scene':<10}{'nv':>4}{'loops at start':>15}{'simulated':>11}{'wall / simulated s':>20}{'per step':>11}")
    for name, (make, duration) in SCENES.items():
        walls = []
        for _ in range(repeats):
            sim = make(dt=1e-3, record_every=10)
            nv, nl = sim.model.nv, sim.model.nloops
            t0 = time.perf_counter()
            sim.run(until=duration, progress=False)
            walls.append(time.perf_counter() - t0)
        w = statistics.median(walls)
        print(f"{name:<10}{nv:>4}{nl:>15}{duration:>9.1f} s{w / duration:>18.3f} s{w / duration:>10.3f}ms")


def main(argv=None):
    import pinocchio as pin
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=500)
    p.add_argument("--blocks", type=int, default=15)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    print(f"linkdyn {ld.__version__}, pinocchio {pin.__version__}")
    scene_times(args.repeats)
    print()
    print(f"per-step forward dynamics, median of {args.blocks} blocks of {args.calls} (thread CPU time)")
    print(f"{'case':<34}{'nv':>4}{'rows':>5}{'linkdyn':>12}{'pinocchio':>12}{'ratio':>8}{'max diff':>11}")
    rng = np.random.default_rng(0)
    for grip, kind in (("spherical", pin.ContactType.CONTACT_3D), ("weld", pin.ContactType.CONTACT_6D)):
        m, q = scenarios.on_bar(grip=grip)
        pairs = [(f"{s}_grip", "world", ld.frame_pose(m, q, f"{s}_grip")) for s in ("l", "r")]
        case(f"high-bar figure ({grip} grips)", m, q, pairs, kind, args.calls, args.blocks, rng)
    m, q = scenarios.high_bar()
    an = ld.loops.analyze(m, q)
    v = an.W @ rng.standard_normal(an.dof)
    tau = np.zeros(m.nv)
    t = median_time(lambda: ld.loops.constrained_dynamics(m, q, v, tau), args.calls, args.blocks)
    print(f"{'high-bar figure (revolute grips)':<34}{m.nv:>4}{10:>5}{t * 1e6:>10.2f}us{'-':>12}")


if __name__ == "__main__":
    main()
