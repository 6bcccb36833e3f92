"""Numerical parity: the converted NNAPI model (run by the executor) against
the source model run by its own framework, per output and, with
`layerwise=True`, down to the first NNAPI operation whose output leaves the
tolerance.

`check(...) -> ParityReport`; `ParityReport.as_dict()` has the stable JSON
schema documented in the README: model, reference, passed, samples, outputs
[{name, shape, dtype, max_abs_error, max_rel_error, mean_abs_error, cosine,
lsb_histogram, passed}], first_divergence (null or {operation_index,
nnapi_op, source_tensor, max_abs_error, inputs}), partitions (partial only).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np

import nnapi

from .convert import ConversionResult, check_input_shapes
from .load import detect_format, importer
from .runners import (MissingDependency, ReferenceFailed, from_nnapi_outputs, litert_all_tensors,
                      random_source_inputs,
                      run_onnxruntime, run_traced, to_nnapi_inputs)
from .source_graph import SourceError
from .tolerance import within_tolerance


class ParityError(Exception):
    """The check could not run (bad inputs file, unsupported model without partial, ...)."""

    def __init__(self, message: str, exit_code: int = 3):
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class OutputParity:
    name: str
    shape: list
    dtype: str
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    mean_abs_error: float = 0.0
    cosine: float = 1.0
    lsb_histogram: Optional[dict] = None
    exact_fraction: Optional[float] = None
    passed: bool = True
    allowed: float = 0.0
    diffs: Optional[np.ndarray] = field(default=None, repr=False)


@dataclass
class ParityReport:
    model: str
    reference: str
    samples: int
    outputs: list
    first_divergence: Optional[dict] = None
    partitions: Optional[list] = None
    feature_level: int = 8
    converted_from: Optional[str] = None

    @property
    def passed(self) -> bool:
        parts_ok = all(p["passed"] for p in self.partitions) if self.partitions else True
        return all(o.passed for o in self.outputs) and parts_ok

    def as_dict(self) -> dict:
        outs = []
        for o in self.outputs:
            d = {k: v for k, v in o.__dict__.items() if k != "diffs"}
            outs.append(d)
        d = {"model": self.model, "reference": self.reference, "passed": self.passed, "samples": self.samples,
             "feature_level": self.feature_level, "outputs": outs, "first_divergence": self.first_divergence}
        if self.partitions is not None:
            d["partitions"] = self.partitions
        if self.converted_from:
            d["converted_model"] = self.converted_from
        return d


def compare(name: str, ref: np.ndarray, got: np.ndarray, quantized: bool, relaxed: bool, tol: dict) -> OutputParity:
    o = OutputParity(name, list(ref.shape), str(ref.dtype))
    if got is None or ref.shape != got.shape:
        o.passed = False
        o.max_abs_error = float("inf")
        o.shape = list(ref.shape)
        return o
    ok, err, allowed = within_tolerance(ref, got, quantized, relaxed, **tol)
    r, g = ref.astype(np.float64).ravel(), got.astype(np.float64).ravel()
    d = np.abs(r - g)
    o.passed, o.max_abs_error, o.allowed = ok and ref.dtype == got.dtype, err, allowed
    if r.size:
        o.mean_abs_error = float(d.mean())
        o.max_rel_error = float((d / np.maximum(np.abs(r), 1e-12)).max())
        nr, ng = np.linalg.norm(r), np.linalg.norm(g)
        o.cosine = float(r @ g / (nr * ng)) if nr and ng else (1.0 if nr == ng else 0.0)
    if quantized:
        o.lsb_histogram = {"0": int((d == 0).sum()), "1": int((d == 1).sum()), "2": int((d == 2).sum()),
                           ">2": int((d > 2).sum())}
        o.exact_fraction = float((d == 0).mean()) if d.size else 1.0
    o.diffs = d
    return o


def _merge(a: OutputParity, b: OutputParity) -> OutputParity:
    """Fold sample `b` into `a`, the aggregate of the earlier samples: worst case for the errors, cosine and
    pass flag (a NaN error stays NaN whatever the order), the LSB histogram and exact fraction over every
    element of every sample. `allowed` is the tolerance of the sample with the largest error while all
    pass, else of a failing sample, so that `max_abs_error <= allowed` agrees with `passed`."""
    if a.passed == b.passed:
        if b.max_abs_error > a.max_abs_error:
            a.allowed = b.allowed
    elif not b.passed:
        a.allowed = b.allowed
    a.max_abs_error = float(np.maximum(a.max_abs_error, b.max_abs_error))
    a.max_rel_error = float(np.maximum(a.max_rel_error, b.max_rel_error))
    a.mean_abs_error = float(np.maximum(a.mean_abs_error, b.mean_abs_error))
    a.cosine = float(np.minimum(a.cosine, b.cosine))
    a.passed = a.passed and b.passed
    if b.lsb_histogram is not None:  # None: a sample whose shapes did not match has no histogram
        hist = b.lsb_histogram if a.lsb_histogram is None else \
            {k: a.lsb_histogram[k] + b.lsb_histogram[k] for k in a.lsb_histogram}
        total = sum(hist.values())
        a.lsb_histogram, a.exact_fraction = hist, (hist["0"] / total if total else 1.0)
    if a.diffs is None or b.diffs is None:
        a.diffs = b.diffs if a.diffs is None else a.diffs
    else:
        a.diffs = np.concatenate([a.diffs, b.diffs])
    return a


def _to_source_layout(result: ConversionResult, operand: int, value: np.ndarray, tensor_dtype) -> np.ndarray:
    """Undo the converter's layout permutation and int8 -> uint8 rewrite for one operand."""
    perm = result.operand_perm.get(operand) if result is not None else None
    if perm is not None:
        value = np.transpose(value, np.argsort(perm))
    return from_nnapi_outputs([tensor_dtype], [value])[0]


def _rank0_as_source(got: Optional[np.ndarray], ref: np.ndarray) -> Optional[np.ndarray]:
    """NNAPI holds rank-0 source tensors as [1] (see ConversionContext.shape), and tensors whose unit axes the
    squeeze pass dropped without them (converters/squeeze_pass.py): back to the source's shape."""
    if got is not None and ref.ndim == 0 and got.shape == (1,):
        return got.reshape(())
    if got is not None and got.shape != ref.shape and \
            [d for d in got.shape if d != 1] == [d for d in ref.shape if d != 1]:
        return got.reshape(ref.shape)
    return got


def _reference_run(fmt: str, path: str, data: bytes, graph, inputs, reference: str, want_all: bool):
    try:
        if fmt == "tflite":
            return litert_all_tensors(data, inputs, reference, graph)
        names = [t.name for t in graph.tensors if not t.is_constant] if want_all else []
        return run_onnxruntime(path, inputs, graph, names)  # the path: external data lies beside it
    except ReferenceFailed as e:
        raise ParityError(f"{Path(path).name}: {e}") from None


def _inputs_for(graph, inputs_file: Optional[str], seed: int, samples: int, input_shapes):
    if inputs_file is None:
        return [random_source_inputs(graph, seed + k, input_shapes) for k in range(samples)]
    try:
        data = np.load(inputs_file, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ParityError(f"{inputs_file}: cannot read inputs ({e})") from None
    arrays = []
    for k, i in enumerate(graph.inputs):
        t = graph.tensors[i]
        key = t.name if t.name in data.files else f"input{k}"
        if key not in data.files:
            raise ParityError(f"{inputs_file}: no array for input {t.name!r} (have {sorted(data.files)})")
        arr = np.asarray(data[key])
        if arr.dtype != t.dtype:
            raise ParityError(f"{inputs_file}: input {t.name!r} has dtype {arr.dtype}, the model needs {t.dtype}")
        arrays.append(arr)
    return [arrays]


def _converted_from_file(path: str, source) -> ConversionResult:
    """A ConversionResult view of a saved .nnapi model: operands map back to tensors by name."""
    model = nnapi.load(path)
    graph = source.main
    by_name = {t.name: t.index for t in graph.tensors}
    operand_map = {i: (by_name[o.name], o.name) for i, o in enumerate(model.operands) if o.name in by_name}
    if len(model.inputs) != len(graph.inputs) or len(model.outputs) != len(graph.outputs):
        raise ParityError(f"{path}: {len(model.inputs)} inputs / {len(model.outputs)} outputs, the source model "
                          f"has {len(graph.inputs)} / {len(graph.outputs)}")
    perms = _saved_layout_perms(model, graph, operand_map) if source.format == "onnx" else {}
    return ConversionResult(source, model.min_feature_level(), [], model=model, operand_map=operand_map,
                            operand_perm=perms)


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
          atol: Optional[float] = None, rtol: Optional[float] = None, max_lsb: Optional[int] = None,
          progress: Optional[Callable[[str], None]] = None) -> ParityReport:
    fmt = detect_format(model_path)
    if fmt not in ("tflite", "onnx"):
        raise ParityError(f"{model_path}: parity needs the source model (.tflite or .onnx)")
    reference = reference or ("litert" if fmt == "tflite" else "onnxruntime")
    if (fmt == "tflite") != reference.startswith("litert"):
        raise ParityError(f"reference {reference!r} cannot run a {fmt} model")
    imp = importer(fmt)
    source = imp.read(model_path)
    check_input_shapes(source, input_shapes)
    data = Path(model_path).read_bytes()
    if converted:
        result = _converted_from_file(converted, source)
    else:
        result = imp.convert(model_path, feature_level=feature_level, input_shapes=input_shapes, partial=partial)
        if not result.complete and not partial:
            lines = "; ".join(f"node {n.index} {n.op}: {n.reason}" for n in result.unsupported)
            raise ParityError(f"{len(result.unsupported)} node(s) cannot be converted: {lines}", exit_code=2)
        if result.model is None and not result.partitions:
            raise ParityError(f"no node of the model runs on NNAPI at feature level {feature_level}: "
                              f"nothing to compare", exit_code=2)
    graph = source.main
    tol = {"atol": atol, "rtol": rtol, "max_lsb": max_lsb}
    report = ParityReport(Path(model_path).name, reference, 0, [],
                          feature_level=result.feature_level if converted else feature_level,
                          converted_from=converted)
    try:
        sample_inputs = _inputs_for(graph, inputs, seed, samples, input_shapes)
    except ValueError as e:
        raise ParityError(str(e)) from None
    report.samples = len(sample_inputs)
    for k, ins in enumerate(sample_inputs):
        if progress:
            progress(f"sample {k + 1}/{len(sample_inputs)}")
        want_all = layerwise or (result.model is None)
        ref_outs, ref_tensors = _reference_run(fmt, model_path, data, graph, ins, reference, want_all)
        if result.model is None:
            report.partitions = _check_partitions(result, ref_tensors, tol, report.partitions)
            continue
        got_outs, trace = run_traced(result.model, to_nnapi_inputs(result, ins))
        for j, (o, ref) in enumerate(zip(result.model.outputs, ref_outs)):
            t = graph.tensors[graph.outputs[j]]
            got = _to_source_layout(result, o, got_outs[j], t.dtype) if got_outs[j] is not None else None
            par = compare(t.name, ref, _rank0_as_source(got, ref), t.quant is not None and ref.dtype.kind in "iu",
                          result.model.relaxed, tol)
            report.outputs[j:j + 1] = [_merge(report.outputs[j], par) if j < len(report.outputs) else par]
        if layerwise and report.first_divergence is None:
            report.first_divergence = first_divergence(result, trace, ref_tensors, tol)
    return report


def first_divergence(result: ConversionResult, trace: dict, ref_tensors: dict, tol: dict) -> Optional[dict]:
    """The first operation (execution order) whose output mirrors a source tensor and leaves the tolerance."""
    from nnapi.validate import execution_order
    model, graph = result.model, result.source.main
    errors: dict[int, float] = {}
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
            got = _to_source_layout(result, o, trace[o], t.dtype)
            par = compare(t_name, ref, got.reshape(ref.shape) if got.size == ref.size else got,
                          t.quant is not None and ref.dtype.kind in "iu", model.relaxed, tol)
            errors[o] = par.max_abs_error
            if not par.passed:
                ins = [{"operand": i, "source_tensor": result.operand_map[i][1], "max_abs_error": errors[i]}
                       for i in op.inputs if i in errors]
                return {"operation_index": k, "nnapi_op": op.code.name, "source_tensor": t_name,
                        "max_abs_error": par.max_abs_error, "allowed": par.allowed, "inputs": ins}
    return None


def _check_partitions(result: ConversionResult, ref_tensors: dict, tol: dict, previous) -> list:
    """Each partition on its own, fed with the framework's tensors at its boundary."""
    graph = result.source.main
    out = previous or [None] * len(result.partitions)
    for k, p in enumerate(result.partitions):
        ins = [ref_tensors[t] for t in p.inputs]
        fake = ConversionResult(result.source, result.feature_level, [], model=p.model, operand_map=p.operand_map,
                                operand_perm=p.operand_perm)
        got, _ = run_traced(p.model, to_nnapi_inputs(fake, ins, p.model))
        entry = out[k] or {"index": k, "nodes": p.nodes, "passed": True, "outputs": []}
        for j, (o, t_index) in enumerate(zip(p.model.outputs, p.outputs)):
            t = graph.tensors[t_index]
            g = _to_source_layout(fake, o, got[j], t.dtype)
            par = compare(t.name, ref_tensors[t_index], _rank0_as_source(g, ref_tensors[t_index]),
                          t.quant is not None and g.dtype.kind in "iu",
                          p.model.relaxed, tol)
            par.diffs = None  # partition records keep statistics only
            if j < len(entry["outputs"]):  # a later sample: aggregate exactly like the model's outputs
                par = _merge(OutputParity(**entry["outputs"][j]), par)
            d = {kk: v for kk, v in par.__dict__.items() if kk != "diffs"}
            entry["outputs"][j:j + 1] = [d]
            entry["passed"] = entry["passed"] and d["passed"]
        out[k] = entry
    return out


__all__ = ["check", "compare", "ParityReport", "OutputParity", "ParityError", "MissingDependency", "SourceError"]
