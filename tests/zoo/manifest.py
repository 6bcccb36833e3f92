"""The zoo manifest: `tests/zoo/manifest/*.toml`, one `[[model]]` table per model (schema in README.md).

Loading checks every entry, so a typo in the manifest is an error naming the file and the entry,
not a model that silently runs without its pins.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

ZOO_DIR = Path(__file__).resolve().parent
MANIFEST_DIR = ZOO_DIR / "manifest"

STATUSES = ("full", "partial", "none")
_KEYS = {"id", "category", "file", "script", "wheel", "member", "light", "licence", "input_shapes", "dims",
         "inputs", "steps", "expect", "expect_reasons", "why", "notes", "feature_level", "samples",
         "reference", "known_gap"}


class ManifestError(ValueError):
    """A manifest entry that is malformed; the message names the file and the entry."""


@dataclass(frozen=True)
class ZooModel:
    id: str
    category: str
    licence: str
    expect: str
    manifest: str                      # the .toml file the entry came from (for messages)
    file: Optional[str] = None         # committed file, relative to tests/zoo/
    script: Optional[str] = None       # the script that made it
    wheel: Optional[str] = None        # "package==version"
    member: Optional[str] = None       # path inside the wheel
    light: bool = False                # ONNX ConstantOfShape weight fills -> seeded random initializers
    input_shapes: dict = field(default_factory=dict)
    dims: dict = field(default_factory=dict)
    inputs: dict = field(default_factory=dict)
    steps: int = 1
    expect_reasons: dict = field(default_factory=dict)
    why: str = ""
    notes: str = ""
    feature_level: int = 8             # coverage, convert and parity's --feature-level
    samples: int = 3                   # parity's --samples (seeded random inputs, or draws of `inputs`)
    reference: Optional[str] = None    # parity's --reference, where the default cannot run the model
    known_gap: str = ""                # what keeps the model from its `expect` today (shown in the table)

    @property
    def format(self) -> str:
        name = self.file or self.member or ""
        return "onnx" if name.endswith(".onnx") else "tflite"

    @property
    def source(self) -> str:
        """Where the model comes from, for the table: the wheel, or the script that made it."""
        return self.wheel if self.wheel else (self.script or self.file or "")


def _check_entry(raw: dict, where: str) -> ZooModel:
    unknown = set(raw) - _KEYS
    if unknown:
        raise ManifestError(f"{where}: unknown key(s) {sorted(unknown)} (known: {sorted(_KEYS)})")
    for key in ("id", "category", "licence", "expect"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise ManifestError(f"{where}: `{key}` must be a non-empty string")
    if raw["expect"] not in STATUSES:
        raise ManifestError(f"{where}: expect = {raw['expect']!r}; it must be one of {STATUSES}")
    if bool(raw.get("file")) == bool(raw.get("wheel")):
        raise ManifestError(f"{where}: give exactly one of `file` (with `script`) or `wheel` (with `member`)")
    if raw.get("file") and not raw.get("script"):
        raise ManifestError(f"{where}: a committed `file` needs the `script` that made it")
    if raw.get("wheel") and ("==" not in raw["wheel"] or not raw.get("member")):
        raise ManifestError(f"{where}: `wheel` must be pinned as PACKAGE==VERSION and come with `member`")
    if raw["expect"] == "none" and not raw.get("why"):
        raise ManifestError(f"{where}: expect = \"none\" needs `why`")
    if raw["expect"] == "partial" and not raw.get("expect_reasons"):
        raise ManifestError(f"{where}: expect = \"partial\" needs `expect_reasons` (reason code -> node count)")
    if "known_gap" in raw and (not isinstance(raw["known_gap"], str) or not raw["known_gap"].strip()):
        raise ManifestError(f"{where}: `known_gap` must say what is missing (a non-empty string)")
    for key, low, high in (("samples", 1, 100), ("feature_level", 1, 8), ("steps", 1, 10000)):
        if key in raw and not (type(raw[key]) is int and low <= raw[key] <= high):
            raise ManifestError(f"{where}: `{key}` must be an integer from {low} to {high}")
    for name, spec in (raw.get("inputs") or {}).items():
        if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in ("range", "value"):
            raise ManifestError(f"{where}: inputs.{name} must be {{range = [lo, hi]}} or {{value = V}}")
    for name, dims in (raw.get("input_shapes") or {}).items():
        if not isinstance(dims, list) or not all(isinstance(d, int) and d > 0 for d in dims):
            raise ManifestError(f"{where}: input_shapes.{name} must be a list of positive integers")
    kwargs = {k: v for k, v in raw.items() if k in _KEYS}
    return ZooModel(manifest=where.split(":")[0], **kwargs)


def load(directory: Path = MANIFEST_DIR) -> list[ZooModel]:
    """Every manifest entry, in file-name then file order; ids are unique. A file's `[known_gaps]` table
    (model id -> what is missing) gives `known_gap` to models whose manifest a script writes."""
    models, seen, gaps = [], {}, {}
    for path in sorted(Path(directory).glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as e:
            raise ManifestError(f"{path.name}: not valid TOML ({e})") from None
        unknown = set(data) - {"model", "known_gaps"}
        if unknown:
            raise ManifestError(f"{path.name}: unknown table(s) {sorted(unknown)} (known: model, known_gaps)")
        for k, raw in enumerate(data.get("model", [])):
            where = f"{path.name}: model {k} ({raw.get('id', '?')})"
            m = _check_entry(raw, where)
            if m.id in seen:
                raise ManifestError(f"{where}: id {m.id!r} is already used in {seen[m.id]}")
            seen[m.id] = path.name
            models.append(m)
        gaps.update({model_id: (path.name, text) for model_id, text in data.get("known_gaps", {}).items()})
    for model_id, (name, text) in gaps.items():
        k = next((k for k, m in enumerate(models) if m.id == model_id), None)
        where = f"{name}: known_gaps.{model_id}"
        if k is None:
            raise ManifestError(f"{where}: no model has this id")
        if not isinstance(text, str) or not text.strip():
            raise ManifestError(f"{where}: must say what is missing (a non-empty string)")
        if models[k].known_gap:
            raise ManifestError(f"{where}: {models[k].manifest} gives this model a known_gap already")
        models[k] = replace(models[k], known_gap=text)
    return models


def select(models: list[ZooModel], only: Optional[str]) -> list[ZooModel]:
    return [m for m in models if not only or only in m.id]
