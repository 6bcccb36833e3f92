"""docs/supported-ops.md is generated from the converter registry and kept current."""
from converters import supported_ops


def test_supported_ops_doc_is_current():
    assert supported_ops.main(["--check"]) == 0, "run: python -m converters.supported_ops"


def test_table_lists_registered_converters():
    text = supported_ops.render()
    assert "| CONV_2D |" in text and "| ADD | 1–5 | arithmetic |" in text
