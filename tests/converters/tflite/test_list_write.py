"""TensorList writes in a WHILE body (converters/tflite/list_write.py): CONCATENATION(SLICE(x, 0, [i, -1, -1]), item,
SLICE(x, [i + 1, 0, 0], -1)), as Keras 3's recurrent layers write each step's output, becomes
SELECT_V2(EQUAL(range, i), item, x); the converted loop is compared with LiteRT."""
import numpy as np

from converters.tflite import convert
from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.harness import assert_matches_litert

ROWS = 3


def _index_vector(body, i, rest, name):
    """CONCATENATION(RESHAPE(i, [1]), [rest, rest]): how TensorFlow builds a slice's begin or size from i."""
    one = body.tensor(f"{name}/i", [1], "INT32")
    body.op("RESHAPE", [i, body.const(f"{name}/shape", np.array([1], np.int32))], [one])
    vec = body.tensor(name, [3], "INT32")
    body.op("CONCATENATION", [one, body.const(f"{name}/rest", np.array([rest, rest], np.int32))], [vec],
            "ConcatenationOptions", axis=0)
    return vec


def list_write_model(step: int = 1) -> bytes:
    """for i in range(3): rows[i] = x; x = x + 1 (rows starts as zeros); `step` other than 1 is not a write."""
    g = GraphBuilder()
    x = g.input("x", [1, 4], "FLOAT32")
    cond, body = g.subgraph("cond"), g.subgraph("body")
    ci = cond.input("ci", [], "INT32")
    cond.input("crows", [ROWS, 1, 4], "FLOAT32")
    cond.input("cx", [1, 4], "FLOAT32")
    more = cond.tensor("more", [], "BOOL")
    cond.op("LESS", [ci, cond.const("limit", np.array(ROWS - 1 if step > 1 else ROWS, np.int32))], [more])
    cond.output(more)
    i = body.input("i", [], "INT32")
    rows = body.input("rows", [ROWS, 1, 4], "FLOAT32")
    bx = body.input("bx", [1, 4], "FLOAT32")
    j = body.tensor("j", [], "INT32")
    body.op("ADD", [i, body.const("step", np.array(step, np.int32))], [j], "AddOptions")
    before = body.tensor("before", [1, 1, 4], "FLOAT32", shape_signature=[-1, 1, 4])
    body.op("SLICE", [rows, body.const("zeros", np.zeros(3, np.int32)), _index_vector(body, i, -1, "size")], [before])
    after = body.tensor("after", [1, 1, 4], "FLOAT32", shape_signature=[-1, 1, 4])
    body.op("SLICE", [rows, _index_vector(body, j, 0, "begin"), body.const("all", -np.ones(3, np.int32))], [after])
    item = body.tensor("item", [1, 1, 4], "FLOAT32")
    body.op("RESHAPE", [bx, body.const("item_shape", np.array([1, 1, 4], np.int32))], [item])
    written = body.tensor("written", [ROWS, 1, 4], "FLOAT32")
    body.op("CONCATENATION", [before, item, after], [written], "ConcatenationOptions", axis=0)
    nx = body.tensor("nx", [1, 4], "FLOAT32")
    body.op("ADD", [bx, body.const("one", np.array(1, np.float32))], [nx], "AddOptions")
    body.output(j, written, nx)
    outs = [g.tensor("i_out", [], "INT32"), g.tensor("rows_out", [ROWS, 1, 4], "FLOAT32"), g.tensor("x_out", [1, 4])]
    g.op("WHILE", [g.const("i0", np.array(0, np.int32)), g.const("rows0", np.zeros((ROWS, 1, 4), np.float32)), x],
         outs, "WhileOptions", cond_subgraph_index=cond.index, body_subgraph_index=body.index)
    g.output(outs[1])
    return g.finish()


def test_a_tensor_list_write_becomes_select():
    result = assert_matches_litert(list_write_model(), 8)
    body = result.source.graphs[2]
    assert [n.op for n in body.nodes if not n.folded] == ["ADD", "EQUAL", "RESHAPE", "SELECT_V2", "ADD"]
    assert {n.fold_how for n in body.nodes if n.folded} == {"tensor list write as SELECT_V2"}


def test_slices_that_are_not_a_write_stay_as_they_are():
    """i + 2: the slices leave a row out; nothing is rewritten (and NNAPI cannot slice at run-time extents)."""
    result = convert(list_write_model(step=2))
    assert not any(n.op == "SELECT_V2" for n in result.source.graphs[2].nodes)
    assert not result.complete
