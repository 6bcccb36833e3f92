"""Regenerate the TensorFlow-converted zoo models:  python tests/zoo/make/make_tf_models.py [--only ARCH]

Needs TensorFlow and tf_keras in a throwaway venv (never a project dependency); see README-tf.md.
Builds eleven Keras architectures with seeded random weights and converts each with TFLiteConverter in
seven modes (float32, float16, dynamic, int8, int8_uint8_io, int8_float_io, int16x8), writing
tests/zoo/models/tf/<arch>_<mode>.tflite and rewriting tests/zoo/manifest/tf.toml.

Weights are random but shaped like trained ones, so conversion bugs show instead of hiding behind
trivial values: every bias is non-zero; BatchNormalization moving mean and variance are set near
the statistics the layer really sees on the calibration data (then perturbed) with random gamma and
beta, so folding them into the convolution matters; LayerNormalization gamma/beta and the
EfficientNet Normalization layer are random too; every softmax head is rescaled so its logits
spread about 2 units across classes (outputs are not near-constant, so quantized outputs carry
information). Inputs have a fixed batch of 1 (static shapes, as exported for mobile deployment).

Each converted file is run on three calibration samples by LiteRT's kernels before it is written; a
mode the converter refuses, or whose file LiteRT cannot run, is left out and listed at the end.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from pathlib import Path

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")       # tf_keras: LSTMs become UNIDIRECTIONAL_SEQUENCE_LSTM
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")     # the same float sums on every run
os.environ.setdefault("TF_DETERMINISTIC_OPS", "1")
warnings.filterwarnings("ignore")                      # the deprecated tf.lite.Interpreter and calibration notes

import numpy as np                                      # noqa: E402
import tensorflow as tf                                 # noqa: E402
import tf_keras as keras                                # noqa: E402
from tf_keras import layers                             # noqa: E402
# The configurable builders behind keras.applications (the public names only build the fixed sizes).
from tf_keras.src.applications import densenet, efficientnet, resnet  # noqa: E402

ZOO = Path(__file__).resolve().parents[1]
OUT_DIR = ZOO / "models" / "tf"
MANIFEST = ZOO / "manifest" / "tf.toml"
SCRIPT = "make/make_tf_models.py"
LICENCE = "Apache-2.0 (generated; random weights)"
SEED = 2026
CALIBRATION_SAMPLES = 32
MAX_FILE_BYTES = 2 << 20
MAX_TOTAL_BYTES = 20 << 20
MODES = ("float32", "float16", "dynamic", "int8", "int8_uint8_io", "int8_float_io", "int16x8")


# -- architectures --------------------------------------------------------------------------
# Each builder returns (model, {input layer name: (lo, hi, kind)}, notes); kind is "float" or "token".

def mobilenet_v2():
    inp = keras.Input((96, 96, 3), batch_size=1, name="image")
    m = keras.applications.MobileNetV2(input_tensor=inp, alpha=0.35, classes=10, weights=None)
    return m, {"image": (-1.0, 1.0, "float")}, \
        "keras.applications.MobileNetV2 alpha 0.35, 96x96, 10 classes: Conv2D, DepthwiseConv2D, " \
        "BatchNormalization, ReLU6, ZeroPadding2D, residual Add, GlobalAveragePooling2D, Dense softmax"


def mobilenet_v3_small():
    inp = keras.Input((96, 96, 3), batch_size=1, name="image")
    m = keras.applications.MobileNetV3Small(input_tensor=inp, alpha=0.35, classes=10, weights=None)
    return m, {"image": (0.0, 255.0, "float")}, \
        "keras.applications.MobileNetV3Small alpha 0.35, 96x96, 10 classes: Rescaling, hard-swish " \
        "(Multiply by ReLU6(x+3)/6), squeeze-excite (GlobalAveragePooling2D keepdims, hard-sigmoid " \
        "Multiply), DepthwiseConv2D 5x5, BatchNormalization, 1x1 Conv2D logits, Flatten, softmax"


def efficientnet_b0_small():
    inp = keras.Input((96, 96, 3), batch_size=1, name="image")
    m = efficientnet.EfficientNet(0.25, 0.3, 96, input_tensor=inp, weights=None, classes=10,
                                  model_name="efficientnet_small")
    return m, {"image": (0.0, 255.0, "float")}, \
        "keras.applications EfficientNet (B0 block list, width 0.25, depth 0.3), 96x96, 10 classes: " \
        "Rescaling, Normalization, swish, squeeze-excite (GlobalAveragePooling2D, Reshape, sigmoid " \
        "Multiply), DepthwiseConv2D 3x3/5x5, BatchNormalization, Dropout, Dense softmax"


def resnet_small():
    def stack_fn(x):
        x = resnet.stack1(x, 8, 2, stride1=1, name="conv2")
        x = resnet.stack1(x, 16, 2, name="conv3")
        return resnet.stack1(x, 32, 2, name="conv4")

    inp = keras.Input((96, 96, 3), batch_size=1, name="image")
    m = resnet.ResNet(stack_fn, False, True, model_name="resnet_small", input_tensor=inp,
                      weights=None, classes=10)
    return m, {"image": (-124.0, 152.0, "float")}, \
        "keras.applications ResNet (v1 bottleneck stack1 8/16/32 filters x 2 blocks), 96x96 caffe-style " \
        "input, 10 classes: ZeroPadding2D, Conv2D 7x7 s2, MaxPooling2D, BatchNormalization, " \
        "projection shortcuts, Add, ReLU, GlobalAveragePooling2D, Dense softmax"


def densenet_small():
    # densenet.DenseNet fixes growth 32 and a 64-filter 7x7 stem (over 2 MB per file); the same
    # conv_block / transition_block with growth 12 keep the DenseNet-BC layer pattern small.
    inp = keras.Input((96, 96, 3), batch_size=1, name="image")
    x = layers.ZeroPadding2D(((3, 3), (3, 3)))(inp)
    x = layers.Conv2D(24, 7, strides=2, use_bias=False, name="conv1/conv")(x)
    x = layers.BatchNormalization(epsilon=1.001e-5, name="conv1/bn")(x)
    x = layers.Activation("relu", name="conv1/relu")(x)
    x = layers.ZeroPadding2D(((1, 1), (1, 1)))(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1")(x)
    for b, count in enumerate((3, 3, 3), start=2):
        for i in range(count):
            x = densenet.conv_block(x, 12, name=f"conv{b}_block{i + 1}")
        if b < 4:
            x = densenet.transition_block(x, 0.5, name=f"pool{b}")
    x = layers.BatchNormalization(epsilon=1.001e-5, name="bn")(x)
    x = layers.Activation("relu", name="relu")(x)
    x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    x = layers.Dense(10, activation="softmax", name="predictions")(x)
    return keras.Model(inp, x, name="densenet_small"), {"image": (-2.12, 2.64, "float")}, \
        "DenseNet-BC from keras.applications.densenet conv_block/transition_block (growth 12, blocks " \
        "3-3-3), 96x96 torch-style input, 10 classes: BatchNormalization-ReLU-Conv2D, Concatenate, " \
        "AveragePooling2D transitions, MaxPooling2D, GlobalAveragePooling2D, Dense softmax"


def unet():
    def double_conv(x, ch, name):
        for k in range(2):
            x = layers.Conv2D(ch, 3, padding="same", use_bias=False, name=f"{name}_conv{k}")(x)
            x = layers.BatchNormalization(name=f"{name}_bn{k}")(x)
            x = layers.ReLU(name=f"{name}_relu{k}")(x)
        return x

    inp = keras.Input((64, 64, 3), batch_size=1, name="image")
    e1 = double_conv(inp, 8, "enc1")
    e2 = double_conv(layers.MaxPooling2D(name="pool1")(e1), 16, "enc2")
    e3 = double_conv(layers.MaxPooling2D(name="pool2")(e2), 24, "enc3")
    b = double_conv(layers.MaxPooling2D(name="pool3")(e3), 32, "bottleneck")
    u3 = layers.Conv2DTranspose(24, 2, strides=2, name="up3")(b)
    d3 = double_conv(layers.Concatenate(name="cat3")([u3, e3]), 24, "dec3")
    u2 = layers.UpSampling2D(2, interpolation="nearest", name="up2")(d3)
    d2 = double_conv(layers.Concatenate(name="cat2")([u2, e2]), 16, "dec2")
    u1 = layers.UpSampling2D(2, interpolation="bilinear", name="up1")(d2)
    d1 = double_conv(layers.Concatenate(name="cat1")([u1, e1]), 8, "dec1")
    out = layers.Conv2D(3, 1, activation="softmax", name="mask")(d1)
    return keras.Model(inp, out, name="unet"), {"image": (0.0, 1.0, "float")}, \
        "U-Net 64x64, 3 classes per pixel: Conv2D-BatchNormalization-ReLU, MaxPooling2D, " \
        "Conv2DTranspose 2x2 s2, UpSampling2D nearest and bilinear, Concatenate skips, per-pixel softmax"


def kws_conv1d():
    inp = keras.Input((49, 40), batch_size=1, name="log_mel")
    x = layers.Conv1D(32, 5, padding="same", use_bias=False, name="conv0")(inp)
    x = layers.BatchNormalization(name="bn0")(x)
    x = layers.ReLU(name="relu0")(x)
    for k, stride in enumerate((2, 1, 2), start=1):
        x = layers.DepthwiseConv1D(3, strides=stride, padding="same", use_bias=False, name=f"dw{k}")(x)
        x = layers.BatchNormalization(name=f"dw{k}_bn")(x)
        x = layers.ReLU(name=f"dw{k}_relu")(x)
        x = layers.Conv1D(48, 1, use_bias=False, name=f"pw{k}")(x)
        x = layers.BatchNormalization(name=f"pw{k}_bn")(x)
        x = layers.ReLU(name=f"pw{k}_relu")(x)
    x = layers.MaxPooling1D(2, name="pool")(x)
    x = layers.GlobalAveragePooling1D(name="avg")(x)
    x = layers.Dropout(0.2)(x)
    x = layers.Dense(12, activation="softmax", name="predictions")(x)
    return keras.Model(inp, x, name="kws_conv1d"), {"log_mel": (-10.0, 5.0, "float")}, \
        "keyword spotter on 49 frames x 40 log-mel features, 12 keywords: Conv1D, DepthwiseConv1D " \
        "(strided), BatchNormalization, ReLU, MaxPooling1D, GlobalAveragePooling1D, Dense softmax"


def trained_embeddings():
    """Trained embeddings spread far wider than Keras's uniform(-0.05, 0.05) initial ones. A new
    initializer per layer: a shared unseeded one keeps its first seed, so a model's weights would
    depend on which models the same run built before it."""
    return keras.initializers.RandomNormal(stddev=0.5)


def lstm_text():
    inp = keras.Input((32,), batch_size=1, dtype="int32", name="tokens")
    x = layers.Embedding(1000, 32, embeddings_initializer=trained_embeddings(), name="embedding")(inp)
    x = layers.LSTM(48, name="lstm")(x)
    x = layers.Dense(32, activation="relu", name="hidden")(x)
    x = layers.Dense(4, activation="softmax", name="predictions")(x)
    return keras.Model(inp, x, name="lstm_text"), {"tokens": (1, 999, "token")}, \
        "text classifier, 32 tokens of a 1000-word vocabulary, 4 classes: Embedding (GATHER), " \
        "LSTM 48 units (fused UNIDIRECTIONAL_SEQUENCE_LSTM), Dense relu, Dense softmax"


def lstm_text_small():
    # Embeddings as Keras initialises them (uniform +-0.05, untrained): the LSTM's calibrated cell state
    # stays small, so TensorFlow gives it a scale below 2^-15, where the integer kernels' tanh of the cell
    # state writes nothing and the output gate multiplies the input gate instead
    inp = keras.Input((20,), batch_size=1, dtype="int32", name="tokens")
    x = layers.Embedding(1000, 32, name="embedding")(inp)
    x = layers.LSTM(32, name="lstm")(x)
    x = layers.Dense(5, activation="softmax", name="predictions")(x)
    return keras.Model(inp, x, name="lstm_text_small"), {"tokens": (1, 999, "token")}, \
        "text classifier, 20 tokens of a 1000-word vocabulary, 5 classes: Embedding (GATHER, Keras's " \
        "initial uniform +-0.05 embeddings), LSTM 32 units (fused UNIDIRECTIONAL_SEQUENCE_LSTM; int8 cell " \
        "state scale below 2^-15), Dense softmax"


def gru_imu():
    # GRUs have no fused TFLite op: unrolled they become per-step FULLY_CONNECTED, LOGISTIC, TANH
    # and elementwise ops. A WHILE-loop GRU crashes the int8 calibrator (segmentation fault in
    # TensorFlow 2.21), so unroll=True; 25 steps keep the unrolled files small.
    inp = keras.Input((25, 6), batch_size=1, name="imu")
    x = layers.GRU(24, return_sequences=True, unroll=True, name="gru1")(inp)
    x = layers.GRU(24, unroll=True, name="gru2")(x)
    x = layers.Dense(6, activation="softmax", name="predictions")(x)
    return keras.Model(inp, x, name="gru_imu"), {"imu": (-4.0, 4.0, "float")}, \
        "activity recognition on 25 steps x 6 IMU channels, 6 classes: two stacked GRU 24 units " \
        "(reset_after, unroll=True), return_sequences, Dense softmax"


class PositionEmbedding(layers.Layer):
    """Adds a learned embedding per sequence position."""

    def build(self, shape):
        self.table = self.add_weight(name="table", shape=(shape[1], shape[2]),
                                     initializer=keras.initializers.RandomNormal(stddev=0.1))

    def call(self, x):
        return x + self.table


def transformer_encoder():
    d_model, heads, vocab, length = 48, 2, 500, 32
    inp = keras.Input((length,), batch_size=1, dtype="int32", name="tokens")
    x = layers.Embedding(vocab, d_model, embeddings_initializer=trained_embeddings(), name="embedding")(inp)
    x = PositionEmbedding(name="positions")(x)
    for k in range(2):
        a = layers.MultiHeadAttention(heads, d_model // heads, name=f"mha{k}")(x, x)
        x = layers.LayerNormalization(epsilon=1e-6, name=f"ln{k}a")(layers.Add()([x, a]))
        f = layers.Dense(2 * d_model, activation="gelu", name=f"ffn{k}_1")(x)
        f = layers.Dense(d_model, name=f"ffn{k}_2")(f)
        x = layers.LayerNormalization(epsilon=1e-6, name=f"ln{k}b")(layers.Add()([x, f]))
    x = layers.GlobalAveragePooling1D(name="avg")(x)
    x = layers.Dense(4, activation="softmax", name="predictions")(x)
    return keras.Model(inp, x, name="transformer_encoder"), {"tokens": (1, vocab - 1, "token")}, \
        "2-layer Transformer encoder, 32 tokens of a 500-word vocabulary, d_model 48, 2 heads, 4 classes: " \
        "Embedding, learned position embedding, MultiHeadAttention (einsum projections, softmax), " \
        "LayerNormalization, Dense GELU feed-forward, residual Add, GlobalAveragePooling1D, Dense softmax"


ARCHS = {
    "mobilenet_v2": mobilenet_v2,
    "mobilenet_v3_small": mobilenet_v3_small,
    "efficientnet_b0_small": efficientnet_b0_small,
    "resnet_small": resnet_small,
    "densenet_small": densenet_small,
    "unet": unet,
    "kws_conv1d": kws_conv1d,
    "lstm_text": lstm_text,
    "lstm_text_small": lstm_text_small,
    "gru_imu": gru_imu,
    "transformer_encoder": transformer_encoder,
}


# -- realistic random weights ---------------------------------------------------------------

def sample_inputs(model, ranges, rng, count):
    """`count` seeded samples per model input in its natural range, in model.inputs order."""
    out = []
    for t in model.inputs:
        lo, hi, kind = ranges[t.name.split(":")[0]]
        shape = (count,) + tuple(t.shape[1:])
        if kind == "token":
            out.append(rng.integers(lo, hi + 1, size=shape).astype(np.int32))
        else:
            out.append(rng.uniform(lo, hi, size=shape).astype(np.float32))
    return out


def run_batched(fn, data):
    """fn over the samples one at a time (the models have a fixed batch of 1), stacked."""
    return np.concatenate([np.asarray(fn([d[i:i + 1] for d in data])) for i in range(len(data[0]))])


def randomise(model, data, rng):
    """Non-zero biases, BN/LN/Normalization parameters as described in the module docstring,
    softmax heads rescaled."""
    for layer in model.layers:
        for w in layer.weights:
            if w.name.split("/")[-1].startswith("bias"):
                w.assign(w.numpy() + rng.normal(0, 0.05, w.shape).astype(np.float32))
        if isinstance(layer, layers.LayerNormalization):
            layer.gamma.assign(rng.uniform(0.6, 1.4, layer.gamma.shape).astype(np.float32))
            layer.beta.assign(rng.normal(0, 0.2, layer.beta.shape).astype(np.float32))
        if isinstance(layer, layers.Normalization):    # ImageNet-like per-channel mean and variance
            c = layer.adapt_mean.shape
            layer.adapt_mean.assign(rng.uniform(0.4, 0.5, c).astype(np.float32))
            layer.adapt_variance.assign(rng.uniform(0.04, 0.08, c).astype(np.float32))
            layer.finalize_state()
    for layer in model.layers:      # topological order: each BN sees its predecessors' final values
        if isinstance(layer, layers.BatchNormalization):
            probe = keras.Model(model.inputs, layer.input)
            x = run_batched(lambda d: probe(d, training=False), data)
            axes = tuple(range(x.ndim - 1))
            mean, var = x.mean(axis=axes), x.var(axis=axes)
            c = mean.shape
            layer.gamma.assign(rng.uniform(0.6, 1.4, c).astype(np.float32))
            layer.beta.assign(rng.normal(0, 0.25, c).astype(np.float32))
            layer.moving_mean.assign((mean + rng.normal(0, 0.1, c) * np.sqrt(var)).astype(np.float32))
            layer.moving_variance.assign((var * rng.uniform(0.8, 1.25, c) + 1e-3).astype(np.float32))
    rescale_head(model, data, rng)


def rescale_head(model, data, rng, spread=2.0):
    """Scale the last kernel layer before the softmax so its logits spread `spread` across classes."""
    head = [l for l in model.layers if hasattr(l, "kernel")][-1]
    saved = getattr(head, "activation", None)
    if saved is not None:
        head.activation = keras.activations.linear
    probe = keras.Model(model.inputs, head.output)
    z = run_batched(lambda d: probe(d, training=False), data)
    if saved is not None:
        head.activation = saved
    z = z.reshape(-1, z.shape[-1])
    f = spread / max(float(z.std(axis=1).mean()), 1e-6)
    head.kernel.assign(head.kernel.numpy() * f)
    head.bias.assign((head.bias.numpy() * f - (z * f).mean(axis=0)
                      + rng.normal(0, 0.3, z.shape[-1])).astype(np.float32))


# -- conversion -----------------------------------------------------------------------------

def converter_for(model, mode, representative):
    c = tf.lite.TFLiteConverter.from_keras_model(model)
    if mode == "float32":
        return c
    c.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode == "float16":
        c.target_spec.supported_types = [tf.float16]
    elif mode != "dynamic":
        c.representative_dataset = representative
        if mode == "int16x8":
            c.target_spec.supported_ops = [
                tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
        else:
            c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            io = {"int8": tf.int8, "int8_uint8_io": tf.uint8, "int8_float_io": None}[mode]
            if io is not None:
                c.inference_input_type = io
                c.inference_output_type = io
    return c


def write_atomic(path: Path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def smoke_run(blob: bytes, calib, count=3) -> float:
    """Run the converted model on `count` calibration samples with TensorFlow's LiteRT kernels (raises
    when it cannot run); returns the first output's spread across the samples (0 = constant)."""
    it = tf.lite.Interpreter(model_content=blob)
    it.allocate_tensors()
    outs = []
    for i in range(count):
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


def tflite_inputs(blob: bytes):
    """[(name, dtype, scale, zero_point)] of the converted model's inputs."""
    it = tf.lite.Interpreter(model_content=blob)
    return [(d["name"], np.dtype(d["dtype"]), *d["quantization"]) for d in it.get_input_details()]


def input_entry(ranges, keras_names, tfl):
    """The manifest range of each TFLite input: natural range, in stored units for quantized inputs."""
    out = {}
    for (name, dtype, scale, zp), kname in zip(tfl, keras_names):
        lo, hi, kind = ranges[kname]
        if kind == "token" or dtype.kind == "f":
            out[name] = (lo, hi)
        else:
            info = np.iinfo(dtype)
            out[name] = tuple(int(np.clip(round(v / scale) + zp, info.min, info.max)) for v in (lo, hi))
    return out


def keras_input_order(blob, model):
    """Keras input names in the TFLite input order (from_keras_model names them serving_default_NAME:0)."""
    names = [t.name.split(":")[0] for t in model.inputs]
    if len(names) == 1:
        return names
    return [next(n for n in names if name in (n, f"serving_default_{n}:0")) for name, *_ in tflite_inputs(blob)]


def toml_value(v):
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, float):
        return repr(v)
    return str(v)


def manifest_entry(arch, mode, file, inputs, notes):
    ins = ", ".join(f"{toml_value(n)} = {{ range = [{toml_value(lo)}, {toml_value(hi)}] }}"
                    for n, (lo, hi) in inputs.items())
    lines = ["[[model]]", f'id = "tf/{arch}/{mode}"', f'category = "tf-{mode}"',
             f'file = "models/tf/{file}"', f'script = "{SCRIPT}"', f"licence = {toml_value(LICENCE)}",
             f"inputs = {{ {ins} }}"]
    if mode == "int16x8":
        lines += ['expect = "none"', 'why = "int16x8: NNAPI has no int16 activations"']
    else:
        lines.append('expect = "full"')
    lines.append(f"notes = {toml_value(notes)}")
    return "\n".join(lines) + "\n"


def build(arch):
    keras.utils.set_random_seed(SEED)
    rng = np.random.default_rng([SEED, sum(map(ord, arch))])
    model, ranges, notes = ARCHS[arch]()
    calib = sample_inputs(model, ranges, rng, CALIBRATION_SAMPLES)
    randomise(model, calib, rng)
    return model, ranges, notes, calib


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", choices=sorted(ARCHS),
                    help="regenerate only this architecture (repeatable); the manifest keeps the others")
    args = ap.parse_args(argv)
    archs = args.only or list(ARCHS)
    produced, failures = {}, []
    for arch in archs:
        model, ranges, notes, calib = build(arch)

        def representative():
            for i in range(CALIBRATION_SAMPLES):
                yield [d[i:i + 1] for d in calib]

        for mode in MODES:
            file = f"{arch}_{mode}.tflite"
            try:
                blob = converter_for(model, mode, representative).convert()
            except Exception as e:     # a converter limitation: record it, skip only this file
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                failures.append((arch, mode, first[:300]))
                print(f"FAILED {arch} {mode}: {first[:300]}", flush=True)
                continue
            try:
                spread = smoke_run(blob, calib)
            except Exception as e:     # converted, but LiteRT's own kernels refuse it
                failures.append((arch, mode, "LiteRT cannot run it: " + str(e).strip().splitlines()[0][:300]))
                print(f"FAILED {arch} {mode}: LiteRT cannot run it", flush=True)
                continue
            if spread == 0.0:
                print(f"  WARNING: {file} gives the same output for different inputs", flush=True)
            write_atomic(OUT_DIR / file, blob)
            tfl = tflite_inputs(blob)
            inputs = input_entry(ranges, keras_input_order(blob, model), tfl)
            produced[(arch, mode)] = manifest_entry(arch, mode, file, inputs, notes)
            print(f"{file:45s} {len(blob):9d} bytes", flush=True)
            if len(blob) > MAX_FILE_BYTES:
                print(f"  WARNING: {file} is over {MAX_FILE_BYTES} bytes", flush=True)
    write_manifest(produced, archs)
    for stale in OUT_DIR.glob("*.tflite"):
        arch, mode = next(((a, m) for a in ARCHS for m in MODES if stale.name == f"{a}_{m}.tflite"),
                          (None, None))
        if arch is None or (arch in archs and (arch, mode) not in produced):
            stale.unlink()
    total = sum(p.stat().st_size for p in OUT_DIR.glob("*.tflite"))
    print(f"total {total} bytes in {OUT_DIR}" + (" (OVER BUDGET)" if total > MAX_TOTAL_BYTES else ""))
    for arch, mode, why in failures:
        print(f"not produced: {arch} {mode}: {why}")
    return 0


def write_manifest(produced, archs):
    """Rewrite tf.toml: fresh entries for `archs`, entries of the other architectures kept."""
    kept = {}
    if MANIFEST.exists():
        for block in MANIFEST.read_text().split("[[model]]\n")[1:]:
            ident = block.split('id = "', 1)[1].split('"', 1)[0]
            _, arch, mode = ident.split("/")
            if arch not in archs:
                kept[(arch, mode)] = "[[model]]\n" + block.rstrip("\n") + "\n"
    entries = {**kept, **produced}
    order = [(a, m) for a in ARCHS for m in MODES if (a, m) in entries]
    head = ("# TensorFlow-converted zoo models: written by tests/zoo/make/make_tf_models.py, do not edit.\n"
            "# Input ranges are natural ranges; for quantized inputs in stored units.\n\n")
    write_atomic(MANIFEST, (head + "\n".join(entries[k] for k in order)).encode())


if __name__ == "__main__":
    sys.exit(main())
