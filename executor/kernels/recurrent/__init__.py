"""The recurrent family: RNN and SVDF (rnn.py), the float LSTMs (lstm.py), the quantized LSTMs
(quant.py) and what the float kernels share (common.py). Importing the package registers their
kernels; the compile-time fast paths are prepared.py."""
from . import lstm, prepared, quant, rnn  # noqa: F401  (registration)
