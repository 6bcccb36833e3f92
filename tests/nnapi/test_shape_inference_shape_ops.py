"""Shape inference of the shape, space and lookup families (nnapi/ops/shape.py, shape_space.py, lookup.py).

Hand-computed cases for the operations without CTS vectors (BATCH_MATMUL, PACK, MIRROR_PAD, REVERSE)
and for the corners of the others (masks and negative strides, -1 entries, omitted perm, parameters fed
at run time, unknown ranks); and a stricter CTS check: where an operation's parameter tensors are
constants and its inputs' shapes are known, every output extent must be inferred, value_dependent
notwithstanding (it only excuses parameters fed at run time).
"""
from __future__ import annotations

import numpy as np
import pytest

import nnapi
from executor.conformance import build_model, read_cases
from nnapi import OperandCode as C, OperandType, OperationCode as Op
from nnapi.ops import SPECS
from nnapi.shapes import ShapeInference, infer_shapes
from tests.nnapi.test_shape_inference import FILES, _erased

F32, I32 = C.TENSOR_FLOAT32, C.TENSOR_INT32


def _operand(m, value=None, code=F32, dims=None):
    """A tensor (dims given; value optional) or a scalar (code INT32/BOOL/FLOAT32, value required)."""
    if dims is None and value is not None and code in (F32, I32):
        dims = np.asarray(value).shape
    i = m.add_operand(OperandType(code, dims or ()))
    if value is not None:
        m.set_operand_value(i, np.asarray(value, dtype=OperandType(code).dtype))
    return i


def infer(op, inputs, outputs=1, out_code=F32, out_ranks=None):
    """The inferred Shapes of `op`'s outputs; each input is an operand spec: dims (a tuple: a run-time
    float tensor), ("i32", dims) for a run-time int tensor, or (code, value[, dims]) for a constant."""
    m = nnapi.Model()
    ins, model_inputs = [], []
    for spec in inputs:
        if isinstance(spec, tuple) and spec and spec[0] == "i32":
            ins.append(_operand(m, code=I32, dims=spec[1]))
            model_inputs.append(ins[-1])
        elif isinstance(spec, tuple) and spec and isinstance(spec[0], C):
            ins.append(_operand(m, spec[1], spec[0], spec[2] if len(spec) > 2 else None))
        else:
            ins.append(_operand(m, dims=spec))
            model_inputs.append(ins[-1])
    codes = out_code if isinstance(out_code, list) else [out_code] * outputs
    ranks = out_ranks or [None] * len(codes)
    outs = [m.add_operand(OperandType(c, (0,) * r if r else (), scale=1.0 if c == C.TENSOR_QUANT8_ASYMM else 0.0))
            for c, r in zip(codes, ranks)]
    m.add_operation(op, ins, outs)
    m.identify_inputs_and_outputs(model_inputs, outs)
    shapes = infer_shapes(m)
    got = [shapes.get(o) for o in outs]
    return got[0] if len(got) == 1 else got


def i32(v):
    return (I32, v)


def scalar(v, code=C.INT32):
    return (code, v)


# -- the later operations (no CTS vectors) -------------------------------------------------------

@pytest.mark.parametrize("x, y, adj, want", [
    ((2, 3), (3, 4), (), (2, 4)),
    ((5, 2, 3), (5, 3, 4), (False, False), (5, 2, 4)),
    ((5, 3, 2), (5, 3, 4), (True, False), (5, 2, 4)),
    ((5, 2, 3), (5, 4, 3), (False, True), (5, 2, 4)),
    ((5, 3, 2), (5, 4, 3), (True, True), (5, 2, 4)),
    ((1, 6, 2, 3), (7, 1, 3, 4), (), (7, 6, 2, 4)),   # batch dimensions broadcast
    ((0, 2, 3), (5, 3, 0), (), (5, 2, 0)),            # unknown extents stay unknown
])
def test_batch_matmul(x, y, adj, want):
    extra = [scalar(a, C.BOOL) for a in adj]
    assert infer(Op.BATCH_MATMUL, [x, y, *extra]) == want


def test_batch_matmul_runtime_adj_and_unknown_rank():
    m = nnapi.Model()
    x, y = _operand(m, dims=(2, 3)), _operand(m, dims=(3, 4))
    adj_x, adj_y = _operand(m, code=C.BOOL), _operand(m, False, C.BOOL)
    out = m.add_operand(OperandType(F32, (0, 0)))
    m.add_operation(Op.BATCH_MATMUL, [x, y, adj_x, adj_y], [out])
    m.identify_inputs_and_outputs([x, y, adj_x], [out])
    assert infer_shapes(m)[out] == (0, 4)   # adj_x fed at run time: the rows are unknown
    assert infer(Op.BATCH_MATMUL, [(), (3, 4)]) is None


@pytest.mark.parametrize("axis, want", [(0, (3, 2, 5)), (1, (2, 3, 5)), (2, (2, 5, 3))])
def test_pack(axis, want):
    assert infer(Op.PACK, [scalar(axis), (2, 5), (2, 0), (0, 5)]) == want


def test_pack_unknown_axis_and_rank():
    assert infer(Op.PACK, [scalar(7), (2, 5), (2, 5)]) == (0, 0, 0)
    assert infer(Op.PACK, [scalar(0), (), ()]) is None


@pytest.mark.parametrize("mode", [0, 1])
def test_mirror_pad(mode):
    assert infer(Op.MIRROR_PAD, [(3, 4, 0), i32([[1, 2], [0, 0], [2, 2]]), scalar(mode)]) == (6, 4, 0)
    assert infer(Op.MIRROR_PAD, [(3, 4), ("i32", (2, 2)), scalar(mode)]) == (0, 0)


def test_reverse():
    assert infer(Op.REVERSE, [(2, 0, 4), i32([1])]) == (2, 0, 4)


def test_fill_and_rank():
    assert infer(Op.FILL, [i32([2, 3, 4]), scalar(1.5, C.FLOAT32)]) == (2, 3, 4)
    assert infer(Op.FILL, [("i32", (3,)), scalar(1.5, C.FLOAT32)]) == (0, 0, 0)   # run-time shape
    assert infer(Op.RANK, [(2, 3)], out_code=C.INT32) == ()


# -- shape operations -----------------------------------------------------------------------

@pytest.mark.parametrize("shape, want", [
    ([4, -1], (4, 6)), ([-1], (24,)), ([2, 3, 4], (2, 3, 4)), ([5, -1], (5, 0)),   # 24 is not a multiple of 5
])
def test_reshape(shape, want):
    assert infer(Op.RESHAPE, [(2, 3, 4), i32(shape)]) == want


def test_reshape_unknowns():
    assert infer(Op.RESHAPE, [(2, 0, 4), i32([4, -1])]) == (4, 0)       # -1 needs every input extent
    assert infer(Op.RESHAPE, [(2, 3, 4), ("i32", (3,))]) == (0, 0, 0)   # run-time shape of known length
    assert infer(Op.RESHAPE, [(2, 3, 4), ("i32", (0,))]) is None


def test_squeeze():
    assert infer(Op.SQUEEZE, [(1, 3, 1, 2)]) == (3, 2)
    assert infer(Op.SQUEEZE, [(1, 3, 1, 2), i32([0])]) == (3, 1, 2)
    assert infer(Op.SQUEEZE, [(1, 3, 1, 2), i32([-2])]) == (1, 3, 2)
    assert infer(Op.SQUEEZE, [(1, 1)]) == (1,)                           # everything squeezed: [1]
    assert infer(Op.SQUEEZE, [(1, 0, 2)]) is None                       # is the 0 a 1? unknown


def test_expand_dims_transpose_gather():
    assert infer(Op.EXPAND_DIMS, [(2, 3), scalar(-1)]) == (2, 3, 1)
    assert infer(Op.EXPAND_DIMS, [(2, 3), scalar(0)]) == (1, 2, 3)
    assert infer(Op.TRANSPOSE, [(2, 3, 4)]) == (4, 3, 2)                # perm omitted: reversed
    assert infer(Op.TRANSPOSE, [(2, 3, 4), i32([1, 2, 0])]) == (3, 4, 2)
    assert infer(Op.TRANSPOSE, [(2, 3, 4), ("i32", (3,))]) == (0, 0, 0)
    assert infer(Op.GATHER, [(5, 6, 7), scalar(1), ("i32", (2, 3))]) == (5, 2, 3, 7)
    assert infer(Op.GATHER, [(5, 6, 7), scalar(-1), ("i32", (4,))]) == (5, 6, 4)


def test_slices():
    assert infer(Op.SLICE, [(4, 5), i32([1, 2]), i32([-1, 2])]) == (3, 2)
    assert infer(Op.SLICE, [(4, 5), ("i32", (2,)), i32([-1, 2])]) == (0, 2)
    # masks, negative strides, shrink
    ss = [(5, 6, 7), i32([1, -1, 0]), i32([4, 0, 7]), i32([2, -2, 3])]
    assert infer(Op.STRIDED_SLICE, ss + [scalar(0), scalar(0), scalar(0)]) == (2, 3, 3)
    assert infer(Op.STRIDED_SLICE, ss + [scalar(1), scalar(2), scalar(0)]) == (2, 3, 3)
    assert infer(Op.STRIDED_SLICE, ss + [scalar(0), scalar(0), scalar(4)]) == (2, 3)
    assert infer(Op.STRIDED_SLICE, [(5,), i32([4]), i32([-6]), i32([-1]), scalar(0), scalar(0),
                                    scalar(0)]) == (5,)
    assert infer(Op.STRIDED_SLICE, [(5,), i32([2]), i32([3]), i32([1]), scalar(0), scalar(0),
                                    scalar(1)]) == (1,)   # every dimension shrunk: [1]


def test_split_tile_pad_and_space_ops():
    assert infer(Op.SPLIT, [(6, 4), scalar(0), scalar(3)], outputs=3) == [(2, 4)] * 3
    assert infer(Op.TILE, [(2, 3), i32([3, 2])]) == (6, 6)
    assert infer(Op.PAD, [(2, 3), i32([[1, 0], [2, 3]])]) == (3, 8)
    assert infer(Op.PAD_V2, [(2, 3), i32([[1, 0], [2, 3]]), scalar(0.0, C.FLOAT32)]) == (3, 8)
    assert infer(Op.DEPTH_TO_SPACE, [(1, 2, 3, 8), scalar(2)]) == (1, 4, 6, 2)
    assert infer(Op.DEPTH_TO_SPACE, [(1, 8, 2, 3), scalar(2), scalar(True, C.BOOL)]) == (1, 2, 4, 6)
    assert infer(Op.SPACE_TO_DEPTH, [(1, 4, 6, 2), scalar(2)]) == (1, 2, 3, 8)
    assert infer(Op.BATCH_TO_SPACE_ND, [(8, 2, 3, 1), i32([2, 2])]) == (2, 4, 6, 1)
    assert infer(Op.SPACE_TO_BATCH_ND, [(1, 5, 2, 3), i32([2, 2]), i32([[1, 0], [1, 1]])]) == (4, 3, 2, 3)
    assert infer(Op.SPACE_TO_BATCH_ND, [(1, 3, 5, 2), i32([2, 2]), i32([[1, 0], [1, 1]]),
                                        scalar(True, C.BOOL)]) == (4, 3, 3, 2)
    assert infer(Op.CHANNEL_SHUFFLE, [(2, 6), scalar(3), scalar(1)]) == (2, 6)
    assert infer(Op.CONCATENATION, [(2, 3), (2, 0), (0, 4), scalar(1)]) == (2, 0)
    assert infer(Op.CONCATENATION, [(2, 3), (1, 0), (4, 3), scalar(0)]) == (7, 3)


def test_unknown_input_rank_gives_unknown_rank():
    for op, rest in [(Op.RESHAPE, [i32([-1])]), (Op.TRANSPOSE, []), (Op.TILE, [i32([2])]),
                     (Op.SLICE, [i32([0]), i32([1])]), (Op.EXPAND_DIMS, [scalar(0)])]:
        assert infer(op, [(), *rest]) in (None, (0,)), op   # RESHAPE keeps its constant shape's rank


# -- lookups -------------------------------------------------------------------------------

def test_lookups():
    assert infer(Op.EMBEDDING_LOOKUP, [("i32", (3,)), (10, 4, 2)]) == (3, 4, 2)
    out, hits = infer(Op.HASHTABLE_LOOKUP, [("i32", (3,)), ("i32", (10,)), (10, 4)], outputs=2,
                      out_code=[F32, C.TENSOR_QUANT8_ASYMM])
    assert (out, hits) == ((3, 4), (3,))
    assert infer(Op.RANDOM_MULTINOMIAL, [(2, 5), scalar(7), ("i32", (2,))], out_code=I32) == (2, 7)


@pytest.mark.parametrize("kind, want", [(1, (4,)), (2, (12,)), (3, (4,))])
def test_lsh_projection(kind, want):
    hash_ = (F32, np.zeros((4, 3), np.float32))
    assert infer(Op.LSH_PROJECTION, [hash_, ("i32", (5, 2)), (5,), scalar(kind)], out_code=I32) == want


# -- the CTS, strictly ---------------------------------------------------------------------------

_MINE = {spec.code for spec in SPECS.values()
         if spec.infer is not None and spec.infer.__module__.split(".")[-1] in ("shape", "shape_space", "lookup")}
_MY_FILES = [p for p in FILES if p.name.split(".")[0].startswith((
    "batch_to_space", "space_to", "channel_shuffle", "concat", "depth_to_space", "expand_dims", "gather",
    "pad", "reshape", "slice", "split", "squeeze", "strided_slice", "tile", "transpose_", "fill", "rank",
    "embedding_lookup", "hashtable_lookup", "lsh_projection", "random_multinomial"))
    and not p.name.startswith("transpose_conv")]


_PARAMS = ("shape", "axes", "perm", "paddings", "begin", "size", "end", "strides", "multiples", "block_shape")


def _strict_problems(case: dict) -> list[str]:
    erased = build_model(_erased(case), [])
    inferred = ShapeInference(erased)
    declared = case["main"]["operands"]
    problems = []
    for k, op in enumerate(erased.operations):
        if op.code not in _MINE:
            continue
        ins_known = all(erased.operands[i].is_omitted or erased.operands[i].is_constant or
                        (inferred.shape(i) is not None and 0 not in inferred.shape(i)) for i in op.inputs)
        # parameter tensors fed at run time (the value_dependent excuse) are not checked here
        view = SPECS[op.code].view(erased, k)
        params_const = view is not None and all(
            view.input(name) is None or view.input(name).is_constant for name in _PARAMS)
        if not (ins_known and params_const):
            continue
        for o in op.outputs:
            want = tuple(declared[o]["dimensions"])
            if want and 0 not in want and inferred.shape(o) != want:
                problems.append(f"{case['name']}: operation {k} ({op.code.name}) output {o}: inferred "
                                f"{inferred.shape(o)}, the CTS declares {list(want)}")
    return problems


@pytest.mark.parametrize("path", _MY_FILES, ids=[f"{p.parent.name}/{p.name.split('.')[0]}" for p in _MY_FILES])
def test_constant_parameters_give_every_extent(path):
    problems = []
    for case in read_cases(path):
        if not case.get("expectFailure"):
            problems += _strict_problems(case)
    assert not problems, "\n".join(problems[:10])
