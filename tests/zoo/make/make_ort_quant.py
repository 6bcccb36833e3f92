"""Quantize PyTorch exports with onnxruntime.quantization for the real-model zoo (issue 16, section 3).

Run with the same throwaway venv as make_torch_models.py (torch, torchvision, onnx,
onnxruntime; see README-torch.md):

    /tmp/torchvenv/bin/python tests/zoo/make/make_ort_quant.py [--only SUBSTRING]

The float sources are full-weight TorchScript exports built by make_torch_models.py
(same seeded weights; the classifiers with 100 classes so that the int8 files stay
small). Each goes through quant_pre_process, then one of:

- qdq-u8:  quantize_static, QDQ format, uint8 activations, per-channel int8 weights
- qdq-s8:  quantize_static, QDQ format, int8 activations, per-channel int8 weights
- qop:     quantize_static, QOperator format (QLinearConv, ...), uint8 activations,
           per-channel int8 weights
- dynamic: quantize_dynamic, int8 weights (DynamicQuantizeLinear + MatMulInteger /
           ConvInteger; com.microsoft DynamicQuantizeLSTM for nn.LSTM)

Static calibration uses a seeded reader over the input's natural range (MinMax).
Writes tests/zoo/models/ortq/*.onnx and tests/zoo/manifest/ortq.toml, atomically.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import torch
import torchvision
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_dynamic, quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_torch_models as mtm  # noqa: E402  (sibling script: the float sources)

OUT_DIR = mtm.ZOO / "models" / "ortq"
MANIFEST = mtm.ZOO / "manifest" / "ortq.toml"
SCRIPT = "make/make_ort_quant.py"
CALIBRATION_SAMPLES = 16

STATIC = {
    "qdq-u8": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8),
    "qdq-s8": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8),
    "qop": dict(quant_format=QuantFormat.QOperator, activation_type=QuantType.QUInt8),
}
CATEGORY = {"qdq-u8": "ortq-qdq", "qdq-s8": "ortq-qdq", "qop": "ortq-qop",
            "dynamic": "ortq-dynamic"}


@dataclass
class Job:
    spec: mtm.Spec
    dynamic_source: bool  # quantize the dynamic_axes export (else the fixed one)
    variants: tuple[str, ...]
    notes: str = ""


def jobs() -> list[Job]:
    tv = torchvision.models
    by_arch = {s.arch: s for s in mtm.specs()}
    mobilenet = mtm.image_spec(
        "mobilenet_v2", lambda: tv.mobilenet_v2(width_mult=0.35, num_classes=100), 13, False,
        lambda m: m.classifier[1], notes="width_mult=0.35, 100 classes")
    squeezenet = mtm.image_spec(
        "squeezenet1_1", lambda: tv.squeezenet1_1(num_classes=100), 17, False,
        lambda m: m.classifier[1], notes="100 classes")
    return [
        Job(mobilenet, False, ("qdq-u8", "qdq-s8", "qop")),
        Job(by_arch["resnet_small"], False, ("qdq-u8", "qdq-s8", "qop", "dynamic")),
        Job(squeezenet, False, ("qdq-s8", "qop")),
        Job(by_arch["transformer_encoder"], True, ("dynamic",)),
        Job(by_arch["transformer_encoder"], False, ("qdq-s8",)),
        Job(by_arch["lstm"], True, ("dynamic",)),
        Job(by_arch["bilstm"], True, ("dynamic",)),
    ]


class SeededReader(CalibrationDataReader):
    """CALIBRATION_SAMPLES uniform samples in each input's range, fixed shapes."""

    def __init__(self, spec: mtm.Spec, seed: int):
        rng = np.random.default_rng(seed)
        self.samples = [
            {name: rng.uniform(*spec.ranges[name], size=shape).astype(np.float32)
             for name, shape in spec.inputs.items()}
            for _ in range(CALIBRATION_SAMPLES)]
        self.pos = 0

    def get_next(self):
        if self.pos >= len(self.samples):
            return None
        self.pos += 1
        return self.samples[self.pos - 1]

    def rewind(self):
        self.pos = 0


def float_source(job: Job, tmp: Path) -> tuple[Path, str]:
    """The float export after quant_pre_process; the second value says how it was run."""
    model, example = mtm.build_model(job.spec)
    proto = mtm.export(model, job.spec, example, job.dynamic_source)
    raw = tmp / f"{job.spec.arch}_float.onnx"
    onnx.save(proto, raw)
    pre = tmp / f"{job.spec.arch}_pre.onnx"
    try:
        quant_pre_process(raw, pre)
        how = "quant_pre_process"
    except Exception as exc:  # the symbolic shape inference asserts on some graphs
        quant_pre_process(raw, pre, skip_symbolic_shape=True)
        how = f"quant_pre_process(skip_symbolic_shape=True) ({type(exc).__name__})"
    return pre, how


def quantize(job: Job, variant: str, source: Path, out: Path) -> None:
    if variant == "dynamic":
        quantize_dynamic(source, out, weight_type=QuantType.QInt8, per_channel=False)
        return
    reader = SeededReader(job.spec, mtm.seed_for(job.spec.arch) + 2)
    quantize_static(source, out, reader, per_channel=True, weight_type=QuantType.QInt8,
                    **STATIC[variant])


def make(job: Job) -> list[dict]:
    entries = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        source, how = float_source(job, tmp)
        for variant in job.variants:
            q = tmp / f"{variant}.onnx"
            quantize(job, variant, source, q)
            proto = onnx.load(q)
            onnx.checker.check_model(proto)
            name = f"{job.spec.arch}_{variant.replace('-', '_')}.onnx"
            mtm.write_atomic(OUT_DIR / name, proto.SerializeToString())
            entries.append(manifest_entry(job, variant, name, how))
            print(f"wrote models/ortq/{name}: {len(proto.graph.node)} nodes, "
                  f"{(OUT_DIR / name).stat().st_size} bytes", flush=True)
    return entries


def manifest_entry(job: Job, variant: str, name: str, how: str) -> dict:
    spec = job.spec
    if variant == "dynamic":
        method = "quantize_dynamic, int8 weights"
    else:
        act = "uint8" if variant.endswith("u8") or variant == "qop" else "int8"
        fmt = "QOperator" if variant == "qop" else "QDQ"
        method = (f"quantize_static {fmt}, {act} activations, per-channel int8 weights, "
                  f"MinMax over {CALIBRATION_SAMPLES} seeded samples")
    source = "dynamic_axes" if job.dynamic_source else "fixed-shape"
    notes = (f"onnxruntime {onnxruntime.__version__} {method}; {how}; source: torch "
             f"{torch.__version__.split('+')[0]} {source} export, opset {spec.opset}")
    return mtm.entry_for(spec, f"ortq/{spec.arch}/{variant}", CATEGORY[variant],
                         f"models/ortq/{name}", SCRIPT, job.dynamic_source, notes)


def main(argv=None) -> int:
    return mtm.run(argv, __doc__, jobs(), lambda job: job.spec.arch, make, MANIFEST,
                   f"onnxruntime {onnxruntime.__version__} quantizations of PyTorch exports "
                   f"(torch {torch.__version__}), written by {SCRIPT}; do not edit by hand.")


if __name__ == "__main__":
    sys.exit(main())
