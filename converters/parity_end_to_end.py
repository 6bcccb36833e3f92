"""The end-to-end bound of a quantized model's parity verdict.

The local verdict judges each operation on the framework's own inputs, so an error that stays within a
unit at every operation and compounds would pass it. The end-to-end check closes that gap: the converted
model's outputs against the framework kernels that share NNAPI's arithmetic (LOCAL_REFERENCES: LiteRT's
reference kernels, onnxruntime), measured in units of the output's quantization step:

- an integer output with quantization: its stored units;
- a float output that dequantizes a quantized tensor (DEQUANTIZE, DequantizeLinear): that tensor's scale;
- a float output of a run-time quantized model (onnxruntime's quantize_dynamic) computed after its last
  quantization: the step a run-time uint8 quantization of the output's own range would have,
  (max(ref, 0) - min(ref, 0)) / 255, as DynamicQuantizeLinear computes it;
- any other float output: no unit; judged by the float rules (converters/tolerance.py).

The allowance. Where NNAPI's arithmetic is the reference kernels', every operation gives the same integers
from the same integers; where a kernel evaluates a step in float (a look-up table built from expf, a float
rescale, onnxruntime's QDQ nodes computed in float between DequantizeLinear and QuantizeLinear), a rounding
can land one unit the other way. Each rounding point (a node that writes a quantized tensor: rounding_depth)
can do that once; a DynamicQuantizeLinear rounds once, a DynamicQuantizeLSTM once per time step (its h is
quantized at run time before every step). A unit flipped at a tensor reaches the next rounding point scaled
by the layer's gain in units, and post-training quantization chooses each tensor's scale to span its range, so that gain is about
one unit per unit, and flips at independent points add like a random walk: after D rounding points on the
longest path from an input to the output, sqrt(D) units is one standard deviation. The allowance is
2 sqrt(D) + 1 units, rounded up: two deviations, and the output's own rounding.

Measured with one sample per model (`nnapi parity`, the default seed; four where stated): the zoo's
TensorFlow int8 models against litert-ref are 0-4 units off at depths 6-125 (EfficientNet-B0 int8: 4 units at
depth 123, allowed 24; MobileNetV3-small with float I/O: 10 over four samples, allowed 23); its
onnxruntime-quantized models against onnxruntime 1-10 units at depths 14-66 (MobileNetV2 QDQ: 10 units at
depth 66, 13 over four samples, allowed 18; against onnxruntime-optimized, whose QLinear kernels are
integer, 12), ddddocr's dynamically quantized CRNN 2.3 units at depth 38 (allowed 14); the held-out int8
models (benchmarks/held_out) 0-1 unit over three samples. A kernel made one unit high at every convolution,
which keeps every operation within the local verdict's unit, is 33 units off at depth 31 (ResNet, allowed
13) and 158 at depth 65 (MobileNetV2, allowed 18): tests/converters/test_parity_verdict.py.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .parity_report import rank0_as_source, to_source_layout
from .tolerance import allowed_error


def rounding_depth(graph, nodes=None, starts=None) -> dict:
    """{tensor index: the most rounding points on a path from a model input (or from `starts`, through `nodes`:
    a partition) to it}: a node that writes a non-constant quantized tensor rounds once (a requantization, a
    QuantizeLinear)."""
    depth = {t: 0 for t in (graph.inputs if starts is None else starts)}
    chosen = graph.nodes if nodes is None else [graph.nodes[k] for k in nodes]
    for node in chosen:  # execution order
        before = max((depth.get(t, 0) for t in node.inputs if t >= 0), default=0)
        for t in node.outputs:
            if t < 0:
                continue
            tensor = graph.tensors[t]
            depth[t] = before + (1 if tensor.quant is not None and not tensor.is_constant else
                                 _runtime_roundings(graph, node))
    return depth


def _runtime_roundings(graph, node) -> int:
    """How often a run-time quantizing node rounds on the way through it (0 for any other node)."""
    from .parity_local import RUNTIME_QUANTIZING
    if node.op == "DynamicQuantizeLSTM":
        shape = graph.tensors[node.inputs[0]].shape if node.inputs and node.inputs[0] >= 0 else None
        return int(shape[0]) if shape and shape[0] and shape[0] > 0 else 1   # [seq, batch, input]
    return 1 if node.op in RUNTIME_QUANTIZING - {"MatMulInteger", "ConvInteger"} else 0


def allowed_units(depth: int) -> int:
    """2 sqrt(depth) + 1 units, rounded up (module docstring)."""
    return int(math.ceil(2 * math.sqrt(max(depth, 0)) + 1))


def output_unit(graph, t_index: int, dq_steps: dict, ref: Optional[np.ndarray] = None) \
        -> tuple[Optional[float], str]:
    """(the output's unit in its own values, what it is) or (None, why there is none)."""
    from .parity_local import runtime_quantized
    t = graph.tensors[t_index]
    if t.quant is not None and np.dtype(t.dtype).kind in "iu":
        return 1.0, "stored units"
    if t_index in dq_steps:
        return dq_steps[t_index][0], f"steps of {dq_steps[t_index][1]}"
    if ref is not None and ref.size and ref.dtype.kind == "f" and runtime_quantized(graph):
        step = (max(float(np.nanmax(ref)), 0.0) - min(float(np.nanmin(ref)), 0.0)) / 255
        if step > 0:
            return step, "steps of a run-time uint8 quantization of the output's range"
    return None, "a float output computed after the last quantized tensor: judged by the float rules"


class EndToEnd:
    """The per-output worst error against the reference kernels, over every sample and step."""

    def __init__(self, reference: str, graph, dq_steps: dict, relaxed: bool):
        self.reference, self.graph, self.dq_steps, self.relaxed = reference, graph, dq_steps, relaxed
        self.depth = rounding_depth(graph)
        self.outputs: dict = {}   # name -> record
        self.spread: dict = {}    # name -> {kernel_sets, spread, drift}

    def add(self, result, got_outs: list, ref_outs: list) -> None:
        model = result.model
        for j, ref in enumerate(ref_outs[:len(model.outputs)]):
            t_index = self.graph.outputs[j]
            t = self.graph.tensors[t_index]
            got = got_outs[j]
            got = None if got is None else rank0_as_source(to_source_layout(result, model.outputs[j], got, t.dtype),
                                                           ref)
            self._fold(t_index, t.name, np.asarray(ref), got)

    def add_partition(self, k: int, p, part_result, got_outs: list, ref_tensors: dict) -> None:
        """A partition of a partial conversion, fed the reference kernels' tensors at its inputs: its outputs
        against theirs, the depth counted from the partition's inputs."""
        depth = rounding_depth(self.graph, p.nodes, p.inputs)
        for j, t_index in enumerate(p.outputs):
            ref = ref_tensors.get(t_index)
            if ref is None or j >= len(got_outs):
                continue
            t = self.graph.tensors[t_index]
            got = got_outs[j]
            got = None if got is None else rank0_as_source(
                to_source_layout(part_result, p.model.outputs[j], got, t.dtype), np.asarray(ref))
            self._fold(t_index, t.name, np.asarray(ref), got, depth.get(t_index, 0), partition=k)

    def add_kernel_sets(self, result, got_outs: list, default: str, runs: dict) -> None:
        """The drift against the default reference, and the framework's own spread between its kernel sets
        (`runs`: {kernel set: outputs}) on the same inputs, per output in its unit (absolute where none)."""
        model = result.model
        for j, t_index in enumerate(self.graph.outputs[:len(model.outputs)]):
            t = self.graph.tensors[t_index]
            outs = {r: np.asarray(o[j], np.float64) for r, o in runs.items() if j < len(o)}
            unit = output_unit(self.graph, t_index, self.dq_steps, next(iter(outs.values()), None))[0] or 1.0
            rec = self.spread.setdefault(t.name, {"name": t.name, "kernel_sets": sorted(outs),
                                                  "spread": 0.0, "drift": 0.0})
            arrays = list(outs.values())
            for a_i, a in enumerate(arrays):
                for b in arrays[a_i + 1:]:
                    if a.shape == b.shape and a.size:
                        rec["spread"] = max(rec["spread"], float(np.abs(a - b).max()) / unit)
            got = got_outs[j]
            if got is not None and default in outs:
                mine = rank0_as_source(to_source_layout(result, model.outputs[j], got, t.dtype), outs[default])
                if mine.shape == outs[default].shape and mine.size:
                    rec["drift"] = max(rec["drift"], float(np.abs(mine.astype(np.float64) - outs[default]).max())
                                       / unit)

    def _fold(self, t_index: int, name: str, ref: np.ndarray, got: Optional[np.ndarray],
              depth: Optional[int] = None, partition: Optional[int] = None) -> None:
        unit, what = output_unit(self.graph, t_index, self.dq_steps, ref)
        depth = self.depth.get(t_index, 0) if depth is None else depth
        rec = self.outputs.setdefault(name, {"name": name, "unit": what, "depth": depth, "max_units": 0.0,
                                             "max_abs_error": 0.0, "passed": True})
        if partition is not None:
            rec["partition"] = partition
        if got is None or got.shape != ref.shape:
            rec.update(max_units=float("inf"), max_abs_error=float("inf"), passed=False)
            return
        d = np.abs(ref.astype(np.float64) - got.astype(np.float64))
        err = float(d.max()) if d.size else 0.0
        if np.isnan(d).any():
            err = float("nan")
        rec["max_abs_error"] = err if err != err else max(rec["max_abs_error"], err)
        if unit is not None:
            units = err / unit
            rec["max_units"] = units if units != units else max(rec["max_units"] or 0.0, units)
            rec["allowed_units"] = allowed_units(depth)
            ok = units <= rec["allowed_units"]
        else:
            rec["max_units"] = None
            allowed, rec["tolerance"] = allowed_error(ref, False, self.relaxed)
            rec["allowed"] = allowed
            ok = err <= allowed
        rec["passed"] = rec["passed"] and bool(ok)

    def drift_against_spread(self) -> Optional[dict]:
        """{spread, drift, within_spread, kernel_sets, outputs}: the largest drift from the default reference
        and the largest spread between the framework's kernel sets, in the outputs' units."""
        if not self.spread:
            return None
        recs = list(self.spread.values())
        spread, drift = max(r["spread"] for r in recs), max(r["drift"] for r in recs)
        return {"kernel_sets": recs[0]["kernel_sets"], "spread": spread, "drift": drift,
                "within_spread": all(r["drift"] <= r["spread"] for r in recs), "outputs": recs}

    def as_dict(self) -> dict:
        """{reference, max_units, allowed_units, passed, outputs}: max_units / allowed_units of the output with
        the largest share of its allowance (None when no output has a unit)."""
        recs = list(self.outputs.values())
        with_units = [r for r in recs if r.get("max_units") is not None]
        worst = max(with_units, key=lambda r: (r["max_units"] / r["allowed_units"]
                                               if r["max_units"] == r["max_units"] else float("inf")), default=None)
        return {"reference": self.reference,
                "max_units": None if worst is None else worst["max_units"],
                "allowed_units": None if worst is None else worst["allowed_units"],
                "passed": bool(recs) and all(r["passed"] for r in recs),
                "outputs": recs}
