"""The compiled elementwise operations (executor/kernels/elementwise/prepared.py) and the prepared
IF/WHILE (controlflow.py) compute what the plain kernels compute:

* prepared vs plain kernel, bit for bit, on random values and the awkward ones (signed zeros, inf,
  NaN, overflow, INT32_MIN/MAX), for every fuse code, broadcasting runtime and constant operands,
  float32, float16, int32 and bool; int32 ADD/SUB/MUL also against Python integers mod 2**32;
* shapes that do not broadcast still fail with OP_FAILED naming the operation;
* prepared results never share memory with the inputs (they promise `fresh_outputs`);
* 8-bit operations keep lut.py's tables; IF/WHILE with shapes that change from one iteration to
  the next.
"""
import numpy as np
import pytest

import nnapi
from executor.runtime import OpContext, RunState, compile_model
from nnapi import NnapiError, OperandCode as C, OperandType, OperationCode as Op, ResultCode
from tests.executor.op_harness import run

RNG = np.random.default_rng(2024)
I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1
DTYPE_OF = {C.TENSOR_FLOAT32: np.float32, C.TENSOR_FLOAT16: np.float16, C.TENSOR_INT32: np.int32,
            C.TENSOR_BOOL8: np.bool_}
FUSED = (Op.ADD, Op.SUB, Op.MUL, Op.DIV)


def values(code, shape, positive=False):
    """Random values of `code` with the awkward ones mixed in."""
    n = int(np.prod(shape))
    if code == C.TENSOR_BOOL8:
        return RNG.integers(0, 2, n).astype(bool).reshape(shape)
    if code == C.TENSOR_INT32:
        v = RNG.integers(I32_MIN, I32_MAX, n, endpoint=True, dtype=np.int64)
        v[: min(n, 6)] = [I32_MIN, I32_MAX, -1, 0, 1, 7][: min(n, 6)]
        return v.astype(np.int32).reshape(shape)
    v = RNG.normal(0, 4, n)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 3e38 if code == C.TENSOR_FLOAT32 else 6e4, 0.5, -1.0, 6.0]
    k = min(n, len(special))
    v[RNG.permutation(n)[:k]] = special[:k]
    if positive:
        v = np.abs(v)
    return v.astype(DTYPE_OF[code]).reshape(shape)


def model_of(code, in_types, out_type, constants=None, fuse=None):
    """One operation on inputs of `in_types`; `constants[k]` makes input k a constant; `fuse` appends the
    constant fuse code."""
    constants = constants or {}
    m = nnapi.Model()
    ins = []
    for k, t in enumerate(in_types):
        i = m.add_operand(t)
        if k in constants:
            m.set_operand_value(i, constants[k])
        ins.append(i)
    if fuse is not None:
        f = m.add_operand(OperandType(C.INT32))
        m.set_operand_value(f, np.int32(fuse))
        ins.append(f)
    out = m.add_operand(out_type)
    m.add_operation(code, ins, [out])
    m.identify_inputs_and_outputs([i for k, i in enumerate(ins[: len(in_types)]) if k not in constants], [out])
    m.finish()
    return m


def run_both(model, arrays, prepared_type=None):
    """(prepared output, plain-kernel output) of a one-operation model."""
    compiled = compile_model(model)
    step = compiled.steps[0]
    assert step.run is not step.kernel, "the operation was not prepared"
    if prepared_type is not None:
        assert type(step.run).__name__ == prepared_type
    fast = compiled.run(arrays, RunState(2.0))[0].array.copy()
    step.run = step.kernel
    slow = compiled.run(arrays, RunState(2.0))[0].array
    return fast, slow


def assert_same_bits(fast, slow):
    assert fast.dtype == slow.dtype and fast.shape == slow.shape
    if fast.dtype.kind == "f":
        bits = {2: np.uint16, 4: np.uint32}[fast.dtype.itemsize]
        nan = np.isnan(slow)
        assert np.array_equal(np.isnan(fast), nan)
        fast, slow = fast[~nan].view(bits), slow[~nan].view(bits)   # signed zeros count, NaN payloads not
    assert np.array_equal(fast, slow)


# (shape of a, shape of b, which inputs are constants)
BROADCASTS = [((2, 3, 4), (2, 3, 4), ()), ((1, 3, 5, 2), (2,), (1,)), ((2, 4), (1,), (1,)),
              ((3,), (2, 3), (0,)), ((3, 1), (1, 4), ()), ((2, 3), (2, 3), (1,)), ((), (4,), ())]


@pytest.mark.parametrize("code", [Op.ADD, Op.SUB, Op.MUL, Op.DIV])
@pytest.mark.parametrize("operand", [C.TENSOR_FLOAT32, C.TENSOR_FLOAT16])
@pytest.mark.parametrize("fuse", [0, 1, 2, 3])
@pytest.mark.parametrize("sa,sb,consts", BROADCASTS)
def test_float_arithmetic_equals_the_kernel(code, operand, fuse, sa, sb, consts):
    a, b = values(operand, sa), values(operand, sb)
    out_shape = np.broadcast_shapes(sa, sb)
    m = model_of(code, [OperandType(operand, sa), OperandType(operand, sb)], OperandType(operand, out_shape),
                 {k: (a, b)[k] for k in consts}, fuse)
    fast, slow = run_both(m, [x for k, x in enumerate((a, b)) if k not in consts],
                          "HalfBinary" if operand == C.TENSOR_FLOAT16 else "Binary")
    assert_same_bits(fast, slow)


def _wrapped(x: int) -> int:
    return (x + (1 << 31)) % (1 << 32) - (1 << 31)


@pytest.mark.parametrize("code,fn", [(Op.ADD, lambda x, y: x + y), (Op.SUB, lambda x, y: x - y),
                                     (Op.MUL, lambda x, y: x * y)])
@pytest.mark.parametrize("sa,sb,consts", BROADCASTS)
def test_int32_arithmetic_wraps_like_the_kernel(code, fn, sa, sb, consts):
    a, b = values(C.TENSOR_INT32, sa), values(C.TENSOR_INT32, sb)
    out_shape = np.broadcast_shapes(sa, sb)
    t = C.TENSOR_INT32
    m = model_of(code, [OperandType(t, sa), OperandType(t, sb)], OperandType(t, out_shape),
                 {k: (a, b)[k] for k in consts}, 0)
    fast, slow = run_both(m, [x for k, x in enumerate((a, b)) if k not in consts], "WrappingBinary")
    assert_same_bits(fast, slow)
    x, y = np.broadcast_arrays(a, b)
    want = [_wrapped(fn(int(p), int(q))) for p, q in zip(x.ravel(), y.ravel())]
    assert fast.ravel().tolist() == want


def test_int32_div_and_fused_int32_stay_with_the_kernel():
    t = OperandType(C.TENSOR_INT32, (4,))
    div = compile_model(model_of(Op.DIV, [t, t], t, fuse=0)).steps[0]
    assert div.run is div.kernel
    relu_add = compile_model(model_of(Op.ADD, [t, t], t, fuse=1)).steps[0]
    assert relu_add.run is relu_add.kernel
    (out,) = run(model_of(Op.DIV, [t, t], t, fuse=0), np.array([7, -7, I32_MIN, 5], np.int32),
                 np.array([2, 2, -1, 0], np.int32))
    assert out.tolist() == [3, -4, I32_MIN, 0]


@pytest.mark.parametrize("code,operand", [(code, operand) for code in (Op.MAXIMUM, Op.MINIMUM, Op.POW)
                                          for operand in (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16, C.TENSOR_INT32)
                                          if not (code == Op.POW and operand == C.TENSOR_INT32)])
@pytest.mark.parametrize("sa,sb,consts", BROADCASTS[:4])
def test_max_min_pow_equal_the_kernel(code, operand, sa, sb, consts):
    a, b = values(operand, sa, positive=code == Op.POW), values(operand, sb)
    if code == Op.POW:
        with np.errstate(invalid="ignore"):
            b = (b % 5).astype(b.dtype)   # small exponents, and NaN
    out_shape = np.broadcast_shapes(sa, sb)
    m = model_of(code, [OperandType(operand, sa), OperandType(operand, sb)], OperandType(operand, out_shape),
                 {k: (a, b)[k] for k in consts})
    fast, slow = run_both(m, [x for k, x in enumerate((a, b)) if k not in consts])
    assert_same_bits(fast, slow)


COMPARE_CASES = [(code, operand) for code in (Op.EQUAL, Op.NOT_EQUAL, Op.GREATER, Op.GREATER_EQUAL, Op.LESS,
                                               Op.LESS_EQUAL)
                 for operand in (C.TENSOR_FLOAT32, C.TENSOR_FLOAT16, C.TENSOR_INT32, C.TENSOR_BOOL8)] + \
    [(Op.LOGICAL_AND, C.TENSOR_BOOL8), (Op.LOGICAL_OR, C.TENSOR_BOOL8)]


@pytest.mark.parametrize("code,operand", COMPARE_CASES)
@pytest.mark.parametrize("sa,sb,consts", BROADCASTS[:5])
def test_comparisons_and_logical_equal_the_kernel(code, operand, sa, sb, consts):
    a, b = values(operand, sa), values(operand, sb)
    if operand != C.TENSOR_BOOL8 and a.size >= 2 and b.size >= 2:
        b.ravel()[:2] = a.ravel()[:2]   # some equal pairs
    out_shape = np.broadcast_shapes(sa, sb)
    m = model_of(code, [OperandType(operand, sa), OperandType(operand, sb)], OperandType(C.TENSOR_BOOL8, out_shape),
                 {k: (a, b)[k] for k in consts})
    fast, slow = run_both(m, [x for k, x in enumerate((a, b)) if k not in consts], "Binary")
    assert_same_bits(fast, slow)


UNARY = [Op.RELU, Op.RELU1, Op.RELU6, Op.LOGISTIC, Op.TANH, Op.HARD_SWISH, Op.ABS, Op.NEG, Op.EXP, Op.LOG,
         Op.SIN, Op.SQRT, Op.FLOOR, Op.RSQRT]


@pytest.mark.parametrize("code", UNARY)
@pytest.mark.parametrize("operand", [C.TENSOR_FLOAT32, C.TENSOR_FLOAT16])
@pytest.mark.parametrize("shape", [(2, 3, 37), (5,), ()])
def test_float_unary_equals_the_kernel(code, operand, shape):
    x = values(operand, shape)
    m = model_of(code, [OperandType(operand, shape)], OperandType(operand, shape))
    fast, slow = run_both(m, [x])
    assert_same_bits(fast, slow)


@pytest.mark.parametrize("code", [Op.ABS, Op.NEG, Op.LOGICAL_NOT])
def test_int_and_bool_unary_equal_the_kernel(code):
    operand = C.TENSOR_BOOL8 if code == Op.LOGICAL_NOT else C.TENSOR_INT32
    x = values(operand, (3, 7))
    m = model_of(code, [OperandType(operand, (3, 7))], OperandType(operand, (3, 7)))
    fast, slow = run_both(m, [x], "Unary")
    assert_same_bits(fast, slow)
    if code == Op.ABS:
        assert fast.ravel()[0] == I32_MIN   # |INT32_MIN| wraps, as C


def test_relu6_by_hand():
    t = OperandType(C.TENSOR_FLOAT32, (6,))
    (out,) = run(model_of(Op.RELU6, [t], t), np.array([-3, -0.5, 0, 2.5, 6, 9], np.float32))
    assert out.tolist() == [0, 0, 0, 2.5, 6, 6]


def test_fused_add_by_hand_with_a_broadcast_constant():
    m = model_of(Op.ADD, [OperandType(C.TENSOR_FLOAT32, (2, 2)), OperandType(C.TENSOR_FLOAT32, (2,))],
                 OperandType(C.TENSOR_FLOAT32, (2, 2)), {1: np.array([0.5, -10], np.float32)}, fuse=2)  # RELU1
    for _ in range(2):   # the second run reuses the expanded constant
        (out,) = run(m, np.array([[0.25, 3], [-4, 10.5]], np.float32))
        assert out.tolist() == [[0.75, -1], [-1, 0.5]]


def test_shapes_that_do_not_broadcast_fail_naming_the_operation():
    t = OperandType(C.TENSOR_FLOAT32, (0, 0))
    m = model_of(Op.ADD, [t, t], t, fuse=0)
    ok = run(m, np.ones((2, 3), np.float32), np.ones((1, 3), np.float32))[0]
    assert ok.shape == (2, 3) and np.all(ok == 2)
    with pytest.raises(NnapiError) as e:
        run(m, np.ones((2, 3), np.float32), np.ones((2, 4), np.float32))
    assert e.value.code == ResultCode.OP_FAILED and "operation 0 (ADD)" in str(e.value)


@pytest.mark.parametrize("code,operands", [(Op.ADD, 2), (Op.MAXIMUM, 2), (Op.LESS, 2), (Op.TANH, 1),
                                           (Op.RELU, 1)])
def test_prepared_results_never_share_memory_with_the_inputs(code, operands):
    t = OperandType(C.TENSOR_FLOAT32, (4,))
    out_t = OperandType(C.TENSOR_BOOL8, (4,)) if code == Op.LESS else t
    compiled = compile_model(model_of(code, [t] * operands, out_t, fuse=0 if code == Op.ADD else None))
    step = compiled.steps[0]
    assert step.run.fresh_outputs is True
    xs = [compiled.input_value(k, values(C.TENSOR_FLOAT32, (4,))) for k in range(operands)]
    for fn in (step.run, step.kernel):
        (out,) = fn(OpContext(compiled, step, xs + [compiled.constants.get(i) for i in step.inputs[operands:]],
                              RunState(2.0)))
        assert not any(np.shares_memory(out, x.array) for x in xs)


def test_8bit_operations_keep_their_tables():
    q = OperandType(C.TENSOR_QUANT8_ASYMM, (32, 64), 0.5, 3)
    add = compile_model(model_of(Op.ADD, [q, q], q, fuse=0)).steps[0]
    assert type(add.run).__name__ == "BinaryTable" and add.run.fresh_outputs
    small = OperandType(C.TENSOR_QUANT8_ASYMM, (4,), 0.5, 3)
    small_add = compile_model(model_of(Op.ADD, [small, small], small, fuse=0)).steps[0]
    assert type(small_add.run).__name__ == "BinaryTable"   # any size: the kernel costs ~50 us a run
    relu = compile_model(model_of(Op.RELU, [q], q)).steps[0]
    assert type(relu.run).__name__ == "UnaryTable"


# -- IF / WHILE ---------------------------------------------------------------------------------------

def doubling_while():
    """WHILE i < n: (x, i) = (concat(x, x + 10), i + 1) -- the carried tensor doubles every iteration."""
    f32, i32 = OperandType(C.TENSOR_FLOAT32, (0,)), OperandType(C.TENSOR_INT32, (1,))
    types = [f32, i32, i32]   # x, i, n

    def cond():
        m = nnapi.Model()
        x, i, n = (m.add_operand(t) for t in types)
        out = m.add_operand(OperandType(C.TENSOR_BOOL8, (1,)))
        m.add_operation(Op.LESS, [i, n], [out])
        m.identify_inputs_and_outputs([x, i, n], [out])
        m.finish()
        return m

    def body():
        m = nnapi.Model()
        x, i, n = (m.add_operand(t) for t in types)
        ten, one = m.add_operand(OperandType(C.TENSOR_FLOAT32, (1,))), m.add_operand(i32)
        fuse, axis = m.add_operand(OperandType(C.INT32)), m.add_operand(OperandType(C.INT32))
        shifted, y, i2 = m.add_operand(f32), m.add_operand(f32), m.add_operand(i32)
        m.set_operand_value(ten, np.array([10], np.float32))
        m.set_operand_value(one, np.array([1], np.int32))
        m.set_operand_value(fuse, np.int32(0))
        m.set_operand_value(axis, np.int32(0))
        m.add_operation(Op.ADD, [x, ten, fuse], [shifted])
        m.add_operation(Op.CONCATENATION, [x, shifted, axis], [y])
        m.add_operation(Op.ADD, [i, one, fuse], [i2])
        m.identify_inputs_and_outputs([x, i, n], [y, i2])
        m.finish()
        return m

    m = nnapi.Model()
    c, b = m.add_operand(OperandType(C.SUBGRAPH)), m.add_operand(OperandType(C.SUBGRAPH))
    m.set_operand_value_from_model(c, cond())
    m.set_operand_value_from_model(b, body())
    ins = [m.add_operand(t) for t in types]
    outs = [m.add_operand(f32), m.add_operand(i32)]
    m.add_operation(Op.WHILE, [c, b] + ins, outs)
    m.identify_inputs_and_outputs(ins, outs)
    m.finish()
    return m


def test_while_whose_carried_tensor_changes_shape():
    m = doubling_while()
    compiled = compile_model(m)
    assert type(compiled.steps[0].run).__name__ == "While"
    for n, start in ((3, [1.0]), (2, [1.0, 2.0]), (3, [1.0])):   # shapes seen before and new ones
        x, i = run(m, np.array(start, np.float32), np.array([0], np.int32), np.array([n], np.int32))
        want = list(start)
        for _ in range(n):
            want = want + [v + 10 for v in want]
        assert x.tolist() == want and i.tolist() == [n]


def test_if_is_prepared_and_picks_the_branch():
    t = OperandType(C.TENSOR_FLOAT32, (2,))
    branches = [model_of(code, [t, t], t, fuse=0) for code in (Op.MUL, Op.SUB)]
    m = nnapi.Model()
    cond = m.add_operand(OperandType(C.TENSOR_BOOL8, (1,)))
    subs = [m.add_operand(OperandType(C.SUBGRAPH)) for _ in branches]
    for s, b in zip(subs, branches):
        m.set_operand_value_from_model(s, b)
    a, b, out = m.add_operand(t), m.add_operand(t), m.add_operand(t)
    m.add_operation(Op.IF, [cond] + subs + [a, b], [out])
    m.identify_inputs_and_outputs([cond, a, b], [out])
    m.finish()
    assert type(compile_model(m).steps[0].run).__name__ == "If"
    x, y = np.array([3, 4], np.float32), np.array([5, -1], np.float32)
    assert run(m, np.array([True]), x, y)[0].tolist() == [15, -4]
    assert run(m, np.array([False]), x, y)[0].tolist() == [-2, 5]


@pytest.mark.parametrize("operand", [C.TENSOR_FLOAT32, C.TENSOR_FLOAT16, C.TENSOR_INT32])   # (the spec's)
@pytest.mark.parametrize("consts", [(), (1,), (2,), (0,)])
def test_select_equals_the_kernel(operand, consts):
    shape = (3, 5, 7)
    c, a, b = values(C.TENSOR_BOOL8, shape), values(operand, shape), values(operand, shape)
    m = model_of(Op.SELECT, [OperandType(C.TENSOR_BOOL8, shape), OperandType(operand, shape), OperandType(operand, shape)],
                 OperandType(operand, shape), {k: (c, a, b)[k] for k in consts})
    fast, slow = run_both(m, [x for k, x in enumerate((c, a, b)) if k not in consts], "Select")
    assert_same_bits(fast, slow)
    by_hand = [x if p else y for p, x, y in zip(c.reshape(-1), a.reshape(-1), b.reshape(-1))]
    assert_same_bits(slow.reshape(-1), np.array(by_hand, DTYPE_OF[operand]))
