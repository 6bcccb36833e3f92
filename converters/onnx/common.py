"""What the ONNX op converters share: registration, attribute access, spatial
padding and quantized-operand helpers."""
from __future__ import annotations

import functools

import numpy as np
import onnx

from nnapi import OperandCode as C, PaddingCode
from nnapi.bias_scale import bias_scale
from nnapi.ops.geometry import implicit_padding

from ..registry import REGISTRY, Reason, Unsupported, converter
from ..pins import pin_hint

OPSET_MAX = onnx.defs.onnx_opset_version()  # the newest opset the installed onnx package knows
MS_DOMAIN_VERSIONS = (1, 1)                  # com.microsoft contrib ops (QLinearAdd, ...)


STANDARD_DOMAINS = ("", "ai.onnx")
MS_DOMAIN = "com.microsoft"


def _domains(versions) -> tuple:
    """The domains a converter registered at `versions` serves (com.microsoft ops use MS_DOMAIN_VERSIONS)."""
    return (MS_DOMAIN,) if tuple(versions) == MS_DOMAIN_VERSIONS else STANDARD_DOMAINS


def accepted(node) -> bool:
    """Whether node's op, domain and opset have a converter (what the driver checks before converting);
    the fusion plans only pair nodes that pass this."""
    conv = REGISTRY.get(("onnx", node.op))
    return (conv is not None and conv.accepts(node.version)
            and (node.domain or "") in _domains((conv.min_version, conv.max_version)))


@functools.lru_cache(maxsize=None)
def required_attributes(op: str, version: int, domain: str) -> tuple:
    """The attributes the ONNX schema of op (at that opset) requires; () when onnx has no schema for it."""
    try:
        schema = onnx.defs.get_schema(op, version, domain)
    except onnx.defs.SchemaError:
        return ()
    return tuple(sorted(n for n, a in schema.attributes.items() if a.required))


def onnx_op(*ops: str, versions: tuple = (7, OPSET_MAX)):
    """Register `fn(node, ctx)` for ONNX `ops` at opsets `versions` (inclusive); the context applies the
    layout and fusion plans around it (OnnxContext.convert_node)."""
    domains = _domains(versions)

    def deco(fn):
        @functools.wraps(fn)
        def run(node, ctx):
            if (node.domain or "") not in domains:  # e.g. a "Conv" of another vendor's domain
                raise Unsupported(Reason.UNSUPPORTED_OPERATOR, f"{node.label()}: {node.op} of domain "
                                                               f"{node.domain!r} has no NNAPI converter")
            missing = [a for a in required_attributes(node.op, node.version, node.domain or "")
                       if a not in node.attrs]
            if missing:
                raise Unsupported(Reason.INVALID, f"{node.label()}: required attribute(s) {', '.join(missing)} "
                                                  f"missing")
            ctx.convert_node(node, fn)
        converter("onnx", *ops, versions=versions)(run)
        return fn
    return deco


def ints(node, name: str, default=None) -> list:
    v = node.attrs.get(name, default)
    return [int(x) for x in v] if v is not None else None


def known_rank(ctx, node, i: int) -> tuple:
    """Tensor i's shape (0 for unknown extents); Unsupported when even its rank is unknown (an axis cannot be
    placed)."""
    shape = ctx.source_shape(i)
    if not shape:  # (rank 0 reads as [1])
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: tensor {ctx.tensor(i).name!r} has an unknown rank "
                                                f"({pin_hint()})")
    return tuple(shape)


def axis_attr(ctx, node, i: int, default: int, name: str = "axis") -> int:
    """Attribute `name` of node as an axis of tensor i, in 0..rank-1 (INVALID when out of range)."""
    rank = len(known_rank(ctx, node, i))
    axis = int(node.attrs.get(name, default))
    if not -max(rank, 1) <= axis < max(rank, 1):
        raise Unsupported(Reason.INVALID, f"{node.label()}: {name} {axis} is out of range for rank {rank}")
    return axis % max(rank, 1)


def axes_of(ctx, node, i: int, axes, what: str = "axes") -> list:
    """ONNX axes of tensor i normalised to 0..rank-1, sorted and distinct (INVALID when out of range)."""
    rank = len(known_rank(ctx, node, i))
    if any(not -rank <= a < rank for a in axes):
        raise Unsupported(Reason.INVALID, f"{node.label()}: {what} {list(axes)} out of range for rank {rank}")
    return sorted({a % rank for a in axes})


def const_ints(ctx, node, k: int, what: str, default=None):
    """Integer list from constant input k (absent: default)."""
    i = node.inputs[k] if k < len(node.inputs) else -1
    if i < 0:
        return default
    return [int(x) for x in np.asarray(ctx.const_value(i, what)).ravel()]


def rank_of(ctx, i: int, ranks=(4,), what: str = "input") -> int:
    shape = ctx.source_shape(i)
    if len(shape) not in ranks:
        raise Unsupported(Reason.RANK, f"{what} {ctx.tensor(i).name!r} has rank {len(shape)}, "
                                       f"NNAPI needs {' or '.join(map(str, ranks))}")
    return len(shape)


def explicit_pads(ctx, node, x: int, y: int, kernel, strides, dilations=(1, 1)) -> tuple:
    """(top, bottom, left, right, grown) pads of a 2-D window op; the end pads are grown until the floor
    formula gives the output size ONNX infers (how ceil_mode is honoured; grown tells it happened)."""
    auto = node.attrs.get("auto_pad", "NOTSET")
    (_, _, h, w), out = ctx.source_shape(x), ctx.source_shape(y)
    k_eff = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    if not (h and w):
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: padding {auto} needs the input's height and "
                                                f"width ({pin_hint('them')})")
    if auto in ("SAME_UPPER", "SAME_LOWER"):  # NNAPI's SAME puts the odd row last, as SAME_UPPER does
        pads = [implicit_padding(size, s, k, PaddingCode.SAME)[:2] for size, k, s in zip((h, w), k_eff, strides)]
        (pt, pb), (pl, pr) = pads if auto == "SAME_UPPER" else [(b, a) for a, b in pads]
    elif auto == "VALID":
        pt = pb = pl = pr = 0
    elif auto == "NOTSET":
        p = ints(node, "pads", [0, 0, 0, 0])
        if len(p) != 4:
            raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: pads {p} is not 2-D")
        pt, pl, pb, pr = p
    else:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: auto_pad {auto!r}")
    oh, ow = (out[2], out[3]) if len(out) == 4 else (0, 0)
    if not (oh and ow):
        if node.attrs.get("ceil_mode", 0):
            raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: ceil_mode needs the output size")
        return pt, pb, pl, pr, False
    gb = max((oh - 1) * strides[0] + k_eff[0] - (h + pt + pb), 0)
    gr = max((ow - 1) * strides[1] + k_eff[1] - (w + pl + pr), 0)
    return pt, pb + gb, pl, pr + gr, bool(gb or gr)


def spatial_padding(ctx, node, x: int, y: int, kernel, strides, dilations=(1, 1)) -> dict:
    """emit_form arguments for the padding of a 2-D window op: the implicit SAME/VALID code when it is
    exactly what the node computes, else explicit pads."""
    auto = node.attrs.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "VALID") and not node.attrs.get("ceil_mode", 0):
        # NNAPI SAME puts the odd pixel at the end too; it also works with unknown sizes
        return {"padding": ctx.i32(PaddingCode.SAME if auto == "SAME_UPPER" else PaddingCode.VALID)}
    pt, pb, pl, pr, _ = explicit_pads(ctx, node, x, y, kernel, strides, dilations)
    (_, _, h, w) = ctx.source_shape(x)
    same = []
    for size, k, d, s, (a, b) in zip((h, w), kernel, dilations, strides, ((pt, pb), (pl, pr))):
        same.append((a, b) == implicit_padding(size, s, k, PaddingCode.SAME, d)[:2])
    if all(same):
        return {"padding": ctx.i32(PaddingCode.SAME)}
    if pt == pb == pl == pr == 0:  # NNAPI VALID: ceil((size - k + 1) / s) == floor((size - k) / s) + 1
        return {"padding": ctx.i32(PaddingCode.VALID)}
    return {"pad_left": ctx.i32(pl), "pad_right": ctx.i32(pr), "pad_top": ctx.i32(pt), "pad_bottom": ctx.i32(pb)}


def form_of(padding: dict) -> str:
    return "implicit" if "padding" in padding else "explicit"


def bias_operand(ctx, b: int, n: int, x: int, w: int) -> int:
    """The bias operand of input x and weights w: tensor b, or n zeros when b is absent (int32 with
    scale x_scale * w_scale when quantized; 0 for per-channel weights, whose scales imply it)."""
    if b >= 0:
        return ctx.operand(b)
    xq, wq, name = ctx.tensor(x).quant, ctx.tensor(w).quant, f"{ctx.tensor(w).name}/zero_bias"
    if xq is None:
        return ctx.const(np.zeros(n, np.float32), name=name)
    scale = 0.0 if wq.per_channel else bias_scale(xq.scale, wq.scale)
    return ctx.const(np.zeros(n, np.int32), C.TENSOR_INT32, name=name, scale=scale)
