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
from typing import Callable, Optional, Sequence

import numpy as np

import nnapi
from nnapi.state import carry

from .convert import ConversionResult, check_input_shapes, prepare_source
from .load import detect_format, importer
from .pins import for_result, sentences
from .extract import tflite_float_twin
from .runners import (MissingDependency, ReferenceFailed, from_nnapi_outputs, litert_steps,
                      random_source_inputs, run_litert,
                      run_onnxruntime, run_traced, to_nnapi_inputs)
from .source_graph import SourceError
from .partition_feed import Unchecked, check_fed, stand_in, unchecked_entry
from .parity_local import LOCAL_REFERENCES, drift_line, drift_summary, local_check
from .tolerance import SPREAD_FACTOR, SPREAD_MIN_OPERATIONS, allowed_error, within_tolerance


class ParityError(Exception):
    """The check could not run (bad inputs file, unsupported model without partial, ...)."""

    def __init__(self, message: str, exit_code: int = 3, pins: Optional[dict] = None):
        super().__init__(message)
        self.exit_code = exit_code
        self.pins = pins  # a refused conversion: pins.analyse() (pins_needed, value_dependent)


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
    tolerance: str = ""          # where `allowed` comes from
    spread: Optional[float] = None        # --tolerance spread: the framework's own largest disagreement
    spread_ratio: Optional[float] = None  # max_abs_error / spread (None when the spread is 0)
    top1_agreement: Optional[float] = None  # classifier-shaped outputs: argmax equal, over every sample row
    top5_agreement: Optional[float] = None  # the reference's top class among ours' top 5
    classified_rows: Optional[int] = None   # how many rows (samples x batch) the agreements count
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
    tolerance: Optional[dict] = None     # {"mode": fixed | spread, "why", "references", "factor"}
    whole_model_run: Optional[str] = None  # why the framework could not run the whole model (partitions extracted)
    localization: Optional[str] = None     # --layerwise: how operands were matched to source tensors
    local: Optional[list] = None           # --local / quantized default: per-operation errors (parity_local)
    verdict: Optional[dict] = None         # {"rule": "local" | "end-to-end", "why"}
    layers: Optional[list] = None          # --layerwise: every mapped operation's error, execution order
    exact: Optional[list] = None           # --exact: per float output, each runtime's distance from float64
    hybrid: list = field(default_factory=list)  # dynamic-range models: ours against the hybrid kernels
    steps: int = 1
    # OutputParity per state variable (its value after each step), reported like the layerwise check: the
    # state is internal to the source model, and LiteRT's optimized kernels round some intermediates one
    # stored unit differently from its reference kernels, which the state then carries from step to step
    state: list = field(default_factory=list)
    state_names: list = field(default_factory=list)

    @property
    def passed(self) -> bool:
        parts_ok = all(p["passed"] for p in self.partitions) if self.partitions else True
        if self.verdict and self.verdict["rule"] == "local":
            return bool(self.local) and all(e["passed"] for e in self.local) and parts_ok
        return all(o.passed for o in self.outputs) and parts_ok

    def as_dict(self) -> dict:
        outs = []
        for o in self.outputs:
            d = {k: v for k, v in o.__dict__.items() if k != "diffs"}
            outs.append(d)
        d = {"model": self.model, "reference": self.reference, "passed": self.passed, "samples": self.samples,
             "steps": self.steps, "feature_level": self.feature_level, "outputs": outs,
             "first_divergence": self.first_divergence, "tolerance": self.tolerance}
        if self.partitions is not None:
            d["partitions"] = self.partitions
        if self.converted_from:
            d["converted_model"] = self.converted_from
        if self.whole_model_run:
            d["whole_model_run"] = self.whole_model_run
        if self.localization:
            d["localization"] = self.localization
        if self.local is not None:
            d["local"] = self.local
        if self.layers is not None:
            d["layers"] = self.layers
        if self.exact is not None:
            d["exact"] = [e for e in self.exact if e is not None]
        if self.verdict:
            d["verdict"] = self.verdict
        if self.state:
            d["state"] = [{"variable": v, **{k: x for k, x in o.__dict__.items() if k != "diffs"}}
                          for v, o in zip(self.state_names, self.state)]
        return d


def compare(name: str, ref: np.ndarray, got: np.ndarray, quantized: bool, relaxed: bool, tol: dict) -> OutputParity:
    o = OutputParity(name, list(ref.shape), str(ref.dtype))
    if got is None or ref.shape != got.shape:
        o.passed = False
        o.max_abs_error = float("inf")
        o.shape = list(ref.shape)
        return o
    ok, err, allowed = within_tolerance(ref, got, quantized, relaxed, **tol)
    o.tolerance = allowed_error(ref, quantized, relaxed, **tol)[1]
    if tol.get("spread") is not None and not quantized and ref.dtype.kind == "f":
        o.spread = float(tol["spread"])
        o.spread_ratio = err / o.spread if o.spread > 0 else None
    r, g = ref.astype(np.float64).ravel(), got.astype(np.float64).ravel()
    d = np.abs(r - g)
    o.passed, o.max_abs_error, o.allowed = ok and ref.dtype == got.dtype, err, allowed
    if r.size:
        o.mean_abs_error = float(d.mean())
        o.max_rel_error = float((d / np.maximum(np.abs(r), 1e-12)).max())
        nr, ng = np.linalg.norm(r), np.linalg.norm(g)
        o.cosine = float(r @ g / (nr * ng)) if nr and ng else (1.0 if nr == ng else 0.0)
    rows = classifier_rows(ref)
    if rows is not None:
        r2, g2 = ref.reshape(rows, -1), got.reshape(rows, -1)
        top_ref = np.argmax(r2, axis=1)
        o.top1_agreement = float(np.mean(np.argmax(g2, axis=1) == top_ref))
        top5 = np.argsort(-g2.astype(np.float64), axis=1, kind="stable")[:, :5]
        o.top5_agreement = float(np.mean([t in row for t, row in zip(top_ref, top5)]))
        o.classified_rows = rows
    if quantized:
        o.lsb_histogram = {"0": int((d == 0).sum()), "1": int((d == 1).sum()), "2": int((d == 2).sum()),
                           ">2": int((d > 2).sum())}
        o.exact_fraction = float((d == 0).mean()) if d.size else 1.0
    o.diffs = d
    return o


def classifier_rows(ref: np.ndarray) -> Optional[int]:
    """Rows of class scores when the output is classifier-shaped ([N, C], [N, C, 1, 1] or [N, 1, 1, C]
    with C >= 2 classes), else None."""
    shape = ref.shape
    if len(shape) == 2 and shape[1] >= 2:
        return shape[0]
    if len(shape) == 4 and ((shape[2:] == (1, 1) and shape[1] >= 2) or (shape[1:3] == (1, 1) and shape[3] >= 2)):
        return shape[0]
    return None


def _merge(a: OutputParity, b: OutputParity) -> OutputParity:
    """Fold sample `b` into `a`, the aggregate of the earlier samples: worst case for the errors, cosine and
    pass flag (a NaN error stays NaN whatever the order), the LSB histogram and exact fraction over every
    element of every sample. `allowed` is the tolerance of the sample with the largest error while all
    pass, else of a failing sample, so that `max_abs_error <= allowed` agrees with `passed`."""
    if a.passed == b.passed:
        if b.max_abs_error > a.max_abs_error:
            a.allowed, a.tolerance = b.allowed, b.tolerance
    elif not b.passed:
        a.allowed, a.tolerance = b.allowed, b.tolerance
    a.max_abs_error = float(np.maximum(a.max_abs_error, b.max_abs_error))
    a.max_rel_error = float(np.maximum(a.max_rel_error, b.max_rel_error))
    a.mean_abs_error = float(np.maximum(a.mean_abs_error, b.mean_abs_error))
    a.cosine = float(np.minimum(a.cosine, b.cosine))
    a.passed = a.passed and b.passed
    if b.classified_rows:
        n_a, n_b = a.classified_rows or 0, b.classified_rows
        for key in ("top1_agreement", "top5_agreement"):
            setattr(a, key, ((getattr(a, key) or 0.0) * n_a + getattr(b, key) * n_b) / (n_a + n_b))
        a.classified_rows = n_a + n_b
    if b.spread is not None:
        a.spread = b.spread if a.spread is None else max(a.spread, b.spread)
        ratios = [r for r in (a.spread_ratio, b.spread_ratio) if r is not None]
        a.spread_ratio = max(ratios) if ratios else None
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


DEQUANTIZING_OPS = {"DEQUANTIZE", "DequantizeLinear"}


def dequantized_steps(graph) -> dict:
    """{tensor index: (scale, description)} for the float tensors a TFLite DEQUANTIZE or ONNX
    DequantizeLinear makes from a quantized tensor: one step of that scale is one stored unit upstream
    (per-channel scales: the largest)."""
    steps = {}
    for node in graph.nodes:
        if node.op not in DEQUANTIZING_OPS or not node.outputs or not node.inputs:
            continue
        q = graph.tensors[node.inputs[0]]
        if node.op == "DequantizeLinear":
            scale_t = graph.tensors[node.inputs[1]] if len(node.inputs) > 1 and node.inputs[1] >= 0 else None
            scale = None if scale_t is None or scale_t.data is None else float(np.max(np.abs(scale_t.data)))
        else:
            scale = None if q.quant is None else float(np.max(np.abs(np.asarray(q.quant.scale, np.float64))))
        if scale:
            steps[node.outputs[0]] = (scale, f"{q.name!r} (dequantized by node {node.index} {node.op})")
    return steps


def tolerance_for(tol: dict, steps: dict, t_index: int, spreads: Optional[dict] = None) -> dict:
    """The tolerance settings for source tensor t_index: `tol`, plus the dequantized step and the
    framework's spread where they apply."""
    if t_index in steps:
        tol = dict(tol, step=steps[t_index][0], step_source=steps[t_index][1])
    if spreads and t_index in spreads:
        tol = dict(tol, spread=spreads[t_index])
    return tol


# the kernel sets whose mutual spread --tolerance spread measures, per source format
SPREAD_REFERENCES = {"tflite": ("litert", "litert-ref", "litert-xnnpack"),
                     "onnx": ("onnxruntime", "onnxruntime-optimized")}


def _is_float_model(graph) -> bool:
    """No activation is quantized (constant int8 weights of a dynamic-range model do not count)."""
    return not any(t.quant is not None and not t.is_constant for t in graph.tensors)


def choose_tolerance(mode: Optional[str], fmt: str, graph) -> tuple[str, str]:
    """(fixed | spread, why): the user's choice, or spread for float models of more than
    SPREAD_MIN_OPERATIONS operations, whose float rounding compounds beyond the fixed rule."""
    if mode:
        return mode, "--tolerance " + mode
    if _is_float_model(graph) and len(graph.nodes) > SPREAD_MIN_OPERATIONS:
        return "spread", (f"default for float models with more than {SPREAD_MIN_OPERATIONS} operations "
                          f"(this one has {len(graph.nodes)})")
    return "fixed", ("default for quantized models" if not _is_float_model(graph) else
                     f"default for models of at most {SPREAD_MIN_OPERATIONS} operations")


def framework_spread(runs: list[tuple[list, dict]], graph) -> dict:
    """{tensor index: largest max |a - b| between any two kernel sets} for the float tensors that at least
    two runs kept (XNNPACK keeps no tensor inside its delegated partitions)."""
    spreads = {}
    outs = [dict(zip(graph.outputs, o)) for o, _ in runs]
    merged = [{**o, **t} for (_, t), o in zip(runs, outs)]
    for t in set().union(*merged):
        arrays = [m[t] for m in merged if m.get(t) is not None]
        if len(arrays) < 2 or any(a.dtype.kind != "f" or a.shape != arrays[0].shape for a in arrays):
            continue
        spreads[t] = max(float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
                         for i, a in enumerate(arrays) for b in arrays[i + 1:])
    return spreads


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


def _reference_run(fmt: str, path: str, data: bytes, graph, steps: list, reference: str, want_all: bool):
    """Per step (outputs, tensors): LiteRT invokes one interpreter on every step, its variables kept."""
    try:
        if fmt == "tflite":
            return litert_steps(data, steps, reference, graph)
        names = [t.name for t in graph.tensors if not t.is_constant] if want_all else []
        # the path: external data lies beside it
        return [run_onnxruntime(path, inputs, graph, names, optimized=reference == "onnxruntime-optimized")
                for inputs in steps]
    except ReferenceFailed as e:
        raise ParityError(f"{Path(path).name}: {e}") from None


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
            lines = "; ".join(f"node {n.index} {n.op}: {n.reason}" for n in result.unsupported)
            pins = for_result(result)
            raise ParityError(f"{len(result.unsupported)} node(s) cannot be converted: {lines}"
                              + "".join(f"; {s}" for s in sentences(pins)), exit_code=2, pins=pins)
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
    rule, rule_why = _verdict_rule(local, max_lsb, graph, result)
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
    for k, sample in enumerate(sample_inputs):
        if progress:
            progress(k, len(sample_inputs))
        want_all = layerwise or result.model is None or report.local is not None
        try:
            ref_runs = _reference_run(fmt, model_path, data, graph, sample, reference, want_all)
        except ParityError as whole_run_failed:
            if steps > 1:
                raise ParityError(f"{whole_run_failed}; --steps needs the framework to run the whole model") \
                    from None
            ins = sample[0]
            report.whole_model_run = str(whole_run_failed)
            if result.model is not None:
                # converted whole, but the framework lacks a custom operator: check the segments it can run
                if others:
                    report.tolerance = {"mode": "fixed", "why": "the framework cannot run the whole model, so "
                                                                "its spread cannot be measured"}
                    others = []
                    for key in ("spread_factor", "spread_source"):
                        tol.pop(key, None)
                report.partitions = _check_segments(result, fmt, model_path, data, ins, reference, tol,
                                                    report.partitions, whole_run_failed)
                continue
            # the framework cannot run the whole model: check each partition as an extracted sub-model
            feeder = extracted_feeder(result, fmt, model_path, data, ins, reference, seed + k, others)
            try:
                report.partitions = _check_partitions(result, {}, tol, report.partitions, feeder=feeder)
            except ParityError as e:
                raise ParityError(f"{whole_run_failed}; {e}") from None
            continue
        spreads_per_step = None
        if others:
            other_runs = []
            for r in list(others):
                try:
                    other_runs.append(_reference_run(fmt, model_path, data, graph, sample, r, want_all))
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
                extra_runs[key] = _reference_run(fmt, model_path, model_bytes, graph, sample, kernels, want_all)
            return extra_runs[key]
        kernel_sets = _kernel_set_runs(fmt, model_path, data, graph, sample, reference, ref_runs) if exact else {}
        exact_state = None
        state = None  # the converted model's state: initial values first, then what each step left
        for j, (ins, (ref_outs, ref_tensors)) in enumerate(zip(sample, ref_runs)):
            spreads = spreads_per_step[j] if spreads_per_step else None
            if result.model is None:
                report.partitions = _check_partitions(result, ref_tensors, tol, report.partitions, spreads)
                continue
            got_outs, trace = run_traced(result.model, to_nnapi_inputs(result, ins, state=state))
            state = carry(result.model, got_outs)
            _compare_outputs(report, result, graph, got_outs, ref_outs, ref_tensors, tol, dq_steps, spreads)
            if hybrid_data is not None:
                hybrid_outs = runs_of(hybrid_data, reference, False)[j][0]   # the hybrid kernels
                for jj, (o, ref) in enumerate(zip(result.model.outputs, hybrid_outs)):
                    t = graph.tensors[graph.outputs[jj]]
                    got = _to_source_layout(result, o, got_outs[jj], t.dtype) if got_outs[jj] is not None else None
                    par = compare(t.name, ref, _rank0_as_source(got, ref), False, result.model.relaxed, {})
                    report.hybrid[jj:jj + 1] = [_merge(report.hybrid[jj], par) if jj < len(report.hybrid) else par]
            if exact:
                exact_state = _exact_distances(report, result, graph, ins, exact_state, got_outs,
                                               {r: runs[j][0] for r, runs in kernel_sets.items()})
            if report.local is not None:
                local_tensors = (ref_tensors if local_reference == reference
                                 else runs_of(data, local_reference, True)[j][1])
                report.local = local_check(result, trace, local_tensors, tol, dq_steps, local_reference,
                                           report.local)
            if layerwise:
                layers: list = []
                found = first_divergence(result, trace, ref_tensors, tol, spreads, layers)
                report.first_divergence = report.first_divergence or found
                report.layers = _merge_layers(report.layers, layers)
    if layerwise and result.model is not None:
        report.localization = _localization(report, result)
    if hybrid_data is not None and report.hybrid:
        report.verdict["hybrid_drift"] = drift_summary(report.hybrid)
    if report.verdict["rule"] == "local":
        if not report.local:
            report.verdict = {"rule": "end-to-end", "why": "no operation could be judged locally"}
        else:
            report.verdict["drift"] = drift_summary(report.outputs)
            report.verdict["summary"] = drift_line(report.local, report.verdict["drift"], report.samples)
    return report


def _verdict_rule(local: Optional[bool], max_lsb: Optional[int], graph, result) -> tuple[str, str]:
    """local for quantized models (each operation within one stored unit of the kernels that share NNAPI's
    arithmetic; end-to-end drift reported), end-to-end otherwise or when --max-lsb asks for it."""
    if result.model is None:
        return "end-to-end", "partitions are judged at their outputs"
    if max_lsb is not None:
        return "end-to-end", "--max-lsb makes the end-to-end error the rule"
    if local is False:
        return "end-to-end", "--no-local"
    if not _is_float_model(graph):
        return "local", ("default for quantized models: every operation within one stored unit of the kernels "
                         "that share NNAPI's arithmetic; the end-to-end drift is reported beside it")
    return "end-to-end", "default for float models" + ("; --local reports each operation" if local else "")


def _kernel_set_runs(fmt, model_path, data, graph, sample, reference, ref_runs) -> dict:
    """{kernel set: its per-step runs} for every framework kernel set that runs the model (for --exact)."""
    runs = {reference: ref_runs}
    for r in SPREAD_REFERENCES[fmt]:
        if r not in runs:
            try:
                runs[r] = _reference_run(fmt, model_path, data, graph, sample, r, False)
            except ParityError:
                continue
    return runs


def _exact_distances(report, result, graph, ins, exact_state, got_outs, framework_outs: dict):
    """--exact: the converted model run in float64 (the executor's precision switch) is the graph's
    mathematical value; record each float output's distance from it for ours and every kernel set."""
    from executor.runtime import RunState, compile_model
    from nnapi.state import carry
    model = result.model
    compiled = compile_model(model, float64=True)
    values = compiled.run(to_nnapi_inputs(result, ins, state=exact_state), RunState(nnapi.DEFAULT_LOOP_TIMEOUT_S))
    exact_outs = [None if v is None else v.array for v in values]
    report.exact = report.exact or [None] * len(model.outputs)
    for j, o in enumerate(model.outputs[:len(graph.outputs)]):
        t = graph.tensors[graph.outputs[j]]
        if exact_outs[j] is None or np.dtype(t.dtype).kind != "f":
            continue
        truth = _to_source_layout(result, o, exact_outs[j], np.float64).astype(np.float64)
        entry = report.exact[j] or {"name": t.name}
        candidates = {"ours": None if got_outs[j] is None else _to_source_layout(result, o, got_outs[j], t.dtype)}
        candidates.update({r: outs[j] for r, outs in framework_outs.items() if j < len(outs)})
        for who, arr in candidates.items():
            if arr is None or np.shape(arr) != truth.shape:
                continue
            d = float(np.max(np.abs(np.asarray(arr, np.float64) - truth))) if truth.size else 0.0
            entry[who] = max(entry.get(who, 0.0), d)
        report.exact[j] = entry
    return carry(model, exact_outs) if model.state else None


def _localization(report: "ParityReport", result: ConversionResult) -> str:
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


def _compare_outputs(report: ParityReport, result: ConversionResult, graph, got_outs, ref_outs, ref_tensors,
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
        got = _to_source_layout(result, o, got, t.dtype) if got is not None else None
        par = compare(t.name, ref, _rank0_as_source(got, ref), t.quant is not None and ref.dtype.kind in "iu",
                      model.relaxed, tolerance_for(tol, dq_steps, t_index, spreads))
        into[j:j + 1] = [_merge(into[j], par) if j < len(into) else par]


def _merge_layers(old: Optional[list], new: list) -> list:
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
            got = _to_source_layout(result, o, trace[o], t.dtype)
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


def _check_partitions(result: ConversionResult, ref_tensors: dict, tol: dict, previous,
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
            g = _to_source_layout(fake, o, got[j], t.dtype)
            par = compare(t.name, tensors[t_index], _rank0_as_source(g, tensors[t_index]),
                          t.quant is not None and g.dtype.kind in "iu",
                          p.model.relaxed, tolerance_for(tol, steps, t_index, spreads))
            par.diffs = None  # partition records keep statistics only
            if j < len(entry["outputs"]):  # a later sample: aggregate exactly like the model's outputs
                par = _merge(OutputParity(**entry["outputs"][j]), par)
            d = {kk: v for kk, v in par.__dict__.items() if kk != "diffs"}
            entry["outputs"][j:j + 1] = [d]
            entry["passed"] = entry["passed"] and d["passed"]
        out[k] = entry
    return out


def extracted_feeder(result: ConversionResult, fmt: str, model_path: str, data: bytes, inputs, reference: str,
                     seed: int, spread_references: Sequence[str] = ()):
    """A feeder for _check_partitions when the framework cannot run the whole model: each partition is
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


def _check_segments(result: ConversionResult, fmt: str, model_path: str, data: bytes, inputs, reference: str,
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
            executor[t] = _to_source_layout(result, o, trace[o], graph.tensors[t].dtype)
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
            par = compare(tensor.name, r, _rank0_as_source(executor[t], r),
                          tensor.quant is not None and r.dtype.kind in "iu", result.model.relaxed,
                          tolerance_for(tol, steps, t))
            par.diffs = None
            if j < len(entry["outputs"]):
                par = _merge(OutputParity(**entry["outputs"][j]), par)
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
