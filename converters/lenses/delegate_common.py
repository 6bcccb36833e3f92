"""What LiteRT's NNAPI delegate sees of a node, and how it words a refusal.

Mirrors the helpers of tflite/delegates/nnapi/nnapi_delegate.cc (google-ai-edge/LiteRT):
the TfLiteType predicates (IsFloat, IsQuantized, ...), the Expect* helpers and their
messages, and NNAPIValidationFailureType from nnapi_delegate_kernel.h. The delegate's
`android_sdk_version` is an Android API level up to 31 and 1000000 + N for the NNAPI
module feature levels 6..8 (kNNAPIRuntimeFeatureLevel6..8)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

# nnapi_delegate_kernel.h: kMinSdkVersionForNNAPI* / kNNAPIRuntimeFeatureLevel*
SDK_FOR_LEVEL = {1: 27, 2: 28, 3: 29, 4: 30, 5: 31, 6: 1000006, 7: 1000007, 8: 1000008}
NNAPI10, NNAPI11, NNAPI12, NNAPI13, FL5, FL6, FL7, FL8 = (SDK_FOR_LEVEL[k] for k in range(1, 9))

# NNAPIValidationFailureType (nnapi_delegate_kernel.h), by value
FAILURE_TYPES = (
    "kUnsupportedOperator", "kUnsupportedAndroidVersion", "kUnsupportedOperatorVersion",
    "kUnsupportedInputType", "kNotRestrictedScaleCompliant", "kUnsupportedOutputType",
    "kUnsupportedOperandSize", "kUnsupportedOperandValue", "kUnsupportedHybridOperator",
    "kUnsupportedQuantizationType", "kMissingRequiredOperand", "kUnsupportedOperandRank",
    "kInputTensorShouldHaveConstantShape", "kUnsupportedOperatorVariant", "kNoActivationExpected",
    "kUnsupportedQuantizationParameters",
)
(UNSUPPORTED_OPERATOR, ANDROID_VERSION, OP_VERSION, INPUT_TYPE, RESTRICTED_SCALE, OUTPUT_TYPE, OPERAND_SIZE,
 OPERAND_VALUE, HYBRID, QUANT_TYPE, MISSING_OPERAND, RANK, CONSTANT_SHAPE, VARIANT, NO_ACTIVATION,
 QUANT_PARAMS) = FAILURE_TYPES

# numpy storage dtype -> the TfLiteType the delegate tests (kTfLite*)
_TFLITE_TYPES = {
    np.dtype(np.float32): "Float32", np.dtype(np.float16): "Float16", np.dtype(np.int32): "Int32",
    np.dtype(np.uint8): "UInt8", np.dtype(np.int8): "Int8", np.dtype(np.int64): "Int64",
    np.dtype(np.bool_): "Bool", np.dtype(np.int16): "Int16", np.dtype(np.float64): "Float64",
    np.dtype(np.complex64): "Complex64", np.dtype(np.uint16): "UInt16", np.dtype(np.uint32): "UInt32",
}


# schema TensorType names whose kTfLite spelling is not plain capitalisation
_SCHEMA_SPELLING = {"UINT8": "UInt8", "UINT16": "UInt16", "UINT32": "UInt32", "UINT64": "UInt64"}


def tflite_type(tensor) -> str:
    """The tensor's TfLiteType without the kTfLite prefix (Float32, Int8, Resource, ...)."""
    name = getattr(tensor, "tflite_type", None)  # the schema's TensorType, as the reader keeps it
    if name is not None:
        return _SCHEMA_SPELLING.get(name, name[:1] + name[1:].lower().replace("float", "Float")
                                    .replace("int", "Int").replace("complex", "Complex"))
    return _TFLITE_TYPES.get(np.dtype(tensor.dtype), np.dtype(tensor.dtype).name)


def is_float(t: str) -> bool:             # IsFloat
    return t == "Float32"


def is_quantized(t: str) -> bool:         # IsQuantized (int16 is not, as in the delegate)
    return t in ("UInt8", "Int8")


FLOAT_OR_UINT8 = ("Float32", "UInt8")                    # IsFloatOrUInt8
FLOAT_OR_QUANT8 = ("Float32", "UInt8", "Int8")           # IsFloatOrQuantized
FLOAT_OR_INT32 = ("Float32", "Int32")                    # IsFloatOrInt32
FLOAT_QUANT8_OR_INT32 = ("Float32", "UInt8", "Int8", "Int32")  # IsFloatQuantizedOrInt32


@dataclass
class Failure:
    type: str
    message: str

    def as_dict(self) -> dict:
        return {"type": self.type, "message": self.message}


@dataclass
class NodeView:
    """One node as Validate reads it: its tensors (by TfLiteType, dims, constness), options, version,
    the target level and whether an accelerator other than nnapi-reference was selected."""
    graph: object
    node: object
    sdk: int
    accelerator: bool
    fp16_remap: dict = field(default_factory=dict)  # dequantized tensor -> its constant fp16 source
    failures: list = field(default_factory=list)

    # -- tensors (i < 0 or beyond the node's inputs: an omitted optional tensor)
    def _in(self, i: int):
        t = self.node.inputs[i] if i < len(self.node.inputs) else -1
        if t < 0:
            return None
        return self.graph.tensors[self.fp16_remap.get(t, t)]

    def in_type(self, i: int) -> Optional[str]:
        t = self._in(i)
        return None if t is None else tflite_type(t)

    def out_type(self, i: int = 0) -> str:
        return tflite_type(self.graph.tensors[self.node.outputs[i]])

    def in_dims(self, i: int) -> list:
        t = self._in(i)
        return [] if t is None or t.shape is None else list(t.shape)

    def out_dims(self, i: int = 0) -> list:
        t = self.graph.tensors[self.node.outputs[i]]
        return [] if t.shape is None else list(t.shape)

    def in_rank(self, i: int) -> int:
        return len(self.in_dims(i))

    def in_const(self, i: int) -> bool:   # allocation_type == kTfLiteMmapRo
        t = self._in(i)
        return t is not None and t.is_constant

    def in_value(self, i: int):
        t = self._in(i)
        return None if t is None or t.data is None else np.asarray(t.data)

    def in_params(self, i: int) -> tuple:   # TfLiteTensor.params: (scale, zero_point); 0, 0 unquantized
        t = self._in(i)
        return (0.0, 0) if t is None or t.quant is None else (t.quant.scale, t.quant.zero_point)

    def out_params(self, i: int = 0) -> tuple:
        t = self.graph.tensors[self.node.outputs[i]]
        return (0.0, 0) if t.quant is None else (t.quant.scale, t.quant.zero_point)

    def in_per_channel(self, i: int) -> bool:
        t = self._in(i)
        return t is not None and t.quant is not None and len(t.quant.scales) > 1

    @property
    def n_inputs(self) -> int:
        return len(self.node.inputs)

    @property
    def version(self) -> int:
        return self.node.version

    def attr(self, key: str, default=0):
        return self.node.attrs.get(key, default)

    # -- the Expect* helpers: record a failure when the condition does not hold
    def expect(self, cond: bool, kind: str, message: str) -> bool:
        if not cond:
            self.failures.append(Failure(kind, message))
        return bool(cond)

    def max_version(self, v: int) -> bool:          # ExpectMaxOpVersion
        return self.expect(self.version <= v, OP_VERSION, f"OP Version higher than {v}")

    def op_version(self, v: int) -> bool:           # ExpectOpVersion (also a "<=" test, worded "different")
        return self.expect(self.version <= v, OP_VERSION, f"OP Version different from {v}")

    def min_sdk(self, level: int) -> bool:          # ExpectMinAndroidSdkVersion
        return self.expect(self.sdk >= level, ANDROID_VERSION, f"Android sdk version less than {level}")

    def type_in(self, t: Optional[str], allowed: tuple, kind: str = INPUT_TYPE, message: str = None) -> bool:
        # EXPECT_INPUT_TYPE_IN's message lists the allowed kTfLite types as written in the source
        msg = message or "Input type not in expected list " + ", ".join("kTfLite" + a for a in allowed)
        return self.expect(t in allowed, kind, msg)

    def input0_in(self, allowed: tuple, message: str) -> bool:  # ExpectIsFloat*Operator: input 0's type
        return self.expect(self.in_type(0) in allowed, INPUT_TYPE, message)

    def float_op(self) -> bool:
        return self.input0_in(("Float32",), "Input should be Float")

    def float_or_uint8_op(self) -> bool:
        return self.input0_in(FLOAT_OR_UINT8, "Input should be Float or UINT8")

    def float_or_quant8_op(self) -> bool:
        return self.input0_in(FLOAT_OR_QUANT8, "Input should be Float or Quant8")

    def float_or_int32_op(self) -> bool:
        return self.input0_in(FLOAT_OR_INT32, "Input should be Float or Int32")

    def float_quant8_or_int32_op(self) -> bool:
        return self.input0_in(FLOAT_QUANT8_OR_INT32, "Input should be Float, Quant8, or Int32")

    def restricted_scales(self) -> bool:            # ExpectIsRestrictedScalesCompliant
        (si, _), (sf, _), (so, _) = self.in_params(0), self.in_params(1), self.out_params(0)
        return self.expect(si * sf < so, RESTRICTED_SCALE,
                           "When using NN API version 1.0 or 1.1, input_scale * filter_scale < output_scale.")

    def activation_none(self, message: str = "No activation function supported") -> bool:
        return self.expect(self.attr("fused_activation_function") == 0, NO_ACTIVATION, message)


def is_hybrid(v: NodeView) -> bool:
    """IsHybridOperator: float input with quantized weights (CONV_2D, FULLY_CONNECTED, the LSTMs, the
    sequence RNN); LSTM counts only as the full kernel (20 or 24 inputs)."""
    op = v.node.op
    if op in ("CONV_2D", "FULLY_CONNECTED"):
        return is_float(v.in_type(0)) and is_quantized(v.in_type(1))
    if op == "LSTM":
        return v.n_inputs in (20, 24) and is_float(v.in_type(0)) and is_quantized(v.in_type(2))
    if op in ("UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM"):
        return is_float(v.in_type(0)) and is_quantized(v.in_type(2))
    if op == "UNIDIRECTIONAL_SEQUENCE_RNN":
        return is_float(v.in_type(0)) and is_quantized(v.in_type(1))
    return False
