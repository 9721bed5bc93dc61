"""The compiled kernels' cache (``linkdyn._kernels``): one folder per user that a new copy of the
sources reuses, keys that change when any source a kernel depends on changes, a damaged cache
file dropped and compiled again, and a fallback when the cache folder cannot be written."""
import os
import pathlib
import shutil
import subprocess
import sys

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


def _run(code, pythonpath, **env):
    e = dict(os.environ, PYTHONPATH=str(pythonpath), **env)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=600)
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
    index = pathlib.Path(rnea_module._rnea_packed._cache._cache_file._index_path)   # the kernel rnea runs
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
def test_an_unwritable_cache_folder_falls_back_with_a_warning(tmp_path):
    ro = tmp_path / "readonly"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        out = _run(RUN_RNEA, SRC.parent, LINKDYN_CACHE_DIR=str(ro / "cache"))
    finally:
        ro.chmod(0o700)
    assert float(out.stdout.split()[0]) == _reference()
    assert "cannot write its kernel cache" in out.stderr


def test_a_cache_folder_that_is_a_file_falls_back_with_a_warning(tmp_path):
    """(What a read-only install with no writable home meets, as root can test it.)"""
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("x")
    out = _run(RUN_RNEA, SRC.parent, LINKDYN_CACHE_DIR=str(blocker))
    assert float(out.stdout.split()[0]) == _reference()
    assert "cannot write its kernel cache" in out.stderr
