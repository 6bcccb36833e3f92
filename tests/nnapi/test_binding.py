"""OpSpec.bind: an operation's arguments by name with their constants and derived facts
(nnapi/ops/binding.py), as the executor's kernels read them."""
import numpy as np
import pytest

import nnapi
from nnapi import OperandCode as C, OperandType, OperationCode as Op, PaddingCode
from nnapi.ops import SPECS, spec_for
from nnapi.ops.binding import Args
from tests.executor.op_harness import OMIT, build, scalar

F32 = C.TENSOR_FLOAT32


class _V:
    """A stand-in run-time Value: the binding reads only `.array` (scalars) and passes tensors on."""

    def __init__(self, a):
        self.array = np.asarray(a)
        self.shape = self.array.shape


def _conv(scalars, in_dims=(1, 5, 7, 2)):
    tensors = [(OperandType(F32, in_dims), None), (OperandType(F32, (3, 3, 2, 2)), np.ones(36)),
               (OperandType(F32, (3,)), np.zeros(3))]
    return build(Op.CONV_2D, tensors + scalars, [OperandType(F32, (1, 0, 0, 3))])


def test_no_argument_name_is_shadowed_by_the_views_own_attributes():
    own = {n for n in dir(Args) if not n.startswith("__")}
    clash = sorted({(c.name, a.name) for c, s in SPECS.items() for f in s.forms for a in f.inputs if a.name in own})
    assert clash == []


def test_explicit_form_reads_by_name_and_keeps_constant_pads():
    m = _conv([scalar(C.INT32, v) for v in (1, 2, 0, 1, 2, 1, 0)])   # left right top bottom, w h, fuse
    bound = spec_for(Op.CONV_2D).bind(m, 0)
    args = bound.args([None] * 10)
    assert args.form == "explicit" and (args.pad_left, args.pad_right, args.stride_w, args.stride_h) == (1, 2, 2, 1)
    assert args.window_pads((5, 7), (3, 2)) == (0, 1, 1, 2)     # (top, bottom, left, right)
    assert args.window_dilations == (1, 1) and args.nchw is False   # the spec's defaults for absent ones
    with pytest.raises(AttributeError, match="explicit form has no argument 'padding'"):
        args.padding


def test_implicit_same_padding_is_worked_out_per_input_size():
    m = _conv([scalar(C.INT32, v) for v in (PaddingCode.SAME, 2, 2, 0)])
    args = spec_for(Op.CONV_2D).bind(m, 0).args([None] * 7)
    # SAME, stride 2, filter 3: out = ceil(5 / 2) = 3, total = (3 - 1) * 2 + 3 - 5 = 2 -> (1, 1);
    # width 7 with filter 2: out 4, total = 3 * 2 + 2 - 7 = 1 -> (0, 1)
    assert args.window_pads((5, 7), (3, 2)) == (1, 1, 0, 1)


def test_run_time_scalars_and_omitted_operands():
    m = build(Op.SQUEEZE, [(OperandType(F32, (1, 2)), None), (OperandType(C.TENSOR_INT32, (1,)), OMIT)],
              [OperandType(F32, (2,))])
    bound = spec_for(Op.SQUEEZE).bind(m, 0)
    assert bound.runtime == {"input"}
    args = bound.args([_V(np.zeros((1, 2))), None])
    assert args.axes is None and not args.has("axes") and args.has("input")

    m = nnapi.Model()
    x, beta = m.add_operand(OperandType(F32, (2, 3))), m.add_operand(OperandType(C.FLOAT32))
    out = m.add_operand(OperandType(F32, (2, 3)))
    m.add_operation(Op.SOFTMAX, [x, beta], [out])
    m.identify_inputs_and_outputs([x, beta], [out])
    m.finish()
    bound = spec_for(Op.SOFTMAX).bind(m, 0)
    assert bound.runtime == {"input", "beta"} and not bound.constant("beta") and bound.constant("axis")
    args = bound.args([_V(np.zeros((2, 3))), _V(np.float32(0.5))])
    assert args.beta == 0.5 and args.axis == -1    # the run-time value; the absent axis's default


def test_repeated_arguments_are_lists_of_values():
    t = OperandType(F32, (2, 3))
    m = build(Op.CONCATENATION, [(t, None), (t, None), (t, None), scalar(C.INT32, 0)], [OperandType(F32, (6, 3))])
    values = [_V(np.zeros((2, 3))) for _ in range(3)]
    args = spec_for(Op.CONCATENATION).bind(m, 0).args(values + [None])
    assert args.inputs == values and args.axis == 0


def test_infer_runs_the_specs_shape_inference_on_run_time_shapes():
    m = _conv([scalar(C.INT32, v) for v in (PaddingCode.VALID, 1, 1, 0)], in_dims=(1, 0, 0, 2))
    args = spec_for(Op.CONV_2D).bind(m, 0).args([_V(np.zeros((1, 6, 4, 2))), None, None] + [None] * 4)
    args._inputs[1] = _V(np.zeros((3, 3, 2, 2)))
    assert args.infer() == {"output": (1, 4, 3, 3)}
