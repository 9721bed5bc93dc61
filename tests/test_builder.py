"""ModelBuilder.from_model: a frozen model back into a builder, extended and built again."""
import numpy as np
import pytest

import linkdyn as ld
from conftest import assert_close
from linkdyn.models import mechanisms as mech

MODELS = {
    "talos": lambda: ld.models.example_robot("talos"),
    "puma560 (a massless rotor link)": lambda: ld.models.puma560(),
    "random tree with joint terms": lambda: ld.models.random_tree(9, floating=True, seed=3, joint_terms=True),
    "four_bar (revolute cut)": lambda: mech.four_bar(),
    "spatial loop (universal cut)": lambda: mech.spatial_loop("universal"),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_round_trip_is_the_same_model(name):
    m = MODELS[name]()
    m2 = ld.ModelBuilder.from_model(m).build()
    assert (m2.nq, m2.nv, m2.nbody, m2.joint_names) == (m.nq, m.nv, m.nbody, m.joint_names)
    assert set(m2.frame_names) == set(m.frame_names)
    for what in ("lower", "upper", "velocity_limit", "effort_limit", "armature", "damping", "friction", "gravity"):
        np.testing.assert_array_equal(getattr(m2, what), getattr(m, what), err_msg=what)
    assert [(lp.name, lp.kind, lp.a, lp.b) for lp in m2.loops] == [(lp.name, lp.kind, lp.a, lp.b) for lp in m.loops]
    rng = np.random.default_rng(0)
    for _ in range(3):
        q = ld.random_configuration(m, rng)
        v, a = rng.standard_normal((2, m.nv))
        assert_close(ld.rnea(m2, q, v, a), ld.rnea(m, q, v, a), 1e-12, "rnea")
        for f in m.frame_names:
            assert_close(ld.frame_pose(m2, q, f), ld.frame_pose(m, q, f), 1e-12, f)
        if m.nloops:
            assert_close(ld.loops.loop_error(m2, q), ld.loops.loop_error(m, q), 1e-12, "loop error")


def test_extend_a_built_model_with_a_loop():
    """A serial chain closed onto the world afterwards becomes a closed chain."""
    arm = ld.models.planar_2link()
    b = ld.ModelBuilder.from_model(arm)
    tool = ld.frame_pose(arm, np.array([0.4, 0.9]), "tool")
    b.add_loop("pin", arm.body_names[arm.body_id("tool")], "world", ld.Revolute("z"),
               placement=(arm.frame_R[arm.frame_id("tool")], arm.frame_p[arm.frame_id("tool")]),
               real_placement=(tool[:3, :3], tool[:3, 3]))
    closed = b.build()
    assert closed.nloops == 1 and closed.nv == arm.nv + 1
    q = np.zeros(closed.nq)
    q[closed.q_index(arm.joint_names[0])], q[closed.q_index(arm.joint_names[1])] = 0.4, 0.9
    assert np.abs(ld.loops.loop_error(closed, q)).max() < 1e-12
    an = ld.loops.analyze(closed, q)
    assert an.dof == 0            # a 2-link planar arm pinned at its tip cannot move
