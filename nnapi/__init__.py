"""Android's Neural Networks API (NDK NeuralNetworks.h and the HAL types) as a Python data model."""
from .codes import (DEFAULT_LOOP_TIMEOUT_S, MAX_FEATURE_LEVEL, MAXIMUM_LOOP_TIMEOUT_S,
                    MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES, DeviceType, FeatureLevel, FuseCode,
                    Lifetime, OperandCode, OperationCode, PaddingCode, PreferenceCode, Priority,
                    ResultCode)
from .errors import NnapiError
from .execution import Compilation, Event, Execution
from .memory import Memory
from .model import Model, Operation
from .operand import ChannelQuant, Operand, OperandType

__all__ = [
    "ChannelQuant", "Compilation", "DeviceType", "Event", "Execution", "FeatureLevel", "FuseCode",
    "Lifetime", "Memory", "Model", "NnapiError", "Operand", "OperandCode", "OperandType", "Operation",
    "OperationCode", "PaddingCode", "PreferenceCode", "Priority", "ResultCode", "load", "save",
    "DEFAULT_LOOP_TIMEOUT_S", "MAXIMUM_LOOP_TIMEOUT_S", "MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES",
    "MAX_FEATURE_LEVEL", "infer_shapes",
]


def infer_shapes(model, input_shapes=None) -> dict:
    """{operand index: dims} for every operation output of `model`: the declared dimensions merged with
    what the op specs infer from the inputs (0 = unknown extent, None = unknown rank); `input_shapes`
    ({model input position: dims}) pins inputs first. See nnapi/shapes.py."""
    from .shapes import infer_shapes as _infer
    return _infer(model, input_shapes)


def save(model, path) -> None:
    """Write `model` (with its referenced subgraphs) to `path` atomically; see nnapi/serialize.py."""
    from .serialize import save as _save
    _save(model, path)


def load(path) -> Model:
    """Read a model written by `save` (values mapped with mmap, never executed)."""
    from .serialize import load as _load
    return _load(path)
