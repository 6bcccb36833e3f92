"""NNAPI devices described by driver capability profiles (ANeuralNetworksDevice_*).

A profile says, per NNAPI operation, which operand types a driver runs; the shipped
ones live in nnapi/device_profiles/*.json. Schema "nnapi-device-profile/1":

    {"schema": "nnapi-device-profile/1", "name": str, "type": "CPU"|"GPU"|"ACCELERATOR"|"OTHER"|"UNKNOWN",
     "feature_level": 1..8, "version": str, "source": {...free-form provenance...},
     "operations": "all" | {OPERATION: {"types": [OPERAND_CODE...] | "all",
                                         "output_types"?: [OPERAND_CODE...], "feature_level"?: 1..8}}}

OPERATION names are OperationCode names (ADD, CONV_2D, ...) and OPERAND_CODE names OperandCode
names (TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM, ...). An operation runs on the device when it is listed,
the type of its data operand is in "types" (the first tensor input; for FILL, whose inputs are a
shape and a scalar, output 0), output 0's type is in "output_types" when given, and the operation
needs no feature level above the entry's "feature_level" (default: the device's). "operations": "all"
is a device that runs every operation valid at its feature level (the NNAPI reference CPU)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Union

from .codes import DeviceType, OperandCode, OperationCode
from .errors import bad_data, bad_state

SCHEMA = "nnapi-device-profile/1"
PROFILE_DIR = Path(__file__).with_name("device_profiles")
_OUTPUT_TYPED = {OperationCode.FILL}


class Device:
    """One NNAPI device: ANeuralNetworksDevice_getName / getType / getFeatureLevel / getVersion."""

    def __init__(self, profile: dict, path: Optional[str] = None):
        self.profile = check_profile(profile, path or profile.get("name", "<profile>"))
        self.name: str = profile["name"]
        self.type = DeviceType[profile["type"]]
        self.feature_level: int = int(profile["feature_level"])
        self.version: str = str(profile.get("version", ""))
        self.source = profile.get("source", {})
        self.path = path

    @classmethod
    def reference(cls) -> "Device":
        """The nnapi-reference CPU device every phone has."""
        return load_profile(PROFILE_DIR / "nnapi-reference.json")

    def __repr__(self):
        return f"Device({self.name!r}, {self.type.name}, feature level {self.feature_level})"

    def get_name(self) -> str:
        return self.name

    def get_type(self) -> DeviceType:
        return self.type

    def get_feature_level(self) -> int:
        return self.feature_level

    def get_version(self) -> str:
        return self.version

    def unsupported_reason(self, model, index: int) -> Optional[str]:
        """None when operation `index` of `model` runs on this device, else a sentence naming the
        operation and the operand type (or feature level) the device lacks."""
        from .ops import SPECS
        op = model.operations[index]
        spec = SPECS.get(op.code)
        need = spec.min_level(model, index) if spec is not None else op.code.feature_level
        out = model.operands[op.outputs[0]].type.code if op.outputs else None
        return self.lacks(op.code, data_type(model, index), out, need)

    def lacks(self, code: OperationCode, dtype: Optional[OperandCode], out: Optional[OperandCode] = None,
              need: int = 1) -> Optional[str]:
        """As unsupported_reason, for an operation described by its code, data operand type, output 0's
        type and the feature level it needs."""
        ops = self.profile["operations"]
        if ops == "all":
            if need > self.feature_level:
                return (f"{self.name} (feature level {self.feature_level}) lacks {code.name} as used here, "
                        f"which needs feature level {need}")
            return None
        entry = ops.get(code.name)
        if entry is None:
            return f"{self.name} does not support {code.name} (here with {dtype.name if dtype else 'no tensor'} data)"
        types = entry["types"]
        if types != "all" and (dtype is None or dtype.name not in types):
            return f"{self.name} does not support {code.name} with {dtype.name if dtype else 'no tensor'} data"
        out_types = entry.get("output_types")
        if out_types is not None and out is not None and out.name not in out_types:
            return f"{self.name} does not support {code.name} producing {out.name}"
        level = int(entry.get("feature_level", self.feature_level))
        if need > level:
            return (f"{self.name} supports {code.name} up to feature level {level}; this one needs "
                    f"feature level {need}")
        return None

    def supports(self, model, index: int) -> bool:
        return self.unsupported_reason(model, index) is None


def data_type(model, index: int) -> Optional[OperandCode]:
    """The operand type a profile's "types" are matched against (see the module docstring)."""
    op = model.operations[index]
    if op.code in _OUTPUT_TYPED and op.outputs:
        return model.operands[op.outputs[0]].type.code
    for i in op.inputs:
        if i >= 0 and model.operands[i].type.is_tensor:
            return model.operands[i].type.code
    return None


def check_profile(profile, where: str) -> dict:
    """The profile, or BAD_DATA naming the first thing wrong with it."""
    if not isinstance(profile, dict) or profile.get("schema") != SCHEMA:
        raise bad_data(f"{where}: not an {SCHEMA} device profile (missing or wrong \"schema\")")
    for key in ("name", "type", "feature_level", "operations"):
        if key not in profile:
            raise bad_data(f"{where}: device profile has no {key!r}")
    if profile["type"] not in DeviceType.__members__:
        raise bad_data(f"{where}: type {profile['type']!r} is not one of {', '.join(DeviceType.__members__)}")
    if not isinstance(profile["feature_level"], int) or not 1 <= profile["feature_level"] <= 8:
        raise bad_data(f"{where}: feature_level must be an integer 1..8, got {profile['feature_level']!r}")
    ops = profile["operations"]
    if ops == "all":
        return profile
    if not isinstance(ops, dict):
        raise bad_data(f"{where}: \"operations\" must be \"all\" or an object keyed by operation name")
    for name, entry in ops.items():
        if name not in OperationCode.__members__:
            raise bad_data(f"{where}: unknown operation {name!r}")
        if not isinstance(entry, dict) or "types" not in entry:
            raise bad_data(f"{where}: operation {name} needs {{\"types\": [...]}}")
        for key in ("types", "output_types"):
            types = entry.get(key)
            if types is None or types == "all":
                continue
            if not isinstance(types, list) or any(not (isinstance(t, str) and t.startswith("TENSOR_")
                                                       and t in OperandCode.__members__) for t in types):
                raise bad_data(f"{where}: operation {name} {key} must list tensor OperandCode names "
                               f"(TENSOR_FLOAT32, ...), got {types!r}")
        fl = entry.get("feature_level")
        if fl is not None and (not isinstance(fl, int) or not 1 <= fl <= 8):
            raise bad_data(f"{where}: operation {name} feature_level must be 1..8, got {fl!r}")
    return profile


def load_profile(path: Union[str, Path]) -> Device:
    """A device from a profile file (BAD_DATA when unreadable or malformed)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise bad_data(f"{path}: cannot read device profile ({e.strerror})") from None
    try:
        profile = json.loads(text)
    except json.JSONDecodeError as e:
        raise bad_data(f"{path}: device profile is not JSON ({e.msg} at line {e.lineno})") from None
    return Device(profile, str(path))


def devices() -> list:
    """The shipped profiles as devices, by name (ANeuralNetworks_getDeviceCount / getDevice)."""
    return [load_profile(p) for p in sorted(PROFILE_DIR.glob("*.json"))]


def device(name: str) -> Device:
    """The shipped device named `name` (BAD_DATA listing the known ones otherwise)."""
    known = devices()
    for d in known:
        if d.name == name:
            return d
    raise bad_data(f"no device profile named {name!r} (known: {', '.join(d.name for d in known)})")


def supported_operations(model, device_list) -> list:
    """ANeuralNetworksModel_getSupportedOperationsForDevices: one bool per operation of the main model,
    True when any of the devices runs it."""
    if not getattr(model, "finished", False):
        raise bad_state("get_supported_operations_for_devices: the model must be finished first")
    device_list = list(device_list or [])
    if not device_list or not all(isinstance(d, Device) for d in device_list):
        raise bad_data("get_supported_operations_for_devices: needs a non-empty list of nnapi devices")
    return [any(d.supports(model, k) for d in device_list) for k in range(len(model.operations))]
