"""TFLite shape and data-movement builtins -> NNAPI, compared with LiteRT at feature levels 1, 3, 4, 8.

Each case lists the lowest feature level per type at which it converts (with the
lowerings of converters/tflite/ops/shape.py and slicing.py); below it the node
must be reported as feature_level_too_low.
"""
import numpy as np
import pytest

from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.harness import unsupported_reason
from tests.converters.tflite.ops_common import LEVELS, TYPES, X, check_levels, ints, need_for, one_op

Q8 = ("float32", "uint8", "int8")


def _sliced(shape, index):
    return list(np.empty(shape)[index].shape)


# case id -> (model builder(type_name), {type: lowest level})
CASES = {
    "reshape_tensor": (lambda t: one_op("RESHAPE", [1, 3, 5, 2], [[3, 10]], t, [X, ints(3, -1)]),
                       dict(float32=1, uint8=1, int32=6)),
    "reshape_option": (lambda t: one_op("RESHAPE", [1, 3, 5, 2], [[5, 6]], t, [X], "ReshapeOptions",
                                        new_shape=[5, 6]), dict(float32=1, uint8=1)),
    "squeeze": (lambda t: one_op("SQUEEZE", [1, 3, 1, 2], [[3, 2]], t, [X], "SqueezeOptions", squeeze_dims=[0, -2]),
                dict(float32=1, uint8=1, int32=6)),
    "expand_dims": (lambda t: one_op("EXPAND_DIMS", [3, 5, 2], [[3, 5, 1, 2]], t, [X, ints(-2)]),
                    dict(float32=1, uint8=1, int32=3)),
    "transpose": (lambda t: one_op("TRANSPOSE", [1, 3, 5, 2], [[1, 2, 3, 5]], t, [X, ints(0, 3, 1, 2)]),
                  dict(float32=2, uint8=2)),
    "pad": (lambda t: one_op("PAD", [1, 3, 5, 2], [[1, 6, 6, 2]], t, [X, ints([0, 0], [1, 2], [0, 1], [0, 0])]),
            dict(float32=1, uint8=1)),
    "pad_int64_paddings": (lambda t: one_op("PAD", [1, 3, 5, 2], [[1, 3, 8, 2]], t,
                                            [X, np.asarray([[0, 0], [0, 0], [2, 1], [0, 0]], np.int64)]),
                           dict(float32=1, uint8=1)),
    "mirror_pad_reflect": (lambda t: one_op("MIRROR_PAD", [1, 3, 5, 2], [[1, 6, 8, 2]], t,
                                            [X, ints([0, 0], [1, 2], [2, 1], [0, 0])], "MirrorPadOptions",
                                            mode="REFLECT"), dict(float32=3, uint8=3, int32=3)),
    "mirror_pad_symmetric": (lambda t: one_op("MIRROR_PAD", [1, 3, 5, 2], [[1, 6, 7, 2]], t,
                                              [X, ints([0, 0], [3, 0], [1, 1], [0, 0])], "MirrorPadOptions",
                                              mode="SYMMETRIC"), dict(float32=3, uint8=3)),
    "slice": (lambda t: one_op("SLICE", [1, 3, 5, 2], [[1, 2, 4, 1]], t, [X, ints(0, 1, 1, 1), ints(1, 2, -1, 1)]),
              dict(float32=2, uint8=2, int32=3)),
    "split": (lambda t: one_op("SPLIT", [1, 3, 4, 2], [[1, 3, 2, 2]] * 2, t, [ints(2), X], "SplitOptions",
                               num_splits=2), dict(float32=2, uint8=2, int32=3)),
    "split_v": (lambda t: one_op("SPLIT_V", [1, 3, 5, 2], [[1, 3, 2, 2], [1, 3, 3, 2]], t,
                                 [X, ints(2, -1), ints(-2)], "SplitVOptions", num_splits=2),
                dict(float32=2, uint8=2)),
    "unpack": (lambda t: one_op("UNPACK", [3, 5, 2], [[3, 2]] * 5, t, [X], "UnpackOptions", num=5, axis=1),
               dict(float32=2, uint8=2, int32=6)),
    "tile": (lambda t: one_op("TILE", [1, 3, 5, 2], [[2, 3, 5, 6]], t, [X, ints(2, 1, 1, 3)]),
             dict(float32=1, uint8=1, int32=3)),
    "broadcast_to": (lambda t: one_op("BROADCAST_TO", [3, 1, 2], [[1, 3, 5, 2]], t, [X, ints(1, 3, 5, 2)],
                                      version=2), dict(float32=1, uint8=1, int32=6)),
    "depth_to_space": (lambda t: one_op("DEPTH_TO_SPACE", [1, 3, 5, 8], [[1, 6, 10, 2]], t, [X],
                                        "DepthToSpaceOptions", block_size=2), dict(float32=1, uint8=1)),
    "space_to_depth": (lambda t: one_op("SPACE_TO_DEPTH", [1, 4, 6, 2], [[1, 2, 3, 8]], t, [X],
                                        "SpaceToDepthOptions", block_size=2), dict(float32=1, uint8=1)),
    "batch_to_space_crops": (lambda t: one_op("BATCH_TO_SPACE_ND", [4, 3, 5, 2], [[1, 5, 9, 2]], t,
                                              [X, ints(2, 2), ints([0, 1], [1, 0])]), dict(float32=2, uint8=2)),
    "batch_to_space": (lambda t: one_op("BATCH_TO_SPACE_ND", [6, 3, 5, 2], [[1, 6, 15, 2]], t,
                                        [X, ints(2, 3), ints([0, 0], [0, 0])]), dict(float32=2, uint8=2)),
    # NNAPI pads quant8 with the zero point only from level 3 (before, only zero point 0 was defined)
    "space_to_batch": (lambda t: one_op("SPACE_TO_BATCH_ND", [1, 4, 4, 2], [[6, 3, 2, 2]], t,
                                        [X, ints(2, 3), ints([1, 1], [1, 1])]), dict(float32=2, uint8=3)),
    "reverse_one_axis": (lambda t: one_op("REVERSE_V2", [1, 3, 5, 2], [[1, 3, 5, 2]], t, [X, ints(-2)]),
                         dict(float32=2, uint8=2, int32=7)),
    "reverse_two_axes": (lambda t: one_op("REVERSE_V2", [1, 3, 5, 2], [[1, 3, 5, 2]], t, [X, ints(1, 2)]),
                         dict(float32=2, uint8=2)),
    "gather_axis1": (lambda t: one_op("GATHER", [3, 5, 2], [[3, 4, 2]], t, [X, ints(4, 0, 2, 2)], "GatherOptions",
                                      axis=1), dict(float32=3, uint8=3, int32=3)),
    # axis 0 with 1-D indices is EMBEDDING_LOOKUP below level 3 (float32 only there)
    "gather_axis0": (lambda t: one_op("GATHER", [3, 5, 2], [[2, 5, 2]], t, [X, ints(2, 0)], "GatherOptions"),
                     dict(float32=1, uint8=3)),
    "gather_scalar_index": (lambda t: one_op("GATHER", [3, 5, 2], [[3, 2]], t, [X, np.int32(3)], "GatherOptions",
                                             axis=1), dict(float32=3, uint8=3)),
}

# every case with float32, uint8 and int8; int32 where the case lists it
PARAMS = [(c, t) for c, (_, needs) in CASES.items() for t in Q8 + (("int32",) if "int32" in needs else ())]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case,type_name", PARAMS)
def test_single_op_matches_litert(case, type_name, level):
    build, needs = CASES[case]
    check_levels(build(type_name), need_for(needs, type_name), level)


# -- STRIDED_SLICE: masks, negative strides, ellipsis, new axes, offset ---------------------

SHAPE4 = [1, 3, 5, 2]
STRIDED = {
    # id: (begin, end, strides, options, numpy index of the same slice)
    "negative_strides": ([0, 2, 4, 0], [1, 0, 0, 2], [1, -1, -2, 1], {}, np.s_[0:1, 2:0:-1, 4:0:-2, 0:2]),
    "masks_and_clamping": ([0, -2, 9, 1], [1, 0, -9, 0], [1, 1, -1, 1], dict(begin_mask=0b0010, end_mask=0b1000),
                           np.s_[0:1, 0:0, ::-1, 1:]),
    "shrink": ([0, 1, -1, 0], [1, 2, 0, 2], [1, 1, 1, 1], dict(shrink_axis_mask=0b0101), np.s_[0, 1:2, -1, 0:2]),
    "ellipsis": ([0, 1], [0, 3], [1, 2], dict(ellipsis_mask=0b01), np.s_[..., 1:3:2]),
    "new_axis": ([0, 0, 1], [0, 1, 3], [1, 1, 1], dict(new_axis_mask=0b001, shrink_axis_mask=0b010),
                 np.s_[None, 0, 1:3]),
    "offset": ([0, 1, 1, 0], [1, 2, 3, 2], [1, 1, 2, 1], dict(offset=True), np.s_[0:1, 1:3, 1:4:2, 0:2]),
}


@pytest.mark.parametrize("level", [1, 3])
@pytest.mark.parametrize("case", sorted(STRIDED))
def test_strided_slice_matches_litert(case, level):
    begin, end, strides, options, index = STRIDED[case]
    data = one_op("STRIDED_SLICE", SHAPE4, [_sliced(SHAPE4, index)], "float32",
                  [X, ints(*begin), ints(*end), ints(*strides)], "StridedSliceOptions", **options)
    check_levels(data, 2, level)


@pytest.mark.parametrize("type_name,level", [("uint8", 3), ("int8", 3), ("int8", 4), ("float32", 8)])
def test_strided_slice_types(type_name, level):
    data = one_op("STRIDED_SLICE", SHAPE4, [[1, 2, 2, 2]], type_name, [X, ints(0, 2, 4, 0), ints(1, 0, 0, 2),
                                                                         ints(1, -1, -2, 1)], "StridedSliceOptions")
    check_levels(data, 2, level)


# -- PADV2, CONCATENATION, PACK: models with several inputs -----------------------------------

def padv2_model(type_name):
    dt, q = TYPES[type_name]
    value = {"float32": np.float32(0.5), "uint8": np.uint8(131), "int8": np.int8(-11)}[type_name]
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2], dt, **q)
    pads = g.const("pads", ints([0, 0], [2, 1], [0, 1], [1, 0]))
    v = g.const("value", np.asarray([value]), dt, **q)
    out = g.tensor("out", [1, 6, 6, 3], dt, **q)
    g.op("PADV2", [x, pads, v], [out])
    g.output(out)
    return g.finish()


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("type_name", Q8)
def test_padv2(type_name, level):
    emits = ["CONCATENATION"] * 3 if level < 3 else ["PAD_V2"]
    check_levels(padv2_model(type_name), 1, level, emits)


def concat_model(type_name, activation="NONE", rescale=False):
    dt, q = TYPES[type_name]
    q2 = dict(q, scale=q["scale"] * 2) if q and rescale else q
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2], dt, **q)
    y = g.input("y", [1, 3, 2, 2], dt, **q2)
    out = g.tensor("out", [1, 3, 7, 2], dt, **q)
    g.op("CONCATENATION", [x, y], [out], "ConcatenationOptions", axis=-2, fused_activation_function=activation)
    g.output(out)
    return g.finish()


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("type_name,rescale,need", [
    ("float32", False, 1), ("uint8", False, 1), ("int8", False, 1), ("uint8", True, 3)])
def test_concatenation(type_name, rescale, need, level):
    check_levels(concat_model(type_name, rescale=rescale), need, level)


def test_concatenation_fused_activation_is_reported():
    # the schema would apply it, LiteRT refuses the node: nothing to reproduce
    node = unsupported_reason(concat_model("float32", "RELU"), 8)
    assert node.reason_code == "fused_activation" and "'out'" in node.reason


def pack_model(type_name, axis):
    dt, q = TYPES[type_name]
    g = GraphBuilder()
    xs = [g.input(f"x{k}", [3, 5], dt, **q) for k in range(2)]
    shape = [3, 5]
    shape.insert(axis % 3, 2)
    out = g.tensor("out", shape, dt, **q)
    g.op("PACK", xs, [out], "PackOptions", values_count=2, axis=axis)
    g.output(out)
    return g.finish()


@pytest.mark.parametrize("level", LEVELS + (6,))
@pytest.mark.parametrize("type_name,need", [("float32", 1), ("uint8", 1), ("int8", 1), ("int32", 6)])
def test_pack(type_name, need, level):
    result = check_levels(pack_model(type_name, -2), need, level)
    if result is not None:
        assert result.nodes[0].nnapi_ops[-1] == ("PACK" if level >= 6 else "CONCATENATION")


def test_pack_last_axis():
    check_levels(pack_model("float32", 2), 1, 1)


def chain_model(type_name):
    """TRANSPOSE -> RESHAPE -> SPLIT_V -> CONCATENATION (parts swapped) -> PAD."""
    dt, q = TYPES[type_name]
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2], dt, **q)
    t = lambda n, shape: g.tensor(n, shape, dt, **q)  # noqa: E731
    xt, flat, a, b, joined, out = (t("xt", [1, 2, 3, 5]), t("flat", [6, 5]), t("a", [6, 2]), t("b", [6, 3]),
                                   t("joined", [6, 5]), t("out", [7, 6]))
    g.op("TRANSPOSE", [x, g.const("perm", ints(0, 3, 1, 2))], [xt])
    g.op("RESHAPE", [xt, g.const("shape", ints(6, 5))], [flat])
    g.op("SPLIT_V", [flat, g.const("sizes", ints(2, 3)), g.const("axis", ints(1))], [a, b], "SplitVOptions",
         num_splits=2)
    g.op("CONCATENATION", [b, a], [joined], "ConcatenationOptions", axis=1)
    g.op("PAD", [joined, g.const("pads", ints([1, 0], [0, 1]))], [out])
    g.output(out)
    return g.finish()


@pytest.mark.parametrize("type_name,level", [("float32", 2), ("uint8", 3), ("int8", 3), ("int8", 4),
                                             ("float32", 8)])
def test_chain_matches_litert(type_name, level):
    check_levels(chain_model(type_name), 2, level)


# -- reported, not guessed ----------------------------------------------------------------------

def test_gather_batch_dims_is_reported():
    data = one_op("GATHER", [3, 5, 2], [[3, 2, 2]], "float32", [X, ints([1, 0], [2, 2], [0, 4])], "GatherOptions",
                  axis=1, batch_dims=1)
    node = unsupported_reason(data, 8)
    assert node.reason_code == "unsupported_attribute" and "batch_dims" in node.reason


def test_mirror_pad_below_level_3_names_level_3():
    data, _ = CASES["mirror_pad_reflect"]
    node = unsupported_reason(data("float32"), 1)
    assert node.reason_code == "feature_level_too_low" and node.min_feature_level == 3


def test_non_constant_shape_is_reported():
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2])
    s = g.input("s", [2], "INT32")
    out = g.tensor("out", [-1, -1], shape_signature=[-1, -1])
    g.op("RESHAPE", [x, s], [out])
    g.output(out)
    node = unsupported_reason(g.finish(), 8)
    assert node.reason_code == "non_constant_operand" and "'s'" in node.reason


def test_newer_version_is_reported():
    data = one_op("SQUEEZE", [1, 3, 1, 2], [[3, 2]], "float32", [X], "SqueezeOptions", version=3)
    assert unsupported_reason(data, 8).reason_code == "operator_version"
