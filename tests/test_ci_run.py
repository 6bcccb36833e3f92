"""`.ci/run`, CI's entry point: it never goes green with tests silently skipped."""
import os
import shutil
import subprocess
from pathlib import Path

CI_RUN = Path(__file__).resolve().parents[1] / ".ci" / "run"


def _shim(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


def test_ci_fails_when_chromium_cannot_be_installed(tmp_path):
    # a PATH with no chromium, an apt-get that fails, and pip / python that only record that they ran:
    # without Chromium the HTML rendering test would skip, so the run must stop before the tests
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(shutil.which("dirname"), bin_dir / "dirname")
    _shim(bin_dir, "apt-get", 'echo "E: Unable to locate package chromium" >&2; exit 100')
    for tool in ("pip", "python"):
        _shim(bin_dir, tool, f'echo {tool} >> "{tmp_path}/ran"')
    proc = subprocess.run(["/bin/bash", str(CI_RUN)], env={"PATH": str(bin_dir), "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "chromium" in proc.stderr.lower()
    assert not (tmp_path / "ran").exists()
