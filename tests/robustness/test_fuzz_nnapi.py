"""nnapi.load on hostile .nnapi files: success or NnapiError BAD_DATA with a message, never anything else.

Random mutations (fixed seed and count) plus hand-made structural defects
that get past the checksum (it is recomputed) to the model checks.
"""
import json
import mmap

import numpy as np
import pytest

import nnapi
from fuzz.mutators import nnapi_join, nnapi_split
from nnapi import ResultCode
from nnapi.serialize import HEADER, HEADER_SIZE

from .helpers import assert_behaves, mutated_inputs, peak_memory, seeds

N_MUTATIONS = 1500


def test_seed_models_are_valid(tmp_path):
    for name, data in seeds.nnapi_seeds().items():
        p = tmp_path / f"{name}.nnapi"
        p.write_bytes(data)
        assert nnapi.load(p).finished


def test_random_mutations(tmp_path):
    counts = assert_behaves("nnapi", mutated_inputs("nnapi", N_MUTATIONS), tmp_path)
    # the corpus reaches both outcomes: a fuzzer that only ever hits the checksum would prove nothing
    assert counts["rejected"] > N_MUTATIONS // 2 and counts["ok"] > 50, counts


def _load(tmp_path, data):
    p = tmp_path / "m.nnapi"
    p.write_bytes(data)
    return nnapi.load(p)


def _edit(data, fn):
    fields, meta, blob = nnapi_split(data)
    fn(meta)
    return nnapi_join(fields, meta, blob)


def _demo():
    return seeds.nnapi_seeds()["demo"]


def _qconv():
    return seeds.nnapi_seeds()["quant_conv"]


def _while():
    return seeds.nnapi_seeds()["while"]


def _ops(meta, sg=0):
    return meta["subgraphs"][sg]["operations"]


def _opnds(meta, sg=0):
    return meta["subgraphs"][sg]["operands"]


def _set(path_fn, value):
    def fn(meta):
        obj, key = path_fn(meta)
        obj[key] = value
    return fn


# (id, seed model, edit of the metadata, a fragment the message must contain)
STRUCTURAL = [
    ("self-loop", _demo, lambda m: _ops(m)[1].__setitem__("inputs", [7, 2, 5]), "cycle"),
    ("cycle", _demo, lambda m: (_ops(m)[0].__setitem__("inputs", [7, 1, 4])), "cycle"),
    ("operation input out of range", _demo, lambda m: _ops(m)[0].__setitem__("inputs", [0, 99, 4]), "99"),
    ("operation output negative", _demo, lambda m: _ops(m)[2].__setitem__("outputs", [-1]), "-1"),
    ("operation index huge", _demo, lambda m: _ops(m)[2].__setitem__("outputs", [1 << 62]), "out of range"),
    ("model input out of range", _demo, lambda m: m["subgraphs"][0].__setitem__("inputs", [9]), "9"),
    ("model output is constant", _demo, lambda m: m["subgraphs"][0].__setitem__("outputs", [1]), "constant"),
    ("two writers", _demo, lambda m: _ops(m).append(dict(_ops(m)[0])), "already written"),
    ("unknown operation code", _demo, lambda m: _ops(m)[0].__setitem__("code", 9999), "9999"),
    ("unknown operand code", _demo, lambda m: _opnds(m)[0].__setitem__("code", 99), "99"),
    ("huge dimension of a constant", _demo, lambda m: _opnds(m)[2].__setitem__("dims", [1, 3, 5, 1 << 40]),
     "bytes"),
    ("huge rank", _demo, lambda m: _opnds(m)[0].__setitem__("dims", [1 << 20] * 8), "bytes"),
    ("negative dimension", _demo, lambda m: _opnds(m)[0].__setitem__("dims", [1, -3, 5, 2]), "negative"),
    ("value offset beyond blob", _demo, lambda m: _opnds(m)[2]["value"].__setitem__("offset", 1 << 40),
     "outside"),
    ("negative value offset", _demo, lambda m: _opnds(m)[2]["value"].__setitem__("offset", -64), "outside"),
    ("value length too short", _demo, lambda m: _opnds(m)[2]["value"].__setitem__("length", 100), "100"),
    ("value length negative", _demo, lambda m: _opnds(m)[1]["value"].__setitem__("length", -8), "outside"),
    ("scalar with dimensions", _demo, lambda m: _opnds(m)[4].__setitem__("dims", [2]), "scalar"),
    ("NaN scale", _qconv, lambda m: _opnds(m)[0].__setitem__("scale", float("nan")), "scale"),
    ("Inf scale", _qconv, lambda m: _opnds(m)[7].__setitem__("scale", float("inf")), "scale"),
    ("zero scale", _qconv, lambda m: _opnds(m)[0].__setitem__("scale", 0.0), "scale"),
    ("negative scale", _qconv, lambda m: _opnds(m)[7].__setitem__("scale", -1.0), "scale"),
    ("zero point above range", _qconv, lambda m: _opnds(m)[0].__setitem__("zero_point", 256), "zero point"),
    ("zero point below range", _qconv, lambda m: _opnds(m)[7].__setitem__("zero_point", -1), "zero point"),
    ("scale on a float operand", _demo, lambda m: _opnds(m)[0].__setitem__("scale", 0.5), "scale"),
    ("too few per-channel scales", _qconv,
     lambda m: _opnds(m)[1].__setitem__("channel_quant", {"scales": [0.1], "channel_dim": 0}), "scales"),
    ("NaN per-channel scale", _qconv,
     lambda m: _opnds(m)[1]["channel_quant"].__setitem__("scales", [0.1, float("nan"), 0.3, 0.4]), "scale"),
    ("per-channel dim out of range", _qconv,
     lambda m: _opnds(m)[1]["channel_quant"].__setitem__("channel_dim", 7), "channel_dim"),
    ("per-channel filter without scales", _qconv, lambda m: _opnds(m)[1].__setitem__("channel_quant", None),
     "per-channel"),
    ("bias zero point not 0", _qconv, lambda m: _opnds(m)[2].__setitem__("zero_point", 5), "zero point"),
    ("model name not a string", _demo, lambda m: m["subgraphs"][0].__setitem__("name", [1]), "name"),
    ("operand name not a string", _demo, lambda m: _opnds(m)[0].__setitem__("name", {"x": 1}), "name"),
    ("subgraph references itself", _while, lambda m: _opnds(m, 1)[0].__setitem__("subgraph", 1)
     if _opnds(m, 1)[0].get("subgraph") is not None else _opnds(m)[0].__setitem__("subgraph", 0), "subgraph"),
    ("subgraph reference out of range", _while, lambda m: _opnds(m)[0].__setitem__("subgraph", 7), "7"),
    ("main out of range", _while, lambda m: m.__setitem__("main", 5), "5"),
    ("no subgraphs", _demo, lambda m: m.__setitem__("subgraphs", []), "subgraphs"),
    ("operands not a list", _demo, lambda m: m["subgraphs"][0].__setitem__("operands", {"a": 1}), "metadata"),
    ("dims not a list", _demo, lambda m: _opnds(m)[0].__setitem__("dims", "1,2"), None),
    ("unknown lifetime", _demo, lambda m: _opnds(m)[0].__setitem__("lifetime", 42), "42"),
    ("wrong format tag", _demo, lambda m: m.__setitem__("format", "onnx"), "nnapi-model"),
]


@pytest.mark.parametrize("make,edit,fragment", [c[1:] for c in STRUCTURAL], ids=[c[0] for c in STRUCTURAL])
def test_structural_defect_is_bad_data(tmp_path, make, edit, fragment):
    data = _edit(make(), edit)
    with pytest.raises(nnapi.NnapiError) as e:
        _load(tmp_path, data)
    assert e.value.code == ResultCode.BAD_DATA
    assert str(tmp_path / "m.nnapi") in e.value.message  # names the file
    if fragment:
        assert fragment in e.value.message, e.value.message


def test_while_subgraph_cycle_is_rejected(tmp_path):
    """The body subgraph references the main model: a cycle of subgraph references."""
    def edit(meta):
        body = meta["subgraphs"][2]["operands"]
        body.append({"code": 11, "dims": [], "scale": 0.0, "zero_point": 0, "name": "loop", "lifetime": 6,
                     "channel_quant": None, "value": None, "subgraph": 0})
    with pytest.raises(nnapi.NnapiError, match="cycle"):
        _load(tmp_path, _edit(_while(), edit))


HEADER_DEFECTS = [
    ("truncated header", lambda d: d[:100], "too short"),
    ("truncated blob", lambda d: d[:-1], "do not fit"),
    ("appended byte", lambda d: d + b"\0", "do not fit"),
    ("bad magic", lambda d: b"NNAPIMDX" + d[8:], "magic"),
    ("future version", lambda d: d[:8] + (2).to_bytes(4, "little") + d[12:], "version 2"),
    ("metadata length huge", lambda d: d[:16] + (1 << 62).to_bytes(8, "little") + d[24:], "metadata length"),
    ("blob offset unaligned", lambda d: d[:24] + (HEADER.unpack_from(d)[4] + 1).to_bytes(8, "little") + d[32:],
     "blob offset"),
    ("flipped metadata bit", lambda d: d[:HEADER_SIZE + 5] + bytes([d[HEADER_SIZE + 5] ^ 1]) + d[HEADER_SIZE + 6:],
     "checksum"),
    ("flipped blob bit", lambda d: d[:-3] + bytes([d[-3] ^ 0x40]) + d[-2:], "checksum"),
    ("empty file", lambda d: b"", "too short"),
]


@pytest.mark.parametrize("edit,fragment", [c[1:] for c in HEADER_DEFECTS], ids=[c[0] for c in HEADER_DEFECTS])
def test_header_defect_is_bad_data(tmp_path, edit, fragment):
    with pytest.raises(nnapi.NnapiError) as e:
        _load(tmp_path, edit(_qconv()))
    assert e.value.code == ResultCode.BAD_DATA and fragment in e.value.message, e.value.message


def test_metadata_not_json_with_valid_checksum(tmp_path):
    fields, meta, blob = nnapi_split(_demo())
    for meta_bytes in (b"{", b"\xff\xfe", b"[]", b"null", b"1e999", json.dumps({"format": "nnapi-model"}).encode(),
                       b"[" * 100000 + b"]" * 100000):
        with pytest.raises(nnapi.NnapiError) as e:
            _load(tmp_path, nnapi_join(fields, None, blob, meta_bytes=meta_bytes))
        assert e.value.code == ResultCode.BAD_DATA and e.value.message


def test_deeply_nested_json_does_not_crash(tmp_path):
    fields, meta, blob = nnapi_split(_demo())
    deep = json.dumps(meta).replace('"name": "demo"', '"name": ' + "[" * 50000 + "]" * 50000)
    with pytest.raises(nnapi.NnapiError):
        _load(tmp_path, nnapi_join(fields, None, blob, meta_bytes=deep.encode()))


def test_memory_stays_bounded_by_the_input(tmp_path):
    """Claimed sizes (huge dims, huge lengths) never turn into allocations."""
    cases = [_edit(_demo(), lambda m: _opnds(m)[2].__setitem__("dims", [1 << 20, 1 << 20, 1 << 20, 1 << 20])),
             _edit(_demo(), lambda m: _opnds(m)[2]["value"].__setitem__("length", 1 << 40)),
             _edit(_qconv(), lambda m: _opnds(m)[1].__setitem__("channel_quant",
                                                               {"scales": [1.0] * 100000, "channel_dim": 0})),
             _qconv()[:16] + (1 << 29).to_bytes(8, "little") + _qconv()[24:]]
    for k, data in enumerate(cases):
        p = tmp_path / f"c{k}.nnapi"
        p.write_bytes(data)
        peak = peak_memory(nnapi.load, p)
        assert peak < 16 * len(data) + (8 << 20), (k, peak)


def test_large_constant_is_mapped_not_copied(tmp_path):
    """A loaded model's big constants are views of the mapped file."""
    m = nnapi.Model()
    big = m.add_operand(nnapi.OperandType(nnapi.OperandCode.TENSOR_FLOAT32, [256, 1024]))
    x = m.add_operand(nnapi.OperandType(nnapi.OperandCode.TENSOR_FLOAT32, [256, 1024]))
    f = m.add_operand(nnapi.OperandType(nnapi.OperandCode.INT32))
    y = m.add_operand(nnapi.OperandType(nnapi.OperandCode.TENSOR_FLOAT32, [256, 1024]))
    value = np.ones((256, 1024), np.float32)
    m.set_operand_value(big, value)
    m.set_operand_value(f, np.int32(0))
    m.add_operation(nnapi.OperationCode.ADD, [x, big, f], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    p = tmp_path / "big.nnapi"
    nnapi.save(m, p)
    loaded = nnapi.load(p)
    memory, offset, length = loaded.operands[big].memory_ref
    assert isinstance(memory._mapping, mmap.mmap) and length == value.nbytes
    assert not loaded.operands[big].value.flags.owndata and np.array_equal(loaded.operands[big].value, value)
