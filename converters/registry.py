"""The converter registry: one entry per source op (TFLite builtin or ONNX
(domain, op_type)), with the op versions / opsets it accepts.

A converter is a function `convert(node, ctx)` that emits NNAPI operations
through the ConversionContext and raises `Unsupported` when it cannot. Its
`check` is the same function run against a scratch model (see
converters/convert.py), so what coverage reports and what conversion does
can never disagree, and the feature level a node needs comes from the NNAPI
op specs of what it emits.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Callable, Optional


class Reason(str, enum.Enum):
    """Why a node cannot be converted (stable codes for reports)."""

    UNSUPPORTED_OPERATOR = "unsupported_operator"
    CUSTOM_OPERATOR = "custom_operator"      # a TFLite custom operator (CUSTOM:<name>) NNAPI cannot express
    OPERATOR_VERSION = "operator_version"
    OPERAND_TYPE = "operand_type"
    QUANTIZATION_TYPE = "quantization_type"
    RANK = "rank"
    DYNAMIC_SHAPE = "dynamic_shape"
    NON_CONSTANT_OPERAND = "non_constant_operand"
    FUSED_ACTIVATION = "fused_activation"
    FEATURE_LEVEL = "feature_level_too_low"
    ATTRIBUTE = "unsupported_attribute"
    INVALID = "invalid_node"


class Unsupported(Exception):
    """Raised by a converter: this node (as used here) cannot become NNAPI operations."""

    def __init__(self, reason: Reason, detail: str, feature_level_needed: Optional[int] = None):
        super().__init__(detail)
        self.reason = Reason(reason)
        self.detail = detail
        self.feature_level_needed = feature_level_needed


@dataclass
class Supported:
    min_feature_level: int
    emits: list = field(default_factory=list)   # NNAPI operation names, in order
    note: str = ""
    # {"into": node index or None, "how": ...}: why a node that emits nothing emits nothing (context.absorb)
    absorbed: Optional[dict] = None


@dataclass
class Converter:
    fmt: str
    op: str
    convert: Callable
    min_version: int = 1
    max_version: int = 1 << 30
    family: str = ""
    doc: str = ""

    def accepts(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


REGISTRY: dict[tuple[str, str], Converter] = {}


def converter(fmt: str, *ops: str, versions: tuple = (1, 1 << 30), family: str = ""):
    """Register `fn(node, ctx)` as the converter of `ops` in format `fmt` ("tflite" or "onnx")."""
    def deco(fn):
        for op in ops:
            key = (fmt, op)
            if key in REGISTRY:
                raise ValueError(f"two converters for {fmt} {op}")
            REGISTRY[key] = Converter(fmt, op, fn, versions[0], versions[1], family or fn.__module__.rsplit(".", 1)[-1],
                                      (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else "")
        return fn
    return deco


def lookup(fmt: str, op: str, version: int) -> Converter:
    conv = REGISTRY.get((fmt, op))
    if conv is None and fmt == "tflite" and op.startswith("CUSTOM:"):
        raise Unsupported(Reason.CUSTOM_OPERATOR, f"custom operator {op[len('CUSTOM:'):]} has no NNAPI converter")
    if conv is None:
        raise Unsupported(Reason.UNSUPPORTED_OPERATOR, f"{op} has no NNAPI converter")
    if not conv.accepts(version):
        raise Unsupported(Reason.OPERATOR_VERSION,
                          f"{op} version {version} is not supported (converter accepts {conv.min_version}"
                          f"..{conv.max_version if conv.max_version < 1 << 30 else 'newest'})")
    return conv
