"""`nnapi view` and the `--format model-explorer` outputs of `coverage` and `parity` (the command-line
halves; converters/cli.py only declares the arguments and calls these)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..command_args import CliError, dims, input_shapes
from ..exit_codes import EXIT_OK
from . import ADAPTER_EXTENSION, ADAPTER_ID

# Model Explorer's adapter for each model format (built into ai-edge-model-explorer, or an extension)
ADAPTERS = {"tflite": ("builtin_tflite_flatbuffer", None), "onnx": ("onnx_adapter", "model_explorer_onnx"),
            "nnapi": (ADAPTER_ID, ADAPTER_EXTENSION)}


def coverage_command(reports: list, paths: list, args) -> None:
    """`nnapi coverage MODEL --format model-explorer -o cov.json` (--fail-under still applies after it)."""
    from .overlays import write_coverage_overlays
    try:
        written = write_coverage_overlays(reports, paths, args.output)
    except ValueError as e:
        raise CliError(str(e)) from None
    print("wrote Model Explorer node data: " + ", ".join(str(p) for p in written)
          + f" (open with: nnapi view {paths[0]} --node-data {written[0]} ...)")


def check_parity_args(args) -> None:
    """Before any work: the error overlay needs per-operation errors."""
    if args.format == "model-explorer" and not (args.layerwise or args.local):
        raise CliError("--format model-explorer draws per-operation errors: add --layerwise (or --local)")


def parity_text(report, args) -> str:
    """`nnapi parity --layerwise --format model-explorer`: the error overlay's JSON."""
    from .overlays import parity_overlay_text
    try:
        return parity_overlay_text(report, args.model)
    except ValueError as e:
        raise CliError(str(e)) from None


def _require_model_explorer(fmt: str):
    try:
        import model_explorer
        if fmt == "onnx":
            import model_explorer_onnx  # noqa: F401 (the ONNX adapter extension)
    except ImportError as e:
        from converters.dependencies import MissingDependency, optional_module
        raise MissingDependency(optional_module(e.name) or "model_explorer", "by nnapi view") from None
    return model_explorer


def overlays_for(args, fmt: str) -> list[tuple[str, str]]:
    """[(name, node data JSON)] for --coverage, --parity and every --node-data FILE."""
    out = []
    if (args.coverage or args.parity) and fmt == "nnapi":
        raise CliError("--coverage and --parity are computed from the source model: view the .tflite or "
                           ".onnx, or load an overlay written by `nnapi coverage/parity --format model-explorer` "
                           "with --node-data")
    from .overlays import coverage_overlays, node_key_function, parity_overlay
    key_of = node_key_function(args.model, fmt) if (args.coverage or args.parity) else None
    for f in args.node_data:
        p = Path(f)
        if not p.is_file():
            raise CliError(f"--node-data {f}: no such file")
        text = p.read_text()
        try:
            json.loads(text)
        except ValueError as e:
            raise CliError(f"--node-data {f}: not a JSON node data file ({e})") from None
        out.append((p.name, text))
    if args.parity:
        from converters import parity
        try:  # (a missing LiteRT / onnxruntime: exit 4 in the CLI's main)
            report = parity.check(args.model, feature_level=args.feature_level, layerwise=True,
                                  input_shapes=input_shapes(args), dims=dims(args))
        except parity.ParityError as e:
            raise CliError(str(e), e.exit_code) from None
        out.append(("parity error over tolerance", parity_overlay(report.as_dict(), key_of)))
    if args.coverage:
        from converters.coverage import report_for_path
        r = report_for_path(args.model, args.feature_level, input_shapes(args), dims(args))
        if "error" in r:
            raise CliError(r["error"])
        from .overlays import COVERAGE_FACETS
        titles = dict(COVERAGE_FACETS)
        # Model Explorer shows the last overlay loaded: the status goes last, so it is what one sees first
        out += [(titles[suffix], text) for suffix, text in reversed(coverage_overlays(r, key_of))]
    return out


def check_port(host: str, port: int) -> None:
    """Model Explorer looks for a free port itself only from its default 8080; a port given that is taken
    would make it exit 1, which here means a parity mismatch: refused first (exit 3)."""
    import socket
    if not 0 < port < 65536:
        raise CliError(f"--port {port}: not a port number (1-65535)")
    if port == 8080:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        if s.connect_ex((host, port)) == 0:
            raise CliError(f"--port {port}: something already listens on {host}:{port}")


def cmd_view(args) -> int:
    """Start Model Explorer on localhost with the model and its overlays; returns when it is stopped."""
    from converters.load import detect_format
    if not Path(args.model).is_file():
        raise CliError(f"{args.model}: no such file")
    fmt = detect_format(args.model)
    me = _require_model_explorer(fmt)
    check_port(args.host, args.port)
    overlays = overlays_for(args, fmt)
    adapter_id, extension = ADAPTERS[fmt]
    config = me.config()
    config.add_model_from_path(str(Path(args.model).resolve()), adapterId=adapter_id)
    for name, text in overlays:  # the page addresses each as node_data://NAME/INDEX: no "/" in NAME
        config.add_node_data(name=name.replace("/", "_"), node_data=text)
    print(f"nnapi view: {args.model} with {len(overlays)} overlay(s): " + (", ".join(n for n, _ in overlays) or "none"),
          file=sys.stderr)
    me.visualize_from_config(config=config, host=args.host, port=args.port,
                             extensions=[extension] if extension else [], no_open_in_browser=args.no_browser)
    return EXIT_OK
