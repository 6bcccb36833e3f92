"""Channel shuffle: reshape -> transpose -> reshape chains that permute the
channels of a tensor the way ShuffleNet's shuffle does (the channels viewed as
[groups, C / groups] and read as [C / groups, groups]). ONNX writes it on NCHW
as Reshape [N, g, C/g, H, W] -> Transpose (0, 2, 1, 3, 4) -> Reshape [N, C, H, W],
TFLite on NHWC as RESHAPE [N, H, W, g, C/g] -> TRANSPOSE (0, 1, 2, 4, 3) ->
RESHAPE; the 5-D middle is beyond NNAPI's rank limit, CHANNEL_SHUFFLE is not.

`plan(graph, fmt, shape_of)` finds the chains (format-neutral: what the three
nodes compute is checked by running them on an index array, so any spelling of
the same permutation is recognised, squeezed or not); the converters of the
chain's last reshape emit `emit(...)` and the first two nodes emit nothing
(ConversionContext.absorbed), when the whole chain converts inside one
partition.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from nnapi import OperationCode as Op, OperandType

from .registry import Reason, Unsupported

RESHAPES = {"onnx": {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}, "tflite": {"RESHAPE", "SQUEEZE", "EXPAND_DIMS"}}
TRANSPOSE = {"onnx": "Transpose", "tflite": "TRANSPOSE"}
MAX_CHECKED = 1 << 23   # elements of the index array that checks a chain


@dataclass(frozen=True)
class Shuffle:
    head: int        # node: reshape of the source tensor
    middle: int      # node: transpose
    tail: int        # node: reshape back to the source shape (emits the shuffle)
    source: int      # tensor shuffled
    axis: int        # its channel axis (source order)
    groups: int


def transpose_perm(graph, node, fmt: str) -> Optional[tuple]:
    """The constant permutation of a transpose node (ONNX attribute, TFLite input 1), or None."""
    if fmt == "onnx":
        rank = graph.tensors[node.inputs[0]].rank
        perm = node.attrs.get("perm")
        return tuple(int(p) for p in perm) if perm is not None else tuple(range((rank or 0) - 1, -1, -1))
    if len(node.inputs) < 2 or node.inputs[1] < 0 or not graph.tensors[node.inputs[1]].is_constant:
        return None
    return tuple(int(p) for p in np.asarray(graph.tensors[node.inputs[1]].data).ravel())


def _shuffle_of(source_shape: tuple, middle_shape: tuple, perm: tuple) -> Optional[tuple]:
    """(axis, groups) when reshape(middle) -> transpose(perm) -> reshape(source) is a channel shuffle."""
    size = int(np.prod(source_shape))
    if size > MAX_CHECKED or int(np.prod(middle_shape)) != size or sorted(perm) != list(range(len(middle_shape))):
        return None
    index = np.arange(size).reshape(source_shape)
    moved = index.reshape(middle_shape).transpose(perm).reshape(source_shape)
    if np.array_equal(moved, index):
        return None
    for axis, channels in enumerate(source_shape):
        for groups in sorted(set(middle_shape)):
            if 1 < groups < channels and channels % groups == 0:
                view = source_shape[:axis] + (groups, channels // groups) + source_shape[axis + 1:]
                if np.array_equal(moved, index.reshape(view).swapaxes(axis, axis + 1).reshape(source_shape)):
                    return axis, groups
    return None


def plan(graph, fmt: str, shape_of: Callable) -> dict:
    """tail node -> Shuffle, for every chain whose intermediates only feed the chain."""
    if fmt not in RESHAPES:
        return {}
    producer, users = {}, {}
    for node in graph.nodes:
        for o in node.outputs:
            producer[o] = node
        for i in node.inputs:
            users.setdefault(i, []).append(node)

    def only_use(t, op_ok) -> Optional[object]:
        us = users.get(t, [])
        if len(us) != 1 or t in graph.outputs or not op_ok(us[0]) or us[0].inputs[0] != t:
            return None
        return us[0]

    found = {}
    for head in graph.nodes:
        if head.op not in RESHAPES[fmt] or head.folded or not head.inputs or head.inputs[0] < 0 or not head.outputs:
            continue
        mid = only_use(head.outputs[0], lambda n: n.op == TRANSPOSE[fmt] and not n.folded)
        tail = mid and only_use(mid.outputs[0], lambda n: n.op in RESHAPES[fmt] and not n.folded)
        if not tail:
            continue
        x, y1, y3 = head.inputs[0], head.outputs[0], tail.outputs[0]
        shapes = [tuple(shape_of(t)) for t in (x, y1, y3)]
        perm = transpose_perm(graph, mid, fmt)
        if perm is None or any(not s or not all(s) for s in shapes) or shapes[0] != shapes[2] or len(shapes[0]) > 4:
            continue
        hit = _shuffle_of(shapes[0], shapes[1], perm)
        if hit:
            found[tail.index] = Shuffle(head.index, mid.index, tail.index, x, hit[0], hit[1])
    return found


def emit(ctx, shuffle: Shuffle, src: int, axis: int, out: int) -> None:
    """The shuffle of operand src along its axis `axis` into operand out: CHANNEL_SHUFFLE (level 3), else
    RESHAPE -> TRANSPOSE -> RESHAPE on a 4-D view [before, groups, C / groups, after] (level 2)."""
    if ctx.has(Op.CHANNEL_SHUFFLE):
        ctx.emit_form(Op.CHANNEL_SHUFFLE, "default", [out], input=src, num_groups=ctx.i32(shuffle.groups),
                      axis=ctx.i32(axis))
        return
    ctx.require(Op.TRANSPOSE, "a channel shuffle (TRANSPOSE)")
    t = ctx.model.operands[src].type
    dims = tuple(t.dimensions)
    if not all(dims):
        raise Unsupported(Reason.DYNAMIC_SHAPE, "a channel shuffle without CHANNEL_SHUFFLE needs static dimensions")
    g = shuffle.groups
    view = (int(np.prod(dims[:axis])), g, dims[axis] // g, int(np.prod(dims[axis + 1:])))
    shaped = [ctx.temp(OperandType(t.code, d, t.scale, t.zero_point), f"{ctx.model.operands[src].name}/shuffle{k}")
              for k, d in enumerate((view, (view[0], view[2], view[1], view[3])))]
    ctx.emit_form(Op.RESHAPE, "default", [shaped[0]], input=src, shape=ctx.const(np.asarray(view, np.int32)))
    ctx.emit_form(Op.TRANSPOSE, "default", [shaped[1]], input=shaped[0],
                  perm=ctx.const(np.asarray((0, 2, 1, 3), np.int32)))
    ctx.emit_form(Op.RESHAPE, "default", [out], input=shaped[1], shape=ctx.const(np.asarray(dims, np.int32)))
