"""The float weights of MatMulInteger / ConvInteger / DynamicQuantizeLSTM are made without float64 copies
(converters/onnx/ops/dynamic_quant.py, dynamic_quant_lstm.py): each value is still exactly the float64
formula's rounded to float32, for every 8-bit type, per-tensor and per-channel zero points."""
import types

import numpy as np
import pytest

from converters.onnx.ops import dynamic_quant, dynamic_quant_lstm
from converters.source_graph import SourceTensor

RNG = np.random.default_rng(11)


def _ctx(*arrays):
    """A stand-in conversion context whose tensors 0.. are the given constants."""
    tensors = [SourceTensor(k, f"t{k}", a.shape, a.dtype, data=a) for k, a in enumerate(arrays)]
    graph = types.SimpleNamespace(tensors=tensors)
    return types.SimpleNamespace(graph=graph, const_value=lambda i, what="": tensors[i].data)


def _node(inputs):
    return types.SimpleNamespace(inputs=list(inputs), index=0, label=lambda: "node 0 (test)")


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("order", ["K", "F"])
def test_weights_minus_zero_points(dtype, per_channel, order):
    info = np.iinfo(dtype)
    w = RNG.integers(info.min, info.max + 1, (37, 29)).astype(dtype)
    zp = RNG.integers(info.min, info.max + 1, (29,) if per_channel else ()).astype(dtype)
    got = dynamic_quant._minus_zero_point(_ctx(w, zp), _node([0, 0, 0, 1]), 0, 3, 1, order=order)
    want = (w.astype(np.float64) - zp.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got.astype(np.float32), want)
    if order == "F":
        assert got.T.flags.c_contiguous   # FULLY_CONNECTED's [N, K] weights without a copy


def test_wider_integers_keep_float64():
    w = RNG.integers(-2 ** 30, 2 ** 30, (8, 8)).astype(np.int32)
    got = dynamic_quant._minus_zero_point(_ctx(w, np.array(3, np.int32)), _node([0, 0, 0, 1]), 0, 3, 1)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, w.astype(np.float64) - 3)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("per_column", [False, True])
def test_dequantized_lstm_weight(dtype, per_column):
    info = np.iinfo(dtype)
    dirs, rows, cols = 2, 24, 64
    q = RNG.integers(info.min, info.max + 1, (dirs, rows, cols)).astype(dtype)
    n_scales = dirs * cols if per_column else dirs
    # scales spanning many binades, tiny ones too: every product rounds to float32 once, as in float64
    scale = (RNG.uniform(0.5, 1.0, n_scales) * 2.0 ** RNG.integers(-140, 20, n_scales)).astype(np.float32)
    zp = RNG.integers(info.min, info.max + 1, n_scales).astype(dtype)
    ctx = _ctx(q, scale, zp)
    node = _node([-1, 0] + [-1] * 6 + [1, 2])
    k = dynamic_quant._dequantized_weight(ctx, node, 1, 8, "W")
    shape = (dirs, 1, cols if per_column else 1)
    want = ((q.astype(np.float64) - zp.astype(np.float64).reshape(shape)) *
            scale.astype(np.float64).reshape(shape)).transpose(0, 2, 1).astype(np.float32)
    np.testing.assert_array_equal(ctx.graph.tensors[k].data, want)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_integer_lstm_weights(dtype):
    info = np.iinfo(dtype)
    q = RNG.integers(info.min, info.max + 1, (2, 12, 40)).astype(dtype)
    zp = RNG.integers(info.min, info.max + 1, 2).astype(dtype)
    ctx = _ctx(q, np.array([0.1, 0.2], np.float32), zp)
    parts = dynamic_quant_lstm._integer_weights(ctx, _node([-1, 0] + [-1] * 6 + [1, 2]), 1, 8, "W")
    for d, part in enumerate(parts):
        np.testing.assert_array_equal(part.weights, (q[d].astype(np.float64) - float(zp[d])).T)
