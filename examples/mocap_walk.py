"""A real walking capture to forces and back to physics (docs/mocap_tutorial.md).

Downloads bvhtools 1.6.0's 4-minute, 30 Hz capture (LAFAN1 skeleton) from PyPI into the user
cache (its hashes checked; nothing is vendored), then: reads it onto a figure built from its
skeleton (de Leva 1996 segments, 70 kg, 1.75 m), finds the contact phases, the ground reactions
and joint torques (inverse dynamics with unknown ground reactions), makes a piece of it
physically consistent with the dynamics filter of Yamane and Nakamura (2003), writes the plots
and the 3-D pages, and retargets the whole clip onto the 40-DoF figure
(``linkdyn.models.human_figure()``), reporting how far its joint limits clip the capture.

    python examples/mocap_walk.py [--out mocap_walk] [--start 170] [--seconds 6]
                                  [--filter-start 0] [--filter-seconds 3] [--bvh FILE]

``--bvh`` reads another BVH file instead of downloading (any walking capture with CMU- or
LAFAN1-style joint names).
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

import linkdyn as ld


def piece(cap, start, seconds):
    """The frames of ``cap`` in [start, start + seconds) s (the same figure and skeleton)."""
    k = np.flatnonzero((cap.t >= start) & (cap.t < start + seconds))
    if len(k) < 10:
        raise SystemExit(f"--start {start} --seconds {seconds}: only {len(k)} frames in the clip "
                         f"(it is {cap.t[-1]:.1f} s long)")
    return replace(cap, t=cap.t[k], q=cap.q[k], v=cap.v[k], a=cap.a[k])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="mocap_walk", help="folder for the plots and pages")
    ap.add_argument("--bvh", default=None, help="a BVH file to use instead of the downloaded capture")
    ap.add_argument("--start", type=float, default=170.0, help="start of the walking piece to plot (s)")
    ap.add_argument("--seconds", type=float, default=6.0, help="length of the walking piece to plot (s)")
    ap.add_argument("--filter-start", type=float, default=0.0, help="start of the piece to filter (s)")
    ap.add_argument("--filter-seconds", type=float, default=3.0, help="length of the piece to filter (s)")
    ap.add_argument("--mass", type=float, default=70.0)
    ap.add_argument("--height", type=float, default=1.75)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    # --8<-- [start:load]
    # 1. the capture: downloaded into the user cache once (bvhtools' sdist from PyPI, SHA-256 checked)
    path = Path(args.bvh) if args.bvh else ld.mocap.walking_capture()
    clock = time.perf_counter()
    cap = ld.mocap.load_bvh(path, mass=args.mass, height=args.height)       # 6 Hz cut-off by default
    print(f"{path.name}: {len(cap.t)} frames at {1 / cap.dt:.4g} Hz ({cap.t[-1]:.1f} s), "
          f"{len(cap.skeleton.names)} joints, nv = {cap.model.nv}; read in {time.perf_counter() - clock:.1f} s")

    # --8<-- [end:load]
    # --8<-- [start:ids]
    # 2. inverse dynamics over the whole clip: ground reactions, centres of pressure, torques, residuals
    clock = time.perf_counter()
    ids = ld.mocap.inverse_dynamics(cap)
    mg = args.mass * 9.81
    stance = ids.phases.any(axis=1)
    rms = 100 * np.sqrt(np.mean(np.sum(ids.residual[stance, :3] ** 2, axis=1))) / mg
    print(f"inverse dynamics in {time.perf_counter() - clock:.1f} s: residual root force {rms:.1f} % of body "
          f"weight (RMS over the {stance.sum()} frames with a foot down); peak ground reaction "
          f"{ids.grf[..., 2].sum(axis=1).max() / mg:.2f} body weights")

    # --8<-- [end:ids]
    # --8<-- [start:plots]
    # 3. a walking piece of it on a page: ground reactions, centres of pressure, torques, powers, residual
    walk = piece(cap, args.start, args.seconds)
    walk_ids = ld.mocap.inverse_dynamics(walk)
    ld.mocap.plot_capture(walk, walk_ids, out / "mocap_walk_forces.png")

    # --8<-- [end:plots]
    # --8<-- [start:filter]
    # 4. a piece made physically consistent by the dynamics filter (Yamane and Nakamura 2003), on the
    #    3-D page: the filtered figure with its ground forces, the capture as a translucent ghost
    sub = piece(cap, args.filter_start, args.filter_seconds)
    sub_ids = ld.mocap.inverse_dynamics(sub)
    clock = time.perf_counter()
    filt = ld.mocap.dynamics_filter(sub)
    took = time.perf_counter() - clock
    rep = filt.filter
    fz = rep.forces[..., 2].sum(axis=1)
    print(f"dynamics filter, {sub.t[0]:.1f}-{sub.t[-1]:.1f} s: {took:.1f} s ({(sub.t[-1] - sub.t[0]) / took:.2g} x "
          f"real time); root {100 * rep.root_rms:.1f} cm RMS from the capture, mean joint deviation "
          f"{np.degrees(rep.rms_deviation[1:].mean()):.1f} deg RMS, summed vertical reaction "
          f"{fz.mean() / mg:.2f} body weights on average, lowest sole point {1e3 * rep.gap.min():+.1f} mm")
    assert np.all(rep.forces[..., 2] >= -1e-6 * mg), "a ground force pulls"
    ld.mocap.plot_capture(sub, sub_ids, out / "mocap_filter_forces.png", filtered=filt)
    page = ld.mocap.view_capture(sub, sub_ids, filt)
    page.save(out / "mocap_walk.html")
    print(f"wrote {out / 'mocap_walk_forces.png'}, {out / 'mocap_filter_forces.png'} and {out / 'mocap_walk.html'}")

    # --8<-- [end:filter]
    # --8<-- [start:retarget]
    # 5. the whole clip on the 40-DoF figure with anatomical limits
    clock = time.perf_counter()
    figure = ld.models.human_figure(mass=args.mass, height=args.height)
    rt = ld.mocap.retarget(cap, figure)
    print(f"retargeted onto human_figure() in {time.perf_counter() - clock:.1f} s")
    print(rt.summary())
    k = np.flatnonzero((rt.t >= args.start) & (rt.t < args.start + min(args.seconds, 2.0)))   # 2 s on the page
    from linkdyn.recording import Recording
    rec = Recording()
    seg = rec.start_segment(figure)
    seg.t, seg.q, seg.v = list(rt.t[k]), list(rt.q[k]), list(np.zeros((len(k), figure.nv)))
    nan = [np.nan] * len(k)
    seg.kinetic, seg.potential, seg.loop_error, seg.loop_forces = nan, nan, nan, list(np.zeros((len(k), 0, 6)))
    ld.viz.view(rec, title=f"{path.name} on human_figure()", ghost=(cap.model, cap.t[k], cap.q[k]),
                ghost_label="the capture (ghost)").save(out / "mocap_walk_retargeted.html")
    print(f"wrote {out / 'mocap_walk_retargeted.html'}")
    # --8<-- [end:retarget]
    return cap, ids, filt, rt


if __name__ == "__main__":
    main()
