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

Validation, feature-level computation, and the converters' builder (`arrange`)
all read the same spec.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence, Union

import numpy as np

from ..bias_scale import bias_scale as bias_scale_product, bias_scale_matches
from ..codes import OperandCode, OperationCode

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
    overrides declared dimensions with ones inferred earlier in the model (nnapi/shapes.py)."""

    def __init__(self, model, index: int, spec: "OpSpec", form: Form, in_map: dict, out_map: dict,
                 shapes: Optional[dict] = None):
        self.model, self.index, self.spec, self.form = model, index, spec, form
        self._in, self._out = in_map, out_map
        self._shapes = shapes if shapes is not None else {}

    def operand_dims(self, i: int) -> Shape:
        """Operand i's Shape: () for scalars, the inferred or declared dimensions of tensors."""
        if i in self._shapes:
            return self._shapes[i]
        return declared_shape(self.model, i)

    def dims(self, name: str) -> Shape:
        """The Shape of input `name` (None when absent, omitted or of unknown rank)."""
        idx = self._in.get(name)
        if idx is None or isinstance(idx, list) or self.model.operands[idx].is_omitted:
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
        return not self.model.operands[idx].is_omitted

    def input(self, name: str):
        idx = self._in.get(name)
        if idx is None or isinstance(idx, list):
            return None if idx is None else [self.model.operands[i] for i in idx]
        op = self.model.operands[idx]
        return None if op.is_omitted else op

    def inputs(self, name: str) -> list:
        idx = self._in.get(name, [])
        return [self.model.operands[i] for i in (idx if isinstance(idx, list) else [idx])]

    def output(self, name: str):
        idx = self._out.get(name)
        if idx is None or isinstance(idx, list):
            return None if idx is None else [self.model.operands[i] for i in idx]
        return self.model.operands[idx]

    def outputs(self, name: str) -> list:
        idx = self._out.get(name, [])
        return [self.model.operands[i] for i in (idx if isinstance(idx, list) else [idx])]

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

    def output_shapes(self, model, index: int, shapes: Optional[dict] = None) -> dict:
        """{output operand: inferred Shape} for operation `index` ({} without an `infer`, or when no
        form matches). `shapes` holds Shapes inferred for earlier operands."""
        view = self.view(model, index, shapes)
        if view is None or self.infer is None:
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


# -- shared rules ---------------------------------------------------------------

def same_quant(*names: str) -> Rule:
    """The named quantized operands must share scale and zero point."""
    def rule(v: OpView):
        ops = [(n, o) for n in names for o in v.inputs(n) + v.outputs(n) if o is not None and not o.is_omitted]
        ops = [(n, o) for n, o in ops if o.type.code in _QUANT8]
        if len({(o.type.scale, o.type.zero_point) for _, o in ops}) > 1:
            yield ("scale/zero point must match: " +
                   ", ".join(f"{n} scale={o.type.scale:g} zp={o.type.zero_point}" for n, o in ops))
    return rule


_QUANT8 = frozenset({OperandCode.TENSOR_QUANT8_ASYMM, OperandCode.TENSOR_QUANT8_ASYMM_SIGNED})


def bias_scale(input_name="input", filter_name="filter", bias_name="bias") -> Rule:
    """Quantized bias: zero point 0 and scale == input scale x filter scale (per channel when the filter is)."""
    def rule(v: OpView):
        inp, flt, bias = v.input(input_name), v.input(filter_name), v.input(bias_name)
        if inp is None or flt is None or bias is None or inp.type.code not in _QUANT8:
            return
        if bias.type.zero_point != 0:
            yield f"{bias_name} zero point must be 0, got {bias.type.zero_point}"
        if flt.type.code == OperandCode.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            return  # per-channel bias scales are implied by the filter's channel scales
        if not bias_scale_matches(bias.type.scale, inp.type.scale, flt.type.scale):  # huge scales: inf, reported
            yield (f"{bias_name} scale {bias.type.scale:g} must equal {input_name} scale x {filter_name} scale "
                   f"= {bias_scale_product(inp.type.scale, flt.type.scale):g}")
    return rule


def rank_in(name: str, ranks: Iterable[int]) -> Rule:
    allowed = tuple(ranks)

    def rule(v: OpView):
        for o in v.inputs(name) + v.outputs(name):
            if o is None or o.is_omitted or o.type.dimensions is None:
                continue
            r = len(o.type.dimensions)
            if r and r not in allowed:
                yield f"{name} has rank {r}, expected one of {list(allowed)}"
    return rule


def rank_at_most(name: str, max_rank: int) -> Rule:
    return rank_in(name, range(1, max_rank + 1))


def fixed_output_quant(out_name: str, by_code: dict) -> Rule:
    """Output quantization fixed per type, e.g. LOGISTIC: uint8 scale 1/256 zp 0."""
    def rule(v: OpView):
        o = v.output(out_name)
        if o is None or o.type.code not in by_code:
            return
        scale, zp = by_code[o.type.code]
        if abs(o.type.scale - scale) > 1e-9 or o.type.zero_point != zp:
            yield (f"{out_name} of type {o.type.code.name} must have scale {scale:g} and zero point {zp}, "
                   f"got scale {o.type.scale:g} zero point {o.type.zero_point}")
    return rule


# -- shared shape rules ---------------------------------------------------------------
# Every shape rule checks only what is known: a 0 extent is unknown, and a tensor
# without dimensions has an unknown rank; either passes.

def known_rank(operand) -> Optional[int]:
    """The rank of an operand when it is known (0 for scalars), else None (absent, omitted, unknown rank)."""
    if operand is None or operand.is_omitted:
        return None
    return operand.type.rank


def rank_of(name: str, delta: int = 0) -> Callable[[OpView], Optional[int]]:
    """For output_rank: the known rank of input `name` (the first of a repeated list whose rank is
    known) plus `delta`, or None."""
    def rank(v: OpView):
        for o in v.inputs(name):
            r = known_rank(o)
            if r is not None:
                return r + delta
        return None
    return rank


def length_of(name: str) -> Callable[[OpView], Optional[int]]:
    """For output_rank: the known length (first extent) of the 1-D (or [n, 2]) input `name`, or None."""
    def length(v: OpView):
        o = v.input(name)
        if o is None or not o.type.dimensions or not o.type.dimensions[0]:
            return None
        return o.type.dimensions[0]
    return length


def axes_in_range(input_name: str, axes_name: str, extra: int = 0) -> Rule:
    """Constant axes must lie in [-rank, rank) of the input (when its rank is known); `extra` widens
    the range for operations that insert a dimension (EXPAND_DIMS: [-(n + 1), n + 1))."""
    def rule(v):
        rank, axes = known_rank(v.input(input_name)), v.const(axes_name)
        if rank is None or axes is None:
            return
        n = rank + extra
        bad = [int(a) for a in np.ravel(axes) if not -n <= int(a) < n]
        if bad:
            yield f"{axes_name} {bad} out of range [-{n}, {n}) for a rank-{rank} {input_name}"
    return rule


def output_rank(out_name: str, expected) -> Rule:
    """Every operand named `out_name` has rank `expected` (an int, or a function of the view giving the
    rank or None when it cannot be known), when its rank is known."""
    def rule(v):
        want = expected(v) if callable(expected) else expected
        if want is None:
            return
        for o in v.outputs(out_name):
            r = known_rank(o)
            if r is not None and r != want:
                yield f"{out_name} has rank {r}, expected {want}"
    return rule


def output_ranks(**ranks) -> list:
    """output_rank rules for several outputs with fixed ranks."""
    return [output_rank(name, r) for name, r in ranks.items()]


def rank_at_least(name: str, low: int) -> Rule:
    def rule(v):
        rank = known_rank(v.input(name))
        if rank is not None and rank < low:
            yield f"{name} has rank {rank}, expected at least {low}"
    return rule


def length_is_rank(vector_name: str, input_name: str = "input") -> Rule:
    """A parameter tensor with one entry (or row) per input dimension (SLICE begin/size, TILE multiples,
    TRANSPOSE perm, PAD paddings): its first extent equals the input's rank, when both are known."""
    def rule(v):
        rank, length = known_rank(v.input(input_name)), length_of(vector_name)(v)
        if rank is not None and length is not None and rank != length:
            yield f"{vector_name} has {length} entries, expected one per dimension of the rank-{rank} {input_name}"
    return rule


def same_shape(*names: str) -> Rule:
    """Operands whose dimensions are all known must agree (elementwise ops keep the shape)."""
    def rule(v):
        ops = [(n, o) for n in names for o in v.inputs(n) + v.outputs(n) if o is not None and not o.is_omitted]
        known = [(n, o.type.dimensions) for n, o in ops if o.type.dimensions]
        for (n1, d1), (n2, d2) in zip(known, known[1:]):
            if len(d1) != len(d2) or any(a and b and a != b for a, b in zip(d1, d2)):
                yield f"{n1} has shape {list(d1)} but {n2} has shape {list(d2)}"
                return
    return rule


def _broadcast_extent(p: int, q: int) -> Optional[int]:
    """The broadcast of two extents (0 = unknown): the extent, 0 when unknown, None when they clash."""
    known = {p, q} - {0}
    big = known - {1}
    if len(big) > 1:
        return None
    if big:
        return big.pop()
    return 1 if p and q else 0


def broadcast_output(a: str, b: str, out: str = "output") -> Rule:
    """Inputs `a` and `b` broadcast against each other (numpy rules, aligned from the last dimension)
    and output `out` has the broadcast shape: its rank is the larger input rank and every extent that
    is known matches. Unknown extents (0) and unknown ranks pass."""
    def rule(v):
        x, y = v.input(a), v.input(b)
        if x is None or y is None or not x.type.dimensions or not y.type.dimensions:
            return
        dx, dy = x.type.dimensions, y.type.dimensions
        rank = max(len(dx), len(dy))
        px, py = (1,) * (rank - len(dx)) + dx, (1,) * (rank - len(dy)) + dy
        expected = [_broadcast_extent(p, q) for p, q in zip(px, py)]
        if None in expected:
            yield f"{a} {list(dx)} and {b} {list(dy)} do not broadcast"
            return
        for o in v.outputs(out):
            do = o.type.dimensions
            if do and (len(do) != rank or any(e and d and e != d for e, d in zip(expected, do))):
                yield (f"{out} has shape {list(do)}, the broadcast shape of {a} {list(dx)} and {b} {list(dy)} "
                       f"is {['?' if not e else e for e in expected]}")
    return rule


# -- shared shape inference -------------------------------------------------------------
# `infer` functions for the common cases, and helpers for writing others. Unknown stays
# unknown: an unknown input rank gives an unknown output rank, an unknown extent (0) an
# unknown extent.

def broadcast_shapes(a: Shape, b: Shape) -> Shape:
    """numpy-style broadcast of two Shapes (0 where unknown); None for an unknown rank. Extents that
    clash give 0 (the broadcast_output rule reports them)."""
    if a is None or b is None:
        return None
    rank = max(len(a), len(b))
    pa, pb = (1,) * (rank - len(a)) + tuple(a), (1,) * (rank - len(b)) + tuple(b)
    return tuple(_broadcast_extent(p, q) or 0 for p, q in zip(pa, pb))


def infer_same_as(input_name: str = "input", *outputs: str) -> Callable[[OpView], dict]:
    """Every output (default "output") has the shape of `input_name` (elementwise unary ops)."""
    names = outputs or ("output",)

    def infer(v: OpView) -> dict:
        return dict.fromkeys(names, v.dims(input_name))
    return infer


def infer_broadcast(a: str = "input1", b: str = "input2", out: str = "output") -> Callable[[OpView], dict]:
    """The output has the broadcast shape of inputs `a` and `b` (binary elementwise ops)."""
    def infer(v: OpView) -> dict:
        return {out: broadcast_shapes(v.dims(a), v.dims(b))}
    return infer


def const_ints(v: OpView, name: str) -> Optional[list]:
    """A constant integer input (scalar or tensor) as a flat list of Python ints, or None."""
    value = v.const(name)
    if value is None:
        return None
    return [int(x) for x in np.ravel(value)]


def normalize_axis(axis: int, rank: int) -> Optional[int]:
    """axis in [-rank, rank) as a non-negative index, or None when out of range."""
    a = axis + rank if axis < 0 else axis
    return a if 0 <= a < rank else None
