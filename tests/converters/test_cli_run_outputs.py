"""`nnapi run -o OUT.npz` writes every model output, even when output names collide."""
import numpy as np
import pytest

import nnapi
from converters.cli import main
from converters.running import npz_output_keys
from nnapi import OperandCode as C
from nnapi import OperandType
from nnapi import OperationCode as Op

T = OperandType(C.TENSOR_FLOAT32, (2, 3))


def _model(path, out_names, input_name="x"):
    """y_k = x + k for k = 1..len(out_names), each output named out_names[k-1]."""
    m = nnapi.Model()
    x = m.add_operand(T, name=input_name)
    fuse = m.add_operand(OperandType(C.INT32))
    m.set_operand_value(fuse, np.int32(0))
    outs = []
    for k, name in enumerate(out_names, start=1):
        c = m.add_operand(T)
        m.set_operand_value(c, np.full((2, 3), k, np.float32))
        y = m.add_operand(T, name=name)
        m.add_operation(Op.ADD, [x, c, fuse], [y])
        outs.append(y)
    m.identify_inputs_and_outputs([x], outs)
    m.finish()
    nnapi.save(m, path)
    return path


def _run(tmp_path, out_names):
    model = _model(tmp_path / "m.nnapi", out_names)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.savez(tmp_path / "in.npz", x=x)
    assert main(["run", str(model), "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "out.npz")]) == 0
    return x, np.load(tmp_path / "out.npz")


def test_same_name_outputs_are_all_written(tmp_path, capsys):
    x, out = _run(tmp_path, ["y", "y", "y"])
    assert out.files == ["y", "y_1", "y_2"]
    for k, key in enumerate(["y", "y_1", "y_2"], start=1):
        np.testing.assert_array_equal(out[key], x + k)
    printed = capsys.readouterr().out
    assert "y_1: float32[2, 3]" in printed and "y_2: float32[2, 3]" in printed


def test_suffix_skips_names_other_outputs_use(tmp_path):
    # the second "y" cannot take "y_1": the third output is really called that
    x, out = _run(tmp_path, ["y", "y", "y_1"])
    assert sorted(out.files) == ["y", "y_1", "y_2"]
    np.testing.assert_array_equal(out["y"], x + 1)
    np.testing.assert_array_equal(out["y_2"], x + 2)
    np.testing.assert_array_equal(out["y_1"], x + 3)


def test_unnamed_output_fallback_collides_with_a_real_name(tmp_path):
    # output 1 is unnamed (-> "output1") and output 0 is named "output1"
    x, out = _run(tmp_path, ["output1", None])
    assert sorted(out.files) == ["output1", "output1_1"]
    np.testing.assert_array_equal(out["output1"], x + 1)
    np.testing.assert_array_equal(out["output1_1"], x + 2)


def test_names_numpy_savez_would_reject_or_truncate(tmp_path):
    # "file" is np.savez's own parameter; a zip entry name ends at a NUL character
    x, out = _run(tmp_path, ["file", "a\x00b", "a"])
    assert sorted(out.files) == ["a", "a_b", "file"]
    np.testing.assert_array_equal(out["file"], x + 1)
    np.testing.assert_array_equal(out["a_b"], x + 2)
    np.testing.assert_array_equal(out["a"], x + 3)


@pytest.mark.parametrize("names, keys", [
    (["a", "b"], ["a", "b"]),
    (["a", "a", "a"], ["a", "a_1", "a_2"]),
    (["a", "a", "a_1"], ["a", "a_2", "a_1"]),
    (["a_1", "a", "a"], ["a_1", "a", "a_2"]),
    ([None, "output0"], ["output0", "output0_1"]),
    (["", None], ["output0", "output1"]),
])
def test_npz_output_keys(names, keys):
    assert npz_output_keys(names) == keys
