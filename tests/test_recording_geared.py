"""Recordings of geared models save their coupling and read back whole, and a recording read back
from a file is drawn with its model (issue 28: 5 joint names over 2 columns, no ratios; and
``viz.view(Recording.load(p))`` raised AttributeError)."""
from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

import linkdyn as ld
from linkdyn.recording import Recording, RecordingError

I = ld.Inertia(1.0, [0, 0, -0.2], np.eye(3) * 0.01)


def _geared():
    b = ld.ModelBuilder("g")
    b.add_body("a", "world", ld.Revolute("y"), inertia=I)
    b.add_body("c", "a", ld.Revolute("y"), inertia=I, placement=[0, 0, -0.4])
    b.add_body("d", "c", ld.Revolute("y"), inertia=I, placement=[0, 0, -0.4])
    b.add_body("e", "world", ld.Revolute("x"), inertia=I, placement=[1, 0, 0])
    b.add_body("f", "e", ld.Revolute("x"), inertia=I, placement=[0, 0, -0.4])
    b.add_body("h", "e", ld.Revolute("x"), inertia=I, placement=[0, 0.2, -0.4])
    b.add_gear("c_joint", "a_joint", 2.0, 0.1)
    b.add_gear("d_joint", "c_joint", -1.0)               # a chain of gears: q_d = -(2 q_a + 0.1)
    b.add_coupling({"e_joint": 1.0, "f_joint": 0.5, "h_joint": 2.0}, offset=0.3)   # h depends on e and f
    return b.build()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    m = _geared()
    sim = ld.Simulation(m, np.array([0.3, 0.2, -0.1]), dt=1e-3)
    sim.run(0.05)
    return m, sim, sim.save(tmp_path_factory.mktemp("rec") / "g.npz")


def test_geared_recording_saves_coupling_5_joints_2_columns_read_back(run):
    m, sim, p = run
    assert m.nq == 3 and len(m.joint_names) == 6
    r = Recording.load(p)
    sm = r.segments[0].model
    assert sm.joint_names == m.joint_names and sm.nq == m.nq
    assert sm.gears[0] == ("gear", "c_joint", "a_joint", 2.0, 0.1)
    # every joint's series, followers and the dependent of the coupling included, as the live run's
    for j in m.joint_names:
        t, x = r.joint_series(j)
        t0, x0 = sim.recording.joint_series(j)
        assert np.array_equal(t, t0) and np.array_equal(x, x0), j
    q = np.asarray(r.segments[0].q)
    assert np.array_equal(sm.expand(q), m.expand(q))
    # the couplings hold in the read-back coordinates: q_d = -(2 q_a + 0.1), e + 0.5 f + 2 h = 0.3
    full = sm.expand(q)
    qa, qd = full[:, sm.full_q_slice("a_joint")], full[:, sm.full_q_slice("d_joint")]
    assert np.allclose(qd, -(2 * qa + 0.1), atol=1e-15)
    e, f, h = (full[:, sm.full_q_slice(n)][:, 0] for n in ("e_joint", "f_joint", "h_joint"))
    assert np.allclose(e + 0.5 * f + 2 * h, 0.3, atol=1e-14)


def test_geared_recording_with_a_mangled_coupling_refused(run, tmp_path):
    _, _, p = run
    with zipfile.ZipFile(p) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    for mangle in (lambda c: c.update(qsrc=[[99]] * len(c["qsrc"])), lambda c: c.update(full_nq=2),
                   lambda c: c.pop("qoff"), lambda c: c.update(qscale="x")):
        meta = json.loads(str(np.load(p)["meta"]))
        mangle(meta["segments"][0]["coupling"])
        bad = tmp_path / "bad.npz"
        with zipfile.ZipFile(bad, "w") as zf:
            for n, data in members.items():
                if n != "meta.npy":
                    zf.writestr(n, data)
        arrays = dict(np.load(bad))
        np.savez(bad, meta=np.array(json.dumps(meta)), **arrays)
        with pytest.raises(RecordingError, match=r"bad.npz: segment 0's coupling does not fit"):
            Recording.load(bad)


def test_view_of_a_loaded_recording_draws_with_its_model(run):
    m, sim, p = run
    r = Recording.load(p)
    with pytest.raises(ValueError, match=r"segment 0 of the run was read from a file .*no model= was given: "
                                         r"pass model="):
        ld.viz.view(r)
    other = ld.ModelBuilder("o")
    other.add_body("a", "world", ld.Revolute("z"), inertia=I)
    with pytest.raises(ValueError, match=r"model 'o' .* is not the one it ran"):
        ld.viz.view(r, other.build())
    live, loaded = sim.view(), ld.viz.view(r, m)
    assert loaded.data["poses"] == live.data["poses"] and loaded.data["bodies"] == live.data["bodies"]
    assert isinstance(r.segments[0].model, ld.recording.SavedModel)       # the loaded recording is unchanged
