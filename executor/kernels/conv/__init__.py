"""The convolution family: CONV_2D, DEPTHWISE_CONV_2D and GROUPED_CONV_2D plain kernels (reference.py),
their quantized accumulation rule (quant.py), the compile-time fast paths, FULLY_CONNECTED's among them
(prepared.py; DEPTHWISE_CONV_2D's: depthwise.py), their GEMM building blocks (gemm.py),
TRANSPOSE_CONV_2D (transpose.py) and compiled float BATCH_MATMUL (batch_matmul.py)."""
from . import batch_matmul, depthwise, gemm, prepared, quant, reference, transpose  # noqa: F401  (registration)
