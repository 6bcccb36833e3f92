"""NNAPIDelegateKernel::Validate (LiteRT tflite/delegates/nnapi/nnapi_delegate.cc) for the
arithmetic, convolution, pooling, activation, quantization and recurrent builtins.
Each function mirrors the `case kTfLiteBuiltin...` of the same name; a function that
returns True accepts the node at once (as the case's early `return true`)."""
from __future__ import annotations

from .delegate_common import (ANDROID_VERSION, CONSTANT_SHAPE, FL7, HYBRID, INPUT_TYPE, MISSING_OPERAND,
                              NNAPI11, NNAPI12, NNAPI13, OP_VERSION, OPERAND_SIZE, OPERAND_VALUE,
                              OUTPUT_TYPE, QUANT_PARAMS, QUANT_TYPE, RANK, VARIANT, NodeView, is_float, is_hybrid,
                              is_quantized)


def _rank4_inputs(v: NodeView, message: str = "Input rank must be <= 4") -> None:
    v.expect(v.in_rank(0) <= 4 and v.in_rank(1) <= 4, RANK, message)


def _add_mul_operands(v: NodeView) -> None:  # the part kTfLiteBuiltinAdd and kTfLiteBuiltinMul share
    if v.sdk >= NNAPI13:
        v.float_quant8_or_int32_op()
        if v.in_type(0) == "Int32":
            v.activation_none()
    else:
        v.float_or_quant8_op()
    _rank4_inputs(v)


def add(v: NodeView):                    # case kTfLiteBuiltinAdd
    v.max_version(2)
    _add_mul_operands(v)


def mul(v: NodeView):                    # case kTfLiteBuiltinMul: v3 only with a selected accelerator
    v.max_version(3 if v.accelerator else 2)
    _add_mul_operands(v)


def sub(v: NodeView):                    # case kTfLiteBuiltinSub
    v.max_version(3)
    t = v.in_type(0)
    v.expect((v.sdk >= NNAPI11 and is_float(t)) or (v.sdk >= NNAPI12 and is_quantized(t))
             or (v.sdk >= NNAPI13 and t == "Int32"), INPUT_TYPE, "NNAPI only support float sub.")
    if t == "Int32":
        v.activation_none()
    _rank4_inputs(v)


def div(v: NodeView):                    # case kTfLiteBuiltinDiv
    v.op_version(1)
    v.min_sdk(NNAPI11)
    v.expect(v.in_type(0) == "Float32", INPUT_TYPE, "NNAPI only support float div.")
    _rank4_inputs(v)


def squared_difference(v: NodeView):     # case kTfLiteBuiltinSquaredDifference
    v.op_version(2)
    v.min_sdk(NNAPI11)
    if v.sdk >= NNAPI13:
        v.type_in(v.in_type(0), ("Float32", "UInt8", "Int8", "Int32"))
    elif v.sdk >= NNAPI12:
        v.type_in(v.in_type(0), ("Float32", "UInt8"))
    else:
        v.type_in(v.in_type(0), ("Float32",))
    _rank4_inputs(v, "NNAPI does not support input rank greater than 4")


def maximum_minimum(v: NodeView):        # case kTfLiteBuiltinMaximum / kTfLiteBuiltinMinimum
    v.max_version(3)
    v.min_sdk(NNAPI12)
    v.type_in(v.in_type(0), ("Float32", "UInt8", "Int8", "Int32"))
    for i in (0, 1):
        if v.in_rank(i) == 0:
            v.expect(v.in_const(i), INPUT_TYPE, "Scalar operand should be constant")


def pow_like_unary(v: NodeView):         # case kTfLiteBuiltinAbs / Exp / Log / Pow
    v.op_version(1)
    v.min_sdk(NNAPI12)
    v.float_op()


def sqrt_sin_cos(v: NodeView):           # case kTfLiteBuiltinSqrt, kTfLiteBuiltinCos / kTfLiteBuiltinSin
    v.op_version(1)
    v.min_sdk(NNAPI12)
    v.float_op()


def rsqrt(v: NodeView):                  # case kTfLiteBuiltinRsqrt
    v.op_version(2)
    v.min_sdk(NNAPI12)
    if v.sdk < FL7:
        v.float_op()
    else:
        v.float_or_quant8_op()


def neg(v: NodeView):                    # case kTfLiteBuiltinNeg
    v.max_version(2)
    v.min_sdk(NNAPI12)
    v.type_in(v.in_type(0), ("Float32", "Int32"))


def floor(v: NodeView):                  # case kTfLiteBuiltinFloor
    v.op_version(1)


def average_pool(v: NodeView):           # case kTfLiteBuiltinAveragePool2d
    v.max_version(2)
    v.float_or_quant8_op()
    if is_quantized(v.in_type(0)):
        v.expect(v.accelerator or v.attr("filter_width") * v.attr("filter_height") <= 256, OPERAND_SIZE,
                 "Large filter window would overflow on the reference CPU path")


def max_pool(v: NodeView):               # case kTfLiteBuiltinMaxPool2d
    v.max_version(2)
    v.float_or_quant8_op()


def l2_pool(v: NodeView):                # case kTfLiteBuiltinL2Pool2d
    v.op_version(1)
    v.float_op()
    if v.sdk < NNAPI12:
        v.expect(v.attr("fused_activation_function") == 0, OPERAND_VALUE,
                 "Before NNAPI 1.2 fused activation for l2_pool may not be supported.")


def conv_2d(v: NodeView):                # case kTfLiteBuiltinConv2d
    v.max_version(5)
    if v.sdk < NNAPI12:
        v.expect(not is_hybrid(v), HYBRID, "Hybrid operators not supported before NNAPI 1.2")
        v.float_or_uint8_op()
        if v.in_per_channel(1):
            v.expect(False, QUANT_TYPE, "Per-channel quantized convolution not supported before NNAPI 1.2.")
    if v.sdk < NNAPI12 and v.in_type(0) == "UInt8":
        v.restricted_scales()
    v.expect(v.n_inputs == 3, MISSING_OPERAND, "Conv2D with omitted bias not supported")
    if v.attr("dilation_w_factor", 1) != 1 or v.attr("dilation_h_factor", 1) != 1:
        v.expect(v.sdk >= NNAPI12, OPERAND_VALUE, "NNAPI supports dilated Conv2D since NNAPI 1.2.")
    if v.sdk < NNAPI12:
        di, df = v.in_dims(0), v.in_dims(1)
        v.expect(len(di) == 4 and len(df) == 4 and di[3] == df[3], OPERAND_VALUE,
                 "Grouped convolution not supported before NNAPI < 1.2")


def depthwise_conv_2d(v: NodeView):      # case kTfLiteBuiltinDepthwiseConv2d
    v.max_version(3)
    if v.sdk < NNAPI12:
        v.float_or_uint8_op()
        if v.in_type(0) == "UInt8":
            v.restricted_scales()
        v.expect(v.attr("dilation_w_factor", 1) == 1 and v.attr("dilation_h_factor", 1) == 1, OPERAND_VALUE,
                 "dilation_width_factor and dilation_height_factor expected to be equal to 1")


def fully_connected(v: NodeView):        # case kTfLiteBuiltinFullyConnected
    v.max_version(5)
    v.expect(v.out_type(0) != "Int16", OUTPUT_TYPE, "Unsupported output of type kTfLiteInt16")
    if v.sdk < NNAPI12:
        v.expect(not is_hybrid(v), HYBRID, "Hybrid operators not supported before NNAPI 1.2")
        v.float_or_uint8_op()
    if v.sdk < NNAPI12 and v.in_type(0) == "UInt8":
        v.restricted_scales()
    if v.attr("keep_num_dims", False):
        v.min_sdk(NNAPI13)


def transpose_conv(v: NodeView):         # case kTfLiteBuiltinTransposeConv
    v.max_version(4)
    v.min_sdk(NNAPI12)
    v.expect(v.n_inputs > 1 and v.in_const(0) and v.in_const(1), CONSTANT_SHAPE,
             "Dynamically-sized tensors not supported.")


def hard_swish(v: NodeView):             # case kTfLiteBuiltinHardSwish (lowered before API 30, see mapping)
    v.float_or_quant8_op()


def softmax(v: NodeView):                # case kTfLiteBuiltinSoftmax
    v.op_version(2)
    v.float_or_quant8_op()
    v.type_in(v.out_type(0), ("Float32", "UInt8", "Int8"), OUTPUT_TYPE,
              "Output type should be one of kTfLiteFloat32, kTfLiteUInt8, kTfLiteInt8.")
    r = v.in_rank(0)
    v.expect(r <= 4, RANK, "Input rank should be <= 4")
    if v.sdk < NNAPI12:
        v.expect(r in (2, 4), RANK, "Before API level 29 only 2D and 4D input tensors were supported.")


def log_softmax(v: NodeView):            # case kTfLiteBuiltinLogSoftmax
    v.op_version(1)
    v.min_sdk(NNAPI12)
    v.expect(v.in_type(0) == "Float32", INPUT_TYPE, "Input should be Float32.")


def relu_logistic(v: NodeView):          # case kTfLiteBuiltinRelu / ReluN1To1 / Relu6 / Logistic
    v.max_version(2)
    v.float_or_quant8_op()


def tanh(v: NodeView):                   # case kTfLiteBuiltinTanh
    v.max_version(2)
    t = v.in_type(0)
    v.expect(is_float(t) or (is_quantized(t) and v.sdk >= NNAPI12), INPUT_TYPE, " NNAPI only support float tanh.")


def prelu_leaky_relu(v: NodeView):       # case kTfLiteBuiltinLeakyRelu / kTfLiteBuiltinPrelu
    v.op_version(1)
    v.min_sdk(NNAPI12)
    v.type_in(v.in_type(0), ("Float32", "UInt8", "Int8"))


def elu(v: NodeView):                    # case kTfLiteBuiltinElu
    v.op_version(1)
    v.min_sdk(NNAPI13)
    v.expect(v.in_type(0) == "Float32", INPUT_TYPE, "NNAPI only supports floating point input.")


def l2_normalization(v: NodeView):       # case kTfLiteBuiltinL2Normalization
    v.max_version(2)
    if v.sdk < NNAPI12:
        v.float_op()
        v.expect(v.in_rank(0) == 4, VARIANT, "Expected 4 inputs")
    v.activation_none("Expected no activation")


def local_response_normalization(v: NodeView):  # case kTfLiteBuiltinLocalResponseNormalization
    v.op_version(1)


def dequantize(v: NodeView):             # case kTfLiteBuiltinDequantize
    if v.sdk >= NNAPI13 and v.in_type(0) == "Float16" and not v.in_const(0):
        return True  # fp16 -> fp32 of a computed tensor
    v.expect(v.version in (1, 2), OP_VERSION, "Supported op versions are 1 and 2 only")
    t = v.in_type(0)
    if v.sdk < NNAPI12:
        v.type_in(t, ("UInt8",))
    else:
        v.type_in(t, ("UInt8", "Int8"))
        if v.sdk == NNAPI12 and t == "Int8":
            v.expect(v.in_params(0)[1] == 0, INPUT_TYPE,
                     "NN API supports int8 type since version 1.2 but only for symmetric quantization.")


def quantize(v: NodeView):               # case kTfLiteBuiltinQuantize
    v.max_version(2)
    v.min_sdk(NNAPI12)
    t = v.in_type(0)
    v.expect(t == "Float32" or is_quantized(t), INPUT_TYPE, "Value should be quantized or Float32.")
    if is_quantized(t):
        v.expect(v.in_params(0)[0] > 0, QUANT_PARAMS, "Quantization scale should be > 0.")
    if v.sdk < NNAPI13:
        v.expect(v.out_type(0) == "UInt8", OUTPUT_TYPE, "Output should be kTfLiteUInt8.")
    else:
        v.type_in(v.out_type(0), ("UInt8", "Int8"), OUTPUT_TYPE, "Output should be kTfLiteUInt8.")
    v.expect(v.out_params(0)[0] > 0, QUANT_PARAMS, "Quantization scale should be > 0.")


def densify(v: NodeView):                # case kTfLiteBuiltinDensify: accepted or refused, never worded
    if v.sdk >= NNAPI13 and v.in_const(0):
        return True
    v.expect(False, "kUnsupportedOperator",
             "(no message: Validate refuses DENSIFY of a non-constant tensor or below API 30 silently)")


def cast(v: NodeView):                   # case kTfLiteBuiltinCast
    v.op_version(1)
    v.min_sdk(NNAPI12)
    if v.sdk >= NNAPI13:
        v.type_in(v.in_type(0), ("Float32", "Int32", "UInt8", "Int8"))
        v.type_in(v.out_type(0), ("Float32", "Int32", "UInt8", "Int8"), OUTPUT_TYPE,
                  "Output type should be one of kTfLiteFloat32, kTfLiteInt32, kTfLiteUInt8, kTfLiteInt8.")
    else:
        v.type_in(v.in_type(0), ("Float32", "Int32", "UInt8"))
        v.type_in(v.out_type(0), ("Float32", "Int32", "UInt8"), OUTPUT_TYPE,
                  "Output type should be one of kTfLiteFloat32, kTfLiteInt32, kTfLiteUInt8.")


def batch_matmul(v: NodeView):           # case kTfLiteBuiltinBatchMatmul
    v.op_version(2)
    v.min_sdk(1000006)
    a, b = v.in_type(0), v.in_type(1)
    v.type_in(a, ("Float32", "Int32", "Int8"))
    v.expect(a == b, HYBRID, "NNAPI does not support hybrid batch matmul")
    da, db = v.in_dims(0), v.in_dims(1)
    v.expect(2 <= len(da) <= 4, RANK, "NNAPI does not support input rank greater than 4 or less than 2")
    broadcast = len(da) != len(db) or any(x != y for x, y in zip(da[:-2], db[:-2]))  # IsBroadcastBatchMatMul
    v.expect(not broadcast, INPUT_TYPE, "NNAPI does not support broadcast batch matmul")


# -- recurrent and lookup builtins

def lstm(v: NodeView):                   # case kTfLiteBuiltinLstm
    v.max_version(3)
    v.expect(v.sdk >= NNAPI11, ANDROID_VERSION, "NNAPI 1.0 has a bug for optional tensors which would affect LSTM.")
    v.expect(v.sdk >= NNAPI12 or not is_hybrid(v), HYBRID, "Hybrid operators not supported before NNAPI 1.2.")
    basic = v.n_inputs == 5
    w = v.in_type(2 if basic else 4)
    if basic:
        v.expect(w == "UInt8", INPUT_TYPE, "Basic LSTM Kernels support only UINT8 weights")
        v.expect(v.in_params(0) == (1.0 / 128.0, 128), QUANT_PARAMS, "Invalid input quantization")
        v.expect(v.out_params(0) == (1.0 / 128.0, 128), QUANT_PARAMS, "Invalid output quantization")
        cs, cz = v.out_params(1) if len(v.node.outputs) > 1 else (0.0, 0)
        v.expect(cs == 16.0 / 32768.0 or cz == 0, QUANT_PARAMS, "Invalid cell state quantization")
        v.expect(v.in_const(2), CONSTANT_SHAPE, "Weights tensor should be constant")
        v.expect(v.in_const(3), CONSTANT_SHAPE, "Biases tensor should be constant")
        return None
    if v.n_inputs == 24:
        v.min_sdk(NNAPI12)
    if v.sdk >= NNAPI13:
        v.expect(w in ("Float32", "UInt8", "Int8"), INPUT_TYPE, "Weight has to be Float32 or UINT8 or INT8")
    else:
        v.expect(w in ("Float32", "UInt8"), INPUT_TYPE, "Weight has to be Float32 or UINT8")


def unidirectional_sequence_lstm(v: NodeView):  # case kTfLiteBuiltinUnidirectionalSequenceLstm
    v.max_version(2)
    v.min_sdk(NNAPI12)
    v.expect(not is_hybrid(v), HYBRID, "Hybrid version of this op is not supported by NN API.")
    v.expect(v.n_inputs in (20, 24), VARIANT, "Supporting only operation with 20 or 24 inputs")


def bidirectional_sequence_lstm(v: NodeView):   # case kTfLiteBuiltinBidirectionalSequenceLstm
    v.op_version(1)
    v.min_sdk(NNAPI12)
    v.expect(not is_hybrid(v), HYBRID, "Hybrid version of this op is not supported by NN API.")


def unidirectional_sequence_rnn(v: NodeView):   # case kTfLiteBuiltinUnidirectionalSequenceRnn
    v.op_version(1)
    v.min_sdk(NNAPI12)
    v.expect(not is_hybrid(v), HYBRID, "Hybrid version of this op is not supported by NN API.")


def rnn(v: NodeView):                    # case kTfLiteBuiltinRnn
    v.op_version(1)
    v.expect(v.n_inputs == 5, VARIANT, "Expected 5 input")
    if v.n_inputs >= 2:
        v.expect(v.in_type(1) == "Float32", INPUT_TYPE, "NNAPI only support float32 weights.")


def svdf(v: NodeView):                   # case kTfLiteBuiltinSvdf
    v.op_version(1)
    v.expect(v.n_inputs == 5, RANK, "Expected input of rank 5")
    if v.n_inputs >= 2:
        v.expect(v.in_type(1) == "Float32", INPUT_TYPE, "NNAPI only support float32 weights.")
    v.expect(v.sdk >= NNAPI11, RANK, "SVDF does not support rank > 1 on NNAPI 1.0.")
    v.expect(v.in_type(1) == "Float32", INPUT_TYPE, "Weights should be Float32")


def embedding_lookup(v: NodeView):       # case kTfLiteBuiltinEmbeddingLookup
    v.op_version(1)
    v.expect(v.in_type(1) == "Float32", INPUT_TYPE, "NNAPI only support float32 values.")


def hashtable_lookup(v: NodeView):       # case kTfLiteBuiltinHashtableLookup
    v.op_version(1)
    v.expect(v.out_type(0) == "Float32", OUTPUT_TYPE, "NNAPI only support float32 output.")


def lsh_projection(v: NodeView):         # case kTfLiteBuiltinLshProjection (type 1 = SPARSE)
    v.op_version(1)
    if v.attr("type") == 1:
        v.expect(v.sdk >= NNAPI12, INPUT_TYPE, "NNAPI does not support sparse projection correctly pre-Q")
        v.expect(v.n_inputs == 2, VARIANT, " NNAPI does not support weights for sparse projects.")


RULES = {
    "ADD": add, "MUL": mul, "SUB": sub, "DIV": div, "SQUARED_DIFFERENCE": squared_difference,
    "MAXIMUM": maximum_minimum, "MINIMUM": maximum_minimum,
    "ABS": pow_like_unary, "EXP": pow_like_unary, "LOG": pow_like_unary, "POW": pow_like_unary,
    "SQRT": sqrt_sin_cos, "SIN": sqrt_sin_cos, "COS": sqrt_sin_cos, "RSQRT": rsqrt, "NEG": neg, "FLOOR": floor,
    "AVERAGE_POOL_2D": average_pool, "MAX_POOL_2D": max_pool, "L2_POOL_2D": l2_pool,
    "CONV_2D": conv_2d, "DEPTHWISE_CONV_2D": depthwise_conv_2d, "FULLY_CONNECTED": fully_connected,
    "TRANSPOSE_CONV": transpose_conv, "HARD_SWISH": hard_swish, "SOFTMAX": softmax, "LOG_SOFTMAX": log_softmax,
    "RELU": relu_logistic, "RELU_N1_TO_1": relu_logistic, "RELU6": relu_logistic, "LOGISTIC": relu_logistic,
    "TANH": tanh, "PRELU": prelu_leaky_relu, "LEAKY_RELU": prelu_leaky_relu, "ELU": elu,
    "L2_NORMALIZATION": l2_normalization, "LOCAL_RESPONSE_NORMALIZATION": local_response_normalization,
    "DEQUANTIZE": dequantize, "QUANTIZE": quantize, "DENSIFY": densify, "CAST": cast, "BATCH_MATMUL": batch_matmul,
    "LSTM": lstm, "UNIDIRECTIONAL_SEQUENCE_LSTM": unidirectional_sequence_lstm,
    "BIDIRECTIONAL_SEQUENCE_LSTM": bidirectional_sequence_lstm,
    "UNIDIRECTIONAL_SEQUENCE_RNN": unidirectional_sequence_rnn, "RNN": rnn, "SVDF": svdf,
    "EMBEDDING_LOOKUP": embedding_lookup, "HASHTABLE_LOOKUP": hashtable_lookup, "LSH_PROJECTION": lsh_projection,
}
