"""What the float recurrent kernels share (recurrent.py: RNN, SVDF; lstm.py: LSTM): the activation
functions (also in-place forms), float32 input reading, output buffers and casts, time-major views of
sequences, weight stacking, and the bidirectional ops' input linking and output order.

Nothing registers a kernel here.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..common import clip_ufunc

GATES = ("input", "forget", "cell", "output")
LAYER_NORM_EPSILON = 1e-8  # the Android/TFLite MeanStddevNormalization epsilon
F32 = np.dtype(np.float32)
ONE = np.ones((), np.float32)   # a 0-d operand: the cheapest scalar for a ufunc on small arrays


# -- shared helpers ----------------------------------------------------------------

def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# NNAPI activation codes allowed by the recurrent ops (FuseCode values plus TANH/SIGMOID)
ACTIVATIONS = {
    0: lambda x: x,
    1: lambda x: np.maximum(x, 0.0),
    2: lambda x: np.clip(x, -1.0, 1.0),
    3: lambda x: np.clip(x, 0.0, 6.0),
    4: np.tanh,
    6: sigmoid,
}


def sigmoid_into(x, out):
    """out = 1 / (1 + exp(-x)), the same float32 operations as sigmoid, without temporaries."""
    np.negative(x, out=out)
    np.exp(out, out=out)
    np.add(out, ONE, out=out)
    np.reciprocal(out, out=out)


def sigmoid_of_negated(x):
    """x = sigmoid(-x) in place: sigmoid_into for an x that holds the negated pre-activation."""
    np.exp(x, x)
    np.add(x, ONE, x)
    np.reciprocal(x, x)


def _copy_into(x, out):
    if out is not x:
        np.copyto(out, x)


# the same activations as `fn(x, out)` writing into `out` (which may be x)
ACTIVATIONS_INTO = {
    0: _copy_into,
    1: lambda x, out: np.maximum(x, np.float32(0.0), out=out),
    2: lambda x, out: clip_ufunc(x, np.float32(-1.0), np.float32(1.0), out=out),
    3: lambda x, out: clip_ufunc(x, np.float32(0.0), np.float32(6.0), out=out),
    4: np.tanh,   # a ufunc: np.tanh(x, out)
    6: sigmoid_into,
}


def checked_activation(ctx, code: int) -> int:
    """An activation argument's code, when the recurrent ops allow it."""
    if code not in ACTIVATIONS:
        ctx.fail(f"unsupported activation function {code}")
    return code


def as_float32(value) -> Optional[np.ndarray]:
    """An argument's Value as float32 (computation precision), or None when absent/omitted/empty. Not
    a copy when it already is float32: callers must not write into it."""
    if value is None or value.array.size == 0:  # omitted model inputs may arrive as empty buffers
        return None
    return np.asarray(value.array, np.float32)


def cast_output(ctx, k, array):
    return np.asarray(array).astype(ctx.out_type(k).dtype)


def time_major_view(x, time_major: bool):
    return x if time_major else np.swapaxes(x, 0, 1)


def check_shapes(ctx, pairs):
    """Fail with a clear message when an operand's size does not fit (instead of a matmul error)."""
    for name, arr, shape in pairs:
        if arr is not None and tuple(arr.shape) != tuple(shape):
            ctx.fail(f"{name} has shape {list(arr.shape)}, expected {list(shape)}")


def float32_output(ctx, k, shape) -> np.ndarray:
    """Where float32 output `k` is computed: its output buffer when the operand is float32, else a
    float32 array that `as_output` casts (float16 models compute in float32)."""
    if ctx.out_type(k).dtype == F32:
        return ctx.output_buffer(k, shape, F32)
    return np.empty(shape, F32)


def as_output(ctx, k, array) -> np.ndarray:
    dtype = ctx.out_type(k).dtype
    return array if array.dtype == dtype else array.astype(dtype)


def sequence_output(ctx, k, time_major: bool, steps: int, batch: int, width: int):
    """(output k's array, a time-major C-contiguous [steps, batch, width] array the loop writes into):
    the same memory when the layouts agree, else a work array that `store_sequence` copies over."""
    buf = float32_output(ctx, k, (steps, batch, width) if time_major else (batch, steps, width))
    if time_major or batch == 1:
        return buf, buf.reshape(steps, batch, width)
    return buf, np.empty((steps, batch, width), np.float32)


def store_sequence(buf, seq, time_major: bool):
    """Copy the time-major result into the output array when they are not the same memory."""
    if not np.may_share_memory(buf, seq):   # a separate work array, or the output itself
        np.copyto(buf, time_major_view(seq, time_major))


def stack_transposed(parts, width: int) -> np.ndarray:
    """[units_k, width] matrices (None: zeros) stacked along units and transposed to [width, sum units],
    contiguous, for x @ w."""
    rows = [np.zeros((units, width), np.float32) if w is None else w for w, units in parts]
    return np.ascontiguousarray(np.concatenate(rows, axis=0).T, np.float32)


def aux_fits(x, aux, aux_w) -> bool:
    """A time-major aux input (None: absent) fits x and the stacked aux weights (None: absent)."""
    return aux is None or aux_w is None or (aux.ndim == 3 and aux.shape[:2] == x.shape[:2]
                                             and aux.shape[2] == aux_w.shape[0])


def time_steps(steps: int, reverse: bool):
    return range(steps - 1, -1, -1) if reverse else range(steps)


def link_aux(x, aux, has_aux_weights: bool):
    """(backward input, forward aux input, backward aux input) for the three NNAPI linking modes.

    No aux input: both directions read `x`. Cross-linking (aux input and aux weights): both
    read `x` plus their weighted aux input. Parallel linking (aux input, no aux weights):
    the backward direction reads the aux input instead of `x`.
    """
    if aux is None:
        return x, None, None
    if not has_aux_weights:
        return aux, None, None
    return x, aux, aux


def bidirectional_results(ctx, fw_seq, bw_seq, fw_states, bw_states, merge, time_major):
    """Outputs in NNAPI order from the time-major sequences and the final states: fw (or merged)
    output, bw output unless merged, then the final states."""
    steps, batch = fw_seq.shape[:2]
    if merge:
        seq = [(fw_seq, bw_seq)]
    else:
        seq = [(fw_seq,), (bw_seq,)]
    states = list(fw_states) + list(bw_states)
    if len(ctx.outputs) != len(seq) and len(ctx.outputs) != len(seq) + len(states):
        ctx.fail(f"{len(ctx.outputs)} outputs do not fit merge_outputs={merge}")
    results = []
    for k, parts in enumerate(seq):
        width = sum(s.shape[2] for s in parts)
        buf = float32_output(ctx, k, (steps, batch, width) if time_major else (batch, steps, width))
        at = 0
        for s in parts:   # merged: fw then bw along the last axis
            np.copyto(time_major_view(buf, time_major)[:, :, at:at + s.shape[2]], s)
            at += s.shape[2]
        results.append(as_output(ctx, k, buf))
    for k, state in enumerate(states[:len(ctx.outputs) - len(seq)], start=len(seq)):
        buf = float32_output(ctx, k, state.shape)
        np.copyto(buf, state)
        results.append(as_output(ctx, k, buf))
    return results
