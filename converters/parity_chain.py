"""A whole-model reference for a TFLite model whose custom operators LiteRT cannot run: the framework's
segments between the custom operators (each cut out as a sub-model LiteRT runs on its own) chained with an
independent numpy reference of each custom operator (parity_custom_refs.py), in the graph's order, every
segment fed the values the chain computed before it. The model's outputs can then be compared end to end,
and each custom node's output on its own (fed the executor's inputs of that node).
"""
from __future__ import annotations

import numpy as np

from .parity_custom_refs import NoReference, run_custom


class ChainFailed(Exception):
    """A segment of the chain could not run on its own (the message says which)."""


def _steps(graph) -> list:
    """The graph in execution order as ("segment", Partition) and ("custom", node) steps."""
    from .parity_partitions import framework_segments
    steps = [(seg.nodes[0], "segment", seg) for seg in framework_segments(graph)]
    steps += [(n.index, "custom", n) for n in graph.nodes if n.op.startswith("CUSTOM:")]
    return [(kind, what) for _, kind, what in sorted(steps, key=lambda s: s[0])]


def _value(graph, known: dict, t: int):
    tensor = graph.tensors[t]
    return tensor.data if tensor.is_constant and tensor.data is not None else known.get(t)


def chained_run(graph, data: bytes, main_index: int, inputs: list, reference: str) -> tuple[dict, dict]:
    """({tensor index: value} for every tensor the chain computed, {custom node index: why it has no value})."""
    from .extract import ExtractError, tflite_submodel
    from .runners import ReferenceFailed, run_litert
    known = dict(zip(graph.inputs, inputs))
    lacking: dict = {}
    for kind, step in _steps(graph):
        if kind == "custom":
            ins = [_value(graph, known, t) for t in step.inputs if t >= 0]
            if any(v is None for v in ins):
                lacking[step.index] = "an input depends on a custom node without a reference"
                continue
            try:
                outs = run_custom(step, [np.asarray(v) for v in ins], graph.tensors[step.outputs[0]].shape)
                known.update((t, v) for t, v in zip(step.outputs, outs) if t >= 0)
            except NoReference as e:
                lacking[step.index] = str(e)
            continue
        if any(t not in known for t in step.inputs):
            continue   # downstream of a custom node without a reference: its outputs stay unknown
        try:
            sub = tflite_submodel(data, main_index, step.nodes, step.inputs, step.outputs)
            outs = run_litert(sub, [known[t] for t in step.inputs], reference)
        except (ExtractError, ReferenceFailed) as e:
            raise ChainFailed(f"segment of nodes {step.nodes[0]}-{step.nodes[-1]} cannot run on its own: {e}") \
                from None
        known.update(zip(step.outputs, outs))
    return known, lacking


def custom_node_checks(graph, executor: dict, chained: dict) -> list:
    """Each custom node's reference fed the executor's values of its inputs, the chain's where the converted
    model keeps no operand of an input (a composition read its parts instead): [(node, output tensor,
    reference value or None, why none, how many inputs came from the chain)], one per output."""
    checks = []
    for node in graph.nodes:
        if not node.op.startswith("CUSTOM:"):
            continue
        outs = [t for t in node.outputs if t >= 0]
        mine = [_value(graph, executor, t) for t in node.inputs if t >= 0]
        ins = [v if v is not None else _value(graph, chained, t) for v, t in zip(mine, [t for t in node.inputs
                                                                                        if t >= 0])]
        if any(v is None for v in ins):
            checks += [(node, out, None, "no value of one of its inputs", 0) for out in outs]
            continue
        try:
            refs = run_custom(node, [np.asarray(v) for v in ins], graph.tensors[outs[0]].shape)
            checks += [(node, out, ref, "", sum(v is None for v in mine)) for out, ref in zip(outs, refs)]
        except NoReference as e:
            checks += [(node, out, None, str(e), 0) for out in outs]
    return checks


CHAINED = "chained: LiteRT ({reference}) runs the segments between the custom operators, parity's numpy " \
          "references (converters/parity_custom_refs.py) the custom operators"


def check_chained(report, result, data: bytes, inputs: list, reference: str, others: list, tol: dict,
                  dq_steps: dict) -> list:
    """Fold one sample into the report: every model output the chain reaches against the executor's (the
    others in report.unchecked_outputs, with why), each custom node against its reference fed the executor's
    inputs (report.custom_nodes). With `others` (--tolerance spread), the chain also runs on those kernel sets
    and the outputs' spread between them widens the tolerance; returns the ones that ran it."""
    from .parity_references import framework_spread, tolerance_for
    from .parity_report import compare, merge_parity, rank0_as_source, to_source_layout
    from .running import run_traced, to_nnapi_inputs
    graph, model = result.source.main, result.model
    known, lacking = chained_run(graph, data, result.source.main_index, inputs, reference)
    spreads, ran = None, []
    if others:
        runs = [[known.get(t) for t in graph.outputs]]
        for r in others:
            try:
                runs.append([chained_run(graph, data, result.source.main_index, inputs, r)[0].get(t)
                             for t in graph.outputs])
                ran.append(r)
            except ChainFailed:   # a kernel set that cannot run a segment is left out of the spread
                continue
        spreads = framework_spread([(o, {}) for o in runs if all(v is not None for v in o)], graph)
    got, trace = run_traced(model, to_nnapi_inputs(result, inputs))
    executor = dict(zip(graph.inputs, inputs))
    for o, (t, _) in result.operand_map.items():
        if o in trace and t not in executor:
            executor[t] = to_source_layout(result, o, trace[o], graph.tensors[t].dtype)
    report.checked_by = CHAINED.format(reference=reference)
    by_name = {o.name: o for o in report.outputs}
    unchecked = {u["name"]: u for u in report.unchecked_outputs}
    for j, t_index in enumerate(graph.outputs[:len(model.outputs)]):
        t = graph.tensors[t_index]
        ref = known.get(t_index)
        if ref is None:
            why = next(iter(lacking.values()), "the chain does not reach it")
            unchecked.setdefault(t.name, {"name": t.name, "why": f"no reference reaches it: {why}"})
            continue
        mine = None if got[j] is None else rank0_as_source(to_source_layout(result, model.outputs[j], got[j],
                                                                            t.dtype), ref)
        par = compare(t.name, ref, mine, t.quant is not None and ref.dtype.kind in "iu", model.relaxed,
                      tolerance_for(tol, dq_steps, t_index, spreads))
        by_name[t.name] = merge_parity(by_name[t.name], par) if t.name in by_name else par
    report.outputs = [by_name[graph.tensors[t].name] for t in graph.outputs if graph.tensors[t].name in by_name]
    report.unchecked_outputs = list(unchecked.values())
    nodes = {(c["node_index"], c["tensor"]): c for c in report.custom_nodes or []}   # one entry per output
    for node, out, ref, why, from_chain in custom_node_checks(graph, executor, known):
        entry = nodes.setdefault((node.index, graph.tensors[out].name),
                                 {"node_index": node.index, "op": node.op[len("CUSTOM:"):],
                                  "tensor": graph.tensors[out].name})
        mine = executor.get(out)
        if ref is None or mine is None:
            entry.setdefault("checked_by", None)
            entry.setdefault("why", why or "the converted model holds no value of its output tensor: "
                                           "judged only through the model outputs it reaches")
            continue
        par = compare(graph.tensors[out].name, ref, rank0_as_source(np.asarray(mine), ref), False, model.relaxed,
                      tol_float_only(tol))
        worse = par.max_abs_error > entry.get("max_abs_error", -1.0)
        entry.update(checked_by="parity's numpy reference fed the executor's inputs of the node" + (
            f" ({from_chain} from the chain: the converted model keeps no operand of them)" if from_chain else ""),
            passed=entry.get("passed", True) and par.passed)
        if worse:
            entry.update(max_abs_error=par.max_abs_error, allowed=par.allowed)
    report.custom_nodes = list(nodes.values())
    return ran


def tol_float_only(tol: dict) -> dict:
    """The float rules of `tol` (its --atol / --rtol), without the spread, which measures whole outputs."""
    return {k: v for k, v in tol.items() if k in ("atol", "rtol")}
