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
    "MAX_FEATURE_LEVEL", "infer_shapes", "devices", "load_device_profile",
]


def devices() -> list:
    """The known devices (the shipped driver profiles, nnapi/device_profiles/*.json): each with
    .name, .type (DeviceType), .feature_level; see nnapi/device_profile.py for the profile schema."""
    from .device_profile import devices as _devices
    return _devices()


def load_device_profile(path):
    """A device from a user's own profile file (schema in nnapi/device_profile.py and the README)."""
    from .device_profile import load_profile
    return load_profile(path)


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
