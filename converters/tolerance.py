"""The one definition of the default parity tolerances (used by parity checks and tests).

- float32: max |diff| <= 1e-5 + 1e-4 * max |ref|
- float16 / relaxed models: max |diff| <= 5 * 2**-10 * (1 + max |ref|)
- quantized (integer outputs with quantization): <= 1 stored unit
- other integer and bool outputs: exact
"""
from __future__ import annotations

from typing import Optional

import numpy as np

FLOAT32_ATOL, FLOAT32_RTOL = 1e-5, 1e-4
FLOAT16_TOL = 5 * 2 ** -10


def within_tolerance(ref: np.ndarray, got: np.ndarray, quantized: bool, relaxed: bool = False,
                     atol: Optional[float] = None, rtol: Optional[float] = None,
                     max_lsb: Optional[int] = None) -> tuple[bool, float, float]:
    """(ok, max abs error, allowed) comparing a converted output with the reference."""
    if ref.shape != got.shape:
        return False, float("inf"), 0.0
    if ref.size == 0:
        return True, 0.0, 0.0
    r, g = ref.astype(np.float64), got.astype(np.float64)
    err = float(np.abs(r - g).max())
    if np.isnan(g).any() != np.isnan(r).any():
        return False, float("nan"), 0.0
    if ref.dtype.kind in "iub" and not quantized:
        allowed = 0.0
    elif quantized:
        allowed = float(1 if max_lsb is None else max_lsb)
    elif relaxed or ref.dtype == np.float16:
        allowed = (atol if atol is not None else FLOAT16_TOL) + (rtol if rtol is not None else FLOAT16_TOL) * float(np.nanmax(np.abs(r)))
    else:
        allowed = (FLOAT32_ATOL if atol is None else atol) + (FLOAT32_RTOL if rtol is None else rtol) * float(np.nanmax(np.abs(r)))
    return err <= allowed, err, allowed
