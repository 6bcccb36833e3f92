"""Real inputs for parity: an .npz (one sample, or many along a leading sample axis) or a folder of
images, resized and normalised to the model's image input.

`--preprocess` takes KEY=VALUE pairs separated by commas:

- `scale=S`: multiply the 0..255 pixel values by S first (default 1/255; `1` keeps 0..255);
- `mean=M` and `std=D`: then (x - mean) / std, per channel (`0.485:0.456:0.406`) or one value;
- `layout=nhwc|nchw`: the input's layout (default: NCHW when the input's dimension 1 is 1 or 3 and
  its last is not, else NHWC);
- `order=rgb|bgr`: channel order (default rgb).

Images are read with Pillow, converted to RGB (or to grayscale for a one-channel input), resized to
the input's height and width with bilinear filtering, and taken in sorted file-name order, so a
folder gives the same samples every time. Quantized inputs get the preprocessed values quantized with
the input's scale and zero point.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".ppm", ".pgm", ".tif", ".tiff"}


class DatasetError(ValueError):
    """The inputs cannot be used for this model; the message names the file or input."""


@dataclass
class Preprocess:
    scale: float = 1 / 255
    mean: tuple = (0.0,)
    std: tuple = (1.0,)
    layout: Optional[str] = None
    order: str = "rgb"


def _number(text: str, key: str) -> float:
    try:
        if "/" in text:
            num, den = text.split("/", 1)
            return float(num) / float(den)
        return float(text)
    except (ValueError, ZeroDivisionError):
        raise DatasetError(f"--preprocess {key}={text!r}: not a number") from None


def parse_preprocess(spec: Optional[str]) -> Preprocess:
    p = Preprocess()
    for item in filter(None, (spec or "").split(",")):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep:
            raise DatasetError(f"--preprocess {item!r}: expected KEY=VALUE")
        if key == "scale":
            p.scale = _number(value, key)
        elif key in ("mean", "std"):
            values = tuple(_number(v, key) for v in value.split(":"))
            if key == "std" and any(v == 0 for v in values):
                raise DatasetError("--preprocess std: must not be 0")
            setattr(p, key, values)
        elif key == "layout" and value.lower() in ("nhwc", "nchw"):
            p.layout = value.lower()
        elif key == "order" and value.lower() in ("rgb", "bgr"):
            p.order = value.lower()
        else:
            raise DatasetError(f"--preprocess {item!r}: keys are scale, mean, std, layout (nhwc|nchw), "
                               f"order (rgb|bgr)")
    return p


def _layout(shape: tuple, p: Preprocess) -> str:
    if p.layout:
        return p.layout
    return "nchw" if len(shape) == 4 and shape[1] in (1, 3) and shape[3] not in (1, 3) else "nhwc"


def image_samples(folder: Path, graph, input_shapes: Optional[dict], p: Preprocess) -> list[list[np.ndarray]]:
    """One sample per image file of `folder`, for a model with one 4-D image input."""
    try:
        from PIL import Image
    except ImportError:
        from .runners import MissingDependency
        raise MissingDependency("PIL", "to read a folder of images") from None
    if len(graph.inputs) != 1:
        raise DatasetError(f"{folder}: a folder of images feeds a model with one input; this one has "
                           f"{len(graph.inputs)} (pass an .npz instead)")
    t = graph.tensors[graph.inputs[0]]
    shape = tuple((input_shapes or {}).get(t.name, t.shape or ()))
    if len(shape) != 4 or any(d <= 0 for d in shape):
        raise DatasetError(f"{folder}: input {t.name!r} has shape {list(shape)}; images need a 4-D input with "
                           f"known dimensions (pin it with --input-shape)")
    layout = _layout(shape, p)
    n, h, w, c = shape if layout == "nhwc" else (shape[0], shape[2], shape[3], shape[1])
    if c not in (1, 3):
        raise DatasetError(f"{folder}: input {t.name!r} has {c} channels ({layout}); images give 1 or 3")
    files = sorted(f for f in folder.iterdir() if f.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise DatasetError(f"{folder}: no image files ({', '.join(sorted(IMAGE_SUFFIXES))})")
    mean, std = np.asarray(p.mean, np.float64), np.asarray(p.std, np.float64)
    if mean.size not in (1, c) or std.size not in (1, c):
        raise DatasetError(f"--preprocess mean/std: give 1 or {c} values")
    dtype = np.dtype(t.dtype)
    samples = []
    for f in files:
        try:
            with Image.open(f) as im:
                pixels = np.asarray(im.convert("L" if c == 1 else "RGB").resize((w, h), Image.BILINEAR),
                                    np.float64)
        except OSError as e:
            raise DatasetError(f"{f}: cannot read the image ({e})") from None
        pixels = pixels.reshape(h, w, c)
        if p.order == "bgr":
            pixels = pixels[..., ::-1]
        x = (pixels * p.scale - mean) / std
        if layout == "nchw":
            x = x.transpose(2, 0, 1)
        x = np.broadcast_to(x[None], (n, *x.shape))
        samples.append([_cast(x, dtype, t.quant, t.name)])
    return samples


def _cast(x: np.ndarray, dtype: np.dtype, quant, name: str) -> np.ndarray:
    if dtype.kind == "f":
        return x.astype(dtype)
    if quant is not None:
        scale, zero = float(quant.scales[0]), int(quant.zero_points[0])
        info = np.iinfo(dtype)
        return np.clip(np.round(x / scale) + zero, info.min, info.max).astype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.clip(np.round(x), info.min, info.max).astype(dtype)
    raise DatasetError(f"input {name!r} of type {dtype} cannot take image data")


def npz_samples(path: str, graph) -> list[list[np.ndarray]]:
    """The arrays of an .npz keyed by input name (or input0, input1, ...): one sample when they have the
    inputs' rank, or one sample per index of a leading sample axis when every array has one more."""
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise DatasetError(f"{path}: cannot read inputs ({e})") from None
    arrays, ranks = [], []
    for k, i in enumerate(graph.inputs):
        t = graph.tensors[i]
        key = t.name if t.name in data.files else f"input{k}"
        if key not in data.files:
            raise DatasetError(f"{path}: no array for input {t.name!r} (have {sorted(data.files)})")
        arr = np.asarray(data[key])
        if arr.dtype != t.dtype:
            raise DatasetError(f"{path}: input {t.name!r} has dtype {arr.dtype}, the model needs {t.dtype}")
        arrays.append(arr)
        ranks.append(None if t.shape is None else len(t.shape))
    stacked = [r is not None and a.ndim == r + 1 for a, r in zip(arrays, ranks)]
    if arrays and all(stacked):
        counts = {a.shape[0] for a in arrays}
        if len(counts) != 1:
            raise DatasetError(f"{path}: the arrays' leading sample axes differ ({sorted(counts)})")
        return [[np.asarray(a[s]) for a in arrays] for s in range(counts.pop())]   # a rank-0 input stays an array
    if any(stacked):
        names = [graph.tensors[i].name for i, s in zip(graph.inputs, stacked) if s]
        raise DatasetError(f"{path}: only some arrays have a leading sample axis ({names}); give every input one "
                           f"or none")
    return [arrays]
