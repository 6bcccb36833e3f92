"""converters/running.py, the one module that runs converted models: seeded inputs in each input's natural
range, library errors (RunError) rather than command-line ones."""
import numpy as np
import pytest

import nnapi
from converters.running import RunError, random_inputs, run_model
from nnapi import OperandCode as C, OperandType, OperationCode as Op


def _relu_model(dims, code=C.TENSOR_QUANT8_ASYMM):
    m = nnapi.Model()
    q = {"scale": 0.5, "zero_point": 3} if code == C.TENSOR_QUANT8_ASYMM else {}
    x = m.add_operand(OperandType(code, dims, **q), name="x")
    y = m.add_operand(OperandType(code, dims, **q), name="y")
    m.add_operation(Op.RELU, [x], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    return m


def test_quantized_inputs_fill_the_stored_range_and_are_seeded():
    m = _relu_model([64, 64])
    (a,) = random_inputs(m, seed=1)
    assert a.dtype == np.uint8 and a.min() == 0 and a.max() == 255   # 4096 draws over 256 values
    assert np.array_equal(a, random_inputs(m, seed=1)[0]) and not np.array_equal(a, random_inputs(m, seed=2)[0])
    (y,) = run_model(m, [a])
    assert np.array_equal(y, np.maximum(a, 3))   # RELU in stored units: max(q, zero point)


def test_unknown_dimensions_are_a_run_error_naming_the_input():
    m = _relu_model([0, 4], C.TENSOR_FLOAT32)
    with pytest.raises(RunError, match=r"input operand 0 \(x\) has unknown dimensions \[0, 4\]"):
        random_inputs(m)
