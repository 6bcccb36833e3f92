"""Convolutions and matrix products: CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D,
TRANSPOSE_CONV_2D, FULLY_CONNECTED, BATCH_MATMUL.

Type variables: T = input and output, W = filter (weights), B = bias.
"""
from __future__ import annotations

import math

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .geometry import const_int, image_input, join_image, split_image, transpose_out_or_0, window_out_or_0
from .inference import broadcast_extent, broadcast_shapes, const_ints
from .rules import bias_scale, rank_in, ranks_agree, window_fits, window_params
from .spec import Form, OpSpec, TypeCase, arg, cases, opt

Q8, Q8S, PER_CHANNEL = C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED, C.TENSOR_QUANT8_SYMM_PER_CHANNEL

# -- type cases ------------------------------------------------------------------

_DENSE_CASES = [
    TypeCase(1, T=C.TENSOR_FLOAT32, W=C.TENSOR_FLOAT32, B=C.TENSOR_FLOAT32),
    TypeCase(1, T=Q8, W=Q8, B=C.TENSOR_INT32),
    TypeCase(3, T=C.TENSOR_FLOAT16, W=C.TENSOR_FLOAT16, B=C.TENSOR_FLOAT16),
    TypeCase(4, T=Q8S, W=Q8S, B=C.TENSOR_INT32),
]
# the convolutions also take symmetric per-channel filters (feature level 3, signed input level 4)
_CONV_CASES = _DENSE_CASES + [
    TypeCase(3, T=Q8, W=PER_CHANNEL, B=C.TENSOR_INT32),
    TypeCase(4, T=Q8S, W=PER_CHANNEL, B=C.TENSOR_INT32),
]
# operations introduced at feature level 3 have every case from there on
_LEVEL3_CASES = [TypeCase(max(3, c.level), **c.as_dict()) for c in _CONV_CASES]

# -- argument lists ----------------------------------------------------------------

_TENSORS = [arg("input", "T"), arg("filter", "W"), arg("bias", "B")]
_EXPLICIT_PAD = [arg(n, C.INT32) for n in ("pad_left", "pad_right", "pad_top", "pad_bottom")]
_STRIDES = [arg("stride_w", C.INT32), arg("stride_h", C.INT32)]
_OPTIONAL_TAIL = [opt("layout", C.BOOL, level=3, default=False), opt("dilation_w", C.INT32, level=3, default=1),
                  opt("dilation_h", C.INT32, level=3, default=1)]
_OUT = [arg("output", "T")]


def _forms(middle: list, tail: list) -> list[Form]:
    """The explicit-padding form first, then the implicit one (told apart by count and types)."""
    return [Form("explicit", _TENSORS + _EXPLICIT_PAD + _STRIDES + middle + tail, _OUT),
            Form("implicit", _TENSORS + [arg("padding", C.INT32)] + _STRIDES + middle + tail, _OUT)]


# -- rules -------------------------------------------------------------------------

def _dims(operand):
    """Known dimensions of an operand (0 = unknown), or None when absent or of unknown rank."""
    if operand is None or not operand.type.dimensions:
        return None
    return operand.type.dimensions


def _channels(operand, v):
    """Channel count of a 4-D activation operand, when its layout and size are known (else None or 0)."""
    dims, nchw = _dims(operand), v.const("layout") if v.has("layout") else False
    if dims is None or len(dims) != 4 or nchw is None:
        return None
    return dims[1] if nchw else dims[3]


def _per_channel_dim(channel_dim: int):
    """A per-channel filter needs its scales, along the output-channel dimension."""
    def rule(v):
        flt = v.input("filter")
        if flt is None or flt.type.code != PER_CHANNEL:
            return
        if flt.channel_quant is None:
            yield "per-channel filter has no per-channel quantization parameters"
        elif flt.channel_quant.channel_dim != channel_dim:
            yield f"per-channel filter must have channelDim {channel_dim}, got {flt.channel_quant.channel_dim}"
    return rule


def _bias_matches(out_axis: int, filter_name="filter"):
    """The bias has one value per output channel (filter dimension `out_axis`)."""
    def rule(v):
        flt, bias = _dims(v.input(filter_name)), _dims(v.input("bias"))
        if flt and bias and len(flt) > out_axis and flt[out_axis] and bias[0] and flt[out_axis] != bias[0]:
            yield f"bias has {bias[0]} values, the filter has {flt[out_axis]} output channels"
    return rule


def _conv_channels(in_per_filter):
    """Input and output channel counts agree with the filter; `in_per_filter(view, filter dims)`
    gives the input channel count the filter implies (None when unknown)."""
    def rule(v):
        flt = _dims(v.input("filter"))
        if not flt or len(flt) != 4:
            return
        c_in, c_out = _channels(v.input("input"), v), _channels(v.output("output"), v)
        want = in_per_filter(v, flt)
        if c_in and want and c_in != want:
            yield f"input has {c_in} channels, the filter expects {want}"
        if c_out and flt[0] and c_out != flt[0]:
            yield f"output has {c_out} channels, the filter has {flt[0]}"
    return rule


def _dilation_pairs(v):
    if v.has("dilation_w") != v.has("dilation_h"):
        yield "dilation factors must be given for both width and height"


def _depthwise_filter(v):
    """Filter [1, h, w, depth_out] with depth_out = input channels x multiplier = output channels."""
    if isinstance(v.const("multiplier"), int) and v.const("multiplier") <= 0:
        yield f"depth multiplier must be positive, got {v.const('multiplier')}"
    flt = _dims(v.input("filter"))
    if not flt or len(flt) != 4:
        return
    if flt[0] not in (0, 1):
        yield f"filter must have shape [1, height, width, depth_out], got {list(flt)}"
    c_in, c_out, mult = _channels(v.input("input"), v), _channels(v.output("output"), v), v.const("multiplier")
    if c_in and flt[3] and isinstance(mult, int) and c_in * mult != flt[3]:
        yield f"depth_out {flt[3]} must be input channels {c_in} x depth multiplier {mult}"
    if c_out and flt[3] and c_out != flt[3]:
        yield f"output has {c_out} channels, the filter has {flt[3]}"


def _groups_divide(v):
    flt, groups = _dims(v.input("filter")), v.const("groups")
    if isinstance(groups, int) and groups <= 0:
        yield f"number of groups must be positive, got {groups}"
    elif flt and isinstance(groups, int) and flt[0] and flt[0] % groups:
        yield f"depth_out {flt[0]} is not a multiple of the {groups} groups"


def _output_scale_level(filter_name="filter"):
    """Before feature level 3, a QUANT8_ASYMM output needs output_scale > input_scale x filter_scale."""
    def level(v) -> int:
        inp, flt, out = v.input("input"), v.input(filter_name), v.output("output")
        if inp is None or flt is None or out is None or inp.type.code != Q8 or flt.type.code != Q8:
            return 1
        return 1 if out.type.scale > inp.type.scale * flt.type.scale else 3
    return level


def _filter_hw(v):
    """(height, width) of a convolution's [.., h, w, ..] filter, None where unknown."""
    flt = v.dims("filter")
    return (flt[1] or None, flt[2] or None) if flt is not None and len(flt) == 4 else (None, None)


def _conv_rules(out_axis: int, channel_dim: int, window=window_params(), forward=True) -> list:
    """The convolutions' shared rules; a `forward` one slides its filter over the padded input."""
    return [rank_in("input", [4]), rank_in("output", [4]), rank_in("filter", [4]), rank_in("bias", [1]),
            bias_scale(), _per_channel_dim(channel_dim), _bias_matches(out_axis), _dilation_pairs, window,
            *([window_fits(_filter_hw)] if forward else [])]


# -- shape inference -------------------------------------------------------------------
# output [batches, out_height, out_width, depth_out] (NCHW: [batches, depth_out, ...]); the window
# geometry (padding, strides, dilation) is nnapi/ops/geometry.py's, shared with the kernels

def _pads(v, before, after):
    return const_int(v, before), const_int(v, after)


def _conv_infer(depth_axis: int):
    """CONV_2D-like shapes: the filter is [.., kh, kw, ..] with depth_out at `depth_axis`."""
    def infer(v):
        image, flt = image_input(v, "input", "filter"), v.dims("filter")
        if image is None:
            return {}
        nchw, n, h, w, _ = image
        _, kh, kw, _ = flt or (0, 0, 0, 0)
        explicit = v.form.name == "explicit"
        padding = const_int(v, "padding")
        oh = window_out_or_0(h, const_int(v, "stride_h"), kh, const_int(v, "dilation_h", 1),
                             _pads(v, "pad_top", "pad_bottom") if explicit else None, padding)
        ow = window_out_or_0(w, const_int(v, "stride_w"), kw, const_int(v, "dilation_w", 1),
                             _pads(v, "pad_left", "pad_right") if explicit else None, padding)
        return {"output": join_image(n, oh, ow, flt[depth_axis] if flt else 0, nchw)}
    return infer


def _transpose_conv_infer(v):
    """Explicit: (in - 1) x stride + filter - paddings; implicit: the output shape tensor's extents
    with SAME padding fitted to them (VALID pads nothing)."""
    image, flt = image_input(v, "input", "filter"), v.dims("filter")
    if image is None:
        return {}
    nchw, n, h, w, _ = image
    _, kh, kw, _ = flt or (0, 0, 0, 0)
    if v.form.name == "explicit":
        oh = transpose_out_or_0(h, const_int(v, "stride_h"), kh, _pads(v, "pad_top", "pad_bottom"))
        ow = transpose_out_or_0(w, const_int(v, "stride_w"), kw, _pads(v, "pad_left", "pad_right"))
    else:
        shape = const_ints(v, "output_shape")
        _, rh, rw, _ = split_image(shape, nchw)
        padding = const_int(v, "padding")
        oh = transpose_out_or_0(h, const_int(v, "stride_h"), kh, padding=padding, requested=rh)
        ow = transpose_out_or_0(w, const_int(v, "stride_w"), kw, padding=padding, requested=rw)
    return {"output": join_image(n, oh, ow, flt[0] if flt else 0, nchw)}


def _fc_infer(v):
    """[batch_size, num_units]: the input flattened to rows of input_size (the weights' second
    dimension); num_units is the weights' first."""
    inp, wts = v.dims("input"), v.dims("weights")
    if wts is not None and len(wts) != 2:
        return {}
    units, size = wts or (0, 0)
    total = math.prod(inp) if inp else 0   # 0 when any extent is unknown
    batch = total // size if size and total % size == 0 else 0
    return {"output": (batch, units)}


# -- specs -------------------------------------------------------------------------

register(OpSpec(
    code=Op.CONV_2D,
    forms=_forms([arg("fuse", C.INT32)], _OPTIONAL_TAIL),
    type_cases=_CONV_CASES,
    rules=_conv_rules(0, 0) + [_conv_channels(lambda v, f: f[3])],
    level_rules=[_output_scale_level()],
    infer=_conv_infer(0),
    doc="output[b, y, x, o] = fuse(sum_{i, j, c} input[b, y*sh + i*dh - pt, x*sw + j*dw - pl, c] "
        "* filter[o, i, j, c] + bias[o]); filter [depth_out, h, w, depth_in]",
))

register(OpSpec(
    code=Op.DEPTHWISE_CONV_2D,
    forms=_forms([arg("multiplier", C.INT32), arg("fuse", C.INT32)], _OPTIONAL_TAIL),
    type_cases=_CONV_CASES,
    rules=_conv_rules(3, 3) + [_depthwise_filter],
    level_rules=[_output_scale_level()],
    infer=_conv_infer(3),
    doc="each input channel c is correlated with its own `multiplier` filters; output channel "
        "c * multiplier + m; filter [1, h, w, depth_out]",
))

register(OpSpec(
    code=Op.GROUPED_CONV_2D,
    forms=_forms([arg("groups", C.INT32), arg("fuse", C.INT32)], [arg("layout", C.BOOL)]),
    type_cases=_LEVEL3_CASES,
    rules=_conv_rules(0, 0) + [_groups_divide,
                               _conv_channels(lambda v, f: f[3] * v.const("groups")
                                              if isinstance(v.const("groups"), int) else None)],
    infer=_conv_infer(0),
    doc="input channels and filters split into `groups` independent CONV_2Ds; filter "
        "[depth_out, h, w, depth_in / groups]",
))

register(OpSpec(
    code=Op.TRANSPOSE_CONV_2D,
    forms=[Form("explicit", _TENSORS + _EXPLICIT_PAD + _STRIDES + [arg("fuse", C.INT32), arg("layout", C.BOOL)],
                _OUT),
           Form("implicit", _TENSORS + [arg("output_shape", C.TENSOR_INT32), arg("padding", C.INT32)] + _STRIDES
                + [arg("fuse", C.INT32), arg("layout", C.BOOL)], _OUT)],
    type_cases=_LEVEL3_CASES,
    # the tail paddings may be negative: they crop less than the scattered windows cover
    rules=_conv_rules(0, 0, window_params(non_negative=("pad_left", "pad_top")), forward=False)
    + [_conv_channels(lambda v, f: f[3]), rank_in("output_shape", [1])],
    infer=_transpose_conv_infer,
    doc="the gradient of CONV_2D: every input pixel scatters input x filter into a stride-spaced "
        "output window; filter [depth_out, h, w, depth_in]",
))

def _fc_rows(v):
    """The input flattens to rows of input_size (the weights' second dimension)."""
    inp, w = v.dims("input"), v.dims("weights")
    if inp and all(inp) and w and len(w) == 2 and w[1] and math.prod(inp) % w[1]:
        yield f"input {list(inp)} does not flatten to rows of {w[1]} (the weights' input size)"


def _fc_output(v):
    """Output [batch_size, num_units]: num_units is the weights' first dimension."""
    w, out = _dims(v.input("weights")), _dims(v.output("output"))
    if w and out and len(w) == 2 and len(out) == 2 and w[0] and out[1] and w[0] != out[1]:
        yield f"output has {out[1]} units, the weights have {w[0]}"


register(OpSpec(
    code=Op.FULLY_CONNECTED,
    forms=[Form("default", [arg("input", "T"), arg("weights", "W"), arg("bias", "B"), arg("fuse", C.INT32)],
                _OUT)],
    type_cases=_DENSE_CASES,
    rules=[rank_in("input", [2, 3, 4]), rank_in("weights", [2]), rank_in("bias", [1]), rank_in("output", [2]),
           bias_scale(filter_name="weights"), _bias_matches(0, "weights"), _fc_rows, _fc_output],
    level_rules=[_output_scale_level("weights")],
    infer=_fc_infer,
    doc="input flattened to [batch, input_size] (input_size = weights' second dimension); "
        "output = fuse(input @ weights^T + bias)",
))


# -- BATCH_MATMUL (feature level 6): the batched matrix product ------------------------------

def _infer_batch_matmul(v):
    """[batch..., rows of adj(x), columns of adj(y)]; the batch dimensions broadcast."""
    x, y = v.dims("x"), v.dims("y")
    if x is None or y is None or len(x) < 2 or len(y) < 2:
        return {"output": None}
    adj = [v.const(n) if v.has(n) else False for n in ("adj_x", "adj_y")]
    rows = 0 if adj[0] is None else x[-1] if adj[0] else x[-2]
    cols = 0 if adj[1] is None else y[-2] if adj[1] else y[-1]
    return {"output": broadcast_shapes(x[:-2], y[:-2]) + (rows, cols)}


def _matmul_shapes(v):
    """adj(x)'s columns are adj(y)'s rows, and the batch dimensions broadcast."""
    x, y = v.dims("x"), v.dims("y")
    if x is None or y is None or len(x) < 2 or len(y) < 2:
        return
    adj = [v.const(n) if v.has(n) else False for n in ("adj_x", "adj_y")]
    if None in adj:
        return
    a = (x[-1], x[-2]) if adj[0] else (x[-2], x[-1])
    b = (y[-1], y[-2]) if adj[1] else (y[-2], y[-1])
    if a[1] and b[0] and a[1] != b[0]:
        yield (f"cannot multiply [..., {a[0]}, {a[1]}] by [..., {b[0]}, {b[1]}] matrices (after adj_x/adj_y)")
    for i, (p, q) in enumerate(zip(x[:-2], y[:-2])):
        if broadcast_extent(p, q) is None:
            yield f"batch dimension {i} differs ({p} vs {q}) and neither is 1"


register(OpSpec(
    code=Op.BATCH_MATMUL,
    forms=[Form("default", [arg("x", "T"), arg("y", "T"), opt("adj_x", C.BOOL), opt("adj_y", C.BOOL)],
                [arg("output", "T")])],
    # the NNAPI docs list no TENSOR_QUANT8_ASYMM here, only the signed variant
    type_cases=cases(6, "T", C.TENSOR_FLOAT16, C.TENSOR_FLOAT32, C.TENSOR_QUANT8_ASYMM_SIGNED, C.TENSOR_INT32),
    rules=[rank_in("x", (2, 3, 4)), rank_in("y", (2, 3, 4)), rank_in("output", (2, 3, 4)),
           ranks_agree("x", "y"), ranks_agree("x", "output"), _matmul_shapes],
    doc="output[..., :, :] = adj(x)[..., :, :] @ adj(y)[..., :, :], batch dimensions broadcast",
    infer=_infer_batch_matmul,
))
