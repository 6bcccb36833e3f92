"""Model authoring and level checks shared by the shape, reduce and lookup converter tests."""
import numpy as np

from converters.tflite.authoring import GraphBuilder

from tests.converters.tflite.harness import assert_matches_litert, unsupported_reason

LEVELS = (1, 3, 4, 8)
TYPES = {
    "float32": ("FLOAT32", {}),
    "uint8": ("UINT8", dict(scale=0.05, zero_point=120)),
    "int8": ("INT8", dict(scale=0.04, zero_point=-3)),
    "int32": ("INT32", {}),
    "bool": ("BOOL", {}),
}
X = "x"  # marks the model input among an operator's inputs


def one_op(op, x_shape, out_shapes, type_name, inputs=(X,), options=None, version=1, out_type=None,
           out_q=None, **fields):
    """A model with one operator: input "x" (of `type_name`), the given constant inputs (numpy
    arrays; X marks where x goes) and outputs of `out_shapes` (x's type unless `out_type`)."""
    dt, q = TYPES[type_name]
    g = GraphBuilder()
    x = g.input("x", x_shape, dt, **q)
    ins = [x if i is X else g.const(f"c{k}", i) for k, i in enumerate(inputs)]
    odt, oq = (TYPES[out_type] if out_type else (dt, q))
    oq = out_q if out_q is not None else oq
    outs = [g.tensor(f"out{k}", s, odt, **oq) for k, s in enumerate(out_shapes)]
    g.op(op, ins, outs, options, version=version, **fields)
    g.output(*outs)
    return g.finish()


def check_levels(data, need: int, level: int, emits=None):
    """Below `need` the node is reported as needing a higher feature level; from it, it matches LiteRT."""
    if level < need:
        node = unsupported_reason(data, level)
        assert node.reason_code == "feature_level_too_low", node.reason
        return None
    result = assert_matches_litert(data, level)
    if emits is not None:
        assert [op for n in result.nodes for op in n.nnapi_ops] == emits
    return result


def need_for(needs: dict, type_name: str) -> int:
    """int8 is rewritten to uint8 below level 4, so it needs what uint8 needs (or 4 when only signed works)."""
    return needs.get(type_name, needs.get("uint8") if type_name == "int8" else None)


def ints(*values):
    return np.asarray(values, np.int32)
