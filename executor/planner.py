"""The memory plan of a compiled model: when each intermediate operand is made and
last read, which operands each step may free, which intermediates can share one
buffer (their lifetimes do not overlap), and the peak bytes that implies.

Constants, model inputs and model outputs are not intermediates: constants and
inputs belong to the caller, outputs stay alive to the end of the run.
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
        """Bytes of all buffer slots when intermediates with disjoint lifetimes share a slot."""
        return sum(self.slot_bytes)


def plan(model, steps) -> Plan:
    """`steps`: objects with `.inputs` and `.outputs` (operand indexes) in execution order."""
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
    _assign_slots(p, set(model.outputs))
    return p


def _assign_slots(p: Plan, outputs: set) -> None:
    """Greedy by definition order: take the smallest free slot that fits, else grow the largest free
    one, else open a new slot. Model outputs get slots of their own (the caller keeps them)."""
    free: list[int] = []
    releases: dict[int, list[int]] = {}
    for o, (start, end) in sorted(p.lifetimes.items(), key=lambda kv: (kv[1][0], kv[0])):
        for s in [k for k in releases if k < start]:
            free.extend(releases.pop(s))
        need = p.sizes[o]
        fits = [k for k in free if p.slot_bytes[k] >= need]
        if o in outputs or not free:
            slot = len(p.slot_bytes)
            p.slot_bytes.append(need)
        else:
            slot = min(fits, key=lambda k: p.slot_bytes[k]) if fits else max(free, key=lambda k: p.slot_bytes[k])
            free.remove(slot)
            p.slot_bytes[slot] = max(p.slot_bytes[slot], need)
        p.slots[o] = slot
        if o not in outputs:
            releases.setdefault(end, []).append(slot)


def planned_peak_bytes(compiled) -> int:
    """Peak bytes of intermediates alive at once under a compiled model's plan."""
    return compiled.plan.peak_bytes
