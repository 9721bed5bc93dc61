"""Forward dynamics of geared models (mimic joints), linkdyn against Pinocchio, in one run.

    python benchmarks/bench_gears.py
    python benchmarks/bench_gears.py --blocks 31

linkdyn's ``ld.aba`` on a model in reduced coordinates (``load_urdf(..., mimic=True)``, the
default) is the articulated-body recursion with the couplings folded in (tazz, "Formulation of
Featherstone's algorithm", eqs. 30-40).  Pinocchio 4.1's ``aba`` refuses mimic joints ("This
algorithm does not support Joint Mimic type"), so its forward dynamics of the same model is
``crba`` + ``nonLinearEffects`` + a Cholesky solve (``scipy.linalg.cho_solve``, what a Pinocchio
user writes); both are checked to agree before they are timed.  Timing as in ``bench_core.py``:
blocks alternating between the two, the median over blocks of the thread CPU time per call.
Also printed: linkdyn's ABA on the same robot without couplings (``mimic=False``), for scale.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")     # as in bench_core.py

import argparse
import time
import warnings

import numba
import numpy as np
import scipy.linalg

import linkdyn as ld
from linkdyn.models import example_robot_data_dir

from bench_core import paired_times

#: robots of example-robot-data with <mimic> tags that Pinocchio 4.1 loads with mimic=True
ROBOTS = {"panda": "panda_description/urdf/panda.urdf", "baxter": "baxter_description/urdf/baxter.urdf"}


def per_call(name, calls, blocks):
    import pinocchio as pin
    path = str(example_robot_data_dir() / ROBOTS[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ld.load_urdf(path)
        plain = ld.load_urdf(path, mimic=False)
    pmodel = pin.buildModelFromUrdf(path, mimic=True)
    assert model.gears and (model.nq, model.nv) == (pmodel.nq, pmodel.nv)
    rng = np.random.default_rng(0)
    q = ld.random_configuration(model, rng)
    v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
    pdata = pmodel.createData()

    def pin_fd():
        M = pin.crba(pmodel, pdata, q)          # the upper triangle, as cho_factor reads it
        b = pin.nonLinearEffects(pmodel, pdata, q, v)
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(M, check_finite=False), tau - b, check_finite=False)

    M = pin.crba(pmodel, pmodel.createData(), q)   # Pinocchio 4.1's crba on mimic models: a fresh Data is exact
    M = np.triu(M) + np.triu(M, 1).T
    want = np.linalg.solve(M, tau - pin.nonLinearEffects(pmodel, pmodel.createData(), q, v))
    got = ld.aba(model, q, v, tau)
    assert np.allclose(got, want, rtol=1e-8, atol=1e-8 * max(1.0, np.abs(want).max())), np.abs(got - want).max()
    t_ld, t_pin = paired_times(lambda: ld.aba(model, q, v, tau), pin_fd, calls, blocks, clock=time.thread_time)
    qp = ld.random_configuration(plain, rng)
    vp, tp = rng.standard_normal(plain.nv), rng.standard_normal(plain.nv)
    t_plain, _ = paired_times(lambda: ld.aba(plain, qp, vp, tp), lambda: None, calls, blocks, clock=time.thread_time)
    return name, model.nv, plain.nv, t_ld * 1e6, t_pin * 1e6, t_plain * 1e6


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robots", nargs="+", default=list(ROBOTS), choices=sorted(ROBOTS))
    p.add_argument("--calls", type=int, default=500, help="calls per timing block")
    p.add_argument("--blocks", type=int, default=15, help="timing blocks; the median is reported")
    args = p.parse_args(argv)
    print(f"linkdyn {ld.__version__}, numba {numba.__version__}; per call, median of {args.blocks} blocks "
          f"of {args.calls} calls (thread CPU time)")
    print(f"{'robot':<8}{'nv':>4}{'nv free':>9}  {'linkdyn aba':>12}{'pinocchio':>12}{'ratio':>8}"
          f"{'aba, no gears':>15}")
    for name in args.robots:
        robot, nv, nvf, t_ld, t_pin, t_plain = per_call(name, args.calls, args.blocks)
        print(f"{robot:<8}{nv:>4}{nvf:>9}  {t_ld:>10.2f}us{t_pin:>10.2f}us{t_ld / t_pin:>8.2f}{t_plain:>13.2f}us")


if __name__ == "__main__":
    main()
