"""The demo scenes as a person watching them would believe them (Nakamura and Yamane 2000,
sec. 5): physical claims asserted after every step of the run, not at the recorded samples."""
import numpy as np
import pytest

from linkdyn.kinematics import frame_pose
from linkdyn.models import scenarios as sc


def _axis_distance(point, bar):
    """Distance of ``point`` from the bar's axis (the world y axis through ``bar``)."""
    return float(np.hypot(point[0] - bar[0], point[2] - bar[2]))


def test_high_bar_at_competition_height_feet_clear_and_the_freed_hand_leaves_the_bar():
    """Fig. 14: the bar 2.8 m above the floor; every step the feet stay >= 0.3 m above the
    floor (the physics' ground plane); within 0.5 s of the release the freed right hand is >= 0.10 m
    from the bar's axis, and the left hand stays on it (the figure turns about it)."""
    release = 0.6
    sim = sc.high_bar_simulation(release=release)
    floor = [pl for pl in sim.model.planes if pl.body == 0 and pl.extent is None]
    assert len(floor) == 1 and abs(floor[0].p[2]) < 1e-12 and floor[0].R[2, 2] == pytest.approx(1.0)
    bar = frame_pose(sim.model, sim.q, "bar")[:3, 3]
    assert bar[2] == pytest.approx(sc.COMPETITION_BAR_HEIGHT)
    feet, away, left = np.inf, 0.0, 0.0
    while sim.t < release + 0.5 - 1e-9:
        sim.step()
        m = sim.model
        feet = min(feet, min(frame_pose(m, sim.q, f"{s}_{e}")[2, 3] for s in "lr" for e in ("heel", "toe", "sole")))
        if sim.t > release:
            away = max(away, _axis_distance(frame_pose(m, sim.q, "r_grip")[:3, 3], bar))
        left = max(left, _axis_distance(frame_pose(m, sim.q, "l_grip")[:3, 3], bar))
    assert [e.kind for e in sim.recording.events] == ["cut"]
    assert feet >= 0.3, f"the feet came within {feet:.3f} m of the floor"
    assert away >= 0.10, f"the released hand stayed within {away:.3f} m of the bar's axis"
    assert left < 1e-6
    assert sim.checks().ok, str(sim.checks())


def test_released_arm_posture_opens_the_arm_outward():
    """The released arm's posture puts the hand out to its own side, below the shoulder line of
    the overhead grip (a sign error would cross it over the body)."""
    model, q = sc.high_bar(bar_height=None, floor=False)
    q2 = sc.released_arm_posture(model, q, "r")
    for side, sign in (("r", -1.0), ("l", 1.0)):
        q3 = sc.released_arm_posture(model, q, side)
        hand = frame_pose(model, q3, f"{side}_grip")[:3, 3]
        trunk = frame_pose(model, q3, "head_top")[:3, 3]
        assert sign * (hand[1] - trunk[1]) > 0.5          # out to its own side
        assert hand[2] < frame_pose(model, q, f"{side}_grip")[2, 3]
    changed = np.flatnonzero(q2 != q)
    arm = set(range(model.q_slice("r_shoulder").start, model.q_slice("r_shoulder").stop)) | {model.q_slice("r_elbow").start}
    assert set(changed) <= arm
