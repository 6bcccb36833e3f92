"""The declarative operation-spec framework (DESIGN.md, "the one idea").

An OpSpec describes one NNAPI operation once:

* `forms`: the input/output signatures (e.g. CONV_2D's explicit and implicit
  padding forms). Each argument has a name, a type (a fixed OperandCode such as
  INT32, or a type variable such as "T" that a type case binds), and may be
  optional (a trailing input that may be left out), omittable (an operand that
  may be NO_VALUE), repeated (a variadic list), or need a feature level of its
  own when present.
* `type_cases`: which combinations of type-variable bindings are allowed and
  the feature level each needs.
* `rules`: extra checks over the concrete operands (bias scale, fixed output
  quantization, ranks, ...), each returning problem strings.
* `level_rules`: functions returning the feature level a particular use needs
  beyond the type case (e.g. rank 5 inputs).
* `infer`: shape inference, `infer(view) -> {output name: Shape}` from the
  inputs' known dimensions (`view.dims(name)`) and constant values
  (`view.const(name)`); a Shape is a tuple with 0 for an unknown extent, or
  None for an unknown rank; a repeated output maps to a list of Shapes.
  nnapi/shapes.py propagates it through a model. `value_dependent` names the
  outputs whose extents depend on input values (left unknown), with the reason.

Validation, feature-level computation, the converters' builder (`arrange`) and
the executor's kernels (`bind`, nnapi/ops/binding.py: arguments by name) all
read the same spec. The shared rules are in rules.py, the shared shape inference
in inference.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence, Union

from ..codes import OperandCode, OperationCode
from .binding import Bound

TypeRef = Union[OperandCode, str]


@dataclass(frozen=True)
class Arg:
    """One argument (input or output) of an operation form."""

    name: str
    type: TypeRef
    optional: bool = False      # trailing input that may be absent
    omittable: bool = False     # operand may be NO_VALUE (omitted)
    repeated: bool = False      # a variadic list of operands (at least `min_count`)
    min_count: int = 1
    level: int = 1              # feature level this argument needs when present
    types: Optional[tuple] = None  # for fixed-choice arguments: the allowed codes
    default: object = None      # an optional or omittable scalar's value when absent (NHWC layout, dilation 1)


def arg(name, type, **kw) -> Arg:
    return Arg(name, type, **kw)


def opt(name, type, level=1, **kw) -> Arg:
    return Arg(name, type, optional=True, level=level, **kw)


@dataclass(frozen=True)
class Form:
    name: str
    inputs: tuple
    outputs: tuple
    level: int = 1

    def __init__(self, name, inputs, outputs, level=1):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "inputs", tuple(inputs))
        object.__setattr__(self, "outputs", tuple(outputs))
        object.__setattr__(self, "level", level)


@dataclass(frozen=True)
class TypeCase:
    """An allowed binding of type variables (name -> OperandCode) and the level it needs."""

    level: int
    binding: tuple

    def __init__(self, level: int, **binding):
        object.__setattr__(self, "level", level)
        object.__setattr__(self, "binding", tuple(sorted(binding.items())))

    def as_dict(self) -> dict:
        return dict(self.binding)


def cases(level: int, var: str, *codes, **fixed) -> list[TypeCase]:
    """Shorthand: one TypeCase per code for `var` (other variables fixed)."""
    return [TypeCase(level, **{var: c}, **fixed) for c in codes]


Shape = Optional[tuple]   # known dimensions (0 = unknown extent); None = unknown rank


def declared_shape(model, i: int) -> Shape:
    """Operand i's declared Shape: () for scalars, a tensor's dimensions, None for an unknown rank."""
    t = model.operands[i].type
    if not t.is_tensor:
        return ()
    return tuple(t.dimensions) if t.dimensions else None


class OpView:
    """A read-only view of one operation of a model, by argument name. `shapes` (operand -> Shape)
    overrides declared dimensions with ones inferred earlier in the model (nnapi/shapes.py). `actual`
    (operand -> Operand) stands the operands as fed at run time in for the declared ones: their actual
    dimensions, and a run-time scalar's value as a constant (Bound.run_time_problems)."""

    def __init__(self, model, index: int, spec: "OpSpec", form: Form, in_map: dict, out_map: dict,
                 shapes: Optional[dict] = None, actual: Optional[dict] = None):
        self.model, self.index, self.spec, self.form = model, index, spec, form
        self._in, self._out = in_map, out_map
        self._shapes = shapes if shapes is not None else {}
        self._actual = actual if actual is not None else {}

    def _operand(self, i: int):
        op = self._actual.get(i)
        return self.model.operands[i] if op is None else op

    def operand_dims(self, i: int) -> Shape:
        """Operand i's Shape: () for scalars, the actual, inferred or declared dimensions of tensors."""
        op = self._actual.get(i)
        if op is not None:
            return tuple(op.type.dimensions) if op.type.is_tensor else ()
        if i in self._shapes:
            return self._shapes[i]
        return declared_shape(self.model, i)

    def dims(self, name: str) -> Shape:
        """The Shape of input `name` (None when absent, omitted or of unknown rank)."""
        idx = self._in.get(name)
        if idx is None or isinstance(idx, list) or self._operand(idx).is_omitted:
            return None
        return self.operand_dims(idx)

    def all_dims(self, name: str) -> list:
        """The Shapes of every operand of a (repeated) input `name`."""
        idx = self._in.get(name, [])
        return [self.operand_dims(i) for i in (idx if isinstance(idx, list) else [idx])]

    @property
    def where(self) -> str:
        return f"operation {self.index} ({self.spec.code.name})"

    def has(self, name: str) -> bool:
        idx = self._in.get(name)
        if idx is None:
            return False
        if isinstance(idx, list):
            return True
        return not self._operand(idx).is_omitted

    def input(self, name: str):
        idx = self._in.get(name)
        if idx is None or isinstance(idx, list):
            return None if idx is None else [self._operand(i) for i in idx]
        op = self._operand(idx)
        return None if op.is_omitted else op

    def inputs(self, name: str) -> list:
        idx = self._in.get(name, [])
        return [self._operand(i) for i in (idx if isinstance(idx, list) else [idx])]

    def output(self, name: str):
        idx = self._out.get(name)
        if idx is None or isinstance(idx, list):
            return None if idx is None else [self._operand(i) for i in idx]
        return self._operand(idx)

    def outputs(self, name: str) -> list:
        idx = self._out.get(name, [])
        return [self._operand(i) for i in (idx if isinstance(idx, list) else [idx])]

    def const(self, name: str):
        """The constant value of an input, as a Python scalar or numpy array, or None."""
        op = self.input(name)
        if op is None or not op.is_constant:
            return None
        v = op.value
        return v.item() if v is not None and v.ndim == 0 else v


Rule = Callable[[OpView], Iterable[str]]
LevelRule = Callable[[OpView], int]


@dataclass
class OpSpec:
    code: OperationCode
    forms: list
    type_cases: list
    rules: list = field(default_factory=list)
    level_rules: list = field(default_factory=list)
    doc: str = ""
    infer: Optional[Callable[["OpView"], dict]] = None
    # outputs whose extents depend on input values, not only on shapes and constants
    # (output name -> why), e.g. the number of boxes a non-maximum suppression keeps
    value_dependent: dict = field(default_factory=dict)

    # -- matching ------------------------------------------------------------
    def match_form(self, model, inputs: Sequence[int], outputs: Sequence[int]):
        """The first form whose argument counts and fixed types fit; (form, in_map, out_map) or None."""
        for form in self.forms:
            in_map = _bind(form.inputs, inputs, model)
            if in_map is None:
                continue
            out_map = _bind(form.outputs, outputs, model)
            if out_map is None:
                continue
            return form, in_map, out_map
        return None

    def view(self, model, index: int, shapes: Optional[dict] = None) -> Optional[OpView]:
        op = model.operations[index]
        m = self.match_form(model, op.inputs, op.outputs)
        if m is None:
            return None
        return OpView(model, index, self, *m, shapes=shapes)

    def bind(self, model, index: int) -> Bound:
        """Operation `index`'s arguments by name with their constants and derived facts, worked out once
        (the executor binds every operation at compilation; kernels read `ctx.args`)."""
        op = model.operations[index]
        m = self.match_form(model, op.inputs, op.outputs)
        if m is None:
            raise ValueError(f"operation {index} ({self.code.name}): {len(op.inputs)} inputs / {len(op.outputs)} "
                             f"outputs match no signature ({self.signature_summary()})")
        return Bound(self, model, index, m[0], m[1], m[2])

    def output_shapes(self, model, index: int, shapes: Optional[dict] = None) -> dict:
        """{output operand: inferred Shape} for operation `index` ({} without an `infer`, or when no
        form matches). `shapes` holds Shapes inferred for earlier operands."""
        view = self.view(model, index, shapes)
        return {} if view is None else self.inferred_outputs(view)

    def shape_problems(self, view: OpView) -> list[str]:
        """The rules and the output-shape check over `view` (whose `actual` operands hold the shapes fed
        at run time): every rule, then, when they pass, `infer` against each output's declared dimensions
        (the conflict check nnapi/shapes.py makes over the whole model)."""
        where = view.where
        problems = [f"{where}: {p}" for rule in self.rules for p in rule(view)]
        if problems:
            return problems
        for o, shape in self.inferred_outputs(view).items():
            declared = declared_shape(view.model, o)
            if merge(declared, shape)[1]:
                problems.append(conflict_message(where, o, declared, shape))
        return problems

    def inferred_outputs(self, view: OpView) -> dict:
        """{output operand: Shape} from `infer` over `view`."""
        if self.infer is None:
            return {}
        got = self.infer(view) or {}
        out = {}
        for name, shape in got.items():
            idx = view._out.get(name)
            if idx is None:
                continue
            if isinstance(idx, list):
                out.update((i, _shape(s)) for i, s in zip(idx, shape))
            else:
                out[idx] = _shape(shape)
        return out

    def arrange(self, form_name: str, **named) -> list:
        """Lay out operand indexes by argument name for `Model.add_operation` (the builder's half)."""
        form = next((f for f in self.forms if f.name == form_name), None)
        if form is None:
            raise KeyError(f"{self.code.name} has no form {form_name!r}: {[f.name for f in self.forms]}")
        out, missing = [], False
        for a in form.inputs:
            if a.name not in named or named[a.name] is None and a.optional:
                missing = True
                if not a.optional:
                    raise KeyError(f"{self.code.name} ({form_name}): missing input {a.name!r}")
                continue
            if missing:
                raise KeyError(f"{self.code.name}: optional input {a.name!r} given after an absent one")
            v = named[a.name]
            out.extend(v if a.repeated else [v])
        return out

    # -- checking ------------------------------------------------------------
    def problems(self, model, index: int, feature_level: int = 8) -> list[str]:
        """Every problem of operation `index` when targeting `feature_level`."""
        op = model.operations[index]
        where = f"operation {index} ({self.code.name})"
        m = self.match_form(model, op.inputs, op.outputs)
        if m is None:
            return [f"{where}: {len(op.inputs)} inputs / {len(op.outputs)} outputs of these types match no "
                    f"signature ({self.signature_summary()})"]
        view = OpView(model, index, self, *m)
        problems, level = self._type_problems(view)
        for rule in self.rules:
            problems.extend(f"{where}: {p}" for p in rule(view))
        if not problems:
            level = max(level, *(r(view) for r in self.level_rules)) if self.level_rules else level
            if level > feature_level:
                problems.append(f"{where}: needs feature level {level}, target is {feature_level}")
        return problems

    def level_for(self, **types) -> Optional[int]:
        """The lowest feature level at which this operation accepts operands of these types (type variable ->
        OperandCode, e.g. T=TENSOR_INT32; a variable not named may take any type): the level that introduced
        the operation, raised to the first type case that fits. None when no type case fits. Rules on
        values (level_rules) are not asked: they need an operation to look at."""
        if not types:
            return self.code.feature_level
        fits = [c.level for c in self.type_cases if all(c.as_dict().get(v) == code for v, code in types.items())]
        return max(self.code.feature_level, min(fits)) if fits else None

    def argument_level(self, name: str) -> int:
        """The feature level from which argument `name` (input or output) may be present, e.g. the state
        outputs of the sequence LSTM (first form that has it)."""
        for f in self.forms:
            for a in (*f.inputs, *f.outputs):
                if a.name == name:
                    return max(self.code.feature_level, f.level, a.level)
        raise KeyError(f"{self.code.name} has no argument {name!r}")

    def min_level(self, model, index: int) -> int:
        view = self.view(model, index)
        if view is None:
            return self.code.feature_level
        problems, level = self._type_problems(view)
        for r in self.level_rules:
            level = max(level, r(view))
        return level

    def _type_problems(self, view: OpView) -> tuple[list[str], int]:
        where = view.where
        form = view.form
        level = max(self.code.feature_level, form.level)
        problems: list[str] = []
        bound: dict[str, list] = {}
        for args, mapping in ((form.inputs, view._in), (form.outputs, view._out)):
            for a in args:
                idx = mapping.get(a.name)
                if idx is None:
                    continue
                for i in (idx if isinstance(idx, list) else [idx]):
                    opnd = view.model.operands[i]
                    if opnd.is_omitted:
                        if not a.omittable:
                            problems.append(f"{where}: {a.name} (operand {i}) may not be omitted")
                        continue
                    level = max(level, a.level, opnd.type.code.feature_level)
                    if isinstance(a.type, str):
                        bound.setdefault(a.type, []).append((a.name, i, opnd.type.code))
                    elif a.types is not None and opnd.type.code not in a.types:
                        problems.append(f"{where}: {a.name} (operand {i}) is {opnd.type.code.name}, expected one of "
                                        f"{[c.name for c in a.types]}")
        # type variables: every operand bound to one variable has one code
        actual = {}
        for var, uses in bound.items():
            codes = {c for _, _, c in uses}
            if len(codes) > 1:
                problems.append(f"{where}: " + ", ".join(f"{n} (operand {i}) is {c.name}" for n, i, c in uses)
                                + "; they must have the same type")
            actual[var] = uses[0][2]
        if problems:
            return problems, level
        best = None
        for case in self.type_cases:
            b = case.as_dict()
            if all(b.get(v) == c for v, c in actual.items()):
                best = case.level if best is None else min(best, case.level)
        if best is None:
            desc = ", ".join(f"{v}={c.name}" for v, c in sorted(actual.items()))
            problems.append(f"{where}: unsupported operand types ({desc})")
            return problems, level
        return problems, max(level, best)

    def signature_summary(self) -> str:
        parts = []
        for f in self.forms:
            req = sum(1 for a in f.inputs if not a.optional)
            tot = len(f.inputs)
            rep = any(a.repeated for a in f.inputs)
            parts.append(f"{f.name}: {req}{'+' if rep else ('' if req == tot else f'-{tot}')} inputs, "
                         f"{len(f.outputs)}{'+' if any(a.repeated for a in f.outputs) else ''} outputs")
        return "; ".join(parts)


def merge(declared: Shape, inferred: Shape) -> tuple[Shape, bool]:
    """(merged Shape, conflict): the known extents of both; conflict when known ranks or known extents
    differ (the declared Shape is kept then)."""
    if inferred is None:
        return declared, False
    if declared is None:
        return inferred, False
    if len(declared) != len(inferred):
        return declared, True
    out, conflict = [], False
    for d, i in zip(declared, inferred):
        if d and i and d != i:
            conflict = True
        out.append(d or i)
    return tuple(out), conflict


def conflict_message(where: str, operand: int, declared: Shape, inferred: Shape) -> str:
    """The one message for an output whose declared dimensions disagree with what its inputs give."""
    return f"{where}: output operand {operand} is declared {show_shape(declared)}, its inputs give {show_shape(inferred)}"


def show_shape(s: Shape) -> str:
    return "of unknown rank" if s is None else "[" + ", ".join("?" if not d else str(d) for d in s) + "]"


def _shape(s) -> Shape:
    return None if s is None else tuple(int(d) for d in s)


def _bind(args: Sequence[Arg], operands: Sequence[int], model) -> Optional[dict]:
    """Map argument names to operand indexes, or None when counts or fixed types do not fit."""
    n = len(operands)
    required = sum(a.min_count if a.repeated else 1 for a in args if not a.optional)
    has_repeat = any(a.repeated for a in args)
    if n < required or (not has_repeat and n > len(args)):
        return None
    extra = n - required if has_repeat else 0
    out: dict = {}
    pos = 0
    for a in args:
        if pos >= n:
            if not a.optional:
                return None
            break
        if a.repeated:
            take = a.min_count + extra
            out[a.name] = list(operands[pos: pos + take])
            pos += take
            continue
        i = operands[pos]
        if isinstance(a.type, OperandCode):
            opnd = model.operands[i]
            if not opnd.is_omitted and opnd.type.code != a.type:
                return None
        out[a.name] = i
        pos += 1
    if pos != n:
        return None
    return out
