"""Normalization and softmax: L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION,
INSTANCE_NORMALIZATION, SOFTMAX, LOG_SOFTMAX.

Each output has the shape of its input (NNAPI: "Outputs: 0: A tensor of the same
OperandCode and same shape as input0")."""
from __future__ import annotations

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .inference import infer_same_as
from .rules import axes_in_range, fixed_output_quant, rank_at_most, rank_in, same_shape
from .spec import Form, OpSpec, TypeCase, arg, opt

_F32, _F16 = C.TENSOR_FLOAT32, C.TENSOR_FLOAT16
_Q8, _Q8S = C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED

# Float scalars (beta, alpha, epsilon, ...) follow the tensor: FLOAT16 for
# float16 tensors, FLOAT32 otherwise (type variable S).
_FLOAT_CASES = [TypeCase(1, T=_F32, S=C.FLOAT32), TypeCase(3, T=_F16, S=C.FLOAT16)]

_KEEPS_SHAPE = same_shape("input", "output")
_INFER = infer_same_as("input")   # the output has the input's shape


# from this level L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION and SOFTMAX take any rank up to 4 (and an axis)
ANY_RANK_LEVEL = 3


def _level3_unless_axis_or_rank(*ranks: int):
    """Feature levels 1-2 define these operations only along the last axis of inputs of
    the given ranks (0: unknown rank); an axis input or another rank needs ANY_RANK_LEVEL."""
    def level(v) -> int:
        if v.has("axis"):
            return 1
        inp = v.input("input")
        return ANY_RANK_LEVEL if inp is not None and len(inp.type.dimensions) not in ranks else 1
    return level


def _positive(name: str):
    def rule(v):
        value = v.const(name)
        if value is not None and not value > 0:
            yield f"{name} must be positive, got {value}"
    return rule


register(OpSpec(
    code=Op.L2_NORMALIZATION,
    forms=[Form("default", [arg("input", "T"), opt("axis", C.INT32, level=3, default=-1)], [arg("output", "T")])],
    type_cases=[TypeCase(1, T=_F32), TypeCase(3, T=_F16), TypeCase(3, T=_Q8), TypeCase(4, T=_Q8S)],
    rules=[rank_at_most("input", 4), _KEEPS_SHAPE,
           fixed_output_quant("output", {_Q8: (1.0 / 128, 128), _Q8S: (1.0 / 128, 0)})],
    level_rules=[_level3_unless_axis_or_rank(4)],
    infer=_INFER,
    doc="output = input / sqrt(sum(input^2 along axis)), default axis -1",
))

register(OpSpec(
    code=Op.LOCAL_RESPONSE_NORMALIZATION,
    forms=[Form("default", [arg("input", "T"), arg("radius", C.INT32), arg("bias", "S"), arg("alpha", "S"),
                            arg("beta", "S"), opt("axis", C.INT32, level=3, default=-1)], [arg("output", "T")])],
    type_cases=_FLOAT_CASES,
    rules=[rank_at_most("input", 4), _KEEPS_SHAPE],
    level_rules=[_level3_unless_axis_or_rank(4)],
    infer=_INFER,
    doc="output = input / (bias + alpha * sum of squares within radius along axis) ^ beta",
))

register(OpSpec(
    code=Op.INSTANCE_NORMALIZATION,
    forms=[Form("default", [arg("input", "T"), arg("gamma", "S"), arg("beta", "S"), arg("epsilon", "S"),
                            arg("layout", C.BOOL)], [arg("output", "T")])],
    type_cases=_FLOAT_CASES,
    rules=[rank_in("input", [4]), _KEEPS_SHAPE],
    infer=_INFER,
    doc="per batch and channel: (input - mean) * gamma / sqrt(variance + epsilon) + beta",
))

register(OpSpec(
    code=Op.SOFTMAX,
    forms=[Form("default", [arg("input", "T"), arg("beta", "S"), opt("axis", C.INT32, level=3, default=-1)],
                [arg("output", "T")])],
    type_cases=[TypeCase(1, T=_F32, S=C.FLOAT32), TypeCase(1, T=_Q8, S=C.FLOAT32),
                TypeCase(3, T=_F16, S=C.FLOAT16), TypeCase(4, T=_Q8S, S=C.FLOAT32)],
    rules=[rank_at_most("input", 4), _positive("beta"), _KEEPS_SHAPE,
           fixed_output_quant("output", {_Q8: (1.0 / 256, 0), _Q8S: (1.0 / 256, -128)})],
    level_rules=[_level3_unless_axis_or_rank(0, 2, 4)],
    infer=_INFER,
    doc="output = exp(beta * (input - max)) / sum(exp(beta * (input - max))) along axis (default -1)",
))

register(OpSpec(
    code=Op.LOG_SOFTMAX,
    forms=[Form("default", [arg("input", "T"), arg("beta", "S"), arg("axis", C.INT32)], [arg("output", "T")])],
    type_cases=_FLOAT_CASES,
    rules=[_positive("beta"), axes_in_range("input", "axis"), _KEEPS_SHAPE],
    infer=_INFER,
    doc="output = beta * (input - max) - log(sum(exp(beta * (input - max)))) along axis",
))
