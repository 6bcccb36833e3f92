"""Ops whose outputs are known before run time when their inputs are: Shape, Size, ConstantOfShape,
Range (and Expand / Tile of constants). They are folded before conversion (converters/folding.py): the
outputs become constants and the nodes emit nothing. A graph output cannot be a constant operand in
NNAPI, so there the converter emits one copy (int64 values as int32, noted in io_rewrites). Expand and
Tile of run-time tensors are TILE (feature level 3). (Constant nodes are constants already, reader.py,
unless they write a graph output.)

Every other node whose inputs are all constants is the conversion-time evaluator's (converters/folding.py):
onnx's reference implementation (onnx.reference) evaluates it on a one-node model, so the shape computations
exporters write (Shape -> Gather -> Cast -> Div -> Unsqueeze -> Concat -> Reshape over int64) and the
weights computed from constants (weight normalisation g * v / ||v||, transposes, reshapes) become
constants, with ONNX's semantics. onnx.reference is chosen over onnxruntime because it is always installed
with onnx (onnxruntime is optional) and evaluates one node without building a session."""
from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

from nnapi import OperandCode as C
from nnapi import OperandType
from nnapi import OperationCode as Op

from ...folding import FOLDERS, evaluator, folder
from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, const_ints, onnx_op
from ..shapes import NOT_FOLDED, evaluate
from .compose import broadcast_to
from ...pins import pin_hint

INT64_NOTE = "int64 -> int32: NNAPI has no int64 tensors"


def _static_shape(ctx, node, i: int) -> tuple:
    shape = ctx.tensor(i).shape
    if shape is None or any(d < 0 for d in shape):
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: the shape of {ctx.tensor(i).name!r} is not "
                                                f"known before run time ({pin_hint()})")
    return tuple(shape)


def _scalar(ctx, node, k: int, what: str):
    value = np.asarray(ctx.const_value(node.inputs[k], f"{node.op} {what}")).reshape(-1)
    if value.size != 1:
        raise Unsupported(Reason.INVALID, f"{node.label()}: {what} has {value.size} values, expected 1")
    return value[0]


@folder("onnx", "Shape")
def _shape(node, ctx):
    shape = _static_shape(ctx, node, node.inputs[0])
    start, end = node.attrs.get("start", 0), node.attrs.get("end")
    return [np.asarray(shape[start:end], np.int64)]


@folder("onnx", "Size")
def _size(node, ctx):
    return [np.asarray(int(np.prod(_static_shape(ctx, node, node.inputs[0]))), np.int64)]


@folder("onnx", "ConstantOfShape")
def _constant_of_shape(node, ctx):
    dims = [int(d) for d in np.asarray(ctx.const_value(node.inputs[0], "ConstantOfShape shape")).reshape(-1)]
    value = node.attrs.get("value")
    value = np.zeros(1, np.float32) if value is None else np.asarray(value)
    return [np.full(dims, value.reshape(-1)[0], value.dtype)]


@folder("onnx", "Range")
def _range(node, ctx):
    start, limit, delta = (_scalar(ctx, node, k, w) for k, w in enumerate(("start", "limit", "delta")))
    if delta == 0:
        raise Unsupported(Reason.INVALID, f"{node.label()}: delta is 0")
    count = max(int(np.ceil((float(limit) - float(start)) / float(delta))), 0)
    dtype = np.asarray(start).dtype
    return [(start + delta * np.arange(count, dtype=dtype)).astype(dtype)]


@folder("onnx", "Expand")
def _expand(node, ctx):
    x = ctx.const_value(node.inputs[0], "Expand input")
    shape = const_ints(ctx, node, 1, "shape")
    return [np.asarray(x * np.ones(shape, x.dtype))]  # ONNX Expand broadcasts both ways


@folder("onnx", "Tile")
def _tile(node, ctx):
    return [np.tile(ctx.const_value(node.inputs[0], "Tile input"), const_ints(ctx, node, 1, "repeats"))]


@evaluator("onnx", never=NOT_FOLDED)
def _reference(source, node, ctx) -> list:
    """Outputs of a node whose inputs are all constants, from onnx.reference (one-node model)."""
    ins = [i for i in node.inputs if i >= 0]
    if not all(ctx.is_const(i) and ctx.tensor(i).quant is None for i in ins):
        raise Unsupported(Reason.NON_CONSTANT_OPERAND, f"{node.label()}: an input is computed at run time")
    feeds = {f"i{k}": np.asarray(ctx.tensor(i).data) for k, i in enumerate(node.inputs) if i >= 0}
    attrs = {k: numpy_helper.from_array(np.asarray(v)) if isinstance(v, np.ndarray) else v
             for k, v in node.attrs.items()}
    names = [f"i{k}" if i >= 0 else "" for k, i in enumerate(node.inputs)]
    outs = [f"o{k}" if o >= 0 else "" for k, o in enumerate(node.outputs)]
    try:
        values = evaluate(helper.make_node(node.op, names, outs, domain=node.domain or None, **attrs), feeds,
                          node.version)
    except Exception as e:  # noqa: BLE001 (the reference raises many types for nodes it rejects)
        raise Unsupported(Reason.INVALID, f"{node.label()}: cannot be evaluated ({type(e).__name__})") from None
    values = iter(values)
    return [next(values) if o >= 0 else None for o in node.outputs]


def constant_output(ctx, node, k: int, value: np.ndarray) -> None:
    """Graph output k of node holds a value known at conversion: one copying operation writes it."""
    t = node.outputs[k]
    value = np.asarray(value)
    dims = value.shape or (1,)
    if not value.size:
        raise Unsupported(Reason.INVALID, f"{node.label()}: an empty graph output (NNAPI has no empty tensors)")
    if value.dtype == np.int64 or value.dtype == np.int32:
        if value.size and np.abs(value).max() >= 2 ** 31:
            raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: int64 values do not fit int32")
        note = INT64_NOTE if value.dtype == np.int64 else None
        out = ctx.bind_output(t, OperandType(C.TENSOR_INT32, dims), note)
        zero = ctx.const(np.zeros(1, np.int32))
        ctx.emit_form(Op.ADD, "default", [out], input1=ctx.const(value.astype(np.int32).reshape(dims)), input2=zero,
                      fuse=ctx.i32(0))  # int32 ADD: feature level 4; RESHAPE takes int32 only from 6
        return
    if value.dtype not in (np.float32, np.float16):
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: a {value.dtype.name} graph output")
    ctx.emit_form(Op.RESHAPE, "default", [ctx.output(t)], input=ctx.const(value.reshape(dims)),
                  shape=ctx.const(np.asarray(dims, np.int32)))


@onnx_op("Shape", "Size", "ConstantOfShape", "Range", versions=(7, OPSET_MAX))
def static(node, ctx):
    """Folded into constants (no NNAPI operation); as a graph output, one copy of the value."""
    if node.outputs[0] not in ctx.graph.outputs:  # not folded: an input is known only at run time
        FOLDERS[("onnx", node.op)](node, ctx)  # raises the reason
        raise Unsupported(Reason.NON_CONSTANT_OPERAND, f"{node.label()}: an input is only known at run time")
    constant_output(ctx, node, 0, FOLDERS[("onnx", node.op)](node, ctx)[0])


@onnx_op("Constant", versions=(1, OPSET_MAX))
def constant(node, ctx):
    """A Constant that is a graph output (reader.py makes every other one a constant tensor): one copy."""
    constant_output(ctx, node, 0, ctx.const_value(node.outputs[0], "Constant value"))


@onnx_op("Expand", versions=(8, OPSET_MAX))
def expand(node, ctx):
    """Expand (constant shape) as TILE of the input reshaped to the output's rank; constants fold."""
    x, y = node.inputs[0], node.outputs[0]
    const_ints(ctx, node, 1, "shape")
    if ctx.is_const(x):
        constant_output(ctx, node, 0, FOLDERS[("onnx", "Expand")](node, ctx)[0])
        return
    shape = tuple(ctx.source_shape(y))
    if not all(shape):
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: the output shape is unknown")
    if tuple(ctx.source_shape(x)) == shape:
        ctx.forward(x, y)
        return
    broadcast_to(ctx, node, x, shape, out=ctx.output(y))


@onnx_op("Tile", versions=(7, OPSET_MAX))
def tile(node, ctx):
    """Tile (constant repeats) as TILE in the ONNX layout; constants fold."""
    x, y = node.inputs[0], node.outputs[0]
    repeats = const_ints(ctx, node, 1, "repeats")
    if ctx.is_const(x):
        constant_output(ctx, node, 0, FOLDERS[("onnx", "Tile")](node, ctx)[0])
        return
    ctx.emit_form(Op.TILE, "default", [ctx.output(y)], input=ctx.operand_as(x),
                  multiples=ctx.const(np.asarray(repeats, np.int32)))
