"""Hand-computed shape inference for the elementwise, activation, comparison, unary and reduction specs
(nnapi/ops/{elementwise,activation,compare,unary,reduce}.py): the cases the CTS vectors do not reach
(broadcasts of POW and PRELU in both directions, SELECT merging partial shapes, duplicate and negative
reduction axes, non-constant axes / axis / k, unknown ranks, malformed axes).

Every output is declared with an unknown rank, so what is checked is exactly what the spec infers.
"""
from __future__ import annotations

import numpy as np
import pytest

import nnapi
from nnapi import OperandCode as C, OperandType, OperationCode as Op
from nnapi.shapes import infer_shapes

F32, I32, B8 = C.TENSOR_FLOAT32, C.TENSOR_INT32, C.TENSOR_BOOL8


def t(dims, code=F32):
    return OperandType(code, dims)


def const(code, value):
    """A constant input: (type, value)."""
    value = np.asarray(value)
    return OperandType(code, value.shape if value.ndim else ()), value


def infer(code, inputs, n_outputs=1, out_codes=None):
    """The inferred Shapes of the outputs of one `code` operation. `inputs` holds OperandTypes (model
    inputs) or (OperandType, value) pairs (constants)."""
    m = nnapi.Model()
    ins, model_inputs = [], []
    for x in inputs:
        otype, value = x if isinstance(x, tuple) else (x, None)
        i = m.add_operand(otype)
        if value is None:
            model_inputs.append(i)
        else:
            m.set_operand_value(i, value)
        ins.append(i)
    codes = out_codes or [F32] * n_outputs
    outs = [m.add_operand(OperandType(c, (), scale=0.5 if c == C.TENSOR_QUANT8_ASYMM else 0.0)) for c in codes]
    m.add_operation(code, ins, outs)
    m.identify_inputs_and_outputs(model_inputs, outs)
    shapes = infer_shapes(m)
    return [shapes.get(o) for o in outs]


def fuse():
    return const(C.INT32, np.int32(0))


# -- broadcasting ----------------------------------------------------------------------

@pytest.mark.parametrize("a, b, want", [
    ((4, 1, 2), (5, 4, 3, 1), (5, 4, 3, 2)),     # the NDK's own example
    ((2, 3), (3,), (2, 3)),
    ((1,), (2, 3), (2, 3)),
    ((0, 3), (2, 1), (2, 3)),                    # a 1 does not hide the other side's extent
    ((0, 3), (1, 3), (0, 3)),                    # unknown stays unknown
    ((2, 3), (), None),                          # unknown rank
])
def test_binary_arithmetic_broadcasts(a, b, want):
    for code in (Op.ADD, Op.SUB, Op.MUL, Op.DIV):
        assert infer(code, [t(a), t(b), fuse()]) == [want]


def test_pow_prelu_compare_logical_min_max_broadcast():
    assert infer(Op.POW, [t((2, 1, 4)), t((3, 1))]) == [(2, 3, 4)]
    assert infer(Op.POW, [t((5,)), t((2, 5))]) == [(2, 5)]
    assert infer(Op.PRELU, [t((1, 2, 2, 3)), t((1, 1, 3))]) == [(1, 2, 2, 3)]
    assert infer(Op.PRELU, [t((3,)), t((2, 1, 3))]) == [(2, 1, 3)]      # alpha may be the larger one
    assert infer(Op.MAXIMUM, [t((3, 1, 2)), t((4, 1))]) == [(3, 4, 2)]
    assert infer(Op.MINIMUM, [t((2,)), t((0, 2))]) == [(0, 2)]
    assert infer(Op.LESS, [t((2, 1)), t((1, 3))], out_codes=[B8]) == [(2, 3)]
    assert infer(Op.LOGICAL_OR, [t((1, 4), B8), t((3, 1), B8)], out_codes=[B8]) == [(3, 4)]


# -- same shape -------------------------------------------------------------------------

@pytest.mark.parametrize("code", [Op.ABS, Op.EXP, Op.SIN, Op.RSQRT, Op.RELU6, Op.TANH, Op.HARD_SWISH,
                                  Op.LOGISTIC, Op.FLOOR])
def test_unary_keeps_the_shape(code):
    assert infer(code, [t((2, 0, 5))]) == [(2, 0, 5)]
    assert infer(code, [t(())]) == [None]


def test_elu_cast_quantize_keep_the_shape():
    assert infer(Op.ELU, [t((3, 4)), const(C.FLOAT32, np.float32(1.0))]) == [(3, 4)]
    assert infer(Op.CAST, [t((1, 7))], out_codes=[I32]) == [(1, 7)]
    assert infer(Op.QUANTIZE, [t((6,))], out_codes=[C.TENSOR_QUANT8_ASYMM]) == [(6,)]
    assert infer(Op.LOGICAL_NOT, [t((2, 2), B8)], out_codes=[B8]) == [(2, 2)]


def test_select_merges_what_each_input_knows():
    assert infer(Op.SELECT, [t((2, 0), B8), t((0, 3)), t((2, 3))]) == [(2, 3)]
    assert infer(Op.SELECT, [t((), B8), t((0, 3)), t(())]) == [(0, 3)]
    assert infer(Op.SELECT, [t((), B8), t(()), t(())]) == [None]
    # malformed: the inputs disagree (the same_shape rule reports it); nothing is guessed
    assert infer(Op.SELECT, [t((2, 3), B8), t((4, 3)), t((2, 3))]) == [(0, 3)]
    assert infer(Op.SELECT, [t((2, 3), B8), t((2, 3, 1)), t((2, 3))]) == [None]


# -- reductions -------------------------------------------------------------------------

def reduce(code, dims, axes, keep, keep_code=C.BOOL):
    keep_value = np.bool_(keep) if keep_code == C.BOOL else np.int32(keep)
    axes_in = t((2,), I32) if axes is None else const(I32, np.array(axes, np.int32))
    return infer(code, [t(dims), axes_in, const(keep_code, keep_value)])[0]


@pytest.mark.parametrize("axes, keep, want", [
    ([1], False, (2, 4, 5)),
    ([1], True, (2, 1, 4, 5)),
    ([-1, 0], False, (3, 4)),
    ([1, -3, 1], False, (2, 4, 5)),              # duplicates, and -3 is dimension 1
    ([0, 1, 2, 3], False, (1,)),                 # everything reduced without keep: [1]
    ([0, 1, 2, 3], True, (1, 1, 1, 1)),
])
def test_reduction_axes(axes, keep, want):
    for code in (Op.REDUCE_SUM, Op.REDUCE_MAX):
        assert reduce(code, (2, 3, 4, 5), axes, keep) == want
    assert reduce(Op.MEAN, (2, 3, 4, 5), axes, int(keep) * 7, keep_code=C.INT32) == want   # keep_dims > 0


def test_reduction_unknowns():
    assert reduce(Op.REDUCE_ANY, (0, 3), [0], False) == (3,)
    assert reduce(Op.REDUCE_PROD, (), [0], True) is None                      # unknown rank
    # axes not constant: kept dimensions are 1 or unchanged; without keep the rank is unknown
    assert reduce(Op.REDUCE_MIN, (1, 3), None, True) == (1, 0)
    assert reduce(Op.REDUCE_MIN, (2, 3), None, False) is None
    assert reduce(Op.REDUCE_MIN, (4,), None, False) == (0,)                  # 1-D stays 1-D
    assert reduce(Op.REDUCE_MIN, (2, 3), [5], False) is None                  # malformed axis: no guess


def test_argmax_argmin_remove_the_axis():
    def arg(code, dims, axis):
        axis_in = OperandType(C.INT32) if axis is None else const(C.INT32, np.int32(axis))
        return infer(code, [t(dims), axis_in], out_codes=[I32])[0]
    assert arg(Op.ARGMAX, (2, 3, 4), 1) == (2, 4)
    assert arg(Op.ARGMIN, (2, 3, 4), -1) == (2, 3)
    assert arg(Op.ARGMAX, (5,), 0) == (1,)                     # a 1-D input gives [1]
    assert arg(Op.ARGMAX, (2, 3), None) == (0,)                # axis not constant: rank known only
    assert arg(Op.ARGMAX, (2, 3), 2) is None                   # malformed axis
    assert arg(Op.ARGMIN, (), 0) is None


def test_topk_last_extent_is_k():
    def topk(dims, k):
        k_in = OperandType(C.INT32) if k is None else const(C.INT32, np.int32(k))
        return infer(Op.TOPK_V2, [t(dims), k_in], out_codes=[F32, I32])
    assert topk((3, 5), 2) == [(3, 2), (3, 2)]
    assert topk((0, 0), 4) == [(0, 4), (0, 4)]
    assert topk((3, 5), None) == [(3, 0), (3, 0)]
    assert topk((3, 5), 9) == [(3, 0), (3, 0)]                 # k larger than the last extent: malformed
    assert topk((), 2) == [None, None]
