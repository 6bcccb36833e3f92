"""The NNAPI delegate on a phone whose NNAPI devices are one driver profile (plus nnapi-reference).

From API 29, StatefulNnApiDelegate::DoPrepare picks its target devices (GetTargetDevices: the
accelerator named by `accelerator_name`, else, with disallow_nnapi_cpu, every device but
nnapi-reference), validates at the lower of the runtime's and the devices' feature level
(GetTargetFeatureLevel), and, when an accelerator is specified, keeps only nodes whose NNAPI
operations the devices support (GetNodesSupportedByAccelerator, which asks
ANeuralNetworksModel_getSupportedOperationsForDevices). The operand type a device is asked
about is the NNAPI type the delegate gives the node's data tensor (int8 becomes
TENSOR_QUANT8_ASYMM below API 30: NeedInt8Conversion)."""
from __future__ import annotations

from typing import Optional

from nnapi.codes import OperandCode, OperationCode
from nnapi.device_profile import Device

from .delegate_common import NNAPI12, NNAPI13, SDK_FOR_LEVEL, NodeView

REFERENCE = "nnapi-reference"
_NN_TYPES = {"Float32": "TENSOR_FLOAT32", "Float16": "TENSOR_FLOAT16", "Int32": "TENSOR_INT32",
             "UInt8": "TENSOR_QUANT8_ASYMM", "Bool": "TENSOR_BOOL8", "Int16": "TENSOR_QUANT16_SYMM"}
# builtins whose data tensor is not input 0 (SPLIT: axis, value; TRANSPOSE_CONV: shape, filter, input)
_DATA_INPUT = {"SPLIT": 1, "TRANSPOSE_CONV": 2, "FILL": 1}


def nn_type(tflite_type: Optional[str], sdk: int) -> Optional[OperandCode]:
    if tflite_type == "Int8":
        return OperandCode.TENSOR_QUANT8_ASYMM_SIGNED if sdk >= NNAPI13 else OperandCode.TENSOR_QUANT8_ASYMM
    name = _NN_TYPES.get(tflite_type or "")
    return OperandCode[name] if name else None


def target_devices(device: Device, options) -> Optional[list]:
    """GetTargetDevices on a phone with `device` and nnapi-reference; None when a named accelerator is
    absent (DoPrepare then fails: nothing is delegated)."""
    phone = [device] if device.name == REFERENCE else [device, Device.reference()]
    if options.accelerator_name:
        named = [d for d in phone if d.name == options.accelerator_name]
        return named or None
    if options.disallow_nnapi_cpu:
        return [d for d in phone if d.name != REFERENCE]
    return []  # no selection: DoPrepare only checks that some accelerator exists


def target_sdk(runtime_sdk: int, devices: list) -> int:
    """GetTargetFeatureLevel: the devices' highest level when it is below the runtime's."""
    levels = [SDK_FOR_LEVEL[d.feature_level] for d in devices if d.name != REFERENCE]
    best = max(levels, default=-1)
    return best if 0 < best < runtime_sdk else runtime_sdk


def node_gaps(v: NodeView, ops: list, devices: list) -> list:
    """[{"operation", "type", "reason"}] for each emitted operation none of `devices` runs."""
    data = nn_type(v.in_type(_DATA_INPUT.get(v.node.op, 0)), v.sdk)
    out = nn_type(v.out_type(0), v.sdk) if v.node.outputs else None
    gaps = []
    for name in ops:
        reasons = [d.lacks(OperationCode[name], data, out if name == ops[-1] else None) for d in devices]
        if reasons and all(reasons):
            gaps.append({"operation": name, "type": data.name if data else None, "reason": "; ".join(reasons)})
    return gaps


def applies(device: Optional[Device], runtime_sdk: int) -> bool:
    """Devices are chosen from API 29 only (ANeuralNetworks_getDeviceCount and after)."""
    return device is not None and runtime_sdk >= NNAPI12
