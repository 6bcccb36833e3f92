"""Every compile-time fast path (a preparer, executor/registry.py PREPARERS) gives its plain kernel's
results: bit for bit for integer, quantized and boolean outputs, and for float outputs within the
bound below. The preparers are enumerated from the registry, so a new one without a conformance case
that exercises it fails `test_every_preparer_is_covered`.

Each preparer's operation is checked on its CTS conformance cases (tests/data/nnapi-cts; a spread of
at most CASES_PER_OP of them here, every one with `python -m tests.executor.test_fast_paths_agree`)
and on random cases: the same models with every float and quantized input drawn at random (integer,
boolean and scalar inputs keep the case's values: they are shapes, indices and flags). Where a case's
model gives the operation no fast path (the recurrent CTS models feed their weights at run time, and
the preparers specialize on constant weights), it is also run with every input but the first made a
constant of the case's value. A preparer that none of the spread exercises is tried on its
operation's other cases, and on each with its quantized outputs requantized (another scale and zero
point), until one takes the fast path. Operations the CTS has no vectors for (BATCH_MATMUL, feature
level 6; MIRROR_PAD, feature level 7) get authored cases in the same form (AUTHORED: each is run on its
given and random inputs).

Float bound: a fast path may evaluate in float32 where the plain kernel accumulates in float64 (the
convolutions' GEMMs) or in another order. Agreement is |fast - plain| <= FLOAT_BOUND[dtype] x (1 +
the largest |plain| of that output): 1e-5 for float32 (the CTS's float32 tolerance), 1e-3 for float16
(one rounding step at 1). Measured over every CTS case and its random twin, the worst is 7.8e-7
(float32) and 0 (float16).
"""
from __future__ import annotations

import sys
from collections import defaultdict

import numpy as np
import pytest

from executor.conformance import _array, build_model, find_vector_files, read_cases
from executor.registry import PREPARERS, load_kernels
from executor.runtime import RunState, compile_model
from nnapi import NnapiError, OperandCode as C, OperationCode
from nnapi.codes import DEFAULT_LOOP_TIMEOUT_S
from tests.conftest import CTS_DIR

CASES_PER_OP = 8
# per float dtype: the agreement bound relative to 1 + the output's largest magnitude
FLOAT_BOUND = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 1e-3}
_RANDOM = frozenset({C.TENSOR_FLOAT32, C.TENSOR_FLOAT16, C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED,
                     C.TENSOR_QUANT8_SYMM, C.TENSOR_QUANT16_ASYMM, C.TENSOR_QUANT16_SYMM})


def _operand(type_, dims, lifetime="TEMPORARY_VARIABLE", value=None) -> dict:
    o = {"type": type_, "dimensions": list(dims), "scale": 0.0, "zeroPoint": 0, "lifetime": lifetime}
    if value is not None:
        o["value"] = value
    return o


def _batch_matmul_case(x_dims, y_dims, out_dims, adj_x=False, adj_y=False, transpose_y=None, quant=None) -> dict:
    """A float32 BATCH_MATMUL case (inputs x, y; `transpose_y`: y arrives through a TRANSPOSE of that
    permutation, a view, as attention's keys do); `quant`: int8 with ((scale, zero point) of x, y, output)."""
    rng = np.random.default_rng(len(x_dims) * 100 + sum(x_dims) + sum(y_dims))
    f32 = "TENSOR_QUANT8_ASYMM_SIGNED" if quant else "TENSOR_FLOAT32"
    y_in = [y_dims[p] for p in np.argsort(transpose_y)] if transpose_y else y_dims
    operands = [_operand(f32, x_dims, "SUBGRAPH_INPUT"), _operand(f32, y_in, "SUBGRAPH_INPUT"),
                _operand("BOOL", [], "CONSTANT_COPY", [adj_x]), _operand("BOOL", [], "CONSTANT_COPY", [adj_y]),
                _operand(f32, out_dims, "SUBGRAPH_OUTPUT")]
    for k, (scale, zero_point) in zip((0, 1, 4), quant or ()):
        operands[k].update(scale=scale, zeroPoint=zero_point)
    operations = [{"type": "BATCH_MATMUL", "inputs": [0, 1, 2, 3], "outputs": [4]}]
    if transpose_y:
        operands += [_operand("TENSOR_INT32", [len(y_dims)], "CONSTANT_COPY", list(transpose_y)), _operand(f32, y_dims)]
        operations = [{"type": "TRANSPOSE", "inputs": [1, 5], "outputs": [6]},
                      {"type": "BATCH_MATMUL", "inputs": [0, 6, 2, 3], "outputs": [4]}]
    name = f"authored/batch_matmul {x_dims} x {y_dims} adj {adj_x} {adj_y} transposed {transpose_y} quant {quant}"
    return {"id": name, "operationTypes": sorted({op["type"] for op in operations}), "referenced": [],
            "main": {"operands": operands, "operations": operations, "inputIndexes": [0, 1], "outputIndexes": [4]},
            "inputs": [rng.integers(-128, 127, int(np.prod(d)), endpoint=True).tolist() if quant else
                       rng.standard_normal(int(np.prod(d))).astype(np.float32).tolist() for d in (x_dims, y_in)]}


def _mirror_pad_case(dims, pads, mode: int) -> dict:
    """A float32 MIRROR_PAD case with constant paddings (mode 0 REFLECT, 1 SYMMETRIC)."""
    rng = np.random.default_rng(sum(dims) * 10 + mode)
    f32 = "TENSOR_FLOAT32"
    out_dims = [n + a + b for n, (a, b) in zip(dims, pads)]
    operands = [_operand(f32, dims, "SUBGRAPH_INPUT"),
                _operand("TENSOR_INT32", [len(dims), 2], "CONSTANT_COPY", [v for row in pads for v in row]),
                _operand("INT32", [], "CONSTANT_COPY", [mode]), _operand(f32, out_dims, "SUBGRAPH_OUTPUT")]
    return {"id": f"authored/mirror_pad {dims} {pads} mode {mode}", "operationTypes": ["MIRROR_PAD"],
            "referenced": [],
            "main": {"operands": operands, "operations": [{"type": "MIRROR_PAD", "inputs": [0, 1, 2], "outputs": [3]}],
                     "inputIndexes": [0], "outputIndexes": [3]},
            "inputs": [rng.standard_normal(int(np.prod(dims))).astype(np.float32).tolist()]}


AUTHORED = [
    _mirror_pad_case([1, 512], [[0, 0], [16, 16]], 0),
    _mirror_pad_case([2, 3, 4], [[1, 1], [0, 2], [3, 0]], 1),
    _mirror_pad_case([1, 4, 5, 2], [[0, 0], [3, 3], [4, 1], [0, 0]], 0),
    _batch_matmul_case([2, 3, 4], [2, 4, 5], [2, 3, 5]),
    _batch_matmul_case([1, 4, 8, 6], [1, 4, 8, 6], [1, 4, 8, 8], adj_y=True),
    _batch_matmul_case([3, 5, 2], [3, 5, 4], [3, 2, 4], adj_x=True),
    _batch_matmul_case([2, 1, 3, 4], [1, 5, 4, 2], [2, 5, 3, 2]),
    _batch_matmul_case([1, 4, 32, 16], [1, 4, 16, 32], [1, 4, 32, 32], transpose_y=[0, 1, 3, 2]),
    _batch_matmul_case([1, 2, 32, 24], [1, 2, 32, 24], [1, 2, 32, 32], adj_y=True,
                       quant=((0.05, 3), (0.04, -2), (0.2, 1))),
    _batch_matmul_case([2, 5, 3], [2, 5, 4], [2, 3, 4], adj_x=True, quant=((0.5, 0), (0.25, 0), (0.001, -5))),
]


def _cases_by_op(per_op) -> dict:
    """{preparer code: [case, ...]}: the CTS (and AUTHORED) cases whose models use the code, at most
    `per_op` each (None: all), spread evenly over the cases in id order."""
    load_kernels()
    by_op = defaultdict(list)
    cts = [case for path in find_vector_files([str(CTS_DIR)]) for case in read_cases(path)]
    for case in cts + AUTHORED:
        if case.get("expectFailure"):
            continue
        for name in case.get("operationTypes", []):
            code = OperationCode[name]
            if code in PREPARERS:
                by_op[code].append(case)
    if per_op is None:
        return dict(by_op)
    chosen = {}
    for code, cases in by_op.items():
        cases.sort(key=lambda c: c["id"])
        step = max(1, len(cases) // per_op)
        chosen[code] = cases[::step][:per_op]
    return chosen


def _case_inputs(case) -> list:
    main = case["main"]
    arrays = []
    for k, idx in enumerate(main["inputIndexes"]):
        o = main["operands"][idx]
        values = case["inputs"][k]
        if values == [] and not (o["dimensions"] and 0 in o["dimensions"]):
            arrays.append(None)   # an omitted optional input
            continue
        arr = _array(values, C[o["type"]], o["dimensions"])
        if o["dimensions"] and 0 in o["dimensions"] and values == []:
            arr = arr.reshape(o["dimensions"])
        arrays.append(arr)
    return arrays


def _with_constant_parameters(case):
    """The case with every main-model input but the first turned into a constant of its value, or
    omitted where the case gives it no value (the CTS feeds an absent optional operand as an empty
    input); inputs of unknown dimensions stay inputs. None when nothing changes."""
    main = case["main"]
    operands = [dict(o) for o in main["operands"]]
    keep, values_kept = list(main["inputIndexes"][:1]), list(case["inputs"][:1])
    for idx, values in zip(main["inputIndexes"][1:], case["inputs"][1:]):
        dims = operands[idx]["dimensions"]
        if values == []:
            operands[idx].update(lifetime="NO_VALUE")
        elif 0 in dims or (not dims and operands[idx]["type"].startswith("TENSOR")):
            keep.append(idx)
            values_kept.append(values)
        else:
            operands[idx].update(lifetime="CONSTANT_COPY", value=values)
    if len(keep) == len(main["inputIndexes"]):
        return None
    return dict(case, id=case["id"] + " (constant parameters)", inputs=values_kept,
                main=dict(main, operands=operands, inputIndexes=keep))


def _with_other_output_quantization(case):
    """The case with each quantized model output's scale x 1.7 and zero point moved by 3 (within its
    type's range): the CTS's quantized MEAN cases keep the input's quantization, which the requantizing
    fast path leaves to the kernel. None when no output is quantized."""
    main = case["main"]
    operands = [dict(o) for o in main["operands"]]
    changed = False
    for idx in main["outputIndexes"]:
        o = operands[idx]
        if o["type"] in ("TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"):
            high = 255 if o["type"] == "TENSOR_QUANT8_ASYMM" else 127
            o.update(scale=o.get("scale", 1.0) * 1.7, zeroPoint=min(o.get("zeroPoint", 0) + 3, high))
            changed = True
    if not changed:
        return None
    return dict(case, id=case["id"] + " (other output quantization)", main=dict(main, operands=operands))


def _random_inputs(case, rng) -> list:
    """The case's inputs with every float and quantized tensor redrawn: floats normal (scale 3),
    quantized stored values uniform over their type's range."""
    main = case["main"]
    out = []
    for idx, arr in zip(main["inputIndexes"], _case_inputs(case)):
        code = C[main["operands"][idx]["type"]]
        if arr is None or code not in _RANDOM or arr.size == 0:
            out.append(arr)
        elif arr.dtype.kind == "f":
            out.append((rng.standard_normal(arr.shape) * 3).astype(arr.dtype))
        else:
            info = np.iinfo(arr.dtype)
            out.append(rng.integers(info.min, int(info.max) + 1, arr.shape).astype(arr.dtype))
    return out


def _run(compiled, arrays):
    try:
        values = compiled.run(arrays, RunState(DEFAULT_LOOP_TIMEOUT_S))
    except NnapiError as e:
        return e.code
    return [None if v is None else np.array(v.array, copy=True) for v in values]


def _disagreement(fast, plain):
    """None when the two runs agree (the same failure, or outputs within the rules above), else why not."""
    if not isinstance(fast, list) or not isinstance(plain, list):
        return None if fast == plain else f"fast path gave {fast!r}, the plain kernel {plain!r}"
    for k, (a, b) in enumerate(zip(fast, plain)):
        if a is None or b is None:
            if a is not b:
                return f"output {k}: one run gave no value"
            continue
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"output {k}: {a.dtype}{list(a.shape)} vs the plain kernel's {b.dtype}{list(b.shape)}"
        if a.dtype.kind != "f":
            if not np.array_equal(a, b):
                bad = np.flatnonzero(a.reshape(-1) != b.reshape(-1))
                return f"output {k}: {bad.size} of {a.size} values differ (first at {bad[0]})"
            continue
        x, y = a.astype(np.float64), b.astype(np.float64)
        same = (x == y) | (np.isnan(x) & np.isnan(y))
        finite = np.isfinite(y)
        scale = 1 + (np.abs(y[finite]).max() if finite.any() else 0)
        with np.errstate(invalid="ignore"):   # inf - inf: judged by `same`
            close = np.abs(x - y) <= FLOAT_BOUND[a.dtype] * scale
        if not (same | (finite & close)).all():
            j = np.flatnonzero(~(same | (finite & close)))[0]
            return f"output {k}: {x.reshape(-1)[j]!r} vs the plain kernel's {y.reshape(-1)[j]!r} at {j}"
    return None


def check(per_op=CASES_PER_OP, seed=0) -> tuple[dict, list]:
    """({preparer code: number of runs in which its fast path ran}, [disagreement messages])."""
    rng = np.random.default_rng(seed)
    covered: dict = defaultdict(int)
    problems = []
    seen = set()
    for code, cases in sorted(_cases_by_op(per_op).items(), key=lambda kv: kv[0].name):
        for case in cases:
            prepared = _check_case(case, rng, covered, problems, seen)
            if code not in prepared:
                variant = _with_constant_parameters(case)
                try:
                    if variant is not None:
                        _check_case(variant, rng, covered, problems, seen)
                except NnapiError:
                    pass   # an operand the operation may not omit: the variant is no valid model
    if per_op is not None:   # a preparer the spread missed (e.g. only some quantized cases take it): its other cases
        every = _cases_by_op(None)
        for code in sorted(set(every) - {c for c, n in covered.items() if n}, key=lambda c: c.name):
            variants = [v for case in every[code] for v in (case, _with_other_output_quantization(case)) if v]
            for case in variants:
                try:
                    if code in _check_case(case, rng, covered, problems, seen):
                        break
                except NnapiError:
                    pass   # the changed quantization makes no valid model for this operation
    return dict(covered), problems


def _check_case(case, rng, covered, problems, seen) -> set:
    """Run one case's model both ways on its inputs and on random ones; the codes it prepared."""
    memories: list = []
    model = build_model(case, memories)
    fast, plain = compile_model(model), compile_model(model, fast_paths=False)
    prepared = {s.code for sub in _all_compiled(fast) for s in sub.steps if s.run is not s.kernel}
    for label, arrays in (("case", _case_inputs(case)), ("random", _random_inputs(case, rng))):
        why = _disagreement(_run(fast, arrays), _run(plain, arrays))
        if why:
            problems.append(f"{case['id']} ({label} inputs): {why}")
        elif (case["id"], label) not in seen:
            for c in prepared:
                covered[c] += 1
        seen.add((case["id"], label))
    return prepared


def _all_compiled(compiled) -> list:
    """The compiled model and every compiled subgraph (IF/WHILE bodies)."""
    return list({id(c): c for c in [compiled, *compiled._cache.values()]}.values())


@pytest.fixture(scope="module")
def result():
    return check()


def test_every_fast_path_agrees_with_its_plain_kernel(result):
    _, problems = result
    assert not problems, "\n".join(problems[:30])


def test_every_preparer_is_covered(result):
    covered, _ = result
    missing = sorted(code.name for code in PREPARERS if not covered.get(code))
    assert not missing, f"preparers no conformance or random case exercised: {missing}"


if __name__ == "__main__":   # every CTS case of every preparer's operation (minutes)
    covered, problems = check(per_op=None)
    print("\n".join(problems) or "no disagreements")
    print(f"{len(covered)} of {len(PREPARERS)} preparers exercised: "
          + ", ".join(f"{c.name} {n}" for c, n in sorted(covered.items(), key=lambda kv: kv[0].name)))
    sys.exit(1 if problems or len(covered) < len(PREPARERS) else 0)
