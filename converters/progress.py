"""Mapping a function over models, in worker processes when asked, with a progress bar on a terminal."""
from __future__ import annotations

import sys
from pathlib import Path


def map_with_progress(fn, arg_tuples, jobs: int) -> list:
    """Run fn over the arguments (in worker processes when jobs > 1), with a tqdm bar on a terminal."""
    total = len(arg_tuples)
    results = [None] * total
    bar = None
    if sys.stderr.isatty() and total > 1:
        from tqdm import tqdm
        bar = tqdm(total=total, unit="model", file=sys.stderr, leave=False)
    try:
        if jobs <= 1 or total <= 1:
            for k, a in enumerate(arg_tuples):
                results[k] = fn(*a)
                if bar is not None:
                    bar.set_postfix_str(Path(a[0]).name)
                    bar.update(1)
        else:
            from concurrent.futures import ProcessPoolExecutor, as_completed
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                futures = {pool.submit(fn, *a): k for k, a in enumerate(arg_tuples)}
                for fut in as_completed(futures):
                    results[futures[fut]] = fut.result()
                    if bar is not None:
                        bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return results
