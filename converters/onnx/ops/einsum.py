"""Einsum of one or two float32 or float16 (feature level 3) operands, every form whose NNAPI evaluation
is exact up to the order of the additions: two operands whose letters are batch (both inputs and the
output), contracted (both inputs only) and free (one input and the output), e.g. "bij,bjk->bik",
"ij,jk->ik", "bhqd,bhkd->bhqk", "ik,jk->ij"; letters summed inside one operand ("bij,bjk->bk": REDUCE_SUM
of that operand first, feature level 3); products without a contracted letter ("ij,ij->ij", "i,j->ij",
"bi,bj->bij": one broadcasting MUL, level 1); contractions without a free letter ("i,i->", "bij,bji->b":
MUL, then REDUCE_SUM, level 3); one operand that is transposed and/or summed ("ij->ji", "ij->i",
"ij->"); repeated letters in one term, diagonals ("ii->i", "ii", "bii->bi": TRANSPOSE, RESHAPE, GATHER,
feature level 3); and an ellipsis ("...ij,...jk->...ik"), which stands for the operands' leading axes
(right-aligned). Letters broadcast as in numpy (an extent 1 against a longer one).

A matmul is brought to [batch..., rows, columns] (TRANSPOSE only when the adj flags cannot absorb the
order, RESHAPE when a group has several letters), multiplied with BATCH_MATMUL (feature level 6) or, with
no batch letters and a constant right operand, FULLY_CONNECTED (level 1), then reshaped and transposed to
the output's letter order. Letters of extents that do not broadcast and three or more operands are
reported."""
from __future__ import annotations

import numpy as np

from nnapi import OperandCode as C
from nnapi import OperandType
from nnapi import OperationCode as Op

from ...registry import Reason, Unsupported
from ..common import OPSET_MAX, onnx_op


def parse(node, ranks) -> tuple[list, str]:
    """(terms, output) of the equation with any ellipsis written out as letters for the leading axes
    (ranks: the operands' ranks)."""
    eq = str(node.attrs.get("equation", "")).replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise Unsupported(Reason.INVALID, f"{node.label()}: equation {eq!r} has {len(terms)} operands, the node "
                                          f"{len(ranks)}")
    spare = [ch for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if ch not in eq]
    widest = 0
    for k, (t, rank) in enumerate(zip(terms, ranks)):
        if "..." in t:
            n = rank - (len(t) - 3)
            if n < 0 or t.count("...") > 1 or "." in t.replace("...", ""):
                raise Unsupported(Reason.INVALID, f"{node.label()}: term {t!r} for an operand of rank {rank}")
            terms[k] = t.replace("...", "".join(spare[len(spare) - n:]) if n else "")  # right-aligned
            widest = max(widest, n)
        elif "." in t:
            raise Unsupported(Reason.INVALID, f"{node.label()}: term {t!r}")
    ellipsis = "".join(spare[len(spare) - widest:]) if widest else ""
    if not arrow:  # implicit output: the ellipsis, then the letters that appear once, in alphabetical order
        once = lhs.replace("...", "")
        out = ellipsis + "".join(sorted(ch for ch in set(once) if ch.isalpha() and once.count(ch) == 1))
    else:
        out = out.replace("...", ellipsis)
    if len(set(out)) != len(out):
        raise Unsupported(Reason.INVALID, f"{node.label()}: equation {eq!r} repeats a letter in the output")
    if not set(out) <= set("".join(terms)):
        raise Unsupported(Reason.INVALID, f"{node.label()}: output letters of {eq!r} appear in no operand")
    return terms, out


class _Builder:
    """Emission helpers; an operand is ("tensor", source tensor in the ONNX layout) or ("operand", NNAPI
    operand) once an operation produced it."""

    def __init__(self, node, ctx, code: C):
        self.node, self.ctx, self.code = node, ctx, code
        self.dtype = np.float16 if code == C.TENSOR_FLOAT16 else np.float32

    def const(self, data) -> int:
        return self.ctx.const(np.ascontiguousarray(np.asarray(data, self.dtype)), self.code)

    def temp(self, dims, name: str) -> int:
        return self.ctx.temp(OperandType(self.code, tuple(dims)), name)

    def is_const(self, operand) -> bool:
        return operand[0] == "tensor" and self.ctx.is_const(operand[1])

    def tensor_operand(self, operand, letters: str, want: str, dims: tuple, perm=None) -> int:
        """The operand (axes `letters`) transposed to `want` (or by the axis list perm) and reshaped to dims."""
        ctx = self.ctx
        perm = [letters.index(ch) for ch in want] if perm is None else list(perm)
        if self.is_const(operand):
            return self.const(np.transpose(np.asarray(ctx.const_value(operand[1])), perm).reshape(dims))
        src = self.nnapi(operand)
        if perm != sorted(perm):
            shape = self.ctx.model.operands[src].type.dimensions
            src = self.emit(Op.TRANSPOSE, src, [shape[p] for p in perm], perm=ctx.const(np.asarray(perm, np.int32)))
        return self.reshape(src, dims)

    def nnapi(self, operand) -> int:
        return self.ctx.operand_as(operand[1]) if operand[0] == "tensor" else operand[1]

    def broadcast(self, i: int, letters: str, size: dict):
        """(operand, letters) of tensor i without the size-1 axes whose letters are longer elsewhere (numpy
        broadcasting: such a letter is then simply absent from this operand)."""
        shape = self.ctx.source_shape(i)
        keep = [k for k, ch in enumerate(letters) if not (shape[k] == 1 and size[ch] > 1)]
        if len(keep) == len(letters):
            return ("tensor", i), letters
        dims = [shape[k] for k in keep] or [1]
        if self.ctx.is_const(i):
            return ("operand", self.const(np.asarray(self.ctx.const_value(i)).reshape(dims))), \
                "".join(letters[k] for k in keep)
        return ("operand", self.reshape(self.ctx.operand_as(i), dims)), "".join(letters[k] for k in keep)

    def diagonal(self, operand, letters: str, size: dict):
        """(operand, letters) with every repeated letter taken once (its diagonal, moved to the end): the
        repeated axes go last (TRANSPOSE), merge (RESHAPE) and a GATHER picks k * (1 + n + ... + n^(r-1))."""
        for ch in [c for c in dict.fromkeys(letters) if letters.count(c) > 1]:
            rest = [k for k, c in enumerate(letters) if c != ch]
            rep = [k for k, c in enumerate(letters) if c == ch]
            n, r = size[ch], len(rep)
            src = self.tensor_operand(operand, letters, "", tuple([size[letters[k]] for k in rest] + [n ** r]),
                                      perm=rest + rep)
            letters = "".join(letters[k] for k in rest) + ch
            step = sum(n ** j for j in range(r))
            operand = ("operand", self.emit(Op.GATHER, src, [size[c] for c in letters], axis=self.ctx.i32(len(rest)),
                                            indices=self.ctx.const(np.arange(n, dtype=np.int32) * step)))
        return operand, letters

    def summed(self, operand, letters: str, away, size: dict):
        """The operand with the letters `away` summed out (REDUCE_SUM)."""
        if not away:
            return operand
        axes = [letters.index(ch) for ch in away]
        dims = [size[ch] for ch in letters if ch not in away] or [1]
        out = self.emit(Op.REDUCE_SUM, self.nnapi(operand), dims, axes=self.ctx.const(np.asarray(axes, np.int32)),
                        keep_dims=self.ctx.boolean(False))
        return ("operand", out)

    def to_order(self, operand, letters: str, out: str, size: dict, dst: int) -> None:
        """Write the operand (axes `letters`, the same set as `out`) into dst in the output's letter order."""
        src = self.nnapi(operand) if isinstance(operand, tuple) else operand
        perm = [letters.index(ch) for ch in out]
        if perm != sorted(perm):
            self.emit(Op.TRANSPOSE, src, [size[ch] for ch in out], dst, perm=self.ctx.const(np.asarray(perm, np.int32)))
        else:
            self.reshape(src, self.ctx.model.operands[dst].type.dimensions, dst)

    def aligned(self, operand, letters: str, out: str, size: dict) -> int:
        """The operand in the output's letter order with size-1 axes for the letters it lacks (MUL broadcasts)."""
        want = "".join(ch for ch in out if ch in letters)
        if self.is_const(operand):
            data = np.transpose(np.asarray(self.ctx.const_value(operand[1])), [letters.index(ch) for ch in want])
            return self.const(data.reshape([size[ch] if ch in letters else 1 for ch in out] or [1]))
        src = self.tensor_operand(operand, letters, want, tuple(size[ch] for ch in want) or (1,))
        first = next((k for k, ch in enumerate(out) if ch in letters), len(out))
        dims = [size[ch] if ch in letters else 1 for ch in out[first:]]  # leading 1s broadcast by themselves
        return self.reshape(src, dims or [1])

    def emit(self, code, src: int, dims, out: int = -1, **named) -> int:
        if out < 0:
            out = self.temp(dims, f"{self.node.label()}/{code.name.lower()}")
        self.ctx.emit_form(code, "default", [out], input=src, **named)
        return out

    def reshape(self, src: int, dims, out: int = -1) -> int:
        if tuple(self.ctx.model.operands[src].type.dimensions) == tuple(dims) and out < 0:
            return src
        return self.emit(Op.RESHAPE, src, dims, out, shape=self.ctx.const(np.asarray(dims, np.int32)))


@onnx_op("Einsum", versions=(12, OPSET_MAX))
def einsum(node, ctx):
    """Einsum: BATCH_MATMUL / FULLY_CONNECTED, MUL, REDUCE_SUM, TRANSPOSE and RESHAPE (forms: module doc)."""
    ins = node.inputs
    code = ctx.nnapi_type(ctx.resolve(ins[0]))[0].code if ins else None
    for i in ins:
        if ctx.nnapi_type(ctx.resolve(i))[0].code not in (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16) or \
                ctx.nnapi_type(ctx.resolve(i))[0].code != code:
            raise Unsupported(Reason.OPERAND_TYPE, f"{node.label()}: input {ctx.tensor(i).name!r} is not float32 or "
                                                   f"float16 like the others")
    terms, out = parse(node, [len(ctx.source_shape(i)) for i in ins])
    if len(terms) > 2:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: {len(terms)} operands (one or two are mapped)")
    size = {}
    for i, t in zip(ins, terms):
        shape = ctx.source_shape(i)
        if len(shape) != len(t) or not all(shape):
            raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: operand {ctx.tensor(i).name!r} needs a "
                                                    f"known shape of rank {len(t)}")
        for ch, d in zip(t, shape):
            if len({e for c, e in zip(t, shape) if c == ch}) > 1:
                raise Unsupported(Reason.INVALID, f"{node.label()}: the diagonal letter {ch!r} of term {t!r} has "
                                                  f"unequal extents {list(shape)}")
            if size.get(ch, 1) not in (1, d) and d != 1:
                raise Unsupported(Reason.ATTRIBUTE, f"{node.label()}: letter {ch!r} has extents {size[ch]} and "
                                                    f"{d}, which do not broadcast")
            size[ch] = max(size.get(ch, 1), d)
    b = _Builder(node, ctx, code)
    y = node.outputs[0]
    # letters in one operand only and not in the output are summed away first
    operands = []
    for k, (i, t) in enumerate(zip(ins, terms)):
        operand, t = b.broadcast(i, t, size)  # extent-1 axes of letters other operands have longer: dropped
        operand, t = b.diagonal(operand, t, size)
        others = set(out).union(*(terms[:k] + terms[k + 1:]))
        operands.append(b.summed(operand, t, [ch for ch in t if ch not in others], size))
        terms[k] = "".join(ch for ch in t if ch in others)
    if len(terms) == 1:
        b.to_order(operands[0], terms[0], out, size, ctx.output(y))
        return
    (a_op, b_op), (ta, tb) = operands, terms
    if not any(ch in tb and ch not in out for ch in ta):  # nothing contracted: a broadcasting product
        ctx.emit_form(Op.MUL, "default", [ctx.output(y)], input1=b.aligned(a_op, ta, out, size),
                      input2=b.aligned(b_op, tb, out, size), fuse=ctx.i32(0))
        return
    if set(out) <= set(ta) & set(tb):  # no free letter (an inner product per batch): MUL, then REDUCE_SUM
        order = out + "".join(ch for ch in ta if ch not in out)
        prod = b.temp([size[ch] for ch in order], f"{ctx.tensor(y).name}/terms")
        ctx.emit_form(Op.MUL, "default", [prod], input1=b.aligned(a_op, ta, order, size),
                      input2=b.aligned(b_op, tb, order, size), fuse=ctx.i32(0))
        axes = ctx.const(np.arange(len(out), len(order), dtype=np.int32))
        ctx.emit_form(Op.REDUCE_SUM, "default", [ctx.output(y)], input=prod, axes=axes, keep_dims=ctx.boolean(False))
        return
    _matmul(node, ctx, b, (a_op, ta), (b_op, tb), out, size)


def _matmul(node, ctx, b, left_operand, right_operand, out: str, size: dict) -> None:
    (ia, ta), (ib, tb) = left_operand, right_operand
    y = node.outputs[0]
    batch = [ch for ch in out if ch in ta and ch in tb]
    contract = [ch for ch in ta if ch in tb and ch not in out]
    left = [ch for ch in out if ch in ta and ch not in tb]
    right = [ch for ch in out if ch in tb and ch not in ta]
    prod = lambda letters: int(np.prod([size[ch] for ch in letters], dtype=np.int64))  # noqa: E731
    m, k, n = prod(left), prod(contract), prod(right)
    bdims = [size[ch] for ch in batch]
    if len(bdims) > 2:
        bdims = [prod(batch)]
    natural = "".join(batch + left + right)
    perm = [natural.index(ch) for ch in out]
    out_dims = [size[ch] for ch in out]
    direct = perm == sorted(perm) and out_dims == bdims + [m, n]  # the product is the output as it is
    mid = ctx.output(y) if direct else b.temp(bdims + [m, n], f"{ctx.tensor(y).name}/product")
    if not batch and b.is_const(ib):  # FULLY_CONNECTED: weights [N, K]
        a = b.tensor_operand(ia, ta, "".join(left + contract), (m, k))
        w = b.tensor_operand(ib, tb, "".join(right + contract), (n, k))
        ctx.emit_form(Op.FULLY_CONNECTED, "default", [mid], input=a, weights=w,
                      bias=b.const(np.zeros(n)), fuse=ctx.i32(0))
    else:
        # a term already ordered [batch, contract, free] is read transposed through the adj flag
        adj_a = ta == "".join(batch + contract + left) and ta != "".join(batch + left + contract)
        adj_b = tb == "".join(batch + right + contract) and tb != "".join(batch + contract + right)
        a = b.tensor_operand(ia, ta, "".join(batch + (contract + left if adj_a else left + contract)),
                             tuple(bdims + ([k, m] if adj_a else [m, k])))
        w = b.tensor_operand(ib, tb, "".join(batch + (right + contract if adj_b else contract + right)),
                             tuple(bdims + ([n, k] if adj_b else [k, n])))
        ctx.emit_form(Op.BATCH_MATMUL, "default", [mid], x=a, y=w, adj_x=ctx.boolean(adj_a),
                      adj_y=ctx.boolean(adj_b))
    if not direct:
        b.to_order(b.reshape(mid, [size[ch] for ch in natural] or [1]), natural, out, size, ctx.output(y))
