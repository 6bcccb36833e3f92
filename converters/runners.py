"""Run source models with their own frameworks (LiteRT, onnxruntime) and NNAPI
models with the executor, on the same inputs."""
from __future__ import annotations

import math
import warnings
from typing import Optional, Sequence

import numpy as np

from .context import int8_from_stored, stored


class MissingDependency(Exception):
    """A reference runtime is not installed; the message has the pip command."""


LITERT_REFERENCES = ("litert", "litert-ref", "litert-xnnpack")


class ReferenceFailed(Exception):
    """The reference framework refused or failed to run the source model (its message included)."""


# the largest input tensor random_source_inputs will allocate (a model declaring more is refused, not run)
MAX_INPUT_BYTES = 1 << 31


def litert_interpreter(model_bytes: bytes, reference: str = "litert", threads: int = 1,
                       preserve_all_tensors: bool = False):
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        raise MissingDependency("LiteRT is not installed: pip install ai-edge-litert") from None
    # litert: built-in kernels, XNNPACK off; litert-ref: reference kernels; litert-xnnpack: LiteRT's
    # default CPU path (XNNPACK applied), the only one that runs MediaPipe's Convolution2DTransposeBias
    resolver = {"litert-ref": OpResolverType.BUILTIN_REF, "litert-xnnpack": OpResolverType.AUTO}.get(
        reference, OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    try:
        with warnings.catch_warnings():  # LiteRT warns that preserving tensors under XNNPACK is for debugging
            warnings.simplefilter("ignore", UserWarning)
            return Interpreter(model_content=bytes(model_bytes), experimental_op_resolver_type=resolver,
                               num_threads=threads, experimental_preserve_all_tensors=preserve_all_tensors)
    except (ValueError, RuntimeError) as e:
        raise ReferenceFailed(f"LiteRT could not load the model: {str(e).strip().splitlines()[0][:300]}") from None


def _invoke(it, inputs: Sequence[np.ndarray], allocate: bool = True) -> list[np.ndarray]:
    """Run LiteRT interpreter `it` on `inputs` (inputs resized to their shapes); copies of its outputs.
    `allocate=False` invokes an interpreter allocated before as it is (its variables kept)."""
    details = it.get_input_details()
    try:
        if allocate:
            for d, x in zip(details, inputs):
                if tuple(d["shape"]) != tuple(np.shape(x)):
                    it.resize_tensor_input(d["index"], list(np.shape(x)))
            it.allocate_tensors()
        for d, x in zip(details, inputs):
            it.set_tensor(d["index"], np.asarray(x, dtype=d["dtype"]))
        it.invoke()
    except (ValueError, RuntimeError) as e:
        raise ReferenceFailed(f"LiteRT could not run the model: {str(e).strip().splitlines()[0][:300]}") from None
    return [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def run_litert(model_bytes: bytes, inputs: Sequence[np.ndarray], reference: str = "litert") -> list[np.ndarray]:
    return _invoke(litert_interpreter(model_bytes, reference), inputs)


def to_nnapi_inputs(result, inputs: Sequence[np.ndarray], model=None, state: Optional[dict] = None) \
        -> list[np.ndarray]:
    """Apply the boundary conversions the converter documented (int8 -> uint8 below level 4). For a model
    with state (nnapi/state.py), `inputs` are the source model's and the state inputs come from `state`
    ({input position: value}, as nnapi.state.carry gives it), by default their initial values."""
    from nnapi.state import full_inputs, initial_values, non_state_inputs
    model = model or result.model
    with_state = bool(model.state) and len(inputs) < len(model.inputs)
    operands = [model.inputs[k] for k in non_state_inputs(model)] if with_state else model.inputs
    perms = getattr(result, "operand_perm", {}) or {}
    out = []
    for k, x in zip(operands, inputs):
        t = model.operands[k].type
        x = np.asarray(x)
        if k in perms:
            x = np.ascontiguousarray(np.transpose(x, perms[k]))  # the importer changed this input's layout
        x = stored(t.code, x)
        if x.ndim == 0 and t.is_tensor:
            x = x.reshape(1)  # rank-0 source tensors are [1] in NNAPI (see ConversionContext.shape)
        elif t.is_tensor and t.dimensions and all(t.dimensions) and x.shape != tuple(t.dimensions) and \
                x.size == int(np.prod(t.dimensions)):
            x = x.reshape(t.dimensions)  # a partition input whose unit axes were dropped (squeeze_pass.py);
            # (dimensions () is an unknown rank, never rank 0: such an input keeps the shape it comes with)
        out.append(x.astype(t.dtype) if x.dtype != t.dtype else x)
    return full_inputs(model, out, initial_values(model) if state is None else state) if with_state else out


def from_nnapi_outputs(source_dtypes: Sequence, outputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Undo the uint8 rewrite of int8 outputs, and the int32 form of int64 indices, so they compare
    with the source framework's."""
    res = []
    for dt, y in zip(source_dtypes, outputs):
        if np.dtype(dt) == np.int8 and y.dtype == np.uint8:
            y = int8_from_stored(y)
        elif np.dtype(dt) == np.int64 and y.dtype == np.int32:
            y = y.astype(np.int64)  # int64 -> int32 at conversion (ConversionContext.bind_output): every index fits
        res.append(y)
    return res


def run_converted(result, inputs: Sequence[np.ndarray], model=None) -> list[np.ndarray]:
    """Run the converted NNAPI model on source-framework inputs; outputs in the source's types."""
    from .cli import run_model
    model = model or result.model
    graph = result.source.main
    outs = run_model(model, to_nnapi_inputs(result, inputs, model))
    perms = getattr(result, "operand_perm", {}) or {}
    outs = [np.transpose(y, np.argsort(perms[o])) if o in perms else y for o, y in zip(model.outputs, outs)]
    dtypes = [graph.tensors[result.operand_map[o][0]].dtype for o in model.outputs]
    return from_nnapi_outputs(dtypes, outs)


def random_source_inputs(graph, seed: int = 0, input_shapes: Optional[dict] = None) -> list[np.ndarray]:
    """Seeded inputs for a source graph: the quantized range for quantized inputs, [0, 1) for floats."""
    rng = np.random.default_rng(seed)
    arrays = []
    for i in graph.inputs:
        t = graph.tensors[i]
        shape = tuple((input_shapes or {}).get(t.name, [max(d, 1) for d in (t.shape or ())]))
        dt = np.dtype(t.dtype)
        if math.prod(shape) * dt.itemsize > MAX_INPUT_BYTES:
            raise ValueError(f"input {t.name!r} of shape {list(shape)} would need more than "
                             f"{MAX_INPUT_BYTES >> 30} GiB; pass smaller inputs (--inputs or --input-shape)")
        qrange = (np.iinfo(dt).min, np.iinfo(dt).max) if dt.kind in "iu" and t.quant is not None else None
        arrays.append(random_array(rng, shape, dt, qrange))
    return arrays


def random_array(rng, shape, dtype, qrange: Optional[tuple] = None) -> np.ndarray:
    """One input in its natural range: the whole stored range (lo, hi) of a quantized type, [0, 1)
    for floats, 0/1 for bools, small non-negative integers (0..3) otherwise."""
    dtype = np.dtype(dtype)
    if qrange is not None:
        return rng.integers(qrange[0], qrange[1] + 1, size=shape).astype(dtype)
    if dtype.kind == "f":
        return rng.random(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.integers(0, 4, size=shape).astype(dtype)


def run_traced(model, inputs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], dict]:
    """Run with the executor keeping every intermediate: (outputs, {operand index: array}) of the main model."""
    import nnapi
    from executor.runtime import RunState, compile_model
    compiled = compile_model(model)
    trace: dict = {}
    outs = compiled.run(list(inputs), RunState(nnapi.DEFAULT_LOOP_TIMEOUT_S, trace))
    main = {o: v.array for (mid, o), v in trace.items() if mid == id(model)}
    for i, x in zip(model.inputs, inputs):
        main[i] = x
    return [None if v is None else v.array for v in outs], main


# tensors holding handles (resource variables, hash tables, TensorList variants): LiteRT's get_tensor
# crashes the process on them, and they hold no values to compare
_HANDLE_TYPES = ("RESOURCE", "VARIANT")


def litert_all_tensors(model_bytes: bytes, inputs: Sequence[np.ndarray], reference: str = "litert",
                       graph=None) -> tuple[list[np.ndarray], dict]:
    """LiteRT outputs and every tensor of the main subgraph (preserve_all_tensors): {tensor index: array}."""
    return litert_steps(model_bytes, [inputs], reference, graph)[0]


def litert_steps(model_bytes: bytes, steps: Sequence[Sequence[np.ndarray]], reference: str = "litert",
                 graph=None) -> list[tuple[list[np.ndarray], dict]]:
    """`litert_all_tensors` for consecutive invocations of one interpreter on the inputs of each step, its
    resource variables carried from one to the next: per step (outputs, {tensor index: array})."""
    it = litert_interpreter(model_bytes, reference, preserve_all_tensors=True)
    return [_all_tensors(it, _invoke(it, inputs, allocate=k == 0), graph, reference)
            for k, inputs in enumerate(steps)]


def _all_tensors(it, outs: list, graph, reference: str) -> tuple[list[np.ndarray], dict]:
    tensors = {}
    if graph is not None:
        indexes = [t.index for t in graph.tensors if getattr(t, "tflite_type", None) not in _HANDLE_TYPES]
    else:
        indexes = [d["index"] for d in it.get_tensor_details() if d["dtype"] != np.object_]
    if reference == "litert-xnnpack":
        written = set(_xnnpack_written(it, max(indexes, default=-1) + 1))
        indexes = [i for i in indexes if i in written]
    for i in indexes:
        try:
            tensors[i] = it.get_tensor(i).copy()
        except ValueError:
            continue  # tensors without data (e.g. optional or freed)
    return outs, tensors


def _xnnpack_written(it, count: int) -> list:
    """The tensors XNNPACK leaves defined: the model's inputs and outputs and the inputs and outputs of
    its DELEGATE kernels (a tensor computed inside a delegated partition is never written)."""
    keep = {int(d["index"]) for d in (*it.get_input_details(), *it.get_output_details())}
    for op in it._get_ops_details():  # noqa: SLF001 (LiteRT's only listing of the delegate kernels)
        if op["op_name"] == "DELEGATE":
            keep.update(int(t) for t in (*op["inputs"], *op["outputs"]))
    return sorted(t for t in keep if 0 <= t < count)


def run_onnxruntime(model, inputs: Sequence[np.ndarray], graph=None,
                    extra_outputs: Sequence[str] = (), threads: int = 1,
                    optimized: bool = False) -> tuple[list[np.ndarray], dict]:
    """onnxruntime CPU outputs, plus named intermediate tensors exposed as extra graph outputs
    ({tensor index: array} when `graph` is given); with every graph optimisation when `optimized`
    (the `onnxruntime-optimized` reference), else with none (`onnxruntime`: each node as written). `model` is the model's bytes or its path (a path
    lets onnxruntime find external data beside the model). Raises ReferenceFailed when onnxruntime
    refuses the model or fails to run it."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise MissingDependency("onnxruntime is not installed: pip install onnxruntime") from None
    is_path = not isinstance(model, (bytes, bytearray, memoryview))
    data = str(model) if is_path else bytes(model)
    try:
        if extra_outputs:
            import onnx
            m = onnx.load(data) if is_path else onnx.load_from_string(data)  # external data loaded too
            have = {o.name for o in m.graph.output}
            for name in extra_outputs:
                if name and name not in have:
                    m.graph.output.append(onnx.ValueInfoProto(name=name))
                    have.add(name)
            data = m.SerializeToString()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimized
                                         else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
        feeds = {i.name: x for i, x in zip(sess.get_inputs(), inputs)}
        names = [o.name for o in sess.get_outputs()]
        by_name = dict(zip(names, sess.run(names, feeds)))
    except MissingDependency:
        raise
    except Exception as e:  # onnxruntime raises its own exception types for every kind of refusal
        raise ReferenceFailed(f"onnxruntime could not run the model: {str(e).strip().splitlines()[0][:300]}") \
            from None
    n_main = len(names) - (len(names) - len(graph.outputs) if graph is not None and extra_outputs else 0)
    tensors = {}
    if graph is not None:
        index = {t.name: t.index for t in graph.tensors}
        tensors = {index[n]: v for n, v in by_name.items() if n in index}
    return [by_name[n] for n in names[:n_main]], tensors
