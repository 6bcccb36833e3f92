"""Valid .tflite files the way LiteRT's newer writers store them, read for conversion and fed to LiteRT:

- buffers stored after the flatbuffer (Buffer.offset / size), as AI Edge Quantizer writes every model
  with more than 256 KB of weights: `offset_form` below writes them the way its model_modifier does
  (pack with placeholder offset 1 / size 1, append each buffer at a 16-byte aligned offset, then patch
  the two fields in the packed flatbuffer);
- operator codes that set builtin_code alone (deprecated_builtin_code 0), as it writes its DEQUANTIZE;
- an int8 DEPTH_TO_SPACE at version 2, which LiteRT's built-in kernels run and its reference resolver
  (the local verdict's reference) registers only at version 1.

Expected values come from LiteRT run on the plain (inline) file, never from the converter."""
import struct

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

from converters.extract import tflite_submodel
from converters.parity import check
from converters.runners import run_litert
from converters.tflite.authoring import GraphBuilder
from converters.tflite.reader import read_tflite

RNG = np.random.default_rng(34)


def offset_form(data: bytes) -> bytes:
    """`data` with every non-empty buffer moved after the flatbuffer, as AI Edge Quantizer writes it."""
    model = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
    moved = {}
    for k, b in enumerate(model.buffers):
        if b.data is not None and len(b.data):
            moved[k] = np.asarray(b.data, np.uint8).tobytes()
            b.data, b.offset, b.size = None, 1, 1
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    out = bytearray(builder.Output())
    packed = schema.Model.GetRootAs(out, 0)
    for k, blob in moved.items():
        start = (len(out) + 15) & ~15
        out.extend(b"\0" * (start - len(out)) + blob)
        table = packed.Buffers(k)._tab
        for slot, value in ((6, start), (8, len(blob))):   # Buffer.offset, Buffer.size (uint64 fields)
            struct.pack_into("<Q", table.Bytes, table.Pos + table.Offset(slot), value)
        packed = schema.Model.GetRootAs(out, 0)            # `out` may have moved while growing
    return bytes(out)


def _custom(g: GraphBuilder, x: int, shape, type_="FLOAT32", **q) -> int:
    """A CUSTOM 'NoSuchOp' operator (LiteRT has no kernel: it cannot run the model whole)."""
    c = g.tensor("customised", shape, type_, **q)
    g.custom("NoSuchOp", [x], [c])
    return c


def conv_dense(custom: bool = False, hybrid: bool = False) -> bytes:
    """CONV_2D 3x3 -> RELU -> (CUSTOM) -> RESHAPE -> FULLY_CONNECTED; hybrid: int8 per-tensor weights."""
    g = GraphBuilder()
    x = g.input("x", [1, 6, 6, 3])
    w = RNG.normal(0, 0.5, (8, 3, 3, 3)).astype(np.float32)
    if hybrid:
        scale = float(np.abs(w).max() / 127)
        wt = g.const("w", np.round(w / scale).astype(np.int8), scale=scale, zero_point=0)
    else:
        wt = g.const("w", w)
    b = g.const("b", RNG.normal(0, 0.1, 8).astype(np.float32))
    c = g.tensor("conv", [1, 6, 6, 8])
    g.op("CONV_2D", [x, wt, b], [c], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1,
         fused_activation_function="RELU")
    if custom:
        c = _custom(g, c, [1, 6, 6, 8])
    flat = g.tensor("flat", [1, 288])
    g.op("RESHAPE", [c, g.const("shape", np.array([1, 288], np.int32))], [flat], "ReshapeOptions", new_shape=[1, 288])
    fw = g.const("fw", RNG.normal(0, 0.05, (5, 288)).astype(np.float32))
    fb = g.const("fb", RNG.normal(0, 0.1, 5).astype(np.float32))
    y = g.tensor("y", [1, 5])
    g.op("FULLY_CONNECTED", [flat, fw, fb], [y], "FullyConnectedOptions")
    g.output(y)
    return g.finish()


def test_offset_form_is_what_litert_runs_and_what_the_reader_reads():
    data = conv_dense()
    moved = offset_form(data)
    assert len(moved) > len(data) and any(
        schema.Model.GetRootAs(moved, 0).Buffers(k).Offset() > 1 for k in range(4))
    x = RNG.uniform(-1, 1, (1, 6, 6, 3)).astype(np.float32)
    np.testing.assert_array_equal(run_litert(moved, [x])[0], run_litert(data, [x])[0])
    plain, stored = read_tflite(data).main, read_tflite(moved).main
    for a, b in zip(plain.tensors, stored.tensors):
        assert (a.data is None) == (b.data is None)
        if a.data is not None:
            np.testing.assert_array_equal(a.data, b.data)


def test_parity_of_a_model_with_offset_buffers(tmp_path):
    path = tmp_path / "m.tflite"
    path.write_bytes(offset_form(conv_dense()))
    r = check(str(path), samples=2).as_dict()
    assert r["passed"], r


def test_parity_of_a_dynamic_range_model_with_offset_buffers(tmp_path):
    """The float twin (int8 weights dequantized) is re-serialised: it was refused by LiteRT ("Constant
    buffer 2 specified an out of range offset") when the offsets were copied without their bytes."""
    path = tmp_path / "m.tflite"
    path.write_bytes(offset_form(conv_dense(hybrid=True)))
    r = check(str(path), samples=2).as_dict()
    assert r["passed"] and "dequantized" in r["verdict"]["reference_model"], r


def test_submodels_keep_offset_buffers_loadable():
    data = conv_dense(custom=True)
    moved = offset_form(data)
    graph = read_tflite(data).main
    conv, dense = graph.nodes[0], graph.nodes[3]
    x = RNG.uniform(-1, 1, (1, 6, 6, 3)).astype(np.float32)
    first = tflite_submodel(moved, 0, [0], [graph.inputs[0]], conv.outputs)
    assert any(schema.Model.GetRootAs(first, 0).Buffers(k).Offset() > 1 for k in range(5))
    (got,) = run_litert(first, [x])
    (want,) = run_litert(tflite_submodel(data, 0, [0], [graph.inputs[0]], conv.outputs), [x])
    np.testing.assert_array_equal(got, want)
    flat = RNG.uniform(0, 1, (1, 6, 6, 8)).astype(np.float32)
    (got,) = run_litert(tflite_submodel(moved, 0, [2, 3], [conv.outputs[0] + 1], dense.outputs), [flat])
    fw, fb = (graph.tensors[t].data for t in dense.inputs[1:])
    np.testing.assert_allclose(got, flat.reshape(1, 288) @ fw.T + fb, rtol=1e-5, atol=1e-5)   # by hand


def test_partial_parity_extracts_partitions_of_an_offset_model(tmp_path):
    path = tmp_path / "m.tflite"
    path.write_bytes(offset_form(conv_dense(custom=True)))
    r = check(str(path), partial=True, samples=2).as_dict()
    assert "NoSuchOp" in r["whole_model_run"]
    assert r["passed"] and len(r["partitions"]) == 2, r
    assert all("sub-model" in p["fed"] for p in r["partitions"])


def depth_to_space_int8(custom: bool) -> bytes:
    """int8 DEPTH_TO_SPACE at version 2 (the version TensorFlow's converter writes for int8) -> (CUSTOM) -> RELU."""
    g = GraphBuilder()
    q = dict(scale=0.05, zero_point=-3)
    x = g.input("x", [1, 2, 3, 8], "INT8", **q)
    y = g.tensor("y", [1, 4, 6, 2], "INT8", **q)
    g.op("DEPTH_TO_SPACE", [x], [y], "DepthToSpaceOptions", version=2, block_size=2)
    if custom:
        y = _custom(g, y, [1, 4, 6, 2], "INT8", **q)
    z = g.tensor("z", [1, 4, 6, 2], "INT8", **q)
    g.op("RELU", [y], [z], version=2)
    g.output(z)
    return g.finish()


def test_depth_to_space_version_2_runs_on_the_reference_kernels(tmp_path):
    """The local verdict of quantized models runs LiteRT's reference kernels, whose resolver registers
    DEPTH_TO_SPACE at version 1 only; the whole model and its partitions still get checked."""
    path = tmp_path / "m.tflite"
    path.write_bytes(offset_form(depth_to_space_int8(False)))
    r = check(str(path), samples=2).as_dict()
    assert r["passed"] and r["verdict"]["local_reference"] == "litert-ref", r
    assert [e["nnapi_op"] for e in r["local"]] == ["DEPTH_TO_SPACE", "RELU"]
    assert all(e["max_units"] == 0 for e in r["local"])
    path.write_bytes(depth_to_space_int8(True))
    r = check(str(path), partial=True, samples=2).as_dict()
    assert r["passed"] and len(r["partitions"]) == 2, r


def test_operator_code_with_only_builtin_code_set(tmp_path):
    """AI Edge Quantizer writes its DEQUANTIZE operator code with builtin_code 6 and deprecated_builtin_code
    0; LiteRT takes the larger field, and so must the reader (it read ADD, with too few inputs)."""
    g = GraphBuilder()
    x = g.input("x", [1, 4])
    w = g.const("w", np.array([[3, -7, 127, 0], [-128, 5, 9, 64]], np.int8), scale=0.02, zero_point=0)
    wf = g.tensor("w_float", [2, 4])
    g.op("DEQUANTIZE", [w], [wf])
    y = g.tensor("y", [1, 2])
    g.op("FULLY_CONNECTED", [x, wf, -1], [y], "FullyConnectedOptions")
    g.output(y)
    model = schema.ModelT.InitFromPackedBuf(bytearray(g.finish()), 0)
    dq = next(oc for oc in model.operatorCodes if oc.builtinCode == schema.BuiltinOperator.DEQUANTIZE)
    dq.deprecatedBuiltinCode = 0
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    path = tmp_path / "m.tflite"
    path.write_bytes(bytes(builder.Output()))
    assert [n.op for n in read_tflite(str(path)).main.nodes] == ["DEQUANTIZE", "FULLY_CONNECTED"]
    r = check(str(path), samples=2).as_dict()
    assert r["passed"], r
