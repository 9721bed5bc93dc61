"""``<equality>``: connect and weld loop closures, and linear joint and fixed-tendon couplings
as gears (two joints) or linear couplings (``ModelBuilder.add_coupling``, more joints)."""
from __future__ import annotations

import numpy as np

from ... import joints as J
from .common import _I3, _WORLD, _Z3, _quat_wxyz_matrix, _unique
from .defaults import _Attr


def _equalities(P, b, root, taken, used_joints):
    ctx = P.ctx
    world_pose = {_WORLD: (_I3, _Z3)}
    world_pose.update({bd.name: bd.W for bd in P.bodies})
    counter = 0
    for eq in root.findall("equality"):
        for el in eq:
            counter += 1
            given = el.get("name")
            where = f"<{el.tag} name={given!r}>" if given else f"<{el.tag}> number {counter} in <equality>"
            if el.tag in ("flex", "flexvert", "flexstrain", "distance"):
                raise NotImplementedError(f"{ctx.file(el)}: {where}: <equality><{el.tag}> is not supported "
                                          "(connect, weld and linear joint couplings are)")
            if el.tag not in ("connect", "weld", "joint", "tendon"):
                raise ctx.error(el, "<equality>", f"unknown element <{el.tag}>")
            a = _Attr(ctx, el, where, P.defaults.of(el, "equality", None, where))
            if not a.boolean("active", True):
                ctx.warn(el, where, "an inactive constraint (active='false') is skipped")
                continue
            if el.tag == "joint":
                _joint_equality(P, b, a)
                continue
            if el.tag == "tendon":
                _tendon_equality(P, b, a, root)
                continue
            has_site = a.has("site1") or a.has("site2")
            has_body = any(a.has(k) for k in ("body1", "body2", "anchor", "relpose"))
            if has_site and has_body:
                raise a.err("give either site1/site2 or body1/body2 (with anchor, relpose), not both")

            def body_ref(attr, default):
                nm = a.raw(attr)
                if nm is None:
                    if default is None:
                        raise a.err(f"<{el.tag}> needs a '{attr}' attribute")
                    return default
                if nm not in world_pose:
                    raise a.err(f"{attr}={nm!r} is not a body of the model")
                return nm

            def site_ref(attr):
                nm = a.raw(attr)
                if nm not in P.site_info:
                    raise a.err(f"{attr}={nm!r} is not a named site of the model")
                return P.site_info[nm]

            if has_site:
                if not (a.has("site1") and a.has("site2")):
                    raise a.err(f"<{el.tag}> needs both 'site1' and 'site2'")
                b1, R1, p1 = site_ref("site1")
                b2, R2, p2 = site_ref("site2")
            else:
                b1, b2 = body_ref("body1", None), body_ref("body2", _WORLD)
            if b1 == b2:
                raise a.err(f"both ends are on body {b1!r}; the constraint would constrain nothing")
            W1, W2 = world_pose[b1], world_pose[b2]
            lname = _unique(given or f"{el.tag}_{b1}_{b2}", taken)
            if given and lname != given:
                ctx.warn(el, where, f"the name is taken by a body, site or another constraint; the loop is "
                                    f"called {lname!r}")
            if el.tag == "connect":
                if has_site:
                    anchor, real_p = p1, p2
                else:
                    anchor = a.floats("anchor", 3)
                    x = W1[0] @ anchor + W1[1]                      # the point in qpos0, world
                    real_p = W2[0].T @ (x - W2[1])
                # orient the virtual link so that the cut joint is at the identity in qpos0
                real_R = W2[0].T @ W1[0]
                try:
                    b.add_loop(lname, b1, b2, J.Spherical(), placement=(_I3, anchor),
                               real_placement=(real_R, real_p), joint_name=_unique(f"{lname}_joint", used_joints))
                except ValueError as exc:
                    raise a.err(str(exc)) from None
            else:   # weld
                if has_site:
                    pa, pb = (R1, p1), (R2, p2)
                else:
                    anchor = a.floats("anchor", 3, [0.0, 0.0, 0.0])
                    rel = a.floats("relpose", 7, [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
                    if np.linalg.norm(rel[3:]) < 1e-10:         # MuJoCo: the relative pose in qpos0
                        x = W2[0] @ anchor + W2[1]
                        pa = (W1[0].T @ W2[0], W1[0].T @ (x - W1[1]))
                    else:
                        pa = (_quat_wxyz_matrix(rel[3:] / np.linalg.norm(rel[3:])), rel[:3])
                    pb = (_I3, anchor)
                try:
                    b.add_loop(lname, b1, b2, J.Fixed(), placement=pa, real_placement=pb,
                               joint_name=_unique(f"{lname}_joint", used_joints))
                except ValueError as exc:
                    raise a.err(str(exc)) from None


def _joint_equality(P, b, a):
    names = []
    for attr in ("joint1", "joint2"):
        nm = a.raw(attr)
        if nm is None:
            if attr == "joint1":
                raise a.err("<joint> needs a 'joint1' attribute")
            raise NotImplementedError(f"{P.ctx.file(a.el)}: {a.where}: an equality that locks joint "
                                      f"{a.raw('joint1')!r} alone (no joint2) is not supported")
        if nm not in P.joint_info:
            raise a.err(f"{attr}={nm!r} is not a joint of the model")
        if P.joint_info[nm].type not in ("hinge", "slide"):
            raise a.err(f"{attr}={nm!r} is a {P.joint_info[nm].type} joint; joint equalities couple hinge "
                        "and slide joints")
        names.append(nm)
    if names[0] == names[1]:
        raise a.err("joint1 and joint2 are the same joint")
    c = a.floats("polycoef", 5, [0.0, 1.0, 0.0, 0.0, 0.0])
    if np.any(c[2:] != 0.0):
        raise NotImplementedError(f"{P.ctx.file(a.el)}: {a.where}: a nonlinear coupling polycoef='{a.raw('polycoef')}' "
                                  "is not supported (only q1 = c0 + c1 q2)")
    j1, j2 = P.joint_info[names[0]], P.joint_info[names[1]]
    # MuJoCo: q1 - ref1 = c0 + c1 (q2 - ref2), and linkdyn's q is MuJoCo's qpos
    _add_gear(P, b, a, names[0], names[1], float(c[1]), float(j1.ref + c[0] - c[1] * j2.ref))


def _add_gear(P, b, a, follower, leader, ratio, offset):
    b.mimic.append({"joint": follower, "mimicked": leader, "multiplier": ratio, "offset": offset})
    if ratio == 0.0:
        raise NotImplementedError(f"{P.ctx.file(a.el)}: {a.where}: a coupling with ratio 0 locks joint "
                                  f"{follower!r} alone, which is not supported")
    try:
        b.add_gear(follower, leader, ratio, offset)
    except (KeyError, ValueError) as exc:
        raise a.err(f"cannot couple {follower!r} to {leader!r}: {exc}") from None


def _fixed_tendons(P, root):
    """name -> [(joint, coef)] of every ``<tendon><fixed>``."""
    out = {}
    for ten in root.findall("tendon"):
        for k, el in enumerate(ten.findall("fixed")):
            name = el.get("name") or f"<fixed> number {k + 1}"
            terms = []
            for j in el.findall("joint"):
                jn = j.get("joint")
                if jn not in P.joint_info:
                    raise P.ctx.error(el, f"<fixed name={name!r}>", f"joint={jn!r} is not a joint of the model")
                try:
                    terms.append((jn, float(j.get("coef", "1"))))
                except ValueError:
                    raise P.ctx.error(el, f"<fixed name={name!r}>", f"coef={j.get('coef')!r} is not a number") from None
            out[name] = terms
    return out


def _tendon_equality(P, b, a, root):
    """A fixed-tendon equality, a linear coupling of its joints -> a gear (two joints) or a linear
    coupling of n joints (module docstring)."""
    tendons = _fixed_tendons(P, root)
    where = f"{P.ctx.file(a.el)}: {a.where}"
    names = [a.raw("tendon1"), a.raw("tendon2")]
    if names[0] is None:
        raise a.err("<tendon> needs a 'tendon1' attribute")
    for nm in names:
        if nm is not None and nm not in tendons:
            spatial = any(t.find(f"spatial[@name='{nm}']") is not None for t in root.findall("tendon"))
            raise NotImplementedError(f"{where}: tendon {nm!r} is " + ("a spatial tendon; only fixed tendons, linear in the "
                                      "joint coordinates, can couple joints" if spatial else "not a fixed tendon of the model"))
    c = a.floats("polycoef", 5, [0.0, 1.0, 0.0, 0.0, 0.0])
    if np.any(c[2:] != 0.0):
        raise NotImplementedError(f"{where}: a nonlinear coupling polycoef='{a.raw('polycoef')}' is not supported "
                                  "(only L1 - L1_0 = c0 + c1 (L2 - L2_0))")
    # sum_i k_i (q_i - ref_i) = c0 with k = coefs of tendon1 minus c1 x coefs of tendon2
    k = {}
    for jn, coef in tendons[names[0]]:
        k[jn] = k.get(jn, 0.0) + coef
    if names[1] is not None:
        for jn, coef in tendons[names[1]]:
            k[jn] = k.get(jn, 0.0) - float(c[1]) * coef
    k = {jn: x for jn, x in k.items() if x != 0.0}
    bad = [jn for jn in k if P.joint_info[jn].type not in ("hinge", "slide")]
    if bad:
        raise NotImplementedError(f"{where}: the equality couples the {P.joint_info[bad[0]].type} joint {bad[0]!r}; "
                                  "a tendon equality couples hinge and slide joints")
    if len(k) < 2:
        raise NotImplementedError(f"{where}: the equality locks joint(s) {sorted(k)} alone, which is not supported")
    if len(k) > 2:
        # sum_i k_i q_i = c0 + sum_i k_i ref_i: a linear coupling, its last joint the dependent one
        offset = float(c[0]) + sum(x * P.joint_info[jn].ref for jn, x in k.items())
        try:
            b.add_coupling(k, offset=offset)
        except (KeyError, ValueError) as exc:
            raise a.err(f"cannot couple joints {list(k)}: {exc}") from None
        return
    (f, kf), (lead, kl) = list(k.items())
    rf, rl = P.joint_info[f].ref, P.joint_info[lead].ref
    # kf (q_f - ref_f) + kl (q_l - ref_l) = c0  ->  q_f = -kl/kf q_l + ref_f + (c0 + kl ref_l) / kf
    _add_gear(P, b, a, f, lead, -kl / kf, rf + (float(c[0]) + kl * rl) / kf)
