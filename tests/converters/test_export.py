"""`nnapi export --target c`: the generated C is compiled with gcc against the
project's stand-in NeuralNetworks.h, linked with the recording shim
(converters/export/ndk/shim.c) and run; the trace of NNAPI calls is rebuilt
into an nnapi.Model that must equal the exported model byte for byte and
compute the same outputs with the executor. Failures injected into every
NNAPI call must come back as the function's result with nothing leaked."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import nnapi
from converters.cli import main
from converters.running import random_inputs, run_model
from converters.export import MARKER, NDK_DIR, ExportError, export_c
from converters.export.trace import differences, parse, replay
from nnapi import OperandCode as C, OperandType, OperationCode as Op
from tests.conftest import ROOT

DEMO = ROOT / "samples" / "demo.nnapi"
MAIN_C = ROOT / "tests" / "data" / "export" / "main.c"
GCC = shutil.which("gcc")
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror"]

pytestmark = pytest.mark.skipif(GCC is None, reason="gcc is needed to compile the exported C")


# -- models ------------------------------------------------------------------------------

def _scalar(m, code, value, name=None):
    i = m.add_operand(OperandType(code), name=name)
    m.set_operand_value(i, value)
    return i


def float_conv_model():
    """CONV_2D (weights > 128 bytes: from the weights file), SAME padding, RELU6, relaxed to float16."""
    rng = np.random.default_rng(1)
    m = nnapi.Model(name="float_conv")
    x = m.add_operand(OperandType(C.TENSOR_FLOAT32, [1, 5, 5, 2]), name="input")
    w = m.add_operand(OperandType(C.TENSOR_FLOAT32, [4, 3, 3, 2]), name="conv/weights")
    b = m.add_operand(OperandType(C.TENSOR_FLOAT32, [4]), name="conv/bias")
    m.set_operand_value(w, rng.standard_normal((4, 3, 3, 2)).astype(np.float32))
    m.set_operand_value(b, np.array([0.5, -0.25, -0.0, 1e-30], np.float32))
    pad = _scalar(m, C.INT32, np.int32(nnapi.PaddingCode.SAME))
    s1 = _scalar(m, C.INT32, np.int32(1))
    s2 = _scalar(m, C.INT32, np.int32(1))
    fuse = _scalar(m, C.INT32, np.int32(nnapi.FuseCode.RELU6))
    layout = _scalar(m, C.BOOL, np.bool_(False))
    y = m.add_operand(OperandType(C.TENSOR_FLOAT32, [1, 5, 5, 4]), name="conv/out")
    m.add_operation(Op.CONV_2D, [x, w, b, pad, s1, s2, fuse, layout], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.relax_computation_float32_to_float16(True)
    m.finish()
    return m


def uint8_model():
    """FULLY_CONNECTED on TENSOR_QUANT8_ASYMM with a 160-byte weight matrix, then a quantized ADD."""
    rng = np.random.default_rng(2)
    m = nnapi.Model(name="uint8_fc")
    x = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, [2, 16], 0.05, 128), name="x")
    w = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, [10, 16], 0.02, 120), name="fc/w")
    b = m.add_operand(OperandType(C.TENSOR_INT32, [10], 0.05 * 0.02, 0), name="fc/b")
    m.set_operand_value(w, rng.integers(0, 256, (10, 16)).astype(np.uint8))
    m.set_operand_value(b, rng.integers(-500, 500, 10).astype(np.int32))
    fuse = _scalar(m, C.INT32, np.int32(nnapi.FuseCode.RELU))
    h = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, [2, 10], 0.1, 3), name="fc/out")
    m.add_operation(Op.FULLY_CONNECTED, [x, w, b, fuse], [h])
    c = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, [2, 10], 0.1, 3), name="offset")
    m.set_operand_value(c, rng.integers(0, 256, (2, 10)).astype(np.uint8))
    none = _scalar(m, C.INT32, np.int32(nnapi.FuseCode.NONE))
    y = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM, [2, 10], 0.2, 10), name="y")
    m.add_operation(Op.ADD, [h, c, none], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    return m


def int8_per_channel_model():
    """CONV_2D int8 input with a TENSOR_QUANT8_SYMM_PER_CHANNEL filter (explicit padding)."""
    rng = np.random.default_rng(3)
    m = nnapi.Model(name="int8_per_channel")
    x = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, [1, 4, 4, 4], 0.1, -5), name="image")
    w = m.add_operand(OperandType(C.TENSOR_QUANT8_SYMM_PER_CHANNEL, [8, 3, 3, 4]), name="conv/w")
    scales = [0.01 * (k + 1) for k in range(8)]
    m.set_operand_symm_per_channel_quant_params(w, scales, 0)
    m.set_operand_value(w, rng.integers(-127, 128, (8, 3, 3, 4)).astype(np.int8))
    b = m.add_operand(OperandType(C.TENSOR_INT32, [8]), name="conv/b")
    m.set_operand_value(b, rng.integers(-100, 100, 8).astype(np.int32))
    pads = [_scalar(m, C.INT32, np.int32(1)) for _ in range(4)]
    strides = [_scalar(m, C.INT32, np.int32(1)) for _ in range(2)]
    fuse = _scalar(m, C.INT32, np.int32(nnapi.FuseCode.NONE))
    y = m.add_operand(OperandType(C.TENSOR_QUANT8_ASYMM_SIGNED, [1, 4, 4, 8], 0.5, 2), name="out")
    m.add_operation(Op.CONV_2D, [x, w, b, *pads, *strides, fuse], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    return m


def fp16_model():
    """TENSOR_FLOAT16 constants: a 240-byte one (weights file) and a small one, incl. -0, inf and subnormals."""
    m = nnapi.Model(name="fp16")
    x = m.add_operand(OperandType(C.TENSOR_FLOAT16, [1, 3, 5, 8]), name="x")
    big = m.add_operand(OperandType(C.TENSOR_FLOAT16, [1, 3, 5, 8]), name="big")
    m.set_operand_value(big, np.linspace(-4, 4, 120).astype(np.float16).reshape(1, 3, 5, 8))
    small = m.add_operand(OperandType(C.TENSOR_FLOAT16, [8]), name="small")
    m.set_operand_value(small, np.array([-0.0, 1e-7, 1000, 0.5, -2, 3, np.inf, 1], np.float16))
    f0 = _scalar(m, C.INT32, np.int32(0))
    t = m.add_operand(OperandType(C.TENSOR_FLOAT16, [1, 3, 5, 8]), name="t")
    m.add_operation(Op.ADD, [x, big, f0], [t])
    y = m.add_operand(OperandType(C.TENSOR_FLOAT16, [1, 3, 5, 8]), name="y")
    m.add_operation(Op.MUL, [t, small, f0], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    return m


def _unary_subgraph(name, op, const):
    """x -> op(x, const) on float32[2] (ADD or MUL)."""
    m = nnapi.Model(name=name)
    x = m.add_operand(OperandType(C.TENSOR_FLOAT32, [2]), name=f"{name}/x")
    c = m.add_operand(OperandType(C.TENSOR_FLOAT32, [2]), name=f"{name}/c")
    m.set_operand_value(c, np.array(const, np.float32))
    f = _scalar(m, C.INT32, np.int32(0))
    y = m.add_operand(OperandType(C.TENSOR_FLOAT32, [2]), name=f"{name}/y")
    m.add_operation(op, [x, c, f], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    return m


def control_flow_model():
    """IF(cond) then x+1 else x*2, then WHILE counter < 3 whose body itself holds an IF
    on the same two branch subgraphs: 5 subgraphs, one referenced three times, nested."""
    then_m = _unary_subgraph("then", Op.ADD, [1.0, 1.0])
    else_m = _unary_subgraph("else", Op.MUL, [2.0, 2.0])

    cond = nnapi.Model(name="cond")
    ci = cond.add_operand(OperandType(C.TENSOR_FLOAT32, [1]), name="cond/i")
    cx = cond.add_operand(OperandType(C.TENSOR_FLOAT32, [2]), name="cond/x")
    lim = cond.add_operand(OperandType(C.TENSOR_FLOAT32, [1]), name="limit")
    cond.set_operand_value(lim, np.array([3.0], np.float32))
    co = cond.add_operand(OperandType(C.TENSOR_BOOL8, [1]), name="cond/out")
    cond.add_operation(Op.LESS, [ci, lim], [co])
    cond.identify_inputs_and_outputs([ci, cx], [co])
    cond.finish()

    body = nnapi.Model(name="body")
    bi = body.add_operand(OperandType(C.TENSOR_FLOAT32, [1]), name="body/i")
    bx = body.add_operand(OperandType(C.TENSOR_FLOAT32, [2]), name="body/x")
    one = body.add_operand(OperandType(C.TENSOR_FLOAT32, [1]), name="one")
    body.set_operand_value(one, np.array([1.0], np.float32))
    f = _scalar(body, C.INT32, np.int32(0))
    bi2 = body.add_operand(OperandType(C.TENSOR_FLOAT32, [1]), name="body/i+1")
    body.add_operation(Op.ADD, [bi, one, f], [bi2])
    flag = body.add_operand(OperandType(C.TENSOR_BOOL8, [1]), name="odd?")
    body.set_operand_value(flag, np.array([True]))
    tb = body.add_operand(OperandType(C.SUBGRAPH), name="then")
    body.set_operand_value_from_model(tb, then_m)
    eb = body.add_operand(OperandType(C.SUBGRAPH), name="else")
    body.set_operand_value_from_model(eb, else_m)
    bx2 = body.add_operand(OperandType(C.TENSOR_FLOAT32, [2]), name="body/x'")
    body.add_operation(Op.IF, [flag, tb, eb, bx], [bx2])
    body.identify_inputs_and_outputs([bi, bx], [bi2, bx2])
    body.finish()

    m = nnapi.Model(name="control_flow")
    c = m.add_operand(OperandType(C.TENSOR_BOOL8, [1]), name="c")
    x = m.add_operand(OperandType(C.TENSOR_FLOAT32, [2]), name="x")
    t = m.add_operand(OperandType(C.SUBGRAPH))
    m.set_operand_value_from_model(t, then_m)
    e = m.add_operand(OperandType(C.SUBGRAPH))
    m.set_operand_value_from_model(e, else_m)
    h = m.add_operand(OperandType(C.TENSOR_FLOAT32, [2]), name="if/out")
    m.add_operation(Op.IF, [c, t, e, x], [h])
    i0 = m.add_operand(OperandType(C.TENSOR_FLOAT32, [1]), name="i0")
    m.set_operand_value(i0, np.array([0.0], np.float32))
    cm = m.add_operand(OperandType(C.SUBGRAPH))
    m.set_operand_value_from_model(cm, cond)
    bm = m.add_operand(OperandType(C.SUBGRAPH))
    m.set_operand_value_from_model(bm, body)
    n = m.add_operand(OperandType(C.TENSOR_FLOAT32, [1]), name="count")
    y = m.add_operand(OperandType(C.TENSOR_FLOAT32, [2]), name="y")
    m.add_operation(Op.WHILE, [cm, bm, i0, h], [n, y])
    m.identify_inputs_and_outputs([c, x], [n, y])
    m.finish()
    return m


def nasty_names_model():
    """Names that would break C comments and strings: */, /*, newlines, trigraphs, quotes, non-ASCII."""
    m = nnapi.Model(name="evil */ model")
    x = m.add_operand(OperandType(C.TENSOR_FLOAT32, [3]), name='in */ #include "x" /* ??/\n\\')
    c = m.add_operand(OperandType(C.TENSOR_FLOAT32, [3]), name="c\x00\x7f\t??=é*")
    m.set_operand_value(c, np.array([np.inf, -np.inf, np.nan], np.float32))  # non-finite: written as bytes
    f = _scalar(m, C.INT32, np.int32(0), name="/")
    y = m.add_operand(OperandType(C.TENSOR_FLOAT32, [3]), name="out\\")
    m.add_operation(Op.ADD, [x, c, f], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    return m


def omitted_operand_model():
    """LSH_PROJECTION with its optional `weight` omitted (setOperandValue(NULL, 0))."""
    m = nnapi.Model(name="lsh")
    h = m.add_operand(OperandType(C.TENSOR_FLOAT32, [4, 2]), name="hash")
    m.set_operand_value(h, np.array([[0.123, 0.456], [-0.5, 0.75], [1.5, -2.0], [0.25, 0.1]], np.float32))
    x = m.add_operand(OperandType(C.TENSOR_INT32, [3, 2]), name="x")
    w = m.add_operand(OperandType(C.TENSOR_FLOAT32, [3]), name="weight")
    m.set_operand_value(w, None)
    t = _scalar(m, C.INT32, np.int32(2))  # DENSE
    y = m.add_operand(OperandType(C.TENSOR_INT32, [8]), name="bits")
    m.add_operation(Op.LSH_PROJECTION, [h, x, w, t], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    return m


def tflite_conv_model():
    """A .tflite CONV_2D (float weights of 288 bytes) converted by the TFLite importer."""
    pytest.importorskip("ai_edge_litert")
    from converters.load import importer
    from converters.tflite.authoring import GraphBuilder
    g = GraphBuilder()
    x = g.input("image", [1, 5, 5, 2])
    w = g.const("conv/w", np.random.default_rng(4).standard_normal((4, 3, 3, 2)).astype(np.float32))
    b = g.const("conv/b", np.arange(4, dtype=np.float32))
    y = g.tensor("conv/y", [1, 5, 5, 4])
    g.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1,
         fused_activation_function="RELU6")
    g.output(y)
    result = importer("tflite").convert(g.finish(), feature_level=8)
    assert result.complete, f"the TFLite CONV_2D converter refused the model: {result.unsupported}"
    return result.model


def sample_model(filename: str):
    """A bundled sample converted by its importer (TFLite or ONNX) at feature level 8."""
    from converters.load import detect_format, importer
    path = DEMO.parent / filename
    result = importer(detect_format(path)).convert(path, feature_level=8)
    assert result.complete, [(n.op, n.reason) for n in result.unsupported]
    return result.model


MODELS = {
    "demo": lambda: nnapi.load(DEMO),
    "sample_mobilenet_float": lambda: sample_model("mobilenet_float.tflite"),
    "sample_mobilenet_uint8": lambda: sample_model("mobilenet_uint8.tflite"),
    "sample_mobilenet_int8": lambda: sample_model("mobilenet_int8.tflite"),
    "sample_control_flow": lambda: sample_model("control_flow.tflite"),
    "sample_resnet_onnx": lambda: sample_model("resnet_float.onnx"),
    "float_conv": float_conv_model,
    "uint8": uint8_model,
    "int8_per_channel": int8_per_channel_model,
    "fp16": fp16_model,
    "control_flow": control_flow_model,
    "nasty_names": nasty_names_model,
    "omitted_operand": omitted_operand_model,
    "tflite_conv": tflite_conv_model,
}


# -- building and running the generated C --------------------------------------------------

@pytest.fixture(scope="module")
def ndk(tmp_path_factory):
    """An include folder with android/NeuralNetworks.h and the compiled shim."""
    root = tmp_path_factory.mktemp("ndk")
    (root / "include" / "android").mkdir(parents=True)
    shutil.copy(NDK_DIR / "NeuralNetworks.h", root / "include" / "android" / "NeuralNetworks.h")
    shim = root / "shim.o"
    subprocess.run([GCC, *CFLAGS, "-c", str(NDK_DIR / "shim.c"), "-o", str(shim)], check=True)
    return root


class Exported:
    def __init__(self, model, folder: Path, name: str, exe: Path):
        self.model, self.folder, self.name, self.exe = model, folder, name, exe

    def run(self, tmp: Path, fail: str = "", device: bool = False, weights=None):
        self.runs = getattr(self, "runs", 0) + 1
        trace = tmp / f"trace{self.runs}.txt"
        env = dict(os.environ, NNAPI_SHIM_TRACE=str(trace), NNAPI_SHIM_FAIL=fail)
        args = [str(self.exe), str(weights or self.folder / f"{self.name}_weights.bin")]
        if device:
            args.append("device")
        r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=20)
        assert r.returncode == 0, r.stderr
        steps = dict(line.split(" ", 1) for line in r.stdout.splitlines())
        return steps, trace.read_text() if trace.exists() else ""  # no NNAPI call: no trace


def build(model, tmp: Path, ndk: Path, name: str) -> Exported:
    folder = tmp / "out"
    export_c(model, folder, name=name)
    exe = tmp / "prog"
    subprocess.run([GCC, *CFLAGS, f"-I{ndk / 'include'}", f"-I{folder}",
                    f'-DEXPORT_HEADER="{name}_model.h"', f"-DEXPORT_PREFIX={name}",
                    f"-DEXPORT_UPPER={name.upper()}", str(MAIN_C), str(folder / f"{name}_model.c"),
                    str(ndk / "shim.o"), "-o", str(exe)], check=True, capture_output=True, text=True)
    return Exported(model, folder, name, exe)


@pytest.fixture(scope="module")
def exported(ndk, tmp_path_factory):
    cache = {}

    def get(key):
        if key not in cache:
            cache[key] = build(MODELS[key](), tmp_path_factory.mktemp(key), ndk, f"m_{key}")
        return cache[key]
    return get


# -- the generated model is the converted model ----------------------------------------------

@pytest.mark.parametrize("key", list(MODELS))
def test_generated_c_rebuilds_the_model_byte_for_byte_and_computes_the_same(key, exported, tmp_path):
    ex = exported(key)
    steps, trace = ex.run(tmp_path)
    assert steps["create"] == "0" and steps["compile"] == "0" and steps["run"] == "0"
    assert steps["outputs_written"] == "1"  # the shim zero-filled every output buffer of the right size
    r = replay(trace)
    assert r.main is not None
    assert differences(ex.model, r.main) == []
    assert r.leaked() == {}
    # large constants come from the mapped weights file at 64-byte aligned offsets, small ones are copied
    large = sum(1 for m in [ex.model] + ex.model.referenced_models for o in m.operands
                if o.is_constant and o.type.byte_size() > 128)
    assert len(r.memory_offsets) == large
    assert all(off % 64 == 0 for off, _ in r.memory_offsets)
    calls = parse(trace)
    assert all(c.fields["length"] != "0" and int(c.fields["length"]) <= 128
               for c in calls if c.name == "Model_setOperandValue" and c.fields["null"] == "0")
    # the inputs reached setInput as the driver filled them
    for c in calls:
        if c.name == "Execution_setInput":
            k, data = c.int("index"), bytes.fromhex(c.fields["data"])
            assert data == bytes((k * 7 + i) & 0xFF for i in range(len(data)))
    # both models compute the same outputs with the executor
    inputs = random_inputs(ex.model, seed=5)
    for a, b in zip(run_model(ex.model, inputs), run_model(r.main, inputs)):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_subgraphs_are_built_in_dependency_order_and_referenced_by_the_right_model(exported, tmp_path):
    ex = exported("control_flow")
    _, trace = ex.run(tmp_path)
    calls = parse(trace)
    finished, order = set(), []
    for c in calls:
        if c.name == "Model_finish":
            finished.add(c.int("model"))
            order.append(c.int("model"))
        if c.name == "Model_setOperandValueFromModel":
            assert c.int("value") in finished  # referenced models are finished first
    assert len(order) == 5  # main + then + else + cond + body; `then`/`else` built once though used 3 times
    assert len([c for c in calls if c.name == "Model_create"]) == 5
    r = replay(trace)
    assert r.main is r.models[order[-1]]  # the main model is finished last and compiled
    # referenced models are freed after the models referencing them
    frees = [c.int("model") for c in calls if c.name == "Model_free" and c.int("model")]
    assert frees[0] == order[-1] and sorted(frees) == sorted(order)


def test_device_selection_and_preference(exported, tmp_path):
    ex = exported("demo")
    steps, trace = ex.run(tmp_path, device=True)
    assert steps["run"] == "0"
    calls = parse(trace)
    dev = [c for c in calls if c.name == "Compilation_createForDevices"]
    assert len(dev) == 1 and dev[0].fields["devices"] == "1" and dev[0].fields["all_set"] == "1"
    assert not [c for c in calls if c.name == "Compilation_create"]
    assert [c.fields["preference"] for c in calls if c.name == "Compilation_setPreference"] == ["2"]
    assert replay(trace).leaked() == {}


# -- failures ------------------------------------------------------------------------------

def _stage_of(calls, k):
    """The driver step (create / compile / run) that fallible call number k belongs to."""
    name = [c for c in calls if c.rc is not None][k - 1].name
    if name.startswith(("Model_", "Memory_")):
        return "create"
    return "compile" if name.startswith("Compilation_") else "run"


@pytest.mark.parametrize("key", ["control_flow", "int8_per_channel", "float_conv"])
def test_every_failing_nnapi_call_is_returned_and_everything_is_freed(key, exported, tmp_path):
    ex = exported(key)
    _, ok_trace = ex.run(tmp_path)
    ok_calls = parse(ok_trace)
    fallible = len([c for c in ok_calls if c.rc is not None])
    assert fallible > 20
    for k in range(1, fallible + 1):
        code = 4 + k % 10  # BAD_DATA, OP_FAILED, ... : any code must come back unchanged
        steps, trace = ex.run(tmp_path, fail=f"*:{k}:{code}")
        stage = _stage_of(ok_calls, k)
        assert steps[stage] == str(code), (k, steps)
        if stage == "create":
            assert steps["zeroed"] == "1" and "compile" not in steps
        calls = parse(trace)
        failed = [j for j, c in enumerate(calls) if c.rc not in (None, 0)]
        assert len(failed) == 1 and calls[failed[0]].rc == code
        # nothing but frees after the failing call, and nothing leaked
        assert all(c.rc is None for c in calls[failed[0] + 1:]), (k, calls[failed[0]:])
        assert replay(calls).leaked() == {}, k


@pytest.mark.parametrize("key", ["float_conv", "control_flow"])
def test_third_add_operand_failing_with_bad_data(key, exported, tmp_path):
    ex = exported(key)
    steps, trace = ex.run(tmp_path, fail="Model_addOperand:3:4")
    assert steps["create"] == "4" and steps["zeroed"] == "1"
    r = replay(trace)
    assert [c.rc for c in parse(trace) if c.name == "Model_addOperand"] == [0, 0, 4]
    assert r.created["model"] and r.leaked() == {}
    assert ("memory" in r.created) == (key == "float_conv")  # the weights memory was created, then freed


def test_wrong_or_missing_weights_file(exported, tmp_path):
    ex = exported("float_conv")
    short = tmp_path / "short.bin"
    short.write_bytes(b"\0" * 10)
    steps, trace = ex.run(tmp_path, weights=short)
    assert steps["create"] == "4"  # BAD_DATA: not this model's weights (size differs)
    assert "Memory_createFromFd" not in trace
    steps, _ = ex.run(tmp_path, weights=tmp_path / "missing.bin")
    assert steps["create"] == "7"  # UNMAPPABLE


# -- the generated text ----------------------------------------------------------------------

def test_generated_c_is_readable(exported):
    ex = exported("float_conv")
    src = (ex.folder / "m_float_conv_model.c").read_text()
    assert "/* padding */ ANEURALNETWORKS_PADDING_SAME" in src
    assert "/* fuse */ ANEURALNETWORKS_FUSED_RELU6" in src
    assert "/* layout */ 0 /* NHWC */" in src
    assert "ANEURALNETWORKS_TENSOR_FLOAT32" in src and "ANEURALNETWORKS_CONV_2D" in src
    assert '"conv/weights"' in src and "/* filter */ 1" in src and "/* stride_w */" in src
    assert "relaxComputationFloat32toFloat16(model, true)" in src
    hdr = (ex.folder / "m_float_conv_model.h").read_text()
    assert "int m_float_conv_create_model(const char* weights_path, m_float_conv_Model* out_model);" in hdr
    ex = exported("control_flow")
    src = (ex.folder / "m_control_flow_model.c").read_text()
    assert "ANEURALNETWORKS_WHILE" in src and "setOperandValueFromModel" in src
    readme = (ex.folder / "README.md").read_text()
    assert "neuralnetworks android" in readme and "API level 30" in readme


def test_names_are_escaped(exported):
    ex = exported("nasty_names")  # compiled with -Wall -Wextra -Werror above
    src = (ex.folder / "m_nasty_names_model.c").read_text()
    for line in src.splitlines():
        if "/*" in line:
            body = line.split("/*", 1)[1]
            assert "/*" not in body.split("*/", 1)[0]
    assert '"in *\\/ #include \\"x\\" /\\* \\?\\?/\\012\\\\"' in src
    assert "\\303\\251" in src  # é as UTF-8 octal escapes in string literals


def test_readme_api_levels():
    from converters.export.names import android_api_level, min_android_release
    assert [android_api_level(k) for k in range(1, 9)] == [27, 28, 29, 30, 31, 1000006, 1000007, 1000008]
    assert "updatable" in min_android_release(7) and "1000007" in min_android_release(7)


# -- the folder --------------------------------------------------------------------------------

def test_output_folder_is_atomic_and_never_clobbers_foreign_files(tmp_path):
    model = nnapi.load(DEMO)
    out = tmp_path / "out"
    paths = export_c(model, out, name="demo")
    assert sorted(p.name for p in paths) == ["README.md", "demo_model.c", "demo_model.h", "demo_weights.bin"]
    assert json.loads((out / MARKER).read_text())["name"] == "demo"
    export_c(model, out, name="demo")  # our own export: replaced
    export_c(model, out, name="other")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "README.md", "other_model.c", "other_model.h",
                                                     "other_weights.bin"]
    (out / "mine.c").write_text("int x;")
    with pytest.raises(ExportError, match="did not write"):
        export_c(model, out, name="demo")
    assert (out / "mine.c").exists()
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("keep")
    with pytest.raises(ExportError, match="not empty"):
        export_c(model, other)
    (tmp_path / "empty").mkdir()
    export_c(model, tmp_path / "empty")
    assert (tmp_path / "empty" / "model_model.c").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folders left


def test_interrupted_export_leaves_nothing(tmp_path, monkeypatch):
    import converters.export as ex
    out = tmp_path / "out"
    real = os.fsync
    calls = []

    def boom(fd):
        calls.append(fd)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(fd)
    monkeypatch.setattr(ex.os, "fsync", boom)
    with pytest.raises(KeyboardInterrupt):
        export_c(nnapi.load(DEMO), out)
    assert list(tmp_path.iterdir()) == []


def test_bad_name_and_feature_level(tmp_path):
    with pytest.raises(ExportError, match="identifier"):
        export_c(nnapi.load(DEMO), tmp_path / "a", name="2bad")
    with pytest.raises(ExportError, match="identifier"):
        export_c(nnapi.load(DEMO), tmp_path / "a", name="int")
    with pytest.raises(ExportError) as e:
        export_c(control_flow_model(), tmp_path / "a", feature_level=3)
    assert e.value.exit_code == 2
    assert not (tmp_path / "a").exists()


# -- the command line ---------------------------------------------------------------------------

def test_cli_export_nnapi(tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["export", str(DEMO), "--target", "c", "-o", str(out), "--name", "demo"]) == 0
    assert (out / "demo_model.c").exists() and (out / "demo_weights.bin").exists()
    assert "demo_model.c" in capsys.readouterr().out


def test_cli_export_exit_codes(tmp_path, capsys):
    bad = tmp_path / "bad.nnapi"
    bad.write_bytes(b"NNAPIMDL" + b"\0" * 200)
    assert main(["export", str(bad), "--target", "c", "-o", str(tmp_path / "x")]) == 3
    assert main(["export", str(tmp_path / "missing.nnapi"), "--target", "c", "-o", str(tmp_path / "x")]) == 3
    assert main(["export", str(DEMO), "--target", "c", "-o", str(tmp_path / "x"), "--name", "a-b"]) == 3
    assert main(["export", str(DEMO), "--target", "c", "-o", str(tmp_path / "x"), "--feature-level", "1"]) == 2
    err = capsys.readouterr().err
    assert "feature level" in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_cli_export_tflite_complete_and_unsupported(tmp_path, capsys):
    pytest.importorskip("ai_edge_litert")
    from converters.tflite.authoring import GraphBuilder
    g = GraphBuilder()
    a = g.input("a", [1, 3, 5, 2])
    b = g.const("b", np.arange(30, dtype=np.float32).reshape(1, 3, 5, 2))
    y = g.tensor("y", [1, 3, 5, 2])
    g.op("ADD", [a, b], [y], "AddOptions", fused_activation_function="RELU6")
    g.output(y)
    src = tmp_path / "add.tflite"
    src.write_bytes(g.finish())
    out = tmp_path / "c"
    assert main(["export", str(src), "--target", "c", "-o", str(out), "--feature-level", "4"]) == 0
    text = (out / "model_model.c").read_text()
    assert "ANEURALNETWORKS_FUSED_RELU6" in text and "ANEURALNETWORKS_ADD" in text

    g = GraphBuilder()
    a = g.input("a", [1, 4])
    y = g.tensor("y", [1, 4])
    g.op("BROADCAST_ARGS", [a], [y])
    g.output(y)
    src2 = tmp_path / "odd.tflite"
    src2.write_bytes(g.finish())
    capsys.readouterr()
    assert main(["export", str(src2), "--target", "c", "-o", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert "BROADCAST_ARGS" in err and "node 0" in err
    assert not (tmp_path / "d").exists()
