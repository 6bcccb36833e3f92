"""`nnapi parity --partial --samples K`: every per-output statistic of a partition record covers all K
samples, aggregated like the whole-model outputs are (max errors, min cosine, summed LSB histogram)."""
import math

import numpy as np
import pytest

from converters.parity import OutputParity, check
from converters.parity_report import merge_parity
from converters.parity_render import render
from tests.conftest import ROOT

INT8 = str(ROOT / "samples" / "mobilenet_int8.tflite")  # level 1 splits it into partitions
SAMPLES = 3


def _aggregate(per_sample: list[dict]) -> dict:
    """The documented aggregation over samples, written out independently of converters.parity."""
    hist = {k: sum(o["lsb_histogram"][k] for o in per_sample) for k in ("0", "1", "2", ">2")}
    return {"max_abs_error": max(o["max_abs_error"] for o in per_sample),
            "max_rel_error": max(o["max_rel_error"] for o in per_sample),
            "mean_abs_error": max(o["mean_abs_error"] for o in per_sample),
            "cosine": min(o["cosine"] for o in per_sample),
            "lsb_histogram": hist, "exact_fraction": hist["0"] / sum(hist.values()),
            "passed": all(o["passed"] for o in per_sample)}


def _single_samples(**kw) -> list[dict]:
    # sample k of a K-sample check uses seed + k: the same inputs one seed at a time
    return [check(INT8, feature_level=1, samples=1, seed=s, **kw).as_dict() for s in range(SAMPLES)]


def test_partition_statistics_cover_every_sample():
    singles = _single_samples(partial=True)
    merged = check(INT8, feature_level=1, samples=SAMPLES, partial=True).as_dict()
    assert merged["samples"] == SAMPLES and merged["partitions"]
    differing = 0
    for k, part in enumerate(merged["partitions"]):
        assert part["passed"] == all(s["partitions"][k]["passed"] for s in singles)
        for j, out in enumerate(part["outputs"]):
            per = [s["partitions"][k]["outputs"][j] for s in singles]
            differing += len({str(o["lsb_histogram"]) for o in per}) > 1
            expected = _aggregate(per)
            assert {key: out[key] for key in expected} == expected, (k, j)
            assert out["name"] == per[0]["name"] and out["shape"] == per[0]["shape"]
    assert differing, "the samples should not all agree, or this test checks nothing"


def test_partition_record_keeps_the_documented_fields():
    merged = check(INT8, feature_level=1, samples=2, partial=True).as_dict()
    fields = {"name", "shape", "dtype", "max_abs_error", "max_rel_error", "mean_abs_error", "cosine",
              "lsb_histogram", "exact_fraction", "passed", "allowed", "tolerance", "spread", "top1_agreement",
              "top5_agreement", "classified_rows", "spread_ratio"}
    for part in merged["partitions"]:
        assert set(part) == {"index", "nodes", "passed", "outputs", "fed"}
        for out in part["outputs"]:
            assert set(out) == fields
    assert "partition 0" in render(check(INT8, feature_level=1, samples=2, partial=True), "html")


def test_whole_model_outputs_aggregate_the_same_way():
    # level 4 converts the whole model: its outputs take the non-partial path
    singles = [check(INT8, feature_level=4, samples=1, seed=s).as_dict() for s in range(SAMPLES)]
    merged = check(INT8, feature_level=4, samples=SAMPLES).as_dict()
    for j, out in enumerate(merged["outputs"]):
        expected = _aggregate([s["outputs"][j] for s in singles])
        assert {key: out[key] for key in expected} == expected


def _par(err, allowed, passed, **kw):
    return OutputParity("y", [2], "float32", max_abs_error=err, allowed=allowed, passed=passed, **kw)


@pytest.mark.parametrize("samples, shown", [
    # every sample passes: the tolerance of the sample with the largest error, so max <= allowed
    ([(1e-6, 2e-5, True), (3e-6, 4e-5, True), (2e-6, 1e-5, True)], (3e-6, 4e-5)),
    # one fails: a failing sample's tolerance, so the shown max exceeds the shown allowed
    ([(3e-5, 5e-5, True), (2e-5, 1e-5, False), (1e-6, 9e-5, True)], (3e-5, 1e-5)),
])
def test_allowed_agrees_with_the_merged_pass_flag(samples, shown):
    merged = None
    for err, allowed, passed in samples:
        p = _par(err, allowed, passed)
        merged = p if merged is None else merge_parity(merged, p)
    assert (merged.max_abs_error, merged.allowed) == shown
    assert merged.passed == (merged.max_abs_error <= merged.allowed)


def test_nan_error_is_not_hidden_by_sample_order():
    for first, second in ((float("nan"), 1e-6), (1e-6, float("nan"))):
        merged = merge_parity(_par(first, 1e-5, not math.isnan(first)), _par(second, 1e-5, not math.isnan(second)))
        assert math.isnan(merged.max_abs_error) and not merged.passed


def test_histogram_survives_a_sample_without_one():
    hist = {"0": 3, "1": 1, "2": 0, ">2": 0}
    shape_mismatch = _par(float("inf"), 0.0, False)
    merged = merge_parity(shape_mismatch, _par(1.0, 1.0, True, lsb_histogram=dict(hist), exact_fraction=0.75,
                                         diffs=np.array([0, 0, 0, 1.0])))
    assert merged.lsb_histogram == hist and merged.exact_fraction == 0.75 and not merged.passed
