"""nnapi bench names every input shape it times, refuses a model whose dimensions no pin fixes (with coverage's pin
advice), and says n/a for MACs it cannot know instead of 0."""
import json

import numpy as np
import onnx
from onnx import TensorProto, helper

from converters.cli import main


def symbolic_matmul(path):
    """x [batch, 8] @ W [8, 4]: 32 MACs per row; the batch is a dim_param."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 4], np.arange(32, dtype=np.float32).tolist())
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_bench_refuses_unpinned_dimensions_with_the_pin_advice(tmp_path, capsys, monkeypatch):
    src = tmp_path / "sym.onnx"
    symbolic_matmul(src)
    import converters.bench

    def no_shape_pass(*args):
        raise AssertionError("the refusal comes from the declarations, before the shape pass")
    monkeypatch.setattr(converters.bench, "_read", no_shape_pass)
    out = tmp_path / "b.json"
    assert main(["bench", str(src), "--runs", "1", "--warmup", "0", "--format", "json", "-o", str(out)]) == 3
    err = capsys.readouterr().err
    assert "x [?,8]" in err and "--input-shape x=?,8" in err and "--dim batch=N" in err, err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


def test_bench_names_the_shapes_it_timed(tmp_path, capsys):
    src = tmp_path / "sym.onnx"
    symbolic_matmul(src)
    out = tmp_path / "b.json"
    assert main(["bench", str(src), "--dim", "batch=3", "--runs", "2", "--warmup", "0", "--format", "json",
                 "-o", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["inputs"] == [{"name": "x", "dtype": "float32", "shape": [3, 8]}]
    assert r["macs"] == 3 * 8 * 4   # by hand: 3 rows of 4 outputs, 8 products each
    assert main(["bench", str(src), "--input-shape", "x=5,8", "--runs", "2", "--warmup", "0"]) == 0
    text = capsys.readouterr().out
    assert max(map(len, text.splitlines())) <= 120      # wrapped to the terminal's 120 columns
    text = " ".join(text.split())
    assert "sym.onnx on x float32[5,8]:" in text and "160 MACs" in text


def test_bench_macs_of_an_nnapi_model_are_not_known(tmp_path, capsys):
    from converters.onnx import convert
    import nnapi
    src = tmp_path / "sym.onnx"
    symbolic_matmul(src)
    nn = tmp_path / "m.nnapi"
    nnapi.save(convert(str(src), dims={"batch": 2}).model, nn)
    out = tmp_path / "b.json"
    assert main(["bench", str(nn), "--runs", "2", "--warmup", "0", "--format", "json", "-o", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["macs"] is None and r["gflops"] is None
    assert [i["shape"] for i in r["inputs"]] == [[2, 8]]
    assert main(["bench", str(nn), "--runs", "2", "--warmup", "0"]) == 0
    assert "n/a MACs" in " ".join(capsys.readouterr().out.split())


def test_bench_on_a_file_that_is_no_onnx_protobuf_is_invalid_input(tmp_path, capsys):
    """The early pin check reads the declarations; an unreadable file is left to the reader's exit-3 message
    (it was an internal error, exit 5, from the declarations' onnx.load)."""
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"garbage-not-protobuf\x08\x01\xff\xff")
    assert main(["bench", str(bad)]) == 3
    err = capsys.readouterr().err
    assert "not a valid ONNX protobuf" in err and "internal error" not in err, err
