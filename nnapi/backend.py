"""The execution backend behind nnapi.Compilation / nnapi.Execution.

nnapi depends on no backend: a package that runs models registers itself here (the numpy reference
executor does so when `executor` is imported). The backend is what `register` was given a loader for:
an object with `compile_model(model)` (returning a compiled model with `.run(arrays, state)`) and
`RunState(loop_timeout_s)`."""
from __future__ import annotations

from typing import Callable, Optional

from .errors import bad_state

_loader: Optional[Callable[[], object]] = None


def register(loader: Callable[[], object]) -> None:
    """Make `loader()` the backend that compiles and runs models (the last registration wins)."""
    global _loader
    _loader = loader


def backend():
    if _loader is None:
        raise bad_state("no execution backend is registered: import executor (the numpy reference executor) "
                        "before compiling a model")
    return _loader()
