"""Partition parity when the framework cannot run the whole model: partitions as extracted sub-models."""
import numpy as np
from ai_edge_litert import schema_py_generated as schema

from converters.extract import tflite_submodel
from converters.parity import check
from converters.parity_render import render_text
from converters.runners import run_litert
from converters.tflite.authoring import GraphBuilder

GAIN = np.linspace(0.5, 2.0, 8, dtype=np.float32).reshape(1, 8)


def custom_in_the_middle(path):
    """x -> ADD 1 -> CUSTOM 'NoSuchOp' (LiteRT has no kernel: it cannot run the model) -> MUL gain -> y."""
    g = GraphBuilder()
    x = g.input("x", [1, 8])
    one = g.const("one", np.ones((1, 8), np.float32))
    a = g.tensor("added", [1, 8])
    g.op("ADD", [x, one], [a], "AddOptions")
    c = g.tensor("customised", [1, 8])
    oc = schema.OperatorCodeT()
    oc.builtinCode = oc.deprecatedBuiltinCode = schema.BuiltinOperator.CUSTOM
    oc.customCode, oc.version = "NoSuchOp", 1
    g.root.opcode_list.append(oc)
    o = schema.OperatorT()
    o.opcodeIndex, o.inputs, o.outputs = len(g.root.opcode_list) - 1, [a], [c]
    g.sg.operators.append(o)
    gain = g.const("gain", GAIN)
    y = g.tensor("y", [1, 8])
    g.op("MUL", [c, gain], [y], "MulOptions")
    g.output(y)
    data = g.finish()
    path.write_bytes(data)
    return data


def test_a_submodel_runs_just_its_nodes(tmp_path):
    data = custom_in_the_middle(tmp_path / "m.tflite")
    x = np.arange(8, dtype=np.float32).reshape(1, 8)
    (first,) = run_litert(tflite_submodel(data, 0, [0], [0], [2]), [x])
    np.testing.assert_array_equal(first, x + 1)                    # by hand: ADD of ones
    (last,) = run_litert(tflite_submodel(data, 0, [2], [3], [5]), [x])
    np.testing.assert_array_equal(last, x * GAIN)


def test_partial_parity_checks_each_partition_as_a_submodel(tmp_path):
    path = tmp_path / "m.tflite"
    custom_in_the_middle(path)
    r = check(str(path), partial=True, samples=2).as_dict()
    assert "NoSuchOp" in r["whole_model_run"]
    assert r["passed"] and len(r["partitions"]) == 2
    first, second = r["partitions"]
    assert first["nodes"] == [0] and second["nodes"] == [2]
    assert "the model's inputs" in first["fed"]
    assert "seeded random values for 'customised'" in second["fed"]
    assert [o["name"] for o in first["outputs"]] == ["added"] and [o["name"] for o in second["outputs"]] == ["y"]
    assert all(o["max_abs_error"] <= 1e-6 for p in r["partitions"] for o in p["outputs"])


def custom_converted_in_the_middle(path):
    """x -> ADD 1 -> CUSTOM Convolution2DTransposeBias (the converter makes it TRANSPOSE_CONV_2D; LiteRT's
    built-in kernels have none) -> MUL 2 -> y: converted whole, yet LiteRT `litert` cannot run it."""
    rng = np.random.default_rng(0)
    g = GraphBuilder()
    x = g.input("x", [1, 3, 3, 2])
    a = g.tensor("added", [1, 3, 3, 2])
    g.op("ADD", [x, g.const("one", np.ones((1, 3, 3, 2), np.float32))], [a], "AddOptions")
    w = g.const("w", rng.standard_normal((2, 2, 2, 2)).astype(np.float32))
    b = g.const("b", rng.standard_normal(2).astype(np.float32))
    c = g.tensor("upsampled", [1, 5, 5, 2])
    g.custom("Convolution2DTransposeBias", [a, w, b], [c], np.asarray([1, 2, 2], "<i4").tobytes())  # SAME, 2, 2
    y = g.tensor("y", [1, 5, 5, 2])
    g.op("MUL", [c, g.const("two", np.full((1, 1, 1, 2), 2, np.float32))], [y], "MulOptions")
    g.output(y)
    path.write_bytes(g.finish())


def test_a_complete_conversion_is_checked_end_to_end_where_the_framework_lacks_a_custom_op(tmp_path):
    """LiteRT's built-in kernels cannot run Convolution2DTransposeBias: by default XNNPACK, which can, runs the
    whole model; with --reference litert, the segments around the custom node are chained with parity's numpy
    reference of it, so the model's output is still compared end to end."""
    from converters import tflite
    path = tmp_path / "m.tflite"
    custom_converted_in_the_middle(path)
    assert tflite.convert(str(path)).complete
    report = check(str(path))
    r = report.as_dict()
    assert r["reference"] == "litert-xnnpack" and "Convolution2DTransposeBias" in r["reference_fallback"]
    text = render_text(report)
    assert "PASS against litert-xnnpack" in text and "reference: litert could not run the model" in text
    assert "outputs: 1 of 1 compared (whole-model reference litert-xnnpack)" in text
    assert r["passed"] and "whole_model_run" not in r and [o["name"] for o in r["outputs"]] == ["y"]
    assert r["checked_by"] == "whole-model reference litert-xnnpack" and r["unchecked_outputs"] == []
    chained = check(str(path), reference="litert").as_dict()
    assert "Convolution2DTransposeBias" in chained["whole_model_run"]
    assert chained["passed"] and [p["nodes"] for p in chained["partitions"]] == [[0], [2]]
    assert all(p["segment"] and "executor's values" in p["fed"] for p in chained["partitions"])
    assert [o["name"] for o in chained["outputs"]] == ["y"] and chained["outputs"][0]["max_abs_error"] < 1e-5
    assert chained["checked_by"].startswith("chained") and chained["unchecked_outputs"] == []
    (node,) = chained["custom_nodes"]
    assert node["node_index"] == 1 and node["op"] == "Convolution2DTransposeBias" and node["passed"]
    assert node["tensor"] == "upsampled" and "numpy reference" in node["checked_by"]


def test_dynamic_range_models_are_judged_on_their_dequantized_weights():
    """A TensorFlow dynamic-range model (int8 weights, float activations) from the zoo: the reference is
    LiteRT on the model with its weights dequantized (NNAPI's arithmetic), the hybrid kernels are drift."""
    from pathlib import Path

    from converters.extract import tflite_float_twin
    from converters.running import random_source_inputs, run_converted
    path = Path(__file__).resolve().parents[1] / "zoo" / "models" / "tf" / "unet_dynamic.tflite"
    data = path.read_bytes()
    twin = tflite_float_twin(data)
    from converters import tflite
    result = tflite.convert(str(path))
    ins = random_source_inputs(result.source.main, 0)
    (ours,), (float_ref,), (hybrid,) = run_converted(result, ins), run_litert(twin, ins), run_litert(data, ins)
    assert np.abs(ours - float_ref).max() < 1e-4 < np.abs(hybrid - float_ref).max()     # hybrid drifts, we do not
    r = check(str(path)).as_dict()
    assert r["passed"] and "dequantized" in r["verdict"]["reference_model"]
    assert r["verdict"]["hybrid_drift"]["max_abs_error"] > 1e-3
    assert tflite_float_twin((Path(__file__).resolve().parents[2] / "samples" / "mobilenet_int8.tflite")
                             .read_bytes()) is None                           # full int8: nothing to dequantize
