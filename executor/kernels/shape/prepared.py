"""Compiled TRANSPOSE and GATHER with constant parameters (attention's head split and merge, a
transformer's position and token lookups).

The kernels (reference.py) read the permutation, the axis and the indices and check them on every
call, several times the cost of the data movement on a small tensor. Here the first call of each
input shape goes to the kernel, which checks everything (and fails as it does); later calls of that
shape do only the movement, with numpy's own call: TRANSPOSE the same view, GATHER the same
np.take, into the output buffer.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import OperationCode as Op

from ...registry import prepare

# input shapes remembered per operation
MAX_SHAPES = 16


class _Checked:
    """The kernel on the first call of each input shape (its checks), the movement afterwards."""

    def __init__(self, pctx):
        self.kernel = pctx.step.kernel
        self.x = pctx.step.bound.positions["input"]   # (a run indexes ctx.inputs: cheaper than ctx.args)
        self.dtype = pctx.step.bound.operand("input").type.dtype
        self.shapes: set = set()

    def __call__(self, ctx):
        v = ctx.inputs[self.x]
        if v is None or v.array.dtype != self.dtype:
            return self.kernel(ctx)
        x = v.array
        if x.shape not in self.shapes:
            out = self.kernel(ctx)   # raises where the parameters do not fit this shape
            if len(self.shapes) >= MAX_SHAPES:
                self.shapes.clear()
            self.shapes.add(x.shape)
            return out
        return self.move(ctx, x)


class PreparedTranspose(_Checked):
    """x.transpose(perm), a view as the kernel's (so no fresh_outputs)."""

    def __init__(self, pctx, perm):
        super().__init__(pctx)
        self.perm = perm

    def move(self, ctx, x):
        return [x.transpose(self.perm) if self.perm else x.transpose()]


class PreparedGather(_Checked):
    """np.take(x, indices, axis) into output 0's buffer: the indices were checked in range for this
    shape, so mode="clip" (which lets numpy write into `out` directly) changes none of them. Indices
    that are one ascending run [i, i + 1, ..., j] (a constant slice, as ONNX exports split q, k and v)
    select x's slice along the axis instead: the same values, as a view of x."""

    def __init__(self, pctx, axis: int, indices: np.ndarray):
        super().__init__(pctx)
        self.axis, self.indices = axis, indices
        flat = indices.reshape(-1)
        run = indices.ndim == 1 and flat.size > 0 and np.array_equal(flat, np.arange(flat[0], flat[0] + flat.size))
        self.run = slice(int(flat[0]), int(flat[0]) + flat.size) if run else None
        self.fresh_outputs = not run   # (a view of the input shares its memory)

    def move(self, ctx, x):
        axis = self.axis % x.ndim
        if self.run is not None:
            return [x[(slice(None),) * axis + (self.run,)]]
        shape = x.shape[:axis] + self.indices.shape + x.shape[axis + 1:]
        out = ctx.output_buffer(0, shape, x.dtype)
        np.take(x, self.indices, axis=axis, out=out, mode="clip")
        return [out]


@prepare(Op.TRANSPOSE)
def prepare_transpose(pctx):
    bound = pctx.step.bound
    if bound.runtime != {"input"} or not bound.operand("input").type.is_tensor:
        return None
    perm = pctx.args.get("perm")
    return PreparedTranspose(pctx, [] if perm is None else [int(p) for p in perm.array.reshape(-1)])


@prepare(Op.GATHER)
def prepare_gather(pctx):
    bound = pctx.step.bound
    if bound.runtime != {"input"} or not bound.constant("axis") or pctx.args.indices is None \
            or not bound.operand("input").type.is_tensor:
        return None
    return PreparedGather(pctx, pctx.args.axis, pctx.args.indices.array)
