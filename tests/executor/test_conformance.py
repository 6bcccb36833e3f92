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
