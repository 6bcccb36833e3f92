"""NNAPI model validation, the AOSP way (TestValidateOperations): take a valid model of every
operation type, make invalid variants of it, and require `Model.finish()` to reject each with
NnapiError BAD_DATA and a message naming the operation.

The valid models are CTS conformance cases: for every (operation type, type of the first
input) the smallest single-operation case that is not expectFailure, pinned in
invalid_model_cases.json.gz (regenerate: `python -m tests.robustness.test_invalid_models`),
plus hand-made cases for the feature-level 6/7 operations that have no CTS vectors.

Variants (each applied to the operation of the main model):
  extra_input     the first input appended once more at the end
  missing_input   the last input removed (not generated when that input is optional)
  input_type      the first input's operand type changed (TENSOR_BOOL8, or TENSOR_FLOAT32 for bool)
  param_type      the first INT32 scalar parameter made FLOAT32 (or FLOAT32 -> INT32, BOOL -> INT32)
  input_rank      the first input given rank 7 (trailing extents of 1)
  output_rank     output 0 given one more dimension (extent 1)
  output_extent   output 0's last extent + 1, for operations whose output shape follows from the
                  input shapes (same-shape and broadcasting operations, convolutions, FC)
  quantization    quantized cases: the output zero point changed where the output must share the
                  input's quantization; the bias scale doubled for convolutions / FC

One test per (operation, variant) covers every case of that operation. Variants that are valid
models after all are listed in VALID with the reason, and tested to be accepted. Variants a spec
of another engineer's family does not reject yet (in at least one case) are in SPEC_GAPS and
marked xfail(strict=True) with "spec gap: <what>", so fixing the spec turns them into failures
until the entry is removed.
"""
from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest

import nnapi
from executor.conformance import build_model
from nnapi import NnapiError, ResultCode
from nnapi.ops import SPECS

HERE = Path(__file__).resolve().parent
CASES_FILE = HERE / "invalid_model_cases.json.gz"

SAME_SHAPE_OPS = {
    # output shape = shape of the first input (NNAPI docs: "Outputs: ... same shape as input0")
    "ABS", "CAST", "DEQUANTIZE", "ELU", "EXP", "FLOOR", "HARD_SWISH", "L2_NORMALIZATION", "LOCAL_RESPONSE_NORMALIZATION",
    "LOG", "LOGICAL_NOT", "LOGISTIC", "LOG_SOFTMAX", "NEG", "QUANTIZE", "RELU", "RELU1", "RELU6", "RSQRT", "SIN",
    "SOFTMAX", "SQRT", "TANH", "INSTANCE_NORMALIZATION", "CHANNEL_SHUFFLE",
}
BROADCAST_OPS = {"ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "POW", "PRELU", "LOGICAL_AND", "LOGICAL_OR",
                 "EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL", "SELECT"}
SHAPE_FROM_WEIGHTS_OPS = {"CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D", "FULLY_CONNECTED"}
OUTPUT_EXTENT_OPS = SAME_SHAPE_OPS | BROADCAST_OPS | SHAPE_FROM_WEIGHTS_OPS

# NNAPI docs: the output's scale and zero point must be the input's
SAME_QUANT_OPS = {
    "BATCH_TO_SPACE_ND", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "SPACE_TO_BATCH_ND", "RESHAPE", "SQUEEZE",
    "TRANSPOSE", "MAX_POOL_2D", "AVERAGE_POOL_2D", "L2_POOL_2D", "GATHER", "STRIDED_SLICE", "SLICE", "PAD",
    "PAD_V2", "TILE", "SPLIT", "REDUCE_MAX", "REDUCE_MIN", "TOPK_V2", "EMBEDDING_LOOKUP", "HASHTABLE_LOOKUP",
    "CHANNEL_SHUFFLE", "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR", "EXPAND_DIMS", "MAXIMUM", "MINIMUM",
    "RELU", "RELU1", "RELU6", "PACK", "MIRROR_PAD", "REVERSE",
}
BIAS_OPS = {"CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D", "TRANSPOSE_CONV_2D", "FULLY_CONNECTED"}
QUANT8 = {"TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"}

# (operation, variant) -> why the "invalid" variant is a valid model (checked: finish() accepts it)
VALID = {
    ("RANK", "input_rank"): "RANK takes a tensor of any rank (its output is a scalar)",
    ("RANK", "input_type"): "RANK takes TENSOR_BOOL8 (and every other tensor type)",
    ("MAXIMUM", "quantization"): "the NNAPI docs let MAXIMUM's output scale and zero point differ from the inputs'",
    ("MINIMUM", "quantization"): "the NNAPI docs let MINIMUM's output scale and zero point differ from the inputs'",
}

# (operation, variant) -> what the spec misses (none at present: every generated variant is rejected)
SPEC_GAPS: dict = {}


# -- the valid models --------------------------------------------------------------

def select_cases(cts_dir: Path) -> list[dict]:
    """The smallest valid single-operation CTS case per (operation, first input type)."""
    from executor.conformance import find_vector_files, read_cases
    best: dict = {}
    for path in find_vector_files([str(cts_dir)]):
        for c in read_cases(path):
            main = c["main"]
            if c.get("expectFailure") or len(main["operations"]) != 1:
                continue
            op = main["operations"][0]
            key = (op["type"], main["operands"][op["inputs"][0]]["type"])
            size = len(json.dumps(c))
            if key not in best or size < best[key][0]:
                best[key] = (size, c)
    return [best[k][1] for k in sorted(best)]


def _operand(type_, dims, value=None, lifetime=None, scale=0.0, zp=0):
    o = {"type": type_, "dimensions": list(dims), "scale": scale, "zeroPoint": zp, "channelQuant": None,
         "lifetime": lifetime or ("CONSTANT_COPY" if value is not None else "TEMPORARY_VARIABLE")}
    if value is not None:
        o["value"] = value
    return o


def _case(name, operands, op, inputs, outputs, model_in, model_out):
    return {"id": f"handmade/{name}", "name": name, "main": {
        "operands": operands, "operations": [{"type": op, "inputs": inputs, "outputs": outputs}],
        "inputIndexes": model_in, "outputIndexes": model_out}, "referenced": []}


def handmade_cases() -> list[dict]:
    """Valid models of the operations without CTS vectors (feature levels 6 and 7)."""
    f32 = "TENSOR_FLOAT32"
    q8 = dict(scale=0.5, zp=3)
    return [
        _case("batch_matmul_float", [_operand(f32, [2, 3, 4]), _operand(f32, [2, 4, 5]), _operand(f32, [2, 3, 5])],
              "BATCH_MATMUL", [0, 1], [2], [0, 1], [2]),
        _case("batch_matmul_quant8_signed",
              [_operand("TENSOR_QUANT8_ASYMM_SIGNED", [3, 4], **q8), _operand("TENSOR_QUANT8_ASYMM_SIGNED", [4, 5], **q8),
               _operand("TENSOR_QUANT8_ASYMM_SIGNED", [3, 5], scale=2.0, zp=0)],
              "BATCH_MATMUL", [0, 1], [2], [0, 1], [2]),
        _case("pack_float", [_operand("INT32", [], [1]), _operand(f32, [2, 3]), _operand(f32, [2, 3]),
                             _operand(f32, [2, 2, 3])], "PACK", [0, 1, 2], [3], [1, 2], [3]),
        _case("pack_quant8", [_operand("INT32", [], [0]), _operand("TENSOR_QUANT8_ASYMM", [2, 3], **q8),
                              _operand("TENSOR_QUANT8_ASYMM", [2, 3], **q8),
                              _operand("TENSOR_QUANT8_ASYMM", [2, 2, 3], **q8)], "PACK", [0, 1, 2], [3], [1, 2], [3]),
        _case("mirror_pad_float", [_operand(f32, [2, 3]), _operand("TENSOR_INT32", [2, 2], [1, 1, 2, 2]),
                                   _operand("INT32", [], [0]), _operand(f32, [4, 7])],
              "MIRROR_PAD", [0, 1, 2], [3], [0], [3]),
        _case("mirror_pad_quant8", [_operand("TENSOR_QUANT8_ASYMM", [2, 3], **q8),
                                    _operand("TENSOR_INT32", [2, 2], [0, 1, 1, 0]), _operand("INT32", [], [1]),
                                    _operand("TENSOR_QUANT8_ASYMM", [3, 4], **q8)],
              "MIRROR_PAD", [0, 1, 2], [3], [0], [3]),
        _case("reverse_float", [_operand(f32, [2, 3]), _operand("TENSOR_INT32", [1], [1]), _operand(f32, [2, 3])],
              "REVERSE", [0, 1], [2], [0], [2]),
        _case("reverse_int32", [_operand("TENSOR_INT32", [4]), _operand("TENSOR_INT32", [1], [0]),
                                _operand("TENSOR_INT32", [4])], "REVERSE", [0, 1], [2], [0], [2]),
    ]


def valid_cases() -> list[dict]:
    with gzip.open(CASES_FILE, "rt") as f:
        return json.load(f) + handmade_cases()


# -- variants ---------------------------------------------------------------------

def _main_op(case):
    main = case["main"]
    return main, main["operations"][0], main["operands"]


def _count(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def _retype(o, new_type):
    o["type"], o["scale"], o["zeroPoint"], o["channelQuant"] = new_type, 0.0, 0, None
    o.pop("channelQuantHidden", None)
    if o["lifetime"] == "SUBGRAPH" or new_type.startswith("TENSOR") and not o["dimensions"]:
        o["dimensions"] = [1]
    if o["lifetime"] == "SUBGRAPH":
        o["lifetime"] = "CONSTANT_COPY"
    if o["lifetime"] in ("CONSTANT_COPY", "CONSTANT_REFERENCE"):
        n = _count(o["dimensions"]) if new_type.startswith("TENSOR") else 1
        o["value"] = [False] * n if "BOOL" in new_type else [0] * n


def extra_input(case):
    main, op, opnds = _main_op(case)
    op["inputs"].append(op["inputs"][0])
    return case


def _last_input_optional(code, n_inputs: int) -> bool:
    """Whether some form of the spec lets the last of `n_inputs` inputs be left out (the NDK's optional inputs)."""
    spec = SPECS.get(code)
    if spec is None:
        return False
    for form in spec.forms:
        args = form.inputs
        if any(a.repeated for a in args):
            continue
        if n_inputs - 1 < len(args) and args[n_inputs - 1].optional:
            return True
    return False


def missing_input(case):
    main, op, opnds = _main_op(case)
    if _last_input_optional(nnapi.OperationCode[op["type"]], len(op["inputs"])):
        return None
    op["inputs"].pop()
    return case


def input_type(case):
    main, op, opnds = _main_op(case)
    o = opnds[op["inputs"][0]]
    _retype(o, "TENSOR_FLOAT32" if o["type"] == "TENSOR_BOOL8" else "TENSOR_BOOL8")
    if o["type"] == "TENSOR_FLOAT32" and not o["dimensions"]:
        o["dimensions"] = [1]
    return case


def param_type(case):
    main, op, opnds = _main_op(case)
    for old, new in (("INT32", "FLOAT32"), ("FLOAT32", "INT32"), ("BOOL", "INT32")):
        for i in op["inputs"][1:]:
            o = opnds[i]
            if o["type"] == old and o["lifetime"] != "NO_VALUE":
                o["type"] = new
                if "value" in o:
                    o["value"] = [float(v) if new == "FLOAT32" else int(v) for v in o["value"]]
                return case
    return None


def input_rank(case):
    main, op, opnds = _main_op(case)
    o = opnds[op["inputs"][0]]
    if not o["type"].startswith("TENSOR") or not o["dimensions"]:
        return None
    o["dimensions"] = o["dimensions"] + [1] * max(1, 7 - len(o["dimensions"]))
    return case


def output_rank(case):
    main, op, opnds = _main_op(case)
    o = opnds[op["outputs"][0]]
    if not o["type"].startswith("TENSOR") or not o["dimensions"]:
        return None
    o["dimensions"] = o["dimensions"] + [1]
    return case


def output_extent(case):
    main, op, opnds = _main_op(case)
    if op["type"] not in OUTPUT_EXTENT_OPS:
        return None
    o = opnds[op["outputs"][0]]
    if not o["dimensions"] or not o["dimensions"][-1]:
        return None
    o["dimensions"][-1] += 1
    return case


def quantization(case):
    main, op, opnds = _main_op(case)
    first, out = opnds[op["inputs"][0]], opnds[op["outputs"][0]]
    if first["type"] not in QUANT8:
        return None
    if op["type"] in BIAS_OPS:
        flt, bias = opnds[op["inputs"][1]], opnds[op["inputs"][2]]
        if flt["type"] == "TENSOR_QUANT8_SYMM_PER_CHANNEL":
            return None
        bias["scale"] *= 2
        return case
    if op["type"] not in SAME_QUANT_OPS or out["type"] not in QUANT8:
        return None
    out["zeroPoint"] += 1 if out["zeroPoint"] < 127 else -1
    return case


VARIANTS = {f.__name__: f for f in (extra_input, missing_input, input_type, param_type, input_rank,
                                    output_rank, output_extent, quantization)}


def generate():
    """(test id, operation name, variant name, mutated case) for every applicable variant."""
    out = []
    for case in valid_cases():
        op = case["main"]["operations"][0]["type"]
        for name, fn in VARIANTS.items():
            mutated = fn(copy.deepcopy(case))
            if mutated is not None:
                out.append((f"{case['name']}-{name}", op, name, mutated))
    return out


GENERATED = generate()


def _groups(kind):
    """One test per (operation, variant): every case of that operation must give the outcome."""
    groups: dict = {}
    for test_id, op, variant, case in GENERATED:
        if ((op, variant) in VALID) == (kind == "valid"):
            groups.setdefault((op, variant), []).append((test_id, case))
    params = []
    for (op, variant), cases in sorted(groups.items()):
        marks = []
        if kind == "invalid" and (op, variant) in SPEC_GAPS:
            marks.append(pytest.mark.xfail(reason=f"spec gap: {SPEC_GAPS[(op, variant)]}", strict=True))
        params.append(pytest.param(op, cases, id=f"{op}-{variant}", marks=marks))
    return params


@pytest.mark.parametrize("op,cases", _groups("invalid"))
def test_invalid_variant_is_rejected(op, cases):
    wrong = []
    for test_id, case in cases:
        try:
            build_model(case, [])
            wrong.append(f"{test_id}: accepted")
        except NnapiError as e:
            if e.code != ResultCode.BAD_DATA or f"({op})" not in e.message:
                wrong.append(f"{test_id}: {e}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("op,cases", _groups("valid"))
def test_documented_valid_variant_is_accepted(op, cases):
    for test_id, case in cases:
        assert build_model(case, []).finished, test_id


def test_every_valid_case_builds():
    """The starting points are valid: every selected case and hand-made case passes finish()."""
    for case in valid_cases():
        assert build_model(copy.deepcopy(case), []).finished, case["id"]


def test_every_operation_with_a_spec_is_covered():
    covered = {c["main"]["operations"][0]["type"] for c in valid_cases()}
    missing = sorted(code.name for code in SPECS if code.name not in covered and code.name != "OEM_OPERATION")
    assert not missing, missing


def test_tables_name_generated_variants():
    """No stale entries: every VALID / SPEC_GAPS key is a variant that is generated."""
    generated = {(op, variant) for _, op, variant, _ in GENERATED}
    assert not set(VALID) - generated and not set(SPEC_GAPS) - generated, \
        (set(VALID) - generated, set(SPEC_GAPS) - generated)


if __name__ == "__main__":
    import sys
    cts = HERE.parent / "data" / "nnapi-cts"
    cases = select_cases(cts)
    with gzip.open(CASES_FILE, "wt") as f:
        json.dump(cases, f, separators=(",", ":"))
    print(f"wrote {len(cases)} cases to {CASES_FILE}", file=sys.stderr)
