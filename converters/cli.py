"""The `nnapi` command line.

Exit codes (stable): 0 ok, 1 parity mismatch, 2 unsupported operation(s),
3 invalid model or input, 4 missing optional dependency.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

EXIT_OK, EXIT_MISMATCH, EXIT_UNSUPPORTED, EXIT_INVALID, EXIT_MISSING_DEPENDENCY = 0, 1, 2, 3, 4
DASK_HELP = ("batch: run the per-model tasks on an existing Dask distributed cluster, e.g. tcp://scheduler:8786 "
             "(the same rows, in the same order, as a local run; every worker needs nnapi-convert installed and the "
             "model paths readable; needs the scale extra: pip install 'nnapi-convert[scale]'; exit 4 without it)")


class CliError(Exception):
    """An error to show to the user (one line, no traceback) with an exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_INVALID):
        super().__init__(message)
        self.exit_code = exit_code


def _load_nnapi(path: str):
    import nnapi
    p = Path(path)
    if not p.exists():
        raise CliError(f"{path}: no such file")
    return nnapi.load(p)


def check_output_folder(command: str, out: str | None) -> None:
    """The folder an -o path goes into must exist: checked before any work, so a typo in the path is
    one clear error (exit 3) instead of a finished computation with nowhere to go. `export` writes the
    folder itself, so there it is the folder's parent that must exist."""
    if not out:
        return
    parent = Path(out).parent
    what = "the folder that would hold the export folder" if command == "export" else "the output folder"
    if not parent.exists():
        raise CliError(f"-o {out}: {what} {str(parent)!r} does not exist (create it first)")
    if not parent.is_dir():
        raise CliError(f"-o {out}: {str(parent)!r} is not a folder")


def _write_output(text: str, out: str | None) -> None:
    if out:
        from nnapi.serialize import atomic_write
        atomic_write(out, text.encode())
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


# -- subcommands --------------------------------------------------------------

def cmd_inspect(args) -> int:
    from .describe import model_dict, model_text
    model = _load_nnapi(args.model)
    text = json.dumps(model_dict(model), indent=1) if args.format == "json" else model_text(model)
    _write_output(text, args.output)
    return EXIT_OK


def cmd_run(args) -> int:
    from nnapi.state import carry, initial_values, non_state_inputs

    from .running import npz_bytes, npz_output_keys, random_inputs, run_model
    model = _load_nnapi(args.model)
    if args.steps < 1:
        raise CliError(f"--steps {args.steps}: at least 1 step")
    state = initial_values(model)  # {state input position: value} of the next execution
    given = None
    if args.inputs:
        try:
            data = np.load(args.inputs, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise CliError(f"{args.inputs}: cannot read inputs ({e})")
        names = [model.operands[i].name or f"input{k}" for k, i in enumerate(model.inputs)]
        keys = {k: n if n in data else f"input{k}" for k, n in enumerate(names)}
        missing = [names[k] for k in non_state_inputs(model) if keys[k] not in data]
        if missing:
            raise CliError(f"{args.inputs}: missing arrays for inputs {missing} (have {sorted(data.files)})")
        given = {k: np.asarray(data[key]) for k, key in keys.items() if key in data}
        state.update({k: v for k, v in given.items() if k in state})  # a state input named: its first value
    for step in range(args.steps):
        fresh = given if given is not None else dict(enumerate(random_inputs(model, args.seed + step)))
        outputs = run_model(model, [state[k] if k in state else fresh[k] for k in range(len(model.inputs))])
        state = carry(model, outputs)
    if args.steps > 1 or model.state:
        print(f"after {args.steps} step(s); state carried: "
              + (", ".join(f"{v.variable!r} (output {v.output} -> input {v.input})" for v in model.state) or "none"))
    keys = npz_output_keys([model.operands[o].name for o in model.outputs])
    for key, arr in zip(keys, outputs):
        stats = f"min {arr.min():.6g} max {arr.max():.6g} mean {arr.astype(np.float64).mean():.6g}" if arr.size else "empty"
        print(f"{key}: {arr.dtype}{list(arr.shape)} {stats}")
    if args.output:
        from nnapi.serialize import atomic_write
        atomic_write(args.output, npz_bytes(keys, outputs))
    return EXIT_OK


def _convert(args, partial: bool):
    from .load import detect_format, importer, parse_dims, parse_input_shapes
    from .source_graph import SourceError
    try:
        shapes = parse_input_shapes(getattr(args, "input_shape", []))
        dims = parse_dims(getattr(args, "dim", []))
        fmt = detect_format(args.model)
        if fmt == "nnapi":
            raise CliError(f"{args.model} is already an NNAPI model")
        extra = {}
        if getattr(args, "signature", None):
            if fmt != "tflite":
                raise CliError("--signature applies to .tflite models only")
            extra["signature"] = args.signature
        result = importer(fmt).convert(args.model, feature_level=args.feature_level, input_shapes=shapes,
                                       partial=partial, dims=dims, **extra)
    except (SourceError, ValueError) as e:
        raise CliError(str(e), EXIT_INVALID) from None
    return result


def unsupported_lines(result) -> list[str]:
    return [f"  node {n.index} {n.op} (v{n.version}) [{n.reason_code}]: {n.reason}" for n in result.unsupported]


def cmd_convert(args) -> int:
    from nnapi.serialize import atomic_write, file_pieces
    from .convert import ConversionError
    from .pins import for_result, sentences
    try:
        result = _convert(args, args.partial)
    except ConversionError as e:
        raise CliError(str(e), EXIT_INVALID) from None
    out = Path(args.output)
    if result.complete:
        atomic_write(out, file_pieces(result.model))
        m = result.model
        print(f"wrote {out}: {len(m.operations)} NNAPI operations, {len(m.operands)} operands, "
              f"feature level {m.min_feature_level()} (target {args.feature_level})")
        for name, how in result.io_rewrites.items():
            print(f"  note: model input/output {name!r}: {how}")
        for n in result.nodes:
            if n.note and n.nnapi_ops:  # e.g. hybrid weights dequantized, a PAD folded into a convolution
                print(f"  note: node {n.index} ({n.op}): {n.note}")
        for v in m.state:
            print(f"  note: state {v.variable!r}: output {v.output} -> input {v.input} between executions "
                  f"(initial value stored in the file)")
        return EXIT_OK
    if not args.partial:
        print(f"nnapi convert: {len(result.unsupported)} of {len(result.nodes)} nodes cannot be converted at "
              f"feature level {args.feature_level}:", file=sys.stderr)
        print("\n".join(unsupported_lines(result)), file=sys.stderr)
        for line in sentences(for_result(result)):
            print(line, file=sys.stderr)
        print("use --partial to write the NNAPI partitions and a manifest", file=sys.stderr)
        return EXIT_UNSUPPORTED
    from .partitions_file import write_partitions
    count = write_partitions(result, out, args.model, args.feature_level)
    print(f"wrote {count} partition(s) and {out.stem}.partitions.json; "
          f"{len(result.unsupported)} node(s) fall back to the CPU:")
    print("\n".join(unsupported_lines(result)))
    return EXIT_OK


def _input_shapes(args) -> dict:
    """The --input-shape pins; a malformed one is a usage error."""
    from .load import parse_input_shapes
    try:
        return parse_input_shapes(args.input_shape)
    except ValueError as e:
        raise CliError(str(e))


def _dims(args) -> dict:
    """The --dim pins; a malformed one is a usage error."""
    from .load import parse_dims
    try:
        return parse_dims(args.dim)
    except ValueError as e:
        raise CliError(str(e))


def cmd_coverage(args) -> int:
    from .coverage import find_models, report_for_path
    from .coverage_render import render, render_batch
    shapes = _input_shapes(args)
    level = 8 if args.feature_level == "all" else int(args.feature_level)
    paths = find_models(args.models)
    if not paths:
        raise CliError("no .tflite or .onnx models found in " + ", ".join(args.models))
    dims = _dims(args)
    if args.lens != "converter" or args.device or args.device_profile or args.delegate_option:
        from .lenses.report import lens_report_for_path, parse_lenses
        try:
            lenses = parse_lenses(args.lens)
        except ValueError as e:
            raise CliError(str(e))
        reports = _run_batch(lens_report_for_path, [(p, level, shapes, lenses, args.delegate_option, args.device,
                                                     args.device_profile, dims) for p in paths], args)
    else:
        reports = _run_batch(report_for_path, [(p, level, shapes, dims) for p in paths], args)
    if args.format == "model-explorer":
        from .viz.view import coverage_command
        coverage_command(reports, paths, args)
    elif len(args.models) == 1 and len(paths) == 1 and not Path(args.models[0]).is_dir():
        r = reports[0]
        if "error" in r:
            raise CliError(r["error"], EXIT_INVALID if r.get("error_kind") == "invalid_model" else EXIT_INVALID)
        _write_output(render(r, args.format), args.output)
    else:
        _write_output(render_batch(reports, args.format), args.output)
    if args.fail_under is not None:
        low = [r for r in reports if "error" not in r and r["summary"]["supported_fraction"] < args.fail_under]
        if low:
            for r in low:
                print(f"nnapi coverage: {r['model']}: {r['summary']['supported_fraction']:.3f} of nodes on NNAPI, "
                      f"below --fail-under {args.fail_under}", file=sys.stderr)
            return EXIT_UNSUPPORTED
    return EXIT_OK


def _run_batch(fn, arg_tuples, args) -> list:
    """The per-model tasks of a batch (converters/batch.py): here, in --jobs processes or on --dask's cluster."""
    from .batch import BatchDependencyMissing, run
    try:
        return run(fn, arg_tuples, args.jobs, args.dask)
    except BatchDependencyMissing as e:
        raise CliError(str(e), EXIT_MISSING_DEPENDENCY) from None


def cmd_parity(args) -> int:
    from . import parity
    from .parity_render import render
    from .runners import MissingDependency
    from .source_graph import SourceError
    from .viz.view import check_parity_args, parity_text
    check_parity_args(args)
    shapes = _input_shapes(args)
    options = dict(feature_level=args.feature_level, reference=args.reference, inputs=args.inputs, seed=args.seed,
                   samples=args.samples, layerwise=args.layerwise, partial=args.partial, input_shapes=shapes,
                   dims=_dims(args), atol=args.atol, rtol=args.rtol, max_lsb=args.max_lsb, tolerance=args.tolerance,
                   spread_factor=args.spread_factor, preprocess=args.preprocess, steps=args.steps,
                   local=args.local or None, exact=args.exact)
    if len(args.model) > 1 or Path(args.model[0]).is_dir():  # a batch: one row per model (converters/batch.py)
        from .batch import parity_exit_code, parity_row, render_parity_batch
        from .coverage import find_models
        if args.converted:
            raise CliError("--model names one converted file; give one source model with it")
        if args.format == "model-explorer":
            raise CliError("--format model-explorer overlays one model's graph; give one model")
        paths = find_models(args.model)
        if not paths:
            raise CliError("no .tflite or .onnx models found in " + ", ".join(args.model))
        rows = _run_batch(parity_row, [(p, options) for p in paths], args)
        _write_output(render_parity_batch(rows, args.format), args.output)
        return parity_exit_code(rows)
    args.model = args.model[0]
    bar = None

    def progress(k: int, total: int) -> None:   # a bar on a terminal for several samples, nothing otherwise
        nonlocal bar
        if bar is None and total > 1 and sys.stderr.isatty() and args.format != "json":
            from tqdm import tqdm
            bar = tqdm(total=total, desc="parity", unit="sample", file=sys.stderr, leave=False)
        if bar is not None:
            bar.update(1)
    try:
        report = parity.check(args.model, converted=args.converted, progress=progress, **options)
    except MissingDependency as e:
        raise CliError(str(e), EXIT_MISSING_DEPENDENCY) from None
    except parity.ParityError as e:
        if e.pins is not None and args.format == "json":  # a refused conversion: what would unlock it
            _write_output(json.dumps({"model": Path(args.model).name, "passed": False, "error": str(e), **e.pins},
                                     indent=1), args.output)
        raise CliError(str(e), e.exit_code) from None
    except SourceError as e:
        raise CliError(str(e), EXIT_INVALID) from None
    finally:
        if bar is not None:
            bar.close()
    _write_output(parity_text(report, args) if args.format == "model-explorer" else render(report, args.format),
                  args.output)
    return EXIT_OK if report.passed else EXIT_MISMATCH


def cmd_bench(args) -> int:
    from .bench import bench
    from .bench_render import render_text
    from .runners import MissingDependency
    from .source_graph import SourceError
    shapes = _input_shapes(args)
    try:
        if args.threads < 1 or args.runs < 1 or args.warmup < 0:
            raise CliError("--threads and --runs must be at least 1, --warmup at least 0")
        r = bench(args.model, args.vs, args.threads, args.runs, args.warmup, shapes, profile=args.profile,
                  dims=_dims(args), clock=args.clock)
    except MissingDependency as e:
        raise CliError(str(e), EXIT_MISSING_DEPENDENCY) from None
    except (SourceError, ValueError) as e:
        raise CliError(str(e), EXIT_UNSUPPORTED if "cannot be converted" in str(e) else EXIT_INVALID) from None
    if args.format == "json":
        text = json.dumps(r, indent=1)
    else:
        text = render_text(r, args.profile)
    _write_output(text, args.output)
    return EXIT_OK


def cmd_export(args) -> int:
    from .export import ExportError, export_c
    try:
        paths = export_c(args.model, args.output, name=args.name, feature_level=args.feature_level)
    except ExportError as e:
        if e.details:
            print(f"nnapi export: {e}:", file=sys.stderr)
            print("\n".join(f"  {d}" for d in e.details), file=sys.stderr)
            return e.exit_code
        raise CliError(str(e), e.exit_code) from None
    print(f"wrote {args.output}: " + ", ".join(p.name for p in paths))
    return EXIT_OK


def _cmd_view(args) -> int:
    from .viz.view import cmd_view
    return cmd_view(args)


def cmd_demo(args) -> int:
    from . import demo
    return demo.run(out=sys.stdout)


# -- parser -------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    """Usage errors are invalid input (exit 3), never confused with exit 2 (unsupported operations)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_INVALID, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="nnapi",
        description="Convert TFLite/ONNX models to Android NNAPI models, run them with a numpy reference "
                    "executor, and check coverage and parity.",
        epilog="exit codes: 0 ok, 1 parity mismatch, 2 unsupported operation(s), 3 invalid model or input, "
               "4 missing optional dependency",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser(
        "convert", help="convert a .tflite or .onnx model to a .nnapi model",
        description="Converts every node of a .tflite or .onnx model into NNAPI operations for the target feature "
                    "level and writes one .nnapi file. If any node cannot be converted it writes nothing, lists "
                    "every such node with its reason code and exits 2; with --partial it writes each NNAPI "
                    "partition as OUT.partK.nnapi plus OUT.partitions.json (partitions, CPU fallback nodes, "
                    "boundary tensors). Example: nnapi convert mobilenet.tflite -o mobilenet.nnapi "
                    "--feature-level 4 --input-shape input=1,224,224,3. Exit 0 ok, 2 unsupported nodes, "
                    "3 invalid model or arguments.")
    s.add_argument("model", help="the source model (.tflite or .onnx)")
    s.add_argument("-o", "--output", required=True, metavar="OUT.nnapi",
                   help="the .nnapi file to write (with --partial: the stem of the partition files)")
    s.add_argument("--feature-level", type=int, default=8, choices=range(1, 9), metavar="N",
                   help="target NNAPI feature level 1-8 (default 8)")
    s.add_argument("--input-shape", action="append", default=[], metavar="NAME=DIMS",
                   help="pin an input's dimensions, e.g. input=1,224,224,3 (repeatable)")
    s.add_argument("--dim", action="append", default=[], metavar="SYMBOL=N",
                   help="ONNX: pin a named dimension (dim_param) wherever it appears, e.g. batch=1 (repeatable)")
    s.add_argument("--partial", action="store_true",
                   help="write each NNAPI partition plus a JSON manifest instead of failing on unsupported nodes")
    s.add_argument("--signature", metavar="KEY",
                   help="TFLite: convert the subgraph of this signature (default: subgraph 0)")
    s.set_defaults(func=cmd_convert)

    s = sub.add_parser(
        "run", help="run a .nnapi model with the executor",
        description="Runs a .nnapi model once with the numpy reference executor and prints each output's dtype, "
                    "shape, min, max and mean. Example: nnapi run model.nnapi --inputs in.npz -o out.npz")
    s.add_argument("model", help="the .nnapi model")
    s.add_argument("--inputs", metavar="FILE.npz", help="input arrays keyed by input operand name, or input0, input1, ... (default: seeded random "
                        "inputs in each input's natural range)")
    s.add_argument("--seed", type=int, default=0, help="seed for random inputs (default 0; step k uses seed + k)")
    s.add_argument("--steps", type=int, default=1, metavar="K",
                   help="run K consecutive executions, each state output of a stateful model fed to its state input "
                        "in the next (the first gets the initial values stored in the model; default 1)")
    s.add_argument("-o", "--output", metavar="FILE.npz", help="write the outputs to an .npz file, keyed by output name (or output0, ...); "
                        "a name an earlier output already took gets _1, _2, ... appended")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("inspect", help="print a .nnapi model: operands, operations and parameters")
    s.add_argument("model", help="the .nnapi model")
    s.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")
    s.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
    s.set_defaults(func=cmd_inspect)

    s = sub.add_parser(
        "coverage", help="report which nodes of a model NNAPI runs, per feature level, and why not",
        description="Per node: supported or not, the NNAPI operations it becomes, the lowest feature level it "
                    "needs, and a reason code for unsupported nodes; per feature level 1-8: nodes, fraction of "
                    "nodes and of MACs on NNAPI, partitions and blocking nodes. Several models or a folder give "
                    "one summary row per model (an unreadable model is an error row; the batch goes on). "
                    "Examples: nnapi coverage model.tflite --feature-level all; nnapi coverage models/ --format "
                    "json -o coverage.json --jobs 4; nnapi coverage model.onnx --fail-under 0.95 (CI gate, exit 2 "
                    "below). Exit 0 ok, 2 below --fail-under, 3 invalid model or arguments.")
    s.add_argument("models", nargs="+", metavar="MODEL", help=".tflite/.onnx files or folders")
    s.add_argument("--feature-level", default="8", choices=[str(k) for k in range(1, 9)] + ["all"],
                   help="the feature level the per-node table is for (default 8; 'all' = 8 with every level "
                        "summarized)")
    s.add_argument("--format", choices=["text", "json", "markdown", "html", "model-explorer"], default="text",
                   help="report format (default text; json is the nnapi-coverage/1 schema in the README; "
                        "model-explorer: Model Explorer node data over the source graph, with -o FILE.json: FILE.json "
                        "(supported / lowered / absorbed / unsupported: reason code), FILE.ops.json (NNAPI "
                        "operations), FILE.level.json (minimum feature level), FILE.partition.json (partition "
                        "index, -1 = CPU); open with nnapi view MODEL --node-data FILE.json)")
    s.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (atomically)")
    s.add_argument("--jobs", type=int, default=1, metavar="N", help="parallel worker processes for many models (default 1)")
    s.add_argument("--dask", metavar="ADDRESS", help=DASK_HELP)
    s.add_argument("--input-shape", action="append", default=[], metavar="NAME=DIMS",
                   help="pin an input's dimensions (repeatable)")
    s.add_argument("--dim", action="append", default=[], metavar="SYMBOL=N",
                   help="ONNX: pin a named dimension (dim_param) wherever it appears, e.g. batch=1 (repeatable)")
    s.add_argument("--fail-under", type=float, metavar="FRACTION",
                   help="exit 2 when the fraction of supported nodes is below FRACTION (for CI)")
    s.add_argument("--as", dest="lens", default="converter", metavar="LENS[,LENS]",
                   help="whose decisions to report: converter (default; nnapi convert), tflite-delegate (LiteRT's "
                        "NNAPI delegate at the feature level, with its failure types and logcat wording), or both "
                        "comma-separated, side by side")
    s.add_argument("--delegate-option", action="append", default=[], metavar="NAME=VALUE",
                   help="a StatefulNnApiDelegate option for the tflite-delegate lens: "
                        "max_number_delegated_partitions=N (default 3), accelerator_name=NAME, "
                        "disallow_nnapi_cpu=true|false, allow_fp16=true|false (repeatable)")
    s.add_argument("--device", metavar="NAME",
                   help="a shipped driver profile (nnapi-reference, armnn): nodes whose NNAPI operations the "
                        "driver lacks become device_unsupported (converter lens), or the delegate runs on a "
                        "phone with that driver (tflite-delegate lens)")
    s.add_argument("--device-profile", metavar="FILE", help="as --device, with your own profile (schema in README)")
    s.set_defaults(func=cmd_coverage)

    s = sub.add_parser(
        "parity", help="compare the converted model with the source framework, down to the first divergent layer",
        description="Runs the source model with its framework (LiteRT for .tflite, onnxruntime for .onnx) and the "
                    "converted NNAPI model with the executor on the same seeded inputs (or --inputs), and compares "
                    "every output. Default tolerances: float32 max|diff| <= 1e-5 + 1e-4*max|ref|; float16/relaxed "
                    "5*2^-10*(1 + max|ref|); quantized 1 stored unit. Exit 0 within tolerance, 1 mismatch, "
                    "2 unsupported (without --partial), 3 invalid model or input, 4 reference not installed. "
                    "Examples: nnapi parity model.tflite --samples 3 --layerwise; nnapi parity model.onnx "
                    "--model model.nnapi --format json -o parity.json; nnapi parity model.tflite --feature-level 2 "
                    "--partial.")
    s.add_argument("model", nargs="+", metavar="MODEL",
                   help="the source model (.tflite or .onnx); several, or folders, run a batch with one row per model "
                        "(JSON: nnapi-parity-batch/1; exit code the largest of the models')")
    s.add_argument("--jobs", type=int, default=1, metavar="N", help="batch: parallel worker processes (default 1)")
    s.add_argument("--dask", metavar="ADDRESS", help=DASK_HELP)
    s.add_argument("--model", dest="converted", metavar="CONVERTED.nnapi",
                   help="check this already-converted file instead of converting afresh")
    s.add_argument("--feature-level", type=int, default=8, choices=range(1, 9), metavar="N",
                   help="conversion target NNAPI feature level 1-8 (default 8)")
    s.add_argument("--reference", choices=["litert", "litert-ref", "litert-xnnpack", "onnxruntime",
                                                "onnxruntime-optimized"],
                   help="reference runtime (default: litert = LiteRT built-in kernels without XNNPACK for "
                        ".tflite, onnxruntime (no graph optimisations) for .onnx; litert-ref = LiteRT's reference "
                        "kernels; litert-xnnpack = LiteRT's default CPU path with XNNPACK, which also runs MediaPipe's "
                        "Convolution2DTransposeBias; onnxruntime-optimized = onnxruntime with every graph "
                        "optimisation)")
    s.add_argument("--tolerance", choices=["fixed", "spread"],
                   help="fixed: the rules below; spread: also allow --spread-factor times the framework's own "
                        "spread, the largest difference between its kernel sets on the same inputs (LiteRT built-in, "
                        "reference and XNNPACK kernels; onnxruntime unoptimised and optimised). Default: spread for float "
                        "models with more than 50 operations, whose rounding compounds past the fixed rule; fixed "
                        "otherwise. The report says which applied and why")
    s.add_argument("--spread-factor", type=float, default=2.0, metavar="F",
                   help="with spread tolerance: allowed = F x spread + the fixed rule (default 2)")
    s.add_argument("--inputs", metavar="FILE.npz|DIR",
                   help="real inputs instead of seeded random ones: an .npz of arrays by input name (an extra "
                        "leading axis on every array makes each index a sample), or a folder of images for a model "
                        "with one image input (sorted by name; see --preprocess)")
    s.add_argument("--preprocess", metavar="KEY=VAL,...",
                   help="how images become the input: scale=S (pixels 0..255 times S, default 1/255), mean=M and "
                        "std=D (then (x - mean) / std; per channel as 0.485:0.456:0.406), layout=nhwc|nchw "
                        "(default from the input's shape), order=rgb|bgr (default rgb). Example: "
                        "--preprocess scale=1/255,mean=0.485:0.456:0.406,std=0.229:0.224:0.225")
    s.add_argument("--seed", type=int, default=0, help="seed of the first random sample (default 0)")
    s.add_argument("--samples", type=int, default=1, metavar="K", help="number of seeded random samples (default 1)")
    s.add_argument("--steps", type=int, default=1, metavar="K",
                   help="consecutive invocations per sample, a stateful model's state carried from one to the next "
                        "(LiteRT keeps its variables: one interpreter invoked K times; default 1)")
    s.add_argument("--layerwise", action="store_true", help="find the first NNAPI operation that diverges")
    s.add_argument("--exact", action="store_true",
                   help="also run the converted model in float64 (the executor's precision switch: the same kernels, "
                        "every float value in float64), the graph's mathematical value, and show each float "
                        "output's distance from it for ours and for each of the framework's kernel sets, so you "
                        "can see which side deviates. JSON: exact")
    s.add_argument("--local", action="store_true",
                   help="judge every NNAPI operation on its own: fed the framework's tensors for its inputs, "
                        "compared with the framework's outputs (LiteRT's reference kernels for .tflite, whose "
                        "arithmetic NNAPI's quantized operations share; onnxruntime for .onnx). This is the "
                        "default verdict for quantized models (each operation within one stored unit; the "
                        "end-to-end drift is reported beside it); --max-lsb makes the end-to-end error the rule "
                        "again. JSON: local, verdict")
    s.add_argument("--partial", action="store_true", help="check each NNAPI partition of a partly supported model")
    s.add_argument("--input-shape", action="append", default=[], metavar="NAME=DIMS",
                   help="pin an input's dimensions, e.g. input=1,224,224,3 (repeatable)")
    s.add_argument("--dim", action="append", default=[], metavar="SYMBOL=N",
                   help="ONNX: pin a named dimension (dim_param) wherever it appears, e.g. batch=1 (repeatable)")
    s.add_argument("--atol", type=float, metavar="A", help="absolute tolerance for float outputs (overrides the default)")
    s.add_argument("--rtol", type=float, metavar="R",
                   help="tolerance relative to max|ref| for float outputs (overrides the default)")
    s.add_argument("--max-lsb", type=int, metavar="L", help="allowed stored-unit difference for quantized outputs")
    s.add_argument("--format", choices=["text", "json", "html", "model-explorer"], default="text",
                   help="report format (default text; json is the schema in the README; model-explorer: Model "
                        "Explorer node data, per source node the largest error of its NNAPI operations over their "
                        "tolerance (1 = at the tolerance), with --layerwise or --local)")
    s.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of standard output")
    s.set_defaults(func=cmd_parity)

    s = sub.add_parser(
        "bench", help="time the executor against LiteRT / onnxruntime in the same process run",
        description="Median and interquartile spread of the executor's latency and the reference's, their ratio, "
                    "achieved GFLOP/s from the model's MACs, the executor's planned peak of intermediate bytes and "
                    "the process's peak RSS. Only the executor is timed unless --vs names a reference (a .nnapi "
                    "model has none); a .tflite/.onnx model is converted at feature level 8. A partial model runs its "
                    "NNAPI partitions on the executor and its CPU fallback nodes on the framework (--vs, else LiteRT "
                    "or onnxruntime), timed together against the framework on the whole model; the output says so "
                    "and splits the time (JSON field partial). Timings are only meaningful as ratios measured in the same run. Examples: nnapi "
                    "bench model.tflite --vs litert --runs 50; nnapi bench model.onnx --vs onnxruntime --format "
                    "json -o bench.json. Exit 0 ok, 3 invalid model (or --profile on a partial one), 4 reference not "
                    "installed.")
    s.add_argument("model", help=".tflite, .onnx or .nnapi model")
    s.add_argument("--vs", choices=["litert", "litert-ref", "litert-xnnpack", "onnxruntime"],
                   help="reference runtime to time against (default: none)")
    s.add_argument("--threads", type=int, default=1, metavar="T",
                   help="threads on both sides: the reference's, and the executor's BLAS (held with threadpoolctl; "
                        "the JSON's blas field says which library and how many threads) (default 1)")
    s.add_argument("--runs", type=int, default=20, metavar="N", help="timed runs (default 20)")
    s.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                   help="what is timed: elapsed time (default), or the thread's CPU time, which other work on a "
                        "loaded machine stretches far less (one thread only)")
    s.add_argument("--profile", action="store_true",
                   help="also time every NNAPI operation (over --runs separate runs) and list the slowest, with a "
                        "summary per operation type; JSON fields profile, by_op, profile_total_ms")
    s.add_argument("--warmup", type=int, default=3, metavar="W", help="untimed warm-up runs (default 3)")
    s.add_argument("--input-shape", action="append", default=[], metavar="NAME=DIMS",
                   help="pin an input's dimensions, e.g. input=1,224,224,3 (repeatable)")
    s.add_argument("--dim", action="append", default=[], metavar="SYMBOL=N",
                   help="ONNX: pin a named dimension (dim_param) wherever it appears, e.g. batch=1 (repeatable)")
    s.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")
    s.add_argument("-o", "--output", metavar="FILE", help="write the result to FILE instead of standard output")
    s.set_defaults(func=cmd_bench)

    s = sub.add_parser(
        "export", help="generate Android NDK C code that rebuilds the model on a device",
        description="Writes DIR/PREFIX_model.h, PREFIX_model.c (builds the model with the NDK's NeuralNetworks API, "
                    "compiles it and runs one inference), PREFIX_weights.bin (constants over 128 bytes, "
                    "memory-mapped at run time) and README.md (CMake lines, minimum Android API level). A .tflite/"
                    ".onnx model is converted first and must convert completely. DIR is written atomically and "
                    "only replaced when empty or written by a previous export. Exit 0 ok, 2 unsupported source "
                    "nodes (or a model above --feature-level), 3 invalid model or arguments. Examples: nnapi export "
                    "model.tflite -o android/nnapi --name mobilenet --feature-level 4; nnapi export model.nnapi -o "
                    "out/")
    s.add_argument("model", help="the model (.nnapi, .tflite or .onnx)")
    s.add_argument("--target", choices=["c"], default="c", help="what to generate (only c: NDK C11)")
    s.add_argument("-o", "--output", required=True, metavar="DIR", help="the folder to write")
    s.add_argument("--feature-level", type=int, choices=range(1, 9), metavar="N",
                   help="target NNAPI feature level 1-8 (conversion target, default 8; with it, a model needing more "
                        "is refused)")
    s.add_argument("--name", default="model", metavar="PREFIX",
                   help="C identifier prefix of the generated files and functions (default: model)")
    s.set_defaults(func=cmd_export)

    s = sub.add_parser(
        "view", help="open a model in Google's Model Explorer with coverage and parity overlays",
        description="Starts Model Explorer (the viz extra: pip install \"nnapi-convert[viz]\") on this machine "
                    "with the model: a .tflite (Model Explorer's TFLite adapter), an .onnx (model-explorer-onnx) or "
                    "a .nnapi (this package's adapter: every subgraph, operations with their parameters, operands "
                    "with type, shape and quantization). --coverage and --parity draw node data over the source "
                    "graph, as nnapi coverage/parity --format model-explorer write it. Stop it with Ctrl+C. "
                    "Examples: nnapi view model.tflite --coverage --parity; nnapi view model.nnapi --no-browser "
                    "--port 8123. Exit 0 when stopped, 3 invalid model or arguments, 4 Model Explorer not installed.")
    s.add_argument("model", help=".tflite, .onnx or .nnapi model")
    s.add_argument("--coverage", action="store_true", help="overlay coverage: status, NNAPI operations, feature "
                   "level and partition per source node")
    s.add_argument("--parity", action="store_true", help="overlay the layerwise parity error over its tolerance")
    s.add_argument("--node-data", action="append", default=[], metavar="FILE.json",
                   help="also load this Model Explorer node data file (repeatable)")
    s.add_argument("--feature-level", type=int, default=8, choices=range(1, 9), metavar="N",
                   help="feature level of the overlays (default 8)")
    s.add_argument("--input-shape", action="append", default=[], metavar="NAME=DIMS",
                   help="pin an input's dimensions (repeatable)")
    s.add_argument("--dim", action="append", default=[], metavar="SYMBOL=N",
                   help="ONNX: pin a named dimension (dim_param) wherever it appears (repeatable)")
    s.add_argument("--host", default="localhost", help="address to serve on (default localhost)")
    s.add_argument("--port", type=int, default=8080, metavar="N",
                   help="port (default 8080, or the next free one up to 8099)")
    s.add_argument("--no-browser", action="store_true", help="print the address instead of opening a browser")
    s.set_defaults(func=_cmd_view)

    s = sub.add_parser("demo", help="the main job on a bundled sample model")
    s.set_defaults(func=cmd_demo)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_OK
    from nnapi import NnapiError

    from .convert import ConversionError
    from .running import RunError
    from .source_graph import SourceError
    try:
        check_output_folder(args.command, getattr(args, "output", None))
        return args.func(args)
    except CliError as e:
        print(f"nnapi {args.command}: error: {e}", file=sys.stderr)
        return e.exit_code
    except NnapiError as e:
        print(f"nnapi {args.command}: error: {e}", file=sys.stderr)
        return EXIT_INVALID
    except (ConversionError, SourceError, RunError) as e:
        print(f"nnapi {args.command}: error: {e}", file=sys.stderr)
        return EXIT_INVALID
    except ModuleNotFoundError as e:
        print(f"nnapi {args.command}: error: optional dependency missing: {e.name} "
              f"(pip install \"nnapi-convert[runtimes]\")", file=sys.stderr)
        return EXIT_MISSING_DEPENDENCY
    except MemoryError:
        print(f"nnapi {args.command}: error: out of memory (the model needs more memory than is available)",
              file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        print(f"nnapi {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug, not the user's fault: still one line, never a traceback
        print(f"nnapi {args.command}: internal error: {type(e).__name__}: {e} (please report this with the "
              f"model)", file=sys.stderr)
        return EXIT_INVALID


if __name__ == "__main__":
    sys.exit(main())
