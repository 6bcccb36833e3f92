"""Per builtin, the feature level at which a Validate rule of LiteRT's NNAPI delegate relaxes:
refused with the listed failures (NNAPIValidationFailureType, message, both read off
nnapi_delegate.cc, case kTfLiteBuiltin<Op>) at `below`, accepted emitting `ops` at `at`."""
import numpy as np
import pytest

from converters.lenses.tflite_delegate import DelegateOptions, build_delegate_report
from converters.tflite import read
from converters.tflite.authoring import GraphBuilder

U8 = dict(scale=0.05, zero_point=128)
I8 = dict(scale=0.05, zero_point=3)
S = [1, 4, 4, 2]


def op_model(op, ins, outs, options=None, version=1, **fields):
    """ins: ("x", shape, type, quant) inputs or ("c", array, type, quant) constants; outs: (shape, type, quant)."""
    g = GraphBuilder()
    idx = []
    for k, (kind, what, dt, q) in enumerate(ins):
        if kind == "x":
            idx.append(g.input(f"i{k}", what, dt, **q))
        else:
            idx.append(g.const(f"c{k}", what, dt, **q))
    o = [g.tensor(f"o{k}", shape, dt, **q) for k, (shape, dt, q) in enumerate(outs)]
    g.op(op, idx, o, options, version=version, **fields)
    g.output(*o)
    return g.finish()


def x(shape=S, dt="FLOAT32", q=None):
    return ("x", shape, dt, q or {})


def c(arr, dt=None, q=None):
    return ("c", np.asarray(arr), dt, q or {})


def out(shape=S, dt="FLOAT32", q=None):
    return (shape, dt, q or {})


F32 = ("Float32",)
CASES = [
    # (id, model, below, failures at below, at, ops at `at`)
    ("ADD int32", op_model("ADD", [x(dt="INT32"), x(dt="INT32")], [out(dt="INT32")], "AddOptions"),
     3, [("kUnsupportedInputType", "Input should be Float or Quant8")], 4, ["ADD"]),
    ("ADD rank 5", op_model("ADD", [x([1, 1, 2, 2, 2]), x([1, 1, 2, 2, 2])], [out([1, 1, 2, 2, 2])], "AddOptions"),
     8, [("kUnsupportedOperandRank", "Input rank must be <= 4")], None, None),
    ("DIV", op_model("DIV", [x(), x()], [out()], "DivOptions"),
     1, [("kUnsupportedAndroidVersion", "Android sdk version less than 28")], 2, ["DIV"]),
    ("SUB uint8", op_model("SUB", [x(dt="UINT8", q=U8), x(dt="UINT8", q=U8)], [out(dt="UINT8", q=U8)], "SubOptions"),
     2, [("kUnsupportedInputType", "NNAPI only support float sub.")], 3, ["SUB"]),
    ("TANH uint8", op_model("TANH", [x(dt="UINT8", q=U8)], [out(dt="UINT8", q=dict(scale=1 / 128, zero_point=128))]),
     2, [("kUnsupportedInputType", " NNAPI only support float tanh.")], 3, ["TANH"]),
    ("RESHAPE int32", op_model("RESHAPE", [x([2, 3], "INT32"), c(np.array([3, 2], np.int32))], [out([3, 2], "INT32")]),
     5, [("kUnsupportedInputType", "Input should be Float or Quant8")], 6, ["RESHAPE"]),
    ("RSQRT uint8", op_model("RSQRT", [x(dt="UINT8", q=U8)], [out(dt="UINT8", q=U8)], version=2),
     6, [("kUnsupportedInputType", "Input should be Float")], 7, ["RSQRT"]),
    ("MIRROR_PAD", op_model("MIRROR_PAD", [x(), c(np.ones((4, 2), np.int32))], [out([3, 6, 6, 4])],
                            "MirrorPadOptions", mode="REFLECT"),
     6, [("kUnsupportedAndroidVersion", "Android sdk version less than 1000007")], 7, ["MIRROR_PAD"]),
    ("BATCH_MATMUL", op_model("BATCH_MATMUL", [x([2, 3, 4]), x([2, 4, 5])], [out([2, 3, 5])], "BatchMatMulOptions"),
     5, [("kUnsupportedAndroidVersion", "Android sdk version less than 1000006")], 6, ["BATCH_MATMUL"]),
    ("PACK last axis", op_model("PACK", [x([2, 3]), x([2, 3])], [out([2, 3, 2])], "PackOptions",
                                values_count=2, axis=2),
     5, [("kUnsupportedOperandValue", "NNAPI does not support axis being the last dimension")], 6, ["PACK"]),
    ("PACK below 6", op_model("PACK", [x([2, 3]), x([2, 3])], [out([2, 2, 3])], "PackOptions", values_count=2, axis=0),
     3, [("kUnsupportedAndroidVersion", "Android sdk version less than 30")], 4, ["CONCATENATION", "RESHAPE"]),
    ("UNPACK", op_model("UNPACK", [x([2, 3, 4])], [out([3, 4]), out([3, 4])], "UnpackOptions", num=2, axis=0),
     3, [("kUnsupportedAndroidVersion", "Android sdk version less than 30")], 4, ["RESHAPE", "SPLIT"]),
    ("ELU", op_model("ELU", [x()], [out()]),
     3, [("kUnsupportedAndroidVersion", "Android sdk version less than 30")], 4, ["ELU"]),
    ("FILL", op_model("FILL", [c(np.array([2, 3], np.int32)), c(np.float32(1.5))], [out([2, 3])]),
     3, [("kUnsupportedAndroidVersion", "Android sdk version less than 30")], 4, ["FILL"]),
    ("FULLY_CONNECTED keep_num_dims",
     op_model("FULLY_CONNECTED", [x([1, 3, 4]), c(np.ones((5, 4), np.float32)), c(np.zeros(5, np.float32))],
              [out([1, 3, 5])], "FullyConnectedOptions", keep_num_dims=True),
     3, [("kUnsupportedAndroidVersion", "Android sdk version less than 30")], 4, ["FULLY_CONNECTED"]),
    ("FULLY_CONNECTED hybrid",
     op_model("FULLY_CONNECTED", [x([1, 4]), c(np.ones((5, 4), np.int8), q=dict(scale=0.1)),
                                  c(np.zeros(5, np.float32))], [out([1, 5])], "FullyConnectedOptions"),
     2, [("kUnsupportedHybridOperator", "Hybrid operators not supported before NNAPI 1.2")], 3, ["DEQUANTIZE", "FULLY_CONNECTED"]),
    ("CONV_2D dilated",
     op_model("CONV_2D", [x(), c(np.ones((3, 2, 2, 2), np.float32)), c(np.zeros(3, np.float32))],
              [out([1, 4, 4, 3])], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1,
              dilation_w_factor=2, dilation_h_factor=2),
     2, [("kUnsupportedOperandValue", "NNAPI supports dilated Conv2D since NNAPI 1.2.")], 3, ["CONV_2D"]),
    ("CONV_2D grouped",
     op_model("CONV_2D", [x([1, 4, 4, 4]), c(np.ones((4, 1, 1, 2), np.float32)), c(np.zeros(4, np.float32))],
              [out([1, 4, 4, 4])], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1),
     2, [("kUnsupportedOperandValue", "Grouped convolution not supported before NNAPI < 1.2")], 3,
     ["GROUPED_CONV_2D"]),
    ("CONV_2D without bias",
     op_model("CONV_2D", [x(), c(np.ones((3, 1, 1, 2), np.float32))], [out([1, 4, 4, 3])], "Conv2DOptions",
              padding="SAME", stride_w=1, stride_h=1),
     8, [("kMissingRequiredOperand", "Conv2D with omitted bias not supported")], None, None),
    ("RESIZE_BILINEAR align_corners",
     op_model("RESIZE_BILINEAR", [x(), c(np.array([8, 8], np.int32))], [out([1, 8, 8, 2])],
              "ResizeBilinearOptions", align_corners=True),
     3, [("kUnsupportedOperandValue", "NNAPI does not support align_corners == true.")], 4, ["RESIZE_BILINEAR"]),
    ("RESIZE_NEAREST_NEIGHBOR size input",
     op_model("RESIZE_NEAREST_NEIGHBOR", [x(), x([2], "INT32")], [out([1, 8, 8, 2])], "ResizeNearestNeighborOptions"),
     8, [("kInputTensorShouldHaveConstantShape", "The size input tensor must be constant.")], None, None),
    ("SQUEEZE all dims", op_model("SQUEEZE", [x([1, 3, 1])], [out([3])], "SqueezeOptions"),
     2, [("kUnsupportedOperandValue", "NNAPI 1.1 does not support null squeeze_dims properly.")], 3, ["SQUEEZE"]),
    ("SQUEEZE at API 27", op_model("SQUEEZE", [x([1, 3, 1])], [out([3])], "SqueezeOptions", squeeze_dims=[0, 2]),
     1, [("kUnsupportedAndroidVersion", "Android sdk version less than 28")], 2, ["SQUEEZE"]),
    ("SOFTMAX rank 3", op_model("SOFTMAX", [x([1, 3, 4])], [out([1, 3, 4])], "SoftmaxOptions", beta=1.0),
     2, [("kUnsupportedOperandRank", "Before API level 29 only 2D and 4D input tensors were supported.")], 3,
     ["SOFTMAX"]),
    ("MEAN uint8", op_model("MEAN", [x(dt="UINT8", q=U8), c(np.array([1, 2], np.int32))], [out([1, 2], "UINT8", U8)],
                            "ReducerOptions"),
     2, [("kUnsupportedInputType", "Expected Float32 input")], 3, ["MEAN"]),
    ("DEQUANTIZE int8 asymmetric", op_model("DEQUANTIZE", [x(dt="INT8", q=I8)], [out()], version=2),
     3, [("kUnsupportedInputType",
          "NN API supports int8 type since version 1.2 but only for symmetric quantization.")], 4, ["DEQUANTIZE"]),
    ("QUANTIZE to int8", op_model("QUANTIZE", [x()], [out(dt="INT8", q=I8)]),
     3, [("kUnsupportedOutputType", "Output should be kTfLiteUInt8.")], 4, ["QUANTIZE"]),
    ("CAST to int8", op_model("CAST", [x()], [out(dt="INT8")]),
     3, [("kUnsupportedOutputType",
          "Output type should be one of kTfLiteFloat32, kTfLiteInt32, kTfLiteUInt8.")], 4, ["CAST"]),
    ("SPLIT int8", op_model("SPLIT", [c(np.array(1, np.int32)), x([1, 4, 2], "INT8", I8)],
                            [out([1, 2, 2], "INT8", I8), out([1, 2, 2], "INT8", I8)], "SplitOptions", num_splits=2),
     3, [("kUnsupportedInputType", "Input type not in expected list kTfLiteFloat32, kTfLiteUInt8, kTfLiteInt32")],
     4, ["SPLIT"]),
    ("MAXIMUM computed scalar", op_model("MAXIMUM", [x(), x([])], [out()]),
     8, [("kUnsupportedInputType", "Scalar operand should be constant")], None, None),
    ("PADV2", op_model("PADV2", [x(), c(np.ones((4, 2), np.int32)), c(np.float32(0.5))], [out([3, 6, 6, 4])]),
     2, [("kUnsupportedOperatorVariant", "Specification of the padding value is supported from NNAPI 1.2.")], 3,
     ["PAD_V2"]),
    ("PAD uint8", op_model("PAD", [x(dt="UINT8", q=U8), c(np.ones((4, 2), np.int32))], [out([3, 6, 6, 4], "UINT8", U8)]),
     2, [("kUnsupportedInputType", "Only Float32 inputs are supported before NNAPI 1.2")], 3, ["PAD"]),
    ("L2_POOL_2D fused", op_model("L2_POOL_2D", [x()], [out([1, 2, 2, 2])], "Pool2DOptions", padding="VALID",
                                  stride_w=2, stride_h=2, filter_width=2, filter_height=2,
                                  fused_activation_function="RELU"),
     2, [("kUnsupportedOperandValue", "Before NNAPI 1.2 fused activation for l2_pool may not be supported.")], 3,
     ["L2_POOL_2D"]),
    ("AVERAGE_POOL_2D large quantized window",
     op_model("AVERAGE_POOL_2D", [x([1, 17, 17, 1], "UINT8", U8)], [out([1, 1, 1, 1], "UINT8", U8)], "Pool2DOptions",
              padding="VALID", stride_w=1, stride_h=1, filter_width=17, filter_height=17),
     2, [("kUnsupportedOperandSize", "Large filter window would overflow on the reference CPU path")], 3,
     ["AVERAGE_POOL_2D"]),
    ("TRANSPOSE computed permutation", op_model("TRANSPOSE", [x(), x([4], "INT32")], [out([2, 4, 4, 1])]),
     8, [("kInputTensorShouldHaveConstantShape", "Dynamically-sized tensors not supported.")], None, None),
    ("CONCATENATION uint8 scales",
     op_model("CONCATENATION", [x(dt="UINT8", q=U8), x(dt="UINT8", q=dict(scale=0.1, zero_point=128))],
              [out([1, 4, 4, 4], "UINT8", U8)], "ConcatenationOptions", axis=3),
     2, [("kUnsupportedOperandValue",
          "NNAPI 1.0-1 only supported concatenating quantized tensor of the same scale and offset.")], 3,
     ["CONCATENATION"]),
    ("COS", op_model("COS", [x()], [out()]),
     2, [("kUnsupportedAndroidVersion", "Android sdk version less than 29")], 3, ["SUB", "SIN"]),
    ("ARG_MAX int64 output", op_model("ARG_MAX", [x(), c(np.array([3], np.int32))], [out([1, 4, 4], "INT64")],
                                      "ArgMaxOptions", output_type=4),
     8, [("kUnsupportedOutputType", "NNAPI only supports int32 output.")], None, None),
    ("GATHER scalar index", op_model("GATHER", [x(), c(np.array(1, np.int32))], [out([4, 4, 2])], "GatherOptions"),
     8, [("kUnsupportedOperandRank", "0-dimension args are not supported by NNAPI.")], None, None),
    ("EXPAND_DIMS computed axis", op_model("EXPAND_DIMS", [x(), x([1], "INT32")], [out([1, 1, 4, 4, 2])]),
     8, [("kUnsupportedInputType", "NNAPI only supports constant int32 axis tensor.")], None, None),
    ("TOPK_V2 computed k", op_model("TOPK_V2", [x([2, 5]), x([], "INT32")], [out([2, 2]), out([2, 2], "INT32")]),
     8, [("kUnsupportedInputType", "K param should be a constant of type Int32")], None, None),
    ("REDUCE_PROD uint8", op_model("REDUCE_PROD", [x(dt="UINT8", q=U8), c(np.array([1], np.int32))],
                                   [out([1, 4, 2], "UINT8", U8)], "ReducerOptions"),
     8, [("kUnsupportedInputType", "NNAPI only supports floating point input.")], None, None),
    ("LOGISTIC v3", op_model("LOGISTIC", [x()], [out()], version=3),
     8, [("kUnsupportedOperatorVersion", "OP Version higher than 2")], None, None),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_rule_relaxes_at_level(case):
    _, data, below, failures, at, ops = case
    source = read(data)
    r = build_delegate_report(source, below, DelegateOptions())
    n = r["nodes"][0]
    assert not n["supported"]
    assert [(f["type"], f["message"]) for f in n["delegate_failures"]] == failures
    if at is not None:
        n = build_delegate_report(read(data), at, DelegateOptions())["nodes"][0]
        assert n["supported"] and n["delegate_failures"] == [], n["delegate_failures"]
        assert n["nnapi_ops"] == ops
        assert n["min_feature_level"] == at
