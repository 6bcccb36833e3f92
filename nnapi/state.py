"""State carried between executions: NNAPI has no variables, so a stateful source model
(TFLite resource variables) becomes a model in which each variable is a pair of a model
input (its value before the execution) and a model output (its value after), plus the
value it starts from. The caller feeds output `output` of one execution to input `input`
of the next; `initial` is what the first execution gets, stored as the input operand
stores values (e.g. uint8 when an int8 tensor was rewritten below feature level 4).

`Model.set_state(entries)` attaches them (before `finish`); `.nnapi` files keep them
(nnapi/serialize.py) and `carry` / `initial_values` run the protocol.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .errors import bad_data


@dataclass(frozen=True)
class StateVariable:
    variable: str          # the source variable's name (TFLite: its VAR_HANDLE shared_name)
    input: int             # position in model.inputs: the value before the execution
    output: int            # position in model.outputs: the value after it
    initial: np.ndarray    # the value of the first execution, in the input operand's stored form

    def as_dict(self) -> dict:
        return {"variable": self.variable, "input": self.input, "output": self.output,
                "initial": self.initial.tolist(), "dtype": self.initial.dtype.name,
                "shape": list(self.initial.shape)}


def check_state(model, entries: Sequence[StateVariable]) -> list[StateVariable]:
    """The entries, checked against the model's inputs and outputs (BAD_DATA naming the variable)."""
    out, inputs, names = [], set(), set()
    for s in entries:
        what = f"state variable {s.variable!r}"
        if not isinstance(s.variable, str) or s.variable in names:
            raise bad_data(f"{what}: the name must be a string and unique")
        if not 0 <= s.input < len(model.inputs) or s.input in inputs:
            raise bad_data(f"{what}: input position {s.input} is out of range or taken "
                           f"(the model has {len(model.inputs)} inputs)")
        if not 0 <= s.output < len(model.outputs):
            raise bad_data(f"{what}: output position {s.output} is out of range "
                           f"(the model has {len(model.outputs)} outputs)")
        ti = model.operands[model.inputs[s.input]].type
        to = model.operands[model.outputs[s.output]].type
        if ti.code != to.code or tuple(ti.dimensions or ()) != tuple(to.dimensions or ()) or not ti.is_fully_specified:
            raise bad_data(f"{what}: input {ti.describe()} and output {to.describe()} must have the same type "
                           f"and fully specified dimensions")
        initial = np.asarray(s.initial)
        if initial.dtype != ti.dtype or initial.size != ti.element_count():
            raise bad_data(f"{what}: initial value {initial.dtype}{list(initial.shape)} does not fit input "
                           f"{ti.describe()}")
        names.add(s.variable)
        inputs.add(s.input)
        initial = np.array(initial.reshape(tuple(ti.dimensions)))  # an owned copy
        initial.flags.writeable = False
        out.append(StateVariable(s.variable, int(s.input), int(s.output), initial))
    return out


def initial_values(model) -> dict[int, np.ndarray]:
    """{input position: initial value} of every state variable of `model`."""
    return {s.input: s.initial for s in model.state}


def non_state_inputs(model) -> list[int]:
    """Positions of the model inputs that the caller provides (not state)."""
    taken = {s.input for s in model.state}
    return [k for k in range(len(model.inputs)) if k not in taken]


def full_inputs(model, given: Sequence[np.ndarray], state: dict[int, np.ndarray]) -> list[np.ndarray]:
    """Every model input in order: `given` for the non-state positions, `state` for the others."""
    given = list(given)
    if len(given) != len(non_state_inputs(model)):
        raise bad_data(f"{len(given)} inputs given, the model takes {len(non_state_inputs(model))} besides its "
                       f"{len(model.state)} state inputs")
    it = iter(given)
    return [state[k] if k in state else next(it) for k in range(len(model.inputs))]


def carry(model, outputs: Sequence[np.ndarray]) -> dict[int, np.ndarray]:
    """The state inputs of the next execution: {input position: output `output` of this one}."""
    return {s.input: np.asarray(outputs[s.output]).reshape(s.initial.shape) for s in model.state}
