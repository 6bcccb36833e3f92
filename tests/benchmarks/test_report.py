"""docs/benchmarks.md's verdicts, computed by hand on synthetic rows (no timing)."""
import pytest

from benchmarks.report import anchor, counts, markdown, memory_verdict, profile_section, target_cell, verdict
from benchmarks.zoo import blas_paragraph


def row(kind="tflite-float", ours=None, litert=None, onnxruntime=None, operations=None, **extra):
    r = {"model": "fam/model/float32", "format": kind.split("-")[0], "kind": kind, "ours": ours, "litert": litert,
         "litert_xnnpack": None, "onnxruntime": onnxruntime, "notes": [], "operations": operations,
         "profile": None, "by_op": None, "memory": None}
    r.update(extra)
    return r


def test_overhead_rule_budget_is_15us_plus_2_5us_per_operation():
    # LiteRT 0.1 ms < 1 ms: ours - LiteRT = 60 µs against 15 + 2.5 x 20 = 65 µs
    v = verdict(row(ours=0.16, litert=0.1, operations=20))
    assert v.status == "within" and "60 µs" in v.text and "65 µs" in v.text and "20 ops" in v.text
    v = verdict(row(ours=0.2, litert=0.1, operations=20))          # 100 µs > 65 µs
    assert v.status == "over" and "100 µs > " in v.text
    assert verdict(row(ours=0.165, litert=0.1, operations=20)).status == "within"   # exactly on the budget
    assert verdict(row(ours=0.115, litert=0.1, operations=0)).status == "within"    # 15 µs, no operations
    assert verdict(row(ours=0.116, litert=0.1, operations=0)).status == "over"


def test_overhead_rule_applies_to_quantized_tflite_too_and_needs_the_operation_count():
    assert verdict(row("tflite-quantized", ours=0.5, litert=0.45, operations=40)).status == "within"  # 50 <= 115
    v = verdict(row(ours=0.5, litert=0.45, operations=None))
    assert v.status == "none" and "unknown" in v.text


def test_ratio_targets_per_kind():
    assert verdict(row(ours=3.0, litert=2.0)).text == "within 1.5x"
    assert verdict(row(ours=3.1, litert=2.0)).text == "over 1.5x"
    assert verdict(row("tflite-quantized", ours=4.0, litert=2.0)).text == "within 2x"
    assert verdict(row("tflite-quantized", ours=4.2, litert=2.0)).text == "over 2x"
    # at exactly 1 ms of LiteRT the ratio rule applies, not the overhead rule
    assert verdict(row(ours=1.6, litert=1.0, operations=10)).text == "over 1.5x"
    assert verdict(row("onnx-float", ours=0.05, onnxruntime=0.03)).text == "within 2x"   # no overhead rule for ONNX
    assert verdict(row("onnx-float", ours=0.07, onnxruntime=0.03)).status == "over"
    assert verdict(row("onnx-quantized", ours=9.0, onnxruntime=1.0)).text == "no target (quantized ONNX)"
    assert verdict(row(ours=None, litert=2.0)).status == "none"
    assert verdict(row("", ours=1.0)).status == "none"     # a model that could not be read


PROFILE = [{"operation_index": k, "nnapi_op": op, "source_node": f"{k} Conv 'c{k}'", "output_shape": [1, 8, 8, 16],
            "ms": ms, "share": ms / 10.0} for k, (op, ms) in
           enumerate([("CONV_2D", 4.0), ("DEPTHWISE_CONV_2D", 2.0), ("CONV_2D", 1.5), ("ADD", 1.0),
                      ("PAD", 0.75), ("RELU", 0.5), ("RESHAPE", 0.25)])]
BY_OP = [{"nnapi_op": "CONV_2D", "count": 2, "ms": 5.5, "share": 0.55},
         {"nnapi_op": "DEPTHWISE_CONV_2D", "count": 1, "ms": 2.0, "share": 0.2}]


def test_target_cell_of_a_model_over_its_target_names_the_top_type_and_links_to_its_profile():
    r = row(ours=20.0, litert=10.0, profile=PROFILE, by_op=BY_OP, profile_total_ms=10.0)
    assert target_cell(r) == f"[over 1.5x: CONV_2D 55% (2 ops)](#{anchor(r['model'])})"
    assert target_cell(row(ours=12.0, litert=10.0, profile=PROFILE, by_op=BY_OP)) == "within 1.5x"
    assert target_cell(row(ours=20.0, litert=10.0)) == "over 1.5x (no profile)"


def test_profile_section_lists_the_five_slowest_operations_and_the_per_type_line():
    r = row(ours=20.0, litert=10.0, profile=PROFILE, by_op=BY_OP, profile_total_ms=10.0)
    text = "\n".join(profile_section(r))
    assert f'<a id="{anchor(r["model"])}"></a>' in text and "### fam/model/float32" in text
    assert "| 0 | CONV_2D | 0 Conv 'c0' | [1, 8, 8, 16] | 4.000 | 40.0% |" in text
    assert "| 4 | PAD |" in text and "| 5 | RELU |" not in text        # top 5 only
    assert "By type: CONV_2D 55% (2 ops, 5.500 ms), DEPTHWISE_CONV_2D 20% (1 ops, 2.000 ms)." in text


IF_BY_OP = [{"nnapi_op": "IF", "count": 1, "ms": 9.0, "share": 0.9}, {"nnapi_op": "GATHER", "count": 1, "ms": 1.0,
                                                                        "share": 0.1}]
INSIDE = [{"subgraph": 1, "operation_index": 3, "nnapi_op": "CONV_2D", "output_shape": [1, 1, 7, 128], "ms": 6.0,
           "calls": 1.0, "share": 0.6},
          {"subgraph": 1, "operation_index": 0, "nnapi_op": "MIRROR_PAD", "output_shape": [1, 544], "ms": 2.0,
           "calls": 1.0, "share": 0.2}]
INSIDE_BY_OP = [{"nnapi_op": "CONV_2D", "count": 1, "ms": 6.0, "share": 0.6},
                {"nnapi_op": "MIRROR_PAD", "count": 1, "ms": 2.0, "share": 0.2}]


def test_a_model_held_back_by_if_names_the_type_inside_and_lists_the_subgraph_operations():
    r = row("onnx-float", ours=10.0, onnxruntime=2.0, profile=PROFILE[:1], by_op=IF_BY_OP, profile_total_ms=10.0,
            subgraph_profile=INSIDE, subgraph_by_op=INSIDE_BY_OP)
    assert target_cell(r) == (f"[over 2x: IF 90% (1 ops), inside it CONV_2D 60% (1 ops)](#{anchor(r['model'])})")
    text = "\n".join(profile_section(r))
    assert "| 1 | 3 | CONV_2D | [1, 1, 7, 128] | 6.000 | 60.0% |" in text
    assert "By type inside: CONV_2D 60% (1 ops, 6.000 ms), MIRROR_PAD 20% (1 ops, 2.000 ms)." in text
    # without the subgraph rows (a profile from before they existed) the cell names IF alone
    assert target_cell(dict(r, subgraph_by_op=None)).startswith("[over 2x: IF 90% (1 ops)](")


def test_document_has_profiles_only_for_models_over_their_target_and_the_memory_table():
    over = row(ours=20.0, litert=10.0, profile=PROFILE, by_op=BY_OP, profile_total_ms=10.0,
               memory={"file_bytes": 10 << 20, "convert_peak_rss_bytes": 100 << 20, "operations": 7})
    within = dict(row(ours=11.0, litert=10.0, profile=PROFILE, by_op=BY_OP), model="fam/other/float32")
    doc = markdown(["header"], [("Zoo models", "Intro.", [over, within])], 30 << 20)
    assert doc.count("<a id=") == 1 and anchor(over["model"]) in doc and anchor(within["model"]) not in doc
    assert "Intro. 1 within target (0 on the overhead rule), 1 over (0 on the overhead rule), 0 without a verdict." in doc
    assert "| fam/model/float32 | 10.0 MB | 100.0 | 180.0 | within | - | - | - | 7 |  |" in doc


def test_convert_memory_limit_is_three_times_the_file_plus_150_mb():
    assert memory_verdict({"file_bytes": 10 << 20, "convert_peak_rss_bytes": 180 << 20}) == "within"
    assert memory_verdict({"file_bytes": 10 << 20, "convert_peak_rss_bytes": (180 << 20) + 1}) == "over"
    assert memory_verdict({"file_bytes": 10 << 20, "error": "convert exit 2"}) == "-"


def test_counts_split_the_overhead_rule():
    rows = [row(ours=0.16, litert=0.1, operations=20), row(ours=0.3, litert=0.1, operations=20),
            row(ours=3.0, litert=2.0), row("onnx-quantized", ours=1.0, onnxruntime=1.0)]
    assert counts(rows) == ("2 within target (1 on the overhead rule), 1 over (1 on the overhead rule), "
                            "1 without a verdict")


@pytest.mark.parametrize("environ, says", [
    ({"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "512"}, "forced by the environment (OPENBLAS_CORETYPE=Haswell, OPENBLAS_L2_SIZE=512)"),
    ({}, "OpenBLAS's own choice for this CPU")])
def test_blas_paragraph_says_when_the_environment_forced_the_kernel_set(environ, says):
    text = blas_paragraph({"library": "openblas", "version": "0.3.31", "threads": 1, "architecture": "Haswell"},
                          environ)
    assert "openblas 0.3.31, 1 thread(s), Haswell kernels" in text and says in text
