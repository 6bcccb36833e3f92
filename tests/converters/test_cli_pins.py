"""Pins checked against the model before any work, refusals that say what to do first and speak the
command line's language (issue 33)."""
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from converters import parity
from converters.cli import main
from tests.conftest import ROOT


def dynamic_onnx(path, dims=("batch", 3, "h", "w")):
    """x[batch, 3, h, w] -> Conv(SAME_UPPER) -> Relu -> Shape -> Reshape -> y: the Shape/Reshape pair needs
    the input's shape pinned."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], auto_pad="SAME_UPPER"),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Shape", ["r"], ["s"]),
             helper.make_node("Reshape", ["r", "s"], ["y"])]
    graph = helper.make_graph(nodes, "g", [x], [y], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return str(path)


@pytest.fixture
def model(tmp_path):
    return dynamic_onnx(tmp_path / "dyn.onnx")


@pytest.mark.parametrize("pins,words", [
    (["--input-shape", "x=1,4,8,8"], ["input 'x'", "dimension 1", "is 3", "gives 4"]),
    (["--input-shape", "x=1,3,8"], ["input 'x'", "rank 4", "3 dimensions"]),
    (["--input-shape", "x=1,3,8,8", "--dim", "h=16"], ["'h'", "--dim h=16", "8", "16"]),
    (["--dim", "nope=1"], ["--dim nope=1", "no dimension named 'nope'", "'batch', 'h', 'w'"]),
    (["--input-shape", "z=1,3,8,8"], ["no input named 'z'", "'x'"]),
])
@pytest.mark.parametrize("command", ["convert", "coverage", "parity"])
def test_contradicting_pins_are_exit_3_naming_input_dimension_and_value(tmp_path, capsys, model, pins, words, command):
    argv = [command, model, *pins] + (["-o", str(tmp_path / "o.nnapi")] if command == "convert" else [])
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert all(w in err for w in words), err
    assert "input_shapes" not in err and not (tmp_path / "o.nnapi").exists()


def test_tflite_static_dimension_pinned_to_another_value_names_it(capsys, tmp_path):
    model = ROOT / "samples" / "mobilenet_float.tflite"   # input 'image' [1, 32, 32, 3] (static)
    import tflite
    m = tflite.Model.GetRootAsModel(model.read_bytes(), 0)
    g = m.Subgraphs(0)
    shape = list(g.Tensors(g.Inputs(0)).ShapeAsNumpy())
    pinned = shape[:-1] + [shape[-1] + 1]
    assert main(["convert", str(model), "-o", str(tmp_path / "o.nnapi"), "--input-shape",
                 "image=" + ",".join(map(str, pinned))]) == 3
    err = capsys.readouterr().err
    assert f"dimension {len(shape) - 1} of input 'image' is {shape[-1]}" in err and f"gives {shape[-1] + 1}" in err


def test_unnamed_question_mark_extents_are_not_one_dimension(tmp_path):
    """Paddle writes '?' for every unknown extent: two of them pinned to different values agree with the model."""
    path = dynamic_onnx(tmp_path / "q.onnx", dims=("?", 3, "?", "?"))
    assert main(["convert", path, "-o", str(tmp_path / "o.nnapi"), "--input-shape", "x=1,3,8,6"]) == 0


def test_agreeing_pins_still_convert(tmp_path, model):
    assert main(["convert", model, "-o", str(tmp_path / "o.nnapi"), "--input-shape", "x=1,3,8,8", "--dim", "h=8"]) == 0


def test_refusal_says_what_to_do_on_its_first_line(tmp_path, capsys, model):
    for argv in (["convert", model, "-o", str(tmp_path / "o.nnapi")], ["parity", model]):
        assert main(argv) == 2
        lines = capsys.readouterr().err.splitlines()
        first = lines[0]
        assert "cannot be converted" in first and "--input-shape x=?,3,?,?" in first and "--partial" in first, first
        assert len(first) < 300, first
        assert any(line.startswith("  node 2 Shape") for line in lines[1:]), lines
        assert not any("input_shapes" in line for line in lines), lines


def test_converter_reasons_name_the_flags_not_the_python_arguments():
    found = subprocess.run(["grep", "-rn", "--include=*.py", "with input_shapes\\|input_shapes gives\\|input shapes pinned",
                            str(ROOT / "converters")], capture_output=True, text=True).stdout
    assert not found, found


def test_parity_partial_on_unpinned_model_gives_the_pin_advice(monkeypatch, capsys, model):
    from nnapi import NnapiError, ResultCode

    def executor_fails(*a, **k):   # what the executor says when a partition meets an extent left unknown
        raise NnapiError(ResultCode.BAD_DATA, "RESHAPE: shape [0, 2] has 0 elements")
    monkeypatch.setattr(parity, "check", executor_fails)
    assert main(["parity", model, "--partial"]) == 3
    lines = capsys.readouterr().err.splitlines()
    assert "pin --input-shape x=batch,3,h,w" in lines[0] and "RESHAPE" not in lines[0], lines
    assert any("RESHAPE: shape [0, 2]" in line for line in lines[1:])
    assert main(["parity", model, "--partial", "--input-shape", "x=1,3,8,8"]) == 3   # pinned: the executor's word
    assert capsys.readouterr().err.startswith("nnapi parity: error: BAD_DATA: RESHAPE")


def test_bench_vs_litert_on_a_custom_op_is_a_clear_exit_3(tmp_path, capsys):
    from tests.converters.test_parity_extracted import custom_converted_in_the_middle
    path = tmp_path / "custom.tflite"
    custom_converted_in_the_middle(path)
    assert main(["bench", str(path), "--vs", "litert", "--runs", "1", "--warmup", "0"]) == 3
    err = capsys.readouterr().err
    assert "Convolution2DTransposeBias" in err and "without --vs" in err and "internal error" not in err, err


def test_an_unpinned_model_is_refused_without_the_slow_symbolic_pass(monkeypatch, tmp_path, capsys, model):
    """onnxruntime's SymbolicShapeInference takes minutes on large unpinned models (rapidocr det: 83 s of
    convert before this, 7 s after, on a loaded machine); the refusal is decided without it."""
    from converters.onnx import shapes

    def slow_pass(proto):
        raise AssertionError("the symbolic pass ran")
    monkeypatch.setattr(shapes, "_symbolic_inference", slow_pass)
    for argv in (["convert", model, "-o", str(tmp_path / "o.nnapi")], ["parity", model]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "--input-shape x=?,3,?,?" in err.splitlines()[0] and "onnx's shape inference alone" in err, err


def test_a_model_that_converts_unpinned_is_not_refused(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "m.onnx")
    assert main(["convert", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.nnapi")]) == 0


def test_pinned_the_full_pass_runs_as_before(tmp_path, model):
    assert main(["convert", model, "-o", str(tmp_path / "o.nnapi"), "--input-shape", "x=1,3,8,8"]) == 0
