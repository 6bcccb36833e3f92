"""The `nnapi` command line's arguments: every subcommand, its options and its --help text. The handlers
that run them are in converters/cli.py."""
from __future__ import annotations

import argparse
import sys

from nnapi.codes import ANDROID_API_FEATURE_LEVELS, MAX_FEATURE_LEVEL

from .exit_codes import EXIT_CODES_TEXT, EXIT_INVALID

DASK_HELP = ("batch: run the per-model tasks on an existing Dask distributed cluster, e.g. tcp://scheduler:8786 "
             "(the same rows, in the same order, as a local run; every worker needs nnapi-convert installed and the "
             "model paths readable; needs the scale extra: pip install 'nnapi-convert[scale]'; exit 4 without it)")


class _Parser(argparse.ArgumentParser):
    """Usage errors are invalid input (exit 3), never confused with exit 2 (unsupported operations)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_INVALID, f"{self.prog}: error: {message}\n")


def _api_mapping() -> str:
    """'android-27 = 1, ..., android-31/32 = 5, ...': the API levels grouped by the feature level they give."""
    by_level: dict = {}
    for api, level in ANDROID_API_FEATURE_LEVELS.items():
        by_level.setdefault(level, []).append(str(api))
    return ", ".join(f"android-{'/'.join(apis)} = {level}" for level, apis in by_level.items())


FEATURE_LEVEL_HELP = (f"target NNAPI feature level 1-{MAX_FEATURE_LEVEL}, or the Android release's API level as "
                      f"android-29 or 29 ({_api_mapping()}; 6-8 come with the updatable NNAPI module)")


def feature_level(text: str) -> int:
    """--feature-level: 1-8 as they are, an Android API level (29, android-29, api-29) as the level it
    provides (nnapi.codes.ANDROID_API_FEATURE_LEVELS)."""
    t = text.strip().lower()
    for prefix in ("android-", "api-"):
        if t.startswith(prefix):
            t = t[len(prefix):]
            break
    else:
        if t.isdigit() and int(t) in range(1, MAX_FEATURE_LEVEL + 1):  # (the levels are 1..8)
            return int(t)
    if t.isdigit() and int(t) in ANDROID_API_FEATURE_LEVELS:
        return ANDROID_API_FEATURE_LEVELS[int(t)]
    raise argparse.ArgumentTypeError(f"{text!r} is neither a feature level 1-{MAX_FEATURE_LEVEL} nor an Android API "
                                     f"level {min(ANDROID_API_FEATURE_LEVELS)}-{max(ANDROID_API_FEATURE_LEVELS)} "
                                     f"(e.g. android-29)")


def feature_level_or_all(text: str):
    return "all" if text.strip().lower() == "all" else feature_level(text)


def fraction(text: str) -> float:
    """--fail-under: a fraction 0-1, or a percent written with % ("95%" = 0.95); a bare 95 would always fail."""
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (a fraction such as 0.95, or 95%)") from None
    if not 0 <= value <= 1:
        hint = f" (did you mean {value / 100:g}, or {t}%?)" if 1 < value <= 100 and not t.endswith("%") else ""
        raise argparse.ArgumentTypeError(f"{text} is not a fraction between 0 and 1{hint}")
    return value


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("nnapi-convert")
    except PackageNotFoundError:
        return "unknown (not installed as a package)"


def _shape_pins(s) -> None:
    """--input-shape and --dim, the same on every subcommand that reads a source model."""
    s.add_argument("--input-shape", action="append", default=[], metavar="NAME=DIMS",
                   help="pin an input's dimensions, e.g. input=1,224,224,3 (repeatable)")
    s.add_argument("--dim", action="append", default=[], metavar="SYMBOL=N",
                   help="ONNX: pin a named dimension (dim_param) wherever it appears, e.g. batch=1 (repeatable)")


def build_parser(handlers: dict) -> argparse.ArgumentParser:
    """The parser of every subcommand; `handlers` maps each subcommand to the function that runs it
    (converters/cli.py)."""
    p = _Parser(
        prog="nnapi",
        description="Convert TFLite/ONNX models to Android NNAPI models, run them with a numpy reference "
                    "executor, and check coverage and parity.",
        epilog=f"exit codes: {EXIT_CODES_TEXT}. Set NNAPI_DEBUG=1 to see an internal error's traceback. An -o "
               f"path is checked before any work: never an input of the command, never a folder (export: never a "
               f"file), with the extension its content implies (.nnapi, .npz, .json, .html, .md).",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s (nnapi-convert) {_version()}")
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
    s.add_argument("--feature-level", type=feature_level, default=8, metavar="N",
                   help=FEATURE_LEVEL_HELP + " (default 8)")
    _shape_pins(s)
    s.add_argument("--partial", action="store_true",
                   help="write each NNAPI partition plus a JSON manifest instead of failing on unsupported nodes")
    s.add_argument("--signature", metavar="KEY",
                   help="TFLite: convert the subgraph of this signature (default: subgraph 0)")
    s.set_defaults(func=handlers["convert"])

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
    s.set_defaults(func=handlers["run"])

    s = sub.add_parser(
        "inspect", help="print a .nnapi model: operands, operations and parameters",
        description="Prints a .nnapi model (as nnapi convert writes it): every operand with its type, shape and "
                    "quantization, every operation with its parameters by name (padding SAME, fuse RELU6), the "
                    "feature level the model needs, and the dimensions its inputs determine beyond those declared. "
                    "A .tflite or .onnx model is converted first (nnapi convert MODEL -o MODEL.nnapi). Examples: "
                    "nnapi inspect model.nnapi; nnapi inspect model.nnapi --format json -o model.json. Exit 0 ok, "
                    "3 invalid model or arguments.")
    s.add_argument("model", help="the .nnapi model")
    s.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")
    s.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
    s.set_defaults(func=handlers["inspect"])

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
    s.add_argument("--feature-level", type=feature_level_or_all, default=8, metavar="N|all",
                   help="the feature level the per-node table is for (default 8; 'all' = 8 with every level "
                        "summarized): " + FEATURE_LEVEL_HELP)
    s.add_argument("--format", choices=["text", "json", "markdown", "html", "model-explorer"], default="text",
                   help="report format (default text; json is the nnapi-coverage/1 schema in the README; "
                        "model-explorer: Model Explorer node data over the source graph, with -o FILE.json: FILE.json "
                        "(supported / lowered / absorbed / unsupported: reason code), FILE.ops.json (NNAPI "
                        "operations), FILE.level.json (minimum feature level), FILE.partition.json (partition "
                        "index, -1 = CPU); open with nnapi view MODEL --node-data FILE.json)")
    s.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (atomically)")
    s.add_argument("--jobs", type=int, default=1, metavar="N", help="parallel worker processes for many models (default 1)")
    s.add_argument("--dask", metavar="ADDRESS", help=DASK_HELP)
    _shape_pins(s)
    s.add_argument("--fail-under", type=fraction, metavar="FRACTION",
                   help="exit 2 when the fraction of supported nodes is below FRACTION, 0-1 (for CI; a percent "
                        "needs its sign: 0.95 or 95%%)")
    s.add_argument("--as", dest="lens", default="converter", metavar="LENS[,LENS]",
                   help="whose decisions to report: converter (default; nnapi convert), tflite-delegate (LiteRT's "
                        "NNAPI delegate at the feature level, with its failure types and logcat wording), or both "
                        "comma-separated, side by side")
    s.add_argument("--delegate-option", action="append", default=[], metavar="NAME=VALUE",
                   help="a StatefulNnApiDelegate option for the tflite-delegate lens: "
                        "max_number_delegated_partitions=N (default 3), accelerator_name=NAME, "
                        "disallow_nnapi_cpu=true|false, allow_fp16=true|false (repeatable)")
    device = s.add_mutually_exclusive_group()  # one driver at a time
    device.add_argument("--device", metavar="NAME",
                        help="a shipped driver profile (nnapi-reference, armnn): nodes whose NNAPI operations the "
                             "driver lacks become device_unsupported (converter lens, at the lower of "
                             "--feature-level and the device's level), or the delegate runs on a phone with that "
                             "driver (tflite-delegate lens)")
    device.add_argument("--device-profile", metavar="FILE",
                        help="as --device, with your own profile (schema in README)")
    s.add_argument("--verbose", action="store_true",
                   help="text and markdown: every list in full (NNAPI operations, node indexes, blocking nodes, "
                        "reasons) instead of fitting 120 columns with counts")
    s.set_defaults(func=handlers["coverage"])

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
    s.add_argument("--feature-level", type=feature_level, default=8, metavar="N",
                   help="conversion " + FEATURE_LEVEL_HELP + " (default 8)")
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
    _shape_pins(s)
    s.add_argument("--atol", type=float, metavar="A", help="absolute tolerance for float outputs (overrides the default)")
    s.add_argument("--rtol", type=float, metavar="R",
                   help="tolerance relative to max|ref| for float outputs (overrides the default)")
    s.add_argument("--max-lsb", type=int, metavar="L", help="allowed stored-unit difference for quantized outputs")
    s.add_argument("--format", choices=["text", "json", "html", "model-explorer"], default="text",
                   help="report format (default text; json is the schema in the README; model-explorer: Model "
                        "Explorer node data, per source node the largest error of its NNAPI operations over their "
                        "tolerance (1 = at the tolerance), with --layerwise or --local)")
    s.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of standard output")
    s.set_defaults(func=handlers["parity"])

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
                    "json -o bench.json. The output names every input shape timed; a model input whose dimensions "
                    "no pin fixes is refused with the pins to give. MACs are n/a (JSON null) where unknown. Exit 0 "
                    "ok, 3 invalid model (or --profile on a partial one, or unpinned dimensions), 4 reference not "
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
                   help="also time every NNAPI operation (over --runs separate runs, on the --clock) and list the slowest, "
                        "with a summary per operation type; JSON fields profile, by_op, profile_total_ms")
    s.add_argument("--warmup", type=int, default=3, metavar="W", help="untimed warm-up runs (default 3)")
    _shape_pins(s)
    s.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")
    s.add_argument("-o", "--output", metavar="FILE", help="write the result to FILE instead of standard output")
    s.set_defaults(func=handlers["bench"])

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
    s.add_argument("--feature-level", type=feature_level, metavar="N",
                   help=FEATURE_LEVEL_HELP + " (conversion target, default 8; with it, a model needing more is "
                        "refused)")
    s.add_argument("--name", default="model", metavar="PREFIX",
                   help="C identifier prefix of the generated files and functions (default: model)")
    s.set_defaults(func=handlers["export"])

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
    s.add_argument("--feature-level", type=feature_level, default=8, metavar="N",
                   help="feature level of the overlays: " + FEATURE_LEVEL_HELP + " (default 8)")
    _shape_pins(s)
    s.add_argument("--host", default="localhost", help="address to serve on (default localhost)")
    s.add_argument("--port", type=int, default=8080, metavar="N",
                   help="port (default 8080, or the next free one up to 8099)")
    s.add_argument("--no-browser", action="store_true", help="print the address instead of opening a browser")
    s.set_defaults(func=handlers["view"])

    s = sub.add_parser(
        "demo", help="the main job on a bundled sample model",
        description="Converts a bundled TFLite sample (an int8 MobileNet) to NNAPI, saves and reloads it, prints "
                    "which of its nodes NNAPI runs at each feature level, and runs it with the executor against "
                    "LiteRT on 3 seeded samples (layerwise). Writes nothing outside a temporary folder. Exit 0 "
                    "when the converted model matches, 1 mismatch, 4 LiteRT not installed.")
    s.set_defaults(func=handlers["demo"])
    return p
