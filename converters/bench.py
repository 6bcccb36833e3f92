"""`nnapi bench`: executor latency against the source framework, in one process run.

JSON fields (stable): model, ours_ms_median, ours_ms_spread, reference, reference_ms_median,
reference_ms_spread, ratio (ours / reference), macs, gflops (achieved by the executor),
planned_peak_bytes (the executor's peak of live intermediate bytes), arena_bytes (the buffers the plan
shares among intermediates), peak_rss_bytes."""
from __future__ import annotations

import resource
import time
from pathlib import Path
from typing import Optional

import numpy as np

import nnapi

from .load import detect_format, importer
from .macs import graph_macs
from .runners import MissingDependency, litert_interpreter, random_source_inputs, to_nnapi_inputs


def timeit_ms(fn, runs: int, warmup: int) -> list[float]:
    """Milliseconds of each of `runs` calls of fn, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def _spread(times) -> float:
    q1, q3 = np.percentile(times, [25, 75])
    return float(q3 - q1)


def bench(path: str, vs: Optional[str] = None, threads: int = 1, runs: int = 20, warmup: int = 3,
          input_shapes=None, feature_level: int = 8, dims=None) -> dict:
    from executor.planner import planned_peak_bytes
    from executor.runtime import RunState, compile_model
    fmt = detect_format(path)
    if fmt == "nnapi":
        model, source, result = nnapi.load(path), None, None
        from .cli import random_inputs
        ins = random_inputs(model)
        nn_ins = ins
    else:
        imp = importer(fmt)
        source = imp.read(path, input_shapes, dims)
        result = imp.convert(path, feature_level=feature_level, input_shapes=input_shapes, dims=dims)
        if not result.complete:
            raise ValueError(f"{len(result.unsupported)} node(s) cannot be converted; bench needs a complete model")
        model = result.model
        ins = random_source_inputs(source.main, 0, input_shapes)
        nn_ins = to_nnapi_inputs(result, ins)
    compiled = compile_model(model)
    state = RunState(nnapi.DEFAULT_LOOP_TIMEOUT_S)
    ours = timeit_ms(lambda: compiled.run(nn_ins, state), runs, warmup)
    macs = int(sum(graph_macs(source.main))) if source is not None else 0
    out = {"model": Path(path).name, "ours_ms_median": float(np.median(ours)), "ours_ms_spread": _spread(ours),
           "reference": None, "reference_ms_median": None, "reference_ms_spread": None, "ratio": None,
           "macs": macs, "gflops": (2 * macs / (np.median(ours) * 1e6)) if macs else 0.0,
           "planned_peak_bytes": planned_peak_bytes(compiled), "arena_bytes": compiled.plan.arena_bytes, "runs": runs, "warmup": warmup,
           "threads": threads}
    if vs and source is not None:
        ref = _reference_fn(fmt, path, vs, ins, threads)
        rt = timeit_ms(ref, runs, warmup)
        out.update(reference=vs, reference_ms_median=float(np.median(rt)), reference_ms_spread=_spread(rt),
                   ratio=float(np.median(ours) / np.median(rt)))
    out["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return out


def _reference_fn(fmt: str, path: str, vs: str, ins, threads: int):
    data = Path(path).read_bytes()
    if fmt == "tflite":
        if vs not in ("litert", "litert-ref"):
            raise ValueError(f"--vs {vs} cannot run a .tflite model (use litert or litert-ref)")
        it = litert_interpreter(data, vs, threads)
        it.allocate_tensors()
        for d, x in zip(it.get_input_details(), ins):
            it.set_tensor(d["index"], x)
        return it.invoke
    if vs != "onnxruntime":
        raise ValueError(f"--vs {vs} cannot run an .onnx model (use onnxruntime)")
    try:
        import onnxruntime as ort
    except ImportError:
        raise MissingDependency("onnxruntime is not installed: pip install onnxruntime") from None
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    feeds = {i.name: x for i, x in zip(sess.get_inputs(), ins)}
    return lambda: sess.run(None, feeds)
