"""onnxruntime's dynamic quantization in float.

quantize_dynamic writes DynamicQuantizeLinear(x) -> (y, y_scale, y_zero_point) feeding
MatMulInteger / ConvInteger, whose int32 result is cast to float and multiplied by y_scale * w_scale.
The scale and zero point are computed at run time from x's range, and NNAPI's quantization parameters
are constants, so the group is computed in float32 holding the same integers (`plan` retypes y,
y_zero_point and the integer ops' outputs to float32 before any converter sees them):

* DynamicQuantizeLinear follows the ONNX formula as onnxruntime evaluates it: y_scale =
  (max(x, 0) - min(x, 0)) / 255, y_zero_point = round(clamp(-min(x, 0) / y_scale, 0, 255)),
  y = clamp(round(x / y_scale) + y_zero_point, 0, 255), with round(v) = floor(v + 0.5) (NNAPI has no
  round-half-to-even: only an exact tie v = k + 1/2 can come out one step higher than onnxruntime's).
* MatMulInteger / ConvInteger are the float MatMul / Conv of y - y_zero_point by the weights minus their
  zero points: integers, summed exactly in float32 while every partial sum stays below 2^24 (255 * 128
  per product: K up to 514 terms at the worst, far more for real data), then cast to float as onnxruntime does.

So the float form equals onnxruntime's result up to float32 rounding, apart from those ties and partial
sums beyond 2^24 (tests/converters/onnx/test_dynamic_quant.py compares them).
"""
from __future__ import annotations

import numpy as np

INTEGER_OPS = {"MatMulInteger": 2, "ConvInteger": 2}  # op -> input position of x's zero point


def plan(graph) -> None:
    """Retype every DynamicQuantizeLinear whose y and y_zero_point only feed MatMulInteger/ConvInteger
    (as input 0 and its zero point), and those ops' outputs, to the float form above."""
    users: dict = {}
    for n in graph.nodes:
        for k, i in enumerate(n.inputs):
            if i >= 0:
                users.setdefault(i, []).append((n, k))
    outputs = set(graph.outputs)
    for d in graph.nodes:
        if d.op != "DynamicQuantizeLinear" or len(d.outputs) < 3 or min(d.outputs) < 0:
            continue
        y, _, zp = d.outputs
        uses = users.get(y, []) + users.get(zp, [])
        if (y in outputs or zp in outputs or not uses
                or any(n.op not in INTEGER_OPS or (k, i) not in ((0, y), (INTEGER_OPS[n.op], zp))
                       for n, k in uses for i in [n.inputs[k]])):
            continue
        graph.tensors[y].dtype = graph.tensors[zp].dtype = np.dtype(np.float32)
        for n, k in uses:
            if k == 0:
                _retype(graph, n.outputs[0], users)


def _retype(graph, t: int, users: dict) -> None:
    """Integer result t held in float32, and so the int32 bias additions after it (older onnxruntime
    versions add an int32 bias before the Cast to float: a constant, or floor(bias / scale) cast to int32
    at run time, possibly reshaped): the bias is held in float32 too, exact below 2^24 as every float32
    integer (a run-time Cast to int32 of floored values becomes the identity)."""
    graph.tensors[t].dtype = np.dtype(np.float32)
    producer = {o: p for p in graph.nodes for o in p.outputs if o >= 0}
    for n, _ in users.get(t, []):
        if n.op not in ("Add", "Sub") or len(n.inputs) != 2 or len(n.outputs) != 1:
            continue
        chain = [graph.tensors[n.inputs[1] if n.inputs[0] == t else n.inputs[0]]]
        src = producer.get(chain[-1].index)
        while src is not None and src.op in ("Reshape", "Unsqueeze") and src.inputs[0] >= 0:
            chain.append(graph.tensors[src.inputs[0]])
            src = producer.get(chain[-1].index)
        end = chain[-1]
        if any(u.op not in ("Add", "Sub", "Reshape", "Unsqueeze") for c in chain for u, _ in users.get(c.index, [])):
            continue
        if end.is_constant:
            if np.asarray(end.data).dtype != np.int32 or np.abs(np.asarray(end.data, np.int64)).max(initial=0) >= 2 ** 24:
                continue
            end.data = np.asarray(end.data, np.float32)
            end.data.flags.writeable = False
        elif not (src is not None and src.op == "Cast" and producer.get(src.inputs[0]) is not None
                  and producer[src.inputs[0]].op in ("Floor", "Round", "Ceil")
                  and np.dtype(graph.tensors[src.inputs[0]].dtype) == np.float32):
            continue
        for c in chain:
            c.dtype = np.dtype(np.float32)
        _retype(graph, n.outputs[0], users)
