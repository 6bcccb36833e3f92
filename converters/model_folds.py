"""Exact rewrites of a converted NNAPI model before it is finished, shared by every importer: fewer
operations to run on a device and in the executor, the same outputs.

* PAD (or PAD_V2 padding with the logical zero: 0.0, or the zero point of a quantized input) whose
  only reader is a CONV_2D or DEPTHWISE_CONV_2D, padding only the image's height and width: the
  convolution takes the padding as its own explicit padding (the two paddings added) and reads the
  PAD's input. A convolution pads with the same value (zero, or the input's zero point), so every
  tap sees what it saw before. MediaPipe's TFLite models (PAD + DEPTHWISE_CONV_2D VALID) and ONNX
  exports (Pad + Conv) have this pattern. Also through a TRANSPOSE: a PAD whose only reader is a
  TRANSPOSE read only by such convolutions (ONNX: a Pad of the NCHW graph input, then the layout
  change to NHWC) -- the TRANSPOSE moves the unpadded tensor and the convolutions take the padding
  with its axes permuted.
* RESHAPE whose only reader is a FULLY_CONNECTED (as its input): the FULLY_CONNECTED reads the
  RESHAPE's input instead. It flattens its input to rows of input_size in row-major order whatever
  its shape, as a reshape keeps that order: the same rows, the same [batch, units] output (ONNX
  Flatten / Reshape + Gemm, TFLite RESHAPE + FULLY_CONNECTED).
* RESHAPE whose every reader is a RESHAPE (as its input): they read the first one's input instead (a
  reshape of a reshape is the reshape of the original: the elements keep their row-major order); and a
  RESHAPE to a constant shape equal to its input's fully known dimensions: its readers read its input.
  ONNX exports have both (attention's head split: Reshape, Reshape; Gather, Reshape, Unsqueeze).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nnapi import OperandType
from nnapi.codes import OperandCode as C
from nnapi.codes import OperationCode as Op
from nnapi.model import Operation
from nnapi.ops import spec_for
from nnapi.ops.geometry import implicit_padding

_CONVS = (Op.CONV_2D, Op.DEPTHWISE_CONV_2D)
_QUANT = (C.TENSOR_QUANT8_ASYMM, C.TENSOR_QUANT8_ASYMM_SIGNED)


@dataclass(frozen=True)
class Fold:
    """Operation `removed` (index before the rewrite) now happens inside operation `into`."""

    removed: int
    into: int
    what: str      # how, e.g. "as its explicit padding"
    how: str = ""  # coverage's short form, e.g. "pad folded into convolution"


def _view(model, k):
    return spec_for(model.operations[k].code).view(model, k)


def _const(model, i):
    op = model.operands[i]
    return op.value if op.is_constant else None


def _pads_zero_valued(model, k) -> bool:
    """PAD pads with the logical zero; PAD_V2 when its value is that zero."""
    op = model.operations[k]
    if op.code == Op.PAD:
        return True
    value = _const(model, op.inputs[2]) if len(op.inputs) > 2 else None
    if value is None:
        return False
    t = model.operands[op.inputs[0]].type
    zero = t.zero_point if t.code in _QUANT else 0
    return float(np.asarray(value).reshape(())) == zero


def _pad_amounts(model, k):
    """The constant [rank, 2] padding of PAD/PAD_V2 k, non-negative, else None."""
    pads = _const(model, model.operations[k].inputs[1])
    if pads is None or np.asarray(pads).ndim != 2 or np.asarray(pads).shape[1] != 2:
        return None
    pads = np.asarray(pads).astype(np.int64)
    return None if np.any(pads < 0) else pads


def _image_pads(pads, nchw: bool):
    """(top, bottom, left, right) of a [4, 2] padding of only height and width, else None."""
    if pads is None or pads.shape != (4, 2):
        return None
    h, w = (2, 3) if nchw else (1, 2)
    others = [a for a in range(4) if a not in (h, w)]
    if np.any(pads[others] != 0):
        return None
    return int(pads[h, 0]), int(pads[h, 1]), int(pads[w, 0]), int(pads[w, 1])


def _conv_pads(view, padded_hw, kernel_hw):
    """The convolution's own (top, bottom, left, right) on its (padded) input, or None when unknown."""
    if view.form.name == "explicit":
        return tuple(view.const(n) for n in ("pad_top", "pad_bottom", "pad_left", "pad_right"))
    if view.const("padding") is None or 0 in padded_hw or 0 in kernel_hw:
        return None
    dil = (view.const("dilation_h") if view.has("dilation_h") else 1,
           view.const("dilation_w") if view.has("dilation_w") else 1)
    try:
        top, bottom, _ = implicit_padding(padded_hw[0], view.const("stride_h"), kernel_hw[0], view.const("padding"), dil[0])
        left, right, _ = implicit_padding(padded_hw[1], view.const("stride_w"), kernel_hw[1], view.const("padding"), dil[1])
    except (ValueError, TypeError):
        return None
    return top, bottom, left, right


def _valid(model, k: int, op: Operation) -> bool:
    """Whether `op` in place of operation k passes its spec (ranks, shapes): asked, not assumed."""
    saved = model.operations[k]
    model.operations[k] = op
    try:
        return not spec_for(op.code).problems(model, k)
    finally:
        model.operations[k] = saved


def _readers(model) -> dict:
    readers: dict = {}
    for k, op in enumerate(model.operations):
        for i in op.inputs:
            readers.setdefault(i, []).append(k)
    return readers


def _absorbed(model, c: int, padded_operand: int, source: int, pads):
    """Operation c (a convolution whose input is `padded_operand`, the operand `source` padded by
    `pads` [4, 2]) reading `source` with the padding its own, or None when it cannot take it exactly."""
    conv = model.operations[c]
    view = _view(model, c)
    if view is None or view._in.get("input") != padded_operand or list(conv.inputs).count(padded_operand) != 1:
        return None
    layout = view.const("layout") if view.has("layout") else False
    flt = model.operands[view._in["filter"]].type.dimensions
    padded = model.operands[padded_operand].type.dimensions
    if layout is None or not flt or len(flt) != 4 or not padded or len(padded) != 4:
        return None
    extra = _image_pads(pads, bool(layout))
    own = _conv_pads(view, (padded[2], padded[3]) if layout else (padded[1], padded[2]), (flt[1], flt[2]))
    if extra is None or own is None or any(p is None or p < 0 for p in own):
        return None
    spec = spec_for(conv.code)
    named = {a.name: view._in.get(a.name) for a in spec.forms[1].inputs if a.name != "padding"}
    named["input"] = source
    for name, mine, theirs in zip(("pad_top", "pad_bottom", "pad_left", "pad_right"), own, extra):
        named[name] = _int32(model, mine + theirs)
    rewritten = Operation(conv.code, spec.arrange("explicit", **named), conv.outputs)
    return rewritten if _valid(model, c, rewritten) else None


def _through_transpose(model, k: int, t: int, keep: set, readers: dict):
    """PAD k's only reader, TRANSPOSE t, moved before the padding: {t: the TRANSPOSE of PAD k's input
    into a new operand, each convolution reading t: it reading that operand with the permuted padding},
    or None when the convolutions cannot all take it."""
    pad, tr = model.operations[k], model.operations[t]
    perm = _const(model, tr.inputs[1]) if len(tr.inputs) > 1 else None
    pads = _pad_amounts(model, k)
    dims = model.operands[pad.inputs[0]].type.dimensions
    users = sorted(set(readers.get(tr.outputs[0], [])))
    if perm is None or pads is None or tr.outputs[0] in keep or tr.inputs[0] != pad.outputs[0] or not dims \
            or len(dims) != 4 or not users or any(model.operations[c].code not in _CONVS for c in users):
        return None
    perm = [int(p) for p in np.asarray(perm).reshape(-1)]
    if sorted(perm) != [0, 1, 2, 3]:
        return None
    moved = model.add_operand(model.operands[tr.outputs[0]].type.with_dimensions([dims[p] for p in perm]))
    transpose = Operation(Op.TRANSPOSE, (pad.inputs[0], *tr.inputs[1:]), (moved,))
    if not _valid(model, t, transpose):
        return None
    rewritten = {c: _absorbed(model, c, tr.outputs[0], moved, pads[perm]) for c in users}
    if any(r is None for r in rewritten.values()):
        return None   # (the operand and scalars made stay unused: harmless)
    return {t: transpose, **rewritten}


def fold_pads_into_convolutions(model, keep: set) -> list[Fold]:
    """Rewrite `model` (not finished) in place; `keep`: operands that must stay written (the model's
    outputs). A PAD goes when every reader takes its padding. Returns the folds made, by the
    operation indexes before the rewrite."""
    readers = _readers(model)
    folds, replaced, removed = [], {}, set()
    for k, op in enumerate(model.operations):
        if op.code not in (Op.PAD, Op.PAD_V2) or op.outputs[0] in keep or not _pads_zero_valued(model, k):
            continue
        users = sorted(set(readers.get(op.outputs[0], [])))
        if len(users) == 1 and model.operations[users[0]].code == Op.TRANSPOSE and users[0] not in replaced:
            rewritten = _through_transpose(model, k, users[0], keep, readers)
            if rewritten is None:
                continue
            what = "as its explicit padding (moved past the TRANSPOSE)"
        else:
            if not users or any(model.operations[c].code not in _CONVS for c in users):
                continue
            rewritten = {c: _absorbed(model, c, op.outputs[0], op.inputs[0], _pad_amounts(model, k)) for c in users}
            if any(r is None for r in rewritten.values()):
                continue   # (the scalars made for the others stay unused: harmless)
            what = "as its explicit padding"
        replaced.update(rewritten)
        removed.add(k)
        folds += [Fold(k, c, what, "pad folded into convolution") for c in rewritten
                  if model.operations[c].code in _CONVS]
    if folds:
        model.rewrite_operations([replaced.get(k, o) for k, o in enumerate(model.operations) if k not in removed])
    return folds


def _int32(model, value: int) -> int:
    i = model.add_operand(OperandType(C.INT32))
    model.set_operand_value(i, np.int32(value))
    return i


def fold_reshapes_into_fully_connected(model, keep: set) -> list[Fold]:
    """Rewrite `model` (not finished) in place: each RESHAPE read only by a FULLY_CONNECTED's input goes
    (its input of rank >= 2, as FULLY_CONNECTED needs). Returns the folds, by the indexes before."""
    readers = _readers(model)
    folds, replaced, removed = [], {}, set()
    for k, op in enumerate(model.operations):
        if op.code != Op.RESHAPE or op.outputs[0] in keep:
            continue
        users = readers.get(op.outputs[0], [])
        if len(users) != 1:
            continue
        fc = model.operations[users[0]]
        dims = model.operands[op.inputs[0]].type.dimensions
        if fc.code != Op.FULLY_CONNECTED or fc.inputs[0] != op.outputs[0] or op.outputs[0] in fc.inputs[1:] \
                or not dims or len(dims) < 2:
            continue
        rewritten = Operation(fc.code, (op.inputs[0], *fc.inputs[1:]), fc.outputs)
        if not _valid(model, users[0], rewritten):
            continue
        replaced[users[0]] = rewritten
        removed.add(k)
        folds.append(Fold(k, users[0], "(which flattens its input itself)", "reshape folded into fully connected"))
    if folds:
        model.rewrite_operations([replaced.get(k, o) for k, o in enumerate(model.operations) if k not in removed])
    return folds


def _known_dims(model, i):
    dims = model.operands[i].type.dimensions
    return tuple(dims) if dims and all(d > 0 for d in dims) else None


def fold_reshape_chains(model, keep: set) -> list[Fold]:
    """Rewrite `model` (not finished) in place: a RESHAPE goes when every reader is a RESHAPE reading it
    as its input, or when it keeps its input's known dimensions (to a constant shape); its readers read
    its input. Returns the folds, by the indexes before. Nothing changes unless every rewritten
    operation passes its spec."""
    readers = _readers(model)
    alias, removed, folds = {}, set(), []

    def resolve(i):
        while i in alias:
            i = alias[i]
        return i

    for k, op in enumerate(model.operations):
        out = op.outputs[0] if op.code == Op.RESHAPE else None
        if out is None or out in keep or out in op.inputs[1:]:
            continue
        users = sorted(set(readers.get(out, [])))
        if not users:
            continue
        src = op.inputs[0]
        chain = all(model.operations[u].code == Op.RESHAPE and model.operations[u].inputs[0] == out
                    and out not in model.operations[u].inputs[1:] and u not in removed for u in users)
        # the readers will read resolve(src) (src itself, or what a folded RESHAPE before it read)
        identity = _const(model, op.inputs[1]) is not None and _known_dims(model, out) is not None \
            and _known_dims(model, resolve(src)) == _known_dims(model, out)
        if not (chain or identity):
            continue
        alias[out] = src
        removed.add(k)
        folds.append(Fold(k, users[0], "(it keeps its input's shape)" if identity
                          else "(a reshape of a reshape is one reshape)", "reshape folded away"))

    rewritten = {}
    for k, op in enumerate(model.operations):
        if k not in removed and any(i in alias for i in op.inputs):
            rewritten[k] = Operation(op.code, tuple(resolve(i) for i in op.inputs), op.outputs)
    if not folds or not all(_valid(model, k, o) for k, o in rewritten.items()):
        return []
    model.rewrite_operations([rewritten.get(k, o) for k, o in enumerate(model.operations) if k not in removed])
    return folds
