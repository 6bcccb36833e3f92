"""The TFLite side of the conversion-time evaluator (converters/folding.py): the values of a node whose
inputs are all constants.

- Where NNAPI has the operation, the node is converted on its own into an NNAPI model without inputs and
  run once by the executor (`run_nodes`, which the resource-variable pass uses too): its kernels are
  conformant with NNAPI's, so the constant is exactly what the converted model would have computed on the
  device (float rounding included).
- Where NNAPI has none (int32 STRIDED_SLICE, REDUCE_PROD, CONCATENATION and PACK of shape values, ...), LiteRT
  runs the node cut out into a one-operator model whose inputs are constant buffers: the framework's own
  semantics, whatever the op. LiteRT is an optional dependency (the `runtimes` extra): without it those
  nodes stay as they are and are reported as before.
"""
from __future__ import annotations

import numpy as np

from nnapi import NnapiError

from ..folding import evaluator
from ..registry import Reason, Unsupported
from ..source_graph import SourceModel

# never evaluated: random values, resource variables (variables.py), hash tables, and ops with bodies
NEVER = ("RANDOM_UNIFORM", "RANDOM_STANDARD_NORMAL", "MULTINOMIAL", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE",
         "CALL_ONCE", "HASHTABLE", "HASHTABLE_FIND", "HASHTABLE_IMPORT", "HASHTABLE_SIZE", "WHILE", "IF", "CALL")


def run_nodes(source: SourceModel, k: int, nodes: list, outputs: list) -> list:
    """The values of tensors `outputs` of subgraph k, computed by its operators `nodes` (which read only
    constants), converted to NNAPI and run once by the executor; in the source tensors' dtypes."""
    from ..context import int8_from_stored
    from ..convert import ConversionError, build_model, check_node
    from ..running import run_traced
    graph = source.graphs[k]
    for i in nodes:
        verdict = check_node(source, k, graph.nodes[i], 8)
        if isinstance(verdict, Unsupported):
            raise Unsupported(verdict.reason, f"{graph.nodes[i].label()}: {verdict.detail}")
    try:
        model, _ = build_model(source, k, nodes, 8, inputs=[], outputs=outputs)
        got, _ = run_traced(model, [])
    except (ConversionError, NnapiError) as e:
        raise Unsupported(Reason.INVALID, str(e)) from None
    out = []
    for t, value in zip(outputs, got):
        tensor = graph.tensors[t]
        if value.dtype == np.uint8 and np.dtype(tensor.dtype) == np.int8:
            value = int8_from_stored(value)
        out.append(value.astype(tensor.dtype))
    return out


def _as_source(graph, t: int, value: np.ndarray) -> np.ndarray:
    """value with tensor t's rank: NNAPI and LiteRT may hold a scalar as [1]."""
    shape = graph.tensors[t].shape
    if shape is not None and len(shape) == 0 and value.size == 1:
        return value.reshape(())
    return value


@evaluator("tflite", never=NEVER)
def evaluate(source: SourceModel, node, ctx) -> list:
    graph = ctx.graph
    g = next(k for k, other in enumerate(source.graphs) if other is graph)
    try:
        values = run_nodes(source, g, [node.index], list(node.outputs))
    except (Unsupported, ValueError, TypeError, IndexError, KeyError, ArithmeticError):
        values = on_litert(source, g, node)
    return [_as_source(graph, t, np.asarray(v)) for t, v in zip(node.outputs, values)]


def on_litert(source: SourceModel, g: int, node) -> list:
    """node's outputs from LiteRT: the operator as the file stores it, its inputs constant buffers."""
    try:
        from ai_edge_litert import schema_py_generated as schema

        from ..runners import MissingDependency, ReferenceFailed, run_litert
        from .authoring import GraphBuilder
    except ImportError:
        raise Unsupported(Reason.UNSUPPORTED_OP, f"{node.label()}: LiteRT is not installed to evaluate it") from None
    graph = source.graphs[g]
    model = schema.Model.GetRootAs(bytes(source.raw), 0)
    op = model.Subgraphs(g).Operators(node.index)
    code = model.OperatorCodes(op.OpcodeIndex())
    builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
    if builtin == schema.BuiltinOperator.CUSTOM or op.IntermediatesLength():
        raise Unsupported(Reason.UNSUPPORTED_OP, f"{node.label()}: not evaluated (a custom or stateful operator)")
    b = GraphBuilder()
    mapped = {}
    for t in list(node.inputs) + list(node.outputs):
        if t < 0 or t in mapped:
            continue
        st = graph.tensors[t]
        q = st.quant
        quant = {} if q is None else {"scale": list(q.scales), "zero_point": list(q.zero_points),
                                      "axis": q.axis or 0}
        if st.is_constant:
            mapped[t] = b.const(st.name, np.ascontiguousarray(st.data), **quant)
        else:
            shape = [max(d, 1) for d in (st.shape or ())]
            mapped[t] = b.tensor(st.name, shape, _tflite_type(st.dtype), **quant)
    operator = schema.OperatorT.InitFromObj(op)
    operator.opcodeIndex = b._opcode(_builtin_name(schema, builtin), code.Version())
    operator.inputs = [mapped[t] if t >= 0 else -1 for t in node.inputs]
    operator.outputs = [mapped[t] for t in node.outputs]
    b.sg.operators.append(operator)
    b.output(*operator.outputs)
    try:
        return run_litert(b.finish(), [])
    except (MissingDependency, ReferenceFailed) as e:
        raise Unsupported(Reason.INVALID, f"{node.label()}: LiteRT could not evaluate it: {e}") from None


def _tflite_type(dtype) -> str:
    from .authoring import _NP_TO_TFLITE
    return _NP_TO_TFLITE[np.dtype(dtype)]


def _builtin_name(schema, code: int) -> str:
    return next(k for k, v in vars(schema.BuiltinOperator).items() if v == code and not k.startswith("_"))
