"""DepthToSpace (DCR; CRD as a channel GATHER before it), SpaceToDepth and Resize (nearest / linear) on NHWC operands."""
from __future__ import annotations

import numpy as np

from nnapi import OperationCode as Op
from nnapi.ops.geometry import bilinear_axis, nearest_index

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, onnx_op, rank_of
from ..layout import NHWC

BLOCK_OPS = {"DepthToSpace": Op.DEPTH_TO_SPACE, "SpaceToDepth": Op.SPACE_TO_DEPTH}

# the sampling NNAPI offers (align_corners, half_pixel_centers), plain first: it needs no feature level 4 operands
NNAPI_SAMPLING = ((False, False), (True, False), (False, True))
ONNX_COORDINATES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_half_pixel_for_nn")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")

@onnx_op("DepthToSpace", "SpaceToDepth", versions=(7, OPSET_MAX))
def block_rearrange(node, ctx):
    """DEPTH_TO_SPACE and SPACE_TO_DEPTH; DepthToSpace CRD as a constant channel GATHER, then DEPTH_TO_SPACE.

    NNAPI's DEPTH_TO_SPACE is DCR; the GATHER (feature level 3) reorders the channels into DCR order."""
    x = node.inputs[0]
    rank_of(ctx, x, (4,))
    block = int(node.attrs["blocksize"])
    src = ctx.operand_as(x, NHWC)
    mode = node.attrs.get("mode", "DCR")
    if mode != "DCR" and (mode, node.op) != ("CRD", "DepthToSpace"):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: mode {mode!r} of {node.op} (NNAPI is DCR)")
    channels = ctx.model.operands[src].type.dimensions[3]
    if mode == "CRD" and channels // (block * block) > 1:
        src = _crd_as_dcr(ctx, node, src, block, channels)
    ctx.emit_form(BLOCK_OPS[node.op], "default", [ctx.output(node.outputs[0])], input=src,
                  block_size=ctx.i32(block))


def _crd_as_dcr(ctx, node, src: int, block: int, channels: int) -> int:
    """The NHWC operand whose DCR rearrangement is src's CRD one: DCR reads output channel c of block offset
    (i, j) from channel (i * block + j) * C' + c, CRD from c * block^2 + i * block + j."""
    if not channels or channels % (block * block):
        raise Unsupported(Reason.INVALID, f"{node.label()}: {channels} channels for blocksize {block}")
    depth = channels // (block * block)
    offset, c = np.divmod(np.arange(channels), depth)  # the DCR order: offset-major
    t = ctx.model.operands[src].type
    out = ctx.temp(t, f"{ctx.tensor(node.inputs[0]).name}/crd_as_dcr")
    ctx.emit_form(Op.GATHER, "default", [out], input=src, axis=ctx.i32(3),
                  indices=ctx.const((c * block * block + offset).astype(np.int32)))
    return out


@onnx_op("Resize", versions=(10, OPSET_MAX))
def resize(node, ctx):
    """Resize of H, W as RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR where NNAPI samples the same pixels.

    The align_corners / half_pixel_centers flags are the ones whose sampling is the node's: ONNX's source
    coordinates (or
    nearest indices) of every output row and column are computed from the node's scale, coordinate
    transformation and rounding, and compared with NNAPI's (nnapi/ops/geometry.py)."""
    x, y = node.inputs[0], node.outputs[0]
    rank_of(ctx, x, (4,))
    mode = node.attrs.get("mode", "nearest")
    ctm = "asymmetric" if node.version < 11 else node.attrs.get("coordinate_transformation_mode", "half_pixel")
    nearest = node.attrs.get("nearest_mode", "round_prefer_floor") if mode == "nearest" else None
    if node.version < 11 and mode == "nearest":
        nearest = "floor"  # opset 10 Resize samples like Upsample
    if mode not in ("nearest", "linear") or ctm not in ONNX_COORDINATES or (nearest and nearest not in NEAREST_MODES):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: mode {mode!r} with coordinate transformation "
                                            f"{ctm!r}{' and nearest_mode ' + repr(nearest) if nearest else ''} "
                                            f"has no NNAPI counterpart")
    if node.attrs.get("antialias", 0) or node.attrs.get("exclude_outside", 0):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: antialias / exclude_outside")
    (n, c, in_h, in_w), out = ctx.source_shape(x), ctx.source_shape(y)
    if len(out) != 4 or not (out[2] and out[3] and in_h and in_w) or (out[0], out[1]) != (n, c):
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: needs known input and output sizes, resizing "
                                                f"only H and W")
    scales = _onnx_scales(node, ctx, (in_h, in_w), (out[2], out[3]))
    want = [_onnx_sampling(ctm, nearest, i, o, s) for i, o, s in zip((in_h, in_w), (out[2], out[3]), scales)]
    flags = next((f for f in NNAPI_SAMPLING if all(_same(w, _nnapi_sampling(nearest, i, o, *f)) for w, i, o in
                                                   zip(want, (in_h, in_w), (out[2], out[3])))), None)
    if flags is None:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: {mode} sampling with coordinate transformation "
                                            f"{ctm!r}{' and nearest_mode ' + repr(nearest) if nearest else ''} at "
                                            f"scales {[round(float(s), 6) for s in scales]} ({in_h}x{in_w} -> "
                                            f"{out[2]}x{out[3]}) picks source positions no NNAPI resize picks")
    code = Op.RESIZE_BILINEAR if mode == "linear" else Op.RESIZE_NEAREST_NEIGHBOR
    named = dict(input=ctx.operand_as(x, NHWC), width=ctx.i32(out[3]), height=ctx.i32(out[2]))
    if any(flags) or code == Op.RESIZE_NEAREST_NEIGHBOR:  # the layout flag is optional only for BILINEAR
        named["layout"] = ctx.boolean(False)
    if any(flags):
        named.update(align_corners=ctx.boolean(flags[0]), half_pixel_centers=ctx.boolean(flags[1]))
    ctx.emit_form(code, "default", [ctx.output(y)], **named)


def _onnx_scales(node, ctx, in_hw, out_hw) -> list:
    """The scale ONNX's coordinate transformation divides by, for H and W: the scales input when it is
    given, else the one the sizes (and keep_aspect_ratio_policy) give."""
    k = 1 if node.version < 11 else 2
    scales_in = node.inputs[k] if k < len(node.inputs) else -1
    sizes_in = node.inputs[3] if node.version >= 11 and len(node.inputs) > 3 else -1
    axes = [a % 4 for a in (node.attrs.get("axes") or range(4))]
    if sizes_in >= 0 and not (ctx.is_const(sizes_in) and ctx.const_value(sizes_in).size == 0):
        policy = node.attrs.get("keep_aspect_ratio_policy", "stretch")
        if policy == "stretch":
            return [o / i for i, o in zip(in_hw, out_hw)]
        sizes = dict(zip(axes, (float(v) for v in ctx.const_value(sizes_in, "Resize sizes").ravel())))
        ratios = [sizes[a] / i for a, i in zip((2, 3), in_hw) if a in sizes]
        pick = min(ratios) if policy == "not_larger" else max(ratios)
        return [pick if a in sizes else 1.0 for a in (2, 3)]
    if scales_in < 0:
        raise Unsupported(Reason.INVALID, f"{node.label()}: neither scales nor sizes is given")
    values = np.asarray(ctx.const_value(scales_in, "Resize scales"), np.float32).ravel()
    full = dict(zip(axes, values))
    return [float(full.get(a, 1.0)) for a in (2, 3)]


def _onnx_sampling(ctm: str, nearest, in_size: int, out_size: int, scale: float) -> np.ndarray:
    """ONNX Resize along one axis: the source coordinate of each output position, clamped to the input
    (linear), or the source index (nearest)."""
    x = np.arange(out_size, dtype=np.float64)
    length = scale * in_size  # the spec's output_width: scale * input_width, not the whole output size
    length = out_size if abs(length - out_size) < 1e-6 * out_size else length
    if ctm == "half_pixel":
        src = (x + 0.5) / scale - 0.5
    elif ctm == "half_pixel_symmetric":
        adjustment = out_size / length
        src = in_size / 2 * (1 - adjustment) + (x + 0.5) / scale - 0.5
    elif ctm == "pytorch_half_pixel":
        src = (x + 0.5) / scale - 0.5 if length != 1 else np.full_like(x, -0.5)
    elif ctm == "align_corners":
        src = x * (in_size - 1) / (length - 1) if length != 1 else np.zeros_like(x)
    elif ctm == "asymmetric":
        src = x / scale
    else:  # tf_half_pixel_for_nn
        src = (x + 0.5) / scale
    if nearest is None:
        return np.clip(src, 0, in_size - 1)
    idx = {"round_prefer_floor": np.ceil(src - 0.5), "round_prefer_ceil": np.floor(src + 0.5),
           "floor": np.floor(src), "ceil": np.ceil(src)}[nearest]
    return np.clip(idx, 0, in_size - 1).astype(np.int64)


def _nnapi_sampling(nearest, in_size: int, out_size: int, align: bool, half: bool) -> np.ndarray:
    if nearest is not None:
        return nearest_index(in_size, out_size, align, half)
    lo, hi, frac = bilinear_axis(in_size, out_size, align, half)
    return lo + frac.astype(np.float64) * (hi - lo)


def _same(onnx_side: np.ndarray, nnapi_side: np.ndarray) -> bool:
    if onnx_side.dtype.kind == "i":
        return bool(np.array_equal(onnx_side, nnapi_side))
    return bool(np.allclose(onnx_side, nnapi_side, rtol=0, atol=1e-5 * max(1, len(onnx_side))))
