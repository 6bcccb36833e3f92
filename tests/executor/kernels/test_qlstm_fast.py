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
