"""Every zoo model through the CLI, held to tests/zoo/baseline.json and to its manifest `expect`
(see tests/zoo/README.md).

The models run once per session, each in its own process, NNAPI_ZOO_JOBS at a time (default 2);
NNAPI_ZOO_ONLY=SUBSTRING runs a subset while developing. A model that does worse than its baseline
fails, and so does one that does better beyond the noise margin while the baseline still records the
old figure: tighten it in the same change (`python -m tests.zoo --only ID --update-baseline`).
Offline, the models from pinned wheels skip with one line saying what they need; under CI (CI=true)
they fail instead.
"""
from __future__ import annotations

import os

import pytest

from tests.zoo import fetch, manifest, ratchet, table
from tests.zoo.runner import run_all

MODELS = manifest.select(manifest.load(), os.environ.get("NNAPI_ZOO_ONLY"))
BASELINE = ratchet.load()


@pytest.fixture(scope="session")
def zoo_rows() -> dict:
    """Rows by model id; the value is a string (why it could not run) for the models of missing wheels."""
    offline = fetch.missing_wheels({m.wheel for m in MODELS if m.wheel})
    runnable = [m for m in MODELS if not (offline and m.wheel)]
    jobs = int(os.environ.get("NNAPI_ZOO_JOBS", "2"))
    rows = {r["id"]: r for r in run_all(runnable, jobs=jobs)}
    rows.update({m.id: offline for m in MODELS if m.id not in rows})
    return rows


def _row(model, zoo_rows) -> dict:
    row = zoo_rows[model.id]
    if isinstance(row, str):
        fetch.skip_offline(row)
    return row


@pytest.mark.parametrize("model", MODELS, ids=[m.id for m in MODELS])
def test_no_worse_than_baseline_and_no_better_unrecorded(model, zoo_rows):
    row = _row(model, zoo_rows)
    worse, better = ratchet.compare(row, BASELINE.get(model.id))
    assert not worse, f"{model.id} did worse than its baseline: " + "; ".join(worse)
    assert not better, (f"{model.id} did better than its baseline records: " + "; ".join(better)
                        + f". Tighten it in this change: python -m tests.zoo --only {model.id} --update-baseline")


@pytest.mark.parametrize("model", MODELS, ids=[m.id for m in MODELS])
def test_meets_its_expect_or_names_the_gap(model, zoo_rows):
    gap = table.expectation_gap(_row(model, zoo_rows))
    if gap:
        assert model.known_gap, (f"{model.id} does not meet its expect ({model.expect}): {gap}. Fix it, or give "
                                 f"its entry in {model.manifest} known_gap = \"what is missing\"")
    else:
        assert not model.known_gap, (f"{model.id} meets its expect ({model.expect}) now: remove its known_gap "
                                     f"({model.known_gap!r}) from {model.manifest}")


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
