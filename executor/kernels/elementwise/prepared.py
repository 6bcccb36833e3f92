"""Compiled elementwise operations on float32, float16, int32 and bool tensors.

The plain kernels (reference.py, ../compare.py, ../activation.py, ../unary.py) parse
the fuse code, check broadcasting and pick the arithmetic on every call, which
is most of the time of a small tensor. The preparers here do that once: the
ufunc, the dtypes and the fuse clamp (0-d bounds: numpy clips with them about
twice as fast as with Python floats) are fixed at compilation, the broadcast
result shape is worked out once per pair of input shapes, and each run is one
ufunc into `ctx.output_buffer` plus an in-place clamp.

The arithmetic is the plain kernels', operation for operation: int32 ADD, SUB
and MUL wrap (computed on uint32 views: the same low 32 bits as the kernels'
int64 arithmetic, and defined behaviour in C), float16 arithmetic is computed in
float32 and rounded once, as the kernels do. A small constant operand that
broadcasts is expanded to the output shape once per shape: numpy's broadcasting
iterator costs more than the arithmetic on small tensors.

8-bit inputs get lut.py's tables; int32 DIV, quantized MAXIMUM/MINIMUM and
comparisons, and anything unexpected at run time (another dtype, shapes that
do not broadcast, an absent input) go to the plain kernel, which reports errors.
Every result is a new array (never a view of an input), on every path.
"""
from __future__ import annotations

import numpy as np

from nnapi.codes import FuseCode, OperationCode as Op

from ...registry import prepare
from ..common import clip_ufunc, fuse_range
from ..conv.gemm import ChannelRows
from ..lut import binary_table, constant_operand_table, unary_table

F32, F16, I32, U32, BOOL = (np.dtype(t) for t in (np.float32, np.float16, np.int32, np.uint32, np.bool_))
# a broadcasting constant is expanded to the output shape up to this many elements
EXPAND_LIMIT = 4096
# shape pairs remembered per operation (dynamic shapes could otherwise grow the cache without end)
MAX_PLANS = 64

_ARITHMETIC = {Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: np.divide}
_COMPARE = {Op.EQUAL: np.equal, Op.NOT_EQUAL: np.not_equal, Op.GREATER: np.greater,
            Op.GREATER_EQUAL: np.greater_equal, Op.LESS: np.less, Op.LESS_EQUAL: np.less_equal,
            Op.LOGICAL_AND: np.logical_and, Op.LOGICAL_OR: np.logical_or}
_LOGICAL = (Op.LOGICAL_AND, Op.LOGICAL_OR)


def _bounds(lo: float, hi: float, dtype):
    """The clamp as 0-d arrays, or None for no clamp."""
    if lo == -np.inf and hi == np.inf:
        return None
    return np.array(lo, dtype), np.array(hi, dtype)


def _operands(code) -> tuple:
    """The names of a binary operation's two tensor arguments."""
    return ("base", "exponent") if code == Op.POW else ("input1", "input2")


def _input_dtype(pctx, names: tuple, dtypes):
    """The declared dtype shared by the tensor arguments `names` when it is one of `dtypes`, else None."""
    types = [pctx.step.bound.operand(n).type for n in names]
    dts = {t.dtype for t in types}
    if len(dts) != 1 or not all(t.is_tensor for t in types):
        return None
    (dt,) = dts
    return dt if dt in dtypes else None


# -- binary -----------------------------------------------------------------------------------------

class Binary:
    """out = ufunc(a, b) in the inputs' dtype, then the clamp if any."""

    fresh_outputs = True

    def __init__(self, pctx, ufunc, dtype, out_dtype, clamp=None):
        self.kernel = pctx.step.kernel
        self.ufunc = ufunc
        self.dtype, self.out_dtype, self.clamp = dtype, out_dtype, clamp
        names = _operands(pctx.step.code)
        # the operands' input positions, looked up once (a run indexes ctx.inputs: cheaper than ctx.args)
        self.a, self.b = (pctx.step.bound.positions[n] for n in names)
        self.constants = [v.array if v is not None else None for v in (pctx.args.get(n) for n in names)]
        self.plans: dict = {}

    def _operand(self, k: int, x: np.ndarray, shape: tuple):
        """What to pass as operand k: a constant broadcasting to a small output, expanded once."""
        if x is self.constants[k] and x.shape != shape and int(np.prod(shape)) <= EXPAND_LIMIT:
            return self.cast(np.ascontiguousarray(np.broadcast_to(x, shape)))
        return None

    def cast(self, x: np.ndarray) -> np.ndarray:
        return x

    def _channel_rows(self, k: int, x: np.ndarray, shape: tuple):
        """For a constant operand k of one value per channel ([1, ..., 1, C]) against the other operand
        of the output's shape: its values repeated along long rows (gemm.ChannelRows), else None."""
        c = self.constants[k]
        if x is not c or c.ndim == 0 or c.size != c.shape[-1] or c.size < 2 or shape[-1] != c.size:
            return None
        return ChannelRows(self.cast(c).reshape(-1))

    def plan(self, a: np.ndarray, b: np.ndarray):
        """(result shape, expanded a or None, expanded b or None, per-channel rows or None) for these
        input shapes; None when they do not broadcast (the kernel then fails with its message). The
        expanded constants can be kept with the shapes: a constant operand's slot always holds the same
        array. A per-channel constant against a large other operand of the output's shape is applied
        along long rows (numpy's broadcasting of C values at a time is several times slower)."""
        try:
            shape = np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            return None
        if len(self.plans) >= MAX_PLANS:
            self.plans.clear()
        ea, eb = self._operand(0, a, shape), self._operand(1, b, shape)
        rows = None
        if ea is None and eb is None:
            for k, other in ((0, b), (1, a)):
                if other.shape == shape and (rows := self._channel_rows(k, (a, b)[k], shape)) is not None:
                    rows = (k, rows)
                    break
        p = self.plans[(a.shape, b.shape)] = (shape, ea, eb, rows)
        return p

    def operands(self, ctx):
        """(result shape, a, b, per-channel rows) ready for the ufunc -- cast, or the expanded constants -- or None when
        the plain kernel should run (an absent input, another dtype, shapes that do not broadcast)."""
        try:
            a, b = ctx.inputs[self.a].array, ctx.inputs[self.b].array
        except AttributeError:   # an absent input
            return None
        if a.dtype != self.dtype or b.dtype != self.dtype:
            return None
        p = self.plans.get((a.shape, b.shape)) or self.plan(a, b)
        if p is None:
            return None
        shape, ea, eb, rows = p
        a, b = self.cast(a) if ea is None else ea, self.cast(b) if eb is None else eb
        return shape, a, b, rows

    def __call__(self, ctx):
        # operands() without its casts (none here), inlined: this is most of a small tensor's time
        inputs = ctx.inputs
        try:
            a, b = inputs[self.a].array, inputs[self.b].array
        except AttributeError:   # an absent input
            return self.kernel(ctx)
        if a.dtype != self.dtype or b.dtype != self.dtype:
            return self.kernel(ctx)
        p = self.plans.get((a.shape, b.shape)) or self.plan(a, b)
        if p is None:
            return self.kernel(ctx)
        shape, ea, eb, rows = p
        if ea is not None:
            a = ea
        if eb is not None:
            b = eb
        out = ctx.output_buffer(0, shape, self.out_dtype)
        if rows is not None:
            k, channel_rows = rows
            values, repeated = channel_rows(b if k == 0 else a)
            a, b = (repeated, values) if k == 0 else (values, repeated)
            out_view = out.reshape(values.shape)
            self.ufunc(a, b, out=out_view)
        else:
            self.ufunc(a, b, out=out)
        if self.clamp is not None:
            clip_ufunc(out, *self.clamp, out=out)
        return [out]


class WrappingBinary(Binary):
    """int32 ADD, SUB, MUL on uint32 views: two's complement wrap-around, as the kernel's int64 arithmetic
    truncated to 32 bits."""

    def cast(self, x):
        return x.view(U32)

    def __call__(self, ctx):
        ops = self.operands(ctx)
        if ops is None:
            return self.kernel(ctx)
        shape, a, b, _ = ops
        out = ctx.output_buffer(0, shape, I32)
        self.ufunc(a, b, out=out.view(U32))
        return [out]


class HalfBinary(Binary):
    """float16 inputs computed in float32 and rounded to float16 once, as the kernels do."""

    def __call__(self, ctx):
        ops = self.operands(ctx)
        if ops is None:
            return self.kernel(ctx)
        shape, a, b, _ = ops
        res = self.ufunc(a, b, dtype=F32)
        if self.clamp is not None:
            clip_ufunc(res, *self.clamp, out=res)
        out = ctx.output_buffer(0, shape, F16)
        out[...] = res
        return [out]


def _fuse_clamp(pctx, dtype):
    """The clamp of the constant fuse code: False when it is not a valid constant."""
    fuse = pctx.step.bound.consts.get("fuse")
    try:
        return _bounds(*fuse_range(fuse), dtype)
    except (ValueError, TypeError):   # not a fuse code: the kernel reports it
        return False


def _arithmetic(pctx):
    """ADD, SUB, MUL, DIV: float32, float16 and (but DIV) int32."""
    code = pctx.step.code
    dt = _input_dtype(pctx, _operands(code), (F32, F16, I32))
    if dt is None or pctx.out_type().dtype != dt or (dt == I32 and code == Op.DIV):
        return None    # int32 DIV keeps the kernel's int64 rule (x / 0 == 0, floor)
    clamp = _fuse_clamp(pctx, F32)
    if clamp is False:
        return None
    ufunc = _ARITHMETIC[code]
    if dt == F16:
        return HalfBinary(pctx, ufunc, F16, F16, clamp)
    if dt == I32:   # the kernel clamps int32 results with float bounds: only NONE is worth a fast path
        return WrappingBinary(pctx, ufunc, I32, I32) if clamp is None else None
    return Binary(pctx, ufunc, F32, F32, clamp)


@prepare(Op.ADD, Op.SUB, Op.MUL)
def prepare_add_sub_mul(pctx):
    return binary_table(pctx) or constant_operand_table(pctx, "input1", "input2") or _arithmetic(pctx)


@prepare(Op.DIV)
def prepare_div(pctx):
    return _arithmetic(pctx)


@prepare(Op.MAXIMUM, Op.MINIMUM)
def prepare_max_min(pctx):
    dt = _input_dtype(pctx, _operands(pctx.step.code), (F32, F16, I32))
    if dt is None or pctx.out_type().dtype != dt:
        return None
    return Binary(pctx, np.maximum if pctx.step.code == Op.MAXIMUM else np.minimum, dt, dt)


@prepare(Op.POW)
def prepare_pow(pctx):
    dt = _input_dtype(pctx, _operands(Op.POW), (F32, F16))
    if dt is None or pctx.out_type().dtype != dt:
        return None
    return (HalfBinary if dt == F16 else Binary)(pctx, np.power, dt, dt)


@prepare(*_COMPARE)
def prepare_compare(pctx):
    """Comparisons of float, int32 and bool tensors in their own dtype (quantized: the kernel)."""
    code = pctx.step.code
    dt = _input_dtype(pctx, _operands(code), (BOOL,) if code in _LOGICAL else (F32, F16, I32, BOOL))
    if dt is None or pctx.out_type().dtype != BOOL:
        return None
    return Binary(pctx, _COMPARE[code], dt, BOOL)


class Select:
    """SELECT of float or int32 tensors: the kernel's np.where, handed out as it is (a new array of
    the inputs' dtype, which is the output's: the kernel's cast copies it once more)."""

    fresh_outputs = True

    def __init__(self, pctx, dtype):
        self.kernel = pctx.step.kernel
        self.dtype = dtype
        self.c, self.a, self.b = (pctx.step.bound.positions[n] for n in ("condition", "input1", "input2"))

    def __call__(self, ctx):
        inputs = ctx.inputs
        try:
            c, a, b = inputs[self.c].array, inputs[self.a].array, inputs[self.b].array
        except AttributeError:   # an absent input
            return self.kernel(ctx)
        if c.dtype != BOOL or a.dtype != self.dtype or b.dtype != self.dtype or not c.shape == a.shape == b.shape:
            return self.kernel(ctx)
        return [np.where(c, a, b)]


@prepare(Op.SELECT)
def prepare_select(pctx):
    dt = _input_dtype(pctx, ("input1", "input2"), (F32, F16, I32))
    return Select(pctx, dt) if dt is not None and pctx.out_type().dtype == dt else None


# -- unary ------------------------------------------------------------------------------------------

class Unary:
    """out = fn(x, out) in the input's dtype; `fn` computes into `out`, which may be `x` itself."""

    fresh_outputs = True

    def __init__(self, pctx, fn, dtype):
        self.kernel = pctx.step.kernel
        self.fn, self.dtype = fn, dtype
        self.x = pctx.step.bound.positions["input"]   # (a run indexes ctx.inputs: cheaper than ctx.args)

    def __call__(self, ctx):
        try:
            x = ctx.inputs[self.x].array
        except AttributeError:
            return self.kernel(ctx)
        if x.dtype != self.dtype:
            return self.kernel(ctx)
        out = ctx.output_buffer(0, x.shape, self.dtype)
        self.fn(x, out)
        return [out]


class HalfUnary(Unary):
    """float16 computed in float32 and rounded once (unary.float_result)."""

    def __call__(self, ctx):
        try:
            x = ctx.inputs[self.x].array
        except AttributeError:
            return self.kernel(ctx)
        if x.dtype != F16:
            return self.kernel(ctx)
        res = x.astype(F32)
        self.fn(res, res)
        out = ctx.output_buffer(0, x.shape, F16)
        out[...] = res
        return [out]


_ONE, _THREE, _SIX, _ZERO = (np.array(v, F32) for v in (1.0, 3.0, 6.0, 0.0))


def _ufunc(f):
    def fn(x, out):
        f(x, out=out)
    return fn


def _logistic(x, out):   # 1 / (1 + exp(-x)), as activation.logistic
    np.negative(x, out=out)
    np.exp(out, out=out)
    np.add(out, _ONE, out=out)
    np.divide(_ONE, out, out=out)


def _rsqrt(x, out):      # 1 / sqrt(x), as unary.rsqrt
    np.sqrt(x, out=out)
    np.divide(_ONE, out, out=out)


def _hard_swish(x, out):  # x * clip(x + 3, 0, 6) / 6, as activation.hard_swish
    # x is read again below: a temporary when `out` is x, else `out` holds clip(x + 3) (a fresh large
    # temporary costs its page faults every run; t * x is x * t, bit for bit)
    t = np.empty(x.shape, x.dtype) if out is x else out
    np.add(x, _THREE, out=t)
    clip_ufunc(t, _ZERO, _SIX, out=t)
    np.multiply(x, t, out=out)
    np.divide(out, _SIX, out=out)


# float functions (float32, float16 through float32)
_FLOAT_UNARY = {Op.LOGISTIC: _logistic, Op.TANH: _ufunc(np.tanh), Op.HARD_SWISH: _hard_swish,
                Op.ABS: _ufunc(np.abs), Op.NEG: _ufunc(np.negative), Op.EXP: _ufunc(np.exp),
                Op.LOG: _ufunc(np.log), Op.SIN: _ufunc(np.sin), Op.SQRT: _ufunc(np.sqrt),
                Op.FLOOR: _ufunc(np.floor), Op.RSQRT: _rsqrt}
_RELU = {Op.RELU: FuseCode.RELU, Op.RELU1: FuseCode.RELU1, Op.RELU6: FuseCode.RELU6}


def _unary_input(pctx, dtypes):
    """The dtype of the tensor argument `input` (the only run-time argument) when it is one of `dtypes`."""
    if pctx.step.bound.runtime - {"input"}:
        return None
    dt = _input_dtype(pctx, ("input",), dtypes)
    return dt if dt is not None and pctx.out_type().dtype == dt else None


@prepare(*_FLOAT_UNARY)
def prepare_float_unary(pctx):
    code = pctx.step.code
    table = unary_table(pctx)   # an 8-bit input (lut.UNARY: RSQRT of a quantized layer norm, ...)
    if table is not None:
        return table
    if code in (Op.ABS, Op.NEG) and _unary_input(pctx, (I32,)) is not None:
        return Unary(pctx, _FLOAT_UNARY[code], I32)   # int32 wraps: |INT32_MIN| == INT32_MIN, as the kernel
    dt = _unary_input(pctx, (F32, F16))
    if dt is None:
        return None
    return (HalfUnary if dt == F16 else Unary)(pctx, _FLOAT_UNARY[code], dt)


@prepare(*_RELU)
def prepare_relu(pctx):
    """A clamp in the input's own dtype (float16 too: the bounds are exact there), as activation.relu."""
    table = unary_table(pctx)
    if table is not None:
        return table
    dt = _unary_input(pctx, (F32, F16))
    if dt is None:
        return None
    lo, hi = _bounds(*fuse_range(_RELU[pctx.step.code]), dt)
    return Unary(pctx, lambda x, out: clip_ufunc(x, lo, hi, out=out), dt)


@prepare(Op.LOGICAL_NOT)
def prepare_logical_not(pctx):
    return Unary(pctx, _ufunc(np.logical_not), BOOL) if _unary_input(pctx, (BOOL,)) is not None else None


# -- PRELU ------------------------------------------------------------------------------------------

class Prelu:
    """Float32 PRELU with a constant finite non-zero alpha without the kernel's where(x >= 0, x, x * a), whose
    data-dependent selection is several times slower: per channel s = 1 where alpha <= 1, else -1;
    t = x * (s * a), u = x * s, out = s * max(t, u). That is the kernel's value element for element.
    With s = 1 (alpha <= 1): x * a <= x exactly where x >= 0 and >= x where x < 0 (float32 rounding
    keeps both orders) and numpy's maximum returns its second argument unless the first is larger (or
    NaN), so ties (zeros of either sign, alpha 1) give x itself. With s = -1 (alpha > 1) it is
    min(x * a, x), ties again x (the sign flips are exact). Alphas all <= 1 skip both flips."""

    fresh_outputs = True

    def __init__(self, pctx, alpha: np.ndarray):
        self.kernel = pctx.step.kernel
        sign = np.where(alpha <= 1, np.float32(1), np.float32(-1)).astype(F32)
        self.shape = alpha.shape
        self.flip = bool(np.any(sign < 0))
        self.constants = (alpha * sign, sign) if self.flip else (alpha,)
        # alpha [1, ..., 1, C] against [..., C]: repeated along long rows (numpy's broadcasting of C
        # values at a time is several times slower)
        self.rows = ChannelRows(*(k.reshape(-1) for k in self.constants)) if alpha.size == alpha.shape[-1] > 1 else None
        self.scratch = pctx.compiled.scratch
        self.x = pctx.step.bound.positions["input"]   # (a run indexes ctx.inputs: cheaper than ctx.args)

    def __call__(self, ctx):
        try:
            x = ctx.inputs[self.x].array
        except AttributeError:
            return self.kernel(ctx)
        if x.dtype != F32 or x.ndim < len(self.shape) or any(
                a != 1 and a != d for a, d in zip(self.shape[::-1], x.shape[::-1])):
            return self.kernel(ctx)   # (alpha must broadcast to x's shape; else the kernel reports it)
        out = ctx.output_buffer(0, x.shape, F32)
        if self.rows is not None and x.flags.c_contiguous:
            xv, *ks = self.rows(x)
            ov = out.reshape(xv.shape)
        else:
            xv, ks, ov = x, self.constants, out
        np.multiply(xv, ks[0], out=ov)
        if not self.flip:
            np.maximum(ov, xv, out=ov)
            return [out]
        u = self.scratch.get("prelu", xv.shape, F32)
        np.multiply(xv, ks[1], out=u)
        np.maximum(ov, u, out=ov)
        ov *= ks[1]
        return [out]


@prepare(Op.PRELU)
def prepare_prelu(pctx):
    """Quantized: a table over (x, alpha element); float32: Prelu, when alpha is a finite constant."""
    table = constant_operand_table(pctx, "input", "alpha")
    if table is not None:
        return table
    alpha = pctx.args.alpha
    if _unary_input(pctx, (F32,)) is None or alpha is None:
        return None
    alpha = alpha.array
    if alpha.dtype != F32 or alpha.ndim == 0 or not np.all(np.isfinite(alpha)) or np.any(alpha == 0):
        return None   # (+inf * 0 is NaN where the kernel keeps +inf)
    return Prelu(pctx, alpha)
