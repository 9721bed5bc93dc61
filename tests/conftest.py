"""Shared fixtures and helpers of the dynamics / kinematics / configuration / validation tests.

* ``TREES`` / the ``tree`` fixture: random trees from ``linkdyn.models.random_tree`` (every
  joint kind alone in a 4-body chain, mixed fixed-base and floating-base trees of 1 to 25
  bodies, chains and branchy ones);
* :func:`random_state`: a random (q, v, a) away from the ZYX gimbal lock;
* :func:`fd` / :func:`fd_t`: central finite differences along ``linkdyn.integrate`` (so
  quaternions stay on the manifold) or along any curve of t;
* :func:`make_twin`: a random tree built twice, with ``linkdyn.ModelBuilder`` and with
  Pinocchio (fixed joints merged by Pinocchio, not by linkdyn), an independent oracle;
* :func:`world_momentum`, :func:`twists_from_pose_derivative`: references computed by hand.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import linkdyn as ld
from linkdyn.model import joints as J

try:
    import pinocchio as pin
except ImportError:  # pragma: no cover
    pin = None

needs_pin = pytest.mark.skipif(pin is None, reason="pinocchio not installed")

# --------------------------------------------------------------------------------------
# the random trees
KINDS = ("revolute", "prismatic", "cylindrical", "universal", "spherical", "spherical_zyx", "planar", "free")

TREES = {}
for _k in KINDS:                                   # each kind alone, in a 4-body chain
    TREES[f"chain4-{_k}"] = dict(nbodies=4, kinds=(_k,), floating=False, seed=11, branching=0.0)
TREES.update({
    "fixed-only-floating": dict(nbodies=4, kinds=("fixed",), floating=True, seed=5, branching=0.0),
    "single-body": dict(nbodies=1, floating=False, seed=2),
    "mixed-fixed-s0": dict(nbodies=7, floating=False, seed=0),
    "mixed-fixed-chain-s1": dict(nbodies=9, floating=False, seed=1, branching=0.0),
    "mixed-floating-s3": dict(nbodies=8, floating=True, seed=3),
    "mixed-floating-s4": dict(nbodies=12, floating=True, seed=4, branching=0.7),
    "branchy-25": dict(nbodies=25, floating=True, seed=7, branching=0.8),
})
FLOATING_TREES = [k for k, kw in TREES.items() if kw.get("floating")]


@functools.lru_cache(maxsize=None)
def build_tree(name: str, gravity=(0.0, 0.0, -9.81)):
    return ld.models.random_tree(gravity=gravity, **TREES[name])


@functools.lru_cache(maxsize=None)
def robot(name: str):
    """A built-in arm ("puma560", "stanford") or an example-robot-data robot by name."""
    if name == "puma560":
        return ld.models.puma560()
    if name == "stanford":
        return ld.models.stanford_arm()
    return ld.models.example_robot(name)


REAL = ["puma560", "stanford", "panda", "talos"]
ALL_MODELS = [("tree", n) for n in TREES] + [("robot", n) for n in REAL]


def get_model(kind: str, name: str):
    """A model of ALL_MODELS: ("tree", TREES name) or ("robot", REAL name)."""
    return build_tree(name) if kind == "tree" else robot(name)


@pytest.fixture(params=list(TREES), scope="session")
def tree(request):
    """Every random tree of TREES (parametrized by name)."""
    return build_tree(request.param)


# --------------------------------------------------------------------------------------
# states and finite differences
def random_q(model, rng):
    """random_configuration, with the middle ZYX angle kept in (-1.2, 1.2) (no gimbal lock)."""
    q = ld.random_configuration(model, rng)
    for i in range(1, model.nbody):
        if model.jnt_type[i] == J.SPHERICAL_ZYX:
            q[model.jnt_qadr[i] + 1] = rng.uniform(-1.2, 1.2)
    return q


def random_state(model, rng):
    """(q, v, a): a random configuration, standard normal velocity and acceleration."""
    q = random_q(model, rng)
    return q, rng.standard_normal(model.nv), rng.standard_normal(model.nv)


FD_STEP = 1e-6


def fd_t(f, h=FD_STEP):
    """d/dt f(t) at t = 0 by central differences (f returns a number or an array)."""
    return (np.asarray(f(h), dtype=float) - np.asarray(f(-h), dtype=float)) / (2 * h)


def fd(f, model, q, v, h=FD_STEP):
    """d/dt f(integrate(q, v, t)) at t = 0: the derivative of f along the manifold."""
    return fd_t(lambda t: f(ld.integrate(model, q, v, t)), h)


def assert_close(got, want, tol, what=""):
    """max |got - want| <= tol * max(1, max |want|)."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    err = np.max(np.abs(got - want)) if got.size else 0.0
    scale = max(1.0, np.max(np.abs(want)) if want.size else 0.0)
    assert err <= tol * scale, f"{what}: max error {err:.3e} > {tol:.1e} * {scale:.3g}"


def skew(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def unskew(S):
    """The vector of the skew-symmetric part of S."""
    return 0.5 * np.array([S[2, 1] - S[1, 2], S[0, 2] - S[2, 0], S[1, 0] - S[0, 1]])


def twists_from_pose_derivative(T, Tdot):
    """(local, world, local_world_aligned) spatial velocities [v; w] of a moving frame from
    its 4x4 pose T = (R, p) and the pose derivative Tdot = (R', p')."""
    R, p, Rd, pd = T[:3, :3], T[:3, 3], Tdot[:3, :3], Tdot[:3, 3]
    w_world = unskew(Rd @ R.T)
    local = np.concatenate([R.T @ pd, unskew(R.T @ Rd)])
    world = np.concatenate([pd - np.cross(w_world, p), w_world])
    lwa = np.concatenate([pd, w_world])
    return {"local": local, "world": world, "local_world_aligned": lwa}


def world_momentum(model, q, v):
    """Total spatial momentum [linear; angular about the world origin] in world coordinates,
    from the body velocities of forward_kinematics and model.inertia (h = sum X_0i^* I_i v_i)."""
    kin = ld.forward_kinematics(model, q, v)
    h = np.zeros(6)
    for i in range(1, model.nbody):
        f = model.inertia[i] @ kin.v[i]
        R, p = kin.R[i], kin.p[i]
        lin = R @ f[:3]
        h[:3] += lin
        h[3:] += R @ f[3:] + np.cross(p, lin)
    return h


# --------------------------------------------------------------------------------------
# twin trees: linkdyn and Pinocchio built from the same random description
def _unit(rng):
    a = rng.standard_normal(3)
    return a / np.linalg.norm(a)


class Twin:
    """A random tree built with linkdyn's ModelBuilder (``ld``) and with Pinocchio (``pin``).

    linkdyn receives the bodies in insertion order (a later body may hang from any earlier
    one), Pinocchio depth first, and Pinocchio merges fixed bodies itself (appendBodyToJoint),
    so linkdyn's depth-first reordering and fixed-joint merging are checked too.
    ``q_pin(q)``, ``v_pin(v)`` map linkdyn vectors to Pinocchio's; ``perm`` is the index array
    with ``v_pin = v[perm]``.  ``frames`` maps every linkdyn frame name to its Pinocchio frame id.
    """

    def __init__(self, ld_model, pin_model, frames):
        self.ld, self.pin, self.frames = ld_model, pin_model, frames
        self.data = pin_model.createData()
        perm = np.empty(ld_model.nv, dtype=int)
        self._qmap = []
        for name in ld_model.joint_names:
            jid = pin_model.getJointId(name)
            jm = pin_model.joints[jid]
            sl_v = ld_model.v_slice(name)
            perm[jm.idx_v:jm.idx_v + jm.nv] = np.arange(sl_v.start, sl_v.stop)
            kind = ld_model.jnt_type[ld_model.joint_id(name)]
            self._qmap.append((ld_model.q_slice(name), jm.idx_q, jm.nq, kind))
        self.perm = perm

    def q_pin(self, q):
        out = np.zeros(self.pin.nq)
        for sl, iq, nq, kind in self._qmap:
            if kind == J.PLANAR:
                x, y, th = q[sl]
                out[iq:iq + 4] = [x, y, np.cos(th), np.sin(th)]
            else:
                out[iq:iq + nq] = q[sl]
        return out

    def v_pin(self, v):
        return np.asarray(v)[self.perm]

    def v_ld(self, v_pin):
        out = np.empty(self.ld.nv)
        out[self.perm] = v_pin
        return out

    def M_ld(self, M_pin):
        out = np.empty_like(M_pin)
        out[np.ix_(self.perm, self.perm)] = M_pin
        return out


def _pin_joint(kind, a1, a2):
    if kind == "revolute":
        return pin.JointModelRevoluteUnaligned(a1)
    if kind == "prismatic":
        return pin.JointModelPrismaticUnaligned(a1)
    if kind in ("cylindrical", "universal"):
        jc = pin.JointModelComposite()
        if kind == "cylindrical":      # q = [d, theta] along / about the same axis
            jc.addJoint(pin.JointModelPrismaticUnaligned(a1))
            jc.addJoint(pin.JointModelRevoluteUnaligned(a1))
        else:                          # R = R(a1, q1) R(a2, q2)
            jc.addJoint(pin.JointModelRevoluteUnaligned(a1))
            jc.addJoint(pin.JointModelRevoluteUnaligned(a2))
        return jc
    return {"spherical": pin.JointModelSpherical, "spherical_zyx": pin.JointModelSphericalZYX,
            "planar": pin.JointModelPlanar, "free": pin.JointModelFreeFlyer}[kind]()


def _ld_joint(kind, a1, a2):
    return {"revolute": lambda: ld.Revolute(a1), "prismatic": lambda: ld.Prismatic(a1),
            "cylindrical": lambda: ld.Cylindrical(a1), "universal": lambda: ld.Universal(a1, a2),
            "spherical": ld.Spherical, "spherical_zyx": ld.SphericalZYX, "planar": ld.Planar,
            "fixed": ld.Fixed, "free": ld.FreeFlyer}[kind]()


TWIN_KINDS = KINDS + ("fixed",)


@functools.lru_cache(maxsize=None)
def make_twin(seed, nbodies=8, kinds=TWIN_KINDS, floating=False, branching=0.6, armature=True,
              massless_every=0, gravity=(0.0, 0.0, -9.81)) -> Twin:
    """A random tree of ``nbodies`` with joints drawn from ``kinds`` built for linkdyn and
    Pinocchio; ``massless_every=k`` makes every k-th body massless (its subtree still has mass)."""
    rng = np.random.default_rng(seed)
    specs, names, after_massless = [], ["world"], False
    for k in range(nbodies):
        massless = bool(massless_every) and k % massless_every == massless_every - 1 and k < nbodies - 1 \
            and not (floating and k == 0)
        kind = "free" if (floating and k == 0) else str(kinds[rng.integers(len(kinds))])
        parent = names[-1] if rng.random() > branching else names[rng.integers(len(names))]
        if floating and k > 0 and parent == "world":
            parent = names[1]
        if massless:                   # a massless body moves on 1 dof and carries the next body
            kind = ("revolute", "prismatic")[rng.integers(2)]
        if after_massless:
            kind, parent = ("revolute", "prismatic")[rng.integers(2)], names[-1]
        after_massless = massless
        a1 = _unit(rng)
        a2 = np.cross(a1, _unit(rng))
        a2 /= np.linalg.norm(a2)
        R, p = Rotation.random(random_state=rng).as_matrix(), 0.3 * rng.standard_normal(3)
        A = rng.standard_normal((3, 3))
        P = A @ A.T + 0.05 * np.eye(3)      # second moment; I = tr(P) 1 - P is a rigid body's inertia
        mass, com, Ic = rng.uniform(0.5, 2.0), 0.2 * rng.standard_normal(3), np.trace(P) * np.eye(3) - P
        if massless:
            mass, com, Ic = 0.0, np.zeros(3), np.zeros((3, 3))
        joint = _ld_joint(kind, a1, a2)
        arm = rng.uniform(0.0, 0.2, joint.nv) if (armature and joint.nv) else None
        specs.append(dict(name=f"b{k}", jname=f"j{k}", parent=parent, kind=kind, a1=a1, a2=a2, R=R, p=p,
                          mass=mass, com=com, Ic=Ic, joint=joint, arm=arm))
        names.append(f"b{k}")
    host = names[1 + rng.integers(nbodies)]          # a user frame on a random body
    Rf, pf = Rotation.random(random_state=rng).as_matrix(), 0.2 * rng.standard_normal(3)

    # linkdyn: bodies in insertion order (not depth first when the tree branches)
    b = ld.ModelBuilder(f"twin{seed}", gravity=gravity)
    for sp in specs:
        b.add_body(sp["name"], sp["parent"], sp["joint"], placement=(sp["R"], sp["p"]),
                   inertia=ld.Inertia(sp["mass"], sp["com"], sp["Ic"]), joint_name=sp["jname"], armature=sp["arm"])
    b.add_frame("tip", host, placement=(Rf, pf))
    model = b.build()

    # Pinocchio: bodies depth first (its algorithms assume contiguous subtrees in v)
    pm = pin.Model()
    pm.gravity.linear = np.asarray(gravity, dtype=float)
    carrier = {"world": (0, pin.SE3.Identity())}   # body -> (pin joint, body frame in that joint frame)
    arm_pin = {}
    by_parent = {}
    for sp in specs:
        by_parent.setdefault(sp["parent"], []).append(sp)
    stack = list(reversed(by_parent.get("world", [])))
    while stack:
        sp = stack.pop()
        pj, pM = carrier[sp["parent"]]
        Mj = pM * pin.SE3(sp["R"], sp["p"])
        inertia = pin.Inertia(sp["mass"], sp["com"], sp["Ic"])
        if sp["kind"] == "fixed":
            pm.appendBodyToJoint(pj, inertia, Mj)
            carrier[sp["name"]] = (pj, Mj)
        else:
            jid = pm.addJoint(pj, _pin_joint(sp["kind"], sp["a1"], sp["a2"]), Mj, sp["jname"])
            pm.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
            carrier[sp["name"]] = (jid, pin.SE3.Identity())
            if sp["arm"] is not None:
                arm_pin[jid] = sp["arm"]
        stack.extend(reversed(by_parent.get(sp["name"], [])))
    carrier["tip"] = (carrier[host][0], carrier[host][1] * pin.SE3(Rf, pf))
    armature_vec = np.zeros(pm.nv)
    for jid, arm in arm_pin.items():
        armature_vec[pm.joints[jid].idx_v:pm.joints[jid].idx_v + pm.joints[jid].nv] = arm
    pm.armature = armature_vec
    frames = {}
    for fname, (jid, M) in carrier.items():
        frames[fname] = pm.addFrame(pin.Frame("f_" + fname, jid, M, pin.FrameType.OP_FRAME))
    return Twin(model, pm, frames)


TWINS = {
    "twin-fixed-s0": dict(seed=0, nbodies=8),
    "twin-fixed-s1": dict(seed=1, nbodies=12, branching=0.3),
    "twin-floating-s2": dict(seed=2, nbodies=10, floating=True),
    "twin-floating-s3": dict(seed=3, nbodies=16, floating=True, branching=0.8),
    "twin-massless-s4": dict(seed=4, nbodies=10, massless_every=3),
    "twin-nofixed-s5": dict(seed=5, nbodies=6, kinds=KINDS, armature=False),
}


@pytest.fixture(params=list(TWINS), scope="session")
def twin(request):
    if pin is None:
        pytest.skip("pinocchio not installed")
    return make_twin(**TWINS[request.param])


def pytest_collection_modifyitems(session, config, items):
    """Run the tests that start fresh Python processes (the documentation's example scripts and
    README blocks, the CLI demos) last: by then the workers have filled the kernel cache, so the
    child processes load compiled kernels instead of compiling them a second time."""
    late = ("test_docs.py", "test_cli.py")
    items.sort(key=lambda item: item.path.name in late)


@pytest.fixture(scope="session")
def swing_demo_run():
    """The swing of ``linkdyn demo swing`` (Nakamura and Yamane 2000, Fig. 15), run once for the
    session over the demo's 4 s: (simulation, its first model, its first q, the recording)."""
    from linkdyn.models import scenarios as sc
    sim = sc.swing_simulation()
    model0, q0 = sim.model, sim.q.copy()
    rec = sim.run(until=4.0, progress=False)
    return sim, model0, q0, rec
