"""Run zoo models each in its own process (a crash or a hang is that model's row), N at a time."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Callable, Optional

from .manifest import ZOO_DIR, ZooModel
from .run import row_head

REPO = ZOO_DIR.parent.parent
TIMEOUT_SECONDS = 1200


def _failed_row(model: ZooModel, seed: int, error: str) -> dict:
    return dict(row_head(model, seed), error=error, internal_error=True)


def run_one(model: ZooModel, seed: int = 0) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        proc = subprocess.run([sys.executable, "-m", "tests.zoo.run", model.id, "--seed", str(seed)], cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        return _failed_row(model, seed, f"timed out after {TIMEOUT_SECONDS} s")
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return _failed_row(model, seed, f"the run died (exit {proc.returncode}): {tail[:300]}")
    return json.loads(lines[-1])


def run_all(models: list[ZooModel], jobs: int = 1, on_row: Optional[Callable[[int, dict], None]] = None,
            seed: int = 0) -> list[dict]:
    """Rows in manifest order; `on_row(k, row)` is called as each finishes (k counts finished models)."""
    rows: list = [None] * len(models)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(run_one, m, seed): k for k, m in enumerate(models)}
        for done, fut in enumerate(as_completed(futures), 1):
            rows[futures[fut]] = fut.result()
            if on_row:
                on_row(done, rows[futures[fut]])
    return rows
