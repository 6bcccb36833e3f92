"""Helpers shared by the convolution, dense, pooling and normalization converters
(conv.py, dense.py, pool.py, norm.py): attributes, weights and biases, reshapes,
and the densifier of sparse constant weights (DENSIFY). Registers nothing."""
from __future__ import annotations

import numpy as np
import tflite

from nnapi import OperandCode as C, OperandType, PaddingCode
from nnapi.bias_scale import bias_scale, bias_scale_matches

from ...context import FUSE_CODES
from ...registry import Reason, Unsupported
from ...context import stored
from .common import adopt, name, otype, reshape

# TFLite Padding enum -> NNAPI implicit padding: both define SAME as
# total = max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0), the smaller half first
PADDING = {0: PaddingCode.SAME, 1: PaddingCode.VALID}
_QUANT_DTYPES = (np.dtype(np.uint8), np.dtype(np.int8))


def padding(node, ctx) -> PaddingCode:
    value = node.attrs.get("padding", 0)
    if value not in PADDING:
        raise Unsupported(Reason.ATTRIBUTE,
                          f"padding {value} on {name(ctx, node.outputs[0])} is neither SAME nor VALID")
    return PADDING[value]


def positive_attrs(node, ctx, *keys: str) -> list:
    """Integer attributes (strides, filter sizes, dilations) that must be positive."""
    values = [node.attrs.get(k, 1) or 0 for k in keys]
    for k, v in zip(keys, values):
        if v <= 0:
            raise Unsupported(Reason.ATTRIBUTE, f"{k} = {v} on {name(ctx, node.outputs[0])} must be positive")
    return values


def require_rank(ctx, i: int, ranks, what: str) -> tuple:
    shape = ctx.shape(i)
    if len(shape) not in ranks:
        raise Unsupported(Reason.RANK, f"{what} {name(ctx, i)} has rank {len(shape)}, expected {sorted(ranks)}")
    return shape


def static_shape(ctx, i: int, what: str) -> tuple:
    shape = ctx.shape(i)
    if not shape or 0 in shape:
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{what} {name(ctx, i)} needs a static shape, has {list(shape)}")
    return shape


def reject_float16(ctx, *tensors: int) -> None:
    """LiteRT's float kernels read float16 tensors as float32 bytes (models put a DEQUANTIZE in
    front of float16 weights), so a float16 tensor feeding these ops directly has no meaning."""
    for i in tensors:
        if i >= 0 and np.dtype(ctx.tensor(i).dtype) == np.float16:
            raise Unsupported(Reason.OPERAND_TYPE, f"tensor {name(ctx, i)} is float16 without a DEQUANTIZE; "
                                                   f"LiteRT's kernel would misread it")


def constant_array(ctx, i: int, what: str) -> np.ndarray:
    """The value of a constant tensor (a sparse one densified)."""
    t = ctx.tensor(i)
    if t.is_constant and getattr(t, "sparse", False):
        return densify(t)
    return ctx.const_value(i, what)


def weights_operand(ctx, i: int) -> int:
    """The operand of a weights tensor; a sparse constant (FULLY_CONNECTED takes those directly
    from version 8) becomes a dense constant."""
    t = ctx.tensor(i)
    if t.is_constant and getattr(t, "sparse", False) and i not in ctx.operand_of:
        return const_like(ctx, i, densify(t))
    return ctx.operand(i)


# -- biases ----------------------------------------------------------------------

def bias_operand(ctx, bias_i: int, input_i: int, filter_i: int, channels: int) -> int:
    """The bias operand of a convolution / fully connected layer: the source bias, or zeros when
    absent. A quantized bias must be int32 with scale input_scale x filter_scale (per channel for
    per-channel filters) and zero point 0: NNAPI implies that scale, so any other is reported."""
    inp, flt = ctx.tensor(input_i), ctx.tensor(filter_i)
    quantized = np.dtype(inp.dtype) in _QUANT_DTYPES
    if quantized and (inp.quant is None or flt.quant is None):
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"quantized input {name(ctx, input_i)} needs quantized weights, "
                                                    f"{name(ctx, filter_i)} has no quantization parameters")
    if bias_i < 0:
        if not quantized:
            return ctx.const(np.zeros(channels, np.float32), name=f"{inp.name}/zero_bias")
        scale = 0.0 if flt.quant.per_channel else bias_scale(inp.quant.scale, flt.quant.scale)
        return ctx.const(np.zeros(channels, np.int32), C.TENSOR_INT32, f"{inp.name}/zero_bias", scale)
    bias = ctx.tensor(bias_i)
    reject_float16(ctx, bias_i)
    if not quantized:
        return ctx.operand(bias_i)
    if np.dtype(bias.dtype) != np.int32:
        raise Unsupported(Reason.OPERAND_TYPE, f"bias {name(ctx, bias_i)} is {np.dtype(bias.dtype).name}, "
                                               f"NNAPI needs int32 for quantized inputs")
    q = bias.quant
    want = np.atleast_1d(bias_scale(inp.quant.scale, flt.quant.scales))
    have = np.asarray(q.scales if q is not None else [0.0], np.float64)
    if (q is None or any(z != 0 for z in q.zero_points) or have.size not in (1, want.size)
            or not bias_scale_matches(have, inp.quant.scale, flt.quant.scales)):
        raise Unsupported(Reason.QUANTIZATION_TYPE,
                          f"bias {name(ctx, bias_i)} scale {have.tolist()} must be input scale x filter scale "
                          f"{want.astype(np.float64).tolist()} with zero point 0 (NNAPI implies that scale)")
    if flt.quant.per_channel:
        return ctx.operand(bias_i)  # the context gives per-channel biases scale 0, as NNAPI wants
    # per tensor: the exact float32 product the NNAPI spec checks, same stored values
    return ctx.const(np.asarray(constant_array(ctx, bias_i, "bias"), np.int32), C.TENSOR_INT32, bias.name,
                     float(want[0]))


# -- reshapes ----------------------------------------------------------------------

def reshaped(ctx, operand: int, dims, label: str) -> int:
    """A RESHAPE of `operand` to `dims` (same type and quantization); returns the new operand."""
    t = otype(ctx, operand)
    out = ctx.temp(OperandType(t.code, list(dims), t.scale, t.zero_point), label)
    reshape(ctx, operand, out, dims)
    return out


def reshape_into(ctx, operand: int, out_tensor: int) -> None:
    """RESHAPE `operand` into the operand of source tensor `out_tensor`."""
    reshape(ctx, operand, ctx.output(out_tensor), ctx.shape(out_tensor))


# -- DENSIFY: TFLite sparse tensors ------------------------------------------------

_INDEX_VECTORS = {1: tflite.Int32Vector, 2: tflite.Uint16Vector, 3: tflite.Uint8Vector}


def _index_vector(table, kind: int, what: str) -> np.ndarray:
    cls = _INDEX_VECTORS.get(kind)
    if cls is None or table is None:
        raise Unsupported(Reason.INVALID, f"sparse dimension has no {what} vector")
    vec = cls()
    vec.Init(table.Bytes, table.Pos)
    return np.asarray(vec.ValuesAsNumpy() if vec.ValuesLength() else [], np.int64)


def densify(t) -> np.ndarray:
    """The dense value of a sparse constant tensor (TFLite's SparsityParameters: a traversal order
    of the dimensions and block dimensions, each DENSE or SPARSE_CSR)."""
    sp, shape = t.sparsity, tuple(t.shape)
    if sp is None:
        return t.data
    order = [int(v) for v in sp.TraversalOrderAsNumpy()] if sp.TraversalOrderLength() else list(range(len(shape)))
    block_map = [int(v) for v in sp.BlockMapAsNumpy()] if sp.BlockMapLength() else []
    n = len(shape)
    if sp.DimMetadataLength() != len(order) or sorted(order) != list(range(len(order))) \
            or len(order) != n + len(block_map):
        raise Unsupported(Reason.INVALID, f"tensor {t.name!r} has inconsistent sparsity parameters")
    # expand level by level: `pos` indexes the current level's entries, `coords` their indices
    pos, coords, sizes = np.zeros(1, np.int64), [], {}
    for level in range(len(order)):
        dm = sp.DimMetadata(level)
        if dm.Format() == tflite.DimensionType.DENSE:
            size = dm.DenseSize()
            sizes[order[level]] = size
            coords = [np.repeat(c, size) for c in coords] + [np.tile(np.arange(size), pos.size)]
            pos = (pos[:, None] * size + np.arange(size)).ravel()
        else:
            seg = _index_vector(dm.ArraySegments(), dm.ArraySegmentsType(), "segments")
            idx = _index_vector(dm.ArrayIndices(), dm.ArrayIndicesType(), "indices")
            if pos.size and (pos.max() + 1 >= seg.size or seg[-1] > idx.size):
                raise Unsupported(Reason.INVALID, f"tensor {t.name!r}: sparse segments out of range")
            counts = seg[pos + 1] - seg[pos]
            ranges = [np.arange(a, b) for a, b in zip(seg[pos], seg[pos + 1])]
            new_pos = np.concatenate(ranges) if ranges else np.zeros(0, np.int64)
            coords = [np.repeat(c, counts) for c in coords] + [idx[new_pos]]
            pos = new_pos
    values = np.asarray(t.data).ravel()
    if values.size != pos.size:
        raise Unsupported(Reason.INVALID, f"tensor {t.name!r}: {values.size} stored values for {pos.size} positions")
    index = [np.zeros(pos.size, np.int64) for _ in range(n)]
    for level, dim in enumerate(order):  # outer (blocked) indices first
        if dim < n:
            index[dim] = index[dim] + coords[level]
    for level, dim in enumerate(order):  # then the offsets inside the blocks
        if dim >= n and dim not in sizes:
            raise Unsupported(Reason.INVALID, f"tensor {t.name!r}: block dimension {dim} is not dense")
        if dim >= n:
            orig = block_map[dim - n]
            index[orig] = index[orig] * sizes[dim] + coords[level]
    dense = np.zeros(shape, values.dtype)
    if any((ix >= s).any() for ix, s in zip(index, shape)):
        raise Unsupported(Reason.INVALID, f"tensor {t.name!r}: sparse indices outside the shape {list(shape)}")
    dense[tuple(index)] = values
    return dense


def const_like(ctx, tensor: int, value: np.ndarray, label: str = "") -> int:
    """A constant operand holding `value` with source tensor `tensor`'s NNAPI type and quantization
    (the int8 -> uint8 rewrite below feature level 4 applied), in `value`'s shape."""
    ttype, cq = ctx.nnapi_type(tensor)
    data = stored(ttype.code, np.asarray(value))
    dims = list(data.shape) or [1]
    idx = ctx.model.add_operand(OperandType(ttype.code, dims, ttype.scale, ttype.zero_point),
                                name=label or ctx.tensor(tensor).name)
    if cq is not None:
        ctx.model.set_operand_symm_per_channel_quant_params(idx, cq[0], cq[1])
    ctx.model.set_operand_value(idx, np.ascontiguousarray(data.astype(ttype.dtype)).reshape(dims))
    return idx


def constant_from(ctx, out_tensor: int, value: np.ndarray) -> int:
    """Register `value` as the constant NNAPI operand of source tensor `out_tensor` (nothing is emitted;
    consumers' ctx.operand(out_tensor) then returns this constant)."""
    return adopt(ctx, out_tensor, const_like(ctx, out_tensor, np.asarray(value).reshape(ctx.shape(out_tensor))))


def fuse_of(node, ctx) -> int:
    """The TFLite fused activation attribute (0 when absent)."""
    return node.attrs.get("fused_activation_function", 0) or 0


def fuse_operand(node, ctx) -> int:
    """The FuseCode operand of the node's fused activation, for an operation that writes a temporary
    (the context's activation() reports the activations NNAPI cannot fuse)."""
    act = fuse_of(node, ctx)
    if act not in FUSE_CODES:
        ctx.activation(act, node.outputs[0])  # raises Unsupported naming the activation
    return ctx.i32(FUSE_CODES[act])
