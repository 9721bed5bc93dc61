"""The dynamics filter on a real capture (issue 26): ``linkdyn.mocap.dynamics_filter`` on the
first SECONDS of the 4-minute 30 Hz walk of docs/mocap.md (``bvhtools`` 1.6.0's
``testBvhFiles/test.bvh``, fetched by pip into a temporary folder, or the file given), warm
(after a 20-frame run that compiles and caches the kernels), with the load average, the root
path's deviation from the capture and the physics checks' margins.

    python benchmarks/bench_mocap_filter.py [FILE.bvh] [--seconds 50] [--repeats 1]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from bench_mocap_id import fetch

from linkdyn import mocap


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", help="a BVH file (default: bvhtools' test.bvh, downloaded)")
    ap.add_argument("--seconds", type=float, default=50.0)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or fetch(Path(tmp))
        cap = mocap.load_bvh(path, mass=70, height=1.75)
    T = min(len(cap.t), int(round(args.seconds / cap.dt)) + 1)
    ph = mocap.contact_phases(cap)[:T]
    seg = replace(cap, t=cap.t[:T], q=cap.q[:T], v=cap.v[:T], a=cap.a[:T])
    mocap.dynamics_filter(replace(seg, t=seg.t[:20], q=seg.q[:20], v=seg.v[:20], a=seg.a[:20]), phases=ph[:20])
    for _ in range(args.repeats):
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        r = mocap.dynamics_filter(seg, phases=ph).filter
        wall = time.perf_counter() - t0
        sim = seg.t[-1] - seg.t[0]
        print(f"{sim:.1f} s of capture, {len(r.t)} steps: {wall:.2f} s ({sim / wall:.2f} x real time, "
              f"{1e3 * wall / len(r.t):.2f} ms a step), load average {load0:.1f}-{os.getloadavg()[0]:.1f}")
    mu = np.array([c.friction for c in cap.model.contacts])
    fz = r.forces[..., 2]
    print(f"root {100 * r.root_rms:.2f} cm RMS from the capture ({100 * r.root_deviation.max():.2f} cm at most); "
          f"lowest sole point {1e3 * r.gap.min():+.2f} mm; pyramids held to "
          f"{(np.abs(r.forces[..., :2]) - mu[None, :, None] * fz[..., None]).max():.1e} N; root residual "
          f"{np.abs(r.tau[:, :6]).max():.1e}; vertical reaction {fz.sum(1).mean() / (70 * 9.81):.4f} BW")


if __name__ == "__main__":
    main()
