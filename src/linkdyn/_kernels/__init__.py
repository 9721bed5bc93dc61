"""Compiled kernels and their shared pieces.

Numba's on-disk cache keys each function on its own source file only, so a change to an
inlined primitive (say ``spatial_nb.py``) would leave every cached algorithm that inlines it
stale and silently wrong.  On import we therefore compute, for every module of the package,
a hash of its source and of the sources of every package module it imports, directly or
transitively (read from its ``import`` statements).  Where that hash differs from the one
stored beside the module's cache, the module's cached kernels are removed and compile
afresh; modules whose dependencies did not change keep their cache.
"""
import ast
import hashlib
import pathlib

_PKG = pathlib.Path(__file__).resolve().parent.parent
_NAME = _PKG.name


def _module_file(parts):
    """Source file of the package module ``parts`` (relative to the package), or None."""
    base = _PKG.joinpath(*parts)
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _imports(path):
    """Package modules that the module at ``path`` imports (as files)."""
    rel = path.relative_to(_PKG).with_suffix("").parts
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
            f = _module_file(t)
            if f is not None and f != path:
                deps.add(f)
    return deps


def _guard_cache() -> None:
    sources = sorted(_PKG.rglob("*.py"))
    direct = {p: _imports(p) for p in sources}
    content = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sources}
    for path in sources:
        seen, stack = {path}, [path]
        while stack:
            for d in direct.get(stack.pop(), ()):
                if d not in seen:
                    seen.add(d)
                    stack.append(d)
        digest = hashlib.sha256()
        for p in sorted(seen):
            digest.update(p.relative_to(_PKG).as_posix().encode() + content.get(p, "").encode())
        new = digest.hexdigest()
        cache_dir = path.parent / "__pycache__"
        stamp = cache_dir / f"{path.stem}.deps.sha256"
        try:
            if stamp.exists() and stamp.read_text() == new:
                continue
            if cache_dir.is_dir():
                for cached in list(cache_dir.glob(f"{path.stem}.*.nbi")) + list(cache_dir.glob(f"{path.stem}.*.nbc")):
                    cached.unlink(missing_ok=True)
            cache_dir.mkdir(exist_ok=True)
            stamp.write_text(new)
        except OSError:
            pass   # a read-only install: Numba then caches elsewhere, keyed on the installed files


_guard_cache()
