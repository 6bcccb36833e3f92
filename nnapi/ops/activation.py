"""Activations: RELU, RELU1, RELU6, LOGISTIC, TANH, ELU, HARD_SWISH, PRELU."""
from __future__ import annotations

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .inference import infer_broadcast, infer_same_as
from .rules import broadcast_output, fixed_output_quant, same_quant, same_shape
from .spec import Form, OpSpec, TypeCase, arg
from .unary import F16, F32, Q8, Q8S, unary


def _levels(f32=1, q8=1, f16=3, q8s=4) -> list[TypeCase]:
    return [TypeCase(f32, T=F32), TypeCase(q8, T=Q8), TypeCase(f16, T=F16), TypeCase(q8s, T=Q8S)]


for _code, _doc in ((Op.RELU, "max(0, input)"), (Op.RELU1, "min(1, max(-1, input))"),
                    (Op.RELU6, "min(6, max(0, input))")):
    unary(_code, _levels(), rules=[same_quant("input", "output")], max_rank=4, doc=f"output = {_doc}")

# the quantized output (scale, zero point) NNAPI fixes for LOGISTIC and TANH, by operand code
FIXED_OUTPUT_QUANT = {Op.LOGISTIC: {Q8: (1.0 / 256, 0), Q8S: (1.0 / 256, -128)},
                      Op.TANH: {Q8: (1.0 / 128, 128), Q8S: (1.0 / 128, 0)}}

unary(Op.LOGISTIC, _levels(), max_rank=4,
      rules=[fixed_output_quant("output", FIXED_OUTPUT_QUANT[Op.LOGISTIC])],
      doc="output = 1 / (1 + exp(-input)); quantized outputs have scale 1/256")
unary(Op.TANH, _levels(q8=3), max_rank=4,
      rules=[fixed_output_quant("output", FIXED_OUTPUT_QUANT[Op.TANH])],
      doc="output = tanh(input); quantized outputs have scale 1/128")
unary(Op.HARD_SWISH, _levels(4, 4, 4, 4),
      doc="output = input * relu6(input + 3) / 6; quantized output scale may differ from the input's")

register(OpSpec(
    code=Op.ELU,
    forms=[Form("default", [arg("input", "T"), arg("alpha", "S")], [arg("output", "T")])],
    type_cases=[TypeCase(4, T=F32, S=C.FLOAT32), TypeCase(4, T=F16, S=C.FLOAT16)],
    rules=[same_shape("input", "output")],
    infer=infer_same_as("input"),
    doc="output = input if input > 0 else alpha * (exp(input) - 1)",
))

register(OpSpec(
    code=Op.PRELU,
    forms=[Form("default", [arg("input", "T"), arg("alpha", "T")], [arg("output", "T")])],
    type_cases=_levels(3, 3, 3, 4),
    rules=[broadcast_output("input", "alpha")],
    infer=infer_broadcast("input", "alpha"),
    doc="output = input if input >= 0 else alpha * input; input and alpha broadcast, the output has "
        "their broadcast shape",
))
