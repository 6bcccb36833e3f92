"""Operand types (ANeuralNetworksOperandType) and operands of a model."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .codes import Lifetime, OperandCode

C = OperandCode

# numpy storage type of each operand code (None: no data, e.g. SUBGRAPH)
DTYPES: dict[OperandCode, Optional[np.dtype]] = {
    C.FLOAT32: np.dtype(np.float32),
    C.INT32: np.dtype(np.int32),
    C.UINT32: np.dtype(np.uint32),
    C.TENSOR_FLOAT32: np.dtype(np.float32),
    C.TENSOR_INT32: np.dtype(np.int32),
    C.TENSOR_QUANT8_ASYMM: np.dtype(np.uint8),
    C.BOOL: np.dtype(np.bool_),
    C.TENSOR_QUANT16_SYMM: np.dtype(np.int16),
    C.TENSOR_FLOAT16: np.dtype(np.float16),
    C.TENSOR_BOOL8: np.dtype(np.bool_),
    C.FLOAT16: np.dtype(np.float16),
    C.TENSOR_QUANT8_SYMM_PER_CHANNEL: np.dtype(np.int8),
    C.TENSOR_QUANT16_ASYMM: np.dtype(np.uint16),
    C.TENSOR_QUANT8_SYMM: np.dtype(np.int8),
    C.TENSOR_QUANT8_ASYMM_SIGNED: np.dtype(np.int8),
    C.SUBGRAPH: None,
    C.OEM_SCALAR: np.dtype(np.uint8),
    C.TENSOR_OEM_BYTE: np.dtype(np.uint8),
}

SCALAR_CODES = frozenset({C.FLOAT32, C.INT32, C.UINT32, C.BOOL, C.FLOAT16, C.SUBGRAPH, C.OEM_SCALAR})

# quantized types: the range of their stored integers (the one table; the executor clamps to it, the
# converters' random inputs fill it)
QUANT_RANGE: dict[OperandCode, tuple[int, int]] = {
    C.TENSOR_QUANT8_ASYMM: (0, 255),
    C.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    C.TENSOR_QUANT8_SYMM: (-128, 127),
    C.TENSOR_QUANT8_SYMM_PER_CHANNEL: (-128, 127),
    C.TENSOR_QUANT16_ASYMM: (0, 65535),
    C.TENSOR_QUANT16_SYMM: (-32768, 32767),
}
# quantized types with a (scale, zero point): zero point range (None = zero point must be 0)
QUANT_ZERO_POINT_RANGE: dict[OperandCode, Optional[tuple[int, int]]] = {
    **{c: QUANT_RANGE[c] for c in (C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED, C.TENSOR_QUANT16_ASYMM)},
    C.TENSOR_QUANT8_SYMM: None,
    C.TENSOR_QUANT16_SYMM: None,
}

FLOAT_TENSOR_CODES = frozenset({C.TENSOR_FLOAT32, C.TENSOR_FLOAT16})
QUANT8_ASYMM_CODES = frozenset({C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED})


def is_tensor(code: OperandCode) -> bool:
    return code not in SCALAR_CODES


def is_scalar(code: OperandCode) -> bool:
    return code in SCALAR_CODES


def is_quantized(code: OperandCode) -> bool:
    return code in QUANT_ZERO_POINT_RANGE


@dataclass(frozen=True)
class OperandType:
    """Mirrors ANeuralNetworksOperandType. A 0 in `dimensions` is an unknown
    extent; a tensor with no dimensions (`()` or None) has unknown rank."""

    code: OperandCode
    dimensions: tuple[int, ...] = ()
    scale: float = 0.0
    zero_point: int = 0

    def __post_init__(self):
        object.__setattr__(self, "code", _as_code(self.code))
        object.__setattr__(self, "dimensions", tuple(int(d) for d in (self.dimensions or ())))
        object.__setattr__(self, "scale", float(self.scale))
        object.__setattr__(self, "zero_point", int(self.zero_point))

    @property
    def dtype(self) -> Optional[np.dtype]:
        return DTYPES[self.code]

    @property
    def rank(self) -> Optional[int]:
        """None for a tensor of unknown rank; 0 for scalars."""
        if self.is_tensor and not self.dimensions:
            return None
        return len(self.dimensions)

    @property
    def is_tensor(self) -> bool:
        return is_tensor(self.code)

    @property
    def is_fully_specified(self) -> bool:
        if not self.is_tensor:
            return True
        return len(self.dimensions) > 0 and all(d > 0 for d in self.dimensions)

    def element_count(self) -> Optional[int]:
        if not self.is_tensor:
            return 1
        if not self.is_fully_specified:
            return None
        return math.prod(self.dimensions)

    def byte_size(self) -> Optional[int]:
        n = self.element_count()
        dt = self.dtype
        if n is None or dt is None:
            return None if dt is not None else 0
        return n * dt.itemsize

    def with_dimensions(self, dims) -> "OperandType":
        return OperandType(self.code, tuple(dims or ()), self.scale, self.zero_point)

    def describe(self) -> str:
        dims = "x".join(str(d) if d else "?" for d in self.dimensions) if self.dimensions else "?"
        s = self.code.name + (f"[{dims}]" if self.is_tensor else "")
        if is_quantized(self.code):
            s += f" scale={self.scale:g} zp={self.zero_point}"
        return s


def _as_code(code) -> OperandCode:
    try:
        return OperandCode(int(code))
    except (ValueError, TypeError):
        from .errors import bad_data
        raise bad_data(f"unknown operand type code {code!r}") from None


@dataclass(frozen=True)
class ChannelQuant:
    """Per-channel quantization (ANeuralNetworksSymmPerChannelQuantParams)."""

    scales: tuple[float, ...]
    channel_dim: int

    def scales_array(self) -> np.ndarray:
        return np.asarray(self.scales, dtype=np.float32)


@dataclass
class Operand:
    """An operand of a model, as read by tools: type, lifetime, name, value."""

    type: OperandType
    lifetime: Lifetime = Lifetime.TEMPORARY_VARIABLE
    name: Optional[str] = None
    channel_quant: Optional[ChannelQuant] = None
    _value: Optional[np.ndarray] = field(default=None, repr=False)
    # for SUBGRAPH operands: the referenced Model
    subgraph: Optional[object] = field(default=None, repr=False)
    # for CONSTANT_REFERENCE values: (memory, offset, length)
    memory_ref: Optional[tuple] = field(default=None, repr=False)

    @property
    def value(self) -> Optional[np.ndarray]:
        """A read-only numpy array for constants, else None."""
        if self.memory_ref is not None:
            memory, offset, length = self.memory_ref
            return decode_value(self.type, memory.view(offset, length))
        return self._value

    @property
    def is_constant(self) -> bool:
        return self.lifetime in (Lifetime.CONSTANT_COPY, Lifetime.CONSTANT_REFERENCE)

    @property
    def is_omitted(self) -> bool:
        return self.lifetime is Lifetime.NO_VALUE


def decode_value(otype: OperandType, raw) -> np.ndarray:
    """View raw bytes as a read-only array shaped like the operand."""
    arr = np.frombuffer(raw, dtype=otype.dtype)
    if otype.is_tensor and otype.is_fully_specified:
        arr = arr.reshape(otype.dimensions)
    elif not otype.is_tensor:
        arr = arr.reshape(())
    arr.flags.writeable = False
    return arr
