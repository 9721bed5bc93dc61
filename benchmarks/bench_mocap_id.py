"""Inverse dynamics of a real capture (issue 26): ``linkdyn.mocap.load_bvh`` and
``linkdyn.mocap.inverse_dynamics`` on the 4-minute 30 Hz walk of docs/mocap.md (``bvhtools``
1.6.0's ``testBvhFiles/test.bvh``, fetched by pip into a temporary folder, or the file given),
warm (after one run that compiles and caches the kernels), with the residual root force over
the single- and double-support frames and the summed vertical reaction.

    python benchmarks/bench_mocap_id.py [FILE.bvh] [--repeats 3]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

from linkdyn import mocap


def fetch(folder: Path) -> str:
    subprocess.run([sys.executable, "-m", "pip", "download", "bvhtools==1.6.0", "--no-deps", "--no-binary", ":all:",
                    "-d", str(folder)], check=True, capture_output=True)
    with tarfile.open(folder / "bvhtools-1.6.0.tar.gz") as tar:
        m = tar.getmember("bvhtools-1.6.0/testBvhFiles/test.bvh")
        tar.extractall(folder, members=[m], filter="data")
    return str(folder / m.name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", help="a BVH file (default: bvhtools' test.bvh, downloaded)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--mass", type=float, default=70.0)
    ap.add_argument("--height", type=float, default=1.75)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or fetch(Path(tmp))
        mocap.inverse_dynamics(mocap.load_bvh(path, mass=args.mass, height=args.height))   # compile, cache
        loads, ids = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            cap = mocap.load_bvh(path, mass=args.mass, height=args.height)
            t1 = time.perf_counter()
            res = mocap.inverse_dynamics(cap)
            t2 = time.perf_counter()
            loads.append(t1 - t0)
            ids.append(t2 - t1)
    T = len(cap.t)
    W = args.mass * 9.81
    n = res.phases.sum(1)
    rf = np.linalg.norm(res.residual[:, :3], axis=1) / W
    def rms(sel):
        return 100 * float(np.sqrt(np.mean(rf[sel] ** 2))) if sel.any() else float("nan")
    print(f"{T} frames at {1 / cap.dt:.4g} Hz ({T * cap.dt / 60:.1f} min), {len(cap.skeleton.names)} joints, "
          f"nv {cap.model.nv}, cut-off {cap.cutoff:.3g} Hz")
    print(f"load_bvh          median {statistics.median(loads):.2f} s  (runs {', '.join(f'{x:.2f}' for x in loads)})")
    print(f"inverse_dynamics  median {statistics.median(ids):.2f} s  (runs {', '.join(f'{x:.2f}' for x in ids)}), "
          f"{1e3 * statistics.median(ids) / T:.3f} ms a frame")
    print(f"frames: no foot down {np.sum(n == 0)}, single support {np.sum(n == 1)}, double {np.sum(n == 2)}")
    print(f"residual root force RMS: stance {rms(n > 0):.2f} % BW, single support {rms(n == 1):.2f}, "
          f"double {rms(n == 2):.2f}")
    print(f"summed vertical reaction, mean over the clip: {res.grf.sum(1)[:, 2].mean() / W:.3f} BW")


if __name__ == "__main__":
    main()
