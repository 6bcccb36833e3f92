"""Test helpers: run an ONNX model's conversion with the executor on ONNX-layout inputs, undoing the layout
changes the importer documented (operand_perm) and the int8 -> uint8 rewrite below feature level 4; `parity`
and `verify_levels` compare it with onnxruntime (CPU, one thread) within the project's tolerances."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from converters.runners import run_onnxruntime
from converters.running import random_source_inputs
from converters.running import run_converted as _run_converted
from converters.tolerance import within_tolerance


def run_converted(result, inputs: Sequence[np.ndarray], model=None) -> list:
    """Run the converted model on ONNX-layout inputs; outputs in the ONNX layout and types
    (the shared runner undoes operand_perm and the uint8 rewrite)."""
    return _run_converted(result, inputs, model)


def parity(result, model_bytes: bytes, seeds=(0,), inputs: Optional[list] = None) -> list:
    """[(seed, output index, max |diff|, allowed)] for every output outside the tolerance."""
    graph = result.source.main
    bad = []
    for seed in seeds:
        ins = inputs if inputs is not None else random_inputs(graph, seed)
        ref, _ = run_onnxruntime(model_bytes, ins)  # CPU, one thread
        got = run_converted(result, ins)
        for k, (r, g) in enumerate(zip(ref, got)):
            quantized = graph.tensors[graph.outputs[k]].quant is not None and r.dtype.kind in "iu"
            ok, err, allowed = within_tolerance(r, g.reshape(r.shape) if g.size == r.size else g, quantized)
            if not ok:
                bad.append((seed, k, err, allowed))
    return bad


def random_inputs(graph, seed: int) -> list:
    """Seeded inputs: floats in [-1, 1) (signs matter for Relu/Abs), quantized ints over their range."""
    arrays = random_source_inputs(graph, seed)
    return [(2 * x - 1).astype(x.dtype) if x.dtype.kind == "f" else x for x in arrays]


class ParityError(AssertionError):
    """The converted model is incomplete for a reason other than the feature level, or disagrees."""


def verify_levels(model_bytes: bytes, levels=(1, 3, 4, 8), seeds=(0, 1), need_level: Optional[int] = None) -> dict:
    """Convert at each level; a complete conversion must match onnxruntime, an incomplete one may only
    lack feature level (and must not when level >= need_level). Returns {level: ConversionResult}."""
    from converters.onnx import convert
    results = {}
    for level in levels:
        r = convert(model_bytes, feature_level=level)
        results[level] = r
        if not r.complete:
            reasons = [(n.op, n.reason_code, n.reason) for n in r.unsupported]
            if (need_level is not None and level >= need_level) or any(
                    code != "feature_level_too_low" for _, code, _ in reasons):
                raise ParityError(f"feature level {level}: not converted: {reasons}")
            continue
        if need_level is not None and level < need_level:
            raise ParityError(f"converted at level {level}, below the expected minimum {need_level}")
        bad = parity(r, model_bytes, seeds)
        if bad:
            raise ParityError(f"feature level {level}: outputs differ (seed, output, max |diff|, allowed): {bad}; "
                              f"ops {[o.code.name for o in r.model.operations]}")
    if not any(r.complete for r in results.values()):
        # every level lacked a feature: nothing was compared, so nothing was verified
        raise ParityError(f"no feature level of {list(levels)} converts the model: "
                          f"{[(n.op, n.reason) for n in results[max(levels)].unsupported]}")
    return results
