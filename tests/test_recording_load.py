"""Recording.load against hostile and broken files (issue 28), each test named after the attack:
a zip bomb, a FIFO, empty, truncated and corrupted files, a missing member, mismatched rows.
Every failure is one RecordingError naming the file."""
from __future__ import annotations

import io
import os
import zipfile

import numpy as np
import pytest

from linkdyn.models import scenarios as sc
from linkdyn.recording import Recording, RecordingError


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    sim = sc.high_bar_simulation(dt=1e-3, release=0.02, record_every=5, posture=None)
    sim.run(until=0.04, progress=False)
    p = tmp_path_factory.mktemp("rec") / "run.npz"
    sim.save(p)
    return p, sim.recording


def _members(p):
    with np.load(p, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _write(p, members):
    buf = io.BytesIO()
    np.savez_compressed(buf, **members)
    p.write_bytes(buf.getvalue())
    return p


def test_round_trip_still_loads(saved):
    p, rec = saved
    back = Recording.load(p)
    assert np.array_equal(back.t, rec.t) and np.array_equal(back.energy, rec.energy)


def test_zip_bomb_refused_from_the_directory_before_decompressing(tmp_path):
    p = tmp_path / "bomb.npz"
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as zf:     # 2 MB of zeros -> 80 MB on read
        with zf.open("seg0_t.npy", "w", force_zip64=True) as f:
            chunk = bytes(2**20)
            for _ in range(80):
                f.write(chunk)
    assert p.stat().st_size < 2**20
    with pytest.raises(RecordingError, match="bomb.npz.*seg0_t.npy.*cap"):
        Recording.load(p)
    with pytest.raises(RecordingError, match="cap"):
        Recording.load(p, max_bytes=2**20)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_refused_before_opening(tmp_path):
    p = tmp_path / "pipe.npz"
    os.mkfifo(p)                    # opening it for reading would block for ever
    with pytest.raises(RecordingError, match="pipe.npz.*not a regular file"):
        Recording.load(p)


def test_device_and_folder_refused(tmp_path):
    for p in ("/dev/zero", tmp_path):
        with pytest.raises(RecordingError, match="not a regular file"):
            Recording.load(p)


def test_empty_truncated_and_corrupted_files_name_the_file(saved, tmp_path):
    data = saved[0].read_bytes()
    cases = {"empty.npz": b"", "truncated.npz": data[: len(data) // 2], "tail.npz": data[:-30],
             "flipped.npz": data[:200] + bytes(b ^ 0xFF for b in data[200:400]) + data[400:]}
    for name, raw in cases.items():
        p = tmp_path / name
        p.write_bytes(raw)
        with pytest.raises(RecordingError, match=name):
            Recording.load(p)


def test_missing_member_refused(saved, tmp_path):
    m = _members(saved[0])
    for drop in ("meta", "seg0_q"):
        p = _write(tmp_path / f"no_{drop}.npz", {k: v for k, v in m.items() if k != drop})
        with pytest.raises(RecordingError, match=f"no_{drop}.npz.*missing member '{drop}'"):
            Recording.load(p)


def test_mismatched_rows_refused_not_loaded_as_nan(saved, tmp_path):
    m = _members(saved[0])
    short = dict(m, seg0_q=m["seg0_q"][:-1])
    with pytest.raises(RecordingError, match="short.npz.*seg0_q"):
        Recording.load(_write(tmp_path / "short.npz", short))
    narrow = dict(m, seg0_v=m["seg0_v"][:, :-1])
    with pytest.raises(RecordingError, match="narrow.npz.*seg0_v"):
        Recording.load(_write(tmp_path / "narrow.npz", narrow))
    text = dict(m, seg0_t=np.array(["a"] * len(m["seg0_t"])))
    with pytest.raises(RecordingError, match="text.npz.*seg0_t"):
        Recording.load(_write(tmp_path / "text.npz", text))


def test_fuzz_mutated_files_give_only_recording_error(saved, tmp_path):
    """Bytes flipped, cut or inserted anywhere in a real recording: load succeeds or raises
    RecordingError, nothing else."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    data = saved[0].read_bytes()
    n = len(data)

    @settings(max_examples=150, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(st.tuples(st.integers(0, n - 1), st.integers(1, 255)), min_size=1, max_size=8),
           st.integers(0, n))
    def check(flips, cut):
        raw = bytearray(data)
        for i, x in flips:
            raw[i] ^= x
        p = tmp_path / "mutant.npz"
        p.write_bytes(bytes(raw[:cut]) if cut < n // 3 else bytes(raw))
        try:
            Recording.load(p)
        except RecordingError as exc:
            assert "mutant.npz" in str(exc)
    check()


def test_orphan_tmp_of_a_killed_save_removed_on_next_save(tmp_path):
    """kill -9 during save left '.run.npz.XXXXXXXX.tmp' files for ever (9 of 12 trials): the next
    save to that folder removes those older than a minute, and keeps a fresh one (a save in progress)
    and unrelated files."""
    import time
    from linkdyn.recording import ORPHAN_AGE, atomic_savez
    old = tmp_path / ".run.npz.ab3_x9kq.tmp"
    fresh = tmp_path / ".other.npz.zz9_k2aa.tmp"
    mine = tmp_path / "notes.tmp"
    for f in (old, fresh, mine):
        f.write_bytes(b"partial")
    past = time.time() - 2 * ORPHAN_AGE
    os.utime(old, (past, past))
    os.utime(mine, (past, past))
    atomic_savez(tmp_path / "next.npz", t=np.zeros(3))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([fresh.name, mine.name, "next.npz"])


def test_loaded_recording_joint_series_matches_the_live_one(saved):
    """Recording.load(p).joint_series(...) raised AttributeError (the saved model had no q_slice)."""
    p, rec = saved
    back = Recording.load(p)
    for joint in rec.segments[0].model.joint_names:
        t0, q0 = rec.joint_series(joint)
        t1, q1 = back.joint_series(joint)
        assert np.array_equal(t0, t1) and np.array_equal(q0, q1, equal_nan=True)
    with pytest.raises(KeyError):
        back.joint_series("no such joint")
