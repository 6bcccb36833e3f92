"""TFLite slicing, padding and reversing builtins: SLICE, STRIDED_SLICE, PAD,
PADV2, MIRROR_PAD, REVERSE_V2.

Index arguments must be static: they are resolved here into plain per-axis
(start, count, stride) ranges with LiteRT's clamping rules, so the NNAPI
operation never has to interpret masks, negative indices or ellipses. Lower
feature levels get exact lowerings: padding by concatenating constant blocks
(level 1), mirror padding and reversing by constant-index GATHER (level 3) or
a negative-stride STRIDED_SLICE (level 2).
"""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperationCode as Op
from nnapi.ops.shape_space import PAD_ZERO_POINT_LEVEL

from ...registry import Reason, Unsupported, converter
from .common import name, require_arity, reshape, temp
from .movement_util import (check_types, concat, gather_const, int_list, norm_axis, pairs, reject_attr, slice_static,
                            static_shape, static_value, strided_slice, true_rank)


@converter("tflite", "SLICE", versions=(1, 8))
def slice_(node, ctx):
    """SLICE with constant begin and size (-1: to the end)."""
    check_types(ctx, node)
    require_arity(node, 3)
    x = node.inputs[0]
    shape = static_shape(ctx, x)[:max(true_rank(ctx, x), 1)]
    begin = int_list(ctx, node.inputs[1], "SLICE begin")
    size = int_list(ctx, node.inputs[2], "SLICE size")
    size = [n - b if s == -1 else s for b, s, n in zip(begin, size, shape)]
    if len(begin) != len(shape) or any(b < 0 or s < 0 or b + s > n for b, s, n in zip(begin, size, shape)):
        raise Unsupported(Reason.INVALID, f"SLICE begin {begin} size {size} do not fit {name(ctx, x)} {list(shape)}")
    slice_static(ctx, ctx.operand(x), ctx.output(node.outputs[0]), begin, size)


# -- STRIDED_SLICE ---------------------------------------------------------------------------

def _dense_spec(rank: int, begin, end, strides, attrs) -> list:
    """Expand the sparse TF spec (ellipsis, new axes) into one entry per input axis plus
    new-axis markers: [("axis", b, e, s, begin_masked, end_masked, shrink) | ("new",)]."""
    bit = lambda mask, k: bool(attrs.get(mask, 0) >> k & 1)  # noqa: E731
    n = len(begin)
    real = sum(1 for k in range(n) if not bit("ellipsis_mask", k) and not bit("new_axis_mask", k))
    entries, seen_ellipsis = [], False
    for k in range(n):
        if bit("ellipsis_mask", k) and not seen_ellipsis:
            seen_ellipsis = True
            entries += [("axis", 0, 0, 1, True, True, False)] * (rank - real)
        elif bit("new_axis_mask", k):
            entries.append(("new",))
        else:
            entries.append(("axis", begin[k], end[k], strides[k], bit("begin_mask", k), bit("end_mask", k),
                            bit("shrink_axis_mask", k)))
    axes = sum(1 for e in entries if e[0] == "axis")
    entries += [("axis", 0, 0, 1, True, True, False)] * (rank - axes)  # an implicit trailing ellipsis
    if sum(1 for e in entries if e[0] == "axis") != rank:
        raise Unsupported(Reason.INVALID, f"STRIDED_SLICE spec of {n} entries does not fit rank {rank}")
    return entries


def _axis_range(n: int, b: int, e: int, s: int, begin_masked: bool, end_masked: bool, shrink: bool):
    """(start, stop, stride) of one axis, clamped like LiteRT's StartForAxis/StopForAxis."""
    if s == 0:
        raise Unsupported(Reason.INVALID, "STRIDED_SLICE stride 0")
    if shrink:
        start = b + n if b < 0 else b
        if not 0 <= start < n:
            raise Unsupported(Reason.INVALID, f"STRIDED_SLICE shrinks index {b} of an axis of size {n}")
        return start, start + 1, 1
    lo, hi = (0, n) if s > 0 else (-1, n - 1)
    start = (0 if s > 0 else n - 1) if begin_masked else min(max(b + n if b < 0 else b, lo), hi)
    stop = (n if s > 0 else -1) if end_masked else min(max(e + n if e < 0 else e, lo), hi)
    return start, stop, s


@converter("tflite", "STRIDED_SLICE", versions=(1, 8))
def strided_slice_(node, ctx):
    """STRIDED_SLICE with constant begin/end/strides; every mask and the offset flag are resolved
    here; new axes become a RESHAPE of the NNAPI result."""
    check_types(ctx, node)
    require_arity(node, 4)
    x, out = node.inputs[0], node.outputs[0]
    rank = true_rank(ctx, x)
    shape = static_shape(ctx, x)[:rank]
    begin, end, strides = (int_list(ctx, i, f"STRIDED_SLICE {w}") for i, w in
                           zip(node.inputs[1:4], ("begin", "end", "strides")))
    if node.attrs.get("offset"):  # end holds lengths counted from begin
        end = [b + e for b, e in zip(begin, end)]
    starts, stops, steps, shrink = [], [], [], 0
    sliced, final = [], []  # the NNAPI result's shape, and the TFLite one (with the new axes)
    for entry in _dense_spec(rank, begin, end, strides, node.attrs):
        if entry[0] == "new":
            final.append(1)
            continue
        d = len(starts)
        start, stop, step = _axis_range(shape[d], *entry[1:])
        if entry[6]:
            shrink |= 1 << d
        else:
            count = max(0, -(-(stop - start) // step))
            sliced.append(count)
            final.append(count)
        starts.append(start)
        stops.append(stop)
        steps.append(step)
    # a stop of -1 (walking backwards past index 0) cannot be written as an index: use the end mask
    end_mask = sum(1 << k for k, stop in enumerate(stops) if stop < 0)
    src = ctx.operand(x)
    if sliced == final:
        strided_slice(ctx, src, ctx.output(out), starts, stops, steps, end_mask, shrink)
        return
    mid = temp(ctx, out, sliced or [1], "sliced")
    strided_slice(ctx, src, mid, starts, stops, steps, end_mask, shrink)
    reshape(ctx, mid, ctx.output(out), final or [1])


# -- padding ------------------------------------------------------------------------------------

def _paddings(ctx, node, rank: int) -> np.ndarray:
    pads = pairs(ctx, node.inputs[1], f"{node.op} paddings")
    if pads.shape[0] != rank or (pads < 0).any():
        raise Unsupported(Reason.INVALID, f"{node.op} paddings {pads.tolist()} do not fit rank {rank}")
    return pads


def _pad_by_concat(ctx, x_t: int, out_t: int, pads: np.ndarray, stored_value) -> None:
    """Pad by concatenating constant blocks of the stored pad value (feature level 1, exact)."""
    otype, _ = ctx.nnapi_type(x_t)
    shape = list(static_shape(ctx, x_t))
    src = ctx.operand(x_t)
    axes = [a for a in range(len(shape)) if pads[a].any()]
    if not axes:
        reshape(ctx, src, ctx.output(out_t), shape)  # nothing to pad: a copy
        return
    for k, a in enumerate(axes):
        parts = []
        for side, width in (("before", pads[a, 0]), ("after", pads[a, 1])):
            if width:
                block = shape[:a] + [int(width)] + shape[a + 1:]
                parts.append(ctx.const(np.full(block, stored_value, otype.dtype), otype.code,
                                       f"{ctx.tensor(x_t).name}/pad{a}_{side}", otype.scale, otype.zero_point))
        parts.insert(1 if pads[a, 0] else 0, src)
        shape[a] += int(pads[a].sum())
        dst = ctx.output(out_t) if k == len(axes) - 1 else temp(ctx, x_t, shape, f"padded{a}")
        concat(ctx, parts, a, dst)
        src = dst


def _stored_pad_value(ctx, node) -> float:
    """PADV2's constant value as stored in the input's NNAPI type (quantized: same scale and zero point)."""
    x, v = node.inputs[0], node.inputs[2]
    value = static_value(ctx, v, "PADV2 constant_values").reshape(-1)
    if value.size != 1:
        raise Unsupported(Reason.INVALID, f"PADV2 constant_values has {value.size} values, expected 1")
    xq, vq = ctx.tensor(x).quant, ctx.tensor(v).quant
    if xq is not None and (vq is None or (vq.scale, vq.zero_point) != (xq.scale, xq.zero_point)):
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"PADV2 constant_values {name(ctx, v)} is not quantized "
                                                    f"like {name(ctx, x)}")
    stored = value[0].item()
    otype, _ = ctx.nnapi_type(x)
    if otype.code == C.TENSOR_QUANT8_ASYMM and ctx.tensor(x).dtype == np.int8:
        stored += 128  # the context's int8 -> uint8 rewrite
    return stored


@converter("tflite", "PAD", "PADV2", versions=(1, 6))
def pad(node, ctx):
    """PAD (level 2; level 3 for a non-zero zero point) / PADV2 (level 3), else concatenated constant blocks."""
    check_types(ctx, node)
    x, out = node.inputs[0], node.outputs[0]
    pads = _paddings(ctx, node, max(true_rank(ctx, x), 1))
    otype, _ = ctx.nnapi_type(x)
    quant = otype.code in (C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED)
    logical_zero = otype.zero_point if quant else 0
    value = _stored_pad_value(ctx, node) if node.op == "PADV2" and len(node.inputs) > 2 else logical_zero
    pads_op = lambda: ctx.const(pads.astype(np.int32))  # noqa: E731
    # PAD pads with the logical zero; quant8 with a non-zero zero point only from PAD_ZERO_POINT_LEVEL
    pad_level = PAD_ZERO_POINT_LEVEL if otype.code == C.TENSOR_QUANT8_ASYMM and otype.zero_point else ctx.level_of(Op.PAD)
    if value == logical_zero and ctx.feature_level >= pad_level:
        ctx.emit_form(Op.PAD, "default", [ctx.output(out)], input=ctx.operand(x), paddings=pads_op())
    elif ctx.has(Op.PAD_V2):
        scalar = ctx.i32(int(value)) if quant or otype.code == C.TENSOR_INT32 else (
            ctx.scalar(C.FLOAT16, float(value)) if otype.code == C.TENSOR_FLOAT16 else ctx.f32(float(value)))
        ctx.emit_form(Op.PAD_V2, "default", [ctx.output(out)], input=ctx.operand(x), paddings=pads_op(),
                      pad_value=scalar)
    else:
        _pad_by_concat(ctx, x, out, pads, value)


_MIRROR_MODES = {0: "reflect", 1: "symmetric"}  # TFLite MirrorPadMode == NNAPI's mode code


@converter("tflite", "MIRROR_PAD", versions=(1, 3))
def mirror_pad(node, ctx):
    """MIRROR_PAD (level 7); from level 3 one constant-index GATHER per padded axis."""
    check_types(ctx, node)
    mode = node.attrs.get("mode", 0)
    reject_attr(node, "mode", lambda m: m in _MIRROR_MODES, "unknown mirror pad mode")
    x, out = node.inputs[0], node.outputs[0]
    pads = _paddings(ctx, node, max(true_rank(ctx, x), 1))
    if not ctx.has(Op.GATHER):
        level = ctx.level_of(Op.GATHER)
        raise Unsupported(Reason.FEATURE_LEVEL, f"MIRROR_PAD needs NNAPI feature level {level} (as a constant-index "
                                                f"GATHER; MIRROR_PAD itself is level {ctx.level_of(Op.MIRROR_PAD)})",
                          level)
    if ctx.has(Op.MIRROR_PAD):
        ctx.emit_form(Op.MIRROR_PAD, "default", [ctx.output(out)], input=ctx.operand(x),
                      paddings=ctx.const(pads.astype(np.int32)), mode=ctx.i32(mode))
        return
    shape = list(static_shape(ctx, x))
    limit = shape if mode == 1 else [n - 1 for n in shape]
    if any(p > lim for row, lim in zip(pads, limit) for p in row):
        raise Unsupported(Reason.INVALID, f"MIRROR_PAD paddings {pads.tolist()} exceed {name(ctx, x)} {shape}")
    src = ctx.operand(x)
    axes = [a for a in range(len(shape)) if pads[a].any()] or [0]
    for k, a in enumerate(axes):
        index = np.pad(np.arange(shape[a]), tuple(pads[a]), mode=_MIRROR_MODES[mode])
        shape[a] = index.size
        dst = ctx.output(out) if k == len(axes) - 1 else temp(ctx, x, shape, f"mirrored{a}")
        gather_const(ctx, src, a, index, dst)
        src = dst


@converter("tflite", "REVERSE_V2", versions=(1, 4))
def reverse(node, ctx):
    """REVERSE_V2: one REVERSE per axis (level 7), else a STRIDED_SLICE with stride -1 (level 2)."""
    check_types(ctx, node)
    x, out = node.inputs[0], node.outputs[0]
    rank = true_rank(ctx, x)
    axes = sorted({norm_axis(a, rank, "REVERSE_V2 axis") for a in int_list(ctx, node.inputs[1], "REVERSE_V2 axis")})
    src = ctx.operand(x)
    if ctx.has(Op.REVERSE) and axes:
        shape = static_shape(ctx, x)
        for k, a in enumerate(axes):
            dst = ctx.output(out) if k == len(axes) - 1 else temp(ctx, x, shape, f"reversed{a}")
            ctx.emit_form(Op.REVERSE, "default", [dst], input=src, axis=ctx.const(np.asarray([a], np.int32)))
            src = dst
        return
    shape = static_shape(ctx, x)[:max(rank, 1)]
    begin = [n - 1 if a in axes else 0 for a, n in enumerate(shape)]
    stride = [-1 if a in axes else 1 for a in range(len(shape))]
    end = [0 if a in axes else n for a, n in enumerate(shape)]
    strided_slice(ctx, src, ctx.output(out), begin, end, stride, end_mask=sum(1 << a for a in axes),
                  int32_level=ctx.level_of(Op.REVERSE))
