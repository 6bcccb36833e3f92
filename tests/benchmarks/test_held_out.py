"""The held-out benchmark models (benchmarks/held_out/): the manifest loads, every file is there and small."""
from pathlib import Path

from tests.zoo.manifest import load

HELD_OUT = Path(__file__).resolve().parents[2] / "benchmarks" / "held_out"


def test_held_out_manifest_loads_and_every_file_exists_within_the_size_limits():
    models = load(HELD_OUT / "manifest")
    assert models, "no held-out models"
    total = 0
    for m in models:
        assert m.id.startswith("held-out/") and m.file and m.expect == "full", m.id
        path = HELD_OUT / m.file
        assert path.is_file(), f"{m.id}: {path} is missing"
        assert (HELD_OUT / m.script).is_file(), f"{m.id}: no script {m.script}"
        size = path.stat().st_size
        assert size < 2 << 20, f"{m.id}: {size} bytes"
        total += size
    assert total < 8 << 20
    # float and quantized models of both source formats
    assert {m.category for m in models} >= {"tf-float32", "tf-int8", "torch-fixed"}


def test_held_out_ids_are_not_zoo_ids():
    assert not {m.id for m in load(HELD_OUT / "manifest")} & {m.id for m in load()}
