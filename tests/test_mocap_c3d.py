"""C3D marker files through ezc3d (linkdyn.mocap.read_c3d): files written here with ezc3d are
read back in metres, in the Z-up world, with unseen markers as NaN and the analog channels."""
import numpy as np
import pytest

ezc3d = pytest.importorskip("ezc3d")

import linkdyn as ld  # noqa: E402


def write(path, X, names, rate=100.0, unit="mm", residual=None, analogs=None, analog_rate=1000.0):
    """X (T, M, 3) in ``unit``; residual (T, M) (negative: not seen); analogs (N, channels)."""
    c = ezc3d.c3d()
    c["parameters"]["POINT"]["RATE"]["value"] = [rate]
    c["parameters"]["POINT"]["LABELS"]["value"] = tuple(names)
    c["parameters"]["POINT"]["UNITS"]["value"] = [unit]
    T, M, _ = X.shape
    pts = np.ones((4, M, T))
    pts[:3] = np.transpose(X, (2, 1, 0))
    c["data"]["points"] = pts
    if residual is not None:
        c["data"]["meta_points"] = {"residuals": residual.T[None].astype(float), "camera_masks": np.zeros((7, M, T), bool)}
    if analogs is not None:
        c["parameters"]["ANALOG"]["LABELS"]["value"] = tuple(f"ch{k}" for k in range(analogs.shape[1]))
        c["parameters"]["ANALOG"]["RATE"]["value"] = [analog_rate]
        c["data"]["analogs"] = analogs.T[None]
    c.write(str(path))


def test_markers_come_back_in_metres_z_up(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1000, 1000, (12, 3, 3))                    # mm
    res = np.zeros((12, 3))
    res[4, 1] = -1.0                                              # marker 1 not seen in frame 4
    A = rng.normal(size=(120, 2))
    write(tmp_path / "a.c3d", X, ["LASI", "RASI", "LHEE"], residual=res, analogs=A)
    m = ld.mocap.read_c3d(tmp_path / "a.c3d")
    assert m.names == ["LASI", "RASI", "LHEE"] and m.rate == 100.0 and m.units == "mm"
    np.testing.assert_allclose(m.t, np.arange(12) / 100.0)
    seen = np.ones((12, 3), bool)
    seen[4, 1] = False
    assert np.isnan(m.positions[~seen]).all() and np.isfinite(m.positions[seen]).all()
    np.testing.assert_allclose(m.positions[seen], 1e-3 * X[seen], rtol=1e-6, atol=1e-7)   # float32 in the file
    np.testing.assert_allclose(m.marker("LHEE"), 1e-3 * X[:, 2], rtol=1e-6, atol=1e-7)
    assert m.analog_names == ["ch0", "ch1"] and m.analog_rate == 1000.0
    np.testing.assert_allclose(m.analogs, A, rtol=1e-6, atol=1e-6)
    # a Y-up file: turned as BVH files are (file y -> world z)
    y = ld.mocap.read_c3d(tmp_path / "a.c3d", up="y")
    np.testing.assert_allclose(y.positions[seen], (m.positions @ ld.mocap.Y_UP_TO_Z_UP.T)[seen])
    with pytest.raises(KeyError, match="no marker 'RHEE'"):
        m.marker("RHEE")


def test_units_and_bad_files(tmp_path):
    X = np.full((3, 1, 3), 2.5)
    write(tmp_path / "cm.c3d", X, ["M"], unit="cm")
    assert ld.mocap.read_c3d(tmp_path / "cm.c3d").positions == pytest.approx(0.025)
    write(tmp_path / "ft.c3d", X, ["M"], unit="ft")
    with pytest.raises(ld.mocap.MocapError, match="unknown length unit 'ft'"):
        ld.mocap.read_c3d(tmp_path / "ft.c3d")
    (tmp_path / "junk.c3d").write_bytes(b"HIERARCHY\nROOT Hips\n")
    with pytest.raises(ld.mocap.MocapError, match="junk.c3d: not a readable C3D file"):
        ld.mocap.read_c3d(tmp_path / "junk.c3d")
    with pytest.raises(ValueError, match="up: expected"):
        ld.mocap.read_c3d(tmp_path / "cm.c3d", up="x")
