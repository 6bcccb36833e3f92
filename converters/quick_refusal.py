"""Refuse an unpinned model in about a second instead of minutes.

On an ONNX model whose inputs have dynamic dimensions that no --input-shape or --dim pins, onnxruntime's
SymbolicShapeInference (the slow part of the shape pass: sympy simplifying expressions of the unpinned
names) can take minutes, only to end in a refusal that asks for the pins. So `convert` and `parity`
(without --partial) first convert with onnx's own shape inference alone. When that conversion is
incomplete and its refused nodes wait on input dimensions (pins.analyse finds pins_needed), the command
refuses at once with those pins. Otherwise, complete or refused for other reasons, the full conversion
runs and decides, as without this step.

The quick pass knows at most what the full one knows, so its counts of refused nodes may be higher than
the full pass's (ddddocr common: 60 against 58); the refusal says so. In principle a model that only the
symbolic pass lets convert unpinned would be refused here; of the zoo's ONNX files with unpinned inputs
(40, Dec 2026) the quick pass refused 39, and the full pass refused each of them too (rapidocr det: 5 s against
210 s). Pinned, the full pass has no unknown extents to spend time on."""
from __future__ import annotations

from typing import Optional

from .load import detect_format, importer
from .pins import refusal, unpinned_inputs

QUICK_NOTE = ("decided with onnx's shape inference alone, before the slower symbolic pass (about a second "
              "instead of minutes on an unpinned model): once pinned, the model is converted in full")


def quick_refusal(model_path, feature_level: int, input_shapes: dict, dims: dict,
                  partial_does: str) -> Optional[tuple]:
    """(first line, detail lines, pins) of the refusal for an unpinned ONNX model whose quick conversion
    waits on pins (see module doc), else None."""
    if detect_format(model_path) != "onnx" or not unpinned_inputs(model_path, input_shapes, dims):
        return None
    from .onnx.shapes import onnx_inference_only
    with onnx_inference_only():
        result = importer("onnx").convert(model_path, feature_level=feature_level, input_shapes=input_shapes,
                                          partial=False, dims=dims)
    if result.complete:
        return None
    head, details, found = refusal(result, partial_does)
    return (head, details + [QUICK_NOTE], found) if found["pins_needed"] else None
