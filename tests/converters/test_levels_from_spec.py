"""Converters ask the op specs which feature level offers an operation (ConversionContext.has / require /
level_of, nnapi.ops.level_for) instead of writing levels down: no converter module compares a level with
a number literal, passes one as a level, or defines a level constant from one."""
import ast
from pathlib import Path

from nnapi import OperandCode as C, OperationCode as Op
from nnapi.ops import SPECS, level_for

ROOT = Path(__file__).resolve().parents[2]
# not rules about operations: the delegate lens models LiteRT's own checks per Android release, and the
# export maps feature levels to Android API levels (both data tables)
EXEMPT = {ROOT / "converters" / "export" / "names.py"} | set((ROOT / "converters" / "lenses").rglob("*.py"))


def _levelish(node) -> bool:
    if isinstance(node, ast.Attribute):
        return "level" in node.attr.lower()
    if isinstance(node, ast.Name):
        return "level" in node.id.lower()
    return isinstance(node, ast.Call) and _levelish(node.func)


def _int(node) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def literal_levels(source: str) -> list:
    """(line, what) for every level written as a number: comparisons with a level, level arguments and
    keywords, Unsupported(..., level) and *_LEVEL constants. A target's default (feature_level=8) is not a rule."""
    found = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Compare):
            sides = [n.left, *n.comparators]
            if any(map(_levelish, sides)) and any(map(_int, sides)):
                found.append((n.lineno, "comparison"))
        elif isinstance(n, ast.Call):
            fname = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
            if "level" in fname.lower() and any(map(_int, n.args)):
                found.append((n.lineno, f"{fname}(<number>)"))
            if fname == "Unsupported" and len(n.args) >= 3 and _int(n.args[2]):
                found.append((n.lineno, "Unsupported level"))
            found += [(n.lineno, f"{k.arg}=<number>") for k in n.keywords
                      if k.arg and "level" in k.arg.lower() and k.arg != "feature_level" and _int(k.value)]
        elif isinstance(n, ast.Assign) and _int(n.value) or isinstance(n, ast.Assign) and \
                isinstance(n.value, ast.IfExp) and (_int(n.value.body) or _int(n.value.orelse)):
            found += [(n.lineno, "level constant") for t in n.targets
                      if isinstance(t, ast.Name) and "level" in t.id.lower() and t.id != "level"]
    return found


def test_no_converter_module_writes_a_feature_level_down():
    bad = []
    for path in sorted((ROOT / "converters").rglob("*.py")):
        if path not in EXEMPT:
            bad += [f"{path.relative_to(ROOT)}:{line}: {what}" for line, what in literal_levels(path.read_text())]
    assert not bad, "levels written as numbers (ask the spec: ctx.has / ctx.require / level_for):\n" + "\n".join(bad)


def test_the_scan_finds_each_kind():
    src = ("if ctx.feature_level >= 6:\n    pass\nctx.require_level(4, 'x')\nUnsupported(R, 'y', 3)\n"
           "PACK_LEVEL = 6\npad_level = 3 if q else 2\nf(x, int32_level=7)\nconvert(p, feature_level=8)\n")
    assert sorted(literal_levels(src)) == [(1, "comparison"), (3, "require_level(<number>)"), (4, "Unsupported level"),
                                           (5, "level constant"), (6, "level constant"), (7, "int32_level=<number>")]


def test_level_for_reads_the_type_cases():
    # levels from the NDK's NeuralNetworks.h operation documentation
    assert level_for(Op.PACK) == 6 and level_for(Op.MIRROR_PAD) == 7 and level_for(Op.WHILE) == 4
    assert level_for(Op.RESHAPE, T=C.TENSOR_FLOAT32) == 1
    assert level_for(Op.RESHAPE, T=C.TENSOR_INT32) == 6          # int32 RESHAPE from Android 13 (level 6)
    assert level_for(Op.ADD, T=C.TENSOR_INT32) == 4
    assert level_for(Op.RSQRT, T=C.TENSOR_QUANT8_ASYMM) == 7
    assert level_for(Op.FILL, T=C.TENSOR_QUANT8_ASYMM) is None   # FILL takes float and int32 only


def test_argument_level():
    assert SPECS[Op.UNIDIRECTIONAL_SEQUENCE_LSTM].argument_level("output_state_out") == 4
    assert SPECS[Op.UNIDIRECTIONAL_SEQUENCE_LSTM].argument_level("input") == 3
