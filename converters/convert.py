"""The conversion driver shared by the TFLite and ONNX importers: per-node
checks (a dry run of each converter against a scratch model, judged by the
NNAPI op specs), partitioning into NNAPI partitions and CPU fallback nodes,
and building complete NNAPI models."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

import nnapi
from nnapi import NnapiError, OperandCode as C, OperandType
from nnapi.ops import SPECS
from nnapi.shapes import fill_unknown_dimensions

from .context import ConversionContext
from .folding import fold_absorption, fold_source
from .model_folds import fold_pads_into_convolutions, fold_reshape_chains, fold_reshapes_into_fully_connected
from .registry import Reason, Supported, Unsupported, lookup
from .shape_pass import name_extents, pin_bodies, resolve_node_shapes
from .split_pass import split_graph, whole_regions
from .squeeze_pass import squeeze_graph
from .source_graph import SourceGraph, SourceModel, SourceNode


class ConversionError(Exception):
    """The source model is invalid or a converter produced an invalid NNAPI model."""


@dataclass
class NodeResult:
    subgraph: int
    index: int
    op: str
    version: int
    name: str
    inputs: list
    outputs: list
    supported: bool
    nnapi_ops: list = field(default_factory=list)
    min_feature_level: Optional[int] = None
    reason_code: Optional[str] = None
    reason: Optional[str] = None
    note: str = ""
    absorbed: Optional[dict] = None   # {"into", "how"}: a supported node that emits no operation of its own

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Partition:
    nodes: list                  # source node indexes (main graph)
    inputs: list                 # boundary source tensor indexes read from outside
    outputs: list                # boundary source tensor indexes used outside / graph outputs
    model: Optional[nnapi.Model] = None
    operand_map: dict = field(default_factory=dict)
    operand_perm: dict = field(default_factory=dict)


@dataclass
class ConversionResult:
    source: SourceModel
    feature_level: int
    nodes: list                                   # NodeResult per main-graph node
    model: Optional[nnapi.Model] = None           # the complete model (None when a node is unsupported)
    operand_map: dict = field(default_factory=dict)  # NNAPI operand -> (tensor index, tensor name)
    partitions: list = field(default_factory=list)
    fallback_nodes: list = field(default_factory=list)
    io_rewrites: dict = field(default_factory=dict)  # tensor name -> boundary conversion
    state: list = field(default_factory=list)  # {"variable", "input", "output", "initial"} (tensor names)
    operand_perm: dict = field(default_factory=dict)  # NNAPI operand -> perm: operand = transpose(tensor, perm)
    operation_nodes: list = field(default_factory=list)  # main NNAPI operation index -> source node index
    localization: str = ""   # parity of a saved model: how its operands were matched to source tensors

    @property
    def complete(self) -> bool:
        return all(n.supported for n in self.nodes)

    @property
    def unsupported(self) -> list:
        return [n for n in self.nodes if not n.supported]

    @property
    def models(self) -> list:
        if self.model is not None:
            return [self.model]
        return [p.model for p in self.partitions if p.model is not None]


# importers may register a ConversionContext subclass per source format (e.g. ONNX layout tracking)
CONTEXT_CLASSES: dict = {}


def new_context(source: SourceModel, g: int, feature_level: int, input_shapes) -> ConversionContext:
    cls = CONTEXT_CLASSES.get(source.format, ConversionContext)
    ctx = cls(source.graphs[g], nnapi.Model(name=source.graphs[g].name), feature_level,
              input_shapes, source.format, source.graphs)
    ctx.build_subgraph = lambda k: build_subgraph_model(source, k, feature_level, ctx.subgraph_models)
    return ctx


def run_converter(node: SourceNode, ctx: ConversionContext) -> list:
    """Convert one node into ctx.model; returns the indexes of the operations it emitted."""
    before = len(ctx.model.operations)
    ctx.node, ctx.absorption = node, None
    if not ctx.applies_plans_itself:
        absorption = ctx.absorption_of(node)
        if absorption is not None:  # a plan's other node emits what this one computes
            ctx.absorption = absorption
            return []
    try:
        for part in ctx.graph.split_nodes.get(node.index, (None, (node,)))[1]:  # (split_pass.py: per slice)
            ctx.node = part
            lookup(ctx.fmt, part.op, part.version).convert(part, ctx)
    except NnapiError as e:
        raise Unsupported(Reason.INVALID, f"the converter built an invalid operation: {e.message}") from None
    except (Unsupported, MemoryError):
        raise
    except Exception as e:  # noqa: BLE001
        # a converter bug (a case it did not anticipate): reported on this node, the rest goes on; the
        # registry sweep (tests/converters/test_converters_degenerate_shapes.py) keeps every converter from reaching it
        raise Unsupported(Reason.INVALID, f"{node.label()}: internal error in the {node.op} converter "
                                          f"({type(e).__name__}: {e}); please report this with the model") from None
    return list(range(before, len(ctx.model.operations)))


def spec_reason(problem: str) -> Reason:
    if "needs feature level" in problem:
        return Reason.FEATURE_LEVEL
    if "rank" in problem:
        return Reason.RANK
    if "scale" in problem or "zero point" in problem:
        return Reason.QUANTIZATION_TYPE
    return Reason.OPERAND_TYPE


def check_input_shapes(source: SourceModel, input_shapes) -> None:
    """Every pinned shape names a model input and keeps its rank and its static extents."""
    graph = source.main
    inputs = {graph.tensors[i].name: graph.tensors[i] for i in graph.inputs}
    for name, dims in (input_shapes or {}).items():
        t = inputs.get(name)
        if t is None:
            raise ConversionError(f"--input-shape {name}: the model has no input of that name "
                                  f"(inputs: {', '.join(map(repr, inputs)) or 'none'})")
        known = t.shape_signature if t.shape_signature is not None else t.shape
        if known is not None and len(known) and len(known) != len(dims):
            raise ConversionError(f"--input-shape {name}: {len(dims)} dimensions given, input {name!r} has rank "
                                  f"{len(known)} ({t.describe()})")
        for axis, (k, d) in enumerate(zip(known if known is not None else (), dims)):
            if k > 0 and k != d:
                raise ConversionError(f"--input-shape {name}={','.join(map(str, dims))} contradicts the model: "
                                      f"dimension {axis} of input {name!r} is {k} ({list(known)}, -1 marks the "
                                      f"dynamic ones), the pin gives {d}")


# importers may register passes over the source model (e.g. TFLite resource variables -> state), run once
# after constant folding; a pass returns True when it made tensors constant (folding then runs again)
SOURCE_PASSES: dict = {}


def prepare_source(source: SourceModel, input_shapes=None) -> None:
    """Fold what is known before run time, resolve TFLite's dynamic extents (shape_pass.py), run the format's
    source passes and drop unit axes beyond rank 4 (squeeze_pass.py), once per source model."""
    after = bodies = None
    if source.format == "tflite":  # ONNX shapes come from onnx's own shape inference (the reader)
        after = lambda node, ctx: resolve_node_shapes(node, ctx, run_converter, source)  # noqa: E731
        bodies = pin_bodies
    fold_source(source, lambda g: new_context(source, g, 8, input_shapes), after, bodies)
    if getattr(source, "passes_done", False):
        return
    source.passes_done = True
    changed = [p(source) for p in SOURCE_PASSES.get(source.format, [])]
    if any(changed):
        source.folded = False
        fold_source(source, lambda g: new_context(source, g, 8, input_shapes), after, bodies)
    if source.format == "tflite":
        name_extents(source, input_shapes)  # for coverage's pins_needed and value_dependent (converters/pins.py)
    for graph in source.graphs:
        squeeze_graph(graph, source.format)  # rank > 4 tensors with unit axes: rank 4 (squeeze_pass.py)
        split_graph(graph, source.format)  # what stays beyond rank 4 with a small axis: one tensor per slice
        # plans and support verdicts cached while folding saw the shapes before these passes
        graph.__dict__.pop("_plans", None)


INT16_ACTIVATIONS = ("NNAPI has no 16-bit quantized activations (only an LSTM's cell state is int16), so "
                     "int16x8-quantized operations do not convert")


def int16_activation(graph: SourceGraph, node: SourceNode) -> Optional[str]:
    """The name of a computed int16 quantized tensor the node reads or writes (int16x8 quantization)."""
    for i in list(node.inputs) + list(node.outputs):
        t = graph.tensors[i] if i >= 0 else None
        if t is not None and not t.is_constant and t.quant is not None and t.dtype == np.int16:
            return t.name
    return None


def check_node(source: SourceModel, g: int, node: SourceNode, feature_level: int, input_shapes=None):
    """Supported(min level, emitted op names) or Unsupported for one node at `feature_level`."""
    verdict = _check_node(source, g, node, feature_level, input_shapes)
    if node.fold_refused:  # a node of constants too large to evaluate at conversion (converters/folding.py)
        if isinstance(verdict, Unsupported):
            verdict.detail = f"{verdict.detail} ({node.fold_refused})"
        else:
            verdict.note = "; ".join(filter(None, (verdict.note, node.fold_refused)))
    if isinstance(verdict, Unsupported) and verdict.reason in (Reason.OPERAND_TYPE, Reason.INVALID):
        t = int16_activation(source.graphs[g], node)
        if t is not None:  # one clear reason instead of whichever int16 operand the spec met first
            return Unsupported(Reason.QUANTIZATION_TYPE, f"tensor {t!r} is an int16 activation: {INT16_ACTIVATIONS}")
    return verdict


def _check_node(source: SourceModel, g: int, node: SourceNode, feature_level: int, input_shapes=None):
    if node.folded:
        return Supported(1, [], node.fold_note or "folded into constants at conversion",
                         fold_absorption(source.graphs[g], node))
    ctx = new_context(source, g, feature_level, input_shapes)
    try:
        emitted = run_converter(node, ctx)
        if g == source.main_index:
            _check_graph_inputs(node, ctx)
    except Unsupported as u:
        return with_rank_note(u, source.graphs[g], node)
    model = ctx.model
    level = 1
    for k in emitted:
        spec = SPECS.get(model.operations[k].code)
        if spec is None:
            continue
        problems = spec.problems(model, k, feature_level)
        if problems:
            u = Unsupported(spec_reason(problems[0]), problems[0])
            if u.reason is Reason.FEATURE_LEVEL:
                u.feature_level_needed = spec.min_level(model, k)
            return with_rank_note(u, source.graphs[g], node)
        level = max(level, spec.min_level(model, k))
    for opnd in model.operands:
        level = max(level, opnd.type.code.feature_level)
    return Supported(level, [model.operations[k].code.name for k in emitted], "; ".join(ctx.notes),
                     None if emitted else ctx.absorption)


MAX_RANK = 4  # NNAPI operations take tensors of rank 4 at most


def with_rank_note(u: Unsupported, graph: SourceGraph, node: SourceNode) -> Unsupported:
    """A rank refusal names the node's tensors beyond NNAPI's rank 4 and their dimensions (the rank pass,
    squeeze_pass.py, already dropped and merged every axis it could exactly, so these truly need the rank)."""
    if u.reason is not Reason.RANK:
        return u
    big = [graph.tensors[i] for i in list(node.inputs) + list(node.outputs)
           if 0 <= i < len(graph.tensors) and (graph.tensors[i].rank or 0) > MAX_RANK]
    notes = []
    for t in big:
        units = sum(1 for d in t.shape if d == 1)
        why = (f"{units} unit axes; {len(t.shape) - MAX_RANK} axes cannot be dropped or merged with a neighbour "
               f"exactly (a node acts along them, a transpose moves them apart, an input broadcasts them in part, or "
               f"they reach a model input or output or an operation of another kind)")
        notes.append(f"{t.name!r} {list(t.shape)}: {why}")
    if notes:
        u.detail = f"{u.detail} (beyond NNAPI's rank {MAX_RANK}: " + "; ".join(notes) + ")"
    return u


def _check_graph_inputs(node: SourceNode, ctx: ConversionContext) -> None:
    """Unsupported when the node reads a model input NNAPI has no operand type for, even one its converter
    did not need (a Reshape whose output shape is declared, say): the converted model would have to take
    it as an input, so the node is refused instead of the whole model."""
    for t in node.inputs:
        if t >= 0 and t in ctx.graph.inputs and not ctx.graph.tensors[t].is_constant:
            try:
                ctx.nnapi_type(t)
            except Unsupported as u:
                raise Unsupported(u.reason, f"{node.label()}: model input {ctx.graph.tensors[t].name!r} cannot be "
                                            f"an NNAPI model input: {u.detail}") from None


def _node_result(g: int, node: SourceNode, graph: SourceGraph, verdict) -> NodeResult:
    names = lambda idx: [graph.tensors[i].name if i >= 0 else None for i in idx]  # noqa: E731
    r = NodeResult(g, node.index, node.op, node.version, node.name, names(node.inputs), names(node.outputs),
                   isinstance(verdict, Supported))
    if isinstance(verdict, Supported):
        r.nnapi_ops, r.min_feature_level, r.note = verdict.emits, verdict.min_feature_level, verdict.note
        r.absorbed = verdict.absorbed
    else:
        r.reason_code, r.reason = verdict.reason.value, verdict.detail
        r.min_feature_level = verdict.feature_level_needed
    return r


def check_graph(source: SourceModel, feature_level: int, input_shapes=None, g: Optional[int] = None) -> list:
    prepare_source(source, input_shapes)
    g = source.main_index if g is None else g
    graph = source.graphs[g]
    verdicts = whole_regions(graph, [check_node(source, g, n, feature_level, input_shapes) for n in graph.nodes])
    return [_node_result(g, n, graph, v) for n, v in zip(graph.nodes, verdicts)]


def partition(graph: SourceGraph, results: list) -> tuple[list, list]:
    """Contiguous runs of supported nodes (in execution order) become partitions, as
    the TFLite delegate forms them on a chain; the rest are CPU fallback nodes."""
    parts, fallback, run = [], [], []
    for r in results:
        if r.supported:
            run.append(r.index)
        else:
            fallback.append(r.index)
            if run:
                parts.append(run)
                run = []
    if run:
        parts.append(run)
    out = []
    for nodes in parts:
        if all(graph.nodes[k].folded for k in nodes):
            continue  # only constants: nothing for NNAPI to run
        inside = set(nodes)
        live = [k for k in nodes if not graph.nodes[k].folded]  # folded nodes write constants or nothing
        produced = {t for k in live for t in graph.nodes[k].outputs}
        inputs, seen = [], set()
        for k in nodes:
            for t in graph.nodes[k].inputs + graph.nodes[k].captured:  # (what an If's branches read too)
                if t >= 0 and t not in produced and not graph.tensors[t].is_constant and t not in seen:
                    seen.add(t)
                    inputs.append(t)
        used_outside = {t for n in graph.nodes if n.index not in inside for t in n.inputs + n.captured}
        used_outside.update(graph.model_outputs)
        outputs = [t for k in live for t in graph.nodes[k].outputs  # (t < 0: an omitted optional output)
                   if t >= 0 and t in used_outside and not graph.tensors[t].is_constant]
        if not outputs:
            continue  # dead code: nothing reads what it computes (an NNAPI model needs an output)
        out.append(Partition(nodes, inputs, outputs))
    return out, fallback


def build_model(source: SourceModel, g: int, node_indexes: list, feature_level: int, input_shapes=None,
                inputs: Optional[list] = None, outputs: Optional[list] = None,
                subgraph_models: Optional[dict] = None) -> tuple[nnapi.Model, ConversionContext]:
    """A finished NNAPI model of the given nodes of graph g (all of them when the whole graph)."""
    graph = source.graphs[g]
    ctx = new_context(source, g, feature_level, input_shapes)
    if subgraph_models is not None:
        ctx.subgraph_models = subgraph_models
    partition = inputs is not None
    inputs = graph.model_inputs if inputs is None else inputs
    outputs = graph.model_outputs if outputs is None else outputs
    for t in inputs:
        try:
            ctx.operand(t)  # model inputs first, in the source order
        except Unsupported as e:
            # a partition's boundary tensor that NNAPI cannot take (e.g. int8 without quantization): fine as
            # long as no converted node reads it -- a node that did would have failed its own check
            read = any(t in graph.nodes[k].inputs for k in node_indexes) or t in outputs
            if not partition and (read or g != source.main_index or not _stand_in(ctx, t, e.detail)):
                raise ConversionError(f"{graph.name}: input tensor {graph.tensors[t].name!r} cannot be an NNAPI "
                                      f"model input: {e.detail}") from None
    inputs = [t for t in inputs if t in ctx.operand_of]
    emitted_by: list = []  # NNAPI operation index -> the source node that emitted it
    for k in node_indexes:
        if not graph.nodes[k].folded:
            emitted = run_converter(graph.nodes[k], ctx)
            emitted_by.extend(graph.nodes[k] for _ in emitted)
    ctx.emitted_by = emitted_by
    missing = [t for t in ctx.free_inputs if t not in inputs]
    if missing:
        names = ", ".join(repr(graph.tensors[t].name) for t in missing)
        raise ConversionError(f"{graph.name}: tensors {names} are read but never produced")
    for t in outputs:
        if t not in ctx.operand_of:
            raise ConversionError(f"{graph.name}: output tensor {graph.tensors[t].name!r} is never produced")
    model = ctx.model
    # shapes the source graph leaves unknown but the inputs determine: from the specs' one shape inference
    fill_unknown_dimensions(model)
    ctx.folds = []
    for step, fold in enumerate((fold_pads_into_convolutions, fold_reshape_chains, fold_reshapes_into_fully_connected)):
        names = [op.code.name for op in model.operations]
        folds = fold(model, {ctx.operand_of[t] for t in outputs})
        removed = {f.removed for f in folds}
        # (removed node, into node, what, how, (step, removed operation), its name)
        ctx.folds += [(emitted_by[f.removed], emitted_by[f.into], f.what, f.how, (step, f.removed), names[f.removed])
                      for f in folds]
        emitted_by = [n for k, n in enumerate(emitted_by) if k not in removed]
    ctx.emitted_by = emitted_by
    try:
        model.identify_inputs_and_outputs([ctx.operand_of[t] for t in inputs], [ctx.operand_of[t] for t in outputs])
        model.set_state(model_state(graph, model, inputs, outputs))
        model.finish()
    except NnapiError as e:
        # every node passed its own check, so the source's tensor shapes/types disagree between nodes
        raise ConversionError(f"{graph.name}: {source_of(e.message, emitted_by)}the converted model is invalid "
                              f"(the source model's tensor shapes or types are inconsistent): {e.message}") from None
    problems = model.validate(feature_level)
    if problems:
        raise ConversionError(f"{graph.name}: {source_of(problems[0], emitted_by)}the converted model does not fit "
                              f"feature level {feature_level}: " + "; ".join(problems[:5]))
    return model, ctx


def model_state(graph: SourceGraph, model: nnapi.Model, inputs: list, outputs: list) -> list:
    """The graph's state variables whose input and output tensors are both among the model's, with
    the initial value in the input operand's stored form."""
    from nnapi.state import StateVariable

    from .context import stored
    out = []
    for s in graph.state:
        if s.input in inputs and s.output in outputs:
            k = inputs.index(s.input)
            code = model.operands[model.inputs[k]].type.code
            out.append(StateVariable(s.variable, k, outputs.index(s.output), stored(code, s.initial)))
    return out


# NNAPI types that stand in for a model input no node reads, by numpy kind (the caller's values are cast)
STAND_IN_TYPES = {"f": C.TENSOR_FLOAT32, "i": C.TENSOR_INT32, "u": C.TENSOR_INT32, "b": C.TENSOR_BOOL8}


def _stand_in(ctx: ConversionContext, t: int, why: str) -> bool:
    """Declare model input t, which NNAPI has no type for and no node reads (valid ONNX), as the nearest
    NNAPI type so the converted model keeps the source's inputs; False when there is none (strings)."""
    code = STAND_IN_TYPES.get(np.dtype(ctx.graph.tensors[t].dtype).kind)
    if code is None:
        return False
    ctx.bind_output(t, OperandType(code, ctx.shape(t)), note=f"unused by the model and declared {code.name} "
                                                             f"(its own type has no NNAPI counterpart: {why})")
    return True


def source_of(problem: str, emitted_by: list) -> str:
    """'node k (Op 'name'): ' for the source node behind the first 'operation N' a problem names."""
    import re
    m = re.search(r"operation (\d+)", problem)
    if m and int(m.group(1)) < len(emitted_by):
        return f"{emitted_by[int(m.group(1))].label()}: "
    return ""


def build_subgraph_model(source: SourceModel, k: int, feature_level: int, cache: dict) -> nnapi.Model:
    """A referenced NNAPI model for source subgraph k (IF/WHILE bodies); built once."""
    if k in cache:
        if cache[k] is None:
            raise Unsupported(Reason.INVALID, f"subgraph {k} refers to itself")
        return cache[k]
    cache[k] = None
    prepare_source(source)
    graph = source.graphs[k]
    for node in graph.nodes:
        verdict = check_node(source, k, node, feature_level)
        if isinstance(verdict, Unsupported):
            raise Unsupported(verdict.reason, f"subgraph {graph.name!r} {node.label()}: {verdict.detail}",
                              verdict.feature_level_needed)
    model, _ = build_model(source, k, list(range(len(graph.nodes))), feature_level, subgraph_models=cache)
    cache[k] = model
    return model


def note_folds(result: ConversionResult, ctx: ConversionContext) -> None:
    """Each node whose operation model_folds.py folded into another's says so in its note, no longer lists that
    operation, and, when nothing of its own is left, is absorbed into the other node."""
    gone = set()
    for removed, into, what, how, operation, name in getattr(ctx, "folds", []):
        r = result.nodes[removed.index]
        if operation not in gone and name in r.nnapi_ops:  # (one PAD read by two convolutions: one operation gone)
            gone.add(operation)
            k = r.nnapi_ops.index(name)
            r.nnapi_ops = r.nnapi_ops[:k] + r.nnapi_ops[k + 1:]
        # a node that still emits operations lost only the one folded: the note says which, not the whole node
        folded = f"folded into {into.label()} {what}" if not r.nnapi_ops else \
            f"its {name} (one of {len(r.nnapi_ops) + 1} operations) folded into {into.label()} {what}; " \
            f"{len(r.nnapi_ops)} remain"
        r.note = "; ".join(filter(None, [r.note, folded]))
        if not r.nnapi_ops and removed.index != into.index:
            r.absorbed = {"into": into.index, "how": how}


def convert_source(source: SourceModel, feature_level: int = 8, input_shapes=None,
                   partial: bool = False) -> ConversionResult:
    check_input_shapes(source, input_shapes)
    nodes = check_graph(source, feature_level, input_shapes)
    result = ConversionResult(source, feature_level, nodes)
    graph = source.main
    result.state = [{"variable": s.variable, "input": graph.tensors[s.input].name,
                     "output": graph.tensors[s.output].name, "initial": s.initial} for s in graph.state]
    if result.complete:
        model, ctx = build_model(source, source.main_index, list(range(len(graph.nodes))), feature_level,
                                 input_shapes)
        result.model = model
        result.operand_map = {o: (t, graph.tensors[t].name) for o, t in ctx.tensor_of.items()}
        result.operand_perm = dict(ctx.operand_perm)
        result.operation_nodes = [n.index for n in ctx.emitted_by]
        result.io_rewrites = {graph.tensors[t].name: v for t, v in ctx.io_rewrites.items()
                              if t in graph.model_inputs or t in graph.model_outputs}
        result.partitions = [Partition(list(range(len(graph.nodes))), graph.model_inputs, graph.model_outputs,
                                       model, result.operand_map)]
        note_folds(result, ctx)
        return result
    parts, fallback = partition(graph, nodes)
    result.fallback_nodes = fallback
    if partial:
        for p in parts:
            p.model, ctx = build_model(source, source.main_index, p.nodes, feature_level, input_shapes, p.inputs,
                                       p.outputs)
            p.inputs = [t for t in p.inputs if t in ctx.operand_of]   # the boundary tensors the partition reads
            p.operand_map = {o: (t, graph.tensors[t].name) for o, t in ctx.tensor_of.items()}
            p.operand_perm = dict(ctx.operand_perm)
            note_folds(result, ctx)
            result.io_rewrites.update({graph.tensors[t].name: v for t, v in ctx.io_rewrites.items()
                                       if t in p.inputs or t in p.outputs})
    result.partitions = parts
    return result
