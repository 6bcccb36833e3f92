"""Which NNAPI operations LiteRT's NNAPI delegate emits for an accepted node: the
lowerings of NNAPIDelegateKernel::AddOpsAndTensors (nnapi_delegate.cc) and the
`*nn_op_type` choices of NNAPIDelegateKernel::Map. Only what changes the delegated
operations is modelled; operand plumbing (scalar parameters, int8 -> uint8 offsets
below API 30) emits no operation."""
from __future__ import annotations

from .delegate_common import FL6, NNAPI13, NodeView, is_float, is_quantized

# builtin -> the NNAPI operation Map picks when nothing below applies
_DIRECT = {
    "ADD": "ADD", "ARG_MAX": "ARGMAX", "ARG_MIN": "ARGMIN", "MUL": "MUL", "AVERAGE_POOL_2D": "AVERAGE_POOL_2D",
    "MAX_POOL_2D": "MAX_POOL_2D", "L2_POOL_2D": "L2_POOL_2D", "DEPTHWISE_CONV_2D": "DEPTHWISE_CONV_2D",
    "FULLY_CONNECTED": "FULLY_CONNECTED", "HARD_SWISH": "HARD_SWISH", "SOFTMAX": "SOFTMAX", "RESHAPE": "RESHAPE",
    "RESIZE_BILINEAR": "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR": "RESIZE_NEAREST_NEIGHBOR",
    "SQUEEZE": "SQUEEZE", "UNIDIRECTIONAL_SEQUENCE_LSTM": "UNIDIRECTIONAL_SEQUENCE_LSTM",
    "L2_NORMALIZATION": "L2_NORMALIZATION", "LOCAL_RESPONSE_NORMALIZATION": "LOCAL_RESPONSE_NORMALIZATION",
    "LSH_PROJECTION": "LSH_PROJECTION", "CONCATENATION": "CONCATENATION", "DEQUANTIZE": "DEQUANTIZE",
    "FLOOR": "FLOOR", "RELU": "RELU", "RELU_N1_TO_1": "RELU1", "RELU6": "RELU6", "LOGISTIC": "LOGISTIC",
    "TANH": "TANH", "SUB": "SUB", "DIV": "DIV", "UNIDIRECTIONAL_SEQUENCE_RNN": "UNIDIRECTIONAL_SEQUENCE_RNN",
    "SPACE_TO_BATCH_ND": "SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND": "BATCH_TO_SPACE_ND",
    "STRIDED_SLICE": "STRIDED_SLICE", "TRANSPOSE": "TRANSPOSE", "ABS": "ABS", "EXP": "EXP", "LOG": "LOG",
    "RSQRT": "RSQRT", "POW": "POW", "SLICE": "SLICE", "SIN": "SIN", "TRANSPOSE_CONV": "TRANSPOSE_CONV_2D",
    "SQRT": "SQRT", "RNN": "RNN", "SPACE_TO_DEPTH": "SPACE_TO_DEPTH", "SVDF": "SVDF", "MEAN": "MEAN",
    "EMBEDDING_LOOKUP": "EMBEDDING_LOOKUP", "HASHTABLE_LOOKUP": "HASHTABLE_LOOKUP", "MAXIMUM": "MAXIMUM",
    "MINIMUM": "MINIMUM", "CAST": "CAST", "LEAKY_RELU": "PRELU", "PRELU": "PRELU", "TILE": "TILE",
    "LOGICAL_OR": "LOGICAL_OR", "LOGICAL_AND": "LOGICAL_AND", "LOGICAL_NOT": "LOGICAL_NOT", "LESS": "LESS",
    "LESS_EQUAL": "LESS_EQUAL", "GREATER": "GREATER", "GREATER_EQUAL": "GREATER_EQUAL", "EQUAL": "EQUAL",
    "NOT_EQUAL": "NOT_EQUAL", "NEG": "NEG", "TOPK_V2": "TOPK_V2", "SELECT": "SELECT", "GATHER": "GATHER",
    "BIDIRECTIONAL_SEQUENCE_LSTM": "BIDIRECTIONAL_SEQUENCE_LSTM", "EXPAND_DIMS": "EXPAND_DIMS", "SPLIT": "SPLIT",
    "LOG_SOFTMAX": "LOG_SOFTMAX", "QUANTIZE": "QUANTIZE", "REDUCE_ANY": "REDUCE_ANY", "REDUCE_MIN": "REDUCE_MIN",
    "REDUCE_MAX": "REDUCE_MAX", "DEPTH_TO_SPACE": "DEPTH_TO_SPACE", "REDUCE_PROD": "REDUCE_PROD",
    "SUM": "REDUCE_SUM", "ELU": "ELU", "FILL": "FILL", "BATCH_MATMUL": "BATCH_MATMUL", "PACK": "PACK",
    "MIRROR_PAD": "MIRROR_PAD", "REVERSE_V2": "REVERSE",
}


def _dequantized_weights(v: NodeView, positions) -> list:
    """AddDequantizeOperatorsWhereNeeded: a float CONV_2D / FULLY_CONNECTED / LSTM gets a DEQUANTIZE
    for each quantized weight or bias it reads."""
    if not is_float(v.in_type(0)):
        return []
    return ["DEQUANTIZE" for i in positions if i < v.n_inputs and is_quantized(v.in_type(i) or "")]


def emitted_ops(v: NodeView) -> list:
    """The NNAPI operations (OperationCode names) the delegate adds for the accepted node `v`."""
    op = v.node.op
    if op == "DENSIFY":
        return []  # DensifyAndDequantizeConstTensor: the constant is densified at preparation
    if op == "DEQUANTIZE" and v.in_type(0) == "Float16" and v.in_const(0):
        return []  # FP16GraphPartitionHelper: consumers read the fp16 constant itself
    if op == "PACK" and v.sdk < FL6:
        return ["CONCATENATION", "RESHAPE"]         # TransformPackIntoSupportedOps
    if op == "UNPACK":
        return ["RESHAPE", "SPLIT"]                 # TransformUnpackIntoSupportedOps
    if op == "SPLIT_V":
        return ["SLICE"] * len(v.node.outputs)      # TransformSplitVIntoSupportedOps
    if op == "SQUARED_DIFFERENCE":
        return ["SUB", "MUL"]                       # TransformSquaredDifferenceIntoSupportedOps
    if op == "COS":
        return ["SUB", "SIN"]                       # TransformCosIntoSupportedOps: sin(pi/2 - x)
    if op == "HARD_SWISH" and v.sdk < NNAPI13:
        return ["MUL", "MUL", "MUL", "ADD"]         # TransformHardSwishIntoSupportedOps
    if op == "LSTM":
        if v.n_inputs == 5:
            return ["QUANTIZED_16BIT_LSTM"]          # the basic (quantized 5-input) kernel
        if v.sdk >= NNAPI13 and v.in_type(0) == "Int8":
            return ["QUANTIZED_LSTM"]
        return _dequantized_weights(v, [*range(1, 18), *range(20, 24)]) + ["LSTM"]
    if op == "CONV_2D":
        di, df = v.in_dims(0), v.in_dims(1)
        grouped = len(di) == 4 and len(df) == 4 and di[3] != df[3]   # Map, case kTfLiteBuiltinConv2d
        return _dequantized_weights(v, (1, 2)) + ["GROUPED_CONV_2D" if grouped else "CONV_2D"]
    if op == "FULLY_CONNECTED":
        return _dequantized_weights(v, (1, 2)) + ["FULLY_CONNECTED"]
    if op in ("PAD", "PADV2"):
        return ["PAD_V2" if v.n_inputs == 3 else "PAD"]   # Map, case kTfLiteBuiltinPad / Padv2
    return [_DIRECT[op]]
