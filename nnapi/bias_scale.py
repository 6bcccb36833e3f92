"""The quantized bias rule, stated once for the op specs and both importers.

A quantized convolution / fully connected / LSTM bias is int32 with zero point 0 and scale
input scale x filter scale, the product taken in float32. NNAPI's reference CPU implementation
(GetQuantizedConvolutionMultipler, like TFLite's kernels) accepts a stored bias scale within
1e-6 x the smaller of the two scales of that product; so do the specs' validation and the importers'
checks of a source model's bias."""
from __future__ import annotations

import numpy as np

# relative tolerance of a bias scale against input scale x filter scale (of the smaller of the two)
BIAS_SCALE_RTOL = 1e-6


def bias_scale(input_scale, filter_scale):
    """input scale x filter scale in float32 (per channel when `filter_scale` is an array); a float for
    scalars. An overflow gives inf, which no check accepts."""
    with np.errstate(over="ignore", invalid="ignore"):
        product = np.float32(input_scale) * np.asarray(filter_scale, np.float32)
    return float(product) if product.ndim == 0 else product


def bias_scale_matches(scale, input_scale, filter_scale) -> bool:
    """Whether bias scale(s) `scale` equal input scale x filter scale(s) under NNAPI's tolerance."""
    have = np.asarray(scale, np.float64)
    want = np.asarray(bias_scale(input_scale, filter_scale), np.float64)
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.abs(have - want) <= BIAS_SCALE_RTOL * np.minimum(np.abs(have), np.abs(want))))
