"""Export the PyTorch part of the real-model zoo (issue 16, section 3).

Run with a throwaway venv that has torch, torchvision and onnx (never the project's
own environment; see README-torch.md):

    /tmp/torchvenv/bin/python tests/zoo/make/make_torch_models.py [--only SUBSTRING]

Every architecture is built with seeded random weights in eval mode and exported with
the TorchScript exporter (torch.onnx.export(..., dynamo=False)) twice: with fixed
shapes and with dynamic_axes, as published models are. BatchNorm statistics are
randomised (the exporter folds them into the convolutions, so folding bugs show) and
classifier heads are rescaled so the outputs spread. Architectures whose weights
exceed the zoo's 2 MB file limit are written in onnx's "light" form: every initializer
with more than 1024 elements becomes a ConstantOfShape(0) node under the same name;
the zoo loader fills those with seeded random weights (manifest `light = true`).

Writes tests/zoo/models/torch/*.onnx and tests/zoo/manifest/torch.toml, atomically.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
import torch
import torch.nn.functional as F
import torchvision
from onnx import helper, numpy_helper
from torch import nn
from torchvision.models.resnet import BasicBlock

ZOO = Path(__file__).resolve().parents[1]
OUT_DIR = ZOO / "models" / "torch"
MANIFEST = ZOO / "manifest" / "torch.toml"
SCRIPT = "make/make_torch_models.py"
LIGHT_THRESHOLD = 1024  # initializers with more elements become ConstantOfShape fills
TV_LICENCE = "BSD-3-Clause (torchvision architecture); generated, random weights"
NN_LICENCE = "BSD-3-Clause (torch.nn layers); generated, random weights"
IMAGE_RANGE = [-2.0, 2.5]  # ImageNet-normalised pixels span about -2.1 .. 2.6


@dataclass
class Spec:
    arch: str
    build: Callable[[], nn.Module]
    inputs: dict[str, list[int]]  # name -> fixed shape
    outputs: list[str]
    opset: int
    dynamic: dict[str, dict[int, str]]  # name -> {axis: dim_param}, inputs and outputs
    ranges: dict[str, list[float]]
    licence: str
    light: bool = False
    notes: str = ""
    head: Callable[[nn.Module], nn.Module] | None = None  # layer whose output spread is set


# ---------------------------------------------------------------- small architectures

def resnet_small() -> nn.Module:
    """CIFAR-style ResNet from torchvision's BasicBlock: 16/32/64 channels, 32x32 input."""

    def down(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 1, 2, bias=False), nn.BatchNorm2d(cout))

    return nn.Sequential(
        nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
        BasicBlock(16, 16),
        BasicBlock(16, 32, stride=2, downsample=down(16, 32)),
        BasicBlock(32, 64, stride=2, downsample=down(32, 64)),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    )


class TokenTransformer(nn.Module):
    """Feature frames -> nn.TransformerEncoder (post-norm, ReLU) -> per-token logits."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(40, 64)
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(64, 12)

    def forward(self, features):
        return self.head(self.encoder(self.proj(features)))


class LstmTagger(nn.Module):
    """Streaming-style LSTM: state in, state out."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(40, 64, num_layers=1, batch_first=True)
        self.head = nn.Linear(64, 12)

    def forward(self, features, h0, c0):
        y, (h, c) = self.lstm(features, (h0, c0))
        return self.head(y), h, c


class BiLstmTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(40, 48, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(96, 12)

    def forward(self, features):
        return self.head(self.lstm(features)[0])


class GruTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(40, 64, num_layers=2, batch_first=False)
        self.head = nn.Linear(64, 12)

    def forward(self, features):  # [time, batch, 40], the RNN default layout
        return self.head(self.gru(features)[0])


def vit_tiny() -> nn.Module:
    return torchvision.models.VisionTransformer(
        image_size=64, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128,
        num_classes=10)


def conv_bn_relu1d(cin, cout, k, stride=1):
    return [nn.Conv1d(cin, cout, k, stride), nn.BatchNorm1d(cout), nn.ReLU()]


def audio_m5() -> nn.Module:
    """M5-style raw-waveform keyword net (Dai et al. 2017), reduced width."""
    return nn.Sequential(
        *conv_bn_relu1d(1, 16, 80, 4), nn.MaxPool1d(4),
        *conv_bn_relu1d(16, 32, 3), nn.MaxPool1d(4),
        *conv_bn_relu1d(32, 64, 3), nn.MaxPool1d(4),
        *conv_bn_relu1d(64, 64, 3),
        nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 35),
    )


def double_conv(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    """Four levels; each decoder level upsamples a different way (all seen in the wild)."""

    def __init__(self, widths=(8, 16, 32, 48)):
        super().__init__()
        w1, w2, w3, w4 = widths
        self.enc = nn.ModuleList([double_conv(3, w1), double_conv(w1, w2), double_conv(w2, w3),
                                  double_conv(w3, w4)])
        self.bottom = double_conv(w4, w4)
        self.up4 = nn.ConvTranspose2d(w4, w4, 2, stride=2)
        self.dec4 = double_conv(2 * w4, w3)
        self.up3 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.dec3 = double_conv(2 * w3, w2)
        self.dec2 = double_conv(2 * w2, w1)
        self.dec1 = double_conv(2 * w1, w1)
        self.out = nn.Conv2d(w1, 2, 1)

    def forward(self, image):
        skips, x = [], image
        for i, block in enumerate(self.enc):
            x = block(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bottom(x)
        x = self.dec4(torch.cat([self.up4(x), skips[3]], 1))
        x = self.dec3(torch.cat([self.up3(x), skips[2]], 1))
        x = F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
        x = self.dec2(torch.cat([x, skips[1]], 1))
        x = F.interpolate(x, size=skips[0].shape[-2:], mode="nearest")
        x = self.dec1(torch.cat([x, skips[0]], 1))
        return self.out(x)


def conv_bn_silu(cin, cout, k=3, s=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout),
                         nn.SiLU())


class YoloTiny(nn.Module):
    """YOLOv5-style: strided backbone, three detection levels, sigmoid + grid decode in the graph."""

    def __init__(self, nc=4, na=3):
        super().__init__()
        self.no, self.na = nc + 5, na
        self.stem = nn.Sequential(conv_bn_silu(3, 16, 3, 2), conv_bn_silu(16, 32, 3, 2),
                                  conv_bn_silu(32, 32))
        self.p3 = conv_bn_silu(32, 48, 3, 2)
        self.p4 = conv_bn_silu(48, 64, 3, 2)
        self.p5 = conv_bn_silu(64, 96, 3, 2)
        self.detect = nn.ModuleList(nn.Conv2d(c, self.no * na, 1) for c in (48, 64, 96))
        self.strides = (8, 16, 32)
        anchors = torch.tensor([[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119],
                                [116, 90, 156, 198, 373, 326]], dtype=torch.float32)
        self.register_buffer("anchor_grid", anchors.view(3, 1, na, 1, 1, 2))

    def forward(self, images):
        x3 = self.p3(self.stem(images))
        x4 = self.p4(x3)
        x5 = self.p5(x4)
        out = []
        for i, x in enumerate((x3, x4, x5)):
            x = self.detect[i](x)
            bs, _, ny, nx = x.shape
            x = x.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            y = x.sigmoid()
            yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
            grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float()
            xy = (y[..., 0:2] * 2 - 0.5 + grid) * self.strides[i]
            wh = (y[..., 2:4] * 2) ** 2 * self.anchor_grid[i]
            out.append(torch.cat((xy, wh, y[..., 4:]), -1).view(bs, -1, self.no))
        return torch.cat(out, 1)


class SegOut(nn.Module):
    """torchvision segmenters return a dict; published exports take its 'out'."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, image):
        return self.model(image)["out"]


# ---------------------------------------------------------------- the zoo list

def image_spec(arch, build, opset, light, head, size=224, notes="", spatial=True):
    axes = {0: "batch", 2: "height", 3: "width"} if spatial else {0: "batch"}
    return Spec(arch, build, {"input": [1, 3, size, size]}, ["logits"], opset,
                {"input": axes, "logits": {0: "batch"}},
                {"input": IMAGE_RANGE}, TV_LICENCE, light=light, head=head, notes=notes)


def specs() -> list[Spec]:
    tv = torchvision.models
    seg = torchvision.models.segmentation
    return [
        image_spec("resnet18", lambda: tv.resnet18(), 13, True, lambda m: m.fc),
        image_spec("mobilenet_v2", lambda: tv.mobilenet_v2(width_mult=0.35), 13, True,
                   lambda m: m.classifier[1], notes="width_mult=0.35"),
        image_spec("squeezenet1_1", lambda: tv.squeezenet1_1(), 17, True,
                   lambda m: m.classifier[1]),
        image_spec("shufflenet_v2_x0_5", lambda: tv.shufflenet_v2_x0_5(), 13, True,
                   lambda m: m.fc, notes="channel shuffle = Reshape/Transpose/Reshape"),
        image_spec("efficientnet_b0", lambda: tv.efficientnet_b0(), 17, True,
                   lambda m: m.classifier[1], notes="SiLU, squeeze-excitation"),
        image_spec("densenet121", lambda: tv.densenet121(), 13, True, lambda m: m.classifier),
        image_spec("mobilenet_v3_small", lambda: tv.mobilenet_v3_small(), 13, True,
                   lambda m: m.classifier[3],
                   notes="hardswish below opset 14 = HardSigmoid * x; squeeze-excitation"),
        Spec("lraspp_mobilenet_v3_large",
             lambda: SegOut(seg.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                          num_classes=21)),
             {"input": [1, 3, 256, 256]}, ["out"], 17,
             {"input": {0: "batch", 2: "height", 3: "width"},
              "out": {0: "batch", 2: "height", 3: "width"}},
             {"input": IMAGE_RANGE}, TV_LICENCE, light=True,
             head=lambda m: m.model.classifier.high_classifier,
             notes="hardswish, squeeze-excitation, bilinear Resize to the input size"),
        Spec("deeplabv3_mobilenet_v3_large",
             lambda: SegOut(seg.deeplabv3_mobilenet_v3_large(
                 weights=None, weights_backbone=None, num_classes=21, aux_loss=False)),
             {"input": [1, 3, 256, 256]}, ["out"], 13,
             {"input": {0: "batch", 2: "height", 3: "width"},
              "out": {0: "batch", 2: "height", 3: "width"}},
             {"input": IMAGE_RANGE}, TV_LICENCE, light=True,
             head=lambda m: m.model.classifier[4],
             notes="dilated convolutions, ASPP with global pooling branch, bilinear Resize"),
        image_spec("resnet_small", resnet_small, 13, False, lambda m: m[-1], size=32,
                   notes="CIFAR-style ResNet from torchvision BasicBlock, 16/32/64 channels"),
        image_spec("vit_tiny", vit_tiny, 17, False, lambda m: m.heads.head, size=64,
                   notes="torchvision VisionTransformer: 8x8 patch conv, 2 layers, width 64; "
                         "the position embedding fixes height and width", spatial=False),
        Spec("transformer_encoder", TokenTransformer, {"features": [1, 32, 40]}, ["logits"], 17,
             {"features": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}},
             {"features": [-2.0, 2.0]}, NN_LICENCE, head=lambda m: m.head,
             notes="nn.TransformerEncoder, 2 post-norm layers, d_model 64, 4 heads"),
        Spec("lstm", LstmTagger, {"features": [1, 50, 40], "h0": [1, 1, 64], "c0": [1, 1, 64]},
             ["logits", "hn", "cn"], 13,
             {"features": {0: "batch", 1: "time"}, "h0": {1: "batch"}, "c0": {1: "batch"},
              "logits": {0: "batch", 1: "time"}, "hn": {1: "batch"}, "cn": {1: "batch"}},
             {"features": [-1.0, 1.0], "h0": [-1.0, 1.0], "c0": [-1.0, 1.0]}, NN_LICENCE,
             head=lambda m: m.head, notes="nn.LSTM batch_first with initial state inputs"),
        Spec("bilstm", BiLstmTagger, {"features": [1, 50, 40]}, ["logits"], 17,
             {"features": {0: "batch", 1: "time"}, "logits": {0: "batch", 1: "time"}},
             {"features": [-1.0, 1.0]}, NN_LICENCE, head=lambda m: m.head,
             notes="nn.LSTM, 2 bidirectional layers, hidden 48"),
        Spec("gru", GruTagger, {"features": [50, 1, 40]}, ["logits"], 13,
             {"features": {0: "time", 1: "batch"}, "logits": {0: "time", 1: "batch"}},
             {"features": [-1.0, 1.0]}, NN_LICENCE, head=lambda m: m.head,
             notes="nn.GRU, 2 layers, time-major"),
        Spec("audio_m5", audio_m5, {"waveform": [1, 1, 16000]}, ["logits"], 13,
             {"waveform": {0: "batch", 2: "samples"}, "logits": {0: "batch"}},
             {"waveform": [-1.0, 1.0]}, NN_LICENCE, head=lambda m: m[-1],
             notes="Conv1d raw-waveform net, BatchNorm1d, MaxPool1d"),
        Spec("unet", UNet, {"image": [1, 3, 64, 64]}, ["mask"], 13,
             {"image": {0: "batch", 2: "height", 3: "width"},
              "mask": {0: "batch", 2: "height", 3: "width"}},
             {"image": IMAGE_RANGE}, NN_LICENCE, head=lambda m: m.out,
             notes="ConvTranspose2d, bilinear align_corners True and False, nearest to a size"),
        Spec("yolo_tiny", YoloTiny, {"images": [1, 3, 128, 128]}, ["detections"], 17,
             {"images": {0: "batch", 2: "height", 3: "width"}, "detections": {0: "batch", 1: "anchors"}},
             {"images": [0.0, 1.0]}, NN_LICENCE, head=None,
             notes="YOLOv5-style head: Shape/Gather/Concat/Reshape, sigmoid, grid decode"),
    ]


# ---------------------------------------------------------------- weights

def seed_for(arch: str) -> int:
    return sum((i + 1) * ord(c) for i, c in enumerate(arch)) % (2**31)


def random_inputs(spec: Spec, gen: torch.Generator, batch: int | None = None) -> tuple:
    out = []
    for name, shape in spec.inputs.items():
        shape = list(shape)
        if batch is not None:
            axis = next((a for a, d in spec.dynamic.get(name, {}).items() if d == "batch"), 0)
            shape[axis] = batch
        lo, hi = spec.ranges[name]
        out.append(torch.rand(shape, generator=gen) * (hi - lo) + lo)
    return tuple(out)


@torch.no_grad()
def randomise(model: nn.Module, spec: Spec, gen: torch.Generator) -> None:
    """BatchNorm: random affine, statistics measured on random batches then perturbed
    (so the folded weights are nothing like identity); head: outputs with spread ~2."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if bns:
        for bn in bns:
            bn.weight.copy_(torch.rand(bn.weight.shape, generator=gen) + 0.5)
            bn.bias.copy_(torch.randn(bn.bias.shape, generator=gen) * 0.2)
            bn.reset_running_stats()
            bn.momentum = None  # cumulative average over the calibration batches
        model.train()
        for _ in range(2):
            model(*random_inputs(spec, gen, batch=4))
        for bn in bns:
            std = bn.running_var.sqrt()
            bn.running_mean.add_(torch.randn(std.shape, generator=gen) * 0.2 * std)
            bn.running_var.mul_(torch.rand(std.shape, generator=gen) * 1.5 + 0.5)
    model.eval()
    if spec.head is not None:
        head = spec.head(model)
        if not head.weight.any():  # zero-initialised heads (torchvision's ViT) give constant outputs
            fan_in = head.weight[0].numel()
            head.weight.copy_(torch.randn(head.weight.shape, generator=gen) / math.sqrt(fan_in))
        out = model(*random_inputs(spec, gen, batch=4))
        out = out[0] if isinstance(out, tuple) else out
        scale = 2.0 / max(float(out.std()), 1e-6)
        head.weight.mul_(scale)
        if head.bias is not None:
            head.bias.mul_(scale)


# ---------------------------------------------------------------- export

def export(model: nn.Module, spec: Spec, example: tuple, dynamic: bool) -> onnx.ModelProto:
    buf = io.BytesIO()
    kwargs = {}
    if dynamic:
        kwargs["dynamic_axes"] = spec.dynamic
    torch.onnx.export(model, example, buf, dynamo=False, opset_version=spec.opset,
                      input_names=list(spec.inputs), output_names=spec.outputs,
                      do_constant_folding=True, **kwargs)
    return onnx.load_from_string(buf.getvalue())


def to_light(model: onnx.ModelProto) -> onnx.ModelProto:
    """onnx's light form: big initializers become ConstantOfShape(shape) with value 0 of
    their dtype, output under the initializer's own name; the shape is an int64
    initializer NAME__SHAPE (as in onnx/backend/test/data/light)."""
    graph = model.graph
    keep, fills, shapes = [], [], []
    for init in graph.initializer:
        if math.prod(init.dims) <= LIGHT_THRESHOLD:
            keep.append(init)
            continue
        shape_name = init.name + "__SHAPE"
        shapes.append(numpy_helper.from_array(np.array(list(init.dims), np.int64), shape_name))
        zero = helper.make_tensor("value", init.data_type, [1], [0])
        fills.append(helper.make_node("ConstantOfShape", [shape_name], [init.name],
                                      name=init.name + "__fill", value=zero))
    nodes = list(graph.node)
    del graph.initializer[:]
    graph.initializer.extend(keep + shapes)
    del graph.node[:]
    graph.node.extend(fills + nodes)
    return model


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def build_model(spec: Spec) -> tuple[nn.Module, tuple]:
    torch.manual_seed(seed_for(spec.arch))
    model = spec.build()
    gen = torch.Generator().manual_seed(seed_for(spec.arch) + 1)
    randomise(model, spec, gen)
    example = random_inputs(spec, gen)
    return model, example


def file_name(spec: Spec, dynamic: bool) -> str:
    return f"{spec.arch}_{'dynamic' if dynamic else 'fixed'}_op{spec.opset}.onnx"


def make(spec: Spec) -> list[dict]:
    model, example = build_model(spec)
    entries = []
    for dynamic in (False, True):
        proto = export(model, spec, example, dynamic)
        if spec.light:
            proto = to_light(proto)
        onnx.checker.check_model(proto)
        name = file_name(spec, dynamic)
        write_atomic(OUT_DIR / name, proto.SerializeToString())
        entries.append(manifest_entry(spec, dynamic, name))
        print(f"wrote models/torch/{name}: {len(proto.graph.node)} nodes, "
              f"{(OUT_DIR / name).stat().st_size} bytes", flush=True)
    return entries


# ---------------------------------------------------------------- manifest

def manifest_entry(spec: Spec, dynamic: bool, name: str) -> dict:
    kind = "dynamic" if dynamic else "fixed"
    notes = f"torch {torch.__version__.split('+')[0]} TorchScript exporter, opset {spec.opset}"
    return entry_for(spec, f"torch/{spec.arch}/{kind}-op{spec.opset}", f"torch-{kind}",
                     f"models/torch/{name}", SCRIPT, dynamic, notes)


def entry_for(spec: Spec, model_id: str, category: str, file: str, script: str,
              dynamic: bool, notes: str) -> dict:
    """One manifest table (tests/zoo/README.md); a dynamic export pins its dim_params to
    the fixed export's sizes."""
    entry = {"id": model_id, "category": category, "file": file, "script": script,
             "licence": spec.licence}
    if spec.light:
        entry["light"] = True
    if dynamic:
        pins = {}
        for inp, axes in spec.dynamic.items():
            if inp in spec.inputs:
                for axis, dim in axes.items():
                    pins.setdefault(dim, spec.inputs[inp][axis])
        entry["dims"] = pins
    entry["inputs"] = {n: {"range": r} for n, r in spec.ranges.items()}
    entry["expect"] = "full"
    entry["notes"] = notes + ("; " + spec.notes if spec.notes else "")
    return entry


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


def write_manifest(path: Path, header: str, entries: list[dict]) -> None:
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    for entry in entries:
        lines += ["", "[[model]]"] + [f"{k} = {toml_value(v)}" for k, v in entry.items()]
    write_atomic(path, ("\n".join(lines) + "\n").encode())


def run(argv, doc: str, items: list, arch_of, make_one, manifest: Path, header: str) -> int:
    """The command line both make scripts share: make every item (or those whose
    architecture contains --only, leaving the manifest alone), then write the manifest."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--only", help="make only the architectures whose name contains this")
    args = ap.parse_args(argv)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    entries = []
    for item in items:
        if not args.only or args.only in arch_of(item):
            entries += make_one(item)
    if args.only:
        print("--only: manifest not rewritten")
        return 0
    write_manifest(manifest, header, entries)
    print(f"wrote {manifest.relative_to(ZOO.parents[1])}: {len(entries)} models")
    return 0


def main(argv=None) -> int:
    return run(argv, __doc__, specs(), lambda spec: spec.arch, make, MANIFEST,
               f"PyTorch exports (torch {torch.__version__}, torchvision "
               f"{torchvision.__version__}), written by {SCRIPT}; do not edit by hand.")


if __name__ == "__main__":
    sys.exit(main())
