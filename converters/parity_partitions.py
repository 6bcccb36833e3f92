"""Parity of a partly converted model, or one the framework cannot run whole: each NNAPI partition fed
with the framework's tensors at its boundary (from the whole-model run, or cut out as a sub-model the
framework runs on its own), and the framework's segments between custom operators fed with the executor's
values."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .convert import ConversionResult
from .partition_feed import Unchecked, check_fed, stand_in, unchecked_entry
from .parity_references import dequantized_steps, framework_spread, tolerance_for
from .parity_report import OutputParity, ParityError, compare, merge_parity, rank0_as_source, to_source_layout
from .runners import ReferenceFailed, run_litert, run_onnxruntime
from .running import run_traced, to_nnapi_inputs


def check_partitions(result: ConversionResult, ref_tensors: dict, tol: dict, previous,
                      spreads: Optional[dict] = None, feeder=None) -> list:
    """Each partition on its own, fed with the framework's tensors at its boundary: those of the
    whole-model run (`ref_tensors`), or, with `feeder`, what `feeder(k, partition)` returns:
    ({tensor: framework array} for its inputs and outputs, how it was fed, {tensor: spread} or None)."""
    graph = result.source.main
    steps = dequantized_steps(graph)
    out = previous or [None] * len(result.partitions)
    for k, p in enumerate(result.partitions):
        if out[k] is not None and out[k].get("unchecked"):
            continue  # (an earlier sample found why it cannot be)
        if feeder is None:
            lost = [graph.tensors[t].name for t in (*p.inputs, *p.outputs) if t not in ref_tensors]
            if lost:  # litert-xnnpack: computed inside a delegated partition, never written to its tensor
                raise ParityError(f"the reference kept no value of tensor {lost[0]!r} at the boundary of partition "
                                  f"{k}; check partitions against litert or litert-ref")
            tensors, fed = ref_tensors, "the framework's tensors of the whole-model run"
        fake = ConversionResult(result.source, result.feature_level, [], model=p.model, operand_map=p.operand_map,
                                operand_perm=p.operand_perm)
        try:
            if feeder is not None:
                tensors, fed, spreads = feeder(k, p)
            ins = to_nnapi_inputs(fake, [tensors[t] for t in p.inputs], p.model)
            check_fed(p.model, [graph.tensors[t].name for t in p.inputs], ins)
        except Unchecked as e:
            out[k] = unchecked_entry(k, p, str(e))
            continue
        got, _ = run_traced(p.model, ins)
        entry = out[k] or {"index": k, "nodes": p.nodes, "passed": True, "outputs": [], "fed": fed}
        for j, (o, t_index) in enumerate(zip(p.model.outputs, p.outputs)):
            t = graph.tensors[t_index]
            g = to_source_layout(fake, o, got[j], t.dtype)
            par = compare(t.name, tensors[t_index], rank0_as_source(g, tensors[t_index]),
                          t.quant is not None and g.dtype.kind in "iu",
                          p.model.relaxed, tolerance_for(tol, steps, t_index, spreads))
            par.diffs = None  # partition records keep statistics only
            if j < len(entry["outputs"]):  # a later sample: aggregate exactly like the model's outputs
                par = merge_parity(OutputParity(**entry["outputs"][j]), par)
            d = {kk: v for kk, v in par.__dict__.items() if kk != "diffs"}
            entry["outputs"][j:j + 1] = [d]
            entry["passed"] = entry["passed"] and d["passed"]
        out[k] = entry
    return out


def extracted_feeder(result: ConversionResult, fmt: str, model_path: str, data: bytes, inputs, reference: str,
                     seed: int, spread_references: Sequence[str] = ()):
    """A feeder for check_partitions when the framework cannot run the whole model: each partition is
    cut out as a standalone source model (converters.extract) and run by the framework. Its inputs are
    the model's inputs or earlier partitions' framework outputs where those exist, else seeded values
    in the tensor's natural range (say so in `fed`). With `spread_references`, the sub-model also runs on
    those kernel sets, for the spread tolerance."""
    from .extract import ExtractError, onnx_submodel, tflite_submodel
    graph = result.source.main
    known = dict(zip(graph.inputs, inputs))
    rng = np.random.default_rng(seed)

    def feed(k: int, p) -> tuple[dict, str]:
        drawn = []
        for t in p.inputs:
            if t not in known:
                known[t] = stand_in(rng, graph.tensors[t])  # Unchecked for an unknown rank
                drawn.append(graph.tensors[t].name)
        feeds = [known[t] for t in p.inputs]
        try:
            if fmt == "tflite":
                sub = tflite_submodel(data, result.source.main_index, p.nodes, p.inputs, p.outputs)
                run = lambda ref: run_litert(sub, feeds, ref)  # noqa: E731
            else:
                sub = onnx_submodel(model_path, [graph.tensors[t].name for t in p.inputs],
                                    [graph.tensors[t].name for t in p.outputs])
                run = lambda ref: run_onnxruntime(sub, feeds, optimized=ref == "onnxruntime-optimized")[0]  # noqa
            outs = run(reference)
            spreads = None
            if spread_references:
                runs = [(outs, {})] + [(run(r), {}) for r in spread_references]
                spreads = framework_spread(runs, _Outputs(p.outputs))
        except (ExtractError, ReferenceFailed) as e:
            raise ParityError(f"partition {k}: the framework cannot run it as a sub-model either: {e}") from None
        known.update(zip(p.outputs, outs))
        how = (f"seeded random values for {', '.join(map(repr, drawn))} (made outside NNAPI partitions)"
               if drawn else "the model's inputs and earlier partitions' framework outputs") + \
            ", as a sub-model the framework runs on its own"
        return known, how, spreads

    return feed


def framework_segments(graph) -> list:
    """Maximal runs of main-graph nodes (execution order) that are not custom operators, as Partitions
    with the tensors they read from outside and the ones read after them (or that the model outputs)."""
    from .convert import Partition
    runs, run = [], []
    for node in graph.nodes:
        if node.op.startswith("CUSTOM:"):
            if run:
                runs.append(run)
            run = []
        else:
            run.append(node.index)
    if run:
        runs.append(run)
    segments = []
    for nodes in runs:
        inside = set(nodes)
        made = {t for k in nodes for t in graph.nodes[k].outputs if t >= 0}
        later = {t for n in graph.nodes if n.index not in inside for t in n.inputs} | set(graph.outputs)
        reads = [t for k in nodes for t in graph.nodes[k].inputs
                 if t >= 0 and t not in made and not graph.tensors[t].is_constant]
        segments.append(Partition(nodes, list(dict.fromkeys(reads)), sorted(t for t in made if t in later)))
    return segments


def check_segments(result: ConversionResult, fmt: str, model_path: str, data: bytes, inputs, reference: str,
                    tol: dict, previous, why: Exception) -> list:
    """A completely converted model whose custom operators the framework lacks: every run of other nodes
    is cut out as a sub-model, fed with the executor's values at its boundary, and its framework
    outputs are compared with the executor's at the same tensors (the custom operators themselves are
    judged only through what follows them)."""
    from .extract import ExtractError, onnx_submodel, tflite_submodel
    graph = result.source.main
    steps = dequantized_steps(graph)
    _, trace = run_traced(result.model, to_nnapi_inputs(result, inputs))
    executor = dict(zip(graph.inputs, inputs))
    for o, (t, _) in result.operand_map.items():
        if o in trace and t not in executor:
            executor[t] = to_source_layout(result, o, trace[o], graph.tensors[t].dtype)
    segments = framework_segments(graph)
    out = previous or [None] * len(segments)
    for k, seg in enumerate(segments):
        outputs = [t for t in seg.outputs if t in executor]
        if not outputs or any(t not in executor for t in seg.inputs):
            continue
        feeds = [executor[t] for t in seg.inputs]
        try:
            if fmt == "tflite":
                sub = tflite_submodel(data, result.source.main_index, seg.nodes, seg.inputs, outputs)
                ref = run_litert(sub, feeds, reference)
            else:
                sub = onnx_submodel(model_path, [graph.tensors[t].name for t in seg.inputs],
                                    [graph.tensors[t].name for t in outputs])
                ref = run_onnxruntime(sub, feeds, optimized=reference == "onnxruntime-optimized")[0]
        except (ExtractError, ReferenceFailed) as e:
            raise ParityError(f"{why}; segment {k} (nodes {seg.nodes[0]}-{seg.nodes[-1]}) cannot run on its own "
                              f"either: {e}") from None
        entry = out[k] or {"index": k, "nodes": seg.nodes, "passed": True, "outputs": [], "segment": True,
                           "fed": "the executor's values at its boundary, as a sub-model the framework runs on "
                                  "its own (the framework has no kernel for the custom operators between segments)"}
        for j, (t, r) in enumerate(zip(outputs, ref)):
            tensor = graph.tensors[t]
            par = compare(tensor.name, r, rank0_as_source(executor[t], r),
                          tensor.quant is not None and r.dtype.kind in "iu", result.model.relaxed,
                          tolerance_for(tol, steps, t))
            par.diffs = None
            if j < len(entry["outputs"]):
                par = merge_parity(OutputParity(**entry["outputs"][j]), par)
            entry["outputs"][j:j + 1] = [{kk: v for kk, v in par.__dict__.items() if kk != "diffs"}]
            entry["passed"] = entry["passed"] and entry["outputs"][j]["passed"]
        out[k] = entry
    checked = [e for e in out if e is not None]
    if not checked:
        raise ParityError(f"{why}; no run of the model's other nodes is left to check on its own "
                          f"(try --reference litert-xnnpack, which runs some custom operators)")
    return checked


class _Outputs:
    """A stand-in graph whose outputs are a partition's, for framework_spread."""

    def __init__(self, outputs):
        self.outputs = list(outputs)


__all__ = ["check", "compare", "ParityReport", "OutputParity", "ParityError", "MissingDependency", "SourceError"]
