"""docs/benchmarks.md from measured rows: the table, each model's verdict against the performance issue's
targets, the profile of every model over its target, and the memory table. Pure functions of the rows
(benchmarks/zoo.py measures them), so the verdicts are tested on synthetic rows.

A row: {"model", "format", "kind" ("tflite-float", "tflite-quantized", "onnx-float", "onnx-quantized" or
""), "ours", "litert", "litert_xnnpack", "onnxruntime" (medians in ms, or None), "notes" [str],
"operations" (NNAPI operations in the converted model, or None), "profile" (`nnapi bench --profile`'s
rows, slowest first, or None), "by_op" (its per-type summary), "memory" (benchmarks/memory.py's row,
or None)}.
"""
from __future__ import annotations

from dataclasses import dataclass

from .memory import CONVERT_RSS_ALLOWANCE_BYTES, CONVERT_RSS_FILE_FACTOR, convert_rss_limit

COLUMNS = ["litert", "litert_xnnpack", "onnxruntime"]
HEAD = ["model", "format", "ours ms", "LiteRT built-in ms", "LiteRT XNNPACK ms", "onnxruntime ms",
        "ours/built-in", "ours/XNNPACK", "ours/onnxruntime", "target", "notes"]
# the performance issue's targets: (reference column, the ratio allowed) per kind of model; a TFLite model
# whose LiteRT built-in invocation takes under MIN_REFERENCE_MS is judged on per-invocation overhead instead
# (quantized ONNX models have no target of their own)
TARGETS = {"tflite-float": ("litert", 1.5), "tflite-quantized": ("litert", 2.0), "onnx-float": ("onnxruntime", 2.0)}
MIN_REFERENCE_MS = 1.0
# the overhead rule: ours - LiteRT built-in <= OVERHEAD_BASE_US + OVERHEAD_PER_OP_US x NNAPI operations
OVERHEAD_BASE_US = 15.0
OVERHEAD_PER_OP_US = 2.5
PROFILE_TOP = 5
_CONTROL_FLOW = ("IF", "WHILE")   # their time is their subgraphs' operations (row "subgraph_by_op")


@dataclass(frozen=True)
class Verdict:
    status: str     # "within", "over" or "none" (no target, or not measured)
    text: str


def overhead_budget_us(operations: int) -> float:
    return OVERHEAD_BASE_US + OVERHEAD_PER_OP_US * operations


def verdict(row) -> Verdict:
    """The row against its target: a ratio, or below MIN_REFERENCE_MS of LiteRT the overhead rule."""
    if row["kind"] not in TARGETS:
        return Verdict("none", "no target (quantized ONNX)" if row["kind"] == "onnx-quantized" else "-")
    column, allowed = TARGETS[row["kind"]]
    ref = row[column]
    if row["ours"] is None or ref is None:
        return Verdict("none", "-")
    if column == "litert" and ref < MIN_REFERENCE_MS:
        ops = row.get("operations")
        if ops is None:
            return Verdict("none", f"overhead rule (LiteRT < {MIN_REFERENCE_MS:g} ms): operation count unknown")
        over_us, budget = 1e3 * (row["ours"] - ref), overhead_budget_us(ops)
        status = "within" if over_us <= budget + 1e-9 else "over"   # (ms differences are not exact in binary)
        return Verdict(status, f"{status} overhead: {over_us:.0f} µs {'≤' if status == 'within' else '>'} "
                               f"{OVERHEAD_BASE_US:g} + {OVERHEAD_PER_OP_US:g} × {ops} ops = {budget:.0f} µs")
    ratio = row["ours"] / ref
    return Verdict("within", f"within {allowed:g}x") if ratio <= allowed else Verdict("over", f"over {allowed:g}x")


def anchor(model_id: str) -> str:
    return "profile-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in model_id.lower())


def target_cell(row) -> str:
    """The verdict; for a model over its target, the operation type holding it back, linked to its profile."""
    v = verdict(row)
    if v.status != "over":
        return v.text
    if not row.get("by_op"):
        return v.text + " (no profile)"
    top = row["by_op"][0]
    held = f"{top['nnapi_op']} {100 * top['share']:.0f}% ({top['count']} ops)"
    if top["nnapi_op"] in _CONTROL_FLOW and row.get("subgraph_by_op"):   # name what runs inside it
        inner = row["subgraph_by_op"][0]
        held += f", inside it {inner['nnapi_op']} {100 * inner['share']:.0f}% ({inner['count']} ops)"
    return f"[{v.text}: {held}](#{anchor(row['model'])})"


def _cell(v, ratio=False) -> str:
    if v is None:
        return "-"
    return f"{v:.2f}x" if ratio else f"{v:.3f}"


def table(rows) -> list[str]:
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    for r in rows:
        ratios = [r["ours"] / r[c] if r["ours"] and r[c] else None for c in COLUMNS]
        cells = [r["model"], r["format"], _cell(r["ours"]), *(_cell(r[c]) for c in COLUMNS),
                 *(_cell(x, True) for x in ratios), target_cell(r), "; ".join(r["notes"]).replace("|", "/")]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _shape(dims) -> str:
    return "[" + ", ".join(map(str, dims)) + "]"


def profile_section(row) -> list[str]:
    """The top operations of a model over its target and the per-type summary line."""
    v = verdict(row)
    lines = [f'<a id="{anchor(row["model"])}"></a>', "", f"### {row['model']}", "",
             f"{v.text}; `nnapi bench --profile`, per-operation medians of the thread's CPU time (sum "
             f"{row.get('profile_total_ms', 0):.3f} ms, against ours {_cell(row['ours'])} ms per invocation):", "",
             "| op index | NNAPI op | source node | output shape | ms | share |", "|---|---|---|---|---|---|"]
    for p in row["profile"][:PROFILE_TOP]:
        node = (p["source_node"] or "-").replace("|", "/")
        lines.append(f"| {p['operation_index']} | {p['nnapi_op']} | {node} | {_shape(p['output_shape'])} | "
                     f"{p['ms']:.3f} | {100 * p['share']:.1f}% |")
    lines += ["", f"By type: {_types(row['by_op'])}.", ""]
    inside = row.get("subgraph_profile")
    if inside:
        lines += ["Inside the subgraphs IF/WHILE run (part of their rows above; ms per invocation):", "",
                  "| subgraph | op index | NNAPI op | output shape | ms | share |", "|---|---|---|---|---|---|"]
        lines += [f"| {p['subgraph']} | {p['operation_index']} | {p['nnapi_op']} | {_shape(p['output_shape'])} | "
                  f"{p['ms']:.3f} | {100 * p['share']:.1f}% |" for p in inside[:PROFILE_TOP]]
        lines += ["", f"By type inside: {_types(row['subgraph_by_op'])}.", ""]
    return lines


def _types(by_op) -> str:
    return ", ".join(f"{e['nnapi_op']} {100 * e['share']:.0f}% ({e['count']} ops, {e['ms']:.3f} ms)" for e in by_op)


def profiles(rows) -> list[str]:
    over = [r for r in rows if verdict(r).status == "over" and r.get("profile")]
    if not over:
        return []
    return ["## Operations holding models back", "",
            f"Every model over its target: its {PROFILE_TOP} slowest NNAPI operations (index in the converted "
            "model, the source node it came from, its output shape, its median time and share of the profiled "
            "sum) and the time per operation type. The profiler times each operation on the clock the model is "
            "timed with (the thread's CPU time); the sum leaves out the run loop's own cost between operations.", ""] + [line for r in over for line in profile_section(r)]


def _mb(b) -> str:
    return "-" if b is None else f"{b / 2**20:.1f}"


def _size(b) -> str:
    """Bytes in KB below 1 MB, else MB."""
    if b is None:
        return "-"
    return f"{b / 2**10:.0f} KB" if b < 2**20 else f"{b / 2**20:.1f} MB"


def memory_verdict(mem) -> str:
    if mem is None or mem.get("convert_peak_rss_bytes") is None:
        return "-"
    limit = convert_rss_limit(mem["file_bytes"])
    return "within" if mem["convert_peak_rss_bytes"] <= limit else "over"


def memory_table(rows, baseline_bytes) -> list[str]:
    head = ["model", "file", "convert peak RSS MB", "limit MB", "convert", "executor peak RSS MB",
            "arena", "planned peak", "NNAPI ops", "notes"]
    lines = ["## Memory", "",
             "Measured by benchmarks/memory.py in a process of its own, before the timings. "
             f"`convert` peak RSS: `python -m converters.cli convert` in a process of its own (with `--partial` for "
             f"a partial model), its own peak resident set (VmHWM, read as it exits); the issue's limit is "
             f"{CONVERT_RSS_FILE_FACTOR}x the model file + {CONVERT_RSS_ALLOWANCE_BYTES >> 20} MB. Executor peak RSS: "
             "a process that loads the converted model, compiles it and runs it once on seeded inputs "
             f"(it starts from {_mb(baseline_bytes)} MB: Python, numpy and the converters imported); arena: the "
             "buffers the memory plan shares among intermediates; planned peak: the largest sum of live "
             "intermediates (`nnapi bench` reports the same three).", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        m = r.get("memory") or {}
        limit = convert_rss_limit(m["file_bytes"]) if m.get("file_bytes") is not None else None
        cells = [r["model"], _size(m.get("file_bytes")), _mb(m.get("convert_peak_rss_bytes")), _mb(limit),
                 memory_verdict(m or None), _mb(m.get("executor_peak_rss_bytes")), _size(m.get("arena_bytes")),
                 _size(m.get("planned_peak_bytes")), str(m.get("operations", "-")),
                 (m.get("error") or "").replace("|", "/")]
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def counts(rows) -> str:
    """'N within target (K on the overhead rule), M over (...), L without a verdict'."""
    judged = [verdict(r) for r in rows]

    def part(status, label):
        of = [v for v in judged if v.status == status]
        return f"{len(of)} {label} ({sum('overhead' in v.text for v in of)} on the overhead rule)"
    return (f"{part('within', 'within target')}, {part('over', 'over')}, "
            f"{sum(v.status == 'none' for v in judged)} without a verdict")


def markdown(header: list[str], sections: list[tuple[str, str, list]], memory_baseline_bytes=None) -> str:
    """The document: header paragraphs, then per (title, intro, rows) section its table, then the
    profiles of every model over its target and the memory table over every row."""
    lines = ["# Executor benchmarks on the zoo", ""]
    for para in header:
        lines += [para, ""]
    every = []
    for title, intro, rows in sections:
        lines += [f"## {title}", "", intro + " " + counts(rows) + ".", ""] + table(rows) + [""]
        every += rows
    lines += profiles(every)
    if any(r.get("memory") for r in every):
        lines += memory_table(every, memory_baseline_bytes)
    return "\n".join(lines).rstrip("\n") + "\n"
