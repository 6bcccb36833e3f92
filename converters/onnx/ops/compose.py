"""Building blocks for ONNX ops that become a short chain of NNAPI operations (exact compositions such
as Softplus, Round, LayerNormalization): temporaries in a tensor's type and layout, broadcast scalar
constants, and emission by argument name with the FuseCode filled in. Registers no converter."""
from __future__ import annotations

import numpy as np

from nnapi import FuseCode, OperandType
from nnapi import OperandCode as C
from nnapi import OperationCode as Op
from nnapi.ops import SPECS

from ...context import broadcast_data, stored
from ...registry import Reason, Unsupported
from ...pins import pin_hint

_SCALAR_DTYPES = {C.TENSOR_FLOAT32: np.float32, C.TENSOR_FLOAT16: np.float16, C.TENSOR_INT32: np.int32}


def _takes_fuse(code: Op) -> bool:
    return any(a.name == "fuse" for a in SPECS[code].forms[0].inputs)


class Chain:
    """Operations whose temporaries take tensor `like`'s operand type and layout (shape, perm)."""

    def __init__(self, ctx, node, like: int):
        self.ctx, self.node, self.like = ctx, node, like
        self.code = ctx.nnapi_type(ctx.resolve(like))[0].code
        self._n = 0

    def temp(self, code: C | None = None, dims: tuple | None = None) -> int:
        self._n += 1
        changes = {}
        if code is not None:
            changes.update(code=code, scale=0.0, zero_point=0)
        if dims is not None:
            changes["dimensions"] = tuple(dims)
        return self.ctx.temp_like(self.like, f"{self.node.op.lower()}{self._n}", **changes)

    def scalar(self, value, code: C | None = None) -> int:
        """A one-element constant (broadcasts against any shape) in the chain's element type."""
        code = code or self.code
        if code not in _SCALAR_DTYPES:
            raise Unsupported(Reason.OPERAND_TYPE, f"{self.node.label()}: {code.name} operands are not mapped")
        return self.ctx.const(np.asarray([value], _SCALAR_DTYPES[code]), code)

    def op(self, code: Op, out: int | None = None, out_code: C | None = None, **named) -> int:
        """Emit `code` with named inputs into `out` (a new temporary when None); returns the output."""
        if _takes_fuse(code):
            named.setdefault("fuse", self.ctx.i32(FuseCode.NONE))
        if out is None:
            out = self.temp(out_code)
        self.ctx.emit_form(code, "default", [out], **named)
        return out

    # the elementwise ops every composition uses
    def binary(self, code: Op, a: int, b: int, out: int | None = None, out_code: C | None = None) -> int:
        return self.op(code, out, out_code, input1=a, input2=b)

    def unary(self, code: Op, a: int, out: int | None = None) -> int:
        return self.op(code, out, input=a)

    def select(self, cond: int, a: int, b: int, out: int | None = None) -> int:
        return self.op(Op.SELECT, out, condition=cond, input1=a, input2=b)


def require_float(ctx, node, i: int) -> None:
    """Unsupported unless tensor i is float32/float16 (compositions are exact only in float)."""
    code = ctx.nnapi_type(ctx.resolve(i))[0].code
    if code not in (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16):
        raise Unsupported(Reason.OPERAND_TYPE if ctx.tensor(i).quant is None else Reason.QUANTIZATION_TYPE,
                          f"{node.label()}: input {ctx.tensor(i).name!r} is {code.name}; the composition is "
                          f"exact only for float tensors")


def known_shape(ctx, node, i: int) -> tuple:
    shape = ctx.source_shape(i)
    if ctx.tensor(i).shape is None or not all(shape):
        raise Unsupported(Reason.DYNAMIC_SHAPE, f"{node.label()}: tensor {ctx.tensor(i).name!r} has unknown "
                                                f"extents {list(shape)} ({pin_hint('them')})")
    return tuple(shape)


def reshaped(ctx, node, operand: int, dims) -> int:
    """A RESHAPE of `operand` to dims (int32 tensors need feature level 6 for RESHAPE)."""
    t = ctx.model.operands[operand].type
    out = ctx.temp(OperandType(t.code, tuple(dims), t.scale, t.zero_point),
                   f"{ctx.model.operands[operand].name or node.op}/reshaped")
    ctx.emit_form(Op.RESHAPE, "default", [out], input=operand, shape=ctx.const(np.asarray(dims, np.int32)))
    return out


def broadcast_to(ctx, node, i: int, shape: tuple, perm=None, out: int | None = None) -> int:
    """Tensor i broadcast to `shape` (ONNX order) in layout perm: constants are materialised, run-time
    tensors are reshaped to the full rank and TILEd (NNAPI's SELECT does not broadcast). With `out`, the
    TILE writes it (the caller makes sure the shapes differ)."""
    src_shape = tuple(ctx.source_shape(i))
    if src_shape == tuple(shape) and out is None:
        return ctx.operand_as(i, perm)
    if ctx.is_const(ctx.resolve(i)) and out is None:
        data = broadcast_data(ctx.const_value(ctx.resolve(i)), shape, f"{node.label()}: {ctx.tensor(i).name!r}")
        data = data if perm is None else np.transpose(data, perm)
        otype, _ = ctx.nnapi_type(ctx.resolve(i))
        return ctx.const(np.ascontiguousarray(stored(otype.code, data).astype(otype.dtype)), otype.code, scale=otype.scale,
                         zero_point=otype.zero_point)
    if perm is not None:
        raise Unsupported(Reason.RANK, f"{node.label()}: run-time tensor {ctx.tensor(i).name!r} broadcast "
                                       f"against an NHWC tensor")
    src = ctx.operand_as(i)
    if ctx.model.operands[src].type.code == C.TENSOR_BOOL8:  # no RESHAPE/TILE of bool: AND with all-true
        if out is None:
            out = ctx.temp(OperandType(C.TENSOR_BOOL8, tuple(shape)), f"{ctx.tensor(i).name}/broadcast")
        ctx.emit_form(Op.LOGICAL_AND, "default", [out], input1=src, input2=ctx.const(np.ones(shape, bool)))
        return out
    full = (1,) * (len(shape) - len(src_shape)) + src_shape
    if full != src_shape:
        src = reshaped(ctx, node, src, full)
    t = ctx.model.operands[src].type
    if out is None:
        out = ctx.temp(OperandType(t.code, tuple(shape), t.scale, t.zero_point), f"{ctx.tensor(i).name}/tiled")
    ctx.emit_form(Op.TILE, "default", [out], input=src,
                  multiples=ctx.const(np.asarray([o // s for o, s in zip(shape, full)], np.int32)))
    return out
