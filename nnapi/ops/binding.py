"""An operation's arguments by name, bound once at compile time (`OpSpec.bind(model, k)`).

A `Bound` records, for one operation of a finished model, which form matched, where each of the
form's arguments sits among the operation's inputs, the values of its constant scalars, and the facts
derived from them (the layout, the window's strides and dilations, SAME/VALID padding worked out by
nnapi/ops/geometry.py). `bound.args(inputs)` is the view a kernel reads at run time: `args.filter` is
the input Value (None when omitted or absent), `args.stride_w` the scalar's Python value (the spec's
default when an optional scalar is absent). The executor's kernels never index inputs by position.
`bound.run_time_problem(inputs)` applies the spec's rules and shape inference to what is fed at run
time, for the operations whose shapes compilation could not know (`checks_at_run_time`).
"""
from __future__ import annotations

import copy
from typing import Optional

import numpy as np

from ..codes import Lifetime, OperandCode
from ..operand import Operand
from .geometry import implicit_padding

_MISSING = object()


class Bound:
    """One operation's argument layout and constants (see the module doc)."""

    __slots__ = ("spec", "model", "code", "form", "index", "positions", "consts", "scalars", "defaults", "runtime",
                 "nchw", "_match", "_const_pads", "_args_class", "_fed", "_passed")

    def __init__(self, spec, model, index: int, form, in_map: dict, out_map: dict):
        self.spec, self.model, self.code, self.form, self.index = spec, model, spec.code, form.name, index
        self._match = (form, in_map, out_map)
        self.positions: dict = {}    # argument name -> input position (a list for a repeated argument)
        self.consts: dict = {}       # scalar argument name -> its constant Python value
        self.scalars: set = set()    # names of scalar (not tensor) arguments
        self.runtime: set = set()    # names of arguments fed at run time (not constants, not omitted)
        self.defaults: dict = {a.name: a.default for a in form.inputs if a.optional or a.omittable}
        pos = 0
        for a in form.inputs:
            idx = in_map.get(a.name)
            if idx is None:
                if a.default is not None:   # an absent optional scalar: its default, a constant
                    self.consts[a.name] = a.default
                continue
            many = idx if isinstance(idx, list) else [idx]
            if any(not model.operands[i].is_constant and not model.operands[i].is_omitted for i in many):
                self.runtime.add(a.name)
            if isinstance(idx, list):
                self.positions[a.name] = list(range(pos, pos + len(idx)))
                pos += len(idx)
                continue
            self.positions[a.name] = pos
            pos += 1
            opnd = model.operands[idx]
            if not opnd.type.is_tensor:
                self.scalars.add(a.name)
                if opnd.is_omitted:
                    self.consts[a.name] = a.default
                elif opnd.is_constant and opnd.value is not None:
                    self.consts[a.name] = opnd.value.item()
        # derived facts: the layout (NCHW when true; None when the flag is fed at run time)
        if "layout" not in self.positions:
            self.nchw: Optional[bool] = False
        else:
            layout = self.consts.get("layout", _MISSING)
            self.nchw = None if layout is _MISSING else bool(layout)
        self._const_pads = None
        if form.name == "explicit" and all(n in self.consts for n in _PAD_NAMES):
            self._const_pads = tuple(self.consts[n] for n in _PAD_NAMES)
        self._args_class = _args_class(self)
        # (input position, operand, is a tensor) of every operand fed at run time, for run_time_problem
        self._fed = tuple((p, i, model.operands[i].type.is_tensor)
                          for name in self.runtime
                          for p, i in _pairs(self.positions[name], in_map[name])
                          if _fed_at_run_time(model.operands[i]))
        self._passed: set = set()   # run-time shape/value keys that passed run_time_problem

    # -- run-time checks: the spec's rules and inference over the operands as they are fed --------------
    def checks_at_run_time(self, known) -> bool:
        """Whether what is fed at run time can break a rule that compilation could not check: a tensor
        whose Shape is not fully known at compile time (`known(operand)`: the declared or inferred
        Shape), or a scalar fed at run time. Operations whose operands are all known need no check."""
        for _, i, tensor in self._fed:
            if not tensor:
                return True
            shape = known(i)
            if shape is None or not all(shape):
                return True
        return False

    def run_time_problem(self, inputs) -> Optional[str]:
        """The first problem the spec finds with `inputs` (the Values fed at run time, by position):
        its rules, `infer` and the output conflict check (OpSpec.shape_problems) over the operands with
        their actual dimensions and run-time scalar values; None when there is none. A set of shapes and
        values that passed once is not checked again."""
        try:   # the common case: every fed operand present
            key = tuple([inputs[p].array.shape if tensor else inputs[p].array.item() for p, _, tensor in self._fed])
        except AttributeError:   # an absent (omitted) one
            key = tuple(None if inputs[p] is None else inputs[p].array.shape if tensor else inputs[p].array.item()
                        for p, _, tensor in self._fed)
        if key in self._passed:
            return None
        actual = {}
        for p, i, tensor in self._fed:
            v = inputs[p]
            if v is None:
                continue
            opnd = self.model.operands[i]
            actual[i] = (Operand(opnd.type.with_dimensions(v.shape), opnd.lifetime, opnd.name, opnd.channel_quant)
                         if tensor else
                         Operand(opnd.type, Lifetime.CONSTANT_COPY, opnd.name, _value=np.asarray(v.array).reshape(())))
        from .spec import OpView   # (spec.py imports this module)
        form, in_map, out_map = self._match
        problems = self.spec.shape_problems(OpView(self.model, self.index, self.spec, form, in_map, out_map,
                                                   actual=actual))
        if problems:
            return problems[0]
        if len(self._passed) < 64:
            self._passed.add(key)
        return None

    def operand(self, name: str):
        """The declared operand of argument `name` (its type, or the model a SUBGRAPH operand references),
        None when absent."""
        pos = self.positions.get(name)
        if pos is None or isinstance(pos, list):
            return None
        return self.model.operands[self.model.operations[self.index].inputs[pos]]

    def constant(self, *names: str) -> bool:
        """Whether every named scalar argument is known at compile time (a constant, or absent with a
        default): what a preparer needs to specialize on its value."""
        return all(n in self.consts for n in names)

    def with_constants(self, values: dict) -> "Bound":
        """This binding, with the arguments whose every operand is a key of `values` (operands the
        executor computed at compile time from constants only) no longer counted as fed at run time."""
        _, in_map, _ = self._match
        names = {n for n in self.runtime
                 if all(i in values for i in (in_map[n] if isinstance(in_map[n], list) else [in_map[n]]))}
        if not names:
            return self
        other = copy.copy(self)
        other.runtime = self.runtime - names
        return other

    @property
    def where(self) -> str:
        return f"operation {self.index} ({self.code.name})"

    def args(self, inputs) -> "Args":
        return self._args_class(self, inputs)


_PAD_NAMES = ("pad_top", "pad_bottom", "pad_left", "pad_right")


def _pairs(pos, idx):
    """(input position, operand index) of an argument (a repeated one's every operand)."""
    return zip(pos, idx) if isinstance(pos, list) else [(pos, idx)]


def _fed_at_run_time(opnd) -> bool:
    return not (opnd.is_constant or opnd.is_omitted or opnd.lifetime is Lifetime.SUBGRAPH
                or opnd.type.code is OperandCode.SUBGRAPH)


class Args:
    """The run-time arguments of one operation by name (Bound.args)."""

    __slots__ = ("_bound", "_inputs")   # underscored: argument names (`inputs`, `strides`) are attributes

    def __init__(self, bound: Bound, inputs):
        self._bound, self._inputs = bound, inputs

    def __getattr__(self, name: str):   # only reached for a name the form does not have
        raise AttributeError(f"{self._bound.where}: the {self._bound.form} form has no argument {name!r}")

    def has(self, name: str) -> bool:
        """Whether argument `name` is present and not omitted."""
        pos = self._bound.positions.get(name)
        if pos is None:
            return False
        return True if isinstance(pos, list) else self._inputs[pos] is not None

    def get(self, name: str, default=None):
        """Argument `name`, or `default` when this form has no such argument or it is absent."""
        b = self._bound
        value = getattr(self, name) if name in b.positions or name in b.defaults or name in b.consts else None
        return default if value is None else value

    @property
    def form(self) -> str:
        return self._bound.form

    @property
    def nchw(self) -> bool:
        nchw = self._bound.nchw
        return bool(self.layout) if nchw is None else nchw

    @property
    def window_strides(self) -> tuple:
        """(stride_h, stride_w)."""
        return self.stride_h, self.stride_w

    @property
    def window_dilations(self) -> tuple:
        """(dilation_h, dilation_w): 1 where the form has none or they are absent."""
        return self.get("dilation_h", 1), self.get("dilation_w", 1)

    def infer(self) -> dict:
        """The spec's shape inference on these run-time input shapes: {output name: Shape} (the executor
        checks shapes known only at run time with it and the rules: Bound.run_time_problem)."""
        from .spec import OpView   # (spec.py imports this module)
        b = self._bound
        form, in_map, out_map = b._match
        shapes = {}
        for name, pos in b.positions.items():
            many = isinstance(pos, list)
            for p, i in zip(pos if many else [pos], in_map[name] if many else [in_map[name]]):
                v = self._inputs[p]
                if v is not None:
                    shapes[i] = tuple(v.shape)
        view = OpView(b.model, b.index, b.spec, form, in_map, out_map, shapes=shapes)
        return b.spec.infer(view) or {} if b.spec.infer is not None else {}

    def window_pads(self, in_hw: tuple, filter_hw: tuple) -> tuple:
        """(top, bottom, left, right) of a window operation: the explicit padding as given, or SAME/VALID
        worked out for this input size (nnapi/ops/geometry.py). ValueError for an invalid padding code."""
        if self._bound._const_pads is not None:
            return self._bound._const_pads
        if self._bound.form == "explicit":
            return tuple(getattr(self, n) for n in _PAD_NAMES)
        (sh, sw), (dh, dw), padding = self.window_strides, self.window_dilations, self.padding
        top, bottom, _ = implicit_padding(in_hw[0], sh, filter_hw[0], padding, dh)
        left, right, _ = implicit_padding(in_hw[1], sw, filter_hw[1], padding, dw)
        return top, bottom, left, right


# -- one Args class per argument layout: each argument a property, so reading one is a plain attribute
# access (kernels read several per run), never a failed lookup and a __getattr__ fallback
_CLASSES: dict = {}


def _args_class(bound: Bound) -> type:
    layout = (bound.code, bound.form, tuple((n, tuple(p) if isinstance(p, list) else p)
                                            for n, p in bound.positions.items()),
              frozenset(bound.scalars), frozenset(bound.consts), tuple(bound.defaults.items()))
    cls = _CLASSES.get(layout)
    if cls is None:
        getters = {}
        for name in set(bound.defaults) | set(bound.positions) | set(bound.consts):
            getters[name] = property(_getter(bound, name))
        cls = _CLASSES[layout] = type(f"Args_{bound.code.name}_{bound.form}", (Args,), {"__slots__": (), **getters})
    return cls


def _getter(bound: Bound, name: str):
    if name in bound.consts:
        return lambda self: self._bound.consts[name]
    pos = bound.positions.get(name)
    default = bound.defaults.get(name)
    if pos is None:   # an absent optional argument
        return lambda self: default
    if isinstance(pos, list):
        return lambda self: [self._inputs[i] for i in pos]
    if name in bound.scalars:   # a scalar fed at run time
        def scalar(self):
            v = self._inputs[pos]
            return default if v is None else v.array.item()
        return scalar
    return lambda self: self._inputs[pos]
