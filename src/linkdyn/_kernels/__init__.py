"""Compiled kernels and their shared pieces.

Numba's on-disk cache keys each function on its own source file only, so a change to an
inlined primitive (say ``spatial_nb.py``) would leave every cached algorithm that inlines it
stale and silently wrong.  On import we hash the sources of the whole package; when the hash
differs from the one stored beside the cache, the package's cached kernels are removed and
compile afresh.
"""
import hashlib
import pathlib

_PKG = pathlib.Path(__file__).resolve().parent.parent


def _guard_cache() -> None:
    sources = sorted(_PKG.rglob("*.py"))
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.relative_to(_PKG).as_posix().encode())
        digest.update(path.read_bytes())
    stamp = _PKG / "__pycache__" / "kernels.sha256"
    new = digest.hexdigest()
    try:
        if stamp.exists() and stamp.read_text() == new:
            return
        for cached in list(_PKG.rglob("*.nbi")) + list(_PKG.rglob("*.nbc")):
            cached.unlink(missing_ok=True)
        stamp.parent.mkdir(exist_ok=True)
        stamp.write_text(new)
    except OSError:
        pass   # a read-only install: Numba then caches elsewhere, keyed on the installed files


_guard_cache()
