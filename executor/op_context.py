"""What kernels and preparers see: Value (a run-time tensor or scalar with its operand type), OpContext
(a step's inputs, declared outputs, arguments by name, output buffers), PrepareContext (the same at
compilation: constants only), RunState and Profile (per-execution settings), and the float64 mode's
Float64Type. executor/runtime.py compiles and runs models with them."""
from __future__ import annotations

import time

from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

from nnapi.codes import OperandCode, ResultCode
from nnapi.errors import NnapiError
from nnapi.operand import Operand, OperandType

if TYPE_CHECKING:   # (annotations only: runtime imports this module)
    from .runtime import CompiledModel, Step


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


class RunState:
    """Per-execution settings shared by nested subgraph runs (loop deadline, tracing, profiling).

    `profile`, when given, collects the seconds of each step of the model it profiles (a nested IF/WHILE
    body's time counts in its IF/WHILE step)."""

    def __init__(self, loop_timeout_s: float, trace: Optional[dict] = None, profile: Optional["Profile"] = None):
        self.loop_timeout_s = loop_timeout_s
        self.trace = trace
        self.profile = profile


class Profile:
    """Per-operation times of one compiled model's runs on `clock` (elapsed time unless told, e.g.
    time.thread_time for the CPU clock `nnapi bench --clock cpu` times with): seconds[operation index] =
    [s, s, ...]; the operations of the subgraphs its IF and WHILE operations run are in `nested`."""

    def __init__(self, compiled: "CompiledModel", clock=time.perf_counter):
        self.root = compiled
        self.clock = clock
        self.seconds: dict = {}
        # the operations of the subgraphs IF and WHILE run: id(compiled subgraph) -> (it, {index: [s, ...]})
        self.nested: dict = {}

    def times_of(self, compiled: "CompiledModel") -> dict:
        """Where the runs of `compiled` (the root model, or a subgraph it runs) record their operations."""
        if compiled is self.root:
            return self.seconds
        entry = self.nested.get(id(compiled))
        if entry is None:
            entry = self.nested[id(compiled)] = (compiled, {})
        return entry[1]


class OpContext:
    """What a kernel sees: input Values (None when absent or omitted) and declared outputs."""

    __slots__ = ("step", "inputs", "state", "compiled")

    def __init__(self, compiled: "CompiledModel", step: Step, inputs, state: RunState):
        self.compiled = compiled
        self.step = step
        self.inputs: list[Optional[Value]] = inputs
        self.state = state

    @property
    def model(self):
        return self.compiled.model

    @property
    def outputs(self) -> list[Operand]:
        return self.step.output_operands

    @property
    def relaxed(self) -> bool:
        return self.compiled.relaxed

    @property
    def op_index(self) -> int:
        return self.step.index

    @property
    def where(self) -> str:
        return f"operation {self.step.index} ({self.step.code.name})"

    @property
    def args(self):
        """The operation's arguments by name (`args.filter`, `args.stride_w`), bound by its spec."""
        return self.step.bound.args(self.inputs)

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
        t = self.outputs[k].type
        return Float64Type.of(t) if self.compiled.float64 and t.code in _FLOAT_CODES else t

    def output_buffer(self, k: int, shape: tuple, dtype) -> np.ndarray:
        """An uninitialized array to compute output `k` into: the operand's buffer from the memory plan
        when it has one that fits (reused run after run), else a fresh array. The kernel must return
        this array (or a reshape of it) as output `k` and must not keep it after returning."""
        slot = self.step.slots[k]
        compiled = self.compiled
        if compiled.float64 and np.dtype(dtype).kind == "f":
            return np.empty(shape, np.float64)   # float64 mode: every float intermediate in float64
        if slot < 0 or self.state is None or self.state.trace is not None:
            # no planned buffer; or layerwise tracing, which keeps every intermediate
            return np.empty(shape, dtype)
        try:   # arena_view's common case inlined: the view made last time for this shape and dtype
            view = compiled._arena.views[slot].get((shape, dtype))
        except AttributeError:
            view = None
        return compiled.arena_view(slot, shape, dtype) if view is None else view

    def run_subgraph(self, model, values: Sequence[Value]) -> list[Value]:
        """Run a referenced model (IF/WHILE bodies) on Values; returns its output Values."""
        sub = self.compiled.subgraph(model)
        return sub.run_values(list(values), self.state)


class PrepareContext(OpContext):
    """What a preparer sees at compilation: constant inputs as Values (also the outputs of earlier
    operations on constants only, CompiledModel.folded), run-time and absent inputs as
    None (the step's binding, `step.bound`, names which arguments are fed at run time), and every
    input's declared operand."""

    __slots__ = ()

    def __init__(self, compiled: "CompiledModel", step: Step):
        constants, folded = compiled.constants, compiled.folded
        super().__init__(compiled, step, [constants.get(i) or folded.get(i) for i in step.inputs], None)

    def operand(self, i: int) -> Operand:
        return self.model.operands[self.step.inputs[i]]

    def run_kernel(self, arrays: dict) -> list:
        """The plain kernel on `arrays` ({input position: array}, e.g. every value an 8-bit input can
        take) with the constant inputs as they are: lets a preparer tabulate an elementwise kernel."""
        ins = list(self.inputs)
        for i, a in arrays.items():
            opnd = self.operand(i)
            ins[i] = Value(a, opnd.type.with_dimensions(a.shape), opnd.channel_quant)
        return self.step.kernel(OpContext(self.compiled, self.step, ins, RunState(0.0)))


_FLOAT_CODES = frozenset({OperandCode.TENSOR_FLOAT32, OperandCode.TENSOR_FLOAT16, OperandCode.FLOAT32,
                          OperandCode.FLOAT16})


class Float64Type(OperandType):
    """A float operand's type as the float64 mode computes it: the same code and shape, float64 values."""

    @classmethod
    def of(cls, t: OperandType) -> "Float64Type":
        return cls(**{f: getattr(t, f) for f in t.__dataclass_fields__})

    @property
    def dtype(self):
        return np.dtype(np.float64)
