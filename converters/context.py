"""ConversionContext: what a per-op converter uses to emit NNAPI operations.

It owns the one mapping from source tensors to NNAPI operands (types,
quantization, the int8 -> uint8 rewrite below feature level 4, rank-0
tensors as shape [1]), constants and scalars, and the emission of operations
through the op specs' named forms.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

import nnapi
from nnapi import FuseCode, OperandCode as C, OperandType, OperationCode as Op
from nnapi.ops import SPECS, level_for

from . import typed_moves
from .folding import refused_upstream
from .registry import Reason, Unsupported
from .source_graph import SourceGraph, SourceNode, SourceTensor
from .pins import pin_hint

# TFLite fused activations that NNAPI expresses as a FuseCode
FUSE_CODES = {0: FuseCode.NONE, 1: FuseCode.RELU, 2: FuseCode.RELU1, 3: FuseCode.RELU6}
FUSED_TANH, FUSED_SIGN_BIT = 4, 5

SIGNED_FROM_LEVEL = C.TENSOR_QUANT8_ASYMM_SIGNED.feature_level  # int8 tensors below it are stored as uint8


def stored(code: C, data: np.ndarray) -> np.ndarray:
    """`data` as an operand of `code` stores it: below feature level 4 an int8 tensor becomes
    TENSOR_QUANT8_ASYMM (see ConversionContext.nnapi_type), its values shifted by +128."""
    if code == C.TENSOR_QUANT8_ASYMM and data.dtype == np.int8:
        return (data.astype(np.int16) + 128).astype(np.uint8)
    return data


def broadcast_data(data: np.ndarray, dims, what: str) -> np.ndarray:
    """np.broadcast_to(data, dims), or Unsupported(INVALID) naming `what` when the shapes do not broadcast."""
    try:
        return np.broadcast_to(data, tuple(dims))
    except ValueError:
        raise Unsupported(Reason.INVALID, f"{what} of shape {list(np.shape(data))} does not broadcast to "
                                          f"{list(dims)}") from None


def int8_from_stored(data: np.ndarray) -> np.ndarray:
    """Undo `stored` for an int8 source tensor held as uint8."""
    return (data.astype(np.int16) - 128).astype(np.int8)


class ConversionContext:
    # True for contexts whose converters' wrapper applies the graph plans (absorbed nodes) itself, in its own
    # order (OnnxContext.convert_node); else the driver skips absorbed nodes (converters/convert.py)
    applies_plans_itself = False

    def __init__(self, graph: SourceGraph, model: nnapi.Model, feature_level: int,
                 input_shapes: Optional[dict] = None, fmt: str = "tflite", graphs: Sequence[SourceGraph] = (),
                 subgraph_models: Optional[dict] = None):
        self.graph = graph
        self.graphs = list(graphs) or [graph]
        self.model = model
        self.feature_level = feature_level
        self.input_shapes = input_shapes or {}
        self.fmt = fmt
        self.operand_of: dict[int, int] = {}     # source tensor -> NNAPI operand
        self.tensor_of: dict[int, int] = {}      # NNAPI operand -> source tensor it mirrors
        self.free_inputs: list[int] = []         # source tensors read but produced outside this model
        self.io_rewrites: dict[int, str] = {}    # source tensor -> boundary conversion the user must apply
        # NNAPI operand -> axis permutation: the operand holds np.transpose(source tensor, perm)
        # (set by importers that change layout, e.g. ONNX NCHW -> NHWC)
        self.operand_perm: dict[int, tuple] = {}
        self._scalars: dict = {}
        self.notes: list[str] = []               # what the user should know about this node's conversion
        self.node: Optional[SourceNode] = None
        # {"into": node index or None, "how": ...} when this node's computation happens elsewhere (it emits
        # nothing of its own): set where the absorption is decided, reported by coverage
        self.absorption: Optional[dict] = None
        self.subgraph_models = subgraph_models if subgraph_models is not None else {}
        # graph-level plans, shared by every context of this graph, feature level and pinned shapes (constant
        # folding turns tensors into constants: plan again after it)
        cache = graph.__dict__.setdefault("_plans", {})
        folded = sum(n.folded for n in graph.nodes)
        key = (fmt, feature_level, folded, tuple(sorted((k, tuple(v)) for k, v in self.input_shapes.items())))
        self.plans = cache.setdefault(key, {"support": {}})

    # -- source tensors -----------------------------------------------------------
    def tensor(self, i: int) -> SourceTensor:
        return self.graph.tensors[i]

    def shape(self, i: int) -> tuple:
        """Static shape of tensor i; unknown extents are 0 (rank-0 tensors are [1])."""
        t = self.tensor(i)
        if t.name in self.input_shapes:
            return tuple(self.input_shapes[t.name])
        if t.shape is None:
            return ()
        shape = t.shape
        if t.shape_signature is not None and len(t.shape_signature) == len(shape):
            shape = tuple(0 if s == -1 else d for d, s in zip(shape, t.shape_signature))
        shape = tuple(0 if d < 0 else d for d in shape)
        return shape if shape else (1,)

    def is_const(self, i: int) -> bool:
        return i >= 0 and self.tensor(i).is_constant

    def const_value(self, i: int, what: str = "input") -> np.ndarray:
        """The constant data of tensor i, or Unsupported when it is computed at run time."""
        if i < 0 or not self.tensor(i).is_constant:
            name = self.tensor(i).name if i >= 0 else "(absent)"
            big = refused_upstream(self.graph, i) if i >= 0 else None  # too large to evaluate (folding.py)
            why = f" ({big.label()}: {big.fold_refused})" if big is not None else ""
            raise Unsupported(Reason.NON_CONSTANT_OPERAND, f"{what} tensor {name!r} must be a constant{why}")
        return self.tensor(i).data

    def signed_as_unsigned(self) -> bool:
        return self.feature_level < SIGNED_FROM_LEVEL

    def nnapi_type(self, i: int) -> tuple[OperandType, Optional[tuple]]:
        """(OperandType, (scales, channel_dim) or None) for source tensor i at this feature level."""
        t = self.tensor(i)
        dims = self.shape(i)
        dt = np.dtype(t.dtype)
        q = t.quant
        label = f"tensor {t.name!r}"
        if t.unsupported_type is not None:
            raise Unsupported(Reason.OPERAND_TYPE, f"{label} has type {t.unsupported_type}, which NNAPI has no "
                                                   f"type for")
        if dt == np.float32:
            return OperandType(C.TENSOR_FLOAT32, dims), None
        if dt == np.float16:
            return OperandType(C.TENSOR_FLOAT16, dims), None
        if dt == np.bool_:
            return OperandType(C.TENSOR_BOOL8, dims), None
        if dt == np.int32:
            scale = q.scale if q is not None and not q.per_channel else 0.0
            return OperandType(C.TENSOR_INT32, dims, scale, 0), None
        if dt == np.int64:
            if t.is_constant and t.data.size and (np.abs(t.data.astype(np.float64)) < 2 ** 31).all():
                return OperandType(C.TENSOR_INT32, dims), None
            raise Unsupported(Reason.OPERAND_TYPE, f"{label} is int64, which NNAPI has no type for")
        if q is not None and q.per_channel and dt != np.int8:
            raise Unsupported(Reason.QUANTIZATION_TYPE, f"{label} is per-channel {dt.name}; NNAPI's per-channel type "
                                                        f"is symmetric int8")
        if dt == np.uint8:
            if q is None:  # raw bytes (e.g. an image before CAST): real value == stored value
                return OperandType(C.TENSOR_QUANT8_ASYMM, dims, 1.0, 0), None
            return OperandType(C.TENSOR_QUANT8_ASYMM, dims, q.scale, q.zero_point), None
        if dt == np.int8:
            if q is None:
                raise Unsupported(Reason.QUANTIZATION_TYPE, f"{label} is int8 without quantization parameters")
            if q.per_channel:
                if any(z != 0 for z in q.zero_points):
                    raise Unsupported(Reason.QUANTIZATION_TYPE, f"{label} is per-channel with non-zero zero points")
                return (OperandType(C.TENSOR_QUANT8_SYMM_PER_CHANNEL, dims),
                        (tuple(float(s) for s in q.scales), int(q.axis)))
            if self.signed_as_unsigned():
                return OperandType(C.TENSOR_QUANT8_ASYMM, dims, q.scale, q.zero_point + 128), None
            return OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, dims, q.scale, q.zero_point), None
        if dt == np.int16:
            if q is None or q.per_channel:
                raise Unsupported(Reason.QUANTIZATION_TYPE, f"{label} is int16 without per-tensor quantization")
            if q.zero_point != 0:
                raise Unsupported(Reason.QUANTIZATION_TYPE, f"{label} is int16 with zero point {q.zero_point}")
            return OperandType(C.TENSOR_QUANT16_SYMM, dims, q.scale, 0), None
        raise Unsupported(Reason.OPERAND_TYPE, f"{label} has type {dt.name}, which NNAPI has no type for")

    def _constant_data(self, i: int, otype: OperandType) -> np.ndarray:
        t = self.tensor(i)
        data = stored(otype.code, t.data)
        if data.dtype != otype.dtype:
            data = data.astype(otype.dtype)
        return data.reshape(otype.dimensions)

    def operand(self, i: int) -> int:
        """The NNAPI operand that mirrors source tensor i (created on first use)."""
        if i < 0:
            raise Unsupported(Reason.INVALID, "a required input is absent")
        if i in self.operand_of:
            return self.operand_of[i]
        t = self.tensor(i)
        if getattr(t, "sparse", False):
            raise Unsupported(Reason.OPERAND_TYPE, f"tensor {t.name!r} is a sparse constant; NNAPI needs it dense "
                                                   f"(a DENSIFY node before its consumer)")
        otype, cq = self.nnapi_type(i)
        if t.is_constant and not otype.is_fully_specified:
            raise Unsupported(Reason.DYNAMIC_SHAPE, f"constant tensor {t.name!r} has unknown dimensions")
        idx = self.model.add_operand(otype, name=t.name)
        if cq is not None:
            self.model.set_operand_symm_per_channel_quant_params(idx, cq[0], cq[1])
        if t.is_constant:
            self.model.set_operand_value(idx, self._constant_data(i, otype))
        else:
            self.free_inputs.append(i)
            self._note_rewrite(i, otype)
        self.operand_of[i] = idx
        self.tensor_of[idx] = i
        return idx

    def output(self, i: int) -> int:
        """The operand an operation writes for output tensor i."""
        if i in self.operand_of:
            raise Unsupported(Reason.INVALID, f"tensor {self.tensor(i).name!r} is written twice")
        otype, cq = self.nnapi_type(i)
        idx = self.model.add_operand(otype, name=self.tensor(i).name)
        if cq is not None:
            raise Unsupported(Reason.QUANTIZATION_TYPE, f"output tensor {self.tensor(i).name!r} is per-channel")
        self.operand_of[i] = idx
        self.tensor_of[idx] = i
        self._note_rewrite(i, otype)
        return idx

    def bind_output(self, i: int, otype: OperandType, note: Optional[str] = None) -> int:
        """The operand for output tensor i with a type the converter chose (e.g. int64 indices as
        int32); `note` documents the boundary conversion when the tensor is a model output."""
        if i in self.operand_of:
            raise Unsupported(Reason.INVALID, f"tensor {self.tensor(i).name!r} is written twice")
        idx = self.model.add_operand(otype, name=self.tensor(i).name)
        self.operand_of[i] = idx
        self.tensor_of[idx] = i
        if note:
            self.io_rewrites[i] = note
        return idx

    def _note_rewrite(self, i: int, otype: OperandType) -> None:
        if otype.code == C.TENSOR_QUANT8_ASYMM and np.dtype(self.tensor(i).dtype) == np.int8:
            self.io_rewrites[i] = "int8 -> uint8: add 128 (zero point shifted by 128)"

    def temp_like(self, i: int, name_suffix: str = "pre_activation", **changes) -> int:
        """A temporary operand with tensor i's type (e.g. before a separate activation)."""
        otype, _ = self.nnapi_type(i)
        if changes:
            otype = OperandType(changes.get("code", otype.code), changes.get("dimensions", otype.dimensions),
                                changes.get("scale", otype.scale), changes.get("zero_point", otype.zero_point))
        return self.model.add_operand(otype, name=f"{self.tensor(i).name}/{name_suffix}")

    def temp(self, otype: OperandType, name: str) -> int:
        return self.model.add_operand(otype, name=name)

    # -- graph plans -------------------------------------------------------------------
    @property
    def shuffles(self) -> dict:
        """tail node -> shuffle.Shuffle: the channel shuffles of this graph (converters/shuffle.py)."""
        if "shuffles" not in self.plans:
            from . import shuffle
            self.plans["shuffles"] = shuffle.plan(self.graph, self.fmt, self.shape)
        return self.plans["shuffles"]

    def shuffle_at(self, node):
        """The channel shuffle that node ends, when the whole chain converts in one partition; else None."""
        sh = self.shuffles.get(node.index)
        return sh if sh is not None and self.intact({sh.head, sh.middle, sh.tail}) else None

    def absorbed(self, node) -> bool:
        """True when a plan folds this node into another (it then emits nothing)."""
        return self.absorption_of(node) is not None

    def absorption_of(self, node) -> Optional[dict]:
        """{"into", "how"} when a plan folds this node into another, else None."""
        for sh in self.shuffles.values():
            if node.index in (sh.head, sh.middle):
                whole = self.supported(sh.tail) and self.intact({sh.head, sh.middle, sh.tail})
                return {"into": sh.tail, "how": "channel shuffle"} if whole else None
        return None

    def absorb(self, into: Optional[int], how: str) -> None:
        """This node emits nothing: node `into` (None: no node, e.g. a model input) computes its result."""
        self.absorption = {"into": into, "how": how}

    def intact(self, members) -> bool:
        """Every node between the first and last of a group's members (exclusive) converts, so the group
        cannot be cut by a CPU-fallback node (partitions are runs of consecutive nodes)."""
        return all(self.supported(k) for k in range(min(members) + 1, max(members)) if k not in members)

    def supported(self, k: int) -> bool:
        """Whether node k of this graph converts at this feature level (the driver's check, cached)."""
        from . import convert as driver
        from .registry import Supported
        from .source_graph import SourceModel
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
            source = SourceModel(self.fmt, self.graphs)
            verdict = isinstance(driver.check_node(source, g, self.graph.nodes[k], self.feature_level,
                                                   self.input_shapes), Supported)
        finally:
            active.discard(k)
        guessed = self.plans["guessed"]
        self.plans["guessed"] = outer or guessed
        if not guessed or not active:  # a verdict that read an unfinished one is not final (order-dependent)
            memo[k] = verdict
        return verdict

    # -- constants -----------------------------------------------------------------
    def scalar(self, code: C, value) -> int:
        key = (code, value if not isinstance(value, float) else np.float32(value).tobytes())
        if key not in self._scalars:
            idx = self.model.add_operand(OperandType(code))
            dtype = OperandType(code).dtype
            self.model.set_operand_value(idx, np.asarray(value, dtype=dtype))
            self._scalars[key] = idx
        return self._scalars[key]

    def i32(self, value: int) -> int:
        return self.scalar(C.INT32, int(value))

    def f32(self, value: float) -> int:
        return self.scalar(C.FLOAT32, float(value))

    def boolean(self, value: bool) -> int:
        return self.scalar(C.BOOL, bool(value))

    def const(self, array: np.ndarray, code: Optional[C] = None, name: str = "", scale: float = 0.0,
              zero_point: int = 0) -> int:
        array = np.asarray(array)
        if array.size == 0:
            self._refuse_empty(name)
        if code is None:
            code = {np.dtype(np.float32): C.TENSOR_FLOAT32, np.dtype(np.int32): C.TENSOR_INT32,
                    np.dtype(np.float16): C.TENSOR_FLOAT16, np.dtype(np.bool_): C.TENSOR_BOOL8}[array.dtype]
        dims = array.shape if array.ndim else (1,)
        idx = self.model.add_operand(OperandType(code, dims, scale, zero_point), name=name or None)
        self.model.set_operand_value(idx, np.ascontiguousarray(array).reshape(dims))
        return idx

    def _refuse_empty(self, name: str) -> None:
        """Unsupported for a node that would need an empty constant (NNAPI constants hold at least one
        element): almost always shapes derived from a tensor of unknown rank."""
        node = self.node
        label = node.label() if node is not None else "this node"
        for i in (list(node.inputs) + list(node.outputs)) if node is not None else []:
            if i >= 0 and self.tensor(i).shape is None:
                raise Unsupported(Reason.DYNAMIC_SHAPE, f"{label}: tensor {self.tensor(i).name!r} has unknown rank "
                                                        f"({pin_hint()}, or declare its shape)")
        raise Unsupported(Reason.INVALID, f"{label}: it would need an empty constant{' ' + name if name else ''}, "
                                          f"which NNAPI cannot hold")

    # -- operations ----------------------------------------------------------------
    def emit(self, code: Op, inputs: Sequence[int], outputs: Sequence[int]) -> int:
        if typed_moves.needs_other_type(self, code, inputs, outputs):  # bool / int32 the move never takes
            return typed_moves.emit_in_other_type(self, code, inputs, outputs)
        return self.model.add_operation(code, list(inputs), list(outputs))

    def emit_form(self, code: Op, form: str, outputs: Sequence[int], **named) -> int:
        """Emit by argument name through the op spec (nobody writes inputs[7] = ...)."""
        return self.emit(code, SPECS[code].arrange(form, **named), outputs)

    def require_level(self, level: int, what: str) -> None:
        if self.feature_level < level:
            raise Unsupported(Reason.FEATURE_LEVEL, f"{what} needs NNAPI feature level {level}", level)

    # -- what the target level offers: asked of the op specs (nnapi/ops), never written down here
    @staticmethod
    def level_of(code: Op, **types) -> Optional[int]:
        """The feature level from which NNAPI operation `code` takes operands of these types (type variable
        -> OperandCode, e.g. T=C.TENSOR_INT32; none: the level that introduced it). None: it never does."""
        return level_for(code, **types)

    def has(self, code: Op, **types) -> bool:
        """Whether the target feature level has NNAPI operation `code` for these operand types."""
        level = self.level_of(code, **types)
        return level is not None and self.feature_level >= level

    def require(self, code: Op, what: str, **types) -> None:
        """Refuse (feature_level_too_low) unless the target level has `code` for these operand types."""
        level = self.level_of(code, **types)
        if level is None:
            raise Unsupported(Reason.OPERAND_TYPE, f"{what}: NNAPI {code.name} takes no "
                                                   + ", ".join(f"{v}={c.name}" for v, c in types.items()))
        self.require_level(level, what)

    def fuse_code(self, act: int, out_tensor: int) -> int:
        """The FuseCode operand for a TFLite fused activation (for ops that write a temporary first)."""
        if act in FUSE_CODES:
            return self.i32(FUSE_CODES[act])
        fuse, _, _ = self.activation(act, out_tensor)  # raises Unsupported with the reason
        return fuse

    def activation(self, act: int, out_tensor: int):
        """(fuse operand, operand the main op writes, finish()) for a TFLite fused activation.

        NONE/RELU/RELU_N1_TO_1/RELU6 become the FuseCode input. TANH and
        SIGN_BIT are reported: the schema says to apply them, but LiteRT's
        kernels leave them out, so no conversion could match both."""
        if act in FUSE_CODES:
            out = self.output(out_tensor)
            return self.i32(FUSE_CODES[act]), out, (lambda: None)
        name = {FUSED_TANH: "TANH", FUSED_SIGN_BIT: "SIGN_BIT"}.get(act, str(act))
        raise Unsupported(Reason.FUSED_ACTIVATION,
                          f"fused activation {name} on {self.tensor(out_tensor).name!r}: LiteRT's kernels ignore it "
                          f"while the schema applies it, so the result is ambiguous")
