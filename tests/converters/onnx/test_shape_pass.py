"""The ONNX shape pass (converters/onnx/shapes.py): pins by input name and by dim_param, shapes through
shape-computing subgraphs, and what coverage says without pins. Expected values come from onnxruntime."""
from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from converters import tflite
from converters.coverage import read_source, report_for_path
from converters.onnx import convert, read
from tests.converters.onnx.harness import parity
from converters.source_graph import SourceError

RNG = np.random.default_rng(7)


def _model(nodes, inputs, outputs, inits=(), opset=13) -> bytes:
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, list(inits)),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def _flatten_by_shape(paddle_style: bool) -> bytes:
    """Conv, then Reshape to [N, C*H*W] with the target computed from Shape; the Paddle form goes through
    int32 Casts and a Concat on axis -1 (which onnxruntime's symbolic inference rejects)."""
    w = numpy_helper.from_array(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Shape", ["c"], ["s"])]
    consts = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in
              (("z", [0]), ("one", [1]), ("minus1", [-1]))]
    if paddle_style:
        nodes += [helper.make_node("Cast", ["s"], ["s32"], to=TensorProto.INT32),
                  helper.make_node("Slice", ["s32", "z", "one", "z"], ["n32"]),
                  helper.make_node("Cast", ["n32"], ["n"], to=TensorProto.INT64),
                  helper.make_node("Concat", ["n", "minus1"], ["target"], axis=-1)]
    else:
        nodes += [helper.make_node("Gather", ["s", "z"], ["n"], axis=0),
                  helper.make_node("Concat", ["n", "minus1"], ["target"], axis=0)]
    nodes += [helper.make_node("Reshape", ["c", "target"], ["y"]), helper.make_node("Softmax", ["y"], ["p"], axis=1)]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, "height", "width"])
    p = helper.make_tensor_value_info("p", TensorProto.FLOAT, None)
    return _model(nodes, [x], [p], [w, *consts])


@pytest.mark.parametrize("paddle_style", [False, True])
@pytest.mark.parametrize("pins", [dict(input_shapes={"x": (1, 3, 5, 6)}),
                                  dict(dims={"batch": 1, "height": 5, "width": 6})])
def test_pins_reach_a_shape_computed_reshape(paddle_style, pins):
    data = _flatten_by_shape(paddle_style)
    r = convert(data, **pins)
    assert r.complete, [(n.op, n.reason) for n in r.unsupported]
    out = r.source.main.tensors[r.source.main.outputs[0]]
    assert out.shape == (1, 4 * 5 * 6)
    assert not parity(r, data, seeds=(0, 1))


def test_without_pins_the_reshape_waits():
    r = convert(_flatten_by_shape(False))
    assert not r.complete


def test_dim_names_a_missing_symbol():
    with pytest.raises(SourceError, match="no dimension named 'depth'.*'batch'"):
        read(_flatten_by_shape(False), dims={"depth": 2})


def test_dim_pins_outputs_and_value_info_too():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])
    g = read(_model([helper.make_node("Relu", ["x"], ["y"])], [x], [y]), dims={"n": 2}).main
    assert [g.tensors[i].shape for i in g.inputs + g.outputs] == [(2, 4), (2, 4)]


def test_minus_one_dims_are_unknown_not_negative():
    """Exporters write dim_value -1 for unknown extents (Paddle): they are dynamic, and pinning fills them."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    x.type.tensor_type.shape.dim[0].dim_value = -1
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    y.type.tensor_type.shape.dim[0].dim_value = -1
    data = _model([helper.make_node("Relu", ["x"], ["y"])], [x], [y])
    g = read(data, {"x": (3, 4)}).main
    assert g.tensors[g.outputs[0]].shape == (3, 4)


def test_coverage_reads_with_the_pins(tmp_path):
    """coverage used to read the model unpinned: only the input itself got the pinned shape."""
    p = tmp_path / "m.onnx"
    p.write_bytes(_flatten_by_shape(True))
    assert report_for_path(str(p), 8, {"x": (1, 3, 5, 6)})["summary"]["supported_fraction"] == 1.0
    assert report_for_path(str(p), 8, None, {"batch": 1, "height": 5, "width": 6})["summary"][
        "supported_fraction"] == 1.0
    assert report_for_path(str(p), 8)["summary"]["supported_fraction"] < 1.0
    g = read_source(str(p), None, {"batch": 2}).main
    assert g.tensors[g.inputs[0]].shape == (2, 3, -1, -1)


def test_tflite_refuses_dims():
    with pytest.raises(SourceError, match="no named dimensions"):
        tflite.read(b"", dims={"batch": 1})


def test_symbolic_inference_writes_no_file(tmp_path, monkeypatch):
    """onnxruntime's SymbolicShapeInference.infer_shapes saves a temporary model into the working folder when
    it cannot finish; the shape pass must not."""
    monkeypatch.chdir(tmp_path)
    read(_flatten_by_shape(True))
    assert os.listdir(tmp_path) == []


# -- what coverage, convert and parity say without pins ----------------------------------------------------
def _two_inputs() -> bytes:
    """x [batch, 3, height, width] through a Conv (MACs) and a Shape-computed Reshape; z [n, 4] with a
    NonZero count (value-dependent: no pin fixes it)."""
    w = numpy_helper.from_array(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    z0 = numpy_helper.from_array(np.array([0], np.int64), "zero")
    m1 = numpy_helper.from_array(np.array([-1], np.int64), "minus1")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Shape", ["c"], ["s"]), helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Concat", ["n", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["c", "target"], ["y"]),
             helper.make_node("NonZero", ["z"], ["nz"]), helper.make_node("Transpose", ["nz"], ["nzt"]),
             helper.make_node("Cast", ["nzt"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Softplus", ["f"], ["g"])]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, "height", "width"]),
           helper.make_tensor_value_info("z", TensorProto.FLOAT, [5, 4])]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("g", TensorProto.FLOAT, None)]
    return _model(nodes, ins, outs, [w, z0, m1])


def test_coverage_names_the_pins_and_the_values(tmp_path):
    p = tmp_path / "m.onnx"
    p.write_bytes(_two_inputs())
    s = report_for_path(str(p), 8)["summary"]
    (pin,) = s["pins_needed"]
    assert pin["input"] == "x" and pin["dims"] == ["batch", "height", "width"] and pin["axes"] == [0, 2, 3]
    assert pin["nodes"] >= 1 and pin["macs_fraction"] == 1.0  # the Conv waits on x
    assert s["value_dependent"] and s["value_dependent"][0]["op"] == "NonZero"
    pinned = report_for_path(str(p), 8, None, {"batch": 1, "height": 5, "width": 6})["summary"]
    assert pinned["pins_needed"] == []


def test_convert_and_parity_say_the_pins_when_they_refuse(tmp_path, capsys):
    import json

    from converters.cli import main
    p = tmp_path / "m.onnx"
    p.write_bytes(_flatten_by_shape(False))
    assert main(["convert", str(p), "-o", str(tmp_path / "o.nnapi")]) == 2
    assert "pin x (batch, height, width)" in capsys.readouterr().err
    out = tmp_path / "p.json"
    assert main(["parity", str(p), "--format", "json", "-o", str(out)]) == 2
    report = json.loads(out.read_text())
    assert report["pins_needed"][0]["input"] == "x" and "--input-shape x=?,3,?,?" in report["error"]
    assert any(line.startswith("pin x (batch, height, width)") for line in report["details"])
    assert main(["parity", str(p), "--dim", "batch=1", "--dim", "height=5", "--dim", "width=6"]) == 0


@pytest.mark.parametrize("paddle_style", [False, True])
def test_without_onnxruntime_the_evaluated_rounds_still_pin(paddle_style, monkeypatch):
    """onnxruntime is optional: onnx's inference plus the rounds that evaluate the shape computations."""
    from converters.onnx import shapes
    monkeypatch.setattr(shapes, "_symbolic_inference", lambda proto: None)
    data = _flatten_by_shape(paddle_style)
    r = convert(data, input_shapes={"x": (1, 3, 5, 6)})
    assert r.complete and not parity(r, data, seeds=(0,))


def test_other_report_formats_name_the_pins(tmp_path):
    from converters.coverage_render import render
    p = tmp_path / "m.onnx"
    p.write_bytes(_flatten_by_shape(False))
    r = report_for_path(str(p), 8)
    for fmt in ("text", "markdown", "html"):
        assert "pin x (batch, height, width)" in render(r, fmt)


def test_dims_and_input_shapes_together():
    """--dim and --input-shape pinning the same input agree: the named dimension is matched first."""
    import numpy as np
    from onnx import TensorProto, helper

    from converters.onnx import convert
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    result = convert(data, input_shapes={"x": (2, 4)}, dims={"batch": 2})
    assert result.complete and list(result.model.operands[result.model.inputs[0]].type.dimensions) == [2, 4]
    assert np.dtype(result.source.main.tensors[result.source.main.inputs[0]].dtype) == np.float32
