"""Per-call timings of the manipulator-analysis kernels against Pinocchio, in one run.

    python benchmarks/bench_analysis.py                       # ur5, panda, talos, human
    python benchmarks/bench_analysis.py --robots panda --calls 500

``coriolis_matrix`` against ``computeCoriolisMatrix`` and ``joint_torque_regressor`` against
``computeJointTorqueRegressor``: each called from Python on one state, in blocks; the median
over blocks of the time per call, and the ratio linkdyn / Pinocchio (same pattern as
``bench_core.py``: the machines are shared and noisy, read medians and ratios).  Needs
``pip install -e '.[bench]'``.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")   # see bench_core.py

import argparse
import pathlib
import sys

import numba
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import linkdyn as ld  # noqa: E402
from bench_core import BENCH_ROBOTS, load_pair, median_time, to_pin_q  # noqa: E402
from linkdyn.dynamics.lagrange import coriolis_matrix  # noqa: E402
from linkdyn.dynamics.regressor import joint_torque_regressor  # noqa: E402
from linkdyn.models import ROBOTS  # noqa: E402


def per_call(name, calls, blocks):
    import pinocchio as pin
    model, pmodel = load_pair(name)
    pdata = pmodel.createData()
    rng = np.random.default_rng(0)
    q = ld.random_configuration(model, rng)
    v, a = rng.standard_normal((2, model.nv))
    qp = to_pin_q(model, pmodel, q)[0]
    # the same numbers first (a benchmark of different results would be meaningless)
    C = coriolis_matrix(model, q, v)
    Y = joint_torque_regressor(model, q, v, a)
    for ours, theirs, what in ((C, pin.computeCoriolisMatrix(pmodel, pdata, qp, v), "C"),
                               (Y, pin.computeJointTorqueRegressor(pmodel, pdata, qp, v, a), "Y")):
        err = np.abs(ours - theirs).max() / max(1.0, np.abs(theirs).max())
        if err > 1e-9:
            raise SystemExit(f"{name}: {what} differs from Pinocchio's by {err:.1e}")
    rows = []
    for label, mine, ref in (
        ("coriolis", lambda: coriolis_matrix(model, q, v), lambda: pin.computeCoriolisMatrix(pmodel, pdata, qp, v)),
        ("regressor", lambda: joint_torque_regressor(model, q, v, a),
         lambda: pin.computeJointTorqueRegressor(pmodel, pdata, qp, v, a)),
    ):
        t_ld = median_time(mine, calls, blocks)
        t_pin = median_time(ref, calls, blocks)
        rows.append((name, model.nv, label, t_ld * 1e6, t_pin * 1e6))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robots", nargs="+", default=list(BENCH_ROBOTS), choices=sorted(ROBOTS))
    p.add_argument("--calls", type=int, default=1000, help="calls per timing block")
    p.add_argument("--blocks", type=int, default=15, help="timing blocks; the median is reported")
    args = p.parse_args(argv)

    print(f"linkdyn {ld.__version__}, numba {numba.__version__}; median of {args.blocks} blocks "
          f"of {args.calls} calls, one state per call")
    print(f"{'robot':<8}{'nv':>4}  {'function':<11}{'linkdyn':>12}{'pinocchio':>12}{'ratio':>8}")
    for name in args.robots:
        for robot, nv, label, t_ld, t_pin in per_call(name, args.calls, args.blocks):
            print(f"{robot:<8}{nv:>4}  {label:<11}{t_ld:>10.2f}us{t_pin:>10.2f}us{t_ld / t_pin:>8.2f}")


if __name__ == "__main__":
    main()
