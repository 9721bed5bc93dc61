"""C3D marker files (the ``c3d`` extra: ``ezc3d``).

`ezc3d <https://github.com/pyomeca/ezc3d>`_ (Michaud and Begon 2021, J. Open Source Software
6(58):2911) reads the file; :func:`read_c3d` returns its markers in linkdyn's units and axes:
metres (the file's ``POINT:UNITS``: m, cm or mm), a Z-up world (``up="z"``, the usual C3D
laboratory frame, or ``up="y"``: turned by :data:`~linkdyn.mocap.Y_UP_TO_Z_UP` as BVH files
are), NaN where a marker was not seen (a negative residual, as C3D marks it, or NaN), and the
analog channels (force plates, EMG) as they are.  Markers are positions, not joint rotations:
fitting a figure to them (inverse kinematics on a marker set) is not part of linkdyn yet.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .bvh import MocapError
from .figure import Y_UP_TO_Z_UP

_UNITS = {"m": 1.0, "cm": 0.01, "mm": 0.001}


@dataclass
class Markers:
    """A C3D file's markers: ``names`` (M,), ``t`` (T,) s, ``positions`` (T, M, 3) m in the Z-up
    world (NaN where a marker was not seen), ``rate`` (Hz), ``units`` (the file's length unit);
    ``analog_names``, ``analog_rate`` (Hz) and ``analogs`` (T_a, channels) as stored."""
    names: list[str]
    t: NDArray[np.float64]
    positions: NDArray[np.float64]
    rate: float
    units: str
    analog_names: list[str]
    analog_rate: float
    analogs: NDArray[np.float64]
    path: str = ""

    def marker(self, name: str) -> NDArray[np.float64]:
        """(T, 3) positions of the marker ``name``."""
        if name not in self.names:
            raise KeyError(f"{self.path}: no marker {name!r} (markers: {self.names})")
        return self.positions[:, self.names.index(name)]


def _value(params, group, name, default):
    try:
        v = params[group][name]["value"]
    except KeyError:
        return default
    return v if len(v) else default


def read_c3d(path: str | os.PathLike[str], up: str = "z") -> Markers:
    """Read a C3D file's markers and analog channels (module docstring).  ``up``: the file's
    vertical axis, ``"z"`` (default) or ``"y"``.  A file ezc3d cannot read, an unknown length
    unit or a non-positive rate raise :class:`MocapError` naming the file."""
    try:
        import ezc3d
    except ImportError as e:      # pragma: no cover - the extra is installed in CI
        raise ImportError("reading C3D needs ezc3d: pip install 'linkdyn[c3d]'") from e
    path = os.fspath(path)
    if up not in ("z", "y"):
        raise ValueError(f"up: expected 'z' or 'y', got {up!r}")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such C3D file")
    try:
        c = ezc3d.c3d(path)
    except Exception as e:       # ezc3d raises OSError/RuntimeError on a broken file
        raise MocapError(f"{path}: not a readable C3D file ({type(e).__name__}: {e})") from None
    p = c["parameters"]
    rate = float(_value(p, "POINT", "RATE", [0.0])[0])
    if not np.isfinite(rate) or rate <= 0:
        raise MocapError(f"{path}: the point rate is {rate}; it must be a positive number of frames a second")
    unit = str(_value(p, "POINT", "UNITS", ["mm"])[0]).strip().lower() or "mm"
    if unit not in _UNITS:
        raise MocapError(f"{path}: unknown length unit {unit!r} (expected one of {sorted(_UNITS)})")
    names = [str(n).strip() for n in _value(p, "POINT", "LABELS", [])]
    pts = np.asarray(c["data"]["points"], dtype=float)          # (4, M, T): x, y, z, 1
    M, T = pts.shape[1], pts.shape[2]
    if len(names) < M:
        names += [f"marker{k}" for k in range(len(names), M)]
    names = names[:M]
    X = np.transpose(pts[:3], (2, 1, 0)) * _UNITS[unit]        # (T, M, 3)
    res = c["data"]["meta_points"].get("residuals") if "meta_points" in c["data"] else None
    if res is not None and np.size(res):
        res = np.asarray(res, dtype=float).reshape(M, T).T
        X[res < 0] = np.nan
    if up == "y":
        X = X @ Y_UP_TO_Z_UP.T
    an = np.asarray(c["data"]["analogs"], dtype=float)
    analogs = an.reshape(an.shape[-2], -1).T if an.size else np.zeros((0, 0))
    a_names = [str(n).strip() for n in _value(p, "ANALOG", "LABELS", [])]
    a_rate = float(_value(p, "ANALOG", "RATE", [0.0])[0]) if analogs.size else 0.0
    return Markers(names, np.arange(T) / rate, X, rate, unit, a_names, a_rate, analogs, path)
