"""Loop -> NNAPI WHILE (feature level 4).

ONNX:  Loop(M?, cond?, v_initial...) with body(iteration_num, cond_in, v...) -> (cond_out, v..., scans...)
       for (i = 0; (M absent or i < M) and (cond absent or cond); ++i) { cond, v = body(i, cond, v) }
NNAPI: WHILE(cond_model, body_model, inputs...) runs body_model while cond_model(inputs) is true.

The WHILE operands are laid out as
    v...            input-output (m = N: they are the Loop's outputs)
    i, cond         state-only (the body returns them but they are not WHILE outputs; cond only when the
                    Loop has a condition input)
    captured...     input-only (the values the body reads from the enclosing graph, as for If)

NNAPI has no int64 tensors, so the iteration counter is TENSOR_INT32 [1] starting at 0: the body's
int64 iteration_num input is given that int32 operand (int64 arithmetic on it is int32 too, as for an int64
model input: OnnxContext.int32_indices), and the body model ends with
i + 1. The trip count M must be a constant that fits int32; it becomes a constant of the condition
model, which computes `i < M and cond` (LESS, LOGICAL_AND). Without a condition input the body's
cond_in is the constant true; its cond_out must then be cond_in passed through (or a constant true),
since the ONNX spec ignores it there while onnxruntime stops the loop when it turns false.

Reported: scan outputs (no WHILE counterpart), a run-time M (an int64 tensor), a constant M beyond
int32, a Loop with neither M nor a condition (it never ends), a Loop without a condition input whose
body computes cond_out, feature levels below 4.
"""
from __future__ import annotations

import numpy as np

import nnapi
from nnapi import NnapiError, OperandCode as C, OperandType, OperationCode as Op

from ... import convert as driver
from ...registry import Reason, Unsupported
from ...source_graph import SourceModel
from ...tflite.ops.control import _with_copied_outputs
from ..common import OPSET_MAX, onnx_op

INT32_MAX = 2 ** 31 - 1
I32_1 = OperandType(C.TENSOR_INT32, (1,))
B8_1 = OperandType(C.TENSOR_BOOL8, (1,))


def _trip_count(ctx, node):
    """The constant trip count as an int, or None when the Loop has no M."""
    if len(node.inputs) < 1 or node.inputs[0] < 0:
        return None
    m = node.inputs[0]
    t = ctx.tensor(m)
    if not t.is_constant:
        raise Unsupported(Reason.NON_CONSTANT_OPERAND, f"{node.label()}: trip count {t.name!r} is not a constant: "
                                                       f"a run-time int64 value, which NNAPI has no type for (it "
                                                       f"must be a constant that fits int32)")
    data = np.asarray(t.data)
    if data.size != 1:
        raise Unsupported(Reason.INVALID, f"{node.label()}: trip count {t.name!r} has {data.size} values, not one")
    value = int(data.reshape(-1)[0])
    if not -INT32_MAX - 1 <= value <= INT32_MAX:
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: trip count {value} does not fit int32 (NNAPI has "
                                               f"no int64 tensors for the iteration counter)")
    return value


def _condition(ctx, node):
    """The condition input tensor, or None when the Loop has none."""
    if len(node.inputs) < 2 or node.inputs[1] < 0:
        return None
    c = node.inputs[1]
    t = ctx.tensor(c)
    if np.dtype(t.dtype) != np.bool_ or int(np.prod(ctx.shape(c))) != 1:
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: condition {t.name!r} must be one bool value "
                                               f"(NNAPI needs TENSOR_BOOL8 [1])")
    return c


def _passes_cond_through(graph) -> bool:
    """Whether the body's cond_out is its cond_in (directly or through Identity) or a constant true."""
    cond_in, t = graph.inputs[1], graph.outputs[0]
    producer = {o: sn for sn in graph.nodes for o in sn.outputs if o >= 0}
    for _ in range(len(graph.nodes) + 1):
        if t == cond_in:
            return True
        tensor = graph.tensors[t]
        if tensor.is_constant:
            return bool(np.asarray(tensor.data).all())
        sn = producer.get(t)
        if sn is None or sn.op != "Identity" or not sn.inputs:
            return False
        t = sn.inputs[0]
    return False


def _body_model(ctx, node, k: int, n: int, with_cond: bool) -> nnapi.Model:
    """The NNAPI body: inputs (v..., i, [cond], captured...), outputs (v'..., i + 1, [cond']); built like
    build_model builds a graph, with the int64 iteration_num held by the int32 counter."""
    graph = ctx.graphs[k]
    source = SourceModel("onnx", ctx.graphs)
    source.folded = True  # the driver folded these graphs before converting the Loop
    bctx = driver.new_context(source, k, ctx.feature_level, None)
    it, cond_in = graph.inputs[0], graph.inputs[1]
    carried, captured = graph.inputs[2:2 + n], graph.inputs[2 + n:]
    cond_out, carried_out = graph.outputs[0], graph.outputs[1:1 + n]
    it_type = np.dtype(graph.tensors[it].dtype)
    if it_type not in (np.int64, np.int32) or int(np.prod(bctx.shape(it))) != 1:
        raise Unsupported(Reason.INVALID, f"{node.label()}: body input {graph.tensors[it].name!r} must be the "
                                          f"scalar iteration number")
    if np.dtype(graph.tensors[cond_in].dtype) != np.bool_ or np.dtype(graph.tensors[cond_out].dtype) != np.bool_:
        raise Unsupported(Reason.INVALID, f"{node.label()}: the body's condition input and output must be bool")
    plain = bctx.nnapi_type

    def nnapi_type(i):  # the iteration number is the int32 counter
        return (I32_1, None) if bctx.resolve(i) == it else plain(i)
    bctx.nnapi_type = nnapi_type
    forward = bctx.forward

    def forward_(x, y):  # a body output that is another value (Identity): shared, copied at the end
        x, y = bctx.resolve(x), bctx.resolve(y)
        if y in graph.outputs and not bctx.is_const(x) and y not in bctx.operand_of and bctx.layout.get(y) is None:
            bctx.operand_of[y] = bctx.operand_as(x, None)
            return
        forward(x, y)
    bctx.forward = forward_
    i_in = bctx.operand(it)
    if with_cond:
        c_in = bctx.operand(cond_in)
    else:  # true throughout: the caller checked that cond_out passes cond_in through
        c_in = bctx.const(np.ones(1, np.bool_), name=graph.tensors[cond_in].name)
        bctx.operand_of[cond_in], bctx.tensor_of[c_in] = c_in, cond_in
    try:
        ins = [bctx.operand(t) for t in carried] + [i_in] + ([c_in] if with_cond else []) + \
            [bctx.operand(t) for t in captured]
    except Unsupported as u:
        raise Unsupported(u.reason, f"{node.label()}: body {graph.name!r} input: {u.detail}",
                          u.feature_level_needed) from None
    emitted_by = []
    for sn in graph.nodes:
        if not sn.folded:
            try:
                emitted = driver.run_converter(sn, bctx)
            except Unsupported as u:
                raise Unsupported(u.reason, f"{node.label()}: body {graph.name!r} {sn.label()}: {u.detail}"
                                             f"{_shapeless(graph)}",
                                  u.feature_level_needed) from None
            emitted_by.extend(sn for _ in emitted)
    inputs = list(carried) + [it] + ([cond_in] if with_cond else []) + list(captured)
    missing = [t for t in bctx.free_inputs if t not in inputs]
    if missing:
        raise Unsupported(Reason.INVALID, f"{node.label()}: body reads {[graph.tensors[t].name for t in missing]}, "
                                          f"which nothing produces")
    outs = []
    for t in list(carried_out) + ([cond_out] if with_cond else []):
        o = bctx.operand_of.get(t)
        if o is None or bctx.model.operands[o].is_constant:
            raise Unsupported(Reason.INVALID, f"{node.label()}: body output {graph.tensors[t].name!r} is not "
                                              f"computed by a body node (a constant or missing)")
        outs.append(o)
    i_next = bctx.temp(I32_1, f"{graph.tensors[it].name}/next")
    bctx.emit_form(Op.ADD, "default", [i_next], input1=i_in, input2=bctx.const(np.ones(1, np.int32)),
                   fuse=bctx.i32(0))
    outs.insert(n, i_next)
    model = bctx.model
    try:
        model.identify_inputs_and_outputs(ins, outs)
        model.finish()
    except NnapiError as e:
        raise Unsupported(Reason.INVALID, f"{node.label()}: the converted body is invalid: {e.message}") from None
    problems = model.validate(ctx.feature_level)
    if problems:
        raise Unsupported(driver.spec_reason(problems[0]), f"{node.label()}: body "
                          f"{driver.source_of(problems[0], emitted_by)}{problems[0]}")
    return _with_copied_outputs(model, f"{node.label()} body {graph.name!r}")


def _shapeless(graph) -> str:
    """A hint naming the body inputs without a static shape (ONNX shape inference does not look into Loop
    bodies, so their tensors only have the shapes the exporter declared)."""
    names = [graph.tensors[t].name for t in graph.inputs[2:]
             if graph.tensors[t].shape is None or any(d < 0 for d in graph.tensors[t].shape)]
    if not names:
        return ""
    return (f" (the body declares no static shape for {names}; ONNX shape inference does not propagate shapes "
            f"into Loop bodies)")


def _cond_model(body: nnapi.Model, n: int, trip: int | None, with_cond: bool, name: str) -> nnapi.Model:
    """(i < M) and cond over the WHILE operands (the body's inputs)."""
    m = nnapi.Model(name=f"{name}/cond")
    ins = []
    for idx in body.inputs:
        op = body.operands[idx]
        ins.append(m.add_operand(op.type, op.name))
        if op.channel_quant is not None:
            m.set_operand_symm_per_channel_quant_params(ins[-1], op.channel_quant.scales, op.channel_quant.channel_dim)
    i, cond = ins[n], (ins[n + 1] if with_cond else None)
    out = m.add_operand(B8_1, "continue")
    if trip is None:
        m.add_operation(Op.LOGICAL_AND, [cond, cond], [out])
    else:
        limit = m.add_operand(I32_1, "trip_count")
        m.set_operand_value(limit, np.array([trip], np.int32))
        below = m.add_operand(B8_1, "i<M") if with_cond else out
        m.add_operation(Op.LESS, [i, limit], [below])
        if with_cond:
            m.add_operation(Op.LOGICAL_AND, [below, cond], [out])
    m.identify_inputs_and_outputs(ins, [out])
    m.finish()
    return m


@onnx_op("Loop", versions=(7, OPSET_MAX))
def loop(node, ctx):
    """Loop as WHILE: v... carried, the counter (and condition) state-only, captured values input-only."""
    ctx.require(Op.WHILE, f"{node.label()}: NNAPI WHILE")
    k = node.subgraphs.get("body")
    if k is None:
        raise Unsupported(Reason.INVALID, f"{node.label()} has no body")
    graph = ctx.graphs[k]
    n = len(node.inputs) - 2
    if n < 0 or len(graph.inputs) < 2 + n or len(graph.outputs) < 1 + n:
        raise Unsupported(Reason.INVALID, f"{node.label()}: the body has {len(graph.inputs)} inputs / "
                                          f"{len(graph.outputs)} outputs for {max(n, 0)} loop-carried values")
    if len(graph.outputs) > 1 + n or len(node.outputs) > n:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: {len(graph.outputs) - 1 - n} scan output(s); NNAPI "
                                            f"WHILE has no way to stack per-iteration values")
    trip = _trip_count(ctx, node)
    cond = _condition(ctx, node)
    if trip is None and cond is None:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()} has neither a trip count nor a condition: it never "
                                            f"ends")
    if cond is None and not _passes_cond_through(graph):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()} has no condition input but its body computes "
                                            f"cond_out: the ONNX spec ignores it, onnxruntime stops the loop when "
                                            f"it is false, so no conversion matches both")
    captured = [graph.tensors[t].name for t in graph.inputs[2 + n:]]
    by_name = {x.name: x.index for x in ctx.graph.tensors}
    missing = [c for c in captured if c not in by_name]
    if missing:
        raise Unsupported(Reason.INVALID, f"{node.label()}: the body reads {missing}, which the graph does not have")
    body = _body_model(ctx, node, k, n, cond is not None)
    cond_model = _cond_model(body, n, trip, cond is not None, graph.name)
    models = {}
    for arg, model in (("cond_model", cond_model), ("body_model", body)):
        models[arg] = ctx.model.add_operand(nnapi.OperandType(C.SUBGRAPH), name=f"{graph.name}/{arg}")
        ctx.model.set_operand_value_from_model(models[arg], model)
    inputs = [ctx.operand_as(t) for t in node.inputs[2:]]  # the body takes the ONNX layout
    inputs.append(ctx.const(np.zeros(1, np.int32), name=f"{node.name or 'loop'}/i0"))
    if cond is not None:
        inputs.append(ctx.operand(cond))
    inputs += [ctx.operand_as(by_name[c]) for c in captured]
    outputs = []
    for j, o in enumerate(list(node.outputs) + [-1] * (n - len(node.outputs))):
        outputs.append(ctx.output(o) if o >= 0 else ctx.temp(body.operands[body.outputs[j]].type, f"unused{j}"))
    ctx.emit_form(Op.WHILE, "default", outputs, cond_model=models["cond_model"], body_model=models["body_model"],
                  inputs=inputs)
