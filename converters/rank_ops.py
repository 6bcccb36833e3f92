"""How each source operation relates the axes of its tensors, for the rank pass (converters/squeeze_pass.py).

`describe(graph, node, fmt)` gives an `Axes`: each data tensor's axes as *slots* of the node (two axes in one
slot are the same axis to the node: an elementwise op's right-aligned axes, a transpose's moved axis), the
slots the node acts on along (a concatenation's axis, a cut of a slice, a reduced axis: these stay whole),
and how to rewrite the node's attributes once its tensors hold fewer axes. Reshape-like nodes are `free`:
they only keep the row-major order, so each side may be regrouped on its own. None: the node is not one of
these kinds, and every tensor it touches keeps its shape.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .shuffle import transpose_perm

ONNX_UNARY = {"Relu", "Sigmoid", "Tanh", "Abs", "Exp", "Log", "Neg", "Sqrt", "Elu", "LeakyRelu", "Identity",
              "Dropout", "Cast", "Floor", "Ceil", "Sin", "Cos", "Reciprocal", "HardSigmoid", "HardSwish", "Softplus",
              "Softsign", "Selu", "Celu", "Clip", "Not", "Sign", "Round", "Erf", "Gelu", "ThresholdedRelu", "Mish",
              "IsNaN", "IsInf", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh"}
ONNX_BROADCAST = {"Add", "Sub", "Mul", "Div", "Pow", "Min", "Max", "Sum", "Mean", "Equal", "Less", "Greater",
                  "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Mod", "PRelu", "Where", "BitShift"}
ONNX_RESHAPE = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}
ONNX_QDQ = {"QuantizeLinear", "DequantizeLinear"}
ONNX_SOFTMAX = {"Softmax", "LogSoftmax", "Hardmax"}
ONNX_REDUCE = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
               "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}
ONNX_ARG = {"ArgMax", "ArgMin"}

TFLITE_UNARY = {"RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "LOGISTIC", "TANH", "ABS", "EXP", "LOG", "NEG",
                "SQRT", "RSQRT", "ELU", "LEAKY_RELU", "HARD_SWISH", "CAST", "FLOOR", "CEIL", "SIN", "COS", "SQUARE",
                "GELU", "LOGICAL_NOT", "SIGN", "ROUND", "QUANTIZE", "DEQUANTIZE"}
TFLITE_BROADCAST = {"ADD", "SUB", "MUL", "DIV", "POW", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "FLOOR_DIV",
                    "FLOOR_MOD", "EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL",
                    "LOGICAL_AND", "LOGICAL_OR", "SELECT", "SELECT_V2", "PRELU"}
TFLITE_REDUCE = {"MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY", "REDUCE_ALL"}


@dataclass
class Axes:
    slots: dict                      # data tensor -> the node's slot of each of its axes
    pinned: frozenset = frozenset()  # slots the node acts along: never dropped or merged
    free: bool = False               # reshape-like: only the row-major order counts
    rewrite: Optional[Callable] = None   # rewrite(plan): the node's attributes for its tensors' new axes
    frame: int = -1                  # the data tensor holding every slot (an output): constants follow it
    consts: list = field(default_factory=list)  # input positions of constant data inputs to regroup


def _rank(graph, t: int) -> Optional[int]:
    return graph.tensors[t].rank if t >= 0 else None


def _const(graph, t: int) -> bool:
    return t >= 0 and graph.tensors[t].is_constant


def _input(node, k: int) -> int:
    return node.inputs[k] if len(node.inputs) > k else -1


def _ints(graph, t: int) -> Optional[list]:
    if t < 0 or not graph.tensors[t].is_constant:
        return None
    return [int(v) for v in np.asarray(graph.tensors[t].data).ravel()]


def _same(tensors, rank: int) -> dict:
    return {t: tuple(range(rank)) for t in tensors}


def _aligned(graph, node, inputs) -> Optional[Axes]:
    """Elementwise with right-aligned broadcasting: the output holds every slot."""
    y = node.outputs[0]
    rank = _rank(graph, y)
    if rank is None or any(_rank(graph, i) is None or _rank(graph, i) > rank for i in inputs):
        return None
    slots = {y: tuple(range(rank))}
    consts = []
    for k, i in enumerate(node.inputs):
        if i not in inputs:
            continue
        if _const(graph, i):
            q = graph.tensors[i].quant
            if q is not None and q.per_channel:
                return None
            consts.append(k)
        else:
            slots[i] = tuple(range(rank - _rank(graph, i), rank))
    return Axes(slots, frame=y, consts=consts)


def _unary(graph, node) -> Optional[Axes]:
    x = node.inputs[0] if node.inputs else -1
    r = _rank(graph, x)
    if r is None or _const(graph, x):
        return None
    outs = [o for o in node.outputs if o >= 0 and _rank(graph, o) == r]
    return Axes(_same([x] + outs, r), frame=node.outputs[0])


def _transpose(graph, node, fmt: str) -> Optional[Axes]:
    x, y = node.inputs[0], node.outputs[0]
    perm = transpose_perm(graph, node, fmt)
    r = _rank(graph, x)
    if perm is None or r is None or _const(graph, x) or sorted(p % r for p in perm) != list(range(r)):
        return None
    perm = [p % r for p in perm]

    def rewrite(plan):
        new = [plan.axis(x, perm[plan.first_axis(y, j)]) for j in range(plan.rank(y))]
        if fmt == "onnx":
            node.attrs["perm"] = new
        else:
            node.inputs[1] = plan.const(node.inputs[1], np.asarray(new, np.int32))
    return Axes({x: tuple(range(r)), y: tuple(perm)}, rewrite=rewrite, frame=y)


def _along(graph, node, data, frame: int, axes: list, set_axes: Callable) -> Optional[Axes]:
    """Same-rank tensors and a node acting along `axes` (normalised here) of the frame tensor."""
    r = _rank(graph, frame)
    if r is None or any(_rank(graph, t) != r for t in data) or any(not -r <= a < r for a in axes):
        return None
    axes = [a % r for a in axes]
    consts = [k for k, i in enumerate(node.inputs) if i in data and _const(graph, i)]
    slots = _same([t for t in data if not _const(graph, t)], r)

    def rewrite(plan):
        set_axes(plan, [plan.axis(frame, a) for a in axes])
    return Axes(slots, frozenset(axes), rewrite=rewrite, frame=frame, consts=consts)


def _reduce(graph, node, x: int, axes: Optional[list], keep: bool, set_axes: Callable) -> Optional[Axes]:
    """A reduction over axes of x: the reduced slots are pinned; without keep they leave the output."""
    y = node.outputs[0]
    r = _rank(graph, x)
    if r is None or _const(graph, x) or not axes or any(not -r <= a < r for a in axes):
        return None
    axes = sorted({a % r for a in axes})
    out_slots = tuple(range(r)) if keep else tuple(a for a in range(r) if a not in axes)
    if _rank(graph, y) != len(out_slots):
        return None

    def rewrite(plan):
        set_axes(plan, [plan.axis(x, a) for a in axes])
    return Axes({x: tuple(range(r)), y: out_slots}, frozenset(axes), rewrite=rewrite, frame=x)


def _matmul(graph, node, adj_x: bool = False, adj_y: bool = False) -> Optional[Axes]:
    """A batched matrix product: right-aligned broadcast batch axes; the rows, columns and the contracted axis
    (an extra slot) are pinned. A constant operand must be a plain matrix (it has no batch axes to regroup)."""
    a, b, y = node.inputs[0], _input(node, 1), node.outputs[0]
    ry = _rank(graph, y)
    if b < 0 or ry is None or any((_rank(graph, t) or 0) < 2 or _rank(graph, t) > ry for t in (a, b)):
        return None
    k = ry  # the contracted axis: in both inputs, not in the output
    rows, cols = ry - 2, ry - 1
    slots = {y: tuple(range(ry))}
    for t, last2 in ((a, (k, rows) if adj_x else (rows, k)), (b, (cols, k) if adj_y else (k, cols))):
        r = _rank(graph, t)
        if _const(graph, t):
            if r > 2:
                return None
            continue
        slots[t] = tuple(range(ry - r, ry - 2)) + last2
    return Axes(slots, frozenset({rows, cols, k}), frame=y)


def _pick(graph, node, x: int, idx: int, axis: int, set_axis: Callable, set_index: Callable) -> Optional[Axes]:
    """A gather of constant indices along `axis` of x (attention's q, k, v = qkv[0], qkv[1], qkv[2]; a mask
    indexed by a [1, 1, 1, n] position table): the axis is pinned, the output holds x's other axes around the
    index axes, which no other tensor holds (unit ones drop: the index constant is reshaped to match)."""
    y = node.outputs[0]
    r = _rank(graph, x)
    if r is None or _const(graph, x) or not _const(graph, idx) or not -r <= axis < r:
        return None
    axis %= r
    q = np.asarray(graph.tensors[idx].data).ndim
    out = tuple(range(axis)) + tuple(range(r, r + q)) + tuple(range(axis + 1, r))
    if _rank(graph, y) != len(out):
        return None

    def rewrite(plan):
        set_axis(plan, [plan.axis(x, axis)])
        runs = [axes for _, axes in plan.runs(y) if axis <= axes[0] < axis + q]
        dims = graph.tensors[y].shape
        set_index(plan, [int(np.prod([dims[a] for a in axes])) for axes in runs])
    return Axes({x: tuple(range(r)), y: out}, frozenset({axis}), rewrite=rewrite, frame=x)


def _reshape_input(node, k: int) -> Callable:
    """set(plan, dims): a new constant for input k holding its data in that shape (a scalar for [])."""
    def put(plan, dims):
        data = np.asarray(plan.graph.tensors[node.inputs[k]].data)
        if tuple(dims) != data.shape:
            node.inputs[k] = plan.new_const(plan.graph.tensors[node.inputs[k]].name, data.reshape(dims))
    return put


def _full_cut(begin: int, end: int, step: int, n: int) -> bool:
    """Does begin:end:step keep the whole axis of extent n (n unknown: no)?"""
    return n > 0 and step == 1 and slice(begin, end, 1).indices(n) == (0, n, 1)


def _set_attr(node, key: str, scalar: bool = False) -> Callable:
    """set(plan, new axes): the node's axis attribute (one axis when scalar)."""
    def put(plan, values):
        node.attrs[key] = values[0] if scalar else values
    return put


def _set_input(node, k: int) -> Callable:
    """set(plan, new axes): a new constant for the node's axes input k, in its dtype."""
    def put(plan, values):
        node.inputs[k] = plan.const(node.inputs[k], np.asarray(values, plan.dtype(node.inputs[k])))
    return put


# -- ONNX ---------------------------------------------------------------------------------------------------

def _onnx_slice(graph, node) -> Optional[Axes]:
    x, y = node.inputs[0], node.outputs[0]
    r, shape = _rank(graph, x), graph.tensors[x].shape
    if r is None or _const(graph, x):
        return None
    if node.version < 10:
        starts, ends = node.attrs.get("starts"), node.attrs.get("ends")
        axes, steps = node.attrs.get("axes", list(range(len(starts or ())))), [1] * len(starts or ())
    else:
        get = lambda k: _ints(graph, _input(node, k)) if _input(node, k) >= 0 else ()  # noqa: E731
        starts, ends, axes, steps = get(1), get(2), get(3), get(4)
        axes = axes if axes != () else list(range(len(starts or ())))
        steps = steps if steps != () else [1] * len(starts or ())
    if any(v is None for v in (starts, ends, axes, steps)) or not len(starts) == len(ends) == len(axes) == len(steps):
        return None
    if any(not -r <= a < r for a in axes):
        return None
    cuts = [(a % r, s, e, st) for a, s, e, st in zip(axes, starts, ends, steps)
            if not _full_cut(s, e, st, shape[a % r])]

    def rewrite(plan):
        new_axes = [plan.axis(x, a) for a, *_ in cuts]
        columns = [[c[k] for c in cuts] for k in (1, 2, 3)]
        if node.version < 10:
            node.attrs.update(starts=columns[0], ends=columns[1], axes=new_axes)
            return
        inputs = list(node.inputs[:1])
        for values in (columns[0], columns[1], new_axes, columns[2]):
            inputs.append(plan.new_const(graph.tensors[x].name, np.asarray(values, np.int64)))
        node.inputs[:] = inputs
    return Axes(_same([x, y], r), frozenset(a for a, *_ in cuts), rewrite=rewrite, frame=x)


def _onnx_reduce(graph, node) -> Optional[Axes]:
    x = node.inputs[0]
    keep = bool(node.attrs.get("keepdims", 1))
    if node.op in ONNX_ARG:
        return _reduce(graph, node, x, [int(node.attrs.get("axis", 0))], keep, _set_attr(node, "axis", True))
    if _input(node, 1) >= 0:  # axes as an input (ReduceSum 13, the others 18)
        return _reduce(graph, node, x, _ints(graph, node.inputs[1]), keep, _set_input(node, 1))
    return _reduce(graph, node, x, node.attrs.get("axes"), keep, _set_attr(node, "axes"))


def _onnx_softmax(graph, node) -> Optional[Axes]:
    x, y = node.inputs[0], node.outputs[0]
    r = _rank(graph, x)
    if r is None:
        return None
    axis = int(node.attrs.get("axis", -1 if node.version >= 13 else 1))
    if not -r <= axis < r:
        return None
    # before opset 13 the op works on the 2-D [prod(:axis), prod(axis:)] view: the tail stays as it is
    axes = [axis % r] if node.version >= 13 else list(range(axis % r, r))
    put = _set_attr(node, "axis", True)
    return _along(graph, node, [x, y], y, axes, lambda plan, new: put(plan, new[:1]))


def _onnx_qdq(graph, node) -> Optional[Axes]:
    scale = _input(node, 1)
    if scale < 0 or not _const(graph, scale):
        return None
    if graph.tensors[scale].data.size == 1:
        return _unary(graph, node)
    x, y = node.inputs[0], node.outputs[0]
    return _along(graph, node, [x, y], y, [int(node.attrs.get("axis", 1))], _set_attr(node, "axis", True))


def _onnx_reshape(graph, node) -> Optional[Axes]:
    x, y = node.inputs[0], node.outputs[0]
    if _rank(graph, x) is None or _rank(graph, y) is None or _const(graph, x):
        return None

    def rewrite(plan):
        if node.op == "Reshape" and _const(graph, _input(node, 1)):
            node.inputs[1] = plan.const(node.inputs[1], np.asarray(plan.shape(y), np.int64))
    return Axes({x: (), y: ()}, free=True, rewrite=rewrite)


def _onnx(graph, node) -> Optional[Axes]:
    op = node.op
    if op in ONNX_QDQ:
        return _onnx_qdq(graph, node)
    if op == "Concat":
        data = [i for i in node.inputs if i >= 0]
        return _along(graph, node, data + [node.outputs[0]], node.outputs[0], [int(node.attrs.get("axis", 0))],
                      _set_attr(node, "axis", True))
    if op == "Split":
        x = node.inputs[0]
        return _along(graph, node, [x] + [o for o in node.outputs if o >= 0], x, [int(node.attrs.get("axis", 0))],
                      _set_attr(node, "axis", True))
    if op == "Slice":
        return _onnx_slice(graph, node)
    if op in ONNX_SOFTMAX:
        return _onnx_softmax(graph, node)
    if op in ONNX_REDUCE or op in ONNX_ARG:
        return _onnx_reduce(graph, node)
    if op == "MatMul":
        return _matmul(graph, node)
    if op == "Gather":
        return _pick(graph, node, node.inputs[0], _input(node, 1), int(node.attrs.get("axis", 0)),
                     _set_attr(node, "axis", True), _reshape_input(node, 1))
    return None


# -- TFLite -------------------------------------------------------------------------------------------------

def _tflite_reshape(graph, node) -> Optional[Axes]:
    x, y = node.inputs[0], node.outputs[0]
    if _rank(graph, x) is None or _rank(graph, y) is None or _const(graph, x):
        return None
    if _input(node, 1) >= 0 and not _const(graph, node.inputs[1]):
        return None

    def rewrite(plan):
        target = list(plan.shape(y))
        if _input(node, 1) >= 0:
            node.inputs[1] = plan.const(node.inputs[1], np.asarray(target, np.int32))
        if node.attrs.get("new_shape"):
            node.attrs["new_shape"] = target
    return Axes({x: (), y: ()}, free=True, rewrite=rewrite)


def _tflite_slice(graph, node) -> Optional[Axes]:
    """SLICE (begin, size) and STRIDED_SLICE (begin, end, strides) without ellipsis, new or shrunk axes."""
    x, y = node.inputs[0], node.outputs[0]
    r = _rank(graph, x)
    if r is None or _const(graph, x) or len(node.inputs) < 3:
        return None
    shape = graph.tensors[x].shape
    strided = node.op == "STRIDED_SLICE"
    cols = [_ints(graph, i) for i in node.inputs[1:4 if strided else 3]]
    if any(c is None or len(c) != r for c in cols):
        return None
    a = node.attrs
    special = ("ellipsis_mask", "new_axis_mask", "shrink_axis_mask", "offset")
    if strided and (len(cols) < 3 or any(a.get(m) for m in special)):
        return None
    bit = lambda mask, k: bool(a.get(mask, 0) >> k & 1)  # noqa: E731
    cuts = []
    for k in range(r):
        if strided:
            b = 0 if bit("begin_mask", k) else cols[0][k]
            e = shape[k] if bit("end_mask", k) else cols[1][k]
            full = _full_cut(b, e, cols[2][k], shape[k])
        else:
            full = cols[0][k] == 0 and cols[1][k] in (-1, shape[k]) and shape[k] > 0
        if not full:
            cuts.append(k)

    def rewrite(plan):
        n = plan.rank(x)
        new = {plan.axis(x, k): k for k in cuts}
        if strided:
            begin = [cols[0][new[j]] if j in new else 0 for j in range(n)]
            end = [cols[1][new[j]] if j in new else 0 for j in range(n)]
            strides = [cols[2][new[j]] if j in new else 1 for j in range(n)]
            masks = {m: sum(1 << j for j in range(n) if (bit(m, new[j]) if j in new else True))
                     for m in ("begin_mask", "end_mask")}
            node.attrs.update(masks)
            values = (begin, end, strides)
        else:
            values = ([cols[0][new[j]] if j in new else 0 for j in range(n)],
                      [cols[1][new[j]] if j in new else -1 for j in range(n)])
        for k, v in enumerate(values):
            node.inputs[1 + k] = plan.const(node.inputs[1 + k], np.asarray(v, plan.dtype(node.inputs[1 + k])))
    return Axes(_same([x, y], r), frozenset(cuts), rewrite=rewrite, frame=x)


def _tflite(graph, node) -> Optional[Axes]:
    op = node.op
    if op == "CONCATENATION":
        data = [i for i in node.inputs if i >= 0]
        return _along(graph, node, data + [node.outputs[0]], node.outputs[0], [int(node.attrs.get("axis", 0))],
                      _set_attr(node, "axis", True))
    if op in ("SOFTMAX", "LOG_SOFTMAX"):
        return _along(graph, node, [node.inputs[0], node.outputs[0]], node.outputs[0], [-1], lambda plan, new: None)
    if op in ("SPLIT", "SPLIT_V"):
        x, k = (node.inputs[1], 0) if op == "SPLIT" else (node.inputs[0], 2)
        axis = _ints(graph, _input(node, k))
        if axis is None or len(axis) != 1:
            return None
        return _along(graph, node, [x] + [o for o in node.outputs if o >= 0], x, axis, _set_input(node, k))
    if op in ("SLICE", "STRIDED_SLICE"):
        return _tflite_slice(graph, node)
    if op in TFLITE_REDUCE:
        keep = bool(node.attrs.get("keep_dims", False))
        return _reduce(graph, node, node.inputs[0], _ints(graph, _input(node, 1)), keep, _set_input(node, 1))
    if op in ("ARG_MAX", "ARG_MIN"):
        axis = _ints(graph, _input(node, 1))
        return _reduce(graph, node, node.inputs[0], axis, False, _set_input(node, 1))
    if op == "BATCH_MATMUL":
        return _matmul(graph, node, bool(node.attrs.get("adj_x")), bool(node.attrs.get("adj_y")))
    if op == "GATHER" and not node.attrs.get("batch_dims", 0):
        return _pick(graph, node, node.inputs[0], _input(node, 1), int(node.attrs.get("axis", 0)),
                     _set_attr(node, "axis", True), _reshape_input(node, 1))
    return None


# per format: reshape-like ops, transposes, elementwise ops of one input, broadcasting ops, the rest
FAMILIES = {
    "onnx": (ONNX_RESHAPE, {"Transpose"}, ONNX_UNARY, ONNX_BROADCAST, _onnx, _onnx_reshape),
    "tflite": ({"RESHAPE"}, {"TRANSPOSE"}, TFLITE_UNARY, TFLITE_BROADCAST, _tflite, _tflite_reshape),
}


def describe(graph, node, fmt: str) -> Optional[Axes]:
    if fmt not in FAMILIES or node.domain not in ("", "ai.onnx") or node.subgraphs:
        return None
    if not node.outputs or node.outputs[0] < 0 or not node.inputs or node.inputs[0] < 0:
        return None
    reshapes, transposes, unary, broadcast, rest, reshape = FAMILIES[fmt]
    if node.op in reshapes:
        return reshape(graph, node)
    if node.op in transposes:
        return _transpose(graph, node, fmt)
    if node.op in unary:
        return _unary(graph, node)
    if node.op in broadcast:
        data = [i for i in node.inputs if i >= 0]
        if node.op == "SELECT" and any(_rank(graph, i) != _rank(graph, node.outputs[0]) for i in data):
            return None  # TFLite SELECT's rank-1 condition picks along the first axis, not right-aligned
        return _aligned(graph, node, data)
    return rest(graph, node)
