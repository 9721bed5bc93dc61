"""Collision detection (linkdyn.contact.collide) against MuJoCo's mj_collision on one scene:
20 free bodies (boxes and capsules, in turn) settled in a heap on a floor, 21 geoms.

    python benchmarks/bench_collision.py            # the heap
    python benchmarks/bench_collision.py --convex   # the GJK / EPA pairs against coal and MuJoCo

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



# --- the general convex pairs (GJK / EPA): accuracy and time per call against coal and MuJoCo ----
CONVEX = [("cylinder", "box"), ("ellipsoid", "ellipsoid"), ("capsule", "cylinder"), ("ellipsoid", "box"),
          ("mesh", "mesh")]


def _coal_shape(coal, shape, size):
    if shape == "box":
        return coal.Box(*(2.0 * np.asarray(size)))
    if shape == "cylinder":
        return coal.Cylinder(size[0], 2.0 * size[1])
    if shape == "capsule":
        return coal.Capsule(size[0], 2.0 * size[1])
    if shape == "ellipsoid":
        return coal.Ellipsoid(*size)
    return None


def convex_cases(s1, s2, n, seed=0):
    """n random poses of the pair: sizes 5-30 cm, centres within 0.5 m (about half touching)."""
    from linkdyn import spatial as sp
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        geoms = []
        for i, shape in enumerate((s1, s2)):
            q = rng.normal(size=4)
            R = sp.quat_to_matrix(q / np.linalg.norm(q))
            p = np.zeros(3) if i == 0 else rng.uniform(0.0, 0.5) * (lambda d: d / np.linalg.norm(d))(rng.normal(size=3))
            if shape == "mesh":
                V = rng.normal(size=(int(rng.integers(12, 40)), 3))
                V = V / np.linalg.norm(V, axis=1)[:, None] * rng.uniform(0.05, 0.3, 3)
                size = np.zeros(3)
            else:
                V = np.zeros((0, 3))
                size = np.zeros(3)
                k = {"sphere": 1, "capsule": 2, "cylinder": 2, "box": 3, "ellipsoid": 3}[shape]
                size[:k] = rng.uniform(0.05, 0.3, k)
            geoms.append((shape, R, p, size, V))
        out.append(geoms)
    return out


def convex_bench(n=300):
    import numba

    from linkdyn.contact.collision import _convex as C
    from linkdyn.model.geometry import SHAPES, convex_hull
    try:
        import coal
    except ImportError:
        coal = None

    @numba.njit(cache=True)
    def loop(t1, p1, R1, s1, V1, t2, p2, R2, s2, V2, reps, out):
        m = 0
        for _ in range(reps):
            m = C.convex_convex(t1, p1, R1, s1, V1, t2, p2, R2, s2, V2, 1e9, out, 0)
        return m

    print("\nconvex pairs (GJK / EPA), %d random poses each: |dist - reference| (MuJoCo: max; coal: "
          "median/max), normal vs coal (separated poses, max), median time per call" % n)
    print(f"{'pair':<22}{'vs MuJoCo':>11}{'vs coal':>12}{'normal vs coal':>16}"
          f"{'linkdyn':>11}{'coal (Py)':>11}{'MuJoCo (Py)':>13}")
    for s1, s2 in CONVEX:
        cases = convex_cases(s1, s2, n)
        e_mj = e_n = 0.0
        dc = []
        t_ours, t_coal, t_mj = [], [], []
        out = np.zeros((1, 7))
        for geoms in cases:
            (a1, R1, p1, z1, V1), (a2, R2, p2, z2, V2) = geoms
            if a1 == "mesh":
                V1 = convex_hull(V1)
                z1 = np.array([np.linalg.norm(V1, axis=1).max(), 0.0, 0.0])
            if a2 == "mesh":
                V2 = convex_hull(V2)
                z2 = np.array([np.linalg.norm(V2, axis=1).max(), 0.0, 0.0])
            t1, t2 = SHAPES[a1], SHAPES[a2]
            args = (t1, p1, R1, z1, V1, t2, p2, R2, z2, V2)
            loop(*args, 1, out)
            ours = out[0, 0]
            reps = 200
            t0 = time.perf_counter()
            loop(*args, reps, out)
            t_ours.append((time.perf_counter() - t0) / reps)
            # MuJoCo: mj_geomDistance on a two-geom scene (one contact, multiccd off, tight tolerance)
            xml = ['<mujoco><asset>']
            gx = []
            for i, (sh, R, p, z, V) in enumerate(((a1, R1, p1, z1, V1), (a2, R2, p2, z2, V2))):
                q = np.empty(4)
                mujoco.mju_mat2Quat(q, R.ravel())
                if sh == "mesh":
                    xml.append(f'<mesh name="m{i}" vertex="{" ".join(repr(float(x)) for x in V.ravel())}"/>')
                    g = f'type="mesh" mesh="m{i}"'
                else:
                    g = f'type="{sh}" size="{" ".join(repr(float(x)) for x in z)}"'
                gx.append(f'<body pos="{" ".join(repr(float(x)) for x in p)}" quat="{" ".join(repr(float(x)) for x in q)}">'
                          f'<geom {g}/></body>')
            xml += ["</asset><worldbody>"] + gx + ["</worldbody></mujoco>"]
            mjm = mujoco.MjModel.from_xml_string("".join(xml))
            mjm.opt.ccd_tolerance, mjm.opt.ccd_iterations = 1e-12, 1000
            mjm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_MULTICCD
            mjd = mujoco.MjData(mjm)
            mujoco.mj_forward(mjm, mjd)
            ft = np.zeros(6)
            d_mj = mujoco.mj_geomDistance(mjm, mjd, 0, 1, 10.0, ft)
            t0 = time.perf_counter()
            for _ in range(reps):
                mujoco.mj_geomDistance(mjm, mjd, 0, 1, 10.0, ft)
            t_mj.append((time.perf_counter() - t0) / reps)
            e_mj = max(e_mj, abs(d_mj - ours))
            if coal is not None and a1 != "mesh" and a2 != "mesh":
                c1, c2 = _coal_shape(coal, a1, z1), _coal_shape(coal, a2, z2)
                T1, T2 = coal.Transform3s(R1, p1), coal.Transform3s(R2, p2)
                req = coal.DistanceRequest()          # coal's default tolerances (1e-6): at 1e-10
                res = coal.DistanceResult()           # its EPA fails on some poses (returns 1.8e308)
                coal.distance(c1, T1, c2, T2, req, res)
                dc.append(abs(res.min_distance - ours))
                if ours > 0:                          # normals: separated poses (unique there)
                    e_n = max(e_n, np.abs(np.asarray(res.normal) - out[0, 4:7]).max())
                t0 = time.perf_counter()
                for _ in range(reps):
                    res = coal.DistanceResult()
                    coal.distance(c1, T1, c2, T2, req, res)
                t_coal.append((time.perf_counter() - t0) / reps)
        med = lambda x: f"{statistics.median(x) * 1e6:8.2f} us" if x else "       -   "      # noqa: E731
        ec = f" {np.median(dc):5.0e}/{max(dc):5.0e}" if t_coal else f"{'-':>12}"
        en = f"{e_n:16.1e}" if t_coal else f"{'-':>16}"
        print(f"{s1 + '-' + s2:<22}{e_mj:11.1e}{ec}{en}{med(t_ours):>11}{med(t_coal):>11}{med(t_mj):>13}")


if __name__ == "__main__":
    import sys
    if "--convex" in sys.argv:
        convex_bench()
    else:
        main()
