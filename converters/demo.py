"""`nnapi demo`: the main job on a bundled sample model.

Converts a bundled TFLite sample to an NNAPI model, saves and reloads it,
prints which nodes NNAPI runs at each feature level, runs it with the
executor, and checks parity against LiteRT on seeded inputs."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import nnapi

# the bundled samples: the `samples` folder beside this package (in the source tree and in an installed wheel)
HERE = Path(__file__).resolve().parent.parent / "samples"
# the first sample that exists is the one the demo converts
DEMO_SAMPLES = ("mobilenet_int8.tflite", "mobilenet_float.tflite", "demo.tflite")


def demo_sample() -> Path:
    for name in DEMO_SAMPLES:
        if (HERE / name).exists():
            return HERE / name
    raise FileNotFoundError(f"no demo sample found in {HERE} (regenerate with python -m samples.make_samples)")


def run(out=sys.stdout) -> int:
    from .coverage import build_report, read_source
    from .coverage_render import blocking_text
    from .parity import check
    from .runners import MissingDependency
    from .tflite import convert

    path = demo_sample()
    print(f"1. convert {path.name} to NNAPI (feature level 8)", file=out)
    result = convert(path, feature_level=8)
    if not result.complete:
        for n in result.unsupported:
            print(f"   node {n.index} {n.op}: {n.reason}", file=out)
        return 2
    model = result.model
    with tempfile.TemporaryDirectory() as d:
        saved = Path(d) / (path.stem + ".nnapi")
        nnapi.save(model, saved)
        size = saved.stat().st_size
        model = nnapi.load(saved)
        print(f"   {len(result.nodes)} TFLite nodes -> {len(model.operations)} NNAPI operations, "
              f"{len(model.operands)} operands; saved and reloaded ({size:,} bytes); "
              f"needs feature level {model.min_feature_level()}", file=out)

        print("\n2. coverage per feature level (nodes on NNAPI, partitions)", file=out)
        report = build_report(read_source(path), 8)
        for level, s in report["per_feature_level"].items():
            print(f"   FL{level}: {s['supported_nodes']}/{s['nodes']} nodes, {s['partitions']} partition(s)"
                  + (f", blocked by {blocking_text(s['blocking_nodes'], most=3)}" if s["blocking_nodes"] else ""),
                  file=out)

        print("\n3. run with the executor and check parity against LiteRT (3 seeded samples, layerwise)", file=out)
        try:
            parity = check(str(path), converted=str(saved), samples=3, layerwise=True)
        except MissingDependency as e:
            print(f"   {e}", file=out)
            return 4
    for o in parity.outputs:
        hist = f", stored-unit diffs {o.lsb_histogram}" if o.lsb_histogram else ""
        print(f"   output {o.name!r} {o.dtype}{o.shape}: max |diff| {o.max_abs_error:.3g} (allowed {o.allowed:.3g}), "
              f"cosine {o.cosine:.6f}{hist} -> {'ok' if o.passed else 'MISMATCH'}", file=out)
    print(f"\n{'PASS' if parity.passed else 'MISMATCH'}: the converted model computes what the original computes",
          file=out)
    return 0 if parity.passed else 1
