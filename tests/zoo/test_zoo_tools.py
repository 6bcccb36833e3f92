"""The zoo's own machinery: manifest checks, light-model materialisation, baseline comparison."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.zoo import manifest, table
from tests.zoo.light import materialise


def _write(tmp_path, text: str):
    (tmp_path / "a.toml").write_text(text)
    return tmp_path


GOOD = """
[[model]]
id = "x/y"
category = "c"
file = "models/x.tflite"
script = "make/x.py"
licence = "MIT"
expect = "full"
"""


def test_manifest_reads_a_good_entry(tmp_path):
    (m,) = manifest.load(_write(tmp_path, GOOD))
    assert (m.id, m.format, m.source, m.steps) == ("x/y", "tflite", "make/x.py", 1)


@pytest.mark.parametrize("change, message", [
    ('expect = "full"', "must be one of"),            # replaced by a bad status below
    ('licence = "MIT"', "`licence` must be"),
    ('script = "make/x.py"', "needs the `script`"),
])
def test_manifest_names_the_bad_entry(tmp_path, change, message):
    bad = GOOD.replace(change, 'expect = "maybe"' if "expect" in change else "")
    with pytest.raises(manifest.ManifestError, match=message) as e:
        manifest.load(_write(tmp_path, bad))
    assert "a.toml: model 0 (x/y)" in str(e.value)


def test_manifest_rejects_unknown_keys_duplicate_ids_and_unexplained_partials(tmp_path):
    with pytest.raises(manifest.ManifestError, match="unknown key"):
        manifest.load(_write(tmp_path, GOOD + 'colour = "red"\n'))
    with pytest.raises(manifest.ManifestError, match="already used"):
        manifest.load(_write(tmp_path, GOOD + GOOD))
    with pytest.raises(manifest.ManifestError, match="expect_reasons"):
        manifest.load(_write(tmp_path, GOOD.replace('"full"', '"partial"')))
    with pytest.raises(manifest.ManifestError, match="needs `why`"):
        manifest.load(_write(tmp_path, GOOD.replace('"full"', '"none"')))


def test_the_real_manifest_loads_and_every_committed_file_exists():
    models = manifest.load()
    for m in models:
        if m.file:
            assert (manifest.ZOO_DIR / m.file).exists(), m.id
            assert (manifest.ZOO_DIR / m.script).exists(), m.id


def _light_model() -> bytes:
    shape = numpy_helper.from_array(np.array([4, 3, 3, 3], np.int64), "w_shape")
    vshape = numpy_helper.from_array(np.array([4], np.int64), "v_shape")
    nodes = [helper.make_node("ConstantOfShape", ["w_shape"], ["w"],
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0])),
             helper.make_node("ConstantOfShape", ["v_shape"], ["var"],
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0])),
             helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "var"], ["y"])]
    consts = [numpy_helper.from_array(np.ones(4, np.float32), n) for n in ("s", "b", "m")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 5, 5])],
                              initializer=[shape, vshape, *consts])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def test_light_fills_become_seeded_initializers_by_role():
    once, again = materialise(_light_model(), "m"), materialise(_light_model(), "m")
    assert once == again                                   # seeded: the same every time
    model = onnx.load_from_string(once)
    onnx.checker.check_model(model)
    assert [n.op_type for n in model.graph.node] == ["Conv", "BatchNormalization"]
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert "w_shape" not in inits and "v_shape" not in inits   # the now unused shape tensors are gone
    assert inits["w"].shape == (4, 3, 3, 3)
    assert 0.1 < inits["w"].std() < 0.8                    # He: sqrt(2 / 27) = 0.27
    assert inits["var"].min() >= 0.5                       # a variance is positive
    assert materialise(_light_model(), "other") != once     # the seed follows the model id


def test_compare_finds_regressions_and_improvements():
    base = {"status": "partial", "nodes": 10, "supported_nodes": 8, "macs_fraction": 0.9, "parity": "pass",
            "internal_error": False}
    same = dict(base)
    assert table.compare(same, base) == ([], [])
    worse, _ = table.compare(dict(base, supported_nodes=7, parity="fail", macs_fraction=0.5), base)
    assert len(worse) == 3
    _, better = table.compare(dict(base, status="full", supported_nodes=10, macs_fraction=1.0), base)
    assert len(better) == 3
    worse, _ = table.compare(dict(base, status="error", internal_error=True, error="boom",
                                  nodes=None, supported_nodes=None, macs_fraction=None, parity="n/a"), base)
    assert any("internal error" in w for w in worse) and any("status partial -> error" in w for w in worse)
