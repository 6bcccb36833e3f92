"""The per-operation exactness sweep covers every quantized NNAPI operation the TFLite converters can emit.

Emittable: every OperationCode the converter modules name (`Op.X` in converters/tflite, converters/onnx and
the shared converters/*.py) whose spec (nnapi/ops) accepts TENSOR_QUANT8_ASYMM or TENSOR_QUANT8_ASYMM_SIGNED operands.
Covered: the NNAPI operations with a quant8 operand in the conversions of the sweep's single-operation models
(each sweep test is run with its comparison replaced by a recorder of what the conversion emitted)."""
import itertools
import re
from pathlib import Path

from nnapi import OperandCode as C, OperationCode as Op
from nnapi.ops import SPECS

from . import test_quant_exact as arithmetic, test_quant_exact_select as selection

QUANT8 = {C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED}
ROOT = Path(__file__).resolve().parents[3] / "converters"
SWEEP = (arithmetic, selection)


def _takes_quant8(spec) -> bool:
    if any(code in QUANT8 for case in spec.type_cases for _, code in case.binding):
        return True
    return any(a.type in QUANT8 or set(a.types or ()) & QUANT8 for f in spec.forms for a in f.inputs + f.outputs)


def emittable() -> set:
    files = list((ROOT / "tflite").rglob("*.py")) + list((ROOT / "onnx").rglob("*.py")) + list(ROOT.glob("*.py"))
    named = set().union(*(re.findall(r"\bOp\.([A-Z0-9_]+)", f.read_text()) for f in files))
    return {n for n in named if n in Op.__members__ and Op[n] in SPECS and _takes_quant8(SPECS[Op[n]])}


def _quantized_ops(data: bytes) -> set:
    from converters.tflite import convert
    result = convert(data, feature_level=8, partial=True)
    models = [result.model] if result.model is not None else [p.model for p in result.partitions]
    return {op.code.name for m in models for op in m.operations
            if any(i >= 0 and m.operands[i].type.code in QUANT8 for i in list(op.inputs) + list(op.outputs))}


def _calls(fn):
    """Keyword arguments for a sweep test: every distinct operation of an "op" parameter, the first value of
    the others (the operations emitted do not depend on the quantization case)."""
    axes = []
    for mark in getattr(fn, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names = [n.strip() for n in mark.args[0].split(",")] if isinstance(mark.args[0], str) else list(mark.args[0])
        values = [v if len(names) > 1 else (v,) for v in mark.args[1]]
        if "op" in names:
            k = names.index("op")
            values = list({v[k]: v for v in reversed(values)}.values())
        else:
            values = values[:1]
        axes.append([dict(zip(names, v)) for v in values])
    for combo in itertools.product(*axes):
        yield {k: v for part in combo for k, v in part.items()}


def covered(monkeypatch) -> set:
    seen: set = set()

    def record(data, *args, **kwargs):
        seen.update(_quantized_ops(data))
        return 0

    for module in SWEEP:
        monkeypatch.setattr(module, "differences", record)
    for module in SWEEP:
        for name, fn in vars(module).items():
            if name.startswith("test_") and callable(fn) and fn.__module__ == module.__name__:
                for kwargs in _calls(fn):
                    fn(**kwargs)
    return seen


# NNAPI operations the converters emit only on other types, each with where that is decided
NOT_QUANTIZED = {
    "CAST": "converters/tflite/ops/unary_convert.py, detection.py, the ONNX Cast: float / int32 values only",
}


def test_every_quantized_operation_the_converters_emit_has_an_exactness_case(monkeypatch):
    need = emittable()
    assert {"CONV_2D", "EQUAL", "ARGMAX", "QUANTIZED_LSTM"} <= need   # the derivation finds what it should
    have = covered(monkeypatch)
    missing = sorted(need - have - set(NOT_QUANTIZED))
    assert not missing, f"quantized NNAPI operations without an exactness case: {missing}"
    assert not set(NOT_QUANTIZED) & have, "an operation listed as float-only is emitted quantized"
