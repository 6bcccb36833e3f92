"""The ONNX reader and converter on hostile .onnx files: success (possibly with unsupported nodes)
or SourceError with a message, never another exception; external data never read from outside
the model's folder; the CLI answers 0/2/3 with one line on stderr.

Random byte-level and structural mutations (fixed seed and count) of the seed models of
fuzz.seeds (a conv-relu-pool-gemm chain, a QDQ conv, a model with external data), plus defects
authored on purpose with the onnx protobuf API, and a subset run in a sandboxed subprocess.
"""
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper

from converters.onnx import convert, read
from converters.source_graph import SourceError
from fuzz import fuzz_readers, mutators, targets
from fuzz.targets import run_cli_argv

from .helpers import assert_behaves, mutated_inputs, seeds

N_MUTATIONS = 1000
N_CLI_MUTATIONS = 30
N_SANDBOXED = 200


def _conv_chain() -> onnx.ModelProto:
    return onnx.ModelProto.FromString(seeds.onnx_conv_chain())


def _qdq() -> onnx.ModelProto:
    return onnx.ModelProto.FromString(seeds.onnx_qdq_conv())


def _external() -> onnx.ModelProto:
    return onnx.ModelProto.FromString(seeds.onnx_external())


def _write(tmp_path: Path, m, name="m.onnx") -> Path:
    """The model (and the external-data file, a secret outside the folder and a symlink to it)."""
    data = m if isinstance(m, bytes) else m.SerializeToString()
    return targets.onnx_layout(data, tmp_path).rename(tmp_path / "model" / name)


def _init(m, name):
    return next(t for t in m.graph.initializer if t.name == name)


def _node(m, op):
    return next(n for n in m.graph.node if n.op_type == op)


def _set_attr(node, name, value):
    for a in list(node.attribute):
        if a.name == name:
            node.attribute.remove(a)
    node.attribute.append(helper.make_attribute(name, value))


# -- seeds and random mutations ----------------------------------------------------------

def test_seed_models_are_valid(tmp_path):
    chain = convert(seeds.onnx_conv_chain())
    assert chain.complete and [n.op for n in chain.nodes] == ["Conv", "Relu", "MaxPool", "Flatten", "Gemm"]
    qdq = convert(seeds.onnx_qdq_conv())
    assert qdq.complete and "CONV_2D" in [o.code.name for o in qdq.model.operations]
    path = _write(tmp_path, seeds.onnx_external())
    w = next(t for t in read(str(path)).main.tensors if t.name == "w")
    np.testing.assert_array_equal(w.data, seeds.onnx_external_weights())
    assert convert(str(path)).complete
    for data in seeds.onnx_seeds().values():
        assert targets.check("onnx", data, tmp_path)[0] == "ok"


def test_random_mutations(tmp_path):
    counts = assert_behaves("onnx", mutated_inputs("onnx", N_MUTATIONS), tmp_path)
    assert counts["rejected"] > N_MUTATIONS // 4 and counts["ok"] > N_MUTATIONS // 10, counts


def test_mutations_in_sandbox():
    """A subset in a worker process with a timeout and an address-space limit: no signal, hang or blow-up."""
    cases = mutated_inputs("onnx", N_SANDBOXED, seed=7)
    results = fuzz_readers.run_batch("onnx", [d for _, _, d in cases], timeout_s=20.0, memory_mb=1024)
    bad = [(k, s, d) for (k, _, _), (s, d) in zip(cases, results) if s not in ("ok", "rejected")]
    assert not bad, f"{len(bad)} bad outcomes; first: input {bad[0][0]}: {bad[0][1]}: {bad[0][2]}"
    assert {s for s, _ in results} == {"ok", "rejected"}


def test_cli_on_mutations(tmp_path):
    cases = [(k, n, d) for k, n, d in mutated_inputs("cli", 400) if n.startswith("onnx:")][:N_CLI_MUTATIONS]
    assert len(cases) == N_CLI_MUTATIONS
    counts = assert_behaves("cli", cases, tmp_path)
    assert counts["rejected"] and counts["ok"], counts


# -- structural defects authored on purpose -----------------------------------------------

def dangling_input():
    m = _conv_chain()
    _node(m, "Relu").input[0] = "nowhere"
    return m


def self_loop():
    m = _conv_chain()
    _node(m, "Relu").input[0] = "r"
    return m


def cycle():
    m = _conv_chain()
    _node(m, "Conv").input[0] = "p"
    return m


def missing_initializer():
    m = _conv_chain()
    m.graph.initializer.remove(_init(m, "fw"))
    return m


def missing_initializer_data():
    m = _conv_chain()
    _init(m, "fw").ClearField("raw_data")
    return m


def short_raw_data():
    m = _conv_chain()
    t = _init(m, "w")
    t.raw_data = t.raw_data[:-4]
    return m


def wrong_dims():
    m = _conv_chain()
    _init(m, "fb").dims[0] = 11
    return m


def huge_dims():
    m = _conv_chain()
    t = _init(m, "fw")
    t.dims[:] = [1 << 40, 1 << 40]
    return m


def negative_dims():
    m = _conv_chain()
    _init(m, "b").dims[0] = -4
    return m


def unimported_domain():
    m = _conv_chain()
    _node(m, "Relu").domain = "com.evil"
    return m


def no_default_opset():
    m = _conv_chain()
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid("com.evil", 1))
    return m


def not_protobuf():
    return b"\xff\xfe not an onnx model at all" * 3


def no_graph():
    return b"\x08\x08"  # a ModelProto with ir_version 8 and nothing else


def no_outputs():
    m = _conv_chain()
    del m.graph.output[:]
    return m


def non_utf8_name():
    """proto2 keeps invalid UTF-8 in string fields and hands them out as bytes."""
    data = _conv_chain().SerializeToString()
    return data.replace(b"\x1a\x04relu", b"\x1a\x04\xffelu", 1)


@pytest.mark.parametrize("make,match", [
    (no_outputs, "the graph has no outputs"),
    (non_utf8_name, r"model.graph.node\[1\].name is not valid UTF-8"),
    (dangling_input, "'nowhere' is not produced"),
    (self_loop, "cycle"),
    (cycle, "cycle"),
    (missing_initializer, "'fw' is not produced"),
    (missing_initializer_data, "initializer 'fw'"),
    (short_raw_data, "initializer 'w' shape"),
    (wrong_dims, "initializer 'fb' shape"),
    (huge_dims, "initializer 'fw'"),
    (negative_dims, "initializer 'b' has negative dimensions"),
    (unimported_domain, "domain 'com.evil'"),
    (no_default_opset, "uses domain '', which the model does not import"),  # only ai.onnx.ml models may omit it
    (not_protobuf, "not a valid ONNX protobuf"),
    (no_graph, "no graph"),
])
def test_malformed_models_raise_source_error(make, match, tmp_path):
    m = make()
    data = m if isinstance(m, bytes) else m.SerializeToString()
    with pytest.raises(SourceError, match=match):
        convert(data)
    assert targets.check("onnx", data, tmp_path)[0] == "rejected"


def unknown_op():
    m = _conv_chain()
    _node(m, "Relu").op_type = "Frobnicate"
    return m


def vendor_conv():
    m = _conv_chain()
    _node(m, "Conv").domain = "com.evil"
    m.opset_import.append(helper.make_opsetid("com.evil", 1))
    return m


def negative_kernel():
    m = _conv_chain()
    _set_attr(_node(m, "MaxPool"), "kernel_shape", [-2, -2])
    return m


def zero_strides():
    m = _conv_chain()
    _set_attr(_node(m, "Conv"), "strides", [0, 0])
    return m


def huge_pads():
    m = _conv_chain()
    _set_attr(_node(m, "Conv"), "pads", [1 << 30] * 4)
    return m


def zero_group():
    m = _conv_chain()
    _set_attr(_node(m, "Conv"), "group", 0)
    return m


def future_opset():
    m = _conv_chain()
    m.opset_import[0].version = 10 ** 6
    return m


def old_opset_relu():
    """Relu at opset 6 is unsupported: the Conv must not absorb it (partitions stay consistent)."""
    m = _conv_chain()
    m.opset_import[0].version = 6
    return m


def vendor_dequantize():
    """A DequantizeLinear of another domain inside a QDQ group: the group must not be fused."""
    m = _qdq()
    next(n for n in m.graph.node if n.name == "dqx").domain = "com.evil"
    m.opset_import.append(helper.make_opsetid("com.evil", 1))
    return m


def dead_branch():
    """The graph output is a constant expression; the MatMul's result is read by nothing."""
    m = _conv_chain()
    m.graph.node.append(helper.make_node("Add", ["fb", "fb"], ["z"]))
    m.graph.output[0].name = "z"
    m.graph.output[0].type.tensor_type.shape.dim[0].dim_value = 10
    del m.graph.output[0].type.tensor_type.shape.dim[1:]
    return m


def omitted_inputs_and_outputs():
    """An omitted required input and an extra omitted ("") output: no partition may export tensor -1."""
    m = _qdq()
    next(n for n in m.graph.node if n.name == "dqw").input[0] = ""
    next(n for n in m.graph.node if n.name == "qc").output.append("")
    return m


def _scale(value):
    def make():
        m = _qdq()
        t = _init(m, "x_s")
        t.raw_data = np.array(value, np.float32).tobytes()
        return m
    make.__name__ = f"scale_{value}"
    return make


def zero_point_out_of_range():
    m = _qdq()
    t = _init(m, "y_zp")
    t.ClearField("raw_data")
    t.int32_data[:] = [300]
    return m


def per_channel_count_mismatch():
    m = _qdq()
    t = _init(m, "w_s")
    t.raw_data = np.ones(5, np.float32).tobytes()
    t.dims[:] = [5]
    return m


def axis_out_of_range():
    m = _qdq()
    _set_attr(next(n for n in m.graph.node if n.name == "dqw"), "axis", 9)
    return m


@pytest.mark.parametrize("make", [
    unknown_op, vendor_conv, negative_kernel, zero_strides, huge_pads, zero_group, future_opset, old_opset_relu,
    vendor_dequantize, dead_branch, omitted_inputs_and_outputs, _scale(0.0), _scale(-1.0), _scale(float("nan")), _scale(float("inf")),
    zero_point_out_of_range, per_channel_count_mismatch, axis_out_of_range,
], ids=lambda f: f.__name__)
def test_hostile_but_parseable_models(make, tmp_path):
    """SourceError, or a result whose unsupported nodes all give a reason; --partial partitions build."""
    data = make().SerializeToString()
    try:
        result = convert(data)
    except SourceError as e:
        assert str(e).strip()
        return
    assert all(n.reason for n in result.unsupported)
    if make in (unknown_op, vendor_conv, future_opset, old_opset_relu, vendor_dequantize):
        assert not result.complete
    if make in (unknown_op, vendor_conv):  # (the nodes after it lose their inferred shapes too)
        k = 1 if make is unknown_op else 0
        assert result.nodes[k].reason_code == "unsupported_operator", result.nodes[k]
    partial = convert(data, partial=True)
    for p in partial.partitions:
        p.model.validate()
    assert targets.check("onnx", data, tmp_path)[0] in ("ok", "rejected")


# -- external data -------------------------------------------------------------------------

def _external_at(location, **extra):
    m = _external()
    t = _init(m, "w")
    for e in t.external_data:
        if e.key == "location":
            e.value = location
        if e.key in extra:
            e.value = extra.pop(e.key)
    for k, v in extra.items():
        e = t.external_data.add()
        e.key, e.value = k, v
    return m


@pytest.mark.parametrize("location", ["../secret.bin", "link.bin", "sub/../../secret.bin", "{abs}", "/etc/hostname",
                                      "..", "", "weights.bin/../../secret.bin"])
def test_external_data_escaping_the_folder_is_rejected(tmp_path, location):
    secret = tmp_path / "secret.bin"
    loc = location.format(abs=secret)
    path = _write(tmp_path, _external_at(loc))
    assert (path.parent / "link.bin").resolve() == secret.resolve() and secret.read_bytes() == targets.SECRET
    with pytest.raises(SourceError) as e:
        read(str(path))
    msg = str(e.value)
    assert "initializer 'w'" in msg and repr(loc) in msg and "leaves the model's folder" in msg, msg
    code, err = run_cli_argv(["convert", str(path), "-o", str(tmp_path / "o.nnapi")])
    assert code == 3 and "initializer 'w'" in err and repr(loc) in err and len(err.strip().splitlines()) == 1, err
    assert not list(tmp_path.glob("o.nnapi*"))
    for argv in (["coverage", str(path)], ["parity", str(path)]):
        code, err = run_cli_argv(argv)
        assert code == 3 and "initializer 'w'" in err and "Traceback" not in err, err


@pytest.mark.parametrize("extra,match", [
    ({"offset": "-1"}, "do not fit"),
    ({"offset": str(1 << 62)}, "do not fit"),
    ({"length": str(1 << 70)}, "do not fit"),
    ({"length": "-5"}, "do not fit"),
    ({"offset": "abc"}, "cannot be read"),
    ({"length": "95"}, "needs 96 bytes"),
])
def test_external_data_offset_and_length_abuse(tmp_path, extra, match):
    path = _write(tmp_path, _external_at("weights.bin", **extra))
    with pytest.raises(SourceError, match=match) as e:
        read(str(path))
    assert "'w'" in str(e.value)


@pytest.mark.parametrize("location,match", [
    ("missing.bin", "cannot be read"), (".", "cannot be read"), ("weights.bin\0.txt", "weights.bin"),
])
def test_external_data_unreadable(tmp_path, location, match):
    path = _write(tmp_path, _external_at(location))
    with pytest.raises(SourceError, match=match):
        read(str(path))


def test_external_data_from_bytes_needs_a_path():
    with pytest.raises(SourceError, match="initializer 'w' uses external data 'weights.bin'"):
        read(seeds.onnx_external())


def test_escapes_never_leak_through_the_mutators(tmp_path):
    """Every escaping location the mutators use, on every initializer: rejected, the secret never read."""
    for loc in mutators.ONNX_ESCAPES:
        for name in ("w", "bias"):
            m = _external()
            t = _init(m, name)
            t.ClearField("raw_data")
            del t.external_data[:]
            t.data_location = T.EXTERNAL
            e = t.external_data.add()
            e.key, e.value = "location", loc
            status, detail = targets.check("onnx", m.SerializeToString(), tmp_path)
            assert status == "rejected", (loc, name, detail)


# -- the command line ----------------------------------------------------------------------

@pytest.mark.parametrize("seed", ["conv_chain", "qdq_conv", "external"])
def test_cli_on_seed_models(tmp_path, seed):
    path = _write(tmp_path, seeds.onnx_seeds()[seed])
    for argv in (["convert", str(path), "-o", str(tmp_path / "o.nnapi")],
                 ["coverage", str(path), "--format", "json"]):
        code, err = run_cli_argv(argv)
        assert code == 0, err


@pytest.mark.parametrize("seed", ["conv_chain", "qdq_conv"])
def test_cli_parity_on_seed_models(tmp_path, seed):
    path = _write(tmp_path, seeds.onnx_seeds()[seed])
    code, err = run_cli_argv(["parity", str(path), "--samples", "1"])
    assert code == 0, err


def test_cli_parity_with_external_data(tmp_path):
    path = _write(tmp_path, seeds.onnx_external())
    code, err = run_cli_argv(["parity", str(path), "--samples", "1"])
    assert code == 0, err


@pytest.mark.parametrize("make,code", [(not_protobuf, 3), (cycle, 3), (missing_initializer, 3), (unknown_op, 2),
                                       (vendor_conv, 2)])
def test_cli_one_line_errors(tmp_path, make, code):
    m = make()
    path = _write(tmp_path, m if isinstance(m, bytes) else m.SerializeToString())
    for argv in (["convert", str(path), "-o", str(tmp_path / "o.nnapi")], ["parity", str(path)]):
        got, err = run_cli_argv(argv)
        assert got == code, err
        assert err.startswith("nnapi ") and "Traceback" not in err and "internal error" not in err, err
    got, err = run_cli_argv(["convert", str(path), "--partial", "-o", str(tmp_path / "p.nnapi")])
    assert got == (0 if code == 2 else 3), err
    got, err = run_cli_argv(["coverage", str(path), "--format", "json"])
    assert got == (0 if code == 2 else 3), err


def _int8_without_quantization(graph_inputs, nodes):
    import onnx
    from onnx import TensorProto, helper
    g = helper.make_graph(nodes, "g", graph_inputs,
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m.SerializeToString()


def test_partition_boundary_tensor_nnapi_cannot_type_is_left_out_when_unread():
    """Found by the fuzzer: an unsupported node makes an int8 tensor without quantization that a supported
    node lists but does not read (Dropout's ratio): the partition is built without it."""
    from onnx import TensorProto, helper

    from converters.onnx import convert
    data = _int8_without_quantization(
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        [helper.make_node("Cast", ["x"], ["t"], to=TensorProto.INT8),
         helper.make_node("Dropout", ["y", "t"], ["out"])])
    r = convert(data, partial=True)
    assert [n.supported for n in r.nodes] == [False, True]
    (p,) = r.partitions
    assert p.nodes == [1] and [r.source.main.tensors[t].name for t in p.inputs] == ["y"]
    assert len(p.model.inputs) == 1


def test_unread_graph_input_nnapi_cannot_type_gets_a_stand_in(tmp_path, capsys):
    """A valid model is never an error: an input no node reads keeps its place as the nearest NNAPI type
    (here int8 without quantization -> TENSOR_INT32), and the CLI prints that note."""
    from onnx import TensorProto, helper

    from converters.cli import main
    data = _int8_without_quantization(
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3]),
         helper.make_tensor_value_info("z", TensorProto.INT8, [1, 3])],
        [helper.make_node("Relu", ["y"], ["out"])])
    (tmp_path / "m.onnx").write_bytes(data)
    assert main(["convert", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.nnapi")]) == 0
    out = capsys.readouterr().out
    assert "unused by the model and declared TENSOR_INT32" in out
    import nnapi
    assert len(nnapi.load(str(tmp_path / "m.nnapi")).inputs) == 2
