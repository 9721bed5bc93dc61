"""Identify the dynamic parameters of a DH arm from noisy joint torques.

    python examples/identify_arm.py                     # PUMA 560, 20 s of data at 200 Hz
    python examples/identify_arm.py --robot stanford --noise 0.02

1. simulate the arm along an exciting trajectory: a finite Fourier series (sum of sines) per
   joint, inside the joint limits, with q', q'' in closed form;
2. measure the torques: inverse dynamics (Spong, Hutchinson and Vidyasagar 2006, ch. 7, plus viscous and Coulomb
   friction (eq. 5.94), plus Gaussian noise;
3. find the base parameters (the combinations the torques determine) by a rank-revealing QR
   of the regressor Y(q, q', q'') (Spong, Hutchinson and Vidyasagar 2006, ch. 7 over random states;
4. estimate them by weighted least squares, and compare with the true values;
5. check the estimate on a second trajectory it has not seen.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import linkdyn as ld
from linkdyn.dynamics.regressor import base_parameters, identify, inertial_parameters, joint_torque_regressor


def fourier_trajectory(model, duration, rate, harmonics, rng):
    """q_j(t) = c_j + sum_k (a_jk sin(k w t) + b_jk cos(k w t)) / k, w = 2 pi / duration, scaled to
    stay within 80 % of each joint's range; returns t, Q, V, A (analytic derivatives)."""
    t = np.arange(int(duration * rate)) / rate
    w = 2 * np.pi / duration
    k = np.arange(1, harmonics + 1)
    lo = np.where(np.isfinite(model.lower), model.lower, -np.pi)
    hi = np.where(np.isfinite(model.upper), model.upper, np.pi)
    centre, half = (lo + hi) / 2, 0.8 * (hi - lo) / 2
    a, b = rng.uniform(-1, 1, (2, model.nv, harmonics)) / k
    # the series is bounded by sum |a| + |b|: scale each joint to at most 1 rad (and its range)
    amp = np.minimum(half, 1.0) / (np.abs(a).sum(1) + np.abs(b).sum(1))
    a, b = a * amp[:, None], b * amp[:, None]
    ph = w * t[:, None] * k[None, :]                                   # (n, h)
    s, c = np.sin(ph), np.cos(ph)
    Q = centre + s @ a.T + c @ b.T
    V = (c * w * k) @ a.T - (s * w * k) @ b.T
    A = -(s * (w * k) ** 2) @ a.T - (c * (w * k) ** 2) @ b.T
    return t, Q, V, A


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robot", choices=("puma560", "stanford"), default="puma560")
    p.add_argument("--duration", type=float, default=20.0, help="seconds of data (one period of the series)")
    p.add_argument("--rate", type=float, default=200.0, help="samples per second")
    p.add_argument("--harmonics", type=int, default=5)
    p.add_argument("--noise", type=float, default=0.01, help="torque noise, as a fraction of each joint's RMS torque")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="print the summary only")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    model = ld.models.puma560() if args.robot == "puma560" else ld.models.stanford_arm()
    nv = model.nv

    # the "real" arm: the model plus joint friction that the model does not carry
    viscous = rng.uniform(0.5, 2.0, nv) * np.where(np.arange(nv) < 3, 1.0, 0.1)
    coulomb = rng.uniform(0.2, 1.0, nv) * np.where(np.arange(nv) < 3, 1.0, 0.1)

    def measure(Q, V, A, noise_rng):
        tau = ld.rnea(model, Q, V, A) + viscous * V + coulomb * np.sign(V)
        sigma = args.noise * np.sqrt(np.mean(tau ** 2, axis=0))
        return tau + sigma * noise_rng.standard_normal(tau.shape), sigma

    t, Q, V, A = fourier_trajectory(model, args.duration, args.rate, args.harmonics, rng)
    TAU, sigma = measure(Q, V, A, rng)

    base = base_parameters(model, with_joint_terms=True)
    res = identify(model, Q, V, A, TAU, base=base, weights="joint")

    pi_true = inertial_parameters(model, with_joint_terms=True)
    n0 = 10 * (model.nbody - 1)
    pi_true[n0 + nv:n0 + 2 * nv] += viscous      # model.damping (if any) + the extra friction
    pi_true[n0 + 2 * nv:] += coulomb
    beta = base.beta(pi_true)
    z = (res.beta - beta) / res.std

    # a second trajectory the estimate has not seen
    _, Q2, V2, A2 = fourier_trajectory(model, args.duration / 2, args.rate, args.harmonics,
                                       np.random.default_rng(args.seed + 1))
    TAU2, sigma2 = measure(Q2, V2, A2, np.random.default_rng(args.seed + 2))
    pred = base.regressor(joint_torque_regressor(model, Q2, V2, A2, with_joint_terms=True)) @ res.beta
    val_rms = float(np.sqrt(np.mean((pred - TAU2) ** 2)))
    noise_rms = float(np.sqrt(np.mean(sigma2 ** 2)))
    elapsed = time.perf_counter() - t0

    if not args.quiet:
        print(f"{model.name}: {len(Q)} samples ({args.duration:g} s at {args.rate:g} Hz), "
              f"{len(base.names)} parameters, {base.nbase} base parameters, condition number {res.condition:.3g}\n")
        print(f"{'base parameter (leading term)':<32}{'true':>12}{'estimate':>12}{'std err':>11}{'rel err':>9}{'z':>7}")
        for k in range(base.nbase):
            name = base.describe(k)
            name = name if len(name) <= 31 else name[:28] + "..."
            b = beta[k] if abs(beta[k]) > 1e-12 * np.abs(beta).max() else 0.0     # round-off of E @ pi
            rel = abs(res.beta[k] - b) / abs(b) if b != 0.0 else np.nan
            rel_s = f"{100 * rel:8.2f}%" if np.isfinite(rel) else f"{'-':>9}"
            print(f"{name:<32}{b:>12.5g}{res.beta[k]:>12.5g}{res.std[k]:>11.2g}{rel_s}{z[k]:>7.2f}")
        good = np.abs(beta) > 10 * res.std
        print(f"\nwell-determined parameters (|true| > 10 std err): {good.sum()} of {base.nbase}, "
              f"median relative error {100 * np.median(np.abs(res.beta - beta)[good] / np.abs(beta[good])):.3f} %")
    print(f"errors within their standard errors: max |z| = {np.abs(z).max():.2f} over {base.nbase} parameters")
    print(f"validation trajectory: torque RMS error {val_rms:.4f} N m (noise RMS {noise_rms:.4f} N m); "
          f"{elapsed:.1f} s")
    return {"max_abs_z": float(np.abs(z).max()), "validation_rms": val_rms, "noise_rms": noise_rms,
            "beta": beta, "estimate": res.beta, "std": res.std}


if __name__ == "__main__":
    main()
