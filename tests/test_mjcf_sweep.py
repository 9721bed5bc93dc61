"""Standard MJCF files that a sweep of public models found failing at their very first step
(``ContactSolverError`` at t = 0), simulated passively with the defaults (``load_mjcf`` and
``Simulation(model, info.q0, dt=<the file's timestep>)``): every step's problem is solved,
MuJoCo's own collision detector measures no geom sinking into another by more than 2 mm on our
states (the pairs MuJoCo finds overlapping at qpos0 excepted: those sink no deeper than MuJoCo has
them there), and ``checks()`` holds, or holds but for what the file's initial state makes true.

* gymnasium's ``pusher.xml`` and ``pusher_v5.xml``: the object, a cylinder on two slide joints
  parallel to the table, rests on the table inside the two geoms' margins (4 mm of skin: MuJoCo's
  ``includemargin``).  No motion the joints allow moves it along the table's normal: the contact's
  normal row is zero, and its push-out request made every step's problem infeasible.  Such a
  contact is no constraint (``linkdyn.contact.rows.inert``) and carries no force, so the object
  slides exactly as it does with the table's collision switched off.
* dm_control's ``mjcf/test_assets/robot_arm.xml``: its ranges are in radians but the file leaves
  MuJoCo's default ``angle="degree"``, so joint_3 may bend only 0.6 to 5.7 degrees and the arm
  starts folded into itself (MuJoCo: 11 pairs up to 6 cm inside each other at qpos0, and four
  limits violated).  What the projection cannot remove within the limits the step holds (no deeper,
  and no push-out by velocity: Baumgarte's push-out through the wrist's short lever spun joint_4 at
  117 rad/s in the first step).
"""
from __future__ import annotations

import importlib.util
import pathlib
import warnings

import numpy as np
import pytest

import linkdyn as ld
from linkdyn.contact import collide
from linkdyn.interop import to_mujoco

mujoco = pytest.importorskip("mujoco")


def _package_dir(name):
    spec = importlib.util.find_spec(name)
    return pathlib.Path(spec.origin).parent if spec else None


_GYM, _DMC = _package_dir("gymnasium"), _package_dir("dm_control")
PUSHERS = _GYM / "envs" / "mujoco" / "assets" if _GYM else None
ROBOT_ARM = _DMC / "mjcf" / "test_assets" / "robot_arm.xml" if _DMC else None
#: MuJoCo's measure of a geom sinking into another on our states (m)
DEEP = 2e-3


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                 # soft-contact parameters, the overlaps at the start
        return ld.load_mjcf(path, return_info=True)


class _MuJoCoDepth:
    """MuJoCo's collision detector on the file's geometry (margins and gaps set to 0: the
    geometric distances), and the pairs it finds inside each other at qpos0 with their depth."""

    def __init__(self, path, model):
        self.mm = mujoco.MjModel.from_xml_path(str(path))
        self.mm.geom_margin[:] = 0.0
        self.mm.geom_gap[:] = 0.0
        self.dd = mujoco.MjData(self.mm)
        self.model = model
        self.at_qpos0 = self._pairs()
        self.start = {p: d for p, d in self.at_qpos0.items() if d < -1e-9}

    def _pairs(self):
        mujoco.mj_forward(self.mm, self.dd)
        out = {}
        for c in self.dd.contact[:self.dd.ncon]:
            key = (min(c.geom1, c.geom2), max(c.geom1, c.geom2))
            out[key] = min(out.get(key, np.inf), float(c.dist))
        return out

    def measure(self, q):
        """(deepest penetration of a pair not inside another at qpos0, {pair: how much deeper
        than at qpos0} of those that were)."""
        self.dd.qpos[:] = to_mujoco(self.model, q)[0]
        deepest, deeper = 0.0, {}
        for key, dist in self._pairs().items():
            if key in self.start:
                deeper[key] = self.start[key] - dist
            else:
                deepest = max(deepest, -dist)
        return deepest, deeper


def _step_and_measure(sim, depth, steps):
    """Steps ``sim``, asserting at every step that its problem was solved (by the step's own
    solve: no fallback, which once held the pusher's table contact after 20000 sweeps a step) and
    MuJoCo's measure; returns the largest |v| met."""
    fastest = 0.0
    for k in range(steps):
        sim.step()
        assert sim.contact_stats["last_residual"] <= 1e-3, f"step {k}: residual {sim.contact_stats['last_residual']}"
        deepest, deeper = depth.measure(sim.q)
        assert deepest <= DEEP, f"step {k}: MuJoCo measures {deepest:.3g} m of penetration on our state"
        for (g1, g2), d in deeper.items():
            assert d <= 1e-9, f"step {k}: geoms {g1}/{g2} sank {d:.3g} m deeper than MuJoCo has them at qpos0"
        fastest = max(fastest, float(np.abs(sim.v).max()))
    stats = sim.contact_stats
    assert stats["lcp_residual"] <= 1e-3
    assert stats["lcp_fallbacks"] == 0 and stats.get("conic_fallbacks", 0) == 0     # each by the step's own solve
    return fastest


@pytest.mark.skipif(PUSHERS is None, reason="gymnasium (its model files) is not installed")
@pytest.mark.parametrize("name", ["pusher", "pusher_v5"])
def test_the_pushers_object_slides_over_its_table_as_if_the_table_were_not_there(name, tmp_path):
    """The object on its two slide joints, launched across the table with the arm swinging
    (passive: no torques; the file has no gravity), for 1 s at the file's 10 ms: the table/object
    contact is detected at every step (three points, cylinder on plane, as MuJoCo's), carries no
    force, and every coordinate moves exactly as in the same file with the table's collision
    switched off (contype = conaffinity = 0).  The pair has condim 1: frictionless, as in MuJoCo.
    ``checks()``: all ok but the deepest penetration, which is the pair's skin, 4 mm (the two
    geoms' margins, MuJoCo's includemargin: MuJoCo too has this contact 4 mm inside its margin at
    rest, and nothing can move it out), constant from the first step; the construction says so."""
    path = PUSHERS / f"{name}.xml"
    m, info = _load(path)
    text = path.read_text()
    table = '<geom name="table" type="plane" pos="0 0.5 -0.325" size="1 1 0.1" contype="1" conaffinity="1"/>'
    assert table in text
    bare = tmp_path / f"{name}_no_table.xml"
    bare.write_text(text.replace(table, table.replace('contype="1" conaffinity="1"', 'contype="0" conaffinity="0"')))
    m0, info0 = _load(bare)
    assert m0.nq == m.nq and m0.joint_names == m.joint_names

    mj = mujoco.MjModel.from_xml_path(str(path))
    dj = mujoco.MjData(mj)
    mujoco.mj_forward(mj, dj)
    obj = {mj.geom(c.geom2).bodyid[0] for c in dj.contact[:dj.ncon]} | {mj.geom(c.geom1).bodyid[0] for c in dj.contact[:dj.ncon]}
    assert dj.ncon == 3 and set(dj.contact.dim[:3]) == {1}         # three frictionless contacts ...
    assert "object" in {mj.body(b).name for b in obj}              # ... of the object on the table
    skin = float(np.max(dj.contact.includemargin[:3] - dj.contact.dist[:3]))
    pair = [k for k, (a, b) in enumerate(m.geom_pairs) if {m.geom_names[a], m.geom_names[b]} == {"table", "object_geom1"}
            or {m.geom_names[a], m.geom_names[b]} == {"table", "object_geom0"}]
    assert len(pair) == 1 and m.geom_pair_friction[pair[0]] == 0.0    # condim 1: frictionless

    v0 = np.zeros(m.nv)
    for joint, speed in (("obj_slidex", 0.3), ("obj_slidey", -0.2), ("r_shoulder_pan_joint", 1.0),
                         ("r_upper_arm_roll_joint", -0.5)):
        v0[m.v_slice(joint)] = speed
    with pytest.warns(UserWarning, match=r"3 overlap\(s\) of the initial state that no joint can move along its normal "
                                         r"\(table/object_geom\d 4 mm"):
        sim = ld.Simulation(m, info.q0, v0, dt=mj.opt.timestep)
    bare_sim = ld.Simulation(m0, info0.q0, v0, dt=mj.opt.timestep)
    depth = _MuJoCoDepth(path, m)
    fx, fy = m.q_index("obj_slidex"), m.q_index("obj_slidey")
    touching = 0
    for k in range(100):
        _step_and_measure(sim, depth, 1)
        bare_sim.step()
        names = [n for n in sim._uni.geom_names if "table" in n]
        touching += len(names) == 3
        assert np.all(sim._uni.geom_force[[i for i, n in enumerate(sim._uni.geom_names) if "table" in n]] == 0.0)
        np.testing.assert_allclose(sim.q, bare_sim.q, rtol=0.0, atol=1e-12, err_msg=f"step {k}")
        np.testing.assert_allclose(sim.v, bare_sim.v, rtol=0.0, atol=1e-12, err_msg=f"step {k}")
    assert touching == 100
    assert sim.q[fx] > 0.01 and sim.q[fy] < -0.005                      # it slid (damped: 0.5 N s/m)

    checks = sim.checks()
    failed = [c.name for c in checks if not c.ok]
    assert failed == ["deepest penetration"], str(checks)
    assert abs(checks["deepest penetration"].value - skin) <= 1e-9 and abs(skin - 0.004) <= 1e-9, str(checks)


@pytest.mark.skipif(ROBOT_ARM is None, reason="dm_control (its test model files) is not installed")
def test_dm_controls_robot_arm_starts_inside_itself_and_holds_what_cannot_be_projected():
    """dm_control's robot_arm (the module docstring), passive under gravity for 0.5 s at its
    2 ms: every step solved, no pair that was apart at qpos0 sinks 2 mm into another and none of
    the 11 pairs inside each other at qpos0 sinks deeper than MuJoCo has it there, and no
    push-out energy: the joints stay slow (a light arm, 2-12 g links on joints of armature 1,
    under its own weight; MuJoCo's soft push-out spins joint_1 through 42 rad in 1 s).

    ``checks()`` reports the initial state's overlaps, which no motion within the limits removes:
    its deepest penetration and its largest limit violation are those the projection of the
    initial state left (``Simulation``'s start), no worse, and every other check is ok, the
    energy ledger included (with the joints' Coulomb friction implicit: explicit, it chattered at
    rest and left 0.39 of the energy moved unaccounted)."""
    m, info = _load(ROBOT_ARM)
    mj = mujoco.MjModel.from_xml_path(str(ROBOT_ARM))
    depth = _MuJoCoDepth(ROBOT_ARM, m)
    assert len(depth.start) >= 10                                  # MuJoCo's arm starts inside itself
    q0 = info.q0
    assert np.any(q0 < m.lower)                                    # ... with limits violated
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                            # the overlaps the projection leaves
        sim = ld.Simulation(m, q0, dt=mj.opt.timestep)
    c = collide(m, sim.q)
    pen0 = float(np.max(c.margin - c.dist, initial=0.0))
    lim0 = float(np.max(np.maximum(m.lower - sim.q, sim.q - m.upper)))
    assert pen0 > 1e-3                                             # overlaps are left ...
    fastest = _step_and_measure(sim, depth, 250)
    assert fastest < 1.0, f"a joint reached {fastest:.3g} rad/s"    # ... and held, not pushed out
    checks = sim.checks()
    for c in checks:
        if c.name == "deepest penetration":
            assert c.value <= pen0 + 1e-9, str(checks)
        elif c.name == "largest limit violation":
            assert c.value <= lim0 + 1e-9, str(checks)
        else:
            assert c.ok, str(checks)
