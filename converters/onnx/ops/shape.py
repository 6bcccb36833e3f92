"""Data movement: Reshape, Flatten, Squeeze, Unsqueeze (RESHAPE on the ONNX-ordered data), Transpose,
Concat, Split, Slice, Gather, Pad. Axis operands are remapped to the operand layout (ctx.axis)."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from ... import shuffle
from ...registry import Reason, Unsupported
from ..common import MS_DOMAIN_VERSIONS, OPSET_MAX, axes_of, axis_attr, const_ints, ints, known_rank, onnx_op
from .. import layout
from .compose import Chain
from ..quant import data_inputs
from ...pins import pin_hint


def _i32(ctx, values) -> int:
    return ctx.const(np.asarray(values, np.int32))


def _known_rank(ctx, node, i: int) -> None:
    if ctx.tensor(i).shape is None:
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: the rank of {ctx.tensor(i).name!r} is not known "
                                                f"before run time ({pin_hint()})")


def reshape_to_output(node, ctx) -> None:
    """RESHAPE the input's row-major data to the output's inferred shape (one unknown extent allowed)."""
    x, y = node.inputs[0], node.outputs[0]
    if len(node.inputs) > 1 and node.inputs[1] >= 0 and not ctx.is_const(node.inputs[1]):
        # a shape or axes given at run time (an int64 model input): the output's extents depend on its values
        raise Unsupported(Reason.NON_CONSTANT_OPERAND, f"{node.label()}: its {'shape' if node.op == 'Reshape' else 'axes'}"
                                                       f" {ctx.tensor(node.inputs[1]).name!r} is computed at run time")
    _known_rank(ctx, node, y)
    shape = [d if d else -1 for d in ctx.source_shape(y)]
    if node.op == "Reshape" and shape.count(-1) > 1 and ctx.is_const(node.inputs[1]):
        # a shape folded at conversion (Shape -> ... -> Concat): inference saw it as unknown
        target = [int(v) for v in np.asarray(ctx.const_value(node.inputs[1])).ravel()]
        src = ctx.source_shape(x)
        zero_copies = not node.attrs.get("allowzero", 0)
        shape = [src[k] if v == 0 and zero_copies and k < len(src) else v for k, v in enumerate(target)]
        if shape.count(-1) == 1 and all(src) and all(shape[k] for k in range(len(shape)) if shape[k] != -1):
            shape[shape.index(-1)] = int(np.prod(src)) // -int(np.prod(shape))
    if shape.count(-1) > 1:
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: output shape {shape} has several unknown "
                                                f"extents ({pin_hint()})")
    if len(shape) > 4:
        raise Unsupported(Reason.RANK, f"{node.label()}: RESHAPE output {ctx.tensor(y).name!r} has rank {len(shape)}, "
                                       f"NNAPI takes 4 at most")
    src, out = ctx.operand_data(x), ctx.output(y)
    ctx.emit_form(Op.RESHAPE, "default", [out], input=src, shape=_i32(ctx, shape))


@onnx_op("Reshape", "Flatten", "Squeeze", "Unsqueeze", versions=(7, OPSET_MAX))
def reshape(node, ctx):
    """Reshape, Flatten, Squeeze, Unsqueeze: RESHAPE to the inferred output shape; the end of a channel
    shuffle chain (converters/shuffle.py) as CHANNEL_SHUFFLE in its source's layout."""
    sh = ctx.shuffle_at(node)
    if sh is not None:
        shuffle.emit(ctx, sh, ctx.operand(sh.source), ctx.axis(sh.source, sh.axis), ctx.output(node.outputs[0]))
        return
    reshape_to_output(node, ctx)


@onnx_op("Transpose", versions=(7, OPSET_MAX))
def transpose(node, ctx):
    """Transpose as one TRANSPOSE composed with the input's layout (nothing when they cancel)."""
    x, y = node.inputs[0], node.outputs[0]
    rank = len(known_rank(ctx, node, x))
    perm = tuple(ints(node, "perm", list(range(rank - 1, -1, -1))))
    if sorted(perm) != list(range(rank)):
        raise Unsupported(Reason.INVALID, f"{node.label()}: perm {list(perm)} is not a permutation of the "
                                          f"{rank} axes of {ctx.tensor(x).name!r}")
    nn_perm = layout.compose(ctx.perm_of(x), perm, rank)
    if layout.is_identity(nn_perm) and not ctx.is_const(x) and y not in ctx.graph.outputs:
        ctx.share(y, ctx.operand(x), "transpose done by the layout")  # the input is already in that order
        return
    ctx.emit_form(Op.TRANSPOSE, "default", [ctx.output(y)], input=ctx.operand(x), perm=_i32(ctx, nn_perm))


@onnx_op("QLinearConcat", versions=MS_DOMAIN_VERSIONS)
@onnx_op("Concat", versions=(7, OPSET_MAX))
def concat(node, ctx):
    """Concat as CONCATENATION along the remapped axis (inputs brought to the output's layout)."""
    y = node.outputs[0]
    perm = ctx.perm_of(y)
    ins = [ctx.operand_as(i, perm) for i in data_inputs(node) if i >= 0]
    ctx.emit_form(Op.CONCATENATION, "default", [ctx.output(y)], inputs=ins,
                  axis=ctx.i32(ctx.axis(y, int(node.attrs["axis"]))))


@onnx_op("Split", versions=(7, OPSET_MAX))
def split(node, ctx):
    """Split: SPLIT for equal parts, else one SLICE per output (the `split` attribute before opset 13, the
    input after; without it equal parts, the last one smaller for num_outputs (opset 18))."""
    x = node.inputs[0]
    shape = known_rank(ctx, node, x)
    axis = axis_attr(ctx, node, x, 0)
    outs = [o for o in node.outputs if o >= 0]
    sizes = ints(node, "split") if node.version < 13 else const_ints(ctx, node, 1, "split")
    n = len(node.outputs)
    if sizes is None and shape[axis]:
        step = -(-shape[axis] // n)
        sizes = [min(step, shape[axis] - k * step) for k in range(n)]
    if sizes is not None and (len(sizes) != n or any(v < 0 for v in sizes)
                              or shape[axis] and sum(sizes) != shape[axis]):
        raise Unsupported(Reason.INVALID, f"{node.label()}: split {sizes} for {n} outputs of an axis of extent "
                                          f"{shape[axis]}")
    if sizes is not None and 0 in sizes and len(set(sizes)) > 1:  # (a SLICE of extent 0)
        raise Unsupported(Reason.INVALID, f"{node.label()}: split {sizes} has an empty part (NNAPI has no empty "
                                          f"tensors)")
    a = ctx.axis(x, axis)
    src = ctx.operand(x)
    if sizes is None or len(set(sizes)) == 1 and len(outs) == n:
        ctx.emit_form(Op.SPLIT, "default", [ctx.output(o) for o in node.outputs], input=src, axis=ctx.i32(a),
                      num_splits=ctx.i32(n))
        return
    start = 0
    for o, size in zip(node.outputs, sizes):
        if o >= 0:
            begin = [0] * len(shape)
            extent = [-1] * len(shape)
            begin[a], extent[a] = start, size
            ctx.emit_form(Op.SLICE, "default", [ctx.output(o)], input=src, begin=_i32(ctx, begin),
                          size=_i32(ctx, extent))
        start += size


def _slice_bounds(dim: int, start: int, end: int, step: int):
    """ONNX Slice clamping for one axis -> (begin, end, use end_mask)."""
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        return min(max(start, 0), dim), min(max(end, 0), dim), False
    start = min(max(start, -1), dim - 1)
    end = min(max(end, -1), dim - 1)
    return start, end, end < 0  # end -1 means "through index 0": an end mask, not Python's -1


@onnx_op("Slice", versions=(7, OPSET_MAX))
def slice_(node, ctx):
    """Slice (constant starts/ends/axes/steps) as STRIDED_SLICE on the remapped axes."""
    x, y = node.inputs[0], node.outputs[0]
    rank = len(known_rank(ctx, node, x))
    shape = ctx.source_shape(x)
    if node.version < 10:
        starts, ends = ints(node, "starts"), ints(node, "ends")
        axes, steps = ints(node, "axes", list(range(len(starts)))), [1] * len(starts)
    else:
        starts, ends = const_ints(ctx, node, 1, "starts"), const_ints(ctx, node, 2, "ends")
        axes = const_ints(ctx, node, 3, "axes", list(range(len(starts))))
        steps = const_ints(ctx, node, 4, "steps", [1] * len(starts))
    begin, end, stride = [0] * rank, [0] * rank, [1] * rank
    end_mask = 0
    for k in range(rank):  # untouched axes: the whole extent
        end_mask |= 1 << ctx.axis(x, k)
    for s, e, ax, st in zip(starts, ends, axes, steps):
        ax %= rank
        if not shape[ax]:
            raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: axis {ax} has an unknown extent")
        b, en, mask = _slice_bounds(shape[ax], s, e, st)
        a = ctx.axis(x, ax)
        begin[a], end[a], stride[a] = b, en, st
        end_mask = end_mask | (1 << a) if mask else end_mask & ~(1 << a)
    out = ctx.output(y)
    ctx.emit_form(Op.STRIDED_SLICE, "default", [out], input=ctx.operand(x), begin=_i32(ctx, begin),
                  end=_i32(ctx, end), strides=_i32(ctx, stride), begin_mask=ctx.i32(0), end_mask=ctx.i32(end_mask),
                  shrink_axis_mask=ctx.i32(0))


def _non_negative(ctx, i: int) -> bool:
    """Run-time indices an ArgMax, ArgMin or TopK wrote (never negative)."""
    src = next((n for n in ctx.graph.nodes if ctx.resolve(i) in n.outputs), None)
    return src is not None and src.op in ("ArgMax", "ArgMin", "TopK")


@onnx_op("Gather", versions=(7, OPSET_MAX))
def gather(node, ctx):
    """Gather (constant or int32 indices) as GATHER in the ONNX layout; scalar indices reshape after.
    Run-time indices along an axis of known extent n become idx + n where negative (LESS, ADD, SELECT),
    unless an ArgMax/ArgMin/TopK wrote them."""
    x, idx, y = node.inputs[0], node.inputs[1], node.outputs[0]
    shape = ctx.source_shape(x)
    axis = axis_attr(ctx, node, x, 0)
    src = ctx.operand_as(x)
    if ctx.is_const(idx):
        values = np.asarray(ctx.const_value(idx), np.int64)
        if shape[axis]:
            values = np.where(values < 0, values + shape[axis], values)
        scalar = values.ndim == 0
        indices = _i32(ctx, values.reshape(-1) if scalar else values)
    else:
        scalar = ctx.tensor(idx).rank == 0
        indices = ctx.operand(idx)
        if shape[axis] > 0 and not _non_negative(ctx, idx):  # ONNX counts negatives from the end, GATHER refuses them
            chain = Chain(ctx, node, idx)
            negative = chain.binary(Op.LESS, indices, chain.scalar(0), out_code=C.TENSOR_BOOL8)
            indices = chain.select(negative, chain.binary(Op.ADD, indices, chain.scalar(shape[axis])), indices)
    out = ctx.output(y)
    _gather(ctx, y, src, out, shape, axis, indices, scalar)


def _gather(ctx, y: int, src: int, out: int, shape, axis: int, indices: int, scalar: bool) -> None:
    """GATHER into out (a scalar index: into a temporary keeping the axis at 1, then RESHAPE)."""
    if not scalar:
        ctx.emit_form(Op.GATHER, "default", [out], input=src, axis=ctx.i32(axis), indices=indices)
        return
    otype = ctx.model.operands[out].type
    kept = list(shape)
    kept[axis] = 1
    tmp = ctx.temp(OperandType(otype.code, tuple(kept), otype.scale, otype.zero_point), f"{ctx.tensor(y).name}/kept")
    ctx.emit_form(Op.GATHER, "default", [tmp], input=src, axis=ctx.i32(axis), indices=indices)
    ctx.emit_form(Op.RESHAPE, "default", [out], input=tmp, shape=_i32(ctx, otype.dimensions))


@onnx_op("Pad", versions=(7, OPSET_MAX))
def pad(node, ctx):
    """Pad: constant mode as PAD (zero) / PAD_V2 (other value), reflect as MIRROR_PAD."""
    x, y = node.inputs[0], node.outputs[0]
    rank = len(known_rank(ctx, node, x))
    mode = node.attrs.get("mode", "constant")
    if node.version < 11:
        pads, value = ints(node, "pads"), float(node.attrs.get("value", 0.0))
    else:
        pads = const_ints(ctx, node, 1, "pads")
        v = node.inputs[2] if len(node.inputs) > 2 else -1
        value = float(np.asarray(ctx.const_value(v, "constant_value")).reshape(-1)[0]) if v >= 0 else 0.0
    axes = const_ints(ctx, node, 3, "axes", None) if node.version >= 18 else None
    if axes:
        axes_of(ctx, node, x, axes)  # in range; pads follow the given order
    axes = [a % rank for a in axes] if axes else list(range(rank))
    n = len(axes)
    if pads is None or len(pads) != 2 * n:
        raise Unsupported(Reason.INVALID, f"{node.label()}: pads {pads} do not hold a begin and an end for each of "
                                          f"the {n} padded axes")
    full = [[0, 0] for _ in range(rank)]
    for k, a in enumerate(axes):
        full[a] = [pads[k], pads[k + n]]
    if any(p < 0 for row in full for p in row):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: negative pads crop; not mapped")
    perm = ctx.perm_of(x)
    rows = [full[p] for p in (perm or range(rank))]
    paddings, src, out = _i32(ctx, rows), ctx.operand(x), ctx.output(y)
    if mode == "reflect":
        ctx.emit_form(Op.MIRROR_PAD, "default", [out], input=src, paddings=paddings, mode=ctx.i32(0))
    elif mode != "constant":
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: mode {mode!r} has no NNAPI counterpart")
    elif value == 0.0:
        ctx.emit_form(Op.PAD, "default", [out], input=src, paddings=paddings)
    else:
        q = ctx.model.operands[src].type
        pad_value = (ctx.f32(value) if q.scale == 0.0
                     else ctx.i32(int(round(value / q.scale)) + q.zero_point))
        ctx.emit_form(Op.PAD_V2, "default", [out], input=src, paddings=paddings, pad_value=pad_value)
