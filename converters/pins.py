"""Which pins would let refused nodes convert: for a model whose inputs have dynamic dimensions, the nodes
refused for a shape reason are grouped by the input dimensions their tensors' extents (or, for shape
computations, their values) depend on, e.g. "pin x (batch, height, width): 49 nodes and 90% of MACs wait
on it". Extents that no input dimension determines (a NonZero count, a Reshape to computed values) are
value-dependent: the tensor whose extent first depends on values is named instead.

The dependence comes from the dim_params the ONNX shape pass keeps on every tensor (SourceTensor.symbols,
converters/onnx/shapes.py): a model's own names, or expressions of them ("floor(H/4)"); TFLite's dynamic
extents are named by converters/shape_pass.py (name_extents)."""
from __future__ import annotations

import re

import numpy as np

from .source_graph import SourceModel

UNNAMED = "unnamed_dim_"  # prefix of the names given to input extents a model leaves unnamed ('?', -1)

# refusals a pin cannot lift: the op, its version, its quantization or the feature level
NOT_SHAPE_REASONS = {"unsupported_operator", "operator_version", "quantization_type", "feature_level_too_low",
                     "fused_activation"}
# ops whose output extents depend on input values whatever the shapes
VALUE_OPS = {"NonZero", "Unique", "NonMaxSuppression", "Compress", "TopK", "Loop", "Scan", "If", "StringSplit",
             "WHERE", "UNIQUE", "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", "WHILE", "IF"}  # (TFLite's)
SHAPE_OPS = ("Shape", "Size", "SHAPE", "SIZE")  # ops whose output values are their input's extents
SMALL = 8  # elements: a float tensor this small next to shape values carries them (Resize scales)


def pin_hint(what: str = "the inputs") -> str:
    """The one wording of a refusal's advice to pin shapes: the command line's flags (the Python API takes
    the same pins as input_shapes= and dims=, README)."""
    return f"pin {what} with --input-shape NAME=DIMS or --dim SYMBOL=N"


def analyse(source: SourceModel, results, macs) -> dict:
    """{"pins_needed": [...], "value_dependent": [...]} for the main graph's refused nodes (see module doc)."""
    graph = source.main
    where = source.metadata.get("input_symbols") or {}
    if not where and not any(t.symbols for t in graph.tensors):  # (values may decide extents of static inputs)
        return {"pins_needed": [], "value_dependent": []}
    inputs = set(where)
    extent: dict = {}   # tensor -> input symbols its extents depend on
    foreign: dict = {}  # tensor -> symbols of its extents that no input dimension names
    for t in graph.tensors:
        syms = [s for s in (t.symbols or ()) if s]
        extent[t.index] = set().union(*(symbols_in(s, inputs) for s in syms)) if syms else set()
        foreign[t.index] = {s for s in syms if not symbols_in(s, inputs)}
    valued: dict = {}   # tensor -> input symbols its values depend on (shape computations)
    derived: dict = {}  # foreign symbol -> the input symbols of the node that introduced it
    origin: dict = {}   # foreign symbol -> (tensor, node) where it first appears, when values decide it
    for node in graph.nodes:
        ins = [i for i in node.inputs if i >= 0]
        for i in ins:
            extent[i] |= set().union(*(derived.get(s, set()) for s in foreign[i])) if foreign[i] else set()
        reads = set().union(*(extent[i] | valued.get(i, set()) for i in ins)) if ins else set()
        carried = set().union(*(extent[i] for i in ins)) if node.op in SHAPE_OPS else set()
        carried |= set().union(*(valued.get(i, set()) for i in ins)) if ins else set()
        for o in node.outputs:
            if o < 0:
                continue
            t = graph.tensors[o]
            if t.data is None and (np.dtype(t.dtype).kind in "iub" or (t.shape and int(np.prod(
                    [max(d, 1) for d in t.shape])) <= SMALL)):
                valued[o] = carried
            for s in foreign[o]:
                if s in derived or s in origin or any(s in foreign[i] for i in ins):
                    continue
                inherited = next((origin[f] for i in ins for f in foreign[i] if f in origin), None)
                if inherited is not None and node.op not in VALUE_OPS:  # an extent values decided upstream
                    origin[s] = inherited
                elif node.op in VALUE_OPS or not reads:  # values decide it (a NonZero count, a computed shape)
                    origin[s] = (o, node)
                else:  # an extent inference could not write as an expression of the inputs' dimensions
                    derived[s] = reads
            extent[o] |= set().union(*(derived.get(s, set()) for s in foreign[o])) if foreign[o] else set()
            if t.shape is None and t.data is None:  # unknown rank: whatever the node reads may decide it
                extent[o] |= reads
    total = float(sum(macs)) or 1.0
    per_input: dict = {}
    per_value: dict = {}
    for r, m, node in zip(results, macs, graph.nodes):
        if r.supported or r.reason_code in NOT_SHAPE_REASONS:
            continue
        tensors = [i for i in node.inputs + node.outputs if i >= 0]
        syms = set().union(*(extent[i] | valued.get(i, set()) for i in tensors)) if tensors else set()
        for name in {n for s in syms for n, _ in where[s]}:
            entry = per_input.setdefault(name, {"input": name, "dims": {}, "nodes": set(), "macs": 0})
            entry["nodes"].add(node.index)
            entry["macs"] += int(m)
        for s in syms:
            for name, axis in where[s]:
                per_input[name]["dims"][axis] = s
        for s in set().union(*(foreign[i] for i in tensors)) if tensors else set():
            if s in origin:
                t, src = origin[s]
                entry = per_value.setdefault(t, {"tensor": graph.tensors[t].name, "node": src.index, "op": src.op,
                                                 "nodes": set()})
                entry["nodes"].add(node.index)
    shapes = {graph.tensors[i].name: graph.tensors[i].shape_signature or graph.tensors[i].shape or ()  # (TFLite: -1)
              for i in graph.inputs}
    pins = []
    for e in sorted(per_input.values(), key=lambda e: -len(e["nodes"])):
        axes = sorted(e["dims"])
        names = [e["dims"][a] for a in axes]
        shape = shapes.get(e["input"], ())
        pins.append({"input": e["input"], "axes": axes,
                     "dims": [None if n.startswith(UNNAMED) else n for n in names],
                     "input_shape": ",".join(str(d) if d >= 0 else "?" for d in shape),
                     "nodes": len(e["nodes"]), "macs_fraction": e["macs"] / total})
    values = [{"tensor": e["tensor"], "node": e["node"], "op": e["op"], "nodes": len(e["nodes"])}
              for e in sorted(per_value.values(), key=lambda e: -len(e["nodes"]))]
    return {"pins_needed": pins, "value_dependent": values}


def for_result(result) -> dict:
    """analyse() of a ConversionResult's main graph."""
    from .macs import graph_macs
    return analyse(result.source, result.nodes, graph_macs(result.source.main))


def pin_dims(p: dict) -> str:
    """The dimensions a pins_needed entry waits on: their names, or 'axis K' for unnamed ones."""
    return ", ".join(d if d is not None else f"axis {a}" for d, a in zip(p["dims"], p["axes"]))


def pin_how(p: dict) -> str:
    """The options that pin a pins_needed entry: '--input-shape x=?,3,?,? or --dim batch=N'."""
    named = [d for d in p["dims"] if d is not None]
    return f"--input-shape {p['input']}={p['input_shape'] or '...'}" + (
        f" or --dim {' --dim '.join(n + '=N' for n in dict.fromkeys(named))}" if named else "")


def refusal(result, partial_does: str) -> tuple:
    """(first line, detail lines, analyse()) of a refused conversion: the first line says how many nodes
    cannot be converted and what to do (the pins, else --partial, which `partial_does`); the details list
    every refused node and every pin and value-dependent extent."""
    found = for_result(result)
    head = (f"{len(result.unsupported)} of {len(result.nodes)} nodes cannot be converted at feature level "
            f"{result.feature_level}")
    pins_needed = found.get("pins_needed", [])
    if pins_needed:
        head += "; pin the input shapes first: " + "; ".join(pin_how(p) for p in pins_needed) + \
                f" (or --partial {partial_does})"
    else:
        head += f"; --partial {partial_does}"
    return head, refused_node_lines(result) + sentences(found), found


def refused_node_lines(result) -> list:
    return [f"node {n.index} {n.op} (v{n.version}) [{n.reason_code}]: {n.reason}" for n in result.unsupported]


def open_graph_inputs(graph) -> list:
    """pins_needed-style entries (nodes 0) for the graph's inputs whose rank or extents are still unknown."""
    out = []
    for i in graph.inputs:
        t = graph.tensors[i]
        if t.shape is not None and all(d >= 0 for d in t.shape):
            continue
        shape = t.shape or ()
        axes = [a for a, d in enumerate(shape) if d < 0]
        syms = t.symbols or (None,) * len(shape)
        out.append({"input": t.name, "axes": axes,
                    "dims": [None if not syms[a] or syms[a].startswith(UNNAMED) else syms[a] for a in axes],
                    "input_shape": ",".join(str(d) if d >= 0 else "?" for d in shape), "nodes": 0,
                    "macs_fraction": 0.0})
    return out


def sentences(found: dict) -> list:
    """One line per pin and per value-dependent extent."""
    lines = []
    for p in found.get("pins_needed", []):
        lines.append(f"pin {p['input']} ({pin_dims(p)}): {p['nodes']} node(s) and {100 * p['macs_fraction']:.0f}% "
                     f"of MACs wait on it ({pin_how(p)})")
    for v in found.get("value_dependent", []):
        if v["op"] == "If":   # the importer decides an If whose branch the pinned shapes settle (onnx/branches.py)
            lines.append(f"branch-dependent: the extent of {v['tensor']!r} (node {v['node']} If) depends on the "
                         f"branch taken; {v['nodes']} node(s) wait on it. Pinning the input shapes decides the If "
                         f"when its condition comes from shapes or only one branch can run at them; otherwise "
                         f"--partial leaves it to the CPU")
            continue
        lines.append(f"value-dependent: the extent of {v['tensor']!r} (node {v['node']} {v['op']}) depends on "
                     f"tensor values; {v['nodes']} node(s) wait on it and no pin fixes it")
    return lines


def unpinned_advice(loose: dict, what: str) -> tuple:
    """(first line, detail lines) for `what` failed because of the unpinned inputs `loose` (unpinned_inputs)."""
    flags = "; ".join(f"--input-shape {name}={shown[1:-1].replace(' ', '')}" for name, shown in loose.items())
    return (f"{what} while the input shapes are not pinned: pin {flags} (numbers for the ? and the named "
            f"dimensions)", [f"input {name!r} is declared {shown}" for name, shown in loose.items()])


def onnx_declarations(model_path):
    """The ONNX file's graph without its external weights, for the checks made from its declarations before the
    reader runs; None for a file that is no ONNX protobuf (the reader's own read then names what is wrong, exit 3)."""
    import onnx
    try:
        return onnx.load(str(model_path), load_external_data=False)
    except Exception:  # noqa: BLE001 (google.protobuf's DecodeError and friends)
        return None


def unpinned_inputs(model_path, input_shapes: dict, dims: dict) -> dict:
    """{input name: its declared dimensions, e.g. '[batch, 3, ?, ?]'} of the inputs with a dynamic extent that
    neither --input-shape nor --dim pins, read from the model's declarations alone (no conversion)."""
    from .load import detect_format
    fmt = detect_format(model_path)
    declared: dict = {}
    if fmt == "onnx":
        from .onnx.shapes import declared_inputs
        proto = onnx_declarations(model_path)
        if proto is None:
            return {}
        for name, have in declared_inputs(proto).items():
            declared[name] = [None if d is None or (isinstance(d, int) and d <= 0) else d for d in have or [None]]
    elif fmt == "tflite":
        from .tflite.reader import read_tflite
        graph = read_tflite(model_path).main
        for i in graph.inputs:
            t = graph.tensors[i]
            known = t.shape_signature if t.shape_signature is not None else t.shape
            declared[t.name] = [d if d > 0 else None for d in known] if known is not None else [None]
    found = {}
    for name, have in declared.items():
        if name in input_shapes:
            continue
        if any(d is None or (isinstance(d, str) and d not in dims) for d in have):
            found[name] = "[" + ", ".join("?" if d is None else str(d) for d in have) + "]"
    return found


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def symbols_in(dim_param: str, inputs: set) -> set:
    """The input dimension names an extent's dim_param depends on ('floor(H/4) + 1' -> {'H'})."""
    if dim_param in inputs:
        return {dim_param}
    return {s for s in _NAME.findall(dim_param) if s in inputs}
