"""Generate PREFIX_model.h / PREFIX_model.c / PREFIX_weights.bin for one finished nnapi.Model.

The C rebuilds exactly the model's subgraphs through the NDK: the same
operands (type, dimensions, scale, zero point, per-channel parameters), the
same values (small ones from static arrays, large ones from the memory-mapped
weights file), the same operations, inputs/outputs and relax flag. Referenced
subgraphs (IF/WHILE) are built and finished before the models that reference
them, in dependency order. Every NNAPI result is checked; on failure
everything created is freed and the first error code is returned.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Optional

import numpy as np

from nnapi import Model
from nnapi.codes import MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES, Lifetime
from nnapi.ops import SPECS

from . import names
from .c_writer import c_array, comment, comment_text, float_literal, string_literal, u32_list, wrap_items

TEMPLATES = Path(__file__).resolve().parent / "templates"
WEIGHTS_ALIGN = 64  # offsets of values in the weights file (NNAPI asks for at least the element size)


@dataclass
class Layout:
    """Where everything goes: subgraph numbering, build order and the weights file."""

    subgraphs: list                      # [main] + referenced models (the numbering used in the C comments)
    build_order: list                    # subgraph numbers, dependencies first, main (0) last
    weights: bytearray = field(default_factory=bytearray)
    offsets: dict = field(default_factory=dict)  # (subgraph number, operand index) -> (offset, length)

    def number_of(self, model: Model) -> int:
        return next(k for k, m in enumerate(self.subgraphs) if m is model)


def render(name: str, **fields) -> str:
    """templates/NAME (the static text of the export, $-placeholders) with `fields` filled in."""
    return Template((TEMPLATES / name).read_text()).substitute(fields)


def plan(model: Model) -> Layout:
    subgraphs = [model] + model.referenced_models
    layout = Layout(subgraphs, [])
    number = {id(m): k for k, m in enumerate(subgraphs)}
    done: set = set()

    def visit(m: Model) -> None:  # post-order: a model after every model it references
        if id(m) in done:
            return
        done.add(id(m))
        for opnd in m.operands:
            if opnd.subgraph is not None:
                visit(opnd.subgraph)
        layout.build_order.append(number[id(m)])
    visit(model)
    for k, m in enumerate(subgraphs):
        for i, opnd in enumerate(m.operands):
            if opnd.is_constant:
                data = np.ascontiguousarray(opnd.value).tobytes()
                if len(data) > MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES:
                    offset = -len(layout.weights) % WEIGHTS_ALIGN + len(layout.weights)
                    layout.weights.extend(b"\0" * (offset - len(layout.weights)))
                    layout.weights.extend(data)
                    layout.offsets[(k, i)] = (offset, len(data))
    return layout


# -- reading a model for the comments -------------------------------------------------

def _argument_names(model: Model, k: int) -> tuple[list, list]:
    """Per position, the op spec's argument name of each input and output of operation k (None if unknown)."""
    op = model.operations[k]
    spec = SPECS.get(op.code)
    view = spec.view(model, k) if spec else None
    if view is None:
        return [None] * len(op.inputs), [None] * len(op.outputs)
    result = []
    for args, mapping, count in ((view.form.inputs, view._in, len(op.inputs)),
                                 (view.form.outputs, view._out, len(op.outputs))):
        labels = []
        for a in args:
            idx = mapping.get(a.name)
            if idx is None:
                continue
            if isinstance(idx, list):
                labels.extend(f"{a.name}[{j}]" for j in range(len(idx)))
            else:
                labels.append(a.name)
        labels += [None] * (count - len(labels))
        result.append(labels[:count])
    return result[0], result[1]


def _uses(model: Model) -> dict:
    """operand index -> [(operation index, argument name)] for every operation input."""
    uses: dict = {}
    for k, op in enumerate(model.operations):
        in_names, _ = _argument_names(model, k)
        for i, n in zip(op.inputs, in_names):
            uses.setdefault(i, []).append((k, n))
    return uses


def _label(model: Model, i: int) -> str:
    name = model.operands[i].name
    return f"#{i}" + (f" {string_literal(name)}" if name else "")


# -- the C source ----------------------------------------------------------------------

class SourceWriter:
    """Writes PREFIX_model.c."""

    def __init__(self, model: Model, prefix: str, layout: Layout):
        self.model, self.prefix, self.layout = model, prefix, layout
        self.lines: list[str] = []

    def emit(self, line: str = "") -> None:
        self.lines.append(line)

    def emit_template(self, name: str, blocks: Optional[dict] = None, **fields) -> None:
        """The lines of templates/NAME with the prefix and `fields` filled in; a line that is only
        ${block} becomes the lines blocks[block] (none when it is empty)."""
        fields.update({b: "${" + b + "}" for b in blocks or {}})  # kept for the line-wise expansion below
        text = render(name, p=self.prefix, P=self.prefix.upper(), **fields)
        for line in text.removesuffix("\n").split("\n"):
            key = line[2:-1] if line.startswith("${") and line.endswith("}") else None
            if blocks and key in blocks:
                self.lines.extend(blocks[key])
            else:
                self.lines.append(line)

    def text(self) -> str:
        p, m = self.prefix, self.model
        n_sub = len(self.layout.subgraphs) - 1
        summary = (f"{len(m.operands)} operands, {len(m.operations)} operations"
                   + (f", {n_sub} referenced subgraph(s)" if n_sub else "")
                   + f"; needs feature level {m.min_feature_level()}.")
        self.emit_template("model_prelude.c.in", title=comment_text(m.name or p), summary=summary)
        for k in range(len(self.layout.subgraphs)):
            self.emit()
            self._subgraph(k)
        self.emit()
        self._create()
        self._io_functions()
        self._state_functions()
        self._compile_and_run()
        return "\n".join(self.lines) + "\n"

    # one build function per subgraph
    def _subgraph(self, k: int) -> None:
        m = self.layout.subgraphs[k]
        title = "the main model" if k == 0 else f"subgraph {k}"
        self.emit(f"/* Builds {title}{' ' + comment_text(string_literal(m.name)) if m.name else ''}: "
                  f"{len(m.operands)} operands, {len(m.operations)} operations. */")
        self.emit(f"static int build_subgraph_{k}(ANeuralNetworksModel* model, const ANeuralNetworksMemory* weights,")
        self.emit("                             ANeuralNetworksModel* const* subgraphs) {")
        self.emit("    (void)weights;")
        self.emit("    (void)subgraphs;")
        uses = _uses(m)
        role = {i: f"model input {j}" for j, i in enumerate(m.inputs)}
        role.update({i: f"model output {j}" for j, i in enumerate(m.outputs)})
        self.emit()
        self.emit("    /* operands */")
        for i, opnd in enumerate(m.operands):
            writer = m.writer_of(i)
            written = f"output of [{writer}] {m.operations[writer].code.name}" if writer is not None else None
            self._operand(m, i, role.get(i) or written or self._use_text(m, uses.get(i)))
        for i, opnd in enumerate(m.operands):
            if opnd.channel_quant is not None:
                self._channel_quant(m, i)
        if any(o.is_constant or o.is_omitted or o.lifetime is Lifetime.SUBGRAPH for o in m.operands):
            self.emit()
            self.emit("    /* operand values */")
        for i, opnd in enumerate(m.operands):
            first = (uses.get(i) or [(None, None)])[0][1]
            if opnd.is_constant:
                self._value(k, m, i, first)
            elif opnd.is_omitted:
                self.emit(f"    CHECK(ANeuralNetworksModel_setOperandValue(model, {i}, NULL, 0)); "
                          f"{comment(_label(m, i) + ': omitted ' + (first or 'optional operand'))}")
            elif opnd.lifetime is Lifetime.SUBGRAPH:
                ref = self.layout.number_of(opnd.subgraph)
                slot = self._slot(ref)
                self.emit(f"    CHECK(ANeuralNetworksModel_setOperandValueFromModel(model, {i}, subgraphs[{slot}])); "
                          f"{comment(_label(m, i) + ': ' + (first or 'subgraph') + ' = subgraph ' + str(ref))}")
        if m.operations:
            self.emit()
            self.emit("    /* operations */")
        for j, op in enumerate(m.operations):
            in_names, out_names = _argument_names(m, j)
            outs = ", ".join(_label(m, o) for o in op.outputs)
            self.emit(f"    {{ {comment(f'[{j}] {op.code.name} -> {outs}')}")
            self.emit(f"        static const uint32_t in[] = {u32_list(op.inputs, in_names)};")
            self.emit(f"        static const uint32_t out[] = {u32_list(op.outputs, out_names)};")
            self.emit(f"        CHECK(ANeuralNetworksModel_addOperation(model, {names.operation_type(op.code)}, "
                      f"{len(op.inputs)}, {'in' if op.inputs else 'NULL'}, {len(op.outputs)}, out));")
            self.emit("    }")
        self.emit()
        self.emit("    { /* model inputs and outputs */")
        if m.inputs:
            self.emit(f"        static const uint32_t in[] = {u32_list(m.inputs)};")
        self.emit(f"        static const uint32_t out[] = {u32_list(m.outputs)};")
        self.emit(f"        CHECK(ANeuralNetworksModel_identifyInputsAndOutputs(model, {len(m.inputs)}, "
                  f"{'in' if m.inputs else 'NULL'}, {len(m.outputs)}, out));")
        self.emit("    }")
        if m.relaxed:
            self.emit("    CHECK(ANeuralNetworksModel_relaxComputationFloat32toFloat16(model, true));")
        self.emit("    return ANeuralNetworksModel_finish(model);")
        self.emit("}")

    def _slot(self, number: int) -> int:
        """Index into PREFIX_Model.subgraphs of subgraph `number` (1-based numbering, slot = number - 1)."""
        return number - 1

    @staticmethod
    def _use_text(m: Model, uses) -> str:
        if not uses:
            return ""
        k, n = uses[0]
        more = f" (+{len(uses) - 1} more uses)" if len(uses) > 1 else ""
        return f"{n or 'input'} of [{k}] {m.operations[k].code.name}{more}"

    def _operand(self, m: Model, i: int, role: str) -> None:
        t = m.operands[i].type
        what = _label(m, i) + (f": {role}" if role else "")
        args = f"{names.operand_type(t.code)}, {len(t.dimensions)}, {{dims}}, "
        args += f"{float_literal(t.scale)}, {t.zero_point}"
        if t.dimensions:
            self.emit(f"    {{ {comment(what)}")
            self.emit(f"        static const uint32_t dims[] = {u32_list(t.dimensions)};")
            self.emit(f"        CHECK(add_operand(model, {args.format(dims='dims')}));")
            self.emit("    }")
        else:
            self.emit(f"    CHECK(add_operand(model, {args.format(dims='NULL')})); {comment(what)}")

    def _channel_quant(self, m: Model, i: int) -> None:
        cq = m.operands[i].channel_quant
        self.emit(f"    {{ {comment(_label(m, i) + ': per-channel scales')}")
        self.emit("        static const float scales[] = {")
        for line in wrap_items([float_literal(s) for s in cq.scales], " " * 12):
            self.emit(line)
        self.emit("        };")
        self.emit("        ANeuralNetworksSymmPerChannelQuantParams q;")
        self.emit("        memset(&q, 0, sizeof q);")
        self.emit(f"        q.channelDim = {cq.channel_dim};")
        self.emit(f"        q.scaleCount = {len(cq.scales)};")
        self.emit("        q.scales = scales;")
        self.emit(f"        CHECK(ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(model, {i}, &q));")
        self.emit("    }")

    def _value(self, k: int, m: Model, i: int, arg_name: Optional[str]) -> None:
        opnd = m.operands[i]
        what = _label(m, i) + (f": {arg_name}" if arg_name else "")
        if (k, i) in self.layout.offsets:
            offset, length = self.layout.offsets[(k, i)]
            self.emit(f"    CHECK(ANeuralNetworksModel_setOperandValueFromMemory(model, {i}, weights, "
                      f"/* offset */ {offset}, /* length */ {length})); {comment(what)}")
            return
        raw = np.ascontiguousarray(opnd.value).tobytes()
        ctype, items = c_array(opnd.type, raw)
        if not opnd.type.is_tensor and len(items) == 1:
            v = opnd.value.item()
            enum = names.scalar_param(arg_name, opnd.type.code, v)
            layout = names.layout_comment(arg_name, opnd.type.code, v)
            lit = enum or items[0]
            if layout:
                lit += " " + comment(layout)
            prefix = f"{comment(arg_name)} " if arg_name else ""
            self.emit(f"    {{ static const {ctype} v = {prefix}{lit}; {comment(_label(m, i))}")
            self.emit(f"      CHECK(ANeuralNetworksModel_setOperandValue(model, {i}, &v, sizeof v)); }}")
            return
        self.emit(f"    {{ {comment(what)}")
        self.emit(f"        static const {ctype} v[] = {{")
        for line in wrap_items(items, " " * 12):
            self.emit(line)
        self.emit("        };")
        self.emit(f"        CHECK(ANeuralNetworksModel_setOperandValue(model, {i}, v, sizeof v));")
        self.emit("    }")

    # creating, freeing
    def _create(self) -> None:
        order = self.layout.build_order
        creates = ["    /* referenced subgraphs first: a model may only reference finished models */"] \
            if len(order) > 1 else []
        for k in order:
            if k:
                creates += [f"    CHECK(ANeuralNetworksModel_create(&m->subgraphs[{self._slot(k)}]));",
                            f"    CHECK(build_subgraph_{k}(m->subgraphs[{self._slot(k)}], m->weights, m->subgraphs));"]
        frees = [f"    ANeuralNetworksModel_free(m->subgraphs[{self._slot(k)}]);" for k in reversed(order) if k]
        self.emit_template("model_create.c.in", blocks={"subgraph_creates": creates, "subgraph_frees": frees})

    def _io_functions(self) -> None:
        p, m = self.prefix, self.model
        for kind, idxs in (("input", m.inputs), ("output", m.outputs)):
            self.emit()
            self.emit(f"size_t {p}_{kind}_bytes(uint32_t index) {{")
            self.emit("    switch (index) {")
            for j, i in enumerate(idxs):
                size = m.operands[i].type.byte_size() or 0
                self.emit(f"    case {j}: return {size}; {comment(_label(m, i) + ' ' + m.operands[i].type.describe())}")
            self.emit("    default: return 0;")
            self.emit("    }")
            self.emit("}")
            self.emit()
            self.emit(f"const char* {p}_{kind}_name(uint32_t index) {{")
            self.emit("    switch (index) {")
            for j, i in enumerate(idxs):
                self.emit(f"    case {j}: return {string_literal(m.operands[i].name or f'{kind}{j}')};")
            self.emit("    default: return NULL;")
            self.emit("    }")
            self.emit("}")

    def _state_functions(self) -> None:
        """The state pairs (nnapi/state.py): input/output indexes, names and initial values."""
        p, m = self.prefix, self.model
        for k, v in enumerate(m.state):
            ctype, items = c_array(m.operands[m.inputs[v.input]].type, np.ascontiguousarray(v.initial).tobytes())
            self.emit()
            self.emit(f"static const {ctype} state_initial_{k}[] = {{ {comment(v.variable)}")
            for line in wrap_items(items, " " * 4):
                self.emit(line)
            self.emit("};")
        for fn, ret, default, value in (
                ("state_input", "uint32_t", "UINT32_MAX", lambda k, v: f"{v.input}u"),
                ("state_output", "uint32_t", "UINT32_MAX", lambda k, v: f"{v.output}u"),
                ("state_initial", "const void*", "NULL", lambda k, v: f"state_initial_{k}"),
                ("state_name", "const char*", "NULL", lambda k, v: string_literal(v.variable))):
            self.emit()
            self.emit(f"{ret} {p}_{fn}(uint32_t state) {{")
            if m.state:
                self.emit("    switch (state) {")
                for k, v in enumerate(m.state):
                    self.emit(f"    case {k}: return {value(k, v)};")
                self.emit(f"    default: return {default};")
                self.emit("    }")
            else:
                self.emit("    (void)state;")
                self.emit(f"    return {default};")
            self.emit("}")

    def _compile_and_run(self) -> None:
        self.emit()
        self.emit_template("model_compile_run.c.in", run_indent=" " * (len(self.prefix) + 9))


def header_text(model: Model, prefix: str, layout: Layout) -> str:
    p, P = prefix, prefix.upper()
    level = model.min_feature_level()
    n_sub = len(layout.subgraphs) - 1
    io = []
    for kind, idxs in (("Inputs", model.inputs), ("Outputs", model.outputs)):
        io.append(f" * {kind} (index: name, type, bytes):")
        for j, i in enumerate(idxs):
            t = model.operands[i].type
            io.append(f" *   {j}: {comment_text(string_literal(model.operands[i].name or ''))}, "
                      f"{comment_text(t.describe())}, {t.byte_size() or 'set at run time'}")
    if model.state:
        io.append(" *")
        io.append(" * State carried between runs (NNAPI has no variables; index: variable, output -> input):")
        io.extend(f" *   {k}: {comment_text(string_literal(v.variable))}, output {v.output} -> input {v.input}"
                  for k, v in enumerate(model.state))
        io.append(f" * Before the first {p}_run, fill input {p}_state_input(s) with the "
                  f"{p}_input_bytes({p}_state_input(s))")
        io.append(f" * bytes at {p}_state_initial(s); after each run, copy output {p}_state_output(s) into "
                  f"it for the next.")
    io_text = "\n".join(io)
    macro_rows = [
        ("FEATURE_LEVEL", str(level), "NNAPI feature level the model needs"),
        ("MIN_ANDROID_API", str(min(names.android_api_level(level), 31)), "minimum Android API level"),
        ("INPUT_COUNT", f"{len(model.inputs)}u", "model inputs"),
        ("OUTPUT_COUNT", f"{len(model.outputs)}u", "model outputs"),
        ("SUBGRAPH_COUNT", f"{n_sub}u", "referenced models (IF/WHILE bodies)"),
        ("STATE_COUNT", f"{len(model.state)}u", "state variables (input/output pairs carried between runs)"),
        ("WEIGHTS_SIZE", f"{len(layout.weights)}u", f"exact size of {p}_weights.bin in bytes"),
    ]
    width = max(len(f"#define {P}_{n} {v}") for n, v, _ in macro_rows) + 1
    macros = "\n".join(f"#define {P}_{n} {v}".ljust(width) + f"/* {c} */" for n, v, c in macro_rows)
    return render("model.h.in", p=p, P=P, title=comment_text(model.name or p), level=level,
                  release=comment_text(names.min_android_release(level)), io_text=io_text, macros=macros,
                  subgraph_slots=max(n_sub, 1))


def readme_text(model: Model, prefix: str, layout: Layout) -> str:
    p = prefix
    level = model.min_feature_level()
    api = min(names.android_api_level(level), 31)
    return render("README.md.in", p=p, operands=len(model.operands), operations=len(model.operations),
                  subgraphs=len(layout.subgraphs) - 1, weights_bytes=len(layout.weights), level=level,
                  release=names.min_android_release(level), api=api)
