"""The contact/limit complementarity solver (linkdyn.contact.lcp): time per solve and the
residual it reaches, on problems taken from simulations (the states a run passes through) and
on random frictional problems.

    python benchmarks/bench_lcp.py

Prints, per problem set: the number of rows, the median time of ``lcp.solve`` (Gauss-Seidel and
the active-set polish), the median and largest complementarity residual (``lcp.residual``:
the largest violation of lambda_n >= 0, w_n >= 0, lambda_n w_n = 0, friction in its cone,
no slip while sticking, slip against the force while sliding, relative to the problem's size).
"""
from __future__ import annotations

import time

import numpy as np

import linkdyn as ld
from linkdyn.contact import lcp


def problems_from_run(sim, until, every=5):
    """(A, r, kinds, mu, normal) of the acceleration-level problems along a run."""
    out = []
    orig = lcp.solve

    def spy(A, r, kind, mu, normal, lam0=None, **kw):
        out.append((np.array(A), np.array(r), np.array(kind), np.array(mu), np.array(normal)))
        return orig(A, r, kind, mu, normal, lam0, **kw)
    lcp.solve = spy
    try:
        sim.run(until=until, progress=False)
    finally:
        lcp.solve = orig
    return out[::every]


def random_problems(n, nc=6, nv=20, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        J = rng.standard_normal((3 * nc, nv))
        X = rng.standard_normal((nv, nv))
        A = J @ np.linalg.solve(X @ X.T + np.eye(nv), J.T)
        kind = np.tile([lcp.NORMAL, lcp.FRICTION, lcp.FRICTION2], nc)
        mu = np.repeat(rng.uniform(0.2, 1.0, nc), 3)
        normal = np.repeat(np.arange(0, 3 * nc, 3), 3)
        out.append((A, rng.standard_normal(3 * nc), kind, mu, normal))
    return out


def measure(name, probs):
    times, res = [], []
    for A, r, kind, mu, normal in probs:
        t0 = time.perf_counter()
        lam, rr = lcp.solve(A, r, kind, mu, normal)
        times.append(time.perf_counter() - t0)
        res.append(lcp.residual(A, r, kind, mu, normal, lam))
    rows = int(np.median([len(p[1]) for p in probs])) if probs else 0
    print(f"{name:<40} {len(probs):>6} {rows:>6} {np.median(times) * 1e6:>10.1f} {np.median(res):>11.1e} "
          f"{np.max(res):>11.1e}")


def main():
    from linkdyn.models import scenarios as sc
    from linkdyn.models.human import human_figure_16
    lcp.solve(np.eye(1), np.ones(1), np.ones(1, dtype=np.int64), np.zeros(1), np.zeros(1, dtype=np.int64))
    print(f"{'problems':<40} {'count':>6} {'rows':>6} {'median us':>10} {'median res':>11} {'max res':>11}")
    measure("random, 6 contacts with friction", random_problems(200))
    m, q = sc.drop(0.15, figure=human_figure_16())
    v = np.zeros(m.nv)
    v[0] = 0.6
    sim = ld.Simulation(m, q, v, dt=1e-3, controller=sc.posture_controller(m, q))
    measure("16-DoF figure landing (feet, limits)", problems_from_run(sim, 0.5))
    sim = sc.high_bar_simulation(dt=1e-3, release=0.4)
    measure("high bar with limits (loops eliminated)", problems_from_run(sim, 0.8))


if __name__ == "__main__":
    main()
