"""Dynamic input dimensions: left unknown where NNAPI allows it, pinned with --input-shape,
and bad pins reported (exit 3) by every command."""
import numpy as np
import pytest

from converters.cli import main
from converters.convert import ConversionError
from converters.parity import check
from converters.tflite import convert
from converters.tflite.authoring import GraphBuilder


@pytest.fixture
def dynamic_batch(tmp_path):
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2], shape_signature=[-1, 3, 5, 2])
    w = g.const("w", np.arange(8, dtype=np.float32).reshape(4, 1, 1, 2))
    b = g.const("b", np.zeros(4, np.float32))
    y = g.tensor("y", [1, 3, 5, 4], shape_signature=[-1, 3, 5, 4])
    g.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1)
    g.output(y)
    path = tmp_path / "dyn.tflite"
    path.write_bytes(g.finish())
    return path


def test_unknown_batch_stays_unknown_and_pins(dynamic_batch):
    r = convert(dynamic_batch)
    assert r.model.operands[r.model.inputs[0]].type.dimensions == (0, 3, 5, 2)
    r = convert(dynamic_batch, input_shapes={"x": (4, 3, 5, 2)})
    assert r.model.operands[r.model.inputs[0]].type.dimensions == (4, 3, 5, 2)
    d = check(str(dynamic_batch), input_shapes={"x": (4, 3, 5, 2)}).as_dict()
    assert d["passed"] and d["outputs"][0]["shape"] == [4, 3, 5, 4]


def test_pinned_input_gives_every_operand_its_dimensions(dynamic_batch):
    """The source graph keeps the batch unknown past the input; the converter fills the dimensions the
    pinned input determines from the op specs' shape inference (nnapi.infer_shapes)."""
    unpinned = convert(dynamic_batch).model
    assert any(0 in o.type.dimensions for o in unpinned.operands if o.type.is_tensor and not o.is_constant)
    model = convert(dynamic_batch, input_shapes={"x": (4, 3, 5, 2)}).model
    tensors = [o for o in model.operands if o.type.is_tensor]
    assert all(o.type.dimensions and 0 not in o.type.dimensions for o in tensors)
    assert model.operands[model.outputs[0]].type.dimensions == (4, 3, 5, 4)


@pytest.mark.parametrize("pin,message", [("y=4,3,5,2", "no input of that name"),
                                         ("x=4,3,5", "rank 4"),
                                         ("x=4,3,6,2", "contradicts")])
def test_bad_pins_are_reported(dynamic_batch, tmp_path, capsys, pin, message):
    with pytest.raises(ConversionError, match=message):
        convert(dynamic_batch, input_shapes={pin.split("=")[0]: tuple(int(d) for d in pin.split("=")[1].split(","))})
    for cmd in (["convert", str(dynamic_batch), "-o", str(tmp_path / "o.nnapi")], ["coverage", str(dynamic_batch)],
                ["parity", str(dynamic_batch)]):
        assert main(cmd + ["--input-shape", pin]) == 3
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
    assert not (tmp_path / "o.nnapi").exists()


def test_pin_contradicting_a_static_input_is_reported(tmp_path):
    """A model without shape signatures is fully static: a different pin would silently change it."""
    from tests.conftest import ROOT
    with pytest.raises(ConversionError, match="contradicts"):
        convert(ROOT / "samples" / "mobilenet_float.tflite", input_shapes={"image": (1, 16, 16, 3)})
    assert main(["convert", str(ROOT / "samples" / "mobilenet_float.tflite"), "-o", str(tmp_path / "m.nnapi"),
                 "--input-shape", "image=1,32,32,3"]) == 0  # the same shape pinned is fine


def _framed_signal(squeeze_dims=(-3,)):
    """melspectrogram-like: a [-1, -1] signal framed by a strided CONV_2D between EXPAND_DIMS and SQUEEZE;
    every intermediate's `shape` holds TFLite's placeholder 1 where its signature is -1."""
    g = GraphBuilder()
    x = g.input("signal", [1, 1], shape_signature=[-1, -1])
    a1, a3 = g.const("a1", np.int32([1])), g.const("a3", np.int32([3]))
    e1 = g.tensor("e1", [1, 1, 1], shape_signature=[-1, 1, -1])
    g.op("EXPAND_DIMS", [x, a1], [e1])
    e3 = g.tensor("e3", [1, 1, 1, 1], shape_signature=[-1, 1, -1, 1])
    g.op("EXPAND_DIMS", [e1, a3], [e3])
    w = g.const("w", np.random.default_rng(0).standard_normal((3, 1, 4, 1)).astype(np.float32))
    b = g.const("b", np.zeros(3, np.float32))
    c = g.tensor("frames", [1, 1, 1, 3], shape_signature=[-1, 1, -1, 3])
    g.op("CONV_2D", [e3, w, b], [c], "Conv2DOptions", padding="VALID", stride_w=2, stride_h=1)
    s = g.tensor("squeezed", [1, 1, 3], shape_signature=[-1, -1, 3])
    g.op("SQUEEZE", [c], [s], "SqueezeOptions", squeeze_dims=list(squeeze_dims))
    y = g.tensor("power", [1, 1, 3], shape_signature=[-1, -1, 3])
    g.op("MUL", [s, s], [y], "MulOptions")
    g.output(y)
    return g.finish()


def test_placeholder_extents_resolve_from_the_pinned_input(tmp_path):
    path = tmp_path / "framed.tflite"
    path.write_bytes(_framed_signal())
    r = convert(path, input_shapes={"signal": (1, 16)})
    assert r.complete, [n.reason for n in r.unsupported]
    dims = {o.name: o.type.dimensions for o in r.model.operands if o.name}
    assert dims["frames"] == (1, 1, 7, 3) and dims["squeezed"] == (1, 7, 3) and dims["power"] == (1, 7, 3)
    d = check(str(path), input_shapes={"signal": (1, 16)}, samples=2).as_dict()
    assert d["passed"] and d["outputs"][0]["shape"] == [1, 7, 3]


def test_squeeze_of_a_static_unit_axis_converts_without_pins(tmp_path):
    r = convert(_framed_signal())
    assert r.complete, [n.reason for n in r.unsupported]
    squeeze = next(o for o in r.model.operands if o.name == "squeezed")
    assert squeeze.type.dimensions == (0, 0, 3)


def test_squeeze_of_a_dynamic_axis_is_refused_with_the_axis():
    r = convert(_framed_signal(squeeze_dims=(0, 1)))
    (n,) = r.unsupported
    assert n.op == "SQUEEZE" and n.reason_code == "dynamic_shape" and "[0]" in n.reason
