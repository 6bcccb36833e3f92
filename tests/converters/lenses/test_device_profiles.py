"""`nnapi coverage --device NAME | --device-profile FILE`: the converter's coverage intersected
with a driver capability profile; the armnn profile built from Arm NN's NnapiSupport.txt."""
import json

import numpy as np
import pytest

from converters.cli import main
from converters.coverage import read_source
from converters.lenses.devices import device_report
from converters.tflite.authoring import GraphBuilder
from nnapi.armnn_profile import parse_nnapi_support
from nnapi.device_profile import PROFILE_DIR, device

from tests.converters.lenses.test_delegate_lens import _zoo

SNIPPET = """This release of ArmNN for Android supports use as a driver for the Android Neural Networks API. It implements the
android.hardware.neuralnetworks@1.0, android.hardware.neuralnetworks@1.1, android.hardware.neuralnetworks@1.2 and
android.hardware.neuralnetworks@1.3
HAL interfaces.

AndroidNN operator           Tensor type supported
ABS                          (FLOAT32, FLOAT16, INT32)
DEQUANTIZE                   (FLOAT32 (output only), QUANT8_ASYMM and QUANT8_ASYMM_SIGNED (input only))
EQUAL                        (BOOL8, FLOAT32)
TILE                         (All data types)
"""


def test_parse_nnapi_support():
    ops, level = parse_nnapi_support(SNIPPET)
    assert level == 4
    assert ops == {
        "ABS": {"types": ["TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_INT32"]},
        "DEQUANTIZE": {"output_types": ["TENSOR_FLOAT32"],
                       "types": ["TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"]},
        "EQUAL": {"types": ["TENSOR_BOOL8", "TENSOR_FLOAT32"]},
        "TILE": {"types": "all"},
    }
    with pytest.raises(ValueError):
        parse_nnapi_support("no table here")


def test_shipped_armnn_profile_records_its_source():
    p = json.loads((PROFILE_DIR / "armnn.json").read_text())
    src = p["source"]
    assert src["repository"] == "ARM-software/android-nn-driver" and src["path"] == "NnapiSupport.txt"
    assert len(src["revision"]) == 40 and len(src["sha256"]) == 64
    ops = p["operations"]
    # NnapiSupport.txt at that revision: 79 operations, no BATCH_MATMUL (an NNAPI feature level 6 operation)
    assert len(ops) == 79 and "BATCH_MATMUL" not in ops
    assert ops["CONV_2D"] == {"types": ["TENSOR_FLOAT32", "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"]}


def chain(ops, dt="FLOAT32"):
    g = GraphBuilder()
    x = g.input("x", [1, 2, 2])
    w = g.const("w", np.eye(2, dtype=np.float32)[None])
    for k, op in enumerate(ops):
        y = g.tensor(f"t{k}", [1, 2, 2])
        if op == "ADD":
            g.op("ADD", [x, w], [y], "AddOptions")
        else:
            g.op("BATCH_MATMUL", [x, w], [y], "BatchMatMulOptions")
        x = y
    g.output(x)
    return g.finish()


def cover(data, tmp_path, name):
    p = tmp_path / "m.tflite"
    p.write_bytes(data)
    return device_report(read_source(p), device(name), 8)


def test_device_unsupported_names_operation_and_type(tmp_path):
    # armnn is a feature-level-4 device: the report is at level 4, where BATCH_MATMUL (level 6) converts as
    # FULLY_CONNECTED + RESHAPE, which armnn runs
    r = cover(chain(["ADD", "BATCH_MATMUL", "ADD"]), tmp_path, "armnn")
    assert r["feature_level"] == 4 and r["requested_feature_level"] == 8
    assert r["nodes"][1]["supported"] and "BATCH_MATMUL" not in r["nodes"][1]["nnapi_ops"]
    assert r["summary"]["supported_nodes"] == 3 and r["summary"]["partitions"] == 1
    # at level 8 (armnn's operation list on a level-8 device), BATCH_MATMUL itself is emitted and refused
    import copy
    level8 = copy.copy(device("armnn"))
    level8.feature_level = 8
    r = device_report(read_source(tmp_path / "m.tflite"), level8, 8)
    n = r["nodes"][1]
    assert not n["supported"] and n["reason_code"] == "device_unsupported"
    assert n["device_unsupported"] == [{"operation": "BATCH_MATMUL", "type": "TENSOR_FLOAT32",
                                        "reason": "armnn does not support BATCH_MATMUL (here with TENSOR_FLOAT32 data)"}]
    assert r["summary"]["partitions"] == 2 and [p["nodes"] for p in r["partitions"]] == [[0], [2]]
    assert r["device"]["name"] == "armnn" and r["per_feature_level"]["8"]["supported_nodes"] == 2
    ref = cover(chain(["ADD", "BATCH_MATMUL", "ADD"]), tmp_path, "nnapi-reference")
    assert ref["summary"]["supported_nodes"] == 3 and ref["summary"]["partitions"] == 1


def test_cli_device_and_own_profile(tmp_path, capsys):
    m = tmp_path / "m.tflite"
    m.write_bytes(chain(["ADD", "BATCH_MATMUL"]))
    assert main(["coverage", str(m), "--device", "armnn", "--format", "json"]) == 0
    r = json.loads(capsys.readouterr().out)   # at armnn's level 4: BATCH_MATMUL as FULLY_CONNECTED + RESHAPE
    assert [n["reason_code"] for n in r["nodes"]] == [None, None] and r["feature_level"] == 4
    prof = tmp_path / "p.json"
    prof.write_text(json.dumps({"schema": "nnapi-device-profile/1", "name": "mm-only", "type": "ACCELERATOR",
                                "feature_level": 8, "operations": {"BATCH_MATMUL": {"types": ["TENSOR_FLOAT32"]}}}))
    assert main(["coverage", str(m), "--device-profile", str(prof), "--format", "json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert [n["supported"] for n in r["nodes"]] == [False, True]
    assert r["nodes"][0]["device_unsupported"][0]["operation"] == "ADD"
    assert main(["coverage", str(m), "--device", "tpu9000"]) == 3
    assert "no device profile named 'tpu9000'" in capsys.readouterr().err
    prof.write_text("{")
    assert main(["coverage", str(m), "--device-profile", str(prof)]) == 3


def test_zoo_melspectrogram_on_armnn(tmp_path):
    p = tmp_path / "mel.tflite"
    p.write_bytes(_zoo("pyopen-wakeword", "melspectrogram.tflite"))
    r = device_report(read_source(p), device("armnn"), 8)
    refused = {n["op"] for n in r["nodes"] if n["reason_code"] == "device_unsupported"}
    # Arm NN lists LOG (FLOAT32, FLOAT16) since android-nn-driver 2d71002 (2021): the device runs every operation
    # of the level-4 conversion; BATCH_MATMUL on unpinned [?, 1, ?, 257] has no level-4 form (a conversion refusal)
    assert refused == set() and r["feature_level"] == 4
    assert [(n["op"], n["reason_code"]) for n in r["nodes"] if not n["supported"]] == [("BATCH_MATMUL", "dynamic_shape")]


def test_zoo_face_detection_fully_on_armnn(tmp_path):
    p = tmp_path / "fd.tflite"
    p.write_bytes(_zoo("mediapipe", "face_detection_short_range.tflite"))
    r = device_report(read_source(p), device("armnn"), 8)
    assert r["summary"]["supported_fraction"] == 1.0 and r["summary"]["partitions"] == 1


def neg_int32():
    g = GraphBuilder()
    x = g.input("x", [2, 3], "INT32")
    y = g.tensor("y", [2, 3], "INT32")
    g.op("NEG", [x], [y])
    g.output(y)
    return g.finish()


def delegate_on(data, name, level=8, **opts):
    from converters.lenses.tflite_delegate import DelegateOptions, build_delegate_report
    from converters.tflite import read
    return build_delegate_report(read(data), level, DelegateOptions(**opts), device=device(name))


def test_delegate_on_a_device_asks_it_per_operation():
    # GetNodesSupportedByAccelerator: NEG accepts int32 (case kTfLiteBuiltinNeg), Arm NN lists NEG for
    # FLOAT32 and FLOAT16 only
    r = delegate_on(neg_int32(), "armnn")
    n = r["nodes"][0]
    assert not n["supported"] and n["reason_code"] == "device_unsupported"
    assert n["device_unsupported"][0]["operation"] == "NEG" and n["device_unsupported"][0]["type"] == "TENSOR_INT32"
    # below API 29 the delegate cannot choose devices: the profile plays no part
    assert delegate_on(neg_int32(), "armnn", 2)["nodes"][0]["reason_code"] == "feature_level_too_low"


def test_delegate_validates_at_the_devices_feature_level():
    # GetTargetFeatureLevel: Arm NN is at feature level 4 (API 30), so BATCH_MATMUL (level 6) is refused
    r = delegate_on(chain(["ADD", "BATCH_MATMUL"]), "armnn")
    assert r["delegate"]["target_sdk"] == 30
    assert r["nodes"][1]["delegate_failures"] == [{"type": "kUnsupportedAndroidVersion",
                                                   "message": "Android sdk version less than 1000006"}]


def test_delegate_leaves_out_nnapi_reference_by_default():
    # ShouldUseTargetDevices + GetTargetDevices: disallow_nnapi_cpu drops nnapi-reference; nothing is left
    r = delegate_on(chain(["ADD", "ADD"]), "nnapi-reference")
    assert r["summary"]["supported_nodes"] == 0 and r["nodes"][0]["reason_code"] == "device_unsupported"
    r = delegate_on(chain(["ADD", "ADD"]), "nnapi-reference", accelerator_name="nnapi-reference")
    assert r["summary"]["supported_nodes"] == 2
    r = delegate_on(chain(["ADD", "ADD"]), "armnn", accelerator_name="hexagon")
    assert r["summary"]["supported_nodes"] == 0
