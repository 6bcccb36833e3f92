"""Padding and spatial rearrangement: PAD, PAD_V2, MIRROR_PAD, DEPTH_TO_SPACE, SPACE_TO_DEPTH,
BATCH_TO_SPACE_ND and SPACE_TO_BATCH_ND (the kernels: executor/kernels/shape/space.py). The
shared shape-family helpers are shape.py's."""
from __future__ import annotations

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .inference import const_ints
from .rules import const_in, dims_fit, known_rank, length_is_rank, ranks_agree, same_quant
from .shape import (DATA_TYPES, F16, F32, I32, OUTPUT_KEEPS_RANK, Q8, Q8S, const_pairs, div_or_0, keeps_quant,
                    matrix, mul_or_0, padded, rank_limits, shape_op, shape_types, unknown, vectors)
from .geometry import layout, split_image
from .spec import Form, OpSpec, TypeCase, arg, cases, opt


# before this level the quant8 pad value of PAD / SPACE_TO_BATCH_ND was undefined: only zero point 0
# pads with the logical zero
PAD_ZERO_POINT_LEVEL = 3


def _nonzero_pad_zero_point(v) -> int:
    inp = v.input("input")
    return PAD_ZERO_POINT_LEVEL if inp is not None and inp.type.code == Q8 and inp.type.zero_point != 0 else 1


def _infer_pad(v):
    d = v.dims("input")
    if d is None:
        return {"output": None}
    pads = const_pairs(v, "paddings", len(d))
    if pads is None:
        return {"output": unknown(len(d))}
    return {"output": tuple(padded(n, b, a) for n, (b, a) in zip(d, pads))}


def _nhwc(infer_nhwc):
    """Infer for the 4-D depth/space/batch rearrangements: infer_nhwc(v, (n, h, w, c)) gives the NHWC output,
    transposed in and out of NCHW when the layout flag is set."""
    def infer(v):
        d = v.dims("input")
        if d is None or len(d) != 4:
            return {"output": None}
        nchw = v.const("layout") if v.has("layout") else False
        if nchw is None:   # layout given at run time
            return {"output": unknown(4)}
        n, h, w, c = infer_nhwc(v, (d[0], d[2], d[3], d[1]) if nchw else d)
        return {"output": (n, c, h, w) if nchw else (n, h, w, c)}
    return infer


def _block(v) -> int:
    b = v.const("block_size")
    return b if isinstance(b, int) and b > 0 else 0


def _block_shape(v) -> tuple:
    bs = const_ints(v, "block_shape")
    return tuple(bs) if bs is not None and len(bs) == 2 else (0, 0)


def _depth_to_space(v, d):
    n, h, w, c = d
    b = _block(v)
    return n, mul_or_0(h, b), mul_or_0(w, b), div_or_0(c, mul_or_0(b, b))


def _space_to_depth(v, d):
    n, h, w, c = d
    b = _block(v)
    return n, div_or_0(h, b), div_or_0(w, b), mul_or_0(c, b, b)


def _batch_to_space(v, d):
    n, h, w, c = d
    bh, bw = _block_shape(v)
    return div_or_0(n, mul_or_0(bh, bw)), mul_or_0(h, bh), mul_or_0(w, bw), c


def _space_to_batch(v, d):
    n, h, w, c = d
    bh, bw = _block_shape(v)
    pads = const_pairs(v, "paddings", 2) or [(-1, -1)] * 2
    return mul_or_0(n, bh, bw), div_or_0(padded(h, *pads[0]), bh), div_or_0(padded(w, *pads[1]), bw), c


def _square_blocks(divides: str):
    """DEPTH_TO_SPACE / SPACE_TO_DEPTH: block_size >= 1 dividing the depth by block_size^2 ("depth") or the
    height and width by block_size ("space"), where known."""
    def rule(v):
        b = v.const("block_size")
        if not isinstance(b, int):
            return
        if b < 1:
            yield f"block_size {b} must be >= 1"
            return
        nchw = layout(v)
        d = v.dims("input")
        if nchw is None or d is None or len(d) != 4:
            return
        _, h, w, c = split_image(d, nchw)
        if divides == "depth" and c and c % (b * b):
            yield f"depth {c} is not divisible by block_size^2 = {b * b}"
        if divides == "space" and ((h and h % b) or (w and w % b)):
            yield f"height {h or '?'} and width {w or '?'} must be divisible by block_size {b}"
    return rule


# -- specs ----------------------------------------------------------------------------

shape_op(Op.PAD, [arg("input", "T"), arg("paddings", I32)], shape_types(2),
    rules=[*rank_limits("input", "output", max_rank=4), matrix("paddings"), length_is_rank("paddings"), OUTPUT_KEEPS_RANK,
           *keeps_quant()],
    level_rules=[_nonzero_pad_zero_point],
    doc="pads with the logical zero (the zero point for quant8)",
    infer=_infer_pad, runtime="paddings")

shape_op(Op.PAD_V2, [arg("input", "T"), arg("paddings", I32), arg("pad_value", "P")],
    [TypeCase(3, T=F32, P=C.FLOAT32), TypeCase(3, T=F16, P=C.FLOAT16), TypeCase(3, T=Q8, P=C.INT32),
     TypeCase(4, T=Q8S, P=C.INT32)],
    rules=[*rank_limits("input", "output", max_rank=4), matrix("paddings"), length_is_rank("paddings"), OUTPUT_KEEPS_RANK,
           *keeps_quant()],
    doc="pads with pad_value (a stored quantized integer for quant8 tensors)",
    infer=_infer_pad, runtime="paddings")

_LAYOUT = opt("layout", C.BOOL, level=3)

shape_op(Op.DEPTH_TO_SPACE, [arg("input", "T"), arg("block_size", C.INT32), _LAYOUT], shape_types(1),
    rules=[*rank_limits("input", "output", exact=4), _square_blocks("depth"), *keeps_quant()],
    doc="moves depth blocks of block_size x block_size into space",
    infer=_nhwc(_depth_to_space))

shape_op(Op.SPACE_TO_DEPTH, [arg("input", "T"), arg("block_size", C.INT32), _LAYOUT], shape_types(1),
    rules=[*rank_limits("input", "output", exact=4), _square_blocks("space"), *keeps_quant()],
    doc="moves block_size x block_size spatial blocks into depth",
    infer=_nhwc(_space_to_depth))

shape_op(Op.BATCH_TO_SPACE_ND, [arg("input", "T"), arg("block_shape", I32), _LAYOUT], shape_types(2),
    rules=[*rank_limits("input", "output", exact=4), *vectors("block_shape"), *keeps_quant()],
    doc="moves batch blocks into the spatial dimensions (no crops)",
    infer=_nhwc(_batch_to_space), runtime="block_shape")

shape_op(Op.SPACE_TO_BATCH_ND, [arg("input", "T"), arg("block_shape", I32), arg("paddings", I32), _LAYOUT],
    shape_types(2), rules=[*rank_limits("input", "output", exact=4), *vectors("block_shape"), matrix("paddings"),
                      *keeps_quant()],
    level_rules=[_nonzero_pad_zero_point],
    doc="pads the spatial dimensions (logical zero) and moves spatial blocks into the batch",
    infer=_nhwc(_space_to_batch), runtime="block_shape and paddings")


# -- MIRROR_PAD (feature level 7) -------------------------------------------------------

def _paddings_shape(v):
    pads, inp = v.input("paddings"), v.input("input")
    if pads is not None and not dims_fit(pads.type.dimensions, (known_rank(inp), 2)):
        yield f"paddings must have shape [rank(input), 2], got {list(pads.type.dimensions)}"


def _infer_mirror_pad(v):
    """Each dimension grows by its two paddings (when the paddings are constant)."""
    d, pads = v.dims("input"), const_ints(v, "paddings")
    if d is None:
        return {"output": None}
    if pads is None or len(pads) != 2 * len(d) or min(pads, default=0) < 0:
        return {"output": (0,) * len(d)}
    return {"output": tuple(n + b + a if n else 0 for n, b, a in zip(d, pads[0::2], pads[1::2]))}


register(OpSpec(
    code=Op.MIRROR_PAD,
    forms=[Form("default", [arg("input", "T"), arg("paddings", C.TENSOR_INT32), arg("mode", C.INT32)],
                [arg("output", "T")])],
    type_cases=cases(7, "T", *DATA_TYPES),
    rules=[same_quant("input", "output"), ranks_agree("input", "output"), _paddings_shape,
           const_in("mode", {0, 1}, "is not a mirror pad mode (0 REFLECT, 1 SYMMETRIC)")],
    doc="output = input padded with its mirror image (REFLECT excludes the edge, SYMMETRIC repeats it)",
    infer=_infer_mirror_pad,
    value_dependent={"output": "its extents grow by the values of paddings, unknown when fed at run time"},
))
