"""Hybrid force/position control: an arm presses on a wall while its tip tracks a line along it.

(Also ``puma_on_wall``: the same on a PUMA 560, whose tool also keeps its orientation.)

A planar 2-link arm (gravity in its plane) holds its tip on the wall x = 1.2 m, pushing with
5 N, while the tip follows z(t) = 0.3 + 0.2 sin(2 t) m along the wall.  The controller
(``ld.control.HybridForcePosition``, Yoshikawa 1987, derived with its corrections in its
docstring) uses a model whose masses are 10 % off; a force sensor reports the contact
force, whose integrated error the force loop removes.  The wall is a bilateral constraint of
the simulation (``ld.constraints.PointOnPlane``): the multiplier is the contact force.

    python examples/hybrid_wall.py [--plot hybrid_wall.png]

Prints the largest position and force errors after the first second; ``main`` returns them.
"""
from __future__ import annotations

import argparse

import numpy as np

import linkdyn as ld
from linkdyn import constraints as C

WALL_X, FORCE = 1.2, 5.0


def target(t):
    """The tip's wanted motion (x_d, x_d', x_d'') in the arm's plane (x, y): along the wall."""
    return (np.array([WALL_X, 0.3 + 0.2 * np.sin(2 * t)]), np.array([0.0, 0.4 * np.cos(2 * t)]),
            np.array([0.0, -0.8 * np.sin(2 * t)]))


def main(duration: float = 3.0, dt: float = 1e-3, plot: str | None = None, model_error: float = 0.1):
    """Run it; ``model_error``: the controller's link masses are off by this fraction (+ and -)."""
    true = ld.models.planar_2link(gravity=(0.0, -9.81, 0.0))
    wrong = ld.models.planar_2link(m1=1.0 + model_error, m2=1.0 - model_error,
                                   gravity=(0.0, -9.81, 0.0))                 # the controller's model
    wall = C.PointOnPlane("tool", normal=(1.0, 0.0, 0.0), offset=WALL_X)
    q0 = ld.planar_2link_ik(1.0, 1.0, WALL_X, 0.3)[0]
    v0 = np.zeros(2)
    applied = {"tau": np.zeros(2)}

    def sensor(t, q, v):
        """The contact force the arm pushes with (along +x): minus the wall's multiplier."""
        return -ld.constrained_dynamics(true, q, v, applied["tau"], [wall]).forces[0][0]

    ctrl = ld.control.HybridForcePosition(wrong, "tool", normal=(1.0, 0.0), target=target, force=lambda t: FORCE,
                                          K1=400.0, K2=40.0, K3=20.0, axes=(0, 1), measure=sensor)

    def controller(t, q, v):
        applied["tau"] = ctrl(t, q, v)
        return applied["tau"]
    sim = ld.Simulation(true, q0, v0, dt=dt, controller=controller, constraints=[wall], limits=False, contacts=False,
                        record_every=10)
    rec = sim.run(until=duration, progress=False)
    a = rec.segments[0].arrays()
    t = a["t"]
    tip = np.array([ld.frame_pose(true, q, "tool")[:2, 3] for q in a["q"]])
    want = np.array([target(s)[0] for s in t])
    force = np.array([-ld.constrained_dynamics(true, q, v, tau, [wall]).forces[0][0]
                      for q, v, tau in zip(a["q"], a["v"], a["tau"])])
    settled = t >= 1.0
    out = {"position_error": float(np.abs(tip[settled, 1] - want[settled, 1]).max()),
           "force_error": float(np.abs(force[settled] - FORCE).max()),
           "off_wall": float(np.abs(tip[:, 0] - WALL_X).max())}
    if plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
        ax[0].plot(t, tip[:, 1], label="tip y")
        ax[0].plot(t, want[:, 1], "--", label="wanted")
        ax[0].set_ylabel("position along the wall [m]")
        ax[0].legend()
        ax[1].plot(t, force, label="contact force")
        ax[1].axhline(FORCE, ls="--", color="k", label="wanted")
        ax[1].set_ylabel("force into the wall [N]")
        ax[1].set_xlabel("time [s]")
        ax[1].legend()
        fig.suptitle(f"hybrid force/position control, {model_error:.0%} model error")
        fig.savefig(plot, dpi=100)
        plt.close(fig)
    return out


def puma_on_wall(duration: float = 2.0, dt: float = 1e-3, model_error: float = 0.1, plot: str | None = None):
    """The same on a 6-dof arm: a PUMA 560's tool presses with 5 N on the wall x = x_0 (the task
    is the tool frame's pose, 6 coordinates: one constrained, five free) while it follows a line
    along y and keeps its orientation; the controller's link masses are ``model_error`` off."""
    from linkdyn.models.dh import from_dh, puma560_links
    true = ld.models.puma560()
    links = puma560_links()
    for k, L in enumerate(links):
        L.mass *= 1.0 + (model_error if k % 2 else -model_error)
    wrong = from_dh(links, name="puma560_wrong")
    q0 = np.array([0.0, 0.6, -2.2, 0.0, 0.9, 0.0])
    T0 = ld.frame_pose(true, q0, "tool")
    wall = C.PointOnPlane("tool", normal=(1.0, 0.0, 0.0), offset=float(T0[0, 3]))
    applied = {"tau": np.zeros(6)}

    def target(t):
        p = T0[:3, 3] + np.array([0.0, 0.1 * np.sin(2 * t), 0.0])
        v = np.array([0.0, 0.2 * np.cos(2 * t), 0.0, 0.0, 0.0, 0.0])
        a = np.array([0.0, -0.4 * np.sin(2 * t), 0.0, 0.0, 0.0, 0.0])
        return (p, T0[:3, :3]), v, a

    def sensor(t, q, v):
        return -ld.constrained_dynamics(true, q, v, applied["tau"], [wall]).forces[0][0]

    ctrl = ld.control.HybridForcePosition(wrong, "tool", normal=(1.0, 0, 0, 0, 0, 0), target=target,
                                          force=lambda t: FORCE, K1=400.0, K2=40.0, K3=20.0, task="frame",
                                          measure=sensor)

    def controller(t, q, v):
        applied["tau"] = ctrl(t, q, v)
        return applied["tau"]
    sim = ld.Simulation(true, q0, np.zeros(6), dt=dt, controller=controller, constraints=[wall], limits=False,
                        contacts=False, record_every=10)
    rec = sim.run(until=duration, progress=False)
    a = rec.segments[0].arrays()
    t = a["t"]
    poses = [ld.frame_pose(true, q, "tool") for q in a["q"]]
    pos_err = np.array([T[:3, 3] - target(s)[0][0] for T, s in zip(poses, t)])
    rot_err = np.array([np.linalg.norm(ld.spatial.log3(T[:3, :3] @ T0[:3, :3].T)) for T in poses])
    force = np.array([-ld.constrained_dynamics(true, q, v, tau, [wall]).forces[0][0]
                      for q, v, tau in zip(a["q"], a["v"], a["tau"])])
    settled = t >= 1.0
    return {"position_error": float(np.abs(pos_err[settled, 1:]).max()), "orientation_error": float(rot_err[settled].max()),
            "force_error": float(np.abs(force[settled] - FORCE).max()), "off_wall": float(np.abs(pos_err[:, 0]).max())}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--plot", default=None)
    args = p.parse_args()
    r = main(plot=args.plot)
    print(f"planar arm, after 1 s: position error {r['position_error'] * 1e3:.3f} mm, force error "
          f"{r['force_error']:.4f} N; the tip stays on the wall to {r['off_wall']:.1e} m")
    r = puma_on_wall()
    print(f"PUMA 560, after 1 s: position error {r['position_error'] * 1e3:.3f} mm, orientation error "
          f"{r['orientation_error']:.2e} rad, force error {r['force_error']:.4f} N")
