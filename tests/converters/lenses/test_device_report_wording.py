"""--device reports at the device's feature level, names each missing operation once, and cannot be combined with
--device-profile."""
import json

import numpy as np
import pytest
import onnx
from onnx import TensorProto, helper

from converters.cli import main


def layer_norm(path):
    """LayerNormalization: MEAN SUB MUL MEAN ADD RSQRT MUL MUL ADD, three MULs."""
    s = helper.make_tensor("s", TensorProto.FLOAT, [8], np.ones(8, np.float32).tolist())
    b = helper.make_tensor("b", TensorProto.FLOAT, [8], np.zeros(8, np.float32).tolist())
    g = helper.make_graph([helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])], [s, b])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def no_mul_profile(path, level=4):
    ops = {op: {"types": "all"} for op in ("MEAN", "SUB", "ADD", "RSQRT")}
    path.write_text(json.dumps({"schema": "nnapi-device-profile/1", "name": "nomul", "type": "CPU",
                                "feature_level": level, "version": "1", "source": {}, "operations": ops}))


def test_device_level_and_each_reason_once(tmp_path, capsys):
    model, prof = tmp_path / "ln.onnx", tmp_path / "nomul.json"
    layer_norm(model)
    no_mul_profile(prof)
    assert main(["coverage", str(model), "--device-profile", str(prof), "--format", "json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["feature_level"] == 4 and r["requested_feature_level"] == 8 and r["device"]["feature_level"] == 4
    n = r["nodes"][0]
    assert n["reason_code"] == "device_unsupported" and len(n["device_unsupported"]) == 3
    assert n["reason"].count("does not support MUL") == 1 and n["reason"].endswith("(3 operations)"), n["reason"]
    assert main(["coverage", str(model), "--device-profile", str(prof)]) == 0
    head = " ".join(capsys.readouterr().out.split("\n\n")[0].split())   # the summary, wrapped to 120 columns
    assert "at feature level 4" in head and "feature level 8" not in head.split("):")[-1], head


def test_device_and_device_profile_together_are_refused(tmp_path, capsys):
    model, prof = tmp_path / "ln.onnx", tmp_path / "nomul.json"
    layer_norm(model)
    no_mul_profile(prof)
    with pytest.raises(SystemExit) as e:   # a usage error: exit 3 (invalid input)
        main(["coverage", str(model), "--device", "armnn", "--device-profile", str(prof)])
    assert e.value.code == 3
    assert "not allowed with" in capsys.readouterr().err


def test_delegate_lens_on_a_device_names_the_level_it_validates_at(tmp_path, capsys):
    from tests.converters.lenses.test_device_profiles import chain
    m = tmp_path / "m.tflite"
    m.write_bytes(chain(["ADD", "BATCH_MATMUL"]))
    # GetTargetFeatureLevel: the lower of the runtime's (8) and armnn's (4) -> validated at API 30
    assert main(["coverage", str(m), "--as", "tflite-delegate", "--device", "armnn"]) == 0
    head = " ".join(capsys.readouterr().out.split("\n\n")[0].split())
    assert "on device armnn (feature level 4; the delegate validates at feature level 4, target sdk 30)" in head, head
