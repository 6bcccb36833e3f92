"""What make_keras3_models.py and make_modern_torch.py share: atomic writes and their manifests'
TOML (standard library only: each script runs in its own throwaway venv)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def toml_value(v) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(v) if isinstance(v, float) else str(v)


def manifest_blocks(manifest: Path) -> dict:
    """{model id: its `[[model]]` table as written} of a generated manifest (empty if there is none)."""
    out = {}
    if manifest.exists():
        for block in manifest.read_text().split("[[model]]\n")[1:]:
            ident = block.split('id = "', 1)[1].split('"', 1)[0]
            out[ident] = "[[model]]\n" + block.rstrip("\n") + "\n"
    return out


def known_gaps(manifest: Path) -> dict:
    """{model id: its `known_gap = ...` line}: what the converter does with a file (measured and written
    by hand), not how the file was made, so a rerun of the script keeps these lines."""
    return {ident: line for ident, block in manifest_blocks(manifest).items()
            for line in block.splitlines() if line.startswith("known_gap = ")}
