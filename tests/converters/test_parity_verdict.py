"""Parity's verdict: what it must have checked before it says PASS, and the mutations only its newer checks
catch (an error spread thin over many operations, an operation the local pass cannot run, an output nothing
can be compared with)."""
from pathlib import Path

import numpy as np
import pytest

from converters.parity import ParityReport, check
from converters.parity_verdict import conclude
from converters.tflite.authoring import GraphBuilder

ROOT = Path(__file__).resolve().parents[2]
RESNET_INT8 = ROOT / "tests" / "zoo" / "models" / "tf" / "resnet_small_int8.tflite"   # TensorFlow, full int8


def _every_conv_one_unit_high(monkeypatch):
    """Every CONV_2D and DEPTHWISE_CONV_2D of the executor writes each stored value one unit higher: each
    operation stays within the local verdict's one unit, and the errors compound along the model."""
    from executor import runtime
    prepared = runtime.CompiledModel._prepared

    def bumped(self, step):
        run = prepared(self, step) or step.kernel
        if step.code.name not in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            return run

        def one_unit_high(ctx):
            outs = run(ctx)
            for o in outs:
                a = getattr(o, "array", o)
                if isinstance(a, np.ndarray) and a.dtype in (np.int8, np.uint8):
                    info = np.iinfo(a.dtype)
                    a[...] = np.clip(a.astype(np.int32) + 1, info.min, info.max)
            return outs
        return one_unit_high
    monkeypatch.setattr(runtime.CompiledModel, "_prepared", bumped)


def test_a_unit_at_every_operation_passes_locally_and_fails_end_to_end(monkeypatch):
    clean = check(str(RESNET_INT8)).as_dict()
    assert clean["passed"] and clean["end_to_end"]["max_units"] <= 1
    _every_conv_one_unit_high(monkeypatch)
    r = check(str(RESNET_INT8)).as_dict()
    assert all(e["passed"] and e["max_units"] <= 1 for e in r["local"])   # the local verdict alone would pass
    e2e = r["end_to_end"]
    assert e2e["reference"] == "litert-ref" and not e2e["passed"] and e2e["max_units"] > e2e["allowed_units"]
    # the allowance: 2 sqrt(depth) + 1 units, depth = the rounding points on the longest path to the output
    (out,) = e2e["outputs"]
    assert e2e["allowed_units"] == int(np.ceil(2 * np.sqrt(out["depth"]) + 1))
    assert not r["passed"] and r["verdict"]["failures"][0].startswith("end to end against litert-ref")


def test_an_operation_that_raises_in_the_local_pass_is_unjudged_and_fails(monkeypatch):
    from executor import runtime
    run_operation = runtime.CompiledModel.run_operation

    def raising(self, k, arrays):
        if k == 2:
            raise ValueError("broken kernel")
        return run_operation(self, k, arrays)
    monkeypatch.setattr(runtime.CompiledModel, "run_operation", raising)
    r = check(str(ROOT / "samples" / "mobilenet_int8.tflite")).as_dict()
    (bad,) = [u for u in r["unjudged"] if not u["harmless"]]
    assert bad["operation_index"] == 2 and "ValueError: broken kernel" in bad["why"]
    assert 2 not in {e["operation_index"] for e in r["local"]}
    assert not r["passed"] and "could not be judged, first operation 2" in r["verdict"]["failures"][0]


def test_every_output_of_an_operation_is_judged(tmp_path, monkeypatch):
    """SPLIT writes two source tensors: both are compared (the entry counts them), not just the first: its
    second output made 5 units off in the local pass fails the verdict."""
    g = GraphBuilder()
    x = g.input("x", [1, 4], "INT8", scale=[0.5], zero_point=[0])
    halves = [g.tensor(n, [1, 2], "INT8", scale=[0.5], zero_point=[0]) for n in ("left", "right")]
    g.op("SPLIT", [g.const("axis", np.array(1, np.int32)), x], halves, "SplitOptions", num_splits=2)
    for h in halves:
        g.output(h)
    path = tmp_path / "split.tflite"
    path.write_bytes(g.finish())
    r = check(str(path)).as_dict()
    (entry,) = r["local"]
    assert entry["nnapi_op"] == "SPLIT" and entry["outputs_judged"] == 2 and r["passed"]
    from executor import runtime
    run_operation = runtime.CompiledModel.run_operation

    def second_off(self, k, arrays):
        outs = run_operation(self, k, arrays)
        outs[1] = (outs[1].astype(np.int32) + 5).astype(outs[1].dtype)
        return outs
    monkeypatch.setattr(runtime.CompiledModel, "run_operation", second_off)
    bad = check(str(path)).as_dict()
    (entry,) = bad["local"]
    assert not entry["passed"] and entry["source_tensor"] == "right" and entry["max_units"] == 5
    assert not bad["passed"]


def _argmax_pool_model(path):
    """x -> ADD 1 -> CUSTOM MaxPoolingWithArgmax2D (converted; LiteRT's built-in kernels have none, XNNPACK
    encodes its indices another way) -> (values, indices)."""
    g = GraphBuilder()
    x = g.input("x", [1, 4, 4, 1])
    a = g.tensor("added", [1, 4, 4, 1])
    g.op("ADD", [x, g.const("one", np.ones((1, 4, 4, 1), np.float32))], [a], "AddOptions")
    values, indices = g.tensor("values", [1, 2, 2, 1]), g.tensor("indices", [1, 2, 2, 1])
    # TfLitePoolParams: VALID, stride 2 x 2, filter 2 x 2, no activation
    g.custom("MaxPoolingWithArgmax2D", [a], [values, indices], np.array([2, 2, 2, 2, 2, 0, 0, 0], "<i4").tobytes())
    g.output(values)
    g.output(indices)
    path.write_bytes(g.finish())


def test_both_outputs_of_an_argmax_pooling_are_compared_through_the_chain(tmp_path):
    path = tmp_path / "m.tflite"
    _argmax_pool_model(path)
    r = check(str(path)).as_dict()
    assert r["reference"] == "litert" and r.get("reference_fallback") is None   # not XNNPACK's other indices
    assert r["passed"] and [o["name"] for o in r["outputs"]] == ["values", "indices"]
    assert [c["tensor"] for c in r["custom_nodes"]] == ["values", "indices"] and all(c["passed"]
                                                                                      for c in r["custom_nodes"])


def test_outputs_no_reference_reaches_are_listed_and_the_verdict_fails(tmp_path, monkeypatch):
    """A custom operator parity has no numpy reference of (as MaxPoolingWithArgmax2D were without one)."""
    from converters import parity_custom_refs
    monkeypatch.delitem(parity_custom_refs.CUSTOM_REFERENCES, "MaxPoolingWithArgmax2D")
    path = tmp_path / "m.tflite"
    _argmax_pool_model(path)
    r = check(str(path)).as_dict()
    assert r["outputs"] == [] and [u["name"] for u in r["unchecked_outputs"]] == ["values", "indices"]
    assert all("no independent reference for the custom operator MaxPoolingWithArgmax2D" in u["why"]
               for u in r["unchecked_outputs"])
    assert not r["passed"] and r["verdict"]["failures"][0].startswith("no output was compared")


def test_a_model_output_a_cpu_fallback_node_computes_is_listed_with_why(tmp_path):
    g = GraphBuilder()
    x = g.input("x", [1, 3, 2])
    a = g.tensor("a", [1, 3, 2])
    g.op("ADD", [x, x], [a], "AddOptions")
    b = g.tensor("b", [1, 3, 2])
    g.op("CUMSUM", [a, g.const("axis", np.array(2, np.int32))], [b], "CumsumOptions")  # no NNAPI cumulative sum
    g.output(a)
    g.output(b)
    path = tmp_path / "p.tflite"
    path.write_bytes(g.finish())
    r = check(str(path), partial=True).as_dict()
    assert r["passed"] and r["checked_by"].startswith("partitions")
    (u,) = r["unchecked_outputs"]
    assert u["name"] == "b" and u["why"].startswith("computed by CPU fallback node 1 CUMSUM")


def test_no_compared_output_is_never_a_pass():
    report = ParityReport("m.tflite", "litert", 1, [])
    report.verdict = {"rule": "end-to-end"}
    report.model_outputs = ["y"]
    assert not conclude(report) and not report.passed
    assert report.verdict["failures"] == ["no output was compared",
                                          "model output 'y' was neither compared nor explained"]
