"""Bool tensors (attention masks) through Reshape, Flatten, Unsqueeze, Transpose, Gather, Concat, Tile,
Expand and Slice: NNAPI's moves take no TENSOR_BOOL8, so they run on uint8 0/1 (converters/typed_moves.py);
compared with onnxruntime."""
import numpy as np
import pytest
from onnx import helper as h

from converters.onnx.authoring import make_model
from tests.converters.onnx.harness import run_converted, verify_levels

X = ("x", np.float32, [1, 2, 3, 4])
MOVES = {
    "Reshape": ([h.make_node("Reshape", ["m", "shape"], ["y"])], {"shape": np.array([2, 12], np.int64)}),
    "Flatten": ([h.make_node("Flatten", ["m"], ["y"], axis=2)], {}),
    "Unsqueeze": ([h.make_node("Flatten", ["m"], ["f"], axis=2), h.make_node("Unsqueeze", ["f", "axes"], ["y"])],
                  {"axes": np.array([1], np.int64)}),
    "Transpose": ([h.make_node("Transpose", ["m"], ["y"], perm=[0, 3, 1, 2])], {}),
    "Gather": ([h.make_node("Gather", ["m", "idx"], ["y"], axis=2)], {"idx": np.array([2, 0], np.int64)}),
    "Concat": ([h.make_node("Not", ["m"], ["n"]), h.make_node("Concat", ["m", "n"], ["y"], axis=1)], {}),
    "Tile": ([h.make_node("Tile", ["m", "reps"], ["y"])], {"reps": np.array([1, 1, 2, 1], np.int64)}),
    "Expand": ([h.make_node("Expand", ["m", "to"], ["y"])], {"to": np.array([3, 2, 3, 4], np.int64)}),
    "Slice": ([h.make_node("Slice", ["m", "starts", "ends", "axes"], ["y"])],
              {"starts": np.array([1], np.int64), "ends": np.array([4], np.int64), "axes": np.array([3], np.int64)}),
}


@pytest.mark.parametrize("move", sorted(MOVES))
def test_bool_mask_moves(move):
    nodes, inits = MOVES[move]
    data = make_model([h.make_node("Greater", ["x", "zero"], ["m"]), *nodes], [X], ["y"],
                      dict(inits, zero=np.float32(0)))
    r = verify_levels(data, need_level=3, seeds=(0, 1, 2))[8]
    ops = [o.code.name for o in r.model.operations]
    if move != "Expand":  # Expand of a bool is LOGICAL_AND with true, no move
        assert ops[-1] == "NOT_EQUAL" and "SELECT" in ops, ops


def test_bool_mask_reshape_then_logic():
    """The moved mask feeds bool logic (And), as BERT's extended attention mask does."""
    nodes = [h.make_node("Greater", ["x", "zero"], ["m"]), h.make_node("Reshape", ["m", "shape"], ["r"]),
             h.make_node("Less", ["x2", "zero"], ["k"]), h.make_node("And", ["r", "k"], ["y"])]
    data = make_model(nodes, [X, ("x2", np.float32, [2, 12])], ["y"],
                      {"zero": np.float32(0), "shape": np.array([2, 12], np.int64)})
    verify_levels(data, need_level=3, seeds=(0, 1, 2))


@pytest.mark.parametrize("dtype", [np.float32, np.bool_])
def test_gather_to_rank_5_drops_the_unit_axes_of_its_constant_indices(dtype):
    """TorchScript BERT's mask pick: Gather of [16, 1] by constant [1, 1, 1, 16] indices is [1, 1, 1, 16, 1]
    (rank 5), reshaped to [16]: the rank pass drops index axes of extent 1 and reshapes the indices."""
    x = ("x", np.float32, [1, 16])
    first = h.make_node("Greater", ["x", "zero"], ["m"]) if dtype == np.bool_ else h.make_node("Relu", ["x"], ["m"])
    nodes = [first, h.make_node("Flatten", ["m"], ["f"], axis=2), h.make_node("Gather", ["f", "idx"], ["g"], axis=0),
             h.make_node("Reshape", ["g", "shape"], ["y"])]
    idx = np.arange(16, dtype=np.int64)[::-1].reshape(1, 1, 1, 16).copy()
    data = make_model(nodes, [x], ["y"], {"zero": np.float32(0), "idx": idx, "shape": np.array([16], np.int64)})
    verify_levels(data, levels=(4, 8), seeds=(0, 1, 2))


EMB = np.random.default_rng(3).normal(size=(40, 8)).astype(np.float32)
INT_MOVES = {  # run-time int64 ids (int32 on NNAPI) through a move whose NNAPI op takes no TENSOR_INT32
    "Slice": (h.make_node("Slice", ["a", "st", "en", "ax"], ["e"]),
              {"st": np.array([2], np.int64), "en": np.array([9], np.int64), "ax": np.array([1], np.int64)}),
    "Transpose": (h.make_node("Transpose", ["a"], ["e"], perm=[1, 0]), {}),
}


@pytest.mark.parametrize("move", sorted(INT_MOVES))
def test_runtime_int64_ids_move_as_float32(move):
    node, inits = INT_MOVES[move]
    nodes = [h.make_node("Add", ["ids", "one"], ["a"]), node, h.make_node("Gather", ["emb", "e"], ["y"])]
    data = make_model(nodes, [("ids", np.int64, [1, 16])], ["y"], dict(inits, emb=EMB, one=np.int64(1)))
    r = verify_levels(data, levels=(4, 8), seeds=(0, 1, 2))[8]
    notes = " ".join(n.note or "" for n in r.nodes)
    assert "exact while every |value| <= 16777216" in notes, notes
    ops = [o.code.name for o in r.model.operations]
    assert ops.count("CAST") >= 2, ops


def _int_move(node) -> bytes:
    nodes = [h.make_node("Add", ["ids", "big"], ["a"]), node]
    return make_model(nodes, [("ids", np.int64, [1, 2])], ["y"], {"big": np.int64(2 ** 24)})


def test_int32_transpose_beyond_float_range_is_what_the_note_warns():
    """The float32 move is exact only up to 2^24 (the note's bound): 2^24 + 1 comes back as 2^24."""
    from converters.onnx import convert
    data = _int_move(h.make_node("Transpose", ["a"], ["y"], perm=[1, 0]))
    got = run_converted(convert(data, feature_level=8), [np.array([[1, 0]], np.int64)])[0]
    assert got.ravel().tolist() == [2 ** 24, 2 ** 24]


def test_int32_concat_is_exact_gather_mul_add():
    """Concat of run-time int ids (position ids, token-type ids) has an exact form: GATHER, MUL by a 0/1 mask
    and ADD (level 4), so values beyond 2^24 survive and no note is needed."""
    data = _int_move(h.make_node("Concat", ["a", "ids"], ["y"], axis=1))
    inputs = [np.array([[1, 7]], np.int64)]
    r = verify_levels(data, levels=(4, 8), need_level=4)[8]
    assert run_converted(r, inputs)[0].ravel().tolist() == [2 ** 24 + 1, 2 ** 24 + 7, 1, 7]
    assert "CAST" not in [o.code.name for o in r.model.operations] and not any(n.note for n in r.nodes)
