"""Small model builders shared by the nnapi tests."""
import numpy as np

import nnapi
from nnapi import OperandCode as C, OperandType, OperationCode as Op

SHAPE = (1, 3, 5, 2)


def f32(dims=SHAPE):
    return OperandType(C.TENSOR_FLOAT32, dims)


def add_model(finish=True, const_b=None):
    """out = a + b (fuse NONE); b is an input unless const_b is given."""
    m = nnapi.Model()
    a = m.add_operand(f32(), name="a")
    b = m.add_operand(f32(), name="b")
    fuse = m.add_operand(OperandType(C.INT32), name="fuse")
    out = m.add_operand(f32(), name="out")
    m.set_operand_value(fuse, np.int32(0))
    if const_b is not None:
        m.set_operand_value(b, const_b)
    m.add_operation(Op.ADD, [a, b, fuse], [out])
    m.identify_inputs_and_outputs([a] if const_b is not None else [a, b], [out])
    if finish:
        m.finish()
    return m


def dynamic_add_model():
    """out = a + b with every dimension unknown until execution."""
    m = nnapi.Model()
    a = m.add_operand(OperandType(C.TENSOR_FLOAT32, [0, 0]))
    b = m.add_operand(OperandType(C.TENSOR_FLOAT32, [0, 0]))
    fuse = m.add_operand(OperandType(C.INT32))
    out = m.add_operand(OperandType(C.TENSOR_FLOAT32, [0, 0]))
    m.set_operand_value(fuse, np.int32(0))
    m.add_operation(Op.ADD, [a, b, fuse], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()
    return m
