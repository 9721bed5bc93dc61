"""Collision detection (linkdyn.contact.collide) against MuJoCo's mj_collision on one scene:
20 free bodies (boxes and capsules, in turn) settled in a heap on a floor, 21 geoms.

    python benchmarks/bench_collision.py

Both sides start from a configuration and end with the contact list, timed per call (median of
blocks, thread CPU time, blocks of the two alternating): linkdyn's ``collide`` (input check,
forward kinematics, broad and narrow phase, a result object of copied arrays) and its
``Collider.run`` (the unvalidated compiled pipeline the simulation will call), MuJoCo's
``mj_kinematics`` + ``mj_collision`` (``mj_collision`` alone reads the geom poses
``mj_kinematics`` left) and ``mj_collision`` alone.  Prints the times and the ratios.
"""
from __future__ import annotations

import statistics
import time

import mujoco
import numpy as np

import linkdyn as ld

N = 20


def scene(seed=0):
    rng = np.random.default_rng(seed)
    b = ld.ModelBuilder("heap")
    xml = ['<mujoco><worldbody><geom type="plane" size="0 0 1"/>']
    b.add_geom("world", "plane", ())
    for i in range(N):
        shape = "box" if i % 2 == 0 else "capsule"
        size = list(rng.uniform(0.05, 0.15, 3)) if shape == "box" else [rng.uniform(0.03, 0.08), rng.uniform(0.08, 0.2)]
        xml.append(f'<body name="b{i}"><freejoint/><geom type="{shape}" size="{" ".join(map(str, size))}"/></body>')
        b.add_body(f"b{i}", "world", ld.FreeFlyer(), inertia=ld.Inertia(1.0, [0, 0, 0], np.eye(3) * 0.01))
        b.add_geom(f"b{i}", shape, size)
    xml.append("</worldbody></mujoco>")
    mjm = mujoco.MjModel.from_xml_string("\n".join(xml))
    mjd = mujoco.MjData(mjm)
    # let MuJoCo drop them into a heap: a configuration with many contacts of every kind
    mjd.qpos[:] = mjm.qpos0
    for i in range(N):
        mjd.qpos[7 * i:7 * i + 3] = [rng.uniform(-0.4, 0.4), rng.uniform(-0.4, 0.4), 0.2 + 0.25 * i]
    for _ in range(3000):
        mujoco.mj_step(mjm, mjd)
    q = np.concatenate([np.concatenate([mjd.qpos[7 * i:7 * i + 3], mjd.qpos[7 * i + 3:7 * i + 7][[1, 2, 3, 0]]])
                        for i in range(N)])
    return b.build(), q, mjm, mjd


def median_times(fns, calls=2000, blocks=15):
    """Median over blocks of the thread CPU seconds per call of each function, blocks alternating."""
    for f in fns:
        f()
    times = [[] for _ in fns]
    for _ in range(blocks):
        for k, f in enumerate(fns):
            t0 = time.thread_time()
            for _ in range(calls):
                f()
            times[k].append((time.thread_time() - t0) / calls)
    return [statistics.median(t) for t in times]


def main():
    model, q, mjm, mjd = scene()
    mujoco.mj_forward(mjm, mjd)
    ours = ld.contact.collide(model, q)
    c = ld.contact.collision.collider(model)
    print(f"scene: {model.ngeom} geoms, {len(model.geom_pairs)} candidate pairs; "
          f"contacts: linkdyn {len(ours)}, MuJoCo {mjd.ncon}")

    def mj_both():
        mujoco.mj_kinematics(mjm, mjd)
        mujoco.mj_collision(mjm, mjd)

    t = median_times([lambda: ld.contact.collide(model, q), lambda: c.run(q, 0.0), mj_both,
                      lambda: mujoco.mj_collision(mjm, mjd)])
    names = ["linkdyn collide", "linkdyn Collider.run", "mj_kinematics + mj_collision", "mj_collision"]
    for n, x in zip(names, t):
        print(f"{n:<32} {x * 1e6:8.2f} us")
    print(f"ratio collide / (mj_kinematics + mj_collision):      {t[0] / t[2]:.2f}")
    print(f"ratio Collider.run / (mj_kinematics + mj_collision): {t[1] / t[2]:.2f}")
    print(f"ratio Collider.run / mj_collision:                   {t[1] / t[3]:.2f}")


if __name__ == "__main__":
    main()
