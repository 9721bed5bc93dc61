"""Compiled kernels and their shared pieces, and where their compiled code is kept.

linkdyn's kernels are Numba functions compiled on first use and cached on disk.  This module
gives them a cache of their own (``cache_dir()``) instead of Numba's defaults:

* **one place per user** that survives reinstalls and works for a non-editable install:
  ``$LINKDYN_CACHE_DIR`` if set, else ``$NUMBA_CACHE_DIR/linkdyn`` if Numba's cache folder is
  set, else the user's cache folder (platformdirs: ``~/.cache/linkdyn`` on Linux), in a
  subfolder per Python and Numba version.  A new clone or a reinstall of the same sources
  loads what an earlier one compiled; a read-only install with no writable cache folder falls
  back to a temporary folder, with a warning, instead of failing to import;
* **stale code is never loaded:** Numba keys a cached function on its own source file only,
  so an edit to an inlined primitive (say ``spatial_nb.py``) would leave every kernel that
  inlines it stale and silently wrong.  Each module's cache is keyed here on a hash of its
  source and of the sources of every package module it imports, directly or transitively
  (read from its ``import`` statements), wherever the cache lives;
* **a damaged cache file is dropped** (with a warning) and the kernel compiled again, rather
  than failing every later call;
* **a first compile is announced** on stderr (and then every 15 s while it goes on), since a
  cold cache takes from seconds to minutes; ``linkdyn warmup`` compiles everything at once.

Layer (docs/architecture.md): the bottom, with :mod:`linkdyn.spatial` and :mod:`linkdyn.recording`.
May import: numpy, numba and its own modules only.  Imported by: every other layer.
"""
from __future__ import annotations

import ast
import hashlib
import os
import pathlib
import sys
import tempfile
import time
import warnings

_PKG = pathlib.Path(__file__).resolve().parent.parent
_SELF = pathlib.Path("_kernels", "__init__.py")          # this file, relative to the package
_NAME = _PKG.name


# -------------------------------------------------------------------------------- keys
def _module_file(parts, root=None):
    """Source file of the package module ``parts`` (relative to the package), or None."""
    base = (root or _PKG).joinpath(*parts)
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _imports(path, root=None):
    """Package modules that the module at ``path`` imports (as files)."""
    root = root or _PKG
    rel = path.relative_to(root).with_suffix("").parts
    here = list(rel[:-1])          # relative imports resolve against the containing package
    try:
        tree = ast.parse(path.read_bytes())
    except SyntaxError:
        return set()
    deps = set()
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)] if node.level > 1 else here
            elif node.module and node.module.split(".")[0] == _NAME:
                base = []
            else:
                continue
            mod = base + (node.module.split(".")[1 if not node.level else 0:] if node.module else [])
            if node.module:
                targets.append(mod)
            targets.extend(mod + [alias.name] for alias in node.names)   # names that are submodules
        elif isinstance(node, ast.Import):
            targets.extend(a.name.split(".")[1:] for a in node.names if a.name.split(".")[0] == _NAME)
        for t in targets:
            f = _module_file(t, root)
            if f is not None and f != path and f.relative_to(root) != _SELF:   # (no kernel code in it)
                deps.add(f)
    return deps


_KEYS: dict = {}
_DIRECT: dict = {}
_CONTENT: dict = {}


def source_key(path, root=None) -> str:
    """The hash of the module at ``path`` and of every package module it imports, directly or
    transitively: what its compiled kernels depend on.  ``root``: the package folder (default
    this one's)."""
    root = pathlib.Path(root).resolve() if root is not None else _PKG
    path = pathlib.Path(path).resolve()
    if root == _PKG and path in _KEYS:
        return _KEYS[path]
    # this package's files are read and parsed once per process (the keys of ~170 kernels share them)
    direct, content = (_DIRECT, _CONTENT) if root == _PKG else ({}, {})
    seen, stack = {path}, [path]
    while stack:
        p = stack.pop()
        if p not in direct:
            direct[p] = _imports(p, root)
        for d in direct[p]:
            if d not in seen:
                seen.add(d)
                stack.append(d)
    digest = hashlib.sha256()
    for p in sorted(seen):
        if p not in content:
            content[p] = hashlib.sha256(p.read_bytes()).hexdigest()
        digest.update(p.relative_to(root).as_posix().encode() + content[p].encode())
    key = digest.hexdigest()
    if root == _PKG:
        _KEYS[path] = key
    return key


# ------------------------------------------------------------------------------ where
def _tag() -> str:
    import numba
    return f"py{sys.version_info[0]}{sys.version_info[1]}-numba{numba.__version__}"


def _preferred_root() -> pathlib.Path:
    env = os.environ.get("LINKDYN_CACHE_DIR")
    if env:
        return pathlib.Path(env).expanduser()
    from numba.core import config
    if config.CACHE_DIR:
        return pathlib.Path(config.CACHE_DIR).expanduser() / "linkdyn"
    try:
        import platformdirs
        return pathlib.Path(platformdirs.user_cache_dir("linkdyn", appauthor=False))
    except ImportError:                                      # (a dependency; never expected)
        return pathlib.Path.home() / ".cache" / "linkdyn"


_ROOT: list = []


def _writable(path: pathlib.Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
        return True
    except OSError:
        return False


def cache_dir() -> pathlib.Path:
    """The folder linkdyn's compiled kernels are cached in (module docstring)."""
    if _ROOT:
        return _ROOT[0]
    root = _preferred_root() / _tag()
    if not _writable(root):
        fallback = pathlib.Path(tempfile.gettempdir()) / f"linkdyn-cache-{os.getuid() if hasattr(os, 'getuid') else 0}" / _tag()
        warnings.warn(f"linkdyn: cannot write its kernel cache in {root}; using {fallback} for this run "
                      "(set LINKDYN_CACHE_DIR to a writable folder to keep the compiled kernels)", stacklevel=2)
        root = fallback
    _ROOT.append(root)
    return root


# ------------------------------------------------------------------- numba's hooks
def _install():
    try:
        from numba.core import caching, event
        base = getattr(caching, "_CacheLocator", None) or caching.CacheLocator
        impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
        impl._locator_classes                             # noqa: B018  (present in this Numba?)
        caching.Cache.load_overload                       # noqa: B018
    except (ImportError, AttributeError):                 # Numba's internals moved: its defaults
        warnings.warn("linkdyn: this Numba's cache internals are not the ones linkdyn knows; its kernels "
                      "use Numba's own cache (no staleness guard across modules)", stacklevel=2)
        return

    class LinkdynLocator(base):
        """Numba cache locator for linkdyn's modules: ``cache_dir()``, keyed on ``source_key``."""

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            rel = pathlib.Path(py_file).resolve().relative_to(_PKG).parent
            self._cache_path = str(cache_dir().joinpath(*rel.parts))

        def get_cache_path(self):
            return self._cache_path

        def get_source_stamp(self):
            return source_key(self._py_file)

        def get_disambiguator(self):
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func, py_file):
            try:
                pathlib.Path(py_file).resolve().relative_to(_PKG)
            except (ValueError, OSError):
                return None                               # not ours: Numba's own locators
            self = cls(py_func, py_file)
            try:
                self.ensure_cache_path()
            except OSError:
                return None
            return self

    if not any(getattr(c, "__name__", "") == "LinkdynLocator" for c in impl._locator_classes):
        impl._locator_classes.insert(0, LinkdynLocator)

    load = caching.Cache.load_overload
    if not getattr(load, "_linkdyn", False):
        def load_overload(self, sig, target_context):
            try:
                return load(self, sig, target_context)
            except Exception as exc:      # a truncated or garbled file of ours: drop it, compile again
                locator = getattr(getattr(self, "_impl", None), "locator", None)
                if type(locator).__name__ != "LinkdynLocator":
                    raise
                cf = self._cache_file
                warnings.warn(f"linkdyn: a compiled-kernel cache file was unreadable ({type(exc).__name__}: {exc}); "
                              f"removed it ({cf._index_path}), compiling again", stacklevel=2)
                base_name = os.path.basename(cf._index_path)[:-len(".nbi")]
                for f in pathlib.Path(cf._cache_path).glob(f"{base_name}*"):
                    try:
                        f.unlink()
                    except OSError:
                        pass
                return None
        load_overload._linkdyn = True
        caching.Cache.load_overload = load_overload

    event.register("numba:compile", _Announcer())


class _CompileNotice:
    """What the announcer has said in this process."""
    first = None          # time of the first compile of one of our kernels
    last_note = 0.0
    count = 0
    quiet = False         # ``linkdyn warmup`` shows its own progress bar


def _ours(ev) -> bool:
    disp = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
    mod = getattr(getattr(disp, "py_func", None), "__module__", "") or ""
    return mod == _NAME or mod.startswith(_NAME + ".")


def _make_announcer():
    from numba.core import event

    class Announcer(event.Listener):
        def on_start(self, ev):
            if not _ours(ev) or _CompileNotice.quiet:
                return
            now = time.monotonic()
            if _CompileNotice.first is None:
                _CompileNotice.first = _CompileNotice.last_note = now
                print(f"linkdyn: compiling kernels for this machine, once (they are cached in {cache_dir()}); "
                      "this can take a minute or more. `linkdyn warmup` compiles them all at once.",
                      file=sys.stderr, flush=True)
            elif now - _CompileNotice.last_note > 15.0:
                _CompileNotice.last_note = now
                print(f"linkdyn: still compiling ({_CompileNotice.count} kernels in "
                      f"{now - _CompileNotice.first:.0f} s so far)", file=sys.stderr, flush=True)

        def on_end(self, ev):
            if _ours(ev):
                _CompileNotice.count += 1
    return Announcer


def _Announcer():
    return _make_announcer()()


_install()
