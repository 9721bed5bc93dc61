"""Compiled kernels and their shared pieces, and where their compiled code is kept.

linkdyn's kernels are Numba functions compiled on first use and cached on disk.  This module
gives them a cache of their own (``cache_dir()``) instead of Numba's defaults:

* **one place per user** that survives reinstalls and works for a non-editable install:
  ``$LINKDYN_CACHE_DIR`` if set, else ``$NUMBA_CACHE_DIR/linkdyn`` if Numba's cache folder is
  set, else the user's cache folder (platformdirs: ``~/.cache/linkdyn`` on Linux), in a
  subfolder per Python and Numba version.  A new clone or a reinstall of the same sources
  loads what an earlier one compiled;
* **a cache is code:** Numba unpickles the index files it finds in the cache folder, so whoever
  can write a file there can run code as you.  A cache folder is used only if it is trusted:
  the folder named above, the per-version folder under it and every module folder under that
  (each created with mode 0700 when missing) must be real folders (not symbolic links), owned
  by you (the effective uid) and not writable by group or others, and the folders above it
  owned by you or root and writable by others only with the sticky bit (as /tmp) (POSIX).  Otherwise nothing is read
  from it or written to it: the kernels compile in memory, in every process (seconds to a
  minute, each time), and one warning names the folder and why.  There is no fallback to a
  shared temporary folder (a ``/tmp`` name can be created first by another user).  A trusted
  folder that is read-only (a system-wide install prepared by its owner) is used as it is:
  what it holds is loaded, and what it lacks is compiled in memory (one warning, not one per
  kernel);
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
import stat
import sys
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


_ROOT: list = []          # [the cache folder, or None: no cache in this process]
_WHY: list = []           # [why there is no cache], when there is none
_SUBDIRS: dict = {}       # module folder -> trusted (bool)


def _untrusted(path: pathlib.Path) -> str | None:
    """Why the folder ``path`` cannot hold code that this process will load, or None when it
    can: a real folder (not a symbolic link), owned by this user, not writable by group or
    others (lstat, so a link planted in its place is seen as a link)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"it cannot be inspected ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link (a cache folder must be a real folder)"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    if uid is not None and st.st_uid != uid:
        return f"it is owned by uid {st.st_uid}, not by you (uid {uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = " and ".join(w for w, bit in (("group", stat.S_IWGRP), ("others", stat.S_IWOTH)) if st.st_mode & bit)
        return f"it is writable by {who} (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _make(path: pathlib.Path) -> None:
    """Create the folder ``path`` (mode 0700) if it is missing; its parents as mkdir -p does."""
    if not os.path.lexists(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass                     # created meanwhile: checked like any other


def _unsafe_parent(root: pathlib.Path) -> str | None:
    """Why a folder above ``root`` would let someone else replace ``root`` (rename it and put
    their own in its place), or None: each one (symbolic links resolved) must be owned by you
    or by root and, if group or others may write in it, have the sticky bit (as /tmp)."""
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    if uid is None:
        return None
    try:
        parent = root.parent.resolve(strict=True)
    except OSError as exc:
        return f"{root.parent} cannot be inspected ({exc.strerror or exc})"
    for d in (parent, *parent.parents):
        st = os.stat(d)
        if st.st_uid not in (0, uid):
            return f"{d}, a folder above it, is owned by uid {st.st_uid} (neither you nor root)"
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
            return f"{d}, a folder above it, is writable by others (mode {stat.S_IMODE(st.st_mode):o}) without the sticky bit"
    return None


def _choose(root: pathlib.Path) -> tuple[pathlib.Path | None, str]:
    """(the per-version cache folder under ``root``, "") when ``root``, the folders above it
    and the one under it are trusted (created if missing), else (None, why)."""
    folder = root / _tag()
    for path in (root, folder):
        try:
            _make(path)
        except OSError as exc:
            return None, f"{path} cannot be created ({exc.strerror or exc})"
        why = _untrusted(path) if path == folder else (_untrusted(path) or _unsafe_parent(path))
        if why:
            return None, f"{path}: {why}"
    return folder, ""


def cache_dir() -> pathlib.Path | None:
    """The folder linkdyn's compiled kernels are cached in, or None when no trusted folder is
    available and the kernels compile in memory (module docstring: a cache is code)."""
    if _ROOT:
        return _ROOT[0]
    root, why = _choose(_preferred_root())
    if root is None:
        _WHY.append(why)
        warnings.warn(f"linkdyn: not caching its compiled kernels: {why}. A cache is code (Numba loads pickled "
                      "files from it), so only a folder that you own and that nobody else can write is used; "
                      "the kernels compile in memory in every process. Set LINKDYN_CACHE_DIR to such a folder "
                      "(mode 0700) to keep them", stacklevel=2)
    _ROOT.append(root)
    return root


def _module_dir(rel_parts) -> pathlib.Path | None:
    """The trusted cache folder of the package folder ``rel_parts`` (created, mode 0700, if
    missing), or None: no cache for its kernels (a warning per folder when it is untrusted;
    quietly when a read-only cache lacks it)."""
    base = cache_dir()
    if base is None:
        return None
    path = base.joinpath(*rel_parts)
    if path not in _SUBDIRS:
        why, p = None, base
        for part in rel_parts:
            p = p / part
            try:
                _make(p)
            except OSError:
                break                                   # a read-only cache without it: compiled in memory
            why = _untrusted(p)
            if why:
                warnings.warn(f"linkdyn: not caching the kernels of {'/'.join(rel_parts)}: {p}: {why} (a cache is "
                              "code: see linkdyn._kernels)", stacklevel=3)
                break
        _SUBDIRS[path] = why is None and os.path.isdir(path)
    return path if _SUBDIRS[path] else None


def _ours_rel(py_func):
    """The package folder (parts relative to the package) of a linkdyn kernel, else None."""
    try:
        return pathlib.Path(py_func.__code__.co_filename).resolve().relative_to(_PKG).parent.parts
    except (ValueError, OSError, AttributeError):
        return None


# ------------------------------------------------------------- kernels only kernels call
#: Options of a kernel that only other kernels call, never Python: Numba then builds neither
#: the wrapper that unboxes Python arguments nor the C-callable one (for a function of 10-14
#: array arguments, 0.15 s of its first compile each).  Calling such a kernel from Python is
#: not possible (its Python entry point is a null pointer): only for functions called from
#: compiled code.
INTERNAL = dict(no_cpython_wrapper=True, no_cfunc_wrapper=True)


# ------------------------------------------------------------- one signature, lazily
def njit_on_first_use(signature, **options):
    """``@njit(signature, **options)``, compiled when first called instead of when defined.

    Numba compiles a function given an explicit signature at decoration time, that is at
    import.  This decorator gives the same result on first use: the first call (from Python,
    or the first kernel that is typed against it) compiles ``signature`` and nothing else,
    whatever argument types that call has, then compilation is disabled, so every later
    caller's arguments are converted to it as with an eager signature (one compiled version
    for all callers).  ``import linkdyn`` then compiles nothing.
    """
    from numba import njit
    from numba.core.compiler_lock import global_compiler_lock

    def decorate(func):
        disp = njit(**options)(func)
        compile_one = disp.compile

        def compile(_requested=None):
            with global_compiler_lock:
                entry = compile_one(signature)
                disp.disable_compile()
                return entry

        disp.compile = compile
        return disp
    return decorate


# ------------------------------------------------------------------- numba's hooks
def _install():
    try:
        from numba.core import caching, dispatcher, event
        base = getattr(caching, "_CacheLocator", None) or caching.CacheLocator
        impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
        impl._locator_classes                             # noqa: B018  (present in this Numba?)
        caching.Cache.load_overload                       # noqa: B018
        dispatcher.Dispatcher.enable_caching              # noqa: B018
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
            self._cache_path = str(_module_dir(rel.parts))   # trusted: enable_caching checked it

        def get_cache_path(self):
            return self._cache_path

        def ensure_cache_path(self):
            """Created and checked by ``_module_dir``; nothing to test by writing (a trusted
            read-only cache is used as it is)."""

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
            if _module_dir(pathlib.Path(py_file).resolve().relative_to(_PKG).parent.parts) is None:
                raise RuntimeError(f"linkdyn: no trusted cache folder for {py_file}; "   # (enable_caching
                                   "its kernels must not be cached")                    # keeps them out)
            return cls(py_func, py_file)

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

    save = caching.Cache.save_overload
    if not getattr(save, "_linkdyn", False):
        def save_overload(self, sig, data):
            try:
                return save(self, sig, data)
            except OSError as exc:        # a trusted read-only cache: this kernel stays in memory
                locator = getattr(getattr(self, "_impl", None), "locator", None)
                if type(locator).__name__ != "LinkdynLocator":
                    raise
                if not _CompileNotice.unsaved:
                    _CompileNotice.unsaved = True
                    warnings.warn(f"linkdyn: cannot write to its kernel cache {cache_dir()} ({exc.strerror or exc}); "
                                  "kernels missing from it compile in memory in each process", stacklevel=2)
        save_overload._linkdyn = True
        caching.Cache.save_overload = save_overload

    enable = dispatcher.Dispatcher.enable_caching
    if not getattr(enable, "_linkdyn", False):
        def enable_caching(self):
            rel = _ours_rel(self.py_func)
            if rel is not None and _module_dir(rel) is None:
                return                    # Numba's NullCache stays: compiled in memory, no file read or written
            enable(self)
        enable_caching._linkdyn = True
        dispatcher.Dispatcher.enable_caching = enable_caching

    event.register("numba:compile", _Announcer())


class _CompileNotice:
    """What the announcer has said in this process."""
    first = None          # time of the first compile of one of our kernels
    last_note = 0.0
    count = 0
    quiet = False         # ``linkdyn warmup`` shows its own progress bar
    unsaved = False       # a kernel could not be written to a (read-only) cache
    #: prints a notice on a line of its own (default: stderr); a progress bar that is showing
    #: sets its own ``write`` here, so that a notice goes above the bar, not into its line
    printer = None


def _say(text):
    """Print a compile notice on a line of its own (through ``_CompileNotice.printer`` if set)."""
    if _CompileNotice.printer is not None:
        _CompileNotice.printer(text)
    else:
        print(text, file=sys.stderr, flush=True)


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
                where = (f"once (they are cached in {cache_dir()})" if cache_dir() is not None
                         else "in memory (no trusted cache folder: they are not kept)")
                _say(f"linkdyn: compiling kernels for this machine, {where}; "
                     "this can take a minute or more. `linkdyn warmup` compiles them all at once.")
            elif now - _CompileNotice.last_note > 15.0:
                _CompileNotice.last_note = now
                _say(f"linkdyn: still compiling ({_CompileNotice.count} kernels in "
                     f"{now - _CompileNotice.first:.0f} s so far)")

        def on_end(self, ev):
            if _ours(ev):
                _CompileNotice.count += 1
    return Announcer


def _Announcer():
    return _make_announcer()()


_install()
