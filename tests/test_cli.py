"""The command line: the README's main job (a scene demo) and the robot demo, run short."""
import numpy as np

from linkdyn import cli
from linkdyn.models import example_robot_data_dir


def test_scene_demo_writes_animation_plot_and_recording(tmp_path, capsys):
    assert cli.main(["demo", "highbar", "--duration", "1.2", "--out", str(tmp_path), "--quiet", "--format", "gif"]) == 0
    out = capsys.readouterr().out
    assert "cut     r_grip__bar" in out and "energy drift" in out
    for name in ("highbar.gif", "highbar.png", "highbar.npz"):
        assert (tmp_path / name).stat().st_size > 1000, name
    data = np.load(tmp_path / "highbar.npz")
    assert data["seg1_t"][-1] == 1.2


def test_robot_demo_and_info(tmp_path, capsys):
    assert cli.main(["demo", "ur5", "--duration", "0.05", "--plot", str(tmp_path / "ur5.png")]) == 0
    out = capsys.readouterr().out
    assert "energy drift over the run" in out and (tmp_path / "ur5.png").exists()
    urdf = example_robot_data_dir() / "ur_description/urdf/ur5_robot.urdf"
    assert cli.main(["info", str(urdf)]) == 0
    assert "shoulder_pan_joint" in capsys.readouterr().out
