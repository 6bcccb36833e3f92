"""Shared checks for TFLite converter tests: convert an authored model at a
feature level, run it with the executor and with LiteRT on seeded inputs, and
compare within the parity tolerances."""

from converters.runners import run_litert

from converters.running import random_source_inputs, run_converted
from converters.tflite import convert
from converters.tolerance import within_tolerance


def assert_matches_litert(data: bytes, feature_level: int, seeds=(0, 1), inputs=None, reference="litert",
                          input_shapes=None):
    """Convert `data` at `feature_level`; every output within tolerance of LiteRT. Returns the result."""
    result = convert(data, feature_level=feature_level, input_shapes=input_shapes)
    assert result.complete, [(n.op, n.reason) for n in result.unsupported]
    graph = result.source.main
    for seed in seeds:
        ins = inputs if inputs is not None else random_source_inputs(graph, seed, input_shapes)
        ref = run_litert(data, ins, reference)
        got = run_converted(result, ins)
        for k, (r, g) in enumerate(zip(ref, got)):
            quantized = graph.tensors[graph.outputs[k]].quant is not None and r.dtype.kind in "iu"
            ok, err, allowed = within_tolerance(r, g.reshape(r.shape) if g.size == r.size else g, quantized)
            assert ok, (f"feature level {feature_level}, seed {seed}, output {k}: max |diff| {err} > {allowed}\n"
                        f"ref={r.ravel()[:8]}\ngot={g.ravel()[:8]}")
        if inputs is not None:
            break
    return result


def unsupported_reason(data: bytes, feature_level: int):
    result = convert(data, feature_level=feature_level)
    assert not result.complete
    return result.unsupported[0]
