"""OnnxContext: the ConversionContext of ONNX graphs (registered for "onnx").

On top of the shared context it applies the graph-level plans:

* layout (layout.py): operands of NHWC tensors get permuted dimensions and an
  entry in operand_perm; `operand_as(i, perm)` gives a tensor in the layout a
  converter needs (one cached TRANSPOSE, a RESHAPE when only size-1 axes
  move, or a constant transposed at conversion); `axis(i, a)` remaps axes;
  NHWC graph outputs are written to a temporary and transposed back.
* fusion (fusion.py): `fused_output(node)` gives the FuseCode and output of
  a producer that absorbs its Relu/Clip; QDQ cores read and write through
  tensor aliases; absorbed nodes emit nothing.

Converters are registered with `common.onnx_op`, which runs them through
`convert_node` so all of this happens around every node.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from nnapi import FuseCode, OperandCode as C, OperandType, OperationCode as Op

from .. import convert as driver
from ..context import ConversionContext, stored
from ..registry import Reason, Supported, Unsupported
from ..source_graph import SourceModel
from . import fusion, layout, quant

# QLinear ops without weights that compute in float when NNAPI refuses their scales (float_core)
FLOAT_QLINEAR = {"QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearAveragePool",
                 "QLinearGlobalAveragePool", "QLinearConcat"}
ACTIVATION_OPS = {FuseCode.RELU: Op.RELU, FuseCode.RELU1: Op.RELU1, FuseCode.RELU6: Op.RELU6}
# outputs NNAPI computes as int32 where ONNX has int64 (the indices of ArgMax, ArgMin, TopK)
INDEX_OUTPUTS = {"ArgMax": (0,), "ArgMin": (0,), "TopK": (1,)}
INDEX_NOTE = "int64 -> int32: NNAPI indices are int32"


class OnnxContext(ConversionContext):
    def __init__(self, graph, model, feature_level, input_shapes=None, fmt="onnx", graphs=(),
                 subgraph_models=None):
        super().__init__(graph, model, feature_level, input_shapes, fmt, graphs, subgraph_models)
        cache = graph.__dict__.setdefault("_onnx_plans", {})
        # constant folding (converters/folding.py) turns tensors into constants: plan again after it
        folded = sum(n.folded for n in graph.nodes)
        key = (feature_level, folded, tuple(sorted((k, tuple(v)) for k, v in self.input_shapes.items())))
        if key not in cache:
            cache[key] = {"layout": layout.plan(graph, feature_level), "fusion": fusion.plan(graph), "support": {}}
        self.plans = cache[key]
        self.layout: dict = self.plans["layout"]
        self.fusion: fusion.FusionPlan = self.plans["fusion"]
        self.alias: dict = {}       # tensor -> tensor read/written instead (QDQ cores)
        self.internal: dict = {}    # graph output tensor -> its NHWC operand (read by later nodes)
        self._views: dict = {}      # (tensor, perm) -> operand holding that layout
        self._pending: list = []    # (NHWC temporary, final output, perm) transposes after the node

    # -- layout ---------------------------------------------------------------------
    def resolve(self, i: int) -> int:
        return self.alias.get(i, i)

    def tensor(self, i: int):
        return self.graph.tensors[self.alias.get(i, i)]  # a QDQ core sees the quantized tensors

    def perm_of(self, i: int) -> Optional[tuple]:
        return self.layout.get(self.resolve(i))

    def source_shape(self, i: int) -> tuple:
        return super().shape(self.resolve(i))

    def int32_indices(self, i: int) -> bool:
        """Run-time int64 tensor i holds indices NNAPI computes as int32: an ArgMax/ArgMin/TopK index output,
        or the output of a node whose run-time int64 inputs all are such tensors (Unsqueeze, Gather, ...)."""
        i = self.resolve(i)
        memo = self.plans.setdefault("int32_indices", {})
        if i not in memo:
            memo[i] = False  # (a cycle is not an index chain)
            t = self.graph.tensors[i]
            src = self._producer(i)
            if np.dtype(t.dtype) == np.int64 and not t.is_constant and src is not None and not src.folded:
                if src.outputs.index(i) in INDEX_OUTPUTS.get(src.op, ()):
                    memo[i] = True
                else:
                    ins = [j for j in src.inputs if j >= 0 and np.dtype(self.graph.tensors[j].dtype) == np.int64
                           and not self.graph.tensors[j].is_constant]
                    memo[i] = bool(ins) and all(self.int32_indices(j) for j in ins)
        return memo[i]

    def _producer(self, i: int):
        producers = self.plans.get("producers")
        if producers is None:
            producers = self.plans["producers"] = {o: n for n in self.graph.nodes for o in n.outputs if o >= 0}
        return producers.get(i)

    def nnapi_type(self, i: int):
        q = self.tensor(i).quant
        if q is not None and q.per_channel and np.dtype(self.tensor(i).dtype) not in (np.int8, np.int32):
            raise Unsupported(Reason.QUANTIZATION_TYPE, f"tensor {self.tensor(i).name!r}: NNAPI has per-channel "
                                                        f"quantization only for int8 (symmetric) weights")
        if self.int32_indices(i):
            otype, cq = OperandType(C.TENSOR_INT32, self.shape(self.resolve(i))), None
        else:
            otype, cq = super().nnapi_type(i)
        perm = self.layout.get(i)
        if perm is None or len(otype.dimensions) != len(perm):
            return otype, cq
        return OperandType(otype.code, layout.permute_shape(perm, otype.dimensions), otype.scale,
                           otype.zero_point), cq

    def axis(self, i: int, a: int) -> int:
        """The operand axis of tensor i that holds its ONNX axis a."""
        return layout.axis_in(self.perm_of(i), a, len(self.source_shape(i)))

    def operand(self, i: int) -> int:
        i = self.resolve(i)
        if i in self.internal:
            return self.internal[i]
        new = i >= 0 and i not in self.operand_of
        if new and self.int32_indices(i) and not self.supported(self._producer(i).index):
            # written on the CPU: it would enter NNAPI as int64
            raise Unsupported(Reason.OPERAND_TYPE, f"tensor {self.tensor(i).name!r} is int64 from a node that "
                                                   f"stays on the CPU; NNAPI has no int64 operands")
        idx = super().operand(i)
        perm = self.layout.get(i)
        if new and perm is not None:
            self.operand_perm[idx] = perm
            self._note_layout(i, f"NCHW -> NHWC: the operand holds np.transpose(input, {perm})")
        return idx

    def _note_layout(self, i: int, note: str) -> None:  # (any boundary note on tensor i)
        self.io_rewrites[i] = "; ".join(filter(None, [self.io_rewrites.get(i), note]))

    def operand_as(self, i: int, want: Optional[tuple] = None) -> int:
        """An operand holding np.transpose(tensor i, want) (want None: the ONNX layout)."""
        i = self.resolve(i)
        want = None if want is None or layout.is_identity(want) else tuple(want)
        if self.tensor(i).is_constant:
            return self.operand(i) if want is None else self.weight(i, want)
        have = self.perm_of(i)
        src = self.operand(i)
        if have == want:
            return src
        if (i, want) in self._views:
            return self._views[(i, want)]
        shape = self.source_shape(i)
        perm = layout.compose(have, want, len(shape))
        stype = self.model.operands[src].type
        otype = OperandType(stype.code, layout.permute_shape(want, shape), stype.scale, stype.zero_point)
        out = self.temp(otype, f"{self.tensor(i).name}/{'nhwc' if want else 'onnx_layout'}")
        if layout.moves_only_unit_axes(perm, stype.dimensions) and all(otype.dimensions):
            self.emit_form(Op.RESHAPE, "default", [out], input=src,
                           shape=self.const(np.asarray(otype.dimensions, np.int32)))
        else:
            self.emit_form(Op.TRANSPOSE, "default", [out], input=src, perm=self.const(np.asarray(perm, np.int32)))
        if want is not None:
            self.operand_perm[out] = want
        self._views[(i, want)] = out
        return out

    def broadcast_operand(self, i: int, perm: Optional[tuple], rank: int) -> int:
        """Input i of a broadcasting op whose output has layout perm and the given rank."""
        shape = self.source_shape(i)
        if len(shape) == rank:
            return self.operand_as(i, perm)
        if perm is None or int(np.prod(shape)) == 1:
            return self.operand(i)  # right-aligned broadcasting is unchanged
        if self.is_const(self.resolve(i)):
            return self.weight(i, perm, rank=rank)
        raise Unsupported(Reason.RANK, f"run-time tensor {self.tensor(i).name!r} of rank {len(shape)} broadcast "
                                       f"against an NHWC rank-{rank} tensor")

    def forward(self, x: int, y: int) -> None:
        """Tensor y is tensor x (Identity, Dropout): no operation unless y is a graph output."""
        x, y = self.resolve(x), self.resolve(y)
        if y in self.graph.outputs or self.is_const(x):
            out = self.output(y)
            src = self.operand_as(x, self.operand_perm.get(out))
            shape = self.model.operands[out].type.dimensions
            self.emit_form(Op.RESHAPE, "default", [out], input=src, shape=self.const(np.asarray(shape, np.int32)))
            return
        self.share(y, self.operand_as(x, self.layout.get(y)))

    def share(self, y: int, operand: int) -> None:
        """Tensor y (not a graph output) is held by an existing operand already in y's layout."""
        y = self.resolve(y)
        if y in self.operand_of:
            raise Unsupported(Reason.INVALID, f"tensor {self.tensor(y).name!r} is written twice")
        self.operand_of[y] = operand

    def temp_like(self, i: int, name_suffix: str = "pre_activation", **changes) -> int:
        """A temporary in tensor i's operand type and layout (recorded in operand_perm)."""
        i = self.resolve(i)
        idx = super().temp_like(i, name_suffix, **changes)
        perm = self.layout.get(i)
        if perm is not None and len(self.model.operands[idx].type.dimensions) == len(perm):
            self.operand_perm[idx] = perm
        return idx

    def operand_data(self, i: int) -> int:
        """An operand whose row-major data is tensor i's in the ONNX layout (for reshapes)."""
        perm, shape = self.perm_of(i), self.source_shape(i)
        if perm is None or layout.moves_only_unit_axes(perm, shape):
            return self.operand(i)
        return self.operand_as(i, None)

    def output(self, i: int) -> int:
        i = self.resolve(i)
        perm = self.layout.get(i)
        if perm is None and self.tensor(i).shape is None and self._writes_nhwc(self.node):
            # the plan cannot give a tensor of unknown rank a layout, so NHWC data would pass as NCHW
            raise Unsupported(Reason.DYNAMIC_SHAPE, f"{self.node.label()}: output {self.tensor(i).name!r} has "
                                                    f"unknown rank after a layout change; declare its shape "
                                                    f"(or run onnx shape inference with the input shapes pinned)")
        if i in self.graph.outputs and self.int32_indices(i):
            self._note_layout(i, INDEX_NOTE)
        if perm is None:
            return super().output(i)
        if i in self.graph.outputs and self.feature_level >= 2:  # write NHWC, transpose back after the node
            if i in self.operand_of:
                raise Unsupported(Reason.INVALID, f"tensor {self.tensor(i).name!r} is written twice")
            otype, _ = ConversionContext.nnapi_type(self, i)  # the graph output keeps the ONNX layout
            final = self.model.add_operand(otype, name=self.tensor(i).name)
            self.operand_of[i], self.tensor_of[final] = final, i
            self._note_rewrite(i, otype)
            temp = self.temp_like(i, "nhwc")
            self.internal[i] = temp
            self._pending.append((temp, final, layout.inverse(perm)))
            return temp
        idx = super().output(i)
        self.operand_perm[idx] = perm
        if i in self.graph.outputs:
            self._note_layout(i, f"NHWC -> NCHW: the output holds np.transpose(output, {perm})")
        return idx

    def _writes_nhwc(self, node) -> bool:
        """Does `node` compute in NHWC (a 4-D spatial op, or an op fed by a layout-changed operand)?"""
        if node is None:
            return False
        if node.op in layout.SPATIAL:
            return bool(node.inputs) and node.inputs[0] >= 0 and self.tensor(node.inputs[0]).rank == 4
        if node.op not in layout.FOLLOW and node.op not in layout.BROADCAST and node.op not in layout.REDUCE:
            return False  # every other op sees (and writes) the ONNX layout
        return any(t >= 0 and self.layout.get(self.resolve(t)) is not None for t in node.inputs)

    def weight(self, i: int, perm: Optional[tuple] = None, what: str = "weights", rank: Optional[int] = None,
               unsigned: bool = False) -> int:
        """A constant operand of tensor i's data transposed by perm (quantization kept, channel axis moved);
        `rank` first prepends size-1 axes (numpy broadcasting) so perm can be a 4-D layout; `unsigned`
        stores per-tensor int8 data as uint8 (+128) to pair with uint8 activations."""
        i = self.resolve(i)
        data = self.const_value(i, what)
        otype, cq = self.nnapi_type(i)  # constants are never in the layout plan: ONNX dimensions
        if unsigned and otype.code == C.TENSOR_QUANT8_ASYMM_SIGNED:
            otype = OperandType(C.TENSOR_QUANT8_ASYMM, otype.dimensions, otype.scale, otype.zero_point + 128)
        if rank is not None and data.ndim < rank:
            if cq is not None:
                cq = (cq[0], cq[1] + rank - data.ndim)
            data = data.reshape((1,) * (rank - data.ndim) + data.shape)
        if perm is not None:
            data = np.transpose(data, perm)
            if cq is not None:
                cq = (cq[0], tuple(perm).index(cq[1]))
        dims = data.shape or (1,)
        data = stored(otype.code, data)
        idx = self.model.add_operand(OperandType(otype.code, dims, otype.scale, otype.zero_point),
                                     name=f"{self.tensor(i).name}{'/transposed' if perm else ''}")
        if cq is not None:
            self.model.set_operand_symm_per_channel_quant_params(idx, cq[0], cq[1])
        self.model.set_operand_value(idx, np.ascontiguousarray(data.astype(OperandType(otype.code).dtype)
                                                               .reshape(dims)))
        return idx

    # -- fusion -----------------------------------------------------------------------
    def intact(self, members) -> bool:
        """Every node between the first and last of a fusion group's members (exclusive) converts, so the
        group cannot be cut by a CPU-fallback node (partitions are runs of consecutive nodes)."""
        return all(self.supported(k) for k in range(min(members) + 1, max(members)) if k not in members)

    def folded_bn(self, node):
        """The BatchNormalization node folded into this Conv, or None."""
        k = self.fusion.bn_fold.get(node.index)
        return None if k is None or not self.intact({node.index, k}) else self.graph.nodes[k]

    def _tail(self, node, k: int):
        """(tensor the fused chain ends in, FuseCode) for output k of node: through a folded BN and an
        absorbed Relu/Clip."""
        bn = self.folded_bn(node)
        chain = {node.index} if bn is None else {node.index, bn.index}
        tail = max(chain)
        act = self.fusion.activation_of.get(tail)
        if act is None or not self.intact(chain | {act[0]}):
            return self.graph.nodes[tail].outputs[k], FuseCode.NONE
        return self.graph.nodes[act[0]].outputs[0], act[1]

    def quantized_core(self, k: int) -> bool:
        """Node k is the core of a QDQ group that converts as one quantized op."""
        return k in self.fusion.core_alias and self.intact(self.fusion.core_members[k])

    def fused_output(self, node, k: int = 0) -> tuple[int, int]:
        """(FuseCode operand, output operand): the output of the absorbed Relu/Clip when there is one."""
        tensor, code = self._tail(node, k)
        return self.i32(code), self.output(tensor)

    def unfused_output(self, node, k: int = 0):
        """(operand to write, finish) for ops without a FuseCode: finish() applies an absorbed activation."""
        tensor, code = self._tail(node, k)
        final = self.output(tensor)
        if code == FuseCode.NONE:
            return final, (lambda: None)
        temp = self.temp_like(tensor)
        return temp, (lambda: self.emit_form(ACTIVATION_OPS[code], "default", [final], input=temp))

    def supported(self, k: int) -> bool:
        """Whether node k of this graph converts at this feature level (the driver's check, cached)."""
        memo, active = self.plans["support"], self.plans.setdefault("active", set())
        if k in memo:
            return memo[k]
        if k in active:  # a plan that depends on itself is not taken
            self.plans["guessed"] = True
            return False
        outer, self.plans["guessed"] = self.plans.get("guessed", False), False
        active.add(k)
        try:
            g = next(n for n, gr in enumerate(self.graphs) if gr is self.graph)
            source = SourceModel("onnx", self.graphs)
            verdict = isinstance(driver.check_node(source, g, self.graph.nodes[k], self.feature_level,
                                                   self.input_shapes), Supported)
        finally:
            active.discard(k)
        guessed = self.plans["guessed"]
        self.plans["guessed"] = outer or guessed
        if not guessed or not active:  # a verdict that read an unfinished one is not final (order-dependent)
            memo[k] = verdict
        return verdict

    def absorbed(self, node) -> bool:
        """True when a fusion plan folds this node into another (it then emits nothing)."""
        f, k = self.fusion, node.index
        if k in f.producer_of:
            p = f.producer_of[k]
            members = {p, k}
            if p in f.bn_into and self.absorbed(self.graph.nodes[p]):  # the chain starts at the Conv
                members.add(f.bn_into[p])
            return self.supported(p) and self.intact(members)
        if k in f.bn_into:
            return self.supported(f.bn_into[k]) and self.intact({f.bn_into[k], k})
        if k in f.q_core:
            return self.supported(f.q_core[k]) and self.quantized_core(f.q_core[k])
        if k in f.dq_cores:
            return all(self.supported(c) and self.quantized_core(c) for c in f.dq_cores[k])
        return False

    def float_core(self, node) -> bool:
        """A QDQ core whose quantized form NNAPI refuses for its quantization parameters alone (LOGISTIC,
        SOFTMAX and TANH have fixed output scales, the pools and RESHAPE keep the input's): it computes in
        float between DEQUANTIZE and QUANTIZE instead, rounding once to the requested output scale as the
        QDQ graph (and onnxruntime's QLinear kernels) do, where a requantization after the fixed scale would
        round twice."""
        memo, probing = self.plans.setdefault("float_core", {}), self.plans.setdefault("probing", set())
        k = node.index
        if k in probing:
            return False  # the probe itself: the quantized form
        if k not in memo:
            probing.add(k)
            try:
                g = next(n for n, gr in enumerate(self.graphs) if gr is self.graph)
                verdict = driver.check_node(SourceModel("onnx", self.graphs), g, node, self.feature_level,
                                            self.input_shapes)
            finally:
                probing.discard(k)
            memo[k] = isinstance(verdict, Unsupported) and verdict.reason is Reason.QUANTIZATION_TYPE
        return memo[k]

    def _float_twin(self, t: int, role: str) -> int:
        """A float32 tensor standing for quantized tensor t (a QLinear op computed in float), in t's layout;
        one per role ("input": its DEQUANTIZE, "output": before its QUANTIZE), so a reader never sees the
        unrounded value a writer computed."""
        twins = self.graph.__dict__.setdefault("_float_twins", {})
        if (t, role) not in twins:
            src = self.graph.tensors[t]
            k = twins[(t, role)] = len(self.graph.tensors)
            self.graph.tensors.append(dataclasses.replace(src, index=k, name=f"{src.name}/float_{role}",
                                                          dtype=np.dtype(np.float32), quant=None, data=None))
        if t in self.layout:
            self.layout[twins[(t, role)]] = self.layout[t]
        return twins[(t, role)]

    def _convert_float_core(self, node, fn) -> None:
        """The core in float between DEQUANTIZE and QUANTIZE: a QDQ core's run-time DequantizeLinear inputs
        and QuantizeLinear outputs (absorbed into the group) are emitted here; a QLinear op reads and writes
        float twins of its quantized tensors."""
        if node.index in self.fusion.core_alias:
            pairs, alias = self.fusion.core_alias[node.index], {}
        else:
            data = [i for i in quant.data_inputs(node) if i >= 0 and self.graph.tensors[i].quant is not None]
            pairs = {self._float_twin(t, "input"): t for t in data}
            pairs.update({self._float_twin(t, "output"): t for t in node.outputs if t >= 0})
            alias = {t: f for f, t in pairs.items()}
        outputs = set(node.outputs)
        for f, q in pairs.items():
            if not ({f, q} & outputs) and not self.graph.tensors[f].is_constant and f not in self.operand_of:
                self.emit_form(Op.DEQUANTIZE, "default", [self.output(f)], input=self.operand(q))
        self.alias = alias
        try:
            fn(node, self)
        finally:
            self.alias = {}
        for f, q in pairs.items():
            if {f, q} & outputs:
                self.emit_form(Op.QUANTIZE, "default", [self.output(q)], input=self.operand(f))

    def convert_node(self, node, fn) -> None:
        """Run converter fn on node with the plans applied (see common.onnx_op)."""
        runtime = quant.runtime_parameter(self.graph, node)
        if runtime:
            raise Unsupported(Reason.NON_CONSTANT_OPERAND, f"{node.label()}: {runtime[0]} {runtime[1]!r} is a run-time "
                                                           f"tensor; NNAPI quantization parameters are constants")
        if self.absorbed(node):
            return
        core = self.quantized_core(node.index)
        if (core or node.op in FLOAT_QLINEAR) and self.float_core(node):
            self._convert_float_core(node, fn)
        else:
            self.alias = self.fusion.core_alias[node.index] if core else {}
            try:
                fn(node, self)
            finally:
                self.alias = {}
        for temp, final, perm in self._pending:  # NHWC graph outputs back to the ONNX layout
            dims = self.model.operands[temp].type.dimensions
            if layout.moves_only_unit_axes(perm, dims) and all(dims):
                shape = np.asarray(self.model.operands[final].type.dimensions, np.int32)
                self.emit_form(Op.RESHAPE, "default", [final], input=temp, shape=self.const(shape))
            else:
                self.emit_form(Op.TRANSPOSE, "default", [final], input=temp,
                               perm=self.const(np.asarray(perm, np.int32)))
        self._pending = []


driver.CONTEXT_CLASSES["onnx"] = OnnxContext
