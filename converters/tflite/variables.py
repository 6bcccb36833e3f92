"""TFLite resource variables -> explicit state (NNAPI has no variables).

A source pass (run once per model, see converters/convert.py SOURCE_PASSES) over the
converted subgraph, in execution order:

- CALL_ONCE's initialisation subgraph is evaluated now: what each ASSIGN_VARIABLE in it
  assigns (a constant, or computed from constants by operators that are converted to an
  NNAPI model and run once with the executor) becomes the variable's initial value.
- A variable read before any assignment and assigned later is state: the first
  READ_VARIABLE's output tensor becomes a state input (its value before the invocation)
  and the last assigned value a state output (after it); later reads take the value
  assigned before them.
- A variable never assigned is a constant (its initial value); one assigned before any
  read needs no state (reads take what was assigned); assignments nobody reads are dropped.

VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE and CALL_ONCE then emit nothing (folded, with a
note saying what became of them). Where the rewrite is impossible the node keeps a
reason (node.attrs["state_problem"]) that its converter (ops/state.py) reports.
Variables are identified as LiteRT does: by (container, shared_name).
"""
from __future__ import annotations

import numpy as np

from nnapi import NnapiError

from ..registry import Reason, Unsupported
from ..source_graph import SourceGraph, SourceModel, StateTensors

VARIABLE_OPS = ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE")
PROBLEM = "state_problem"


def _key(node) -> tuple:
    return node.attrs.get("container") or "", node.attrs.get("shared_name") or ""


def _label(key: tuple) -> str:
    return f"{key[0]}/{key[1]}" if key[0] else key[1]


def _handles(graph: SourceGraph) -> dict:
    """{resource tensor: variable key} of the graph's VAR_HANDLE nodes."""
    return {n.outputs[0]: _key(n) for n in graph.nodes if n.op == "VAR_HANDLE" and n.outputs}


def _refuse(node, why: str) -> None:
    node.attrs[PROBLEM] = why


def _fold(node, note: str) -> None:
    node.folded, node.fold_note, node.fold_how = True, note, "resource variable"


def _initial_values(source: SourceModel, graph: SourceGraph) -> dict:
    """{variable key: initial value} from the CALL_ONCE nodes of `graph` (their subgraphs evaluated now)."""
    initial: dict = {}
    for node in graph.nodes:
        if node.op != "CALL_ONCE":
            continue
        k = node.attrs.get("init_subgraph_index")
        if not isinstance(k, int) or not 0 <= k < len(source.graphs) or k == source.main_index:
            _refuse(node, f"CALL_ONCE init_subgraph_index {k} does not name another subgraph")
            continue
        init = source.graphs[k]
        problem = _evaluate_init(source, k, initial)
        if problem:
            _refuse(node, f"CALL_ONCE subgraph {init.name!r}: {problem}")
        else:
            _fold(node, f"initialisation subgraph {init.name!r} evaluated at conversion time")
    return initial


def _evaluate_init(source: SourceModel, k: int, initial: dict):
    """Record what subgraph k assigns; a sentence when it cannot be evaluated at conversion time.
    Values its operators compute are computed now: those operators become an NNAPI model that
    the executor runs once."""
    init = source.graphs[k]
    if init.inputs or init.outputs:
        return "an initialisation subgraph takes no inputs and returns nothing"
    handles = _handles(init)
    assigned, compute = [], []
    for n in init.nodes:
        if n.op == "ASSIGN_VARIABLE":
            if n.inputs[0] not in handles:
                return f"{n.label()} assigns a resource that no VAR_HANDLE of the subgraph creates"
            assigned.append((handles[n.inputs[0]], n.inputs[1]))
        elif n.op in ("READ_VARIABLE", "CALL_ONCE"):
            return f"{n.label()} reads variables while they are initialised, which is not evaluated here"
        elif n.op != "VAR_HANDLE" and not n.folded:
            compute.append(n.index)
    computed = list(dict.fromkeys(v for _, v in assigned if not init.tensors[v].is_constant))
    values = {}
    if computed:
        try:
            values = dict(zip(computed, _run_once(source, k, compute, computed)))
        except Unsupported as u:
            return f"{u.detail} (evaluating the values it assigns)"
    for key, v in assigned:
        t = init.tensors[v]
        if t.unsupported_type is not None:
            return f"it assigns {t.describe()}, of a type NNAPI has no type for"
        value = t.data if t.is_constant else values[v]
        initial[key] = np.array(value).reshape(t.shape or ())
    return None


def _run_once(source: SourceModel, k: int, nodes: list, outputs: list) -> list:
    """The values of tensors `outputs` of subgraph k, computed by its operators `nodes` (evaluate.py)."""
    from .evaluate import run_nodes
    graph = source.graphs[k]
    return [v.reshape(graph.tensors[t].shape or ()) for t, v in zip(outputs, run_nodes(source, k, nodes, outputs))]


def lower_variables(source: SourceModel) -> bool:
    """Rewrite the converted subgraph's resource variables into state (see the module docstring)."""
    graph = source.main
    if not any(n.op in VARIABLE_OPS for n in graph.nodes):
        return False
    initial = _initial_values(source, graph)
    handles = _handles(graph)
    for n in graph.nodes:
        if n.op == "VAR_HANDLE":
            _fold(n, f"the handle of variable {_label(_key(n))!r}")
    events: dict = {}  # variable key -> [node, ...] reads and assignments in execution order
    for n in graph.nodes:
        if n.op in ("READ_VARIABLE", "ASSIGN_VARIABLE"):
            if n.inputs[0] not in handles:
                _refuse(n, f"{n.op} of {graph.tensors[n.inputs[0]].describe()}, a resource no VAR_HANDLE of this "
                           f"subgraph creates")
                continue
            events.setdefault(handles[n.inputs[0]], []).append(n)
    made_constant = False
    in_bodies = _keys_in_bodies(source, graph)
    for key, nodes in events.items():
        if key in in_bodies:  # an IF/WHILE body reads or writes it too: the rewrite would lose that
            for n in nodes:
                _refuse(n, f"variable {_label(key)!r} is also used inside an IF/WHILE body, whose reads and "
                           f"assignments NNAPI cannot carry")
            continue
        made_constant |= _lower_one(graph, _label(key), nodes, initial.get(key))
    return made_constant


def _keys_in_bodies(source: SourceModel, graph: SourceGraph) -> set:
    """The variables that the IF/WHILE bodies the graph runs (transitively) create handles of."""
    keys, seen = set(), set()
    todo = [k for n in graph.nodes for k in n.subgraphs.values()]
    while todo:
        k = todo.pop()
        if k in seen or not 0 <= k < len(source.graphs):
            continue
        seen.add(k)
        for n in source.graphs[k].nodes:
            if n.op == "VAR_HANDLE":
                keys.add(_key(n))
            todo.extend(n.subgraphs.values())
    return keys


def _lower_one(graph: SourceGraph, name: str, nodes: list, initial) -> bool:
    """Rewrite one variable's reads and assignments; True when its reads became constants."""
    reads = [n for n in nodes if n.op == "READ_VARIABLE"]
    assigns = [n for n in nodes if n.op == "ASSIGN_VARIABLE"]
    if not reads:
        for n in assigns:
            _fold(n, f"assigns variable {name!r}, which this subgraph never reads")
        return False
    first = reads[0].outputs[0]
    if assigns and all(n.inputs[1] == first for n in assigns):  # assigned what it holds: never changes
        for n in assigns:
            _fold(n, f"assigns variable {name!r} the value read from it: no change")
        nodes, assigns = reads, []
    stateful = bool(assigns) and nodes[0].op == "READ_VARIABLE"
    if not assigns or stateful:
        problem = _initial_problem(graph, name, first, initial)
        if problem:
            for n in nodes:
                _refuse(n, problem)
            return False
    if not assigns:  # read-only: every read is the initial value
        if any(n.outputs[0] in graph.outputs for n in reads):
            for n in reads:
                _refuse(n, f"variable {name!r} is never assigned and its value is a model output; an NNAPI model "
                           f"output cannot be a constant")
            return False
        for n in reads:
            t = graph.tensors[n.outputs[0]]
            value = np.array(initial, dtype=t.dtype).reshape(t.shape or ())
            value.flags.writeable = False
            t.data, t.shape, t.shape_signature = value, value.shape, None
            _fold(n, f"variable {name!r} is never assigned: its initial value, a constant")
        return True
    if stateful:
        out = graph.tensors[assigns[-1].inputs[1]]
        why = _output_problem(graph, name, assigns[-1].inputs[1], first)
        if why:
            for n in nodes:
                _refuse(n, why)
            return False
        before = graph.tensors[first]
        graph.state.append(StateTensors(name, first, out.index, np.array(initial, dtype=before.dtype)
                                        .reshape(before.shape or ())))
        before.shape_signature = None  # a variable keeps the shape it was initialised with: static
    current = first if stateful else None
    for n in nodes:
        if n.op == "ASSIGN_VARIABLE":
            current = n.inputs[1]
            last = n is assigns[-1]
            _fold(n, f"the value of variable {name!r} after the invocation: a state output" if last and stateful
                  else f"assigns variable {name!r}; later reads take the value")
            continue
        t = n.outputs[0]
        if t != current:
            _replace_uses(graph, t, current)
        _fold(n, f"the value of variable {name!r} before the invocation: a state input" if current == first
              else f"reads variable {name!r}: the value assigned before it")
    return False


def _initial_problem(graph: SourceGraph, name: str, first: int, initial):
    t = graph.tensors[first]
    if initial is None:
        return (f"variable {name!r} is read before any assignment and nothing initialises it at conversion time "
                f"(no CALL_ONCE assigns it, or its subgraph could not be evaluated)")
    if t.shape is None or any(d < 0 for d in t.shape) or int(np.prod(t.shape)) != np.size(initial):
        return f"variable {name!r}: initial value of shape {list(np.shape(initial))} does not fit {t.describe()}"
    if np.asarray(initial).dtype != np.dtype(t.dtype):
        return f"variable {name!r}: initial value is {np.asarray(initial).dtype}, the reads are {t.describe()}"
    return None


def _output_problem(graph: SourceGraph, name: str, value: int, first: int):
    """Why the last assigned value cannot be an NNAPI model output, or None."""
    t, before = graph.tensors[value], graph.tensors[first]
    if t.is_constant:
        return f"variable {name!r} is assigned the constant {t.name!r}; an NNAPI model output cannot be a constant"
    if value in graph.inputs:
        return f"variable {name!r} is assigned model input {t.name!r}; an NNAPI operand cannot be input and output"
    if first in graph.outputs:
        return f"variable {name!r}'s value before the invocation is model output {before.name!r}"
    # LiteRT carries the stored bytes (whatever the quantization): the pair needs one dtype and shape
    if np.dtype(t.dtype) != np.dtype(before.dtype) or tuple(t.shape or ()) != tuple(before.shape or ()):
        return (f"variable {name!r} is read as {before.describe()} and assigned {t.describe()}; the state input "
                f"and output need one dtype and shape")
    return None


def _replace_uses(graph: SourceGraph, old: int, new: int) -> None:
    for n in graph.nodes:
        n.inputs = [new if i == old else i for i in n.inputs]
    graph.outputs = [new if o == old else o for o in graph.outputs]
