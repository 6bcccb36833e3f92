"""Output files are written atomically: an error or an interrupt while `nnapi convert`,
`nnapi.save` or a report is written never leaves a half-written file and never damages an
existing one (and leaves no temporary file behind, short of a SIGKILL)."""
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import nnapi
import nnapi.serialize as serialize
from fuzz import seeds
from fuzz.targets import run_cli_argv

ROOT = Path(__file__).resolve().parents[2]
OLD = b"the previous content, which must survive"


def leftovers(folder: Path) -> list:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp"))


def demo_model():
    from samples.make_samples import build_demo_model
    return build_demo_model()


def interrupt_at(monkeypatch, where: str, exc=KeyboardInterrupt):
    """Make the atomic writer fail at `where`: the data write, the fsync or the rename."""
    def fail(*a, **k):
        raise exc("interrupted by the test")
    if where == "fsync":
        monkeypatch.setattr(serialize.os, "fsync", fail)
    elif where == "replace":
        monkeypatch.setattr(serialize.os, "replace", fail)
    elif where == "write":
        real_fdopen = os.fdopen

        class FailingFile:
            def __init__(self, f):
                self.f = f

            def __enter__(self):
                return self

            def __exit__(self, *exc_info):
                self.f.close()

            def fileno(self):
                return self.f.fileno()

            def write(self, data):
                self.f.write(data[: len(data) // 2])  # half of it reaches the temporary file
                fail()

            def flush(self):
                self.f.flush()
        monkeypatch.setattr(serialize.os, "fdopen", lambda fd, mode: FailingFile(real_fdopen(fd, mode)))


@pytest.mark.parametrize("where", ["write", "fsync", "replace"])
@pytest.mark.parametrize("exc", [KeyboardInterrupt, OSError])
@pytest.mark.parametrize("existing", [False, True])
def test_save_interrupted(tmp_path, monkeypatch, where, exc, existing):
    target = tmp_path / "model.nnapi"
    if existing:
        target.write_bytes(OLD)
    model = demo_model()
    interrupt_at(monkeypatch, where, exc)
    with pytest.raises(exc):
        nnapi.save(model, target)
    assert (target.read_bytes() == OLD) if existing else not target.exists()
    assert leftovers(tmp_path) == []


def test_save_of_unfinished_model_touches_nothing(tmp_path):
    target = tmp_path / "model.nnapi"
    target.write_bytes(OLD)
    m = nnapi.Model()
    m.add_operand(nnapi.OperandType(nnapi.OperandCode.TENSOR_FLOAT32, [2]))
    with pytest.raises(nnapi.NnapiError):
        nnapi.save(m, target)
    assert target.read_bytes() == OLD and leftovers(tmp_path) == []


def test_save_into_missing_folder_is_an_error_without_debris(tmp_path):
    with pytest.raises(OSError):
        nnapi.save(demo_model(), tmp_path / "no" / "such" / "folder" / "m.nnapi")
    assert list(tmp_path.iterdir()) == []


def test_written_file_gets_the_usual_permissions(tmp_path):
    target = tmp_path / "fresh.nnapi"
    old_umask = os.umask(0o022)
    try:
        nnapi.save(demo_model(), target)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644  # not mkstemp's private 0600
    target.chmod(0o640)
    nnapi.save(demo_model(), target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # an existing file keeps its mode


# -- the command line ----------------------------------------------------------------------

@pytest.fixture
def models(tmp_path):
    (tmp_path / "float.tflite").write_bytes(seeds.tflite_float_chain())
    (tmp_path / "quant.tflite").write_bytes(seeds.tflite_quant_conv())
    (tmp_path / "bad.tflite").write_bytes(seeds.tflite_float_chain()[:300])
    (tmp_path / "demo.nnapi").write_bytes(seeds.nnapi_seeds()["demo"])
    from converters.tflite.authoring import GraphBuilder
    g = GraphBuilder()
    x = g.input("x", [2])
    y = g.tensor("y", [2])
    g.op("CUSTOM", [x], [y])  # no converter for it: `nnapi convert` exits 2
    g.output(y)
    (tmp_path / "custom.tflite").write_bytes(g.finish())
    return tmp_path


@pytest.mark.parametrize("argv", [
    ["convert", "{d}/float.tflite", "-o", "{d}/out.nnapi"],
    ["convert", "{d}/float.tflite", "--partial", "-o", "{d}/out.nnapi"],
    ["inspect", "{d}/demo.nnapi", "-o", "{d}/out.txt"],
    ["inspect", "{d}/demo.nnapi", "--format", "json", "-o", "{d}/out.json"],
    ["coverage", "{d}/quant.tflite", "--format", "json", "-o", "{d}/out.json"],
    ["coverage", "{d}/quant.tflite", "--format", "html", "-o", "{d}/out.html"],
    ["run", "{d}/demo.nnapi", "-o", "{d}/out.npz"],
], ids=["convert", "convert-partial", "inspect", "inspect-json", "coverage-json", "coverage-html", "run"])
@pytest.mark.parametrize("where", ["write", "fsync", "replace"])
def test_cli_interrupted_while_writing(models, monkeypatch, argv, where):
    target = Path(argv[argv.index("-o") + 1].format(d=models))  # (each command's own kind of file, -o's rules)
    target.write_bytes(OLD)
    interrupt_at(monkeypatch, where)
    code, err = run_cli_argv([a.format(d=models) for a in argv])
    assert code == 130 and "interrupted" in err and "Traceback" not in err, err
    assert target.read_bytes() == OLD
    assert leftovers(models) == []
    assert not list(models.glob("out.part*")) and not list(models.glob("out.partitions.json"))


def test_cli_error_while_writing_is_one_line(models, monkeypatch):
    target = models / "out.nnapi"
    target.write_bytes(OLD)
    interrupt_at(monkeypatch, "fsync", OSError)
    code, err = run_cli_argv(["convert", str(models / "float.tflite"), "-o", str(target)])
    assert code == 3 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert target.read_bytes() == OLD and leftovers(models) == []


@pytest.mark.parametrize("argv", [
    ["convert", "{d}/bad.tflite", "-o", "{d}/out.nnapi"],
    ["convert", "{d}/custom.tflite", "-o", "{d}/out.nnapi"],  # unsupported node: exit 2, nothing written
    ["coverage", "{d}/bad.tflite", "-o", "{d}/out.txt"],
    ["inspect", "{d}/bad.tflite", "-o", "{d}/out.txt"],
])
def test_cli_failure_leaves_existing_output_alone(models, argv):
    target = Path(argv[argv.index("-o") + 1].format(d=models))
    target.write_bytes(OLD)
    code, err = run_cli_argv([a.format(d=models) for a in argv])
    assert code in (2, 3) and err, err
    assert target.read_bytes() == OLD and leftovers(models) == []


def test_partial_convert_failing_midway_removes_the_partitions_it_wrote(models, monkeypatch):
    """--partial writes several files: all of them, or none."""
    from converters.tflite.authoring import GraphBuilder
    g = GraphBuilder()
    a = g.input("a", [2, 2])
    t1, t2, t3, out = (g.tensor(n, [2, 2]) for n in ("t1", "t2", "t3", "out"))
    g.op("ADD", [a, a], [t1], "AddOptions")
    g.op("CUSTOM", [t1], [t2])                # no converter: splits the graph in two partitions
    g.op("MUL", [t2, a], [t3], "MulOptions")
    g.op("SUB", [t3, a], [out], "SubOptions")
    g.output(out)
    (models / "split.tflite").write_bytes(g.finish())
    calls = []
    real = serialize.atomic_write

    def second_write_fails(path, data):
        calls.append(Path(path).name)
        if len(calls) == 2:
            raise OSError("disk full")
        real(path, data)
    monkeypatch.setattr(serialize, "atomic_write", second_write_fails)
    code, err = run_cli_argv(["convert", str(models / "split.tflite"), "--partial", "-o", str(models / "s.nnapi")])
    if len(calls) < 2:
        pytest.fail(f"expected two partition files, the CLI wrote {calls} ({err})")
    assert code == 3 and "disk full" in err, err
    assert not list(models.glob("s.part*")) and not (models / "s.partitions.json").exists()
    assert leftovers(models) == []


# -- a real kill, at a random moment, of a process writing in a loop ------------------------

WRITER = """
import sys, numpy as np, nnapi
from nnapi import OperandCode as C, OperandType, OperationCode as Op
m = nnapi.Model()
big = m.add_operand(OperandType(C.TENSOR_FLOAT32, [1024, 1024]))
x = m.add_operand(OperandType(C.TENSOR_FLOAT32, [1024, 1024]))
f = m.add_operand(OperandType(C.INT32))
y = m.add_operand(OperandType(C.TENSOR_FLOAT32, [1024, 1024]))
m.set_operand_value(big, np.full((1024, 1024), 3.0, np.float32))
m.set_operand_value(f, np.int32(0))
m.add_operation(Op.ADD, [x, big, f], [y])
m.identify_inputs_and_outputs([x], [y])
m.finish()
print("ready", flush=True)
while True:
    nnapi.save(m, sys.argv[1])
"""


def test_killed_writer_never_leaves_a_half_written_file(tmp_path):
    target = tmp_path / "m.nnapi"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rng = np.random.default_rng(5)
    for attempt in range(3):
        p = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE, env=env)
        assert p.stdout.readline().strip() == b"ready"
        time.sleep(0.05 + float(rng.random()) * 0.3)
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
        if target.exists():  # it is always a complete, valid file
            m = nnapi.load(target)
            assert float(m.operands[0].value[0, 0]) == 3.0
        for tmp in tmp_path.glob(".*.tmp"):  # a SIGKILL can leave the temporary file; never the target
            tmp.unlink()
