"""`nnapi bench`: executor latency against the source framework, in one process run.

JSON fields (stable): model, inputs ([{"name", "dtype", "shape"}]: the arrays timed), ours_ms_median, ours_ms_spread, reference, reference_ms_median,
reference_ms_spread, ratio (ours / reference), macs (null where unknown: a .nnapi model, or extents that
depend on values), gflops (achieved by the executor; null without MACs), operations (the
NNAPI operations timed, over every partition of a partial model),
planned_peak_bytes (the executor's peak of live intermediate bytes), arena_bytes (the buffers the plan
shares among intermediates), peak_rss_bytes, threads (both sides), blas ({"library", "version", "architecture" (the kernel set OpenBLAS chose), "coretype_env" (OPENBLAS_CORETYPE when set: it chose the set),
"threads"}: the executor's BLAS as threadpoolctl reports it, held to `threads` while timing), clock
("wall", or "cpu": the thread's CPU time, for a loaded machine).

With profile=True: profile [{"operation_index", "nnapi_op", "source_node", "output_shape", "ms", "share",
"cumulative_share", "macs"}] (slowest first; ms is the median over the profiled runs), by_op
[{"nnapi_op", "count", "ms", "share"}] and profile_total_ms (the sum of the per-operation medians, to
set against ours_ms_median). A model with IF or WHILE also gets subgraph_profile [{"subgraph" (its
index among the model's referenced models), "operation_index", "nnapi_op", "output_shape", "ms" (per
invocation of the model, summed over its calls), "calls" (per invocation), "share" (of
profile_total_ms)}] and subgraph_by_op: the operations inside, whose time is part of their IF/WHILE row.

A partial model (some nodes stay on the CPU) is timed as partial_pipeline runs it; field partial
{"partitions", "fallback_segments", "fallback_nodes", "framework", "nnapi_ms_median", "framework_ms_median"}."""
from __future__ import annotations

import resource
import time
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import numpy as np

import nnapi

from .load import detect_format, importer
from .macs import graph_macs
from .runners import LITERT_REFERENCES, MissingDependency, allocated_litert
from .running import random_source_inputs, to_nnapi_inputs


# "wall": elapsed time; "cpu": the calling thread's CPU time, which a machine shared with other work
# inflates far less (a run longer than the scheduler's time slice is otherwise stretched by the load,
# a shorter one is not: wall-clock ratios then favour the faster side). One thread only.
CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}


def timeit_ms(fn, runs: int, warmup: int, clock=time.perf_counter) -> list[float]:
    """Milliseconds of each of `runs` calls of fn on `clock`, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = clock()
        fn()
        times.append((clock() - t0) * 1e3)
    return times


def _spread(times) -> float:
    q1, q3 = np.percentile(times, [25, 75])
    return float(q3 - q1)


@contextmanager
def blas_threads(threads: int):
    """Hold the executor's BLAS (numpy's) to `threads` threads; yields what it is and runs."""
    from threadpoolctl import threadpool_info, threadpool_limits
    with threadpool_limits(limits=threads, user_api="blas"):
        info = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        yield {"library": info[0].get("internal_api") if info else None,
               "version": info[0].get("version") if info else None,
               "threads": info[0].get("num_threads") if info else None,
               "architecture": info[0].get("architecture") if info else None,
               "coretype_env": os.environ.get("OPENBLAS_CORETYPE")}


def bench(path: str, vs: Optional[str] = None, threads: int = 1, runs: int = 20, warmup: int = 3,
          input_shapes=None, feature_level: int = 8, profile: bool = False, dims=None, clock: str = "wall") -> dict:
    if clock not in CLOCKS:
        raise ValueError(f"clock {clock!r}: choose {' or '.join(CLOCKS)}")
    if clock == "cpu" and threads != 1:
        raise ValueError(f"--clock cpu times the calling thread only: use it with --threads 1, not {threads} "
                         "(or time elapsed time with --clock wall)")
    with blas_threads(threads) as blas:
        out = _bench(path, vs, threads, runs, warmup, input_shapes, feature_level, profile, CLOCKS[clock], dims)
    out["blas"], out["clock"] = blas, clock
    return out


def _bench(path, vs, threads, runs, warmup, input_shapes, feature_level, profile, clock, dims=None) -> dict:
    from .running import RunState, compile_model, planned_peak_bytes
    fmt = detect_format(path)
    if fmt == "nnapi":
        model, source, result = nnapi.load(path), None, None
        from .running import random_inputs
        ins = random_inputs(model)
        nn_ins = ins
    else:
        imp = importer(fmt)
        if fmt == "onnx":
            refuse_unpinned_onnx(path, input_shapes, dims)
        refuse_unpinned(_read(imp, path, input_shapes, dims), path, feature_level, input_shapes)
        source, result = _converted(imp, path, input_shapes, dims, feature_level, partial=False)
        ins = random_source_inputs(source.main, 0, input_shapes)
        if not result.complete:
            if profile:
                raise ValueError("--profile times the operations of a complete model; this one is partial")
            _, result = _converted(imp, path, input_shapes, dims, feature_level, partial=True)
            return _bench_partial(path, fmt, vs, threads, runs, warmup, source, result, ins, clock)
        model = result.model
        nn_ins = to_nnapi_inputs(result, ins)
    compiled = compile_model(model)
    state = RunState(nnapi.DEFAULT_LOOP_TIMEOUT_S)
    ours = timeit_ms(lambda: compiled.run(nn_ins, state), runs, warmup, clock)
    macs = total_macs(source) if source is not None else None   # a .nnapi file has no source graph to count
    out = {"model": Path(path).name, "inputs": timed_inputs(source.main if source else None, ins, model),
           "ours_ms_median": float(np.median(ours)), "ours_ms_spread": _spread(ours),
           "reference": None, "reference_ms_median": None, "reference_ms_spread": None, "ratio": None,
           "macs": macs, "gflops": _gflops(macs, np.median(ours)),
           "planned_peak_bytes": planned_peak_bytes(compiled), "arena_bytes": compiled.plan.arena_bytes, "runs": runs, "warmup": warmup,
           "threads": threads, "operations": len(model.operations)}
    if profile:
        out.update(_profile(compiled, nn_ins, runs, warmup, result, source, clock))
    if vs and source is not None:
        ref = _reference_fn(fmt, path, vs, ins, threads)
        rt = timeit_ms(ref, runs, warmup, clock)
        out.update(reference=vs, reference_ms_median=float(np.median(rt)), reference_ms_spread=_spread(rt),
                   ratio=float(np.median(ours) / np.median(rt)))
    out["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return out


def _gflops(macs, median_ms):
    """GFLOP/s achieved, None when the MACs are unknown or there are none to count."""
    return 2 * macs / (median_ms * 1e6) if macs and median_ms > 0 else None


def total_macs(source):
    """The source model's MACs, inside IF/WHILE bodies too (converters/macs.py); None when a node that
    multiplies has extents no shape fixes."""
    from .macs import model_macs
    return model_macs(source)


def timed_inputs(graph, arrays, model=None) -> list[dict]:
    """[{"name", "dtype", "shape"}] of the arrays timed, named as the source graph (or the .nnapi model) names
    its inputs."""
    if graph is not None:
        names = [graph.tensors[i].name for i in graph.inputs]
    else:
        names = [model.operands[i].name or f"input{k}" for k, i in enumerate(model.inputs)]
    return [{"name": n, "dtype": np.asarray(x).dtype.name, "shape": list(np.shape(x))} for n, x in zip(names, arrays)]


class UnpinnedInputs(ValueError):
    """A model input whose extents no pin fixes: bench would time a shape of its own choosing."""


def refuse_unpinned(source, path: str, feature_level: int, input_shapes) -> None:
    """Raise UnpinnedInputs, with coverage's pin advice (converters/pins.py), when an input of `source` (read with
    the pins) still has an unknown rank or extent."""
    from .pins import analyse, open_graph_inputs, pin_dims, pin_how, sentences
    open_inputs = open_graph_inputs(source.main)
    if not open_inputs:
        return
    from .convert import check_graph
    found = analyse(source, check_graph(source, feature_level, input_shapes), graph_macs(source.main))
    advised = {p["input"] for p in found["pins_needed"]}
    advice = sentences({"pins_needed": found["pins_needed"]})
    advice += [f"pin {p['input']} ({pin_dims(p)}) ({pin_how(p)})" for p in open_inputs if p["input"] not in advised]
    raise UnpinnedInputs(_refusal(path, open_inputs, advice))


def refuse_unpinned_onnx(path: str, input_shapes, dims) -> None:
    """refuse_unpinned from an ONNX file's input declarations alone, before the shape pass (which takes long on a
    model left dynamic): the reader's own first steps (shapes.pin, shapes.name_input_dims) say what stays open;
    the advice is coverage's pin_how, without the node counts that need the shape pass."""
    from .onnx import shapes
    from .pins import onnx_declarations, pin_dims, pin_how
    proto = onnx_declarations(path)
    if proto is None:
        return
    shapes.pin(proto, input_shapes, dims)
    axes_of: dict = {}
    for sym, places in shapes.name_input_dims(proto).items():
        for name, axis in places:
            axes_of.setdefault(name, {})[axis] = sym
    open_inputs = []
    for vi in proto.graph.input:
        if vi.name not in axes_of:
            continue
        axes = sorted(axes_of[vi.name])
        open_inputs.append({
            "input": vi.name, "axes": axes,
            "dims": [None if axes_of[vi.name][a].startswith(shapes.UNNAMED) else axes_of[vi.name][a] for a in axes],
            "input_shape": ",".join(str(d.dim_value) if d.HasField("dim_value") else "?"
                                    for d in vi.type.tensor_type.shape.dim)})
    if open_inputs:
        advice = [f"pin {p['input']} ({pin_dims(p)}) ({pin_how(p)})" for p in open_inputs]
        raise UnpinnedInputs(_refusal(path, open_inputs, advice) + " (nnapi coverage names the nodes that wait on "
                                                                   "each pin)")


def _refusal(path: str, open_inputs: list, advice: list) -> str:
    names = ", ".join(f"{p['input']} [{p['input_shape'] or '?'}]" for p in open_inputs)
    return (f"{Path(path).name}: input(s) {names} have dimensions no pin fixes, so bench would time a shape of "
            f"its own choosing; pin them: " + "; ".join(advice))


# the last model's (source graph, conversion), full and partial: benching one file again with the same pins
# (benchmarks.run times each model against two references, then profiles it) reuses them
_LAST_CONVERSION: dict = {}


def _cache_for(path: str, input_shapes, dims) -> dict:
    st = Path(path).stat()
    key = (str(Path(path).resolve()), st.st_mtime_ns, st.st_size, repr(input_shapes), repr(dims))
    if _LAST_CONVERSION.get("key") != key:
        _LAST_CONVERSION.clear()
        _LAST_CONVERSION["key"] = key
    return _LAST_CONVERSION


def _read(imp, path: str, input_shapes, dims):
    """The source graph as read with the pins (never converted: partial_pipeline feeds the framework's
    sub-models what conversion folded)."""
    cache = _cache_for(path, input_shapes, dims)
    if "read" not in cache:
        cache["read"] = imp.read(path, input_shapes, dims)
    return cache["read"]


def _converted(imp, path: str, input_shapes, dims, feature_level: int, partial: bool):
    cache = _cache_for(path, input_shapes, dims)
    if (feature_level, partial) not in cache:
        cache[feature_level, partial] = (_read(imp, path, input_shapes, dims), imp.convert(
            path, feature_level=feature_level, input_shapes=input_shapes, dims=dims, partial=partial))
    return cache[feature_level, partial]


# the framework that runs a partial model's CPU fallback nodes when --vs names none
DEFAULT_FRAMEWORK = {"tflite": "litert", "onnx": "onnxruntime"}


def _nnapi_stage(p, result, threads: int):
    """One NNAPI partition on the executor: source-framework arrays in, source-framework arrays out."""
    from .running import RunState, compile_model

    from .convert import ConversionResult
    from .running import from_nnapi_outputs
    fake = ConversionResult(result.source, result.feature_level, [], model=p.model, operand_map=p.operand_map,
                            operand_perm=p.operand_perm)
    compiled, state = compile_model(p.model), RunState(nnapi.DEFAULT_LOOP_TIMEOUT_S)
    perms = p.operand_perm or {}
    dtypes = [result.source.main.tensors[t].dtype for t in p.outputs]

    def run(arrays):
        outs = [v.array for v in compiled.run(to_nnapi_inputs(fake, arrays, p.model), state)]
        outs = [np.transpose(y, np.argsort(perms[o])) if o in perms else y for o, y in zip(p.model.outputs, outs)]
        return from_nnapi_outputs(dtypes, outs)
    return run, compiled


def _framework_stage(fmt: str, path: str, data: bytes, result, seg, framework: str, threads: int):
    """A run of CPU fallback nodes cut out as a sub-model (converters.extract) on the framework."""
    from .extract import tflite_submodel
    graph = result.source.main
    if fmt == "tflite":
        it = allocated_litert(tflite_submodel(data, result.source.main_index, seg.nodes, seg.inputs, seg.outputs),
                              framework, threads)
        ins, outs = it.get_input_details(), it.get_output_details()

        def run(arrays):
            for d, x in zip(ins, arrays):
                it.set_tensor(d["index"], x)
            it.invoke()
            return [it.get_tensor(d["index"]) for d in outs]
        return run
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(_onnx_segment(path, graph, seg), opts, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    by_name = {graph.tensors[t].name: k for k, t in enumerate(seg.inputs)}
    return lambda arrays: sess.run(None, {n: arrays[by_name[n]] for n in names})


def _onnx_segment(path: str, graph, seg) -> bytes:
    """The sub-model of an ONNX segment (onnx.utils.Extractor), with the types of its boundary tensors
    declared: the extractor needs a value_info for each, which few models carry."""
    import onnx
    import onnx.utils
    from onnx import helper
    model = onnx.load(path)
    declared = {vi.name for vi in (*model.graph.value_info, *model.graph.input, *model.graph.output)}
    for t in (*seg.inputs, *seg.outputs):
        tt = graph.tensors[t]
        if tt.name not in declared:
            dims = None if tt.shape is None else [d if d >= 0 else None for d in tt.shape]
            model.graph.value_info.append(helper.make_tensor_value_info(
                tt.name, helper.np_dtype_to_tensor_dtype(np.dtype(tt.dtype)), dims))
    return onnx.utils.Extractor(model).extract_model([graph.tensors[t].name for t in seg.inputs],
                                                     [graph.tensors[t].name for t in seg.outputs]).SerializeToString()


def partial_pipeline(path: str, fmt: str, framework: str, threads: int, source, result, clock=time.perf_counter):
    """(run(inputs) -> the model's outputs, spent {"nnapi": [ms...], "framework": [ms...]} per run, the
    compiled partitions, the fallback segments) for a partial conversion of the model `source` was read
    from: the NNAPI partitions on the executor, the runs of CPU fallback nodes on `framework`, in
    execution order."""
    from types import SimpleNamespace

    from .convert import partition
    if fmt == "tflite" and framework not in LITERT_REFERENCES or fmt == "onnx" and framework != "onnxruntime":
        raise ValueError(f"--vs {framework} cannot run a .{fmt} model")
    graph, data = source.main, Path(path).read_bytes()
    segments, _ = partition(graph, [SimpleNamespace(index=r.index, supported=not r.supported) for r in result.nodes])
    stages = [("nnapi", p, *_nnapi_stage(p, result, threads)) for p in result.partitions if p.model is not None]
    stages += [("framework", s, _framework_stage(fmt, path, data, result, s, framework, threads), None)
               for s in segments]
    stages.sort(key=lambda st: st[1].nodes[0])
    spent = {"nnapi": [], "framework": []}
    # `source` is the file as read; the conversion folded some tensors into constants (pinned shapes):
    # the framework's sub-models still compute them or take them as inputs, and get the folded values
    folded = {t.index: t.data for t in result.source.main.tensors
              if t.is_constant and not graph.tensors[t.index].is_constant}

    def run(inputs):
        known = {**folded, **dict(zip(graph.inputs, inputs))}
        took = {"nnapi": 0.0, "framework": 0.0}
        for kind, part, fn, _ in stages:
            t0 = clock()
            known.update(zip(part.outputs, fn([known[t] for t in part.inputs])))
            took[kind] += clock() - t0
        for kind, v in took.items():
            spent[kind].append(v * 1e3)
        return [known[t] for t in graph.model_outputs]
    return run, spent, [st[3] for st in stages if st[3] is not None], segments


def _bench_partial(path, fmt, vs, threads, runs, warmup, source, result, ins, clock) -> dict:
    """A partial model: partial_pipeline (as a TFLite delegate or an onnxruntime execution provider
    would split it) timed end to end against the framework on the whole model. Extra JSON field
    `partial`: partitions, fallback_segments, fallback_nodes, framework, nnapi_ms_median and
    framework_ms_median (the two shares of each run)."""
    from .running import planned_peak_bytes
    framework = vs or DEFAULT_FRAMEWORK[fmt]
    run, spent, compiled, segments = partial_pipeline(path, fmt, framework, threads, source, result, clock)
    ours = timeit_ms(lambda: run(ins), runs, warmup, clock)
    spent = {k: v[warmup:] for k, v in spent.items()}
    from .macs import model_macs
    macs = model_macs(source, [r.supported for r in result.nodes])
    out = {"model": Path(path).name, "inputs": timed_inputs(source.main, ins),
           "ours_ms_median": float(np.median(ours)), "ours_ms_spread": _spread(ours),
           "reference": None, "reference_ms_median": None, "reference_ms_spread": None, "ratio": None,
           "macs": macs, "gflops": _gflops(macs, np.median(spent["nnapi"])),
           "planned_peak_bytes": max(planned_peak_bytes(c) for c in compiled),
           "arena_bytes": sum(c.plan.arena_bytes for c in compiled), "runs": runs, "warmup": warmup,
           "threads": threads, "operations": sum(len(c.model.operations) for c in compiled),
           "partial": {"partitions": len(compiled), "fallback_segments": len(segments),
                       "fallback_nodes": len(result.fallback_nodes), "framework": framework,
                       "nnapi_ms_median": float(np.median(spent["nnapi"])),
                       "framework_ms_median": float(np.median(spent["framework"]))}}
    if vs:
        rt = timeit_ms(_reference_fn(fmt, path, vs, ins, threads), runs, warmup, clock)
        out.update(reference=vs, reference_ms_median=float(np.median(rt)), reference_ms_spread=_spread(rt),
                   ratio=float(np.median(ours) / np.median(rt)))
    out["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return out


def _profile(compiled, nn_ins, runs: int, warmup: int, result, source, clock=time.perf_counter) -> dict:
    """Per-operation medians over profiled runs (separate from the timed runs: timing each step costs a
    little), on the clock the model is timed with."""
    from .running import Profile, RunState
    prof = Profile(compiled, clock)
    state = RunState(nnapi.DEFAULT_LOOP_TIMEOUT_S)
    for _ in range(warmup):
        compiled.run(nn_ins, state)
    state.profile = prof
    for _ in range(runs):
        compiled.run(nn_ins, state)
    model = compiled.model
    node_of = result.operation_nodes if result is not None else []
    node_macs = graph_macs(source.main) if source is not None else []
    charged = set()   # a source node's MACs are charged to the first of its operations that multiplies
    rows = []
    for k, op in enumerate(model.operations):
        ms = float(np.median(prof.seconds.get(k, [0.0]))) * 1e3
        node = node_of[k] if k < len(node_of) else None
        macs = 0
        if node is not None and node not in charged and node_macs and node_macs[node] and op.code.name in _MAC_OPS:
            macs, _ = node_macs[node], charged.add(node)
        label = None
        if node is not None:
            n = source.main.nodes[node]
            label = f"{n.index} {n.op}" + (f" {n.name!r}" if n.name else "")
        rows.append({"operation_index": k, "nnapi_op": op.code.name, "source_node": label,
                     "output_shape": list(model.operands[op.outputs[0]].type.dimensions or []) if op.outputs else [],
                     "ms": ms, "macs": int(macs)})
    total = sum(r["ms"] for r in rows) or 1.0
    rows.sort(key=lambda r: -r["ms"])
    cumulative = 0.0
    for r in rows:
        r["share"] = r["ms"] / total
        cumulative += r["share"]
        r["cumulative_share"] = cumulative
    out = {"profile": rows, "by_op": _by_type(rows), "profile_total_ms": sum(r["ms"] for r in rows)}
    if prof.nested:
        inside = _subgraph_rows(compiled, prof, runs, total)
        out.update(subgraph_profile=inside, subgraph_by_op=_by_type(inside))
    return out


def _subgraph_rows(compiled, prof, runs: int, total_ms: float) -> list[dict]:
    """The operations of the subgraphs IF and WHILE ran, slowest first: per operation its time per
    invocation of the model (the sum over its calls / runs: a WHILE body runs many times), the calls per
    invocation, and its share of the main model's profiled sum (their time is inside their IF/WHILE's)."""
    referenced = list(compiled.model.referenced_models)
    rows = []
    for sub, seconds in prof.nested.values():
        for k, op in enumerate(sub.model.operations):
            times = seconds.get(k, [])
            ms = 1e3 * sum(times) / runs
            rows.append({"subgraph": referenced.index(sub.model) if sub.model in referenced else -1,
                         "operation_index": k, "nnapi_op": op.code.name,
                         "output_shape": list(sub.model.operands[op.outputs[0]].type.dimensions or [])
                         if op.outputs else [],
                         "ms": ms, "calls": len(times) / runs, "share": ms / total_ms})
    return sorted(rows, key=lambda r: -r["ms"])


def _by_type(rows: list[dict]) -> list[dict]:
    """Count, time and share per NNAPI operation type, slowest first."""
    by_op: dict = {}
    for r in rows:
        e = by_op.setdefault(r["nnapi_op"], {"nnapi_op": r["nnapi_op"], "count": 0, "ms": 0.0, "share": 0.0})
        e["count"] += 1
        e["ms"] += r["ms"]
        e["share"] += r["share"]
    return sorted(by_op.values(), key=lambda e: -e["ms"])


# NNAPI operations that do a source node's multiply-accumulates
_MAC_OPS = {"CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D", "TRANSPOSE_CONV_2D", "FULLY_CONNECTED",
            "BATCH_MATMUL", "LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM", "RNN",
            "UNIDIRECTIONAL_SEQUENCE_RNN", "BIDIRECTIONAL_SEQUENCE_RNN", "QUANTIZED_16BIT_LSTM", "QUANTIZED_LSTM",
            "SVDF"}


def _reference_fn(fmt: str, path: str, vs: str, ins, threads: int):
    data = Path(path).read_bytes()
    if fmt == "tflite":
        if vs not in LITERT_REFERENCES:
            raise ValueError(f"--vs {vs} cannot run a .tflite model (use {', '.join(LITERT_REFERENCES)})")
        it = allocated_litert(data, vs, threads)
        for d, x in zip(it.get_input_details(), ins):
            it.set_tensor(d["index"], x)
        return it.invoke
    if vs != "onnxruntime":
        raise ValueError(f"--vs {vs} cannot run an .onnx model (use onnxruntime)")
    try:
        import onnxruntime as ort
    except ImportError:
        raise MissingDependency("onnxruntime", "to time an .onnx model with onnxruntime") from None
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    feeds = {i.name: x for i, x in zip(sess.get_inputs(), ins)}
    return lambda: sess.run(None, feeds)
