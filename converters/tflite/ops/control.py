"""TFLite control flow -> NNAPI (feature level 4): IF and WHILE run referenced models
built from the TFLite subgraphs (ctx.build_subgraph).

TFLite's WHILE body returns every loop variable, so all of them are NNAPI
input-output operands (m = N, no state-only or input-only operands) and the
condition model reads the same N values, which is NNAPI's convention as is.
A subgraph output that is one of its inputs (a loop invariant, a pass-through
branch) gets an exact identity operation, since an NNAPI operand cannot be
both a model input and a model output.
"""
from __future__ import annotations

import numpy as np

import nnapi
from nnapi import OperandCode as C, OperationCode as Op

from ...convert import ConversionError
from ...registry import Reason, Unsupported, converter


def _subgraph_operand(ctx, node, key: str) -> int:
    """A SUBGRAPH operand referencing the NNAPI model of the TFLite subgraph named by attribute `key`."""
    k = node.subgraphs.get(key)
    if k is None:
        raise Unsupported(Reason.INVALID, f"{node.op} has no {key}")
    try:
        model = _with_copied_outputs(ctx.build_subgraph(k), f"{node.op} {key} subgraph {ctx.graphs[k].name!r}")
    except ConversionError as e:
        raise Unsupported(Reason.INVALID, f"{node.op} {key} {k}: {e}") from None
    idx = ctx.model.add_operand(nnapi.OperandType(C.SUBGRAPH), name=f"{ctx.graphs[k].name}")
    ctx.model.set_operand_value_from_model(idx, model)
    return idx


def _check_arity(ctx, node, key: str, n_in: int, n_out: int) -> None:
    graph = ctx.graphs[node.subgraphs[key]]
    if len(graph.inputs) != n_in or len(graph.outputs) != n_out:
        raise Unsupported(Reason.INVALID, f"{node.op} {key} subgraph {graph.name!r} has {len(graph.inputs)} inputs / "
                                          f"{len(graph.outputs)} outputs, the operator passes {n_in} / {n_out}")


# exact identity operations per operand code, for outputs that must become a new operand
def _copy_reshape(m, src, dst):
    shape = m.add_operand(nnapi.OperandType(C.TENSOR_INT32, (len(m.operands[src].type.dimensions),)))
    m.set_operand_value(shape, np.asarray(m.operands[src].type.dimensions, np.int32))
    m.add_operation(Op.RESHAPE, [src, shape], [dst])


def _copy_add_zero(m, src, dst):
    zero, fuse = m.add_operand(nnapi.OperandType(C.TENSOR_INT32, (1,))), m.add_operand(nnapi.OperandType(C.INT32))
    m.set_operand_value(zero, np.zeros(1, np.int32))
    m.set_operand_value(fuse, np.int32(0))
    m.add_operation(Op.ADD, [src, zero, fuse], [dst])


_COPY = {C.TENSOR_FLOAT32: _copy_reshape, C.TENSOR_FLOAT16: _copy_reshape, C.TENSOR_QUANT8_ASYMM: _copy_reshape,
         C.TENSOR_QUANT8_ASYMM_SIGNED: _copy_reshape, C.TENSOR_INT32: _copy_add_zero,
         C.TENSOR_BOOL8: lambda m, src, dst: m.add_operation(Op.LOGICAL_AND, [src, src], [dst])}


def _with_copied_outputs(model: nnapi.Model, label: str) -> nnapi.Model:
    """`model`, or a copy of it whose outputs that are also inputs (or repeated) come from an
    identity operation: TFLite subgraphs may return an input unchanged, an NNAPI model cannot
    (an operand is either a model input or a model output)."""
    outputs = list(model.outputs)
    passed = [k for k, o in enumerate(outputs) if o in model.inputs or o in outputs[:k]]
    if not passed:
        return model
    m = nnapi.Model(name=model.name)
    for op in model.operands:
        i = m.add_operand(op.type, op.name)
        if op.channel_quant is not None:
            m.set_operand_symm_per_channel_quant_params(i, op.channel_quant.scales, op.channel_quant.channel_dim)
        if op.subgraph is not None:
            m.set_operand_value_from_model(i, op.subgraph)
        elif op.is_constant or op.is_omitted:
            m.set_operand_value(i, op.value)
    for operation in model.operations:
        m.add_operation(operation.code, operation.inputs, operation.outputs)
    for k in passed:
        src = outputs[k]
        otype = model.operands[src].type
        copy = _COPY.get(otype.code)
        if copy is None or not otype.is_fully_specified:
            raise Unsupported(Reason.OPERAND_TYPE, f"{label} returns its input {model.operands[src].name!r} "
                                                   f"({otype.describe()}) unchanged, and NNAPI has no exact "
                                                   f"identity operation to copy it")
        outputs[k] = m.add_operand(otype, f"{model.operands[src].name}/copy")
        copy(m, src, outputs[k])
    m.relax_computation_float32_to_float16(model.relaxed)
    m.identify_inputs_and_outputs(list(model.inputs), outputs)
    m.finish()
    return m


# operators whose effect outlives the subgraph that runs them (writes of variables and tables, custom kernels)
_EFFECTS = ("ASSIGN_VARIABLE", "CALL_ONCE", "HASHTABLE_IMPORT")


def _check_no_effects(ctx, node, keys, seen=None) -> None:
    """A control-flow operator with no outputs can be left out only when its subgraphs change nothing."""
    seen = set() if seen is None else seen
    for key in keys:
        k = node.subgraphs.get(key)
        if k is None or k in seen:
            continue
        seen.add(k)
        for n in ctx.graphs[k].nodes:
            if n.op in _EFFECTS or n.op.startswith("CUSTOM:"):
                raise Unsupported(Reason.UNSUPPORTED_OPERATOR, f"{node.op} with no outputs runs {n.op} in subgraph "
                                                               f"{ctx.graphs[k].name!r}, an effect NNAPI cannot keep")
            _check_no_effects(ctx, n, list(n.subgraphs), seen)


@converter("tflite", "IF", versions=(1, 1))
def if_(node, ctx):
    """outputs = then_subgraph(inputs) if cond else else_subgraph(inputs)."""
    if not node.outputs:
        _check_no_effects(ctx, node, ("then_subgraph_index", "else_subgraph_index"))
        ctx.absorb(None, "no observable effect")
        return  # nothing observable: it emits nothing (NNAPI's IF needs an output)
    cond = node.inputs[0]
    t = ctx.tensor(cond)
    if np.dtype(t.dtype) != np.bool_ or int(np.prod(ctx.shape(cond))) != 1 or len(ctx.shape(cond)) != 1:
        raise Unsupported(Reason.OPERAND_TYPE, f"IF condition {t.name!r} must be a one-element bool tensor "
                                               f"(NNAPI needs TENSOR_BOOL8 [1]), is {np.dtype(t.dtype).name} "
                                               f"{list(t.shape or ())}")
    branches = {}
    for key, arg in (("then_subgraph_index", "then_model"), ("else_subgraph_index", "else_model")):
        _check_arity(ctx, node, key, len(node.inputs) - 1, len(node.outputs))
        branches[arg] = _subgraph_operand(ctx, node, key)
    inputs = [ctx.operand(i) for i in node.inputs[1:]]
    ctx.emit_form(Op.IF, "default", [ctx.output(o) for o in node.outputs], condition=ctx.operand(cond),
                  inputs=inputs, **branches)


@converter("tflite", "WHILE", versions=(1, 1))
def while_(node, ctx):
    """while cond(vars): vars = body(vars); every loop variable is carried (NNAPI input-output)."""
    n = len(node.inputs)
    if len(node.outputs) != n:
        raise Unsupported(Reason.INVALID, f"WHILE has {n} inputs but {len(node.outputs)} outputs")
    _check_arity(ctx, node, "cond_subgraph_index", n, 1)
    _check_arity(ctx, node, "body_subgraph_index", n, n)
    models = dict(cond_model=_subgraph_operand(ctx, node, "cond_subgraph_index"),
                  body_model=_subgraph_operand(ctx, node, "body_subgraph_index"))
    inputs = [ctx.operand(i) for i in node.inputs]
    ctx.emit_form(Op.WHILE, "default", [ctx.output(o) for o in node.outputs], inputs=inputs, **models)
