"""Reading model files safely: regular files only, with a bounded read.

A symlink to /dev/zero would otherwise be read until memory runs out, a FIFO would block
forever, and a device's ``st_size`` (0) says nothing about what a read returns, so the size
cap is enforced on the bytes actually read.
"""
from __future__ import annotations

import os
import stat
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
