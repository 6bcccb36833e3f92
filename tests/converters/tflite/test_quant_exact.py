"""Per-operation exactness of quantized TFLite operations: each single-operation model, converted
and run by the executor, equals LiteRT's reference kernels (OpResolverType.BUILTIN_REF) bit for
bit on the same inputs. The sweep covers int8 and uint8, scales and zero points up to their
extremes, per-channel weights and every fused activation; where NNAPI's arithmetic is not the
reference kernel's, docs/quantized-arithmetic.md states the rule and the bound, measured here."""
import numpy as np
import pytest

from converters.runners import run_litert

from converters.running import random_source_inputs, run_converted
from converters.tflite import convert
from converters.tflite.authoring import GraphBuilder

INT8 = ("INT8", np.int8, -128, 127)
UINT8 = ("UINT8", np.uint8, 0, 255)
TYPES = {"int8": INT8, "uint8": UINT8}
FUSED = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
# (input scale, input zero point, output scale, output zero point) per type: ordinary, extreme zero
# points, a tiny and a huge ratio of scales
QUANTS = {
    "int8": [(0.05, -3, 0.1, 5), (0.02, -128, 0.03, 127), (0.003, 127, 0.5, -128), (0.7, 0, 0.004, -20)],
    "uint8": [(0.05, 120, 0.1, 131), (0.02, 0, 0.03, 255), (0.003, 255, 0.5, 0), (0.7, 128, 0.004, 100)],
}


def differences(data: bytes, seeds=(0, 1, 2), level: int = 8, reference: str = "litert-ref", inputs=None) -> int:
    """Converts completely; the largest difference in stored units between the executor's outputs
    and LiteRT's (reference kernels by default) over the seeds (or on the given inputs)."""
    result = convert(data, feature_level=level)
    assert result.complete, [(n.op, n.reason) for n in result.unsupported]
    worst = 0
    for seed in seeds if inputs is None else [None]:
        ins = random_source_inputs(result.source.main, seed) if inputs is None else inputs
        ref = run_litert(data, ins, reference)
        got = run_converted(result, ins)
        for k, (r, g) in enumerate(zip(ref, got)):
            g = g.reshape(r.shape)
            diff = np.abs(r.astype(np.int64) - g.astype(np.int64)) if r.dtype.kind in "iub" else np.abs(r - g)
            worst = max(worst, diff.max())
    return worst


def exact(data: bytes, seeds=(0, 1, 2), level: int = 8, reference: str = "litert-ref"):
    """Every output equals LiteRT's reference kernels bit for bit on every seed."""
    assert differences(data, seeds, level, reference) == 0


class Q:
    """A one-operation model of type `type_name` with quantization `quant`."""

    def __init__(self, type_name, quant, seed=0):
        self.tname, self.dt, self.np, self.lo, self.hi = (type_name,) + TYPES[type_name]
        self.s_in, self.z_in, self.s_out, self.z_out = quant
        self.g, self.rng = GraphBuilder(), np.random.default_rng(seed)

    def input(self, name, shape, scale=None, zero_point=None):
        return self.g.input(name, shape, self.dt, scale=self.s_in if scale is None else scale,
                            zero_point=self.z_in if zero_point is None else zero_point)

    def out(self, shape, scale=None, zero_point=None, name="y"):
        return self.g.tensor(name, shape, self.dt, scale=self.s_out if scale is None else scale,
                             zero_point=self.z_out if zero_point is None else zero_point)

    def weights(self, shape, per_channel_axis=None):
        """int8 symmetric weights (per channel along the axis) or uint8 asymmetric ones; returns (tensor, scales)."""
        if self.tname == "uint8":
            return self.g.const("w", self.rng.integers(0, 256, shape).astype(np.uint8), scale=0.01,
                                zero_point=131), np.asarray([0.01], np.float32)
        data = self.rng.integers(-127, 128, shape).astype(np.int8)
        if per_channel_axis is None:
            return self.g.const("w", data, scale=0.012, zero_point=0), np.asarray([0.012], np.float32)
        scales = (0.002 + 0.02 * self.rng.random(shape[per_channel_axis])).astype(np.float32)
        return self.g.const("w", data, scale=scales, zero_point=0, axis=per_channel_axis), scales

    def bias(self, n, w_scales):
        scale = np.float32(self.s_in) * w_scales
        return self.g.const("b", self.rng.integers(-3000, 3000, n).astype(np.int32), scale=scale, zero_point=0,
                            axis=0)

    def finish(self, *outs):
        self.g.output(*outs)
        return self.g.finish()


def cases(types=("int8", "uint8"), fused=(None,)):
    return [(t, k, f) for t in types for k in range(len(QUANTS[t])) for f in fused]


def ids(case):
    return f"{case[0]}-q{case[1]}" + (f"-{case[2]}" if case[2] else "")


# -- convolutions and dense ------------------------------------------------------------------

CONV_CASES = cases(fused=FUSED) + [("int8pc", k, f) for k in range(4) for f in ("NONE", "RELU6")]


def _type(case):
    t = case[0]
    return ("int8", True) if t == "int8pc" else (t, False)


def check_conv(case, data):
    """Per-tensor weights: bit-exact. Per-channel: NNAPI's reference multiplies input_scale by each
    filter scale in float32, LiteRT in double, so a multiplier can differ in its last bits and an
    accumulator at a rounding tie lands 1 unit apart (docs/quantized-arithmetic.md)."""
    worst = differences(data)
    assert worst <= (1 if case[0] == "int8pc" else 0)
    return worst


@pytest.mark.parametrize("case", CONV_CASES, ids=ids)
def test_conv_2d(case):
    t, pc = _type(case)
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", [1, 5, 6, 3])
    w, s = m.weights([4, 3, 3, 3], 0 if pc else None)
    y = m.out([1, 3, 3, 4])
    m.g.op("CONV_2D", [x, w, m.bias(4, s)], [y], "Conv2DOptions", version=3, padding="SAME", stride_w=2,
           stride_h=2, fused_activation_function=case[2])
    check_conv(case, m.finish(y))


@pytest.mark.parametrize("case", CONV_CASES, ids=ids)
def test_depthwise_conv_2d(case):
    t, pc = _type(case)
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", [1, 5, 6, 3])
    w, s = m.weights([1, 3, 3, 6], 3 if pc else None)
    y = m.out([1, 5, 6, 6])
    m.g.op("DEPTHWISE_CONV_2D", [x, w, m.bias(6, s)], [y], "DepthwiseConv2DOptions", version=3, padding="SAME",
           stride_w=1, stride_h=1, depth_multiplier=2, fused_activation_function=case[2])
    check_conv(case, m.finish(y))


@pytest.mark.parametrize("case", CONV_CASES, ids=ids)
def test_fully_connected(case):
    t, pc = _type(case)
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", [3, 7])
    w, s = m.weights([5, 7], 0 if pc else None)
    y = m.out([3, 5])
    m.g.op("FULLY_CONNECTED", [x, w, m.bias(5, s)], [y], "FullyConnectedOptions", version=5,
           fused_activation_function=case[2])
    check_conv(case, m.finish(y))


@pytest.mark.parametrize("case", cases() + [("int8pc", k, None) for k in range(4)], ids=ids)
def test_transpose_conv(case):
    t, pc = _type(case)
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", [1, 3, 3, 2])
    w, s = m.weights([3, 3, 3, 2], 0 if pc else None)
    y = m.out([1, 6, 6, 3])
    shape = m.g.const("shape", np.asarray([1, 6, 6, 3], np.int32))
    m.g.op("TRANSPOSE_CONV", [shape, w, x, m.bias(3, s)], [y], "TransposeConvOptions", version=3, padding="SAME",
           stride_w=2, stride_h=2)
    check_conv(case, m.finish(y))


@pytest.mark.parametrize("case", cases(types=("int8",)), ids=ids)
def test_batch_matmul(case):
    m = Q("int8", QUANTS["int8"][case[1]])
    a = m.input("a", [2, 3, 5])
    b = m.input("b", [2, 5, 4], scale=0.03, zero_point=0)
    y = m.out([2, 3, 4])
    m.g.op("BATCH_MATMUL", [a, b], [y], "BatchMatMulOptions", version=2)
    exact(m.finish(y))


# -- elementwise ----------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL"])
@pytest.mark.parametrize("case", cases(fused=FUSED), ids=ids)
def test_binary(op, case):
    t = case[0]
    q = QUANTS[t][case[1]]
    m = Q(t, q)
    a = m.input("a", [2, 3, 4])
    b = m.input("b", [1, 4], scale=q[0] * 2.5, zero_point=(m.lo + m.hi) // 3)
    y = m.out([2, 3, 4], scale=q[2] * (4 if op == "MUL" else 1))
    options = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions"}[op]
    m.g.op(op, [a, b], [y], options, version=2, fused_activation_function=case[2])
    exact(m.finish(y))


@pytest.mark.parametrize("op", ["MAXIMUM", "MINIMUM"])
@pytest.mark.parametrize("case", cases(), ids=ids)
def test_maximum_minimum(op, case):
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    a, b = m.input("a", [2, 3]), m.input("b", [2, 3])
    y = m.out([2, 3], scale=m.s_in, zero_point=m.z_in)
    m.g.op(op, [a, b], [y], version=2)
    exact(m.finish(y))


# -- pooling, reductions, concatenation, resizing ---------------------------------------------

@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
@pytest.mark.parametrize("case", cases(fused=FUSED), ids=ids)
def test_pool(op, case):
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", [1, 5, 6, 3])
    # TFLite pooling keeps the input's quantization
    y = m.out([1, 3, 3, 3], scale=m.s_in, zero_point=m.z_in)
    m.g.op(op, [x], [y], "Pool2DOptions", version=2, padding="SAME", stride_w=2, stride_h=2, filter_width=3,
           filter_height=2, fused_activation_function=case[2])
    exact(m.finish(y))


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("case", cases(), ids=ids)
def test_mean(case, keep):
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", [2, 4, 5, 3])
    y = m.out([2, 1, 1, 3] if keep else [2, 3])
    m.g.op("MEAN", [x, m.g.const("axes", np.asarray([1, 2], np.int32))], [y], "ReducerOptions", version=2,
           keep_dims=keep)
    exact(m.finish(y))


@pytest.mark.parametrize("t", ["int8", "uint8"])
def test_mean_over_nine_within_one_unit(t):
    """Over 3 x 3 with its own output quantization: LiteRT divides its s_in / s_out multiplier by the
    count in integers, NNAPI quantizes s_in / (count * s_out): 1 unit apart in a few of 64 channels."""
    m = Q(t, (0.028, -118, 0.0133, -108) if t == "int8" else (0.028, 10, 0.0133, 20))
    x = m.input("x", [1, 3, 3, 64])
    y = m.out([1, 1, 1, 64])
    m.g.op("MEAN", [x, m.g.const("axes", np.asarray([1, 2], np.int32))], [y], "ReducerOptions", version=2,
           keep_dims=True)
    assert differences(m.finish(y)) <= 1


@pytest.mark.parametrize("case", cases(), ids=ids)
def test_mean_same_quantization_within_one_unit(case):
    """Input and output sharing a quantization: NNAPI's reference truncates the stored sum divided
    by the count, LiteRT's rounds it: at most 1 unit apart (docs/quantized-arithmetic.md)."""
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", [2, 4, 5, 3])
    y = m.out([2, 3], scale=m.s_in, zero_point=m.z_in)
    m.g.op("MEAN", [x, m.g.const("axes", np.asarray([1, 2], np.int32))], [y], "ReducerOptions", version=2)
    assert differences(m.finish(y)) <= 1


@pytest.mark.parametrize("case", cases(), ids=ids)
def test_concatenation(case):
    """uint8 inputs may each have their own quantization; LiteRT's int8 kernel needs the output's."""
    t = case[0]
    q = QUANTS[t][case[1]]
    m = Q(t, q)
    a = m.input("a", [1, 2, 3], *((q[2], q[3]) if t == "int8" else ()))
    b = m.input("b", [1, 2, 2], *((q[2], q[3]) if t == "int8" else (q[0] * 3, m.hi)))
    y = m.out([1, 2, 5])
    m.g.op("CONCATENATION", [a, b], [y], "ConcatenationOptions", axis=2)
    exact(m.finish(y))


@pytest.mark.parametrize("op", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
@pytest.mark.parametrize("mode", ["plain", "align_corners", "half_pixel_centers"])
@pytest.mark.parametrize("case", cases()[::2], ids=ids)
def test_resize(op, mode, case):
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", [1, 3, 4, 2])
    y = m.out([1, 7, 5, 2], scale=m.s_in, zero_point=m.z_in)
    options = "ResizeBilinearOptions" if op == "RESIZE_BILINEAR" else "ResizeNearestNeighborOptions"
    flags = {"plain": {}, "align_corners": dict(align_corners=True),
             "half_pixel_centers": dict(half_pixel_centers=True)}[mode]
    m.g.op(op, [x, m.g.const("size", np.asarray([7, 5], np.int32))], [y], options, version=3, **flags)
    worst = differences(m.finish(y))
    # LiteRT's int8 bilinear kernel interpolates in 10-bit fixed point, NNAPI's reference (int8 run as
    # uint8) in float32: at most 1 unit apart at these sizes (docs/quantized-arithmetic.md)
    assert worst <= (1 if (op, t) == ("RESIZE_BILINEAR", "int8") else 0)


# -- activations ----------------------------------------------------------------------------

# TFLite's fixed output quantization of the int8 / uint8 kernels
FIXED_OUT = {("LOGISTIC", "int8"): (1 / 256, -128), ("LOGISTIC", "uint8"): (1 / 256, 0),
             ("TANH", "int8"): (1 / 128, 0), ("TANH", "uint8"): (1 / 128, 128),
             ("SOFTMAX", "int8"): (1 / 256, -128), ("SOFTMAX", "uint8"): (1 / 256, 0)}


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH", "SOFTMAX"])
@pytest.mark.parametrize("case", cases(), ids=ids)
def test_fixed_output_activation(op, case):
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", [3, 9])
    y = m.out([3, 9], *FIXED_OUT[(op, t)])
    if op == "SOFTMAX":
        m.g.op(op, [x], [y], "SoftmaxOptions", version=2, beta=1.0)
    else:
        m.g.op(op, [x], [y], version=2)
    exact(m.finish(y))


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
@pytest.mark.parametrize("case", cases(), ids=ids)
def test_lookup_activations_on_every_input(op, case):
    """All 256 inputs: equal to the reference kernels and to LiteRT's built-in int8/uint8 kernels
    (their lookup tables; measured equal in ai-edge-litert 2.3)."""
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", [1, 256])
    y = m.out([1, 256], *FIXED_OUT[(op, t)])
    m.g.op(op, [x], [y], version=2)
    every = [np.arange(m.lo, m.hi + 1).astype(m.np).reshape(1, 256)]
    data = m.finish(y)
    assert differences(data, inputs=every) == 0
    assert differences(data, inputs=every, reference="litert") == 0


# op -> the operator version whose kernel takes int8 (and uint8)
UNARY = {"HARD_SWISH": 1, "LEAKY_RELU": 2, "RELU": 2, "RELU6": 2, "RELU_N1_TO_1": 1, "ELU": 1, "ABS": 2}
CLAMPS = ("RELU", "RELU6", "RELU_N1_TO_1")
# LiteRT refuses HARD_SWISH when the output step is much finer than the input's (q3); it has no
# uint8 ABS; BUILTIN_REF has no ELU (its built-in kernel is the table the float detour reproduces)
UNARY_CASES = [(op, c) for op in UNARY for c in cases()
               if not (op == "HARD_SWISH" and c[1] == 3) and not (op in ("ABS", "ELU") and c[0] == "uint8")]


def unary_model(op, case, same_quant=False) -> bytes:
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", [3, 9])
    y = m.out([3, 9], *((m.s_in, m.z_in) if same_quant else ()))
    if op == "LEAKY_RELU":
        m.g.op(op, [x], [y], "LeakyReluOptions", version=UNARY[op], alpha=0.2)
    else:
        m.g.op(op, [x], [y], version=UNARY[op])
    return m.finish(y)


@pytest.mark.parametrize("op,case", UNARY_CASES, ids=lambda v: v if isinstance(v, str) else ids(v))
def test_unary_activation(op, case):
    """Clamps keep the input's quantization here (a requantizing clamp: test_requantizing_clamp)."""
    exact(unary_model(op, case, same_quant=op in CLAMPS), reference="litert" if op == "ELU" else "litert-ref")


@pytest.mark.parametrize("op", CLAMPS)
def test_requantizing_clamp_within_one_unit(op):
    """A clamp with its own output quantization: LiteRT requantizes with one fixed-point multiplier,
    NNAPI has only ADD(x, 0) for it (two roundings): at most 1 unit apart (docs/quantized-arithmetic.md)."""
    worst = max(differences(unary_model(op, c), seeds=range(6)) for c in cases())
    assert worst <= 1


@pytest.mark.parametrize("case", cases(), ids=ids)
def test_prelu(case):
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", [2, 3, 4])
    alpha = m.g.const("alpha", m.rng.integers(m.lo, m.hi + 1, (1, 1, 4)).astype(m.np), scale=0.01,
                      zero_point=(m.lo + m.hi + 1) // 2)
    y = m.out([2, 3, 4])
    m.g.op("PRELU", [x, alpha], [y])
    exact(m.finish(y))


# -- type conversions and requantizing shape operations ----------------------------------------

@pytest.mark.parametrize("case", cases(), ids=ids)
def test_quantize_dequantize(case):
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    x = m.g.input("x", [4, 6])
    q = m.out([4, 6], scale=m.s_in, zero_point=m.z_in, name="q")
    m.g.op("QUANTIZE", [x], [q])
    r = m.out([4, 6], name="r")
    m.g.op("QUANTIZE", [q], [r], version=2)  # requantization
    f = m.g.tensor("f", [4, 6])
    m.g.op("DEQUANTIZE", [r], [f], version=2)
    m.g.output(q, r)
    data = m.finish(f)
    exact(data)


@pytest.mark.parametrize("src,dst", [("INT8", "UINT8"), ("UINT8", "INT8")])
def test_quantize_between_int8_and_uint8(src, dst):
    """int8 <-> uint8 QUANTIZE: with equal scales exact (the zero point moves by 128); with other
    scales NNAPI has no integer requantization between the two codes, so the converter goes through
    float (DEQUANTIZE, QUANTIZE) where LiteRT uses one fixed-point multiplier: at most 1 unit."""
    for (si, zi, so, zo) in [(0.05, -3, 0.05, 125), (0.0039, -128, 0.0039, 0), (0.05, -3, 0.1, 131),
                             (0.02, 10, 0.0039, 0), (0.7, 127, 0.004, 255)]:
        if src == "UINT8":
            zi, zo = min(zi + 128, 255), zo - 128
        g = GraphBuilder()
        x = g.input("x", [4, 16], src, scale=si, zero_point=zi)
        y = g.tensor("y", [4, 16], dst, scale=so, zero_point=zo)
        g.op("QUANTIZE", [x], [y], version=2)
        g.output(y)
        assert differences(g.finish()) <= (0 if si == so else 1)


@pytest.mark.parametrize("op", ["RESHAPE", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "PAD", "GATHER", "STRIDED_SLICE",
                                "SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "REDUCE_MAX", "SPLIT"])
@pytest.mark.parametrize("case", cases()[:3], ids=ids)
def test_shape_like(op, case):
    """Operations that keep the input's quantization in TFLite."""
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", [1, 4, 4, 2])
    same = dict(scale=m.s_in, zero_point=m.z_in)
    c = lambda name, v: m.g.const(name, np.asarray(v, np.int32))  # noqa: E731
    table = {
        "RESHAPE": ([x, c("shape", [4, 8])], [[4, 8]], None, {}),
        "SQUEEZE": ([x], [[4, 4, 2]], "SqueezeOptions", dict(squeeze_dims=[0])),
        "EXPAND_DIMS": ([x, c("axis", [1])], [[1, 1, 4, 4, 2]], None, {}),
        "TRANSPOSE": ([x, c("perm", [0, 3, 1, 2])], [[1, 2, 4, 4]], None, {}),
        "PAD": ([x, c("pads", [[0, 0], [1, 0], [0, 2], [0, 0]])], [[1, 5, 6, 2]], None, {}),
        "GATHER": ([x, c("idx", [3, 0, 2])], [[1, 3, 4, 2]], "GatherOptions", dict(axis=1)),
        "STRIDED_SLICE": ([x, c("begin", [0, 1, 0, 0]), c("end", [1, 4, 4, 2]), c("strides", [1, 2, 1, 1])],
                          [[1, 2, 4, 2]], "StridedSliceOptions", {}),
        "SPACE_TO_DEPTH": ([x], [[1, 2, 2, 8]], "SpaceToDepthOptions", dict(block_size=2)),
        "DEPTH_TO_SPACE": ([x], [[1, 8, 8, 0]], None, {}),
        "REDUCE_MAX": ([x, c("axes", [1, 2])], [[1, 2]], "ReducerOptions", {}),
        "SPLIT": ([c("axis", 3), x], [[1, 4, 4, 1], [1, 4, 4, 1]], "SplitOptions", dict(num_splits=2)),
    }
    ins, shapes, options, fields = table[op]
    if op == "DEPTH_TO_SPACE":
        x2 = m.input("x2", [1, 2, 2, 8])
        ins, shapes, options, fields = [x2], [[1, 4, 4, 2]], "DepthToSpaceOptions", dict(block_size=2)
        m.g.sg.inputs.remove(x)
    outs = [m.out(s, name=f"y{k}", **same) for k, s in enumerate(shapes)]
    m.g.op(op, ins, outs, options, version=1 if op in ("RESHAPE", "SQUEEZE", "EXPAND_DIMS", "DEPTH_TO_SPACE") else 2,
           **fields)
    exact(m.finish(*outs))


def test_xnnpack_requantization_within_one_unit():
    """XNNPACK requantizes convolutions and fully connected layers with a float32 scale, not the
    reference's fixed-point multiplier: its results are at most 1 unit from the reference's (and
    so from the executor's); measured over a slice of the sweep above."""
    models = []
    for c in CONV_CASES[::3]:
        t, pc = _type(c)
        m = Q(t, QUANTS[t][c[1]])
        x = m.input("x", [1, 5, 6, 3])
        w, s = m.weights([4, 3, 3, 3], 0 if pc else None)
        y = m.out([1, 5, 6, 4])
        m.g.op("CONV_2D", [x, w, m.bias(4, s)], [y], "Conv2DOptions", version=3, padding="SAME", stride_w=1,
               stride_h=1, fused_activation_function=c[2])
        models.append(m.finish(y))
    worst = [differences(d, seeds=(0,), reference="litert-xnnpack") for d in models]
    assert max(worst) <= 1


# -- more operations the TFLite converter emits quantized ---------------------------------------

def _ints(*v):
    return np.asarray(v, np.int32)


# op -> (input shape, constant inputs after x (None = x), output shapes, options, fields, version,
#        output keeps the input's quantization)
MORE = {
    "REDUCE_MIN": ([2, 4, 3], [_ints(1, 2)], [[2]], "ReducerOptions", {}, 2, True),
    "L2_NORMALIZATION": ([2, 6], [], [[2, 6]], "L2NormOptions", {}, 2, "l2"),
    "BATCH_TO_SPACE_ND": ([4, 2, 2, 1], [_ints(2, 2), _ints([0, 0], [0, 0])], [[1, 4, 4, 1]], None, {}, 2, True),
    "SPACE_TO_BATCH_ND": ([1, 4, 4, 1], [_ints(2, 2), _ints([0, 0], [0, 0])], [[4, 2, 2, 1]], None, {}, 2, True),
    "SLICE": ([3, 4], [_ints(1, 0), _ints(2, 3)], [[2, 3]], None, {}, 2, True),
    "TILE": ([2, 3], [_ints(2, 1)], [[4, 3]], None, {}, 2, True),
    "MIRROR_PAD": ([3, 4], [_ints([1, 1], [2, 0])], [[5, 6]], "MirrorPadOptions", dict(mode="REFLECT"), 2, True),
    "REVERSE_V2": ([3, 4], [_ints(1)], [[3, 4]], None, {}, 2, True),
    "BROADCAST_TO": ([1, 4], [_ints(3, 4)], [[3, 4]], None, {}, 2, True),
    "PADV2": ([2, 3], [_ints([1, 0], [0, 2])], [[3, 5]], None, {}, 2, "padv2"),
    "SQUARED_DIFFERENCE": ([2, 5], [None], [[2, 5]], None, {}, 2, False),
    "RSQRT": ([2, 5], [], [[2, 5]], None, {}, 2, False),
    "GELU": ([2, 5], [], [[2, 5]], "GeluOptions", dict(approximate=True), 2, False),
}
# LiteRT's own quantization requirements for the outputs of these kernels
FIXED = {("L2_NORMALIZATION", "int8"): (1 / 128, 0), ("L2_NORMALIZATION", "uint8"): (1 / 128, 128)}


def more_model(op, case) -> bytes:
    x_shape, consts, shapes, options, fields, version, keep = MORE[op]
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", x_shape)
    ins = [x]
    for k, c in enumerate(consts):
        if c is None:  # a second input of its own quantization
            ins.append(m.input("x2", x_shape, scale=m.s_in * 1.7, zero_point=(m.lo + m.hi) // 2))
        else:
            ins.append(m.g.const(f"c{k}", c))
    if op == "PADV2":
        ins.append(m.g.const("pad_value", np.asarray([min(m.z_in + 3, m.hi)], m.np), scale=m.s_in, zero_point=m.z_in))
    q = {}
    if keep is True or keep == "padv2":
        q = dict(scale=m.s_in, zero_point=m.z_in)
    elif keep == "l2":
        q = dict(zip(("scale", "zero_point"), FIXED[(op, t)]))
    outs = [m.out(s, name=f"y{k}", **q) for k, s in enumerate(shapes)]
    m.g.op(op, ins, outs, options, version=version, **fields)
    return m.finish(*outs)


# LiteRT has no uint8 kernel for these
INT8_ONLY = ("SQUARED_DIFFERENCE", "RSQRT")
# (op, type) -> units: L2_NORMALIZATION int8 is the uint8 kernel's arithmetic in NNAPI (LiteRT's
# int8 kernel rounds 7 bits earlier); SQUARED_DIFFERENCE has no quantized NNAPI operation, so the
# converter computes it in float32 (DEQUANTIZE, SUB, MUL, QUANTIZE), LiteRT in fixed point
BOUNDS = {("L2_NORMALIZATION", "int8"): 1, ("SQUARED_DIFFERENCE", "int8"): 2}
MORE_CASES = [(op, c) for op in MORE for c in cases() if not (op in INT8_ONLY and c[0] == "uint8")
              and not (op == "RSQRT" and QUANTS[c[0]][c[1]][1] == 127)]


@pytest.mark.parametrize("op,case", MORE_CASES, ids=lambda v: v if isinstance(v, str) else ids(v))
def test_more_operations(op, case):
    inputs = None
    if op == "RSQRT":  # LiteRT's kernel is defined for positive values only
        zp = QUANTS[case[0]][case[1]][1]
        inputs = [np.random.default_rng(case[1]).integers(zp + 1, TYPES[case[0]][3] + 1, (2, 5))
                  .astype(TYPES[case[0]][1])]
    assert differences(more_model(op, case), inputs=inputs) <= BOUNDS.get((op, case[0]), 0)
