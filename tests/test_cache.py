"""The compiled kernels' cache (``linkdyn._kernels``): one folder per user that a new copy of the
sources reuses, keys that change when any source a kernel depends on changes, a damaged cache
file dropped and compiled again, and trust: a cache is code (Numba unpickles its index files), so
a folder that someone else could have written is never read, and the kernels compile in memory."""
import os
import pathlib
import pickle
import shutil
import stat
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import linkdyn as ld
from linkdyn import _kernels

SRC = pathlib.Path(ld.__file__).resolve().parent

RUN_RNEA = """
import sys, warnings, numpy as np
warnings.simplefilter("always")
import linkdyn as ld, linkdyn._kernels as k
m = ld.models.human_figure_16()
q = ld.random_configuration(m, np.random.default_rng(3))
v = np.linspace(-1, 1, m.nv)
tau = ld.rnea(m, q, v, v)
print(repr(float(np.abs(tau).sum())), k._CompileNotice.count, ld.__file__)
"""


def _copy_sources(tmp_path):
    dest = tmp_path / "copy" / "linkdyn"
    shutil.copytree(SRC, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _run(code, pythonpath, user=None, **env):
    e = dict(os.environ, PYTHONPATH=str(pythonpath), **env)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=600,
                         user=user)
    assert out.returncode == 0, out.stderr
    return out


def _reference():
    m = ld.models.human_figure_16()
    q = ld.random_configuration(m, np.random.default_rng(3))
    v = np.linspace(-1, 1, m.nv)
    return float(np.abs(ld.rnea(m, q, v, v)).sum())


def test_the_cache_lives_in_one_folder_per_user_and_python():
    d = _kernels.cache_dir()
    assert d.is_dir() and os.access(d, os.W_OK)
    assert d.name.startswith(f"py{sys.version_info[0]}{sys.version_info[1]}-numba")
    assert not str(d).startswith(str(SRC))                 # not inside the sources (a clone would lose it)


def test_keys_change_with_any_source_a_kernel_depends_on(tmp_path):
    """Numba keys a cached function on its own file; an edit to an inlined primitive must
    invalidate every kernel that uses it, and nothing else."""
    dest = _copy_sources(tmp_path)
    rnea, lcp = pathlib.Path("dynamics/rnea.py"), pathlib.Path("contact/lcp.py")
    before = {p: _kernels.source_key(dest / p, root=dest) for p in (rnea, lcp)}
    assert before[rnea] == _kernels.source_key(SRC / rnea)          # the same sources, the same key
    with open(dest / "_kernels" / "spatial_nb.py", "a") as f:
        f.write("\n# an edit\n")
    assert _kernels.source_key(dest / rnea, root=dest) != before[rnea]   # rnea inlines spatial_nb
    assert _kernels.source_key(dest / lcp, root=dest) == before[lcp]   # the LCP solver does not


def test_a_new_copy_of_the_sources_loads_what_was_compiled(tmp_path):
    """A fresh clone or a reinstall (the same sources elsewhere) compiles nothing."""
    expected = _reference()                                          # compiled (or loaded) here
    dest = _copy_sources(tmp_path)
    out = _run(RUN_RNEA, dest.parent).stdout.split()
    assert float(out[0]) == expected and out[2].startswith(str(dest))
    assert out[1] == "0", "the copy compiled kernels instead of loading them"


def test_a_damaged_cache_file_is_dropped_and_compiled_again(tmp_path):
    import importlib
    rnea_module = importlib.import_module("linkdyn.dynamics.rnea")
    expected = _reference()
    cache = tmp_path / "cache"
    shutil.copytree(_kernels.cache_dir(), cache / _kernels.cache_dir().name)
    index = pathlib.Path(rnea_module._rnea_packed_plain._cache._cache_file._index_path)   # the kernel rnea runs (a model without springs)
    assert index.is_relative_to(_kernels.cache_dir())
    copy = cache / index.relative_to(_kernels.cache_dir().parent)
    copy.write_bytes(copy.read_bytes()[:20])                     # truncated, as by a crash mid-write
    for f in copy.parent.glob(copy.name[:-len(".nbi")] + "*.nbc"):
        f.write_bytes(b"garbage")
    out = _run(RUN_RNEA, SRC.parent, LINKDYN_CACHE_DIR=str(cache))
    value, count, _ = out.stdout.split()
    assert float(value) == expected and int(count) >= 1
    assert "cache file was unreadable" in out.stderr
    again = _run(RUN_RNEA, SRC.parent, LINKDYN_CACHE_DIR=str(cache))       # and the new one is good
    assert again.stdout.split()[1] == "0" and "unreadable" not in again.stderr


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root can write anywhere")
def test_an_unwritable_cache_folder_means_no_cache_with_a_warning(tmp_path):
    """No fallback to a shared /tmp name (another user could create it first): in memory."""
    ro = tmp_path / "readonly"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        out = _run(RUN_RNEA, SRC.parent, LINKDYN_CACHE_DIR=str(ro / "cache"))
    finally:
        ro.chmod(0o700)
    assert float(out.stdout.split()[0]) == _reference()
    assert "not caching its compiled kernels" in out.stderr and "cannot be created" in out.stderr
    assert not list(pathlib.Path(tempfile.gettempdir()).glob(f"linkdyn-cache-{os.geteuid()}*/*"))   # nothing shared


def test_a_cache_folder_that_is_a_file_means_no_cache_with_a_warning(tmp_path):
    """(What a read-only install with no writable home meets, as root can test it.)"""
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("x")
    out = _run(RUN_RNEA, SRC.parent, LINKDYN_CACHE_DIR=str(blocker))
    assert float(out.stdout.split()[0]) == _reference()
    assert "not caching its compiled kernels" in out.stderr and str(blocker) in out.stderr


# ----------------------------------------------------------------------- trust: a cache is code
#: runs the kernel whose index file is planted (``import linkdyn`` alone reads no cache: it compiles
#: nothing), then names the cache folder it used
RUN_PLANTED = RUN_RNEA + "print(k.cache_dir())\n"


class _Payload:
    """Unpickled, it writes the marker file: what a planted index file would run as the victim."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran as the victim')",))


def _plant(root, open_to_all, marker):
    """A copy of this user's cache under ``root``; every index file under ``open_to_all`` (the
    folder made world-writable) replaced by one that runs code when unpickled."""
    import importlib
    _reference()                                                    # the cache holds what import loads
    folder = root / _kernels.cache_dir().name
    shutil.copytree(_kernels.cache_dir(), folder)
    index = pathlib.Path(importlib.import_module("linkdyn.dynamics.rnea")._rnea_packed_plain._cache._cache_file._index_path)
    assert (folder / index.relative_to(_kernels.cache_dir())).is_file()     # the names Numba would open
    evil = pickle.dumps(_Payload(marker))
    planted = list(open_to_all.rglob("*.nbi"))
    assert planted
    for f in planted:
        f.write_bytes(evil)
    open_to_all.chmod(0o777)


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.parametrize("where", ["cache folder", "module folder"])
def test_a_planted_world_writable_cache_folder_is_not_read(tmp_path, where):
    """Another user creates the cache folder (or a module folder in it), world-writable, and
    plants index files there: none is read, those kernels compile in memory, one warning."""
    marker = tmp_path / "marker"
    root = tmp_path / "planted"
    root.mkdir(mode=0o700)
    open_to_all = root if where == "cache folder" else root / _kernels.cache_dir().name / "dynamics"
    _plant(root, open_to_all, marker)
    pickle.loads(pickle.dumps(_Payload(tmp_path / "control")))     # the payload does run when unpickled
    assert (tmp_path / "control").exists()
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*")}
    out = _run(RUN_PLANTED, SRC.parent, LINKDYN_CACHE_DIR=str(root))
    assert not marker.exists(), "a planted cache index was unpickled"
    assert "not caching" in out.stderr and str(open_to_all) in out.stderr and "writable by group and others" in out.stderr
    value, count, _, used = out.stdout.split()
    assert float(value) == _reference() and int(count) >= 1        # rnea's kernels compiled in memory
    assert used == ("None" if where == "cache folder" else str(root / _kernels.cache_dir().name))
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*")} == before   # nothing written either


def _stat_with(monkeypatch, target, **fields):
    """os.lstat / os.stat answer ``fields`` (st_uid, st_mode) for ``target``."""
    real_lstat, real_stat = os.lstat, os.stat

    def fake(real):
        def f(path, *a, **k):
            st = real(path, *a, **k)
            if os.fspath(path) != os.fspath(target):
                return st
            vals = list(st)
            vals[stat.ST_MODE] = fields.get("st_mode", st.st_mode)
            vals[stat.ST_UID] = fields.get("st_uid", st.st_uid)
            return os.stat_result(vals)
        return f
    monkeypatch.setattr(os, "lstat", fake(real_lstat))
    monkeypatch.setattr(os, "stat", fake(real_stat))


@pytest.mark.skipif(os.name != "posix", reason="POSIX owners")
def test_a_cache_folder_owned_by_someone_else_is_refused(tmp_path, monkeypatch):
    root = tmp_path / "theirs"
    root.mkdir(mode=0o755)                 # not writable by others: only the owner is wrong
    if os.geteuid() == 0:
        os.chown(root, 65534, 65534)       # nobody's
        other = 65534
    else:
        other = os.geteuid() + 1
        _stat_with(monkeypatch, root, st_uid=other)
    folder, why = _kernels._choose(root)
    assert folder is None and f"owned by uid {other}" in why and str(root) in why
    assert not (root / _kernels._tag()).exists() or os.geteuid() == 0


def test_a_symlinked_cache_folder_is_refused(tmp_path):
    """A link planted where the cache folder should be (to a folder with the victim's own
    rights, or anyone's) is not followed; neither is a link in place of the version folder."""
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    folder, why = _kernels._choose(link)
    assert folder is None and "symbolic link" in why
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (real / _kernels._tag()).symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    folder, why = _kernels._choose(real)
    assert folder is None and "symbolic link" in why and _kernels._tag() in why


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_a_cache_folder_under_a_folder_others_can_write_is_refused(tmp_path):
    """Someone who can write in the folder above can rename the cache away and put theirs in
    its place (unless the sticky bit stops them, as in /tmp)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / "mine").mkdir(mode=0o700)
    folder, why = _kernels._choose(shared / "mine")
    assert folder is None and "a folder above it" in why
    shared.chmod(0o1777)                                      # sticky: only the owner renames
    folder, why = _kernels._choose(shared / "mine")
    assert folder == shared / "mine" / _kernels._tag() and why == ""
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700       # created private


def test_a_trusted_cache_is_created_private(tmp_path):
    folder, why = _kernels._choose(tmp_path / "new" / "cache")
    assert why == "" and folder.is_dir()
    for d in (folder, folder.parent):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700


READ_ONLY_FOR_ROOT = """
import builtins, errno, io, os
_ro = os.environ["LINKDYN_CACHE_DIR"]
def _inside(path):
    try:
        return os.path.realpath(os.fspath(path)).startswith(_ro)
    except TypeError:
        return False
def _refuse(path):
    raise PermissionError(errno.EACCES, "Permission denied (read-only, simulated for root)", os.fspath(path))
_os_open, _open, _mkdir = os.open, builtins.open, os.mkdir
def os_open(path, flags, *a, **k):
    if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and _inside(path):
        _refuse(path)
    return _os_open(path, flags, *a, **k)
def open_(file, mode="r", *a, **k):
    if any(c in mode for c in "wax+") and _inside(file):
        _refuse(file)
    return _open(file, mode, *a, **k)
def mkdir(path, *a, **k):
    if _inside(path):
        _refuse(path)
    return _mkdir(path, *a, **k)
os.open, builtins.open, io.open, os.mkdir = os_open, open_, open_, mkdir
"""


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_a_trusted_read_only_complete_cache_is_used_without_compiling(tmp_path):
    """A cache its owner filled and then made read-only (a system-wide install) is loaded, not
    recompiled, and not written to.  Root writes in read-only folders anyway: as root, the
    process refuses itself every write under the cache (EACCES, as the folder would)."""
    expected = _reference()
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    shutil.copytree(_kernels.cache_dir(), cache / _kernels.cache_dir().name)
    for p in [*cache.rglob("*"), cache]:
        p.chmod(0o555 if p.is_dir() else 0o444)
    before = {p: p.stat().st_mtime_ns for p in cache.rglob("*")}
    try:
        code = (READ_ONLY_FOR_ROOT if os.geteuid() == 0 else "") + RUN_RNEA
        out = _run(code, SRC.parent, LINKDYN_CACHE_DIR=str(cache))
        value, count, _ = out.stdout.split()
        assert float(value) == expected and count == "0", out.stderr
        assert "not caching" not in out.stderr and "cannot write" not in out.stderr
        assert {p: p.stat().st_mtime_ns for p in cache.rglob("*")} == before
        # and a kernel missing from it is compiled in memory, with one note, not a failure
        import importlib
        index = pathlib.Path(importlib.import_module("linkdyn.dynamics.rnea")._rnea_packed_plain._cache._cache_file._index_path)
        missing = cache / index.relative_to(_kernels.cache_dir().parent)
        missing.parent.chmod(0o755)
        missing.unlink()
        missing.parent.chmod(0o555)
        again = _run(code, SRC.parent, LINKDYN_CACHE_DIR=str(cache))
        assert again.stdout.split()[:2] == [value, "1"]
        assert again.stderr.count("cannot write to its kernel cache") == 1
    finally:
        for p in [cache, *cache.rglob("*")]:
            if p.is_dir():
                p.chmod(0o700)
