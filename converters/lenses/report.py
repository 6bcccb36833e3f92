"""`nnapi coverage --as LENS[,LENS] [--device NAME | --device-profile FILE] [--delegate-option K=V]`:
one report per lens, or the lenses side by side ("nnapi-coverage-lenses/1") with, per node,
what `nnapi convert` + `nnapi export` gains over the delegate."""
from __future__ import annotations

from typing import Optional

LENSES = ("converter", "tflite-delegate")
LENS_REPORT = "nnapi-coverage-lenses/1"


def parse_lenses(text: str) -> list:
    names = [x.strip() for x in (text or "converter").split(",") if x.strip()]
    bad = [x for x in names if x not in LENSES]
    if bad or not names:
        raise ValueError(f"--as {text!r}: lenses are {', '.join(LENSES)} (comma-separated)")
    return list(dict.fromkeys(names))


def _gain(delegate: bool, converter: bool) -> str:
    return {(False, True): "converter_only", (True, False): "delegate_only",
            (True, True): "both", (False, False): "neither"}[(delegate, converter)]


def combine(reports: dict) -> dict:
    first = next(iter(reports.values()))
    out = {"model": first["model"], "format": first["format"], "report": LENS_REPORT,
           "feature_level": first["feature_level"], "summary": first["summary"], "lenses": reports}
    if "tflite-delegate" in reports and "converter" in reports:
        d, c = reports["tflite-delegate"]["nodes"], reports["converter"]["nodes"]
        out["comparison"] = [{"index": a["index"], "op": a["op"], "tflite-delegate": a["supported"],
                              "converter": b["supported"], "gain": _gain(a["supported"], b["supported"]),
                              "computes": computes(a, b), "macs": b["macs"]}
                             for a, b in zip(d, c)]
    return out


def computes(*views: dict) -> bool:
    """False for a node that only prepares a constant in some lens's view: a weight DEQUANTIZE (fp16 weights the
    delegated consumers read, or weights the converter folds), a folded constant, a densify of weights."""
    from ..coverage import CONSTANT_HOWS
    from .tflite_delegate import FP16_DEQUANTIZE
    return not any(v.get("reason_code") == FP16_DEQUANTIZE or (v.get("absorbed") or {}).get("how") in CONSTANT_HOWS
                   for v in views)


def lens_report_for_path(path: str, feature_level: int, input_shapes=None, lenses=("converter",),
                         delegate_options=(), device: Optional[str] = None,
                         device_profile: Optional[str] = None, dims=None) -> dict:
    """Like coverage.report_for_path (an "error" row when the model cannot be read), through the lenses."""
    from nnapi import NnapiError

    from ..convert import ConversionError
    from ..coverage import build_report, read_source
    from ..source_graph import SourceError
    from .devices import device_report
    from .tflite_delegate import DelegateOptions, build_delegate_report

    try:
        dev = None
        if device_profile:
            from nnapi.device_profile import load_profile
            dev = load_profile(device_profile)
        elif device:
            from nnapi.device_profile import device as named_device
            dev = named_device(device)
        options = DelegateOptions.parse(delegate_options)
        reports = {}
        for lens in lenses:
            # each lens reads afresh (the converter folds constants into the graph), with the pins applied
            source = read_source(path, input_shapes, dims)
            if lens == "tflite-delegate":
                if source.format != "tflite":
                    raise SourceError(f"{path}: the tflite-delegate lens reads .tflite models only")
                reports[lens] = build_delegate_report(source, feature_level, options, str(path), dev)
            elif dev is not None:
                reports[lens] = device_report(source, dev, feature_level, input_shapes, model_name=str(path))
            else:
                reports[lens] = build_report(source, feature_level, input_shapes, model_name=str(path))
                reports[lens]["lens"] = "converter"
    except (SourceError, ConversionError, ValueError) as e:
        return {"model": str(path), "error": str(e), "error_kind": "invalid_model"}
    except NnapiError as e:
        return {"model": str(path), "error": e.message, "error_kind": "invalid_model"}
    except Exception as e:  # one model's failure is reported in its row and does not stop the batch
        return {"model": str(path), "error": f"{type(e).__name__}: {e}", "error_kind": "internal_error"}
    return next(iter(reports.values())) if len(reports) == 1 else combine(reports)
