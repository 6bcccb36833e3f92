"""Coverage and parity as Model Explorer node data, drawn over the source graph.

Model Explorer matches a node-data key against the `tensor_name` of a node's outputs, else against
the node id. Its TFLite adapter gives every node its output tensors' `tensor_name`, so TFLite keys
are output tensor names; model-explorer-onnx gives none (only `__tensor_tag`) and takes the ONNX node
name, made unique, as the id, so ONNX keys are those ids, found from the node's output tensor names.
Each file is one `GraphNodeData` (model_explorer.node_data_builder; the same JSON is written by hand
where the package is not installed): {"name", "results": {key: {"value", "bgColor"?}}, "thresholds":
[{"value", "bgColor"}], ...}. Model Explorer applies such a file to the graph on screen.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable, Optional

# coverage status -> node colour (the HTML report's palette)
STATUS_COLORS = {"supported": "#2e7d32", "lowered": "#1565c0", "absorbed": "#a5d6a7", "unsupported": "#c62828"}
# minimum feature level: greener the older the Android release that runs it (1-5 = API 27-31)
LEVEL_THRESHOLDS = [(2, "#1b5e20"), (3, "#2e7d32"), (4, "#66bb6a"), (5, "#c0ca33"), (6, "#fdd835"),
                    (7, "#ffa000"), (8, "#ef6c00")]
# partitions: one colour each (cycled); CPU fallback nodes get -1
PARTITION_COLORS = ["#1565c0", "#2e7d32", "#6a1b9a", "#00838f", "#ef6c00", "#ad1457", "#4e342e", "#283593"]
FALLBACK_COLOR = "#9e9e9e"
# parity: error / allowed, so 1 is the tolerance; the last band catches everything above it
ERROR_THRESHOLDS = [(0.01, "#1b5e20"), (0.1, "#43a047"), (0.5, "#9ccc65"), (1.0, "#fdd835"), (10.0, "#fb8c00"),
                    (1e300, "#c62828")]
# an error where the tolerance is exact (integer outputs): shown as this many tolerances
EXACT_MISMATCH_RATIO = 1e6

# coverage facets: (file suffix before .json, display name)
COVERAGE_FACETS = [("", "NNAPI coverage"), ("ops", "NNAPI operations"), ("level", "NNAPI feature level"),
                   ("partition", "NNAPI partition")]


def node_key_function(model_path, fmt: str) -> Callable[..., Optional[str]]:
    """(output tensor names of a source node, its operator index or None) -> its Model Explorer key, or
    None when no node writes them. A TFLite operator without outputs (ASSIGN_VARIABLE, CALL_ONCE) is keyed
    by its id in the TFLite adapter's graph, its operator index."""
    if fmt == "tflite":
        return lambda names, index=None: next((n for n in names if n), None if index is None else str(index))
    ids = _onnx_node_ids(model_path)
    return lambda names, index=None: next((ids[n] for n in names if n in ids), None)


def _onnx_node_ids(model_path) -> dict:
    """{output tensor name: node id} of the main graph as model-explorer-onnx draws it: asked of its
    adapter where it is installed; otherwise its naming rule (onnx_ir's NameFixPass) redone: a node keeps
    its name, an unnamed node becomes `node`, `node_1`, ..., a repeated name NAME gets `NAME_1`, ...
    (shape inference can rename no tensor, so tensor names agree either way)."""
    try:
        from model_explorer_onnx.main import ONNXAdapter
    except ImportError:
        ONNXAdapter = None
    ids = {}
    if ONNXAdapter is not None:
        for graph in ONNXAdapter().convert(str(model_path), {"const_element_count_limit": 0})["graphs"]:
            for node in graph.nodes:
                for meta in node.outputsMetadata:
                    for a in meta.attrs:
                        if a.key == "__tensor_tag":
                            ids.setdefault(a.value, node.id)  # the writer, not a later initializer node
        # a body's tensors are tagged 'IF_NODE/then_branch/NAME' (the branches are drawn inline): also by NAME
        for tag, node_id in list(ids.items()):
            ids.setdefault(tag.rsplit("/", 1)[-1], node_id)
        return ids
    import onnx
    used, counter = set(), {}
    todo = [("", onnx.load(str(model_path), load_external_data=False).graph)]
    while todo:  # the main graph, then the If/Loop bodies, drawn inline as 'IF_NODE/then_branch/NODE'
        prefix, graph = todo.pop(0)
        for node in graph.node:
            name = preferred = prefix + (node.name or "node")
            while name in used:
                counter[preferred] = counter.get(preferred, 0) + 1
                name = f"{preferred}_{counter[preferred]}"
            used.add(name)
            ids.update((out, name) for out in node.output if out and out not in ids)
            todo += [(f"{name}/{a.name}/", a.g) for a in node.attribute if a.type == onnx.AttributeProto.GRAPH]
    return ids


def coverage_status(node: dict) -> str:
    """supported (one NNAPI operation), lowered (several), absorbed (none of its own: folded or fused)
    or `unsupported: REASON_CODE`."""
    if not node["supported"]:
        return f"unsupported: {node['reason_code']}"
    ops = node["nnapi_ops"] or []
    if not ops:
        how = (node.get("absorbed") or {}).get("how")
        return f"absorbed ({how})" if how else "absorbed"
    return "lowered" if len(ops) > 1 else "supported"


def _status_color(status: str) -> str:
    return STATUS_COLORS[status.split(":")[0].split(" (")[0]]


def coverage_overlays(report: dict, key_of: Callable) -> list[tuple[str, str]]:
    """[(facet suffix, JSON text)] for a coverage report (converters/coverage.py schema)."""
    lens = report.get("lens")
    if "lenses" in report:  # several lenses side by side: the first lens's verdicts
        lens, report = next(iter(report["lenses"].items()))
    partition_of = {n: k for k, p in enumerate(report["partitions"]) for n in p["nodes"]}
    status, ops, level, part = {}, {}, {}, {}
    for n in report["nodes"]:
        key = key_of([o["name"] for o in n["outputs"]], n["index"] if n.get("subgraph", 0) == 0 else None)
        if key is None:
            continue
        s = coverage_status(n)
        status[key] = (s, _status_color(s))
        emitted = n["nnapi_ops"] or []
        ops[key] = (" + ".join(emitted) if emitted else ("none" if n["supported"] else "CPU fallback"),
                    _status_color(s))
        if n["min_feature_level"] is not None:
            level[key] = (n["min_feature_level"], None)
        p = partition_of.get(n["index"], -1)
        part[key] = (p, PARTITION_COLORS[p % len(PARTITION_COLORS)] if p >= 0 else FALLBACK_COLOR)
    for b in report.get("body_nodes", []):  # inside IF/WHILE bodies (If/Loop branches): their node's verdict
        key = key_of(b["outputs"])
        if key is None:
            continue
        s = "supported" if b["supported"] else f"unsupported: {b['reason_code']}"
        status[key] = (s, _status_color(s))
        ops[key] = (f"inside node {b['in_node']}'s body" if b["supported"] else "CPU fallback", _status_color(s))
        p = partition_of.get(b["in_node"], -1)
        part[key] = (p, PARTITION_COLORS[p % len(PARTITION_COLORS)] if p >= 0 else FALLBACK_COLOR)
    name = Path(report["model"]).name + (f" ({lens})" if lens and lens != "converter" else "")
    data = [status, ops, level, part]
    out = []
    for (suffix, title), results in zip(COVERAGE_FACETS, data):
        # a sum of feature levels or of partition indexes means nothing: those stats are hidden
        hide = {"level": ["sum", "avg"], "partition": ["min", "max", "sum", "avg"]}.get(suffix)
        out.append((suffix, graph_node_data(f"{title}: {name}", results,
                                            thresholds=LEVEL_THRESHOLDS if suffix == "level" else None,
                                            labels=hide is None, hide_stats=hide)))
    return out


def parity_overlay(report: dict, key_of: Callable) -> str:
    """Per source node: the largest error of the NNAPI operations writing its tensors, over their
    tolerance (from --layerwise `layers`, else the per-operation `local` check)."""
    entries = report.get("layers") or report.get("local") or []
    worst: dict = {}
    for e in entries:
        key = key_of([e.get("source_tensor")])
        if key is None or e.get("max_abs_error") is None:
            continue
        err, allowed = float(e["max_abs_error"]), float(e["allowed"] or 0.0)
        ratio = err / allowed if allowed > 0 else (0.0 if err == 0 else EXACT_MISMATCH_RATIO)
        if not math.isfinite(ratio):  # a missing or misshapen output
            ratio = EXACT_MISMATCH_RATIO
        if key not in worst or ratio > worst[key][0]:
            worst[key] = (ratio, None)
    return graph_node_data(f"parity error / tolerance: {Path(report['model']).name}", worst,
                           thresholds=ERROR_THRESHOLDS, labels=False)


def graph_node_data(name: str, results: dict, thresholds=None, labels: bool = False, hide_stats=None) -> str:
    """One GraphNodeData as JSON, through model_explorer.node_data_builder where it is installed.
    results: {key: (value, bgColor or None)}; labels: string values, summarized as labels on the
    collapsed layers that hold them; hide_stats: aggregated stats (min, max, sum, avg) not shown."""
    children_hidden = bool(hide_stats) and "sum" in hide_stats  # the children table shows sum shares
    try:
        from model_explorer import node_data_builder as ndb
    except ImportError:
        ndb = None
    if ndb is not None:
        data = ndb.GraphNodeData(
            name=name, results={k: ndb.NodeDataResult(value=v, bgColor=c) for k, (v, c) in results.items()},
            thresholds=[ndb.ThresholdItem(value=v, bgColor=c) for v, c in thresholds or []],
            showExpandedSummaryOnGroupNode=labels, showLabelCountColumnsInChildrenStatsTable=labels,
            hideInAggregatedStatsTable=labels or hide_stats == ["min", "max", "sum", "avg"],
            hideInChildrenStatsTable=children_hidden, hideAggregatedStats=hide_stats)
        return data.to_json_string(indent=1)
    # the same document, for machines without the viz extra (node_data_builder drops None fields)
    doc = {"results": {k: {"value": v, **({"bgColor": c} if c is not None else {})}
                       for k, (v, c) in results.items()},
           "name": name, "thresholds": [{"value": v, "bgColor": c} for v, c in thresholds or []],
           "gradient": [], "hideInAggregatedStatsTable": labels or hide_stats == ["min", "max", "sum", "avg"],
           "hideInChildrenStatsTable": children_hidden, "showExpandedSummaryOnGroupNode": labels,
           "showLabelCountColumnsInChildrenStatsTable": labels}
    if hide_stats is not None:
        doc["hideAggregatedStats"] = hide_stats
    return json.dumps(doc, indent=1)


def facet_path(out: Path, suffix: str) -> Path:
    """cov.json -> cov.json, cov.ops.json, ..."""
    return out if not suffix else out.with_name(f"{out.stem}.{suffix}{out.suffix or '.json'}")


def write_coverage_overlays(reports: list, paths: list, out: Optional[str]) -> list[Path]:
    """`nnapi coverage MODEL --format model-explorer -o cov.json`: cov.json (status), cov.ops.json,
    cov.level.json and cov.partition.json. Raises ValueError for what cannot be drawn."""
    from nnapi.serialize import atomic_write
    if len(reports) != 1:
        raise ValueError("--format model-explorer draws one model at a time (got "
                         f"{len(reports)}): Model Explorer overlays one graph")
    if not out:
        raise ValueError("--format model-explorer writes several files: give -o FILE.json")
    report = reports[0]
    if "error" in report:
        raise ValueError(report["error"])
    key_of = node_key_function(paths[0], report.get("format") or _format_of(paths[0]))
    written = []
    for suffix, text in coverage_overlays(report, key_of):
        p = facet_path(Path(out), suffix)
        atomic_write(p, text.encode())
        written.append(p)
    return written


def _format_of(path) -> str:
    return "onnx" if str(path).lower().endswith(".onnx") else "tflite"


def parity_overlay_text(report, model_path) -> str:
    """`nnapi parity --layerwise --format model-explorer`: the error overlay's JSON text."""
    d = report.as_dict() if hasattr(report, "as_dict") else report
    if not (d.get("layers") or d.get("local")):
        raise ValueError("--format model-explorer needs per-operation errors: add --layerwise (or --local)")
    return parity_overlay(d, node_key_function(model_path, _format_of(model_path)))
