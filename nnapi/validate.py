"""Model validation: graph rules (the NDK runtime's) and per-operation spec rules.

Every function returns all problems it finds, as messages naming the operand
or operation, rather than stopping at the first.
"""
from __future__ import annotations

import heapq


from .codes import Lifetime, OperandCode
from .ops import SPECS


def graph_problems(model) -> list[str]:
    problems: list[str] = []
    n = len(model.operands)
    defined = set(model.inputs)
    for i, op in enumerate(model.operands):
        if op.is_constant or op.lifetime in (Lifetime.NO_VALUE, Lifetime.SUBGRAPH):
            defined.add(i)
        if op.type.code == OperandCode.SUBGRAPH and op.subgraph is None and _is_read(model, i):
            problems.append(f"operand {i}: SUBGRAPH operand has no model (set_operand_value_from_model)")
    writer = {}
    for k, operation in enumerate(model.operations):
        for o in operation.outputs:
            if o in writer:
                problems.append(f"operand {o} is written by operations {writer[o]} and {k}")
            writer[o] = k
    for k, operation in enumerate(model.operations):
        for i in operation.inputs:
            if not 0 <= i < n:
                problems.append(f"operation {k} ({operation.code.name}): input operand {i} out of range")
            elif i not in defined and i not in writer:
                problems.append(f"operation {k} ({operation.code.name}): input operand {i}"
                                f"{_name(model, i)} is never written (not a model input, constant or operation output)")
    if not model.outputs:
        problems.append("the model has no outputs (identify_inputs_and_outputs)")
    for o in model.outputs:
        if o not in writer and o not in model.inputs:
            problems.append(f"model output operand {o}{_name(model, o)} is not written by any operation")
    if not problems and execution_order(model) is None:
        stuck = _cycle_members(model)
        problems.append("the operations form a cycle: " + ", ".join(
            f"operation {k} ({model.operations[k].code.name})" for k in stuck))
    return problems


def _name(model, i) -> str:
    name = model.operands[i].name
    return f" ({name})" if name else ""


def _is_read(model, i) -> bool:
    return any(i in op.inputs for op in model.operations)


def _cycle_members(model) -> list[int]:
    """The operations that can never run because they wait on each other (a cycle or behind one)."""
    order = set(_topological(model))
    return [k for k in range(len(model.operations)) if k not in order]


def execution_order(model) -> list[int] | None:
    """A topological order of the operations (stable: keeps the given order when valid); None on a cycle."""
    order = _topological(model)
    return order if len(order) == len(model.operations) else None


def _topological(model) -> list[int]:
    """Operations in a stable topological order; those caught in or behind a cycle are left out."""
    writer = {}
    for k, op in enumerate(model.operations):
        for o in op.outputs:
            writer[o] = k
    deps = [set() for _ in model.operations]
    users = [[] for _ in model.operations]
    for k, op in enumerate(model.operations):
        for i in op.inputs:
            w = writer.get(i)
            if w is not None and w not in deps[k]:
                deps[k].add(w)
                users[w].append(k)
    pending = [len(d) for d in deps]

    ready = [k for k, c in enumerate(pending) if c == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for u in users[k]:
            pending[u] -= 1
            if pending[u] == 0:
                heapq.heappush(ready, u)
    return order


def operation_problems(model, feature_level: int = 8) -> list[str]:
    problems = []
    for k, op in enumerate(model.operations):
        spec = SPECS.get(op.code)
        if spec is not None:
            problems.extend(spec.problems(model, k, feature_level))
        elif op.code.feature_level > feature_level:
            problems.append(f"operation {k} ({op.code.name}): needs feature level {op.code.feature_level}, "
                            f"target is {feature_level}")
    if not problems:
        # every operation is well formed: declared output dimensions must agree with what their inputs give
        from .shapes import ShapeInference
        problems.extend(ShapeInference(model).conflicts)
    return problems


def model_min_feature_level(model) -> int:
    level = 1
    models = [model] + model.referenced_models
    for m in models:
        for k, op in enumerate(m.operations):
            spec = SPECS.get(op.code)
            level = max(level, spec.min_level(m, k) if spec else op.code.feature_level)
        for opnd in m.operands:
            level = max(level, opnd.type.code.feature_level)
    return level
