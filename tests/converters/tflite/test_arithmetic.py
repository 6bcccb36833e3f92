"""TFLite ADD/SUB/MUL/DIV -> NNAPI, compared with LiteRT at feature levels 1, 3, 4, 8."""
import pytest

from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.harness import assert_matches_litert, unsupported_reason

TYPES = {
    "float32": ("FLOAT32", {}),
    "uint8": ("UINT8", dict(scale=0.05, zero_point=120)),
    "int8": ("INT8", dict(scale=0.04, zero_point=-3)),
}
OPTIONS = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions"}
# lowest NNAPI feature level per (op, type), from the NNAPI operation docs
MIN_LEVEL = {("ADD", "float32"): 1, ("ADD", "uint8"): 1, ("ADD", "int8"): 4,
             ("MUL", "float32"): 1, ("MUL", "uint8"): 1, ("MUL", "int8"): 4,
             ("SUB", "float32"): 2, ("SUB", "uint8"): 3, ("SUB", "int8"): 4,
             ("DIV", "float32"): 2}


def binary_model(op, type_name, activation="NONE"):
    dt, q = TYPES[type_name]
    out_q = dict(q, scale=q["scale"] * 2) if q else q  # a different output scale exercises requantization
    g = GraphBuilder()
    x = g.input("x", [1, 3, 5, 2], dt, **q)
    y = g.input("y", [1, 1, 5, 2], dt, **q)  # broadcast along H
    out = g.tensor("out", [1, 3, 5, 2], dt, **out_q)
    g.op(op, [x, y], [out], OPTIONS[op], fused_activation_function=activation)
    g.output(out)
    return g.finish()


@pytest.mark.parametrize("level", [1, 3, 4, 8])
@pytest.mark.parametrize("op,type_name", sorted(MIN_LEVEL))
def test_binary_matches_litert(op, type_name, level):
    data = binary_model(op, type_name, "RELU6" if op != "DIV" else "NONE")
    # int8 below level 4 is rewritten to uint8, so it needs the uint8 level there
    need = MIN_LEVEL[(op, type_name)] if level >= 4 else MIN_LEVEL[(op, "uint8" if type_name == "int8" else type_name)]
    if level < need:
        assert unsupported_reason(data, level).reason_code == "feature_level_too_low"
        return
    result = assert_matches_litert(data, level)
    assert result.nodes[0].nnapi_ops == [op]
    assert result.nodes[0].min_feature_level == need


def test_fused_tanh_is_reported_not_guessed():
    node = unsupported_reason(binary_model("ADD", "float32", "TANH"), 8)
    assert node.reason_code == "fused_activation" and "'out'" in node.reason
