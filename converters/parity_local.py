"""Local parity (`nnapi parity --local`): every NNAPI operation judged on its own.

Each operation is fed the source framework's tensors for its inputs (where an input mirrors a source
tensor; an operand the converter made internally gets the executor's own value), run alone by the
executor (`CompiledModel.run_operation`), and its outputs are compared with the framework's tensors.
A quantized model's error then shows where it arises instead of how it compounds: the default verdict
for quantized models is that every operation is within one stored unit of the framework kernels that
share NNAPI's arithmetic (LiteRT's reference kernels for TFLite).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .context import stored

# the framework kernels whose arithmetic NNAPI's quantized operations are defined as
LOCAL_REFERENCES = {"tflite": "litert-ref", "onnx": "onnxruntime"}
# onnxruntime's dynamic quantization: uint8 activations quantized at run time (their scale and zero point
# are tensors, not NNAPI quantization parameters), converted to float32 holding the same integers
RUNTIME_QUANTIZING = {"DynamicQuantizeLinear", "DynamicQuantizeLSTM", "MatMulInteger", "ConvInteger"}


def runtime_quantized(graph) -> bool:
    """Whether the model quantizes activations at run time (onnxruntime's quantize_dynamic): it is judged
    as quantized models are, operation by operation (its integer tensors exactly, see recurrent_steps)."""
    return any(n.op in RUNTIME_QUANTIZING for n in graph.nodes)


def recurrent_steps(graph, ref_tensors: dict) -> dict:
    """{tensor index: (allowed, description, unit)} for the outputs of every DynamicQuantizeLSTM.

    dynamic_quant_lstm.py computes onnxruntime's integers and float32 roundings exactly, except sigmoid and
    tanh, which onnxruntime evaluates with MLAS's rational approximations (a few float32 ulps off). Where
    such an ulp moves the previous h across a rounding boundary of its run-time uint8 quantization, one
    integer of h differs by 1: each gate's pre-activation then moves by at most unit * max|R| (unit = that
    quantization's step, (max(h, 0) - min(h, 0)) / 255, taken from the reference's h), the gates by a
    quarter of it (sigmoid) or all of it (tanh), and h and c by at most 2 unit * max|R| for |c| <= 2.
    That one flipped unit through one step is the allowance (tests/converters/onnx/test_dynamic_quant_lstm.py
    measures the error against it); the unit is what max_units counts."""
    steps = {}
    for node in graph.nodes:
        if node.op != "DynamicQuantizeLSTM" or len(node.inputs) < 12:
            continue
        r, scale = graph.tensors[node.inputs[2]].data, graph.tensors[node.inputs[10]].data
        zp = graph.tensors[node.inputs[11]].data if node.inputs[11] >= 0 else 0
        hs = [ref_tensors.get(t) for t in node.outputs[:2] if t >= 0]
        h = next((v for v in hs if v is not None), None)
        if r is None or scale is None or zp is None or h is None:
            continue
        dirs = r.shape[0]
        deq = (r.astype(np.float64) - np.asarray(zp, np.float64).reshape(dirs, 1, -1)) * \
            np.asarray(scale, np.float64).reshape(dirs, 1, -1)
        unit = (max(float(h.max()), 0.0) - min(float(h.min()), 0.0)) / 255
        max_r = float(np.abs(deq).max())
        for t in node.outputs:
            if t >= 0:
                steps[t] = (2 * max_r * unit, f"h's run-time uint8 step {unit:.3g} x 2 max|R| ({max_r:.3g}): one "
                                              f"flipped unit of h through one step of node {node.index} "
                                              f"DynamicQuantizeLSTM", unit)
    return steps


def integers_as_reference(mine: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """A float32 tensor holding integers (the float form of run-time quantization) in the reference's integer
    type; anything else unchanged (a non-integral value then fails the type check)."""
    if ref.dtype.kind in "iu" and mine.dtype.kind == "f" and np.array_equal(mine, np.round(mine)):
        return mine.astype(ref.dtype)
    return mine


def _nnapi_layout(result, operand: int, value: np.ndarray) -> np.ndarray:
    """A source tensor as the NNAPI operand holds it (layout permutation, int8 storage, rank-0 as [1])."""
    model = result.model
    t = model.operands[operand].type
    perm = result.operand_perm.get(operand)
    x = np.asarray(value)
    if perm is not None:
        x = np.ascontiguousarray(np.transpose(x, perm))
    x = stored(t.code, x)
    dims = tuple(t.dimensions or ())
    if t.is_tensor and x.shape != dims and dims and 0 not in dims and x.size == int(np.prod(dims)):
        x = x.reshape(dims)
    return x.astype(t.dtype) if t.dtype is not None and x.dtype != t.dtype else x


# why an operation was left unjudged, by kind; only TEMPORARIES_ONLY is harmless: such an operation is one
# step of a lowering, and the operation of the same lowering that writes the source tensor is judged on the
# values this pass computed for the temporaries (so its error is in that judgement)
TEMPORARIES_ONLY = "writes only operands the converter made (a lowering's temporaries, judged through the " \
                   "operation that writes the source tensor)"
HARMLESS_UNJUDGED = (TEMPORARIES_ONLY,)


def local_check(result, trace: dict, ref_tensors: dict, tol: dict, dq_steps: dict, reference: str,
                previous: Optional[list] = None, unjudged: Optional[dict] = None) -> list:
    """Per NNAPI operation: its error when fed the framework's inputs, over every output that mirrors a
    source tensor (the entry keeps the worst one, by error / allowed; `outputs_judged` counts them).
    `previous` (the same list from earlier samples or steps) is folded in: worst case per operation.
    `unjudged` ({operation index: why}) receives each operation that could not be judged, and why."""
    from nnapi.validate import execution_order

    from .running import compile_model
    model, graph = result.model, result.source.main
    recurrent = recurrent_steps(graph, ref_tensors)
    steps = {**dq_steps, **{t: v[:2] for t, v in recurrent.items()}}
    compiled = compile_model(model)
    constant = {i for i, o in enumerate(model.operands) if o.is_constant or o.lifetime.name == "NO_VALUE"}
    by_op = {e["operation_index"]: e for e in previous or []}
    unjudged = {} if unjudged is None else unjudged
    node_of = result.operation_nodes or []
    # operands without a source tensor (the temporaries of a lowering, e.g. FULLY_CONNECTED as RESHAPE,
    # CONV_2D, RESHAPE) take the value this local pass computed, so the operations one source node emitted
    # are judged together, from the framework's inputs, not from the whole run's drifted values
    local = {}
    for k in execution_order(model):
        op = model.operations[k]
        arrays = {}
        for i in op.inputs:
            if i < 0 or i in constant:
                continue
            t = result.operand_map.get(i, (None,))[0]
            if t is not None and ref_tensors.get(t) is not None:
                arrays[i] = _nnapi_layout(result, i, ref_tensors[t])
            elif i in local:
                arrays[i] = local[i]
            elif i in trace:
                arrays[i] = trace[i]
        lacking = [i for i in op.inputs if i >= 0 and i not in constant and i not in arrays]
        if lacking:
            unjudged.setdefault(k, f"its input operand {lacking[0]} ({model.operands[lacking[0]].name or 'unnamed'}) "
                                   f"has neither a framework value nor one of the executor's")
            continue
        try:
            outs = compiled.run_operation(k, arrays)
        except Exception as e:  # noqa: BLE001 - whatever the kernel raised, the operation is not judged: say so
            unjudged.setdefault(k, f"the executor raised on the framework's inputs: {type(e).__name__}: "
                                   f"{str(e).splitlines()[0][:200] if str(e) else ''}")
            continue
        local.update((o, got) for o, got in zip(op.outputs, outs) if got is not None)
        entry, mapped, kept_none = _judge_outputs(result, op, outs, ref_tensors, tol, steps, recurrent, k, reference)
        if entry is None:
            unjudged.setdefault(k, TEMPORARIES_ONLY if not mapped else
                                f"the framework kept no value of its tensor {kept_none!r}")
            continue
        node = node_of[k] if k < len(node_of) else None
        entry["source_node"] = None if node is None else f"{node} {graph.nodes[node].op}"
        old = by_op.get(k)
        if old is not None:   # an earlier sample or step: keep the worst error and every failure
            entry["passed"] = entry["passed"] and old["passed"]
            if old["max_abs_error"] > entry["max_abs_error"]:
                entry.update(max_abs_error=old["max_abs_error"], max_units=old["max_units"], allowed=old["allowed"],
                             source_tensor=old["source_tensor"])
        by_op[k] = entry
    for k in by_op:   # judged on another sample or step after all
        unjudged.pop(k, None)
    return [by_op[k] for k in sorted(by_op)]


def _judge_outputs(result, op, outs, ref_tensors, tol, steps, recurrent, k, reference):
    """(entry for the worst of the operation's outputs that mirror a source tensor, or None; whether any output
    mirrors one; the name of a mirrored tensor the framework kept no value of)."""
    from .parity_references import tolerance_for
    from .parity_report import compare, rank0_as_source, to_source_layout
    model, graph = result.model, result.source.main
    worst, mapped, kept_none, judged, all_passed = None, False, None, 0, True
    made = converter_tensors(graph)
    for o, got in zip(op.outputs, outs):
        t_index = result.operand_map.get(o, (None,))[0]
        if t_index is None or t_index in made:
            continue
        mapped = True
        tensor = graph.tensors[t_index]
        ref = ref_tensors.get(t_index)
        if ref is None:
            kept_none = kept_none or tensor.name
            continue
        mine = None if got is None else integers_as_reference(to_source_layout(result, o, got, tensor.dtype), ref)
        if mine is not None and mine.size == ref.size:
            mine = mine.reshape(ref.shape)
        quantized = tensor.quant is not None and ref.dtype.kind in "iu"
        par = compare(tensor.name, ref, rank0_as_source(mine, ref), quantized, model.relaxed,
                      tolerance_for(tol, steps, t_index))
        units = par.max_abs_error if quantized or (ref.dtype.kind in "iu" and mine is not None
                                                   and mine.dtype == ref.dtype) else None
        if t_index in recurrent and recurrent[t_index][2] > 0:
            units = par.max_abs_error / recurrent[t_index][2]
        judged += 1
        all_passed = all_passed and par.passed
        entry = {"operation_index": k, "nnapi_op": op.code.name, "source_tensor": tensor.name,
                 "reference": reference, "max_abs_error": par.max_abs_error, "max_units": units,
                 "allowed": par.allowed, "passed": par.passed}
        if worst is None or _badness(entry) > _badness(worst):
            worst = entry
    if worst is not None:
        worst.update(passed=all_passed, outputs_judged=judged)
    return worst, mapped, kept_none


def converter_tensors(graph) -> set:
    """Tensors the ONNX importer added to the source graph (the float twins of a QLinear operator computed in
    float, converters/onnx/fusion_context.py): no framework has their values, they are a lowering's temporaries."""
    return set(graph.__dict__.get("_float_twins", {}).values())


def _badness(entry: dict) -> tuple:
    """Failing first, then error / allowed."""
    err = entry["max_abs_error"]
    ratio = float("inf") if err != err else err / entry["allowed"] if entry["allowed"] else \
        (0.0 if err == 0 else float("inf"))
    return (not entry["passed"], ratio)


def local_check_partitions(result, ref_tensors: dict, tol: dict, dq_steps: dict, reference: str,
                           previous: Optional[list] = None, unjudged: Optional[dict] = None,
                           end_to_end=None) -> list:
    """local_check for each partition of a partial conversion (the framework ran the whole model, so every
    boundary tensor is known): each partition runs on the framework's boundary tensors, then each of its
    operations is judged on its own. Entries carry "partition"; `unjudged` is keyed (partition, operation).
    `end_to_end` (parity_end_to_end.EndToEnd) receives each partition's outputs of that run."""
    from .convert import ConversionResult
    from .running import run_traced, to_nnapi_inputs
    entries = []
    unjudged = {} if unjudged is None else unjudged
    for k, p in enumerate(result.partitions):
        earlier = [e for e in previous or [] if e.get("partition") == k]
        lost = [result.source.main.tensors[t].name for t in p.inputs if ref_tensors.get(t) is None]
        if lost:
            for j in range(len(p.model.operations)):
                unjudged.setdefault((k, j), f"partition {k}'s input {lost[0]!r} has no framework value")
            entries += earlier
            continue
        part = ConversionResult(result.source, result.feature_level, [], model=p.model, operand_map=p.operand_map,
                                operand_perm=p.operand_perm)
        outs, trace = run_traced(p.model, to_nnapi_inputs(part, [ref_tensors[t] for t in p.inputs], p.model))
        if end_to_end is not None:
            end_to_end.add_partition(k, p, part, outs, ref_tensors)
        mine = {op: why for (kk, op), why in unjudged.items() if kk == k}
        entries += [dict(e, partition=k) for e in local_check(part, trace, ref_tensors, tol, dq_steps, reference,
                                                              earlier, mine)]
        for key in [key for key in unjudged if key[0] == k]:
            del unjudged[key]
        unjudged.update(((k, op), why) for op, why in mine.items())
    return entries


def uncomparable(outputs: list, partitions: list) -> list:
    """Names of the model's or partitions' outputs whose shape (or NaNs) differs from the framework's: not
    drift, which the local verdict leaves to the end-to-end figures, but a different result."""
    records = [o if isinstance(o, dict) else o.__dict__ for o in outputs]
    records += [o for p in partitions or [] for o in p["outputs"]]
    return [o["name"] for o in records if not np.isfinite(o["max_abs_error"])]


class _PartitionOutput:
    """A partition's output record (a dict of OutputParity's fields) read like an OutputParity."""

    def __init__(self, record: dict):
        self.__dict__.update(record)


def drift_summary(outputs: list) -> dict:
    """The end-to-end figures reported next to a local verdict: the largest stored-unit error, the lowest
    cosine and, for classifier-shaped outputs, the lowest top-1 / top-5 agreement."""
    outputs = [_PartitionOutput(o) if isinstance(o, dict) else o for o in outputs]
    quantized = [o for o in outputs if o.lsb_histogram is not None]
    top1 = [o.top1_agreement for o in outputs if o.top1_agreement is not None]
    top5 = [o.top5_agreement for o in outputs if o.top5_agreement is not None]
    floats = [o for o in outputs if o.lsb_histogram is None]
    return {"max_units": max((o.max_abs_error for o in quantized), default=None) if not floats else None,
            "max_abs_error": max((o.max_abs_error for o in floats or outputs), default=None),
            "cosine": min((o.cosine for o in outputs), default=None),
            "top1_agreement": min(top1) if top1 else None, "top5_agreement": min(top5) if top5 else None}


def drift_line(local: list, drift: dict, samples: int) -> str:
    """One line: e.g. 'every operation within 1 unit; drift 7 units at the outputs from compounding
    (cosine 0.9998, top-1 agreement 100% over 20 samples)'."""
    worst = max((e["max_units"] for e in local if e["max_units"] is not None), default=0)
    failing = [e for e in local if not e["passed"]]
    head = (f"every operation within {worst:g} unit(s) of {local[0]['reference']}" if local and not failing else
            f"{len(failing)} operation(s) beyond their tolerance, first operation {failing[0]['operation_index']} "
            f"({failing[0]['nnapi_op']} writing {failing[0]['source_tensor']!r}: {failing[0]['max_abs_error']:g})"
            if failing else "no operation could be judged locally")
    bits = []
    if drift.get("cosine") is not None:
        bits.append(f"cosine {drift['cosine']:.6f}")
    if drift.get("top1_agreement") is not None:
        bits.append(f"top-1 agreement {drift['top1_agreement']:.0%}")
    bits.append(f"over {samples} sample(s)")
    units = drift.get("max_units")
    size = f"{units:g} unit(s)" if units is not None else f"{drift.get('max_abs_error') or 0:.3g}"
    return f"{head}; end-to-end drift {size} at the outputs from compounding ({', '.join(bits)})"
