"""The shared rules of the operation specs: `rule(view) -> problem strings` over the concrete operands
(quantization, ranks, broadcasting, constant parameters). They check only what is known: a 0 extent
is unknown, and a tensor without dimensions has an unknown rank; either passes."""
from __future__ import annotations

from typing import Callable, Iterable, Optional

import numpy as np

from ..bias_scale import bias_scale as bias_scale_product, bias_scale_matches
from ..codes import FuseCode, OperandCode, PaddingCode
from .geometry import const_int, explicit_out_size, image_input, implicit_padding
from .inference import broadcast_extent
from .spec import OpView, Rule

# -- shared rules ---------------------------------------------------------------

def same_quant(*names: str) -> Rule:
    """The named quantized operands must share scale and zero point."""
    def rule(v: OpView):
        ops = [(n, o) for n in names for o in v.inputs(n) + v.outputs(n) if o is not None and not o.is_omitted]
        ops = [(n, o) for n, o in ops if o.type.code in _QUANT8]
        if len({(o.type.scale, o.type.zero_point) for _, o in ops}) > 1:
            yield ("scale/zero point must match: " +
                   ", ".join(f"{n} scale={o.type.scale:g} zp={o.type.zero_point}" for n, o in ops))
    return rule


_QUANT8 = frozenset({OperandCode.TENSOR_QUANT8_ASYMM, OperandCode.TENSOR_QUANT8_ASYMM_SIGNED})


def bias_scale(input_name="input", filter_name="filter", bias_name="bias") -> Rule:
    """Quantized bias: zero point 0 and scale == input scale x filter scale (per channel when the filter is)."""
    def rule(v: OpView):
        inp, flt, bias = v.input(input_name), v.input(filter_name), v.input(bias_name)
        if inp is None or flt is None or bias is None or inp.type.code not in _QUANT8:
            return
        if bias.type.zero_point != 0:
            yield f"{bias_name} zero point must be 0, got {bias.type.zero_point}"
        if flt.type.code == OperandCode.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            return  # per-channel bias scales are implied by the filter's channel scales
        if not bias_scale_matches(bias.type.scale, inp.type.scale, flt.type.scale):  # huge scales: inf, reported
            yield (f"{bias_name} scale {bias.type.scale:g} must equal {input_name} scale x {filter_name} scale "
                   f"= {bias_scale_product(inp.type.scale, flt.type.scale):g}")
    return rule


def rank_in(name: str, ranks: Iterable[int]) -> Rule:
    allowed = tuple(ranks)

    def rule(v: OpView):
        for o in v.inputs(name) + v.outputs(name):
            if o is None or o.is_omitted or o.type.dimensions is None:
                continue
            r = len(o.type.dimensions)
            if r and r not in allowed:
                yield f"{name} has rank {r}, expected one of {list(allowed)}"
    return rule


def rank_at_most(name: str, max_rank: int) -> Rule:
    return rank_in(name, range(1, max_rank + 1))


def fixed_output_quant(out_name: str, by_code: dict) -> Rule:
    """Output quantization fixed per type, e.g. LOGISTIC: uint8 scale 1/256 zp 0."""
    def rule(v: OpView):
        o = v.output(out_name)
        if o is None or o.type.code not in by_code:
            return
        scale, zp = by_code[o.type.code]
        if abs(o.type.scale - scale) > 1e-9 or o.type.zero_point != zp:
            yield (f"{out_name} of type {o.type.code.name} must have scale {scale:g} and zero point {zp}, "
                   f"got scale {o.type.scale:g} zero point {o.type.zero_point}")
    return rule


# -- shared shape rules ---------------------------------------------------------------
# Every shape rule checks only what is known: a 0 extent is unknown, and a tensor
# without dimensions has an unknown rank; either passes.

def known_rank(operand) -> Optional[int]:
    """The rank of an operand when it is known (0 for scalars), else None (absent, omitted, unknown rank)."""
    if operand is None or operand.is_omitted:
        return None
    return operand.type.rank


def rank_of(name: str, delta: int = 0) -> Callable[[OpView], Optional[int]]:
    """For output_rank: the known rank of input `name` (the first of a repeated list whose rank is
    known) plus `delta`, or None."""
    def rank(v: OpView):
        for o in v.inputs(name):
            r = known_rank(o)
            if r is not None:
                return r + delta
        return None
    return rank


def length_of(name: str) -> Callable[[OpView], Optional[int]]:
    """For output_rank: the known length (first extent) of the 1-D (or [n, 2]) input `name`, or None."""
    def length(v: OpView):
        o = v.input(name)
        if o is None or not o.type.dimensions or not o.type.dimensions[0]:
            return None
        return o.type.dimensions[0]
    return length


def axes_in_range(input_name: str, axes_name: str, extra: int = 0) -> Rule:
    """Constant axes must lie in [-rank, rank) of the input (when its rank is known); `extra` widens
    the range for operations that insert a dimension (EXPAND_DIMS: [-(n + 1), n + 1))."""
    def rule(v):
        rank, axes = known_rank(v.input(input_name)), v.const(axes_name)
        if rank is None or axes is None:
            return
        n = rank + extra
        bad = [int(a) for a in np.ravel(axes) if not -n <= int(a) < n]
        if bad:
            yield f"{axes_name} {bad} out of range [-{n}, {n}) for a rank-{rank} {input_name}"
    return rule


def output_rank(out_name: str, expected) -> Rule:
    """Every operand named `out_name` has rank `expected` (an int, or a function of the view giving the
    rank or None when it cannot be known), when its rank is known."""
    def rule(v):
        want = expected(v) if callable(expected) else expected
        if want is None:
            return
        for o in v.outputs(out_name):
            r = known_rank(o)
            if r is not None and r != want:
                yield f"{out_name} has rank {r}, expected {want}"
    return rule


def output_ranks(**ranks) -> list:
    """output_rank rules for several outputs with fixed ranks."""
    return [output_rank(name, r) for name, r in ranks.items()]


def rank_at_least(name: str, low: int) -> Rule:
    def rule(v):
        rank = known_rank(v.input(name))
        if rank is not None and rank < low:
            yield f"{name} has rank {rank}, expected at least {low}"
    return rule


def length_is_rank(vector_name: str, input_name: str = "input") -> Rule:
    """A parameter tensor with one entry (or row) per input dimension (SLICE begin/size, TILE multiples,
    TRANSPOSE perm, PAD paddings): its first extent equals the input's rank, when both are known."""
    def rule(v):
        rank, length = known_rank(v.input(input_name)), length_of(vector_name)(v)
        if rank is not None and length is not None and rank != length:
            yield f"{vector_name} has {length} entries, expected one per dimension of the rank-{rank} {input_name}"
    return rule


def same_shape(*names: str) -> Rule:
    """Operands whose dimensions are all known must agree (elementwise ops keep the shape)."""
    def rule(v):
        ops = [(n, o) for n in names for o in v.inputs(n) + v.outputs(n) if o is not None and not o.is_omitted]
        known = [(n, o.type.dimensions) for n, o in ops if o.type.dimensions]
        for (n1, d1), (n2, d2) in zip(known, known[1:]):
            if len(d1) != len(d2) or any(a and b and a != b for a, b in zip(d1, d2)):
                yield f"{n1} has shape {list(d1)} but {n2} has shape {list(d2)}"
                return
    return rule


def broadcast_output(a: str, b: str, out: str = "output") -> Rule:
    """Inputs `a` and `b` broadcast against each other (numpy rules, aligned from the last dimension)
    and output `out` has the broadcast shape: its rank is the larger input rank and every extent that
    is known matches. Unknown extents (0) and unknown ranks pass."""
    def rule(v):
        x, y = v.input(a), v.input(b)
        if x is None or y is None or not x.type.dimensions or not y.type.dimensions:
            return
        dx, dy = x.type.dimensions, y.type.dimensions
        rank = max(len(dx), len(dy))
        px, py = (1,) * (rank - len(dx)) + dx, (1,) * (rank - len(dy)) + dy
        expected = [broadcast_extent(p, q) for p, q in zip(px, py)]
        if None in expected:
            yield f"{a} {list(dx)} and {b} {list(dy)} do not broadcast"
            return
        for o in v.outputs(out):
            do = o.type.dimensions
            if do and (len(do) != rank or any(e and d and e != d for e, d in zip(expected, do))):
                yield (f"{out} has shape {list(do)}, the broadcast shape of {a} {list(dx)} and {b} {list(dy)} "
                       f"is {['?' if not e else e for e in expected]}")
    return rule


# -- constant window parameters (convolutions, pools) -------------------------------------------

_POSITIVE = ("stride_w", "stride_h", "filter_w", "filter_h", "dilation_w", "dilation_h")
_PADS = ("pad_left", "pad_right", "pad_top", "pad_bottom")


def window_params(non_negative=_PADS, pads_below_filter: bool = False) -> Rule:
    """Window parameters (constants at finish(), scalars fed at run time before the kernel runs):
    strides, filter sizes and dilations positive, the paddings in `non_negative` not negative, a SAME (1) or VALID (2) padding
    code, a valid fuse code; with `pads_below_filter` (the pools) each explicit padding smaller than
    the filter along its axis, so that every window holds an input element."""
    def rule(v: OpView):
        for name in _POSITIVE:
            value = v.const(name)
            if value is not None and value <= 0:
                yield f"{name} must be positive, got {value}"
        for name in non_negative:
            value = v.const(name)
            if value is not None and value < 0:
                yield f"{name} must not be negative, got {value}"
        if v.has("padding") and v.const("padding") not in (None, PaddingCode.SAME, PaddingCode.VALID):
            yield f"padding must be SAME (1) or VALID (2), got {v.const('padding')}"
        if v.const("fuse") not in (None, *FuseCode):
            yield f"invalid fuse code {v.const('fuse')}"
        if pads_below_filter:
            for pads, size in ((("pad_left", "pad_right"), "filter_w"), (("pad_top", "pad_bottom"), "filter_h")):
                filter_size = v.const(size)
                too_big = [f"{n} {v.const(n)}" for n in pads if filter_size is not None
                           and v.const(n) is not None and v.const(n) >= filter_size]
                if too_big:
                    yield f"{' and '.join(too_big)} must be smaller than {size} {filter_size}"
    return rule


def window_fits(filter_hw: Callable[[OpView], tuple]) -> Rule:
    """The (dilated) window of size `filter_hw(view)` (height, width; None where unknown) fits the padded
    input: every output extent is at least 1, where the input size, the window and the padding are
    known (a window over padding only has nothing to read)."""
    def rule(v: OpView):
        image = image_input(v)
        if image is None:
            return
        _, _, h, w, _ = image
        kh, kw = filter_hw(v)
        oh = _window_extent(v, h, kh, "h", ("pad_top", "pad_bottom"))
        ow = _window_extent(v, w, kw, "w", ("pad_left", "pad_right"))
        if (oh is not None and oh <= 0) or (ow is not None and ow <= 0):
            yield (f"the {kh or '?'}x{kw or '?'} filter does not fit the padded {h or '?'}x{w or '?'} input "
                   f"(output {'?' if oh is None else oh}x{'?' if ow is None else ow})")
    return rule


def _window_extent(v: OpView, size, k, axis: str, pad_names) -> Optional[int]:
    """One output extent of a window operation, None when anything it needs is unknown or invalid (the
    other rules report invalid parameters)."""
    stride, dilation = const_int(v, f"stride_{axis}"), const_int(v, f"dilation_{axis}", 1)
    if not all(isinstance(x, int) and x > 0 for x in (size, k, stride, dilation)):
        return None
    if v.form.name == "explicit":
        pads = [const_int(v, n) for n in pad_names]
        if not all(isinstance(p, int) and p >= 0 for p in pads):
            return None
        return explicit_out_size(size, stride, k, *pads, dilation)
    padding = const_int(v, "padding")
    if padding not in (PaddingCode.SAME, PaddingCode.VALID):
        return None
    return implicit_padding(size, stride, k, padding, dilation)[2]


# -- shared by several families -------------------------------------------------------------

def dims_fit(dims: tuple, expected: tuple) -> bool:
    """Declared `dims` (0 = unknown, empty = unknown rank) fit `expected` (None entries = anything)."""
    if not dims:
        return True
    return len(dims) == len(expected) and all(d == 0 or e is None or d == e for d, e in zip(dims, expected))


def ranks_agree(a: str, b: str, delta: int = 0) -> Rule:
    """rank(b) == rank(a) + delta for every operand named `a` and `b`, when both are known."""
    def rule(v):
        for x in v.inputs(a) + v.outputs(a):
            for y in v.inputs(b) + v.outputs(b):
                rx, ry = known_rank(x), known_rank(y)
                if rx is not None and ry is not None and ry != rx + delta:
                    yield f"{b} has rank {ry}, expected rank of {a} ({rx}){f' + {delta}' if delta else ''}"
    return rule


def const_in(name: str, allowed, what: str) -> Rule:
    """A constant scalar argument must be one of `allowed` (a set or a function of the view)."""
    def rule(v):
        value = v.const(name)
        ok = allowed(v) if callable(allowed) else allowed
        if value is not None and ok is not None and int(value) not in ok:
            yield f"{name} {value} {what}"
    return rule
