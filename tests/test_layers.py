"""The layering of DESIGN.md: nnapi imports only the standard library and numpy;
executor imports nnapi (never converters); framework packages only in converters."""
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORKS = {"tflite", "onnx", "onnxruntime", "ai_edge_litert", "tensorflow", "flatbuffers", "google"}


def imported_roots(path: Path) -> set:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def package_imports(pkg: str) -> dict:
    return {p: imported_roots(p) for p in (ROOT / pkg).rglob("*.py")}


def test_nnapi_uses_only_stdlib_and_numpy():
    for path, roots in package_imports("nnapi").items():
        bad = {r for r in roots if r not in sys.stdlib_module_names and r not in {"numpy", "nnapi"}}
        assert not bad, f"{path}: imports {bad}"


def test_executor_uses_only_nnapi_numpy_and_stdlib():
    for path, roots in package_imports("executor").items():
        bad = {r for r in roots if r not in sys.stdlib_module_names and r not in {"numpy", "nnapi", "executor"}}
        assert not bad, f"{path}: imports {bad}"


def test_framework_imports_live_only_in_converters():
    for pkg in ("nnapi", "executor", "samples"):
        for path, roots in package_imports(pkg).items():
            if pkg == "samples" and path.name.startswith("make_"):
                continue  # the scripts that author the samples use onnx.helper / LiteRT's schema
            assert not roots & FRAMEWORKS, f"{path}: imports {roots & FRAMEWORKS}"
