"""Einsum in its matmul shapes: two operands whose letters are batch (both inputs and the output),
contracted (both inputs only) and free (one input and the output), e.g. "bij,bjk->bik", "ij,jk->ik",
"bhqd,bhkd->bhqk", "ik,jk->ij"; one operand when it is a pure transpose ("ij->ji").

Each operand is brought to [batch..., rows, columns] (TRANSPOSE only when the adj flags cannot absorb
the order, RESHAPE when a group has several letters), multiplied with BATCH_MATMUL (feature level 6) or,
with no batch letters and a constant right operand, FULLY_CONNECTED (level 1), then reshaped and
transposed to the output's letter order. Ellipses, repeated letters (diagonals), letters summed away
inside one operand and more operands are reported."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C
from nnapi import OperandType
from nnapi import OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, onnx_op


def parse(node) -> tuple[list, str]:
    eq = str(node.attrs.get("equation", "")).replace(" ", "")
    if "." in eq:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: equation {eq!r} has an ellipsis")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if not arrow:  # implicit output: letters that appear once, in alphabetical order
        out = "".join(sorted(ch for ch in set(lhs) if ch.isalpha() and lhs.count(ch) == 1))
    if any(len(set(t)) != len(t) for t in terms + [out]):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: equation {eq!r} repeats a letter in one term "
                                            f"(a diagonal)")
    return terms, out


class _Builder:
    def __init__(self, node, ctx):
        self.node, self.ctx = node, ctx

    def tensor_operand(self, i: int, letters: str, want: str, dims: tuple) -> int:
        """Tensor i (ONNX layout, axes `letters`) transposed to `want` and reshaped to dims."""
        ctx = self.ctx
        perm = [letters.index(ch) for ch in want]
        if ctx.is_const(i):
            data = np.transpose(np.asarray(ctx.const_value(i), np.float32), perm).reshape(dims)
            return ctx.const(np.ascontiguousarray(data))
        src = ctx.operand_as(i)
        if perm != sorted(perm):
            src = self.emit(Op.TRANSPOSE, src, [ctx.source_shape(i)[p] for p in perm],
                            perm=ctx.const(np.asarray(perm, np.int32)))
        return self.reshape(src, dims)

    def emit(self, code, src: int, dims, out: int = -1, **named) -> int:
        if out < 0:
            out = self.ctx.temp(OperandType(C.TENSOR_FLOAT32, tuple(dims)), f"{self.node.label()}/{code.name.lower()}")
        self.ctx.emit_form(code, "default", [out], input=src, **named)
        return out

    def reshape(self, src: int, dims, out: int = -1) -> int:
        if tuple(self.ctx.model.operands[src].type.dimensions) == tuple(dims) and out < 0:
            return src
        return self.emit(Op.RESHAPE, src, dims, out, shape=self.ctx.const(np.asarray(dims, np.int32)))


@onnx_op("Einsum", versions=(12, OPSET_MAX))
def einsum(node, ctx):
    """Matmul-shaped Einsum as BATCH_MATMUL / FULLY_CONNECTED with transposes and reshapes."""
    terms, out = parse(node)
    ins = node.inputs
    for i in ins:
        if ctx.nnapi_type(ctx.resolve(i))[0].code != C.TENSOR_FLOAT32:
            raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: input {ctx.tensor(i).name!r} is not float32")
    size = {}
    for i, t in zip(ins, terms):
        shape = ctx.source_shape(i)
        if len(shape) != len(t) or not all(shape):
            raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: operand {ctx.tensor(i).name!r} needs a "
                                                    f"known shape of rank {len(t)}")
        for ch, d in zip(t, shape):
            if size.setdefault(ch, d) != d:
                raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: letter {ch!r} has extents {size[ch]} and "
                                                    f"{d} (broadcasting is not mapped)")
    b = _Builder(node, ctx)
    y = node.outputs[0]
    if len(terms) == 1:
        if set(terms[0]) != set(out):
            raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: a one-operand Einsum that sums is not mapped")
        perm = [terms[0].index(ch) for ch in out]
        b.emit(Op.TRANSPOSE, ctx.operand_as(ins[0]), [size[ch] for ch in out], ctx.output(y),
               perm=ctx.const(np.asarray(perm, np.int32)))
        return
    if len(terms) != 2:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: {len(terms)} operands (two are mapped)")
    ta, tb = terms
    batch = [ch for ch in out if ch in ta and ch in tb]
    contract = [ch for ch in ta if ch in tb and ch not in out]
    left = [ch for ch in out if ch in ta and ch not in tb]
    right = [ch for ch in out if ch in tb and ch not in ta]
    if set(ta) | set(tb) != set(batch + contract + left + right) or not set(out) <= set(ta) | set(tb):
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: a letter is summed inside one operand")
    prod = lambda letters: int(np.prod([size[ch] for ch in letters], dtype=np.int64))
    m, k, n = prod(left), prod(contract), prod(right)
    bdims = [size[ch] for ch in batch]
    if len(bdims) > 2:
        bdims = [prod(batch)]
    natural = "".join(batch + left + right)
    perm = [natural.index(ch) for ch in out]
    out_dims = [size[ch] for ch in out]
    direct = perm == sorted(perm) and out_dims == bdims + [m, n]  # the product is the output as it is
    mid = ctx.output(y) if direct else ctx.temp(OperandType(C.TENSOR_FLOAT32, tuple(bdims + [m, n])),
                                                  f"{ctx.tensor(y).name}/product")
    if not batch and ctx.is_const(ins[1]):  # FULLY_CONNECTED: weights [N, K]
        a = b.tensor_operand(ins[0], ta, "".join(left + contract), (m, k))
        w = b.tensor_operand(ins[1], tb, "".join(right + contract), (n, k))
        ctx.emit_form(Op.FULLY_CONNECTED, "default", [mid], input=a, weights=w,
                      bias=ctx.const(np.zeros(n, np.float32)), fuse=ctx.i32(0))
    else:
        # a term already ordered [batch, contract, free] is read transposed through the adj flag
        adj_a = ta == "".join(batch + contract + left) and ta != "".join(batch + left + contract)
        adj_b = tb == "".join(batch + right + contract) and tb != "".join(batch + contract + right)
        a = b.tensor_operand(ins[0], ta, "".join(batch + (contract + left if adj_a else left + contract)),
                             tuple(bdims + ([k, m] if adj_a else [m, k])))
        w = b.tensor_operand(ins[1], tb, "".join(batch + (right + contract if adj_b else contract + right)),
                             tuple(bdims + ([n, k] if adj_b else [k, n])))
        ctx.emit_form(Op.BATCH_MATMUL, "default", [mid], x=a, y=w, adj_x=ctx.boolean(adj_a),
                      adj_y=ctx.boolean(adj_b))
    if direct:
        return
    final = ctx.output(y)
    if perm == sorted(perm):
        b.reshape(mid, out_dims, final)
        return
    grouped = b.reshape(mid, [size[ch] for ch in natural])
    b.emit(Op.TRANSPOSE, grouped, [size[ch] for ch in out], final, perm=ctx.const(np.asarray(perm, np.int32)))
