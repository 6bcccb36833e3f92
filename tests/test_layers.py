"""The layering of docs/architecture.md: nnapi imports only the standard library and numpy (it gets its
execution backend through nnapi/backend.py, which the executor registers with); executor imports nnapi
(never converters); framework packages only in converters; within converters only running.py reaches the
executor, and nothing imports the command line (converters/cli.py). String imports (importlib.import_module,
__import__) count like import statements."""
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORKS = {"tflite", "onnx", "onnxruntime", "ai_edge_litert", "tensorflow", "flatbuffers", "google"}
STRING_IMPORTS = {"import_module", "__import__"}


def _module_name(path: Path) -> str:
    rel = (path.relative_to(ROOT) if path.is_relative_to(ROOT) else Path(path.name)).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _package(path: Path) -> str:
    name = _module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _resolve_relative(path: Path, level: int, module: str | None) -> str:
    base = _package(path).split(".")
    base = base[:len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([module] if module else []))


def _string_import(node: ast.Call, path: Path, aliases: dict) -> str | None:
    """The module a call of importlib.import_module / __import__ names: a literal, or an f-string that
    starts with `{__name__}` or `{m.__name__}` (m a module this file imported). '?' when it cannot be told."""
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    if name not in STRING_IMPORTS or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.FormattedValue):
        head = arg.values[0].value
        if isinstance(head, ast.Name) and head.id == "__name__":
            return _module_name(path)
        if isinstance(head, ast.Attribute) and head.attr == "__name__" and isinstance(head.value, ast.Name):
            return aliases.get(head.value.id, "?")
    return "?"


def imported_modules(path: Path) -> set:
    """Every module `path` imports, absolute (relative imports resolved), string imports included."""
    tree = ast.parse(path.read_text(), str(path))
    mods, aliases = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                mods.add(a.name)
                aliases[(a.asname or a.name).split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_relative(path, node.level, node.module) if node.level else node.module
            mods.add(base)
            for a in node.names:
                aliases[a.asname or a.name] = f"{base}.{a.name}"
                if a.name != "*":   # `from converters import cli` imports the module converters.cli
                    mods.add(f"{base}.{a.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            target = _string_import(node, path, aliases)
            if target is not None:
                mods.add(target)
    return mods


def imported_roots(path: Path) -> set:
    return {m.split(".")[0] for m in imported_modules(path)}


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


def test_only_the_running_module_reaches_the_executor():
    for path, roots in package_imports("converters").items():
        if path == ROOT / "converters" / "running.py":
            continue
        assert "executor" not in roots, f"{path}: imports the executor (go through converters/running.py)"


def test_nothing_imports_the_command_line():
    for pkg in ("converters", "nnapi", "executor", "samples"):
        for path in (ROOT / pkg).rglob("*.py"):
            if path == ROOT / "converters" / "cli.py":
                continue
            bad = {m for m in imported_modules(path) if m == "converters.cli" or m.startswith("converters.cli.")}
            assert not bad, f"{path}: imports the command line {bad} (library code raises library errors)"


def test_imports_inside_functions_and_from_a_package_count(tmp_path):
    # a lazy `from converters import cli` in a function body is an import of converters.cli
    lazy = tmp_path / "lazy.py"
    lazy.write_text("def _cli():\n    from converters import cli\n    return cli\n\n\n"
                    "def _run():\n    from ..converters import cli as c\n    return c\n")
    assert "converters.cli" in imported_modules(lazy)
    assert {"converters", "converters.cli"} <= imported_modules(lazy)


def test_samples_hold_data_and_the_scripts_that_make_it():
    for path in (ROOT / "samples").glob("*.py"):
        assert path.name == "__init__.py" or path.name.startswith("make_"), \
            f"{path}: samples/ holds sample data and the make_* scripts only"


def test_string_imports_are_seen(tmp_path):
    """The checks above see importlib.import_module / __import__ (a layer test that cannot see them
    passes whatever they import); one they cannot resolve is '?', which no layer allows."""
    p = tmp_path / "probe.py"
    p.write_text("import importlib\nfrom . import kernels\nimportlib.import_module('executor.runtime')\n"
                 "__import__('onnx')\nimportlib.import_module(f'{__name__}.sub')\nimportlib.import_module(name)\n"
                 "importlib.import_module(f'{kernels.__name__}.conv')\n")
    assert imported_modules(p) >= {"executor.runtime", "onnx", "?", "probe"}
    p.write_text("import importlib\nfrom executor import kernels\nimportlib.import_module(f'{kernels.__name__}.x')\n")
    assert imported_modules(p) == {"importlib", "executor", "executor.kernels"}
