"""A `.nnapi` model as Model Explorer graphs (model_explorer.graph_builder), one per subgraph.

Operations are nodes labelled with their operation code, their constant scalar parameters by the op
spec's argument names as attributes (padding SAME, fuse RELU6); tensor operands are edges, each
described in its writer's output metadata (type, shape, scale, zero point, per-channel scales, the
operand index and its source tensor name, as `tensor_name`, so overlays keyed by source tensor names
attach here too). Constant tensors are small `constant` nodes next to their reader. Namespaces come
from the source tensor names (`a/b/conv;a/b/relu` -> `a/b`), so a large model folds into layers.
IF and WHILE nodes link to the graphs of their referenced models.
"""
from __future__ import annotations

import numpy as np

from nnapi import Model
from nnapi.codes import Lifetime

# constant values are shown in full up to this many elements (Model Explorer's own default is 16)
SHOWN_VALUES = 16


def graph_ids(model: Model, title: str = "") -> dict:
    """id(subgraph model) -> its graph id: `title` (the file's name) for the main model, else its name (the
    source subgraph's, which a converter may fill with any string), else `main` / `subgraph K`, made unique."""
    ids, used = {}, set()
    for k, m in enumerate([model] + model.referenced_models):
        base = (title if k == 0 else "") or m.name or ("main" if k == 0 else f"subgraph {k}")
        name, j = base, 1
        while name in used:
            j += 1
            name = f"{base} ({j})"
        used.add(name)
        ids[id(m)] = name
    return ids


def namespace_of(name) -> str:
    """The layer path of a source tensor name: its first `;`-joined part without the last `/` part."""
    if not name:
        return ""
    first = str(name).split(";")[0].strip("/")
    return "/".join(p for p in first.split("/")[:-1] if p)


def operand_attrs(model: Model, i: int) -> list:
    """Type, shape and quantization of operand i as Model Explorer key-value pairs."""
    o = model.operands[i]
    t = o.type
    dims = "x".join(str(d) if d else "?" for d in t.dimensions or ()) if t.is_tensor else "scalar"
    attrs = [("tensor_name", o.name or f"operand {i}"), ("operand", str(i)), ("type", t.code.name),
             ("shape", dims), ("tensor_shape", f"{t.code.name}[{','.join(str(d) for d in t.dimensions or ())}]")]
    if t.scale or t.zero_point:
        attrs += [("scale", f"{t.scale:g}"), ("zero_point", str(t.zero_point))]
    if o.channel_quant is not None:
        scales = list(o.channel_quant.scales)
        shown = ", ".join(f"{s:g}" for s in scales[:SHOWN_VALUES]) + (" ..." if len(scales) > SHOWN_VALUES else "")
        attrs += [("channel_dim", str(o.channel_quant.channel_dim)), ("channel_scales", f"[{shown}]")]
    if o.lifetime is not Lifetime.TEMPORARY_VARIABLE:
        attrs.append(("lifetime", o.lifetime.value))
    return attrs


def _value_text(value) -> str:
    a = np.asarray(value)
    if a.size <= SHOWN_VALUES:
        return str(a.tolist())
    return f"<{a.dtype} tensor of {a.size} values>"


def build_graphs(model: Model, title: str = "") -> list:
    """Every subgraph of `model` as a model_explorer.graph_builder.Graph, the main model first, titled `title`."""
    from model_explorer import graph_builder as gb

    from converters.describe import argument_names, operation_params

    ids = graph_ids(model, title)

    def kv(pairs):
        return [gb.KeyValue(key=k, value=str(v)) for k, v in pairs]

    graphs = []
    for m in [model] + model.referenced_models:
        nodes, source = [], {}  # source: operand -> (node id, output position)
        for k, i in enumerate(m.inputs):
            node = gb.GraphNode(id=f"input{k}", label="Input", namespace="GraphInputs",
                                attrs=kv([("input", str(k))]))
            node.outputsMetadata.append(gb.MetadataItem(id="0", attrs=kv(operand_attrs(m, i))))
            nodes.append(node)
            source[i] = (node.id, "0")
        for k, op in enumerate(m.operations):
            in_names, out_names = argument_names(m, k)
            ns = next((namespace_of(m.operands[o].name) for o in op.outputs if m.operands[o].name), "")
            params = operation_params(m, k)
            node = gb.GraphNode(id=f"op{k}", label=op.code.name, namespace=ns,
                                attrs=kv([("operation", str(k)), *params.items()]))
            for slot, o in enumerate(op.outputs):
                meta = operand_attrs(m, o) + ([("__tensor_tag", out_names[slot])] if out_names[slot] else [])
                node.outputsMetadata.append(gb.MetadataItem(id=str(slot), attrs=kv(meta)))
            for slot, i in enumerate(op.inputs):
                opnd = m.operands[i]
                tag = in_names[slot] or f"input {slot}"
                meta = [("__tensor_tag", tag)]
                if opnd.lifetime is Lifetime.SUBGRAPH:
                    node.subgraphIds.append(ids[id(opnd.subgraph)])
                    meta.append(("subgraph", ids[id(opnd.subgraph)]))
                elif opnd.is_omitted:
                    meta.append(("value", "omitted"))
                elif opnd.is_constant and not opnd.type.is_tensor:
                    continue  # a parameter, shown by name in attrs
                elif opnd.is_constant:
                    const_id = f"const{i}_op{k}"
                    c = gb.GraphNode(id=const_id, label="constant", namespace=ns,
                                     attrs=kv([("__value", _value_text(opnd.value))]))
                    c.outputsMetadata.append(gb.MetadataItem(id="0", attrs=kv(operand_attrs(m, i))))
                    nodes.append(c)
                    node.incomingEdges.append(gb.IncomingEdge(sourceNodeId=const_id, targetNodeInputId=str(slot)))
                elif i in source:
                    src, out = source[i]
                    node.incomingEdges.append(gb.IncomingEdge(sourceNodeId=src, sourceNodeOutputId=out,
                                                              targetNodeInputId=str(slot)))
                node.inputsMetadata.append(gb.MetadataItem(id=str(slot), attrs=kv(meta)))
            for slot, o in enumerate(op.outputs):
                source[o] = (node.id, str(slot))
            nodes.append(node)
        for k, o in enumerate(m.outputs):
            node = gb.GraphNode(id=f"output{k}", label="Output", namespace="GraphOutputs",
                                attrs=kv([("output", str(k)), ("tensor_name", m.operands[o].name or f"operand {o}")]))
            if o in source:
                src, out = source[o]
                node.incomingEdges.append(gb.IncomingEdge(sourceNodeId=src, sourceNodeOutputId=out))
            nodes.append(node)
        groups = {"": {"feature level needed": str(m.min_feature_level()), "operations": str(len(m.operations)),
                       "operands": str(len(m.operands)), "relaxed to float16": str(m.relaxed)}}
        graphs.append(gb.Graph(id=ids[id(m)], nodes=nodes, groupNodeAttributes=groups))
    return graphs
