"""The device lens: the converter's coverage intersected with a driver capability profile
(nnapi/devices.py). A node counts only when the device runs every NNAPI operation its
conversion emits; partitions are recomputed from what is left."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from nnapi import NnapiError
from nnapi.device_profile import Device, data_type

from ..convert import new_context, run_converter
from ..registry import Unsupported

DEVICE_UNSUPPORTED = "device_unsupported"


def device_gaps(source, node, level: int, input_shapes, device: Device) -> list:
    """[{"operation", "type", "reason"}] for each NNAPI operation of the node's conversion at `level`
    that `device` does not run (empty when it runs them all)."""
    ctx = new_context(source, source.main_index, level, input_shapes)
    try:
        emitted = run_converter(node, ctx)
    except (Unsupported, NnapiError):
        return []  # the converter's own verdict already says why
    gaps = []
    for k in emitted:
        reason = device.unsupported_reason(ctx.model, k)
        if reason is not None:
            t = data_type(ctx.model, k)
            gaps.append({"operation": ctx.model.operations[k].code.name, "type": t.name if t else None,
                         "reason": reason})
    return gaps


def gaps_reason(gaps: list) -> str:
    """The device's reasons for a node, each once, with how many of the node's operations it applies to."""
    seen: dict = {}
    for g in gaps:
        seen[g["reason"]] = seen.get(g["reason"], 0) + 1
    return "; ".join(r + (f" ({n} operations)" if n > 1 else "") for r, n in seen.items())


def device_report(source, device: Device, feature_level: int, input_shapes=None,
                  model_name: Optional[str] = None) -> dict:
    """The converter lens's coverage report with nodes the device cannot run marked `device_unsupported`, at the
    lower of `feature_level` and the device's own (a device runs nothing its level lacks)."""
    from ..coverage import build_report

    requested, feature_level = feature_level, min(feature_level, device.feature_level)

    gaps_at: dict = {}

    def adjust(level, results):
        graph = source.main
        out = []
        for r in results:
            node = graph.nodes[r.index]
            gaps = device_gaps(source, node, level, input_shapes, device) if r.supported and not node.folded else []
            if level == feature_level:
                gaps_at[r.index] = gaps
            if gaps:
                r = replace(r, supported=False, reason_code=DEVICE_UNSUPPORTED, reason=gaps_reason(gaps))
            out.append(r)
        return out

    report = build_report(source, feature_level, input_shapes, model_name, adjust=adjust)
    for n in report["nodes"]:
        n["device_unsupported"] = gaps_at.get(n["index"], [])
    report["lens"] = "converter"
    if requested != feature_level:
        report["requested_feature_level"] = requested
    report["device"] = {"name": device.name, "type": device.type.name, "feature_level": device.feature_level,
                        "version": device.version, "source": device.source}
    return report
