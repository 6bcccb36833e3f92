"""nnapi runs models through the backend a package registers (nnapi/backend.py), never by importing one."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "samples" / "demo.nnapi"


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_without_any_backend_finish_is_bad_state_naming_the_fix():
    # (no registration and no advertised entry point: nnapi.backend._advertised finds nothing)
    r = _python(f"import nnapi, sys\nimport nnapi.backend as b\nb._advertised = lambda: None\n"
                f"c = nnapi.Compilation(nnapi.load({str(DEMO)!r}))\n"
                "try:\n    c.finish()\nexcept nnapi.NnapiError as e:\n    print(e.code.name, e)\n"
                "print(sorted(m for m in sys.modules if m.split('.')[0] == 'executor'))")
    assert r.returncode == 0, r.stderr
    first, loaded = r.stdout.splitlines()
    assert first.startswith("BAD_STATE") and "import executor" in first
    assert loaded == "[]"  # nnapi imported no part of the executor


def _advertised_backends() -> list:
    from importlib.metadata import entry_points
    return [e.name for e in entry_points(group="nnapi.backends")]


@pytest.mark.skipif("numpy" not in _advertised_backends(),
                    reason="the package is not installed (pip install -e .), so its nnapi.backends entry point is not")
def test_import_nnapi_alone_runs_a_model_through_the_advertised_backend():
    r = _python("import numpy as np, nnapi, sys\n"
                "before = [m for m in sys.modules if m.split('.')[0] == 'executor']\n"
                f"m = nnapi.load({str(DEMO)!r})\nc = nnapi.Compilation(m)\nc.finish()\n"
                "ex = nnapi.Execution(c)\n"
                "for k, i in enumerate(m.inputs):\n"
                "    ex.set_input(k, np.ones(m.operands[i].type.dimensions, m.operands[i].type.dtype))\n"
                "o = m.operands[m.outputs[0]].type\ny = np.zeros(o.dimensions, o.dtype)\nex.set_output(0, y)\n"
                "ex.compute()\nprint(before, 'executor' in sys.modules, bool(np.isfinite(y).all()))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["[]", "True", "True"]  # loaded at finish(), not by `import nnapi`


def test_importing_executor_registers_it():
    r = _python("import numpy as np, nnapi, executor\n"
                f"m = nnapi.load({str(DEMO)!r})\nc = nnapi.Compilation(m)\nc.finish()\n"
                "ex = nnapi.Execution(c)\n"
                "for k, i in enumerate(m.inputs):\n"
                "    ex.set_input(k, np.ones(m.operands[i].type.dimensions, m.operands[i].type.dtype))\n"
                "o = m.operands[m.outputs[0]].type\ny = np.zeros(o.dimensions, o.dtype)\nex.set_output(0, y)\n"
                "ex.compute()\nprint(y.reshape(-1)[:2])")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip()
