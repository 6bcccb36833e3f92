"""The zoo's own machinery: manifest checks, light-model materialisation, baseline comparison."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.zoo import fetch, manifest, ratchet, run, table
from tests.zoo.light import materialise


def _write(tmp_path, text: str):
    (tmp_path / "a.toml").write_text(text)
    return tmp_path


GOOD = """
[[model]]
id = "x/y"
category = "c"
file = "models/x.tflite"
script = "make/x.py"
licence = "MIT"
expect = "full"
"""


def test_manifest_reads_a_good_entry(tmp_path):
    (m,) = manifest.load(_write(tmp_path, GOOD))
    assert (m.id, m.format, m.source, m.steps) == ("x/y", "tflite", "make/x.py", 1)


@pytest.mark.parametrize("change, message", [
    ('expect = "full"', "must be one of"),            # replaced by a bad status below
    ('licence = "MIT"', "`licence` must be"),
    ('script = "make/x.py"', "needs the `script`"),
])
def test_manifest_names_the_bad_entry(tmp_path, change, message):
    bad = GOOD.replace(change, 'expect = "maybe"' if "expect" in change else "")
    with pytest.raises(manifest.ManifestError, match=message) as e:
        manifest.load(_write(tmp_path, bad))
    assert "a.toml: model 0 (x/y)" in str(e.value)


def test_manifest_rejects_unknown_keys_duplicate_ids_and_unexplained_partials(tmp_path):
    with pytest.raises(manifest.ManifestError, match="unknown key"):
        manifest.load(_write(tmp_path, GOOD + 'colour = "red"\n'))
    with pytest.raises(manifest.ManifestError, match="already used"):
        manifest.load(_write(tmp_path, GOOD + GOOD))
    with pytest.raises(manifest.ManifestError, match="expect_reasons"):
        manifest.load(_write(tmp_path, GOOD.replace('"full"', '"partial"')))
    with pytest.raises(manifest.ManifestError, match="needs `why`"):
        manifest.load(_write(tmp_path, GOOD.replace('"full"', '"none"')))


def test_the_real_manifest_loads_and_every_committed_file_exists():
    models = manifest.load()
    for m in models:
        if m.file:
            assert (manifest.ZOO_DIR / m.file).exists(), m.id
            assert (manifest.ZOO_DIR / m.script).exists(), m.id


def _light_model() -> bytes:
    shape = numpy_helper.from_array(np.array([4, 3, 3, 3], np.int64), "w_shape")
    vshape = numpy_helper.from_array(np.array([4], np.int64), "v_shape")
    nodes = [helper.make_node("ConstantOfShape", ["w_shape"], ["w"],
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0])),
             helper.make_node("ConstantOfShape", ["v_shape"], ["var"],
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0])),
             helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "var"], ["y"])]
    consts = [numpy_helper.from_array(np.ones(4, np.float32), n) for n in ("s", "b", "m")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 5, 5])],
                              initializer=[shape, vshape, *consts])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def test_light_fills_become_seeded_initializers_by_role():
    once, again = materialise(_light_model(), "m"), materialise(_light_model(), "m")
    assert once == again                                   # seeded: the same every time
    model = onnx.load_from_string(once)
    onnx.checker.check_model(model)
    assert [n.op_type for n in model.graph.node] == ["Conv", "BatchNormalization"]
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert "w_shape" not in inits and "v_shape" not in inits   # the now unused shape tensors are gone
    assert inits["w"].shape == (4, 3, 3, 3)
    assert 0.1 < inits["w"].std() < 0.8                    # He: sqrt(2 / 27) = 0.27
    assert inits["var"].min() >= 0.5                       # a variance is positive
    assert materialise(_light_model(), "other") != once     # the seed follows the model id


def _row(**changes) -> dict:
    row = {"id": "x/y", "status": "partial", "nodes": 10, "supported_nodes": 8, "macs_fraction": 0.9,
           "partitions": 2, "reasons": {"custom_operator": 2}, "pins_needed": {}, "parity": "pass",
           "internal_error": False, "samples": 3, "parity_ratio": 0.01, "verdict_rule": "local",
           "drift": {"max_units": 4.0, "max_abs_error": 4.0, "cosine": 0.99},
           "end_to_end": {"max_units": 1.0, "allowed_units": 2.0}}
    row.update(changes)
    return row


def test_the_ratchet_sees_every_recorded_figure():
    base = ratchet.entry(_row())
    assert ratchet.compare(_row(), base) == ([], [])
    worse, _ = ratchet.compare(_row(supported_nodes=7, parity="fail", macs_fraction=0.5, partitions=3,
                                    reasons={"custom_operator": 2, "shape": 1}, pins_needed={"x": 4}), base)
    assert len(worse) == 6, worse
    # an error growing from 0.01 to 0.99 of its allowance (pass/fail alone never saw it)
    worse, _ = ratchet.compare(_row(parity_ratio=0.99), base)
    assert worse == ["worst error / allowance 0.99 (baseline 0.01; the noise margin allows 0.12)"]
    for changed in (dict(drift={"max_units": 40.0, "max_abs_error": 40.0, "cosine": 0.99}),
                    dict(drift={"max_units": 4.0, "max_abs_error": 4.0, "cosine": 0.9}),
                    dict(end_to_end={"max_units": 5.0, "allowed_units": 2.0}),
                    dict(end_to_end={"max_units": 1.0, "allowed_units": 3.0}),
                    dict(end_to_end=None)):
        worse, better = ratchet.compare(_row(**changed), base)
        assert len(worse) == 1 and not better, (changed, worse, better)


def test_the_ratchet_allows_noise_and_demands_tightening_beyond_it():
    base = ratchet.entry(_row(parity_ratio=0.4))
    assert ratchet.compare(_row(parity_ratio=0.85), base) == ([], [])   # 0.4 * 2 + 0.1 = 0.9
    assert ratchet.compare(_row(parity_ratio=0.2), base) == ([], [])    # 0.2 * 2 + 0.1 = 0.5 > 0.4
    worse, better = ratchet.compare(_row(parity_ratio=0.1), base)
    assert not worse and better == ["worst error / allowance 0.1 (baseline 0.4, beyond the noise margin)"]
    _, better = ratchet.compare(_row(status="full", supported_nodes=10, macs_fraction=1.0, partitions=1,
                                     reasons={}, parity_ratio=0.4), base)
    assert len(better) == 5, better
    # a figure the baseline never recorded (parity's end-to-end check arriving) must be recorded
    _, better = ratchet.compare(_row(parity_ratio=0.4), dict(base, e2e_units=None, e2e_allowed_units=None))
    assert better == ["end-to-end error against the kernels NNAPI shares, stored units now measured (1): record it"]


def test_an_internal_error_or_a_dead_run_is_worse():
    base = ratchet.entry(_row())
    worse, _ = ratchet.compare(_row(status="error", internal_error=True, error="boom", nodes=None,
                                    supported_nodes=None, macs_fraction=None, partitions=None, reasons={},
                                    parity="n/a", parity_ratio=None, drift=None, end_to_end=None), base)
    assert any("internal error" in w for w in worse) and any("status partial -> error" in w for w in worse)
    assert any(w.startswith("parity n/a") for w in worse)


def test_update_refuses_to_loosen_without_acceptance_and_only_tightens_within_noise():
    base = {"x/y": ratchet.entry(_row(parity_ratio=0.4)), "gone/model": {"status": "full"}}
    data, refusals = ratchet.update([_row(parity_ratio=0.95, supported_nodes=7)], base, set(), {"x/y"})
    assert refusals == ["x/y: nodes off NNAPI 3 (baseline 2); worst error / allowance 0.95 (baseline 0.4; the noise "
                        "margin allows 0.9)"]
    data, refusals = ratchet.update([_row(parity_ratio=0.95, supported_nodes=7)], base, {"x/y"}, {"x/y"})
    assert not refusals and data["x/y"]["error_ratio"] == 0.95 and data["x/y"]["supported_nodes"] == 7
    assert "gone/model" not in data                                  # no longer in the manifest
    data, _ = ratchet.update([_row(parity_ratio=0.5)], base, set(), {"x/y"})
    assert data["x/y"]["error_ratio"] == 0.4                         # within the noise: the tighter one stays
    data, _ = ratchet.update([_row(parity_ratio=0.1)], base, set(), {"x/y"})
    assert data["x/y"]["error_ratio"] == 0.1


def _meta(**changes) -> dict:
    return dict({"id": "x/y", "expect": "partial", "expect_reasons": {"custom_operator": 2}, "known_gap": ""},
                **changes)


def test_expectation_gap_names_what_is_missing():
    assert table.expectation_gap(_row(**_meta())) == ""
    assert "reasons custom_operator ×2, shape ×1" in table.expectation_gap(
        _row(**_meta(), reasons={"custom_operator": 2, "shape": 1}))
    assert table.expectation_gap(_row(**_meta(expect="full"))).startswith("status partial")
    assert table.expectation_gap(_row(**_meta(), parity="fail")).startswith("parity fail")
    assert table.expectation_gap(_row(**_meta(), error="coverage exit 5: boom")).startswith("stops with an error")
    doc = table.render([_row(**_meta(expect="full", known_gap="the custom op has no NNAPI form yet"),
                             category="c", source="s")])
    assert "Known gap: the custom op has no NNAPI form yet." in doc and "(known gap)" in doc


def test_manifest_checks_known_gap_samples_and_feature_level(tmp_path):
    (m,) = manifest.load(_write(tmp_path, GOOD))
    assert (m.samples, m.feature_level, m.known_gap) == (3, 8, "")
    (m,) = manifest.load(_write(tmp_path, GOOD + 'samples = 1\nfeature_level = 4\nknown_gap = "x"\n'))
    assert (m.samples, m.feature_level, m.known_gap) == (1, 4, "x")
    for bad, message in (('known_gap = ""', "known_gap"), ("samples = 0", "samples"),
                         ("feature_level = 9", "feature_level"), ("samples = true", "samples")):
        with pytest.raises(manifest.ManifestError, match=message):
            manifest.load(_write(tmp_path, GOOD + bad + "\n"))


def test_the_manifest_pins_samples_and_feature_level_reach_every_command(monkeypatch, tmp_path):
    m = manifest.ZooModel(id="x/y", category="c", licence="MIT", expect="full", manifest="a.toml",
                          file="models/x.tflite", script="s", input_shapes={"x": [1, 4]}, dims={"n": 2},
                          feature_level=4, samples=5, steps=2)
    seen = []
    monkeypatch.setattr(run, "_cli", lambda argv: (seen.append(argv), (5, "", "boom"))[1])
    row = run.row_head(m, 7)
    run._run_commands(m, tmp_path / "x.tflite", 7, row)
    assert seen[0][0] == "coverage" and seen[0][-6:] == ["--input-shape", "x=1,4", "--dim", "n=2", "--feature-level", "4"]
    assert row["error"] == "coverage exit 5: boom"
    # parity gets --samples, --seed, --steps as well; an option the CLI lacks is its usage error, a failure
    cov = {"summary": {"nodes": 1, "supported_nodes": 1, "macs": 0, "supported_macs_fraction": 1.0,
                       "partitions": 1}, "nodes": [], "per_feature_level": {}}

    def fake(argv):
        seen.append(argv)
        if argv[0] == "coverage":
            (tmp_path / "cov").write_text(__import__("json").dumps(cov))
            __import__("shutil").copy(tmp_path / "cov", argv[argv.index("-o") + 1])
        return (0, "", "") if argv[0] != "parity" else (2, "", "nnapi parity: error: unrecognized arguments")
    monkeypatch.setattr(run, "_cli", fake)
    row = run.row_head(m, 7)
    run._run_commands(m, tmp_path / "x.tflite", 7, row)
    parity = seen[-1]
    for option, value in (("--samples", "5"), ("--seed", "7"), ("--steps", "2"), ("--feature-level", "4"),
                          ("--dim", "n=2")):
        assert parity[parity.index(option) + 1] == value, option
    assert row["parity"] == "error" and "unrecognized arguments" in row["parity_message"]


def test_a_missing_cli_option_is_a_failure_not_a_silent_drop():
    code, _, err = run._cli(["parity", "m.tflite", "--no-such-option"])
    assert code == 3 and "unrecognized arguments: --no-such-option" in err
    assert "_cli_options" not in vars(run)             # the probe for --dim / --steps is gone


def _main_with(monkeypatch, tmp_path, rows_by_id: dict, baseline: dict):
    """tests.zoo's main with the models' runs replaced by `rows_by_id` and the files it writes in tmp_path."""
    from tests.zoo import __main__ as cli
    monkeypatch.setenv("NNAPI_ZOO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(cli, "DOC", tmp_path / "zoo.md")
    monkeypatch.setattr(ratchet, "BASELINE", tmp_path / "baseline.json")
    monkeypatch.setattr(ratchet, "load", lambda path=None: dict(baseline))
    written = {}
    monkeypatch.setattr(ratchet, "write", lambda data, path=None: written.update(data))
    monkeypatch.setattr(cli, "run_all", lambda models, jobs, on_row, seed: [
        dict(rows_by_id[m.id], id=m.id, category="c", source="s", expect="full", expect_reasons={}, known_gap="")
        for m in models])
    return cli.main, written


def test_only_never_rewrites_the_committed_table(monkeypatch, tmp_path):
    one = manifest.load()[0].id
    main, _ = _main_with(monkeypatch, tmp_path, {one: _row(status="full", reasons={})}, {})
    assert main(["--only", one]) == 0
    assert not (tmp_path / "zoo.md").exists()
    assert main(["--only", one, "--doc", str(tmp_path / "mine.md")]) == 0
    assert f"| {one} |" in (tmp_path / "mine.md").read_text()


def test_update_baseline_names_what_would_loosen_and_needs_accept_regression(monkeypatch, tmp_path, capsys):
    one = manifest.load()[0].id
    base = {one: ratchet.entry(_row(parity_ratio=0.1))}
    main, written = _main_with(monkeypatch, tmp_path, {one: _row(parity_ratio=0.9)}, base)
    assert main(["--only", one, "--update-baseline"]) == 1
    err = capsys.readouterr().err
    assert f"{one}: worst error / allowance 0.9 (baseline 0.1" in err and "--accept-regression" in err
    assert not written
    assert main(["--only", one, "--accept-regression", one]) == 3          # only with --update-baseline
    assert main(["--only", one, "--update-baseline", "--accept-regression", "not/a/model"]) == 3
    assert main(["--only", one, "--update-baseline", "--accept-regression", one]) == 0
    assert written[one]["error_ratio"] == 0.9


def test_a_light_model_is_materialised_for_one_run_and_deleted(monkeypatch, tmp_path):
    monkeypatch.setenv("NNAPI_ZOO_CACHE", str(tmp_path / "cache"))
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "l.onnx").write_bytes(_light_model())
    monkeypatch.setattr(fetch, "ZOO_DIR", tmp_path)
    m = manifest.ZooModel(id="x/light", category="c", licence="MIT", expect="full", manifest="a.toml",
                          file="models/l.onnx", script="s", light=True)
    with fetch.model_file(m) as path:
        assert onnx.load(str(path)).graph.node[0].op_type == "Conv"
    assert not path.exists() and not path.parent.exists()
    assert not any((tmp_path / "cache").rglob("*.onnx"))                  # nothing left in the cache


def test_a_wheel_member_is_read_for_one_run_and_only_the_wheel_is_kept(monkeypatch, tmp_path):
    import zipfile
    monkeypatch.setenv("NNAPI_ZOO_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "wheels").mkdir(parents=True)
    with zipfile.ZipFile(tmp_path / "cache" / "wheels" / "pkg-1.0-py3-none-any.whl", "w") as z:
        z.writestr("pkg/models/m.onnx", _light_model())
    m = manifest.ZooModel(id="x/wheel", category="c", licence="MIT", expect="full", manifest="a.toml",
                          wheel="pkg==1.0", member="pkg/models/m.onnx")
    with fetch.model_file(m) as path:
        assert path.name == "m.onnx" and path.read_bytes() == _light_model()
    assert not path.exists()
    assert [p.name for p in (tmp_path / "cache").rglob("*") if p.is_file()] == ["pkg-1.0-py3-none-any.whl"]


def test_offline_the_zoo_says_in_one_line_what_it_needs(monkeypatch, tmp_path):
    monkeypatch.setenv("NNAPI_ZOO_CACHE", str(tmp_path))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")      # nothing listens there: offline
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    why = fetch.missing_wheels({"mediapipe==0.10.21", "silero-vad==6.2.3"})
    assert why.startswith("the zoo needs 2 pinned wheel(s) from PyPI (mediapipe==0.10.21, silero-vad==6.2.3) in "
                          f"NNAPI_ZOO_CACHE={tmp_path} and could not download them (pip download ")
    assert "\n" not in why
    monkeypatch.setenv("CI", "true")
    assert fetch.in_ci()
    monkeypatch.setenv("CI", "false")
    assert not fetch.in_ci()


def test_only_fetch_py_knows_where_the_zoo_cache_is():
    # every other path goes through fetch.cache_dir(), so NNAPI_ZOO_CACHE is honoured everywhere
    repo = manifest.ZOO_DIR.parent.parent
    default = "/".join((".cache", "nnapi-zoo"))
    spelled = [str(p.relative_to(repo)) for folder in ("tests", "benchmarks", "converters", "fuzz")
               for p in (repo / folder).rglob("*.py")
               if default in p.read_text() and p != repo / "tests" / "zoo" / "fetch.py"]
    assert not spelled, f"{spelled} spell out the zoo cache; use tests.zoo.fetch (cache_dir, member_for_test)"


def test_the_worst_error_ratio_reads_the_verdict_that_judges():
    outputs = [{"max_abs_error": 46.0, "allowed": 1.0}]
    local = [{"max_units": 1.0, "max_abs_error": 1.0, "allowed": 1.0},           # an int8 operation
             {"max_units": None, "max_abs_error": 0.000239, "allowed": 4.64e-05},  # a float operation
             {"max_units": 0.0366, "max_abs_error": 9.7e-05, "allowed": 7.7e-04}]  # a recurrent state
    worst, ratio = run._worst_error({"outputs": outputs, "local": local, "verdict": {"rule": "local"}})
    assert worst == 46.0 and ratio == pytest.approx(0.000239 / 4.64e-05)
    worst, ratio = run._worst_error({"outputs": outputs, "local": local[::2], "verdict": {"rule": "local"}})
    assert ratio == 1.0
    worst, ratio = run._worst_error({"outputs": [], "partitions": [{"outputs": [{"max_abs_error": 2e-6,
                                                                               "allowed": 1e-5}]}]})
    assert worst == 2e-6 and ratio == pytest.approx(0.2)


def test_known_gaps_table_reaches_the_models_of_generated_manifests(tmp_path):
    (tmp_path / "b.toml").write_text('[known_gaps]\n"x/y" = "the custom op has no NNAPI form yet"\n')
    (m,) = manifest.load(_write(tmp_path, GOOD))
    assert m.known_gap == "the custom op has no NNAPI form yet"
    (tmp_path / "b.toml").write_text('[known_gaps]\n"x/z" = "?"\n')
    with pytest.raises(manifest.ManifestError, match="known_gaps.x/z: no model has this id"):
        manifest.load(tmp_path)
    (tmp_path / "b.toml").write_text('[known_gaps]\n"x/y" = "again"\n')
    with pytest.raises(manifest.ManifestError, match="already"):
        manifest.load(_write(tmp_path, GOOD + 'known_gap = "inline"\n'))
