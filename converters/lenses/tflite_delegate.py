"""The TFLite-delegate lens: what LiteRT's NNAPI delegate (its newest revision,
tflite/delegates/nnapi/nnapi_delegate.cc in google-ai-edge/LiteRT) delegates of a
.tflite model when the NNAPI runtime is at feature level N, and why it refuses a node,
in the delegate's own failure types and wording.

StatefulNnApiDelegate::DoPrepare, step by step: Validate every node of the execution
plan (or, when the model dequantizes constant fp16 weights, let FP16GraphPartitionHelper
validate the consumers on the fp16 constants); group the accepted nodes the way
PreviewDelegatePartitioning does; keep the `max_number_delegated_partitions` largest
(LimitDelegatedPartitions). The lens assumes an NNAPI accelerator is present (without
one, API 29+ delegates nothing) and that it runs every operation the delegate emits;
`--device` intersects that with a driver profile."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from nnapi.codes import MAX_FEATURE_LEVEL

from ..macs import source_macs
from ..source_graph import SourceModel
from . import delegate_devices
from .delegate_common import NNAPI12, SDK_FOR_LEVEL, UNSUPPORTED_OPERATOR, Failure, NodeView
from .delegate_mapping import emitted_ops
from .delegate_rules_nn import RULES as NN_RULES
from .delegate_rules_tensor import RULES as TENSOR_RULES
from .tflite_partition import limit_partitions, preview_partitions

LENS = "tflite-delegate"
RULES = {**NN_RULES, **TENSOR_RULES}

# failure type -> the coverage report's reason code
REASON_CODES = {
    "kUnsupportedOperator": "unsupported_operator", "kUnsupportedAndroidVersion": "feature_level_too_low",
    "kUnsupportedOperatorVersion": "operator_version", "kUnsupportedInputType": "operand_type",
    "kNotRestrictedScaleCompliant": "quantization_type", "kUnsupportedOutputType": "operand_type",
    "kUnsupportedOperandSize": "unsupported_attribute", "kUnsupportedOperandValue": "unsupported_attribute",
    "kUnsupportedHybridOperator": "operand_type", "kUnsupportedQuantizationType": "quantization_type",
    "kMissingRequiredOperand": "unsupported_attribute", "kUnsupportedOperandRank": "rank",
    "kInputTensorShouldHaveConstantShape": "non_constant_operand", "kUnsupportedOperatorVariant": "unsupported_attribute",
    "kNoActivationExpected": "fused_activation", "kUnsupportedQuantizationParameters": "quantization_type",
}
PARTITION_LIMIT = "partition_limit"
FP16_DEQUANTIZE = "fp16_constant_dequantize"


@dataclass
class DelegateOptions:
    """The StatefulNnApiDelegate::Options that change which nodes are delegated (allow_fp16 only relaxes
    the arithmetic of what is delegated; it is recorded, not used)."""
    max_number_delegated_partitions: int = 3
    accelerator_name: Optional[str] = None
    disallow_nnapi_cpu: bool = True
    allow_fp16: bool = False

    @classmethod
    def parse(cls, items) -> "DelegateOptions":
        """`NAME=VALUE` strings (--delegate-option); ValueError names a bad one."""
        opts = cls()
        for item in items or []:
            name, sep, value = item.partition("=")
            name = name.strip()
            if not sep or name not in cls.__dataclass_fields__:
                raise ValueError(f"--delegate-option {item!r}: expected NAME=VALUE with NAME one of "
                                 f"{', '.join(cls.__dataclass_fields__)}")
            kind = type(getattr(cls(), name)) if name != "accelerator_name" else str
            if kind is bool:
                if value.lower() not in ("true", "false", "1", "0"):
                    raise ValueError(f"--delegate-option {name}: {value!r} is not true or false")
                setattr(opts, name, value.lower() in ("true", "1"))
            elif kind is int:
                try:
                    setattr(opts, name, int(value))
                except ValueError:
                    raise ValueError(f"--delegate-option {name}: {value!r} is not an integer") from None
            else:
                setattr(opts, name, value or None)
        return opts

    def accelerator_specified(self, sdk: int) -> bool:
        """ShouldUseTargetDevices(options, nnapi, exclude_nnapi_reference=true), as DoPrepare computes
        is_accelerator_specified."""
        if self.accelerator_name == "nnapi-reference":
            return False
        return (self.disallow_nnapi_cpu and sdk >= NNAPI12) or self.accelerator_name is not None

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def validate(graph, node, sdk: int, accelerator: bool, fp16_remap=None) -> tuple:
    """(accepted, failures) of NNAPIDelegateKernel::Validate for one node."""
    v = NodeView(graph, node, sdk, accelerator, fp16_remap or {})
    rule = RULES.get(node.op)
    if rule is None:  # `default:` -- builtins without a case, custom operators, control flow, variables
        return False, [Failure(UNSUPPORTED_OPERATOR, "Unsupported operation type.")], v
    if rule(v) is True:
        return True, [], v
    return not v.failures, v.failures, v


def _fp16_constant_dequantize(graph, node) -> bool:  # IsDequantizeConstFloat16
    if node.op != "DEQUANTIZE" or not node.inputs or node.inputs[0] < 0:
        return False
    t = graph.tensors[node.inputs[0]]
    return t.is_constant and str(t.dtype) == "float16"


def decide(source: SourceModel, feature_level: int, options: DelegateOptions, device=None) -> dict:
    """The delegate's decision at one feature level: per node (accepted, failures, emitted ops), the
    delegated partitions and the set of delegated nodes; with `device`, on a phone with that driver."""
    graph = source.main
    runtime_sdk = sdk = SDK_FOR_LEVEL[feature_level]
    accel = options.accelerator_specified(runtime_sdk)
    targets, missing = None, False   # targets None: no device selection (below API 29 or no --device)
    if delegate_devices.applies(device, runtime_sdk) and (options.accelerator_name or options.disallow_nnapi_cpu):
        targets = delegate_devices.target_devices(device, options)
        missing, targets = targets is None, targets or []
        sdk = delegate_devices.target_sdk(runtime_sdk, targets)
    const_dequant = {n.index for n in graph.nodes if _fp16_constant_dequantize(graph, n)}
    remap = {graph.nodes[k].outputs[0]: graph.nodes[k].inputs[0] for k in const_dequant}
    verdicts, gaps = {}, {}
    for node in graph.nodes:
        if node.index in const_dequant:
            verdicts[node.index] = (False, [], [])
            continue
        ok, failures, view = validate(graph, node, sdk, accel, remap)
        verdicts[node.index] = (ok, failures, emitted_ops(view) if ok else [])
        if ok and targets and accel:
            gaps[node.index] = delegate_devices.node_gaps(view, verdicts[node.index][2], targets)
    accepted = {k for k, (ok, _, _) in verdicts.items() if ok}
    if const_dequant and len(accepted) + len(const_dequant) == len(graph.nodes):
        accepted |= const_dequant  # GetNodesOfFirstNLargestPartitionsImpl: the whole plan is delegated
    on_device = {k for k in accepted if not gaps.get(k)}
    if targets is not None and not targets:
        on_device = set()  # no target device (or the named one is absent): DoPrepare delegates nothing
    if const_dequant and on_device != accepted:
        on_device = set()  # "Only allow full model delegation for fp16 model"
    parts = limit_partitions(preview_partitions(graph, on_device), options.max_number_delegated_partitions)
    delegated = {k for p in parts for k in p}
    return {"verdicts": verdicts, "accepted": accepted, "partitions": parts, "delegated": delegated,
            "const_dequant": const_dequant, "accelerator_specified": accel, "target_sdk": sdk,
            "device_gaps": gaps, "targets": targets, "missing_accelerator": missing}


def _reason(node, verdict, decision, options) -> tuple:
    ok, failures, _ = verdict
    if node.index in decision["delegated"]:
        return None, None
    gaps = decision["device_gaps"].get(node.index)
    if gaps:
        from .devices import gaps_reason
        return "device_unsupported", gaps_reason(gaps)
    if not failures and decision["missing_accelerator"]:
        return "device_unsupported", "the accelerator named by accelerator_name is not on the phone"
    if not failures and decision["targets"] is not None and not decision["targets"]:
        return "device_unsupported", ("no target device: the delegate leaves out nnapi-reference "
                                      "(disallow_nnapi_cpu) and the phone has no other NNAPI device")
    if ok and decision["const_dequant"] and node.index not in decision["delegated"] and \
            decision["device_gaps"] and any(decision["device_gaps"].values()):
        return "device_unsupported", ("the device lacks other nodes of this fp16 model, and the delegate "
                                      "takes an fp16 model whole or not at all")
    if node.index in decision["const_dequant"]:
        return FP16_DEQUANTIZE, ("a constant fp16 DEQUANTIZE stays on the CPU unless the delegate takes the whole "
                                 "model (FP16GraphPartitionHelper); delegated consumers read the fp16 constant")
    if ok:
        n = options.max_number_delegated_partitions
        return PARTITION_LIMIT, (f"accepted, but its partition is not among the {n} largest "
                                 f"(max_number_delegated_partitions={n}, LimitDelegatedPartitions)")
    first = failures[0]
    return REASON_CODES.get(first.type, "unsupported_operator"), "; ".join(f.message for f in failures)


def log_line(node, failure: Failure) -> str:
    """The line DoPrepare writes to logcat (with NNAPI_VERBOSE_VALIDATION) for each failure."""
    return f"Operator {node.op} (v{node.version}) refused by NNAPI delegate: {failure.message}"


def _summary(graph, decision, macs, held) -> dict:
    """coverage.counts for the delegate's decision: fp16 weight DEQUANTIZEs prepare constants (the delegated
    consumers read the fp16 constant), every other node computes."""
    from ..coverage import counts
    return counts([k in decision["delegated"] for k in range(len(graph.nodes))], macs, held,
                  [k in decision["const_dequant"] for k in range(len(graph.nodes))], len(decision["partitions"]))


def _boundary(graph, nodes) -> tuple:
    inside = set(nodes)
    produced = {t for k in nodes for t in graph.nodes[k].outputs if t >= 0}
    ins, outs = [], []
    for k in nodes:
        for t in graph.nodes[k].inputs:
            if t >= 0 and t not in produced and not graph.tensors[t].is_constant and t not in ins:
                ins.append(t)
    read_outside = {t for n in graph.nodes if n.index not in inside for t in n.inputs}
    for k in nodes:
        outs += [t for t in graph.nodes[k].outputs if t >= 0 and (t in read_outside or t in graph.outputs)]
    return [graph.tensors[t].name for t in ins], [graph.tensors[t].name for t in outs]


def build_delegate_report(source: SourceModel, feature_level: int = MAX_FEATURE_LEVEL,
                          options: Optional[DelegateOptions] = None, model_name: Optional[str] = None,
                          device=None) -> dict:
    """The coverage report (README schema) through the delegate's eyes, plus "lens", "delegate_options" and
    per node "delegate_failures" / "delegate_log"."""
    from ..coverage import _tensor_info, blocking, body_node_rows, held_nodes  # shared with the converter lens

    if source.format != "tflite":
        raise ValueError("the tflite-delegate lens reads .tflite models only")
    options = options or DelegateOptions()
    graph = source.main
    macs = source_macs(source)
    held = held_nodes(source)
    decisions = {lv: decide(source, lv, options, device) for lv in range(1, MAX_FEATURE_LEVEL + 1)}
    per_level = {}
    for lv, d in decisions.items():
        s = _summary(graph, d, macs, held)
        entries = []
        for node in graph.nodes:
            if node.index not in d["delegated"]:
                code, _ = _reason(node, d["verdicts"][node.index], d, options)
                entries.append({"index": node.index, "op": node.op, "reason_code": code, "macs": int(macs[node.index]),
                                "computes": node.index not in d["const_dequant"]})
        s["blocking_nodes"] = blocking(entries)
        per_level[str(lv)] = s
    chosen = decisions[feature_level]
    nodes = []
    for node, m in zip(graph.nodes, macs):
        verdict = chosen["verdicts"][node.index]
        code, reason = _reason(node, verdict, chosen, options)
        accepted_at = [lv for lv, d in decisions.items() if node.index in d["accepted"]]
        nodes.append({
            "subgraph": source.main_index, "index": node.index, "op": node.op, "version": node.version,
            "name": node.name, "supported": node.index in chosen["delegated"], "nnapi_ops": verdict[2],
            "min_feature_level": accepted_at[0] if accepted_at else None, "reason_code": code, "reason": reason,
            "macs": int(m), "nodes_inside": held[node.index], "delegate_failures": [f.as_dict() for f in verdict[1]],
            "delegate_log": [log_line(node, f) for f in verdict[1]],
            "device_unsupported": chosen["device_gaps"].get(node.index, []),
            "inputs": [_tensor_info(graph, i) for i in node.inputs],
            "outputs": [_tensor_info(graph, i) for i in node.outputs]})
    parts = []
    for p in chosen["partitions"]:
        ins, outs = _boundary(graph, p)
        parts.append({"nodes": p, "inputs": ins, "outputs": outs})
    summary = {k: v for k, v in per_level[str(feature_level)].items() if k != "blocking_nodes"}
    return {
        "model": model_name or (Path(source.path).name if source.path else "<model>"),
        "format": source.format, "report": "nnapi-coverage/1", "lens": LENS, "feature_level": feature_level,
        "delegate": {"source": "google-ai-edge/LiteRT tflite/delegates/nnapi/nnapi_delegate.cc",
                     "android_sdk_version": SDK_FOR_LEVEL[feature_level], "target_sdk": chosen["target_sdk"],
                     "accelerator_specified": chosen["accelerator_specified"]},
        "delegate_options": options.as_dict(), "summary": summary, "per_feature_level": per_level, "nodes": nodes,
        "partitions": parts, "fallback_nodes": [n["index"] for n in nodes if not n["supported"]],
        "body_nodes": body_node_rows(source, nodes),
        **({"device": {"name": device.name, "type": device.type.name, "feature_level": device.feature_level,
                       "version": device.version, "source": device.source}} if device is not None else {}),
    }


__all__ = ["DelegateOptions", "build_delegate_report", "decide", "validate", "log_line", "LENS"]
