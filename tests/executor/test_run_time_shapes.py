"""Shapes known only at run time are checked by the operation's spec, in one place (executor/runtime.py
through nnapi/ops/binding.py, Bound.run_time_problem): the same rules and output-shape check that
finish() applies to declared shapes, before the kernel runs, as OP_FAILED naming the operation. Steps
whose shapes are all known at compile time are not checked again."""
import numpy as np
import pytest

import nnapi
from nnapi import OperandCode as C, OperandType, OperationCode as Op, PaddingCode
from executor.runtime import compile_model
from tests.executor.op_harness import assert_bad_data, assert_fails_at_compute, build, run, run_one, scalar, t

F32 = C.TENSOR_FLOAT32


def _ints(*values):
    return [scalar(C.INT32, v) for v in values]


def _conv(in_dims, out_dims, filter_shape=(2, 3, 3, 2), stride_w=1):
    stride = (OperandType(C.INT32), None) if stride_w is None else scalar(C.INT32, stride_w)
    return build(Op.CONV_2D, [(t(F32, in_dims), None),
                              (t(F32, filter_shape), np.ones(filter_shape)),
                              (t(F32, filter_shape[:1]), np.zeros(filter_shape[:1])),
                              scalar(C.INT32, PaddingCode.VALID), stride, scalar(C.INT32, 1), scalar(C.INT32, 0)],
                 [t(F32, out_dims)])


def _fails(model, *arrays) -> str:
    return assert_fails_at_compute(model, *arrays).message


def test_conv_with_unknown_input_dims_runs_the_shapes_it_accepts():
    m = _conv((1, 0, 0, 0), (1, 0, 0, 2))
    out = run_one(m, np.ones((1, 5, 4, 2), np.float32))
    np.testing.assert_array_equal(out, np.full((1, 3, 2, 2), 18.0))   # 3 x 3 taps x 2 channels of ones


def test_conv_input_channels_that_the_filter_does_not_take_fail_with_the_specs_message():
    m = _conv((1, 0, 0, 0), (1, 0, 0, 2))
    assert _fails(m, np.ones((1, 5, 5, 3), np.float32)) == \
        "operation 0 (CONV_2D): input has 3 channels, the filter expects 2"


def test_conv_filter_larger_than_the_run_time_input_fails():
    m = _conv((1, 0, 0, 2), (1, 0, 0, 2))
    message = _fails(m, np.ones((1, 2, 5, 2), np.float32))
    assert message.startswith("operation 0 (CONV_2D): the 3x3 filter does not fit the padded 2x5 input")


def test_conv_rank_fed_at_run_time_is_the_specs_rule():
    m = _conv(None, (1, 0, 0, 2))   # input of unknown rank
    assert _fails(m, np.ones((5, 5, 2), np.float32)) == "operation 0 (CONV_2D): input has rank 3, expected one of [4]"


def test_output_declared_with_other_extents_than_the_run_time_inputs_give():
    m = _conv((1, 0, 0, 2), (1, 4, 4, 2))
    assert _fails(m, np.ones((1, 5, 5, 2), np.float32)) == \
        "operation 0 (CONV_2D): output operand 7 is declared [1, 4, 4, 2], its inputs give [1, 3, 3, 2]"


def test_a_stride_fed_at_run_time_is_checked_by_the_specs_window_rule():
    m = _conv((1, 5, 5, 2), (1, 0, 0, 2), stride_w=None)
    assert run_one(m, np.ones((1, 5, 5, 2), np.float32), np.int32(2)).shape == (1, 3, 2, 2)
    assert _fails(m, np.ones((1, 5, 5, 2), np.float32), np.int32(0)) == \
        "operation 0 (CONV_2D): stride_w must be positive, got 0"


def _max_pool(in_dims, filter_hw=(2, 2)):
    return build(Op.MAX_POOL_2D, [(t(F32, in_dims), None)] + _ints(0, 0, 0, 0, 1, 1, *filter_hw[::-1], 0),
                 [t(F32, (0, 0, 0, 0))])


def test_pool_of_unknown_rank_fed_a_3d_input_fails_with_the_rank_rule():
    assert _fails(_max_pool(None), np.ones((4, 4, 1), np.float32)) == \
        "operation 0 (MAX_POOL_2D): input has rank 3, expected one of [4]"


def test_pool_window_larger_than_the_run_time_input_fails():
    m = _max_pool((1, 0, 0, 1), filter_hw=(3, 3))
    assert run_one(m, np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1)).item() == 8.0
    assert _fails(m, np.ones((1, 2, 3, 1), np.float32)).startswith(
        "operation 0 (MAX_POOL_2D): the 3x3 filter does not fit the padded 2x3 input")


@pytest.mark.parametrize("code", [Op.ADD, Op.MUL])
def test_elementwise_inputs_that_do_not_broadcast_fail_with_the_specs_message(code):
    m = build(code, [(t(F32, (0, 0)), None), (t(F32, (0, 0)), None), scalar(C.INT32, 0)], [t(F32, (0, 0))])
    a, b = np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)
    np.testing.assert_array_equal(run_one(m, a, np.ones((1, 3), np.float32)), np.full((2, 3), 2.0 if code == Op.ADD
                                                                                      else 1.0))
    assert _fails(m, a, b) == f"operation 0 ({code.name}): input1 [2, 3] and input2 [4, 3] do not broadcast"


def test_comparison_inputs_that_do_not_broadcast():
    m = build(Op.GREATER, [(t(F32, (0,)), None), (t(F32, (0,)), None)], [t(C.TENSOR_BOOL8, (0,))])
    assert _fails(m, np.ones(2, np.float32), np.ones(3, np.float32)) == \
        "operation 0 (GREATER): input1 [2] and input2 [3] do not broadcast"


def test_concatenation_extents_outside_the_axis_must_agree():
    m = build(Op.CONCATENATION, [(t(F32, (0, 0)), None), (t(F32, (0, 0)), None), scalar(C.INT32, 0)],
              [t(F32, (0, 0))])
    a = np.ones((2, 3), np.float32)
    assert run_one(m, a, np.zeros((1, 3), np.float32)).tolist() == [[1, 1, 1]] * 2 + [[0, 0, 0]]
    assert _fails(m, a, np.ones((2, 4), np.float32)) == \
        "operation 0 (CONCATENATION): input 1 has shape [2, 4], incompatible with input 0 [2, 3] outside axis 0"


def test_reshape_to_a_constant_shape_of_another_element_count():
    m = build(Op.RESHAPE, [(t(F32, (0, 0)), None), (t(C.TENSOR_INT32, (1,)), [6])], [t(F32, (6,))])
    assert run_one(m, np.arange(6, dtype=np.float32).reshape(2, 3)).tolist() == [0, 1, 2, 3, 4, 5]
    assert _fails(m, np.ones((2, 2), np.float32)) == \
        "operation 0 (RESHAPE): shape [6] has 6 elements, the input has 4"


def test_batch_matmul_inner_dimensions_fed_at_run_time():
    m = build(Op.BATCH_MATMUL, [(t(F32, (0, 0)), None), (t(F32, (0, 0)), None)], [t(F32, (0, 0))])
    assert _fails(m, np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)) == \
        "operation 0 (BATCH_MATMUL): cannot multiply [..., 2, 3] by [..., 2, 3] matrices (after adj_x/adj_y)"


# the same rules on declared shapes are BAD_DATA at finish()

def test_declared_shapes_that_break_the_new_shape_rules_fail_at_finish():
    concat = build(Op.CONCATENATION, [(t(F32, (2, 3)), None), (t(F32, (2, 4)), None), scalar(C.INT32, 0)],
                   [t(F32, (4, 3))], finish=False)
    assert "input 1 has shape [2, 4], incompatible with input 0 [2, 3] outside axis 0" in \
        assert_bad_data(concat.finish).message
    reshape = build(Op.RESHAPE, [(t(F32, (2, 2)), None), (t(C.TENSOR_INT32, (1,)), [6])], [t(F32, (6,))],
                    finish=False)
    assert "shape [6] has 6 elements, the input has 4" in assert_bad_data(reshape.finish).message
    conv = build(Op.CONV_2D, [(t(F32, (1, 2, 2, 1)), None), (t(F32, (1, 3, 3, 1)), np.ones((1, 3, 3, 1))),
                              (t(F32, (1,)), np.zeros(1)), *_ints(PaddingCode.VALID, 1, 1, 0)],
                 [t(F32, (1, 0, 0, 1))], finish=False)
    assert "the 3x3 filter does not fit the padded 2x2 input" in assert_bad_data(conv.finish).message
    fc = build(Op.FULLY_CONNECTED, [(t(F32, (1, 5)), None), (t(F32, (2, 3)), np.ones((2, 3))),
                                    (t(F32, (2,)), np.zeros(2)), scalar(C.INT32, 0)], [t(F32, (1, 2))], finish=False)
    assert "input [1, 5] does not flatten to rows of 3" in assert_bad_data(fc.finish).message


def test_only_steps_with_shapes_unknown_at_compile_time_are_checked():
    static, dynamic = _conv((1, 5, 5, 2), (1, 3, 3, 2)), _conv((1, 0, 0, 2), (1, 0, 0, 2))
    assert [s.checked for s in compile_model(static).steps] == [False]
    assert [s.checked for s in compile_model(dynamic).steps] == [True]
    # a step downstream of one whose output extents are inferred at compile time is not checked either
    m = nnapi.Model()
    x = m.add_operand(t(F32, (2, 3)))
    y = m.add_operand(t(F32, (0, 0)))   # the declaration leaves it open; inference gives [2, 3]
    fuse = m.add_operand(OperandType(C.INT32))
    m.set_operand_value(fuse, np.int32(0))
    z = m.add_operand(t(F32, (2, 3)))
    m.add_operation(Op.ADD, [x, x, fuse], [y])
    m.add_operation(Op.MUL, [y, x, fuse], [z])
    m.identify_inputs_and_outputs([x], [z])
    m.finish()
    assert [s.checked for s in compile_model(m).steps] == [False, False]
    assert run_one(m, np.full((2, 3), 3, np.float32)).tolist() == [[18.0] * 3] * 2


def test_detection_box_shapes_fed_at_run_time():
    m = build(Op.AXIS_ALIGNED_BBOX_TRANSFORM,
              [(t(F32, (0, 0)), None), (t(F32, (0, 0)), None), (t(C.TENSOR_INT32, (0,)), None), (t(F32, (1, 2)),
                                                                                                 [[10, 10]])],
              [t(F32, (0, 0))])
    rois, batches = np.array([[0, 0, 4, 4]], np.float32), np.zeros(1, np.int32)
    # zero deltas keep the box (clipped to the 10 x 10 image)
    assert run_one(m, rois, np.zeros((1, 4), np.float32), batches).tolist() == [[0, 0, 4, 4]]
    assert _fails(m, rois, np.zeros((1, 6), np.float32), batches) == (
        "operation 0 (AXIS_ALIGNED_BBOX_TRANSFORM): rois [1, 4], deltas [1, 6] and batches [1] do not fit "
        "[n, 4], [n, 4 * classes], [n]")


@pytest.mark.parametrize("code, params, message", [
    (Op.SPLIT, [scalar(C.INT32, 1), scalar(C.INT32, 2)], "cannot split dimension 1 of size 3 into 2 equal parts"),
    (Op.CHANNEL_SHUFFLE, [scalar(C.INT32, 2), scalar(C.INT32, 1)], "cannot split dimension 1 of size 3 into 2 groups"),
])
def test_parts_that_do_not_divide_the_run_time_extent(code, params, message):
    outputs = [t(F32, (0, 0))] * (2 if code == Op.SPLIT else 1)
    m = build(code, [(t(F32, (0, 0)), None)] + params, outputs)
    assert _fails(m, np.ones((2, 3), np.float32)) == f"operation 0 ({code.name}): {message}"
    expected = [(2, 2), (2, 2)] if code == Op.SPLIT else [(2, 4)]
    assert [o.shape for o in run(m, np.ones((2, 4), np.float32))] == expected


def test_constant_transpose_perm_and_squeeze_axes_are_checked_at_finish():
    """TRANSPOSE's constant perm must list each dimension once, SQUEEZE's constant axes must name size-1
    dimensions: BAD_DATA at finish(), naming the perm or the dimension (run-time values: the kernel)."""
    bad_perm = build(Op.TRANSPOSE, [(t(F32, (2, 3, 4)), None), (t(C.TENSOR_INT32, (3,)), [0, 0, 1])],
                     [t(F32, (2, 2, 3))], finish=False)
    assert "perm [0, 0, 1] is not a permutation of 0..2" in assert_bad_data(bad_perm.finish).message
    bad_axes = build(Op.SQUEEZE, [(t(F32, (1, 3, 1)), None), (t(C.TENSOR_INT32, (1,)), [1])],
                     [t(F32, (1, 1))], finish=False)
    assert "cannot squeeze dimension 1 of size 3" in assert_bad_data(bad_axes.finish).message
    # the same operations with valid parameters finish and compute what numpy does
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    ok = build(Op.TRANSPOSE, [(t(F32, (2, 3, 4)), None), (t(C.TENSOR_INT32, (3,)), [2, 0, 1])], [t(F32, (4, 2, 3))])
    np.testing.assert_array_equal(run_one(ok, x), x.transpose(2, 0, 1))
    squeeze = build(Op.SQUEEZE, [(t(F32, (1, 3, 1)), None), (t(C.TENSOR_INT32, (1,)), [-1])], [t(F32, (1, 3))])
    np.testing.assert_array_equal(run_one(squeeze, np.ones((1, 3, 1), np.float32)), np.ones((1, 3)))
