"""`nnapi bench`'s text output: one line of timings, memory and BLAS, the partial model's split, and with
--profile the slowest operations and the time per operation type."""
from __future__ import annotations


def shapes_text(inputs: list) -> str:
    """'x float32[1,3,320,320], y int32[1]': every input shape timed."""
    return ", ".join(f"{i['name']} {i['dtype']}[{','.join(map(str, i['shape']))}]" for i in inputs)


def macs_text(r: dict) -> str:
    if r["macs"] is None:
        return "n/a MACs"
    return f"{r['macs']:,} MACs, " + ("n/a GFLOP/s" if r["gflops"] is None else f"{r['gflops']:.2f} GFLOP/s")


def render_text(r: dict, profile: bool = False) -> str:
    text = (f"{r['model']} on {shapes_text(r['inputs'])}: ours {r['ours_ms_median']:.3f} ms "
            f"(IQR {r['ours_ms_spread']:.3f})"
            + (f", {r['reference']} {r['reference_ms_median']:.3f} ms (IQR {r['reference_ms_spread']:.3f}), "
               f"ratio {r['ratio']:.2f}x" if r["reference"] else "")
            + f"; {macs_text(r)}; planned peak {r['planned_peak_bytes']:,} B "
              f"(shared buffers {r['arena_bytes']:,} B), "
              f"peak RSS {r['peak_rss_bytes'] / 2**20:.1f} MiB; executor BLAS {r['blas']['library']} "
              f"{r['blas']['threads']} thread(s)"
              + (f" ({r['blas']['architecture']} kernels"
                 + (", chosen by OPENBLAS_CORETYPE" if r["blas"].get("coretype_env") else "") + ")"
                 if r["blas"].get("architecture") else "")
              + ("; CPU time" if r["clock"] == "cpu" else ""))
    from .coverage_render import WIDTH, wrap
    text = "\n".join(wrap([text]))
    if r.get("partial"):
        q = r["partial"]
        text += "\n" + "\n".join(wrap([
                 f"partial model: {q['partitions']} NNAPI partition(s) on the executor "
                 f"({q['nnapi_ms_median']:.3f} ms), {q['fallback_nodes']} CPU fallback node(s) in "
                 f"{q['fallback_segments']} segment(s) on {q['framework']} ({q['framework_ms_median']:.3f} ms); "
                 f"'ours' is both together, the reference runs the whole model"]))
    if profile:   # one row per operation: cut at WIDTH (the JSON has every source node's full name)
        text += "\n" + "\n".join(line if len(line) <= WIDTH else line[:WIDTH - 3] + "..."
                                  for line in profile_text(r).splitlines())
    return text


def profile_text(r: dict, top: int = 15) -> str:
    lines = [f"per operation (median of {r['runs']} profiled runs; total {r['profile_total_ms']:.3f} ms):",
             f"  {'ms':>9} {'share':>6} {'cum':>6}  {'#':>4} {'operation':<24} {'output':<20} source node"]
    for e in r["profile"][:top]:
        lines.append(f"  {e['ms']:9.4f} {e['share']:6.1%} {e['cumulative_share']:6.1%}  {e['operation_index']:>4} "
                     f"{e['nnapi_op']:<24} {str(e['output_shape']):<20} {e['source_node'] or ''}")
    if len(r["profile"]) > top:
        lines.append(f"  ... {len(r['profile']) - top} more operations")
    lines.append("per operation type:")
    for e in r["by_op"]:
        lines.append(f"  {e['ms']:9.4f} {e['share']:6.1%}  {e['count']:>4} x {e['nnapi_op']}")
    inside = r.get("subgraph_profile")
    if inside:
        lines.append("inside the subgraphs IF/WHILE run (their time is part of those rows; ms per invocation):")
        lines.append(f"  {'ms':>9} {'share':>6}  {'sub':>3} {'#':>4} {'operation':<24} {'output':<20} calls")
        for e in inside[:top]:
            lines.append(f"  {e['ms']:9.4f} {e['share']:6.1%}  {e['subgraph']:>3} {e['operation_index']:>4} "
                         f"{e['nnapi_op']:<24} {str(e['output_shape']):<20} {e['calls']:g}")
        if len(inside) > top:
            lines.append(f"  ... {len(inside) - top} more operations")
        lines.append("per operation type inside the subgraphs:")
        for e in r["subgraph_by_op"]:
            lines.append(f"  {e['ms']:9.4f} {e['share']:6.1%}  {e['count']:>4} x {e['nnapi_op']}")
    return "\n".join(lines)
