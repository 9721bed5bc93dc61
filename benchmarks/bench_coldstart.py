"""The first minute: cold and warm ``import linkdyn``, the first ``ld.rnea``, the first step of
the swing demo, each in a fresh interpreter (issue 28).

"Cold" is an empty kernel cache: a new folder (mode 0700, as the cache's trust check wants)
named by ``LINKDYN_CACHE_DIR``, so every kernel compiles; "warm" reuses the folder a cold run
filled.  Each case runs ``--repeat`` times (a new empty folder for every cold run) and the
median is printed: wall time and the child's CPU time (on a shared machine the CPU time moves
less).  Reference imports (numpy, numba, Pinocchio, MuJoCo) are timed the same way.

    python benchmarks/bench_coldstart.py                 # 3 repeats; the swing's cold step once
    python benchmarks/bench_coldstart.py --repeat 5 --swing-repeat 3
    python benchmarks/bench_coldstart.py --no-swing
    python benchmarks/bench_coldstart.py --step          # only the first time step of MJCF robots (issue 24)
    python benchmarks/bench_coldstart.py --step --step-models hopper

The sources measured are this checkout's (``src/`` is put first on the children's path), or
another's with ``--src`` (to compare before and after a change).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

SRC = pathlib.Path(__file__).resolve().parent.parent / "src"

PRELUDE = """
import json, os, sys, time
def cpu():
    t = os.times()
    return t.user + t.system
t0, c0 = time.perf_counter(), cpu()
"""

IMPORT = PRELUDE + """
import {module}
out = dict(wall=time.perf_counter() - t0, cpu=cpu() - c0, numba="numba" in sys.modules)
print(json.dumps(out))
"""

FIRST_NAMES = PRELUDE + """
import linkdyn as ld
ld.Model, ld.rnea, ld.Simulation           # what a script touches first: numba and the modules, no compile
out = dict(wall=time.perf_counter() - t0, cpu=cpu() - c0, numba="numba" in sys.modules)
print(json.dumps(out))
"""

RNEA = PRELUDE + """
import numpy as np
import linkdyn as ld
t1, c1 = time.perf_counter(), cpu()
m = ld.models.human_figure_16()
q = ld.random_configuration(m, np.random.default_rng(3))
v = np.linspace(-1.0, 1.0, m.nv)
t2, c2 = time.perf_counter(), cpu()
ld.rnea(m, q, v, v)
t3, c3 = time.perf_counter(), cpu()
print(json.dumps(dict(import_=t1 - t0, model=t2 - t1, call=t3 - t2, call_cpu=c3 - c2, wall=t3 - t0, cpu=c3 - c0)))
"""

SWING = PRELUDE + """
import linkdyn as ld
from linkdyn.models import scenarios as sc
t1 = time.perf_counter()
sim = sc.swing_simulation(dt=1e-3, record_every=10)
t2, c2 = time.perf_counter(), cpu()
sim.step()
t3, c3 = time.perf_counter(), cpu()
print(json.dumps(dict(import_=t1 - t0, scene=t2 - t1, call=t3 - t2, call_cpu=c3 - c2, wall=t3 - t0, cpu=c3 - c0)))
"""

# a user's first simulation of a default-loaded MJCF robot (issue 24): load_mjcf(path) picks time
# stepping with the file's collision geoms; the first run(0.01) compiles the step and the
# collider.  CPU time by resource.getrusage (the child's own, compile included)
STEP = PRELUDE + """
import importlib.util, pathlib, resource, warnings
def rcpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
import linkdyn as ld
pkg, rel = {where!r}
path = pathlib.Path(importlib.util.find_spec(pkg).origin).parent / rel
t1, c1 = time.perf_counter(), rcpu()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    m, info = ld.load_mjcf(path, return_info=True)
t2, c2 = time.perf_counter(), rcpu()
sim = ld.Simulation(m, info.q0)
t3, c3 = time.perf_counter(), rcpu()
sim.run(0.01, progress=False)
t4, c4 = time.perf_counter(), rcpu()
print(json.dumps(dict(import_=t1 - t0, load=t2 - t1, sim=t3 - t2, sim_cpu=c3 - c2, run=t4 - t3, run_cpu=c4 - c3,
                      wall=t4 - t0, cpu=rcpu())))
"""
STEP_MODELS = {"hopper": ("dm_control", "suite/hopper.xml"),
               "gym_humanoid": ("gymnasium", "envs/mujoco/assets/humanoid.xml")}


def _child(code, cache, **fmt):
    env = dict(os.environ, LINKDYN_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join([str(_child.src)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH")
                                                        else [])))
    out = subprocess.run([sys.executable, "-c", code.format(**fmt) if fmt else code], capture_output=True,
                         text=True, env=env, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _empty(base):
    return pathlib.Path(tempfile.mkdtemp(prefix="cache-", dir=base))        # mode 0700


def _files(folder):
    return sum(1 for p in pathlib.Path(folder).rglob("*") if p.is_file())


def _median(rows, key):
    return statistics.median(r[key] for r in rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--swing-repeat", type=int, default=1, help="cold runs of the swing's first step (each ~1 min)")
    ap.add_argument("--no-swing", action="store_true")
    ap.add_argument("--step", action="store_true", help="only the first time step of MJCF robots, cold and warm")
    ap.add_argument("--step-models", nargs="+", default=list(STEP_MODELS), choices=list(STEP_MODELS))
    ap.add_argument("--src", type=pathlib.Path, default=SRC, help="the src/ folder whose linkdyn is measured")
    args = ap.parse_args(argv)
    _child.src = args.src.resolve()
    base = pathlib.Path(tempfile.mkdtemp(prefix="linkdyn-coldstart-"))
    lines = []

    def report(what, rows, keys=("wall", "cpu"), extra=""):
        vals = ", ".join(f"{k.rstrip('_')} {_median(rows, k):.3f} s" for k in keys)
        line = f"{what:<44} {vals}{extra}   (median of {len(rows)})"
        lines.append(line)
        print(line, flush=True)

    try:
        if args.step:
            keys = ("import_", "load", "sim", "sim_cpu", "run", "run_cpu", "wall", "cpu")
            for name in args.step_models:
                cold = []
                for _ in range(args.repeat):
                    warm_cache = _empty(base)
                    cold.append(_child(STEP, warm_cache, where=STEP_MODELS[name]))
                report(f"{name}: Simulation + run(0.01), empty cache", cold, keys)
                report(f"{name}: Simulation + run(0.01), warm cache",
                       [_child(STEP, warm_cache, where=STEP_MODELS[name]) for _ in range(args.repeat)], keys)
            return lines
        for module in ("numpy", "numba", "pinocchio", "mujoco"):
            try:
                report(f"import {module}", [_child(IMPORT, base, module=module) for _ in range(args.repeat)])
            except RuntimeError:
                print(f"import {module}: not installed")
        rows, files, numba = [], [], []
        for _ in range(args.repeat):
            cache = _empty(base)
            rows.append(_child(IMPORT, cache, module="linkdyn"))
            files.append(_files(cache))
            numba.append(rows[-1]["numba"])
        report("import linkdyn, empty cache", rows, extra=f"; cache files written {max(files)}, numba imported "
                                                          f"{any(numba)}")
        cold, warm_cache = [], None
        for _ in range(args.repeat):
            warm_cache = _empty(base)
            cold.append(_child(RNEA, warm_cache))
        keys = ("import_", "model", "call", "call_cpu", "wall", "cpu")
        report("first rnea (human_figure_16), empty cache", cold, keys)
        report("import linkdyn, warm cache", [_child(IMPORT, warm_cache, module="linkdyn")
                                               for _ in range(args.repeat)])
        report("import linkdyn + ld.Model, ld.rnea, ld.Simulation, warm", [_child(FIRST_NAMES, warm_cache)
                                                                          for _ in range(args.repeat)])
        report("first rnea, warm cache", [_child(RNEA, warm_cache) for _ in range(args.repeat)], keys)
        if not args.no_swing:
            cold = []
            for _ in range(args.swing_repeat):
                warm_cache = _empty(base)
                cold.append(_child(SWING, warm_cache))
            keys = ("import_", "scene", "call", "call_cpu", "wall", "cpu")
            report("swing demo: first step, empty cache", cold, keys)
            report("swing demo: first step, warm cache", [_child(SWING, warm_cache) for _ in range(args.repeat)],
                   keys)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return lines


if __name__ == "__main__":
    main()
