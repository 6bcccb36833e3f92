"""The one definition of the default parity tolerances (used by parity checks and tests).

- float32: max |diff| <= 1e-5 + 1e-4 * max |ref|
- float16 / relaxed models: max |diff| <= 5 * 2**-10 * (1 + max |ref|)
- quantized (integer outputs with quantization): <= 1 stored unit
- a float output that dequantizes a quantized tensor (TFLite DEQUANTIZE, ONNX DequantizeLinear):
  <= 1 step of that tensor's scale (--max-lsb N: N steps), plus the float32 floor
- other integer and bool outputs: exact
--atol / --rtol replace the float rules, --max-lsb the stored-unit count.

The spread rule (`nnapi parity --tolerance spread`) widens a float output's allowance by the source
framework's own disagreement with itself: allowed = factor * spread + the rule above, where spread is
the largest max |a - b| between the framework's kernel sets (LiteRT built-in / reference; onnxruntime
optimised / unoptimised) on the same inputs.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

FLOAT32_ATOL, FLOAT32_RTOL = 1e-5, 1e-4
FLOAT16_TOL = 5 * 2 ** -10


SPREAD_FACTOR = 2.0
SPREAD_MIN_OPERATIONS = 50   # float models with more source operations are judged by spread by default


def allowed_error(ref: np.ndarray, quantized: bool, relaxed: bool = False, atol: Optional[float] = None,
                  rtol: Optional[float] = None, max_lsb: Optional[int] = None, step: Optional[float] = None,
                  step_source: str = "", spread: Optional[float] = None, spread_factor: float = SPREAD_FACTOR,
                  spread_source: str = "") -> tuple[float, str]:
    """(allowed max abs error, where that tolerance comes from) for one reference output."""
    floor, origin = _fixed_allowed(ref, quantized, relaxed, atol, rtol, max_lsb, step, step_source)
    if spread is None or quantized or ref.dtype.kind not in "f":
        return floor, origin
    return spread_factor * spread + floor, (f"spread: {spread_factor:g} x {spread:.3g} (largest difference "
                                            f"between {spread_source}) + {origin} ({floor:.3g})")


def _fixed_allowed(ref, quantized, relaxed, atol, rtol, max_lsb, step, step_source) -> tuple[float, str]:
    peak = float(np.nanmax(np.abs(ref.astype(np.float64)))) if ref.size else 0.0
    lsb = 1 if max_lsb is None else max_lsb
    if ref.dtype.kind in "iub" and not quantized:
        return 0.0, "exact (integer output)"
    if quantized:
        return float(lsb), f"{lsb} stored unit(s)" + (" (--max-lsb)" if max_lsb is not None else "")
    if step is not None and atol is None and rtol is None:
        return lsb * step + FLOAT32_ATOL, (f"{lsb} step(s) of scale {step:g} of the quantized tensor {step_source}"
                                           f" + {FLOAT32_ATOL:g}")
    if relaxed or ref.dtype == np.float16:
        a, r = (atol if atol is not None else FLOAT16_TOL), (rtol if rtol is not None else FLOAT16_TOL)
        origin = "--atol/--rtol" if atol is not None or rtol is not None else "float16 / relaxed default"
    else:
        a, r = (FLOAT32_ATOL if atol is None else atol), (FLOAT32_RTOL if rtol is None else rtol)
        origin = "--atol/--rtol" if atol is not None or rtol is not None else "float32 default"
    return a + r * peak, f"{origin}: {a:g} + {r:g} * max|ref|"


def within_tolerance(ref: np.ndarray, got: np.ndarray, quantized: bool, relaxed: bool = False,
                     atol: Optional[float] = None, rtol: Optional[float] = None,
                     max_lsb: Optional[int] = None, step: Optional[float] = None,
                     step_source: str = "", spread: Optional[float] = None, spread_factor: float = SPREAD_FACTOR,
                     spread_source: str = "") -> tuple[bool, float, float]:
    """(ok, max abs error, allowed) comparing a converted output with the reference."""
    if ref.shape != got.shape:
        return False, float("inf"), 0.0
    if ref.size == 0:
        return True, 0.0, 0.0
    r, g = ref.astype(np.float64), got.astype(np.float64)
    err = float(np.abs(r - g).max())
    if np.isnan(g).any() != np.isnan(r).any():
        return False, float("nan"), 0.0
    allowed, _ = allowed_error(ref, quantized, relaxed, atol, rtol, max_lsb, step, step_source, spread,
                               spread_factor, spread_source)
    return err <= allowed, err, allowed
