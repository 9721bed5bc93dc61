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
    return (parent, jtype, qadr, vadr, jnq, jnv, layout.axis_ids(mi), layout.subtree_ends(mi),
            axis, axis2, R_tree, p_tree, inertia, armature, g, damping, friction)


@njit
def _data_views(ws, nb, nv):
    return layout.unpack_data(ws, nb, nv)


@pytest.mark.parametrize("seed", [0, 1])
def test_unpack_model_matches_model_attributes(seed):
    m = ld.models.random_tree(7, floating=bool(seed), seed=seed)
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
