"""nnapi.devices(), Model.get_supported_operations_for_devices and Compilation.for_devices:
the NDK's device calls over the shipped driver profiles (nnapi/device_profiles/)."""
import numpy as np
import pytest

import nnapi
from nnapi import DeviceType, NnapiError, OperandCode as C, OperandType, OperationCode as Op, ResultCode


def add_then_batch_matmul(finish=True):
    """ADD (Arm NN lists it for TENSOR_FLOAT32) then BATCH_MATMUL (feature level 6; not in Arm NN's list)."""
    m = nnapi.Model()
    a = m.add_operand(OperandType(C.TENSOR_FLOAT32, [2, 2]))
    b = m.add_operand(OperandType(C.TENSOR_FLOAT32, [2, 2]))
    fuse = m.add_operand(OperandType(C.INT32))
    s = m.add_operand(OperandType(C.TENSOR_FLOAT32, [2, 2]))
    out = m.add_operand(OperandType(C.TENSOR_FLOAT32, [2, 2]))
    m.set_operand_value(fuse, np.int32(0))
    m.add_operation(Op.ADD, [a, b, fuse], [s])
    m.add_operation(Op.BATCH_MATMUL, [s, b], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    if finish:
        m.finish()
    return m


def by_name():
    return {d.name: d for d in nnapi.devices()}


def test_devices_are_the_shipped_profiles():
    d = by_name()
    assert set(d) >= {"nnapi-reference", "armnn"}
    ref, arm = d["nnapi-reference"], d["armnn"]
    assert (ref.get_type(), ref.get_feature_level()) == (DeviceType.CPU, 8)
    # Arm NN's driver implements HAL 1.0-1.3 (NnapiSupport.txt): feature level 4 (Android 11)
    assert (arm.get_type(), arm.get_feature_level()) == (DeviceType.GPU, 4)
    assert arm.source["repository"] == "ARM-software/android-nn-driver" and len(arm.source["revision"]) == 40


def test_supported_operations_per_device():
    m = add_then_batch_matmul()
    d = by_name()
    assert m.get_supported_operations_for_devices([d["armnn"]]) == [True, False]
    assert m.get_supported_operations_for_devices([d["nnapi-reference"]]) == [True, True]
    assert m.get_supported_operations_for_devices([d["armnn"], d["nnapi-reference"]]) == [True, True]


def test_supported_operations_result_codes():
    with pytest.raises(NnapiError) as e:
        add_then_batch_matmul(finish=False).get_supported_operations_for_devices(nnapi.devices())
    assert e.value.code is ResultCode.BAD_STATE
    with pytest.raises(NnapiError) as e:
        add_then_batch_matmul().get_supported_operations_for_devices([])
    assert e.value.code is ResultCode.BAD_DATA


def test_compilation_for_devices_refuses_an_unsupported_operation():
    m = add_then_batch_matmul()
    comp = nnapi.Compilation.for_devices(m, [by_name()["armnn"]])
    with pytest.raises(NnapiError) as e:
        comp.finish()
    assert e.value.code is ResultCode.BAD_DATA
    assert "operation 1 (BATCH_MATMUL)" in e.value.message and "armnn" in e.value.message
    comp = nnapi.Compilation.for_devices(m, [by_name()["nnapi-reference"]])
    comp.finish()
    ex = nnapi.Execution(comp)
    x = np.array([[1, 2], [3, 4]], np.float32)
    ex.set_input(0, x)
    ex.set_input(1, x)
    y = np.zeros((2, 2), np.float32)
    ex.set_output(0, y)
    ex.compute()
    np.testing.assert_array_equal(y, (x + x) @ x)
    with pytest.raises(NnapiError) as e:
        nnapi.Compilation.for_devices(m, [])
    assert e.value.code is ResultCode.BAD_DATA


def test_operand_types_and_feature_levels_of_a_profile(tmp_path):
    import json
    p = tmp_path / "mine.json"
    p.write_text(json.dumps({"schema": "nnapi-device-profile/1", "name": "mine", "type": "ACCELERATOR",
                             "feature_level": 3,
                             "operations": {"ADD": {"types": ["TENSOR_QUANT8_ASYMM"]},
                                            "BATCH_MATMUL": {"types": "all"}}}))
    dev = nnapi.load_device_profile(p)
    m = add_then_batch_matmul()
    assert dev.unsupported_reason(m, 0) == "mine does not support ADD with TENSOR_FLOAT32 data"
    # BATCH_MATMUL needs feature level 6, above the device's 3
    assert "needs feature level 6" in dev.unsupported_reason(m, 1)
    assert m.get_supported_operations_for_devices([dev]) == [False, False]


@pytest.mark.parametrize("profile,needle", [
    ({"name": "x"}, "schema"),
    ({"schema": "nnapi-device-profile/1", "name": "x", "type": "TPU", "feature_level": 3, "operations": "all"}, "type"),
    ({"schema": "nnapi-device-profile/1", "name": "x", "type": "CPU", "feature_level": 9, "operations": "all"},
     "feature_level"),
    ({"schema": "nnapi-device-profile/1", "name": "x", "type": "CPU", "feature_level": 3,
      "operations": {"ADDD": {"types": "all"}}}, "ADDD"),
    ({"schema": "nnapi-device-profile/1", "name": "x", "type": "CPU", "feature_level": 3,
      "operations": {"ADD": {"types": ["FLOAT32"]}}}, "tensor OperandCode"),
])
def test_malformed_profiles_are_bad_data(tmp_path, profile, needle):
    import json
    p = tmp_path / "p.json"
    p.write_text(json.dumps(profile))
    with pytest.raises(NnapiError) as e:
        nnapi.load_device_profile(p)
    assert e.value.code is ResultCode.BAD_DATA and needle in e.value.message
