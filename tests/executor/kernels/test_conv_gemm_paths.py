"""The float GEMM convolution paths (executor/kernels/conv/prepared.py GemmPlan) against the exact sum:
one GEMM per tap at full width (gemm.shifted_gemm), per-tap GEMMs over only the outputs whose input is
not padding (gemm.clipped_taps), and the taps dropped where they read padding alone (gemm.tap_window).
Each stays within the float accumulation bound (conv/quant.py float_accumulation_bound) of the float64
sum, as the plain kernel does; the quantized forms are bit-exact (tests/executor/test_perf_paths.py)."""
import numpy as np
import pytest

from executor.kernels.conv.gemm import tap_window
from executor.kernels.conv.quant import float_accumulation_bound
from nnapi import OperandCode as C
from nnapi import OperandType
from nnapi import OperationCode as Op
from tests.executor.kernels.test_fast_path_arithmetic import _model, _run_both

RNG = np.random.default_rng(2211)


def _conv64(x, w, bias, stride, pads, dil):
    """Float64 NHWC convolution, one tap at a time; w [O, kh, kw, C]."""
    xp = np.pad(x.astype(np.float64), ((0, 0), pads[:2], pads[2:], (0, 0)))
    o, kh, kw, _ = w.shape
    oh = (xp.shape[1] - (kh - 1) * dil[0] - 1) // stride[0] + 1
    ow = (xp.shape[2] - (kw - 1) * dil[1] - 1) // stride[1] + 1
    acc = np.zeros((x.shape[0], oh, ow, o))
    for i in range(kh):
        for j in range(kw):
            tap = xp[:, i * dil[0]: i * dil[0] + (oh - 1) * stride[0] + 1: stride[0],
                     j * dil[1]: j * dil[1] + (ow - 1) * stride[1] + 1: stride[1]]
            acc += tap @ w[:, i, j].astype(np.float64).T
    return acc + bias


def _float_conv(x, flt, bias, stride, pads, dil, nchw=False):
    """(prepared, plain, prepared callables) of CONV_2D on NHWC x; `nchw`: the model takes and gives NCHW
    (the results are returned NHWC)."""
    n, h, w, c = x.shape
    o, kh, kw, _ = flt.shape
    oh = (h + pads[0] + pads[1] - (kh - 1) * dil[0] - 1) // stride[0] + 1
    ow = (w + pads[2] + pads[3] - (kw - 1) * dil[1] - 1) // stride[1] + 1
    scalars = [(C.INT32, pads[2]), (C.INT32, pads[3]), (C.INT32, pads[0]), (C.INT32, pads[1]),
               (C.INT32, stride[1]), (C.INT32, stride[0]), (C.INT32, 0), (C.BOOL, nchw),
               (C.INT32, dil[1]), (C.INT32, dil[0])]
    x_shape, out_shape = ((n, c, h, w), (n, o, oh, ow)) if nchw else (x.shape, (n, oh, ow, o))
    model = _model(Op.CONV_2D, OperandType(C.TENSOR_FLOAT32, x_shape), flt, OperandType(C.TENSOR_FLOAT32, flt.shape),
                   bias, scalars, OperandType(C.TENSOR_FLOAT32, out_shape))
    if not nchw:
        return _run_both(model, x)
    fast, slow, prepared = _run_both(model, np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    return fast.transpose(0, 2, 3, 1), slow.transpose(0, 2, 3, 1), prepared


def _within_bound(x, flt, bias, stride, pads, dil, *results):
    exact = _conv64(x, flt, bias, stride, pads, dil)
    bound = float_accumulation_bound(_conv64(np.abs(x), np.abs(flt), np.abs(bias), stride, pads, dil),
                                     flt[0].size)
    bound = bound + np.abs(exact) * 2.0 ** -24   # (float32 results: one more rounding)
    return all(np.all(np.abs(r - exact) <= bound) for r in results)


# (input NHWC, output channels, strides, pads (top, bottom, left, right), dilations,
#  the path taken: (shifted, clipped, kernel taps kept, im2col in pieces))
CASES = {
    "shifted": ((1, 48, 46, 64), 16, (1, 1), (1, 1, 1, 1), (1, 1), (True, False, (3, 3), False)),
    "shifted_dilated_batch": ((2, 56, 54, 48), 24, (1, 1), (2, 2, 1, 1), (2, 1), (True, False, (3, 3), False)),
    "atrous_1x1": ((1, 6, 5, 40), 8, (1, 1), (7, 7, 7, 7), (7, 7), (False, False, (1, 1), False)),
    "atrous_rows": ((1, 5, 9, 12), 8, (1, 1), (6, 6, 1, 1), (6, 1), (False, False, (1, 3), False)),
    "clipped": ((2, 8, 7, 16), 12, (1, 1), (6, 6, 6, 6), (4, 4), (False, True, (3, 3), False)),
    "clipped_strided": ((1, 9, 8, 16), 12, (2, 3), (5, 3, 4, 6), (3, 2), (False, True, (3, 3), False)),
    "pieces": ((1, 100, 98, 12), 24, (1, 1), (1, 1, 1, 1), (1, 1), (False, False, (3, 3), True)),
    "pieces_strided_batch": ((2, 190, 181, 16), 8, (2, 2), (1, 0, 1, 1), (1, 2), (False, False, (3, 3), True)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_float_gemm_paths_stay_within_the_accumulation_bound(case):
    shape, o, stride, pads, dil, path = CASES[case]
    x = RNG.standard_normal(shape).astype(np.float32)
    flt = RNG.standard_normal((o, 3, 3, shape[3])).astype(np.float32)
    bias = RNG.standard_normal(o).astype(np.float32)
    fast, slow, prepared = _float_conv(x, flt, bias, stride, pads, dil)
    plan, = prepared[0].plans.values()
    assert (plan.shifted, plan.clipped, plan.kernel_hw, plan.chunk > 0) == path
    exact = _conv64(x, flt, bias, stride, pads, dil)
    bound = float_accumulation_bound(_conv64(np.abs(x), np.abs(flt), np.abs(bias), stride, pads, dil),
                                     9 * shape[3])
    # (float32 results: one more rounding, half an ulp of the result)
    bound = bound + np.abs(exact) * 2.0 ** -24
    assert np.all(np.abs(fast - exact) <= bound) and np.all(np.abs(slow - exact) <= bound)


def test_a_non_finite_weight_in_a_padding_only_tap_keeps_the_tap():
    # the corner taps read only padding: the plain kernel's 0 * inf there is NaN, so they are not dropped
    x = RNG.standard_normal((1, 4, 4, 3)).astype(np.float32)
    flt = RNG.standard_normal((2, 3, 3, 3)).astype(np.float32)
    flt[1, 0, 0, 0] = np.inf
    fast, slow, prepared = _float_conv(x, flt, np.zeros(2, np.float32), (1, 1), (5, 5, 5, 5), (5, 5))
    plan, = prepared[0].plans.values()
    assert plan.kernel_hw == (3, 3)
    assert np.isnan(slow[..., 1]).all() and np.isnan(fast[..., 1]).all()
    np.testing.assert_allclose(fast[..., 0], slow[..., 0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size,pad,stride,k,dil,out", [
    (16, 36, 1, 3, 36, 16), (16, 12, 1, 3, 12, 16), (5, 2, 2, 5, 1, 3), (7, 0, 3, 3, 1, 2), (4, 9, 1, 3, 9, 4),
    (6, 0, 1, 1, 1, 6), (10, 1, 4, 3, 1, 3)])
def test_tap_window_keeps_exactly_the_taps_that_read_the_input(size, pad, stride, k, dil, out):
    first, taps, crop0, crop1, pad0, pad1 = tap_window(size, pad, stride, k, dil, out)
    reads = [i for i in range(k) if any(0 <= o * stride - pad + i * dil < size for o in range(out))]
    assert (first, taps) == ((reads[0], reads[-1] - reads[0] + 1) if reads else (0, k))
    # the cropped, padded input holds exactly what the kept taps read, at the same places
    length = pad0 + size - crop0 - crop1 + pad1
    assert length == (out - 1) * stride + (taps - 1) * dil + 1
    for o in range(out):
        for t in range(taps):
            original = o * stride - pad + (first + t) * dil
            position = o * stride + t * dil   # in the cropped, padded input
            inside = pad0 <= position < pad0 + size - crop0 - crop1
            assert inside == (0 <= original < size)
            if inside:
                assert position - pad0 + crop0 == original


@pytest.mark.parametrize("k,groups,pads", [(1, 4, (0, 0, 0, 0)), (3, 3, (1, 0, 2, 1)), (1, 2, (1, 1, 0, 0))])
def test_float_grouped_conv_is_one_batched_gemm_within_the_bound(k, groups, pads):
    n, h, w, cg, og = 2, 7, 6, 5, 3
    x = RNG.standard_normal((n, h, w, cg * groups)).astype(np.float32)
    flt = RNG.standard_normal((og * groups, k, k, cg)).astype(np.float32)
    bias = RNG.standard_normal(og * groups).astype(np.float32)
    oh, ow = h + pads[0] + pads[1] - k + 1, w + pads[2] + pads[3] - k + 1
    scalars = [(C.INT32, pads[2]), (C.INT32, pads[3]), (C.INT32, pads[0]), (C.INT32, pads[1]),
               (C.INT32, 1), (C.INT32, 1), (C.INT32, groups), (C.INT32, 0), (C.BOOL, False)]
    model = _model(Op.GROUPED_CONV_2D, OperandType(C.TENSOR_FLOAT32, x.shape), flt,
                   OperandType(C.TENSOR_FLOAT32, flt.shape), bias, scalars,
                   OperandType(C.TENSOR_FLOAT32, (n, oh, ow, og * groups)))
    fast, slow, _ = _run_both(model, x)
    parts = [slice(g * cg, (g + 1) * cg) for g in range(groups)]
    outs = [slice(g * og, (g + 1) * og) for g in range(groups)]
    exact = np.concatenate([_conv64(x[..., p], flt[q], bias[q], (1, 1), pads, (1, 1)) for p, q in zip(parts, outs)], -1)
    abs_sum = np.concatenate([_conv64(np.abs(x[..., p]), np.abs(flt[q]), np.abs(bias[q]), (1, 1), pads, (1, 1))
                              for p, q in zip(parts, outs)], -1)
    bound = float_accumulation_bound(abs_sum, k * k * cg) + np.abs(exact) * 2.0 ** -24
    assert np.all(np.abs(fast - exact) <= bound) and np.all(np.abs(slow - exact) <= bound)


@pytest.mark.parametrize("channels", [3, 12])
def test_pad_hw_without_padding_makes_a_channels_first_view_contiguous_only_when_asked(channels):
    from executor.kernels.conv.gemm import pad_hw
    from executor.kernels.scratch import Scratch
    view = RNG.standard_normal((2, channels, 40, 50)).astype(np.float32).transpose(0, 2, 3, 1)
    assert pad_hw(view, (0, 0, 0, 0), Scratch(), np.float32) is view
    got = pad_hw(view, (0, 0, 0, 0), Scratch(), np.float32, contiguous=True)
    assert got.flags.c_contiguous and np.array_equal(got, view)


# (input NHWC, output channels, kernel, strides, pads, dilations, output pixels per GEMM row when
# gemm.row_taps runs it, else None)
ROW_TAPS = {
    "3x3": ((1, 12, 11, 16), 16, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "dilated_strided_columns_batch": ((2, 9, 14, 8), 8, 3, (1, 2), (2, 0, 1, 2), (2, 1), 1),
    "5x5_more_outputs": ((1, 10, 9, 4), 20, 5, (1, 1), (2, 2, 2, 2), (1, 1), 1),
    # few output channels: adjacent output pixels share a GEMM row (gemm.row_group)
    "grouped_pairs_batch": ((2, 10, 12, 8), 8, 3, (1, 1), (1, 1, 1, 1), (1, 1), 2),
    "grouped_by_4_dilated_rows": ((1, 11, 8, 6), 3, 3, (1, 1), (2, 2, 0, 2), (2, 1), 4),
    "grouped_odd_width_5x5": ((1, 9, 13, 4), 5, 5, (1, 1), (2, 2, 2, 2), (1, 1), 1),
    "grouped_by_3": ((1, 7, 9, 2), 5, 3, (1, 1), (0, 0, 1, 1), (1, 1), 3),
    # more output channels than kw * C: im2col; a row stride of 2: im2col
    "too_many_outputs": ((1, 12, 11, 4), 16, 3, (1, 1), (1, 1, 1, 1), (1, 1), None),
    "row_stride": ((1, 12, 11, 16), 16, 3, (2, 1), (1, 1, 1, 1), (1, 1), None),
}


@pytest.mark.parametrize("case", sorted(ROW_TAPS))
def test_row_taps_within_the_accumulation_bound(case):
    shape, o, k, stride, pads, dil, rows = ROW_TAPS[case]
    x = RNG.standard_normal(shape).astype(np.float32)
    flt = RNG.standard_normal((o, k, k, shape[3])).astype(np.float32)
    bias = RNG.standard_normal(o).astype(np.float32)
    fast, slow, prepared = _float_conv(x, flt, bias, stride, pads, dil)
    plan, = prepared[0].plans.values()
    assert (plan.rows and plan.rows[0]) == rows and not (plan.shifted or plan.clipped or plan.chunk)
    assert _within_bound(x, flt, bias, stride, pads, dil, fast, slow)


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_grouped_row_taps_keep_a_non_finite_input_to_the_outputs_that_read_it(value):
    # the grouped GEMM multiplies the pixel by zero weights for the outputs beside its window (NaN);
    # those outputs are then computed ungrouped, as the plain kernel has them
    x = RNG.standard_normal((1, 6, 8, 4)).astype(np.float32)
    x[0, 2, 3, 1] = value
    flt = RNG.standard_normal((4, 3, 3, 4)).astype(np.float32)
    fast, slow, prepared = _float_conv(x, flt, np.zeros(4, np.float32), (1, 1), (1, 1, 1, 1), (1, 1))
    plan, = prepared[0].plans.values()
    assert plan.rows[0] == 4
    assert np.array_equal(np.isnan(fast), np.isnan(slow)) and np.array_equal(np.isinf(fast), np.isinf(slow))
    assert np.isfinite(slow[0, :, :1]).all() and not np.isfinite(slow[0, 1:4, 2:5]).all()
    finite = np.isfinite(slow)
    np.testing.assert_allclose(fast[finite], slow[finite], rtol=1e-5, atol=1e-5)


# (input NHWC, output channels, kernel, strides, pads, dilations): an NCHW model's few-channel input,
# read a plane at a time (gemm.plane_patches)
PLANES = {
    "stride_2": ((1, 17, 16, 3), 8, 3, (2, 2), (1, 0, 2, 1), (1, 1)),
    "stride_1_dilated": ((2, 14, 13, 3), 6, 3, (1, 1), (2, 2, 2, 2), (2, 2)),
    "5x5_stride_3_1": ((1, 19, 16, 2), 5, 5, (3, 1), (2, 1, 0, 2), (1, 1)),
    "7x7_stride_2": ((1, 21, 20, 3), 16, 7, (2, 2), (3, 3, 3, 3), (1, 1)),
    "1x1_stride_2": ((1, 9, 8, 4), 4, 1, (2, 2), (0, 0, 0, 0), (1, 1)),
}


@pytest.mark.parametrize("case", sorted(PLANES))
def test_channels_first_input_planes_within_the_accumulation_bound(case):
    shape, o, k, stride, pads, dil = PLANES[case]
    x = RNG.standard_normal(shape).astype(np.float32)
    flt = RNG.standard_normal((o, k, k, shape[3])).astype(np.float32)
    bias = RNG.standard_normal(o).astype(np.float32)
    fast, slow, prepared = _float_conv(x, flt, bias, stride, pads, dil, nchw=True)
    plan, = prepared[0].plans.values()
    assert plan._plane_weights is not None   # (made at the planes path's first use)
    assert _within_bound(x, flt, bias, stride, pads, dil, fast, slow)


def test_plane_patches_are_the_transposed_patch_matrix():
    from executor.kernels.conv.gemm import plane_patches
    from executor.kernels.scratch import Scratch
    x = RNG.standard_normal((3, 11, 10)).astype(np.float32).transpose(1, 2, 0)   # [H, W, C], channels first
    pads, strides, dil, k = (2, 1, 1, 3), (2, 3), (1, 2), (3, 2)
    xp = np.pad(x, (pads[:2], pads[2:], (0, 0)), constant_values=7)
    oh = (xp.shape[0] - (k[0] - 1) * dil[0] - 1) // strides[0] + 1
    ow = (xp.shape[1] - (k[1] - 1) * dil[1] - 1) // strides[1] + 1
    cols, wq = plane_patches(x, pads, strides, dil, k, (oh, ow), Scratch(), np.float32, zero_point=1, fill=7)
    got = cols.reshape(3, k[0], k[1], -1)
    for r in range(oh):
        for q in range(ow):
            for i in range(k[0]):
                for j in range(k[1]):
                    pixel = xp[r * strides[0] + i * dil[0], q * strides[1] + j * dil[1]]
                    # (the padding is the fill; the image values less the zero point)
                    want = np.where(pixel == 7, 7, pixel - 1)
                    assert np.array_equal(got[:, i, j, r * wq + q], want)


@pytest.mark.parametrize("kernel,outputs,pads,value", [(1, 8, (0, 0, 0, 0), 0), (3, 4, (1, 1, 1, 1), 0),
                                                        (3, 12, (0, 2, 1, 1), 0), (3, 4, (1, 1, 1, 1), np.inf),
                                                        (3, 40, (1, 1, 1, 1), 0), (1, 8, (1, 0, 0, 1), 0)])
def test_planned_runs_repeat_the_first_run(kernel, outputs, pads, value):
    # the first run of an input shape takes the general path and plans the next ones (PreparedConv._planned);
    # an inf input makes the grouped row_taps GEMM's NaN, rerun ungrouped there too
    from executor.runtime import RunState, compile_model
    x = RNG.standard_normal((2, 7, 8, 6)).astype(np.float32)
    x[1, 3, 4, 2] += value
    flt = RNG.standard_normal((outputs, kernel, kernel, 6)).astype(np.float32)
    bias = RNG.standard_normal(outputs).astype(np.float32)
    fast, slow, _ = _float_conv(x, flt, bias, (1, 1), pads, (1, 1))
    oh, ow = 7 + pads[0] + pads[1] - kernel + 1, 8 + pads[2] + pads[3] - kernel + 1
    scalars = [(C.INT32, pads[2]), (C.INT32, pads[3]), (C.INT32, pads[0]), (C.INT32, pads[1]),
               (C.INT32, 1), (C.INT32, 1), (C.INT32, 1), (C.BOOL, False)]
    model = _model(Op.CONV_2D, OperandType(C.TENSOR_FLOAT32, x.shape), flt, OperandType(C.TENSOR_FLOAT32, flt.shape),
                   bias, scalars, OperandType(C.TENSOR_FLOAT32, (2, oh, ow, outputs)))
    compiled = compile_model(model)
    first = compiled.run([x], RunState(2.0))[0].array.copy()
    plan, = compiled.steps[0].run.plans.values()
    # (1x1 unpadded: the input as it is; 3x3 to 40 > 3 * 6 channels: im2col; else row_taps)
    assert (plan.pointwise, plan.rows is not None) == (not any(pads), kernel == 3 and outputs <= 18)
    assert list(compiled.steps[0].run.planned) == [x.shape]
    for _ in range(2):
        again = compiled.run([x], RunState(2.0))[0].array
        assert np.array_equal(again, first, equal_nan=True)
    # (fused RELU here, none in _float_conv; NaN stays NaN)
    assert np.array_equal(first, np.where(np.isnan(fast), fast, np.maximum(fast, 0)), equal_nan=True)
    if value:
        assert np.array_equal(np.isnan(fast), np.isnan(slow)) and np.isfinite(first[0]).all()
    other = RNG.standard_normal(x.shape).astype(np.float32)   # (the same GEMMs: bit for bit)
    want, _, _ = _float_conv(other, flt, bias, (1, 1), pads, (1, 1))
    assert np.array_equal(compiled.run([other], RunState(2.0))[0].array, np.maximum(want, 0))
