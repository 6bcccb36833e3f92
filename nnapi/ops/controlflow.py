"""Control flow (feature level 4): IF and WHILE, which run referenced subgraphs.

The data operands passed to a branch or loop body may have any type, so they
are not bound to a type variable: their argument type is `ANY` and the rules
below check each one against the corresponding input/output of the
referenced subgraph instead (same type, quantization, compatible dimensions).
"""
from __future__ import annotations

import numpy as np

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .spec import Form, OpSpec, TypeCase, arg, declared_shape, opt

ANY = None  # argument of any operand type; checked against the referenced subgraph


def _dims_compatible(a: tuple, b: tuple) -> bool:
    """Unknown rank (empty dims) or unknown extents (0) are compatible with anything."""
    if not a or not b:
        return True
    return len(a) == len(b) and all(x == 0 or y == 0 or x == y for x, y in zip(a, b))


def operand_mismatch(outer, inner) -> str | None:
    """Why operand `outer` cannot be passed as subgraph operand `inner` (None when it can)."""
    to, ti = outer.type, inner.type
    if to.code != ti.code:
        return f"type {to.code.name} vs {ti.code.name}"
    if np.float32(to.scale) != np.float32(ti.scale) or to.zero_point != ti.zero_point:
        return f"scale/zero point {to.scale:g}/{to.zero_point} vs {ti.scale:g}/{ti.zero_point}"
    if to.is_tensor and not _dims_compatible(to.dimensions, ti.dimensions):
        return f"dimensions {list(to.dimensions)} vs {list(ti.dimensions)}"
    if outer.channel_quant and inner.channel_quant and outer.channel_quant != inner.channel_quant:
        return "per-channel quantization parameters differ"
    return None


def _check_pairs(what: str, outer_ops: list, sub_model, sub_indexes) -> list[str]:
    """Compare the operation's operands with the subgraph's, position by position."""
    problems = []
    for k, (o, i) in enumerate(zip(outer_ops, sub_indexes)):
        why = operand_mismatch(o, sub_model.operands[i])
        if why:
            problems.append(f"{what} {k} does not match the subgraph's: {why}")
    return problems


def _subgraph(v, name: str):
    op = v.input(name)
    return None if op is None else op.subgraph


def _bool_scalar_tensor(what: str, operand):
    """The one-element TENSOR_BOOL8 a condition must be."""
    if operand.type.code != C.TENSOR_BOOL8:
        yield f"{what} must be TENSOR_BOOL8, got {operand.type.code.name}"
    elif not _dims_compatible(operand.type.dimensions, (1,)):
        yield f"{what} must have shape [1], got {list(operand.type.dimensions)}"


# -- shape inference ----------------------------------------------------------------
# A referenced subgraph is inferred (nnapi/shapes.py) with its inputs pinned to what the
# operation passes, merged with the subgraph's own declared input dimensions (a valid model
# passes values that fit both).

_MAX_NESTING = 32   # subgraphs referencing subgraphs: a bound on the inference's recursion
_nesting = [0]


def _merge_declared(model, i: int, shape):
    """`shape` (what the operation passes) merged with the subgraph's declared dimensions of operand i."""
    from ..shapes import merge
    return merge(declared_shape(model, i), shape)[0]


def _subgraph_outputs(model, shapes: list):
    """The Shapes of `model`'s outputs when its inputs have `shapes` (None: counts do not fit)."""
    from ..shapes import ShapeInference
    if model is None or len(model.inputs) != len(shapes) or _nesting[0] >= _MAX_NESTING:
        return None
    pinned = {}
    for k, (i, outer) in enumerate(zip(model.inputs, shapes)):
        shape = _merge_declared(model, i, outer)
        if shape is not None:
            pinned[k] = shape
    _nesting[0] += 1
    try:
        inner = ShapeInference(model, input_shapes=pinned)
    finally:
        _nesting[0] -= 1
    return [inner.shape(o) for o in model.outputs]


def _join(a, b):
    """What two Shapes have in common: the extents they agree on (0 elsewhere), None when the ranks
    differ or either is unknown."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else 0 for x, y in zip(a, b))


def _infer_if(v):
    """The outputs are the branch's outputs: with a constant condition, the branch it selects; else
    what both branches agree on."""
    ins = v.all_dims("inputs")
    cond = v.const("condition")
    names = ("then_model", "else_model")
    if cond is not None and np.size(cond) == 1:
        names = names[:1] if bool(np.ravel(cond)[0]) else names[1:]
    results = [_subgraph_outputs(_subgraph(v, n), ins) for n in names]
    if any(r is None or len(r) != len(v._out["outputs"]) for r in results):
        return {}
    joined = results[0]
    for r in results[1:]:
        joined = [_join(a, b) for a, b in zip(joined, r)]
    return {"outputs": joined}


def _infer_while(v):
    """The outputs are the first m loop-carried values after zero or more iterations of the body.

    The carried values' Shapes are joined over every iteration: start from the inputs, run the
    body's inference on the joined Shapes, join its outputs into them, and repeat until the body
    gives back Shapes that agree with what went in (a fixed point: each round only forgets extents
    or ranks, so it ends). A body that keeps its values' shapes (the usual loop) gives the inputs'
    Shapes; an extent the body changes becomes unknown (0), and a rank it changes an unknown rank,
    because the number of iterations is only known at execution. Input-only values (after the
    carried ones) keep the inputs' Shapes throughout.
    """
    body = _subgraph(v, "body_model")
    values = list(v.all_dims("inputs"))
    n_out = len(v._out["outputs"])
    if body is None or len(body.inputs) != len(values) or not n_out <= len(body.outputs) <= len(values):
        return {}
    carried = len(body.outputs)
    # the body's declared inputs hold for every iteration's values
    values = [_merge_declared(body, i, s) for i, s in zip(body.inputs, values)]
    for _ in range(1 + sum(len(s) + 1 for s in values[:carried] if s is not None)):
        out = _subgraph_outputs(body, values)
        if out is None:
            return {}
        joined = [_join(a, b) for a, b in zip(values[:carried], out)]
        if joined == values[:carried]:
            return {"outputs": values[:n_out]}
        values[:carried] = joined
    return {"outputs": [None] * n_out}   # not reached: every round forgets at least one extent


# -- IF ---------------------------------------------------------------------------

def _if_condition(v):
    cond = v.input("condition")
    if cond is not None:
        yield from _bool_scalar_tensor("condition", cond)


def _if_branches(v):
    ins, outs = v.inputs("inputs"), v.outputs("outputs")
    for name in ("then_model", "else_model"):
        model = _subgraph(v, name)
        if model is None:
            continue
        if len(model.inputs) != len(ins) or len(model.outputs) != len(outs):
            yield (f"{name} has {len(model.inputs)} inputs / {len(model.outputs)} outputs, the operation passes "
                   f"{len(ins)} inputs / {len(outs)} outputs")
            continue
        yield from (f"{name}: {p}" for p in _check_pairs("input", ins, model, model.inputs))
        yield from (f"{name}: {p}" for p in _check_pairs("output", outs, model, model.outputs))


register(OpSpec(
    code=Op.IF,
    forms=[Form("default",
                [arg("condition", C.TENSOR_BOOL8), arg("then_model", C.SUBGRAPH), arg("else_model", C.SUBGRAPH),
                 opt("inputs", ANY, repeated=True, min_count=0)],
                [arg("outputs", ANY, repeated=True)])],
    type_cases=[TypeCase(4)],
    rules=[_if_condition, _if_branches],
    infer=_infer_if,
    doc="outputs = (then_model if condition else else_model)(inputs)",
))


# -- WHILE ------------------------------------------------------------------------

def _while_condition(v):
    model = _subgraph(v, "cond_model")
    if model is None:
        return
    ins = v.inputs("inputs")
    if len(model.inputs) != len(ins):
        yield f"cond_model has {len(model.inputs)} inputs, the operation passes {len(ins)}"
    else:
        yield from (f"cond_model: {p}" for p in _check_pairs("input", ins, model, model.inputs))
    if len(model.outputs) != 1:
        yield f"cond_model must have exactly one output, has {len(model.outputs)}"
    else:
        yield from (f"cond_model: {p}" for p in _bool_scalar_tensor("output", model.operands[model.outputs[0]]))


def _while_body(v):
    model = _subgraph(v, "body_model")
    if model is None:
        return
    ins, outs = v.inputs("inputs"), v.outputs("outputs")
    carried = len(model.outputs)  # m input-output + k state-only operands
    if len(model.inputs) != len(ins):
        yield f"body_model has {len(model.inputs)} inputs, the operation passes {len(ins)}"
        return
    if not len(outs) <= carried <= len(ins):
        yield (f"body_model has {carried} outputs; it needs at least the operation's {len(outs)} outputs "
               f"and at most its {len(ins)} inputs")
        return
    yield from (f"body_model: {p}" for p in _check_pairs("input", ins, model, model.inputs))
    # loop-carried values come back as the next iteration's inputs
    yield from (f"body_model: {p}" for p in _check_pairs("loop-carried input", ins[:carried], model, model.outputs))
    yield from (f"body_model: {p}" for p in _check_pairs("output", outs, model, model.outputs))


register(OpSpec(
    code=Op.WHILE,
    forms=[Form("default",
                [arg("cond_model", C.SUBGRAPH), arg("body_model", C.SUBGRAPH), arg("inputs", ANY, repeated=True)],
                [arg("outputs", ANY, repeated=True)])],
    type_cases=[TypeCase(4)],
    rules=[_while_condition, _while_body],
    infer=_infer_while,
    value_dependent={"outputs": "the number of iterations depends on the values the condition reads, so an "
                                "extent the body changes (e.g. a growing CONCATENATION) is known only at "
                                "execution"},
    doc="while cond_model(values): values[:m+k] = body_model(values); outputs = values[:m]",
))
