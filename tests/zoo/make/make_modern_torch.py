"""Regenerate the zoo's models made the ways PyTorch users make them today:
python tests/zoo/make/make_modern_torch.py [--only NAME]

Needs torch (CPU), transformers, onnx, onnxscript, onnxruntime and litert-torch in a throwaway venv, never
a project dependency; see README-modern.md. Writes tests/zoo/models/modern/*.onnx / *.tflite and
tests/zoo/manifest/modern_torch.toml:

- `torch.onnx.export` with its default dynamo exporter (it picks opset 20), fixed and dynamic shapes;
- Hugging Face transformers models built from small configs with seeded random weights (nothing is
  downloaded): BERT, ViT, MobileViT, Whisper encoder, wav2vec2 CTC, through both exporters (TorchScript,
  `dynamo=False`, opset 17; dynamo);
- litert-torch conversions of PyTorch modules: float, and PT2E static int8 (per-channel symmetric weights,
  calibrated on seeded samples).

Every file is run by its framework (onnxruntime or LiteRT) and compared with PyTorch before it is kept.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from pathlib import Path

from modern_common import known_gaps, manifest_blocks, toml_value, write_atomic

warnings.filterwarnings("ignore")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np              # noqa: E402
import torch                    # noqa: E402
from torch import nn            # noqa: E402

ZOO = Path(__file__).resolve().parents[1]
OUT_DIR = ZOO / "models" / "modern"
MANIFEST = ZOO / "manifest" / "modern_torch.toml"
SCRIPT = "make/make_modern_torch.py"
SEED = 2034
CALIBRATION_SAMPLES = 16
MAX_FILE_BYTES = 2 << 20
TORCH_LICENCE = "BSD-3-Clause (PyTorch modules); generated, random weights"
HF_LICENCE = "Apache-2.0 (transformers architecture); generated, random weights"


# -- modules ------------------------------------------------------------------------------------
# Each builder returns (module, {input name: (shape, lo, hi, kind)}, licence, notes); kind is float or token.

class SmallCnn(nn.Module):
    """A plain PyTorch CNN: Conv, BatchNorm, ReLU/Hardswish, depthwise conv, pooling, flatten, Linear."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish(),
            nn.Conv2d(16, 16, 3, 1, 1, groups=16, bias=False), nn.BatchNorm2d(16), nn.ReLU6(),
            nn.Conv2d(16, 32, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 32, 3, 2, 1, groups=32, bias=False), nn.BatchNorm2d(32), nn.ReLU6(),
            nn.Conv2d(32, 48, 1), nn.ReLU(), nn.MaxPool2d(4))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(48 * 2 * 2, 64), nn.GELU(), nn.Linear(64, 10))

    def forward(self, image):
        return torch.softmax(self.head(self.features(image)), dim=-1)


class PixelShuffleNet(nn.Module):
    """A super-resolution-style net: conv features, pixel_shuffle (DEPTH_TO_SPACE in TFLite), conv."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 1, 1), nn.ReLU(),
                                  nn.Conv2d(32, 12, 3, 1, 1))
        self.tail = nn.Conv2d(3, 3, 3, 1, 1)

    def forward(self, image):
        return torch.sigmoid(self.tail(nn.functional.pixel_shuffle(self.body(image), 2)))


def cnn():
    return SmallCnn(), {"image": ((1, 3, 32, 32), -2.0, 2.5, "float")}, TORCH_LICENCE, \
        "PyTorch CNN, 32x32: Conv2d, BatchNorm2d, Hardswish, depthwise Conv2d, ReLU6, MaxPool2d, Flatten, " \
        "Linear, GELU, softmax"


def pixel_shuffle():
    return PixelShuffleNet(), {"image": ((1, 3, 24, 24), 0.0, 1.0, "float")}, TORCH_LICENCE, \
        "PyTorch super-resolution-style net, 24x24 -> 48x48: Conv2d, ReLU, pixel_shuffle(2), Conv2d, sigmoid"


class Logits(nn.Module):
    """A transformers model called with keyword inputs, returning its first output as a plain tensor."""

    def __init__(self, model, names, field):
        super().__init__()
        self.model, self.names, self.field = model, names, field

    def forward(self, first, second=None):   # named parameters: the dynamo exporter maps dynamic_axes onto them
        return getattr(self.model(**dict(zip(self.names, (first, second)[:len(self.names)]))), self.field)


def bert():
    from transformers import BertConfig, BertForSequenceClassification
    cfg = BertConfig(vocab_size=256, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=32, num_labels=3)
    names = ["input_ids", "attention_mask"]
    return Logits(BertForSequenceClassification(cfg), names, "logits"), \
        {"input_ids": ((1, 16), 0, 255, "token"), "attention_mask": ((1, 16), 1, 1, "token")}, HF_LICENCE, \
        "transformers BertForSequenceClassification (hidden 32, 2 layers, 4 heads, 16 int64 tokens, " \
        "attention mask input)"


def vit():
    from transformers import ViTConfig, ViTForImageClassification
    cfg = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=2,
                    num_attention_heads=4, intermediate_size=64, num_labels=10)
    return Logits(ViTForImageClassification(cfg), ["pixel_values"], "logits"), \
        {"pixel_values": ((1, 3, 32, 32), -1.0, 1.0, "float")}, HF_LICENCE, \
        "transformers ViTForImageClassification (32x32, patch 8: 17 tokens, hidden 64, 2 layers, 4 heads)"


def mobilevit():
    from transformers import MobileViTConfig, MobileViTForImageClassification
    cfg = MobileViTConfig(image_size=64, num_channels=3, hidden_sizes=[16, 16, 16],
                          neck_hidden_sizes=[8, 8, 8, 16, 16, 16, 32], num_attention_heads=2, expand_ratio=2.0,
                          num_labels=10)
    return Logits(MobileViTForImageClassification(cfg), ["pixel_values"], "logits"), \
        {"pixel_values": ((1, 3, 64, 64), 0.0, 1.0, "float")}, HF_LICENCE, \
        "transformers MobileViTForImageClassification (64x64, hidden sizes 16/16/16, 2 heads: unfold/fold " \
        "reshapes around the transformer blocks)"


def whisper_encoder():
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
    cfg = WhisperConfig(d_model=48, encoder_layers=2, encoder_attention_heads=4, encoder_ffn_dim=96,
                        num_mel_bins=40, max_source_positions=50)
    return Logits(WhisperEncoder(cfg), ["input_features"], "last_hidden_state"), \
        {"input_features": ((1, 40, 100), -1.0, 1.0, "float")}, HF_LICENCE, \
        "transformers WhisperEncoder (40 mel bins x 100 frames, 2 Conv1d + GELU, 50 positions, d_model 48, " \
        "2 layers, 4 heads)"


def wav2vec2():
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC
    cfg = Wav2Vec2Config(vocab_size=32, hidden_size=48, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=96, conv_dim=(32, 32, 32), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
                         num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, do_stable_layer_norm=False)
    return Logits(Wav2Vec2ForCTC(cfg), ["input_values"], "logits"), \
        {"input_values": ((1, 4000), -1.0, 1.0, "float")}, HF_LICENCE, \
        "transformers Wav2Vec2ForCTC (4000 samples, 3 Conv1d feature extractor with GroupNorm, weight-normed " \
        "grouped positional Conv1d, hidden 48, 2 layers, 4 heads, 32-symbol CTC head)"


MODULES = {"cnn": cnn, "pixel_shuffle": pixel_shuffle, "bert": bert, "vit": vit, "mobilevit": mobilevit,
           "whisper_encoder": whisper_encoder, "wav2vec2": wav2vec2}

# what is made of each module: (name, exporter) with exporter one of
# torchscript | torchscript_dynamic | dynamo | dynamo_dynamic | litert | litert_pt2e_int8
PLAN = [
    ("cnn", "dynamo"), ("cnn", "dynamo_dynamic"), ("cnn", "litert"), ("cnn", "litert_pt2e_int8"),
    ("pixel_shuffle", "litert"), ("pixel_shuffle", "litert_pt2e_int8"),
    ("bert", "torchscript"), ("bert", "torchscript_dynamic"), ("bert", "dynamo"), ("bert", "dynamo_dynamic"),
    ("bert", "litert"), ("bert", "litert_pt2e_int8"),
    ("vit", "torchscript"), ("vit", "dynamo"), ("vit", "litert"),
    ("mobilevit", "torchscript"), ("mobilevit", "dynamo"),
    ("whisper_encoder", "torchscript"), ("whisper_encoder", "dynamo"),
    ("wav2vec2", "torchscript"), ("wav2vec2", "dynamo"),
]
# the dimensions the dynamic exports leave open, by input: {axis: name}
DYNAMIC = {"cnn": {"image": {0: "batch"}},
           "bert": {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"}}}


# -- weights ------------------------------------------------------------------------------------

def randomise(module: nn.Module, gen: torch.Generator):
    """Weights that look trained: non-zero biases, BatchNorm/LayerNorm/GroupNorm affine and BatchNorm
    statistics away from identity (so folding and normalisation bugs show)."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.LayerNorm, nn.GroupNorm)):
                if getattr(m, "weight", None) is not None:
                    m.weight.copy_(0.6 + 0.8 * torch.rand(m.weight.shape, generator=gen))
                if getattr(m, "bias", None) is not None:
                    m.bias.copy_(0.2 * torch.randn(m.bias.shape, generator=gen))
                if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                    m.running_mean.copy_(0.2 * torch.randn(m.running_mean.shape, generator=gen))
                    m.running_var.copy_(0.4 + 1.2 * torch.rand(m.running_var.shape, generator=gen))
            elif isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d)) and m.bias is not None:
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))


def samples(inputs: dict, rng, count: int) -> list:
    """`count` seeded input tuples in each input's natural range."""
    out = []
    for _ in range(count):
        row = []
        for shape, lo, hi, kind in inputs.values():
            if kind == "token":
                row.append(torch.from_numpy(rng.integers(lo, hi + 1, shape).astype(np.int64)))
            else:
                row.append(torch.from_numpy(rng.uniform(lo, hi, shape).astype(np.float32)))
        out.append(tuple(row))
    return out


# -- exporters ----------------------------------------------------------------------------------

def export_onnx(module, args, names, exporter: str, dynamic: dict, path: Path):
    if exporter.startswith("torchscript"):
        axes = {n: dict(a) for n, a in dynamic.items()} if exporter.endswith("dynamic") else None
        torch.onnx.export(module, args, str(path), input_names=names, output_names=["output"], opset_version=17,
                          dynamo=False, dynamic_axes=axes)
    else:
        # dynamic_axes, as users carry them over from the TorchScript exporter: the dynamo exporter turns
        # them into Dim.AUTO, which specialises a dimension the traced code fixes (BERT's batch of 1)
        axes = {n: dict(a) for n, a in dynamic.items()} if exporter.endswith("dynamic") else None
        program = torch.onnx.export(module, args, input_names=names, output_names=["output"], dynamo=True,
                                    dynamic_axes=axes)
        for node in program.model.graph.all_nodes():
            # debugging records per node (Python stack traces with the making machine's paths, FX node
            # reprs, module scopes): most of each file's size, and nothing a converter reads
            node.metadata_props.clear()
        program.save(str(path))   # the exporter's default: large initializers in PATH.data


def export_litert(module, args, calib, exporter: str, path: Path):
    import litert_torch
    if exporter == "litert":
        litert_torch.convert(module, args).export(str(path))
        return
    from litert_torch.quantize import pt2e_quantizer
    from litert_torch.quantize.quant_config import QuantConfig
    from torchao.quantization.pt2e import quantize_pt2e
    quantizer = pt2e_quantizer.PT2EQuantizer().set_global(
        pt2e_quantizer.get_symmetric_quantization_config(is_per_channel=True))
    m = quantize_pt2e.prepare_pt2e(torch.export.export(module, args).module(), quantizer)
    for sample in calib:
        m(*sample)
    m = quantize_pt2e.convert_pt2e(m, fold_quantize=False)
    litert_torch.convert(m, args, quant_config=QuantConfig(pt2e_quantizer=quantizer)).export(str(path))


def run_framework(path: Path, args) -> np.ndarray:
    feeds = [a.numpy() for a in args]
    if path.suffix == ".onnx":
        import onnxruntime as ort
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), feeds)})[0]
    from ai_edge_litert.interpreter import Interpreter
    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), feeds):
        it.set_tensor(d["index"], x.astype(d["dtype"]))
    it.invoke()
    out = it.get_output_details()[0]
    scale, zero = out["quantization"]
    value = it.get_tensor(out["index"])
    return (value.astype(np.float64) - zero) * scale if scale else value


def tflite_inputs(path: Path) -> list:
    """[(name, (scale, zero point) of an int8 input, else None)] of the file's inputs in order
    (litert-torch names them serving_default_args_N)."""
    from ai_edge_litert.interpreter import Interpreter
    return [(d["name"], d["quantization"] if d["dtype"] == np.int8 and d["quantization"][0] else None)
            for d in Interpreter(model_path=str(path)).get_input_details()]


# -- manifest -----------------------------------------------------------------------------------







EXPORTER_NOTES = {
    "torchscript": "torch.onnx.export(dynamo=False), opset 17, fixed shapes",
    "torchscript_dynamic": "torch.onnx.export(dynamo=False), opset 17, dynamic_axes {axes}",
    "dynamo": "torch.onnx.export(dynamo=True, the default), opset {opset}, fixed shapes; node metadata "
              "removed",
    "dynamo_dynamic": "torch.onnx.export(dynamo=True, the default), opset {opset}, dynamic_axes {axes}; node "
                      "metadata removed",
    "litert": "litert_torch.convert (float32)",
    "litert_pt2e_int8": "litert_torch.convert of a PT2E static int8 module (PT2EQuantizer, symmetric "
                        "per-channel weights, " + str(CALIBRATION_SAMPLES) + " seeded calibration samples)",
}


def make(name: str, exporter: str, versions: str, gaps: dict, failures: list):
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + sum(map(ord, name)))
    rng = np.random.default_rng([SEED, sum(map(ord, name))])
    module, inputs, licence, notes = MODULES[name]()
    randomise(module, gen)
    module.eval()
    calib = samples(inputs, rng, CALIBRATION_SAMPLES)
    args = calib[0]
    names = list(inputs)
    onnx_out = not exporter.startswith("litert")
    file = f"{exporter.split('_')[0] if onnx_out else 'litert'}_{name}" + {"torchscript": "_fixed.onnx", "torchscript_dynamic": "_dynamic.onnx", "dynamo": "_fixed.onnx",
         "dynamo_dynamic": "_dynamic.onnx", "litert": "_float32.tflite", "litert_pt2e_int8": "_pt2e_int8.tflite"
         }[exporter]
    ident = f"{'onnx-' + exporter.split('_')[0] if onnx_out else 'litert-torch'}/{name}/" + \
        {"torchscript": "fixed", "torchscript_dynamic": "dynamic", "dynamo": "fixed", "dynamo_dynamic": "dynamic",
         "litert": "float32", "litert_pt2e_int8": "pt2e-int8"}[exporter]
    dynamic = DYNAMIC.get(name, {})
    with tempfile.TemporaryDirectory() as tmp, torch.no_grad():
        path = Path(tmp) / file
        try:
            if onnx_out:
                export_onnx(module, args, names, exporter, dynamic, path)
            else:
                export_litert(module, args, calib, exporter, path)
            expected = module(*args).numpy()
            got = run_framework(path, args)
        except Exception as e:     # an exporter or framework limitation: record it, skip this file only
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            failures.append((ident, first[:300]))
            print(f"FAILED {ident}: {first[:300]}", flush=True)
            return None
        err = float(np.max(np.abs(got.astype(np.float64) - expected))) if got.shape == expected.shape else None
        written = []
        for f in sorted(Path(tmp).iterdir()):
            write_atomic(OUT_DIR / f.name, f.read_bytes())
            written.append(f.name)
    size = sum((OUT_DIR / f).stat().st_size for f in written)
    print(f"{ident:40s} {' + '.join(written):60s} {size:9d} bytes, max |framework - torch| = {err}"
          + ("  WARNING: over the file limit" if size > MAX_FILE_BYTES else ""), flush=True)
    lines = ["[[model]]", f'id = "{ident}"', f'category = "{ident.split("/")[0]}"', f'file = "models/modern/{file}"',
             f'script = "{SCRIPT}"', f"licence = {toml_value(licence)}"]
    opset = None
    if onnx_out:
        import onnx
        opset = next(o.version for o in onnx.load(str(OUT_DIR / file), load_external_data=False).opset_import
                     if o.domain in ("", "ai.onnx"))
    note = EXPORTER_NOTES[exporter].format(axes=dynamic, opset=opset)
    if onnx_out and exporter.endswith("dynamic"):
        import onnx
        graph = onnx.load(str(OUT_DIR / file), load_external_data=False).graph
        pins, fixed = {}, []
        for i in graph.input:
            shape = inputs[i.name][0]
            for axis, d in enumerate(i.type.tensor_type.shape.dim):
                if d.dim_param:
                    pins[d.dim_param] = shape[axis]
                elif axis in dynamic.get(i.name, {}):
                    fixed.append(f"{i.name}[{axis}] ({dynamic[i.name][axis]}) = {d.dim_value}")
        if pins:
            lines.append("dims = { " + ", ".join(f"{toml_value(k)} = {v}" for k, v in pins.items()) + " }")
        if fixed:   # checked, not assumed: the dynamo exporter can specialise a requested dimension
            note += "; the exporter specialised " + ", ".join(fixed) + " although it was requested dynamic"
    ins = []
    stored = [(n, None) for n in inputs] if onnx_out else tflite_inputs(OUT_DIR / file)   # litert-torch's names
    for (n, quant), (shape, lo, hi, kind) in zip(stored, inputs.values()):
        if quant and kind == "float":   # a quantized input: its range in stored units, as the zoo feeds it
            (scale, zero), info = quant, np.iinfo(np.int8)
            lo, hi = (int(np.clip(round(v / scale) + zero, info.min, info.max)) for v in (lo, hi))
        ins.append(f"{toml_value(n)} = {{ value = {lo} }}" if lo == hi else
                   f"{toml_value(n)} = {{ range = [{toml_value(lo)}, {toml_value(hi)}] }}")
    lines.append("inputs = { " + ", ".join(ins) + " }")
    lines.append('expect = "full"')
    if ident in gaps:
        lines.append(gaps[ident])
    if len(written) > 1:
        note += f"; weights in {', '.join(w for w in written if w != file)} beside it, as the exporter writes them"
    lines.append(f"notes = {toml_value(notes + '; ' + note + ' (' + versions + ')')}")
    return ident, "\n".join(lines) + "\n", written


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", choices=sorted(MODULES),
                    help="remake only this module's files (repeatable); the manifest keeps the others")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    import transformers
    try:
        import litert_torch
        lt = getattr(litert_torch, "__version__", "?")
    except ImportError:
        lt = "not installed"
    versions = f"torch {torch.__version__}, transformers {transformers.__version__}, litert-torch {lt}"
    chosen = args.only or list(MODULES)
    gaps = known_gaps(MANIFEST)
    entries, failures = {}, []
    entries.update({i: b for i, b in manifest_blocks(MANIFEST).items() if i.split("/")[1] not in chosen})
    for name, exporter in PLAN:
        if name in chosen:
            made = make(name, exporter, versions, gaps, failures)
            if made:
                entries[made[0]] = made[1]
    head = ("# Models made the ways PyTorch users make them today (dynamo and TorchScript ONNX exports, "
            "transformers,\n# litert-torch): written by tests/zoo/make/make_modern_torch.py; do not edit, except "
            "`known_gap` lines (kept on a rerun).\n\n")
    write_atomic(MANIFEST, (head + "\n".join(entries[k] for k in sorted(entries))).encode())
    total = sum(p.stat().st_size for p in OUT_DIR.iterdir() if p.is_file())
    print(f"total {total} bytes in {OUT_DIR}")
    for ident, why in failures:
        print(f"not produced: {ident}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
