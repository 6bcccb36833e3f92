"""DepthToSpace (DCR), SpaceToDepth and Resize (nearest / linear) on NHWC operands."""
from __future__ import annotations

from nnapi import OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, onnx_op, rank_of
from ..layout import NHWC

BLOCK_OPS = {"DepthToSpace": Op.DEPTH_TO_SPACE, "SpaceToDepth": Op.SPACE_TO_DEPTH}

# (mode, coordinate_transformation_mode, nearest_mode or None) -> (align_corners, half_pixel_centers),
# the TensorFlow-style sampling NNAPI implements
RESIZE_MODES = {
    ("linear", "asymmetric", None): (False, False),
    ("linear", "align_corners", None): (True, False),
    ("linear", "half_pixel", None): (False, True),
    ("nearest", "asymmetric", "floor"): (False, False),
    ("nearest", "tf_half_pixel_for_nn", "floor"): (False, True),
    ("nearest", "half_pixel", "round_prefer_ceil"): (False, True),
    ("nearest", "align_corners", "round_prefer_ceil"): (True, False),
}


@onnx_op("DepthToSpace", "SpaceToDepth", versions=(7, OPSET_MAX))
def block_rearrange(node, ctx):
    """DEPTH_TO_SPACE (DCR mode; CRD orders channels differently) and SPACE_TO_DEPTH."""
    x = node.inputs[0]
    rank_of(ctx, x, (4,))
    if node.attrs.get("mode", "DCR") != "DCR":
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: mode {node.attrs['mode']!r} (NNAPI is DCR)")
    ctx.emit_form(BLOCK_OPS[node.op], "default", [ctx.output(node.outputs[0])], input=ctx.operand_as(x, NHWC),
                  block_size=ctx.i32(int(node.attrs["blocksize"])))


@onnx_op("Resize", versions=(10, OPSET_MAX))
def resize(node, ctx):
    """Resize of H and W to the inferred output size as RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR."""
    x, y = node.inputs[0], node.outputs[0]
    rank_of(ctx, x, (4,))
    mode = node.attrs.get("mode", "nearest")
    ctm = "asymmetric" if node.version < 11 else node.attrs.get("coordinate_transformation_mode", "half_pixel")
    nearest = node.attrs.get("nearest_mode", "round_prefer_floor") if mode == "nearest" else None
    if node.version < 11 and mode == "nearest":
        nearest = "floor"  # opset 10 Resize samples like Upsample
    if ctm == "pytorch_half_pixel" and mode == "linear":
        ctm = "half_pixel"  # equal whenever the output extent is above 1
    flags = RESIZE_MODES.get((mode, ctm, nearest))
    if flags is None:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: mode {mode!r} with coordinate transformation "
                                            f"{ctm!r}{' and nearest_mode ' + repr(nearest) if nearest else ''} "
                                            f"has no NNAPI counterpart")
    if node.attrs.get("antialias", 0) or node.attrs.get("exclude_outside", 0):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: antialias / exclude_outside")
    (n, c, _, _), out = ctx.source_shape(x), ctx.source_shape(y)
    if len(out) != 4 or not (out[2] and out[3]) or (out[0], out[1]) != (n, c):
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: needs a known output size resizing only H, W")
    _check_sampling(node, ctx, (out[2], out[3]), ctx.source_shape(x)[2:])
    code = Op.RESIZE_BILINEAR if mode == "linear" else Op.RESIZE_NEAREST_NEIGHBOR
    named = dict(input=ctx.operand_as(x, NHWC), width=ctx.i32(out[3]), height=ctx.i32(out[2]))
    if any(flags) or code == Op.RESIZE_NEAREST_NEIGHBOR:  # the layout flag is optional only for BILINEAR
        named["layout"] = ctx.boolean(False)
    if any(flags):
        named.update(align_corners=ctx.boolean(flags[0]), half_pixel_centers=ctx.boolean(flags[1]))
    ctx.emit_form(code, "default", [ctx.output(y)], **named)


def _check_sampling(node, ctx, out_hw, in_hw) -> None:
    """NNAPI samples with the ratio of the sizes; ONNX with the given scale (exactly the same only when
    in * scale is the output size) and maps a pytorch_half_pixel output extent of 1 to coordinate 0."""
    k = 1 if node.version < 11 else 2
    scales_in = node.inputs[k] if k < len(node.inputs) else -1
    sizes_in = node.inputs[3] if node.version >= 11 and len(node.inputs) > 3 else -1
    if scales_in >= 0 and sizes_in < 0 and not ctx.is_const(scales_in):
        raise Unsupported(Reason.NON_CONSTANT_OPERAND, f"{node.label()}: scales {ctx.tensor(scales_in).name!r} are "
                                                       f"given at run time; ONNX samples with the scale, NNAPI with "
                                                       f"the size ratio, the same only for scales known to fit")
    if scales_in >= 0 and sizes_in < 0 and ctx.is_const(scales_in) and ctx.const_value(scales_in).size:
        scales = [float(v) for v in ctx.const_value(scales_in).ravel()]
        axes = node.attrs.get("axes") or list(range(len(scales)))
        full = dict(zip([a % 4 for a in axes], scales))
        for a, size, o in ((2, in_hw[0], out_hw[0]), (3, in_hw[1], out_hw[1])):
            if abs(size * full.get(a, 1.0) - o) > 1e-6 * o:  # float32 scales such as 1.6 are inexact
                raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: scale {full.get(a)} of axis {a} does not give "
                                                    f"a whole output size ({size} * scale != {o}); ONNX samples with "
                                                    f"the scale, NNAPI with the size ratio")
    if node.attrs.get("coordinate_transformation_mode") == "pytorch_half_pixel" and 1 in out_hw:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: pytorch_half_pixel with an output extent of 1")
