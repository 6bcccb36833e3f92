"""Helpers shared by the TFLite recurrent converters (recurrent.py, lstm*.py):
type checks, omitted operands, zero-initialised state, scratch outputs, and
the LSTM input tables (TFLite's full-kernel inputs are NNAPI's, in order)."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C, OperandType

from ...registry import Reason, Unsupported
from .hybrid import dequantize_hybrid

# TFLite ActivationFunctionType values NNAPI's RNN/LSTM/SVDF activation takes with the same
# numbering (NONE, RELU, RELU_N1_TO_1, RELU6, TANH); SIGN_BIT (5) has no counterpart
RECURRENT_ACTIVATIONS = frozenset({0, 1, 2, 3, 4})


def activation_code(ctx, node) -> int:
    act = node.attrs.get("fused_activation_function", 0)
    if act not in RECURRENT_ACTIVATIONS:
        raise Unsupported(Reason.FUSED_ACTIVATION,
                          f"{node.op} fused_activation_function {act} has no NNAPI recurrent activation")
    return ctx.i32(act)


def check_merged_outputs(node, merge: bool) -> None:
    """A bidirectional op has one output with merge_outputs, else one per direction."""
    n_out = 1 if merge else 2
    if len(node.outputs) != n_out:
        raise Unsupported(Reason.INVALID, f"{node.op} with merge_outputs={merge} must have {n_out} outputs, "
                                          f"has {len(node.outputs)}")


def input_at(node, k: int) -> int:
    """Input tensor k, or -1 when the operator lists fewer inputs (trailing optional ones)."""
    return node.inputs[k] if k < len(node.inputs) else -1


def require_float(ctx, node, weight_slots) -> None:
    """The NNAPI recurrent ops are float: reject quantized inputs; int8 weights with a float input
    (a hybrid kernel) are dequantized (hybrid.py), other non-float weights rejected."""
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
        if np.dtype(t.dtype) == np.int8:
            dequantize_hybrid(ctx, node.inputs[0], i)
        elif np.dtype(t.dtype) != np.float32:
            raise Unsupported(Reason.QUANTIZATION_TYPE, f"{node.op} tensor {t.name!r} is {np.dtype(t.dtype).name} "
                                                        f"with a float input: NNAPI's {node.op} is float")


def omitted(ctx, name: str, code: C = C.TENSOR_FLOAT32, scale: float = 0.0) -> int:
    """An omitted optional input (NO_VALUE), declared with the type the operation expects there."""
    idx = ctx.temp(OperandType(code, (), scale), name)
    ctx.model.set_operand_value(idx, None)
    return idx


def optional_operand(ctx, node, k: int, name: str, code: C = C.TENSOR_FLOAT32, scale: float = 0.0) -> int:
    i = input_at(node, k)
    return ctx.operand(i) if i >= 0 else omitted(ctx, f"{node.name or node.op}/{name}", code, scale)


def starts_at_zero(ctx, i: int) -> bool:
    """Whether state tensor i is a variable nothing but this op feeds (zero on a fresh interpreter)."""
    t = ctx.tensor(i)
    return t.is_variable and not t.is_constant and i not in ctx.graph.inputs and i not in ctx.operand_of


def state_operand(ctx, i: int) -> int:
    """A recurrent state input. TFLite keeps it in a variable tensor that starts at zero on a
    fresh interpreter; one NNAPI execution is one such invocation, so it is a zero constant.
    A state fed from a graph input or another op is passed through."""
    t = ctx.tensor(i)
    if starts_at_zero(ctx, i):
        if sum(i in n.inputs for n in ctx.graph.nodes) > 1:
            # the op updates the variable in place: a later reader would see the new state
            raise Unsupported(Reason.ATTRIBUTE, f"state tensor {t.name!r} is shared by several operators")
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


# -- LSTM input tables ------------------------------------------------------------------
GATES = ("input", "forget", "cell", "output")
# one direction's 17 weights, in both TFLite's and NNAPI's input order
WEIGHTS = ([f"input_to_{g}_weights" for g in GATES] + [f"recurrent_to_{g}_weights" for g in GATES]
           + [f"cell_to_{g}_weights" for g in ("input", "forget", "output")]
           + [f"{g}_gate_bias" for g in GATES] + ["projection_weights", "projection_bias"])
LAYER_NORM = [f"{g}_layer_norm_weights" for g in GATES]
LAYER_NORM_FIRST = 20  # LSTM / UNIDIRECTIONAL_SEQUENCE_LSTM inputs 20..23


def has_layer_norm(node) -> bool:
    return any(input_at(node, k) >= 0 for k in range(LAYER_NORM_FIRST, LAYER_NORM_FIRST + 4))


def named_inputs(ctx, node, first: int, names, prefix: str = "", operand=None, absent_type=None) -> dict:
    """Operands for inputs[first:first + len(names)] by NNAPI name (prefixed); absent ones omitted.
    `operand(name, tensor)` overrides how a present input becomes an operand, `absent_type(name)`
    the (code, scale) an omitted one is declared with (float32 by default)."""
    named = {}
    for k, name in enumerate(names):
        i = input_at(node, first + k)
        if operand is not None and i >= 0:
            named[prefix + name] = operand(name, i)
        else:
            code, scale = absent_type(name) if absent_type is not None else (C.TENSOR_FLOAT32, 0.0)
            named[prefix + name] = optional_operand(ctx, node, first + k, prefix + name, code, scale)
    return named


def lstm_states(ctx, node, first: int, prefix: str = "") -> dict:
    return {f"{prefix}output_state_in": state_operand(ctx, node.inputs[first]),
            f"{prefix}cell_state_in": state_operand(ctx, node.inputs[first + 1])}
