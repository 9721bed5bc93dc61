"""The recording keeps the contacts between collision geoms per sample (``Segment.geom_contacts``,
``geom_wrench``, ``geom_normal_force``): their number varies from step to step, so they are stored
ragged (flat arrays and per-sample offsets).  Closed forms at every sample, dt = 1 ms:

* a box resting flat on a plane: 4 contacts whose normal forces carry m g, and whose moments
  about the box's centre of mass cancel (static equilibrium);
* a box sliding down an incline: the plane's force on it is N n - mu N d (N = m g cos th, d the
  downhill direction), exactly (semi-implicit Euler is exact for a constant force);
* a sphere dropped from rest: no contact in flight, one at the landing, whose impulse stops the
  fall and gives back e of it;
* the compiled step's record and the Python step's agree;
* ``Recording.save`` / ``load`` keep them bit for bit; inconsistent geom members are refused with
  a RecordingError naming the file and the member; files without them still load;
* the swing demo (Nakamura and Yamane 2000, Fig. 15) records the thighs on the seat, inside
  their friction cones.
"""
import json

import numpy as np
import pytest

import linkdyn as ld
from linkdyn import spatial as sp
from linkdyn.recording import Recording, RecordingError
from test_geom_timestep import box_inertia
from test_recording_load import _members, _write

G = 9.81
DT = 1e-3
HALF = (0.1, 0.08, 0.05)
MASS = 2.0


def box_on(theta=0.0, mu=0.8):
    """A box geom on a free body resting on a plane geom ("ground") tilted by theta about y."""
    b = ld.ModelBuilder("box")
    b.add_body("box", "world", ld.FreeFlyer(), inertia=box_inertia(MASS, HALF))
    b.add_geom("box", "box", HALF, name="box", friction=mu)
    R = sp.roty(theta)
    b.add_geom("world", "plane", (), placement=(R, np.zeros(3)), name="ground", friction=mu)
    m = b.build()
    q = ld.neutral(m)
    q[:3] = R @ np.array([0.0, 0.0, HALF[2]])
    q[3:7] = sp.matrix_to_quat(R)
    return m, q, R


def run(model, q, until, **kw):
    sim = ld.Simulation(model, q, dt=DT, contact_method="timestep", **kw)
    return sim, sim.run(until=until, progress=False)


@pytest.fixture(scope="module")
def resting():
    m, q, _ = box_on()
    return run(m, q, 0.3)


def test_box_resting_on_a_plane_records_four_contacts_carrying_its_weight(resting):
    sim, rec = resting
    seg = rec.segments[0]
    a = seg.arrays()
    counts = np.diff(a["geom_offset"])
    assert counts[0] == 0                               # the first sample ends no step
    assert np.all(counts[1:] == 4)
    for k in range(1, len(seg.t)):
        c = seg.geom_contacts(k)
        assert c.names == ["ground/box"] * 4
        assert np.allclose(c.normal, [0.0, 0.0, 1.0], atol=1e-12)
        assert np.abs(c.point[:, 2]).max() < 1e-9       # on the plane
        assert np.all(c.normal_force > 0.0)
        assert c.normal_force.sum() == pytest.approx(MASS * G, rel=1e-9)
    names, fn = seg.geom_normal_force()
    assert names == ["ground/box"]
    assert np.allclose(fn[1:, 0], MASS * G, rtol=1e-9)
    # the wrench on the box: its weight's opposite, with no moment about its centre of mass
    names, w = seg.geom_wrench("body")
    assert set(names) == {"box", "world"}
    box = w[1:, names.index("box")]
    c = a["q"][1:, :3]
    assert np.allclose(box[:, :3], [0.0, 0.0, MASS * G], atol=1e-9)
    moment_c = box[:, 3:] - np.cross(c, box[:, :3])
    assert np.abs(moment_c).max() < 1e-9
    assert np.allclose(w[:, names.index("world")], -w[:, names.index("box")], atol=0)     # action, reaction
    t, names_r, w_r = rec.geom_wrench("body")
    assert np.array_equal(t, seg.arrays()["t"]) and np.allclose(w_r[:, names_r.index("box")], w[:, names.index("box")])


@pytest.mark.parametrize("compiled", [True, False])
def test_sliding_box_records_the_normal_and_coulomb_friction_force(compiled):
    theta, mu = 0.45, 0.3                               # tan th > mu: slides
    m, q, R = box_on(theta, mu)
    sim = ld.Simulation(m, q, dt=DT, contact_method="timestep")
    sim._uni._compiled = compiled                       # the Python step (closed chains, geared models) or not
    rec = sim.run(until=0.2, progress=False)
    seg = rec.segments[0]
    n, d = R[:, 2], R[:, 0]                             # the incline's normal and downhill direction
    N = MASS * G * np.cos(theta)
    names, w = seg.geom_wrench("pair")
    assert names == ["ground/box"]
    assert np.abs(w[1:, 0, :3] - (N * n - mu * N * d)).max() < 1e-8
    names, fn = seg.geom_normal_force()
    assert np.allclose(fn[1:, 0], N, rtol=1e-9)


def _box_on_plane():
    """A free box (MASS, HALF) over a ground plane, friction 0.8."""
    b = ld.ModelBuilder("drop")
    b.add_body("box", "world", ld.FreeFlyer(), inertia=box_inertia(MASS, HALF))
    b.add_geom("box", "box", HALF, name="box", friction=0.8)
    b.add_geom("world", "plane", (), name="ground", friction=0.8)
    return b.build()


def test_compiled_and_python_steps_record_the_same_contacts():
    """A box dropped tilted on a plane: contacts appear and vanish; both steps record the same
    contacts and the same wrench on the box (the states agree to round-off:
    test_geom_timestep.py)."""
    m = _box_on_plane()
    q = ld.neutral(m)
    q[:3] = [0.0, 0.0, 0.2]
    q[3:7] = sp.matrix_to_quat(sp.rotx(0.3) @ sp.roty(0.2))
    out = []
    for compiled in (True, False):
        sim = ld.Simulation(m, q, dt=DT, contact_method="timestep", record_every=7)
        sim._uni._compiled = compiled
        seg = sim.run(until=0.5, progress=False).segments[0]
        out.append((seg.arrays(), seg.geom_wrench("body")))
    (a, (na, wa)), (b_, (nb, wb)) = out
    assert np.array_equal(a["geom_offset"], b_["geom_offset"]) and a["geom_offset"][-1] > 10
    assert np.array_equal(a["geom_pair"], b_["geom_pair"])
    for k in ("point", "normal"):
        assert np.abs(a[f"geom_{k}"] - b_[f"geom_{k}"]).max() < 1e-8
    # four corners on a face share the weight in any proportion (the solvers may split it
    # differently): their sum on the box is the same
    assert na == nb
    assert np.abs(wa - wb).max() < 1e-6 * np.abs(wa).max()


def test_simulation_geom_contacts_are_the_steps_recorded_contacts():
    """``Simulation.geom_contacts()`` after each step (what a watch reads without recording
    every step) is the sample the recording keeps for that step: a box dropped tilted, in
    flight (none), then on the plane (contacts that appear and vanish); empty before the
    first step."""
    m = _box_on_plane()
    q = ld.neutral(m)
    q[:3] = [0.0, 0.0, 0.12]
    q[3:7] = sp.matrix_to_quat(sp.rotx(0.3) @ sp.roty(0.2))
    sim = ld.Simulation(m, q, dt=DT, contact_method="timestep", record_every=1)
    assert len(sim.geom_contacts()) == 0
    counts = []
    for _ in range(250):
        sim.step()
        got, rec = sim.geom_contacts(), sim.recording.segments[-1].geom_contacts(-1)
        assert got.names == rec.names and np.array_equal(got.pair, rec.pair)
        for k in ("force", "point", "normal"):
            assert np.array_equal(getattr(got, k), getattr(rec, k)), k
        counts.append(len(got))
    assert counts[0] == 0 and max(counts) >= 3 and len(set(counts)) >= 3


def test_sphere_dropped_records_no_contact_in_flight_and_one_at_landing():
    r, h, e, mass = 0.1, 0.5, 0.5, 1.0
    b = ld.ModelBuilder("ball")
    b.add_body("ball", "world", ld.FreeFlyer(), inertia=ld.Inertia(mass, [0, 0, 0], np.eye(3) * 0.4 * mass * r * r))
    b.add_geom("ball", "sphere", [r], name="ball", friction=0.5, restitution=e)
    b.add_geom("world", "plane", (), name="ground", friction=0.5, restitution=e)
    m = b.build()
    q = ld.neutral(m)
    q[:3] = [0.3, -0.2, h]
    sim, rec = run(m, q, 0.5)
    seg = rec.segments[0]
    a = seg.arrays()
    counts = np.diff(a["geom_offset"])
    t = a["t"]
    t_land = np.sqrt(2.0 * (h - r) / G)
    hit = np.flatnonzero(counts)
    assert len(hit) >= 1
    k = hit[0]                                          # the first sample with a contact
    assert t_land - 1e-12 <= t[k] <= t_land + 2 * DT
    assert np.all(counts[:k] == 0)                      # in flight: none
    c = seg.geom_contacts(k)
    assert len(c) == 1 and c.names == ["ground/ball"]
    assert np.allclose(c.normal, [[0.0, 0.0, 1.0]], atol=1e-12)
    # midway between the surfaces at the step's start (sample k - 1): the ball was above the ground
    assert np.allclose(c.point[0], [0.3, -0.2, 0.5 * (a["q"][k - 1, 2] - r)], atol=1e-12)
    v_in = G * t[k - 1]                                 # the speed at the step's start (semi-implicit Euler: g per step)
    impulse = c.normal_force[0] * DT
    assert impulse == pytest.approx(mass * (1.0 + e) * v_in, abs=2 * mass * G * DT)
    # it rebounds: no contact again while it flies up and falls (t_flight = 2 e v / g)
    back = int((2 * e * v_in / G) / DT)
    assert np.all(counts[k + 1:k + back - 5] == 0)


def test_save_load_round_trip_is_bit_identical(resting, tmp_path):
    _, rec = resting
    p = rec.save(tmp_path / "box.npz")
    back = Recording.load(p)
    a, b = rec.segments[0].arrays(), back.segments[0].arrays()
    for key in ("geom_offset", "geom_pair", "geom_force", "geom_point", "geom_normal"):
        assert a[key].dtype == b[key].dtype and np.array_equal(a[key], b[key]), key
    s0, s1 = rec.segments[0], back.segments[0]
    assert s1.geom_names == s0.geom_names and s1.geom_bodies == s0.geom_bodies
    for k in (0, 5, len(s0.t) - 1):
        c0, c1 = s0.geom_contacts(k), s1.geom_contacts(k)
        assert c0.names == c1.names and np.array_equal(c0.force, c1.force)
    assert np.array_equal(s0.geom_wrench("body")[1], s1.geom_wrench("body")[1])


def _mutations(mem):
    total = int(mem["seg0_geom_offset"][-1])
    off = mem["seg0_geom_offset"].copy()
    off[3] = off[2] - 1                                  # falls
    pair = mem["seg0_geom_pair"].copy()
    pair[0, 1] = 99                                      # no such geom
    force = mem["seg0_geom_force"].copy()
    force[2, 0] = np.nan
    return {
        "offset rows": ("seg0_geom_offset", mem["seg0_geom_offset"][:-1], "geom_offset"),
        "offset falls": ("seg0_geom_offset", off, "geom_offset"),
        "offset as floats": ("seg0_geom_offset", mem["seg0_geom_offset"].astype(float), "geom_offset"),
        "force rows": ("seg0_geom_force", mem["seg0_geom_force"][:total - 1], "geom_force"),
        "point columns": ("seg0_geom_point", mem["seg0_geom_point"][:, :2], "geom_point"),
        "pair index": ("seg0_geom_pair", pair, "geom_pair"),
        "non-finite force": ("seg0_geom_force", force, "geom_force"),
        "missing normal": ("seg0_geom_normal", None, "geom_normal"),
    }


@pytest.mark.parametrize("what", ["offset rows", "offset falls", "offset as floats", "force rows", "point columns",
                                  "pair index", "non-finite force", "missing normal"])
def test_inconsistent_geom_members_are_refused(resting, tmp_path, what):
    _, rec = resting
    p = rec.save(tmp_path / "good.npz")
    mem = _members(p)
    key, value, member = _mutations(mem)[what]
    if value is None:
        del mem[key]
    else:
        mem[key] = value
    bad = _write(tmp_path / "bad.npz", mem)
    with pytest.raises(RecordingError, match=f"bad.npz.*{member}"):
        Recording.load(bad)


def test_bad_geom_names_in_the_metadata_are_refused(resting, tmp_path):
    _, rec = resting
    mem = _members(rec.save(tmp_path / "good.npz"))
    meta = json.loads(str(mem["meta"]))
    sm = meta["segments"][0]
    sm["geoms"], sm["geom_bodies"] = sm["geoms"][:1], sm["geom_bodies"][:1]     # pair indices now out of range
    mem["meta"] = np.array(json.dumps(meta))
    with pytest.raises(RecordingError, match="bad.npz.*geom_pair"):
        Recording.load(_write(tmp_path / "bad.npz", mem))
    meta["segments"][0]["geoms"] = 7
    mem["meta"] = np.array(json.dumps(meta))
    with pytest.raises(RecordingError, match="bad2.npz.*geom names"):
        Recording.load(_write(tmp_path / "bad2.npz", mem))


def test_a_file_without_geom_members_still_loads(resting, tmp_path):
    """Files written before the geom contacts were recorded."""
    _, rec = resting
    mem = _members(rec.save(tmp_path / "new.npz"))
    old = {k: x for k, x in mem.items() if "_geom_" not in k}
    meta = json.loads(str(old["meta"]))
    for s in meta["segments"]:
        del s["geoms"], s["geom_bodies"]
    old["meta"] = np.array(json.dumps(meta))
    back = Recording.load(_write(tmp_path / "old.npz", old))
    seg = back.segments[0]
    assert np.array_equal(back.t, rec.t)
    assert len(seg.geom_contacts(3)) == 0
    a = seg.arrays()
    assert np.all(a["geom_offset"] == 0) and a["geom_force"].shape == (0, 3)
    assert seg.geom_normal_force()[0] == [] and seg.geom_wrench()[1].shape == (len(seg.t), 0, 6)


def test_swing_demo_records_the_thighs_on_the_seat(swing_demo_run):
    """The swing demo (``linkdyn demo swing``): the thighs' capsules on the seat's box carry the
    figure until the seat breaks; every recorded contact pushes and stays inside its friction
    cone (mu = 0.05), and the plots' contact-force panel has their curves."""
    sim, _, _, rec = swing_demo_run
    t, names, fn = rec.geom_normal_force()
    assert {"l_thigh/seat", "r_thigh/seat"} <= set(names)
    before = (t > 0.05) & (t < 1.2)
    for p in ("l_thigh/seat", "r_thigh/seat"):
        assert np.all(fn[before, names.index(p)] > 0.0), p
    assert np.median(fn[before][:, [names.index("l_thigh/seat"), names.index("r_thigh/seat")]].sum(axis=1)) > 100.0
    for seg in rec.segments:
        a = seg.arrays()
        f, n = a["geom_force"], a["geom_normal"]
        fnn = np.einsum("ij,ij->i", f, n)
        ft = np.linalg.norm(f - fnn[:, None] * n, axis=1)
        assert np.all(fnn > 0.0)
        assert np.all(ft <= 0.05 * fnn * (1 + 1e-6) + 1e-9)


def test_viewer_draws_an_arrow_per_geom_contact_and_the_plots_sum_them(resting):
    """The viewer's arrows for the resting box: 4 at its corners, pushing up, summing to m g; the
    plots' per-pair curves (``linkdyn.viz.runs.segment_data``): m g normal, no friction."""
    import base64

    from linkdyn.viz.runs import segment_data
    sim, rec = resting
    v = sim.view()
    arrows = v.data["arrows"]
    assert arrows["n"] == 4
    a = np.frombuffer(base64.b64decode(arrows["data"]), dtype="<f4").reshape(-1, 4, 6)
    later = a[1:]                                    # the first frame is the first sample: no step ended there
    assert np.allclose(later[:, :, 5].sum(axis=1), MASS * G, rtol=1e-6)
    assert np.abs(later[:, :, 2]).max() < 1e-6 and np.abs(later[:, :, 3:5]).max() < 1e-5
    assert np.allclose(np.abs(later[:, :, :2]), [0.1, 0.08], atol=1e-6)     # at the corners
    sd = segment_data(rec.segments[0])
    assert sd.geom_pairs == ("ground/box",)
    assert np.allclose(sd.geom_normal_force[1:, 0], MASS * G) and np.abs(sd.geom_friction).max() < 1e-9
