"""The ONNX backend node test cases shipped with the onnx package, run through the ONNX importer and the
executor for every op the importer claims (every ONNX converter in the registry).

Each case is a one-node model with input and expected output data. A case either converts completely
and must match the expected outputs (float: 1e-5 + 1e-4 * max|ref|, NaN and inf positions equal;
integer and bool: exact; int64 outputs compare as the int32 NNAPI writes), or the converter reports it
Unsupported and it is listed in EXCLUDED below with the reason code; the test fails on any other
outcome, including a case that starts converting (update the table).

Inputs that real models carry as initializers are made initializers with the case's data before
conversion (NNAPI needs them as constants): int64 operands after the first (axes, shapes, repeats, K,
pads, ...) and the positions in PARAMETER_INPUTS (weights, quantization parameters, Clip bounds, Resize
scales, Range bounds). Multi-node cases (the *_expanded function bodies) are not run.

Every case onnx.checker accepts also runs as shipped (any domain, any number of nodes, run-time inputs
left inputs): converting it (whole and partial) and its coverage report never raise, coverage and convert
agree node by node, and a case that converts completely matches the expected outputs (rtol 1e-3,
atol 1e-7, NaN where the reference has NaN).

Per-op pass rates: `python -m tests.converters.onnx.test_backend_nodes` (add `--table` to print the
EXCLUDED table for the current converters).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from converters.onnx import convert
from tests.converters.onnx.harness import run_converted
from converters.registry import REGISTRY
from converters.tolerance import FLOAT32_ATOL, FLOAT32_RTOL

# op -> input positions made initializers (besides int64 inputs after the first)
PARAMETER_INPUTS = {
    "Conv": (1, 2), "ConvTranspose": (1, 2), "BatchNormalization": (1, 2, 3, 4), "Clip": (1, 2),
    "Resize": (1, 2, 3), "Pad": (2,), "QuantizeLinear": (1, 2), "DequantizeLinear": (1, 2),
    "QLinearConv": (1, 2, 3, 4, 5, 6, 7, 8), "QLinearMatMul": (1, 2, 4, 5, 6, 7), "Range": (0, 1, 2),
    "ConstantOfShape": (0,), "Gemm": (1, 2), "CumSum": (1,),
    "LSTM": (1, 2, 3, 4, 7), "GRU": (1, 2, 3, 4), "RNN": (1, 2, 3, 4),
}


@dataclass
class Outcome:
    name: str
    op: str
    status: str          # "passed", "failed" or "excluded"
    reason: str = ""     # reason code of an excluded case
    detail: str = ""


@lru_cache(maxsize=1)
def claimed_ops() -> frozenset:
    return frozenset(op for fmt, op in REGISTRY if fmt == "onnx")


@lru_cache(maxsize=1)
def cases() -> tuple:
    """The single-node backend cases of claimed standard-domain ops, by name."""
    import warnings

    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the case generators overflow casts on purpose
        found = collect_testcases(None)
    keep = []
    for c in found:
        nodes = c.model.graph.node
        if c.kind == "node" and len(nodes) == 1 and nodes[0].domain in ("", "ai.onnx") \
                and nodes[0].op_type in claimed_ops():
            keep.append(c)
    return tuple(sorted(keep, key=lambda c: c.name))


def _with_initializers(model: onnx.ModelProto, inputs: list) -> tuple[bytes, list]:
    """The model with parameter inputs turned into initializers; the remaining run-time inputs."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    node = m.graph.node[0]
    params = set(PARAMETER_INPUTS.get(node.op_type, ()))
    const_names = {name for k, name in enumerate(node.input) if name and k in params}
    runtime, keep = [], []
    for vi, value in zip(list(m.graph.input), inputs):
        pos = [k for k, n in enumerate(node.input) if n == vi.name]
        if isinstance(value, onnx.TensorProto):  # a type numpy lacks (float8, int4, bfloat16)
            proto = onnx.TensorProto()
            proto.CopyFrom(value)
            proto.name = vi.name
            if vi.name in const_names:
                m.graph.initializer.append(proto)
                continue
            value = numpy_helper.to_array(value)
        value = np.asarray(value) if isinstance(value, (np.ndarray, np.generic, int, float, bool)) else value
        plain = isinstance(value, np.ndarray) and value.dtype.kind in "biuf"  # not a sequence or optional
        if plain and (vi.name in const_names or (value.dtype == np.int64 and pos and min(pos) >= 1)):
            m.graph.initializer.append(numpy_helper.from_array(value, vi.name))
        else:
            keep.append(vi)
            runtime.append(value)
    del m.graph.input[:]
    m.graph.input.extend(keep)
    return m.SerializeToString(), runtime


def _compare(ref: np.ndarray, got: np.ndarray, rtol: float, atol: float) -> str:
    """'' when got matches ref, else what differs. Floats: within the project's tolerance or the case's own
    rtol/atol (onnx's backend criterion; some expected values are stored rounded to 4 digits)."""
    ref = np.asarray(ref)
    if got.size == ref.size:
        got = got.reshape(ref.shape)
    if got.shape != ref.shape:
        return f"shape {got.shape} != {ref.shape}"
    if ref.dtype.kind in "iub":
        bad = int((got.astype(np.int64) != ref.astype(np.int64)).sum())
        return f"{bad} integer values differ" if bad else ""
    r, g = ref.astype(np.float64), got.astype(np.float64)
    same = (r == g) | (np.isnan(r) & np.isnan(g))  # NaN and inf must be where the reference has them
    finite = np.isfinite(r) & ~same
    if (~same & ~finite).any():
        return "NaN/inf positions differ"
    if not finite.any():
        return ""
    diff = np.abs(r[finite] - g[finite])
    err = float(diff.max())
    allowed = FLOAT32_ATOL + FLOAT32_RTOL * float(np.abs(r[np.isfinite(r)]).max())
    if err <= allowed or (diff <= atol + rtol * np.abs(r[finite])).all():
        return ""
    return f"max |diff| {err:.3g} > {allowed:.3g}"


def run_case(case) -> Outcome:
    op = case.model.graph.node[0].op_type
    problems = []
    for inputs, expected in case.data_sets:
        data, runtime = _with_initializers(case.model, list(inputs))
        try:
            result = convert(data, feature_level=8)
        except Exception as e:  # noqa: BLE001 (the importer must report, not raise)
            return Outcome(case.name, op, "failed", detail=f"convert raised {type(e).__name__}: {e}")
        if not result.complete:
            u = result.unsupported[0]
            return Outcome(case.name, op, "excluded", u.reason_code, u.reason)
        try:
            got = run_converted(result, runtime)
        except Exception as e:  # noqa: BLE001 (a converted model that does not run is a failure)
            return Outcome(case.name, op, "failed", detail=f"executor: {type(e).__name__}: {e}")
        expected = [numpy_helper.to_array(e) if isinstance(e, onnx.TensorProto) else e for e in expected]
        for k, (ref, g) in enumerate(zip(expected, got)):
            diff = _compare(ref, np.asarray(g), case.rtol, case.atol)
            if diff:
                problems.append(f"output {k}: {diff}")
    return Outcome(case.name, op, "failed" if problems else "passed", detail="; ".join(problems))


@lru_cache(maxsize=1)
def run_all() -> tuple:
    return tuple(run_case(c) for c in cases())


def pass_rates(outcomes) -> dict:
    """op -> (passed, failed, excluded)."""
    rates: dict = {}
    for o in outcomes:
        p, f, e = rates.get(o.op, (0, 0, 0))
        rates[o.op] = (p + (o.status == "passed"), f + (o.status == "failed"), e + (o.status == "excluded"))
    return rates


def render(outcomes) -> str:
    lines = ["| op | cases | passed | failed | excluded | pass rate (convertible) |", "|---|---|---|---|---|---|"]
    for op, (p, f, e) in sorted(pass_rates(outcomes).items()):
        rate = f"{100 * p / (p + f):.0f}%" if p + f else "-"
        lines.append(f"| {op} | {p + f + e} | {p} | {f} | {e} | {rate} |")
    reasons: dict = {}
    for o in outcomes:
        if o.status == "excluded":
            reasons[o.reason] = reasons.get(o.reason, 0) + 1
    lines += ["", "excluded by reason: " + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))]
    return "\n".join(lines)


def test_every_convertible_case_matches():
    failed = [f"{o.name}: {o.detail}" for o in run_all() if o.status == "failed"]
    assert not failed, "\n".join(failed)


def test_excluded_cases_are_the_listed_ones():
    got = {o.name: o.reason for o in run_all() if o.status == "excluded"}
    stale = sorted(set(EXCLUDED) - set(got))
    assert not stale, f"these cases convert now: drop them from EXCLUDED: {stale}"
    unlisted = {k: v for k, v in got.items() if k not in EXCLUDED}
    assert not unlisted, f"newly excluded cases (fix the converter or list them): {unlisted}"
    changed = {k: (EXCLUDED[k][0], v) for k, v in got.items() if EXCLUDED[k][0] != v}
    assert not changed, f"reason codes changed (listed, now): {changed}"


@lru_cache(maxsize=1)
def valid_cases() -> tuple:
    """Every node case (any domain, any node count) that onnx.checker accepts, by name."""
    import warnings

    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = collect_testcases(None)
    keep = []
    for c in found:
        try:
            onnx.checker.check_model(c.model)
        except onnx.checker.ValidationError:
            continue
        if c.kind == "node":
            keep.append(c)
    return tuple(sorted(keep, key=lambda c: c.name))


def _matches(ref, got) -> str:
    """'' when got matches ref within onnx's backend criterion (rtol 1e-3, atol 1e-7), else what differs."""
    ref, got = np.asarray(ref), np.asarray(got)
    if got.size == ref.size:
        got = got.reshape(ref.shape)
    if got.shape != ref.shape:
        return f"shape {got.shape} != {ref.shape}"
    if ref.dtype.kind in "iub":
        return "" if np.array_equal(got.astype(np.int64), ref.astype(np.int64)) else "integers differ"
    r, g = ref.astype(np.float64), got.astype(np.float64)
    if np.allclose(g, r, rtol=1e-3, atol=1e-7, equal_nan=True):
        return ""
    finite = np.isfinite(r) & np.isfinite(g)
    return f"max |diff| {np.abs(r - g)[finite].max() if finite.any() else float('nan'):.3g}"


def check_as_shipped(case) -> str:
    """'' when the case behaves (see the module doc), else the problem."""
    import warnings

    from converters.coverage import build_report
    from converters.onnx import read
    data = case.model.SerializeToString()
    try:
        result = convert(data, feature_level=8)
        partial = convert(data, feature_level=8, partial=True)
        report = build_report(read(data), feature_level=8)
    except Exception as e:  # noqa: BLE001 (a valid model gets per-node refusals, never an exception)
        return f"raised {type(e).__name__}: {e}"
    verdicts = [n.supported for n in result.nodes]
    if [n["supported"] for n in report["nodes"]] != verdicts or [n.supported for n in partial.nodes] != verdicts:
        return "coverage, convert and convert --partial disagree"
    if not result.complete:
        return ""
    for inputs, expected in case.data_sets:
        inputs = [numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else x for x in inputs]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # inf/NaN inputs on purpose
                got = run_converted(result, inputs)
        except Exception as e:  # noqa: BLE001
            return f"executor: {type(e).__name__}: {e}"
        for k, (ref, g) in enumerate(zip(expected, got)):
            diff = _matches(numpy_helper.to_array(ref) if isinstance(ref, onnx.TensorProto) else ref, g)
            if diff:
                return f"output {k}: {diff}"
    return ""


def test_every_valid_case_as_shipped_converts_right_or_is_refused():
    bad = [f"{c.name}: {why}" for c in valid_cases() for why in [check_as_shipped(c)] if why]
    assert not bad, "\n".join(bad)


def test_valid_cases_are_many_and_some_convert():
    """The sweep covers the whole suite, not a subset that loads."""
    cases_ = valid_cases()
    assert len(cases_) > 1500
    assert sum(convert(c.model.SerializeToString()).complete for c in cases_[::10]) > 10


@pytest.mark.parametrize("name, reason", [
    ("test_ai_onnx_ml_binarizer", "unsupported_operator"),     # no default opset import
    ("test_adagrad", "unsupported_operator"),                  # a training-domain node
    ("test_quantizelinear", "non_constant_operand"),           # run-time scale
    ("test_qlinearmatmul_2D_uint8_float32", "non_constant_operand"),
    ("test_reshape_reduced_dims", "non_constant_operand"),     # a shape given at run time (an int64 input)
    ("test_squeeze", "non_constant_operand"),
    ("test_resize_downsample_scales_linear", "non_constant_operand"),  # run-time scales sample unlike NNAPI
])
def test_refusals_of_valid_models_are_per_node(name, reason):
    (case,) = [c for c in valid_cases() if c.name == name]
    result = convert(case.model.SerializeToString())
    assert not result.complete
    assert {n.reason_code for n in result.unsupported} == {reason}


@pytest.mark.parametrize("elem, value, note", [(onnx.TensorProto.INT64, np.array([7, -3]), "int64 -> int32"),
                                               (onnx.TensorProto.DOUBLE, np.array([0.5, 2.0]), "unused by the model"),
                                               (onnx.TensorProto.UINT16, np.array([1, 60000], np.uint16),
                                                "unused by the model")])
def test_an_unused_input_nnapi_has_no_type_for_gets_a_stand_in(elem, value, note):
    """Valid ONNX: the converted model keeps the input (as the nearest NNAPI type, documented in io_rewrites)."""
    from onnx import helper
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "t",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2]),
                               helper.make_tensor_value_info("unused", elem, [2])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    result = convert(model.SerializeToString())
    assert result.complete and note in result.io_rewrites["unused"]  # (an int64 input is NNAPI int32)
    (y,) = run_converted(result, [np.array([-1.0, 2.0], np.float32), value])
    np.testing.assert_array_equal(y, [0.0, 2.0])


@pytest.mark.parametrize("op", ["Conv", "Relu", "Softmax", "LayerNormalization", "ReduceSum", "Where"])
def test_core_ops_have_passing_cases(op):
    p, _, _ = pass_rates(run_all()).get(op, (0, 0, 0))
    assert p > 0, f"no backend case of {op} converts"


def _table(outcomes) -> str:
    """The EXCLUDED table's source: one row per case, the reason text cut to keep lines short."""
    rows = []
    for o in outcomes:
        if o.status == "excluded":
            head = f"    {o.name!r}: ({o.reason!r}, "
            room = max(116 - len(head) - 4, 10)
            why = o.detail.split(": ", 1)[-1] if o.detail.startswith("node ") else o.detail
            rows.append(f"{head}{why[:room]!r}),")
    return "EXCLUDED = {\n" + "\n".join(rows) + "\n}"


# case name -> (reason code, why): every case the converters report Unsupported (regenerate with --table)
EXCLUDED: dict = {
    'test_add_int16': ('quantization_type', "tensor 'x' is int16 without per-tensor quantization"),
    'test_add_int8': ('quantization_type', "tensor 'x' is int8 without quantization parameters"),
    'test_add_uint16': ('operand_type', "tensor 'x' has type uint16, which NNAPI has no type for"),
    'test_add_uint32': ('operand_type', "tensor 'x' has type uint32, which NNAPI has no type for"),
    'test_add_uint64': ('operand_type', "tensor 'x' has type uint64, which NNAPI has no type for"),
    'test_averagepool_2d_dilations': ('unsupported_attribute', 'NNAPI pools have no dilation'),
    'test_averagepool_3d_default': ('rank', "input 'x' has rank 5, NNAPI needs 4"),
    'test_averagepool_3d_dilations_large_count_include_pad_is_0_ceil_mode_is_False': ('rank', "input 'x' has rank"),
    'test_averagepool_3d_dilations_large_count_include_pad_is_0_ceil_mode_is_True': ('rank', "input 'x' has rank "),
    'test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_False': ('rank', "input 'x' has rank"),
    'test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True': ('rank', "input 'x' has rank "),
    'test_averagepool_3d_dilations_small': ('rank', "input 'x' has rank 5, NNAPI needs 4"),
    'test_batchnorm_epsilon_training_mode': ('unsupported_attribute', 'training-mode outputs'),
    'test_batchnorm_example_training_mode': ('unsupported_attribute', 'training-mode outputs'),
    'test_cast_BFLOAT16_to_FLOAT': ('operand_type', "tensor 'input' has type bfloat16, which NNAPI has no type fo"),
    'test_cast_DOUBLE_to_FLOAT': ('operand_type', "tensor 'input' has type float64, which NNAPI has no type for"),
    'test_cast_DOUBLE_to_FLOAT16': ('operand_type', "tensor 'input' has type float64, which NNAPI has no type for"),
    'test_cast_FLOAT16_to_DOUBLE': ('operand_type', "tensor 'output' has type float64, which NNAPI has no type fo"),
    'test_cast_FLOAT16_to_FLOAT4E2M1': ('operand_type', "tensor 'output' has type float4_e2m1fn, which NNAPI has "),
    'test_cast_FLOAT16_to_FLOAT8E4M3FN': ('operand_type', "tensor 'output' has type float8_e4m3fn, which NNAPI ha"),
    'test_cast_FLOAT16_to_FLOAT8E4M3FNUZ': ('operand_type', "tensor 'output' has type float8_e4m3fnuz, which NNAP"),
    'test_cast_FLOAT16_to_FLOAT8E5M2': ('operand_type', "tensor 'output' has type float8_e5m2, which NNAPI has no"),
    'test_cast_FLOAT16_to_FLOAT8E5M2FNUZ': ('operand_type', "tensor 'output' has type float8_e5m2fnuz, which NNAP"),
    'test_cast_FLOAT16_to_INT2': ('operand_type', "tensor 'output' has type int2, which NNAPI has no type for"),
    'test_cast_FLOAT16_to_INT4': ('operand_type', "tensor 'output' has type int4, which NNAPI has no type for"),
    'test_cast_FLOAT16_to_UINT2': ('operand_type', "tensor 'output' has type uint2, which NNAPI has no type for"),
    'test_cast_FLOAT16_to_UINT4': ('operand_type', "tensor 'output' has type uint4, which NNAPI has no type for"),
    'test_cast_FLOAT4E2M1_to_FLOAT': ('operand_type', "tensor 'input' has type float4_e2m1fn, which NNAPI has no "),
    'test_cast_FLOAT4E2M1_to_FLOAT16': ('operand_type', "tensor 'input' has type float4_e2m1fn, which NNAPI has n"),
    'test_cast_FLOAT8E4M3FNUZ_to_FLOAT': ('operand_type', "tensor 'input' has type float8_e4m3fnuz, which NNAPI h"),
    'test_cast_FLOAT8E4M3FNUZ_to_FLOAT16': ('operand_type', "tensor 'input' has type float8_e4m3fnuz, which NNAPI"),
    'test_cast_FLOAT8E4M3FN_to_FLOAT': ('operand_type', "tensor 'input' has type float8_e4m3fn, which NNAPI has n"),
    'test_cast_FLOAT8E4M3FN_to_FLOAT16': ('operand_type', "tensor 'input' has type float8_e4m3fn, which NNAPI has"),
    'test_cast_FLOAT8E5M2FNUZ_to_FLOAT': ('operand_type', "tensor 'input' has type float8_e5m2fnuz, which NNAPI h"),
    'test_cast_FLOAT8E5M2FNUZ_to_FLOAT16': ('operand_type', "tensor 'input' has type float8_e5m2fnuz, which NNAPI"),
    'test_cast_FLOAT8E5M2_to_FLOAT': ('operand_type', "tensor 'input' has type float8_e5m2, which NNAPI has no ty"),
    'test_cast_FLOAT8E5M2_to_FLOAT16': ('operand_type', "tensor 'input' has type float8_e5m2, which NNAPI has no "),
    'test_cast_FLOAT_to_BFLOAT16': ('operand_type', "tensor 'output' has type bfloat16, which NNAPI has no type f"),
    'test_cast_FLOAT_to_DOUBLE': ('operand_type', "tensor 'output' has type float64, which NNAPI has no type for"),
    'test_cast_FLOAT_to_FLOAT4E2M1': ('operand_type', "tensor 'output' has type float4_e2m1fn, which NNAPI has no"),
    'test_cast_FLOAT_to_FLOAT8E4M3FN': ('operand_type', "tensor 'output' has type float8_e4m3fn, which NNAPI has "),
    'test_cast_FLOAT_to_FLOAT8E4M3FNUZ': ('operand_type', "tensor 'output' has type float8_e4m3fnuz, which NNAPI "),
    'test_cast_FLOAT_to_FLOAT8E5M2': ('operand_type', "tensor 'output' has type float8_e5m2, which NNAPI has no t"),
    'test_cast_FLOAT_to_FLOAT8E5M2FNUZ': ('operand_type', "tensor 'output' has type float8_e5m2fnuz, which NNAPI "),
    'test_cast_FLOAT_to_INT2': ('operand_type', "tensor 'output' has type int2, which NNAPI has no type for"),
    'test_cast_FLOAT_to_INT4': ('operand_type', "tensor 'output' has type int4, which NNAPI has no type for"),
    'test_cast_FLOAT_to_UINT2': ('operand_type', "tensor 'output' has type uint2, which NNAPI has no type for"),
    'test_cast_FLOAT_to_UINT4': ('operand_type', "tensor 'output' has type uint4, which NNAPI has no type for"),
    'test_cast_INT2_to_FLOAT': ('operand_type', "tensor 'input' has type int2, which NNAPI has no type for"),
    'test_cast_INT2_to_FLOAT16': ('operand_type', "tensor 'input' has type int2, which NNAPI has no type for"),
    'test_cast_INT2_to_INT8': ('operand_type', "tensor 'input' has type int2, which NNAPI has no type for"),
    'test_cast_INT4_to_FLOAT': ('operand_type', "tensor 'input' has type int4, which NNAPI has no type for"),
    'test_cast_INT4_to_FLOAT16': ('operand_type', "tensor 'input' has type int4, which NNAPI has no type for"),
    'test_cast_INT4_to_INT8': ('operand_type', "tensor 'input' has type int4, which NNAPI has no type for"),
    'test_cast_UINT2_to_FLOAT': ('operand_type', "tensor 'input' has type uint2, which NNAPI has no type for"),
    'test_cast_UINT2_to_FLOAT16': ('operand_type', "tensor 'input' has type uint2, which NNAPI has no type for"),
    'test_cast_UINT2_to_UINT8': ('operand_type', "tensor 'input' has type uint2, which NNAPI has no type for"),
    'test_cast_UINT4_to_FLOAT': ('operand_type', "tensor 'input' has type uint4, which NNAPI has no type for"),
    'test_cast_UINT4_to_FLOAT16': ('operand_type', "tensor 'input' has type uint4, which NNAPI has no type for"),
    'test_cast_UINT4_to_UINT8': ('operand_type', "tensor 'input' has type uint4, which NNAPI has no type for"),
    'test_cast_e8m0_FLOAT16_to_FLOAT8E8M0': ('operand_type', "tensor 'output' has type float8_e8m0fnu, which NNAP"),
    'test_cast_e8m0_FLOAT8E8M0_to_FLOAT': ('operand_type', "tensor 'input' has type float8_e8m0fnu, which NNAPI h"),
    'test_cast_e8m0_FLOAT8E8M0_to_FLOAT16': ('operand_type', "tensor 'input' has type float8_e8m0fnu, which NNAPI"),
    'test_cast_e8m0_FLOAT_to_FLOAT8E8M0': ('operand_type', "tensor 'output' has type float8_e8m0fnu, which NNAPI "),
    'test_cast_no_saturate_FLOAT16_to_FLOAT8E4M3FN': ('operand_type', "tensor 'output' has type float8_e4m3fn, wh"),
    'test_cast_no_saturate_FLOAT16_to_FLOAT8E4M3FNUZ': ('operand_type', "tensor 'output' has type float8_e4m3fnuz"),
    'test_cast_no_saturate_FLOAT16_to_FLOAT8E5M2': ('operand_type', "tensor 'output' has type float8_e5m2, which "),
    'test_cast_no_saturate_FLOAT16_to_FLOAT8E5M2FNUZ': ('operand_type', "tensor 'output' has type float8_e5m2fnuz"),
    'test_cast_no_saturate_FLOAT_to_FLOAT8E4M3FN': ('operand_type', "tensor 'output' has type float8_e4m3fn, whic"),
    'test_cast_no_saturate_FLOAT_to_FLOAT8E4M3FNUZ': ('operand_type', "tensor 'output' has type float8_e4m3fnuz, "),
    'test_cast_no_saturate_FLOAT_to_FLOAT8E5M2': ('operand_type', "tensor 'output' has type float8_e5m2, which NN"),
    'test_cast_no_saturate_FLOAT_to_FLOAT8E5M2FNUZ': ('operand_type', "tensor 'output' has type float8_e5m2fnuz, "),
    'test_castlike_BFLOAT16_to_FLOAT_expanded': ('operand_type', "tensor 'input' has type bfloat16, which NNAPI h"),
    'test_castlike_DOUBLE_to_FLOAT16_expanded': ('operand_type', "tensor 'input' has type float64, which NNAPI ha"),
    'test_castlike_DOUBLE_to_FLOAT_expanded': ('operand_type', "tensor 'input' has type float64, which NNAPI has "),
    'test_castlike_FLOAT16_to_DOUBLE_expanded': ('operand_type', "tensor 'output' has type float64, which NNAPI h"),
    'test_castlike_FLOAT16_to_FLOAT4E2M1_expanded': ('operand_type', "tensor 'output' has type float4_e2m1fn, whi"),
    'test_castlike_FLOAT16_to_FLOAT8E4M3FNUZ_expanded': ('operand_type', "tensor 'output' has type float8_e4m3fnu"),
    'test_castlike_FLOAT16_to_FLOAT8E4M3FN_expanded': ('operand_type', "tensor 'output' has type float8_e4m3fn, w"),
    'test_castlike_FLOAT16_to_FLOAT8E5M2FNUZ_expanded': ('operand_type', "tensor 'output' has type float8_e5m2fnu"),
    'test_castlike_FLOAT16_to_FLOAT8E5M2_expanded': ('operand_type', "tensor 'output' has type float8_e5m2, which"),
    'test_castlike_FLOAT16_to_INT2_expanded': ('operand_type', "tensor 'output' has type int2, which NNAPI has no"),
    'test_castlike_FLOAT16_to_INT4_expanded': ('operand_type', "tensor 'output' has type int4, which NNAPI has no"),
    'test_castlike_FLOAT16_to_UINT2_expanded': ('operand_type', "tensor 'output' has type uint2, which NNAPI has "),
    'test_castlike_FLOAT16_to_UINT4_expanded': ('operand_type', "tensor 'output' has type uint4, which NNAPI has "),
    'test_castlike_FLOAT4E2M1_to_FLOAT16_expanded': ('operand_type', "tensor 'input' has type float4_e2m1fn, whic"),
    'test_castlike_FLOAT4E2M1_to_FLOAT_expanded': ('operand_type', "tensor 'input' has type float4_e2m1fn, which "),
    'test_castlike_FLOAT8E4M3FNUZ_to_FLOAT16_expanded': ('operand_type', "tensor 'input' has type float8_e4m3fnuz"),
    'test_castlike_FLOAT8E4M3FNUZ_to_FLOAT_expanded': ('operand_type', "tensor 'input' has type float8_e4m3fnuz, "),
    'test_castlike_FLOAT8E4M3FN_to_FLOAT16_expanded': ('operand_type', "tensor 'input' has type float8_e4m3fn, wh"),
    'test_castlike_FLOAT8E4M3FN_to_FLOAT_expanded': ('operand_type', "tensor 'input' has type float8_e4m3fn, whic"),
    'test_castlike_FLOAT8E5M2FNUZ_to_FLOAT16_expanded': ('operand_type', "tensor 'input' has type float8_e5m2fnuz"),
    'test_castlike_FLOAT8E5M2FNUZ_to_FLOAT_expanded': ('operand_type', "tensor 'input' has type float8_e5m2fnuz, "),
    'test_castlike_FLOAT8E5M2_to_FLOAT16_expanded': ('operand_type', "tensor 'input' has type float8_e5m2, which "),
    'test_castlike_FLOAT8E5M2_to_FLOAT_expanded': ('operand_type', "tensor 'input' has type float8_e5m2, which NN"),
    'test_castlike_FLOAT_to_BFLOAT16_expanded': ('operand_type', "tensor 'output' has type bfloat16, which NNAPI "),
    'test_castlike_FLOAT_to_DOUBLE_expanded': ('operand_type', "tensor 'output' has type float64, which NNAPI has"),
    'test_castlike_FLOAT_to_FLOAT4E2M1_expanded': ('operand_type', "tensor 'output' has type float4_e2m1fn, which"),
    'test_castlike_FLOAT_to_FLOAT8E4M3FNUZ_expanded': ('operand_type', "tensor 'output' has type float8_e4m3fnuz,"),
    'test_castlike_FLOAT_to_FLOAT8E4M3FN_expanded': ('operand_type', "tensor 'output' has type float8_e4m3fn, whi"),
    'test_castlike_FLOAT_to_FLOAT8E5M2FNUZ_expanded': ('operand_type', "tensor 'output' has type float8_e5m2fnuz,"),
    'test_castlike_FLOAT_to_FLOAT8E5M2_expanded': ('operand_type', "tensor 'output' has type float8_e5m2, which N"),
    'test_castlike_FLOAT_to_INT2_expanded': ('operand_type', "tensor 'output' has type int2, which NNAPI has no t"),
    'test_castlike_FLOAT_to_INT4_expanded': ('operand_type', "tensor 'output' has type int4, which NNAPI has no t"),
    'test_castlike_FLOAT_to_UINT2_expanded': ('operand_type', "tensor 'output' has type uint2, which NNAPI has no"),
    'test_castlike_FLOAT_to_UINT4_expanded': ('operand_type', "tensor 'output' has type uint4, which NNAPI has no"),
    'test_castlike_INT2_to_FLOAT16_expanded': ('operand_type', "tensor 'input' has type int2, which NNAPI has no "),
    'test_castlike_INT2_to_FLOAT_expanded': ('operand_type', "tensor 'input' has type int2, which NNAPI has no ty"),
    'test_castlike_INT2_to_INT8_expanded': ('operand_type', "tensor 'input' has type int2, which NNAPI has no typ"),
    'test_castlike_INT4_to_FLOAT16_expanded': ('operand_type', "tensor 'input' has type int4, which NNAPI has no "),
    'test_castlike_INT4_to_FLOAT_expanded': ('operand_type', "tensor 'input' has type int4, which NNAPI has no ty"),
    'test_castlike_INT4_to_INT8_expanded': ('operand_type', "tensor 'input' has type int4, which NNAPI has no typ"),
    'test_castlike_UINT2_to_FLOAT16_expanded': ('operand_type', "tensor 'input' has type uint2, which NNAPI has n"),
    'test_castlike_UINT2_to_FLOAT_expanded': ('operand_type', "tensor 'input' has type uint2, which NNAPI has no "),
    'test_castlike_UINT2_to_UINT8_expanded': ('operand_type', "tensor 'input' has type uint2, which NNAPI has no "),
    'test_castlike_UINT4_to_FLOAT16_expanded': ('operand_type', "tensor 'input' has type uint4, which NNAPI has n"),
    'test_castlike_UINT4_to_FLOAT_expanded': ('operand_type', "tensor 'input' has type uint4, which NNAPI has no "),
    'test_castlike_UINT4_to_UINT8_expanded': ('operand_type', "tensor 'input' has type uint4, which NNAPI has no "),
    'test_castlike_no_saturate_FLOAT16_to_FLOAT8E4M3FNUZ_expanded': ('operand_type', "tensor 'output' has type fl"),
    'test_castlike_no_saturate_FLOAT16_to_FLOAT8E4M3FN_expanded': ('operand_type', "tensor 'output' has type floa"),
    'test_castlike_no_saturate_FLOAT16_to_FLOAT8E5M2FNUZ_expanded': ('operand_type', "tensor 'output' has type fl"),
    'test_castlike_no_saturate_FLOAT16_to_FLOAT8E5M2_expanded': ('operand_type', "tensor 'output' has type float8"),
    'test_castlike_no_saturate_FLOAT_to_FLOAT8E4M3FNUZ_expanded': ('operand_type', "tensor 'output' has type floa"),
    'test_castlike_no_saturate_FLOAT_to_FLOAT8E4M3FN_expanded': ('operand_type', "tensor 'output' has type float8"),
    'test_castlike_no_saturate_FLOAT_to_FLOAT8E5M2FNUZ_expanded': ('operand_type', "tensor 'output' has type floa"),
    'test_castlike_no_saturate_FLOAT_to_FLOAT8E5M2_expanded': ('operand_type', "tensor 'output' has type float8_e"),
    'test_celu_bfloat16': ('operand_type', "tensor 'X' has type bfloat16, which NNAPI has no type for"),
    'test_clip_default_inbounds': ('unsupported_attribute', 'Clip without bounds is an identity'),
    'test_clip_default_int8_inbounds': ('quantization_type', "tensor 'x' is int8 without quantization parameters"),
    'test_clip_default_int8_inbounds_expanded': ('quantization_type', "tensor 'y' is int8 without quantization pa"),
    'test_clip_default_int8_max': ('quantization_type', "tensor 'x' is int8 without quantization parameters"),
    'test_clip_default_int8_min': ('quantization_type', "tensor 'y' is int8 without quantization parameters"),
    'test_constantofshape_int_shape_zero': ('invalid_node', 'an empty graph output (NNAPI has no empty tensors)'),
    'test_convtranspose_1d': ('rank', "input 'X' has rank 3, NNAPI needs 4"),
    'test_convtranspose_3d': ('rank', "input 'X' has rank 5, NNAPI needs 4"),
    'test_cumsum_1d': ('operand_type', "tensor 'y' has type float64, which NNAPI has no type for"),
    'test_cumsum_1d_exclusive': ('operand_type', "tensor 'y' has type float64, which NNAPI has no type for"),
    'test_cumsum_1d_reverse': ('operand_type', "tensor 'y' has type float64, which NNAPI has no type for"),
    'test_cumsum_1d_reverse_exclusive': ('operand_type', "tensor 'y' has type float64, which NNAPI has no type fo"),
    'test_cumsum_2d_axis_0': ('operand_type', "tensor 'y' has type float64, which NNAPI has no type for"),
    'test_cumsum_2d_axis_1': ('operand_type', "tensor 'y' has type float64, which NNAPI has no type for"),
    'test_cumsum_2d_negative_axis': ('operand_type', "tensor 'y' has type float64, which NNAPI has no type for"),
    'test_dequantizelinear_axis': ('quantization_type', "tensor 'x': NNAPI has per-channel quantization only for "),
    'test_dequantizelinear_blocked': ('quantization_type', 'blocked quantization'),
    'test_dequantizelinear_e4m3fn': ('operand_type', "tensor 'x' has type float8_e4m3fn, which NNAPI has no type "),
    'test_dequantizelinear_e4m3fn_float16': ('operand_type', "tensor 'x' has type float8_e4m3fn, which NNAPI has "),
    'test_dequantizelinear_e4m3fn_zero_point': ('operand_type', "tensor 'x' has type float8_e4m3fn, which NNAPI h"),
    'test_dequantizelinear_e5m2': ('operand_type', "tensor 'x' has type float8_e5m2, which NNAPI has no type for"),
    'test_dequantizelinear_float4e2m1': ('operand_type', "tensor 'x' has type float4_e2m1fn, which NNAPI has no t"),
    'test_dequantizelinear_int16': ('quantization_type', "tensor 'x' is int16 with zero point -1024"),
    'test_dequantizelinear_int2': ('operand_type', "tensor 'x' has type int2, which NNAPI has no type for"),
    'test_dequantizelinear_int4': ('operand_type', "tensor 'x' has type int4, which NNAPI has no type for"),
    'test_dequantizelinear_uint16': ('operand_type', "tensor 'x' has type uint16, which NNAPI has no type for"),
    'test_dequantizelinear_uint2': ('operand_type', "tensor 'x' has type uint2, which NNAPI has no type for"),
    'test_dequantizelinear_uint4': ('operand_type', "tensor 'x' has type uint4, which NNAPI has no type for"),
    'test_div_int16': ('quantization_type', "tensor 'x' is int16 without per-tensor quantization"),
    'test_div_int8': ('quantization_type', "tensor 'x' is int8 without quantization parameters"),
    'test_div_uint16': ('operand_type', "tensor 'x' has type uint16, which NNAPI has no type for"),
    'test_div_uint32': ('operand_type', "tensor 'x' has type uint32, which NNAPI has no type for"),
    'test_div_uint64': ('operand_type', "tensor 'x' has type uint64, which NNAPI has no type for"),
    'test_div_uint8': ('operand_type', 'operation 0 (DIV): unsupported operand types (T=TENSOR_QUANT8_ASYMM)'),
    'test_dropout_default_mask': ('unsupported_attribute', 'the mask output is used'),
    'test_dropout_default_mask_ratio': ('unsupported_attribute', 'the mask output is used'),
    'test_edge_pad': ('unsupported_attribute', "mode 'edge' has no NNAPI counterpart"),
    'test_einsum_batch_diagonal': ('operand_type', "tensor 'x' has type float64, which NNAPI has no type for"),
    'test_einsum_batch_matmul': ('operand_type', "tensor 'x' has type float64, which NNAPI has no type for"),
    'test_einsum_batch_matmul_bfloat16': ('operand_type', "tensor 'x' has type bfloat16, which NNAPI has no type "),
    'test_einsum_inner_prod': ('operand_type', "tensor 'x' has type float64, which NNAPI has no type for"),
    'test_einsum_scalar': ('operand_type', "tensor 'x' has type float64, which NNAPI has no type for"),
    'test_einsum_sum': ('operand_type', "tensor 'x' has type float64, which NNAPI has no type for"),
    'test_einsum_sum_bfloat16': ('operand_type', "tensor 'x' has type bfloat16, which NNAPI has no type for"),
    'test_einsum_transpose': ('operand_type', "tensor 'x' has type float64, which NNAPI has no type for"),
    'test_einsum_transpose_bfloat16': ('operand_type', "tensor 'x' has type bfloat16, which NNAPI has no type for"),
    'test_equal_int16': ('quantization_type', "tensor 'x' is int16 without per-tensor quantization"),
    'test_equal_int8': ('quantization_type', "tensor 'x' is int8 without quantization parameters"),
    'test_equal_string': ('operand_type', "tensor 'x' has type object, which NNAPI has no type for"),
    'test_equal_string_broadcast': ('operand_type', "tensor 'x' has type object, which NNAPI has no type for"),
    'test_equal_uint16': ('operand_type', "tensor 'x' has type uint16, which NNAPI has no type for"),
    'test_equal_uint32': ('operand_type', "tensor 'x' has type uint32, which NNAPI has no type for"),
    'test_equal_uint64': ('operand_type', "tensor 'x' has type uint64, which NNAPI has no type for"),
    'test_gemm_default_matrix_bias': ('unsupported_attribute', 'C of shape [3, 4] is not one bias per output colu'),
    'test_greater_equal_int16': ('quantization_type', "tensor 'x' is int16 without per-tensor quantization"),
    'test_greater_equal_int8': ('quantization_type', "tensor 'x' is int8 without quantization parameters"),
    'test_greater_equal_uint16': ('operand_type', "tensor 'x' has type uint16, which NNAPI has no type for"),
    'test_greater_equal_uint32': ('operand_type', "tensor 'x' has type uint32, which NNAPI has no type for"),
    'test_greater_equal_uint64': ('operand_type', "tensor 'x' has type uint64, which NNAPI has no type for"),
    'test_greater_int16': ('quantization_type', "tensor 'x' is int16 without per-tensor quantization"),
    'test_greater_int8': ('quantization_type', "tensor 'x' is int8 without quantization parameters"),
    'test_greater_uint16': ('operand_type', "tensor 'x' has type uint16, which NNAPI has no type for"),
    'test_greater_uint32': ('operand_type', "tensor 'x' has type uint32, which NNAPI has no type for"),
    'test_greater_uint64': ('operand_type', "tensor 'x' has type uint64, which NNAPI has no type for"),
    'test_identity_opt': ('dynamic_shape', "tensor 'opt_in' has unknown rank (pin the inputs with --input-shape N"),
    'test_identity_sequence': ('dynamic_shape', "tensor 'x' has unknown rank (pin the inputs with --input-shape N"),
    'test_if_opt': ('unsupported_operator', "subgraph 'then_body' node 0 (Optional): Optional has no NNAPI conver"),
    'test_if_seq': ('unsupported_operator', "subgraph 'then_body' node 0 (SequenceConstruct): SequenceConstruct h"),
    'test_less_equal_int16': ('quantization_type', "tensor 'x' is int16 without per-tensor quantization"),
    'test_less_equal_int8': ('quantization_type', "tensor 'x' is int8 without quantization parameters"),
    'test_less_equal_uint16': ('operand_type', "tensor 'x' has type uint16, which NNAPI has no type for"),
    'test_less_equal_uint32': ('operand_type', "tensor 'x' has type uint32, which NNAPI has no type for"),
    'test_less_equal_uint64': ('operand_type', "tensor 'x' has type uint64, which NNAPI has no type for"),
    'test_less_int16': ('quantization_type', "tensor 'x' is int16 without per-tensor quantization"),
    'test_less_int8': ('quantization_type', "tensor 'x' is int8 without quantization parameters"),
    'test_less_uint16': ('operand_type', "tensor 'x' has type uint16, which NNAPI has no type for"),
    'test_less_uint32': ('operand_type', "tensor 'x' has type uint32, which NNAPI has no type for"),
    'test_less_uint64': ('operand_type', "tensor 'x' has type uint64, which NNAPI has no type for"),
    'test_loop11': ('unsupported_attribute', '1 scan output(s); NNAPI WHILE has no way to stack per-iteration val'),
    'test_loop13_seq': ('non_constant_operand', "trip count 'trip_count' is not a constant: a run-time int64 valu"),
    'test_loop16_seq_none': ('non_constant_operand', "trip count 'trip_count' is not a constant: a run-time int64"),
    'test_matmul_1d_1d': ('rank', 'operation 0 (BATCH_MATMUL): x has rank 1, expected one of [2, 3, 4]'),
    'test_matmul_1d_3d': ('rank', 'BATCH_MATMUL needs operands of one rank'),
    'test_matmul_4d_1d': ('rank', 'BATCH_MATMUL needs operands of one rank'),
    'test_max_float64': ('operand_type', "tensor 'result' has type float64, which NNAPI has no type for"),
    'test_max_int16': ('quantization_type', "tensor 'result' is int16 without per-tensor quantization"),
    'test_max_int8': ('quantization_type', "tensor 'result' is int8 without quantization parameters"),
    'test_max_uint16': ('operand_type', "tensor 'result' has type uint16, which NNAPI has no type for"),
    'test_max_uint32': ('operand_type', "tensor 'result' has type uint32, which NNAPI has no type for"),
    'test_max_uint64': ('operand_type', "tensor 'result' has type uint64, which NNAPI has no type for"),
    'test_maxpool_2d_dilations': ('unsupported_attribute', 'NNAPI pools have no dilation'),
    'test_maxpool_3d_default': ('rank', "input 'x' has rank 5, NNAPI needs 4"),
    'test_maxpool_3d_dilations': ('rank', "input 'x' has rank 5, NNAPI needs 4"),
    'test_maxpool_3d_dilations_use_ref_impl': ('rank', "input 'x' has rank 5, NNAPI needs 4"),
    'test_maxpool_3d_dilations_use_ref_impl_large': ('rank', "input 'x' has rank 5, NNAPI needs 4"),
    'test_maxpool_with_argmax_2d_precomputed_pads': ('unsupported_attribute', 'the Indices output has no NNAPI co'),
    'test_maxpool_with_argmax_2d_precomputed_strides': ('unsupported_attribute', 'the Indices output has no NNAPI'),
    'test_min_float64': ('operand_type', "tensor 'result' has type float64, which NNAPI has no type for"),
    'test_min_int16': ('quantization_type', "tensor 'result' is int16 without per-tensor quantization"),
    'test_min_int8': ('quantization_type', "tensor 'result' is int8 without quantization parameters"),
    'test_min_uint16': ('operand_type', "tensor 'result' has type uint16, which NNAPI has no type for"),
    'test_min_uint32': ('operand_type', "tensor 'result' has type uint32, which NNAPI has no type for"),
    'test_min_uint64': ('operand_type', "tensor 'result' has type uint64, which NNAPI has no type for"),
    'test_mod_float16_mixed_sign_fmod_0': ('operand_type', 'Mod of TENSOR_FLOAT16 is not exact in NNAPI (only int'),
    'test_mod_float32_mixed_sign_fmod_0': ('operand_type', 'Mod of TENSOR_FLOAT32 is not exact in NNAPI (only int'),
    'test_mod_float64_mixed_sign_fmod_0': ('operand_type', "tensor 'z' has type float64, which NNAPI has no type "),
    'test_mod_float_edge_cases_fmod_0_float16': ('operand_type', 'Mod of TENSOR_FLOAT16 is not exact in NNAPI (on'),
    'test_mod_float_edge_cases_fmod_0_float32': ('operand_type', 'Mod of TENSOR_FLOAT32 is not exact in NNAPI (on'),
    'test_mod_float_edge_cases_fmod_0_float64': ('operand_type', "tensor 'z' has type float64, which NNAPI has no"),
    'test_mod_int64_fmod': ('unsupported_attribute', 'fmod=1 (truncated remainder) is not mapped'),
    'test_mod_mixed_sign_float16': ('unsupported_attribute', 'fmod=1 (truncated remainder) is not mapped'),
    'test_mod_mixed_sign_float32': ('unsupported_attribute', 'fmod=1 (truncated remainder) is not mapped'),
    'test_mod_mixed_sign_float64': ('unsupported_attribute', 'fmod=1 (truncated remainder) is not mapped'),
    'test_mod_mixed_sign_int16': ('quantization_type', "tensor 'z' is int16 without per-tensor quantization"),
    'test_mod_mixed_sign_int8': ('quantization_type', "tensor 'z' is int8 without quantization parameters"),
    'test_mod_uint16': ('operand_type', "tensor 'z' has type uint16, which NNAPI has no type for"),
    'test_mod_uint32': ('operand_type', "tensor 'z' has type uint32, which NNAPI has no type for"),
    'test_mod_uint64': ('operand_type', "tensor 'z' has type uint64, which NNAPI has no type for"),
    'test_mod_uint8': ('operand_type', 'Mod of TENSOR_QUANT8_ASYMM is not exact in NNAPI (only int32 with fmod=0)'),
    'test_mul_int16': ('quantization_type', "tensor 'x' is int16 without per-tensor quantization"),
    'test_mul_int8': ('quantization_type', "tensor 'x' is int8 without quantization parameters"),
    'test_mul_uint16': ('operand_type', "tensor 'x' has type uint16, which NNAPI has no type for"),
    'test_mul_uint32': ('operand_type', "tensor 'x' has type uint32, which NNAPI has no type for"),
    'test_mul_uint64': ('operand_type', "tensor 'x' has type uint64, which NNAPI has no type for"),
    'test_pow_types_float32_uint32': ('operand_type', "tensor 'y' has type uint32, which NNAPI has no type for"),
    'test_pow_types_float32_uint64': ('operand_type', "tensor 'y' has type uint64, which NNAPI has no type for"),
    'test_pow_types_int32_float32': ('operand_type', 'Pow of TENSOR_INT32 tensors needs a constant non-negative i'),
    'test_pow_types_int32_int32': ('operand_type', 'Pow of TENSOR_INT32 tensors needs a constant non-negative int'),
    'test_pow_types_int64_float32': ('operand_type', "tensor 'z' is int64, which NNAPI has no type for"),
    'test_pow_types_int64_int64': ('operand_type', "tensor 'z' is int64, which NNAPI has no type for"),
    'test_qlinearmatmul_2D_uint8_float16': ('operand_type', 'operation 0 (BATCH_MATMUL): unsupported operand type'),
    'test_qlinearmatmul_2D_uint8_float32': ('operand_type', 'operation 0 (BATCH_MATMUL): unsupported operand type'),
    'test_qlinearmatmul_3D_uint8_float16': ('operand_type', 'operation 0 (BATCH_MATMUL): unsupported operand type'),
    'test_qlinearmatmul_3D_uint8_float32': ('operand_type', 'operation 0 (BATCH_MATMUL): unsupported operand type'),
    'test_quantizelinear_axis': ('quantization_type', 'per-axis QuantizeLinear'),
    'test_quantizelinear_blocked_asymmetric': ('quantization_type', 'blocked quantization'),
    'test_quantizelinear_blocked_symmetric': ('quantization_type', 'blocked quantization'),
    'test_quantizelinear_e4m3fn': ('operand_type', "tensor 'y' has type float8_e4m3fn, which NNAPI has no type fo"),
    'test_quantizelinear_e5m2': ('operand_type', "tensor 'y' has type float8_e5m2, which NNAPI has no type for"),
    'test_quantizelinear_float4e2m1': ('quantization_type', 'per-axis QuantizeLinear'),
    'test_quantizelinear_int16': ('quantization_type', "tensor 'y' is int16 with zero point 256"),
    'test_quantizelinear_int2': ('quantization_type', 'per-axis QuantizeLinear'),
    'test_quantizelinear_int4': ('quantization_type', 'per-axis QuantizeLinear'),
    'test_quantizelinear_uint16': ('operand_type', "tensor 'y' has type uint16, which NNAPI has no type for"),
    'test_quantizelinear_uint2': ('quantization_type', 'per-axis QuantizeLinear'),
    'test_quantizelinear_uint4': ('quantization_type', 'per-axis QuantizeLinear'),
    'test_range_bfloat16_type_positive_delta': ('non_constant_operand', "Range start tensor 'start' must be a con"),
    'test_reduce_l1_empty_set': ('invalid_node', 'reduces an empty axis (NNAPI has no empty tensors)'),
    'test_reduce_l2_empty_set': ('invalid_node', 'reduces an empty axis (NNAPI has no empty tensors)'),
    'test_reduce_log_sum_empty_set': ('invalid_node', 'reduces an empty axis (NNAPI has no empty tensors)'),
    'test_reduce_log_sum_exp_default_axes_keepdims_example': ('operand_type', "tensor 'data' has type float64, wh"),
    'test_reduce_log_sum_exp_default_axes_keepdims_random': ('operand_type', "tensor 'data' has type float64, whi"),
    'test_reduce_log_sum_exp_do_not_keepdims_example': ('operand_type', "tensor 'data' has type float64, which NN"),
    'test_reduce_log_sum_exp_do_not_keepdims_random': ('operand_type', "tensor 'data' has type float64, which NNA"),
    'test_reduce_log_sum_exp_empty_set': ('invalid_node', 'reduces an empty axis (NNAPI has no empty tensors)'),
    'test_reduce_log_sum_exp_keepdims_example': ('operand_type', "tensor 'data' has type float64, which NNAPI has"),
    'test_reduce_log_sum_exp_keepdims_random': ('operand_type', "tensor 'data' has type float64, which NNAPI has "),
    'test_reduce_log_sum_exp_negative_axes_keepdims_example': ('operand_type', "tensor 'data' has type float64, w"),
    'test_reduce_log_sum_exp_negative_axes_keepdims_random': ('operand_type', "tensor 'data' has type float64, wh"),
    'test_reduce_max_empty_set': ('invalid_node', 'reduces an empty axis (NNAPI has no empty tensors)'),
    'test_reduce_max_empty_set_bool': ('invalid_node', 'reduces an empty axis (NNAPI has no empty tensors)'),
    'test_reduce_min_empty_set': ('invalid_node', 'reduces an empty axis (NNAPI has no empty tensors)'),
    'test_reduce_prod_empty_set': ('invalid_node', 'reduces an empty axis (NNAPI has no empty tensors)'),
    'test_reduce_sum_empty_set': ('invalid_node', 'reduces an empty axis (NNAPI has no empty tensors)'),
    'test_reduce_sum_square_empty_set': ('invalid_node', 'reduces an empty axis (NNAPI has no empty tensors)'),
    'test_resize_downsample_scales_cubic': ('unsupported_attribute', "mode 'cubic' with coordinate transformation"),
    'test_resize_downsample_scales_cubic_A_n0p5_exclude_outside': ('unsupported_attribute', "mode 'cubic' with co"),
    'test_resize_downsample_scales_cubic_align_corners': ('unsupported_attribute', "mode 'cubic' with coordinate "),
    'test_resize_downsample_scales_cubic_antialias': ('unsupported_attribute', "mode 'cubic' with coordinate tran"),
    'test_resize_downsample_scales_linear': ('unsupported_attribute', 'linear sampling with coordinate transforma'),
    'test_resize_downsample_scales_linear_align_corners': ('unsupported_attribute', 'linear sampling with coordin'),
    'test_resize_downsample_scales_linear_antialias': ('unsupported_attribute', 'antialias / exclude_outside'),
    'test_resize_downsample_scales_linear_half_pixel_symmetric': ('unsupported_attribute', 'linear sampling with '),
    'test_resize_downsample_sizes_cubic': ('unsupported_attribute', "mode 'cubic' with coordinate transformation "),
    'test_resize_downsample_sizes_cubic_antialias': ('unsupported_attribute', "mode 'cubic' with coordinate trans"),
    'test_resize_downsample_sizes_linear_antialias': ('unsupported_attribute', 'antialias / exclude_outside'),
    'test_resize_downsample_sizes_linear_pytorch_half_pixel': ('unsupported_attribute', 'linear sampling with coo'),
    'test_resize_downsample_sizes_nearest': ('unsupported_attribute', 'nearest sampling with coordinate transform'),
    'test_resize_downsample_sizes_nearest_not_smaller': ('unsupported_attribute', 'nearest sampling with coordina'),
    'test_resize_tf_crop_and_resize': ('unsupported_attribute', "mode 'linear' with coordinate transformation 'tf"),
    'test_resize_tf_crop_and_resize_axes_2_3': ('unsupported_attribute', "mode 'linear' with coordinate transform"),
    'test_resize_tf_crop_and_resize_axes_3_2': ('unsupported_attribute', "mode 'linear' with coordinate transform"),
    'test_resize_tf_crop_and_resize_extrapolation_value': ('unsupported_attribute', "mode 'linear' with coordinat"),
    'test_resize_upsample_scales_cubic': ('unsupported_attribute', "mode 'cubic' with coordinate transformation '"),
    'test_resize_upsample_scales_cubic_A_n0p5_exclude_outside': ('unsupported_attribute', "mode 'cubic' with coor"),
    'test_resize_upsample_scales_cubic_align_corners': ('unsupported_attribute', "mode 'cubic' with coordinate tr"),
    'test_resize_upsample_scales_cubic_asymmetric': ('unsupported_attribute', "mode 'cubic' with coordinate trans"),
    'test_resize_upsample_scales_linear_half_pixel_symmetric': ('unsupported_attribute', 'linear sampling with co'),
    'test_resize_upsample_sizes_cubic': ('unsupported_attribute', "mode 'cubic' with coordinate transformation 'h"),
    'test_resize_upsample_sizes_nearest_ceil_half_pixel': ('unsupported_attribute', 'nearest sampling with coordi'),
    'test_resize_upsample_sizes_nearest_floor_align_corners': ('unsupported_attribute', 'nearest sampling with co'),
    'test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric': ('unsupported_attribute', 'nearest samplin'),
    'test_shape_start_greater_than_end': ('invalid_node', 'an empty graph output (NNAPI has no empty tensors)'),
    'test_spacetodepth_crd_mode_example': ('unsupported_attribute', "mode 'CRD' (NNAPI is DCR)"),
    'test_sub_int16': ('quantization_type', "tensor 'x' is int16 without per-tensor quantization"),
    'test_sub_int8': ('quantization_type', "tensor 'x' is int8 without quantization parameters"),
    'test_sub_uint16': ('operand_type', "tensor 'x' has type uint16, which NNAPI has no type for"),
    'test_sub_uint32': ('operand_type', "tensor 'x' has type uint32, which NNAPI has no type for"),
    'test_sub_uint64': ('operand_type', "tensor 'x' has type uint64, which NNAPI has no type for"),
    'test_top_k_uint64': ('operand_type', "tensor 'values' has type uint64, which NNAPI has no type for"),
    'test_training_dropout': ('non_constant_operand', "training_mode tensor 't' must be a constant"),
    'test_training_dropout_default': ('non_constant_operand', "training_mode tensor 't' must be a constant"),
    'test_training_dropout_default_mask': ('unsupported_attribute', 'the mask output is used'),
    'test_training_dropout_mask': ('unsupported_attribute', 'the mask output is used'),
    'test_training_dropout_zero_ratio': ('non_constant_operand', "training_mode tensor 't' must be a constant"),
    'test_training_dropout_zero_ratio_mask': ('unsupported_attribute', 'the mask output is used'),
    'test_unsqueeze_negative_axes': ('rank', 'RESHAPE output rank 5 > 4'),
    'test_unsqueeze_three_axes': ('rank', 'RESHAPE output rank 6 > 4'),
    'test_unsqueeze_two_axes': ('rank', 'RESHAPE output rank 5 > 4'),
    'test_unsqueeze_unsorted_axes': ('rank', 'RESHAPE output rank 6 > 4'),
    'test_where_long_example': ('operand_type', "tensor 'z' is int64, which NNAPI has no type for"),
    'test_wrap_pad': ('unsupported_attribute', "mode 'wrap' has no NNAPI counterpart"),
    # integer ops on run-time integer inputs / DynamicQuantizeLinear outputs read by the graph: only the
    # DynamicQuantizeLinear -> ConvInteger/MatMulInteger groups of quantize_dynamic convert (in float)
    'test_convinteger_with_padding': ('non_constant_operand', "weights tensor 'w' must be a constant"),
    'test_convinteger_without_padding': ('non_constant_operand', "weights tensor 'w' must be a constant"),
    'test_dynamicquantizelinear': ('operand_type', "only DynamicQuantizeLinear outputs read by MatMulInteger"),
    'test_dynamicquantizelinear_max_adjusted': ('operand_type', "only DynamicQuantizeLinear outputs read by"),
    'test_dynamicquantizelinear_min_adjusted': ('operand_type', "only DynamicQuantizeLinear outputs read by"),
    'test_matmulinteger': ('non_constant_operand', "B must be a constant matrix"),
}


if __name__ == "__main__":
    outcomes = run_all()
    print(_table(outcomes) if "--table" in sys.argv[1:] else render(outcomes))
