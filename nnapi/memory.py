"""ANeuralNetworksMemory: shared memory that holds operand values or execution I/O."""
from __future__ import annotations

import mmap
import os

import numpy as np

from .codes import ResultCode
from .errors import NnapiError, bad_data

PROT_READ = mmap.PROT_READ
PROT_WRITE = mmap.PROT_WRITE


class Memory:
    """A block of bytes: either a mapped file region or a numpy/bytearray buffer."""

    def __init__(self, buffer, *, _mapping=None):
        self._buffer = memoryview(buffer).cast("B")
        self._mapping = _mapping

    @classmethod
    def create_from_fd(cls, size: int, protect: int, fd: int, offset: int) -> "Memory":
        """Map `size` bytes of file descriptor `fd` at `offset` (UNMAPPABLE on failure)."""
        if size <= 0 or offset < 0:
            raise bad_data(f"Memory.create_from_fd: invalid size {size} or offset {offset}")
        access = mmap.ACCESS_WRITE if protect & PROT_WRITE else mmap.ACCESS_READ
        page = mmap.ALLOCATIONGRANULARITY
        base = offset - offset % page
        try:
            file_size = os.fstat(fd).st_size
            if offset + size > file_size:
                raise NnapiError(ResultCode.UNMAPPABLE,
                                 f"cannot map {size} bytes at offset {offset}: the file has {file_size} bytes")
            mapping = mmap.mmap(fd, size + (offset - base), access=access, offset=base)
        except NnapiError:
            raise
        except (OSError, ValueError) as e:
            raise NnapiError(ResultCode.UNMAPPABLE, f"cannot map fd {fd}: {e}") from None
        view = memoryview(mapping)[offset - base: offset - base + size]
        return cls(view, _mapping=mapping)

    @classmethod
    def from_buffer(cls, buffer) -> "Memory":
        """Wrap a writable numpy array, bytearray or other buffer (not copied)."""
        if isinstance(buffer, np.ndarray):
            if not buffer.flags.c_contiguous:
                raise bad_data("Memory.from_buffer needs a C-contiguous array")
            buffer = buffer.reshape(-1).view(np.uint8)
        return cls(buffer)

    @classmethod
    def allocate(cls, size: int) -> "Memory":
        return cls(bytearray(size))

    @property
    def size(self) -> int:
        return self._buffer.nbytes

    def check_range(self, offset: int, length: int, what: str) -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise bad_data(f"{what}: range [{offset}, {offset + length}) lies outside the memory of {self.size} bytes")

    def view(self, offset: int, length: int) -> memoryview:
        self.check_range(offset, length, "memory view")
        return self._buffer[offset: offset + length]
