"""If nodes whose condition is known before run time, replaced by the branch they take (on the protobuf,
before the graph is read).

Exporters write If on values that the pinned input shapes decide: torch's `if x.dim() == 3` becomes
Shape -> Size/Gather -> Equal -> If, a squeeze "if the last extent is 1" becomes Shape -> Gather -> Equal ->
If. onnx's shape inference cannot see through the If (it merges both branches' shapes, often to an
unknown rank), so every tensor after it loses its shape. Here the condition is computed from the pinned
shapes and the constants (shapes.known_values, the same rounds as the shape pass), and the If is
replaced by the nodes of the branch it takes: exactly what the If computes for every input those pins
admit. Rounds repeat until no If is left with a known condition (an inlined branch can hold the next one).

An If whose condition is a run-time value stays (NNAPI IF, ops/control.py), and each of its branches is
resolved the same way as a model of the values it reads from the enclosing graph (their shapes and, for
small constants, their values), so Ifs nested in a run-time branch still resolve.

Inlined names keep theirs unless they clash with a name used elsewhere in the model; then they get a
suffix. The nodes computing only the condition are removed with the If."""
from __future__ import annotations

from typing import Optional

import numpy as np
import onnx
from onnx import helper

from . import shapes

MAX_ROUNDS = 16  # inlining rounds (each one nesting level at least)


def has_if(graph: onnx.GraphProto) -> bool:
    return any(n.op_type == "If" and (n.domain or "") in ("", "ai.onnx") or any(has_if(g) for g in _bodies(n))
               for n in graph.node)


def resolve(proto: onnx.ModelProto, reserved: frozenset = frozenset(), log: Optional[list] = None) \
        -> onnx.ModelProto:
    """proto (changed in place, and returned) with every If whose condition the pins decide replaced by its
    branch; `reserved` are names of enclosing scopes that new names must avoid; `log` gets one sentence per
    If replaced (SourceModel.metadata["resolved_ifs"])."""
    if not has_if(proto.graph):
        return proto
    log = [] if log is None else log
    for _ in range(MAX_ROUNDS):
        inferred, values = shapes.known_values(proto)
        if not _inline_known(proto.graph, values, reserved, log):
            break
    else:
        inferred, values = shapes.known_values(proto)
    types = _types(inferred.graph)
    failing = {}
    for k, n in enumerate(proto.graph.node):
        if _is_if(n):
            taken = reserved | _names_except(proto.graph, k) | set(n.input) | set(n.output)
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    why = _resolve_body(proto, a.g, types, values, taken, log)
                    if why:
                        failing.setdefault(k, {})[a.name] = why
    fixed = {k: ("then_branch" not in whys, next(iter(whys.values())))
             for k, whys in failing.items() if len(whys) == 1}
    if fixed:  # the branch that cannot run at these shapes is never taken: the If is the other one
        for k in sorted(fixed, reverse=True):
            then, why = fixed[k]
            log.append(f"If {_label(proto.graph.node[k])}: the {'then' if then else 'else'} branch, the only one "
                       f"that can run at these input shapes (the other fails: {why})")
            _inline_at(proto.graph, k, then, reserved)
        return resolve(proto, reserved, log)
    return proto


def _label(n: onnx.NodeProto) -> str:
    return repr(n.name or n.output[0] if n.output else n.name)


def _is_if(n: onnx.NodeProto) -> bool:
    return n.op_type == "If" and (n.domain or "") in ("", "ai.onnx")


def _bodies(n: onnx.NodeProto) -> list:
    return [a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH] + \
        [g for a in n.attribute if a.type == onnx.AttributeProto.GRAPHS for g in a.graphs]


def _names(graph: onnx.GraphProto) -> set:
    """Every tensor name a graph and its nested bodies define or read."""
    names = {vi.name for vi in list(graph.input) + list(graph.output) + list(graph.value_info)}
    names |= {t.name for t in graph.initializer}
    for n in graph.node:
        names |= set(n.input) | set(n.output)
        for g in _bodies(n):
            names |= _names(g)
    names.discard("")
    return names


def _names_except(graph: onnx.GraphProto, k: int) -> set:
    """The names of graph apart from node k's bodies (its branches' own names may be reused)."""
    names = {vi.name for vi in list(graph.input) + list(graph.output) + list(graph.value_info)}
    names |= {t.name for t in graph.initializer}
    for j, n in enumerate(graph.node):
        if j != k:
            names |= set(n.input) | set(n.output)
            for g in _bodies(n):
                names |= _names(g)
    names.discard("")
    return names


def _local(graph: onnx.GraphProto) -> set:
    """Names a graph defines itself (its inputs, initializers and node outputs)."""
    return {vi.name for vi in graph.input} | {t.name for t in graph.initializer} | \
        {o for n in graph.node for o in n.output if o}


def _captured(graph: onnx.GraphProto) -> list:
    """Names a body reads from enclosing scopes (its nested bodies' reads included), in order of first use."""
    local, found = _local(graph), []
    for n in graph.node:
        reads = list(n.input) + [x for g in _bodies(n) for x in _captured(g)]
        for x in reads:
            if x and x not in local and x not in found:
                found.append(x)
    for vi in graph.output:
        if vi.name not in local and vi.name not in found:
            found.append(vi.name)
    return found


def _types(graph: onnx.GraphProto) -> dict:
    """{name: TypeProto} of a graph's inputs, initializers, value_info and outputs."""
    types = {}
    for t in graph.initializer:
        types[t.name] = helper.make_tensor_type_proto(t.data_type, list(t.dims))
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        if vi.type.HasField("tensor_type"):
            have = types.get(vi.name)
            if have is None or vi.type.tensor_type.HasField("shape") or not have.tensor_type.HasField("shape"):
                types[vi.name] = vi.type
    return types


def _condition(values: dict, name: str):
    """The bool an If condition holds, or None when it is not known before run time."""
    v = values.get(name)
    if v is None or np.asarray(v).size != 1:
        return None
    return bool(np.asarray(v).reshape(-1)[0])


def _inline_known(graph: onnx.GraphProto, values: dict, reserved: frozenset, log: list) -> int:
    """Replace the Ifs of graph (not nested) whose condition `values` knows; the number replaced."""
    done = k = 0
    while k < len(graph.node):
        n = graph.node[k]
        taken = _condition(values, n.input[0]) if _is_if(n) and n.input else None
        if taken is None:
            k += 1
            continue
        log.append(f"If {_label(n)}: the {'then' if taken else 'else'} branch (its condition {n.input[0]!r} is "
                   f"{taken} for these input shapes)")
        k = _inline_at(graph, k, taken, reserved)
        done += 1
    return done


def _inline_at(graph: onnx.GraphProto, k: int, taken: bool, reserved: frozenset) -> int:
    """Replace If node k by its then (taken) or else branch; the position to go on from."""
    n = graph.node[k]
    branch = next(a.g for a in n.attribute if a.name == ("then_branch" if taken else "else_branch"))
    others = reserved | _names_except(graph, k) | set(n.input) | set(n.output)
    nodes, inits = _renamed_branch(branch, list(n.output), others)
    stale = [j for j, vi in enumerate(graph.value_info) if vi.name in set(n.output)]
    for j in reversed(stale):  # the merged shapes of both branches: inference gives the taken one's
        del graph.value_info[j]
    cond = n.input[0]
    del graph.node[k]
    for j, m in enumerate(nodes):
        graph.node.insert(k + j, m)
    graph.initializer.extend(inits)
    return max(k + len(nodes) - _prune(graph, cond), 0)


def _renamed_branch(branch: onnx.GraphProto, outputs: list, taken: set) -> tuple:
    """(nodes, initializers) of branch, writing the If's `outputs` where the branch writes its outputs;
    branch-local names that clash with `taken` get a suffix."""
    rename, used = {}, set(taken)
    local = _local(branch)
    for vi, out in zip(branch.output, outputs):
        if vi.name in local and vi.name not in rename and vi.name not in {t.name for t in branch.initializer}:
            rename[vi.name] = out
    used |= set(rename.values())
    for name in sorted(local - set(rename)):
        if name in used:
            k = 1
            while f"{name}__{k}" in used:
                k += 1
            rename[name] = f"{name}__{k}"
        used.add(rename.get(name, name))
    nodes = []
    for m in branch.node:
        c = onnx.NodeProto()
        c.CopyFrom(m)
        _rename_node(c, rename)
        nodes.append(c)
    inits = []
    for t in branch.initializer:
        c = onnx.TensorProto()
        c.CopyFrom(t)
        c.name = rename.get(t.name, t.name)
        inits.append(c)
    # outputs no node of the branch writes under that name (a captured value, an initializer, or one tensor
    # written to two outputs): an Identity copies it
    written = {o for m in nodes for o in m.output}
    for vi, out in zip(branch.output, outputs):
        if out not in written:
            nodes.append(helper.make_node("Identity", [rename.get(vi.name, vi.name)], [out]))
            written.add(out)
    return nodes, inits


def _rename_node(n: onnx.NodeProto, rename: dict) -> None:
    for j, x in enumerate(n.input):
        n.input[j] = rename.get(x, x)
    for j, x in enumerate(n.output):
        n.output[j] = rename.get(x, x)
    for g in _bodies(n):
        _rename_captures(g, rename)


def _rename_captures(g: onnx.GraphProto, rename: dict) -> None:
    """Rename the names a nested body reads from outside (its own names shadow)."""
    inner = {k: v for k, v in rename.items() if k not in _local(g)}
    for m in g.node:
        for j, x in enumerate(m.input):
            m.input[j] = inner.get(x, x)
        for b in _bodies(m):
            _rename_captures(b, inner)
    for vi in g.output:
        vi.name = inner.get(vi.name, vi.name)


def _prune(graph: onnx.GraphProto, name: str) -> int:
    """Remove the nodes that only computed `name` (an inlined If's condition) once nothing reads it; returns
    how many (the caller steps back that far: at worst it looks at some nodes twice)."""
    removed = 0
    pending = [name]
    outputs = {vi.name for vi in graph.output}
    while pending:
        x = pending.pop()
        if not x or x in outputs or any(x in m.input or x in _captured_of(m) for m in graph.node):
            continue
        k = next((j for j, m in enumerate(graph.node) if x in m.output), None)
        if k is None:
            continue
        m = graph.node[k]
        if any(o and (o in outputs or any(o in u.input or o in _captured_of(u) for u in graph.node))
               for o in m.output):
            continue
        del graph.node[k]
        removed += 1
        pending.extend(m.input)
    return removed


def _captured_of(n: onnx.NodeProto) -> list:
    return [x for g in _bodies(n) for x in _captured(g)]


def _resolve_body(proto: onnx.ModelProto, body: onnx.GraphProto, types: dict, values: dict, taken: set,
                  log: list) -> Optional[str]:
    """Resolve the Ifs inside a run-time If's branch: the branch becomes a model whose inputs are the values
    it reads from the enclosing graph (small known values as initializers), is resolved, and its nodes,
    initializers and inferred shapes go back into the branch. Returns why, when onnx's shape inference proves
    that the resolved branch fails at these shapes (an operator's input of a rank or extent it refuses)."""
    captured = _captured(body)
    model = onnx.ModelProto()
    model.ir_version = proto.ir_version
    model.opset_import.extend(proto.opset_import)
    g = model.graph
    g.name = body.name or "branch"
    typed = True
    for x in captured:
        if x in values and np.asarray(values[x]).size <= shapes.FOLD_LIMIT:
            g.initializer.append(onnx.numpy_helper.from_array(np.asarray(values[x]), x))
        else:
            vi = g.input.add()
            vi.name = x
            if x in types:
                vi.type.CopyFrom(types[x])
            typed = typed and x in types and types[x].tensor_type.HasField("shape")
    g.initializer.extend(body.initializer)
    g.node.extend(body.node)
    g.output.extend(body.output)
    g.value_info.extend(body.value_info)
    resolve(model, frozenset(taken), log)
    inferred = shapes.infer(model)  # the shape pass's rounds: onnx's own pass on the If leaves bodies' shape
    outside = set(captured)         # computations unevaluated
    del body.node[:]
    body.node.extend(model.graph.node)
    del body.initializer[:]
    body.initializer.extend(t for t in model.graph.initializer if t.name not in outside)
    del body.value_info[:]
    body.value_info.extend(vi for vi in inferred.graph.value_info if vi.name not in outside)
    declared = {vi.name: vi for vi in body.output}
    for vi in inferred.graph.output:
        if vi.name in declared and vi.type.tensor_type.HasField("shape"):
            declared[vi.name].type.CopyFrom(vi.type)
    return _fails(model) if typed else None


def _fails(model: onnx.ModelProto) -> Optional[str]:
    """Why onnx's strict shape inference rejects the model (with the inputs' shapes it declares), or None."""
    try:
        onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except onnx.shape_inference.InferenceError as e:
        return str(e).strip().splitlines()[0][:200] if str(e).strip() else "shape inference failed"
    except Exception:  # noqa: BLE001 (any other failure proves nothing about the branch)
        return None
    return None
