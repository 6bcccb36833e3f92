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


def random_inputs(model, seed: int = 0) -> list[np.ndarray]:
    """Seeded inputs within each input's natural range (quantized range for quantized types)."""
    from executor.kernels.common import QUANT_RANGE
    rng = np.random.default_rng(seed)
    arrays = []
    for i in model.inputs:
        t = model.operands[i].type
        dims = tuple(t.dimensions) if t.is_tensor else ()
        if t.is_tensor and (not dims or 0 in dims):
            raise CliError(f"input operand {i} ({model.operands[i].name or 'unnamed'}) has unknown dimensions "
                           f"{list(dims)}; pass --inputs with concrete arrays")
        if t.code in QUANT_RANGE:
            lo, hi = QUANT_RANGE[t.code]
            arrays.append(rng.integers(lo, hi + 1, size=dims).astype(t.dtype))
        elif t.dtype.kind == "f":
            arrays.append(rng.random(dims).astype(t.dtype))
        elif t.dtype.kind == "b":
            arrays.append(rng.integers(0, 2, size=dims).astype(bool))
        else:
            arrays.append(rng.integers(0, 4, size=dims).astype(t.dtype))
    return arrays


def run_model(model, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Compile and run `model` once with the executor; returns the output arrays."""
    import nnapi
    comp = nnapi.Compilation(model)
    comp.finish()
    ex = nnapi.Execution(comp)
    for k, arr in enumerate(inputs):
        ex.set_input(k, arr)
    outs = []
    for k, o in enumerate(model.outputs):
        t = model.operands[o].type
        size = t.element_count() or 0
        buf = np.zeros(max(size, 1 << 16), dtype=t.dtype)  # room for dynamic shapes
        outs.append(buf)
        ex.set_output(k, buf)
    ex.compute()
    result = []
    for k, buf in enumerate(outs):
        dims = ex.get_output_operand_dimensions(k)
        n = int(np.prod(dims)) if dims else 1
        result.append(buf[:n].reshape(dims))
    return result


def cmd_run(args) -> int:
    model = _load_nnapi(args.model)
    if args.inputs:
        try:
            data = np.load(args.inputs, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise CliError(f"{args.inputs}: cannot read inputs ({e})")
        names = [model.operands[i].name or f"input{k}" for k, i in enumerate(model.inputs)]
        missing = [n for n in names if n not in data and f"input{names.index(n)}" not in data]
        if missing:
            raise CliError(f"{args.inputs}: missing arrays for inputs {missing} (have {sorted(data.files)})")
        inputs = [np.asarray(data[n] if n in data else data[f"input{k}"]) for k, n in enumerate(names)]
    else:
        inputs = random_inputs(model, args.seed)
    outputs = run_model(model, inputs)
    for k, (o, arr) in enumerate(zip(model.outputs, outputs)):
        name = model.operands[o].name or f"output{k}"
        stats = f"min {arr.min():.6g} max {arr.max():.6g} mean {arr.astype(np.float64).mean():.6g}" if arr.size else "empty"
        print(f"{name}: {arr.dtype}{list(arr.shape)} {stats}")
    if args.output:
        import io
        from nnapi.serialize import atomic_write
        buf = io.BytesIO()
        np.savez(buf, **{model.operands[o].name or f"output{k}": a for k, (o, a) in enumerate(zip(model.outputs, outputs))})
        atomic_write(args.output, buf.getvalue())
    return EXIT_OK


def cmd_convert(args) -> int:
    raise CliError("conversion of TFLite/ONNX models is not available in this version yet "
                   "(see the README's roadmap)", EXIT_UNSUPPORTED)


def cmd_not_yet(name):
    def run(args) -> int:
        raise CliError(f"`nnapi {name}` is not available in this version yet (see the README's roadmap)",
                       EXIT_UNSUPPORTED)
    return run


def cmd_demo(args) -> int:
    from samples import demo
    return demo.run(out=sys.stdout)


# -- parser -------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nnapi",
        description="Convert TFLite/ONNX models to Android NNAPI models, run them with a numpy reference "
                    "executor, and check coverage and parity.",
        epilog="exit codes: 0 ok, 1 parity mismatch, 2 unsupported operation(s), 3 invalid model or input, "
               "4 missing optional dependency",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("convert", help="convert a .tflite or .onnx model to a .nnapi model")
    s.add_argument("model", help="the source model (.tflite or .onnx)")
    s.add_argument("-o", "--output", required=True, help="the .nnapi file to write")
    s.add_argument("--feature-level", type=int, default=8, choices=range(1, 9), metavar="N",
                   help="target NNAPI feature level 1-8 (default 8)")
    s.add_argument("--input-shape", action="append", default=[], metavar="NAME=DIMS",
                   help="pin an input's dimensions, e.g. input=1,224,224,3 (repeatable)")
    s.add_argument("--partial", action="store_true",
                   help="write each NNAPI partition plus a JSON manifest instead of failing on unsupported nodes")
    s.set_defaults(func=cmd_convert)

    s = sub.add_parser("run", help="run a .nnapi model with the executor")
    s.add_argument("model", help="the .nnapi model")
    s.add_argument("--inputs", metavar="FILE.npz", help="input arrays by input name (default: seeded random)")
    s.add_argument("--seed", type=int, default=0, help="seed for random inputs (default 0)")
    s.add_argument("-o", "--output", metavar="FILE.npz", help="write the outputs to an .npz file")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("inspect", help="print a .nnapi model: operands, operations and parameters")
    s.add_argument("model", help="the .nnapi model")
    s.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")
    s.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
    s.set_defaults(func=cmd_inspect)

    for name, help_ in (("coverage", "report which nodes of a model NNAPI runs, per feature level"),
                        ("parity", "compare the converted model with the source framework"),
                        ("bench", "time the executor against LiteRT / onnxruntime")):
        s = sub.add_parser(name, help=help_ + " (coming in a later version)")
        s.add_argument("model", nargs="*", help="model file(s)")
        s.set_defaults(func=cmd_not_yet(name))

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
    try:
        return args.func(args)
    except CliError as e:
        print(f"nnapi {args.command}: error: {e}", file=sys.stderr)
        return e.exit_code
    except NnapiError as e:
        print(f"nnapi {args.command}: error: {e}", file=sys.stderr)
        return EXIT_INVALID
    except ModuleNotFoundError as e:
        print(f"nnapi {args.command}: error: optional dependency missing: {e.name} "
              f"(pip install \"nnapi-convert[runtimes]\")", file=sys.stderr)
        return EXIT_MISSING_DEPENDENCY
    except KeyboardInterrupt:
        print(f"nnapi {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
