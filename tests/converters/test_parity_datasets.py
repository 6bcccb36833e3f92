"""Parity over real inputs: a folder of images, an .npz with a leading sample axis; top-k agreement."""
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from converters.cli import main
from converters.datasets import DatasetError, image_samples, parse_preprocess
from converters.parity import ParityError, check
from converters.tflite import read

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _images(folder: Path, count: int, size=(40, 36)):
    rng = np.random.default_rng(7)
    folder.mkdir()
    for k in range(count):
        Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(folder / f"{k:03}.png")
    return folder


def test_preprocessing_by_hand(tmp_path):
    folder = tmp_path / "one"
    folder.mkdir()
    pixels = np.array([[[0, 51, 255], [255, 102, 0]], [[10, 20, 30], [40, 50, 60]]], np.uint8)
    Image.fromarray(pixels).save(folder / "a.png")
    graph = read(str(SAMPLES / "mobilenet_float.tflite")).main
    p = parse_preprocess("scale=1/255,mean=0.5,std=0.5")
    ((x,),) = image_samples(folder, graph, {"image": (1, 2, 2, 3)}, p)
    np.testing.assert_allclose(x[0], (pixels / 255 - 0.5) / 0.5, rtol=1e-6)       # same size: no resampling
    ((bgr,),) = image_samples(folder, graph, {"image": (1, 2, 2, 3)}, parse_preprocess("scale=1,order=bgr"))
    np.testing.assert_array_equal(bgr[0], pixels[..., ::-1])


def test_quantized_inputs_are_quantized_with_the_input_scale(tmp_path):
    folder = _images(tmp_path / "imgs", 1, (32, 32))
    graph = read(str(SAMPLES / "mobilenet_uint8.tflite")).main
    ((x,),) = image_samples(folder, graph, None, parse_preprocess(None))
    raw = np.asarray(Image.open(next(folder.iterdir())).convert("RGB"), np.float64)
    assert x.dtype == np.uint8
    np.testing.assert_array_equal(x[0], np.clip(np.round(raw / 255 / 0.003921384923160076), 0, 255))


def test_a_folder_of_50_images_gives_top1_agreement_on_a_classifier(tmp_path):
    folder = _images(tmp_path / "imgs", 50)
    report = check(str(SAMPLES / "mobilenet_float.tflite"), inputs=str(folder),
                   preprocess="scale=1/127.5,mean=1").as_dict()
    (out,) = report["outputs"]
    assert report["samples"] == 50 and report["passed"]
    assert out["classified_rows"] == 50 and out["top1_agreement"] == 1.0 and out["top5_agreement"] == 1.0
    again = check(str(SAMPLES / "mobilenet_float.tflite"), inputs=str(folder), preprocess="scale=1/127.5,mean=1")
    assert again.as_dict()["outputs"][0]["max_abs_error"] == out["max_abs_error"]     # deterministic


def test_onnx_nchw_input_takes_images_in_its_layout(tmp_path):
    folder = _images(tmp_path / "imgs", 3)
    out = tmp_path / "r.json"
    assert main(["parity", str(SAMPLES / "resnet_float.onnx"), "--inputs", str(folder), "--format", "json",
                 "-o", str(out)]) == 0
    import json
    r = json.loads(out.read_text())
    assert r["samples"] == 3 and r["outputs"][0]["top1_agreement"] == 1.0


def test_top_agreement_counts_disagreeing_rows():
    from converters.parity import compare
    ref = np.array([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1]], np.float32)
    got = np.array([[0.1, 0.9, 0.0], [0.1, 0.8, 0.1]], np.float32)       # row 1's top class differs
    o = compare("p", ref, got, False, False, {})
    assert o.top1_agreement == 0.5 and o.top5_agreement == 1.0 and o.classified_rows == 2
    assert compare("p", ref[:, :1], got[:, :1], False, False, {}).top1_agreement is None   # one class: no


def test_npz_with_a_leading_sample_axis_is_several_samples(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "x.npz"
    np.savez(path, image=rng.random((4, 1, 32, 32, 3)).astype(np.float32))
    assert check(str(SAMPLES / "mobilenet_float.tflite"), inputs=str(path)).samples == 4
    np.savez(path, image=rng.random((1, 32, 32, 3)).astype(np.float32))
    assert check(str(SAMPLES / "mobilenet_float.tflite"), inputs=str(path)).samples == 1


@pytest.mark.parametrize("spec, message", [("scale", "KEY=VALUE"), ("scale=x", "not a number"),
                                           ("std=0", "must not be 0"), ("gamma=1", "keys are")])
def test_bad_preprocess_is_a_clear_error(spec, message):
    with pytest.raises(DatasetError, match=message):
        parse_preprocess(spec)


def test_folder_errors_name_the_problem(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ParityError, match="no image files"):
        check(str(SAMPLES / "mobilenet_float.tflite"), inputs=str(empty))
    with pytest.raises(ParityError, match="--preprocess applies"):
        check(str(SAMPLES / "mobilenet_float.tflite"), preprocess="scale=1")
    assert main(["parity", str(SAMPLES / "mobilenet_float.tflite"), "--inputs", str(empty)]) == 3


def test_a_scalar_input_along_a_leading_sample_axis_stays_an_array(tmp_path):
    # a rank-0 input (Silero VAD's sample rate) stacked over samples is a 1-D array; each sample must get a
    # 0-d array back, not a numpy scalar (onnxruntime refuses "object of type numpy.int64")
    from converters.datasets import npz_samples
    from converters.source_graph import SourceGraph, SourceTensor
    graph = SourceGraph("g", [SourceTensor(0, "sr", (), np.dtype(np.int64))], [], [0], [0])
    np.savez(tmp_path / "in.npz", sr=np.array([16000, 16000, 8000], np.int64))
    samples = npz_samples(str(tmp_path / "in.npz"), graph)
    assert [type(x) for (x,) in samples] == [np.ndarray] * 3
    assert [x.shape for (x,) in samples] == [()] * 3 and int(samples[2][0]) == 8000
