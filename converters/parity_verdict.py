"""Parity's verdict rules: which rule judges a model (each operation locally, or end to end), the outputs
and state folded into the report per invocation, and --layerwise's first divergent operation."""
from __future__ import annotations

from typing import Optional

from .convert import ConversionResult
from .parity_local import integers_as_reference, runtime_quantized
from .parity_references import dequantized_steps, is_float_model, tolerance_for
from .parity_report import ParityReport, compare, merge_parity, rank0_as_source, to_source_layout


def verdict_rule(local: Optional[bool], max_lsb: Optional[int], graph, result) -> tuple[str, str]:
    """local for quantized models (each operation within one stored unit of the kernels that share NNAPI's
    arithmetic; end-to-end drift reported), end-to-end otherwise or when --max-lsb asks for it."""
    if max_lsb is not None:
        return "end-to-end", "--max-lsb makes the end-to-end error the rule"
    if local is False:
        return "end-to-end", "--no-local"
    if not is_float_model(graph) or runtime_quantized(graph):
        return "local", ("default for quantized models: every operation within one stored unit of the kernels "
                         "that share NNAPI's arithmetic; the end-to-end drift is reported beside it")
    if result.model is None:
        return "end-to-end", "partitions are judged at their outputs"
    return "end-to-end", "default for float models" + ("; --local reports each operation" if local else "")


def conclude(report: ParityReport) -> bool:
    """Decide the report's `passed` (stored in its verdict with `failures`, one line per reason):

    - at least one output was compared (the model's, or with --partial a partition's), and every model output
      was compared or is listed in `unchecked_outputs` with the reason;
    - end-to-end rule: every compared output, partition, segment and custom node within its tolerance;
    - local rule (quantized models): at least one operation judged, every judged operation within its
      tolerance, no unjudged operation whose reason is not harmless (parity_local.HARMLESS_UNJUDGED), no output
      of another shape, and the end-to-end bound against the reference kernels (parity_end_to_end) held."""
    from .parity_local import uncomparable
    parts = report.partitions or []
    failures = []
    compared = [o.name for o in report.outputs] + [o["name"] for p in parts  # a segment's are not the model's
                                                   if not p.get("unchecked") and not p.get("segment")
                                                   for o in p["outputs"]]
    if not compared:
        why = "; ".join(f"{u['name']!r}: {u['why']}" for u in report.unchecked_outputs[:3])
        failures.append("no output was compared" + (f" ({why})" if why else ""))
    explained = set(compared) | {u["name"] for u in report.unchecked_outputs}
    unexplained = [n for n in report.model_outputs if n not in explained]
    if unexplained:
        failures.append(f"model output {unexplained[0]!r} was neither compared nor explained")
    failures += [p["unchecked"] for p in parts if p.get("unchecked")]
    failures += [f"custom node {c['node_index']} {c['op']} writing {c['tensor']!r}: {c['max_abs_error']:.3g} beyond "
                 f"{c['allowed']:.3g}" for c in report.custom_nodes or [] if c.get("passed") is False]
    if report.verdict["rule"] == "local":
        failing = [e for e in report.local or [] if not e["passed"]]
        if failing:
            e = failing[0]
            failures.append(f"{len(failing)} operation(s) beyond their tolerance, first operation "
                            f"{e['operation_index']} ({e['nnapi_op']} writing {e['source_tensor']!r})")
        harmful = [u for u in report.unjudged or [] if not u["harmless"]]
        if harmful:
            failures.append(f"{len(harmful)} operation(s) could not be judged, first operation "
                            f"{harmful[0]['operation_index']} ({harmful[0]['nnapi_op']}): {harmful[0]['why']}")
        for name in uncomparable(report.outputs, parts):
            failures.append(f"output {name!r} has another shape or NaNs where the framework has none")
        e2e = report.end_to_end
        if e2e is None:
            failures.append("no output was compared end to end with the reference kernels")
        elif not e2e["passed"]:
            worst = next((o for o in e2e["outputs"] if not o["passed"]), None)
            failures.append(f"end to end against {e2e['reference']}: output {worst['name']!r} "
                            + (f"{worst['max_units']:g} units beyond the allowed {worst['allowed_units']}"
                               if worst.get("max_units") is not None else
                               f"{worst['max_abs_error']:.3g} beyond {worst.get('allowed', 0):.3g}"))
    else:
        failures += [f"output {o.name!r}: max |diff| {o.max_abs_error:.3g} beyond the allowed {o.allowed:.3g}"
                     for o in report.outputs if not o.passed]
        failures += [f"{'segment' if p.get('segment') else 'partition'} {p['index']}: "
                     + ", ".join(f"{o['name']!r} {o['max_abs_error']:.3g} > {o['allowed']:.3g}"
                                 for o in p["outputs"] if not o["passed"])
                     for p in parts if not p.get("unchecked") and not p["passed"]]
    report.verdict["passed"] = not failures
    report.verdict["failures"] = failures
    return not failures


def output_coverage(report: ParityReport, result: ConversionResult) -> None:
    """Set how the outputs were compared (`checked_by`) and list each model output no comparison reached, with
    why (`unchecked_outputs`), unless the chained reference has (parity_chain)."""
    if report.checked_by:
        return
    graph = result.source.main
    if result.model is not None:
        if report.outputs:
            report.checked_by = f"whole-model reference {report.reference}"
            return
        why = f"the framework cannot run the whole model ({report.whole_model_run})" if report.whole_model_run \
            else "not compared"
        report.checked_by = "segments only" if report.partitions else ""
        report.unchecked_outputs = [{"name": n, "why": why} for n in report.model_outputs]
        return
    fed = "the framework's tensors of the whole-model run" if not report.whole_model_run else \
        "sub-models the framework runs on their own"
    report.checked_by = f"partitions: each NNAPI partition's outputs, fed with {fed}"
    made_by = {t: n for n in graph.nodes for t in n.outputs}
    in_partition = {t for p in result.partitions for t in p.outputs}
    unchecked = []
    for t in graph.outputs:
        if t in in_partition:
            continue
        node = made_by.get(t)
        why = (f"computed by CPU fallback node {node.index} {node.op}, which the framework runs: nothing converted "
               f"to compare" if node is not None else "a model input passed through")
        unchecked.append({"name": graph.tensors[t].name, "why": why})
    report.unchecked_outputs = unchecked


def localization_line(report: "ParityReport", result: ConversionResult) -> str:
    """One line on how --layerwise localized, so an empty first divergence never reads as a result."""
    how = result.localization or "operands matched to source tensors by name"
    made = {o for op in result.model.operations for o in op.outputs}
    if report.first_divergence is not None:
        return how
    if "cannot be matched" in how:
        return how + "; no first divergence can be named"
    if not made & set(result.operand_map):
        return "no operation output maps to a source tensor, so no first divergence can be named"
    if report.passed:
        return how + "; every mapped intermediate tensor is within its tolerance"
    return how + ("; every intermediate tensor that maps to a source tensor is within its tolerance: the "
                  "difference appears only at the outputs")


def compare_outputs(report: ParityReport, result: ConversionResult, graph, got_outs, ref_outs, ref_tensors,
                     tol, dq_steps: dict, spreads: Optional[dict]) -> None:
    """Fold one invocation's outputs into the report, and each state variable's value after it (the state
    output, against the reference's tensor of the value it assigned)."""
    model = result.model
    pairs = [(report.outputs, j, j, graph.outputs[j], ref) for j, ref in enumerate(ref_outs[:len(model.outputs)])]
    tracked = [(v, result.operand_map.get(model.outputs[v.output], (None,))[0]) for v in model.state]
    tracked = [(v, t) for v, t in tracked if t in ref_tensors]  # the reference's tensor of the assigned value
    report.state_names = [v.variable for v, _ in tracked]
    pairs += [(report.state, k, v.output, t, ref_tensors[t]) for k, (v, t) in enumerate(tracked)]
    for into, j, position, t_index, ref in pairs:
        o, t, got = model.outputs[position], graph.tensors[t_index], got_outs[position]
        got = to_source_layout(result, o, got, t.dtype) if got is not None else None
        par = compare(t.name, ref, rank0_as_source(got, ref), t.quant is not None and ref.dtype.kind in "iu",
                      model.relaxed, tolerance_for(tol, dq_steps, t_index, spreads))
        into[j:j + 1] = [merge_parity(into[j], par) if j < len(into) else par]


def merge_layers(old: Optional[list], new: list) -> list:
    """Per operation, the worst error over samples and steps (and the allowed error that went with it)."""
    if not old:
        return new
    by_op = {e["operation_index"]: e for e in old}
    for e in new:
        prev = by_op.get(e["operation_index"])
        if prev is None or e["max_abs_error"] > prev["max_abs_error"] or not e["passed"]:
            by_op[e["operation_index"]] = dict(e, passed=e["passed"] and (prev is None or prev["passed"]))
    return [by_op[k] for k in dict.fromkeys(e["operation_index"] for e in old + new)]


def first_divergence(result: ConversionResult, trace: dict, ref_tensors: dict, tol: dict,
                     spreads: Optional[dict] = None, layers: Optional[list] = None) -> Optional[dict]:
    """The first operation (execution order) whose output mirrors a source tensor and leaves the tolerance.
    With `layers`, every such operation's error is appended to it, in execution order (the search then
    goes on past the first divergence)."""
    from nnapi.validate import execution_order
    model, graph = result.model, result.source.main
    steps = dequantized_steps(graph)
    errors: dict[int, float] = {}
    found = None
    for k in execution_order(model):
        op = model.operations[k]
        for o in op.outputs:
            if o not in result.operand_map or o not in trace:
                continue
            t_index, t_name = result.operand_map[o]
            ref = ref_tensors.get(t_index)
            if ref is None:
                continue
            t = graph.tensors[t_index]
            got = integers_as_reference(to_source_layout(result, o, trace[o], t.dtype), ref)
            par = compare(t_name, ref, got.reshape(ref.shape) if got.size == ref.size else got,
                          t.quant is not None and ref.dtype.kind in "iu", model.relaxed,
                          tolerance_for(tol, steps, t_index, spreads))
            errors[o] = par.max_abs_error
            if layers is not None:
                layers.append({"operation_index": k, "nnapi_op": op.code.name, "source_tensor": t_name,
                               "max_abs_error": par.max_abs_error, "allowed": par.allowed, "passed": par.passed})
            if not par.passed and found is None:
                ins = [{"operand": i, "source_tensor": result.operand_map[i][1], "max_abs_error": errors[i]}
                       for i in op.inputs if i in errors]
                found = {"operation_index": k, "nnapi_op": op.code.name, "source_tensor": t_name,
                         "max_abs_error": par.max_abs_error, "allowed": par.allowed, "inputs": ins}
                if layers is None:
                    return found
    return found
