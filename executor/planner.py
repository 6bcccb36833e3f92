"""The memory plan of a compiled model: when each intermediate operand is made and
last read, which operands each step may free, which intermediates can share one
buffer (their lifetimes do not overlap), and the peak bytes that implies.

Constants, model inputs and model outputs are not intermediates: constants and
inputs belong to the caller, outputs stay alive to the end of the run.

A kernel may return a view of an input (RESHAPE does), so a buffer stays in use
while any view of it is alive: operands joined by a step that does not promise
fresh outputs form one alias class, and each member's buffer is kept until the
last member's last use. A class holding a model output gets no buffers at all:
the caller keeps the outputs, so they must not be overwritten by the next run.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Plan:
    last_use: dict            # operand -> index of the last step reading it
    frees: list               # per step: operands dead once it has run
    lifetimes: dict           # intermediate operand -> (defining step, last step alive)
    sizes: dict               # intermediate operand -> bytes (0 when the shape is only known at run time)
    slots: dict = field(default_factory=dict)   # intermediate operand -> buffer slot
    slot_bytes: list = field(default_factory=list)
    buffer_ends: dict = field(default_factory=dict)   # operand with a slot -> last step its buffer is in use

    @property
    def peak_bytes(self) -> int:
        """Largest sum of intermediate bytes alive at once (freed after their last use)."""
        steps = max((end for _, end in self.lifetimes.values()), default=-1) + 1
        live = [0] * (steps + 1)
        for o, (start, end) in self.lifetimes.items():
            live[start] += self.sizes[o]
            live[end + 1] -= self.sizes[o]
        peak = total = 0
        for d in live:
            total += d
            peak = max(peak, total)
        return peak

    @property
    def arena_bytes(self) -> int:
        """Bytes of all buffer slots (intermediates with disjoint buffer lifetimes share a slot; slots of
        operands whose size is known only at run time grow to fit when first used)."""
        return sum(self.slot_bytes)


def plan(model, steps, fresh=None) -> Plan:
    """`steps`: objects with `.inputs` and `.outputs` (operand indexes) in execution order; `fresh[s]`
    is True when step s's outputs never share memory with its inputs (default: none promise it)."""
    keep = set(model.outputs) | set(model.inputs) | {i for i, o in enumerate(model.operands) if o.is_constant}
    last_use: dict[int, int] = {}
    defined: dict[int, int] = {}
    for s, step in enumerate(steps):
        for i in step.inputs:
            last_use[i] = s
        for o in step.outputs:
            defined.setdefault(o, s)
    frees: list[list[int]] = [[] for _ in steps]
    for i, s in last_use.items():
        if i not in keep:
            frees[s].append(i)
    end_of_run = len(steps) - 1
    lifetimes = {o: (s, end_of_run if o in model.outputs else last_use.get(o, s)) for o, s in defined.items()
                 if o not in keep or o in model.outputs}
    sizes = {o: model.operands[o].type.byte_size() or 0 for o in lifetimes}
    p = Plan(last_use, [tuple(f) for f in frees], lifetimes, sizes)
    ends = _buffer_ends(model, steps, lifetimes, fresh or [False] * len(steps))
    _assign_slots(p, ends)
    return p


def _buffer_ends(model, steps, lifetimes: dict, fresh) -> dict:
    """Intermediate operand -> the last step its buffer may be read through any alias, for the operands
    that may live in a shared buffer (none of their aliases is a model output)."""
    parent: dict[int, int] = {}

    def find(o: int) -> int:
        while parent.get(o, o) != o:
            parent[o] = parent.get(parent[o], parent[o])   # path halving
            o = parent[o]
        return o

    for step, is_fresh in zip(steps, fresh):
        if is_fresh:
            continue
        for o in step.outputs:
            for i in step.inputs:
                if i >= 0:
                    parent[find(i)] = find(o)
    end: dict[int, int] = {}
    for o, (_, e) in lifetimes.items():
        r = find(o)
        end[r] = max(end.get(r, -1), e)
    outputs = {find(o) for o in model.outputs}
    return {o: end[find(o)] for o in lifetimes if find(o) not in outputs}


def _assign_slots(p: Plan, ends: dict) -> None:
    """Greedy by definition order over the operands that may share (`ends`: operand -> last step its
    buffer is in use): take the smallest free slot that fits, else grow the largest free one, else
    open a new slot. A slot is free again after the step that ends its operand's buffer."""
    free: list[int] = []
    releases: dict[int, list[int]] = {}
    for o, (start, _) in sorted(p.lifetimes.items(), key=lambda kv: (kv[1][0], kv[0])):
        if o not in ends:
            continue
        for s in [k for k in releases if k < start]:
            free.extend(releases.pop(s))
        need = p.sizes[o]
        fits = [k for k in free if p.slot_bytes[k] >= need]
        if not free:
            slot = len(p.slot_bytes)
            p.slot_bytes.append(need)
        else:
            slot = min(fits, key=lambda k: p.slot_bytes[k]) if fits else max(free, key=lambda k: p.slot_bytes[k])
            free.remove(slot)
            p.slot_bytes[slot] = max(p.slot_bytes[slot], need)
        p.slots[o] = slot
        p.buffer_ends[o] = ends[o]
        releases.setdefault(ends[o], []).append(slot)


def planned_peak_bytes(compiled) -> int:
    """Peak bytes of intermediates alive at once under a compiled model's plan."""
    return compiled.plan.peak_bytes
