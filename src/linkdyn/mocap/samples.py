"""A real public capture for the tutorial and the tests, downloaded into the user cache.

linkdyn vendors no capture.  :func:`walking_capture` fetches the source distribution of
``bvhtools`` 1.6.0 from PyPI (7.9 MB; the package ships a 4-minute, 30 Hz, 22-joint capture of
walking and turning in the LAFAN1 skeleton as ``testBvhFiles/test.bvh``), checks the archive's
SHA-256 against the one PyPI publishes, extracts that one file and checks its SHA-256 too, and
keeps it in ``<linkdyn cache>/data/mocap/`` (``$LINKDYN_CACHE_DIR``, else the user's cache folder;
the archive is not kept).  Later calls return the kept file after checking its hash again.
"""
from __future__ import annotations

import hashlib
import io
import os
import tarfile
import tempfile
import urllib.request
from pathlib import Path

#: the source distribution (its permanent address on PyPI's file host) and its SHA-256
SDIST_URL = ("https://files.pythonhosted.org/packages/98/5f/bc8f6c38893f89b46e30a163f1afda600f1bd35676032a3d"
             "75d815f606e4/bvhtools-1.6.0.tar.gz")
SDIST_SHA256 = "840c67a4d94c4c4732d1a729eac0ba6b0cad7c334aed2773ea2ff15ffe64c144"
#: the member extracted and its SHA-256
MEMBER = "bvhtools-1.6.0/testBvhFiles/test.bvh"
MEMBER_SHA256 = "53c90d858221d02a623776b6bca9d4cfed17ea832fc7bd641b35549055af912c"
FILENAME = "bvhtools-1.6.0-test.bvh"


def data_dir() -> Path:
    """``<linkdyn cache>/data/mocap`` (not created here)."""
    from .._kernels import _preferred_root
    return _preferred_root() / "data" / "mocap"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def walking_capture(download: bool = True, timeout: float = 120.0) -> Path | None:
    """The path of the kept walking capture (module docstring); downloaded when missing and
    ``download`` is true, else None when missing.  Raises ``OSError`` when the download fails
    and ``ValueError`` when a hash does not match (nothing is kept then)."""
    path = data_dir() / FILENAME
    if path.is_file():
        if _sha256(path.read_bytes()) == MEMBER_SHA256:
            return path
        path.unlink()                                      # damaged: fetch it again
    if not download:
        return None
    with urllib.request.urlopen(SDIST_URL, timeout=timeout) as r:   # noqa: S310 - a fixed https address
        data = r.read()
    if _sha256(data) != SDIST_SHA256:
        raise ValueError(f"{SDIST_URL}: SHA-256 {_sha256(data)}, expected {SDIST_SHA256}")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        f = tar.extractfile(MEMBER)
        if f is None:
            raise ValueError(f"{SDIST_URL}: no file {MEMBER}")
        bvh = f.read()
    if _sha256(bvh) != MEMBER_SHA256:
        raise ValueError(f"{MEMBER}: SHA-256 {_sha256(bvh)}, expected {MEMBER_SHA256}")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".part")
    with os.fdopen(fd, "wb") as out:
        out.write(bvh)
    os.replace(tmp, path)
    return path
