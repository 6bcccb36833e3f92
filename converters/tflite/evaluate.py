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
- The shape pass (converters/shape_pass.py) asks LiteRT for the output shapes of a node whose converter
  cannot tell them (a SELECT_V2 declared [-1, 32] whose inputs are static): the cut-out node run on zeros of
  its inputs' static shapes, where no extent can depend on input values (`litert_output_shapes`).
"""
from __future__ import annotations

import numpy as np

from nnapi import NnapiError

from ..folding import evaluator
from ..shape_pass import OUTPUT_SHAPES
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
    """The values of node's outputs (its inputs all constants): the executor's, else LiteRT's (module doc)."""
    graph = ctx.graph
    g = next(k for k, other in enumerate(source.graphs) if other is graph)
    try:
        values = run_nodes(source, g, [node.index], list(node.outputs))
    except Exception:  # noqa: BLE001 (NNAPI lacks the op, or the executor fails on it: LiteRT's kernel then)
        values = on_litert(source, g, node)
    return [_as_source(graph, t, np.asarray(v)) for t, v in zip(node.outputs, values)]


def on_litert(source: SourceModel, g: int, node) -> list:
    """node's outputs from LiteRT: the operator as the file stores it, its inputs constant buffers."""
    from ..runners import run_litert
    try:
        return run_litert(_cut_out(source, g, node, feed=()), [])
    except Exception as e:  # noqa: BLE001 (not installed, or LiteRT refuses the node: it is not folded)
        raise Unsupported(Reason.INVALID, f"{node.label()}: LiteRT could not evaluate it: {e}") from None


# ops whose output extents depend on input values (no shape is read off a run on zeros)
VALUE_SHAPED = ("WHERE", "UNIQUE", "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5")
# ops whose output shape is their inputs' shapes broadcast, or the indices' shape: run-time integers they read
# are data (token ids, indices), never shape values
SHAPE_OF_SHAPES = ("ADD", "SUB", "MUL", "DIV", "FLOOR_DIV", "FLOOR_MOD", "MAXIMUM", "MINIMUM", "LESS", "LESS_EQUAL",
                   "GREATER", "GREATER_EQUAL", "EQUAL", "NOT_EQUAL", "LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT",
                   "SELECT", "SELECT_V2", "CAST", "ABS", "NEG", "SIGN", "SQUARED_DIFFERENCE", "POW", "GATHER",
                   "GATHER_ND", "EMBEDDING_LOOKUP", "ZEROS_LIKE", "ONES_LIKE")


def litert_output_shapes(source: SourceModel, node, ctx):
    """The shapes of node's outputs, from LiteRT run on its inputs' static shapes (zeros, else ones), when no
    extent can depend on input values: every input computed at run time has a static shape, integer ones only
    where the op's output shape is its inputs' (SHAPE_OF_SHAPES), and the op is not WHERE, UNIQUE or NMS.
    None otherwise (or without LiteRT)."""
    graph = ctx.graph
    feed = list(dict.fromkeys(t for t in node.inputs if t >= 0 and not graph.tensors[t].is_constant))
    if node.op in VALUE_SHAPED or node.op in NEVER or any(
            0 in ctx.shape(t) or (node.op not in SHAPE_OF_SHAPES and graph.tensors[t].quant is None
                                  and np.dtype(graph.tensors[t].dtype).kind in "iu") for t in feed):
        return None
    g = next(k for k, other in enumerate(source.graphs) if other is graph)
    from ..runners import ReferenceFailed, run_litert
    for fill in (np.zeros, np.ones):  # (ones where zeros fail: an integer division)
        try:
            data = _cut_out(source, g, node, feed={t: ctx.shape(t) for t in feed})
            outs = run_litert(data, [fill(ctx.shape(t), graph.tensors[t].dtype) for t in feed])
        except ReferenceFailed:
            continue
        except Exception:  # noqa: BLE001 (not installed, or a node the schema API cannot copy: no answer)
            return None
        return [tuple(o.shape) for o in outs]
    return None


def _cut_out(source: SourceModel, g: int, node, feed) -> bytes:
    """A one-operator model of node as the file stores it: the tensors in `feed` ({tensor: shape}) are its
    inputs, every other input a constant buffer; its outputs are the node's."""
    try:
        from ai_edge_litert import schema_py_generated as schema

        from .authoring import GraphBuilder
    except ImportError:
        raise Unsupported(Reason.UNSUPPORTED_OP, f"{node.label()}: LiteRT is not installed to evaluate it") from None
    graph = source.graphs[g]
    model = schema.Model.GetRootAs(bytes(source.raw), 0)
    op = model.Subgraphs(g).Operators(node.index)
    code = model.OperatorCodes(op.OpcodeIndex())
    builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
    if builtin == schema.BuiltinOperator.CUSTOM or op.IntermediatesLength() or \
            _builtin_name(schema, builtin) != node.op:  # (a node a source pass rewrote: list_write.py)
        raise Unsupported(Reason.UNSUPPORTED_OP, f"{node.label()}: not evaluated (a custom, stateful or rewritten "
                                                 f"operator)")
    b = GraphBuilder()
    mapped = {}
    for t in list(node.inputs) + list(node.outputs):
        if t < 0 or t in mapped:
            continue
        st = graph.tensors[t]
        q = st.quant
        quant = {} if q is None else {"scale": list(q.scales), "zero_point": list(q.zero_points),
                                      "axis": q.axis or 0}
        if t in feed:
            mapped[t] = b.input(st.name, list(feed[t]), _tflite_type(st.dtype), **quant)
        elif st.is_constant:
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
    return b.finish()


def _tflite_type(dtype) -> str:
    from .authoring import _NP_TO_TFLITE
    return _NP_TO_TFLITE[np.dtype(dtype)]


def _builtin_name(schema, code: int) -> str:
    return next(k for k, v in vars(schema.BuiltinOperator).items() if v == code and not k.startswith("_"))


OUTPUT_SHAPES["tflite"] = litert_output_shapes
