"""Shape inference (the specs' `infer`, propagated by nnapi/shapes.py) against the CTS models.

For every CTS case the dimensions of every operation output in the main model
are erased (each extent unknown, rank kept), the model is rebuilt, and the
inferred shapes must equal what the CTS declares: the expected values come
from Android's test generator, not from our code. An extent may stay unknown
only for an output its spec lists in `value_dependent` (with the reason), or
for one computed from such an output. The original, fully declared models must
infer without a conflict.

Forms the CTS leaves out and operations without CTS vectors (BATCH_MATMUL,
PACK, MIRROR_PAD, REVERSE, ...) have hand-computed cases in
test_shape_inference_*.py.
"""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

import nnapi
from executor.conformance import build_model, find_vector_files, read_cases
from nnapi.ops import SPECS
from nnapi.shapes import ShapeInference

CTS = Path(__file__).resolve().parents[1] / "data" / "nnapi-cts"
FILES = find_vector_files([str(CTS)])


def _erased(case: dict) -> dict:
    """The case with every operation output of the main model left at unknown extents (rank kept)."""
    case = copy.deepcopy(case)
    main = case["main"]
    for op in main["operations"]:
        for o in op["outputs"]:
            main["operands"][o]["dimensions"] = [0] * len(main["operands"][o]["dimensions"])
    return case


def _value_dependent(model) -> set:
    """Operands whose extents depend on input values: outputs a spec lists in `value_dependent`, and
    everything computed from them (e.g. ROI_ALIGN over the boxes BOX_WITH_NMS_LIMIT kept)."""
    tainted: set = set()
    for k, op in enumerate(model.operations):
        spec = SPECS[op.code]
        view = spec.view(model, k)
        own = set() if view is None else {
            i for name, idx in view._out.items() if name in spec.value_dependent
            for i in (idx if isinstance(idx, list) else [idx])}
        if own or tainted.intersection(op.inputs):
            tainted.update(own or op.outputs)
            if tainted.intersection(op.inputs):
                tainted.update(op.outputs)
    return tainted


def _check_case(case: dict) -> list[str]:
    problems = []
    model = build_model(case, [])
    conflicts = ShapeInference(model).conflicts
    problems += [f"{case['name']}: declared model: {c}" for c in conflicts]
    erased = build_model(_erased(case), [])
    inferred = ShapeInference(erased)
    value_dependent = _value_dependent(erased)
    declared = case["main"]["operands"]
    for k, op in enumerate(case["main"]["operations"]):
        for o in op["outputs"]:
            want = tuple(declared[o]["dimensions"])
            if not want or 0 in want:
                continue   # the CTS itself leaves it unknown (or it is a scalar)
            got = inferred.shape(o)
            if got == want:
                continue
            if got is not None and len(got) == len(want) and all(g in (0, w) for g, w in zip(got, want)) \
                    and o in value_dependent:
                continue
            problems.append(f"{case['name']}: operation {k} ({op['type']}) output operand {o}: inferred "
                            f"{got}, the CTS declares {list(want)}")
    return problems


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name.split('.')[0]}" for p in FILES])
def test_inferred_shapes_equal_the_cts_declarations(path):
    problems = []
    for case in read_cases(path):
        if case.get("expectFailure"):
            continue
        problems += _check_case(case)
    assert not problems, "\n".join(problems[:10]) + (f"\n... {len(problems)} in all" if len(problems) > 10 else "")


def test_every_spec_infers_shapes():
    missing = sorted(code.name for code, spec in SPECS.items()
                     if spec.infer is None and code != nnapi.OperationCode.OEM_OPERATION)
    assert missing == []


def test_value_dependent_outputs_name_real_outputs_and_say_why():
    for code, spec in SPECS.items():
        outputs = {a.name for f in spec.forms for a in f.outputs}
        for name, why in spec.value_dependent.items():
            assert name in outputs, f"{code.name}: value_dependent names {name!r}, not an output"
            assert isinstance(why, str) and len(why) > 10, f"{code.name}: {name!r} needs a reason"
