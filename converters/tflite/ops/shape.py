"""TFLite shape and data-movement builtins: RESHAPE, SQUEEZE, EXPAND_DIMS,
TRANSPOSE, CONCATENATION, PACK, UNPACK, SPLIT, SPLIT_V, TILE, BROADCAST_TO,
DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND.

Where the NNAPI operation is newer than the target feature level, the node is
lowered to older operations that only move values (RESHAPE, CONCATENATION,
STRIDED_SLICE), so the lowering is exact. Versions accepted are the ones the
installed LiteRT registers; newer versions add types (int16, int4) or ranks
that the type checks and the NNAPI specs reject with their own reason.
"""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperationCode as Op

from ... import shuffle
from ...registry import Reason, Unsupported, converter
from .common import name, otype, reshape, temp
from .movement_util import (check_types, concat, int_list, norm_axis, pairs, slice_static, static_shape, static_value,
                            strided_slice, tile, true_rank)

def _target_shape(ctx, node) -> list[int]:
    """RESHAPE's new shape: the shape input, else the new_shape option, else the output's static shape."""
    out = node.outputs[0]
    shape_input = node.inputs[1] if len(node.inputs) > 1 else -1
    try:
        if shape_input >= 0:
            return int_list(ctx, shape_input, "RESHAPE shape")
        if node.attrs.get("new_shape"):
            return [int(d) for d in node.attrs["new_shape"]]
    except Unsupported as u:
        if u.reason is not Reason.NON_CONSTANT_OPERAND:
            raise
        try:
            return list(static_shape(ctx, out))
        except Unsupported:
            raise u from None
    return list(static_shape(ctx, out))


def channel_shuffle(node, ctx) -> bool:
    """Emit the channel shuffle that this reshape ends (converters/shuffle.py), if it ends one."""
    sh = ctx.shuffle_at(node)
    if sh is None:
        return False
    shuffle.emit(ctx, sh, ctx.operand(sh.source), sh.axis, ctx.output(node.outputs[0]))
    return True


@converter("tflite", "RESHAPE", versions=(1, 1))
def reshape_(node, ctx):
    """RESHAPE to a constant or statically known shape (a channel shuffle's end: CHANNEL_SHUFFLE)."""
    check_types(ctx, node)
    if channel_shuffle(node, ctx):
        return
    shape = _target_shape(ctx, node) or [1]  # a scalar result is held as [1]
    reshape(ctx, ctx.operand(node.inputs[0]), ctx.output(node.outputs[0]), shape)


@converter("tflite", "SQUEEZE", versions=(1, 2))
def squeeze(node, ctx):
    """SQUEEZE (level 2); RESHAPE to the static result below it."""
    check_types(ctx, node)
    if channel_shuffle(node, ctx):
        return
    x, out = node.inputs[0], node.outputs[0]
    rank = true_rank(ctx, x)
    axes = {norm_axis(a, rank, "SQUEEZE squeeze_dims") for a in node.attrs.get("squeeze_dims") or []}
    # named axes need only their own extents known; "every unit axis" needs the whole shape
    shape = ctx.shape(x) if axes else static_shape(ctx, x)
    axes = axes or {d for d, n in enumerate(shape) if n == 1}
    unknown = sorted(a for a in axes if shape[a] == 0)
    if unknown:
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"SQUEEZE of {name(ctx, x)}: dimensions {unknown} are dynamic, so "
                                                f"whether they are 1 is known only at run time")
    if any(shape[a] != 1 for a in axes):
        raise Unsupported(Reason.INVALID, f"SQUEEZE of {name(ctx, x)}: dimensions {sorted(axes)} are not all 1")
    src = ctx.operand(x)
    # SQUEEZE has no int32 or bool form; RESHAPE to the static result does the same (see reshape)
    if ctx.has(Op.SQUEEZE) and otype(ctx, src).code not in (C.TENSOR_INT32, C.TENSOR_BOOL8):
        ctx.emit_form(Op.SQUEEZE, "default", [ctx.output(out)], input=src,
                      axes=ctx.const(np.asarray(sorted(axes), np.int32)))
    else:
        shape = static_shape(ctx, x)
        reshape(ctx, src, ctx.output(out), [n for d, n in enumerate(shape) if d not in axes] or [1])


@converter("tflite", "EXPAND_DIMS", versions=(1, 1))
def expand_dims(node, ctx):
    """EXPAND_DIMS (level 3); RESHAPE to the static result below it."""
    check_types(ctx, node)
    if channel_shuffle(node, ctx):
        return
    x, out = node.inputs[0], node.outputs[0]
    axis = int_list(ctx, node.inputs[1], "EXPAND_DIMS axis")
    if len(axis) != 1:
        raise Unsupported(Reason.INVALID, f"EXPAND_DIMS axis has {len(axis)} values, expected 1")
    rank = true_rank(ctx, x)
    a = norm_axis(axis[0], rank + 1, "EXPAND_DIMS axis")
    if ctx.has(Op.EXPAND_DIMS) and ctx.tensor(x).dtype != np.bool_:  # no bool form: RESHAPE (see reshape)
        ctx.emit_form(Op.EXPAND_DIMS, "default", [ctx.output(out)], input=ctx.operand(x), axis=ctx.i32(a))
        return
    shape = list(static_shape(ctx, x))[:rank]
    reshape(ctx, ctx.operand(x), ctx.output(out), shape[:a] + [1] + shape[a:], int32_level=ctx.level_of(Op.EXPAND_DIMS))


@converter("tflite", "TRANSPOSE", versions=(1, 9))
def transpose(node, ctx):
    """TRANSPOSE with a constant permutation."""
    check_types(ctx, node)
    perm = int_list(ctx, node.inputs[1], "TRANSPOSE perm")
    rank = true_rank(ctx, node.inputs[0])
    if sorted(norm_axis(p, rank, "TRANSPOSE perm") for p in perm) != list(range(rank)):
        raise Unsupported(Reason.INVALID, f"TRANSPOSE perm {perm} is not a permutation of 0..{rank - 1}")
    ctx.emit_form(Op.TRANSPOSE, "default", [ctx.output(node.outputs[0])], input=ctx.operand(node.inputs[0]),
                  perm=ctx.const(np.asarray([p % rank for p in perm], np.int32)))


# -- joining ---------------------------------------------------------------------------

@converter("tflite", "CONCATENATION", versions=(1, 7))
def concatenation(node, ctx):
    """CONCATENATION (quant8 inputs with their own scales are requantized from level 3)."""
    check_types(ctx, node)
    act = node.attrs.get("fused_activation_function", 0) or 0
    if act:
        # the schema applies it, LiteRT's kernel refuses the node: no reference result to reproduce
        raise Unsupported(Reason.FUSED_ACTIVATION, f"CONCATENATION into {name(ctx, node.outputs[0])} with fused "
                                                   f"activation {act}: LiteRT rejects it (activation must be NONE)")
    rank = true_rank(ctx, node.outputs[0])
    axis = norm_axis(node.attrs.get("axis", 0), max(rank, 1), "CONCATENATION axis")
    concat(ctx, [ctx.operand(i) for i in node.inputs], axis, ctx.output(node.outputs[0]))


@converter("tflite", "PACK", versions=(1, 5))
def pack(node, ctx):
    """PACK (level 6); below it each input is reshaped to hold the new axis and concatenated."""
    check_types(ctx, node)
    first, out = node.inputs[0], node.outputs[0]
    rank = true_rank(ctx, first)
    axis = norm_axis(node.attrs.get("axis", 0), rank + 1, "PACK axis")
    if rank == 0:  # scalars are held as [1]: stacking them is a plain concatenation
        concat(ctx, [ctx.operand(i) for i in node.inputs], 0, ctx.output(out))
        return
    if ctx.has(Op.PACK):
        ctx.emit_form(Op.PACK, "default", [ctx.output(out)], axis=ctx.i32(axis),
                      inputs=[ctx.operand(i) for i in node.inputs])
        return
    shape = list(static_shape(ctx, first))
    expanded = shape[:axis] + [1] + shape[axis:]
    parts = []
    for k, i in enumerate(node.inputs):
        part = temp(ctx, i, expanded, f"pack{k}")
        reshape(ctx, ctx.operand(i), part, expanded)
        parts.append(part)
    concat(ctx, parts, axis, ctx.output(out))


# -- splitting ---------------------------------------------------------------------------

def _split(ctx, x: int, axis: int, sizes: list, outputs: list) -> None:
    """Split tensor x along axis into parts of the given sizes: SPLIT for equal parts (level 3),
    else one slice per part (SLICE at level 3, STRIDED_SLICE at level 2)."""
    shape = list(static_shape(ctx, x))
    if sum(sizes) != shape[axis] or any(s < 0 for s in sizes):
        raise Unsupported(Reason.INVALID, f"split sizes {sizes} do not add up to dimension {axis} "
                                          f"({shape[axis]}) of {name(ctx, x)}")
    if not ctx.has(Op.STRIDED_SLICE):
        level = ctx.level_of(Op.STRIDED_SLICE)
        raise Unsupported(Reason.FEATURE_LEVEL, f"splitting a tensor needs NNAPI feature level {level} (STRIDED_SLICE)",
                          level)
    src = ctx.operand(x)
    outs = [ctx.output(o) for o in outputs]
    if ctx.has(Op.SPLIT) and len(set(sizes)) == 1:
        ctx.emit_form(Op.SPLIT, "default", outs, input=src, axis=ctx.i32(axis), num_splits=ctx.i32(len(sizes)))
        return
    start = 0
    for size, out in zip(sizes, outs):
        begin = [0] * len(shape)
        begin[axis] = start
        slice_static(ctx, src, out, begin, shape[:axis] + [size] + shape[axis + 1:])
        start += size


@converter("tflite", "SPLIT", versions=(1, 5))
def split(node, ctx):
    """SPLIT (axis is input 0) into num_splits equal parts."""
    check_types(ctx, node)
    axis_t, x = node.inputs
    axis = norm_axis(int_list(ctx, axis_t, "SPLIT axis")[0], true_rank(ctx, x), "SPLIT axis")
    n = len(node.outputs)
    dim = static_shape(ctx, x)[axis]
    if dim % n:
        raise Unsupported(Reason.INVALID, f"SPLIT of dimension {axis} ({dim}) into {n} equal parts")
    _split(ctx, x, axis, [dim // n] * n, node.outputs)


@converter("tflite", "SPLIT_V", versions=(1, 3))
def split_v(node, ctx):
    """SPLIT_V with constant size_splits (one may be -1) and axis."""
    check_types(ctx, node)
    x, sizes_t, axis_t = node.inputs
    axis = norm_axis(int_list(ctx, axis_t, "SPLIT_V axis")[0], true_rank(ctx, x), "SPLIT_V axis")
    sizes = int_list(ctx, sizes_t, "SPLIT_V size_splits")
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = static_shape(ctx, x)[axis] - (sum(sizes) + 1)
    _split(ctx, x, axis, sizes, node.outputs)


@converter("tflite", "UNPACK", versions=(1, 6))
def unpack(node, ctx):
    """UNPACK: SPLIT + RESHAPE (level 3), or one STRIDED_SLICE with shrink_axis_mask per output (level 2)."""
    check_types(ctx, node)
    x = node.inputs[0]
    shape = list(static_shape(ctx, x))
    axis = norm_axis(node.attrs.get("axis", 0), true_rank(ctx, x), "UNPACK axis")
    if len(node.outputs) != shape[axis]:
        raise Unsupported(Reason.INVALID, f"UNPACK of dimension {axis} ({shape[axis]}) into "
                                          f"{len(node.outputs)} outputs")
    result = shape[:axis] + shape[axis + 1:] or [1]
    if ctx.has(Op.SPLIT):
        part = shape[:axis] + [1] + shape[axis + 1:]
        parts = [temp(ctx, o, part, "unpacked") for o in node.outputs]
        ctx.emit_form(Op.SPLIT, "default", parts, input=ctx.operand(x), axis=ctx.i32(axis),
                      num_splits=ctx.i32(len(parts)))
        for p, o in zip(parts, node.outputs):
            reshape(ctx, p, ctx.output(o), result)
        return
    if not ctx.has(Op.STRIDED_SLICE):
        level = ctx.level_of(Op.STRIDED_SLICE)
        raise Unsupported(Reason.FEATURE_LEVEL, f"UNPACK needs NNAPI feature level {level} (STRIDED_SLICE)", level)
    src = ctx.operand(x)
    for k, o in enumerate(node.outputs):
        begin = [0] * len(shape)
        begin[axis] = k
        end = list(shape)
        end[axis] = k + 1
        # int32: the SPLIT form takes over once RESHAPE (of its parts) takes int32
        strided_slice(ctx, src, ctx.output(o), begin, end, [1] * len(shape), shrink=1 << axis,
                      int32_level=ctx.level_of(Op.RESHAPE, T=C.TENSOR_INT32))


# -- repeating ------------------------------------------------------------------------------

@converter("tflite", "TILE", versions=(1, 3))
def tile_(node, ctx):
    """TILE with constant multiples (level 3; concatenated copies below it)."""
    check_types(ctx, node)
    x = node.inputs[0]
    multiples = int_list(ctx, node.inputs[1], "TILE multiples")
    tile(ctx, x, ctx.operand(x), static_shape(ctx, x), multiples, ctx.output(node.outputs[0]))


@converter("tflite", "BROADCAST_TO", versions=(2, 4))
def broadcast_to(node, ctx):
    """BROADCAST_TO a constant shape: RESHAPE to the target rank, then TILE (exact copies)."""
    check_types(ctx, node)
    x = node.inputs[0]
    target = int_list(ctx, node.inputs[1], "BROADCAST_TO shape")
    rank = true_rank(ctx, x)
    shape = list(static_shape(ctx, x))[:rank]
    if rank > len(target):
        raise Unsupported(Reason.INVALID, f"BROADCAST_TO shape {target} has a lower rank than {name(ctx, x)}")
    shape = [1] * (len(target) - rank) + shape
    if any(s not in (1, t) for s, t in zip(shape, target)):
        raise Unsupported(Reason.INVALID, f"{name(ctx, x)} of shape {shape} does not broadcast to {target}")
    src = ctx.operand(x)
    if otype(ctx, src).code == C.TENSOR_BOOL8:  # TILE takes no bool: AND with all-true broadcasts it exactly
        ctx.emit_form(Op.LOGICAL_AND, "default", [ctx.output(node.outputs[0])], input1=src,
                      input2=ctx.const(np.ones(target, bool)))
        return
    if len(shape) != rank and any(s != t for s, t in zip(shape, target)):
        aligned = temp(ctx, x, shape, "aligned")
        reshape(ctx, src, aligned, shape)
        src = aligned
    tile(ctx, x, src, shape, [t // s for s, t in zip(shape, target)], ctx.output(node.outputs[0]))


# -- space <-> depth / batch ---------------------------------------------------------------

@converter("tflite", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", versions=(1, 2))
def depth_space(node, ctx):
    """DEPTH_TO_SPACE / SPACE_TO_DEPTH (NHWC, the same block ordering in both)."""
    check_types(ctx, node)
    code = Op.DEPTH_TO_SPACE if node.op == "DEPTH_TO_SPACE" else Op.SPACE_TO_DEPTH
    ctx.emit_form(code, "default", [ctx.output(node.outputs[0])], input=ctx.operand(node.inputs[0]),
                  block_size=ctx.i32(node.attrs.get("block_size", 0)))


def _block_inputs(ctx, node) -> tuple:
    """(input, block shape, third input) of BATCH_TO_SPACE_ND / SPACE_TO_BATCH_ND, whose input must be 4-D."""
    check_types(ctx, node)
    if true_rank(ctx, node.inputs[0]) != 4:
        raise Unsupported(Reason.RANK, f"{node.op} of {name(ctx, node.inputs[0])}: NNAPI takes 4-D inputs only")
    x, block_t, third = node.inputs
    return x, int_list(ctx, block_t, f"{node.op} block_shape"), third


@converter("tflite", "BATCH_TO_SPACE_ND", versions=(1, 4))
def batch_to_space(node, ctx):
    """BATCH_TO_SPACE_ND; non-zero crops become a slice of the NNAPI result."""
    x, block, crops_t = _block_inputs(ctx, node)
    crops = pairs(ctx, crops_t, "BATCH_TO_SPACE_ND crops").astype(int)
    n, h, w, c = static_shape(ctx, x)
    if len(block) != 2 or crops.shape[0] != 2:
        raise Unsupported(Reason.INVALID, f"BATCH_TO_SPACE_ND needs 2 block and crop entries, got {block}")
    full = [n // (block[0] * block[1]), h * block[0], w * block[1], c]
    src = ctx.operand(x)
    block_op = ctx.const(np.asarray(block, np.int32))
    if not crops.any():
        ctx.emit_form(Op.BATCH_TO_SPACE_ND, "default", [ctx.output(node.outputs[0])], input=src,
                      block_shape=block_op)
        return
    uncropped = temp(ctx, node.outputs[0], full, "uncropped")
    ctx.emit_form(Op.BATCH_TO_SPACE_ND, "default", [uncropped], input=src, block_shape=block_op)
    size = [full[0], full[1] - crops[0].sum(), full[2] - crops[1].sum(), c]
    slice_static(ctx, uncropped, ctx.output(node.outputs[0]), [0, int(crops[0, 0]), int(crops[1, 0]), 0],
                 [int(s) for s in size])


@converter("tflite", "SPACE_TO_BATCH_ND", versions=(1, 4))
def space_to_batch(node, ctx):
    """SPACE_TO_BATCH_ND (pads with the logical zero, like LiteRT)."""
    x, block, pads_t = _block_inputs(ctx, node)
    pads = pairs(ctx, pads_t, "SPACE_TO_BATCH_ND paddings").astype(np.int32)
    ctx.emit_form(Op.SPACE_TO_BATCH_ND, "default", [ctx.output(node.outputs[0])], input=ctx.operand(x),
                  block_shape=ctx.const(np.asarray(block, np.int32)), paddings=ctx.const(pads))
