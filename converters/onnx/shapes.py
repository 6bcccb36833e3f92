"""The ONNX shape pass, run once on the protobuf before the graph is read.

1. Pins: `input_shapes` ({input name: dims}) replace a graph input's shape;
   `dims` ({dim_param: N}) set that named dimension everywhere it appears
   (graph inputs, outputs and value_info).
2. Inference, on the model's weightless skeleton (skeleton.py: large values
   taken out, types and dims kept): onnx's `infer_shapes(data_prop=True)`
   first (always installed). When its rounds leave extents unknown and
   onnxruntime is installed, the rounds run again with onnxruntime's
   SymbolicShapeInference too: it evaluates shape-computing subgraphs
   (Shape -> Gather -> Concat -> Reshape, Range, Expand, Where, arithmetic on
   shape values) symbolically, which onnx's data propagation does only for
   some ops, and knows the com.microsoft ops. The result with fewer unknown
   extents wins. The subgraphs themselves are then folded into constants by
   converters/folding.py (ops/folded.py), with the static shapes this pass
   gives.
3. Symbols: unknown extents keep their dim_param (a model's own name such as
   "batch", or an expression of them from SymbolicShapeInference such as
   "floor(H/4)"), so coverage can say which pins would make a tensor static.
"""
from __future__ import annotations

import contextlib
import contextvars
import importlib
import logging
from pathlib import Path
from typing import Optional

import numpy as np
import onnx
import onnx.numpy_helper

from ..pins import UNNAMED
from ..source_graph import SourceError
from . import ms_shapes


def pin(proto: onnx.ModelProto, input_shapes: Optional[dict], dims: Optional[dict]) -> None:
    """Apply the user's pins to proto (in place), after checking them against the declared shapes (check_pins)."""
    graph = proto.graph
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        for d in vi.type.tensor_type.shape.dim if vi.type.HasField("tensor_type") else ():
            if d.HasField("dim_value") and d.dim_value < 0:  # exporters write -1 for "unknown"
                d.dim_param = ""
    check_pins(proto, input_shapes or {}, dims or {})
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        if not vi.type.HasField("tensor_type"):
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param in (dims or {}):
                d.dim_value = int(dims[d.dim_param])  # clears dim_param (a oneof)
    for name, want in (input_shapes or {}).items():
        have = next(v for v in graph.input if v.name == name).type.tensor_type.shape.dim
        del have[:]
        for d in want:
            have.add().dim_value = int(d)


def declared_inputs(proto: onnx.ModelProto) -> dict:
    """{input name: [extent (int), name (str) or None (unknown), ...] or None (unknown rank)} of the model
    inputs that are not initializers."""
    constants = {t.name for t in proto.graph.initializer}
    found = {}
    for vi in proto.graph.input:
        if vi.name in constants or not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        found[vi.name] = [d.dim_value if d.HasField("dim_value") else (
            None if d.dim_param in ("", "?") else d.dim_param)  # "?" (Paddle) names no particular extent
            for d in tt.shape.dim] if tt.HasField("shape") else None
    return found


def check_pins(proto: onnx.ModelProto, input_shapes: dict, dims: dict) -> None:
    """SourceError, before any work, for a pin the model contradicts or that names nothing: an unknown input
    or dimension name, a rank other than the declared one, a static extent pinned to another value, a --dim
    that an --input-shape of the same dimension overrides, one name pinned to two values."""
    declared = declared_inputs(proto)
    named = {d.dim_param for vi in list(proto.graph.input) + list(proto.graph.output) + list(proto.graph.value_info)
             if vi.type.HasField("tensor_type") for d in vi.type.tensor_type.shape.dim if d.HasField("dim_param")}
    for symbol in dims:
        if symbol not in named:
            raise SourceError(f"--dim {symbol}={dims[symbol]}: the model has no dimension named {symbol!r} (named "
                              f"dimensions: {', '.join(map(repr, sorted(named))) or 'none'})")
    given: dict = {}   # dimension name -> (value, where it was pinned)
    for symbol, value in dims.items():
        given[symbol] = (int(value), f"--dim {symbol}={value}")
    for name, want in input_shapes.items():
        pin_text = f"--input-shape {name}={','.join(map(str, want))}"
        if name not in declared:
            raise SourceError(f"{pin_text}: the model has no input named {name!r} (inputs: "
                              f"{', '.join(map(repr, declared)) or 'none'})")
        have = declared[name]
        if have is None:
            continue
        shown = "[" + ", ".join("?" if d is None else str(d) for d in have) + "]"
        if have and len(have) != len(want):
            raise SourceError(f"{pin_text}: input {name!r} has rank {len(have)} ({shown}), the pin gives "
                              f"{len(want)} dimensions")
        for axis, (d, w) in enumerate(zip(have, want)):
            if isinstance(d, int) and d > 0 and d != w:
                raise SourceError(f"{pin_text} contradicts the model: dimension {axis} of input {name!r} is {d} "
                                  f"({shown}), the pin gives {w}")
            if isinstance(d, str):
                value, where = given.setdefault(d, (int(w), pin_text))
                if value != w:
                    raise SourceError(f"{pin_text} gives dimension {d!r} (axis {axis} of input {name!r}) the "
                                      f"value {w}, {where} gives it {value}")



def name_input_dims(proto: onnx.ModelProto) -> dict:
    """Give every unknown, unnamed input extent a name (so inference can carry it) and return
    {dim_param: [(input name, axis), ...]} for every named input extent left dynamic."""
    where: dict = {}
    constants = {t.name for t in proto.graph.initializer}
    for vi in proto.graph.input:
        if not vi.type.HasField("tensor_type") or vi.name in constants:
            continue
        for axis, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value >= 0:
                continue
            if not d.dim_param or d.dim_param == "?":  # "?" (Paddle) names no particular extent
                d.dim_param = f"{UNNAMED}{len(where)}"
            where.setdefault(d.dim_param, []).append((vi.name, axis))
    return where


def unknown_extents(proto: onnx.ModelProto) -> tuple:
    """How much of the node outputs' shapes is unknown, to compare inference results: (outputs with a
    non-static extent, outputs of unknown rank, extents whose name ties them to nothing ('unk__3'))."""
    typed = {vi.name: vi.type.tensor_type for vi in list(proto.graph.value_info) + list(proto.graph.output)
             if vi.type.HasField("tensor_type")}
    dynamic = unranked = untied = 0
    for n in proto.graph.node:
        for o in n.output:
            tt = typed.get(o)
            if not o:
                continue
            if tt is None or not tt.HasField("shape"):
                dynamic, unranked = dynamic + 1, unranked + 1
                continue
            dims = [d for d in tt.shape.dim if not d.HasField("dim_value")]
            dynamic += bool(dims)
            untied += sum(not d.dim_param or d.dim_param.startswith("unk__") for d in dims)
    return dynamic, unranked, untied


def _onnx_inference(proto: onnx.ModelProto) -> onnx.ModelProto:
    try:
        return onnx.shape_inference.infer_shapes(proto, data_prop=True)
    except Exception:  # noqa: BLE001 (inference is best effort: the declared shapes still count)
        return proto


def _symbolic_inference(proto: onnx.ModelProto) -> Optional[onnx.ModelProto]:
    """onnxruntime's SymbolicShapeInference, or None (not installed, or it cannot run the model).

    Its infer_shapes() entry point writes sym_shape_infer_temp.onnx into the working directory when some
    shape stays unknown; a converter must not, so the same steps are taken here and a partial result is
    kept instead."""
    module = _symbolic_module()
    if module is None:
        return None
    SymbolicShapeInference = module.SymbolicShapeInference  # noqa: N806
    log = logging.getLogger(module.__name__)
    level = log.level
    log.setLevel(logging.CRITICAL)  # it warns for every op it cannot infer; the count below tells
    try:
        with _weightless(SymbolicShapeInference):
            ssi = SymbolicShapeInference(int_max=2 ** 31 - 1, auto_merge=True, guess_output_rank=False, verbose=0)
            ssi._preprocess(proto)
            while ssi.run_:
                ssi._infer_impl()
            ssi._update_output_from_vi()
        _forget_merged_ranks(ssi.out_mp_.graph)
        return ssi.out_mp_
    except Exception:  # noqa: BLE001 (it raises many types on models it does not understand)
        return None
    finally:
        log.setLevel(level)


SYMBOLIC = "onnxruntime.tools.symbolic_shape_infer"


def _symbolic_module():
    """onnxruntime's symbolic_shape_infer module, or None. It is pure Python (onnx, numpy, sympy); importing it
    as onnxruntime.tools.* would load onnxruntime's native library too (about 20 MB of a convert's peak memory
    for nothing), so unless onnxruntime is loaded already, the file is loaded on its own."""
    import importlib.util
    import sys
    if "onnxruntime" in sys.modules or SYMBOLIC in sys.modules:
        try:
            return importlib.import_module(SYMBOLIC)
        except Exception:  # noqa: BLE001 (onnxruntime is optional)
            return None
    name = "converters.onnx._symbolic_shape_infer"
    if name in sys.modules:
        return sys.modules[name]
    try:
        package = importlib.util.find_spec("onnxruntime")   # (finds the package without importing it)
        path = Path(package.submodule_search_locations[0]) / "tools" / "symbolic_shape_infer.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception:  # noqa: BLE001 (onnxruntime, or sympy, is not installed)
        return None
    sys.modules[name] = module
    return module


@contextlib.contextmanager
def _weightless(cls):
    """SymbolicShapeInference (cls) on a weightless skeleton (skeleton.py): a stripped Constant or initializer is
    a tensor of known type and dims whose value is unknown, as for any value it does not track, instead of a
    failed decode. The class is patched for the duration, since it makes a new instance per If/Loop body."""
    from . import skeleton
    constant, preprocess = cls._infer_Constant, cls._preprocess

    def infer_constant(self, node):
        value = next((a.t for a in node.attribute if a.name == "value" and a.type == onnx.AttributeProto.TENSOR), None)
        if value is None or skeleton.key_of(value) is None:
            constant(self, node)

    def preprocess_(self, in_mp):
        preprocess(self, in_mp)
        for name in [n for n, t in self.initializers_.items() if skeleton.key_of(t) is not None]:
            del self.initializers_[name]   # its type and dims stay in known_vi_

    cls._infer_Constant, cls._preprocess = infer_constant, preprocess_
    try:
        yield
    finally:
        cls._infer_Constant, cls._preprocess = constant, preprocess


def _forget_merged_ranks(graph: onnx.GraphProto) -> None:
    """SymbolicShapeInference gives an If output the then branch's rank even where the else branch's
    differs (it merges extents pairwise): such outputs, those with a branch of unknown rank, and what was
    inferred from them, are left with an unknown rank, as onnx's own inference leaves them."""
    def rank(vi):
        tt = vi.type.tensor_type
        return len(tt.shape.dim) if vi.type.HasField("tensor_type") and tt.HasField("shape") else None

    unsure = set()
    for n in graph.node:
        bodies = {a.name: a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH}
        for g in bodies.values():
            _forget_merged_ranks(g)
        if n.op_type == "If" and {"then_branch", "else_branch"} <= set(bodies):
            for o, t, e in zip(n.output, bodies["then_branch"].output, bodies["else_branch"].output):
                if rank(t) is None or rank(t) != rank(e):
                    unsure.add(o)
    for n in graph.node:  # (topological order) what was inferred from them is as unsure
        if unsure.intersection(n.input):
            unsure.update(o for o in n.output if o)
    for vi in list(graph.value_info) + list(graph.output):
        if vi.name in unsure and vi.type.HasField("tensor_type"):
            vi.type.tensor_type.ClearField("shape")


def infer(proto: onnx.ModelProto, rounds: int = 8) -> onnx.ModelProto:
    """proto with every shape the pinned inputs and the static dimensions determine (see module doc).

    Each round infers shapes on a scratch copy, then evaluates the nodes that became computable (Shape of a
    static tensor, small nodes of constants) and makes their outputs initializers of the copy, so the next
    round sees them as constants; the value_info of the last round is given to proto (whose nodes stay:
    converters/folding.py folds them into the converted model's constants)."""
    scratch = onnx.ModelProto()
    scratch.CopyFrom(proto)
    declared = {vi.name: vi.type for vi in proto.graph.output}
    for vi in scratch.graph.output:  # what the nodes compute is inferred, not taken from the declaration
        if vi.type.HasField("tensor_type"):
            vi.type.tensor_type.ClearField("shape")
    inferred, work, _ = _rounds(scratch, rounds)
    if work is scratch:  # nothing computed: the one inference is the result (its pass typed the bodies)
        for vi in inferred.graph.output:
            if vi.name in declared:
                vi.type.CopyFrom(_merged(declared[vi.name], vi.type))
        return inferred
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    del out.graph.value_info[:]
    have = {vi.name for vi in list(out.graph.input) + list(out.graph.output)}
    outputs = {vi.name: vi for vi in out.graph.output}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        if vi.name in outputs:
            outputs[vi.name].type.CopyFrom(_merged(declared[vi.name], vi.type))
        elif vi.name not in have:
            out.graph.value_info.append(vi)
    return _onnx_inference(out)  # onnx's pass types the If/Loop bodies


def _merged(declared: onnx.TypeProto, inferred: onnx.TypeProto) -> onnx.TypeProto:
    """A graph output's type. A declared rank other than the one its nodes compute is wrong (ddddocr's
    common_old declares [1, seqlen] for a [16, 1, 8210] Reshape; onnxruntime returns the computed shape
    and warns): the inferred shape then. Of the same rank, each declared static extent stands (inference
    can be the one that is wrong: onnx's Einsum does not broadcast a letter of extent 1), the others are
    the inferred ones where inference knows them."""
    if not inferred.HasField("tensor_type") or not inferred.tensor_type.HasField("shape"):
        return declared
    if not declared.HasField("tensor_type") or not declared.tensor_type.HasField("shape") or \
            len(declared.tensor_type.shape.dim) != len(inferred.tensor_type.shape.dim):
        return inferred
    out = onnx.TypeProto()
    out.CopyFrom(inferred)
    for d, have in zip(out.tensor_type.shape.dim, declared.tensor_type.shape.dim):
        if have.HasField("dim_value") or not d.HasField("dim_value"):
            d.CopyFrom(have)
    if not out.tensor_type.elem_type:
        out.tensor_type.elem_type = declared.tensor_type.elem_type
    return out


def _rounds(proto: onnx.ModelProto, rounds: int = 8) -> tuple:
    """(the last round's inferred scratch model, its constant-folded copy, {tensor name: value} of every
    node output computed on the way) for infer() and known_values().

    The rounds run with onnx's inference alone first: when they leave no extent unknown, that is the answer
    (SymbolicShapeInference is tried only where onnx's leaves an extent unknown, and a fully static result is
    the same shapes whichever pass found them), and sympy (about 35 MB) is never loaded. Otherwise they run
    again with both, each round taking the better result."""
    found = _rounds_with(proto, rounds, symbolic=False)
    return found if not any(unknown_extents(found[0])) else _rounds_with(proto, rounds, symbolic=True)


def _rounds_with(proto: onnx.ModelProto, rounds: int, symbolic: bool) -> tuple:
    work, known = proto, {}
    for _ in range(rounds):
        inferred = _best_inference(work, symbolic)
        values = _computable(inferred)
        if not values:
            break
        known.update(values)
        work = _with_constants(inferred, values)
    else:
        inferred = _best_inference(work, symbolic)  # the last round's constants reach the shapes too
    return inferred, work, known


def known_values(proto: onnx.ModelProto, rounds: int = 8) -> tuple:
    """(proto's inferred scratch copy, {tensor name: value}) for every tensor whose value the pinned input
    shapes and the constants determine: initializers and Constant nodes of at most FOLD_LIMIT elements, and
    the shape computations evaluated on them (e.g. an If condition Shape -> Gather -> Equal)."""
    inferred, _, known = _rounds(proto, rounds)
    for t in proto.graph.initializer:
        if t.name not in known and t.data_location != onnx.TensorProto.EXTERNAL and int(np.prod(t.dims)) <= FOLD_LIMIT:
            try:
                known[t.name] = onnx.numpy_helper.to_array(t)
            except Exception:  # noqa: BLE001 (malformed: the reader names it)
                pass
    return inferred, known


# False inside onnx_inference_only(): the rounds run with onnx's inference alone
_SYMBOLIC = contextvars.ContextVar("symbolic_shape_inference", default=True)


@contextlib.contextmanager
def onnx_inference_only():
    """Shape passes inside skip onnxruntime's SymbolicShapeInference: about a second where, on a model with
    unpinned dimensions, its sympy simplification can take minutes (converters/quick_refusal.py)."""
    token = _SYMBOLIC.set(False)
    try:
        yield
    finally:
        _SYMBOLIC.reset(token)


def _best_inference(proto: onnx.ModelProto, symbolic: bool = True) -> onnx.ModelProto:
    # the com.microsoft quantized ops' shapes too: the shape computations behind them (Shape -> Gather ->
    # Concat -> Reshape after a DynamicQuantizeLSTM) are evaluated in the next round only if they are known
    best = ms_shapes.complete(_onnx_inference(proto))
    missing = unknown_extents(best)
    if symbolic and _SYMBOLIC.get() and any(missing):
        symbolic = _symbolic_inference(proto)
        if symbolic is not None and unknown_extents(symbolic) < missing:
            best = symbolic
    return best


FOLD_LIMIT = 1024  # elements: shape values are small; larger constant subgraphs are left to folding.py
NOT_FOLDED = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}


def _computable(proto: onnx.ModelProto) -> dict:
    """{output name: value} for the nodes whose outputs are known from the inferred shapes and constants."""
    consts = {}
    for t in proto.graph.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL and int(np.prod(t.dims)) <= FOLD_LIMIT:
            try:
                consts[t.name] = onnx.numpy_helper.to_array(t)
            except Exception:  # noqa: BLE001 (malformed: the reader names it)
                pass
    static = {}
    for vi in list(proto.graph.input) + list(proto.graph.value_info) + list(proto.graph.output):
        tt = vi.type.tensor_type
        if vi.type.HasField("tensor_type") and tt.HasField("shape") and all(d.HasField("dim_value")
                                                                           for d in tt.shape.dim):
            static[vi.name] = tuple(d.dim_value for d in tt.shape.dim)
    opsets = {o.domain or "": o.version for o in proto.opset_import}
    found: dict = {}
    for n in proto.graph.node:
        if (n.domain or "") not in ("", "ai.onnx") or n.op_type in NOT_FOLDED or any(
                a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in n.attribute):
            continue
        try:
            if n.op_type in ("Shape", "Size") and n.input[0] in static:
                shape = static[n.input[0]]
                if n.op_type == "Size":
                    values = [np.asarray(int(np.prod(shape)), np.int64)]
                else:
                    a = {x.name: x.i for x in n.attribute}
                    values = [np.asarray(shape[a.get("start", 0):a.get("end", len(shape))], np.int64)]
            elif all(not x or x in consts for x in n.input):  # Constant nodes too (no inputs)
                feeds = {x: consts[x] for x in n.input if x}
                if any(v.size > FOLD_LIMIT for v in feeds.values()):
                    continue
                values = evaluate(n, feeds, opsets.get("", 1))
            else:
                continue
        except Exception:  # noqa: BLE001 (a node the reference cannot evaluate stays for inference)
            continue
        if any(v.size > FOLD_LIMIT for v in values):
            continue
        for name, v in zip([o for o in n.output if o], values):
            consts[name] = found[name] = v
    return found


def _with_constants(proto: onnx.ModelProto, values: dict) -> onnx.ModelProto:
    """A copy of proto where the nodes producing `values` are gone and the values are initializers."""
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    outputs = {vi.name for vi in out.graph.output}  # a graph output stays produced by its node
    keep = [n for n in out.graph.node if not any(o in values for o in n.output) or any(o in outputs for o in n.output)]
    del out.graph.node[:]
    out.graph.node.extend(keep)
    for name, v in values.items():
        if name not in outputs:
            out.graph.initializer.append(onnx.numpy_helper.from_array(np.asarray(v), name))
    # the next round infers afresh from the new constants: a shape guessed while they were unknown (e.g.
    # onnxruntime's symbolic pass on a ReduceMean whose axes were still computed) must not survive it
    del out.graph.value_info[:]
    return out


def evaluate(node: onnx.NodeProto, feeds: dict, opset: int) -> list:
    """The outputs of one node on constant inputs (numpy arrays by input name), from onnx.reference."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for k, v in feeds.items()]
    outputs = [helper.make_tensor_value_info(o, 0, None) for o in node.output if o]
    graph = helper.make_graph([node], "evaluate", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(node.domain or "", opset)])
    return [np.asarray(v) for v in ReferenceEvaluator(model).run(None, feeds)]
