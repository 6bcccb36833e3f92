"""EMBEDDING_LOOKUP, HASHTABLE_LOOKUP, LSH_PROJECTION and RANDOM_MULTINOMIAL through the public API."""
import numpy as np
import pytest

from executor.kernels.lookup import fingerprint64
from nnapi import NnapiError, OperandCode as C, OperationCode as Op, ResultCode
from tests.executor.op_harness import build, run, scalar, t


def test_embedding_lookup_selects_rows():
    values = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    m = build(Op.EMBEDDING_LOOKUP, [(t(C.TENSOR_INT32, [3]), None), (t(C.TENSOR_FLOAT32, [3, 2, 2]), None)],
              [t(C.TENSOR_FLOAT32, [3, 2, 2])])
    out = run(m, np.array([2, 0, 2], np.int32), values)[0]
    np.testing.assert_array_equal(out, [[[8, 9], [10, 11]], [[0, 1], [2, 3]], [[8, 9], [10, 11]]])


def test_embedding_lookup_out_of_range_fails():
    m = build(Op.EMBEDDING_LOOKUP, [(t(C.TENSOR_INT32, [1]), None), (t(C.TENSOR_INT32, [2, 1]), None)],
              [t(C.TENSOR_INT32, [1, 1])])
    with pytest.raises(NnapiError) as e:
        run(m, np.array([2], np.int32), np.array([[5], [6]], np.int32))
    assert e.value.code == ResultCode.OP_FAILED and "out of range" in str(e.value)


def test_hashtable_lookup_hits_and_misses():
    m = build(Op.HASHTABLE_LOOKUP, [(t(C.TENSOR_INT32, [3]), None), (t(C.TENSOR_INT32, [3]), None),
                                    (t(C.TENSOR_INT32, [3, 2]), None)],
              [t(C.TENSOR_INT32, [3, 2]), t(C.TENSOR_QUANT8_ASYMM, [3], 1.0, 0)])
    out, hits = run(m, np.array([10, 4, -5], np.int32), np.array([-5, 3, 10], np.int32),
                    np.array([[1, 2], [3, 4], [5, 6]], np.int32))
    np.testing.assert_array_equal(out, [[5, 6], [0, 0], [1, 2]])
    np.testing.assert_array_equal(hits, [1, 0, 1])


@pytest.mark.parametrize("length, expected", [
    (0, 0x9AE16A3B2F90404F), (3, 0x26B4DA356B8B9558), (5, 0x4D7B2599824EB444), (12, 0x4BBF2B58E806A1EB),
    (20, 0x337C05223C6016F3), (40, 0xE75E3CEC4CEE5710), (100, 0x7AC913E1CA079610)])
def test_fingerprint64_matches_reference_values(length, expected):
    # expected values from Google's farmhash (pyfarmhash fingerprint64) for bytes (7 i + 1) mod 256
    key = np.array([(7 * i + 1) % 256 for i in range(length)], dtype=np.uint8)
    assert int(fingerprint64(key[None, :])[0]) == expected


def _lsh(kind, hash_fns, x, weight):
    num_hash, num_bits = hash_fns.shape
    out = num_hash * num_bits if kind == 2 else num_hash
    m = build(Op.LSH_PROJECTION, [(t(C.TENSOR_FLOAT32, list(hash_fns.shape)), hash_fns),
                                  (t(C.TENSOR_INT32, list(x.shape)), None),
                                  (t(C.TENSOR_FLOAT32, [x.shape[0]]), weight), scalar(C.INT32, kind)],
              [t(C.TENSOR_INT32, [out])])
    return m, run(m, x)[0]


def test_lsh_sparse_signatures_pack_the_dense_bits():
    hash_fns = np.array([[0.5, -1.25, 3.0], [7.0, 0.125, -2.0]], np.float32)
    x = np.array([[1, 2], [-3, 40], [500, 6]], np.int32)
    weight = np.array([0.5, 1.0, 2.0], np.float32)
    _, dense = _lsh(2, hash_fns, x, weight)
    bits = dense.reshape(2, 3)
    assert set(np.unique(dense)) <= {0, 1}
    packed = bits[:, 0] * 4 + bits[:, 1] * 2 + bits[:, 2]
    np.testing.assert_array_equal(_lsh(1, hash_fns, x, weight)[1], packed)
    m, sparse = _lsh(3, hash_fns, x, weight)
    np.testing.assert_array_equal(sparse, packed + np.array([0, 8]))  # offset k * 2^num_bits
    assert m.min_feature_level() == 3
    assert any("needs feature level 3" in p for p in m.validate(feature_level=1))


def test_random_multinomial_follows_dominant_logits():
    m = build(Op.RANDOM_MULTINOMIAL, [(t(C.TENSOR_FLOAT32, [2, 3]), None), scalar(C.INT32, 50),
                                      (t(C.TENSOR_INT32, [2]), [1, 2])], [t(C.TENSOR_INT32, [2, 50])])
    logits = np.array([[0.0, -100.0, -100.0], [-100.0, -100.0, 0.0]], np.float32)
    out = run(m, logits)[0]
    np.testing.assert_array_equal(out, [[0] * 50, [2] * 50])
    np.testing.assert_array_equal(run(m, logits)[0], out)  # same seeds, same samples


def test_validate_reports_too_low_feature_level():
    m = build(Op.EMBEDDING_LOOKUP, [(t(C.TENSOR_INT32, [1]), None), (t(C.TENSOR_INT32, [2, 1]), None)],
              [t(C.TENSOR_INT32, [1, 1])])
    assert m.min_feature_level() == 3
    assert any("needs feature level 3" in p for p in m.validate(feature_level=2))


def test_finish_rejects_unsupported_types():
    m = build(Op.HASHTABLE_LOOKUP, [(t(C.TENSOR_INT32, [1]), None), (t(C.TENSOR_INT32, [1]), None),
                                    (t(C.TENSOR_FLOAT16, [1, 2]), None)],
              [t(C.TENSOR_FLOAT16, [1, 2]), t(C.TENSOR_QUANT8_ASYMM, [1], 1.0, 0)], finish=False)
    with pytest.raises(NnapiError) as e:
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA
    m = build(Op.HASHTABLE_LOOKUP, [(t(C.TENSOR_INT32, [1]), None), (t(C.TENSOR_INT32, [1]), None),
                                    (t(C.TENSOR_FLOAT32, [1, 2]), None)],
              [t(C.TENSOR_FLOAT32, [1, 2]), t(C.TENSOR_QUANT8_ASYMM, [1], 0.5, 0)], finish=False)
    with pytest.raises(NnapiError) as e:  # hits must be scale 1, zero point 0
        m.finish()
    assert e.value.code == ResultCode.BAD_DATA
