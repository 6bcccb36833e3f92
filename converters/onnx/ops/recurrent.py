"""LSTM, GRU and RNN.

An LSTM or RNN whose attributes NNAPI's sequence ops express (for an LSTM: gate activation Sigmoid and one
activation among Tanh, Relu and Sigmoid for the cell input and the output; for an RNN one of those; no
clip, no input_forget, every sequence at full length) becomes UNIDIRECTIONAL_SEQUENCE_LSTM / _RNN or
BIDIRECTIONAL_SEQUENCE_LSTM / _RNN (feature level 3; Y_h and Y_c need level 4). Every other LSTM and RNN,
and every GRU (NNAPI has none), is unrolled over the time steps (unrolled.py): one FULLY_CONNECTED
projects the whole input sequence, then each step is the ONNX formulas written in NNAPI operations.

ONNX stacks the LSTM gates as (input, output, forget, cell), GRU as (update, reset, hidden); W is
[directions, gates * hidden, input], R [directions, gates * hidden, hidden], B the W biases then the R
biases; layout 1 puts the batch first in X, Y, Y_h and Y_c.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op
from nnapi.ops import SPECS

from ...registry import Reason, Unsupported
from ...tflite.ops.recurrent_common import omitted, tensor_used
from ..common import OPSET_MAX, onnx_op
from ...pins import pin_hint

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
DEFAULT_ACTIVATIONS = {"LSTM": ("Sigmoid", "Tanh", "Tanh"), "GRU": ("Sigmoid", "Tanh"), "RNN": ("Tanh",)}
# activation -> (alpha count, beta count, default alpha, default beta): the values each consumes, in order,
# from activation_alpha / activation_beta (onnxruntime's reading of the spec). None: no default both the spec
# (the operator's own default: ThresholdedRelu 1, Affine 1 and 0) and onnxruntime (0) agree on; refused.
ACTIVATION_ARGS = {
    "relu": (0, 0, 0.0, 0.0), "tanh": (0, 0, 0.0, 0.0), "sigmoid": (0, 0, 0.0, 0.0),
    "affine": (1, 1, None, None), "leakyrelu": (1, 0, 0.01, 0.0), "thresholdedrelu": (1, 0, None, 0.0),
    "scaledtanh": (1, 1, None, None), "hardsigmoid": (1, 1, 0.2, 0.5), "elu": (1, 0, 1.0, 0.0),
    "softsign": (0, 0, 0.0, 0.0), "softplus": (0, 0, 0.0, 0.0),
}
# activations NNAPI's sequence LSTMs apply to the cell input and the output, and its RNNs to the state
SEQUENCE_ACTIVATIONS = {"tanh": 4, "relu": 1, "sigmoid": 6}
DTYPES = {np.dtype(np.float32): C.TENSOR_FLOAT32, np.dtype(np.float16): C.TENSOR_FLOAT16}

# NNAPI's sequence ops give their final states as outputs from this level
_STATE_OUTPUTS_LEVEL = SPECS[Op.UNIDIRECTIONAL_SEQUENCE_LSTM].argument_level("output_state_out")


@dataclass
class Activation:
    name: str      # lower case
    alpha: float
    beta: float


@dataclass
class Recurrent:
    """What an LSTM / GRU / RNN node computes, read and checked once."""

    node: object
    x: int
    dtype: np.dtype
    code: C
    hidden: int
    directions: list       # "forward" / "reverse", in ONNX's direction order
    layout: int
    seq: int               # 0 when unknown
    batch: int             # 0 when unknown
    input_size: int
    w: np.ndarray          # [directions, gates * hidden, input]
    r: np.ndarray          # [directions, gates * hidden, hidden]
    b: np.ndarray          # [directions, 2 * gates * hidden]
    peepholes: object      # [directions, 3 * hidden] (LSTM) or None
    initial: dict          # "h" / "c" -> tensor index or -1
    activations: list      # per direction, the op's activations
    clip: float            # 0: none
    input_forget: bool
    linear_before_reset: bool
    outputs: dict          # "Y" / "Y_h" / "Y_c" -> tensor index of a used output
    split_states: dict = field(default_factory=dict)   # "h" / "c" -> per-direction pieces of a run-time state
    constants: dict = field(default_factory=dict)      # (shape, value) -> operand, shared by every step


def _input(node, k: int) -> int:
    return node.inputs[k] if k < len(node.inputs) else -1


def _activations(node, count: int, n_dir: int) -> list:
    """Per direction, `count` Activations from the activations / activation_alpha / activation_beta attributes."""
    names = node.attrs.get("activations")
    if names is None:
        names = list(DEFAULT_ACTIVATIONS[node.op]) * n_dir
    names = [str(n) for n in names]
    if len(names) != count * n_dir:
        raise Unsupported(Reason.INVALID, f"{node.label()}: {len(names)} activations for {n_dir} direction(s), "
                                          f"{node.op} takes {count} per direction")
    alphas, betas = list(node.attrs.get("activation_alpha", [])), list(node.attrs.get("activation_beta", []))
    found = []
    for name in names:
        key = name.lower()
        if key not in ACTIVATION_ARGS:
            raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: activation {name!r} is not an ONNX recurrent "
                                                f"activation")
        n_alpha, n_beta, alpha, beta = ACTIVATION_ARGS[key]
        if n_alpha and alphas:
            alpha = float(alphas.pop(0))
        if n_beta and betas:
            beta = float(betas.pop(0))
        if alpha is None or beta is None:
            raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: activation {name!r} without its "
                                                f"{'alpha' if alpha is None else 'beta'}: the ONNX spec and "
                                                f"onnxruntime give it different defaults")
        found.append(Activation(key, alpha, beta))
    return [found[d * count:(d + 1) * count] for d in range(n_dir)]


def read(node, ctx) -> Recurrent:
    op, gates = node.op, GATES[node.op]
    x = node.inputs[0]
    dtype = np.dtype(ctx.tensor(x).dtype)
    if dtype not in DTYPES or ctx.tensor(x).quant is not None:
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: X {ctx.tensor(x).name!r} is {dtype.name}; NNAPI "
                                               f"recurrent operations are float32 or float16")
    direction = node.attrs.get("direction", "forward")
    dirs = {"forward": ["forward"], "reverse": ["reverse"], "bidirectional": ["forward", "reverse"]}.get(direction)
    if dirs is None:
        raise Unsupported(Reason.INVALID, f"{node.label()}: direction {direction!r}")
    layout = int(node.attrs.get("layout", 0))
    if layout not in (0, 1):
        raise Unsupported(Reason.INVALID, f"{node.label()}: layout {layout}")
    shape = ctx.source_shape(x)
    if ctx.tensor(x).shape is None:
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: X {ctx.tensor(x).name!r} has an unknown rank "
                                                f"({pin_hint()})")
    if len(shape) != 3:
        raise Unsupported(Reason.RANK, f"{node.label()}: X {ctx.tensor(x).name!r} has rank {len(shape)}, needs 3")
    seq, batch = (shape[0], shape[1]) if layout == 0 else (shape[1], shape[0])
    for k in (5, 6) if not batch else ():   # the initial states may know the batch X's shape leaves open
        t = _input(node, k)
        if t >= 0 and len(ctx.source_shape(t)) == 3:
            batch = batch or ctx.source_shape(t)[0 if layout == 1 else 1]
    # W and R are only ever sliced and stored in rec.dtype (const()): float weights stay as they are, without a
    # float64 copy of each (the same values: float32 -> float64 is exact)
    w, r = (_as_float(ctx.const_value(node.inputs[k], name)) for k, name in ((1, "W"), (2, "R")))
    hidden = int(node.attrs.get("hidden_size", r.shape[-1] if r.ndim == 3 else 0))
    n_dir = len(dirs)
    if w.ndim != 3 or r.shape != (n_dir, gates * hidden, hidden) or w.shape[:2] != (n_dir, gates * hidden) \
            or (shape[2] > 0 and w.shape[2] != shape[2]):
        raise Unsupported(Reason.INVALID, f"{node.label()}: W {list(w.shape)} / R {list(r.shape)} do not fit "
                                          f"{n_dir} direction(s) of hidden size {hidden} and input {list(shape)}")
    b_in = _input(node, 3)
    b = np.zeros((n_dir, 2 * gates * hidden)) if b_in < 0 else np.asarray(ctx.const_value(b_in, "B"), np.float64)
    if b.shape != (n_dir, 2 * gates * hidden):
        raise Unsupported(Reason.INVALID, f"{node.label()}: B has shape {list(b.shape)}, needs "
                                          f"{[n_dir, 2 * gates * hidden]}")
    lens = _input(node, 4)
    if lens >= 0:
        if not ctx.is_const(lens) or not seq or not (np.asarray(ctx.const_value(lens)) == seq).all():
            raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: sequence_lens {ctx.tensor(lens).name!r} other than "
                                                f"every sequence at its full, known length (NNAPI has no masking)")
    peep = None
    if op == "LSTM" and _input(node, 7) >= 0:
        peep = np.asarray(ctx.const_value(node.inputs[7], "P"), np.float64)
        if peep.shape != (n_dir, 3 * hidden):
            raise Unsupported(Reason.INVALID, f"{node.label()}: P has shape {list(peep.shape)}")
    initial = {"h": _input(node, 5), "c": _input(node, 6) if op == "LSTM" else -1}
    for key, t in initial.items():
        want = (n_dir, batch, hidden) if layout == 0 else (batch, n_dir, hidden)
        have = ctx.source_shape(t) if t >= 0 else want
        if len(have) != 3 or any(a > 0 and b_ > 0 and a != b_ for a, b_ in zip(have, want)):
            raise Unsupported(Reason.INVALID, f"{node.label()}: initial_{key} has shape {list(have)}, "
                                              f"needs {list(want)}")
    clip = node.attrs.get("clip")
    if clip is not None and not float(clip) > 0:
        raise Unsupported(Reason.INVALID, f"{node.label()}: clip {clip} is not positive")
    outputs = {name: t for name, t in zip(("Y", "Y_h", "Y_c"), node.outputs) if t >= 0 and tensor_used(ctx, t)}
    return Recurrent(node, x, dtype, DTYPES[dtype], hidden, dirs, layout, seq, batch, w.shape[2], w, r, b, peep,
                     initial, _activations(node, len(DEFAULT_ACTIVATIONS[op]), n_dir),
                     0.0 if clip is None else float(clip), bool(node.attrs.get("input_forget", 0)),
                     bool(node.attrs.get("linear_before_reset", 0)), outputs)


def _as_float(values) -> np.ndarray:
    values = np.asarray(values)
    return values if values.dtype.kind == "f" else values.astype(np.float64)


# -- building blocks ----------------------------------------------------------------

def const(ctx, rec: Recurrent, data, name: str) -> int:
    return ctx.const(np.asarray(data, rec.dtype), rec.code, name=f"{rec.node.name or rec.node.op}/{name}")


def temp(ctx, rec: Recurrent, shape, name: str) -> int:
    return ctx.temp(OperandType(rec.code, tuple(int(d) for d in shape)), f"{rec.node.name or rec.node.op}/{name}")


def emit(ctx, rec: Recurrent, code: Op, dims, name: str, **named) -> int:
    """A new temporary of dimensions `dims` computed by `code` from the named inputs."""
    out = temp(ctx, rec, dims, name)
    ctx.emit_form(code, "default", [out], **named)
    return out


def output(ctx, rec: Recurrent, key: str) -> int:
    """The operand of output Y, Y_h or Y_c, in the shape the node gives it ([seq, dirs, batch, hidden] /
    [dirs, batch, hidden], batch first with layout 1) where the graph declares less (0: unknown length)."""
    t, dirs = rec.outputs[key], len(rec.directions)
    if key == "Y":
        want = (rec.seq, dirs, rec.batch, rec.hidden) if rec.layout == 0 else (rec.batch, rec.seq, dirs, rec.hidden)
    else:
        want = (dirs, rec.batch, rec.hidden) if rec.layout == 0 else (rec.batch, dirs, rec.hidden)
    have = ctx.source_shape(t) if ctx.tensor(t).shape is not None else ()
    if len(have) == len(want) and all(h == w or not w for h, w in zip(have, want)):
        return ctx.output(t)
    if have and (len(have) != len(want) or any(h and w and h != w for h, w in zip(have, want))):
        raise Unsupported(Reason.INVALID, f"{rec.node.label()}: {key} {ctx.tensor(t).name!r} is declared "
                                          f"{list(have)}, the node gives {list(want)}")
    if ctx.perm_of(t) is not None:
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{rec.node.label()}: {key} needs a declared shape")
    merged = tuple(w or (have[k] if have else 0) for k, w in enumerate(want))
    return ctx.bind_output(t, OperandType(rec.code, merged))


def reshape_into(ctx, src: int, out: int) -> None:
    """out = src's data in out's declared shape (one unknown extent, the sequence length, becomes -1)."""
    dims = [int(d) or -1 for d in ctx.model.operands[out].type.dimensions]
    if dims.count(-1) > 1:
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{ctx.node.label()}: needs the batch size")
    ctx.emit_form(Op.RESHAPE, "default", [out], input=src, shape=ctx.const(np.asarray(dims, np.int32)))


def direction_state(ctx, rec: Recurrent, key: str, d: int, shape, name: str) -> int:
    """Direction d's initial h or c as an operand of `shape` ([batch, hidden] with the batch in any position);
    zeros when the node has none."""
    t = rec.initial[key]
    axis = 0 if rec.layout == 0 else 1   # the direction axis of initial_h / initial_c
    if t < 0:
        if not rec.batch:
            raise Unsupported(Reason.DYNAMIC_SHAPE, f"{rec.node.label()}: zero initial_{key} needs the batch size")
        return const(ctx, rec, np.zeros(shape), f"initial_{key}{d}")
    if ctx.is_const(t):
        return const(ctx, rec, np.take(ctx.const_value(t), d, axis=axis).reshape(shape), f"initial_{key}{d}")
    src = ctx.operand_as(t, None)
    if not all(shape):
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{rec.node.label()}: a run-time initial_{key} needs the batch size")
    if len(rec.directions) > 1:
        if key not in rec.split_states:   # one SPLIT serves both directions
            dims = list(ctx.source_shape(t))
            dims[axis] = 1
            pieces = [temp(ctx, rec, dims, f"initial_{key}{k}/split") for k in range(len(rec.directions))]
            ctx.emit_form(Op.SPLIT, "default", pieces, input=src, axis=ctx.i32(axis),
                          num_splits=ctx.i32(len(rec.directions)))
            rec.split_states[key] = pieces
        src = rec.split_states[key][d]
    out = temp(ctx, rec, shape, f"initial_{key}{d}")
    reshape_into(ctx, src, out)
    return out


def stack_into(ctx, rec: Recurrent, pieces: list, axis: int, shape, out: int, name: str) -> None:
    """out (of its declared shape) = the row-major data of the pieces concatenated on `axis` (giving `shape`)."""
    if len(pieces) == 1:
        reshape_into(ctx, pieces[0], out)
        return
    joined = emit(ctx, rec, Op.CONCATENATION, shape, name, inputs=pieces, axis=ctx.i32(axis))
    reshape_into(ctx, joined, out)


# -- NNAPI sequence LSTMs and RNNs -------------------------------------------------------------

def sequence_activation(rec: Recurrent):
    """The NNAPI activation code when every direction's activations are, for one A that the sequence ops
    take, (Sigmoid, A, A) for an LSTM and (A) for an RNN; else None."""
    codes = set()
    for acts in rec.activations:
        *gates, a = acts   # an LSTM's (f, g, h): f must be Sigmoid and g == h; an RNN's (f)
        if (gates and (gates[0].name != "sigmoid" or gates[1].name != a.name)) or a.name not in SEQUENCE_ACTIVATIONS:
            return None
        codes.add(SEQUENCE_ACTIVATIONS[a.name])
    return codes.pop() if len(codes) == 1 else None


def lstm_weights(ctx, rec: Recurrent, d, prefix: str = "") -> dict:
    """Direction d's weights as NNAPI LSTM inputs: ONNX gate rows (i, o, f, c), one bias (Wb + Rb) per gate,
    peepholes (P is i, o, f) or omitted ones, no projection. d None: a one-unit direction of zeros (the
    unused forward half of a reverse-only LSTM)."""
    n = rec.hidden if d is not None else 1
    w = rec.w[d] if d is not None else np.zeros((4, rec.input_size))
    r = rec.r[d] if d is not None else np.zeros((4, 1))
    bias = rec.b[d, :4 * n] + rec.b[d, 4 * n:] if d is not None else np.zeros(4)
    named = {}
    for gate, k in {"input": 0, "output": 1, "forget": 2, "cell": 3}.items():
        part = slice(k * n, (k + 1) * n)
        named[f"{prefix}input_to_{gate}_weights"] = const(ctx, rec, w[part], f"{prefix}W_{gate}")
        named[f"{prefix}recurrent_to_{gate}_weights"] = const(ctx, rec, r[part], f"{prefix}R_{gate}")
        named[f"{prefix}{gate}_gate_bias"] = const(ctx, rec, bias[part], f"{prefix}B_{gate}")
    for gate, k in (("input", 0), ("output", 1), ("forget", 2)):
        name = f"{prefix}cell_to_{gate}_weights"
        named[name] = omitted(ctx, name, rec.code) if rec.peepholes is None or d is None else \
            const(ctx, rec, rec.peepholes[d, k * n:(k + 1) * n], f"{prefix}P_{gate}")
    for name in ("projection_weights", "projection_bias"):
        named[prefix + name] = omitted(ctx, prefix + name, rec.code)
    return named


def clips(ctx, rec: Recurrent, act: int) -> dict:
    scalar = C.FLOAT32 if rec.code == C.TENSOR_FLOAT32 else C.FLOAT16
    return dict(activation=ctx.i32(act), cell_clip=ctx.scalar(scalar, 0.0), proj_clip=ctx.scalar(scalar, 0.0))


def rnn_weights(ctx, rec: Recurrent, d, prefix: str = "") -> dict:
    """Direction d's RNN weights as NNAPI RNN inputs (one bias Wb + Rb); d None: a one-unit direction of zeros."""
    n = rec.hidden
    if d is None:
        w, r, bias = np.zeros((1, rec.input_size)), np.zeros((1, 1)), np.zeros(1)
    else:
        w, r, bias = rec.w[d], rec.r[d], rec.b[d, :n] + rec.b[d, n:]
    return {f"{prefix}weights": const(ctx, rec, w, f"{prefix}W"),
            f"{prefix}recurrent_weights": const(ctx, rec, r, f"{prefix}R"),
            f"{prefix}bias": const(ctx, rec, bias, f"{prefix}B")}


SEQUENCE_OPS = {("LSTM", True): Op.UNIDIRECTIONAL_SEQUENCE_LSTM, ("LSTM", False): Op.BIDIRECTIONAL_SEQUENCE_LSTM,
                ("RNN", True): Op.UNIDIRECTIONAL_SEQUENCE_RNN, ("RNN", False): Op.BIDIRECTIONAL_SEQUENCE_RNN}


def _state_inputs(code: Op, prefix: str) -> dict:
    """initial state key -> the NNAPI input name of one half of `code`."""
    if code in (Op.UNIDIRECTIONAL_SEQUENCE_LSTM, Op.BIDIRECTIONAL_SEQUENCE_LSTM):
        return {"h": f"{prefix}output_state_in", "c": f"{prefix}cell_state_in"}
    return {"h": "hidden_state_in" if code == Op.UNIDIRECTIONAL_SEQUENCE_RNN else f"{prefix}hidden_state"}


def sequence_op(ctx, rec: Recurrent, act: int) -> None:
    """A forward LSTM / RNN as UNIDIRECTIONAL_SEQUENCE_LSTM / _RNN; a bidirectional one as the
    BIDIRECTIONAL_SEQUENCE_ op (outputs unmerged), and so is a reverse one, with a one-unit forward half
    whose outputs are dropped (NNAPI's unidirectional ops run forward only)."""
    n, b, lstm = rec.hidden, rec.batch, rec.node.op == "LSTM"
    d0, d1 = ctx.source_shape(rec.x)[:2]
    states = "Y_h" in rec.outputs or "Y_c" in rec.outputs
    uni = rec.directions == ["forward"]
    code = SEQUENCE_OPS[(rec.node.op, uni)]
    bidi = len(rec.directions) == 2
    halves = [("", 0)] if uni else [("fw_", 0 if bidi else None), ("bw_", 1 if bidi else 0)]
    named = dict(input=ctx.operand_as(rec.x, None), **(clips(ctx, rec, act) if lstm else {"activation": ctx.i32(act)}))
    # UNIDIRECTIONAL_SEQUENCE_RNN takes time_major as an INT32, the others as a BOOL
    named["time_major"] = ctx.i32(int(rec.layout == 0)) if code == Op.UNIDIRECTIONAL_SEQUENCE_RNN \
        else ctx.boolean(rec.layout == 0)
    seqs, state_outs, real = [], {"h": [], "c": []}, []
    for prefix, d in halves:
        units = n if d is not None else 1
        named.update(lstm_weights(ctx, rec, d, prefix) if lstm else rnn_weights(ctx, rec, d, prefix))
        for key, name in _state_inputs(code, prefix).items():
            named[name] = direction_state(ctx, rec, key, d, (b, units), f"{prefix}{key}0") if d is not None \
                else const(ctx, rec, np.zeros((b, 1)), f"{prefix}{key}0")
            if states:   # NNAPI's state outputs come as a group (feature level 4)
                state_outs[key].append(temp(ctx, rec, (b, units), f"{prefix}{key}"))
        seqs.append(temp(ctx, rec, (d0, d1, units), f"{prefix}sequence"))
        real.append(d is not None)
    if not uni:
        named.update(aux_input=omitted(ctx, "aux_input", rec.code), merge_outputs=ctx.boolean(False))
        aux = [f"{p}aux_input_to_{g}_weights" for p in ("fw_", "bw_") for g in ("input", "forget", "cell", "output")] \
            if lstm else ["fw_aux_weights", "bw_aux_weights"]
        named.update({name: omitted(ctx, name, rec.code) for name in aux})
    per_half = [[state_outs[key][k] for key in ("h", "c") if state_outs[key]] for k in range(len(halves))] \
        if states else []
    ctx.emit_form(code, "default", seqs + [o for group in per_half for o in group], **named)
    keep = lambda parts: [p for p, r in zip(parts, real) if r]  # noqa: E731
    k = len(rec.directions)
    if "Y" in rec.outputs:   # [seq, batch, dirs x hidden] -> [seq, dirs, batch, hidden]; or [batch, seq, dirs x hidden]
        axis = 1 if rec.layout == 0 else 2
        shape = (d0, k * d1, n) if axis == 1 else (d0, d1, k * n)
        stack_into(ctx, rec, keep(seqs), axis, shape, output(ctx, rec, "Y"), "Y/joined")
    for key, pieces in (("Y_h", state_outs["h"]), ("Y_c", state_outs["c"])):
        if key in rec.outputs:   # [dirs x batch, hidden] or [batch, dirs x hidden]
            axis = 0 if rec.layout == 0 else 1
            shape = (k * b, n) if axis == 0 else (b, k * n)
            stack_into(ctx, rec, keep(pieces), axis, shape, output(ctx, rec, key), f"{key}/joined")


def sequence_fits(ctx, rec: Recurrent, act) -> bool:
    """Whether NNAPI's sequence op computes this node: an activation it has, no clip (NNAPI clips the cell
    state, ONNX the gates' inputs), no input_forget (NNAPI couples i = 1 - f, onnxruntime f = 1 - i), and
    below the level of NNAPI's state outputs no used Y_h / Y_c unless the sizes are unknown (then the
    sequence op is the only form, and the spec reports the level)."""
    states = "Y_h" in rec.outputs or "Y_c" in rec.outputs
    unrolled_states = states and ctx.feature_level < _STATE_OUTPUTS_LEVEL and rec.seq > 0 and rec.batch > 0
    return act is not None and not rec.clip and not rec.input_forget and not unrolled_states


# -- converters -------------------------------------------------------------------

@onnx_op("LSTM", "RNN", versions=(7, OPSET_MAX))
def lstm_rnn(node, ctx):
    """LSTM and RNN as NNAPI's UNIDIRECTIONAL_/BIDIRECTIONAL_SEQUENCE_ ops, or unrolled when attributes need it."""
    rec = read(node, ctx)
    act = sequence_activation(rec)
    if sequence_fits(ctx, rec, act):
        sequence_op(ctx, rec, act)
        return
    from .unrolled import unroll
    unroll(ctx, rec)


@onnx_op("GRU", versions=(7, OPSET_MAX))
def gru(node, ctx):
    """GRU (either linear_before_reset) unrolled over the time steps."""
    from .unrolled import unroll
    unroll(ctx, read(node, ctx))
