"""`nnapi view` refusals, before any server starts: Model Explorer missing (exit 4, with the pip
command), overlays that need the source model asked of a .nnapi, a node data file that is not JSON."""
import socket
import sys

from converters.cli import main

KWS = "tests/zoo/models/tf/kws_conv1d_int8.tflite"


def test_without_the_viz_extra_exit_4_with_the_pip_command(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "model_explorer", None)  # import model_explorer raises ImportError
    assert main(["view", KWS, "--no-browser"]) == 4
    err = capsys.readouterr().err
    assert 'pip install "nnapi-convert[viz]"' in err and "ai-edge-model-explorer" in err  # (dependencies.advice)


def test_onnx_needs_the_onnx_adapter_too(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "model_explorer_onnx", None)
    assert main(["view", "tests/zoo/models/torch/resnet_small_fixed_op13.onnx", "--no-browser"]) == 4
    assert "model-explorer-onnx" in capsys.readouterr().err


def test_overlays_of_a_nnapi_model_are_refused(capsys):
    assert main(["view", "samples/demo.nnapi", "--coverage", "--no-browser"]) == 3
    assert "computed from the source model" in capsys.readouterr().err


def test_bad_node_data_and_missing_model(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["view", KWS, "--node-data", str(bad), "--no-browser"]) == 3
    assert "not a JSON node data file" in capsys.readouterr().err
    assert main(["view", str(tmp_path / "missing.tflite"), "--no-browser"]) == 3
    assert "no such file" in capsys.readouterr().err


def test_a_taken_port_is_refused_before_model_explorer_starts(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert main(["view", KWS, "--no-browser", "--host", "127.0.0.1", "--port", str(port)]) == 3
    assert "already listens" in capsys.readouterr().err
    assert main(["view", KWS, "--no-browser", "--port", "70000"]) == 3
