"""Models with several subgraphs and signatures: --signature picks the subgraph to convert."""
import numpy as np
import pytest

from converters.cli import main
from converters.running import run_converted
from converters.source_graph import SourceError
from converters.tflite import convert
from converters.tflite.authoring import GraphBuilder


@pytest.fixture
def two_signatures(tmp_path):
    g = GraphBuilder(name="encode")
    x = g.input("x", [1, 3, 5, 2])
    y = g.tensor("y", [1, 3, 5, 2])
    g.op("ADD", [x, g.const("one", np.ones((1, 3, 5, 2), np.float32))], [y], "AddOptions")
    g.output(y)
    g.signature("encode", {"x": x}, {"y": y})
    h = g.subgraph("decode")
    a = h.input("a", [1, 3, 5, 2])
    b = h.tensor("b", [1, 3, 5, 2])
    h.op("MUL", [a, h.const("two", np.full((1, 3, 5, 2), 2, np.float32))], [b], "MulOptions")
    h.output(b)
    h.signature("decode", {"a": a}, {"b": b})
    path = tmp_path / "sig.tflite"
    path.write_bytes(g.finish())
    return path


def test_signature_selects_the_subgraph(two_signatures):
    x = np.arange(30, dtype=np.float32).reshape(1, 3, 5, 2)
    enc = convert(two_signatures)
    dec = convert(two_signatures, signature="decode")
    assert [o.code.name for o in enc.model.operations] == ["ADD"]
    assert [o.code.name for o in dec.model.operations] == ["MUL"]
    np.testing.assert_array_equal(run_converted(dec, [x])[0], 2 * x)
    assert [s["key"] for s in dec.source.signatures] == ["encode", "decode"]


def test_unknown_signature_is_reported(two_signatures, tmp_path, capsys):
    with pytest.raises(SourceError, match="no signature 'nope'"):
        convert(two_signatures, signature="nope")
    assert main(["convert", str(two_signatures), "-o", str(tmp_path / "o.nnapi"), "--signature", "nope"]) == 3
    assert "'encode', 'decode'" in capsys.readouterr().err
    assert main(["convert", str(two_signatures), "-o", str(tmp_path / "o.nnapi"), "--signature", "decode"]) == 0
