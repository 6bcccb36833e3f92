"""TFLite binary arithmetic: ADD, SUB, MUL, DIV (broadcasting, fused activations)."""
from __future__ import annotations

from nnapi import OperationCode as Op

from ...registry import converter

_BINARY = {"ADD": Op.ADD, "SUB": Op.SUB, "MUL": Op.MUL, "DIV": Op.DIV}


@converter("tflite", "ADD", "SUB", "MUL", "DIV", versions=(1, 5))
def binary(node, ctx):
    """Broadcasting ADD/SUB/MUL/DIV with the fused activation as the FuseCode."""
    a, b = ctx.operand(node.inputs[0]), ctx.operand(node.inputs[1])
    fuse, out, finish = ctx.activation(node.attrs.get("fused_activation_function", 0), node.outputs[0])
    ctx.emit_form(_BINARY[node.op], "default", [out], input1=a, input2=b, fuse=fuse)
    finish()
