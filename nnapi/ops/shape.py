"""Tensor shape and data-movement operations: CONCATENATION, RESHAPE, SQUEEZE,
EXPAND_DIMS, TRANSPOSE, PAD, PAD_V2, SLICE, STRIDED_SLICE, SPLIT, TILE, GATHER,
DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND and
CHANNEL_SHUFFLE.

None of them computes new values (CONCATENATION may requantize), so unless the
NNAPI documentation says otherwise the output keeps the input's scale and zero
point. Output ranks follow from the input ranks (and from constant parameters:
SQUEEZE axes, STRIDED_SLICE shrink_axis_mask, the RESHAPE shape's length) and are
checked where known; constant axes must be in range. Value checks that need
run-time data (indices, block sizes, parameters fed at run time) are the
kernels' (executor/kernels/shape*.py).
"""
from __future__ import annotations

import numpy as np

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .base import (Form, OpSpec, TypeCase, arg, axes_in_range, known_rank, length_is_rank, length_of, opt,
                   output_rank, rank_at_most, rank_in, rank_of, same_quant, same_shape)

F32, F16, I32 = C.TENSOR_FLOAT32, C.TENSOR_FLOAT16, C.TENSOR_INT32
Q8, Q8S = C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED


def _types(base: int, *, i32: int | None = None) -> list[TypeCase]:
    """T = float32 and quant8 at the operation's level, float16 at 3, quant8 signed at 4 (the usual list)."""
    out = [TypeCase(base, T=F32), TypeCase(base, T=Q8), TypeCase(max(3, base), T=F16), TypeCase(4, T=Q8S)]
    if i32 is not None:
        out.append(TypeCase(i32, T=I32))
    return out


_IO = [arg("output", "T")]


def _op(code, inputs, types, rules=(), level_rules=(), doc="", outputs=None):
    return register(OpSpec(code=code, forms=[Form("default", inputs, outputs or _IO)], type_cases=types,
                           rules=list(rules), level_rules=list(level_rules), doc=doc))


def _ranks(*names, max_rank=4, exact=None):
    """Tensor rank limits: exactly `exact`, or 1..max_rank."""
    return [rank_in(n, [exact]) if exact else rank_at_most(n, max_rank) for n in names]


def _vectors(*names):
    """Parameter tensors (shape, perm, begin, ...) are 1-D."""
    return [rank_in(n, [1]) for n in names]


def _matrix(name):
    return rank_in(name, [2])


def _keeps_quant():
    """The output keeps input0's scale and zero point."""
    return [same_quant("input", "output")]


# -- level rules ------------------------------------------------------------------

def _concat_requantizes(v) -> int:
    """Quant8 inputs whose scale/zero point differ from the output's need feature level 3."""
    out = v.output("output")
    if out is None or out.type.code != Q8:
        return 1
    key = (out.type.scale, out.type.zero_point)
    return 3 if any((o.type.scale, o.type.zero_point) != key for o in v.inputs("inputs")) else 1


def _nonzero_pad_zero_point(v) -> int:
    """Before feature level 3 the quant8 pad value was undefined: only zero point 0 pads with logical zero."""
    inp = v.input("input")
    return 3 if inp is not None and inp.type.code == Q8 and inp.type.zero_point != 0 else 1


def _same_rank(name):
    def rule(v):
        ranks = {len(o.type.dimensions) for o in v.inputs(name) if o.type.dimensions}
        if len(ranks) > 1:
            yield f"{name} have different ranks {sorted(ranks)}"
    return rule


# -- output ranks -------------------------------------------------------------------
# (NNAPI documentation of each operation; None = not known from the model, not checked)

_OUTPUT_KEEPS_RANK = output_rank("output", rank_of("input"))


def _squeezed_rank(v):
    """SQUEEZE: the input's rank less the listed axes, or less every size-1 dimension when axes is
    omitted or empty (then every extent must be known); at least 1: squeezing every dimension gives
    shape [1] (CTS squeeze_b155238914)."""
    inp = v.input("input")
    rank = known_rank(inp)
    if rank is None:
        return None
    if v.has("axes"):
        axes = v.const("axes")
        if axes is None:
            return None
        axes = np.ravel(axes)
    else:
        axes = ()
    if len(axes):
        squeezed = {int(a) % rank for a in axes if -rank <= int(a) < rank}
        want = rank - len(squeezed)
    elif all(inp.type.dimensions):
        want = sum(1 for d in inp.type.dimensions if d != 1)
    else:
        return None
    return max(1, want)


def _strided_slice_rank(v):
    """STRIDED_SLICE: rank (n - k), k = the bits of shrink_axis_mask set among the n dimensions; at least 1:
    shrinking every dimension gives shape [1] (CTS strided_slice_b155662254)."""
    rank, mask = known_rank(v.input("input")), v.const("shrink_axis_mask")
    if rank is None or mask is None:
        return None
    return max(1, rank - (int(mask) & ((1 << rank) - 1)).bit_count())


def _gather_rank(v):
    """GATHER: an (n + k - 1)-D output for an n-D input and k-D indices."""
    n, k = known_rank(v.input("input")), known_rank(v.input("indices"))
    return None if n is None or not k else n + k - 1


# -- specs ----------------------------------------------------------------------------

_op(Op.CONCATENATION, [arg("inputs", "T", repeated=True), arg("axis", C.INT32)], _types(1),
    rules=[*_ranks("inputs", "output", max_rank=4), _same_rank("inputs"), output_rank("output", rank_of("inputs"))],
    level_rules=[_concat_requantizes],
    doc="output = inputs joined along axis; quant8 inputs are requantized to the output (level 3+)")

_op(Op.RESHAPE, [arg("input", "T"), arg("shape", I32)], _types(1, i32=6),
    rules=[*_ranks("input", "output", max_rank=4), *_vectors("shape"), output_rank("output", length_of("shape")),
           *_keeps_quant()],
    doc="same data, new shape; one shape entry may be -1")

_op(Op.SQUEEZE, [arg("input", "T"), opt("axes", I32, omittable=True)], _types(2),
    rules=[*_ranks("input", max_rank=4), *_vectors("axes"), axes_in_range("input", "axes"),
           output_rank("output", _squeezed_rank), *_keeps_quant()],
    doc="drops the listed size-1 dimensions (all of them when axes is omitted or empty)")

_op(Op.EXPAND_DIMS, [arg("input", "T"), arg("axis", C.INT32)], _types(3, i32=3),
    rules=[axes_in_range("input", "axis", extra=1), output_rank("output", rank_of("input", 1)), *_keeps_quant()],
    doc="inserts a size-1 dimension at axis in [-(n+1), n+1)")

_op(Op.TRANSPOSE, [arg("input", "T"), opt("perm", I32, omittable=True)], _types(2),
    rules=[*_ranks("input", "output", max_rank=4), *_vectors("perm"), length_is_rank("perm"), _OUTPUT_KEEPS_RANK,
           *_keeps_quant()],
    doc="permutes dimensions (reverses them when perm is omitted)")

_op(Op.PAD, [arg("input", "T"), arg("paddings", I32)], _types(2),
    rules=[*_ranks("input", "output", max_rank=4), _matrix("paddings"), length_is_rank("paddings"), _OUTPUT_KEEPS_RANK,
           *_keeps_quant()],
    level_rules=[_nonzero_pad_zero_point],
    doc="pads with the logical zero (the zero point for quant8)")

_op(Op.PAD_V2, [arg("input", "T"), arg("paddings", I32), arg("pad_value", "P")],
    [TypeCase(3, T=F32, P=C.FLOAT32), TypeCase(3, T=F16, P=C.FLOAT16), TypeCase(3, T=Q8, P=C.INT32),
     TypeCase(4, T=Q8S, P=C.INT32)],
    rules=[*_ranks("input", "output", max_rank=4), _matrix("paddings"), length_is_rank("paddings"), _OUTPUT_KEEPS_RANK,
           *_keeps_quant()],
    doc="pads with pad_value (a stored quantized integer for quant8 tensors)")

_op(Op.SLICE, [arg("input", "T"), arg("begin", I32), arg("size", I32)], _types(3, i32=3),
    rules=[*_vectors("begin", "size"), length_is_rank("begin"), length_is_rank("size"), _OUTPUT_KEEPS_RANK,
           *_keeps_quant()],
    doc="input[begin : begin + size] per dimension; size -1 means to the end")

_op(Op.STRIDED_SLICE,
    [arg("input", "T"), arg("begin", I32), arg("end", I32), arg("strides", I32),
     arg("begin_mask", C.INT32), arg("end_mask", C.INT32), arg("shrink_axis_mask", C.INT32)], _types(2),
    rules=[*_ranks("input", "output", max_rank=4), *_vectors("begin", "end", "strides"),
           *(length_is_rank(n) for n in ("begin", "end", "strides")), output_rank("output", _strided_slice_rank),
           *_keeps_quant()],
    doc="strided slice with begin/end/shrink-axis masks (TFLite semantics)")

_op(Op.SPLIT, [arg("input", "T"), arg("axis", C.INT32), arg("num_splits", C.INT32)], _types(3, i32=3),
    outputs=[arg("outputs", "T", repeated=True)],
    rules=[axes_in_range("input", "axis"), output_rank("outputs", rank_of("input")), same_quant("input", "outputs")],
    doc="splits along axis into num_splits equal parts")

_op(Op.TILE, [arg("input", "T"), arg("multiples", I32)], _types(3, i32=3),
    rules=[*_vectors("multiples"), length_is_rank("multiples"), _OUTPUT_KEEPS_RANK, *_keeps_quant()],
    doc="repeats the input multiples[i] times along dimension i")

_op(Op.GATHER, [arg("input", "T"), arg("axis", C.INT32), arg("indices", I32)], _types(3, i32=3),
    rules=[axes_in_range("input", "axis"), output_rank("output", _gather_rank), *_keeps_quant()],
    doc="input.take(indices, axis); out-of-range indices fail")

_LAYOUT = opt("layout", C.BOOL, level=3)

_op(Op.DEPTH_TO_SPACE, [arg("input", "T"), arg("block_size", C.INT32), _LAYOUT], _types(1),
    rules=[*_ranks("input", "output", exact=4), *_keeps_quant()],
    doc="moves depth blocks of block_size x block_size into space")

_op(Op.SPACE_TO_DEPTH, [arg("input", "T"), arg("block_size", C.INT32), _LAYOUT], _types(1),
    rules=[*_ranks("input", "output", exact=4), *_keeps_quant()],
    doc="moves block_size x block_size spatial blocks into depth")

_op(Op.BATCH_TO_SPACE_ND, [arg("input", "T"), arg("block_shape", I32), _LAYOUT], _types(2),
    rules=[*_ranks("input", "output", exact=4), *_vectors("block_shape"), *_keeps_quant()],
    doc="moves batch blocks into the spatial dimensions (no crops)")

_op(Op.SPACE_TO_BATCH_ND, [arg("input", "T"), arg("block_shape", I32), arg("paddings", I32), _LAYOUT],
    _types(2), rules=[*_ranks("input", "output", exact=4), *_vectors("block_shape"), _matrix("paddings"),
                      *_keeps_quant()],
    level_rules=[_nonzero_pad_zero_point],
    doc="pads the spatial dimensions (logical zero) and moves spatial blocks into the batch")

_op(Op.CHANNEL_SHUFFLE, [arg("input", "T"), arg("num_groups", C.INT32), arg("axis", C.INT32)], _types(3),
    rules=[*_ranks("input", "output", max_rank=4), axes_in_range("input", "axis"), same_shape("input", "output"),
           *_keeps_quant()],
    doc="output[k * groups + g] = input[g * group_size + k] along axis")
