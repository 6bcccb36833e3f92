"""TFLite's custom SSD post-processing (CUSTOM:TFLite_Detection_PostProcess) ->
NNAPI DETECTION_POSTPROCESSING (feature level 3).

The options are a flexbuffer map in the operator's custom options
(SourceNode.custom_options). Quantized box encodings / class predictions are dequantized first
(as TFLite's kernel does); the int32 classes and counts NNAPI returns are
cast to TFLite's float outputs (fast NMS counts boxes in TFLite, box-class
pairs in NNAPI: the count is divided by the classes per box)."""
from __future__ import annotations

import flatbuffers.flexbuffers as flexbuffers
import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from ...registry import Reason, Unsupported, converter
from .common import name


def custom_options(ctx, node) -> dict:
    """The operator's flexbuffer options as a dict."""
    if not node.custom_options:
        return {}
    try:
        return flexbuffers.Loads(node.custom_options)
    except Exception as e:  # flexbuffers raises assorted errors on malformed bytes
        raise Unsupported(Reason.ATTRIBUTE, f"{node.op}: malformed custom options ({type(e).__name__}: {e})") from None


def _float_input(ctx, i: int, what: str) -> int:
    """A float32 operand for box encodings / class predictions (quantized ones dequantized)."""
    t = ctx.tensor(i)
    if np.dtype(t.dtype) == np.float32:
        return ctx.operand(i)
    if t.quant is None or t.quant.per_channel or np.dtype(t.dtype) not in (np.uint8, np.int8):
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"{what} {t.name!r} must be float32 or per-tensor quantized "
                                                    f"uint8/int8")
    out = ctx.temp(OperandType(C.TENSOR_FLOAT32, ctx.shape(i)), f"{t.name}/dequantized")
    ctx.emit_form(Op.DEQUANTIZE, "default", [out], input=ctx.operand(i))
    return out


def _anchors(ctx, i: int) -> int:
    t = ctx.tensor(i)
    if np.dtype(t.dtype) == np.float32:
        return ctx.operand(i)
    data = ctx.const_value(i, "anchors")
    if t.quant is None or t.quant.per_channel:
        raise Unsupported(Reason.QUANTIZATION_TYPE, f"anchors {t.name!r} must be float32 or per-tensor quantized")
    values = np.float32(t.quant.scale) * (data.astype(np.int32) - t.quant.zero_point).astype(np.float32)
    return ctx.const(values.astype(np.float32), name=f"{t.name}/dequantized")


_REQUIRED = ("max_detections", "max_classes_per_detection", "num_classes", "nms_score_threshold",
             "nms_iou_threshold", "y_scale", "x_scale", "h_scale", "w_scale")


@converter("tflite", "CUSTOM:TFLite_Detection_PostProcess", versions=(1, 1))
def detection_postprocess(node, ctx):
    """SSD box decoding + regular or fast NMS, then int32 -> float casts of classes and counts."""
    opts = custom_options(ctx, node)
    missing = [k for k in _REQUIRED if k not in opts]
    if missing:
        raise Unsupported(Reason.ATTRIBUTE, f"{node.op} custom options lack {', '.join(missing)}")
    boxes_in, scores_in, anchors_in = node.inputs[:3]
    columns = ctx.shape(scores_in)[-1]
    label_offset = columns - int(opts["num_classes"])
    if label_offset != 1:
        # NNAPI always treats score column 0 as the background and skips it
        raise Unsupported(Reason.ATTRIBUTE, f"{node.op} class predictions {name(ctx, scores_in)} have "
                                            f"{columns} columns for num_classes {opts['num_classes']}: NNAPI needs "
                                            f"exactly one leading background column")
    if len(node.outputs) != 4:
        raise Unsupported(Reason.INVALID, f"{node.op} must have 4 outputs, has {len(node.outputs)}")
    regular = bool(opts.get("use_regular_nms", False))
    named = dict(scores=_float_input(ctx, scores_in, "class predictions"),
                 deltas=_float_input(ctx, boxes_in, "box encodings"), anchors=_anchors(ctx, anchors_in),
                 use_regular_nms=ctx.boolean(regular), background_in_label=ctx.boolean(False),
                 max_detections=ctx.i32(int(opts["max_detections"])),
                 max_classes_per_detection=ctx.i32(int(opts["max_classes_per_detection"])),
                 max_detections_per_class=ctx.i32(int(opts.get("detections_per_class", 100))),
                 score_threshold=ctx.f32(float(opts["nms_score_threshold"])),
                 iou_threshold=ctx.f32(float(opts["nms_iou_threshold"])),
                 **{f"scale_{a}": ctx.f32(float(opts[f"{a}_scale"])) for a in "yxhw"})
    out_boxes, out_classes, out_scores, out_count = node.outputs
    for i in (out_classes, out_count):
        if np.dtype(ctx.tensor(i).dtype) != np.float32:
            raise Unsupported(Reason.OPERAND_TYPE, f"{node.op} output {name(ctx, i)} must be float32")
    label = node.name or "detection"
    classes = ctx.temp(OperandType(C.TENSOR_INT32, ctx.shape(out_classes)), f"{label}/classes_int32")
    count = ctx.temp(OperandType(C.TENSOR_INT32, ctx.shape(out_count)), f"{label}/count_int32")
    ctx.emit_form(Op.DETECTION_POSTPROCESSING, "default",
                  [ctx.output(out_scores), ctx.output(out_boxes), classes, count], **named)
    ctx.emit_form(Op.CAST, "default", [ctx.output(out_classes)], input=classes)
    # fast NMS: NNAPI counts (box, class) pairs, TFLite counts boxes, each with `top` classes
    top = 1 if regular else min(int(opts["max_classes_per_detection"]), int(opts["num_classes"]))
    if top == 1:
        ctx.emit_form(Op.CAST, "default", [ctx.output(out_count)], input=count)
        return
    pairs = ctx.temp(OperandType(C.TENSOR_FLOAT32, ctx.shape(out_count)), f"{label}/pair_count")
    ctx.emit_form(Op.CAST, "default", [pairs], input=count)
    # a multiple of `top` divided by `top`: exact in float32
    ctx.emit_form(Op.DIV, "default", [ctx.output(out_count)], input1=pairs,
                  input2=ctx.const(np.array([top], np.float32), name=f"{label}/classes_per_box"), fuse=ctx.i32(0))
