"""FusionPlans: how OnnxContext (context.py) applies the fusion plans (fusion.py) around each node.

A producer absorbs its Relu/Clip (`fused_output`, `unfused_output`) and a Conv its BatchNormalization
(`folded_bn`); the absorbed nodes emit nothing (`absorption_of`). A QDQ group converts as one quantized
operation, or, when NNAPI refuses its quantization parameters alone, in float between DEQUANTIZE and
QUANTIZE (`float_core`), as do the QLinear ops without weights.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from nnapi import FuseCode, OperationCode as Op

from .. import convert as driver
from ..registry import Reason, Unsupported
from ..source_graph import SourceModel
from . import quant

# QLinear ops without weights that compute in float when NNAPI refuses their scales (float_core)
FLOAT_QLINEAR = {"QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearAveragePool",
                 "QLinearGlobalAveragePool", "QLinearConcat"}
ACTIVATION_OPS = {FuseCode.RELU: Op.RELU, FuseCode.RELU1: Op.RELU1, FuseCode.RELU6: Op.RELU6}


class FusionPlans:
    """The fusion half of OnnxContext (a mixin over ConversionContext; reads the context's graph, plans
    and layout)."""

    def shuffle_sources(self) -> dict:
        """shuffle output tensor -> shuffled tensor: a shuffle keeps its source's layout (layout.plan)."""
        return {self.graph.nodes[k].outputs[0]: sh.source for k, sh in self.shuffles.items()}

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
        if act is None or not self.intact(chain | {act[0]}):  # (node itself: it may be a slice's part)
            return (node if tail == node.index else self.graph.nodes[tail]).outputs[k], FuseCode.NONE
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

    def absorption_of(self, node) -> Optional[dict]:
        """{"into", "how"} when a fusion plan folds this node into another (it then emits nothing), else None."""
        shuffle = super().absorption_of(node)
        if shuffle is not None:
            return shuffle
        f, k = self.fusion, node.index
        if k in f.producer_of:
            p = f.producer_of[k]
            members = {p, k}
            if p in f.bn_into and self.absorbed(self.graph.nodes[p]):  # the chain starts at the Conv
                members.add(f.bn_into[p])
                p = f.bn_into[p]
            ok = self.supported(f.producer_of[k]) and self.intact(members)
            return {"into": p, "how": "fused activation"} if ok else None
        if k in f.bn_into:
            ok = self.supported(f.bn_into[k]) and self.intact({f.bn_into[k], k})
            return {"into": f.bn_into[k], "how": "batch norm folded into conv"} if ok else None
        if k in f.q_core:
            ok = self.supported(f.q_core[k]) and self.quantized_core(f.q_core[k])
            return {"into": f.q_core[k], "how": "quantize of a quantized op's output"} if ok else None
        if k in f.dq_cores:
            cores = f.dq_cores[k]
            ok = all(self.supported(c) and self.quantized_core(c) for c in cores)
            return {"into": min(cores) if len(cores) == 1 else None,
                    "how": "dequantize of a quantized op's input"} if ok else None
        return None

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
