"""Hand-computed shape inference cases for the recurrent and control-flow specs
(nnapi/ops/recurrent.py, nnapi/ops/controlflow.py): the layouts the CTS does not
exercise on its own (CIFG through NO_VALUE, projection, non-constant time_major /
merge_outputs, SVDF without bias, IF branches that disagree or a constant
condition, WHILE bodies that keep or change their values' shapes) and malformed
operations that must infer without raising.
"""
from __future__ import annotations

import numpy as np

import nnapi
from nnapi import OperandCode as C, OperandType, OperationCode as Op
from nnapi.shapes import infer_shapes


class Builder:
    """A model under construction: model inputs, constants, omitted operands and outputs."""

    def __init__(self):
        self.m = nnapi.Model()
        self.ins: list[int] = []

    def operand(self, code, dims=()):
        return self.m.add_operand(OperandType(code, list(dims)))

    def input(self, dims, code=C.TENSOR_FLOAT32):
        i = self.operand(code, dims)
        self.ins.append(i)
        return i

    def const(self, dims, code=C.TENSOR_FLOAT32, value=None):
        i = self.operand(code, dims)
        dtype = {C.TENSOR_FLOAT32: np.float32, C.TENSOR_INT32: np.int32, C.TENSOR_QUANT8_ASYMM: np.uint8,
                 C.TENSOR_BOOL8: np.bool_}[code]
        self.m.set_operand_value(i, np.zeros(dims, dtype) if value is None else np.asarray(value, dtype))
        return i

    def scalar(self, code, value):
        i = self.operand(code)
        self.m.set_operand_value(i, {C.INT32: np.int32, C.FLOAT32: np.float32, C.BOOL: np.bool_}[code](value))
        return i

    def omitted(self, dims):
        i = self.operand(C.TENSOR_FLOAT32, dims)
        self.m.set_operand_value(i, None)
        return i

    def outputs(self, code, *ranks):
        return [self.operand(code, [0] * r) for r in ranks]

    def op(self, code, inputs, outputs, finish=True):
        self.m.add_operation(code, inputs, outputs)
        self.m.identify_inputs_and_outputs(self.ins, outputs)
        if finish:
            self.m.finish()
        shapes = infer_shapes(self.m)
        return [shapes[o] for o in outputs]


def _lstm_weights(b: Builder, n_in: int, units: int, out: int, input_gate: str = "const",
                  projection: bool = False, peephole: bool = False) -> list[int]:
    """LSTM inputs 1..17; input_gate is "const", "omitted" (CIFG) or "input" (a model input)."""
    def gate(dims, which):
        if which != "input":
            return b.const(dims)
        if input_gate == "omitted":
            return b.omitted(dims)
        return b.input(dims) if input_gate == "input" else b.const(dims)

    ins = [gate([units, n_in], g) for g in ("input", "forget", "cell", "output")]
    ins += [gate([units, out], g) for g in ("input", "forget", "cell", "output")]
    ins += [b.const([units]) if peephole else b.omitted([units]) for _ in range(3)]
    ins += [gate([units], g) for g in ("input", "forget", "cell", "output")]
    ins += [b.const([out, units]), b.const([out])] if projection else [b.omitted([out, units]), b.omitted([out])]
    return ins


def _clips(b: Builder) -> list[int]:
    return [b.scalar(C.INT32, 4), b.scalar(C.FLOAT32, 0.0), b.scalar(C.FLOAT32, 0.0)]


# -- LSTM --------------------------------------------------------------------------------

def _lstm(input_gate: str, projection: bool = False):
    b = Builder()
    batch, n_in, units = 2, 3, 5
    out = 4 if projection else units
    ins = [b.input([batch, n_in])] + _lstm_weights(b, n_in, units, out, input_gate, projection)
    ins += [b.input([batch, out]), b.input([batch, units])] + _clips(b)
    return b.op(Op.LSTM, ins, b.outputs(C.TENSOR_FLOAT32, 2, 2, 2, 2))


def test_lstm_scratch_buffer_has_four_gates_or_three_with_cifg():
    assert _lstm("const") == [(2, 20), (2, 5), (2, 5), (2, 5)]
    assert _lstm("omitted") == [(2, 15), (2, 5), (2, 5), (2, 5)]


def test_lstm_scratch_width_is_unknown_when_the_input_gate_may_be_passed_empty():
    # a model input can be omitted at execution (the CTS CIFG models do that): CIFG is undecided
    assert _lstm("input") == [(2, 0), (2, 5), (2, 5), (2, 5)]
    assert "scratch_buffer" in nnapi.ops.SPECS[Op.LSTM].value_dependent


def test_lstm_projection_sets_the_output_size():
    assert _lstm("const", projection=True) == [(2, 20), (2, 4), (2, 5), (2, 4)]


def _unidirectional_lstm(x_dims, time_major, state_dims=None):
    b = Builder()
    n_in, units = x_dims[-1], 3
    x = b.input(x_dims)
    ins = [x] + _lstm_weights(b, n_in, units, units, "omitted", peephole=True)
    ins += [b.input(state_dims or [0, 0]), b.input(state_dims or [0, 0])] + _clips(b)
    ins.append(b.scalar(C.BOOL, time_major) if time_major is not None else b.input([], C.BOOL))
    return b.op(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, ins, b.outputs(C.TENSOR_FLOAT32, 3, 2, 2))


def test_unidirectional_lstm_follows_the_input_layout():
    # time major [time 5, batch 2, input 4]; batch major [batch 2, time 5, input 4]
    assert _unidirectional_lstm([5, 2, 4], True) == [(5, 2, 3), (2, 3), (2, 3)]
    assert _unidirectional_lstm([2, 5, 4], False) == [(2, 5, 3), (2, 3), (2, 3)]


def test_unidirectional_lstm_with_time_major_unknown_takes_the_batch_from_the_states():
    assert _unidirectional_lstm([2, 5, 4], None) == [(2, 5, 3), (0, 3), (0, 3)]
    assert _unidirectional_lstm([2, 5, 4], None, state_dims=[2, 3]) == [(2, 5, 3), (2, 3), (2, 3)]


def _bidirectional_lstm(merge, n_outputs):
    b = Builder()
    time, batch, n_in, fw_units, bw_units = 4, 2, 3, 5, 6
    ins = [b.input([time, batch, n_in])]
    ins += _lstm_weights(b, n_in, fw_units, fw_units) + _lstm_weights(b, n_in, bw_units, bw_units)
    ins += [b.input([batch, fw_units]), b.input([batch, fw_units]), b.input([batch, bw_units]),
            b.input([batch, bw_units]), b.omitted([0, 0, 0])] + [b.omitted([0, 0]) for _ in range(8)]
    ins += _clips(b) + [b.scalar(C.BOOL, merge) if merge is not None else b.input([], C.BOOL),
                        b.scalar(C.BOOL, True)]
    ranks = ([3] if merge or (merge is None and n_outputs in (1, 5)) else [3, 3]) + [2] * 4
    return b.op(Op.BIDIRECTIONAL_SEQUENCE_LSTM, ins, b.outputs(C.TENSOR_FLOAT32, *ranks[:n_outputs]))


def test_bidirectional_lstm_outputs_by_position():
    states = [(2, 5), (2, 5), (2, 6), (2, 6)]
    assert _bidirectional_lstm(False, 6) == [(4, 2, 5), (4, 2, 6)] + states
    assert _bidirectional_lstm(True, 5) == [(4, 2, 11)] + states
    assert _bidirectional_lstm(True, 1) == [(4, 2, 11)]
    # merge_outputs not constant: the output count tells
    assert _bidirectional_lstm(None, 5) == [(4, 2, 11)] + states
    assert _bidirectional_lstm(None, 2) == [(4, 2, 5), (4, 2, 6)]


# -- RNN ---------------------------------------------------------------------------------

def _rnn_weights(b, n_in, units):
    return [b.const([units, n_in]), b.const([units, units]), b.const([units])]


def test_rnn_and_unidirectional_rnn():
    b = Builder()
    ins = [b.input([3, 4])] + _rnn_weights(b, 4, 6) + [b.input([3, 6]), b.scalar(C.INT32, 1)]
    assert b.op(Op.RNN, ins, b.outputs(C.TENSOR_FLOAT32, 2, 2)) == [(3, 6), (3, 6)]
    b = Builder()
    ins = [b.input([2, 7, 4])] + _rnn_weights(b, 4, 6) + [b.input([0, 0]), b.scalar(C.INT32, 1),
                                                         b.scalar(C.INT32, 0)]
    assert b.op(Op.UNIDIRECTIONAL_SEQUENCE_RNN, ins, b.outputs(C.TENSOR_FLOAT32, 3, 2)) == [(2, 7, 6), (2, 6)]


def test_bidirectional_rnn_merged_outputs_shift_the_state_outputs():
    b = Builder()
    x = b.input([5, 2, 4])
    ins = [x] + _rnn_weights(b, 4, 3) + [b.input([2, 3])] + _rnn_weights(b, 4, 7) + [b.input([2, 7])]
    ins += [b.omitted([0, 0, 0]), b.omitted([0, 0]), b.omitted([0, 0]), b.scalar(C.INT32, 1),
            b.scalar(C.BOOL, True), b.scalar(C.BOOL, True)]
    got = b.op(Op.BIDIRECTIONAL_SEQUENCE_RNN, ins, b.outputs(C.TENSOR_FLOAT32, 3, 2, 2))
    assert got == [(5, 2, 10), (2, 3), (2, 7)]


# -- SVDF, quantized LSTMs ---------------------------------------------------------------

def test_svdf_units_are_filters_over_rank():
    b = Builder()
    batch, n_in, filters, memory, rank = 2, 3, 6, 4, 2
    ins = [b.input([batch, n_in]), b.const([filters, n_in]), b.const([filters, memory]), b.omitted([0]),
           b.input([batch, filters * memory]), b.scalar(C.INT32, rank), b.scalar(C.INT32, 0)]
    assert b.op(Op.SVDF, ins, b.outputs(C.TENSOR_FLOAT32, 2, 2)) == [(2, 24), (2, 3)]


def test_quantized_16bit_lstm():
    b = Builder()
    batch, n_in, size = 2, 3, 4

    def q8(dims, scale=1 / 128, zp=128, code=C.TENSOR_QUANT8_ASYMM):
        i = b.m.add_operand(OperandType(code, dims, scale, zp))
        b.m.set_operand_value(i, np.zeros(dims, np.uint8 if code == C.TENSOR_QUANT8_ASYMM else np.int32))
        return i

    x = b.m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, [batch, n_in], 1 / 128, 128))
    b.ins.append(x)
    ins = [x] + [q8([size, n_in], 0.5, 0) for _ in range(4)] + [q8([size, size], 0.5, 0) for _ in range(4)]
    ins += [q8([size], 1 / 256, 0, C.TENSOR_INT32) for _ in range(4)]
    cell = b.m.add_operand(OperandType(C.TENSOR_QUANT16_SYMM, [batch, size], 2 ** -11, 0))
    prev = b.m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, [batch, size], 1 / 128, 128))
    b.ins += [cell, prev]
    outs = [b.m.add_operand(OperandType(C.TENSOR_QUANT16_SYMM, [0, 0], 2 ** -11, 0)),
            b.m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, [0, 0], 1 / 128, 128))]
    assert b.op(Op.QUANTIZED_16BIT_LSTM, ins + [cell, prev], outs) == [(2, 4), (2, 4)]


# -- IF and WHILE ---------------------------------------------------------------------------

def _subgraph(code, in_dims, out_dims, build):
    """A finished model with one float input of in_dims; `build(builder, x)` returns its output."""
    b = Builder()
    x = b.input(in_dims)
    out = build(b, x)
    b.m.identify_inputs_and_outputs(b.ins, [out])
    b.m.finish()
    return b.m


def _identity(in_dims):
    def build(b, x):
        y = b.operand(C.TENSOR_FLOAT32, [0] * len(in_dims))
        b.m.add_operation(Op.ADD, [x, b.const([1]), b.scalar(C.INT32, 0)], [y])
        return y
    return _subgraph(C.TENSOR_FLOAT32, in_dims, None, build)


def _tiled(in_dims, multiples):
    """y = TILE(x, multiples): [a, b] -> [a * m0, b * m1]."""
    def build(b, x):
        y = b.operand(C.TENSOR_FLOAT32, [0] * len(in_dims))
        b.m.add_operation(Op.TILE, [x, b.const([len(multiples)], C.TENSOR_INT32, multiples)], [y])
        return y
    return _subgraph(C.TENSOR_FLOAT32, in_dims, None, build)


def _if(then_model, else_model, x_dims, condition=None):
    b = Builder()
    cond = b.input([1], C.TENSOR_BOOL8) if condition is None else b.const([1], C.TENSOR_BOOL8, [condition])
    refs = []
    for model in (then_model, else_model):
        r = b.operand(C.SUBGRAPH)
        b.m.set_operand_value_from_model(r, model)
        refs.append(r)
    x = b.input(x_dims)
    return b.op(Op.IF, [cond, *refs, x], b.outputs(C.TENSOR_FLOAT32, len(x_dims)))[0]


def test_if_outputs_are_known_where_both_branches_agree():
    assert _if(_identity([0, 0]), _identity([0, 0]), [2, 3]) == (2, 3)
    assert _if(_identity([0, 0]), _tiled([0, 0], [1, 2]), [2, 3]) == (2, 0)


def test_if_with_a_constant_condition_takes_its_branch():
    assert _if(_identity([0, 0]), _tiled([0, 0], [1, 2]), [2, 3], condition=True) == (2, 3)
    assert _if(_identity([0, 0]), _tiled([0, 0], [1, 2]), [2, 3], condition=False) == (2, 6)


def _counting_body(build_x, x_dims):
    """Body (x, i, n) -> (x', i + 1): x' = build_x(x)."""
    b = Builder()
    x, i, n = b.input(x_dims), b.input([1], C.TENSOR_INT32), b.input([1], C.TENSOR_INT32)
    del n
    x2 = build_x(b, x)
    i2 = b.operand(C.TENSOR_INT32, [1])
    b.m.add_operation(Op.ADD, [i, b.const([1], C.TENSOR_INT32, [1]), b.scalar(C.INT32, 0)], [i2])
    b.m.identify_inputs_and_outputs(b.ins, [x2, i2])
    b.m.finish()
    return b.m


def _less_cond(x_dims):
    b = Builder()
    _, i, n = b.input(x_dims), b.input([1], C.TENSOR_INT32), b.input([1], C.TENSOR_INT32)
    out = b.operand(C.TENSOR_BOOL8, [1])
    b.m.add_operation(Op.LESS, [i, n], [out])
    b.m.identify_inputs_and_outputs(b.ins, [out])
    b.m.finish()
    return b.m


def _while(body, x_dims, n_outputs=1):
    b = Builder()
    refs = []
    for model in (_less_cond([0] * len(x_dims)), body):
        r = b.operand(C.SUBGRAPH)
        b.m.set_operand_value_from_model(r, model)
        refs.append(r)
    ins = [b.input(x_dims), b.const([1], C.TENSOR_INT32, [0]), b.input([1], C.TENSOR_INT32)]
    outs = [b.operand(C.TENSOR_FLOAT32, [0] * len(x_dims)), b.operand(C.TENSOR_INT32, [0])][:n_outputs]
    return b.op(Op.WHILE, [*refs, *ins], outs)


def _add_one(b, x):
    y = b.operand(C.TENSOR_FLOAT32, [0, 0])
    b.m.add_operation(Op.ADD, [x, b.const([1]), b.scalar(C.INT32, 0)], [y])
    return y


def _grow(b, x):
    """x' = CONCATENATION(x, x, axis 1): the second extent doubles every iteration."""
    y = b.operand(C.TENSOR_FLOAT32, [0, 0])
    b.m.add_operation(Op.CONCATENATION, [x, x, b.scalar(C.INT32, 1)], [y])
    return y


def test_while_keeps_the_shapes_a_body_keeps():
    assert _while(_counting_body(_add_one, [0, 0]), [2, 3], 2) == [(2, 3), (1,)]


def test_while_forgets_the_extents_a_body_changes():
    # zero or more iterations: [2, 3], [2, 6], [2, 12], ...; the counter keeps its shape
    assert _while(_counting_body(_grow, [0, 0]), [2, 3], 2) == [(2, 0), (1,)]
    assert "outputs" in nnapi.ops.SPECS[Op.WHILE].value_dependent


# -- malformed operations ------------------------------------------------------------------

def test_malformed_recurrent_operations_infer_without_raising():
    # ranks the rules reject (the model is not finished): inference leaves what it cannot know unknown
    b = Builder()
    ins = [b.input([7])] + _rnn_weights(b, 4, 6)[:2] + [b.const([5]), b.input([3]), b.scalar(C.INT32, 1)]
    got = b.op(Op.RNN, ins, b.outputs(C.TENSOR_FLOAT32, 2, 2), finish=False)
    assert got == [(0, 0), (0, 0)]   # units: weights say 6, bias says 5; batch unknown
    b = Builder()
    ins = [b.input([2, 3]), b.const([6, 3]), b.const([6]), b.omitted([0]), b.input([2]),
           b.scalar(C.INT32, 4), b.scalar(C.INT32, 0)]
    assert b.op(Op.SVDF, ins, b.outputs(C.TENSOR_FLOAT32, 2, 2), finish=False) == [(2, 0), (2, 0)]
