"""Delegate-coverage reports: which nodes of a model NNAPI runs, at which
feature level, and why not. Built only on the converters' check results
(converters/convert.py), so the report and the conversion never disagree.

JSON schema (stable; see README): {"model", "format", "feature_level",
"summary": {"nodes", "supported_nodes", "supported_fraction", "macs",
"supported_macs", "partitions", "note"?}, "per_feature_level": {"1".."8": summary +
"blocking_nodes"}, "nodes": [{"subgraph", "index", "op", "version", "name",
"supported", "nnapi_ops", "min_feature_level", "reason_code", "reason",
"note", "absorbed" ({"into", "how"} or None: where a node that emits nothing went), "macs", "inputs",
"outputs"}], "partitions": [{"nodes", "inputs",
"outputs"}], "fallback_nodes": [...], "body_nodes": [...]}. Nodes inside IF/WHILE bodies (ONNX If/Loop branches)
count in the summaries with the node that runs them; nodes that only prepare constants count apart too.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Optional

import numpy as np

from nnapi.codes import MAX_FEATURE_LEVEL

from .convert import (INT16_ACTIVATIONS, ConversionError, build_model, check_graph, check_input_shapes, note_folds,
                      partition)
from .registry import Unsupported
from .pins import analyse
from .load import detect_format, importer
from .macs import body_nodes, graph_macs, node_macs, source_macs
from .source_graph import SourceError, SourceModel

REPORT_FORMAT = "nnapi-coverage/1"


def _tensor_info(graph, i: int) -> dict:
    if i < 0:
        return {"name": None}
    t = graph.tensors[i]
    shape = t.squeezed_from or t.shape  # the source model's shape, also where the squeeze pass dropped unit axes
    info = {"name": t.name, "dtype": np.dtype(t.dtype).name,
            "shape": None if shape is None else list(shape), "constant": t.is_constant}
    if t.quant is not None:
        info["quantization"] = ({"per_channel_axis": t.quant.axis} if t.quant.per_channel
                                else {"scale": t.quant.scale, "zero_point": t.quant.zero_point})
    return info


# how a converter-lens node is absorbed when it only prepares a constant (weights, shape values) at conversion
CONSTANT_HOWS = {"folded constant", "dequantize of weights", "densify of weights"}


def counts(supported: list, macs: list, held: list, constant: list, partitions: int) -> dict:
    """The summary of one lens at one level, from per-main-node lists: supported, its MACs (with its bodies'),
    the number of nodes inside the IF/WHILE (If/Loop) bodies it runs (they go where it goes), and whether it only
    prepares a constant (weights, shapes) rather than computing at run time (also counted apart)."""
    n = len(supported) + sum(held)
    sup = sum(1 + h for s, h in zip(supported, held) if s)
    total = int(sum(macs))
    sup_macs = int(sum(m for s, m in zip(supported, macs) if s))
    comp = [(s, h) for s, h, c in zip(supported, held, constant) if not c]
    return {"nodes": n, "supported_nodes": sup, "supported_fraction": (sup / n) if n else 1.0,
            "macs": total, "supported_macs": sup_macs,
            "supported_macs_fraction": (sup_macs / total) if total else (1.0 if sup == n else 0.0),
            "partitions": partitions,
            "compute_nodes": sum(1 + h for _, h in comp), "supported_compute_nodes": sum(1 + h for s, h in comp if s),
            "constant_nodes": sum(1 for c in constant if c),
            "supported_constant_nodes": sum(1 for s, c in zip(supported, constant) if s and c)}


def blocking(entries: list) -> list:
    """Blocking-node entries ({"index", "op", "reason_code", "macs", "computes"}): those that block computation
    first (most MACs first), then the nodes that only prepare constants, each group in graph order."""
    return sorted(entries, key=lambda b: (not b["computes"], -b["macs"], b["index"]))


def held_nodes(source: SourceModel) -> list:
    """Per main-graph node, how many nodes the bodies it runs (IF/WHILE, If/Loop) hold, nested ones included."""
    return [len(body_nodes(source, n)) for n in source.main.nodes]


def _constant_flags(graph, results) -> list:
    return [bool(graph.nodes[r.index].folded or (r.supported and r.absorbed and r.absorbed.get("how") in CONSTANT_HOWS))
            for r in results]


def build_report(source: SourceModel, feature_level: int = MAX_FEATURE_LEVEL, input_shapes=None,
                 model_name: Optional[str] = None, adjust=None) -> dict:
    """`adjust(level, results) -> results` lets a lens (converters/lenses/) overrule node verdicts."""
    check_input_shapes(source, input_shapes)
    graph = source.main
    macs = source_macs(source)
    held = held_nodes(source)
    per_level = {}
    chosen = None
    for level in range(1, MAX_FEATURE_LEVEL + 1):
        results = check_graph(source, level, input_shapes)
        if adjust is not None:
            results = adjust(level, results)
        constant = _constant_flags(graph, results)
        s = counts([r.supported for r in results], macs, held, constant, len(partition(graph, results)[0]))
        s["blocking_nodes"] = blocking([{"index": r.index, "op": r.op, "reason_code": r.reason_code,
                                         "macs": int(macs[r.index]), "computes": not constant[r.index]}
                                        for r in results if not r.supported])
        per_level[str(level)] = s
        if level == feature_level:
            chosen = results
    parts, fallback = partition(graph, chosen)
    _model_folds(source, chosen, parts, feature_level, input_shapes)
    nodes = []
    for r, m, node in zip(chosen, macs, graph.nodes):
        d = {"subgraph": r.subgraph, "index": r.index, "op": r.op, "version": r.version, "name": r.name,
             "supported": r.supported, "nnapi_ops": r.nnapi_ops, "min_feature_level": r.min_feature_level,
             "reason_code": r.reason_code, "reason": r.reason, "note": r.note,
             "absorbed": r.absorbed if r.supported else None, "macs": int(m), "nodes_inside": held[r.index],
             "inputs": [_tensor_info(graph, i) for i in node.inputs],
             "outputs": [_tensor_info(graph, i) for i in node.outputs]}
        nodes.append(d)
    summary = {k: v for k, v in per_level[str(feature_level)].items() if k != "blocking_nodes"}
    summary.update(analyse(source, chosen, graph_macs(graph)))  # pins_needed, value_dependent
    int16 = sum(1 for r in chosen if not r.supported and INT16_ACTIVATIONS in (r.reason or ""))
    if int16:
        summary["note"] = f"int16x8 quantization: {INT16_ACTIVATIONS} ({int16} of {len(chosen)} nodes)"
    return {
        "model": model_name or (Path(source.path).name if source.path else "<model>"),
        "format": source.format, "report": REPORT_FORMAT, "feature_level": feature_level,
        "summary": summary, "per_feature_level": per_level, "nodes": nodes,
        "partitions": [{"nodes": p.nodes, "inputs": [graph.tensors[t].name for t in p.inputs],
                        "outputs": [graph.tensors[t].name for t in p.outputs]} for p in parts],
        "fallback_nodes": fallback, "body_nodes": body_node_rows(source, nodes),
    }


def body_node_rows(source: SourceModel, nodes: list) -> list:
    """[{"subgraph", "index", "op", "name", "in_node", "supported", "reason_code", "macs", "outputs"}]: every node
    inside the bodies a main-graph node runs, with that node's verdict (a body converts whole or not at all)."""
    rows = []
    for n in nodes:
        for g, b in body_nodes(source, source.main.nodes[n["index"]]):
            rows.append({"subgraph": source.graphs.index(g), "index": b.index, "op": b.op, "name": b.name,
                         "in_node": n["index"], "supported": n["supported"], "reason_code": n["reason_code"],
                         "macs": int(node_macs(g, b)), "outputs": [g.tensors[t].name for t in b.outputs if t >= 0]})
    return rows


def _model_folds(source: SourceModel, results: list, parts: list, feature_level: int, input_shapes) -> None:
    """The folds the finished NNAPI model makes (converters/model_folds.py: a PAD into its convolution, a
    RESHAPE into its FULLY_CONNECTED), applied to the node results as conversion applies them: the partitions
    are built as `nnapi convert` builds them. A partition that does not build keeps its per-node verdicts (the
    conversion reports that error itself)."""
    graph = source.main
    if all(r.supported for r in results):
        groups = [(list(range(len(graph.nodes))), None, None)]
    else:
        groups = [(p.nodes, p.inputs, p.outputs) for p in parts]
    for node_indexes, inputs, outputs in groups:
        try:
            _, ctx = build_model(source, source.main_index, node_indexes, feature_level, input_shapes, inputs, outputs)
        except (ConversionError, Unsupported):
            continue
        note_folds(SimpleNamespace(nodes=results), ctx)


def read_source(path, input_shapes=None, dims=None) -> SourceModel:
    fmt = detect_format(path)
    if fmt == "nnapi":
        raise SourceError(f"{path}: coverage reads source models (.tflite, .onnx), not .nnapi files")
    return importer(fmt).read(path, input_shapes, dims)


def report_for_path(path: str, feature_level: int, input_shapes=None, dims=None) -> dict:
    """A report, or a row with "error" when the model cannot be read (batch mode never stops)."""
    try:
        return build_report(read_source(path, input_shapes, dims), feature_level, input_shapes,
                            model_name=str(path))
    except (SourceError, ConversionError) as e:
        return {"model": str(path), "error": str(e), "error_kind": "invalid_model"}
    except Exception as e:  # one model's failure is reported in its row and does not stop the batch
        return {"model": str(path), "error": f"{type(e).__name__}: {e}", "error_kind": "internal_error"}


def find_models(paths) -> list[str]:
    found = []
    for p in map(Path, paths):
        if p.is_dir():
            found.extend(str(q) for q in sorted(p.rglob("*")) if q.suffix.lower() in (".tflite", ".onnx"))
        else:
            found.append(str(p))
    return found
