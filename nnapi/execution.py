"""ANeuralNetworksCompilation / ANeuralNetworksExecution / ANeuralNetworksEvent.

The work behind them is done by the backend registered in nnapi/backend.py (the `executor` package
registers itself when imported), so that `nnapi` itself depends on numpy and the standard library only.
"""
from __future__ import annotations

import threading
from typing import Optional, Sequence

import numpy as np

from .backend import backend as _runtime
from .codes import (DEFAULT_LOOP_TIMEOUT_S, MAXIMUM_LOOP_TIMEOUT_S, PreferenceCode, Priority,
                    ResultCode)
from .errors import NnapiError, bad_data, bad_state
from .memory import Memory
from .operand import decode_value


class Compilation:
    def __init__(self, model):
        if not getattr(model, "finished", False):
            raise bad_state("Compilation: the model must be finished first")
        self.model = model
        self.preference = PreferenceCode.FAST_SINGLE_ANSWER
        self.priority = Priority.MEDIUM
        self.timeout_ns: Optional[int] = None
        self._compiled = None
        self.devices: Optional[list] = None

    @classmethod
    def for_devices(cls, model, devices) -> "Compilation":
        """ANeuralNetworksCompilation_createForDevices: compile for these devices only; finish() then
        fails with BAD_DATA, naming each operation none of them runs (as the NDK's finish does)."""
        from .device_profile import Device
        devices = list(devices or [])
        if not devices or not all(isinstance(d, Device) for d in devices):
            raise bad_data("Compilation.for_devices: needs a non-empty list of nnapi devices")
        comp = cls(model)
        comp.devices = devices
        return comp

    def _check_mutable(self, call):
        if self._compiled is not None:
            raise bad_state(f"Compilation.{call}: the compilation is already finished")

    def set_preference(self, preference) -> None:
        self._check_mutable("set_preference")
        try:
            self.preference = PreferenceCode(int(preference))
        except ValueError:
            raise bad_data(f"Compilation.set_preference: unknown preference {preference}") from None

    def set_priority(self, priority) -> None:
        self._check_mutable("set_priority")
        try:
            self.priority = Priority(int(priority))
        except ValueError:
            raise bad_data(f"Compilation.set_priority: unknown priority {priority}") from None

    def set_timeout(self, duration_ns: int) -> None:
        self._check_mutable("set_timeout")
        self.timeout_ns = int(duration_ns) if duration_ns else None

    def finish(self) -> None:
        self._check_mutable("finish")
        if self.devices is not None:
            self._check_devices()
        self._compiled = _runtime().compile_model(self.model)

    def _check_devices(self) -> None:
        missing = []
        for k, op in enumerate(self.model.operations):
            reasons = [d.unsupported_reason(self.model, k) for d in self.devices]
            if all(reasons):
                missing.append(f"operation {k} ({op.code.name}): " + "; ".join(reasons))
        if missing:
            raise bad_data("Compilation.finish: no selected device runs " + "; ".join(missing[:10])
                           + (f"; ... ({len(missing)} operations)" if len(missing) > 10 else ""))

    @property
    def finished(self) -> bool:
        return self._compiled is not None

    @property
    def compiled(self):
        if self._compiled is None:
            raise bad_state("the compilation is not finished")
        return self._compiled


class _Binding:
    """Where one input or output lives: a numpy array or a memory region (or omitted)."""

    __slots__ = ("array", "memory", "offset", "length", "dims", "omitted")

    def __init__(self, array=None, memory=None, offset=0, length=0, dims=None, omitted=False):
        self.array, self.memory, self.offset, self.length = array, memory, offset, length
        self.dims, self.omitted = dims, omitted


class Event:
    def __init__(self, thread: threading.Thread, execution: "Execution"):
        self._thread, self._execution = thread, execution

    def wait(self) -> None:
        self._thread.join()
        if self._execution._error is not None:
            raise self._execution._error


class Execution:
    def __init__(self, compilation: Compilation):
        if not isinstance(compilation, Compilation) or not compilation.finished:
            raise bad_state("Execution: the compilation must be finished first")
        self.compilation = compilation
        self.model = compilation.model
        self._inputs: list[Optional[_Binding]] = [None] * len(self.model.inputs)
        self._outputs: list[Optional[_Binding]] = [None] * len(self.model.outputs)
        self._output_dims: list[Optional[tuple]] = [None] * len(self.model.outputs)
        self.loop_timeout_s = DEFAULT_LOOP_TIMEOUT_S
        self.timeout_ns: Optional[int] = None
        self.reusable = False
        self._state = "preparation"  # -> computing -> completed
        self._error: Optional[NnapiError] = None

    # -- setup ---------------------------------------------------------------
    def _check_preparation(self, call):
        if self._state == "computing" or (self._state == "completed" and not self.reusable):
            raise bad_state(f"Execution.{call}: the execution has already been computed")

    def _operand(self, kind: str, index: int):
        ids = self.model.inputs if kind == "input" else self.model.outputs
        if not isinstance(index, (int, np.integer)) or not 0 <= index < len(ids):
            raise bad_data(f"Execution: {kind} index {index} out of range (model has {len(ids)} {kind}s)")
        return self.model.operands[ids[index]]

    def _dims(self, kind, index, opnd, dims):
        declared = opnd.type.dimensions
        if dims is None:
            return declared
        try:
            dims = tuple(int(d) for d in dims)
        except (TypeError, ValueError):
            raise bad_data(f"Execution: {kind} {index} dimensions {dims!r} are not integers") from None
        if any(d < 0 for d in dims):
            raise bad_data(f"Execution: {kind} {index} dimensions {list(dims)} are negative")
        if not opnd.type.is_tensor:
            if dims:
                raise bad_data(f"Execution: {kind} {index} is a scalar; dimensions {list(dims)} given")
            return ()
        if declared is not None and len(declared) and (
                len(declared) != len(dims) or any(d and d != g for d, g in zip(declared, dims))):
            raise bad_data(f"Execution: {kind} {index} dimensions {list(dims)} are incompatible with the "
                           f"model's {list(declared)}")
        return dims

    def set_input(self, index: int, array, dims: Optional[Sequence[int]] = None) -> None:
        """Bind input `index` to an array (None = omitted optional input)."""
        self._check_preparation("set_input")
        opnd = self._operand("input", index)
        if array is None:
            self._inputs[index] = _Binding(omitted=True)
            return
        arr = np.asarray(array)
        if arr.dtype != opnd.type.dtype:
            raise bad_data(f"Execution: input {index} has dtype {arr.dtype}, the operand "
                           f"{opnd.type.describe()} needs {opnd.type.dtype}")
        d = self._dims("input", index, opnd, arr.shape if dims is None else dims)
        if dims is not None and int(np.prod(d or (1,))) != arr.size:
            raise bad_data(f"Execution: input {index} has {arr.size} elements, dimensions {list(d)} need "
                           f"{int(np.prod(d or (1,)))}")
        if opnd.type.is_tensor and (d is None or any(x == 0 for x in d)) and arr.ndim == 0:
            raise bad_data(f"Execution: input {index} dimensions are unknown; pass dims")
        self._inputs[index] = _Binding(array=arr.reshape(d) if d is not None and all(d) else arr, dims=d)

    def set_input_from_memory(self, index: int, memory: Memory, offset: int, length: int,
                              dims: Optional[Sequence[int]] = None) -> None:
        self._check_preparation("set_input_from_memory")
        opnd = self._operand("input", index)
        memory.check_range(offset, length, f"Execution: input {index}")
        d = self._dims("input", index, opnd, dims)
        if opnd.type.is_tensor and (not d or any(x == 0 for x in d)) and length:
            raise bad_data(f"Execution: input {index} ({opnd.type.describe()}) has unknown dimensions; pass dims")
        self._check_length("input", index, opnd, d, length, exact=True)
        self._inputs[index] = _Binding(memory=memory, offset=offset, length=length, dims=d)

    def set_output(self, index: int, array: Optional[np.ndarray], dims: Optional[Sequence[int]] = None) -> None:
        """Bind output `index` to a writable array (None = output not wanted)."""
        self._check_preparation("set_output")
        opnd = self._operand("output", index)
        if array is None:
            self._outputs[index] = _Binding(omitted=True)
            return
        if not isinstance(array, np.ndarray) or not array.flags.writeable:
            raise bad_data(f"Execution: output {index} needs a writable numpy array")
        if array.dtype != opnd.type.dtype:
            raise bad_data(f"Execution: output {index} has dtype {array.dtype}, the operand needs {opnd.type.dtype}")
        d = self._dims("output", index, opnd, dims)
        self._check_length("output", index, opnd, d, array.nbytes, exact=False)
        self._outputs[index] = _Binding(array=array, dims=d)

    def set_output_from_memory(self, index: int, memory: Memory, offset: int, length: int,
                               dims: Optional[Sequence[int]] = None) -> None:
        self._check_preparation("set_output_from_memory")
        opnd = self._operand("output", index)
        memory.check_range(offset, length, f"Execution: output {index}")
        d = self._dims("output", index, opnd, dims)
        self._check_length("output", index, opnd, d, length, exact=False)
        self._outputs[index] = _Binding(memory=memory, offset=offset, length=length, dims=d)

    def _check_length(self, kind, index, opnd, dims, length, exact):
        """A buffer of `length` bytes for a fully known shape: exactly its size (inputs) or at
        least its size (outputs; an output of a shape known only at run time is checked then)."""
        if opnd.type.is_tensor and (not dims or any(x == 0 for x in dims)):
            return
        need = int(np.prod(dims)) * opnd.type.dtype.itemsize if opnd.type.is_tensor else opnd.type.dtype.itemsize
        if (length != need) if exact else (length < need):
            raise bad_data(f"Execution: {kind} {index} has {length} bytes, {opnd.type.describe()} needs {need}")

    def set_loop_timeout(self, seconds: float) -> None:
        """WHILE loop timeout in seconds (default 2 s; values above 15 s are clamped to 15 s)."""
        self._check_preparation("set_loop_timeout")
        self.loop_timeout_s = min(float(seconds), MAXIMUM_LOOP_TIMEOUT_S)

    def set_timeout(self, duration_ns: int) -> None:
        self._check_preparation("set_timeout")
        self.timeout_ns = int(duration_ns) if duration_ns else None

    def set_reusable(self, reusable: bool) -> None:
        self._check_preparation("set_reusable")
        self.reusable = bool(reusable)

    # -- compute -------------------------------------------------------------
    def compute(self) -> None:
        """Run the model. Errors found before the run starts (unset inputs or outputs) leave the
        execution as it was; once the run started, the execution is completed, whatever the outcome:
        a non-reusable execution then raises BAD_STATE when used again, a reusable one may be
        computed again."""
        self._begin()
        try:
            self._run_checked()
        finally:
            self._state = "completed"

    def start_compute(self) -> Event:
        self._begin()

        def work():
            try:
                self._run_checked()
            except NnapiError as e:
                self._error = e
            finally:
                self._state = "completed"
        t = threading.Thread(target=work, daemon=True)
        t.start()
        return Event(t, self)

    def _begin(self):
        self._check_preparation("compute")
        for k, b in enumerate(self._inputs):
            if b is None:
                raise bad_data(f"Execution: input {k} was not set")
        for k, b in enumerate(self._outputs):
            if b is None:
                raise bad_data(f"Execution: output {k} was not set")
        self._error = None
        self._output_dims = [None] * len(self._outputs)  # a failed run leaves no dimensions of an earlier one
        self._state = "computing"

    def _input_array(self, k: int, b: _Binding):
        if b.omitted:
            return None
        if b.memory is not None:
            opnd = self.model.operands[self.model.inputs[k]]
            arr = decode_value(opnd.type.with_dimensions(b.dims), b.memory.view(b.offset, b.length))
            return arr.reshape(b.dims) if opnd.type.is_tensor else arr.reshape(())
        return b.array

    def _run_checked(self):
        """_run, with any failure reported as an NnapiError (OP_FAILED for unexpected exceptions)."""
        try:
            self._run()
        except NnapiError:
            raise
        except Exception as e:  # noqa: BLE001 - the NDK reports every failure as a result code
            raise NnapiError(ResultCode.OP_FAILED, f"execution failed: {type(e).__name__}: {e}") from e

    def _run(self):
        rt = _runtime()
        compiled = self.compilation.compiled
        arrays = [self._input_array(k, b) for k, b in enumerate(self._inputs)]
        for k, a in enumerate(arrays):
            opnd = self.model.operands[self.model.inputs[k]]
            if a is not None and opnd.type.is_tensor and a.ndim == 0:
                raise bad_data(f"Execution: input {k} needs dimensions")
        state = rt.RunState(self.loop_timeout_s)
        results = compiled.run(arrays, state)
        insufficient = []
        for k, (b, v) in enumerate(zip(self._outputs, results)):
            shape = None if v is None else tuple(v.array.shape)
            self._output_dims[k] = shape
            if b.omitted or v is None:
                continue
            data = np.ascontiguousarray(v.array)
            if b.memory is not None:
                if data.nbytes > b.length:
                    insufficient.append((k, shape))
                    continue
                b.memory.view(b.offset, data.nbytes)[:] = data.reshape(-1).view(np.uint8)
            else:
                if data.size > b.array.size:
                    insufficient.append((k, shape))
                    continue
                if b.array.shape == data.shape:
                    b.array[...] = data
                elif b.array.flags.c_contiguous:
                    b.array.reshape(-1)[: data.size] = data.reshape(-1)
                else:  # reshape(-1) would copy: write through the array's own element order
                    b.array.flat[: data.size] = data.reshape(-1)
        if insufficient:
            k, shape = insufficient[0]
            raise NnapiError(ResultCode.OUTPUT_INSUFFICIENT_SIZE,
                             f"output {k} buffer is too small for the result of shape {list(shape)}")

    def get_output_operand_dimensions(self, index: int) -> tuple:
        self._operand("output", index)
        if self._state != "completed":
            raise bad_state("Execution.get_output_operand_dimensions: the execution has not completed")
        dims = self._output_dims[index]
        if dims is None:
            raise bad_state(f"Execution: output {index} has no result")
        return dims

    def get_output_operand_rank(self, index: int) -> int:
        return len(self.get_output_operand_dimensions(index))
