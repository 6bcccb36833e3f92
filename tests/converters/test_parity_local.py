"""Local parity: every NNAPI operation fed the framework's tensors; the default verdict for quantized models."""
import numpy as np

import nnapi
from converters import tflite
from converters.parity import check

from tests.converters.test_parity_tolerance import _sample, _with_constant


def test_quantized_models_are_judged_operation_by_operation_against_the_reference_kernels():
    r = check(_sample("mobilenet_int8.tflite")).as_dict()
    assert r["verdict"]["rule"] == "local" and r["verdict"]["local_reference"] == "litert-ref"
    model = tflite.convert(_sample("mobilenet_int8.tflite")).model
    judged = {e["operation_index"] for e in r["local"]}
    assert judged and judged <= set(range(len(model.operations)))
    assert all(e["max_units"] is not None and e["passed"] and e["reference"] == "litert-ref" for e in r["local"])
    assert r["passed"] and "end-to-end drift" in r["verdict"]["summary"]
    assert set(r["verdict"]["drift"]) == {"max_units", "max_abs_error", "cosine", "top1_agreement", "top5_agreement",
                                          "kernel_spread"}
    spread = r["verdict"]["drift"]["kernel_spread"]
    assert spread["kernel_sets"] == ["litert", "litert-ref", "litert-xnnpack"] and spread["drift"] >= 0
    e2e = r["end_to_end"]
    assert e2e["reference"] == "litert-ref" and e2e["passed"] and e2e["max_units"] <= e2e["allowed_units"]
    assert r["unjudged"] == [] or all(u["harmless"] for u in r["unjudged"])


def test_an_altered_quantized_weight_fails_at_its_own_operation(tmp_path):
    model = tflite.convert(_sample("mobilenet_int8.tflite")).model
    (w,) = [i for i, o in enumerate(model.operands) if o.name == "pw1/w"]
    (user,) = [k for k, op in enumerate(model.operations) if w in op.inputs]
    path = tmp_path / "m.nnapi"
    nnapi.save(model, path)
    loaded = nnapi.load(path)
    weights = np.asarray(loaded.operands[w].value).copy()
    weights.reshape(-1)[: weights.size // 4] = np.clip(weights.reshape(-1)[: weights.size // 4].astype(np.int16) + 40,
                                                       -127, 127)
    nnapi.save(_with_constant(loaded, w, weights), path)
    r = check(_sample("mobilenet_int8.tflite"), converted=str(path)).as_dict()
    assert not r["passed"]
    failing = [e for e in r["local"] if not e["passed"]]
    assert failing and failing[0]["operation_index"] == user
    # the operations before it are fed the framework's tensors, so they still pass
    assert all(e["passed"] for e in r["local"] if e["operation_index"] < user)


def test_max_lsb_makes_the_end_to_end_error_the_rule_and_float_models_keep_it():
    r = check(_sample("mobilenet_int8.tflite"), max_lsb=1).as_dict()
    assert r["verdict"]["rule"] == "end-to-end" and "local" not in r
    f = check(_sample("mobilenet_float.tflite"), local=True).as_dict()
    assert f["verdict"]["rule"] == "end-to-end" and f["local"]
    assert all(e["max_units"] is None and e["passed"] for e in f["local"])


def test_the_operations_of_one_lowering_are_judged_together():
    """A per-channel FULLY_CONNECTED becomes RESHAPE, CONV_2D, RESHAPE: the temporaries between them take the
    values this local pass computes from the framework's inputs, not the whole run's drifted ones (a
    TensorFlow-converted int8 GRU with float I/O from the zoo)."""
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "zoo" / "models" / "tf" / "gru_imu_int8_float_io.tflite"
    r = check(str(path)).as_dict()
    assert r["verdict"]["rule"] == "local" and r["passed"]
    assert max(e["max_units"] for e in r["local"] if e["max_units"] is not None) <= 1


def test_partitions_of_a_partial_quantized_model_are_judged_operation_by_operation(tmp_path):
    """A QDQ model with a node NNAPI has no form for (Hardmax, left in float by onnxruntime between two quantized
    convolutions): --partial judges each partition's operations locally, as the default verdict judges a complete
    quantized model; the partitions' outputs are drift beside it."""
    from onnx import helper as h

    from tests.converters.onnx.ortq_models import float_model, ort_quantized
    from tests.converters.onnx.test_qdq_patterns import conv
    inits = {}
    nodes = [conv("x", "a", 3, 4, prefix="a", inits=inits), h.make_node("Hardmax", ["a"], ["m"], axis=-1),
             conv("m", "y", 4, 2, prefix="b", inits=inits)]
    model = float_model(nodes, [("x", [1, 3, 6, 6])], ["y"], inits)
    path = tmp_path / "partial.onnx"
    path.write_bytes(ort_quantized(model, [("x", [1, 3, 6, 6])], "qdq"))
    r = check(str(path), partial=True, samples=2).as_dict()
    assert len(r["partitions"]) == 2
    assert r["verdict"]["rule"] == "local", r["verdict"]
    assert {e["partition"] for e in r["local"]} == {0, 1}
    assert r["passed"] and all(e["passed"] for e in r["local"])
    # each partition fed the reference kernels' boundary tensors, its outputs against theirs
    e2e = r["end_to_end"]
    assert e2e["passed"] and {o.get("partition") for o in e2e["outputs"]} <= {0, 1} and e2e["outputs"]
    assert any(e["nnapi_op"] == "CONV_2D" and e["max_units"] is not None and e["max_units"] <= 1 for e in r["local"])
    e2e = check(str(path), partial=True, max_lsb=1).as_dict()
    assert e2e["verdict"]["rule"] == "end-to-end" and "local" not in e2e


def test_an_output_of_another_shape_fails_the_local_verdict():
    """Drift is left to the end-to-end figures, a different shape (max |diff| inf) is not drift."""
    from converters.parity import OutputParity, ParityReport
    from converters.parity_verdict import conclude
    report = ParityReport("m.onnx", "onnxruntime", 1, [OutputParity("y", [2], "float32", max_abs_error=0.5)])
    report.verdict = {"rule": "local"}
    report.local = [{"passed": True}]
    report.end_to_end = {"reference": "onnxruntime", "max_units": 0, "allowed_units": 1, "passed": True,
                         "outputs": []}
    assert conclude(report) and report.passed
    report.partitions = [{"index": 0, "passed": False, "outputs": [{"name": "z", "max_abs_error": float("inf")}]}]
    assert not conclude(report) and not report.passed
    assert report.verdict["failures"] == ["output 'z' has another shape or NaNs where the framework has none"]
