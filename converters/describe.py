"""Human- and machine-readable descriptions of NNAPI models (for `nnapi inspect`)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from nnapi import FuseCode, Model, PaddingCode, infer_shapes
from nnapi.codes import Lifetime
from nnapi.ops import SPECS

# scalar arguments whose integer value names an enum member
_ENUM_ARGS = {"fuse": FuseCode, "activation": FuseCode, "padding": PaddingCode}


def _param_value(name: str, value) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist() if value.size <= 16 else f"<{value.dtype} tensor of {value.size} values>"
    if name in _ENUM_ARGS:
        try:
            return _ENUM_ARGS[name](int(value)).name
        except ValueError:
            return value
    if name == "layout" or name.endswith("_layout"):
        return "NCHW" if value else "NHWC"
    return value


def operation_params(model: Model, k: int) -> dict:
    """Constant parameters of operation k by argument name (padding SAME, fuse RELU6, ...)."""
    op = model.operations[k]
    spec = SPECS.get(op.code)
    view = spec.view(model, k) if spec else None
    if view is None:
        return {}
    params = {}
    for a in view.form.inputs:
        idx = view._in.get(a.name)
        if idx is None or isinstance(idx, list):
            continue
        opnd = model.operands[idx]
        if opnd.is_constant and not opnd.type.is_tensor:
            params[a.name] = _param_value(a.name, opnd.value.item())
    return params


def argument_names(model: Model, k: int) -> tuple[list, list]:
    """The op spec's argument name of each input and output position of operation k (`input`, `filter`,
    `bias`, ...; a repeated argument as `name[j]`); None everywhere when no form of the spec matches."""
    op = model.operations[k]
    spec = SPECS.get(op.code)
    view = spec.view(model, k) if spec else None
    names = []
    for positions, mapping in ((op.inputs, view._in if view else {}), (op.outputs, view._out if view else {})):
        by_operand_slot = [None] * len(positions)
        for name, idx in mapping.items():
            for j, i in enumerate(idx if isinstance(idx, list) else [idx]):
                label = f"{name}[{j}]" if isinstance(idx, list) else name
                slot = next((s for s, p in enumerate(positions) if p == i and by_operand_slot[s] is None), None)
                if slot is not None:
                    by_operand_slot[slot] = label
        names.append(by_operand_slot)
    return names[0], names[1]


def operand_dict(model: Model, i: int, inferred: Optional[dict] = None) -> dict:
    """One operand; `inferred` ({operand: Shape} from nnapi.infer_shapes) adds `inferred_dimensions` where
    the inputs determine more of the shape than is declared."""
    o = model.operands[i]
    d = {"index": i, "name": o.name, "type": o.type.code.name, "dimensions": list(o.type.dimensions),
         "lifetime": o.lifetime.value}
    shape = (inferred or {}).get(i)
    if shape is not None and o.type.is_tensor and tuple(o.type.dimensions or ()) != shape and any(shape):
        d["inferred_dimensions"] = list(shape)
    if o.type.scale or o.type.zero_point:
        d["scale"], d["zero_point"] = o.type.scale, o.type.zero_point
    if o.channel_quant is not None:
        d["channel_quant"] = {"scales": list(o.channel_quant.scales), "channel_dim": o.channel_quant.channel_dim}
    if o.is_constant and not o.type.is_tensor:
        d["value"] = o.value.item()
    return d


def model_dict(model: Model) -> dict:
    subgraphs = [model] + model.referenced_models
    out = {"feature_level": model.min_feature_level(), "subgraphs": []}
    for m in subgraphs:
        inferred = infer_shapes(m)
        out["subgraphs"].append({
            "name": m.name, "relaxed": m.relaxed, "inputs": list(m.inputs), "outputs": list(m.outputs),
            "operands": [operand_dict(m, i, inferred) for i in range(len(m.operands))],
            "operations": [{"index": k, "op": op.code.name, "inputs": list(op.inputs), "outputs": list(op.outputs),
                            "params": operation_params(m, k)} for k, op in enumerate(m.operations)],
        })
    if model.state:  # pairs of input/output positions carried between executions (nnapi/state.py)
        out["state"] = [{"variable": v.variable, "input": v.input, "output": v.output} for v in model.state]
    return out


def _dims_text(dims) -> str:
    return "[" + "x".join(str(x) if x else "?" for x in dims) + "]"


def model_text(model: Model) -> str:
    d = model_dict(model)
    lines = [f"feature level needed: {d['feature_level']}"]
    for s, sg in enumerate(d["subgraphs"]):
        title = "main model" if s == 0 else f"subgraph {s}"
        lines.append(f"\n{title}{' ' + sg['name'] if sg['name'] else ''}"
                     f"{' (relaxed to float16)' if sg['relaxed'] else ''}: inputs {sg['inputs']}, outputs {sg['outputs']}")
        lines.append("  operands:")
        for o in sg["operands"]:
            t = o["type"] + (_dims_text(o["dimensions"]) if o["dimensions"] else "")
            if "inferred_dimensions" in o:
                t += f" (inferred {_dims_text(o['inferred_dimensions'])})"
            q = f" scale={o['scale']:g} zp={o['zero_point']}" if "scale" in o else ""
            if "channel_quant" in o:
                q += f" per-channel(dim {o['channel_quant']['channel_dim']}, {len(o['channel_quant']['scales'])} scales)"
            v = f" = {o['value']}" if "value" in o else ""
            life = "" if o["lifetime"] == Lifetime.TEMPORARY_VARIABLE.value else f" {o['lifetime'].lower()}"
            lines.append(f"    #{o['index']:<4} {t}{q}{life}{v}{'  ' + repr(o['name']) if o['name'] else ''}")
        lines.append("  operations:")
        for op in sg["operations"]:
            params = ", ".join(f"{k}={v}" for k, v in op["params"].items())
            lines.append(f"    [{op['index']}] {op['op']}({params}) {op['inputs']} -> {op['outputs']}")
    for v in d.get("state", []):
        lines.append(f"state {v['variable']!r}: output {v['output']} -> input {v['input']} between executions")
    from .coverage_render import wrap   # 120 columns, as every text report (a name longer than a line stays whole)
    return "\n".join(wrap("\n".join(lines).split("\n"), long_words=False))
