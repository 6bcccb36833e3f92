"""Elementwise unary math, CAST, QUANTIZE and DEQUANTIZE.

Also home of what this family's other spec modules (activation.py,
compare.py) share: the `same_shape` and `broadcastable` rules, the one-input
form and the `unary` spec builder.
"""
from __future__ import annotations

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .base import Form, OpSpec, TypeCase, arg, cases, rank_at_most

F32, F16, I32 = C.TENSOR_FLOAT32, C.TENSOR_FLOAT16, C.TENSOR_INT32
Q8, Q8S = C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED

UNARY_FORM = Form("default", [arg("input", "T")], [arg("output", "T")])


def same_shape(*names: str):
    """Operands whose dimensions are all known must agree (elementwise ops keep the shape)."""
    def rule(v):
        ops = [(n, o) for n in names for o in v.inputs(n) + v.outputs(n) if o is not None]
        known = [(n, o.type.dimensions) for n, o in ops if o.type.dimensions]
        for (n1, d1), (n2, d2) in zip(known, known[1:]):
            if len(d1) != len(d2) or any(a and b and a != b for a, b in zip(d1, d2)):
                yield f"{n1} has shape {list(d1)} but {n2} has shape {list(d2)}"
                return
    return rule


def broadcastable(*names: str):
    """Known input dimensions must be numpy-broadcast compatible (0 = unknown extent, not checked)."""
    def rule(v):
        shapes = [(n, o.type.dimensions) for n in names for o in v.inputs(n) if o is not None]
        shapes = [(n, d) for n, d in shapes if d]
        for axis in range(1, max((len(d) for _, d in shapes), default=0) + 1):
            sizes = {d[-axis] for _, d in shapes if len(d) >= axis} - {0, 1}
            if len(sizes) > 1:
                yield ("shapes " + ", ".join(f"{n} {list(d)}" for n, d in shapes)
                       + " do not broadcast")
                return
    return rule


def unary(code, type_cases, rules=(), doc="", max_rank=None):
    """A one-input, same-type, same-shape elementwise operation."""
    base_rules = [same_shape("input", "output")]
    if max_rank:
        base_rules.append(rank_at_most("input", max_rank))
    return register(OpSpec(code=code, forms=[UNARY_FORM], type_cases=type_cases,
                           rules=base_rules + list(rules), doc=doc))


_FLOATS = [TypeCase(3, T=F32), TypeCase(3, T=F16)]

unary(Op.FLOOR, [TypeCase(1, T=F32), TypeCase(3, T=F16)], max_rank=4, doc="output = floor(input)")
unary(Op.ABS, _FLOATS + [TypeCase(4, T=I32)], doc="output = |input|")
unary(Op.NEG, _FLOATS + [TypeCase(3, T=I32)], doc="output = -input")
unary(Op.EXP, _FLOATS, doc="output = exp(input)")
unary(Op.LOG, _FLOATS, doc="output = log(input)")
unary(Op.SIN, _FLOATS, doc="output = sin(input)")
unary(Op.SQRT, _FLOATS, doc="output = sqrt(input)")
unary(Op.RSQRT, _FLOATS + [TypeCase(7, T=Q8), TypeCase(7, T=Q8S)],
      doc="output = 1 / sqrt(input); quantized inputs (feature level 7) requantize to the output's scale")

register(OpSpec(
    code=Op.POW,
    forms=[Form("default", [arg("base", "T"), arg("exponent", "T")], [arg("output", "T")])],
    type_cases=_FLOATS,
    rules=[broadcastable("base", "exponent")],
    doc="output = base ** exponent, numpy-style broadcasting",
))

# CAST: any pair among the four base types since level 3; identity casts of
# the other types since level 4. Quantized operands are cast as raw integers.
_CAST_BASE = (F16, F32, I32, Q8)
_CAST_IDENTITY_L4 = (C.TENSOR_BOOL8, C.TENSOR_QUANT16_ASYMM, C.TENSOR_QUANT16_SYMM, Q8S, C.TENSOR_QUANT8_SYMM)
register(OpSpec(
    code=Op.CAST,
    forms=[Form("default", [arg("input", "T")], [arg("output", "U")])],
    type_cases=[TypeCase(3, T=a, U=b) for a in _CAST_BASE for b in _CAST_BASE]
    + [TypeCase(4, T=c, U=c) for c in _CAST_IDENTITY_L4],
    rules=[same_shape("input", "output")],
    doc="output = input converted to the output type (ignoring scale and zero point); "
        "float -> integer truncates toward zero and saturates",
))

register(OpSpec(
    code=Op.QUANTIZE,
    forms=[Form("default", [arg("input", "T")], [arg("output", "U")])],
    type_cases=cases(3, "T", F32, F16, U=Q8) + cases(4, "T", F32, F16, U=Q8S),
    rules=[same_shape("input", "output")],
    doc="output = clamp(round(input / scale) + zeroPoint), rounding half away from zero",
))

register(OpSpec(
    code=Op.DEQUANTIZE,
    forms=[Form("default", [arg("input", "T")], [arg("output", "U")])],
    type_cases=[TypeCase(1, T=Q8, U=F32)]
    + [TypeCase(3, T=t, U=u) for t in (Q8, C.TENSOR_QUANT8_SYMM, C.TENSOR_QUANT8_SYMM_PER_CHANNEL)
       for u in (F32, F16)]
    + cases(4, "U", F32, F16, T=Q8S),
    rules=[same_shape("input", "output"), rank_at_most("input", 4)],
    doc="output = (input - zeroPoint) * scale (per channel for TENSOR_QUANT8_SYMM_PER_CHANNEL)",
))
