"""benchmarks/overhead.py: its chain models compute what they say, and the fit is least squares."""
import numpy as np

from benchmarks.overhead import ELEMENTS, chain, fit


def _run(model, x):
    from converters.running import RunState, compile_model
    import nnapi
    return compile_model(model).run([x], RunState(nnapi.DEFAULT_LOOP_TIMEOUT_S))[0].array


def test_chains_are_n_operations_that_compute_relu_and_repeated_adds():
    x = np.linspace(-2, 2, ELEMENTS, dtype=np.float32).reshape(1, ELEMENTS)
    relu = chain("RELU", 5)
    assert len(relu.operations) == 5
    np.testing.assert_array_equal(_run(relu, x), np.maximum(x, 0))
    add = chain("ADD", 3)
    c = np.linspace(-1, 1, ELEMENTS, dtype=np.float32).reshape(1, ELEMENTS)
    assert len(add.operations) == 3
    np.testing.assert_array_equal(_run(add, x), ((x + c) + c) + c)


def test_fit_recovers_an_exact_line():
    intercept, slope = fit([1, 2, 4, 8], [5.0, 7.0, 11.0, 19.0])   # 3 + 2 N
    assert abs(intercept - 3.0) < 1e-9 and abs(slope - 2.0) < 1e-9
