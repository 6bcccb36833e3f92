"""Operation specs, one module per op family; `SPECS` maps OperationCode -> OpSpec.

Family modules call `register(OpSpec(...))`; every module in this package is
imported here, so adding a family is adding a file.
"""
from __future__ import annotations

import importlib
import pkgutil

from ..codes import OperationCode
from .spec import OpSpec

SPECS: dict[OperationCode, OpSpec] = {}


def register(spec: OpSpec) -> OpSpec:
    if spec.code in SPECS:
        raise ValueError(f"two specs for {spec.code.name}")
    SPECS[spec.code] = spec
    return spec


def spec_for(code) -> OpSpec | None:
    return SPECS.get(OperationCode(code))


def level_for(code, **types) -> int | None:
    """The feature level from which NNAPI operation `code` accepts operands of these types (see
    OpSpec.level_for): the question converters ask instead of writing levels down."""
    return SPECS[OperationCode(code)].level_for(**types)


def _load_families() -> None:
    for info in pkgutil.iter_modules(__path__):
        if info.name not in ("spec", "rules", "inference"):   # the framework, not families
            importlib.import_module(f"{__name__}.{info.name}")


_load_families()
