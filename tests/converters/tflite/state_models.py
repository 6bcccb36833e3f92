"""Small TFLite models with resource variables, hash tables and control flow, authored with
LiteRT's schema object API: the operators whose signatures have no inputs or no outputs
(CALL_ONCE, VAR_HANDLE, ASSIGN_VARIABLE, HASHTABLE, HASHTABLE_IMPORT) and stateful graphs."""
from __future__ import annotations

import numpy as np

from converters.tflite.authoring import GraphBuilder


def _init_subgraph(g: GraphBuilder, initial: dict) -> int:
    """A CALL_ONCE initialisation subgraph assigning each variable (shared name -> array) its value."""
    init = g.subgraph("init")
    for name, value in initial.items():
        h = init.tensor(f"{name}_init_handle", [], "RESOURCE")
        init.op("VAR_HANDLE", [], [h], "VarHandleOptions", shared_name=name)
        v = init.const(f"{name}_init_value", value)
        init.op("ASSIGN_VARIABLE", [h, v], [], "AssignVariableOptions")
    return init.index


def accumulator(shape=(1, 4), dtype=np.float32, initial=None, reads_after_assign=False, dynamic=False) -> bytes:
    """y = state + x; state := y  (a running sum). With `reads_after_assign`, a second
    READ_VARIABLE after the assignment feeds a second output z = 2 * state (the new value).
    `dynamic`: the tensors' shape signatures leave the first dimension dynamic."""
    sig = dict(shape_signature=[-1, *shape[1:]]) if dynamic else {}
    g = GraphBuilder()
    initial = np.full(shape, 0.5, dtype) if initial is None else initial
    init = _init_subgraph(g, {"acc": initial})
    g.op("CALL_ONCE", [], [], "CallOnceOptions", init_subgraph_index=init)
    x = g.input("x", list(shape), "FLOAT32")
    h = g.tensor("acc_handle", [], "RESOURCE")
    g.op("VAR_HANDLE", [], [h], "VarHandleOptions", shared_name="acc")
    s = g.tensor("acc_value", list(shape), "FLOAT32", **sig)
    g.op("READ_VARIABLE", [h], [s], "ReadVariableOptions")
    y = g.tensor("y", list(shape), "FLOAT32", **sig)
    g.op("ADD", [s, x], [y], "AddOptions")
    g.op("ASSIGN_VARIABLE", [h, y], [], "AssignVariableOptions")
    g.output(y)
    if reads_after_assign:
        s2 = g.tensor("acc_value_after", list(shape), "FLOAT32")
        g.op("READ_VARIABLE", [h], [s2], "ReadVariableOptions")
        z = g.tensor("z", list(shape), "FLOAT32")
        g.op("ADD", [s2, s2], [z], "AddOptions")
        g.output(z)
    return g.finish()


def int8_stream(frames=3, width=4, keep=2) -> bytes:
    """A microWakeWord-style int8 streaming buffer: concat(state, x) along axis 1, the last
    `keep` frames become the new state, and the concatenation is the output."""
    g = GraphBuilder()
    q = dict(scale=0.05, zero_point=-3)
    init = _init_subgraph(g, {"buf": np.full((1, keep, width), -3, np.int8)})
    g.op("CALL_ONCE", [], [], "CallOnceOptions", init_subgraph_index=init)
    x = g.input("x", [1, frames, width], "INT8", **q)
    h = g.tensor("buf_handle", [], "RESOURCE")
    g.op("VAR_HANDLE", [], [h], "VarHandleOptions", shared_name="buf")
    s = g.tensor("buf_value", [1, keep, width], "INT8", **q)
    g.op("READ_VARIABLE", [h], [s], "ReadVariableOptions")
    c = g.tensor("joined", [1, keep + frames, width], "INT8", **q)
    g.op("CONCATENATION", [s, x], [c], "ConcatenationOptions", axis=1)
    begin = g.const("begin", np.array([0, frames, 0], np.int32))
    end = g.const("end", np.array([1, keep + frames, width], np.int32))
    strides = g.const("strides", np.array([1, 1, 1], np.int32))
    tail = g.tensor("tail", [1, keep, width], "INT8", **q)
    g.op("STRIDED_SLICE", [c, begin, end, strides], [tail], "StridedSliceOptions")
    g.op("ASSIGN_VARIABLE", [h, tail], [], "AssignVariableOptions")
    g.output(c)
    return g.finish()


def _strings(values) -> np.ndarray:
    """TFLite's string tensor buffer: int32 count, count + 1 int32 offsets, then the bytes."""
    data = [v.encode() for v in values]
    header = 4 * (len(data) + 2)
    offsets = np.cumsum([header] + [len(d) for d in data]).astype(np.int32)
    return np.frombuffer(np.int32(len(data)).tobytes() + offsets.tobytes() + b"".join(data), np.uint8)


def hashtable_lookup() -> bytes:
    """HASHTABLE (no inputs), HASHTABLE_IMPORT (no outputs), HASHTABLE_FIND: int64 keys -> string values."""
    g = GraphBuilder()
    x = g.input("keys", [3], "INT64")
    h = g.tensor("table", [], "RESOURCE")
    g.op("HASHTABLE", [], [h], "HashtableOptions", table_id=1, key_dtype=4, value_dtype=5)
    keys = g.const("import_keys", np.array([1, 2, 3], np.int64))
    values = g.tensor("import_values", [3], "STRING", data=_strings(["one", "two", "three"]))
    g.op("HASHTABLE_IMPORT", [h, keys, values], [], "HashtableImportOptions")
    default = g.tensor("default", [], "STRING", data=_strings(["?"]))
    y = g.tensor("values", [3], "STRING")
    g.op("HASHTABLE_FIND", [h, x, default], [y], "HashtableFindOptions")
    g.output(y)
    return g.finish()


def variable_uses(pattern: str, initialised: bool = True) -> bytes:
    """One float variable 'v' [2] used by `pattern`, a sequence of R (y = v + x; a READ then an ADD),
    A (v := the latest y, or x before any read) and C (v := a constant); the last y is the output."""
    g = GraphBuilder()
    if initialised:
        init = _init_subgraph(g, {"v": np.array([0.25, -1.5], np.float32)})
        g.op("CALL_ONCE", [], [], "CallOnceOptions", init_subgraph_index=init)
    x = g.input("x", [2], "FLOAT32")
    h = g.tensor("v_handle", [], "RESOURCE")
    g.op("VAR_HANDLE", [], [h], "VarHandleOptions", shared_name="v")
    latest = None
    for k, step in enumerate(pattern):
        if step == "R":
            s = g.tensor(f"v_read{k}", [2], "FLOAT32")
            g.op("READ_VARIABLE", [h], [s], "ReadVariableOptions")
            latest = g.tensor(f"y{k}", [2], "FLOAT32")
            g.op("ADD", [s, x], [latest], "AddOptions")
        elif step == "A":
            value = latest
            if value is None:
                value = g.tensor(f"x2_{k}", [2], "FLOAT32")
                g.op("MUL", [x, g.const(f"two{k}", np.array([2.0], np.float32))], [value], "MulOptions")
            g.op("ASSIGN_VARIABLE", [h, value], [], "AssignVariableOptions")
        else:
            g.op("ASSIGN_VARIABLE", [h, g.const(f"c{k}", np.array([7.0, 8.0], np.float32))], [],
                 "AssignVariableOptions")
    g.output(latest)
    return g.finish()


def sum_with_init(make_initial, assign: str = "y") -> bytes:
    """y = v + x, then v := y (or v := x with assign="x"); v [2] starts from the tensor that
    `make_initial(init_builder)` adds to the CALL_ONCE subgraph."""
    g = GraphBuilder()
    init = g.subgraph("init")
    hi = init.tensor("h", [], "RESOURCE")
    init.op("VAR_HANDLE", [], [hi], "VarHandleOptions", shared_name="v")
    init.op("ASSIGN_VARIABLE", [hi, make_initial(init)], [], "AssignVariableOptions")
    g.op("CALL_ONCE", [], [], "CallOnceOptions", init_subgraph_index=init.index)
    x = g.input("x", [2])
    h = g.tensor("h", [], "RESOURCE")
    g.op("VAR_HANDLE", [], [h], "VarHandleOptions", shared_name="v")
    s = g.tensor("s", [2])
    g.op("READ_VARIABLE", [h], [s], "ReadVariableOptions")
    y = g.tensor("y", [2])
    g.op("ADD", [s, x], [y], "AddOptions")
    g.op("ASSIGN_VARIABLE", [h, y if assign == "y" else x], [], "AssignVariableOptions")
    g.output(y)
    return g.finish()
