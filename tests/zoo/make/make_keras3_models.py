"""Regenerate the zoo's Keras 3 and AI Edge Quantizer models:  python tests/zoo/make/make_keras3_models.py [--only ARCH]

Needs TensorFlow (Keras 3, its default: no tf_keras) and ai-edge-quantizer in a throwaway venv, never a
project dependency; see README-modern.md. Builds four Keras 3 architectures with seeded random weights,
converts each with the default `tf.lite.TFLiteConverter.from_keras_model` in three modes (float32,
dynamic-range, int8) and quantizes the float32 file with AI Edge Quantizer's recipes (dynamic int8
weights, static int8), writing tests/zoo/models/modern/keras3_<arch>_<mode>.tflite and
rewriting tests/zoo/manifest/modern_keras3.toml.

Every conversion runs in a child process of its own: the converter crashes (segmentation fault) on some
of them (int8 calibration of Keras 3 recurrent layers), and such a crash is recorded as "not produced"
instead of ending the run. Each file is run by LiteRT on three calibration samples before it is kept.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from modern_common import known_gaps, manifest_blocks, toml_value, write_atomic

ZOO = Path(__file__).resolve().parents[1]
OUT_DIR = ZOO / "models" / "modern"
MANIFEST = ZOO / "manifest" / "modern_keras3.toml"
SCRIPT = "make/make_keras3_models.py"
LICENCE = "Apache-2.0 (generated; random weights)"
SEED = 2034
CALIBRATION_SAMPLES = 16
MAX_FILE_BYTES = 2 << 20
TF_MODES = ("float32", "dynamic", "int8")
AEQ_MODES = ("aeq_dynamic", "aeq_static")
MODES = TF_MODES + AEQ_MODES


# -- architectures (built in the child process, which imports TensorFlow) ------------------------
# Each returns (model, {input name: (lo, hi, kind)}, notes); kind is "float" or "token".

def cnn(keras, layers):
    # Keras 3's default: no batch size, so the file's batch is 1 with shape_signature -1
    inp = keras.Input((64, 64, 3), name="image")
    x = layers.Rescaling(1 / 127.5, offset=-1)(inp)
    x = layers.Conv2D(24, 3, strides=2, padding="same", use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("hard_swish")(x)
    for filters, stride in ((32, 1), (48, 2), (64, 2), (96, 2)):
        y = layers.DepthwiseConv2D(3, strides=stride, padding="same", use_bias=False)(x)
        y = layers.BatchNormalization()(y)
        y = layers.ReLU(6.0)(y)
        y = layers.Conv2D(filters, 1, use_bias=False)(y)
        y = layers.BatchNormalization()(y)
        if stride == 1 and x.shape[-1] == filters:
            y = layers.Add()([x, y])
        x = y
    se = layers.GlobalAveragePooling2D(keepdims=True)(x)
    se = layers.Conv2D(24, 1, activation="relu")(se)
    se = layers.Conv2D(96, 1, activation="hard_sigmoid")(se)
    x = layers.Multiply()([x, se])
    x = layers.SeparableConv2D(128, 3, padding="same", activation="relu")(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Flatten()(x)
    x = layers.Dense(448, activation="gelu")(x)   # over 256 KB of int8 weights: AI Edge Quantizer then
    x = layers.Dropout(0.2)(x)                     # stores buffers after the flatbuffer (offset, size)
    out = layers.Softmax()(layers.Dense(10, name="logits")(x))
    return keras.Model(inp, out, name="cnn"), {"image": (0.0, 255.0, "float")}, \
        "Keras 3 functional CNN, 64x64x3, batch left open (None): Rescaling, Conv2D, BatchNormalization, " \
        "hard_swish, DepthwiseConv2D, ReLU6, residual Add, squeeze-excite (GlobalAveragePooling2D keepdims, " \
        "hard_sigmoid Multiply), SeparableConv2D, MaxPooling2D, Flatten, Dense gelu, Dense softmax"


def transformer(keras, layers):
    seq, vocab, dim = 32, 500, 64
    tokens = keras.Input((seq,), dtype="int32", name="tokens")
    x = layers.Embedding(vocab, dim)(tokens)
    positions = keras.ops.arange(seq)
    x = x + layers.Embedding(seq, dim)(positions)
    for _ in range(2):
        a = layers.MultiHeadAttention(num_heads=4, key_dim=dim // 4)(x, x)
        x = layers.LayerNormalization(epsilon=1e-6)(x + a)
        f = layers.Dense(2 * dim, activation="gelu")(x)
        f = layers.Dense(dim)(f)
        x = layers.LayerNormalization(epsilon=1e-6)(x + f)
    x = layers.GlobalAveragePooling1D()(x)
    out = layers.Softmax()(layers.Dense(4, name="logits")(x))
    return keras.Model(tokens, out, name="transformer"), {"tokens": (0, vocab - 1, "token")}, \
        "Keras 3 transformer encoder, 32 int32 tokens, batch left open (None): Embedding, position " \
        "Embedding of keras.ops.arange, 2 x (MultiHeadAttention 4 heads, residual, LayerNormalization, " \
        "Dense gelu FFN), GlobalAveragePooling1D, Dense softmax"


def recurrent(kind: str):
    """A stacked LSTM or GRU classifier. Keras 3 recurrent layers convert only with a fixed batch."""
    def build(keras, layers):
        inp = keras.Input((24, 12), batch_size=1, name="sequence")
        x = getattr(layers, kind)(48, return_sequences=True)(inp)
        x = getattr(layers, kind)(32)(x)
        out = layers.Softmax()(layers.Dense(6, name="logits")(x))
        return keras.Model(inp, out, name=kind.lower()), {"sequence": (-1.0, 1.0, "float")}, \
            f"Keras 3 stacked {kind} (48 with sequences, then 32{'; reset_after' if kind == 'GRU' else ''}), " \
            "24 steps x 12 features, keras.Input(batch_size=1): the converter writes a WHILE loop, Dense softmax"
    return build


ARCHS = {"cnn": cnn, "transformer": transformer, "lstm": recurrent("LSTM"), "gru": recurrent("GRU")}


# -- the child process: build, convert one mode, smoke-run, write ---------------------------------

def _calibration(np, ranges, model, rng, count):
    data = []
    for t in model.inputs:
        name = t.name.split(":")[0]
        lo, hi, kind = ranges[name]
        shape = (count, *[d for d in t.shape[1:]])
        if kind == "token":
            data.append(rng.integers(lo, hi + 1, shape).astype(np.int32))
        else:
            data.append(rng.uniform(lo, hi, shape).astype(np.float32))
    return data


def _randomise(np, model, rng):
    """Weights that look trained: non-zero biases, BatchNormalization statistics and affine away from
    identity, LayerNormalization affine random (so folding and normalisation bugs show)."""
    for layer in model.layers:
        for w in layer.weights:
            name, shape = w.path.split("/")[-1], tuple(w.shape)
            if name == "bias":
                w.assign(rng.normal(0, 0.1, shape).astype(np.float32))
            elif name in ("gamma",):
                w.assign(rng.uniform(0.6, 1.4, shape).astype(np.float32))
            elif name in ("beta", "moving_mean"):
                w.assign(rng.normal(0, 0.2, shape).astype(np.float32))
            elif name == "moving_variance":
                w.assign(rng.uniform(0.4, 1.6, shape).astype(np.float32))


def _rescale_head(np, keras, model, calib, rng, spread=2.0):
    """Scale the `logits` Dense so its outputs spread about `spread` across classes on the calibration
    data (random weights otherwise give a near-constant softmax, which int8 outputs cannot tell apart)."""
    head = model.get_layer("logits")
    z = np.asarray(keras.Model(model.inputs, head.output)(calib if len(calib) > 1 else calib[0], training=False))
    f = spread / max(float(z.std(axis=1).mean()), 1e-6)
    kernel, bias = head.get_weights()
    head.set_weights([(kernel * f).astype(np.float32),
                      (bias * f - (z * f).mean(axis=0) + rng.normal(0, 0.3, z.shape[-1])).astype(np.float32)])


def _convert_tf(tf, model, mode, calib):
    c = tf.lite.TFLiteConverter.from_keras_model(model)
    if mode == "float32":
        return c.convert()
    c.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode == "int8":
        c.representative_dataset = lambda: ([d[i:i + 1] for d in calib] for i in range(CALIBRATION_SAMPLES))
        c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        c.inference_input_type = tf.int8      # token inputs stay int32: the converter leaves them
        c.inference_output_type = tf.int8
    return c.convert()


def _convert_aeq(float_file: Path, mode, calib):
    from ai_edge_quantizer import quantizer, recipe
    q = quantizer.Quantizer(str(float_file))
    q.load_quantization_recipe({"aeq_dynamic": recipe.dynamic_wi8_afp32, "aeq_static": recipe.static_wi8_ai8}[mode]())
    calibration = None
    if q.need_calibration:
        from ai_edge_litert.interpreter import Interpreter
        it = Interpreter(model_path=str(float_file))
        key = next(iter(it.get_signature_list()))
        names = list(it.get_signature_list()[key]["inputs"])
        samples = [{n: d[i:i + 1] for n, d in zip(names, calib)} for i in range(CALIBRATION_SAMPLES)]
        calibration = q.calibrate({key: samples})
    return bytes(q.quantize(calibration, enable_progress_report=False).quantized_model)


def _smoke_run(np, blob: bytes, calib) -> float:
    from ai_edge_litert.interpreter import Interpreter
    it = Interpreter(model_content=blob)
    it.allocate_tensors()
    outs = []
    for i in range(3):
        for d, x in zip(it.get_input_details(), calib):
            x = x[i:i + 1]
            scale, zp = d["quantization"]
            if scale and x.dtype.kind == "f":
                info = np.iinfo(d["dtype"])
                x = np.clip(np.round(x / scale) + zp, info.min, info.max)
            it.set_tensor(d["index"], x.astype(d["dtype"]))
        it.invoke()
        outs.append(it.get_tensor(it.get_output_details()[0]["index"]).astype(np.float64))
    return float(np.stack(outs).std(axis=0).max())


def child(arch: str, mode: str, out: Path) -> int:
    """Convert ARCH in MODE; write the file to OUT and a one-line JSON description beside it."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    os.environ.setdefault("TF_DETERMINISTIC_OPS", "1")
    import json
    import warnings
    warnings.filterwarnings("ignore")
    import numpy as np
    import tensorflow as tf
    import keras
    from keras import layers
    keras.utils.set_random_seed(SEED)
    rng = np.random.default_rng([SEED, sum(map(ord, arch))])
    model, ranges, notes = ARCHS[arch](keras, layers)
    calib = _calibration(np, ranges, model, rng, CALIBRATION_SAMPLES)
    _randomise(np, model, rng)
    _rescale_head(np, keras, model, calib, rng)
    if mode in AEQ_MODES:
        blob = _convert_aeq(OUT_DIR / f"keras3_{arch}_float32.tflite", mode, calib)
    else:
        blob = _convert_tf(tf, model, mode, calib)
    spread = _smoke_run(np, blob, calib)
    if mode in AEQ_MODES and arch == "cnn":   # the CNN is there to carry buffers after the flatbuffer
        from ai_edge_litert import schema_py_generated as schema
        packed = schema.Model.GetRootAs(blob, 0)
        if not any(packed.Buffers(k).Offset() > 1 for k in range(packed.BuffersLength())):
            raise RuntimeError("AI Edge Quantizer stored every buffer inside the flatbuffer")
    from ai_edge_litert.interpreter import Interpreter
    details = Interpreter(model_content=blob).get_input_details()
    inputs = {}
    # an input Keras leaves open (shape_signature -1, the batch) is pinned to the file's declared shape, as a
    # user converting for a device would (--input-shape)
    pins = {d["name"]: [int(v) for v in d["shape"]] for d in details if any(v < 0 for v in d["shape_signature"])}
    for d, t in zip(details, model.inputs):
        lo, hi, kind = ranges[t.name.split(":")[0]]
        scale, zp = d["quantization"]
        if kind == "float" and scale:
            info = np.iinfo(d["dtype"])
            lo, hi = (int(np.clip(round(v / scale) + zp, info.min, info.max)) for v in (lo, hi))
        inputs[d["name"]] = [lo, hi]
    out.write_bytes(blob)
    Path(str(out) + ".json").write_text(json.dumps({"notes": notes, "inputs": inputs, "pins": pins, "spread": spread,
                                                    "tf": tf.__version__, "keras": keras.__version__}))
    return 0


# -- the parent: one child per file, the manifest -----------------------------------------------





def mode_note(mode: str, versions: str) -> str:
    return {
        "float32": f"{versions} TFLiteConverter.from_keras_model defaults",
        "dynamic": f"{versions} TFLiteConverter, Optimize.DEFAULT (dynamic-range: int8 weights, float activations)",
        "int8": f"{versions} TFLiteConverter, Optimize.DEFAULT, representative dataset ({CALIBRATION_SAMPLES} "
                f"seeded samples), TFLITE_BUILTINS_INT8, int8 input and output",
        "aeq_dynamic": f"AI Edge Quantizer recipe.dynamic_wi8_afp32 on the float32 file ({versions})",
        "aeq_static": f"AI Edge Quantizer recipe.static_wi8_ai8 on the float32 file, calibrated on "
                      f"{CALIBRATION_SAMPLES} seeded samples ({versions})",
    }[mode]




def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", choices=sorted(ARCHS),
                    help="regenerate only this architecture (repeatable); the manifest keeps the others")
    ap.add_argument("--child", nargs=3, metavar=("ARCH", "MODE", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child[0], args.child[1], Path(args.child[2]))
    import json
    archs = args.only or list(ARCHS)
    gaps = known_gaps(MANIFEST)
    entries, failures = {}, []
    # entries of architectures not regenerated now stay as they are
    entries.update({i: b for i, b in manifest_blocks(MANIFEST).items() if i.split("/")[1] not in archs})
    with tempfile.TemporaryDirectory() as tmp:
        for arch in archs:
            for mode in MODES:
                name = f"keras3_{arch}_{mode}.tflite"
                out = Path(tmp) / name
                run = subprocess.run([sys.executable, __file__, "--child", arch, mode, str(out)],
                                     capture_output=True, text=True)
                if run.returncode != 0 or not out.exists():
                    lines = [ln for ln in run.stderr.strip().splitlines() if ln.strip()]
                    why = (f"the process died with signal {-run.returncode}" if run.returncode < 0
                           else (lines[-1] if lines else f"exit code {run.returncode}"))
                    failures.append((arch, mode, why[:300]))
                    print(f"FAILED {name}: {why[:300]}", flush=True)
                    (OUT_DIR / name).unlink(missing_ok=True)
                    continue
                meta = json.loads(Path(str(out) + ".json").read_text())
                blob = out.read_bytes()
                write_atomic(OUT_DIR / name, blob)
                print(f"{name:45s} {len(blob):9d} bytes" +
                      ("  WARNING: over the file limit" if len(blob) > MAX_FILE_BYTES else "") +
                      ("  WARNING: constant output" if meta["spread"] == 0.0 else ""), flush=True)
                ident = f"keras3/{arch}/{mode}"
                ins = ", ".join(f"{toml_value(n)} = {{ range = [{toml_value(lo)}, {toml_value(hi)}] }}"
                                for n, (lo, hi) in meta["inputs"].items())
                versions = f"TensorFlow {meta['tf']}, Keras {meta['keras']}"
                lines = ["[[model]]", f'id = "{ident}"',
                         f'category = "{"aeq" if mode in AEQ_MODES else "keras3"}-{mode.removeprefix("aeq_").replace("_", "-")}"',
                         f'file = "models/modern/{name}"', f'script = "{SCRIPT}"',
                         f"licence = {toml_value(LICENCE)}"]
                if meta.get("pins"):
                    lines.append("input_shapes = { " + ", ".join(f"{toml_value(n)} = {toml_value(v)}"
                                                                 for n, v in meta["pins"].items()) + " }")
                lines += [f"inputs = {{ {ins} }}", 'expect = "full"']
                if ident in gaps:
                    lines.append(gaps[ident])
                lines.append(f"notes = {toml_value(meta['notes'] + '; ' + mode_note(mode, versions))}")
                entries[ident] = "\n".join(lines) + "\n"
    order = sorted(entries, key=lambda i: (list(ARCHS).index(i.split("/")[1]), MODES.index(i.split("/")[2])))
    head = ("# Keras 3 (default TFLiteConverter) and AI Edge Quantizer zoo models: written by "
            "tests/zoo/make/make_keras3_models.py;\n# do not edit, except `known_gap` lines (kept on a rerun). "
            "Input ranges are natural ranges; for quantized inputs in stored units.\n\n")
    write_atomic(MANIFEST, (head + "\n".join(entries[k] for k in order)).encode())
    for arch, mode, why in failures:
        print(f"not produced: {arch} {mode}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
