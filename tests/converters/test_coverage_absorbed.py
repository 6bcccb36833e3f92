"""Coverage says where every absorbed node went: a supported node that emits no NNAPI operation of its own has
`absorbed: {"into", "how"}`, recorded where the conversion decides it (fusion plans, constant folding, the
finished model's folds), on real zoo models. Expected targets come from the source graphs' structure, read
here with onnx / the report's tensor names, and from the converted model's operation count."""
import json
from pathlib import Path

import onnx
import pytest

from converters.coverage import report_for_path
from converters.coverage_render import render

ZOO = Path(__file__).resolve().parents[1] / "zoo" / "models"
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"

MODELS = {
    "dequantize": ZOO / "tf" / "mobilenet_v2_float16.tflite",     # float16 weights: DEQUANTIZE folded
    "pad": ZOO / "tf" / "resnet_small_float32.tflite",             # PAD folded into its CONV_2D
    "relu": ZOO / "torch" / "resnet18_fixed_op13.onnx",            # fused Relu, Flatten into Gemm
    "qdq": ZOO / "ortq" / "resnet_small_qdq_s8.onnx",              # QDQ groups
    "shuffle": ZOO / "torch" / "shufflenet_v2_x0_5_fixed_op13.onnx",  # channel shuffles
    "bn": LIGHT / "light_shufflenet.onnx",                         # BatchNormalization folded into Conv
}


@pytest.fixture(scope="module")
def reports():
    return {k: report_for_path(str(p), 8) for k, p in MODELS.items()}


def _by_output(r):
    return {o["name"]: n for n in r["nodes"] for o in n["outputs"] if o.get("name")}


def _onnx_producer_of_input(path, r):
    """report node index -> report index of the node that writes its first input, from the ONNX graph itself."""
    g = onnx.load(str(path), load_external_data=False).graph
    index = {n["name"]: n["index"] for n in r["nodes"]}
    writer = {o: node.name for node in g.node for o in node.output}
    return {index[node.name]: index.get(writer.get(node.input[0])) for node in g.node if node.input}


def _readers(r, name):
    return [n for n in r["nodes"] if any(i.get("name") == name for i in n["inputs"])]


@pytest.mark.parametrize("key", list(MODELS))
def test_every_supported_node_without_operations_says_where_it_went(reports, key):
    r = reports[key]
    assert "error" not in r
    silent = [n for n in r["nodes"] if n["supported"] and not n["nnapi_ops"]]
    assert silent, "the model has absorbed nodes"
    assert [n["index"] for n in silent if not n["absorbed"]] == []
    nodes = r["nodes"]
    for n in silent:
        into = n["absorbed"]["into"]
        seen = set()
        while into is not None and not nodes[into]["nnapi_ops"]:  # (an identity of an absorbed node: follow)
            assert into not in seen
            seen.add(into)
            into = nodes[into]["absorbed"]["into"]
        if into is not None:
            assert nodes[into]["supported"] and nodes[into]["nnapi_ops"], (n["index"], into)
    assert all(n["absorbed"] is None for n in nodes if n["nnapi_ops"])


def test_folded_dequantize_goes_into_the_node_that_reads_the_weights(reports):
    r = reports["dequantize"]
    dq = [n for n in r["nodes"] if n["op"] == "DEQUANTIZE"]
    assert len(dq) > 50 and all(n["absorbed"]["how"] == "dequantize of weights" for n in dq)
    for n in dq:
        readers = _readers(r, n["outputs"][0]["name"])
        assert n["absorbed"]["into"] == (readers[0]["index"] if len(readers) == 1 else None)
    assert {r["nodes"][n["absorbed"]["into"]]["op"] for n in dq} <= {"CONV_2D", "DEPTHWISE_CONV_2D",
                                                                     "FULLY_CONNECTED", "ADD"}


def test_pad_folded_into_its_convolution_emits_nothing(reports):
    from converters.tflite import convert
    r = reports["pad"]
    pads = [n for n in r["nodes"] if n["op"] == "PAD"]
    readers = {n["index"]: _readers(r, n["outputs"][0]["name"]) for n in pads}
    assert sorted(u["op"] for n in pads for u in readers[n["index"]]) == ["CONV_2D", "MAX_POOL_2D"]
    for n in pads:
        (reader,) = readers[n["index"]]
        if reader["op"] == "CONV_2D":  # a convolution takes the padding; a max pool cannot (it pads with -inf)
            assert n["absorbed"] == {"into": reader["index"], "how": "pad folded into convolution"}
            assert n["nnapi_ops"] == [] and "folded into" in n["note"]
        else:
            assert n["absorbed"] is None and n["nnapi_ops"] == ["PAD"]
    # the report's operations are the converted model's
    result = convert(str(MODELS["pad"]))
    assert sum(len(n["nnapi_ops"]) for n in r["nodes"]) == len(result.model.operations)
    assert [k.absorbed for k in result.nodes if k.op == "PAD"] == [n["absorbed"] for n in pads]


def test_relu_goes_into_its_producer_and_flatten_into_gemm(reports):
    r = reports["relu"]
    producer = _onnx_producer_of_input(MODELS["relu"], r)
    relus = [n for n in r["nodes"] if n["op"] == "Relu"]
    assert len(relus) == 17
    for n in relus:
        assert n["absorbed"] == {"into": producer[n["index"]], "how": "fused activation"}
        assert r["nodes"][n["absorbed"]["into"]]["op"] in ("Conv", "Add")
    (flat,) = [n for n in r["nodes"] if n["op"] == "Flatten"]
    (gemm,) = [n for n in r["nodes"] if n["op"] == "Gemm"]
    assert flat["absorbed"] == {"into": gemm["index"], "how": "reshape folded into fully connected"}


def test_qdq_shuffle_and_batch_norm(reports):
    q = reports["qdq"]
    by_out = _by_output(q)
    for n in q["nodes"]:
        if n["op"] == "QuantizeLinear" and n["absorbed"]:
            core = by_out[n["inputs"][0]["name"]]
            assert n["absorbed"] == {"into": core["index"], "how": "quantize of a quantized op's output"}
    hows = {n["absorbed"]["how"] for n in q["nodes"] if n["absorbed"]}
    assert {"dequantize of weights", "dequantize of a quantized op's input"} <= hows
    s = reports["shuffle"]
    shuffled = [n for n in s["nodes"] if n["absorbed"] and n["absorbed"]["how"] == "channel shuffle"]
    assert len(shuffled) == 32 and {n["op"] for n in shuffled} == {"Reshape", "Transpose"}
    assert all(s["nodes"][n["absorbed"]["into"]]["op"] == "Reshape" for n in shuffled)
    b = reports["bn"]
    producer = _onnx_producer_of_input(MODELS["bn"], b)
    bns = [n for n in b["nodes"] if n["op"] == "BatchNormalization"]
    assert bns and all(n["absorbed"] == {"into": producer[n["index"]], "how": "batch norm folded into conv"} for n in bns)


def test_text_json_and_html_say_it(reports):
    r = reports["relu"]
    n = next(n for n in r["nodes"] if n["op"] == "Relu")
    line = f"absorbed into node {n['absorbed']['into']} (fused activation)"
    assert line in render(r, "text") and line in render(r, "markdown")
    assert json.loads(render(r, "json"))["nodes"][n["index"]]["absorbed"] == n["absorbed"]
    assert line in render(r, "html")  # the node's hover text


@pytest.mark.parametrize("readers,into", [(("REAL",), 1), (("COMPLEX_ABS", "IMAG"), None)])
def test_rfft2d_goes_into_its_one_consumer(tmp_path, readers, into):
    from tests.converters.tflite.test_spectral import _rfft_model
    path = tmp_path / "rfft.tflite"
    path.write_bytes(_rfft_model((1, 1, 16), (1, 16), readers))
    r = report_for_path(str(path), 8)
    assert r["nodes"][0]["op"] == "RFFT2D" and r["nodes"][0]["nnapi_ops"] == []
    assert r["nodes"][0]["absorbed"] == {"into": into, "how": "computed by its consumers (no complex type)"}
    assert all(n["nnapi_ops"] and n["absorbed"] is None for n in r["nodes"][1:])
