"""TFLite pooling and resizing: AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D (implicit SAME/VALID
padding, fused activation), RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR (align_corners,
half_pixel_centers)."""
from __future__ import annotations

import numpy as np

from nnapi import OperationCode as Op

from ...registry import Reason, Unsupported, converter
from .common import name
from .nn_common import fuse_of, padding, positive_attrs, require_rank

_POOLS = {"AVERAGE_POOL_2D": Op.AVERAGE_POOL_2D, "MAX_POOL_2D": Op.MAX_POOL_2D, "L2_POOL_2D": Op.L2_POOL_2D}


@converter("tflite", "AVERAGE_POOL_2D", "MAX_POOL_2D", versions=(1, 3))
@converter("tflite", "L2_POOL_2D", versions=(1, 1))
def pool_2d(node, ctx):
    """2-D pooling over a filter_height x filter_width window; the fused activation as the FuseCode."""
    x = node.inputs[0]
    require_rank(ctx, x, {4}, "input")
    sw, sh, fw, fh = positive_attrs(node, ctx, "stride_w", "stride_h", "filter_width", "filter_height")
    fuse, out, finish = ctx.activation(fuse_of(node, ctx), node.outputs[0])
    ctx.emit_form(_POOLS[node.op], "implicit", [out], input=ctx.operand(x), padding=ctx.i32(padding(node, ctx)),
                  stride_w=ctx.i32(sw), stride_h=ctx.i32(sh), filter_w=ctx.i32(fw), filter_h=ctx.i32(fh), fuse=fuse)
    finish()


_RESIZES = {"RESIZE_BILINEAR": Op.RESIZE_BILINEAR, "RESIZE_NEAREST_NEIGHBOR": Op.RESIZE_NEAREST_NEIGHBOR}


@converter("tflite", "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR", versions=(1, 4))
def resize(node, ctx):
    """Resize to the constant size [new_height, new_width]; the corner flags only when set, as
    NNAPI takes them from feature level 4."""
    x, size_i = node.inputs[0], node.inputs[1]
    require_rank(ctx, x, {4}, "input")
    size = np.asarray(ctx.const_value(size_i, "size")).ravel()
    if size.size != 2 or (size <= 0).any():
        raise Unsupported(Reason.INVALID, f"size {name(ctx, size_i)} = {size.tolist()} is not 2 positive extents")
    align, half = bool(node.attrs.get("align_corners")), bool(node.attrs.get("half_pixel_centers"))
    if align and half:
        raise Unsupported(Reason.ATTRIBUTE, f"{name(ctx, node.outputs[0])}: align_corners and half_pixel_centers "
                                            f"are both set")
    optional = {}
    if align or half or node.op == "RESIZE_NEAREST_NEIGHBOR":  # bilinear's layout alone would need level 3
        optional["layout"] = ctx.boolean(False)
    if align or half:
        optional.update(align_corners=ctx.boolean(align), half_pixel_centers=ctx.boolean(half))
    ctx.emit_form(_RESIZES[node.op], "default", [ctx.output(node.outputs[0])], input=ctx.operand(x),
                  width=ctx.i32(int(size[1])), height=ctx.i32(int(size[0])), **optional)
