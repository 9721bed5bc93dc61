"""Contacts against MuJoCo, in one run on one machine: the same MJCF model in both simulators
(``linkdyn.models.mjcf_examples``), the outcome and the wall time per simulated second.

    python benchmarks/bench_mujoco.py [--repeats 3]

Scenes (dt = 1 ms):

* a box on four corner spheres on an incline, mu = 0.5, at 20 deg (it sticks) and 35 deg (it
  slides with a = g (sin - mu cos)); 1 s;
* a passive 16-body humanoid (35 velocities, 25 contact spheres, limits on every joint)
  dropped 0.3 m with its pelvis pitched; it lands, stands on its straight legs, topples and
  comes to rest; 3 s.

linkdyn runs with ``contact_method="timestep"`` (velocity-level, first order, the kind of
scheme MuJoCo uses) and, for the incline, also ``"events"`` (located events and RK4); MuJoCo
with its RK4 integrator (as the MJCF says) and with its default semi-implicit Euler.  The
ratio column is linkdyn's wall time over MuJoCo's RK4 and Euler ``mj_step`` loops.  Timings
are medians of ``--repeats`` runs, each from a fresh model (compiled code warmed first).

* public MJCF robots with their collision geometry (``load_mjcf(..., contacts=False)``: capsules,
  boxes, spheres and the floor plane; dm_control's and gymnasium's files, where installed),
  passive from their default pose for 3 s at the file's own time step: wall time per simulated
  second of linkdyn's time stepping against MuJoCo's default step (semi-implicit Euler, soft
  contacts) on the same file.  The issue's target is a ratio <= 1 on the humanoids.

Needs ``pip install mujoco`` (and dm_control, gymnasium for the public models).
"""
from __future__ import annotations

import argparse
import math
import statistics
import time
import warnings

import numpy as np

import linkdyn as ld
from linkdyn.models.mjcf_examples import humanoid_xml, incline_xml

G = 9.81


def run_mujoco(xml, T, integrator):
    import mujoco
    m = mujoco.MjModel.from_xml_string(xml.replace('integrator="RK4"', f'integrator="{integrator}"'))
    d = mujoco.MjData(m)
    n = int(round(T / m.opt.timestep))
    t0 = time.perf_counter()
    for _ in range(n):
        mujoco.mj_step(m, d)
    return time.perf_counter() - t0, m, d


def run_linkdyn(xml, T, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, info = ld.parse_mjcf(xml, return_info=True)
    sim = ld.Simulation(m, info.q0, dt=1e-3, contact_method=method, record_every=1000)
    t0 = time.perf_counter()
    sim.run(until=T, progress=False)
    return time.perf_counter() - t0, m, sim


def median_run(fn, repeats, *args):
    out = [fn(*args) for _ in range(repeats)]
    return statistics.median(o[0] for o in out), out[-1]


def incline(repeats):
    mu = 0.5
    print("box on an incline, mu = 0.5, 1 s: distance slid down the slope (m)")
    print(f"{'angle':>6}{'exact':>10}{'mujoco rk4':>12}{'mujoco euler':>14}{'ld timestep':>13}{'ld events':>11}"
          f"{'ld ts / mj rk4':>16}{'/ mj euler':>12}{'ld ev / mj rk4':>16}")
    for deg in (20, 35):
        th = math.radians(deg)
        xml = incline_xml(th, mu)
        a = max(G * (math.sin(th) - mu * math.cos(th)), 0.0)
        down = np.array([math.cos(th), 0.0, -math.sin(th)])
        start = ld.parse_mjcf(xml, return_info=True)[1].q0[:3]
        res, walls = {}, {}
        for key, fn, arg in (("mj_rk4", run_mujoco, "RK4"), ("mj_euler", run_mujoco, "Euler"),
                             ("ts", run_linkdyn, "timestep"), ("ev", run_linkdyn, "events")):
            w, (_, m, d) = median_run(fn, repeats, xml, 1.0, arg)
            pos = d.qpos[:3] if key.startswith("mj") else d.q[:3]
            res[key] = float((pos - start) @ down)
            walls[key] = w
        print(f"{deg:>5}°{0.5 * a:>10.5f}{res['mj_rk4']:>12.5f}{res['mj_euler']:>14.5f}{res['ts']:>13.5f}"
              f"{res['ev']:>11.5f}{walls['ts'] / walls['mj_rk4']:>16.2f}{walls['ts'] / walls['mj_euler']:>12.2f}"
              f"{walls['ev'] / walls['mj_rk4']:>16.2f}")


def humanoid(repeats):
    T = 3.0
    xml = humanoid_xml(tilt=0.15)
    print(f"\npassive humanoid dropped 0.3 m, {T:g} s: pelvis and head height at rest (m), wall time per "
          "simulated second")
    walls = {}
    w, (_, mm, dd) = median_run(run_mujoco, repeats, xml, T, "RK4")
    walls["mujoco rk4"] = w
    head = mm.body("head").id
    rows = [("mujoco rk4", dd.xpos[1, 2], dd.xpos[head, 2], w)]
    w, (_, mm, dd) = median_run(run_mujoco, repeats, xml, T, "Euler")
    walls["mujoco euler"] = w
    rows.append(("mujoco euler", dd.xpos[1, 2], dd.xpos[head, 2], w))
    w, (_, m, sim) = median_run(run_linkdyn, repeats, xml, T, "timestep")
    walls["linkdyn timestep"] = w
    rows.append(("linkdyn timestep", ld.frame_pose(m, sim.q, "pelvis")[2, 3], ld.frame_pose(m, sim.q, "head")[2, 3], w))
    print(f"{'':<18}{'pelvis':>8}{'head':>8}{'wall / sim s':>14}")
    for name, p, h, w in rows:
        print(f"{name:<18}{p:>8.4f}{h:>8.4f}{w / T:>12.3f} s")
    ts = walls["linkdyn timestep"]
    print(f"ratio linkdyn timestep / mujoco rk4: {ts / walls['mujoco rk4']:.2f}, / mujoco euler: "
          f"{ts / walls['mujoco euler']:.2f}")


PUBLIC = [("dm_control", "suite/humanoid.xml"), ("gymnasium", "envs/mujoco/assets/humanoid.xml"),
          ("gymnasium", "envs/mujoco/assets/ant.xml"), ("dm_control", "suite/hopper.xml"),
          ("dm_control", "suite/cheetah.xml"), ("dm_control", "suite/walker.xml")]


def public_models(repeats, T=3.0, only=None):
    import importlib.util
    import pathlib

    import mujoco
    print(f"\npublic MJCF models with their collision geometry, passive from the default pose, {T:g} s: "
          "wall time per simulated second")
    print("(linkdyn recording every 100th step, and every step: Simulation's default record_every=1)")
    print(f"{'model':<22}{'dt':>7}{'mujoco':>10}{'linkdyn':>10}{'ratio':>8}{'every step':>12}{'ratio':>8}   checks")
    for pkg, rel in PUBLIC:
        if only and f"{pkg.split('_')[0][:3]} {pathlib.Path(rel).stem}" not in only:
            continue
        spec = importlib.util.find_spec(pkg)
        if spec is None:
            print(f"{pkg + '/' + rel:<22}  (not installed)")
            continue
        path = pathlib.Path(spec.origin).parent / rel
        mm = mujoco.MjModel.from_xml_path(str(path))
        dt = mm.opt.timestep
        n = int(round(T / dt))

        def mj():
            d = mujoco.MjData(mm)
            t0 = time.perf_counter()
            for _ in range(n):
                mujoco.mj_step(mm, d)
            return time.perf_counter() - t0, d

        def ours(every=100):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")             # soft contacts become hard ones; q0 inside limits
                m, info = ld.load_mjcf(path, contacts=False, return_info=True)
                sim = ld.Simulation(m, info.q0, dt=dt, contact_method="timestep", record_every=every)
            t0 = time.perf_counter()
            sim.run(until=T, progress=False)
            return time.perf_counter() - t0, sim

        ours()                                              # compiled code loaded, collider built once
        wm = statistics.median(mj()[0] for _ in range(repeats))
        runs = [ours() for _ in range(repeats)]
        wl = statistics.median(r[0] for r in runs)
        every = [ours(1) for _ in range(repeats)]
        we = statistics.median(r[0] for r in every)
        ok = runs[-1][1].checks().ok and every[-1][1].checks().ok
        name = f"{pkg.split('_')[0][:3]} {path.stem}"
        print(f"{name:<22}{dt:>7.3f}{wm / T:>9.4f}s{wl / T:>9.4f}s{wl / wm:>8.1f}{we / T:>11.4f}s{we / wm:>8.1f}"
              f"   {'ok' if ok else 'FAIL'}")


def main(argv=None):
    import mujoco
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--models", nargs="*", default=None, metavar="NAME",
                   help='only these public models, as the table names them (e.g. "dm humanoid" "gym ant"); '
                        "the incline and the 16-body humanoid are skipped")
    args = p.parse_args(argv)
    print(f"linkdyn {ld.__version__}, mujoco {mujoco.__version__}")
    # warm the compiled code (the first call of a kernel loads or compiles it)
    run_linkdyn(humanoid_xml(), 0.01, "timestep")
    run_linkdyn(incline_xml(0.3, 0.5), 0.01, "events")
    if not args.models:
        incline(args.repeats)
        humanoid(args.repeats)
    public_models(args.repeats, only=args.models)


if __name__ == "__main__":
    main()
