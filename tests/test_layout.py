"""The packed layout is written twice: as field tables (Python views of Model) and as the
offsets of the compiled unpackers.  These tests keep the two in step."""
import numpy as np
import pytest
from numba import njit

import linkdyn as ld
from linkdyn._kernels import layout


@njit
def _model_views(mi, mf):
    """Every packed field in table order: the int rows, then the float segments."""
    parent, jtype, qadr, vadr, jnq, jnv, axis, axis2, R_tree, p_tree, inertia, armature, g = layout.unpack_model(mi, mf)
    damping, friction = layout.unpack_joint_terms(mi, mf)
    stiffness, spring_ref = layout.unpack_springs(mi, mf)
    return (parent, jtype, qadr, vadr, jnq, jnv, layout.axis_ids(mi), layout.subtree_ends(mi),
            axis, axis2, R_tree, p_tree, inertia, armature, g, damping, friction, stiffness, spring_ref)


@njit
def _data_views(ws, nb, nv):
    return layout.unpack_data(ws, nb, nv)


def _sprung(seed):
    """random_tree's model with a spring on every joint (distinct values, so that an offset is seen)."""
    m = ld.models.random_tree(7, floating=bool(seed), seed=seed, joint_terms=True)
    b = ld.ModelBuilder.from_model(m)
    rng = np.random.default_rng(seed)
    for spec in b._bodies[1:]:
        spec.stiffness = rng.uniform(1, 2, spec.joint.nv)
        if spec.joint.kind in ld.model.joints.QUAT_OFFSET:
            spec.stiffness[-3:] = spec.stiffness[-1]
        spec.spring_ref = rng.uniform(-1, 1, spec.joint.nq)      # the layout test: any numbers
    return b.build()


@pytest.mark.parametrize("seed", [0, 1])
def test_unpack_model_matches_model_attributes(seed):
    m = _sprung(seed)
    assert m.stiffness.all()
    np.testing.assert_array_equal(np.concatenate([m.jnt_spring_ref[i, :m.jnt_nq[i]] for i in range(m.nbody)]),
                                  m.spring_ref)
    got = _model_views(m._mi, m._mf)
    names = layout.INT_FIELDS + tuple(name for name, _ in layout.FLOAT_FIELDS)
    assert len(got) == len(names)
    for name, view in zip(names, got, strict=True):
        np.testing.assert_array_equal(view, getattr(m, name), err_msg=name)


def test_unpack_data_matches_field_table():
    m = ld.models.random_tree(5, seed=3)
    ws = np.arange(layout.data_size(m.nbody, m.nv), dtype=float)
    got = _data_views(ws, m.nbody, m.nv)
    want = layout.views(ws, layout.DATA_FIELDS, m.nbody, m.nv)
    assert len(got) == len(want)
    for (name, view), g in zip(want.items(), got, strict=True):
        np.testing.assert_array_equal(g, view, err_msg=name)
