"""Run source models with their own frameworks (LiteRT, onnxruntime), every tensor kept on request.
The converted NNAPI model runs through running.py."""
from __future__ import annotations

import os
import re
import sys
import tempfile
import warnings
from contextlib import contextmanager
from typing import Sequence

import numpy as np


from .dependencies import MissingDependency  # noqa: F401 (re-exported: the callers' historical import)


LITERT_REFERENCES = ("litert", "litert-ref", "litert-xnnpack")


class ReferenceFailed(Exception):
    """The reference framework refused or failed to run the source model (its message included)."""


@contextmanager
def litert_quiet():
    """LiteRT's C++ runtime prints "INFO: Created TensorFlow Lite XNNPACK delegate for CPU." on file
    descriptor 2 when it applies XNNPACK (at the first allocation), and honours no environment variable for it
    (TF_CPP_MIN_LOG_LEVEL and TFLITE_LOG_SEVERITY leave it on, ai-edge-litert 2.x): meanwhile fd 2 goes to a
    temporary file, and all but those INFO lines is passed on to standard error."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:   # no fd 2 to redirect
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            kept = [line for line in tmp.read().decode(errors="replace").splitlines(keepends=True)
                    if not line.startswith("INFO: ")]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()


def litert_interpreter(model_bytes: bytes, reference: str = "litert", threads: int = 1,
                       preserve_all_tensors: bool = False):
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        raise MissingDependency("ai_edge_litert", "to run a .tflite model with LiteRT") from None
    # litert: built-in kernels, XNNPACK off; litert-ref: reference kernels; litert-xnnpack: LiteRT's
    # default CPU path (XNNPACK applied), the only one that runs MediaPipe's Convolution2DTransposeBias
    resolver = {"litert-ref": OpResolverType.BUILTIN_REF, "litert-xnnpack": OpResolverType.AUTO}.get(
        reference, OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    data = bytes(model_bytes)
    while True:
        try:
            with warnings.catch_warnings(), litert_quiet():
                warnings.simplefilter("ignore", UserWarning)  # preserving tensors under XNNPACK is for debugging
                return Interpreter(model_content=data, experimental_op_resolver_type=resolver,
                                   num_threads=threads, experimental_preserve_all_tensors=preserve_all_tensors)
        except (ValueError, RuntimeError) as e:
            first = str(e).strip().splitlines()[0][:300]
            older = _older_version(data, first) if reference == "litert-ref" else None
            if older is None:
                raise ReferenceFailed(f"LiteRT could not load the model: {first}") from None
            data = older


# LiteRT's refusal of an operator version its resolver has no kernel registered for
_UNREGISTERED_VERSION = re.compile(r"Didn't find op for builtin opcode '(\w+)' version '(\d+)'")


def _older_version(data: bytes, message: str):
    """The model with builtin OP's operator code lowered from version N to N - 1, when `message` says the
    resolver registers no OP version N; else None. LiteRT's reference resolver registers fewer versions
    than its built-in one (DEPTH_TO_SPACE: version 1 only, although its reference kernel computes the
    int8 that version 2 declares): a file that LiteRT's default kernels run loads on the reference ones
    with the version they register."""
    found = _UNREGISTERED_VERSION.search(message)
    if not found or int(found.group(2)) <= 1:
        return None
    from ai_edge_litert import schema_py_generated as schema

    from .extract import tflite_object_model, tflite_pack
    code, version = getattr(schema.BuiltinOperator, found.group(1), None), int(found.group(2))
    model, tail = tflite_object_model(data)
    lowered = False
    for oc in model.operatorCodes or []:
        if max(oc.builtinCode, oc.deprecatedBuiltinCode) == code and oc.version == version:
            oc.version, lowered = version - 1, True
    return tflite_pack(model, tail) if lowered else None


def allocated_litert(model_bytes: bytes, reference: str = "litert", threads: int = 1):
    """litert_interpreter() with its tensors allocated: ReferenceFailed when LiteRT cannot prepare the model
    (an operator it does not have, such as a custom operator without a registration)."""
    it = litert_interpreter(model_bytes, reference, threads)
    try:
        with litert_quiet():
            it.allocate_tensors()
    except (ValueError, RuntimeError) as e:
        raise ReferenceFailed(f"LiteRT ({reference}) cannot run the model: "
                              f"{str(e).strip().splitlines()[0][:300].rstrip('.')}") from None
    return it


def _invoke(it, inputs: Sequence[np.ndarray], allocate: bool = True) -> list[np.ndarray]:
    """Run LiteRT interpreter `it` on `inputs` (inputs resized to their shapes); copies of its outputs.
    `allocate=False` invokes an interpreter allocated before as it is (its variables kept)."""
    details = it.get_input_details()
    try:
        if allocate:
            for d, x in zip(details, inputs):
                if tuple(d["shape"]) != tuple(np.shape(x)):
                    it.resize_tensor_input(d["index"], list(np.shape(x)))
            with litert_quiet():
                it.allocate_tensors()
        for d, x in zip(details, inputs):
            it.set_tensor(d["index"], np.asarray(x, dtype=d["dtype"]))
        it.invoke()
    except (ValueError, RuntimeError) as e:
        raise ReferenceFailed(f"LiteRT could not run the model: {str(e).strip().splitlines()[0][:300]}") from None
    return [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def run_litert(model_bytes: bytes, inputs: Sequence[np.ndarray], reference: str = "litert") -> list[np.ndarray]:
    return _invoke(litert_interpreter(model_bytes, reference), inputs)


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
        raise MissingDependency("onnxruntime", "to run an .onnx model with onnxruntime") from None
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
