"""Kernel registry: every OperationCode maps to a kernel or an explicit reason it has none.

Kernel modules live in `executor/kernels/<family>.py`, or in a family package
`executor/kernels/<family>/` (plain kernels in reference.py, fast paths in
prepared.py), and register with the `@kernel(OperationCode.X)` decorator;
every module of that package is imported by `load_kernels()` (a family
package's __init__ imports its modules), so adding a family is adding a file.

A module may also register `@prepare(OperationCode.X)`: a function called once
at compilation with a PrepareContext (executor/runtime.py) that returns a
specialized `run(ctx) -> list[np.ndarray]` for that operation (weights laid out,
parameters parsed), or None when it cannot specialize (e.g. a filter that is
not constant); the plain kernel then runs.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Callable

from nnapi.codes import OperationCode

KERNELS: dict[OperationCode, Callable] = {}
PREPARERS: dict[OperationCode, Callable] = {}

# Codes that deliberately have no kernel, with the reason (shown by the
# conformance runner and the coverage report).
NOT_IMPLEMENTED: dict[OperationCode, str] = {
    OperationCode.OEM_OPERATION: "OEM_OPERATION is deprecated since feature level 3 and has no defined semantics",
}


def _registrar(table: dict, what: str):
    def register(*codes: OperationCode):
        def deco(fn):
            for code in codes:
                if code in table:
                    raise ValueError(f"two {what} for {code.name}")
                table[code] = fn
            return fn
        return deco
    return register


# `@kernel(codes...)` registers `fn(ctx) -> list[np.ndarray]`; `@prepare(codes...)` registers a
# compile-time specializer `fn(pctx) -> run(ctx) | None`
kernel = _registrar(KERNELS, "kernels")
prepare = _registrar(PREPARERS, "preparers")


_loaded = False


def load_kernels() -> dict[OperationCode, Callable]:
    global _loaded
    if not _loaded:
        from . import kernels
        for info in pkgutil.iter_modules(kernels.__path__):
            importlib.import_module(f"{kernels.__name__}.{info.name}")
        _loaded = True
    return KERNELS


def missing_reason(code: OperationCode) -> str | None:
    """None when `code` has a kernel, else why not."""
    load_kernels()
    if code in KERNELS:
        return None
    return NOT_IMPLEMENTED.get(code, f"no kernel for {code.name} yet")
