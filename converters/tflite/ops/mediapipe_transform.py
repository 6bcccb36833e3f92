"""MediaPipe's TransformTensorBilinear and Landmarks2TransformMatrix (version 2; options: flexbuffer
maps) -> NNAPI compositions.

TransformTensorBilinear (options output_height / output_width) becomes a composition around GATHER.

The kernel maps every output pixel (x, y) through the first two rows of a 4x4 matrix (with its
align-corners shift m[r][3] += m[r][0] / 2 + m[r][1] / 2 - 1 / 2), reads the four neighbours of
the point from the first batch of the input (zero outside it) and blends them bilinearly; points
outside [0, W - 1] x [0, H - 1] give 0. The composition computes the points with the kernel's
float operations in its order (affine_xy), FLOOR / CAST for the corners, gathers the corner rows
of the input flattened to [H * W + 1, C] (the extra zero row stands for every neighbour outside the
input and for points out of bounds, so no value is ever multiplied by a 0/1 mask), and blends with
MUL / ADD / SUB.

How close: the kernel evaluates the align-corners shift and the blend weights (1.0 - r) partly
in double precision, NNAPI only in float32. The shift then differs by at most one float32
rounding (about 2^-24 |m[r][3]|), which moves a point by that much: the output changes by that
times the input's gradient, and a point within that distance of the input's border can fall on
the other side of the bounds test. The blend adds at most two float32 roundings per product, so
|ours - kernel| <= 6 * 2^-24 * (|q11| + |q21| + |q12| + |q22|) for points inside. NaN points
(NaN matrix entries) are undefined in the kernel (a float -> int conversion of NaN) and give
arbitrary corners here.

Landmarks2TransformMatrix (version 2) builds the 4x4 crop matrix of a set of landmarks: the
rotation r = target - atan2(dy, dx) of the left -> right landmark vector, the landmarks of the
subset rotated by r, their bounding box (REDUCE_MAX / REDUCE_MIN), its centre rotated back, and
the product shift * rotation(-r) * scale * shift2, whose non-trivial entries are
[cos r sx, sin r sy, 0, (cos r sx shift2_x + sin r sy shift2_y) + centre_x] and
[-sin r sx, cos r sy, 0, (-sin r sx shift2_x + cos r sy shift2_y) + centre_y]. NNAPI has no atan2
and no cos, but the angle itself is never needed: with h = sqrt(dx^2 + dy^2), cos r =
cos t dx / h + sin t dy / h and sin r = sin t dx / h - cos t dy / h (cos t, sin t constants; h = 0
gives atan2's angle 0). How close: the kernel rounds atan2, the angle and cos / sin to float32
(about 1 ulp each, so cos r and sin r within about 3 * 2^-24 of the true values, 2^-24 |r| more
from the rounded angle); the closed form is within about 3 * 2^-24 of them, so the two differ by
at most about (6 + |r|) * 2^-24 in each trigonometric value, which the rest of the kernel's
float operations, repeated here in its order, scale by the landmark extents: every matrix entry
differs by at most about 8 * 2^-24 * (1 + |r|) times the largest landmark coordinate.
"""
from __future__ import annotations

import flatbuffers.flexbuffers as flexbuffers
import numpy as np

from nnapi import OperandCode as C, OperandType, OperationCode as Op

from ...registry import Reason, Unsupported, converter
from .common import name
from .mediapipe import affine_xy, binary, float32_only, matrix_rows_as_columns, operand_slice
from .nn_common import static_shape


def _options(node) -> dict:
    try:
        options = flexbuffers.Loads(node.custom_options) if node.custom_options else {}
    except Exception as e:  # flexbuffers raises assorted errors on malformed bytes
        raise Unsupported(Reason.ATTRIBUTE, f"{node.op[len('CUSTOM:'):]}: malformed custom options "
                                            f"({type(e).__name__}: {e})") from None
    return options if isinstance(options, dict) else {}


def _typed(ctx, code: C, shape, label: str) -> int:
    return ctx.temp(OperandType(code, list(shape)), label)


def _emit(ctx, op: Op, out_code: C, dims, label: str, **named) -> int:
    """One operation by argument name into a new operand of `out_code` and `dims`."""
    out = _typed(ctx, out_code, dims, label)
    ctx.emit_form(op, "default", [out], **named)
    return out


def _filled(ctx, dims, value, code: C, label: str) -> int:
    """A tensor of `dims` filled with `value` at run time (FILL: no large constant)."""
    scalar = ctx.i32(value) if code == C.TENSOR_INT32 else ctx.f32(value)
    return _emit(ctx, Op.FILL, code, dims, label, shape=ctx.const(np.asarray(dims, np.int32)), value=scalar)


@converter("tflite", "CUSTOM:TransformTensorBilinear", versions=(2, 2))
def transform_tensor_bilinear(node, ctx):
    """TransformTensorBilinear v2 -> affine points, FLOOR / CAST corners, GATHER of the corner rows,
    bilinear blend; float32 where the kernel mixes in double (bound in the module docstring)."""
    if len(node.inputs) != 2 or len(node.outputs) != 1:
        raise Unsupported(Reason.INVALID, "TransformTensorBilinear takes 2 inputs and gives 1 output")
    x, m = node.inputs
    y = node.outputs[0]
    float32_only(ctx, node, [x, m, y])
    in_shape, out_shape = static_shape(ctx, x, "input"), static_shape(ctx, y, "output")
    if len(in_shape) != 4 or len(out_shape) != 4 or in_shape[0] != 1 or out_shape[0] != 1 \
            or out_shape[3] != in_shape[3]:
        raise Unsupported(Reason.RANK, f"TransformTensorBilinear: input {name(ctx, x)} {list(in_shape)} and output "
                                       f"{name(ctx, y)} {list(out_shape)} must be [1, H, W, C] and [1, h, w, C]")
    options = _options(node)
    declared = (options.get("output_height", out_shape[1]), options.get("output_width", out_shape[2]))
    if tuple(declared) != tuple(out_shape[1:3]):
        raise Unsupported(Reason.ATTRIBUTE, f"TransformTensorBilinear: options output {list(declared)} disagree "
                                            f"with output {name(ctx, y)} {list(out_shape)}")
    _, h, w, c = in_shape
    oh, ow = out_shape[1:3]
    n = oh * ow
    label = ctx.tensor(y).name
    f32, i32, b8 = C.TENSOR_FLOAT32, C.TENSOR_INT32, C.TENSOR_BOOL8
    col, blend = [n, 1], [n, 1, c]

    # the transformed points, with the align-corners shift of column 3
    c0, c1, c2, c3 = matrix_rows_as_columns(ctx, m, label)
    half = ctx.const(np.float32([0.5]))
    shift = binary(ctx, Op.ADD, binary(ctx, Op.MUL, c0, half, [1, 2], f"{label}/m0_half"),
                   binary(ctx, Op.MUL, c1, half, [1, 2], f"{label}/m1_half"), [1, 2], f"{label}/halves")
    shift = binary(ctx, Op.SUB, shift, half, [1, 2], f"{label}/shift")
    c3 = binary(ctx, Op.ADD, c3, shift, [1, 2], f"{label}/m3_aligned")
    grid_y, grid_x = np.divmod(np.arange(n), ow)
    points = affine_xy(ctx, ctx.const(grid_x.astype(np.float32).reshape(col), name=f"{label}/grid_x"),
                       ctx.const(grid_y.astype(np.float32).reshape(col), name=f"{label}/grid_y"),
                       [c0, c1, c2, c3], [n, 2], label)
    tx = operand_slice(ctx, points, [0, 0], col, f"{label}/tx")
    ty = operand_slice(ctx, points, [0, 1], col, f"{label}/ty")

    # in bounds exactly when the kernel's out_of_bound test fails
    def test(code: Op, a: int, bound: float, tag: str) -> int:
        return _emit(ctx, code, b8, col, f"{label}/{tag}", input1=a, input2=ctx.const(np.float32([bound])))

    def either(a: int, b: int, tag: str) -> int:
        return _emit(ctx, Op.LOGICAL_OR, b8, col, f"{label}/{tag}", input1=a, input2=b)

    def both(a: int, b: int, tag: str) -> int:
        return _emit(ctx, Op.LOGICAL_AND, b8, col, f"{label}/{tag}", input1=a, input2=b)

    outside = either(either(test(Op.LESS, tx, 0.0, "x_low"), test(Op.GREATER, tx, w - 1, "x_high"), "x_out"),
                     either(test(Op.LESS, ty, 0.0, "y_low"), test(Op.GREATER, ty, h - 1, "y_high"), "y_out"),
                     "outside")
    inside = _emit(ctx, Op.LOGICAL_NOT, b8, col, f"{label}/inside", input=outside)
    fx = _emit(ctx, Op.FLOOR, f32, col, f"{label}/floor_x", input=tx)
    fy = _emit(ctx, Op.FLOOR, f32, col, f"{label}/floor_y", input=ty)
    right = both(inside, test(Op.LESS, fx, w - 1, "has_right"), "right_in")
    down = both(inside, test(Op.LESS, fy, h - 1, "has_down"), "down_in")

    # corner rows of the input flattened to [H * W + 1, C]; row H * W is zero
    def clamped_int(v: int, top: int, tag: str) -> int:  # out-of-bounds points never index with it
        lo = binary(ctx, Op.MAXIMUM, v, ctx.const(np.float32([0])), col, f"{label}/{tag}_lo", fuse=False)
        hi = binary(ctx, Op.MINIMUM, lo, ctx.const(np.float32([top])), col, f"{label}/{tag}_hi", fuse=False)
        return _emit(ctx, Op.CAST, i32, col, f"{label}/{tag}", input=hi)

    base = binary(ctx, Op.ADD, binary(ctx, Op.MUL, clamped_int(fy, h - 1, "iy"), ctx.const(np.int32([w])), col,
                                      f"{label}/row_start", code=i32),
                  clamped_int(fx, w - 1, "ix"), col, f"{label}/corner11", code=i32)
    zero_row = _filled(ctx, col, h * w, i32, f"{label}/zero_row")
    rows = ctx.temp(OperandType(f32, [h * w, c]), f"{label}/rows")
    ctx.emit_form(Op.RESHAPE, "default", [rows], input=ctx.operand(x),
                  shape=ctx.const(np.asarray([h * w, c], np.int32)))
    table = _emit(ctx, Op.CONCATENATION, f32, [h * w + 1, c], f"{label}/rows_and_zero",
                  inputs=[rows, ctx.const(np.zeros((1, c), np.float32))], axis=ctx.i32(0))

    def corner(valid: int, offset: int, tag: str) -> int:
        index = base if offset == 0 else binary(ctx, Op.ADD, base, ctx.const(np.int32([offset])), col,
                                                f"{label}/{tag}_raw", code=i32)
        index = _emit(ctx, Op.SELECT, i32, col, f"{label}/{tag}_index", condition=valid, input1=index, input2=zero_row)
        # indices [n, 1] give rows [n, 1, C] (an int32 RESHAPE would need feature level 6)
        return _emit(ctx, Op.GATHER, f32, blend, f"{label}/{tag}", input=table, axis=ctx.i32(0), indices=index)

    q11, q21 = corner(inside, 0, "q11"), corner(right, 1, "q21")
    q12, q22 = corner(down, w, "q12"), corner(both(right, down, "both_in"), w + 1, "q22")

    # the blend, in the kernel's order; out-of-bounds points have weights 0 and zero corners
    zero, one = _filled(ctx, col, 0.0, f32, f"{label}/zeros"), ctx.const(np.float32([1]))

    def fraction(t: int, floor: int, tag: str) -> int:  # as [n, 1, 1], to scale rows [n, 1, C]
        raw = binary(ctx, Op.SUB, t, floor, col, f"{label}/{tag}_raw")
        kept = _emit(ctx, Op.SELECT, f32, col, f"{label}/{tag}_kept", condition=inside, input1=raw, input2=zero)
        return _emit(ctx, Op.RESHAPE, f32, [n, 1, 1], f"{label}/{tag}", input=kept,
                     shape=ctx.const(np.asarray([n, 1, 1], np.int32)))

    def mix(weight: int, a: int, b: int, tag: str) -> int:  # (1 - weight) * a + weight * b
        rest = binary(ctx, Op.SUB, one, weight, [n, 1, 1], f"{label}/{tag}_rest")
        return binary(ctx, Op.ADD, binary(ctx, Op.MUL, rest, a, blend, f"{label}/{tag}_a"),
                      binary(ctx, Op.MUL, weight, b, blend, f"{label}/{tag}_b"), blend, f"{label}/{tag}")

    rx, ly = fraction(tx, fx, "right_weight"), fraction(ty, fy, "lower_weight")
    upper, lower = mix(rx, q11, q21, "upper"), mix(rx, q12, q22, "lower")
    lower_part = binary(ctx, Op.MUL, ly, lower, blend, f"{label}/lower_part")
    upper_part = binary(ctx, Op.MUL, binary(ctx, Op.SUB, one, ly, [n, 1, 1], f"{label}/upper_weight"), upper, blend,
                        f"{label}/upper_part")
    blended = binary(ctx, Op.ADD, lower_part, upper_part, blend, f"{label}/blend")
    ctx.emit_form(Op.RESHAPE, "default", [ctx.output(y)], input=blended,
                  shape=ctx.const(np.asarray(out_shape, np.int32)))


_MATRIX_KEYS = ("left_rotation_idx", "right_rotation_idx", "subset_idxs", "output_width", "output_height",
                "scale_x", "scale_y")


def _matrix_options(ctx, node, count: int) -> dict:
    """Landmarks2TransformMatrix v2's options, checked as its kernel checks them."""
    o = _options(node)
    missing = [k for k in _MATRIX_KEYS if k not in o]
    if missing:
        raise Unsupported(Reason.ATTRIBUTE, f"Landmarks2TransformMatrix: options lack {', '.join(missing)}")
    subset = [int(i) for i in o["subset_idxs"]]  # pairs; an odd last entry pairs with itself: the same set
    landmarks = [int(o["left_rotation_idx"]), int(o["right_rotation_idx"]), *subset]
    if not subset or any(not 0 <= i < count for i in landmarks):
        raise Unsupported(Reason.ATTRIBUTE, f"Landmarks2TransformMatrix: landmark indexes {landmarks} must be "
                                            f"within the {count} landmarks (and the subset not empty)")
    if o["output_width"] <= 0 or o["output_height"] <= 0 or o["scale_x"] <= 0 or o["scale_y"] <= 0:
        raise Unsupported(Reason.ATTRIBUTE, "Landmarks2TransformMatrix: output size and scales must be positive")
    return dict(o, subset_idxs=subset, target_rotation_radians=float(o.get("target_rotation_radians", 0.0)))


@converter("tflite", "CUSTOM:Landmarks2TransformMatrix", versions=(2, 2))
def landmarks_to_transform_matrix(node, ctx):
    """Landmarks2TransformMatrix v2 -> GATHER / SQRT / DIV rotation, REDUCE_MAX / REDUCE_MIN box, the
    kernel's matrix products entry by entry (cos / sin without atan2: bound in the module docstring)."""
    if len(node.inputs) != 1 or len(node.outputs) != 1:
        raise Unsupported(Reason.INVALID, "Landmarks2TransformMatrix takes 1 input and gives 1 output")
    lm, y = node.inputs[0], node.outputs[0]
    float32_only(ctx, node, [lm, y])
    shape = static_shape(ctx, lm, "landmarks")
    if len(shape) != 3 or shape[0] != 1 or shape[2] != 3 or ctx.shape(y) != (1, 4, 4):
        raise Unsupported(Reason.RANK, f"Landmarks2TransformMatrix: landmarks {name(ctx, lm)} {list(shape)} and "
                                       f"matrix {name(ctx, y)} {list(ctx.shape(y))} must be [1, N, 3] and [1, 4, 4]")
    o = _matrix_options(ctx, node, shape[1])
    label = ctx.tensor(y).name
    f32, b8, one_one = C.TENSOR_FLOAT32, C.TENSOR_BOOL8, [1, 1]
    points = _emit(ctx, Op.RESHAPE, f32, [shape[1], 3], f"{label}/landmarks", input=ctx.operand(lm),
                   shape=ctx.const(np.asarray([shape[1], 3], np.int32)))

    def pick(indexes, tag: str) -> tuple:  # (x, y) columns [K, 1] of the landmarks `indexes`
        rows = _emit(ctx, Op.GATHER, f32, [len(indexes), 3], f"{label}/{tag}", input=points, axis=ctx.i32(0),
                     indices=ctx.const(np.asarray(indexes, np.int32)))
        return tuple(operand_slice(ctx, rows, [0, k], [len(indexes), 1], f"{label}/{tag}_{'xy'[k]}")
                     for k in (0, 1))

    def mul(a, b, dims, tag):
        return binary(ctx, Op.MUL, a, b, dims, f"{label}/{tag}")

    def add(a, b, dims, tag):
        return binary(ctx, Op.ADD, a, b, dims, f"{label}/{tag}")

    def sub(a, b, dims, tag):
        return binary(ctx, Op.SUB, a, b, dims, f"{label}/{tag}")

    def const(v):
        return ctx.const(np.float32([[v]]))

    # cos r and sin r of r = target - atan2(dy, dx), from the unit vector (dx, dy) / h
    (lx, ly), (rx, ry) = pick([o["left_rotation_idx"]], "left"), pick([o["right_rotation_idx"]], "right")
    dx, dy = sub(rx, lx, one_one, "dx"), sub(ry, ly, one_one, "dy")
    h = _emit(ctx, Op.SQRT, f32, one_one, f"{label}/length",
              input=add(mul(dx, dx, one_one, "dx2"), mul(dy, dy, one_one, "dy2"), one_one, "length2"))
    degenerate = _emit(ctx, Op.EQUAL, b8, one_one, f"{label}/no_direction", input1=h, input2=const(0.0))
    cos_a = _emit(ctx, Op.SELECT, f32, one_one, f"{label}/cos_a", condition=degenerate, input1=const(1.0),
                  input2=binary(ctx, Op.DIV, dx, h, one_one, f"{label}/dx_unit"))
    sin_a = _emit(ctx, Op.SELECT, f32, one_one, f"{label}/sin_a", condition=degenerate, input1=const(0.0),
                  input2=binary(ctx, Op.DIV, dy, h, one_one, f"{label}/dy_unit"))
    t = o["target_rotation_radians"]
    ct, st = const(float(np.float32(np.cos(t)))), const(float(np.float32(np.sin(t))))
    cos_r = add(mul(ct, cos_a, one_one, "cos_r1"), mul(st, sin_a, one_one, "cos_r2"), one_one, "cos_r")
    sin_r = sub(mul(st, cos_a, one_one, "sin_r1"), mul(ct, sin_a, one_one, "sin_r2"), one_one, "sin_r")
    neg_sin_r = _emit(ctx, Op.NEG, f32, one_one, f"{label}/neg_sin_r", input=sin_r)

    # the subset rotated by r, its bounding box and the box centre rotated back
    subset = o["subset_idxs"]
    sx_, sy_ = pick(subset, "subset")
    k = [len(subset), 1]
    xr = add(mul(sx_, cos_r, k, "xr1"), mul(sy_, neg_sin_r, k, "xr2"), k, "x_rotated")
    yr = add(mul(sx_, sin_r, k, "yr1"), mul(sy_, cos_r, k, "yr2"), k, "y_rotated")

    def reduce(op: Op, v: int, tag: str) -> int:
        return _emit(ctx, op, f32, one_one, f"{label}/{tag}", input=v, axes=ctx.const(np.int32([0])),
                     keep_dims=ctx.boolean(True))
    x_hi, x_lo = reduce(Op.REDUCE_MAX, xr, "x_max"), reduce(Op.REDUCE_MIN, xr, "x_min")
    y_hi, y_lo = reduce(Op.REDUCE_MAX, yr, "y_max"), reduce(Op.REDUCE_MIN, yr, "y_min")
    half = const(0.5)
    cx = mul(add(x_lo, x_hi, one_one, "x_sum"), half, one_one, "x_mid")
    cy = mul(add(y_lo, y_hi, one_one, "y_sum"), half, one_one, "y_mid")
    crop_x = add(mul(cos_r, cx, one_one, "crop_x1"), mul(sin_r, cy, one_one, "crop_x2"), one_one, "crop_x")
    crop_y = add(mul(neg_sin_r, cx, one_one, "crop_y1"), mul(cos_r, cy, one_one, "crop_y2"), one_one, "crop_y")

    # shift * rotation(-r) * scale * shift2, entry by entry as the kernel's products leave them
    scale_x = binary(ctx, Op.DIV, mul(const(o["scale_x"]), sub(x_hi, x_lo, one_one, "width"), one_one, "sw"),
                     const(float(o["output_width"])), one_one, f"{label}/scale_x")
    scale_y = binary(ctx, Op.DIV, mul(const(o["scale_y"]), sub(y_hi, y_lo, one_one, "height"), one_one, "sh"),
                     const(float(o["output_height"])), one_one, f"{label}/scale_y")
    shift_x, shift_y = const(-(o["output_width"] / 2.0)), const(-(o["output_height"] / 2.0))
    m00, m01 = mul(cos_r, scale_x, one_one, "m00"), mul(sin_r, scale_y, one_one, "m01")
    m10, m11 = mul(neg_sin_r, scale_x, one_one, "m10"), mul(cos_r, scale_y, one_one, "m11")
    m03 = add(add(mul(m00, shift_x, one_one, "m03a"), mul(m01, shift_y, one_one, "m03b"), one_one, "m03ab"),
              crop_x, one_one, "m03")
    m13 = add(add(mul(m10, shift_x, one_one, "m13a"), mul(m11, shift_y, one_one, "m13b"), one_one, "m13ab"),
              crop_y, one_one, "m13")
    zero = const(0.0)
    rows = [_emit(ctx, Op.CONCATENATION, f32, [1, 4], f"{label}/row{r}", inputs=entries, axis=ctx.i32(1))
            for r, entries in enumerate(([m00, m01, zero, m03], [m10, m11, zero, m13]))]
    rest = ctx.const(np.float32([[0, 0, 1, 0], [0, 0, 0, 1]]), name=f"{label}/rows23")
    matrix = _emit(ctx, Op.CONCATENATION, f32, [4, 4], f"{label}/matrix", inputs=[*rows, rest], axis=ctx.i32(0))
    ctx.emit_form(Op.RESHAPE, "default", [ctx.output(y)], input=matrix,
                  shape=ctx.const(np.asarray([1, 4, 4], np.int32)))
