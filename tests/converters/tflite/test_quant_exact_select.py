"""Per-operation exactness, continued (test_quant_exact.py has the arithmetic families): the quantized
comparisons, arg-min/max, selection, packing, splitting, lookups and the integer LSTM, each a single-operation
TFLite model run by the executor and by LiteRT's reference kernels (BUILTIN_REF), compared bit for bit."""
from pathlib import Path

import numpy as np
import pytest

from converters.extract import tflite_submodel
from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.test_quant_exact import QUANTS, Q, cases, differences, exact, ids

COMPARISONS = ["EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL"]


@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("case", cases(), ids=ids)
def test_comparison(op, case):
    """Broadcast inputs sharing a quantization. The converter refuses what NNAPI computes otherwise than LiteRT:
    different quantizations and scales below 1/256 (LiteRT rescales both in fixed point, which merges
    neighbouring values there; NNAPI compares the real values)."""
    from converters.tflite import convert
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    a, b = m.input("a", [2, 3, 4]), m.input("b", [1, 4])
    y = m.g.tensor("y", [2, 3, 4], "BOOL")
    m.g.op(op, [a, b], [y], version=2)
    data = m.finish(y)
    if m.s_in < 1 / 256:
        assert "below 1/256" in convert(data, feature_level=8, partial=True).unsupported[0].reason
        return
    exact(data, seeds=range(4))


@pytest.mark.parametrize("op", COMPARISONS[:3])
def test_comparison_of_different_quantizations_is_refused(op):
    m = Q("int8", QUANTS["int8"][0])
    a, b = m.input("a", [2, 3]), m.input("b", [2, 3], scale=m.s_in * 2)
    y = m.g.tensor("y", [2, 3], "BOOL")
    m.g.op(op, [a, b], [y], version=2)
    from converters.tflite import convert
    assert "different quantization" in convert(m.finish(y), feature_level=8, partial=True).unsupported[0].reason


@pytest.mark.parametrize("op", ["ARG_MAX", "ARG_MIN"])
@pytest.mark.parametrize("axis", [0, 2])
@pytest.mark.parametrize("case", cases()[::2], ids=ids)
def test_arg_min_max(op, axis, case):
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", [3, 4, 5])
    shape = [4, 5] if axis == 0 else [3, 4]
    y = m.g.tensor("y", shape, "INT32")
    options = "ArgMaxOptions" if op == "ARG_MAX" else "ArgMinOptions"
    m.g.op(op, [x, m.g.const("axis", np.asarray([axis], np.int32))], [y], options, version=2,
           output_type=2)  # TensorType.INT32
    exact(m.finish(y), seeds=range(4))


@pytest.mark.parametrize("op", ["SELECT", "SELECT_V2"])
@pytest.mark.parametrize("case", cases()[::2], ids=ids)
def test_select(op, case):
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    cond = m.g.input("c", [2, 3], "BOOL")
    a, b = m.input("a", [2, 3]), m.input("b", [2, 3])
    y = m.out([2, 3], scale=m.s_in, zero_point=m.z_in)
    m.g.op(op, [cond, a, b], [y], version=2 if op == "SELECT_V2" else 2)
    exact(m.finish(y), seeds=range(4))


@pytest.mark.parametrize("case", cases()[::2], ids=ids)
def test_pack_unpack(case):
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    same = dict(scale=m.s_in, zero_point=m.z_in)
    a, b = m.input("a", [2, 3]), m.input("b", [2, 3])
    packed = m.out([2, 2, 3], name="packed", **same)
    m.g.op("PACK", [a, b], [packed], "PackOptions", version=2, values_count=2, axis=1)
    parts = [m.out([2, 2], name=f"u{k}", **same) for k in range(3)]
    m.g.op("UNPACK", [packed], parts, "UnpackOptions", version=2, num=3, axis=2)
    exact(m.finish(packed, *parts))


@pytest.mark.parametrize("case", cases()[::2], ids=ids)
def test_split_v(case):
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    same = dict(scale=m.s_in, zero_point=m.z_in)
    x = m.input("x", [2, 7])
    parts = [m.out([2, n], name=f"y{k}", **same) for k, n in enumerate((1, 4, 2))]
    m.g.op("SPLIT_V", [x, m.g.const("sizes", np.asarray([1, -1, 2], np.int32)), m.g.const("axis", np.asarray(1, np.int32))],
           parts, "SplitVOptions", version=2, num_splits=3)
    exact(m.finish(*parts))


@pytest.mark.parametrize("case", cases()[::2], ids=ids)
def test_embedding_lookup(case):
    """Quantized rows looked up by index: the output keeps the table's quantization."""
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    ids_ = m.g.input("ids", [4], "INT32")
    table = m.g.const("table", m.rng.integers(m.lo, m.hi + 1, (5, 3)).astype(m.np), scale=m.s_in, zero_point=m.z_in)
    y = m.out([4, 3], scale=m.s_in, zero_point=m.z_in)
    m.g.op("EMBEDDING_LOOKUP", [ids_, table], [y], version=3 if t == "int8" else 1)
    data = m.finish(y)
    assert differences(data, inputs=[np.asarray([4, 0, 2, 2], np.int32)]) == 0


@pytest.mark.parametrize("case", cases()[::2], ids=ids)
def test_topk_v2(case):
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", [3, 8])
    values = m.out([3, 3], scale=m.s_in, zero_point=m.z_in)
    indices = m.g.tensor("i", [3, 3], "INT32")
    m.g.op("TOPK_V2", [x, m.g.const("k", np.asarray(3, np.int32))], [values, indices], version=2)
    # distinct values per row: ties order by index in both, but random uint8 rows tie often
    rows = [np.stack([np.random.default_rng(s * 3 + r).permutation(np.arange(m.lo, m.hi + 1))[:8]
                      for r in range(3)]).astype(m.np) for s in range(3)]
    assert max(differences(m.finish(values, indices), inputs=[x_]) for x_ in rows) == 0


ZOO_TF = Path(__file__).resolve().parents[2] / "zoo" / "models" / "tf"


def test_integer_lstm():
    """UNIDIRECTIONAL_SEQUENCE_LSTM of TensorFlow's full-int8 text model (8x8_16: int8 activations, int16
    cell), cut out of the model as a single-operation model: one QUANTIZED_LSTM per step in NNAPI."""
    from converters.tflite import convert
    from ai_edge_litert import schema_py_generated as schema
    data = (ZOO_TF / "lstm_text_int8.tflite").read_bytes()
    model = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
    sg = model.subgraphs[0]
    (k,) = [i for i, o in enumerate(sg.operators)
            if model.operatorCodes[o.opcodeIndex].builtinCode == schema.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM]
    op = sg.operators[k]
    single = tflite_submodel(data, 0, [k], [op.inputs[0]], [op.outputs[0]])
    assert "QUANTIZED_LSTM" in [o.code.name for o in convert(single, feature_level=8).model.operations]
    assert differences(single, seeds=range(3)) == 0


def test_quantized_16bit_lstm():
    """TFLite's basic LSTM kernel (uint8 activations, int16 cell state, the fixed quantizations it requires) as
    NNAPI QUANTIZED_16BIT_LSTM."""
    g = GraphBuilder()
    n_in, units, batch = 4, 4, 2   # the converter needs as many input features as units
    rng = np.random.default_rng(3)
    x = g.input("x", [batch, n_in], "UINT8", scale=1 / 128, zero_point=128)
    h = g.input("h", [batch, units], "UINT8", scale=1 / 128, zero_point=128)
    w = g.const("w", rng.integers(0, 256, (4 * units, n_in + units)).astype(np.uint8), scale=0.02, zero_point=130)
    b = g.const("b", rng.integers(-4000, 4000, 4 * units).astype(np.int32), scale=0.02 / 128, zero_point=0)
    c = g.input("c", [batch, units], "INT16", scale=2 ** -11, zero_point=0)
    h_out = g.tensor("h_out", [batch, units], "UINT8", scale=1 / 128, zero_point=128)
    c_out = g.tensor("c_out", [batch, units], "INT16", scale=2 ** -11, zero_point=0)
    concat = g.tensor("concat", [batch, n_in + units], "UINT8", scale=1 / 128, zero_point=128)
    act = g.tensor("activ", [batch, 4 * units], "INT16", scale=2 ** -12, zero_point=0)
    g.op("LSTM", [x, h, w, b, c], [h_out, c_out, concat, act], "LSTMOptions", version=2, kernel_type=1,  # LSTMKernelType.BASIC
         fused_activation_function="TANH")
    g.output(h_out, c_out)
    data = g.finish()
    from converters.tflite import convert
    r = convert(data, feature_level=8)
    assert r.complete, [(n.op, n.reason) for n in r.unsupported]
    assert "QUANTIZED_16BIT_LSTM" in [o.code.name for o in r.model.operations]
    assert differences(data, seeds=range(3)) == 0


@pytest.mark.parametrize("case", cases()[::2] + [("int8pc", 0, None)], ids=ids)
def test_grouped_conv_2d(case):
    """A CONV_2D whose filter holds input_channels / 2 channels: NNAPI GROUPED_CONV_2D."""
    from tests.converters.tflite.test_quant_exact import _type, check_conv
    t, pc = _type(case)
    m = Q(t, QUANTS[t][case[1]])
    x = m.input("x", [1, 5, 6, 4])
    w, s = m.weights([6, 3, 3, 2], 0 if pc else None)
    y = m.out([1, 5, 6, 6])
    m.g.op("CONV_2D", [x, w, m.bias(6, s)], [y], "Conv2DOptions", version=3, padding="SAME", stride_w=1,
           stride_h=1, fused_activation_function="RELU6")
    data = m.finish(y)
    from converters.tflite import convert
    assert "GROUPED_CONV_2D" in [o.code.name for o in convert(data, feature_level=8).model.operations]
    check_conv(case, data)


@pytest.mark.parametrize("case", cases()[::2], ids=ids)
def test_channel_shuffle(case):
    """RESHAPE, TRANSPOSE, RESHAPE exchanging channel groups (ShuffleNet): one NNAPI CHANNEL_SHUFFLE."""
    t = case[0]
    m = Q(t, QUANTS[t][case[1]])
    same = dict(scale=m.s_in, zero_point=m.z_in)
    x = m.input("x", [1, 2, 3, 6])
    split = m.out([1, 2, 3, 2, 3], name="split", **same)
    swapped = m.out([1, 2, 3, 3, 2], name="swapped", **same)
    y = m.out([1, 2, 3, 6], **same)
    c = lambda name, v: m.g.const(name, np.asarray(v, np.int32))  # noqa: E731
    m.g.op("RESHAPE", [x, c("s1", [1, 2, 3, 2, 3])], [split])
    m.g.op("TRANSPOSE", [split, c("perm", [0, 1, 2, 4, 3])], [swapped], version=2)
    m.g.op("RESHAPE", [swapped, c("s2", [1, 2, 3, 6])], [y])
    data = m.finish(y)
    from converters.tflite import convert
    assert "CHANNEL_SHUFFLE" in [o.code.name for o in convert(data, feature_level=8).model.operations]
    exact(data)


@pytest.mark.parametrize("values", ["UINT8", "INT8", "FLOAT32"])
def test_hashtable_lookup(values):
    """The hits output is quant8 in NNAPI (scale 1: the same 0/1 bytes); uint8 values are copied (NNAPI has no
    int8 HASHTABLE_LOOKUP: refused)."""
    g = GraphBuilder()
    lookups = g.input("lookups", [5], "INT32")
    keys = g.const("keys", np.asarray([-3, 0, 4, 9], np.int32))
    rng = np.random.default_rng(1)
    data = {"UINT8": rng.integers(0, 256, (4, 3)).astype(np.uint8), "INT8": rng.integers(-128, 128, (4, 3)).astype(np.int8),
            "FLOAT32": rng.normal(0, 1, (4, 3)).astype(np.float32)}[values]
    q = dict(scale=0.05, zero_point=7) if values != "FLOAT32" else {}
    table = g.const("values", data, **q)
    out = g.tensor("out", [5, 3], values, **q)
    hits = g.tensor("hits", [5], "UINT8")
    g.op("HASHTABLE_LOOKUP", [lookups, keys, table], [out, hits])
    g.output(out, hits)
    if values == "INT8":
        from converters.tflite import convert
        assert "TENSOR_QUANT8_ASYMM_SIGNED" in convert(g.finish(), feature_level=8, partial=True).unsupported[0].reason
        return
    assert differences(g.finish(), inputs=[np.asarray([9, 1, -3, 4, 100], np.int32)]) == 0


@pytest.mark.parametrize("kind", [1, 2], ids=["sparse", "dense"])
def test_lsh_projection_of_uint8(kind):
    """The hash reads the stored bytes of a uint8 (quant8) input."""
    g = GraphBuilder()
    hashes = g.const("hash", np.random.default_rng(2).normal(0, 1, (3, 4)).astype(np.float32))
    x = g.input("x", [5, 6], "UINT8", scale=0.1, zero_point=3)
    y = g.tensor("y", [3] if kind == 1 else [12], "INT32")
    g.op("LSH_PROJECTION", [hashes, x], [y], "LSHProjectionOptions", type=kind)
    g.output(y)
    assert differences(g.finish(), seeds=range(3)) == 0
