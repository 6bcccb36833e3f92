"""NNAPI codes with their released numeric values (see shared/nnapi/CODES.md).

Every member knows the feature level that introduced it (`member.feature_level`).
Names drop the `ANEURALNETWORKS_` prefix of the NDK header.
"""
from __future__ import annotations

import enum


class _LevelledEnum(enum.IntEnum):
    """An IntEnum whose members carry the feature level that introduced them."""

    def __new__(cls, value: int, feature_level: int = 1):
        obj = int.__new__(cls, value)
        obj._value_ = value
        obj.feature_level = feature_level
        return obj


class FeatureLevel(enum.IntEnum):
    """NNAPI feature levels 1-8; `.android_api` gives the NDK constant value."""

    FL1 = 1
    FL2 = 2
    FL3 = 3
    FL4 = 4
    FL5 = 5
    FL6 = 6
    FL7 = 7
    FL8 = 8

    @property
    def android_api(self) -> int:
        return 26 + self.value if self.value <= 5 else 1000000 + self.value

    @property
    def feature_level(self) -> int:
        return int(self)


MAX_FEATURE_LEVEL = 8

# Android API level -> the NNAPI feature level that release provides. Levels 1-5 are the API levels
# 27-31 themselves (CODES.md); 12L (32) added nothing to NNAPI; 6, 7 and 8 shipped as the updatable
# NNAPI module with Android 13, 14 and 15 (API 33, 34, 35).
ANDROID_API_FEATURE_LEVELS = {27: 1, 28: 2, 29: 3, 30: 4, 31: 5, 32: 5, 33: 6, 34: 7, 35: 8}


class OperandCode(_LevelledEnum):
    FLOAT32 = 0, 1
    INT32 = 1, 1
    UINT32 = 2, 1
    TENSOR_FLOAT32 = 3, 1
    TENSOR_INT32 = 4, 1
    TENSOR_QUANT8_ASYMM = 5, 1
    BOOL = 6, 3
    TENSOR_QUANT16_SYMM = 7, 3
    TENSOR_FLOAT16 = 8, 3
    TENSOR_BOOL8 = 9, 3
    FLOAT16 = 10, 3
    TENSOR_QUANT8_SYMM_PER_CHANNEL = 11, 3
    TENSOR_QUANT16_ASYMM = 12, 3
    TENSOR_QUANT8_SYMM = 13, 3
    TENSOR_QUANT8_ASYMM_SIGNED = 14, 4
    SUBGRAPH = 15, 4
    OEM_SCALAR = 10000, 1
    TENSOR_OEM_BYTE = 10001, 1


class OperationCode(_LevelledEnum):
    ADD = 0, 1
    AVERAGE_POOL_2D = 1, 1
    CONCATENATION = 2, 1
    CONV_2D = 3, 1
    DEPTHWISE_CONV_2D = 4, 1
    DEPTH_TO_SPACE = 5, 1
    DEQUANTIZE = 6, 1
    EMBEDDING_LOOKUP = 7, 1
    FLOOR = 8, 1
    FULLY_CONNECTED = 9, 1
    HASHTABLE_LOOKUP = 10, 1
    L2_NORMALIZATION = 11, 1
    L2_POOL_2D = 12, 1
    LOCAL_RESPONSE_NORMALIZATION = 13, 1
    LOGISTIC = 14, 1
    LSH_PROJECTION = 15, 1
    LSTM = 16, 1
    MAX_POOL_2D = 17, 1
    MUL = 18, 1
    RELU = 19, 1
    RELU1 = 20, 1
    RELU6 = 21, 1
    RESHAPE = 22, 1
    RESIZE_BILINEAR = 23, 1
    RNN = 24, 1
    SOFTMAX = 25, 1
    SPACE_TO_DEPTH = 26, 1
    SVDF = 27, 1
    TANH = 28, 1
    BATCH_TO_SPACE_ND = 29, 2
    DIV = 30, 2
    MEAN = 31, 2
    PAD = 32, 2
    SPACE_TO_BATCH_ND = 33, 2
    SQUEEZE = 34, 2
    STRIDED_SLICE = 35, 2
    SUB = 36, 2
    TRANSPOSE = 37, 2
    ABS = 38, 3
    ARGMAX = 39, 3
    ARGMIN = 40, 3
    AXIS_ALIGNED_BBOX_TRANSFORM = 41, 3
    BIDIRECTIONAL_SEQUENCE_LSTM = 42, 3
    BIDIRECTIONAL_SEQUENCE_RNN = 43, 3
    BOX_WITH_NMS_LIMIT = 44, 3
    CAST = 45, 3
    CHANNEL_SHUFFLE = 46, 3
    DETECTION_POSTPROCESSING = 47, 3
    EQUAL = 48, 3
    EXP = 49, 3
    EXPAND_DIMS = 50, 3
    GATHER = 51, 3
    GENERATE_PROPOSALS = 52, 3
    GREATER = 53, 3
    GREATER_EQUAL = 54, 3
    GROUPED_CONV_2D = 55, 3
    HEATMAP_MAX_KEYPOINT = 56, 3
    INSTANCE_NORMALIZATION = 57, 3
    LESS = 58, 3
    LESS_EQUAL = 59, 3
    LOG = 60, 3
    LOGICAL_AND = 61, 3
    LOGICAL_NOT = 62, 3
    LOGICAL_OR = 63, 3
    LOG_SOFTMAX = 64, 3
    MAXIMUM = 65, 3
    MINIMUM = 66, 3
    NEG = 67, 3
    NOT_EQUAL = 68, 3
    PAD_V2 = 69, 3
    POW = 70, 3
    PRELU = 71, 3
    QUANTIZE = 72, 3
    QUANTIZED_16BIT_LSTM = 73, 3
    RANDOM_MULTINOMIAL = 74, 3
    REDUCE_ALL = 75, 3
    REDUCE_ANY = 76, 3
    REDUCE_MAX = 77, 3
    REDUCE_MIN = 78, 3
    REDUCE_PROD = 79, 3
    REDUCE_SUM = 80, 3
    ROI_ALIGN = 81, 3
    ROI_POOLING = 82, 3
    RSQRT = 83, 3
    SELECT = 84, 3
    SIN = 85, 3
    SLICE = 86, 3
    SPLIT = 87, 3
    SQRT = 88, 3
    TILE = 89, 3
    TOPK_V2 = 90, 3
    TRANSPOSE_CONV_2D = 91, 3
    UNIDIRECTIONAL_SEQUENCE_LSTM = 92, 3
    UNIDIRECTIONAL_SEQUENCE_RNN = 93, 3
    RESIZE_NEAREST_NEIGHBOR = 94, 3
    QUANTIZED_LSTM = 95, 4
    IF = 96, 4
    WHILE = 97, 4
    ELU = 98, 4
    HARD_SWISH = 99, 4
    FILL = 100, 4
    RANK = 101, 4
    BATCH_MATMUL = 102, 6
    PACK = 103, 6
    MIRROR_PAD = 104, 7
    REVERSE = 105, 7
    OEM_OPERATION = 10000, 1


class FuseCode(_LevelledEnum):
    NONE = 0, 1
    RELU = 1, 1
    RELU1 = 2, 1
    RELU6 = 3, 1


class PaddingCode(_LevelledEnum):
    SAME = 1, 1
    VALID = 2, 1


class PreferenceCode(_LevelledEnum):
    LOW_POWER = 0, 1
    FAST_SINGLE_ANSWER = 1, 1
    SUSTAINED_SPEED = 2, 1


class Priority(_LevelledEnum):
    LOW = 90, 4
    MEDIUM = 100, 4
    HIGH = 110, 4


class DeviceType(_LevelledEnum):
    UNKNOWN = 0, 3
    OTHER = 1, 3
    CPU = 2, 3
    GPU = 3, 3
    ACCELERATOR = 4, 3


class ResultCode(_LevelledEnum):
    NO_ERROR = 0, 1
    OUT_OF_MEMORY = 1, 1
    INCOMPLETE = 2, 1
    UNEXPECTED_NULL = 3, 1
    BAD_DATA = 4, 1
    OP_FAILED = 5, 1
    BAD_STATE = 6, 1
    UNMAPPABLE = 7, 2
    OUTPUT_INSUFFICIENT_SIZE = 8, 3
    UNAVAILABLE_DEVICE = 9, 3
    MISSED_DEADLINE_TRANSIENT = 10, 4
    MISSED_DEADLINE_PERSISTENT = 11, 4
    RESOURCE_EXHAUSTED_TRANSIENT = 12, 4
    RESOURCE_EXHAUSTED_PERSISTENT = 13, 4
    DEAD_OBJECT = 14, 4


class Lifetime(enum.Enum):
    """Operand lifetimes as the HAL names them."""

    TEMPORARY_VARIABLE = "TEMPORARY_VARIABLE"
    SUBGRAPH_INPUT = "SUBGRAPH_INPUT"
    SUBGRAPH_OUTPUT = "SUBGRAPH_OUTPUT"
    CONSTANT_COPY = "CONSTANT_COPY"
    CONSTANT_REFERENCE = "CONSTANT_REFERENCE"
    NO_VALUE = "NO_VALUE"
    POINTER = "POINTER"
    SUBGRAPH = "SUBGRAPH"


MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES = 128
DEFAULT_LOOP_TIMEOUT_S = 2.0
MAXIMUM_LOOP_TIMEOUT_S = 15.0


# -- the NDK header's spelling of the codes (<android/NeuralNetworksTypes.h>) ---------------------------------

NDK_PREFIX = "ANEURALNETWORKS_"
# (the NDK's enum type, the enum here, the prefix its members take after ANEURALNETWORKS_, members the NDK
# names otherwise); FeatureLevel's FLn are FEATURE_LEVEL_n, valued as .android_api
NDK_ENUMS = (
    ("OperandCode", OperandCode, "", {"SUBGRAPH": "MODEL"}),
    ("OperationCode", OperationCode, "", {}),
    ("FuseCode", FuseCode, "FUSED_", {}),
    ("PaddingCode", PaddingCode, "PADDING_", {}),
    ("PreferenceCode", PreferenceCode, "PREFER_", {}),
    ("PriorityCode", Priority, "PRIORITY_", {}),
    ("DeviceTypeCode", DeviceType, "DEVICE_", {}),
    ("ResultCode", ResultCode, "", {}),
    ("FeatureLevelCode", FeatureLevel, "", {f"FL{k}": f"FEATURE_LEVEL_{k}" for k in range(1, 9)}),
)
# constants the NDK adds to those enums: PRIORITY_DEFAULT is MEDIUM
NDK_ALIASES = {"PriorityCode": {"PRIORITY_DEFAULT": Priority.MEDIUM}}


def ndk_name(member: enum.IntEnum) -> str:
    """The NDK's constant for a member of one of NDK_ENUMS: ANEURALNETWORKS_MODEL for OperandCode.SUBGRAPH,
    ANEURALNETWORKS_FUSED_RELU6, ANEURALNETWORKS_FEATURE_LEVEL_6, ..."""
    for _, cls, prefix, renamed in NDK_ENUMS:
        if type(member) is cls:
            return NDK_PREFIX + renamed.get(member.name, prefix + member.name)
    raise TypeError(f"{member!r} is not one of the NDK's enums")


def ndk_value(member: enum.IntEnum) -> int:
    """The value the NDK gives the member's constant (a feature level's is its NDK code, e.g. 1000006)."""
    return member.android_api if isinstance(member, FeatureLevel) else int(member)


def ndk_constants() -> list:
    """[(NDK enum type, [(constant, value), ...]), ...]: every constant of NDK_ENUMS as the NDK header
    declares it, plus MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES (the header generator's input,
    converters/export/ndk_header.py)."""
    groups = []
    for ndk_enum, cls, _, _ in NDK_ENUMS:
        members = [(ndk_name(m), ndk_value(m)) for m in cls]
        members += [(NDK_PREFIX + n, int(v)) for n, v in NDK_ALIASES.get(ndk_enum, {}).items()]
        groups.append((ndk_enum, members))
    groups.append(("", [(NDK_PREFIX + "MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES", MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES)]))
    return groups
