"""The .nnapi file format: exact round trip, atomic writes, and corrupted files."""

import numpy as np
import pytest

import nnapi
from nnapi import NnapiError, OperandCode as C, OperandType, OperationCode as Op, ResultCode
from nnapi.serialize import HEADER_SIZE, to_bytes
from tests.executor.op_harness import run

from tests.nnapi.helpers import SHAPE, add_model


def rich_model():
    """Named operands, a large referenced constant, per-channel params, an omitted operand, relax flag."""
    m = nnapi.Model(name="rich")
    a = m.add_operand(OperandType(C.TENSOR_FLOAT32, SHAPE), name="a/input:0")
    b = m.add_operand(OperandType(C.TENSOR_FLOAT32, SHAPE), name="b")
    fuse = m.add_operand(OperandType(C.INT32), name="fuse")
    out = m.add_operand(OperandType(C.TENSOR_FLOAT32, SHAPE), name="out")
    w = m.add_operand(OperandType(C.TENSOR_QUANT8_SYMM_PER_CHANNEL, [2, 1, 1, 3]), name="w")
    q = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, [4], 0.5, 3), name="q")
    table = m.add_operand(OperandType(C.TENSOR_FLOAT32, [50]), name="table")  # 200 bytes: referenced
    m.set_operand_value(table, np.arange(50, dtype=np.float32))
    m.set_operand_value(b, np.linspace(-1, 1, 30, dtype=np.float32).reshape(SHAPE))
    m.set_operand_value(fuse, np.int32(3))
    m.set_operand_symm_per_channel_quant_params(w, [0.25, 0.5], 0)
    m.set_operand_value(w, np.arange(6, dtype=np.int8).reshape(2, 1, 1, 3))
    m.set_operand_value(q, np.array([1, 2, 3, 4], np.uint8))
    m.add_operation(Op.ADD, [a, b, fuse], [out])
    m.identify_inputs_and_outputs([a], [out])
    m.relax_computation_float32_to_float16(True)
    m.finish()
    return m


def same_model(x, y):
    assert (x.name, x.inputs, x.outputs, x.relaxed) == (y.name, y.inputs, y.outputs, y.relaxed)
    assert len(x.operands) == len(y.operands)
    for p, q in zip(x.operands, y.operands):
        assert (p.type, p.name, p.channel_quant) == (q.type, q.name, q.channel_quant)
        assert (p.value is None) == (q.value is None)
        if p.value is not None:
            assert p.value.tobytes() == q.value.tobytes()
    assert [(o.code, o.inputs, o.outputs) for o in x.operations] == [(o.code, o.inputs, o.outputs) for o in y.operations]


def test_round_trip_is_exact(tmp_path):
    m = rich_model()
    path = tmp_path / "m.nnapi"
    nnapi.save(m, path)
    loaded = nnapi.load(path)
    same_model(m, loaded)
    x = np.ones(SHAPE, np.float32)
    np.testing.assert_array_equal(run(m, x)[0], run(loaded, x)[0])


def test_blob_is_aligned_and_mapped(tmp_path):
    data = to_bytes(rich_model())
    blob_offset = int.from_bytes(data[24:32], "little")
    assert blob_offset % 64 == 0
    path = tmp_path / "m.nnapi"
    path.write_bytes(data)
    loaded = nnapi.load(path)
    small, big = loaded.operands[1], loaded.operands[6]
    assert small.memory_ref is None  # 120 bytes: copied
    assert big.memory_ref is not None and big.memory_ref[0]._mapping is not None  # mapped from the file
    np.testing.assert_array_equal(big.value, np.arange(50, dtype=np.float32))


def test_save_is_atomic_and_keeps_existing_file(tmp_path, monkeypatch):
    path = tmp_path / "m.nnapi"
    path.write_bytes(b"old contents")
    import nnapi.serialize as ser

    def boom(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(ser.os, "fsync", boom)
    with pytest.raises(KeyboardInterrupt):
        nnapi.save(rich_model(), path)
    assert path.read_bytes() == b"old contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.nnapi"]


def corrupt_cases(good: bytes):
    yield "empty", b""
    yield "truncated header", good[:40]
    yield "truncated blob", good[:-5]
    yield "bad magic", b"XXXXXXXX" + good[8:]
    yield "future version", good[:8] + (99).to_bytes(4, "little") + good[12:]
    yield "huge metadata length", good[:16] + (1 << 62).to_bytes(8, "little") + good[24:]
    yield "misaligned blob", good[:24] + (int.from_bytes(good[24:32], "little") + 1).to_bytes(8, "little") + good[32:]
    flipped = bytearray(good)
    flipped[HEADER_SIZE + 10] ^= 0x40
    yield "flipped metadata bit", bytes(flipped)
    flipped = bytearray(good)
    flipped[-3] ^= 1
    yield "flipped blob bit", bytes(flipped)


@pytest.mark.parametrize("name", [n for n, _ in corrupt_cases(b"x" * 400)])
def test_corrupted_files_are_bad_data(tmp_path, name):
    good = to_bytes(rich_model())
    data = dict(corrupt_cases(good))[name]
    path = tmp_path / "bad.nnapi"
    path.write_bytes(data)
    with pytest.raises(NnapiError) as e:
        nnapi.load(path)
    assert e.value.code == ResultCode.BAD_DATA and str(path) in e.value.message


def test_consistent_checksum_but_invalid_model_is_bad_data(tmp_path):
    """A well-formed file whose metadata breaks a model rule goes through the Model API checks."""
    import hashlib
    import json
    from nnapi.serialize import HEADER, MAGIC
    good = to_bytes(add_model())
    meta_len = int.from_bytes(good[16:24], "little")
    meta = json.loads(good[HEADER_SIZE:HEADER_SIZE + meta_len])
    meta["subgraphs"][0]["operations"][0]["inputs"] = [0, 1, 77]  # out of range
    new_meta = json.dumps(meta).encode()
    blob_offset = (HEADER_SIZE + len(new_meta) + 63) // 64 * 64
    blob = good[int.from_bytes(good[24:32], "little"):]
    header = HEADER.pack(MAGIC, 1, 0, len(new_meta), blob_offset, len(blob), hashlib.sha256(new_meta + blob).digest())
    data = header.ljust(HEADER_SIZE, b"\0") + new_meta
    data += b"\0" * (blob_offset - len(data)) + blob
    path = tmp_path / "invalid.nnapi"
    path.write_bytes(data)
    with pytest.raises(NnapiError) as e:
        nnapi.load(path)
    assert e.value.code == ResultCode.BAD_DATA and "77" in e.value.message
