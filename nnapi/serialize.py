"""The saved-model file format (`.nnapi`), version 1.

Layout (all integers little-endian):

    offset 0    magic  b"NNAPIMDL"                     8 bytes
    offset 8    format version (uint32) = 1
    offset 12   flags (uint32) = 0
    offset 16   metadata length in bytes (uint64)
    offset 24   blob offset (uint64, a multiple of 64)
    offset 32   blob length (uint64)
    offset 40   SHA-256 of metadata + blob             32 bytes
    offset 72   zero padding up to 128
    offset 128  metadata: UTF-8 JSON (schema below)
    blob offset constant values, each at a 64-byte-aligned offset inside the blob

Metadata JSON: {"format": "nnapi-model", "version": 1, "main": 0,
"subgraphs": [{"name", "relaxed", "inputs", "outputs",
"operands": [{"code", "dims", "scale", "zero_point", "name", "lifetime",
"channel_quant": null | {"scales", "channel_dim"},
"value": null | {"offset", "length"}, "subgraph": null | index}],
"operations": [{"code", "inputs", "outputs"}]}]}, and, for a model that carries state
between executions (nnapi/state.py), "state": [{"variable", "input", "output",
"initial": {"offset", "length"}}] (input/output: positions in the main subgraph's inputs
and outputs; initial: the stored bytes of the input operand's type, in the blob). Files
without "state" are stateless; readers that predate it ignore the key.

`load` checks every size against the file before reading or allocating, maps
the blob with mmap instead of copying it, builds the models through the public
Model API (so every model rule applies), and never executes anything from the
file. Any defect gives NnapiError BAD_DATA naming what is wrong. `save` writes
to a temporary file in the target folder and renames it, so an error or an
interrupt never leaves a half-written file.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
import tempfile
from pathlib import Path

import numpy as np

from .codes import Lifetime, OperandCode, OperationCode
from .errors import NnapiError, bad_data
from .memory import PROT_READ, Memory
from .model import Model
from .operand import OperandType

MAGIC = b"NNAPIMDL"
FORMAT_VERSION = 1
HEADER = struct.Struct("<8sIIQQQ32s")
HEADER_SIZE = 128
ALIGN = 64
MAX_METADATA_BYTES = 1 << 30


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _subgraph_order(model: Model) -> list[Model]:
    """The main model first, then every referenced model once."""
    return [model] + model.referenced_models


def file_pieces(model: Model) -> list:
    """The file as a list of byte buffers (constants as views of their arrays, not copies)."""
    if not model.finished:
        raise NnapiError(6, "save: the model must be finished first")  # BAD_STATE
    models = _subgraph_order(model)
    index_of = {id(m): k for k, m in enumerate(models)}
    blob: list = []          # buffers of the blob, padding included
    size = 0

    def add(value) -> dict:
        nonlocal size
        data = memoryview(np.ascontiguousarray(value)).cast("B")
        offset = _align(size)
        if offset > size:
            blob.append(b"\0" * (offset - size))
        blob.append(data)
        size = offset + data.nbytes
        return {"offset": offset, "length": data.nbytes}

    subgraphs = []
    for m in models:
        operands = []
        for opnd in m.operands:
            entry = {
                "code": int(opnd.type.code), "dims": list(opnd.type.dimensions),
                "scale": opnd.type.scale, "zero_point": opnd.type.zero_point,
                "name": opnd.name, "lifetime": opnd.lifetime.value,
                "channel_quant": None if opnd.channel_quant is None else {
                    "scales": list(opnd.channel_quant.scales), "channel_dim": opnd.channel_quant.channel_dim},
                "value": None, "subgraph": None,
            }
            if opnd.is_constant:
                entry["value"] = add(opnd.value)
            elif opnd.lifetime is Lifetime.SUBGRAPH:
                entry["subgraph"] = index_of[id(opnd.subgraph)]
            operands.append(entry)
        subgraphs.append({
            "name": m.name, "relaxed": m.relaxed, "inputs": list(m.inputs), "outputs": list(m.outputs),
            "operands": operands,
            "operations": [{"code": int(op.code), "inputs": list(op.inputs), "outputs": list(op.outputs)}
                           for op in m.operations],
        })
    doc = {"format": "nnapi-model", "version": FORMAT_VERSION, "main": 0, "subgraphs": subgraphs}
    if model.state:
        doc["state"] = [{"variable": v.variable, "input": v.input, "output": v.output, "initial": add(v.initial)}
                        for v in model.state]
    meta = json.dumps(doc, separators=(",", ":")).encode()
    blob_offset = _align(HEADER_SIZE + len(meta))
    digest = hashlib.sha256(meta)
    for b in blob:
        digest.update(b)
    header = HEADER.pack(MAGIC, FORMAT_VERSION, 0, len(meta), blob_offset, size, digest.digest())
    head = header.ljust(HEADER_SIZE, b"\0") + meta
    return [head + b"\0" * (blob_offset - len(head))] + blob


def to_bytes(model: Model) -> bytes:
    """The whole file as bytes (see module docstring)."""
    return b"".join(file_pieces(model))


def _new_file_mode(path: Path) -> int:
    """The existing file's mode, or the one a plain open() would give a new file (0666 less the umask)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        pass
    try:
        with open("/proc/self/status") as f:  # reading the umask without changing it (thread-safe)
            umask = next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):
        umask = 0o022
    return 0o666 & ~umask


def atomic_write(path, data) -> None:
    """Write `data` (bytes, or a list of byte buffers written one after the other) to `path` via a
    temporary file and a rename (no half-written file, ever)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent or "."))
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), _new_file_mode(path))  # mkstemp's file is private (0600)
            for piece in ([data] if isinstance(data, (bytes, bytearray, memoryview)) else data):
                f.write(piece)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def save(model: Model, path) -> None:
    atomic_write(path, file_pieces(model))   # (no copy of the whole file in memory)


def load(path) -> Model:
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        raise bad_data(f"cannot open {path}: {e.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise bad_data(f"{path} is not a regular file")
        return _load_fd(fd, str(path))
    except OSError as e:  # a read error of the file itself (EIO, ...)
        raise bad_data(f"cannot read {path}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def _load_fd(fd: int, where: str) -> Model:
    size = os.fstat(fd).st_size
    if size < HEADER_SIZE:
        raise bad_data(f"{where}: file of {size} bytes is too short for the {HEADER_SIZE}-byte header")
    head = os.pread(fd, HEADER_SIZE, 0)
    magic, version, flags, meta_len, blob_offset, blob_len, digest = HEADER.unpack_from(head)
    if magic != MAGIC:
        raise bad_data(f"{where}: not an NNAPI model file (magic {magic!r} at offset 0)")
    if version != FORMAT_VERSION:
        raise bad_data(f"{where}: format version {version} is not supported (this build reads {FORMAT_VERSION})")
    if meta_len > MAX_METADATA_BYTES or HEADER_SIZE + meta_len > size:
        raise bad_data(f"{where}: metadata length {meta_len} at offset 16 exceeds the file ({size} bytes)")
    if blob_offset % ALIGN or blob_offset < HEADER_SIZE + meta_len or blob_offset + blob_len != size:
        raise bad_data(f"{where}: blob offset {blob_offset} / length {blob_len} (header offsets 24, 32) do not "
                       f"fit the file of {size} bytes")
    meta = os.pread(fd, meta_len, HEADER_SIZE)
    h = hashlib.sha256(meta)
    pos = blob_offset
    while pos < size:  # hash the blob in chunks: no full copy in memory
        chunk = os.pread(fd, min(1 << 24, size - pos), pos)
        if not chunk:
            break
        h.update(chunk)
        pos += len(chunk)
    if h.digest() != digest:
        raise bad_data(f"{where}: checksum mismatch (the file is corrupted or truncated)")
    try:
        doc = json.loads(meta.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise bad_data(f"{where}: metadata is not valid JSON: {type(e).__name__}: {e}") from None
    if not isinstance(doc, dict):
        raise bad_data(f"{where}: metadata is a JSON {type(doc).__name__}, not an object")
    blob = Memory.create_from_fd(blob_len, PROT_READ, fd, blob_offset) if blob_len else None
    try:
        return _build(doc, blob, where)
    except NnapiError as e:
        raise bad_data(f"{where}: {e.message}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError, RecursionError) as e:
        raise bad_data(f"{where}: malformed metadata ({type(e).__name__}: {e})") from None


def _name(value, what: str):
    if value is not None and not isinstance(value, str):
        raise bad_data(f"{what} must be a string or null, got {type(value).__name__}")
    return value


def _build(doc: dict, blob, where: str) -> Model:
    if doc.get("format") != "nnapi-model":
        raise bad_data("metadata does not describe an nnapi-model")
    subs = doc["subgraphs"]
    if not isinstance(subs, list) or not subs:
        raise bad_data("no subgraphs")
    built: dict[int, Model] = {}
    building: set[int] = set()

    def build(k: int) -> Model:
        if not isinstance(k, int) or not 0 <= k < len(subs):
            raise bad_data(f"subgraph reference {k!r} out of range")
        if k in built:
            return built[k]
        if k in building:
            raise bad_data(f"subgraph {k} references itself (cycle)")
        building.add(k)
        sg = subs[k]
        m = Model(name=_name(sg.get("name"), f"subgraph {k} name"))
        ops = sg["operands"]
        for i, o in enumerate(ops):
            m.add_operand(OperandType(OperandCode(int(o["code"])), o["dims"], o["scale"], o["zero_point"]),
                          name=_name(o.get("name"), f"subgraph {k} operand {i} name"))
            cq = o.get("channel_quant")
            if cq is not None:
                m.set_operand_symm_per_channel_quant_params(i, cq["scales"], cq["channel_dim"])
        for i, o in enumerate(ops):
            life = Lifetime(o["lifetime"])
            if o.get("value") is not None:
                v = o["value"]
                off, length = int(v["offset"]), int(v["length"])
                if blob is None:
                    raise bad_data(f"subgraph {k} operand {i}: value but the file has no blob")
                blob.check_range(off, length, f"subgraph {k} operand {i} value")
                if length <= 128:
                    m.set_operand_value(i, bytes(blob.view(off, length)))
                else:
                    m.set_operand_value_from_memory(i, blob, off, length)
            elif life is Lifetime.NO_VALUE:
                m.set_operand_value(i, None)
            elif life is Lifetime.SUBGRAPH:
                m.set_operand_value_from_model(i, build(o["subgraph"]))
        for op in sg["operations"]:
            m.add_operation(OperationCode(int(op["code"])), [int(x) for x in op["inputs"]],
                            [int(x) for x in op["outputs"]])
        m.identify_inputs_and_outputs([int(x) for x in sg["inputs"]], [int(x) for x in sg["outputs"]])
        m.relax_computation_float32_to_float16(bool(sg.get("relaxed", False)))
        if k == main and doc.get("state"):
            m.set_state(_state(doc["state"], m, blob))
        m.finish()
        building.discard(k)
        built[k] = m
        return m

    main = int(doc.get("main", 0))
    return build(main)


def _state(entries, model: Model, blob) -> list:
    """The StateVariable entries of the metadata, their initial values read from the blob."""
    from .state import StateVariable
    if not isinstance(entries, list):
        raise bad_data("state must be a list")
    out = []
    for k, e in enumerate(entries):
        pos_in, pos_out = int(e["input"]), int(e["output"])
        if not 0 <= pos_in < len(model.inputs):
            raise bad_data(f"state {k}: input position {pos_in} out of range")
        otype = model.operands[model.inputs[pos_in]].type
        off, length = int(e["initial"]["offset"]), int(e["initial"]["length"])
        if blob is None:
            raise bad_data(f"state {k}: initial value but the file has no blob")
        blob.check_range(off, length, f"state {k} initial value")
        if otype.dtype is None or length % otype.dtype.itemsize:
            raise bad_data(f"state {k}: {length} bytes do not fit input {otype.describe()}")
        initial = np.frombuffer(bytes(blob.view(off, length)), otype.dtype)
        out.append(StateVariable(_name(e["variable"], f"state {k} variable"), pos_in, pos_out, initial))
    return out
