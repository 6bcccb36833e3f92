"""Quantized LOGISTIC / TANH whose output quantization is not NNAPI's fixed one (PT2E int8 exports
write such files): every one of the 256 stored input values must give LiteRT's stored output exactly."""
import numpy as np
import pytest

from converters.runners import run_litert
from converters.running import run_converted
from converters.tflite import convert

from tests.converters.tflite.elementwise_models import op_model

ALL_VALUES = [1, 1, 16, 16]   # one element per stored input value


@pytest.mark.parametrize("op,type_name,in_q,out_q", [
    # the litert-torch BERT pooler's TANH (PT2E int8)
    ("TANH", "INT8", dict(scale=0.0213, zero_point=-5), dict(scale=0.00352299, zero_point=-32)),
    ("TANH", "UINT8", dict(scale=0.03, zero_point=130), dict(scale=0.0079, zero_point=127)),
    # LiteRT fixes LOGISTIC's scale at 1/256 but leaves the int8 zero point free (NNAPI: -128)
    ("LOGISTIC", "INT8", dict(scale=0.05, zero_point=7), dict(scale=1 / 256, zero_point=-100)),
])
def test_sigmoid_tanh_at_another_output_scale_matches_litert_exactly(op, type_name, in_q, out_q):
    data = op_model(op, [(type_name, in_q)], (type_name, out_q), in_shapes={0: ALL_VALUES}, out_shape=ALL_VALUES)
    dt = np.int8 if type_name == "INT8" else np.uint8
    info = np.iinfo(dt)
    x = np.arange(info.min, info.max + 1).astype(dt).reshape(ALL_VALUES)
    ref = run_litert(data, [x])[0]
    for level in (4, 8):
        result = convert(data, feature_level=level)
        assert result.complete, [(n.op, n.reason) for n in result.unsupported]
        assert result.nodes[0].nnapi_ops == ["DEQUANTIZE", op, "QUANTIZE"]
        got = run_converted(result, [x])[0].reshape(ref.shape)
        bad = np.flatnonzero(got != ref)
        assert bad.size == 0, (level, x.ravel()[bad][:8], ref.ravel()[bad][:8], got.ravel()[bad][:8])


def test_sigmoid_tanh_at_the_fixed_scale_stay_one_op():
    data = op_model("TANH", [("INT8", dict(scale=0.02, zero_point=0))], ("INT8", dict(scale=1 / 128, zero_point=0)))
    assert convert(data, feature_level=8).nodes[0].nnapi_ops == ["TANH"]
