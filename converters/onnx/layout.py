"""The one place that decides NCHW -> NHWC: which layout each tensor's NNAPI
operand has.

NNAPI's spatial operations (CONV_2D, pools, RESIZE, DEPTH_TO_SPACE, ...) take
NHWC before feature level 3, and every device supports NHWC, so the ONNX
importer runs the network in NHWC and never uses the NCHW layout flag:

* A *layout* is a permutation `perm` with operand = np.transpose(source, perm);
  None is the ONNX layout. 4-D tensors produced by a SPATIAL op are NHWC
  (perm (0, 2, 3, 1)).
* Elementwise, broadcasting and axis ops (FOLLOW / BROADCAST / REDUCE) keep the
  layout of their activation input, so a chain Conv -> BN -> Relu -> Add ->
  Concat -> pool needs no TRANSPOSE; their axis attributes are remapped with
  `axis_in` and constant operands are transposed at conversion.
* 1-D spatial ops (LIFTS_1D) on rank-3 [N, C, L] tensors are the 2-D op with
  H = 1: their tensors are NLC ([N, L, C], perm (0, 2, 1)), which RESHAPEs to
  and from NHWC [N, 1, L, C] without moving data.
* Every other op (Reshape, Flatten, Gemm, MatMul, Transpose, Gather, unknown
  ops) sees the ONNX layout: the context inserts one TRANSPOSE when its input
  is NHWC (a RESHAPE or nothing when the permutation only moves size-1 axes,
  e.g. after a global pool).
* Boundaries keep the ONNX layout: a graph input is NCHW and the first
  spatial op's input gets one TRANSPOSE; an NHWC graph output gets one
  TRANSPOSE back. TRANSPOSE needs feature level 2, so at feature level 1 the
  4-D inputs read by spatial ops and the NHWC outputs stay NHWC instead; the
  conversion result reports that in io_rewrites and operand_perm.

Every operand created for an NHWC tensor is recorded in ctx.operand_perm so
parity tools can undo the permutation.
"""
from __future__ import annotations

from typing import Optional

from nnapi import OperationCode as Op
from nnapi.ops import level_for

NHWC = (0, 2, 3, 1)
NLC = (0, 2, 1)      # rank-3 [N, C, L] operands of 1-D spatial ops: channels last, so [N, 1, L, C] is a RESHAPE

# spatial ops whose converters also take rank-3 (1-D) inputs, as the 2-D op with H = 1 (OnnxContext.lifted)
LIFTS_1D = {"Conv", "QLinearConv", "AveragePool", "MaxPool", "GlobalAveragePool", "GlobalMaxPool",
            "QLinearAveragePool"}
# spatial ops that compute a rank-3 tensor in either layout: they keep their input's
FOLLOW_1D = {"InstanceNormalization"}

# ops whose NNAPI form needs NHWC 4-D activations (input 0 and output 0)
SPATIAL = {"Conv", "ConvTranspose", "AveragePool", "MaxPool", "GlobalAveragePool", "GlobalMaxPool",
           "DepthToSpace", "SpaceToDepth", "Resize", "LRN", "QLinearConv", "QLinearAveragePool",
           "QLinearGlobalAveragePool", "InstanceNormalization", "ConvInteger"}
# one activation input; the output has its layout (per-channel constants are transposed)
FOLLOW = {"Relu", "Clip", "Sigmoid", "Tanh", "Floor", "Abs", "Exp", "Log", "Neg", "Sin", "Sqrt", "Elu",
          "LeakyRelu", "Identity", "Dropout", "Cast", "QuantizeLinear", "DequantizeLinear", "QLinearSigmoid",
          "QLinearLeakyRelu", "DynamicQuantizeLinear",
          "BatchNormalization", "Split", "Slice", "Pad", "Softmax", "LogSoftmax", "CumSum",
          # elementwise compositions (ops/activation_composed.py, ops/erf.py, ops/compare.py)
          "HardSigmoid", "HardSwish", "Gelu", "Erf", "Mish", "Softplus", "Softsign", "Selu", "Celu",
          "ThresholdedRelu", "Reciprocal", "Ceil", "Sign", "Round", "Not", "IsNaN", "IsInf"}
# several activation inputs of one rank, broadcast or joined: all take one layout
BROADCAST = {"Add", "Sub", "Mul", "Div", "Pow", "PRelu", "Min", "Max", "Sum", "Mean", "QLinearAdd",
             "QLinearMul", "Concat", "QLinearConcat", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor",
             "Mod", "Where"}
# reductions: keepdims=0 drops axes from the layout
REDUCE = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"}
# which input of an op is the activation whose layout counts (default 0)
ACTIVATION_INPUTS = {"QuantizeLinear": (0,), "DequantizeLinear": (0,), "QLinearAdd": (0, 3),
                     "QLinearMul": (0, 3)}


def is_identity(perm) -> bool:
    return perm is None or tuple(perm) == tuple(range(len(perm)))


def inverse(perm) -> tuple:
    inv = [0] * len(perm)
    for k, p in enumerate(perm):
        inv[p] = k
    return tuple(inv)


def compose(have, want, rank: int) -> tuple:
    """The TRANSPOSE perm turning an operand in layout `have` into layout `want`."""
    have = tuple(range(rank)) if have is None else tuple(have)
    want = tuple(range(rank)) if want is None else tuple(want)
    inv = inverse(have)
    return tuple(inv[w] for w in want)


def moves_only_unit_axes(perm, shape) -> bool:
    """True when transposing by perm keeps the row-major order of the data (only size-1 axes move)."""
    if perm is None:
        return True
    kept = [p for p in perm if shape[p] != 1]
    return kept == sorted(kept)


def axis_in(perm, axis: int, rank: int) -> int:
    """The operand axis that holds source axis `axis` (negative axes allowed)."""
    a = axis % rank if rank else 0
    return a if perm is None else tuple(perm).index(a)


def permute_shape(perm, shape):
    return tuple(shape) if perm is None or shape is None else tuple(shape[p] for p in perm)


def reduced(perm, axes, rank: int, keepdims: bool):
    """Layout of a reduction's output: the same perm, or with the reduced axes dropped."""
    if perm is None or keepdims:
        return perm
    drop = {a % rank for a in axes} if axes else set(range(rank))
    rest = [p for p in perm if p not in drop]
    ranks = {p: k for k, p in enumerate(sorted(rest))}
    out = tuple(ranks[p] for p in rest)
    return None if is_identity(out) else out


def _rank(graph, i) -> Optional[int]:
    return graph.tensors[i].rank if i >= 0 else None


def spatial_perm(op: str, rank: Optional[int]) -> Optional[tuple]:
    """The layout a spatial op computes in for an input of this rank (None: the ONNX layout)."""
    if rank == 4:
        return NHWC
    return NLC if rank == 3 and op in LIFTS_1D else None


def plan(graph, feature_level: int, keeps: Optional[dict] = None) -> dict:
    """tensor index -> perm for every tensor whose operand is not in the ONNX layout; `keeps` maps output
    tensors that take the layout of another tensor (a channel shuffle's output, its source's)."""
    keeps = keeps or {}
    perms: dict = {}
    consumers: dict = {}
    for node in graph.nodes:
        for i in node.inputs:
            consumers.setdefault(i, []).append(node)
    if feature_level < level_for(Op.TRANSPOSE):  # no TRANSPOSE: 4-D inputs that feed a spatial op arrive NHWC
        for i in graph.inputs:
            spatial = [spatial_perm(n.op, _rank(graph, i)) for n in consumers.get(i, [])
                       if n.op in SPATIAL and n.inputs[0] == i]
            if any(spatial):
                perms[i] = next(p for p in spatial if p)
    for node in graph.nodes:
        outs = [o for o in node.outputs if o >= 0]
        if not node.inputs or node.inputs[0] < 0:  # malformed: its converter reports it
            continue
        if outs and outs[0] in keeps:
            perm = perms.get(keeps[outs[0]])
        elif node.op in FOLLOW_1D and _rank(graph, node.inputs[0]) == 3:
            perm = perms.get(node.inputs[0])
        elif node.op in SPATIAL:
            perm = spatial_perm(node.op, _rank(graph, node.inputs[0]))
        elif node.op in FOLLOW or node.op in REDUCE:
            src = node.inputs[ACTIVATION_INPUTS.get(node.op, (0,))[0]]
            perm = perms.get(src)
            if node.op in ("Softmax", "LogSoftmax") and perm is not None and node.version < 13:
                # coerce-to-2D semantics: the flattened trailing axes may come in any order, the leading not
                axis = node.attrs.get("axis", 1) % len(perm)
                perm = perm if axis == len(perm) - 1 or tuple(perm[:axis]) == tuple(range(axis)) else None
            if node.op in REDUCE and perm is not None:
                axes = node.attrs.get("axes")
                if axes is None and len(node.inputs) > 1 and node.inputs[1] >= 0 \
                        and graph.tensors[node.inputs[1]].is_constant:
                    axes = graph.tensors[node.inputs[1]].data.tolist()
                perm = reduced(perm, axes, len(perm), bool(node.attrs.get("keepdims", 1)))
        elif node.op in BROADCAST:
            idx = ACTIVATION_INPUTS.get(node.op, range(len(node.inputs)))
            rank = max(((_rank(graph, node.inputs[k]) or 0) for k in idx
                        if k < len(node.inputs) and node.inputs[k] >= 0), default=0)
            perm = next((perms[node.inputs[k]] for k in idx if k < len(node.inputs) and node.inputs[k] in perms
                         and _rank(graph, node.inputs[k]) == rank), None)
        else:
            perm = None
        if perm is not None and not node.folded:
            for o in outs:
                # NNAPI cannot TRANSPOSE bool tensors: a bool graph output stays in the ONNX layout
                if o in graph.outputs and graph.tensors[o].dtype == bool:
                    continue
                if _rank(graph, o) == len(perm) and not graph.tensors[o].is_constant:
                    perms[o] = perm
    return perms
