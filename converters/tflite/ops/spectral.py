"""TFLite RFFT2D with its COMPLEX_ABS / REAL / IMAG consumers -> NNAPI FULLY_CONNECTED products
with constant DFT bases.

NNAPI has neither an FFT nor a complex type, but an RFFT of a known length is linear in its input:
for the last two axes (H, W) of x and fft_length (fh, fw), K = fw / 2 + 1,

    X[k1, k2] = sum over n1 < min(H, fh), n2 < min(W, fw) of x[n1, n2] * exp(-2 pi i (k1 n1 / fh + k2 n2 / fw))

(TFLite crops x to fft_length and zero-pads it, so cropped rows and columns get zero weights and the
padding needs none). Re X and Im X are FULLY_CONNECTED layers over the flattened H * W input with
constant [fh * K, H * W] cos / -sin matrices; |X| = SQRT(Re^2 + Im^2). The complex64 tensor never
reaches NNAPI: RFFT2D emits nothing and each consumer emits the product it needs (REAL the cosine
one, IMAG the sine one, COMPLEX_ABS both), so RFFT2D is supported only when every reader of its
output is one of these three.

Error bound (float32, unit roundoff u = 2^-24, N = min(H, fh) * min(W, fw) terms): the basis
entries are cos / sin of exactly reduced phases 2 pi ((k1 n1 mod fh) fw + (k2 n2 mod fw) fh) / (fh fw)
computed in float64 and rounded once (relative error <= u), and the float32 dot product adds at most
N - 1 roundings, so |computed - exact| <= gamma_{N+1} * sum |x[n1, n2]| for Re and Im, where
gamma_k = k u / (1 - k u); |X| adds at most 3 u |X| + sqrt(2) of that. LiteRT computes the FFT in
double precision, so the difference to LiteRT is within the same bound plus one float32 rounding.
COMPLEX_ABS squares the parts in float32: parts beyond about 1.8e19 overflow to inf where LiteRT's
hypot does not.
"""
from __future__ import annotations

import math

import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from ...registry import Reason, Unsupported, converter
from .common import name
from .nn_common import static_shape

CONSUMERS = ("COMPLEX_ABS", "REAL", "IMAG")
# the largest DFT basis emitted (elements of one [fh * K, H * W] matrix): 64 MiB of float32
MAX_BASIS_ELEMENTS = 1 << 24


def _producer(ctx, t: int):
    for node in ctx.graph.nodes:
        if t in node.outputs:
            return node
    return None


def rfft_plan(ctx, node) -> tuple:
    """(input shape, (fh, fw)) of an RFFT2D node NNAPI can compute, or Unsupported."""
    if len(node.inputs) != 2 or len(node.outputs) != 1:
        raise Unsupported(Reason.INVALID, f"RFFT2D has {len(node.inputs)} inputs and {len(node.outputs)} outputs; "
                                          f"it takes 2 and gives 1")
    x, length_i = node.inputs
    if np.dtype(ctx.tensor(x).dtype) != np.float32:
        raise Unsupported(Reason.OPERAND_TYPE, f"RFFT2D input {name(ctx, x)} must be float32")
    shape = static_shape(ctx, x, "input")
    if len(shape) < 2:
        raise Unsupported(Reason.RANK, f"RFFT2D input {name(ctx, x)} has rank {len(shape)}, needs at least 2")
    length = np.asarray(ctx.const_value(length_i, "fft_length")).reshape(-1)
    if length.size != 2 or any(n <= 0 or n & (n - 1) for n in length.tolist()):
        raise Unsupported(Reason.ATTRIBUTE, f"RFFT2D fft_length {length.tolist()} must be two powers of 2")
    fh, fw = (int(n) for n in length)
    basis = fh * (fw // 2 + 1) * shape[-2] * shape[-1]
    if basis > MAX_BASIS_ELEMENTS:
        raise Unsupported(Reason.ATTRIBUTE, f"RFFT2D of {name(ctx, x)}: its DFT basis would hold {basis} "
                                            f"elements, more than {MAX_BASIS_ELEMENTS}")
    return shape, (fh, fw)


def _basis(shape, fh: int, fw: int, part: str) -> np.ndarray:
    """The [fh * K, H * W] float32 matrix of cos (part 're') or -sin (part 'im') of the DFT phases."""
    h, w = shape[-2], shape[-1]
    k1, k2 = np.arange(fh), np.arange(fw // 2 + 1)
    n1, n2 = np.arange(h), np.arange(w)
    # the phase as an exact integer fraction of a turn: (k1 n1 fw + k2 n2 fh) / (fh fw)
    turns = ((np.outer(k1, n1) % fh * fw)[:, None, :, None] + (np.outer(k2, n2) % fw * fh)[None, :, None, :])
    angle = 2 * np.pi * (turns % (fh * fw)) / (fh * fw)
    values = np.cos(angle) if part == "re" else -np.sin(angle)
    values = values * ((n1 < fh)[None, None, :, None] & (n2 < fw)[None, None, None, :])  # cropped input: 0
    return values.reshape(fh * (fw // 2 + 1), h * w).astype(np.float32)


def _part(ctx, rfft_node, part: str) -> int:
    """The float32 operand [..., fh, K] of Re X ('re') or Im X ('im'), emitted once per model."""
    cache = ctx.__dict__.setdefault("rfft_parts", {})
    key = (rfft_node.outputs[0], part)
    if key in cache:
        return cache[key]
    shape, (fh, fw) = rfft_plan(ctx, rfft_node)
    x = rfft_node.inputs[0]
    rows, k = math.prod(shape[:-2]), fw // 2 + 1
    label = f"{ctx.tensor(rfft_node.outputs[0]).name}/{part}"
    flat = ctx.temp(OperandType(C.TENSOR_FLOAT32, [rows, shape[-2] * shape[-1]]), f"{label}/input_rows")
    ctx.emit_form(Op.RESHAPE, "default", [flat], input=ctx.operand(x),
                  shape=ctx.const(np.asarray([rows, shape[-2] * shape[-1]], np.int32)))
    prod = ctx.temp(OperandType(C.TENSOR_FLOAT32, [rows, fh * k]), f"{label}/rows")
    ctx.emit_form(Op.FULLY_CONNECTED, "default", [prod], input=flat,
                  weights=ctx.const(_basis(shape, fh, fw, part), name=f"{label}/dft_basis"),
                  bias=ctx.const(np.zeros(fh * k, np.float32)), fuse=ctx.i32(0))
    out = ctx.temp(OperandType(C.TENSOR_FLOAT32, [*shape[:-2], fh, k]), label)
    ctx.emit_form(Op.RESHAPE, "default", [out], input=prod,
                  shape=ctx.const(np.asarray([*shape[:-2], fh, k], np.int32)))
    cache[key] = out
    return out


def _check_consumer(ctx, node) -> None:
    if len(node.inputs) != 1 or len(node.outputs) != 1:
        raise Unsupported(Reason.INVALID, f"{node.op} takes 1 input and gives 1 output")
    if np.dtype(ctx.tensor(node.outputs[0]).dtype) != np.float32:
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.op} output {name(ctx, node.outputs[0])} must be float32 "
                                               f"(a complex64 input)")


@converter("tflite", "RFFT2D", versions=(1, 1))
def rfft2d(node, ctx):
    """RFFT2D read only by COMPLEX_ABS / REAL / IMAG: emits nothing, its consumers emit the DFT products."""
    rfft_plan(ctx, node)
    out = node.outputs[0]
    if out in ctx.graph.outputs:
        raise Unsupported(Reason.OPERAND_TYPE, f"RFFT2D output {name(ctx, out)} is a model output; NNAPI has no "
                                               f"complex type")
    for reader in (n for n in ctx.graph.nodes if out in n.inputs):
        if reader.op not in CONSUMERS:
            raise Unsupported(Reason.OPERAND_TYPE, f"RFFT2D output {name(ctx, out)} is read by {reader.label()}; "
                                                   f"NNAPI has no complex type, only COMPLEX_ABS, REAL and IMAG "
                                                   f"readers can be converted")
        _check_consumer(ctx, reader)
    readers = [n.index for n in ctx.graph.nodes if out in n.inputs]
    if ctx.node is node:  # (not when a consumer checks its producer)
        ctx.absorb(readers[0] if len(readers) == 1 else None, "computed by its consumers (no complex type)")


def _rfft_input(ctx, node):
    _check_consumer(ctx, node)
    producer = _producer(ctx, node.inputs[0])
    if producer is None or producer.op != "RFFT2D":
        raise Unsupported(Reason.OPERAND_TYPE, f"{node.op} input {name(ctx, node.inputs[0])} is complex and not "
                                               f"an RFFT2D output; NNAPI has no complex type")
    rfft2d(producer, ctx)  # the pair converts together or not at all (emits nothing)
    return producer


@converter("tflite", "REAL", "IMAG", versions=(1, 1))
def real_imag(node, ctx):
    """REAL / IMAG of an RFFT2D: its cosine / sine DFT product."""
    part = _part(ctx, _rfft_input(ctx, node), "re" if node.op == "REAL" else "im")
    shape = ctx.shape(node.outputs[0])
    ctx.emit_form(Op.RESHAPE, "default", [ctx.output(node.outputs[0])], input=part,
                  shape=ctx.const(np.asarray(shape, np.int32)))


@converter("tflite", "COMPLEX_ABS", versions=(1, 1))
def complex_abs(node, ctx):
    """COMPLEX_ABS of an RFFT2D: SQRT(Re^2 + Im^2) of its DFT products."""
    producer = _rfft_input(ctx, node)
    re, im = _part(ctx, producer, "re"), _part(ctx, producer, "im")
    dims = list(ctx.model.operands[re].type.dimensions)
    label = ctx.tensor(node.outputs[0]).name
    squares = []
    for p, tag in ((re, "re2"), (im, "im2")):
        sq = ctx.temp(OperandType(C.TENSOR_FLOAT32, dims), f"{label}/{tag}")
        ctx.emit_form(Op.MUL, "default", [sq], input1=p, input2=p, fuse=ctx.i32(0))
        squares.append(sq)
    total = ctx.temp(OperandType(C.TENSOR_FLOAT32, dims), f"{label}/sum")
    ctx.emit_form(Op.ADD, "default", [total], input1=squares[0], input2=squares[1], fuse=ctx.i32(0))
    ctx.emit_form(Op.SQRT, "default", [ctx.output(node.outputs[0])], input=total)
