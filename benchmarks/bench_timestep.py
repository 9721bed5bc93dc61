"""The time-stepping scheme's step of a closed chain, compiled (``TimeStepping._step_compiled``: one
Numba call, the loops included) and in Python (``TimeStepping._step_python``, which geared models
take), on the four-bar with a crank stop and on the high-bar figure, per step, median of blocks.

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


def time_steps(sim, steps, blocks, python_only=False):
    """(compiled, Python) seconds per step from one state, the blocks of the two alternating (the
    machine is shared: both see the same load); compiled None with ``python_only`` or where the
    model takes the Python step."""
    sim.run(until=0.05, progress=False)          # compile, warm start
    uni = sim._uni
    q, v, tau, dt = sim.q.copy(), sim.v.copy(), np.zeros(sim.model.nv), sim.dt
    compiled = uni._compiled and not python_only
    if compiled:
        uni._step_compiled(q, v, tau, dt, 0.0)
    per = {True: [], False: []}
    warm = uni.warm.copy()
    for _ in range(blocks):
        for c in ((True, False) if compiled else (False,)):
            uni.warm[:] = warm
            t0 = time.perf_counter()
            for _ in range(steps):
                uni._gaps = None
                if c:
                    uni._step_compiled(q, v, tau, dt, 0.0)
                else:
                    uni._step_python(q, v, tau, dt, 0.0)
            per[c].append((time.perf_counter() - t0) / steps)
    return (statistics.median(per[True]) if compiled else None), statistics.median(per[False])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--blocks", type=int, default=9)
    p.add_argument("--python-only", action="store_true", help="time the Python step only")
    args = p.parse_args(argv)
    print(f"linkdyn {ld.__version__}; median of {args.blocks} blocks of {args.steps} steps, us per step")
    print(f"{'case':<12}{'nv':>4}{'loops':>6}{'compiled':>11}{'Python':>11}")
    for name, make in (("four-bar", four_bar), ("high bar", high_bar)):
        sim = make()
        c, py = time_steps(sim, args.steps, args.blocks, args.python_only)
        cs = "-" if c is None else f"{c * 1e6:.1f}"
        print(f"{name:<12}{sim.model.nv:>4}{sim.model.nloops:>6}{cs:>11}{py * 1e6:>11.1f}")


if __name__ == "__main__":
    main()
