"""Conv, QLinearConv (and QDQ Conv) -> CONV_2D / DEPTHWISE_CONV_2D / GROUPED_CONV_2D; ConvTranspose ->
TRANSPOSE_CONV_2D. Weights are transposed at conversion; a following BatchNormalization is folded into
them (fusion.py decides)."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, bias_operand, form_of, ints, onnx_op, rank_of, spatial_padding
from ..layout import NHWC
from ..quant import data_inputs
from .quantize import check_bias_scale

OHWI = (0, 2, 3, 1)          # ONNX [out, in, h, w] -> NNAPI [out, h, w, in]
DEPTHWISE = (1, 2, 3, 0)     # ONNX [C*M, 1, h, w] -> NNAPI [1, h, w, C*M]; also ConvTranspose's [in, out, h, w]


def _fold_bn(ctx, bn, w: np.ndarray, b):
    """Weights and bias with BatchNormalization (scale, B, mean, var, epsilon) folded in."""
    scale, beta, mean, var = (ctx.const_value(i, "BatchNormalization parameter").astype(np.float64)
                              for i in bn.inputs[1:5])
    f = scale / np.sqrt(var + bn.attrs.get("epsilon", 1e-5))
    b = np.zeros(w.shape[0]) if b is None else b.astype(np.float64)
    return ((w.astype(np.float64) * f.reshape(-1, 1, 1, 1)).astype(np.float32),
            ((b - mean) * f + beta).astype(np.float32))


def conv2d(node, ctx, x: int, w: int, b: int, w_values=None, x_operand=None) -> None:
    """The convolution of x by weights w (or float `w_values` standing for them: ConvInteger's weights
    minus their zero points) plus bias b; `x_operand` is an NHWC operand standing for x."""
    node = ctx.lifted(node)  # a 1-D convolution is the 2-D one with H = 1
    rank_of(ctx, x, (4,))
    wdata = ctx.const_value(w, "weights") if w_values is None else w_values
    if wdata.ndim != 4:
        raise Unsupported(Reason.RANK, f"{node.label()}: only 2-D convolutions map to NNAPI "
                                       f"(weights have rank {wdata.ndim})")
    n_out, in_per_group, kh, kw = wdata.shape
    group = int(node.attrs.get("group", 1))
    strides, dil = ints(node, "strides", [1, 1]), ints(node, "dilations", [1, 1])
    if group == 1:
        code, perm, extra = Op.CONV_2D, OHWI, {}
    elif in_per_group == 1:  # one input channel per group: each channel has its own filters
        code, perm, extra = Op.DEPTHWISE_CONV_2D, DEPTHWISE, {"multiplier": ctx.i32(n_out // group)}
    else:
        code, perm, extra = Op.GROUPED_CONV_2D, OHWI, {"groups": ctx.i32(group)}
    padding = spatial_padding(ctx, node, x, node.outputs[0], (kh, kw), strides, dil)
    inp = ctx.operand_as(x, NHWC) if x_operand is None else x_operand
    bn = ctx.folded_bn(node)
    if w_values is not None:
        flt = ctx.const(np.ascontiguousarray(np.transpose(w_values.astype(np.float32, copy=False), perm)),
                        name=f"{ctx.tensor(w).name}/float")
        bias = ctx.const(np.zeros(n_out, np.float32), name=f"{ctx.tensor(w).name}/zero_bias")
    elif bn is not None:
        bias_data = ctx.const_value(b, "bias") if b >= 0 else None
        wf, bf = _fold_bn(ctx, bn, wdata, bias_data)
        flt, bias = ctx.const(np.transpose(wf, perm), name=f"{ctx.tensor(w).name}/bn_folded"), ctx.const(bf)
    else:
        flt = ctx.weight(w, perm, unsigned=ctx.model.operands[inp].type.code == C.TENSOR_QUANT8_ASYMM)
        check_bias_scale(ctx, node, x, w)
        bias = bias_operand(ctx, b, n_out, x, w)
    fuse, out = ctx.fused_output(node)
    named = dict(input=inp, filter=flt, bias=bias, stride_w=ctx.i32(strides[1]), stride_h=ctx.i32(strides[0]),
                 fuse=fuse, **padding, **extra)
    if dil != [1, 1]:
        if code == Op.GROUPED_CONV_2D:
            raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: GROUPED_CONV_2D has no dilation")
        named.update(layout=ctx.boolean(False), dilation_w=ctx.i32(dil[1]), dilation_h=ctx.i32(dil[0]))
    elif code == Op.GROUPED_CONV_2D:
        named["layout"] = ctx.boolean(False)
    ctx.emit_form(code, form_of(padding), [out], **named)


@onnx_op("Conv", versions=(1, OPSET_MAX))
def conv(node, ctx):
    """Conv (1-D or 2-D; auto_pad, dilations, group) as CONV_2D, DEPTHWISE_CONV_2D or GROUPED_CONV_2D."""
    ins = list(node.inputs) + [-1] * (3 - len(node.inputs))
    conv2d(node, ctx, *ins[:3])


@onnx_op("QLinearConv", versions=(10, OPSET_MAX))
def qlinear_conv(node, ctx):
    """QLinearConv as a quantized convolution (per-channel int8 weights, int32 bias)."""
    conv2d(node, ctx, *data_inputs(node))


@onnx_op("ConvTranspose", versions=(1, OPSET_MAX))
def conv_transpose(node, ctx):
    """ConvTranspose (2-D; groups, dilations, output_padding) as TRANSPOSE_CONV_2D with explicit padding.

    Groups: one TRANSPOSE_CONV_2D per group on a SPLIT of the channels, joined by CONCATENATION (so a
    depthwise-style ConvTranspose emits one per channel). Dilations: the kernel with zeros between its
    taps (exact for finite inputs: each added product is 0)."""
    x, w = node.inputs[0], node.inputs[1]
    b = node.inputs[2] if len(node.inputs) > 2 else -1
    rank_of(ctx, x, (4,))
    wdata = ctx.const_value(w, "weights")
    if wdata.ndim != 4:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: only 2-D ConvTranspose maps to NNAPI")
    group = int(node.attrs.get("group", 1))
    if group < 1 or wdata.shape[0] % group:
        raise Unsupported(Reason.INVALID, f"{node.label()}: {wdata.shape[0]} input channels in {group} groups")
    wdata = _dilated(ctx, node, w, wdata)
    strides = ints(node, "strides", [1, 1])
    _, per_group, kh, kw = wdata.shape
    n_out = per_group * group
    (_, _, h, wd), out_shape = ctx.source_shape(x), ctx.source_shape(node.outputs[0])
    if not (h and wd and len(out_shape) == 4 and out_shape[2] and out_shape[3]):
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: needs known input and output sizes")
    pads = ints(node, "pads", [0, 0, 0, 0])
    auto = node.attrs.get("auto_pad", "NOTSET")
    extra = ints(node, "output_padding", [0, 0])
    if auto != "NOTSET" and any(extra):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: auto_pad {auto} with output_padding: onnxruntime "
                                            f"and the ONNX spec give different output sizes")
    given = "output_shape" in node.attrs  # then the pads follow from it (as onnxruntime computes them)
    cuts, grow = [], []
    for k, (size, o, s, kk) in enumerate(zip((h, wd), out_shape[2:], strides, (kh, kw))):
        total = s * (size - 1) + kk - o  # what must be cut from the full scatter to get ONNX's output size
        if auto == "NOTSET" and not given:
            first = pads[k]
        else:  # SAME_UPPER cuts the odd row at the end; onnxruntime pads by nothing when the output is larger
            p = max(0, total + (extra[k] if given else 0))
            first = p // 2 if auto == "SAME_UPPER" else p - p // 2
        if first < 0:
            raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: negative pads")
        cuts.append((first, max(total - first, 0)))
        grow.append(max(first - total, 0))  # output rows past the scatter: only the bias reaches them
    (pt, pb), (pl, pr) = cuts
    check_bias_scale(ctx, node, x, w)
    inp = ctx.operand_as(x, NHWC)
    fuse, out = ctx.fused_output(node)
    geometry = dict(pad_left=ctx.i32(pl), pad_right=ctx.i32(pr), pad_top=ctx.i32(pt), pad_bottom=ctx.i32(pb),
                    stride_w=ctx.i32(strides[1]), stride_h=ctx.i32(strides[0]), layout=ctx.boolean(False))
    otype = ctx.model.operands[out].type
    if not any(grow):
        _grouped(ctx, node, inp, wdata, b, group, out, fuse, geometry)
        return
    # output_padding / output_shape past the scatter: TRANSPOSE_CONV_2D without bias, PAD the rows and
    # columns it cannot write with zeros, then ADD the bias (with the fused activation) to every pixel
    if otype.code not in (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: a quantized output larger than the transposed "
                                            f"convolution's (output_padding beyond the pads)")
    n, oh, ow, c = otype.dimensions
    scattered = ctx.temp(OperandType(otype.code, [n, oh - grow[0], ow - grow[1], c]), f"{ctx.tensor(node.outputs[0]).name}/scatter")
    padded = ctx.temp(OperandType(otype.code, [n, oh, ow, c]), f"{ctx.tensor(node.outputs[0]).name}/padded")
    _grouped(ctx, node, inp, wdata, None, group, scattered, ctx.i32(0), geometry)
    ctx.emit_form(Op.PAD, "default", [padded], input=scattered,
                  paddings=ctx.const(np.asarray([[0, 0], [0, grow[0]], [0, grow[1]], [0, 0]], np.int32)))
    ctx.emit_form(Op.ADD, "default", [out], input1=padded, input2=bias_operand(ctx, b, n_out, x, w), fuse=fuse)


def _dilated(ctx, node, w: int, wdata: np.ndarray) -> np.ndarray:
    """The weights with dilation folded in: taps (d - 1) apart, zeros (the zero point) between them."""
    dil = ints(node, "dilations", [1, 1])
    if dil == [1, 1]:
        return wdata
    if min(dil) < 1:
        raise Unsupported(Reason.INVALID, f"{node.label()}: dilations {dil}")
    cin, cout, kh, kw = wdata.shape
    q = ctx.tensor(w).quant
    zero = 0 if q is None or q.per_channel else q.zero_point
    spread = np.full((cin, cout, (kh - 1) * dil[0] + 1, (kw - 1) * dil[1] + 1), zero, wdata.dtype)
    spread[:, :, ::dil[0], ::dil[1]] = wdata
    return spread


def _grouped(ctx, node, inp: int, wdata: np.ndarray, b, group: int, out: int, fuse: int, geometry: dict) -> None:
    """TRANSPOSE_CONV_2D of input `inp` by weights `wdata` ([in, out / group, h, w]) into `out`: one operation,
    or per group one on its slice of the input channels, concatenated. b: the bias tensor (-1: zeros; None:
    zeros even when the node has one, which the caller adds)."""
    x, w = node.inputs[0], node.inputs[1]
    per_in, per_out = wdata.shape[0] // group, wdata.shape[1]
    unsigned = ctx.model.operands[inp].type.code == C.TENSOR_QUANT8_ASYMM
    if group == 1:
        parts, outs = [inp], [out]
    else:
        ctype, otype = ctx.model.operands[inp].type, ctx.model.operands[out].type
        name = ctx.tensor(node.outputs[0]).name
        parts = [ctx.temp(OperandType(ctype.code, (*ctype.dimensions[:3], per_in), ctype.scale, ctype.zero_point),
                          f"{name}/group{g}_input") for g in range(group)]
        outs = [ctx.temp(OperandType(otype.code, (*otype.dimensions[:3], per_out), otype.scale, otype.zero_point),
                         f"{name}/group{g}") for g in range(group)]
        ctx.emit_form(Op.SPLIT, "default", parts, input=inp, axis=ctx.i32(3), num_splits=ctx.i32(group))
    for g, (part, dst) in enumerate(zip(parts, outs)):
        flt = ctx.weight(w, DEPTHWISE, unsigned=unsigned, data=wdata[g * per_in:(g + 1) * per_in])
        if b is not None and b >= 0:
            bias = ctx.weight(b, data=ctx.const_value(b, "bias")[g * per_out:(g + 1) * per_out], what="bias")
        else:
            bias = bias_operand(ctx, -1, per_out, x, w)
        ctx.emit_form(Op.TRANSPOSE_CONV_2D, "explicit", [dst], input=part, filter=flt, bias=bias, fuse=fuse,
                      **geometry)
    if group > 1:
        ctx.emit_form(Op.CONCATENATION, "default", [out], inputs=outs, axis=ctx.i32(3))
