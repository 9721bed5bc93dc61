"""Timings of x = H(q)^-1 b, per call from Python on one state, linkdyn against NumPy and Pinocchio.

    python benchmarks/bench_cholesky.py                       # panda, talos, human
    python benchmarks/bench_cholesky.py --robots panda --blocks 9

Every row but one computes the same x from the same (q, b) (checked before timing):

* ``solve_mass_matrix``  linkdyn: CRBA + tree-sparse LTDL + back-substitution, one compiled call
* ``cholesky+solve``     linkdyn: ``mass_matrix_cholesky(model, q).solve(b)`` (factor object, two calls)
* ``aba (v=0, g=0)``     linkdyn: ABA on the model without gravity, O(n)
* ``(crba alone)``       linkdyn: H(q) only, for scale (not a solve)
* ``crba+np.cholesky``   ``ld.crba`` then dense ``numpy.linalg.cholesky`` and two ``numpy.linalg.solve``
* ``crba+scipy cho``     ``ld.crba`` then ``scipy.linalg.cho_factor`` / ``cho_solve`` (LAPACK potrf/potrs)
* ``pin cholesky``       Pinocchio: ``crba`` + ``cholesky.decompose`` + ``cholesky.solve`` (the same
                         tree-sparse factorization, H = U D U^T)
* ``pin computeMinverse``  Pinocchio: H^-1 by its ABA extension, then ``Minv @ b``

The functions run in alternating blocks (a load that comes and goes on a shared machine falls on
all of them); reported: the median over blocks of the thread CPU time per call, and the ratio
to ``solve_mass_matrix``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np
import scipy.linalg

import linkdyn as ld
from linkdyn.dynamics.cholesky import mass_matrix_cholesky, solve_mass_matrix

BENCH_ROBOTS = ("panda", "talos", "human")


def interleaved_medians(fns: dict, calls: int, blocks: int) -> dict:
    """Median thread-CPU seconds per call of every function, timed in alternating blocks."""
    for fn in fns.values():
        fn()
    times = {k: [] for k in fns}
    for _ in range(blocks):
        for k, fn in fns.items():
            t0 = time.thread_time()
            for _ in range(calls):
                fn()
            times[k].append((time.thread_time() - t0) / calls)
    return {k: statistics.median(v) for k, v in times.items()}


def cases(name):
    from bench_core import load_pair, to_pin_q      # the robot pair and q conversion of bench_core
    import pinocchio as pin
    model, pmodel = load_pair(name)
    model0 = ld.models.example_robot(name, gravity=(0.0, 0.0, 0.0))
    pdata = pmodel.createData()
    rng = np.random.default_rng(0)
    q = ld.random_configuration(model, rng)
    b = rng.standard_normal(model.nv)
    qp = to_pin_q(model, pmodel, q)[0]
    # v in Pinocchio's order (the same as linkdyn's on these robots; mapped anyway)
    perm = np.empty(model.nv, dtype=int)
    for j in range(1, pmodel.njoints):
        jm, jn = pmodel.joints[j], pmodel.names[j]
        sl = model.v_slice(jn) if jn in model.joint_names else slice(0, 6)
        perm[jm.idx_v:jm.idx_v + jm.nv] = np.arange(sl.start, sl.stop)
    bp = b[perm].copy()
    zero = np.zeros(model.nv)

    def np_chol():
        C = np.linalg.cholesky(ld.crba(model, q))
        return np.linalg.solve(C.T, np.linalg.solve(C, b))

    def sp_cho():
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(ld.crba(model, q), lower=True,
                                                              check_finite=False), b, check_finite=False)

    def pin_chol():
        pin.crba(pmodel, pdata, qp)
        pin.cholesky.decompose(pmodel, pdata)
        return pin.cholesky.solve(pmodel, pdata, bp)

    def pin_minv():
        return pin.computeMinverse(pmodel, pdata, qp) @ bp

    fns = {
        "solve_mass_matrix": lambda: solve_mass_matrix(model, q, b),
        "cholesky+solve": lambda: mass_matrix_cholesky(model, q).solve(b),
        "aba (v=0, g=0)": lambda: ld.aba(model0, q, zero, b),
        "(crba alone)": lambda: ld.crba(model, q),
        "crba+np.cholesky": np_chol,
        "crba+scipy cho": sp_cho,
        "pin cholesky": pin_chol,
        "pin computeMinverse": pin_minv,
    }
    # all of them compute the same x
    want = np.linalg.solve(ld.crba(model, q), b)
    for k, fn in fns.items():
        if k.startswith("("):
            continue
        x = np.asarray(fn())
        x = x if not k.startswith("pin") else x[np.argsort(perm)]
        err = np.abs(x - want).max() / np.abs(want).max()
        assert err < 1e-8, f"{name}: {k} disagrees ({err:.2e})"
    return model, fns


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robots", nargs="+", default=list(BENCH_ROBOTS))
    p.add_argument("--calls", type=int, default=1000, help="calls per timing block")
    p.add_argument("--blocks", type=int, default=15, help="timing blocks; the median is reported")
    args = p.parse_args(argv)
    import numba
    import pinocchio as pin
    print(f"linkdyn {ld.__version__}, numba {numba.__version__}, numpy {np.__version__}, "
          f"pinocchio {pin.__version__}; thread CPU time per call, median of {args.blocks} blocks of {args.calls}")
    rows = []
    for name in args.robots:
        model, fns = cases(name)
        med = interleaved_medians(fns, args.calls, args.blocks)
        ref = med["solve_mass_matrix"]
        rows.append((name, model.nv, med, ref))
    labels = list(rows[0][2])
    print()
    print("| method | " + " | ".join(f"{n} (nv={nv})" for n, nv, _, _ in rows) + " |")
    print("|---|" + "---|" * len(rows))
    for k in labels:
        cells = [f"{med[k] * 1e6:7.2f} us  x{med[k] / ref:5.2f}" for _, _, med, ref in rows]
        print(f"| {k} | " + " | ".join(cells) + " |")
    print("\n(xR: time relative to linkdyn's solve_mass_matrix on the same robot)")


if __name__ == "__main__":
    main()
