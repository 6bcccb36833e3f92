"""The execution backend behind nnapi.Compilation / nnapi.Execution.

nnapi depends on no backend: a package that runs models registers itself here (the numpy reference
executor does so when `executor` is imported). The backend is what `register` was given a loader for:
an object with `compile_model(model)` (returning a compiled model with `.run(arrays, state)`) and
`RunState(loop_timeout_s)`.

So that `import nnapi` alone still runs models, a program that registered nothing gets the backend an
installed package advertises under the entry-point group `nnapi.backends` (this project's pyproject
names the numpy executor there): loading the entry point imports that package, which registers itself.
nnapi names no backend module in its code."""
from __future__ import annotations

from typing import Callable, Optional

from .errors import bad_state

_loader: Optional[Callable[[], object]] = None


def register(loader: Callable[[], object]) -> None:
    """Make `loader()` the backend that compiles and runs models (the last registration wins)."""
    global _loader
    _loader = loader


ENTRY_POINT_GROUP = "nnapi.backends"


def _advertised() -> None:
    """Load the first (by name) installed `nnapi.backends` entry point, which registers its backend."""
    from importlib.metadata import entry_points
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        ep.load()
        if _loader is not None:
            return


def backend():
    if _loader is None:
        _advertised()
    if _loader is None:
        raise bad_state("no execution backend is registered: import executor (the numpy reference executor) "
                        "before compiling a model")
    return _loader()
