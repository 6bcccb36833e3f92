"""The constant-operand tables (lut.ConstantOperandTable: quantized ADD/SUB/MUL/PRELU against a constant),
the float32 PRELU fast path (elementwise/prepared.py Prelu) and the quantized MEAN (reduce/prepared.py)
compute what the plain kernels compute, bit for bit: every 8-bit value of the run-time input, constants
in either position and broadcasting, alphas below, at and above 1 (and negative), signed zeros, inf and
NaN, every axis combination."""
import numpy as np
import pytest

import nnapi
from executor.runtime import RunState, compile_model
from nnapi import OperandCode as C, OperandType, OperationCode as Op
from tests.executor.kernels.test_elementwise_prepared import model_of, run_both

RNG = np.random.default_rng(77)
Q8 = (C.TENSOR_QUANT8_ASYMM, 0, 255, np.uint8)
QS8 = (C.TENSOR_QUANT8_ASYMM_SIGNED, -128, 127, np.int8)


def _model(code, x_type, const_type, const_value, out_type, const_first=False, fuse=None):
    types, k = ([const_type, x_type], 0) if const_first else ([x_type, const_type], 1)
    return model_of(code, types, out_type, {k: const_value}, fuse)


@pytest.mark.parametrize("code", [Op.ADD, Op.SUB, Op.MUL])
@pytest.mark.parametrize("qtype", [Q8, QS8])
@pytest.mark.parametrize("const_first", [False, True])
@pytest.mark.parametrize("const_shape", [(24,), (1, 1, 24), (3, 1, 24), (1,)])
def test_quantized_binary_with_a_constant_equals_the_kernel(code, qtype, const_first, const_shape):
    code_t, lo, hi, dt = qtype
    x_shape = (1, 3, 256, 24)   # every 8-bit value in every channel
    xq = np.tile(np.arange(lo, hi + 1).reshape(1, 1, 256, 1), (1, 3, 1, 24)).astype(dt)
    xq = np.ascontiguousarray(xq)
    cq = RNG.integers(lo, hi, const_shape, endpoint=True).astype(dt)
    m = _model(code, OperandType(code_t, x_shape, 0.07, lo + 9), OperandType(code_t, const_shape, 0.013, hi - 30),
               cq, OperandType(code_t, x_shape, 0.05, (lo + hi) // 2), const_first, fuse=0)
    fast, slow = run_both(m, [xq], "ConstantOperandTable")
    assert fast.dtype == slow.dtype and fast.shape == x_shape and np.array_equal(fast, slow)


def test_quantized_prelu_with_a_constant_alpha_equals_the_kernel():
    code_t, lo, hi, dt = QS8
    xq = np.ascontiguousarray(np.tile(np.arange(lo, hi + 1).reshape(1, 256, 1), (2, 1, 16)).astype(dt))
    alpha = RNG.integers(lo, hi, (1, 16), endpoint=True).astype(dt)
    m = _model(Op.PRELU, OperandType(code_t, xq.shape, 0.04, 3), OperandType(code_t, (1, 16), 0.01, -2), alpha,
               OperandType(code_t, xq.shape, 0.03, -5))
    fast, slow = run_both(m, [xq], "ConstantOperandTable")
    assert np.array_equal(fast, slow)


def _awkward_floats(shape):
    x = RNG.standard_normal(shape).astype(np.float32) * 3
    flat = x.reshape(-1)
    flat[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, -3.4e38]
    return x


@pytest.mark.parametrize("alpha_kind", ["below_one", "mixed", "above_one", "one"])
@pytest.mark.parametrize("alpha_shape", [(16,), (1, 1, 16), (1,), (5, 7, 16)])
def test_float_prelu_equals_the_kernel_bit_for_bit(alpha_kind, alpha_shape):
    alpha = {"below_one": RNG.uniform(-0.7, 0.9, alpha_shape),
             "mixed": RNG.uniform(-1.5, 3.0, alpha_shape),
             "above_one": RNG.uniform(1.0, 4.0, alpha_shape),
             "one": np.ones(alpha_shape)}[alpha_kind].astype(np.float32)
    if alpha_kind == "mixed":
        alpha.reshape(-1)[:2] = [1.0, -1.0][:alpha.size]
    shape = (2, 5, 7, 16)
    m = _model(Op.PRELU, OperandType(C.TENSOR_FLOAT32, shape), OperandType(C.TENSOR_FLOAT32, alpha_shape), alpha,
               OperandType(C.TENSOR_FLOAT32, shape))
    x = _awkward_floats(shape)
    fast, slow = run_both(m, [x], "Prelu")
    nan = np.isnan(slow)
    assert np.array_equal(np.isnan(fast), nan)
    assert np.array_equal(fast[~nan].view(np.uint32), slow[~nan].view(np.uint32))   # signed zeros too
    # a transposed (non-contiguous) input takes the broadcasting path, the same values
    compiled = compile_model(m)
    xt = np.ascontiguousarray(x.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
    got = compiled.run([xt], RunState(2.0))[0].array
    assert np.array_equal(got[~nan].view(np.uint32), slow[~nan].view(np.uint32))


@pytest.mark.parametrize("odd", [np.inf, 0.0, -0.0])
def test_float_prelu_with_a_non_finite_or_zero_alpha_keeps_the_kernel(odd):
    alpha = np.array([0.5, odd], np.float32)
    m = _model(Op.PRELU, OperandType(C.TENSOR_FLOAT32, (3, 2)), OperandType(C.TENSOR_FLOAT32, (2,)), alpha,
               OperandType(C.TENSOR_FLOAT32, (3, 2)))
    step = compile_model(m).steps[0]
    assert step.run is step.kernel


@pytest.mark.parametrize("qtype", [Q8, QS8])
@pytest.mark.parametrize("axes,keep", [((1, 2), 1), ((-1,), 0), ((0, 3), 1), ((2, 1, -2), 0), ((0, 1, 2, 3), 0)])
@pytest.mark.parametrize("out_quant", ["other", "same", "multiplier over 1"])
def test_quantized_mean_equals_the_kernel(qtype, axes, keep, out_quant):
    """Counts up to 257 read a table of the kernel's results by the raw sum, larger ones requantize
    (the last axes: 840 values); the same quantization is the kernel's truncating division."""
    code_t, lo, hi, dt = qtype
    out_scale, out_zp = {"other": (0.031, hi - 50), "same": (0.05, lo + 20), "multiplier over 1": (1e-4, lo + 9)}[out_quant]
    shape = (2, 7, 5, 12)
    m = nnapi.Model()
    x = m.add_operand(OperandType(code_t, shape, 0.05, lo + 20))
    a = m.add_operand(OperandType(C.TENSOR_INT32, (len(axes),)))
    m.set_operand_value(a, np.array(axes, np.int32))
    k = m.add_operand(OperandType(C.INT32))
    m.set_operand_value(k, np.int32(keep))
    out_shape = tuple(1 if i in {ax % 4 for ax in axes} else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in {ax % 4 for ax in axes})
    out = m.add_operand(OperandType(code_t, out_shape or (1,), out_scale, out_zp))
    m.add_operation(Op.MEAN, [x, a, k], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    for xq in (RNG.integers(lo, hi, shape, endpoint=True).astype(dt), np.full(shape, lo, dt), np.full(shape, hi, dt)):
        fast, slow = run_both(m, [xq], "PreparedQuantMean")
        assert fast.dtype == slow.dtype and fast.shape == slow.shape and np.array_equal(fast, slow)
        if out_quant == "same":   # the raw mean truncated toward zero, by hand
            total = xq.astype(np.int64).sum(axis=tuple({ax % 4 for ax in axes}))
            count = xq.size // total.size
            assert np.array_equal(slow.reshape(-1), (np.sign(total) * (np.abs(total) // count)).reshape(-1))


@pytest.mark.parametrize("qtype", [Q8, QS8])
@pytest.mark.parametrize("x_first", [True, False])
def test_swish_is_one_lookup_equal_to_the_kernels(qtype, x_first):
    """x * logistic(x) on 8-bit x: the MUL reads one table by x (lut.SelfTable), the same values as the
    LOGISTIC and MUL kernels."""
    code_t, lo, hi, dt = qtype
    shape = (2, 256)
    m = nnapi.Model()
    x = m.add_operand(OperandType(code_t, shape, 0.05, lo + 100))
    s = m.add_operand(OperandType(code_t, shape, 1 / 256, lo))
    m.add_operation(Op.LOGISTIC, [x], [s])
    f = m.add_operand(OperandType(C.INT32))
    m.set_operand_value(f, np.int32(0))
    y = m.add_operand(OperandType(code_t, shape, 0.03, lo + 20))
    m.add_operation(Op.MUL, [x, s, f] if x_first else [s, x, f], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    xq = np.tile(np.arange(lo, hi + 1), (2, 1)).astype(dt)   # every value
    compiled = compile_model(m)
    assert type(compiled.steps[1].run).__name__ == "SelfTable"
    assert [p[0].code for p in compiled._program] == [Op.MUL]   # the LOGISTIC, read by no one, is skipped
    fast = compiled.run([xq], RunState(2.0))[0].array
    slow = compile_model(m, fast_paths=False).run([xq], RunState(2.0))[0].array
    assert fast.dtype == slow.dtype and np.array_equal(fast, slow)
    # layerwise tracing still sees the LOGISTIC's output
    traced = RunState(2.0, trace={})
    compiled.run([xq], traced)
    assert (id(m), s) in traced.trace
    # the kernel path (forced here) gets the skipped operand from the LOGISTIC's kernel
    mul = compiled.steps[1].run
    mul.dtype = np.dtype(np.float64)
    assert np.array_equal(compiled.run([xq], RunState(2.0))[0].array, slow)


@pytest.mark.parametrize("code", [Op.ADD, Op.SUB, Op.MUL, Op.DIV])
@pytest.mark.parametrize("const_first", [False, True])
@pytest.mark.parametrize("const_shape", [(24,), (1, 1, 24)])
def test_float_binary_with_a_per_channel_constant_equals_the_kernel(code, const_first, const_shape):
    """A per-channel constant against a large operand (batch norm as MUL + ADD) runs along long rows:
    bit for bit the kernel's result, signed zeros, inf and NaN included; a transposed input too."""
    shape = (2, 9, 40, 24)
    t = OperandType(C.TENSOR_FLOAT32, shape)
    cval = _awkward_floats(const_shape)
    m = _model(code, t, OperandType(C.TENSOR_FLOAT32, const_shape), cval, t, const_first, fuse=0)
    x = _awkward_floats(shape)
    fast, slow = run_both(m, [x], "Binary")
    assert np.array_equal(fast.view(np.uint32), slow.view(np.uint32))
    xt = np.ascontiguousarray(x.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
    got = compile_model(m).run([xt], RunState(2.0))[0].array
    assert np.array_equal(got.view(np.uint32), slow.view(np.uint32))


def _dequantized_weights_model(output_too: bool):
    """x + DEQUANTIZE(w) with w an int8 constant (a hybrid model's weights); DEQUANTIZE's result also a
    model output when `output_too`."""
    m = nnapi.Model()
    x = m.add_operand(OperandType(C.TENSOR_FLOAT32, (5,)))
    w = m.add_operand(OperandType(C.TENSOR_QUANT8_SYMM, (5,), 0.25, 0))
    m.set_operand_value(w, np.array([-128, -3, 0, 7, 127], np.int8))
    wf = m.add_operand(OperandType(C.TENSOR_FLOAT32, (5,)))
    fuse = m.add_operand(OperandType(C.INT32))
    m.set_operand_value(fuse, np.int32(0))
    out = m.add_operand(OperandType(C.TENSOR_FLOAT32, (5,)))
    m.add_operation(Op.DEQUANTIZE, [w], [wf])
    m.add_operation(Op.ADD, [x, wf, fuse], [out])
    m.identify_inputs_and_outputs([x], [out, wf] if output_too else [out])
    m.finish()
    return m


@pytest.mark.parametrize("output_too", [False, True])
def test_dequantize_of_a_constant_is_computed_once(output_too):
    m = _dequantized_weights_model(output_too)
    fast, plain = compile_model(m), compile_model(m, fast_paths=False)
    assert (type(fast.steps[0].run).__name__ == "ConstantResult") != output_too
    want_w = np.array([-32.0, -0.75, 0.0, 1.75, 31.75], np.float32)   # q * 0.25
    for x in (np.arange(5, dtype=np.float32), np.full(5, -2.5, np.float32)):
        got = [v.array for v in fast.run([x], RunState(1.0))]
        ref = [v.array for v in plain.run([x], RunState(1.0))]
        assert all(np.array_equal(g, r) for g, r in zip(got, ref))
        np.testing.assert_array_equal(got[0], x + want_w)
        if output_too:
            np.testing.assert_array_equal(got[1], want_w)
