"""The command line: the README's main job (a scene demo) and the robot demo, run short; both write the
3D viewer page."""
import re

import numpy as np

from linkdyn import cli
from linkdyn.models import example_robot_data_dir


def test_scene_demo_writes_animation_plot_and_recording(tmp_path, capsys):
    assert cli.main(["demo", "highbar", "--duration", "1.2", "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    # events in words, each thing named once; the segment table has numbers, not nan
    assert "cut" in out and "right grip lets go of bar" in out and "r_grip__bar" not in out.split("checks")[0]
    assert "E change [J]" in out and "nan" not in out
    for check in ("largest limit violation", "smallest normal force", "deepest penetration", "largest loop error",
                  "energy ledger residual"):
        assert f"ok   {check}" in out, check
    for name in ("highbar.html", "highbar.png", "highbar.npz"):
        assert (tmp_path / name).stat().st_size > 1000, name
    page = (tmp_path / "highbar.html").read_text()           # the 3D viewer (the gif: tests/test_viz.py)
    assert '"format":"linkdyn-viewer-1"' in page and "right grip lets go of bar" in page
    data = np.load(tmp_path / "highbar.npz")
    assert data["seg1_t"][-1] == 1.2


def test_robot_demo_lists_its_impacts_and_says_where_the_energy_went(tmp_path, capsys):
    """The panda swinging under gravity loses 68 J in its first 0.5 s: the demo lists the impacts
    on its joint stops (joint 2's upper stop takes nearly all of it), closes the ledger (E(end) -
    E(0) = what the stops took, to the integrator's error) and prints its checks."""
    assert cli.main(["demo", "panda", "--duration", "0.5", "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "impact: panda joint2 upper stop" in out
    m = re.search(r"E\(end\) - E\(0\) = ([-+0-9.e]+): joint limits and contacts ([-+0-9.e]+)", out)
    change, stops = float(m.group(1)), float(m.group(2))
    assert change < -60.0 and abs(change - stops) < 1e-6 * abs(change)
    assert "where the energy went" in out and "ok   energy ledger residual" in out and "FAIL" not in out


def test_robot_demo_and_info(tmp_path, capsys):
    assert cli.main(["demo", "ur5", "--duration", "0.05", "--plot", str(tmp_path / "ur5.png"),
                     "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "energy drift between events" in out and (tmp_path / "ur5.png").exists()
    page = (tmp_path / "ur5.html").read_text()                # the 3D viewer, with the robot's meshes if trimesh is here
    assert '"format":"linkdyn-viewer-1"' in page and "3D viewer written to" in out
    urdf = example_robot_data_dir() / "ur_description/urdf/ur5_robot.urdf"
    assert cli.main(["info", str(urdf)]) == 0
    assert "shoulder_pan_joint" in capsys.readouterr().out


def test_bare_command_version_and_info_errors(tmp_path, capsys):
    import pytest
    import linkdyn as ld
    from linkdyn.models.mjcf_examples import incline_xml
    assert cli.main([]) == 0 and "usage: linkdyn" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0 and f"linkdyn {ld.__version__}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        cli.main(["info", str(tmp_path / "missing.urdf")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "missing.urdf" in err and "Traceback" not in err
    xml = tmp_path / "box.xml"
    xml.write_text(incline_xml(0.3, 0.5))
    assert cli.main(["info", str(xml)]) == 0 and "root" in capsys.readouterr().out
    assert ld.viz.__name__ == "linkdyn.viz" and ld.models.scenarios.__name__ == "linkdyn.models.scenarios"


def test_scene_demo_exits_non_zero_when_a_check_fails(tmp_path, monkeypatch, capsys):
    """The verdict is the checks': a run whose checks fail (tolerances made impossible here)
    makes ``linkdyn demo`` exit with 1 and name the failed check."""
    from linkdyn.sim import checks
    monkeypatch.setattr(checks, "LOOP_TOL", -1.0)
    assert cli.main(["demo", "highbar", "--duration", "0.1", "--out", str(tmp_path), "--quiet", "--format", "gif"]) == 1
    cap = capsys.readouterr()
    assert "FAIL largest loop error" in cap.out and "a check failed (largest loop error)" in cap.err


def test_warmup_compiles_or_loads_everything_and_says_where(capsys):
    assert cli.main(["warmup", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "cached in" in err and "ready in" in err


def test_cli_bad_arguments_exit_2_without_traceback(capsys):
    """linkdyn demo --dt 0|nan|-1 and sweep --workers -1 printed tracebacks (or hung): argparse
    refuses them with exit status 2 and a one-line usage error naming the option."""
    import pytest
    bad = [["demo", "--dt", "0"], ["demo", "--dt", "nan"], ["demo", "--dt", "-1"], ["demo", "--dt", "x"],
           ["demo", "--duration", "inf"], ["sweep", "--workers", "-1"], ["sweep", "--workers", "0"],
           ["sweep", "--until", "0"], ["sweep", "--friction", "-0.1"], ["sweep", "--height", "nan"]]
    for argv in bad:
        with pytest.raises(SystemExit) as exc:
            cli.main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2, argv
        assert argv[1] in err and "Traceback" not in err, (argv, err)


def test_cli_unwritable_out_and_missing_parquet_engine_fail_before_simulating(tmp_path, monkeypatch, capsys):
    """demo --out /proc/x simulated the whole run, then failed at mkdir with a traceback; sweep
    --format parquet without pyarrow ran every task, then wrote nothing. Both exit 2 at once now:
    the run functions are replaced by ones that fail the test if reached."""
    import pytest

    def reached(args):
        raise AssertionError("simulated before checking its output")
    monkeypatch.setattr(cli, "_demo", reached)
    monkeypatch.setattr(cli, "_sweep", reached)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for argv in (["demo", "--out", str(blocker / "x")], ["demo", "--out", str(blocker)],
                 ["sweep", "--out", "/proc/linkdyn-x"]):
        with pytest.raises(SystemExit) as exc:
            cli.main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and "--out" in err and "Traceback" not in err, (argv, err)
    monkeypatch.setattr(cli, "_parquet_engine", lambda: False)
    with pytest.raises(SystemExit) as exc:
        cli.main(["sweep", "--out", str(tmp_path), "--format", "parquet"])
    assert exc.value.code == 2 and "pyarrow" in capsys.readouterr().err
