"""Stick figures of a model: which lines to draw, and where they are for a configuration.

No plotting library is needed here; :mod:`linkdyn.viz.animate` draws what this module computes.

Rules (:class:`Skeleton`):

* **bones**: a line from each body's parent body origin to the body origin, for every body that
  is not a virtual link (the zero-inertia end links of loop closures coincide with their real
  link, ``model.is_virtual``) and except from the world origin to a floating base (a free or
  planar joint on the world, whose "bone" would be a line through empty space) and to the
  bodies of a model with several bodies jointed to the world (a swing's ropes, each hung from its
  own point: lines from the origin to each);
* **ends**: a line from a body origin to each of its frames that marks the end of a limb: every
  user frame (not a body's own frame, not a loop's frame) at a distance from the body origin,
  on a body with no (real) child body, or farther from the body origin than every child body's
  origin (an extremity such as the 16-DoF figure's ``head_top`` on its trunk).  Frames at the
  same place on the same body are drawn once;
* **closures**: each loop of ``model.loops`` is a point, where its frame on the real link is
  (``loop.b``, ``loop.b_pose``): a marker, not a line.
"""
from __future__ import annotations

import numpy as np

from ..kinematics import Kinematics, forward_kinematics
from ..model import joints as J

from typing import TYPE_CHECKING

if TYPE_CHECKING:

    from numpy.typing import ArrayLike

    from ..kinematics import Kinematics
    from ..model.model import Model

#: joint kinds that make a body a floating base when its parent is the world
_FLOATING = (J.FREE, J.PLANAR)


class Skeleton:
    """What to draw for ``model``, worked out once (index arrays), placed with :meth:`segments`,
    :meth:`closure_points` and :meth:`joint_points` for one configuration or a stack of them.

    ``bones`` (nbone, 2): (parent body, body) index pairs; ``ends`` (nend,): body index of each
    end line, ``end_offsets`` (nend, 3) the frame's position in that body, ``end_names`` the
    frame names; ``loop_bodies`` (nloops,), ``loop_offsets`` (nloops, 3), ``loop_names``.
    ``labels`` names every segment ("parent->body" or "body->frame") in :meth:`segments` order,
    ``sides`` tells which side each segment belongs to ("l", "r" or "" for the middle), from the
    "l_" / "r_" / "left" / "right" prefixes of the names of both its ends."""

    def __init__(self, model: Model) -> None:
        self.model = model
        nb = model.nbody
        virtual = np.asarray(model.is_virtual, dtype=bool)
        parent = np.asarray(model.parent)
        bones = []
        # bodies hung from several points of the world (a swing's two ropes) have no bone from
        # the world origin: it would be a line through empty space to each suspension point
        on_world = [i for i in range(1, nb) if parent[i] == 0 and not virtual[i] and model.jnt_type[i] not in _FLOATING]
        for i in range(1, nb):
            if virtual[i]:
                continue
            if parent[i] == 0 and (model.jnt_type[i] in _FLOATING or len(on_world) > 1):
                continue
            bones.append((int(parent[i]), i))
        self.bones = np.array(bones, dtype=np.int64).reshape(-1, 2)
        self.bodies = np.array([i for i in range(1, nb) if not virtual[i]], dtype=np.int64)

        # the ends of limbs
        body_names = set(model.body_names)
        loop_frames = {lp.name for lp in model.loops}
        child_reach = np.zeros(nb)          # farthest real child origin from each body's origin
        has_child = np.zeros(nb, dtype=bool)
        for i in range(1, nb):
            if virtual[i]:
                continue
            has_child[parent[i]] = True
            child_reach[parent[i]] = max(child_reach[parent[i]], float(np.linalg.norm(model.p_tree[i])))
        ends, offsets, names, seen = [], [], [], []
        for k, name in enumerate(model.frame_names):
            b = int(model.frame_body[k])
            if b == 0 or virtual[b] or name in body_names or name in loop_frames:
                continue
            p = np.array(model.frame_p[k], dtype=float)
            d = float(np.linalg.norm(p))
            if d <= 1e-9 or (has_child[b] and d <= child_reach[b] + 1e-9):
                continue
            if any(b == b2 and np.allclose(p, p2, atol=1e-9) for b2, p2 in seen):
                continue
            seen.append((b, p))
            ends.append(b), offsets.append(p), names.append(name)
        self.ends = np.array(ends, dtype=np.int64)
        self.end_offsets = np.array(offsets, dtype=float).reshape(-1, 3)
        self.end_names = tuple(names)

        self.loop_bodies = np.array([lp.b for lp in model.loops], dtype=np.int64)
        self.loop_offsets = np.array([lp.b_pose[1] for lp in model.loops], dtype=float).reshape(-1, 3)
        self.loop_names = tuple(lp.name for lp in model.loops)

        bn = model.body_names
        self.labels = tuple([f"{bn[a]}->{bn[b]}" for a, b in self.bones] +
                            [f"{bn[b]}->{n}" for b, n in zip(self.ends, self.end_names)])
        # a bone belongs to a side (left / right limb) if both its bodies do; bones from a central
        # body to a limb (trunk -> upper arm) belong to the middle
        self.sides = tuple([_side(bn[b]) if a and _side(bn[a]) == _side(bn[b]) else "" for a, b in self.bones]
                           + [_side(n) if _side(n) == _side(bn[b]) else "" for b, n in zip(self.ends, self.end_names)])

    @property
    def nsegments(self) -> int:
        return len(self.bones) + len(self.ends)

    # --- placement ------------------------------------------------------------------------
    def kinematics(self, q: ArrayLike) -> Kinematics:
        """Body poses (``forward_kinematics``) for one configuration (nq,) or a stack (N, nq).

        A stack is done state by state: a picture needs a few thousand poses at most (a few ms),
        and the parallel batched kernel would cost a newcomer's first demo ~10 s to compile."""
        q = np.asarray(q, dtype=float)
        if q.ndim == 1:
            return forward_kinematics(self.model, q)
        R = np.empty((q.shape[0], self.model.nbody, 3, 3))
        p = np.empty((q.shape[0], self.model.nbody, 3))
        for k in range(q.shape[0]):
            kin = forward_kinematics(self.model, q[k])
            R[k], p[k] = kin.R, kin.p
        return Kinematics(self.model, R, p, None, None)

    def segments(self, q: ArrayLike | None = None, kin: Kinematics | None = None) -> np.ndarray:
        """(nseg, 2, 3) line segments [start, end] in world coordinates ((N, nseg, 2, 3) for a stack
        of configurations): the bones, then the end lines, in :attr:`labels` order."""
        kin = self.kinematics(q) if kin is None else kin
        R, p = kin.R, kin.p
        bones = np.stack([p[..., self.bones[:, 0], :], p[..., self.bones[:, 1], :]], axis=-2)
        start = p[..., self.ends, :]
        tip = start + np.einsum("...kij,kj->...ki", R[..., self.ends, :, :], self.end_offsets)
        ends = np.stack([start, tip], axis=-2)
        return np.concatenate([bones, ends], axis=-3)

    def closure_points(self, q: ArrayLike | None = None, kin: Kinematics | None = None) -> np.ndarray:
        """(nloops, 3) world positions of the loops' closure points (the frame on each real link);
        (N, nloops, 3) for a stack."""
        kin = self.kinematics(q) if kin is None else kin
        R, p = kin.R, kin.p
        return p[..., self.loop_bodies, :] + np.einsum("...kij,kj->...ki", R[..., self.loop_bodies, :, :],
                                                       self.loop_offsets)

    def joint_points(self, q: ArrayLike | None = None, kin: Kinematics | None = None) -> np.ndarray:
        """(nbody_real, 3) world positions of the origins of the real (non-virtual) moving bodies:
        where the joints are; (N, ..., 3) for a stack."""
        kin = self.kinematics(q) if kin is None else kin
        return kin.p[..., self.bodies, :]


def _side(name: str) -> str:
    n = name.lower()
    if n.startswith(("l_", "left")):
        return "l"
    if n.startswith(("r_", "right")):
        return "r"
    return ""


def skeleton(model: Model, q: ArrayLike) -> np.ndarray:
    """The stick figure of ``model`` at ``q``: an array (nseg, 2, 3) of line segments, each a
    pair of world points [start, end] ((N, nseg, 2, 3) for a stack of configurations).

    A line from each real body's parent body origin (the world origin for bodies on the world,
    except a floating base) to the body origin, then a line from a body origin to each frame
    that ends a limb (for the human figures: grips, soles, heels, toes, head_top); virtual links
    of loop closures are not drawn.  See :class:`Skeleton` for the rules and for the names of
    the segments, and :func:`closure_points` for the loops."""
    return Skeleton(model).segments(q)


def closure_points(model: Model, q: ArrayLike) -> np.ndarray:
    """(nloops, 3) world points where the loops of ``model`` close (drawn as markers)."""
    return Skeleton(model).closure_points(q)
