"""TFLite CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, FULLY_CONNECTED, BATCH_MATMUL and DENSIFY
-> NNAPI, compared with LiteRT at feature levels 1, 3, 4, 8 (plus a MobileNet-style chain)."""
import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema

from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.harness import assert_matches_litert, unsupported_reason

LEVELS = [1, 3, 4, 8]
# activations: (tflite type, input quantization, output quantization)
ACTS = {
    "float32": ("FLOAT32", {}, {}),
    "uint8": ("UINT8", dict(scale=0.05, zero_point=120), dict(scale=0.25, zero_point=131)),
    "int8": ("INT8", dict(scale=0.04, zero_point=-3), dict(scale=0.2, zero_point=5)),
    "int8pc": ("INT8", dict(scale=0.04, zero_point=-3), dict(scale=0.2, zero_point=5)),
}
# the lowest feature level of a convolution per type: int8 is rewritten to uint8 below level 4,
# per-channel filters need level 3
CONV_LEVEL = {"float32": 1, "uint8": 1, "int8": 1, "int8pc": 3}


def _level_needed(type_name, level, base=1):
    need = max(base, CONV_LEVEL[type_name])
    return max(need, 4) if level >= 4 and type_name.startswith("int8") else need


class Net:
    """A GraphBuilder with seeded weights and biases of one type family."""

    def __init__(self, type_name, seed=0):
        self.g, self.type_name = GraphBuilder(), type_name
        self.dt, self.in_q, self.out_q = ACTS[type_name]
        self.rng = np.random.default_rng(seed)

    def input(self, shape):
        return self.g.input("x", shape, self.dt, **self.in_q)

    def act(self, name, shape, q=None):
        return self.g.tensor(name, shape, self.dt, **(self.out_q if q is None else q))

    def weights(self, name, shape, axis=0):
        """(weights tensor, its scales or None for float) of this type; per-channel along `axis`."""
        t = self.type_name
        if t == "float32":
            return self.g.const(name, (0.5 * self.rng.standard_normal(shape)).astype(np.float32)), None
        if t == "uint8":
            return self.g.const(name, self.rng.integers(0, 256, shape).astype(np.uint8), scale=0.01, zero_point=128), \
                np.full(1, 0.01, np.float32)
        data = self.rng.integers(-127, 128, shape).astype(np.int8)
        if t == "int8":
            return self.g.const(name, data, scale=0.01, zero_point=0), np.full(1, 0.01, np.float32)
        scales = (0.004 + 0.01 * self.rng.random(shape[axis])).astype(np.float32)
        return self.g.const(name, data, scale=scales, zero_point=0, axis=axis), scales

    def bias(self, name, n, w_scales, in_scale=None):
        if self.type_name == "float32":
            return self.g.const(name, self.rng.standard_normal(n).astype(np.float32))
        scale = np.float32(in_scale or self.in_q["scale"]) * w_scales
        return self.g.const(name, self.rng.integers(-300, 300, n).astype(np.int32), scale=scale, zero_point=0)

    def finish(self, *outputs):
        self.g.output(*outputs)
        return self.g.finish()


def conv_model(op, type_name, x_shape, w_shape, y_shape, version=1, **opts):
    net = Net(type_name)
    x = net.input(x_shape)
    axis = 3 if op == "DEPTHWISE_CONV_2D" else 0
    w, scales = net.weights("w", w_shape, axis)
    inputs = [x, w, net.bias("b", w_shape[axis], scales)]  # LiteRT's kernels need the bias
    y = net.act("y", y_shape)
    options = {"CONV_2D": "Conv2DOptions", "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions"}[op]
    opts = dict(dict(stride_w=1, stride_h=1), **opts)
    net.g.op(op, inputs, [y], options, version=version, **opts)
    return net.finish(y)


def check(data, type_name, level, base=1, ops=None, exact_level=True):
    """Below the level the model needs: reported as such; else matches LiteRT and needs exactly that level."""
    need = _level_needed(type_name, level, base)
    if level < need:
        assert unsupported_reason(data, level).reason_code == "feature_level_too_low"
        return None
    result = assert_matches_litert(data, level)
    if exact_level:
        assert max(n.min_feature_level for n in result.nodes) == need
    if ops is not None:
        assert [op for n in result.nodes for op in n.nnapi_ops] == ops
    return result


# -- CONV_2D / DEPTHWISE_CONV_2D -------------------------------------------------------------

@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("type_name", list(ACTS))
def test_conv_2d(type_name, level):
    data = conv_model("CONV_2D", type_name, [1, 3, 5, 2], [4, 3, 2, 2], [1, 2, 3, 4], padding="SAME",
                      stride_w=2, stride_h=2, fused_activation_function="RELU")
    check(data, type_name, level, ops=["CONV_2D"])


@pytest.mark.parametrize("level", [1, 3])
def test_dilated_conv_needs_level_3(level):
    data = conv_model("CONV_2D", "float32", [1, 5, 6, 2], [3, 2, 3, 2], [1, 3, 2, 3], padding="VALID",
                      dilation_w_factor=2, dilation_h_factor=2)
    check(data, "float32", level, base=3)


@pytest.mark.parametrize("type_name", ["float32", "uint8"])
def test_depthwise_valid_padding_relu1(type_name):
    data = conv_model("DEPTHWISE_CONV_2D", type_name, [1, 4, 5, 3], [1, 2, 3, 3], [1, 3, 3, 3], padding="VALID",
                      fused_activation_function="RELU_N1_TO_1", depth_multiplier=1)
    check(data, type_name, 1, ops=["DEPTHWISE_CONV_2D"])


@pytest.mark.parametrize("level", [1, 3])
def test_grouped_conv(level):
    data = conv_model("CONV_2D", "float32", [1, 3, 5, 4], [6, 3, 3, 2], [1, 3, 5, 6], version=6, padding="SAME",
                      stride_w=1, stride_h=1)
    check(data, "float32", level, base=3, ops=["GROUPED_CONV_2D"])


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("type_name", list(ACTS))
def test_depthwise_conv_2d(type_name, level):
    data = conv_model("DEPTHWISE_CONV_2D", type_name, [1, 3, 5, 2], [1, 3, 3, 4], [1, 3, 5, 4], padding="SAME",
                      stride_w=1, stride_h=1, depth_multiplier=2, fused_activation_function="RELU6")
    check(data, type_name, level, ops=["DEPTHWISE_CONV_2D"])


@pytest.mark.parametrize("level", [1, 3, 8])
def test_depthwise_dilation_and_stride(level):
    data = conv_model("DEPTHWISE_CONV_2D", "uint8", [1, 6, 7, 2], [1, 2, 2, 2], [1, 2, 3, 2], version=2,
                      padding="VALID", stride_w=2, stride_h=2, depth_multiplier=1, dilation_w_factor=2,
                      dilation_h_factor=3)
    check(data, "uint8", level, base=3)


def test_fused_tanh_is_reported():
    data = conv_model("CONV_2D", "float32", [1, 3, 5, 2], [4, 1, 1, 2], [1, 3, 5, 4], padding="SAME",
                      fused_activation_function="TANH")
    assert unsupported_reason(data, 8).reason_code == "fused_activation"


@pytest.mark.parametrize("type_name", ["uint8", "int8pc"])
def test_bias_scale_mismatch_is_reported(type_name):
    net = Net(type_name)
    x = net.input([1, 3, 5, 2])
    w, scales = net.weights("w", [4, 1, 1, 2])
    b = net.bias("b", 4, scales * 2)
    y = net.act("y", [1, 3, 5, 4])
    net.g.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", padding="SAME")
    node = unsupported_reason(net.finish(y), 8)
    assert node.reason_code == "quantization_type" and "'b'" in node.reason


# op -> (input shape, float16 weights shape, output shape, options table, options)
FLOAT16_CASES = {
    "CONV_2D": ([1, 3, 5, 2], [4, 3, 3, 2], [1, 3, 5, 4], "Conv2DOptions", dict(padding="SAME")),
    "DEPTHWISE_CONV_2D": ([1, 3, 5, 2], [1, 3, 3, 4], [1, 3, 5, 4], "DepthwiseConv2DOptions",
                          dict(padding="SAME", depth_multiplier=2)),
    "FULLY_CONNECTED": ([3, 5], [4, 5], [3, 4], "FullyConnectedOptions", {}),
}


@pytest.mark.parametrize("level", [1, 8])
@pytest.mark.parametrize("op", list(FLOAT16_CASES))
def test_float16_weights_through_dequantize(op, level):
    """float16 weights reach the op through DEQUANTIZE, which folds them into float32 constants."""
    x_shape, w_shape, y_shape, options, fields = FLOAT16_CASES[op]
    rng = np.random.default_rng(0)
    g = GraphBuilder()
    x = g.input("x", x_shape)
    w16 = g.const("w16", rng.standard_normal(w_shape).astype(np.float16))
    w = g.tensor("w", w_shape)
    g.op("DEQUANTIZE", [w16], [w])
    b = g.const("b", rng.standard_normal(y_shape[-1]).astype(np.float32))
    y = g.tensor("y", y_shape)
    strides = {} if op == "FULLY_CONNECTED" else dict(stride_w=1, stride_h=1)
    g.op(op, [x, w, b], [y], options, **fields, **strides)
    g.output(y)
    result = assert_matches_litert(g.finish(), level)
    assert result.nodes[1].nnapi_ops == [op]


@pytest.mark.parametrize("level", [3, 8])
def test_float16_transpose_conv_weights(level):
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2])
    w16 = g.const("w16", np.random.default_rng(1).standard_normal((3, 3, 2, 2)).astype(np.float16))
    w = g.tensor("w", [3, 3, 2, 2])
    g.op("DEQUANTIZE", [w16], [w])
    shape = g.const("shape", np.array([1, 6, 10, 3], np.int32))
    y = g.tensor("y", [1, 6, 10, 3])
    g.op("TRANSPOSE_CONV", [shape, w, x], [y], "TransposeConvOptions", padding="SAME", stride_w=2, stride_h=2)
    g.output(y)
    assert assert_matches_litert(g.finish(), level).nodes[1].nnapi_ops == ["TRANSPOSE_CONV_2D"]


def test_float16_weights_without_dequantize_are_reported():
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2])
    w = g.const("w", np.ones((4, 1, 1, 2), np.float16))
    y = g.tensor("y", [1, 3, 5, 4])
    g.op("CONV_2D", [x, w, g.const("b", np.zeros(4, np.float32))], [y], "Conv2DOptions", stride_w=1, stride_h=1)
    g.output(y)
    node = unsupported_reason(g.finish(), 8)
    assert node.reason_code == "operand_type" and "'w'" in node.reason


def test_quantized_input_with_float_weights_is_reported():
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2], "UINT8", scale=0.1, zero_point=128)
    w = g.const("w", np.ones((4, 1, 1, 2), np.float32))
    y = g.tensor("y", [1, 3, 5, 4], "UINT8", scale=0.1, zero_point=128)
    g.op("CONV_2D", [x, w, g.const("b", np.zeros(4, np.int32))], [y], "Conv2DOptions", stride_w=1, stride_h=1)
    g.output(y)
    assert unsupported_reason(g.finish(), 8).reason_code in ("quantization_type", "operand_type")


# -- TRANSPOSE_CONV ----------------------------------------------------------------------------

def transpose_conv_model(type_name, padding="SAME", bias=True, activation="NONE", version=3):
    net = Net(type_name)
    x = net.input([1, 3, 5, 2])
    w, scales = net.weights("w", [3, 3, 2, 2])  # [out, h, w, in]
    shape = net.g.const("shape", np.array([1, 6, 10, 3] if padding == "SAME" else [1, 7, 10, 3], np.int32))
    inputs = [shape, w, x] + ([net.bias("b", 3, scales)] if bias else [])
    y = net.act("y", [1, 6, 10, 3] if padding == "SAME" else [1, 7, 10, 3])
    net.g.op("TRANSPOSE_CONV", inputs, [y], "TransposeConvOptions", version=version, padding=padding, stride_w=2,
             stride_h=2, fused_activation_function=activation)
    return net.finish(y)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("type_name", list(ACTS))
def test_transpose_conv(type_name, level):
    check(transpose_conv_model(type_name), type_name, level, base=3, ops=["TRANSPOSE_CONV_2D"])


@pytest.mark.parametrize("type_name", ["float32", "int8"])
def test_transpose_conv_valid_no_bias_and_activation(type_name):
    check(transpose_conv_model(type_name, "VALID", bias=False, activation="RELU", version=4), type_name, 8, base=3)


def test_transpose_conv_same_padding_nnapi_would_compute_differently():
    g = GraphBuilder()
    x = g.input("x", [1, 4, 5, 2])  # a forward SAME convolution of [7, 10] by stride 2 gives [4, 5]; 4 != ceil(6 / 2)
    w = g.const("w", np.ones((3, 3, 2, 2), np.float32))
    shape = g.const("shape", np.array([1, 6, 10, 3], np.int32))
    y = g.tensor("y", [1, 6, 10, 3])
    g.op("TRANSPOSE_CONV", [shape, w, x], [y], "TransposeConvOptions", padding="SAME", stride_w=2, stride_h=2)
    g.output(y)
    node = unsupported_reason(g.finish(), 8)
    assert node.reason_code == "unsupported_attribute" and "SAME padding" in node.reason


# -- FULLY_CONNECTED ----------------------------------------------------------------------------

def fc_model(type_name, x_shape, units, keep_num_dims=False, bias=True, version=1, activation="RELU"):
    net = Net(type_name)
    x = net.input(x_shape)
    depth = x_shape[-1] if keep_num_dims else 10
    w, scales = net.weights("w", [units, depth])
    rows = int(np.prod(x_shape)) // depth
    y = net.act("y", list(x_shape[:-1]) + [units] if keep_num_dims else [rows, units])
    inputs = [x, w] + ([net.bias("b", units, scales)] if bias else [])
    net.g.op("FULLY_CONNECTED", inputs, [y], "FullyConnectedOptions", version=version, keep_num_dims=keep_num_dims,
             fused_activation_function=activation)
    return net.finish(y)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("type_name", list(ACTS))
def test_fully_connected(type_name, level):
    # NNAPI FULLY_CONNECTED has no per-channel weights: a 1x1 CONV_2D between RESHAPEs
    ops = ["RESHAPE", "CONV_2D", "RESHAPE"] if type_name == "int8pc" else ["FULLY_CONNECTED"]
    check(fc_model(type_name, [1, 3, 5, 2], 4, version=4), type_name, level, ops=ops)


@pytest.mark.parametrize("type_name", ["float32", "uint8", "int8pc"])
def test_fully_connected_keep_num_dims_without_bias(type_name):
    data = fc_model(type_name, [2, 3, 5], 4, keep_num_dims=True, bias=False, version=6, activation="NONE")
    result = check(data, type_name, 8)
    assert result.nodes[0].nnapi_ops[-1] == "RESHAPE"


def test_fully_connected_shuffled_weights_are_reported():
    g = GraphBuilder()
    x = g.input("x", [2, 4])
    w = g.const("w", np.ones((3, 4), np.float32))
    y = g.tensor("y", [2, 3])
    g.op("FULLY_CONNECTED", [x, w], [y], "FullyConnectedOptions", weights_format="SHUFFLED4x16INT8")
    g.output(y)
    node = unsupported_reason(g.finish(), 8)
    assert node.reason_code == "unsupported_attribute" and "weights_format" in node.reason


# -- BATCH_MATMUL -------------------------------------------------------------------------------

def matmul_model(type_name, x_shape, y_shape, out_shape, const_y, adj_x=False, adj_y=False):
    net = Net(type_name)
    q = net.in_q
    x = net.input(x_shape)
    if const_y and q:
        y = net.g.const("y", net.rng.integers(-127, 128, y_shape).astype(np.int8), scale=0.02, zero_point=0)
    elif const_y:
        y = net.g.const("y", net.rng.standard_normal(y_shape).astype(np.float32))
    else:
        y = net.g.input("y", y_shape, net.dt, **q)
    out = net.act("out", out_shape)
    net.g.op("BATCH_MATMUL", [x, y], [out], "BatchMatMulOptions", version=2 if q else 1, adj_x=adj_x, adj_y=adj_y)
    return net.finish(out)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("type_name", ["float32", "int8"])
def test_batch_matmul_constant_rhs(type_name, level):
    data = matmul_model(type_name, [2, 3, 5], [5, 4], [2, 3, 4], const_y=True)
    result = check(data, type_name, level, exact_level=level < 6)
    assert "FULLY_CONNECTED" in result.nodes[0].nnapi_ops if level < 6 else "BATCH_MATMUL" in result.nodes[0].nnapi_ops


@pytest.mark.parametrize("level", [3, 8])
def test_batch_matmul_adjoints_constant_rhs(level):
    data = matmul_model("float32", [2, 5, 3], [4, 5], [2, 3, 4], const_y=True, adj_x=True, adj_y=True)
    check(data, "float32", level, base=2 if level < 6 else 6)  # adj_x: a TRANSPOSE (level 2)


@pytest.mark.parametrize("level", [4, 8])
@pytest.mark.parametrize("type_name", ["float32", "int8"])
def test_batch_matmul_runtime_rhs(type_name, level):
    data = matmul_model(type_name, [2, 3, 5], [2, 5, 4], [2, 3, 4], const_y=False, adj_y=False)
    if level < 6:
        node = unsupported_reason(data, level)
        assert node.reason_code == "feature_level_too_low" and node.min_feature_level == 6
    else:
        assert assert_matches_litert(data, level).nodes[0].nnapi_ops == ["BATCH_MATMUL"]


# -- DENSIFY ------------------------------------------------------------------------------------

def _csr(dense):
    """TFLite sparsity parameters of a 2-D matrix: rows dense, columns CSR."""
    rows, cols = dense.shape
    nz = [np.flatnonzero(r) for r in dense]
    seg, idx = schema.Int32VectorT(), schema.Int32VectorT()
    seg.values = np.cumsum([0] + [len(n) for n in nz]).tolist()
    idx.values = np.concatenate(nz).tolist()
    d0, d1 = schema.DimensionMetadataT(), schema.DimensionMetadataT()
    d0.format, d0.denseSize = schema.DimensionType.DENSE, rows
    d1.format = schema.DimensionType.SPARSE_CSR
    d1.arraySegmentsType = d1.arrayIndicesType = schema.SparseIndexVector.Int32Vector
    d1.arraySegments, d1.arrayIndices = seg, idx
    sp = schema.SparsityParametersT()
    sp.traversalOrder, sp.blockMap, sp.dimMetadata = [0, 1], [], [d0, d1]
    return sp, dense[dense != 0]


def _csc(dense):
    """Traversal order [1, 0]: columns dense, rows CSR with uint8 indices."""
    sp, _ = _csr(dense.T.copy())
    sp.traversalOrder = [1, 0]
    idx = schema.Uint8VectorT()
    idx.values = sp.dimMetadata[1].arrayIndices.values
    sp.dimMetadata[1].arrayIndicesType, sp.dimMetadata[1].arrayIndices = schema.SparseIndexVector.Uint8Vector, idx
    return sp, dense.T[dense.T != 0]


def _block(dense, br, bc):
    """Block-sparse (br x bc blocks) parameters: block rows dense, block columns CSR, blocks dense."""
    rows, cols = dense.shape
    blocks = dense.reshape(rows // br, br, cols // bc, bc).transpose(0, 2, 1, 3)  # [row block, col block, br, bc]
    nz = [np.flatnonzero(np.abs(b).sum(axis=(1, 2))) for b in blocks]
    seg, idx = schema.Int32VectorT(), schema.Int32VectorT()
    seg.values = np.cumsum([0] + [len(n) for n in nz]).tolist()
    idx.values = np.concatenate(nz).tolist()
    dims = [schema.DimensionMetadataT() for _ in range(4)]
    dims[0].format, dims[0].denseSize = schema.DimensionType.DENSE, rows // br
    dims[1].format = schema.DimensionType.SPARSE_CSR
    dims[1].arraySegmentsType = dims[1].arrayIndicesType = schema.SparseIndexVector.Int32Vector
    dims[1].arraySegments, dims[1].arrayIndices = seg, idx
    dims[2].format, dims[2].denseSize = schema.DimensionType.DENSE, br
    dims[3].format, dims[3].denseSize = schema.DimensionType.DENSE, bc
    sp = schema.SparsityParametersT()
    sp.traversalOrder, sp.blockMap, sp.dimMetadata = [0, 1, 2, 3], [0, 1], dims
    if br == 1:  # blocks of whole rows: only the columns are blocked (LiteRT's sparse kernel's 1x4 form)
        sp.traversalOrder, sp.blockMap, sp.dimMetadata = [0, 1, 2], [1], [dims[0], dims[1], dims[3]]
    values = np.concatenate([blocks[r, c].ravel() for r in range(len(nz)) for c in nz[r]])
    return sp, values


def sparse_fc_model(encoding, kind):
    """FULLY_CONNECTED whose weights come from DENSIFY of a sparse constant: float32, int8 per-channel,
    or float16 followed by DEQUANTIZE."""
    rng = np.random.default_rng(3)
    dense = (rng.standard_normal((4, 6)) * (rng.random((4, 6)) < 0.4)).astype(np.float32)
    dense[:, 2] = 0.0
    q = {}
    if kind == "int8pc":
        dense = np.clip(np.round(dense * 60), -127, 127).astype(np.int8)
        q = dict(scale=np.array([0.01, 0.02, 0.015, 0.03], np.float32), zero_point=0, axis=0)
    elif kind == "float16":
        dense = dense.astype(np.float16)
    sp, values = {"csr": _csr, "csc": _csc, "block": lambda d: _block(d, 2, 1)}[encoding](dense)
    dt = {"float32": "FLOAT32", "int8pc": "INT8", "float16": "FLOAT16"}[kind]
    act_q = dict(scale=0.05, zero_point=-2) if q else {}
    act = "INT8" if q else "FLOAT32"
    g = GraphBuilder()
    x = g.input("x", [3, 6], act, **act_q)
    ws = g.tensor("w_sparse", [4, 6], dt, data=values, **q)
    g.sg.tensors[ws].sparsity = sp
    w = g.tensor("w", [4, 6], dt, **q)
    g.op("DENSIFY", [ws], [w])
    if kind == "float16":
        w32 = g.tensor("w32", [4, 6])
        g.op("DEQUANTIZE", [w], [w32])
        w = w32
    y = g.tensor("y", [3, 4], act, **(dict(scale=0.1, zero_point=3) if q else {}))
    inputs = [x, w] + ([g.const("b", np.arange(4, dtype=np.int32) * 10, scale=0.05 * q["scale"], zero_point=0)]
                       if q else [])
    g.op("FULLY_CONNECTED", inputs, [y], "FullyConnectedOptions", version=8)
    g.output(y)
    return g.finish()


@pytest.mark.parametrize("level", [1, 8])
@pytest.mark.parametrize("encoding", ["csr", "csc", "block"])
def test_densify_feeds_fully_connected(encoding, level):
    result = assert_matches_litert(sparse_fc_model(encoding, "float32"), level)
    assert result.nodes[0].nnapi_ops == [] and result.nodes[1].nnapi_ops == ["FULLY_CONNECTED"]


@pytest.mark.parametrize("level", [3, 8])
def test_densify_per_channel_int8_weights(level):
    result = assert_matches_litert(sparse_fc_model("block", "int8pc"), level)
    assert result.nodes[0].nnapi_ops == [] and "CONV_2D" in result.nodes[1].nnapi_ops


@pytest.mark.parametrize("encoding", ["csr", "block"])
def test_sparse_weights_without_densify(encoding):
    """FULLY_CONNECTED takes sparse constant weights itself from version 8."""
    rng = np.random.default_rng(4)
    dense = (rng.standard_normal((4, 8)) * (rng.random((4, 8)) < 0.5)).astype(np.float32)
    dense[:, 4:] *= 0.0
    sp, values = _csr(dense) if encoding == "csr" else _block(dense, 1, 4)  # LiteRT's sparse kernel: 1x4 blocks
    g = GraphBuilder()
    x = g.input("x", [3, 8])
    w = g.tensor("w", [4, 8], "FLOAT32", data=values.astype(np.float32))
    g.sg.tensors[w].sparsity = sp
    y = g.tensor("y", [3, 4])
    g.op("FULLY_CONNECTED", [x, w, g.const("b", np.ones(4, np.float32))], [y], "FullyConnectedOptions", version=8)
    g.output(y)
    assert assert_matches_litert(g.finish(), 1).nodes[0].nnapi_ops == ["FULLY_CONNECTED"]


def test_densify_then_dequantize_float16_weights():
    result = assert_matches_litert(sparse_fc_model("csr", "float16"), 1)
    assert [n.nnapi_ops for n in result.nodes] == [[], [], ["FULLY_CONNECTED"]]


def test_densify_of_a_model_output_is_reported():
    g = GraphBuilder()
    sp, values = _csr(np.eye(3, dtype=np.float32))
    ws = g.tensor("w_sparse", [3, 3], "FLOAT32", data=values)
    g.sg.tensors[ws].sparsity = sp
    w = g.tensor("w", [3, 3])
    g.op("DENSIFY", [ws], [w])
    g.output(w)
    assert unsupported_reason(g.finish(), 8).reason_code == "invalid_node"


# -- a MobileNet-style chain --------------------------------------------------------------------

def mobilenet_model(type_name):
    net = Net(type_name)
    mid_q = dict(net.out_q, scale=0.1) if net.out_q else {}
    x = net.input([1, 3, 5, 2])
    w1, s1 = net.weights("w1", [4, 3, 3, 2])
    c1 = net.act("conv", [1, 3, 5, 4], mid_q)
    net.g.op("CONV_2D", [x, w1, net.bias("b1", 4, s1)], [c1], "Conv2DOptions", padding="SAME", stride_w=1,
             stride_h=1, version=3)
    w2, s2 = net.weights("w2", [1, 3, 3, 4], axis=3)
    c2 = net.act("dw", [1, 3, 5, 4], mid_q)
    net.g.op("DEPTHWISE_CONV_2D", [c1, w2, net.bias("b2", 4, s2, mid_q.get("scale"))], [c2],
             "DepthwiseConv2DOptions", padding="SAME", stride_w=1, stride_h=1, depth_multiplier=1,
             fused_activation_function="RELU6", version=3)
    p = net.act("pool", [1, 1, 1, 4], mid_q)
    net.g.op("AVERAGE_POOL_2D", [c2], [p], "Pool2DOptions", padding="VALID", stride_w=1, stride_h=1,
             filter_width=5, filter_height=3, version=2)
    w3, s3 = net.weights("w3", [3, 4])
    logits = net.act("logits", [1, 3], mid_q)
    net.g.op("FULLY_CONNECTED", [p, w3, net.bias("b3", 3, s3, mid_q.get("scale"))], [logits],
             "FullyConnectedOptions", version=4)
    probs_q = {} if not mid_q else dict(scale=1 / 256, zero_point=0 if type_name == "uint8" else -128)
    probs = net.act("probs", [1, 3], probs_q)
    net.g.op("SOFTMAX", [logits], [probs], "SoftmaxOptions", beta=1.0, version=2)
    return net.finish(probs)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("type_name", ["float32", "uint8", "int8", "int8pc"])
def test_mobilenet_chain(type_name, level):
    check(mobilenet_model(type_name), type_name, level)
