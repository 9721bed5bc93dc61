"""An initial state whose geoms overlap deeply: dm_control's CMU humanoid walker file on its own (its
pelvis has no joint, so MuJoCo welds it to the world, and without the free joint dm_control adds
when it attaches the walker, MuJoCo's parent filter does not apply: the thighs' and lower back's
capsules sit 8 cm inside the pelvis' capsule; MuJoCo's own detector reports 12 contacts at qpos0).
The projection must not make things worse (it once turned a foot by 1234 rad), the overlaps it
cannot remove within the joints' limits are named in a warning and held by the step (no deeper,
no push-out), and ``checks()`` says so."""
from __future__ import annotations

import importlib.util
import pathlib
import warnings

import numpy as np
import pytest

import linkdyn as ld

_spec = importlib.util.find_spec("dm_control")
WALKER = (pathlib.Path(_spec.origin).parent / "locomotion/walkers/assets/humanoid_CMU_V2020.xml") if _spec else None


@pytest.mark.skipif(WALKER is None or not WALKER.exists(), reason="dm_control (its model files) is not installed")
def test_a_deep_initial_overlap_is_projected_sanely_named_and_held():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, info = ld.load_mjcf(WALKER, return_info=True)
    with pytest.warns(UserWarning, match=r"overlap\(s\) of the initial state cannot be projected out.*root_geom/"):
        sim = ld.Simulation(m, info.q0, dt=0.002)
    ts = sim._uni
    before = ts._overlap(info.q0, ts.catalog.gaps(info.q0))[0]
    after, deepest = ts._overlap(sim.q, ts.catalog.gaps(sim.q))
    assert after < before                                    # the projection only lowered the overlap
    lo, hi = np.asarray(m.lower), np.asarray(m.upper)
    assert np.all(sim.q >= lo - 1e-6) and np.all(sim.q <= hi + 1e-6)       # every joint inside its range
    assert 0.05 < deepest < 0.09                             # the pelvis' overlaps are left, as MuJoCo has them
    for _ in range(10):
        sim.step()                                           # solved: held, not pushed out, no error
        now = ts._overlap(sim.q, ts.catalog.gaps(sim.q))[1]
        assert now <= deepest + 1e-9                         # no deeper
    assert sim.contact_stats["held"] >= 1
    assert sim.contact_stats["lcp_residual"] <= 1e-3
    text = str(sim.checks())
    assert "FAIL deepest penetration" in text                # and the checks say it
