"""Scale-out on Dask: the batched dynamics on dask arrays, and many simulations as Dask tasks.

linkdyn runs a stack of states as one parallel compiled loop on one machine; this module hands
the stacks and the simulations to Dask (``pip install 'linkdyn[distributed]'``: dask,
distributed, pandas), which runs them on a local cluster or on yours, with the same code:

* :func:`rnea`, :func:`crba`, :func:`aba`, :func:`jacobian`, ... take dask arrays of states
  chunked along the first axis (numpy stacks are chunked for you) and return dask arrays,
  lazily; each chunk is one call of the batched entry point of the same name (``ld.rnea`` on
  an (n, nq) block), so a computed result is bitwise the in-process batched call's.  The model
  is one node of the task graph (not a copy in every chunk's task): a worker receives it once
  per computation however many chunks it runs, and every worker thread computes with its own
  copy (its own kernel workspace; an unpickled :class:`~linkdyn.Model` packs a fresh one).
  :func:`map_states` lifts any other batched function the same way;
* :func:`run_many` runs one :class:`~linkdyn.Simulation` per parameter set as a Dask task
  and gathers the recordings (or the summaries you ask for) into a pandas table, one row per
  task; a task that fails is one row with its error, the others are kept;
* :func:`warmup` loads (or compiles) the kernels on every worker before the real work: a
  worker process is a fresh Python, which compiles the kernels it calls on first use, about
  15 s per kernel family with an empty cache and about a second with linkdyn's disk cache
  warm (``linkdyn warmup`` on each machine, or a cache folder the workers share).

Without a cluster the dask arrays compute on Dask's default scheduler (threads of this
process; each chunk's batched call runs on Numba's threads too) and :func:`run_many` starts
a ``distributed.LocalCluster`` of processes (a simulation is Python, which holds the GIL) for
its run; pass ``client=`` to use your cluster.  Chunks of 10^4 to 10^5 states keep the
scheduler's cost per chunk (some 10 ms of wall time on a busy 2-core machine) small against
the compute (:data:`DEFAULT_CHUNK`; the tutorial "Scale-out with Dask" has the numbers).
The task-graph model is Dask's (Rocklin 2015).
"""
from __future__ import annotations

import itertools
import math
import pickle
import re
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from . import dynamics as _dyn
from . import kinematics as _kin
from .dynamics import regressor as _reg
from .dynamics.lagrange import coriolis_matrix as _coriolis_matrix
from .model import Model

__all__ = ["DEFAULT_CHUNK", "map_states", "rnea", "nonlinear_effects", "generalized_gravity", "crba", "mass_matrix",
           "aba", "kinetic_energy", "potential_energy", "mechanical_energy", "jacobian", "joint_jacobians",
           "frame_pose", "center_of_mass", "com_jacobian", "coriolis_matrix", "joint_torque_regressor",
           "warmup", "run_many", "drop_scene", "drop_summary", "local_client"]

#: the chunk length (states) that numpy stacks are cut into: the scheduler costs some 10 ms of
#: wall time per chunk (benchmarks/bench_distributed.py, a busy 2-core machine) whatever its
#: size, and 10^5 states of the 40-DoF figure are 0.2 s of RNEA on two cores (0.35 s on one),
#: so the overhead stays near 3-5 %, while q, v, a and tau of a chunk (59 + 3 x 46 columns) are
#: 160 MB, well inside a worker's memory
DEFAULT_CHUNK = 100_000


def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError:                          # pragma: no cover
        raise ImportError("linkdyn.distributed needs dask: pip install 'linkdyn[distributed]'") from None
    return dask, da


# --------------------------------------------------------------------------- the model
_REFS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCAL = threading.local()


def _model_ref(model):
    """The model as one node of a task graph (a Delayed whose key names the model's pickle),
    made once per model object (the model is immutable)."""
    dask, _ = _dask()
    from dask.delayed import Delayed
    if isinstance(model, Delayed):
        return model
    if not isinstance(model, Model):
        raise TypeError(f"model: expected a linkdyn.Model, got {type(model).__name__}")
    ref = _REFS.get(model)
    if ref is None:
        from dask.base import tokenize
        blob = pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)
        ref = _REFS[model] = dask.delayed(model, name=f"linkdyn-model-{model.name}-{tokenize(blob)}", pure=True)
    return ref


def _thread_model(model):
    """This thread's private copy of ``model``: the single-state kernels write into the model's
    workspace, so threads of one worker (or of Dask's local threaded scheduler) never share one."""
    cache = getattr(_LOCAL, "models", None)
    if cache is None:
        cache = _LOCAL.models = weakref.WeakKeyDictionary()
    own = cache.get(model)
    if own is None:
        own = cache[model] = pickle.loads(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL))
    return own


_STATE_IN_STACK = re.compile(r"\bstate (\d+) of the stack\b")


def _run_block(model, index, *blocks, fn, numba_threads, kwargs, out_shape):
    """One chunk: ``index`` is the chunk's global state indices (a slice of arange(N)), so that
    an error names the state in the whole stack, not in its chunk (issue 28).  An empty chunk
    (a filter that kept nothing of it) gives an empty result without calling ``fn``."""
    n = len(index)
    if n == 0:
        return np.empty((0,) + tuple(out_shape))
    if numba_threads:
        import numba
        numba.set_num_threads(max(1, min(int(numba_threads), numba.config.NUMBA_NUM_THREADS)))
    try:
        return np.asarray(fn(_thread_model(model), *blocks, **kwargs), dtype=np.float64)
    except Exception as exc:
        first = int(index[0])
        msg = str(exc)
        new, found = _STATE_IN_STACK.subn(lambda mt: f"state {first + int(mt.group(1))} of the stack", msg)
        if not found:
            new = f"{msg} (in the chunk of states {first}..{first + n - 1} of the stack)"
        try:
            err = type(exc)(new)
        except Exception:                           # an exception type that takes other arguments
            raise exc
        raise err from exc


# ------------------------------------------------------------------- dask arrays of states
def map_states(fn: Callable[..., Any], model: Model, *arrays: Any, out_shape: Sequence[int] = (),
               state_ndim: Sequence[int] | None = None, chunks: int | Sequence[int] | None = None,
               numba_threads: int | None = None, **kwargs: Any):
    """``fn(model, *arrays, **kwargs)`` (a batched linkdyn function) chunk by chunk, lazily: a
    dask array (N,) + ``out_shape``.

    ``arrays``: stacks of states, (N,) + the state's shape, as dask arrays chunked along the
    first axis (other axes are joined into one chunk) or numpy arrays (cut into chunks of
    ``chunks`` states, default :data:`DEFAULT_CHUNK`, or of the lengths in a tuple ``chunks``,
    or as the first dask array among them is); an
    array of exactly a state's shape is one state shared by all (passed whole to every chunk).
    ``state_ndim``: the number of dimensions of one state of each array (default 1: a q, v, a
    or tau; 2 for external forces (nbody, 6)).  ``numba_threads``: the compiled threads each
    chunk's call may use (default: Numba's setting; 1 when every core already runs a worker
    thread).  None as an array is passed through as None."""
    dask, da = _dask()
    nd = [1] * len(arrays) if state_ndim is None else list(state_ndim)
    if len(nd) != len(arrays):
        raise ValueError(f"state_ndim: {len(nd)} entries for {len(arrays)} arrays")
    # chunks of unknown size (a boolean filter's): their sizes are computed first (issue 28)
    arrays = tuple(x.compute_chunk_sizes() if isinstance(x, da.Array) and any(math.isnan(c) for c in x.chunks[0])
                   else x for x in arrays)
    ref_chunks = next((x.chunks[0] for x, k in zip(arrays, nd) if isinstance(x, da.Array) and x.ndim == k + 1), None)
    stacked = []
    for i, (x, k) in enumerate(zip(arrays, nd)):
        if x is None or (not isinstance(x, da.Array) and np.ndim(x) == k):
            stacked.append(None)
            continue
        if not isinstance(x, da.Array):
            x = np.asarray(x, dtype=np.float64)
            if x.ndim != k + 1:
                raise ValueError(f"argument {i + 1}: expected one state of {k} dimension(s) or a stack of them, "
                                 f"got shape {x.shape}")
            rows = ref_chunks or (tuple(chunks) if isinstance(chunks, (tuple, list)) else int(chunks or DEFAULT_CHUNK))
            x = da.from_array(x, chunks=(rows,) + x.shape[1:])
        elif x.ndim != k + 1:
            raise ValueError(f"argument {i + 1}: a dask array must be a stack of states ({k + 1} dimensions), "
                             f"got shape {x.shape}")
        stacked.append(x)
    first = next((x for x in stacked if x is not None), None)
    if first is None:
        raise ValueError("map_states: no stack of states among the arrays (use the function itself for one state)")
    n = first.shape[0]
    for i, x in enumerate(stacked):
        if x is not None and x.shape[0] != n:
            raise ValueError(f"argument {i + 1}: a stack of {x.shape[0]} states, but another has {n}")
    row_chunks = first.chunks[0] if ref_chunks is None else ref_chunks
    letters = iter("abcdefghjklmnopqrstuvwxyz")
    out_ind = "i" + "".join(next(letters) for _ in out_shape)
    args: list[Any] = [_model_ref(model), None, da.arange(n, chunks=(row_chunks,)), "i"]
    for x, a in zip(stacked, arrays):
        if x is None:
            args += [a, None]
            continue
        x = x.astype(np.float64).rechunk((row_chunks,) + tuple(-1 for _ in x.shape[1:]))
        args += [x, "i" + "".join(next(letters) for _ in x.shape[1:])]
    name = getattr(fn, "__name__", "states")
    return da.blockwise(_run_block, out_ind, *args, new_axes=dict(zip(out_ind[1:], out_shape)), dtype=np.float64,
                        concatenate=True, token=f"linkdyn-{name}", fn=fn, numba_threads=numba_threads, kwargs=kwargs,
                        out_shape=tuple(out_shape),
                        meta=np.empty((0,) * len(out_ind)))


def rnea(model: Model, q: Any, v: Any, a: Any, fext: Any = None, **options: Any):
    """:func:`linkdyn.rnea` (inverse dynamics, Featherstone 2008, ch. 5) on stacks of states:
    a lazy dask array (N, nv).  ``options``: ``chunks``, ``numba_threads`` (:func:`map_states`)."""
    return map_states(_dyn.rnea, model, q, v, a, fext, out_shape=(model.nv,), state_ndim=(1, 1, 1, 2), **options)


def nonlinear_effects(model: Model, q: Any, v: Any, **options: Any):
    """:func:`linkdyn.nonlinear_effects` b(q, v) on stacks: a lazy dask array (N, nv)."""
    return map_states(_dyn.nonlinear_effects, model, q, v, out_shape=(model.nv,), **options)


def generalized_gravity(model: Model, q: Any, **options: Any):
    """:func:`linkdyn.generalized_gravity` g(q) on a stack: a lazy dask array (N, nv)."""
    return map_states(_dyn.generalized_gravity, model, q, out_shape=(model.nv,), **options)


def crba(model: Model, q: Any, **options: Any):
    """:func:`linkdyn.crba` (the joint-space inertia, Featherstone 2008, ch. 6) on a stack of
    configurations: a lazy dask array (N, nv, nv)."""
    return map_states(_dyn.crba, model, q, out_shape=(model.nv, model.nv), **options)


def mass_matrix(model: Model, q: Any, method: str = "crba", **options: Any):
    """:func:`linkdyn.mass_matrix` on a stack: a lazy dask array (N, nv, nv)."""
    return map_states(_dyn.mass_matrix, model, q, out_shape=(model.nv, model.nv), method=method, **options)


def aba(model: Model, q: Any, v: Any, tau: Any, fext: Any = None, **options: Any):
    """:func:`linkdyn.aba` (forward dynamics, Featherstone 2008, ch. 7) on stacks of states:
    a lazy dask array (N, nv)."""
    return map_states(_dyn.aba, model, q, v, tau, fext, out_shape=(model.nv,), state_ndim=(1, 1, 1, 2), **options)


def _rnea_derivatives_stacked(model, q, v, a, fext=None):
    return np.stack(_dyn.rnea_derivatives(model, q, v, a, fext), axis=1)


def _aba_derivatives_stacked(model, q, v, tau, fext=None):
    return np.stack(_dyn.aba_derivatives(model, q, v, tau, fext), axis=1)


def rnea_derivatives(model: Model, q: Any, v: Any, a: Any, fext: Any = None, **options: Any):
    """:func:`linkdyn.rnea_derivatives` (Carpentier and Mansard 2018) on stacks of states:
    lazy dask arrays ``(dtau_dq, dtau_dv, M)``, each (N, nv, nv), computed together chunk by chunk."""
    nv = model.nv
    out = map_states(_rnea_derivatives_stacked, model, q, v, a, fext, out_shape=(3, nv, nv),
                     state_ndim=(1, 1, 1, 2), **options)
    return out[:, 0], out[:, 1], out[:, 2]


def aba_derivatives(model: Model, q: Any, v: Any, tau: Any, fext: Any = None, **options: Any):
    """:func:`linkdyn.aba_derivatives` on stacks of states: lazy dask arrays
    ``(dqdd_dq, dqdd_dv, Minv)``, each (N, nv, nv), computed together chunk by chunk."""
    nv = model.nv
    out = map_states(_aba_derivatives_stacked, model, q, v, tau, fext, out_shape=(3, nv, nv),
                     state_ndim=(1, 1, 1, 2), **options)
    return out[:, 0], out[:, 1], out[:, 2]


def kinetic_energy(model: Model, q: Any, v: Any, **options: Any):
    """:func:`linkdyn.kinetic_energy` on stacks: a lazy dask array (N,)."""
    return map_states(_dyn.kinetic_energy, model, q, v, **options)


def potential_energy(model: Model, q: Any, **options: Any):
    """:func:`linkdyn.potential_energy` on a stack: a lazy dask array (N,)."""
    return map_states(_dyn.potential_energy, model, q, **options)


def mechanical_energy(model: Model, q: Any, v: Any, **options: Any):
    """:func:`linkdyn.mechanical_energy` on stacks: a lazy dask array (N,)."""
    return map_states(_dyn.mechanical_energy, model, q, v, **options)


def jacobian(model: Model, q: Any, frame: str | int, reference: str = "world", **options: Any):
    """:func:`linkdyn.jacobian` of ``frame`` on a stack: a lazy dask array (N, 6, nv)."""
    return map_states(_kin.jacobian, model, q, out_shape=(6, model.nv), frame=frame, reference=reference, **options)


def joint_jacobians(model: Model, q: Any, **options: Any):
    """:func:`linkdyn.joint_jacobians` on a stack: a lazy dask array (N, 6, nv)."""
    return map_states(_kin.joint_jacobians, model, q, out_shape=(6, model.nv), **options)


def frame_pose(model: Model, q: Any, frame: str | int, **options: Any):
    """:func:`linkdyn.frame_pose` on a stack: a lazy dask array (N, 4, 4)."""
    return map_states(_kin.frame_pose, model, q, out_shape=(4, 4), frame=frame, **options)


def center_of_mass(model: Model, q: Any, **options: Any):
    """:func:`linkdyn.center_of_mass` on a stack: a lazy dask array (N, 3)."""
    return map_states(_kin.center_of_mass, model, q, out_shape=(3,), **options)


def com_jacobian(model: Model, q: Any, **options: Any):
    """:func:`linkdyn.com_jacobian` on a stack: a lazy dask array (N, 3, nv)."""
    return map_states(_kin.com_jacobian, model, q, out_shape=(3, model.nv), **options)


def coriolis_matrix(model: Model, q: Any, v: Any, **options: Any):
    """:func:`linkdyn.coriolis_matrix` C(q, v) on stacks: a lazy dask array (N, nv, nv)."""
    return map_states(_coriolis_matrix, model, q, v, out_shape=(model.nv, model.nv), **options)


def joint_torque_regressor(model: Model, q: Any, v: Any, a: Any, with_joint_terms: bool = False, **options: Any):
    """:func:`linkdyn.joint_torque_regressor` Y(q, v, a) (Spong, Hutchinson and Vidyasagar 2006,
    ch. 7) on stacks: a lazy dask array (N, nv, ncols), the rows of an identification over a
    long log."""
    cols = _reg.n_parameters(model, bool(with_joint_terms))
    return map_states(_reg.joint_torque_regressor, model, q, v, a, out_shape=(model.nv, cols),
                      with_joint_terms=with_joint_terms, **options)


# ------------------------------------------------------------------------------- workers
def _warm_worker(model):
    import linkdyn as ld
    m = ld.models.human_figure() if model is None else model
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    for n in (1, 32):               # a stack of one runs state by state, a longer one in parallel
        Q = ld.random_configuration(m, rng, size=n)
        V = np.zeros((n, m.nv))
        ld.rnea(m, Q, V, V), ld.crba(m, Q), ld.aba(m, Q, V, V), ld.kinetic_energy(m, Q, V)
        ld.potential_energy(m, Q)
    return time.perf_counter() - t0


def warmup(client: Any = None, model: Model | None = None) -> dict:
    """Load (or compile) the kernels of the batched entry points on every worker of ``client``
    (default: the current Dask client) with ``model`` (default the 40-DoF human figure), so that
    the first chunks do not wait for them.  Returns {worker address: seconds it took}."""
    if client is None:
        from distributed import default_client
        client = default_client()
    return client.run(_warm_worker, model)


def local_client(n_workers: int | None = None, threads_per_worker: int = 1, **cluster_options: Any):
    """A ``distributed.Client`` of a new ``LocalCluster`` of ``n_workers`` processes (default:
    one per core) with ``threads_per_worker`` threads each (its dashboard, if bokeh is
    installed, on a free port: ``client.dashboard_link``).  Closing the client (or leaving its
    ``with`` block) stops the cluster.  ``cluster_options`` go to ``LocalCluster``."""
    import os

    _check_workers(n_workers)
    from distributed import Client
    cluster_options.setdefault("dashboard_address", ":0")      # any free port: never "8787 is in use"
    return Client(n_workers=n_workers or os.cpu_count() or 1, threads_per_worker=threads_per_worker,
                  processes=True, **cluster_options)


def _check_workers(n_workers) -> None:
    """``n_workers``: None (one per core) or a whole number >= 1; a count below 1 made the
    cluster wait for ever for workers that never come."""
    if n_workers is None:
        return
    if isinstance(n_workers, bool) or not isinstance(n_workers, (int, np.integer)) or n_workers < 1:
        raise ValueError(f"n_workers must be None (one per core) or a whole number >= 1, not {n_workers!r}")


# -------------------------------------------------------------------- many simulations
RESERVED_COLUMNS = ("ok", "error", "wall_s")


#: how long (s) run_many waits for a first worker of a client's cluster before it says there is none
WORKER_WAIT = 5.0


def _need_workers(client, timeout: float = WORKER_WAIT) -> None:
    """Raise when ``client``'s cluster has no worker and none joins within ``timeout`` seconds:
    its tasks would wait for ever (issue 28: a cluster with no workers hung run_many)."""
    try:
        client.wait_for_workers(1, timeout=timeout)
    except TimeoutError:
        addr = getattr(getattr(client, "scheduler", None), "address", None) or "the client's scheduler"
        raise RuntimeError(f"the Dask cluster at {addr} has no workers (none joined within {timeout:g} s): its "
                           "tasks would never run; start workers (cluster.scale(n), `dask worker <address>`) "
                           "or pass no client (run_many then starts a local cluster)") from None


def _param_rows(params) -> list[dict]:
    if hasattr(params, "to_dict") and hasattr(params, "columns"):         # a pandas DataFrame
        return [dict(r) for r in params.to_dict("records")]
    if isinstance(params, Mapping):
        names = list(params)
        values = [list(params[k]) if isinstance(params[k], Iterable) and not isinstance(params[k], str)
                  else [params[k]] for k in names]
        return [dict(zip(names, combo)) for combo in itertools.product(*values)]
    rows = [dict(p) for p in params]
    return rows


def _run_one(scene_factory, params, until, summary):
    t0 = time.perf_counter()
    try:
        sim = scene_factory(**params)
        sim.run(until=until, progress=False)
        result = summary(sim) if summary is not None else sim.recording
        return {"ok": True, "error": None, "wall": time.perf_counter() - t0, "result": result}
    except Exception as exc:                       # reported in the task's row; the others go on
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "wall": time.perf_counter() - t0,
                "result": None, "traceback": traceback.format_exc()}


def run_many(scene_factory: Callable[..., Any], params: Any, until: float, client: Any = None,
             summary: Callable[[Any], Any] | None = None, n_workers: int | None = None, warm: bool = True):
    """Run ``scene_factory(**p).run(until)`` for every parameter set ``p`` as a Dask task and
    gather the results into a pandas DataFrame, one row per task in the order of ``params``.

    ``scene_factory``: returns a :class:`~linkdyn.Simulation` (e.g.
    ``linkdyn.models.scenarios.drop_simulation``, or :func:`drop_scene`); a module-level
    function or anything cloudpickle ships (a lambda, a ``functools.partial``).  ``params``:
    a list of dicts, a DataFrame (one set per row), or a dict of lists (their Cartesian
    product: a grid).  ``summary(sim)``: what a task returns (a dict becomes columns, anything
    else the ``result`` column); without it the ``recording`` column holds each task's
    :class:`~linkdyn.sim.Recording`.

    The columns: the parameters, ``ok``, ``error`` (``"ValueError: ..."``, None when it ran),
    ``wall_s`` (the task's run time), then the results.  A task that raises (or whose worker
    dies) gives a row with ``ok`` False and its error and the others are kept; the
    tracebacks are in ``table.attrs["tracebacks"]`` (row index -> text).

    ``client``: your ``distributed.Client``; without one a ``LocalCluster`` of ``n_workers``
    processes (default one per core) is started for this call and closed after it.  ``warm``:
    load the kernels on every worker first (:func:`warmup`)."""
    import pandas as pd
    _check_workers(n_workers)
    rows = _param_rows(params)
    clash = sorted({k for r in rows for k in r if k in RESERVED_COLUMNS})
    if clash:
        raise ValueError(f"params: the names {clash} are run_many's own columns {list(RESERVED_COLUMNS)}; "
                         "rename these parameters")
    own = client is None
    if own:
        client = local_client(n_workers)
    try:
        if rows:
            _need_workers(client)
        if warm and rows:
            warmup(client)
        futures = client.map(_run_one, [scene_factory] * len(rows), rows, until=until, summary=summary, pure=False,
                             key=[f"linkdyn-run-{k}-{time.time_ns()}" for k in range(len(rows))])
        outcomes = []
        for f in futures:
            try:
                outcomes.append(f.result())
            except Exception as exc:                       # the worker died, the task was lost
                outcomes.append({"ok": False, "error": f"{type(exc).__name__}: {exc}", "wall": float("nan"),
                                 "result": None, "traceback": traceback.format_exc()})
    finally:
        if own:
            client.close()
    records, tracebacks = [], {}
    for k, (p, out) in enumerate(zip(rows, outcomes)):
        rec = dict(p)
        rec.update(ok=out["ok"], error=out["error"], wall_s=out["wall"])
        res = out["result"]
        if summary is None:
            rec["recording"] = res
        elif isinstance(res, Mapping):
            clash = sorted(set(res) & set(RESERVED_COLUMNS) | set(res) & set(p))
            if clash:                                # never overwrite the row's status or its parameters
                rec.update(ok=False, error=f"ValueError: the summary's keys {clash} are the row's own columns "
                                           "(parameters, ok, error, wall_s); rename them")
            else:
                rec.update(res)
        elif out["ok"]:
            rec["result"] = res
        if "traceback" in out:
            tracebacks[k] = out["traceback"]
        records.append(rec)
    names = list(dict.fromkeys(k for p in rows for k in p))           # every parameter, first seen first
    rest = list(dict.fromkeys(k for r in records for k in r if k not in names))
    table = pd.DataFrame.from_records(records, columns=names + rest)
    table.attrs["tracebacks"] = tracebacks
    return table


# ------------------------------------------------------------------ a scene for studies
def drop_scene(height: float = 0.5, friction: float = 0.8, speed: float = 0.0, dt: float = 1e-3,
               record_every: int = 10):
    """The drop of :func:`linkdyn.models.scenarios.drop_simulation` (a 40-DoF figure lands on
    both feet under a posture controller, time stepping, Coulomb friction) with the ground's
    friction coefficient ``friction`` (the pair's is the geometric mean with the soles', 0.8
    unless the model says otherwise) and a forward speed ``speed`` (m/s, along x) at release:
    the scene of a drop-height x friction study."""
    from . import ModelBuilder, Simulation
    from .models import scenarios as sc
    model, q = sc.drop(height, ground=False)
    b = ModelBuilder.from_model(model)
    b.add_ground(friction=friction)
    model = b.build()
    v = np.zeros(model.nv)
    v[0] = speed
    control = sc.posture_controller(model, q, frequency=sc.LANDING_FREQUENCY)
    return Simulation(model, q, v, dt=dt, record_every=record_every, controller=control, contact_method="timestep")


def drop_summary(sim) -> dict:
    """What a drop study compares, from a finished :func:`drop_scene` run: ``impacts``, the
    energy the contacts took (``contact_work_J``, negative), how far the soles slid on the
    ground from the touchdown (the first sample with a sole within 2 mm of the ground) to the
    last sample (``slip_m``, the larger of the two soles; NaN before any touchdown), the final
    pelvis height (``pelvis_z_m``) and whether the run's checks passed (``checks_ok``)."""
    from .kinematics import frame_pose
    soles = ("l_sole", "r_sole")
    samples = [(seg.model, np.asarray(q)) for seg in sim.recording.segments for q in seg.q]
    touchdown = None
    for model, q in samples:
        poses = [frame_pose(model, q, s)[:3, 3] for s in soles]
        if min(p[2] for p in poses) < 2e-3:
            touchdown = poses
            break
    model, q1 = samples[-1]
    slip = float("nan") if touchdown is None else max(
        float(np.linalg.norm(frame_pose(model, q1, s)[:2, 3] - p[:2])) for s, p in zip(soles, touchdown))
    return {"impacts": int(sim.contact_stats.get("impacts", 0)), "contact_work_J": float(sim.work[1]),
            "slip_m": slip, "pelvis_z_m": float(q1[2]), "checks_ok": bool(sim.checks().ok)}
