"""Generate the supported-ops tables (docs/supported-ops.md) from the converter registry.

    python -m converters.supported_ops            # rewrite docs/supported-ops.md
    python -m converters.supported_ops --check    # exit 1 when the committed file is stale
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .registry import REGISTRY

DOC = Path(__file__).resolve().parent.parent / "docs" / "supported-ops.md"
_NEWEST = 1 << 30


def _load_all() -> None:
    from . import tflite  # noqa: F401
    try:
        from . import onnx  # noqa: F401
    except ImportError:
        pass


def _versions(c) -> str:
    hi = "newest" if c.max_version >= _NEWEST else str(c.max_version)
    return f"{c.min_version}" if c.min_version == c.max_version else f"{c.min_version}–{hi}"


def render() -> str:
    _load_all()
    lines = ["# Supported source operators", "",
             "Generated from the converter registry by `python -m converters.supported_ops`; do not edit by hand.",
             "Each converter states the operator versions (TFLite) or opsets (ONNX) it accepts; what a node",
             "needs beyond that (types, attributes, feature level) is decided per node and shown by `nnapi coverage`.", ""]
    for fmt, title, vtitle in (("tflite", "TFLite builtins", "versions"), ("onnx", "ONNX operators", "opsets")):
        convs = sorted((c for (f, _), c in REGISTRY.items() if f == fmt), key=lambda c: c.op)
        lines += [f"## {title} ({len(convs)})", "", f"| operator | {vtitle} | family | notes |", "|---|---|---|---|"]
        for c in convs:
            doc = c.doc.replace("|", "\\|")
            lines.append(f"| {c.op} | {_versions(c)} | {c.family} | {doc} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail when docs/supported-ops.md is out of date")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        if not DOC.exists() or DOC.read_text() != text:
            print(f"{DOC} is out of date: run python -m converters.supported_ops", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
