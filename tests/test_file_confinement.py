"""A model file is untrusted input: the files it names (MJCF meshes and includes, URDF meshes by
relative, absolute, ``file://`` and ``package://`` names) resolve, symbolic links resolved,
inside the model's folder or inside folders the user names (``asset_dirs=``, ``package_dirs=``),
or they are refused, never read, and never embedded in a viewer page
(``linkdyn.model.io._files.confine``).  Each test is named after the attack it stops."""
import base64
import os
import re
import warnings

import numpy as np
import pytest

import linkdyn as ld
from linkdyn import viz
from linkdyn.model.io.mjcf import MJCFError, MJCFWarning
from linkdyn.model.io.urdf import URDFWarning

MARKER = "linkdyn-secret-7f3a9c"
#: an OBJ outside the model's folder: a tetrahedron with coordinates found nowhere else, and a marker
SECRET_OBJ = f"""# {MARKER}
v 0.123457 0.0 0.0
v 0.0 0.234568 0.0
v 0.0 0.0 0.345679
v 0.0 0.0 0.0
f 1 2 3
f 1 4 2
f 1 3 4
f 2 4 3
"""
SECRET_V = np.array([[0.123457, 0, 0], [0, 0.234568, 0], [0, 0, 0.345679], [0, 0, 0]], dtype="<f4")


@pytest.fixture
def layout(tmp_path):
    """tmp/model (the model's folder) and tmp/outside/secret.obj (a file it must not reach)."""
    model, outside = tmp_path / "model", tmp_path / "outside"
    model.mkdir()
    outside.mkdir()
    (outside / "secret.obj").write_text(SECRET_OBJ)
    return model, outside / "secret.obj"


def mjcf(mesh_file, meshdir=None, inertial=True):
    compiler = f'<compiler meshdir="{meshdir}"/>' if meshdir is not None else ""
    inert = '<inertial pos="0 0 0" mass="1" diaginertia="0.01 0.01 0.01"/>' if inertial else ""
    return f"""<mujoco model="m">{compiler}
  <asset><mesh name="blob" file="{mesh_file}"/></asset>
  <worldbody><body name="b" pos="0 0 1"><joint name="j" type="hinge" axis="0 1 0"/>
    <geom type="mesh" mesh="blob" contype="0" conaffinity="0"/>{inert}</body></worldbody>
</mujoco>"""


def load_mjcf_quietly(path, **kw):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        model = ld.load_mjcf(path, **kw)
    return model, [str(w.message) for w in got if issubclass(w.category, MJCFWarning)]


def escapes(model_dir, secret):
    """(mesh file, meshdir) pairs that name the outside file: every way out."""
    rel = os.path.relpath(secret, model_dir)
    link = model_dir / "link.obj"
    if not link.exists():
        link.symlink_to(secret)
    return {"dotdot": (rel, None), "absolute": (str(secret), None),
            "absolute meshdir": (secret.name, str(secret.parent)),
            "dotdot meshdir": (secret.name, os.path.relpath(secret.parent, model_dir)),
            "symlink inside the folder": ("link.obj", None)}


# ----------------------------------------------------------------------------------- MJCF
@pytest.mark.parametrize("how", ["dotdot", "absolute", "absolute meshdir", "dotdot meshdir",
                                 "symlink inside the folder"])
def test_mjcf_mesh_escapes_are_refused_for_the_inertia(layout, how):
    """A mesh the body's inertia is computed from: refused with an MJCFError naming the file and
    the rule, as a missing one is, before anything is read."""
    model_dir, secret = layout
    f, meshdir = escapes(model_dir, secret)[how]
    (model_dir / "m.xml").write_text(mjcf(f, meshdir, inertial=False))
    with pytest.raises(MJCFError, match=r"refused: the mesh file .*secret\.obj.* outside the model's folder"):
        ld.load_mjcf(model_dir / "m.xml")


@pytest.mark.parametrize("how", ["dotdot", "absolute", "absolute meshdir", "dotdot meshdir",
                                 "symlink inside the folder"])
def test_mjcf_mesh_escapes_are_not_drawn(layout, how):
    """A mesh only drawn: the model loads, the mesh is refused with a warning and has no path."""
    model_dir, secret = layout
    f, meshdir = escapes(model_dir, secret)[how]
    (model_dir / "m.xml").write_text(mjcf(f, meshdir))
    model, msgs = load_mjcf_quietly(model_dir / "m.xml")
    (vis,) = [v for v in model.visuals if v.kind == "mesh"]
    assert vis.path is None
    assert any("refused" in m and "secret.obj" in m for m in msgs)


def test_mjcf_meshes_inside_the_folder_or_asset_dirs_are_allowed(layout):
    model_dir, secret = layout
    (model_dir / "inside.obj").write_text(SECRET_OBJ)
    (model_dir / "m.xml").write_text(mjcf("inside.obj"))
    model, msgs = load_mjcf_quietly(model_dir / "m.xml")
    assert [v.path for v in model.visuals] == [(model_dir / "inside.obj").resolve()] and not any("refused" in m for m in msgs)
    # a ../ meshdir into a folder the user names is allowed
    (model_dir / "m.xml").write_text(mjcf(secret.name, "../outside"))
    model, msgs = load_mjcf_quietly(model_dir / "m.xml", asset_dirs=[secret.parent])
    assert [v.path for v in model.visuals] == [secret.resolve()] and not any("refused" in m for m in msgs)
    # a symbolic link inside the folder to a file inside it is fine
    (model_dir / "alias.obj").symlink_to(model_dir / "inside.obj")
    (model_dir / "m.xml").write_text(mjcf("alias.obj"))
    model, _ = load_mjcf_quietly(model_dir / "m.xml")
    assert [v.path for v in model.visuals] == [(model_dir / "inside.obj").resolve()]


def test_mjcf_text_without_a_folder_reads_no_mesh(layout):
    _, secret = layout
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ld.parse_mjcf(mjcf(str(secret)))
    assert [v.path for v in model.visuals] == [None]


def test_mjcf_include_through_a_symlinked_folder_is_refused(layout):
    model_dir, secret = layout
    (secret.parent / "part.xml").write_text("<mujoco/>")
    (model_dir / "parts").symlink_to(secret.parent, target_is_directory=True)
    (model_dir / "m.xml").write_text('<mujoco><include file="parts/part.xml"/></mujoco>')
    with pytest.raises(MJCFError, match="outside the model's folder"):
        ld.load_mjcf(model_dir / "m.xml")
    ld.load_mjcf(model_dir / "m.xml", asset_dirs=[secret.parent])          # named by the user: read


# ----------------------------------------------------------------------------------- URDF
def urdf(filename):
    return f"""<robot name="r"><link name="base"><inertial><mass value="1"/>
  <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
  <visual><geometry><mesh filename="{filename}"/></geometry></visual></link></robot>"""


def load_urdf_quietly(path, **kw):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        model = ld.load_urdf(path, **kw)
    return model, [str(w.message) for w in got if issubclass(w.category, URDFWarning)]


def urdf_escapes(model_dir, secret):
    rel = os.path.relpath(secret, model_dir)
    link = model_dir / "link.obj"
    if not link.exists():
        link.symlink_to(secret)
    return {"dotdot": rel, "absolute": str(secret), "file url": f"file://{secret}",
            "climbing package url": f"package://pkg/../{rel}",
            "package url naming a folder above the model": f"package://{model_dir.parent.name}/outside/secret.obj",
            "symlink inside the folder": "link.obj"}


@pytest.mark.parametrize("how", ["dotdot", "absolute", "file url", "climbing package url",
                                 "package url naming a folder above the model", "symlink inside the folder"])
def test_urdf_mesh_escapes_are_refused(layout, how, monkeypatch):
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    model_dir, secret = layout
    (model_dir / "pkg").mkdir()
    (model_dir / "r.urdf").write_text(urdf(urdf_escapes(model_dir, secret)[how]))
    model, msgs = load_urdf_quietly(model_dir / "r.urdf")
    assert [v.path for v in model.visuals] == [None]
    assert len(msgs) == 1 and "refused" in msgs[0] and "secret.obj" in msgs[0] and "outside the model's folder" in msgs[0]


def test_urdf_package_dirs_and_asset_dirs_allow_their_folders(layout, monkeypatch):
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    model_dir, secret = layout
    root = secret.parent.parent                     # holds the "outside" package
    (model_dir / "r.urdf").write_text(urdf("package://outside/secret.obj"))
    model, msgs = load_urdf_quietly(model_dir / "r.urdf", package_dirs=[root])
    assert [v.path for v in model.visuals] == [secret.resolve()] and not msgs
    (model_dir / "r.urdf").write_text(urdf(f"file://{secret}"))
    model, msgs = load_urdf_quietly(model_dir / "r.urdf", asset_dirs=[secret.parent])
    assert [v.path for v in model.visuals] == [secret.resolve()] and not msgs
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(root))                      # the user's environment names it
    (model_dir / "r.urdf").write_text(urdf("package://outside/secret.obj"))
    model, msgs = load_urdf_quietly(model_dir / "r.urdf")
    assert [v.path for v in model.visuals] == [secret.resolve()] and not msgs
    # and a missing mesh inside is not a refusal: the viewer says it is missing
    monkeypatch.delenv("ROS_PACKAGE_PATH")
    (model_dir / "r.urdf").write_text(urdf("meshes/none.obj"))
    model, msgs = load_urdf_quietly(model_dir / "r.urdf")
    assert [v.path for v in model.visuals] == [None] and not msgs


# ----------------------------------------------------------------------------------- viewer
def _page_meshes(html):
    m = re.search(r'<script type="application/json" id="linkdyn-data">(.*?)</script>', html, re.S)
    import json
    data = json.loads(m.group(1))
    return [np.frombuffer(base64.b64decode(x["v"]), dtype="<f4").reshape(-1, 3) for x in data["meshes"]]


def _holds_secret(html):
    return MARKER in html or any(
        len(V) == len(SECRET_V) and np.allclose(np.sort(V, axis=0), np.sort(SECRET_V, axis=0)) for V in _page_meshes(html))


@pytest.mark.parametrize("fmt,how", [("mjcf", "dotdot"), ("mjcf", "absolute meshdir"), ("mjcf", "symlink inside the folder"),
                                     ("urdf", "file url"), ("urdf", "climbing package url"),
                                     ("urdf", "package url naming a folder above the model"), ("urdf", "absolute")])
def test_a_viewer_page_never_holds_an_outside_file(layout, fmt, how, tmp_path, monkeypatch):
    pytest.importorskip("trimesh")
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    model_dir, secret = layout
    (model_dir / "pkg").mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if fmt == "mjcf":
            f, meshdir = escapes(model_dir, secret)[how]
            (model_dir / "m.xml").write_text(mjcf(f, meshdir))
            model = ld.load_mjcf(model_dir / "m.xml")
        else:
            (model_dir / "r.urdf").write_text(urdf(urdf_escapes(model_dir, secret)[how]))
            model = ld.load_urdf(model_dir / "r.urdf")
    traj = ld.sim.simulate(model, ld.neutral(model), np.zeros(model.nv), 0.02, dt=0.01)
    page = viz.view(traj, model=model).save(tmp_path / "page.html").read_text()
    assert not _holds_secret(page)
    # the control: the same file inside the model's folder is embedded (the check above can see it)
    (model_dir / "inside.obj").write_text(SECRET_OBJ)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = (ld.load_mjcf if fmt == "mjcf" else ld.load_urdf)(
            _write(model_dir, fmt, "inside.obj"))
    assert _holds_secret(viz.view(traj, model=model).html())


def _write(model_dir, fmt, name):
    path = model_dir / ("m.xml" if fmt == "mjcf" else "r.urdf")
    path.write_text(mjcf(name) if fmt == "mjcf" else urdf(name))
    return path


def test_a_hand_made_visual_without_an_allowed_path_is_not_read(layout):
    """The viewer never resolves a name itself: a Visual no loader allowed draws nothing."""
    pytest.importorskip("trimesh")
    _, secret = layout
    b = ld.ModelBuilder("m")
    b.add_body("b", "world", ld.Revolute("y"), inertia=ld.Inertia(1.0, [0, 0, -0.5], np.eye(3) * 0.01))
    model = b.build()
    from linkdyn.model.io.urdf import Visual
    model.visuals = (Visual("b", "mesh", (), str(secret), str(secret.parent)),)
    traj = ld.sim.simulate(model, ld.neutral(model), np.zeros(model.nv), 0.02, dt=0.01)
    v = viz.view(traj, model=model)
    assert not _holds_secret(v.html()) and any("refused" in n for n in v.data["notes"])


def test_a_mesh_naming_a_material_outside_its_folder_reads_nothing_there(layout, monkeypatch):
    """An allowed OBJ whose ``mtllib`` climbs out of its folder: the viewer's reader opens the
    OBJ, never the material file (trimesh 4's own resolver would follow ``../``)."""
    trimesh = pytest.importorskip("trimesh")
    import builtins

    from linkdyn.viz import viewer
    model_dir, secret = layout
    spy = secret.parent / "spy.mtl"
    spy.write_text("newmtl red\nKd 1 0 0\n")
    (model_dir / "m.obj").write_text(SECRET_OBJ.replace(f"# {MARKER}\n", f"mtllib ../outside/{spy.name}\nusemtl red\n"))
    with pytest.raises(ValueError, match="outside the model's folder"):
        viewer._sidecar_resolver(trimesh)(str(model_dir / "m.obj")).get(f"../outside/{spy.name}")
    opened = []
    real_open, real_os_open = builtins.open, os.open
    monkeypatch.setattr(builtins, "open", lambda f, *a, **k: opened.append(str(f)) or real_open(f, *a, **k))
    monkeypatch.setattr(os, "open", lambda f, *a, **k: opened.append(str(f)) or real_os_open(f, *a, **k))
    viewer._read_mesh.cache_clear()
    parts = viewer._read_mesh(str(model_dir / "m.obj"), 0.0)
    monkeypatch.undo()
    viewer._read_mesh.cache_clear()
    assert sum(len(F) for _, F, _ in parts) == 4
    assert str(model_dir / "m.obj") in opened and not any("spy" in f for f in opened)
