"""Resize (every coordinate transformation torch and Paddle export, nearest with every nearest_mode and
linear, scales or sizes, opsets 10-19) against onnxruntime: a conversion must compute what onnxruntime
computes, and the combinations NNAPI's sampling expresses must convert."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from converters.onnx import convert
from tests.converters.onnx.harness import parity

CTMS = ("asymmetric", "half_pixel", "pytorch_half_pixel", "align_corners")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def resize_model(opset, mode, ctm, nearest, in_hw, scales=None, sizes=None) -> bytes:
    attrs = {"mode": mode}
    if opset >= 11:
        attrs["coordinate_transformation_mode"] = ctm
        if mode == "nearest":
            attrs["nearest_mode"] = nearest
    inits = []
    if opset == 10:
        inits.append(numpy_helper.from_array(np.asarray([1, 1, *scales], np.float32), "scales"))
        ins = ["x", "scales"]
    else:
        roi = [] if opset >= 13 else [numpy_helper.from_array(np.zeros(0, np.float32), "roi")]
        inits += roi
        ins = ["x", "" if opset >= 13 else "roi"]
        if scales is not None:
            inits.append(numpy_helper.from_array(np.asarray([1, 1, *scales], np.float32), "scales"))
            ins.append("scales")
        else:
            inits.append(numpy_helper.from_array(np.asarray([1, 2, *sizes], np.int64), "sizes"))
            if opset < 13:  # scales is not optional before opset 13: an empty tensor
                inits.append(numpy_helper.from_array(np.zeros(0, np.float32), "no_scales"))
            ins += ["" if opset >= 13 else "no_scales", "sizes"]
    node = helper.make_node("Resize", ins, ["y"], **attrs)
    g = helper.make_graph([node], "r", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, *in_hw])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def check(data) -> bool:
    """True when it converts (and then it matches onnxruntime)."""
    r = convert(data)
    if not r.complete:
        assert r.unsupported[0].reason_code == "unsupported_attribute", r.unsupported[0].reason
        return False
    assert not parity(r, data, seeds=(0, 1))
    return True


@pytest.mark.parametrize("opset", [11, 13, 18, 19])
@pytest.mark.parametrize("ctm", CTMS)
@pytest.mark.parametrize("nearest", NEAREST)
@pytest.mark.parametrize("geometry", [dict(in_hw=(4, 6), scales=(2.0, 2.0)), dict(in_hw=(8, 6), sizes=(4, 3)),
                                      dict(in_hw=(5, 7), sizes=(9, 13)), dict(in_hw=(4, 4), scales=(0.5, 3.0))])
def test_nearest(opset, ctm, nearest, geometry):
    check(resize_model(opset, "nearest", ctm, nearest, **geometry))


@pytest.mark.parametrize("opset", [11, 13, 18, 19])
@pytest.mark.parametrize("ctm", CTMS)
@pytest.mark.parametrize("geometry", [dict(in_hw=(4, 6), scales=(2.0, 2.0)), dict(in_hw=(8, 6), sizes=(4, 3)),
                                      dict(in_hw=(5, 7), sizes=(9, 13)), dict(in_hw=(4, 4), scales=(0.6, 0.6))])
def test_linear(opset, ctm, geometry):
    check(resize_model(opset, "linear", ctm, None, **geometry))


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_opset_10(mode):
    assert check(resize_model(10, mode, "asymmetric", "floor", (3, 5), scales=(2.0, 2.0)))


@pytest.mark.parametrize("case", [
    ("nearest", "asymmetric", "floor", dict(in_hw=(4, 6), scales=(2.0, 2.0))),        # torch nearest
    ("nearest", "half_pixel", "round_prefer_ceil", dict(in_hw=(5, 7), sizes=(9, 13))),
    ("nearest", "asymmetric", "round_prefer_floor", dict(in_hw=(8, 6), sizes=(4, 3))),  # exact halving: any rounding
    ("linear", "half_pixel", None, dict(in_hw=(4, 6), scales=(2.0, 2.0))),            # torch bilinear
    ("linear", "pytorch_half_pixel", None, dict(in_hw=(5, 7), sizes=(9, 13))),
    ("linear", "align_corners", None, dict(in_hw=(5, 7), sizes=(9, 13))),
    ("linear", "asymmetric", None, dict(in_hw=(4, 6), scales=(2.0, 2.0))),            # Paddle align_mode 1
])
def test_what_nnapi_expresses_converts(case):
    mode, ctm, nearest, geometry = case
    assert check(resize_model(13, mode, ctm, nearest, **geometry))


def test_scale_that_does_not_give_the_output_size_is_refused():
    """onnx's test_resize_downsample_scales_linear: ONNX samples with the scale 0.6 (2.667, 4.333), NNAPI with
    the size ratio."""
    r = convert(resize_model(13, "linear", "half_pixel", None, (2, 4), scales=(0.6, 0.6)))
    assert not r.complete and "no NNAPI resize" in r.unsupported[0].reason
