"""NDK names for NNAPI codes, and how the generated C spells operation parameters.

Every number the generated C passes to NNAPI is written with the NDK's own
constant when one exists (operand and operation types, fuse codes, padding
schemes, preferences, feature levels), so the code reads like hand-written
NNAPI code and does not depend on this project's numbering.
"""
from __future__ import annotations

from typing import Optional

from nnapi.codes import (FeatureLevel, FuseCode, OperandCode, OperationCode, PaddingCode, PreferenceCode,
                         ndk_name)


def operand_type(code: OperandCode) -> str:
    """ANEURALNETWORKS_TENSOR_FLOAT32, ... (SUBGRAPH is ANEURALNETWORKS_MODEL in the NDK)."""
    return ndk_name(OperandCode(code))


def operation_type(code: OperationCode) -> str:
    return ndk_name(OperationCode(code))


def fuse_code(value: int) -> Optional[str]:
    try:
        return ndk_name(FuseCode(int(value)))
    except ValueError:
        return None


def padding_code(value: int) -> Optional[str]:
    try:
        return ndk_name(PaddingCode(int(value)))
    except ValueError:
        return None


PREFERENCES = {
    "low-power": ndk_name(PreferenceCode.LOW_POWER),
    "fast-single-answer": ndk_name(PreferenceCode.FAST_SINGLE_ANSWER),
    "sustained-speed": ndk_name(PreferenceCode.SUSTAINED_SPEED),
}


def feature_level_constant(level: int) -> str:
    return ndk_name(FeatureLevel(int(level)))


def android_api_level(level: int) -> int:
    """Feature levels 1-5 are Android API levels 27-31; 6-8 are the NDK's 1000006-1000008."""
    return FeatureLevel(int(level)).android_api


def min_android_release(level: int) -> str:
    """A sentence on what a device needs to run a model of this feature level."""
    level = int(level)
    if level <= 5:
        return f"Android API level {android_api_level(level)} (minSdkVersion {android_api_level(level)})"
    return (f"Android API level 31 (minSdkVersion 31) with an NNAPI updatable-module runtime of feature level "
            f"{feature_level_constant(level)} = {android_api_level(level)} "
            f"(check ANeuralNetworks_getRuntimeFeatureLevel() at run time)")


# scalar arguments (by op spec argument name) whose value is an NDK enum
_ENUM_ARGS = {"fuse": fuse_code, "activation": fuse_code, "padding": padding_code}


def scalar_param(arg_name: Optional[str], code: OperandCode, value) -> Optional[str]:
    """The C spelling of a scalar parameter's value when it names an enum member
    (`ANEURALNETWORKS_PADDING_SAME`, `ANEURALNETWORKS_FUSED_RELU6`), else None."""
    if arg_name is None or code != OperandCode.INT32:
        return None
    spell = _ENUM_ARGS.get(arg_name)
    return spell(int(value)) if spell else None


def layout_comment(arg_name: Optional[str], code: OperandCode, value) -> Optional[str]:
    """NCHW / NHWC for the BOOL layout arguments."""
    if arg_name and code == OperandCode.BOOL and (arg_name == "layout" or arg_name.endswith("_layout")):
        return "NCHW" if int(value) else "NHWC"
    return None
