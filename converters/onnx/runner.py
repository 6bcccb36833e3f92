"""Run an ONNX model with onnxruntime (CPU, one thread) and its conversion with the executor on the
same inputs, undoing the layout changes the importer documented (operand_perm) and the int8 -> uint8
rewrite below feature level 4; `parity` compares them with the project's tolerances."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..runners import MissingDependency, from_nnapi_outputs, random_source_inputs, to_nnapi_inputs
from ..tolerance import within_tolerance
from . import layout


def run_onnxruntime(model_bytes: bytes, inputs: Sequence[np.ndarray], names: Sequence[str]) -> list:
    try:
        import onnxruntime as ort
    except ImportError:
        raise MissingDependency("onnxruntime is not installed: pip install onnxruntime") from None
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(bytes(model_bytes), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, dict(zip(names, inputs)))


def run_converted(result, inputs: Sequence[np.ndarray], model=None) -> list:
    """Run the converted model on ONNX-layout inputs; outputs in the ONNX layout and types."""
    from ..cli import run_model
    model = model or result.model
    graph = result.source.main
    perms = result.operand_perm
    laid = [np.transpose(x, perms[k]) if k in perms else x for k, x in zip(model.inputs, inputs)]
    outs = run_model(model, to_nnapi_inputs(result, laid, model))
    dtypes = [graph.tensors[result.operand_map[o][0]].dtype for o in model.outputs]
    outs = from_nnapi_outputs(dtypes, outs)
    return [np.transpose(y, layout.inverse(perms[k])) if k in perms else y for k, y in zip(model.outputs, outs)]


def parity(result, model_bytes: bytes, seeds=(0,), inputs: Optional[list] = None) -> list:
    """[(seed, output index, max |diff|, allowed)] for every output outside the tolerance."""
    graph = result.source.main
    names = [graph.tensors[i].name for i in graph.inputs]
    bad = []
    for seed in seeds:
        ins = inputs if inputs is not None else random_inputs(graph, seed)
        ref = run_onnxruntime(model_bytes, ins, names)
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
    from . import convert
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
    return results
