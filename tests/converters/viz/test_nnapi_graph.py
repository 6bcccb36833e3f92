"""The Model Explorer adapter for .nnapi files: loaded by Model Explorer's own extension manager, it
draws every subgraph with operations' parameters by name, operands' type, shape and quantization,
edges from each operand's writer, and namespaces from the source names."""
import json

import pytest

import nnapi
from converters.cli import main
from converters.viz import ADAPTER_EXTENSION, ADAPTER_ID
from converters.viz.nnapi_graph import namespace_of

KWS = "tests/zoo/models/tf/kws_conv1d_int8.tflite"


def convert(tmp_path, source, name):
    out = tmp_path / name
    assert main(["convert", source, "-o", str(out)]) == 0
    return out


def adapter_graphs(path) -> list:
    """The graphs Model Explorer's server gets for `path`, through its extension manager."""
    from model_explorer.extension_manager import ExtensionManager
    manager = ExtensionManager([ADAPTER_EXTENSION])
    manager.load_extensions()
    meta = next(m for m in manager.get_extensions_metadata() if m["id"] == ADAPTER_ID)
    assert meta["type"] == "adapter" and meta["fileExts"] == ["nnapi"]
    resp = manager.run_cmd({"extensionId": ADAPTER_ID, "cmdId": "convert", "modelPath": str(path),
                            "settings": {}, "deleteAfterConversion": False})
    return json.loads(json.dumps(resp))["graphs"]  # what the server sends the page


def attrs(items) -> dict:
    return {a["key"]: a["value"] for a in items}


def test_demo_operations_with_parameters_by_name_and_edges():
    (g,) = adapter_graphs("samples/demo.nnapi")
    nodes = {n["id"]: n for n in g["nodes"]}
    ops = [n for n in g["nodes"] if n["id"].startswith("op")]
    # samples/make_samples.py: ADD (no activation), MUL fused with RELU6, SUB
    assert [(n["label"], attrs(n["attrs"])["fuse"]) for n in ops] == [("ADD", "NONE"), ("MUL", "RELU6"),
                                                                      ("SUB", "NONE")]
    mul = nodes["op1"]
    assert {"sourceNodeId": "op0", "sourceNodeOutputId": "0", "targetNodeInputId": "0"} in mul["incomingEdges"]
    assert [attrs(m["attrs"])["__tensor_tag"] for m in mul["inputsMetadata"]] == ["input1", "input2"]
    out = attrs(mul["outputsMetadata"][0]["attrs"])
    assert (out["tensor_name"], out["type"], out["shape"]) == ("scaled", "TENSOR_FLOAT32", "1x3x5x2")
    model = nnapi.load("samples/demo.nnapi")
    assert [n["label"] for n in g["nodes"] if n["id"].startswith(("input", "output"))] == \
        ["Input"] * len(model.inputs) + ["Output"] * len(model.outputs)


def test_quantized_model_operands_and_padding(tmp_path):
    model_path = convert(tmp_path, KWS, "kws.nnapi")
    (g,) = adapter_graphs(model_path)
    nodes = {n["id"]: n for n in g["nodes"]}
    # Model Explorer's TFLite adapter shows the input as 0.0588217 * (q - 42) and conv 1 as padding SAME,
    # fused RELU; the converted model keeps both
    inp = attrs(nodes["input0"]["outputsMetadata"][0]["attrs"])
    assert (inp["type"], inp["shape"], inp["scale"], inp["zero_point"]) == \
        ("TENSOR_QUANT8_ASYMM_SIGNED", "1x49x40", "0.0588217", "42")
    conv = nodes["op1"]
    assert conv["label"] == "CONV_2D"
    assert {k: attrs(conv["attrs"])[k] for k in ("padding", "fuse", "stride_w")} == \
        {"padding": "SAME", "fuse": "RELU", "stride_w": "1"}
    tags = [attrs(m["attrs"])["__tensor_tag"] for m in conv["inputsMetadata"]]
    assert tags == ["input", "filter", "bias"]  # the scalar parameters are attributes, not edges
    filt = next(n for n in g["nodes"] if n["id"].startswith("const") and
                {"sourceNodeId": n["id"], "sourceNodeOutputId": "0", "targetNodeInputId": "1"} in conv["incomingEdges"])
    fa = attrs(filt["outputsMetadata"][0]["attrs"])
    model = nnapi.load(model_path)
    w = model.operands[model.operations[1].inputs[1]]
    assert fa["type"] == w.type.code.name and fa["shape"] == "x".join(map(str, w.type.dimensions))
    if w.channel_quant is not None:
        assert fa["channel_dim"] == str(w.channel_quant.channel_dim)
    # namespaces from the source tensor names fold the model into its Keras layers
    assert conv["namespace"] == "kws_conv1d/relu0"
    every_op = [n for n in g["nodes"] if n["id"].startswith("op")]
    assert len(every_op) == len(model.operations) and all(n["namespace"].startswith("kws_conv1d") for n in every_op
                                                         if n["label"] != "SOFTMAX")
    assert attrs(nodes["output0"]["attrs"])["tensor_name"] == "StatefulPartitionedCall:0"


def test_every_subgraph_is_drawn_and_linked(tmp_path):
    graphs = adapter_graphs(convert(tmp_path, "samples/control_flow.tflite", "cf.nnapi"))
    ids = [g["id"] for g in graphs]
    assert len(ids) == 5 and len(set(ids)) == 5
    main_graph = graphs[0]
    assert ids[0] == "cf.nnapi"   # titled by the file, not by the subgraph name the source model carries
    loops = {n["label"]: n["subgraphIds"] for n in main_graph["nodes"] if n["label"] in ("WHILE", "IF")}
    assert loops == {"WHILE": ["loop_cond", "loop_body"], "IF": ["then_double", "else_subtract"]}
    assert set(ids[1:]) == {"loop_cond", "loop_body", "then_double", "else_subtract"}
    # WHILE's output 1 feeds IF: an edge from the writer's output slot
    if_node = next(n for n in main_graph["nodes"] if n["label"] == "IF")
    assert any(e["sourceNodeId"] == "op0" for e in if_node["incomingEdges"])


@pytest.mark.parametrize("name, ns", [("/layer1/layer1.0/conv1/Conv_output_0", "layer1/layer1.0/conv1"),
                                      ("a/b/relu;a/b/conv;a/c", "a/b"), ("input", ""), (None, "")])
def test_namespace_of_source_names(name, ns):
    assert namespace_of(name) == ns
