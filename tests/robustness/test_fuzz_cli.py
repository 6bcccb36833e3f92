"""The `nnapi` command line on hostile inputs: exit code 0, 2 or 3 with a one-line error on
stderr, never a traceback, never a half-written output file."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.targets import run_cli_argv

from .helpers import assert_behaves, mutated_inputs, seeds

ROOT = Path(__file__).resolve().parents[2]
N_MUTATIONS = 240


def test_random_mutations(tmp_path):
    counts = assert_behaves("cli", mutated_inputs("cli", N_MUTATIONS), tmp_path)
    assert counts["rejected"] > N_MUTATIONS // 3 and counts["ok"] > 10, counts


@pytest.mark.parametrize("argv,code", [
    (["inspect", "{d}/missing.nnapi"], 3),
    (["run", "{d}/missing.nnapi"], 3),
    (["convert", "{d}/missing.tflite", "-o", "{d}/o.nnapi"], 3),
    (["convert", "{d}/garbage.bin", "-o", "{d}/o.nnapi"], 3),
    (["convert", "{d}/garbage.tflite", "-o", "{d}/o.nnapi"], 3),
    (["convert", "{d}/garbage.tflite", "-o", "{d}/o.nnapi", "--input-shape", "a=1,x"], 3),
    (["coverage", "{d}/garbage.tflite"], 3),
    (["coverage", "{d}/empty_dir"], 3),
    (["inspect", "{d}/garbage.tflite"], 3),
    (["run", "{d}/demo.nnapi", "--inputs", "{d}/garbage.bin"], 3),
    (["run", "{d}/demo.nnapi", "--inputs", "{d}/wrong.npz"], 3),
    (["inspect", "{d}"], 3),
])
def test_bad_arguments_give_one_line_errors(tmp_path, argv, code):
    import numpy as np
    (tmp_path / "garbage.bin").write_bytes(b"\x00garbage" * 10)
    (tmp_path / "garbage.tflite").write_bytes(b"\x00garbage" * 10)
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "demo.nnapi").write_bytes(seeds.nnapi_seeds()["demo"])
    np.savez(tmp_path / "wrong.npz", x=np.zeros((2, 2), np.float64))
    got, err = run_cli_argv([a.format(d=tmp_path) for a in argv])
    assert got == code, err
    assert err.startswith("nnapi ") and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not list(tmp_path.glob("o.nnapi*")) and not list(tmp_path.glob(".*.tmp"))


def test_huge_model_input_is_refused_before_allocating(tmp_path):
    from fuzz.mutators import nnapi_join, nnapi_split
    fields, meta, blob = nnapi_split(seeds.nnapi_seeds()["demo"])
    for k in (0, 6, 7, 8):  # the input, the temporaries and the output
        meta["subgraphs"][0]["operands"][k]["dims"] = [1, 3, 5, 1 << 28]
    meta["subgraphs"][0]["operands"][1]["dims"] = [1 << 28 * 0 + 2]
    (tmp_path / "big.nnapi").write_bytes(nnapi_join(fields, meta, blob))
    code, err = run_cli_argv(["run", str(tmp_path / "big.nnapi")])
    assert code == 3 and "more than" in err and "Traceback" not in err, err


def test_cli_process_on_corrupt_file_has_no_traceback(tmp_path):
    """The real process: exit code and stderr as a user sees them."""
    data = bytearray(seeds.nnapi_seeds()["quant_conv"])
    data[200] ^= 0xFF
    (tmp_path / "bad.nnapi").write_bytes(bytes(data))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "converters.cli", "inspect", str(tmp_path / "bad.nnapi")],
                       capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert r.returncode == 3 and "checksum" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_bug_still_gives_one_line_and_the_fuzzer_flags_it(tmp_path, monkeypatch):
    """The CLI's last-resort handler: an unexpected exception is one line with exit 5, never a
    traceback; fuzz.targets reports it as a finding all the same."""
    from converters import cli
    from fuzz import targets

    def buggy(args):
        raise RuntimeError("a bug")
    monkeypatch.setattr(cli, "cmd_inspect", buggy)
    monkeypatch.setitem(targets.CLI_COMMANDS, "nnapi", [["inspect", "{in}"]])
    code, err = run_cli_argv(["inspect", "x.nnapi"])
    assert code == 5 and err.count("\n") == 1 and "internal error, please report: RuntimeError: a bug" in err, err
    with pytest.raises(targets.Finding, match="internal error"):
        targets.run_cli(seeds.nnapi_seeds()["demo"], tmp_path)
