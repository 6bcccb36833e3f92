"""python -m tests.zoo [--only SUBSTRING] [--jobs N] [--update-baseline]

Runs every zoo model (or those whose id contains SUBSTRING) through `nnapi coverage`, `convert` and
`parity`, one process per model, prints a line per model as it finishes, compares each with
tests/zoo/baseline.json, and writes docs/zoo.md from the latest result of every model.
Exit status: 0, or 1 when a model does worse than its baseline.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import manifest, table
from .fetch import cache_dir
from .runner import run_all

DOC = manifest.ZOO_DIR.parent.parent / "docs" / "zoo.md"


def _line(row: dict, k: int, total: int, worse: list, better: list) -> str:
    nodes = f"{row['supported_nodes']}/{row['nodes']} nodes" if row.get("nodes") is not None else ""
    text = f"[{k}/{total}] {row['id']}: {row['status']} {nodes}, parity {row.get('parity', 'n/a')}"
    if row.get("error"):
        text += f" -- {row['error']}"
    if worse:
        text += "  WORSE: " + "; ".join(worse)
    if better and better != ["new model (no baseline entry yet)"]:
        text += "  better: " + "; ".join(better)
    return text


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.zoo", description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", metavar="SUBSTRING", help="run only the models whose id contains SUBSTRING")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="models run at once (default 1)")
    p.add_argument("--update-baseline", action="store_true",
                   help="record these results as tests/zoo/baseline.json (the level CI holds models to)")
    p.add_argument("--doc", default=str(DOC), metavar="FILE", help=f"the table to write (default {DOC})")
    p.add_argument("--json", metavar="FILE", help="also write this run's rows as JSON")
    args = p.parse_args(argv)
    try:
        models = manifest.select(manifest.load(), args.only)
    except manifest.ManifestError as e:
        print(f"zoo manifest: {e}", file=sys.stderr)
        return 3
    if not models:
        print(f"no zoo model id contains {args.only!r}", file=sys.stderr)
        return 3
    baseline = table.load_baseline()
    regressions = 0

    def report(k: int, row: dict) -> None:
        nonlocal regressions
        worse, better = table.compare(row, baseline.get(row["id"]))
        regressions += bool(worse)
        print(_line(row, k, len(models), worse, better), flush=True)

    rows = run_all(models, jobs=args.jobs, on_row=report)
    # docs/zoo.md shows the latest result of every model, this run's and earlier runs'
    store = cache_dir() / "zoo-results.json"
    latest = json.loads(store.read_text()) if store.exists() else {}
    latest.update({r["id"]: r for r in rows})
    table._atomic_text(store, json.dumps(latest))
    everything = manifest.load()
    shown = [latest[m.id] for m in everything if m.id in latest]
    missing = [m.id for m in everything if m.id not in latest]
    table._atomic_text(Path(args.doc), table.render(shown))
    print(f"wrote {args.doc} ({len(shown)} models" + (f"; {len(missing)} never run: {missing[:5]}" if missing else "")
          + ")")
    if args.json:
        table._atomic_text(Path(args.json), json.dumps(rows, indent=1))
    if args.update_baseline:
        table.write_baseline(rows, keep=baseline)
        print(f"recorded {len(rows)} results in {table.BASELINE}")
    elif regressions:
        print(f"{regressions} model(s) did worse than tests/zoo/baseline.json", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
