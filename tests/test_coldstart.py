"""The first minute (issue 28): ``import linkdyn`` compiles nothing and writes nothing to the
kernel cache (each kernel compiles on first use), the kernel cache is set up whichever of
linkdyn's modules a program imports first, one signature compiled on first use serves every
caller, and the progress bar starts after the first step (which compiles) and keeps compile
notices off its line.  No timing is asserted here: benchmarks/bench_coldstart.py measures."""
from __future__ import annotations

import importlib
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import linkdyn as ld
from linkdyn import _kernels

SRC = pathlib.Path(ld.__file__).resolve().parent


def _fresh(code, cache):
    """Run ``code`` in a new interpreter with the kernel cache in ``cache`` (an empty folder)."""
    env = dict(os.environ, PYTHONPATH=str(SRC.parent), LINKDYN_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    return out


@pytest.fixture
def empty_cache(tmp_path):
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    return d


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_a_cold_import_writes_no_cache_file_and_loads_no_numba(empty_cache):
    out = _fresh("import sys, linkdyn\nprint('numba' in sys.modules, 'linkdyn._kernels' in sys.modules)", empty_cache)
    assert out.stdout.split() == ["False", "False"]          # nothing to compile with, nothing compiled
    assert _files(empty_cache) == []
    assert "compiling" not in out.stderr


# a fresh interpreter's record of the functions Numba compiles (qualified names, in order)
COMPILE_LISTENER = """
from numba.core import event

compiled = []

class Count(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass

event.register("numba:compile", Count())
"""

IMPORT_EVERYTHING = """
import sys
""" + COMPILE_LISTENER + """import linkdyn
from linkdyn import *                      # every public name, so every module that defines one
import linkdyn.interop, linkdyn.cli, linkdyn.kinematics_derivatives
print(len(compiled), compiled[:5])
"""


def test_importing_every_public_module_compiles_nothing(empty_cache):
    """No kernel is given an eager signature anywhere: a signature compiles at import (seconds
    each on a cold cache)."""
    out = _fresh(IMPORT_EVERYTHING, empty_cache)
    assert out.stdout.startswith("0 []"), out.stdout
    assert _files(empty_cache) == []
    assert "compiling" not in out.stderr


FIRST_IMPORT = """
import sys, importlib
mod = importlib.import_module(sys.argv[1])
import linkdyn._kernels as k
kernel = getattr(mod, sys.argv[2])
print(kernel._cache._cache_path, k.cache_dir())
"""


@pytest.mark.parametrize("module, kernel", [("linkdyn.contact.lcp", "_pgs"),
                                            ("linkdyn.contact.collision._vec", "dot"),
                                            ("linkdyn.model.configuration", "_integrate_kernel")])
def test_a_kernel_module_imported_first_caches_in_linkdyns_folder(empty_cache, module, kernel):
    """Without ``import linkdyn`` setting the cache up eagerly, the first of linkdyn's modules a
    program imports does (linkdyn.__init__'s import hook): a module whose kernels were defined
    before it would use Numba's own cache, next to the sources, keyed on its own file only."""
    env = dict(os.environ, PYTHONPATH=str(SRC.parent), LINKDYN_CACHE_DIR=str(empty_cache))
    out = subprocess.run([sys.executable, "-c", FIRST_IMPORT, module, kernel], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    path, root = out.stdout.split()
    assert pathlib.Path(path).is_relative_to(root) and pathlib.Path(root).is_relative_to(empty_cache)


def test_one_signature_compiled_on_first_use_serves_every_caller():
    """``njit_on_first_use`` (the kinematics pass's decorator) compiles nothing when the function
    is defined, then, on the first call from Python or from a kernel being compiled, the declared
    signature only; later callers' arrays of other layouts and integers of other widths are
    converted to it (one compiled version, as with an eager signature)."""
    from numba import njit, types
    sig = types.float64(types.Array(types.float64, 1, "A", readonly=True), types.int64)

    def twice(x, k):
        return 2.0 * x[k]

    for first_from_python in (True, False):
        f = _kernels.njit_on_first_use(sig)(twice)
        caller = njit(lambda x: f(x, 1))                         # C-contiguous, writable, a literal
        assert f.signatures == []
        if first_from_python:
            assert f(np.arange(3.0), 1) == 2.0
        assert caller(np.arange(3.0)) == 2.0
        assert f(np.arange(6.0)[::2], np.int32(1)) == 4.0      # strided, int32
        assert f.signatures == [sig.args]
    from linkdyn._kernels import passes
    assert passes.forward_pass.signatures in ([], [passes._PASS_SIG])


def test_the_lazy_names_are_the_modules_own():
    """``ld.X`` is the object its module defines (imported on first use), and ``dir(ld)`` lists it."""
    import importlib
    for name, where in ld._LAZY.items():
        assert getattr(ld, name) is getattr(importlib.import_module(f"linkdyn.{where}"), name), name
        assert name in dir(ld)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        ld.no_such_name  # noqa: B018


# ------------------------------------------------------------------------------- progress bar
def test_the_progress_bar_starts_after_the_first_step_and_notices_get_their_own_line(capsys):
    """The first step compiles the step's kernels on a cold cache: the bar starts after it (its
    first estimate of the time left would count the compile), and a compile notice printed
    while the bar shows goes on a line of its own, above it."""
    from tqdm import tqdm
    m = ld.models.planar_2link()
    sim = ld.Simulation(m, np.array([0.3, -0.2]), dt=1e-3)
    step, bars, notice = sim.step, [], "linkdyn: compiling kernels (a test notice)"

    def watched(*args):
        bars.append(len(tqdm._instances))
        if len(bars) == 3:
            _kernels._say(notice)
        return step(*args)

    sim.step = watched
    capsys.readouterr()
    sim.run(until=0.0105, progress=True)          # 10 steps of dt and a shorter last one
    err = capsys.readouterr().err
    assert len(bars) == 11 and bars[0] == 0 and set(bars[1:]) == {1}, bars
    lines = [line.split("\r")[-1] for line in err.split("\n")]
    assert notice in lines, err                    # not appended to the bar's text
    assert _kernels._CompileNotice.printer is None  # restored after the run
    assert " 1/11 " in err                          # the bar counts the first step as done


# ------------------------------------------------------------------------ the first rnea's kernels
FIRST_RNEA = """
import sys
import numpy as np
""" + COMPILE_LISTENER + """import linkdyn as ld
m = ld.models.human_figure_16()
ld.rnea(m, ld.random_configuration(m, np.random.default_rng(3)), np.ones(m.nv), np.ones(m.nv))
print(" ".join(compiled))
"""


def test_the_first_rnea_of_common_joints_compiles_no_rarer_kind_and_no_spring(empty_cache):
    """A model whose joints are revolute, prismatic, free and spherical, without springs (the
    human figure), runs the smallest RNEA kernel: its pass calls ``jcalc_common``, and neither
    ``jcalc`` (the other joint kinds: a quarter of the cold first rnea's compile) nor the
    springs' kernel is compiled; the pass's general signature is left for the algorithms that
    need it."""
    out = _fresh(FIRST_RNEA, empty_cache)
    compiled = out.stdout.split()
    assert {"_rnea_packed_plain", "_forward_pass", "jcalc_common"} <= set(compiled), compiled
    assert not {"jcalc", "add_spring_torques", "_rnea_packed"} & set(compiled), compiled
    assert len(compiled) == len(set(compiled)), compiled      # each once: one signature each


@pytest.mark.parametrize("kinds, floating, plain", [(("revolute", "prismatic", "spherical"), True, True),
                                                    (("revolute", "universal", "spherical_zyx"), False, False),
                                                    (("cylindrical", "planar", "spherical"), True, False)])
def test_the_plain_rnea_agrees_with_the_general_kernel(kinds, floating, plain):
    """The fast path's kernel (the pass without jcalc's rarer kinds for a model whose joints
    have none, else the one with springs) gives the torques of the general kernel (every joint
    kind through jcalc, external forces, batches), to the last bit, for random trees."""
    R = importlib.import_module("linkdyn.dynamics.rnea")       # (the module, not the function)
    m = ld.models.random_tree(9, kinds=kinds, floating=floating, seed=11, joint_terms=True)
    assert m._plain_rnea is plain and not m._springs
    rng = np.random.default_rng(4)
    for _ in range(3):
        q = ld.random_configuration(m, rng)
        v, a = rng.standard_normal(m.nv), rng.standard_normal(m.nv)
        fast = ld.rnea(m, q, v, a)
        general = R._run(m, q, v, a, np.zeros((m.nbody, 6)))
        assert np.array_equal(fast, general), np.max(np.abs(fast - general))
