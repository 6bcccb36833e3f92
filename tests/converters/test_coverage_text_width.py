"""Text coverage reports fit 120 columns: long lists are counted (a node's NNAPI operations, node indexes,
blocking nodes by op), each reason is given once; --verbose and JSON keep every list in full. A fold note says
which operation of a node was folded."""
import json

import numpy as np
import onnx
from onnx import TensorProto, helper

from converters.cli import main
from converters.coverage_render import blocking_text, ops_text, ranges
from converters.tflite import convert
from converters.tflite.authoring import GraphBuilder


def test_ops_are_counted_when_long():
    ops = ["MUL"] * 26 + ["ADD"] * 12 + ["SLICE"] * 8 + ["RESHAPE"] * 2 + ["SQRT"]   # 49 operations
    assert ops_text(ops) == "49 ops: MUL x26, ADD x12, +3 types"
    assert ops_text(ops, verbose=True) == " ".join(ops)
    assert ops_text(["RESHAPE", "CONV_2D", "RESHAPE"]) == "RESHAPE CONV_2D RESHAPE"


def test_blocking_nodes_each_op_once_with_counts():
    entries = [{"index": 0, "op": "CONV_2D"}, {"index": 1, "op": "DEPTHWISE_CONV_2D"}, {"index": 2, "op": "CONV_2D"}]
    assert blocking_text(entries) == "CONV_2D x2 (0, 2), DEPTHWISE_CONV_2D (1)"
    many = [{"index": k, "op": f"OP{k}"} for k in range(6)]
    assert blocking_text(many) == "OP0 (0), OP1 (1), OP2 (2), OP3 (3), +2 more op(s)"


def test_ranges():
    assert ranges([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8" and ranges([]) == ""
    assert ranges([0, 1, 2, 5, 7, 8], most=2) == "0-2, 5, ... (6 nodes)"


def chain_with_a_gap(path, n=400):
    """n Relu nodes with an op NNAPI lacks (ai.onnx.ml Binarizer) at n // 2: two partitions of ~n/2 nodes."""
    nodes, prev = [], "x"
    for k in range(n):
        op = helper.make_node("Binarizer", [prev], [f"t{k}"], domain="ai.onnx.ml") if k == n // 2 else \
            helper.make_node("Relu", [prev], [f"t{k}"], name=f"a_rather_long_node_name_{k}")
        nodes.append(op)
        prev = f"t{k}"
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 8])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)]),
              path)


def test_text_fits_120_columns_and_verbose_lists_everything(tmp_path, capsys):
    p = tmp_path / "chain.onnx"
    chain_with_a_gap(p)
    assert main(["coverage", str(p)]) == 0
    text = capsys.readouterr().out
    assert max(map(len, text.splitlines())) <= 120, max(text.splitlines(), key=len)
    assert "partition 0: 200 node(s) (0-199)" in text and "partition 1: 199 node(s) (201-399)" in text
    assert "CPU fallback nodes: 200" in text
    assert text.count("Binarizer") >= 2 and "reasons (each once):" in text
    assert main(["coverage", str(p), "--verbose"]) == 0
    full = capsys.readouterr().out
    assert str(list(range(201, 400))) in full and max(map(len, full.splitlines())) > 120
    assert main(["coverage", str(p), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["partitions"][0]["nodes"] == list(range(200))


def test_a_fold_note_names_the_operation_not_the_node(tmp_path):
    # at level 4 BATCH_MATMUL is FULLY_CONNECTED + RESHAPE; the RESHAPE that follows folds that RESHAPE away
    g = GraphBuilder()
    x = g.input("x", [1, 2, 2])
    y, z = g.tensor("y", [1, 2, 2]), g.tensor("z", [4])
    g.op("BATCH_MATMUL", [x, g.const("w", np.eye(2, dtype=np.float32)[None])], [y], "BatchMatMulOptions")
    g.op("RESHAPE", [y, g.const("shape", np.array([4], np.int32))], [z], "ReshapeOptions", new_shape=[4])
    g.output(z)
    p = tmp_path / "bmm.tflite"
    p.write_bytes(g.finish())
    node = convert(str(p), feature_level=4).nodes[0]
    assert node.nnapi_ops == ["FULLY_CONNECTED"] and node.absorbed is None
    assert "its RESHAPE (one of 2 operations) folded into node 1 (RESHAPE)" in node.note and "1 remain" in node.note


def test_inspect_text_fits_120_columns(tmp_path, capsys):
    # CONCATENATION of 40 inputs: its operation line lists 41 operand indexes and the axis operand
    n = 40
    g = helper.make_graph([helper.make_node("Concat", [f"x{k}" for k in range(n)], ["y"], axis=1)], "g",
                          [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [1, 2]) for k in range(n)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2 * n])])
    src, out = tmp_path / "cat.onnx", tmp_path / "cat.nnapi"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), src)
    assert main(["convert", str(src), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["inspect", str(out)]) == 0
    text = capsys.readouterr().out
    assert max(map(len, text.splitlines())) <= 120
    assert "CONCATENATION(axis=" in text and " -> [" in " ".join(text.split())
