"""NNAPIDelegateKernel::Validate (LiteRT tflite/delegates/nnapi/nnapi_delegate.cc) for the
shape, movement, reduction, comparison and logical builtins. Each function mirrors the
`case kTfLiteBuiltin...` of the same name."""
from __future__ import annotations

import numpy as np

from .delegate_common import (CONSTANT_SHAPE, FL6, FL7, INPUT_TYPE, NNAPI11, NNAPI12, NNAPI13,
                              OPERAND_VALUE, OUTPUT_TYPE, RANK, VARIANT, NodeView)

_I32 = (-(1 << 31), (1 << 31) - 1)


def _fits_int32(a) -> bool:
    a = np.asarray(a)
    return a.size == 0 or bool((a >= _I32[0]).all() and (a <= _I32[1]).all())


def reshape(v: NodeView):                # case kTfLiteBuiltinReshape
    v.op_version(1)
    if v.sdk < FL6:
        v.float_or_quant8_op()
    else:
        v.float_quant8_or_int32_op()
    v.expect(v.in_rank(0) <= 4, RANK, "Input rank should be <= 4")
    v.expect(len(v.out_dims(0)) <= 4, RANK, "Output rank should be <= 4")
    if v.n_inputs >= 2:
        v.expect(v.in_const(1), CONSTANT_SHAPE, "The shape input tensor must be constant.")
    if v.n_inputs == 1:
        shape = list(v.attr("new_shape", []) or [])
        n = 0 if shape == [0] else len(shape)  # legacy models write [0] for a scalar
        v.expect(n > 0, RANK, "New shape rank should be > 0")


def _resize_common(v: NodeView) -> None:
    v.expect(v.n_inputs >= 2, VARIANT, "Expected at least 2 inputs")
    if v.n_inputs >= 2:
        v.expect(v.in_const(1), CONSTANT_SHAPE, "The size input tensor must be constant.")


def _no_align_or_half_pixel(v: NodeView) -> None:
    if v.sdk <= NNAPI12:
        v.expect(not v.attr("align_corners", False), OPERAND_VALUE, "NNAPI does not support align_corners == true.")
        v.expect(not v.attr("half_pixel_centers", False), OPERAND_VALUE,
                 "NNAPI does not support half_pixel_centers == true.")


def resize_bilinear(v: NodeView):        # case kTfLiteBuiltinResizeBilinear
    v.max_version(3)
    v.expect(v.in_rank(0) == 4, RANK, "Input should have rank 4")
    v.float_or_quant8_op()
    _resize_common(v)
    if v.sdk < NNAPI12:
        od = v.out_dims(0)
        v.expect(len(od) == 4 and od[1] == od[2], OPERAND_VALUE,
                 "Require width == height due to driver differences in NNAPI < 1.2")
    _no_align_or_half_pixel(v)
    if v.sdk < NNAPI12:
        v.expect(v.in_type(0) == "Float32", INPUT_TYPE, "NNAPI 1.0 & 1.1 only supports float input.")


def resize_nearest_neighbor(v: NodeView):  # case kTfLiteBuiltinResizeNearestNeighbor
    v.max_version(3)
    v.min_sdk(NNAPI12)
    v.float_or_quant8_op()
    _resize_common(v)
    _no_align_or_half_pixel(v)


def squeeze(v: NodeView):                # case kTfLiteBuiltinSqueeze
    v.op_version(1)
    v.min_sdk(NNAPI11)
    if v.sdk == NNAPI11:
        v.expect(len(v.attr("squeeze_dims", []) or []) != 0, OPERAND_VALUE,
                 "NNAPI 1.1 does not support null squeeze_dims properly.")


def concatenation(v: NodeView):          # case kTfLiteBuiltinConcatenation
    v.max_version(2)
    v.activation_none()
    v.expect(v.in_rank(0) <= 4, RANK, "Input rank should be less than 4")
    t = v.in_type(0)
    v.type_in(t, ("Float16", "Float32", "UInt8", "Int8"))
    if t == "UInt8" and v.sdk < NNAPI12:
        first = v.in_params(0)
        for i in range(1, v.n_inputs):
            if not v.expect(v.in_params(i) == first, OPERAND_VALUE,
                            "NNAPI 1.0-1 only supported concatenating quantized tensor of the same scale and offset."):
                break


def _has_zeroes(dims) -> bool:          # HasZeroes
    return any(d == 0 for d in dims)


def pad(v: NodeView):                    # case kTfLiteBuiltinPad / kTfLiteBuiltinPadv2
    v.max_version(2)
    v.float_or_quant8_op()
    v.min_sdk(NNAPI11)
    v.expect(not _has_zeroes(v.in_dims(0)), OPERAND_VALUE,
             "NN API pad ops do not support input tensors with no elements")
    v.expect(v.n_inputs >= 2, VARIANT, "Expecting at least 2 inputs")
    if v.n_inputs == 3:
        v.expect(v.sdk >= NNAPI12, VARIANT, "Specification of the padding value is supported from NNAPI 1.2.")
    elif v.sdk < NNAPI12:
        v.expect(v.in_type(0) == "Float32", INPUT_TYPE, "Only Float32 inputs are supported before NNAPI 1.2")


def mirror_pad(v: NodeView):             # case kTfLiteBuiltinMirrorPad (schema modes REFLECT=0, SYMMETRIC=1)
    v.max_version(2)
    v.min_sdk(FL7)
    v.float_quant8_or_int32_op()
    v.expect(v.attr("mode") in (0, 1), OPERAND_VALUE, "Unknown padding mode")
    v.expect(not _has_zeroes(v.in_dims(0)), OPERAND_VALUE,
             "NN API pad ops do not support input tensors with no elements")
    v.expect(v.n_inputs == 2, VARIANT, "Expecting 2 inputs")


def space_to_batch(v: NodeView):         # case kTfLiteBuiltinSpaceToBatchNd
    v.max_version(2)
    v.min_sdk(NNAPI11)


def batch_to_space(v: NodeView):         # case kTfLiteBuiltinBatchToSpaceNd: crops must be a known [0,0,0,0]
    v.max_version(2)
    v.min_sdk(NNAPI11)
    crops = v.in_value(2)
    v.expect(crops is not None and crops.dtype == np.int32 and crops.size == 4 and not crops.any(), OPERAND_VALUE,
             "All crops should be 0.")


def strided_slice(v: NodeView):          # case kTfLiteBuiltinStridedSlice
    v.max_version(2)
    v.float_or_quant8_op()
    v.min_sdk(NNAPI11)


def transpose(v: NodeView):              # case kTfLiteBuiltinTranspose
    v.max_version(2)
    v.min_sdk(NNAPI11)
    v.expect(v.n_inputs > 1 and v.in_const(1), CONSTANT_SHAPE, "Dynamically-sized tensors not supported.")


def slice_(v: NodeView):                 # case kTfLiteBuiltinSlice
    v.max_version(2)
    v.min_sdk(NNAPI12)
    v.type_in(v.in_type(0), ("Float32", "Int32", "UInt8", "Int8"))
    v.expect(v.in_type(1) == "Int32", INPUT_TYPE, "Begin type should be Int32")
    v.expect(v.in_type(2) == "Int32", INPUT_TYPE, "Size type should be Int32")


def space_to_depth(v: NodeView):         # case kTfLiteBuiltinSpaceToDepth
    v.max_version(2)
    v.type_in(v.in_type(0), ("Float32", "UInt8", "Int8"))


def depth_to_space(v: NodeView):         # case kTfLiteBuiltinDepthToSpace
    v.type_in(v.in_type(0), ("Float32", "UInt8", "Int8"))


def mean(v: NodeView):                   # case kTfLiteBuiltinMean
    v.max_version(2)
    v.min_sdk(NNAPI11)
    t = v.in_type(0)
    if v.sdk >= NNAPI12:
        v.expect(t in ("Float32", "UInt8", "Int8"), INPUT_TYPE, "Expected Float32 or Quantized input")
    else:
        v.expect(t == "Float32", INPUT_TYPE, "Expected Float32 input")
    v.expect(len(v.out_dims(0)) > 0, OUTPUT_TYPE, "NNAPI does not support generating a scalar as output for MEAN.")
    v.expect(v.in_rank(0) <= 4, OPERAND_VALUE, "NNAPI does not support mean of a tensor with rank > 4")


def reduce_any(v: NodeView):             # case kTfLiteBuiltinReduceAny
    v.op_version(2)
    v.min_sdk(NNAPI12)
    v.expect(len(v.out_dims(0)) != 0, OUTPUT_TYPE, "NNAPI does not support generating a scalar as output.")


def reduce_min_max(v: NodeView):         # case kTfLiteBuiltinReduceMin / kTfLiteBuiltinReduceMax
    v.max_version(2)
    v.min_sdk(NNAPI12)
    v.type_in(v.in_type(0), ("Float32", "UInt8", "Int8"))
    v.expect(v.in_rank(0) != 0, OUTPUT_TYPE, "NNAPI does not support generating a scalar as output.")


def reduce_prod_sum(v: NodeView):        # case kTfLiteBuiltinReduceProd / kTfLiteBuiltinSum
    v.op_version(1)
    v.min_sdk(NNAPI12)
    v.expect(len(v.out_dims(0)) != 0, OUTPUT_TYPE, "NNAPI does not support generating a scalar as output")
    v.expect(v.in_type(0) == "Float32", INPUT_TYPE, "NNAPI only supports floating point input.")


def arg_min_max(v: NodeView):            # case kTfLiteBuiltinArgMax / kTfLiteBuiltinArgMin (TensorType INT32 = 2)
    v.max_version(2)
    v.min_sdk(NNAPI12)
    v.type_in(v.in_type(0), ("Float16", "Float32", "Int32", "UInt8", "Int8"))
    if v.in_type(1) == "Int64":
        val = v.in_value(1)
        v.expect(val is not None and _fits_int32(val), INPUT_TYPE,
                 "NNAPI only supports axis as int32. If the axis type is int64 and constant we can convert it to "
                 "int32 if the value isn't too large.")
    else:
        v.expect(v.in_type(1) == "Int32", INPUT_TYPE, "Axis should be Int32")
    v.expect(v.attr("output_type", 2) == 2, OUTPUT_TYPE, "NNAPI only supports int32 output.")


def tile(v: NodeView):                   # case kTfLiteBuiltinTile
    v.op_version(1)
    v.min_sdk(NNAPI12)
    v.type_in(v.in_type(0), ("Float32", "Int8", "UInt8", "Int32"))
    v.expect(v.in_type(1) == "Int32", INPUT_TYPE, "Multipliers should be Int32")


def logical(v: NodeView):                # case kTfLiteBuiltinLogicalOr / LogicalAnd / LogicalNot
    v.op_version(1)
    v.min_sdk(NNAPI12)
    v.expect(v.in_type(0) == "Bool", INPUT_TYPE, "Input should be bool")


def comparison(v: NodeView):             # case kTfLiteBuiltinLess ... kTfLiteBuiltinNotEqual
    v.max_version(2)
    v.min_sdk(NNAPI12)
    v.type_in(v.in_type(0), ("Float32", "UInt8", "Int8", "Bool", "Int32"))


def topk_v2(v: NodeView):                # case kTfLiteBuiltinTopkV2
    v.max_version(2)
    v.min_sdk(NNAPI12)
    v.type_in(v.in_type(0), ("Float32", "Int32", "UInt8", "Int8"))
    v.expect(v.in_type(1) == "Int32" and v.in_const(1), INPUT_TYPE, "K param should be a constant of type Int32")


def select(v: NodeView):                 # case kTfLiteBuiltinSelect
    v.max_version(2)
    v.min_sdk(NNAPI12)
    v.type_in(v.in_type(1), ("Float32", "Int32", "UInt8", "Int8"))
    v.expect(v.in_dims(0) == v.in_dims(1), OPERAND_VALUE, "Condition and inputs tensors should have the same shape")


def gather(v: NodeView):                 # case kTfLiteBuiltinGather
    v.op_version(2)
    v.min_sdk(NNAPI12)
    v.type_in(v.in_type(0), ("Float32", "Float16", "Int32", "UInt8", "Int8"))
    v.expect(v.in_type(1) == "Int32", INPUT_TYPE, "Positions type should be one of kTfLiteInt32")
    v.expect(v.in_rank(1) != 0, RANK, "0-dimension args are not supported by NNAPI.")


def expand_dims(v: NodeView):            # case kTfLiteBuiltinExpandDims
    v.op_version(1)
    v.min_sdk(NNAPI12)
    v.type_in(v.in_type(0), ("Float32", "Float16", "Int32", "UInt8", "Int8"))
    v.expect(v.in_type(1) == "Int32" and v.in_const(1), INPUT_TYPE, "NNAPI only supports constant int32 axis tensor.")


def split(v: NodeView):                  # case kTfLiteBuiltinSplit (inputs: axis, value)
    v.op_version(3)
    v.min_sdk(NNAPI12)
    if v.sdk >= NNAPI13:
        v.type_in(v.in_type(1), ("Float32", "UInt8", "Int8", "Int32"))
    else:
        v.type_in(v.in_type(1), ("Float32", "UInt8", "Int32"))
    v.expect(v.in_type(0) == "Int32" and v.in_const(0), INPUT_TYPE, "NNAPI only supports constant int32 axis tensor.")


def split_v(v: NodeView):                # case kTfLiteBuiltinSplitV (inputs: value, size_splits, axis)
    v.op_version(2)
    v.min_sdk(NNAPI13)
    v.type_in(v.in_type(0), ("Float32", "UInt8", "Int8", "Int32"))
    sizes_ok = v.in_type(1) == "Int32" and v.in_rank(1) == 1 and v.in_const(1)
    axis_ok = v.in_type(2) == "Int32" and v.in_const(2)
    v.expect(sizes_ok, INPUT_TYPE, "NNAPI only supports constant int32 size_splits vector.")
    v.expect(axis_ok, INPUT_TYPE, "NNAPI only supports constant int32 axis tensor.")
    if sizes_ok and axis_ok:
        sizes = [int(s) for s in v.in_value(1).ravel()]
        v.expect(all(s != 0 for s in sizes), INPUT_TYPE, "NNAPI only supports non-zero split sizes.")
        # ComputeSplitVUnknownSplitSize: the -1 entry takes what the others leave of the axis
        dims, axis = v.in_dims(0), int(v.in_value(2).ravel()[0])
        unknown = -1  # no -1 entry: the helper returns -1
        if -1 in sizes and dims:
            unknown = dims[axis % len(dims)] - sum(s for s in sizes if s != -1)
        v.expect(unknown != 0, INPUT_TYPE, "NNAPI only supports non-zero split sizes.")


def fill(v: NodeView):                   # case kTfLiteBuiltinFill
    v.op_version(1)
    v.min_sdk(NNAPI13)
    const = v.in_const(0)
    v.expect(const, INPUT_TYPE, "NNAPI doesn't support dynamic dimensions tensor.")
    v.type_in(v.in_type(0), ("Int32", "Int64"))
    if const:
        dims = v.in_dims(0)
        v.expect(bool(dims) and dims[0] != 0, OPERAND_VALUE, "NNAPI doesn't support generating scalars from FILL")
        if v.in_type(0) == "Int64":
            v.expect(_fits_int32(v.in_value(0)), OPERAND_VALUE,
                     "NNAPI only supports int32 dimensions tensor. If the dimensions type is int64 and they are "
                     "constant we can convert them to int32 if the value isn't too large.")
    v.type_in(v.in_type(1), ("Float32", "Int32", "Int64"))
    if v.in_type(1) == "Int64" and v.in_const(1):
        v.expect(_fits_int32(v.in_value(1)), INPUT_TYPE,
                 "NNAPI only supports int32 input. If the input type is int64 and constant we can convert it to "
                 "int32 if the value isn't too large.")


def pack(v: NodeView):                   # case kTfLiteBuiltinPack
    v.op_version(2)
    v.min_sdk(NNAPI13)
    if v.sdk >= FL6:
        v.type_in(v.in_type(0), ("Int32", "Float32", "Int8", "UInt8"))
    else:
        v.type_in(v.in_type(0), ("Float32", "Int8"))
        axis = v.attr("axis")
        v.expect(axis != -1 and axis != v.in_rank(0), OPERAND_VALUE,
                 "NNAPI does not support axis being the last dimension")


def unpack(v: NodeView):                 # case kTfLiteBuiltinUnpack
    v.op_version(2)
    v.min_sdk(NNAPI13)
    v.type_in(v.in_type(0), ("Float32", "UInt8", "Int8"))
    r = v.in_rank(0)
    v.expect(r > 1, OPERAND_VALUE, "NNAPI does not support unpacking a rank-1 tensor")
    v.expect(r <= 4, OPERAND_VALUE, "NNAPI does not support unpacking a tensor with rank > 4")
    axis = v.attr("axis")
    v.expect(axis != -1 and axis != r - 1, OPERAND_VALUE, "NNAPI does not support axis being the last dimension")


def reverse_v2(v: NodeView):             # case kTfLiteBuiltinReverseV2
    v.max_version(3)
    v.min_sdk(FL7)
    v.float_quant8_or_int32_op()
    v.expect(v.n_inputs == 2, VARIANT, "Expecting 2 inputs")


RULES = {
    "RESHAPE": reshape, "RESIZE_BILINEAR": resize_bilinear, "RESIZE_NEAREST_NEIGHBOR": resize_nearest_neighbor,
    "SQUEEZE": squeeze, "CONCATENATION": concatenation, "PAD": pad, "PADV2": pad, "MIRROR_PAD": mirror_pad,
    "SPACE_TO_BATCH_ND": space_to_batch, "BATCH_TO_SPACE_ND": batch_to_space, "STRIDED_SLICE": strided_slice,
    "TRANSPOSE": transpose, "SLICE": slice_, "SPACE_TO_DEPTH": space_to_depth, "DEPTH_TO_SPACE": depth_to_space,
    "MEAN": mean, "REDUCE_ANY": reduce_any, "REDUCE_MIN": reduce_min_max, "REDUCE_MAX": reduce_min_max,
    "REDUCE_PROD": reduce_prod_sum, "SUM": reduce_prod_sum, "ARG_MAX": arg_min_max, "ARG_MIN": arg_min_max,
    "TILE": tile, "LOGICAL_OR": logical, "LOGICAL_AND": logical, "LOGICAL_NOT": logical,
    "LESS": comparison, "LESS_EQUAL": comparison, "GREATER": comparison, "GREATER_EQUAL": comparison,
    "EQUAL": comparison, "NOT_EQUAL": comparison, "TOPK_V2": topk_v2, "SELECT": select, "GATHER": gather,
    "EXPAND_DIMS": expand_dims, "SPLIT": split, "SPLIT_V": split_v, "FILL": fill, "PACK": pack, "UNPACK": unpack,
    "REVERSE_V2": reverse_v2,
}
