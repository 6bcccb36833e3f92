"""Tolerances that follow the data: a dequantized float output is judged in steps of its scale."""
import numpy as np

from converters.parity import check, dequantized_steps
from converters.tflite import read
from converters.tflite.authoring import GraphBuilder
from converters.tolerance import FLOAT32_ATOL, allowed_error, within_tolerance

SCALE = 0.05


def quantize_dequantize_model(path):
    g = GraphBuilder()
    x = g.input("x", [1, 8])
    q = g.tensor("q", [1, 8], "INT8", scale=SCALE, zero_point=3)
    g.op("QUANTIZE", [x], [q])
    y = g.tensor("y", [1, 8])
    g.op("DEQUANTIZE", [q], [y])
    g.output(y)
    path.write_bytes(g.finish())


def test_dequantized_outputs_get_one_step_of_their_scale(tmp_path):
    src = tmp_path / "qdq.tflite"
    quantize_dequantize_model(src)
    graph = read(str(src)).main
    (step,) = dequantized_steps(graph).values()
    assert step[0] == np.float32(SCALE) and "'q'" in step[1] and "DEQUANTIZE" in step[1]
    report = check(str(src), samples=2).as_dict()
    (out,) = report["outputs"]
    assert report["passed"]
    assert abs(out["allowed"] - (np.float32(SCALE) + FLOAT32_ATOL)) < 1e-12      # not 1e-5 + 1e-4 * max|ref|
    assert "step" in out["tolerance"] and "'q'" in out["tolerance"]
    # --atol replaces the rule; --max-lsb 2 allows two steps
    assert "--atol" in check(str(src), atol=1e-3).as_dict()["outputs"][0]["tolerance"]
    two = check(str(src), max_lsb=2).as_dict()["outputs"][0]
    assert abs(two["allowed"] - (2 * np.float32(SCALE) + FLOAT32_ATOL)) < 1e-12


def test_one_step_passes_and_two_steps_fail():
    ref = np.array([0.5, 1.0], np.float32)
    one = ref + np.float32(SCALE)
    two = ref + np.float32(2 * SCALE)
    assert within_tolerance(ref, one, False, step=SCALE)[0]
    assert not within_tolerance(ref, two, False, step=SCALE)[0]
    assert not within_tolerance(ref, one, False)[0]           # the plain float32 rule would call it a mismatch
    assert allowed_error(ref, False)[1].startswith("float32 default")
    assert allowed_error(ref.astype(np.int8), True)[1] == "1 stored unit(s)"


def test_onnx_dequantize_linear_outputs_get_one_step(tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    inits = [numpy_helper.from_array(np.array(SCALE, np.float32), "s"),
             numpy_helper.from_array(np.array(128, np.uint8), "zp")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], initializer=inits)
    path = tmp_path / "qdq.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    from converters.onnx import read as read_onnx
    (step,) = dequantized_steps(read_onnx(str(path)).main).values()
    assert step[0] == np.float32(SCALE) and "DequantizeLinear" in step[1]
    out = check(str(path)).as_dict()["outputs"][0]
    assert out["passed"] and "step" in out["tolerance"]


def _sample(name):
    from pathlib import Path
    return str(Path(__file__).resolve().parents[2] / "samples" / name)


def test_spread_tolerance_reports_the_framework_spread_and_still_catches_an_altered_weight(tmp_path):
    import nnapi
    from converters import tflite

    from tests.converters.test_parity import alter_constant
    src = _sample("mobilenet_float.tflite")
    good = check(src, tolerance="spread").as_dict()
    assert good["passed"] and good["tolerance"]["mode"] == "spread"
    assert good["tolerance"]["references"] == ["litert", "litert-ref", "litert-xnnpack"] and good["tolerance"]["factor"] == 2
    (out,) = good["outputs"]
    assert out["spread"] is not None and out["tolerance"].startswith("spread: 2 x")
    # allowed = 2 x spread + the fixed rule, recomputed from the reported numbers
    fixed = check(src, tolerance="fixed").as_dict()["outputs"][0]
    assert abs(out["allowed"] - (2 * out["spread"] + fixed["allowed"])) < 1e-9
    assert fixed["spread"] is None
    # one filter weight scaled by 1.5 in the converted model: the spread does not hide it
    saved = tmp_path / "m.nnapi"
    nnapi.save(tflite.convert(src).model, saved)
    w = nnapi.load(saved).operands[[o.name for o in nnapi.load(saved).operands].index("pw0/w")].value
    alter_constant(saved, "pw0/w", float(np.asarray(w).reshape(-1)[0]) * 1.5 + 0.5)
    bad = check(src, converted=str(saved), tolerance="spread").as_dict()
    assert not bad["passed"]
    ratio = bad["outputs"][0]["spread_ratio"]
    assert ratio is None or ratio > 2


def test_spread_is_the_default_only_for_large_float_models():
    from converters.parity import choose_tolerance
    small = read(_sample("mobilenet_float.tflite")).main
    assert choose_tolerance(None, "tflite", small)[0] == "fixed"
    assert choose_tolerance("spread", "tflite", small) == ("spread", "--tolerance spread")
    quantized = read(_sample("mobilenet_uint8.tflite")).main
    assert choose_tolerance(None, "tflite", quantized) == ("fixed", "default for quantized models")
    import copy
    big = copy.copy(small)
    big.nodes = small.nodes * 6                      # 60 operations
    mode, why = choose_tolerance(None, "tflite", big)
    assert mode == "spread" and "more than 50 operations" in why


def test_onnx_spread_uses_optimised_and_unoptimised_onnxruntime():
    r = check(_sample("resnet_float.onnx"), tolerance="spread").as_dict()
    assert r["passed"] and r["tolerance"]["references"] == ["onnxruntime", "onnxruntime-optimized"]
    assert all(o["spread"] is not None for o in r["outputs"])
    assert check(_sample("resnet_float.onnx"), reference="onnxruntime-optimized").as_dict()["passed"]


def _nameless_with_scaled_filter(tmp_path, scale_filter: bool):
    """mobilenet_float converted, every operand name erased, one filter (pw0/w) scaled by 1.5."""
    import nnapi
    from converters import tflite
    model = tflite.convert(_sample("mobilenet_float.tflite")).model
    (w,) = [i for i, o in enumerate(model.operands) if o.name == "pw0/w"]
    (user,) = [k for k, op in enumerate(model.operations) if w in op.inputs]
    for o in model.operands:
        o.name = ""
    path = tmp_path / "nameless.nnapi"
    nnapi.save(model, path)
    if scale_filter:
        loaded = nnapi.load(path)
        nnapi.save(_with_constant(loaded, w, np.asarray(loaded.operands[w].value, np.float32) * 1.5), path)
    return path, user


def _with_constant(model, index, value):
    """A copy of a loaded model with operand `index`'s constant replaced (through the Python API)."""
    import nnapi
    m = nnapi.Model()
    for o in model.operands:
        m.add_operand(o.type, name=o.name)
    for i, o in enumerate(model.operands):
        if o.channel_quant is not None:
            m.set_operand_symm_per_channel_quant_params(i, o.channel_quant.scales, o.channel_quant.channel_dim)
        if i == index:
            m.set_operand_value(i, value)
        elif o.value is not None:
            m.set_operand_value(i, np.asarray(o.value).copy() if hasattr(o.value, "shape") else o.value)
    for op in model.operations:
        m.add_operation(op.code, list(op.inputs), list(op.outputs))
    m.identify_inputs_and_outputs(list(model.inputs), list(model.outputs))
    m.finish()
    return m


def test_a_nameless_altered_model_is_localized_structurally(tmp_path):
    path, user = _nameless_with_scaled_filter(tmp_path, scale_filter=True)
    r = check(_sample("mobilenet_float.tflite"), converted=str(path), layerwise=True).as_dict()
    assert not r["passed"]
    assert r["first_divergence"] is not None and r["first_divergence"]["operation_index"] == user
    assert "matched structurally" in r["localization"]


def test_an_unmatchable_nameless_model_says_why_in_one_line(tmp_path):
    import nnapi
    from converters import tflite
    model = tflite.convert(_sample("demo.tflite")).model
    for o in model.operands:
        o.name = ""
    path = tmp_path / "other.nnapi"
    nnapi.save(model, path)
    # demo's operations against another source with as many inputs and outputs: nothing to match
    src = tmp_path / "three.tflite"
    from tests.converters.test_parity import three_op_model
    three_op_model(src)
    r = check(str(src), converted=str(path), layerwise=True).as_dict()
    assert r["first_divergence"] is None
    assert "cannot be matched" in r["localization"] or "no first divergence" in r["localization"]


def test_exact_shows_each_runtime_distance_from_the_float64_model(tmp_path):
    import nnapi
    from converters import tflite

    from tests.converters.test_parity import alter_constant
    src = _sample("mobilenet_float.tflite")
    (e,) = check(src, exact=True).as_dict()["exact"]
    assert e["name"] == "probs" and {"ours", "litert", "litert-ref", "litert-xnnpack"} <= set(e)
    assert all(0 <= e[k] < 1e-5 for k in ("ours", "litert", "litert-ref"))
    # an altered weight in the converted model: the float64 run is of the converted model, so ours stays
    # close to it while every framework kernel set, computing the original, is far: the side that deviates shows
    saved = tmp_path / "m.nnapi"
    nnapi.save(tflite.convert(src).model, saved)
    alter_constant(saved, "pw0/w", 5.0)
    (bad,) = check(src, converted=str(saved), exact=True).as_dict()["exact"]
    assert bad["ours"] < 1e-5 and bad["litert"] > 10 * max(bad["ours"], 1e-9)


def test_float64_mode_runs_the_plain_kernels_in_float64():
    from converters import tflite
    from converters.running import random_source_inputs, to_nnapi_inputs
    from executor.runtime import RunState, compile_model
    r = tflite.convert(_sample("mobilenet_float.tflite"))
    ins = to_nnapi_inputs(r, random_source_inputs(r.source.main, 0))
    exact = compile_model(r.model, float64=True)
    assert all(s.run is s.kernel for s in exact.steps)                 # no float32 fast path
    (x,), (y,) = compile_model(r.model).run(ins, RunState(2.0)), exact.run(ins, RunState(2.0))
    assert x.array.dtype == np.float32 and y.array.dtype == np.float64
    assert 0 < np.abs(x.array - y.array).max() < 1e-6                  # float32 rounding, nothing more
