"""The `nnapi` command line.

Exit codes (stable, converters/exit_codes.py): 0 ok, 1 parity mismatch, 2 unsupported operation(s),
3 invalid model or input, 4 missing optional dependency, 5 internal error.
"""
from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import traceback
from pathlib import Path

import numpy as np

from .command_args import CliError, dims as _dims, input_shapes as _input_shapes
from .exit_codes import (EXIT_INTERNAL, EXIT_INVALID, EXIT_MISMATCH, EXIT_MISSING_DEPENDENCY, EXIT_OK,  # noqa: F401
                         EXIT_UNSUPPORTED)
from .output_paths import check_output

# what the file system answers about a path the user gave (a full disk, a read-only folder): exit 3
USER_OS_ERRORS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EISDIR, errno.ENOTDIR,
                  errno.ENOENT, errno.ENAMETOOLONG, errno.EEXIST}
DEBUG_ENV = "NNAPI_DEBUG"  # set: an internal error also prints its traceback
REPORT_TO = "report it on the nnapi-convert issue tracker with the command line and the model"


def _load_nnapi(path: str, command: str):
    import nnapi
    from nnapi.serialize import MAGIC
    p = Path(path)
    if not p.exists():
        raise CliError(f"{path}: no such file")
    if p.is_dir():
        raise CliError(f"{path} is a folder; nnapi {command} takes a .nnapi model file")
    with open(p, "rb") as f:
        head = f.read(len(MAGIC))
    if head != MAGIC:
        from .load import detect_format
        from .source_graph import SourceError
        try:
            fmt = detect_format(p)
        except SourceError:
            fmt = None
        if fmt in ("tflite", "onnx"):
            raise CliError(f"{path} is a {'TFLite' if fmt == 'tflite' else 'ONNX'} model and nnapi {command} takes "
                           f"a .nnapi model: convert it first (nnapi convert {path} -o {p.with_suffix('.nnapi')})")
    return nnapi.load(p)


def _write_output(text: str, out: str | None) -> None:
    if out:
        from nnapi.serialize import atomic_write
        atomic_write(out, text.encode())
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


# -- subcommands --------------------------------------------------------------

def cmd_inspect(args) -> int:
    from .describe import model_dict, model_text
    model = _load_nnapi(args.model, "inspect")
    text = json.dumps(model_dict(model), indent=1) if args.format == "json" else model_text(model)
    _write_output(text, args.output)
    return EXIT_OK


def cmd_run(args) -> int:
    from nnapi.state import carry, initial_values, non_state_inputs

    from .running import npz_bytes, npz_output_keys, random_inputs, run_model
    model = _load_nnapi(args.model, "run")
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
    from .quick_refusal import quick_refusal
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
        quick = None if partial else quick_refusal(args.model, args.feature_level, shapes, dims,
                                                   "writes the NNAPI partitions and a manifest")
        if quick:
            raise CliError(quick[0], EXIT_UNSUPPORTED, quick[1])
        result = importer(fmt).convert(args.model, feature_level=args.feature_level, input_shapes=shapes,
                                       partial=partial, dims=dims, **extra)
    except (SourceError, ValueError) as e:
        raise CliError(str(e), EXIT_INVALID) from None
    return result


def cmd_convert(args) -> int:
    from nnapi.serialize import atomic_write, file_pieces
    from .convert import ConversionError
    from .pins import refused_node_lines, refusal
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
        for sentence in result.source.metadata.get("resolved_ifs", []):   # (converters/onnx/branches.py)
            print(f"  note: decided at conversion: {sentence}")
        for n in result.nodes:
            if n.note and n.nnapi_ops:  # e.g. hybrid weights dequantized, a PAD folded into a convolution
                print(f"  note: node {n.index} ({n.op}): {n.note}")
        for v in m.state:
            print(f"  note: state {v.variable!r}: output {v.output} -> input {v.input} between executions "
                  f"(initial value stored in the file)")
        return EXIT_OK
    if not args.partial:
        head, details, _ = refusal(result, "writes the NNAPI partitions and a manifest")
        raise CliError(head, EXIT_UNSUPPORTED, details)
    from .partitions_file import write_partitions
    count = write_partitions(result, out, args.model, args.feature_level)
    print(f"wrote {count} partition(s) and {out.stem}.partitions.json; "
          f"{len(result.unsupported)} node(s) fall back to the CPU:")
    print("\n".join(f"  {line}" for line in refused_node_lines(result)))
    return EXIT_OK


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
        if "error" in r:   # (a bug in one model's report is caught there, converters/coverage.py)
            if r.get("error_kind") == "internal_error":
                raise CliError(f"internal error, please report: {r['error']} ({REPORT_TO})", EXIT_INTERNAL)
            raise CliError(r["error"], EXIT_INVALID)
        _write_output(render(r, args.format, args.verbose), args.output)
    else:
        _write_output(render_batch(reports, args.format, args.verbose), args.output)
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
    from .batch import run
    return run(fn, arg_tuples, args.jobs, args.dask)


def cmd_parity(args) -> int:
    from nnapi import NnapiError

    from . import parity
    from .parity_render import render
    from .pins import unpinned_advice, unpinned_inputs
    from .quick_refusal import quick_refusal
    from .running import RunError
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
        quick = None if args.partial or args.converted else quick_refusal(
            args.model, args.feature_level, shapes, options["dims"], "checks the partitions that convert")
        if quick:
            raise parity.ParityError(quick[0], exit_code=EXIT_UNSUPPORTED, pins=quick[2], details=quick[1])
        report = parity.check(args.model, converted=args.converted, progress=progress, **options)
    except (NnapiError, RunError) as e:   # a partition meeting an extent the unpinned inputs left unknown
        loose = unpinned_inputs(args.model, shapes, options["dims"]) if args.partial else {}
        if not loose:
            raise
        head, details = unpinned_advice(loose, "the NNAPI partitions cannot run")
        raise CliError(head, EXIT_INVALID, details + [f"the executor stopped at: {e}"]) from None
    except parity.ParityError as e:
        if e.pins is not None and args.format == "json":  # a refused conversion: what would unlock it
            _write_output(json.dumps({"model": Path(args.model).name, "passed": False, "error": str(e),
                                      "details": e.details, **e.pins}, indent=1), args.output)
        raise CliError(str(e), e.exit_code, e.details) from None
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
    from .runners import ReferenceFailed
    from .source_graph import SourceError
    shapes = _input_shapes(args)
    try:
        if args.threads < 1 or args.runs < 1 or args.warmup < 0:
            raise CliError("--threads and --runs must be at least 1, --warmup at least 0")
        r = bench(args.model, args.vs, args.threads, args.runs, args.warmup, shapes, profile=args.profile,
                  dims=_dims(args), clock=args.clock)
    except ReferenceFailed as e:   # e.g. a custom operator the reference has no kernel for
        other = " or try --vs litert-xnnpack, which has more operators" if args.vs in ("litert", "litert-ref") else ""
        raise CliError(f"{e}; time the executor alone (without --vs){other}" if args.vs else str(e),
                       EXIT_INVALID) from None
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


def cmd_view(args) -> int:
    from .viz.view import cmd_view
    return cmd_view(args)


def cmd_demo(args) -> int:
    from . import demo
    return demo.run(out=sys.stdout)


# -- parser -------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    """The `nnapi` argument parser (converters/cli_parser.py) with this module's handlers."""
    from .cli_parser import build_parser as build
    return build({"convert": cmd_convert, "run": cmd_run, "inspect": cmd_inspect, "coverage": cmd_coverage,
                  "parity": cmd_parity, "bench": cmd_bench, "export": cmd_export, "view": cmd_view,
                  "demo": cmd_demo})


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_OK
    from nnapi import NnapiError

    from .convert import ConversionError
    from .dependencies import MissingDependency, advice, optional_module
    from .running import RunError
    from .source_graph import SourceError
    try:
        check_output(args)
        return args.func(args)
    except CliError as e:
        print(f"nnapi {args.command}: error: {e}", file=sys.stderr)
        for line in e.details:
            print(f"  {line}", file=sys.stderr)
        return e.exit_code
    except NnapiError as e:
        print(f"nnapi {args.command}: error: {e}", file=sys.stderr)
        return EXIT_INVALID
    except (ConversionError, SourceError, RunError) as e:
        print(f"nnapi {args.command}: error: {e}", file=sys.stderr)
        return EXIT_INVALID
    except MissingDependency as e:
        print(f"nnapi {args.command}: error: {e}", file=sys.stderr)
        return EXIT_MISSING_DEPENDENCY
    except ModuleNotFoundError as e:
        if optional_module(e.name) is None:  # a required package or the project's own module: a bug
            return internal_error(args.command, e)
        print(f"nnapi {args.command}: error: {advice(optional_module(e.name))}", file=sys.stderr)
        return EXIT_MISSING_DEPENDENCY
    except OSError as e:
        if e.errno is not None and e.errno not in USER_OS_ERRORS:  # not the environment's answer (disk, rights)
            return internal_error(args.command, e)
        where = e.filename or getattr(args, "output", None) or "a file"  # (a failed write() names no file)
        print(f"nnapi {args.command}: error: cannot write or read {where}: {e.strerror or e}", file=sys.stderr)
        return EXIT_INVALID
    except MemoryError:
        print(f"nnapi {args.command}: error: out of memory (the model needs more memory than is available)",
              file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        print(f"nnapi {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug, not the user's fault: still one line, never a traceback
        return internal_error(args.command, e)


def internal_error(command: str, e: BaseException) -> int:
    """One line saying it is our bug and where to report it (exit 5); the traceback only when
    NNAPI_DEBUG is set."""
    if os.environ.get(DEBUG_ENV):
        traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
    print(f"nnapi {command}: internal error, please report: {type(e).__name__}: {e} ({REPORT_TO}; "
          f"{DEBUG_ENV}=1 shows the traceback)", file=sys.stderr)
    return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
