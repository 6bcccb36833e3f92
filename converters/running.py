"""Running a converted NNAPI model with the executor: the one place converters reach the executor.

Seeded inputs in each input's natural range (`random_inputs` for an NNAPI model, `random_source_inputs`
for a source graph), the boundary conversions the converter documented (`to_nnapi_inputs`,
`from_nnapi_outputs`), a run through nnapi.Execution that grows its output buffers when a shape is only
known at run time (`run_model`), a run that keeps every intermediate (`run_traced`), and the compiled
form bench and parity time or run in float64 (`compile_model`, `RunState`, `Profile`)."""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

import nnapi
from executor.planner import planned_peak_bytes  # noqa: F401  (bench reports the plan's peak)
from executor.runtime import Profile, RunState, compile_model  # noqa: F401  (the compiled form for bench, parity)
from nnapi.operand import QUANT_RANGE

from .context import int8_from_stored, stored

# the largest model input or output `run_model` / `random_inputs` allocate (a corrupted shape, not a real model)
MAX_RUN_TENSOR_BYTES = 1 << 31
# the largest input tensor random_source_inputs will allocate (a model declaring more is refused, not run)
MAX_INPUT_BYTES = 1 << 31


class RunError(ValueError):
    """The model cannot be run as asked: an input of unknown dimensions, a tensor too large to allocate
    (an invalid model or input, exit 3 on the command line)."""


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


def random_inputs(model, seed: int = 0) -> list[np.ndarray]:
    """Seeded inputs for an NNAPI model within each input's natural range (quantized range for quantized types)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for i in model.inputs:
        t = model.operands[i].type
        dims = tuple(t.dimensions) if t.is_tensor else ()
        if t.is_tensor and (not dims or 0 in dims):
            raise RunError(f"input operand {i} ({model.operands[i].name or 'unnamed'}) has unknown dimensions "
                           f"{list(dims)}; pass --inputs with concrete arrays")
        check_run_size(t, f"input operand {i} ({model.operands[i].name or 'unnamed'})")
        arrays.append(random_array(rng, dims, t.dtype, QUANT_RANGE.get(t.code)))
    return arrays


def random_source_inputs(graph, seed: int = 0, input_shapes: Optional[dict] = None) -> list[np.ndarray]:
    """Seeded inputs for a source graph: the quantized range for quantized inputs, [0, 1) for floats."""
    rng = np.random.default_rng(seed)
    arrays = []
    for i in graph.inputs:
        t = graph.tensors[i]
        shape = tuple((input_shapes or {}).get(t.name, [max(d, 1) for d in (t.shape or ())]))
        dt = np.dtype(t.dtype)
        if math.prod(shape) * dt.itemsize > MAX_INPUT_BYTES:
            raise RunError(f"input {t.name!r} of shape {list(shape)} would need more than "
                           f"{MAX_INPUT_BYTES >> 30} GiB; pass smaller inputs (--inputs or --input-shape)")
        qrange = (np.iinfo(dt).min, np.iinfo(dt).max) if dt.kind in "iu" and t.quant is not None else None
        arrays.append(random_array(rng, shape, dt, qrange))
    return arrays


def check_run_size(otype, what: str) -> None:
    nbytes = otype.byte_size()
    if nbytes is not None and nbytes > MAX_RUN_TENSOR_BYTES:
        raise RunError(f"{what} {otype.describe()} needs {nbytes} bytes, more than `nnapi run` allocates "
                       f"({MAX_RUN_TENSOR_BYTES})")


def run_model(model, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Compile and run `model` once through nnapi.Execution; returns the output arrays."""
    comp = nnapi.Compilation(model)
    comp.finish()
    needed = [0] * len(model.outputs)  # elements a run found it needs (shapes known only at run time)
    while True:
        ex = nnapi.Execution(comp)
        for k, arr in enumerate(inputs):
            ex.set_input(k, arr)
        outs = []
        for k, o in enumerate(model.outputs):
            t = model.operands[o].type
            check_run_size(t, f"output operand {o} ({model.operands[o].name or 'unnamed'})")
            size = max(t.element_count() or 0, needed[k])
            if size * t.dtype.itemsize > MAX_RUN_TENSOR_BYTES:
                raise RunError(f"output operand {o} ({model.operands[o].name or 'unnamed'}) needs {size} elements, "
                               f"more than `nnapi run` allocates ({MAX_RUN_TENSOR_BYTES} bytes)")
            buf = np.zeros(max(size, 1 << 16), dtype=t.dtype)  # room for dynamic shapes
            outs.append(buf)
            ex.set_output(k, buf)
        try:
            ex.compute()
            break
        except nnapi.NnapiError as e:
            if e.code != nnapi.ResultCode.OUTPUT_INSUFFICIENT_SIZE:
                raise
            grown = False
            for k in range(len(outs)):
                try:
                    n = int(np.prod(ex.get_output_operand_dimensions(k)))
                except nnapi.NnapiError:
                    continue
                if n > outs[k].size:
                    needed[k], grown = n, True
            if not grown:
                raise
    result = []
    for k, buf in enumerate(outs):
        dims = ex.get_output_operand_dimensions(k)
        n = int(np.prod(dims)) if dims else 1
        result.append(buf[:n].reshape(dims))
    return result


def run_traced(model, inputs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], dict]:
    """Run with the executor keeping every intermediate: (outputs, {operand index: array}) of the main model."""
    compiled = compile_model(model)
    trace: dict = {}
    outs = compiled.run(list(inputs), RunState(nnapi.DEFAULT_LOOP_TIMEOUT_S, trace))
    main = {o: v.array for (mid, o), v in trace.items() if mid == id(model)}
    for i, x in zip(model.inputs, inputs):
        main[i] = x
    return [None if v is None else v.array for v in outs], main


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
    model = model or result.model
    graph = result.source.main
    outs = run_model(model, to_nnapi_inputs(result, inputs, model))
    perms = getattr(result, "operand_perm", {}) or {}
    outs = [np.transpose(y, np.argsort(perms[o])) if o in perms else y for o, y in zip(model.outputs, outs)]
    dtypes = [graph.tensors[result.operand_map[o][0]].dtype for o in model.outputs]
    return from_nnapi_outputs(dtypes, outs)


def npz_output_keys(names: list) -> list[str]:
    """One distinct .npz key per model output, in output order: the output's name (`output{k}` when it has
    none), NUL characters replaced by `_` (a zip entry name ends at a NUL). An output whose key an earlier
    output already took gets the first of `_1`, `_2`, ... appended that is neither taken nor another
    output's own key, so every output is written and a real name is never shadowed."""
    base = [(n or f"output{k}").replace("\x00", "_") for k, n in enumerate(names)]
    reserved, taken, keys = set(base), set(), []
    for b in base:
        key, i = b, 0
        while key in taken or (i and key in reserved):
            i += 1
            key = f"{b}_{i}"
        taken.add(key)
        keys.append(key)
    return keys


def npz_bytes(keys: list[str], arrays: list[np.ndarray]) -> bytes:
    """An uncompressed .npz like np.savez's, written entry by entry: np.savez(**arrays) cannot take a key
    named `file` (its own parameter)."""
    import io
    import zipfile
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for key, arr in zip(keys, arrays):
            with zf.open(key + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asarray(arr), allow_pickle=False)
    return buf.getvalue()
