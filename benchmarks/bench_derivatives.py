"""Analytical derivatives of the dynamics, linkdyn against Pinocchio, in one run on one machine.

    python benchmarks/bench_derivatives.py                  # ur5, panda, talos, human
    python benchmarks/bench_derivatives.py --robots ur5 --blocks 31

Per call from Python on one state: ``ld.rnea_derivatives`` against Pinocchio's
``computeRNEADerivatives`` and ``ld.aba_derivatives`` against ``computeABADerivatives``
(Carpentier and Mansard 2018), without external forces, after checking that the two agree; timed
as in ``bench_core.py``: blocks that alternate between the two libraries, the median over blocks
of the thread CPU time per call, and the ratio linkdyn / Pinocchio.  Needs
``pip install -e '.[bench]'``.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")     # as in bench_core.py

import argparse
import time

import numba
import numpy as np

import linkdyn as ld
from linkdyn.models import ROBOTS

from bench_core import BENCH_ROBOTS, load_pair, paired_times, states, to_pin_q


def per_call(name, calls, blocks):
    import pinocchio as pin
    model, pmodel = load_pair(name)
    pdata = pmodel.createData()
    q, v, a = (x[0] for x in states(model, 1))
    qp = to_pin_q(model, pmodel, q)[0]
    tau = ld.rnea(model, q, v, a)
    # the two agree before they are timed
    for ours, theirs in ((ld.rnea_derivatives(model, q, v, a), pin.computeRNEADerivatives(pmodel, pdata, qp, v, a)),
                         (ld.aba_derivatives(model, q, v, tau), pin.computeABADerivatives(pmodel, pdata, qp, v, tau))):
        for x, y in zip(ours[:2], theirs[:2]):
            assert np.allclose(x, y, rtol=1e-8, atol=1e-8 * max(1.0, np.abs(y).max()))
    rows = []
    for label, ours, theirs in (
        ("rnea_derivatives", lambda: ld.rnea_derivatives(model, q, v, a),
         lambda: pin.computeRNEADerivatives(pmodel, pdata, qp, v, a)),
        ("aba_derivatives", lambda: ld.aba_derivatives(model, q, v, tau),
         lambda: pin.computeABADerivatives(pmodel, pdata, qp, v, tau)),
    ):
        t_ld, t_pin = paired_times(ours, theirs, calls, blocks, clock=time.thread_time)
        rows.append((name, model.nv, label, t_ld * 1e6, t_pin * 1e6))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robots", nargs="+", default=list(BENCH_ROBOTS), choices=sorted(ROBOTS))
    p.add_argument("--calls", type=int, default=500, help="calls per timing block")
    p.add_argument("--blocks", type=int, default=15, help="timing blocks; the median is reported")
    args = p.parse_args(argv)

    print(f"linkdyn {ld.__version__}, numba {numba.__version__}; per call, median of {args.blocks} blocks "
          f"of {args.calls} calls (thread CPU time)")
    print(f"{'robot':<8}{'nv':>4}  {'function':<18}{'linkdyn':>12}{'pinocchio':>12}{'ratio':>8}")
    for name in args.robots:
        for robot, nv, label, t_ld, t_pin in per_call(name, args.calls, args.blocks):
            print(f"{robot:<8}{nv:>4}  {label:<18}{t_ld:>10.2f}us{t_pin:>10.2f}us{t_ld / t_pin:>8.2f}")


if __name__ == "__main__":
    main()
