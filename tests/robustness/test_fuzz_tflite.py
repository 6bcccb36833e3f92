"""The TFLite reader and converter on hostile .tflite files: success (possibly with unsupported
nodes) or SourceError / ConversionError with a message, never another exception.

Random byte-level and structural mutations (fixed seed and count) of small
authored models, plus defects authored on purpose with GraphBuilder.
"""
import numpy as np
import pytest

from converters.convert import ConversionError
from converters.source_graph import SourceError
from converters.tflite import convert, read
from converters.tflite.authoring import GraphBuilder

from .helpers import assert_behaves, mutated_inputs, peak_memory, seeds

N_MUTATIONS = 1500


def test_seed_models_are_valid():
    quant = convert(seeds.tflite_quant_conv())
    assert [n.op for n in quant.nodes] == ["CONV_2D", "RESHAPE", "CONCATENATION", "ADD"]
    flt = convert(seeds.tflite_float_chain())
    assert flt.complete and flt.model is not None


def test_random_mutations(tmp_path):
    counts = assert_behaves("tflite", mutated_inputs("tflite", N_MUTATIONS), tmp_path)
    assert counts["rejected"] > N_MUTATIONS // 3 and counts["ok"] > 100, counts


# -- authored defects ------------------------------------------------------------------

def _binary(a_shape=(1, 3, 5, 2), **tensor_kw):
    """out = a + b as a GraphBuilder (not finished), for defects to be added to."""
    g = GraphBuilder()
    a = g.input("a", list(a_shape), **tensor_kw)
    b = g.input("b", [1, 3, 5, 2], **tensor_kw)
    out = g.tensor("out", [1, 3, 5, 2], **tensor_kw)
    g.op("ADD", [a, b], [out], "AddOptions")
    g.output(out)
    return g, (a, b, out)


def _chain():
    g = GraphBuilder()
    a = g.input("a", [2, 2])
    t1 = g.tensor("t1", [2, 2])
    t2 = g.tensor("t2", [2, 2])
    g.op("ADD", [a, a], [t1], "AddOptions")
    g.op("MUL", [t1, a], [t2], "MulOptions")
    g.output(t2)
    return g, (a, t1, t2)


def self_loop():
    g, (a, b, out) = _binary()
    g.sg.operators[0].inputs = [a, out]
    return g.finish()


def cycle():
    g, (a, t1, t2) = _chain()
    g.sg.operators[0].inputs = [a, t2]
    return g.finish()


def out_of_order():
    g, _ = _chain()
    g.sg.operators.reverse()
    return g.finish()


def tensor_index_out_of_range():
    g, (a, b, out) = _binary()
    g.sg.operators[0].inputs = [a, 17]
    return g.finish()


def negative_tensor_index():
    g, (a, b, out) = _binary()
    g.sg.operators[0].inputs = [a, -5]
    return g.finish()


def required_input_left_out():
    g, (a, b, out) = _binary()
    g.sg.operators[0].inputs = [a, -1]
    return g.finish()


def too_few_inputs():
    g, (a, b, out) = _binary()
    g.sg.operators[0].inputs = [a]
    return g.finish()


def no_outputs():
    g, (a, b, out) = _binary()
    g.sg.operators[0].outputs = []
    return g.finish()


def graph_output_out_of_range():
    g, _ = _binary()
    g.sg.outputs = [99]
    return g.finish()


def two_writers():
    g, (a, b, out) = _binary()
    g.op("MUL", [a, b], [out], "MulOptions")
    return g.finish()


def writes_graph_input():
    g, (a, b, out) = _binary()
    g.op("MUL", [a, b], [a], "MulOptions")
    return g.finish()


def opcode_index_out_of_range():
    g, _ = _binary()
    g.sg.operators[0].opcodeIndex = 5
    return g.finish()


def buffer_index_out_of_range():
    g, (a, b, out) = _binary()
    g.sg.tensors[b].buffer = 40
    return g.finish()


def huge_dimension_const():
    g = GraphBuilder()
    a = g.input("a", [2])
    k = g.const("k", np.ones(2, np.float32))
    g.sg.tensors[k].shape = [1 << 30, 1 << 30]
    out = g.tensor("out", [2])
    g.op("ADD", [a, k], [out], "AddOptions")
    g.output(out)
    return g.finish()


def huge_dimension():
    g, (a, b, out) = _binary()
    g.sg.tensors[a].shape = [0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF, 2]
    return g.finish()


def huge_rank():
    g, (a, b, out) = _binary()
    g.sg.tensors[a].shape = [2] * 64
    return g.finish()


def negative_dimension():
    g, (a, b, out) = _binary()
    g.sg.tensors[a].shape = [1, -7, 5, 2]
    return g.finish()


def wrong_buffer_length():
    g = GraphBuilder()
    a = g.input("a", [4])
    k = g.const("k", np.ones(4, np.float32))
    g.root.buffers[-1].data = g.root.buffers[-1].data[:-3]
    out = g.tensor("out", [4])
    g.op("ADD", [a, k], [out], "AddOptions")
    g.output(out)
    return g.finish()


def _quant_add(scale=0.5, zero_point=3, tensor="a"):
    g = GraphBuilder()
    q = dict(scale=0.5, zero_point=3)
    a = g.input("a", [1, 4], "UINT8", **(dict(scale=scale, zero_point=zero_point) if tensor == "a" else q))
    b = g.input("b", [1, 4], "UINT8", **q)
    out = g.tensor("out", [1, 4], "UINT8", **(dict(scale=scale, zero_point=zero_point) if tensor == "out" else q))
    g.op("ADD", [a, b], [out], "AddOptions")
    g.output(out)
    return g.finish()


def nan_scale():
    return _quant_add(scale=float("nan"))


def inf_scale():
    return _quant_add(scale=float("inf"), tensor="out")


def zero_scale():
    return _quant_add(scale=0.0)


def negative_scale():
    return _quant_add(scale=-0.5, tensor="out")


def zero_point_out_of_range():
    return _quant_add(zero_point=300)


def zero_point_negative_uint8():
    return _quant_add(zero_point=-4, tensor="out")


def per_channel_bad_axis():
    data = bytearray(seeds.tflite_quant_conv())
    from ai_edge_litert import schema_py_generated as schema
    import flatbuffers
    m = schema.ModelT.InitFromPackedBuf(bytes(data), 0)
    m.subgraphs[0].tensors[1].quantization.quantizedDimension = 9
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _if_model(then_index: int):
    """An IF whose then-branch is subgraph `then_index` (else: subgraph 0, the model itself)."""
    g = GraphBuilder()
    c = g.input("c", [1], "BOOL")
    x = g.input("x", [2])
    out = g.tensor("out", [2])
    g.op("IF", [c, x], [out], "IfOptions", then_subgraph_index=then_index, else_subgraph_index=0)
    g.output(out)
    return g.finish()


def subgraph_index_out_of_range():
    return _if_model(5)


def subgraph_refers_to_itself():
    return _if_model(0)


def not_tflite():
    return b"\x10\x00\x00\x00ONNX" + b"\0" * 64


def truncated():
    return seeds.tflite_float_chain()[:200]


# defects the reader itself must reject (SourceError naming the problem)
READER_REJECTS = [
    (self_loop, "before operator"), (cycle, "before operator"), (out_of_order, "before operator"),
    (tensor_index_out_of_range, "refers to tensor 17"), (negative_tensor_index, "refers to tensor -5"),
    (required_input_left_out, "required input"), (too_few_inputs, "needs at least 2"),
    (no_outputs, "outputs"), (graph_output_out_of_range, "refers to tensor 99"),
    (two_writers, "written by operators"), (writes_graph_input, "subgraph input"),
    (opcode_index_out_of_range, "opcode index 5"), (buffer_index_out_of_range, "buffer 40"),
    (huge_dimension_const, "needs"), (negative_dimension, "invalid dimensions"),
    (wrong_buffer_length, "needs 16 bytes"), (subgraph_index_out_of_range, "then_subgraph_index 5"),
    (not_tflite, "not a TFLite"), (truncated, "malformed"),
]


@pytest.mark.parametrize("make,fragment", READER_REJECTS, ids=[f.__name__ for f, _ in READER_REJECTS])
def test_reader_rejects(make, fragment):
    data = make()
    with pytest.raises(SourceError) as e:
        read(data)
    assert fragment in str(e.value), str(e.value)
    with pytest.raises(SourceError):
        convert(data)


# defects the reader may pass on; the conversion then reports the node unsupported (or
# rejects the model), and never produces an NNAPI model with the defect
CONVERTER_REJECTS = [nan_scale, inf_scale, zero_scale, negative_scale, zero_point_out_of_range,
                     zero_point_negative_uint8, per_channel_bad_axis, huge_rank, huge_dimension, subgraph_refers_to_itself]


@pytest.mark.parametrize("make", CONVERTER_REJECTS, ids=[f.__name__ for f in CONVERTER_REJECTS])
def test_conversion_rejects(make):
    data = make()
    try:
        result = convert(data)
    except (SourceError, ConversionError) as e:
        assert str(e)
        return
    assert not result.complete and result.model is None
    assert all(n.reason for n in result.unsupported)
    result = convert(data, partial=True)  # partitions of the other nodes are still valid models
    for m in result.models:
        assert m.finished and not m.validate()


def test_memory_stays_bounded_by_the_input():
    """Claimed sizes never turn into allocations: huge shapes, huge buffers, huge ranks."""
    for make in (huge_dimension_const, huge_dimension, huge_rank):
        data = make()
        assert peak_memory(convert, data) < 200 * len(data) + (8 << 20), make.__name__
