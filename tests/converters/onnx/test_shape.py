"""ONNX data-movement ops -> NNAPI (Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split,
Slice, Gather, Pad, DepthToSpace, SpaceToDepth, Resize), compared with onnxruntime, on ONNX-layout and
NHWC (after a Conv) operands."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx import convert
from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import verify_levels

RNG = np.random.default_rng(5)
X = ("x", np.float32, [1, 2, 3, 5])
I64 = np.int64


def model(nodes, inits=None, opset=17, nhwc=False, extra_inputs=()):
    """nodes reading 'in' -> y; 'in' is the graph input, or (nhwc) a 1x1 Conv of it."""
    if not nhwc:
        return make_model(nodes, [("in",) + X[1:], *extra_inputs], ["y"], inits, opset=opset)
    first = [h.make_node("Conv", ["x", "w_"], ["in"])]
    inits = dict(inits or {}, w_=RNG.normal(size=(2, 2, 1, 1)).astype(np.float32))
    return make_model(first + nodes, [X, *extra_inputs], ["y"], inits, opset=opset)


CASES = {
    "reshape": ([h.make_node("Reshape", ["in", "s"], ["y"])], {"s": np.array([1, 6, -1], I64)}, 1),
    "reshape_zero": ([h.make_node("Reshape", ["in", "s"], ["y"])], {"s": np.array([0, 0, 15], I64)}, 1),
    "flatten": ([h.make_node("Flatten", ["in"], ["y"], axis=2)], {}, 1),
    "squeeze": ([h.make_node("Squeeze", ["in", "a"], ["y"])], {"a": np.array([0], I64)}, 1),
    "unsqueeze": ([h.make_node("Reshape", ["in", "s"], ["r"]), h.make_node("Unsqueeze", ["r", "a"], ["y"])],
                  {"s": np.array([2, 15], I64), "a": np.array([1], I64)}, 1),
    "transpose": ([h.make_node("Transpose", ["in"], ["y"], perm=[0, 3, 1, 2])], {}, 2),
    "transpose_default": ([h.make_node("Transpose", ["in"], ["y"])], {}, 2),
    "concat_channels": ([h.make_node("Concat", ["in", "in"], ["y"], axis=1)], {}, 1),
    "concat_width": ([h.make_node("Concat", ["in", "k"], ["y"], axis=-1)],
                     {"k": RNG.random((1, 2, 3, 2)).astype(np.float32)}, 1),
    "split_equal": ([h.make_node("Split", ["in"], ["y", "z"], axis=1), ], {}, 3),
    "split_sizes": ([h.make_node("Split", ["in", "sp"], ["y", "z"], axis=3)], {"sp": np.array([2, 3], I64)}, 3),
    "slice": ([h.make_node("Slice", ["in", "st", "en", "ax"], ["y"])],
              {"st": np.array([1, 1], I64), "en": np.array([3, 100], I64), "ax": np.array([2, 3], I64)}, 2),
    "slice_steps": ([h.make_node("Slice", ["in", "st", "en", "ax", "sp"], ["y"])],
                    {"st": np.array([-1, 0], I64), "en": np.array([-100, 5], I64), "ax": np.array([3, 1], I64),
                     "sp": np.array([-2, 1], I64)}, 2),
    "gather": ([h.make_node("Gather", ["in", "i"], ["y"], axis=3)], {"i": np.array([[4, 0], [-1, 2]], I64)}, 3),
    "gather_scalar": ([h.make_node("Gather", ["in", "i"], ["y"], axis=1)], {"i": np.array(1, I64)}, 3),
    "pad": ([h.make_node("Pad", ["in", "p"], ["y"])], {"p": np.array([0, 0, 1, 2, 0, 1, 0, 1], I64)}, 2),
    "pad_value": ([h.make_node("Pad", ["in", "p", "v"], ["y"])],
                  {"p": np.array([0, 1, 1, 0, 0, 0, 1, 2], I64), "v": np.float32(0.5)}, 3),
    "pad_reflect": ([h.make_node("Pad", ["in", "p"], ["y"], mode="reflect")],
                    {"p": np.array([0, 0, 1, 2, 0, 0, 1, 1], I64)}, 7),
    "depth_to_space": ([h.make_node("Concat", ["in", "in"], ["c"], axis=1),
                        h.make_node("DepthToSpace", ["c"], ["y"], blocksize=2)], {}, 1),
    "space_to_depth": ([h.make_node("Slice", ["in", "st", "en", "ax"], ["c"]),
                        h.make_node("SpaceToDepth", ["c"], ["y"], blocksize=2)],
                       {"st": np.array([0, 0], I64), "en": np.array([2, 4], I64), "ax": np.array([2, 3], I64)}, 2),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("nhwc", [False, True])
def test_shape_op_matches_onnxruntime(case, nhwc):
    nodes, inits, need = CASES[case]
    if case.startswith("split"):  # join the parts in swapped order
        axis = nodes[0].attribute[0].i
        nodes = [h.make_node("Split", list(nodes[0].input), ["y0", "z"], axis=axis),
                 h.make_node("Concat", ["z", "y0"], ["y"], axis=axis)]
    data = model(nodes, inits, nhwc=nhwc)
    if nhwc and case in ("transpose", "transpose_default", "gather", "gather_scalar", "flatten", "reshape",
                         "reshape_zero", "squeeze", "unsqueeze"):
        need = max(need, 2)  # the NHWC operand goes back to the ONNX layout first
    if case == "depth_to_space" and not nhwc:
        need = 2  # the Concat of the NCHW input stays NCHW: one TRANSPOSE before DEPTH_TO_SPACE
    verify_levels(data, need_level=need)


def test_transpose_of_nhwc_is_one_transpose():
    data = model([h.make_node("Transpose", ["in"], ["t"], perm=[0, 2, 3, 1]), h.make_node("Relu", ["t"], ["y"])],
                 nhwc=True)
    r = verify_levels(data, levels=(8,))[8]
    assert [o.code.name for o in r.model.operations] == ["TRANSPOSE", "CONV_2D", "RELU"]  # it cancels out


RESIZE = {
    "nearest_asymmetric": (dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"), 3),
    "nearest_half_pixel": (dict(mode="nearest", coordinate_transformation_mode="half_pixel",
                                nearest_mode="round_prefer_ceil"), 4),
    "linear_asymmetric": (dict(mode="linear", coordinate_transformation_mode="asymmetric"), 1),
    "linear_half_pixel": (dict(mode="linear", coordinate_transformation_mode="half_pixel"), 4),
    "linear_align_corners": (dict(mode="linear", coordinate_transformation_mode="align_corners"), 4),
}


@pytest.mark.parametrize("case", sorted(RESIZE))
def test_resize_matches_onnxruntime(case):
    attrs, need = RESIZE[case]
    inits = {"roi": np.array([], np.float32), "sc": np.array([1, 1, 2, 1.6], np.float32)}
    verify_levels(model([h.make_node("Resize", ["in", "roi", "sc"], ["y"], **attrs)], inits), need_level=need)


def test_resize_cubic_is_reported():
    inits = {"roi": np.array([], np.float32), "sc": np.array([1, 1, 2, 2], np.float32)}
    data = model([h.make_node("Resize", ["in", "roi", "sc"], ["y"], mode="cubic")], inits)
    node = convert(data, 8).unsupported[0]
    assert node.reason_code == "unsupported_attribute" and "cubic" in node.reason


@pytest.mark.parametrize("channels,block", [(8, 2), (18, 3), (4, 2), (32, 4)])
@pytest.mark.parametrize("conv_first", [False, True])
def test_depth_to_space_crd(channels, block, conv_first):
    """CRD as a channel GATHER then DEPTH_TO_SPACE (DCR); with one output channel the orders agree."""
    nodes = [h.make_node("DepthToSpace", ["c"], ["y"], blocksize=block, mode="CRD")]
    inits = {}
    if conv_first:  # the input arrives NHWC from a Conv
        nodes.insert(0, h.make_node("Conv", ["x", "w"], ["c"]))
        inits["w"] = RNG.normal(size=(channels, 3, 1, 1)).astype(np.float32)
    data = make_model(nodes, [("x" if conv_first else "c", np.float32, [1, 3 if conv_first else channels, 2, 3])],
                      ["y"], inits, opset=13)
    r = verify_levels(data, levels=(3, 8), need_level=3)[8]
    ops = [o.code.name for o in r.model.operations]
    assert ops.count("GATHER") == (channels > block * block) and "DEPTH_TO_SPACE" in ops


def test_depth_to_space_crd_quantized():
    p = {"s": np.float32(0.02), "z": np.uint8(120)}
    nodes = [h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             h.make_node("DepthToSpace", ["q"], ["d"], blocksize=2, mode="CRD"),
             h.make_node("DequantizeLinear", ["d", "s", "z"], ["y"])]
    verify_levels(make_model(nodes, [("x", np.float32, [1, 8, 2, 3])], ["y"], p, opset=13), levels=(3, 4, 8),
                  need_level=3)


def test_space_to_depth_mode_is_reported():
    data = model([h.make_node("SpaceToDepth", ["in"], ["y"], blocksize=1, mode="CRD")])
    assert "CRD" in convert(data, 8).unsupported[0].reason


OLD_OPSETS = {  # attribute forms of inputs that later opsets moved to inputs
    "squeeze_11": (11, [h.make_node("Slice", ["in", "st", "en", "ax"], ["c"]),
                        h.make_node("Squeeze", ["c"], ["y"], axes=[1])],
                   {"st": np.array([0], I64), "en": np.array([1], I64), "ax": np.array([1], I64)}, 2),
    "unsqueeze_11": (11, [h.make_node("ReduceMean", ["in"], ["c"], axes=[0], keepdims=0),
                          h.make_node("Unsqueeze", ["c"], ["y"], axes=[2])], {}, 2),
    "slice_9": (9, [h.make_node("Slice", ["in"], ["y"], starts=[1, 0], ends=[3, -1], axes=[3, 2])], {}, 2),
    "pad_10": (10, [h.make_node("Pad", ["in"], ["y"], pads=[0, 0, 1, 0, 0, 1, 0, 2], value=0.25)], {}, 3),
    "split_11": (11, [h.make_node("Split", ["in"], ["a", "b"], axis=3, split=[1, 4]),
                      h.make_node("Concat", ["b", "a"], ["y"], axis=3)], {}, 3),
    "resize_10_nearest": (10, [h.make_node("Resize", ["in", "sc"], ["y"], mode="nearest")],
                          {"sc": np.array([1, 1, 2, 2], np.float32)}, 3),
    "resize_10_linear": (10, [h.make_node("Resize", ["in", "sc"], ["y"], mode="linear")],
                         {"sc": np.array([1, 1, 2, 3], np.float32)}, 1),
    "resize_13_sizes": (13, [h.make_node("Resize", ["in", "", "", "sz"], ["y"], mode="linear",
                                         coordinate_transformation_mode="half_pixel")],
                        {"sz": np.array([1, 2, 5, 8], I64)}, 4),
}


@pytest.mark.parametrize("case", sorted(OLD_OPSETS))
def test_opset_variants(case):
    opset, nodes, inits, need = OLD_OPSETS[case]
    verify_levels(model(nodes, inits, opset=opset), need_level=need)
