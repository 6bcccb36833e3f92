"""The input zero point folded into the bias (conv/prepared.py folded_domain): the GEMM reads q itself,
padding is the zero point, and each output channel's bias is shifted by -z * sum(w). Checked bit for bit
against the plain kernels and an int64 reference, where the fold is taken (int8 inputs with a non-zero
zero point; the ends of the ranges) and where it is not (a uint8 input centred at 128)."""
import numpy as np
import pytest

import nnapi
from executor.runtime import RunState, compile_model
from executor.kernels.requantize import Requantizer
from nnapi import OperandCode as C
from nnapi import OperandType
from nnapi import OperationCode as Op
from tests.executor.kernels.test_fast_path_arithmetic import _int64_conv, _model, _requant_ref, _run_both

RNG = np.random.default_rng(77)


def _conv_layer(m, x, x_type, c, o, k, pads, out_scale, out_zp, fuse, per_channel, depthwise=False):
    """A CONV_2D (or DEPTHWISE_CONV_2D, multiplier 1) of random filters on operand x; returns
    (output operand, its type, filter values, scales, bias)."""
    lo, hi = (-128, 127) if x_type.code == C.TENSOR_QUANT8_ASYMM_SIGNED else (0, 255)
    shape = (1, k, k, o) if depthwise else (o, k, k, c)
    if per_channel:
        wq = RNG.integers(-127, 127, shape, endpoint=True).astype(np.int8)
        scales = (0.002 + 0.01 * RNG.random(o)).astype(np.float32)
        w = m.add_operand(OperandType(C.TENSOR_QUANT8_SYMM_PER_CHANNEL, shape))
        m.set_operand_symm_per_channel_quant_params(w, scales, 3 if depthwise else 0)
    else:
        wq = RNG.integers(lo, hi, shape, endpoint=True).astype(x_type.dtype)
        scales = np.full(o, 0.004, np.float32)
        w = m.add_operand(OperandType(x_type.code, shape, 0.004, (lo + hi + 1) // 2))
    m.set_operand_value(w, wq)
    bias = RNG.integers(-3000, 3000, o).astype(np.int32)
    b = m.add_operand(OperandType(C.TENSOR_INT32, (o,), 0.0 if per_channel else x_type.scale * 0.004))
    m.set_operand_value(b, bias)
    scalars = [pads[2], pads[3], pads[0], pads[1], 1, 1] + ([1] if depthwise else []) + [fuse]
    ins = [x, w, b]
    for v in scalars:
        s = m.add_operand(OperandType(C.INT32, ()))
        m.set_operand_value(s, np.int32(v))
        ins.append(s)
    h, wd = x_type.dimensions[1:3]
    oh, ow = h + pads[0] + pads[1] - k + 1, wd + pads[2] + pads[3] - k + 1
    out_type = OperandType(x_type.code, (1, oh, ow, o), out_scale, out_zp)
    y = m.add_operand(out_type)
    m.add_operation(Op.DEPTHWISE_CONV_2D if depthwise else Op.CONV_2D, ins, [y])
    return y, out_type, wq, scales, bias


@pytest.mark.parametrize("x_zp", [-128, -3, 127])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("float32", [False, True])
def test_folded_convs_sharing_a_padded_buffer(x_zp, per_channel, float32, monkeypatch):
    """Two padded convolutions with the same padding and input zero point (so the same kind of padded
    buffer) on inputs of different shapes, then a depthwise one: each against the int64 reference.
    Without the float32 requantizer (float32=False) the fold is always taken; with it, quant_domain may
    keep the unfolded form where only that one has the float32 form."""
    if not float32:
        monkeypatch.setattr(Requantizer, "_try_float32", lambda self, *a: None)
    code, lo, hi = C.TENSOR_QUANT8_ASYMM_SIGNED, -128, 127
    m = nnapi.Model()
    x_type = OperandType(code, (1, 9, 8, 3), 0.05, x_zp)
    x = m.add_operand(x_type)
    pads = (1, 1, 2, 0)
    y1, t1, w1, s1, b1 = _conv_layer(m, x, x_type, 3, 5, 3, pads, 0.4, x_zp, 0, per_channel)
    y2, t2, w2, s2, b2 = _conv_layer(m, y1, t1, 5, 4, 3, pads, 0.5, 3, 1, per_channel)
    y3, t3, w3, s3, b3 = _conv_layer(m, y2, t2, 4, 4, 3, (1, 1, 1, 1), 0.3, -7, 0, per_channel, depthwise=True)
    m.identify_inputs_and_outputs([x], [y1, y2, y3])
    m.finish()
    xq = RNG.integers(lo, hi, x_type.dimensions, endpoint=True).astype(np.int8)
    xq[0, 0, 0], xq[0, -1, -1] = lo, hi
    compiled = compile_model(m)
    fills = [s.run.fill for s in compiled.steps]
    assert fills == [x_zp, x_zp, 3] if not float32 else all(f in (0, z) for f, z in zip(fills, [x_zp, x_zp, 3]))
    outs = [v.array for v in compiled.run([xq], RunState(2.0))]
    again = [v.array for v in compiled.run([xq], RunState(2.0))]   # the buffers reused
    for s in compiled.steps:
        s.run = s.kernel
    plain = [v.array for v in compiled.run([xq], RunState(2.0))]
    for got, rep, want in zip(outs, again, plain):
        assert np.array_equal(got, want) and np.array_equal(rep, want)
    # independently of both: the int64 reference, layer by layer on the executor's own inputs
    for (inp, zp_in, t_in), (wq, scales, bias, t_out, fuse, depthwise, pd), got in zip(
            [(xq, x_zp, x_type), (outs[0], x_zp, t1), (outs[1], 3, t2)],
            [(w1, s1, b1, t1, 0, False, pads), (w2, s2, b2, t2, 1, False, pads), (w3, s3, b3, t3, 0, True, (1, 1, 1, 1))],
            outs):
        wz = 0 if per_channel else (lo + hi + 1) // 2
        w_ohwc = wq[0].transpose(2, 0, 1)[..., None] if depthwise else wq
        acc = _int64_conv(inp, zp_in, w_ohwc, wz, bias, (1, 1), pd, (1, 1), inp.shape[3] if depthwise else 1)
        real = (np.float32(t_in.scale) * scales).astype(np.float64) / np.float64(np.float32(t_out.scale))
        want = _requant_ref(acc, real, t_out.zero_point, max(lo, t_out.zero_point) if fuse else lo, hi)
        assert np.array_equal(got, want)


def test_uint8_input_centred_at_128_is_not_folded():
    """max |q| = 255 > max |q - 128| = 128: folding would double the bound, so the subtracting form stays."""
    xq = RNG.integers(0, 255, (1, 6, 6, 4), endpoint=True).astype(np.uint8)
    wq = RNG.integers(0, 255, (3, 3, 3, 4), endpoint=True).astype(np.uint8)
    bias = RNG.integers(-2000, 2000, 3).astype(np.int32)
    scalars = [(C.INT32, 1), (C.INT32, 1), (C.INT32, 1), (C.INT32, 1), (C.INT32, 1), (C.INT32, 1), (C.INT32, 0)]
    model = _model(Op.CONV_2D, OperandType(C.TENSOR_QUANT8_ASYMM, xq.shape, 0.05, 128), wq,
                   OperandType(C.TENSOR_QUANT8_ASYMM, wq.shape, 0.01, 120), bias, scalars,
                   OperandType(C.TENSOR_QUANT8_ASYMM, (1, 6, 6, 3), 0.3, 128))
    fast, slow, prepared = _run_both(model, xq)
    assert prepared[0].fill == 0 and prepared[0].zero_point == 128
    assert np.array_equal(fast, slow)


@pytest.mark.parametrize("x_zp", [-128, 9])
def test_folded_fully_connected(x_zp):
    """FULLY_CONNECTED with the zero point folded (a plain cast of the rows) against an int64 reference."""
    size, units = 40, 6
    m = nnapi.Model()
    x = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, (3, size), 0.02, x_zp))
    wq = RNG.integers(-128, 127, (units, size), endpoint=True).astype(np.int8)
    w = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, wq.shape, 0.01, 2))
    m.set_operand_value(w, wq)
    bias = RNG.integers(-5000, 5000, units).astype(np.int32)
    b = m.add_operand(OperandType(C.TENSOR_INT32, (units,), 0.02 * 0.01))
    m.set_operand_value(b, bias)
    f = m.add_operand(OperandType(C.INT32, ()))
    m.set_operand_value(f, np.int32(0))
    out = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, (3, units), 0.5, -4))
    m.add_operation(Op.FULLY_CONNECTED, [x, w, b, f], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    xq = RNG.integers(-128, 127, (3, size), endpoint=True).astype(np.int8)
    xq[0] = -128
    fast, slow, prepared = _run_both(m, xq)
    assert prepared[0].zero_point == 0
    acc = (xq.astype(np.int64) - x_zp) @ (wq.astype(np.int64) - 2).T + bias
    real = np.full(units, np.float64(np.float32(0.02) * np.float32(0.01)) / np.float64(np.float32(0.5)))
    assert np.array_equal(fast, slow)
    assert np.array_equal(fast, _requant_ref(acc, real, -4, -128, 127))
