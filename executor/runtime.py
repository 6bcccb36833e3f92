"""Compile a finished nnapi.Model once (order, kernels, constants, the memory
plan, prepared operations) and run it many times.

Kernels are called as `kernel(ctx) -> list[np.ndarray]` with an OpContext
(see below) and return one array per output operand. Where a kernel module
registered a preparer for the code (registry.prepare), it is called once here
with a PrepareContext and the callable it returns replaces the kernel for that
operation.

The per-step loop is kept lean (it is most of the time of small models): the
environment is a list indexed by operand, each step's input/output slots and
frees are worked out here, and an output of the dtype and shape its operand had
last time is wrapped without checking it against the declaration again.
"""
from __future__ import annotations

import math
import threading
import time
from operator import itemgetter
from typing import Optional, Sequence

import numpy as np

from nnapi.codes import DEFAULT_LOOP_TIMEOUT_S, Lifetime, OperandCode, ResultCode
from nnapi.errors import NnapiError, op_failed
from nnapi.ops import spec_for
from nnapi.ops.spec import declared_shape
from nnapi.operand import Operand, OperandType
from nnapi.shapes import infer_shapes
from nnapi.validate import execution_order

from .folding import constant_result
from .kernels.scratch import Scratch
from .op_context import (  # noqa: F401  (Value, RunState, Profile, OpContext: runtime's public names too)
    _FLOAT_CODES, OpContext, PrepareContext, Profile, RunState, Value)
from .planner import plan
from .registry import PREPARERS, load_kernels, missing_reason

C = OperandCode


class _Quiet(threading.local):
    depth = 0   # 1 while this thread runs a model under np.errstate (see CompiledModel.run_values)


_quiet = _Quiet()


class Step:
    """One operation in execution order; `run` is the prepared callable, or the kernel itself."""

    __slots__ = ("index", "code", "kernel", "inputs", "outputs", "output_operands", "frees", "run", "slots", "bound",
                 "checked")

    def __init__(self, index, code, kernel, inputs, outputs, output_operands=(), bound=None):
        self.index, self.code, self.kernel = index, code, kernel
        self.bound = bound   # the operation's arguments by name (nnapi/ops/binding.py), read as ctx.args
        self.inputs, self.outputs = inputs, outputs
        self.output_operands = list(output_operands)
        self.frees: tuple = ()
        self.run = kernel
        self.slots: tuple = (-1,) * len(outputs)   # per output: its slot in the memory plan, or -1 (fresh)
        # whether the spec checks the inputs fed at run time before the operation runs (shapes unknown at
        # compile time, scalars fed at run time: Bound.checks_at_run_time)
        self.checked = False


# the compile-time fast paths (PREPARERS) are on unless switched off here or per model: the conformance
# runner's --no-fast-paths checks the plain kernels the fast paths must agree with
FAST_PATHS = True


class CompiledModel:
    """A model ready to run. `fast_paths=False` runs the plain kernels only. `float64=True` is the precision switch parity's --exact uses: the same plain
    kernels (no compile-time fast paths, which are float32 by design) with every float constant, input
    and intermediate held in float64, the mathematical model of the graph up to float64 rounding."""

    def __init__(self, model, relaxed: Optional[bool] = None, _cache: Optional[dict] = None,
                 float64: bool = False, fast_paths: Optional[bool] = None):
        if not model.finished:
            raise NnapiError(ResultCode.BAD_STATE, "the model is not finished")
        kernels = load_kernels()
        self.model = model
        self.relaxed = model.relaxed if relaxed is None else relaxed
        self.float64 = float64
        self.fast_paths = (FAST_PATHS if fast_paths is None else fast_paths) and not float64
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
            self.steps.append(Step(k, op.code, kernels[op.code], op.inputs, op.outputs,
                                   [model.operands[o] for o in op.outputs], spec_for(op.code).bind(model, k)))
        self.constants: dict[int, Value] = {}
        # work arrays of the prepared operations: they run one at a time, so they share them
        self.scratch = Scratch()
        # the planned buffers of intermediates (per thread: executions may overlap)
        self._arena = threading.local()
        self._types: dict[tuple, OperandType] = {}   # (operand, shape) -> type with those dimensions
        for i, opnd in enumerate(model.operands):
            if opnd.is_constant:
                value = opnd.value
                if float64 and opnd.type.code in _FLOAT_CODES:
                    value = np.asarray(value, np.float64)
                self.constants[i] = Value(value, opnd.type, opnd.channel_quant)
        for sub in model.referenced_models:
            self.subgraph(sub)
        known = infer_shapes(model)
        # outputs of operations on constants only (a hybrid model's DEQUANTIZE of its int8 weights), computed
        # once (executor/folding.py): later preparers see them as constants
        self.folded: dict[int, Value] = {}
        for step in self.steps:
            step.checked = step.bound.checks_at_run_time(lambda i: known[i] if i in known else declared_shape(model, i))
            if self.folded:
                step.bound = step.bound.with_constants(self.folded)
            step.run = (self._prepared(step) if self.fast_paths else None) or step.kernel
            for o, opnd, arr in zip(step.outputs, step.output_operands, getattr(step.run, "constant_outputs", ())):
                if isinstance(arr, np.ndarray):
                    self.folded[o] = Value(arr, opnd.type.with_dimensions(arr.shape), opnd.channel_quant)
        # free each temporary after its last use; place intermediates in shared buffers by lifetime
        self.plan = plan(model, self.steps, [bool(getattr(s.run, "fresh_outputs", False)) for s in self.steps])
        for step, f in zip(self.steps, self.plan.frees):
            step.frees = f
            step.slots = tuple(self.plan.slots.get(o, -1) for o in step.outputs)
        self._build_program()

    def _build_program(self) -> None:
        """What run_values reads, worked out once: the environment is a list indexed by operand (one
        extra None slot stands for absent operands), each step's input gatherer (an itemgetter of its
        input slots), the frees, per output the dtype, whether it is a tensor and whether it lives in
        the memory plan's arena, and the step's position (its OpContext in the thread's list, reused
        from run to run: a run sets its inputs and state). `_last[o]` is (shape, type) of operand o's last checked output: an
        output of that shape and dtype is wrapped without checking it again. `_held[o]` is the Value
        last made for an arena output: a kernel that hands back the same buffer (ctx.output_buffer's
        view, the same run after run) gets that Value again."""
        model = self.model
        n = len(model.operands)

        def slot(i: int) -> int:
            return i if 0 <= i < n else n

        env = [None] * (n + 1)
        for i, v in self.constants.items():
            env[i] = v
        for i, v in self.folded.items():   # (their operations are left out of the program below)
            env[i] = v
        self._env0 = env
        self._input_slots = tuple(slot(i) for i in model.inputs)
        self._output_slots = tuple(slot(o) for o in model.outputs)
        self._last: list = [None] * n
        self._held: list = [None] * n

        def gatherer(ins: tuple):
            """(get, many): get(env) is the one input Value (many False) or a tuple of them."""
            if not ins:
                return (lambda env: ()), True
            return itemgetter(*ins), len(ins) > 1

        self._program_all = [
            (step, *gatherer(tuple(slot(i) for i in step.inputs)),
             tuple((o, model.operands[o].channel_quant, model.operands[o].type.dtype, model.operands[o].type.is_tensor,
                    k >= 0)
                   for o, k in zip(step.outputs, step.slots)),
             tuple(slot(i) for i in step.frees), position, step.bound if step.checked else None)
            for position, step in enumerate(self.steps)]
        skipped = self._skipped_steps()
        # the program without the operations whose every reader ignores them (layerwise tracing runs all)
        self._program = [p for p, skip in zip(self._program_all, skipped) if not skip]

    def _skipped_steps(self) -> list:
        """Per step, whether it can be left out of a run: its outputs were computed at compile time
        (CompiledModel.folded, already in the environment), or they are read, but by no one who uses
        them: a prepared callable may list in `unused_inputs` the input positions it does not read
        (lut.SelfTable, whose table already holds its second input's values). Operations nobody reads
        at all still run, as before."""
        used, ignored = set(self.model.outputs), set()
        folded = [bool(s.outputs) and all(o in self.folded for o in s.outputs) for s in self.steps]
        for step in self.steps:
            unused = getattr(step.run, "unused_inputs", ())
            for k, i in enumerate(step.inputs):
                (ignored if k in unused else used).add(i)
        return [f or (all(o in ignored and o not in used for o in step.outputs) and bool(step.outputs))
                for step, f in zip(self.steps, folded)]

    def _prepared(self, step: Step):
        """The operation's outputs computed now when it has constants only (executor/folding.py), else its
        preparer's specialized callable, or None. A preparer that fails leaves the operation to its
        kernel, which reports any problem when the model runs."""
        preparer = PREPARERS.get(step.code)
        try:
            pctx = PrepareContext(self, step)
            folded = constant_result(pctx)
            if folded is not None or preparer is None:
                return folded
            return preparer(pctx)
        except Exception:  # noqa: BLE001  (the plain kernel reports the problem at run time)
            return None

    def arena_view(self, slot: int, shape: tuple, dtype) -> np.ndarray:
        """Buffer `slot` of this thread's arena as an array of `shape` and `dtype` (views are made once per
        shape and dtype; the buffer grows when a run-time shape needs more than the plan knew)."""
        try:
            views = self._arena.views[slot]
        except AttributeError:
            self._arena.buffers = [None] * len(self.plan.slot_bytes)
            self._arena.views = [{} for _ in self.plan.slot_bytes]
            views = self._arena.views[slot]
        view = views.get((shape, dtype))
        if view is None:
            view = views[(shape, dtype)] = self._new_view(slot, shape, dtype)
        return view

    def _new_view(self, slot: int, shape: tuple, dtype) -> np.ndarray:
        dt = np.dtype(dtype)
        need = math.prod(shape) * dt.itemsize
        buffers = self._arena.buffers
        buf = buffers[slot]
        if buf is None or buf.nbytes < need:
            # a new (larger) buffer: views of the old one must not be handed out again
            buf = buffers[slot] = np.empty(max(need, self.plan.slot_bytes[slot], 1), np.uint8)
            self._arena.views[slot].clear()
        return buf[:need].view(dt).reshape(shape)

    def run_operation(self, k: int, arrays: dict) -> list:
        """Operation k on its own, with `arrays` ({operand: array}) for its non-constant inputs (constants
        come from the model, omitted operands stay absent); copies of its output arrays. Parity's local
        check feeds each operation the source framework's tensors this way."""
        step = next((s for s in self.steps if s.index == k), None)
        if step is None:
            raise NnapiError(ResultCode.BAD_DATA, f"operation {k} does not exist")
        ins = []
        for i in step.inputs:
            if i in self.constants or not 0 <= i < len(self.model.operands):
                ins.append(self.constants.get(i))
            elif i in arrays:
                opnd, a = self.model.operands[i], np.asarray(arrays[i])
                ins.append(Value(a, self._shaped_type(i, a.shape) if opnd.type.is_tensor else opnd.type,
                                 opnd.channel_quant))
            elif self.model.operands[i].lifetime == Lifetime.NO_VALUE:
                ins.append(None)
            else:
                raise NnapiError(ResultCode.BAD_DATA, f"operation {k}: no value given for input operand {i}")
        state = RunState(DEFAULT_LOOP_TIMEOUT_S, trace={})   # tracing: outputs in fresh arrays, not the plan's
        problem = step.bound.run_time_problem(ins) if step.checked else None
        if problem is not None:
            raise op_failed(problem, operation=k)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            results = step.run(OpContext(self, step, ins, state))
        return [None if r is None else np.array(r.array if isinstance(r, Value) else r, copy=True) for r in results]

    def subgraph(self, model) -> "CompiledModel":
        sub = self._cache.get(id(model))
        if sub is None:
            sub = CompiledModel(model, self.relaxed, self._cache, self.float64, self.fast_paths)
        return sub

    def input_value(self, k: int, array: Optional[np.ndarray]) -> Optional[Value]:
        if array is None:
            return None
        index = self.model.inputs[k]
        opnd = self.model.operands[index]
        if self.float64 and opnd.type.code in _FLOAT_CODES:
            array = np.asarray(array, np.float64)
        return Value(array, self._shaped_type(index, array.shape) if opnd.type.is_tensor else opnd.type,
                     opnd.channel_quant)

    def _shaped_type(self, index: int, shape: tuple) -> OperandType:
        """Operand `index`'s type with these dimensions, made once per shape (runs repeat shapes)."""
        t = self._types.get((index, shape))
        if t is None:
            t = self._types[(index, shape)] = self.model.operands[index].type.with_dimensions(shape)
        return t

    def run(self, arrays: Sequence[Optional[np.ndarray]], state: RunState) -> list[Optional[Value]]:
        return self.run_values([self.input_value(k, a) for k, a in enumerate(arrays)], state)

    def run_values(self, inputs: Sequence[Optional[Value]], state: RunState) -> list[Optional[Value]]:
        if _quiet.depth:   # a subgraph run inside one already quiet (IF/WHILE): entered once per execution
            return self._run_values(inputs, state)
        # float overflow and invalid operations give inf/NaN as IEEE (and Android) define them: no warnings
        _quiet.depth = 1
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
                return self._run_values(inputs, state)
        finally:
            _quiet.depth = 0

    def _run_values(self, inputs: Sequence[Optional[Value]], state: RunState) -> list[Optional[Value]]:
        env = self._env0.copy()
        for idx, v in zip(self._input_slots, inputs):
            env[idx] = v
        trace = state.trace
        profile = state.profile.times_of(self) if state.profile is not None else None
        clock = state.profile.clock if profile is not None else None
        last, held = self._last, self._held
        # this thread's contexts, one per step, taken for the run (a nested run of this model on the
        # thread finds none and makes its own) and given back at its end
        local = self._arena
        ctxs = local.__dict__.pop("contexts", None) or [OpContext(self, p[0], None, None) for p in self._program_all]
        for step, get, many, outs, frees, position, checked in (self._program if trace is None else self._program_all):
            ctx = ctxs[position]
            ctx.inputs = [*get(env)] if many else [get(env)]
            ctx.state = state
            try:
                if checked is not None:   # shapes unknown at compile time: the spec checks them (Step.checked)
                    problem = checked.run_time_problem(ctx.inputs)
                    if problem is not None:
                        raise op_failed(problem, operation=step.index)
                if profile is None:
                    results = step.run(ctx)
                else:
                    t0 = clock()
                    results = step.run(ctx)
                    profile.setdefault(step.index, []).append(clock() - t0)
            except NnapiError:
                raise
            except (ValueError, IndexError, KeyError, TypeError, ZeroDivisionError, OverflowError,
                    FloatingPointError, MemoryError, AssertionError) as e:
                raise op_failed(f"{ctx.where}: {type(e).__name__}: {e}", operation=step.index) from e
            ctx.inputs = None   # (the kept context must not keep its inputs alive past their frees)
            if len(results) != len(outs):
                raise op_failed(f"{ctx.where}: kernel produced {len(results)} outputs, expected {len(outs)}",
                                operation=step.index)
            for (o, cq, dt, tensor, arena), arr in zip(outs, results):
                v = held[o]
                if v is None or v.array is not arr:
                    # the common case: a tensor of the declared dtype and the shape this operand had last time
                    seen = last[o] if tensor and type(arr) is np.ndarray and arr.dtype == dt else None
                    v = (Value(arr, seen[1], cq) if seen is not None and seen[0] == arr.shape
                         else self._wrap_output(ctx, o, arr))
                    if arena and trace is None:
                        held[o] = v
                env[o] = v
                if trace is not None:
                    trace[(id(self.model), o)] = v
            for i in frees:
                env[i] = None
        local.contexts = ctxs
        return [env[o] for o in self._output_slots]

    def _wrap_output(self, ctx: OpContext, index: int, arr) -> Optional[Value]:
        opnd = self.model.operands[index]
        otype = opnd.type
        if arr is None:
            return None
        if isinstance(arr, Value):
            arr = arr.array
        arr = np.asarray(arr)
        dt = np.dtype(np.float64) if self.float64 and otype.code in _FLOAT_CODES else otype.dtype
        if dt is not None and arr.dtype != dt:
            arr = arr.astype(dt)
        if otype.is_tensor:
            shaped = self._types.get((index, arr.shape))
            if shaped is None:  # a shape not seen yet for this operand: check it against the declaration
                declared = otype.dimensions
                if declared is not None and len(declared) and (
                        len(declared) != arr.ndim or any(d and d != a for d, a in zip(declared, arr.shape))):
                    ctx.fail(f"output operand {index} has shape {list(arr.shape)}, "
                             f"the model declares {list(declared)}")
                shaped = self._shaped_type(index, arr.shape)
            if type(arr) is np.ndarray:
                self._last[index] = (arr.shape, shaped)   # one tuple: readers never see a torn pair
            return Value(arr, shaped, opnd.channel_quant)
        return Value(arr.reshape(()), otype, None)


def compile_model(model, relaxed: Optional[bool] = None, float64: bool = False,
                  fast_paths: Optional[bool] = None) -> CompiledModel:
    return CompiledModel(model, relaxed, float64=float64, fast_paths=fast_paths)


def monotonic() -> float:
    return time.monotonic()
