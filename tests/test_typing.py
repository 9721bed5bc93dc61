"""The public API is annotated (the package ships py.typed), and the annotations agree with real
use: every public function and public method of a public class reachable from ``linkdyn`` and
its public submodules annotates its parameters and its return; mypy accepts a typed usage file."""
from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import linkdyn

SRC = Path(linkdyn.__file__).resolve().parent
HERE = Path(__file__).resolve().parent

#: the modules whose public names are walked (besides ``linkdyn`` itself)
MODULES = ["linkdyn", "linkdyn.kinematics", "linkdyn.dynamics", "linkdyn.analysis", "linkdyn.loops",
           "linkdyn.structure", "linkdyn.contact", "linkdyn.constraints", "linkdyn.control", "linkdyn.models",
           "linkdyn.model", "linkdyn.model.builder", "linkdyn.model.configuration", "linkdyn.model.joints",
           "linkdyn.model.model", "linkdyn.model.io.urdf", "linkdyn.model.io.mjcf", "linkdyn.spatial", "linkdyn.interop",
           "linkdyn.sim", "linkdyn.viz", "linkdyn.mocap"]

#: files whose public names are not walked (none: the whole public API is annotated)
EXCLUDED_FILES: list[str] = []
EXCLUDED_DIRS: list[str] = []


def _excluded(obj) -> bool:
    try:
        rel = Path(inspect.getsourcefile(obj)).resolve().relative_to(SRC).as_posix()
    except (TypeError, ValueError):
        return True                           # not a Python source of linkdyn
    return rel in EXCLUDED_FILES or rel.startswith(tuple(EXCLUDED_DIRS))


def _public_objects():
    """(qualified name, function or class) of every public function and class the modules
    expose: at the top level everything linkdyn re-exports, in a submodule what it defines (a
    package: what its own submodules define)."""
    seen = {}
    for modname in MODULES:
        mod = importlib.import_module(modname)
        names = getattr(mod, "__all__", None) if modname == "linkdyn" else None
        for name in names or dir(mod):
            if name.startswith("_"):
                continue
            obj = getattr(mod, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            home = getattr(obj, "__module__", "") or ""
            if modname == "linkdyn":
                ok = home.startswith("linkdyn")
            elif hasattr(mod, "__path__"):
                ok = home == modname or home.startswith(modname + ".")
            else:
                ok = home == modname
            if ok and not _excluded(obj):
                seen[id(obj)] = (f"{home}.{obj.__qualname__}", obj)
    return sorted(seen.values(), key=lambda x: x[0])


def _callables():
    """(name, function, skip_first) of every public function, and of every public method
    (including ``__init__`` and ``__call__``, properties' getters) a public class defines."""
    for name, obj in _public_objects():
        if inspect.isfunction(obj):
            yield name, obj, False
            continue
        for attr, member in vars(obj).items():
            if attr.startswith("_") and attr not in ("__init__", "__call__"):
                continue
            if isinstance(member, staticmethod):
                yield f"{name}.{attr}", member.__func__, False
            elif isinstance(member, classmethod):
                yield f"{name}.{attr}", member.__func__, True
            elif isinstance(member, property):
                if member.fget is not None:
                    yield f"{name}.{attr}", member.fget, True
            elif inspect.isfunction(member):
                if attr == "__init__" and member.__qualname__.split(".")[0] != obj.__name__:
                    continue                  # a generated __init__ (dataclass) is annotated from the fields
                yield f"{name}.{attr}", member, True


def test_public_api_is_annotated():
    offenders = []
    count = 0
    for name, fn, skip_first in _callables():
        count += 1
        sig = inspect.signature(fn)
        missing = []
        for k, p in enumerate(sig.parameters.values()):
            if (k == 0 and skip_first) or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            if p.annotation is inspect.Parameter.empty:
                missing.append(p.name)
        if sig.return_annotation is inspect.Signature.empty:
            missing.append("return")
        if missing:
            offenders.append(f"{name}: {', '.join(missing)}")
    assert count > 200, f"only {count} public callables found: the walk is broken"
    assert not offenders, (f"{len(offenders)} of {count} public callables lack annotations:\n  "
                           + "\n  ".join(offenders))


def test_mypy_accepts_typed_usage():
    pytest.importorskip("mypy")
    usage = HERE / "typing_usage.py"
    env = dict(os.environ, MYPY_CACHE_DIR=str(Path(os.environ.get("TMPDIR", "/tmp")) / "linkdyn-mypy-cache"))
    cmd = [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-error-summary", "--hide-error-context",
           "--follow-imports=silent", str(usage)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(HERE.parent), timeout=600)
    assert out.returncode == 0, f"mypy found errors in {usage.name}:\n{out.stdout}{out.stderr}"

