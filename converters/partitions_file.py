"""`nnapi convert --partial`: each NNAPI partition as OUT.partK.nnapi and OUT.partitions.json (the
partitions with their boundary tensors, the CPU fallback nodes, the io rewrites, the state and the pins
that would unlock the rest), written all or nothing."""
from __future__ import annotations

import json
from pathlib import Path

from nnapi import serialize  # looked up at each write (tests replace atomic_write to fail midway)

from .pins import for_result


def write_partitions(result, out: Path, model_path: str, feature_level: int) -> int:
    """Write the partitions of `result` beside `out` and their manifest; returns how many partitions."""
    graph = result.source.main
    files, manifest = [], {"model": str(model_path), "feature_level": feature_level, "partitions": [],
                           "fallback_nodes": [], "io_rewrites": result.io_rewrites,
                           "state": [{**v, "initial": v["initial"].tolist(), "dtype": v["initial"].dtype.name}
                                     for v in result.state]}
    blobs = []
    for k, p in enumerate(result.partitions):
        name = f"{out.stem}.part{k}{out.suffix or '.nnapi'}"
        blobs.append((out.with_name(name), serialize.file_pieces(p.model)))
        manifest["partitions"].append({
            "file": name, "nodes": p.nodes,
            "inputs": [graph.tensors[t].name for t in p.inputs],
            "outputs": [graph.tensors[t].name for t in p.outputs]})
    for n in result.unsupported:
        manifest["fallback_nodes"].append({"index": n.index, "op": n.op, "reason_code": n.reason_code,
                                           "reason": n.reason, "inputs": n.inputs, "outputs": n.outputs})
    manifest.update(for_result(result))  # pins_needed, value_dependent
    manifest_path = out.with_name(out.stem + ".partitions.json")
    try:
        for path, data in blobs:
            serialize.atomic_write(path, data)
            files.append(path)
        serialize.atomic_write(manifest_path, json.dumps(manifest, indent=1).encode())
    except BaseException:
        for f in files:  # all or nothing: no partial set of partitions left behind
            f.unlink(missing_ok=True)
        raise
    return len(blobs)
