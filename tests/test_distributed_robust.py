"""linkdyn.distributed against careless clusters and chunks (issue 28): a cluster with no workers
is an error within seconds, errors name the state's index in the whole stack (not in its chunk),
and empty or unknown-size chunks are computed like any others."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import linkdyn as ld

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from linkdyn import distributed as ldd  # noqa: E402


@pytest.fixture(scope="module")
def arm():
    b = ld.ModelBuilder("arm")
    b.add_body("a", "world", ld.Revolute("y"), inertia=ld.Inertia(1.0, [0, 0, -0.2], np.eye(3) * 0.01))
    b.add_body("c", "a", ld.Revolute("y"), inertia=ld.Inertia(0.5, [0, 0, -0.1], np.eye(3) * 0.01),
               placement=[0, 0, -0.4])
    return b.build()


def _states(n, seed=3):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 2)), rng.standard_normal((n, 2)), rng.standard_normal((n, 2))


def test_cluster_with_no_workers_is_an_error_within_seconds(arm, monkeypatch):
    """A cluster with no workers made run_many wait for ever: it raises after WORKER_WAIT (5 s,
    within the issue's 10 s).  The call runs in a thread so that a hang fails the test instead of
    stalling the suite."""
    assert ldd.WORKER_WAIT <= 10.0
    monkeypatch.setattr(ldd, "WORKER_WAIT", 1.0)
    cluster = distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None)
    client = distributed.Client(cluster)
    out = {}

    def go():
        try:
            ldd.run_many(ldd.drop_scene, [{"height": 0.02}], until=0.01, client=client, warm=False)
        except Exception as exc:        # noqa: BLE001  the outcome is checked below
            out["exc"] = exc
    try:
        th = threading.Thread(target=go, daemon=True)
        th.start()
        th.join(60.0)
        assert not th.is_alive(), "run_many on a cluster with no workers did not return"
        assert isinstance(out.get("exc"), RuntimeError)
        assert "has no workers (none joined within" in str(out["exc"])
    finally:
        client.close()
        cluster.close()


def test_distributed_error_names_the_global_state_index(arm):
    q, v, a = _states(10)
    q[7, 1] = np.nan
    with pytest.raises(ValueError, match=r"state 7 of the stack") as local:
        ld.rnea(arm, q, v, a)
    with dask.config.set(scheduler="synchronous"):
        for chunks in (4, (3, 3, 4), 10):
            with pytest.raises(ValueError) as dist:
                ldd.rnea(arm, q, v, a, chunks=chunks).compute()
            assert str(dist.value) == str(local.value)


def test_empty_and_unknown_size_chunks_computed(arm):
    q, v, a = _states(12)
    want = ld.rnea(arm, q, v, a)
    with dask.config.set(scheduler="synchronous"):
        # empty chunks among full ones
        xs = [da.from_array(x, chunks=((0, 5, 0, 7, 0), (2,))) for x in (q, v, a)]
        assert np.array_equal(ldd.rnea(arm, *xs).compute(), want)
        # a boolean filter's chunks of unknown size (NaN), and one that keeps nothing of a chunk
        keep = np.arange(12) % 3 != 0
        keep[:4] = False
        xs = [da.from_array(x, chunks=4) for x in (q, v, a)]
        mask = da.from_array(keep, chunks=4)
        filtered = [x[mask] for x in xs]
        assert any(np.isnan(c) for c in filtered[0].chunks[0])
        got = ldd.rnea(arm, *filtered).compute()
        assert np.array_equal(got, want[keep])
        # everything filtered out: an empty result of the right shape
        none = [x[da.from_array(np.zeros(12, bool), chunks=4)] for x in xs]
        assert ldd.rnea(arm, *none).compute().shape == (0, 2)
