"""Channel shuffle chains (reshape -> transpose -> reshape through a 5-D middle) become NNAPI
CHANNEL_SHUFFLE (level 3) or a 4-D RESHAPE/TRANSPOSE lowering (level 2), in both importers, checked
against onnxruntime and LiteRT."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert as convert_onnx
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels
from converters.tflite.authoring import GraphBuilder
from tests.converters.tflite.harness import assert_matches_litert

RNG = np.random.default_rng(3)


def onnx_shuffle(n=1, c=12, hw=(5, 3), groups=3, after_conv=True, tail_is_output=False, perm=(0, 2, 1, 3, 4)):
    """Conv -> Reshape [N, g, C/g, H, W] -> Transpose -> Reshape [N, C, H, W] (-> Conv)."""
    inits = {"w0": (RNG.normal(size=(c, 2, 1, 1)) * 0.5).astype(np.float32),
             "s5": np.asarray((n, groups, c // groups) + hw, np.int64), "s4": np.asarray((n, c) + hw, np.int64),
             "w1": (RNG.normal(size=(4, c, 1, 1)) * 0.5).astype(np.float32)}
    nodes = [h.make_node("Conv", ["x", "w0"], ["a"])] if after_conv else []
    src = "a" if after_conv else "x"
    nodes += [h.make_node("Reshape", [src, "s5"], ["r5"]), h.make_node("Transpose", ["r5"], ["t5"], perm=list(perm)),
              h.make_node("Reshape", ["t5", "s4"], ["shuffled"])]
    out = "shuffled"
    if not tail_is_output:
        nodes.append(h.make_node("Conv", ["shuffled", "w1"], ["y"]))
        out = "y"
    cin = 2 if after_conv else c
    return make_model(nodes, [("x", np.float32, [n, cin, *hw])], [out], inits)


@pytest.mark.parametrize("n", [1, 2])
def test_onnx_shuffle_is_channel_shuffle_in_nhwc(n):
    data = onnx_shuffle(n=n)
    results = verify_levels(data, levels=(2, 3, 8), need_level=2)
    ops = [o.code.name for o in results[8].model.operations]
    # the shuffle runs on the NHWC conv output: no TRANSPOSE between the convolutions
    assert ops.count("CHANNEL_SHUFFLE") == 1 and ops.count("TRANSPOSE") == 2, ops  # the two boundaries only
    nodes = results[8].nodes
    assert [n.nnapi_ops for n in nodes[1:4]] == [[], [], ["CHANNEL_SHUFFLE"]]
    shuffle = next(o for o in results[8].model.operations if o.code.name == "CHANNEL_SHUFFLE")
    m = results[8].model
    assert int(m.operands[shuffle.inputs[1]].value) == 3 and int(m.operands[shuffle.inputs[2]].value) == 3
    assert "CHANNEL_SHUFFLE" not in [o.code.name for o in results[2].model.operations]


def test_onnx_shuffle_as_graph_output_and_from_graph_input():
    verify_levels(onnx_shuffle(tail_is_output=True), levels=(3, 8), need_level=3)
    verify_levels(onnx_shuffle(after_conv=False), levels=(3, 8), need_level=3)


def test_onnx_shuffle_below_level_2_is_reported_with_its_level():
    r = convert_onnx(onnx_shuffle(), feature_level=1)
    reasons = {n.op: n.reason_code for n in r.unsupported}
    assert reasons.get("Reshape") == "feature_level_too_low", reasons


def test_a_transpose_that_is_not_a_shuffle_is_not_one():
    # swapping H and W of the 5-D middle is a permutation of pixels, not of channels
    r = convert_onnx(onnx_shuffle(perm=(0, 1, 2, 4, 3), hw=(4, 4)))
    assert not any("CHANNEL_SHUFFLE" in n.nnapi_ops for n in r.nodes)


def tflite_shuffle(n=1, hw=(3, 5), c=12, groups=4, quantized=False, dynamic_batch=False):
    """RESHAPE [N, H, W, g, C/g] -> TRANSPOSE (0, 1, 2, 4, 3) -> RESHAPE [N, H, W, C], then ADD; with
    `dynamic_batch` the batch is -1 in every signature and reshape target (TFLite's `shape` holds 1)."""
    g = GraphBuilder()
    kind, q = ("UINT8", dict(scale=0.05, zero_point=128)) if quantized else ("FLOAT32", {})
    b = -1 if dynamic_batch else n

    def tensor(name, shape):
        sig = [b, *shape[1:]] if dynamic_batch else None
        return g.tensor(name, [1 if dynamic_batch else n, *shape[1:]], kind, shape_signature=sig, **q)
    x = tensor("x", [n, *hw, c])
    g.sg.inputs.append(x)
    r5 = tensor("r5", [n, *hw, groups, c // groups])
    g.op("RESHAPE", [x, g.const("s5", np.int32([b, *hw, groups, c // groups]))], [r5])
    t5 = tensor("t5", [n, *hw, c // groups, groups])
    g.op("TRANSPOSE", [r5, g.const("perm", np.int32([0, 1, 2, 4, 3]))], [t5])
    s = tensor("shuffled", [n, *hw, c])
    g.op("RESHAPE", [t5, g.const("s4", np.int32([b, *hw, c]))], [s])
    y = tensor("y", [n, *hw, c])
    g.op("ADD", [s, x], [y], "AddOptions")
    g.output(y)
    return g.finish()


@pytest.mark.parametrize("quantized", [False, True])
def test_tflite_shuffle_is_channel_shuffle(quantized):
    data = tflite_shuffle(n=2, quantized=quantized)
    r = assert_matches_litert(data, 8)
    assert [o.code.name for o in r.model.operations] == ["CHANNEL_SHUFFLE", "ADD"]
    r = assert_matches_litert(data, 2)
    assert "CHANNEL_SHUFFLE" not in [o.code.name for o in r.model.operations]


def test_tflite_shuffle_with_a_dynamic_batch_is_found_once_the_batch_is_pinned():
    data = tflite_shuffle(dynamic_batch=True)
    r = assert_matches_litert(data, 8, input_shapes={"x": (2, 3, 5, 12)})
    assert [o.code.name for o in r.model.operations] == ["CHANNEL_SHUFFLE", "ADD"]
