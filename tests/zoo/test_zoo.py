"""Every zoo model through the CLI, held to tests/zoo/baseline.json (see tests/zoo/README.md).

The models run once per session, each in its own process, NNAPI_ZOO_JOBS at a time (default 2);
NNAPI_ZOO_ONLY=SUBSTRING runs a subset while developing. Improvements over the baseline are printed
at the end of the run, so the baseline can be tightened in the same change
(`python -m tests.zoo --update-baseline`).
"""
from __future__ import annotations

import os

import pytest

from tests.zoo import manifest, table
from tests.zoo.runner import run_all

MODELS = manifest.select(manifest.load(), os.environ.get("NNAPI_ZOO_ONLY"))
BASELINE = table.load_baseline()
IMPROVEMENTS: list[str] = []


@pytest.fixture(scope="session")
def zoo_rows() -> dict:
    jobs = int(os.environ.get("NNAPI_ZOO_JOBS", "2"))
    return {r["id"]: r for r in run_all(MODELS, jobs=jobs)}


@pytest.mark.parametrize("model", MODELS, ids=[m.id for m in MODELS])
def test_no_worse_than_baseline(model, zoo_rows):
    row = zoo_rows[model.id]
    worse, better = table.compare(row, BASELINE.get(model.id))
    if better:
        IMPROVEMENTS.append(f"{model.id}: " + "; ".join(better))
    assert not worse, f"{model.id} did worse than its baseline: " + "; ".join(worse)


def test_every_model_has_a_baseline_entry():
    missing = [m.id for m in manifest.load() if m.id not in BASELINE]
    stale = sorted(set(BASELINE) - {m.id for m in manifest.load()})
    assert not missing and not stale, (f"no baseline for {missing}; baseline entries without a model {stale} "
                                       "(run python -m tests.zoo --update-baseline)")


def test_doc_lists_every_model():
    doc = (manifest.ZOO_DIR.parent.parent / "docs" / "zoo.md").read_text()
    absent = [m.id for m in manifest.load() if f"| {m.id} |" not in doc]
    assert not absent, f"docs/zoo.md has no row for {absent} (run python -m tests.zoo)"


def test_zoo_is_large_and_covers_every_category():
    models = manifest.load()
    assert len(models) >= 70, len(models)
    categories = {m.category for m in models}
    for needed in ("mediapipe", "ocr", "wakeword", "wakeword-streaming", "onnx-zoo"):
        assert needed in categories, needed
    assert any(c.startswith("tf-") for c in categories) and any(c.startswith("torch-") for c in categories)
    assert any(c.startswith("ortq-") for c in categories)
