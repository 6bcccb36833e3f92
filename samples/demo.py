"""`nnapi demo`: load the bundled sample model, describe it, run it with the
executor and check the result against an independent numpy formula."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import nnapi

HERE = Path(__file__).resolve().parent


def run(out=sys.stdout) -> int:
    from converters.cli import random_inputs, run_model
    from converters.describe import model_text

    from .make_samples import demo_constants

    path = HERE / "demo.nnapi"
    model = nnapi.load(path)
    print(f"loaded {path.name}: {len(model.operands)} operands, {len(model.operations)} operations", file=out)
    print(model_text(model), file=out)
    (x,) = random_inputs(model, seed=0)
    (y,) = run_model(model, [x])
    bias, gain, shift = demo_constants()
    expected = np.clip((x + bias) * gain, 0.0, 6.0) - shift
    err = float(np.abs(y - expected).max())
    ok = err <= 1e-5 + 1e-4 * float(np.abs(expected).max())
    print(f"\nran {path.name} with the executor: output {y.dtype}{list(y.shape)}, "
          f"max |diff| vs numpy formula = {err:.3g} -> {'OK' if ok else 'MISMATCH'}", file=out)
    return 0 if ok else 1
