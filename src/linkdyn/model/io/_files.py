"""Reading model files safely: regular files only, with a bounded read, and only inside the
folders a model may read.

A symlink to /dev/zero would otherwise be read until memory runs out, a FIFO would block
forever, and a device's ``st_size`` (0) says nothing about what a read returns, so the size
cap is enforced on the bytes actually read.

Confinement: a model file is untrusted input, and the files it names (meshes, MJCF includes,
URDF ``package://`` and ``file://`` names) must not let it read, or have the viewer embed in a
page, a file elsewhere on the machine (``../../.ssh/id_rsa``, ``/etc/passwd``, a symbolic link
to either).  :func:`confine` is the one check every reader uses: the named file, with every
symbolic link resolved, must lie inside the model's folder or inside a folder the user named
(``asset_dirs=``, ``package_dirs=``, ``ROS_PACKAGE_PATH``); :func:`resolve_reference` turns a
URDF-style name into the path that check is made on.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

#: the largest model file read (bytes)
MAX_FILE_BYTES = 64 * 1024 * 1024


def read_model_file(path, error=ValueError, max_bytes: int = MAX_FILE_BYTES, what: str = "model file") -> bytes:
    """The bytes of the regular file ``path`` (symlinks followed), at most ``max_bytes``.
    Raises FileNotFoundError for a missing file and ``error`` (with the path) for anything
    that is not a regular file (a device, a FIFO, a socket, a directory) or is too large."""
    path = Path(path)
    st = path.stat()                                    # FileNotFoundError for a missing file
    if not stat.S_ISREG(st.st_mode):
        kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise error(f"{path}: is {kind}, not a regular {what}")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)  # a file swapped for a FIFO after stat cannot block
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise error(f"{path}: is not a regular {what}")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise error(f"{path}: is larger than the limit of {max_bytes} bytes for a {what}")
        return b"".join(chunks)
    finally:
        os.close(fd)


# -------------------------------------------------------------------------------- confinement
def asset_roots(base_dir, *more: Iterable | None) -> tuple[Path, ...]:
    """The folders a model's files may be read from: ``base_dir`` (the model's folder; None for
    text without one) and every folder in ``more`` (``asset_dirs``, ``package_dirs``, ...),
    symbolic links resolved.  A folder that does not exist is left out."""
    roots = []
    for d in ([base_dir] if base_dir is not None else []) + [d for group in more if group for d in
                                                               ([group] if isinstance(group, (str, os.PathLike)) else group)]:
        try:
            r = Path(d).expanduser().resolve(strict=True)
        except OSError:
            continue
        if r.is_dir() and r not in roots:
            roots.append(r)
    return tuple(roots)


def confine(path, roots, error=ValueError, what: str = "file", shown: str | None = None) -> Path:
    """``path`` with every symbolic link resolved, if that lies inside one of the folders
    ``roots`` (:func:`asset_roots`); raises ``error`` (a class, or a callable that makes the
    exception from the message) naming the file and the rule otherwise
    (checked before the file's existence, so the answer does not reveal what exists outside),
    and FileNotFoundError for a missing file inside."""
    p = Path(path)
    shown = f"{shown}: " if shown else "" if shown is not None else f"{path}: "

    def refuse(target):
        where = ", ".join(repr(str(r)) for r in roots) or "(none: the model was given as text without a folder)"
        raise error(f"{shown}refused: the {what} {str(target)!r} is outside the model's folder and the folders "
                    f"given as asset_dirs / package_dirs ({where}); the files a model names, symbolic links "
                    "resolved, must lie inside them (pass asset_dirs=[...] to allow another folder)")

    if not p.is_absolute():
        raise error(f"{shown}the {what} {str(p)!r} is relative to no folder")
    target = p.resolve(strict=False)                   # links of the existing part resolved, ".." applied
    if not any(target.is_relative_to(r) for r in roots):
        refuse(target)
    real = p.resolve(strict=True)                      # FileNotFoundError when missing
    if not any(real.is_relative_to(r) for r in roots):
        refuse(real)                                   # (a link created meanwhile)
    return real


def resolve_reference(name: str, base_dir, package_dirs: Iterable = ()) -> Path | None:
    """The path a file name written in a model file stands for, before :func:`confine`:
    ``file://path``, ``package://pkg/rest`` (``<d>/pkg/rest`` or, when ``d`` is the package
    itself, ``<d>/rest``, for each ``d`` in ``package_dirs``; then ``pkg/rest`` in the model's
    folder, then the model's folder or a folder above it named ``pkg``: the first that exists,
    else the first candidate), an absolute path, or a name relative to ``base_dir``.  None when
    a relative name has no folder to be relative to."""
    if name.startswith("file://"):
        return Path(name[len("file://"):])
    if name.startswith("package://"):
        pkg, _, rest = name[len("package://"):].partition("/")
        cands = []
        for d in package_dirs:
            d = Path(d).expanduser()
            cands += [d / pkg / rest] + ([d / rest] if d.name == pkg else [])
        if base_dir is not None:
            b = Path(base_dir)
            cands.append(b / pkg / rest)
            cands += [a / rest for a in (b, *b.parents) if a.name == pkg]
        for c in cands:
            if c.is_file():
                return c
        return cands[0] if cands else None
    p = Path(name)
    if p.is_absolute():
        return p
    return Path(base_dir) / p if base_dir is not None else None


def read_confined(path, roots, error=ValueError, max_bytes: int = MAX_FILE_BYTES, what: str = "model file",
                  shown: str | None = None) -> bytes:
    """:func:`read_model_file` of ``path`` after :func:`confine`."""
    return read_model_file(confine(path, roots, error, what, shown), error, max_bytes, what)
