"""Compile a finished nnapi.Model once (order, kernels, constants, last uses)
and run it many times.

Kernels are called as `kernel(ctx) -> list[np.ndarray]` with an OpContext
(see below) and return one array per output operand.
"""
from __future__ import annotations

import time
from typing import Optional, Sequence

import numpy as np

from nnapi.codes import Lifetime, OperandCode, ResultCode
from nnapi.errors import NnapiError, op_failed
from nnapi.operand import Operand, OperandType
from nnapi.validate import execution_order

from .registry import load_kernels, missing_reason

C = OperandCode


class Value:
    """A runtime tensor or scalar handed to kernels: the array and its operand type (actual shape)."""

    __slots__ = ("array", "type", "channel_quant")

    def __init__(self, array: np.ndarray, otype: OperandType, channel_quant=None):
        self.array = array
        self.type = otype
        self.channel_quant = channel_quant

    @property
    def code(self) -> OperandCode:
        return self.type.code

    @property
    def shape(self) -> tuple:
        return self.array.shape

    @property
    def scale(self) -> float:
        return self.type.scale

    @property
    def zero_point(self) -> int:
        return self.type.zero_point

    def item(self):
        return self.array.item()

    def __repr__(self):
        return f"Value({self.type.code.name}, shape={self.array.shape})"


class Step:
    __slots__ = ("index", "code", "kernel", "inputs", "outputs", "frees")

    def __init__(self, index, code, kernel, inputs, outputs):
        self.index, self.code, self.kernel = index, code, kernel
        self.inputs, self.outputs = inputs, outputs
        self.frees: tuple = ()


class RunState:
    """Per-execution settings shared by nested subgraph runs (loop deadline, tracing)."""

    def __init__(self, loop_timeout_s: float, trace: Optional[dict] = None):
        self.loop_timeout_s = loop_timeout_s
        self.trace = trace


class OpContext:
    """What a kernel sees: input Values (None when absent or omitted) and declared outputs."""

    __slots__ = ("step", "model", "inputs", "outputs", "relaxed", "state", "compiled")

    def __init__(self, compiled: "CompiledModel", step: Step, inputs, state: RunState):
        self.compiled = compiled
        self.step = step
        self.model = compiled.model
        self.inputs: list[Optional[Value]] = inputs
        self.outputs: list[Operand] = [compiled.model.operands[o] for o in step.outputs]
        self.relaxed = compiled.relaxed
        self.state = state

    @property
    def op_index(self) -> int:
        return self.step.index

    @property
    def where(self) -> str:
        return f"operation {self.step.index} ({self.step.code.name})"

    def has(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] is not None

    def scalar(self, i: int, default=None):
        """Python value of scalar input `i`, or `default` when absent/omitted."""
        if not self.has(i):
            return default
        return self.inputs[i].array.item()

    def fail(self, message: str, code: ResultCode = ResultCode.OP_FAILED):
        raise NnapiError(code, f"{self.where}: {message}", operation=self.step.index)

    def out_type(self, k: int = 0) -> OperandType:
        return self.outputs[k].type

    def run_subgraph(self, model, values: Sequence[Value]) -> list[Value]:
        """Run a referenced model (IF/WHILE bodies) on Values; returns its output Values."""
        sub = self.compiled.subgraph(model)
        return sub.run_values(list(values), self.state)


class CompiledModel:
    def __init__(self, model, relaxed: Optional[bool] = None, _cache: Optional[dict] = None):
        if not model.finished:
            raise NnapiError(ResultCode.BAD_STATE, "the model is not finished")
        kernels = load_kernels()
        self.model = model
        self.relaxed = model.relaxed if relaxed is None else relaxed
        self._cache = _cache if _cache is not None else {}
        self._cache[id(model)] = self
        order = execution_order(model)
        if order is None:
            raise NnapiError(ResultCode.BAD_DATA, "the operations form a cycle")
        self.steps: list[Step] = []
        for k in order:
            op = model.operations[k]
            reason = missing_reason(op.code)
            if reason is not None:
                raise NnapiError(ResultCode.BAD_DATA, f"operation {k} ({op.code.name}): {reason}", operation=k)
            self.steps.append(Step(k, op.code, kernels[op.code], op.inputs, op.outputs))
        self.constants: dict[int, Value] = {}
        for i, opnd in enumerate(model.operands):
            if opnd.is_constant:
                self.constants[i] = Value(opnd.value, opnd.type, opnd.channel_quant)
        # free each temporary after its last use
        keep = set(model.outputs) | set(self.constants)
        last_use: dict[int, int] = {}
        for s, step in enumerate(self.steps):
            for i in step.inputs:
                last_use[i] = s
        frees: list[list[int]] = [[] for _ in self.steps]
        for i, s in last_use.items():
            if i not in keep:
                frees[s].append(i)
        for step, f in zip(self.steps, frees):
            step.frees = tuple(f)
        for sub in model.referenced_models:
            self.subgraph(sub)

    def subgraph(self, model) -> "CompiledModel":
        sub = self._cache.get(id(model))
        if sub is None:
            sub = CompiledModel(model, self.relaxed, self._cache)
        return sub

    def input_value(self, k: int, array: Optional[np.ndarray]) -> Optional[Value]:
        if array is None:
            return None
        opnd = self.model.operands[self.model.inputs[k]]
        return Value(array, opnd.type.with_dimensions(array.shape) if opnd.type.is_tensor else opnd.type,
                     opnd.channel_quant)

    def run(self, arrays: Sequence[Optional[np.ndarray]], state: RunState) -> list[Optional[Value]]:
        return self.run_values([self.input_value(k, a) for k, a in enumerate(arrays)], state)

    def run_values(self, inputs: Sequence[Optional[Value]], state: RunState) -> list[Optional[Value]]:
        model = self.model
        env: dict[int, Optional[Value]] = dict(self.constants)
        for idx, v in zip(model.inputs, inputs):
            env[idx] = v
        trace = state.trace
        for step in self.steps:
            ins = [env.get(i) for i in step.inputs]
            ctx = OpContext(self, step, ins, state)
            try:
                results = step.kernel(ctx)
            except NnapiError:
                raise
            except (ValueError, IndexError, KeyError, TypeError, ZeroDivisionError, OverflowError,
                    FloatingPointError, MemoryError, AssertionError) as e:
                raise op_failed(f"{ctx.where}: {type(e).__name__}: {e}", operation=step.index) from e
            if len(results) != len(step.outputs):
                raise op_failed(f"{ctx.where}: kernel produced {len(results)} outputs, expected {len(step.outputs)}",
                                operation=step.index)
            for o, arr in zip(step.outputs, results):
                env[o] = self._wrap_output(ctx, o, arr)
                if trace is not None:
                    trace[(id(model), o)] = env[o]
            for i in step.frees:
                env.pop(i, None)
        return [env.get(o) for o in model.outputs]

    def _wrap_output(self, ctx: OpContext, index: int, arr) -> Optional[Value]:
        opnd = self.model.operands[index]
        otype = opnd.type
        if arr is None:
            return None
        if isinstance(arr, Value):
            arr = arr.array
        arr = np.asarray(arr)
        dt = otype.dtype
        if dt is not None and arr.dtype != dt:
            arr = arr.astype(dt)
        if otype.is_tensor:
            declared = otype.dimensions
            if declared is not None and len(declared) and (
                    len(declared) != arr.ndim or any(d and d != a for d, a in zip(declared, arr.shape))):
                ctx.fail(f"output operand {index} has shape {list(arr.shape)}, the model declares {list(declared)}")
            return Value(arr, otype.with_dimensions(arr.shape), opnd.channel_quant)
        return Value(arr.reshape(()), otype, None)


def compile_model(model, relaxed: Optional[bool] = None) -> CompiledModel:
    return CompiledModel(model, relaxed)


def monotonic() -> float:
    return time.monotonic()
