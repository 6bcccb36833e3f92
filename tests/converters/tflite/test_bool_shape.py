"""Bool RESHAPE, SQUEEZE and EXPAND_DIMS (NNAPI's take no TENSOR_BOOL8: they go through uint8
0/1), in particular an IF condition produced through them, compared with LiteRT."""
import numpy as np
import pytest

from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.harness import assert_matches_litert, unsupported_reason


def _shape_op(g, how: str, x: int, out: int) -> None:
    if how == "RESHAPE":
        g.op("RESHAPE", [x, g.const(f"{how}_shape", np.array(g.sg.tensors[out].shape, np.int32))], [out])
    elif how == "SQUEEZE":
        g.op("SQUEEZE", [x], [out], "SqueezeOptions", squeeze_dims=[])
    else:
        g.op("EXPAND_DIMS", [x, g.const("axis", np.array([0], np.int32))], [out])


def if_through(how: str) -> bytes:
    """cond = x >= 0.25, reshaped by `how` to the one-element condition of IF(x): x + 1 or x * 3."""
    g = GraphBuilder()
    before, after = ([1, 1], []) if how != "EXPAND_DIMS" else ([], [1])
    x = g.input("x", before, "FLOAT32")
    c = g.tensor("c", before, "BOOL")
    g.op("GREATER_EQUAL", [x, g.const("threshold", np.array(0.25, np.float32))], [c])
    cond = g.tensor("cond", after, "BOOL")
    _shape_op(g, how, c, cond)
    branches = []
    for name, op, k in (("then", "ADD", 1.0), ("else", "MUL", 3.0)):
        s = g.subgraph(name)
        a = s.input("a", before, "FLOAT32")
        r = s.tensor("r", before, "FLOAT32")
        s.op(op, [a, s.const("k", np.array(k, np.float32))], [r], "AddOptions" if op == "ADD" else "MulOptions")
        s.output(r)
        branches.append(s.index)
    out = g.tensor("out", before, "FLOAT32")
    g.op("IF", [cond, x], [out], "IfOptions", then_subgraph_index=branches[0], else_subgraph_index=branches[1])
    g.output(out)
    return g.finish()


@pytest.mark.parametrize("how", ["RESHAPE", "SQUEEZE", "EXPAND_DIMS"])
@pytest.mark.parametrize("level", [4, 8])
def test_if_condition_through_bool_shape_op(how, level):
    data = if_through(how)
    shape = (1, 1) if how != "EXPAND_DIMS" else ()
    for value in (0.7, -0.4):  # both branches
        result = assert_matches_litert(data, level, inputs=[np.full(shape, value, np.float32)])
        # (EXPAND_DIMS of a rank-0 tensor, [1] in NNAPI, to [1]: that RESHAPE keeps its shape and folds away)
        kept = ["RESHAPE"] if how != "EXPAND_DIMS" else []
        assert result.nodes[1].nnapi_ops == ["SELECT", *kept, "NOT_EQUAL"]


def bool_movement(how: str) -> bytes:
    """A bool tensor computed from x, moved by `how`, as the model output."""
    g = GraphBuilder()
    shape_in, shape_out = {"RESHAPE": ([2, 3], [3, 2]), "SQUEEZE": ([2, 1, 3], [2, 3]),
                           "EXPAND_DIMS": ([2, 3], [1, 2, 3])}[how]
    x = g.input("x", shape_in, "FLOAT32")
    c = g.tensor("c", shape_in, "BOOL")
    g.op("LESS", [x, g.const("zero", np.array(0.0, np.float32))], [c])
    out = g.tensor("out", shape_out, "BOOL")
    _shape_op(g, how, c, out)
    g.output(out)
    return g.finish()


@pytest.mark.parametrize("how", ["RESHAPE", "SQUEEZE", "EXPAND_DIMS"])
@pytest.mark.parametrize("level", [3, 8])
def test_bool_shape_ops_match_litert(how, level):
    assert_matches_litert(bool_movement(how), level, seeds=(0, 1, 2))


def test_bool_reshape_below_level_3_is_too_low():
    assert unsupported_reason(bool_movement("RESHAPE"), 2).reason_code == "feature_level_too_low"


@pytest.mark.parametrize("level", [3, 8])
def test_bool_broadcast_to_matches_litert(level):
    """BROADCAST_TO of a bool mask (litert-torch's ViT): LOGICAL_AND with all-true (TILE takes no bool)."""
    g = GraphBuilder()
    x = g.input("x", [1, 1, 5], "FLOAT32")
    c = g.tensor("c", [1, 1, 5], "BOOL")
    g.op("LESS", [x, g.const("zero", np.array(0.0, np.float32))], [c])
    out = g.tensor("out", [2, 3, 5], "BOOL")
    g.op("BROADCAST_TO", [c, g.const("shape", np.asarray([2, 3, 5], np.int32))], [out], version=2)
    g.output(out)
    result = assert_matches_litert(g.finish(), level, seeds=(0, 1, 2))
    assert result.nodes[1].nnapi_ops == ["LOGICAL_AND"]


@pytest.mark.parametrize("op", ["TILE", "CONCATENATION", "TRANSPOSE", "GATHER"])
def test_bool_moves_through_uint8(op):
    """TILE (litert-torch's BROADCAST_TO of a mask), CONCATENATION, TRANSPOSE and GATHER of bool tensors: NNAPI's
    take no TENSOR_BOOL8, so they run on uint8 0/1 (converters/typed_moves.py)."""
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2], "FLOAT32")
    m = g.tensor("m", [1, 3, 5, 2], "BOOL")
    g.op("GREATER_EQUAL", [x, g.const("threshold", np.array(0.25, np.float32))], [m])
    if op == "TILE":
        out = g.tensor("out", [2, 3, 10, 2], "BOOL")
        g.op("TILE", [m, g.const("multiples", np.array([2, 1, 2, 1], np.int32))], [out])
    elif op == "CONCATENATION":
        n = g.tensor("n", [1, 3, 5, 2], "BOOL")
        g.op("LOGICAL_NOT", [m], [n])
        out = g.tensor("out", [1, 6, 5, 2], "BOOL")
        g.op("CONCATENATION", [m, n], [out], "ConcatenationOptions", axis=1)
    elif op == "TRANSPOSE":
        out = g.tensor("out", [1, 2, 3, 5], "BOOL")
        g.op("TRANSPOSE", [m, g.const("perm", np.array([0, 3, 1, 2], np.int32))], [out])
    else:
        out = g.tensor("out", [1, 3, 3, 2], "BOOL")
        g.op("GATHER", [m, g.const("indices", np.array([4, 0, 2], np.int32))], [out], "GatherOptions", axis=2)
    g.output(out)
    data = g.finish()
    rng = np.random.default_rng(5)
    for level in (4, 8):
        result = assert_matches_litert(data, level, inputs=[rng.uniform(-1, 1, (1, 3, 5, 2)).astype(np.float32)])
        assert result.nodes[-1].nnapi_ops[-1] == "NOT_EQUAL", result.nodes[-1].nnapi_ops
