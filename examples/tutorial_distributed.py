"""Tutorial: scale-out with Dask (docs/tutorials/distributed.md).

An inverse-dynamics dataset (random states of the PUMA 560, their RNEA torques) computed chunk
by chunk on a local Dask cluster and written to Parquet, checked bitwise against the in-process
batched call; then a small Monte-Carlo study of drops (random heights and ground friction) run
as Dask tasks, one of them failing on purpose.

    python examples/tutorial_distributed.py                      # 200 000 states, into a temp folder
    python examples/tutorial_distributed.py --states 1000000 --out dataset

A script that starts a ``LocalCluster`` of processes runs its work under
``if __name__ == "__main__":``: each worker process imports this file again.
"""
# --8<-- [start:imports]
import argparse
import tempfile
from pathlib import Path

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd

import linkdyn as ld
from linkdyn import distributed as ldd
# --8<-- [end:imports]


# --8<-- [start:states]
def random_states(model, n, chunk, seed=0):
    """n random states (q within the joint limits, v and a standard normal) as lazy dask arrays
    chunked along the first axis: each chunk is drawn on the worker that computes it."""
    rng = da.random.default_rng(seed)
    q = model.lower + (model.upper - model.lower) * rng.random((n, model.nq), chunks=(chunk, model.nq))
    v = rng.standard_normal((n, model.nv), chunks=(chunk, model.nv))
    a = rng.standard_normal((n, model.nv), chunks=(chunk, model.nv))
    return q, v, a
# --8<-- [end:states]


# --8<-- [start:dataset]
def write_dataset(model, n, chunk, folder):
    """The states and their torques, one Parquet file per chunk, computed on the workers."""
    q, v, a = random_states(model, n, chunk)
    tau = ldd.rnea(model, q, v, a)                        # lazy: nothing has run yet
    names = ([f"q{k}" for k in range(model.nq)] + [f"v{k}" for k in range(model.nv)]
             + [f"a{k}" for k in range(model.nv)] + [f"tau{k}" for k in range(model.nv)])
    table = dd.from_dask_array(da.concatenate([q, v, a, tau], axis=1), columns=names)
    table.to_parquet(folder, write_index=False, overwrite=True)    # runs the graph: draw, RNEA, write
    return names
# --8<-- [end:dataset]


# --8<-- [start:check]
def check_dataset(model, folder, names):
    """Read it back: the torques are bitwise those of the in-process batched call."""
    data = pd.read_parquet(folder)
    Q, V, A, TAU = (data[[c for c in names if c.rstrip("0123456789") == x]].to_numpy() for x in ("q", "v", "a", "tau"))
    assert np.array_equal(TAU, ld.rnea(model, Q, V, A))
    return len(data)
# --8<-- [end:check]


# --8<-- [start:montecarlo]
def drop_study(client, runs=8, seed=1):
    """Drops from random heights onto grounds of random friction, one Dask task each; the last
    run asks for a negative time step and fails, alone."""
    rng = np.random.default_rng(seed)
    params = [{"height": round(float(h), 3), "friction": round(float(mu), 2), "speed": 0.5}
              for h, mu in zip(rng.uniform(0.0, 0.05, runs), rng.uniform(0.2, 1.0, runs))]
    params[-1]["dt"] = -1.0
    table = ldd.run_many(ldd.drop_scene, params, until=0.12, client=client, summary=ldd.drop_summary)
    print(table[["height", "friction", "ok", "impacts", "contact_work_J", "slip_m", "error"]].to_string())
    assert table["ok"].sum() == runs - 1 and table["error"].iloc[-1].startswith("ValueError: dt")
    return table
# --8<-- [end:montecarlo]


# --8<-- [start:cluster]
def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--states", type=int, default=200_000)
    p.add_argument("--chunk", type=int, default=50_000)
    p.add_argument("--out", default=None, help="the dataset's folder (default: a temporary one)")
    args = p.parse_args(argv)
    model = ld.models.puma560()
    with ldd.local_client(n_workers=2) as client:        # or Client("tcp://scheduler:8786"): your cluster
        ldd.warmup(client, model)                         # each worker loads the kernels before the work
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(args.out or tmp) / "puma560_rnea.parquet"
            names = write_dataset(model, args.states, args.chunk, folder)
            n = check_dataset(model, folder, names)
            size = sum(f.stat().st_size for f in folder.iterdir()) / 1e6
            print(f"{n} states, {len(list(folder.iterdir()))} files, {size:.1f} MB in {folder}")
        drop_study(client)


if __name__ == "__main__":
    main()
# --8<-- [end:cluster]
