"""Numerical parity: the converted NNAPI model (run by the executor) against
the source model run by its own framework, per output and, with
`layerwise=True`, down to the first NNAPI operation whose output leaves the
tolerance.

This module is the main flow (`check`: inputs, the conversion or a saved model, per sample and step the
framework's run against ours); the report and comparison are in parity_report.py, the framework runs and
spread in parity_references.py, the verdict rules, `passed` (conclude) and --layerwise in parity_verdict.py,
partitions and segments in parity_partitions.py, the per-operation check in parity_local.py, the quantized
models' end-to-end bound in parity_end_to_end.py, the chained reference of a model no LiteRT kernel set
runs in parity_chain.py with its custom-operator references in parity_custom_refs.py.

`check(...) -> ParityReport`; `ParityReport.as_dict()` has the stable JSON
schema documented in the README: model, reference, passed, samples, outputs
[{name, shape, dtype, max_abs_error, max_rel_error, mean_abs_error, cosine,
lsb_histogram, passed}], first_divergence (null or {operation_index,
nnapi_op, source_tensor, max_abs_error, inputs}), partitions (partial only), checked_by, unchecked_outputs,
and where they apply reference_fallback, custom_nodes, unjudged, end_to_end.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

import nnapi
from nnapi.state import carry

from .convert import ConversionResult, check_input_shapes, prepare_source
from .extract import tflite_float_twin
from .load import detect_format, importer
from .parity_chain import ChainFailed, check_chained
from .parity_end_to_end import EndToEnd
from .parity_local import (HARMLESS_UNJUDGED, LOCAL_REFERENCES, drift_line, drift_summary, local_check,
                           local_check_partitions)
from .parity_partitions import check_partitions, check_segments, extracted_feeder
from .parity_references import (SPREAD_REFERENCES, choose_tolerance, dequantized_steps, exact_distances,
                                framework_spread, kernel_set_runs, reference_run, reference_run_or_fallback,
                                xnnpack_may_stand_in)
from .parity_report import (OutputParity, ParityError, ParityReport, compare, merge_parity, rank0_as_source,
                            to_source_layout)
from .parity_verdict import (compare_outputs, conclude, first_divergence, localization_line, merge_layers,
                             output_coverage, verdict_rule)
from .pins import refusal
from .runners import MissingDependency
from .running import random_source_inputs, run_traced, to_nnapi_inputs
from .source_graph import SourceError
from .tolerance import SPREAD_FACTOR


def _inputs_for(graph, inputs_path: Optional[str], seed: int, samples: int, input_shapes,
                preprocess: Optional[str] = None, steps: int = 1):
    """Per sample, the inputs of each of its steps: seeded random ones (seed + sample * steps + step), an
    .npz (a leading sample axis gives several samples), or a folder of images (converters.datasets);
    given inputs feed every step of their sample."""
    from .datasets import DatasetError, image_samples, npz_samples, parse_preprocess
    if inputs_path is None:
        if preprocess:
            raise ParityError("--preprocess applies to a folder of images given with --inputs")
        return [[random_source_inputs(graph, seed + k * steps + j, input_shapes) for j in range(steps)]
                for k in range(samples)]
    try:
        if Path(inputs_path).is_dir():
            given = image_samples(Path(inputs_path), graph, input_shapes, parse_preprocess(preprocess))
        elif preprocess:
            raise ParityError("--preprocess applies to a folder of images, not to an .npz")
        else:
            given = npz_samples(inputs_path, graph)
    except DatasetError as e:
        raise ParityError(str(e)) from None
    return [[arrays] * steps for arrays in given]


def _converted_from_file(path: str, source, feature_level: int = 8, model_path: str = "") -> ConversionResult:
    """A ConversionResult view of a saved .nnapi model: operands map back to tensors by name; a model
    whose operation outputs carry no source names is matched structurally to a fresh conversion."""
    model = nnapi.load(path)
    graph = source.main
    by_name = {t.name: t.index for t in graph.tensors}
    operand_map = {i: (by_name[o.name], o.name) for i, o in enumerate(model.operands) if o.name in by_name}
    n_in, n_out = len(graph.model_inputs), len(graph.model_outputs)  # with the state pairs
    if len(model.inputs) != n_in or len(model.outputs) != n_out or len(model.state) != len(graph.state):
        raise ParityError(f"{path}: {len(model.inputs)} inputs / {len(model.outputs)} outputs / {len(model.state)} "
                          f"state variables, the source model has {n_in} / {n_out} / {len(graph.state)}")
    perms = _saved_layout_perms(model, graph, operand_map) if source.format == "onnx" else {}
    result = ConversionResult(source, model.min_feature_level(), [], model=model, operand_map=operand_map,
                              operand_perm=perms)
    made = {o for op in model.operations for o in op.outputs}
    result.localization = "operands matched to source tensors by name"
    if model.operations and not made & set(operand_map):
        result.localization = _match_structurally(result, source, feature_level, model_path)
    return result


def _match_structurally(result: ConversionResult, source, feature_level: int, model_path: str) -> str:
    """Map a nameless saved model's operands through a fresh conversion with the same operation
    sequence (codes, arity, output dimensions); returns how it went, in one line."""
    from .convert import ConversionError
    model = result.model
    why = "no fresh conversion of the source converts completely"
    for level in dict.fromkeys((feature_level, model.min_feature_level(), 8)):
        try:
            fresh = importer(source.format).convert(model_path, feature_level=level)
        except (ConversionError, SourceError, ValueError):
            continue
        if fresh.model is None:
            continue
        mismatch = _first_structural_difference(model, fresh.model)
        if mismatch:
            why = f"its operations differ from a fresh conversion at feature level {level}: {mismatch}"
            continue
        pairs = dict(zip(model.inputs, fresh.model.inputs))
        for mine, theirs in zip(model.operations, fresh.model.operations):
            pairs.update(zip(mine.outputs, theirs.outputs))
        result.operand_map = {o: fresh.operand_map[f] for o, f in pairs.items() if f in fresh.operand_map}
        result.operand_perm = {o: fresh.operand_perm[f] for o, f in pairs.items() if f in fresh.operand_perm}
        return (f"operands carry no source names; matched structurally to a fresh conversion at feature level "
                f"{level} (same {len(model.operations)} operations and shapes)")
    return f"operands carry no source names and cannot be matched: {why}"


def _first_structural_difference(a, b) -> str:
    if len(a.operations) != len(b.operations):
        return f"{len(a.operations)} operations here, {len(b.operations)} there"
    for k, (x, y) in enumerate(zip(a.operations, b.operations)):
        if x.code != y.code or len(x.inputs) != len(y.inputs) or len(x.outputs) != len(y.outputs):
            return f"operation {k} is {x.code.name} here, {y.code.name} there"
        for o, p in zip(x.outputs, y.outputs):
            if tuple(a.operands[o].type.dimensions or ()) != tuple(b.operands[p].type.dimensions or ()):
                return f"operation {k} ({x.code.name}) writes {list(a.operands[o].type.dimensions)} here, " \
                       f"{list(b.operands[p].type.dimensions)} there"
    return ""


def _saved_layout_perms(model, graph, operand_map: dict) -> dict:
    """The ONNX importer's NCHW -> NHWC layouts of a saved model (the file keeps no operand_perm):
    an operand whose dimensions are a permutation of its tensor's shape holds np.transpose(tensor,
    perm); the importer's channels-last perm is preferred, else the only permutation that fits."""
    from itertools import permutations
    perms = {}
    for o, (t_index, _) in operand_map.items():
        dims, shape = tuple(model.operands[o].type.dimensions or ()), graph.tensors[t_index].shape
        if shape is None or len(dims) != len(shape) or len(dims) < 3 or dims == tuple(shape) or \
                sorted(dims) != sorted(shape):
            continue
        last = (0, *range(2, len(dims)), 1)
        fits = [p for p in ([last] if len(dims) > 5 else permutations(range(len(dims))))
                if tuple(shape[a] for a in p) == dims]
        if last in fits or len(set(fits)) == 1:
            perms[o] = last if last in fits else fits[0]
    return perms


def check(model_path: str, *, converted: Optional[str] = None, feature_level: int = 8,
          reference: Optional[str] = None, inputs: Optional[str] = None, seed: int = 0, samples: int = 1,
          layerwise: bool = False, partial: bool = False, input_shapes: Optional[dict] = None,
          dims: Optional[dict] = None,
          atol: Optional[float] = None, rtol: Optional[float] = None, max_lsb: Optional[int] = None,
          progress: Optional[Callable[[int, int], None]] = None, tolerance: Optional[str] = None,
          spread_factor: float = SPREAD_FACTOR, preprocess: Optional[str] = None, steps: int = 1,
          local: Optional[bool] = None, exact: bool = False) -> ParityReport:
    """`steps`: consecutive invocations per sample, the state of a stateful model carried from one to
    the next (the reference keeps its variables: one interpreter invoked `steps` times)."""
    if steps < 1:
        raise ParityError(f"--steps {steps}: at least 1 step")
    fmt = detect_format(model_path)
    if fmt not in ("tflite", "onnx"):
        raise ParityError(f"{model_path}: parity needs the source model (.tflite or .onnx)")
    may_fall_back = reference is None and fmt == "tflite"   # the default reference may give way to XNNPACK
    reference = reference or ("litert" if fmt == "tflite" else "onnxruntime")
    if (fmt == "tflite") != reference.startswith("litert"):
        raise ParityError(f"reference {reference!r} cannot run a {fmt} model")
    imp = importer(fmt)
    source = imp.read(model_path, input_shapes, dims)
    check_input_shapes(source, input_shapes)
    prepare_source(source, input_shapes)  # state variables, as the conversion sees them
    data = Path(model_path).read_bytes()
    if converted:
        result = _converted_from_file(converted, source, feature_level, model_path)
    else:
        result = imp.convert(model_path, feature_level=feature_level, input_shapes=input_shapes, partial=partial,
                             dims=dims)
        if not result.complete and not partial:
            head, details, pins = refusal(result, "checks the partitions that convert")
            raise ParityError(head, exit_code=2, pins=pins, details=details)
        if result.model is None and not result.partitions:
            raise ParityError(f"no node of the model runs on NNAPI at feature level {feature_level}: "
                              f"nothing to compare", exit_code=2)
    graph = source.main
    tol = {"atol": atol, "rtol": rtol, "max_lsb": max_lsb}
    dq_steps = dequantized_steps(graph)
    if tolerance not in (None, "fixed", "spread"):
        raise ParityError(f"--tolerance {tolerance!r}: use fixed or spread")
    mode, why = choose_tolerance(tolerance, fmt, graph)
    others = [r for r in SPREAD_REFERENCES[fmt] if r != reference] if mode == "spread" else []
    if mode == "spread":
        tol["spread_factor"] = spread_factor
        tol["spread_source"] = ", ".join([reference] + others)
    report = ParityReport(Path(model_path).name, reference, 0, [],
                          feature_level=result.feature_level if converted else feature_level,
                          converted_from=converted, steps=steps)
    report.tolerance = {"mode": mode, "why": why}
    if mode == "spread":
        report.tolerance.update(references=[reference] + others, factor=spread_factor)
    rule, rule_why = verdict_rule(local, max_lsb, graph, result)
    report.verdict = {"rule": rule, "why": rule_why}
    hybrid_data = None   # a dynamic-range model: the framework's hybrid kernels, reported as drift
    twin = tflite_float_twin(data) if fmt == "tflite" and max_lsb is None and atol is None and rtol is None \
        else None
    if twin is not None:
        hybrid_data, data = data, twin
        report.verdict["reference_model"] = (
            "the model with its int8 weights dequantized to float32: NNAPI computes the dynamic-range (hybrid) "
            "operators on dequantized weights, as LiteRT's NNAPI delegate does; LiteRT's hybrid kernels, which "
            "quantize activations at run time, are reported as hybrid_drift")
    local_reference = LOCAL_REFERENCES[fmt]
    if rule == "local" or local:
        report.local = []
        report.verdict["local_reference"] = local_reference
    try:
        sample_inputs = _inputs_for(graph, inputs, seed, samples, input_shapes, preprocess, steps)
    except ValueError as e:
        raise ParityError(str(e)) from None
    report.samples = len(sample_inputs)
    report.model_outputs = [graph.tensors[t].name for t in graph.outputs]
    unjudged: dict = {}   # local pass: {operation (or (partition, operation)): why it was not judged}
    end_to_end = EndToEnd(local_reference, graph, dq_steps, result.model.relaxed if result.model else False) \
        if rule == "local" else None
    for k, sample in enumerate(sample_inputs):
        if progress:
            progress(k, len(sample_inputs))
        want_all = layerwise or result.model is None or report.local is not None
        try:
            ref_runs, used, fallback = reference_run_or_fallback(fmt, model_path, data, graph, sample, reference,
                                                                 want_all, may_fall_back and result.model is not None
                                                                 and xnnpack_may_stand_in(graph))
            if used != reference:   # the default reference cannot run the model; XNNPACK runs it whole
                reference, report.reference, report.reference_fallback = used, used, fallback
                others = [r for r in others if r != used]
        except ParityError as whole_run_failed:
            if steps > 1:
                raise ParityError(f"{whole_run_failed}; --steps needs the framework to run the whole model") \
                    from None
            ins = sample[0]
            report.whole_model_run = str(whole_run_failed)
            if result.model is not None:
                # converted whole, but the framework lacks a custom operator: check the segments it can run, and
                # (TFLite) the outputs against the segments chained with parity's references of the custom ops
                chained_spread = fmt == "tflite" and others
                if others and not chained_spread:
                    report.tolerance = {"mode": "fixed", "why": "the framework cannot run the whole model, so "
                                                                "its spread cannot be measured"}
                    others = []
                    for key in ("spread_factor", "spread_source"):
                        tol.pop(key, None)
                report.partitions = check_segments(result, fmt, model_path, data, ins, reference,
                                                    {kk: v for kk, v in tol.items() if kk not in ("spread_factor",
                                                                                                 "spread_source")},
                                                    report.partitions, whole_run_failed)
                if fmt == "tflite":
                    try:
                        others = check_chained(report, result, data, ins, reference, others, tol, dq_steps)
                    except ChainFailed as e:
                        report.unchecked_outputs = [{"name": n, "why": f"no whole-model reference: {e}"}
                                                    for n in report.model_outputs]
                    chained_why = "; spread of the chained reference over the kernel sets that run it"
                    if chained_spread:
                        report.tolerance.update(references=[reference] + others,
                                                why=report.tolerance["why"].replace(chained_why, "") + chained_why)
                        tol["spread_source"] = ", ".join([reference] + others)
                continue
            # the framework cannot run the whole model: check each partition as an extracted sub-model
            feeder = extracted_feeder(result, fmt, model_path, data, ins, reference, seed + k, others)
            try:
                report.partitions = check_partitions(result, {}, tol, report.partitions, feeder=feeder)
            except ParityError as e:
                raise ParityError(f"{whole_run_failed}; {e}") from None
            continue
        spreads_per_step = None
        if others:
            other_runs = []
            for r in list(others):
                try:
                    other_runs.append(reference_run(fmt, model_path, data, graph, sample, r, want_all))
                except ParityError as e:   # a kernel set that cannot run this model is left out of the spread
                    others.remove(r)
                    report.tolerance.setdefault("unavailable", {})[r] = str(e)
            if others:
                spreads_per_step = [framework_spread([ref_runs[j]] + [o[j] for o in other_runs], graph)
                                    for j in range(len(sample))]
                report.tolerance["references"] = [reference] + others
                tol["spread_source"] = ", ".join([reference] + others)
            else:              # no second kernel set runs the model: judge by the fixed rule
                report.tolerance = {"mode": "fixed", "why": "no second kernel set of the framework runs the "
                                                            "model, so its spread cannot be measured",
                                    "unavailable": report.tolerance.get("unavailable", {})}
                for key in ("spread_factor", "spread_source"):
                    tol.pop(key, None)
        extra_runs: dict = {}   # this sample's other framework runs, made on first use and once

        def runs_of(model_bytes: bytes, kernels: str, want_all: bool) -> list:
            key = (id(model_bytes), kernels, want_all)
            if key not in extra_runs:
                extra_runs[key] = reference_run(fmt, model_path, model_bytes, graph, sample, kernels, want_all)
            return extra_runs[key]
        kernel_sets = kernel_set_runs(fmt, model_path, data, graph, sample, reference, ref_runs) if exact else {}
        exact_state = None
        state = None  # the converted model's state: initial values first, then what each step left
        for j, (ins, (ref_outs, ref_tensors)) in enumerate(zip(sample, ref_runs)):
            spreads = spreads_per_step[j] if spreads_per_step else None
            if result.model is None:
                report.partitions = check_partitions(result, ref_tensors, tol, report.partitions, spreads)
                if report.local is not None:
                    local_tensors = ref_tensors if local_reference == reference else \
                        runs_of(data, local_reference, True)[j][1]
                    report.local = local_check_partitions(result, local_tensors, tol, dq_steps, local_reference,
                                                          report.local, unjudged, end_to_end)
                continue
            got_outs, trace = run_traced(result.model, to_nnapi_inputs(result, ins, state=state))
            state = carry(result.model, got_outs)
            compare_outputs(report, result, graph, got_outs, ref_outs, ref_tensors, tol, dq_steps, spreads)
            if hybrid_data is not None:
                hybrid_outs = runs_of(hybrid_data, reference, False)[j][0]   # the hybrid kernels
                for jj, (o, ref) in enumerate(zip(result.model.outputs, hybrid_outs)):
                    t = graph.tensors[graph.outputs[jj]]
                    got = to_source_layout(result, o, got_outs[jj], t.dtype) if got_outs[jj] is not None else None
                    par = compare(t.name, ref, rank0_as_source(got, ref), False, result.model.relaxed, {})
                    report.hybrid[jj:jj + 1] = [merge_parity(report.hybrid[jj], par) if jj < len(report.hybrid) else par]
            if exact:
                exact_state = exact_distances(report, result, graph, ins, exact_state, got_outs,
                                               {r: runs[j][0] for r, runs in kernel_sets.items()})
            if report.local is not None:
                local_outs, local_tensors = ((ref_outs, ref_tensors) if local_reference == reference
                                             else runs_of(data, local_reference, True)[j])
                report.local = local_check(result, trace, local_tensors, tol, dq_steps, local_reference,
                                           report.local, unjudged)
                if end_to_end is not None:
                    end_to_end.add(result, got_outs, local_outs)
                    kernel_sets = {reference: ref_outs, local_reference: local_outs}
                    for r in SPREAD_REFERENCES[fmt]:
                        try:
                            kernel_sets.setdefault(r, runs_of(data, r, False)[j][0])
                        except ParityError:   # a kernel set that cannot run the model is left out of the spread
                            continue
                    end_to_end.add_kernel_sets(result, got_outs, reference, kernel_sets)
            if layerwise:
                layers: list = []
                found = first_divergence(result, trace, ref_tensors, tol, spreads, layers)
                report.first_divergence = report.first_divergence or found
                report.layers = merge_layers(report.layers, layers)
    if report.local is not None:
        in_order = sorted(unjudged.items(), key=lambda kv: kv[0] if isinstance(kv[0], tuple) else (-1, kv[0]))
        report.unjudged = [unjudged_entry(key, why, result) for key, why in in_order]
    if end_to_end is not None and end_to_end.outputs:
        report.end_to_end = end_to_end.as_dict()
    output_coverage(report, result)
    if hybrid_data is not None and report.hybrid:
        report.verdict["hybrid_drift"] = drift_summary(report.hybrid)
    if report.verdict["rule"] == "local":
        if not report.local:
            report.verdict = {"rule": "end-to-end", "why": "no operation could be judged locally"}
        else:
            report.verdict["drift"] = drift_summary(report.outputs or [o for p in report.partitions
                                                                        for o in p["outputs"]])
            report.verdict["summary"] = drift_line(report.local, report.verdict["drift"], report.samples)
            spread = end_to_end.drift_against_spread() if end_to_end is not None else None
            if spread is not None:
                report.verdict["drift"]["kernel_spread"] = spread
    conclude(report)
    if layerwise and result.model is not None:
        report.localization = localization_line(report, result)
    return report


def unjudged_entry(key, why: str, result) -> dict:
    """One JSON record of an operation the local pass could not judge."""
    part, k = key if isinstance(key, tuple) else (None, key)
    model = result.model if part is None else result.partitions[part].model
    entry = {"operation_index": k, "nnapi_op": model.operations[k].code.name, "why": why,
             "harmless": why in HARMLESS_UNJUDGED}
    if part is not None:
        entry["partition"] = part
    return entry


__all__ = ["check", "compare", "ParityReport", "OutputParity", "ParityError", "MissingDependency", "SourceError",
           "dequantized_steps", "choose_tolerance", "merge_parity", "first_divergence", "framework_spread"]
