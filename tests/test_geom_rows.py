"""The rows of geom-geom contacts (linkdyn.contact.geom_rows), proved by what they must be:

* N v is the rate of the collider's signed distance along a motion q(t) = integrate(q, v t)
  (central differences), for sphere-sphere, capsule-capsule, box on a plane, sphere-box,
  capsule-box, sphere-capsule, between two free bodies and between a free body and a chain;
* T v is the tangential part of the relative velocity of the two material points at the contact
  point, computed from the bodies' point Jacobians (linkdyn.point_jacobian);
* drift_n is d/dt (N(q(t)) v), hence (N v being the distance's rate) its second derivative;
  drift_t the relative classical acceleration of the material points, by differences of the
  point velocities;
* a sphere on a plane gives the rows of rows.py's point-plane unit (add_contact + add_plane),
  the tangents up to a rotation about n;
* a geared model's rows are the full tree's times G (reduced coordinates).
"""
import numpy as np
import pytest

import linkdyn as ld
from linkdyn import spatial as sp
from linkdyn.contact._geom_kernels import tangents
from linkdyn.contact.geom_rows import geom_units
from linkdyn.contact.rows import UnitCatalog

INERTIA = ld.Inertia(1.0, [0.0, 0.0, 0.0], np.eye(3) * 0.01)
SIZES = {"sphere": [0.15], "capsule": [0.08, 0.25], "box": [0.2, 0.12, 0.08]}
MARGIN = 0.05


def random_R(rng):
    x = rng.normal(size=4)
    return sp.quat_to_matrix(x / np.linalg.norm(x))


def free_q(R, p):
    return np.concatenate([p, sp.matrix_to_quat(R)])


def pair_model(s1, s2, chain=False):
    """Geom 0: s1 on a free body (or, ``chain``, on the tip of a three-link chain; "plane": a
    tilted plane on the world); geom 1: s2 on a free body."""
    b = ld.ModelBuilder(f"{s1}_{s2}")
    if s1 == "plane":
        b.add_geom("world", "plane", (), placement=(sp.rotx(0.2) @ sp.roty(-0.1), np.array([0.0, 0.0, 0.05])),
                   name="g1")
    elif chain:
        b.add_body("l1", "world", ld.Revolute("z"), placement=np.array([0.0, 0.0, 0.3]), inertia=INERTIA)
        b.add_body("l2", "l1", ld.Revolute("y"), placement=np.array([0.3, 0.0, 0.0]), inertia=INERTIA)
        b.add_body("l3", "l2", ld.Revolute("x"), placement=np.array([0.3, 0.0, 0.0]), inertia=INERTIA)
        b.add_geom("l3", s1, SIZES[s1], placement=(sp.roty(0.4), np.array([0.1, 0.02, 0.0])), name="g1")
    else:
        b.add_body("b1", "world", ld.FreeFlyer(), inertia=INERTIA)
        b.add_geom("b1", s1, SIZES[s1], placement=(sp.rotz(0.3), np.array([0.02, 0.0, 0.01])), name="g1")
    b.add_body("b2", "world", ld.FreeFlyer(), inertia=INERTIA)
    b.add_geom("b2", s2, SIZES[s2], placement=(sp.rotx(-0.2), np.array([0.0, 0.01, -0.02])), name="g2")
    return b.build()


def near_state(model, rng):
    """A random state with geom 2 a random short way from geom 1, and a random velocity."""
    q = ld.random_configuration(model, rng)
    if model.nq > 7 and model.jnt_type[1] != model.jnt_type[-1]:      # the chain: keep it tame
        q[:3] = rng.uniform(-1.0, 1.0, 3)
    g1 = 0
    T1 = np.eye(4)
    b1 = model.geom_body[g1]
    if b1 != 0:
        kin = ld.forward_kinematics(model, q)
        T1[:3, :3], T1[:3, 3] = kin.R[b1], kin.p[b1]
    c1 = T1[:3, :3] @ model.geom_pos[g1] + T1[:3, 3]
    d = rng.normal(size=3)
    d /= np.linalg.norm(d)
    if model.geom_type[g1] == 0:                         # a plane: above it
        d = model.geom_R[g1][:, 2]
    reach = np.linalg.norm(model.geom_size[g1]) * (model.geom_type[g1] != 0) + np.linalg.norm(model.geom_size[1])
    R2 = random_R(rng)
    p2 = c1 + d * rng.uniform(0.3, 0.9) * reach - R2 @ model.geom_pos[1]
    q[-7:] = free_q(R2 @ model.geom_R[1].T, p2)
    return q, rng.normal(size=model.nv)


def contacts_at(model, q):
    c = ld.contact.collide(model, q, MARGIN)
    return c


def same_set(a, b):
    return len(a) == len(b) and (a.geom1 == b.geom1).all() and (a.geom2 == b.geom2).all()


def local_point(model, q, body, x):
    """The coordinates of world point x in body's frame."""
    kin = ld.forward_kinematics(model, q)
    return kin.R[body].T @ (x - kin.p[body])


def point_velocity_jac(model, q, body, xl):
    if body == 0:
        return np.zeros((3, model.nv))
    return ld.point_jacobian(model, q, model.body_names[body], xl)


def exact_contacts(s1, s2, c):
    """The contacts whose distance is the distance of closest (or deepest) points, a smooth
    function of q whose rate N v must be.  Not so: the points the box-box manifold clips to a
    face's edges and capsule-box's second point (they slide over the geom as it moves: their
    rows are those of the material points), and capsule-box's deepest point while the segment
    crosses the box (the depth is then a min-max with kinks, dist < -radius)."""
    exact = np.ones(len(c), bool)
    if s1 == "box" and s2 == "box":
        # box-box: the edge-edge contact while the boxes overlap (one contact); apart, the
        # collider's dist is the separating axis' gap, midway between clamped edge points
        exact[:] = len(c) == 1 and c.dist[0] < 0.0
    if {s1, s2} == {"capsule", "box"}:
        exact[1:] = False
        exact[0] = c.dist[0] > -SIZES["capsule"][0]
    return exact


PAIRS = [("sphere", "sphere", False), ("capsule", "capsule", False), ("plane", "box", False),
         ("sphere", "box", False), ("capsule", "box", False), ("sphere", "capsule", False),
         ("plane", "capsule", False), ("box", "box", False),
         ("capsule", "sphere", True), ("box", "capsule", True), ("capsule", "capsule", True)]


@pytest.mark.parametrize("s1,s2,chain", PAIRS, ids=[f"{a}-{b}{'-chain' if c else ''}" for a, b, c in PAIRS])
def test_rows_are_rates_of_the_distance(s1, s2, chain):
    model = pair_model(s1, s2, chain)
    rng = np.random.default_rng(abs(hash((s1, s2, chain))) % 2**32)
    checked = drifts = 0
    h = 1e-6
    for _ in range(80):
        q, v = near_state(model, rng)
        c0 = contacts_at(model, q)
        if not len(c0):
            continue
        cp, cm = (contacts_at(model, ld.integrate(model, q, v, t)) for t in (h, -h))
        if not (same_set(c0, cp) and same_set(c0, cm)):
            continue                                    # a contact made or lost within h
        u = geom_units(model, q, v, contacts=c0, with_drift=True)
        assert len(u) == len(c0) and (u.gap == c0.dist).all()
        # N v = d dist / dt (exact at closest points; box-box manifold points are material points)
        rate = (cp.dist - cm.dist) / (2 * h)
        exact = exact_contacts(s1, s2, c0)
        np.testing.assert_allclose((u.N @ v)[exact], rate[exact], rtol=1e-6, atol=1e-7)
        # T rows: tangential relative velocity of the material points at the contact point
        b1, b2 = model.geom_body[c0.geom1], model.geom_body[c0.geom2]
        for k in range(len(c0)):
            x = c0.pos[k]
            Jr = point_velocity_jac(model, q, b2[k], local_point(model, q, b2[k], x)) \
                - point_velocity_jac(model, q, b1[k], local_point(model, q, b1[k], x))
            F = u.frame[k]
            np.testing.assert_allclose(F.T @ F, np.eye(3), atol=1e-12)
            assert np.linalg.det(F) > 0.999 and np.allclose(F[:, 2], c0.normal[k], atol=1e-14)
            np.testing.assert_allclose(u.T[k], F[:, :2].T @ Jr, atol=1e-12)
            np.testing.assert_allclose(u.N[k], F[:, 2] @ Jr, atol=1e-12)
            # drift_t: the relative classical acceleration of these material points (q'' = 0)
            x1, x2 = local_point(model, q, b1[k], x), local_point(model, q, b2[k], x)

            def rel_vel(t, x1=x1, x2=x2, k=k):
                qt = ld.integrate(model, q, v, t)
                return (point_velocity_jac(model, qt, b2[k], x2) - point_velocity_jac(model, qt, b1[k], x1)) @ v
            acc = (rel_vel(1e-5) - rel_vel(-1e-5)) / 2e-5
            np.testing.assert_allclose(u.drift_t[k], F[:, :2].T @ acc, rtol=1e-6, atol=1e-6)
        # drift_n = d/dt (N(q(t)) v), so d^2 dist / dt^2 where N v is the rate of dist (above); a
        # small step, as the nearest feature may change close by (a sphere passing from over a
        # box's face to over its edge: the second derivative jumps there)
        H = 1e-6
        up, um = (geom_units(model, ld.integrate(model, q, v, t), v, contacts=c)
                  for t, c in ((h, cp), (-h, cm)))
        dNv = (up.N @ v - um.N @ v) / (2 * H)
        np.testing.assert_allclose(u.drift_n[exact], dNv[exact], rtol=1e-5, atol=1e-5)
        drifts += exact.sum()
        checked += 1
        if checked >= 6 and drifts >= 3:
            break
    assert checked >= 3 and drifts >= 2, f"only {checked} states with contacts, {drifts} drifts checked"


def test_sphere_on_plane_as_rows_point_plane():
    """add_contact + add_plane (rows.py) and add_geom sphere + plane: the same unit."""
    R, p = sp.rotx(0.3) @ sp.roty(-0.2), np.array([0.1, -0.2, 0.05])
    r = 0.1
    models = []
    for geoms in (False, True):
        b = ld.ModelBuilder("ball")
        b.add_body("ball", "world", ld.FreeFlyer(), inertia=INERTIA)
        if geoms:
            b.add_geom("world", "plane", (), placement=(R, p), name="ground", friction=0.8)
            b.add_geom("ball", "sphere", [r], placement=np.array([0.03, 0.0, 0.02]), friction=0.8)
        else:
            b.add_plane("ground", "world", placement=(R, p))
            b.add_contact("ball", position=(0.03, 0.0, 0.02), radius=r, friction=0.8)
        models.append(b.build())
    rng = np.random.default_rng(7)
    for height in (0.0, -0.02, 0.03):
        Rb = random_R(rng)
        centre = p + R[:, 2] * (r + height) + R[:, :2] @ rng.normal(size=2)
        q = free_q(Rb, centre - Rb @ np.array([0.03, 0.0, 0.02]))
        v = rng.normal(size=6)
        a = UnitCatalog(models[0], limits=False).units(q, v, with_drift=True)
        g = geom_units(models[1], q, v, margin=MARGIN, with_drift=True)
        assert len(a) == len(g) == 1
        np.testing.assert_allclose(g.gap, a.gap, atol=1e-14)
        np.testing.assert_allclose(g.N, a.N, atol=1e-13)
        np.testing.assert_allclose(g.drift_n, a.drift_n, atol=1e-12)
        np.testing.assert_allclose(g.frame[0][:, 2], a.frame[0][:, 2], atol=1e-15)
        np.testing.assert_allclose(g.mu, a.mu) and np.testing.assert_allclose(g.e, a.e)
        # rows.py measures the tangents at the sphere's lowest point, geom_rows midway between
        # the surfaces: the same point when they touch (height 0)
        Q = a.frame[0][:, :2].T @ g.frame[0][:, :2]          # the tangent frames' rotation about n
        np.testing.assert_allclose(Q.T @ Q, np.eye(2), atol=1e-14)
        if height == 0.0:
            np.testing.assert_allclose(Q @ g.T[0], a.T[0], atol=1e-13)
            np.testing.assert_allclose(Q @ g.drift_t[0], a.drift_t[0], atol=1e-12)
            np.testing.assert_allclose(g.point, a.point, atol=1e-14)


def test_geared_rows_are_reduced():
    """A gear (add_gear): the rows are the full tree's times G, and still the distance's rate."""
    b = ld.ModelBuilder("geared")
    b.add_body("l1", "world", ld.Revolute("z"), placement=np.array([0.0, 0.0, 0.3]), inertia=INERTIA,
               joint_name="j1")
    b.add_body("l2", "l1", ld.Revolute("y"), placement=np.array([0.3, 0.0, 0.0]), inertia=INERTIA, joint_name="j2")
    b.add_body("l3", "l2", ld.Revolute("y"), placement=np.array([0.3, 0.0, 0.0]), inertia=INERTIA, joint_name="j3")
    b.add_gear("j3", "j2", -1.7, 0.2)
    b.add_geom("l3", "capsule", SIZES["capsule"], placement=(sp.roty(0.4), np.array([0.1, 0.0, 0.0])))
    b.add_body("ball", "world", ld.FreeFlyer(), inertia=INERTIA)
    b.add_geom("ball", "box", SIZES["box"])
    model = b.build()
    full = model.full_model
    G = model.coupling_matrix()
    assert model.nv == full.nv - 1
    rng = np.random.default_rng(3)
    checked = rated = 0
    for _ in range(30):
        q, v = near_state(model, rng)
        c = ld.contact.collide(model, q, MARGIN)
        if not len(c):
            continue
        u = geom_units(model, q, v, contacts=c, with_drift=True)
        qf, vf = model.expand(q, v)
        uf = geom_units(full, qf, vf, margin=MARGIN, with_drift=True)
        np.testing.assert_allclose(u.N, uf.N @ G, atol=1e-12)
        np.testing.assert_allclose(u.T, uf.T @ G, atol=1e-12)
        np.testing.assert_allclose(u.drift_n, uf.drift_n, atol=1e-10)
        np.testing.assert_allclose(u.drift_t, uf.drift_t, atol=1e-10)
        h = 1e-6
        cp, cm = (ld.contact.collide(model, ld.integrate(model, q, v, t), MARGIN) for t in (h, -h))
        if same_set(c, cp) and same_set(c, cm):
            ex = exact_contacts("capsule", "box", c)
            np.testing.assert_allclose((u.N @ v)[ex], ((cp.dist - cm.dist) / (2 * h))[ex], rtol=1e-6, atol=1e-7)
            rated += ex.sum()
        checked += 1
    assert checked >= 3 and rated >= 2


def test_tangents_continuous_and_right_handed():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = rng.normal(size=3)
        n /= np.linalg.norm(n)
        t1, t2 = (np.array(t) for t in tangents(n))
        F = np.column_stack([t1, t2, n])
        np.testing.assert_allclose(F.T @ F, np.eye(3), atol=1e-14)
        assert np.linalg.det(F) > 0
        if abs(n[2]) > 1e-3:                              # continuous away from n_z = 0
            m = n + 1e-7 * rng.normal(size=3)
            m /= np.linalg.norm(m)
            s1, s2 = (np.array(t) for t in tangents(m))
            assert np.linalg.norm(s1 - t1) + np.linalg.norm(s2 - t2) < 1e-4
    for n, t in (((0.0, 0.0, 1.0), (1.0, 0.0, 0.0)), ((0.0, 0.0, -1.0), (1.0, 0.0, 0.0))):
        assert np.allclose(tangents(np.array(n))[0], t)


def test_units_keys_and_validation():
    model = pair_model("box", "box")
    rng = np.random.default_rng(1)
    for _ in range(50):
        q, v = near_state(model, rng)
        c = ld.contact.collide(model, q, MARGIN)
        if len(c) > 1:
            break
    u = geom_units(model, q, v, contacts=c)
    assert u.key == [("g", 0, 1, j) for j in range(len(c))] and u.name[0] == "g1/g2"
    assert (u.drift_n == 0).all() and (u.mu == c.friction).all()
    s = u.subset([len(c) - 1])
    assert s.key == [u.key[-1]] and (s.N == u.N[-1:]).all()
    with pytest.raises(ValueError, match="needs the velocity"):
        geom_units(model, q, with_drift=True)
    with pytest.raises(ValueError, match="one state"):
        geom_units(model, np.stack([q, q]))
    with pytest.raises(ValueError, match="another model"):
        geom_units(pair_model("box", "box"), q, contacts=c)
    with pytest.raises(TypeError, match="Contacts"):
        geom_units(model, q, contacts=[1])
    with pytest.raises(ValueError, match="q"):
        geom_units(model, np.full(model.nq, np.nan))
    empty = geom_units(model, ld.integrate(model, q, np.r_[np.zeros(6), 0, 0, 50.0, 0, 0, 0]))
    assert len(empty) == 0 and empty.N.shape == (0, model.nv)
