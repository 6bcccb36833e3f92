"""Gemm, MatMul, QLinearMatMul (and QDQ MatMul/Gemm) -> FULLY_CONNECTED when the right operand is a
constant matrix (alpha and beta folded into the constants), else BATCH_MATMUL (feature level 6)."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import MS_DOMAIN_VERSIONS, OPSET_MAX, bias_operand, onnx_op
from ..quant import data_inputs
from .quantize import check_bias_scale


def _fc_weights(ctx, b: int, trans_b: bool, alpha: float, name: str, unsigned: bool = False,
                values=None) -> int:
    """FULLY_CONNECTED weights [N, K] from ONNX B ([K, N], or [N, K] when transposed); `values`: float
    values standing for B's (MatMulInteger's B minus its zero points)."""
    t = ctx.tensor(b)
    if t.quant is not None and values is None:
        if alpha != 1.0:
            raise Unsupported(Reason.ATTRIBUTE, f"{name}: alpha {alpha} on quantized weights")
        if t.quant.per_channel:
            raise Unsupported(Reason.QUANTIZATION_TYPE, f"{name}: FULLY_CONNECTED has no per-channel weights")
        return ctx.weight(b, None if trans_b else (1, 0), unsigned=unsigned)
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0, float64 beyond float32: IEEE, like the source
        data = (ctx.const_value(b, "B") if values is None else values).astype(np.float32, copy=False)
        data = data if trans_b else data.T
        data = data * np.float32(alpha) if alpha != 1.0 else data
    return ctx.const(data, name=f"{t.name}/fc_weights")


def _fc_bias(ctx, node, c: int, n: int, a: int, b: int, beta: float) -> int:
    """FULLY_CONNECTED bias [N] from Gemm's C (any shape broadcasting to [N] along rows) times beta."""
    if c < 0 or beta == 0.0:
        return bias_operand(ctx, -1, n, a, b)
    data = ctx.const_value(c, "C")
    if data.size not in (1, n) or (data.ndim == 2 and data.shape[0] != 1):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: C of shape {list(data.shape)} is not one bias "
                                            f"per output column (FULLY_CONNECTED's bias)")
    if ctx.tensor(c).quant is not None or data.dtype == np.int32:
        if beta != 1.0 or data.shape != (n,):
            raise Unsupported(Reason.QUANTIZATION_TYPE, f"{node.label()}: a quantized C must be [{n}] with beta 1")
        return ctx.operand(c)
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 etc. stay as IEEE says, like the source
        bias = np.broadcast_to(data.astype(np.float32).ravel() * np.float32(beta), (n,)).copy()
    return ctx.const(bias, name=f"{ctx.tensor(c).name}/fc_bias")


def fully_connected(node, ctx, a: int, b: int, c: int = -1, trans_b: bool = False, alpha=1.0, beta=1.0,
                    a_operand=None, b_values=None):
    """out = a @ B (+ C): FULLY_CONNECTED on the row-major data of a (or a prepared 2-D a_operand),
    reshaped back for rank > 2; `b_values` are float values standing for B's."""
    k_n = ctx.const_value(b, "B").shape
    if len(k_n) != 2:
        raise Unsupported(Reason.RANK, f"{node.label()}: constant B {ctx.tensor(b).name!r} has rank {len(k_n)}, "
                                       f"expected 2")
    n = k_n[0] if trans_b else k_n[1]
    a_op = a_operand if a_operand is not None else ctx.operand_data(a)
    bq = ctx.tensor(b).quant
    if bq is not None and bq.per_channel and b_values is None:
        _per_channel_fc(node, ctx, a_op, b, c, trans_b, alpha, beta, n)
        return
    weights = _fc_weights(ctx, b, trans_b, alpha, node.label(),
                          ctx.model.operands[a_op].type.code == C.TENSOR_QUANT8_ASYMM, b_values)
    if b_values is None:
        check_bias_scale(ctx, node, a, b)
    bias = _fc_bias(ctx, node, c, n, a, b, beta) if b_values is None else \
        ctx.const(np.zeros(n, np.float32), name=f"{ctx.tensor(b).name}/zero_bias")
    fuse, out = ctx.fused_output(node)
    out_shape = ctx.model.operands[out].type.dimensions
    if len(out_shape) == 2:
        ctx.emit_form(Op.FULLY_CONNECTED, "default", [out], input=a_op,
                      weights=weights, bias=bias, fuse=fuse)
        return
    if not all(out_shape):
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: a rank-{len(out_shape)} MatMul needs known shapes")
    otype = ctx.model.operands[out].type
    rows = int(np.prod(out_shape[:-1]))
    flat = ctx.temp(OperandType(otype.code, (rows, n), otype.scale, otype.zero_point),
                    f"{ctx.tensor(node.outputs[0]).name}/2d")
    ctx.emit_form(Op.FULLY_CONNECTED, "default", [flat], input=a_op, weights=weights, bias=bias,
                  fuse=fuse)
    ctx.emit_form(Op.RESHAPE, "default", [out], input=flat, shape=ctx.const(np.asarray(out_shape, np.int32)))


def _per_channel_fc(node, ctx, a_op: int, b: int, c: int, trans_b: bool, alpha, beta, n: int) -> None:
    """FULLY_CONNECTED has no per-channel weights: the same products as a 1x1 CONV_2D over the rows
    ([rows, 1, 1, K] -> [rows, 1, 1, N]), which takes per-channel weights (and requantizes per column)."""
    bq = ctx.tensor(b).quant
    if bq.axis != (0 if trans_b else 1):
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"{node.label()}: B is quantized per {'row' if trans_b else 'column'}"
                                                    f" of K, not per output column")
    if alpha != 1.0:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: alpha {alpha} on quantized weights")
    a_dims = ctx.model.operands[a_op].type.dimensions
    out_t = ctx.tensor(node.outputs[0])
    out_shape = tuple(int(d) for d in (ctx.source_shape(node.outputs[0]) or ()))
    if not a_dims or not all(a_dims) or not out_shape or not all(out_shape):
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: per-channel weights need known shapes")
    k = int(a_dims[-1])
    rows = int(np.prod(a_dims)) // k
    at = ctx.model.operands[a_op].type
    a4 = ctx.temp(OperandType(at.code, (rows, 1, 1, k), at.scale, at.zero_point), f"{out_t.name}/rows")
    ctx.emit_form(Op.RESHAPE, "default", [a4], input=a_op, shape=ctx.const(np.asarray((rows, 1, 1, k), np.int32)))
    # B as [N, 1, 1, K]: [1, 1, N, K] (transB) or [1, 1, K, N] moved so N leads
    weights = ctx.weight(b, (2, 0, 1, 3) if trans_b else (3, 0, 1, 2), rank=4)
    check_bias_scale(ctx, node, node.inputs[0], b)
    bias = _fc_bias(ctx, node, c, n, node.inputs[0], b, beta)
    fuse, out = ctx.fused_output(node)
    otype = ctx.model.operands[out].type
    conv = ctx.temp(OperandType(otype.code, (rows, 1, 1, n), otype.scale, otype.zero_point), f"{out_t.name}/conv")
    zero = ctx.i32(0)
    ctx.emit_form(Op.CONV_2D, "explicit", [conv], input=a4, filter=weights, bias=bias, pad_left=zero,
                  pad_right=zero, pad_top=zero, pad_bottom=zero, stride_w=ctx.i32(1), stride_h=ctx.i32(1), fuse=fuse)
    ctx.emit_form(Op.RESHAPE, "default", [out], input=conv,
                  shape=ctx.const(np.asarray(otype.dimensions, np.int32)))


def batch_matmul(node, ctx, a: int, b: int, adj_a=False, adj_b=False):
    """out = a @ b for two run-time operands of one rank (BATCH_MATMUL, feature level 6)."""
    if len(ctx.source_shape(a)) != len(ctx.source_shape(b)):
        raise Unsupported(Reason.RANK, f"{node.label()}: BATCH_MATMUL needs operands of one rank")
    out, finish = ctx.unfused_output(node)
    ctx.emit_form(Op.BATCH_MATMUL, "default", [out], x=ctx.operand_as(a), y=ctx.operand_as(b),
                  adj_x=ctx.boolean(adj_a), adj_y=ctx.boolean(adj_b))
    finish()
    return out


def _matmul(node, ctx, a: int, b: int) -> None:
    """FULLY_CONNECTED for a constant 2-D right operand, else BATCH_MATMUL."""
    if ctx.is_const(b) and len(ctx.source_shape(b)) == 2:
        fully_connected(node, ctx, a, b)
    else:
        batch_matmul(node, ctx, a, b)


@onnx_op("MatMul", versions=(1, OPSET_MAX))
def matmul(node, ctx):
    """MatMul: FULLY_CONNECTED for a constant 2-D right operand, else BATCH_MATMUL."""
    _matmul(node, ctx, node.inputs[0], node.inputs[1])


@onnx_op("QLinearMatMul", versions=(10, OPSET_MAX))
def qlinear_matmul(node, ctx):
    """QLinearMatMul as a quantized FULLY_CONNECTED (constant per-tensor B) or BATCH_MATMUL."""
    _matmul(node, ctx, *data_inputs(node)[:2])


@onnx_op("QGemm", versions=MS_DOMAIN_VERSIONS)
@onnx_op("Gemm", versions=(7, OPSET_MAX))
def gemm(node, ctx):
    """Gemm (alpha, beta, transA, transB, C): FULLY_CONNECTED when B and C are constant; com.microsoft
    QGemm (int32 C) likewise, quantized."""
    ins = data_inputs(node)
    a, b = ins[0], ins[1]
    c = ins[2] if len(ins) > 2 else -1
    alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
    trans_a, trans_b = bool(node.attrs.get("transA", 0)), bool(node.attrs.get("transB", 0))
    if ctx.is_const(b) and (c < 0 or ctx.is_const(c)):
        a_operand = ctx.operand_as(a, (1, 0)) if trans_a else None
        fully_connected(node, ctx, a, b, c, trans_b, alpha, beta, a_operand)
        return
    if ctx.tensor(a).quant is not None:
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"{node.label()}: quantized Gemm needs a constant B")
    if alpha == 1.0 and c < 0:
        batch_matmul(node, ctx, a, b, trans_a, trans_b)
        return
    _runtime_gemm(node, ctx, a, b, c, alpha, beta, trans_a, trans_b)


def _runtime_gemm(node, ctx, a: int, b: int, c: int, alpha: float, beta: float, trans_a: bool,
                  trans_b: bool) -> None:
    """alpha * (A @ B) + beta * C for a run-time B (float): BATCH_MATMUL, MUL by alpha, ADD of beta * C
    (a constant C is scaled at conversion; NNAPI's ADD broadcasts C as ONNX's unidirectional broadcast
    does). Each step is one float rounding, as onnxruntime's float Gemm rounds its own sum."""
    from .compose import Chain, require_float
    require_float(ctx, node, a)
    if len(ctx.source_shape(a)) != 2 or len(ctx.source_shape(b)) != 2:
        raise Unsupported(Reason.RANK, f"{node.label()}: Gemm takes 2-D A and B")
    chain = Chain(ctx, node, node.outputs[0])
    prod = chain.op(Op.BATCH_MATMUL, x=ctx.operand_as(a), y=ctx.operand_as(b), adj_x=ctx.boolean(trans_a),
                    adj_y=ctx.boolean(trans_b))
    out, finish = ctx.unfused_output(node)
    if c < 0:
        chain.binary(Op.MUL, prod, chain.scalar(alpha), out=out)
    else:
        scaled = prod if alpha == 1.0 else chain.binary(Op.MUL, prod, chain.scalar(alpha))
        if ctx.is_const(c):
            dtype = np.float16 if chain.code == C.TENSOR_FLOAT16 else np.float32
            term = ctx.const(np.asarray(beta * np.asarray(ctx.const_value(c), np.float64), dtype))
        else:
            term = ctx.operand(c) if beta == 1.0 else chain.binary(Op.MUL, ctx.operand(c), chain.scalar(beta))
        chain.binary(Op.ADD, scaled, term, out=out)
    finish()
