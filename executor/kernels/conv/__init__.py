"""The convolution family: CONV_2D, DEPTHWISE_CONV_2D and GROUPED_CONV_2D plain kernels (reference.py),
their quantized accumulation rule (quant.py), the compile-time fast paths (prepared.py;
DEPTHWISE_CONV_2D's: depthwise.py; FULLY_CONNECTED's: fully_connected.py), their GEMM building blocks
(gemm.py), TRANSPOSE_CONV_2D (transpose.py) and compiled float BATCH_MATMUL (batch_matmul.py)."""
from . import batch_matmul, depthwise, fully_connected, gemm, prepared, quant, reference, transpose  # noqa: F401  (registration)
