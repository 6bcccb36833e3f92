"""Make the held-out benchmark models: the zoo's CNN families at other sizes, never used for tuning.

Run each half with its own throwaway venv (TensorFlow and PyTorch are never project dependencies;
see tests/zoo/make/README-tf.md and README-torch.md for the venvs):

    /tmp/tfvenv/bin/python benchmarks/held_out/make_held_out.py tf        # TFLite float32 + full int8
    /tmp/torchvenv/bin/python benchmarks/held_out/make_held_out.py torch  # ONNX, light form

The builders, weight randomisation, converter settings and export are the zoo's own
(tests/zoo/make/make_tf_models.py, make_torch_models.py), imported, so a held-out model differs from
its zoo sibling only in its size: another input resolution and width. Seeds differ from the zoo's
(the architecture names differ). Writes benchmarks/held_out/models/ and
benchmarks/held_out/manifest/{tf,torch}.toml (the zoo manifest schema; `file` is relative to
benchmarks/held_out/). Every file stays under 2 MB: the torch exports use onnx's light form (the
benchmark fills their weights with seeded random values, as the zoo does).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAKE = HERE.parents[1] / "tests" / "zoo" / "make"
OUT_DIR = HERE / "models"
MANIFEST_DIR = HERE / "manifest"
SCRIPT = "make_held_out.py"
MAX_FILE_BYTES = 2 << 20
TF_MODES = ("float32", "int8")
HEADER = f"# Held-out benchmark models, written by benchmarks/held_out/{SCRIPT} {{half}}; do not edit."


# -- TensorFlow: keras.applications families at another resolution, float32 and full int8 -------------

def tf_archs(tfz):
    keras, efficientnet, resnet = tfz.keras, tfz.efficientnet, tfz.resnet

    def mobilenet_v2_128():
        inp = keras.Input((128, 128, 3), batch_size=1, name="image")
        m = keras.applications.MobileNetV2(input_tensor=inp, alpha=0.35, classes=10, weights=None)
        return m, {"image": (-1.0, 1.0, "float")}, "keras.applications.MobileNetV2 alpha 0.35, 128x128, 10 classes"

    def efficientnet_b0_128():
        inp = keras.Input((128, 128, 3), batch_size=1, name="image")
        m = efficientnet.EfficientNet(0.3, 0.35, 128, input_tensor=inp, weights=None, classes=10,
                                      model_name="efficientnet_held_out")
        return m, {"image": (0.0, 255.0, "float")}, \
            "keras.applications EfficientNet (B0 block list, width 0.3, depth 0.35), 128x128, 10 classes"

    def resnet_112():
        def stack_fn(x):
            x = resnet.stack1(x, 12, 2, stride1=1, name="conv2")
            x = resnet.stack1(x, 24, 2, name="conv3")
            return resnet.stack1(x, 48, 2, name="conv4")

        inp = keras.Input((112, 112, 3), batch_size=1, name="image")
        m = resnet.ResNet(stack_fn, False, True, model_name="resnet_held_out", input_tensor=inp,
                          weights=None, classes=10)
        return m, {"image": (-124.0, 152.0, "float")}, \
            "keras.applications ResNet (v1 bottleneck stack1 12/24/48 filters x 2 blocks), 112x112, 10 classes"

    return {"mobilenet_v2_128": mobilenet_v2_128, "efficientnet_b0_128": efficientnet_b0_128,
            "resnet_112": resnet_112}


def make_tf() -> None:
    sys.path.insert(0, str(MAKE))
    import make_tf_models as tfz   # noqa: E402  (the zoo's builders and converter settings)
    archs = tf_archs(tfz)
    entries = []
    for arch, builder in archs.items():
        tfz.keras.utils.set_random_seed(tfz.SEED)
        rng = tfz.np.random.default_rng([tfz.SEED, sum(map(ord, arch))])
        model, ranges, notes = builder()
        calib = tfz.sample_inputs(model, ranges, rng, tfz.CALIBRATION_SAMPLES)
        tfz.randomise(model, calib, rng)

        def representative():
            for i in range(tfz.CALIBRATION_SAMPLES):
                yield [d[i:i + 1] for d in calib]

        for mode in TF_MODES:
            blob = tfz.converter_for(model, mode, representative).convert()
            tfz.smoke_run(blob, calib)   # LiteRT's own kernels run it (raises otherwise)
            name = f"tf/{arch}_{mode}.tflite"
            _write(name, blob)
            inputs = tfz.input_entry(ranges, tfz.keras_input_order(blob, model), tfz.tflite_inputs(blob))
            entries.append({"id": f"held-out/tf/{arch}/{mode}", "category": f"tf-{mode}", "file": f"models/{name}",
                            "script": SCRIPT, "licence": tfz.LICENCE, "expect": "full",
                            "notes": f"TensorFlow {tfz.tf.__version__}; {notes}", "inputs": inputs})
    write_tf_manifest(tfz, entries)


# -- PyTorch: torchvision families at another resolution, fixed-shape exports in light form ---------------

def torch_specs(mtm):
    tv = mtm.torchvision.models
    return [
        mtm.image_spec("resnet18_128", lambda: tv.resnet18(), 13, True, lambda m: m.fc, size=128),
        mtm.image_spec("mobilenet_v3_small_160", lambda: tv.mobilenet_v3_small(), 13, True,
                       lambda m: m.classifier[3], size=160),
        mtm.image_spec("mobilenet_v2_128", lambda: tv.mobilenet_v2(width_mult=0.5), 13, True,
                       lambda m: m.classifier[1], size=128, notes="width_mult=0.5"),
    ]


def make_torch() -> None:
    sys.path.insert(0, str(MAKE))
    import make_torch_models as mtm  # noqa: E402  (the zoo's builders, randomisation and export)
    mtm.torch.use_deterministic_algorithms(True)
    mtm.torch.set_num_threads(1)
    entries = []
    for spec in torch_specs(mtm):
        model, example = mtm.build_model(spec)
        proto = mtm.to_light(mtm.export(model, spec, example, dynamic=False))
        mtm.onnx.checker.check_model(proto)
        name = f"torch/{spec.arch}_op{spec.opset}.onnx"
        _write(name, proto.SerializeToString())
        notes = f"torch {mtm.torch.__version__.split('+')[0]} TorchScript exporter, opset {spec.opset}, " \
                f"input {spec.inputs['input'][2]}x{spec.inputs['input'][3]}" + (f"; {spec.notes}" if spec.notes else "")
        entries.append(mtm.entry_for(spec, f"held-out/torch/{spec.arch}", "torch-fixed", f"models/{name}", SCRIPT,
                                     False, notes))
    mtm.write_manifest(MANIFEST_DIR / "torch.toml", HEADER.format(half="torch").lstrip("# "), entries)
    print(f"wrote manifest/torch.toml: {len(entries)} models")


def _write(name: str, data: bytes) -> None:
    if len(data) > MAX_FILE_BYTES:
        raise SystemExit(f"{name}: {len(data)} bytes, over the {MAX_FILE_BYTES}-byte limit per file")
    path = OUT_DIR / name
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    print(f"wrote {path.relative_to(HERE)}: {len(data)} bytes", flush=True)


def write_tf_manifest(tfz, entries: list[dict]) -> None:
    """The TF half's manifest, in make_tf_models.py's TOML style (its input names need quoted keys)."""
    blocks = []
    for e in entries:
        ins = ", ".join(f"{tfz.toml_value(n)} = {{ range = [{tfz.toml_value(lo)}, {tfz.toml_value(hi)}] }}"
                        for n, (lo, hi) in e.pop("inputs").items())
        blocks.append("\n".join(["[[model]]"] + [f"{k} = {tfz.toml_value(v)}" for k, v in e.items()]
                                + [f"inputs = {{ {ins} }}"]))
    _write_manifest("tf", "\n\n".join([HEADER.format(half="tf")] + blocks) + "\n", len(entries))


def _write_manifest(half: str, text: str, count: int) -> None:
    MANIFEST_DIR.mkdir(parents=True, exist_ok=True)
    (MANIFEST_DIR / f"{half}.toml").write_text(text)
    print(f"wrote manifest/{half}.toml: {count} models")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("half", choices=("tf", "torch"), help="which framework's models to make (each needs its venv)")
    args = ap.parse_args(argv)
    make_tf() if args.half == "tf" else make_torch()
    return 0


if __name__ == "__main__":
    sys.exit(main())
