"""Edge cases of the shared conversion core (driver, parity, CLI): rank-0 and int64 outputs, folded
tensors, saved ONNX layouts, dynamic output sizes."""
import numpy as np

from converters.parity import check
from converters.tflite.authoring import GraphBuilder


def _rank0_model(tmp_path):
    g = GraphBuilder()
    x = g.input("x", [], "FLOAT32")
    a = g.tensor("a", [])
    g.op("RELU", [x], [a])
    g.output(a)
    path = tmp_path / "rank0.tflite"
    path.write_bytes(g.finish())
    return path


def test_parity_rank0_output_matches_source_shape(tmp_path):
    # NNAPI holds a rank-0 tensor as [1]; parity must compare it against the framework's []
    report = check(str(_rank0_model(tmp_path)), layerwise=True)
    assert report.passed, report.as_dict()
    assert report.outputs[0].shape == []
    assert report.outputs[0].max_abs_error == 0.0


def test_folded_tensor_of_dynamic_signature_converts_with_pinned_shape(tmp_path):
    # SHAPE -> FILL folds to a constant of the pinned shape; its stale -1 signature must not
    # make the constant look dynamic to its consumer
    from converters.tflite import convert
    g = GraphBuilder()
    x = g.tensor("x", [1, 4], shape_signature=[-1, 4])
    g.sg.inputs.append(x)
    s = g.tensor("s", [2], "INT32")
    g.op("SHAPE", [x], [s], "ShapeOptions")
    v = g.const("v", np.array(1.0, np.float32))
    f = g.tensor("f", [1, 4], shape_signature=[-1, 4])
    g.op("FILL", [s, v], [f])
    y = g.tensor("y", [1, 4], shape_signature=[-1, 4])
    g.op("ADD", [x, f], [y], "AddOptions")
    g.output(y)
    result = convert(g.finish(), input_shapes={"x": [2, 4]})
    assert result.complete, [(n.op, n.reason) for n in result.unsupported]
    from converters.running import run_converted
    got = run_converted(result, [np.zeros((2, 4), np.float32)])[0]
    np.testing.assert_array_equal(got, np.ones((2, 4), np.float32))


def test_parity_of_saved_onnx_model_undoes_nhwc_layout(tmp_path):
    # a saved .nnapi has no operand_perm: parity --model must still feed NHWC inputs (level 1)
    # and compare NHWC intermediates in the ONNX layout (--layerwise at level 8)
    import nnapi
    from converters.onnx import convert
    from tests.conftest import ROOT
    src = str(ROOT / "samples" / "resnet_float.onnx")
    for level in (1, 8):
        path = tmp_path / f"rn{level}.nnapi"
        nnapi.save(convert(src, feature_level=level).model, path)
        report = check(src, converted=str(path), layerwise=True)
        assert report.passed, (level, report.as_dict())
        assert report.first_divergence is None, (level, report.first_divergence)


def _argmax_int64(tmp_path, fallback: bool):
    g = GraphBuilder()
    x = g.input("x", [2, 5], "FLOAT32")
    ax = g.const("ax", np.array([1], np.int32))
    i = g.tensor("i", [2], "INT64")
    g.op("ARG_MAX", [x, ax], [i], "ArgMaxOptions", output_type=4)
    if fallback:  # CUMSUM has no NNAPI converter: i becomes a partition output
        c = g.tensor("c", [2], "INT64")
        g.op("CUMSUM", [i, g.const("axc", np.array(0, np.int32))], [c], "CumsumOptions")
        i = c
    g.output(i)
    path = tmp_path / f"argmax{int(fallback)}.tflite"
    path.write_bytes(g.finish())
    return str(path)


def test_parity_int64_indices_written_as_int32_compare_equal(tmp_path):
    report = check(_argmax_int64(tmp_path, False), layerwise=True)
    assert report.passed, report.as_dict()
    assert report.first_divergence is None
    report = check(_argmax_int64(tmp_path, True), partial=True)
    assert report.passed, report.as_dict()


def test_run_converted_gives_int64_indices_back(tmp_path):
    from converters.running import run_converted
    from converters.tflite import convert
    result = convert(_argmax_int64(tmp_path, False))
    got = run_converted(result, [np.arange(10, dtype=np.float32).reshape(2, 5)])[0]
    assert got.dtype == np.int64 and got.tolist() == [4, 4]


def test_run_dynamic_output_larger_than_default_buffer(tmp_path, capsys):
    # an output whose shape is known only at run time and has more than 65,536 elements
    import nnapi
    from converters.cli import main
    from tests.nnapi.helpers import dynamic_add_model
    nnapi.save(dynamic_add_model(), tmp_path / "dyn.nnapi")
    np.savez(tmp_path / "in.npz", input0=np.ones((300, 300), np.float32), input1=np.ones((300, 300), np.float32))
    assert main(["run", str(tmp_path / "dyn.nnapi"), "--inputs", str(tmp_path / "in.npz"),
                 "-o", str(tmp_path / "out.npz")]) == 0
    out = np.load(tmp_path / "out.npz")["output0"]
    assert out.shape == (300, 300) and (out == 2).all()


def test_malformed_foldable_node_is_reported_on_the_node(tmp_path):
    # FILL with negative constant dims: folding must not abort the whole conversion/coverage
    from converters.coverage import build_report
    from converters.tflite import convert, read
    g = GraphBuilder()
    x = g.input("x", [2, 4])
    f = g.tensor("f", [2, 4])
    g.op("FILL", [g.const("d", np.array([-2, 4], np.int32)), g.const("v", np.array(1.0, np.float32))], [f])
    y = g.tensor("y", [2, 4])
    g.op("ADD", [x, f], [y], "AddOptions")
    g.output(y)
    data = g.finish()
    result = convert(data)
    assert not result.complete
    assert [n.op for n in result.unsupported][0] == "FILL"
    path = tmp_path / "fill.tflite"
    path.write_bytes(data)
    report = build_report(read(str(path)))
    assert report["summary"]["nodes"] == 2


def test_onnx_graph_input_that_is_also_a_shapeless_output_keeps_its_shape(tmp_path):
    import onnx
    from onnx import TensorProto as T, helper as h
    from converters.onnx import read
    g = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 4, 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, None), h.make_tensor_value_info("x", T.FLOAT, None)])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    path = tmp_path / "x_out.onnx"
    onnx.save(m, str(path))
    source = read(str(path))
    assert source.main.tensors[source.main.inputs[0]].shape == (1, 3, 4, 4)
    report = check(str(path), layerwise=True)
    assert report.passed, report.as_dict()



def test_onnx_spatial_output_of_unknown_rank_is_reported_not_silently_nhwc(monkeypatch):
    """MaxPool writing a graph output of unknown rank: NHWC data must not pass as NCHW."""
    import onnx
    from onnx import TensorProto, helper

    from converters.onnx import convert as onnx_convert
    from converters.onnx import shapes
    from converters.running import run_converted

    def model(outputs):
        g = helper.make_graph(
            [helper.make_node("MaxPool", ["x"], ["t0"], kernel_shape=[2, 2])], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    x = np.arange(48, dtype=np.float32).reshape(1, 2, 4, 6)
    # x is also an output: the shape pass still gives t0 its shape
    r = onnx_convert(model(["x", "t0"]), input_shapes={"x": (1, 2, 4, 6)})
    np.testing.assert_array_equal(run_converted(r, [x])[1], _maxpool_2x2(x))
    # onnx's plain inference alone leaves t0 without a rank there, so no layout can be planned for it
    monkeypatch.setattr(shapes, "infer", onnx.shape_inference.infer_shapes)
    r = onnx_convert(model(["x", "t0"]), input_shapes={"x": (1, 2, 4, 6)})
    assert not r.complete
    assert r.unsupported[0].reason_code == "dynamic_shape" and "'t0'" in r.unsupported[0].reason
    monkeypatch.undo()
    # with t0's rank inferred, the output comes back in the ONNX layout
    r = onnx_convert(model(["t0"]), input_shapes={"x": (1, 2, 4, 6)})
    (y,) = run_converted(r, [x])
    np.testing.assert_array_equal(y, _maxpool_2x2(x))


def _maxpool_2x2(x):
    """ONNX MaxPool 2x2, stride 1, no padding, NCHW, written out independently."""
    n, c, h, w = x.shape
    out = np.full((n, c, h - 1, w - 1), -np.inf, np.float32)
    for dy in (0, 1):
        for dx in (0, 1):
            out = np.maximum(out, x[:, :, dy:dy + h - 1, dx:dx + w - 1])
    return out
