"""QUANTIZED_LSTM's compiled form (recurrent/prepared.py: stacked weights, tabulated activations,
compiled requantization) gives the plain kernel's results bit for bit on every variant of the cell:
the CTS case (CIFG, layer norm) and the same model with an input gate, peepholes, a projection, both
clips and no layer norm, each with its weights constant (the fast path) and on random inputs."""
import copy
from collections import defaultdict

import numpy as np
import pytest

from executor.conformance import find_vector_files, read_cases
from nnapi import OperationCode as Op
from tests.conftest import CTS_DIR
from tests.executor.test_fast_paths_agree import _check_case, _with_constant_parameters

# QUANTIZED_LSTM input positions (the CTS case feeds them in this order)
INPUT_GATE = (1, 5, 12, 20)          # input-to-input, recurrent-to-input weights, bias, layer norm
PEEPHOLES = (9, 10, 11)
PROJECTION = (16, 17)
LAYER_NORMS = (20, 21, 22, 23)
CELL_CLIP, PROJ_CLIP = 24, 25


def _qlstm_case():
    path = next(p for p in find_vector_files([str(CTS_DIR / "V1_3")]) if p.name.startswith("qlstm_noprojection"))
    return next(c for c in read_cases(path) if c["id"] == "V1_3/qlstm_noprojection/qlstm_noprojection")


def _variant(case, rng, fill=(), omit=(), clips=None):
    """The case with the inputs at positions `fill` given random values of their declared shape,
    those at `omit` omitted and (cell_clip, proj_clip) set."""
    case = copy.deepcopy(case)
    main = case["main"]
    op = main["operations"][0]
    n_units = main["operands"][op["inputs"][2]]["dimensions"][0]
    for pos in fill:
        o = main["operands"][op["inputs"][pos]]
        dims = o["dimensions"] or [n_units]
        high = {"TENSOR_QUANT8_SYMM": 127, "TENSOR_QUANT16_SYMM": 20000, "TENSOR_INT32": 3000}[o["type"]]
        case["inputs"][main["inputIndexes"].index(op["inputs"][pos])] = rng.integers(
            -high, high + 1, int(np.prod(dims))).tolist()
        o["dimensions"] = dims
        if o["type"] == "TENSOR_QUANT8_SYMM" and pos in PROJECTION:
            o["scale"] = 0.004
    for pos in omit:
        case["inputs"][main["inputIndexes"].index(op["inputs"][pos])] = []
    if clips is not None:
        for pos, value in zip((CELL_CLIP, PROJ_CLIP), clips):
            main["operands"][op["inputs"][pos]]["value"] = [value]
    return case


VARIANTS = {
    "cts (CIFG, layer norm)": {},
    "input gate": {"fill": INPUT_GATE},
    "input gate, peepholes": {"fill": INPUT_GATE + PEEPHOLES},
    "projection, clips": {"fill": PROJECTION, "clips": (0.5, 0.01)},
    "no layer norm, peepholes, projection": {"fill": INPUT_GATE + PEEPHOLES + PROJECTION, "omit": LAYER_NORMS},
}


@pytest.mark.parametrize("name", VARIANTS)
def test_compiled_quantized_lstm_is_the_plain_kernel(name):
    rng = np.random.default_rng(len(name))
    case = _with_constant_parameters(_variant(_qlstm_case(), rng, **VARIANTS[name]))
    covered, problems = defaultdict(int), []
    prepared = _check_case(case, rng, covered, problems, set())
    assert not problems, problems
    assert Op.QUANTIZED_LSTM in prepared and covered[Op.QUANTIZED_LSTM] == 2


def test_rounding_divide_by_constant_pot_is_the_reference():
    """quant._rdbp (the cell update's form) against fixedpoint.rounding_divide_by_pot on every tie,
    its neighbours and random int32-range values, for each exponent the cell state uses."""
    from executor.kernels.fixedpoint import rounding_divide_by_pot
    from executor.kernels.recurrent.quant import _rdbp
    rng = np.random.default_rng(0)
    for e in range(0, 31):
        d = 1 << e
        ties = np.arange(-40, 41, dtype=np.int64) * d // 2 if e else np.arange(-40, 41, dtype=np.int64)
        x = np.concatenate([ties - 1, ties, ties + 1, rng.integers(-(1 << 31), 1 << 31, 2000),
                            np.array([-(1 << 31), (1 << 31) - 1], np.int64)])
        assert np.array_equal(_rdbp(x, e), rounding_divide_by_pot(x, e)), e


@pytest.mark.parametrize("scale, zero_point", [(1 / 128, 0), (0.0123, -7), (0.5, 100), (3e-6, 3), (1.7, -128)])
def test_hidden_step_table_is_the_reference_requantization(scale, zero_point):
    """The compiled cell's output requantization (a _StepTable of o * tanh(c)) gives the reference
    Requantizer's int8 values at every step, one below it, and on random products in the bound."""
    from executor.kernels.recurrent.quant import _HIDDEN_PRODUCT_BOUND, _StepTable
    from executor.kernels.requantize import Requantizer
    real = float(np.float32(2.0 ** -15 / float(np.float32(scale)) * 2.0 ** -15))
    ref = Requantizer(np.zeros(3, np.int64), np.full(3, real), zero_point, -128, 127, np.int64, reference=True)
    table = _StepTable(lambda p: ref(np.repeat(p[:, None], 3, axis=1))[:, 0], -128, 127, _HIDDEN_PRODUCT_BOUND)
    b = _HIDDEN_PRODUCT_BOUND
    rng = np.random.default_rng(1)
    steps = np.clip(table.steps, -b, b)
    p = np.concatenate([steps, steps - 1, rng.integers(-b, b + 1, 4000), [-b, 0, b, 1]]).clip(-b, b)
    p = p.reshape(-1, 2)   # (a batch of two rows, as the cell's [batch, units])
    assert np.array_equal(table(p), ref(np.repeat(p[..., None], 3, axis=-1))[..., 0])
