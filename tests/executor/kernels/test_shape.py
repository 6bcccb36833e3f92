"""Hand-computed checks of the shape and data-movement operations (nnapi/ops/shape.py,
executor/kernels/shape/reference.py, executor/kernels/shape/space.py), through the public API."""
import numpy as np
import pytest

import nnapi
from nnapi import NnapiError, OperandCode as C, OperandType, OperationCode as Op, ResultCode
from tests.executor.op_harness import OMIT, build, run

F32, I32, Q8 = C.TENSOR_FLOAT32, C.TENSOR_INT32, C.TENSOR_QUANT8_ASYMM


def scalar(value, code=C.INT32):
    return OperandType(code), value


def tensor(values, code=I32):
    values = np.asarray(values)
    return OperandType(code, values.shape), values


def test_concat_requantizes_quant8_inputs_to_the_output_scale():
    # reals: a = [1, 2] (scale 0.5, zp 0), b = [1, 3] (scale 1, zp 10); output scale 0.25, zp 0
    m = build(Op.CONCATENATION,
              [(OperandType(Q8, [2], 0.5, 0), None), (OperandType(Q8, [2], 1.0, 10), None), scalar(0)],
              [OperandType(Q8, [4], 0.25, 0)])
    out, = run(m, np.array([2, 4], np.uint8), np.array([11, 13], np.uint8))
    np.testing.assert_array_equal(out, [4, 8, 4, 12])
    assert m.min_feature_level() == 3  # differing quantization needs feature level 3


def test_reshape_infers_the_minus_one():
    m = build(Op.RESHAPE, [(OperandType(F32, [2, 3]), None), tensor([-1, 2])], [OperandType(F32, [3, 2])])
    out, = run(m, np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(out, [[0, 1], [2, 3], [4, 5]])


def test_squeeze_omitted_axes_squeezes_every_unit_dimension():
    m = build(Op.SQUEEZE, [(OperandType(F32, [1, 3, 1]), None), (OperandType(I32, [1]), OMIT)],
              [OperandType(F32, [3])])
    out, = run(m, np.array([[[1], [2], [3]]], np.float32))
    np.testing.assert_array_equal(out, [1, 2, 3])


def test_squeeze_of_a_non_unit_dimension_fails():
    # declared extents: the spec's rule at finish(); extents known only at run time: the same rule then
    with pytest.raises(NnapiError) as e:
        build(Op.SQUEEZE, [(OperandType(F32, [1, 3]), None), tensor([-1])], [OperandType(F32, [1])])
    assert e.value.code == ResultCode.BAD_DATA and "cannot squeeze dimension 1 of size 3" in e.value.message
    m = build(Op.SQUEEZE, [(OperandType(F32, [1, 0]), None), tensor([-1])], [OperandType(F32, [1])])
    with pytest.raises(NnapiError) as e:
        run(m, np.zeros((1, 3), np.float32))
    assert e.value.code == ResultCode.OP_FAILED and "cannot squeeze dimension 1 of size 3" in e.value.message


def test_strided_slice_with_negative_stride_masks_and_shrink():
    # row 1 (shrunk), columns from the last one backwards to the start (end_mask bit 1)
    m = build(Op.STRIDED_SLICE,
              [(OperandType(F32, [2, 3]), None), tensor([1, -1]), tensor([2, 0]), tensor([1, -1]),
               scalar(0), scalar(2), scalar(1)],
              [OperandType(F32, [3])])
    out, = run(m, np.array([[1, 2, 3], [4, 5, 6]], np.float32))
    np.testing.assert_array_equal(out, [6, 5, 4])


def test_pad_quant8_pads_with_the_zero_point():
    m = build(Op.PAD, [(OperandType(Q8, [2], 0.5, 3), None), tensor([[1, 2]])], [OperandType(Q8, [5], 0.5, 3)])
    out, = run(m, np.array([7, 9], np.uint8))
    np.testing.assert_array_equal(out, [3, 7, 9, 3, 3])
    assert m.min_feature_level() == 3  # a non-zero zero point pads correctly only since level 3


def test_pad_v2_uses_the_given_value():
    m = build(Op.PAD_V2, [(OperandType(F32, [1, 2]), None), tensor([[0, 1], [1, 0]]), scalar(9.5, C.FLOAT32)],
              [OperandType(F32, [2, 3])])
    out, = run(m, np.array([[1, 2]], np.float32))
    np.testing.assert_array_equal(out, [[9.5, 1, 2], [9.5, 9.5, 9.5]])


def test_gather_negative_axis_and_out_of_range_index():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    m = build(Op.GATHER, [(OperandType(F32, [2, 3]), None), scalar(-1), (OperandType(I32, [2]), None)],
              [OperandType(F32, [2, 2])])
    out, = run(m, x, np.array([2, 0], np.int32))
    np.testing.assert_array_equal(out, [[3, 1], [6, 4]])
    with pytest.raises(NnapiError) as e:
        run(m, x, np.array([3, 0], np.int32))
    assert e.value.code == ResultCode.OP_FAILED


def test_depth_to_space_nchw():
    # NCHW [1, 4, 1, 1]: the four channels become one 2x2 image
    m = build(Op.DEPTH_TO_SPACE, [(OperandType(F32, [1, 4, 1, 1]), None), scalar(2), scalar(True, C.BOOL)],
              [OperandType(F32, [1, 1, 2, 2])])
    out, = run(m, np.array([1, 2, 3, 4], np.float32).reshape(1, 4, 1, 1))
    np.testing.assert_array_equal(out.reshape(2, 2), [[1, 2], [3, 4]])


def test_space_to_batch_quant8_pads_with_the_zero_point():
    # NHWC [1, 1, 3, 1] padded to width 4 on the right, blocks [1, 2] -> batches of even / odd columns
    m = build(Op.SPACE_TO_BATCH_ND,
              [(OperandType(Q8, [1, 1, 3, 1], 1.0, 128), None), tensor([1, 2]), tensor([[0, 0], [0, 1]])],
              [OperandType(Q8, [2, 1, 2, 1], 1.0, 128)])
    out, = run(m, np.array([10, 20, 30], np.uint8).reshape(1, 1, 3, 1))
    np.testing.assert_array_equal(out.reshape(2, 2), [[10, 30], [20, 128]])


def test_channel_shuffle_and_split():
    m = build(Op.CHANNEL_SHUFFLE, [(OperandType(F32, [1, 6]), None), scalar(2), scalar(-1)],
              [OperandType(F32, [1, 6])])
    out, = run(m, np.arange(6, dtype=np.float32).reshape(1, 6))
    np.testing.assert_array_equal(out, [[0, 3, 1, 4, 2, 5]])  # out[k * 2 + g] = in[g * 3 + k]
    m = build(Op.SPLIT, [(OperandType(I32, [6]), None), scalar(0), scalar(3)], [OperandType(I32, [2])] * 3)
    outs = run(m, np.arange(6, dtype=np.int32))
    assert [o.tolist() for o in outs] == [[0, 1], [2, 3], [4, 5]]


@pytest.mark.parametrize("shape,groups,axis", [((2, 5, 4, 12), 3, 3), ((2, 12, 3, 2), 4, 1), ((1, 3, 40), 20, -1),
                                                ((3, 8), 8, 1)])
def test_channel_shuffle_moves_every_value_by_the_definition(shape, groups, axis):
    # out[..., k * groups + g, ...] = in[..., g * size + k, ...] along the axis (a few groups are copied one
    # group at a time, many in one copy)
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    m = build(Op.CHANNEL_SHUFFLE, [(OperandType(F32, list(shape)), None), scalar(groups), scalar(axis)],
              [OperandType(F32, list(shape))])
    out, = run(m, x)
    size = shape[axis] // groups
    moved, got = np.moveaxis(x, axis, -1), np.moveaxis(out, axis, -1)
    for g in range(groups):
        for k in range(size):
            np.testing.assert_array_equal(got[..., k * groups + g], moved[..., g * size + k])


def test_validate_reports_a_too_low_feature_level():
    m = build(Op.SQUEEZE, [(OperandType(F32, [1, 3]), None), tensor([0])], [OperandType(F32, [3])])
    assert m.min_feature_level() == 2
    assert m.validate(feature_level=2) == []
    problems = m.validate(feature_level=1)
    assert len(problems) == 1 and "needs feature level 2" in problems[0]


def test_finish_rejects_an_unsupported_type():
    # TRANSPOSE has no TENSOR_INT32 signature
    m = build(Op.TRANSPOSE, [(OperandType(I32, [2, 3]), None), tensor([1, 0])], [OperandType(I32, [3, 2])],
              finish=False)
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA


@pytest.mark.parametrize("code,fill", [(F32, None), (Q8, None), (C.TENSOR_QUANT8_ASYMM_SIGNED, None),
                                       (F32, -2.5), (Q8, 200), (C.TENSOR_FLOAT16, None)])
def test_pad_with_constant_paddings_matches_numpy_on_every_axis(code, fill):
    """The compiled PAD (shape_space.PreparedPad) writes the interior and every border slab, run after run
    (the output buffer is reused: nothing from the previous run may survive)."""
    rng = np.random.default_rng(5)
    pads = [[1, 0], [0, 2], [3, 1], [0, 4]]
    zp = {Q8: 3, C.TENSOR_QUANT8_ASYMM_SIGNED: -5}.get(code, 0)
    scale = 0.5 if zp else 0.0
    in_t, out_t = OperandType(code, [2, 3, 4, 5], scale, zp), OperandType(code, [3, 5, 8, 9], scale, zp)
    inputs = [(in_t, None), tensor(pads)]
    if fill is not None:
        inputs.append(scalar(fill, C.FLOAT32 if code == F32 else C.INT32))
    m = build(Op.PAD_V2 if fill is not None else Op.PAD, inputs, [out_t])
    comp = nnapi.Compilation(m)
    comp.finish()
    for _ in range(2):
        x = (rng.normal(0, 3, in_t.dimensions) if code in (F32, C.TENSOR_FLOAT16) else rng.integers(-5, 100, in_t.dimensions)).astype(in_t.dtype)
        ex = nnapi.Execution(comp)
        ex.set_input(0, x)
        out = np.full(out_t.dimensions, 99, out_t.dtype)
        ex.set_output(0, out)
        ex.compute()
        want = np.pad(x, pads, constant_values=np.asarray(zp if fill is None else fill).astype(x.dtype))
        np.testing.assert_array_equal(out, want)


def test_strided_slice_with_constant_parameters_matches_index_arithmetic():
    """The compiled STRIDED_SLICE (shape.PreparedStridedSlice) against indices worked out by hand:
    start + k * stride for each k below the count, negative strides running to the first element, masks."""
    rng = np.random.default_rng(11)
    x = rng.normal(size=(5, 6, 7)).astype(np.float32)
    cases = [([4, 5, 6], [-8, -9, -10], [-1, -2, -3], 0, 0, 0),   # back to the first element
             ([1, 0, 2], [4, 6, 7], [2, 1, 2], 0b010, 0b001, 0),
             ([3, 1, 0], [4, 5, 7], [1, 2, 3], 0, 0, 0b001)]        # shrink axis 0
    for begin, end, strides, bmask, emask, shrink in cases:
        index = []
        for d, n in enumerate(x.shape):
            b = (0 if strides[d] > 0 else n - 1) if bmask >> d & 1 else begin[d] % n if begin[d] < 0 else begin[d]
            e = (n if strides[d] > 0 else -1) if emask >> d & 1 else max(end[d] + n, -1) if end[d] < 0 else end[d]
            index.append([i for i in range(min(b, n - 1) if strides[d] < 0 else b, e, strides[d]) if 0 <= i < n])
        want = x[np.ix_(*index)]
        if shrink:
            want = want[0]
        m = build(Op.STRIDED_SLICE, [(OperandType(F32, list(x.shape)), None), tensor(begin), tensor(end),
                                     tensor(strides), scalar(bmask), scalar(emask), scalar(shrink)],
                  [OperandType(F32, list(want.shape))])
        comp = nnapi.Compilation(m)
        comp.finish()
        for _ in range(2):   # the second run takes the plan the first one made
            ex = nnapi.Execution(comp)
            ex.set_input(0, x)
            out = np.zeros(want.shape, np.float32)
            ex.set_output(0, out)
            ex.compute()
            np.testing.assert_array_equal(out, want)
