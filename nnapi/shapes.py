"""Shape inference over a whole model, from the op specs' `infer` functions
(nnapi/ops/spec.py, inference.py): each operation's output Shapes from its inputs' known
dimensions and constant values, in execution order, so that inferred
intermediate shapes feed later operations.

A Shape is a tuple of extents with 0 for an unknown extent, or None for an
unknown rank. Declared and inferred dimensions are merged extent by extent; a
known extent that differs from the declared one is a conflict.
"""
from __future__ import annotations

from typing import Optional

from .ops import spec_for
from .ops.spec import Shape, conflict_message, declared_shape, merge


class ShapeInference:
    """The Shapes of every operand of `model` (declared merged with inferred) and the conflicts found.
    `input_shapes` (model input position -> dims) pins the model inputs' dimensions first."""

    def __init__(self, model, input_shapes: Optional[dict] = None):
        from .validate import execution_order
        self.model = model
        self.shapes: dict[int, Shape] = {}
        self.conflicts: list[str] = []
        for k, dims in (input_shapes or {}).items():
            self.shapes[model.inputs[k]] = tuple(int(d) for d in dims)
        order = execution_order(model) or range(len(model.operations))
        for index in order:
            self._infer_operation(index)

    def _infer_operation(self, index: int) -> None:
        op = self.model.operations[index]
        spec = spec_for(op.code)
        if spec is None:
            return
        try:
            inferred = spec.output_shapes(self.model, index, self.shapes)
        except (ValueError, TypeError, IndexError, KeyError, OverflowError, ZeroDivisionError):
            inferred = {}   # a malformed operation: its spec rules report the problem
        for o in op.outputs:
            if o in self.shapes:
                continue
            declared = declared_shape(self.model, o)
            shape, conflict = merge(declared, inferred.get(o))
            if conflict:
                self.conflicts.append(conflict_message(f"operation {index} ({op.code.name})", o, declared,
                                                       inferred.get(o)))
            self.shapes[o] = shape

    def shape(self, i: int) -> Shape:
        return self.shapes.get(i, declared_shape(self.model, i))


def infer_shapes(model, input_shapes: Optional[dict] = None) -> dict:
    """{operand index: Shape} for every operation output of `model` (declared merged with inferred)."""
    return ShapeInference(model, input_shapes).shapes


def fill_unknown_dimensions(model) -> int:
    """Give the operation outputs of an unfinished `model` whose dimensions are unknown (in part or in
    rank) the inferred ones; returns how many operands changed. The converters call it before
    Model.finish(), so a converted model carries every shape its inputs determine."""
    changed = 0
    for i, shape in ShapeInference(model).shapes.items():
        opnd = model.operands[i]
        if shape is None or not opnd.type.is_tensor or tuple(opnd.type.dimensions or ()) == shape:
            continue
        declared = opnd.type.dimensions
        if declared and len(declared) != len(shape):
            continue   # a conflict: Model.finish() reports it
        opnd.type = opnd.type.with_dimensions(shape)
        changed += 1
    return changed
