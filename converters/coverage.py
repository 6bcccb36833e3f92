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
"outputs"}], "fallback_nodes": [...]}
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
from .macs import graph_macs
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


def _summary(results, macs, graph) -> dict:
    n = len(results)
    sup = [r for r in results if r.supported]
    total = int(sum(macs))
    sup_macs = int(sum(m for r, m in zip(results, macs) if r.supported))
    parts, _ = partition(graph, results)
    return {"nodes": n, "supported_nodes": len(sup), "supported_fraction": (len(sup) / n) if n else 1.0,
            "macs": total, "supported_macs": sup_macs,
            "supported_macs_fraction": (sup_macs / total) if total else (1.0 if len(sup) == n else 0.0),
            "partitions": len(parts)}


def build_report(source: SourceModel, feature_level: int = MAX_FEATURE_LEVEL, input_shapes=None,
                 model_name: Optional[str] = None, adjust=None) -> dict:
    """`adjust(level, results) -> results` lets a lens (converters/lenses/) overrule node verdicts."""
    check_input_shapes(source, input_shapes)
    graph = source.main
    macs = graph_macs(graph)
    per_level = {}
    chosen = None
    for level in range(1, MAX_FEATURE_LEVEL + 1):
        results = check_graph(source, level, input_shapes)
        if adjust is not None:
            results = adjust(level, results)
        s = _summary(results, macs, graph)
        s["blocking_nodes"] = [{"index": r.index, "op": r.op, "reason_code": r.reason_code}
                               for r in results if not r.supported]
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
             "absorbed": r.absorbed if r.supported else None, "macs": int(m),
             "inputs": [_tensor_info(graph, i) for i in node.inputs],
             "outputs": [_tensor_info(graph, i) for i in node.outputs]}
        nodes.append(d)
    summary = {k: v for k, v in per_level[str(feature_level)].items() if k != "blocking_nodes"}
    summary.update(analyse(source, chosen, macs))  # pins_needed, value_dependent
    int16 = sum(1 for r in chosen if not r.supported and INT16_ACTIVATIONS in (r.reason or ""))
    if int16:
        summary["note"] = f"int16x8 quantization: {INT16_ACTIVATIONS} ({int16} of {len(chosen)} nodes)"
    return {
        "model": model_name or (Path(source.path).name if source.path else "<model>"),
        "format": source.format, "report": REPORT_FORMAT, "feature_level": feature_level,
        "summary": summary, "per_feature_level": per_level, "nodes": nodes,
        "partitions": [{"nodes": p.nodes, "inputs": [graph.tensors[t].name for t in p.inputs],
                        "outputs": [graph.tensors[t].name for t in p.outputs]} for p in parts],
        "fallback_nodes": fallback,
    }


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
