"""RNN, SVDF and LSTM family kernels and specs on small hand-computed cases, through the public API."""
import math

import numpy as np
import pytest

from nnapi import NnapiError, OperandCode as C, OperandType, OperationCode as Op, ResultCode
from tests.executor.op_harness import OMIT, build, run, scalar

F32 = C.TENSOR_FLOAT32


def t(dims, code=F32, scale=0.0, zp=0):
    return OperandType(code, dims, scale, zp)


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


# -- RNN family ------------------------------------------------------------------------

def test_rnn_one_step_relu():
    # h = relu(W x + R h + b) with W = [[1, 2], [-1, 0]], R = I, b = [0.5, 0]
    w, r, b = [[1, 2], [-1, 0]], [[1, 0], [0, 1]], [0.5, 0.0]
    m = build(Op.RNN, [(t([1, 2]), None), (t([2, 2]), w), (t([2, 2]), r), (t([2]), b), (t([1, 2]), None),
                       scalar(C.INT32, 1)], [t([1, 2]), t([1, 2])])
    state, out = run(m, np.array([[1, 1]], np.float32), np.array([[0.25, 3]], np.float32))
    # unit 0: 1 + 2 + 0.25 + 0.5 = 3.75; unit 1: relu(-1 + 3) = 2
    np.testing.assert_allclose(out, [[3.75, 2.0]])
    np.testing.assert_allclose(state, out)


def _sequence_rnn_inputs(time_major):
    eye = [[1.0]]
    return [(t([1, 3, 1] if not time_major else [3, 1, 1]), None), (t([1, 1]), eye), (t([1, 1]), eye),
            (t([1]), [0.0]), (t([1, 1]), None)]


def test_unidirectional_sequence_rnn_batch_major_is_a_running_sum():
    # identity weights and no activation: h_t = x_t + h_(t-1)
    m = build(Op.UNIDIRECTIONAL_SEQUENCE_RNN,
              _sequence_rnn_inputs(False) + [scalar(C.INT32, 0), scalar(C.INT32, 0)],
              [t([1, 3, 1]), t([1, 1])])
    out, h = run(m, np.array([[[1], [2], [3]]], np.float32), np.array([[10]], np.float32))
    np.testing.assert_allclose(out.ravel(), [11, 13, 16])
    np.testing.assert_allclose(h, [[16]])


def test_bidirectional_sequence_rnn_merged_outputs():
    eye = [[1.0]]
    ins = _sequence_rnn_inputs(True) + [(t([1, 1]), eye), (t([1, 1]), eye), (t([1]), [0.0]), (t([1, 1]), None),
                                        (t([3, 1, 1]), OMIT), (t([1, 1]), OMIT), (t([1, 1]), OMIT),
                                        scalar(C.INT32, 0), scalar(C.BOOL, True), scalar(C.BOOL, True)]
    m = build(Op.BIDIRECTIONAL_SEQUENCE_RNN, ins, [t([3, 1, 2])])
    x = np.array([[[1]], [[2]], [[3]]], np.float32)
    (out,) = run(m, x, np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32))
    # forward: running sums 1, 3, 6; backward (from the end): 6, 5, 3
    np.testing.assert_allclose(out[:, 0, 0], [1, 3, 6])
    np.testing.assert_allclose(out[:, 0, 1], [6, 5, 3])


# -- SVDF ------------------------------------------------------------------------------

def test_svdf_rank1_memory2():
    # one filter, memory 2: feature = 2 * x; output = w_time . [previous feature, new feature] + bias
    ins = [(t([1, 1]), None), (t([1, 1]), [[2.0]]), (t([1, 2]), [[0.5, 1.0]]), (t([1]), [0.25]),
           (t([1, 2]), None), scalar(C.INT32, 1), scalar(C.INT32, 0)]
    m = build(Op.SVDF, ins, [t([1, 2]), t([1, 1])])
    state, out = run(m, np.array([[3.0]], np.float32), np.array([[4.0, 0.0]], np.float32))
    # window = [4, 6]: 0.5 * 4 + 1 * 6 + 0.25 = 8.25; the state shifts to [6, 0]
    np.testing.assert_allclose(out, [[8.25]])
    np.testing.assert_allclose(state, [[6.0, 0.0]])


def test_svdf_rank_must_divide_filters():
    ins = [(t([1, 1]), None), (t([3, 1]), [[1.0], [1.0], [1.0]]), (t([3, 2]), np.ones((3, 2))),
           (t([1]), OMIT), (t([1, 6]), None), scalar(C.INT32, 2), scalar(C.INT32, 0)]
    m = build(Op.SVDF, ins, [t([1, 6]), t([1, 1])])
    with pytest.raises(NnapiError) as e:
        run(m, np.ones((1, 1), np.float32), np.zeros((1, 6), np.float32))
    assert e.value.code == ResultCode.OP_FAILED and "rank" in str(e.value)


# -- LSTM ------------------------------------------------------------------------------

def _lstm_inputs(code=F32, scalar_code=C.FLOAT32, cell_bias=1.0):
    """One unit, one input; all weights 0, so every gate is its bias: i = f = o = sigmoid(0)."""
    zero2, zero1 = [[0.0]], [0.0]
    ins = [(t([1, 1], code), None)]
    ins += [(t([1, 1], code), zero2)] * 8                      # input-to-* and recurrent-to-* weights
    ins += [(t([1], code), OMIT)] * 3                     # no peephole
    ins += [(t([1], code), zero1), (t([1], code), zero1), (t([1], code), [cell_bias]), (t([1], code), zero1)]
    ins += [(t([1, 1], code), OMIT), (t([1], code), OMIT)]  # no projection
    ins += [(t([1, 1], code), None), (t([1, 1], code), None)]   # output state, cell state
    ins += [scalar(C.INT32, 4), (OperandType(scalar_code), 0.0), (OperandType(scalar_code), 0.0)]
    return ins


def test_lstm_gates_from_biases():
    outs = [t([1, 4]), t([1, 1]), t([1, 1]), t([1, 1])]
    m = build(Op.LSTM, _lstm_inputs(), outs)
    _, h, c, out = run(m, np.array([[5.0]], np.float32), np.zeros((1, 1), np.float32),
                       np.array([[2.0]], np.float32))
    expected_c = 0.5 * 2.0 + 0.5 * math.tanh(1.0)
    np.testing.assert_allclose(c, [[expected_c]], rtol=1e-6)
    np.testing.assert_allclose(out, [[0.5 * math.tanh(expected_c)]], rtol=1e-6)
    np.testing.assert_allclose(h, out)


def test_lstm_float16_needs_feature_level_3():
    outs = [t([1, 4], C.TENSOR_FLOAT16), t([1, 1], C.TENSOR_FLOAT16), t([1, 1], C.TENSOR_FLOAT16),
            t([1, 1], C.TENSOR_FLOAT16)]
    m = build(Op.LSTM, _lstm_inputs(C.TENSOR_FLOAT16, C.FLOAT16), outs)
    assert m.min_feature_level() == 3
    assert any("feature level 3" in p for p in m.validate(feature_level=2))
    assert m.validate(feature_level=3) == []


def test_lstm_rejects_mismatched_clip_type():
    # float32 tensors need FLOAT32 clipping scalars
    outs = [t([1, 4]), t([1, 1]), t([1, 1]), t([1, 1])]
    m = build(Op.LSTM, _lstm_inputs(F32, C.FLOAT16), outs, finish=False)
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA


def test_rnn_rejects_int32_tensors():
    i32 = C.TENSOR_INT32
    ins = [(t([1, 1], i32), None), (t([1, 1], i32), [[1]]), (t([1, 1], i32), [[1]]), (t([1], i32), [0]),
           (t([1, 1], i32), None), scalar(C.INT32, 0)]
    m = build(Op.RNN, ins, [t([1, 1], i32), t([1, 1], i32)], finish=False)
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA


def test_unidirectional_sequence_rnn_state_output_needs_feature_level_4():
    m = build(Op.UNIDIRECTIONAL_SEQUENCE_RNN,
              _sequence_rnn_inputs(True) + [scalar(C.INT32, 0), scalar(C.INT32, 1)], [t([3, 1, 1]), t([1, 1])])
    assert m.min_feature_level() == 4
    assert any("feature level 4" in p for p in m.validate(feature_level=3))


# -- QUANTIZED_16BIT_LSTM --------------------------------------------------------------

def test_quantized_16bit_lstm_zero_gate_inputs():
    # weights at their zero point and zero biases: every gate input is 0, so i = f = o = 1/2 and the
    # modulation tanh(0) = 0; cell 1.0 (raw 2048 at 2^-11) halves to raw 1024, and the output is
    # 1/2 * tanh(1/2) = 0.2311 -> 128 + 0.2311 * 128 = 157.6 (fixed-point tanh: 157 or 158)
    q8, w_scale = C.TENSOR_QUANT8_ASYMM, 0.01
    weights = [(t([1, 1], q8, w_scale, 100), [[100]])] * 8
    biases = [(t([1], C.TENSOR_INT32, w_scale / 128, 0), [0])] * 4
    ins = ([(t([1, 1], q8, 1 / 128, 128), None)] + weights + biases
           + [(t([1, 1], C.TENSOR_QUANT16_SYMM, 2 ** -11, 0), None), (t([1, 1], q8, 1 / 128, 128), None)])
    m = build(Op.QUANTIZED_16BIT_LSTM, ins,
              [t([1, 1], C.TENSOR_QUANT16_SYMM, 2 ** -11, 0), t([1, 1], q8, 1 / 128, 128)])
    cell, out = run(m, np.array([[200]], np.uint8), np.array([[2048]], np.int16), np.array([[60]], np.uint8))
    assert cell[0, 0] == 1024
    assert abs(int(out[0, 0]) - round(128 + 128 * 0.5 * math.tanh(0.5))) <= 1


def test_quantized_16bit_lstm_rejects_wrong_input_quantization():
    q8 = C.TENSOR_QUANT8_ASYMM
    weights = [(t([1, 1], q8, 0.01, 100), [[100]])] * 8
    biases = [(t([1], C.TENSOR_INT32, 0.01 / 128, 0), [0])] * 4
    ins = ([(t([1, 1], q8, 0.5, 128), None)] + weights + biases
           + [(t([1, 1], C.TENSOR_QUANT16_SYMM, 2 ** -11, 0), None), (t([1, 1], q8, 1 / 128, 128), None)])
    m = build(Op.QUANTIZED_16BIT_LSTM, ins,
              [t([1, 1], C.TENSOR_QUANT16_SYMM, 2 ** -11, 0), t([1, 1], q8, 1 / 128, 128)], finish=False)
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA


def test_fixed_point_gates_track_float():
    from executor.kernels.recurrent.quant import fixed_logistic, fixed_tanh
    raw = np.array([-30000, -4096, -1, 0, 1, 4096, 30000])   # 3 integer bits: value = raw / 4096
    np.testing.assert_allclose(fixed_logistic(raw, 3) / 32768, [sigmoid(v / 4096) for v in raw], atol=2e-4)
    np.testing.assert_allclose(fixed_tanh(raw, 3) / 32768, np.tanh(raw / 4096), atol=4e-4)


# -- the LSTM weight rules are the spec's: BAD_DATA at finish() for constant weights -----------------

def _lstm_model(edit):
    """The CTS LSTM (V1_0/lstm: 4 units, input and output size 2 and 4, no peephole or projection) with
    its weights constants, after `edit(operands)` changed its declared operands."""
    import copy

    from executor.conformance import build_model, find_vector_files, read_cases
    from tests.conftest import CTS_DIR
    case = next(c for p in find_vector_files([str(CTS_DIR / "V1_0")]) if p.name.startswith("lstm.")
                for c in read_cases(p) if c["id"] == "V1_0/lstm/lstm")
    main = copy.deepcopy(case["main"])
    for idx, values in zip(main["inputIndexes"][1:18], case["inputs"][1:18]):
        main["operands"][idx].update(lifetime="CONSTANT_COPY" if values else "NO_VALUE", value=values)
    main["inputIndexes"] = [main["inputIndexes"][0]] + main["inputIndexes"][18:]
    edit(main["operands"])
    return lambda: build_model(dict(case, main=main), [])


def test_lstm_constant_weights_are_checked_at_finish():
    _lstm_model(lambda ops: None)()   # as given: valid

    def wrong_forget_weights(ops):   # input_to_forget_weights [4, 2] declared [2, 4]
        ops[2].update(dimensions=[2, 4])
    with pytest.raises(NnapiError) as e:
        _lstm_model(wrong_forget_weights)()
    assert e.value.code == ResultCode.BAD_DATA
    # the units clash with the other gates' 4, so only the input size 2 is expected for sure
    assert "input_to_forget_weights has shape [2, 4], expected ['?', 2]" in e.value.message

    def half_cifg(ops):   # input_to_input_weights omitted, the input gate's recurrent weights kept
        ops[1].update(lifetime="NO_VALUE")
    with pytest.raises(NnapiError) as e:
        _lstm_model(half_cifg)()
    assert e.value.code == ResultCode.BAD_DATA and "or none of them (CIFG)" in e.value.message
