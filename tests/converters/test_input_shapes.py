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
