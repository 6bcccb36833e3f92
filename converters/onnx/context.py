"""OnnxContext: the ConversionContext of ONNX graphs (registered for "onnx").

On top of the shared context it applies the graph-level plans:

* layout (layout.py): operands of NHWC tensors get permuted dimensions and an
  entry in operand_perm; `operand_as(i, perm)` gives a tensor in the layout a
  converter needs (one cached TRANSPOSE, a RESHAPE when only size-1 axes
  move, or a constant transposed at conversion); `axis(i, a)` remaps axes;
  NHWC graph outputs are written to a temporary and transposed back.
* fusion (fusion.py, applied by fusion_context.py's FusionPlans):
  `fused_output(node)` gives the FuseCode and output of a producer that
  absorbs its Relu/Clip; QDQ cores read and write through tensor aliases, or
  compute in float when NNAPI refuses their scales; absorbed nodes emit nothing.

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
from ..registry import Reason, Unsupported
from . import fusion, layout, quant
from .fusion_context import FLOAT_QLINEAR, FusionPlans
from ..pins import pin_hint

# outputs NNAPI computes as int32 where ONNX has int64 (the indices of ArgMax, ArgMin, TopK)
INDEX_OUTPUTS = {"ArgMax": (0,), "ArgMin": (0,), "TopK": (1,)}
INDEX_NOTE = "int64 -> int32: NNAPI indices are int32"
INPUT_NOTE = "int64 -> int32: NNAPI has no int64 tensors (the values must lie in int32's range)"
CAST_NOTE = "int64 -> int32: computed at run time, and NNAPI has no int64 tensors (the values must lie in int32's range)"


class OnnxContext(FusionPlans, ConversionContext):
    applies_plans_itself = True  # convert_node

    def __init__(self, graph, model, feature_level, input_shapes=None, fmt="onnx", graphs=(),
                 subgraph_models=None):
        super().__init__(graph, model, feature_level, input_shapes, fmt, graphs, subgraph_models)
        self.alias: dict = {}       # tensor -> tensor read/written instead (QDQ cores)
        if "layout" not in self.plans:
            self.plans["layout"] = layout.plan(graph, feature_level, self.shuffle_sources())
            self.plans["fusion"] = fusion.plan(graph)
        self.layout: dict = self.plans["layout"]
        self.fusion: fusion.FusionPlan = self.plans["fusion"]
        self.internal: dict = {}    # graph output tensor -> its NHWC operand (read by later nodes)
        self._views: dict = {}      # (tensor, perm) -> operand holding that layout
        self._pending: list = []    # (NHWC temporary, final output, perm) transposes after the node
        self._lifting = False       # converting a 1-D spatial op as 2-D (lifted)

    # -- layout ---------------------------------------------------------------------
    def resolve(self, i: int) -> int:
        return self.alias.get(i, i)

    def tensor(self, i: int):
        return self.graph.tensors[self.alias.get(i, i)]  # a QDQ core sees the quantized tensors

    def perm_of(self, i: int) -> Optional[tuple]:
        return self.layout.get(self.resolve(i))

    def source_shape(self, i: int) -> tuple:
        shape = super().shape(self.resolve(i))
        if self._lifting and self.tensor(i).rank == 3:
            return shape[0], shape[1], 1, shape[2]
        return shape

    def const_value(self, i: int, what: str = "input") -> np.ndarray:
        data = super().const_value(i, what)
        if self._lifting and data.ndim == 3:  # 1-D weights [O, I, K] as [O, I, 1, K]
            return data.reshape(data.shape[0], data.shape[1], 1, data.shape[2])
        return data

    # -- 1-D spatial ops as 2-D (H = 1) ---------------------------------------------------
    def lifted(self, node):
        """`node` read as its 2-D op with H = 1 when its input is rank 3 ([N, C, L] as [N, C, 1, L]): a copy
        with 2-D window attributes; until the node is converted, source_shape, const_value, operand_as(x, NHWC)
        and output() see the 4-D form, and the NLC operands RESHAPE to and from NHWC. Other nodes: itself."""
        x = node.inputs[0] if node.inputs else -1
        if x < 0 or node.op not in layout.LIFTS_1D or self.tensor(x).rank != 3:
            return node
        attrs = dict(node.attrs)
        for key in ("kernel_shape", "strides", "dilations"):
            if key in attrs:
                attrs[key] = [1, *attrs[key]]
        if "pads" in attrs:
            pads = list(attrs["pads"])
            if len(pads) != 2:
                raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: pads {pads} are not 1-D")
            attrs["pads"] = [0, pads[0], 0, pads[1]]
        self._lifting = True
        return dataclasses.replace(node, attrs=attrs)

    def _unlifted(self, fn, *args):
        lifting, self._lifting = self._lifting, False
        try:
            return fn(*args)
        finally:
            self._lifting = lifting

    def _reshape_dims(self, dims) -> np.ndarray:
        if sum(1 for d in dims if not d) > 1:
            raise Unsupported(Reason.DYNAMIC_SHAPE, f"{self.node.label()}: a 1-D spatial op as 2-D needs all but one "
                                                    f"extent known, has {list(dims)}")
        return np.asarray([d or -1 for d in dims], np.int32)

    def _lifted_input(self, i: int) -> int:
        """The NHWC [N, 1, L, C] view of rank-3 tensor i (a RESHAPE of its NLC operand)."""
        if (i, "lifted") in self._views:
            return self._views[(i, "lifted")]
        src = self._unlifted(self.operand_as, i, layout.NLC)
        t = self.model.operands[src].type
        n, length, c = t.dimensions
        out = self.temp(OperandType(t.code, (n, 1, length, c), t.scale, t.zero_point), f"{self.tensor(i).name}/2d")
        self.emit_form(Op.RESHAPE, "default", [out], input=src, shape=self.const(self._reshape_dims((n, 1, length, c))))
        self._views[(i, "lifted")] = out
        return out

    def _lifted_output(self, i: int) -> int:
        """A 4-D [N, 1, L, C] temporary for rank-3 output i, RESHAPEd into its NLC operand after the node."""
        final = self._unlifted(self.output, i)
        if self.perm_of(i) != layout.NLC:
            raise Unsupported(Reason.RANK, f"{self.node.label()}: output {self.tensor(i).name!r} is not in the "
                                           f"channels-last layout a 1-D spatial op writes")
        t = self.model.operands[final].type
        n, length, c = t.dimensions
        temp = self.temp(OperandType(t.code, (n, 1, length, c), t.scale, t.zero_point), f"{self.tensor(i).name}/2d")
        self._pending.insert(0, (temp, final, None))
        return temp

    def int32_indices(self, i: int) -> bool:
        """Run-time int64 tensor i holds indices NNAPI computes as int32: an ArgMax/ArgMin/TopK index output,
        an int64 input of the main graph (given as int32, INPUT_NOTE), a run-time Cast to int64 from another type
        (CAST_NOTE), or the output of a node whose run-time int64 inputs all are such tensors (Unsqueeze, Gather,
        CumSum, ...)."""
        i = self.resolve(i)
        memo = self.plans.setdefault("int32_indices", {})
        if i not in memo:
            memo[i] = False  # (a cycle is not an index chain)
            t = self.graph.tensors[i]
            src = self._producer(i)
            if np.dtype(t.dtype) == np.int64 and not t.is_constant and src is None:
                # the ONNX main graph is graphs[0] (reader.py); a body's inputs are loop-carried or captured values
                memo[i] = i in self.graph.inputs and (self.graph is self.graphs[0] or self._loop_counter(i))
            elif np.dtype(t.dtype) == np.int64 and not t.is_constant and not src.folded:
                if src.outputs.index(i) in INDEX_OUTPUTS.get(src.op, ()) or self._cast_to_int64(src):
                    memo[i] = True
                else:
                    ins = [j for j in src.inputs if j >= 0 and np.dtype(self.graph.tensors[j].dtype) == np.int64
                           and not self.graph.tensors[j].is_constant]
                    memo[i] = bool(ins) and all(self.int32_indices(j) for j in ins)
        return memo[i]

    def _loop_counter(self, i: int) -> bool:
        """Tensor i is a Loop body's iteration number, which the WHILE holds as an int32 counter (ops/loop.py)."""
        return bool(self.graph.inputs) and i == self.graph.inputs[0] and any(
            n.op == "Loop" and self.graphs[k] is self.graph for g in self.graphs for n in g.nodes
            for k in n.subgraphs.values())

    def _cast_to_int64(self, node) -> bool:
        """node is a Cast to int64 of a run-time tensor of another type (a mask from a comparison, position ids
        computed in float): NNAPI holds its result, and what int64 arithmetic makes of it, as int32."""
        return (node.op == "Cast" and bool(node.inputs) and node.inputs[0] >= 0
                and not self.graph.tensors[node.inputs[0]].is_constant
                and np.dtype(self.graph.tensors[node.inputs[0]].dtype) != np.int64)

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
        src = self._producer(i) if new and self.int32_indices(i) else None
        if src is not None and not self.supported(src.index):
            # written on the CPU: it would enter NNAPI as int64
            raise Unsupported(Reason.OPERAND_TYPE, f"tensor {self.tensor(i).name!r} is int64 from a node that "
                                                   f"stays on the CPU; NNAPI has no int64 operands")
        idx = super().operand(i)
        if new and i in self.graph.inputs and self.int32_indices(i):
            self._note_layout(i, INPUT_NOTE)
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
        if self._lifting and want == layout.NHWC and self.tensor(i).rank == 3 and not self.tensor(i).is_constant:
            return self._lifted_input(i)
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

    def share(self, y: int, operand: int, how: str = "identity") -> None:
        """Tensor y (not a graph output) is held by an existing operand already in y's layout (the node, when
        it emits nothing else, is absorbed `how` into the node that writes that operand)."""
        y = self.resolve(y)
        if y in self.operand_of:
            raise Unsupported(Reason.INVALID, f"tensor {self.tensor(y).name!r} is written twice")
        self.operand_of[y] = operand
        t = self.tensor_of.get(operand)
        producer = None if t is None else self._producer(t)
        self.absorb(None if producer is None or producer.folded else producer.index, how)

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
        if self._lifting and self.tensor(i).rank == 3:
            return self._lifted_output(i)
        perm = self.layout.get(i)
        if perm is None and self.tensor(i).shape is None and self._writes_nhwc(self.node):
            # the plan cannot give a tensor of unknown rank a layout, so NHWC data would pass as NCHW
            raise Unsupported(Reason.DYNAMIC_SHAPE, f"{self.node.label()}: output {self.tensor(i).name!r} has "
                                                    f"unknown rank after a layout change; {pin_hint()} "
                                                    f"if they are not pinned yet, else declare its shape")
        if i in self.graph.outputs and self.int32_indices(i):
            self._note_layout(i, INDEX_NOTE)
        if self.int32_indices(i) and self._cast_to_int64(self.node):
            self.notes.append(f"{CAST_NOTE} ({self.tensor(i).name!r} and what is computed from it)")
        if perm is None:
            return super().output(i)
        if i in self.graph.outputs and self.has(Op.TRANSPOSE):  # write NHWC, transpose back after the node
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
            return bool(node.inputs) and node.inputs[0] >= 0 and \
                layout.spatial_perm(node.op, self.tensor(node.inputs[0]).rank) is not None
        if node.op not in layout.FOLLOW and node.op not in layout.BROADCAST and node.op not in layout.REDUCE:
            return False  # every other op sees (and writes) the ONNX layout
        return any(t >= 0 and self.layout.get(self.resolve(t)) is not None for t in node.inputs)

    def weight(self, i: int, perm: Optional[tuple] = None, what: str = "weights", rank: Optional[int] = None,
               unsigned: bool = False, data: Optional[np.ndarray] = None) -> int:
        """A constant operand of tensor i's data transposed by perm (quantization kept, channel axis moved);
        `rank` first prepends size-1 axes (numpy broadcasting) so perm can be a 4-D layout; `unsigned`
        stores per-tensor int8 data as uint8 (+128) to pair with uint8 activations; `data` stands for the
        tensor's values (a part of them, in the same quantization and with the same channel extent)."""
        i = self.resolve(i)
        data = self.const_value(i, what) if data is None else data
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

    def convert_node(self, node, fn) -> None:
        """Run converter fn on node with the plans applied (see common.onnx_op)."""
        runtime = quant.runtime_parameter(self.graph, node)
        if runtime:
            raise Unsupported(Reason.NON_CONSTANT_OPERAND, f"{node.label()}: {runtime[0]} {runtime[1]!r} is a run-time "
                                                           f"tensor; NNAPI quantization parameters are constants")
        absorption = self.absorption_of(node)
        if absorption is not None:
            self.absorption = absorption
            return
        core = self.quantized_core(node.index)
        if (core or node.op in FLOAT_QLINEAR) and self.float_core(node):
            try:
                self._convert_float_core(node, fn)
            finally:
                self._lifting = False
        else:
            self.alias = self.fusion.core_alias[node.index] if core else {}
            try:
                fn(node, self)
            finally:
                self.alias = {}
                self._lifting = False
        for temp, final, perm in self._pending:  # lifted 1-D outputs; NHWC graph outputs back to the ONNX layout
            dims = self.model.operands[temp].type.dimensions
            if perm is None:
                shape = self._reshape_dims(self.model.operands[final].type.dimensions)
                self.emit_form(Op.RESHAPE, "default", [final], input=temp, shape=self.const(shape))
            elif layout.moves_only_unit_axes(perm, dims) and all(dims):
                shape = np.asarray(self.model.operands[final].type.dimensions, np.int32)
                self.emit_form(Op.RESHAPE, "default", [final], input=temp, shape=self.const(shape))
            else:
                self.emit_form(Op.TRANSPOSE, "default", [final], input=temp,
                               perm=self.const(np.asarray(perm, np.int32)))
        self._pending = []


driver.CONTEXT_CLASSES["onnx"] = OnnxContext
