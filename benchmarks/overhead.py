"""The executor's own interpretive overhead: its fixed cost per invocation and its cost per operation.

    python -m benchmarks.overhead [--runs N]

Times chains of N trivial operations on an 8-element float32 tensor (N = 1 .. 128; RELU, and ADD of a
constant) with `compiled.run` exactly as `nnapi bench` times a model, on the thread's CPU clock, and
fits median time = intercept + slope x N by least squares (relative errors): the intercept is what one invocation costs
whatever the model, the slope what each operation costs beyond its arithmetic (which on 8 elements
is next to nothing). The performance issue's budget for a model under 1 ms of LiteRT time is 15 µs
per invocation plus 2.5 µs per operation over LiteRT's own time; these two numbers say how much of
that the executor spends before any kernel does real work.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

CHAIN_LENGTHS = (1, 2, 4, 8, 16, 32, 64, 128)
ELEMENTS = 8


def chain(op: str, n: int):
    """A finished NNAPI model: input -> n x op -> output, on float32 [1, ELEMENTS]."""
    import nnapi
    from nnapi import OperandCode as C, OperandType, OperationCode as Op
    m = nnapi.Model(f"{op.lower()}-chain-{n}")
    t = OperandType(C.TENSOR_FLOAT32, [1, ELEMENTS])
    x = first = m.add_operand(t)
    if op == "ADD":
        const = m.add_operand(t)
        m.set_operand_value(const, np.linspace(-1, 1, ELEMENTS, dtype=np.float32).reshape(1, ELEMENTS))
        fuse = m.add_operand(OperandType(C.INT32))
        m.set_operand_value(fuse, np.int32(0))
    for _ in range(n):
        y = m.add_operand(t)
        if op == "ADD":
            m.add_operation(Op.ADD, [x, const, fuse], [y])
        else:
            m.add_operation(Op.RELU, [x], [y])
        x = y
    m.identify_inputs_and_outputs([first], [x])
    m.finish()
    return m


def fit(lengths, medians_us) -> tuple[float, float]:
    """Least-squares (intercept, slope) of medians_us against lengths, each point weighted by 1 / its
    time (relative errors: the lengths double, and the long chains would otherwise set the intercept)."""
    y = np.asarray(medians_us, float)
    slope, intercept = np.polyfit(np.asarray(lengths, float), y, 1, w=1 / y)
    return float(intercept), float(slope)


def measure(runs: int = 400, warmup: int = 20, ops=("RELU", "ADD")) -> dict:
    """{op: {"medians_us": {N: µs}, "intercept_us", "slope_us"}} on the thread's CPU clock."""
    import nnapi
    from converters.bench import CLOCKS, timeit_ms
    from converters.running import RunState, compile_model
    out = {}
    for op in ops:
        medians = {}
        for n in CHAIN_LENGTHS:
            compiled = compile_model(chain(op, n))
            state = RunState(nnapi.DEFAULT_LOOP_TIMEOUT_S)
            x = [np.linspace(-2, 2, ELEMENTS, dtype=np.float32).reshape(1, ELEMENTS)]
            medians[n] = float(np.median(timeit_ms(lambda: compiled.run(x, state), runs, warmup, CLOCKS["cpu"]))) * 1e3
        intercept, slope = fit(list(medians), list(medians.values()))
        out[op] = {"medians_us": medians, "intercept_us": intercept, "slope_us": slope}
    return out


def summary(result: dict) -> str:
    """One sentence per series, for the benchmark document's header."""
    parts = [f"{op} chains: {r['intercept_us']:.1f} µs per invocation + {r['slope_us']:.2f} µs per operation "
             f"(1 operation: {r['medians_us'][CHAIN_LENGTHS[0]]:.1f} µs, {CHAIN_LENGTHS[-1]}: "
             f"{r['medians_us'][CHAIN_LENGTHS[-1]]:.1f} µs)" for op, r in result.items()]
    return "; ".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=400)
    args = ap.parse_args(argv)
    print(summary(measure(args.runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
