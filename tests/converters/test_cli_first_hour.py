"""The first hour with the command line (issue 33): exit code 5 for internal errors, one piece of
dependency advice, -o paths that never overwrite an input, feature levels by Android API level,
--fail-under as a fraction, run/inspect on a source model, --version and help descriptions."""
import os
import shutil
import subprocess
import sys

import pytest

from converters import cli
from converters.cli import main
from tests.conftest import ROOT

DEMO_TFLITE = ROOT / "samples" / "demo.tflite"
DEMO = ROOT / "samples" / "demo.nnapi"
ONNX = ROOT / "samples" / "resnet_float.onnx"


# -- 1. exit code 5 and dependency advice --------------------------------------------------------------

def test_a_bug_is_exit_5_with_one_line_saying_report_it(monkeypatch, capsys):
    def buggy(args):
        raise KeyError("oops")
    monkeypatch.setattr(cli, "cmd_inspect", buggy)
    monkeypatch.delenv("NNAPI_DEBUG", raising=False)
    assert main(["inspect", str(DEMO)]) == 5
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error, please report" in err and "NNAPI_DEBUG=1" in err, err
    assert "Traceback" not in err


def test_nnapi_debug_shows_the_traceback(monkeypatch, capsys):
    def buggy(args):
        raise KeyError("oops")
    monkeypatch.setattr(cli, "cmd_inspect", buggy)
    monkeypatch.setenv("NNAPI_DEBUG", "1")
    assert main(["inspect", str(DEMO)]) == 5
    assert "Traceback" in capsys.readouterr().err


def test_a_broken_import_inside_the_project_is_exit_5_not_missing_dependency(monkeypatch, capsys):
    def broken(args):
        raise ModuleNotFoundError("No module named 'converters.gone'", name="converters.gone")
    monkeypatch.setattr(cli, "cmd_inspect", broken)
    assert main(["inspect", str(DEMO)]) == 5
    err = capsys.readouterr().err
    assert "internal error" in err and "pip install" not in err, err


@pytest.mark.parametrize("module,extra", [("onnxruntime", "runtimes"), ("ai_edge_litert.interpreter", "runtimes"),
                                          ("PIL", "datasets"), ("distributed", "scale")])
def test_a_missing_optional_package_is_exit_4_with_the_pip_command(monkeypatch, capsys, module, extra):
    def missing(args):
        raise ModuleNotFoundError(f"No module named {module!r}", name=module)
    monkeypatch.setattr(cli, "cmd_inspect", missing)
    assert main(["inspect", str(DEMO)]) == 4
    err = capsys.readouterr().err
    assert f'pip install "nnapi-convert[{extra}]"' in err and err.count("\n") == 1, err


def test_every_command_gives_the_same_advice_for_missing_litert(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ai_edge_litert", None)   # import fails as if not installed
    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)
    lines = []
    for argv in (["parity", str(DEMO_TFLITE)], ["bench", str(DEMO_TFLITE), "--vs", "litert", "--runs", "1"]):
        assert main(argv) == 4, argv
        lines.append(capsys.readouterr().err.strip().split(": error: ", 1)[1].split("; needed")[0])
    assert lines[0] == lines[1] == "LiteRT is not installed: pip install \"nnapi-convert[runtimes]\" (or: pip install " \
        "'ai-edge-litert')", lines


def test_a_bug_inside_coverage_or_a_batch_row_is_exit_5(monkeypatch, capsys):
    """coverage catches one model's failure into its report row (batches go on): a bug there is still 5."""
    from converters import coverage
    from converters.batch import error_row, parity_exit_code

    def buggy(*a, **k):
        raise TypeError("a bug")
    monkeypatch.setattr(coverage, "build_report", buggy)
    assert main(["coverage", str(DEMO_TFLITE)]) == 5
    assert "internal error, please report: TypeError: a bug" in capsys.readouterr().err
    assert parity_exit_code([{"model": "a", "exit_code": 1}, error_row("b", "the worker process failed")]) == 5


def test_help_and_readme_list_exit_code_5(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "5 internal error" in capsys.readouterr().out
    assert "5 internal error" in (ROOT / "README.md").read_text()


# -- 2. -o paths -----------------------------------------------------------------------------------------

def test_convert_refuses_to_overwrite_its_input(tmp_path, capsys, monkeypatch):
    model = tmp_path / "self.tflite"
    shutil.copy(DEMO_TFLITE, model)
    before = model.read_bytes()
    assert main(["convert", str(model), "-o", str(model)]) == 3
    err = capsys.readouterr().err
    assert "overwrite" in err and str(model) in err, err
    assert model.read_bytes() == before
    monkeypatch.chdir(tmp_path)   # the same file by another spelling
    assert main(["convert", "self.tflite", "-o", "./../" + tmp_path.name + "/self.tflite"]) == 3
    assert model.read_bytes() == before


def test_convert_output_must_end_in_nnapi(tmp_path, capsys):
    assert main(["convert", str(DEMO_TFLITE), "-o", str(tmp_path / "out.tflite")]) == 3
    err = capsys.readouterr().err
    assert ".nnapi" in err and "out.nnapi" in err, err
    assert not list(tmp_path.iterdir())


def test_output_that_is_a_folder_is_exit_3_naming_it(tmp_path, capsys):
    for argv in (["convert", str(DEMO_TFLITE), "-o", str(tmp_path)],
                 ["inspect", str(DEMO), "-o", str(tmp_path)],
                 ["run", str(DEMO), "-o", str(tmp_path)]):
        assert main(argv) == 3, argv
        err = capsys.readouterr().err
        assert "is a folder" in err and str(tmp_path) in err and "internal error" not in err, err


def test_report_formats_imply_their_extension(tmp_path, capsys):
    assert main(["inspect", str(DEMO), "--format", "json", "-o", str(tmp_path / "m.html")]) == 3
    assert ".json" in capsys.readouterr().err
    assert main(["run", str(DEMO), "-o", str(tmp_path / "o.json")]) == 3
    assert ".npz" in capsys.readouterr().err
    assert main(["inspect", str(DEMO), "-o", str(tmp_path / "m.tflite")]) == 3   # text, but named like a model
    assert not list(tmp_path.iterdir())
    assert main(["inspect", str(DEMO), "-o", str(tmp_path / "m.txt")]) == 0


def test_export_refuses_a_folder_holding_its_input_and_a_file(tmp_path, capsys):
    model = tmp_path / "m.nnapi"
    shutil.copy(DEMO, model)
    assert main(["export", str(model), "-o", str(tmp_path)]) == 3
    assert "holds the input" in capsys.readouterr().err and model.exists()
    assert main(["export", str(DEMO), "-o", str(model)]) == 3
    assert "is a file" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders: the refusal cannot be seen")
def test_unwritable_folder_is_exit_3(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    assert main(["inspect", str(DEMO), "-o", str(ro / "m.txt")]) == 3
    assert "permission denied" in capsys.readouterr().err


def test_a_folder_the_user_cannot_write_is_refused_before_any_work(monkeypatch, tmp_path, capsys):
    """As test_unwritable_folder_is_exit_3 where the tests run as root: the folder's access answer is no."""
    import converters.output_paths as output_paths
    monkeypatch.setattr(output_paths.os, "access", lambda path, mode: False)
    assert main(["inspect", str(DEMO), "-o", str(tmp_path / "m.txt")]) == 3
    err = capsys.readouterr().err
    assert "permission denied" in err and str(tmp_path) in err, err


def test_a_write_the_file_system_refuses_is_exit_3_naming_the_path(monkeypatch, tmp_path, capsys):
    import errno

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))
    monkeypatch.setattr("nnapi.serialize.atomic_write", full)
    assert main(["inspect", str(DEMO), "-o", str(tmp_path / "m.txt")]) == 3
    err = capsys.readouterr().err
    assert "No space left" in err and "m.txt" in err and "internal error" not in err, err


# -- 5. feature levels -------------------------------------------------------------------------------------

@pytest.mark.parametrize("given,level", [("4", 4), ("android-29", 3), ("29", 3), ("api-30", 4), ("27", 1),
                                         ("32", 5), ("android-33", 6), ("35", 8), ("8", 8)])
def test_feature_level_takes_android_api_levels(given, level):
    args = cli.build_parser().parse_args(["convert", "m.tflite", "-o", "m.nnapi", "--feature-level", given])
    assert args.feature_level == level


def test_feature_level_outside_both_ranges_is_a_usage_error(capsys):
    for bad in ("9", "26", "36", "android-8", "x"):
        with pytest.raises(SystemExit) as e:
            main(["convert", "m.tflite", "-o", "m.nnapi", "--feature-level", bad])
        assert e.value.code == 3
        assert "Android API level" in capsys.readouterr().err


def test_help_shows_the_api_level_mapping(capsys):
    with pytest.raises(SystemExit):
        main(["convert", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "android-29 = 3" in out and "android-31/32 = 5" in out


# -- 6. --fail-under ----------------------------------------------------------------------------------------

def test_fail_under_a_percent_is_refused_with_advice(capsys):
    with pytest.raises(SystemExit) as e:
        main(["coverage", str(DEMO_TFLITE), "--fail-under", "95"])
    assert e.value.code == 3
    assert "0.95" in capsys.readouterr().err


def test_fail_under_accepts_an_explicit_percent(capsys):
    assert main(["coverage", str(DEMO_TFLITE), "--fail-under", "95%"]) == 0   # the demo converts completely
    assert cli.build_parser().parse_args(["coverage", "m", "--fail-under", "95%"]).fail_under == 0.95


# -- 7. run / inspect on a source model ----------------------------------------------------------------------

@pytest.mark.parametrize("command", ["run", "inspect"])
@pytest.mark.parametrize("model", [DEMO_TFLITE, ONNX])
def test_run_and_inspect_on_a_source_model_say_convert_it_first(capsys, command, model):
    assert main([command, str(model)]) == 3
    err = capsys.readouterr().err
    assert f"nnapi convert {model} -o {model.with_suffix('.nnapi')}" in err and "magic" not in err, err


# -- 8. --version and help --------------------------------------------------------------------------------------

def test_version_is_the_package_version():
    from importlib.metadata import version
    r = subprocess.run([sys.executable, "-m", "converters.cli", "--version"], capture_output=True, text=True,
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0 and r.stdout.strip().endswith(version("nnapi-convert")), r.stdout


def test_every_subcommand_has_a_description():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")   # noqa: SLF001 (argparse's only listing)
    missing = [name for name, p in sub.choices.items() if not p.description]
    assert not missing, missing


# -- 9. LiteRT's INFO lines -------------------------------------------------------------------------------------

def test_litert_info_lines_stay_off_the_terminal_and_other_messages_pass():
    """The C++ runtime writes the INFO line to fd 2 when XNNPACK is applied: only a real process shows it."""
    code = ("import sys, numpy as np\n"
            "from converters.runners import litert_quiet, run_litert\n"
            f"data = open({str(ROOT / 'samples' / 'mobilenet_float.tflite')!r}, 'rb').read()\n"
            "from ai_edge_litert.interpreter import Interpreter\n"
            "shape = Interpreter(model_content=data).get_input_details()[0]['shape']\n"
            "run_litert(data, [np.zeros(shape, np.float32)], 'litert-xnnpack')\n"
            "import os\n"
            "with litert_quiet():\n"
            "    os.write(2, b'INFO: noise\\nWARNING: kept\\n')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert "INFO:" not in r.stderr and "WARNING: kept" in r.stderr, r.stderr
