"""What pyproject.toml declares matches what the code imports where it is installed."""
import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_every_extra_with_onnxruntime_declares_sympy():
    # ONNX shape resolution uses onnxruntime's symbolic shape inference (converters/onnx/shapes.py),
    # which imports sympy; onnxruntime's wheel does not require it, so without it shapes silently resolve less
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    with_ort = {name for name, reqs in extras.items() if "onnxruntime" in _names(reqs)}
    assert with_ort >= {"runtimes", "test", "all"}
    assert not [name for name in with_ort if "sympy" not in _names(extras[name])]


def test_symbolic_shape_inference_loads_where_the_test_extra_is_installed():
    from converters.onnx.shapes import _symbolic_module
    assert _symbolic_module() is not None
