"""BVH (Biovision Hierarchy) files: reading through ``pybvh``, writing with full precision.

Reading goes through `pybvh <https://pypi.org/project/pybvh/>`_ (the ``mocap`` extra), chosen
by measurement (docs/mocap.md): on a 7200-frame, 22-joint file it parsed in 0.09 s and
returned every channel value to the last bit, with each joint's channel order and its end
sites; ``bvhio`` took 0.9 s and holds rotations as single-precision quaternions (4.5e-7 rad,
4e-5 file units lost), ``bvh`` (last release 2017) took 20 s.  This module checks what pybvh
leaves open (NaN, the channel count of the motion lines, the frame time) and turns every
problem into one :class:`MocapError` that names the file.

A BVH joint's rotation is the product of its channels' elementary rotations in the order they
are listed, each about the already-rotated axes (intrinsic): channels ``Zrotation Xrotation
Yrotation`` give ``R = Rz(a) Rx(b) Ry(c)``, scipy's ``Rotation.from_euler("ZXY", [a, b, c])``
(upper case: intrinsic).  A child's origin is its parent's origin plus the parent's rotation
applied to the child's OFFSET; the root's position channels are its origin in the file's
world (its OFFSET is then ignored, as the CMU and LAFAN1 files expect).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray


class MocapError(ValueError):
    """A motion-capture file that cannot be read as a capture (the message names the file)."""


@dataclass
class Skeleton:
    """A BVH file's content in the file's own units and axes.

    ``names[j]``, ``parents[j]`` (-1 for the root; parents come before children), ``offsets[j]``
    (3,) in the parent joint's frame, ``orders[j]`` the rotation channel order (e.g. ``"ZXY"``),
    ``end_sites[j]``: list of end-site offsets in joint j's frame.  ``angles`` (T, J, 3): the
    rotation channels in degrees in each joint's channel order; ``root_position`` (T, 3);
    ``frame_time`` (s)."""
    names: list[str]
    parents: list[int]
    offsets: NDArray[np.float64]
    orders: list[str]
    end_sites: list[list[NDArray[np.float64]]]
    angles: NDArray[np.float64]
    root_position: NDArray[np.float64]
    frame_time: float
    path: str = ""
    children: list[list[int]] = field(default_factory=list)
    _rotations: list | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        self.children = [[k for k, p in enumerate(self.parents) if p == j] for j in range(len(self.names))]

    def ancestors(self, j: int) -> list[int]:
        """Joint j and its ancestors up to the root, in that order."""
        out = []
        while j >= 0:
            out.append(j)
            j = self.parents[j]
        return out

    @property
    def frames(self) -> int:
        return self.angles.shape[0]

    def rotations(self, frames: NDArray[np.int_] | list[int] | None = None) -> list:
        """Each joint's local rotation, a list of scipy ``Rotation`` stacks over the given frames
        (default all; that list is computed once and kept)."""
        from scipy.spatial.transform import Rotation
        if frames is None:
            if getattr(self, "_rotations", None) is None:
                self._rotations = [Rotation.from_euler(o, self.angles[:, j], degrees=True)
                                   for j, o in enumerate(self.orders)]
            return list(self._rotations)
        idx = np.asarray(frames, dtype=int)
        return [Rotation.from_euler(o, self.angles[idx, j], degrees=True) for j, o in enumerate(self.orders)]

    def world_positions(self, frames: NDArray[np.int_] | list[int] | None = None
                        ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Joint origins (F, J, 3), joint rotations (F, J, 3, 3) and end sites (F, E, 3) of the
        given frames (default all) in file units and axes, by the BVH forward kinematics."""
        idx = np.arange(self.frames) if frames is None else np.asarray(frames, dtype=int)
        F, J = len(idx), len(self.names)
        rots = [r.as_matrix() for r in self.rotations(idx)]
        R = np.empty((F, J, 3, 3))
        P = np.empty((F, J, 3))
        ends = []
        for j, p in enumerate(self.parents):
            if p < 0:
                R[:, j], P[:, j] = rots[j], self.root_position[idx]
            else:
                R[:, j] = R[:, p] @ rots[j]
                P[:, j] = P[:, p] + R[:, p] @ self.offsets[j]
            ends += [P[:, j] + R[:, j] @ e for e in self.end_sites[j]]
        E = np.stack(ends, axis=1) if ends else np.zeros((F, 0, 3))
        return P, R, E

    def rest_positions(self) -> tuple[NDArray[np.float64], list[NDArray[np.float64]]]:
        """Joint origins (J, 3) and end sites (list of (3,)) in the rest pose (every angle zero,
        root at its OFFSET), in file units and axes."""
        P = np.zeros((len(self.names), 3))
        ends = []
        for j, p in enumerate(self.parents):
            P[j] = self.offsets[j] if p < 0 else P[p] + self.offsets[j]
            ends += [P[j] + e for e in self.end_sites[j]]
        return P, ends


def _fail(path, what):
    return MocapError(f"{os.fspath(path)}: {what}")


def _count_motion_columns(path):
    """The number of values on the first motion line and the frame-time literal."""
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts[:2] == ["Frame", "Time:"]:
                ft = parts[2] if len(parts) > 2 else ""
                for line2 in f:
                    if line2.strip():
                        return len(line2.split()), ft
                return 0, ft
    return None, None


def read_skeleton(path: str | os.PathLike[str]) -> Skeleton:
    """Read a BVH file (``pybvh`` parses it).  Raises :class:`MocapError` naming the file and the
    problem: a broken hierarchy, a motion line whose value count does not match the channels, a
    NaN or infinite value, a zero or negative frame time, no frames."""
    try:
        import pybvh
    except ImportError as e:      # pragma: no cover - the extra is installed in CI
        raise ImportError("reading BVH needs pybvh: pip install 'linkdyn[mocap]'") from e
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such BVH file")
    ncols, ft_text = _count_motion_columns(path)
    if ft_text is not None:
        try:
            ft = float(ft_text)
        except ValueError:
            raise _fail(path, f"the frame time {ft_text!r} is not a number") from None
        if not np.isfinite(ft) or ft <= 0:
            raise _fail(path, f"the frame time is {ft_text}; it must be a positive number of seconds")
    try:
        b = pybvh.read_bvh_file(path, world_up="+y", warn_on_world_up_disagreement=False)
    except MocapError:
        raise
    except Exception as e:        # pybvh raises ValueError/IndexError on broken files
        msg = str(e).replace(path, "the file")
        if ncols is not None and "channels" in msg and "values per frame" in msg:
            raise _fail(path, f"channel count mismatch: {msg}") from None
        raise _fail(path, f"broken BVH ({type(e).__name__}: {msg})") from None
    nodes = [n for n in b.nodes if not n.is_end_site()]
    index = {id(n): j for j, n in enumerate(nodes)}
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise _fail(path, f"broken hierarchy: joint names used twice: {dup}")
    parents = [-1 if n.parent is None else index[id(n.parent)] for n in nodes]
    offsets = np.array([n.offset for n in nodes], dtype=float)
    ends = [[np.asarray(c.offset, dtype=float) for c in n.children if c.is_end_site()] for n in nodes]
    orders = [o.upper() for o in b.euler_orders]
    angles = np.degrees(np.asarray(b.joint_angles, dtype=float))
    # pybvh stores radians: back in degrees a value may differ from the file's by an ulp
    root = np.asarray(b.root_pos, dtype=float)
    if angles.ndim != 3 or angles.shape[0] == 0:
        raise _fail(path, "no motion frames")
    bad = ~np.isfinite(angles).all(axis=(1, 2)) | ~np.isfinite(root).all(axis=1)
    if bad.any():
        raise _fail(path, f"NaN or infinite channel values in {int(bad.sum())} frame(s), the first at frame {int(np.argmax(bad))}")
    if not np.isfinite(offsets).all() or any(not np.isfinite(e).all() for es in ends for e in es):
        raise _fail(path, "NaN or infinite OFFSET values")
    frame_time = float(ft) if ft_text is not None else float(b.frame_time)
    return Skeleton(names, parents, offsets, orders, ends, angles, root, frame_time, path)


def _fmt(x):
    return repr(float(x))


def write_skeleton(path: str | os.PathLike[str], sk: Skeleton) -> None:
    """Write ``sk`` as a BVH file, every number with 17 significant digits (a file read back
    gives the same doubles, so a round trip is exact)."""
    lines = ["HIERARCHY"]

    def emit(j, depth):
        ind = "  " * depth
        kind = "ROOT" if sk.parents[j] < 0 else "JOINT"
        lines.append(f"{ind}{kind} {sk.names[j]}")
        lines.append(ind + "{")
        lines.append(f"{ind}  OFFSET " + " ".join(_fmt(x) for x in sk.offsets[j]))
        rot = " ".join(f"{c}rotation" for c in sk.orders[j])
        if sk.parents[j] < 0:
            lines.append(f"{ind}  CHANNELS 6 Xposition Yposition Zposition {rot}")
        else:
            lines.append(f"{ind}  CHANNELS 3 {rot}")
        for k in sk.children[j]:
            emit(k, depth + 1)
        for e in sk.end_sites[j]:
            lines.extend([f"{ind}  End Site", ind + "  {", f"{ind}    OFFSET " + " ".join(_fmt(x) for x in e), ind + "  }"])
        lines.append(ind + "}")

    emit(0, 0)
    order = []

    def walk(j):
        order.append(j)
        for k in sk.children[j]:
            walk(k)

    walk(0)
    lines += ["MOTION", f"Frames: {sk.frames}", f"Frame Time: {_fmt(sk.frame_time)}"]
    data = np.concatenate([sk.root_position] + [sk.angles[:, j] for j in order], axis=1)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
        np.savetxt(f, data, fmt="%.17g")


#: length units a skeleton's height is tried in (metres per file unit, name): ``detect_scale``
_UNITS = ((1.0, "m"), (0.01, "cm"), (0.001, "mm"), (0.0254, "in"))


def detect_scale(sk: Skeleton):
    """(metres per file unit, the figure's height in file units): the height is the 90th
    percentile over up to 50 frames of the skeleton's extent along the file's Y axis (joints
    and end sites): a standing or walking figure's, whatever its rest pose (LAFAN1's lies along x)."""
    frames = np.unique(np.linspace(0, sk.frames - 1, min(sk.frames, 50)).astype(int))
    P, _, E = sk.world_positions(frames)
    ys = np.concatenate([P[..., 1], E[..., 1]], axis=1)
    H = float(np.percentile(ys.max(axis=1) - ys.min(axis=1), 90))
    if not np.isfinite(H) or H <= 0:
        raise MocapError(f"{sk.path}: the skeleton has no height (file Y axis)")
    for s, unit in _UNITS:
        if 0.8 <= H * s <= 2.5:
            return s, H
    raise MocapError(f"{sk.path}: cannot tell the length unit from the skeleton's height {H:g} "
                     f"(not 0.8-2.5 m in m, cm, mm or inches); pass scale= (metres per file unit)")
