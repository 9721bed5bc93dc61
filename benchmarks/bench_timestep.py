"""The time-stepping scheme's step of a closed chain, compiled (``TimeStepping._step_compiled``: one
Numba call, the loops included; ``TimeStepping.run``: many steps in one call) and in Python
(``TimeStepping._step_python``, which geared models take), on the four-bar with a crank stop and
on the high-bar figure, microseconds per step, median of blocks.

    python benchmarks/bench_timestep.py [--python-only]

Measures what one step costs in linkdyn's own layers (dynamics, loops, contact rows, the
complementarity solve), the number the architecture work of the prepared (unvalidated) layer is
judged by: the public functions validate their input, the simulation's inner calls should not.
No reference library: MuJoCo and Pinocchio have no closed-chain time stepping of this form.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# small dense solves (the step's KKT system): a BLAS thread pool costs more than it gives, and on a
# busy machine its spinning threads make the step's time noise
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import linkdyn as ld  # noqa: E402
from linkdyn.models import scenarios  # noqa: E402


def four_bar():
    m, q0 = ld.models.four_bar_with_stop(0.3)
    return ld.Simulation(m, q0, dt=1e-3, contact_method="timestep")


def high_bar():
    return scenarios.high_bar_simulation(dt=1e-3, contact_method="timestep", posture=None)


def time_steps(sim, steps, blocks, until, python_only=False):
    """Seconds per step from the state at ``until``: (compiled step, compiled run, Python step), the
    blocks of the three alternating (the machine is shared: all see the same load); the compiled
    ones None with ``python_only`` or where the model takes the Python step.  A step is
    ``TimeStepping._step_compiled`` / ``_step_python`` from that one state (as ``Simulation.step``
    takes it, under a controller); the run is ``TimeStepping.run`` (``Simulation.run`` without a
    controller: the steps in one compiled call), ``steps`` steps on from that state."""
    sim.run(until=until, progress=False)          # compile, warm start
    uni = sim._uni
    q, v, tau, dt = sim.q.copy(), sim.v.copy(), np.zeros(sim.model.nv), sim.dt
    compiled = uni._compiled and not python_only
    if compiled:
        uni._step_compiled(q, v, tau, dt, 0.0)
        uni.run(q, v, tau, dt, 1)
    per = {"step": [], "run": [], "python": []}
    warm = uni.warm.copy()
    for _ in range(blocks):
        for c in (("step", "run", "python") if compiled else ("python",)):
            uni.warm[:] = warm
            t0 = time.perf_counter()
            if c == "run":
                qr, vr, n = q, v, 0
                while n < steps:
                    qr, vr, k, _, _ = uni.run(qr, vr, tau, dt, steps - n)
                    if not k:                      # a step the run leaves to the single step
                        qr, vr, _ = uni.step(qr, vr, tau, dt, 0.0)
                        k = 1
                    n += k
            else:
                step = uni._step_compiled if c == "step" else uni._step_python
                for _ in range(steps):
                    uni._gaps = None
                    step(q, v, tau, dt, 0.0)
            per[c].append((time.perf_counter() - t0) / steps)
    return tuple(statistics.median(per[c]) if per[c] else None for c in ("step", "run", "python"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--blocks", type=int, default=9)
    p.add_argument("--python-only", action="store_true", help="time the Python step only")
    args = p.parse_args(argv)
    print(f"linkdyn {ld.__version__}; median of {args.blocks} blocks of {args.steps} steps, us per step")
    print(f"{'case':<24}{'nv':>4}{'loops':>6}{'step':>9}{'run':>9}{'Python':>9}")
    # the four-bar falling (no unit near) and resting on its crank stop; the figure at the bar
    # swinging into its shoulders' limits
    for name, make, until in (("four-bar, falling", four_bar, 0.05), ("four-bar, on its stop", four_bar, 0.4),
                              ("high bar", high_bar, 0.05)):
        sim = make()
        t = time_steps(sim, args.steps, args.blocks, until, args.python_only)
        cols = "".join(f"{'-' if x is None else f'{x * 1e6:.1f}':>9}" for x in t)
        print(f"{name:<24}{sim.model.nv:>4}{sim.model.nloops:>6}{cols}")


if __name__ == "__main__":
    main()
