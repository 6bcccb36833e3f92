"""Activations: Relu, Clip, Sigmoid, Tanh, Elu, LeakyRelu, QLinearSigmoid (com.microsoft), Softmax,
LogSoftmax.
A Relu/Clip the fusion plan folds into its producer emits nothing (OnnxContext.convert_node)."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import MS_DOMAIN_VERSIONS, OPSET_MAX, axis_attr, known_rank, onnx_op
from ..fusion_context import ACTIVATION_OPS
from ..fusion import clip_bounds, fuse_code
from ..quant import data_inputs


UNARY = {"Sigmoid": Op.LOGISTIC, "Tanh": Op.TANH, "QLinearSigmoid": Op.LOGISTIC}


def unary(ctx, code, x: int, y: int) -> None:
    ctx.emit_form(code, "default", [ctx.output(y)], input=ctx.operand(x))


@onnx_op("Relu", "Clip", versions=(7, OPSET_MAX))
def relu_clip(node, ctx):
    """Relu, Clip(0, 6), Clip(-1, 1), Clip(0, inf) as RELU/RELU6/RELU1; other constant bounds as
    MAXIMUM/MINIMUM (float)."""
    code = fuse_code(node, ctx.graph)
    if code is not None:
        unary(ctx, ACTIVATION_OPS[code], node.inputs[0], node.outputs[0])
        return
    bounds = clip_bounds(node, ctx.graph)
    if bounds is None:
        raise Unsupported(Reason.NON_CONSTANT_OPERAND, f"{node.label()}: Clip bounds must be constants")
    if ctx.tensor(node.inputs[0]).quant is not None:
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"{node.label()}: quantized Clip{bounds} is not a RELU variant")
    acc, out = ctx.operand(node.inputs[0]), ctx.output(node.outputs[0])
    steps = [(Op.MAXIMUM, bounds[0]), (Op.MINIMUM, bounds[1])]
    steps = [(c, v) for c, v in steps if np.isfinite(v)]
    if not steps:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: Clip without bounds is an identity")
    for k, (c, v) in enumerate(steps):
        dst = out if k == len(steps) - 1 else ctx.temp_like(node.outputs[0], "lower_clipped")
        ctx.emit_form(c, "default", [dst], input1=acc, input2=ctx.const(np.float32([v])))
        acc = dst


@onnx_op("Sigmoid", "Tanh", versions=(7, OPSET_MAX))
def sigmoid_tanh(node, ctx):
    """Sigmoid as LOGISTIC, Tanh as TANH (quantized outputs need NNAPI's fixed scales)."""
    unary(ctx, UNARY[node.op], node.inputs[0], node.outputs[0])


@onnx_op("QLinearSigmoid", versions=MS_DOMAIN_VERSIONS)
def qlinear_sigmoid(node, ctx):
    """com.microsoft QLinearSigmoid as quantized LOGISTIC (output scale 1/256)."""
    unary(ctx, Op.LOGISTIC, data_inputs(node)[0], node.outputs[0])


@onnx_op("Elu", versions=(7, OPSET_MAX))
def elu(node, ctx):
    """Elu as ELU (feature level 4)."""
    ctx.emit_form(Op.ELU, "default", [ctx.output(node.outputs[0])], input=ctx.operand(node.inputs[0]),
                  alpha=ctx.f32(node.attrs.get("alpha", 1.0)))


@onnx_op("LeakyRelu", versions=(7, OPSET_MAX))
def leaky_relu(node, ctx):
    """LeakyRelu as PRELU with a one-element alpha (float; quantized LeakyRelu computes in float between
    DEQUANTIZE and QUANTIZE, OnnxContext.float_core)."""
    x = data_inputs(node)[0]
    if ctx.tensor(x).quant is not None:
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"{node.label()}: quantized LeakyRelu is not mapped")
    ctx.emit_form(Op.PRELU, "default", [ctx.output(node.outputs[0])], input=ctx.operand(x),
                  alpha=ctx.const(np.float32([node.attrs.get("alpha", 0.01)])))


onnx_op("QLinearLeakyRelu", versions=MS_DOMAIN_VERSIONS)(leaky_relu)


SOFTMAXES = {"Softmax": Op.SOFTMAX, "LogSoftmax": Op.LOG_SOFTMAX}


@onnx_op("Softmax", "LogSoftmax", versions=(1, OPSET_MAX))
def softmax(node, ctx):
    """SOFTMAX / LOG_SOFTMAX along any axis; opset < 13 over the flattened trailing axes (RESHAPE to 2-D).

    Feature level 3 for LOG_SOFTMAX and for a SOFTMAX axis other than the last. Along `axis` (opset 13+, in
    the operand's layout), or over the flattened axes from `axis` on (opset < 13: a RESHAPE to 2-D around it
    unless `axis` is the last; an NHWC operand flattens as it is, the order of the flattened axes does not
    matter)."""
    x, y = node.inputs[0], node.outputs[0]
    code = SOFTMAXES[node.op]
    shape = known_rank(ctx, node, x)
    rank = len(shape)
    axis = axis_attr(ctx, node, x, -1 if node.version >= 13 else 1)
    float16 = ctx.model.operands[ctx.operand(x)].type.code == C.TENSOR_FLOAT16
    beta = ctx.scalar(C.FLOAT16, 1.0) if float16 else ctx.f32(1.0)  # beta has the input's float type
    if node.version >= 13 or axis == rank - 1:
        a = ctx.axis(x, axis)
        extra = {} if a == rank - 1 and code == Op.SOFTMAX else {"axis": ctx.i32(a)}
        ctx.emit_form(code, "default", [ctx.output(y)], input=ctx.operand(x), beta=beta, **extra)
        return
    if not all(shape):  # coerce to 2-D: softmax over everything from `axis` on
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: opset {node.version} {node.op} over axes "
                                                f"{axis}.. needs known extents, not {list(shape)}")
    out = ctx.output(y)
    otype = ctx.model.operands[out].type
    # softmax over the flattened axes from `axis` on ignores their order: an operand whose layout keeps the
    # leading axes (NHWC after a Conv, axis 1) flattens as it is; the layout plan gives the output that
    # layout too (layout.py), else the ONNX order
    perm = ctx.perm_of(y)
    if perm is not None and (tuple(perm[:axis]) != tuple(range(axis)) or ctx.perm_of(x) != perm):
        raise Unsupported(Reason.INVALID, f"{node.label()}: layout {perm} moves the leading axes")
    src = ctx.operand(x) if perm is not None else ctx.operand_data(x)
    src_t = ctx.model.operands[src].type
    flat_shape = (int(np.prod(shape[:axis])), int(np.prod(shape[axis:])))
    flat_in = ctx.temp(OperandType(src_t.code, flat_shape, src_t.scale, src_t.zero_point), f"{ctx.tensor(x).name}/2d")
    flat_out = ctx.temp(OperandType(otype.code, flat_shape, otype.scale, otype.zero_point), f"{ctx.tensor(y).name}/2d")
    ctx.emit_form(Op.RESHAPE, "default", [flat_in], input=src, shape=ctx.const(np.asarray(flat_shape, np.int32)))
    extra = {"axis": ctx.i32(1)} if code == Op.LOG_SOFTMAX else {}
    ctx.emit_form(code, "default", [flat_out], input=flat_in, beta=beta, **extra)
    ctx.emit_form(Op.RESHAPE, "default", [out], input=flat_out,
                  shape=ctx.const(np.asarray(otype.dimensions, np.int32)))
