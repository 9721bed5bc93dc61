"""Side-by-side timings of linkdyn and Pinocchio, in one run on one machine.

    python benchmarks/bench_core.py                 # all four robots, per call and batched
    python benchmarks/bench_core.py --robots ur5 --batch 0

Per call: each function is called from Python on one state, in blocks that alternate
between the two libraries; the median over blocks of the thread CPU time per call is
reported (the machines are shared and noisy: medians and ratios, never single timings).  Batched: N states through one call, linkdyn's compiled
parallel loop against Pinocchio's ``rneaInParallel`` / ``abaInParallel`` with the same number
of threads.  Needs ``pip install -e '.[bench]'``.
"""
from __future__ import annotations

import os

# Both libraries run their parallel loops on OpenMP, whose idle threads spin for a while after
# each parallel region; interleaved timings then measure one library's spinning threads
# stealing the CPU from the other.  Passive waiting (set before either runtime loads) removes it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import statistics
import time

import numba
import numpy as np

import linkdyn as ld
from linkdyn.models import ROBOTS, example_robot_data_dir

BENCH_ROBOTS = ("ur5", "panda", "talos", "human")


def median_time(fn, calls: int, blocks: int) -> float:
    """Median over ``blocks`` of the thread CPU seconds per call of ``fn``."""
    fn()
    times = []
    for _ in range(blocks):
        t0 = time.thread_time()
        for _ in range(calls):
            fn()
        times.append((time.thread_time() - t0) / calls)
    return statistics.median(times)


def paired_times(ours, theirs, calls: int, blocks: int, clock=time.perf_counter):
    """Median seconds per call of ``ours`` and of ``theirs``, timed in alternating blocks of
    ``calls`` calls, so that a load that comes and goes on a shared machine falls on both.
    Single-thread timings use the thread's CPU clock (time lost to other processes while
    this one waits for a core is not counted); parallel ones the wall clock."""
    ours(), theirs()
    t_ours, t_theirs = [], []
    for _ in range(blocks):
        for fn, out in ((ours, t_ours), (theirs, t_theirs)):
            t0 = clock()
            for _ in range(calls):
                fn()
            out.append((clock() - t0) / calls)
    return statistics.median(t_ours), statistics.median(t_theirs)


def load_pair(name):
    import pinocchio as pin
    rel, floating = ROBOTS[name]
    path = str(example_robot_data_dir() / rel)
    pmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    return ld.models.example_robot(name), pmodel


def to_pin_q(model, pmodel, q):
    """linkdyn configuration(s) -> Pinocchio's (continuous joints use (cos, sin) there)."""
    q = np.atleast_2d(q)
    out = np.zeros((q.shape[0], pmodel.nq))
    for j in range(1, pmodel.njoints):
        jm, name = pmodel.joints[j], pmodel.names[j]
        sl = model.q_slice(name)
        if jm.nq == 2 and jm.nv == 1:
            out[:, jm.idx_q], out[:, jm.idx_q + 1] = np.cos(q[:, sl.start]), np.sin(q[:, sl.start])
        else:
            out[:, jm.idx_q:jm.idx_q + jm.nq] = q[:, sl]
    return out


def states(model, n, seed=0):
    rng = np.random.default_rng(seed)
    q = ld.random_configuration(model, rng, size=n)
    return q, rng.standard_normal((n, model.nv)), rng.standard_normal((n, model.nv))


def per_call(name, calls, blocks):
    import pinocchio as pin
    model, pmodel = load_pair(name)
    pdata = pmodel.createData()
    q, v, a = (x[0] for x in states(model, 1))
    qp = to_pin_q(model, pmodel, q)[0]
    tau = ld.rnea(model, q, v, a)
    frame = model.body_names[-1]                   # a URDF link: a frame of the same name in both
    fid = pmodel.getFrameId(frame)
    rows = []
    for label, ours, theirs in (
        ("rnea", lambda: ld.rnea(model, q, v, a), lambda: pin.rnea(pmodel, pdata, qp, v, a)),
        ("crba", lambda: ld.crba(model, q), lambda: pin.crba(pmodel, pdata, qp)),
        ("aba", lambda: ld.aba(model, q, v, tau), lambda: pin.aba(pmodel, pdata, qp, v, tau)),
        ("jacobians", lambda: ld.joint_jacobians(model, q), lambda: pin.computeJointJacobians(pmodel, pdata, qp)),
        ("frame jac", lambda: ld.jacobian(model, q, frame, "world"),
         lambda: pin.computeFrameJacobian(pmodel, pdata, qp, fid, pin.WORLD)),
    ):
        t_ld, t_pin = paired_times(ours, theirs, calls, blocks, clock=time.thread_time)
        rows.append((name, f"{model.nv}", label, "1", t_ld * 1e6, t_pin * 1e6))
    return rows


def batched(name, n, threads, blocks):
    import pinocchio as pin
    model, pmodel = load_pair(name)
    pool = pin.ModelPool(pmodel, threads)
    Q, V, A = states(model, n, seed=1)
    QP = np.asfortranarray(to_pin_q(model, pmodel, Q).T)        # Pinocchio: one state per column
    VP, AP = np.asfortranarray(V.T), np.asfortranarray(A.T)
    TAU = ld.rnea(model, Q, V, A)
    TP = np.asfortranarray(TAU.T)
    out = np.asfortranarray(np.empty((pmodel.nv, n)))
    numba.set_num_threads(threads)
    rows = []
    for label, ours, theirs in (
        ("rnea", lambda: ld.rnea(model, Q, V, A), lambda: pin.rneaInParallel(threads, pool, QP, VP, AP, out)),
        ("aba", lambda: ld.aba(model, Q, V, TAU), lambda: pin.abaInParallel(threads, pool, QP, VP, TP, out)),
    ):
        t_ld, t_pin = paired_times(ours, theirs, 1, blocks)
        rows.append((name, f"{model.nv}", label, f"{n}x{threads}t", t_ld * 1e3, t_pin * 1e3))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robots", nargs="+", default=list(BENCH_ROBOTS), choices=sorted(ROBOTS))
    p.add_argument("--calls", type=int, default=2000, help="calls per timing block (per-call timings)")
    p.add_argument("--blocks", type=int, default=15, help="timing blocks; the median is reported")
    p.add_argument("--batch", type=int, default=10_000, help="states per batched call (0: skip)")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)

    print(f"linkdyn {ld.__version__}, numba {numba.__version__}; median of {args.blocks} blocks")
    print(f"{'robot':<8}{'nv':>4}  {'function':<10}{'states':>12}{'linkdyn':>12}{'pinocchio':>12}{'ratio':>8}")
    for name in args.robots:
        rows = per_call(name, args.calls, args.blocks)
        if args.batch:
            rows += batched(name, args.batch, args.threads, args.blocks)
        for robot, nv, label, n, t_ld, t_pin in rows:
            unit = "us" if n == "1" else "ms"
            print(f"{robot:<8}{nv:>4}  {label:<10}{n:>12}{t_ld:>10.2f}{unit}{t_pin:>10.2f}{unit}{t_ld / t_pin:>8.2f}")


if __name__ == "__main__":
    main()
