"""TensorList writes in WHILE bodies (a TFLite source pass, converters/convert.py SOURCE_PASSES).

TensorFlow lowers `TensorListSetItem(list, i, item)` on a [N, ...] list, as Keras 3's recurrent layers
write their outputs each step, into

    CONCATENATION(SLICE(x, [0, 0, ...], [i, -1, ...]), item, SLICE(x, [i + 1, 0, ...], [-1, -1, ...]), axis 0)

whose result is static ([N, ...]) although both slices' extents depend on the loop counter's value, and
whose begin and size vectors are int32 CONCATENATIONs of i: NNAPI cannot slice to extents known only at
run time. The same value is SELECT_V2(EQUAL(range(N) as [N, 1, ...], i), item, x): row i is the item, every
other row x's; both exact. The pass rewrites the CONCATENATION into that SELECT_V2 and the first SLICE into
the EQUAL (a new constant holds the range), and marks the nodes that only built the slices' vectors and the
second slice as folded (they emit nothing: nothing reads their results any more)."""
from __future__ import annotations

import numpy as np

from ..source_graph import SourceModel, SourceTensor

HOW = "tensor list write as SELECT_V2"


def rewrite_list_writes(source: SourceModel) -> bool:
    """Rewrite every TensorList write of every graph (see the module doc); True when one was."""
    changed = False
    for graph in source.graphs:
        producer = {o: n for n in graph.nodes for o in n.outputs if o >= 0}
        for node in graph.nodes:
            found = _match(graph, producer, node)
            if found is not None:
                _rewrite(graph, node, *found)
                changed = True
    return changed


def _readers(graph, t: int) -> list:
    return [n for n in graph.nodes if t in n.inputs and not n.folded]


def _const(graph, t: int):
    return None if t < 0 or not graph.tensors[t].is_constant else np.asarray(graph.tensors[t].data)


def _index_vector(graph, producer, t: int, rest: int):
    """(the scalar tensor i, the builder nodes) when tensor t is CONCATENATION(RESHAPE(i, [1]), [rest, rest, ...])."""
    cat = producer.get(t)
    if cat is None or cat.op != "CONCATENATION" or len(cat.inputs) != 2 or cat.attrs.get("axis", 0) != 0:
        return None
    tail = _const(graph, cat.inputs[1])
    head = producer.get(cat.inputs[0])
    if tail is None or tail.ndim != 1 or not (tail == rest).all() or head is None or head.op != "RESHAPE":
        return None
    i = head.inputs[0]
    if i < 0 or graph.tensors[i].is_constant or graph.tensors[i].shape not in ((), (1,)):
        return None
    return i, [cat, head]


def _match(graph, producer, node):
    """(x, i, item, first slice, nodes left unused) when node is the CONCATENATION of a TensorList write."""
    if node.op != "CONCATENATION" or node.folded or len(node.inputs) != 3 or node.attrs.get("axis", 0) != 0 \
            or node.attrs.get("fused_activation_function", 0):
        return None
    first, item, second = (producer.get(t) for t in node.inputs)
    if first is None or second is None or first.op != "SLICE" or second.op != "SLICE" \
            or first.inputs[0] != second.inputs[0]:
        return None
    x = first.inputs[0]
    shape = graph.tensors[x].shape
    out = graph.tensors[node.outputs[0]]
    if not shape or any(d <= 0 for d in shape) or out.shape != shape or out.shape_signature not in (None, shape) \
            or graph.tensors[node.inputs[1]].shape != (1,) + tuple(shape[1:]):
        return None
    begin0, size2 = _const(graph, first.inputs[1]), _const(graph, second.inputs[2])
    if begin0 is None or size2 is None or (begin0 != 0).any() or (size2 != -1).any():
        return None
    size0 = _index_vector(graph, producer, first.inputs[2], -1)
    begin2 = _index_vector(graph, producer, second.inputs[1], 0)
    if size0 is None or begin2 is None:
        return None
    i, j = size0[0], begin2[0]
    step = producer.get(j)  # j = i + 1
    if step is None or step.op != "ADD" or step.attrs.get("fused_activation_function", 0) or sorted(
            (t == i, _const(graph, t) is not None and _const(graph, t).size == 1 and int(_const(graph, t).reshape(-1)[0]) == 1)
            for t in step.inputs) != [(False, True), (True, False)]:
        return None
    unused = [second] + size0[1] + begin2[1]
    if any(r is not node for t in (first.outputs[0], second.outputs[0]) for r in _readers(graph, t)):
        return None
    return x, i, node.inputs[1], first, unused


def _rewrite(graph, node, x: int, i: int, item: int, first, unused: list) -> None:
    shape = graph.tensors[x].shape
    rows = SourceTensor(len(graph.tensors), f"{graph.tensors[node.outputs[0]].name}/rows", (shape[0],) + (1,) * (len(shape) - 1),
                        np.dtype(np.int32), data=np.arange(shape[0], dtype=np.int32).reshape((shape[0],) + (1,) * (len(shape) - 1)))
    rows.data.flags.writeable = False
    graph.tensors.append(rows)
    mask = graph.tensors[first.outputs[0]]
    mask.dtype, mask.shape, mask.shape_signature, mask.quant = np.dtype(np.bool_), rows.shape, None, None
    first.op, first.inputs, first.attrs, first.version = "EQUAL", [rows.index, i], {}, 1
    node.op, node.inputs, node.attrs, node.version = "SELECT_V2", [first.outputs[0], item, x], {}, 1
    for n in unused:
        if all(not _readers(graph, o) for o in n.outputs if o >= 0):
            n.folded, n.fold_how = True, HOW
            n.fold_note = f"its result built a slice of a tensor list write, now {node.label()}"
