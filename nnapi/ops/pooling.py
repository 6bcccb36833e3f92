"""2-D pooling (AVERAGE/MAX/L2_POOL_2D) and image resizing (RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR)."""
from __future__ import annotations

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .rules import rank_in, same_quant, window_fits, window_params
from .spec import Form, OpSpec, TypeCase, arg, cases, opt
from .geometry import const_int, image_input, join_image, scaled_size, window_out_or_0

_F32, _F16 = C.TENSOR_FLOAT32, C.TENSOR_FLOAT16
_Q8, _Q8S = C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED

# -- pooling ----------------------------------------------------------------------

_EXPLICIT = [arg("input", "T"),
             arg("pad_left", C.INT32), arg("pad_right", C.INT32),
             arg("pad_top", C.INT32), arg("pad_bottom", C.INT32),
             arg("stride_w", C.INT32), arg("stride_h", C.INT32),
             arg("filter_w", C.INT32), arg("filter_h", C.INT32),
             arg("fuse", C.INT32), opt("layout", C.BOOL, level=3, default=False)]
_IMPLICIT = [arg("input", "T"), arg("padding", C.INT32),
             arg("stride_w", C.INT32), arg("stride_h", C.INT32),
             arg("filter_w", C.INT32), arg("filter_h", C.INT32),
             arg("fuse", C.INT32), opt("layout", C.BOOL, level=3, default=False)]

_POOL_FORMS = [Form("explicit", _EXPLICIT, [arg("output", "T")]),
               Form("implicit", _IMPLICIT, [arg("output", "T")])]

_POOL_QUANT_CASES = [TypeCase(1, T=_F32), TypeCase(1, T=_Q8), TypeCase(3, T=_F16), TypeCase(4, T=_Q8S)]


def _keeps_batch_and_depth(v):
    """The 4-D output is [batches, out_height, out_width, depth] (NCHW layout: [batches, depth, ...]):
    batches and depth are the input's, where known."""
    inp, out = v.input("input"), v.output("output")
    if inp is None or out is None or len(inp.type.dimensions) != 4 or len(out.type.dimensions) != 4:
        return
    nchw = v.const("layout") if v.has("layout") else False
    if nchw is None:
        return
    for name, axis in (("batches", 0), ("depth", 1 if nchw else 3)):
        i, o = inp.type.dimensions[axis], out.type.dimensions[axis]
        if i and o and i != o:
            yield f"output {name} {o} differs from the input's {i}"


_POOL_SHAPE = [rank_in("input", [4]), rank_in("output", [4]), _keeps_batch_and_depth]


def _pool_infer(v):
    """[batches, out_height, out_width, depth] (NCHW: [batches, depth, ...]), each output extent
    the filter window's over the padded input (nnapi/ops/geometry.py)."""
    image = image_input(v)
    if image is None:
        return {}
    nchw, n, h, w, c = image
    padding = const_int(v, "padding")
    oh = window_out_or_0(h, const_int(v, "stride_h"), const_int(v, "filter_h"),
                         pads=_pool_pads(v, "pad_top", "pad_bottom", "filter_h"), padding=padding)
    ow = window_out_or_0(w, const_int(v, "stride_w"), const_int(v, "filter_w"),
                         pads=_pool_pads(v, "pad_left", "pad_right", "filter_w"), padding=padding)
    return {"output": join_image(n, oh, ow, c, nchw)}


def _pool_pads(v, before: str, after: str, filter_name: str):
    """Explicit (before, after) padding, None in the implicit form; (None, None) -- an unknown extent --
    when a padding is not smaller than the filter (window_params rejects that window)."""
    if v.form.name != "explicit":
        return None
    pads, size = (const_int(v, before), const_int(v, after)), const_int(v, filter_name)
    if None in pads or size is None or max(pads) >= size:
        return None, None
    return pads


def _pool(code, type_cases, doc):
    return register(OpSpec(
        code=code,
        forms=_POOL_FORMS,
        type_cases=type_cases,
        rules=[*_POOL_SHAPE, same_quant("input", "output"), window_params(pads_below_filter=True),
               window_fits(lambda v: (const_int(v, "filter_h"), const_int(v, "filter_w")))],
        infer=_pool_infer,
        doc=doc,
    ))


_pool(Op.AVERAGE_POOL_2D, _POOL_QUANT_CASES,
      "mean over each filter window (padding excluded from the count), then fuse")
_pool(Op.MAX_POOL_2D, _POOL_QUANT_CASES, "max over each filter window, then fuse")
_pool(Op.L2_POOL_2D, [TypeCase(1, T=_F32), TypeCase(3, T=_F16)],
      "sqrt(mean of squares) over each filter window, then fuse")


# -- resizing ---------------------------------------------------------------------
# The output size is two INT32 sizes, or (feature level 3) two float scales of
# the input tensor's float type (FLOAT32 for quantized inputs): type variable S.

_RESIZE_CASES = (
    [TypeCase(1, T=_F32, S=C.INT32), TypeCase(3, T=_F32, S=C.FLOAT32)]
    + cases(3, "S", C.INT32, C.FLOAT16, T=_F16)
    + cases(3, "S", C.INT32, C.FLOAT32, T=_Q8)
    + cases(4, "S", C.INT32, C.FLOAT32, T=_Q8S)
)


def _resize_args(layout_optional: bool) -> list:
    layout = opt("layout", C.BOOL, level=3, default=False) if layout_optional else arg("layout", C.BOOL)
    return [arg("input", "T"), arg("width", "S"), arg("height", "S"), layout,
            opt("align_corners", C.BOOL, level=4, default=False),
            opt("half_pixel_centers", C.BOOL, level=4, default=False)]


def _corner_flags(v):
    """align_corners and half_pixel_centers are mutually exclusive."""
    if v.const("align_corners") and v.const("half_pixel_centers"):
        yield "align_corners and half_pixel_centers cannot both be true"


def _resize_size_positive(v):
    """The output size (given, or the input's scaled) is positive, where known."""
    image = image_input(v)
    h, w = (image[2], image[3]) if image is not None else (0, 0)
    sizes = []
    for name, in_size in (("height", h), ("width", w)):
        value = v.const(name)
        if value is None or isinstance(value, bool):
            return
        if isinstance(value, int):
            sizes.append(value)
        elif in_size:
            sizes.append(scaled_size(in_size, value))
        else:
            return
    if min(sizes) <= 0:
        yield f"output size {sizes[0]}x{sizes[1]} must be positive"


def _resize_extent(v, name: str, in_size: int) -> int:
    """An INT32 output size as given, or floor(in_size x a float scale); 0 when unknown or not positive."""
    value = v.const(name)
    if value is None or isinstance(value, bool):
        return 0
    if isinstance(value, int):
        size = value
    elif not in_size:
        return 0
    else:
        size = scaled_size(in_size, value)
    return size if size > 0 else 0


def _resize_infer(v):
    """[batches, height, width, depth] (NCHW: [batches, depth, ...]) with the sizes given or scaled."""
    image = image_input(v)
    if image is None:
        return {}
    nchw, n, h, w, c = image
    return {"output": join_image(n, _resize_extent(v, "height", h), _resize_extent(v, "width", w), c, nchw)}


def _resize(code, layout_optional, doc):
    return register(OpSpec(
        code=code,
        forms=[Form("default", _resize_args(layout_optional), [arg("output", "T")])],
        type_cases=_RESIZE_CASES,
        rules=[*_POOL_SHAPE, same_quant("input", "output"), _corner_flags, _resize_size_positive],
        infer=_resize_infer,
        doc=doc,
    ))


_resize(Op.RESIZE_BILINEAR, True,
        "bilinear resize of the spatial dimensions to (height, width) sizes or scales")
_resize(Op.RESIZE_NEAREST_NEIGHBOR, False,
        "nearest-neighbor resize of the spatial dimensions to (height, width) sizes or scales")
