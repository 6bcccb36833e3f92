"""Every OperationCode has a kernel and a spec (or an explicit reason it has none)."""
from executor.registry import KERNELS, NOT_IMPLEMENTED, load_kernels, missing_reason
from nnapi import OperationCode
from nnapi.ops import SPECS


def test_every_operation_code_has_a_kernel():
    load_kernels()
    missing = [c.name for c in OperationCode if c not in KERNELS and c not in NOT_IMPLEMENTED]
    assert not missing, f"operation codes without a kernel: {missing}"
    assert missing_reason(OperationCode.OEM_OPERATION)  # the one deliberate gap says why


def test_every_operation_code_has_a_spec():
    missing = [c.name for c in OperationCode if c not in SPECS and c is not OperationCode.OEM_OPERATION]
    assert not missing, f"operation codes without a spec: {missing}"
