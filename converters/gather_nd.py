"""GatherND (ONNX) and GATHER_ND (TFLite) as one GATHER, shared by both importers.

With data of shape D, batch_dims b and indices of shape [i_0 .. i_{q-2}, k], output element
(p, r) reads data[p[:b], idx[p], r]. Flattening the leading b + k axes of the data (a RESHAPE, row-major
order unchanged) into one axis of M = prod(D[:b + k]) rows turns that into one GATHER along axis 0 of
the linear row index

    row(p) = batch(p) * prod(D[b:b + k]) + sum_j idx[p, j] * stride_j,  stride_j = prod(D[b + j + 1:b + k])

where batch(p) is the row-major index of p[:b] in D[:b]. Constant indices give that index at conversion
(checked against the extents; negative ones count from the end where the source framework allows them).
Run-time int32 indices compute it with SPLIT (the k components), LESS/ADD/SELECT (negative indices), MUL
and ADD: int32 arithmetic, exact while every row index fits in int32 (checked: M < 2^31), feature level 4
(6 when the tuple axis must be RESHAPEd away to keep the GATHER at rank 4). The GATHER writes the output's
shape directly, or a RESHAPE follows it. Bool data (an attention mask) go through uint8 0/1.
"""
from __future__ import annotations

import math
from typing import Sequence, Union

import numpy as np

from nnapi import FuseCode, OperandCode as C, OperandType, OperationCode as Op

from .registry import Reason, Unsupported


def _strides(dims: Sequence[int]) -> list:
    return [math.prod(dims[j + 1:]) for j in range(len(dims))]


def check_shapes(label: str, shape: Sequence[int], idx_shape: Sequence[int], batch_dims: int) -> None:
    """Unsupported(INVALID) unless indices of idx_shape address data of `shape` with batch_dims b."""
    b, q = batch_dims, len(idx_shape)
    if q < 1 or not 0 <= b < q or b > len(shape):
        raise Unsupported(Reason.INVALID, f"{label}: batch_dims {b} for indices of rank {q} and data of rank "
                                          f"{len(shape)}")
    if tuple(idx_shape[:b]) != tuple(shape[:b]):
        raise Unsupported(Reason.INVALID, f"{label}: the batch axes of the indices {list(idx_shape[:b])} differ "
                                          f"from the data's {list(shape[:b])}")
    if not 1 <= idx_shape[-1] <= len(shape) - b:
        raise Unsupported(Reason.INVALID, f"{label}: index tuples of length {idx_shape[-1]} into {len(shape) - b} "
                                          f"data axes")
    if math.prod(shape[:b + idx_shape[-1]]) >= 2 ** 31:
        raise Unsupported(Reason.INVALID, f"{label}: {math.prod(shape[:b + idx_shape[-1]])} rows need int64 indices")


def constant_rows(label: str, idx: np.ndarray, shape: Sequence[int], batch_dims: int, negative: bool) -> np.ndarray:
    """The int32 row index of every index tuple of constant `idx` (shape idx.shape[:-1])."""
    b, k = batch_dims, idx.shape[-1]
    dims = np.asarray(shape[b:b + k], np.int64)
    idx = idx.astype(np.int64)
    if negative:
        idx = np.where(idx < 0, idx + dims, idx)
    if ((idx < 0) | (idx >= dims)).any():
        raise Unsupported(Reason.INVALID, f"{label}: an index is outside the data's extents {list(shape[b:b + k])}")
    rows = (idx * np.asarray(_strides(list(dims)), np.int64)).sum(-1)
    batch = np.arange(math.prod(shape[:b]), dtype=np.int64).reshape(tuple(shape[:b]) + (1,) * (idx.ndim - 1 - b))
    return (rows + batch * math.prod(dims)).astype(np.int32)


def _emit(ctx, code: Op, out: int, **named) -> int:
    if code in (Op.ADD, Op.MUL):
        named["fuse"] = ctx.i32(FuseCode.NONE)
    ctx.emit_form(code, "default", [out], **named)
    return out


def _runtime_rows(ctx, label: str, indices: int, idx_shape: tuple, shape: Sequence[int], batch_dims: int,
                  negative: bool) -> int:
    """An int32 operand of shape idx_shape[:-1] + (1,) holding the row index of every tuple of run-time
    int32 `indices`."""
    b, k = batch_dims, idx_shape[-1]
    dims = list(shape[b:b + k])
    part = idx_shape[:-1] + (1,)

    def temp(suffix: str, code=C.TENSOR_INT32) -> int:
        return ctx.temp(OperandType(code, part), f"{label}/{suffix}")

    def scalar(v: int) -> int:
        return ctx.const(np.asarray([v], np.int32))

    comps = [indices]
    if k > 1:
        comps = [temp(f"index{j}") for j in range(k)]
        ctx.emit_form(Op.SPLIT, "default", comps, input=indices, axis=ctx.i32(len(idx_shape) - 1),
                      num_splits=ctx.i32(k))
    rows = None
    for j, (comp, stride) in enumerate(zip(comps, _strides(dims))):
        if negative:  # counted from the end: d_j + index
            below = _emit(ctx, Op.LESS, temp(f"negative{j}", C.TENSOR_BOOL8), input1=comp, input2=scalar(0))
            wrapped = _emit(ctx, Op.ADD, temp(f"wrapped{j}"), input1=comp, input2=scalar(dims[j]))
            comp = _emit(ctx, Op.SELECT, temp(f"fixed{j}"), condition=below, input1=wrapped, input2=comp)
        if stride != 1:
            comp = _emit(ctx, Op.MUL, temp(f"scaled{j}"), input1=comp, input2=scalar(stride))
        rows = comp if rows is None else _emit(ctx, Op.ADD, temp(f"sum{j}"), input1=rows, input2=comp)
    if b:
        offsets = np.arange(math.prod(shape[:b]), dtype=np.int64) * math.prod(dims)
        batch = ctx.const(offsets.astype(np.int32).reshape(tuple(shape[:b]) + (1,) * (len(idx_shape) - b)))
        rows = _emit(ctx, Op.ADD, temp("rows"), input1=rows, input2=batch)
    return rows


def emit_gather_nd(ctx, label: str, data: int, shape: Sequence[int], indices: Union[np.ndarray, int],
                   idx_shape: Sequence[int], batch_dims: int, out: int, negative: bool) -> None:
    """Emit GatherND of operand `data` (row-major, source shape `shape`) into operand `out`; `indices` is a
    constant array or a run-time int32 operand of shape idx_shape."""
    shape, idx_shape = tuple(int(d) for d in shape), tuple(int(d) for d in idx_shape)
    check_shapes(label, shape, idx_shape, batch_dims)
    k = idx_shape[-1]
    rest = shape[batch_dims + k:]
    if isinstance(indices, np.ndarray):
        lead = idx_shape[:-1] or (1,)  # NNAPI holds no rank-0 tensors
        rows = ctx.const(constant_rows(label, indices, shape, batch_dims, negative).reshape(lead))
    else:
        rows = _runtime_rows(ctx, label, indices, idx_shape, shape, batch_dims, negative)
        lead = idx_shape[:-1] + (1,)
        if len(lead) + len(rest) > 4:  # drop the unit axis first (an int32 RESHAPE: feature level 6)
            lead = idx_shape[:-1]
            flat = ctx.temp(OperandType(C.TENSOR_INT32, lead), f"{label}/row_index")
            ctx.emit_form(Op.RESHAPE, "default", [flat], input=rows, shape=ctx.const(np.asarray(lead, np.int32)))
            rows = flat
    t = ctx.model.operands[data].type
    table_dims = (math.prod(shape[:batch_dims + k]),) + rest
    if tuple(t.dimensions) != table_dims:
        table = ctx.temp(OperandType(t.code, table_dims, t.scale, t.zero_point), f"{label}/rows")
        ctx.emit_form(Op.RESHAPE, "default", [table], input=data, shape=ctx.const(np.asarray(table_dims, np.int32)))
        data = table
    gathered_dims = tuple(lead) + rest
    if len(gathered_dims) > 4:
        raise Unsupported(Reason.RANK, f"{label}: the gathered rows {list(gathered_dims)} have rank "
                                       f"{len(gathered_dims)}, NNAPI's GATHER writes rank 4 at most")
    final = out
    if tuple(ctx.model.operands[out].type.dimensions) != gathered_dims:
        out = ctx.temp(OperandType(t.code, gathered_dims, t.scale, t.zero_point), f"{label}/gathered")
    ctx.emit_form(Op.GATHER, "default", [out], input=data, axis=ctx.i32(0), indices=rows)
    if out != final:
        dims = ctx.model.operands[final].type.dimensions
        ctx.emit_form(Op.RESHAPE, "default", [final], input=out, shape=ctx.const(np.asarray(dims, np.int32)))

