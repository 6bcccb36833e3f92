"""Rank-5 middles of data movement held as rank-4 tensors (the rank pass, converters/squeeze_pass.py): the qkv split of
attention blocks (PP-OCRv4 rec, ViTs) against onnxruntime."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from converters.onnx import convert
from tests.converters.onnx.harness import parity


def _i64(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def qkv_model(tail_op: str = "MatMul", batch: int = 1) -> bytes:
    """x [batch, 6, 3*2*4] -> Reshape [batch, 6, 3, 2, 4] -> Transpose [2, 0, 3, 1, 4] -> q, k, v by Slice +
    Squeeze -> q @ k^T (or q * k with tail_op Mul on the 5-D tensor) -> @ v -> [batch, 2, 6, 4]."""
    inits = [_i64("shape5", [batch, 6, 3, 2, 4]), _i64("ax0", [0])]
    nodes = [helper.make_node("Reshape", ["x", "shape5"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[2, 0, 3, 1, 4])]
    for k, name in enumerate("qkv"):
        inits += [_i64(f"s{k}", [k]), _i64(f"e{k}", [k + 1])]
        nodes += [helper.make_node("Slice", ["t", f"s{k}", f"e{k}", "ax0"], [f"{name}5"]),
                  helper.make_node("Squeeze", [f"{name}5", "ax0"], [name])]
    if tail_op == "Mul":
        nodes.append(helper.make_node("Mul", ["t", "t"], ["y"]))
    else:
        nodes += [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
                  helper.make_node("MatMul", ["q", "kt"], ["a"]), helper.make_node("Softmax", ["a"], ["p"], axis=-1),
                  helper.make_node("MatMul", ["p", "v"], ["y"])]
    g = helper.make_graph(nodes, "qkv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 6, 24])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("level", [6, 8])  # BATCH_MATMUL: level 6
def test_qkv_split_converts_and_matches(level):
    data = qkv_model()
    r = convert(data, feature_level=level)
    assert r.complete, [(n.op, n.reason) for n in r.unsupported]
    assert all(len(op_type.dimensions) <= 4 for op_type in (o.type for o in r.model.operands))
    assert not parity(r, data, seeds=(0, 1))


def test_a_rank5_tensor_read_by_other_ops_stays_refused():
    r = convert(qkv_model("Mul"))
    assert not r.complete and {n.reason_code for n in r.unsupported} == {"rank"}


def test_no_unit_axis_splits_into_slices():
    """batch 2 with every other extent above 1: the 5-D middle has no unit axis to drop, so q, k and v are held
    as one rank-4 chain each (converters/split_pass.py)."""
    data = qkv_model(batch=2)
    r = convert(data)
    assert r.complete, [(n.op, n.reason) for n in r.unsupported]
    assert all(len(o.type.dimensions) <= 4 for o in r.model.operands)
    assert not parity(r, data, seeds=(0, 1))
