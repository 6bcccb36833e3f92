"""A model with MediaPipe's face-mesh custom operators, which no LiteRT kernel set runs: parity chains LiteRT's
segments with its numpy references of the custom operators and compares the model's outputs end to end."""
import flatbuffers.flexbuffers as flexbuffers
import numpy as np

import nnapi
from converters import tflite
from converters.parity import check
from converters.parity_render import render_text
from converters.tflite.authoring import GraphBuilder

from tests.converters.test_parity_tolerance import _with_constant


def face_ops_model(path):
    """landmarks * 4 -> Landmarks2TransformMatrix -> matrix; (image + 0.5, matrix) -> TransformTensorBilinear
    -> * 2 -> y; (constant points, matrix) -> TransformLandmarks -> + 0 -> z."""
    g = GraphBuilder()
    lm = g.input("landmarks", [1, 6, 3])
    img = g.input("image", [1, 8, 8, 2])
    scaled = g.tensor("scaled", [1, 6, 3])
    g.op("MUL", [lm, g.const("four", np.full((1, 1, 3), 4.0, np.float32))], [scaled], "MulOptions")
    m = g.tensor("matrix", [1, 4, 4])
    g.custom("Landmarks2TransformMatrix", [scaled], [m], flexbuffers.Dumps({
        "left_rotation_idx": 0, "right_rotation_idx": 1, "subset_idxs": [0, 1, 2, 3, 4, 5], "output_width": 4,
        "output_height": 4, "scale_x": 1.5, "scale_y": 1.5, "target_rotation_radians": 0.0}), 2)
    shifted = g.tensor("shifted", [1, 8, 8, 2])
    g.op("ADD", [img, g.const("half", np.full((1, 1, 1, 2), 0.5, np.float32))], [shifted], "AddOptions")
    crop = g.tensor("crop", [1, 4, 4, 2])
    g.custom("TransformTensorBilinear", [shifted, m], [crop], flexbuffers.Dumps({"output_height": 4,
                                                                                 "output_width": 4}), 2)
    y = g.tensor("y", [1, 4, 4, 2])
    g.op("MUL", [crop, g.const("two", np.full((1, 1, 1, 2), 2.0, np.float32))], [y], "MulOptions")
    xy = g.tensor("xy", [1, 6, 2])
    g.op("RESHAPE", [g.const("points", np.arange(12, dtype=np.float32).reshape(1, 6, 2) / 4),
                     g.const("shape", np.array([1, 6, 2], np.int32))], [xy], "ReshapeOptions", new_shape=[1, 6, 2])
    moved = g.tensor("moved", [1, 6, 2])
    g.custom("TransformLandmarks", [xy, m], [moved], b"", 2)
    z = g.tensor("z", [1, 6, 2])
    g.op("ADD", [moved, g.const("zero", np.zeros((1, 1, 2), np.float32))], [z], "AddOptions")
    g.output(y)
    g.output(z)
    path.write_bytes(g.finish())


def test_the_outputs_of_a_model_no_kernel_set_runs_are_compared_end_to_end(tmp_path):
    path = tmp_path / "face.tflite"
    face_ops_model(path)
    report = check(str(path), samples=2)
    r = report.as_dict()
    assert "Landmarks2TransformMatrix" in r["whole_model_run"] and r.get("reference_fallback") is None
    text = render_text(report)
    assert "outputs: 2 of 2 compared (chained: LiteRT (litert) runs the segments" in text
    assert "custom node 3 TransformTensorBilinear -> 'crop': " in text
    assert r["passed"] and [o["name"] for o in r["outputs"]] == ["y", "z"] and r["unchecked_outputs"] == []
    assert r["checked_by"].startswith("chained: LiteRT (litert) runs the segments")
    nodes = {c["op"]: c for c in r["custom_nodes"]}
    assert set(nodes) == {"Landmarks2TransformMatrix", "TransformTensorBilinear", "TransformLandmarks"}
    assert nodes["TransformTensorBilinear"]["passed"] and nodes["TransformTensorBilinear"]["max_abs_error"] < 1e-5


def test_an_error_inside_a_custom_operators_composition_fails_at_the_outputs(tmp_path):
    """The segments are fed the executor's values, so a wrong composition passes them all: only the chained
    reference (and the node's own check) sees it. Here the sampling grid of TransformTensorBilinear's
    composition moves by half a pixel."""
    path = tmp_path / "face.tflite"
    face_ops_model(path)
    model = tflite.convert(str(path)).model
    (grid,) = [i for i, o in enumerate(model.operands) if o.name == "crop/grid_x"]
    saved = tmp_path / "face.nnapi"
    nnapi.save(model, saved)
    loaded = nnapi.load(saved)
    nnapi.save(_with_constant(loaded, grid, np.asarray(loaded.operands[grid].value) + 0.5), saved)
    r = check(str(path), converted=str(saved)).as_dict()
    assert all(p["passed"] for p in r["partitions"])           # every segment still agrees
    (y,) = [o for o in r["outputs"] if o["name"] == "y"]
    assert not y["passed"] and not r["passed"]
    assert any(f.startswith("output 'y'") for f in r["verdict"]["failures"])
