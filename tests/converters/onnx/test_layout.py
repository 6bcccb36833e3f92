"""The NCHW -> NHWC layout plan: a ResNet-style model converts with TRANSPOSE only at its boundary,
axis attributes are remapped, every NHWC operand is in operand_perm, and the CLI converts .onnx files."""
import numpy as np
from onnx import helper as h

from converters.cli import main
from converters.onnx import convert
from converters.onnx.authoring import make_model
from converters.onnx.layout import NHWC
from tests.converters.onnx.harness import verify_levels

RNG = np.random.default_rng(1)


def w(*shape):
    return (RNG.normal(size=shape) * 0.3).astype(np.float32)


def conv_bn(nodes, inits, x, name, cin, cout, k=3, stride=1, relu=True):
    inits.update({f"{name}_w": w(cout, cin, k, k), f"{name}_s": RNG.random(cout).astype(np.float32) + 0.5,
                  f"{name}_b": w(cout), f"{name}_m": w(cout), f"{name}_v": RNG.random(cout).astype(np.float32) + 0.5})
    nodes.append(h.make_node("Conv", [x, f"{name}_w"], [f"{name}_c"], pads=[k // 2] * 4, strides=[stride, stride]))
    nodes.append(h.make_node("BatchNormalization", [f"{name}_c"] + [f"{name}_{p}" for p in "sbmv"], [f"{name}_bn"]))
    if not relu:
        return f"{name}_bn"
    nodes.append(h.make_node("Relu", [f"{name}_bn"], [f"{name}_r"]))
    return f"{name}_r"


def block(nodes, inits, x, name, cin, cout, stride):
    y = conv_bn(nodes, inits, x, f"{name}a", cin, cout, stride=stride)
    y = conv_bn(nodes, inits, y, f"{name}b", cout, cout, relu=False)
    skip = x if stride == 1 and cin == cout else conv_bn(nodes, inits, x, f"{name}p", cin, cout, k=1, stride=stride,
                                                         relu=False)
    nodes += [h.make_node("Add", [y, skip], [f"{name}_sum"]), h.make_node("Relu", [f"{name}_sum"], [f"{name}_out"])]
    return f"{name}_out"


def resnet():
    nodes, inits = [], {}
    x = conv_bn(nodes, inits, "x", "stem", 3, 4, stride=2)
    nodes.append(h.make_node("MaxPool", [x], ["pool"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]))
    x = block(nodes, inits, "pool", "l1", 4, 4, 1)
    x = block(nodes, inits, x, "l2", 4, 6, 2)
    inits.update(fc_w=w(5, 6), fc_b=w(5))
    nodes += [h.make_node("GlobalAveragePool", [x], ["gap"]), h.make_node("Flatten", ["gap"], ["flat"]),
              h.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"], transB=1)]
    return make_model(nodes, [("x", np.float32, [1, 3, 9, 11])], ["y"], inits)


def test_resnet_style_model_has_no_transpose_inside():
    data = resnet()
    results = verify_levels(data, levels=(1, 2, 3, 4, 8), need_level=1)
    ops = [o.code.name for o in results[8].model.operations]
    assert ops.count("TRANSPOSE") == 1 and ops[0] == "TRANSPOSE", ops  # the input's NCHW -> NHWC only
    assert "MUL" not in ops and "RELU" not in ops  # BatchNormalization folded, Relu fused
    assert "TRANSPOSE" not in [o.code.name for o in results[1].model.operations]


def test_level1_keeps_nhwc_inputs_and_reports_them():
    r = convert(resnet(), 1)
    model_input = r.model.inputs[0]
    assert r.operand_perm[model_input] == NHWC and "NHWC" in r.io_rewrites["x"]
    assert list(r.model.operands[model_input].type.dimensions) == [1, 9, 11, 3]


def test_every_nhwc_operand_is_in_operand_perm():
    r = convert(resnet(), 8)
    for k, opnd in enumerate(r.model.operands):
        if k in r.operand_map and r.operand_map[k][1] != "x" and len(opnd.type.dimensions) == 4:
            assert r.operand_perm.get(k) == NHWC, (k, r.operand_map[k])


def test_four_d_output_gets_one_transpose_back_and_axes_are_remapped():
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), h.make_node("Concat", ["c", "c"], ["cat"], axis=1),
             h.make_node("Softmax", ["cat"], ["sm"], axis=1), h.make_node("Relu", ["sm"], ["y"])]
    data = make_model(nodes, [("x", np.float32, [1, 2, 3, 5])], ["y"], {"w": w(3, 2, 1, 1)}, opset=13)
    r = verify_levels(data, levels=(3, 8), need_level=3)[8]
    ops = r.model.operations
    assert [o.code.name for o in ops] == ["TRANSPOSE", "CONV_2D", "CONCATENATION", "SOFTMAX", "RELU", "TRANSPOSE"]
    assert r.model.operands[ops[2].inputs[-1]].value.item() == 3  # channel axis 1 -> NHWC axis 3


def test_graph_output_also_read_inside_is_transposed_once():
    nodes = [h.make_node("Conv", ["x", "w"], ["c"]), h.make_node("Relu", ["c"], ["r"]),
             h.make_node("MaxPool", ["r"], ["y2"], kernel_shape=[2, 2])]
    data = make_model(nodes, [("x", np.float32, [1, 2, 3, 5])], ["r", "y2"], {"w": w(3, 2, 1, 1)})
    r = verify_levels(data, levels=(8,))[8]
    assert [o.code.name for o in r.model.operations].count("TRANSPOSE") == 3  # input, two outputs


def test_cli_converts_and_covers_an_onnx_file(tmp_path, capsys):
    src = tmp_path / "resnet.onnx"
    src.write_bytes(resnet())
    out = tmp_path / "resnet.nnapi"
    assert main(["convert", str(src), "-o", str(out)]) == 0
    assert out.exists()
    assert main(["coverage", str(src)]) == 0
    assert "Conv" in capsys.readouterr().out
