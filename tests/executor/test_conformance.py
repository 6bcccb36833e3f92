"""The whole CTS vector copy through the conformance runner: no case of an
operation that has a kernel may fail."""
import io

from executor.conformance import run
from tests.conftest import CTS_DIR


def test_cts_vectors_have_no_failures():
    out = io.StringIO()
    result = run([str(CTS_DIR)], out=out)
    text = out.getvalue()
    assert result["passed"] + result["failed"] + result["skipped"] == 8602, text[-2000:]
    failures = [r for r in result["records"] if r["status"] in ("failed", "error")]
    assert not failures, "\n".join(f"{r['id']}: {r['message']}" for r in failures[:50])
    skipped = [r for r in result["records"] if r["status"] == "skipped"]
    assert not skipped, "\n".join(f"{r['id']}: {r['message']}" for r in skipped[:20])
    assert text.rstrip().splitlines()[-1] == (
        f"{result['passed']} passed, {result['failed']} failed, {result['skipped']} skipped")


def test_cts_vectors_pass_on_the_plain_kernels_too(monkeypatch):
    """With the compile-time fast paths off (--no-fast-paths), the plain kernels alone pass every vector:
    the semantics the fast paths must agree with is itself conformant."""
    from executor import runtime
    monkeypatch.setattr(runtime, "FAST_PATHS", False)
    out = io.StringIO()
    result = run([str(CTS_DIR)], out=out)
    failures = [r for r in result["records"] if r["status"] in ("failed", "error")]
    assert result["passed"] == 8602 and not failures, "\n".join(f"{r['id']}: {r['message']}" for r in failures[:50])


def test_no_fast_paths_really_switches_the_preparers_off():
    import numpy as np

    import nnapi
    from executor.runtime import compile_model
    from nnapi import OperandCode as C, OperandType, OperationCode as Op
    m = nnapi.Model()
    t = OperandType(C.TENSOR_FLOAT32, [2, 3])
    a, b = m.add_operand(t), m.add_operand(t)
    fuse = m.add_operand(OperandType(C.INT32))
    out = m.add_operand(t)
    m.set_operand_value(fuse, np.int32(0))
    m.add_operation(Op.ADD, [a, b, fuse], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()
    fast, plain = compile_model(m).steps[0], compile_model(m, fast_paths=False).steps[0]
    assert fast.run is not fast.kernel and plain.run is plain.kernel
