"""Command line: ``linkdyn demo [robot]``, ``linkdyn info model.urdf``, ``linkdyn mocap capture.bvh``."""
from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np


SCENES = {
    "highbar": ("the high bar (Nakamura and Yamane 2000, Fig. 14): a 16-DoF figure hangs by both hands from a bar "
                "2.8 m above the floor, swings, lets go with the right hand at 1 s and opens that arm sideways, and "
                "swings on, turning about its left hand; its joints stop at their anatomical limits", 3.0),
    "swing": ("the swing (Nakamura and Yamane 2000, Fig. 15): the figure sits on the seat (a box; its thighs are "
              "capsules that rest on it by contact with friction), holding both ropes above its head; at 1.2 s the "
              "seat comes off the left rope and tilts, the thighs slide along it and off its end, and the figure "
              "drops, its hands still on the ropes, and swings on hanging from them above the ground", 4.0),
    "drop": ("a 40-DoF figure drops 0.5 m and lands on the ground: its sole corners meet the floor as "
             "unilateral contacts with friction, a posture controller holds the joints", 1.0),
}


#: the direction the 3D page of a scene looks from (None: the page's default, the front right):
#: the swing from the front left and low, so that the seat's left end dropping and the thighs
#: sliding towards it face the camera
SCENE_CAMERAS = {"swing": (1.0, 0.5, 0.15)}


def _scene(args) -> int:
    """Run a structure-varying scene, print its events and energy bookkeeping, write an
    animation, a plot and the recording."""
    from pathlib import Path

    from linkdyn.models import scenarios as sc

    what, default_duration = SCENES[args.robot]
    duration = args.duration if args.duration is not None else default_duration
    make = {"highbar": sc.high_bar_simulation, "swing": sc.swing_simulation, "drop": sc.drop_simulation}[args.robot]
    sim = make(dt=args.dt, record_every=max(1, int(round(0.01 / args.dt))))
    print(f"{args.robot}: {what}")
    print(sim.model)
    t0 = time.perf_counter()
    rec = sim.run(until=duration, progress=not args.quiet)
    wall = time.perf_counter() - t0
    how = ("time stepping: one velocity-level contact problem per step" if sim.contact_method == "timestep"
           else "RK4 on the configuration manifold, impacts located inside the step")
    print(f"\n{rec.t[-1]:g} s simulated in {wall:.2f} s of wall time (dt = {args.dt * 1e3:g} ms, "
          f"{how}, loops projected after every step)")
    _print_events(rec.events)
    st = sim.contact_stats
    if st.get("impacts"):
        print(f"impacts: {st['impacts']} ({st['small_impacts']} slower than 1 cm/s, not listed: a body touching "
              f"down again, {st['small_impact_energy']:.3g} J); limits and contacts are on by default")
    _print_segments(rec, passive=not sim.controller)
    W = sim.work
    print(f"energy ledger [J]: joints (actuators, less joint friction) {W[0]:+.4g}, limits and contacts {W[1]:+.4g} (impacts, friction), "
          f"structure changes {W[2]:+.4g}; E(end) - E(0) = {rec.energy[-1] - rec.energy[0]:+.4g}")
    checks = sim.checks()
    print("checks (each says where it looked: at every step, or at the recorded samples):")
    print("  " + str(checks).replace("\n", "\n  "))
    scene_failed = _scene_checks(sim, rec)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rec_path = out / f"{args.robot}.npz"
    sim.save(rec_path)
    print(f"recording written to {rec_path}")
    from linkdyn import viz
    props = _scene_props(args.robot, rec)
    anim_path = out / f"{args.robot}.{args.format}"
    if args.format == "html":       # the interactive 3D viewer: needs nothing else
        viz.view(rec, props=props, title=f"linkdyn: {args.robot}", camera=SCENE_CAMERAS.get(args.robot)).save(anim_path)
        print(f"3D viewer written to {anim_path} (open it in a browser)")
    try:
        from linkdyn.viz.animate import require_matplotlib
        require_matplotlib()
    except ImportError:
        print("matplotlib is not installed (pip install 'linkdyn[plot]'): no plot"
              + ("" if args.format == "html" else " or animation"), file=sys.stderr)
        return _verdict(checks, scene_failed)
    if args.format != "html":
        viz.animate(rec, anim_path, props=props, title=f"linkdyn: {args.robot}")
        print(f"animation written to {anim_path}")
    plot_path = out / f"{args.robot}.png"
    viz.plot_run(rec, plot_path, SCENE_JOINTS.get(args.robot), title=f"linkdyn: {args.robot}")
    print(f"plots written to {plot_path}")
    return _verdict(checks, scene_failed)


#: the events the scene and robot demos list: every structure change, and of the impacts the
#: MAX_LISTED that took the most energy together with the MAX_LISTED largest impulses
MAX_LISTED = 8


def _print_events(events):
    """The table of events: time, kind, |impulse|, energy lost, and what happened in words
    (``linkdyn.viz.runs.event_label``)."""
    from linkdyn.viz.runs import event_label, impulse_size
    impacts = [e for e in events if e.kind == "impact"]
    big = {id(e) for e in sorted(impacts, key=lambda e: -e.energy_loss)[:MAX_LISTED]}
    big |= {id(e) for e in sorted(impacts, key=lambda e: -np.nan_to_num(impulse_size(e)))[:MAX_LISTED]}
    print(f"{'t [s]':>7}  {'event':<8}{'|impulse| [N s]':>16}{'energy lost [J]':>17}  what")
    if not events:
        print("   (no events)")
    for e in events:
        if e.kind == "impact" and id(e) not in big:
            continue
        p = impulse_size(e)
        print(f"{e.t:7.3f}  {e.kind:<8}{(f'{p:.3f}' if np.isfinite(p) else '-'):>16}{e.energy_loss:17.4f}  "
              f"{event_label(e)}")
    if len(impacts) > len(big):
        rest = [e for e in impacts if id(e) not in big]
        print(f"   ... and {len(rest)} smaller impacts ({sum(e.energy_loss for e in rest):.3g} J in all, none with "
              f"a larger impulse than those listed; in the recording's events)")


def _print_segments(rec, passive):
    """Per segment (one structure): its loops, time span, energy change and the largest loop error.
    A passive run's energy is conserved between events: its drift (the spread of E in the
    segment) is the integrator's error; a driven one's change is the controller's work and the
    losses (the run's ledger, below, closes it)."""
    head = "energy drift [J]" if passive else "E change [J]"
    print(f"{'segment':>7}  {'loops':>5}  {'from':>7}  {'to':>7}  {head:>17}  {'max loop error':>15}")
    for k, seg in enumerate(rec.segments):
        a = seg.arrays()
        if len(a["t"]) < 2:
            continue
        E = a["kinetic"] + a["potential"]
        dE = float(np.ptp(E)) if passive else float(E[-1] - E[0])
        print(f"{k:7d}  {seg.model.nloops:5d}  {a['t'][0]:7.3f}  {a['t'][-1]:7.3f}  {dE:17.3e}  "
              f"{a['loop_error'].max():15.2e}")
    if not passive:
        print("(a controller drives the joints: the energy changes by its work and by what the contacts and "
              "limits take; the ledger below accounts for it)")


#: the joints a scene's plot shows (None: the first of the model's): the drop's legs
SCENE_JOINTS = {"drop": ["l_hip", "l_knee", "l_ankle", "r_hip", "r_knee", "r_ankle"]}


def _scene_checks(sim, rec) -> list:
    """What a person watching the scene would check, at every step, for the scenes that keep a
    watch (the swing: ``linkdyn.models.scenarios.SwingWatch``): printed; returns the names of
    those that failed."""
    w = getattr(sim, "watch", None)
    if w is None:
        return []
    from linkdyn.models.scenarios import limit_impacts
    limit = limit_impacts(rec)
    from linkdyn.viz.runs import unit_words, words
    at = f" (at t = {w.max_force_at[0]:.3f} s, {unit_words(w.max_force_at[1])})" if w.max_force_at else ""
    rows = [("head's lowest point above the ground", w.head_low >= 0.2, f"{w.head_low:.3f} m", ">= 0.2 m"),
            ("largest contact force", w.max_force <= 10 * w.weight,
             f"{w.max_force:.0f} N = {w.max_force / w.weight:.2f} m g{at}", "<= 10 m g"),
            ("limit impacts", len(limit) <= 20, f"{len(limit)}", "<= 20")]
    if hasattr(w, "overlap"):
        where = f" (at t = {w.overlap_at[0]:.3f} s, the {words(w.overlap_at[1])})" if w.overlap_at else ""
        rows.append(("seat overlapping the figure's collision geometry", w.overlap <= 0.01,
                     f"{1000 * w.overlap:.3f} mm{where}", "<= 10 mm"))
    for s, side in (("l", "left"), ("r", "right")):
        rows.append((f"{side} thigh's slide along the seat before it leaves", w.slide[s] >= 0.05 and w.off[s],
                     f"{w.slide[s]:.3f} m" + (f", last on it at {w.last_on[s]:.3f} s" if w.last_on[s] else "")
                     + ("" if w.off[s] else ", still on it"), ">= 0.05 m, then off"))
    print("scene checks (at every step):")
    for name, ok, value, bound in rows:
        print(f"  {'ok  ' if ok else 'FAIL'} {name:<50} {value}  ({bound})")
    return [name for name, ok, _, _ in rows if not ok]


def _verdict(checks, scene_failed=()) -> int:
    if checks.ok and not scene_failed:
        return 0
    failed = ", ".join([c.name for c in checks if not c.ok] + list(scene_failed))
    print(f"linkdyn demo: a check failed ({failed})", file=sys.stderr)
    return 1


def _scene_props(name, rec):
    from linkdyn import viz
    from linkdyn.kinematics import frame_pose
    seg = rec.segments[0]
    q0 = np.asarray(seg.q[0])
    if name == "highbar":
        g = frame_pose(seg.model, q0, "l_grip")[:3, 3]
        return [viz.bar(height=float(g[2]), x=float(g[0]), length=1.2,
                        label=f"the bar, {float(g[2]):.2g} m above the floor, on its uprights")]
    if name == "swing":
        tops = [frame_pose(seg.model, q0, f"{s}_rope_top_point")[:3, 3] for s in ("l", "r")]
        return [viz.bar(height=float(tops[0][2]), x=float(tops[0][0]), length=1.2,
                        label="the swing's frame: the ropes hang from its top bar"), viz.ground(z=0.0)]
    return [viz.ground(z=0.0)]


def _demo(args) -> int:
    import linkdyn as ld
    from linkdyn.models import ROBOTS

    if args.robot in SCENES:
        return _scene(args)

    model = ld.models.example_robot(args.robot)
    print(model)
    rng = np.random.default_rng(args.seed)
    q0 = ld.neutral(model)
    movable = np.isfinite(model.lower) & np.isfinite(model.upper)
    q0[movable] = 0.5 * (model.lower + model.upper)[movable] + 0.2 * rng.standard_normal(movable.sum())
    q0 = np.clip(q0, np.where(movable, model.lower, -np.inf), np.where(movable, model.upper, np.inf))
    v0 = np.zeros(model.nv)
    floating = ROBOTS[args.robot][1]
    if floating:
        # a tumbling floating base in zero gravity: energy and momentum must both stay put
        model = ld.models.example_robot(args.robot, gravity=(0.0, 0.0, 0.0))
        v0[:6] = [0.2, 0.0, 0.1, 0.5, -0.3, 0.8]
        v0[6:] = 0.5 * rng.standard_normal(model.nv - 6)
        what = "tumbling in zero gravity"
    else:
        what = "swinging under gravity, no torques"
    duration = 2.0 if args.duration is None else args.duration
    sim = ld.Simulation(model, q0, v0, dt=args.dt, integrator="rk4", record_every=max(1, int(0.01 / args.dt)))
    t0 = time.perf_counter()
    rec = sim.run(until=duration, progress=False)
    wall = time.perf_counter() - t0
    seg = rec.segments[0]
    traj = seg.arrays()
    E = traj["kinetic"] + traj["potential"]
    print(f"\n{args.robot}: {what}; RK4 on the configuration manifold, dt = {args.dt * 1e3:g} ms, joint limits "
          f"as unilateral stops (impacts located inside the step), {duration:g} s simulated in {wall:.2f} s of wall time")
    print(f"{'t [s]':>7} {'kinetic [J]':>13} {'potential [J]':>14} {'total [J]':>12}")
    for k in np.linspace(0, len(traj["t"]) - 1, 6).astype(int):
        print(f"{traj['t'][k]:7.3f} {traj['kinetic'][k]:13.6f} {traj['potential'][k]:14.6f} {E[k]:12.6f}")
    _print_events(rec.events)
    W = sim.work
    change = float(E[-1] - E[0])
    print(f"energy ledger [J]: E(end) - E(0) = {change:+.4g}: joint limits and contacts {W[1]:+.4g} (the impacts on "
          f"the stops, each inelastic: the 'energy lost' above), joints {W[0]:+.4g} (no torques; joint damping and "
          f"friction), the integrator {change - W.sum():+.3g} (its error)")
    impacts = [e for e in rec.events if e.kind == "impact"]
    if impacts:
        from linkdyn.viz.runs import event_label
        big = max(impacts, key=lambda e: e.energy_loss)
        print(f"where the energy went: {-change:.4g} J lost over the run, {-W[1]:.4g} J of it in the {len(impacts)} "
              f"impact{'s' * (len(impacts) != 1)} on the joint stops (the largest at {big.t:.3f} s, "
              f"{event_label(big)[len('impact: '):]}: {big.energy_loss:.4g} J); between them the energy is kept")
    else:
        print(f"where the energy went: nowhere: no impacts, and between events the energy is kept "
              f"(E(end) - E(0) = {change:+.3g} J)")
    _print_segments_between_events(seg, rec.events)
    checks = sim.checks()
    print("checks (each says where it looked: at every step, or at the recorded samples):")
    print("  " + str(checks).replace("\n", "\n  "))
    if args.plot:
        _plot(model, traj, args.plot, f"{args.robot}: {what}")
        print(f"plot written to {args.plot}")
    if args.format == "html":
        from pathlib import Path

        from linkdyn import viz
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        page = viz.view(rec, model=model, title=f"linkdyn: {args.robot}, {what}").save(out / f"{args.robot}.html")
        print(f"3D viewer written to {page} (open it in a browser)")
    return _verdict(checks)


def _print_segments_between_events(seg, events):
    """A passive run's energy between its events: each stretch's drift (the spread of E), which
    is the integrator's error; the events themselves take what the ledger says."""
    a = seg.arrays()
    t, E = a["t"], a["kinetic"] + a["potential"]
    cuts = sorted({float(e.t) for e in events})
    edges = [float(t[0])] + cuts + [float(t[-1])]
    worst = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        inside = (t > lo + 1e-12) & (t < hi - 1e-12)
        if inside.sum() >= 2:
            worst = max(worst, float(np.ptp(E[inside])))
    print(f"energy drift between events: {worst:.3e} J at most over {len(edges) - 1} stretch"
          f"{'es' * (len(edges) > 2)} (the integrator's error)")


def _plot(model, traj, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install 'linkdyn[plot]'); no plot written", file=sys.stderr)
        return
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for name in model.joint_names[:8]:
        s = model.q_slice(name)
        if s.stop - s.start == 1:
            ax1.plot(traj["t"], traj["q"][:, s.start], label=name)
    ax1.set_ylabel("joint angle [rad]")
    ax1.legend(fontsize=7, ncol=2)
    t, K, V = traj["t"], traj["kinetic"], traj["potential"]
    ax2.plot(t, K, label="kinetic")
    ax2.plot(t, V - V[0], label="potential (from start)")
    ax2.plot(t, K + V - V[0], "k--", label="total")
    ax2.set_xlabel("t [s]")
    ax2.set_ylabel("energy [J]")
    ax2.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _info(args) -> int:
    import linkdyn as ld
    path = args.path
    if str(path).lower().endswith((".xml", ".mjcf")):
        model = ld.load_mjcf(path)
    else:
        model = ld.load_urdf(path, floating_base=args.floating)
    print(model)
    for i in range(1, model.nbody):
        j = model.joints[i]
        print(f"  {i:3d} {model._joint_names[i]:<30} {j.kind_name:<14} parent {model.body_names[model.parent[i]]:<24}"
              f" q[{model.jnt_qadr[i]}:{model.jnt_qadr[i] + model.jnt_nq[i]}]")
    return 0


def _warmup_tasks():
    """(label, callable) pairs that together compile what the demos and the common entry points
    use: the dynamics of trees with every joint kind, one state and a stack of states, the
    Jacobians, gear couplings, the closed chains, the event-driven and the time-stepping schemes."""
    import linkdyn as ld
    from linkdyn.models import scenarios as sc

    def dynamics():
        m = ld.models.human_figure()
        q, v = ld.random_configuration(m, np.random.default_rng(0)), np.zeros(m.nv)
        ld.rnea(m, q, v, v), ld.crba(m, q), ld.aba(m, q, v, v), ld.nonlinear_effects(m, q, v)
        ld.kinetic_energy(m, q, v), ld.potential_energy(m, q)
        ld.rnea_derivatives(m, q, v, v), ld.aba_derivatives(m, q, v, v)
        g = ld.models.geared_gripper()                  # gear couplings: the geared ABA
        qg, vg = ld.neutral(g), np.zeros(g.nv)
        ld.aba(g, qg, vg, vg), ld.aba(g, np.tile(qg, (32, 1)), vg, vg)
        # the general RNEA kernel, for a model with joint springs or a rarer joint kind (the figure's
        # joints take the smallest one, Model._plain_rnea)
        b = ld.ModelBuilder("warmup_general")
        b.add_body("a", "world", ld.Universal("x", "y"), inertia=ld.Inertia(1.0, [0, 0, 0.1], np.eye(3) * 1e-2),
                   stiffness=[1.0, 1.0])
        s = b.build()
        qs, vs = ld.neutral(s), np.zeros(s.nv)
        ld.rnea(s, qs, vs, vs)

    def batched():
        m = ld.models.human_figure()
        n = 32                  # a stack at least SERIAL_BELOW long runs the parallel kernels
        Q = ld.random_configuration(m, np.random.default_rng(0), size=n)
        V = np.zeros((n, m.nv))
        ld.rnea(m, Q, V, V), ld.aba(m, Q, V, V), ld.crba(m, Q)

    def constraints():
        m = ld.models.puma560()
        q, v = ld.random_configuration(m, np.random.default_rng(0)), np.zeros(m.nv)
        ld.constrained_dynamics(m, q, v, v, [ld.constraints.PointFixed(m.frame_names[-1])])

    def kinematics():
        m = ld.models.human_figure()
        q = ld.random_configuration(m, np.random.default_rng(0))
        frame = m.frame_names[-1]
        ld.forward_kinematics(m, q), ld.frame_pose(m, q, frame), ld.jacobian(m, q, frame, "world")
        ld.joint_jacobians(m, q), ld.frame_velocity(m, q, np.zeros(m.nv), frame)

    def mjcf_robot():
        # a robot loaded from MJCF with its defaults, as a user's first script does: time stepping
        # with the file's collision geoms (the collider, the geom rows); one step at a time as
        # Simulation.run takes them when it records every step, then many steps in one compiled call
        from linkdyn.models.mjcf_examples import humanoid_xml
        m, info = ld.parse_mjcf(humanoid_xml(drop=0.002), return_info=True)
        for every in (1, 5):
            sim = ld.Simulation(m, info.q0, record_every=every)
            sim.run(sim.t + 6 * sim.dt, progress=False)

    def scene(make, steps):
        def run():
            sim = make(dt=1e-3, record_every=10)
            sim.run(until=steps * 1e-3, progress=False)
            sim.checks()
        return run
    return [("dynamics (rnea, crba, aba)", dynamics), ("batched dynamics", batched), ("kinematics and Jacobians", kinematics),
            ("user constraints", constraints),
            ("closed chains and events (high bar)", scene(sc.high_bar_simulation, 3)),
            ("time stepping (drop)", scene(sc.drop_simulation, 3)),
            ("time stepping with geom contacts (an MJCF robot)", mjcf_robot),
            ("time stepping with loops (swing)", scene(sc.swing_simulation, 2))]


def _warmup(args) -> int:
    """Compile (or load from the cache) everything the demos and the common calls use."""
    from tqdm import tqdm

    from linkdyn import _kernels
    tasks = _warmup_tasks()
    where = _kernels.cache_dir()
    print(f"linkdyn: compiling its kernels for this machine, once; they are cached in {where}" if where is not None
          else f"linkdyn: compiling its kernels in memory, not kept for the next process: no trusted cache folder "
               f"({_kernels._WHY[0]})", file=sys.stderr)
    _kernels._CompileNotice.quiet = True
    t0 = time.perf_counter()
    bar = tqdm(tasks, desc="compiling linkdyn's kernels", unit="task", file=sys.stderr, disable=args.quiet)
    for label, task in bar:
        bar.set_postfix_str(label)
        task()
    n = _kernels._CompileNotice.count
    print(f"linkdyn: ready in {time.perf_counter() - t0:.1f} s ({n} kernels compiled, the rest loaded from the cache)",
          file=sys.stderr)
    return 0


def _sweep(args) -> int:
    """A parameter study of a scene on Dask (``linkdyn.distributed.run_many``): drop heights x
    ground friction coefficients of the drop scene; writes the table and a plot to ``--out``."""
    from pathlib import Path

    from linkdyn import distributed as ldd
    grid = {"height": args.height, "friction": args.friction, "speed": [args.speed]}
    n = len(args.height) * len(args.friction)
    client = None
    if args.scheduler:
        from distributed import Client
        client = Client(args.scheduler)
    print(f"sweep {args.scene}: {n} runs of {args.until:g} s ({len(args.height)} heights x {len(args.friction)} "
          f"friction coefficients) on " + (args.scheduler or "a local cluster of " + (
              f"{args.workers} worker processes" if args.workers else "one worker process per core")))
    t0 = time.perf_counter()
    try:
        table = ldd.run_many(ldd.drop_scene, grid, until=args.until, client=client, summary=ldd.drop_summary,
                             n_workers=args.workers)
    finally:
        if client is not None:
            client.close()
    wall = time.perf_counter() - t0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"sweep_{args.scene}.{args.format}"
    if args.format == "parquet":
        table.to_parquet(path)
    else:
        table.to_csv(path, index=False)
    cols = [c for c in ("height", "friction", "ok", "impacts", "contact_work_J", "slip_m", "pelvis_z_m", "wall_s")
            if c in table]
    print(table[cols].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    bad = table[~table["ok"]]
    for _, row in bad.iterrows():
        print(f"failed: height {row['height']:g}, friction {row['friction']:g}: {row['error']}", file=sys.stderr)
    print(f"{n - len(bad)} of {n} runs in {wall:.1f} s; table written to {path}")
    try:
        from linkdyn.viz.animate import require_matplotlib
        require_matplotlib()
    except ImportError:
        print("matplotlib is not installed (pip install 'linkdyn[plot]'): no plot", file=sys.stderr)
        return 1 if len(bad) else 0
    import matplotlib.pyplot as plt
    ok = table[table["ok"]]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for mu, rows in ok.groupby("friction"):
        rows = rows.sort_values("height")
        axes[0].plot(rows["height"], -rows["contact_work_J"], "o-", label=f"friction {mu:g}")
        axes[1].plot(rows["height"], 1e3 * rows["slip_m"], "o-", label=f"friction {mu:g}")
    axes[0].set(xlabel="drop height [m]", ylabel="energy taken by the contacts [J]")
    axes[1].set(xlabel="drop height [m]", ylabel="largest sole slip [mm]")
    axes[1].legend()
    fig.suptitle(f"linkdyn sweep {args.scene}: {args.until:g} s, forward speed {args.speed:g} m/s")
    plot_path = out / f"sweep_{args.scene}.png"
    fig.savefig(plot_path, dpi=100)
    plt.close(fig)
    print(f"plot written to {plot_path}")
    return 1 if len(bad) else 0


def _phase_runs(down):
    """(start, stop) frame pairs of the runs of True in ``down``."""
    d = np.r_[False, down, False].astype(np.int8)
    edges = np.flatnonzero(np.diff(d))
    return list(zip(edges[::2], edges[1::2]))


def _mocap(args) -> int:
    """Read a BVH capture, find its ground reactions and joint torques, print a summary and
    write the table (issue 26); with ``--filter`` run the dynamics filter and print its deviation."""
    import csv
    from pathlib import Path

    from linkdyn import mocap
    cutoff = None if args.cutoff == 0 else args.cutoff     # a number in Hz, "auto" or 0 (none)
    ground = "auto" if args.ground is None else args.ground
    if args.filter_soles is not None and not args.filter_soles[2] > 0:
        raise ValueError(f"--filter-soles: WIDTH must be > 0, got {args.filter_soles[2]:g}")
    t0 = time.perf_counter()
    cap = mocap.load_bvh(args.file, mass=args.mass, height=args.height, scale=args.scale, cutoff=cutoff,
                         ground=ground)
    t1 = time.perf_counter()
    res = mocap.inverse_dynamics(cap, solver=args.solver, progress=not args.quiet and len(cap.t) > 2000)
    t2 = time.perf_counter()
    T = len(cap.t)
    W = cap.mass * 9.81
    unit = {1.0: "m", 0.01: "cm", 0.001: "mm", 0.0254: "in"}.get(cap.scale, f"{cap.scale:g} m")
    print(f"{args.file}: frames: {T} at {1 / cap.dt:g} Hz ({T * cap.dt:.2f} s), {len(cap.skeleton.names)} joints, "
          f"file unit {unit}, figure {cap.mass:g} kg, {cap.height:.3f} m, "
          f"cut-off {'none' if cap.cutoff is None else f'{cap.cutoff:.3g} Hz'}"
          f"{' (residual analysis)' if cutoff == 'auto' else ''}, ground at {cap.ground:+.3f} m (file)")
    on, off = mocap.contact_heights(cap)
    print(f"contact phases (a foot lands below {on * 1e3:.3g} mm, lifts above {off * 1e3:.3g} mm: the default heights "
          f"adapted to the capture):")
    for k, side in enumerate(cap.feet.names):
        runs = _phase_runs(res.phases[:, k])
        spans = ", ".join(f"{a * cap.dt:.2f}-{b * cap.dt:.2f} s" for a, b in runs[:6]) + (" ..." if len(runs) > 6 else "")
        print(f"  {side} foot: {len(runs)} stance phase(s), {res.phases[:, k].mean() * 100:.0f} % of the frames"
              + (f": {spans}" if runs else ""))
    peak = np.linalg.norm(res.grf, axis=2).max(axis=0) / W
    total = np.linalg.norm(res.grf.sum(axis=1), axis=1)
    print("peak ground reaction: " + ", ".join(f"{s} {p:.2f} BW" for s, p in zip(cap.feet.names, peak))
          + f", both feet {total.max() / W:.2f} BW")
    stance = res.phases.any(axis=1)
    rf = np.linalg.norm(res.residual[:, :3], axis=1)
    rm = np.linalg.norm(res.residual[:, 3:], axis=1)
    def rms(x):
        return float(np.sqrt(np.mean(x ** 2))) if x.size else float("nan")
    print(f"residual root force RMS: {rms(rf[stance]):.1f} N ({100 * rms(rf[stance]) / W:.1f} % BW) over the "
          f"stance frames, {rms(rf):.1f} N over all; moment RMS {rms(rm[stance]):.1f} N m (stance)")
    print(f"time: reading and kinematics {t1 - t0:.2f} s, inverse dynamics {t2 - t1:.2f} s "
          f"({1e3 * (t2 - t1) / T:.2f} ms a frame, solver {res.solver})")
    out = Path(args.out) / "mocap.csv"
    m = cap.model
    dof = []
    for j, name in enumerate(m.joint_names[1:], start=1):
        sl = m.v_slice(name)
        dof += [f"tau_{name}_{i}" for i in range(sl.stop - sl.start)]
    head = ["t"] + [f"residual_{c}" for c in ("fx", "fy", "fz", "mx", "my", "mz")]
    for s_ in cap.feet.names:
        head += [f"{s_}_down"] + [f"{s_}_grf_{c}" for c in "xyz"] + [f"{s_}_cop_{c}" for c in "xyz"]
    head += dof
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(head)
        for k in range(T):
            row = [cap.t[k], *res.residual[k]]
            for i in range(len(cap.feet.names)):
                row += [int(res.phases[k, i]), *res.grf[k, i], *res.cop[k, i]]
            row += list(res.tau[k])
            w.writerow([f"{x:.9g}" if isinstance(x, float) else x for x in row])
    print(f"table written to {out}")
    if args.filter or args.filter_soles is not None:
        t3 = time.perf_counter()
        soles = mocap.FILTER_SOLES if args.filter_soles is None else tuple(args.filter_soles)
        print(f"dynamics filter on soles (heel, toe, width) = {soles}")
        filt = mocap.dynamics_filter(cap, phases=res.phases, soles=soles, progress=not args.quiet and len(cap.t) > 2000)
        t4 = time.perf_counter()
        print(filt.filter.summary())
        print(f"time: dynamics filter {t4 - t3:.2f} s for {T * cap.dt:.2f} s of capture "
              f"({T * cap.dt / (t4 - t3):.2f} x real time)")
    return 0


def _number(kind, test, what):
    """An argparse type: ``kind`` of the text, refused (exit 2, no traceback) unless ``test`` holds."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not test(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value
    parse.__name__ = what
    return parse


_positive = _number(float, lambda v: math.isfinite(v) and v > 0, "a finite number > 0")
_nonnegative = _number(float, lambda v: math.isfinite(v) and v >= 0, "a finite number >= 0")
_finite = _number(float, math.isfinite, "a finite number")
_count = _number(int, lambda v: v >= 1, "a whole number >= 1")


def _cutoff(text):
    """--cutoff: ``auto`` or a finite number >= 0 (Hz; 0: no smoothing)."""
    return "auto" if text.strip().lower() == "auto" else _nonnegative(text)


def _out_problem(out: str) -> str | None:
    """Why the output folder ``out`` cannot take the files (None if it can): made if missing, then a
    temporary file is created in it and removed."""
    import tempfile
    from pathlib import Path
    folder = Path(out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not folder.is_dir():
            return "not a folder"
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return f"not writable ({exc.strerror or exc})"
    return None


def _parquet_engine() -> bool:
    import importlib.util
    return any(importlib.util.find_spec(m) is not None for m in ("pyarrow", "fastparquet"))


def main(argv=None) -> int:
    from linkdyn.models import ROBOTS
    import linkdyn
    p = argparse.ArgumentParser(prog="linkdyn", description="Dynamics of link systems.")
    p.add_argument("--version", action="version", version=f"linkdyn {linkdyn.__version__}")
    sub = p.add_subparsers(dest="cmd")
    d = sub.add_parser("demo", help="a structure-varying scene (highbar, swing, drop: writes an animation) or a "
                                     "real robot from example-robot-data (reports energy conservation)")
    d.add_argument("robot", nargs="?", default="highbar", choices=sorted(SCENES) + sorted(ROBOTS),
                   help="a scene of Nakamura and Yamane (2000, sec. 5) or a robot (default: highbar)")
    d.add_argument("--duration", type=_positive, default=None, help="seconds to simulate (default: the scene's own, "
                                                               "2 s for a robot)")
    d.add_argument("--dt", type=_positive, default=1e-3)
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--out", default=".", help="folder for the 3D viewer page (a robot's too), a scene's plot and "
                                              "recording (default: here)")
    d.add_argument("--format", default="html", choices=["html", "gif", "mp4"],
                   help="html: an interactive 3D viewer page (the default); gif, mp4: a scene's matplotlib animation")
    d.add_argument("--quiet", action="store_true", help="no progress bar")
    d.add_argument("--plot", default=None, help="a robot's run: write a PNG of joint angles and energies")
    d.set_defaults(func=_demo)
    w = sub.add_parser("warmup", help="compile linkdyn's kernels for this machine now (once; cached), "
                                       "so that the first real call starts at once")
    w.add_argument("--quiet", action="store_true", help="no progress bar")
    w.set_defaults(func=_warmup)
    s = sub.add_parser("sweep", help="a parameter study of a scene on Dask (drop heights x friction "
                                      "coefficients): writes a table and a plot (pip install 'linkdyn[distributed]')")
    s.add_argument("scene", nargs="?", default="drop", choices=["drop"], help="the scene (default: drop)")
    s.add_argument("--height", type=_finite, nargs="+", default=[0.1, 0.3, 0.5], help="drop heights [m]")
    s.add_argument("--friction", type=_nonnegative, nargs="+", default=[0.1, 0.4, 1.0],
                   help="the ground's friction coefficients")
    s.add_argument("--speed", type=_finite, default=0.5, help="forward speed at release [m/s] (default 0.5)")
    s.add_argument("--until", type=_positive, default=0.6, help="seconds to simulate each run (default 0.6)")
    s.add_argument("--workers", type=_count, default=None, help="worker processes of the local cluster "
                                                               "(default: one per core)")
    s.add_argument("--scheduler", default=None, help="the address of your Dask scheduler (default: a local cluster)")
    s.add_argument("--out", default=".", help="folder for the table and the plot (default: here)")
    s.add_argument("--format", default="csv", choices=["csv", "parquet"], help="the table's format (default csv)")
    s.set_defaults(func=_sweep)
    i = sub.add_parser("info", help="load a URDF or MJCF (.xml) file and list its joints")
    i.add_argument("path")
    i.add_argument("--floating", action="store_true", help="attach the root link by a free joint")
    i.set_defaults(func=_info)
    mc = sub.add_parser("mocap", help="a BVH capture: contact phases, ground reactions by a QP, joint torques "
                                      "by RNEA; prints a summary, writes a CSV table (pip install 'linkdyn[mocap]')")
    mc.add_argument("file", help="the .bvh file")
    mc.add_argument("--mass", type=_positive, default=70.0, help="body mass [kg] (default 70)")
    mc.add_argument("--height", type=_positive, default=None, help="body height [m] (default: the skeleton's)")
    mc.add_argument("--scale", type=_positive, default=None,
                    help="metres per file unit (default: m, cm, mm or inches, from the skeleton's height)")
    mc.add_argument("--cutoff", type=_cutoff, default="auto",
                    help="the kinematics' low-pass cut-off [Hz] (default auto: Winter's residual analysis; "
                         "0: no smoothing)")
    mc.add_argument("--ground", type=_finite, default=None, help="the floor's height [m] (default: from the feet)")
    mc.add_argument("--solver", default="proxsuite", choices=["proxsuite", "clarabel", "osqp"],
                    help="the QP solver of the ground reactions (default proxsuite)")
    mc.add_argument("--out", default=".", help="folder for mocap.csv (default: here)")
    mc.add_argument("--filter", action="store_true",
                    help="also run the dynamics filter (Yamane and Nakamura 2003) and print its deviation")
    mc.add_argument("--filter-soles", type=_nonnegative, nargs=3, default=None, metavar=("HEEL", "TOE", "WIDTH"),
                    help="the filter's soles: heel points moved back and toe points forward by these fractions "
                         "of the foot's length from the skeleton's heel and toe joints, their width times WIDTH "
                         "(default 0.4 0 1, linkdyn.mocap.FILTER_SOLES: heels behind the ankles, as real heels "
                         "are; 0 0 1 is the skeleton's own soles, on which the 4-minute walk of docs/mocap.md "
                         "falls at 110.6 s; the ground and contact phases stay the skeleton's feet's); "
                         "implies --filter")
    mc.add_argument("--quiet", action="store_true", help="no progress bar")
    mc.set_defaults(func=_mocap)
    args = p.parse_args(argv)
    if args.cmd is None:
        p.print_help()
        return 0
    if args.cmd in ("demo", "sweep", "mocap"):
        problem = _out_problem(args.out)                 # before the run, not after it (issue 28)
        if problem:
            p.error(f"--out {args.out}: {problem}")
        if getattr(args, "format", None) == "parquet" and not _parquet_engine():
            p.error("--format parquet needs pyarrow or fastparquet (pip install pyarrow); or use --format csv")
    if args.cmd in ("info", "mocap"):
        try:
            return args.func(args)
        except (OSError, ValueError, NotImplementedError) as exc:       # a missing or malformed file
            p.exit(2, f"linkdyn {args.cmd}: {exc}\n")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
