"""Operations on constants only, computed once at compilation (a hybrid model's DEQUANTIZE of its int8
weights, a SQRT of a constant): the plain kernel's outputs are kept and handed out as constants. The
runtime (CompiledModel) puts them in every run's environment, leaves their operations out of the run,
and lets later operations' preparers see them as constants (Bound.with_constants), so a filter that a
DEQUANTIZE makes is prepared like any constant filter.

Not folded: control flow (a WHILE of constants may run until its timeout), an operation that writes a
model output (the caller may write into it), and one whose kernel fails on its constants (it reports
the problem when the model runs, as it would unfolded).
"""
from __future__ import annotations

from nnapi.codes import OperationCode as Op

NOT_FOLDED = frozenset({Op.IF, Op.WHILE})


class ConstantResult:
    """An operation of constants only: the plain kernel's outputs computed once and handed out on every
    run (kernels never write into their inputs)."""

    def __init__(self, pctx):
        self.results = pctx.run_kernel({})

    @property
    def constant_outputs(self) -> list:
        """The outputs, which later operations' preparers may treat as constants (executor/runtime.py)."""
        return self.results

    def __call__(self, ctx):
        return self.results


def constant_result(pctx):
    """A ConstantResult when every argument of the operation is a constant (or omitted, or folded before
    it), else None."""
    step = pctx.step
    if (step.bound.runtime or not step.inputs or step.code in NOT_FOLDED
            or any(o in pctx.model.outputs for o in step.outputs)):
        return None
    return ConstantResult(pctx)
