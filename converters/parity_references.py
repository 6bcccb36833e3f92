"""Parity's references: the framework runs (every kernel set a format has), the framework's own spread
between its kernel sets, the tolerance a source tensor gets (dequantized steps, spread), and --exact's
float64 run of the converted model."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np

import nnapi
from nnapi.state import carry

from .parity_report import ParityError, to_source_layout
from .runners import ReferenceFailed, litert_steps, run_onnxruntime
from .running import RunState, compile_model, to_nnapi_inputs
from .tolerance import SPREAD_MIN_OPERATIONS


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


def is_float_model(graph) -> bool:
    """No activation is quantized (constant int8 weights of a dynamic-range model do not count)."""
    return not any(t.quant is not None and not t.is_constant for t in graph.tensors)


def choose_tolerance(mode: Optional[str], fmt: str, graph) -> tuple[str, str]:
    """(fixed | spread, why): the user's choice, or spread for float models of more than
    SPREAD_MIN_OPERATIONS operations, whose float rounding compounds beyond the fixed rule."""
    if mode:
        return mode, "--tolerance " + mode
    if is_float_model(graph) and len(graph.nodes) > SPREAD_MIN_OPERATIONS:
        return "spread", (f"default for float models with more than {SPREAD_MIN_OPERATIONS} operations "
                          f"(this one has {len(graph.nodes)})")
    return "fixed", ("default for quantized models" if not is_float_model(graph) else
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


def reference_run(fmt: str, path: str, data: bytes, graph, steps: list, reference: str, want_all: bool):
    """Per step (outputs, tensors): LiteRT invokes one interpreter on every step, its variables kept."""
    try:
        if fmt == "tflite":
            return litert_steps(data, steps, reference, graph)
        # (the tensors the file's nodes write: not the per-slice ones converters/split_pass.py adds)
        written = set(graph.inputs) | {o for n in graph.nodes for o in n.outputs if o >= 0}
        names = [t.name for t in graph.tensors if not t.is_constant and t.index in written] if want_all else []
        # the path: external data lies beside it
        return [run_onnxruntime(path, inputs, graph, names, optimized=reference == "onnxruntime-optimized")
                for inputs in steps]
    except ReferenceFailed as e:
        raise ParityError(f"{Path(path).name}: {e}") from None


# MediaPipe custom operators LiteRT's XNNPACK delegate runs with MediaPipe's own semantics (it also runs
# MaxPoolingWithArgmax2D and MaxUnpooling2D, but encodes the argmax indices its own way, column-major uint32
# bits in the float tensor: no reference for a model whose outputs carry them)
XNNPACK_CUSTOM_OPS = {"Convolution2DTransposeBias"}


def xnnpack_may_stand_in(graph) -> bool:
    """Whether litert-xnnpack can stand in for the default reference: every custom operator of the model is
    one XNNPACK runs as MediaPipe defines it."""
    return all(n.op[len("CUSTOM:"):] in XNNPACK_CUSTOM_OPS for n in graph.nodes if n.op.startswith("CUSTOM:"))


def reference_run_or_fallback(fmt: str, path: str, data: bytes, graph, steps: list, reference: str, want_all: bool,
                              may_fall_back: bool) -> tuple[list, str, Optional[str]]:
    """(runs, the reference that ran, why it is not `reference` or None). With `may_fall_back` (the default
    LiteRT reference, a completely converted model), a model LiteRT's built-in kernels cannot run (a custom
    operator such as MediaPipe's Convolution2DTransposeBias, which XNNPACK implements) is run by litert-xnnpack."""
    try:
        return reference_run(fmt, path, data, graph, steps, reference, want_all), reference, None
    except ParityError as e:
        if not may_fall_back or reference == "litert-xnnpack":
            raise
        try:
            runs = reference_run(fmt, path, data, graph, steps, "litert-xnnpack", want_all)
        except ParityError:
            raise e from None
        return runs, "litert-xnnpack", (f"{reference} could not run the model ({str(e).split(': ', 1)[-1]}); "
                                        f"LiteRT with XNNPACK (litert-xnnpack) runs it whole")


def kernel_set_runs(fmt, model_path, data, graph, sample, reference, ref_runs) -> dict:
    """{kernel set: its per-step runs} for every framework kernel set that runs the model (for --exact)."""
    runs = {reference: ref_runs}
    for r in SPREAD_REFERENCES[fmt]:
        if r not in runs:
            try:
                runs[r] = reference_run(fmt, model_path, data, graph, sample, r, False)
            except ParityError:
                continue
    return runs


def exact_distances(report, result, graph, ins, exact_state, got_outs, framework_outs: dict):
    """--exact: the converted model run in float64 (the executor's precision switch) is the graph's
    mathematical value; record each float output's distance from it for ours and every kernel set."""
    model = result.model
    compiled = compile_model(model, float64=True)
    values = compiled.run(to_nnapi_inputs(result, ins, state=exact_state), RunState(nnapi.DEFAULT_LOOP_TIMEOUT_S))
    exact_outs = [None if v is None else v.array for v in values]
    report.exact = report.exact or [None] * len(model.outputs)
    for j, o in enumerate(model.outputs[:len(graph.outputs)]):
        t = graph.tensors[graph.outputs[j]]
        if exact_outs[j] is None or np.dtype(t.dtype).kind != "f":
            continue
        truth = to_source_layout(result, o, exact_outs[j], np.float64).astype(np.float64)
        entry = report.exact[j] or {"name": t.name}
        candidates = {"ours": None if got_outs[j] is None else to_source_layout(result, o, got_outs[j], t.dtype)}
        candidates.update({r: outs[j] for r, outs in framework_outs.items() if j < len(outs)})
        for who, arr in candidates.items():
            if arr is None or np.shape(arr) != truth.shape:
                continue
            d = float(np.max(np.abs(np.asarray(arr, np.float64) - truth))) if truth.size else 0.0
            entry[who] = max(entry.get(who, 0.0), d)
        report.exact[j] = entry
    return carry(model, exact_outs) if model.state else None
