"""Parity's report and its comparison of one tensor: ParityReport (the stable JSON schema of the README),
OutputParity per output, compare(reference, ours) under the tolerance rules (converters/tolerance.py), and
the converted model's values brought back to the source's layout and rank."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .running import from_nnapi_outputs
from .tolerance import allowed_error, within_tolerance


class ParityError(Exception):
    """The check could not run (bad inputs file, unsupported model without partial, ...)."""

    def __init__(self, message: str, exit_code: int = 3, pins: Optional[dict] = None, details: tuple = ()):
        super().__init__(message)
        self.exit_code = exit_code
        self.pins = pins  # a refused conversion: pins.analyse() (pins_needed, value_dependent)
        self.details = list(details)  # lines shown after the one-line message (the nodes refused, ...)


@dataclass
class OutputParity:
    name: str
    shape: list
    dtype: str
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    mean_abs_error: float = 0.0
    cosine: float = 1.0
    lsb_histogram: Optional[dict] = None
    exact_fraction: Optional[float] = None
    passed: bool = True
    allowed: float = 0.0
    tolerance: str = ""          # where `allowed` comes from
    spread: Optional[float] = None        # --tolerance spread: the framework's own largest disagreement
    spread_ratio: Optional[float] = None  # max_abs_error / spread (None when the spread is 0)
    top1_agreement: Optional[float] = None  # classifier-shaped outputs: argmax equal, over every sample row
    top5_agreement: Optional[float] = None  # the reference's top class among ours' top 5
    classified_rows: Optional[int] = None   # how many rows (samples x batch) the agreements count
    diffs: Optional[np.ndarray] = field(default=None, repr=False)


@dataclass
class ParityReport:
    model: str
    reference: str
    samples: int
    outputs: list
    first_divergence: Optional[dict] = None
    partitions: Optional[list] = None
    feature_level: int = 8
    converted_from: Optional[str] = None
    tolerance: Optional[dict] = None     # {"mode": fixed | spread, "why", "references", "factor"}
    whole_model_run: Optional[str] = None  # why the framework could not run the whole model (partitions extracted)
    localization: Optional[str] = None     # --layerwise: how operands were matched to source tensors
    local: Optional[list] = None           # --local / quantized default: per-operation errors (parity_local)
    verdict: Optional[dict] = None         # {"rule": "local" | "end-to-end", "why"}
    layers: Optional[list] = None          # --layerwise: every mapped operation's error, execution order
    exact: Optional[list] = None           # --exact: per float output, each runtime's distance from float64
    hybrid: list = field(default_factory=list)  # dynamic-range models: ours against the hybrid kernels
    steps: int = 1
    # OutputParity per state variable (its value after each step), reported like the layerwise check: the
    # state is internal to the source model, and LiteRT's optimized kernels round some intermediates one
    # stored unit differently from its reference kernels, which the state then carries from step to step
    state: list = field(default_factory=list)
    state_names: list = field(default_factory=list)
    model_outputs: list = field(default_factory=list)   # the source model's output names
    checked_by: str = ""                     # how the outputs were compared (whole-model reference, chained, ...)
    unchecked_outputs: list = field(default_factory=list)  # [{name, why}]: model outputs not compared
    reference_fallback: Optional[str] = None  # the default reference could not run the model: which one did
    custom_nodes: Optional[list] = None      # custom operators: [{node_index, op, tensor, checked_by, ...}]
    unjudged: Optional[list] = None          # local pass: [{operation_index, nnapi_op, why, harmless}]
    end_to_end: Optional[dict] = None        # quantized models: {reference, max_units, allowed_units, passed}

    @property
    def passed(self) -> bool:
        """The verdict's decision (parity_verdict.conclude); False until a verdict is concluded."""
        return bool(self.verdict and self.verdict.get("passed"))

    def as_dict(self) -> dict:
        outs = []
        for o in self.outputs:
            d = {k: v for k, v in o.__dict__.items() if k != "diffs"}
            outs.append(d)
        d = {"model": self.model, "reference": self.reference, "passed": self.passed, "samples": self.samples,
             "steps": self.steps, "feature_level": self.feature_level, "outputs": outs,
             "first_divergence": self.first_divergence, "tolerance": self.tolerance}
        if self.partitions is not None:
            d["partitions"] = self.partitions
        if self.converted_from:
            d["converted_model"] = self.converted_from
        if self.whole_model_run:
            d["whole_model_run"] = self.whole_model_run
        if self.localization:
            d["localization"] = self.localization
        if self.local is not None:
            d["local"] = self.local
        if self.layers is not None:
            d["layers"] = self.layers
        if self.exact is not None:
            d["exact"] = [e for e in self.exact if e is not None]
        if self.verdict:
            d["verdict"] = self.verdict
        d["checked_by"] = self.checked_by
        d["unchecked_outputs"] = self.unchecked_outputs
        for key in ("reference_fallback", "custom_nodes", "unjudged", "end_to_end"):
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        if self.state:
            d["state"] = [{"variable": v, **{k: x for k, x in o.__dict__.items() if k != "diffs"}}
                          for v, o in zip(self.state_names, self.state)]
        return d


def compare(name: str, ref: np.ndarray, got: np.ndarray, quantized: bool, relaxed: bool, tol: dict) -> OutputParity:
    o = OutputParity(name, list(ref.shape), str(ref.dtype))
    if got is None or ref.shape != got.shape:
        o.passed = False
        o.max_abs_error = float("inf")
        o.shape = list(ref.shape)
        return o
    ok, err, allowed = within_tolerance(ref, got, quantized, relaxed, **tol)
    o.tolerance = allowed_error(ref, quantized, relaxed, **tol)[1]
    if tol.get("spread") is not None and not quantized and ref.dtype.kind == "f":
        o.spread = float(tol["spread"])
        o.spread_ratio = err / o.spread if o.spread > 0 else None
    r, g = ref.astype(np.float64).ravel(), got.astype(np.float64).ravel()
    d = np.abs(r - g)
    o.passed, o.max_abs_error, o.allowed = ok and ref.dtype == got.dtype, err, allowed
    if r.size:
        o.mean_abs_error = float(d.mean())
        o.max_rel_error = float((d / np.maximum(np.abs(r), 1e-12)).max())
        nr, ng = np.linalg.norm(r), np.linalg.norm(g)
        o.cosine = float(r @ g / (nr * ng)) if nr and ng else (1.0 if nr == ng else 0.0)
    rows = classifier_rows(ref)
    if rows is not None:
        r2, g2 = ref.reshape(rows, -1), got.reshape(rows, -1)
        top_ref = np.argmax(r2, axis=1)
        o.top1_agreement = float(np.mean(np.argmax(g2, axis=1) == top_ref))
        top5 = np.argsort(-g2.astype(np.float64), axis=1, kind="stable")[:, :5]
        o.top5_agreement = float(np.mean([t in row for t, row in zip(top_ref, top5)]))
        o.classified_rows = rows
    if quantized:
        o.lsb_histogram = {"0": int((d == 0).sum()), "1": int((d == 1).sum()), "2": int((d == 2).sum()),
                           ">2": int((d > 2).sum())}
        o.exact_fraction = float((d == 0).mean()) if d.size else 1.0
    o.diffs = d
    return o


def classifier_rows(ref: np.ndarray) -> Optional[int]:
    """Rows of class scores when the output is classifier-shaped ([N, C], [N, C, 1, 1] or [N, 1, 1, C]
    with C >= 2 classes), else None."""
    shape = ref.shape
    if len(shape) == 2 and shape[1] >= 2:
        return shape[0]
    if len(shape) == 4 and ((shape[2:] == (1, 1) and shape[1] >= 2) or (shape[1:3] == (1, 1) and shape[3] >= 2)):
        return shape[0]
    return None


def merge_parity(a: OutputParity, b: OutputParity) -> OutputParity:
    """Fold sample `b` into `a`, the aggregate of the earlier samples: worst case for the errors, cosine and
    pass flag (a NaN error stays NaN whatever the order), the LSB histogram and exact fraction over every
    element of every sample. `allowed` is the tolerance of the sample with the largest error while all
    pass, else of a failing sample, so that `max_abs_error <= allowed` agrees with `passed`."""
    if a.passed == b.passed:
        if b.max_abs_error > a.max_abs_error:
            a.allowed, a.tolerance = b.allowed, b.tolerance
    elif not b.passed:
        a.allowed, a.tolerance = b.allowed, b.tolerance
    a.max_abs_error = float(np.maximum(a.max_abs_error, b.max_abs_error))
    a.max_rel_error = float(np.maximum(a.max_rel_error, b.max_rel_error))
    a.mean_abs_error = float(np.maximum(a.mean_abs_error, b.mean_abs_error))
    a.cosine = float(np.minimum(a.cosine, b.cosine))
    a.passed = a.passed and b.passed
    if b.classified_rows:
        n_a, n_b = a.classified_rows or 0, b.classified_rows
        for key in ("top1_agreement", "top5_agreement"):
            setattr(a, key, ((getattr(a, key) or 0.0) * n_a + getattr(b, key) * n_b) / (n_a + n_b))
        a.classified_rows = n_a + n_b
    if b.spread is not None:
        a.spread = b.spread if a.spread is None else max(a.spread, b.spread)
        ratios = [r for r in (a.spread_ratio, b.spread_ratio) if r is not None]
        a.spread_ratio = max(ratios) if ratios else None
    if b.lsb_histogram is not None:  # None: a sample whose shapes did not match has no histogram
        hist = b.lsb_histogram if a.lsb_histogram is None else \
            {k: a.lsb_histogram[k] + b.lsb_histogram[k] for k in a.lsb_histogram}
        total = sum(hist.values())
        a.lsb_histogram, a.exact_fraction = hist, (hist["0"] / total if total else 1.0)
    if a.diffs is None or b.diffs is None:
        a.diffs = b.diffs if a.diffs is None else a.diffs
    else:
        a.diffs = np.concatenate([a.diffs, b.diffs])
    return a


def to_source_layout(result: ConversionResult, operand: int, value: np.ndarray, tensor_dtype) -> np.ndarray:
    """Undo the converter's layout permutation and int8 -> uint8 rewrite for one operand."""
    perm = result.operand_perm.get(operand) if result is not None else None
    if perm is not None:
        value = np.transpose(value, np.argsort(perm))
    return from_nnapi_outputs([tensor_dtype], [value])[0]


def rank0_as_source(got: Optional[np.ndarray], ref: np.ndarray) -> Optional[np.ndarray]:
    """NNAPI holds rank-0 source tensors as [1] (see ConversionContext.shape), and tensors the
    rank pass held with fewer axes (converters/squeeze_pass.py): back to the source's shape."""
    if got is not None and ref.ndim == 0 and got.shape == (1,):
        return got.reshape(())
    if got is not None and got.shape != ref.shape and got.size == ref.size:  # the same row-major data
        return got.reshape(ref.shape)
    return got
