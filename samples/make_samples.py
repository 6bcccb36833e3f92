"""Regenerate the bundled sample models:  python -m samples.make_samples

demo.nnapi: a small float32 NNAPI model, y = relu6((x + bias) * gain) - shift,
built with the public nnapi.Model API (used by the inspect/run tests).
demo.tflite: the same computation as a TFLite model (the demo's fallback sample).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

import nnapi
from nnapi import FuseCode, OperandCode as C, OperandType, OperationCode as Op

HERE = Path(__file__).resolve().parent
SHAPE = (1, 3, 5, 2)  # distinct extents so transposition bugs cannot hide


def demo_constants():
    rng = np.random.default_rng(2026)
    bias = rng.normal(size=SHAPE[-1]).astype(np.float32)
    gain = rng.uniform(0.5, 4.0, size=SHAPE).astype(np.float32)
    shift = np.float32(0.25) * np.ones(SHAPE[-1], np.float32)
    return bias, gain, shift


def build_demo_model() -> nnapi.Model:
    bias, gain, shift = demo_constants()
    m = nnapi.Model(name="demo")
    t = OperandType(C.TENSOR_FLOAT32, SHAPE)
    x = m.add_operand(t, name="x")
    b = m.add_operand(OperandType(C.TENSOR_FLOAT32, bias.shape), name="bias")
    g = m.add_operand(OperandType(C.TENSOR_FLOAT32, gain.shape), name="gain")
    s = m.add_operand(OperandType(C.TENSOR_FLOAT32, shift.shape), name="shift")
    none = m.add_operand(OperandType(C.INT32), name="fuse_none")
    relu6 = m.add_operand(OperandType(C.INT32), name="fuse_relu6")
    t1 = m.add_operand(t, name="x_plus_bias")
    t2 = m.add_operand(t, name="scaled")
    y = m.add_operand(t, name="y")
    for idx, value in ((b, bias), (g, gain), (s, shift), (none, FuseCode.NONE), (relu6, FuseCode.RELU6)):
        m.set_operand_value(idx, np.asarray(value, dtype=np.float32 if idx in (b, g, s) else np.int32))
    m.add_operation(Op.ADD, [x, b, none], [t1])
    m.add_operation(Op.MUL, [t1, g, relu6], [t2])
    m.add_operation(Op.SUB, [t2, s, none], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    return m


def build_demo_tflite() -> bytes:
    from converters.tflite.authoring import GraphBuilder
    bias, gain, shift = demo_constants()
    g = GraphBuilder()
    x = g.input("x", SHAPE)
    t1, t2, y = (g.tensor(n, SHAPE) for n in ("x_plus_bias", "scaled", "y"))
    g.op("ADD", [x, g.const("bias", bias)], [t1], "AddOptions")
    g.op("MUL", [t1, g.const("gain", gain)], [t2], "MulOptions", fused_activation_function="RELU6")
    g.op("SUB", [t2, g.const("shift", shift)], [y], "SubOptions")
    g.output(y)
    return g.finish()


def main() -> None:
    from nnapi.serialize import atomic_write
    nnapi.save(build_demo_model(), HERE / "demo.nnapi")
    atomic_write(HERE / "demo.tflite", build_demo_tflite())
    print(f"wrote {HERE / 'demo.nnapi'} and {HERE / 'demo.tflite'}")


if __name__ == "__main__":
    main()
