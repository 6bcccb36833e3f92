"""ANeuralNetworksModel with the NDK's state rules and result codes."""
from __future__ import annotations

from typing import Iterable, Optional, Sequence

import numpy as np

from .codes import (MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES, Lifetime, OperandCode,
                    OperationCode)
from .errors import bad_data, bad_state
from .memory import Memory
from .operand import (QUANT_ZERO_POINT_RANGE, ChannelQuant, Operand, OperandType,
                      decode_value, is_quantized)

C = OperandCode
MAX_OPERAND_BYTES = (1 << 32) - 1


class Operation:
    """One operation of a model: a code, input and output operand indexes."""

    __slots__ = ("code", "inputs", "outputs")

    def __init__(self, code: OperationCode, inputs: Sequence[int], outputs: Sequence[int]):
        self.code = code
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)

    def __repr__(self):
        return f"Operation({self.code.name}, inputs={list(self.inputs)}, outputs={list(self.outputs)})"


def check_operand_type(otype: OperandType, what: str) -> None:
    """The NDK's per-type rules for an ANeuralNetworksOperandType."""
    code = otype.code
    if not otype.is_tensor:
        if otype.dimensions:
            raise bad_data(f"{what}: scalar type {code.name} must have no dimensions, got {list(otype.dimensions)}")
    elif otype.dimensions is not None and any(d < 0 for d in otype.dimensions):
        raise bad_data(f"{what}: negative dimension in {list(otype.dimensions)}")
    elif otype.dimensions and otype.dtype is not None:
        # as the NDK: the size of the data must fit in uint32 (known extents only)
        size = otype.dtype.itemsize
        for d in otype.dimensions:
            size *= d or 1
        if size > MAX_OPERAND_BYTES:
            raise bad_data(f"{what}: {code.name} with dimensions {list(otype.dimensions)} has {size} bytes, "
                           f"more than {MAX_OPERAND_BYTES}")
    if is_quantized(code):
        if not (otype.scale > 0.0) or otype.scale != otype.scale or otype.scale == float("inf"):
            raise bad_data(f"{what}: {code.name} needs a positive finite scale, got {otype.scale}")
        zp_range = QUANT_ZERO_POINT_RANGE[code]
        if zp_range is None:
            if otype.zero_point != 0:
                raise bad_data(f"{what}: {code.name} needs zero point 0, got {otype.zero_point}")
        elif not zp_range[0] <= otype.zero_point <= zp_range[1]:
            raise bad_data(f"{what}: zero point {otype.zero_point} out of range {zp_range} for {code.name}")
    elif code == C.TENSOR_INT32:
        if otype.scale < 0 or otype.scale != otype.scale:
            raise bad_data(f"{what}: TENSOR_INT32 scale must be >= 0, got {otype.scale}")
    elif code in (C.TENSOR_OEM_BYTE, C.OEM_SCALAR):
        pass
    elif otype.scale != 0.0 or otype.zero_point != 0:
        raise bad_data(f"{what}: {code.name} must have scale 0 and zero point 0")


class Model:
    """Mirrors ANeuralNetworksModel_* (snake_case), plus read access for tools."""

    def __init__(self, name: Optional[str] = None):
        self.name = name
        self.operands: list[Operand] = []
        self.operations: list[Operation] = []
        self.inputs: tuple[int, ...] = ()
        self.outputs: tuple[int, ...] = ()
        self.relaxed = False
        self._finished = False
        self._io_identified = False
        self._writer: dict[int, int] = {}  # operand index -> operation index
        self.state: list = []  # nnapi.state.StateVariable pairs of inputs and outputs (see nnapi/state.py)

    # -- state ---------------------------------------------------------------
    @property
    def finished(self) -> bool:
        return self._finished

    def _check_mutable(self, call: str) -> None:
        if self._finished:
            raise bad_state(f"{call}: the model is already finished")

    def _check_operand(self, index: int, call: str) -> Operand:
        if not isinstance(index, (int, np.integer)) or not 0 <= index < len(self.operands):
            raise bad_data(f"{call}: operand index {index} out of range (model has {len(self.operands)} operands)")
        return self.operands[index]

    # -- building -----------------------------------------------------------
    def add_operand(self, otype: OperandType, name: Optional[str] = None) -> int:
        self._check_mutable("add_operand")
        if not isinstance(otype, OperandType):
            raise bad_data("add_operand expects an nnapi.OperandType")
        index = len(self.operands)
        check_operand_type(otype, f"operand {index}" + (f" ({name})" if name else ""))
        self.operands.append(Operand(otype, name=name))
        return index

    def set_operand_value(self, index: int, value) -> None:
        """Set a constant value; `None` marks an omitted optional operand.

        Values of at most 128 bytes are copied now; larger ones are referenced,
        so the caller's buffer must stay alive and unchanged (as the NDK says).
        """
        self._check_mutable("set_operand_value")
        op = self._check_operand(index, "set_operand_value")
        where = f"set_operand_value: operand {index}"
        if value is None:
            op.lifetime, op._value, op.memory_ref = Lifetime.NO_VALUE, None, None
            return
        if op.type.code == C.SUBGRAPH:
            raise bad_data(f"{where}: use set_operand_value_from_model for SUBGRAPH operands")
        if op.type.is_tensor and not op.type.is_fully_specified:
            raise bad_data(f"{where}: a constant needs fully specified dimensions, got {op.type.dimensions}")
        raw = _as_bytes(value, op.type.dtype)
        expected = op.type.byte_size()
        if raw.nbytes != expected:
            raise bad_data(f"{where}: value has {raw.nbytes} bytes, operand {op.type.describe()} needs {expected}")
        if raw.nbytes <= MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES:
            op.lifetime, op._value = Lifetime.CONSTANT_COPY, decode_value(op.type, bytes(raw))
        else:
            op.lifetime, op._value = Lifetime.CONSTANT_REFERENCE, decode_value(op.type, raw)
        op.memory_ref = None

    def set_operand_value_from_memory(self, index: int, memory: Memory, offset: int, length: int) -> None:
        self._check_mutable("set_operand_value_from_memory")
        op = self._check_operand(index, "set_operand_value_from_memory")
        where = f"set_operand_value_from_memory: operand {index}"
        if not isinstance(memory, Memory):
            raise bad_data(f"{where}: expects an nnapi.Memory")
        memory.check_range(offset, length, where)
        expected = op.type.byte_size()
        if length != expected:
            raise bad_data(f"{where}: length {length} does not match the {expected} bytes of {op.type.describe()}")
        op.lifetime, op._value, op.memory_ref = Lifetime.CONSTANT_REFERENCE, None, (memory, offset, length)

    def set_operand_symm_per_channel_quant_params(self, index: int, scales: Iterable[float], channel_dim: int) -> None:
        self._check_mutable("set_operand_symm_per_channel_quant_params")
        op = self._check_operand(index, "set_operand_symm_per_channel_quant_params")
        where = f"set_operand_symm_per_channel_quant_params: operand {index}"
        if op.type.code != C.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            raise bad_data(f"{where}: operand is {op.type.code.name}, not TENSOR_QUANT8_SYMM_PER_CHANNEL")
        scales = tuple(float(np.float32(s)) for s in scales)
        dims = op.type.dimensions or ()
        if not 0 <= channel_dim < len(dims):
            raise bad_data(f"{where}: channel_dim {channel_dim} out of range for rank {len(dims)}")
        if dims[channel_dim] != len(scales):
            raise bad_data(f"{where}: {len(scales)} scales for a channel dimension of {dims[channel_dim]}")
        if not all(s > 0 and s != float("inf") for s in scales):
            raise bad_data(f"{where}: every per-channel scale must be positive and finite")
        op.channel_quant = ChannelQuant(scales, int(channel_dim))

    def set_operand_value_from_model(self, index: int, model: "Model") -> None:
        self._check_mutable("set_operand_value_from_model")
        op = self._check_operand(index, "set_operand_value_from_model")
        where = f"set_operand_value_from_model: operand {index}"
        if op.type.code != C.SUBGRAPH:
            raise bad_data(f"{where}: operand is {op.type.code.name}, not SUBGRAPH")
        if not isinstance(model, Model) or not model.finished:
            raise bad_data(f"{where}: the referenced model must be a finished nnapi.Model")
        op.lifetime, op.subgraph = Lifetime.SUBGRAPH, model

    def add_operation(self, code, inputs: Sequence[int], outputs: Sequence[int]) -> int:
        self._check_mutable("add_operation")
        index = len(self.operations)
        try:
            code = OperationCode(int(code))
        except (ValueError, TypeError):
            raise bad_data(f"add_operation: unknown operation code {code!r}", operation=index) from None
        where = f"operation {index} ({code.name})"
        for i in list(inputs) + list(outputs):
            self._check_operand(i, f"add_operation: {where}")
        for o in outputs:
            if o in self._writer:
                raise bad_data(f"{where}: operand {o} is already written by operation {self._writer[o]}", operation=index)
            if self.operands[o].is_constant or self.operands[o].lifetime in (Lifetime.NO_VALUE, Lifetime.SUBGRAPH):
                raise bad_data(f"{where}: output operand {o} has a constant value", operation=index)
        if len(set(outputs)) != len(outputs):
            raise bad_data(f"{where}: the same operand appears twice among the outputs", operation=index)
        for o in outputs:
            self._writer[o] = index
        self.operations.append(Operation(code, inputs, outputs))
        return index

    def rewrite_operations(self, operations: Sequence[Operation]) -> None:
        """Replace the operation list (a tool's rewrite of a model being built, e.g. a fold of two
        operations into one); each operand keeps at most one writer."""
        self._check_mutable("rewrite_operations")
        writer: dict[int, int] = {}
        for k, op in enumerate(operations):
            for o in op.outputs:
                if o in writer:
                    raise bad_data(f"rewrite_operations: operand {o} is written by operations {writer[o]} and {k}")
                writer[o] = k
        self.operations, self._writer = list(operations), writer

    def identify_inputs_and_outputs(self, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        self._check_mutable("identify_inputs_and_outputs")
        for kind, indexes in (("input", inputs), ("output", outputs)):
            for i in indexes:
                op = self._check_operand(i, f"identify_inputs_and_outputs: model {kind}")
                if op.is_constant or op.lifetime in (Lifetime.NO_VALUE, Lifetime.SUBGRAPH):
                    raise bad_data(f"identify_inputs_and_outputs: model {kind} operand {i} has a constant value",
                                   operand=i)
        for i in inputs:
            if i in self._writer:
                raise bad_data(f"identify_inputs_and_outputs: model input operand {i} is written by "
                               f"operation {self._writer[i]}", operand=i)
        self.inputs, self.outputs = tuple(int(i) for i in inputs), tuple(int(o) for o in outputs)
        self._io_identified = True

    def set_state(self, entries) -> None:
        """Declare state carried between executions: nnapi.state.StateVariable (variable, input
        position, output position, initial value). After identify_inputs_and_outputs."""
        self._check_mutable("set_state")
        if not self._io_identified:
            raise bad_state("set_state: identify the model inputs and outputs first")
        from .state import check_state
        self.state = check_state(self, entries)

    def relax_computation_float32_to_float16(self, allow: bool) -> None:
        self._check_mutable("relax_computation_float32_to_float16")
        self.relaxed = bool(allow)

    def finish(self) -> None:
        """Check the whole graph and every operation against its spec; freeze the model."""
        self._check_mutable("finish")
        from .validate import graph_problems, operation_problems
        problems = graph_problems(self)
        if not problems:
            problems = operation_problems(self)
        if problems:
            raise bad_data("; ".join(problems[:20]) + (f"; ... ({len(problems)} problems)" if len(problems) > 20 else ""))
        for i in self.inputs:
            self.operands[i].lifetime = Lifetime.SUBGRAPH_INPUT
        for o in self.outputs:
            if self.operands[o].lifetime is Lifetime.TEMPORARY_VARIABLE:
                self.operands[o].lifetime = Lifetime.SUBGRAPH_OUTPUT
        self._finished = True

    # -- reading -------------------------------------------------------------
    @property
    def referenced_models(self) -> list["Model"]:
        """Every model referenced by SUBGRAPH operands, transitively, each once."""
        seen: list[Model] = []

        def visit(m: "Model"):
            for op in m.operands:
                if op.subgraph is not None and all(op.subgraph is not s for s in seen):
                    seen.append(op.subgraph)
                    visit(op.subgraph)
        visit(self)
        return seen

    def writer_of(self, operand: int) -> Optional[int]:
        return self._writer.get(operand)

    def validate(self, feature_level: int = 8) -> list[str]:
        """Every problem of the model at the given feature level (empty when valid)."""
        from .validate import graph_problems, operation_problems
        return graph_problems(self) + operation_problems(self, feature_level)

    def min_feature_level(self) -> int:
        from .validate import model_min_feature_level
        return model_min_feature_level(self)

    def get_supported_operations_for_devices(self, devices) -> list[bool]:
        """ANeuralNetworksModel_getSupportedOperationsForDevices: per operation, whether any of the
        devices (nnapi.devices()) runs it (BAD_STATE before finish, BAD_DATA without devices)."""
        from .device_profile import supported_operations
        return supported_operations(self, devices)


def _as_bytes(value, dtype) -> memoryview:
    """The bytes of a value: raw bytes as they are, arrays converted to `dtype` (no copy when possible)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return memoryview(value).cast("B")
    arr = np.asarray(value)
    if dtype is not None and arr.dtype != dtype:
        if arr.dtype.kind == "f" and dtype.kind in "iu":
            raise bad_data(f"value of dtype {arr.dtype} cannot be stored as {dtype}")
        arr = arr.astype(dtype)
    arr = np.ascontiguousarray(arr)
    return memoryview(arr.reshape(-1).view(np.uint8))
