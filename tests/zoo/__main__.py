"""python -m tests.zoo [--only SUBSTRING] [--jobs N] [--seed N] [--doc FILE] [--json FILE]
                      [--update-baseline [--accept-regression MODEL ...]]

Runs every zoo model (or those whose id contains SUBSTRING) through `nnapi coverage`, `convert` and
`parity`, one process per model, prints a line per model as it finishes and compares each with
tests/zoo/baseline.json (tests/zoo/ratchet.py). A full run writes docs/zoo.md from the latest result of
every model; a run with --only writes a table only where --doc says.
Exit status: 0; 1 when a model does worse than its baseline, or when --update-baseline refuses to
loosen it; 3 for a bad manifest or arguments.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import manifest, ratchet, table
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
    if better:
        text += "  better: " + "; ".join(better)
    return text


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tests.zoo", description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", metavar="SUBSTRING", help="run only the models whose id contains SUBSTRING "
                   "(docs/zoo.md is then left alone; --doc FILE writes the table elsewhere)")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="models run at once (default 1)")
    p.add_argument("--seed", type=int, default=0, metavar="N",
                   help="seed of every model's first random sample (default 0, the seed the baseline records; "
                        "other seeds measure the noise margins of tests/zoo/ratchet.py)")
    p.add_argument("--update-baseline", action="store_true",
                   help="record these results in tests/zoo/baseline.json (the level CI holds models to); "
                        "figures only tighten, a model that got worse is refused unless --accept-regression names it")
    p.add_argument("--accept-regression", action="append", default=[], metavar="MODEL",
                   help="with --update-baseline: record MODEL (an exact id; repeatable) even where it got worse; "
                        "the change's note must say why")
    p.add_argument("--doc", metavar="FILE", help=f"the table to write (default {DOC}, on a full run only)")
    p.add_argument("--json", metavar="FILE", help="also write this run's rows as JSON")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        everything = manifest.load()
    except manifest.ManifestError as e:
        print(f"zoo manifest: {e}", file=sys.stderr)
        return 3
    models = manifest.select(everything, args.only)
    if not models:
        print(f"no zoo model id contains {args.only!r}", file=sys.stderr)
        return 3
    stray = sorted(set(args.accept_regression) - {m.id for m in models})
    if args.accept_regression and not args.update_baseline or stray:
        print("--accept-regression goes with --update-baseline and names models of this run"
              + (f"; not run: {stray}" if stray else ""), file=sys.stderr)
        return 3
    if args.update_baseline and args.seed != 0:
        print("--update-baseline records seed 0 runs only (the seed test_zoo.py runs)", file=sys.stderr)
        return 3
    baseline = ratchet.load()
    regressions = 0

    def report(k: int, row: dict) -> None:
        nonlocal regressions
        worse, better = ratchet.compare(row, baseline.get(row["id"]))
        regressions += bool(worse)
        print(_line(row, k, len(models), worse, better), flush=True)

    rows = run_all(models, jobs=args.jobs, on_row=report, seed=args.seed)
    if args.json:
        table.write_text(Path(args.json), json.dumps(rows, indent=1))
    if args.seed == 0:
        _write_table(rows, everything, args.doc or (None if args.only else str(DOC)))
    elif args.doc:
        table.write_text(Path(args.doc), table.render(rows))
    if args.update_baseline:
        # read again: another run may have recorded other models meanwhile
        data, refusals = ratchet.update(rows, ratchet.load(), set(args.accept_regression),
                                        {m.id for m in everything})
        if refusals:
            print("not updating tests/zoo/baseline.json: it would loosen these (rerun with --accept-regression "
                  "MODEL for each one you mean to accept, and say why in the change's note):", file=sys.stderr)
            for line in refusals:
                print(f"  {line}", file=sys.stderr)
            return 1
        ratchet.write(data)
        print(f"recorded {len(rows)} results in {ratchet.BASELINE}")
    elif regressions:
        print(f"{regressions} model(s) did worse than tests/zoo/baseline.json", file=sys.stderr)
        return 1
    return 0


def _write_table(rows: list[dict], everything: list, doc) -> None:
    """Keep the latest seed-0 result of every model (in the cache) and write the table of all of them."""
    store = cache_dir() / "zoo-results.json"
    latest = json.loads(store.read_text()) if store.exists() else {}
    latest.update({r["id"]: r for r in rows})
    table.write_text(store, json.dumps(latest))
    if doc is None:
        return
    shown = [latest[m.id] for m in everything if m.id in latest]
    missing = [m.id for m in everything if m.id not in latest]
    table.write_text(Path(doc), table.render(shown))
    print(f"wrote {doc} ({len(shown)} models" + (f"; {len(missing)} never run: {missing[:5]}" if missing else "")
          + ")")


if __name__ == "__main__":
    sys.exit(main())
