"""Mesh files for mass properties without any optional package (linkdyn.model.io._mesh_inertia):
STL (binary and ASCII), OBJ and MuJoCo's binary MSH, each read back exactly and compiled into
the body inertia MuJoCo gives; corrupt files, unknown formats and missing optional readers are
errors (or, for a reader that is not installed, a warning) that name the file and what is wrong."""
import struct

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import linkdyn as ld
from linkdyn.model.io import _mesh_inertia as mi
from linkdyn.model.io.mjcf import MJCFError, MJCFWarning, load_mjcf


# --- writers (the formats as their documentation defines them) --------------------------------
def write_stl(path, V, F):
    """Binary STL: 80-byte header, uint32 count, per triangle a normal, 3 vertices (float32) and a uint16."""
    out = bytearray(b"linkdyn test".ljust(80, b" ") + struct.pack("<I", len(F)))
    for f in F:
        out += struct.pack("<3f", 0.0, 0.0, 0.0) + struct.pack("<9f", *np.asarray(V)[f].ravel()) + b"\0\0"
    path.write_bytes(bytes(out))


def write_stl_ascii(path, V, F):
    lines = ["solid linkdyn"]
    for f in F:
        lines += ["  facet normal 0 0 0", "    outer loop"]
        lines += [f"      vertex {float(x)!r} {float(y)!r} {float(z)!r}" for x, y, z in np.asarray(V)[f]]
        lines += ["    endloop", "  endfacet"]
    path.write_text("\n".join(lines + ["endsolid linkdyn", ""]))


def write_obj(path, V, F, plain=False):
    """OBJ with 1-based faces, in 'i/t/n', 'i//n', 'i/t' and negative forms (``plain``: 'f i j k' only)."""
    lines = ["# linkdyn test", "o prism"] + [f"v {float(x)!r} {float(y)!r} {float(z)!r}" for x, y, z in V]
    if plain:
        path.write_text("\n".join(lines + [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in F]) + "\n")
        return
    lines += ["vn 0 0 1", "vt 0 0"]
    n = len(V)
    for k, (a, b, c) in enumerate(F):
        if k % 2:
            lines.append(f"f {a - n} {b - n} {c - n}")                  # negative: from the end
        else:
            lines.append(f"f {a + 1}/1/1 {b + 1}//1 {c + 1}/1")
    path.write_text("\n".join(lines) + "\n")


def write_msh(path, V, F, normals=True, texcoords=True):
    """MuJoCo's MSH: int32 nvertex, nnormal, ntexcoord, nface; float32 positions, normals,
    texture coordinates; int32 faces."""
    V = np.asarray(V, dtype="<f4")
    N = np.zeros_like(V) if normals else np.zeros((0, 3), dtype="<f4")
    T = np.zeros((len(V), 2), dtype="<f4") if texcoords else np.zeros((0, 2), dtype="<f4")
    F = np.asarray(F, dtype="<i4").reshape(-1, 3)
    head = np.array([len(V), len(N), len(T), len(F)], dtype="<i4")
    path.write_bytes(head.tobytes() + V.tobytes() + N.tobytes() + T.tobytes() + F.tobytes())


def l_prism():
    """A non-convex solid (an L-shaped prism), outward-oriented triangles, vertices exact in float32."""
    P = np.array([(0, 0), (0.5, 0), (0.5, 0.125), (0.125, 0.125), (0.125, 0.375), (0, 0.375)])
    n = len(P)
    V = np.array([[x, y, 0.0] for x, y in P] + [[x, y, 0.125] for x, y in P]) + [0.03125, -0.0625, 0.015625]
    F = []
    for a, b, c in [(0, 1, 2), (0, 2, 3), (0, 3, 4), (0, 4, 5)]:
        F += [(a, c, b), (a + n, b + n, c + n)]
    for i in range(n):
        j = (i + 1) % n
        F += [(i, j, j + n), (i, j + n, i + n)]
    return V, np.array(F)


WRITERS = {"stl": write_stl, "stl_ascii": write_stl_ascii, "obj": write_obj, "msh": write_msh}


@pytest.fixture(scope="module")
def mj():
    return pytest.importorskip("mujoco")


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_each_format_reads_back_the_triangles(tmp_path, fmt):
    V, F = l_prism()
    path = tmp_path / f"m.{fmt.split('_')[0]}"
    WRITERS[fmt](path, V, F)
    V2, F2 = mi.load_mesh(path)
    # the same triangles, vertex for vertex (STL repeats vertices per triangle)
    np.testing.assert_array_equal(V2[F2], V[F])
    assert V2.dtype == np.float64 and F2.dtype == np.int64


def test_msh_without_normals_and_texcoords_and_without_faces(tmp_path):
    V, F = l_prism()
    write_msh(tmp_path / "a.msh", V, F, normals=False, texcoords=False)
    V2, F2 = mi.load_mesh(tmp_path / "a.msh")
    np.testing.assert_array_equal(V2[F2], V[F])
    write_msh(tmp_path / "b.msh", V, np.zeros((0, 3)))
    V3, F3 = mi.load_mesh(tmp_path / "b.msh")
    assert F3.shape == (0, 3) and np.array_equal(V3, V)


@pytest.mark.parametrize("fmt", ["stl", "obj", "msh", "msh_hull"])       # MuJoCo reads binary STL only
@pytest.mark.parametrize("mode", ["legacy", "exact"])
def test_mesh_files_give_mujocos_body_inertia(mj, tmp_path, fmt, mode):
    """The body inertia from each format equals MuJoCo's (an MSH without faces: MuJoCo's convex hull)."""
    V, F = l_prism()
    ext = fmt.split("_")[0]
    if fmt == "msh_hull":
        write_msh(tmp_path / f"L.{ext}", V, np.zeros((0, 3)))
    elif fmt == "obj":
        write_obj(tmp_path / "L.obj", V, F, plain=True)
    else:
        WRITERS[fmt](tmp_path / f"L.{ext}", V, F)
    xml = f"""<mujoco><asset><mesh name="L" file="L.{ext}" scale="1 2 1.5" inertia="{mode}"/></asset><worldbody>
      <body name="a" pos="0 0 1"><freejoint/><geom type="mesh" mesh="L" pos="0.1 0.2 0.3" euler="30 40 50" density="800" contype="0" conaffinity="0"/>
      </body></worldbody></mujoco>"""
    (tmp_path / "scene.xml").write_text(xml)
    ref = mj.MjModel.from_xml_path(str(tmp_path / "scene.xml"))
    model = load_mjcf(tmp_path / "scene.xml")
    R = Rotation.from_quat(ref.body_iquat[1], scalar_first=True).as_matrix()
    want = ld.Inertia(ref.body_mass[1], ref.body_ipos[1], R @ np.diag(ref.body_inertia[1]) @ R.T).matrix()
    got = model.inertia[model.body_id("a")]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max(), err_msg=f"{fmt} {mode}")


def _corrupt_msh(tmp_path):
    V, F = l_prism()
    write_msh(tmp_path / "good.msh", V, F)
    good = (tmp_path / "good.msh").read_bytes()
    bad_face = bytearray(good)
    bad_face[-4:] = struct.pack("<i", 99)
    head = struct.pack("<4i", 12, 12, 12, 20)
    return {
        "short.msh": (good[:10], "shorter than the 16-byte header"),
        "truncated.msh": (good[:-1], r"needs \d+ bytes, the file has \d+"),
        "negative.msh": (struct.pack("<4i", 12, -1, 0, 0) + good[16:], "negative counts"),
        "three.msh": (struct.pack("<4i", 3, 0, 0, 0) + b"\0" * 36, "3 vertices, a mesh needs at least 4"),
        "face.msh": (bytes(bad_face), "a face names vertex 99 of 12"),
        "nan.msh": (head + struct.pack("<f", np.nan) + good[20:], "not finite"),
    }


def test_corrupt_mesh_files_are_errors_naming_the_file(tmp_path):
    cases = _corrupt_msh(tmp_path)
    cases.update({
        "garbage.stl": (b"\x01\x02" * 30, "corrupt STL mesh: neither ASCII"),
        "count.stl": (b" " * 80 + struct.pack("<I", 5) + b"\0" * 60, r"the header counts 5 triangles, 334 bytes"),
        "ascii.stl": (b"solid x\n facet normal 0 0 0\n outer loop\n vertex 1 2\n", "line 4: 'vertex' needs 3 numbers"),
        "word.stl": (b"solid x\n vertex 1 2 z\n", "line 2: not a number"),
        "two.stl": (b"solid x\n vertex 1 2 3\n vertex 1 2 3\nendsolid\n", "2 vertices, not three per facet"),
        "zero.obj": (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 0 1 2\n", "line 5: vertex index 0"),
        "face.obj": (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 9\n", "a face names vertex 8 of 4"),
        "short.obj": (b"v 0 0 0\nv 1 0\n", "line 2: 'v' needs 3 numbers"),
        "none.obj": (b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\n", "the OBJ file has no triangles"),
    })
    for name, (data, match) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(mi.MeshFileError, match=match) as exc:
            mi.load_mesh(path)
        assert str(path) in str(exc.value), name
        # and in a model: an MJCFError naming the mesh element and the file
        text = (f'<mujoco><asset><mesh name="m" file="{name}"/></asset><worldbody><body name="b"><joint/>'
                '<geom type="mesh" mesh="m"/></body></worldbody></mujoco>')
        with pytest.raises(MJCFError, match=rf"<mesh name='m'>: \S*{name}: "):
            ld.parse_mjcf(text, base_dir=tmp_path)


def test_unknown_format_and_missing_reader(tmp_path, monkeypatch):
    pytest.importorskip("trimesh")
    (tmp_path / "m.weird").write_bytes(b"hello")
    with pytest.raises(mi.MeshFileError, match=r"m.weird: unknown mesh format .weird: expected one of .*msh.*stl"):
        mi.load_mesh(tmp_path / "m.weird")
    # a format whose reader trimesh imports on use: the missing package is named
    import builtins
    real_import = builtins.__import__

    def no_collada(name, *args, **kwargs):
        if name == "collada" or name.startswith("collada."):
            raise ImportError("No module named 'collada'", name="collada")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_collada)
    (tmp_path / "m.dae").write_bytes(b"<COLLADA/>")
    with pytest.raises(mi.MeshReaderMissing, match=r"m.dae: reading .dae mesh files needs pycollada") as exc:
        mi.load_mesh(tmp_path / "m.dae")
    assert exc.value.reader == "pycollada"
    from linkdyn.model.io.mjcf import parse_mjcf
    text = ('<mujoco><asset><mesh name="m" file="m.dae"/></asset><worldbody><body name="b"><joint/>'
            '<geom type="mesh" mesh="m"/><geom size="0.1"/></body></worldbody></mujoco>')
    with pytest.warns(MJCFWarning, match="left out of the body's inertia: .*needs pycollada"):
        parse_mjcf(text, base_dir=tmp_path)


def test_mesh_files_are_read_through_the_confinement_helper(tmp_path, monkeypatch):
    """load_mesh reads only through _files.read_model_file (a regular file, a bounded read)."""
    from linkdyn.model.io import _files
    V, F = l_prism()
    write_msh(tmp_path / "m.msh", V, F)
    seen = []
    real = _files.read_model_file

    def spy(path, *args, **kwargs):
        seen.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(_files, "read_model_file", spy)
    mi.load_mesh(tmp_path / "m.msh")
    assert seen == [str(tmp_path / "m.msh")]
    (tmp_path / "big.msh").write_bytes(b"\0" * 64)
    with pytest.raises(mi.MeshFileError, match="larger than the limit of 32 bytes"):
        monkeypatch.setattr(_files, "read_model_file",
                            lambda p, error, what="": real(p, error, max_bytes=32, what=what))
        mi.load_mesh(tmp_path / "big.msh")
