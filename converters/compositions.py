"""Compositions of NNAPI operations for functions NNAPI has no operation for, shared by both importers.

Each takes an emitter `c` with four methods, whatever the source format's context:
`unary(op, x)`, `binary(op, a, b, out_code=None)`, `scalar(value)` (a one-element constant of the
chain's element type) and `select(cond, a, b, out=None)`; each returns the operand it wrote.

erf: NNAPI has no ERF and no finite composition of its ops computes erf exactly, so erf is the
Abramowitz & Stegun 7.1.26 approximation, for float32 and float16 tensors:

    erf(x) = sign(x) * (1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) * exp(-x^2)),  t = 1 / (1 + p |x|)

as ABS, MUL, ADD, DIV, NEG, EXP, LESS, SELECT (feature level 3). The formula's absolute error is at most
1.5e-7 for every x; evaluated in float32 (as the NNAPI ops do) it stays within 5.4e-7 of erf over
[-6, 6] (measured on 2e6 points; beyond, the result is exactly +-1, as erf is in float32). In float16 the
evaluation rounding dominates (about 1e-3). GELU's exact form 0.5 x (1 + erf(x / sqrt 2)) built on it
is within 2.7e-7 |x|.
"""
from __future__ import annotations

from nnapi import OperandCode as C
from nnapi import OperationCode as Op

ERF_P = 0.3275911
ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)  # a1 .. a5


def erf(c, x: int, out: int | None = None) -> int:
    """Emit erf(x) (the A&S 7.1.26 composition above) into out (a new temporary when None)."""
    ax = c.unary(Op.ABS, x)
    t = c.binary(Op.DIV, c.scalar(1.0), c.binary(Op.ADD, c.binary(Op.MUL, ax, c.scalar(ERF_P)), c.scalar(1.0)))
    poly = c.binary(Op.ADD, c.binary(Op.MUL, t, c.scalar(ERF_A[4])), c.scalar(ERF_A[3]))
    for a in reversed(ERF_A[:3]):  # Horner: ((a5 t + a4) t + a3) t + ...
        poly = c.binary(Op.ADD, c.binary(Op.MUL, poly, t), c.scalar(a))
    tail = c.binary(Op.MUL, c.binary(Op.MUL, poly, t), c.unary(Op.EXP, c.unary(Op.NEG, c.binary(Op.MUL, ax, ax))))
    magnitude = c.binary(Op.SUB, c.scalar(1.0), tail)
    negative = c.binary(Op.LESS, x, c.scalar(0.0), out_code=C.TENSOR_BOOL8)
    return c.select(negative, c.unary(Op.NEG, magnitude), magnitude, out=out)
