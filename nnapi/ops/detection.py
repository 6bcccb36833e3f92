"""Detection and region operations: box transforms, NMS, proposals, SSD
post-processing, keypoints and region pooling (all feature level 3+).

Type variables used throughout:
  T  the main data tensor (scores, feature map, heatmap),
  R  box coordinates (rois, image info): float like T, or QUANT16_ASYMM with
     the fixed scale 0.125 / zero point 0 when T is quantized,
  S  float scalar parameters: FLOAT32, or FLOAT16 when T is TENSOR_FLOAT16.
"""
from __future__ import annotations

from ..codes import OperandCode as C, OperationCode as Op
from . import register
from .rules import output_ranks, rank_in, same_quant
from .spec import Form, OpSpec, TypeCase, arg
from .geometry import const_int, image_input, join_image, layout, split_image

_BOX_SCALE = 0.125  # the one quantization NNAPI allows for QUANT16 box coordinates


def _cases(**quant_only) -> list[TypeCase]:
    """Float32 / float16 / quant8 (level 3) / quant8 signed (level 4) bindings of T, R and S.

    `quant_only` adds variables that follow T in the float cases but have a
    fixed code in the quantized ones (GENERATE_PROPOSALS' QUANT16_SYMM anchors).
    """
    def floats(code):
        return {k: code for k in quant_only}
    return [
        TypeCase(3, T=C.TENSOR_FLOAT32, R=C.TENSOR_FLOAT32, S=C.FLOAT32, **floats(C.TENSOR_FLOAT32)),
        TypeCase(3, T=C.TENSOR_FLOAT16, R=C.TENSOR_FLOAT16, S=C.FLOAT16, **floats(C.TENSOR_FLOAT16)),
        TypeCase(3, T=C.TENSOR_QUANT8_ASYMM, R=C.TENSOR_QUANT16_ASYMM, S=C.FLOAT32, **quant_only),
        TypeCase(4, T=C.TENSOR_QUANT8_ASYMM_SIGNED, R=C.TENSOR_QUANT16_ASYMM, S=C.FLOAT32, **quant_only),
    ]


def box_quant(*names: str):
    """QUANT16 box operands (inputs or outputs) must use scale 0.125 and zero point 0."""
    def rule(v):
        for n in names:
            for o in v.inputs(n) + v.outputs(n):
                if o is None or o.is_omitted:
                    continue
                if o.type.code in (C.TENSOR_QUANT16_ASYMM, C.TENSOR_QUANT16_SYMM) and (
                        o.type.scale != _BOX_SCALE or o.type.zero_point != 0):
                    yield (f"{n} of type {o.type.code.name} must have scale {_BOX_SCALE} and zero point 0, "
                           f"got scale {o.type.scale:g} zero point {o.type.zero_point}")
    return rule


def _ranks(**ranks):
    return [rank_in(name, (r,)) for name, r in ranks.items()]


# -- shape and parameter rules (known extents only: 0 is unknown) ------------------------------

def _e(dims, axis: int) -> int:
    """Extent `axis` of a Shape, 0 when unknown (or the Shape is shorter)."""
    return dims[axis] if dims is not None and len(dims) > axis else 0


def _agree(*extents: int) -> bool:
    """The known ones of several extents are equal."""
    return len({e for e in extents if e}) <= 1


def _is(extent: int, want: int) -> bool:
    return extent in (0, want)


def _show(dims) -> str:
    return "[?]" if dims is None else "[" + ", ".join(str(d) if d else "?" for d in dims) + "]"


def _nhwc(v, name: str):
    """(n, h, w, c) of 4-D input `name` in the operation's layout, zeros where unknown."""
    nchw = layout(v)
    return split_image(v.dims(name), nchw) if nchw is not None else (0, 0, 0, 0)


def _positive(*names: str, what: str):
    """Constant (or run-time) scalars that must be positive."""
    def rule(v):
        values = [v.const(n) for n in names]
        if all(x is not None for x in values) and min(values) <= 0:
            yield f"{what} must be positive, got {' x '.join(f'{x:g}' for x in values)}"
    return rule


def _bbox_shapes(v):
    rois, deltas, batches, image = (v.dims(n) for n in ("rois", "deltas", "batches", "image_info"))
    if not _agree(_e(rois, 0), _e(deltas, 0), _e(batches, 0)) or not _is(_e(rois, 1), 4) or _e(deltas, 1) % 4:
        yield (f"rois {_show(rois)}, deltas {_show(deltas)} and batches {_show(batches)} do not fit "
               f"[n, 4], [n, 4 * classes], [n]")
    if not _is(_e(image, 1), 2):
        yield f"image info must be [batches, 2], got {_show(image)}"


def _two_classes(classes: int):
    if classes and classes < 2:
        yield "need at least two classes (class 0 is background)"


def _nms_shapes(v):
    scores, rois, batches = v.dims("scores"), v.dims("rois"), v.dims("batches")
    classes, width = _e(scores, 1), _e(rois, 1)
    if not _agree(_e(scores, 0), _e(rois, 0), _e(batches, 0)) or (classes and width and width != 4 * classes):
        yield f"rois {_show(rois)} / batches {_show(batches)} do not fit scores {_show(scores)}"
    yield from _two_classes(classes)


def _ssd_shapes(v):
    scores, deltas, anchors = v.dims("scores"), v.dims("deltas"), v.dims("anchors")
    if not _agree(_e(scores, 0), _e(deltas, 0)) or not _agree(_e(scores, 1), _e(deltas, 1), _e(anchors, 0)) \
            or 0 < _e(deltas, 2) < 4 or not _is(_e(anchors, 1), 4):
        yield f"deltas {_show(deltas)} / anchors {_show(anchors)} do not fit scores {_show(scores)}"
    yield from _two_classes(_e(scores, 2))


def _ssd_params(v):
    """The reference's prepare-step checks of the scalar parameters."""
    scales = [v.const(n) for n in ("scale_y", "scale_x", "scale_h", "scale_w")]
    if None not in scales and min(scales) <= 0:
        yield f"box scales must be positive, got {[float(x) for x in scales]}"
    thresholds = [v.const(n) for n in ("score_threshold", "iou_threshold")]
    if any(t is not None and t < 0 for t in thresholds):
        yield "score and IoU thresholds must be non-negative"
    most, regular = v.const("max_detections"), v.const("use_regular_nms")
    if most is not None and most <= 0:
        yield f"max_detections must be positive, got {most}"
    per_class, per_detection = v.const("max_detections_per_class"), v.const("max_classes_per_detection")
    if regular is True and per_class is not None and per_class <= 0:
        yield f"max detections per class must be positive, got {per_class}"
    if regular is False and per_detection is not None and per_detection <= 0:
        yield f"max classes per detection must be positive, got {per_detection}"


def _proposal_shapes(v):
    """scores [b, h, w, A], deltas [b, h, w, 4 A] (in the layout), anchors [A, 4], image info [b, 2]."""
    (b, h, w, a), (db, dh, dw, dc) = _nhwc(v, "scores"), _nhwc(v, "deltas")
    anchors, image = v.dims("anchors"), v.dims("image_info")
    if not (_agree(b, db, _e(image, 0)) and _agree(h, dh) and _agree(w, dw) and _agree(a, _e(anchors, 0))
            and _is(_e(anchors, 1), 4) and _is(_e(image, 1), 2) and not (a and dc and dc != 4 * a)):
        yield (f"scores {_show(v.dims('scores'))}, deltas {_show(v.dims('deltas'))}, anchors {_show(anchors)} and "
               f"image info {_show(image)} do not fit (layout {'NCHW' if layout(v) else 'NHWC'})")


def _heatmap_shapes(v):
    count, size, width, _ = _nhwc(v, "heatmap")
    if (size and width and size != width) or 0 < size < 2 or 0 < width < 2:
        yield f"heatmaps must be square and at least 2 x 2, got {size} x {width}"
    boxes = v.dims("boxes")
    if not _agree(count, _e(boxes, 0)) or not _is(_e(boxes, 1), 4):
        yield f"boxes must be [{count or '?'}, 4], got {_show(boxes)}"


def _roi_shapes(v):
    rois, batches = v.dims("rois"), v.dims("batches")
    if not _agree(_e(rois, 0), _e(batches, 0)) or not _is(_e(rois, 1), 4):
        yield f"rois {_show(rois)} / batch indexes {_show(batches)} must be [n, 4] / [n]"


def _sampling_ratios(v):
    ratios = [v.const("height_ratio"), v.const("width_ratio")]
    if any(r is not None and r < 0 for r in ratios):
        yield f"sampling ratios must be >= 0, got {ratios}"


_ROI_RULES = [_roi_shapes, _positive("out_height", "out_width", what="output size"),
              _positive("height_stride", "width_stride", what="strides")]


# -- shape inference -------------------------------------------------------------------

def _extent(dims, axis: int, rank: int) -> int:
    """Extent `axis` of a Shape of rank `rank`, 0 when unknown (or of another rank)."""
    return dims[axis] if dims is not None and len(dims) == rank else 0


def _either(*extents: int) -> int:
    """The first known of several extents that must agree (0 when none is known)."""
    return next((e for e in extents if e), 0)


def _bbox_infer(v):
    """[num_rois, num_classes x 4], like deltas."""
    deltas = v.dims("deltas")
    return {"output": (_either(_extent(deltas, 0, 2), _extent(v.dims("rois"), 0, 2)), _extent(deltas, 1, 2))}


_KEPT_BOXES = "the number of boxes kept depends on the scores (thresholds, non-maximum suppression)"


def _kept_boxes(*names_with_tail):
    """Outputs with one row per kept box: (name, trailing extents) pairs, the row count unknown."""
    def infer(v):
        return {name: (0, *tail) for name, tail in names_with_tail}
    return infer


def _ssd_infer(v):
    """[batches, slots] scores and classes, [batches, slots, 4] boxes, [batches] counts; slots is
    max_detections, times max_classes_per_detection in fast (not regular) NMS. The slots past a
    batch's count are padding, so the shapes do not depend on the values."""
    batches = _either(_extent(v.dims("scores"), 0, 3), _extent(v.dims("deltas"), 0, 3))
    regular, most = v.const("use_regular_nms"), const_int(v, "max_detections")
    per = 1 if regular else const_int(v, "max_classes_per_detection")
    slots = most * per if regular is not None and most is not None and per is not None else 0
    slots = slots if slots > 0 else 0
    return {"out_scores": (batches, slots), "out_boxes": (batches, slots, 4), "out_classes": (batches, slots),
            "num_detections": (batches,)}


def _heatmap_infer(v):
    """[num_boxes, num_keypoints] scores and [num_boxes, num_keypoints, 2] keypoints."""
    nchw, heat = layout(v), v.dims("heatmap")
    keypoints = split_image(heat, nchw)[3] if nchw is not None else 0
    n = _either(_extent(heat, 0, 4), _extent(v.dims("boxes"), 0, 2))
    return {"out_scores": (n, keypoints), "out_keypoints": (n, keypoints, 2)}


def _roi_infer(v):
    """[num_rois, out_height, out_width, depth] (NCHW: [num_rois, depth, ...])."""
    image = image_input(v)
    if image is None:
        return {}
    nchw, depth = image[0], image[4]
    sizes = [const_int(v, "out_height"), const_int(v, "out_width")]
    oh, ow = (s if s is not None and s > 0 else 0 for s in sizes)
    return {"output": join_image(_extent(v.dims("rois"), 0, 2), oh, ow, depth, nchw)}


# -- specs -------------------------------------------------------------------------

register(OpSpec(
    code=Op.AXIS_ALIGNED_BBOX_TRANSFORM,
    forms=[Form("default",
                [arg("rois", "R"), arg("deltas", "T"), arg("batches", C.TENSOR_INT32), arg("image_info", "R")],
                [arg("output", "R")])],
    # deltas are quant8 (either signedness) while every box is QUANT16_ASYMM
    type_cases=[TypeCase(3, T=C.TENSOR_FLOAT32, R=C.TENSOR_FLOAT32),
                TypeCase(3, T=C.TENSOR_FLOAT16, R=C.TENSOR_FLOAT16),
                TypeCase(3, T=C.TENSOR_QUANT8_ASYMM, R=C.TENSOR_QUANT16_ASYMM),
                TypeCase(4, T=C.TENSOR_QUANT8_ASYMM_SIGNED, R=C.TENSOR_QUANT16_ASYMM)],
    rules=[box_quant("rois", "image_info", "output"),
           *_ranks(rois=2, deltas=2, batches=1, image_info=2, output=2), _bbox_shapes],
    infer=_bbox_infer,
    doc="rois [n, 4] (x1, y1, x2, y2) moved by per-class deltas (dx, dy, dw, dh), clipped to the image",
))

register(OpSpec(
    code=Op.BOX_WITH_NMS_LIMIT,
    forms=[Form("default",
                [arg("scores", "T"), arg("rois", "R"), arg("batches", C.TENSOR_INT32),
                 arg("score_threshold", "S"), arg("max_detections", C.INT32), arg("nms_kernel", C.INT32),
                 arg("iou_threshold", "S"), arg("sigma", "S"), arg("nms_score_threshold", "S")],
                [arg("out_scores", "T"), arg("out_rois", "R"), arg("out_classes", C.TENSOR_INT32),
                 arg("out_batches", C.TENSOR_INT32)])],
    type_cases=_cases(),
    rules=[box_quant("rois", "out_rois"), same_quant("scores", "out_scores"),
           *_ranks(scores=2, rois=2, batches=1), _nms_shapes,
           *output_ranks(out_scores=1, out_rois=2, out_classes=1, out_batches=1)],
    infer=_kept_boxes(("out_scores", ()), ("out_rois", (4,)), ("out_classes", ()), ("out_batches", ())),
    value_dependent=dict.fromkeys(("out_scores", "out_rois", "out_classes", "out_batches"), _KEPT_BOXES),
    doc="per-class hard / linear / gaussian NMS over rois grouped by batch; class 0 is background",
))

register(OpSpec(
    code=Op.DETECTION_POSTPROCESSING,
    forms=[Form("default",
                [arg("scores", "T"), arg("deltas", "T"), arg("anchors", "T"),
                 arg("scale_y", "S"), arg("scale_x", "S"), arg("scale_h", "S"), arg("scale_w", "S"),
                 arg("use_regular_nms", C.BOOL), arg("max_detections", C.INT32),
                 arg("max_classes_per_detection", C.INT32), arg("max_detections_per_class", C.INT32),
                 arg("score_threshold", "S"), arg("iou_threshold", "S"), arg("background_in_label", C.BOOL)],
                [arg("out_scores", "T"), arg("out_boxes", "T"), arg("out_classes", C.TENSOR_INT32),
                 arg("num_detections", C.TENSOR_INT32)])],
    type_cases=[TypeCase(3, T=C.TENSOR_FLOAT32, S=C.FLOAT32), TypeCase(3, T=C.TENSOR_FLOAT16, S=C.FLOAT16)],
    rules=_ranks(scores=3, deltas=3, anchors=2) + [_ssd_shapes, _ssd_params]
    + output_ranks(out_scores=2, out_boxes=3, out_classes=2, num_detections=1),
    infer=_ssd_infer,
    doc="TFLite SSD post-processing: decode center-size boxes, then regular or fast NMS",
))

register(OpSpec(
    code=Op.GENERATE_PROPOSALS,
    forms=[Form("default",
                [arg("scores", "T"), arg("deltas", "T"), arg("anchors", "A"), arg("image_info", "R"),
                 arg("height_stride", "S"), arg("width_stride", "S"), arg("pre_nms_max", C.INT32),
                 arg("post_nms_max", C.INT32), arg("iou_threshold", "S"), arg("min_size", "S"),
                 arg("layout", C.BOOL)],
                [arg("out_scores", "T"), arg("out_rois", "R"), arg("out_batches", C.TENSOR_INT32)])],
    # quantized anchors are QUANT16_SYMM, while image info and the output rois are QUANT16_ASYMM
    type_cases=_cases(A=C.TENSOR_QUANT16_SYMM),
    rules=[box_quant("anchors", "image_info", "out_rois"), same_quant("scores", "out_scores"),
           *_ranks(scores=4, deltas=4, anchors=2, image_info=2), _proposal_shapes,
           *output_ranks(out_scores=1, out_rois=2, out_batches=1)],
    infer=_kept_boxes(("out_scores", ()), ("out_rois", (4,)), ("out_batches", ())),
    value_dependent=dict.fromkeys(("out_scores", "out_rois", "out_batches"), _KEPT_BOXES),
    doc="RPN proposals: anchors shifted over the feature map, transformed, filtered, hard NMS",
))

register(OpSpec(
    code=Op.HEATMAP_MAX_KEYPOINT,
    forms=[Form("default", [arg("heatmap", "T"), arg("boxes", "R"), arg("layout", C.BOOL)],
                [arg("out_scores", "T"), arg("out_keypoints", "R")])],
    type_cases=_cases(),
    rules=[box_quant("boxes", "out_keypoints"), *_ranks(heatmap=4, boxes=2), _heatmap_shapes,
           *output_ranks(out_scores=2, out_keypoints=3)],
    infer=_heatmap_infer,
    doc="per box and keypoint: heatmap argmax refined by a quadratic fit, mapped into the box",
))

_ROI_HEAD = [arg("input", "T"), arg("rois", "R"), arg("batches", C.TENSOR_INT32),
             arg("out_height", C.INT32), arg("out_width", C.INT32),
             arg("height_stride", "S"), arg("width_stride", "S")]

register(OpSpec(
    code=Op.ROI_ALIGN,
    forms=[Form("default", _ROI_HEAD + [arg("height_ratio", C.INT32), arg("width_ratio", C.INT32),
                                        arg("layout", C.BOOL)],
                [arg("output", "T")])],
    type_cases=_cases(),
    rules=[box_quant("rois"), *_ranks(input=4, rois=2, output=4), *_ROI_RULES, _sampling_ratios],
    infer=_roi_infer,
    doc="average of bilinear samples per output bin of each region (sampling ratio 0 = adaptive)",
))

register(OpSpec(
    code=Op.ROI_POOLING,
    forms=[Form("default", _ROI_HEAD + [arg("layout", C.BOOL)], [arg("output", "T")])],
    type_cases=_cases(),
    rules=[box_quant("rois"), same_quant("input", "output"), *_ranks(input=4, rois=2, output=4), *_ROI_RULES],
    infer=_roi_infer,
    doc="max over each output bin of each region (bins rounded outward)",
))
