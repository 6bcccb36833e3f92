"""Helpers shared by the TFLite recurrent converters (recurrent.py, lstm.py):
type checks, omitted operands, zero-initialised state, scratch outputs."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperandType

from ...registry import Reason, Unsupported

# TFLite ActivationFunctionType -> the NNAPI activation code of RNN/LSTM/SVDF
# (same numbering; SIGN_BIT (5) has no NNAPI counterpart)
RECURRENT_ACTIVATIONS = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4}


def activation_code(ctx, node) -> int:
    act = node.attrs.get("fused_activation_function", 0)
    if act not in RECURRENT_ACTIVATIONS:
        raise Unsupported(Reason.FUSED_ACTIVATION,
                          f"{node.op} fused_activation_function {act} has no NNAPI recurrent activation")
    return ctx.i32(RECURRENT_ACTIVATIONS[act])


def input_at(node, k: int) -> int:
    """Input tensor k, or -1 when the operator lists fewer inputs (trailing optional ones)."""
    return node.inputs[k] if k < len(node.inputs) else -1


def require_float(ctx, node, weight_slots) -> None:
    """The NNAPI recurrent ops are float: reject quantized inputs and hybrid (quantized-weight) models."""
    x = ctx.tensor(node.inputs[0])
    if np.dtype(x.dtype) != np.float32:
        raise Unsupported(Reason.QUANTIZATION_TYPE if x.quant is not None else Reason.OPERAND_TYPE,
                          f"{node.op} input {x.name!r} is {np.dtype(x.dtype).name}: NNAPI has no "
                          f"{np.dtype(x.dtype).name} {node.op}")
    for k in weight_slots:
        i = input_at(node, k)
        if i < 0:
            continue
        t = ctx.tensor(i)
        if np.dtype(t.dtype) != np.float32:
            raise Unsupported(Reason.QUANTIZATION_TYPE,
                              f"{node.op} tensor {t.name!r} is {np.dtype(t.dtype).name} with a float input: "
                              f"hybrid (dynamic-range) kernels quantize the activations at run time, which "
                              f"no NNAPI operation reproduces")


def omitted(ctx, name: str, code: C = C.TENSOR_FLOAT32) -> int:
    idx = ctx.temp(OperandType(code, ()), name)
    ctx.model.set_operand_value(idx, None)
    return idx


def optional_operand(ctx, node, k: int, name: str) -> int:
    i = input_at(node, k)
    return ctx.operand(i) if i >= 0 else omitted(ctx, f"{node.name or node.op}/{name}")


def state_operand(ctx, i: int) -> int:
    """A recurrent state input. TFLite keeps it in a variable tensor that starts at zero on a
    fresh interpreter; one NNAPI execution is one such invocation, so it is a zero constant.
    A state fed from a graph input or another op is passed through."""
    t = ctx.tensor(i)
    if t.is_variable and not t.is_constant and i not in ctx.graph.inputs and i not in ctx.operand_of:
        otype, _ = ctx.nnapi_type(i)
        if not otype.is_fully_specified:
            raise Unsupported(Reason.DYNAMIC_SHAPE, f"state tensor {t.name!r} has unknown dimensions")
        idx = ctx.temp(otype, t.name)
        ctx.model.set_operand_value(idx, np.full(otype.dimensions, otype.zero_point, otype.dtype))
        return idx
    return ctx.operand(i)


def scratch(ctx, dims, name: str, code: C = C.TENSOR_FLOAT32, scale: float = 0.0, zero_point: int = 0) -> int:
    """An NNAPI output the TFLite op does not have (states, scratch buffers)."""
    return ctx.temp(OperandType(code, tuple(int(d) for d in dims), scale, zero_point), name)


def clip_value(node, key: str) -> float:
    """TFLite clips only when the threshold is > 0; NNAPI reads 0 as 'no clipping'."""
    return max(float(node.attrs.get(key, 0.0) or 0.0), 0.0)


def tensor_used(ctx, i: int) -> bool:
    """Whether tensor i is a graph output or read by any node of the graph."""
    return i in ctx.graph.outputs or any(i in n.inputs for n in ctx.graph.nodes)
