"""Throughput of RNEA on a Dask cluster (linkdyn.distributed) against the in-process batched call.

    python benchmarks/bench_distributed.py              # 10^6 states of the 40-DoF figure
    python benchmarks/bench_distributed.py --full       # 10^7 states, as the issue asks

The states are made on the workers (tiles of a pool of random states, a copy per chunk, so that
the input costs next to nothing and is not shipped), their torques computed by
``linkdyn.distributed.rnea`` and summed per chunk (so that the output is not shipped either):
what is timed is the compiled RNEA plus what Dask adds.  The in-process reference runs the same
chunks one after the other through ``ld.rnea`` with all the cores in Numba's threads.  The
configurations take turns (the machine's load drifts), ``--repeats`` rounds after a warm-up;
the medians are reported.

* 1 worker: one process, one task thread, Numba's threads on every core inside the chunk;
* 2 workers: two processes, one task thread each, one Numba thread each (chunks in parallel);
* the overhead per chunk: the extra wall time per chunk when the same states are cut into
  more chunks, on the 2-worker cluster.

Needs ``pip install -e '.[distributed]'``.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import linkdyn as ld  # noqa: E402
from linkdyn import distributed as ldd  # noqa: E402

POOL = 997          # states in the pool that the chunks are tiled from (prime: rows do not align with chunks)


def pools(model, seed=0):
    rng = np.random.default_rng(seed)
    return (ld.random_configuration(model, rng, size=POOL), rng.standard_normal((POOL, model.nv)),
            rng.standard_normal((POOL, model.nv)))


def tile(pool, n):
    """n rows of the pool, repeated."""
    reps = -(-n // len(pool))
    return np.ascontiguousarray(np.tile(pool, (reps, 1))[:n])


def _tile_block(sizes, pool):
    return tile(pool, int(sizes[0]))


def lazy_states(model, n, chunk):
    """(Q, V, A) as dask arrays of n states in chunks of ``chunk``, each chunk made on its worker."""
    import dask
    import dask.array as da
    rows = tuple(min(chunk, n - k) for k in range(0, n, chunk))
    sizes = da.from_array(np.array(rows), chunks=1)
    out = []
    for k, pool in enumerate(pools(model)):
        ref = dask.delayed(pool, name=f"bench-pool-{k}-{model.name}", pure=True)
        out.append(da.map_blocks(_tile_block, sizes, ref, new_axis=1, chunks=(rows, (pool.shape[1],)), dtype=float))
    return out


def in_process(model, n, chunk):
    """The same chunks, one after the other, through ld.rnea (all cores in Numba's threads)."""
    Q, V, A = pools(model)
    total = np.zeros(model.nv)
    t0 = time.perf_counter()
    for k in range(0, n, chunk):
        m = min(chunk, n - k)
        total += ld.rnea(model, tile(Q, m), tile(V, m), tile(A, m)).sum(axis=0)
    return time.perf_counter() - t0


def rnea_only(model, chunk):
    """ld.rnea on one chunk already in memory: the compiled loop alone."""
    Q, V, A = (tile(p, chunk) for p in pools(model))
    ld.rnea(model, Q, V, A)
    t0 = time.perf_counter()
    ld.rnea(model, Q, V, A)
    return time.perf_counter() - t0


def on_cluster(client, model, n, chunk, numba_threads):
    Q, V, A = lazy_states(model, n, chunk)
    total = ldd.rnea(model, Q, V, A, numba_threads=numba_threads).sum(axis=0)
    t0 = time.perf_counter()
    client.compute(total, sync=True)
    return time.perf_counter() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--full", action="store_true", help="10^7 states (default 10^6)")
    p.add_argument("--states", type=int, default=None)
    p.add_argument("--chunk", type=int, default=ldd.DEFAULT_CHUNK)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    n = args.states or (10_000_000 if args.full else 1_000_000)
    model = ld.models.human_figure()
    ncores = os.cpu_count()
    print(f"RNEA, {model.name} (nq {model.nq}, nv {model.nv}): {n:.0e} states in chunks of {args.chunk}, "
          f"{ncores} cores; the configurations take turns, {args.repeats} rounds, medians")
    one = ldd.local_client(1, threads_per_worker=1)
    two = ldd.local_client(2, threads_per_worker=1)
    try:
        runs = {"in process, chunk after chunk (ld.rnea)": lambda k, c: in_process(model, k, c),
                f"Dask, 1 worker x 1 thread, {ncores} Numba threads": lambda k, c: on_cluster(one, model, k, c, ncores),
                "Dask, 2 workers x 1 thread, 1 Numba thread each": lambda k, c: on_cluster(two, model, k, c, 1)}
        for client in (one, two):
            ldd.warmup(client, model)
        for fn in runs.values():                         # warm-up: kernels, pools, the model on the workers
            fn(2 * args.chunk, args.chunk)
        times = {label: [] for label in runs}
        small, m = 1_000, 200_000                       # the overhead per chunk: 200 chunks against 2
        over = []
        for _ in range(args.repeats):
            for label, fn in runs.items():
                times[label].append(fn(n, args.chunk))
            over.append((runs[list(runs)[2]](m, small) - runs[list(runs)[2]](m, m // 2)) / (m // small - 2))
        alone = rnea_only(model, args.chunk)
    finally:
        one.close()
        two.close()
    ref = n / statistics.median(times[list(runs)[0]])
    print(f"  {'ld.rnea on one chunk already in memory':<52}{args.chunk / alone / 1e6:8.3f} M states/s")
    for label, ts in times.items():
        rate = n / statistics.median(ts)
        print(f"  {label:<52}{rate / 1e6:8.3f} M states/s  ({rate / ref:5.2f} x in process; "
              f"range {n / max(ts) / 1e6:.3f}-{n / min(ts) / 1e6:.3f})")
    overhead = statistics.median(over)
    # a chunk here is 6 tasks: 3 tiles of the pools, RNEA, its partial sum, its share of the tree of sums
    print(f"  overhead per chunk (2 workers; {m:.0e} states in 200 chunks against 2): {overhead * 1e3:.1f} ms of "
          f"wall time (range {min(over) * 1e3:.1f}-{max(over) * 1e3:.1f})")
    print(f"  a chunk of {args.chunk} states takes {args.chunk / ref * 1e3:.0f} ms in process: the overhead is "
          f"{overhead / (args.chunk / ref) * 100:.1f} % of it")


if __name__ == "__main__":
    main()
