"""Read the trace of the recording NNAPI shim (ndk/shim.c) back into nnapi.Models.

`replay(text)` rebuilds every model the traced program built, through the
public nnapi.Model API (so every model rule applies again), from the recorded
calls: operand types with their exact float bits, values byte for byte
(memory-backed values as the bytes the shim read from the mapped file),
per-channel parameters, operations, inputs/outputs, relax flag and references
between models. `differences(expected, actual)` compares two models subgraph by
subgraph, operand by operand and byte for byte.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from nnapi import Memory, Model, OperandType
from nnapi.codes import OperandCode, OperationCode


@dataclass
class Call:
    name: str                 # the NNAPI function without its "ANeuralNetworks" prefix
    fields: dict
    rc: Optional[int]         # None for the void functions (the *_free ones)

    def int(self, key: str) -> int:
        return int(self.fields[key])


def parse(text: str) -> list[Call]:
    calls = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, *parts = line.split(" ")
        fields = {}
        for p in parts:
            key, sep, value = p.partition("=")
            if not sep:
                raise ValueError(f"trace line {n}: malformed field {p!r}")
            fields[key] = value
        rc = fields.pop("rc", None)
        calls.append(Call(name, fields, None if rc is None else int(rc)))
    return calls


def _ints(value: str) -> list[int]:
    return [] if value in ("-", "") else [int(v) for v in value.split(",")]


def _float(bits_hex: str) -> float:
    return float(np.frombuffer(struct.pack("<I", int(bits_hex, 16)), np.float32)[0])


def _bytes(value: str) -> bytes:
    return b"" if value == "-" else bytes.fromhex(value)


@dataclass
class Replay:
    models: dict = field(default_factory=dict)      # shim model id -> nnapi.Model
    main: Optional[Model] = None                    # the model that was compiled
    memory_offsets: list = field(default_factory=list)  # (offset, length) of every memory-backed value
    created: dict = field(default_factory=dict)     # kind -> ids created successfully
    freed: dict = field(default_factory=dict)       # kind -> ids freed

    def leaked(self) -> dict:
        """kind -> ids created and never freed (empty when everything was freed)."""
        out = {}
        for kind, ids in self.created.items():
            rest = sorted(set(ids) - set(self.freed.get(kind, [])))
            if rest:
                out[kind] = rest
        return out


_CREATES = {"Model_create": "model", "Memory_createFromFd": "memory", "Compilation_create": "compilation",
            "Compilation_createForDevices": "compilation", "Execution_create": "execution",
            "Execution_startCompute": "event"}
_FREES = {"Model_free": "model", "Memory_free": "memory", "Compilation_free": "compilation",
          "Execution_free": "execution", "Event_free": "event"}


def replay(text_or_calls) -> Replay:
    calls = parse(text_or_calls) if isinstance(text_or_calls, str) else text_or_calls
    r = Replay()
    for c in calls:
        if c.name in _FREES:
            r.freed.setdefault(_FREES[c.name], []).append(c.int(_FREES[c.name]))
            continue
        if c.rc != 0:
            continue  # a failed call has no effect
        if c.name in _CREATES:
            kind = _CREATES[c.name]
            r.created.setdefault(kind, []).append(c.int(kind))
        f = c.fields
        m = r.models.get(int(f["model"])) if "model" in f else None
        if c.name == "Model_create":
            r.models[c.int("model")] = Model()
        elif c.name == "Model_addOperand":
            m.add_operand(OperandType(OperandCode(c.int("type")), _ints(f["dims"]), _float(f["scale"]),
                                      c.int("zero_point")))
        elif c.name == "Model_setOperandValue":
            m.set_operand_value(c.int("index"), None if f["null"] == "1" else _bytes(f["data"]))
        elif c.name == "Model_setOperandValueFromMemory":
            data = _bytes(f["data"])
            r.memory_offsets.append((c.int("offset"), c.int("length")))
            m.set_operand_value_from_memory(c.int("index"), Memory.from_buffer(bytearray(data)), 0, len(data))
        elif c.name == "Model_setOperandSymmPerChannelQuantParams":
            scales = [] if f["scales"] == "-" else [_float(s) for s in f["scales"].split(",")]
            m.set_operand_symm_per_channel_quant_params(c.int("index"), scales, c.int("channel_dim"))
        elif c.name == "Model_setOperandValueFromModel":
            m.set_operand_value_from_model(c.int("index"), r.models[c.int("value")])
        elif c.name == "Model_addOperation":
            m.add_operation(OperationCode(c.int("type")), _ints(f["inputs"]), _ints(f["outputs"]))
        elif c.name == "Model_identifyInputsAndOutputs":
            m.identify_inputs_and_outputs(_ints(f["inputs"]), _ints(f["outputs"]))
        elif c.name == "Model_relaxComputationFloat32toFloat16":
            m.relax_computation_float32_to_float16(f["allow"] == "1")
        elif c.name == "Model_finish":
            m.finish()
        elif c.name in ("Compilation_create", "Compilation_createForDevices"):
            r.main = m
    return r


def _value_bytes(operand) -> bytes:
    return np.ascontiguousarray(operand.value).tobytes()


def differences(expected: Model, actual: Model) -> list[str]:
    """Every difference between two models (subgraphs, operands, values, operations, I/O, relax flag)."""
    out: list[str] = []
    exp_sg, act_sg = [expected] + expected.referenced_models, [actual] + actual.referenced_models
    if len(exp_sg) != len(act_sg):
        return [f"{len(exp_sg)} subgraphs expected, got {len(act_sg)}"]
    exp_no = {id(m): k for k, m in enumerate(exp_sg)}
    act_no = {id(m): k for k, m in enumerate(act_sg)}
    for k, (e, a) in enumerate(zip(exp_sg, act_sg)):
        w = f"subgraph {k}"
        if len(e.operands) != len(a.operands):
            out.append(f"{w}: {len(e.operands)} operands expected, got {len(a.operands)}")
            continue
        for i, (eo, ao) in enumerate(zip(e.operands, a.operands)):
            wi = f"{w} operand {i}"
            et, at = eo.type, ao.type
            if (et.code, et.dimensions, et.zero_point) != (at.code, at.dimensions, at.zero_point):
                out.append(f"{wi}: type {et.describe()} expected, got {at.describe()}")
            if np.float32(et.scale).tobytes() != np.float32(at.scale).tobytes():
                out.append(f"{wi}: scale {et.scale!r} expected, got {at.scale!r}")
            if eo.lifetime is not ao.lifetime:
                out.append(f"{wi}: lifetime {eo.lifetime.name} expected, got {ao.lifetime.name}")
            ec, ac = eo.channel_quant, ao.channel_quant
            if (ec is None) != (ac is None) or (ec is not None and (
                    ec.channel_dim != ac.channel_dim
                    or ec.scales_array().tobytes() != ac.scales_array().tobytes())):
                out.append(f"{wi}: per-channel parameters {ec} expected, got {ac}")
            if eo.is_constant and ao.is_constant and _value_bytes(eo) != _value_bytes(ao):
                out.append(f"{wi}: value bytes differ")
            if (eo.subgraph is None) != (ao.subgraph is None) or (
                    eo.subgraph is not None and exp_no[id(eo.subgraph)] != act_no[id(ao.subgraph)]):
                out.append(f"{wi}: references a different subgraph")
        if len(e.operations) != len(a.operations):
            out.append(f"{w}: {len(e.operations)} operations expected, got {len(a.operations)}")
        for j, (eo, ao) in enumerate(zip(e.operations, a.operations)):
            if (eo.code, eo.inputs, eo.outputs) != (ao.code, ao.inputs, ao.outputs):
                out.append(f"{w} operation {j}: {eo} expected, got {ao}")
        if (e.inputs, e.outputs) != (a.inputs, a.outputs):
            out.append(f"{w}: inputs/outputs {e.inputs}/{e.outputs} expected, got {a.inputs}/{a.outputs}")
        if e.relaxed != a.relaxed:
            out.append(f"{w}: relaxed {e.relaxed} expected, got {a.relaxed}")
    return out
