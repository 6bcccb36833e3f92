"""Reading .onnx models: shapes, constants, attributes, opsets, external data, and SourceError (never a
traceback) for malformed models."""
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper as h, numpy_helper

from converters.onnx import convert, read
from converters.onnx.authoring import make_model
from converters.source_graph import SourceError

X = ("x", np.float32, [1, 2, 3, 5])


def graph_model(nodes, inputs, outputs, inits=(), opsets=(("", 17),)):
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = 8
    return m


def vi(name, shape, elem=TensorProto.FLOAT):
    return h.make_tensor_value_info(name, elem, shape)


def test_shapes_constants_attributes_and_opsets():
    w = np.arange(8, dtype=np.float32).reshape(4, 2, 1, 1)
    nodes = [h.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.float32([2.0]))),
             h.make_node("Conv", ["x", "w"], ["c"], strides=[1, 1], auto_pad="VALID", name="conv0"),
             h.make_node("Mul", ["c", "k"], ["y"])]
    m = graph_model(nodes, [vi("x", ["batch", 2, 3, 5]), vi("w", [4, 2, 1, 1])], [vi("y", None)],
                    [numpy_helper.from_array(w, "w")], opsets=(("", 13),))
    src = read(m.SerializeToString())
    g = src.main
    names = {t.name: t for t in g.tensors}
    assert [n.op for n in g.nodes] == ["Conv", "Mul"]  # the Constant node became a constant tensor
    assert names["k"].is_constant and names["k"].data.tolist() == [2.0]
    assert names["w"].is_constant and [g.tensors[i].name for i in g.inputs] == ["x"]  # initializer input
    assert not names["w"].data.flags.writeable and np.array_equal(names["w"].data, w)
    assert names["x"].shape == (-1, 2, 3, 5) and names["y"].shape == (-1, 4, 3, 5)
    conv = g.nodes[0]
    assert conv.attrs == {"strides": [1, 1], "auto_pad": "VALID"} and conv.version == 13 and conv.name == "conv0"
    pinned = read(m.SerializeToString(), input_shapes={"x": (2, 2, 3, 5)}).main
    assert {t.name: t for t in pinned.tensors}["y"].shape == (2, 4, 3, 5)


def test_tensor_and_graph_attributes_are_decoded():
    body = h.make_graph([h.make_node("Identity", ["a"], ["b"])], "body", [vi("a", [1])], [vi("b", [1])])
    node = h.make_node("If", ["cond"], ["y"], then_branch=body, else_branch=body)
    m = graph_model([node], [vi("cond", [], TensorProto.BOOL)], [vi("y", [1])])
    attrs = read(m.SerializeToString()).main.nodes[0].attrs
    assert isinstance(attrs["then_branch"], onnx.GraphProto)
    cst = graph_model([h.make_node("ConstantOfShape", ["s"], ["y"], value=numpy_helper.from_array(np.int32([7])))],
                      [vi("s", [2], TensorProto.INT64)], [vi("y", None, TensorProto.INT32)])
    value = read(cst.SerializeToString()).main.nodes[0].attrs["value"]
    assert isinstance(value, np.ndarray) and value.tolist() == [7]


def test_nodes_out_of_order_are_sorted():
    nodes = [h.make_node("Relu", ["a"], ["y"]), h.make_node("Neg", ["x"], ["a"])]
    g = read(graph_model(nodes, [vi("x", [2])], [vi("y", [2])]).SerializeToString()).main
    assert [n.op for n in g.nodes] == ["Neg", "Relu"]


@pytest.mark.parametrize("data", [b"", b"\x00\x01garbage\xff" * 5, b"\x08"])
def test_malformed_bytes(data):
    with pytest.raises(SourceError):
        read(data)


def test_dangling_input_names_the_node():
    m = graph_model([h.make_node("Add", ["x", "nowhere"], ["y"], name="adder")], [vi("x", [2])], [vi("y", [2])])
    with pytest.raises(SourceError, match=r"node 0 \(Add 'adder'\).*'nowhere'"):
        read(m.SerializeToString())


def test_cycle_names_a_node():
    nodes = [h.make_node("Add", ["x", "b"], ["a"], name="n1"), h.make_node("Relu", ["a"], ["b"], name="n2")]
    with pytest.raises(SourceError, match="cycle"):
        read(graph_model(nodes, [vi("x", [2])], [vi("b", [2])]).SerializeToString())


def test_unknown_domain_names_the_node():
    m = graph_model([h.make_node("Frob", ["x"], ["y"], domain="com.example", name="f")], [vi("x", [2])],
                    [vi("y", [2])])
    with pytest.raises(SourceError, match=r"\(Frob 'f'\).*com.example"):
        read(m.SerializeToString())


def test_initializer_with_missing_data():
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    t.raw_data = b"\x00" * 8  # 2 floats for 4
    m = graph_model([h.make_node("Add", ["x", "w"], ["y"])], [vi("x", [4])], [vi("y", [4])], [t])
    with pytest.raises(SourceError, match="'w'"):
        read(m.SerializeToString())


def external_model(tmp_path, location):
    t = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "16")):
        e = t.external_data.add()
        e.key, e.value = k, v
    m = graph_model([h.make_node("Add", ["x", "w"], ["y"])], [vi("x", [4])], [vi("y", [4])], [t])
    path = tmp_path / "model" / "m.onnx"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(m.SerializeToString())
    return path


def test_external_data_inside_the_folder(tmp_path):
    path = external_model(tmp_path, "weights.bin")
    (path.parent / "weights.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    w = {t.name: t for t in read(str(path)).main.tensors}["w"]
    assert w.data.tolist() == [0, 1, 2, 3]
    r = convert(str(path), 8)
    assert r.complete


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
def test_external_data_leaving_the_folder_is_rejected(tmp_path, kind):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"\x00" * 16)
    location = {"dotdot": "../secret.bin", "absolute": str(secret), "symlink": "link.bin"}[kind]
    path = external_model(tmp_path, location)
    if kind == "symlink":
        os.symlink(secret, path.parent / "link.bin")
    with pytest.raises(SourceError, match="leaves the model's folder"):
        read(str(path))


def test_external_data_from_bytes_is_rejected(tmp_path):
    path = external_model(tmp_path, "weights.bin")
    with pytest.raises(SourceError, match="file path"):
        read(path.read_bytes())


def test_unsupported_op_is_reported_not_raised():
    data = make_model([h.make_node("Hardmax", ["x"], ["y"])], [X], ["y"])
    r = convert(data, 8)
    assert not r.complete and r.unsupported[0].reason_code == "unsupported_operator"


def test_dynamic_batch_converts_with_pinned_shape():
    m = graph_model([h.make_node("Relu", ["x"], ["y"])], [vi("x", ["n", 2, 3, 5])], [vi("y", ["n", 2, 3, 5])])
    r = convert(m.SerializeToString(), 8, input_shapes={"x": (1, 2, 3, 5)})
    assert r.complete and list(r.model.operands[r.model.inputs[0]].type.dimensions) == [1, 2, 3, 5]


def test_missing_external_data_file_names_the_initializer(tmp_path):
    path = external_model(tmp_path, "absent.bin")
    with pytest.raises(SourceError, match=r"initializer 'w'.*absent.bin"):
        read(str(path))
